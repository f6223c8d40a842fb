"""Small invented stand-ins of credentialed datasets, in their real file layout: the data of a rehearsal.

``radaudit run <experiment> --preset paper --rehearse`` runs the paper's code path on CPU with tiny
random-weight twins of its models (:mod:`radaudit.models.twins`). Where the preset reads a
credentialed dataset by local path, the rehearsal writes one of these fixtures instead: the same file
names, columns and folder layout as the real download (documented in the dataset's loader), filled
with made-up ids, dates, labels, report text and images (grey gradients with a bright blob). They
exercise the loaders, not the science: nothing about real patients can be learnt from them.

* :func:`write_mimic_cxr` — MIMIC-CXR-JPG 2.0.0 (``mimic-cxr-2.0.0-{metadata,chexpert,split}.csv.gz``,
  ``files/pXX/p<subject>/s<study>/<dicom>.jpg``), MIMIC-CXR reports (``files/pXX/p<subject>/s<study>.txt``)
  and MIMIC-IV ``patients.csv.gz``, as :func:`radaudit.data.mimic_cxr.load` reads them.

A fixture is written once per (layout version, size, seed) into its folder; rewriting the same
arguments gives byte-identical CSVs and images.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["FIXTURE_VERSION", "write_mimic_cxr"]

FIXTURE_VERSION = 1

_CHEXPERT = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum", "Fracture",
             "Lung Lesion", "Lung Opacity", "No Finding", "Pleural Effusion", "Pleural Other", "Pneumonia",
             "Pneumothorax", "Support Devices")
_FINDINGS = {"Pleural Effusion": "Small left pleural effusion.", "Cardiomegaly": "The heart is enlarged.",
             "Edema": "Mild interstitial edema.", "Pneumothorax": "Small right apical pneumothorax.",
             "Consolidation": "Right lower lobe consolidation."}


def _image(rng: np.random.Generator, size: int, abnormal: bool) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size] / size
    img = 0.25 + 0.5 * np.exp(-((x - 0.5) ** 2) / 0.08) * (1 - 0.3 * y)
    if abnormal:  # a bright blob low in one lung
        cy, cx = 0.7, rng.choice([0.3, 0.7])
        img += 0.35 * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / 0.01)
    img += rng.normal(0, 0.02, img.shape)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def write_mimic_cxr(folder: str | os.PathLike, *, n_studies: int = 24, image_size: int = 64, seed: int = 0) -> Path:
    """Write an invented MIMIC-CXR-JPG + reports + MIMIC-IV patients fixture into ``folder``; return it.

    ``n_studies`` studies of ``n_studies // 2`` subjects, one PA image each; alternately abnormal (one
    CheXpert finding positive) and normal (``No Finding`` = 1); the split is ``test`` for the first
    half of the subjects, ``train`` for the rest. Ages from 30 to 90, sex alternating. Files already
    written with the same arguments are left as they are (``.fixture`` records them).
    """
    from PIL import Image

    out = Path(folder)
    stamp = f"mimic_cxr v{FIXTURE_VERSION} n={n_studies} size={image_size} seed={seed}\n"
    marker = out / ".fixture"
    if marker.is_file() and marker.read_text(encoding="utf-8") == stamp:
        return out
    if n_studies < 4:
        raise ValueError(f"write_mimic_cxr needs at least 4 studies, got {n_studies}.")
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    meta, labels, split, patients = [], [], [], []
    n_subjects = max(2, n_studies // 2)
    findings = list(_FINDINGS)
    for i in range(n_studies):
        subject = 10_000_000 + (i % n_subjects) * 11
        study = 50_000_000 + i * 7
        dicom = f"{i:08x}-fixture-{seed:04d}"
        abnormal = i % 2 == 0
        finding = findings[i % len(findings)]
        meta.append({"dicom_id": dicom, "subject_id": subject, "study_id": study,
                     "PerformedProcedureStepDescription": "CHEST (PA AND LAT)", "ViewPosition": "PA",
                     "Rows": image_size, "Columns": image_size, "StudyDate": 21500101 + (i % 28),
                     "StudyTime": 101010.0, "ProcedureCodeSequence_CodeMeaning": "CHEST (PA AND LAT)",
                     "ViewCodeSequence_CodeMeaning": "postero-anterior", "PatientOrientationCodeSequence_CodeMeaning": "Erect"})
        row = {"subject_id": subject, "study_id": study, **{c: np.nan for c in _CHEXPERT}}
        if abnormal:
            row[finding] = 1.0
        else:
            row["No Finding"] = 1.0
        labels.append(row)
        split.append({"dicom_id": dicom, "study_id": study, "subject_id": subject,
                      "split": "test" if (i % n_subjects) < n_subjects // 2 else "train"})
        sub = out / "files" / f"p{str(subject)[:2]}" / f"p{subject}"
        (sub / f"s{study}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(_image(rng, image_size, abnormal), mode="L").save(sub / f"s{study}" / f"{dicom}.jpg", quality=90)
        text = _FINDINGS[finding] if abnormal else "No acute cardiopulmonary process."
        (sub / f"s{study}.txt").write_text(
            "                                 FINAL REPORT\n EXAMINATION:  CHEST (PA AND LAT)\n\n"
            f" INDICATION:  Invented fixture study {i}.\n\n FINDINGS:  {text}\n\n IMPRESSION:  {text}\n",
            encoding="utf-8")
    for j in range(n_subjects):
        patients.append({"subject_id": 10_000_000 + j * 11, "gender": "F" if j % 2 else "M",
                         "anchor_age": 30 + (j * 7) % 60, "anchor_year": 2150, "anchor_year_group": "2017 - 2019",
                         "dod": None})
    for name, rows in (("mimic-cxr-2.0.0-metadata.csv.gz", meta), ("mimic-cxr-2.0.0-chexpert.csv.gz", labels),
                       ("mimic-cxr-2.0.0-split.csv.gz", split), ("patients.csv.gz", patients)):
        pd.DataFrame(rows).to_csv(out / name, index=False, compression={"method": "gzip", "mtime": 0})
    marker.write_text(stamp, encoding="utf-8")
    return out
