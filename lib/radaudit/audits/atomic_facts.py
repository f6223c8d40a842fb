"""Experiment 3 — atomic_facts: AtomiMed and its agreement with radiologists.

Chang et al., "AtomiMed: Hierarchical Atomic Fact-Checking for Universal Clinical-Aware Medical
Report Evaluation" (``../shared/papers/002_fa40d23387a3f426.txt``). The scorer itself lives in
:mod:`radaudit.atomic` (registered as metric ``atomimed``); this module measures how well it — and
every other metric of the registry — agrees with radiologists, and lays the results out as the
paper's Table 2 (correlation with error counts), Table 3 (pairwise preference) and Fig. 4 (granular
per-attribute and per-anatomical-system accuracy).

Inputs (one shape for every reader study)
-----------------------------------------
:class:`ReaderStudy`: ``candidates`` (one row per case × candidate report: ``case_id``,
``candidate``, ``system``, ``reference``, ``prediction``) and ``judgements`` (one row per case ×
candidate × radiologist: ``rater``, ``total_errors``, ``significant_errors``, ``rating``).
:func:`radpref_study` (public: 100 cases × 2 candidates × 3 radiologists) and
:func:`rexval_study` (credentialed: 50 studies × 4 candidates × 6 radiologists) build it.

Choices where the paper is silent
---------------------------------
- **RadPref error counts.** ``total_errors`` = false findings + missing findings + wrong attributes
  (each significant or negligible wrong attribute counts once, as ReXVal counts a wrong location
  and a wrong severity as two errors). ``significant_errors`` = false + missing findings the
  radiologist graded ``urgent`` or ``actionable_not_urgent`` + wrong attributes graded
  ``significant``. ReXVal: the six categories summed, all / clinically significant only.
- **Orientation.** Every coefficient is oriented so that +1 is perfect agreement: τ(score, −errors)
  and τ(score, rating) (all registry metrics are higher-is-better).
- **Coefficients.** Kendall's τ-b and Spearman's ρ (average ranks for ties), as
  :func:`scipy.stats.kendalltau` / :func:`scipy.stats.spearmanr` define them; computed vectorised
  over all metrics and targets at once so the bootstrap is cheap (tests check the equality with
  scipy and hand-computed values).
- **Per radiologist and mean.** Each radiologist's own counts, and the mean over radiologists. The
  ``inter-rater`` row is a human ceiling: each radiologist against the mean of the others, averaged
  over radiologists.
- **CIs.** Percentile bootstrap over *cases* (a case keeps all its candidates; cluster bootstrap),
  the same resampled cases for every metric in a replicate, so differences τ(AtomiMed) − τ(other)
  get paired CIs and bootstrap p-values (Benjamini–Hochberg across baselines).
- **Pairwise preference (Table 3 analog).** The paper compares metric-induced and human preference
  matrices per case. Here, per case and ordered pair of candidates (a, b): the human entry is the
  share of radiologists preferring a (higher rating — or fewer errors, ``preference_from``), a tie
  counting ½; the metric entry is 1, ½ or 0 as the metric scores a higher, equal (within
  ``tie_tolerance``) or lower than b. **ACC**: over entries where the human consensus is strict
  (≠ ½), the share the metric orders the same way (a metric tie scores ½). **MAE**: mean
  |metric entry − human entry| over all off-diagonal entries. **τ**: Kendall τ-b between the
  vectorised off-diagonal entries of the two matrices (both orders of each pair, so the result does
  not depend on which candidate is called C1).
- **Granular analysis (Fig. 4).** From the audit trace: per system compared and per attribute
  facet, the attribute-level F1 over that facet's questions pooled across the system's reports
  (P = matched INF→GT / asked INF→GT, R likewise GT→INF); per anatomical system (:func:`system_of`),
  the disease-level F1 over the questions about findings of that system. By default only findings
  asserted present count (``present_only``): pertinent negatives ("no pneumothorax") are easy to
  match and would flatten every row. Cells with fewer than ``min_questions`` questions are blank.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from radaudit.config import BaseParams
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.base import metric_label
from radaudit.session import stable_seed
from radaudit.tables import format_ci, format_number

log = logging.getLogger(__name__)

__all__ = [
    "ANATOMICAL_SYSTEMS",
    "CANDIDATE_COLUMNS",
    "JUDGEMENT_COLUMNS",
    "METRIC_LABELS",
    "TARGETS",
    "MetricScores",
    "Params",
    "ReaderStudy",
    "agreement_coefficients",
    "correlation_table",
    "distinct_metrics",
    "fig_correlation",
    "fig_granular",
    "fig_preference",
    "generations_study",
    "granular_table",
    "human_preference",
    "kendall_tau_b",
    "metric_preference",
    "preference_agreement",
    "preference_table",
    "radpref_study",
    "resolve_baselines",
    "rexval_study",
    "score_study",
    "spearman_rho",
    "summary_lines",
    "system_of",
    "table2",
    "table3",
    "target_matrix",
]

CANDIDATE_COLUMNS: tuple[str, ...] = ("case_id", "candidate", "system", "reference", "prediction")
JUDGEMENT_COLUMNS: tuple[str, ...] = ("case_id", "candidate", "rater", "total_errors", "significant_errors", "rating")
TARGETS: dict[str, str] = {
    "total_errors": "total errors",
    "significant_errors": "clinically significant errors",
    "rating": "1–5 rating",
}
"""Radiologist judgements a metric is correlated with (column → label)."""
_NEGATED = {"total_errors", "significant_errors"}  # lower is better: correlate with the negative
SIGNIFICANT_LEVELS = ("urgent", "actionable_not_urgent")
MEAN_RATER = "mean"
INTER_RATER = "inter-rater"

METRIC_LABELS: dict[str, str] = {
    "atomimed": "AtomiMed F1", "atomimed_disease": "AtomiMed disease F1", "atomimed_attribute": "AtomiMed attribute F1",
    "cider": "CIDEr",
}
"""Display names of AtomiMed's sub-scores and those that differ from the registry's labels
(:func:`radaudit.metrics.base.metric_label`)."""

# ----------------------------------------------------------------------------------------------
# anatomical systems (Fig. 4b)

#: anatomical system -> canonical finding names of the rule lexicon (radaudit.atomic.lexicon) it holds.
ANATOMICAL_SYSTEMS: dict[str, tuple[str, ...]] = {
    "Lungs & airways": (
        "consolidation", "atelectasis", "pneumonia", "aspiration", "pulmonary edema", "opacity", "nodule", "mass",
        "metastatic disease", "granuloma", "lung lesion", "emphysema", "copd", "hyperinflation", "low lung volumes",
        "interstitial abnormality", "fibrosis", "scarring", "peribronchial thickening", "bronchiectasis",
        "airway disease", "volume loss", "air trapping", "increased lung markings", "calcification",
    ),
    "Pleura": ("pleural effusion", "pneumothorax", "pleural thickening"),
    "Heart & vessels": (
        "cardiomegaly", "pericardial effusion", "vascular congestion", "heart failure", "aortic atherosclerosis",
        "tortuous aorta", "aortic aneurysm",
    ),
    "Mediastinum & hila": ("widened mediastinum", "pneumomediastinum", "lymphadenopathy", "hilar enlargement"),
    "Bones & soft tissue": ("fracture", "scoliosis", "kyphosis", "degenerative change", "osteopenia",
                            "subcutaneous emphysema"),
    "Diaphragm & abdomen": ("elevated hemidiaphragm", "hiatal hernia", "pneumoperitoneum"),
    "Devices & surgery": ("postsurgical change", "foreign body"),
}
OTHER_SYSTEM = "Other"
#: display names of systems compared (RadPref's sources); others are shown as they are.
SYSTEM_LABELS: dict[str, str] = {"gpt": "GPT", "medgemma": "MedGemma"}
# keyword fallback for free-text (LLM) finding names, checked in this order
_SYSTEM_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("Devices & surgery", r"tube|catheter|\bline\b|picc|pacemaker|pacer|\bicd\b|lead|wire|clip|staple|stent|port\b|"
                          r"device|drain|valve|prosthe|hardware|sternotomy|post-?surgical|post-?operative|ectomy|plasty"),
    ("Pleura", r"pleur|pneumothora|effusion|hydrothora|costophrenic"),
    ("Heart & vessels", r"heart|cardi|aort|vascul|pericard|atri|ventric|coronar|arter|vein|venous"),
    ("Mediastinum & hila", r"mediastin|hil(?:a|um|ar)|lymph|thymus|trachea|thyroid"),
    ("Bones & soft tissue", r"bone|fractur|spine|spinal|vertebr|rib\b|ribs|scolio|kypho|osteo|clavic|scapul|"
                            r"shoulder|humer|degenerat|soft tissue|subcutaneous"),
    ("Diaphragm & abdomen", r"diaphragm|hernia|bowel|abdom|liver|hepat|gastr|stomach|peritone|spleen|kidney|colon"),
    ("Lungs & airways", r"lung|pulmon|pneumo|bronch|airspace|air space|alveol|interstiti|atelecta|consolidat|"
                        r"opacit|nodul|mass|emphysem|fibros|granulom|infiltrat|edema|scar"),
)


def system_of(finding: str) -> str:
    """The anatomical system of a finding name (:data:`ANATOMICAL_SYSTEMS`).

    Exact canonical names (the rule backend's) first, device types (``"central venous catheter"``)
    to ``"Devices & surgery"``, then keywords for free-text names an LLM writes; ``"Other"`` if none.
    """
    from radaudit.text.attributes import DEVICE_TYPES

    name = " ".join(str(finding).lower().replace("_", " ").split())
    for system, names in ANATOMICAL_SYSTEMS.items():
        if name in names:
            return system
    if name in {k.replace("_", " ") for k in DEVICE_TYPES}:
        return "Devices & surgery"
    for system, pattern in _SYSTEM_KEYWORDS:
        if re.search(pattern, name):
            return system
    return OTHER_SYSTEM


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the atomic_facts experiment (``params/atomic_facts/*.yaml``)."""

    dataset: Literal["radpref", "rexval"] = Field("radpref", description="Reader study: radpref (public; 100 cases x 2 candidates x 3 radiologists) or rexval (credentialed PhysioNet; 50 studies x 4 candidates x 6 radiologists).")
    dataset_path: str | None = Field(None, description="Folder of the dataset (default: under the data root); for rexval the folder holding 50_samples_gt_and_candidates.csv.")
    max_cases: int | None = Field(None, ge=4, description="Use only the first N cases (null = all; the smoke preset uses a few).")
    backend: Literal["rule", "llm"] = Field("rule", description="AtomiMed backend: rule (text toolkit; deterministic, offline) or llm (llm_model; paper: Qwen3-235B-A22B, temperature 0).")
    theta: float = Field(0.8, ge=0, le=1, description="Fuzzy name-similarity threshold θ for aligning findings (paper: 0.8).")
    scorer: Literal["ratio", "token_set_ratio", "token_sort_ratio", "partial_ratio"] = Field("ratio", description="rapidfuzz scorer behind the name similarity.")
    weight: float = Field(0.5, ge=0, le=1, description="Weight of the disease level in Eq. 4 (paper: equal weights, 0.5).")
    unmentioned: Literal["no", "mismatch"] = Field("no", description="A disease question the other report does not address reads as 'no' (default) or as a mismatch.")
    uncertain: Literal["yes", "no", "drop"] = Field("yes", description="Rule backend: a hedged finding ('possible pneumonia') is read as present (yes), absent (no) or dropped.")
    llm_model: str | None = Field(None, description="Instruct model for backend=llm (hub id | local folder | pypi:...), e.g. Qwen/Qwen3-235B-A22B.")
    llm_engine: Literal["transformers", "vllm"] = Field("transformers", description="Generation backend of the model layer for llm_model (paper: vllm).")
    llm_options: dict[str, Any] = Field(default_factory=dict, description="Extra keyword arguments for the generation backend (e.g. tensor_parallel_size for vLLM).")
    llm_max_new_tokens: int = Field(1024, ge=16, description="Token limit of each JSON answer.")
    llm_batch_size: int = Field(8, ge=1, description="Prompts per generation batch.")
    max_retries: int = Field(2, ge=0, description="Re-asks after an unparseable JSON answer (then it is counted, never dropped).")
    decompose_prompt: str | None = Field(None, description="Decomposition prompt template with {report}; null = radaudit.atomic.DEFAULT_DECOMPOSE_PROMPT.")
    disease_prompt: str | None = Field(None, description="Disease-level reader prompt with {report} and {questions}; null = radaudit.atomic.DEFAULT_DISEASE_READER_PROMPT.")
    attribute_prompt: str | None = Field(None, description="Attribute-level reader prompt with {report} and {questions}; null = radaudit.atomic.DEFAULT_ATTRIBUTE_READER_PROMPT.")
    baselines: list[str] = Field(default_factory=lambda: ["all"], description="Registry metrics compared with AtomiMed; 'all' = every registered metric. Ones that cannot run here are skipped with the reason recorded.")
    headline: list[str] = Field(default_factory=lambda: ["bleu4", "bertscore", "chexpert_f1_micro_all14"], description="Baselines named in the plain-words summary (BLEU, BERTScore, label F1).")
    text_encoder: str | None = Field(None, description="Encoder for BERTScore / embedding similarity (model spec); null = the all-MiniLM-L6-v2 shipped on PyPI.")
    preference_from: Literal["rating", "total_errors", "significant_errors"] = Field("rating", description="What makes a radiologist prefer a candidate: the higher 1-5 rating, or fewer errors (rexval has no ratings: errors are used).")
    tie_tolerance: float = Field(1e-9, ge=0, description="Two metric scores closer than this are a tie in the preference analysis.")
    present_only: bool = Field(True, description="Granular analysis: count only findings asserted present (pertinent negatives excluded).")
    min_questions: int = Field(5, ge=1, description="Granular heatmaps leave a cell blank below this many questions.")
    strategy_generations: str | None = Field(None, description="Optional table (CSV/Parquet/JSONL) of decoding_erasure generations with columns strategy, reference, prediction: its strategies join the granular heatmaps. null = off.")
    max_strategy_reports: int | None = Field(None, ge=1, description="Use only the first N reports per strategy of strategy_generations (null = all).")
    trace_case: int = Field(0, ge=0, description="Position of the case whose audit trace the notebook prints.")

    @field_validator("baselines", "headline")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        from radaudit.metrics import list_metrics

        known = set(list_metrics()["name"])
        bad = [m for m in v if m != "all" and m not in known]
        if bad:
            raise ValueError(f"unknown metric(s) {bad}; registered: {sorted(known)} (or 'all')")
        return v

    def preflight(self) -> None:
        if self.backend == "llm" and not self.llm_model:
            raise ParamsError("backend=llm needs llm_model (e.g. -p llm_model=Qwen/Qwen3-235B-A22B -p llm_engine=vllm); "
                              "use backend=rule offline.")
        if self.dataset == "rexval" and self.preference_from == "rating":
            raise ParamsError("rexval has no ratings: set preference_from=total_errors or significant_errors.")
        if self.strategy_generations is not None and not Path(self.strategy_generations).is_file():
            raise ParamsError(f"strategy_generations={self.strategy_generations!r} is not a file; give a CSV/Parquet/JSONL "
                              "table with columns strategy, reference, prediction, or null.")


# ----------------------------------------------------------------------------------------------
# reader studies


@dataclass(frozen=True)
class ReaderStudy:
    """Candidates (:data:`CANDIDATE_COLUMNS`) and radiologists' judgements (:data:`JUDGEMENT_COLUMNS`)."""

    name: str
    candidates: pd.DataFrame
    judgements: pd.DataFrame

    def __post_init__(self) -> None:
        for what, df, cols in (("candidates", self.candidates, CANDIDATE_COLUMNS),
                               ("judgements", self.judgements, JUDGEMENT_COLUMNS)):
            missing = [c for c in cols if c not in df.columns]
            if missing:
                raise RadauditError(f"reader study {self.name!r}: {what} lacks column(s) {missing}; it needs {list(cols)}.")
        if self.candidates.duplicated(["case_id", "candidate"]).any():
            raise RadauditError(f"reader study {self.name!r}: a (case_id, candidate) appears twice in candidates.")
        keys = set(zip(self.candidates["case_id"], self.candidates["candidate"]))
        extra = set(zip(self.judgements["case_id"], self.judgements["candidate"])) - keys
        if extra:
            raise RadauditError(f"reader study {self.name!r}: judgements for unknown candidates, e.g. {sorted(extra)[:2]}.")

    @property
    def raters(self) -> list[Any]:
        return sorted(self.judgements["rater"].unique().tolist())

    @property
    def targets(self) -> list[str]:
        """The judgement kinds this study has (ReXVal has no ratings)."""
        return [t for t in TARGETS if self.judgements[t].notna().any()]


def _first_cases(df: pd.DataFrame, max_cases: int | None) -> pd.DataFrame:
    if max_cases is None:
        return df
    keep = list(dict.fromkeys(df["case_id"]))[:max_cases]
    return df[df["case_id"].isin(keep)]


def radpref_study(data_root: Any = None, max_cases: int | None = None, path: Any = None) -> ReaderStudy:
    """RadPref (CRIMSON): each case's reference findings and its GPT and MedGemma reports, with three
    radiologists' error counts and ratings (module docstring: how the counts are formed)."""
    from radaudit.data import load_dataset

    cases = load_dataset("radpref", data_root, path=path)
    ann = load_dataset("radpref_annotations", data_root, path=path)
    rows = []
    for r in cases.itertuples(index=False):
        ref = "" if pd.isna(r.findings) else str(r.findings)
        for cand in ("C1", "C2"):
            k = cand.lower()
            rows.append({"case_id": str(r.study_id), "candidate": cand, "system": str(getattr(r, f"{k}_source")),
                         "reference": ref, "prediction": str(getattr(r, f"{k}_report"))})
    cand_df = _first_cases(pd.DataFrame(rows, columns=list(CANDIDATE_COLUMNS)), max_cases)
    sig = ann[[f"n_sig_{s}" for s in SIGNIFICANT_LEVELS]].sum(axis=1) + ann["n_attribute_errors_significant"]
    total = (ann["n_false_findings"] + ann["n_missing_findings"] + ann["n_attribute_errors_significant"]
             + ann["n_attribute_errors_negligible"])
    judg = pd.DataFrame({"case_id": ann["case_id"].astype(str), "candidate": ann["candidate"].astype(str),
                         "rater": ann["rater"].astype(int), "total_errors": total.astype(float),
                         "significant_errors": sig.astype(float), "rating": ann["rating_1to5"].astype(float)})
    judg = judg[judg["case_id"].isin(set(cand_df["case_id"]))].reset_index(drop=True)
    return ReaderStudy("radpref", cand_df.reset_index(drop=True), judg)


def rexval_study(path: Any = None, data_root: Any = None, max_cases: int | None = None) -> ReaderStudy:
    """ReXVal: 50 MIMIC-CXR studies × 4 candidates (each retrieved by one metric), six radiologists'
    error counts (all / clinically significant, summed over the six categories); no ratings."""
    from radaudit.data import load_dataset

    cand = load_dataset("rexval", data_root, path=path, table="candidates")
    err = load_dataset("rexval", data_root, path=path, table="errors")
    cand_df = pd.DataFrame({"case_id": cand["study_id"].astype(str), "candidate": cand["candidate_type"].astype(str),
                            "system": cand["candidate_type"].astype(str),
                            "reference": cand["reference_report"].fillna("").astype(str),
                            "prediction": cand["candidate_report"].fillna("").astype(str)})
    cand_df = _first_cases(cand_df, max_cases)
    per = (err.groupby(["study_id", "candidate_type", "rater_index"], as_index=False)
              [["num_errors_total", "num_errors_significant"]].sum())
    judg = pd.DataFrame({"case_id": per["study_id"].astype(str), "candidate": per["candidate_type"].astype(str),
                         "rater": per["rater_index"].astype(int), "total_errors": per["num_errors_total"].astype(float),
                         "significant_errors": per["num_errors_significant"].astype(float), "rating": np.nan})
    # a rater who rated a study but found no error in a candidate has no row in the error file: count 0
    raters_per_case = judg.groupby("case_id")["rater"].unique()
    full = [(c, k, r) for c, k in zip(cand_df["case_id"], cand_df["candidate"]) for r in raters_per_case.get(c, [])]
    grid = pd.DataFrame(full, columns=["case_id", "candidate", "rater"])
    judg = grid.merge(judg, on=["case_id", "candidate", "rater"], how="left")
    judg[["total_errors", "significant_errors"]] = judg[["total_errors", "significant_errors"]].fillna(0.0)
    judg["rating"] = np.nan
    return ReaderStudy("rexval", cand_df.reset_index(drop=True), judg[list(JUDGEMENT_COLUMNS)])


def generations_study(path: str | Path, max_per_strategy: int | None = None) -> pd.DataFrame:
    """Candidates (no judgements) from a table of decoding_erasure generations: one ``system`` per
    ``strategy``. The file (CSV, Parquet or JSONL) needs ``strategy``, ``reference``, ``prediction``."""
    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"strategy_generations: {p} is not a file.")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    elif suffix in (".parquet", ".pq"):
        df = pd.read_parquet(p)
    elif suffix in (".jsonl", ".json"):
        df = pd.read_json(p, lines=suffix == ".jsonl", dtype=False)
    else:
        raise ParamsError(f"strategy_generations: {p.name} is not .csv, .parquet or .jsonl.")
    missing = [c for c in ("strategy", "reference", "prediction") if c not in df.columns]
    if missing:
        raise ParamsError(f"strategy_generations: {p.name} lacks column(s) {missing}; it has {list(df.columns)}.")
    if max_per_strategy is not None:
        df = df.groupby("strategy", sort=False).head(max_per_strategy)
    sid = df["study_id"].astype(str) if "study_id" in df.columns else pd.Series(range(len(df)), index=df.index).astype(str)
    return pd.DataFrame({"case_id": sid.to_numpy(), "candidate": df["strategy"].astype(str).to_numpy(),
                         "system": df["strategy"].astype(str).to_numpy(),
                         "reference": df["reference"].fillna("").astype(str).to_numpy(),
                         "prediction": df["prediction"].fillna("").astype(str).to_numpy()})


# ----------------------------------------------------------------------------------------------
# scoring


@dataclass(frozen=True)
class MetricScores:
    """Per-candidate scores. ``scores``: the candidates' key columns (``case_id``, ``candidate``,
    ``system``) plus one column per metric that ran; ``skipped``: metric → why it could not run;
    ``atomimed``: :func:`radaudit.atomic.score_pairs`' table (one row per candidate, same order);
    ``trace``: its audit trace with ``case_id``, ``candidate`` and ``system`` added."""

    scores: pd.DataFrame
    skipped: dict[str, str]
    atomimed: pd.DataFrame
    trace: pd.DataFrame
    metrics: list[str] = field(default_factory=list)


def resolve_baselines(names: Sequence[str]) -> list[str]:
    """``["all"]`` → every registered metric but ``atomimed``; otherwise the names, in order, deduplicated."""
    from radaudit.metrics import list_metrics

    out: list[str] = []
    for n in names:
        out.extend(list_metrics()["name"].tolist() if n == "all" else [n])
    return [n for n in dict.fromkeys(out) if n != "atomimed"]


def atomimed_options(P: Params) -> dict[str, Any]:
    """Keyword arguments of :func:`radaudit.atomic.score_pairs` from the params (builds the LLM generator)."""
    from radaudit.atomic import make_backend

    opts: dict[str, Any] = {"theta": P.theta, "scorer": P.scorer, "weight": P.weight, "unmentioned": P.unmentioned,
                            "uncertain": P.uncertain, "backend": P.backend}
    if P.backend == "llm":
        from radaudit.atomic import greedy_generator

        if not P.llm_model:
            raise ParamsError("backend=llm needs llm_model (e.g. Qwen/Qwen3-235B-A22B).")
        fn = greedy_generator(P.llm_model, backend=P.llm_engine, max_new_tokens=P.llm_max_new_tokens,
                              batch_size=P.llm_batch_size, cache=True, **P.llm_options)
        dec, rdr = make_backend("llm", generate_fn=fn, batched=True, max_retries=P.max_retries, theta=P.theta,
                                scorer=P.scorer, decompose_prompt=P.decompose_prompt, disease_prompt=P.disease_prompt,
                                attribute_prompt=P.attribute_prompt)
        opts.update(decomposer=dec, reader=rdr, generate_fn=fn, batched=True, max_retries=P.max_retries)
    return opts


def score_study(candidates: pd.DataFrame, baselines: Sequence[str] = ("all",), *,
                atomimed: Mapping[str, Any] | None = None,
                metric_options: Mapping[str, Mapping[str, Any]] | None = None) -> MetricScores:
    """AtomiMed (with its trace) and every baseline on each candidate report against its reference.

    ``atomimed``: keyword arguments of :func:`radaudit.atomic.score_pairs` (default: rule backend).
    ``baselines``: registry names (``"all"`` expands, :func:`resolve_baselines`); a metric that
    cannot be built or run here (missing package, weights offline) is skipped and its reason kept in
    ``skipped``. ``metric_options``: build options per metric (``{"bertscore": {"model": ...}}``).
    Besides ``atomimed`` (Eq. 4 F1) the table has ``atomimed_disease`` and ``atomimed_attribute``.
    """
    from radaudit.atomic import score_pairs, trace_of
    from radaudit.metrics import MetricUnavailableError, build_metric

    missing = [c for c in CANDIDATE_COLUMNS if c not in candidates.columns]
    if missing:
        raise RadauditError(f"candidates lacks column(s) {missing}; it needs {list(CANDIDATE_COLUMNS)}.")
    if candidates.empty:
        raise RadauditError("no candidate reports to score (empty table).")
    refs, preds = candidates["reference"].tolist(), candidates["prediction"].tolist()
    table = score_pairs(refs, preds, **dict(atomimed or {}))
    keys = candidates[["case_id", "candidate", "system"]].reset_index(drop=True)
    out = keys.copy()
    out["atomimed"] = table["f1"].to_numpy(dtype=float)
    out["atomimed_disease"] = table["disease_f1"].to_numpy(dtype=float)
    out["atomimed_attribute"] = table["attribute_f1"].to_numpy(dtype=float)
    trace = trace_of(table)
    pos = trace["pair"].to_numpy(dtype=int)
    trace = pd.concat([pd.DataFrame({c: keys[c].to_numpy()[pos] for c in ("case_id", "candidate", "system")}),
                       trace.reset_index(drop=True)], axis=1)
    skipped: dict[str, str] = {}
    ran = ["atomimed", "atomimed_disease", "atomimed_attribute"]
    opts = {k: dict(v) for k, v in (metric_options or {}).items()}
    for name in resolve_baselines(baselines):
        try:
            res = build_metric(name, **opts.get(name, {})).compute(refs, preds)
        except (MetricUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("baseline %s skipped: %s", name, err)
            continue
        out[name] = np.asarray(res.per_sample, dtype=float)
        ran.append(name)
    return MetricScores(scores=out, skipped=skipped, atomimed=table, trace=trace.reset_index(drop=True), metrics=ran)


# ----------------------------------------------------------------------------------------------
# correlation coefficients (vectorised: every metric x every target in one pass)


def _signs(a: np.ndarray) -> np.ndarray:
    """(k, n, n) sign(a_i − a_j) per column of the (n, k) array; NaN rows give 0."""
    d = a.T[:, :, None] - a.T[:, None, :]
    return np.nan_to_num(np.sign(d), nan=0.0)


def _ranks(a: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(a, axis=0, method="average")


def agreement_coefficients(x: np.ndarray, y: np.ndarray, *, kendall: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """Kendall τ-b and Spearman ρ of every column of ``x`` (n × m) with every column of ``y`` (n × t).

    τ-b = Σ_{i<j} sx·sy / √(Σ sx² · Σ sy²), s = sign of the pairwise difference (ties give 0, so a
    tie in either variable is excluded from its own denominator: Kendall 1945, the ``tau-b`` of
    :func:`scipy.stats.kendalltau`). ρ = Pearson correlation of the average ranks. Both are NaN
    when a column is constant. Rows must be complete (no NaN). Returns two (m × t) arrays
    (τ is None with ``kendall=False``).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
        raise ValueError(f"x and y must be 2-D with the same number of rows, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("agreement_coefficients needs complete rows; drop the NaN rows first")
    n = len(x)
    tau = None
    with np.errstate(invalid="ignore", divide="ignore"):
        if kendall:
            sx = _signs(x).reshape(x.shape[1], n * n)
            sy = _signs(y).reshape(y.shape[1], n * n)
            tau = (sx @ sy.T) / np.sqrt(np.outer((sx * sx).sum(1), (sy * sy).sum(1)))
        rx, ry = _ranks(x), _ranks(y)
        rx = rx - rx.mean(0)
        ry = ry - ry.mean(0)
        rho = (rx.T @ ry) / np.sqrt(np.outer((rx * rx).sum(0), (ry * ry).sum(0)))
    return tau, rho


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b of two equal-length sequences (see :func:`agreement_coefficients`)."""
    return float(agreement_coefficients(np.c_[np.asarray(x, float)], np.c_[np.asarray(y, float)])[0][0, 0])


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ (average ranks) of two equal-length sequences (see :func:`agreement_coefficients`)."""
    return float(agreement_coefficients(np.c_[np.asarray(x, float)], np.c_[np.asarray(y, float)])[1][0, 0])


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
        sign = -1.0 if t in _NEGATED else 1.0
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
    keeps all its rows), and the number of cases. Replicate b draws ``rng.integers(0, U, U)``."""
    codes, uniques = pd.factorize(pd.Series(list(case_ids)).astype(str), sort=True)
    n_units = len(uniques)
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, n_units, n_units), minlength=n_units) for _ in range(n_bootstrap)]) \
        if n_bootstrap else np.zeros((0, n_units), dtype=int)
    return counts[:, codes].astype(np.float32), n_units


def _tau_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray, diagonal: bool = False) -> np.ndarray:
    """Kendall τ-b of every column of ``x`` (n × m; NaN = row left out for that column) with every
    column of ``y`` (n × t; complete) on data where row i appears ``w[b, i]`` times (B × n).

    Why weights: a bootstrap resample is the original rows with multiplicities, and τ-b of the
    resample is Σ_ij w_i w_j sx_ij sy_ij / √(Σ w_i w_j sx_ij² · Σ w_i w_j sy_ij²) (copies of one row
    are ties, sign 0), so each replicate is a quadratic form in ``w`` over sign matrices computed
    once. The sums are integers below 2²⁴, exact in float32. ``diagonal``: pair column k of x with
    column k of y only (m == t). Returns (B, m, t), or (B, m) when diagonal.
    """
    m, t = x.shape[1], y.shape[1]
    valid = np.isfinite(x)
    sx = _signs(x).astype(np.float32)
    sy = _signs(y).astype(np.float32)
    sy2 = sy * sy
    B = w.shape[0]

    def quad(wa: np.ndarray, q: np.ndarray) -> np.ndarray:
        return np.einsum("bi,bi->b", wa @ q, wa)

    dx = np.stack([quad(w, sx[j] * sx[j]) for j in range(m)], axis=1)  # (B, m)
    dy_cache: dict[bytes, np.ndarray] = {}
    pairs = [(j, j) for j in range(m)] if diagonal else [(j, k) for j in range(m) for k in range(t)]
    out = np.full((B, m) if diagonal else (B, m, t), np.nan)
    for j, k in pairs:
        key = valid[:, j].tobytes()
        if key not in dy_cache:
            wv = w * valid[:, j][None, :]
            dy_cache[key] = np.stack([quad(wv, sy2[kk]) for kk in range(t)], axis=1)
        dy = dy_cache[key][:, k]
        num = quad(w, sx[j] * sy[k])
        with np.errstate(invalid="ignore", divide="ignore"):
            val = num / np.sqrt(dx[:, j].astype(float) * dy.astype(float))
        if diagonal:
            out[:, j] = val
        else:
            out[:, j, k] = val
    return out


def _rho_rows(x: np.ndarray, y: np.ndarray, w: np.ndarray, diagonal: bool = False) -> np.ndarray:
    """Spearman ρ like :func:`_tau_weighted` (same shapes), by materialising each resample's rows
    (ranks depend on the resample); NaN rows of an x column are left out for that column."""
    m, t = x.shape[1], y.shape[1]
    groups: dict[bytes, list[int]] = {}
    for j in range(m):
        groups.setdefault(np.isfinite(x[:, j]).tobytes(), []).append(j)
    out = np.full((w.shape[0], m) if diagonal else (w.shape[0], m, t), np.nan)
    base = np.arange(len(x))
    for b in range(w.shape[0]):
        rows = np.repeat(base, w[b].astype(int))
        for key, js in groups.items():
            ok = rows[np.frombuffer(key, dtype=bool)[rows]]
            if len(ok) < 2:
                continue
            rho = agreement_coefficients(x[np.ix_(ok, js)], y[ok], kendall=False)[1]
            if diagonal:
                out[b, js] = rho[np.arange(len(js)), js]
            else:
                out[b, js] = rho
    return out


def _interval(estimate: float, replicates: np.ndarray, confidence: float, n_units: int, name: str) -> tuple[float, float, float]:
    """Percentile bootstrap interval (:func:`radaudit.stats.interval_from_replicates`) or NaNs when
    undefined (a constant variable on the full data or on most resamples)."""
    from radaudit.stats import interval_from_replicates

    r = np.asarray(replicates, dtype=float)
    if not math.isfinite(estimate) or np.isfinite(r).sum() < 2:
        return math.nan, math.nan, math.nan
    try:
        res = interval_from_replicates(float(estimate), r, None, "percentile", confidence, n_units, name, max_failed=0.5)
    except RadauditError:
        return math.nan, math.nan, math.nan
    return res.low, res.high, res.se


def _pvalue(diff: np.ndarray) -> float:
    # two-sided percentile-inversion bootstrap p-value, as radaudit.stats.paired_bootstrap
    d = diff[np.isfinite(diff)]
    if d.size == 0:
        return math.nan
    return float(min(1.0, 2.0 * (1 + min(np.count_nonzero(d <= 0), np.count_nonzero(d >= 0))) / (d.size + 1)))


def _coefficients(x: np.ndarray, y: np.ndarray, case_ids: Sequence[Any], n_bootstrap: int, seed: int,
                  diagonal: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"kendall"/"spearman": (estimate, replicates)} with shared cluster-bootstrap resamples."""
    w, _ = _bootstrap_weights(case_ids, n_bootstrap, seed)
    ones = np.ones((1, len(x)), dtype=np.float32)
    with np.errstate(all="ignore"):
        return {"kendall": (_tau_weighted(x, y, ones, diagonal)[0], _tau_weighted(x, y, w, diagonal)),
                "spearman": (_rho_rows(x, y, ones, diagonal)[0], _rho_rows(x, y, w, diagonal))}


def correlation_table(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                      reference: str = "atomimed", n_bootstrap: int = 1000, confidence: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Table 2 analog in long form: Kendall τ-b and Spearman ρ of each metric with each radiologist
    judgement (module docstring: orientation, CIs), per radiologist, on their mean, and the
    inter-rater ceiling.

    ``scores``: :attr:`MetricScores.scores` (rows aligned with ``study.candidates``). Columns of the
    result: ``metric``, ``label``, ``target``, ``rater`` (a rater id, ``"mean"`` or
    ``"inter-rater"``), ``coefficient`` (``kendall``/``spearman``), ``estimate``, ``low``, ``high``,
    ``se``, ``n_candidates``, ``n_cases``, ``n_undefined`` (candidates without a score), and — for
    every other metric on the mean of the radiologists — ``diff_vs_reference`` (``reference``'s
    coefficient minus this metric's), ``diff_low``/``diff_high``, the bootstrap ``diff_p`` and its
    Benjamini–Hochberg adjustment ``diff_p_bh`` (per target and coefficient).
    """
    from radaudit.stats import benjamini_hochberg

    metrics = list(metrics or [c for c in scores.columns if c not in ("case_id", "candidate", "system")])
    if not metrics:
        raise ParamsError("no metric to correlate: scores has no metric column.")
    unknown = [m for m in metrics if m not in scores.columns]
    if unknown:
        raise ParamsError(f"metric(s) {unknown} are not columns of scores ({list(scores.columns)}).")
    if len(scores) != len(study.candidates) or not (
            scores["case_id"].astype(str).to_numpy() == study.candidates["case_id"].astype(str).to_numpy()).all():
        raise RadauditError("scores are not aligned with study.candidates (same rows, same order): score the study's candidates.")
    Y = target_matrix(study)
    tcols = list(Y.columns)
    X = scores[metrics].to_numpy(dtype=float)
    case_ids = study.candidates["case_id"].to_numpy()
    n_units = study.candidates["case_id"].nunique()
    if n_units < 2:
        raise RadauditError(f"reader study {study.name!r} has {n_units} case; correlations and their CIs need at least 2.")
    res = _coefficients(X, Y.to_numpy(dtype=float), case_ids, n_bootstrap, seed)
    # inter-rater ceiling: each rater's column vs the mean of the other raters, per target
    raters = study.raters
    ceil_x, ceil_y, ceil_t = [], [], []
    if len(raters) >= 2:
        for t in study.targets:
            for r in raters:
                ceil_x.append(Y[f"{t}@{r}"].to_numpy())
                ceil_y.append(Y[[f"{t}@{o}" for o in raters if o != r]].mean(axis=1).to_numpy())
                ceil_t.append(t)
    ceil = _coefficients(np.c_[tuple(ceil_x)], np.c_[tuple(ceil_y)], case_ids, n_bootstrap, seed, diagonal=True) if ceil_x else {}

    n_cand = np.isfinite(X).sum(0)
    ref_j = metrics.index(reference) if reference in metrics else None
    rows_out = []
    nan4 = dict.fromkeys(("diff_vs_reference", "diff_low", "diff_high", "diff_p"), math.nan)
    for coef in ("kendall", "spearman"):
        est, reps = res[coef]
        for j, m in enumerate(metrics):
            for c, col in enumerate(tcols):
                t, rater = col.split("@", 1)
                e = float(est[j, c])
                low, high, se = _interval(e, reps[:, j, c], confidence, n_units, f"{m}/{col}/{coef}")
                row = {"metric": m, "label": metric_label(m, METRIC_LABELS), "target": t, "rater": rater, "coefficient": coef,
                       "estimate": e, "low": low, "high": high, "se": se, "n_candidates": int(n_cand[j]),
                       "n_cases": n_units, "n_undefined": int(len(X) - n_cand[j]), **nan4}
                if ref_j is not None and j != ref_j and rater == MEAN_RATER:
                    d = reps[:, ref_j, c] - reps[:, j, c]
                    de = float(est[ref_j, c] - e)
                    dl, dh, _ = _interval(de, d, confidence, n_units, f"{reference}-{m}")
                    row.update(diff_vs_reference=de, diff_low=dl, diff_high=dh, diff_p=_pvalue(d))
                rows_out.append(row)
        if ceil:
            cest, creps = ceil[coef]
            for t in study.targets:
                idx = [i for i, tt in enumerate(ceil_t) if tt == t]
                e = float(np.mean(cest[idx]))
                low, high, se = _interval(e, creps[:, idx].mean(1), confidence, n_units, f"inter-rater/{t}/{coef}")
                rows_out.append({"metric": INTER_RATER, "label": "Radiologist vs the others (ceiling)", "target": t,
                                 "rater": INTER_RATER, "coefficient": coef, "estimate": e, "low": low, "high": high,
                                 "se": se, "n_candidates": len(Y), "n_cases": n_units, "n_undefined": 0, **nan4})
    out = pd.DataFrame(rows_out)
    out["diff_p_bh"] = math.nan
    for _, g in out[out["diff_p"].notna()].groupby(["target", "coefficient"]):
        _, q = benjamini_hochberg(g["diff_p"].to_numpy())
        out.loc[g.index, "diff_p_bh"] = q
    return out


def table2(corr: pd.DataFrame, rater: str = MEAN_RATER) -> pd.DataFrame:
    """Table 2 layout: one row per metric (the inter-rater ceiling last), one ``estimate [low, high]``
    column per target × coefficient, for ``rater`` (default: the radiologists' mean); rows sorted
    by Kendall τ with the first target."""
    sub = corr[(corr["rater"] == rater) | (corr["metric"] == INTER_RATER)].copy()
    sub["cell"] = [format_ci(e, lo, hi, 3) for e, lo, hi in zip(sub["estimate"], sub["low"], sub["high"])]
    sub["column"] = [f"{'τ' if c == 'kendall' else 'ρ'} · {TARGETS[t]}" for c, t in zip(sub["coefficient"], sub["target"])]
    order_cols = [f"{s} · {TARGETS[t]}" for t in TARGETS if t in set(sub["target"]) for s in ("τ", "ρ")]
    wide = sub.pivot_table(index=["metric", "label"], columns="column", values="cell", aggfunc="first")
    wide = wide.reindex(columns=order_cols)
    first = sub[(sub["coefficient"] == "kendall") & (sub["target"] == next(t for t in TARGETS if t in set(sub["target"])))]
    key = first.set_index("metric")["estimate"]
    wide = wide.reset_index()
    wide["_k"] = wide["metric"].map(key).fillna(-np.inf)
    wide["_ceiling"] = wide["metric"] == INTER_RATER
    wide = wide.sort_values(["_ceiling", "_k"], ascending=[True, False]).drop(columns=["_k", "_ceiling"])
    return wide.rename(columns={"label": "Metric"}).drop(columns="metric").reset_index(drop=True)


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
    sign = -1.0 if source in _NEGATED else 1.0
    rows = []
    for case, g in j.groupby("case_id", sort=False):
        w = g.pivot_table(index="rater", columns="candidate", values=source, aggfunc="mean") * sign
        cands = list(w.columns)
        for a in cands:
            for b in cands:
                if a == b:
                    continue
                d = (w[a] - w[b]).dropna()
                if d.empty:
                    continue
                share = float(((d > 0) + 0.5 * (d == 0)).mean())
                rows.append({"case_id": case, "a": a, "b": b, "human": share, "n_raters": int(d.size)})
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
        return {"acc": num_acc / den_acc, "mae": num_mae / den_mae, "tau": _tau_weighted(m, h, w, diagonal)}


def preference_table(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                     source: str = "rating", tie_tolerance: float = 1e-9, n_bootstrap: int = 1000,
                     confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Table 3 analog in long form: ACC, MAE and τ (:func:`preference_agreement`) of each metric's
    preferences against the radiologists' consensus (``rater="mean"``: vote shares) and each
    radiologist alone, plus the inter-rater ceiling (each radiologist against the consensus of the
    others, entries pooled over radiologists). Percentile bootstrap CIs over cases. Columns:
    ``metric``, ``label``, ``rater``, ``statistic`` (acc/mae/tau), ``estimate``, ``low``, ``high``,
    ``n_cases``, ``n_entries`` (ordered candidate pairs), ``n_strict_pairs`` (unordered candidate
    pairs on which the human side is not a tie: the pairs behind ACC)."""
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
    ones = np.ones((1, len(keys)), dtype=np.float32)
    est, reps = _pref_stats(M, H, ones), _pref_stats(M, H, w)
    rater_names = list(humans)
    strict_n = ((H[:, None, :] != 0.5) & np.isfinite(M)[:, :, None]).sum(0)
    out = []
    for j, m in enumerate(metrics):
        for c, r in enumerate(rater_names):
            for s in ("acc", "mae", "tau"):
                e = float(est[s][0, j, c])
                low, high, _ = _interval(e, reps[s][:, j, c], confidence, n_units, f"{m}/{r}/{s}")
                out.append({"metric": m, "label": metric_label(m, METRIC_LABELS), "rater": r, "statistic": s, "estimate": e,
                            "low": low, "high": high, "n_cases": n_units, "n_entries": int(np.isfinite(M[:, j]).sum()),
                            "n_strict_pairs": int(strict_n[j, c]) // 2})
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
        for s in ("acc", "mae", "tau"):
            e = float(cest[s][0, 0])
            low, high, _ = _interval(e, creps[s][:, 0], confidence, n_units, f"inter-rater/{s}")
            out.append({"metric": INTER_RATER, "label": "Radiologist vs the others (ceiling)", "rater": INTER_RATER,
                        "statistic": s, "estimate": e, "low": low, "high": high, "n_cases": n_units,
                        "n_entries": len(co), "n_strict_pairs": int((ch[:, 0] != 0.5).sum()) // 2})
    return pd.DataFrame(out)


def table3(pref: pd.DataFrame, rater: str = MEAN_RATER) -> pd.DataFrame:
    """Table 3 layout: one row per metric (ceiling last), columns ACC (%), MAE and τ with CIs,
    against ``rater`` (default: the radiologists' consensus); sorted by ACC."""
    sub = pref[(pref["rater"] == rater) | (pref["metric"] == INTER_RATER)].copy()
    scale = np.where(sub["statistic"] == "acc", 100.0, 1.0)
    digits = {"acc": 1, "mae": 3, "tau": 3}
    sub["cell"] = [format_ci(e * s, lo * s, hi * s, digits[st]) for e, lo, hi, s, st in
                   zip(sub["estimate"], sub["low"], sub["high"], scale, sub["statistic"])]
    wide = sub.pivot_table(index=["metric", "label"], columns="statistic", values="cell", aggfunc="first").reset_index()
    acc = sub[sub["statistic"] == "acc"].set_index("metric")["estimate"]
    wide["_k"] = wide["metric"].map(acc).fillna(-np.inf)
    wide["_c"] = wide["metric"] == INTER_RATER
    wide = wide.sort_values(["_c", "_k"], ascending=[True, False])
    n_strict = sub[sub["statistic"] == "acc"].set_index("metric")["n_strict_pairs"]
    wide["strict pairs"] = wide["metric"].map(n_strict)
    wide = wide.rename(columns={"label": "Metric", "acc": "ACC (%)", "mae": "MAE", "tau": "Kendall τ"})
    return wide[["Metric", "ACC (%)", "MAE", "Kendall τ", "strict pairs"]].reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# granular analysis (Fig. 4)


def granular_table(trace: pd.DataFrame, level: Literal["attribute", "disease"] = "attribute", *,
                   present_only: bool = True) -> pd.DataFrame:
    """Per ``system`` × category: pooled precision, recall and F1 of the trace's questions (module
    docstring). ``level="attribute"``: categories are the six facets; ``"disease"``: anatomical
    systems (:func:`system_of` of the asked finding). Columns: ``system``, ``category``,
    ``n_gt`` (questions asked from the references), ``n_inf``, ``precision``, ``recall``, ``f1``,
    ``n`` (= n_gt + n_inf)."""
    from radaudit.atomic import ATTRIBUTES

    need = ("system", "direction", "level", "finding", "attribute", "expected", "match")
    missing = [c for c in need if c not in trace.columns]
    if missing:
        raise RadauditError(f"trace lacks column(s) {missing}; pass MetricScores.trace.")
    if level not in ("attribute", "disease"):
        raise ParamsError(f"level must be 'attribute' or 'disease', got {level!r}.")
    t = trace[trace["level"] == level].copy()
    if level == "disease":
        if present_only:
            t = t[t["expected"] == "yes"]
        t["category"] = [system_of(f) for f in t["finding"]]
        cats = [*ANATOMICAL_SYSTEMS, OTHER_SYSTEM]
    else:
        t["category"] = t["attribute"]
        cats = list(ATTRIBUTES)
    systems = list(dict.fromkeys(trace["system"]))
    rows = []
    for s in systems:
        for c in cats:
            g = t[(t["system"] == s) & (t["category"] == c)]
            gi, fi = g[g["direction"] == "gt->inf"], g[g["direction"] == "inf->gt"]
            n_gt, n_inf = len(gi), len(fi)
            r = gi["match"].astype(bool).mean() if n_gt else math.nan
            p = fi["match"].astype(bool).mean() if n_inf else math.nan
            if n_gt and n_inf:
                f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
            else:
                f = math.nan
            rows.append({"system": s, "category": c, "n_gt": n_gt, "n_inf": n_inf, "precision": p, "recall": r,
                         "f1": f, "n": n_gt + n_inf})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# figures


def distinct_metrics(scores: pd.DataFrame, metrics: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Metrics whose per-candidate scores differ from every earlier one's, and ``{duplicate: the
    metric it equals}`` (e.g. CheXpert-label F1 micro and macro are identical on single reports):
    figures show each distinct score once; tables keep all."""
    kept: list[str] = []
    dup: dict[str, str] = {}
    for m in metrics:
        v = scores[m].to_numpy(dtype=float)
        same = next((k for k in kept if np.allclose(scores[k].to_numpy(dtype=float), v, equal_nan=True)), None)
        if same is None:
            kept.append(m)
        else:
            dup[m] = same
    return kept, dup


def fig_correlation(corr: pd.DataFrame, coefficient: str = "kendall", metrics: Sequence[str] | None = None):
    """Forest plot: one panel per radiologist judgement, one row per metric (radiologists' mean),
    the coefficient with its 95% CI; the inter-rater ceiling as a shaded band. AtomiMed rows in colour."""
    import matplotlib.pyplot as plt

    from radaudit.plots import PALETTE

    sub = corr[corr["coefficient"] == coefficient]
    targets = [t for t in TARGETS if t in set(sub["target"])]
    base = sub[(sub["rater"] == MEAN_RATER)]
    if metrics is not None:
        base = base[base["metric"].isin(metrics)]
    first = base[base["target"] == targets[0]].sort_values("estimate")
    order = first["metric"].tolist()
    n = first.set_index("metric")["n_candidates"]
    labels = [metric_label(m, METRIC_LABELS) + (f" (n={n[m]})" if n[m] < n.max() else "") for m in order]
    fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets) + 1.5, 0.32 * len(order) + 1.6),
                             sharey=True, squeeze=False)
    sym = "Kendall τ" if coefficient == "kendall" else "Spearman ρ"
    for ax, t in zip(axes[0], targets):
        d = base[base["target"] == t].set_index("metric").reindex(order)
        y = np.arange(len(order))
        colors = [PALETTE[5] if m.startswith("atomimed") else PALETTE[0] for m in order]
        ax.errorbar(d["estimate"], y, xerr=[d["estimate"] - d["low"], d["high"] - d["estimate"]], fmt="none",
                    ecolor="#555555", elinewidth=1, capsize=2)
        ax.scatter(d["estimate"], y, c=colors, zorder=3, s=22)
        ceil = sub[(sub["metric"] == INTER_RATER) & (sub["target"] == t)]
        if not ceil.empty:
            c = ceil.iloc[0]
            ax.axvspan(c["low"], c["high"], color="#999999", alpha=0.2, lw=0)
            ax.axvline(c["estimate"], color="#777777", ls="--", lw=1)
        ax.axvline(0, color="black", lw=0.6)
        ax.set_yticks(y, labels)
        ax.set_title(f"vs {TARGETS[t]}" + (" (fewer = better)" if t in _NEGATED else " (higher = better)"), fontsize=10)
        ax.set_xlabel(f"{sym} (95% CI)")
    fig.suptitle(f"Agreement of each metric with the radiologists' mean judgement of {int(n.max())} reports ({sym}, 95% CI; "
                 "orange: AtomiMed; grey band: one radiologist vs the others)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_preference(pref: pd.DataFrame, metrics: Sequence[str] | None = None):
    """Pairwise preference: ACC (%) and MAE with 95% CIs per metric against the radiologists'
    consensus; the inter-rater ceiling dashed; 50% (a coin) dotted."""
    import matplotlib.pyplot as plt

    from radaudit.plots import PALETTE

    base = pref[pref["rater"] == MEAN_RATER]
    if metrics is not None:
        base = base[base["metric"].isin(metrics)]
    acc = base[base["statistic"] == "acc"].sort_values("estimate")
    order = acc["metric"].tolist()
    npairs = acc.set_index("metric")["n_strict_pairs"]
    labels = [metric_label(m, METRIC_LABELS) + (f" ({npairs[m]} pairs)" if npairs[m] < npairs.max() else "") for m in order]
    ceil = pref[pref["metric"] == INTER_RATER].set_index("statistic")
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.32 * len(order) + 1.6), sharey=True)
    for ax, stat, scale, xl in ((axes[0], "acc", 100, "ranking accuracy ACC (%)"), (axes[1], "mae", 1, "MAE of the preference (lower is better)")):
        d = base[base["statistic"] == stat].set_index("metric").reindex(order)
        y = np.arange(len(order))
        colors = [PALETTE[5] if m.startswith("atomimed") else PALETTE[0] for m in order]
        ax.errorbar(d["estimate"] * scale, y, xerr=[(d["estimate"] - d["low"]) * scale, (d["high"] - d["estimate"]) * scale],
                    fmt="none", ecolor="#555555", elinewidth=1, capsize=2)
        ax.scatter(d["estimate"] * scale, y, c=colors, zorder=3, s=22)
        if stat in ceil.index:
            c = ceil.loc[stat]
            ax.axvspan(c["low"] * scale, c["high"] * scale, color="#999999", alpha=0.2, lw=0)
            ax.axvline(c["estimate"] * scale, color="#777777", ls="--", lw=1)
        if stat == "acc":
            ax.axvline(50, color="black", ls=":", lw=0.8)
        ax.set_yticks(y, labels)
        ax.set_xlabel(xl)
    n = int(acc["n_strict_pairs"].max()) if not acc.empty else 0
    fig.suptitle(f"Does the metric prefer the report the radiologists prefer? {n} candidate pairs with a consensus "
                 "(95% CI; orange: AtomiMed; grey band: one radiologist vs the others; dotted: a coin)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_granular(attr: pd.DataFrame, dis: pd.DataFrame, min_questions: int = 5):
    """Fig. 4 analog: (a) attribute-level F1 (%) per facet, (b) disease-level F1 (%) per anatomical
    system, one row per system compared; each cell shows F1 and the number of questions; cells
    with fewer than ``min_questions`` questions are left blank (grey) and show only their count."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(2, 1, figsize=(max(7.5, 1.25 * dis["category"].nunique() + 2.5),
                                            1.3 * attr["system"].nunique() + 1.3 * dis["system"].nunique() + 3.0))
    for ax, tab, title in ((axes[0], attr, "(a) attribute level: F1 (%) per facet, over findings both reports state"),
                           (axes[1], dis, "(b) disease level: F1 (%) per anatomical system (n = questions; "
                                          f"blank: fewer than {min_questions})")):
        val = tab.pivot(index="system", columns="category", values="f1") * 100
        n = tab.pivot(index="system", columns="category", values="n")
        cols = [c for c in dict.fromkeys(tab["category"]) if n[c].sum() > 0]
        rows = list(dict.fromkeys(tab["system"]))
        val, n = val.reindex(index=rows, columns=cols), n.reindex(index=rows, columns=cols)
        masked = val.where(n >= min_questions)
        annot = masked.copy().astype(object)
        for i in masked.index:
            for c in masked.columns:
                v = masked.loc[i, c]
                annot.loc[i, c] = (f"n={int(n.loc[i, c])}" if pd.isna(v) else f"{v:.0f}\nn={int(n.loc[i, c])}")
        masked.index = [SYSTEM_LABELS.get(str(i), str(i)) for i in masked.index]
        ax.set_facecolor("#f0f0f0")
        sns.heatmap(masked, ax=ax, vmin=0, vmax=100, cmap="viridis", annot=annot, fmt="", cbar_kws={"label": "F1 (%)"},
                    annot_kws={"fontsize": 8}, linewidths=0.5, linecolor="white")
        for yi, i in enumerate(val.index):  # seaborn does not annotate blank cells: say how few questions there were
            for xi, c in enumerate(val.columns):
                if pd.isna(masked.iloc[yi, xi]):
                    ax.text(xi + 0.5, yi + 0.5, f"n={int(n.loc[i, c])}", ha="center", va="center", fontsize=8, color="#666666")
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=30)
        for lab in ax.get_xticklabels():
            lab.set_horizontalalignment("right")
        ax.tick_params(axis="y", rotation=0)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------
# plain words


def _get(corr: pd.DataFrame, metric: str, target: str, coef: str = "kendall", rater: str = MEAN_RATER) -> pd.Series | None:
    s = corr[(corr["metric"] == metric) & (corr["target"] == target) & (corr["coefficient"] == coef) & (corr["rater"] == rater)]
    return None if s.empty else s.iloc[0]


def summary_lines(corr: pd.DataFrame, pref: pd.DataFrame, headline: Sequence[str], *, skipped: Mapping[str, str] | None = None,
                  backend: str = "rule", study: str = "radpref") -> list[str]:
    """Findings in plain words, computed from the tables: AtomiMed's τ against each radiologist
    judgement beside the headline baselines and the best metric, whether the paired differences are
    distinguishable from 0 (BH-adjusted), the pairwise-preference accuracy, and the human ceiling."""
    lines = []
    targets = [t for t in TARGETS if t in set(corr["target"])]
    name = "the rule-based backend" if backend == "rule" else "the LLM backend"
    for t in targets:
        a = _get(corr, "atomimed", t)
        if a is None:
            continue
        parts = [f"AtomiMed ({name}) τ = {format_ci(a.estimate, a.low, a.high, 2)}"]
        verdict = []
        for m in headline:
            b = _get(corr, m, t)
            if b is None:
                parts.append(f"{metric_label(m, METRIC_LABELS)} not computed here")
                continue
            parts.append(f"{metric_label(m, METRIC_LABELS)} {format_number(b.estimate, 2)}")
            if math.isfinite(b.diff_p_bh):
                sig = b.diff_p_bh < 0.05
                direction = "higher" if b.diff_vs_reference > 0 else "lower"
                verdict.append(f"{direction} than {metric_label(m, METRIC_LABELS)} by {format_number(abs(b.diff_vs_reference), 2)}"
                               f" ({'distinguishable' if sig else 'not distinguishable'} from no difference, BH p = "
                               f"{format_number(b.diff_p_bh, 3)})")
        others = corr[(corr["rater"] == MEAN_RATER) & (corr["target"] == t) & (corr["coefficient"] == "kendall")
                      & ~corr["metric"].str.startswith("atomimed")]
        best = others.sort_values("estimate", ascending=False).head(1)
        ceil = _get(corr, INTER_RATER, t, rater=INTER_RATER)
        s = (f"**{TARGETS[t].capitalize()}** (Kendall τ with the radiologists' mean"
             + ("; fewer errors = better" if t in _NEGATED else "") + "): ") + "; ".join(parts) + "."
        if verdict:
            s += " AtomiMed is " + "; ".join(verdict) + "."
        if not best.empty:
            b = best.iloc[0]
            s += f" The best other metric here is {b.label} ({format_ci(b.estimate, b.low, b.high, 2)})."
        if ceil is not None:
            s += f" One radiologist against the others reaches τ = {format_ci(ceil.estimate, ceil.low, ceil.high, 2)}."
        lines.append(s)
    acc = pref[(pref["rater"] == MEAN_RATER) & (pref["statistic"] == "acc")].set_index("metric")
    if "atomimed" in acc.index:
        a = acc.loc["atomimed"]
        s = (f"**Pairwise preference**: over the {int(a.n_strict_pairs)} candidate pairs where the radiologists' consensus "
             f"prefers one candidate, AtomiMed picks the same one in {format_ci(100 * a.estimate, 100 * a.low, 100 * a.high, 1)}% "
             "(a coin: 50%)")
        hs = [f"{metric_label(m, METRIC_LABELS)} {format_number(100 * acc.loc[m, 'estimate'], 1)}%" for m in headline if m in acc.index]
        if hs:
            s += "; " + ", ".join(hs)
        c = pref[(pref["metric"] == INTER_RATER) & (pref["statistic"] == "acc")]
        if not c.empty:
            s += f"; one radiologist against the others: {format_number(100 * c.iloc[0].estimate, 1)}%"
        lines.append(s + ".")
    if skipped:
        lines.append("Not computed here (they need packages or weights this machine lacks): "
                     + ", ".join(metric_label(m, METRIC_LABELS) for m in skipped) + ".")
    return lines
