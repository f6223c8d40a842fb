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
    insert_at_np,
    is_positive,
    match_case,
    np_start,
    pick,
    sentence_at,
    sentence_end_insert,
)
from radaudit.text.attributes import SEVERITY_SYNONYMS
from radaudit.text.sections import sentences


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


def add_deletion(cands: list[tuple[int, int, str, str]], text: str, a: int, b: int, old: str) -> None:
    """Append to ``cands`` (:func:`pick_edit`'s ``(start, end, new, old)``) the edit deleting ``text[a:b]`` and the
    space after it (:func:`~radaudit.perturb.textops.delete_word`); nothing when no word follows it."""
    e = delete_word(text, a, b)
    if e is not None:
        cands.append((*e, old))


def pick_deletion(text: str, rng: random.Random, matches: list[re.Match[str]],
                  explain: Callable[[str], str]) -> Rewrite | None:
    """Delete one of ``matches`` (chosen by ``rng`` in their order) with :func:`delete_edit`, explained by
    ``explain(matched text)``; ``None`` when there is none (or no word follows it)."""
    m = pick(rng, matches)
    if m is None:
        return None
    return delete_edit(text, m.start(), m.end(), explain(m.group(0)))


def add_to_np(text: str, rng: random.Random, findings: list[re.Match[str]], word: str | Callable[[re.Match[str]], str],
              explanation: str) -> Rewrite | None:
    """Add ``word`` to the noun phrase of one of the ``findings`` (noun matches, chosen by ``rng`` in their order;
    :func:`~radaudit.perturb.textops.insert_at_np`). ``word`` may be a function of the chosen match (called after the
    choice); ``explanation`` is formatted with ``word`` and ``finding`` (the noun). ``None`` when there is none."""
    m = pick(rng, findings)
    if m is None:
        return None
    w = word if isinstance(word, str) else word(m)
    a, b, new = insert_at_np(text, m.start(), w)
    return one_edit(text, a, b, new, explanation.format(word=w, finding=m.group(0)))


def append_unstated(text: str, rng: random.Random, additions, explanation: str) -> Rewrite | None:
    """Append after the report's last sentence one of the ``(sentence, pattern)`` ``additions`` whose pattern the
    report does not mention (case-insensitive; chosen by ``rng`` in their order); ``explanation`` is formatted with
    ``new`` (the sentence). ``None`` for an empty report or when the report mentions them all."""
    sents = sentences(text)
    if not sents:
        return None
    new = pick(rng, [s for s, pat in additions if not re.search(pat, text, re.I)])
    if new is None:
        return None
    a, b, ins = sentence_end_insert(text, sents[-1], new)
    return one_edit(text, a, b, ins, explanation.format(new=new))


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


def unqualified_findings(text: str, nouns: str, extract: Callable[[str], list], words) -> list[re.Match[str]]:
    """Asserted findings ``nouns`` (:func:`finding_nps`) whose sentence has nothing ``extract`` finds and whose
    modifiers include none of ``words``: where a rule may add such a qualifier (a change, a hedge)."""
    out = []
    for m, _a, mods in finding_nps(text, nouns):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract(sent.text) or any(w in words for w in mods):
            continue
        out.append(m)
    return out


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
