"""Clinical-label metrics: CheXpert-label F1 on the toolkit's labeler.

Both reports of a pair are labelled with :class:`radaudit.text.labeler.ChexpertLabeler` (14
CheXpert observations, 1 / 0 / -1 / blank) and the candidate's labels are scored against the
reference's as a multi-label classification. This is the "clinical efficacy" / "CheXpert F1" /
"CheXbert F1" family of the report-generation literature, computed with the rule-based labeler
instead of CheXbert (whose weights need hub access; the ``f1chexbert`` adapter is the learned
version).

Registered names (one family, four presets)
-------------------------------------------
``chexpert_f1_micro_top5``, ``chexpert_f1_macro_top5``, ``chexpert_f1_micro_all14``,
``chexpert_f1_macro_all14``: the four combinations reported by f1chexbert / RadEval (micro and
macro F1 over the top-5 and over all 14 observations). Every option below can be overridden at
build time, e.g. ``build_metric("chexpert_f1_micro_top5", uncertain="ignore")``.

Options
-------
- ``label_set``: ``"top5"`` = Atelectasis, Cardiomegaly, Consolidation, Edema, Pleural Effusion
  (the CheXpert competition observations, Irvin et al. 2019; f1chexbert's TOP5), or ``"all14"``
  (the 14 observations, No Finding included, as in f1chexbert's "all" scores).
- ``uncertain``: how an uncertain (-1) label is read, in either report. The three policies are
  the CheXpert paper's label policies (Irvin et al. 2019, Sec. 4: U-Ones, U-Zeros, U-Ignore):

  * ``"positive"`` (default; U-Ones): uncertain counts as positive. This is what RadEval's
    f1chexbert does in its report-generation ("rrg") mode (``1 if c in {1, 3}``, see
    ``shared/ANCHORS.md`` section 10), i.e. the convention of the RadEval/ReXrank leaderboards.
  * ``"negative"`` (U-Zeros): only a definite positive (1) is positive.
  * ``"ignore"`` (U-Ignore): a (report pair, observation) cell where either report is uncertain
    is left out of that observation's counts and of the pair's example-based F1.

  Blank (not mentioned) and negative (0) are both "not positive": the metric scores presence.
- ``average``: ``"micro"`` or ``"macro"`` (the aggregate ``score``, below).
- ``zero_division`` (default ``0.0``): the F1 of an observation with no positive in either the
  references or the candidates of the batch. ``0.0`` is what scikit-learn's
  ``classification_report`` (and so f1chexbert) reports; ``float("nan")`` leaves such
  observations out of the macro mean instead.
- ``no_positive`` (default ``1.0``): the per-sample F1 of a pair in which neither report has a
  positive label in the set (both "normal" for the top-5): the reports agree, so 1.0; pass
  ``float("nan")`` to leave such pairs undefined.
- ``data_root`` / ``phrases_dir``: where the CheXpert phrase lists are (see the labeler).

Formulas
--------
For observation ``l`` over the batch: ``TP_l``, ``FP_l``, ``FN_l`` count pairs where the
reference/candidate are positive/positive, not/positive, positive/not (after the ``uncertain``
policy; ignored cells count nowhere).

- ``F1_l = 2 TP_l / (2 TP_l + FP_l + FN_l)`` (``zero_division`` when the denominator is 0).
- **micro** ``score = 2 Σ_l TP_l / (2 Σ_l TP_l + Σ_l FP_l + Σ_l FN_l)`` over the label set;
  **macro** ``score = mean_l F1_l``. ``aggregate="corpus"``: the score is not the mean of the
  per-sample values.
- ``per_sample[i]``: the example-based F1 of pair ``i`` (Godbole & Sarawagi 2004's
  example-based F-measure): ``2 TP_i / (2 TP_i + FP_i + FN_i)`` over the label set, with
  ``no_positive`` when ``TP_i + FP_i + FN_i = 0``. ``details["mean_example_f1"]`` is its mean.

Edge cases
----------
- ``None``/NaN in either list: :class:`~radaudit.metrics.base.MetricInputError` (check_pairs).
- An empty (or whitespace-only) report has all labels blank (labeler rule): against a reference
  with positives it scores 0, against one without it scores ``no_positive``. A pair of two empty
  reports is undefined (NaN, counted in ``n_undefined``), as in the lexical metrics, and its
  (all-blank) labels add nothing to the corpus counts.
- An empty batch: score NaN.
- Non-English text: the phrase lists are English, so it has no mentions: all blank (No Finding
  = 1, as for an English report that mentions nothing abnormal). Such reports are counted in
  ``details["n_non_english_reference"]`` / ``["n_non_english_candidate"]``
  (:func:`radaudit.text.language.looks_non_english`) and the labeler warns; the score is unchanged.
- Very long reports: labelled sentence by sentence, no truncation (CheXbert truncates at 512
  tokens).

``details``: ``per_label`` (DataFrame: observation, precision, recall, f1, tp, fp, fn, support =
reference positives), ``micro_f1``, ``macro_f1``, ``micro_precision``, ``micro_recall``,
``mean_example_f1``, the options, and per-pair arrays ``tp``, ``fp``, ``fn``; ``ref_labels`` /
``cand_labels`` (DataFrames of the labeler's raw 1/0/-1/NaN output).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radaudit.data import chexpert_phrases_dir
from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricResult, MetricSpec, check_pairs
from radaudit.metrics.classification import f1_from_counts as _f1
from radaudit.text.labeler import OBSERVATIONS, TOP5, ChexpertLabeler
from radaudit.text.language import count_non_english

__all__ = ["ChexpertF1", "make_chexpert_f1", "label_columns", "binarize_labels", "SPECS"]

AVERAGES = ("micro", "macro")
LABEL_SETS = ("top5", "all14")
UNCERTAIN = ("positive", "negative", "ignore")


def label_columns(label_set: str) -> tuple[str, ...]:
    """The observations of ``label_set`` (``"top5"`` or ``"all14"``), in the labeler's column order."""
    if label_set == "top5":
        return tuple(o for o in OBSERVATIONS if o in TOP5)
    if label_set == "all14":
        return OBSERVATIONS
    raise ParamsError(f"label_set={label_set!r} is not allowed: use one of {', '.join(map(repr, LABEL_SETS))}.")


def binarize_labels(labels: np.ndarray, uncertain: str) -> tuple[np.ndarray, np.ndarray]:
    """(positive, known) boolean arrays from CheXpert labels (1 positive, 0 negative, -1 uncertain, NaN
    unmentioned) under the ``uncertain`` policy: ``"positive"`` counts -1 as positive, ``"negative"`` as
    negative (both: every label known), ``"ignore"`` leaves -1 out (``known`` False). An unmentioned label
    is a known negative. :class:`ChexpertF1` counts its tp/fp/fn on these arrays."""
    pos = labels == 1
    unc = labels == -1
    if uncertain == "positive":
        return pos | unc, np.ones_like(pos)
    if uncertain == "negative":
        return pos, np.ones_like(pos)
    return pos, ~unc


@dataclass
class ChexpertF1:
    """CheXpert-label F1 (see the module docstring)."""

    average: str = "micro"
    label_set: str = "top5"
    uncertain: str = "positive"
    zero_division: float = 0.0
    no_positive: float = 1.0
    data_root: str | os.PathLike | None = None
    phrases_dir: str | os.PathLike | None = None
    name: str = field(init=False)
    _labeler: Any = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        for opt, allowed in (("average", AVERAGES), ("label_set", LABEL_SETS), ("uncertain", UNCERTAIN)):
            if getattr(self, opt) not in allowed:
                raise ParamsError(f"{opt}={getattr(self, opt)!r} is not allowed: use one of "
                                  f"{', '.join(map(repr, allowed))}.")
        self.columns = label_columns(self.label_set)
        self.name = f"chexpert_f1_{self.average}_{self.label_set}"

    @property
    def labeler(self):
        if self._labeler is None:
            self._labeler = ChexpertLabeler(self.phrases_dir or chexpert_phrases_dir(self.data_root))
        return self._labeler

    def _labels(self, texts: list[str]):
        import pandas as pd

        unique = list(dict.fromkeys(texts))
        table = self.labeler.label(unique)
        table.index = unique
        return pd.DataFrame(table.loc[texts].to_numpy(), columns=table.columns)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        import pandas as pd

        refs, cands = check_pairs(references, candidates)
        n = len(refs)
        cols = list(self.columns)
        ref_lab = self._labels(refs) if n else pd.DataFrame(columns=cols)
        cand_lab = self._labels(cands) if n else pd.DataFrame(columns=cols)
        both_empty = np.array([not r.strip() and not c.strip() for r, c in zip(refs, cands)], dtype=bool)

        r_pos, r_known = binarize_labels(ref_lab[cols].to_numpy(float).reshape(n, len(cols)), self.uncertain)
        c_pos, c_known = binarize_labels(cand_lab[cols].to_numpy(float).reshape(n, len(cols)), self.uncertain)
        known = r_known & c_known & ~both_empty[:, None]
        tp = r_pos & c_pos & known
        fp = ~r_pos & c_pos & known
        fn = r_pos & ~c_pos & known

        tp_i, fp_i, fn_i = tp.sum(1), fp.sum(1), fn.sum(1)
        per_sample = np.array([_f1(a, b, c, self.no_positive) for a, b, c in zip(tp_i, fp_i, fn_i)], dtype=float)
        per_sample[both_empty] = math.nan

        tp_l, fp_l, fn_l = tp.sum(0), fp.sum(0), fn.sum(0)
        f1_l = np.array([_f1(a, b, c, self.zero_division) for a, b, c in zip(tp_l, fp_l, fn_l)], dtype=float)
        prec_l = np.array([a / (a + b) if a + b else math.nan for a, b in zip(tp_l, fp_l)])
        rec_l = np.array([a / (a + c) if a + c else math.nan for a, c in zip(tp_l, fn_l)])
        T, F_P, F_N = int(tp_l.sum()), int(fp_l.sum()), int(fn_l.sum())
        defined = n > int(both_empty.sum())
        micro = _f1(T, F_P, F_N, self.zero_division) if defined else math.nan
        macro = float(np.nanmean(f1_l)) if defined and not np.all(np.isnan(f1_l)) else math.nan
        per_label = pd.DataFrame({
            "observation": cols, "precision": prec_l, "recall": rec_l, "f1": f1_l,
            "tp": tp_l.astype(int), "fp": fp_l.astype(int), "fn": fn_l.astype(int),
            "support": (r_pos & known).sum(0).astype(int),
        })
        ok = ~np.isnan(per_sample)
        details: dict[str, Any] = {
            "per_label": per_label,
            "micro_f1": micro,
            "macro_f1": macro,
            "micro_precision": T / (T + F_P) if T + F_P else math.nan,
            "micro_recall": T / (T + F_N) if T + F_N else math.nan,
            "mean_example_f1": float(per_sample[ok].mean()) if ok.any() else math.nan,
            "tp": tp_i.astype(int), "fp": fp_i.astype(int), "fn": fn_i.astype(int),
            "ref_labels": ref_lab, "cand_labels": cand_lab,
            "label_set": self.label_set, "uncertain": self.uncertain, "average": self.average,
            "n_non_english_reference": count_non_english(refs),
            "n_non_english_candidate": count_non_english(cands),
        }
        score = micro if self.average == "micro" else macro
        # per-pair sufficient statistics, so a subset's F1 is exact from column sums (radaudit.scoring):
        # micro: TP, FP, FN summed over labels; macro: TP, FP, FN per label; last column: pair is defined
        zero, n_lab = self.zero_division, len(cols)
        if self.average == "micro":
            stats = np.column_stack([tp_i, fp_i, fn_i, ~both_empty]).astype(float)

            def from_stats(t: np.ndarray) -> float:
                return _f1(t[0], t[1], t[2], zero) if t[3] > 0 else math.nan
        else:
            stats = np.column_stack([tp, fp, fn, ~both_empty[:, None]]).astype(float)

            def from_stats(t: np.ndarray) -> float:
                if t[-1] <= 0:
                    return math.nan
                return float(np.mean([_f1(t[j], t[n_lab + j], t[2 * n_lab + j], zero) for j in range(n_lab)]))
        return MetricResult(name=self.name, score=score, per_sample=per_sample, aggregate="corpus",
                            details=details, n_undefined=int((~ok).sum()), corpus_stats=stats, from_stats=from_stats)


def make_chexpert_f1(
    average: str = "micro",
    label_set: str = "top5",
    uncertain: str = "positive",
    zero_division: float = 0.0,
    no_positive: float = 1.0,
    data_root: str | os.PathLike | None = None,
    phrases_dir: str | os.PathLike | None = None,
) -> ChexpertF1:
    """CheXpert-label F1 (module docstring). The labeler is built, and the phrase lists read, on
    the first :meth:`~ChexpertF1.compute`."""
    return ChexpertF1(average=average, label_set=label_set, uncertain=uncertain, zero_division=zero_division,
                      no_positive=no_positive, data_root=data_root, phrases_dir=phrases_dir)


_M = "radaudit.metrics.clinical"

SPECS: list[MetricSpec] = [
    MetricSpec(
        name=f"chexpert_f1_{avg}_{ls}", label=f"CheXpert-label F1 ({avg}, {5 if ls == 'top5' else 14})",
        factory=f"{_M}:make_chexpert_f1", kind="clinical",
        options={"average": avg, "label_set": ls},
        description=(f"CheXpert-label {avg} F1 over {'the top-5' if ls == 'top5' else 'all 14'} observations "
                     "(rule-based CheXpert labeler; uncertain=positive by default); example-based F1 per pair"),
    )
    for avg in AVERAGES for ls in LABEL_SETS
]
