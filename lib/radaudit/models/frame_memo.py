"""Tables a model produced, kept on disk per call: a rerun with its caches present skips the model.

Some notebook sections read a model's internals (modality_shift's attention and gradient maps, Fig. 4 of
paper 003): every rerun of the notebook with the same model and inputs recomputes the same tables, at a
minute of CPU. :func:`memo_frames` keeps the tables one call produced and gives the same bytes back when
the same call comes again, as :mod:`radaudit.models.text_memo` does for text-encoder arrays.

**Key** (the caller's ``parts``, hashed by :func:`radaudit.models.cache.content_key`): what the call
computes (``kind``), the model's identity (:func:`radaudit.models.vlm.model_identity`: the folder or hub id
and the fingerprint of its weights; a model without one is not cached), the inputs (prompts, and each
image by path *and* sha256 of its bytes), the options that change the numbers, the torch and
transformers versions, and :func:`frame_key_parts`' ``code``: the sha256 of the source files that compute
the tables (:func:`radaudit.models.text_memo.source_digest`), so an edited method never serves the tables
of its previous version.

**Value**: each table as Parquet bytes in base64 (pyarrow: column order, dtypes and float bits survive the
round trip, so a table written from a hit is byte-identical to one written from a computed call).
**Store**: the :class:`~radaudit.models.cache.ContentCache` named ``frame_outputs``
(``<cache>/frame_outputs.sqlite``), committed per call. A stored value that does not read back (a damaged
entry, another pyarrow that cannot read it) is recomputed and overwritten, never served.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.models.cache import ContentCache, file_sha256, memo
from radaudit.models.text_memo import library_versions, source_digest

__all__ = ["FRAME_CACHE", "frame_from_value", "frame_key_parts", "frame_value", "image_digest", "memo_frames"]

#: The :class:`ContentCache` name of model-produced tables (``<cache>/frame_outputs.sqlite``).
FRAME_CACHE = "frame_outputs"


def frame_value(frame: pd.DataFrame) -> str:
    """``frame`` as a JSON-safe cache value: its Parquet bytes (pyarrow, index kept) in base64."""
    buf = io.BytesIO()
    frame.to_parquet(buf, engine="pyarrow", index=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def frame_from_value(value: Any) -> pd.DataFrame | None:
    """The table stored by :func:`frame_value`, or ``None`` for a value that does not read back."""
    if not isinstance(value, str):
        return None
    try:
        return pd.read_parquet(io.BytesIO(base64.b64decode(value)), engine="pyarrow")
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is recomputed, never served
        return None


def image_digest(image: Any) -> dict[str, Any] | None:
    """An image input for a key: ``None`` (no image), ``{"path", "sha256"}`` for a file; other inputs (an
    in-memory image) have no stable identity and raise :class:`TypeError` (the caller does not cache)."""
    if image is None:
        return None
    if isinstance(image, (str, os.PathLike)):
        return {"path": os.fspath(image), "sha256": file_sha256(image)}
    raise TypeError(f"no file identity for an image of type {type(image).__name__}")


def frame_key_parts(kind: str, model: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]],
                    options: Mapping[str, Any], code: Sequence[str]) -> dict[str, Any]:
    """The key parts of one call (module docstring): ``model`` is its identity (``{"spec", "revision", "dtype",
    "device"}``), ``inputs`` one JSON-safe mapping per item in order, ``code`` the modules whose source computes
    the tables."""
    return {"kind": kind, "model": dict(model), "inputs": [dict(i) for i in inputs], "options": dict(options),
            "libraries": library_versions("torch", "transformers", "pandas", "pyarrow"), "code": source_digest(*code)}


def _decode_frames(found: Any) -> list[pd.DataFrame] | None:
    """A stored call's tables, or ``None`` when one does not read back."""
    if not isinstance(found, dict) or not isinstance(found.get("frames"), list):
        return None
    frames = [frame_from_value(v) for v in found["frames"]]
    return frames if frames and all(f is not None for f in frames) else None


def memo_frames(cache: ContentCache | str | os.PathLike | bool | None, parts: Mapping[str, Any] | None,
                compute: Callable[[], Sequence[pd.DataFrame]]) -> tuple[list[pd.DataFrame], bool]:
    """``(frames, hit)``: the stored tables of the call ``parts`` when the cache holds them all, else
    ``compute()``'s, stored before they are returned (:func:`radaudit.models.cache.memo`). ``parts=None``
    (nothing identifies the model or an input) or a ``cache`` of ``None``/``False`` computes without the cache."""
    return memo(cache, FRAME_CACHE, parts, lambda: list(compute()),
                encode=lambda frames: {"frames": [frame_value(f) for f in frames]}, decode=_decode_frames)
