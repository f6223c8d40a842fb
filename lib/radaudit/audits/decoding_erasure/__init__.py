"""Experiment 1 — decoding_erasure: does the decoding strategy erase clinical terminology?

Parikh, Feragen, Das & Frank, "Measuring What VLMs Don't Say" (``../shared/papers/000_c11b3b836ef0a58a.txt``).
This package turns any corpus of (reference, prediction, group) rows into every number of the
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
  candidate word (a fully collapsed corpus) WEAT is NaN with a note. S and ES each carry a 95% BCa interval
  over the target words, resampled within each set (``intervals.py``).
- **ΔDIR** = DIR(pred) − DIR(ref), DIR = N_{groups[1]} / N_{groups[0]} tokens (male-to-female for
  the default ``("F", "M")``), :func:`radaudit.metrics.dir.delta_dir`; its 95% BCa interval resamples reports
  (reference and prediction together) within each group (``intervals.py``).
- **Seeds.** Each random step gets its own seed derived from ``seed`` and the corpus name
  (:func:`radaudit.stats.stable_seed`), so results do not depend on the order corpora are run in.

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params`, the schema of ``params/decoding_erasure/*.yaml``.
- ``data.py``: the inputs read from datasets: the paper path's studies and resized images, the real-system baselines.
- ``corpus.py``: :func:`evaluate_corpus` (any corpus -> every number of Table 1/2), the collapse floor.
- ``intervals.py``: the 95% bootstrap CIs of ΔDIR (reports, stratified by group) and WEAT S/ES (target words within
  each set): which unit each resamples and why, vectorised replicates, BCa.
- ``models.py``: the demo report writers (training corpus per sex skew, training, generation).
- ``study.py``: the experiment's steps as the notebook runs them, after its inputs: generations per decoding
  strategy, their evaluation, the skew study.
- ``shards.py``: the shard step (``--shard i/n``): report generation.
- ``tables.py``: Table 1 / Table 2 layouts, the p* sweep, skews, words, the run summary.
- ``erasure.py``: which reference words can be erased (BH), the Erasure counts' CIs over studies, the planted and
  halving controls (:func:`erasure_controls`, :func:`erasure_intervals`).
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json`` (each number, its control, a verdict).
- ``plots.py``: Fig. 1, 2a, 2c, 3 and the vocabulary transitions.
- ``rehearsal.py``: :func:`rehearse`, the paper preset on CPU (tiny twins, invented fixtures; ``--rehearse``).
"""

from radaudit.audits.decoding_erasure.corpus import (
    DEFAULT_TEMPLATE,
    SURFACE_LABELS,
    SURFACE_METRICS,
    CorpusResult,
    collapse_floor,
    copy_control,
    evaluate_corpus,
)
from radaudit.audits.decoding_erasure.data import BASELINE_NAMES, baseline_corpora, select_image_studies
from radaudit.audits.decoding_erasure.erasure import (
    N_HALVINGS,
    PLANTED_PHRASE,
    erasure_bootstrap,
    erasure_controls,
    erasure_intervals,
    halving_control,
    plant_phrase,
    planted_control,
    planted_mentions,
)
from radaudit.audits.decoding_erasure.findings import headline_findings, real_word_vocabulary
from radaudit.audits.decoding_erasure.models import (
    DEMO_CONFIG,
    PAPER_SKEWS,
    build_training_corpus,
    config_hash,
    corpus_fingerprint,
    demo_model_path,
    format_prompt,
    generate_reports,
    train_report_model,
)
from radaudit.audits.decoding_erasure.params import (
    Params,
)
from radaudit.audits.decoding_erasure.plots import (
    CATEGORY_COLORS,
    fig_association_shift,
    fig_pstar_sweep,
    fig_skew_sensitivity,
    fig_surface_vs_diversity,
    fig_vocabulary_transitions,
)
from radaudit.audits.decoding_erasure.study import (
    GENERATION_COLUMNS,
    corpus_kwargs,
    evaluate_strategies,
    lora_config,
    report_seeds,
    skew_sensitivity,
    skew_study_plan,
    study_generations,
)
from radaudit.audits.decoding_erasure.tables import (
    DIVERSITY_LABELS,
    REF_COLUMN,
    SECTION_ORDER,
    generation_summary,
    pstar_sweep_table,
    ranking_reversals,
    skew_label,
    skew_table,
    strategy_table,
    strategy_table_long,
    summary_lines,
    system_table,
    vocabulary_transitions,
    words_table,
)

__all__ = [
    "baseline_corpora", "BASELINE_NAMES", "build_training_corpus", "CATEGORY_COLORS", "collapse_floor", "copy_control",
    "config_hash", "corpus_fingerprint", "corpus_kwargs", "CorpusResult", "DEFAULT_TEMPLATE", "DEMO_CONFIG",
    "demo_model_path", "DIVERSITY_LABELS", "erasure_bootstrap", "erasure_controls", "erasure_intervals",
    "evaluate_corpus", "evaluate_strategies", "fig_association_shift", "halving_control", "N_HALVINGS",
    "plant_phrase", "planted_control", "planted_mentions", "PLANTED_PHRASE",
    "fig_pstar_sweep", "headline_findings", "real_word_vocabulary", "fig_skew_sensitivity", "fig_surface_vs_diversity",
    "fig_vocabulary_transitions", "format_prompt", "generate_reports", "GENERATION_COLUMNS", "generation_summary",
    "lora_config", "PAPER_SKEWS", "Params", "pstar_sweep_table", "ranking_reversals", "REF_COLUMN", "report_seeds",
    "SECTION_ORDER", "select_image_studies", "skew_label", "skew_sensitivity", "skew_study_plan", "skew_table",
    "strategy_table", "strategy_table_long", "study_generations", "summary_lines", "SURFACE_LABELS",
    "SURFACE_METRICS", "system_table", "train_report_model", "vocabulary_transitions", "words_table",
]
