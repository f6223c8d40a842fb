"""Quantity: single, multiple and stated counts.

Quantity (:func:`extract_quantity`)
-----------------------------------
``value`` is ``"single"`` or ``"multiple"``, ``count`` the integer when stated:
single/solitary/one -> 1; the articles a/an -> 1 with ``explicit=False`` (leave them out with
``articles=False``); two ... twenty and digits 1-99 followed by a word (not a unit, ordinal,
time or range: "2 leads" yes; "2 cm", "7th", "1 to 2 cm", "12:30" no) -> that count;
multiple/several/numerous/many/innumerable/various/few/"a few"/"a couple (of)" -> multiple
without a count. "single" (or an article) before view/image/film/radiograph/projection/exam
(within four words: "SINGLE AP PORTABLE SEMIUPRIGHT FRONTAL VIEW") describes the study, not a
finding, and is skipped.
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text
from radaudit.text.attributes.records import Quantity

_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}
_RE_QTY = re.compile(
    r"(?P<multi>\ba\s+few\b|\ba\s+couple(?:\s+of)?\b|\b(?:multiple|several|numerous|many|innumerable|various|few)\b)"
    r"|(?P<single>\b(?:single|solitary|one)\b)"
    rf"|(?P<word>\b(?:{'|'.join(_NUMBER_WORDS)})\b)"
    r"|(?P<digit>(?<![\w.,/:\-])[1-9]\d?(?![\w.,/:%\-])(?=\s+[a-z]))"
    r"|(?P<art>\ban?\b)",
    re.IGNORECASE,
)
_NOT_COUNT_AFTER = re.compile(
    r"^\s*(?:x\b|×|cm\b|mm\b|centimet|millimet|th\b|st\b|nd\b|rd\b|hours?\b|hrs?\b|h\b|days?\b|weeks?\b|wks?\b|"
    r"months?\b|years?\b|yrs?\b|y/?o\b|am\b|pm\b|a\.m|p\.m|o'clock|minutes?\b|mins?\b|seconds?\b|percent|%|"
    r"(?:to|-|or|and)\s*\d)",
    re.IGNORECASE,
)
_SINGLE_STUDY = re.compile(
    r"^(?:[\s-]+[\w-]+){0,4}?[\s-]+(?:views?|images?|films?|radiographs?|projections?|exams?|examinations?|studies|study)\b",
    re.IGNORECASE,
)


def extract_quantity(text: str, *, articles: bool = True) -> list[Quantity]:
    """Every count word in ``text`` (rules: this module's docstring).

    >>> [(a.value, a.count) for a in extract_quantity("There are 2 right upper lobe lung nodules", articles=False)]
    [('multiple', 2)]
    """
    s = check_text(text)
    out: list[Quantity] = []
    for m in _RE_QTY.finditer(s):
        g = m.group(0)
        if m.group("multi"):
            out.append(Quantity("multiple", None, True, g, m.start(), m.end()))
        elif m.group("single"):
            if _SINGLE_STUDY.match(s[m.end():]):
                continue
            out.append(Quantity("single", 1, True, g, m.start(), m.end()))
        elif m.group("word"):
            if _NOT_COUNT_AFTER.match(s[m.end():]):
                continue
            out.append(Quantity("multiple", _NUMBER_WORDS[g.lower()], True, g, m.start(), m.end()))
        elif m.group("digit"):
            if _NOT_COUNT_AFTER.match(s[m.end():]):
                continue
            n = int(g)
            out.append(Quantity("single" if n == 1 else "multiple", n, True, g, m.start(), m.end()))
        elif articles:
            if _SINGLE_STUDY.match(s[m.end():]):
                continue
            out.append(Quantity("single", 1, False, g, m.start(), m.end()))
    return out

