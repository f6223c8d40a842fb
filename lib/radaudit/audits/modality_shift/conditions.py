"""Selective Modality Shifting (SMS): does a vision-language model use the image or the text?

Paper: Restrepo et al., "On the Risk of Misleading Reports: Diagnosing Textual Biases in Multimodal
Clinical AI" (``../shared/papers/003_528df7f4b7accfa0.txt``). Anchor code:
``dsrestrepo/Selective-Modality-Shifting-SMS-`` (``../shared/ANCHORS.md`` §4), whose faults we do
not copy: unseeded swaps, an NFR denominator over all pairs only, unknown answers silently dropped,
figures typed in by hand.

This module builds the inputs and runs the model; metrics are in
:mod:`radaudit.audits.modality_shift.tables`, figures in :mod:`radaudit.audits.modality_shift.plots`.

Pipeline (every step a pure function over tidy tables)::

    samples  = covid_samples(data_root, seed=0)                      # (image, text, label) + split
    test     = samples[samples.split == "test"]
    partners = draw_partners(test, seed=0)                           # opposite-label swap partners
    items    = build_items(test, partners, PROMPTS["covid_cxr"])     # sample x condition x prompt
    results  = run_conditions(processor, model, items, model_name="demo", cache=True)

Conditions (§2.1-2.2, §3.2; anchor ``shift`` column in brackets):

* ``no_shift`` [No]: ``(I, T, y)``;
* ``image_shift`` [Image]: ``(I', T, y)``, ``I'`` the image of a partner with the opposite label;
* ``text_shift`` [Text]: ``(I, T', y)``, ``T'`` the text of a partner with the opposite label;
* ``only_text`` [Only_text]: ``(-, T, y)``: no image at all (no image placeholder);
* ``only_image`` [Only_image]: ``(I, -, y)``: the image with the image-only instruction;
* ``no_input`` (ours): ``(-, -, y)``: neither image nor text, only the question and the instruction — the
  same prompt for every sample, so its P(yes) is one constant and its AUROC 0.5 by construction: a
  descriptive number (the answer the model gives with nothing to go on), **not** a control, as it cannot fail.

The positive control of the image pathway (ours, :data:`MARKED_CONDITIONS`, for a model trained with
marked images — the demo stand-in; see :mod:`radaudit.audits.modality_shift.marker`): the same inputs
with the image replaced by its copy on which the label is burned in:

* ``marked_no_shift``: ``(I*, T, y)``; ``marked_image_shift``: ``(I'*, T, y)``, the partner's marked copy,
  whose marker names the opposite label; ``marked_only_image``: ``(I*, -, y)``. Each uses the prompt of
  its unmarked condition (:func:`base_condition`).

The negative controls of the swaps (ours, :data:`SAME_LABEL_CONDITIONS`): the same swaps with a partner of the
**same** label (another patient's), which must change few answers — a model whose answers follow the label an
image or a text shows keeps them when that label is kept; one that reads which patient or which picture it is
(identity, noise) changes them as often as under the opposite-label swap:

* ``same_label_image_shift``: ``(I'', T, y)``, ``I''`` the image of another patient with the same label;
* ``same_label_text_shift``: ``(I, T'', y)``, ``T''`` the text (and, with ``swap_metadata``, the header) of
  another patient with the same label;
* ``marked_same_label_image_shift``: ``(I''*, T, y)``, that partner's marked copy (its marker names the same
  label), read against ``marked_no_shift``.

The ground truth is always the original sample's ``y``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN
from radaudit.audits.modality_shift.traces import memo_traces
from radaudit.data import load_dataset
from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.attention import attention_by_modality
from radaudit.models.vlm import DEFAULT_CANDIDATES, first_token_scores, parse_yes_no

__all__ = [
    "ALL_CONDITIONS", "ANSWERS", "CONDITIONS", "CONDITION_LABELS", "MARKED_CONDITIONS", "SAME_LABEL_CONDITIONS",
    "base_condition",
    "NO_IMAGE_CONDITIONS", "NO_TEXT_CONDITIONS", "PROMPTS", "attention_table", "build_items", "build_samples",
    "covid_samples", "draw_partners", "format_prompt", "get_template", "is_missing", "parse_answer", "run_conditions",
    "split_by_patient", "TRUNCATION_MARK", "truncate_note",
]

log = logging.getLogger(__name__)

#: The paper's five conditions in its Fig. 2 order, then ``no_input`` (both inputs removed; descriptive).
CONDITIONS: tuple[str, ...] = ("no_shift", "image_shift", "text_shift", "only_text", "only_image", "no_input")
#: The swaps' negative controls: a partner of the same label (see the module docstring).
SAME_LABEL_CONDITIONS: tuple[str, ...] = ("same_label_image_shift", "same_label_text_shift")
#: The image pathway's positive control: conditions shown the marked copy of the image (see the module docstring).
MARKED_CONDITIONS: tuple[str, ...] = ("marked_no_shift", "marked_image_shift", "marked_only_image",
                                      "marked_same_label_image_shift")
#: Every condition :func:`build_items` knows, in display order.
ALL_CONDITIONS: tuple[str, ...] = CONDITIONS + SAME_LABEL_CONDITIONS + MARKED_CONDITIONS
#: Display names (paper Fig. 2 legend; ours for the controls).
CONDITION_LABELS: dict[str, str] = {"no_shift": "No Shift", "image_shift": "Image Shift", "text_shift": "Text Shift",
                                    "only_text": "Only Text", "only_image": "Only Image", "no_input": "No Input",
                                    "same_label_image_shift": "Image Shift (same label)",
                                    "same_label_text_shift": "Text Shift (same label)",
                                    "marked_no_shift": "No Shift (marked)", "marked_image_shift": "Image Shift (marked)",
                                    "marked_only_image": "Only Image (marked)",
                                    "marked_same_label_image_shift": "Image Shift (marked, same label)"}
#: Which partner column of :func:`draw_partners` each swap takes its image / text from.
_PARTNER_COLUMN: dict[str, tuple[str, str]] = {"image_shift": ("image", "image_partner"),
                                                "text_shift": ("text", "text_partner"),
                                                "same_label_image_shift": ("image", "same_label_image_partner"),
                                                "same_label_text_shift": ("text", "same_label_text_partner")}
#: Conditions whose input holds no image / no text (what :func:`build_items` removes).
NO_IMAGE_CONDITIONS: frozenset[str] = frozenset({"only_text", "no_input"})
NO_TEXT_CONDITIONS: frozenset[str] = frozenset({"only_image", "no_input", "marked_only_image"})


def base_condition(condition: str) -> str:
    """The unmarked condition whose prompt and swap a condition uses: ``marked_image_shift`` -> ``image_shift``."""
    return condition[len("marked_"):] if condition in MARKED_CONDITIONS else condition
#: Parsed answers. ``unmatched`` only with the "unmatched" prompt variant.
ANSWERS: tuple[str, ...] = ("yes", "no", "unmatched", "unknown")

SAMPLE_COLUMNS = ["sample_id", "patient_id", "image_path", "text", "label", "split"]

# --------------------------------------------------------------------------------------------------
# prompt templates (data; the presets may override any key)

_INSTRUCTION = ('Your response must be "Yes" if {positive} is detected or "No" if {negative}. '
                'Your response should be only "yes" or "no" (without additional commentary).')
_UNMATCHED = ("If there is a mismatch between the image and the text, or the information is not conclusive "
              "respond with 'unmatched'. Otherwise respond with the options 'yes' or 'no'.")
_MIMIC_CONDITIONS = ("Pleural Effusion, Atelectasis, Cardiomegaly, Consolidation, Edema, Enlarged Cardiomediastinum, "
                     "Fracture, Lung Lesion, Lung Opacity, Pleural Other, Pneumonia, or Pneumothorax")

#: Prompt templates per dataset (paper §3.1 "Prompting"; wording from the anchor's ``src/prompts.py``,
#: ANCHORS.md §4). Keys of each template:
#:
#: * ``label_names`` (optional): the names of label 0 and 1, for figure titles.
#: * ``question_no_input`` (optional; default ``question_only_image``): the question of the
#:   ``no_input`` negative control, asked with neither image nor text.
#: * ``header``: the metadata header, a ``str.format`` template over the sample's columns; ``{text}``
#:   is the clinical text (report / notes). Missing values render as ``missing_value``.
#: * ``question`` / ``question_only_text`` / ``question_only_image``: the task question for the
#:   image + text conditions, the text-only ablation and the image-only ablation.
#: * ``instruction``: the yes/no answer instruction; ``unmatched_suffix``: the optional "unmatched"
#:   variant, which replaces nothing and is appended after the instruction.
#: * ``model_suffixes``: extra text appended for a model type (the anchor adds one for Llama-3.2 /
#:   ``mllama``).
#: * ``yes_patterns`` / ``no_patterns``: dataset regexes for :func:`parse_answer` (step 4).
#:
#: Choices where the anchor is odd: its MIMIC question reads "does the patien has any condition";
#: we write "does the patient have any condition". ``covid_cxr`` (the demo data) follows the MIMIC
#: layout with COVID-19 as the condition and the clinical notes as the text.
PROMPTS: dict[str, dict[str, Any]] = {
    "covid_cxr": {
        "header": "Patient Information:\nAge: {age}\nSex: {sex}\nView position: {view}\nClinical notes: {text}",
        "question": ("Based on the provided patient information and the associated chest X-ray image, "
                     "does the patient have COVID-19?"),
        "question_only_text": "Based on the provided patient information, does the patient have COVID-19?",
        "question_only_image": "Based on the image only, does the patient have COVID-19?",
        "question_no_input": "Does the patient have COVID-19?",
        "label_names": ["other finding", "COVID-19"],
        "instruction": _INSTRUCTION.format(positive="COVID-19", negative="there is no COVID-19"),
        "unmatched_suffix": _UNMATCHED,
        "model_suffixes": {"mllama": "Only respond with the answer (yes or no). No additional commentary."},
        "missing_value": "unknown",
        "no_patterns": [r"\bno evidence\b", r"\bdoes not (?:have|show|reveal)\b", r"\bnegative\b",
                        r"\bnot (?:have|show) covid"],
        "yes_patterns": [r"\b(?:has|have|shows?|positive for|consistent with) covid"],
    },
    "mimic_cxr": {
        "header": ("Patient Information:\nAge: {age}\nSex: {sex}\nRace: {race}\nViewPosition: {view}\n"
                   "Procedure description: {procedure}\nSummary: {text}"),
        "question": ("Based on the provided patient information and the associated chest X-ray image, does the "
                     f"patient have any condition ({_MIMIC_CONDITIONS})?"),
        "question_only_text": f"Based on the provided patient information, does the patient have any condition "
                              f"({_MIMIC_CONDITIONS})?",
        "question_only_image": f"Based on the image only, does the patient have any condition ({_MIMIC_CONDITIONS})?",
        "question_no_input": f"Does the patient have any condition ({_MIMIC_CONDITIONS})?",
        "label_names": ["no finding", "abnormal"],
        "instruction": _INSTRUCTION.format(positive="any condition", negative="no abnormality is detected"),
        "unmatched_suffix": _UNMATCHED,
        "model_suffixes": {"mllama": "Only respond with the answer (yes or no). No additional commentary."},
        "missing_value": "unknown",
        "no_patterns": [r"\bno evidence\b", r"\bno acute cardiopulmonary process\b",
                        r"\bdoes not (?:have|show|reveal)\b", r"\bwithin normal limits\b"],
        # the anchor's list, with its fused pattern (a missing comma) split again
        "yes_patterns": [r"\bpleural effusion\b", r"\bpneumothorax\b", r"\bconsolidation\b", r"\batelectasis\b",
                         r"\bcardiomegaly\b", r"\bedema\b", r"\bpneumonia\b", r"\bfracture\b", r"\blung lesion\b",
                         r"\blung opacity\b"],
    },
    "fairvlmed": {
        "header": "Patient Information:\nAge: {age}\nSex: {sex}\nRace: {race}\nClinical notes: {text}",
        "question": "Based on this image and patient information, does the patient have glaucoma?",
        "question_only_text": "Based on the patient information, does the patient have glaucoma?",
        "question_only_image": "Based on the image only, does the patient have glaucoma?",
        "question_no_input": "Does the patient have glaucoma?",
        "label_names": ["healthy", "glaucoma"],
        "instruction": 'Respond with "yes" or "no". (without additional commentary)',
        "unmatched_suffix": _UNMATCHED,
        "model_suffixes": {"mllama": "Only respond with the answer (yes or no). No additional commentary."},
        "missing_value": "unknown",
        "no_patterns": [r"\bno evidence\b", r"\bdoes not (?:have|show|reveal)\b", r"\bhealthy\b"],
        "yes_patterns": [r"\bglaucoma diagnosis\b", r"\bglaucomatous\b", r"\bhas glaucoma\b"],
    },
}

_TEMPLATE_KEYS = ("header", "question", "question_only_text", "question_only_image", "instruction")


def get_template(dataset: str | Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A prompt template: ``PROMPTS[dataset]`` (or a mapping given whole) with ``overrides`` merged on top.

    Raises :class:`ParamsError` naming the allowed datasets, or a missing required key.
    """
    if isinstance(dataset, str):
        if dataset not in PROMPTS:
            raise ParamsError(f"No prompt template for dataset {dataset!r}; known: {', '.join(PROMPTS)} "
                              "(or pass a template mapping with keys " + ", ".join(_TEMPLATE_KEYS) + ").")
        base = dict(PROMPTS[dataset])
    else:
        base = dict(dataset)
    base.update(dict(overrides or {}))
    missing = [k for k in _TEMPLATE_KEYS if not base.get(k)]
    if missing:
        raise ParamsError(f"Prompt template lacks {missing}; every template needs {', '.join(_TEMPLATE_KEYS)}.")
    return base


class _Fields(dict):
    def __init__(self, values: Mapping[str, Any], missing: str) -> None:
        super().__init__({k: v for k, v in values.items() if not is_missing(v)})
        self.missing = missing

    def __missing__(self, key: str) -> str:
        return self.missing


def is_missing(v: Any) -> bool:
    """Whether an item's field holds no value: ``None``, ``pd.NA``, a float NaN or a blank string. Such a field
    is left out of the prompt's header (the template's ``missing`` text stands in), and an item whose
    ``image_path`` is missing is shown to the model without an image."""
    if v is None or v is pd.NA:
        return True
    if isinstance(v, float) and np.isnan(v):
        return True
    return isinstance(v, str) and not v.strip()


def _fmt_value(v: Any) -> Any:
    if isinstance(v, float) and float(v).is_integer():
        return int(v)  # ages read as floats: "65", not "65.0"
    return v


def format_prompt(template: Mapping[str, Any], fields: Mapping[str, Any] | None, condition: str, *,
                  unmatched: bool = False, model_type: str | None = None) -> str:
    """The text prompt of one item (paper §3.1; Fig. 4 colours: metadata, clinical notes, instruction).

    ``fields``: the metadata and ``text`` of the sample whose *text side* is shown (the partner's for
    ``text_shift``). Layout: ``header`` (filled from ``fields``) + blank line + question +
    instruction [+ unmatched suffix] [+ model suffix]. ``only_image`` drops the header (no text
    modality: neither notes nor metadata) and uses ``question_only_image``; ``only_text`` uses
    ``question_only_text``; ``no_input`` drops the header too and uses ``question_no_input`` (default
    ``question_only_image``), so its prompt is the same for every sample. The "unmatched" suffix is
    only added to the image + text conditions, where a mismatch can exist.
    """
    if condition not in ALL_CONDITIONS:
        raise ParamsError(f"Unknown condition {condition!r}; use one of {', '.join(ALL_CONDITIONS)}.")
    condition = base_condition(condition)
    question = {"only_text": template["question_only_text"], "only_image": template["question_only_image"],
                "no_input": template.get("question_no_input") or template["question_only_image"],
                }.get(condition, template["question"])
    parts = [question, template["instruction"]]
    if unmatched and condition in ("no_shift", "image_shift", "text_shift"):
        if not template.get("unmatched_suffix"):
            raise ParamsError("unmatched=True but the template has no 'unmatched_suffix'.")
        parts.append(template["unmatched_suffix"])
    suffix = (template.get("model_suffixes") or {}).get(model_type) if model_type else None
    if suffix:
        parts.append(suffix)
    body = " ".join(p.strip() for p in parts)
    if condition in NO_TEXT_CONDITIONS:
        return body
    values = _Fields({k: _fmt_value(v) for k, v in (fields or {}).items()}, str(template.get("missing_value",
                                                                                             "unknown")))
    if "text" not in values:
        raise ParamsError("A text-side prompt needs the sample's 'text'; it is missing or empty.")
    header = template["header"].format_map(values)
    return f"{header}\n\n{body}"


# --------------------------------------------------------------------------------------------------
# samples


def split_by_patient(frame: pd.DataFrame, *, test_size: float = 0.3, seed: int = 0, patient_column: str = "patient_id",
                     label_column: str = "label") -> pd.Series:
    """``"train"``/``"test"`` per row, with every patient's rows in one split (seeded).

    Patients are stratified by whether any of their rows is positive, so both splits keep the label
    mix; within each stratum the sorted patient ids are permuted with ``default_rng(seed)`` and the
    first ``round(test_size * n)`` (at least 1 when the stratum has >= 2 patients) go to test. The
    result depends on the set of patients, not on row order.
    """
    if not 0 < test_size < 1:
        raise ParamsError(f"test_size must be in (0, 1), got {test_size}.")
    for col in (patient_column, label_column):
        if col not in frame.columns:
            raise DataFormatError(f"split_by_patient needs column {col!r}; the frame has {list(frame.columns)}.")
    rng = np.random.default_rng(seed)
    positive = frame.groupby(patient_column)[label_column].max().astype(int)
    test: set[Any] = set()
    for value in sorted(positive.unique()):
        ids = np.array(sorted(positive.index[positive == value]), dtype=object)
        k = int(round(test_size * len(ids)))
        if len(ids) >= 2:
            k = min(max(k, 1), len(ids) - 1)
        test.update(rng.permutation(ids)[:k].tolist())
    return pd.Series(np.where(frame[patient_column].isin(test), "test", "train"), index=frame.index, name="split")


#: Appended to a text cut by :func:`truncate_note`, so that a reader (and the model) sees the cut.
TRUNCATION_MARK = " [...]"


def truncate_note(text: str, max_words: int) -> str:
    """``text`` up to the end of its ``max_words``-th whitespace-separated word, followed by
    :data:`TRUNCATION_MARK`; unchanged when it has at most ``max_words`` words. The kept part keeps its own
    whitespace (line breaks included)."""
    if max_words < 1:
        raise ParamsError(f"max_words must be >= 1, got {max_words!r}.")
    words = list(re.finditer(r"\S+", text))
    if len(words) <= max_words:
        return text
    return text[:words[max_words - 1].end()] + TRUNCATION_MARK


def build_samples(frame: pd.DataFrame, *, text_column: str = "clinical_notes", label_column: str = "label",
                  id_column: str = "study_id", patient_column: str = "patient_id", image_column: str = "image_path",
                  metadata_columns: Sequence[str] = ("sex", "age", "view"), test_size: float = 0.3,
                  seed: int = 0, split_column: str | None = None, max_note_words: int | None = None) -> pd.DataFrame:
    """(image, text, label) samples in the tidy SMS schema (paper §2.1: ``(I, T, y)``), split by patient.

    Columns: ``sample_id, patient_id, image_path, text, label`` (int 0/1), ``split`` (``train``/``test``,
    :func:`split_by_patient`; or the dataset's own split from ``split_column``, e.g. MIMIC-CXR's), then
    ``metadata_columns`` (used by the prompt header). Rows without a
    label, a text or an image cannot be an SMS sample and are left out; their counts are in
    ``attrs["dropped"]`` (``{"no_label": n, "no_text": n, "no_image": n}``, checked in that order) and
    logged, never silent. Rows are sorted by ``sample_id``.

    ``max_note_words``: keep the first that many words of each text (:func:`truncate_note`; ``None``: whole
    texts, as in the paper). The demo preset cuts covid-chestxray's case descriptions, whose longest run to 783
    words, so that the stand-in VLM trains on prompts of a few hundred tokens (issue 44); how many texts were cut
    is in ``attrs["notes_truncated"]``. Every model and probe of a run reads the same cut texts.
    """
    if max_note_words is not None and (isinstance(max_note_words, bool) or not isinstance(max_note_words, int)
                                       or max_note_words < 1):
        raise ParamsError(f"max_note_words must be a positive integer or None (whole notes), got {max_note_words!r}.")
    needed = [id_column, patient_column, image_column, text_column, label_column, *metadata_columns,
              *([split_column] if split_column else [])]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise DataFormatError(f"build_samples: columns {missing} are missing; the frame has {list(frame.columns)}.")
    df = frame.copy()
    dropped = {}
    for reason, col in (("no_label", label_column), ("no_text", text_column), ("no_image", image_column)):
        bad = df[col].map(is_missing)
        dropped[reason] = int(bad.sum())
        df = df[~bad]
    if any(dropped.values()):
        log.info("build_samples: left out %s of %d rows", dropped, len(frame))
    labels = pd.to_numeric(df[label_column]).astype(int)
    if not set(labels.unique()) <= {0, 1}:
        raise DataFormatError(f"build_samples: labels must be 0/1, got {sorted(labels.unique())}.")
    out = pd.DataFrame({"sample_id": df[id_column].astype(str).to_numpy(),
                        "patient_id": df[patient_column].astype(str).to_numpy(),
                        "image_path": df[image_column].astype(str).to_numpy(),
                        "text": df[text_column].astype(str).str.strip().to_numpy(),
                        "label": labels.to_numpy()})
    n_cut = 0
    if max_note_words is not None:
        cut = out["text"].map(lambda t: truncate_note(t, max_note_words))
        n_cut = int((cut != out["text"]).sum())
        out["text"] = cut
    for col in metadata_columns:
        out[col] = df[col].astype(object).where(df[col].notna(), None).to_numpy()
    if out["sample_id"].duplicated().any():
        raise DataFormatError(f"build_samples: {id_column!r} repeats; sample ids must be unique.")
    if len(out) and out["label"].nunique() < 2:
        raise DataFormatError("build_samples: SMS needs both labels (swaps take a partner of the opposite label).")
    if split_column:
        out["split"] = df[split_column].astype(str).to_numpy()
    else:
        out["split"] = split_by_patient(out, test_size=test_size, seed=seed).to_numpy() if len(out) else []
    out = out[SAMPLE_COLUMNS + list(metadata_columns)].sort_values("sample_id", kind="stable").reset_index(drop=True)
    out.attrs["dropped"] = dropped
    out.attrs["notes_truncated"] = n_cut
    out.attrs["n_input_rows"] = int(len(frame))
    return out


def covid_samples(data_root: Any = None, *, test_size: float = 0.3, seed: int = 0, path: Any = None,
                  **kwargs: Any) -> pd.DataFrame:
    """SMS samples from covid-chestxray (demo data): label = COVID-19 vs any other finding, text = the
    clinical notes (case descriptions from papers/websites; they often name the diagnosis, which is
    the textual shortcut SMS measures), metadata = sex, age, view; split by patient."""
    frame = load_dataset("covid_cxr", data_root, path=path)
    return build_samples(frame, test_size=test_size, seed=seed, **kwargs)


# --------------------------------------------------------------------------------------------------
# swaps and items


def draw_partners(samples: pd.DataFrame, seed: int = 0, *, same_partner: bool = False,
                  exclude_same_patient: bool = True) -> pd.DataFrame:
    """Swap partners for every sample (paper §2.2), seeded: columns ``sample_id, image_partner, text_partner``.

    A partner is drawn uniformly from the samples with the **opposite label** (``y' != y``) in
    ``samples`` (pass the evaluated split), excluding the sample's own patient when
    ``exclude_same_patient`` (a patient can hold images of both labels). The image partner and the
    text partner are drawn independently (``same_partner=True``: one partner gives both). The
    anchor draws with ``candidates.sample(1)`` and no seed; here samples are sorted by ``sample_id``
    and drawn with ``numpy.random.default_rng(seed)``, so the same samples and seed give the same
    partners whatever the row order.

    The same-label partners of the negative controls (:data:`SAME_LABEL_CONDITIONS`) are in
    ``same_label_image_partner`` / ``same_label_text_partner``: drawn uniformly from the **other** samples
    with the **same** label (never the sample itself; never its patient when ``exclude_same_patient``), with
    their own generator ``numpy.random.default_rng([seed, 1])`` after the opposite-label draws, so adding them
    left the opposite-label partners of every seed as they were. ``None`` where no such sample exists
    (:func:`build_items` then refuses a same-label condition for that sample).
    """
    for col in ("sample_id", "label"):
        if col not in samples.columns:
            raise DataFormatError(f"draw_partners needs column {col!r}.")
    df = samples.sort_values("sample_id", kind="stable").reset_index(drop=True)
    ids = df["sample_id"].to_numpy()
    labels = df["label"].astype(int).to_numpy()
    patients = df["patient_id"].to_numpy() if exclude_same_patient and "patient_id" in df else None
    rng = np.random.default_rng(seed)
    img, txt = [], []
    for i in range(len(df)):
        ok = labels != labels[i]
        if patients is not None:
            ok &= patients != patients[i]
        cand = np.flatnonzero(ok)
        if cand.size == 0:
            raise ParamsError(f"Sample {ids[i]!r} (label {labels[i]}) has no partner with the opposite label"
                              + (" from another patient" if patients is not None else "")
                              + "; SMS needs both labels in the evaluated set.")
        a = cand[rng.integers(cand.size)]
        b = a if same_partner else cand[rng.integers(cand.size)]
        img.append(ids[a])
        txt.append(ids[b])
    rng_same = np.random.default_rng([seed, 1])
    same_img: list[Any] = []
    same_txt: list[Any] = []
    for i in range(len(df)):
        ok = (labels == labels[i]) & (np.arange(len(df)) != i)
        if patients is not None:
            ok &= patients != patients[i]
        cand = np.flatnonzero(ok)
        if cand.size == 0:
            same_img.append(None)
            same_txt.append(None)
            continue
        a = cand[rng_same.integers(cand.size)]
        b = a if same_partner else cand[rng_same.integers(cand.size)]
        same_img.append(ids[a])
        same_txt.append(ids[b])
    out = pd.DataFrame({"sample_id": ids, "image_partner": img, "text_partner": txt,
                        "same_label_image_partner": pd.Series(same_img, dtype=object),
                        "same_label_text_partner": pd.Series(same_txt, dtype=object)})
    out.attrs["seed"] = seed
    return out


ITEM_COLUMNS = ["sample_id", "patient_id", "condition", "label", "image_path", "image_source", "text_source",
                "prompt"]


def build_items(samples: pd.DataFrame, partners: pd.DataFrame, template: Mapping[str, Any] | str, *,
                conditions: Sequence[str] = CONDITIONS, unmatched: bool = False, model_type: str | None = None,
                swap_metadata: bool = True, metadata_columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The long table of model inputs: one row per sample x condition (columns :data:`ITEM_COLUMNS`).

    ``label`` is the original sample's ground truth in every condition. ``image_source`` /
    ``text_source`` name the sample whose image / text is shown (``None`` when that modality is
    absent); ``image_path`` is ``None`` for ``only_text`` and ``no_input``. ``swap_metadata=True`` (the anchor's
    behaviour: its text swap takes the partner's whole row) shows the partner's metadata header with
    its text in ``text_shift``; ``False`` keeps the sample's own metadata and swaps only the notes.
    ``metadata_columns``: the columns offered to the header (default: every sample column except the
    core ones).
    """
    tmpl = get_template(template) if isinstance(template, str) else get_template(template)
    bad = [c for c in conditions if c not in ALL_CONDITIONS]
    if bad:
        raise ParamsError(f"Unknown condition(s) {bad}; use any of {', '.join(ALL_CONDITIONS)}.")
    if any(c in MARKED_CONDITIONS for c in conditions) and MARKED_IMAGE_COLUMN not in samples.columns:
        raise ParamsError(f"The marked conditions need the samples' marked copies (column {MARKED_IMAGE_COLUMN!r}): "
                          "pass the samples through radaudit.audits.modality_shift.marker.add_marked_images first.")
    by_id = samples.set_index("sample_id", drop=False)
    if metadata_columns is None:
        metadata_columns = [c for c in samples.columns if c not in (*SAMPLE_COLUMNS, MARKED_IMAGE_COLUMN)]
    part = partners.set_index("sample_id")
    missing = sorted(set(samples["sample_id"]) - set(part.index))
    if missing and any(base_condition(c) in _PARTNER_COLUMN for c in conditions):
        raise ParamsError(f"{len(missing)} samples have no partner (e.g. {missing[:3]}); draw partners for the "
                          "same samples.")
    for c in conditions:
        column = _PARTNER_COLUMN.get(base_condition(c), (None, None))[1]
        if column is not None and column not in part.columns:
            raise ParamsError(f"Condition {c!r} needs the partners' column {column!r}; draw them with draw_partners.")

    def fields(sid: str, text_sid: str) -> dict[str, Any]:
        meta_sid = text_sid if swap_metadata else sid
        values = {c: by_id.at[meta_sid, c] for c in metadata_columns}
        values["text"] = by_id.at[text_sid, "text"]
        return values

    rows = []
    for s in samples.sort_values("sample_id", kind="stable").itertuples(index=False):
        sid = s.sample_id
        for cond in conditions:
            img_sid: str | None = sid
            txt_sid: str | None = sid
            base = base_condition(cond)
            if base in _PARTNER_COLUMN:
                side, column = _PARTNER_COLUMN[base]
                donor = part.at[sid, column]
                if is_missing(donor):
                    raise ParamsError(f"Sample {sid!r} has no partner in {column!r} (no other patient with "
                                      f"{'the same' if base in SAME_LABEL_CONDITIONS else 'the opposite'} label), "
                                      f"so condition {cond!r} cannot be built; drop it from the conditions.")
                if side == "image":
                    img_sid = donor
                else:
                    txt_sid = donor
            if cond in NO_IMAGE_CONDITIONS:
                img_sid = None
            if cond in NO_TEXT_CONDITIONS:
                txt_sid = None
            for other in (img_sid, txt_sid):
                if other is not None and other not in by_id.index:
                    raise ParamsError(f"Partner {other!r} of {sid!r} is not among the samples.")
            prompt = format_prompt(tmpl, fields(sid, txt_sid) if txt_sid else None, cond, unmatched=unmatched,
                                   model_type=model_type)
            rows.append({"sample_id": sid, "patient_id": getattr(s, "patient_id", None), "condition": cond,
                         "label": int(s.label),
                         "image_path": None if img_sid is None else by_id.at[
                             img_sid, MARKED_IMAGE_COLUMN if cond in MARKED_CONDITIONS else "image_path"],
                         "image_source": img_sid, "text_source": txt_sid, "prompt": prompt})
    items = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    for col in ("image_path", "image_source", "text_source"):  # keep None as None (pandas 3 makes it NaN)
        items[col] = pd.Series([r[col] for r in rows], index=items.index, dtype=object)
    items.attrs["unmatched"] = bool(unmatched)
    items.attrs["no_patterns"] = list(tmpl.get("no_patterns") or [])
    items.attrs["yes_patterns"] = list(tmpl.get("yes_patterns") or [])
    return items


# --------------------------------------------------------------------------------------------------
# answer parsing

_UNMATCHED_RE = re.compile(r"^\W*(?:unmatched|mismatch(?:ed)?)\b", re.I)


def parse_answer(text: str | None, *, no_patterns: Sequence[str] = (), yes_patterns: Sequence[str] = (),
                 unmatched: bool = False) -> str:
    """``"yes"``, ``"no"``, ``"unmatched"`` or ``"unknown"`` for a generated answer (paper §2.1, "regular
    expressions"; the anchor's ``clean_label`` with its rules made explicit and its faults fixed).

    Rules, in order:

    1. ``None``, empty or whitespace-only output -> ``unknown``.
    2. ``unmatched=True`` (the "unmatched" prompt variant) and the answer starts with "unmatched" /
       "mismatch" -> ``unmatched``. Without the variant that word is not an answer -> ``unknown``
       (unless a later rule matches).
    3. :func:`radaudit.models.vlm.parse_yes_no` step 1-2: after stripping quotes, markdown, punctuation
       and an "Answer:" prefix, the whole answer or its first word is yes/y or no/n:
       ``"Yes, the patient presents abnormal findings"`` -> yes, ``"No evidence of ..."`` -> no,
       ``"No."`` -> no, ``"Not sure"`` -> not decided here.
    4. the dataset's ``no_patterns`` (checked first, as the anchor does), then ``yes_patterns``,
       searched case-insensitively anywhere in the answer.
    5. otherwise ``unknown``. Unknown answers are kept in the results and counted
       (:func:`radaudit.audits.modality_shift.tables.answer_rates`), never dropped.
    """
    if text is None or not str(text).strip():
        return "unknown"
    if _UNMATCHED_RE.match(str(text)):
        return "unmatched" if unmatched else "unknown"
    return parse_yes_no(str(text), no_patterns=no_patterns, yes_patterns=yes_patterns)


def answer_to_prediction(answers: Sequence[str] | pd.Series) -> np.ndarray:
    """yes -> 1.0, no -> 0.0, anything else (unknown, unmatched) -> NaN (not a yes/no prediction)."""
    return np.array([1.0 if a == "yes" else 0.0 if a == "no" else np.nan for a in answers], dtype=float)


# --------------------------------------------------------------------------------------------------
# running a model

RESULT_COLUMNS = ["model", "sample_id", "patient_id", "condition", "label", "image_source", "text_source",
                  "prompt", "generated", "answer", "prediction", "correct", "n_generated_tokens", "finish", "cached"]


def run_conditions(processor: Any, model: Any, items: pd.DataFrame, *, model_name: str | None = None,
                   max_new_tokens: int = 32, batch_size: int = 8, cache: Any = None,
                   candidates: Sequence[str] | None = None, pair: str = "both", system: str | None = None,
                   no_patterns: Sequence[str] | None = None, yes_patterns: Sequence[str] | None = None,
                   unmatched: bool | None = None) -> pd.DataFrame:
    """Run one VLM on every item: the long results table (one row per sample x condition).

    Decoding is greedy (paper §3.2: temperature 0, no sampling). One greedy pass per item,
    :func:`radaudit.models.vlm.first_token_scores`, gives both the answer (up to ``max_new_tokens``)
    and the first-token scores (raw logits of the first generated position, as the anchor reads
    ``outputs.scores[0]``); with ``cache`` an interrupted run resumes and a changed
    prompt/image/model misses. ``model`` may be a vLLM engine (:mod:`radaudit.models.vlm_vllm`): the same
    prompts, images and cache keys; it returns log-probabilities, not logits (``logit_*`` are NaN on its rows),
    and ``engine`` names the engine of each row. The scores are kept raw: ``logit_<candidate>`` and
    ``logprob_<candidate>`` (its log-softmax) columns, the pair-softmax probabilities
    ``p_yes_capitalised``, ``p_yes_lower``, ``p_yes_both`` and ``p_yes``/``p_no`` for ``pair``
    (paper §2.4), ``mass_candidates``, ``first_token``, ``first_token_candidate``.

    ``generated`` is the full greedy answer; ``answer`` is :func:`parse_answer` of it with the
    patterns stored by :func:`build_items` in ``items.attrs`` (or given here); ``prediction`` is
    1/0/NaN and ``correct`` is 1 when ``prediction == label`` and 0 otherwise (unknown counts as not
    correct). Columns: :data:`RESULT_COLUMNS`, then the score columns.
    """
    missing = [c for c in ("sample_id", "condition", "label", "image_path", "prompt") if c not in items.columns]
    if missing:
        raise ParamsError(f"run_conditions: items lack columns {missing}; build them with build_items.")
    if items.empty:
        raise ParamsError("run_conditions: no items to run.")
    nop = list(items.attrs.get("no_patterns", []) if no_patterns is None else no_patterns)
    yesp = list(items.attrs.get("yes_patterns", []) if yes_patterns is None else yes_patterns)
    unm = bool(items.attrs.get("unmatched", False) if unmatched is None else unmatched)
    prompts = items["prompt"].tolist()
    images = [None if is_missing(p) else p for p in items["image_path"].tolist()]
    scores = first_token_scores(processor, model, prompts, images, tuple(candidates or DEFAULT_CANDIDATES),
                                pair=pair, max_new_tokens=max_new_tokens, batch_size=batch_size, system=system,
                                cache=cache)
    gens = scores.rename(columns={"generated": "text"})
    name = model_name or getattr(model, "name_or_path", None) or type(model).__name__
    out = pd.DataFrame({"model": name, "sample_id": items["sample_id"].to_numpy(),
                        "patient_id": items["patient_id"].to_numpy() if "patient_id" in items else None,
                        "condition": items["condition"].to_numpy(), "label": items["label"].astype(int).to_numpy(),
                        "image_source": items.get("image_source"), "text_source": items.get("text_source"),
                        "prompt": prompts})
    out.index = items.index
    out = out.reset_index(drop=True)
    out["generated"] = gens["text"].to_numpy()
    out["answer"] = [parse_answer(t, no_patterns=nop, yes_patterns=yesp, unmatched=unm) for t in gens["text"]]
    out["prediction"] = answer_to_prediction(out["answer"])
    out["correct"] = (out["prediction"] == out["label"]).astype(int)
    for col in ("n_generated_tokens", "finish", "engine", "cached"):
        out[col] = gens[col].to_numpy()
    score_cols = [c for c in scores.columns if c.startswith(("logit_", "logprob_"))] + [
        "p_yes_capitalised", "p_yes_lower", "p_yes_both", "pair", "p_yes", "p_no", "mass_candidates",
        "first_token", "first_token_candidate"]
    for col in score_cols:
        out[col] = scores[col].to_numpy()
    out.attrs["candidates"] = scores.attrs.get("candidates")
    n_unknown = int((out["answer"] == "unknown").sum())
    if n_unknown:
        log.warning("run_conditions: %d of %d answers are unknown (kept, counted by answer_rates).", n_unknown,
                    len(out))
    return out


def attention_table(processor: Any, model: Any, items: pd.DataFrame, *, sample_ids: Sequence[str] | None = None,
                    conditions: Sequence[str] | None = None, max_new_tokens: int = 8, model_name: str | None = None,
                    system: str | None = None, normalise: str = "per_layer",
                    positions: bool = True, cache: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Attention by modality (paper §2.3, Fig. 4) for selected items, one greedy run per item.

    Returns ``(shares, tokens)``: ``shares`` has one row per (sample, condition, generated token)
    with :func:`radaudit.models.attention.attention_by_modality`'s columns (``image_share`` +
    ``text_share`` = 1, BOS/first position zeroed, heads averaged, per-layer normalised, layers
    averaged); ``tokens`` has one row per (sample, condition, generated step, input position) with
    the normalised weight and ``modality`` (``image``/``text``), for the shaded-text panel.

    ``cache`` (a folder, ``True`` for the default one, or ``None``): keep the two tables on disk and read them
    back on a rerun with the same model and items (:mod:`radaudit.audits.modality_shift.traces`).
    """
    sel = items
    if sample_ids is not None:
        sel = sel[sel["sample_id"].isin(list(sample_ids))]
    if conditions is not None:
        sel = sel[sel["condition"].isin(list(conditions))]
    if sel.empty:
        raise ParamsError("attention_table: no items match the requested sample_ids / conditions.")
    name = model_name or getattr(model, "name_or_path", None) or type(model).__name__

    def compute() -> tuple[pd.DataFrame, pd.DataFrame]:
        shares, toks = [], []
        for it in sel.itertuples(index=False):
            image = None if is_missing(it.image_path) else it.image_path
            frame, pos = attention_by_modality(processor, model, it.prompt, image, max_new_tokens=max_new_tokens,
                                               system=system, normalise=normalise, return_positions=True)
            keys = {"model": name, "sample_id": it.sample_id, "condition": it.condition}
            shares.append(frame.assign(**keys))
            if positions:
                toks.append(pos.assign(**keys))
        shares_df = pd.concat(shares, ignore_index=True)
        lead = ["model", "sample_id", "condition"]
        shares_df = shares_df[lead + [c for c in shares_df.columns if c not in lead]]
        tokens_df = pd.concat(toks, ignore_index=True) if toks else pd.DataFrame()
        if not tokens_df.empty:
            tokens_df = tokens_df[lead + [c for c in tokens_df.columns if c not in lead]]
        return shares_df, tokens_df

    options = {"model_name": name, "max_new_tokens": int(max_new_tokens), "system": system, "normalise": normalise,
               "positions": bool(positions)}
    shares_df, tokens_df = memo_traces("modality_shift.attention_table", model, sel, options, cache, compute)
    return shares_df, tokens_df
