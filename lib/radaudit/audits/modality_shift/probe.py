"""How much of the label do the images hold, and how much the text? A pixel probe and a text probe.

The demo's positive control asks the stand-in VLM to find the label in the image alone
(``only_image_auroc``). Whether it can depends on the model *and* on the images; this probe measures
the second: a logistic regression (``sklearn``, L2, ``C``, classes balanced) on the standardised
grayscale pixels of each image resized to ``size`` x ``size`` (PIL bilinear), fitted on the training
patients and scored on the evaluated ones, AUROC with a bootstrap CI over the evaluated samples.
It is a linear probe on raw pixels, not the best possible image model: a floor of what the images
carry, cheap enough to run in every demo. (Measured on covid-chestxray at 32 px: about 0.68 on the
held-out patients, close to a linear probe on frozen InceptionV3 features.)

The text side (:func:`text_probe`): the same question of the text the model is shown. A TF-IDF bag of
words (``sklearn`` ``TfidfVectorizer``: lower-cased word unigrams and bigrams, a term must occur in at least
``min_df`` = 2 training documents, sublinear term frequency) and a logistic regression (L2, ``C`` = 1, classes
balanced; not tuned), fitted on the training patients' documents and scored on the evaluated ones, AUROC with a
bootstrap CI over the evaluated samples (:func:`radaudit.audits.modality_shift.tables.auroc_table`, i.e.
:func:`radaudit.stats.auroc` and :func:`radaudit.stats.bootstrap_ci`). A document is the **whole Only Text prompt
of the sample** (:func:`text_documents`: the metadata header, the clinical notes, the question and the
instruction — what the model reads when it answers from the text), so the probe sees what the model sees.
Beside the pixel probe it says which modality carries the label better — and so whether leaning on the text is
a bias or the rational weighting (:mod:`radaudit.audits.modality_shift.findings`).

:func:`notes_naming_diagnosis`: the share of notes that **name the diagnosis**, i.e. contain one of the
dataset's words for the positive label (:data:`DIAGNOSIS_PATTERNS`, regexes searched case-insensitively
anywhere in the sample's ``text``, negated or not: "not COVID-19" names it too). For ``covid_cxr`` the positive
label is "COVID-19" (its ``label_names[1]``) and the words the notes use for it are ``covid`` (COVID-19,
COVID19, covid), ``sars-cov-2`` (SARS-CoV-2, SARS CoV 2), ``ncov`` (2019-nCoV) and ``coronavirus``; for
``mimic_cxr`` (label "abnormal" = any of the 12 conditions) the 12 condition names; for ``fairvlmed`` ``glaucoma``.
A note that names the diagnosis hands the answer to a reader of the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import SAMPLE_COLUMNS, format_prompt, get_template
from radaudit.audits.modality_shift.data import MIMIC_CONDITIONS
from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN
from radaudit.audits.modality_shift.tables import auroc_table
from radaudit.errors import ParamsError
from radaudit.models.vlm import load_image
from radaudit.stats import wilson_ci

__all__ = ["DIAGNOSIS_PATTERNS", "image_probe", "notes_naming_diagnosis", "pixel_features", "text_documents",
           "text_probe"]

#: Per dataset, the regexes (case-insensitive) by which a note names the positive label (module docstring).
DIAGNOSIS_PATTERNS: dict[str, tuple[str, ...]] = {
    "covid_cxr": (r"covid", r"sars[- ]?cov[- ]?2", r"ncov", r"coronavirus"),
    "mimic_cxr": tuple(r"\b" + name.lower().replace(" ", r"\s+") + r"\b" for name in MIMIC_CONDITIONS),
    "fairvlmed": (r"glaucoma",),
}


def pixel_features(paths: Sequence[str], size: int = 32) -> np.ndarray:
    """``[n, size * size]`` grayscale pixels in [0, 1] of each image, resized to ``size`` x ``size``."""
    from PIL import Image

    out = np.zeros((len(paths), size * size), dtype=np.float32)
    for i, path in enumerate(paths):
        im = load_image(path).convert("L").resize((size, size), Image.BILINEAR)
        out[i] = np.asarray(im, dtype=np.float32).ravel() / 255.0
    return out


def image_probe(train: pd.DataFrame, test: pd.DataFrame, *, size: int = 32, C: float = 0.01, max_train: int | None = None,
                n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """AUROC of a pixel logistic regression fitted on ``train`` and scored on ``test`` (see the module docstring).

    ``train`` / ``test``: SMS samples (``image_path``, ``label``); ``max_train`` caps the training rows
    (seeded, stratified by label; for the smoke preset). Returns ``estimate, low, high, n, n_train, description``.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train = _stratified_cap(train, max_train, seed)  # stratified by label, so both stay
    if train["label"].nunique() < 2 or test["label"].nunique() < 2:
        raise ParamsError("image_probe needs both labels in the training and the evaluated samples.")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000, class_weight="balanced"))
    clf.fit(pixel_features(train["image_path"].tolist(), size), train["label"].astype(int).to_numpy())
    score = clf.predict_proba(pixel_features(test["image_path"].tolist(), size))[:, 1]
    return _scored(test, score, "only_image", len(train), n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                   description=(f"logistic regression (C={C}, balanced) on {size}x{size} grayscale pixels, fitted on "
                                f"{len(train)} training images, scored on {len(test)} evaluated images"))


def _scored(test: pd.DataFrame, score: np.ndarray, condition: str, n_train: int, *, n_bootstrap: int, seed: int,
            confidence: float, description: str) -> dict[str, Any]:
    """AUROC of a probe's scores on ``test`` with its bootstrap CI (:func:`auroc_table`), as the probes return it."""
    frame = pd.DataFrame({"model": "probe", "condition": condition, "label": test["label"].astype(int).to_numpy(),
                          "p_yes": np.asarray(score, dtype=float)})
    row = auroc_table(frame, n_bootstrap=n_bootstrap, seed=seed, confidence=confidence).iloc[0]
    return {"estimate": float(row["estimate"]), "low": float(row["low"]), "high": float(row["high"]), "n": len(test),
            "n_train": int(n_train), "description": description}


def _stratified_cap(train: pd.DataFrame, max_train: int | None, seed: int) -> pd.DataFrame:
    if max_train is None or len(train) <= max_train:
        return train
    share = max_train / len(train)
    keep = [g.sample(n=max(1, round(share * len(g))), random_state=seed) for _, g in train.groupby("label")]
    return pd.concat(keep).sort_index()


def text_documents(samples: pd.DataFrame, template: str | Mapping[str, Any] | None = None) -> list[str]:
    """The text each sample shows the model: its Only Text prompt under ``template`` (a dataset name or a
    template mapping: header with the metadata and the notes, question, instruction); without a template, the
    sample's ``text`` (the notes) alone."""
    if template is None:
        return samples["text"].astype(str).tolist()
    tmpl = get_template(template) if isinstance(template, str) else get_template(dict(template))
    meta = [c for c in samples.columns if c not in (*SAMPLE_COLUMNS, MARKED_IMAGE_COLUMN)]
    return [format_prompt(tmpl, {**{c: getattr(r, c) for c in meta}, "text": r.text}, "only_text")
            for r in samples.itertuples(index=False)]


def text_probe(train: pd.DataFrame, test: pd.DataFrame, *, template: str | Mapping[str, Any] | None = None,
               C: float = 1.0, min_df: int = 2, max_train: int | None = None, n_bootstrap: int = 1000, seed: int = 0,
               confidence: float = 0.95) -> dict[str, Any]:
    """AUROC of a TF-IDF logistic regression on the text the model sees, fitted on ``train`` and scored on
    ``test`` (module docstring): the text's counterpart of :func:`image_probe`, with the same return value.

    ``train`` / ``test``: SMS samples (``text``, ``label`` and the metadata columns); ``template``: see
    :func:`text_documents`; ``min_df`` is lowered to 1 when the training set has fewer than 10 documents (a
    smoke run); ``max_train`` caps the training rows (seeded, stratified by label).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train = _stratified_cap(train, max_train, seed)
    if train["label"].nunique() < 2 or test["label"].nunique() < 2:
        raise ParamsError("text_probe needs both labels in the training and the evaluated samples.")
    df = min_df if len(train) >= 10 else 1
    clf = make_pipeline(TfidfVectorizer(lowercase=True, ngram_range=(1, 2), min_df=df, sublinear_tf=True),
                        LogisticRegression(C=C, max_iter=5000, class_weight="balanced"))
    clf.fit(text_documents(train, template), train["label"].astype(int).to_numpy())
    score = clf.predict_proba(text_documents(test, template))[:, 1]
    what = "Only Text prompts" if template is not None else "notes"
    return _scored(test, score, "only_text", len(train), n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                   description=(f"TF-IDF (word 1-2-grams, min_df={df}) logistic regression (C={C:g}, balanced) on the "
                                f"{what}, fitted on {len(train)} training samples, scored on {len(test)} evaluated "
                                "samples"))


def notes_naming_diagnosis(samples: pd.DataFrame, dataset: str | None = None, *,
                           patterns: Sequence[str] | None = None, confidence: float = 0.95) -> dict[str, Any]:
    """Share of the samples' notes (``text``) that name the diagnosis (module docstring), with a Wilson CI.

    ``patterns`` (regexes, case-insensitive; a note names the diagnosis when any matches) default to
    :data:`DIAGNOSIS_PATTERNS` ``[dataset]``. Returns ``estimate, low, high, n, n_named`` and the split by
    label: ``n_positive, n_named_positive, n_negative, n_named_negative``.
    """
    if patterns is None:
        if dataset not in DIAGNOSIS_PATTERNS:
            raise ParamsError(f"No diagnosis words for dataset {dataset!r}; pass patterns= (known: "
                              f"{', '.join(DIAGNOSIS_PATTERNS)}).")
        patterns = DIAGNOSIS_PATTERNS[dataset]
    if not len(samples):
        raise ParamsError("notes_naming_diagnosis needs at least one sample.")
    rx = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    named = samples["text"].astype(str).map(lambda t: rx.search(t) is not None).to_numpy()
    pos = samples["label"].astype(int).to_numpy() == 1
    k, n = int(named.sum()), len(samples)
    low, high = wilson_ci(k, n, confidence)
    return {"estimate": k / n, "low": low, "high": high, "n": n, "n_named": k, "n_positive": int(pos.sum()),
            "n_named_positive": int((named & pos).sum()), "n_negative": int((~pos).sum()),
            "n_named_negative": int((named & ~pos).sum()), "patterns": list(patterns)}
