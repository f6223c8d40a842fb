"""Seeded resampling: the bootstrap engine every experiment calls (iid, by cluster, paired across statistics).


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

Randomness comes only from ``numpy.random.default_rng(seed)``; the same seed gives the same
replicates, byte for byte. Each replicate draws ``n_units`` unit indices with
``rng.integers(0, n_units, n_units)``, so :func:`bootstrap_ci` and :func:`paired_bootstrap` with
the same seed and data produce identical replicates for the same statistic.

The draws themselves are public, for code that evaluates its statistic on all resamples at once
(a weighted sum over a count matrix, a vectorised AUROC) instead of one resample at a time:

* :func:`resample_indices` — ``(b, n)`` blocks of resampled unit indices, iid or within strata;
* :func:`resample_weights` — the same draws as ``(b, n)`` count matrices (how often each unit was drawn);
* :func:`resample_groups` — independent samples (e.g. real and synthetic images): one draw per group per
  replicate, groups in the order given.

They are the only places in radaudit that call ``rng.integers`` for a bootstrap; :func:`bootstrap_ci`
and :func:`paired_bootstrap` draw through :func:`resample_indices` / :func:`resample_weights` too.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.stats.intervals import METHODS, BootstrapError, BootstrapResult, bootstrap_pvalue, interval_from_replicates

__all__ = [
    "DIFFERENCE_SEP",
    "PAIRED_COLUMNS",
    "BootstrapData",
    "ColumnMean",
    "Statistic",
    "bootstrap_ci",
    "column_mean",
    "difference_label",
    "paired_bootstrap",
    "resample_groups",
    "resample_indices",
    "resample_weights",
    "stable_seed",
]

BootstrapData = np.ndarray | Sequence[Any] | tuple[Any, ...] | pd.DataFrame | pd.Series
Statistic = Callable[..., Any]


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
                raise ValueError("the arrays in data must have the same length, got lengths "
                                 f"{[len(a) for a in self.arrays]}")
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


# --------------------------------------------------------------------------------------------
# seeded draws: the resample streams every bootstrap in radaudit uses

#: Most index-matrix elements one block of resamples holds (b × n int64: 16 MB). The default ``chunk`` of
#: :func:`resample_indices` / :func:`resample_weights` is ``max(1, _BATCH_ELEMENTS // n)`` replicates.
_BATCH_ELEMENTS = 2_000_000

Seed = int | np.random.Generator | None
"""A seed of ``numpy.random.default_rng`` (an int, or None for fresh entropy), or a ``Generator`` to draw
from as it is (its stream continues where the caller left it)."""


def _count(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int, or a ValueError naming ``name`` when it is not an integer ``>= minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _strata_members(strata: Any, n: int) -> list[np.ndarray]:
    """The row indices of each stratum (ascending), strata in sorted order of their keys (``numpy.unique``)."""
    keys = strata.to_numpy() if isinstance(strata, (pd.Series, pd.DataFrame, pd.Index)) else np.asarray(strata)
    if keys.ndim not in (1, 2) or len(keys) != n:
        raise ValueError(f"strata must be one key per unit (1-D) or one key row per unit (2-D), aligned with the n={n} "
                         f"units; got shape {keys.shape}")
    if keys.dtype.kind in "fc" and np.isnan(keys).any():
        raise ValueError("strata has missing (NaN) keys; every unit needs a stratum")
    # 2-D: the distinct rows are the strata (e.g. the label sets of a label matrix); sorted either way
    _, codes = np.unique(keys, axis=0, return_inverse=True) if keys.ndim == 2 else np.unique(keys, return_inverse=True)
    codes = np.asarray(codes).ravel()
    return [np.flatnonzero(codes == c) for c in range(int(codes.max()) + 1)]


def resample_indices(n: int, n_bootstrap: int, *, seed: Seed = 0, strata: Any = None,
                     chunk: int | None = None) -> Iterator[np.ndarray]:
    """Bootstrap resamples of ``n`` units, as ``(b, n)`` blocks of unit indices (bounded memory), seeded.

    The unit resampled is whatever index ``0 … n−1`` stands for: a report, a test image, a case (map a
    cluster's draws to its rows with the codes of its ids, e.g. ``weights[:, codes]``). Row ``r`` of the
    ``k``-th block is replicate ``k·chunk + r``; the blocks together hold ``n_bootstrap`` replicates.

    Draw order (the contract every caller relies on, byte for byte):

    * iid (``strata=None``): a block of ``b`` replicates is one call ``rng.integers(0, n, size=(b, n))``,
      which numpy fills with the values of ``b`` successive calls ``rng.integers(0, n, n)``; so replicate
      ``r`` is the ``r``-th such call, whatever ``chunk`` is — the draws of :func:`bootstrap_ci` with this
      seed;
    * stratified: within a block, stratum by stratum (strata in sorted order of their keys), stratum ``s``
      with ``m_s`` units draws ``rng.integers(0, m_s, size=(b, m_s))`` and its members (ascending unit
      indices) are indexed with them; a block's row lists stratum 0's draws, then stratum 1's, … (so
      column ``j`` is not unit ``j``'s slot: use a row as a multiset, e.g. ``y[idx]`` or
      :func:`resample_weights`). Here the stream depends on ``chunk``; callers that must reproduce a
      stream keep the default.

    Args:
        n: the number of units (at least 2).
        n_bootstrap: the number of replicates (at least 1).
        seed: an int (or None) seeds ``numpy.random.default_rng``; a ``Generator`` is drawn from as it is.
        strata: stratified bootstrap: each replicate resamples *within* each stratum, so it keeps every
            stratum's size (pROC's stratified AUROC bootstrap keeps the numbers of positives and negatives).
            One key per unit (1-D), or a 2-D array whose distinct rows are the strata (e.g. an ``[n, L]``
            label matrix: the label sets). A stratum may hold a single unit (then it is drawn every time).
        chunk: replicates per block; default ``max(1, 2_000_000 // n)`` (16 MB of int64 indices).

    Yields:
        int64 arrays of shape ``(b, n)``, ``b = chunk`` except in the last block.

    Raises:
        ValueError: ``n < 2``, ``n_bootstrap < 1``, ``chunk < 1`` (each message names the argument), or
            ``strata`` not aligned with the ``n`` units or with missing keys.

    Example::

        >>> idx = next(resample_indices(5, 3, seed=0))
        >>> bool((idx[0] == np.random.default_rng(0).integers(0, 5, 5)).all())
        True
    """
    n = _count("n", n, 2)
    n_bootstrap = _count("n_bootstrap", n_bootstrap, 1)
    step = max(1, _BATCH_ELEMENTS // n) if chunk is None else _count("chunk", chunk, 1)
    members = None if strata is None else _strata_members(strata, n)
    return _index_blocks(n, n_bootstrap, np.random.default_rng(seed), members, step)  # checked now, drawn lazily


def _index_blocks(n: int, n_bootstrap: int, rng: np.random.Generator, members: list[np.ndarray] | None,
                  step: int) -> Iterator[np.ndarray]:
    for start in range(0, n_bootstrap, step):
        b = min(step, n_bootstrap - start)
        if members is None:
            yield rng.integers(0, n, size=(b, n))
        else:
            yield np.concatenate([m[rng.integers(0, len(m), size=(b, len(m)))] for m in members], axis=1)


def resample_weights(n: int, n_bootstrap: int, *, seed: Seed = 0, strata: Any = None, chunk: int | None = None,
                     dtype: Any = np.float64) -> Iterator[np.ndarray]:
    """The resamples of :func:`resample_indices` (same arguments, same draws) as ``(b, n)`` count matrices.

    ``W[r, i]`` is how often unit ``i`` was drawn in replicate ``r`` (each row sums to ``n``). A statistic
    that is a weighted sum over units (a mean, a word count, a confusion count) is then ``W @ values`` for
    all replicates at once, with no resampled copy of the data: a cluster bootstrap of rows takes
    ``W[:, codes]`` (``codes``: each row's unit index).

    ``dtype``: of the counts (float64 by default, ready for matrix products; small counts are exact in any
    float type).

    Example::

        >>> w = next(resample_weights(4, 2, seed=1))
        >>> w.sum(axis=1).tolist()
        [4.0, 4.0]
    """
    return _counts(resample_indices(n, n_bootstrap, seed=seed, strata=strata, chunk=chunk), n, dtype)


def _counts(blocks: Iterator[np.ndarray], n: int, dtype: Any) -> Iterator[np.ndarray]:
    for idx in blocks:
        b = len(idx)
        flat = (idx + n * np.arange(b)[:, None]).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(dtype)


def resample_groups(sizes: Sequence[int], n_bootstrap: int, *, seed: Seed = 0) -> Iterator[tuple[np.ndarray, ...]]:
    """Bootstrap of independent samples (groups): each replicate resamples every group on its own.

    For statistics of two or more samples drawn independently — real test images and synthetic images
    (FID, KID, PRDC), or one real set and two synthetic sets — the unit is the row *within its group*
    and each group keeps its size.

    Draw order: replicate by replicate, and within a replicate group by group in the order of ``sizes``,
    ``rng.integers(0, sizes[g], sizes[g])``.

    Args:
        sizes: the number of units of each group (each at least 2).
        n_bootstrap: the number of replicates (at least 1).
        seed: as in :func:`resample_indices`.

    Yields:
        Per replicate, a tuple with one int64 index array per group (indices into that group).

    Raises:
        ValueError: no group, a group of fewer than 2 units (``sizes[g]``), ``n_bootstrap < 1``.

    Example::

        >>> real, synth = next(resample_groups([3, 4], 10, seed=0))
        >>> len(real), len(synth)
        (3, 4)
    """
    groups = [_count(f"sizes[{g}]", s, 2) for g, s in enumerate(sizes)]
    if not groups:
        raise ValueError("sizes is empty; pass the number of units of each group")
    n_bootstrap = _count("n_bootstrap", n_bootstrap, 1)
    return _group_draws(groups, n_bootstrap, np.random.default_rng(seed))


def _group_draws(groups: list[int], n_bootstrap: int, rng: np.random.Generator) -> Iterator[tuple[np.ndarray, ...]]:
    for _ in range(n_bootstrap):
        yield tuple(rng.integers(0, s, s) for s in groups)


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


def _validate(method: str, n_bootstrap: int, confidence: float, max_failed: float) -> str:
    m = method.lower() if isinstance(method, str) else method
    if m not in METHODS:
        raise ValueError(f"unknown bootstrap method {method!r}; allowed: {', '.join(METHODS)}")
    if not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 1:
        raise ValueError(f"n_bootstrap must be a positive integer, got {n_bootstrap!r}")
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
    n_bootstrap: int,
    seed: int | None,
    jackknife: bool,
    vectorized: bool = False,
) -> tuple[int, dict[str, float], np.ndarray, np.ndarray | None, list[BaseException | None]]:
    """Estimates, replicates (B × k) and jackknife values (n_units × k) for k statistics, shared resamples."""
    if vectorized:
        return _run_vectorized(data, statistics, units, n_bootstrap, seed, jackknife)
    if (isinstance(data, pd.DataFrame) and statistics and all(isinstance(f, ColumnMean) for f in statistics.values())
            and not data[[f.column for f in statistics.values()]].isna().to_numpy().any()):
        return _run_means(data, statistics, units, n_bootstrap, seed, jackknife)
    rows = _Rows(data)
    layout = _Units(units, rows.n, rows.frame if rows.kind == "frame" else None)
    _check_units(layout.n, units)
    names = list(statistics)
    estimates = _checked_estimates({name: rows.evaluate(statistics[name], None) for name in names})

    reps = np.full((n_bootstrap, len(names)), np.nan)
    first_error: list[BaseException | None] = [None] * len(names)
    # replicate b draws rng.integers(0, n_units, n_units), the b-th row of resample_indices' blocks
    draws = (units for block in resample_indices(layout.n, n_bootstrap, seed=seed) for units in block)
    # Failed replicates are counted (and reported), so the numpy warnings they raise are noise here.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for b, units_b in enumerate(draws):
            idx = layout.rows(units_b)
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


def _batched(rows: _Rows, statistic: Statistic, idx: np.ndarray) -> np.ndarray:
    """A vectorized ``statistic`` on each row of the index matrix ``idx`` (m × n_rows): one value per row."""
    value = np.asarray(statistic(*(a[idx] for a in rows.arrays)) if rows.kind == "tuple" else statistic(rows.array[idx]),
                       dtype=float)
    if value.shape != (idx.shape[0],):
        raise TypeError(f"a vectorized statistic must return one number per resample (shape ({idx.shape[0]},)), "
                        f"got shape {value.shape}")
    return value


def _run_vectorized(data, statistics, units, n_bootstrap, seed, jackknife):
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
    step = max(1, _BATCH_ELEMENTS // rows.n)  # resamples per batch: memory stays bounded however large B x n is
    reps = np.full((n_bootstrap, len(names)), np.nan)
    jack = np.full((n, len(names)), np.nan) if jackknife else None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = 0
        # the loop's draws, in its order, one batch at a time (resample_indices: a (m, n) block holds the values
        # of m successive draws of size n; tests compare the two paths' intervals)
        for block in resample_indices(n, n_bootstrap, seed=seed, chunk=step):
            draws = unit_rows(block)
            for j, name in enumerate(names):
                reps[start:start + len(draws), j] = _batched(rows, statistics[name], draws)
            start += len(draws)
        if jack is not None:
            keep = np.arange(n - 1)[None, :]
            for start in range(0, n, step):
                left = np.arange(start, min(start + step, n))
                for j, name in enumerate(names):
                    jack[left, j] = _batched(rows, statistics[name], unit_rows(keep + (keep >= left[:, None])))
    return n, estimates, reps, jack, [None] * len(names)


def _run_means(data: pd.DataFrame, statistics: Mapping[str, ColumnMean], units: Any, n_bootstrap: int, seed: int | None,
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
    reps = np.empty((n_bootstrap, len(names)))
    with np.errstate(all="ignore"):
        start = 0
        # w[r, u]: how often replicate r drew unit u, from the loop's draws in its order (resample_weights)
        for w in resample_weights(layout.n, n_bootstrap, seed=seed, chunk=max(1, _BATCH_ELEMENTS // layout.n)):
            m = len(w)
            reps[start:start + m] = (w @ sums) / (w @ counts)[:, None]
            start += m
        jack = ((sums.sum(0) - sums) / (counts.sum() - counts)[:, None]) if jackknife else None
    return layout.n, estimates, reps, jack, [None] * len(names)


def _safe_eval(rows: _Rows, statistic: Statistic, idx: np.ndarray, errors: list[BaseException | None] | None,
               j: int) -> float:
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


# --------------------------------------------------------------------------------------------
# public bootstrap API


def _renamed_knob(n_bootstrap: int, n_resamples: int | None, where: str) -> int:
    """The replicate count, read from the deprecated keyword ``n_resamples`` when a caller still passes it.

    The lab's knob is ``n_bootstrap`` everywhere (params files, notebooks, functions); ``n_resamples`` (scipy's
    name, used here before) still works for one release, with a ``DeprecationWarning`` that names the new one.
    """
    if n_resamples is None:
        return n_bootstrap
    warnings.warn(f"{where}(n_resamples=...) is deprecated; pass n_bootstrap={n_resamples} instead.",
                  DeprecationWarning, stacklevel=3)
    return n_resamples


def bootstrap_ci(
    data: BootstrapData,
    statistic: Statistic,
    *,
    units: Any = None,
    n_bootstrap: int = 2000,
    confidence: float = 0.95,
    method: Literal["percentile", "bca", "basic", "shifted"] = "bca",
    seed: int | None = 0,
    max_failed: float = 0.1,
    vectorized: bool = False,
    n_resamples: int | None = None,
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
        n_bootstrap: bootstrap replicates B.
        n_resamples: deprecated old name of ``n_bootstrap`` (a ``DeprecationWarning``).
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

    Cost: ``n_bootstrap`` evaluations of the statistic, plus ``n_units`` more for BCa's jackknife.
    """
    n_bootstrap = _renamed_knob(n_bootstrap, n_resamples, "bootstrap_ci")
    m = _validate(method, n_bootstrap, confidence, max_failed)
    n_units, est, reps, jack, errs = _run(data, {"statistic": statistic}, units, n_bootstrap, seed, m == "bca", vectorized)
    return interval_from_replicates(
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
    "n_bootstrap",
    "n_failed",
    "pvalue",
)
"""Columns of the table :func:`paired_bootstrap` returns."""


def paired_bootstrap(
    data: BootstrapData,
    statistics: Mapping[str, Statistic],
    *,
    units: Any = None,
    n_bootstrap: int = 2000,
    confidence: float = 0.95,
    method: Literal["percentile", "bca", "basic", "shifted"] = "bca",
    seed: int | None = 0,
    differences: bool | Sequence[tuple[str, str]] = False,
    max_failed: float = 0.1,
    n_resamples: int | None = None,
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
        data, units, n_bootstrap, confidence, method, seed, max_failed: as in :func:`bootstrap_ci`.
        statistics: ``{metric name: statistic}``; the table keeps this order.
        differences: ``True`` for every pair ``(a, b)`` with ``a`` before ``b`` in ``statistics``,
            or an explicit list of ``(a, b)`` name pairs; ``False`` for none.

    Returns:
        A tidy DataFrame with columns :data:`PAIRED_COLUMNS`: one row per metric (``pvalue`` NaN),
        then one row per difference labelled :func:`difference_label` ``(a, b)``.
    """
    n_bootstrap = _renamed_knob(n_bootstrap, n_resamples, "paired_bootstrap")
    m = _validate(method, n_bootstrap, confidence, max_failed)
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
    n_units, est, reps, jack, errs = _run(data, statistics, units, n_bootstrap, seed, m == "bca")

    rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        r = interval_from_replicates(est[name], reps[:, j], None if jack is None else jack[:, j], m, confidence, n_units,
                                     name, max_failed, errs[j])
        rows.append({"metric": name, **r.to_dict(), "pvalue": math.nan})
    for a, b in pairs:
        ja, jb = names.index(a), names.index(b)
        label = difference_label(a, b)
        diff = reps[:, ja] - reps[:, jb]
        jdiff = None if jack is None else jack[:, ja] - jack[:, jb]
        r = interval_from_replicates(est[a] - est[b], diff, jdiff, m, confidence, n_units, label, max_failed,
                                     errs[ja] or errs[jb])
        rows.append({"metric": label, **r.to_dict(), "pvalue": bootstrap_pvalue(diff)})
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))
