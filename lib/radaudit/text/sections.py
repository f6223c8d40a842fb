"""Split a free-text radiology report into its sections (FINDINGS, IMPRESSION, INDICATION, ...).

Chest X-ray reports in MIMIC-CXR, IU X-ray / Open-i and CheXpert Plus are written as a series of
sections, each opened by an upper-case header at the start of a line and a colon::

                                     FINAL REPORT
     EXAMINATION:  CHEST (PA AND LAT)
     INDICATION:  ___F with cough
     COMPARISON:  None.
     FINDINGS:  The lungs are clear. ...
     IMPRESSION:  No acute cardiopulmonary process.

:func:`split_sections` finds those headers and returns the text under each one, keyed by a
canonical section name. The header list and the synonym -> canonical mapping follow the
MIMIC-CXR section parser (``MIT-LCP/mimic-code``, ``mimic-iv-cxr/txt/section_parser.py``,
``normalize_section_names``) and NegBio's ``negbio/patterns/section_titles.txt``; the
spelling-error aliases that parser carries (``IMPRESSON``, ``FINDNGS``, ...) are included.

Rules (all documented, all deterministic):

- A header is recognised only at the start of a line (leading spaces and tabs allowed, as in
  MIMIC-CXR, whose report lines start with a space), case-insensitively, and only when it is
  followed by a colon. ``"No pleural effusion. Impression: stable"`` therefore yields no
  ``impression`` section: the header is not at a line start.
- Only the headers in :data:`SECTION_ALIASES` are recognised. An unknown capitalised line such as
  ``"CHEST, PA AND LATERAL:"`` is kept as text of the section it appears in. Pass ``aliases=`` to
  extend or replace the table.
- ``FINAL REPORT`` (with or without a colon) is a banner, not a section: it is removed.
- Text before the first header is returned under ``"preamble"`` (if not empty).
- A section that appears twice (``FINDINGS:`` ... ``FINDINGS:``) is concatenated in order.
- Section text is whitespace-normalised: line breaks and runs of spaces become one space, and the
  ends are stripped (report lines are hard-wrapped at ~70 characters, so line breaks carry no
  meaning). Pass ``normalize_whitespace=False`` to keep the text as written (only stripped).
- Sections whose text is empty are left out of the result.

The function is pure: no I/O, no global state; the text toolkit builds on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["SECTION_ALIASES", "CANONICAL_SECTIONS", "split_sections", "header_pattern"]

#: Header text (lower case, single spaces) -> canonical section name.
SECTION_ALIASES: dict[str, str] = {
    # findings
    "findings": "findings",
    "finding": "findings",
    "findins": "findings",
    "findindgs": "findings",
    "findgings": "findings",
    "findngs": "findings",
    "findnings": "findings",
    "finidngs": "findings",
    "finsings": "findings",
    "reference findings": "findings",
    # impression (MIMIC's parser maps the combined "findings and impression" section here)
    "impression": "impression",
    "impressions": "impression",
    "conclusion": "impression",
    "conclusions": "impression",
    "findings and impression": "impression",
    "findings/impression": "impression",
    "findings / impression": "impression",
    "findings/ impression": "impression",
    "impresson": "impression",
    "imprression": "impression",
    "imoression": "impression",
    "impressoin": "impression",
    "imprssion": "impression",
    "impresion": "impression",
    "imperssion": "impression",
    "impession": "impression",
    # indication / reason for the exam
    "indication": "indication",
    "indications": "indication",
    "clinical indication": "indication",
    "clinic indication": "indication",
    "reason for exam": "indication",
    "reason for the exam": "indication",
    "reason for examination": "indication",
    "reason for this examination": "indication",
    "reason for study": "indication",
    "idication": "indication",
    # clinical history
    "history": "history",
    "clinical history": "history",
    "clinical information": "history",
    "patient history": "history",
    "medical history": "history",
    "history of present illness": "history",
    "medical condition": "history",
    # comparison
    "comparison": "comparison",
    "comparisons": "comparison",
    "comparison exam": "comparison",
    "comparison exams": "comparison",
    "comparison film": "comparison",
    "comparison films": "comparison",
    "comparison study": "comparison",
    "comparison studies": "comparison",
    "reference exam": "comparison",
    "comparision": "comparison",
    "comparsion": "comparison",
    "comparrison": "comparison",
    "comparisions": "comparison",
    # technique / examination
    "technique": "technique",
    "examination": "examination",
    "exam": "examination",
    "type of examination": "examination",
    "type of exam": "examination",
    # others kept by the MIMIC parser
    "recommendation": "recommendations",
    "recommendations": "recommendations",
    "recommendation(s)": "recommendations",
    "notification": "notification",
    "notifications": "notification",
    "addendum": "addendum",
    "wet read": "wet read",
    "wetread": "wet read",
    "comment": "comment",
    "comments": "comment",
}

#: The canonical names :func:`split_sections` can return (plus ``"preamble"``).
CANONICAL_SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(SECTION_ALIASES.values()))

_BANNER = re.compile(r"^[ \t]*FINAL REPORT[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _alias_regex(alias: str) -> str:
    # "reason for exam" matches "REASON FOR EXAM" and "REASON  FOR   EXAM"
    return r"[ \t]+".join(re.escape(word) for word in alias.split())


def header_pattern(aliases: Mapping[str, str] = SECTION_ALIASES) -> re.Pattern[str]:
    """The compiled header regex for ``aliases`` (longest alias first, so ``CLINICAL HISTORY``
    wins over ``HISTORY``). Group ``name`` holds the header as written."""
    keys = sorted({" ".join(k.lower().split()) for k in aliases}, key=len, reverse=True)
    alternation = "|".join(_alias_regex(k) for k in keys)
    return re.compile(rf"^[ \t]*(?P<name>{alternation})[ \t]*:", re.IGNORECASE | re.MULTILINE)


_DEFAULT_PATTERN = header_pattern(SECTION_ALIASES)


def _clean(text: str, normalize_whitespace: bool) -> str:
    if normalize_whitespace:
        return " ".join(text.split())
    return text.strip()


def split_sections(
    text: str | None,
    *,
    aliases: Mapping[str, str] | None = None,
    normalize_whitespace: bool = True,
) -> dict[str, str]:
    """Return ``{canonical section name: text}`` for the sections found in ``text``, in order.

    See the module docstring for the rules. ``None``/NaN/empty input gives ``{}``.

    >>> split_sections("FINDINGS: Clear lungs.\\n IMPRESSION:  No acute process.")
    {'findings': 'Clear lungs.', 'impression': 'No acute process.'}
    >>> split_sections("INDICATION: cough\\nCLINICAL HISTORY: smoker\\nComparison: none")
    {'indication': 'cough', 'history': 'smoker', 'comparison': 'none'}
    """
    if text is None or not isinstance(text, str) or not text.strip():
        return {}
    if aliases is None:
        table, pattern = SECTION_ALIASES, _DEFAULT_PATTERN
    else:
        table = {" ".join(k.lower().split()): v for k, v in aliases.items()}
        pattern = header_pattern(table)
    text = _BANNER.sub("", text)

    parts: list[tuple[str, str]] = []
    matches = list(pattern.finditer(text))
    start = 0
    current = "preamble"
    for m in matches:
        parts.append((current, text[start:m.start()]))
        current = table[" ".join(m.group("name").lower().split())]
        start = m.end()
    parts.append((current, text[start:]))

    out: dict[str, list[str]] = {}
    for name, chunk in parts:
        cleaned = _clean(chunk, normalize_whitespace)
        if cleaned:
            out.setdefault(name, []).append(cleaned)
    sep = " " if normalize_whitespace else "\n"
    return {name: sep.join(chunks) for name, chunks in out.items()}
