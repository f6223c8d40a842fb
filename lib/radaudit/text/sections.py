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

One-line reports (``inline=True``)
----------------------------------
Open-i/IU X-ray exports, ReXrank's JSON and many generated reports put every section on one line:
``"Findings: Normal cardiomediastinal silhouette. ... Impression: There is no radiographic
evidence of acute cardiopulmonary disease."`` (ReXrank IU X-ray test set, ``CXR3030_IM-1405``).
With ``inline=True`` a header is also recognised in the middle of a line when

- it is not glued to a preceding letter (it follows the start of the text, a space, a digit or
  punctuation such as ``.``/``;``: ``"Gender:F.Indication: ..."``), or
- it is written capitalised right after a lower-case letter or digit, as in ReXrank's CheXpert
  Plus context field ``"Age:49.0.Gender:F.Indication:nanComparison: None."`` (``nan`` +
  ``Comparison:``), where the export glued two fields together;

and it is followed by a colon. Everything else (known headers only, longest alias first,
concatenation, whitespace normalisation) is as above. ``inline`` is off by default because a
header word followed by a colon can occur inside a sentence ("no acute findings: ..."); turn it on
for text known to be one-line (:func:`split_inline_sections` is a shorthand).

CheXpert Plus headers (upper case at a line start: ``NARRATIVE:``, ``CLINICAL HISTORY:``,
``PROCEDURE COMMENTS:``, ``END OF IMPRESSION:``, ``SUMMARY:``, ``ACCESSION NUMBER:``) are in
:data:`SECTION_ALIASES` under their own canonical names (the ``section_*`` columns of
``df_chexpert_plus_240401.csv``).

Sentences (:func:`sentences`)
-----------------------------
:func:`sentences` splits a section (or any report text) into :class:`Sentence` objects that carry
their character span in the input, so that a mention found in a sentence can be traced back to
the report. Rules, in order:

1. A run of ``.``, ``!`` or ``?`` ends a sentence when it is followed by whitespace or the end of
   the text, or glued to a capitalised word (``"effusion.The"``, a typo frequent in IU X-ray),
   except:

   - a period inside a number is never a boundary ("3.5 cm", "1.7 cm nodular opacity");
   - a period after an abbreviation in :data:`ABBREVIATIONS` ("approx.", "Dr.", "vs.", "e.g.",
     "i.e.", "Fig.", "No. 5") does not end a sentence; "etc.", "a.m." and "p.m." end one only
     when the next word is capitalised; "cm." and "mm." DO end sentences (IU reports often end a
     sentence with a measurement: "measuring 2.2 x 1.6 cm. Recommend ...");
   - ``?`` right after a space is an uncertainty mark, not a boundary ("eval ? pneumonia");
   - the period of a list marker is not a boundary (rule 3).
2. A blank line (a line break, optional spaces, a line break) ends a sentence; a single line break
   does not (MIMIC-CXR and CheXpert Plus hard-wrap lines at ~70 characters) unless the next line
   starts with a list marker or a bullet (``-``, ``*``, ``•``).
3. A list marker is one or two digits and ``.`` or ``)`` followed by a space or a capital letter
   (``"1. Stable mild cardiomegaly. 2. Hyperexpanded but clear lungs."``, ``"1.There is"``), at
   the start of the text or a line or after a sentence end or a colon. It is removed from the
   start of the sentence it opens (the span starts after it).
4. Sentences are stripped of surrounding whitespace; empty or punctuation-only pieces are dropped.
   ``None``/NaN/empty input gives ``[]``.

The function is pure: no I/O, no global state; the text toolkit builds on it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "SECTION_ALIASES", "CANONICAL_SECTIONS", "ABBREVIATIONS", "Sentence", "split_sections",
    "split_inline_sections", "header_pattern", "sentences",
]

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
    # CheXpert Plus (df_chexpert_plus_240401.csv section_* columns)
    "narrative": "narrative",
    "procedure comments": "procedure comments",
    "end of impression": "end of impression",
    "summary": "summary",
    "accession number": "accession number",
}

#: The canonical names :func:`split_sections` can return (plus ``"preamble"``).
CANONICAL_SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(SECTION_ALIASES.values()))

_BANNER = re.compile(r"^[ \t]*FINAL REPORT[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _alias_regex(alias: str) -> str:
    # "reason for exam" matches "REASON FOR EXAM" and "REASON  FOR   EXAM"
    return r"[ \t]+".join(re.escape(word) for word in alias.split())


def header_pattern(aliases: Mapping[str, str] = SECTION_ALIASES, *, inline: bool = False) -> re.Pattern[str]:
    """The compiled header regex for ``aliases`` (longest alias first, so ``CLINICAL HISTORY``
    wins over ``HISTORY``). Group ``name`` holds the header as written.

    ``inline=False``: headers at a line start only; ``inline=True``: also mid-line (module docstring).
    """
    keys = sorted({" ".join(k.lower().split()) for k in aliases}, key=len, reverse=True)
    alternation = "|".join(_alias_regex(k) for k in keys)
    if inline:
        # not glued to a preceding letter, or Capitalised right after a lower-case letter/digit
        lead = r"(?:(?<![A-Za-z])|(?-i:(?<=[a-z0-9])(?=[A-Z])))"
        return re.compile(rf"{lead}(?P<name>{alternation})[ \t]*:", re.IGNORECASE)
    return re.compile(rf"^[ \t]*(?P<name>{alternation})[ \t]*:", re.IGNORECASE | re.MULTILINE)


_DEFAULT_PATTERN = header_pattern(SECTION_ALIASES)
_DEFAULT_INLINE_PATTERN = header_pattern(SECTION_ALIASES, inline=True)


def _clean(text: str, normalize_whitespace: bool) -> str:
    if normalize_whitespace:
        return " ".join(text.split())
    return text.strip()


def split_sections(
    text: str | None,
    *,
    aliases: Mapping[str, str] | None = None,
    normalize_whitespace: bool = True,
    inline: bool = False,
) -> dict[str, str]:
    """Return ``{canonical section name: text}`` for the sections found in ``text``, in order.

    See the module docstring for the rules. ``None``/NaN/empty input gives ``{}``. ``inline=True``
    also finds headers in the middle of a line (one-line Open-i/ReXrank text).

    >>> split_sections("FINDINGS: Clear lungs.\\n IMPRESSION:  No acute process.")
    {'findings': 'Clear lungs.', 'impression': 'No acute process.'}
    >>> split_sections("INDICATION: cough\\nCLINICAL HISTORY: smoker\\nComparison: none")
    {'indication': 'cough', 'history': 'smoker', 'comparison': 'none'}
    >>> split_sections("Findings: Lungs are clear. Impression: Normal chest.", inline=True)
    {'findings': 'Lungs are clear.', 'impression': 'Normal chest.'}
    """
    if text is None or not isinstance(text, str) or not text.strip():
        return {}
    if aliases is None:
        table = SECTION_ALIASES
        pattern = _DEFAULT_INLINE_PATTERN if inline else _DEFAULT_PATTERN
    else:
        table = {" ".join(k.lower().split()): v for k, v in aliases.items()}
        pattern = header_pattern(table, inline=inline)
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


def split_inline_sections(text: str | None, **kwargs) -> dict[str, str]:
    """:func:`split_sections` with ``inline=True``: for one-line Open-i/IU/ReXrank style text.

    >>> split_inline_sections("Findings: None. Impression: 1. No acute process.")
    {'findings': 'None.', 'impression': '1. No acute process.'}
    """
    return split_sections(text, inline=True, **kwargs)


# ------------------------------------------------------------------------------------- sentences


@dataclass(frozen=True)
class Sentence:
    """One sentence: its ``text`` and its character span ``[start, end)`` in the input string
    (``input[start:end] == text``)."""

    text: str
    start: int
    end: int

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


#: Abbreviations (lower case, without the final period) after which a period never ends a sentence.
ABBREVIATIONS: frozenset[str] = frozenset({
    "approx", "dr", "drs", "vs", "e.g", "eg", "i.e", "ie", "mr", "mrs", "ms", "fig", "figs", "cf",
    "incl", "resp", "prox", "st", "ca", "no", "nos", "viz", "al",
})
#: Abbreviations that end a sentence only when the next word is capitalised.
_ABBREV_SOFT = frozenset({"etc", "a.m", "p.m", "am", "pm"})

_TERMINATOR = re.compile(r"[.!?]+(?=\s|$|[\"')\]]|[A-Z][a-z])")
_WORD_BEFORE = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]+$")
_LIST_MARKER = re.compile(r"(?<![^\s:])(?P<num>\d{1,2})[.)](?=\s|[A-Z])")
_BULLET = re.compile(r"[-*\u2022](?=\s)")
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_NEWLINE_ITEM = re.compile(r"\n[ \t]*(?=(?:\d{1,2}[.)](?:\s|[A-Z])|[-*\u2022]\s))")
_CONTENT = re.compile(r"[A-Za-z0-9]")


def _marker_context_ok(text: str, start: int) -> bool:
    """A list marker opens the text or a line, or follows a sentence end or a colon."""
    i = start - 1
    while i >= 0 and text[i] in " \t\r":
        i -= 1
    return i < 0 or text[i] in "\n.!?:;"


def _list_markers(text: str) -> dict[int, int]:
    """``{start: end}`` of the list markers in ``text`` (rule 3 of the module docstring)."""
    return {m.start(): m.end() for m in _LIST_MARKER.finditer(text) if _marker_context_ok(text, m.start())}


def _ends_sentence(text: str, m: re.Match[str], marker_periods: set[int]) -> bool:
    start, end = m.span()
    if m.group(0)[0] == "." and start in marker_periods:
        return False
    if m.group(0)[0] == "?" and (start == 0 or text[start - 1].isspace()):
        return False  # "eval ? pneumonia": an uncertainty mark
    if m.group(0).startswith(".") and len(m.group(0)) == 1:
        w = _WORD_BEFORE.search(text, 0, start)
        if w and w.end() == start:
            word = w.group(0).lower()
            nxt = text[end:].lstrip()
            if word in ABBREVIATIONS and word != "no":
                return False
            if word == "no" and nxt[:1].isdigit():
                return False
            if word in _ABBREV_SOFT and not nxt[:1].isupper():
                return False
            if len(word) == 1 and nxt[:1].islower():  # an initial or a one-letter abbreviation
                return False
    return True


def sentences(text: str | None) -> list[Sentence]:
    """Split ``text`` into sentences with character spans (rules in the module docstring).

    >>> [s.text for s in sentences("1. Stable mild cardiomegaly. 2. Hyperexpanded but clear lungs.")]
    ['Stable mild cardiomegaly.', 'Hyperexpanded but clear lungs.']
    >>> [s.text for s in sentences("Nodule measures approx. 3.5 cm. No effusion.")]
    ['Nodule measures approx. 3.5 cm.', 'No effusion.']
    """
    if text is None or not isinstance(text, str) or not text.strip():
        return []
    return list(_sentences(text))


@functools.lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[Sentence, ...]:
    """:func:`sentences` of a non-blank string, memoised: the rule engine, its verifier and the labeler split the
    same report again for every rule, mention and check (30k splits of a few hundred reports in a metaeval run).
    :class:`Sentence` is frozen and the caller gets a new list, so nothing shared can be changed."""
    markers = _list_markers(text)
    marker_periods = {end - 1 for end in markers.values()}
    cuts = {0, len(text)}
    for m in _TERMINATOR.finditer(text):
        if _ends_sentence(text, m, marker_periods):
            cuts.add(m.end())
    for m in _BLANK_LINE.finditer(text):
        cuts.add(m.start())
    for m in _NEWLINE_ITEM.finditer(text):
        cuts.add(m.start())
    for start in markers:  # a marker after a sentence end / line start opens a new sentence
        if _marker_context_ok(text, start) and text[:start].rstrip(" \t\r")[-1:] != ":":
            cuts.add(start)
    out: list[Sentence] = []
    bounds = sorted(cuts)
    for a, b in zip(bounds, bounds[1:]):
        # strip whitespace, then a leading list marker or bullet, then whitespace again
        while a < b and text[a].isspace():
            a += 1
        if a in markers and markers[a] <= b:
            a = markers[a]
        else:
            bm = _BULLET.match(text, a, b)
            if bm:
                a = bm.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b and _CONTENT.search(text, a, b):
            out.append(Sentence(text[a:b], a, b))
    return tuple(out)
