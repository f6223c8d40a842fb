"""What the attribute extractors share: the input check, span overlap, first-pattern-wins matching, and side-word
normalisation."""

from __future__ import annotations

import re
from collections.abc import Sequence


def check_text(text: object) -> str:
    """``text`` itself when it is a ``str``; ``TypeError`` saying what to pass for ``None`` or any other type."""
    if text is None:
        raise TypeError(
            "attribute extraction needs report text as a str, got None: drop missing reports "
            "first, or pass '' for an empty one"
        )
    if not isinstance(text, str):
        raise TypeError(
            f"attribute extraction needs report text as a str, got {type(text).__name__} "
            f"({text!r:.40}): convert it with str() or drop missing values (NaN) first"
        )
    return text


def overlaps(a: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Whether the span ``a`` overlaps any of the spans in ``taken`` (end-exclusive)."""
    return any(a[0] < e and s < a[1] for s, e in taken)


def first_matches(s: str, patterns: Sequence[tuple[str, re.Pattern[str]]], pos: int = 0,
                  endpos: int | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, value)`` of every match of the ``(value, compiled pattern)`` list in ``s[pos:endpos]``, sorted by
    ``start``: the patterns are tried in their order, and a match that overlaps one kept before (:func:`overlaps`) is
    dropped, so an earlier pattern wins a contested span. The matched text is ``s[start:end]``."""
    hits: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for value, rx in patterns:
        for m in rx.finditer(s, pos, len(s) if endpos is None else endpos):
            if overlaps(m.span(), taken):
                continue
            hits.append((m.start(), m.end(), value))
            taken.append(m.span())
    hits.sort(key=lambda h: h[0])
    return hits


def side_norm(word: str) -> str:
    """A side word as a laterality value: ``L``/``left`` -> ``left``, ``R``/``right`` -> ``right`` (any case), any
    other (bilateral, both) -> ``bilateral``."""
    w = word.lower()
    if w in ("l", "left"):
        return "left"
    if w in ("r", "right"):
        return "right"
    return "bilateral"

