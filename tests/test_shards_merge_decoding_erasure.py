"""Issue 23's shard test for decoding_erasure: its shard step, report generation (by study), as 3 shards, then the merge run gives the
unsharded smoke run's tables byte for byte (tests/shard_merge.py)."""

from __future__ import annotations

import pytest

from shard_merge import check_three_shards_then_merge


@pytest.mark.long
def test_three_shards_then_the_merge_give_the_unsharded_tables(smoke_runs, shared_data, tmp_path, monkeypatch):
    check_three_shards_then_merge("decoding_erasure", "generations", smoke_runs, shared_data, tmp_path, monkeypatch)
