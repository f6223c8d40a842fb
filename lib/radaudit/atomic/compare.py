"""Do two attribute values say the same thing? One comparator per facet of Eq. 2.

Used by the rule-based evidence reader (and by the LLM reader when the model gives no verdict) to
decide whether the answer found in the other report matches the expected answer. Values are short
texts ("left lower lobe", "1.2 cm", "small", "increased"), from either backend; each comparator
re-reads them with the text toolkit (:mod:`radaudit.text.attributes`), so ``"5 mm"`` matches
``"0.5 cm"`` and ``"small"`` matches ``"mild"``. When the toolkit finds nothing to compare in the
*expected* value (free text an LLM wrote, a facet term outside the vocabularies), the comparator
falls back to fuzzy string similarity ≥ ``theta`` (:func:`radaudit.atomic.score.name_similarity`).

Rules (choices: the paper leaves attribute matching to its LLM reader)
---------------------------------------------------------------------
The expected value's content must be confirmed by the found value; the found value may say more.
So an answer that omits part of a fact fails (the asking side's recall or precision drops), and
one that contradicts it fails.

- **location**: sides (``left``/``right``; ``bilateral`` = both) and regions. Regions are grouped
  into families: upper (RUL, LUL, upper lobe, apex, upper zone, suprahilar), middle (RML,
  lingula, mid zone, perihilar, hilum), lower (RLL, LLL, lower lobe, lower zone, base, infrahilar,
  retrocardiac, costophrenic/cardiophrenic angle, subpulmonic); every other zone or device-tip
  location (:data:`~radaudit.text.attributes.TIP_LOCATIONS`) is its own family, except the SVC
  segments and the cavoatrial junction, one family. Match iff the expected side set (when stated)
  equals the found one, and the expected families (when stated) meet the found ones.
- **size**: the largest millimetre value of each (:func:`~radaudit.text.attributes.extract_size`);
  match iff ``|a - b| <= max(1 mm, 10% of the larger)``.
- **severity**: three bands on :data:`~radaudit.text.attributes.SEVERITY_SCALE`: mild (trace,
  minimal, mild, "small"), moderate, severe ("large"); a range covers its bands; match iff the
  band sets meet.
- **quantity**: ``single``/``multiple`` equal, and the counts equal when both state one.
- **temporal**: groups stable (unchanged, persistent), new, increased, decreased, resolved; match
  iff the groups meet.
- **morphology**: the canonical terms of :data:`~radaudit.atomic.lexicon.MORPHOLOGY` meet.
"""

from __future__ import annotations

import functools
import re

from radaudit.atomic.lexicon import morphology_terms
from radaudit.atomic.schema import ATTRIBUTES, NOT_MENTIONED
from radaudit.atomic.score import name_similarity
from radaudit.errors import ParamsError
from radaudit.text.attributes import (
    TIP_LOCATIONS,
    Quantity,
    extract_laterality,
    extract_location,
    extract_quantity,
    extract_severity,
    extract_size,
    extract_temporal,
)

__all__ = ["values_match", "location_key", "REGION_FAMILY", "largest_size_mm", "same_size", "read_quantity"]

REGION_FAMILY: dict[str, str] = {
    **dict.fromkeys(("RUL", "LUL", "upper_lobe", "apex", "upper_zone", "suprahilar"), "upper"),
    **dict.fromkeys(("RML", "lingula", "mid_zone", "perihilar", "hilum"), "middle"),
    **dict.fromkeys(("RLL", "LLL", "lower_lobe", "lower_zone", "base", "infrahilar", "retrocardiac",
                     "costophrenic_angle", "cardiophrenic_angle", "subpulmonic"), "lower"),
    **dict.fromkeys(("svc", "upper_svc", "mid_svc", "lower_svc", "cavoatrial_junction"), "svc"),
}
_SEVERITY_BAND = {1: "mild", 2: "mild", 3: "mild", 4: "moderate", 5: "severe"}
_TEMPORAL_GROUP = {"unchanged": "stable", "persistent": "stable", "new": "new", "increased": "increased",
                   "decreased": "decreased", "resolved": "resolved"}
_CARINA = re.compile(r"\bcarina\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _tip_patterns() -> list[tuple[str, re.Pattern[str]]]:
    return [(loc, re.compile(rf"\b(?:{p})\b", re.IGNORECASE)) for loc, p in TIP_LOCATIONS.items()]


@functools.lru_cache(maxsize=4096)
def location_key(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """``(sides, region families)`` stated in a location value (rules: module docstring)."""
    sides: set[str] = set()
    for a in extract_laterality(value):
        sides.update(("left", "right") if a.value == "bilateral" else (a.value,))
    regions: set[str] = set()
    for loc in extract_location(value):
        regions.add(REGION_FAMILY.get(loc.value, loc.value))
        if loc.side:
            sides.update(("left", "right") if loc.side == "bilateral" else (loc.side,))
    for loc, rx in _tip_patterns():
        if rx.search(value):
            regions.add(REGION_FAMILY.get(loc, loc))
    if _CARINA.search(value):
        regions.add("carina")
    return frozenset(sides), frozenset(regions)


def _location(expected: str, found: str) -> bool | None:
    e_sides, e_regions = location_key(expected)
    if not e_sides and not e_regions:
        return None
    f_sides, f_regions = location_key(found)
    if e_sides and e_sides != f_sides:
        return False
    if e_regions and not (e_regions & f_regions):
        return False
    return True


def largest_size_mm(value: str) -> float | None:
    """The largest size ``value`` states, in millimetres (:func:`~radaudit.text.attributes.extract_size`); ``None``
    when it states none."""
    sizes = extract_size(value)
    return max(s.value_mm for s in sizes) if sizes else None


def same_size(a: float, b: float) -> bool:
    """Whether two sizes in millimetres agree: ``|a - b| <= max(1 mm, 10% of the larger)`` (module docstring)."""
    return abs(a - b) <= max(1.0, 0.1 * max(a, b))


def read_quantity(value: str) -> Quantity | None:
    """The first quantity ``value`` states (``None``: none). A noun is appended so that a bare digit ("2", as the rule
    backend stores "2 nodules") reads as a count."""
    found = extract_quantity(f"{value} findings", articles=False)
    return found[0] if found else None


def _size(expected: str, found: str) -> bool | None:
    a = largest_size_mm(expected)
    if a is None:
        return None
    b = largest_size_mm(found)
    return False if b is None else same_size(a, b)


def _bands(value: str) -> set[str]:
    out: set[str] = set()
    for s in extract_severity(value):
        out.update(_SEVERITY_BAND[level] for level in range(s.low, s.high + 1))
    return out


def _severity(expected: str, found: str) -> bool | None:
    e = _bands(expected)
    if not e:
        return None
    return bool(e & _bands(found))


def _quantity(expected: str, found: str) -> bool | None:
    qe = read_quantity(expected)
    if qe is None:
        return None
    qf = read_quantity(found)
    if qf is None:
        return False
    if qe.value != qf.value:
        return False
    return qe.count is None or qf.count is None or qe.count == qf.count


def _temporal(expected: str, found: str) -> bool | None:
    e = {_TEMPORAL_GROUP[t.value] for t in extract_temporal(expected)}
    if not e:
        return None
    return bool(e & {_TEMPORAL_GROUP[t.value] for t in extract_temporal(found)})


def _morphology(expected: str, found: str) -> bool | None:
    e = {t for t, _, _ in morphology_terms(expected)}
    if not e:
        return None
    return bool(e & {t for t, _, _ in morphology_terms(found)})


_COMPARATORS = {"location": _location, "size": _size, "severity": _severity, "quantity": _quantity,
                "temporal": _temporal, "morphology": _morphology}


def values_match(attribute: str, expected: str, found: str | None, theta: float = 0.8) -> bool:
    """Whether ``found`` confirms ``expected`` for facet ``attribute`` (rules: module docstring).

    ``found`` ``None``/empty/:data:`~radaudit.atomic.schema.NOT_MENTIONED` never matches. Unknown
    facets raise :class:`~radaudit.errors.ParamsError`.

    >>> values_match("location", "left lower lobe", "left base")
    True
    >>> values_match("location", "left", "right")
    False
    >>> values_match("size", "5 mm", "0.5 cm"), values_match("severity", "small", "large")
    (True, False)
    """
    if attribute not in _COMPARATORS:
        raise ParamsError(f"attribute={attribute!r} is not one of {', '.join(ATTRIBUTES)}.")
    if found is None or not found.strip() or found.strip().lower() == NOT_MENTIONED:
        return False
    verdict = _COMPARATORS[attribute](expected, found)
    if verdict is None:
        return name_similarity(expected, found) >= theta
    return verdict
