"""Location: lobes and zones of the lungs.

Location (:func:`extract_location`) -- lobes and zones, see :data:`LOBES`, :data:`ZONES`
---------------------------------------------------------------------------------------
- Lobes: "right upper lobe" -> ``RUL`` ... "left lower lobe" -> ``LLL`` (an optional segment word
  in between: "left superior lower lobe" -> ``LLL``), "middle lobe" -> ``RML``, "lingula(r)" ->
  ``lingula``, upper-case abbreviations ``RUL RML RLL LUL LLL``; "right upper and lower lobes"
  gives ``RUL`` and ``RLL``. Without a side: ``upper_lobe``/``lower_lobe`` (side ``bilateral``
  when plural or after "both"/"bilateral").
- Zones: ``apex`` (apex/apices/apical/biapical; not "cardiac apex"), ``upper_zone``,
  ``mid_zone``, ``lower_zone`` ("upper lung zone", "left upper lung", "midlung", "mid-lung",
  "mid and lower lung zones" -> both; not "lower lung volumes"), ``base`` (bases, basilar, basal,
  bibasilar, and singular "base" only after a side, "lung" or medial/lateral/anterior/
  posterior: "left base", "R base", "lung base", "left medial base"), ``perihilar``
  (perihilar/parahilar), ``hilum`` (hilum/hila/hilar), ``infrahilar``, ``suprahilar``,
  ``retrocardiac``, ``costophrenic_angle`` ("costophrenic angle/sulcus/recess", "CP angle", a
  bare "costophrenic"), ``cardiophrenic_angle``, ``subpulmonic``, ``paratracheal``, ``fissure``
  (minor/major/horizontal/oblique fissure).
- ``side``: the lobe's own side, else a side word right before the zone ("right lung base",
  "left-sided apical", "R base"), else ``bilateral`` for bi- prefixes and plurals ("bases",
  "apices", "hila", "costophrenic angles"), else ``None``. The span includes the side word.
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text, overlaps, side_norm
from radaudit.text.attributes.records import Location
from radaudit.text.attributes.vocabulary import LOBES

_LOBE_LEVEL = {"upper": "U", "middle": "M", "mid": "M", "lower": "L"}
_SEG = r"(?:superior|inferior|posterior|anterior|medial|lateral|apical|basilar|apicoposterior|anteromedial)"
_RE_LOBE_PAIR = re.compile(
    r"\b(?P<side>left|right)\s+(?P<a>upper|middle|lower)\s+(?:and|&|/|to)\s+(?P<b>upper|middle|lower)\s+lobes?\b",
    re.IGNORECASE,
)
_RE_LOBE = re.compile(
    rf"\b(?:(?P<side>left|right|bilateral|both)(?:[- ]sided)?\s+(?:lung\s+)?)?(?:{_SEG}\s+(?:segment\s+of\s+the\s+)?)?"
    r"(?P<lvl>upper|middle|mid|lower)[- ]lobe(?P<pl>s)?\b"
    r"|\b(?-i:(?P<abbr>RUL|RML|RLL|LUL|LLL))\b"
    r"|\b(?P<ling>lingula|lingular)\b",
    re.IGNORECASE,
)
_SIDE_BEFORE = re.compile(
    r"(?P<side>\bleft|\bright|\bbilateral|\bboth|\b(?-i:[LR]))(?:[- ]sided)?[\s-]+"
    r"(?:(?:lung|medial|lateral|posterior|anterior|peripheral)\s+){0,2}$",
    re.IGNORECASE,
)
_ZONE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "pair",
        re.compile(
            r"\b(?P<a>upper|mid|middle|lower)-?\s+(?:and|to|&|/)\s+(?P<b>upper|mid|middle|lower)[- ]?lungs?"
            r"(?:[- ](?:zones?|fields?))?\b(?!\s+volumes?)",
            re.IGNORECASE,
        ),
    ),
    ("apex", re.compile(r"\b(?:biapical|apical|apex|apices)\b", re.IGNORECASE)),
    (
        "zone3",
        re.compile(
            r"\b(?P<z>upper|mid|middle|lower)(?:[- ]?lungs?)(?:[- ](?:zones?|fields?|regions?))?\b(?!\s+volumes?)"
            r"|\b(?P<z2>upper|mid|middle|lower)[- ]zones?\b|\b(?P<z3>midlungs?)\b",
            re.IGNORECASE,
        ),
    ),
    ("base", re.compile(r"\b(?:bibasilar|bibasal|basilar|basal|basally|(?:lung\s+)?bases)\b", re.IGNORECASE)),
    (
        "base1",
        re.compile(
            r"(?:(?<=\blung\s)|(?<=\bleft\s)|(?<=\bright\s)|(?<=\b[LR]\s)|(?<=\bmedial\s)|(?<=\blateral\s)|"
            r"(?<=\bposterior\s)|(?<=\banterior\s))\bbase\b",
            re.IGNORECASE,
        ),
    ),
    ("perihilar", re.compile(r"\b(?:perihilar|parahilar)\b", re.IGNORECASE)),
    ("infrahilar", re.compile(r"\binfrahilar\b", re.IGNORECASE)),
    ("suprahilar", re.compile(r"\bsuprahilar\b", re.IGNORECASE)),
    ("hilum", re.compile(r"\b(?:hilum|hila|hilar|bihilar)\b", re.IGNORECASE)),
    ("retrocardiac", re.compile(r"\bretrocardiac\b", re.IGNORECASE)),
    (
        "costophrenic_angle",
        re.compile(r"\b(?:costophrenic|CP)\s+(?:angles?|sulc(?:us|i)|recess(?:es)?)\b|\bcostophrenic\b", re.IGNORECASE),
    ),
    ("cardiophrenic_angle", re.compile(r"\bcardiophrenic(?:\s+(?:angles?|regions?))?\b", re.IGNORECASE)),
    ("subpulmonic", re.compile(r"\bsubpulmonic\b", re.IGNORECASE)),
    ("paratracheal", re.compile(r"\bparatracheal\b", re.IGNORECASE)),
    ("fissure", re.compile(r"\b(?:(?:minor|major|horizontal|oblique)\s+)?fissures?\b", re.IGNORECASE)),
]
_ZONE_LEVEL = {"upper": "upper_zone", "mid": "mid_zone", "middle": "mid_zone", "lower": "lower_zone"}
_RE_PLURAL_ZONE = re.compile(r"(?:bases|apices|hila|angles|sulci|recesses|zones|lungs|fields|regions)$|^bi", re.IGNORECASE)


def extract_location(text: str) -> list[Location]:
    """Every lobe and zone mention in ``text`` (rules: this module's docstring).

    >>> [(a.value, a.side) for a in extract_location("Left lower lobe consolidation and right base atelectasis.")]
    [('LLL', 'left'), ('base', 'right')]
    """
    s = check_text(text)
    out: list[Location] = []
    taken: list[tuple[int, int]] = []
    for m in _RE_LOBE_PAIR.finditer(s):
        side = m.group("side").lower()
        for key in ("a", "b"):
            lobe = side[0].upper() + _LOBE_LEVEL[m.group(key).lower()] + "L"
            out.append(Location(lobe, "lobe", side, m.group(0), m.start(), m.end()))
        taken.append(m.span())
    for m in _RE_LOBE.finditer(s):
        if overlaps(m.span(), taken):
            continue
        if m.group("abbr"):
            value = m.group("abbr")
            side = LOBES[value][1]
        elif m.group("ling"):
            value, side = "lingula", "left"
        else:
            lvl = _LOBE_LEVEL[m.group("lvl").lower()]
            side_word = m.group("side")
            if lvl == "M":
                value, side = "RML", "right"
            elif side_word and side_word.lower() in ("left", "right"):
                side = side_word.lower()
                value = side[0].upper() + lvl + "L"
            else:
                value = "upper_lobe" if lvl == "U" else "lower_lobe"
                side = "bilateral" if (side_word or m.group("pl")) else None
        out.append(Location(value, "lobe", side, m.group(0), m.start(), m.end()))
        taken.append(m.span())
    for name, rx in _ZONE_PATTERNS:
        for m in rx.finditer(s):
            if overlaps(m.span(), taken):
                continue
            start = m.start()
            if name == "apex" and re.search(
                r"\b(?:cardiac|heart|left\s+ventricular)\s+$", s[max(0, start - 20): start], re.I
            ):
                continue
            if name == "pair":
                values = [_ZONE_LEVEL[m.group("a").lower()], _ZONE_LEVEL[m.group("b").lower()]]
            elif name == "zone3":
                z = m.group("z") or m.group("z2") or "mid"
                values = [_ZONE_LEVEL[z.lower()]]
            elif name == "base1":
                values = ["base"]
            else:
                values = [name]
            sb = _SIDE_BEFORE.search(s[max(0, start - 40): start])
            if sb:
                side: str | None = side_norm(sb.group("side"))
                start = max(0, m.start() - 40) + sb.start()
            elif _RE_PLURAL_ZONE.search(m.group(0)):
                side = "bilateral"
            else:
                side = None
            for v in values:
                out.append(Location(v, "zone", side, s[start: m.end()], start, m.end()))
            taken.append((m.start(), m.end()))
    out.sort(key=lambda a: (a.start, a.end))
    return out

