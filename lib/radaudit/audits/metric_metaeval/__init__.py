"""Experiment 2 — metric_metaeval: are radiology report metrics clinically sound?

ReEvalMed (Li et al., EMNLP 2025; ``../shared/papers/001_d2362e1e05417774.txt``). The GT–ME pair
dataset and the monotonicity set are built by :mod:`radaudit.perturb`; this module scores every pair
with every metric and turns the scores into the paper's tables and figures:

- **Discriminative Score** (§4.2.2): the mean score a metric gives to clinically *significant* error
  pairs (lower = better discrimination); **Robustness Score**: the mean score on clinically
  *insignificant* pairs (higher = more robust). Per metric x aspect x error type with 95% bootstrap
  CIs over pairs, laid out as the paper's Tables 4 and 5 (scores x 100, columns E/F/O for the four
  high-impact aspects, S for the others; "Overall" = the mean of the column values), every cell
  ``"estimate [low, high]"``: the cells and Overall come from one resample of the pairs per metric x
  significance (:func:`dsrs_replicates`), and Figure 2.
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
  over reports; ``tau_of_means`` is τ over the five group means (the curve of Figure 4); ``tau_pooled`` is τ_b on
  all (group, score) points pooled, whose p-value is BH-adjusted over metrics. Both carry a 95% CI from a bootstrap
  over GT reports, each report's five rewrites resampled together (:func:`monotonicity_replicates`).
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
  With balanced cells the mean over pairs equals the mean of the column means. The paper gives the cells
  no CI; ours come from the Overall's resamples (a cell absent from a resample is left out of that one).
- **The context ablation's change** (``AUROC_full − AUROC_paper``, beyond the paper): a paired bootstrap over
  pairs, both AUROCs recomputed on the same resampled pairs, BCa (:func:`auroc_change`).
- **Undefined scores** (NaN, e.g. an empty text for some metrics) are kept in the per-pair table,
  counted per metric (``n_undefined``) and left out of every mean, AUROC and τ.
- **RadPref significance.** False and missing findings carry one of four CRIMSON levels: ``urgent``
  and ``actionable_not_urgent`` count as clinically significant, ``not_actionable_not_urgent`` and
  ``benign_expected`` as insignificant. Attribute errors are counted per wrong attribute, by the
  rater's ``significant``/``negligible`` weight.
- **ReXVal zeros.** A (study, candidate, rater) present in the error file with no row for a category
  has 0 errors there. A rater pair's correlation uses the reports both rated; a constant count
  vector has no correlation (NaN, counted in ``n_pairs_undefined``, left out of the average).

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params`, the schema of ``params/metric_metaeval/*.yaml``.
- ``data.py``: the GT-ME pairs and the monotonicity set (:func:`build_datasets`, rule or LLM engine).
- ``study.py``: the experiment's steps as the notebook runs them, after its inputs: every metric on every pair
  (:func:`score_pairs`).
- ``scores.py``: the measures on the scores: DS/RS, AUROC of harmful vs harmless rewrites, monotonicity.
- ``agreement.py``: inter-radiologist agreement on error counts (Table 1; RadPref, ReXVal).
- ``tables.py``: the DS/RS tables, undefined scores per metric, whole-report vs trimmed AUROC, the run summary.
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json`` (the context ablation first; bars, control).
- ``verifier.py``: which metrics share the pairs' verifier (marked † in the tables, left out of the medians).
- ``controls.py``: the planted oracle, the control the AUROC findings rest on.
- ``plots.py``: the figures.
- ``rehearsal.py``: :func:`rehearse`, the paper preset on CPU (tiny twins, invented fixtures; ``--rehearse``).
"""

from radaudit.audits.metric_metaeval.agreement import (
    AGREEMENT_TYPES,
    RADPREF_INSIGNIFICANT,
    RADPREF_SIGNIFICANT,
    RADPREF_TYPES,
    REXVAL_CANDIDATE_LABELS,
    agreement_table,
    mean_pairwise_agreement,
    pairwise_rater_correlations,
    radpref_agreement,
    radpref_error_counts,
    rexval_agreement,
    rexval_error_counts,
)
from radaudit.audits.metric_metaeval.controls import ORACLE, ORACLE_AUROC, oracle_auroc, oracle_noise_sd, oracle_scores
from radaudit.audits.metric_metaeval.data import (
    MetaevalData,
    build_datasets,
    examples_table,
    make_engine,
)
from radaudit.audits.metric_metaeval.findings import (
    ORACLE_CONTROL_ID,
    SEPARATION_MIN,
    fill_finding,
    headline_findings,
    oracle_finding,
    rules_finding,
    run_findings,
)
from radaudit.audits.metric_metaeval.params import (
    Params,
)
from radaudit.audits.metric_metaeval.plots import (
    INSIG_COLOR,
    SIG_COLOR,
    fig_auroc_context,
    fig_auroc_heatmap,
    fig_ds_rs,
    fig_monotonicity,
)
from radaudit.audits.metric_metaeval.scores import (
    ASPECT_SHORT,
    CELL_AVERAGES,
    CI_LABELS,
    ERROR_CODES,
    METRIC_LABELS,
    METRIC_RANGES,
    OVERALL_CIS,
    SCORE_COLUMNS,
    TABLE_ASPECT_ORDER,
    auroc,
    auroc_change,
    auroc_table,
    column_key,
    ds_rs_by_rule,
    ds_rs_long,
    dsrs_replicates,
    kendall_tau,
    median_auroc,
    metric_label,
    monotonicity_long,
    monotonicity_replicates,
    monotonicity_summary,
    n_discrimination_pairs,
    paper_overall_ci,
    rules_per_cell,
    table_columns,
    violated_transitions,
)
from radaudit.audits.metric_metaeval.study import resolve_metrics, score_pairs
from radaudit.audits.metric_metaeval.tables import (
    context_comparison,
    fill_line,
    score_table,
    summary_lines,
    undefined_table,
)
from radaudit.audits.metric_metaeval.verifier import (
    SAME_LABELER,
    SAME_TOOLKIT,
    VERIFIER_MARK,
    VERIFIER_SHARED,
    mark_labels,
    shares_verifier,
    verifier_column,
    verifier_footnote,
    verifier_marks,
    without_shared,
)

__all__ = [
    "agreement_table", "AGREEMENT_TYPES", "ASPECT_SHORT", "auroc", "auroc_change", "auroc_table", "build_datasets",
    "CELL_AVERAGES", "CI_LABELS", "column_key", "fill_finding", "fill_line", "n_discrimination_pairs", "ds_rs_by_rule",
    "headline_findings", "rules_finding", "OVERALL_CIS", "paper_overall_ci", "rules_per_cell", "median_auroc",
    "context_comparison", "ds_rs_long", "dsrs_replicates", "ERROR_CODES", "examples_table", "fig_auroc_context",
    "fig_auroc_heatmap",
    "fig_ds_rs", "fig_monotonicity", "INSIG_COLOR", "kendall_tau", "make_engine", "mean_pairwise_agreement", "MetaevalData",
    "metric_label", "METRIC_LABELS", "METRIC_RANGES", "monotonicity_long", "monotonicity_replicates",
    "monotonicity_summary",
    "pairwise_rater_correlations", "Params", "radpref_agreement", "radpref_error_counts", "RADPREF_INSIGNIFICANT",
    "RADPREF_SIGNIFICANT", "RADPREF_TYPES", "resolve_metrics", "rexval_agreement", "REXVAL_CANDIDATE_LABELS",
    "rexval_error_counts", "SCORE_COLUMNS", "score_pairs", "score_table", "SIG_COLOR", "summary_lines", "TABLE_ASPECT_ORDER",
    "table_columns", "undefined_table", "violated_transitions",
    "mark_labels", "ORACLE", "ORACLE_AUROC", "ORACLE_CONTROL_ID", "oracle_auroc", "oracle_finding", "oracle_noise_sd",
    "oracle_scores", "run_findings", "SAME_LABELER", "SAME_TOOLKIT", "SEPARATION_MIN", "shares_verifier", "VERIFIER_MARK",
    "VERIFIER_SHARED", "verifier_column", "verifier_footnote", "verifier_marks", "without_shared",
]
