"""Rewrite rules of the Modality aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _finding_nps,
    _one,
    _swap_word,
)
from radaudit.perturb.textops import (
    pick,
    sentence_at,
    sentence_end_insert,
)
from radaudit.perturb.verify import labels

_MODALITY_WRONG = {"ct": "ultrasound", "chest ct": "abdominal ultrasound", "ct scan": "ultrasound",
                   "ct chest": "abdominal ultrasound", "ct thorax": "abdominal ultrasound", "mri": "ultrasound",
                   "radiograph": "ultrasound", "radiographs": "ultrasounds", "chest radiograph": "abdominal ultrasound"}
_MODALITY_SYN = {"radiograph": "x-ray", "radiographs": "x-rays", "x-ray": "radiograph", "x-rays": "radiographs",
                 "chest ct": "CT", "ct chest": "CT", "ct of the chest": "CT", "ct scan": "CT", "ct": "CT scan",
                 "chest radiograph": "chest x-ray", "chest x-ray": "chest radiograph", "chest film": "chest radiograph"}
_MODALITY_CONTEXT = re.compile(r"(?i)\b(?:prior|previous|recent|follow-?up|followup|recommend\w*|consider\w*|comparison|"
                               r"correlat\w*|dedicated|further|outside|earlier)\b")


def _modality_ok(text: str, m: re.Match[str]) -> bool:
    if m.group(0).lower().startswith("radiograph"):
        return bool(_MODALITY_CONTEXT.search(text[max(0, m.start() - 30):m.start()]))
    return True


@rule("modality", "significant", "inaccuracy", check=labels("same"))
def mod_wrong(text: str, rng: random.Random) -> Rewrite | None:
    """Refer to the wrong imaging modality ("Refer to prior CT torso" -> "prior abdominal ultrasound";
    Table 2, Modality S)."""
    return _swap_word(text, rng, _MODALITY_WRONG, positive=False, extra_ok=_modality_ok,
                      explanation="The modality {old!r} becomes {new!r}: a study that cannot show the finding is "
                                  "referenced or recommended (Table 2, Modality S).")


@rule("modality", "insignificant", "inaccuracy", check=labels("same"))
def mod_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Name the same modality differently ("chest CT" -> "CT", "radiograph" -> "x-ray"; Appendix A,
    Modality I)."""
    return _swap_word(text, rng, _MODALITY_SYN, positive=False,
                      explanation="The modality {old!r} is written as {new!r}; the intent is clear (Appendix A, "
                                  "Modality I).")


@rule("modality", "significant", "fabrication")
def mod_overclaim(text: str, rng: random.Random) -> Rewrite | None:
    """Claim that a radiograph fully characterises a lesion that needs cross-sectional imaging
    (Appendix A, Modality S: "clearly delineated on X-ray" is incorrect)."""
    cands = _finding_nps(text, r"nodules?|mass(?:es)?|lesions?|nodular\s+opacit(?:y|ies)")
    c = pick(rng, cands)
    if c is None:
        return None
    m = c[0]
    sent = sentence_at(text, m.start(), m.end())
    if sent is None:
        return None
    new = "It is fully characterized on this radiograph and needs no CT."
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"A fabricated claim ({new!r}) about what a radiograph can show; the lesion needs CT, and "
                           "the statement may stop the work-up (Appendix A, Modality S).")
