"""The statistics layer every experiment uses: bootstrap CIs, paired bootstrap, permutation tests, BH.

Every headline number in a radaudit table carries a 95% bootstrap confidence interval computed
here, resampling the unit the paper resamples (reports, pairs, studies, patients).

Why the bootstrap is hand-written rather than :func:`scipy.stats.bootstrap`:

* scipy resamples observations independently; it has no *cluster* bootstrap (resample study or
  patient ids with replacement and keep all their rows), which is what a radiology audit needs
  when one study contributes several reports or one patient several studies;
* scipy draws fresh resamples per call, so two metrics (or two systems) bootstrapped separately do
  not share resample indices, and the CI of their *difference* cannot be formed from the two
  bootstrap distributions. :func:`paired_bootstrap` evaluates every metric on the same resampled
  units in each replicate.

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

Randomness comes only from ``numpy.random.default_rng(seed)``; the same seed gives the same
replicates, byte for byte. Each replicate draws ``n_units`` unit indices with
``rng.integers(0, n_units, n_units)``, so :func:`bootstrap_ci` and :func:`paired_bootstrap` with
the same seed and data produce identical replicates for the same statistic.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as _sps

from radaudit.errors import ParamsError, RadauditError

__all__ = [
    "stable_seed",
    "check_shard",
    "shard_slice",
    "split_parts",
    "METHODS",
    "BootstrapError",
    "BootstrapResult",
    "BootstrapWarning",
    "DIFFERENCE_SEP",
    "PAIRED_COLUMNS",
    "PermutationResult",
    "benjamini_hochberg",
    "ColumnMean",
    "bootstrap_ci",
    "column_mean",
    "cover_rounding",
    "difference_label",
    "paired_bootstrap",
    "permutation_test",
    "wilson_ci",
]

METHODS: tuple[str, ...] = ("percentile", "bca", "basic", "shifted")
"""The bootstrap interval methods :func:`bootstrap_ci` accepts."""

BootstrapData = np.ndarray | Sequence[Any] | tuple[Any, ...] | pd.DataFrame | pd.Series
Statistic = Callable[..., Any]


class BootstrapError(RadauditError, ValueError):
    """The statistic cannot be bootstrapped on this data (NaN on the full data, too many failed replicates)."""


class BootstrapWarning(RuntimeWarning):
    """BCa could not be computed (degenerate bootstrap or jackknife distribution); the percentile interval was used."""


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap confidence interval.

    ``method`` is the method actually used: ``"bca"`` falls back to ``"percentile"`` (with a
    :class:`BootstrapWarning`) when the BCa constants are undefined. ``n_resamples`` is the number
    requested; ``n_failed`` of them gave a non-finite value or raised and were left out of the
    interval. ``replicates`` holds all ``n_resamples`` values (NaN where a replicate failed), in
    draw order. ``z0`` and ``acceleration`` are the BCa constants (NaN for the percentile method).
    """

    estimate: float
    low: float
    high: float
    se: float
    method: str
    confidence: float
    n_units: int
    n_resamples: int
    n_failed: int = 0
    z0: float = math.nan
    acceleration: float = math.nan
    replicates: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as a flat dict (without the replicates), e.g. to build a table row."""
        d = asdict(self)
        d.pop("replicates")
        return d


@dataclass(frozen=True)
class PermutationResult:
    """A permutation test: observed statistic, p-value, and how many permutations were evaluated.

    ``exact`` is True when every distinct permutation was enumerated (scipy does this when
    ``n_resamples`` is at least their number); then ``n_resamples`` is that number.
    """

    statistic: float | np.ndarray
    pvalue: float | np.ndarray
    n_resamples: int
    exact: bool = False
    null_distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)


class ColumnMean:
    """A statistic: the mean of one numeric column of a DataFrame (:func:`column_mean`).

    :func:`bootstrap_ci` and :func:`paired_bootstrap` evaluate a set of them in closed form: a cluster
    resample's mean is ``Σ_u w_u S_u / Σ_u w_u N_u`` (``w_u``: how often unit ``u`` was drawn; ``S_u``, ``N_u``:
    its column sum and row count) and the jackknife's is ``(S − S_u) / (N − N_u)``, so no resampled frame is
    built. Same draws, in the same order, as the one-at-a-time loop; only the summation order (float
    rounding) differs. A column with missing values takes the loop.
    """

    def __init__(self, column: Any) -> None:
        self.column = column
        self.__name__ = f"mean({column})"

    def __call__(self, frame: pd.DataFrame) -> float:
        return float(frame[self.column].to_numpy(dtype=float).mean())

    def __repr__(self) -> str:
        return f"column_mean({self.column!r})"


def column_mean(column: Any) -> ColumnMean:
    """The statistic "mean of ``column``" for a DataFrame (a share when the column is boolean); see :class:`ColumnMean`."""
    return ColumnMean(column)


# --------------------------------------------------------------------------------------------
# data handling: rows, units, resampling


class _Rows:
    """Uniform row access to the three accepted data shapes (array, tuple of arrays, DataFrame)."""

    def __init__(self, data: BootstrapData) -> None:
        if isinstance(data, pd.DataFrame):
            self.kind = "frame"
            self.frame = data
            self.n = len(data)
        elif isinstance(data, tuple):
            if not data:
                raise ValueError("data is an empty tuple; pass one or more aligned arrays")
            self.kind = "tuple"
            self.arrays = tuple(_as_array(a) for a in data)
            lengths = {len(a) for a in self.arrays}
            if len(lengths) != 1:
                raise ValueError(f"the arrays in data must have the same length, got lengths {[len(a) for a in self.arrays]}")
            self.n = lengths.pop()
        else:
            self.kind = "array"
            self.array = _as_array(data)
            self.n = len(self.array)

    def evaluate(self, statistic: Statistic, rows: np.ndarray | None) -> float:
        """``statistic`` on the given rows (all rows when ``rows`` is None), as a float."""
        if self.kind == "frame":
            if rows is None:
                value = statistic(self.frame)
            else:
                sub = self.frame.take(rows)
                sub.index = pd.RangeIndex(len(rows))
                value = statistic(sub)
        elif self.kind == "tuple":
            value = statistic(*(a if rows is None else a[rows] for a in self.arrays))
        else:
            value = statistic(self.array if rows is None else self.array[rows])
        return _as_scalar(value)


def stable_seed(seed: int, *keys: object) -> int:
    """A 32-bit seed derived from ``seed`` and ``keys`` that is the same in every process.

    (Python's ``hash`` of a string changes between processes; this uses SHA-256.)
    """
    h = hashlib.sha256(repr((int(seed), *map(str, keys))).encode()).digest()
    return int.from_bytes(h[:4], "little")


def _as_array(a: Any) -> np.ndarray:
    arr = a.to_numpy() if isinstance(a, (pd.Series, pd.Index)) else np.asarray(a)
    if arr.ndim == 0:
        raise ValueError("data must have at least one dimension (rows along axis 0), got a scalar")
    return arr


def _as_scalar(value: Any) -> float:
    if value is None or value is pd.NA:
        return math.nan
    arr = np.asarray(value)
    if arr.size != 1:
        raise TypeError(f"the statistic must return one number, got an array of shape {arr.shape}")
    try:
        return float(arr.reshape(()))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the statistic must return a number, got {value!r}") from exc


class _Units:
    """Unit layout: the rows of each unit, stored CSR-style for vectorised cluster resampling.

    Units are numbered in sorted order of their ids (``pd.factorize(sort=True)``), so the result
    does not depend on the row order of the data.
    """

    def __init__(self, units: Any, n_rows: int, frame: pd.DataFrame | None) -> None:
        if units is None:
            self.n = n_rows
            self.order = None  # every row its own unit: unit i is row i
            return
        if isinstance(units, str):
            if frame is None or units not in frame.columns:
                raise ValueError(f"units={units!r} names a column, which needs a DataFrame with that column")
            units = frame[units]
        ids = units.to_numpy() if isinstance(units, (pd.Series, pd.Index)) else np.asarray(units)
        if ids.ndim != 1 or len(ids) != n_rows:
            raise ValueError(f"units must be 1-D and aligned with the data rows ({n_rows}), got shape {ids.shape}")
        codes, uniques = pd.factorize(ids, sort=True)
        if (codes < 0).any():
            raise ValueError(f"units has {(codes < 0).sum()} missing ids; every row needs a unit id")
        self.n = len(uniques)
        self.order = np.argsort(codes, kind="stable")
        self.counts = np.bincount(codes, minlength=self.n)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])

    def rows(self, unit_idx: np.ndarray) -> np.ndarray:
        """All rows of the given units (with repetition), unit by unit."""
        if self.order is None:
            return unit_idx
        counts = self.counts[unit_idx]
        total = int(counts.sum())
        # position within the concatenation -> position in `order`
        seg_start = np.cumsum(counts) - counts
        offsets = np.arange(total) - np.repeat(seg_start, counts)
        return self.order[np.repeat(self.starts[unit_idx], counts) + offsets]

    def rows_without(self, unit: int) -> np.ndarray:
        """All rows except those of ``unit`` (leave-one-unit-out jackknife)."""
        if self.order is None:
            return np.delete(np.arange(self.n), unit)
        s, c = self.starts[unit], self.counts[unit]
        return np.concatenate([self.order[:s], self.order[s + c :]])


def _validate(method: str, n_resamples: int, confidence: float, max_failed: float) -> str:
    m = method.lower() if isinstance(method, str) else method
    if m not in METHODS:
        raise ValueError(f"unknown bootstrap method {method!r}; allowed: {', '.join(METHODS)}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not 0.0 <= max_failed < 1.0:
        raise ValueError(f"max_failed must be in [0, 1), got {max_failed!r}")
    return m


def _check_units(n_units: int, units: Any) -> None:
    if n_units < 2:
        raise ValueError(f"the bootstrap needs at least 2 units, got {n_units}"
                         + (" (check the units column)" if units is not None else ""))


def _checked_estimates(values: Mapping[str, float]) -> dict[str, float]:
    """The full-data estimates, each finite (else :class:`BootstrapError`: no CI can be formed around it)."""
    for name, est in values.items():
        if not math.isfinite(est):
            raise BootstrapError(f"statistic {name!r} is {est} on the full data; a bootstrap CI needs a finite estimate "
                                 "(check for an empty group or a single class)")
    return dict(values)


def _run(
    data: BootstrapData,
    statistics: Mapping[str, Statistic],
    units: Any,
    n_resamples: int,
    seed: int | None,
    jackknife: bool,
    vectorized: bool = False,
) -> tuple[int, dict[str, float], np.ndarray, np.ndarray | None, list[BaseException | None]]:
    """Estimates, replicates (B × k) and jackknife values (n_units × k) for k statistics, shared resamples."""
    if vectorized:
        return _run_vectorized(data, statistics, units, n_resamples, seed, jackknife)
    if (isinstance(data, pd.DataFrame) and statistics and all(isinstance(f, ColumnMean) for f in statistics.values())
            and not data[[f.column for f in statistics.values()]].isna().to_numpy().any()):
        return _run_means(data, statistics, units, n_resamples, seed, jackknife)
    rows = _Rows(data)
    layout = _Units(units, rows.n, rows.frame if rows.kind == "frame" else None)
    _check_units(layout.n, units)
    names = list(statistics)
    estimates = _checked_estimates({name: rows.evaluate(statistics[name], None) for name in names})

    rng = np.random.default_rng(seed)
    reps = np.full((n_resamples, len(names)), np.nan)
    first_error: list[BaseException | None] = [None] * len(names)
    # Failed replicates are counted (and reported), so the numpy warnings they raise are noise here.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for b in range(n_resamples):
            idx = layout.rows(rng.integers(0, layout.n, size=layout.n))
            for j, name in enumerate(names):
                reps[b, j] = _safe_eval(rows, statistics[name], idx, first_error, j)
        jack = None
        if jackknife:
            jack = np.full((layout.n, len(names)), np.nan)
            for i in range(layout.n):
                idx = layout.rows_without(i)
                for j, name in enumerate(names):
                    jack[i, j] = _safe_eval(rows, statistics[name], idx, None, j)
    return layout.n, estimates, reps, jack, first_error


#: Most index-matrix elements one batch of a vectorized statistic gets (B × n int64: 16 MB).
_BATCH_ELEMENTS = 2_000_000


def _batched(rows: _Rows, statistic: Statistic, idx: np.ndarray) -> np.ndarray:
    """A vectorized ``statistic`` on each row of the index matrix ``idx`` (m × n_rows): one value per row."""
    value = np.asarray(statistic(*(a[idx] for a in rows.arrays)) if rows.kind == "tuple" else statistic(rows.array[idx]),
                       dtype=float)
    if value.shape != (idx.shape[0],):
        raise TypeError(f"a vectorized statistic must return one number per resample (shape ({idx.shape[0]},)), "
                        f"got shape {value.shape}")
    return value


def _run_vectorized(data, statistics, units, n_resamples, seed, jackknife):
    """:func:`_run` for statistics that take every resample at once: each array arrives as a (resamples × rows)
    matrix and the statistic returns one value per resample (NaN for a failed one). The resamples are the
    same draws, in the same order, as the one-at-a-time loop's, so only the statistic's rounding can differ."""
    rows = _Rows(data)
    if rows.kind == "frame":
        raise ValueError("a vectorized statistic takes arrays: pass data as an array or a tuple of arrays, not a DataFrame")
    layout = _Units(units, rows.n, None)
    size = 1
    if layout.order is not None:
        sizes = np.unique(layout.counts)
        if sizes.size > 1:
            raise ValueError("a vectorized statistic resamples whole clusters only when every cluster has the same number "
                             f"of rows (got sizes {sizes[:5].tolist()}); leave vectorized off for uneven clusters")
        size = int(sizes[0])
    n = layout.n
    _check_units(n, units)

    def unit_rows(u: np.ndarray) -> np.ndarray:
        """(m, k) unit indices -> (m, k * size) row indices, unit by unit, as the loop's ``_Units.rows``."""
        if layout.order is None:
            return u
        return layout.order[(layout.starts[u][..., None] + np.arange(size)).reshape(len(u), -1)]

    names = list(statistics)
    estimates = _checked_estimates({name: float(_batched(rows, statistics[name], np.arange(rows.n)[None, :])[0])
                                    for name in names})
    rng = np.random.default_rng(seed)
    step = max(1, _BATCH_ELEMENTS // rows.n)  # resamples per batch: memory stays bounded however large B x n is
    reps = np.full((n_resamples, len(names)), np.nan)
    jack = np.full((n, len(names)), np.nan) if jackknife else None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for start in range(0, n_resamples, step):
            # the loop's draws, in its order, one batch at a time: numpy's integers() fills a (m, n) array with the
            # values m successive calls of size n return (tests compare the two paths' intervals)
            draws = unit_rows(rng.integers(0, n, size=(min(step, n_resamples - start), n)))
            for j, name in enumerate(names):
                reps[start:start + len(draws), j] = _batched(rows, statistics[name], draws)
        if jack is not None:
            keep = np.arange(n - 1)[None, :]
            for start in range(0, n, step):
                left = np.arange(start, min(start + step, n))
                for j, name in enumerate(names):
                    jack[left, j] = _batched(rows, statistics[name], unit_rows(keep + (keep >= left[:, None])))
    return n, estimates, reps, jack, [None] * len(names)


def _run_means(data: pd.DataFrame, statistics: Mapping[str, ColumnMean], units: Any, n_resamples: int, seed: int | None,
               jackknife: bool):
    """:func:`_run` for column means (:class:`ColumnMean`) in closed form: per-unit sums and row counts, each
    replicate weighted by how often it drew each unit. The loop's draws, in its order."""
    layout = _Units(units, len(data), data)
    _check_units(layout.n, units)
    names = list(statistics)
    values = np.column_stack([data[statistics[n].column].to_numpy(dtype=float) for n in names])
    estimates = _checked_estimates({n: float(statistics[n](data)) for n in names})
    if layout.order is None:
        sums, counts = values, np.ones(layout.n)
    else:
        sums, counts = np.add.reduceat(values[layout.order], layout.starts, axis=0), layout.counts.astype(float)
    rng = np.random.default_rng(seed)
    step = max(1, _BATCH_ELEMENTS // layout.n)
    reps = np.empty((n_resamples, len(names)))
    with np.errstate(all="ignore"):
        for start in range(0, n_resamples, step):
            m = min(step, n_resamples - start)
            draws = rng.integers(0, layout.n, size=(m, layout.n))  # = m successive draws of the loop (see above)
            w = np.bincount((np.arange(m)[:, None] * layout.n + draws).ravel(), minlength=m * layout.n)
            w = w.reshape(m, layout.n).astype(float)
            reps[start:start + m] = (w @ sums) / (w @ counts)[:, None]
        jack = ((sums.sum(0) - sums) / (counts.sum() - counts)[:, None]) if jackknife else None
    return layout.n, estimates, reps, jack, [None] * len(names)


def _safe_eval(rows: _Rows, statistic: Statistic, idx: np.ndarray, errors: list[BaseException | None] | None, j: int) -> float:
    # A replicate that raises (e.g. an AUC on a resample with one class) counts as failed, like NaN.
    # A statistic that is simply broken still surfaces: the full-data estimate is computed without
    # this guard, and if too many replicates fail the error names the first exception.
    try:
        return rows.evaluate(statistic, idx)
    except TypeError:
        raise
    except Exception as exc:  # noqa: BLE001 - counted and reported, see above
        if errors is not None and errors[j] is None:
            errors[j] = exc
        return math.nan


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
    n_resamples = len(replicates)
    ok = np.isfinite(replicates)
    n_failed = int((~ok).sum())
    if n_failed > max_failed * n_resamples or n_failed == n_resamples:
        msg = (
            f"statistic {name!r} failed (NaN/inf or an exception) on {n_failed} of {n_resamples} bootstrap "
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
        n_resamples=int(n_resamples),
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


# --------------------------------------------------------------------------------------------
# public bootstrap API


def bootstrap_ci(
    data: BootstrapData,
    statistic: Statistic,
    *,
    units: Any = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    method: Literal["percentile", "bca", "basic", "shifted"] = "bca",
    seed: int | None = 0,
    max_failed: float = 0.1,
    vectorized: bool = False,
) -> BootstrapResult:
    """Bootstrap confidence interval of ``statistic`` on ``data``, optionally resampling clusters.

    Args:
        data: a 1-D array (``statistic(array)``), a tuple of aligned arrays
            (``statistic(*arrays)``), or a DataFrame (``statistic(frame)``; resampled frames get a
            fresh ``RangeIndex``). A list or Series is treated as one array. Rows are along axis 0.
        statistic: returns one number.
        units: unit id per row (array aligned with the rows, or a column name when ``data`` is a
            DataFrame). Each replicate resamples *units* with replacement and takes all their rows
            (cluster bootstrap), and the BCa jackknife leaves one unit out at a time. Default: each
            row is its own unit (ordinary iid bootstrap).
        n_resamples: bootstrap replicates B.
        confidence: two-sided coverage, e.g. 0.95.
        method: ``"percentile"``, ``"bca"``, ``"basic"`` or ``"shifted"`` (see the module docstring for the formulas).
        seed: seed of ``numpy.random.default_rng``.
        max_failed: the largest fraction of replicates allowed to fail (non-finite value or an
            exception, e.g. a resample with a single class). Failed replicates are dropped from
            the interval and counted in ``n_failed``; above this fraction :class:`BootstrapError`.
        vectorized: ``statistic`` takes every resample at once, as scipy's ``vectorized=True`` does: each
            array arrives as a (resamples × rows) matrix and it returns one value per resample (NaN for a
            failed one). Same resamples as the default loop, one call per batch instead of one per
            replicate; arrays only; with ``units`` only when every unit has the same number of rows (the
            resampled matrices are then rectangular).

    Returns:
        A :class:`BootstrapResult`. ``se`` is the standard deviation of the replicates (ddof=1).

    Raises:
        ValueError: a bad method name (the message lists the allowed ones), fewer than 2 units,
            misaligned units.
        BootstrapError: the statistic is not finite on the full data, or too many replicates fail.

    Cost: ``n_resamples`` evaluations of the statistic, plus ``n_units`` more for BCa's jackknife.
    """
    m = _validate(method, n_resamples, confidence, max_failed)
    n_units, est, reps, jack, errs = _run(data, {"statistic": statistic}, units, n_resamples, seed, m == "bca", vectorized)
    return _interval(
        est["statistic"],
        reps[:, 0],
        None if jack is None else jack[:, 0],
        m,
        confidence,
        n_units,
        getattr(statistic, "__name__", "statistic"),
        max_failed,
        errs[0],
    )


DIFFERENCE_SEP = " − "
"""Separator in the ``metric`` label of a difference row: ``"a − b"`` (U+2212 MINUS SIGN)."""


def difference_label(a: str, b: str) -> str:
    """The ``metric`` label :func:`paired_bootstrap` gives the difference ``a − b``."""
    return f"{a}{DIFFERENCE_SEP}{b}"


PAIRED_COLUMNS: tuple[str, ...] = (
    "metric",
    "estimate",
    "low",
    "high",
    "se",
    "confidence",
    "method",
    "n_units",
    "n_resamples",
    "n_failed",
    "pvalue",
)
"""Columns of the table :func:`paired_bootstrap` returns."""


def paired_bootstrap(
    data: BootstrapData,
    statistics: Mapping[str, Statistic],
    *,
    units: Any = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    method: Literal["percentile", "bca", "basic", "shifted"] = "bca",
    seed: int | None = 0,
    differences: bool | Sequence[tuple[str, str]] = False,
    max_failed: float = 0.1,
) -> pd.DataFrame:
    """Bootstrap several statistics on the SAME resampled units, and optionally their paired differences.

    Each replicate draws one set of units and evaluates every statistic on it, so the replicates
    of two metrics (or two systems scored on the same reports) are paired, and the CI of their
    difference ``a − b`` is the interval of the replicate differences ``θ*_a − θ*_b`` (BCa uses
    the jackknife differences ``θ_a(i) − θ_b(i)``). A replicate difference fails when either side
    fails.

    Bootstrap p-value of a difference (two-sided, H0: difference = 0): the smallest α for which
    the equal-tailed (1 − α) *percentile* interval of the replicate differences excludes 0, with
    the usual +1 correction so that it is never 0::

        p = min(1, 2 · min(1 + #{Δ*_b ≤ 0}, 1 + #{Δ*_b ≥ 0}) / (B' + 1))

    where B' is the number of successful replicates (cf. Efron & Tibshirani 1993, ch. 16;
    Davison & Hinkley 1997, §4.4). Ties at 0 count on both sides (conservative): identical metrics
    give p = 1. With ``method="bca"`` the CI is BCa while p inverts the percentile interval, so at
    the margin the two can disagree about whether 0 is excluded.

    Args:
        data, units, n_resamples, confidence, method, seed, max_failed: as in :func:`bootstrap_ci`.
        statistics: ``{metric name: statistic}``; the table keeps this order.
        differences: ``True`` for every pair ``(a, b)`` with ``a`` before ``b`` in ``statistics``,
            or an explicit list of ``(a, b)`` name pairs; ``False`` for none.

    Returns:
        A tidy DataFrame with columns :data:`PAIRED_COLUMNS`: one row per metric (``pvalue`` NaN),
        then one row per difference labelled :func:`difference_label` ``(a, b)``.
    """
    m = _validate(method, n_resamples, confidence, max_failed)
    if not statistics:
        raise ValueError("statistics is empty; pass {name: callable}")
    names = list(statistics)
    if differences is True:
        pairs = list(itertools.combinations(names, 2))
    elif differences is False or differences is None:
        pairs = []
    else:
        pairs = [tuple(p) for p in differences]
        unknown = sorted({n for p in pairs for n in p} - set(names))
        if unknown or any(len(p) != 2 for p in pairs):
            raise ValueError(f"differences must be (a, b) pairs of names in statistics {names}; unknown: {unknown}")
    n_units, est, reps, jack, errs = _run(data, statistics, units, n_resamples, seed, m == "bca")

    rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        r = _interval(est[name], reps[:, j], None if jack is None else jack[:, j], m, confidence, n_units, name, max_failed, errs[j])
        rows.append({"metric": name, **r.to_dict(), "pvalue": math.nan})
    for a, b in pairs:
        ja, jb = names.index(a), names.index(b)
        label = difference_label(a, b)
        diff = reps[:, ja] - reps[:, jb]
        jdiff = None if jack is None else jack[:, ja] - jack[:, jb]
        r = _interval(est[a] - est[b], diff, jdiff, m, confidence, n_units, label, max_failed, errs[ja] or errs[jb])
        rows.append({"metric": label, **r.to_dict(), "pvalue": _bootstrap_pvalue(diff)})
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


def _bootstrap_pvalue(diff: np.ndarray) -> float:
    """Two-sided percentile-inversion p-value of H0: difference = 0 (see :func:`paired_bootstrap`)."""
    d = diff[np.isfinite(diff)]
    below = np.count_nonzero(d <= 0)
    above = np.count_nonzero(d >= 0)
    return float(min(1.0, 2.0 * (1 + min(below, above)) / (d.size + 1)))


# --------------------------------------------------------------------------------------------
# tests and corrections


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
    n_resamples: int = 10000,
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
    distinct permutation (an exact test) when ``n_resamples`` is at least their number; otherwise
    the p-value is ``(1 + #{null as or more extreme}) / (1 + n_resamples)`` per tail, doubled
    for two-sided and capped at 1.

    A vectorised callable may return several statistics at once, stacked on the LAST axis (``[..., K]``):
    all K are then tested on the same permutations, generated once, and ``statistic``/``pvalue`` are
    arrays of K and ``null_distribution`` is ``[n_resamples, K]`` (scipy's own multi-output form).
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
        n_resamples=n_resamples,
        alternative=alternative,
        rng=np.random.default_rng(seed),
        batch=batch,
    )
    n_distinct = _n_distinct(xa.size, ya.size, paired, n_resamples)
    null = np.asarray(res.null_distribution)
    scalar = np.ndim(res.statistic) == 0
    return PermutationResult(
        statistic=float(res.statistic) if scalar else np.asarray(res.statistic, dtype=float),
        pvalue=float(res.pvalue) if scalar else np.asarray(res.pvalue, dtype=float),
        n_resamples=int(null.shape[0]) if null.ndim else 0,
        exact=n_distinct <= n_resamples,
        null_distribution=null,
    )


def benjamini_hochberg(pvalues: Any, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg FDR control (Benjamini & Hochberg 1995).

    Adjusted p-values (:func:`scipy.stats.false_discovery_control`, ``method="bh"``)::

        p̃_(k) = min_{j ≥ k} ( m · p_(j) / j )     (capped at 1)

    over the m finite p-values sorted ascending; a hypothesis is rejected when ``p̃ ≤ alpha``
    (equivalent to the step-up rule: reject the k smallest, k = max{k : p_(k) ≤ k·α/m}). NaN
    p-values (a test that could not be run) are left out of m, stay NaN, and are never rejected.

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
    if finite.any():
        adjusted[finite] = _sps.false_discovery_control(p[finite], method="bh")
    with np.errstate(invalid="ignore"):
        rejected = np.where(finite, adjusted <= alpha, False)
    return rejected.astype(bool), adjusted


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


_interval = interval_from_replicates  # backwards-compatible private name


# ----------------------------------------------------------------------------- deterministic parts (shard runs)
#
# ``radaudit run <experiment> --shard i/n`` (radaudit.shards) splits an experiment's expensive step: the step lists
# its work items in one deterministic order (the notebook's: studies, image batches) and shard i of n takes the i-th
# of n **contiguous, near-equal** parts, counting from 1 (as ``jest --shard=1/3``). The parts are
# ``numpy.array_split``'s: the first ``n_items % n`` parts have one item more (10 items in 3: sizes 4, 3, 3); they are
# disjoint and cover every item, and a part may be empty when there are fewer items than shards. Contiguous rather
# than strided so that neighbouring items (one generation batch, one feature batch) stay in one process. The rule
# lives here, below the audits, so that every experiment's shard step and radaudit.shards use the one rule.


def check_shard(shard: Any) -> tuple[int, int]:
    """``(i, n)`` as ints with ``1 <= i <= n``; anything else is a :class:`ParamsError` naming the form."""
    try:
        i, n = shard
        ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (i, n)) and 1 <= i <= n
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParamsError(f"shard {shard!r} must be (i, n) with 1 <= i <= n: the i-th of n parts, counting from 1 "
                          "(e.g. 1/3, 2/3, 3/3).")
    return int(i), int(n)


def shard_slice(n_items: int, i: int, n: int) -> slice:
    """The items of shard ``i`` of ``n`` (1-based) among ``n_items`` ordered items, as a slice (see the comment
    above: ``numpy.array_split`` parts, the larger ones first)."""
    i, n = check_shard((i, n))
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 0:
        raise ParamsError(f"n_items must be a count (an int >= 0), got {n_items!r}.")
    size, extra = divmod(n_items, n)
    start = (i - 1) * size + min(i - 1, extra)
    return slice(start, start + size + (1 if i <= extra else 0))


def split_parts(items: Sequence[Any], n: int) -> list[list[Any]]:
    """``items`` cut into ``n`` contiguous near-equal parts, in order (part ``k`` is shard ``k + 1``)."""
    items = list(items)
    return [items[shard_slice(len(items), k, n)] for k in range(1, check_shard((1, n))[1] + 1)]
