"""Rewrite rules of the Stylistic Variation aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import _one
from radaudit.perturb.textops import (
    find_all,
    match_case,
    pick,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    same_sentences,
)
from radaudit.text.sections import sentences


@rule("stylistic", "insignificant", "inaccuracy", check=all_of(same_sentences(), labels("same")))
def style_reorder(text: str, rng: random.Random) -> Rewrite | None:
    """Reorder the sentences (Table 2, Stylistic I: "lung... edema... effusions" -> "effusions... lung...
    edema")."""
    sents = sentences(text)
    if len(sents) < 3 or any(not re.search(r"[.!?]$", s.text) for s in sents):
        return None
    order = list(range(len(sents)))
    for _ in range(10):
        rng.shuffle(order)
        if order != sorted(order):
            break
    else:
        return None
    first, last = sents[0].start, sents[-1].end
    pieces = []
    for k, idx in enumerate(order):
        pieces.append(sents[idx].text)
        if k + 1 < len(sents):
            pieces.append(text[sents[k].end:sents[k + 1].start])
    new = "".join(pieces)
    if new == text[first:last]:
        return None
    return _one(text, first, last, new, "The sentences are reordered; the findings and their interpretation are the same "
                                  "(Table 2, Stylistic Variation I).")


@rule("stylistic", "insignificant", "inaccuracy", name="style_template", check=labels("same"))
def style_template(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase with another template ("There is no pleural effusion." -> "No pleural effusion is seen.")."""
    cands = []
    for s in sentences(text):
        m = re.fullmatch(r"There (is|are) no ([^.;:,]+?)\.", s.text)
        if m and not re.search(r"(?i)\b(?:or|and|evidence)\b", m.group(2)):
            cands.append((s, m))
    c = pick(rng, cands)
    if c is None:
        return None
    s, m = c
    new = f"No {m.group(2)} {'is' if m.group(1) == 'is' else 'are'} seen."
    return _one(text, s.start, s.end, new, f"{s.text!r} is rephrased as {new!r}; same content, other template "
                                     "(Stylistic Variation I).")


@rule("stylistic", "significant", "inaccuracy")
def style_lr_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Swap which side predominates ("left greater than right" -> "right greater than left"; Table 2,
    Stylistic S: "more on the right")."""
    cands = []
    for m in find_all(text, r"\b(left|right)(\s+(?:greater|more|worse|larger)\s+than\s+)(left|right)\b"):
        if m.group(1).lower() != m.group(3).lower():
            new = match_case(m.group(1), m.group(3).lower()) + m.group(2) + match_case(m.group(3), m.group(1).lower())
            cands.append((m.start(), m.end(), new))
    for m in re.finditer(r"\b([LR])\s*>\s*([LR])\b", text):
        if m.group(1) != m.group(2):
            cands.append((m.start(), m.end(), f"{m.group(2)}>{m.group(1)}" if ">" in m.group(0) and " " not in m.group(0)
                          else f"{m.group(2)} > {m.group(1)}"))
    c = pick(rng, cands)
    if c is None:
        return None
    a, b, new = c
    return _one(text, a, b, new, f"{text[a:b]!r} becomes {new!r}: the phrasing reverses which side is worse (Table 2, "
                           "Stylistic Variation S).")
