"""The whole-call disk memo of text-encoder outputs (radaudit.models.text_memo): keys, bit-exact values,
recomputation, and what turns it off. The BERTScore and TextEncoder integrations are tested beside them
(tests/metrics/test_embedding.py, tests/models/test_encoders.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from radaudit.models.cache import ContentCache, array_from_value, array_value, content_key
from radaudit.models.text_memo import TEXT_CACHE, call_key_parts, memo_call, source_digest, texts_digest


def test_texts_digest_is_order_and_boundary_sensitive():
    assert texts_digest(["ab", "c"]) != texts_digest(["a", "bc"])
    assert texts_digest(["a", "b"]) != texts_digest(["b", "a"])
    assert texts_digest(["", "x"]) != texts_digest(["x"])
    h = hashlib.sha256()
    for t in ("é", ""):
        h.update(len(t.encode()).to_bytes(8, "little"))
        h.update(t.encode())
    assert texts_digest(["é", ""]) == h.hexdigest()  # é is 2 bytes: the prefix counts bytes


def test_source_digest_hashes_the_module_files():
    import radaudit.models.text_memo as mod

    expected = hashlib.sha256(b"radaudit.models.text_memo" + Path(mod.__file__).read_bytes()).hexdigest()
    assert source_digest("radaudit.models.text_memo") == expected
    assert source_digest("radaudit.models.cache") != expected


def test_key_parts_change_with_every_input():
    base = dict(kind="k", identity={"spec": "m", "weights": "w"}, options={"a": 1}, texts={"texts": ["x", "y"]},
                code=("radaudit.models.cache",))
    key = content_key(call_key_parts(**base))
    assert content_key(call_key_parts(**base)) == key
    for change in ({"kind": "k2"}, {"identity": {"spec": "m", "weights": "w2"}}, {"options": {"a": 2}},
                   {"texts": {"texts": ["x", "y "]}}, {"texts": {"other": ["x", "y"]}},
                   {"code": ("radaudit.models.text_memo",)}):
        assert content_key(call_key_parts(**{**base, **change})) != key, change


def test_array_values_round_trip_bit_exact():
    a = np.array([[0.1, -0.0, np.nan], [np.inf, 1e-300, 3.0]], dtype=np.float64)
    b = array_from_value(array_value(a, a.dtype.str))
    assert b.dtype == np.float64 and b.tobytes() == a.tobytes()
    f = np.float32([1 / 3, 2 / 3])
    assert array_from_value(array_value(f)).tobytes() == f.tobytes()
    # values written before the dtype was recorded in full ("float32") still read
    legacy = {**array_value(f), "dtype": "float32"}
    assert array_from_value(legacy).tobytes() == f.tobytes()
    assert array_from_value({"data": "not base64!", "dtype": "<f4", "shape": [2]}) is None


def test_memo_call_computes_once_then_serves_the_same_bytes(tmp_path):
    calls = []
    rng = np.random.default_rng(0)

    def compute():
        calls.append(1)
        return {"x": rng.normal(size=(3, 2)), "y": np.float32([1.5])}, {"n_truncated": 2}

    parts = call_key_parts("demo", {"w": 1}, {}, {"texts": ["a"]}, ("radaudit.models.cache",))
    first, info1, hit1 = memo_call(tmp_path, parts, compute)
    second, info2, hit2 = memo_call(tmp_path, parts, compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert info1 == info2 == {"n_truncated": 2}
    for k in first:
        assert second[k].dtype == first[k].dtype and second[k].tobytes() == first[k].tobytes()
    with ContentCache(tmp_path, name=TEXT_CACHE) as store:
        assert len(store) == 1 and store.parts(content_key(parts))["kind"] == "demo"
    # another call misses and computes (different random numbers: proof it ran)
    other = call_key_parts("demo", {"w": 1}, {}, {"texts": ["b"]}, ("radaudit.models.cache",))
    third, _, hit3 = memo_call(tmp_path, other, compute)
    assert not hit3 and len(calls) == 2 and third["x"].tobytes() != first["x"].tobytes()


@pytest.mark.parametrize("cache, parts", [(False, {"kind": "k"}), (None, {"kind": "k"}), ("FOLDER", None)])
def test_memo_call_off_always_computes_and_writes_nothing(tmp_path, cache, parts):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.zeros(1)}, {}

    cache = tmp_path if cache == "FOLDER" else cache
    for _ in range(2):
        assert memo_call(cache, parts, compute)[2] is False
    assert len(calls) == 2 and not (tmp_path / f"{TEXT_CACHE}.sqlite").exists()


def test_a_damaged_entry_is_recomputed(tmp_path):
    parts = call_key_parts("demo", {"w": 1}, {}, {"texts": ["a"]}, ("radaudit.models.cache",))
    with ContentCache(tmp_path, name=TEXT_CACHE) as store:
        store.put(content_key(parts), {"arrays": {"x": {"data": "@@", "shape": [1], "dtype": "<f8"}}, "info": {}})
    out, _, hit = memo_call(tmp_path, parts, lambda: ({"x": np.ones(1)}, {}))
    assert not hit and out["x"].tolist() == [1.0]
    assert memo_call(tmp_path, parts, lambda: ({"x": np.zeros(1)}, {}))[0]["x"].tolist() == [1.0]
