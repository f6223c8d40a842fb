"""Classification metrics, once for the whole lab: F1 from counts, reliability bins and ECE (and the AUROC name).

The audits call these (modality_shift's calibration, the CheXpert/CheXbert label F1 of the report metrics,
AtomiMed's F1) instead of writing their own; ``tests/metrics/test_classification.py`` checks them against
scikit-learn on random and tied inputs. The AUROC lives in :mod:`radaudit.stats.ranks`; :func:`auroc` here
only calls it, NaN where it is undefined. Bootstrap CIs of any of them: :func:`radaudit.stats.bootstrap_ci`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError
from radaudit.stats import ranks

__all__ = ["CALIBRATION_KINDS", "auroc", "ece_resamples", "expected_calibration_error", "f1_from_counts",
           "reliability_bins"]

CALIBRATION_KINDS = ("positive", "confidence")


def auroc(y_true: Any, score: Any) -> float:
    """:func:`radaudit.stats.ranks.auroc` (``sklearn.metrics.roc_auc_score``; label 1 positive), NaN where it is
    undefined: one class, or a missing score (a row without first-token scores cannot be ranked). Every resample
    at once: :func:`radaudit.stats.ranks.auroc_replicates`."""
    return ranks.auroc(y_true, score, undefined="nan")


def ece_resamples(prob_yes: Any, y_true: Any, n_bins: int = 10, *, kind: str = "positive") -> np.ndarray:
    """:func:`expected_calibration_error` of every row at once ((resamples × items) matrices, one ECE per row):
    the same uniform right-closed bins and ``Σ_m |B_m|/n · |acc(B_m) − conf(B_m)|``, equal up to float rounding;
    NaN for a row with a missing probability (where the one-row function raises)."""
    _check_calibration(kind, n_bins)
    p = np.atleast_2d(np.asarray(prob_yes, dtype=float))
    y = np.atleast_2d(np.asarray(y_true, dtype=float))
    if p.shape != y.shape:
        raise ParamsError("ece_resamples: probabilities and labels differ in shape.")
    value, hit = _binned_value_and_hit(p, y, kind)
    m_bins = int(n_bins)
    ids = np.searchsorted(np.linspace(0.0, 1.0, m_bins + 1)[1:-1], np.nan_to_num(value))
    flat = (np.arange(p.shape[0])[:, None] * m_bins + ids).ravel()
    size = p.shape[0] * m_bins
    count = np.bincount(flat, minlength=size).reshape(-1, m_bins)
    conf_sum = np.bincount(flat, weights=value.ravel(), minlength=size).reshape(-1, m_bins)
    acc_sum = np.bincount(flat, weights=hit.ravel(), minlength=size).reshape(-1, m_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        gaps = np.where(count > 0, np.abs(acc_sum / count - conf_sum / count), 0.0)
        ece = (count / p.shape[1] * gaps).sum(axis=1)
    return np.where(np.isnan(p).any(axis=1) | (p.shape[1] == 0), np.nan, ece)


def f1_from_counts(tp: Any, fp: Any, fn: Any, zero_division: float = 0.0) -> Any:
    """``F1 = 2TP / (2TP + FP + FN)`` elementwise (= ``2PR/(P+R)``), ``zero_division`` where ``2TP+FP+FN = 0``
    (scikit-learn's ``f1_score(..., zero_division=...)``). Scalars give a float, arrays an array."""
    tp, fp, fn = (np.asarray(x, dtype=float) for x in (tp, fp, fn))
    den = 2 * tp + fp + fn
    out = np.divide(2 * tp, den, out=np.full(np.broadcast(tp, fp, fn).shape, float(zero_division)), where=den > 0)
    return float(out) if out.ndim == 0 else out


def _check_calibration(kind: str, n_bins: int) -> None:
    if kind not in CALIBRATION_KINDS:
        raise ParamsError(f"kind={kind!r} is not allowed; use one of {', '.join(CALIBRATION_KINDS)}.")
    if int(n_bins) < 1:
        raise ParamsError(f"n_bins must be >= 1, got {n_bins}.")


def _binned_value_and_hit(p: np.ndarray, y: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """What a reliability bin holds (see :func:`reliability_bins`): P(yes) and the label (``"positive"``), or the
    top-label confidence and whether the argmax answer is right (``"confidence"``)."""
    if kind == "positive":
        return p, y
    return np.maximum(p, 1 - p), ((p >= 0.5).astype(float) == y).astype(float)


def reliability_bins(prob_yes: Any, y_true: Any, n_bins: int = 10, *, kind: str = "positive") -> pd.DataFrame:
    """Reliability-diagram data: one row per uniform bin of ``[0, 1]`` (empty bins kept, ``n = 0``).

    ``kind="positive"`` (default, the anchor's ``calibration_curve(y, p_yes, n_bins=10,
    strategy="uniform")`` and the paper's Fig. 3c,d curves, which can be *inverted*): the binned
    value is P(yes); ``conf(B)`` is the mean P(yes) in the bin and ``acc(B)`` the fraction of
    positives. ``kind="confidence"`` (top-label calibration): the binned value is
    ``max(P(yes), 1 - P(yes))`` and ``acc(B)`` is the fraction whose argmax answer equals the label.
    Bins are right-closed, ``((m-1)/M, m/M]``, with 0 in the first bin (as sklearn's
    ``calibration_curve``). Columns: ``bin, bin_low, bin_high, n, conf, acc, gap`` (``acc - conf``).
    """
    _check_calibration(kind, n_bins)
    p = np.asarray(prob_yes, dtype=float)
    y = np.asarray(y_true, dtype=float)
    if p.shape != y.shape:
        raise ParamsError("reliability_bins: probabilities and labels differ in length.")
    if np.isnan(p).any():
        raise ParamsError(f"reliability_bins: {int(np.isnan(p).sum())} probabilities are NaN (check the candidates' "
                          "first-token logits).")
    if ((p < 0) | (p > 1)).any():
        raise ParamsError("reliability_bins: probabilities must lie in [0, 1].")
    value, hit = _binned_value_and_hit(p, y, kind)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    ids = np.searchsorted(edges[1:-1], value)  # right-closed bins, as sklearn
    rows = []
    for m in range(int(n_bins)):
        sel = ids == m
        k = int(sel.sum())
        conf = float(value[sel].mean()) if k else math.nan
        acc = float(hit[sel].mean()) if k else math.nan
        rows.append({"bin": m, "bin_low": edges[m], "bin_high": edges[m + 1], "n": k, "conf": conf, "acc": acc,
                     "gap": acc - conf})
    return pd.DataFrame(rows)


def expected_calibration_error(prob_yes: Any, y_true: Any, n_bins: int = 10, *, kind: str = "positive") -> float:
    """ECE (paper §2.4): ``sum_m |B_m|/n * |acc(B_m) - conf(B_m)|`` over ``n_bins`` uniform bins.

    Empty bins contribute 0. See :func:`reliability_bins` for ``kind`` and the bin edges.
    """
    bins = reliability_bins(prob_yes, y_true, n_bins, kind=kind)
    n = bins["n"].sum()
    if n == 0:
        return math.nan
    full = bins[bins["n"] > 0]
    return float((full["n"] / n * (full["acc"] - full["conf"]).abs()).sum())
