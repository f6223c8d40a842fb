"""Rewrite rules of the Uncertainty aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

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
    CRITICAL_NOUN,
    delete_word,
    find_all,
    insert_at_np,
    is_plural_before,
    is_upper_context,
    match_case,
    pick,
    sentence_at,
)
from radaudit.perturb.verify import (
    labels,
    local_attr,
)
from radaudit.text.attributes import extract_certainty

_HEDGE_SWAP = {
    "may": "might", "might": "may", "could": "may", "possible": "questionable", "questionable": "possible",
    "probable": "likely", "probably": "likely", "most likely": "probably", "suspicious for": "concerning for",
    "concerning for": "suspicious for", "suggestive of": "suspicious for", "cannot be excluded": "cannot be ruled out",
    "cannot be ruled out": "cannot be excluded", "cannot exclude": "cannot rule out", "cannot rule out": "cannot exclude",
    "possibly": "perhaps",
}


@rule("uncertainty", "insignificant", "inaccuracy", check=labels("same"))
def unc_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a hedge with an equivalent hedge ("may be" -> "might be", "possible" -> "questionable";
    Table 2 and Appendix A, Uncertainty I)."""
    hedges = {c.start for c in extract_certainty(text)}

    def ok(t: str, m: re.Match[str]) -> bool:
        return m.start() in hedges or m.group(0).lower() in ("may", "might", "could")

    def modal_ok(t: str, m: re.Match[str]) -> bool:
        if m.group(0).lower() in ("may", "might", "could"):
            return bool(re.match(r"(?i)\s+(?:also\s+)?(?:be|represent|reflect|indicate|relate|include)\b", t[m.end():]))
        return ok(t, m)

    return _swap_word(text, rng, _HEDGE_SWAP, positive=False, extra_ok=modal_ok,
                      explanation="The hedge {old!r} is replaced with {new!r}; both express uncertainty and the next "
                                  "steps are the same (Appendix A, Uncertainty I).")


@rule("uncertainty", "significant", "inaccuracy", check=local_attr("certainty", "differ"))
def unc_remove(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a hedged finding into a certain one ("may represent atelectasis" -> "represents atelectasis";
    Table 2: "Whether this is pneumonia is indeterminate" -> "Pneumonia exists")."""
    cands: list[tuple[int, int, str | None]] = []  # new=None: delete the word(s) a..b
    for m in find_all(text, r"\b(?:most\s+)?(?:likely|probably|possibly|presumably|questionably)(?=\s+[a-z])"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:possible|probable|questionable|suspected)(?=\s+[a-z])"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:may|might|could)\s+(?:also\s+)?(represent|reflect|indicate|be)\b"):
        plural = is_plural_before(text, m.start())
        verb = m.group(1).lower()
        cands.append((m.start(), m.end(), ("are" if plural else "is") if verb == "be" else (verb if plural else verb + "s")))
    for m in find_all(text, r"\b(?:cannot|can\s+not)\s+be\s+(?:entirely\s+|completely\s+)?(?:excluded|ruled\s+out)\b"):
        cands.append((m.start(), m.end(), "are present" if is_plural_before(text, m.start()) else "is present"))
    for m in find_all(text, r"\b(?:suspicious|concerning|worrisome)\s+for\b|\bsuggestive\s+of\b"):
        cands.append((m.start(), m.end(), "diagnostic of"))
    c = pick(rng, sorted(set(cands), key=lambda c: (c[0], c[1])))
    if c is None:
        return None
    a, b, new = c
    old = text[a:b]
    if new is None:
        e = delete_word(text, a, b)
        if e is None:
            return None
        a, b, new = e
    else:
        new = new.upper() if is_upper_context(text, a) else match_case(old, new)
    return _one(text, a, b, new, f"The hedge {old.strip()!r} is removed: an uncertain finding is reported as certain, which "
                           "may trigger or withhold treatment unjustifiably (Appendix A, Uncertainty S).")


@rule("uncertainty", "significant", "fabrication", check=labels("differ"))
def unc_add(text: str, rng: random.Random) -> Rewrite | None:
    """Hedge a definite critical finding ("right pneumothorax" -> "possible right pneumothorax"): doubt
    that delays an indicated treatment. (Choice: the paper's Uncertainty S example removes doubt;
    adding it to a definite critical finding is the mirror error.)"""
    cands = []
    for m, _a, mods in _finding_nps(text, CRITICAL_NOUN):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_certainty(sent.text) or any(w in ("possible", "probable", "likely") for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    a, b, new = insert_at_np(text, m.start(), "possible")
    return _one(text, a, b, new, f"A definite {m.group(0)!r} is reported as only possible; an indicated treatment may be "
                           "delayed (§3.1, Uncertainty).")
