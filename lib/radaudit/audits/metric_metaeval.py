"""Experiment 2 — metric_metaeval: are radiology report metrics clinically sound?

ReEvalMed (Li et al., EMNLP 2025; ``../shared/papers/001_d2362e1e05417774.txt``). The GT–ME pair
dataset and the monotonicity set are built by :mod:`radaudit.perturb`; this module scores every pair
with every metric and turns the scores into the paper's tables and figures:

- **Discriminative Score** (§4.2.2): the mean score a metric gives to clinically *significant* error
  pairs (lower = better discrimination); **Robustness Score**: the mean score on clinically
  *insignificant* pairs (higher = more robust). Per metric x aspect x error type with 95% bootstrap
  CIs over pairs, laid out as the paper's Tables 4 and 5 (scores x 100, columns E/F/O for the four
  high-impact aspects, S for the others; "Overall" = the mean over all pairs of that significance),
  and Figure 2.
- **AUROC** (beyond the paper): ``P(score on an insignificant pair > score on a significant pair)``
  (ties count 1/2), per metric and aspect, with a bootstrap CI and a Mann–Whitney p-value against
  0.5, Benjamini–Hochberg-adjusted over every (metric, aspect) tested. Why: DS and RS are raw means on
  each metric's own scale. BERTScore lives in [0.85, 1], CIDEr in [0, 10], label F1 jumps between
  0 and 1, so "DS = 90" is good for one metric and bad for another, and DS/RS cannot be compared
  across metrics. The AUROC is scale-free and threshold-free: 1 = every harmless rewrite scores above
  every harmful one, 0.5 = the metric cannot tell them apart, < 0.5 = it prefers the harmful ones.
- **Monotonicity** (§4.3, Figure 4): the mean score per severity group 0–4, the number of violated
  transitions (the mean score *rises* from group g to g+1), and Kendall's τ between severity and the
  score's decrease. τ is computed within each GT report (its five rewrites have five distinct groups,
  so τ = 1 exactly when the score falls at every step) and averaged over reports, with a bootstrap CI
  over reports; ``tau_of_means`` is τ over the five group means (the curve of Figure 4). The p-value
  is that of τ_b on all (group, score) points pooled, BH-adjusted over metrics.
- **Inter-annotator agreement** (Table 1): pairwise Pearson and Spearman correlations between raters
  of their error counts per error type and clinical significance, averaged over rater pairs. On
  RadPref's three radiologists (public): error types false finding (fabrication), missing finding
  (omission) and attribute error (inaccuracy). On ReXVal (credentialed; a loader path): the paper's
  six categories and four candidate types, Table 1's exact layout.

Choices where the paper is silent or ambiguous
----------------------------------------------
- **Scale.** Scores are shown x 100 as in the paper; a metric whose range is not [0, 1] is divided by
  its maximum first (:data:`METRIC_RANGES`: CIDEr-D / 10), so every table cell is on 0–100.
- **Orientation.** Every registered metric here is higher-is-better; a lower-is-better one
  (``MetricSpec.higher_is_better=False``) keeps its raw DS/RS, and AUROC, violations and τ are
  computed on the negated score so that their reading does not change.
- **CI of "Overall".** The paper's CI column is not defined; we bootstrap pairs (percentile, 95%).
  With balanced cells the mean over pairs equals the mean of the column means.
- **Undefined scores** (NaN, e.g. an empty text for some metrics) are kept in the per-pair table,
  counted per metric (``n_undefined``) and left out of every mean, AUROC and τ.
- **RadPref significance.** False and missing findings carry one of four CRIMSON levels: ``urgent``
  and ``actionable_not_urgent`` count as clinically significant, ``not_actionable_not_urgent`` and
  ``benign_expected`` as insignificant. Attribute errors are counted per wrong attribute, by the
  rater's ``significant``/``negligible`` weight.
- **ReXVal zeros.** A (study, candidate, rater) present in the error file with no row for a category
  has 0 errors there. A rater pair's correlation uses the reports both rated; a constant count
  vector has no correlation (NaN, counted in ``n_pairs_undefined``, left out of the average).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator
from scipy import stats as sps

from radaudit.config import BaseParams
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.base import metric_label as registry_label
from radaudit.session import stable_seed
from radaudit.stats import benjamini_hochberg, bootstrap_ci
from radaudit.tables import format_ci, format_number

log = logging.getLogger(__name__)

__all__ = [
    "Params", "METRIC_RANGES", "METRIC_LABELS", "ERROR_CODES", "SCORE_COLUMNS",
    "resolve_metrics", "score_pairs", "undefined_table", "column_key", "ds_rs_long", "score_table",
    "auroc", "auroc_table", "violated_transitions", "kendall_tau", "monotonicity_long", "monotonicity_summary",
    "pairwise_rater_correlations", "mean_pairwise_agreement", "radpref_error_counts", "radpref_agreement",
    "rexval_error_counts", "rexval_agreement", "agreement_table", "make_engine", "build_datasets", "MetaevalData",
    "fig_ds_rs", "fig_auroc_heatmap", "fig_monotonicity", "context_comparison", "fig_auroc_context", "summary_lines", "examples_table",
]

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
SCORE_COLUMNS: tuple[str, ...] = ("pair_id", "study_id", "source", "aspect", "error_type", "significance", "group",
                                  "metric", "score", "score_100", "higher_is_better")
SIG_COLOR, INSIG_COLOR = "#D55E00", "#0072B2"  # Okabe–Ito vermillion (harmful) / blue (harmless)


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the metric meta-evaluation (``params/metric_metaeval/*.yaml``)."""

    datasets: list[str] = Field(default_factory=lambda: ["iu_xray", "chexpert_plus_valid"], description="Datasets whose reports become GT reports (paper: MIMIC-CXR + ReXVal; demo: public IU X-ray + CheXpert Plus).")
    dataset_paths: dict[str, str] = Field(default_factory=dict, description="Folder per dataset for credentialed sets kept outside the data root (e.g. {mimic_cxr: /data/mimic-cxr}).")
    text_field: Literal["findings_or_impression", "findings", "impression", "report"] = Field("findings_or_impression", description="Which report text becomes the GT (the paper uses findings).")
    engine: Literal["rules", "llm"] = Field("rules", description="Rewriting engine: 'rules' (deterministic, seeded, CPU) or 'llm' (the paper's protocol with llm_model).")
    n_per_cell: int = Field(10, ge=1, description="Pairs per Table 2 cell (paper: 10 -> 400 pairs).")
    context: Literal["paper", "full"] = Field("paper", description="'paper': insignificant pairs cut to the edited sentences (§4.2.1); 'full': whole reports for every pair.")
    n_monotonicity_reports: int = Field(4, ge=1, description="GT reports rewritten at all five severity groups (paper: 4).")
    monotonicity_min_sentences: int = Field(4, ge=1, description="Sentences a GT report needs to be used in the monotonicity set.")
    metrics: list[str] | None = Field(None, description="Registry names of the metrics to evaluate; null = every registered metric (those that cannot run here are skipped and listed with the reason).")
    metric_options: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Build options per metric, e.g. {bertscore: {model: roberta-large}}.")
    llm_model: str = Field("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", description="Rewriting LLM for engine=llm (hub id | local folder | pypi: spec); paper: DeepSeek-R1 7B.")
    llm_strategy: dict[str, Any] = Field(default_factory=lambda: {"name": "r1_recommended", "do_sample": True, "temperature": 0.6, "top_p": 0.95}, description="Decoding of the rewriting LLM (paper: 'standard decoding settings'; DeepSeek's R1 recommendation).")
    llm_max_new_tokens: int = Field(4096, ge=1, description="Generation limit of the rewriting LLM (room for the R1 reasoning trace).")
    llm_prompt_template: str | None = Field(None, description="Rewrite prompt template (fields: aspect, aspect_label, aspect_definition, error_type, error_type_definition, significance, significance_definition, example_gt, example_me, report); null = radaudit.perturb.llm.DEFAULT_TEMPLATE.")
    llm_batch_size: int = Field(4, ge=1, description="Prompts per generation batch.")
    llm_dtype: str | None = Field(None, description="dtype of the rewriting LLM: null (float32) | bf16 | fp16.")
    llm_max_tasks_per_cell: int | None = Field(None, ge=1, description="Cap on GT reports tried per cell with the LLM engine (null = until the cell is full).")
    context_ablation: bool = Field(True, description="With context='paper', also score the same rewrites kept whole and compare the AUROC (how much the paper's context design decides the verdict).")
    agreement: bool = Field(True, description="Compute the Table 1 analog on RadPref's three radiologists.")
    rexval_path: str | None = Field(None, description="Folder of the ReXVal files (credentialed): reproduces the paper's Table 1; null = skip.")
    fdr_alpha: float = Field(0.05, gt=0, lt=1, description="Benjamini–Hochberg level for every table with p-values.")
    n_examples: int = Field(1, ge=0, description="Example pairs shown per aspect and significance in the notebook.")

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        from radaudit.metrics import METRICS

        if not v:
            raise ValueError("metrics is empty; give registry names or null for every registered metric")
        bad = [m for m in v if m not in METRICS]
        if bad:
            raise ValueError(f"unknown metrics {bad}; registered: {', '.join(METRICS)}")
        return v


# ----------------------------------------------------------------------------------------------
# scoring


def metric_label(name: str) -> str:
    """Display name: the registry's label, or this experiment's wording in :data:`METRIC_LABELS`."""
    return registry_label(name, METRIC_LABELS)


def resolve_metrics(names: Sequence[str] | None) -> list[str]:
    """``None`` -> every registered metric (registry order); else the names, validated."""
    from radaudit.metrics import METRICS

    if names is None:
        return list(METRICS)
    bad = [m for m in names if m not in METRICS]
    if bad:
        raise ParamsError(f"unknown metrics {bad}; registered: {', '.join(METRICS)}")
    return list(dict.fromkeys(names))


def _check_pairs_frame(pairs: pd.DataFrame) -> None:
    need = {"pair_id", "gt", "rewritten", "aspect", "error_type", "significance"}
    if not isinstance(pairs, pd.DataFrame) or not need <= set(pairs.columns):
        raise DataFormatError(f"pairs must be a DataFrame with columns {sorted(need)} (PairDataset.pairs).")
    if pairs.empty:
        raise DataFormatError("pairs is empty: there is nothing to score (did the pair dataset fill any cell?).")
    if pairs["pair_id"].duplicated().any():
        raise DataFormatError("pairs has duplicate pair_id values.")


def score_pairs(pairs: pd.DataFrame, metrics: Sequence[str] | None = None,
                metric_options: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[pd.DataFrame, dict[str, str]]:
    """Score every pair (GT = reference, ME = candidate) with every metric.

    Returns ``(scores, skipped)``: ``scores`` has one row per pair x metric (:data:`SCORE_COLUMNS`;
    ``score`` raw, ``score_100`` on 0–100, NaN where the metric is undefined: counted, never dropped);
    ``skipped`` maps a metric that cannot run here to the reason.
    """
    from radaudit.metrics import METRICS, MetricUnavailableError, build_metric
    from radaudit.models.resolver import ModelUnavailableError

    _check_pairs_frame(pairs)
    names = resolve_metrics(metrics)
    options = dict(metric_options or {})
    refs, cands = pairs["gt"].astype(str).tolist(), pairs["rewritten"].astype(str).tolist()
    meta = pairs[["pair_id", "study_id", "source", "aspect", "error_type", "significance", "group"]].reset_index(drop=True) \
        if {"study_id", "source", "group"} <= set(pairs.columns) else \
        pairs[["pair_id", "aspect", "error_type", "significance"]].reset_index(drop=True).assign(study_id=pd.NA, source=pd.NA, group=pd.NA)
    frames, skipped = [], {}
    for name in names:
        try:
            res = build_metric(name, **dict(options.get(name, {}))).compute(refs, cands)
        except (MetricUnavailableError, ModelUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("metric %s skipped: %s", name, err)
            continue
        vals = np.asarray(res.per_sample, dtype=float)
        if vals.shape != (len(pairs),):
            raise DataFormatError(f"metric {name!r} returned {vals.shape} per-pair scores for {len(pairs)} pairs.")
        f = meta.copy()
        f["metric"] = name
        f["score"] = vals
        f["score_100"] = 100.0 * vals / METRIC_RANGES.get(name, 1.0)
        f["higher_is_better"] = bool(METRICS.lookup(name).higher_is_better)
        frames.append(f[list(SCORE_COLUMNS)])
    if not frames:
        raise ParamsError(f"none of the metrics {names} can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    out = pd.concat(frames, ignore_index=True)
    out["group"] = out["group"].astype("Int64")
    return out, skipped


def undefined_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per metric: pairs scored, undefined (NaN) scores, and their share."""
    g = scores.groupby("metric", sort=False)["score"]
    out = pd.DataFrame({"pairs": g.size(), "undefined": g.apply(lambda s: int(s.isna().sum()))}).reset_index()
    out["undefined_share"] = out["undefined"] / out["pairs"]
    out.insert(1, "label", out["metric"].map(metric_label))
    return out


# ----------------------------------------------------------------------------------------------
# Discriminative / Robustness Score (Tables 4, 5; Figure 2)


def column_key(aspect: str, error_type: str) -> str:
    """Table 4/5 column of a pair: ``"Location E"`` for the high-impact aspects, ``"Neg. S"`` for the others."""
    from radaudit.perturb.base import HIGH_IMPACT_ASPECTS

    if aspect not in ASPECT_SHORT:
        raise ParamsError(f"unknown aspect {aspect!r}; allowed: {', '.join(ASPECT_SHORT)}")
    if aspect in HIGH_IMPACT_ASPECTS:
        if error_type not in ERROR_CODES:
            raise ParamsError(f"error type {error_type!r} of a {aspect} pair; allowed: {', '.join(ERROR_CODES)}")
        return f"{ASPECT_SHORT[aspect]} {ERROR_CODES[error_type]}"
    return f"{ASPECT_SHORT[aspect]} S"


def table_columns() -> list[str]:
    """Every Table 4/5 score column in the paper's order (20), then ``Overall``."""
    from radaudit.perturb.base import HIGH_IMPACT_ASPECTS

    cols = []
    for a in TABLE_ASPECT_ORDER:
        if a in HIGH_IMPACT_ASPECTS:
            cols += [f"{ASPECT_SHORT[a]} {c}" for c in ("E", "F", "O")]
        else:
            cols.append(f"{ASPECT_SHORT[a]} S")
    return [*cols, "Overall"]


def _mean_ci(values: np.ndarray, *, n_bootstrap: int, confidence: float, seed: int) -> tuple[float, float, float]:
    """Mean of the finite values and its percentile bootstrap CI (NaN bounds with fewer than 2 values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    est = float(v.mean())
    if v.size < 2 or np.ptp(v) == 0:
        return est, (est if v.size >= 2 else math.nan), (est if v.size >= 2 else math.nan)
    ci = bootstrap_ci(v, np.mean, n_resamples=n_bootstrap, confidence=confidence, method="percentile", seed=seed)
    return est, ci.low, ci.high


def ds_rs_long(scores: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """DS (significant pairs) and RS (insignificant pairs) per metric x Table 4/5 column, and Overall.

    One row per metric x significance x column: ``score`` = ``"DS"``/``"RS"``, ``estimate`` (mean of
    ``score_100`` over the defined pairs), ``low``/``high`` (95% percentile bootstrap over pairs), ``n``
    (defined pairs), ``n_undefined``.
    """
    need = {"metric", "aspect", "error_type", "significance", "score_100"}
    if not need <= set(scores.columns):
        raise DataFormatError(f"scores needs columns {sorted(need)} (from score_pairs).")
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    if df.empty:
        raise DataFormatError("no discrimination/robustness pairs in scores (all rows are monotonicity pairs).")
    bad = sorted(set(df["significance"]) - {"significant", "insignificant"})
    if bad:
        raise DataFormatError(f"unknown significance values {bad}; expected significant / insignificant.")
    df = df.assign(column=[column_key(a, e) for a, e in zip(df["aspect"], df["error_type"])])
    rows = []
    for (metric, sig), part in df.groupby(["metric", "significance"], sort=False):
        groups = [(c, g["score_100"].to_numpy(float)) for c, g in part.groupby("column", sort=False)]
        groups.append(("Overall", part["score_100"].to_numpy(float)))
        for col, vals in groups:
            est, lo, hi = _mean_ci(vals, n_bootstrap=n_bootstrap, confidence=confidence,
                                   seed=stable_seed(seed, "dsrs", metric, sig, col))
            rows.append({"metric": metric, "label": metric_label(metric), "score": "DS" if sig == "significant" else "RS",
                         "significance": sig, "column": col, "estimate": est, "low": lo, "high": hi,
                         "n": int(np.isfinite(vals).sum()), "n_undefined": int((~np.isfinite(vals)).sum())})
    return pd.DataFrame(rows)


def score_table(long: pd.DataFrame, score: Literal["DS", "RS"], digits: int = 2) -> pd.DataFrame:
    """Table 4 (``"DS"``) or Table 5 (``"RS"``) layout: one row per metric, the 20 aspect/error-type
    columns in the paper's order, ``Overall`` and its ``CI``. Cells are numbers (x 100); ``CI`` text."""
    if score not in ("DS", "RS"):
        raise ParamsError(f"score must be 'DS' or 'RS', got {score!r}")
    part = long[long["score"] == score]
    if part.empty:
        raise DataFormatError(f"no {score} rows in the long table")
    wide = part.pivot_table(index="label", columns="column", values="estimate", aggfunc="first", sort=False)
    cols = [c for c in table_columns() if c in wide.columns]
    wide = wide[cols].round(digits)
    ov = part[part["column"] == "Overall"].set_index("label")
    wide["CI"] = [f"[{format_number(ov.at[m, 'low'], digits)}, {format_number(ov.at[m, 'high'], digits)}]" for m in wide.index]
    wide.index.name = "Metric"
    return wide.reset_index()


# ----------------------------------------------------------------------------------------------
# AUROC (beyond the paper)


def auroc(insignificant: Sequence[float], significant: Sequence[float]) -> float:
    """``P(X > Y) + ½ P(X = Y)`` for X a score on an insignificant pair, Y on a significant pair.

    = U / (n_x n_y) with U the Mann–Whitney statistic of X (midranks for ties). 1: every harmless
    rewrite scores above every harmful one; 0.5: no separation. Empty or NaN inputs raise.
    """
    x, y = np.asarray(insignificant, dtype=float), np.asarray(significant, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or x.size == 0 or y.size == 0:
        raise ValueError(f"auroc needs two non-empty 1-D samples, got {x.size} insignificant and {y.size} significant scores")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("auroc got NaN scores; drop undefined scores first (and count them)")
    ranks = sps.rankdata(np.concatenate([x, y]))
    u = ranks[: x.size].sum() - x.size * (x.size + 1) / 2
    return float(u / (x.size * y.size))


def _auroc_labels(s: np.ndarray, is_insig: np.ndarray) -> float:
    is_insig = np.asarray(is_insig, dtype=bool)
    return auroc(s[is_insig], s[~is_insig])


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
                    ci = bootstrap_ci((s, lab_ok), _auroc_labels, n_resamples=n_bootstrap, confidence=confidence,
                                      method="percentile", seed=stable_seed(seed, "auroc", metric, aspect), max_failed=0.5)
                    row["low"], row["high"] = ci.low, ci.high
            rows.append(row)
    out = pd.DataFrame(rows)
    _, adj = benjamini_hochberg(out["pvalue"].to_numpy(float), alpha=fdr_alpha)
    out["p_adj"] = adj
    out["separates"] = (out["p_adj"] <= fdr_alpha) & (out["auroc"] > 0.5)
    return out


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
    if ok.sum() < 2 or np.ptp(g[ok]) == 0 or np.ptp(s[ok]) == 0:
        return math.nan
    return float(sps.kendalltau(g[ok], -s[ok]).statistic)


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
        est, lo, hi = _mean_ci(vals, n_bootstrap=n_bootstrap, confidence=confidence, seed=stable_seed(seed, "mono", metric, g))
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
        pooled = sps.kendalltau(g[ok], -s[ok]) if ok.sum() >= 2 and np.ptp(s[ok]) > 0 else None
        row.update(tau=est, tau_low=lo, tau_high=hi, n_reports=len(t), n_reports_undefined_tau=int(np.isnan(t).sum()),
                   tau_pooled=float(pooled.statistic) if pooled is not None else math.nan,
                   pvalue=float(pooled.pvalue) if pooled is not None else math.nan,
                   n_undefined=int((~ok).sum()))
        rows.append(row)
    out = pd.DataFrame(rows)
    _, adj = benjamini_hochberg(out["pvalue"].to_numpy(float), alpha=fdr_alpha)
    out["p_adj"] = adj
    return out


# ----------------------------------------------------------------------------------------------
# inter-annotator agreement (Table 1)


def _corr(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Pearson or Spearman correlation of two aligned vectors; NaN when either is constant or n < 3."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    if method == "spearman":
        x, y = sps.rankdata(x), sps.rankdata(y)
    elif method != "pearson":
        raise ParamsError(f"method must be 'pearson' or 'spearman', got {method!r}")
    x, y = x - x.mean(), y - y.mean()
    return float(np.clip((x @ y) / math.sqrt((x @ x) * (y @ y)), -1.0, 1.0))


def _mean_pairwise(mat: np.ndarray, method: str) -> float:
    """Mean over rater pairs (columns) of their correlation over items (rows); undefined pairs left out."""
    vals = [_corr(mat[:, a], mat[:, b], method) for a, b in itertools.combinations(range(mat.shape[1]), 2)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def _rater_matrices(counts: pd.DataFrame, item: Sequence[str], rater: str, values: Sequence[str]) -> dict[str, pd.DataFrame]:
    item, values = list(item), list(values)
    missing = [c for c in [*item, rater, *values] if c not in counts.columns]
    if missing:
        raise DataFormatError(f"counts lacks the columns {missing}")
    if counts.duplicated([*item, rater]).any():
        raise DataFormatError(f"counts has more than one row per ({', '.join(item)}, {rater})")
    raters = sorted(counts[rater].unique())
    if len(raters) < 2:
        raise DataFormatError(f"agreement needs at least two raters, found {raters}")
    return {v: counts.pivot_table(index=item, columns=rater, values=v, aggfunc="first").reindex(columns=raters)
            for v in values}


def pairwise_rater_correlations(counts: pd.DataFrame, *, item: Sequence[str], rater: str,
                                values: Sequence[str]) -> pd.DataFrame:
    """Pearson and Spearman correlation between every two raters of each count column.

    ``counts``: one row per item x rater (``item`` columns identify a rated report). For raters a < b
    the items both rated are used. One row per value column x rater pair: ``n``, ``pearson``,
    ``pearson_p``, ``spearman``, ``spearman_p`` (NaN when either vector is constant or n < 3).
    """
    rows = []
    for v, wide in _rater_matrices(counts, item, rater, values).items():
        for a, b in itertools.combinations(wide.columns, 2):
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(float), both[b].to_numpy(float)
            row = {"value": v, "rater_a": a, "rater_b": b, "n": len(both), "pearson": math.nan, "pearson_p": math.nan,
                   "spearman": math.nan, "spearman_p": math.nan}
            if len(both) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
                pr, sr = sps.pearsonr(x, y), sps.spearmanr(x, y)
                row.update(pearson=float(pr.statistic), pearson_p=float(pr.pvalue), spearman=float(sr.statistic),
                           spearman_p=float(sr.pvalue))
            rows.append(row)
    return pd.DataFrame(rows)


def mean_pairwise_agreement(counts: pd.DataFrame, *, item: Sequence[str], rater: str, values: Sequence[str],
                            method: Literal["pearson", "spearman"] = "pearson") -> dict[str, float]:
    """``{value column: mean over rater pairs of the correlation}`` (undefined pairs left out)."""
    return {v: _mean_pairwise(w.to_numpy(float), method) for v, w in _rater_matrices(counts, item, rater, values).items()}


#: RadPref error types -> the paper's error types; significance mapping (module docstring).
RADPREF_TYPES: dict[str, str] = {"false": "fabrication", "missing": "omission", "attribute": "inaccuracy"}
RADPREF_SIGNIFICANT = ("urgent", "actionable_not_urgent")
RADPREF_INSIGNIFICANT = ("not_actionable_not_urgent", "benign_expected")
AGREEMENT_TYPES: tuple[str, ...] = ("fabrication", "omission", "inaccuracy")


def radpref_error_counts(folder: str | Path) -> pd.DataFrame:
    """Per case x candidate x rater: errors per paper error type x significance from RadPref's raw
    annotation files (false finding = fabrication, missing finding = omission, attribute error =
    inaccuracy; significance as the module docstring). Columns ``case_id, candidate, candidate_source,
    rater`` and ``<significant|insignificant>_<type>`` for the three types, plus ``..._total``."""
    from radaudit.data.io import read_json_checked
    from radaudit.data.radpref import ATTRIBUTE_LEVELS, CANDIDATES, RATER_FILES, SIGNIFICANCE, _read_cases

    folder = Path(folder)
    cases = _read_cases(folder)
    rows = []
    for n, rel in RATER_FILES.items():
        data = read_json_checked(folder / rel, dataset="radpref_annotations", top_level=dict,
                                 expected="a JSON object with 'user_id' and 'annotations'")
        ann = data.get("annotations")
        if not isinstance(ann, dict):
            raise DataFormatError(f"radpref: {folder / rel} has no 'annotations' object")
        rater_id = int(data.get("user_id", n))
        for case in cases:
            cid = str(case["id"])
            for cand in CANDIDATES:
                a = (ann.get(cid) or {}).get(cand)
                if a is None:
                    continue
                c = {f"{s}_{t}": 0 for s in ("significant", "insignificant") for t in AGREEMENT_TYPES}

                def add(level: str, etype: str, where: str) -> None:
                    if level in RADPREF_SIGNIFICANT or level == "significant":
                        c[f"significant_{etype}"] += 1
                    elif level in RADPREF_INSIGNIFICANT or level == "negligible":
                        c[f"insignificant_{etype}"] += 1
                    else:
                        raise DataFormatError(f"radpref: {where}: significance {level!r}; expected one of "
                                              f"{SIGNIFICANCE} or {ATTRIBUTE_LEVELS}")

                where = f"{rel}: case {cid} {cand}"
                for idx, err in (a.get("finding_errors") or {}).items():
                    if err.get("error_type") == "false":
                        add(err.get("clinical_significance"), "fabrication", f"{where} finding {idx}")
                    elif err.get("error_type") == "attribute":
                        for attr, level in (err.get("attributes") or {}).items():
                            add(level, "inaccuracy", f"{where} finding {idx} attribute {attr}")
                    else:
                        raise DataFormatError(f"radpref: {where}: finding {idx} has error_type {err.get('error_type')!r}")
                for idx, miss in (a.get("missing_findings") or {}).items():
                    add((miss or {}).get("clinical_significance"), "omission", f"{where} missing {idx}")
                rows.append({"case_id": cid, "candidate": cand, "candidate_source": case[f"{cand}_source"],
                             "rater": rater_id, **c})
    out = pd.DataFrame(rows)
    for s in ("significant", "insignificant"):
        out[f"{s}_total"] = out[[f"{s}_{t}" for t in AGREEMENT_TYPES]].sum(axis=1)
    return out.sort_values(["case_id", "candidate", "rater"], kind="stable").reset_index(drop=True)


def _agreement_cells(groups: Mapping[str, pd.DataFrame], *, item: list[str], cluster: str, rater: str,
                     values: list[str], n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """Mean pairwise Pearson and Spearman per report set x value, with a cluster bootstrap CI
    (``cluster`` resampled with replacement, all its items kept)."""
    rows = []
    for gname, sub in groups.items():
        mats = _rater_matrices(sub, item, rater, values)
        for v, wide in mats.items():
            mat = wide.to_numpy(float)
            units = wide.index.get_level_values(cluster).to_numpy() if cluster in wide.index.names else np.arange(len(wide))
            for method in ("pearson", "spearman"):
                est = _mean_pairwise(mat, method)
                row = {"reports": gname, "method": method, "value": v, "estimate": est, "low": math.nan,
                       "high": math.nan, "n_items": int(len(wide)), "n_raters": int(mat.shape[1])}
                if n_bootstrap and np.isfinite(est) and len(np.unique(units)) >= 2:
                    try:
                        ci = bootstrap_ci(np.arange(len(mat)), lambda idx, m=mat, meth=method: _mean_pairwise(m[idx], meth),
                                          units=units, n_resamples=n_bootstrap, confidence=confidence, method="percentile",
                                          max_failed=0.5, seed=stable_seed(seed, "agree", gname, method, v))
                        row["low"], row["high"] = ci.low, ci.high
                    except Exception as err:  # noqa: BLE001 - a CI that cannot be formed stays n/a; the reason is logged
                        log.info("agreement CI %s/%s/%s not computed: %s", gname, method, v, err)
                rows.append(row)
    return pd.DataFrame(rows)


def radpref_agreement(counts: pd.DataFrame, *, n_bootstrap: int = 0, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Table 1 analog on RadPref: mean pairwise Pearson / Spearman between the three radiologists, per
    candidate source (``gpt``, ``medgemma``, ``all``) x significance x error type (+ total). CI:
    bootstrap over cases (a case's two candidates stay together). Long form."""
    values = [f"{s}_{t}" for s in ("significant", "insignificant") for t in (*AGREEMENT_TYPES, "total")]
    groups = {f"{src} reports": g for src, g in counts.groupby("candidate_source", sort=True)}
    groups["all reports"] = counts
    return _agreement_cells(groups, item=["case_id", "candidate"], cluster="case_id", rater="rater",
                            values=values, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)


REXVAL_CANDIDATE_LABELS = {"bertscore": "BERTScore reports", "bleu": "BLEU reports", "radgraph": "Radgraph reports",
                           "s_emb": "S-Emb reports"}


def rexval_error_counts(errors: pd.DataFrame) -> pd.DataFrame:
    """ReXVal's long error table (``load_dataset("rexval", table="errors")``) as one row per study x
    candidate x rater with ``significant_<1..6>`` / ``insignificant_<1..6>`` counts (missing = 0)."""
    need = {"study_number", "candidate_type", "rater_index", "error_category", "num_errors_significant",
            "num_errors_insignificant"}
    if not need <= set(errors.columns):
        raise DataFormatError(f"ReXVal errors need columns {sorted(need)}; load them with load_dataset('rexval', table='errors').")
    e = errors.assign(error_category=errors["error_category"].astype(int))
    keys = e[["study_number", "candidate_type", "rater_index"]].drop_duplicates()
    out = keys.copy()
    for s in ("significant", "insignificant"):
        wide = e.pivot_table(index=["study_number", "candidate_type", "rater_index"], columns="error_category",
                             values=f"num_errors_{s}", aggfunc="sum")
        wide = wide.reindex(columns=range(1, 7)).fillna(0)
        wide.columns = [f"{s}_{c}" for c in wide.columns]
        out = out.merge(wide.reset_index(), on=["study_number", "candidate_type", "rater_index"], how="left")
    cols = [c for c in out.columns if c.startswith(("significant_", "insignificant_"))]
    out[cols] = out[cols].fillna(0).astype(int)
    return out.sort_values(["candidate_type", "study_number", "rater_index"]).reset_index(drop=True)


def rexval_agreement(counts: pd.DataFrame, *, n_bootstrap: int = 0, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The paper's Table 1 on ReXVal: per candidate type x significance x category 1–6, the mean
    pairwise Pearson (and Spearman) between raters across the studies. Long form."""
    values = [f"{s}_{c}" for s in ("significant", "insignificant") for c in range(1, 7)]
    groups = {REXVAL_CANDIDATE_LABELS.get(k, f"{k} reports"): g for k, g in counts.groupby("candidate_type", sort=True)}
    return _agreement_cells(groups, item=["study_number", "candidate_type"], cluster="study_number",
                            rater="rater_index", values=values, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)


def agreement_table(long: pd.DataFrame, method: Literal["pearson", "spearman"] = "pearson", *, with_ci: bool = False,
                    digits: int = 3) -> pd.DataFrame:
    """Table 1 layout: rows = report sets, columns = ``Significant <type>`` ... ``Insignificant <type>``."""
    part = long[long["method"] == method]
    if part.empty:
        raise DataFormatError(f"no {method} rows in the agreement table")
    part = part.assign(cell=[format_ci(e, lo, hi, digits) if with_ci else format_number(e, digits)
                             for e, lo, hi in zip(part["estimate"], part["low"], part["high"])],
                       col=[v.replace("insignificant_", "Insignificant ").replace("significant_", "Significant ")
                            for v in part["value"]])
    wide = part.pivot_table(index="reports", columns="col", values="cell", aggfunc="first", sort=False)
    wide = wide[list(dict.fromkeys(part["col"]))]
    wide.index.name = "Reports"
    return wide.reset_index()


# ----------------------------------------------------------------------------------------------
# building the data


def make_engine(P: Params, cache: Any = True) -> Any:
    """``"rules"`` or an :class:`~radaudit.perturb.llm.LLMEngine` on ``P.llm_model`` (paper preset)."""
    if P.engine == "rules":
        return "rules"
    from radaudit.perturb.llm import DEFAULT_TEMPLATE, LLMEngine, generator_from_model

    gen = generator_from_model(P.llm_model, strategy=P.llm_strategy, max_new_tokens=P.llm_max_new_tokens, seed=P.seed,
                               batch_size=P.llm_batch_size, cache=cache, dtype=P.llm_dtype)
    return LLMEngine(gen, template=P.llm_prompt_template or DEFAULT_TEMPLATE, batched=True, model=P.llm_model,
                     batch_hint=P.llm_batch_size)


@dataclass
class MetaevalData:
    """The run's data: ``pairs`` (the balanced pair dataset), ``mono`` (the monotonicity set),
    ``full`` (the same rewrites kept whole, for the context ablation; ``None`` when not asked),
    ``reports`` (the GT reports drawn from)."""

    pairs: Any
    mono: Any
    full: Any
    reports: pd.DataFrame


def build_datasets(P: Params, *, engine: Any = None, labeler: Any = None) -> MetaevalData:
    """The pair dataset, the monotonicity set and (for the context ablation) the same rewrites with full
    context, for the params (see :mod:`radaudit.perturb.dataset`). The monotonicity set is rule-based
    with either engine (its groups are defined by rules)."""
    from radaudit.data import fingerprint, load_dataset
    from radaudit.perturb.dataset import build_monotonicity_set, build_pair_dataset, gt_reports
    from radaudit.text.labeler import ChexpertLabeler

    frames, prov = [], {}
    for name in P.datasets:
        path = P.dataset_paths.get(name)
        df = gt_reports(load_dataset(name, P.data_root, path=path), text_field=P.text_field, source=name)
        frames.append(df)
        prov[name] = {"fingerprint": fingerprint(name, P.data_root, path), "n_reports": int(len(df)), "text_field": P.text_field}
    reports = pd.concat(frames, ignore_index=True)
    lab = labeler if labeler is not None else ChexpertLabeler(P.data_root)
    eng = engine if engine is not None else make_engine(P)
    kw = dict(n_per_cell=P.n_per_cell, seed=P.seed, labeler=lab, sources=prov,
              max_tasks_per_cell=P.llm_max_tasks_per_cell if P.engine == "llm" else None)
    pairs = build_pair_dataset(reports, eng, context=P.context, **kw)
    full = build_pair_dataset(reports, eng, context="full", **kw) if P.context_ablation and P.context == "paper" else None
    mono = build_monotonicity_set(reports, seed=P.seed, n_reports=P.n_monotonicity_reports, labeler=lab,
                                  min_sentences=P.monotonicity_min_sentences, sources=prov)
    return MetaevalData(pairs, mono, full, reports)


def examples_table(pairs: pd.DataFrame, n: int = 1) -> pd.DataFrame:
    """``n`` pairs per aspect x significance: the edited GT text, the ME text and the explanation."""
    rows = []
    for (a, s), g in pairs.groupby(["aspect", "significance"], sort=False):
        for r in g.head(n).itertuples(index=False):
            rows.append({"aspect": a, "significance": s, "error_type": r.error_type, "GT (edited part)": r.gt_edit_text,
                         "ME (edited part)": r.me_edit_text, "explanation": r.explanation})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# figures


def _metric_order(long: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(long["label"]))


def fig_ds_rs(long: pd.DataFrame, auroc_tab: pd.DataFrame | None = None):
    """Figure 2: per metric, the Discriminative Score (mean on significant pairs, vermillion) and the
    Robustness Score (mean on insignificant pairs, blue), 95% CIs, joined by a line. A metric that
    separates harmful from harmless rewrites has its blue dot well right of its vermillion dot; the
    overall AUROC is printed at the right."""
    import matplotlib.pyplot as plt

    ov = long[long["column"] == "Overall"]
    if ov.empty:
        raise DataFormatError("fig_ds_rs needs the Overall rows of ds_rs_long")
    labels = _metric_order(ov)
    fig, ax = plt.subplots(figsize=(7.8, 0.42 * len(labels) + 1.6))
    y = np.arange(len(labels))[::-1]
    pos = dict(zip(labels, y))
    ds = ov[ov["score"] == "DS"].set_index("label")
    rs = ov[ov["score"] == "RS"].set_index("label")
    for lab in labels:
        if lab in ds.index and lab in rs.index:
            ax.plot([ds.at[lab, "estimate"], rs.at[lab, "estimate"]], [pos[lab]] * 2, color="#999999", lw=1.2, zorder=1)
    for part, color, name in ((ds, SIG_COLOR, "Discriminative Score: significant errors (lower = better)"),
                              (rs, INSIG_COLOR, "Robustness Score: insignificant changes (higher = better)")):
        yy = np.array([pos[lab] for lab in part.index])
        e = part["estimate"].to_numpy(float)
        err = np.vstack([e - part["low"].to_numpy(float), part["high"].to_numpy(float) - e])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.errorbar(e, yy, xerr=err, fmt="o", color=color, ms=6, capsize=2.5, lw=1.2, label=name, zorder=2)
    ax.set_yticks(y, labels)
    ax.set_xlabel("mean metric score on GT–ME pairs (× 100), 95% CI")
    lo = float(np.nanmin(ov["low"].fillna(ov["estimate"])))
    ax.set_xlim(max(0.0, lo - 5), 101)
    if auroc_tab is not None:
        au = auroc_tab[auroc_tab["aspect"] == "Overall"].set_index("label")["auroc"]
        for lab in labels:
            if lab in au.index:
                ax.annotate(f"AUROC {au[lab]:.2f}", (1.0, pos[lab]), xycoords=("axes fraction", "data"), xytext=(8, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=8, color="#333333",
                            annotation_clip=False)
    ax.set_title("Does the metric punish harmful errors more than harmless changes?", fontsize=10)
    handles, names = ax.get_legend_handles_labels()
    height = fig.get_size_inches()[1]
    fig.legend(handles, names, loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.5 / height, 1, 1))
    return fig


def fig_auroc_heatmap(auroc_tab: pd.DataFrame, *, fdr_alpha: float = 0.05):
    """AUROC per metric (rows) x aspect (columns), annotated; 0.5 (white) = cannot tell significant from
    insignificant errors, blue = ranks harmless changes above harmful errors, red = the reverse.
    Cells whose BH-adjusted p-value is above ``fdr_alpha`` are shown in grey text."""
    import matplotlib.pyplot as plt
    from radaudit.perturb.base import ASPECT_LABELS, ASPECTS

    t = auroc_tab.copy()
    aspects = [a for a in ASPECTS if a in set(t["aspect"])] + ["Overall"]
    labels = list(dict.fromkeys(t["label"]))
    mat = t.pivot_table(index="label", columns="aspect", values="auroc", aggfunc="first").reindex(index=labels, columns=aspects)
    sig = t.pivot_table(index="label", columns="aspect", values="separates", aggfunc="first").reindex(index=labels, columns=aspects)
    padj = t.pivot_table(index="label", columns="aspect", values="p_adj", aggfunc="first").reindex(index=labels, columns=aspects)
    fig, ax = plt.subplots(figsize=(0.78 * len(aspects) + 3.2, 0.42 * len(labels) + 2.2))
    im = ax.imshow(mat.to_numpy(float), cmap="RdBu", vmin=0, vmax=1, aspect="auto")
    for i in range(len(labels)):
        for j in range(len(aspects)):
            v = mat.iat[i, j]
            if not np.isfinite(v):
                continue
            strong = bool(padj.iat[i, j] <= fdr_alpha) if np.isfinite(padj.iat[i, j]) else False
            color = ("white" if abs(v - 0.5) > 0.3 else "black") if strong else "#777777"
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color=color,
                    fontweight="bold" if bool(sig.iat[i, j]) else "normal")
    ax.set_xticks(range(len(aspects)), [ASPECT_LABELS.get(a, a) for a in aspects], rotation=40, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.axvline(len(aspects) - 1.5, color="black", lw=1)
    ax.grid(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    cb.set_ticks([0, 0.5, 1])
    cb.set_ticklabels(["0: harmful\nerror higher", "0.5: coin\nflip", "1: harmless\nchange higher"], fontsize=7)
    cb.set_label("AUROC", fontsize=8)
    ax.set_title("Can the metric tell a harmful error from a harmless change?\n"
                 f"(0.5 = coin flip; bold = separates after BH at {fdr_alpha:g}; grey = not significant)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_monotonicity(mono_long: pd.DataFrame, summary: pd.DataFrame | None = None, *, ncols: int = 4):
    """Figure 4: mean score (× 100, 95% CI over reports) per severity group, one panel per metric with
    its own y-axis. Rising segments (a violated transition: the score goes *up* as errors get worse)
    are drawn in vermillion; the panel title gives Kendall τ (+1 = always falls)."""
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(mono_long["label"]))
    n = len(labels)
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.5 * nrows + 0.9), squeeze=False, sharex=True)
    tau = summary.set_index("label") if summary is not None else None
    for k, lab in enumerate(labels):
        ax = axes[k // ncols][k % ncols]
        d = mono_long[mono_long["label"] == lab].sort_values("group")
        g, e = d["group"].to_numpy(int), d["estimate"].to_numpy(float)
        lo, hi = d["low"].to_numpy(float), d["high"].to_numpy(float)
        ax.fill_between(g, np.where(np.isfinite(lo), lo, e), np.where(np.isfinite(hi), hi, e), color=INSIG_COLOR, alpha=0.15, lw=0)
        for i in range(len(g) - 1):
            up = e[i + 1] > e[i]
            ax.plot(g[i:i + 2], e[i:i + 2], color=SIG_COLOR if up else INSIG_COLOR, lw=2.4 if up else 1.6)
        ax.plot(g, e, "o", color="black", ms=3.5, zorder=3)
        title = lab
        if tau is not None and lab in tau.index:
            t = tau.loc[lab]
            title += f"\nτ = {format_number(t['tau'])}, {format_number(t['violations'], 0)} rise(s)"
        ax.set_title(title, fontsize=8.5)
        ax.set_xticks(range(5))
        ax.tick_params(labelsize=7.5, labelbottom=True)
        if k + ncols >= n:  # the lowest panel of its column
            ax.set_xlabel("severity group", fontsize=8)
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle("Does the score fall as the errors get worse?  0 stylistic · 1 minor insignificant · "
                 "2 one significant · 3 three significant · 4 contradiction\n(blue = falls as it should, "
                 "vermillion = rises; band = 95% CI over reports; score × 100)", fontsize=9)
    fig.tight_layout()
    return fig


def context_comparison(auroc_paper: pd.DataFrame, auroc_full: pd.DataFrame) -> pd.DataFrame:
    """Overall AUROC per metric with the paper's reduced context for insignificant pairs vs the same
    rewrites kept whole (``context="full"``): how much of the separation is the context design."""
    cols = ["label", "auroc", "low", "high", "p_adj"]
    a = auroc_paper[auroc_paper["aspect"] == "Overall"][["metric", *cols]]
    b = auroc_full[auroc_full["aspect"] == "Overall"][["metric", *cols]]
    out = a.merge(b.drop(columns="label"), on="metric", suffixes=("_paper", "_full"))
    out["change"] = out["auroc_full"] - out["auroc_paper"]
    return out


def fig_auroc_context(comp: pd.DataFrame):
    """Overall AUROC per metric (95% CI): insignificant pairs cut to the edited sentences as in the paper
    (open circles) vs the same rewrites in whole reports (filled); 0.5 = chance."""
    import matplotlib.pyplot as plt

    labels = comp["label"].tolist()
    y = np.arange(len(labels))[::-1]
    fig, ax = plt.subplots(figsize=(7.2, 0.38 * len(labels) + 1.9))
    for suffix, mk, face, name, dy in (("paper", "o", "white", "insignificant pairs cut to the edited sentences (paper §4.2.1)", 0.14),
                                        ("full", "o", "#009E73", "same rewrites, whole reports for every pair", -0.14)):
        e = comp[f"auroc_{suffix}"].to_numpy(float)
        err = np.vstack([e - comp[f"low_{suffix}"].to_numpy(float), comp[f"high_{suffix}"].to_numpy(float) - e])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.errorbar(e, y + dy, xerr=err, fmt=mk, mfc=face, mec="#009E73", ecolor="#009E73", ms=6, capsize=2, lw=1, label=name)
    ax.axvline(0.5, color="#888888", ls="--", lw=1)
    ax.text(0.51, 0.995, "chance", transform=ax.get_xaxis_transform(), fontsize=8, color="#666666", va="top", ha="left")
    ax.set_xlim(0, 1)
    ax.set_yticks(y, labels)
    ax.set_xlabel("AUROC: P(harmless change scores higher than harmful error), 95% CI")
    ax.set_title("How much does the context design decide the verdict?", fontsize=10)
    height = fig.get_size_inches()[1]
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.55 / height, 1, 1))
    return fig


# ----------------------------------------------------------------------------------------------
# findings in words


def summary_lines(long: pd.DataFrame, auroc_tab: pd.DataFrame, mono: pd.DataFrame | None = None,
                  agreement: pd.DataFrame | None = None, *, fdr_alpha: float = 0.05) -> list[str]:
    """Plain-language findings computed from the run's tables (the notebook prints them)."""
    lines = []
    ov = long[long["column"] == "Overall"].pivot_table(index="label", columns="score", values="estimate", sort=False)
    au = auroc_tab[auroc_tab["aspect"] == "Overall"].set_index("label")
    if {"DS", "RS"} <= set(ov.columns):
        gap = (ov["RS"] - ov["DS"]).sort_values(ascending=False)
        inverted = [m for m in gap.index if gap[m] < 0]
        lines.append("**Discrimination vs robustness.** Mean score on harmful (significant) vs harmless (insignificant) "
                     "rewrites, × 100: " + "; ".join(f"{m} {ov.at[m, 'DS']:.1f} vs {ov.at[m, 'RS']:.1f}" for m in gap.index)
                     + "." + (f" **{', '.join(inverted)}** score harmful rewrites *higher* than harmless ones on average."
                              if inverted else ""))
    if not au.empty:
        best = au["auroc"].idxmax()
        worst = au["auroc"].idxmin()
        n_sep = int(au["separates"].sum())
        lines.append(f"**Separation (AUROC, all aspects).** Best: {best} {format_ci(au.at[best, 'auroc'], au.at[best, 'low'], au.at[best, 'high'])}; "
                     f"worst: {worst} {format_ci(au.at[worst, 'auroc'], au.at[worst, 'low'], au.at[worst, 'high'])}. "
                     f"{n_sep} of {len(au)} metrics separate significant from insignificant errors better than chance "
                     f"(BH-adjusted p ≤ {fdr_alpha:g}); none reaches the AUROC of 1 a clinically sound metric would have."
                     if au["auroc"].max() < 0.999 else
                     f"{n_sep} of {len(au)} metrics separate significant from insignificant errors (BH p ≤ {fdr_alpha:g}).")
        per = auroc_tab[auroc_tab["aspect"] != "Overall"]
        if not per.empty:
            worst_aspects = per.groupby("aspect")["auroc"].median().sort_values()
            below = [a for a, v in worst_aspects.items() if v < 0.5]
            lines.append("**Where metrics fail.** Median AUROC over metrics per aspect, lowest first: "
                         + ", ".join(f"{a} {v:.2f}" for a, v in worst_aspects.head(5).items()) + "."
                         + (f" On {', '.join(below)} the typical metric ranks the *harmful* rewrite above the harmless one."
                            if below else ""))
    if mono is not None and not mono.empty:
        viol = mono.dropna(subset=["violations"])
        perfect = viol[viol["violations"] == 0]["label"].tolist()
        common = pd.Series([t for v in viol["violated"] for t in str(v).split(", ") if "→" in t]).value_counts()
        lines.append(f"**Monotonicity.** {len(perfect)} of {len(viol)} metrics fall at every step from group 0 to 4"
                     + (f" ({', '.join(perfect)})" if perfect else "") + ". "
                     + ("Most often violated transitions: " + ", ".join(f"{t} ({c} metrics)" for t, c in common.head(3).items()) + "."
                        if len(common) else "No transition is violated.")
                     + " Mean within-report Kendall τ ranges from "
                     f"{format_number(mono['tau'].min())} to {format_number(mono['tau'].max())}.")
    if agreement is not None and not agreement.empty:
        p = agreement[(agreement["method"] == "pearson") & (agreement["reports"] == "all reports")].set_index("value")["estimate"]
        p = p.dropna()
        if not p.empty:
            low = [k.replace("_", " ") for k, v in p.items() if v < 0.6]
            lines.append("**How far do radiologists agree? (Table 1 analog, RadPref)** Mean pairwise Pearson of the three "
                         "radiologists' error counts ranges from " f"{format_number(p.min())} ({p.idxmin().replace('_', ' ')}) to "
                         f"{format_number(p.max())} ({p.idxmax().replace('_', ' ')}); the paper found 0.0–0.55 between ReXVal's six "
                         "radiologists. " + (f"Agreement is low (< 0.6) for {', '.join(low)}: there, a metric's correlation with "
                                             "radiologists' counts is capped by the radiologists' own disagreement and cannot "
                                             "validate it." if low else "Agreement is at least moderate for every error type here."))
    return lines
