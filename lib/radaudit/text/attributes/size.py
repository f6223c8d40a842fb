"""Size: measurements, normalised to millimetres.

Size (:func:`extract_size`) -- millimetres
------------------------------------------
- A number (``3``, ``3.2``, ``.5``) with a unit ``mm``/``cm``/``millimeter(s)``/
  ``centimeter(s)`` (also "-metre"), the unit joined, spaced or hyphenated ("1.2cm", "3 cm",
  "3-cm", "2-MM"); cm are multiplied by 10, values rounded to 1e-6.
- Dimensions joined by ``x``/``×``/``by``/``*``, each with or without its own unit ("3.2 x 1.5
  cm" -> ``dims_mm=(32, 15)``, "5.8 cm x 6.0 cm" -> ``(58, 60)``, "3 x 4 x 5 mm" ->
  ``(3, 4, 5)``; a dimension without a unit takes the next unit given).
- Ranges "2-3 cm", "2.5 to 3.0 cm", "1 TO 2 CM": ``bound="range"``, ``low_mm``/``high_mm``.
- Bounds before the number: "up to"/"at most"/"no more than" -> ``<=``; "less than"/"under"/
  "<" -> ``<``; "greater than"/"more than"/"over"/">" -> ``>``; "at least" -> ``>=``.
  "sub-centimeter"/"subcentimeter" -> ``bound="<"``, ``high_mm=10``, no dims.
- Hedges "approximately", "approx.", "about", "around", "roughly", "nearly", "near", "~" set
  ``approximate=True``; they are part of the span.
- ``measures="distance"`` when the measurement is a displacement rather than the size of a
  thing: it is followed by above/below/beyond/past/proximal to/distal to/superior to/
  inferior to/short of/into, or by "of"/"from" + a device landmark (carina, cavoatrial or GE
  junction, right atrium, SVC, clavicles, thoracic inlet: "3 cm of the cavoatrial junction",
  "2 cm from the carina"), or preceded by withdraw/retract/advance/pull back/displace(d/ment)/
  migrated/"by" ("tip 4 cm above the carina", "Withdraw 1 cm"); otherwise ``"size"``. A
  pneumothorax "1.8 cm from the right apex" is a size (the apical pleural separation).
- ``value_mm`` is the largest millimetre value stated (the largest dimension, the upper end of a
  range, or the bound).
- Not handled: sizes in words ("two centimeters"), "cc"/volumes, and list numbers glued to a
  size in upper-case impressions ("3.7-MM NODULE" where "3." is the item number reads as 3.7 mm).
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text
from radaudit.text.attributes.records import Size

#: A number as the size rules read it: ``3``, ``3.2``, ``.5``.
NUM_PATTERN = r"(?:\d+(?:\.\d+)?|\.\d+)"
#: The hedge words before a size ("approximately", "about", "~", ...): ``approximate=True``.
APPROX_PATTERN = r"(?:\b(?:approximately|approx\.?|about|around|roughly|nearly|near|estimated)|~)"
_BOUND = (
    r"(?:\b(?:up\s+to|at\s+most|no\s+more\s+than|less\s+than|under|smaller\s+than|greater\s+than|more\s+than|"
    r"larger\s+than|over|at\s+least)\b|<|>|≤|≥)"
)
_SEP = r"\s*(?:x|×|by|\*)\s*"
#: A size: optional hedge and bound, up to three dimensions with their units, or a range (read by
#: :func:`size_from_match`).
RE_SIZE = re.compile(
    rf"(?:(?P<approx>{APPROX_PATTERN})\s*)?(?:(?P<bound>{_BOUND})\s*)?(?:(?P<approx2>{APPROX_PATTERN})\s*)?"
    rf"(?<![\w.,/:-])(?P<n0>{NUM_PATTERN})(?:(?P<rng>\s*(?:-|–|to)\s*)(?P<r1>{NUM_PATTERN}))?"
    r"(?:\s*-?\s*(?P<u0>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?"
    rf"(?:{_SEP}(?P<n1>{NUM_PATTERN})(?:\s*-?\s*(?P<u1>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?)?"
    rf"(?:{_SEP}(?P<n2>{NUM_PATTERN})(?:\s*-?\s*(?P<u2>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?)?"
    r"(?![\w-])",
    re.IGNORECASE,
)
_RE_SUBCM = re.compile(r"\bsub[- ]?centimet(?:er|re)\b", re.IGNORECASE)
_BOUND_SYMBOL = {
    "up to": "<=", "at most": "<=", "no more than": "<=", "≤": "<=",
    "less than": "<", "under": "<", "smaller than": "<", "<": "<",
    "greater than": ">", "more than": ">", "larger than": ">", "over": ">", ">": ">",
    "at least": ">=", "≥": ">=",
}
_DIST_AFTER = re.compile(
    r"^\s*(?:above|below|beyond|past|into|proximal\s+to|distal\s+to|superior\s+to|inferior\s+to|short\s+of|"
    r"(?:of|from)\s+(?:the\s+)?(?:level\s+of\s+(?:the\s+)?)?(?:carina|cavo[- ]?atrial|caval|atrio[- ]?caval|junction|"
    r"gastro|GE\b|right\s+atri|SVC|superior\s+vena|clavic|thoracic\s+inlet))",
    re.IGNORECASE,
)
_DIST_BEFORE = re.compile(
    r"\b(?:withdraw\w*|retract\w*|advance\w*|pull(?:ed)?\s+back|displace\w*|migrat\w*|by)(?:\s+(?:of|by))?\s+$",
    re.IGNORECASE,
)


def _mm(value: str, unit: str) -> float:
    v = float(value)
    return round(v * 10, 6) if unit.lower().startswith(("cm", "c")) else round(v, 6)


def size_from_match(s: str, m: re.Match[str]) -> Size | None:
    """The :class:`Size` of a :data:`RE_SIZE` match ``m`` in ``s`` (``None`` when a unit is missing or a range has
    several dimensions); ``measures`` from the words around it."""
    units = [m.group(f"u{i}") for i in range(3)]
    nums = [m.group(f"n{i}") for i in range(3)]
    present = [i for i in range(3) if nums[i] is not None]
    # every stated dimension takes its own unit, else the next unit given
    unit_for: dict[int, str] = {}
    nxt: str | None = None
    for i in reversed(present):
        if units[i]:
            nxt = units[i]
        if nxt is None:
            return None
        unit_for[i] = nxt
    if not unit_for:
        return None
    final_unit = units[present[-1]]
    if final_unit is None:
        return None
    approximate = bool(m.group("approx") or m.group("approx2"))
    bound_word = m.group("bound")
    bound = _BOUND_SYMBOL.get(re.sub(r"\s+", " ", bound_word.lower()), "=") if bound_word else "="
    if m.group("r1") is not None:
        if len(present) > 1:
            return None
        lo, hi = _mm(nums[0], unit_for[0]), _mm(m.group("r1"), unit_for[0])
        dims: tuple[float, ...] = ()
        low, high, bound = min(lo, hi), max(lo, hi), "range"
        value = high
    else:
        dims = tuple(_mm(nums[i], unit_for[i]) for i in present)
        value = max(dims)
        low = high = value
        if bound in ("<", "<="):
            low = None
        elif bound in (">", ">="):
            high = None
    after = s[m.end(): m.end() + 40]
    before = s[max(0, m.start() - 30): m.start()]
    measures = "distance" if (_DIST_AFTER.match(after) or _DIST_BEFORE.search(before)) else "size"
    unit = "cm" if final_unit.lower().startswith("c") else "mm"
    return Size(value, dims, low, high, bound, approximate, unit, measures, m.group(0), m.start(), m.end())


def extract_size(text: str) -> list[Size]:
    """Every measurement in ``text``, normalised to millimetres (rules: this module's docstring).

    >>> [a.dims_mm for a in extract_size("Round area of density measuring 1.9 x 1.8 cm.")]
    [(19.0, 18.0)]
    """
    s = check_text(text)
    out: list[Size] = []
    for m in RE_SIZE.finditer(s):
        size = size_from_match(s, m)
        if size is not None:
            out.append(size)
    for m in _RE_SUBCM.finditer(s):
        out.append(Size(10.0, (), None, 10.0, "<", False, "cm", "size", m.group(0), m.start(), m.end()))
    out.sort(key=lambda a: a.start)
    return out

