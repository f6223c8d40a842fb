"""Downstream utility of synthetic chest X-rays (CheXGenBench, paper 004 §2.4 and Table 4).

The question: is a generator's output worth training on? A multi-label classifier is trained **only**
on one training source's images (a generator's synthetic images, or — the baseline — the real
training images), and evaluated on the **real** held-out test set by per-label AUROC. Table 4 puts
one row per training source, one column per label, and marks the cells that match or exceed the
real-data baseline (bold in the paper) or fall within 0.01 AUROC of it (underlined).

What the paper and the authors' script do (``Downstream/Classification/downstream_classification.py``)
-------------------------------------------------------------------------------------------------------
* an ImageNet-pretrained ResNet-50 (timm), its head replaced by ``num_labels`` logits;
* ``BCEWithLogitsLoss``; Adam (lr 1e-4, weight decay 1e-5 — Adam's L2 term, not AdamW);
  ``ReduceLROnPlateau(mode="min", factor=0.1, patience=2)`` stepped on the validation loss;
* 224 px, random horizontal flip, ``RandomRotation(10)``, ImageNet normalisation (grayscale
  images converted to RGB); 20 epochs; batch 768 in their shell script;
* a 5 % validation split of the *training source* (``train_test_split(test_size=0.05,
  random_state=42)``); the checkpoint with the lowest validation loss is the one evaluated;
* per-class AUROC (``sklearn.metrics.roc_auc_score``), **silently skipping** single-class labels,
  macro-averaged; accuracy on the flattened label matrix and micro/macro F1 at threshold 0.5.

What this module does differently, and why
------------------------------------------
* **Architecture.** timm/torchvision do not work in this environment and no ImageNet or chest
  X-ray weights ship offline, so the ``demo`` preset trains a small ResNet from scratch
  (transformers ``ResNetConfig``: basic blocks, depths ``[1, 1, 1, 1]``, widths ``[16, 32, 64, 128]``,
  one input channel, ~0.3 M parameters, :data:`DEMO_ARCHITECTURE`). It is a **stand-in**: its AUROCs
  are not comparable with the paper's numbers, only the comparison between training sources is.
  ``architecture="resnet50"`` builds the paper's ResNet-50 (transformers ``ResNetConfig`` defaults:
  bottleneck blocks ``[3, 4, 6, 3]``, widths ``[256, 512, 1024, 2048]``, 3 channels), optionally
  initialised from ``pretrained`` (a hub id such as ``microsoft/resnet-50`` — the ImageNet weights
  transformers ports from timm/torchvision — or a local ``save_pretrained`` folder); the 1000-class
  head is replaced. Any other ``ResNetConfig`` can be passed as a dict.
* **Augmentation** is written in plain torch (torchvision does not work here): per image, a
  horizontal flip with probability 0.5 and a rotation drawn uniformly from ``[-10°, 10°]``
  (``affine_grid``/``grid_sample``, bilinear, zero fill; torchvision's default interpolation is
  nearest), drawn from a seeded ``torch.Generator``. As in the authors' transform, images are
  resized first, then augmented, then normalised. (A horizontal flip moves the heart to the right;
  the authors flip anyway, and so do we, to stay comparable; ``augment=False`` turns it off.)
* **Normalisation**: ImageNet mean/std for 3-channel models (grayscale replicated, as
  ``convert("RGB")`` does); for 1-channel models the channel averages of ImageNet's mean/std
  (0.449, 0.226).
* **Single-class labels are reported, not skipped**: AUROC NaN with the note "only positives/negatives
  in the test set"; the macro AUROC is the mean over the labels that have both classes, and its
  note names the labels left out.
* **Uncertainty.** The demo test set is small, so every AUROC carries a 95 % percentile bootstrap CI
  over test images, and every Table-4 cell is tested against the baseline by a **paired** bootstrap
  over test images (the same resamples for every classifier, as
  :func:`radaudit.stats.paired_bootstrap`), Benjamini–Hochberg-corrected
  (:func:`radaudit.stats.benjamini_hochberg`) over all labels (and the macro column) × generators.
  The resampling is **stratified by label set** (pROC's stratified AUROC bootstrap, generalised to
  multi-label): with iid resampling a label with 2 test positives vanishes from ~13 % of resamples
  and its CI cannot be formed. Intervals come from :func:`radaudit.stats.interval_from_replicates`.
* **AUROC** is the Mann–Whitney form (scikit-learn is not installed here; the value is identical to
  ``roc_auc_score``): ``AUROC = (R₊ − n₊(n₊+1)/2) / (n₊ n₋)`` with ``R₊`` the sum of the positives'
  mid-ranks among all scores, so a tie between a positive and a negative counts ½.

Seeds: one ``seed`` makes everything reproducible — the initial weights and batch order
(``torch.manual_seed`` inside ``fork_rng``), the augmentation (its own ``torch.Generator``), the
validation split (numpy), and the bootstrap (numpy). :func:`run_utility` derives each source's
training seed with :func:`radaudit.stats.stable_seed` ``(seed, "utility", source)``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import numbers
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data.covid_cxr import DEMO_LABELS
from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import BootstrapError, bootstrap_pvalue, interval_from_replicates, resample_indices, stable_seed
from radaudit.stats.ranks import auroc as stats_auroc
from radaudit.stats.ranks import auroc_replicates

__all__ = [
    "ARCHITECTURES", "BOOTSTRAP_METHODS", "DEMO_ARCHITECTURE", "DEMO_LABELS", "MACRO", "RECIPE_VERSION",
    "TRAIN_DEFAULTS", "TrainedClassifier", "UtilityResult", "auroc", "build_classifier", "classifier_fingerprint",
    "label_matrix",
    "load_or_train_classifier", "paired_auroc_differences", "per_label_auroc", "predict_scores",
    "roc_curve_points", "run_utility", "threshold_metrics", "train_classifier", "utility_flags", "utility_table",
]

log = logging.getLogger(__name__)

#: Name of the macro-average row/column.
MACRO = "macro"
#: Named architectures (``architecture=`` also takes a dict of ``ResNetConfig`` arguments).
ARCHITECTURES: tuple[str, ...] = ("demo_resnet", "resnet50")
#: The demo stand-in: a ~0.3 M-parameter ResNet with basic blocks, trained from scratch on 1 channel.
DEMO_ARCHITECTURE: dict[str, Any] = {"num_channels": 1, "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128],
                                     "depths": [1, 1, 1, 1], "layer_type": "basic",
                                     "downsample_in_first_stage": False}
#: The paper's ResNet-50 (``ResNetConfig`` defaults, spelled out).
RESNET50_ARCHITECTURE: dict[str, Any] = {"num_channels": 3, "embedding_size": 64,
                                         "hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3],
                                         "layer_type": "bottleneck", "downsample_in_first_stage": False}
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
#: Bump when the training recipe changes in a way the settings do not show (invalidates cached classifiers).
RECIPE_VERSION = 1
META_FILE = "radaudit_utility_classifier.json"
#: The :func:`train_classifier` settings and their defaults (the paper's, except the architecture and batch size).
TRAIN_DEFAULTS: dict[str, Any] = {"epochs": 20, "batch_size": 32, "lr": 1e-4, "weight_decay": 1e-5, "augment": True,
                                  "max_rotation": 10.0, "architecture": "demo_resnet", "pretrained": None,
                                  "image_size": None, "val_fraction": 0.05, "lr_factor": 0.1, "lr_patience": 2,
                                  "select_best": True, "max_seconds": None}


def _check_hp(hp: Mapping[str, Any]) -> None:
    unknown = sorted(set(hp) - set(TRAIN_DEFAULTS) - {"device"})
    if unknown:
        raise ParamsError(f"Unknown classifier setting(s) {unknown}; allowed: {', '.join(TRAIN_DEFAULTS)}, device.")


# --- inputs ----------------------------------------------------------------------------------------

def label_matrix(labels: Any, label_names: Sequence[str]) -> np.ndarray:
    """A float32 ``[N, L]`` 0/1 matrix from one list of label names per image, or from a 0/1 matrix.

    Lists are matched by name against ``label_names`` (names outside it are ignored; reuses
    :func:`radaudit.metrics.image.fidelity.label_matrix`); a DataFrame is read by column name; a
    numeric 2-D array (or nested lists of numbers) must already have ``L`` columns in
    ``label_names`` order, and a numeric 1-D array is one label's column when ``L = 1``; a missing
    list (None/NA) means no label. Only the
    value 1 counts as present (-1 "uncertain" and NaN count as absent, as in the authors' script).
    """
    from radaudit.metrics.image.fidelity import label_matrix as _lm

    names = _check_label_names(label_names)
    if isinstance(labels, pd.DataFrame):
        return _lm(labels, len(labels), "labels", names).to_numpy(np.float32)
    arr = None
    if isinstance(labels, np.ndarray):
        arr = labels
    else:
        labels = list(labels)
        try:
            cand = np.asarray(labels)
        except ValueError:  # ragged lists of label names
            cand = None
        if cand is not None and cand.size and (np.issubdtype(cand.dtype, np.number) or cand.dtype == bool):
            arr = cand
    if arr is not None and (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        if arr.ndim == 1 and len(names) == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != len(names):
            raise DataFormatError(f"The label matrix has shape {arr.shape} but there are {len(names)} label names "
                                  f"{names}; pass an [N, {len(names)}] 0/1 matrix or one list of label names "
                                  "per image.")
        y = np.nan_to_num(arr.astype(np.float64), nan=0.0)
        return (y == 1).astype(np.float32)
    if arr is not None:
        labels = list(arr)
    labels = [[] if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v for v in labels]
    return _lm(labels, len(labels), "labels", names).to_numpy(np.float32)


def _check_label_names(label_names: Any) -> list[str]:
    if isinstance(label_names, str) or label_names is None:
        raise ParamsError(f"label_names must be a list of label names, got {label_names!r}.")
    names = [str(n) for n in label_names]
    if not names:
        raise ParamsError("label_names is empty: give the labels to classify, e.g. "
                          f"{list(DEMO_LABELS)}.")
    if len(set(names)) != len(names) or MACRO in names:
        raise ParamsError(f"label_names must be unique and must not contain {MACRO!r}; got {names}.")
    return names


def _check_images(images: Any, name: str = "images") -> np.ndarray:
    arr = np.asarray(images)
    if arr.ndim != 3:
        raise DataFormatError(f"{name} must be a float array [N, H, W] (grayscale) in [0, 1]; got shape {arr.shape}.")
    if len(arr) == 0:
        raise DataFormatError(f"{name} is empty: nothing to train or score.")
    if not np.issubdtype(arr.dtype, np.floating):
        raise DataFormatError(f"{name} has dtype {arr.dtype}; images must be floats in [0, 1] "
                              "(divide uint8 images by 255).")
    lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    if not (np.isfinite(lo) and np.isfinite(hi)) or np.isnan(arr).any():
        raise DataFormatError(f"{name} contains NaN or infinite pixels.")
    if lo < -1e-6 or hi > 1 + 1e-6:
        raise DataFormatError(f"{name} has values in [{lo:.3g}, {hi:.3g}]; images must lie in [0, 1] "
                              "(divide uint8 images by 255).")
    return arr


def _as_y(y: Any, n: int, label_names: Sequence[str], name: str = "y") -> np.ndarray:
    mat = label_matrix(y, label_names)
    if len(mat) != n:
        raise DataFormatError(f"{name} has {len(mat)} rows but there are {n} images.")
    return mat


def _as_scores(scores: Any, n: int, n_labels: int, name: str = "scores") -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1 and n_labels == 1:
        s = s[:, None]
    if s.shape != (n, n_labels):
        raise DataFormatError(f"{name} has shape {s.shape}; expected ({n}, {n_labels}) (images × labels).")
    if not np.isfinite(s).all():
        raise DataFormatError(f"{name} contains NaN or infinite values.")
    return s


# --- metrics ---------------------------------------------------------------------------------------

def auroc(y_true: Any, scores: Any) -> float:
    """Area under the ROC curve of one label (paper §2.4 "AUROC"): the lab's one implementation,
    :func:`radaudit.stats.auroc` (``sklearn.metrics.roc_auc_score``), after a shape check.

    In Mann–Whitney form ``AUROC = (R₊ − n₊(n₊+1)/2) / (n₊ n₋)``, ``R₊`` the sum of the positives' mid-ranks
    (a positive–negative tie counts ½; :func:`_auroc_rows` vectorises this form for the bootstrap). A label is
    positive where ``y_true == 1``; any other value (0, −1 for uncertain, NaN for unmentioned) is negative — the
    conversion is made here, before the statistic. NaN when the labels have a single class (undefined; callers
    report it).
    """
    y = np.asarray(y_true)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape:
        raise DataFormatError(f"auroc: y_true and scores must be 1-D of equal length; got {y.shape} and {s.shape}.")
    return stats_auroc(y.astype(np.float64) == 1, s, undefined="nan")


def roc_curve_points(y_true: Any, scores: Any, label_names: Sequence[str]) -> pd.DataFrame:
    """ROC curve points per label: ``label, fpr, tpr, threshold`` (for :func:`plot_roc_curves`).

    As ``sklearn.metrics.roc_curve(drop_intermediate=False)``: one point per distinct score
    (predicting positive for ``score >= threshold``), starting at ``(0, 0)`` with threshold ``+inf``.
    The trapezoidal area under these points equals :func:`auroc`. Labels with a single class get no
    points (their ROC is undefined).
    """
    names = _check_label_names(label_names)
    y = np.asarray(y_true, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    s = _as_scores(scores, len(y), len(names))
    if y.shape != s.shape:
        raise DataFormatError(f"y_true has shape {y.shape} but scores {s.shape}.")
    frames = []
    for j, name in enumerate(names):
        yy, ss = y[:, j] == 1, s[:, j]
        n_pos, n_neg = int(yy.sum()), int((~yy).sum())
        if n_pos == 0 or n_neg == 0:
            continue
        order = np.argsort(-ss, kind="mergesort")
        ss, yy = ss[order], yy[order]
        last = np.r_[np.flatnonzero(np.diff(ss)), len(ss) - 1]
        tps = np.cumsum(yy)[last]
        fps = last + 1 - tps
        frames.append(pd.DataFrame({"label": name, "fpr": np.r_[0.0, fps / n_neg], "tpr": np.r_[0.0, tps / n_pos],
                                    "threshold": np.r_[np.inf, ss[last]]}))
    if not frames:
        return pd.DataFrame({"label": pd.Series(dtype=object), "fpr": pd.Series(dtype=float),
                             "tpr": pd.Series(dtype=float), "threshold": pd.Series(dtype=float)})
    return pd.concat(frames, ignore_index=True)


def _prf(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    """Precision, recall, F1 with scikit-learn's ``zero_division=0`` (a 0/0 ratio is 0)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
    return p, r, f


def threshold_metrics(y_true: Any, scores: Any, threshold: float = 0.5) -> dict[str, float]:
    """The authors' ``calculate_metrics`` at ``threshold`` (default 0.5), without their 3-decimal rounding.

    ``accuracy``: over the flattened ``[N, L]`` matrix (``accuracy_score(labels.flatten(), ...)``);
    ``precision/recall/f1_micro``: from the TP/FP/FN pooled over labels; ``*_macro``: the mean over
    all labels of the per-label values; every 0/0 ratio is 0 (scikit-learn ``zero_division=0``).
    A prediction is positive when ``score >= threshold``.
    """
    y = np.asarray(y_true, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    s = _as_scores(scores, len(y), y.shape[1])
    pred = s >= float(threshold)
    truth = y == 1
    tp = (pred & truth).sum(axis=0).astype(float)
    fp = (pred & ~truth).sum(axis=0).astype(float)
    fn = (~pred & truth).sum(axis=0).astype(float)
    per = np.array([_prf(a, b, c) for a, b, c in zip(tp, fp, fn)])
    micro = _prf(tp.sum(), fp.sum(), fn.sum())
    return {"accuracy": float((pred == truth).mean()), "precision_micro": micro[0], "recall_micro": micro[1],
            "f1_micro": micro[2], "precision_macro": float(per[:, 0].mean()), "recall_macro": float(per[:, 1].mean()),
            "f1_macro": float(per[:, 2].mean()), "threshold": float(threshold)}


def _single_class_note(n_pos: int, n_neg: int) -> str:
    return "only negatives in the test set" if n_pos == 0 else "only positives in the test set"


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


BOOTSTRAP_METHODS: tuple[str, ...] = ("percentile", "basic", "shifted")
#: Largest share of failed (single-class) replicates allowed before a CI is reported as not computed.
MAX_FAILED = 0.1
#: Below this many positives (or negatives) a label's CI gets a warning note: a bootstrap of 2 or 3
#: positives has few distinct resamples and understates the uncertainty.
FEW_CASES = 5


def _check_bootstrap(n_bootstrap: Any, confidence: Any, method: str = "percentile") -> None:
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, numbers.Integral) or n_bootstrap < 0:
        raise ParamsError(f"n_bootstrap must be a non-negative integer (0: no CIs), got {n_bootstrap!r}.")
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise ParamsError(f"confidence must lie in (0, 1), e.g. 0.95; got {confidence!r}.")
    if method not in BOOTSTRAP_METHODS:
        raise ParamsError(f"method={method!r} is not allowed: use one of {', '.join(BOOTSTRAP_METHODS)}.")


def _auroc_rows(yb: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """:func:`auroc` of each row of ``[b, N]`` labels/scores (label 1 = positive, converted here as in
    :func:`auroc`; the mid-rank formula of :func:`radaudit.stats.auroc_replicates`); NaN if single-class."""
    return auroc_replicates(yb == 1, sb)


def _bootstrap_aurocs(y: np.ndarray, scores: Mapping[str, np.ndarray], n_bootstrap: int, seed: int,
                      stratify: bool) -> dict[str, np.ndarray]:
    """Per source, the ``[B, L]`` replicate AUROCs on the SAME resampled test images (paired by construction).

    The resamples are :func:`radaudit.stats.resample_indices`' ``[b, N]`` blocks of test images, seeded.
    ``stratify``: resample within each *label set* (the distinct rows of the ``[N, L]`` label matrix,
    ``strata=y``), so every resample keeps each label's numbers of positives and negatives — pROC's
    stratified AUROC bootstrap (its default), generalised to multi-label data — and no resample has a
    single class. Otherwise images are drawn iid from all N (``rng.integers(0, N, N)``).
    """
    reps: dict[str, list[np.ndarray]] = {k: [] for k in scores}
    for idx in resample_indices(len(y), n_bootstrap, seed=seed, strata=y if stratify else None):
        yb = y[idx]  # [b, N, L]
        for k, s in scores.items():
            sb = s[idx]
            reps[k].append(np.stack([_auroc_rows(yb[:, :, j], sb[:, :, j]) for j in range(y.shape[1])], axis=1))
    return {k: np.concatenate(v, axis=0) for k, v in reps.items()}


def _macro_rows(reps: np.ndarray, cols: Sequence[int]) -> np.ndarray:
    """The macro mean of each replicate over ``cols``; NaN when any of them failed."""
    return reps[:, list(cols)].mean(axis=1)


def _interval(estimate: float, replicates: np.ndarray, method: str, confidence: float, n_units: int,
              name: str) -> tuple[float, float, int, str]:
    """``(low, high, n_failed, note)`` via :func:`radaudit.stats.interval_from_replicates`; NaN + note on failure."""
    try:
        res = interval_from_replicates(estimate, replicates, None, method, confidence, n_units, name, MAX_FAILED)
    except BootstrapError:
        n_failed = int((~np.isfinite(replicates)).sum())
        return (math.nan, math.nan, n_failed, f"CI not computed: {n_failed} of {len(replicates)} resamples had a "
                f"single class (more than {MAX_FAILED:.0%}); use stratify=True")
    note = (f"{res.n_failed} of {res.n_bootstrap} resamples had a single class and were left out of the CI"
            if res.n_failed else "")
    return res.low, res.high, res.n_failed, note


def per_label_auroc(y_true: Any, scores: Any, label_names: Sequence[str], *, n_bootstrap: int = 1000, seed: int = 0,
                    confidence: float = 0.95, threshold: float = 0.5, method: str = "percentile",
                    stratify: bool = True) -> pd.DataFrame:
    """Per-label AUROC on the real test set with bootstrap CIs, plus the macro row (paper §2.4, Table 4).

    Args:
        y_true: ``[N, L]`` 0/1 matrix (or one label list per image, read with :func:`label_matrix`).
        scores: ``[N, L]`` classifier probabilities (:func:`predict_scores`).
        label_names: the ``L`` label names, in column order.
        n_bootstrap: bootstrap resamples of the test images (0: no CIs).
        seed: the bootstrap seed; every label (and, in :func:`run_utility`, every source) uses the
            same resampled images.
        confidence: two-sided CI coverage.
        threshold: for ``accuracy`` and ``f1``.
        method: ``"percentile"`` (default, the usual AUROC interval, e.g. pROC), ``"basic"`` or
            ``"shifted"`` (formulas in :mod:`radaudit.stats`; computed by its
            ``interval_from_replicates``).
        stratify: resample within label sets (default; see below) instead of iid over all images.

    Why not :func:`radaudit.stats.bootstrap_ci` directly: on the small demo test set a rare label
    (2 ARDS positives among ~180 images) is missing from ~13 % of iid resamples, so its AUROC fails
    there and the iid CI cannot be formed (or is conditioned on the resamples that happen to contain
    it). The stratified bootstrap keeps every label's positives and negatives in every resample;
    the replicates are computed vectorised (mid-rank AUROC over a ``[B, N]`` block) and the interval
    comes from the same :func:`radaudit.stats.interval_from_replicates` that ``bootstrap_ci`` uses.

    Returns:
        One row per label, then a ``"macro"`` row, with ``label, auroc, ci_low, ci_high, n_pos,
        n_neg, accuracy, f1, note``. A label whose test set has a single class gets AUROC NaN and
        the note "only positives/negatives in the test set" (the authors skip it silently). The
        macro AUROC is the mean over the labels with both classes (its note names any left out);
        its CI recomputes that mean on each resample of images. The macro row's ``accuracy`` is the
        authors' flattened accuracy and its ``f1`` the macro F1 (:func:`threshold_metrics`).
    """
    names = _check_label_names(label_names)
    y = label_matrix(y_true, names).astype(np.float64)
    if len(y) == 0:
        raise DataFormatError("The test set is empty: no AUROC can be computed.")
    s = _as_scores(scores, len(y), len(names))
    _check_bootstrap(n_bootstrap, confidence, method)
    reps = (_bootstrap_aurocs(y, {"s": s}, n_bootstrap, seed, stratify)["s"] if n_bootstrap and len(y) >= 2
            else None)
    rows = []
    defined = []
    for j, name in enumerate(names):
        yy, ss = y[:, j], s[:, j]
        n_pos = int((yy == 1).sum())
        n_neg = len(yy) - n_pos
        pred = ss >= threshold
        _, _, f1 = _prf(float((pred & (yy == 1)).sum()), float((pred & (yy != 1)).sum()),
                        float((~pred & (yy == 1)).sum()))
        acc = float((pred == (yy == 1)).mean())
        row = {"label": name, "auroc": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_pos": n_pos,
               "n_neg": n_neg, "accuracy": acc, "f1": f1, "note": ""}
        if n_pos == 0 or n_neg == 0:
            row["note"] = _single_class_note(n_pos, n_neg)
        else:
            defined.append(j)
            row["auroc"] = auroc(yy, ss)
            if reps is not None:
                row["ci_low"], row["ci_high"], _, row["note"] = _interval(row["auroc"], reps[:, j], method, confidence,
                                                                          len(y), name)
                if min(n_pos, n_neg) < FEW_CASES:
                    few = "positives" if n_pos < n_neg else "negatives"
                    row["note"] = _join(row["note"], f"only {min(n_pos, n_neg)} {few} in the test set: the CI "
                                                     "understates the uncertainty")
        rows.append(row)
    tm = threshold_metrics(y, s, threshold)
    left_out = [names[j] for j in range(len(names)) if j not in defined]
    lo = hi = math.nan
    if defined:
        macro = float(np.mean([rows[j]["auroc"] for j in defined]))
        note = ""
        if reps is not None:
            lo, hi, _, note = _interval(macro, _macro_rows(reps, defined), method, confidence, len(y), MACRO)
        note = _join(f"mean over {len(defined)} of {len(names)} labels; left out (single class): "
                     f"{', '.join(left_out)}" if left_out else "", note)
    else:
        macro, note = math.nan, "no label has both classes in the test set"
    rows.append({"label": MACRO, "auroc": macro, "ci_low": lo, "ci_high": hi, "n_pos": int((y == 1).sum()),
                 "n_neg": int((y != 1).sum()), "accuracy": tm["accuracy"], "f1": tm["f1_macro"], "note": note})
    return pd.DataFrame(rows, columns=["label", "auroc", "ci_low", "ci_high", "n_pos", "n_neg", "accuracy", "f1",
                                       "note"])


def paired_auroc_differences(y_true: Any, scores_by_source: Mapping[str, Any], label_names: Sequence[str], *,
                             baseline: str = "real", n_bootstrap: int = 1000, seed: int = 0,
                             confidence: float = 0.95, method: str = "percentile",
                             stratify: bool = True, min_positives: int = 0) -> pd.DataFrame:
    """AUROC(source) − AUROC(baseline) per label and macro, with a paired bootstrap over test images.

    ``min_positives``: a label with fewer positive test images gets its difference and CI but **no
    test** (``pvalue`` NaN, note ``significance n/a``): with 2-4 positives a p-value says nothing. The
    macro row is tested only when every label in it has that many positives (an unweighted mean
    over labels is driven by the rare ones as much as by the common ones).

    Both classifiers are scored on the same real test images, so each bootstrap replicate resamples
    the test images once and recomputes every source's AUROC on that resample (paired, as
    :func:`radaudit.stats.paired_bootstrap`; stratified by label set as in :func:`per_label_auroc`).
    The CI of the difference is the interval of the replicate differences; the two-sided p-value of
    "difference = 0" inverts the percentile interval, ``p = min(1, 2·min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0})
    / (B' + 1))`` (the formula of ``paired_bootstrap``). All sources and labels share the resamples.
    Labels with a single class in the test set get NaN and a note; the macro difference uses the
    labels with both classes.

    Returns:
        ``source, label, auroc, auroc_baseline, diff, diff_low, diff_high, pvalue, n_failed, note``,
        one row per non-baseline source × (labels + macro).
    """
    names = _check_label_names(label_names)
    y = label_matrix(y_true, names).astype(np.float64)
    if len(y) == 0:
        raise DataFormatError("The test set is empty: no AUROC can be computed.")
    _check_bootstrap(n_bootstrap, confidence, method)
    if baseline not in scores_by_source:
        raise ParamsError(f"The baseline {baseline!r} is not among the sources {list(scores_by_source)}.")
    scores = {k: _as_scores(v, len(y), len(names), f"scores of {k!r}") for k, v in scores_by_source.items()}
    defined = [j for j in range(len(names)) if 0 < (y[:, j] == 1).sum() < len(y)]
    reps = _bootstrap_aurocs(y, scores, n_bootstrap, seed, stratify) if n_bootstrap and len(y) >= 2 else None
    est = {k: np.array([auroc(y[:, j], s[:, j]) for j in range(len(names))]) for k, s in scores.items()}
    rows = []
    for src in scores:
        if src == baseline:
            continue
        for j, name in [*enumerate(names), (None, MACRO)]:
            row = {"source": src, "label": name, "auroc": math.nan, "auroc_baseline": math.nan, "diff": math.nan,
                   "diff_low": math.nan, "diff_high": math.nan, "pvalue": math.nan, "n_failed": 0, "note": ""}
            cols = defined if j is None else [j]
            if not cols or (j is not None and j not in defined):
                n_pos = int((y[:, j] == 1).sum()) if j is not None else 0
                row["note"] = (_single_class_note(n_pos, len(y) - n_pos) if j is not None
                               else "no label has both classes in the test set")
                rows.append(row)
                continue
            a, b = float(est[src][cols].mean()), float(est[baseline][cols].mean())
            row.update(auroc=a, auroc_baseline=b, diff=a - b)
            few = [(names[c], int((y[:, c] == 1).sum())) for c in cols if (y[:, c] == 1).sum() < min_positives]
            if reps is not None:
                d = _macro_rows(reps[src], cols) - _macro_rows(reps[baseline], cols)
                lo, hi, n_failed, note = _interval(a - b, d, method, confidence, len(y), f"{src} - {baseline}")
                row.update(diff_low=lo, diff_high=hi, n_failed=n_failed, note=note,
                           pvalue=bootstrap_pvalue(d) if math.isfinite(lo) and not few else math.nan)
            if few:
                row["note"] = _join(row["note"], "significance n/a: " + ", ".join(
                    f"{lab} has {k} positive(s)" for lab, k in few) + f" (< {min_positives})")
            rows.append(row)
    return pd.DataFrame(rows, columns=["source", "label", "auroc", "auroc_baseline", "diff", "diff_low", "diff_high",
                                       "pvalue", "n_failed", "note"])


# --- Table 4 ---------------------------------------------------------------------------------------

def _long_from(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str) -> pd.DataFrame:
    if isinstance(per_generator, pd.DataFrame):
        if "source" not in per_generator.columns:
            raise DataFormatError("A long utility table needs a 'source' column (the training source of each row).")
        long = per_generator.copy()
    else:
        if not per_generator:
            raise ParamsError("per_generator is empty: pass {training source: per_label_auroc table}.")
        frames = []
        for src, tab in per_generator.items():
            missing = [c for c in ("label", "auroc") if c not in tab.columns]
            if missing:
                raise DataFormatError(f"The table of {src!r} has no column(s) {missing}; pass per_label_auroc output.")
            frames.append(tab.assign(source=src))
        long = pd.concat(frames, ignore_index=True)
        long = long[["source", *[c for c in long.columns if c != "source"]]]
    sources = list(pd.unique(long["source"]))
    if baseline not in sources:
        raise ParamsError(f"The baseline {baseline!r} is not among the training sources {sources}; "
                          "train a classifier on the real training images and name it so.")
    order = [baseline, *[s for s in sources if s != baseline]]
    long["source"] = pd.Categorical(long["source"], categories=order, ordered=True)
    long = long.sort_values("source", kind="stable").reset_index(drop=True)
    long["source"] = long["source"].astype(str)
    return long


def utility_flags(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str = "real", *,
                  differences: pd.DataFrame | None = None, tolerance: float = 0.01, alpha: float = 0.05,
                  digits: int = 2) -> pd.DataFrame:
    """The long Table-4 table: one row per source × label (+ macro) with CIs and the paper's flags.

    Flags (NA for the baseline's own row and for NaN cells), computed on the AUROCs **rounded to
    ``digits``** as the paper compares its printed 2-decimal values:

    * ``ge_baseline`` — matches or exceeds the baseline (the paper's bold);
    * ``within_tolerance`` — below the baseline by at most ``tolerance`` = 0.01 (underlined);
    * ``significant`` — with ``differences`` (:func:`paired_auroc_differences`): the paired-bootstrap
      p-value, Benjamini–Hochberg-adjusted (``p_adj``) over all non-baseline cells with a p-value
      (labels and macro × generators, one family), is ``<= alpha``. Without ``differences`` the
      p-values already in a long input table (a previous :func:`utility_flags` result) are used, else
      these columns are NaN/NA.
    """
    from radaudit.stats import benjamini_hochberg

    if not (isinstance(tolerance, (int, float)) and tolerance >= 0):
        raise ParamsError(f"tolerance must be a non-negative number (paper: 0.01), got {tolerance!r}.")
    long = _long_from(per_generator, baseline)
    base = long[long["source"] == baseline].drop_duplicates("label").set_index("label")["auroc"]
    long["auroc_baseline"] = long["label"].map(base).astype(float)
    a = long["auroc"].astype(float).round(digits)
    b = long["auroc_baseline"].round(digits)
    eps = 10.0 ** -(digits + 6)
    valid = a.notna() & b.notna() & (long["source"] != baseline)
    long["ge_baseline"] = pd.array(np.where(valid, a >= b - eps, False), dtype="boolean")
    long["within_tolerance"] = pd.array(np.where(valid, (a < b - eps) & (b - a <= tolerance + eps), False),
                                        dtype="boolean")
    long.loc[~valid, ["ge_baseline", "within_tolerance"]] = pd.NA
    carried = differences is None and isinstance(per_generator, pd.DataFrame) and "pvalue" in long.columns
    for c in ("diff", "diff_low", "diff_high", "pvalue", "p_adj"):
        if not (carried and c in long.columns and c != "p_adj"):
            long[c] = math.nan
    long["significant"] = pd.array([pd.NA] * len(long), dtype="boolean")
    if differences is not None:
        need = ["source", "label", "diff", "diff_low", "diff_high", "pvalue"]
        missing = [c for c in need if c not in differences.columns]
        if missing:
            raise DataFormatError(f"differences has no column(s) {missing}; pass paired_auroc_differences output.")
        d = differences.set_index(["source", "label"])
        key = list(zip(long["source"], long["label"]))
        for c in ("diff", "diff_low", "diff_high", "pvalue"):
            long[c] = [float(d[c].get(k, math.nan)) for k in key]
        if "note" in differences.columns:
            long["test_note"] = [str(d["note"].get(k, "") or "") for k in key]
    if differences is not None or carried:
        p = long["pvalue"].to_numpy(float)
        rejected, adjusted = benjamini_hochberg(p, alpha=alpha)
        long["p_adj"] = adjusted
        has_p = ~np.isnan(p)
        long["significant"] = pd.array(np.where(has_p, rejected, False), dtype="boolean")
        long.loc[~has_p, "significant"] = pd.NA
        tn = long["test_note"] if "test_note" in long.columns else pd.Series([""] * len(long))
        long["significance"] = [
            "" if src == baseline else
            (f"p_adj = {pa:.3g}" + (" *" if sig is not pd.NA and bool(sig) else "")) if np.isfinite(pv) else
            ("n/a" + (f" ({n.split('significance n/a: ')[1]})" if "significance n/a: " in n else ""))
            for src, pv, pa, sig, n in zip(long["source"], p, long["p_adj"].to_numpy(float),
                                           long["significant"].astype(object), tn)]
    return long


def utility_table(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str = "real", *,
                  differences: pd.DataFrame | None = None, tolerance: float = 0.01, alpha: float = 0.05,
                  digits: int = 2, marks: bool = False, ci: bool = False) -> pd.DataFrame:
    """Table 4 of paper 004: rows = training source (baseline first), columns = labels + ``macro``, cells = AUROC.

    ``per_generator``: ``{source: per_label_auroc table}`` (or the long :func:`utility_flags` table).
    With ``marks=False`` the cells are the AUROC floats (the flags and CIs are in the long
    :func:`utility_flags` table). With ``marks=True`` the cells are strings with ``digits``
    decimals and ASCII marks that survive CSV/Markdown/LaTeX: ``+`` matches or exceeds the baseline
    (paper: bold), ``~`` within ``tolerance`` below it (paper: underlined), ``*`` significantly
    different from the baseline (paired bootstrap, BH-adjusted p ≤ ``alpha``; needs ``differences``);
    NaN prints as ``n/a``. ``ci=True`` (with ``marks=True``) appends the 95% bootstrap interval,
    e.g. ``"0.69+ [0.56, 0.80]"``.
    """
    from radaudit.tables import format_number

    long = utility_flags(per_generator, baseline, differences=differences, tolerance=tolerance, alpha=alpha,
                         digits=digits)
    sources = list(pd.unique(long["source"]))
    labels = list(pd.unique(long["label"]))
    labels = [lab for lab in labels if lab != MACRO] + ([MACRO] if MACRO in labels else [])
    wide = long.pivot_table(index="source", columns="label", values="auroc", aggfunc="first", dropna=False)
    wide = wide.reindex(index=sources, columns=labels)
    wide.index.name, wide.columns.name = "training source", None
    if not marks:
        if ci:
            raise ParamsError("ci=True needs marks=True (the cells become strings).")
        return wide

    def true(v: Any) -> bool:
        return v is not pd.NA and not (isinstance(v, float) and math.isnan(v)) and bool(v)

    def cell(r: pd.Series) -> str:
        s = format_number(r["auroc"], digits)
        if true(r["ge_baseline"]):
            s += "+"
        elif true(r["within_tolerance"]):
            s += "~"
        if true(r["significant"]):
            s += "*"
        if ci and not (pd.isna(r["ci_low"]) or pd.isna(r["ci_high"])):
            s += f" [{format_number(r['ci_low'], digits)}, {format_number(r['ci_high'], digits)}]"
        return s

    long = long.assign(_cell=[cell(r) for _, r in long.iterrows()])
    out = long.pivot_table(index="source", columns="label", values="_cell", aggfunc="first").reindex(
        index=sources, columns=labels)
    out.index.name, out.columns.name = "training source", None
    out.attrs["legend"] = (f"'+' >= baseline ({baseline}); '~' within {tolerance:g} below it; '*' paired-bootstrap "
                           f"difference significant (BH-adjusted p <= {alpha:g}).")
    return out.fillna("n/a")


# --- the classifier --------------------------------------------------------------------------------

@dataclass
class TrainedClassifier:
    """What :func:`train_classifier` returns.

    ``model``: a transformers ``ResNetForImageClassification`` (eval mode) whose config carries the
    label names (``id2label``) and the preprocessing (``radaudit_preprocessing``) that
    :func:`predict_scores` applies. ``history``: per epoch ``epoch, train_loss, val_loss, lr``.
    ``best_epoch``: the epoch whose weights were kept (lowest validation loss with ``select_best``).
    """

    model: Any
    label_names: list[str]
    history: pd.DataFrame
    best_epoch: int
    n_train: int
    n_val: int
    settings: dict[str, Any]
    elapsed_seconds: float = 0.0
    stopped_early: bool = False
    from_cache: bool = False
    folder: Path | None = None


def _architecture_config(architecture: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(architecture, Mapping):
        return dict(architecture)
    if architecture == "demo_resnet":
        return dict(DEMO_ARCHITECTURE)
    if architecture == "resnet50":
        return dict(RESNET50_ARCHITECTURE)
    raise ParamsError(f"architecture={architecture!r} is not known: use one of {', '.join(ARCHITECTURES)}, "
                      "or a dict of transformers ResNetConfig arguments.")


def build_classifier(architecture: str | Mapping[str, Any], label_names: Sequence[str], *,
                     pretrained: str | None = None, image_size: int | None = None) -> Any:
    """A ``ResNetForImageClassification`` with ``len(label_names)`` logits for multi-label BCE.

    ``architecture``: ``"demo_resnet"`` (:data:`DEMO_ARCHITECTURE`, from scratch), ``"resnet50"``
    (the paper's backbone) or a dict of ``ResNetConfig`` arguments. ``pretrained``: a hub id
    (``microsoft/resnet-50``) or a local ``save_pretrained`` folder whose weights initialise the
    backbone (the architecture then comes from the checkpoint; its head is replaced —
    ``ignore_mismatched_sizes``). The initial weights of new layers follow torch's global RNG: call
    inside ``torch.manual_seed`` (as :func:`train_classifier` does). ``image_size``: the side images
    are resized to before the network (None: kept as given; the paper uses 224), stored in the config.
    """
    from transformers import ResNetConfig, ResNetForImageClassification

    names = _check_label_names(label_names)
    if image_size is not None and (isinstance(image_size, bool) or not isinstance(image_size, numbers.Integral)
                                   or image_size < 8):
        raise ParamsError(f"image_size must be an integer >= 8 (or None to keep the input size), got {image_size!r}.")
    head = {"num_labels": len(names), "problem_type": "multi_label_classification",
            "id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}
    if pretrained is not None:
        from radaudit.models.resolver import (
            ModelUnavailableError,
            load_failed_message,
            resolve_model,
        )

        resolved = resolve_model(pretrained)
        try:
            model = ResNetForImageClassification.from_pretrained(resolved.path_or_id, ignore_mismatched_sizes=True,
                                                                 **resolved.pretrained_kwargs(), **head)
        except (OSError, ValueError) as err:
            raise ModelUnavailableError(load_failed_message(resolved, err)
                                        + " Or train from scratch: pretrained=None.") from err
    else:
        cfg_kwargs = _architecture_config(architecture)
        try:
            config = ResNetConfig(**cfg_kwargs, **head)
        except (TypeError, ValueError) as err:
            raise ParamsError(f"Bad ResNetConfig arguments {cfg_kwargs}: {err}") from err
        model = ResNetForImageClassification(config)
    channels = int(model.config.num_channels)
    if channels == 3:
        mean, std = list(IMAGENET_MEAN), list(IMAGENET_STD)
    elif channels == 1:
        mean, std = [float(np.mean(IMAGENET_MEAN))], [float(np.mean(IMAGENET_STD))]
    else:
        raise ParamsError(f"The classifier has {channels} input channels; grayscale X-rays need 1 or 3.")
    model.config.radaudit_preprocessing = {"image_size": None if image_size is None else int(image_size),
                                           "mean": mean, "std": std}
    return model


def _preprocessing(model: Any) -> dict[str, Any]:
    pre = getattr(model.config, "radaudit_preprocessing", None)
    if not pre:
        channels = int(model.config.num_channels)
        mean = list(IMAGENET_MEAN) if channels == 3 else [float(np.mean(IMAGENET_MEAN))]
        std = list(IMAGENET_STD) if channels == 3 else [float(np.mean(IMAGENET_STD))]
        pre = {"image_size": None, "mean": mean, "std": std}
    return dict(pre)


def _prepare(batch: np.ndarray, pre: Mapping[str, Any], augment: bool, max_rotation: float, generator: Any) -> Any:
    """``[B, H, W]`` in [0, 1] → resized, optionally flipped/rotated, channel-replicated, normalised tensor."""
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(np.ascontiguousarray(batch, dtype=np.float32)).unsqueeze(1)
    size = pre.get("image_size")
    if size is not None and tuple(x.shape[-2:]) != (size, size):
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False).clamp_(0, 1)
    if augment:
        n = x.shape[0]
        flip = torch.rand(n, generator=generator) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        if max_rotation > 0:
            angle = (torch.rand(n, generator=generator) * 2 - 1) * math.radians(max_rotation)
            cos, sin = torch.cos(angle), torch.sin(angle)
            zero = torch.zeros_like(cos)
            theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    mean = torch.tensor(pre["mean"], dtype=torch.float32).view(1, -1, 1, 1)
    std = torch.tensor(pre["std"], dtype=torch.float32).view(1, -1, 1, 1)
    if mean.shape[1] == 3:
        x = x.expand(-1, 3, -1, -1)
    return (x - mean) / std


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ParamsError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _settings(epochs: int, batch_size: int, lr: float, weight_decay: float, augment: bool, max_rotation: float,
              architecture: str | Mapping[str, Any], pretrained: str | None, image_size: int | None,
              val_fraction: float, lr_factor: float, lr_patience: int, select_best: bool,
              max_seconds: float | None) -> dict[str, Any]:
    epochs = _positive_int("epochs", epochs)
    batch_size = _positive_int("batch_size", batch_size)
    for name, v in (("lr", lr), ("lr_factor", lr_factor)):
        if not (isinstance(v, (int, float)) and v > 0):
            raise ParamsError(f"{name} must be a positive number, got {v!r}.")
    if not (isinstance(weight_decay, (int, float)) and weight_decay >= 0):
        raise ParamsError(f"weight_decay must be >= 0, got {weight_decay!r}.")
    if not (isinstance(val_fraction, (int, float)) and 0 <= val_fraction < 1):
        raise ParamsError(f"val_fraction must lie in [0, 1) (paper: 0.05), got {val_fraction!r}.")
    if isinstance(lr_patience, bool) or not isinstance(lr_patience, numbers.Integral) or lr_patience < 0:
        raise ParamsError(f"lr_patience must be a non-negative integer (paper: 2), got {lr_patience!r}.")
    if not (isinstance(max_rotation, (int, float)) and 0 <= max_rotation <= 180):
        raise ParamsError(f"max_rotation must be a number of degrees in [0, 180] (paper: 10), got {max_rotation!r}.")
    if max_seconds is not None and not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise ParamsError(f"max_seconds must be a positive number of seconds or None, got {max_seconds!r}.")
    if isinstance(architecture, str):
        _architecture_config(architecture)  # validates the name
    return {"epochs": epochs, "batch_size": batch_size, "lr": float(lr), "weight_decay": float(weight_decay),
            "augment": bool(augment), "max_rotation": float(max_rotation),
            "architecture": architecture if isinstance(architecture, str) else dict(architecture),
            "pretrained": None if pretrained is None else str(pretrained),
            "image_size": None if image_size is None else int(image_size), "val_fraction": float(val_fraction),
            "lr_factor": float(lr_factor), "lr_patience": int(lr_patience), "select_best": bool(select_best),
            "max_seconds": None if max_seconds is None else float(max_seconds),
            "optimizer": "Adam", "loss": "BCEWithLogits", "scheduler": "ReduceLROnPlateau(min)"}


def _split(n: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random train/validation split of the training source (authors: ``test_size=0.05``)."""
    n_val = int(round(val_fraction * n))
    if val_fraction > 0 and n_val == 0 and n >= 2:
        n_val = 1
    n_val = min(n_val, n - 1)
    perm = np.random.default_rng(stable_seed(seed, "val_split")).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _mean_loss(model: Any, images: np.ndarray, y: np.ndarray, idx: np.ndarray, pre: Mapping[str, Any],
               batch_size: int, device: str) -> float:
    import torch
    import torch.nn.functional as F

    total = 0.0
    with torch.no_grad():
        for start in range(0, len(idx), batch_size):
            b = idx[start:start + batch_size]
            x = _prepare(images[b], pre, False, 0.0, None).to(device)
            logits = model(pixel_values=x).logits
            total += float(F.binary_cross_entropy_with_logits(logits, torch.from_numpy(y[b]).to(device),
                                                              reduction="sum")) / y.shape[1]
    return total / len(idx)


def train_classifier(images: Any, y: Any, *, label_names: Sequence[str], seed: int = 0, epochs: int = 20,
                     batch_size: int = 32, lr: float = 1e-4, weight_decay: float = 1e-5, augment: bool = True,
                     max_rotation: float = 10.0, architecture: str | Mapping[str, Any] = "demo_resnet",
                     pretrained: str | None = None, image_size: int | None = None, val_fraction: float = 0.05,
                     lr_factor: float = 0.1, lr_patience: int = 2, select_best: bool = True,
                     max_seconds: float | None = None, device: str | None = "cpu") -> TrainedClassifier:
    """Train the multi-label classifier of paper §2.4 on one training source (images ``[N, H, W]`` in [0, 1]).

    The recipe is the authors' (see the module docstring): BCE with logits, Adam (``lr``,
    ``weight_decay`` as L2), ``ReduceLROnPlateau(factor=lr_factor, patience=lr_patience)`` on the
    validation loss, flip + rotation augmentation, ``epochs`` passes, and the weights of the epoch
    with the lowest validation loss (``select_best``). ``val_fraction`` of the source (at least one
    image when > 0) is held out for that; with ``val_fraction=0`` the scheduler follows the
    training loss and the last epoch is kept. Defaults are the paper's except the architecture (the
    demo stand-in, see :data:`DEMO_ARCHITECTURE`) and ``batch_size`` (their script: 768).

    ``max_seconds``: a wall-clock budget checked after each epoch (stopping is recorded in
    ``stopped_early``; the result then depends on the machine's speed). Same inputs and ``seed`` →
    identical weights on the same machine (the caller's RNG state is left untouched).
    """
    import torch
    import torch.nn.functional as F

    from radaudit.models.resolver import resolve_device

    names = _check_label_names(label_names)
    x_all = _check_images(images)
    y_all = _as_y(y, len(x_all), names)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    hp = _settings(epochs, batch_size, lr, weight_decay, augment, max_rotation, architecture, pretrained, image_size,
                   val_fraction, lr_factor, lr_patience, select_best, max_seconds)
    device = resolve_device(device)
    train_idx, val_idx = _split(len(x_all), hp["val_fraction"], int(seed))
    start = time.monotonic()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = build_classifier(architecture, names, pretrained=pretrained, image_size=hp["image_size"]).to(device)
        pre = _preprocessing(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=hp["lr_factor"],
                                                               patience=hp["lr_patience"])
        shuffle = torch.Generator().manual_seed(int(seed))
        aug = torch.Generator().manual_seed(stable_seed(int(seed), "augment"))
        history = []
        best_loss, best_epoch, best_state = math.inf, 0, None
        stopped = False
        for epoch in range(1, hp["epochs"] + 1):
            model.train()
            order = train_idx[torch.randperm(len(train_idx), generator=shuffle).numpy()]
            total = 0.0
            for s in range(0, len(order), hp["batch_size"]):
                b = order[s:s + hp["batch_size"]]
                x = _prepare(x_all[b], pre, hp["augment"], hp["max_rotation"], aug).to(device)
                target = torch.from_numpy(y_all[b]).to(device)
                optimizer.zero_grad(set_to_none=True)
                loss = F.binary_cross_entropy_with_logits(model(pixel_values=x).logits, target)
                if not torch.isfinite(loss):
                    raise ParamsError(f"The training loss is {float(loss)} in epoch {epoch} (lr={hp['lr']}): lower lr.")
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(b)
            train_loss = total / len(order)
            model.eval()
            val_loss = (_mean_loss(model, x_all, y_all, val_idx, pre, hp["batch_size"], device) if len(val_idx)
                        else math.nan)
            monitored = val_loss if len(val_idx) else train_loss
            history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss,
                            "lr": optimizer.param_groups[0]["lr"]})
            log.info("epoch %d/%d  train loss %.4f  val loss %.4f", epoch, hp["epochs"], train_loss, val_loss)
            if hp["select_best"] and len(val_idx) and val_loss < best_loss:
                best_loss, best_epoch = val_loss, epoch
                best_state = copy.deepcopy(model.state_dict())
            scheduler.step(monitored)
            if hp["max_seconds"] is not None and time.monotonic() - start >= hp["max_seconds"] and epoch < hp["epochs"]:
                log.warning("Classifier training stopped on its time budget after %d of %d epochs.", epoch,
                            hp["epochs"])
                stopped = True
                break
        if best_state is not None:
            model.load_state_dict(best_state)
        else:
            best_epoch = len(history)
    model.eval()
    return TrainedClassifier(model=model, label_names=names, history=pd.DataFrame(history), best_epoch=best_epoch,
                             n_train=len(train_idx), n_val=len(val_idx), settings={**hp, "seed": int(seed)},
                             elapsed_seconds=time.monotonic() - start, stopped_early=stopped)


def predict_scores(model: Any, images: Any, batch_size: int = 64, device: str | None = None) -> np.ndarray:
    """Sigmoid probabilities ``[N, L]`` (float64) of a trained classifier, ``batch_size`` images at a time.

    ``model``: a :class:`TrainedClassifier` or its ``model``; the preprocessing stored in its config
    (resize, channels, normalisation) is applied, without augmentation.
    """
    import torch

    model = model.model if isinstance(model, TrainedClassifier) else model
    arr = _check_images(images)
    batch_size = _positive_int("batch_size", batch_size)
    dev = device or str(next(model.parameters()).device)
    pre = _preprocessing(model)
    was_training = model.training
    model.eval()
    out = []
    try:
        with torch.no_grad():
            for s in range(0, len(arr), batch_size):
                x = _prepare(arr[s:s + batch_size], pre, False, 0.0, None).to(dev)
                out.append(torch.sigmoid(model(pixel_values=x).logits.float()).cpu().numpy())
    finally:
        model.train(was_training)
    return np.concatenate(out).astype(np.float64)


# --- content-addressed cache of classifiers --------------------------------------------------------

def classifier_fingerprint(images: Any, y: Any, label_names: Sequence[str], seed: int = 0, **settings: Any) -> str:
    """The identity of a trained classifier: SHA-256 (16 hex) of the images, labels, names, seed and settings."""
    names = _check_label_names(label_names)
    arr = np.ascontiguousarray(_check_images(images), dtype=np.float32)
    mat = np.ascontiguousarray(_as_y(y, len(arr), names), dtype=np.float32)
    h = hashlib.sha256()
    h.update(repr((RECIPE_VERSION, arr.shape, names, int(seed))).encode())
    h.update(arr.tobytes())
    h.update(mat.tobytes())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _is_trained(folder: Path, digest: str) -> bool:
    from radaudit.paths import reusable_model_dir

    return reusable_model_dir(folder, META_FILE, digest, required=('config.json', 'model.safetensors'), required_globs=(),
                              key='fingerprint')


def _slug(name: str) -> str:
    s = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(name)).strip("-")
    return s[:40] or "source"


def load_or_train_classifier(images: Any, y: Any, *, label_names: Sequence[str], cache_dir: str | Path,
                             name: str = "source", seed: int = 0, **hp: Any) -> TrainedClassifier:
    """:func:`train_classifier`, cached: ``<cache_dir>/<name>-<fingerprint>/`` (``save_pretrained`` + history).

    The fingerprint covers the images, labels, label names, seed, every setting and
    :data:`RECIPE_VERSION`: a changed input trains a new classifier; an unchanged one is loaded
    (``from_cache=True``). The folder is written atomically (:func:`radaudit.paths.atomic_dir`).
    """
    from transformers import ResNetForImageClassification

    from radaudit.paths import atomic_dir

    _check_hp(hp)
    device = hp.pop("device", "cpu")
    settings = _settings(**{**TRAIN_DEFAULTS, **hp})
    digest = classifier_fingerprint(images, y, label_names, seed, **settings)
    folder = Path(cache_dir) / f"{_slug(name)}-{digest}"
    names = _check_label_names(label_names)
    if _is_trained(folder, digest):
        meta = json.loads((folder / META_FILE).read_text())
        model = ResNetForImageClassification.from_pretrained(folder, local_files_only=True).eval()
        log.info("Loaded the cached utility classifier for %r from %s", name, folder)
        return TrainedClassifier(model=model, label_names=names, history=pd.DataFrame(meta["history"]),
                                 best_epoch=int(meta["best_epoch"]), n_train=int(meta["n_train"]),
                                 n_val=int(meta["n_val"]), settings=meta["settings"],
                                 elapsed_seconds=float(meta["elapsed_seconds"]),
                                 stopped_early=bool(meta["stopped_early"]), from_cache=True, folder=folder)
    if folder.exists() and any(folder.iterdir()):
        import shutil

        shutil.rmtree(folder)  # a stale or incomplete folder under our own content address
    result = train_classifier(images, y, label_names=names, seed=seed, device=device, **hp)
    with atomic_dir(folder) as tmp:
        result.model.save_pretrained(tmp)
        meta = {"fingerprint": digest, "name": name, "label_names": names, "settings": result.settings,
                "history": result.history.to_dict(orient="records"), "best_epoch": result.best_epoch,
                "n_train": result.n_train, "n_val": result.n_val, "stopped_early": result.stopped_early,
                "elapsed_seconds": round(result.elapsed_seconds, 3), "recipe_version": RECIPE_VERSION}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    result.folder = folder
    return result


# --- the whole analysis ----------------------------------------------------------------------------

@dataclass
class UtilityResult:
    """What :func:`run_utility` returns; unpacks as ``long, table, roc = run_utility(...)``.

    ``long``: :func:`utility_flags` (source × label/macro: AUROC, CI, counts, accuracy, F1, paired
    difference to the baseline with CI, p, BH-adjusted p, flags). ``table``: Table 4
    (:func:`utility_table`, AUROC floats). ``roc``: ROC points ``source, label, fpr, tpr, threshold``.
    ``summary``: per source ``n_train, n_val, best_epoch, epochs_run, train_seconds, from_cache``,
    the repeats' seeds and the spread of their single macro AUROCs, and the authors' threshold
    metrics. ``history``: per source, repeat and epoch the losses and learning rate. ``scores``: the
    test-set probabilities per source (averaged over repeats).
    """

    long: pd.DataFrame
    table: pd.DataFrame
    roc: pd.DataFrame
    summary: pd.DataFrame
    history: pd.DataFrame
    scores: dict[str, np.ndarray] = field(default_factory=dict)

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return iter((self.long, self.table, self.roc))


def run_utility(train_sets: Mapping[str, tuple[Any, Any]], test_images: Any, test_y: Any,
                label_names: Sequence[str], *, seed: int = 0, baseline: str = "real", n_bootstrap: int = 1000,
                confidence: float = 0.95, method: str = "percentile", stratify: bool = True,
                tolerance: float = 0.01, alpha: float = 0.05, threshold: float = 0.5, n_repeats: int = 1,
                cache_dir: str | Path | None = None, predict_batch_size: int = 64, min_positives: int = 0,
                **hp: Any) -> UtilityResult:
    """Table 4 of paper 004: one classifier per training source, each evaluated on the real test set.

    Args:
        train_sets: ``{source: (images [N, H, W] in [0, 1], labels)}`` — the baseline (real
            training images, named ``baseline``) and each generator's synthetic images with the
            labels of their prompts (a 0/1 matrix or one label list per image).
        test_images, test_y: the real held-out test set.
        label_names: the labels (columns of Table 4).
        seed: source ``s`` trains with ``stable_seed(seed, "utility", s)`` (repeat ``r > 0``:
            ``stable_seed(seed, "utility", s, r)``); the bootstrap uses ``stable_seed(seed, "utility",
            "bootstrap")`` for every source (paired resamples).
        n_bootstrap, confidence, method, stratify: bootstrap CIs and paired tests over test images
            (0 resamples: none; see :func:`per_label_auroc`).
        tolerance, alpha: the "within 0.01" flag and the BH level of the significance flag.
        min_positives: labels with fewer positive test images are not tested (significance ``n/a``;
            :func:`paired_auroc_differences`).
        threshold: for accuracy and F1.
        n_repeats: classifiers trained per source with different seeds; their test probabilities are
            averaged (an ensemble) before scoring. The bootstrap covers only the test-set sampling;
            on a small training set the training seed alone moves AUROCs by a few hundredths, and
            repeats shrink that noise (``summary`` gives the spread of the single runs' macro AUROC).
            The paper trains once (1, the default).
        cache_dir: cache trained classifiers there (:func:`load_or_train_classifier`); None: always train.
        hp: :func:`train_classifier` settings (``epochs``, ``lr``, ``architecture``, ...).
    """
    names = _check_label_names(label_names)
    _check_hp(hp)
    n_repeats = _positive_int("n_repeats", n_repeats)
    if not train_sets:
        raise ParamsError("train_sets is empty: pass {source: (images, labels)} with the baseline and generators.")
    if baseline not in train_sets:
        raise ParamsError(f"The baseline {baseline!r} is not in train_sets {list(train_sets)}: add the classifier "
                          "trained on the real training images under that name.")
    x_test = _check_images(test_images, "test_images")
    y_test = _as_y(test_y, len(x_test), names, "test_y").astype(np.float64)
    _check_bootstrap(n_bootstrap, confidence, method)
    order = [baseline, *[s for s in train_sets if s != baseline]]
    boot_seed = stable_seed(seed, "utility", "bootstrap")
    scores: dict[str, np.ndarray] = {}
    per: dict[str, pd.DataFrame] = {}
    rocs, summary, histories = [], [], []
    for src in order:
        pair = train_sets[src]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ParamsError(f"train_sets[{src!r}] must be an (images, labels) pair.")
        images, y = pair
        runs, single_macro = [], []
        for r in range(n_repeats):
            s_seed = stable_seed(seed, "utility", src) if r == 0 else stable_seed(seed, "utility", src, r)
            log.info("Utility: training the classifier on %r (%d images, repeat %d/%d)", src, len(images), r + 1,
                     n_repeats)
            if cache_dir is not None:
                clf = load_or_train_classifier(images, y, label_names=names, cache_dir=cache_dir, name=src,
                                               seed=s_seed, **hp)
            else:
                clf = train_classifier(images, y, label_names=names, seed=s_seed, **hp)
            sc_r = predict_scores(clf, x_test, batch_size=predict_batch_size)
            runs.append((clf, s_seed, sc_r))
            vals = [auroc(y_test[:, j], sc_r[:, j]) for j in range(len(names))]
            finite = [v for v in vals if math.isfinite(v)]
            single_macro.append(float(np.mean(finite)) if finite else math.nan)
            histories.append(clf.history.assign(source=src, repeat=r))
        sc = np.mean([run[2] for run in runs], axis=0)
        scores[src] = sc
        per[src] = per_label_auroc(y_test, sc, names, n_bootstrap=n_bootstrap, seed=boot_seed, confidence=confidence,
                                   threshold=threshold, method=method, stratify=stratify)
        rocs.append(roc_curve_points(y_test, sc, names).assign(source=src))
        first = runs[0][0]
        summary.append({"source": src, "n_train": first.n_train, "n_val": first.n_val,
                        "best_epoch": first.best_epoch, "epochs_run": len(first.history),
                        "stopped_early": any(run[0].stopped_early for run in runs),
                        "train_seconds": round(sum(run[0].elapsed_seconds for run in runs), 2),
                        "from_cache": all(run[0].from_cache for run in runs), "n_repeats": n_repeats,
                        "seeds": [run[1] for run in runs],
                        "macro_auroc_single_mean": float(np.mean(single_macro)),
                        "macro_auroc_single_sd": float(np.std(single_macro, ddof=1)) if n_repeats > 1 else math.nan,
                        **threshold_metrics(y_test, sc, threshold)})
    diffs = paired_auroc_differences(y_test, scores, names, baseline=baseline, n_bootstrap=n_bootstrap,
                                     seed=boot_seed, confidence=confidence, method=method, stratify=stratify,
                                     min_positives=min_positives)
    long = utility_flags(per, baseline, differences=diffs, tolerance=tolerance, alpha=alpha)
    table = utility_table(per, baseline, differences=diffs, tolerance=tolerance, alpha=alpha)
    roc = pd.concat(rocs, ignore_index=True)
    roc = roc[["source", *[c for c in roc.columns if c != "source"]]]
    hist = pd.concat(histories, ignore_index=True)
    hist = hist[["source", "repeat", *[c for c in hist.columns if c not in ("source", "repeat")]]]
    return UtilityResult(long=long, table=table, roc=roc, summary=pd.DataFrame(summary), history=hist, scores=scores)
