"""What the rewrite rules of every aspect share: one-edit rewrites, word swaps from a table, finding noun phrases."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from radaudit.perturb.base import Edit, Rewrite
from radaudit.perturb.textops import (
    FINDING_NOUN,
    delete_word,
    find_all,
    fix_article,
    is_positive,
    match_case,
    np_start,
    pick,
)
from radaudit.text.attributes import SEVERITY_SYNONYMS


def one_edit(text: str, a: int, b: int, new: str, explanation: str) -> Rewrite:
    """One edit, with the indefinite article before it agreed ("an 8mm nodule" -> "a nodule")."""
    a, b, new = fix_article(text, a, b, new)
    return Rewrite((Edit(a, b, new),), explanation)


def pick_edit(text: str, rng: random.Random, cands: list[tuple[int, int, str, str]],
              explain: Callable[[str], str]) -> Rewrite | None:
    """One of the ``(start, end, new, old)`` candidate edits, chosen by ``rng`` from their sorted set
    (a deterministic order), explained by ``explain(old)``; ``None`` when there is none."""
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new, old = c
    return one_edit(text, a, b, new, explain(old))


def delete_edit(text: str, a: int, b: int, explanation: str) -> Rewrite | None:
    """Delete ``text[a:b]`` and the space after it as one edit explained by ``explanation``
    (:func:`~radaudit.perturb.textops.delete_word`: at a sentence start the next word takes the capital), with the
    indefinite article before it agreed; ``None`` when no word follows it."""
    e = delete_word(text, a, b)
    return None if e is None else one_edit(text, *e, explanation)


def swap_word(text: str, rng: random.Random, table: dict[str, str | tuple[str, ...]], *, positive: bool = True,
              explanation: str, extra_ok=None) -> Rewrite | None:
    """Replace one whole-word/phrase key of ``table`` (case-insensitive; longest first) with its value."""
    keys = sorted(table, key=len, reverse=True)
    pat = r"(?<![\w-])(?:" + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in keys) + r")(?![\w-])"
    cands = []
    for m in find_all(text, pat):
        if positive and not is_positive(text, m.start(), m.end()):
            continue
        if extra_ok is not None and not extra_ok(text, m):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    key = " ".join(m.group(0).lower().split())
    val = table[key]
    new = val if isinstance(val, str) else val[rng.randrange(len(val))]
    new = match_case(m.group(0), new)
    return one_edit(text, m.start(), m.end(), new, explanation.format(old=m.group(0), new=new))


def finding_nps(text: str, nouns: str = FINDING_NOUN, *,
                positive: bool = True) -> list[tuple[re.Match[str], int, list[str]]]:
    """Finding nouns (asserted by default) with their noun-phrase start and modifiers."""
    out = []
    for m in find_all(text, rf"\b(?:{nouns})\b"):
        if positive and not is_positive(text, m.start(), m.end()):
            continue
        a, mods = np_start(text, m.start())
        out.append((m, a, mods))
    return out


#: The severity words of :data:`radaudit.text.attributes.SEVERITY_SYNONYMS` ("mild", "moderate", ...): a finding
#: with one among its modifiers is graded already, so the severity rules do not add a grade to it.
SEVERITY_WORDS = set(SEVERITY_SYNONYMS)
#: Words that state a change over time ("new", "stable", "worsening", ...): a finding with one among its
#: modifiers already states a change, so the comparison rules do not add one.
TEMPORAL_WORDS = {"new", "stable", "increasing", "worsening", "improving", "decreasing", "enlarging", "persistent",
                  "residual", "chronic"}
#: Descriptors of a finding's morphology ("calcified", "patchy", "spiculated", ...): a finding with one among its
#: modifiers is described already, so the description rules do not add a descriptor to it.
DESCRIPTORS = {"calcified", "noncalcified", "non-calcified", "spiculated", "irregular", "cavitary", "patchy",
               "streaky", "linear", "subsegmental", "plate-like", "platelike", "hazy", "faint", "subtle", "nodular",
               "reticular", "ill-defined", "well-defined", "round", "rounded", "discoid", "bandlike", "coarse",
               "smooth", "focal", "diffuse", "interstitial", "alveolar", "granulomatous"}


def is_prenominal(text: str, m: re.Match[str]) -> bool:
    """The descriptor modifies a noun in the same phrase (a word follows it)."""
    return bool(re.match(r"[\s-]+[A-Za-z]", text[m.end():]))


def sentence_deletion_span(text: str, sent) -> tuple[int, int]:
    """Span deleting ``sent`` with the whitespace after it (or before it, for the last sentence)."""
    m = re.match(r"\s*", text[sent.end:])
    b = sent.end + m.end()
    if b < len(text):
        return sent.start, b
    m2 = re.search(r"\s*$", text[:sent.start])
    return sent.start - len(m2.group(0)), sent.end
