"""Shard runs (issue 23): ``radaudit run <e> --shard i/n`` does the i-th of n parts of the expensive step into the
cache, and the full run afterwards finds everything cached and writes the tables an unsharded run writes, byte for byte.

The units check the partition by hand-computed parts, the errors, and the feature cache's bit-exactness with an
encoder whose output depends on its batch. The acceptance tests (3 shards then the merge give the unsharded smoke run's
tables) are tests/test_shards_merge_*.py, one file per experiment so that two pytest workers can run them side by side.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from radaudit.cli import main
from radaudit.errors import ParamsError
from radaudit.models.cache import ContentCache
from radaudit.models.feature_cache import FEATURE_CACHE, cached_features, fill_features
from radaudit.shards import parse_shard, prepare_params, run_shard, shard_slice, shardable_experiments, split_parts

# ---------------------------------------------------------------------------------------------- partition


def test_ten_items_in_three_shards_by_hand():
    assert [shard_slice(10, i, 3) for i in (1, 2, 3)] == [slice(0, 4), slice(4, 7), slice(7, 10)]
    assert split_parts(list("abcdefghij"), 3) == [list("abcd"), list("efg"), list("hij")]
    assert split_parts(range(7), 2) == [[0, 1, 2, 3], [4, 5, 6]]
    assert split_parts(range(6), 3) == [[0, 1], [2, 3], [4, 5]]
    assert split_parts(range(2), 3) == [[0], [1], []]  # more shards than items: the last part is empty
    assert split_parts([], 2) == [[], []]


@pytest.mark.parametrize("n_items", [0, 1, 5, 6, 7, 31, 100])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_parts_are_contiguous_near_equal_disjoint_and_cover_as_array_split(n_items, n):
    parts = split_parts(range(n_items), n)
    assert [i for p in parts for i in p] == list(range(n_items))  # in order, disjoint, covering
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [list(p) for p in np.array_split(np.arange(n_items), n)] == parts


def test_parse_shard():
    assert parse_shard("2/3") == (2, 3)
    assert parse_shard(" 1 / 1 ") == (1, 1)
    assert parse_shard("3/3") == (3, 3)
    for bad in ("0/3", "4/3", "1/0"):
        with pytest.raises(ParamsError, match="counted from 1"):
            parse_shard(bad)
    for bad in ("a/b", "3", "1/3/5", "-1/3", "", "1.5/3"):
        with pytest.raises(ParamsError, match=r"I/N.*counted from 1"):
            parse_shard(bad)
    with pytest.raises(ParamsError, match="1 <= i <= n"):
        shard_slice(10, 0, 3)


# ---------------------------------------------------------------------------------------------- errors


def test_an_experiment_without_a_shard_step_names_those_with_one(tmp_path):
    assert {"decoding_erasure", "synthetic_cxr"} <= set(shardable_experiments())
    assert "data_overview" not in shardable_experiments()
    with pytest.raises(ParamsError, match=r"data_overview has no shard step.*decoding_erasure.*synthetic_cxr"):
        run_shard("data_overview", "smoke", shard=(1, 2), out=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything is written


def test_shard_params_are_the_full_runs_params(shared_data):
    from radaudit.run import prepare

    ov = ["n_reports=4", "max_new_tokens=6"]
    _, full = prepare("decoding_erasure", "smoke", ov, str(shared_data))
    assert prepare_params("decoding_erasure", "smoke", ov, str(shared_data)).model_dump() == full.model_dump()


@pytest.mark.parametrize("args, message", [
    (["all", "--shard", "1/2"], "--shard runs one experiment"),
    (["decoding_erasure", "--shard", "1/2", "--rehearse"], "do not go together"),
    (["decoding_erasure", "--shard", "1/2", "--name", "x"], "Drop --name"),
    (["decoding_erasure", "--shard", "0/2"], "counted from 1"),
    (["data_overview", "--preset", "smoke", "--shard", "1/2"], "no shard step"),
])
def test_cli_refusals_exit_2_with_the_reason(args, message, tmp_path):
    r = CliRunner().invoke(main, ["run", *args, "--out", str(tmp_path)])
    assert r.exit_code == 2 and message in r.output, r.output
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------- feature cache


class BatchSensitiveEncoder:
    """Features that depend on the other images in the batch (each image minus its batch's mean, plus a trace of the
    batch size): a shard that batched differently from the full run would store different numbers."""

    dim = 3

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.calls: list[int] = []

    def describe(self) -> dict:
        return {"encoder": "BatchSensitiveEncoder", "path": self.path}

    def embed(self, images, batch_size=None):
        self.calls.append(len(images))
        x = np.stack([np.asarray(im, np.float32) for im in images]).reshape(len(images), -1)[:, :3]
        return (x - x.mean(axis=0) + np.float32(1e-3) * len(images)).astype(np.float32)


def test_cached_features_are_bit_exact_whichever_process_computed_each_batch(tmp_path):
    weights = tmp_path / "enc"
    weights.mkdir()
    (weights / "w.bin").write_bytes(b"weights v1")
    images = list(np.random.default_rng(0).random((10, 4, 4), dtype=np.float32))
    enc = BatchSensitiveEncoder(weights)
    plain = cached_features(enc, images, cache=None, batch_size=4)  # batches [0,4) [4,8) [8,10), as extract_features
    from radaudit.metrics.image import extract_features

    assert np.array_equal(plain, extract_features(BatchSensitiveEncoder(weights), images, batch_size=4))
    with ContentCache(tmp_path / "c", name=FEATURE_CACHE) as store:  # a "shard" fills the middle batch only
        _, counts = fill_features(enc, images, store, batch_size=4, batches=[1])
        assert counts == {"batches": 1, "images": 4, "computed": 1, "found": 0}
    enc.calls.clear()
    got = cached_features(enc, images, cache=tmp_path / "c", batch_size=4)
    assert got.dtype == np.float32 and np.array_equal(got, plain)
    assert enc.calls == [4, 2]  # batch 1 was read back; 0 and 2 computed with the full run's boundaries
    enc.calls.clear()
    assert np.array_equal(cached_features(enc, images, cache=tmp_path / "c", batch_size=4), plain)
    assert enc.calls == []
    (weights / "w.bin").write_bytes(b"weights v2")  # other weights: another key, computed again
    cached_features(enc, images, cache=tmp_path / "c", batch_size=4)
    assert enc.calls == [4, 4, 2]
