"""The shard acceptance check (issue 23), shared by tests/test_shards_merge_*.py (one file per experiment, so that
``pytest --dist loadfile`` can give them to different workers): 3 shards then the merge give the tables of the
session's unsharded smoke run (tests/conftest.py ``smoke_runs``, its own cache), byte for byte."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from radaudit.models.cache import ContentCache
from radaudit.shards import run_shard


def _entries(db: Path) -> list[str]:
    """What each cache entry was computed from (its stored key parts), less the model's path: a demo model's spec is
    its folder under the cache, so the same model in two cache folders has two keys (its content fingerprint, the
    ``revision`` part, is the same)."""
    with sqlite3.connect(db) as conn:
        parts = [json.loads(p) for (p,) in conn.execute("SELECT parts FROM entries")]
    return sorted(json.dumps({k: v for k, v in p.items() if k != "model"}, sort_keys=True) for p in parts)


def _tables(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / "tables").iterdir()) if p.is_file()}


def check_three_shards_then_merge(experiment: str, store: str, smoke_runs, shared_data, tmp_path, monkeypatch) -> None:
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
