"""WAE with uncertainty (paper §2.2; items 6–7 of :mod:`radaudit.metrics.association`).

:func:`wae_inference`: bootstrap CIs over reports and label-permutation p-values. ``_Engine`` computes the WAE
statistics of many replicates at once from the sparse count matrices; the draws and the intervals are
:mod:`radaudit.stats`' own.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse

from radaudit.metrics.association.counts import AssociationCounts, AssociationInputError
from radaudit.metrics.association.equations import assoc_masks, log_ratio, wae_batch, wae_names
from radaudit.stats import (
    METHODS,
    BootstrapResult,
    PermutationResult,
    interval_from_replicates,
    permutation_test,
    resample_weights,
)

__all__ = ["PARALLEL_WORK", "PERMUTED_DEFAULT", "WAE_COLUMNS", "wae_inference"]

WAE_COLUMNS: tuple[str, ...] = (
    "metric", "weighting", "group", "estimate", "low", "high", "se", "bias", "confidence", "method", "n_units",
    "n_bootstrap", "n_failed", "n_words", "perm_pvalue", "perm_alternative", "n_permutations", "perm_exact",
    "perm_n_undefined",
)
"""Columns of the WAE table :func:`wae_inference` returns."""
PERMUTED_DEFAULT: tuple[str, ...] = ("WAE_pred", "WAE_ref", "delta_WAE_pred", "delta_WAE_ref")
#: reports × (bootstrap + permutation replicates) from which wae_inference runs its bootstrap and its
#: permutations on two threads (below it, thread start-up costs more than it saves)
PARALLEL_WORK = 20_000_000


class _Engine:
    """Vectorised WAE statistics of an :class:`AssociationCounts` under report weights / relabellings."""

    def __init__(self, counts: AssociationCounts, alpha: float, tau: float) -> None:
        self.c = counts
        self.alpha, self.tau = alpha, tau
        self.V = len(counts.vocab)
        # replicates per chunk: [V × chunk] float arrays of ~4M cells (32 MB) at most
        self.chunk = int(np.clip(4_000_000 // max(self.V, 1), 16, 256))
        self.g = (str(counts.groups[0]), str(counts.groups[1]))
        self.n = counts.n_reports
        # Products are taken as ``X.T @ D`` with X the [n × V] CSR count matrix (a CSC view of its transpose)
        # and D a C-ordered [n × k] dense block: scipy's csc kernel walks each report once and adds its row of D
        # to its words, ~5x faster than the [V × n] CSR @ dense layout. Weighted sums of integer counts are
        # exact in float64, so the layout changes no number.
        self.R = counts.reference.astype(float)  # [n × V]
        self.P = counts.prediction.astype(float)
        self.is0 = (counts.group == 0).astype(float)
        self.is1 = 1.0 - self.is0
        self.rows0, self.rows1 = np.flatnonzero(counts.group == 0), np.flatnonzero(counts.group == 1)
        # the bootstrap weights each group's reports: the group's rows only (half the work of weighting all)
        self.R0, self.R1 = self.R[self.rows0], self.R[self.rows1]
        self.P0, self.P1 = self.P[self.rows0], self.P[self.rows1]
        self.tot_r = np.asarray(self.R.sum(axis=0)).ravel()
        self.tot_p = np.asarray(self.P.sum(axis=0)).ravel()
        # relabellings sum 0/1-weighted integer counts, at most a word's total: exact in float32 below 2**24,
        # and float32 halves the memory the [n × chunk] indicator and the products move
        exact32 = max(self.tot_r.max(initial=0), self.tot_p.max(initial=0)) < 2**24
        self.perm_dtype = np.float32 if exact32 else np.float64
        self.RP_perm = sparse.hstack([self.R, self.P], format="csr").astype(self.perm_dtype)  # [n × 2V]
        c_ref, c_pred = counts.group_totals()
        self.cr, self.cp = c_ref, c_pred

    def stats(self, cr0: np.ndarray, cr1: np.ndarray, cp0: np.ndarray, cp1: np.ndarray) -> dict[str, np.ndarray]:
        return wae_batch(cr0, cr1, cp0, cp1, alpha=self.alpha, V=self.V, tau=self.tau, g=self.g)

    def observed(self) -> dict[str, float]:
        out = self.stats(self.cr[:, [0]], self.cr[:, [1]], self.cp[:, [0]], self.cp[:, [1]])
        return {k: float(v[0]) for k, v in out.items()}

    def _accumulate(self, parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def weighted(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """Statistics for report multiplicities W [k × n] (bootstrap resamples)."""
        parts = []
        for i in range(0, W.shape[0], self.chunk):
            w = W[i:i + self.chunk]
            w0, w1 = np.ascontiguousarray(w[:, self.rows0].T), np.ascontiguousarray(w[:, self.rows1].T)  # [n_g × k]
            parts.append(self.stats(self.R0.T @ w0, self.R1.T @ w1, self.P0.T @ w0, self.P1.T @ w1))
        return self._accumulate(parts)

    def jackknife(self) -> dict[str, np.ndarray]:
        """Leave-one-report-out statistics (BCa acceleration), in report order."""
        parts = []
        R, P = self.c.reference, self.c.prediction
        for i in range(0, self.n, self.chunk):
            rd = R[i:i + self.chunk].toarray().T.astype(float)  # [V × k]
            pd_ = P[i:i + self.chunk].toarray().T.astype(float)
            m0, m1 = self.is0[i:i + self.chunk], self.is1[i:i + self.chunk]
            parts.append(self.stats(self.cr[:, [0]] - rd * m0, self.cr[:, [1]] - rd * m1,
                                    self.cp[:, [0]] - pd_ * m0, self.cp[:, [1]] - pd_ * m1))
        return self._accumulate(parts)

    def relabelled(self, idx0: np.ndarray) -> dict[str, np.ndarray]:
        """Statistics when the reports ``idx0[b]`` form group 0 and the rest group 1 (idx0 [B × n0])."""
        idx0 = np.asarray(idx0)
        single = idx0.ndim == 1
        idx0 = np.atleast_2d(idx0)
        if not np.issubdtype(idx0.dtype, np.integer):
            idx0 = idx0.astype(np.int64)
        parts = []
        for i in range(0, idx0.shape[0], self.chunk):
            sub = idx0[i:i + self.chunk]
            k = sub.shape[0]
            flat = np.zeros(k * self.n, dtype=self.perm_dtype)  # row b marks group 0 in relabelling b
            flat[(sub + (np.arange(k, dtype=np.int64) * self.n)[:, None]).ravel()] = 1.0
            ind = np.ascontiguousarray(flat.reshape(k, self.n).T)  # [n × k], C-ordered for the csc kernel
            rp0 = (self.RP_perm.T @ ind).astype(np.float64)  # [2V × k]: one pass over the indicator for both
            r0, p0 = rp0[:self.V], rp0[self.V:]
            parts.append(self.stats(r0, self.tot_r[:, None] - r0, p0, self.tot_p[:, None] - p0))
        out = self._accumulate(parts)
        return {k: (v[0] if single else v) for k, v in out.items()}


def wae_inference(
    counts: AssociationCounts,
    *,
    alpha: float = 0.1,
    assoc_z: float = 1.0,
    min_count: int = 1,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    ci_method: Literal["percentile", "basic", "bca", "shifted"] = "shifted",
    bootstrap_seed: int | None = 0,
    n_permutations: int = 1000,
    permutation_seed: int | None = 1,
    permuted: Sequence[str] = PERMUTED_DEFAULT,
    max_failed: float = 0.1,
) -> pd.DataFrame:
    """WAE (Eq. 4) with bootstrap CIs over reports and label-permutation p-values.

    Args:
        counts: the corpus (:func:`count_reports`); ``min_count`` as in :func:`cad`.
        alpha: smoothing α of Eq. (1). assoc_z: τ, the |z_ref| a word needs to count as associated
            with a group in WAE_g (pass the CAD z_neutral; module docstring, item 5).
        n_bootstrap, confidence, ci_method, bootstrap_seed, max_failed: the bootstrap over reports
            (``n_bootstrap=0`` skips it). The resamples are :func:`radaudit.stats.resample_weights`'
            report multiplicities, the draws of :func:`radaudit.stats.bootstrap_ci` (``data=report
            indices``, same seed); the interval is the stats module's percentile or BCa
            (leave-one-report-out jackknife) interval.
            Replicates where a statistic is undefined (NaN: an empty association set in the
            resample) count as failed; above ``max_failed`` the CI is NaN (not an error).
            Default percentile, not BCa: see the module docstring (item 6) for why; the ``bias``
            column is mean(replicates) − estimate.
        n_permutations, permutation_seed: the label-permutation test (``0`` skips it), via
            :func:`radaudit.stats.permutation_test` on the report indices of the two groups
            (``permutation_type="independent"``): group sizes are kept, each report's reference
            and prediction move together. ``permuted`` names the statistics tested; ``WAE_*`` are
            tested one-sided ("greater"), ``delta_WAE_*`` two-sided. All statistics are computed
            once per permutation batch (the same seed gives the same permutations to each test).

    Returns:
        One row per statistic (:data:`WAE_COLUMNS`): ``metric`` (``WAE_pred``, ``WAE_pred_<g0>``,
        ``WAE_pred_<g1>``, ``delta_WAE_pred`` and the same for ``ref``), ``weighting``, ``group``
        (``all``, a group, or ``"<g0>-<g1>"``), the estimate, its CI, ``se`` and ``bias`` of the
        replicates, ``n_words`` (words in the sum, ω > 0), and the permutation p-value (NaN where
        not tested). Relabellings in which a statistic is undefined (an empty association set;
        small corpora) are left out of its p-value (the permutation distribution conditional on
        the statistic being defined), counted in ``perm_n_undefined`` and warned about.
    """
    if ci_method not in METHODS:
        raise AssociationInputError(f"ci_method must be one of {METHODS}, got {ci_method!r}")
    if assoc_z < 0:
        raise AssociationInputError(f"assoc_z must be >= 0, got {assoc_z!r}")
    counts = counts.restrict(min_count)
    if len(counts.vocab) == 0:
        raise AssociationInputError("no word is left after tokenisation, stop-word removal and min_count: nothing to audit")
    eng = _Engine(counts, alpha, assoc_z)
    g = eng.g
    names = wae_names(g)
    unknown = sorted(set(permuted) - set(names))
    if unknown:
        raise AssociationInputError(f"permuted names unknown statistics {unknown}; allowed: {names}")
    est = eng.observed()

    n_words = _n_words(eng, alpha, assoc_z)

    if n_bootstrap and eng.n < 2:
        raise AssociationInputError(f"the bootstrap needs at least 2 reports, got {eng.n}")
    idx = np.arange(eng.n, dtype=np.int32 if eng.n < 2**31 else np.int64)  # permuted by scipy: int32 is lighter
    tested = [k for k in names if k in set(permuted)] if n_permutations else []
    live = [k for k in tested if math.isfinite(est[k])]

    boot_res, perm_res = _replicates(eng, counts, idx, live, n_bootstrap=n_bootstrap, bootstrap_seed=bootstrap_seed,
                                     ci_method=ci_method, n_permutations=n_permutations,
                                     permutation_seed=permutation_seed)

    intervals: dict[str, BootstrapResult | None] = {k: None for k in names}
    if boot_res is not None:
        reps, jack = boot_res
        for k in names:
            intervals[k] = _ci(est[k], reps[k], None if jack is None else jack[k], ci_method, confidence, eng.n, k,
                               max_failed)

    perms: dict[str, Any] = {k: (math.nan, "two-sided" if k.startswith("delta_") else "greater", 0, False, 0)
                             for k in tested if k not in live}
    if perm_res is not None:
        # each p-value is scipy's formula on its own column (_conditional_pvalue: equal to scipy's when every
        # null value is defined), with its own alternative
        null = np.asarray(perm_res.null_distribution).reshape(perm_res.n_permutations, len(live))
        for j, k in enumerate(live):
            alt = "two-sided" if k.startswith("delta_") else "greater"
            n_undef = int(np.count_nonzero(~np.isfinite(null[:, j])))
            pvalue = _conditional_pvalue(null[:, j], float(np.atleast_1d(perm_res.statistic)[j]), alt, perm_res.exact)
            if n_undef:
                warnings.warn(f"{k}: undefined (NaN) in {n_undef} of {perm_res.n_permutations} relabellings (an empty "
                              "association set); its p-value is over the defined ones only (see perm_n_undefined)",
                              RuntimeWarning, stacklevel=2)
            perms[k] = (pvalue, alt, perm_res.n_permutations, perm_res.exact, n_undef)

    return _wae_table(names, g, est, intervals, perms, n_words, confidence, eng.n)


def _n_words(eng: _Engine, alpha: float, assoc_z: float) -> dict[str, int]:
    """Per WAE statistic, the words that enter its sum (weight > 0 and, for WAE_g, in the reference association
    set) — the ``n_words`` column."""
    g = eng.g
    tab_z = log_ratio(eng.cr[:, [0]], eng.cr[:, [1]], alpha, eng.V)
    z_ref = (tab_z[0] / np.sqrt(tab_z[1]))[:, 0]
    a0, a1 = assoc_masks(z_ref, assoc_z)
    n_words: dict[str, int] = {}
    for wt, w in (("pred", eng.cp.sum(axis=1)), ("ref", eng.cr.sum(axis=1))):
        n_words[f"WAE_{wt}"] = int((w > 0).sum())
        n_words[f"WAE_{wt}_{g[0]}"] = int(((w > 0) & a0).sum())
        n_words[f"WAE_{wt}_{g[1]}"] = int(((w > 0) & a1).sum())
        n_words[f"delta_WAE_{wt}"] = n_words[f"WAE_{wt}_{g[0]}"] + n_words[f"WAE_{wt}_{g[1]}"]
    return n_words


def _bootstrap_replicates(eng: _Engine, n_bootstrap: int, bootstrap_seed: int | None,
                          ci_method: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """The bootstrap replicates of every WAE statistic, and the jackknife values when ``ci_method="bca"``."""
    # report multiplicities [k × n], k = eng.chunk replicates at a time: the draws of bootstrap_ci with this seed
    parts = [eng.weighted(W) for W in resample_weights(eng.n, n_bootstrap, seed=bootstrap_seed, chunk=eng.chunk)]
    return eng._accumulate(parts), (eng.jackknife() if ci_method == "bca" else None)


def _permutations(eng: _Engine, counts: AssociationCounts, idx: np.ndarray, live: Sequence[str], n_permutations: int,
                  permutation_seed: int | None) -> PermutationResult:
    """The label-permutation test of the ``live`` statistics: every one on the SAME permutations, generated once
    (scipy's multi-output form)."""
    def stat(xb: np.ndarray, yb: np.ndarray, axis: int = -1) -> np.ndarray:
        out = eng.relabelled(xb)
        return np.stack([out[k] for k in live], axis=-1)

    return permutation_test(idx[counts.group == 0], idx[counts.group == 1], statistic=stat,
                            n_permutations=n_permutations, alternative="greater", seed=permutation_seed,
                            batch=eng.chunk)


def _replicates(eng: _Engine, counts: AssociationCounts, idx: np.ndarray, live: Sequence[str], *, n_bootstrap: int,
                bootstrap_seed: int | None, ci_method: str, n_permutations: int,
                permutation_seed: int | None) -> tuple[Any, PermutationResult | None]:
    """``(bootstrap replicates or None, permutation result or None)``, side by side on two threads for a large corpus.

    The bootstrap and the permutations are independent (own seeds) and spend their time in scipy's sparse
    products, which release the GIL: on a large corpus (:data:`PARALLEL_WORK`) they run on two threads.
    Intervals, p-values and warnings are formed by the caller, in its thread, from what the threads return.
    """
    bootstrap_replicates = functools.partial(_bootstrap_replicates, eng, n_bootstrap, bootstrap_seed, ci_method)
    permutations = functools.partial(_permutations, eng, counts, idx, live, n_permutations, permutation_seed)
    boot_res = perm_res = None
    if n_bootstrap and live and eng.n * (n_bootstrap + n_permutations) >= PARALLEL_WORK:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            fb, fp = pool.submit(bootstrap_replicates), pool.submit(permutations)
            boot_res, perm_res = fb.result(), fp.result()
    else:
        boot_res = bootstrap_replicates() if n_bootstrap else None
        perm_res = permutations() if live else None
    return boot_res, perm_res


def _wae_table(names: Sequence[str], g: tuple[str, str], est: dict[str, float],
               intervals: dict[str, BootstrapResult | None], perms: dict[str, Any], n_words: dict[str, int],
               confidence: float, n_units: int) -> pd.DataFrame:
    """The :data:`WAE_COLUMNS` table: one row per statistic, its estimate, CI and permutation p-value."""
    rows = []
    for k in names:
        wt = "pred" if "_pred" in k else "ref"
        grp = f"{g[0]}-{g[1]}" if k.startswith("delta_") else (k.split(f"WAE_{wt}_", 1)[1] if f"WAE_{wt}_" in k else "all")
        r = intervals[k]
        p = perms.get(k, (math.nan, None, 0, False, 0))
        rows.append({
            "metric": k, "weighting": wt, "group": grp, "estimate": est[k],
            # WAE is a mean of squares: a bound below 0 (shifted/basic intervals) is clipped to 0
            "low": (r.low if k.startswith("delta_") else max(r.low, 0.0)) if r else math.nan,
            "high": r.high if r else math.nan, "se": r.se if r else math.nan,
            "bias": float(np.nanmean(r.replicates)) - est[k] if r else math.nan,
            "confidence": confidence, "method": r.method if r else None, "n_units": n_units,
            "n_bootstrap": r.n_bootstrap if r else 0, "n_failed": r.n_failed if r else 0,
            "n_words": n_words[k], "perm_pvalue": p[0], "perm_alternative": p[1], "n_permutations": p[2],
            "perm_exact": p[3], "perm_n_undefined": p[4],
        })
    return pd.DataFrame(rows, columns=list(WAE_COLUMNS))


def _conditional_pvalue(null: np.ndarray, observed: float, alternative: str, exact: bool) -> float:
    """Permutation p-value over the relabellings where the statistic is defined.

    scipy (behind :func:`radaudit.stats.permutation_test`) counts a NaN null value as "not as
    extreme", which makes the p-value too small when some relabellings leave a group without
    associated words. This is scipy's formula (same +1 adjustment unless exact, same 100·eps
    tie tolerance, two-sided = 2·min of the tails, capped at 1) restricted to the finite null
    values: the permutation distribution conditional on the statistic being defined. Equal to
    scipy's p-value when every null value is finite (tested).
    """
    d = null[np.isfinite(null)]
    if d.size == 0:
        return math.nan
    adj = 0 if exact else 1
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = (np.count_nonzero(d <= observed + gamma) + adj) / (d.size + adj)
    greater = (np.count_nonzero(d >= observed - gamma) + adj) / (d.size + adj)
    p = {"less": less, "greater": greater, "two-sided": 2 * min(less, greater)}[alternative]
    return float(min(max(p, 0.0), 1.0))


def _ci(estimate: float, reps: np.ndarray, jack: np.ndarray | None, method: str, confidence: float, n: int,
        name: str, max_failed: float) -> BootstrapResult | None:
    """The stats module's interval; None (CI reported as NaN) when the statistic is undefined or too many replicates fail."""
    if not math.isfinite(estimate):
        return None
    ok = np.isfinite(reps)
    if (~ok).sum() > max_failed * len(reps) or not ok.any():
        warnings.warn(f"{name}: {(~ok).sum()} of {len(reps)} bootstrap replicates are undefined (an empty association "
                      "set or no weight in the resample); its CI is reported as NaN", RuntimeWarning, stacklevel=3)
        return None
    return interval_from_replicates(estimate, reps, jack, method, confidence, n, name, max_failed)
