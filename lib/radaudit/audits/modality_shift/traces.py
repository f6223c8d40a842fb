"""Attention traces kept on disk: a rerun with the same model and items reads them back.

The attention sections of the notebook (Fig. 4: :func:`~radaudit.audits.modality_shift.conditions.attention_table`,
:func:`~radaudit.audits.modality_shift.heatmap.attention_maps`, and the gradient maps of
:func:`~radaudit.audits.modality_shift.heatmap.gradient_maps`) run the model with ``output_attentions`` or a
backward pass on every traced item: about a minute of CPU for the demo's samples, recomputed on every rerun
although nothing changed. With ``cache=`` they go through :func:`radaudit.models.frame_memo.memo_frames`: the key is
the model's identity (folder or hub id and its weights' fingerprint, :func:`radaudit.models.vlm.model_identity`),
its dtype and device, each traced item (sample, condition, prompt, the image's path and sha256, the image's
source and the label), the call's options, the library versions and the source of the modules that compute the
tables. The tables come back bit-exact, so a run from the cache writes the same CSVs as one that computed.

A model with no identity on disk (built in memory, never saved), or an item whose image is not a file, is
computed every time (logged), never cached under a guessed key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.errors import ParamsError
from radaudit.models.frame_memo import frame_key_parts, image_digest, memo_frames

__all__ = ["TRACE_CODE", "memo_traces", "trace_parts"]

log = logging.getLogger(__name__)

#: The modules whose source computes the traced tables (in the cache key: editing one recomputes them).
TRACE_CODE = ("radaudit.models.attention", "radaudit.models.vlm", "radaudit.audits.modality_shift.conditions",
              "radaudit.audits.modality_shift.heatmap", "radaudit.audits.modality_shift.traces")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def trace_parts(kind: str, model: Any, selected: pd.DataFrame, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cache key parts of one traced call on ``selected`` items, or ``None`` (compute, do not cache) when the
    model or an image has no identity on disk."""
    from radaudit.models.vlm import model_identity  # lazy: transformers, as the callers that hold a model

    try:
        spec, revision = model_identity(model)
    except ParamsError as err:
        log.info("%s: not cached (%s)", kind, err)
        return None
    if revision is None:
        return None
    try:
        first = next(model.parameters())
        where = {"dtype": str(first.dtype), "device": str(first.device)}
    except (AttributeError, StopIteration, TypeError):
        where = {}
    inputs = []
    for it in selected.itertuples(index=False):
        image = None if _missing(getattr(it, "image_path", None)) else str(it.image_path)
        try:
            img = image_digest(image)
        except (TypeError, OSError) as err:
            log.info("%s: not cached (image of %s: %s)", kind, it.sample_id, err)
            return None
        inputs.append({"sample_id": str(it.sample_id), "condition": str(it.condition), "prompt": str(it.prompt),
                       "image": img, "image_source": None if _missing(getattr(it, "image_source", None))
                       else str(it.image_source), "label": None if _missing(getattr(it, "label", None))
                       else int(it.label)})
    return frame_key_parts(kind, {"spec": spec, "revision": revision, **where}, inputs, options, TRACE_CODE)


def memo_traces(kind: str, model: Any, selected: pd.DataFrame, options: Mapping[str, Any],
                cache: Any, compute: Callable[[], Sequence[pd.DataFrame]]) -> list[pd.DataFrame]:
    """``compute()``'s tables for ``selected``, from the frame cache when ``cache`` (a folder, ``True`` for the
    default one, a :class:`~radaudit.models.cache.ContentCache`) holds this call (:func:`trace_parts`)."""
    if cache is None or cache is False:
        return list(compute())
    parts = trace_parts(kind, model, selected, options)
    frames, _ = memo_frames(cache, parts, compute)
    return frames
