"""Rank statistics, once for the whole lab: AUROC, Kendall's τ-b and Spearman's ρ.

**AUROC** of a score for a binary label: ``AUROC = P(s₊ > s₋) + ½ P(s₊ = s₋)`` over all (positive, negative)
pairs, in Mann–Whitney form ::

    AUROC = (R₊ − n₊(n₊ + 1)/2) / (n₊ n₋)

with ``R₊`` the sum of the positives' average ranks among all scores (a positive–negative tie counts ½).

* :func:`auroc` — one sample: :func:`sklearn.metrics.roc_auc_score` (the trapezoid under the ROC curve);
* :func:`auroc_replicates` — every row of a (replicates × items) matrix at once (a bootstrap's resamples,
  ``bootstrap_ci(vectorized=True)``), in the Mann–Whitney form above. Its numerator and denominator are exact
  (ranks are multiples of ½), so it is the correctly rounded AUROC; scikit-learn's trapezoid sum can differ
  from it in the last bit (≤ 1e-15). Equal to :func:`auroc` row by row to that tolerance;
* :func:`auroc_two_sample` — the same Mann–Whitney core for two samples of scores (negatives, positives).

**Which label is positive** (one rule for all three): a label is positive when it equals ``positive``
(default 1, so ``True``, ``1`` and ``1.0`` are positive); every other label is negative — scikit-learn's
``pos_label`` rule of ``roc_curve``. A NaN label raises. A caller whose labels are coded otherwise (−1 for
uncertain, counts, strings) converts them at the call, where it can be seen (e.g. ``y == 1``), or passes
``positive``.

**Undefined AUROC**: one class only, or a NaN/infinite score. :func:`auroc` raises a :class:`ParamsError` (a
``ValueError``) that says what to do; ``undefined="nan"`` returns NaN instead, for tables that report such a
group as undefined. :func:`auroc_replicates` gives NaN for such a row (a failed bootstrap replicate).

**Rank correlations** of two paired samples ``(x_i, y_i)``:

* Kendall's τ-b (Kendall 1945) = ``(n_c − n_d) / √((n₀ − n_x)(n₀ − n_y))``, with ``n_c``/``n_d`` the
  concordant/discordant pairs, ``n₀ = n(n − 1)/2`` and ``n_x``, ``n_y`` the pairs tied in x, in y. Equivalently
  ``Σ_{i<j} sx_ij sy_ij / √(Σ sx_ij² · Σ sy_ij²)`` with ``sx_ij = sign(x_i − x_j)`` (a tie gives 0, which drops
  it from its own variable's denominator);
* Spearman's ρ = the Pearson correlation of the average ranks (ties share the mean of their ranks).

:func:`kendall_tau` and :func:`spearman_rho` are :func:`scipy.stats.kendalltau` (``variant="b"``) and
:func:`scipy.stats.spearmanr`; :func:`kendall_test` and :func:`spearman_test` add scipy's two-sided p-value.
:func:`kendall_tau_columns` and :func:`spearman_rho_columns` correlate every column of one matrix with every
column of another in one pass (the formulas above as matrix products), equal to scipy's per column up to float
rounding (≤ 1e-15). Shared input rules: aligned 1-D samples (columns: 2-D arrays with the same number of rows)
with at least 2 points, no NaN (raises: drop incomplete pairs first, and count them); a constant sample has no
ranking to correlate, and the coefficient is NaN (scipy's answer, here without its warning).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import stats as _sps

from radaudit.errors import ParamsError

__all__ = [
    "auroc",
    "auroc_replicates",
    "auroc_two_sample",
    "average_ranks",
    "kendall_tau",
    "kendall_tau_columns",
    "kendall_test",
    "pairwise_signs",
    "spearman_rho",
    "spearman_rho_columns",
    "spearman_test",
]


# --------------------------------------------------------------------------------------------
# AUROC


def _positives(y_true: Any, positive: Any, name: str) -> np.ndarray:
    """The positive mask of ``y_true``: ``y_true == positive`` (module docstring); NaN labels raise."""
    y = np.asarray(y_true)
    if y.dtype.kind in "fc" and np.isnan(y).any():
        raise ParamsError(f"{name}: y_true has {int(np.isnan(y).sum())} NaN labels; drop those rows (or decide which "
                          "class they are) first.")
    return np.asarray(y == positive, dtype=bool)


def auroc(y_true: Any, score: Any, *, positive: Any = 1, undefined: Literal["raise", "nan"] = "raise") -> float:
    """Area under the ROC curve of ``score`` for the labels ``y_true`` (:func:`sklearn.metrics.roc_auc_score`).

    ``AUROC = P(s₊ > s₋) + ½ P(s₊ = s₋) = (R₊ − n₊(n₊+1)/2) / (n₊ n₋)`` (module docstring). A constant score
    gives exactly 0.5.

    Args:
        y_true: 1-D labels; positive where ``y_true == positive``, every other label negative. NaN raises.
        score: 1-D scores, one per label (higher = more likely positive).
        positive: the positive label (default 1: ``True``/``1``/``1.0``).
        undefined: a single class or a NaN/infinite score makes the AUROC undefined: ``"raise"`` (default) raises
            a :class:`ParamsError` saying what to do, ``"nan"`` returns NaN.

    Raises:
        ParamsError: shapes differ or are not 1-D; a NaN label; an undefined AUROC with ``undefined="raise"``.
    """
    if undefined not in ("raise", "nan"):
        raise ParamsError(f"auroc: undefined={undefined!r} is not allowed; use 'raise' or 'nan'.")
    pos = _positives(y_true, positive, "auroc")
    s = np.asarray(score, dtype=float)
    if pos.ndim != 1 or s.shape != pos.shape:
        raise ParamsError(f"auroc: y_true has shape {pos.shape} but score has {s.shape}; pass one label per score "
                          "(1-D, same length).")
    n_pos = int(pos.sum())
    n_neg = pos.size - n_pos
    problem = None
    if n_pos == 0 or n_neg == 0:
        problem = (f"auroc: y_true has {n_pos} positives (label == {positive!r}) and {n_neg} negatives, and an AUROC "
                   "needs both; report this group as undefined (undefined='nan' gives NaN) or check which label is "
                   "positive (positive=...).")
    elif not np.isfinite(s).all():
        problem = (f"auroc: {int((~np.isfinite(s)).sum())} scores are NaN or infinite and cannot be ranked; drop those "
                   "rows first (and count them), or pass undefined='nan' to get NaN.")
    if problem is not None:
        if undefined == "nan":
            return math.nan
        raise ParamsError(problem)
    # imported here: sklearn.metrics adds 0.3-0.6 s to `import radaudit.stats`, which most runs never need
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(pos.astype(int), s))


def auroc_replicates(y_true: Any, score_matrix: Any, *, positive: Any = 1) -> np.ndarray:
    """:func:`auroc` of every row of a (replicates × items) matrix at once: one AUROC per row.

    For a bootstrap's resamples (``bootstrap_ci(..., vectorized=True)`` hands each array as such a matrix).
    ``y_true``: labels of the same shape, or one 1-D row of labels shared by every row; positive as in
    :func:`auroc`. Mann–Whitney form ``(Σ average ranks of the positives − n₊(n₊+1)/2) / (n₊ n₋)``, ranks per
    row, equal to :func:`auroc` up to float rounding (≤ 1e-15; module docstring). NaN for a row with one class
    or a NaN/infinite score (where :func:`auroc` raises).
    """
    s = np.atleast_2d(np.asarray(score_matrix, dtype=float))
    y = np.atleast_2d(_positives(y_true, positive, "auroc_replicates"))
    if s.ndim == 2 and y.shape != s.shape and y.shape[0] == 1 and y.shape[1:] == s.shape[1:]:
        y = np.broadcast_to(y, s.shape)
    if s.ndim != 2 or y.shape != s.shape:
        raise ParamsError(f"auroc_replicates: y_true has shape {y.shape} but score has {s.shape}; pass labels of "
                          "the scores' (replicates × items) shape, or one row of items.")
    n_pos = y.sum(axis=1)
    n_neg = y.shape[1] - n_pos
    u = np.where(y, _sps.rankdata(s, axis=1), 0.0).sum(axis=1) - n_pos * (n_pos + 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0) & np.isfinite(s).all(axis=1), u / (n_pos * n_neg), np.nan)


def auroc_two_sample(negatives: Any, positives: Any) -> float:
    """AUROC of two samples of scores: ``P(X₊ > X₋) + ½ P(X₊ = X₋)`` for ``X₊`` from ``positives`` and ``X₋``
    from ``negatives`` (= U / (n₊ n₋), U the Mann–Whitney statistic of the positives).

    A thin wrapper: :func:`auroc_replicates` on the one row ``positives ++ negatives`` labelled 1…1 0…0, so a
    bootstrap that takes every resample at once gives exactly the values of this function one resample at a
    time. Raises a :class:`ParamsError` for an empty sample or a NaN/infinite score (drop them first, and count
    them).
    """
    neg = np.asarray(negatives, dtype=float)
    pos = np.asarray(positives, dtype=float)
    if neg.ndim != 1 or pos.ndim != 1 or neg.size == 0 or pos.size == 0:
        raise ParamsError(f"auroc_two_sample needs two non-empty 1-D samples, got {neg.size} negative and {pos.size} "
                          "positive scores.")
    if not (np.isfinite(neg).all() and np.isfinite(pos).all()):
        raise ParamsError("auroc_two_sample got NaN or infinite scores; drop undefined scores first (and count them).")
    labels = np.r_[np.ones(pos.size, dtype=bool), np.zeros(neg.size, dtype=bool)]
    return float(auroc_replicates(labels, np.concatenate([pos, neg]))[0])


# --------------------------------------------------------------------------------------------
# rank correlations


def average_ranks(a: Any, axis: int = 0) -> np.ndarray:
    """Ranks 1..n along ``axis``, ties sharing the mean of their ranks (:func:`scipy.stats.rankdata`,
    ``method="average"``): what Spearman's ρ correlates. A NaN makes its whole slice NaN (scipy's
    ``nan_policy="propagate"``)."""
    return _sps.rankdata(a, axis=axis, method="average")


def pairwise_signs(a: Any) -> np.ndarray:
    """``sign(a_i − a_j)`` for every pair of rows, per column of the (n × k) array ``a``: a (k, n, n) array, 0 for
    a tie (and where a value is NaN). The building block of τ-b (:func:`kendall_tau_columns`)."""
    a = np.asarray(a, dtype=float)
    d = a.T[:, :, None] - a.T[:, None, :]
    return np.nan_to_num(np.sign(d), nan=0.0)


def _pair(x: Any, y: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The shared input rules of the one-pair coefficients (module docstring), as float arrays."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise ParamsError(f"{name}: x and y must be 1-D of the same length, got shapes {xa.shape} and {ya.shape}.")
    if xa.size < 2:
        raise ParamsError(f"{name} needs at least 2 pairs, got {xa.size}.")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ParamsError(f"{name}: x or y holds NaN; drop the incomplete pairs first (and count them).")
    return xa, ya


def _constant(a: np.ndarray) -> bool:
    return bool((a == a[0]).all())


def kendall_test(x: Any, y: Any) -> tuple[float, float]:
    """Kendall's τ-b of the pairs ``(x_i, y_i)`` and its two-sided p-value (:func:`scipy.stats.kendalltau`:
    exact without ties for n ≤ 33, else the normal approximation). ``(nan, nan)`` when x or y is constant."""
    xa, ya = _pair(x, y, "kendall_tau")
    if _constant(xa) or _constant(ya):
        return math.nan, math.nan
    res = _sps.kendalltau(xa, ya)
    return float(res.statistic), float(res.pvalue)


def kendall_tau(x: Any, y: Any) -> float:
    """Kendall's τ-b of the pairs ``(x_i, y_i)`` (module docstring; :func:`scipy.stats.kendalltau`). NaN when x or
    y is constant; NaN in either, unequal lengths or fewer than 2 pairs raise."""
    return kendall_test(x, y)[0]


def spearman_test(x: Any, y: Any) -> tuple[float, float]:
    """Spearman's ρ of the pairs ``(x_i, y_i)`` and its two-sided p-value (:func:`scipy.stats.spearmanr`, t
    approximation). ``(nan, nan)`` when x or y is constant."""
    xa, ya = _pair(x, y, "spearman_rho")
    if _constant(xa) or _constant(ya):
        return math.nan, math.nan
    res = _sps.spearmanr(xa, ya)
    return float(res.statistic), float(res.pvalue)


def spearman_rho(x: Any, y: Any) -> float:
    """Spearman's ρ = Pearson's r of the average ranks of x and of y (:func:`scipy.stats.spearmanr`). NaN when x or
    y is constant; NaN in either, unequal lengths or fewer than 2 pairs raise."""
    return spearman_test(x, y)[0]


def _columns(x: Any, y: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The shared input rules of the column forms (module docstring), as float arrays."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.ndim != 2 or ya.ndim != 2 or len(xa) != len(ya):
        raise ParamsError(f"{name}: x and y must be 2-D with the same number of rows, got {xa.shape} and {ya.shape}.")
    if len(xa) < 2:
        raise ParamsError(f"{name} needs at least 2 rows, got {len(xa)}.")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ParamsError(f"{name} needs complete rows; drop the NaN rows first.")
    return xa, ya


def kendall_tau_columns(x: Any, y: Any) -> np.ndarray:
    """Kendall's τ-b of every column of ``x`` (n × m) with every column of ``y`` (n × t): an (m × t) array.

    ``τ-b = Σ_{i,j} sx_ij sy_ij / √(Σ sx_ij² · Σ sy_ij²)`` with the sign matrices of :func:`pairwise_signs` (a
    tie is 0, so it leaves its own variable's denominator: the τ-b of :func:`scipy.stats.kendalltau`, equal per
    column up to float rounding). NaN for a constant column. Rows must be complete (no NaN), at least 2.
    """
    xa, ya = _columns(x, y, "kendall_tau_columns")
    n = len(xa)
    with np.errstate(invalid="ignore", divide="ignore"):
        sx = pairwise_signs(xa).reshape(xa.shape[1], n * n)
        sy = pairwise_signs(ya).reshape(ya.shape[1], n * n)
        return (sx @ sy.T) / np.sqrt(np.outer((sx * sx).sum(1), (sy * sy).sum(1)))


def spearman_rho_columns(x: Any, y: Any) -> np.ndarray:
    """Spearman's ρ of every column of ``x`` (n × m) with every column of ``y`` (n × t): an (m × t) array.

    ``ρ = Σ r̃x_i r̃y_i / √(Σ r̃x_i² · Σ r̃y_i²)``, ``r̃`` the average ranks (:func:`average_ranks`) minus their
    mean: :func:`scipy.stats.spearmanr` per column up to float rounding. NaN for a constant column. Rows must be
    complete (no NaN), at least 2.
    """
    xa, ya = _columns(x, y, "spearman_rho_columns")
    with np.errstate(invalid="ignore", divide="ignore"):
        rx, ry = average_ranks(xa), average_ranks(ya)
        rx = rx - rx.mean(0)
        ry = ry - ry.mean(0)
        return (rx.T @ ry) / np.sqrt(np.outer((rx * rx).sum(0), (ry * ry).sum(0)))
