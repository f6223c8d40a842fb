"""Rewrite rules of the Terminology aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import _swap_word
from radaudit.perturb.verify import labels

_TERM_WRONG = {"pleural effusion": "pleural empyema", "pleural effusions": "pleural empyemas", "atelectasis": "mass",
               "cardiomegaly": "pericardial effusion", "granuloma": "metastasis", "granulomas": "metastases",
               "scarring": "tumor", "consolidation": "mass", "edema": "hemorrhage", "emphysema": "pneumothorax"}
_TERM_SYN = {"endotracheal tube": "breathing tube", "nasogastric tube": "feeding tube", "enteric tube": "feeding tube",
             "mass": "lesion", "cardiomegaly": "cardiac enlargement", "opacity": "density", "opacities": "densities",
             "osseous structures": "bony structures", "pleural effusion": "pleural fluid",
             "hyperinflated": "hyperexpanded", "hyperexpanded": "hyperinflated", "pulmonary vascularity": "pulmonary vasculature",
             "pulmonary vasculature": "pulmonary vascularity", "degenerative changes": "degenerative disease",
             "cardiomediastinal silhouette": "cardiomediastinal contours", "thoracic spine": "T-spine"}


@rule("terminology", "significant", "inaccuracy", check=labels("differ"))
def term_wrong(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a clinically different one ("pleural effusion" -> "pleural empyema",
    "atelectasis" -> "mass"; Appendix A, Terminology S)."""
    return _swap_word(text, rng, _TERM_WRONG,
                      explanation="The term {old!r} becomes {new!r}: a different disease with a different, often "
                                  "invasive, work-up (Appendix A, Terminology S).")


@rule("terminology", "insignificant", "inaccuracy", check=labels("same"))
def term_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a synonym or lay term ("endotracheal tube" -> "breathing tube", "mass" ->
    "lesion"; Table 2 and Appendix A, Terminology I)."""
    return _swap_word(text, rng, _TERM_SYN, positive=False,
                      explanation="The term {old!r} is written as {new!r}; the medical meaning is preserved "
                                  "(Appendix A, Terminology I).")
