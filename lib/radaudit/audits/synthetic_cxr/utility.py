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

What this experiment does differently, and why
----------------------------------------------
The classifier (architecture, augmentation, normalisation): :mod:`~radaudit.audits.synthetic_cxr.classifier`.
The statistics (single-class labels, stratified bootstrap, paired tests, AUROC):
:mod:`~radaudit.audits.synthetic_cxr.aurocs`.

Where the parts are
-------------------
* :mod:`~radaudit.audits.synthetic_cxr.inputs`: label matrices, image arrays and label names, checked;
* :mod:`~radaudit.audits.synthetic_cxr.classifier`: the classifier, its training recipe and its cache;
* :mod:`~radaudit.audits.synthetic_cxr.aurocs`: per-label AUROC with CIs, paired differences, ROC points;
* :mod:`~radaudit.audits.synthetic_cxr.table4`: Table 4 and its flags (bold / underlined / significant);
* this module: :func:`run_utility`, the whole analysis (one classifier per training source).

Seeds: one ``seed`` makes everything reproducible — the initial weights and batch order
(``torch.manual_seed`` inside ``fork_rng``), the augmentation (its own ``torch.Generator``), the
validation split (numpy), and the bootstrap (numpy). :func:`run_utility` derives each source's
training seed with :func:`radaudit.stats.stable_seed` ``(seed, "utility", source)``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.aurocs import (
    auroc,
    check_bootstrap,
    paired_auroc_differences,
    per_label_auroc,
    roc_curve_points,
    threshold_metrics,
)
from radaudit.audits.synthetic_cxr.classifier import (
    check_train_settings,
    load_or_train_classifier,
    predict_scores,
    train_classifier,
)
from radaudit.audits.synthetic_cxr.inputs import MACRO, as_label_matrix, check_images, check_label_names, positive_int
from radaudit.audits.synthetic_cxr.table4 import MACRO_ALL_LABELS, MIN_TEST_IMAGES, utility_flags, utility_table
from radaudit.errors import ParamsError
from radaudit.stats import stable_seed

__all__ = ["UtilityResult", "run_utility"]

log = logging.getLogger(__name__)


# --- the whole analysis ----------------------------------------------------------------------------

@dataclass
class UtilityResult:
    """What :func:`run_utility` returns; unpacks as ``long, table, roc = run_utility(...)``.

    ``long``: :func:`utility_flags` (source × label/macro: AUROC, CI and its ``ci_method``, counts, accuracy and
    F1 with their CIs from the AUROC's resamples, paired difference to the baseline with CI, p, BH-adjusted p,
    flags; the two macro rows: :func:`run_utility`).
    ``table``: Table 4 (:func:`utility_table`, AUROC floats). ``roc``: ROC points ``source, label, fpr, tpr,
    threshold``. ``summary``: per source ``n_train, n_val, best_epoch, epochs_run, train_seconds, from_cache``,
    the repeats' seeds and the spread of their single macro AUROCs (over every label with both classes, as
    ``macro (all labels)``), and the authors' threshold metrics. ``history``: per source, repeat and epoch the
    losses and learning rate. ``scores``: the test-set probabilities per source (averaged over repeats).
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
                min_test_images: int = MIN_TEST_IMAGES, **hp: Any) -> UtilityResult:
    """Table 4 of paper 004: one classifier per training source, each evaluated on the real test set.

    The headline macro AUROC (label ``"macro"``, what Table 8's utility rank and the summary read) averages only
    the labels with at least ``min_test_images`` positive **and** negative test images (default
    :data:`~radaudit.audits.synthetic_cxr.table4.MIN_TEST_IMAGES` = 10, the floor below which Table 4 shows no
    per-label AUROC; issue 42): the paper's unweighted mean moves as much with a label of 2 positives as with one
    of 90. When the floor leaves a label out, the paper's macro over every label with both classes stays beside it
    as ``"macro (all labels)"``; each macro row's ``note`` names its labels. The headline's CI and its paired
    differences come from the same bootstrap (seed, stratified resampling) run on the kept labels' columns only,
    so its resamples are stratified by those labels' sets. ``min_test_images=0``: one macro over every label, as
    the paper.

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
        min_test_images: the floor of the headline macro AUROC (above).
        threshold: for accuracy and F1.
        n_repeats: classifiers trained per source with different seeds; their test probabilities are
            averaged (an ensemble) before scoring. The bootstrap covers only the test-set sampling;
            on a small training set the training seed alone moves AUROCs by a few hundredths, and
            repeats shrink that noise (``summary`` gives the spread of the single runs' macro AUROC).
            The paper trains once (1, the default).
        cache_dir: cache trained classifiers there (:func:`load_or_train_classifier`); None: always train.
        hp: :func:`train_classifier` settings (``epochs``, ``lr``, ``architecture``, ...).
    """
    names = check_label_names(label_names)
    check_train_settings(hp)
    n_repeats = positive_int("n_repeats", n_repeats)
    if not train_sets:
        raise ParamsError("train_sets is empty: pass {source: (images, labels)} with the baseline and generators.")
    if baseline not in train_sets:
        raise ParamsError(f"The baseline {baseline!r} is not in train_sets {list(train_sets)}: add the classifier "
                          "trained on the real training images under that name.")
    x_test = check_images(test_images, "test_images")
    y_test = as_label_matrix(test_y, len(x_test), names, "test_y").astype(np.float64)
    check_bootstrap(n_bootstrap, confidence, method)
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
        boot = dict(n_bootstrap=n_bootstrap, seed=boot_seed, confidence=confidence, method=method, stratify=stratify)
        per[src] = _with_floored_macro(
            per_label_auroc(y_test, sc, names, threshold=threshold, **boot), y_test, names, min_test_images,
            lambda cols, sc=sc, boot=boot: per_label_auroc(y_test[:, cols], sc[:, cols], [names[c] for c in cols],
                                                           threshold=threshold, **boot))
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
    paired = dict(baseline=baseline, n_bootstrap=n_bootstrap, seed=boot_seed, confidence=confidence, method=method,
                  stratify=stratify, min_positives=min_positives)
    diffs = _with_floored_macro(
        paired_auroc_differences(y_test, scores, names, **paired), y_test, names, min_test_images,
        lambda cols: paired_auroc_differences(y_test[:, cols], {k: v[:, cols] for k, v in scores.items()},
                                              [names[c] for c in cols], **paired))
    long = utility_flags(per, baseline, differences=diffs, tolerance=tolerance, alpha=alpha)
    table = utility_table(per, baseline, differences=diffs, tolerance=tolerance, alpha=alpha)
    roc = pd.concat(rocs, ignore_index=True)
    roc = roc[["source", *[c for c in roc.columns if c != "source"]]]
    hist = pd.concat(histories, ignore_index=True)
    hist = hist[["source", "repeat", *[c for c in hist.columns if c not in ("source", "repeat")]]]
    return UtilityResult(long=long, table=table, roc=roc, summary=pd.DataFrame(summary), history=hist, scores=scores)


# --- the headline macro AUROC ----------------------------------------------------------------------

def _with_floored_macro(full: pd.DataFrame, y: np.ndarray, names: Sequence[str], min_test_images: int,
                        over: Any) -> pd.DataFrame:
    """``full`` (a :func:`per_label_auroc` or :func:`paired_auroc_differences` table over every label) with its macro
    row(s) made the headline over the labels with at least ``min_test_images`` positive and negative test images
    (``over(columns)`` computes the same table over those label columns only), and the macro over every label kept
    as :data:`MACRO_ALL_LABELS` after it. Unchanged but for the note when no label is below the floor."""
    n_pos = (y == 1).sum(axis=0).astype(int)
    n_neg = len(y) - n_pos
    keep = [j for j in range(len(names)) if min(n_pos[j], n_neg[j]) >= min_test_images]
    both = [names[j] for j in range(len(names)) if n_pos[j] > 0 and n_neg[j] > 0]
    is_macro = full["label"] == MACRO
    if not is_macro.any():  # e.g. no paired differences: the baseline is the only source
        return full
    floor = f"at least {min_test_images} positive and {min_test_images} negative test images"
    if len(keep) == len(names):
        return full.assign(note=[_join(f"mean over every label ({', '.join(names)}), each with {floor}", n) if m else n
                                 for m, n in zip(is_macro, full["note"], strict=True)])
    out = full.copy()
    out.loc[is_macro, "label"] = MACRO_ALL_LABELS
    out.loc[is_macro, "note"] = [_join(f"the paper's macro: mean over every label with both classes in the test set "
                                       f"({', '.join(both) or 'none'})", n) for n in out.loc[is_macro, "note"]]
    left = ", ".join(f"{names[j]} ({min(n_pos[j], n_neg[j])} {'positives' if n_pos[j] <= n_neg[j] else 'negatives'})"
                     for j in range(len(names)) if j not in keep)
    if keep:
        head = over(keep)
        head = head[head["label"] == MACRO].copy()
        head["note"] = [_join(f"mean over the labels with {floor} ({', '.join(names[j] for j in keep)}); left out: "
                              f"{left}", n) for n in head["note"]]
    else:
        head = out[is_macro].copy()
        value_columns = [c for c in head.columns
                         if c not in ("source", "label", "note", "n_pos", "n_neg", "n_failed", "ci_method")]
        head[value_columns] = math.nan
        if "ci_method" in head.columns:  # no interval: no method (per_label_auroc's "")
            head["ci_method"] = ""
        head["note"] = f"no label has {floor}: no headline macro AUROC (left out: {left})"
    head["label"] = MACRO
    if "n_pos" in head.columns:  # the counts the headline averages over
        head["n_pos"], head["n_neg"] = int(n_pos[keep].sum()), int(n_neg[keep].sum())
    rows = []  # each macro block in place: the headline, then the all-label macro
    for i, m in zip(out.index, is_macro, strict=True):
        if m:
            src = out.at[i, "source"] if "source" in out.columns else None
            rows.append(head[head["source"] == src] if src is not None else head)
        rows.append(out.loc[[i]])
    return pd.concat(rows, ignore_index=True)[full.columns]


def _join(*notes: Any) -> str:
    return "; ".join(str(n) for n in notes if isinstance(n, str) and n)
