"""Rewrite rules of the Internal Contradiction aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _finding_nps,
    _one,
)
from radaudit.perturb.textops import (
    pick,
    sentence_at,
    sentence_end_insert,
    status_at,
)
from radaudit.perturb.verify import labels
from radaudit.text.sections import sentences

_ASSERT = {
    "pneumothorax": "There is a small right apical pneumothorax.",
    "effusion": "There is a moderate left pleural effusion.",
    "consolidation": "There is consolidation in the right lower lobe.",
    "edema": "There is mild pulmonary edema.",
    "pneumonia": "There is right lower lobe pneumonia.",
    "clear": "There is consolidation in the right base.",
}
_NEG_TOPIC = re.compile(r"(?i)\b(pneumothorax|effusions?|consolidation|edema|pneumonia)\b|\blungs?\s+(?:are|is)\s+(?:\w+\s+)?clear\b|\bclear\s+lungs\b")


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


@rule("contradiction", "significant", "fabrication", check=labels("differ"))
def contra_assert(text: str, rng: random.Random) -> Rewrite | None:
    """Right after a sentence that rules a finding out, assert it ("The lungs are clear." -> "The lungs
    are clear. There is consolidation in the right base."; Table 2, Internal Contradiction S)."""
    c = pick(rng, _negated_topics(text))
    if c is None:
        return None
    sent, topic = c
    new = _ASSERT[topic]
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"{new!r} contradicts {sent.text!r}; the report can no longer be trusted (Table 2, "
                           "Internal Contradiction S).")


@rule("contradiction", "significant", "inaccuracy")
def contra_clear(text: str, rng: random.Random) -> Rewrite | None:
    """Right after an asserted lung finding, state that the lungs are clear (Appendix A, Internal
    Contradiction S: "lungs are clear" after describing effusion and consolidation)."""
    if re.search(r"(?i)\bclear\b", text):
        return None
    cands = []
    for m, _a, _mods in _finding_nps(text, r"opacit(?:y|ies)|consolidation|atelectasis|effusions?|edema|infiltrates?|pneumonia"):
        s = sentence_at(text, m.start(), m.end())
        if s is not None and s not in cands:
            cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    a, b, ins = sentence_end_insert(text, s, "The lungs are clear.")
    return _one(text, a, b, ins, f"'The lungs are clear.' is inserted after {s.text!r}: a major contradiction (Appendix A, "
                           "Internal Contradiction S).")


_HEDGED_MINOR = {"effusion": "A trace pleural effusion may be present.",
                 "edema": "Minimal interstitial edema may be present."}


@rule("contradiction", "insignificant", "fabrication")
def contra_hedged(text: str, rng: random.Random) -> Rewrite | None:
    """After ruling out a finding, hedge a trace amount of it ("No current evidence of larger pleural
    effusions. Minimal pleural effusions may exist"; Table 2, Internal Contradiction I)."""
    c = pick(rng, [(s, t) for s, t in _negated_topics(text) if t in _HEDGED_MINOR])
    if c is None:
        return None
    sent, topic = c
    new = _HEDGED_MINOR[topic]
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"{new!r} mildly qualifies {sent.text!r}: an inconsistency, not a true contradiction "
                           "(Table 2 and Appendix A, Internal Contradiction I).")
