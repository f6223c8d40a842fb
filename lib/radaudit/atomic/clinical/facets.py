"""Graded facet credits of AtomiMed-clinical (:mod:`radaudit.atomic.clinical`, *Attribute agreement*): how far a
finding's description in one report agrees with the same finding's in the other, facet by facet, in [0, 1].

:func:`facet_credit` grades one facet (location by sides and lobe/zone families, severity and size on ordinal and log
scales, quantity, temporal change on its axis, morphology term by term); :func:`attribute_agreement` averages the
facets the asking report states. The paper's all-or-nothing comparators are :mod:`radaudit.atomic.compare`; this
module shares their size and quantity readers. Also here, the location and grade readings the ladder's other
modules use: :func:`sides_disjoint`, :func:`finding_levels`, :func:`temporal_credit`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from radaudit.atomic.compare import largest_size_mm, location_key, read_quantity, same_size
from radaudit.atomic.lexicon import morphology_terms
from radaudit.atomic.schema import ATTRIBUTES, Finding
from radaudit.atomic.score import name_similarity
from radaudit.errors import ParamsError
from radaudit.text.attributes import extract_location, extract_severity, extract_temporal

__all__ = ["OMITTED", "UNDERCALL_FACTOR", "attribute_agreement", "facet_credit", "finding_levels", "sides_disjoint",
           "temporal_credit"]

_SEV4 = {1: 1, 2: 1, 3: 2, 4: 3, 5: 4}  # SEVERITY_SCALE (trace..severe) -> tiny/small/moderate/large
_TEMPORAL_AXIS = {"resolved": -2, "decreased": -1, "unchanged": 0, "persistent": 0, "increased": 1, "new": 2}
_REGION_MISS = 0.25   # right side, wrong lobe/zone
_PART_OMITTED = 0.75  # side stated, lobe/zone not (reference asks)
#: the credit of a facet the other report does not state at all, when the reference asks (an omitted detail is half an
#: error); a candidate's detail graded below it is the only one held against the candidate
OMITTED = 0.5


_COMPLETE = re.compile(r"\b(?:complete|total|white-?out)\b", re.IGNORECASE)


def _severity_levels(value: str) -> list[float]:
    """Levels on the four-step scale; "complete"/"total" (collapse, opacification) is the top step."""
    out = [(_SEV4[s.low] + _SEV4[s.high]) / 2 for s in extract_severity(value)]
    return out + [4.0] if _COMPLETE.search(value) else out


#: lobes and the frontal-film zones they project over (a lobe named in one report, a zone in the other: a
#: consistent description at another granularity, not a wrong place). The middle lobe and the lingula fill the
#: mid and lower zones beside the heart ("right base" is said of middle-lobe pneumonia); the lower lobes' superior
#: segments reach the mid zone; the left upper lobe holds the lingula. Pairs of one family already agree.
_LOBE_ZONES: dict[str, frozenset[str]] = {
    "RML": frozenset({"mid_zone", "lower_zone", "base", "cardiophrenic_angle", "infrahilar", "perihilar"}),
    "lingula": frozenset({"mid_zone", "lower_zone", "base", "cardiophrenic_angle", "infrahilar", "perihilar"}),
    "RLL": frozenset({"mid_zone", "infrahilar"}),
    "LLL": frozenset({"mid_zone", "infrahilar"}),
    "LUL": frozenset({"mid_zone", "perihilar", "suprahilar"}),
    "RUL": frozenset({"suprahilar"}),
}


def _zone_consistent(expected: str, found: str) -> bool:
    """Whether a lobe named in one value and a zone named in the other are the same place seen at two
    granularities (:data:`_LOBE_ZONES`; the sides are compared separately)."""
    e, f = ({loc.value for loc in extract_location(v)} for v in (expected, found))
    return any(b in _LOBE_ZONES.get(a, ()) or a in _LOBE_ZONES.get(b, ()) for a in e for b in f)


#: region families that mark a lobe's edge, not a place of its own (issue 41, paraphrase): "airspace opacification of the
#: right upper lobe, bounded inferiorly by the horizontal fissure" is in one place, the right upper lobe. Named beside a
#: region both reports share, a boundary is not counted as one more region; named alone ("fluid in the fissure") it is
#: the place.
_BOUNDARIES = frozenset({"fissure"})


def _location_credit(expected: str, found: str, extra_neutral: bool) -> float | None:
    # a device's tip ("tip: right atrium") is compared as a region, never as the device's side
    e_sides, e_regions = location_key(expected.split("tip:")[0])[0], location_key(expected)[1]
    if not e_sides and not e_regions:
        return None
    f_sides, f_regions = location_key(found.split("tip:")[0])[0], location_key(found)[1]
    if e_regions & f_regions:
        f_regions = f_regions - (_BOUNDARIES - e_regions)  # "RUL opacity bounded by the fissure": one place, not two
    if e_sides and f_sides:
        side = len(e_sides & f_sides) / len(e_sides | f_sides)
    elif e_sides:
        side = 1.0 if extra_neutral else _PART_OMITTED
    else:
        side = 1.0
    if e_regions and f_regions:
        if e_regions & f_regions:  # shared regions by Jaccard: one more lobe family named costs as one more side
            region = len(e_regions & f_regions) / len(e_regions | f_regions)
        elif _zone_consistent(expected, found):  # "right middle lobe" vs "right base": a lobe and its zone
            region = 1.0 if extra_neutral else _PART_OMITTED
        else:
            region = _REGION_MISS
    elif e_regions:
        region = 1.0 if extra_neutral else _PART_OMITTED
    else:
        region = 1.0
    return side * region


#: what an under-call costs per grade, relative to an over-call of the same distance, for an actionable finding (weight
#: >= the urgent tier, 2; issue 41, severity): calling a moderate pneumothorax small can leave it undrained, calling it
#: large drains one that might have been watched; the first harm is the patient's, the second a procedure's. So
#: ``1 − 1.5·Δ/3`` below the reference's grade and ``1 − Δ/3`` above it. A range that reaches the reference's grade
#: ("small to moderate" for moderate) is not an under-call (symmetric, as before).
UNDERCALL_FACTOR = 1.5


def _severity_top(value: str) -> float:
    """The highest grade a severity value reaches on the four-step scale (a range's upper end)."""
    tops = [float(_SEV4[s.high]) for s in extract_severity(value)]
    return max([*tops, *([4.0] if _COMPLETE.search(value) else [])], default=0.0)


def _severity_credit(expected: str, found: str, under: float = 1.0) -> float | None:
    """``1 − k·|Δ|/3`` on the four-step scale, Δ between the highest stated grades; ``k`` = ``under`` when every grade
    ``found`` states lies below ``expected``'s (an under-call), else 1."""
    e = _severity_levels(expected)
    if not e:
        return None
    f = _severity_levels(found)
    if not f:
        return 0.0
    k = under if _severity_top(found) < max(e) else 1.0
    return max(0.0, 1.0 - k * abs(max(e) - max(f)) / 3.0)


def _size_credit(expected: str, found: str) -> float | None:
    """1 within the paper's tolerance (:func:`~radaudit.atomic.compare.same_size`), else ``1 − |ln(a/b)| / ln 3``."""
    a = largest_size_mm(expected)
    if a is None:
        return None
    b = largest_size_mm(found)
    if b is None:
        return 0.0
    if a <= 0 or b <= 0:
        return 1.0 if a == b else 0.0
    if same_size(a, b):
        return 1.0
    return max(0.0, 1.0 - abs(math.log(a / b)) / math.log(3.0))


def _quantity_credit(expected: str, found: str) -> float | None:
    """single/multiple equal 1 (counts: ``min/max``), different 0."""
    qe = read_quantity(expected)
    if qe is None:
        return None
    qf = read_quantity(found)
    if qf is None or qe.value != qf.value:
        return 0.0
    if qe.count and qf.count:
        return min(qe.count, qf.count) / max(qe.count, qf.count)
    return 1.0


def _temporal_axis(value: str) -> list[int]:
    """Positions of ``value``'s temporal words on :data:`_TEMPORAL_AXIS` (a bare "increased"/"decreased", an
    LLM's short value, is read as a change: "has increased")."""
    return [_TEMPORAL_AXIS[t.value] for t in (extract_temporal(value) or extract_temporal(f"has {value}"))]


def temporal_credit(expected: str, found: str, span: float = 2.0) -> float | None:
    """``1 − |Δ|/span`` on the temporal axis resolved (−2) < decreased (−1) < unchanged (0) < increased (1) < new (2),
    over the nearest pair of stated changes, 0 at and beyond ``span``; ``None`` when ``expected`` states no change, 0
    when ``found`` states none.

    >>> temporal_credit("resolved", "decreased", span=4.0), temporal_credit("increased", "unchanged")
    (0.75, 0.5)
    """
    e = _temporal_axis(expected)
    if not e:
        return None
    f = _temporal_axis(found)
    if not f:
        return 0.0
    return max(max(0.0, 1.0 - abs(x - y) / span) for x in e for y in f)


#: morphology terms that cannot describe the same thing (a calcified nodule is not a non-calcified one; a focal
#: opacity is not a diffuse one); any other two descriptors can both be true ("hazy" and "interstitial" edema)
_MORPHOLOGY_EXCLUSIVE: frozenset[frozenset[str]] = frozenset(frozenset(p) for p in (
    ("calcified", "noncalcified"), ("spiculated", "well-defined"), ("ill-defined", "well-defined"),
    ("focal", "diffuse"), ("focal", "multifocal"), ("loculated", "layering"), ("interstitial", "airspace"),
    ("linear", "nodular"), ("linear", "round"), ("plate-like", "nodular"), ("plate-like", "round"),
    ("cystic", "dense"), ("lobar", "segmental"),
))


def _morphology_credit(expected: str, found: str) -> float | None:
    """Per term of ``expected``: 1 when ``found`` has it, 0 when ``found`` has a term exclusive with it
    (:data:`_MORPHOLOGY_EXCLUSIVE`), else ½ (another descriptor that does not contradict it counts as
    one not stated: "hazy" against "interstitial" edema); the mean over the terms."""
    e = {t for t, _, _ in morphology_terms(expected)}
    if not e:
        return None
    f = {t for t, _, _ in morphology_terms(found)}

    def one(term: str) -> float:
        if term in f:
            return 1.0
        if any(frozenset((term, o)) in _MORPHOLOGY_EXCLUSIVE for o in f):
            return 0.0
        return OMITTED

    return sum(one(t) for t in sorted(e)) / len(e)


_GRADED = {"location": _location_credit, "severity": _severity_credit, "size": _size_credit,
           "quantity": _quantity_credit, "temporal": temporal_credit, "morphology": _morphology_credit}


def facet_credit(facet: str, expected: str, found: str | None, *, extra_neutral: bool = False,
                 theta: float = 0.8, under: float = 1.0) -> float | None:
    """Graded agreement in [0, 1] of ``found`` with ``expected`` for one facet (:mod:`radaudit.atomic.clinical`).

    ``found`` ``None``: the other report does not state the facet → ½, or ``None`` (not assessed)
    with ``extra_neutral=True`` (the candidate's extra detail). ``under``: the severity facet's cost factor of an
    under-call (:data:`UNDERCALL_FACTOR` for an actionable reference finding; 1: symmetric). Free text the extractors
    cannot read falls back to name similarity ≥ ``theta`` (1 or 0), as :func:`~radaudit.atomic.compare.values_match`.

    >>> facet_credit("severity", "large", "moderate"), facet_credit("severity", "large", "small")
    (0.6666666666666667, 0.33333333333333337)
    >>> facet_credit("location", "right lower lobe", "right"), facet_credit("location", "right", "right lower lobe")
    (0.75, 1.0)
    >>> facet_credit("location", "right lower lobe", "left lower lobe")
    0.0
    """
    if facet not in _GRADED:
        raise ParamsError(f"facet={facet!r} is not one of {', '.join(ATTRIBUTES)}.")
    if found is None or not found.strip():
        return None if extra_neutral else OMITTED
    fn = _GRADED[facet]
    if facet == "location":
        credit = fn(expected, found, extra_neutral)
    elif facet == "severity":
        credit = fn(expected, found, under)
    else:
        credit = fn(expected, found)
    if credit is None:
        credit = 1.0 if name_similarity(expected, found) >= theta else 0.0
    return float(credit)


def _facets(f: Finding) -> dict[str, str]:
    """The stated facets; "complete"/"total" written as morphology ("complete collapse") is also a severity."""
    out = f.attributes.stated()
    if "severity" not in out and _COMPLETE.search(out.get("morphology", "")):
        out["severity"] = out["morphology"]
    return out


def finding_levels(f: Finding) -> list[float]:
    """The grades a finding states on the four-step scale tiny/small (1) < moderate (2) < large (3) < massive/complete
    (4): from its severity facet, or from "complete"/"total" written as its morphology."""
    return _severity_levels(_facets(f).get("severity", ""))


def attribute_agreement(asking: Finding, answering: Finding, *, extra_neutral: bool, theta: float = 0.8,
                        context: Sequence[Finding] = (), under: float = 1.0) -> tuple[float, dict[str, float]]:
    """``(a, {facet: credit})``: the mean graded credit over the facets ``asking`` states
    (:mod:`radaudit.atomic.clinical`); facets not assessed are left out; ``a`` = 1 when none is assessed.

    ``context``: other findings of the answering report that are more specific/generic forms of the
    answering finding (:func:`~radaudit.atomic.lexicon.related_as`): a facet the answering finding
    leaves empty is read from them ("right lower lobe opacity may represent pneumonia": the
    pneumonia is in the right lower lobe)."""
    credits: dict[str, float] = {}
    answers = _facets(answering)
    for facet, value in _facets(asking).items():
        other = answers.get(facet)
        if other is None:
            other = next((getattr(c.attributes, facet) for c in context if getattr(c.attributes, facet)), None)
        c = facet_credit(facet, value, other, extra_neutral=extra_neutral, theta=theta, under=under)
        if c is not None:
            credits[facet] = c
    a = sum(credits.values()) / len(credits) if credits else 1.0
    return a, credits


def sides_disjoint(a: Finding, b: Finding) -> bool:
    """Whether two findings are stated on sides that do not meet (left against right): then they are different
    findings. A device's tip ("tip: right atrium") names where it ends, not its side; an unstated side meets any."""
    la = (a.attributes.location or "").split("tip:")[0]
    lb = (b.attributes.location or "").split("tip:")[0]
    if not la.strip() or not lb.strip():
        return False
    sa, sb = location_key(la)[0], location_key(lb)[0]
    return bool(sa and sb and not sa & sb)
