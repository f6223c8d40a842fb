"""Issue 23's shard test for synthetic_cxr: its shard step, image features (by batch of the fixed feature batches), as 3 shards, then the merge run gives the
unsharded smoke run's tables byte for byte (tests/shard_merge.py)."""

from __future__ import annotations

import pytest

from radaudit.models.feature_cache import FEATURE_CACHE
from shard_merge import check_three_shards_then_merge


@pytest.mark.long
def test_three_shards_then_the_merge_give_the_unsharded_tables(smoke_runs, shared_data, tmp_path, monkeypatch):
    check_three_shards_then_merge("synthetic_cxr", FEATURE_CACHE, smoke_runs, shared_data, tmp_path, monkeypatch)
