"""Experiment 5 — synthetic_cxr: fidelity, privacy and utility of synthetic chest X-rays.

Dutt et al., *CheXGenBench* (``../shared/papers/004_175f666718a5c618.txt``). Generators are
benchmarked on fidelity (FID/KID/PRDC on two encoders, per-label FID, alignment), privacy
(re-identification and distances to the training images) and utility (a classifier trained on
synthetic images only; report generation), every headline number with a 95% bootstrap CI.

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params` (schema of ``params/synthetic_cxr/*.yaml``), its generator and Table 5 blocks.
- ``data.py``: real data, patient splits and prompts (image-set I/O itself: :mod:`radaudit.data.image_sets`).
- ``generators.py``: the generators (demo diffusion, memoriser, degrader, held-out real, folder, hub) and their sets.
- ``models.py``: the demo encoders (chest X-ray encoder, CLIP-style alignment, Siamese re-ID).
- ``features.py``: which images go through which encoder, cached by batch.
- ``study.py``: the experiment's steps as the notebook runs them: :func:`prepare`, the sets, the long tables of
  Tables 1-3 and 8 with their CIs.
- ``tables.py``: the layouts of Tables 1-3 (:func:`table1`, :func:`per_label_wide`, :func:`table3`), the demo models'
  cards and :func:`summary_lines`, the run summary in words.
- ``shards.py``: the shard step (``--shard i/n``): fidelity feature extraction.
- ``utility.py``: Table 4, :func:`run_utility`: a classifier trained on each source, scored on real test images:
  ``inputs.py`` (label matrices and images, checked), ``classifier.py`` (the classifier, its recipe and cache),
  ``aurocs.py`` (per-label AUROC, bootstrap CIs, paired differences) and ``table4.py`` (the table and its flags).
- ``reports.py``: Table 5, report generation from each source's image-text pairs.
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json`` (the stand-ins' controls, the FID gap).
- ``controls.py``: the re-ID threshold calibrated on one half of the training patients and tested on the other,
  flagged shares with Wilson CIs, and the encoder's view gain over a pixel probe.
- ``plots.py``: the figures, :func:`plot_closest_pairs` included. The metrics themselves are
  :mod:`radaudit.metrics.image`.
- ``rehearsal.py``: :func:`rehearse`, the paper preset on CPU (tiny twins, invented fixtures; ``--rehearse``).
"""

from radaudit.audits.synthetic_cxr.aurocs import (
    BOOTSTRAP_METHODS,
    auroc,
    paired_auroc_differences,
    per_label_auroc,
    roc_curve_points,
    threshold_metrics,
)
from radaudit.audits.synthetic_cxr.classifier import (
    ARCHITECTURES,
    DEMO_ARCHITECTURE,
    TRAIN_DEFAULTS,
    TrainedClassifier,
    build_classifier,
    classifier_fingerprint,
    load_or_train_classifier,
    predict_scores,
    train_classifier,
)
from radaudit.audits.synthetic_cxr.controls import (
    calibrated_threshold,
    flag_share,
    patient_halves,
    split_calibration,
    view_gain,
)
from radaudit.audits.synthetic_cxr.data import (
    DEMO_LABELS,
    FRONTAL_VIEWS,
    LABEL_GROUPS,
    META_COLUMNS,
    RESIZE_POLICIES,
    SPLITS,
    demo_frame,
    format_labels,
    frame_fingerprint,
    group_findings,
    iter_images,
    load_images,
    mimic_prompts,
    parse_labels,
    read_synthetic_set,
    split_by_patient,
    write_synthetic_set,
)
from radaudit.audits.synthetic_cxr.features import feature_jobs, fidelity_encoders, fidelity_features, image_features
from radaudit.audits.synthetic_cxr.findings import headline_findings
from radaudit.audits.synthetic_cxr.generators import (
    GENERATORS,
    REQUEST_COLUMNS,
    SOURCE_COLUMN,
    GenerationContext,
    GeneratorSpec,
    assign_sources,
    fidelity_requests,
    generate,
    generate_set,
    generator_key,
    match_pool,
    privacy_requests,
    utility_requests,
)
from radaudit.audits.synthetic_cxr.inputs import MACRO, label_matrix
from radaudit.audits.synthetic_cxr.models import (
    CARD_FILE,
    DEMO_CLIP_CONFIG,
    DEMO_ENCODER_CONFIG,
    DEMO_REID_CONFIG,
    augment,
    binary_auroc,
    config_hash,
    data_fingerprint,
    demo_clip_path,
    demo_encoder_path,
    demo_reid_path,
    label_names_of,
    model_card,
    train_demo_clip,
    train_demo_encoder,
    train_demo_reid,
    verification_pairs,
    view_correctness,
)
from radaudit.audits.synthetic_cxr.params import (
    DATASET_SPLITS,
    DEFAULT_DOSE_LEVELS,
    DEFAULT_HELDOUT,
    GeneratorEntry,
    Params,
    ReportUtility,
)
from radaudit.audits.synthetic_cxr.plots import (
    BASELINE_COLOR,
    plot_closest_pairs,
    plot_dose_response,
    plot_fidelity_bars,
    plot_nearest_pairs,
    plot_per_label_heatmap,
    plot_privacy_distributions,
    plot_rank_scatter,
    plot_reid_calibration,
    plot_roc_curves,
    plot_sample_grid,
    plot_utility,
    source_colors,
)
from radaudit.audits.synthetic_cxr.reports import (
    BASE_METRICS,
    DEFAULT_METRICS,
    F1_METRICS,
    LABEL_MODES,
    LONG_COLUMNS,
    METRIC_LABELS,
    PAPER_ORDER,
    GeneratedReports,
    bars_frame,
    expand_metrics,
    nearest_train_index,
    read_generated_reports,
    report_utility_long,
    retrieval_reports,
    table5,
)
from radaudit.audits.synthetic_cxr.study import (
    Study,
    alignment_table,
    dose_response,
    dose_sets,
    dose_spearman,
    encoder_agreement,
    encoder_view_check,
    fid_gap,
    fidelity_long,
    flagged_share,
    generate_sets,
    generators_to_inspect,
    load_models,
    per_label_intervals,
    prepare,
    privacy_for,
    privacy_long,
    privacy_reference_overlap,
    rank_summary,
    real_utility_set,
    reid_ceiling,
    reid_flags,
    reid_halves,
    reid_null_threshold,
    report_candidates,
    report_utility,
    sample_grid_inputs,
    utility_cache_dir,
    utility_train_sets,
)
from radaudit.audits.synthetic_cxr.table4 import utility_flags, utility_table
from radaudit.audits.synthetic_cxr.tables import (
    card_table,
    per_label_table,
    per_label_wide,
    summary_lines,
    table1,
    table3,
)
from radaudit.audits.synthetic_cxr.utility import UtilityResult, run_utility

__all__ = [
    "assign_sources", "DATASET_SPLITS", "DEFAULT_DOSE_LEVELS", "DEFAULT_HELDOUT", "real_utility_set",
    "utility_cache_dir", "utility_train_sets", "dose_response", "dose_spearman", "encoder_agreement", "fid_gap",
    "flagged_share", "headline_findings", "per_label_intervals", "per_label_wide", "plot_dose_response",
    "plot_reid_calibration", "privacy_reference_overlap", "reid_null_threshold", "SOURCE_COLUMN",
    "alignment_table", "ARCHITECTURES", "augment", "auroc", "bars_frame", "BASE_METRICS", "BASELINE_COLOR",
    "binary_auroc", "BOOTSTRAP_METHODS", "build_classifier", "CARD_FILE", "card_table",
    "classifier_fingerprint", "config_hash", "data_fingerprint", "DEFAULT_METRICS", "DEMO_ARCHITECTURE",
    "DEMO_CLIP_CONFIG", "demo_clip_path", "DEMO_ENCODER_CONFIG", "demo_encoder_path", "demo_frame",
    "DEMO_LABELS", "DEMO_REID_CONFIG", "demo_reid_path", "expand_metrics", "F1_METRICS", "fidelity_long",
    "fidelity_requests", "format_labels", "frame_fingerprint", "FRONTAL_VIEWS", "generate", "generate_set",
    "generate_sets", "GeneratedReports", "GenerationContext", "generator_key", "GeneratorEntry", "GENERATORS",
    "generators_to_inspect", "GeneratorSpec", "group_findings", "iter_images", "LABEL_GROUPS", "label_matrix",
    "LABEL_MODES", "label_names_of", "load_images", "load_models", "load_or_train_classifier", "LONG_COLUMNS",
    "MACRO", "match_pool", "META_COLUMNS", "METRIC_LABELS", "mimic_prompts", "model_card",
    "nearest_train_index", "paired_auroc_differences", "PAPER_ORDER", "Params", "parse_labels",
    "per_label_auroc", "per_label_table", "plot_closest_pairs", "plot_fidelity_bars", "plot_nearest_pairs",
    "plot_per_label_heatmap", "plot_privacy_distributions", "plot_rank_scatter", "plot_roc_curves",
    "plot_sample_grid", "plot_utility", "predict_scores", "prepare", "privacy_for", "privacy_long",
    "privacy_requests", "rank_summary", "read_generated_reports", "read_synthetic_set", "report_candidates",
    "report_utility", "report_utility_long", "ReportUtility", "REQUEST_COLUMNS", "RESIZE_POLICIES",
    "retrieval_reports", "roc_curve_points", "run_utility", "sample_grid_inputs", "source_colors",
    "split_by_patient", "SPLITS", "Study", "summary_lines", "table1", "table3", "table5", "threshold_metrics",
    "train_classifier", "TRAIN_DEFAULTS", "train_demo_clip", "train_demo_encoder", "train_demo_reid",
    "TrainedClassifier", "utility_flags", "utility_requests", "utility_table", "UtilityResult",
    "verification_pairs", "write_synthetic_set", "dose_sets", "feature_jobs", "fidelity_encoders", "fidelity_features",
    "image_features", "calibrated_threshold", "encoder_view_check", "flag_share", "patient_halves", "reid_ceiling",
    "reid_flags", "reid_halves", "split_calibration", "view_correctness", "view_gain",
]
