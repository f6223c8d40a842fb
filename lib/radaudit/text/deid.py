"""De-identification placeholders: the tokens datasets put where a name, date or word was removed.

They are not clinical words. Counted as words they become the most "frequent term" of IU X-ray (17,952
``XXXX`` in the shared copy), can look sex-associated (a removed name or date), and inflate vocabularies.
The association metrics (:func:`radaudit.metrics.association.tokenize_for_association`) drop them.

Placeholders recognised (case-insensitive, whole tokens only):

* IU X-ray / Open-i: runs of two or more ``x`` (``XXXX``, ``XXXXXXXX``, ``<XXXX>``): no English or
  clinical word is only x's;
* MIMIC-CXR: runs of underscores (``___``);
* MIMIC-II/III notes: bracketed PHI tags ``[** ... **]`` (``[**Hospital1 18**]``, ``[**2101-3-4**]``);
* angle-bracket tags of upper-case letters, digits and underscores (``<NAME>``, ``<DATE_1>``).
"""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "is_placeholder", "strip_placeholders"]

PLACEHOLDER = re.compile(
    r"\[\*\*.*?\*\*\]"          # MIMIC-II/III PHI tags
    r"|<(?:(?-i:[A-Z][A-Z0-9_]+)|x{2,})>"  # <NAME>, <DATE_1>, <XXXX> (upper-case tags, not <b>)
    r"|(?<![^\W_])x{2,}(?![^\W_])"  # XXXX as a whole token (not the x of "xxiv" or "x-ray")
    r"|_{2,}",                   # MIMIC-CXR ___
    flags=re.IGNORECASE,
)
"""Every placeholder form above; :func:`strip_placeholders` replaces matches with a space."""


def is_placeholder(token: str) -> bool:
    """Whether one token is, as a whole, a de-identification placeholder (``"XXXX"`` yes, ``"xray"`` no)."""
    return PLACEHOLDER.fullmatch(token.strip()) is not None


def strip_placeholders(text: str) -> str:
    """``text`` with every placeholder replaced by a space (offsets of the rest are not kept)."""
    return PLACEHOLDER.sub(" ", text)
