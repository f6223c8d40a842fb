"""The checked inputs of the utility analysis (Table 4): label matrices, image arrays and label names.

Shared by the classifier (:mod:`~radaudit.audits.synthetic_cxr.classifier`), the AUROC statistics
(:mod:`~radaudit.audits.synthetic_cxr.aurocs`) and :func:`~radaudit.audits.synthetic_cxr.utility.run_utility`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data.covid_cxr import DEMO_LABELS
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image.fidelity import label_matrix as _lm

__all__ = ["MACRO", "as_label_matrix", "check_images", "check_label_names", "label_matrix", "positive_int"]

#: Name of the macro-average row/column.
MACRO = "macro"


def label_matrix(labels: Any, label_names: Sequence[str]) -> np.ndarray:
    """A float32 ``[N, L]`` 0/1 matrix from one list of label names per image, or from a 0/1 matrix.

    Lists are matched by name against ``label_names`` (names outside it are ignored; reuses
    :func:`radaudit.metrics.image.fidelity.label_matrix`); a DataFrame is read by column name; a
    numeric 2-D array (or nested lists of numbers) must already have ``L`` columns in
    ``label_names`` order, and a numeric 1-D array is one label's column when ``L = 1``; a missing
    list (None/NA) means no label. Only the
    value 1 counts as present (-1 "uncertain" and NaN count as absent, as in the authors' script).
    """
    names = check_label_names(label_names)
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


def check_label_names(label_names: Any) -> list[str]:
    """The label names as a list of str: non-empty, unique, without :data:`MACRO` (else :class:`ParamsError`)."""
    if isinstance(label_names, str) or label_names is None:
        raise ParamsError(f"label_names must be a list of label names, got {label_names!r}.")
    names = [str(n) for n in label_names]
    if not names:
        raise ParamsError("label_names is empty: give the labels to classify, e.g. "
                          f"{list(DEMO_LABELS)}.")
    if len(set(names)) != len(names) or MACRO in names:
        raise ParamsError(f"label_names must be unique and must not contain {MACRO!r}; got {names}.")
    return names


def check_images(images: Any, name: str = "images") -> np.ndarray:
    """``images`` as a float ``[N, H, W]`` array in [0, 1], non-empty and finite (else :class:`DataFormatError`)."""
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


def as_label_matrix(y: Any, n: int, label_names: Sequence[str], name: str = "y") -> np.ndarray:
    """:func:`label_matrix` of ``y``, checked to have one row per image (``n``)."""
    mat = label_matrix(y, label_names)
    if len(mat) != n:
        raise DataFormatError(f"{name} has {len(mat)} rows but there are {n} images.")
    return mat


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int if it is a positive integer (not a bool), else :class:`ParamsError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ParamsError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)
