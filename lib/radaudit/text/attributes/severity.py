"""Severity: degree words on the ordinal scale.

Severity (:func:`extract_severity`) -- ordinal scale :data:`SEVERITY_SCALE`
--------------------------------------------------------------------------
``trace (1) < minimal (2) < mild (3) < moderate (4) < severe (5)``, with the synonym table
:data:`SEVERITY_SYNONYMS`: minimal = minimal(ly)/tiny/slight(ly); mild = mild(ly)/small;
moderate = moderate(ly); severe = severe(ly)/large/marked(ly)/extensive/massive/huge. A range
("small-to-moderate", "mild to moderate", "moderate-severe", "small or moderate", "mild/
moderate", optionally "-sized") is one :class:`Severity` with ``low``/``high`` levels and the
label ``"mild-moderate"``; ``level`` is the mean of the two. "small bowel/intestine/airway(s)/
vessel(s)", "large bowel/intestine/airway(s)/bore" are anatomy, not degrees. Degree words that
modify a change are kept ("slight increase" -> ``minimal``; "marked improvement" ->
``severe``): the degree of the change is still a degree.
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text, overlaps
from radaudit.text.attributes.records import Severity
from radaudit.text.attributes.vocabulary import SEVERITY_SCALE, SEVERITY_SYNONYMS

_LEVEL_LABEL = {v: k for k, v in SEVERITY_SCALE.items()}

_SEV_WORD = "|".join(sorted(SEVERITY_SYNONYMS, key=len, reverse=True))
_NOT_SEVERITY_AFTER = re.compile(
    r"^[\s-]+(?:bowel|intestines?|airways?|vessels?|bore|caliber|calibre)\b", re.IGNORECASE
)
_RE_SEV_RANGE = re.compile(
    rf"\b(?P<a>{_SEV_WORD})(?:\s*(?:-|–|/)\s*|\s+(?:to|or)\s+|-to-)(?P<b>{_SEV_WORD})(?:[- ]sized?)?\b",
    re.IGNORECASE,
)
_RE_SEV = re.compile(rf"\b(?P<w>{_SEV_WORD})(?:[- ]sized?)?\b", re.IGNORECASE)


def extract_severity(text: str) -> list[Severity]:
    """Every degree word in ``text`` on :data:`SEVERITY_SCALE` (rules: this module's docstring).

    >>> [(a.value, a.low, a.high) for a in extract_severity("small-to-moderate right effusion")]
    [('mild-moderate', 3, 4)]
    """
    s = check_text(text)
    out: list[Severity] = []
    taken: list[tuple[int, int]] = []
    for m in _RE_SEV_RANGE.finditer(s):
        la = SEVERITY_SCALE[SEVERITY_SYNONYMS[m.group("a").lower()]]
        lb = SEVERITY_SCALE[SEVERITY_SYNONYMS[m.group("b").lower()]]
        lo, hi = min(la, lb), max(la, lb)
        if lo == hi:
            continue  # "small to tiny" style repetitions: fall back to single words
        label = f"{_LEVEL_LABEL[lo]}-{_LEVEL_LABEL[hi]}"
        out.append(Severity(label, lo, hi, m.group(0).lower(), m.group(0), m.start(), m.end()))
        taken.append(m.span())
    for m in _RE_SEV.finditer(s):
        if overlaps(m.span(), taken) or _NOT_SEVERITY_AFTER.match(s[m.end():]):
            continue
        word = m.group("w").lower()
        label = SEVERITY_SYNONYMS[word]
        lvl = SEVERITY_SCALE[label]
        out.append(Severity(label, lvl, lvl, word, m.group(0), m.start(), m.end()))
    out.sort(key=lambda a: a.start)
    return out

