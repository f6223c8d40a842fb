"""Certainty: hedge words (their scope belongs to :mod:`radaudit.text.negation`).

Certainty (:func:`extract_certainty`) -- hedge words, scope owned by :mod:`radaudit.text.negation`
------------------------------------------------------------------------------------------------
``probable``: likely/most likely, probable/probably, suspect(ed), suspicious (for/of),
suggest(s/ed/ive/ing) (of/for), concerning/worrisome for, presumed/presumably/presumptive,
favor(ed)/favour. ``possible``: possible/possibly/possibility, questionable/question of,
cannot/can not (be) excluded/ruled out, "not excluded", may/might/could (also) represent/
reflect/be/indicate/relate/correspond/include, equivocal, perhaps, uncertain, indeterminate,
versus/vs, "differential (diagnosis) includes". "unlikely" is not "likely" (whole words).
A bare "consistent with"/"compatible with" asserts; the CheXpert labeler's post-negation
uncertainty patterns make them uncertain only after a modal ("may be consistent with"), which
the may/could rule above catches.
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text, first_matches
from radaudit.text.attributes.records import Certainty

#: (value, pattern) in the order they are tried; a later match overlapping an earlier one is dropped.
CERTAINTY_PATTERNS: list[tuple[str, str]] = [
    ("possible", r"\b(?:cannot|can\s+not|could\s+not)\s+(?:be\s+)?(?:entirely\s+|completely\s+|definitely\s+|totally\s+)?"
     r"(?:excluded?|ruled?\s+out|rule\s+out)\b"),
    ("possible", r"\bnot\s+(?:be\s+)?(?:entirely\s+|completely\s+)?excluded\b"),
    ("possible", r"\b(?:may|might|could)\s+(?:also\s+)?"
     r"(?:represent|reflect|be|indicate|relate|correspond|include|have|suggest)\b"),
    ("possible", r"\bpossib(?:le|ly|ility)\b|\bquestionabl[ey]\b|\bquestion\s+of\b|\bequivocal\b|\bperhaps\b|"
     r"\buncertain\b|\bindeterminate\b"),
    ("possible", r"\bversus\b|\bvs\b\.?|\bdifferential\s+(?:diagnosis\s+)?(?:includes?|considerations?)\b"),
    ("probable", r"\b(?:most\s+)?likely\b|\bprobabl[ey]\b|\bsuspect(?:ed|s)?\b|\bsuspicious(?:\s+(?:for|of))?\b"),
    ("probable", r"\bsuggest(?:s|ed|ive|ing)?(?:\s+(?:of|for))?\b|\b(?:concerning|worrisome)\s+for\b|"
     r"\bpresum(?:ed|ably|ptive)\b|\bfavou?r(?:ed|s)?\b"),
]
_RE_CERTAINTY = [(v, re.compile(p, re.IGNORECASE)) for v, p in CERTAINTY_PATTERNS]


def extract_certainty(text: str) -> list[Certainty]:
    """Every hedge in ``text`` (rules: this module's docstring); scope is the negation module's.

    >>> [(a.value, a.text) for a in extract_certainty("Opacity, likely atelectasis; pneumonia cannot be excluded.")]
    [('probable', 'likely'), ('possible', 'cannot be excluded')]
    """
    s = check_text(text)
    return [Certainty(value, s[a:b], a, b) for a, b, value in first_matches(s, _RE_CERTAINTY)]

