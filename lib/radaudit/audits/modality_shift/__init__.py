"""Experiment 4 — modality_shift: does a vision-language model use the image or the text?

Restrepo et al., "On the Risk of Misleading Reports: Diagnosing Textual Biases in Multimodal Clinical
AI" (``../shared/papers/003_528df7f4b7accfa0.txt``). Selective Modality Shifting (SMS): the image or
the text of each sample is swapped for an opposite-label sample's (seeded), or removed, and the
model's answers are compared across the five conditions.

Where things are (one line per module)
--------------------------------------
- ``params.py``: :class:`Params` (schema of ``params/modality_shift/*.yaml``) and its :class:`ModelSpec` entries.
- ``data.py``: the paper's datasets (MIMIC-CXR, FairVLMed) as SMS samples, and the run's own selected from its
  ``Params`` (:func:`evaluation_samples`, the prompt :func:`template`).
- ``conditions.py``: the five conditions, prompts, swap partners, items, answer parsing, running a model on them.
- ``marker.py``: the marked images (the label burned in), the image pathway's positive control.
- ``models.py``: the demo stand-in VLM (``DEMO_MODEL``), trained here on covid-chestxray.
- ``study.py``: the experiment's steps as the notebook runs them: loading the models, every condition.
- ``tables.py``: the metric tables with CIs: accuracy/F1, NFR, ECE and reliability, answer rates, AUROC, answers changed,
  means over the traced items (attention by layer, marker saliency: :func:`item_means`); the run summary in words
  (:func:`summary_lines`).
- ``heatmap.py``: the answer token's attention by modality per layer and over the image patches.
- ``traces.py``: the attention traces kept on disk (a rerun with the same model and items reads them back).
- ``probe.py``: a pixel and a text probe (how much of the label each modality carries) and the notes that name
  the diagnosis.
- ``findings.py``: :func:`headline_findings`, the run's ``findings.json`` (controls first).
- ``plots.py``: Fig. 2-4, the per-layer modality attention and the patch heatmaps.
- ``rehearsal.py``: :func:`rehearse`, the paper preset on CPU (tiny twins, invented fixtures; ``--rehearse``).
"""

from radaudit.audits.modality_shift.conditions import (
    ALL_CONDITIONS,
    ANSWERS,
    CONDITION_LABELS,
    CONDITIONS,
    MARKED_CONDITIONS,
    NO_IMAGE_CONDITIONS,
    NO_TEXT_CONDITIONS,
    PROMPTS,
    SAME_LABEL_CONDITIONS,
    attention_table,
    build_items,
    build_samples,
    covid_samples,
    draw_partners,
    format_prompt,
    get_template,
    parse_answer,
    run_conditions,
    split_by_patient,
)
from radaudit.audits.modality_shift.data import (
    DATASETS,
    MIMIC_CONDITIONS,
    all_samples,
    evaluation_samples,
    fairvlmed_samples,
    load_samples,
    mimic_labels,
    mimic_samples,
    template,
)
from radaudit.audits.modality_shift.findings import headline_findings
from radaudit.audits.modality_shift.heatmap import (
    AnswerAttention,
    answer_attention,
    attention_maps,
    gradient_maps,
    image_grid,
    layer_modality_shares,
    patch_heatmap,
)
from radaudit.audits.modality_shift.marker import add_marked_images, marker_share
from radaudit.audits.modality_shift.models import (
    CHAT_TEMPLATE,
    DEMO_MODEL,
    DEMO_VLM_CONFIG,
    TRAIN_CONDITIONS,
    config_hash,
    demo_vlm_path,
    samples_fingerprint,
    train_demo_vlm,
    vllm_unservable,
)
from radaudit.audits.modality_shift.params import ModelSpec, Params
from radaudit.audits.modality_shift.plots import (
    CONDITION_COLORS,
    model_view,
    plot_attention_shares,
    plot_ece_bars,
    plot_layer_shares,
    plot_metric_bars,
    plot_nfr_heatmap,
    plot_patch_heatmaps,
    plot_reliability,
    plot_text_attention,
)
from radaudit.audits.modality_shift.probe import (
    DIAGNOSIS_PATTERNS,
    image_probe,
    notes_naming_diagnosis,
    pixel_features,
    text_documents,
    text_probe,
)
from radaudit.audits.modality_shift.study import (
    build_run_items,
    condition_order,
    load_engine,
    load_model,
    pick_attention_samples,
    run_models,
    save_results,
)
from radaudit.audits.modality_shift.tables import (
    CLASSIFICATION_METRICS,
    LAYER_MEASURES,
    UNKNOWN_POLICIES,
    answer_change_rate,
    answer_rates,
    auroc,
    auroc_table,
    changed_table,
    classification_metrics,
    confusion_counts,
    ece_table,
    expected_calibration_error,
    item_means,
    item_means_cells,
    majority_accuracy,
    metrics_table,
    negative_flip_rate,
    nfr_table,
    reliability_bins,
    reliability_table,
    summary_lines,
)

__all__ = [
    "all_samples", "AnswerAttention", "answer_attention", "answer_change_rate", "attention_maps", "auroc",
    "gradient_maps", "marker_share", "MARKED_CONDITIONS", "ALL_CONDITIONS", "add_marked_images",
    "auroc_table", "changed_table", "headline_findings", "image_grid", "image_probe", "layer_modality_shares",
    "model_view", "NO_IMAGE_CONDITIONS", "NO_TEXT_CONDITIONS", "patch_heatmap", "pixel_features",
    "plot_layer_shares", "plot_patch_heatmaps",
    "answer_rates", "ANSWERS", "attention_table", "build_items", "build_run_items", "build_samples",
    "CHAT_TEMPLATE", "CLASSIFICATION_METRICS", "classification_metrics", "CONDITION_COLORS", "CONDITION_LABELS",
    "condition_order", "CONDITIONS", "config_hash", "confusion_counts", "covid_samples", "DATASETS",
    "DEMO_MODEL", "DEMO_VLM_CONFIG", "demo_vlm_path", "draw_partners", "ece_table", "evaluation_samples",
    "expected_calibration_error", "fairvlmed_samples", "format_prompt", "get_template", "load_engine", "load_model",
    "load_samples", "metrics_table", "MIMIC_CONDITIONS", "mimic_labels", "mimic_samples", "ModelSpec",
    "negative_flip_rate", "nfr_table", "Params", "parse_answer", "pick_attention_samples",
    "plot_attention_shares", "plot_ece_bars", "plot_metric_bars", "plot_nfr_heatmap", "plot_reliability",
    "plot_text_attention", "PROMPTS", "reliability_bins", "reliability_table", "run_conditions", "run_models",
    "samples_fingerprint", "save_results", "split_by_patient", "summary_lines", "template", "TRAIN_CONDITIONS",
    "train_demo_vlm", "UNKNOWN_POLICIES", "vllm_unservable", "SAME_LABEL_CONDITIONS", "DIAGNOSIS_PATTERNS",
    "notes_naming_diagnosis", "text_documents", "text_probe", "majority_accuracy", "item_means", "item_means_cells",
    "LAYER_MEASURES",
]
