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
* :func:`auroc_two_sample` — the same Mann–Whitney core for two samples of scores (negatives, positives);
* :func:`auroc_separation_interval` — the interval of an AUROC of exactly 1 or 0, where every bootstrap
  resample agrees and the percentile interval has zero width; :func:`auroc_interval` — the rule a table applies:
  the bootstrap interval, or that bound where the bootstrap's has zero width, and which of the two it is.

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

**Pearson's r** ``= Σ x̃_i ỹ_i / √(Σ x̃_i² · Σ ỹ_i²)``, ``x̃ = x − mean(x)`` (Spearman's ρ is this of the average
ranks): :func:`pearson_test` is :func:`scipy.stats.pearsonr` with its p-value; :func:`pearson_r` (one pair) and
:func:`pearson_r_pairs` (many column pairs of one matrix, or of a stack of bootstrap resamples, at once) compute the
formula here, equal to scipy's up to float rounding. Same input rules as above.

**Every bootstrap replicate at once**: :func:`kendall_tau_replicates` and :func:`spearman_rho_replicates` take the
replicates as row multiplicities (:func:`radaudit.stats.resample_weights`) and give τ-b / ρ of every column pair on
each, as :func:`auroc_replicates` does for the AUROC.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import stats as _sps

from radaudit.errors import ParamsError

__all__ = [
    "auroc",
    "auroc_interval",
    "auroc_replicates",
    "auroc_separation_interval",
    "auroc_two_sample",
    "average_ranks",
    "kendall_tau",
    "kendall_tau_columns",
    "kendall_tau_replicates",
    "kendall_test",
    "pairwise_signs",
    "pearson_r",
    "pearson_r_pairs",
    "pearson_test",
    "spearman_rho",
    "spearman_rho_columns",
    "spearman_rho_replicates",
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


def auroc_separation_interval(estimate: float, n_positive: int, n_negative: int,
                              confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval of an AUROC of exactly 1 (or 0): every positive outranks every negative (or the reverse).

    Then every bootstrap resample gives the same AUROC, the percentile interval is ``[1, 1]``, and a reader (and
    :func:`radaudit.findings.settle`, which calls a zero-width interval "fixed by how it is computed") cannot tell a
    perfect ranking on a small sample from a number that could not have been otherwise. The Hanley–McNeil
    variance is 0 there too. The bound used instead treats the smaller class's ``m = min(n₊, n₋)`` members as
    ``m`` independent comparisons that all went the right way and takes the exact (Clopper–Pearson) two-sided
    bound of ``m`` successes in ``m`` trials: ``low = (α/2)^(1/m)`` with ``α = 1 − confidence`` (for AUROC 0,
    ``high = 1 − (α/2)^(1/m)``). It is conservative: the ``n₊ n₋`` pairs carry more information than ``m``
    trials, so the true uncertainty is smaller. E.g. ``m = 35``: ``0.025^(1/35) = 0.900``.

    Returns ``(low, high)`` for an estimate of 1 or 0 (within 1e-12), ``None`` for any other estimate (its
    bootstrap interval has spread) or when a class is empty.
    """
    m = min(int(n_positive), int(n_negative))
    if m < 1 or not np.isfinite(estimate):
        return None
    if not 0.0 < confidence < 1.0:
        raise ParamsError(f"confidence must be in (0, 1), got {confidence}.")
    bound = float((0.5 * (1.0 - confidence)) ** (1.0 / m))
    if abs(estimate - 1.0) <= 1e-12:
        return bound, 1.0
    if abs(estimate) <= 1e-12:
        return 0.0, 1.0 - bound
    return None


def auroc_interval(estimate: float, low: float, high: float, n_positive: int, n_negative: int,
                   confidence: float = 0.95) -> tuple[float, float, str]:
    """The interval to print beside an AUROC, and how it was obtained: one rule for every AUROC table of the lab.

    ``(low, high, "bootstrap")``, the bootstrap interval as given, unless it has zero width (``low == high``)
    because the AUROC is exactly 1 or 0, where every resample agrees: then :func:`auroc_separation_interval`'s
    exact bound over the smaller class, ``((α/2)^(1/m), 1, "separation")`` for an AUROC of 1 (``(0, 1 − (α/2)^(1/m),
    "separation")`` for 0), ``m = min(n_positive, n_negative)``, ``α = 1 − confidence``. A missing (NaN) interval
    stays missing (NaN never equals NaN), labelled ``"bootstrap"`` as the interval that was tried.
    """
    if low == high:
        bound = auroc_separation_interval(estimate, n_positive, n_negative, confidence)
        if bound is not None:
            return bound[0], bound[1], "separation"
    return low, high, "bootstrap"


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


def _scipy_test(test: Any, x: Any, y: Any, name: str) -> tuple[float, float]:
    """``(statistic, two-sided p-value)`` of the scipy ``test`` on the pairs ``(x_i, y_i)`` under the shared input
    rules (module docstring); ``(nan, nan)`` when x or y is constant."""
    xa, ya = _pair(x, y, name)
    if _constant(xa) or _constant(ya):
        return math.nan, math.nan
    res = test(xa, ya)
    return float(res.statistic), float(res.pvalue)


def kendall_test(x: Any, y: Any) -> tuple[float, float]:
    """Kendall's τ-b of the pairs ``(x_i, y_i)`` and its two-sided p-value (:func:`scipy.stats.kendalltau`:
    exact without ties for n ≤ 33, else the normal approximation). ``(nan, nan)`` when x or y is constant."""
    return _scipy_test(_sps.kendalltau, x, y, "kendall_tau")


def kendall_tau(x: Any, y: Any) -> float:
    """Kendall's τ-b of the pairs ``(x_i, y_i)`` (module docstring; :func:`scipy.stats.kendalltau`). NaN when x or
    y is constant; NaN in either, unequal lengths or fewer than 2 pairs raise."""
    return kendall_test(x, y)[0]


def spearman_test(x: Any, y: Any) -> tuple[float, float]:
    """Spearman's ρ of the pairs ``(x_i, y_i)`` and its two-sided p-value (:func:`scipy.stats.spearmanr`, t
    approximation). ``(nan, nan)`` when x or y is constant."""
    return _scipy_test(_sps.spearmanr, x, y, "spearman_rho")


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


# --------------------------------------------------------------------------------------------
# Pearson's r (Spearman's ρ is Pearson's r of the average ranks)


def pearson_test(x: Any, y: Any) -> tuple[float, float]:
    """Pearson's r of the pairs ``(x_i, y_i)`` and its two-sided p-value (:func:`scipy.stats.pearsonr`, the exact
    distribution of r under independent normal samples). ``(nan, nan)`` when x or y is constant; the input rules
    of :func:`kendall_tau` (module docstring)."""
    return _scipy_test(_sps.pearsonr, x, y, "pearson_r")


def pearson_r(x: Any, y: Any) -> float:
    """Pearson's r of the pairs ``(x_i, y_i)``: ``Σ x̃_i ỹ_i / √(Σ x̃_i² · Σ ỹ_i²)`` with ``x̃ = x − mean(x)``,
    clipped to [−1, 1] (rounding can step just past ±1). Of average ranks (:func:`average_ranks`) it is Spearman's ρ.

    Computed here (two dot products), equal to :func:`pearson_test`'s scipy value up to float rounding (≤ 1e-15).
    NaN when x or y is constant; the input rules of :func:`kendall_tau` (module docstring).
    """
    xa, ya = _pair(x, y, "pearson_r")
    if _constant(xa) or _constant(ya):
        return math.nan
    xa, ya = xa - xa.mean(), ya - ya.mean()
    return float(np.clip((xa @ ya) / math.sqrt((xa @ xa) * (ya @ ya)), -1.0, 1.0))


def pearson_r_pairs(a: Any, first: Any, second: Any) -> np.ndarray:
    """Pearson's r of column ``first[p]`` with column ``second[p]`` of ``a``, for every p at once.

    ``a``: an (n × k) matrix, or a (B × n × k) stack of them (a bootstrap's resamples, each correlated on its own
    n rows). The columns are centred once and their sums of squares computed once (the centred Gram form
    ``Σ x̃_i ỹ_i / √(Σ x̃_i² · Σ ỹ_i²)``, as :func:`pearson_r`, equal to it per pair up to float rounding), so all
    pairs of k columns cost about one pass over ``a``. Clipped to [−1, 1]. Returns shape ``(P,)`` or ``(B, P)``;
    NaN for a pair with a constant column, and wherever ``a`` holds NaN. Pass average ranks (:func:`average_ranks`
    along the n axis) for Spearman's ρ.
    """
    x = np.asarray(a, dtype=float)
    i, j = np.asarray(first, dtype=int), np.asarray(second, dtype=int)
    if x.ndim not in (2, 3) or i.ndim != 1 or i.shape != j.shape:
        raise ParamsError(f"pearson_r_pairs: a must be (n × k) or (B × n × k) and first/second 1-D of one length, got "
                          f"shapes {x.shape}, {i.shape} and {j.shape}.")
    with np.errstate(invalid="ignore", divide="ignore"):
        if x.ndim == 2:
            x = x - x.mean(axis=0)
            ss = np.einsum("ij,ij->j", x, x)
            r = np.einsum("ij,ij->j", x[:, i], x[:, j]) / np.sqrt(ss[i] * ss[j])
        else:
            x = x - x.mean(axis=1, keepdims=True)
            ss = np.einsum("kij,kij->kj", x, x)
            r = np.einsum("kip,kip->kp", x[:, :, i], x[:, :, j]) / np.sqrt(ss[:, i] * ss[:, j])
        return np.clip(r, -1.0, 1.0)


# --------------------------------------------------------------------------------------------
# rank correlations on every bootstrap replicate at once (replicates given as row multiplicities)


def kendall_tau_replicates(x: Any, y: Any, weights: Any, *, diagonal: bool = False) -> np.ndarray:
    """Kendall τ-b of every column of ``x`` (n × m; NaN = row left out for that column) with every
    column of ``y`` (n × t; complete) on data where row i appears ``weights[b, i]`` times (B × n).

    Why weights: a bootstrap resample is the original rows with multiplicities, and τ-b of the
    resample is Σ_ij w_i w_j sx_ij sy_ij / √(Σ w_i w_j sx_ij² · Σ w_i w_j sy_ij²) (copies of one row
    are ties, sign 0), so each replicate is a quadratic form in ``w`` over sign matrices computed
    once (:func:`pairwise_signs`). The sums are integers below 2²⁴, exact in float32 (weights of float32, as
    :func:`radaudit.stats.resample_weights` gives them with ``dtype=np.float32``). A row of ones is the τ-b of the
    data itself (:func:`kendall_tau_columns`). ``diagonal``: pair column k of x with column k of y only (m == t).
    Returns (B, m, t), or (B, m) when diagonal; NaN where a column is constant on the replicate.
    """
    x, y, w = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(weights)
    m, t = x.shape[1], y.shape[1]
    valid = np.isfinite(x)
    sx = pairwise_signs(x).astype(np.float32)
    sy = pairwise_signs(y).astype(np.float32)
    sy2 = sy * sy
    B = w.shape[0]

    def quad(wa: np.ndarray, q: np.ndarray) -> np.ndarray:
        return np.einsum("bi,bi->b", wa @ q, wa)

    dx = np.stack([quad(w, sx[j] * sx[j]) for j in range(m)], axis=1)  # (B, m)
    dy_cache: dict[bytes, np.ndarray] = {}
    pairs = [(j, j) for j in range(m)] if diagonal else [(j, k) for j in range(m) for k in range(t)]
    out = np.full((B, m) if diagonal else (B, m, t), np.nan)
    for j, k in pairs:
        key = valid[:, j].tobytes()
        if key not in dy_cache:
            wv = w * valid[:, j][None, :]
            dy_cache[key] = np.stack([quad(wv, sy2[kk]) for kk in range(t)], axis=1)
        dy = dy_cache[key][:, k]
        num = quad(w, sx[j] * sy[k])
        with np.errstate(invalid="ignore", divide="ignore"):
            val = num / np.sqrt(dx[:, j].astype(float) * dy.astype(float))
        if diagonal:
            out[:, j] = val
        else:
            out[:, j, k] = val
    return out


_RANK_ELEMENTS = 4_000_000
"""How many centred ranks :func:`spearman_rho_replicates` holds at once (32 MB of float64)."""


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks of ``values`` (n) in each resample where row j appears ``weights[b, j]`` times (b × n): the
    weight of the strictly smaller values plus half of (the weight of the equal ones + 1), by cumulative sums over
    the sorted distinct values. NaN values form one group of their own, after every number (give them weight 0)."""
    _, inverse = np.unique(values, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(inverse[order])) + 1]
    per_value = np.add.reduceat(weights[:, order], starts, axis=1)  # [b x distinct values]
    ranks = np.cumsum(per_value, axis=1) - per_value + (per_value + 1.0) / 2.0
    return ranks[:, inverse.ravel()]


def spearman_rho_replicates(x: Any, y: Any, weights: Any, *, diagonal: bool = False) -> np.ndarray:
    """Spearman ρ like :func:`kendall_tau_replicates` (same arguments and shapes): ρ of each replicate's rows, NaN
    rows of an x column left out for that column, and a column with fewer than 2 rows left NaN.

    Every replicate at once, from the weights: in a resample where row j appears ``w_j`` times, the average rank of
    row i is ``Σ_j w_j [v_j < v_i] + (Σ_j w_j [v_j = v_i] + 1) / 2`` (its copies tie with it), and ρ is the
    ``w``-weighted Pearson r of the ranks centred on ``(n_b + 1) / 2``, ``n_b = Σ_j w_j`` (:func:`_weighted_ranks`:
    cumulative weights over the column's sorted distinct values, ``O(B · n)`` per column) instead of materialising
    and ranking each replicate's rows. The ranks are halves of integers and the sums of their products exact in
    float64, so each value equals :func:`spearman_rho_columns` on the replicate's rows (tested against scipy on
    resampled rows)."""
    x, y, w = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(weights, dtype=float)
    n, m, t = len(x), x.shape[1], y.shape[1]
    groups: dict[bytes, list[int]] = {}
    for j in range(m):
        groups.setdefault(np.isfinite(x[:, j]).tobytes(), []).append(j)
    out = np.full((w.shape[0], m) if diagonal else (w.shape[0], m, t), np.nan)
    step = max(1, _RANK_ELEMENTS // max(1, n * (m + t)))  # replicates per pass: the ranks of [step x n x (m + t)]
    for key, js in groups.items():
        valid = np.frombuffer(key, dtype=bool)
        columns = [x[:, j] for j in js] + [y[:, k] for k in range(t)]
        for start in range(0, w.shape[0], step):
            wv = w[start:start + step] * valid[None, :]
            centre = ((wv.sum(axis=1) + 1.0) / 2.0)[:, None]
            r = np.stack([_weighted_ranks(c, wv) - centre for c in columns], axis=2)
            rx, ry = r[:, :, :len(js)], r[:, :, len(js):]  # centred ranks, [b x n x m_g] and [b x n x t]
            with np.errstate(invalid="ignore", divide="ignore"):
                sx = np.einsum("bi,bij,bij->bj", wv, rx, rx)
                sy = np.einsum("bi,bik,bik->bk", wv, ry, ry)
                rho = np.einsum("bi,bij,bik->bjk", wv, rx, ry) / np.sqrt(sx[:, :, None] * sy[:, None, :])
            rho[wv.sum(axis=1) < 2] = np.nan
            if diagonal:
                out[start:start + step, js] = rho[:, np.arange(len(js)), js]
            else:
                out[start:start + step, js] = rho
    return out
