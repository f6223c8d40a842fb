"""Rewrite rules of the Terminology aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re
from dataclasses import replace

from radaudit.perturb.base import Edit, Rewrite, rule
from radaudit.perturb.rules._common import one_edit, swap_word
from radaudit.perturb.textops import pick, styled
from radaudit.perturb.verify import labels

_TERM_WRONG = {"pleural effusion": "pleural empyema", "pleural effusions": "pleural empyemas", "atelectasis": "mass",
               "cardiomegaly": "pericardial effusion", "granuloma": "metastasis", "granulomas": "metastases",
               "scarring": "tumor", "consolidation": "mass", "edema": "hemorrhage", "emphysema": "pneumothorax"}
_TERM_SYN = {"endotracheal tube": "breathing tube", "nasogastric tube": "feeding tube", "enteric tube": "feeding tube",
             "mass": "lesion", "cardiomegaly": "cardiac enlargement", "opacity": "density", "opacities": "densities",
             "osseous structures": "bony structures", "pleural effusion": "pleural fluid",
             "hyperinflated": "hyperexpanded", "hyperexpanded": "hyperinflated",
             "pulmonary vascularity": "pulmonary vasculature",
             "pulmonary vasculature": "pulmonary vascularity", "degenerative changes": "degenerative disease",
             "cardiomediastinal silhouette": "cardiomediastinal contours", "thoracic spine": "T-spine"}


@rule("terminology", "significant", "inaccuracy", check=labels("differ"))
def term_wrong(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a clinically different one ("pleural effusion" -> "pleural empyema",
    "atelectasis" -> "mass"; Appendix A, Terminology S)."""
    return swap_word(text, rng, _TERM_WRONG,
                     explanation="The term {old!r} becomes {new!r}: a different disease with a different, often "
                                 "invasive, work-up (Appendix A, Terminology S).")


@rule("terminology", "insignificant", "inaccuracy", check=labels("same"))
def term_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a synonym or lay term ("endotracheal tube" -> "breathing tube", "mass" ->
    "lesion"; Table 2 and Appendix A, Terminology I)."""
    return swap_word(text, rng, _TERM_SYN, positive=False,
                     explanation="The term {old!r} is written as {new!r}; the medical meaning is preserved "
                                 "(Appendix A, Terminology I).")


_TERM_VAGUE = {"calcified granuloma": "spot", "calcified granulomas": "spots", "granuloma": "spot",
               "granulomas": "spots", "pneumothorax": "air pocket", "pneumothoraces": "air pockets",
               "consolidation": "shadowing", "consolidations": "shadowing", "emphysema": "lung disease",
               "cavitary lesion": "hole", "cavitary mass": "hole", "cavitary nodule": "hole", "cavitation": "a hole",
               "tuberculosis": "infection", "metastasis": "spot", "metastases": "spots"}
#: What the reader loses when the term becomes vague (the first key found in the GT term).
_VAGUE_LOSS = (("calcified", "a benign calcified granuloma now reads as an indeterminate spot that may prompt a nodule "
                "work-up"),
               ("granuloma", "a benign granuloma now reads as an indeterminate spot that may prompt a nodule work-up"),
               ("pneumothora", "a pneumothorax, which may need a chest tube, is no longer named"),
               ("consolidation", "airspace consolidation (possible pneumonia) is no longer named"),
               ("emphysema", "emphysema (COPD) is no longer named"),
               ("cavit", "cavitation (tuberculosis, abscess or cancer) is no longer named"),
               ("tuberculosis", "tuberculosis, which needs isolation and specific therapy, is no longer named"),
               ("metasta", "metastatic disease is no longer named"))


def _not_subcutaneous(text: str, m) -> bool:
    """"subcutaneous emphysema" is air in the soft tissues, not the lung disease."""
    return not re.search(r"(?i)\b(?:subcutaneous|soft[\s-]+tissue|interstitial|mediastinal)\s+$",
                         text[max(0, m.start() - 20):m.start()])


@rule("terminology", "significant", "omission", check=labels("differ"))
def term_vague(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a specific diagnostic term with a vague lay word ("calcified granuloma" -> "spot",
    "pneumothorax" -> "air pocket"; Table 2, Terminology S: "A cavitary lesion, suggesting tuberculosis"
    -> "A hole, suggesting infection"). (Choice: filed as omission, the diagnosis the term names is lost.)"""
    rw = swap_word(text, rng, _TERM_VAGUE, extra_ok=_not_subcutaneous,
                   explanation="The diagnostic term {old!r} becomes the vague lay word {new!r}")
    if rw is None:
        return None
    e = rw.edits[0]
    old = text[e.start:e.end].lower()
    loss = next(why for key, why in _VAGUE_LOSS if key in old)
    return replace(rw, explanation=f"{rw.explanation}: {loss} (Table 2 and Appendix A, Terminology S).")


_TERM_AMBIGUOUS = {"pleural effusion": "PE", "pleural effusions": "PEs", "effusion": "PE", "effusions": "PEs",
                   "pulmonary edema": "PE"}


def _pleural(text: str, m) -> bool:
    """Not a pericardial (or joint) effusion."""
    return not re.search(r"(?i)\b(?:pericardial|joint)\s+$", text[max(0, m.start() - 20):m.start()])


@rule("terminology", "significant", "inaccuracy", check=labels("differ"))
def term_ambiguous_abbrev(text: str, rng: random.Random) -> Rewrite | None:
    """Abbreviate a finding to an ambiguous abbreviation ("small left pleural effusion" -> "small left PE",
    "mild pulmonary edema" -> "mild PE"). (Choice: the paper gives no abbreviation example; "PE" is read
    as pulmonary embolism first, §3.1: reports "should avoid too ambiguous or misleading language".)"""
    rw = swap_word(text, rng, _TERM_AMBIGUOUS, extra_ok=_pleural,
                   explanation="{old!r} is abbreviated to {new!r}, which most clinicians read as pulmonary embolism: "
                               "an ambiguous term that can trigger CT angiography or anticoagulation (§3.1, "
                               "Terminology: avoid ambiguous or misleading language).")
    if rw is None or not rw.edits[0].new.endswith("PES"):
        return rw
    e = rw.edits[0]  # an abbreviation keeps its lower-case plural in an upper-case report ("PEs", not "PES")
    return Rewrite((Edit(e.start, e.end, e.new[:-1] + "s"),), rw.explanation.replace("'PES'", "'PEs'"))


_TERM_IMPLIED = {"pleural effusion": "effusion", "pleural effusions": "effusions", "pulmonary edema": "edema",
                 "pulmonary nodule": "nodule", "pulmonary nodules": "nodules", "lung nodule": "nodule",
                 "lung nodules": "nodules", "pulmonary granuloma": "granuloma", "pulmonary granulomas": "granulomas",
                 "airspace consolidation": "consolidation", "air space consolidation": "consolidation",
                 "pulmonary vascular congestion": "vascular congestion", "thoracic aorta": "aorta",
                 "thoracic spine": "spine", "lung volumes": "volumes"}
#: A dropped qualifier is implied only when the report names no other site of the same noun.
_OTHER_SITE = {"effusion": r"pericardial|joint", "aorta": r"abdominal", "spine": r"cervical|lumbar|c-spine|l-spine"}


def _implied(text: str, m) -> bool:
    head = m.group(0).lower().split()[-1].rstrip("s")
    pat = _OTHER_SITE.get(head)
    return pat is None or not re.search(rf"(?i)\b(?:{pat})\b", text)


@rule("terminology", "insignificant", "omission", check=labels("same"))
def term_drop_implied(text: str, rng: random.Random) -> Rewrite | None:
    """Drop the qualifier a chest radiograph implies ("pleural effusion" -> "effusion", "pulmonary edema"
    -> "edema"). (Choice: the paper gives no omission example for this cell; on a chest film an
    unqualified effusion is pleural and edema is pulmonary, Appendix A, Terminology I.)"""
    return swap_word(text, rng, _TERM_IMPLIED, positive=False, extra_ok=_implied,
                     explanation="{old!r} is shortened to {new!r}; on a chest radiograph the dropped qualifier is "
                                 "implied and the finding is unambiguous (Appendix A, Terminology I).")


_TERM_GLOSS = {"cardiomegaly": "enlarged heart", "atelectasis": "partial lung collapse",
               "pleural effusion": "fluid around the lung", "pleural effusions": "fluid around the lungs",
               "pneumothorax": "air around the lung", "subcutaneous emphysema": "air under the skin",
               "emphysema": "damaged air sacs of the lungs", "degenerative changes": "wear-and-tear changes",
               "degenerative change": "wear-and-tear change", "osteophytes": "bone spurs",
               "osteophytosis": "bone spurs", "scoliosis": "sideways curvature of the spine",
               "kyphosis": "forward rounding of the upper back", "granuloma": "a small healed spot",
               "granulomas": "small healed spots", "osseous structures": "bones",
               "pulmonary vascularity": "blood vessels of the lungs",
               "pulmonary vasculature": "blood vessels of the lungs",
               "costophrenic angle": "corner where the diaphragm meets the chest wall",
               "costophrenic angles": "corners where the diaphragm meets the chest wall",
               "endotracheal tube": "breathing tube", "nasogastric tube": "tube through the nose into the stomach",
               "sternotomy": "prior surgical opening of the breastbone", "hyperinflated": "over-inflated",
               "hyperexpanded": "over-expanded", "hyperinflation": "over-inflation", "tortuous": "elongated and winding"}
_GLOSS_RE = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(k).replace(r"\ ", r"\s+")
                                                   for k in sorted(_TERM_GLOSS, key=len, reverse=True)) + r")(?![\w-])",
                       re.IGNORECASE)


@rule("terminology", "insignificant", "fabrication", check=labels("same"))
def term_add_gloss(text: str, rng: random.Random) -> Rewrite | None:
    """Add a lay gloss after a term ("mild cardiomegaly" -> "mild cardiomegaly (enlarged heart)",
    "degenerative changes" -> "degenerative changes (wear-and-tear changes)"). (Choice: filed as
    fabrication, the ME adds words the GT lacks; they restate the term and add no fact, Appendix A,
    Terminology I: lay terms do not affect interpretation.)"""
    cands = [m for m in _GLOSS_RE.finditer(text) if not re.match(r"\s*\(", text[m.end():])
             and (m.group(0).lower() != "emphysema" or _not_subcutaneous(text, m))]
    m = pick(rng, cands)
    if m is None:
        return None
    gloss = styled(text, m.start(), _TERM_GLOSS[" ".join(m.group(0).lower().split())])
    return one_edit(text, m.end(), m.end(), f" ({gloss})",
                    f"The lay gloss {gloss!r} is added after {m.group(0)!r}; it restates the term in plain words and "
                    "changes no finding (Appendix A, Terminology I).")
