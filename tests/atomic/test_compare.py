"""Attribute comparators (radaudit.atomic.compare)."""

from __future__ import annotations

import pytest

from radaudit.atomic.compare import location_key, values_match
from radaudit.errors import ParamsError


@pytest.mark.parametrize("facet, expected, found, ok", [
    ("location", "left lower lobe", "left base", True),       # same side, same (lower) family
    ("location", "left", "right", False),                      # laterality swap
    ("location", "left lower lobe", "left", False),            # region omitted: not confirmed
    ("location", "left", "left lower lobe", True),             # found may say more
    ("location", "bilateral", "left and right", True),
    ("location", "right, tip: lower svc", "right, tip: mid svc", True),  # SVC segments are one family
    ("location", "tip: lower svc", "tip: right atrium", False),
    ("size", "5 mm", "0.5 cm", True),
    ("size", "2 cm", "3 cm", False),
    ("size", "10 mm", "10.9 mm", True),                         # within max(1 mm, 10%)
    ("severity", "small", "mild", True),
    ("severity", "small", "large", False),
    ("severity", "mild to moderate", "moderate", True),
    ("quantity", "two", "2", True),
    ("quantity", "multiple", "single", False),
    ("temporal", "unchanged", "persistent", True),
    ("temporal", "increased", "decreased", False),
    ("morphology", "calcified", "calcific", True),
    ("morphology", "patchy", "linear", False),
    ("morphology", "peculiar", "peculiar", True),               # not in the vocabulary: fuzzy fallback
    ("location", "left lower lobe", "not mentioned", False),
    ("size", "5 mm", None, False),
])
def test_values_match(facet, expected, found, ok):
    assert values_match(facet, expected, found) is ok


def test_location_key_and_unknown_facet():
    assert location_key("left lower lobe") == (frozenset({"left"}), frozenset({"lower"}))
    with pytest.raises(ParamsError, match="attribute"):
        values_match("colour", "red", "red")
