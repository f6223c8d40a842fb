"""The paper's measures on the per-pair scores: Discriminative/Robustness Scores (Tables 4-5), AUROC of harmful vs
harmless rewrites, monotonicity (Fig. 4); the score table's columns and the metrics' display names.

The scores themselves are made by :func:`radaudit.audits.metric_metaeval.study.score_pairs` (the scoring step)."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.base import metric_label as registry_label
from radaudit.perturb.base import HIGH_IMPACT_ASPECTS
from radaudit.stats import (
    auroc_replicates,
    auroc_two_sample,
    benjamini_hochberg,
    bootstrap_ci,
    kendall_test,
    stable_seed,
)
from radaudit.stats import kendall_tau as _kendall_tau_b

log = logging.getLogger(__name__)


#: Scores are shown x 100 (the paper's tables); a metric with another range is divided by its maximum first.
METRIC_RANGES: dict[str, float] = {"cider": 10.0}
#: Display names that differ from the registry's labels (:func:`radaudit.metrics.base.metric_label`).
METRIC_LABELS: dict[str, str] = {"cider": "CIDEr-D (÷10)"}
#: Table 4/5 error-type codes (the paper's E/F/O; S = error types sampled, pooled).
ERROR_CODES: dict[str, str] = {"inaccuracy": "E", "fabrication": "F", "omission": "O"}
#: Short aspect names of Tables 4/5.
ASPECT_SHORT: dict[str, str] = {
    "comparison": "Comparison/Progression", "contradiction": "Cont.", "description": "Description",
    "location": "Location", "modality": "Mod.", "negation": "Neg.", "noise": "Noise", "severity": "Severity",
    "size_distance": "S/D", "stylistic": "S/V", "uncertainty": "Unc.", "terminology": "Term.",
}
#: Column order of Tables 4 and 5 (the paper's: alphabetical by aspect label).
TABLE_ASPECT_ORDER: tuple[str, ...] = ("comparison", "contradiction", "description", "location", "modality", "negation",
                                       "noise", "severity", "size_distance", "stylistic", "uncertainty", "terminology")
#: Columns of the per-pair score table.
SCORE_COLUMNS: tuple[str, ...] = ("pair_id", "study_id", "source", "aspect", "error_type", "significance", "rule",
                                  "group", "metric", "score", "score_100", "higher_is_better")
#: How a Table 4/5 cell averages its pairs: over the rewriting rules (each rule weighs the same) or over pairs (paper).
CELL_AVERAGES: tuple[str, ...] = ("rules", "pairs")
#: CI of the Overall column: the paper's (mean ± 1.96·SD/√k over the k column means) or a bootstrap over pairs.
OVERALL_CIS: tuple[str, ...] = ("paper", "bootstrap")
#: The CI method as the tables name it.
CI_LABELS: dict[str, str] = {"paper": "paper: mean ± 1.96·SD/√k over the k column means",
                             "bootstrap": "percentile bootstrap over pairs"}


# ----------------------------------------------------------------------------------------------
# display names


def metric_label(name: str) -> str:
    """Display name: the registry's label, or this experiment's wording in :data:`METRIC_LABELS`."""
    return registry_label(name, METRIC_LABELS)


# ----------------------------------------------------------------------------------------------
# Discriminative / Robustness Score (Tables 4, 5; Figure 2)


def column_key(aspect: str, error_type: str) -> str:
    """Table 4/5 column of a pair: ``"Location E"`` for the high-impact aspects, ``"Neg. S"`` for the others."""
    if aspect not in ASPECT_SHORT:
        raise ParamsError(f"unknown aspect {aspect!r}; allowed: {', '.join(ASPECT_SHORT)}")
    if aspect in HIGH_IMPACT_ASPECTS:
        if error_type not in ERROR_CODES:
            raise ParamsError(f"error type {error_type!r} of a {aspect} pair; allowed: {', '.join(ERROR_CODES)}")
        return f"{ASPECT_SHORT[aspect]} {ERROR_CODES[error_type]}"
    return f"{ASPECT_SHORT[aspect]} S"


def table_columns() -> list[str]:
    """Every Table 4/5 score column in the paper's order (20), then ``Overall``."""
    cols = []
    for a in TABLE_ASPECT_ORDER:
        if a in HIGH_IMPACT_ASPECTS:
            cols += [f"{ASPECT_SHORT[a]} {c}" for c in ("E", "F", "O")]
        else:
            cols.append(f"{ASPECT_SHORT[a]} S")
    return [*cols, "Overall"]


def _cell_mean(values: np.ndarray, rules: np.ndarray | None = None) -> float:
    """Mean of the finite ``values``; with ``rules``, the mean over rules of each rule's mean (each
    rewriting rule weighs the same, however many pairs it made)."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if not ok.any():
        return math.nan
    if rules is None:
        return float(v[ok].mean())
    r = np.asarray(rules)[ok]
    return float(np.mean([v[ok][r == k].mean() for k in np.unique(r)]))


def _group_means(values: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Per resample (row of ``values``, resamples × pairs), the mean value of each key 0..n_keys-1
    (resamples × n_keys; NaN where a resample holds no pair of that key)."""
    b = values.shape[0]
    flat = (np.arange(b)[:, None] * n_keys + keys).ravel()
    sums = np.bincount(flat, weights=values.ravel(), minlength=b * n_keys).reshape(b, n_keys)
    counts = np.bincount(flat, minlength=b * n_keys).reshape(b, n_keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def _cell_mean_resamples(values: np.ndarray, rules: np.ndarray | None = None) -> np.ndarray:
    """:func:`_cell_mean` of every resample at once (``bootstrap_ci(vectorized=True)``): ``values`` and
    ``rules`` (integer codes) are resamples × pairs matrices of finite values."""
    if rules is None:
        return values.mean(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(_group_means(values, rules, int(rules.max()) + 1), axis=1)


def _overall_resamples(values: np.ndarray, columns: np.ndarray, rules: np.ndarray | None = None) -> np.ndarray:
    """:func:`_overall_of_columns` of every resample at once: the mean over the columns present of each
    column's cell mean (over its rules when ``rules`` is given). Integer codes for columns and rules."""
    n_col = int(columns.max()) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column or rule absent from a resample: NaN, skipped
        if rules is None:
            per_column = _group_means(values, columns, n_col)
        else:
            n_rule = int(rules.max()) + 1
            per_rule = _group_means(values, columns * n_rule + rules, n_col * n_rule)
            per_column = np.nanmean(per_rule.reshape(len(values), n_col, n_rule), axis=2)
        return np.nanmean(per_column, axis=1)


def _codes(labels: np.ndarray) -> np.ndarray:
    return pd.factorize(np.asarray(labels, dtype=object).astype(str), sort=True)[0]


def _mean_ci(values: np.ndarray, rules: np.ndarray | None = None, *, n_bootstrap: int, confidence: float,
             seed: int) -> tuple[float, float, float]:
    """:func:`_cell_mean` and its percentile bootstrap CI over pairs (NaN bounds with fewer than 2 values).

    Percentile, not BCa: a cell holds about 10 pairs whose scores are often tied (label F1 is 0 or 1),
    where BCa's jackknife acceleration is unstable."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if not ok.any():
        return math.nan, math.nan, math.nan
    v = v[ok]
    r = None if rules is None else np.asarray(rules, dtype=object)[ok].astype(str)
    est = _cell_mean(v, r)
    if v.size < 2 or np.ptp(v) == 0:
        return est, (est if v.size >= 2 else math.nan), (est if v.size >= 2 else math.nan)
    data = (v, _codes(r)) if r is not None else (v,)
    ci = bootstrap_ci(data, _cell_mean_resamples, n_bootstrap=n_bootstrap, confidence=confidence, method="percentile",
                      seed=seed, vectorized=True)
    return est, ci.low, ci.high


def paper_overall_ci(column_means: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """The paper's Overall and its CI: ``mean ± z·SD/√k`` over the k defined column means (z = 1.96 at
    95%; SD with ddof = 1). It treats the columns as the sample, so it says how much the Overall would
    move with other aspects, not with other pairs; with k < 2 the bounds are NaN."""
    m = np.asarray(column_means, dtype=float)
    m = m[np.isfinite(m)]
    if m.size == 0:
        return math.nan, math.nan, math.nan
    est = float(m.mean())
    if m.size < 2:
        return est, math.nan, math.nan
    half = float(sps.norm.ppf(0.5 + confidence / 2) * m.std(ddof=1) / math.sqrt(m.size))
    return est, est - half, est + half


def _overall_of_columns(values: np.ndarray, columns: np.ndarray, rules: np.ndarray | None) -> float:
    """Overall = the mean over columns of each column's :func:`_cell_mean` (columns present in the sample)."""
    per = [_cell_mean(values[columns == c], None if rules is None else rules[columns == c]) for c in np.unique(columns)]
    per = [p for p in per if np.isfinite(p)]
    return float(np.mean(per)) if per else math.nan


def ds_rs_long(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
               cell_average: str = "rules", overall_ci: str = "bootstrap") -> pd.DataFrame:
    """DS (significant pairs) and RS (insignificant pairs) per metric x Table 4/5 column, and Overall.

    One row per metric x significance x column: ``score`` = ``"DS"``/``"RS"``, ``estimate``, ``low``/``high``,
    ``n`` (defined pairs), ``n_undefined``, ``n_rules`` (rewriting rules among the cell's pairs),
    ``ci_method``.

    - A cell's estimate (``cell_average="rules"``, the default) is the mean over its rewriting rules of
      each rule's mean ``score_100``, so a rule that happened to make more pairs does not dominate; the
      paper's is the mean over pairs (``cell_average="pairs"``; equal when every rule made as many
      pairs). Its CI is a percentile bootstrap over the cell's pairs (:func:`_mean_ci`).
    - ``Overall`` is the mean of the column estimates (the paper's: its CI is over the 20 column means).
      ``overall_ci="paper"``: mean ± 1.96·SD/√k over the k columns (:func:`paper_overall_ci`);
      ``"bootstrap"``: a percentile bootstrap over the pairs of that significance, each replicate
      recomputing every column. The two answer different questions (other aspects vs other pairs);
      the bootstrap one is usually about half as wide. ``ci_method`` says which a row carries.
    """
    need = {"metric", "aspect", "error_type", "significance", "score_100"}
    if not need <= set(scores.columns):
        raise DataFormatError(f"scores needs columns {sorted(need)} (from score_pairs).")
    if cell_average not in CELL_AVERAGES:
        raise ParamsError(f"cell_average={cell_average!r}: use one of {', '.join(CELL_AVERAGES)}.")
    if overall_ci not in OVERALL_CIS:
        raise ParamsError(f"overall_ci={overall_ci!r}: use one of {', '.join(OVERALL_CIS)}.")
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    if df.empty:
        raise DataFormatError("no discrimination/robustness pairs in scores (all rows are monotonicity pairs).")
    bad = sorted(set(df["significance"]) - {"significant", "insignificant"})
    if bad:
        raise DataFormatError(f"unknown significance values {bad}; expected significant / insignificant.")
    by_rule = cell_average == "rules" and "rule" in df.columns and df["rule"].notna().all()
    df = df.assign(column=[column_key(a, e) for a, e in zip(df["aspect"], df["error_type"])])
    rows = []
    for (metric, sig), part in df.groupby(["metric", "significance"], sort=False):
        base = {"metric": metric, "label": metric_label(metric), "score": "DS" if sig == "significant" else "RS",
                "significance": sig}
        col_est = []
        for col, g in part.groupby("column", sort=False):
            vals = g["score_100"].to_numpy(float)
            rules = g["rule"].astype(str).to_numpy() if by_rule else None
            est, lo, hi = _mean_ci(vals, rules, n_bootstrap=n_bootstrap, confidence=confidence,
                                   seed=stable_seed(seed, "dsrs", metric, sig, col))
            col_est.append(est)
            rows.append({**base, "column": col, "estimate": est, "low": lo, "high": hi, "n": int(np.isfinite(vals).sum()),
                         "n_undefined": int((~np.isfinite(vals)).sum()),
                         "n_rules": int(g.loc[np.isfinite(vals), "rule"].nunique()) if "rule" in g.columns else 0,
                         "ci_method": CI_LABELS["bootstrap"]})
        vals = part["score_100"].to_numpy(float)
        ok = np.isfinite(vals)
        if overall_ci == "paper":
            est, lo, hi = paper_overall_ci(col_est, confidence)
        else:
            cols = part["column"].to_numpy()[ok]
            rules = part["rule"].astype(str).to_numpy()[ok] if by_rule else None
            est = _overall_of_columns(vals[ok], cols, rules)
            lo = hi = math.nan
            if ok.sum() >= 2 and np.ptp(vals[ok]) > 0:
                data = (vals[ok], _codes(cols)) if rules is None else (vals[ok], _codes(cols), _codes(rules))
                ci = bootstrap_ci(data, _overall_resamples, n_bootstrap=n_bootstrap, confidence=confidence,
                                  method="percentile", seed=stable_seed(seed, "dsrs", metric, sig, "Overall"),
                                  vectorized=True)
                lo, hi = ci.low, ci.high
        rows.append({**base, "column": "Overall", "estimate": est, "low": lo, "high": hi, "n": int(ok.sum()),
                     "n_undefined": int((~ok).sum()),
                     "n_rules": int(part.loc[ok, "rule"].nunique()) if "rule" in part.columns else 0,
                     "ci_method": CI_LABELS[overall_ci]})
    return pd.DataFrame(rows)


def ds_rs_by_rule(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The drill-down behind each Table 4/5 cell: one row per metric x significance x column x rewriting
    rule with the rule's mean ``score_100`` (``estimate``), a percentile bootstrap CI over its pairs and
    ``n``. A cell whose rules disagree shows here which kind of edit the metric handles badly."""
    need = {"metric", "aspect", "error_type", "significance", "score_100", "rule"}
    if not need <= set(scores.columns):
        raise DataFormatError(f"scores needs columns {sorted(need)} (from score_pairs on pairs with a rule column).")
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    df = df.assign(column=[column_key(a, e) for a, e in zip(df["aspect"], df["error_type"])])
    rows = []
    for (metric, sig, col, rule_name), g in df.groupby(["metric", "significance", "column", "rule"], sort=False):
        vals = g["score_100"].to_numpy(float)
        est, lo, hi = _mean_ci(vals, n_bootstrap=n_bootstrap, confidence=confidence,
                               seed=stable_seed(seed, "dsrs_rule", metric, sig, col, rule_name))
        rows.append({"metric": metric, "label": metric_label(metric), "score": "DS" if sig == "significant" else "RS",
                     "column": col, "rule": rule_name, "error_type": g["error_type"].iloc[0], "estimate": est,
                     "low": lo, "high": hi, "n": int(np.isfinite(vals).sum())})
    out = pd.DataFrame(rows)
    order = {c: i for i, c in enumerate(table_columns())}
    return out.sort_values(["metric", "score", "column", "rule"], key=lambda s: s.map(order) if s.name == "column" else s,
                           kind="stable").reset_index(drop=True)


def rules_per_cell(pairs: pd.DataFrame) -> pd.DataFrame:
    """Distinct rewriting rules behind each Table 4/5 cell (column x significance) of a pair table
    (discrimination/robustness pairs only): ``column, significance, n_pairs, n_rules, rules``."""
    need = {"aspect", "error_type", "significance", "rule"}
    if not need <= set(pairs.columns):
        raise DataFormatError(f"pairs needs columns {sorted(need)} (PairDataset.pairs).")
    df = pairs[pairs["group"].isna()] if "group" in pairs.columns else pairs
    df = df.assign(column=[column_key(a, e) for a, e in zip(df["aspect"], df["error_type"])])
    rows = []
    for col in table_columns()[:-1]:
        for sig in ("significant", "insignificant"):
            g = df[(df["column"] == col) & (df["significance"] == sig)]
            counts = g["rule"].value_counts().sort_index()
            rows.append({"column": col, "significance": sig, "n_pairs": int(len(g)), "n_rules": int(len(counts)),
                         "rules": ", ".join(f"{r} ({n})" for r, n in counts.items())})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# AUROC (beyond the paper)


def auroc(insignificant: Sequence[float], significant: Sequence[float]) -> float:
    """``P(X > Y) + ½ P(X = Y)`` for X a score on an insignificant pair, Y on a significant pair.

    = U / (n_x n_y) with U the Mann–Whitney statistic of X (midranks for ties): the insignificant pairs are the
    positives of :func:`radaudit.stats.auroc_two_sample`. 1: every harmless rewrite scores above every harmful
    one; 0.5: no separation. Empty or NaN inputs raise.
    """
    return auroc_two_sample(negatives=significant, positives=insignificant)


def _auroc_labels(s: np.ndarray, is_insig: np.ndarray) -> float:
    is_insig = np.asarray(is_insig, dtype=bool)
    return auroc(s[is_insig], s[~is_insig])


def _auroc_resamples(s: np.ndarray, is_insig: np.ndarray) -> np.ndarray:
    """:func:`auroc` of every resample at once (``bootstrap_ci(vectorized=True)``; resamples × pairs matrices):
    the same midrank U statistic with the insignificant pairs as positives
    (:func:`radaudit.stats.auroc_replicates`), NaN for a resample without both kinds of pair."""
    return auroc_replicates(is_insig, s)


def auroc_table(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                fdr_alpha: float = 0.05) -> pd.DataFrame:
    """AUROC per metric x aspect (and ``Overall``, all pairs), with CI and BH-adjusted p-value.

    Columns: ``metric``, ``label``, ``aspect``, ``auroc``, ``low``, ``high`` (percentile bootstrap over
    pairs), ``n_insignificant``, ``n_significant``, ``n_undefined``, ``pvalue`` (two-sided
    Mann–Whitney U, H0: AUROC = 0.5), ``p_adj`` (BH over every row with a p-value), ``separates``
    (``p_adj <= fdr_alpha`` and AUROC > 0.5). A lower-is-better metric is negated first.
    """
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    if df.empty:
        raise DataFormatError("no discrimination/robustness pairs to compute the AUROC on")
    rows = []
    for metric, part in df.groupby("metric", sort=False):
        sign = 1.0 if bool(part["higher_is_better"].iloc[0]) else -1.0
        for aspect, sub in [*part.groupby("aspect", sort=False), ("Overall", part)]:
            s = sign * sub["score"].to_numpy(float)
            ok = np.isfinite(s)
            lab = (sub["significance"].to_numpy() == "insignificant")
            s, lab_ok = s[ok], lab[ok]
            n_i, n_s = int(lab_ok.sum()), int((~lab_ok).sum())
            row = {"metric": metric, "label": metric_label(metric), "aspect": aspect, "auroc": math.nan, "low": math.nan,
                   "high": math.nan, "n_insignificant": n_i, "n_significant": n_s, "n_undefined": int((~ok).sum()),
                   "pvalue": math.nan}
            if n_i and n_s:
                row["auroc"] = auroc(s[lab_ok], s[~lab_ok])
                row["pvalue"] = float(sps.mannwhitneyu(s[lab_ok], s[~lab_ok], alternative="two-sided").pvalue) \
                    if np.ptp(s) > 0 else 1.0
                if n_i + n_s >= 4 and min(n_i, n_s) >= 2:
                    ci = bootstrap_ci((s, lab_ok), _auroc_resamples, n_bootstrap=n_bootstrap, confidence=confidence,
                                      method="percentile", seed=stable_seed(seed, "auroc", metric, aspect), max_failed=0.5,
                                      vectorized=True)
                    row["low"], row["high"] = ci.low, ci.high
            rows.append(row)
    out = pd.DataFrame(rows)
    _, adj = benjamini_hochberg(out["pvalue"].to_numpy(float), alpha=fdr_alpha)
    out["p_adj"] = adj
    out["separates"] = (out["p_adj"] <= fdr_alpha) & (out["auroc"] > 0.5)
    return out


def n_discrimination_pairs(scores: pd.DataFrame) -> int:
    """Distinct discrimination/robustness pairs (no severity group) in a
    :func:`~radaudit.audits.metric_metaeval.study.score_pairs` table: 0 when every rewrite was rejected, and then
    DS/RS, AUROC and their findings cannot be computed (the notebook says so)."""
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    return int(df["pair_id"].nunique())


def median_auroc(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> dict[str, Any]:
    """The median over metrics of the overall harmful-vs-harmless AUROC (:func:`auroc_table`'s
    ``Overall`` rows), with a BCa bootstrap CI over *pairs*: each replicate resamples the pairs once,
    recomputes every metric's AUROC on that same resample, and takes the median — so the interval
    carries the sampling of the pairs, which is what varies between studies (the metrics are fixed).
    Metrics with an undefined AUROC on a resample are left out of that replicate's median.

    Returns ``{"median", "low", "high", "n_metrics", "n_pairs", "method"}``.
    """
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    if df.empty:
        raise DataFormatError("no discrimination/robustness pairs to compute the AUROC on")
    sign = df.groupby("metric", sort=False)["higher_is_better"].first().map(lambda h: 1.0 if bool(h) else -1.0)
    wide = df.pivot_table(index="pair_id", columns="metric", values="score", aggfunc="first", dropna=False)
    wide = wide[list(sign.index)] * sign.to_numpy()
    insig = df.groupby("pair_id")["significance"].first().reindex(wide.index).to_numpy() == "insignificant"
    values = wide.to_numpy(float)

    def stat(v: np.ndarray, lab: np.ndarray) -> float:
        lab = np.asarray(lab, dtype=bool)
        per = []
        for j in range(v.shape[1]):
            col = v[:, j]
            ok = np.isfinite(col)
            if (lab & ok).any() and (~lab & ok).any():
                per.append(auroc(col[ok & lab], col[ok & ~lab]))
        return float(np.median(per)) if per else math.nan

    est = stat(values, insig)
    ci = bootstrap_ci((values, insig), stat, n_bootstrap=n_bootstrap, confidence=confidence, method="bca",
                      seed=stable_seed(seed, "median_auroc"), max_failed=0.5)
    return {"median": est, "low": ci.low, "high": ci.high, "n_metrics": int(values.shape[1]),
            "n_pairs": int(values.shape[0]), "method": "bca"}


# ----------------------------------------------------------------------------------------------
# monotonicity (§4.3, Figure 4)


def violated_transitions(means: Sequence[float]) -> list[int]:
    """Indices ``g`` where the mean score rises from group g to g+1 (a higher-is-better metric should
    fall as severity rises). Equal means are not violations. NaN in ``means`` raises."""
    m = np.asarray(means, dtype=float)
    if m.ndim != 1 or m.size < 2:
        raise ValueError(f"violated_transitions needs at least two group means, got {m.size}")
    if np.isnan(m).any():
        raise ValueError("a group mean is NaN (an empty group or undefined scores): cannot judge monotonicity")
    return [int(g) for g in np.flatnonzero(np.diff(m) > 0)]


def kendall_tau(groups: Sequence[float], scores: Sequence[float]) -> float:
    """Kendall's τ_b between severity ``groups`` and the *decrease* of ``scores`` (τ_b(group, −score)):
    +1 = the score falls whenever severity rises, −1 = it always rises. NaN when undefined (all groups
    or all scores equal)."""
    g, s = np.asarray(groups, dtype=float), np.asarray(scores, dtype=float)
    if g.shape != s.shape or g.ndim != 1:
        raise ValueError(f"groups and scores must be 1-D and aligned, got {g.shape} and {s.shape}")
    ok = np.isfinite(g) & np.isfinite(s)
    return _kendall_tau_b(g[ok], -s[ok]) if ok.sum() >= 2 else math.nan  # radaudit.stats: NaN when one is constant


def _mono_frame(scores: pd.DataFrame) -> pd.DataFrame:
    df = scores[scores["group"].notna()] if "group" in scores.columns else pd.DataFrame()
    if df.empty:
        raise DataFormatError("no monotonicity pairs in scores (rows with a severity group 0-4).")
    return df


def monotonicity_long(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Mean ``score_100`` per metric x severity group with a bootstrap CI over GT reports (Figure 4)."""
    df = _mono_frame(scores)
    rows = []
    for (metric, g), part in df.groupby(["metric", "group"], sort=True):
        vals = part["score_100"].to_numpy(float)
        est, lo, hi = _mean_ci(vals, n_bootstrap=n_bootstrap, confidence=confidence,
                               seed=stable_seed(seed, "mono", metric, g))
        rows.append({"metric": metric, "label": metric_label(metric), "group": int(g), "estimate": est, "low": lo,
                     "high": hi, "n": int(np.isfinite(vals).sum()), "n_undefined": int((~np.isfinite(vals)).sum())})
    order = list(dict.fromkeys(df["metric"]))
    out = pd.DataFrame(rows)
    out["metric"] = pd.Categorical(out["metric"], order, ordered=True)
    return out.sort_values(["metric", "group"]).assign(metric=lambda d: d["metric"].astype(str)).reset_index(drop=True)


def monotonicity_summary(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                         fdr_alpha: float = 0.05) -> pd.DataFrame:
    """Per metric: group means, violated transitions, τ (mean per-report τ, CI over reports), τ of the
    group means, and the pooled τ_b p-value with its BH adjustment (module docstring)."""
    df = _mono_frame(scores)
    rows = []
    for metric, part in df.groupby("metric", sort=False):
        sign = 1.0 if bool(part["higher_is_better"].iloc[0]) else -1.0
        s = sign * part["score"].to_numpy(float)
        g = part["group"].to_numpy(float)
        means = pd.Series(s).groupby(g).mean()
        row: dict[str, Any] = {"metric": metric, "label": metric_label(metric)}
        for k, v in means.items():
            row[f"mean_g{int(k)}"] = float(sign * v * 100 / METRIC_RANGES.get(metric, 1.0))
        if means.isna().any() or len(means) < 2:
            row.update(violations=math.nan, violated="n/a (a group has no defined score)", tau_of_means=math.nan)
        else:
            viol = violated_transitions(means.to_numpy())
            gs = means.index.to_numpy()
            row.update(violations=len(viol), violated=", ".join(f"{int(gs[i])}→{int(gs[i + 1])}" for i in viol) or "none",
                       tau_of_means=kendall_tau(gs, means.to_numpy()))
        taus = []
        for _, r in part.assign(_s=s).groupby("study_id", sort=True):
            taus.append(kendall_tau(r["group"].to_numpy(float), r["_s"].to_numpy(float)))
        t = np.asarray(taus, dtype=float)
        est, lo, hi = _mean_ci(t, n_bootstrap=n_bootstrap, confidence=confidence, seed=stable_seed(seed, "tau", metric))
        ok = np.isfinite(s)
        pooled = kendall_test(g[ok], -s[ok]) if ok.sum() >= 2 and np.ptp(s[ok]) > 0 else (math.nan, math.nan)
        row.update(tau=est, tau_low=lo, tau_high=hi, n_reports=len(t), n_reports_undefined_tau=int(np.isnan(t).sum()),
                   tau_pooled=pooled[0], pvalue=pooled[1],
                   n_undefined=int((~ok).sum()))
        rows.append(row)
    out = pd.DataFrame(rows)
    _, adj = benjamini_hochberg(out["pvalue"].to_numpy(float), alpha=fdr_alpha)
    out["p_adj"] = adj
    return out
