"""95% bootstrap intervals of ΔDIR and of WEAT's S and ES (Table 1, Table 2, Fig. 2c; issue 42).

The draws (:func:`radaudit.stats.resample_weights`, :func:`radaudit.stats.resample_indices`) and the intervals
(:func:`radaudit.stats.interval_from_replicates`) are the stats module's; this module only writes each statistic as
a function of a resample, evaluated for every replicate at once (one matrix product or one fancy index per block),
and its leave-one-unit-out jackknife for BCa. Nothing expensive is recomputed per replicate: the token counts of
each report and the WEAT association s(w, A, B) of each target word are computed once and resampled.

The other numbers of these tables already carry their intervals where they are computed: WAE and ΔWAE in
:mod:`radaudit.metrics.association` (reports resampled, shifted percentile; its item 6 says why not BCa), the
diversity metrics in :mod:`radaudit.metrics.diversity` (reports resampled, BCa), surface similarity in
:mod:`radaudit.audits.decoding_erasure.corpus` (report pairs, percentile).

Resampling units (what the paper's design implies)
--------------------------------------------------
**ΔDIR** (paper §3 "Our Metrics" (iv); :mod:`radaudit.metrics.dir`): the unit is the *report*, its reference and
its prediction together (paired: ΔDIR = DIR(pred) − DIR(ref) compares the two texts of the same studies, so a
resampled study brings both). Resampling is *stratified by group*: the paper's sample is balanced by sex by design
(N = 2,000, 50/50; our demo's held-out studies too), so every replicate keeps each group's number of reports, as
the Erasure counts' bootstrap does (:mod:`radaudit.audits.decoding_erasure.erasure`). An unstratified draw would
also move the group sizes, which the paper's plain token ratio N_M / N_F reads as a change in verbosity, and on a
small corpus it leaves a group without reports (DIR undefined). With the group sizes n_g held at the data's, DIR
is written through the group means t̄_g of tokens per report::

    DIR = c · t̄_num / t̄_den,   c = n_num / n_den  (the paper's plain token ratio; = N_num / N_den)
                               c = 1              (``per_report=True``: the ratio of mean report lengths)

which equals the estimate of :func:`radaudit.metrics.dir.delta_dir` on the data and on every stratified resample
(:func:`delta_dir_weighted`, with report weights w: t̄_g = Σ_g w_i t_i / Σ_g w_i; the bootstrap replicates are
computed in the estimate's own arithmetic, N_num / N_den). Interval: **BCa**, its
acceleration from the leave-one-report-out jackknife of the same form (the report's reference and prediction leave
together; t̄_g then averages the other n_g − 1 reports). ΔDIR is a smooth function of two pairs of means, which is
what BCa is built for. The percentile interval is used instead when a group has a single report (its
leave-one-out mean is undefined, so the jackknife cannot form the acceleration).

**WEAT S and ES** (Caliskan et al. 2017; :mod:`radaudit.metrics.weat`): the unit is the *target word*, resampled
within each target set (X and Y keep their sizes; the attribute sets A, B and the vectors are fixed). WEAT's own
inference is over the target words (its permutation test re-partitions X ∪ Y), and the bootstrap over target words
within each set is the usual interval for S and ES. The targets themselves are chosen from the corpus (the
``weat_k`` most sex-associated words by CAD's z, :func:`radaudit.metrics.weat.select_targets`); the interval is
conditional on that choice: it says how much S and ES depend on which of those words are in the sets, not how
the choice would vary with other reports. (A report-level bootstrap would re-select the targets in each replicate,
so a replicate's S would compare different word lists, not the same quantity.) With the set sizes held::

    S  = n_X · mean_X s − n_Y · mean_Y s      (= Σ_X s − Σ_Y s on the data and on every resample)
    ES = (mean_X s − mean_Y s) / std-dev_{X ∪ Y} s    (ddof as the estimate's: 0, as WEFE)

(:func:`weat_replicates`). Interval: **BCa** with the leave-one-target-word-out jackknife of the same forms; the
percentile interval when a set holds a single word (leaving it out empties the set).

In both, a replicate where the statistic is undefined (a zero denominator) is counted as failed; with more than
10% failed the interval is NaN (the cell reads ``"0.12 [n/a]"``), and when BCa's constants are undefined the stats
module falls back to the percentile interval; either is logged, and ``method`` says which interval was formed.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from radaudit.metrics.dir import default_tokens
from radaudit.stats import BootstrapError, interval_from_replicates, resample_indices, resample_weights

log = logging.getLogger(__name__)

__all__ = ["INTERVAL_KEYS", "delta_dir_interval", "delta_dir_weighted", "no_interval", "weat_interval",
           "weat_replicates"]

INTERVAL_KEYS: tuple[str, ...] = ("low", "high", "se", "method", "n_units", "n_bootstrap", "n_failed")
"""Keys of the dict :func:`delta_dir_interval` and :func:`weat_interval` return per statistic."""

MAX_FAILED = 0.1
"""The largest share of failed replicates an interval is formed from (the stats module's default)."""

_JACK_ROWS = 512  # leave-one-out weight rows per block (n × 512 floats)


def no_interval(n_units: int = 0, method: str | None = None, n_bootstrap: int = 0, n_failed: int = 0) -> dict[str, Any]:
    """The :data:`INTERVAL_KEYS` of a number without an interval (bounds NaN)."""
    return {"low": math.nan, "high": math.nan, "se": math.nan, "method": method, "n_units": int(n_units),
            "n_bootstrap": int(n_bootstrap), "n_failed": int(n_failed)}


def _interval(estimate: float, reps: np.ndarray, jack: np.ndarray | None, *, confidence: float, n_units: int,
              name: str) -> dict[str, Any]:
    """The stats module's interval of ``reps`` (BCa when ``jack`` is given, else percentile), as a dict; NaN bounds
    when the estimate is not finite or too many replicates failed (logged, not raised: a table cell reads n/a)."""
    method = "bca" if jack is not None else "percentile"
    if not math.isfinite(estimate):
        return no_interval(n_units, None)
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            r = interval_from_replicates(float(estimate), reps, jack, method, confidence, n_units, name, MAX_FAILED)
        except BootstrapError as err:
            log.info("%s: no interval (%s)", name, err)
            return no_interval(n_units, method, len(reps), int((~np.isfinite(reps)).sum()))
    for w in caught:  # BCa undefined -> percentile: said in the log and in the method column, not in the report
        log.info("%s: %s", name, w.message)
    return {"low": r.low, "high": r.high, "se": r.se, "method": r.method, "n_units": r.n_units,
            "n_bootstrap": r.n_bootstrap, "n_failed": r.n_failed}


# ----------------------------------------------------------------------------------------------
# ΔDIR


def delta_dir_weighted(t_ref: np.ndarray, t_pred: np.ndarray, is_num: np.ndarray, is_den: np.ndarray,
                       weights: np.ndarray, *, per_report: bool = False, hold_sizes: bool = False) -> np.ndarray:
    """ΔDIR = DIR(pred) − DIR(ref) of reports weighted by ``weights`` (module docstring; paper §3 (iv)).

    ``t_ref``, ``t_pred``: each report's tokens; ``is_num``, ``is_den``: its group (0/1 arrays); ``weights``: ``(n,)``
    or ``(b, n)``, how often each report is in a resample (all ones: the data; a bootstrap's counts; 0 for the
    report a jackknife leaves out). With ``T_g = Σ_g w_i t_i`` and ``m_g = Σ_g w_i``::

        DIR = T_num / T_den                                   the paper's token ratio (a stratified resample keeps
                                                              the group sizes, so this is its N_num / N_den)
        DIR = (T_num / m_num) / (T_den / m_den)               ``per_report``: the ratio of mean report lengths
        DIR = (n_num · T_num / m_num) / (n_den · T_den / m_den)   ``hold_sizes``: the token ratio with the group
                                                              sizes held at the data's n_g (the jackknife's form)

    The first two are :func:`radaudit.metrics.dir.delta_dir`'s own arithmetic, so a replicate equal to the estimate
    is equal to the last bit (BCa's bias constant counts ties). Returns one value per row (NaN/inf where a
    denominator is 0).
    """
    w = np.asarray(weights, dtype=float)
    num, den = np.asarray(is_num, dtype=float), np.asarray(is_den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        m_num, m_den = w @ num, w @ den

        def ratio(t: np.ndarray) -> np.ndarray:
            t = np.asarray(t, dtype=float)
            t_num, t_den = w @ (t * num), w @ (t * den)
            if per_report:
                return (t_num / m_num) / (t_den / m_den)
            if hold_sizes:
                return (num.sum() * (t_num / m_num)) / (den.sum() * (t_den / m_den))
            return t_num / t_den

        return ratio(t_pred) - ratio(t_ref)


def delta_dir_interval(references: Sequence[str], predictions: Sequence[str], groups: Sequence[Any], *,
                       numerator: Any, denominator: Any, estimate: float, per_report: bool = False,
                       n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                       tokenize: Callable[[str], Sequence[str]] | None = None) -> dict[str, Any]:
    """The 95% (``confidence``) bootstrap interval of ΔDIR: reports resampled within each group, BCa (module
    docstring). ``estimate``: :func:`radaudit.metrics.dir.delta_dir`'s ΔDIR of the same rows; rows of any other group
    are left out, as there. ``tokenize``: as there (default :func:`radaudit.metrics.dir.default_tokens`). Returns the
    :data:`INTERVAL_KEYS`; bounds NaN when ``n_bootstrap`` is 0, the estimate is NaN or too many replicates fail."""
    g = np.asarray(list(groups), dtype=object)
    keep = np.array([x == numerator or x == denominator for x in g], dtype=bool)
    is_num = np.array([x == numerator for x in g[keep]], dtype=float)
    is_den = 1.0 - is_num
    n = int(keep.sum())
    if not n_bootstrap or n < 2 or not math.isfinite(estimate) or is_num.sum() == 0 or is_den.sum() == 0:
        return no_interval(n)
    tok = tokenize or default_tokens
    refs = [r for r, k in zip(references, keep) if k]
    preds = [p for p, k in zip(predictions, keep) if k]
    t_ref = np.array([len(tok(t)) for t in refs], dtype=float)
    t_pred = np.array([len(tok(t)) for t in preds], dtype=float)

    def stat(w: np.ndarray, hold_sizes: bool = False) -> np.ndarray:
        return delta_dir_weighted(t_ref, t_pred, is_num, is_den, w, per_report=per_report, hold_sizes=hold_sizes)

    # stratified by group: each replicate keeps the number of reports of each group (module docstring)
    reps = np.concatenate([stat(W) for W in resample_weights(n, n_bootstrap, seed=seed, strata=is_num.astype(int))])
    jack = None
    if min(is_num.sum(), is_den.sum()) >= 2:  # a group of one report has no leave-one-out mean: percentile
        jack = np.concatenate([stat(1.0 - np.eye(n, dtype=float)[s:s + _JACK_ROWS], hold_sizes=True)
                               for s in range(0, n, _JACK_ROWS)])
    return _interval(float(estimate), reps, jack, confidence=confidence, n_units=n, name="ΔDIR")


# ----------------------------------------------------------------------------------------------
# WEAT


def weat_replicates(x: np.ndarray, y: np.ndarray, *, n_x: int, n_y: int, ddof: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """WEAT's S and ES (Caliskan et al. 2017; :mod:`radaudit.metrics.weat`) of resampled target sets, row by row.

    ``x``: ``(b, m_x)`` values s(w, A, B) of the X words of each resample (``y`` likewise), ``n_x``, ``n_y``: the
    data's set sizes, held (module docstring)::

        S  = n_X · mean(x) − n_Y · mean(y)
        ES = (mean(x) − mean(y)) / std-dev(x ∪ y, ddof)

    On the data (``m = n``) these are :func:`radaudit.metrics.weat.weat_from_vectors`' S and ES. Returns
    ``(S, ES)``, one value per row; ES is NaN where the pooled standard deviation is 0.
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    mx, my = x.mean(axis=1), y.mean(axis=1)
    sd = np.concatenate([x, y], axis=1).std(axis=1, ddof=ddof)
    with np.errstate(divide="ignore", invalid="ignore"):
        es = np.where(sd > 0, (mx - my) / np.where(sd > 0, sd, 1.0), np.nan)
    # full-size sets (the bootstrap): Σ x − Σ y, the estimate's own arithmetic; a jackknife set: its mean × n
    s = x.sum(axis=1) - y.sum(axis=1) if (x.shape[1], y.shape[1]) == (n_x, n_y) else n_x * mx - n_y * my
    return s, es


def weat_interval(s_x: np.ndarray, s_y: np.ndarray, *, statistic: float, effect_size: float, ddof: int = 0,
                  n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict[str, dict[str, Any]]:
    """The bootstrap intervals of WEAT's S and ES: target words resampled within X and within Y, BCa (module
    docstring). ``s_x``, ``s_y``: s(w, A, B) of each target word (:class:`radaudit.metrics.weat.WEATResult`'s);
    ``statistic``, ``effect_size``, ``ddof``: the estimate's. Returns ``{"S": {...}, "ES": {...}}``, each with the
    :data:`INTERVAL_KEYS` (bounds NaN when ``n_bootstrap`` is 0, the estimate is NaN or too many replicates fail)."""
    sx, sy = np.asarray(s_x, dtype=float).ravel(), np.asarray(s_y, dtype=float).ravel()
    n_x, n_y = len(sx), len(sy)
    n = n_x + n_y
    if not n_bootstrap or n_x < 1 or n_y < 1:
        return {"S": no_interval(n), "ES": no_interval(n)}
    pooled = np.concatenate([sx, sy])
    strata = np.repeat([0, 1], [n_x, n_y])  # stratum 0 = X (indices 0..n_x-1), 1 = Y: each block row is X's then Y's
    reps_s, reps_es = [], []
    for idx in resample_indices(n, n_bootstrap, seed=seed, strata=strata):
        v = pooled[idx]
        s, es = weat_replicates(v[:, :n_x], v[:, n_x:], n_x=n_x, n_y=n_y, ddof=ddof)
        reps_s.append(s)
        reps_es.append(es)
    jack_s = jack_es = None
    if min(n_x, n_y) >= 2:  # leaving out a set's only word empties it: percentile
        out = [weat_replicates(np.delete(sx, i), sy, n_x=n_x, n_y=n_y, ddof=ddof) for i in range(n_x)]
        out += [weat_replicates(sx, np.delete(sy, j), n_x=n_x, n_y=n_y, ddof=ddof) for j in range(n_y)]
        jack_s = np.array([s[0] for s, _ in out])
        jack_es = np.array([es[0] for _, es in out])
    return {"S": _interval(statistic, np.concatenate(reps_s), jack_s, confidence=confidence, n_units=n, name="WEAT S"),
            "ES": _interval(effect_size, np.concatenate(reps_es), jack_es, confidence=confidence, n_units=n,
                            name="WEAT ES")}
