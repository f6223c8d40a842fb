"""Rewrite rules of the Comparison/Progression aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _TEMPORAL_WORDS,
    _del,
    _finding_nps,
    _one,
    _pick_edit,
    _prenominal,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    delete_word,
    find_all,
    insert_at_np,
    is_positive,
    match_case,
    pick,
    sentence_at,
    status_at,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
)
from radaudit.text.attributes import extract_temporal

_REVERSE = {
    "improved": "worsened", "improving": "worsening", "improvement": "worsening", "improves": "worsens",
    "decreased": "increased", "increased": "decreased", "decrease": "increase", "increase": "decrease",
    "decreasing": "increasing", "increasing": "decreasing", "worsened": "improved", "worsening": "improving",
    "worse": "better", "smaller": "larger", "resolving": "worsening", "progressed": "improved",
    "progression": "improvement", "less": "more", "more": "less", "unchanged": "worsened", "stable": "worsening",
    "diminished": "increased", "reduction": "increase",
}
_PARAPHRASE = {
    "unchanged": "essentially unchanged", "stable": "unchanged", "improved": "slightly improved",
    "improving": "slowly improving", "decreased": "diminished", "worsened": "progressed", "worsening": "progressing",
    "increasing": "enlarging", "decreasing": "diminishing", "redemonstrated": "again seen",
}


def _temporal_word_cands(text: str, table: dict[str, str], values: set[str]) -> list[tuple[int, int, str]]:
    out = []
    for t in extract_temporal(text):
        if t.value not in values:
            continue
        for w in re.finditer(r"[A-Za-z]+", t.text):
            if w.group(0).lower() in table:
                a, b = t.start + w.start(), t.start + w.end()
                if status_at(text, a, b) is not None:
                    out.append((a, b, w.group(0)))
                break
    return out


@rule("comparison", "significant", "inaccuracy", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_reverse(text: str, rng: random.Random) -> Rewrite | None:
    """Reverse the direction of a change ("edema has improved" -> "has worsened"; Table 2, Comparison S)."""
    c = pick(rng, _temporal_word_cands(text, _REVERSE, {"increased", "decreased", "unchanged"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _REVERSE[word.lower()])
    return _one(text, a, b, new, f"The change {word!r} is reversed to {new!r}: the patient appears to deteriorate (or "
                           "improve) when the opposite is true (Table 2 and Appendix A, Comparison S).")


@rule("comparison", "insignificant", "inaccuracy", check=all_of(local_attr("temporal", "same"), labels("same")))
def cmp_paraphrase(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase a change keeping its direction ("unchanged" -> "essentially unchanged", "improved" ->
    "slightly improved"; Table 2 and Appendix A, Comparison I)."""
    c = pick(rng, _temporal_word_cands(text, _PARAPHRASE, {"increased", "decreased", "unchanged", "persistent"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _PARAPHRASE[word.lower()])
    return _one(text, a, b, new, f"The change {word!r} is rephrased as {new!r}; the direction is the same (Comparison I).")


_CHANGE_ADJ = r"new|newly|increasing|worsening|improving|decreasing|enlarging|progressive|resolving"


@rule("comparison", "significant", "omission", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_drop_change(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a stated change of an asserted finding ("new left effusion" -> "left effusion"; ReXVal
    category (f), omission of a change from the previous study)."""
    cands = [m for m in find_all(text, rf"\b(?:{_CHANGE_ADJ})\b") if _prenominal(text, m)
             and is_positive(text, m.start(), m.end())]
    m = pick(rng, cands)
    if m is None:
        return None
    return _del(text, m.start(), m.end(), f"The change {m.group(0)!r} is omitted; the progression of the finding "
                                          "is lost (§2, ReXVal error (f); Comparison S).")


@rule("comparison", "insignificant", "omission", check=labels("same"))
def cmp_drop_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a statement of stability ("stable calcified granuloma" -> "calcified granuloma", ", unchanged
    from prior" removed): no change is lost."""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, r",?\s+(?:unchanged|stable)\s+(?:from|since|compared\s+(?:to|with))\s+(?:the\s+)?"
                            r"(?:prior|previous)(?:\s+(?:study|exam|examination|radiograph|film|studies))?"):
        cands.append((m.start(), m.end(), "", m.group(0).strip(" ,")))
    for m in find_all(text, r"\bagain\s+(?=(?:seen|noted|identified|demonstrated|visualized)\b)"):
        cands.append((m.start(), m.end(), "", m.group(0).strip()))
    for m in find_all(text, r"\b(?:stable|unchanged|persistent)\b"):
        if _prenominal(text, m) and not re.match(r"(?i)[\s-]+(?:from|since|and|compared|in|to|appearance)\b", text[m.end():]) \
                and is_positive(text, m.start(), m.end()):
            e = delete_word(text, m.start(), m.end())
            if e is not None:
                cands.append((*e, m.group(0)))
    return _pick_edit(text, rng, cands, lambda old: (
        f"The stability statement {old!r} is omitted; no change from the prior study is lost "
        "(Comparison I)."))


@rule("comparison", "significant", "fabrication", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_add_change(text: str, rng: random.Random) -> Rewrite | None:
    """Add a change that the GT does not state ("left pleural effusion" -> "worsening left pleural
    effusion"; ReXVal (e), a comparison not in the reference)."""
    cands = []
    for m, _a, mods in _finding_nps(text, CRITICAL_NOUN + r"|opacit(?:y|ies)|atelectasis|cardiomegaly"):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_temporal(sent.text) or any(w in _TEMPORAL_WORDS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = ("new", "worsening", "increasing")[rng.randrange(3)]
    a, b, new = insert_at_np(text, m.start(), word)
    return _one(text, a, b, new, f"A fabricated change {word!r} is added to {m.group(0)!r}; it implies progression and may "
                           "escalate care (§2, ReXVal (e); Comparison S).")


_CHRONIC = r"granulomas?|degenerative|scarring|osteophytes?|calcifications?|sternotomy|clips|emphysema|hyperexpan\w+|hyperinfla\w+|spondylosis|kyphosis|scoliosis"


@rule("comparison", "insignificant", "fabrication", check=labels("same"))
def cmp_add_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Add "stable" to a chronic benign finding ("calcified granuloma" -> "stable calcified granuloma")."""
    cands = []
    for m, _a, mods in _finding_nps(text, _CHRONIC):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_temporal(sent.text) or any(w in _TEMPORAL_WORDS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    a, b, new = insert_at_np(text, m.start(), "stable")
    return _one(text, a, b, new, f"'stable' is added to the chronic finding {m.group(0)!r}; nothing in management depends "
                           "on it (Comparison I).")
