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
    BootstrapError,
    BootstrapWarning,
    auroc_replicates,
    auroc_two_sample,
    benjamini_hochberg,
    bootstrap_ci,
    cover_rounding,
    interval_from_replicates,
    kendall_tau_columns,
    kendall_tau_replicates,
    kendall_test,
    resample_indices,
    resample_weights,
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


def _column_resamples(values: np.ndarray, columns: np.ndarray, rules: np.ndarray | None = None, *,
                      n_col: int | None = None, n_rule: int | None = None) -> np.ndarray:
    """Every column's :func:`_cell_mean` on every resample at once: resamples x ``n_col`` (NaN where a resample
    holds no pair of that column). ``values``, ``columns`` and ``rules`` are resamples x pairs matrices, columns
    and rules as integer codes; ``n_col``/``n_rule`` default to the largest code present + 1."""
    n_col = int(columns.max()) + 1 if n_col is None else int(n_col)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column or rule absent from a resample: NaN, skipped
        if rules is None:
            return _group_means(values, columns, n_col)
        n_rule = int(rules.max()) + 1 if n_rule is None else int(n_rule)
        per_rule = _group_means(values, columns * n_rule + rules, n_col * n_rule)
        return np.nanmean(per_rule.reshape(len(values), n_col, n_rule), axis=2)


def _overall_resamples(values: np.ndarray, columns: np.ndarray, rules: np.ndarray | None = None) -> np.ndarray:
    """:func:`_overall_of_columns` of every resample at once: the mean over the columns present of each
    column's cell mean (over its rules when ``rules`` is given). Integer codes for columns and rules."""
    per_column = _column_resamples(values, columns, rules)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column absent from a resample: NaN, skipped
        return np.nanmean(per_column, axis=1)


def dsrs_replicates(values: np.ndarray, columns: np.ndarray, rules: np.ndarray | None = None, *, n_bootstrap: int,
                    seed: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The bootstrap replicates behind one row (metric x significance) of Table 4 or 5: one draw of pairs shared by
    every cell and by Overall (§4.2.2's DS/RS; our CI).

    Unit: the GT-ME pair, as the Overall column's CI has always resampled it: replicate ``r`` draws ``n`` of the row's
    ``n`` defined pairs with replacement (:func:`radaudit.stats.resample_indices`, iid, seeded by ``seed``: the
    Overall CI's draws, byte for byte), and on that one resample every cell is recomputed (:func:`_cell_mean`: the
    mean of the cell's drawn pairs, over its rules' means when ``rules`` is given) and Overall with it
    (:func:`_overall_resamples`, the mean of the cells present). So a cell and Overall move together, replicate by
    replicate, as they would in another sample of pairs; a cell's size varies between replicates (a cell of ``k`` of
    ``n`` pairs is absent from a replicate with probability about ``e^-k``: NaN there, a failed replicate).

    Args:
        values: the row's defined ``score_100`` (finite).
        columns: each pair's Table 4/5 column label.
        rules: each pair's rewriting rule (``cell_average="rules"``), or ``None`` (mean over pairs).
        n_bootstrap: the number of replicates.
        seed: the seed of the draws.

    Returns:
        ``(labels, cells, overall)``: the column labels in sorted order, the ``n_bootstrap x len(labels)`` cell
        replicates (column ``j`` is ``labels[j]``) and the ``n_bootstrap`` Overall replicates.
    """
    values = np.asarray(values, dtype=float)
    labels = sorted(set(np.asarray(columns, dtype=object).astype(str).tolist()))
    colc = _codes(columns)
    rulec = None if rules is None else _codes(rules)
    n_rule = None if rulec is None else int(rulec.max()) + 1
    cells = np.empty((n_bootstrap, len(labels)))
    overall = np.empty(n_bootstrap)
    start = 0
    for block in resample_indices(len(values), n_bootstrap, seed=seed):  # bootstrap_ci(vectorized=True)'s blocks
        vb, cb, rb = values[block], colc[block], None if rulec is None else rulec[block]
        stop = start + len(block)
        overall[start:stop] = _overall_resamples(vb, cb, rb)  # exactly the Overall CI's statistic, block by block
        cells[start:stop] = _column_resamples(vb, cb, rb, n_col=len(labels), n_rule=n_rule)
        start = stop
    return labels, cells, overall


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
      pairs).
    - ``Overall`` is the mean of the column estimates (the paper's: its CI is over the 20 column means).
      ``overall_ci="paper"``: mean ± 1.96·SD/√k over the k columns (:func:`paper_overall_ci`);
      ``"bootstrap"``: a percentile bootstrap over the pairs of that significance, each replicate
      recomputing every column. The two answer different questions (other aspects vs other pairs);
      the bootstrap one is usually about half as wide. ``ci_method`` says which a row carries.
    - Every cell's CI comes from the same replicates as the bootstrap Overall's (:func:`dsrs_replicates`: one
      draw of the metric x significance's pairs, seeded as the Overall CI always was, every cell recomputed on
      it): the percentile interval of the replicates that hold the cell. Percentile, not BCa: a cell holds about
      10 pairs whose scores are often tied (label F1 is 0 or 100), where BCa's jackknife acceleration is
      unstable, and the Overall beside it is percentile too. A cell with one defined pair has no interval (NaN
      bounds); a cell (or a whole row) whose scores are all equal has the zero-width ``[estimate, estimate]``; a
      cell absent from more than half the replicates has none (NaN, logged).
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
        vals = part["score_100"].to_numpy(float)
        ok = np.isfinite(vals)
        cols = part["column"].to_numpy()[ok]
        rules = part["rule"].astype(str).to_numpy()[ok] if by_rule else None
        seed_row = stable_seed(seed, "dsrs", metric, sig, "Overall")
        drawn = ok.sum() >= 2 and np.ptp(vals[ok]) > 0
        reps = dsrs_replicates(vals[ok], cols, rules, n_bootstrap=n_bootstrap, seed=seed_row) if drawn else None
        col_est, cell_rows = [], []
        for col, g in part.groupby("column", sort=False):
            v = g["score_100"].to_numpy(float)
            fin = np.isfinite(v)
            est = _cell_mean(v[fin], g["rule"].astype(str).to_numpy()[fin] if by_rule else None)
            lo = hi = math.nan
            if fin.sum() >= 2:
                lo, hi = _cell_interval(est, reps, col, n=int(ok.sum()), confidence=confidence, name=f"{metric}/{sig}/{col}")
            col_est.append(est)
            cell_rows.append({**base, "column": col, "estimate": est, "low": lo, "high": hi, "n": int(fin.sum()),
                              "n_undefined": int((~fin).sum()),
                              "n_rules": int(g.loc[fin, "rule"].nunique()) if "rule" in g.columns else 0,
                              "ci_method": CI_LABELS["bootstrap"]})
        rows += cell_rows
        if overall_ci == "paper":
            est, lo, hi = paper_overall_ci(col_est, confidence)
        else:
            est = _overall_of_columns(vals[ok], cols, rules)
            lo = hi = math.nan
            if reps is not None:
                # the interval bootstrap_ci(vectorized=True) gave on these draws: its estimate is the vectorised one
                colc = _codes(cols)
                full = (vals[ok][None, :], colc[None, :]) + (() if rules is None else (_codes(rules)[None, :],))
                ci = interval_from_replicates(float(_overall_resamples(*full)[0]), reps[2], None, "percentile",
                                              confidence, int(ok.sum()), "_overall_resamples", 0.1)
                lo, hi = ci.low, ci.high
        rows.append({**base, "column": "Overall", "estimate": est, "low": lo, "high": hi, "n": int(ok.sum()),
                     "n_undefined": int((~ok).sum()),
                     "n_rules": int(part.loc[ok, "rule"].nunique()) if "rule" in part.columns else 0,
                     "ci_method": CI_LABELS[overall_ci]})
    return pd.DataFrame(rows)


def _cell_interval(est: float, reps: tuple[list[str], np.ndarray, np.ndarray] | None, column: str, *, n: int,
                   confidence: float, name: str) -> tuple[float, float]:
    """A Table 4/5 cell's percentile interval from :func:`dsrs_replicates` (``None``: the row's scores are all equal,
    so every replicate is the estimate: ``(est, est)``); a replicate without the cell fails, and more than half
    failing leaves the cell without an interval (NaN, logged)."""
    if reps is None:
        return est, est
    labels, cells, _ = reps
    try:
        ci = interval_from_replicates(est, cells[:, labels.index(str(column))], None, "percentile", confidence, n, name,
                                      0.5)
    except BootstrapError as err:
        log.info("DS/RS cell %s: no interval (%s)", name, err)
        return math.nan, math.nan
    return ci.low, ci.high


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


def _auroc_change_resamples(s_paper: np.ndarray, s_full: np.ndarray, is_insig: np.ndarray) -> np.ndarray:
    """``AUROC_full − AUROC_paper`` of every resample at once (resamples x pairs matrices, every score finite): the
    midrank U statistic of :func:`auroc` on both designs' scores of the same resampled pairs; NaN for a resample
    without both kinds of pair."""
    return auroc_replicates(is_insig, s_full) - auroc_replicates(is_insig, s_paper)


def _auroc_change_one(s_paper: np.ndarray, s_full: np.ndarray, is_insig: np.ndarray) -> float:
    """``AUROC_full − AUROC_paper`` of one resample whose scores may be undefined (NaN): each design's AUROC on its
    own defined scores, as :func:`auroc_table` computes it; raises (a failed replicate) when a design is left
    without both kinds of pair."""
    lab = np.asarray(is_insig, dtype=bool)
    ok_p, ok_f = np.isfinite(s_paper), np.isfinite(s_full)
    return _auroc_labels(s_full[ok_f], lab[ok_f]) - _auroc_labels(s_paper[ok_p], lab[ok_p])


def _discrimination_rows(scores: pd.DataFrame) -> pd.DataFrame:
    return scores[scores["group"].isna()] if "group" in scores.columns else scores


def auroc_change(scores: pd.DataFrame, scores_full: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> pd.DataFrame:
    """The context ablation's change per metric, ``AUROC_full − AUROC_paper`` (the ``Overall`` AUROCs of
    :func:`auroc_table` on ``scores_full`` and ``scores``), with a paired bootstrap CI over pairs.

    Unit and pairing: the GT-ME pair (``pair_id``). The two designs score the same rewrites, once with the paper's
    trimmed insignificant pairs (``scores``) and once whole (``scores_full``), so each replicate draws one resample
    of pair ids (:func:`radaudit.stats.bootstrap_ci`, iid over the union of both tables' pair ids) and recomputes
    both AUROCs on it; the change's interval is the interval of the replicate differences, in which the pair-level
    noise the two AUROCs share cancels. A pair a design lacks, or scores undefined (NaN), is left out of that
    design's AUROC, as :func:`auroc_table` leaves it out, so the full-data difference is the table's change.

    Interval: BCa (jackknife leaving one pair out): a difference of two U statistics over the run's pairs is smooth
    enough for it; where BCa is undefined (every replicate on one side of the estimate, or a jackknife value
    undefined) :mod:`radaudit.stats` falls back to the percentile interval (logged). No interval (NaN bounds) where
    :func:`auroc_table` gives none: a design with fewer than 2 pairs of either kind, or more than half the
    replicates without both kinds.

    Returns one row per metric scored in both tables (``scores``' order): ``metric``, ``change``, ``change_low``,
    ``change_high``, ``n_pairs`` (pair ids resampled). Every metric is higher-is-better here or negated first, as in
    :func:`auroc_table`.
    """
    a_df, b_df = _discrimination_rows(scores), _discrimination_rows(scores_full)
    if a_df.empty or b_df.empty:
        raise DataFormatError("no discrimination/robustness pairs to compute the AUROC change on")
    rows = []
    for metric, pa in a_df.groupby("metric", sort=False):
        pb = b_df[b_df["metric"] == metric]
        if pb.empty:
            continue
        both = pd.concat([pa, pb])
        mixed = both.groupby("pair_id")["significance"].nunique()
        if (mixed > 1).any():
            raise DataFormatError(f"metric {metric!r}: pairs {sorted(mixed[mixed > 1].index)[:5]} are significant in "
                                  "one design and insignificant in the other; the context ablation must score the same "
                                  "rewrites.")
        ids = np.unique(both["pair_id"].astype(str).to_numpy())
        lab = both.assign(pair_id=both["pair_id"].astype(str)).groupby("pair_id")["significance"].first() \
            .reindex(ids).to_numpy() == "insignificant"

        def design(p: pd.DataFrame) -> np.ndarray:
            sign = 1.0 if bool(p["higher_is_better"].iloc[0]) else -1.0
            return sign * p.assign(pair_id=p["pair_id"].astype(str)).set_index("pair_id")["score"].reindex(ids) \
                .to_numpy(float)

        s_p, s_f = design(pa), design(pb)
        row = {"metric": metric, "change": math.nan, "change_low": math.nan, "change_high": math.nan,
               "n_pairs": int(len(ids))}
        counts = [(int((lab & np.isfinite(s)).sum()), int((~lab & np.isfinite(s)).sum())) for s in (s_p, s_f)]
        if all(n_i and n_s for n_i, n_s in counts):
            row["change"] = _auroc_change_one(s_p, s_f, lab)
            if all(n_i + n_s >= 4 and min(n_i, n_s) >= 2 for n_i, n_s in counts):
                vectorized = bool(np.isfinite(s_p).all() and np.isfinite(s_f).all())
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", BootstrapWarning)
                    try:
                        ci = bootstrap_ci((s_p, s_f, lab), _auroc_change_resamples if vectorized else _auroc_change_one,
                                          n_bootstrap=n_bootstrap, confidence=confidence, method="bca",
                                          seed=stable_seed(seed, "auroc_change", metric), max_failed=0.5,
                                          vectorized=vectorized)
                        row["change_low"], row["change_high"] = cover_rounding(row["change"], ci.low, ci.high)
                    except BootstrapError as err:
                        log.info("AUROC change of %s: no interval (%s)", metric, err)
                for w in caught:
                    log.info("AUROC change of %s: %s", metric, w.message)
        rows.append(row)
    return pd.DataFrame(rows, columns=["metric", "change", "change_low", "change_high", "n_pairs"])


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
        finite = np.isfinite(v)
        whole = finite.all(axis=0)  # metrics scored on every pair: one ranking call for all of them
        per = []
        if whole.any() and lab.any() and (~lab).any():
            # the same values as auroc() column by column: average ranks per row, the positives' (half-integer)
            # ranks summed in the same order, so bit for bit (tested)
            per += auroc_replicates(lab, v[:, whole].T).tolist()
        for j in np.flatnonzero(~whole):
            col, ok = v[:, j], finite[:, j]
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


def monotonicity_replicates(groups: np.ndarray, scores: np.ndarray, reports: np.ndarray, *, n_bootstrap: int,
                            seed: int) -> dict[str, Any]:
    """``tau_of_means`` and ``tau_pooled`` (:func:`monotonicity_summary`) on every bootstrap replicate of the GT
    reports, and ``tau_pooled``'s leave-one-report-out jackknife (for BCa).

    Unit: the GT report, the unit whose five rewrites make the groups' items (§4.3: each report is rewritten once
    per severity group). A replicate draws the ``m`` reports with replacement
    (:func:`radaudit.stats.resample_weights`, seeded by ``seed``) and keeps every rewrite of each drawn report, so
    the items of all five groups are resampled together, as the correlated rewrites of one report they are. On the
    replicate, row ``i`` counts ``w_i`` times (its report's draws):

    * ``tau_of_means``: the group means ``Σ w_i s_i / Σ w_i`` over each group's defined scores, then τ_b(group, −mean)
      over the groups (:func:`radaudit.stats.kendall_tau_columns`); NaN (failed) when a group has no defined score
      on the replicate or the means are all equal;
    * ``tau_pooled``: τ_b(group, −score) over every (group, score) point, copies of a row counting as ties
      (:func:`radaudit.stats.kendall_tau_replicates`); undefined scores are left out.

    ``scores`` are oriented higher-is-better (a lower-is-better metric negated first), ``groups`` the severity
    groups, ``reports`` each row's report id; rows aligned. Returns ``{"n_reports", "tau_of_means", "tau_pooled",
    "tau_pooled_jackknife", "tau_pooled_estimate"}``: the replicate arrays (``n_bootstrap``), the jackknife
    (``n_reports``), and ``tau_pooled`` of the data by the same formula (for BCa's bias correction).
    """
    g = np.asarray(groups, dtype=float)
    s = np.asarray(scores, dtype=float)
    codes, uniques = pd.factorize(np.asarray(reports, dtype=object).astype(str), sort=True)
    ok = np.isfinite(s)
    levels = np.unique(g)
    member = (g[:, None] == levels[None, :]) & ok[:, None]  # rows x groups: a defined score of that group
    weighted = np.where(member, np.where(ok, s, 0.0)[:, None], 0.0)
    x = np.where(ok, -s, np.nan)[:, None]  # the score's decrease; NaN rows left out of the pooled τ
    y = g[:, None]

    def tau_of_means(w: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (w @ weighted) / (w @ member)
        out = np.full(len(w), np.nan)
        good = np.isfinite(means).all(axis=1)
        if good.any() and len(levels) >= 2:
            out[good] = kendall_tau_columns(levels[:, None], -means[good].T)[0]
        return out

    def pooled(w: np.ndarray) -> np.ndarray:
        return kendall_tau_replicates(x, y, w)[:, 0, 0]

    n_rep = len(uniques)
    means_reps, pooled_reps = np.empty(n_bootstrap), np.empty(n_bootstrap)
    start = 0
    for w in resample_weights(n_rep, n_bootstrap, seed=seed, chunk=max(1, 2_000_000 // max(1, len(s)))):
        rows_w = w[:, codes]  # each row counts as often as its report was drawn
        stop = start + len(w)
        means_reps[start:stop], pooled_reps[start:stop] = tau_of_means(rows_w), pooled(rows_w)
        start = stop
    leave_one_out = (1.0 - np.eye(n_rep))[:, codes]
    return {"n_reports": n_rep, "tau_of_means": means_reps, "tau_pooled": pooled_reps,
            "tau_pooled_jackknife": pooled(leave_one_out), "tau_pooled_estimate": float(pooled(np.ones((1, len(s))))[0])}


def _monotonicity_intervals(reps: dict[str, Any], tau_of_means: float, tau_pooled: float, *, confidence: float,
                            name: str) -> tuple[float, float, float, float]:
    """``(tau_of_means low, high, tau_pooled low, high)`` from :func:`monotonicity_replicates`; NaN bounds where the
    estimate is undefined or more than half the replicates fail (logged).

    ``tau_of_means``: percentile. τ over five group means takes at most eleven values and sits at ±1 for a metric
    that is monotone in most resamples; there BCa's bias correction (the share of replicates below the estimate) and
    jackknife acceleration are degenerate or jump between neighbouring values, while the percentile interval reads
    the discrete bootstrap distribution as it is. ``tau_pooled``: BCa (jackknife leaving one report out; a τ_b over
    all the run's points is smooth enough), the percentile interval where BCa is undefined (:mod:`radaudit.stats`'
    fallback, logged)."""
    out = [math.nan] * 4
    for k, (key, est, method, jack) in enumerate((("tau_of_means", tau_of_means, "percentile", None),
                                                  ("tau_pooled", tau_pooled, "bca", reps["tau_pooled_jackknife"]))):
        if not math.isfinite(est):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BootstrapWarning)
            try:
                ci = interval_from_replicates(reps["tau_pooled_estimate"] if key == "tau_pooled" else est, reps[key], jack,
                                              method, confidence, reps["n_reports"], f"{name} {key}", 0.5)
                out[2 * k], out[2 * k + 1] = cover_rounding(est, ci.low, ci.high)
            except BootstrapError as err:
                log.info("%s %s: no interval (%s)", name, key, err)
        for w in caught:
            log.info("%s %s: %s", name, key, w.message)
    return out[0], out[1], out[2], out[3]


def monotonicity_summary(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                         fdr_alpha: float = 0.05) -> pd.DataFrame:
    """Per metric: group means, violated transitions, τ (mean per-report τ, CI over reports), τ of the
    group means and the pooled τ_b, each with a 95% CI from a bootstrap over GT reports
    (:func:`monotonicity_replicates`: percentile for ``tau_of_means``, BCa for ``tau_pooled``), and the pooled
    τ_b p-value with its BH adjustment (module docstring)."""
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
        bounds = (math.nan,) * 4
        studies = part["study_id"].astype(str).to_numpy()
        if len(np.unique(studies)) >= 2 and (math.isfinite(row["tau_of_means"]) or math.isfinite(pooled[0])):
            reps = monotonicity_replicates(g, s, studies, n_bootstrap=n_bootstrap, seed=stable_seed(seed, "tau_ci", metric))
            bounds = _monotonicity_intervals(reps, row["tau_of_means"], pooled[0], confidence=confidence, name=metric)
        row.update(tau_of_means_low=bounds[0], tau_of_means_high=bounds[1], tau=est, tau_low=lo, tau_high=hi,
                   n_reports=len(t), n_reports_undefined_tau=int(np.isnan(t).sum()), tau_pooled=pooled[0],
                   tau_pooled_low=bounds[2], tau_pooled_high=bounds[3], pvalue=pooled[1], n_undefined=int((~ok).sum()))
        rows.append(row)
    out = pd.DataFrame(rows)
    _, adj = benjamini_hochberg(out["pvalue"].to_numpy(float), alpha=fdr_alpha)
    out["p_adj"] = adj
    return out
