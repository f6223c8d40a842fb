"""Laterality: which side a mention names.

Laterality (:func:`extract_laterality`) -- ``left | right | bilateral``
---------------------------------------------------------------------
- ``left``/``right`` as whole words, with ``-sided``/`` sided`` included in the span
  ("left-sided"); "bright", "rightward", "leftover" are not words ``left``/``right``.
- ``left`` used as a verb is not a side: after was/were/be/been/being/had/get/got ("a message
  was left", "the drain was left in place"), or before over/behind/alone/untreated/in place/in
  situ ("left over"). "There is left basilar scarring" keeps its side: "is"/"has" are not
  verb markers.
- ``bilateral``: "bilateral(ly)", "bilat", "b/l", the prefixes "bibasilar", "bibasal",
  "biapical", "bihilar", and "both" only before a paired structure ("both lungs", "both lung
  bases", "both hemithoraces"; not "both PA and lateral views").
- Single letters ``L``/``R`` only in upper case and only before a short list of anatomy and
  device words ("L base", "R IJ", "L PICC", "R lung", "R>L"), never alone.
- The side of *anatomy* is reported as written: "right heart border", "right atrium", "right
  upper quadrant" give ``right`` even though the heart is a midline organ and a catheter tip in
  the right atrium says nothing about which side the line was placed. Consumers that want the
  side of a finding combine this with :class:`Location` and :class:`Device` (which carry their
  own ``side``).
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text
from radaudit.text.attributes.records import Laterality

_PAIRED = (
    r"lungs?|lung\s+(?:bases|apices|fields|zones)|bases|apices|hila|hilar|hemithora(?:ces|x)|"
    r"hemidiaphragms?|sides|costophrenic|cp|upper|lower|mid|pleural|axillae|shoulders|breasts|"
    r"clavicles|kidneys|lobes|lung\s+fields"
)
_ABBR_NEXT = (
    r"base|bases|apex|lung|chest|IJ|PICC|hilum|hilar|hemithorax|hemidiaphragm|pleural|effusion|"
    r"CP|costophrenic|upper|lower|middle|mid|subclavian|internal|arm|shoulder|breast|axilla|sided|"
    r"ptx|pneumothorax"
)
_RE_LAT = re.compile(
    rf"(?P<bi>\b(?:bilateral(?:ly)?|bilat|bi(?:basilar|basal|apical|hilar))\b|(?<![\w/])b/l\b"
    rf"|\bboth(?=\s+(?:of\s+the\s+)?(?:{_PAIRED})\b))"
    r"|(?P<side>\b(?:left|right)(?:[- ]sided\b)?)\b"
    rf"|(?P<abbr>\b(?-i:[LR])(?=[ -](?:{_ABBR_NEXT})\b|\s*[<>]\s*(?-i:[LR])\b)"
    rf"|(?<=[<>])(?-i:[LR])\b|(?<=[<>]\s)(?-i:[LR])\b)",
    re.IGNORECASE,
)
_RE_LEFT_VERB_BEFORE = re.compile(r"\b(?:was|were|be|been|being|had|get|got)\s+$", re.IGNORECASE)
_RE_LEFT_VERB_AFTER = re.compile(r"^\s+(?:over|behind|alone|untreated|in\s+place|in\s+situ)\b", re.IGNORECASE)


def extract_laterality(text: str) -> list[Laterality]:
    """Every side mention in ``text`` (rules: this module's docstring).

    >>> [a.value for a in extract_laterality("Bibasilar atelectasis, right greater than left.")]
    ['bilateral', 'right', 'left']
    """
    s = check_text(text)
    out: list[Laterality] = []
    for m in _RE_LAT.finditer(s):
        if m.group("bi"):
            value = "bilateral"
        elif m.group("side"):
            word = m.group("side")[:4].lower()
            value = "left" if word == "left" else "right"
            if value == "left" and not m.group("side")[4:]:
                if (_RE_LEFT_VERB_BEFORE.search(s[max(0, m.start() - 12): m.start()])
                        or _RE_LEFT_VERB_AFTER.match(s[m.end():])):
                    continue
        else:
            value = "left" if m.group("abbr") == "L" else "right"
        out.append(Laterality(value, m.group(0), m.start(), m.end()))
    return out

