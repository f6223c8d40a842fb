"""Rewrite rules of the Negation aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    append_unstated,
    finding_nps,
    one_edit,
    pick_edit,
    sentence_deletion_span,
)
from radaudit.perturb.textops import (
    FINDING_NOUN,
    find_all,
    is_positive,
    match_case,
    pick,
    sentence_at,
    status_at,
    styled,
)
from radaudit.perturb.verify import labels
from radaudit.text.attributes import extract_certainty
from radaudit.text.sections import sentences

_FINDING_IN = re.compile(rf"\b(?:{FINDING_NOUN}|fractures?|abnormalit(?:y|ies))\b", re.IGNORECASE)


@rule("negation", "significant", "inaccuracy", check=labels("differ"))
def neg_flip(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a negated finding into an asserted one ("No evidence of pneumothorax" -> "Pneumothorax";
    "There is no effusion" -> "There is effusion"; Table 2, Negation S)."""
    cands = []
    for s in sentences(text):
        m = re.match(r"(?i)no\s+(?:(?:evidence|signs?)\s+of\s+)?(?=[a-z])", s.text)
        if m and _FINDING_IN.search(s.text) and "no new" not in s.text.lower()[:7]:
            nxt = re.match(r"[A-Za-z]+", s.text[m.end():])
            word = nxt.group(0)
            new_word = word if s.text.isupper() else word[:1].upper() + word[1:]
            cands.append((s.start, s.start + m.end() + len(word), new_word))
        for m2 in re.finditer(r"(?i)\b(there\s+(?:is|are))\s+no\s+(?:(?:evidence|signs?)\s+of\s+)?", s.text):
            if _FINDING_IN.search(s.text, m2.end()):
                keep = m2.group(1) + " " + ("evidence of " if re.search(r"(?i)evidence", m2.group(0)) else "")
                cands.append((s.start + m2.start(), s.start + m2.end(), keep))
        for m3 in re.finditer(r"(?i)\bwithout\b(?=\s+(?:\w+\s+){0,3}?(?:" + FINDING_NOUN + r")\b)", s.text):
            cands.append((s.start + m3.start(), s.start + m3.end(), match_case(m3.group(0), "with")))
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new = c
    return one_edit(text, a, b, new, f"The negation is removed ({text[a:b]!r} -> {new!r}): an absent finding is reported as "
                               "present, a critical false positive (Appendix A, Negation S).")


@rule("negation", "insignificant", "inaccuracy", check=labels("same"))
def neg_hedge(text: str, rng: random.Random) -> Rewrite | None:
    """Soften a negation into an equivalent hedge ("No pleural effusion" -> "No definite pleural effusion";
    Table 2, Negation I)."""
    cands = []
    for m in find_all(text, r"\bno\s+(?!definite|new\b|longer|change|significant|interval|other)(?=[a-z])"):
        if _FINDING_IN.search(text[m.end():m.end() + 60]):
            cands.append(m.end())
    pos = pick(rng, cands)
    if pos is None:
        return None
    new = styled(text, pos, "definite") + " "
    return one_edit(text, pos, pos, new, "'definite' is added to a negation; the finding is still reported as absent "
                                   "(Table 2, Negation I).")


_PERTINENT = r"pneumothorax|pleural\s+effusions?|effusions?|consolidation|edema|pneumonia"


@rule("negation", "significant", "omission", check=labels("differ"))
def neg_drop_pertinent(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a pertinent negative ("No pneumothorax." deleted). (Choice: the paper's omission example is
    insignificant; a pertinent negative of pneumothorax/effusion/consolidation/edema is treated as
    significant because it rules out an actionable diagnosis, §3.1 Negation.)"""
    sents = sentences(text)
    if len(sents) < 2:
        return None
    cands = []
    for s in sents:
        hits = list(re.finditer(rf"(?i)\b(?:{_PERTINENT})\b", s.text))
        if hits and all(status_at(s.text, h.start(), h.end()) == "negative" for h in hits) \
                and not any(is_positive(s.text, m.start(), m.end())
                            for m in re.finditer(rf"(?i)\b(?:{FINDING_NOUN})\b", s.text)):
            cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    a, b = sentence_deletion_span(text, s)
    return one_edit(text, a, b,
                    "", f"The pertinent negative {s.text!r} is omitted; an actionable diagnosis is no longer ruled "
                    "out (§3.1, Negation).")


_BENIGN_NORMAL = (r"osseous|bony\s+(?:structures|thorax)|bones|soft\s+tissues?|upper\s+abdomen|visualized\s+skeleton"
                  r"|skeletal\s+structures")


@rule("negation", "insignificant", "omission", check=labels("same"))
def neg_drop_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a benign normal statement ("The osseous structures are unremarkable." deleted; Appendix A,
    Negation I: omitting a non-pertinent detail has little clinical impact)."""
    sents = sentences(text)
    if len(sents) < 2:
        return None
    cands = [s for s in sents if re.search(rf"(?i)\b(?:{_BENIGN_NORMAL})\b", s.text)
             and re.search(r"(?i)\b(?:unremarkable|intact|normal|no\s+acute|within\s+normal\s+limits)\b", s.text)
             and not re.search(rf"(?i)\b(?:{FINDING_NOUN}|fractures?)\b", s.text)]
    s = pick(rng, cands)
    if s is None:
        return None
    a, b = sentence_deletion_span(text, s)
    return one_edit(text, a, b, "", f"The benign normal statement {s.text!r} is omitted; it does not influence diagnosis or "
                              "treatment (Appendix A, Negation I).")


_UNSTATED_NEGATIVES = (("No pneumothorax.", r"pneumothora"), ("No pleural effusion.", r"effusion"),
                       ("No acute osseous abnormality.", r"osseous|bony|bones|fracture"))


@rule("negation", "insignificant", "fabrication")
def neg_add_negative(text: str, rng: random.Random) -> Rewrite | None:
    """Add a negative statement about a finding the GT does not mention ("No pneumothorax.")."""
    return append_unstated(text, rng, _UNSTATED_NEGATIVES, "An unstated negative is added ({new!r}); it states the "
                                                           "usual default and changes no decision (Negation I).")


_DENY_NOUN = (r"pneumothorax|effusions?|consolidations?|edema|pneumonia|mass(?:es)?|nodules?|opacit(?:y|ies)|"
              r"infiltrates?|cardiomegaly")
#: Modifiers that make "No <NP>" say something else ("No new effusion" allows an old one) or hedge it: not denied.
_DENY_SKIP_MODS = frozenset("""new stable persistent chronic increasing worsening improving decreasing enlarging residual
possible probable questionable likely suspected calcified noncalcified non-calcified pericardial""".split())
#: Modifiers that a negation drops ("a small left effusion" -> "no left effusion"; "No small effusion" reads as
#: "only a larger one may exist").
_DENY_DROP_MODS = frozenset("""small tiny mild minimal moderate large severe trace slight marked extensive mildly
moderately severely multiple several few""".split())
_SIZE_WORD = re.compile(r"(?i)\d+(?:\.\d+)?(?:-?(?:mm|cm))?|x|mm|cm")
#: What may follow the finding for "No <NP>" to stay a sentence: a verb of seeing and/or a place.
_DENY_TAIL = re.compile(r"(?i)^(?:\s+(?:is|are)\s+(?:seen|noted|present|identified|demonstrated))?"
                        r"(?:\s*,?\s+(?:in|at|of|within|involving|along|over)\s+(?:the\s+)?[A-Za-z -]{1,40}?"
                        r"|\s+bilaterally)?"
                        r"\s*[.;]?\s*$")


@rule("negation", "significant", "inaccuracy", check=labels("differ"))
def neg_deny(text: str, rng: random.Random) -> Rewrite | None:
    """Negate an asserted finding ("Small left pleural effusion." -> "No left pleural effusion."; "There is a
    right lower lobe consolidation" -> "There is no right lower lobe consolidation"): a false negative.
    (Choice: Table 2's Negation S example is the false positive; the paper names "errors or omissions in
    negation" as leading to "serious misdiagnoses" (§3.1), and a denied finding is the missed diagnosis.)"""
    cands = []
    for m, a, mods in finding_nps(text, _DENY_NOUN):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or any(w in _DENY_SKIP_MODS for w in mods) or extract_certainty(sent.text):
            continue
        if not _DENY_TAIL.match(text[m.end():sent.end]):
            continue
        lead = re.match(r"(?i)(there\s+(?:is|are)\s+)(?:(?:a|an|some)\s+)?$", text[sent.start:a])
        if lead is None and a != sent.start:
            continue
        start = sent.start + (lead.end(1) if lead else 0)
        kept = [w for w in text[a:m.start()].split() if w.lower() not in _DENY_DROP_MODS
                and not _SIZE_WORD.fullmatch(w)]
        words = [*kept, m.group(0)]
        upper = text[a:m.end()].isupper()
        if lead is None and not upper and words[0][1:].islower():
            words[0] = words[0].lower()
        cue = ("no" if lead else "No") if not upper else "NO"
        new = " ".join([cue, *words])
        cands.append((start, m.end(), new, text[start:m.end()]))
    return pick_edit(text, rng, cands,
                     lambda old: f"The asserted finding {old!r} is negated: a present finding is reported as absent, a "
                                 "missed diagnosis (§3.1, Negation).")
