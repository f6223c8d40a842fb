"""The one get / compute / put of the on-disk memos (radaudit.models.cache.memo): computed once per key, served
after, recomputed and overwritten when the stored value does not decode, never stored without a key or a cache, and
the caller's open cache left open."""

from __future__ import annotations

import pytest

from radaudit.models.cache import ContentCache, content_key, memo

PARTS = {"kind": "test.memo", "x": 1}


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def _codec():
    return {"encode": lambda v: {"v": v}, "decode": lambda s: s.get("v") if isinstance(s, dict) else None}


def test_computed_once_then_served(tmp_path):
    compute, calls = _counting([1, 2])
    assert memo(tmp_path, "t", PARTS, compute, **_codec()) == ([1, 2], False)
    assert memo(tmp_path, "t", PARTS, compute, **_codec()) == ([1, 2], True)
    assert memo(tmp_path, "t", {**PARTS, "x": 2}, compute, **_codec()) == ([1, 2], False)  # another key: a miss
    assert len(calls) == 2
    with ContentCache(tmp_path, name="t") as store:
        assert len(store) == 2 and store.get(content_key(PARTS)) == {"v": [1, 2]}


def test_a_value_that_does_not_decode_is_recomputed_and_overwritten(tmp_path):
    with ContentCache(tmp_path, name="t") as store:
        store.put(content_key(PARTS), "garbage", PARTS)
    compute, calls = _counting(7)
    assert memo(tmp_path, "t", PARTS, compute, **_codec()) == (7, False)
    assert memo(tmp_path, "t", PARTS, compute, **_codec()) == (7, True)
    assert len(calls) == 1


@pytest.mark.parametrize("cache, parts", [(None, PARTS), (False, PARTS), ("folder", None)])
def test_no_cache_or_no_key_computes_every_time_and_writes_nothing(tmp_path, cache, parts):
    cache = tmp_path if cache == "folder" else cache
    compute, calls = _counting(3)
    for _ in range(2):
        assert memo(cache, "t", parts, compute, **_codec()) == (3, False)
    assert len(calls) == 2
    assert not (tmp_path / "t.sqlite").exists()


def test_an_open_cache_passed_in_stays_open_and_counts(tmp_path):
    store = ContentCache(tmp_path, name="t")
    compute, _ = _counting("a")
    memo(store, "t", PARTS, compute, **_codec())
    memo(store, "t", PARTS, compute, **_codec())
    assert (store.hits, store.misses, store.writes) == (1, 1, 1)  # one lookup per call: no double lookup
    assert len(store) == 1  # still usable: not closed by memo
    store.close()
