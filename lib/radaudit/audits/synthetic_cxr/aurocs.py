"""Per-label AUROC on the real test set (paper 004 §2.4, Table 4): CIs, paired differences, ROC points.

What differs from the authors' script (``sklearn.metrics.roc_auc_score`` per class), and why
--------------------------------------------------------------------------------------------
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
  Accuracy and F1 at the 0.5 threshold are recomputed on the same resamples (their CIs beside the AUROC's); an
  AUROC of exactly 1 or 0, where every resample agrees, carries the exact bound of
  :func:`radaudit.stats.auroc_interval` instead of a zero-width interval (``ci_method`` says which).
* **AUROC** is the Mann–Whitney form (scikit-learn is not installed here; the value is identical to
  ``roc_auc_score``): ``AUROC = (R₊ − n₊(n₊+1)/2) / (n₊ n₋)`` with ``R₊`` the sum of the positives'
  mid-ranks among all scores, so a tie between a positive and a negative counts ½.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.inputs import MACRO, check_label_names, label_matrix
from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import BootstrapError, auroc_interval, bootstrap_pvalue, interval_from_replicates, resample_indices
from radaudit.stats.ranks import auroc as stats_auroc
from radaudit.stats.ranks import auroc_replicates

__all__ = ["BOOTSTRAP_METHODS", "PER_LABEL_COLUMNS", "auroc", "check_bootstrap", "paired_auroc_differences",
           "per_label_auroc", "roc_curve_points", "threshold_metrics", "threshold_replicates"]


# --- metrics ---------------------------------------------------------------------------------------

def _as_scores(scores: Any, n: int, n_labels: int, name: str = "scores") -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1 and n_labels == 1:
        s = s[:, None]
    if s.shape != (n, n_labels):
        raise DataFormatError(f"{name} has shape {s.shape}; expected ({n}, {n_labels}) (images × labels).")
    if not np.isfinite(s).all():
        raise DataFormatError(f"{name} contains NaN or infinite values.")
    return s


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
    names = check_label_names(label_names)
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


def check_bootstrap(n_bootstrap: Any, confidence: Any, method: str = "percentile") -> None:
    """Raise :class:`ParamsError` unless ``n_bootstrap >= 0`` (int), ``0 < confidence < 1`` and ``method`` is one
    of :data:`BOOTSTRAP_METHODS`."""
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


def threshold_replicates(y_true: np.ndarray, scores: np.ndarray, indices: np.ndarray,
                         threshold: float = 0.5) -> dict[str, np.ndarray]:
    """Accuracy and F1 at ``threshold`` on each resample of test images (paper 004 §2.4, the authors'
    ``calculate_metrics``): ``{"accuracy": [b, L + 1], "f1": [b, L + 1]}``, column ``j < L`` label ``j``, the last
    column the macro row of :func:`per_label_auroc`.

    ``indices``: ``[b, N]`` resampled test-image indices (a block of :func:`radaudit.stats.resample_indices`; a
    row of ``arange(N)`` gives the estimates themselves). On resample ``r`` (images ``i ∈ indices[r]``, with
    repetition), with ``ŷ_ij = 1[score_ij ≥ threshold]`` and ``y_ij = 1[y_true_ij = 1]``::

        accuracy_j = (1/N) Σ_i 1[ŷ_ij = y_ij]
        F1_j       = 2 TP_j / (2 TP_j + FP_j + FN_j)          (0 when the denominator is 0: zero_division=0)
        macro: accuracy = (1/(N L)) Σ_ij 1[ŷ_ij = y_ij]  (the flattened matrix),  F1 = (1/L) Σ_j F1_j

    the formulas of :func:`per_label_auroc`'s ``accuracy``/``f1`` columns and :func:`threshold_metrics`'
    ``accuracy``/``f1_macro``, so a replicate is the estimate recomputed on the resample.
    """
    idx = np.atleast_2d(np.asarray(indices))
    truth = (np.asarray(y_true) == 1)[idx]  # [b, N, L]
    pred = (np.asarray(scores, dtype=np.float64) >= float(threshold))[idx]
    right = pred == truth
    tp = (pred & truth).sum(axis=1).astype(float)
    fp = (pred & ~truth).sum(axis=1).astype(float)
    fn = (~pred & truth).sum(axis=1).astype(float)
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(den > 0, 2 * tp / den, 0.0)
    acc = right.mean(axis=1)
    return {"accuracy": np.column_stack([acc, right.mean(axis=(1, 2))]),
            "f1": np.column_stack([f1, f1.mean(axis=1)])}


def _bootstrap_replicates(y: np.ndarray, scores: Mapping[str, np.ndarray], n_bootstrap: int, seed: int,
                          stratify: bool, threshold: float | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Per source, the replicates on the SAME resampled test images (paired by construction): ``"auroc"``
    ``[B, L]`` and, with ``threshold``, ``"accuracy"`` and ``"f1"`` ``[B, L + 1]`` (:func:`threshold_replicates`,
    the macro row last). Each block of resamples is drawn once and every statistic is computed on it, so the
    accuracy and F1 replicates are those of the AUROC's resamples, and the AUROC replicates are the same with or
    without ``threshold``.

    The resamples are :func:`radaudit.stats.resample_indices`' ``[b, N]`` blocks of test images, seeded.
    ``stratify``: resample within each *label set* (the distinct rows of the ``[N, L]`` label matrix,
    ``strata=y``), so every resample keeps each label's numbers of positives and negatives — pROC's
    stratified AUROC bootstrap (its default), generalised to multi-label data — and no resample has a
    single class. Otherwise images are drawn iid from all N (``rng.integers(0, N, N)``).
    """
    names = ("auroc",) if threshold is None else ("auroc", "accuracy", "f1")
    reps: dict[str, dict[str, list[np.ndarray]]] = {k: {m: [] for m in names} for k in scores}
    for idx in resample_indices(len(y), n_bootstrap, seed=seed, strata=y if stratify else None):
        yb = y[idx]  # [b, N, L]
        for k, s in scores.items():
            sb = s[idx]
            reps[k]["auroc"].append(np.stack([_auroc_rows(yb[:, :, j], sb[:, :, j]) for j in range(y.shape[1])],
                                             axis=1))
            if threshold is not None:
                for m, v in threshold_replicates(y, s, idx, threshold).items():
                    reps[k][m].append(v)
    return {k: {m: np.concatenate(v, axis=0) for m, v in d.items()} for k, d in reps.items()}


def _bootstrap_aurocs(y: np.ndarray, scores: Mapping[str, np.ndarray], n_bootstrap: int, seed: int,
                      stratify: bool) -> dict[str, np.ndarray]:
    """Per source, the ``[B, L]`` replicate AUROCs on the SAME resampled test images (paired by construction);
    :func:`_bootstrap_replicates` without the thresholded metrics."""
    return {k: v["auroc"] for k, v in _bootstrap_replicates(y, scores, n_bootstrap, seed, stratify).items()}


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
        One row per label, then a ``"macro"`` row, with :data:`PER_LABEL_COLUMNS`: ``label, auroc, ci_low,
        ci_high, ci_method, n_pos, n_neg, accuracy, accuracy_low, accuracy_high, f1, f1_low, f1_high, note``. A
        label whose test set has a single class gets AUROC NaN and the note "only positives/negatives in the test
        set" (the authors skip it silently). The macro AUROC is the mean over the labels with both classes (its
        note names any left out); its CI recomputes that mean on each resample of images. The macro row's
        ``accuracy`` is the authors' flattened accuracy and its ``f1`` the macro F1 (:func:`threshold_metrics`).

        Every interval comes from the same resamples of test images: ``accuracy`` and ``f1`` (at ``threshold``)
        are recomputed on each resample that gives the AUROC's replicate (:func:`threshold_replicates`), with the
        same ``method``. ``ci_method``: ``"bootstrap"``, or ``"separation"`` where an AUROC of exactly 1 (or 0)
        makes every resample agree and the bootstrap interval zero width; its interval is then the exact bound
        of :func:`radaudit.stats.auroc_interval` over the smaller class (for the macro row: the smallest class of
        the labels it averages, each of which is then at 1 or 0); ``""`` without an interval.
    """
    names = check_label_names(label_names)
    y = label_matrix(y_true, names).astype(np.float64)
    if len(y) == 0:
        raise DataFormatError("The test set is empty: no AUROC can be computed.")
    s = _as_scores(scores, len(y), len(names))
    check_bootstrap(n_bootstrap, confidence, method)
    boot = (_bootstrap_replicates(y, {"s": s}, n_bootstrap, seed, stratify, threshold)["s"]
            if n_bootstrap and len(y) >= 2 else None)
    reps = None if boot is None else boot["auroc"]
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
        row = {"label": name, "auroc": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "",
               "n_pos": n_pos, "n_neg": n_neg, "accuracy": acc, "f1": f1, "note": ""}
        if n_pos == 0 or n_neg == 0:
            row["note"] = _single_class_note(n_pos, n_neg)
        else:
            defined.append(j)
            row["auroc"] = auroc(yy, ss)
            if reps is not None:
                row["ci_low"], row["ci_high"], _, row["note"] = _interval(row["auroc"], reps[:, j], method, confidence,
                                                                          len(y), name)
                row["ci_low"], row["ci_high"], row["ci_method"] = _auroc_ci_method(
                    row["auroc"], row["ci_low"], row["ci_high"], n_pos, n_neg, confidence)
                if min(n_pos, n_neg) < FEW_CASES:
                    few = "positives" if n_pos < n_neg else "negatives"
                    row["note"] = _join(row["note"], f"only {min(n_pos, n_neg)} {few} in the test set: the CI "
                                                     "understates the uncertainty")
        row |= _threshold_intervals(row, boot, j, method, confidence, len(y), name, stratify)
        rows.append(row)
    tm = threshold_metrics(y, s, threshold)
    left_out = [names[j] for j in range(len(names)) if j not in defined]
    lo = hi = math.nan
    ci_method = ""
    if defined:
        macro = float(np.mean([rows[j]["auroc"] for j in defined]))
        note = ""
        if reps is not None:
            lo, hi, _, note = _interval(macro, _macro_rows(reps, defined), method, confidence, len(y), MACRO)
            # an exact macro of 1 (0) needs every label at 1 (0): the bound of the label with the smallest class
            m = min(min(rows[j]["n_pos"], rows[j]["n_neg"]) for j in defined)
            lo, hi, ci_method = _auroc_ci_method(macro, lo, hi, m, m, confidence)
        note = _join(f"mean over {len(defined)} of {len(names)} labels; left out (single class): "
                     f"{', '.join(left_out)}" if left_out else "", note)
    else:
        macro, note = math.nan, "no label has both classes in the test set"
    row = {"label": MACRO, "auroc": macro, "ci_low": lo, "ci_high": hi, "ci_method": ci_method,
           "n_pos": int((y == 1).sum()), "n_neg": int((y != 1).sum()), "accuracy": tm["accuracy"],
           "f1": tm["f1_macro"], "note": note}
    rows.append(row | _threshold_intervals(row, boot, len(names), method, confidence, len(y), MACRO, stratify))
    return pd.DataFrame(rows, columns=list(PER_LABEL_COLUMNS))


#: Columns of :func:`per_label_auroc`: each estimate with its interval (``auroc, ci_low, ci_high`` and how that
#: interval was obtained, ``ci_method``; ``accuracy_low/high``, ``f1_low/high``), the counts and a note.
PER_LABEL_COLUMNS: tuple[str, ...] = ("label", "auroc", "ci_low", "ci_high", "ci_method", "n_pos", "n_neg", "accuracy",
                                      "accuracy_low", "accuracy_high", "f1", "f1_low", "f1_high", "note")


def _auroc_ci_method(estimate: float, low: float, high: float, n_pos: int, n_neg: int,
                     confidence: float) -> tuple[float, float, str]:
    """:func:`radaudit.stats.auroc_interval` (the bootstrap interval, or the exact separation bound where an AUROC
    of exactly 1 or 0 leaves it zero width: ``ci_method`` ``"bootstrap"`` or ``"separation"``); ``""`` when no
    interval could be computed."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return low, high, ""
    return auroc_interval(estimate, low, high, n_pos, n_neg, confidence)


def _threshold_intervals(row: Mapping[str, Any], boot: Mapping[str, np.ndarray] | None, col: int, method: str,
                         confidence: float, n_images: int, name: str, stratify: bool) -> dict[str, Any]:
    """``accuracy_low/high``, ``f1_low/high`` of one :func:`per_label_auroc` row from column ``col`` of the
    replicates of :func:`threshold_replicates` (the AUROC's resamples), through
    :func:`radaudit.stats.interval_from_replicates`; NaN without a bootstrap. A zero-width interval gets a note
    (the statistic took the same value on every resample), unless the label has a single class, whose note says
    why."""
    out: dict[str, Any] = {f"{m}_{b}": math.nan for m in ("accuracy", "f1") for b in ("low", "high")}
    if boot is None:
        return out
    flat = []
    for m in ("accuracy", "f1"):
        out[f"{m}_low"], out[f"{m}_high"], _, _ = _interval(row[m], boot[m][:, col], method, confidence, n_images,
                                                            f"{name} {m}")
        if out[f"{m}_low"] == out[f"{m}_high"]:
            flat.append("accuracy" if m == "accuracy" else "F1")
    if flat and row["n_pos"] > 0 and row["n_neg"] > 0:  # a single-class label's note says why already
        why = " (the resamples keep each label set's size)" if stratify else ""
        out["note"] = _join(row["note"], f"{' and '.join(flat)} at the threshold: the same on every resample{why}, "
                                         "so the interval has zero width")
    return out


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
    names = check_label_names(label_names)
    y = label_matrix(y_true, names).astype(np.float64)
    if len(y) == 0:
        raise DataFormatError("The test set is empty: no AUROC can be computed.")
    check_bootstrap(n_bootstrap, confidence, method)
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
