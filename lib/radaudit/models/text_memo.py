"""Text-encoder outputs kept on disk per call: a rerun with its caches present skips the encoder.

Encoding is nearly all the time of BERTScore and of the semantic-diversity embeddings, and a lab reruns
the same notebook on the same texts all day (``make demo`` with its caches present; a figure
regenerated with new plotting parameters). :func:`memo_call` stores the arrays one *call* produced
(BERTScore's precision/recall/F1 of a batch of pairs; the pooled embeddings of a list of texts) and
gives the same bytes back when the same call comes again.

**Why the unit is the call, not the text.** Within a call, texts are batched by length
(:func:`radaudit.models.encoders.length_batches`), and a text's token states depend on the padded
width of its batch beyond float32 rounding (~1e-7: the padding changes the order of a few sums).
Caching per text would make a score depend on which texts an earlier run happened to encode; caching
per call keeps *same call → same bytes* whatever ran before, as the image-feature cache does per fixed
batch (:mod:`radaudit.models.feature_cache`). A call that differs in any text misses and is computed
whole (there is no partial reuse: the in-memory cache of :class:`radaudit.metrics.embedding.BERTScore`
covers repeats within a process).

**Key** (:func:`call_key_parts`): what the call computes (``kind``), the encoder's identity (its
``describe()``, the fingerprint of its weights: :func:`radaudit.models.backends.model_revision`), the
options that change the numbers, the device and dtype it runs in, the texts by sha256 in order, the
torch and transformers versions, and the sha256 of the source files that compute the numbers
(:func:`source_digest`): editing that code invalidates the entries, so a changed metric never serves
numbers of its previous version. An encoder whose weights have no identity (an unsaved model) is not
cached.

**Value**: the named arrays, raw bytes in base64 (:func:`radaudit.models.cache.array_value`, bit-exact),
and a small JSON dict of counts (truncated texts, empty texts) so the warnings a computed call gives
are given again on a hit. **Store**: the :class:`~radaudit.models.cache.ContentCache` named
``text_outputs`` (``<cache>/text_outputs.sqlite``), committed per call: an interrupted run keeps
every finished call.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from importlib import import_module, metadata
from pathlib import Path
from typing import Any

import numpy as np

from radaudit.models.backends import model_revision
from radaudit.models.cache import ContentCache, array_from_value, array_value, memo

__all__ = ["TEXT_CACHE", "call_key_parts", "encoder_call_parts", "library_versions", "memo_call", "source_digest",
           "texts_digest", "weights_identity"]

#: The :class:`ContentCache` name of text-encoder outputs (``<cache>/text_outputs.sqlite``).
TEXT_CACHE = "text_outputs"


def texts_digest(texts: Sequence[str]) -> str:
    """sha256 of ``texts`` in order, each length-prefixed (``["ab", "c"]`` and ``["a", "bc"]`` differ)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@lru_cache(maxsize=None)
def source_digest(*modules: str) -> str:
    """sha256 of the source files of ``modules`` (dotted names), in the order given: it changes whenever
    the code that computes a cached value is edited."""
    h = hashlib.sha256()
    for name in modules:
        path = getattr(import_module(name), "__file__", None)
        h.update(name.encode())
        h.update(Path(path).read_bytes() if path else b"")
    return h.hexdigest()


def library_versions(*dists: str) -> dict[str, str | None]:
    """The installed version of each distribution (``None`` where it is not installed), for cache keys: a cached
    value computed under another version of a library that computes it is not served."""
    out: dict[str, str | None] = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def weights_identity(encoder: Any) -> str | None:
    """The fingerprint of ``encoder.resolved``'s weights (:func:`radaudit.models.backends.model_revision`),
    computed once per encoder object (a local folder is hashed, which is not free); ``None`` = no identity."""
    if "_weights_identity" not in vars(encoder):
        encoder._weights_identity = model_revision(encoder.resolved)
    return encoder._weights_identity


def call_key_parts(kind: str, identity: Mapping[str, Any], options: Mapping[str, Any],
                   texts: Mapping[str, Sequence[str]], code: Sequence[str]) -> dict[str, Any]:
    """The key parts of one call (module docstring): ``texts`` maps a role (``"references"``, ``"texts"``)
    to its texts, stored by digest and count; ``code`` names the modules whose source computes the value."""
    return {"kind": kind, "encoder": dict(identity), "options": dict(options),
            "texts": {role: {"sha256": texts_digest(list(t)), "n": len(t)} for role, t in texts.items()},
            "libraries": library_versions("torch", "transformers"),
            "code": source_digest(*code)}


def encoder_call_parts(encoder: Any, kind: str, describe: Mapping[str, Any], options: Mapping[str, Any],
                       texts: Mapping[str, Sequence[str]], code: Sequence[str]) -> dict[str, Any] | None:
    """:func:`call_key_parts` for a call on ``encoder`` (an object with ``disk_cache``, ``resolved``, ``device`` and a
    torch ``model``): its identity is ``describe`` plus its weights' fingerprint, device and dtype. ``None`` (compute,
    do not cache) when its ``disk_cache`` is off or its weights have no identity on disk."""
    if encoder.disk_cache in (None, False):
        return None
    weights = weights_identity(encoder)
    if weights is None:
        return None
    identity = {**describe, "weights": weights, "device": encoder.device,
                "dtype": str(next(encoder.model.parameters()).dtype)}
    return call_key_parts(kind, identity, options, texts, code)


def _decode_call(found: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """A stored call's ``(arrays, info)``, or ``None`` when it does not read back."""
    if not isinstance(found, dict) or not isinstance(found.get("arrays"), dict):
        return None
    arrays = {k: array_from_value(v) for k, v in found["arrays"].items()}
    if any(a is None for a in arrays.values()):
        return None
    return arrays, dict(found.get("info") or {})


def _encode_call(result: tuple[dict[str, np.ndarray], dict[str, Any]]) -> dict[str, Any]:
    arrays, info = result
    return {"arrays": {k: array_value(v, np.asarray(v).dtype.str) for k, v in arrays.items()}, "info": info}


def memo_call(cache: ContentCache | str | os.PathLike | bool | None, parts: Mapping[str, Any] | None,
              compute: Callable[[], tuple[dict[str, np.ndarray], dict[str, Any]]]
              ) -> tuple[dict[str, np.ndarray], dict[str, Any], bool]:
    """``(arrays, info, hit)``: the stored result of the call ``parts`` when the cache holds it, else
    ``compute()``'s, stored before it is returned (:func:`radaudit.models.cache.memo`). ``parts=None`` (nothing
    identifies the encoder) or a ``cache`` of ``None``/``False`` computes without the cache. ``info`` must be
    JSON-serialisable."""
    (arrays, info), hit = memo(cache, TEXT_CACHE, parts, compute, encode=_encode_call, decode=_decode_call)
    return arrays, info, hit
