"""Rewrite rules of the Internal Contradiction aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    add_deletion,
    finding_nps,
    one_edit,
    pick_edit,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    FINDING_NOUN,
    find_all,
    is_positive,
    pick,
    sentence_at,
    sentence_end_insert,
    status_at,
    styled,
)
from radaudit.perturb.verify import CheckContext, all_of, labels
from radaudit.text.sections import sentences

_ASSERT = {
    "pneumothorax": "There is a small right apical pneumothorax.",
    "effusion": "There is a moderate left pleural effusion.",
    "consolidation": "There is consolidation in the right lower lobe.",
    "edema": "There is mild pulmonary edema.",
    "pneumonia": "There is right lower lobe pneumonia.",
    "clear": "There is consolidation in the right base.",
}
_NEG_TOPIC = re.compile(r"(?i)\b(pneumothorax|effusions?|consolidation|edema|pneumonia)\b"
                        r"|\blungs?\s+(?:are|is)\s+(?:\w+\s+)?clear\b|\bclear\s+lungs\b")


def _negated_topics(text: str) -> list[tuple[object, str]]:
    out = []
    for s in sentences(text):
        for m in _NEG_TOPIC.finditer(s.text):
            if m.group(1):
                topic = m.group(1).lower().rstrip("s") if m.group(1).lower().startswith("effusion") else m.group(1).lower()
                if status_at(s.text, m.start(1), m.end(1)) != "negative":
                    continue
            else:
                topic = "clear"
            out.append((s, topic))
    return out


def _add_after_negated(text: str, rng: random.Random, table: dict[str, str], explanation: str) -> Rewrite | None:
    """Right after a sentence that rules out a topic of ``table``, insert the table's sentence for it (one
    chosen by ``rng``); ``explanation`` is formatted with ``new`` (the sentence) and ``sent`` (the negative one)."""
    c = pick(rng, [(s, t) for s, t in _negated_topics(text) if t in table])
    if c is None:
        return None
    sent, topic = c
    new = table[topic]
    a, b, ins = sentence_end_insert(text, sent, new)
    return one_edit(text, a, b, ins, explanation.format(new=new, sent=sent.text))


@rule("contradiction", "significant", "fabrication", check=labels("differ"))
def contra_assert(text: str, rng: random.Random) -> Rewrite | None:
    """Right after a sentence that rules a finding out, assert it ("The lungs are clear." -> "The lungs
    are clear. There is consolidation in the right base."; Table 2, Internal Contradiction S)."""
    return _add_after_negated(text, rng, _ASSERT, "{new!r} contradicts {sent!r}; the report can no longer be trusted "
                                                  "(Table 2, Internal Contradiction S).")


@rule("contradiction", "significant", "inaccuracy")
def contra_clear(text: str, rng: random.Random) -> Rewrite | None:
    """Right after an asserted lung finding, state that the lungs are clear (Appendix A, Internal
    Contradiction S: "lungs are clear" after describing effusion and consolidation)."""
    if re.search(r"(?i)\bclear\b", text):
        return None
    cands = []
    for m, _a, _mods in finding_nps(text,
                                    r"opacit(?:y|ies)|consolidation|atelectasis|effusions?|edema|infiltrates?|pneumonia"):
        s = sentence_at(text, m.start(), m.end())
        if s is not None and s not in cands:
            cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    a, b, ins = sentence_end_insert(text, s, "The lungs are clear.")
    return one_edit(text, a, b, ins,
                    f"'The lungs are clear.' is inserted after {s.text!r}: a major contradiction (Appendix A, "
                    "Internal Contradiction S).")


_HEDGED_MINOR = {"effusion": "A trace pleural effusion may be present.",
                 "edema": "Minimal interstitial edema may be present."}


@rule("contradiction", "insignificant", "fabrication")
def contra_hedged(text: str, rng: random.Random) -> Rewrite | None:
    """After ruling out a finding, hedge a trace amount of it ("No current evidence of larger pleural
    effusions. Minimal pleural effusions may exist"; Table 2, Internal Contradiction I)."""
    return _add_after_negated(text, rng, _HEDGED_MINOR, "{new!r} mildly qualifies {sent!r}: an inconsistency, not a "
                                                        "true contradiction (Table 2 and Appendix A, Internal "
                                                        "Contradiction I).")


#: Asserted finding -> how a negative list names it, and the pattern of any mention of that topic.
_LISTED = {"pneumothorax": ("pneumothorax", r"pneumothora"), "effusion": ("pleural effusion", r"effusion"),
           "consolidation": ("consolidation", r"consolidat"), "edema": ("edema", r"edema"),
           "pneumonia": ("pneumonia", r"pneumonia")}
_NEG_LIST_CUE = re.compile(r"(?i)^(?:there\s+(?:is|are)\s+)?(?:no|negative\s+for)\s+(?:(?:evidence|signs?)\s+of\s+)?")


def _topic(word: str) -> str:
    w = word.lower()
    return "effusion" if w.startswith("effusion") else "consolidation" if w.startswith("consolidation") else w


def _denies_asserted(ctx: CheckContext) -> str | None:
    """The edited span names a finding as absent that the rewritten report asserts elsewhere."""
    for (_g, (a, b)) in ctx.spans:
        for m in re.finditer(r"(?i)pneumothorax|effusion|consolidation|edema|pneumonia", ctx.me[a:b]):
            pat = _LISTED[_topic(m.group(0))][1]
            if status_at(ctx.me, a + m.start(), a + m.end()) != "negative":
                return f"{m.group(0)!r} is not negated in the rewrite"
            if not any(is_positive(ctx.me, o.start(), o.end()) for o in re.finditer(rf"(?i)\b{pat}\w*", ctx.me)):
                return f"{m.group(0)!r} is not asserted elsewhere in the rewrite"
            return None
    return "no finding named in the edited span"


@rule("contradiction", "significant", "inaccuracy", check=all_of(labels("same"), _denies_asserted))
def contra_deny_listed(text: str, rng: random.Random) -> Rewrite | None:
    """Add an asserted finding to the report's list of negatives ("Moderate left pleural effusion. ... No
    pneumothorax." -> "... No pneumothorax or pleural effusion."): the templated-negative error. (Choice: Table 2
    and Appendix A, Internal Contradiction S contrast "clear lungs" with an asserted finding; here the named
    finding itself is denied, so the reader cannot tell whether to treat it.)"""
    asserted = {}
    for m, _a, mods in finding_nps(text, r"pneumothorax|effusions?|consolidations?|edema|pneumonia"):
        if {"pericardial", "joint"} & set(mods) \
                or re.search(r"(?i)(?:pericardial|joint)\s+$", text[max(0, m.start() - 12):m.start()]):
            continue
        asserted.setdefault(_topic(m.group(0)), m)
    cands = []
    for topic, m in asserted.items():
        phrase, pat = _LISTED[topic]
        if any(not is_positive(text, o.start(), o.end()) for o in re.finditer(rf"(?i)\b{pat}\w*", text)):
            continue  # already negated or hedged somewhere: the report is not simply asserting it
        home = sentence_at(text, m.start(), m.end())
        for s in sentences(text):
            cue = _NEG_LIST_CUE.match(s.text)
            if s == home or cue is None or re.search(rf"(?i){pat}", s.text):
                continue
            nouns = [n for n in re.finditer(rf"(?i)\b(?:{FINDING_NOUN}|nodules?|masses)\b", s.text)
                     if status_at(s.text, n.start(), n.end()) == "negative"]
            if not nouns:
                continue
            if len(nouns) == 1 and not re.search(r"(?i),|\bor\b|\band\b", s.text[cue.end():nouns[0].start()]):
                at = s.start + nouns[0].end()
                cands.append((at, at, styled(text, at, " or " + phrase), s.text))
            else:
                at = s.start + cue.end()
                cands.append((at, at, styled(text, at, phrase + ", "), s.text))
    return pick_edit(text, rng, cands,
                     lambda old: f"A finding the report asserts is added to the negatives of {old!r}: the report both "
                                 "describes and denies it (Appendix A, Internal Contradiction S).")


_SERIOUS = (rf"{CRITICAL_NOUN}|opacit(?:y|ies)|infiltrates?|airspace\s+disease|cardiomegaly|fractures?|lesions?|"
            r"atelectasis|densit(?:y|ies)")
_BENIGN_BACKGROUND = re.compile(r"(?i)\b(?:granulomas?|granulomatous|scarring|scar|calcifi\w+|degenerative|spondylosis|"
                                r"osteophytes?|emphysema\w*|hyperinfla\w+|hyperexpan\w+|tortu\w+|atherosclero\w+|"
                                r"eventration|pleural\s+thickening)\b")


@rule("contradiction", "insignificant", "omission", check=labels("same"))
def contra_drop_otherwise(text: str, rng: random.Random) -> Rewrite | None:
    """Omit "otherwise" from a normal statement that follows only benign findings ("Calcified granuloma in
    the right upper lobe. The lungs are otherwise clear." -> "... The lungs are clear."): Appendix A, Internal
    Contradiction I ("no clear current evidence of chronic pulmonary changes" after chronic changes is a mild
    inconsistency, not a true contradiction)."""
    for m, _a, mods in finding_nps(text, _SERIOUS, positive=False):
        if status_at(text, m.start(), m.end()) != "negative" and not ("calcified" in mods and
                                                                      re.match(r"(?i)nodul|densit", m.group(0))):
            return None  # a finding that matters: "lungs are clear" after it is a true contradiction
    cands = []
    for m in find_all(text, r"\botherwise\b"):
        s = sentence_at(text, m.start(), m.end())
        if s is None or not re.search(r"(?i)\b(?:clear|normal|unremarkable)\b", s.text) \
                or not _BENIGN_BACKGROUND.search(text[:m.start()]):
            continue
        comma = re.match(r",\s*([A-Za-z]+)", text[m.end():])
        if comma and m.start() == s.start:  # "Otherwise, the lungs are clear." -> "The lungs are clear."
            word = comma.group(1)
            cands.append((m.start(), m.end() + comma.end(), word[:1].upper() + word[1:], m.group(0)))
            continue
        add_deletion(cands, text, m.start(), m.end(), m.group(0))
    return pick_edit(text, rng, cands,
                     lambda old: f"{old!r} is omitted: the normal statement now also covers the benign finding described "
                                 "before it, a mild inconsistency that changes no decision (Appendix A, Internal "
                                 "Contradiction I).")


_LOW_VOLUMES = re.compile(r"(?i)\b(?:low|lower|diminished|decreased|reduced)\s+lung\s+volumes?\b|\blungs?\s+(?:are|is)\s+"
                          r"(?:mildly\s+|slightly\s+)?hypoinflated\b|\bhypoventilat\w+|\b(?:poor|shallow)\s+inspirat\w+")
_WELL_EXPANDED = re.compile(r"(?i)\b(?:well[- ](?:expanded|aerated|inflated)|normally\s+(?:expanded|inflated)|"
                            r"normal\s+lung\s+volumes)\b")


@rule("contradiction", "insignificant", "inaccuracy", check=labels("same"))
def contra_volumes(text: str, rng: random.Random) -> Rewrite | None:
    """Contradict the stated lung volumes ("Low lung volumes." -> "Low lung volumes. The lungs are well
    expanded."; "The lungs are well expanded." -> "... Lung volumes are low."). (Choice: the paper's Internal
    Contradiction I examples are mild inconsistencies; lung volume reflects the patient's inspiration at the
    time of the radiograph, and an inconsistency about it changes no diagnosis or treatment.)"""
    low = [m for m in _LOW_VOLUMES.finditer(text) if is_positive(text, m.start(), m.end())]
    well = [m for m in _WELL_EXPANDED.finditer(text) if is_positive(text, m.start(), m.end())]
    if low and well:
        return None
    cands = []
    for m, new in [(m, "The lungs are well expanded.") for m in low] + [(m, "Lung volumes are low.") for m in well]:
        s = sentence_at(text, m.start(), m.end())
        if s is not None:
            a, b, ins = sentence_end_insert(text, s, new)
            cands.append((a, b, ins, s.text))
    return pick_edit(text, rng, cands,
                     lambda old: f"A statement about lung volumes that contradicts {old!r} is added; lung volume depends "
                                 "on inspiration and the inconsistency changes no decision (Internal Contradiction I).")
