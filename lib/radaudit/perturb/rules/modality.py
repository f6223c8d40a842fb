"""Rewrite rules of the Modality aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    finding_nps,
    one_edit,
    pick_edit,
    sentence_deletion_span,
    swap_word,
)
from radaudit.perturb.textops import (
    FINDING_NOUN,
    is_positive,
    is_upper_context,
    pick,
    sentence_at,
    sentence_end_insert,
)
from radaudit.perturb.verify import labels
from radaudit.text.sections import sentences

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
    return swap_word(text, rng, _MODALITY_WRONG, positive=False, extra_ok=_modality_ok,
                     explanation="The modality {old!r} becomes {new!r}: a study that cannot show the finding is "
                                 "referenced or recommended (Table 2, Modality S).")


@rule("modality", "insignificant", "inaccuracy", check=labels("same"))
def mod_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Name the same modality differently ("chest CT" -> "CT", "radiograph" -> "x-ray"; Appendix A,
    Modality I)."""
    return swap_word(text, rng, _MODALITY_SYN, positive=False,
                     explanation="The modality {old!r} is written as {new!r}; the intent is clear (Appendix A, "
                                 "Modality I).")


@rule("modality", "significant", "fabrication")
def mod_overclaim(text: str, rng: random.Random) -> Rewrite | None:
    """Claim that a radiograph fully characterises a lesion that needs cross-sectional imaging
    (Appendix A, Modality S: "clearly delineated on X-ray" is incorrect)."""
    cands = finding_nps(text, r"nodules?|mass(?:es)?|lesions?|nodular\s+opacit(?:y|ies)")
    c = pick(rng, cands)
    if c is None:
        return None
    m = c[0]
    sent = sentence_at(text, m.start(), m.end())
    if sent is None:
        return None
    new = "It is fully characterized on this radiograph and needs no CT."
    a, b, ins = sentence_end_insert(text, sent, new)
    return one_edit(text, a, b, ins,
                    f"A fabricated claim ({new!r}) about what a radiograph can show; the lesion needs CT, and "
                    "the statement may stop the work-up (Appendix A, Modality S).")


_LIMITATION = re.compile(r"(?i)\b(?:limited|limiting|limitation|suboptimal|nondiagnostic|obscur\w+|rotat\w+|motion|"
                         r"underpenetrat\w+|overpenetrat\w+|body\s+habitus|(?:patient\s+)?positioning|"
                         r"(?:poor|shallow)\s+inspirat\w+)\b")
_STUDY = re.compile(r"(?i)\b(?:study|exam|examination|evaluation|evaluated|assessment|views?|films?|images?|radiographs?|"
                    r"technique|visualization|projection)\b|^limited\b")
_FURTHER_IMAGING = re.compile(
    r"(?i)\b(?:recommend\w*|consider\w*|could\s+be\s+(?:obtained|performed|considered|further\s+evaluated)|"
    r"may\s+be\s+helpful|would\s+(?:be\s+helpful|better\s+evaluate)|further\s+evaluat\w+|follow-?\s?up)\b")
#: A sentence that also reports or interprets something is not only a caveat.
_ALSO_READS = re.compile(r"(?i)\b(?:normal|unremarkable|intact|clear|reveal\w*|show\w*|demonstrat\w*|represent\w*|"
                         r"reflect\w*|consistent|suggest\w*|likely|artifact\w*)\b")
_IMAGING = re.compile(r"(?i)\b(?:CT|MRI|ultrasound|radiographs?|x-rays?|views?|series|study|exam|imaging|scan|films?|"
                      r"decubitus|fluoroscop\w+|nipple\s+markers?)\b")


def _caveat_spans(text: str) -> list[tuple[int, int, str]]:
    """Sentences (or a sentence's last clause) that only say what this radiograph cannot settle: a technical
    limitation ("Limited study secondary to body habitus.") or a further study to obtain ("Could be further
    evaluated with CT if clinically indicated.")."""
    sents = sentences(text)
    out = []
    for s in sents:
        limitation = _LIMITATION.search(s.text) and _STUDY.search(s.text)
        further = _FURTHER_IMAGING.search(s.text) and _IMAGING.search(s.text)
        if not (limitation or further):
            continue
        asserts = any(is_positive(text, s.start + m.start(), s.start + m.end())
                      for m in re.finditer(rf"(?i)\b(?:{FINDING_NOUN}|fractures?|abnormalit(?:y|ies))\b", s.text))
        negates = re.search(r"(?i)\b(?:no|not|without|negative)\b", s.text)
        if not asserts and not negates and not _ALSO_READS.search(s.text) and len(sents) > 1:
            a, b = sentence_deletion_span(text, s)
            out.append((a, b, s.text))
            continue
        # a trailing clause ", a dedicated CT scan is recommended."
        m = re.search(r",\s*([^,]+?)\s*[.]?\s*$", s.text)
        if m and _FURTHER_IMAGING.search(m.group(1)) and _IMAGING.search(m.group(1)) \
                and not re.search(rf"(?i)\b(?:{FINDING_NOUN}|no|not|without)\b", m.group(1)):
            end = s.start + m.end(1)
            out.append((s.start + m.start(), end, text[s.start + m.start():end]))
    return out


@rule("modality", "significant", "omission", check=labels("same"))
def mod_drop_caveat(text: str, rng: random.Random) -> Rewrite | None:
    """Omit what the radiograph cannot settle: a technical limitation ("Limited study secondary to body
    habitus." deleted) or a recommended further study ("Could be further evaluated with CT." deleted).
    (Choice: the paper's Modality S examples misstate a modality; §3.1 says "failure to account for modality
    limitations may result in inappropriate conclusions", and an omitted limitation or work-up does that.)"""
    c = pick(rng, sorted(set(_caveat_spans(text))))
    if c is None:
        return None
    a, b, old = c
    return one_edit(text, a, b,
                    "", f"The modality caveat {old.strip()!r} is omitted: what the radiograph could not settle now "
                    "reads as settled, and the further study it needs may not be done (§3.1, Modality; Appendix A, "
                    "Modality S).")


_VIEW_QUALIFIER = re.compile(
    r"(?i)\s+(?:on|in)\s+(?:the\s+|this\s+)?(?:frontal|lateral|PA|AP|portable|single\s+frontal)\s+"
    r"(?:and\s+lateral\s+)?(?:views?|projections?|radiographs?|images?|films?|study|exam)\b|"
    r"\s+for\s+(?:the\s+)?(?:(?:AP|PA|portable|supine)\s+)?technique\b")
_SEEN_BEFORE = re.compile(r"(?i)\b(?:seen|visible|visuali[sz]ed|demonstrated|identified|appreciated|evident|apparent|"
                          r"noted|detected|correlate|better|best)\s*$")


@rule("modality", "insignificant", "omission", check=labels("same"))
def mod_drop_view(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the projection a finding is described on ("blunting of the right costophrenic angle on the frontal
    view" -> "... angle"; "Heart size is normal for AP technique" -> "Heart size is normal"). (Choice: like
    Appendix A, Modality I ("CT" for "chest CT"), an imaging detail that the reader does not need.)"""
    cands = []
    for m in _VIEW_QUALIFIER.finditer(text):
        sent = sentence_at(text, m.start() + 1, m.end())
        if sent is None:
            continue
        clause = re.split(r"[,;]", text[sent.start:m.start()])[-1]
        if m.start() + 1 == sent.start or not clause.strip() or _SEEN_BEFORE.search(clause) \
                or re.search(r"(?i)\b(?:no|not|without|negative)\b", clause):
            continue
        cands.append((m.start(), m.end(), "", m.group(0)))
    return pick_edit(text, rng, cands,
                     lambda old: f"The projection {old.strip()!r} is omitted; the finding itself is unchanged and the "
                                 "reader does not need the view to act on it (Appendix A, Modality I).")


_TECHNIQUE_STATED = re.compile(r"(?i)\b(?:views?|projections?|radiographs?|x-rays?|films?|portable|supine|upright|"
                               r"semi-?upright|AP|PA|frontal|lateral\s+(?:view|chest|exam\w*|radiograph))\b")


@rule("modality", "insignificant", "fabrication", check=labels("same"))
def mod_add_technique(text: str, rng: random.Random) -> Rewrite | None:
    """Open the report with the technique it does not state ("Frontal and lateral views of the chest were
    obtained."). (Choice: the paper's Modality I examples rephrase a modality; naming the standard two-view
    radiograph that was read adds an imaging detail that changes no interpretation. Reports that name their
    views, or are upper-case CheXpert Plus impressions of portable studies, are left alone.)"""
    sents = sentences(text)
    if not sents or _TECHNIQUE_STATED.search(text) or is_upper_context(text, sents[0].start) \
            or re.match(r"\s*\d", text):  # an impression list ("1. ...") is not where the technique goes
        return None
    new = "Frontal and lateral views of the chest were obtained. "
    a = sents[0].start
    return one_edit(text, a, a, new, f"A technique statement ({new.strip()!r}) is added; it names the standard study and "
                               "changes no finding or decision (Modality I).")
