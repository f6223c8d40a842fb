"""Agreement of a metric with radiologists: Kendall tau-b / Spearman rho against error counts and ratings (Table 2), pairwise
preference (Table 3), with case-bootstrap CIs."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.audits.atomic_facts.data import (
    INTER_RATER,
    MEAN_RATER,
    NEGATED_TARGETS,
    SPLIT_PARTS,
    SPLIT_SEED,
    TARGETS,
    ReaderStudy,
    select_cases,
    split_cases,
)
from radaudit.audits.atomic_facts.scores import METRIC_LABELS
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.base import metric_label
from radaudit.stats import (
    BootstrapWarning,
    benjamini_hochberg,
    bootstrap_pvalue,
    interval_from_replicates,
    resample_weights,
)
from radaudit.stats.ranks import (
    kendall_tau_columns,
    kendall_tau_replicates,
    spearman_rho_columns,
    spearman_rho_replicates,
)

log = logging.getLogger(__name__)

CI_METHODS: tuple[str, ...] = ("percentile", "bca")
"""Case-bootstrap interval methods of :func:`correlation_table` and :func:`preference_table`."""


# ----------------------------------------------------------------------------------------------
# correlation coefficients (vectorised: every metric x every target in one pass, by radaudit.stats.ranks)


def agreement_coefficients(x: np.ndarray, y: np.ndarray, *, kendall: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """Kendall τ-b and Spearman ρ of every column of ``x`` (n × m) with every column of ``y`` (n × t):
    :func:`radaudit.stats.kendall_tau_columns` and :func:`radaudit.stats.spearman_rho_columns` (the formulas
    are there; each equals scipy's coefficient per column up to float rounding). Both are NaN when a column is
    constant. Rows must be complete (no NaN). Returns two (m × t) arrays (τ is None with ``kendall=False``).
    """
    return (kendall_tau_columns(x, y) if kendall else None), spearman_rho_columns(x, y)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b of two equal-length sequences, by the column form of the tables
    (:func:`radaudit.stats.kendall_tau_columns`; :func:`radaudit.stats.kendall_tau` agrees up to float rounding)."""
    return float(kendall_tau_columns(np.c_[np.asarray(x, float)], np.c_[np.asarray(y, float)])[0, 0])


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ (average ranks) of two equal-length sequences, by the column form of the tables
    (:func:`radaudit.stats.spearman_rho_columns`; :func:`radaudit.stats.spearman_rho` agrees up to float rounding)."""
    return float(spearman_rho_columns(np.c_[np.asarray(x, float)], np.c_[np.asarray(y, float)])[0, 0])


def target_matrix(study: ReaderStudy) -> pd.DataFrame:
    """One row per candidate (the order of ``study.candidates``), one column per ``target@rater``
    and ``target@mean`` (mean over the radiologists who judged that candidate), oriented so that
    higher is better (error counts negated)."""
    j = study.judgements
    keys = study.candidates[["case_id", "candidate"]].reset_index(drop=True)
    cols: dict[str, np.ndarray] = {}
    for t in study.targets:
        wide = j.pivot_table(index=["case_id", "candidate"], columns="rater", values=t, aggfunc="mean")
        wide = keys.merge(wide.reset_index(), on=["case_id", "candidate"], how="left")
        sign = -1.0 if t in NEGATED_TARGETS else 1.0
        raters = [r for r in wide.columns if r not in ("case_id", "candidate")]
        for r in raters:
            cols[f"{t}@{r}"] = sign * wide[r].to_numpy(dtype=float)
        cols[f"{t}@{MEAN_RATER}"] = sign * wide[raters].mean(axis=1, skipna=True).to_numpy(dtype=float)
    out = pd.DataFrame(cols)
    if out.isna().any().any():
        bad = out.columns[out.isna().any()].tolist()
        raise RadauditError(f"reader study {study.name!r}: some candidates lack a judgement in {bad[:3]}; every "
                            "radiologist must judge every candidate (or restrict the study to complete cases).")
    return out


def _bootstrap_weights(case_ids: Sequence[Any], n_bootstrap: int, seed: int) -> tuple[np.ndarray, int]:
    """(B × n_rows) multiplicities of each row in B cluster-bootstrap resamples of the cases (a case
    keeps all its rows), and the number of cases: :func:`radaudit.stats.resample_weights` over the
    cases (sorted by their ids as strings), replicate b drawing ``rng.integers(0, U, U)``. With one
    case there is nothing to draw: every resample is that case."""
    codes, uniques = pd.factorize(pd.Series(list(case_ids)).astype(str), sort=True)
    n_units = len(uniques)
    if n_bootstrap and n_units >= 2:
        counts = np.concatenate(list(resample_weights(n_units, n_bootstrap, seed=seed, dtype=np.float32)))
    else:
        counts = np.ones((n_bootstrap, n_units), dtype=np.float32)
    return counts[:, codes], n_units


def _jackknife_weights(case_ids: Sequence[Any]) -> np.ndarray:
    """(U × n_rows) leave-one-case-out weights: row u is 1 everywhere but on the rows of case u
    (cases in sorted order, as :func:`_bootstrap_weights`). Fed to the same weighted statistics as
    the bootstrap resamples, they give the jackknife values behind the BCa acceleration."""
    codes, uniques = pd.factorize(pd.Series(list(case_ids)).astype(str), sort=True)
    return (codes[None, :] != np.arange(len(uniques))[:, None]).astype(np.float32)


def _interval(estimate: float, replicates: np.ndarray, confidence: float, n_units: int, name: str,
              jackknife: np.ndarray | None = None, method: str = "percentile") -> tuple[float, float, float, str]:
    """``(low, high, se, method used)``: the percentile or BCa bootstrap interval
    (:func:`radaudit.stats.interval_from_replicates`; BCa needs the leave-one-case-out
    ``jackknife`` values and falls back to the percentile interval where its constants are
    undefined, e.g. a jackknife sample with a constant variable), or NaNs when the statistic is
    undefined (a constant variable on the full data or on most resamples)."""
    r = np.asarray(replicates, dtype=float)
    if not math.isfinite(estimate) or np.isfinite(r).sum() < 2:
        return math.nan, math.nan, math.nan, ""
    jk = None if jackknife is None else np.asarray(jackknife, dtype=float)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BootstrapWarning)  # the fallback is reported in the table
            res = interval_from_replicates(float(estimate), r, jk, method, confidence, n_units, name, max_failed=0.5)
    except RadauditError:
        return math.nan, math.nan, math.nan, ""
    return res.low, res.high, res.se, res.method


def _check_ci_method(ci_method: str) -> None:
    if ci_method not in CI_METHODS:
        raise ParamsError(f"ci_method must be one of {list(CI_METHODS)}, got {ci_method!r}.")


def _coefficients(x: np.ndarray, y: np.ndarray, case_ids: Sequence[Any], n_bootstrap: int, seed: int,
                  diagonal: bool = False,
                  jackknife: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """{"kendall"/"spearman": (estimate, replicates, jackknife values or None)} with shared
    cluster-bootstrap resamples (and leave-one-case-out samples when ``jackknife``)."""
    w, _ = _bootstrap_weights(case_ids, n_bootstrap, seed)
    jw = _jackknife_weights(case_ids) if jackknife else None
    ones = np.ones((1, len(x)), dtype=np.float32)
    with np.errstate(all="ignore"):
        return {"kendall": (kendall_tau_replicates(x, y, ones, diagonal=diagonal)[0],
                            kendall_tau_replicates(x, y, w, diagonal=diagonal),
                            None if jw is None else kendall_tau_replicates(x, y, jw, diagonal=diagonal)),
                "spearman": (spearman_rho_replicates(x, y, ones, diagonal=diagonal)[0],
                             spearman_rho_replicates(x, y, w, diagonal=diagonal),
                             None if jw is None else spearman_rho_replicates(x, y, jw, diagonal=diagonal))}


def correlation_table(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                      reference: str = "atomimed", n_bootstrap: int = 1000, confidence: float = 0.95,
                      seed: int = 0, ci_method: Literal["percentile", "bca"] = "percentile") -> pd.DataFrame:
    """Table 2 analog in long form: Kendall τ-b and Spearman ρ of each metric with each radiologist
    judgement (module docstring: orientation, CIs), per radiologist, on their mean, and the
    inter-rater ceiling.

    ``scores``: :attr:`MetricScores.scores` (rows aligned with ``study.candidates``). Columns of the
    result: ``metric``, ``label``, ``target``, ``rater`` (a rater id, ``"mean"`` or
    ``"inter-rater"``), ``coefficient`` (``kendall``/``spearman``), ``estimate``, ``low``, ``high``,
    ``se``, ``n_candidates``, ``n_cases``, ``n_undefined`` (candidates without a score), and — for
    every other metric on the mean of the radiologists — ``diff_vs_reference`` (``reference``'s
    coefficient minus this metric's), ``diff_low``/``diff_high``, the bootstrap ``diff_p`` and its
    Benjamini–Hochberg adjustment ``diff_p_bh`` (per target and coefficient); ``ci_method``: the
    interval method actually used (``ci_method="bca"`` adds leave-one-case-out jackknife samples
    for the BCa acceleration and falls back to ``"percentile"`` cell by cell where BCa is undefined).
    """
    _check_ci_method(ci_method)
    jack = ci_method == "bca"

    metrics = list(metrics or [c for c in scores.columns if c not in ("case_id", "candidate", "system")])
    if not metrics:
        raise ParamsError("no metric to correlate: scores has no metric column.")
    unknown = [m for m in metrics if m not in scores.columns]
    if unknown:
        raise ParamsError(f"metric(s) {unknown} are not columns of scores ({list(scores.columns)}).")
    if len(scores) != len(study.candidates) or not (
            scores["case_id"].astype(str).to_numpy() == study.candidates["case_id"].astype(str).to_numpy()).all():
        raise RadauditError(
            "scores are not aligned with study.candidates (same rows, same order): score the study's candidates.")
    Y = target_matrix(study)
    tcols = list(Y.columns)
    X = scores[metrics].to_numpy(dtype=float)
    case_ids = study.candidates["case_id"].to_numpy()
    n_units = study.candidates["case_id"].nunique()
    if n_units < 2:
        raise RadauditError(f"reader study {study.name!r} has {n_units} case; correlations and their CIs need at least 2.")
    res = _coefficients(X, Y.to_numpy(dtype=float), case_ids, n_bootstrap, seed, jackknife=jack)
    # inter-rater ceiling: each rater's column vs the mean of the other raters, per target
    raters = study.raters
    ceil_x, ceil_y, ceil_t = [], [], []
    if len(raters) >= 2:
        for t in study.targets:
            for r in raters:
                ceil_x.append(Y[f"{t}@{r}"].to_numpy())
                ceil_y.append(Y[[f"{t}@{o}" for o in raters if o != r]].mean(axis=1).to_numpy())
                ceil_t.append(t)
    ceil = (_coefficients(np.c_[tuple(ceil_x)], np.c_[tuple(ceil_y)], case_ids, n_bootstrap, seed, diagonal=True,
                          jackknife=jack) if ceil_x else {})

    n_cand = np.isfinite(X).sum(0)
    ref_j = metrics.index(reference) if reference in metrics else None
    rows_out = []
    nan4 = dict.fromkeys(("diff_vs_reference", "diff_low", "diff_high", "diff_p"), math.nan)
    for coef in ("kendall", "spearman"):
        est, reps, jk = res[coef]
        for j, m in enumerate(metrics):
            for c, col in enumerate(tcols):
                t, rater = col.split("@", 1)
                e = float(est[j, c])
                low, high, se, used = _interval(e, reps[:, j, c], confidence, n_units, f"{m}/{col}/{coef}",
                                                None if jk is None else jk[:, j, c], ci_method)
                row = {"metric": m, "label": metric_label(m, METRIC_LABELS), "target": t, "rater": rater,
                       "coefficient": coef, "estimate": e, "low": low, "high": high, "se": se,
                       "n_candidates": int(n_cand[j]), "n_cases": n_units, "n_undefined": int(len(X) - n_cand[j]),
                       **nan4, "ci_method": used}
                if ref_j is not None and j != ref_j and rater == MEAN_RATER:
                    d = reps[:, ref_j, c] - reps[:, j, c]
                    de = float(est[ref_j, c] - e)
                    dl, dh, _, _ = _interval(de, d, confidence, n_units, f"{reference}-{m}",
                                             None if jk is None else jk[:, ref_j, c] - jk[:, j, c], ci_method)
                    row.update(diff_vs_reference=de, diff_low=dl, diff_high=dh, diff_p=bootstrap_pvalue(d))
                rows_out.append(row)
        if ceil:
            cest, creps, cjk = ceil[coef]
            for t in study.targets:
                idx = [i for i, tt in enumerate(ceil_t) if tt == t]
                e = float(np.mean(cest[idx]))
                low, high, se, used = _interval(e, creps[:, idx].mean(1), confidence, n_units, f"inter-rater/{t}/{coef}",
                                                None if cjk is None else cjk[:, idx].mean(1), ci_method)
                rows_out.append({"metric": INTER_RATER, "label": "Radiologist vs the others (ceiling)", "target": t,
                                 "rater": INTER_RATER, "coefficient": coef, "estimate": e, "low": low, "high": high,
                                 "se": se, "n_candidates": len(Y), "n_cases": n_units, "n_undefined": 0, **nan4,
                                 "ci_method": used})
    out = pd.DataFrame(rows_out)
    out["diff_p_bh"] = math.nan
    for _, g in out[out["diff_p"].notna()].groupby(["target", "coefficient"]):
        _, q = benjamini_hochberg(g["diff_p"].to_numpy())
        out.loc[g.index, "diff_p_bh"] = q
    return out


# ----------------------------------------------------------------------------------------------
# pairwise preference (Table 3 analog)


def human_preference(judgements: pd.DataFrame, source: str = "rating", rater: Any = None) -> pd.DataFrame:
    """Human preference entries: one row per case and ordered pair of distinct candidates (a, b),
    ``human`` = share of radiologists who prefer a to b (higher ``rating``, or fewer errors when
    ``source`` is an error count), ties counting ½. ``rater``: one radiologist only (None = all)."""
    if source not in TARGETS:
        raise ParamsError(f"preference source {source!r} is not one of {list(TARGETS)}.")
    j = judgements if rater is None else judgements[judgements["rater"] == rater]
    if j.empty:
        raise RadauditError(f"no judgements{'' if rater is None else f' by rater {rater!r}'} to derive preferences from.")
    if j[source].isna().all():
        raise ParamsError(f"the judgements have no {source!r} values (ReXVal has no ratings: use total_errors).")
    sign = -1.0 if source in NEGATED_TARGETS else 1.0
    # one pivot for every case (rows: case x rater, columns: every candidate), then each case's block in numpy: a
    # pivot per case was most of the cell's time (1,050 cases); the candidates of a case are the columns it rated
    wide = j.pivot_table(index=["case_id", "rater"], columns="candidate", values=source, aggfunc="mean") * sign
    values, names = wide.to_numpy(dtype=float), list(wide.columns)
    blocks = wide.groupby(level="case_id", sort=False).indices
    rows = []
    for case in pd.unique(j["case_id"]):
        if case not in blocks:
            continue
        block = values[blocks[case]]
        cands = np.flatnonzero(~np.isnan(block).all(axis=0))  # sorted, as a pivot of the case alone orders them
        for ia in cands:
            for ib in cands:
                if ia == ib:
                    continue
                d = block[:, ia] - block[:, ib]
                d = d[~np.isnan(d)]
                if d.size == 0:
                    continue
                share = float(((d > 0) + 0.5 * (d == 0)).mean())
                rows.append({"case_id": case, "a": names[ia], "b": names[ib], "human": share, "n_raters": int(d.size)})
    return pd.DataFrame(rows, columns=["case_id", "a", "b", "human", "n_raters"])


def metric_preference(scores: pd.DataFrame, metric: str, pairs: pd.DataFrame, tie_tolerance: float = 1e-9) -> np.ndarray:
    """For each (case_id, a, b) row of ``pairs``: 1 if the metric scores a above b, ½ if within
    ``tie_tolerance``, 0 below; NaN when either score is missing."""
    s = scores.set_index(["case_id", "candidate"])[metric]
    sa = s.reindex(list(zip(pairs["case_id"], pairs["a"]))).to_numpy(dtype=float)
    sb = s.reindex(list(zip(pairs["case_id"], pairs["b"]))).to_numpy(dtype=float)
    d = sa - sb
    out = np.where(d > tie_tolerance, 1.0, np.where(d < -tie_tolerance, 0.0, 0.5))
    out[~np.isfinite(d)] = np.nan
    return out


def preference_agreement(metric: Sequence[float], human: Sequence[float]) -> dict[str, float]:
    """ACC, MAE and Kendall τ-b between metric-induced and human preference entries (module docstring).

    ``acc`` = mean over entries with human ≠ ½ of [1 if the metric orders the pair as the humans,
    ½ if the metric ties, 0 otherwise]; ``mae`` = mean |metric − human|; ``tau`` = τ-b between the
    entries. NaN entries are left out; ``n_strict`` counts the entries behind ``acc``.
    """
    m = np.asarray(metric, dtype=float)
    h = np.asarray(human, dtype=float)
    if m.shape != h.shape or m.ndim != 1:
        raise ValueError(f"metric and human preferences must be 1-D and aligned, got {m.shape} and {h.shape}")
    if ((h < 0) | (h > 1)).any() or ((m < 0) | (m > 1)).any():
        raise ValueError("preference entries must lie in [0, 1] (share preferring a over b)")
    ok = np.isfinite(m) & np.isfinite(h)
    m, h = m[ok], h[ok]
    strict = h != 0.5
    if strict.any():
        hs, ms = h[strict] > 0.5, m[strict]
        acc = float(np.mean(np.where(ms == 0.5, 0.5, ((ms > 0.5) == hs).astype(float))))
    else:
        acc = math.nan
    mae = float(np.mean(np.abs(m - h))) if m.size else math.nan
    tau = kendall_tau_b(m, h) if m.size >= 2 else math.nan
    return {"acc": acc, "mae": mae, "tau": tau, "n_entries": int(m.size), "n_strict": int(strict.sum())}


def _pref_stats(m: np.ndarray, h: np.ndarray, w: np.ndarray, diagonal: bool = False) -> dict[str, np.ndarray]:
    """ACC, MAE and τ (:func:`preference_agreement`) of metric entries ``m`` (E × k; NaN allowed)
    against human entries ``h`` (E × r; complete) on the resamples ``w`` (B × E): arrays (B, k, r),
    or (B, k) when ``diagonal``."""
    valid = np.isfinite(m)
    mm = np.where(valid, m, 0.5)
    if diagonal:
        hh = h
        agree = np.where(mm == 0.5, 0.5, ((mm > 0.5) == (hh > 0.5)).astype(float))
        strict = (hh != 0.5) & valid
        err = np.abs(mm - hh) * valid
        num_acc, den_acc = w @ (agree * strict), w @ strict
        num_mae, den_mae = w @ err, w @ valid
    else:
        agree = np.where(mm[:, :, None] == 0.5, 0.5, ((mm[:, :, None] > 0.5) == (h[:, None, :] > 0.5)).astype(float))
        strict = (h[:, None, :] != 0.5) & valid[:, :, None]
        err = np.abs(mm[:, :, None] - h[:, None, :]) * valid[:, :, None]
        k, r = m.shape[1], h.shape[1]
        flat = lambda a: a.reshape(len(a), k * r).astype(np.float32)  # noqa: E731
        num_acc, den_acc = (w @ flat(agree * strict)).reshape(-1, k, r), (w @ flat(strict)).reshape(-1, k, r)
        num_mae = (w @ flat(err)).reshape(-1, k, r)
        den_mae = np.repeat((w @ valid.astype(np.float32))[:, :, None], r, axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"acc": num_acc / den_acc, "mae": num_mae / den_mae,
                "tau": kendall_tau_replicates(m, h, w, diagonal=diagonal)}


def preference_table(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                     source: str = "rating", tie_tolerance: float = 1e-9, n_bootstrap: int = 1000,
                     confidence: float = 0.95, seed: int = 0,
                     ci_method: Literal["percentile", "bca"] = "percentile") -> pd.DataFrame:
    """Table 3 analog in long form: ACC, MAE and τ (:func:`preference_agreement`) of each metric's
    preferences against the radiologists' consensus (``rater="mean"``: vote shares) and each
    radiologist alone, plus the inter-rater ceiling (each radiologist against the consensus of the
    others, entries pooled over radiologists). Percentile (or, ``ci_method="bca"``, BCa) bootstrap
    CIs over cases. Columns: ``metric``, ``label``, ``rater``, ``statistic`` (acc/mae/tau),
    ``estimate``, ``low``, ``high``, ``n_cases``, ``n_entries`` (ordered candidate pairs),
    ``n_strict_pairs`` (unordered candidate pairs on which the human side is not a tie: the pairs
    behind ACC), ``ci_method`` (the interval method used, as in :func:`correlation_table`)."""
    _check_ci_method(ci_method)
    metrics = list(metrics or [c for c in scores.columns if c not in ("case_id", "candidate", "system")])
    unknown = [m for m in metrics if m not in scores.columns]
    if unknown:
        raise ParamsError(f"metric(s) {unknown} are not columns of scores ({list(scores.columns)}).")
    consensus = human_preference(study.judgements, source)
    if consensus.empty:
        raise RadauditError("no case has two judged candidates to compare.")
    keys = consensus[["case_id", "a", "b"]]
    humans: dict[str, np.ndarray] = {MEAN_RATER: consensus["human"].to_numpy(dtype=float)}
    for r in study.raters:
        hr = human_preference(study.judgements, source, rater=r)
        humans[str(r)] = keys.merge(hr, on=["case_id", "a", "b"], how="left")["human"].to_numpy(dtype=float)
    H = np.c_[tuple(humans.values())]
    if np.isnan(H).any():
        raise RadauditError("some radiologist did not judge every candidate pair; restrict the study to complete cases.")
    M = np.c_[tuple(metric_preference(scores, m, keys, tie_tolerance) for m in metrics)]
    w, n_units = _bootstrap_weights(keys["case_id"], n_bootstrap, seed)
    jw = _jackknife_weights(keys["case_id"]) if ci_method == "bca" else None
    ones = np.ones((1, len(keys)), dtype=np.float32)
    est, reps = _pref_stats(M, H, ones), _pref_stats(M, H, w)
    jk = None if jw is None else _pref_stats(M, H, jw)
    rater_names = list(humans)
    strict_n = ((H[:, None, :] != 0.5) & np.isfinite(M)[:, :, None]).sum(0)
    out = []
    for j, m in enumerate(metrics):
        for c, r in enumerate(rater_names):
            for s in ("acc", "mae", "tau"):
                e = float(est[s][0, j, c])
                low, high, _, used = _interval(e, reps[s][:, j, c], confidence, n_units, f"{m}/{r}/{s}",
                                               None if jk is None else jk[s][:, j, c], ci_method)
                out.append({"metric": m, "label": metric_label(m, METRIC_LABELS), "rater": r, "statistic": s, "estimate": e,
                            "low": low, "high": high, "n_cases": n_units, "n_entries": int(np.isfinite(M[:, j]).sum()),
                            "n_strict_pairs": int(strict_n[j, c]) // 2, "ci_method": used})
    raters = study.raters
    if len(raters) >= 2:  # ceiling: rater r vs the consensus of the others, entries pooled over raters
        own, oth = [], []
        for r in raters:
            others = human_preference(study.judgements[study.judgements["rater"] != r], source)
            own.append(humans[str(r)])
            oth.append(keys.merge(others, on=["case_id", "a", "b"], how="left")["human"].to_numpy(dtype=float))
        co, ch = np.concatenate(own)[:, None], np.concatenate(oth)[:, None]
        cw, cones = np.tile(w, len(raters)), np.tile(ones, len(raters))
        cest, creps = _pref_stats(co, ch, cones, diagonal=True), _pref_stats(co, ch, cw, diagonal=True)
        cjk = None if jw is None else _pref_stats(co, ch, np.tile(jw, len(raters)), diagonal=True)
        for s in ("acc", "mae", "tau"):
            e = float(cest[s][0, 0])
            low, high, _, used = _interval(e, creps[s][:, 0], confidence, n_units, f"inter-rater/{s}",
                                           None if cjk is None else cjk[s][:, 0], ci_method)
            out.append({"metric": INTER_RATER, "label": "Radiologist vs the others (ceiling)", "rater": INTER_RATER,
                        "statistic": s, "estimate": e, "low": low, "high": high, "n_cases": n_units,
                        "n_entries": len(co), "n_strict_pairs": int((ch[:, 0] != 0.5).sum()) // 2, "ci_method": used})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------------------------
# agreement per half of the cases (issue 18: out of sample)


def agreement_by_split(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                       parts: Sequence[str] | Mapping[str, Iterable[Any]] = SPLIT_PARTS, split_seed: int = SPLIT_SEED,
                       assignment: Mapping[str, str] | None = None, reference: str = "atomimed",
                       source: str = "rating", tie_tolerance: float = 1e-9, n_bootstrap: int = 1000,
                       confidence: float = 0.95, seed: int = 0,
                       ci_method: Literal["percentile", "bca"] = "percentile") -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`correlation_table` and :func:`preference_table` on each part of the cases, stacked
    with a first column ``split``.

    ``parts``: names among :data:`SPLIT_PARTS` (``all``, and the ``dev``/``test`` halves of
    :func:`split_cases` of the study's case ids with ``split_seed``, or of ``assignment`` when the
    study is already a subset of the one the split was drawn on), or a mapping ``{name: case ids}``
    for any other subsets. ``scores`` is aligned with ``study.candidates`` (as
    :func:`correlation_table` requires); each part restricts both the same way. Every part uses
    the same bootstrap ``seed``; resampling is over that part's cases.
    """
    if len(scores) != len(study.candidates) or not (
            scores["case_id"].astype(str).to_numpy() == study.candidates["case_id"].astype(str).to_numpy()).all():
        raise RadauditError(
            "scores are not aligned with study.candidates (same rows, same order): score the study's candidates.")
    if isinstance(parts, Mapping):
        chosen = {str(k): {str(c) for c in v} for k, v in parts.items()}
    else:
        bad = [p for p in parts if p not in SPLIT_PARTS]
        if bad:
            raise ParamsError(f"unknown split part(s) {bad}; choose from {list(SPLIT_PARTS)} or pass {{name: case ids}}.")
        split = dict(assignment) if assignment is not None else split_cases(study.candidates["case_id"], split_seed)
        every = set(study.candidates["case_id"].astype(str))
        chosen = {p: (every if p == "all" else {c for c, h in split.items() if h == p} & every) for p in parts}
    corr_parts, pref_parts = [], []
    case_col = scores["case_id"].astype(str)
    for name, ids in chosen.items():
        sub = select_cases(study, ids, f"{study.name}/{name}")
        sub_scores = scores[case_col.isin(ids)].reset_index(drop=True)
        kw = dict(n_bootstrap=n_bootstrap, confidence=confidence, seed=seed, ci_method=ci_method)
        corr = correlation_table(sub_scores, sub, metrics, reference=reference, **kw)
        pref = preference_table(sub_scores, sub, metrics, source=source, tie_tolerance=tie_tolerance, **kw)
        corr_parts.append(corr.assign(split=name))
        pref_parts.append(pref.assign(split=name))
    corr_all, pref_all = pd.concat(corr_parts, ignore_index=True), pd.concat(pref_parts, ignore_index=True)
    return (corr_all[["split", *[c for c in corr_all.columns if c != "split"]]],
            pref_all[["split", *[c for c in pref_all.columns if c != "split"]]])
