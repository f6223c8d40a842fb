"""Confidence intervals from bootstrap replicates (percentile, basic, shifted, BCa), a bootstrap p-value,
and the Wilson interval of a proportion.

The interval formulas are the textbook ones and match scipy's on iid data (tested):

* percentile interval: the ``α/2`` and ``1 − α/2`` quantiles of the replicates (linear
  interpolation, ``numpy.quantile(method="linear")``, as scipy does);
* basic (reverse percentile) interval: ``[2θ̂ − q_{1−α/2}, 2θ̂ − q_{α/2}]`` (Davison & Hinkley 1997,
  eq. 5.6; scipy's ``method="basic"``). It corrects a bootstrap distribution shifted away from
  the estimate, but also mirrors its skew (and can cross 0 for a non-negative statistic);
* shifted percentile interval: ``[q_{α/2} − b̂, q_{1−α/2} − b̂]`` with the bootstrap bias estimate
  ``b̂ = mean(θ*) − θ̂`` (Efron & Tibshirani 1993, §10.6): the percentile interval of the bias-removed
  replicates ``θ* − b̂``. It keeps the shape (skew) of the bootstrap distribution and always sits
  around the estimate; use it when the replicates are shifted away from θ̂ *and* the basic interval
  would flip the skew (e.g. WAE, a mean of squared z-scores whose replicates all lie above θ̂);
* BCa (bias-corrected and accelerated; Efron 1987, JASA 82:171; Efron & Tibshirani 1993, §14.3)::

      z0 = Φ⁻¹( (#{θ*_b < θ̂} + #{θ*_b ≤ θ̂}) / 2B )                (bias correction, mid-rank)
      a  = Σ_i (θ̄_(·) − θ_(i))³ / ( 6 · [Σ_i (θ̄_(·) − θ_(i))²]^{3/2} )   (acceleration)
      α1 = Φ( z0 + (z0 + z_{α/2})   / (1 − a (z0 + z_{α/2})) )
      α2 = Φ( z0 + (z0 + z_{1−α/2}) / (1 − a (z0 + z_{1−α/2})) )
      CI = [ quantile(θ*, α1), quantile(θ*, α2) ]

  where θ_(i) is the statistic with unit ``i`` left out (jackknife over *units*, leave-one-unit-out)
  and θ̄_(·) their mean.

"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as _sps

from radaudit.errors import RadauditError

__all__ = [
    "METHODS",
    "BootstrapError",
    "BootstrapResult",
    "BootstrapWarning",
    "bootstrap_pvalue",
    "cover_rounding",
    "interval_from_replicates",
    "wilson_ci",
]

METHODS: tuple[str, ...] = ("percentile", "bca", "basic", "shifted")
"""The bootstrap interval methods :func:`bootstrap_ci` accepts."""

class BootstrapError(RadauditError, ValueError):
    """The statistic cannot be bootstrapped on this data (NaN on the full data, too many failed replicates)."""


class BootstrapWarning(RuntimeWarning):
    """BCa could not be computed (degenerate bootstrap or jackknife distribution); the percentile interval was used."""


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap confidence interval.

    ``method`` is the method actually used: ``"bca"`` falls back to ``"percentile"`` (with a
    :class:`BootstrapWarning`) when the BCa constants are undefined. ``n_bootstrap`` is the number
    requested; ``n_failed`` of them gave a non-finite value or raised and were left out of the
    interval. ``replicates`` holds all ``n_bootstrap`` values (NaN where a replicate failed), in
    draw order. ``z0`` and ``acceleration`` are the BCa constants (NaN for the percentile method).
    """

    estimate: float
    low: float
    high: float
    se: float
    method: str
    confidence: float
    n_units: int
    n_bootstrap: int
    n_failed: int = 0
    z0: float = math.nan
    acceleration: float = math.nan
    replicates: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as a flat dict (without the replicates), e.g. to build a table row."""
        d = asdict(self)
        d.pop("replicates")
        return d



def cover_rounding(estimate: float, low: float, high: float) -> tuple[float, float]:
    """Widen ``[low, high]`` to the estimate where it misses it only by floating-point rounding.

    The estimate and the replicates are often computed by different code (e.g. scikit-learn's trapezoid
    AUROC for the estimate, a vectorised rank formula for the replicates); on a degenerate bootstrap
    distribution both equal 0.2 but differ in the last bit, and an interval that "excludes" its own estimate
    by 1e-17 breaks error bars (negative lengths) and readers' trust. A miss larger than
    ``1e-9 · max(1, |estimate|)`` is a real one and is left as it is.
    """
    if not (math.isfinite(estimate) and math.isfinite(low) and math.isfinite(high)):
        return low, high
    tol = 1e-9 * max(1.0, abs(estimate))
    if estimate < low <= estimate + tol:
        low = estimate
    if estimate - tol <= high < estimate:
        high = estimate
    return low, high


def interval_from_replicates(
    estimate: float,
    replicates: np.ndarray,
    jackknife: np.ndarray | None,
    method: str,
    confidence: float,
    n_units: int,
    name: str,
    max_failed: float,
    first_error: BaseException | None = None,
) -> BootstrapResult:
    """CI from replicates (NaN = failed) and, for BCa, leave-one-unit-out jackknife values.

    Public so that code which computes its replicates vectorised (e.g. CAD/WAE over count matrices)
    gets exactly these intervals without re-implementing them.
    """
    n_bootstrap = len(replicates)
    ok = np.isfinite(replicates)
    n_failed = int((~ok).sum())
    if n_failed > max_failed * n_bootstrap or n_failed == n_bootstrap:
        msg = (
            f"statistic {name!r} failed (NaN/inf or an exception) on {n_failed} of {n_bootstrap} bootstrap "
            f"replicates, more than the allowed {max_failed:.0%}; the CI would be biased. Resample a larger "
            "unit, pool groups, or use a statistic defined on every resample"
        )
        if first_error is not None:
            msg += f" (first exception: {type(first_error).__name__}: {first_error})"
        raise BootstrapError(msg)
    theta = replicates[ok]
    alpha = (1.0 - confidence) / 2.0
    se = float(np.std(theta, ddof=1)) if theta.size > 1 else math.nan
    z0 = a = math.nan
    levels = (alpha, 1.0 - alpha)
    used = method
    if method == "bca":
        z0, a, levels_bca, why = _bca_levels(estimate, theta, jackknife, alpha)
        if levels_bca is None:
            warnings.warn(
                f"BCa interval for {name!r} is undefined ({why}); using the percentile interval",
                BootstrapWarning,
                stacklevel=3,
            )
            used = "percentile"
        else:
            levels = levels_bca
    low, high = np.quantile(theta, levels, method="linear")
    if method == "basic":  # reflect the quantiles around the estimate: corrects a shifted bootstrap distribution
        low, high = 2.0 * estimate - high, 2.0 * estimate - low
    elif method == "shifted":  # percentile interval of the bias-removed replicates θ* − (mean θ* − θ̂)
        bias = float(theta.mean()) - float(estimate)
        low, high = low - bias, high - bias
    low, high = cover_rounding(float(estimate), float(low), float(high))
    return BootstrapResult(
        estimate=float(estimate),
        low=float(low),
        high=float(high),
        se=se,
        method=used,
        confidence=float(confidence),
        n_units=int(n_units),
        n_bootstrap=int(n_bootstrap),
        n_failed=n_failed,
        z0=float(z0),
        acceleration=float(a),
        replicates=replicates,
    )


def _acceleration(jackknife: np.ndarray) -> float:
    """BCa acceleration from jackknife values: a = Σd³ / (6 (Σd²)^{3/2}), d = mean(θ_(·)) − θ_(i).

    Defined as 0 when all jackknife values are equal (Σd² = 0: no skewness to correct).
    """
    d = jackknife.mean() - jackknife
    ss = float(np.sum(d**2))
    if ss == 0.0 or not math.isfinite(ss):
        return 0.0 if ss == 0.0 else math.nan
    return float(np.sum(d**3) / (6.0 * ss**1.5))


def _bca_levels(
    estimate: float, theta: np.ndarray, jackknife: np.ndarray | None, alpha: float
) -> tuple[float, float, tuple[float, float] | None, str]:
    """(z0, a, (α1, α2) or None, reason) — see the module docstring for the formulas."""
    # mid-rank proportion of replicates below the estimate (as scipy), so that a constant
    # bootstrap distribution gives z0 = 0 rather than ±inf
    p = (np.count_nonzero(theta < estimate) + np.count_nonzero(theta <= estimate)) / (2.0 * theta.size)
    z0 = float(special.ndtri(p))
    if jackknife is None or not np.all(np.isfinite(jackknife)):
        n_bad = 0 if jackknife is None else int((~np.isfinite(jackknife)).sum())
        return z0, math.nan, None, f"the statistic failed on {n_bad} leave-one-unit-out jackknife samples"
    a = _acceleration(jackknife)
    if not math.isfinite(z0):
        return z0, a, None, "every bootstrap replicate lies on one side of the estimate"
    levels = []
    for z_alpha in (special.ndtri(alpha), special.ndtri(1.0 - alpha)):
        num = z0 + z_alpha
        denom = 1.0 - a * num
        if denom <= 0:
            return z0, a, None, f"acceleration {a:.3g} is too large for this confidence level"
        levels.append(float(special.ndtr(z0 + num / denom)))
    return z0, a, (levels[0], levels[1]), ""


def bootstrap_pvalue(diff: np.ndarray) -> float:
    """Two-sided percentile-inversion p-value of H0: difference = 0 from paired replicate differences (NaN = failed).

    ``p = min(1, 2 · min(1 + #{Δ*_b ≤ 0}, 1 + #{Δ*_b ≥ 0}) / (B' + 1))`` over the B' finite replicates; see
    :func:`radaudit.stats.paired_bootstrap`. NaN when no replicate is finite (B' = 0: nothing to test).
    """
    d = diff[np.isfinite(diff)]
    if d.size == 0:
        return math.nan
    below = np.count_nonzero(d <= 0)
    above = np.count_nonzero(d >= 0)
    return float(min(1.0, 2.0 * (1 + min(below, above)) / (d.size + 1)))


def wilson_ci(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion k/n (Wilson 1927; Newcombe 1998).

    ``(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``, via scipy's
    ``binomtest(k, n).proportion_ci(method="wilson")``. Useful where a bootstrap of a 0/1 mean
    degenerates (k = 0 or k = n gives a percentile CI of width 0; Wilson's does not).
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"wilson_ci needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = _sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)
