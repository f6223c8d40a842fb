"""The metric_metaeval experiment's steps as the notebook runs them, after its inputs: score every pair with every
metric.

Paper: Li et al., ReEvalMed (``../shared/papers/001_d2362e1e05417774.txt``). The inputs are built by
:mod:`radaudit.audits.metric_metaeval.data`, the measures on the scores (DS/RS, AUROC, monotonicity) are
:mod:`radaudit.audits.metric_metaeval.scores`, the tables :mod:`radaudit.audits.metric_metaeval.tables`; this module
runs the expensive step between them:

    data            = build_datasets(P)                                   # data.py: GT-ME pairs, monotonicity set
    scores, skipped = score_pairs(pairs, P.metrics, P.metric_options)     # this module: one row per pair x metric
    long            = ds_rs_long(scores, ...)                             # scores.py: the paper's measures

A metric that cannot run here (a missing package, weights offline) is skipped with its reason, never a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.audits.metric_metaeval.scores import METRIC_RANGES, SCORE_COLUMNS
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics import METRICS, MetricUnavailableError
from radaudit.metrics.score_memo import per_pair_scores
from radaudit.models.resolver import ModelUnavailableError

log = logging.getLogger(__name__)

__all__ = ["resolve_metrics", "score_pairs"]


def resolve_metrics(names: Sequence[str] | None) -> list[str]:
    """``None`` -> every registered metric (registry order); else the names, validated."""
    if names is None:
        return list(METRICS)
    bad = [m for m in names if m not in METRICS]
    if bad:
        raise ParamsError(f"unknown metrics {bad}; registered: {', '.join(METRICS)}")
    return list(dict.fromkeys(names))


def _check_pairs_frame(pairs: pd.DataFrame) -> None:
    need = {"pair_id", "gt", "rewritten", "aspect", "error_type", "significance"}
    if not isinstance(pairs, pd.DataFrame) or not need <= set(pairs.columns):
        raise DataFormatError(f"pairs must be a DataFrame with columns {sorted(need)} (PairDataset.pairs).")
    if pairs.empty:
        raise DataFormatError("pairs is empty: there is nothing to score (did the pair dataset fill any cell?).")
    if pairs["pair_id"].duplicated().any():
        raise DataFormatError("pairs has duplicate pair_id values.")


def score_pairs(pairs: pd.DataFrame, metrics: Sequence[str] | None = None,
                metric_options: Mapping[str, Mapping[str, Any]] | None = None, *,
                cache: Any = None) -> tuple[pd.DataFrame, dict[str, str]]:
    """Score every pair (GT = reference, ME = candidate) with every metric.

    Returns ``(scores, skipped)``: ``scores`` has one row per pair x metric
    (:data:`~radaudit.audits.metric_metaeval.scores.SCORE_COLUMNS`;
    ``score`` raw, ``score_100`` on 0–100, NaN where the metric is undefined: counted, never dropped);
    ``skipped`` maps a metric that cannot run here to the reason. ``cache`` (a folder, ``True`` for the default
    one, or ``None``): the lexical and rule-based metrics' per-pair scores are kept there and read back on a rerun
    (:mod:`radaudit.metrics.score_memo`; the same bytes, so the same tables).
    """
    _check_pairs_frame(pairs)
    names = resolve_metrics(metrics)
    options = dict(metric_options or {})
    refs, cands = pairs["gt"].astype(str).tolist(), pairs["rewritten"].astype(str).tolist()
    meta = pairs.reset_index(drop=True)
    for col in ("study_id", "source", "rule", "group"):
        if col not in meta.columns:
            meta = meta.assign(**{col: pd.NA})
    meta = meta[["pair_id", "study_id", "source", "aspect", "error_type", "significance", "rule", "group"]]
    frames, skipped = [], {}
    for name in names:
        try:
            vals, _ = per_pair_scores(name, refs, cands, options.get(name, {}), cache=cache)
        except (MetricUnavailableError, ModelUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("metric %s skipped: %s", name, err)
            continue
        if vals.shape != (len(pairs),):
            raise DataFormatError(f"metric {name!r} returned {vals.shape} per-pair scores for {len(pairs)} pairs.")
        f = meta.copy()
        f["metric"] = name
        f["score"] = vals
        f["score_100"] = 100.0 * vals / METRIC_RANGES.get(name, 1.0)
        f["higher_is_better"] = bool(METRICS.lookup(name).higher_is_better)
        frames.append(f[list(SCORE_COLUMNS)])
    if not frames:
        raise ParamsError(f"none of the metrics {names} can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    out = pd.concat(frames, ignore_index=True)
    out["group"] = out["group"].astype("Int64")
    return out, skipped
