"""Is a report written in English? A small, documented heuristic for counting, never for dropping.

The rule-based tools of this lab (the CheXpert-style labeler, the CheXpert-label F1 metrics, the
rule-based AtomiMed decomposer) read English phrase lists: a report in another language has no
mention for them, so it comes out "all blank" (the labeler then says No Finding = 1). That result
is kept (it is what the reference tools do too), but it is *counted* (``n_non_english``) and
warned about, so a French or German candidate is never scored silently as a normal English study.

:func:`looks_non_english` decides per text, with no model and no dependency (no language-ID
package ships offline here and the decision only needs "English or not"):

- a text whose letters are mostly outside ``a-z`` (Cyrillic, Greek, CJK, Arabic, ...) is not English;
- otherwise it counts *foreign cue words*: function words of French, German, Spanish, Italian,
  Portuguese and Dutch that are not English words (``le``, ``les``, ``est``, ``pas``, ``der``,
  ``und``, ``kein``, ``nicht``, ``los``, ``sin``, ``della``, ``não``, ``geen``, ...; see
  :data:`FOREIGN_CUES`; short English look-alikes such as ``a``, ``no``, ``die``, ``do``, ``la``
  (left atrium), ``in``, ``am`` are left out) plus words carrying a diacritic (``é``, ``ü``, ...),
  and English cue words (:data:`ENGLISH_CUES`: ``the``, ``is``, ``of``, ``with``, ``no``, ...).
  The text is not English when it has at least 2 foreign cues and more foreign than English cues.

Empty or whitespace-only text is not "non-English" (it is counted as empty where that matters).
Checked on the public English corpora of the data root (IU X-ray, CheXpert Plus valid, RadPref):
no report is flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ENGLISH_CUES", "FOREIGN_CUES", "count_non_english", "looks_non_english"]

#: Common English function words (and a few report words) that count for English.
ENGLISH_CUES: frozenset[str] = frozenset(
    "the is are was were be been of and or with without no not there this that these those to for from on at by as "
    "an it its which has have seen identified evidence normal clear size heart lungs lung stable unchanged right left "
    "mild small large acute chest".split()
)

#: Function words of other European languages that are not English words (module docstring).
FOREIGN_CUES: frozenset[str] = frozenset(
    # French
    "le les des du une est sont pas et avec sans dans sur aucun aucune ni au aux pour par cette ce qui taille "
    "poumons coeur droit droite gauche bilatéral "
    # German
    "der das und ist sind nicht kein keine keinen mit ohne ein eine einer beidseits herz lunge links rechts "
    "unauffällig regelrecht "
    # Spanish / Portuguese / Italian
    "el los las con sin del y es una por sem não da dos il della delle di degli senza polmoni "
    # Dutch
    "het een geen niet en van zijn".split()
)

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def looks_non_english(text: str) -> bool:
    """True when ``text`` is most likely not written in English (rules: module docstring)."""
    if not isinstance(text, str):
        return False
    words = _WORD.findall(text.lower())
    if not words:
        return False
    letters = "".join(words)
    ascii_letters = sum(1 for ch in letters if "a" <= ch <= "z")
    if ascii_letters < 0.5 * len(letters):
        return True
    foreign = sum(1 for w in words if w in FOREIGN_CUES or not w.isascii())
    english = sum(1 for w in words if w in ENGLISH_CUES)
    return foreign >= 2 and foreign > english


def count_non_english(texts: Iterable[str]) -> int:
    """How many of ``texts`` :func:`looks_non_english`."""
    return sum(1 for t in texts if looks_non_english(t))
