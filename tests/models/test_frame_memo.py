"""Model-produced tables kept on disk (radaudit.models.frame_memo): bit-exact round trip, one computation per
call, a miss for any other call, and a damaged entry recomputed rather than served."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from radaudit.models.cache import ContentCache, content_key
from radaudit.models.frame_memo import (
    FRAME_CACHE,
    frame_from_value,
    frame_key_parts,
    frame_value,
    image_digest,
    memo_frames,
)


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"model": ["m", "m", "m"], "step": [0, 1, 2], "share": [0.1 + 0.2, 1 / 3, np.nan],
                         "token": ["Yes", None, "é"], "flag": [True, False, True]})


def _csv(frame: pd.DataFrame) -> str:
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue()


def test_frame_value_round_trip_is_bit_exact():
    f = _frame()
    back = frame_from_value(frame_value(f))
    pd.testing.assert_frame_equal(back, f)
    assert back["share"].iloc[0] == 0.1 + 0.2 != 0.3  # the float's last bit survives (JSON would round it)
    assert _csv(back) == _csv(f)
    assert frame_from_value("not base64 parquet") is None and frame_from_value(None) is None


def _parts(code=("radaudit.models.frame_memo",), **options):
    return frame_key_parts("test.kind", {"spec": "m", "revision": "abc"}, [{"sample_id": "s0"}], options, code)


def test_memo_frames_computes_once_then_reads_back(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return _frame(), _frame().head(1)

    first, hit1 = memo_frames(tmp_path, _parts(), compute)
    second, hit2 = memo_frames(tmp_path, _parts(), compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    for a, b in zip(first, second):
        pd.testing.assert_frame_equal(a, b)
    memo_frames(tmp_path, _parts(max_new_tokens=9), compute)  # other options: another call
    memo_frames(tmp_path, _parts(code=("radaudit.models.cache",)), compute)  # other code: another call
    assert len(calls) == 3
    memo_frames(tmp_path, None, compute)  # no identity: computed, not stored
    memo_frames(None, _parts(), compute)  # no cache
    assert len(calls) == 5
    with ContentCache(tmp_path, name=FRAME_CACHE) as store:
        assert len(store) == 3


def test_a_damaged_entry_is_recomputed_and_overwritten(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return [_frame()]

    with ContentCache(tmp_path, name=FRAME_CACHE) as store:
        store.put(content_key(_parts()), {"frames": ["garbage"]}, _parts())
    frames, hit = memo_frames(tmp_path, _parts(), compute)
    assert not hit and len(calls) == 1
    pd.testing.assert_frame_equal(frames[0], _frame())
    _, hit = memo_frames(tmp_path, _parts(), compute)
    assert hit and len(calls) == 1


def test_image_digest_names_the_file_and_its_bytes(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    assert image_digest(None) is None
    assert image_digest(a)["sha256"] != image_digest(b)["sha256"]
    assert image_digest(str(a)) == {"path": str(a), "sha256": image_digest(a)["sha256"]}
    with pytest.raises(TypeError, match="no file identity"):
        image_digest(np.zeros((2, 2)))


def test_library_versions_name_what_is_installed():
    from radaudit.models.text_memo import library_versions

    assert library_versions("pandas", "no-such-dist-radaudit") == {"pandas": pd.__version__,
                                                                   "no-such-dist-radaudit": None}
    parts = frame_key_parts("k", {"spec": "m"}, [], {}, ("radaudit.models.frame_memo",))
    assert parts["libraries"]["pyarrow"] is not None and set(parts["libraries"]) == {"torch", "transformers", "pandas",
                                                                                       "pyarrow"}
