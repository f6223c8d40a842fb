"""How much of the label do the images hold? A pixel probe, the ceiling of the positive control.

The demo's positive control asks the stand-in VLM to find the label in the image alone
(``only_image_auroc``). Whether it can depends on the model *and* on the images; this probe measures
the second: a logistic regression (``sklearn``, L2, ``C``, classes balanced) on the standardised
grayscale pixels of each image resized to ``size`` x ``size`` (PIL bilinear), fitted on the training
patients and scored on the evaluated ones, AUROC with a bootstrap CI over the evaluated samples.
It is a linear probe on raw pixels, not the best possible image model: a floor of what the images
carry, cheap enough to run in every demo. (Measured on covid-chestxray at 32 px: about 0.68 on the
held-out patients, close to a linear probe on frozen InceptionV3 features.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.tables import auroc_table
from radaudit.errors import ParamsError
from radaudit.models.vlm import load_image

__all__ = ["image_probe", "pixel_features"]


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

    if max_train is not None and len(train) > max_train:  # stratified by label, so both stay
        share = max_train / len(train)
        keep = [g.sample(n=max(1, round(share * len(g))), random_state=seed) for _, g in train.groupby("label")]
        train = pd.concat(keep).sort_index()
    if train["label"].nunique() < 2 or test["label"].nunique() < 2:
        raise ParamsError("image_probe needs both labels in the training and the evaluated samples.")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000, class_weight="balanced"))
    clf.fit(pixel_features(train["image_path"].tolist(), size), train["label"].astype(int).to_numpy())
    score = clf.predict_proba(pixel_features(test["image_path"].tolist(), size))[:, 1]
    frame = pd.DataFrame({"model": "pixel probe", "condition": "only_image", "label": test["label"].astype(int).to_numpy(),
                          "p_yes": score})
    row = auroc_table(frame, n_bootstrap=n_bootstrap, seed=seed, confidence=confidence).iloc[0]
    return {"estimate": float(row["estimate"]), "low": float(row["low"]), "high": float(row["high"]), "n": len(test),
            "n_train": len(train),
            "description": (f"logistic regression (C={C}, balanced) on {size}x{size} grayscale pixels, fitted on "
                            f"{len(train)} training images, scored on {len(test)} evaluated images")}
