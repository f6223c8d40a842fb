"""First-pattern-wins matching shared by the certainty, temporal and device-tip extractors
(:func:`radaudit.text.attributes.common.first_matches`)."""

from __future__ import annotations

import re

from radaudit.text.attributes.common import first_matches

_PATTERNS = [("long", re.compile(r"cannot be excluded", re.I)), ("short", re.compile(r"excluded|cannot", re.I)),
             ("word", re.compile(r"\bbe\b"))]


def test_an_earlier_pattern_wins_a_contested_span_and_hits_come_by_position():
    s = "Excluded. Effusion cannot be excluded; cannot say."
    # "cannot be excluded" (19..37) is taken by "long": the "short" and "word" matches inside it are dropped
    assert first_matches(s, _PATTERNS) == [(0, 8, "short"), (19, 37, "long"), (39, 45, "short")]
    assert [s[a:b] for a, b, _ in first_matches(s, _PATTERNS)] == ["Excluded", "cannot be excluded", "cannot"]


def test_pos_and_endpos_bound_the_search_as_re_does():
    s = "cannot be excluded, cannot"
    assert first_matches(s, _PATTERNS, 1) == [(7, 9, "word"), (10, 18, "short"), (20, 26, "short")]
    assert first_matches(s, _PATTERNS, 0, 6) == [(0, 6, "short")]
    assert first_matches("", _PATTERNS) == []
