"""The modality_shift experiment: the experiment's steps as the notebook runs them (models, the long results table).

Paper: Restrepo et al., Selective Modality Shifting (``../shared/papers/003_528df7f4b7accfa0.txt``).
The parameters are :class:`radaudit.audits.modality_shift.params.Params`, the inputs are built by
:mod:`radaudit.audits.modality_shift.conditions`, the paper datasets and the run's samples
(:func:`~radaudit.audits.modality_shift.data.evaluation_samples`) by :mod:`radaudit.audits.modality_shift.data`,
the metric tables and the run summary by :mod:`radaudit.audits.modality_shift.tables` and the figures by
:mod:`radaudit.audits.modality_shift.plots`; this module joins them:

    P        = Params(**preset)
    samples  = evaluation_samples(P)                          # the evaluated split, seeded
    partners = draw_partners(samples, seed=P.swap_seed)       # opposite-label donors, seeded
    results  = run_models(P, samples, partners)               # one long table, every model
    save_results(results, run.dir / "tables")                 # parquet + CSV; every figure reads it

The long results table has one row per model x sample x condition: the generated text, the parsed
answer (yes / no / unmatched / unknown), the prediction, the raw first-token logits and the
pair-softmax probabilities (:data:`radaudit.audits.modality_shift.conditions.RESULT_COLUMNS` + score columns).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import ALL_CONDITIONS, MARKED_CONDITIONS, build_items, run_conditions
from radaudit.audits.modality_shift.data import template
from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN, add_marked_images
from radaudit.audits.modality_shift.models import DEMO_MODEL, demo_vlm_path, vllm_unservable
from radaudit.audits.modality_shift.params import ModelSpec, Params
from radaudit.errors import ParamsError
from radaudit.models.cache import default_cache_dir, open_cache
from radaudit.models.vlm import load_vlm
from radaudit.models.vlm_vllm import load_vllm_vlm

__all__ = ["build_run_items", "condition_order", "load_engine", "load_model", "pick_attention_samples", "run_models",
           "save_results"]

log = logging.getLogger(__name__)


def _demo_sample_options(params: Params) -> dict[str, Any]:
    """The sample options the demo VLM trains with: the run's ``max_note_words``, so its training notes are cut as
    the evaluated ones are (the demo VLM trains on covid-chestxray, the only dataset it is evaluated on)."""
    return {} if params.max_note_words is None else {"max_note_words": params.max_note_words}


def load_model(spec: ModelSpec, params: Params, cache_dir: str | os.PathLike | None = None) -> tuple[Any, Any, str]:
    """``(processor, model, where)`` for one spec, on **transformers** whatever ``params.backend`` (attention and
    gradient maps read the model's internals, which vLLM does not expose); ``demo`` trains the stand-in on
    first use (then reuses it). :func:`load_engine` gives the engine of the answers."""
    where = spec.model
    if spec.model == DEMO_MODEL:
        where = str(demo_vlm_path(params.data_root, seed=params.seed, cache_dir=cache_dir, split_seed=params.split_seed,
                                  test_size=params.test_size, sample_options=_demo_sample_options(params),
                                  **params.demo_vlm))
    processor, model = load_vlm(where, device=spec.device, dtype=spec.dtype, trust_remote_code=spec.trust_remote_code,
                                image_processor_kwargs=spec.image_processor or None)
    return processor, model, where


def load_engine(spec: ModelSpec, params: Params, cache_dir: str | os.PathLike | None = None) -> tuple[Any, Any, str]:
    """``(processor, model or engine, where)`` that answers and scores the items: :func:`load_model` with
    ``backend: hf``; with ``backend: vllm`` the model's processor and a vLLM engine
    (:func:`radaudit.models.vlm_vllm.load_vllm_vlm`: same prompts, images and cache keys; the spec's dtype and
    image-processor overrides; ``batch_size`` items per vLLM call at least 256, as vLLM batches itself)."""
    if params.backend != "vllm":
        return load_model(spec, params, cache_dir)
    reason = vllm_unservable(spec.model)
    if reason:
        raise ParamsError(f"backend vllm cannot serve {spec.name!r}: {reason}. Run it with backend: hf.")

    processor, engine = load_vllm_vlm(spec.model, dtype=spec.dtype, trust_remote_code=spec.trust_remote_code,
                                      image_processor_kwargs=spec.image_processor or None,
                                      batch_size=max(256, spec.batch_size))
    return processor, engine, spec.model


def build_run_items(params: Params, samples: pd.DataFrame, partners: pd.DataFrame,
                    model_type: str | None = None, cache_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The run's items (sample x condition x prompt) with the run's template, conditions and options.

    With a marked condition among ``params.conditions``, the samples' marked copies are written (once)
    under ``<cache>/marked_images`` (:func:`radaudit.audits.modality_shift.marker.add_marked_images`).
    """
    if any(c in MARKED_CONDITIONS for c in params.conditions) and MARKED_IMAGE_COLUMN not in samples.columns:
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        samples = add_marked_images(samples, root / "marked_images")
    return build_items(samples, partners, template(params), conditions=condition_order(params.conditions),
                       unmatched=params.unmatched, model_type=model_type, swap_metadata=params.swap_metadata)


def run_models(params: Params, samples: pd.DataFrame, partners: pd.DataFrame, *,
               cache_dir: str | os.PathLike | None = None,
               loaded: Mapping[str, tuple[Any, Any]] | None = None) -> pd.DataFrame:
    """Run every model of ``params.models`` on every item: the long results table (models stacked).

    Each model gets the items of :func:`build_run_items` with its own ``model_type`` suffix and is run by
    ``params.backend`` (:func:`load_engine`: transformers or vLLM, the same cache keys, so a run resumes on
    either; the ``engine`` column says which answered each row).
    ``loaded``: already loaded ``{name: (processor, model)}`` pairs to reuse. ``attrs["models"]``
    records where each model came from (the demo's trained folder, a hub id, a path).
    """
    store = open_cache(cache_dir if cache_dir is not None else True) if params.cache else None
    parts, where = [], {}
    try:
        for spec in params.models:
            if loaded and spec.name in loaded:
                processor, model = loaded[spec.name]
                where[spec.name] = spec.model
            else:
                processor, model, where[spec.name] = load_engine(spec, params, cache_dir)
            items = build_run_items(params, samples, partners, model_type=spec.model_type, cache_dir=cache_dir)
            parts.append(run_conditions(processor, model, items, model_name=spec.name,
                                        max_new_tokens=params.max_new_tokens, batch_size=spec.batch_size, cache=store,
                                        candidates=params.candidates, pair=params.pair))
    finally:
        if store is not None:
            store.close()
    results = pd.concat(parts, ignore_index=True)
    results.attrs["models"] = where
    return results


def save_results(results: pd.DataFrame, folder: str | os.PathLike) -> dict[str, Path]:
    """Write the long results table as ``results_long.parquet`` (exact floats; what the figures read)
    and ``results_long.csv`` (for a spreadsheet). The ``cached`` column (whether an answer came from the
    generation cache) describes this run, not the result, so it is left out: the same params and seed give
    byte-identical tables whether or not the answers were cached (tests/reliability/test_determinism.py)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {"parquet": folder / "results_long.parquet", "csv": folder / "results_long.csv"}
    frame = results.drop(columns=["cached"], errors="ignore").copy()
    frame.attrs = {}
    for col in frame.columns:  # mixed None/str object columns -> string for parquet
        if frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    frame.to_parquet(out["parquet"], index=False)
    frame.to_csv(out["csv"], index=False)
    return out


def pick_attention_samples(results: pd.DataFrame, n: int = 1, model: str | None = None) -> list[str]:
    """The samples shown in Fig. 4, best first: positive samples answered correctly without a shift whose
    answer the text shift flips (the paper's case), then other correct positives, then the rest
    (each group in ``sample_id`` order)."""
    r = results if model is None else results[results["model"] == model]
    wide = r.pivot_table(index="sample_id", columns="condition", values="correct", aggfunc="first")
    labels = r.groupby("sample_id")["label"].first().reindex(wide.index)
    ok = wide["no_shift"] == 1
    flipped = ok & (wide["text_shift"] == 0) if "text_shift" in wide else pd.Series(False, index=wide.index)
    rank = np.where(flipped & (labels == 1), 0, np.where(ok & (labels == 1), 1, 2))
    order = pd.DataFrame({"sample_id": wide.index.astype(str), "rank": rank}).sort_values(["rank", "sample_id"])
    return order["sample_id"].head(n).tolist()


def condition_order(conditions: Sequence[str]) -> list[str]:
    """Conditions in the paper's order."""
    return [c for c in ALL_CONDITIONS if c in conditions]
