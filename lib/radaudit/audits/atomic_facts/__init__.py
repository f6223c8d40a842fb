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
  Each P/R/F1 has a bootstrap CI over the system's *reports*: a resample sums the drawn reports' question counts
  and recomputes the pooled ratios (micro, as the estimate), BCa from the leave-one-report-out sums
  (:func:`granular_table`). The figure is a heatmap (as the paper's): the intervals are in its table.
- **Mean judgement per system.** The radiologists' mean error counts and rating per system, each with a BCa
  bootstrap CI over the rated reports (a report keeps all its radiologists; :func:`judgement_means`).
- **LLM backend outputs.** The decomposition and reader replies must match a strict JSON schema
  (:mod:`radaudit.atomic.schema`). A candidate whose reference or own decomposition fails after
  repairs and retries is not scored: its AtomiMed columns are NaN, the agreement analyses leave it
  out (``n_undefined``), and :func:`failures_table` counts it beside every failed, repaired and
  retried call of each stage and every unusable answer (scored as a non-match).

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params`, the schema of ``params/atomic_facts/*.yaml``.
- ``data.py``: reader studies (RadPref, ReXVal, your generations) as candidates + judgements; their dev/test halves.
- ``study.py``: the experiment's steps as the notebook runs them, after its inputs: AtomiMed (with its trace) and the
  baseline metrics on a study's candidates (:func:`score_study`).
- ``scores.py``: the metrics' display names, and which metrics score every candidate alike (:func:`distinct_metrics`).
- ``agreement.py``: tau-b / rho against radiologists and pairwise preference, case-bootstrap CIs, per half of the cases.
- ``tables.py``: Table 2, Table 3, the mean judgement per system, granular accuracy per anatomical system (with
  CIs), the LLM backend's failures, the run summary.
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json``.
- ``plots.py``: the figures.
- ``rehearsal.py``: :func:`rehearse`, the paper preset on CPU (tiny twins, invented fixtures; ``--rehearse``).
"""

from radaudit.audits.atomic_facts.agreement import (
    CI_METHODS,
    agreement_by_split,
    agreement_coefficients,
    correlation_table,
    human_preference,
    kendall_tau_b,
    metric_preference,
    preference_agreement,
    preference_table,
    spearman_rho,
    target_matrix,
)
from radaudit.audits.atomic_facts.data import (
    CANDIDATE_COLUMNS,
    INTER_RATER,
    JUDGEMENT_COLUMNS,
    MEAN_RATER,
    SIGNIFICANT_LEVELS,
    SPLIT_PARTS,
    SPLIT_SEED,
    SYSTEM_LABELS,
    TARGETS,
    ReaderStudy,
    generations_study,
    radpref_study,
    rexval_study,
    select_cases,
    split_cases,
    split_study,
)
from radaudit.audits.atomic_facts.findings import headline_findings, in_sample_reason, unseen_agreement
from radaudit.audits.atomic_facts.params import (
    Params,
)
from radaudit.audits.atomic_facts.plots import (
    fig_correlation,
    fig_granular,
    fig_preference,
)
from radaudit.audits.atomic_facts.scores import METRIC_LABELS, distinct_metrics
from radaudit.audits.atomic_facts.study import MetricScores, atomimed_options, resolve_baselines, score_study
from radaudit.audits.atomic_facts.tables import (
    ANATOMICAL_SYSTEMS,
    FAILURE_COLUMNS,
    GRANULAR_COLUMNS,
    GRANULAR_MAX_FAILED,
    OTHER_SYSTEM,
    failure_line,
    failures_table,
    granular_table,
    judgement_means,
    judgements_wide,
    pooled_prf,
    report_counts,
    summary_lines,
    system_of,
    table2,
    table3,
)

__all__ = [
    "in_sample_reason", "unseen_agreement",
    "agreement_by_split", "CI_METHODS", "select_cases", "split_cases", "split_study", "SPLIT_PARTS", "SPLIT_SEED",
    "agreement_coefficients", "ANATOMICAL_SYSTEMS", "atomimed_options", "CANDIDATE_COLUMNS",
    "correlation_table", "distinct_metrics", "FAILURE_COLUMNS", "failure_line", "failures_table", "fig_correlation",
    "fig_granular", "fig_preference", "generations_study", "GRANULAR_COLUMNS", "granular_table", "headline_findings",
    "human_preference",
    "INTER_RATER", "JUDGEMENT_COLUMNS",
    "kendall_tau_b", "MEAN_RATER", "METRIC_LABELS", "metric_preference", "MetricScores", "OTHER_SYSTEM",
    "Params", "preference_agreement", "preference_table", "radpref_study", "ReaderStudy", "resolve_baselines",
    "rexval_study", "score_study", "SIGNIFICANT_LEVELS", "spearman_rho", "summary_lines", "SYSTEM_LABELS",
    "system_of", "table2", "table3", "target_matrix", "TARGETS",
    "GRANULAR_MAX_FAILED", "judgement_means", "judgements_wide", "pooled_prf", "report_counts",
]
