"""Tests and multiplicity: permutation tests (scipy) and Benjamini–Hochberg FDR control."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats as _sps

__all__ = ["PermutationResult", "benjamini_hochberg", "permutation_test"]


@dataclass(frozen=True)
class PermutationResult:
    """A permutation test: observed statistic, p-value, and how many permutations were evaluated.

    ``exact`` is True when every distinct permutation was enumerated (scipy does this when
    ``n_permutations`` is at least their number); then ``n_permutations`` is that number.
    """

    statistic: float | np.ndarray
    pvalue: float | np.ndarray
    n_permutations: int
    exact: bool = False
    null_distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)



def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(x) − mean(y); vectorised along ``axis`` for scipy."""
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


_PERMUTATION_STATISTICS: dict[str, Callable[..., Any]] = {"mean_diff": _mean_diff}


def _n_distinct(nx: int, ny: int, paired: bool, cap: int) -> int | float:
    """Distinct permutations (2^n paired, C(nx+ny, nx) independent); ``inf`` once it surely exceeds ``cap``
    (the exact count of C(100000, 50000) takes a third of a second and is only compared with ``cap``)."""
    log_n = nx * math.log(2) if paired else (math.lgamma(nx + ny + 1) - math.lgamma(nx + 1) - math.lgamma(ny + 1))
    if log_n > math.log(max(cap, 1)) + 1.0:
        return math.inf
    return 2**nx if paired else math.comb(nx + ny, nx)


def permutation_test(
    x: Any,
    y: Any,
    *,
    statistic: str | Callable[..., Any] = "mean_diff",
    paired: bool = False,
    n_permutations: int = 10000,
    alternative: Literal["two-sided", "less", "greater"] = "two-sided",
    seed: int | None = 0,
    batch: int | None = None,
) -> PermutationResult:
    """Permutation test of ``statistic(x, y)``, a thin wrapper of :func:`scipy.stats.permutation_test`.

    * ``paired=False``: ``permutation_type="independent"`` — observations are reassigned between
      the two samples (H0: x and y come from the same distribution).
    * ``paired=True``: ``permutation_type="samples"`` — ``x[i]`` and ``y[i]`` are swapped within
      each pair (H0: within-pair exchangeability; for ``mean_diff`` this is the sign-flip test of
      the mean paired difference).

    ``statistic="mean_diff"`` is ``mean(x) − mean(y)``; a callable gets ``(x, y)`` (and ``axis``
    if its signature has one, in which case scipy calls it vectorised). scipy enumerates every
    distinct permutation (an exact test) when ``n_permutations`` is at least their number; otherwise
    the p-value is ``(1 + #{null as or more extreme}) / (1 + n_permutations)`` per tail, doubled
    for two-sided and capped at 1.

    A vectorised callable may return several statistics at once, stacked on the LAST axis (``[..., K]``):
    all K are then tested on the same permutations, generated once, and ``statistic``/``pvalue`` are
    arrays of K and ``null_distribution`` is ``[n_permutations, K]`` (scipy's own multi-output form).
    ``batch`` bounds how many permutations scipy materialises at once (memory: ``batch × (n_x + n_y)``).
    """
    if isinstance(statistic, str):
        if statistic not in _PERMUTATION_STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; allowed: {', '.join(_PERMUTATION_STATISTICS)} or a callable")
        stat_fn = _PERMUTATION_STATISTICS[statistic]
    else:
        stat_fn = statistic
    # integer data (e.g. unit indices a statistic looks up) stay integers: scipy gathers every permutation
    # from them, and int32 moves a quarter of float64's bytes; anything else becomes float64
    xa, ya = np.asarray(x), np.asarray(y)
    if not (np.issubdtype(xa.dtype, np.integer) and np.issubdtype(ya.dtype, np.integer)):
        xa, ya = xa.astype(float), ya.astype(float)
    if xa.ndim != 1 or ya.ndim != 1 or xa.size < 1 or ya.size < 1:
        raise ValueError("x and y must be non-empty 1-D arrays")
    if xa.dtype.kind == "f" and (np.isnan(xa).any() or np.isnan(ya).any()):  # integers cannot be NaN
        raise ValueError("x and y contain NaN; drop or impute missing values first (and report how many)")
    if paired and xa.size != ya.size:
        raise ValueError(f"paired=True needs x and y of the same length, got {xa.size} and {ya.size}")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"unknown alternative {alternative!r}; allowed: two-sided, less, greater")
    res = _sps.permutation_test(
        (xa, ya),
        stat_fn,
        permutation_type="samples" if paired else "independent",
        n_resamples=n_permutations,  # scipy's keyword for the number of permutations
        alternative=alternative,
        rng=np.random.default_rng(seed),
        batch=batch,
    )
    n_distinct = _n_distinct(xa.size, ya.size, paired, n_permutations)
    null = np.asarray(res.null_distribution)
    scalar = np.ndim(res.statistic) == 0
    return PermutationResult(
        statistic=float(res.statistic) if scalar else np.asarray(res.statistic, dtype=float),
        pvalue=float(res.pvalue) if scalar else np.asarray(res.pvalue, dtype=float),
        n_permutations=int(null.shape[0]) if null.ndim else 0,
        exact=n_distinct <= n_permutations,
        null_distribution=null,
    )


def benjamini_hochberg(pvalues: Any, alpha: float = 0.05, *, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg FDR control (Benjamini & Hochberg 1995).

    Adjusted p-values (:func:`scipy.stats.false_discovery_control`, ``method="bh"``)::

        p̃_(k) = min_{j ≥ k} ( m · p_(j) / j )     (capped at 1)

    over the m finite p-values sorted ascending; a hypothesis is rejected when ``p̃ ≤ alpha``
    (equivalent to the step-up rule: reject the k smallest, k = max{k : p_(k) ≤ k·α/m}). NaN
    p-values (a test that could not be run) are left out of m, stay NaN, and are never rejected.

    ``axis``: ``None`` corrects over every p-value together (the array flattened); an int corrects each slice
    along that axis on its own (e.g. ``axis=0`` on a ``[V × B]`` array: one family of V tests per bootstrap
    replicate, one scipy call for all B when no p-value is NaN).

    Returns:
        ``(rejected, adjusted)``, both shaped like ``pvalues``.
    """
    p = np.asarray(pvalues, dtype=float)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p-values must lie in [0, 1] (NaN allowed for tests that were not run)")
    adjusted = np.full(p.shape, np.nan)
    if axis is not None and p.ndim > 1:
        if finite.all():
            adjusted = _sps.false_discovery_control(p, method="bh", axis=axis)
        else:  # families with untested hypotheses: each slice with its own m
            moved, out = np.moveaxis(p, axis, -1), np.moveaxis(adjusted, axis, -1)
            for idx in np.ndindex(moved.shape[:-1]):
                out[idx] = benjamini_hochberg(moved[idx], alpha)[1]
    elif finite.any():
        adjusted[finite] = _sps.false_discovery_control(p[finite], method="bh")
    with np.errstate(invalid="ignore"):
        rejected = np.where(finite, adjusted <= alpha, False)
    return rejected.astype(bool), adjusted
