"""Rewrite rules of the Severity aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _SEV_WORDS,
    _del,
    _finding_nps,
    _one,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    insert_at_np,
    is_positive,
    match_case,
    pick,
    sentence_end_insert,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
    severity_shift,
)
from radaudit.text.attributes import extract_severity
from radaudit.text.sections import sentences

_SIZE_CLASS = {2: "tiny", 3: "small", 4: "moderate", 5: "large"}
_DEGREE_CLASS = {1: "trace", 2: "minimal", 3: "mild", 4: "moderate", 5: "severe"}
_ADVERB_CLASS = {2: "minimally", 3: "mildly", 4: "moderately", 5: "severely"}
_SIZE_WORDS = {"small", "large", "tiny", "massive", "huge"}
_ADVERBS = {"mildly", "minimally", "moderately", "severely", "slightly", "markedly"}
_NOT_DEGREE_AFTER = re.compile(r"^[\s-]+(?:increase|decrease|improvement|change|interval|enlargement\s+of\s+the\s+(?:bowel))",
                               re.IGNORECASE)


def _sev_class(word: str, after: str) -> dict[int, str]:
    w = word.lower().split("-")[0]
    if w in _ADVERBS:
        return _ADVERB_CLASS
    if w in _SIZE_WORDS or (w == "moderate" and re.match(r"(?i)[\s-]+(?:sized?\s+)?(?:\w+\s+){0,2}(?:effusion|pneumothorax|amount|size)", after)):
        return _SIZE_CLASS
    return _DEGREE_CLASS


def _severity_candidates(text: str, levels: set[int]) -> list:
    out = []
    for sv in extract_severity(text):
        if sv.low != sv.high or sv.low not in levels or _NOT_DEGREE_AFTER.match(text[sv.end:]):
            continue
        if not is_positive(text, sv.start, sv.end):
            continue
        out.append(sv)
    return out


@rule("severity", "significant", "inaccuracy", check=all_of(severity_shift(2, 4), labels("same")))
def sev_shift_two(text: str, rng: random.Random) -> Rewrite | None:
    """Move a severity two levels on the ordinal scale ("mild" -> "severe", "large" -> "small"; Table 2:
    "mildly enlarged" -> "severely enlarged")."""
    sv = pick(rng, _severity_candidates(text, {1, 2, 3, 4, 5}))
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    target = sv.low + 2 if sv.low + 2 in cls else sv.low - 2
    if target not in cls:
        return None
    word = sv.text.split("-")[0].split()[0]
    new = match_case(word, cls[target]) + sv.text[len(word):]
    return _one(text, sv.start, sv.end, new, f"Severity {sv.text!r} becomes {new!r} (two levels on the scale trace < minimal "
                                       "< mild < moderate < severe): a different urgency and treatment (§3.1, Severity).")


@rule("severity", "insignificant", "inaccuracy", check=all_of(severity_shift(0.5, 0.5), labels("same")))
def sev_adjacent(text: str, rng: random.Random) -> Rewrite | None:
    """Widen a severity to a range with the adjacent level ("severe" -> "moderate-to-severe"; Table 2,
    Severity I)."""
    sv = pick(rng, _severity_candidates(text, {1, 2, 3, 4, 5}))
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    options = [lv for lv in (sv.low - 1, sv.low + 1) if lv in cls]
    if not options:
        return None
    other = options[rng.randrange(len(options))]
    lo, hi = sorted((sv.low, other))
    word = sv.text.split("-")[0].split()[0]
    joiner = " to " if cls is _ADVERB_CLASS else "-to-"
    new = match_case(word, f"{cls[lo]}{joiner}{cls[hi]}") + sv.text[len(word):]
    return _one(text, sv.start, sv.end, new, f"Severity {sv.text!r} becomes the adjacent range {new!r}; the grade is "
                                       "essentially the same (Table 2, Severity I).")


@rule("severity", "significant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_high(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a moderate/severe grade ("large left pleural effusion" -> "left pleural effusion"): the
    urgency is lost. (Choice: the paper has no omission example for this cell.)"""
    sv = pick(rng, _severity_candidates(text, {4, 5}))
    if sv is None:
        return None
    return _del(text, sv.start, sv.end, f"The grade {sv.text!r} of the finding is omitted; its urgency can no longer "
                                        "be judged (§3.1, Severity).")


@rule("severity", "insignificant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_low(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a trace/minimal/mild grade of a non-critical finding ("mild degenerative changes" ->
    "degenerative changes")."""
    cands = [sv for sv in _severity_candidates(text, {1, 2, 3})
             if not re.match(rf"(?i)^[\s-]+(?:\w+[\s-]+){{0,3}}?(?:{CRITICAL_NOUN})\b", text[sv.end:])]
    sv = pick(rng, cands)
    if sv is None:
        return None
    return _del(text, sv.start, sv.end, f"The minor grade {sv.text!r} is omitted from a non-critical finding; "
                                        "management is unchanged (Severity I).")


_SEVERE_FOR = {"effusion": "large", "effusions": "large", "pneumothorax": "large", "cardiomegaly": "severe",
               "edema": "severe", "atelectasis": "severe", "consolidation": "extensive", "emphysema": "severe",
               "opacities": "extensive", "opacity": "extensive"}


@rule("severity", "significant", "fabrication", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_add_severe(text: str, rng: random.Random) -> Rewrite | None:
    """Add a severe grade to an ungraded asserted finding ("left pleural effusion" -> "large left pleural
    effusion"; Appendix A, Severity S: fabricated severity suggests acute deterioration)."""
    cands = []
    for m, _a, mods in _finding_nps(text, "|".join(_SEVERE_FOR)):
        if any(w in _SEV_WORDS or w.split("-")[0] in _SEV_WORDS or w == "borderline" for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = _SEVERE_FOR[m.group(0).lower()]
    a, b, new = insert_at_np(text, m.start(), word)
    return _one(text, a, b, new, f"A fabricated grade {word!r} is added to {m.group(0)!r}; it suggests a severe process and "
                           "may escalate treatment (Appendix A, Severity S).")


_BENIGN_ADDITIONS = (
    ("Mild degenerative changes of the thoracic spine.", r"spine|degenerative|spondyl|osteophyt"),
    ("Mild elevation of the right hemidiaphragm.", r"hemidiaphragm|diaphragm"),
    ("Minimal biapical pleural thickening.", r"apical|apex|apices|pleural\s+thickening"),
)


@rule("severity", "insignificant", "fabrication", check=local_attr("severity", "differ"))
def sev_add_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Append a mild, common, non-specific finding ("Mild elevation of the right hemidiaphragm."; Appendix
    A, Severity I)."""
    sents = sentences(text)
    if not sents:
        return None
    options = [s for s, pat in _BENIGN_ADDITIONS if not re.search(pat, text, re.I)]
    new = pick(rng, options)
    if new is None:
        return None
    a, b, ins = sentence_end_insert(text, sents[-1], new)
    return _one(text, a, b, ins, f"A mild benign finding is added ({new!r}); it rarely needs intervention and does not "
                           "alter management (Appendix A, Severity I).")
