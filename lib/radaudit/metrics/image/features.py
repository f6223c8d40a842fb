"""Batched image-feature extraction with bounded memory.

:func:`extract_features` feeds images to an :class:`~radaudit.models.encoders.ImageEncoder` one
batch at a time: from a list of paths, a generator, or an ``[n, H, W(, C)]`` array, at most
``batch_size`` images are decoded and preprocessed at once (the encoder reads paths lazily), so
memory is one batch of pixels plus the ``[n, d]`` float32 result. :func:`iter_features` yields the
batches instead (e.g. into :class:`radaudit.metrics.image.fidelity.FeatureStats` for a full-set FID
that never holds all features). Batching does not change the features (tested: one batch vs many).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from radaudit.errors import DataFormatError, ParamsError

__all__ = ["extract_features", "iter_features"]

log = logging.getLogger(__name__)


def _check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    return int(batch_size)


def _image_iter(images: Any) -> Iterator[Any]:
    import os

    if isinstance(images, (str, os.PathLike)) or hasattr(images, "mode"):
        raise ParamsError("Pass a list (or iterable) of images, not a single image: wrap it in [ ].")
    if isinstance(images, np.ndarray):
        if images.ndim not in (3, 4):
            raise DataFormatError(f"An image stack must be [n, H, W] or [n, H, W, C]; got shape {images.shape}.")
        return iter(images)  # rows are views: nothing is copied until a batch is preprocessed
    return iter(images)


def iter_features(encoder: Any, images: Iterable[Any], batch_size: int = 32) -> Iterator[np.ndarray]:
    """Yield float32 ``[b, dim]`` feature batches (b ≤ ``batch_size``) in input order."""
    b = _check_batch_size(batch_size)
    it = _image_iter(images)
    done = 0
    while True:
        chunk = list(itertools.islice(it, b))
        if not chunk:
            return
        feats = np.asarray(encoder.embed(chunk, batch_size=b), dtype=np.float32)
        if feats.ndim != 2 or len(feats) != len(chunk):
            raise DataFormatError(f"The encoder returned features of shape {feats.shape} for {len(chunk)} images.")
        done += len(chunk)
        log.debug("extracted features of %d images", done)
        yield feats


def extract_features(encoder: Any, images: Iterable[Any], batch_size: int = 32) -> np.ndarray:
    """float32 ``[n, dim]`` features of ``images`` (paths, PIL images, arrays, a generator or an
    ``[n, H, W(, C)]`` stack), computed ``batch_size`` images at a time (see the module docstring)."""
    n = len(images) if hasattr(images, "__len__") else None  # type: ignore[arg-type]
    out: np.ndarray | None = None
    parts: list[np.ndarray] = []
    pos = 0
    for feats in iter_features(encoder, images, batch_size):
        if n is not None:
            if out is None:
                out = np.empty((n, feats.shape[1]), dtype=np.float32)
            out[pos:pos + len(feats)] = feats
            pos += len(feats)
        else:
            parts.append(feats)
    if n is not None:
        if out is None:
            return np.zeros((0, int(getattr(encoder, "dim", 0) or 0)), dtype=np.float32)
        return out
    if not parts:
        return np.zeros((0, int(getattr(encoder, "dim", 0) or 0)), dtype=np.float32)
    return np.concatenate(parts)
