"""Shard runs (issue 23): ``radaudit run <e> --shard i/n`` does the i-th of n parts of the expensive step into the
cache, and the full run afterwards finds everything cached and writes the tables an unsharded run writes, byte for byte.

The units check the partition by hand-computed parts, the errors, and the feature cache's bit-exactness with an
encoder whose output depends on its batch. The acceptance test runs both shardable experiments on ``smoke``:
3 shards then the merge, against the session's unsharded smoke run (tests/conftest.py ``smoke_runs``, its own cache).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
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


# ---------------------------------------------------------------------------------------------- acceptance


def _entries(db: Path) -> list[str]:
    """What each cache entry was computed from (its stored key parts), less the model's path: a demo model's spec is
    its folder under the cache, so the same model in two cache folders has two keys (its content fingerprint, the
    ``revision`` part, is the same)."""
    with sqlite3.connect(db) as conn:
        parts = [json.loads(p) for (p,) in conn.execute("SELECT parts FROM entries")]
    return sorted(json.dumps({k: v for k, v in p.items() if k != "model"}, sort_keys=True) for p in parts)


def _tables(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / "tables").iterdir()) if p.is_file()}


@pytest.mark.parametrize("experiment, store", [("decoding_erasure", "generations"), ("synthetic_cxr", FEATURE_CACHE)])
def test_three_shards_then_the_merge_give_the_unsharded_tables(experiment, store, smoke_runs, shared_data, tmp_path,
                                                                 monkeypatch):
    """Cache B starts as a copy of the unsharded run's cache **without** the sharded step's store (the generations,
    the features): the demo models and generated images are content-addressed and would be rebuilt identically, so
    copying them only saves minutes. The shards must then write exactly the store's entries the unsharded run made
    (compared by what each was computed from), and the merge run compute none."""
    from radaudit.run import run_experiment

    unsharded = smoke_runs(experiment)[0]
    cache_a = unsharded.run_dir.parents[2] / "cache"
    cache_b = tmp_path / "cache"
    shutil.copytree(cache_a, cache_b, ignore=shutil.ignore_patterns(f"{store}.sqlite*"))
    monkeypatch.setenv("RADAUDIT_CACHE", str(cache_b))
    shards = [run_shard(experiment, "smoke", shard=(i, 3), data_root=str(shared_data), out=tmp_path / "out")
              for i in (1, 2, 3)]
    assert [m["shard"]["text"] for m in shards] == ["1/3", "2/3", "3/3"]
    assert all(m["status"] == "succeeded" and Path(m["path"]).is_file() for m in shards)
    counts = [m["counts"] for m in shards]
    assert sum(c["items"] for c in counts) == counts[0]["items_total"] > 3  # the parts cover every item
    assert all(c["items"] > 0 for c in counts) and counts[0]["computed"] > 0
    entries = len(ContentCache(cache_b, name=store))
    assert sum(c["computed"] for c in counts) == entries  # every entry was made by a shard, none twice
    assert _entries(cache_b / f"{store}.sqlite") == _entries(cache_a / f"{store}.sqlite")  # the full run's entries

    merged = run_experiment(experiment, "smoke", data_root=str(shared_data), out=tmp_path / "out", progress=False)
    assert len(ContentCache(cache_b, name=store)) == entries  # the merge computed nothing new
    a, b = _tables(unsharded.run_dir), _tables(merged.run_dir)
    assert len(a) > 5 and a.keys() == b.keys()
    assert [n for n in a if a[n] != b[n]] == []
