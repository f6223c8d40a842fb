"""Which metrics share the pairs' verifier, and so score these pairs partly by construction (issue 40, item 5).

Every GT-ME pair of the ``rules`` engine is *verified* (:mod:`radaudit.perturb.verify`) before it enters the
dataset: the text outside the edit is unchanged, and a semantic check confirms the edit does what the rule
claims. Those checks are built on the project's clinical text toolkit. A registry metric built on the same
toolkit then reads back, on these pairs, part of what the verifier already decided; its Discriminative /
Robustness Score and AUROC are then partly fixed by how the pairs were made, not measured. This module says
which metrics, why, and lets the tables mark them (:data:`VERIFIER_MARK` with :func:`verifier_footnote`) and the
``*_median`` findings leave them out (:func:`without_shared`).

What shares what (read from the code; ``tests/audits/test_metric_metaeval_verifier.py`` re-derives the list
from the import graph, so a metric that starts using the toolkit cannot stay unmarked):

- ``chexpert_f1_micro_top5``, ``chexpert_f1_micro_all14``, ``chexpert_f1_macro_top5``, ``chexpert_f1_macro_all14``
  — **verified by the same labeler.** The rules' label checks (:func:`radaudit.perturb.verify.labels`) compare
  the 14 CheXpert labels of GT and rewrite with :class:`radaudit.text.labeler.ChexpertLabeler`, built on the
  same phrase lists (:func:`~radaudit.audits.metric_metaeval.data.build_datasets`), and that labeler is what
  these four metrics score with (:mod:`radaudit.metrics.clinical`). A pair whose rule demands
  ``labels("same")`` (nearly every insignificant rule, and most significant location, severity, comparison,
  description and modality rules: the edit must change a finding's attribute, not its label) has identical
  label vectors by construction, so its per-pair F1 is exactly 1; a ``labels("differ")`` pair (negation flips,
  noise omission/fabrication, contradiction fabrication) is guaranteed a changed label. Trimmed pairs are
  re-verified with the same check.
- ``atomimed``, ``atomimed_clinical`` — **verified by the same toolkit.** Their rule backend (the registry's
  default) reads reports with :mod:`radaudit.text`: the sentence splitter (``text.sections``), the negation
  cues (``text.negation``, the labeler's own) and the attribute extractors (``text.attributes``: laterality,
  location, severity, size, temporal change). The rules find what to edit with the same functions
  (:func:`radaudit.perturb.textops.is_positive` → ``text.negation``; each rule's attribute matches) and the
  checks confirm it with them (``local_attr`` → ``extract_attributes``, ``severity_shift`` →
  ``extract_severity``, ``size_ratio`` → ``extract_size``, ``labels`` → the negation rules). So the facts
  AtomiMed compares are the facts the rule edited and the verifier confirmed, in the same vocabulary. With
  ``backend: llm`` its attribute comparator (:func:`radaudit.atomic.compare.values_match`) still re-reads
  values with ``text.attributes``, so it stays marked.

Not marked: the lexical metrics (BLEU, ROUGE, METEOR, CIDEr), the embedding metrics, and the adapters
(``chexbert_f1`` is the learned CheXbert of ``f1chexbert``, not this labeler; RadGraph-F1, RaTEScore, GREEN,
AlignScore run their own models). The noise rules' edit-distance check (rapidfuzz Levenshtein) is used by no
registry metric.

With ``engine: llm`` the pair set is verified textually only (the change lies inside the declared span,
:func:`radaudit.perturb.llm.verify_llm_rewrite`; no label or attribute check), so nothing is marked for Tables
4/5 and the AUROC; the monotonicity set is always built by the rules, so its table marks the same metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from radaudit.errors import ParamsError
from radaudit.metrics import METRICS

__all__ = ["SAME_LABELER", "SAME_TOOLKIT", "VERIFIER_MARK", "VERIFIER_SHARED", "mark_labels", "shares_verifier",
           "verifier_column", "verifier_footnote", "verifier_marks", "without_shared"]

#: The reason a metric is marked, as the tables say it.
SAME_LABELER = "verified by the same labeler"
SAME_TOOLKIT = "verified by the same toolkit"
#: Metric -> why its scores on rule-verified pairs are partly fixed by construction (module docstring).
VERIFIER_SHARED: dict[str, str] = {
    "chexpert_f1_micro_top5": SAME_LABELER,
    "chexpert_f1_micro_all14": SAME_LABELER,
    "chexpert_f1_macro_top5": SAME_LABELER,
    "chexpert_f1_macro_all14": SAME_LABELER,
    "atomimed": SAME_TOOLKIT,
    "atomimed_clinical": SAME_TOOLKIT,
}
#: The marker after a marked metric's name in Tables 4/5 and the AUROC tables (explained by the caption's footnote).
VERIFIER_MARK = "†"
ENGINES: tuple[str, ...] = ("rules", "llm")


def shares_verifier(metric: str, engine: str = "rules") -> str | None:
    """Why ``metric`` shares the verifier of pairs made by ``engine`` (:data:`SAME_LABELER` or :data:`SAME_TOOLKIT`),
    or ``None`` when it does not. ``engine="llm"``: ``None`` for every metric (textual verification only)."""
    if metric not in METRICS:
        raise ParamsError(f"unknown metric {metric!r}; registered: {', '.join(METRICS)}")
    if engine not in ENGINES:
        raise ParamsError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return VERIFIER_SHARED.get(metric) if engine == "rules" else None


def verifier_marks(metrics: Iterable[str], engine: str = "rules") -> dict[str, str]:
    """``{metric: reason}`` for the ``metrics`` that share the verifier (in the order given)."""
    return {m: r for m in dict.fromkeys(metrics) if (r := shares_verifier(m, engine)) is not None}


def verifier_footnote(marks: Mapping[str, str]) -> str:
    """The caption sentence that explains :data:`VERIFIER_MARK` (empty when nothing is marked)."""
    if not marks:
        return ""
    reasons = sorted(set(marks.values()))
    return (f"{VERIFIER_MARK} {' / '.join(reasons)}: the pairs were verified with the CheXpert labeler or the text "
            "toolkit this metric scores with, so part of its score here is fixed by construction; it is left out of "
            "the median-AUROC findings.")


def mark_labels(labels: pd.Series, metrics: pd.Series, marks: Mapping[str, str]) -> pd.Series:
    """``labels`` with :data:`VERIFIER_MARK` appended where the row's metric is in ``marks``."""
    return pd.Series([f"{lab} {VERIFIER_MARK}" if m in marks else lab for lab, m in zip(labels, metrics)],
                     index=labels.index, dtype=object)


def verifier_column(df: pd.DataFrame, marks: Mapping[str, str], metric_col: str = "metric") -> pd.DataFrame:
    """``df`` with a ``shares_verifier`` column: the reason for a marked metric, ``""`` otherwise."""
    return df.assign(shares_verifier=[marks.get(m, "") for m in df[metric_col]])


def without_shared(scores: pd.DataFrame, marks: Mapping[str, str]) -> pd.DataFrame:
    """The rows of a :func:`~radaudit.audits.metric_metaeval.study.score_pairs` table whose metric is not marked."""
    return scores[~scores["metric"].isin(list(marks))]
