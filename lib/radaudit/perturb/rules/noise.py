"""Rewrite rules of the Noise aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    finding_nps,
    one_edit,
    pick_edit,
    swap_word,
)
from radaudit.perturb.textops import (
    FINDING_NOUN,
    find_all,
    match_case,
    pick,
    sentence_at,
    status_at,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    max_edit_distance,
)

_NO_TYPO = {"left", "right", "without", "normal", "likely", "unlikely", "possible", "increased", "decreased"}


def _typo(word: str, rng: random.Random) -> str:
    ops = []
    if word.endswith("y"):
        ops.append(word[:-1] + "i")
    ops.append(word[:-1])  # drop the last letter ("atelectasi")
    i = 1 + rng.randrange(len(word) - 3)
    ops.append(word[:i] + word[i + 1] + word[i] + word[i + 2:])  # swap two inner letters
    j = 1 + rng.randrange(len(word) - 2)
    ops.append(word[:j] + word[j] + word[j:])  # double a letter
    out = [o for o in ops if o.lower() != word.lower()]
    return out[rng.randrange(len(out))]


@rule("noise", "insignificant", "inaccuracy", check=max_edit_distance(2))
def noise_typo(text: str, rng: random.Random) -> Rewrite | None:
    """One typo in a long word ("opacity" -> "opaciti", "atelectasis" -> "atelectasi"; Table 2, Noise I)."""
    cands = [m for m in re.finditer(r"\b[A-Za-z]{7,}\b", text) if m.group(0).lower() not in _NO_TYPO
             and not m.group(0).isupper()]
    m = pick(rng, cands)
    if m is None:
        return None
    new = _typo(m.group(0), rng)
    return one_edit(text, m.start(), m.end(), new, f"Typo {m.group(0)!r} -> {new!r}; a reader infers the intended word "
                                             "(Appendix A, Noise I).")


_MEANING_FLIP = {"likely": "unlikely", "unlikely": "likely", "consistent with": "inconsistent with",
                 "normal": "abnormal"}


def _flip_ok(text: str, m: re.Match[str]) -> bool:
    if m.group(0).lower() == "normal":
        return bool(re.search(r"(?i)\b(?:is|are|appears?|remains?)\s+(?:\w+ly\s+)?$",
                              text[max(0, m.start() - 25):m.start()]))
    return True


@rule("noise", "significant", "inaccuracy", check=max_edit_distance(3))
def noise_flip(text: str, rng: random.Random) -> Rewrite | None:
    """A small slip that reverses meaning ("most likely due to" -> "most unlikely due to", "is normal" ->
    "is abnormal"; Appendix A, Noise S: noise that alters a sentence's meaning)."""
    return swap_word(text, rng, _MEANING_FLIP, positive=False, extra_ok=_flip_ok,
                     explanation="A one-word slip ({old!r} -> {new!r}) reverses the interpretation of the sentence "
                                 "(Appendix A, Noise S).")


_NEGATED_FINDING = re.compile(rf"\s+(?:(?:evidence|signs?)\s+of\s+)?(?:[A-Za-z-]+\s+){{0,3}}?({FINDING_NOUN}|fractures?|"
                              r"abnormalit(?:y|ies)|adenopathy|lymphadenopathy)\b", re.IGNORECASE)
_NOT_SEEN = r"seen|identified|visualized|demonstrated|present|enlarged|appreciated|evident|noted|detected|dilated|widened"


@rule("noise", "significant", "fabrication", check=all_of(max_edit_distance(2), labels("differ")))
def noise_mishear_no(text: str, rng: random.Random) -> Rewrite | None:
    """A sound-alike dictation slip turns a negation into an assertion ("No pneumothorax." -> "New
    pneumothorax.", "The heart is not enlarged." -> "The heart is now enlarged."). (Choice: the paper's
    Noise S example reverses "most likely"; "no"/"new" and "not"/"now" are the classic speech-recognition
    slips that alter meaning, Appendix A, Noise S.)"""
    cands = []
    for m in find_all(text, r"\bno\b(?=\s+(?!(?:new|change|changes|interval|significant|longer|other|more|less)\b))"):
        f = _NEGATED_FINDING.match(text, m.end())
        if f is None or status_at(text, f.start(1), f.end(1)) != "negative":
            continue
        s = sentence_at(text, m.start(), m.end())
        if s is not None and not re.search(r"(?i),|\b(?:or|and|nor)\b", text[m.end():s.end]):  # one finding
            cands.append((m.start(), m.end(), match_case(m.group(0), "new"), m.group(0)))
    for m in find_all(text, rf"\b(?:is|are|was|were)\s+(not)(?=\s+(?:\w+ly\s+)?(?:{_NOT_SEEN})\b)"):
        s = sentence_at(text, m.start(), m.end())
        before = text[s.start:m.start()] if s is not None else ""
        if re.search(rf"(?i)\b(?:{FINDING_NOUN}|heart|cardiac|mediastinum|mediastinal|fractures?)\b", before) \
                and not re.search(r"(?i),|\b(?:or|and|nor)\b", before):
            cands.append((m.start(1), m.end(1), match_case(m.group(1), "now"), m.group(1)))
    return pick_edit(text, rng, cands, lambda old: (
        f"A sound-alike slip turns {old!r} into {match_case(old, 'new' if old.lower() == 'no' else 'now')!r}: a finding "
        "the GT rules out now reads as present, a false positive that triggers work-up or treatment (Appendix A, "
        "Noise S: noise that alters the meaning of a sentence)."))


_DROPPABLE = r"effusions?|pneumothorax|consolidation|edema|pneumonia|mass(?:es)?|nodules?|opacit(?:y|ies)|infiltrates?"
#: A sentence that also interprets the finding ("opacity ... may represent atelectasis") still tells the reader what it is.
_INTERPRETED = re.compile(r"(?i)\b(?:represent\w*|consistent|compatible|likely|suggest\w*|due\s+to|related\s+to|reflect\w*|"
                          r"concerning|suspicious|possibl[ey]|may|could|probabl[ey])\b")


@rule("noise", "significant", "omission", check=labels("differ"))
def noise_drop_noun(text: str, rng: random.Random) -> Rewrite | None:
    """The finding words drop out of a garbled phrase ("There is a small left pleural effusion." -> "There
    is a small left."; Table 2, Noise S: "Irregularly marginated 3-cm mass in the lingula has grown" -> "3-cm
    lingula margins has been growing irregularly", where the mass is no longer named)."""
    cands = []
    for m, a, mods in finding_nps(text, _DROPPABLE):
        s = sentence_at(text, m.start(), m.end())
        if s is None or _INTERPRETED.search(s.text) \
                or re.match(rf"(?i)\s*(?:,|(?:and|or|with|pattern|markings|changes|process|(?:{FINDING_NOUN}))\b)",
                            text[m.end():]):
            continue  # the left-over words would attach to the next finding ("mass lesion" -> "lesion")
        if "calcified" in mods:
            continue  # a calcified nodule or granuloma is benign: losing it changes nothing
        # the noun goes with a compound word that would name it anyway ("pleural [effusion]")
        seg = text[a:m.start()]
        c = re.search(r"(?i)(?:^|(?<=\s))(?:pleural|pulmonary|air\s*space|lung)\s+$", seg)
        kept = seg[:c.start() if c else len(seg)].rstrip()
        if kept:
            cands.append((a + len(kept), m.end(), "", text[a:m.end()]))
    return pick_edit(text, rng, cands, lambda old: (
        f"The finding words drop out of {old!r} (a dictation omission): the garbled phrase no longer says what the "
        "asserted abnormality is, so it is lost to the reader (Table 2 and Appendix A, Noise S)."))


_DROPPED_FUNCTION = r"\bthere\s+(is|are|was|were)\b(?=\s+[A-Za-z])|\bevidence\s+(of)\b(?=\s+[A-Za-z])"


@rule("noise", "insignificant", "omission", check=all_of(max_edit_distance(5), labels("same")))
def noise_drop_word(text: str, rng: random.Random) -> Rewrite | None:
    """A function word drops out ("There is no pneumothorax." -> "There no pneumothorax.", "No evidence of
    effusion" -> "No evidence effusion"). (Choice: the paper's Noise I examples are typos and grammar
    errors such as "growed"; a missing verb or preposition is such a grammar error.)"""
    cands = []
    for m in find_all(text, _DROPPED_FUNCTION):
        g = 1 if m.group(1) else 2
        gap = re.search(r"\s+$", text[:m.start(g)])
        cands.append((m.start(g) - len(gap.group(0)), m.end(g), "", m.group(g)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The word {old!r} is missing; the sentence is ungrammatical but a reader infers it and the findings are "
        "unchanged (Appendix A, Noise I)."))


_REPEATABLE = r"the|is|are|of|in|and|with|to|at|on"


@rule("noise", "insignificant", "fabrication", check=all_of(max_edit_distance(5), labels("same")))
def noise_repeat_word(text: str, rng: random.Random) -> Rewrite | None:
    """A function word is typed twice ("The lungs are clear." -> "The lungs are are clear."). (Choice:
    filed as fabrication, the ME adds a token the GT lacks; it carries no fact, Appendix A, Noise I.)"""
    m = pick(rng, find_all(text, rf"\b(?:{_REPEATABLE})\b(?=\s+[A-Za-z])"))
    if m is None:
        return None
    word = m.group(0) if m.group(0).isupper() else m.group(0).lower()
    return one_edit(text, m.end(), m.end(), " " + word, f"The word {m.group(0)!r} is repeated; a reader skips the "
                                                       "duplicate and the findings are unchanged (Appendix A, Noise I).")
