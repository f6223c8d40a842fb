"""Small text helpers the rewrite rules share: where a mention sits, whether it is asserted, case.

All pure functions over a report string and character offsets; they build on
:func:`radaudit.text.sections.sentences` and :func:`radaudit.text.negation.classify_mention`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import TypeVar

from radaudit.text.negation import classify_mention
from radaudit.text.sections import Sentence, sentences

__all__ = [
    "FINDING_NOUN", "CRITICAL_NOUN", "fix_article", "sentence_at", "status_at", "is_positive", "is_upper_context",
    "match_case", "styled", "pick", "find_all", "np_start", "delete_word", "insert_at_np", "sentence_end_insert",
    "is_plural_before",
]

T = TypeVar("T")

#: Finding nouns the rules edit (lower case, whole words).
FINDING_NOUN = (
    r"effusions?|pneumothorax|pneumothoraces|consolidations?|atelectasis|opacit(?:y|ies)|infiltrates?|nodules?|"
    r"mass(?:es)?|edema|cardiomegaly|pneumonia|granulomas?|scarring|scars?|lesions?|densit(?:y|ies)|emphysema|"
    r"thickening|airspace\s+disease"
)
#: Findings whose presence or absence changes acute management (pertinent findings on a chest X-ray).
CRITICAL_NOUN = r"pneumothorax|pneumothoraces|effusions?|consolidations?|edema|pneumonia|mass(?:es)?|nodules?"

#: Words that may stand inside a finding's noun phrase before the noun ("small left pleural effusion").
_NP_MODS = frozenset("""
left right bilateral bibasilar basilar basal biapical apical lower upper middle mid lobe lung lungs pleural pulmonary
focal patchy airspace interstitial alveolar retrocardiac perihilar lingular streaky linear subsegmental plate-like
platelike small tiny mild minimal moderate large severe trace slight marked extensive mildly moderately severely
left-sided right-sided calcified noncalcified non-calcified nodular reticular hazy faint subtle ill-defined
well-defined irregular spiculated round rounded dense discoid bandlike new stable persistent chronic
increasing worsening improving decreasing enlarging residual scattered multiple several few diffuse coarse
granulomatous parenchymal pleural-based apex base basilar bases upper-lobe lower-lobe lobar segmental
cardiac hilar paratracheal mediastinal possible probable questionable likely suspected midline median borderline
""".split())

_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
_SIZE_TOKEN = re.compile(r"(?i)\d+(?:\.\d+)?(?:-?(?:mm|cm))?|x|mm|cm")
_ARTICLE_BEFORE = re.compile(r"(?i)\b(an?)\s+$")
_VOWEL_SOUND = re.compile(r"(?i)^(?:[aeio]|u(?!ni|s[aeiu])|8|11|18|x-?ray|hour|mri\b|ct\b)")


def sentence_at(text: str, start: int, end: int) -> Sentence | None:
    """The sentence (:func:`~radaudit.text.sections.sentences`) that contains ``[start, end)``, or None."""
    for s in sentences(text):
        if s.start <= start and end <= s.end:
            return s
    return None


def status_at(text: str, start: int, end: int) -> str | None:
    """``positive``/``negative``/``uncertain`` of the mention ``text[start:end]`` in its sentence
    (:func:`~radaudit.text.negation.classify_mention`); None when it crosses a sentence boundary."""
    s = sentence_at(text, start, end)
    if s is None or end <= start:
        return None
    return classify_mention(s.text, (start - s.start, end - s.start))


_NEG_BEFORE = re.compile(r"(?i)\b(?:no|not|without|nor)\s+(?:[\w-]+\s+){0,2}$")


def is_positive(text: str, start: int, end: int) -> bool:
    """Asserted: the negation module says positive, and no "no"/"not"/"without" stands within two
    words before (a cue such as "no focal areas of" contains its own modifiers)."""
    if _NEG_BEFORE.search(text[max(0, start - 40):start]):
        return False
    return status_at(text, start, end) == "positive"


def is_upper_context(text: str, pos: int) -> bool:
    """Whether the sentence around ``pos`` is written in capitals (CheXpert Plus impressions)."""
    lo = max(0, pos - 60)
    letters = [c for c in text[lo:pos + 60] if c.isalpha()]
    return len(letters) >= 8 and sum(c.isupper() for c in letters) / len(letters) > 0.8


def match_case(src: str, repl: str) -> str:
    """``repl`` written in the case of ``src`` (ALL CAPS, Capitalised or as given)."""
    letters = [c for c in src if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return repl.upper()
    if src[:1].isupper():
        return repl[:1].upper() + repl[1:]
    return repl


def styled(text: str, pos: int, new: str) -> str:
    """``new`` upper-cased when the text around ``pos`` is upper case."""
    return new.upper() if is_upper_context(text, pos) else new


def pick(rng: random.Random, items: Sequence[T]) -> T | None:
    """One item chosen by ``rng`` (``None`` for no items); items must be in a deterministic order."""
    return items[rng.randrange(len(items))] if items else None


def find_all(text: str, pattern: str, flags: int = re.IGNORECASE) -> list[re.Match[str]]:
    """Every match of ``pattern`` in ``text`` (case-insensitive by default)."""
    return list(re.finditer(pattern, text, flags))


def np_start(text: str, pos: int) -> tuple[int, list[str]]:
    """Start of the noun phrase whose head noun starts at ``pos``: walk back over the modifier
    words of :data:`_NP_MODS` (not across punctuation). Returns the start and the modifiers."""
    start = pos
    mods: list[str] = []
    while True:
        m = re.search(r"([A-Za-z][A-Za-z-]*|\d+(?:\.\d+)?(?:-?(?:mm|cm))?|x)\s+$", text[max(0, start - 40):start])
        if not m:
            break
        word = m.group(1)
        if word.lower() not in _NP_MODS and not _SIZE_TOKEN.fullmatch(word):
            break
        start = start - len(m.group(0))
        mods.insert(0, word.lower())
    return start, mods


def fix_article(text: str, a: int, b: int, new: str) -> tuple[int, int, str]:
    """Widen the edit ``(a, b, new)`` to the article right before it when the word that now follows
    the article needs the other one ("a" + "8mm" -> "an 8mm"; "an" + "nodule" -> "a nodule")."""
    m = _ARTICLE_BEFORE.search(text[max(0, a - 5):a])
    if not m:
        return a, b, new
    following = (new + text[b:]).lstrip()
    if not following or not following[0].isalnum():
        return a, b, new
    want = "an" if _VOWEL_SOUND.match(following) else "a"
    art = m.group(1)
    if art.lower() == want:
        return a, b, new
    start = max(0, a - 5) + m.start(1)
    return start, b, match_case(art, want) + text[start + len(art):a] + new


def at_sentence_start(text: str, pos: int) -> bool:
    s = sentence_at(text, pos, pos + 1) if pos < len(text) else None
    return s is not None and s.start == pos


def delete_word(text: str, start: int, end: int) -> tuple[int, int, str] | None:
    """An edit ``(a, b, new)`` that deletes ``text[start:end]`` and the space after it; at a
    sentence start the next word takes the capital. None when no word follows."""
    m = re.match(r"[\s-]+", text[end:])
    if not m:
        return None
    b = end + m.end()
    nxt = _WORD.match(text, b)
    if nxt is None:
        return None
    if at_sentence_start(text, start) or text[start:start + 1].isupper() and not text[start:end].isupper():
        word = nxt.group(0)
        new_word = word if word.isupper() else word[:1].upper() + word[1:]
        return start, nxt.end(), new_word
    return start, b, ""


def insert_at_np(text: str, noun_pos: int, word: str) -> tuple[int, int, str]:
    """An edit that inserts ``word`` before the noun phrase whose noun starts at ``noun_pos``,
    keeping sentence case ("Left pleural effusion" -> "Large left pleural effusion")."""
    a, _ = np_start(text, noun_pos)
    first = _WORD.match(text, a)
    first_word = first.group(0) if first else ""
    if is_upper_context(text, a):
        return a, a, word.upper() + " "
    if at_sentence_start(text, a) and first_word[:1].isupper() and not first_word.isupper():
        return a, a + len(first_word), word[:1].upper() + word[1:] + " " + first_word[:1].lower() + first_word[1:]
    return a, a, word + " "


def sentence_end_insert(text: str, sent: Sentence, new_sentence: str) -> tuple[int, int, str]:
    """An edit that inserts ``new_sentence`` right after ``sent`` (one space before it)."""
    return sent.end, sent.end, " " + styled(text, sent.start, new_sentence)


def is_plural_before(text: str, pos: int) -> bool:
    """Whether the last word before ``pos`` looks plural ("opacities may" -> True; "effusion" and
    "atelectasis" -> False): a crude agreement test for verb rewrites."""
    m = re.search(r"([A-Za-z]+)\W*$", text[max(0, pos - 40):pos])
    if not m:
        return False
    w = m.group(1).lower()
    return w.endswith("s") and not w.endswith(("ss", "sis", "us", "xis", "is"))
