"""Attributes of findings in chest X-ray report text: side, place, size, degree, count, change, devices, hedges.

Every extractor is a pure function of one string (a sentence, or any span of report text) that
returns typed, frozen dataclasses in order of position. Each carries the normalised ``value``,
the matched ``text`` and its ``start``/``end`` character offsets into the string it was given
(``text == s[start:end]`` always holds), so that fact-level metrics can align attributes and
perturbations can rewrite exactly one of them. :func:`extract_attributes` runs them all;
:func:`to_frame` turns the result (or a batch of reports) into a tidy table.

Extraction is *mention-level*: an attribute is reported where its words occur; which finding it
belongs to is not resolved here, and neither is negation ("no large pneumothorax" still yields
severity ``severe`` and "no new consolidation" temporal ``new``). Negation and uncertainty
*scope* belong to :mod:`radaudit.text.negation`: ``classify_mention(sentence, (a.start, a.end))``
classifies the attribute ``a`` of that sentence; this module does not import it. Input must be a ``str``: ``None`` and
other types raise ``TypeError`` with a message saying what to pass; ``""`` gives ``[]``. Matching is
case-insensitive unless a rule says otherwise (CheXpert Plus impressions are upper case).

Laterality (:func:`extract_laterality`) -- ``left | right | bilateral``
---------------------------------------------------------------------
- ``left``/``right`` as whole words, with ``-sided``/`` sided`` included in the span
  ("left-sided"); "bright", "rightward", "leftover" are not words ``left``/``right``.
- ``left`` used as a verb is not a side: after was/were/be/been/being/had/get/got ("a message
  was left", "the drain was left in place"), or before over/behind/alone/untreated/in place/in
  situ ("left over"). "There is left basilar scarring" keeps its side: "is"/"has" are not
  verb markers.
- ``bilateral``: "bilateral(ly)", "bilat", "b/l", the prefixes "bibasilar", "bibasal",
  "biapical", "bihilar", and "both" only before a paired structure ("both lungs", "both lung
  bases", "both hemithoraces"; not "both PA and lateral views").
- Single letters ``L``/``R`` only in upper case and only before a short list of anatomy and
  device words ("L base", "R IJ", "L PICC", "R lung", "R>L"), never alone.
- The side of *anatomy* is reported as written: "right heart border", "right atrium", "right
  upper quadrant" give ``right`` even though the heart is a midline organ and a catheter tip in
  the right atrium says nothing about which side the line was placed. Consumers that want the
  side of a finding combine this with :class:`Location` and :class:`Device` (which carry their
  own ``side``).

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

Severity (:func:`extract_severity`) -- ordinal scale :data:`SEVERITY_SCALE`
--------------------------------------------------------------------------
``trace (1) < minimal (2) < mild (3) < moderate (4) < severe (5)``, with the synonym table
:data:`SEVERITY_SYNONYMS`: minimal = minimal(ly)/tiny/slight(ly); mild = mild(ly)/small;
moderate = moderate(ly); severe = severe(ly)/large/marked(ly)/extensive/massive/huge. A range
("small-to-moderate", "mild to moderate", "moderate-severe", "small or moderate", "mild/
moderate", optionally "-sized") is one :class:`Severity` with ``low``/``high`` levels and the
label ``"mild-moderate"``; ``level`` is the mean of the two. "small bowel/intestine/airway(s)/
vessel(s)", "large bowel/intestine/airway(s)/bore" are anatomy, not degrees. Degree words that
modify a change are kept ("slight increase" -> ``minimal``; "marked improvement" ->
``severe``): the degree of the change is still a degree.

Quantity (:func:`extract_quantity`)
-----------------------------------
``value`` is ``"single"`` or ``"multiple"``, ``count`` the integer when stated:
single/solitary/one -> 1; the articles a/an -> 1 with ``explicit=False`` (leave them out with
``articles=False``); two ... twenty and digits 1-99 followed by a word (not a unit, ordinal,
time or range: "2 leads" yes; "2 cm", "7th", "1 to 2 cm", "12:30" no) -> that count;
multiple/several/numerous/many/innumerable/various/few/"a few"/"a couple (of)" -> multiple
without a count. "single" (or an article) before view/image/film/radiograph/projection/exam
(within four words: "SINGLE AP PORTABLE SEMIUPRIGHT FRONTAL VIEW") describes the study, not a
finding, and is skipped.

Temporal change (:func:`extract_temporal`) -- :data:`TEMPORAL_VALUES`
--------------------------------------------------------------------
- ``unchanged``: unchanged, stable/stably/stabilized (not after "hemodynamically"/"clinically"),
  similar, unaltered, "no (significant|appreciable|...) (interval) change(s)", "not
  (significantly) changed", "without (interval) change", "little (interval) change", "not
  significant change". A bare "change(s)" is *not* temporal ("postoperative changes",
  "degenerative change", "interval change" without a direction give nothing).
- ``new``: new, newly, "interval development/appearance/placement/insertion/intubation",
  "has (since) developed", "placement/insertion of", "has been placed/inserted".
- ``increased``: "interval (slight|mild|...) increase(d)", "increase(d/s) in", increasing,
  "has/have increased/enlarged/grown/progressed/worsened", worse/worsen(ed/ing), enlarging,
  progressed/progressing/progression/progressive, "more prominent/conspicuous/confluent/
  extensive/pronounced/dense/opaque", "increased since/from/compared". A bare adjective
  "increased X" is a state, not a change ("increased interstitial markings"), and is skipped.
- ``decreased``: the mirror ("interval decrease", "decrease(d) in", decreasing, "has
  decreased", "less prominent", "reduction in", diminished/diminishing, smaller), plus
  improved/improving/improvement/improves, resolving and clearing (going away, not gone):
  direction refers to the extent of the finding, so improvement is ``decreased``.
  "decreased lung volumes" (a state) is skipped.
- ``resolved``: resolved/resolution, cleared, "no longer seen/visible/present/identified/...";
  for devices "removal/removed/extubation/extubated" (the device is no longer there).
- ``persistent`` (an addition to the five values the issue names): still present, no statement
  about size: persistent/persists/persisting/persisted/persistence, "again seen/noted/
  demonstrated/identified/visualized", redemonstrated/redemonstration, remain(s/ed),
  residual. Repositioning/advancement/retraction of devices is not a value.
- Overlaps: the unchanged phrases are matched first, so "no significant change" is one
  ``unchanged`` and "change" never fires on its own.

Devices (:func:`extract_devices`) -- :data:`DEVICE_TYPES`, :data:`TIP_LOCATIONS`
------------------------------------------------------------------------------
- Types (canonical ``value``, with a ``subtype`` where it helps): ``endotracheal_tube`` (ETT, ET
  tube), ``tracheostomy_tube``, ``enteric_tube`` (subtypes nasogastric/NG/NGT, orogastric/OG/OGT,
  gastric for "NG/OG", feeding/Dobhoff/nasoenteric, gastrostomy/G-tube/PEG), ``central_venous_
  catheter`` (subtypes picc, internal_jugular, subclavian, femoral, umbilical, dialysis, or None
  for CVC/central line/venous catheter), ``swan_ganz`` (Swan-Ganz, pulmonary artery catheter),
  ``chest_tube`` (chest tube/drain, pleural drain/catheter, pigtail, thoracostomy tube,
  mediastinal drain), ``pacemaker`` (pacemaker, pacer, pacing device, generator, subtype icd for
  ICD/AICD/defibrillator), ``pacemaker_lead`` (leads/electrodes/pacing wires, not "dual lead
  pacemaker" where "lead" is a modifier), ``ecg_leads`` (EKG/ECG/monitor/telemetry leads),
  ``external_pads`` (pacer/defibrillator pads), ``sternotomy_wires`` (sternotomy, sternal wires/
  sutures, cerclage wires; IU X-ray de-identifies "wires" as "XXXX", so "sternotomy XXXX"
  counts), ``clips`` (subtype staples for staples), ``port`` (port, Port-A-Cath, Mediport; not
  the "side port"/"proximal port" of an enteric tube), ``stent``, ``iabp``, ``catheter`` (a bare
  catheter: subtype epidural/intrathecal/drainage/... from the word before it; with a route word
  in its noun phrase, "right jugular XXXX catheter", a ``central_venous_catheter``),
  ``support_devices`` ("lines and tubes", "support devices", "supportive equipment": a
  reference to all devices at once).
- One device, not two: a bare "catheter", or the same type again, right after a device with
  only spaces, "/" or a de-identified "XXXX" between ("PICC line catheter", "Mediport catheter",
  "pacemaker defibrillator").
- A bare route ("right IJ", "IJ approach") is a ``central_venous_catheter`` of subtype
  ``internal_jugular`` unless another device follows it in the same noun phrase ("right IJ
  approach transvenous pacer" is one pacemaker); "IJ/brachiocephalic junction" and "internal
  jugular vein" are places, not devices.
- ``side``: the last side word in the noun phrase before the device (the words back to the
  previous clause word: and/with/of/for/to/in/at/post/after/..., or a finding noun such as
  pneumothorax/effusion/opacity), e.g. "removal of right chest tube" -> ``right``, "left-sided
  PICC" -> ``left``, "Small right pneumothorax post chest tube removal" -> ``None``. The span
  starts at that side word.
- ``tip`` (:class:`TipPosition`, or ``None`` when no position is stated): searched after the
  device, up to the next device or the end of the sentence. ``location`` is the first
  :data:`TIP_LOCATIONS` term found (``locations`` lists all of them, for leads "in the right
  atrium and right ventricle"); SVC segments are normalised (upper/proximal/high ->
  ``upper_svc``, mid -> ``mid_svc``, lower/distal/low/inferior -> ``lower_svc``); a distance
  "4 cm above the carina" gives ``distance_mm=40``, ``relation="above"``,
  ``reference="carina"`` (the reference is not the tip's location); "above carina" without a
  number gives the relation and reference alone. Positions written *before* a device are not
  its tip: in "generator with right atrial and right ventricular leads" the two chambers fall
  in the generator's window (the leads start after them).
- ``position_note``: ``appropriate`` ("in good/satisfactory/standard/expected ... position") or
  ``malpositioned`` ("malpositioned", "high/low position(ing)", "needs to be advanced",
  "recommend retraction", "should be withdrawn") when stated around the device.

Certainty (:func:`extract_certainty`) -- hedge words, scope owned by :mod:`radaudit.text.negation`
------------------------------------------------------------------------------------------------
``probable``: likely/most likely, probable/probably, suspect(ed), suspicious (for/of),
suggest(s/ed/ive/ing) (of/for), concerning/worrisome for, presumed/presumably/presumptive,
favor(ed)/favour. ``possible``: possible/possibly/possibility, questionable/question of,
cannot/can not (be) excluded/ruled out, "not excluded", may/might/could (also) represent/
reflect/be/indicate/relate/correspond/include, equivocal, perhaps, uncertain, indeterminate,
versus/vs, "differential (diagnosis) includes". "unlikely" is not "likely" (whole words).
A bare "consistent with"/"compatible with" asserts; the CheXpert labeler's post-negation
uncertainty patterns make them uncertain only after a modal ("may be consistent with"), which
the may/could rule above catches.

Cost: the eight extractors over the 3,851 IU X-ray reports (findings + impression) take about
3 s on one CPU core; device patterns only run on texts that contain a device word.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Union

import pandas as pd

__all__ = [
    "Attribute",
    "Certainty",
    "Device",
    "Laterality",
    "Location",
    "Quantity",
    "Severity",
    "Size",
    "Temporal",
    "TipPosition",
    "ATTRIBUTE_KINDS",
    "CERTAINTY_VALUES",
    "DEVICE_TYPES",
    "LOBES",
    "SEVERITY_SCALE",
    "SEVERITY_SYNONYMS",
    "TEMPORAL_VALUES",
    "TIP_LOCATIONS",
    "ZONES",
    "extract_attributes",
    "extract_certainty",
    "extract_devices",
    "extract_laterality",
    "extract_location",
    "extract_quantity",
    "extract_severity",
    "extract_size",
    "extract_temporal",
    "to_frame",
]

# --------------------------------------------------------------------------------------------
# vocabularies
# --------------------------------------------------------------------------------------------

#: Lobe value -> (description, implied side or None).
LOBES: dict[str, tuple[str, str | None]] = {
    "RUL": ("right upper lobe", "right"),
    "RML": ("right middle lobe", "right"),
    "RLL": ("right lower lobe", "right"),
    "LUL": ("left upper lobe", "left"),
    "lingula": ("lingula (left upper lobe)", "left"),
    "LLL": ("left lower lobe", "left"),
    "upper_lobe": ("upper lobe, side not stated in the lobe phrase", None),
    "lower_lobe": ("lower lobe, side not stated in the lobe phrase", None),
}

#: Zone values (controlled vocabulary), in rough cranio-caudal then medial order.
ZONES: tuple[str, ...] = (
    "apex", "upper_zone", "mid_zone", "lower_zone", "base", "perihilar", "hilum", "infrahilar",
    "suprahilar", "retrocardiac", "costophrenic_angle", "cardiophrenic_angle", "subpulmonic",
    "paratracheal", "fissure",
)

#: Ordinal severity scale: label -> level.
SEVERITY_SCALE: dict[str, int] = {"trace": 1, "minimal": 2, "mild": 3, "moderate": 4, "severe": 5}

#: Word (lower case) -> severity label.
SEVERITY_SYNONYMS: dict[str, str] = {
    "trace": "trace",
    "minimal": "minimal", "minimally": "minimal", "tiny": "minimal", "slight": "minimal", "slightly": "minimal",
    "mild": "mild", "mildly": "mild", "small": "mild",
    "moderate": "moderate", "moderately": "moderate",
    "severe": "severe", "severely": "severe", "large": "severe", "marked": "severe", "markedly": "severe",
    "extensive": "severe", "massive": "severe", "huge": "severe",
}
_LEVEL_LABEL = {v: k for k, v in SEVERITY_SCALE.items()}

#: Temporal values; the first five are the issue's, ``persistent`` is documented in the module docstring.
TEMPORAL_VALUES: tuple[str, ...] = ("new", "increased", "decreased", "unchanged", "resolved", "persistent")

#: Certainty (hedge) values, weakest first.
CERTAINTY_VALUES: tuple[str, ...] = ("possible", "probable")

#: Device type -> description.
DEVICE_TYPES: dict[str, str] = {
    "endotracheal_tube": "endotracheal tube (ETT, ET tube)",
    "tracheostomy_tube": "tracheostomy tube",
    "enteric_tube": "nasogastric / orogastric / feeding / gastrostomy tube",
    "central_venous_catheter": "central venous catheter: IJ, subclavian, femoral, PICC, dialysis, umbilical, CVC",
    "swan_ganz": "Swan-Ganz / pulmonary artery catheter",
    "chest_tube": "chest tube, pleural drain or catheter, pigtail, mediastinal drain",
    "pacemaker": "pacemaker / ICD generator or device",
    "pacemaker_lead": "pacemaker or ICD leads, electrodes, pacing wires",
    "ecg_leads": "external ECG / monitoring leads",
    "external_pads": "external pacer / defibrillator pads",
    "sternotomy_wires": "median sternotomy wires or sutures",
    "clips": "surgical clips or staples",
    "port": "implanted port (Port-A-Cath, Mediport)",
    "stent": "stent",
    "iabp": "intra-aortic balloon pump",
    "catheter": "catheter of unstated kind (epidural, intrathecal, drainage, ...)",
    "support_devices": "collective reference: lines and tubes, support devices",
}

_SVC = r"(?:SVC|superior\s+vena\s+(?:cava|(?-i:XXXX)))"

#: Tip-position vocabulary: value -> pattern (applied case-insensitively, first match wins per span).
TIP_LOCATIONS: dict[str, str] = {
    "cavoatrial_junction": (
        r"(?:superior\s+|upper\s+)?(?:cavo[- ]?atrial|caval[- ]atrial|atrio[- ]?caval|atrial[- ]caval)\s+junction|"
        r"SVC\s*/\s*RA\s+junction|SVC[- ]RA\s+junction|junction\s+of\s+the\s+SVC\s+and\s+(?:the\s+)?right\s+atrium"
    ),
    "upper_svc": rf"(?:upper|proximal|high|superior)\s+(?:portion\s+of\s+the\s+)?{_SVC}",
    "mid_svc": (
        rf"mid(?:dle)?(?:[- ]?(?:to[- ])?(?:distal|lower))?[- ]?(?:portion\s+of\s+the\s+)?{_SVC}|"
        rf"mid\s+to\s+(?:distal|lower)\s+(?:portion\s+of\s+the\s+)?{_SVC}"
    ),
    "lower_svc": rf"(?:lower|distal|low|inferior)\s+(?:portion\s+of\s+the\s+)?{_SVC}",
    "svc": _SVC,
    "right_atrium": r"right\s+atri(?:um|al)|(?-i:RA)(?!\s+junction)",
    "right_ventricle": r"right\s+ventric(?:le|ular)|(?-i:RV)",
    "left_ventricle": r"left\s+ventric(?:le|ular)",
    "coronary_sinus": r"coronary\s+sinus",
    "right_pulmonary_artery": r"right\s+(?:main\s+)?pulmonary\s+artery|right\s+interlobar\s+(?:pulmonary\s+)?artery",
    "left_pulmonary_artery": r"left\s+(?:main\s+)?pulmonary\s+artery|left\s+interlobar\s+(?:pulmonary\s+)?artery",
    "pulmonary_artery": r"(?:main\s+|interlobar\s+)?pulmonary\s+(?:artery|outflow\s+tract)",
    "ivc": r"(?:intrahepatic\s+)?(?:IVC|inferior\s+vena\s+cava)",
    "brachiocephalic_vein": (
        r"(?:left\s+|right\s+)?(?:brachiocephalic|innominate)(?:\s+(?:vein|venous\s+confluence|junction))?|"
        r"IJ\s*/\s*brachiocephalic\s+junction"
    ),
    "subclavian_vein": r"(?:left\s+|right\s+)?subclavian\s+vein",
    "internal_jugular_vein": r"(?:left\s+|right\s+)?(?:internal\s+)?jugular\s+vein|IJ\s+vein",
    "axillary_vein": r"axillary\s+vein",
    "carina": r"(?:at|to)\s+(?:the\s+)?(?:level\s+of\s+(?:the\s+)?)?carina",
    "right_mainstem_bronchus": r"right\s+(?:mainstem|main[- ]stem|main)\s+bronchus|bronchus\s+intermedius",
    "left_mainstem_bronchus": r"left\s+(?:mainstem|main[- ]stem|main)\s+bronchus",
    "trachea": r"(?:(?:mid|distal|proximal|lower|upper)[- ]?)?trachea",
    "thoracic_inlet": r"thoracic\s+inlet",
    "clavicles": r"clavicular\s+heads|(?:level\s+of\s+the\s+)?clavicles",
    "ge_junction": r"(?:gastro-?o?esophageal|GE|esophagogastric)\s+junction",
    "esophagus": r"(?:(?:distal|mid|proximal|lower|upper)\s+)?o?esophagus",
    "duodenum": r"duodenum|duodenal\s+bulb|ligament\s+of\s+treitz|jejunum",
    "stomach": r"stomach|gastric\s+(?:body|fundus|antrum|cardia|pylorus|lumen)|pylorus|(?:body|fundus)\s+of\s+the\s+stomach",
    "below_diaphragm": r"below\s+the\s+(?:(?:left|right)\s+)?(?:hemi)?diaphragm",
}


ATTRIBUTE_KINDS: tuple[str, ...] = (
    "laterality", "location", "size", "severity", "quantity", "temporal", "device", "certainty",
)


# --------------------------------------------------------------------------------------------
# dataclasses
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    """A found attribute with nothing but its value: ``value``, the matched ``text`` and its ``start``/``end``
    offsets. :class:`Laterality`, :class:`Temporal` and :class:`Certainty` are this with their own ``kind``."""

    kind: ClassVar[str] = "span"
    value: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Laterality(_Span):
    """A side: ``value`` in ``left | right | bilateral``."""

    kind: ClassVar[str] = "laterality"


@dataclass(frozen=True)
class Location:
    """A lobe (``kind_of="lobe"``, value in :data:`LOBES`) or zone (``"zone"``, value in :data:`ZONES`)."""

    kind: ClassVar[str] = "location"
    value: str
    kind_of: str
    side: str | None
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Size:
    """A measurement in millimetres; ``value`` is the largest stated value (``value_mm``).

    ``bound``: ``"="`` (stated), ``"range"`` (low..high), ``"<"``, ``"<="``, ``">"``, ``">="``.
    ``measures``: ``"size"`` or ``"distance"`` (module docstring).
    """

    kind: ClassVar[str] = "size"
    value: float
    dims_mm: tuple[float, ...]
    low_mm: float | None
    high_mm: float | None
    bound: str
    approximate: bool
    unit: str
    measures: str
    text: str
    start: int
    end: int

    @property
    def value_mm(self) -> float:
        return self.value


@dataclass(frozen=True)
class Severity:
    """A degree on :data:`SEVERITY_SCALE`; a range has ``low < high`` and a label ``"low-high"``."""

    kind: ClassVar[str] = "severity"
    value: str
    low: int
    high: int
    word: str
    text: str
    start: int
    end: int

    @property
    def level(self) -> float:
        """Mean of ``low`` and ``high`` (the level itself when not a range)."""
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class Quantity:
    """``value`` ``single``/``multiple``; ``count`` when stated; ``explicit=False`` for a/an."""

    kind: ClassVar[str] = "quantity"
    value: str
    count: int | None
    explicit: bool
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Temporal(_Span):
    """A change relative to a prior study: ``value`` in :data:`TEMPORAL_VALUES`."""

    kind: ClassVar[str] = "temporal"


@dataclass(frozen=True)
class Certainty(_Span):
    """A hedge word: ``value`` in :data:`CERTAINTY_VALUES`. Scope: :mod:`radaudit.text.negation`."""

    kind: ClassVar[str] = "certainty"


@dataclass(frozen=True)
class TipPosition:
    """Where a device ends: a location from :data:`TIP_LOCATIONS` and/or a distance to a landmark."""

    location: str | None
    locations: tuple[str, ...]
    distance_mm: float | None
    distance: Size | None
    relation: str | None
    reference: str | None
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Device:
    """A device of type ``value`` (:data:`DEVICE_TYPES`), its side and tip position when stated."""

    kind: ClassVar[str] = "device"
    value: str
    subtype: str | None
    side: str | None
    tip: TipPosition | None
    position_note: str | None
    text: str
    start: int
    end: int


Attribute = Union[Laterality, Location, Size, Severity, Quantity, Temporal, Device, Certainty]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _check(text: object) -> str:
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


def _overlaps(a: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(a[0] < e and s < a[1] for s, e in taken)


_SENT_END = re.compile(r"[.!?](?=\s|$)")


def _sentence_end(s: str, pos: int) -> int:
    m = _SENT_END.search(s, pos)
    return m.start() if m else len(s)


# --------------------------------------------------------------------------------------------
# laterality
# --------------------------------------------------------------------------------------------

_PAIRED = (
    r"lungs?|lung\s+(?:bases|apices|fields|zones)|bases|apices|hila|hilar|hemithora(?:ces|x)|"
    r"hemidiaphragms?|sides|costophrenic|cp|upper|lower|mid|pleural|axillae|shoulders|breasts|"
    r"clavicles|kidneys|lobes|lung\s+fields"
)
_ABBR_NEXT = (
    r"base|bases|apex|lung|chest|IJ|PICC|hilum|hilar|hemithorax|hemidiaphragm|pleural|effusion|"
    r"CP|costophrenic|upper|lower|middle|mid|subclavian|internal|arm|shoulder|breast|axilla|sided|"
    r"ptx|pneumothorax"
)
_RE_LAT = re.compile(
    rf"(?P<bi>\b(?:bilateral(?:ly)?|bilat|bi(?:basilar|basal|apical|hilar))\b|(?<![\w/])b/l\b"
    rf"|\bboth(?=\s+(?:of\s+the\s+)?(?:{_PAIRED})\b))"
    r"|(?P<side>\b(?:left|right)(?:[- ]sided\b)?)\b"
    rf"|(?P<abbr>\b(?-i:[LR])(?=[ -](?:{_ABBR_NEXT})\b|\s*[<>]\s*(?-i:[LR])\b)"
    rf"|(?<=[<>])(?-i:[LR])\b|(?<=[<>]\s)(?-i:[LR])\b)",
    re.IGNORECASE,
)
_RE_LEFT_VERB_BEFORE = re.compile(r"\b(?:was|were|be|been|being|had|get|got)\s+$", re.IGNORECASE)
_RE_LEFT_VERB_AFTER = re.compile(r"^\s+(?:over|behind|alone|untreated|in\s+place|in\s+situ)\b", re.IGNORECASE)


def extract_laterality(text: str) -> list[Laterality]:
    """Every side mention in ``text`` (rules: module docstring, "Laterality").

    >>> [a.value for a in extract_laterality("Bibasilar atelectasis, right greater than left.")]
    ['bilateral', 'right', 'left']
    """
    s = _check(text)
    out: list[Laterality] = []
    for m in _RE_LAT.finditer(s):
        if m.group("bi"):
            value = "bilateral"
        elif m.group("side"):
            word = m.group("side")[:4].lower()
            value = "left" if word == "left" else "right"
            if value == "left" and not m.group("side")[4:]:
                if (_RE_LEFT_VERB_BEFORE.search(s[max(0, m.start() - 12): m.start()])
                        or _RE_LEFT_VERB_AFTER.match(s[m.end():])):
                    continue
        else:
            value = "left" if m.group("abbr") == "L" else "right"
        out.append(Laterality(value, m.group(0), m.start(), m.end()))
    return out


# --------------------------------------------------------------------------------------------
# location
# --------------------------------------------------------------------------------------------

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


def _side_norm(word: str) -> str:
    w = word.lower()
    if w in ("l", "left"):
        return "left"
    if w in ("r", "right"):
        return "right"
    return "bilateral"


def extract_location(text: str) -> list[Location]:
    """Every lobe and zone mention in ``text`` (rules: module docstring, "Location").

    >>> [(a.value, a.side) for a in extract_location("Left lower lobe consolidation and right base atelectasis.")]
    [('LLL', 'left'), ('base', 'right')]
    """
    s = _check(text)
    out: list[Location] = []
    taken: list[tuple[int, int]] = []
    for m in _RE_LOBE_PAIR.finditer(s):
        side = m.group("side").lower()
        for key in ("a", "b"):
            lobe = side[0].upper() + _LOBE_LEVEL[m.group(key).lower()] + "L"
            out.append(Location(lobe, "lobe", side, m.group(0), m.start(), m.end()))
        taken.append(m.span())
    for m in _RE_LOBE.finditer(s):
        if _overlaps(m.span(), taken):
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
            if _overlaps(m.span(), taken):
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
                side: str | None = _side_norm(sb.group("side"))
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


# --------------------------------------------------------------------------------------------
# size
# --------------------------------------------------------------------------------------------

_NUM = r"(?:\d+(?:\.\d+)?|\.\d+)"
_APPROX = r"(?:\b(?:approximately|approx\.?|about|around|roughly|nearly|near|estimated)|~)"
_BOUND = (
    r"(?:\b(?:up\s+to|at\s+most|no\s+more\s+than|less\s+than|under|smaller\s+than|greater\s+than|more\s+than|"
    r"larger\s+than|over|at\s+least)\b|<|>|≤|≥)"
)
_SEP = r"\s*(?:x|×|by|\*)\s*"
_RE_SIZE = re.compile(
    rf"(?:(?P<approx>{_APPROX})\s*)?(?:(?P<bound>{_BOUND})\s*)?(?:(?P<approx2>{_APPROX})\s*)?"
    rf"(?<![\w.,/:-])(?P<n0>{_NUM})(?:(?P<rng>\s*(?:-|–|to)\s*)(?P<r1>{_NUM}))?(?:\s*-?\s*(?P<u0>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?"
    rf"(?:{_SEP}(?P<n1>{_NUM})(?:\s*-?\s*(?P<u1>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?)?"
    rf"(?:{_SEP}(?P<n2>{_NUM})(?:\s*-?\s*(?P<u2>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)?)?"
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


def _size_from_match(s: str, m: re.Match[str]) -> Size | None:
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
    """Every measurement in ``text``, normalised to millimetres (rules: module docstring, "Size").

    >>> [a.dims_mm for a in extract_size("Round area of density measuring 1.9 x 1.8 cm.")]
    [(19.0, 18.0)]
    """
    s = _check(text)
    out: list[Size] = []
    for m in _RE_SIZE.finditer(s):
        size = _size_from_match(s, m)
        if size is not None:
            out.append(size)
    for m in _RE_SUBCM.finditer(s):
        out.append(Size(10.0, (), None, 10.0, "<", False, "cm", "size", m.group(0), m.start(), m.end()))
    out.sort(key=lambda a: a.start)
    return out


# --------------------------------------------------------------------------------------------
# severity
# --------------------------------------------------------------------------------------------

_SEV_WORD = "|".join(sorted(SEVERITY_SYNONYMS, key=len, reverse=True))
_NOT_SEVERITY_AFTER = re.compile(
    r"^[\s-]+(?:bowel|intestines?|airways?|vessels?|bore|caliber|calibre)\b", re.IGNORECASE
)
_RE_SEV_RANGE = re.compile(
    rf"\b(?P<a>{_SEV_WORD})(?:\s*(?:-|–|/)\s*|\s+(?:to|or)\s+|-to-)(?P<b>{_SEV_WORD})(?:[- ]sized?)?\b",
    re.IGNORECASE,
)
_RE_SEV = re.compile(rf"\b(?P<w>{_SEV_WORD})(?:[- ]sized?)?\b", re.IGNORECASE)


def extract_severity(text: str) -> list[Severity]:
    """Every degree word in ``text`` on :data:`SEVERITY_SCALE` (rules: module docstring, "Severity").

    >>> [(a.value, a.low, a.high) for a in extract_severity("small-to-moderate right effusion")]
    [('mild-moderate', 3, 4)]
    """
    s = _check(text)
    out: list[Severity] = []
    taken: list[tuple[int, int]] = []
    for m in _RE_SEV_RANGE.finditer(s):
        la = SEVERITY_SCALE[SEVERITY_SYNONYMS[m.group("a").lower()]]
        lb = SEVERITY_SCALE[SEVERITY_SYNONYMS[m.group("b").lower()]]
        lo, hi = min(la, lb), max(la, lb)
        if lo == hi:
            continue  # "small to tiny" style repetitions: fall back to single words
        label = f"{_LEVEL_LABEL[lo]}-{_LEVEL_LABEL[hi]}"
        out.append(Severity(label, lo, hi, m.group(0).lower(), m.group(0), m.start(), m.end()))
        taken.append(m.span())
    for m in _RE_SEV.finditer(s):
        if _overlaps(m.span(), taken) or _NOT_SEVERITY_AFTER.match(s[m.end():]):
            continue
        word = m.group("w").lower()
        label = SEVERITY_SYNONYMS[word]
        lvl = SEVERITY_SCALE[label]
        out.append(Severity(label, lvl, lvl, word, m.group(0), m.start(), m.end()))
    out.sort(key=lambda a: a.start)
    return out


# --------------------------------------------------------------------------------------------
# quantity
# --------------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}
_RE_QTY = re.compile(
    r"(?P<multi>\ba\s+few\b|\ba\s+couple(?:\s+of)?\b|\b(?:multiple|several|numerous|many|innumerable|various|few)\b)"
    r"|(?P<single>\b(?:single|solitary|one)\b)"
    rf"|(?P<word>\b(?:{'|'.join(_NUMBER_WORDS)})\b)"
    r"|(?P<digit>(?<![\w.,/:\-])[1-9]\d?(?![\w.,/:%\-])(?=\s+[a-z]))"
    r"|(?P<art>\ban?\b)",
    re.IGNORECASE,
)
_NOT_COUNT_AFTER = re.compile(
    r"^\s*(?:x\b|×|cm\b|mm\b|centimet|millimet|th\b|st\b|nd\b|rd\b|hours?\b|hrs?\b|h\b|days?\b|weeks?\b|wks?\b|"
    r"months?\b|years?\b|yrs?\b|y/?o\b|am\b|pm\b|a\.m|p\.m|o'clock|minutes?\b|mins?\b|seconds?\b|percent|%|"
    r"(?:to|-|or|and)\s*\d)",
    re.IGNORECASE,
)
_SINGLE_STUDY = re.compile(
    r"^(?:[\s-]+[\w-]+){0,4}?[\s-]+(?:views?|images?|films?|radiographs?|projections?|exams?|examinations?|studies|study)\b",
    re.IGNORECASE,
)


def extract_quantity(text: str, *, articles: bool = True) -> list[Quantity]:
    """Every count word in ``text`` (rules: module docstring, "Quantity").

    >>> [(a.value, a.count) for a in extract_quantity("There are 2 right upper lobe lung nodules", articles=False)]
    [('multiple', 2)]
    """
    s = _check(text)
    out: list[Quantity] = []
    for m in _RE_QTY.finditer(s):
        g = m.group(0)
        if m.group("multi"):
            out.append(Quantity("multiple", None, True, g, m.start(), m.end()))
        elif m.group("single"):
            if _SINGLE_STUDY.match(s[m.end():]):
                continue
            out.append(Quantity("single", 1, True, g, m.start(), m.end()))
        elif m.group("word"):
            if _NOT_COUNT_AFTER.match(s[m.end():]):
                continue
            out.append(Quantity("multiple", _NUMBER_WORDS[g.lower()], True, g, m.start(), m.end()))
        elif m.group("digit"):
            if _NOT_COUNT_AFTER.match(s[m.end():]):
                continue
            n = int(g)
            out.append(Quantity("single" if n == 1 else "multiple", n, True, g, m.start(), m.end()))
        elif articles:
            if _SINGLE_STUDY.match(s[m.end():]):
                continue
            out.append(Quantity("single", 1, False, g, m.start(), m.end()))
    return out


# --------------------------------------------------------------------------------------------
# temporal change
# --------------------------------------------------------------------------------------------

_DEG = (
    r"(?:(?:slight|slightly|mild|mildly|minimal|minimally|marked|markedly|significant|significantly|substantial|small|"
    r"moderate|further|continued|overall)\s+)?"
)
_CMP = r"(?:prominent|conspicuous|confluent|extensive|pronounced|dense|opaque|opacified)"
_TEMPORAL_PATTERNS: list[tuple[str, str]] = [
    ("unchanged", r"\bno\s+(?:(?:significant|appreciable|substantial|definite|notable|major|marked|real|other|additional|"
     r"further|gross|visible|radiographic)\s+)*(?:(?:interval|radiographic(?:al)?)\s+)?changes?\b"),
    ("unchanged", r"\b(?:not|without|little|minimal)\s+"
     r"(?:(?:significantly|significant|appreciably|substantially|much|any|definite|interval|been)\s+)*change[sd]?\b"),
    ("unchanged", r"\bunchanged\b|\bunaltered\b|\bsimilar\b"),
    ("unchanged", r"(?<!hemodynamically\s)(?<!clinically\s)\b(?:stable|stably|stabilized)\b"),
    ("resolved", r"\bno\s+longer\s+"
     r"(?:(?:well\s+)?seen|visible|visualized|present|identified|evident|apparent|demonstrated|appreciated)\b"),
    ("resolved", r"\b(?:resolved|resolution|cleared)\b"),
    ("resolved", r"\b(?:removal|removed|extubation|extubated)\b"),
    ("new", r"\binterval\s+(?:development|appearance|placement|insertion|intubation)\b"),
    ("new", r"\b(?:has|have)\s+(?:since\s+)?developed\b|\b(?:has|have)\s+been\s+(?:placed|inserted)\b"),
    ("new", r"\b(?:placement|insertion)\s+of\b|\bnew(?:ly)?\b"),
    ("increased", rf"\binterval\s+{_DEG}increase[ds]?\b|\bincrease[ds]?\s+in\b|\bincreas(?:ing|ingly)\b"),
    ("increased", rf"\b(?:has|have|had)\s+{_DEG}(?:increased|enlarged|grown|progressed|worsened)\b|"
     rf"\bincreased(?=\s+(?:since|from|compared|relative))"),
    ("increased", rf"\bworse(?:n(?:ed|ing|s)?)?\b|\benlarging\b|\bprogress(?:ed|ing|ion|ive)\b|\bmore\s+{_CMP}\b"),
    ("decreased", rf"\binterval\s+{_DEG}decrease[ds]?\b|\bdecrease[ds]?\s+in\b|\bdecreasing\b"),
    ("decreased", rf"\b(?:has|have|had)\s+{_DEG}decreased\b|\bdecreased(?=\s+(?:since|from|compared|relative))"),
    ("decreased", rf"\bimprov(?:ed|ing|ement|es)\b|\bsmaller\b|\bresolving\b|\bclearing\b|\bless\s+{_CMP}\b|"
     rf"\breduction\s+in\b|\bdiminish(?:ed|ing)\b"),
    ("persistent", r"\bpersist(?:ent(?:ly)?|s|ing|ed|ence)?\b|"
     r"\bagain\s+(?:seen|noted|demonstrated|identified|visualized|present|evident)\b"),
    ("persistent", r"\bredemonstrat(?:ed|es|ion|ing)\b|\bremain(?:s|ed)?\b|\bresidual\b"),
]
_RE_TEMPORAL = [(v, re.compile(p, re.IGNORECASE)) for v, p in _TEMPORAL_PATTERNS]


def extract_temporal(text: str) -> list[Temporal]:
    """Every change-over-time phrase in ``text`` (rules: module docstring, "Temporal change").

    >>> [a.value for a in extract_temporal(
    ...     "No significant interval change. Interval increase in the left pleural effusion.")]
    ['unchanged', 'increased']
    """
    s = _check(text)
    out: list[Temporal] = []
    taken: list[tuple[int, int]] = []
    for value, rx in _RE_TEMPORAL:
        for m in rx.finditer(s):
            if _overlaps(m.span(), taken):
                continue
            out.append(Temporal(value, m.group(0), m.start(), m.end()))
            taken.append(m.span())
    out.sort(key=lambda a: a.start)
    return out


# --------------------------------------------------------------------------------------------
# certainty
# --------------------------------------------------------------------------------------------

_CERTAINTY_PATTERNS: list[tuple[str, str]] = [
    ("possible", r"\b(?:cannot|can\s+not|could\s+not)\s+(?:be\s+)?(?:entirely\s+|completely\s+|definitely\s+|totally\s+)?"
     r"(?:excluded?|ruled?\s+out|rule\s+out)\b"),
    ("possible", r"\bnot\s+(?:be\s+)?(?:entirely\s+|completely\s+)?excluded\b"),
    ("possible", r"\b(?:may|might|could)\s+(?:also\s+)?"
     r"(?:represent|reflect|be|indicate|relate|correspond|include|have|suggest)\b"),
    ("possible", r"\bpossib(?:le|ly|ility)\b|\bquestionabl[ey]\b|\bquestion\s+of\b|\bequivocal\b|\bperhaps\b|"
     r"\buncertain\b|\bindeterminate\b"),
    ("possible", r"\bversus\b|\bvs\b\.?|\bdifferential\s+(?:diagnosis\s+)?(?:includes?|considerations?)\b"),
    ("probable", r"\b(?:most\s+)?likely\b|\bprobabl[ey]\b|\bsuspect(?:ed|s)?\b|\bsuspicious(?:\s+(?:for|of))?\b"),
    ("probable", r"\bsuggest(?:s|ed|ive|ing)?(?:\s+(?:of|for))?\b|\b(?:concerning|worrisome)\s+for\b|"
     r"\bpresum(?:ed|ably|ptive)\b|\bfavou?r(?:ed|s)?\b"),
]
_RE_CERTAINTY = [(v, re.compile(p, re.IGNORECASE)) for v, p in _CERTAINTY_PATTERNS]


def extract_certainty(text: str) -> list[Certainty]:
    """Every hedge in ``text`` (rules: module docstring, "Certainty"); scope is the negation module's.

    >>> [(a.value, a.text) for a in extract_certainty("Opacity, likely atelectasis; pneumonia cannot be excluded.")]
    [('probable', 'likely'), ('possible', 'cannot be excluded')]
    """
    s = _check(text)
    out: list[Certainty] = []
    taken: list[tuple[int, int]] = []
    for value, rx in _RE_CERTAINTY:
        for m in rx.finditer(s):
            if _overlaps(m.span(), taken):
                continue
            out.append(Certainty(value, m.group(0), m.start(), m.end()))
            taken.append(m.span())
    out.sort(key=lambda a: a.start)
    return out


# --------------------------------------------------------------------------------------------
# devices
# --------------------------------------------------------------------------------------------

_CVC_MOD = r"(?:\s+(?:central|venous|approach|dual[- ]lumen|triple[- ]lumen|double[- ]lumen|tunnel(?:l)?ed|large[- ]bore))*"
_CATH = r"(?:catheters?|lines?|sheaths?|introducers?|cordis)"
# (type, subtype, pattern); at one position the earlier pattern wins
_DEVICE_PATTERNS: list[tuple[str, str | None, str]] = [
    ("ecg_leads", None, r"(?:EKG|ECG|electrocardiogram|telemetry|(?:external\s+)?(?:cardiac\s+)?monitor(?:ing)?)\s+"
     r"(?:leads?|electrodes?|wires?|pads?)"),
    ("external_pads", None, r"(?:pacer|pacing|defibrillator|defib)\s+pads?"),
    ("swan_ganz", None, r"swan[- ]?ganz(?:\s+catheters?)?|pulmonary\s+arter(?:y|ial)\s+catheters?|(?-i:PA)\s+catheters?"),
    ("support_devices", None, r"(?:lines?\s*(?:and|/|,)\s*tubes?|tubes?\s*(?:and|/|,)\s*lines?)|"
     r"(?:medical\s+)?support(?:ing|ive)?\s+(?:medical\s+)?(?:devices?|equipment|apparatus)|"
     # a bare plural said to be in position is the collective ("Tubes in satisfactory position")
     r"(?:tubes|lines|devices)(?=\s+(?:(?:are|remain)\s+)?(?:(?:in|at)\s+)?(?:satisfactory|appropriate|standard|good|"
     r"expected|acceptable|unchanged|stable|adequate)\s+(?:position|placement|location))"),
    ("endotracheal_tube", None, r"endotracheal\s+tubes?|(?-i:ET)\s*tubes?|(?-i:ETT)(?:\s+tube)?"),
    ("tracheostomy_tube", None, r"tracheostomy(?:\s+tubes?)?|trach\s+tubes?|\btrach\b"),
    ("enteric_tube", "gastric", r"(?-i:NG)\s*/\s*(?-i:OG)(?:\s+tubes?)?|(?-i:OG)\s*/\s*(?-i:NG)(?:\s+tubes?)?"),
    ("enteric_tube", "nasogastric", r"nasogastric(?:\s+tubes?)?|(?-i:NG)\s*tubes?|(?-i:NGT)"),
    ("enteric_tube", "orogastric", r"orogastric(?:\s+tubes?)?|(?-i:OG)\s*tubes?|(?-i:OGT)"),
    ("enteric_tube", "feeding", r"feeding\s+tubes?|dobhoff(?:\s+tubes?)?|(?-i:DHT)|nasoenteric(?:\s+(?:feeding\s+)?tubes?)?|"
     r"nasojejunal\s+tubes?|(?-i:NJ)\s+tubes?"),
    ("enteric_tube", "gastrostomy", r"gastrostomy\s+tubes?|(?-i:G)[- ]tubes?|(?-i:PEG)(?:\s+tubes?)?"),
    ("enteric_tube", None, r"enteric\s+tubes?|esophagogastric\s+tubes?|gastric\s+tubes?"),
    ("chest_tube", None, r"chest\s+(?:tubes?|drains?)|thoracostomy\s+tubes?|"
     r"pleural\s+(?:pigtail\s+)?(?:drainage\s+)?(?:drains?|catheters?|tubes?)|pigtail\s+(?:catheters?|drains?)|"
     r"mediastinal\s+drains?"),
    ("central_venous_catheter", "picc", r"PICC(?:\s+(?:line|catheter)s?)?|PIC\s+(?:line|catheter)s?|"
     r"peripherally\s+inserted\s+central\s+(?:venous\s+)?catheters?"),
    ("central_venous_catheter", "internal_jugular", rf"(?:internal\s+)?jugular{_CVC_MOD}\s+{_CATH}|"
     rf"(?-i:IJ){_CVC_MOD}(?:\s+{_CATH})?(?![/\-]|\s*/|\s+(?:vein|junction)\b)"),
    ("central_venous_catheter", "subclavian", rf"subclavian{_CVC_MOD}\s+{_CATH}"),
    ("central_venous_catheter", "femoral", rf"femoral{_CVC_MOD}\s+{_CATH}"),
    ("central_venous_catheter", "umbilical", r"umbilical\s+(?:venous|arterial)\s+catheters?|(?-i:UVC|UAC)"),
    ("central_venous_catheter", "dialysis", r"(?:hemo)?dialysis\s+(?:catheter|line)s?"),
    ("central_venous_catheter", None, r"central(?:\s+venous)?\s+(?:catheter|line)s?|(?-i:CVC)|"
     r"(?:venous|vascular)\s+(?:catheter|line)s?|hickman(?:\s+catheters?)?|tunnel(?:l)?ed\s+catheters?|"
     r"triple[- ]lumen\s+catheters?"),
    ("port", None, r"(?:port[- ]?a[- ]?cath|mediport|power\s*port)(?:\s+catheter)?|"
     r"(?:(?:chest(?:\s+wall)?|infusion|venous|subcutaneous)\s+)?\bport\b(?:\s+catheter)?"),
    ("pacemaker_lead", None, r"(?:(?:pacemaker|pacer|pacing|transvenous|ICD|AICD|defibrillator)\s+)?(?:leads?|electrodes?)"
     r"(?![- ](?:pacemaker|pacer|ICD|AICD|device|defibrillator|permanent|pacing|cardiac)|\s+to\b)|"
     r"(?:epicardial\s+)?pacing\s+wires?"),
    ("pacemaker", "icd", r"(?:pacemaker|pacer)\s*/\s*(?:ICD|AICD|defibrillator)(?:\s+(?:generator|device))?|"
     r"(?-i:A?ICD)(?:\s+(?:generator|device))?|"
     r"(?:implantable\s+)?(?:cardioverter[- ])?defibrillator(?:\s+(?:generator|device))?"),
    ("pacemaker", None, r"(?:pacemaker|pacer)(?:\s+(?:generator|device))?|(?:transvenous\s+)?pacer|pacing\s+device|"
     r"generator"),
    ("sternotomy_wires", None, r"(?:median\s+|mid(?:line)?\s+)?sternotomy(?:\s+(?:wires?|sutures?|(?-i:XXXX)))?|"
     r"sternal\s+(?:suture\s+)?(?:wires?|sutures?)|cerclage\s+(?:wires?|(?-i:XXXX))"),
    ("clips", None, r"(?:(?:surgical|vascular|cholecystectomy|CABG|axillary|mediastinal)\s+)?clips?"),
    ("clips", "staples", r"(?:(?:skin|surgical)\s+)?staples"),
    ("stent", None, r"stent[- ]grafts?|stents?"),
    ("iabp", None, r"intra[- ]?aortic\s+balloon(?:\s+pump)?|(?-i:IABP)|balloon\s+pump"),
    ("catheter", None, r"catheters?"),
]
# every device pattern contains one of these: texts without any skip the (slow) alternation below
_RE_DEVICE_HINT = re.compile(
    r"\b(?:tubes?|\w*catheters?|lines?|picc|pic|ij|jugular|subclavian|femoral|umbilical|pace\w*|leads?|electrodes?|"
    r"a?icd|defib\w*|generator|sternotomy|sternal|cerclage|clips?|staples|port\w*|mediport|stents?|balloon|iabp|"
    r"drains?|swan\w*|et|ett|ng|og|ngt|ogt|nj|g|dobhoff|dht|peg|uvc|uac|cvc|devices?|equipment|apparatus|"
    r"wires?|pads?|trach\w*|hickman|sheaths?|introducers?|cordis)\b",
    re.IGNORECASE,
)
# one alternation: at each position the first pattern (in list order) that matches wins
_RE_DEVICES = re.compile(
    "|".join(rf"(?P<d{i}>\b(?:{p})(?![\w]))" for i, (_, _, p) in enumerate(_DEVICE_PATTERNS)), re.IGNORECASE
)
_RE_TIP_LOCS = [(loc, re.compile(rf"\b(?:{p})\b", re.IGNORECASE)) for loc, p in TIP_LOCATIONS.items()]
_CLAUSE_WORDS = re.compile(
    r"(?:[.;:,()]|\b(?:and|with|of|for|to|from|in|at|on|by|or|than|which|that|is|are|was|were|has|have|had|there|the|a|an|"
    r"post|status|after|following|without|versus|vs|pneumothora(?:x|ces)|effusions?|opacit(?:y|ies)|atelectasis)\b)",
    re.IGNORECASE,
)
_RE_ROUTE = [
    ("internal_jugular", re.compile(r"\b(?:internal\s+jugular|jugular|IJ)\b", re.IGNORECASE)),
    ("subclavian", re.compile(r"\bsubclavian\b", re.IGNORECASE)),
    ("femoral", re.compile(r"\bfemoral\b", re.IGNORECASE)),
    ("picc", re.compile(r"\b(?:upper\s+extremity|arm)\b", re.IGNORECASE)),
    ("dialysis", re.compile(r"\b(?:hemo)?dialysis\b", re.IGNORECASE)),
]
_RE_SIDE_WORD = re.compile(r"\b(?:left|right|bilateral|both|(?-i:[LR]))(?=[\s-]|$)", re.IGNORECASE)
_RE_OTHER_CATH = re.compile(
    r"\b(?P<w>epidural|intrathecal|drainage|biliary|nephrostomy|foley|urinary|arterial)\s*$", re.IGNORECASE
)
_GAP_TO_NEXT = re.compile(
    r"^(?:[\s-]+(?:approach|dual|triple|single|double|lumen|tunnel(?:l)?ed|central|venous|transvenous|large|bore|"
    r"(?-i:XXXX)|temporary|permanent|hemodialysis|dialysis|catheter))*[\s-]+$",
    re.IGNORECASE,
)
_RE_TUBE_PORT = re.compile(r"\b(?:side|proximal|distal)[- ]?$", re.IGNORECASE)
_RE_SAME_NP = re.compile(r"(?:\s*/\s*|\s+(?:(?-i:XXXX)\s+)*)")
_RE_DIST = re.compile(
    rf"(?P<size>(?:(?:{_APPROX})\s*)?{_NUM}(?:\s*(?:-|–|to)\s*{_NUM})?\s*-?\s*(?:mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)"
    r"\s+(?P<rel>above|below|from|beyond|past|proximal\s+to|distal\s+to|superior\s+to|inferior\s+to|short\s+of|of)\s+"
    r"(?:the\s+)?(?:level\s+(?:of\s+)?(?:the\s+)?)?",
    re.IGNORECASE,
)
_RE_REL_ONLY = re.compile(r"\b(?P<rel>above|below)\s+(?:the\s+)?(?:level\s+of\s+(?:the\s+)?)?(?=carina\b)", re.IGNORECASE)
_RE_CARINA_REF = re.compile(r"carina\b", re.IGNORECASE)
_RE_APPROPRIATE = re.compile(
    r"\b(?:good|satisfactory|standard|appropriate|expected|adequate|acceptable|proper|usual|optimal|unremarkable)\s+"
    r"(?:anatomic(?:al)?\s+)?position(?:ing)?\b",
    re.IGNORECASE,
)
_RE_MALPOSITION = re.compile(
    r"\bmal-?position(?:ed|ing)?\b|\b(?:high|low)\s+position(?:ing|ed)?\b|"
    r"\bneeds?\s+to\s+be\s+(?:advanced|retracted|withdrawn|repositioned|pulled\s+back)\b|"
    r"\bshould\s+be\s+(?:advanced|retracted|withdrawn|repositioned|pulled\s+back)\b|"
    r"\b(?:recommend\w*|consider\w*|requir\w*)\s+(?:\w+\s+){0,2}?(?:advancement|retraction|withdrawal|repositioning)\b",
    re.IGNORECASE,
)


def _tip_location_hits(s: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
    hits: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for loc, rx in _RE_TIP_LOCS:
        for m in rx.finditer(s, lo, hi):
            if _overlaps(m.span(), taken):
                continue
            hits.append((m.start(), m.end(), loc))
            taken.append(m.span())
    hits.sort()
    return hits


def _tip(s: str, lo: int, hi: int) -> TipPosition | None:
    hits = _tip_location_hits(s, lo, hi)
    distance: Size | None = None
    relation = reference = None
    spans: list[tuple[int, int]] = []
    dm = _RE_DIST.search(s, lo, hi)
    if dm:
        ref = next(((a, b, loc) for a, b, loc in hits if a == dm.end()), None)
        if ref is None and _RE_CARINA_REF.match(s, dm.end()):
            ref = (dm.end(), dm.end() + 6, "carina")
        if ref is not None:
            sm = _RE_SIZE.search(s, dm.start("size"), dm.end("size"))
            distance = _size_from_match(s, sm) if sm else None
            if distance is not None:
                distance = dataclasses.replace(distance, measures="distance")
            rel = re.sub(r"\s+", " ", dm.group("rel").lower())
            relation = "from" if rel == "of" else rel
            reference = ref[2]
            hits = [h for h in hits if h[0] != ref[0]]
            spans.append((dm.start(), ref[1]))
    if reference is None:
        rm = _RE_REL_ONLY.search(s, lo, hi)
        if rm:
            relation, reference = rm.group("rel").lower(), "carina"
            spans.append((rm.start(), rm.end() + 6))
    if not hits and reference is None:
        return None
    spans += [(a, b) for a, b, _ in hits]
    start = min(a for a, _ in spans)
    end = max(b for _, b in spans)
    locs = tuple(dict.fromkeys(loc for _, _, loc in hits))
    return TipPosition(
        locs[0] if locs else None, locs, distance.value_mm if distance else None, distance, relation, reference,
        s[start:end], start, end,
    )


def extract_devices(text: str) -> list[Device]:
    """Every device mention in ``text`` with side and tip position (rules: module docstring, "Devices").

    >>> d = extract_devices("Endotracheal tube noted with tip approximately 4.5 cm above the carina.")[0]
    >>> (d.value, d.tip.distance_mm, d.tip.relation, d.tip.reference)
    ('endotracheal_tube', 45.0, 'above', 'carina')
    """
    s = _check(text)
    heads: list[tuple[int, int, str, str | None]] = []
    if not _RE_DEVICE_HINT.search(s):
        return []
    for m in _RE_DEVICES.finditer(s):
        dtype, subtype, _ = _DEVICE_PATTERNS[int(m.lastgroup[1:])]
        if dtype == "port" and _RE_TUBE_PORT.search(s[max(0, m.start() - 10): m.start()]):
            continue
        heads.append((m.start(), m.end(), dtype, subtype))
    # a bare route ("right IJ", "IJ approach") followed by another device in the same noun phrase is that device's route
    # "PICC line catheter", "pacemaker defibrillator": a bare catheter, or the same type again, right after a
    # device (only spaces, "/" or de-identified XXXX between) is the same device
    joined: list[tuple[int, int, str, str | None]] = []
    for a, b, dtype, subtype in heads:
        if joined:
            pa, pb, pt, pst = joined[-1]
            if (dtype == "catheter" or dtype == pt) and _RE_SAME_NP.fullmatch(s[pb:a]):
                joined[-1] = (pa, b, pt, pst or subtype)
                continue
        joined.append((a, b, dtype, subtype))
    heads = joined
    merged: list[tuple[int, int, str, str | None, str | None]] = []
    skip_route: dict[int, str] = {}
    for i, (a, b, dtype, subtype) in enumerate(heads):
        bare_ij = subtype == "internal_jugular" and not re.search(
            r"(?:catheter|line|sheath|introducer|cordis)s?$", s[a:b], re.I
        )
        if bare_ij and i + 1 < len(heads) and _GAP_TO_NEXT.match(s[b: heads[i + 1][0]] or " "):
            skip_route[i + 1] = "internal_jugular"
            continue
        merged.append((a, b, dtype, subtype, skip_route.get(i)))
    out: list[Device] = []
    for j, (a, b, dtype, subtype, route) in enumerate(merged):
        prev_end = merged[j - 1][1] if j else 0
        lo = max(prev_end, a - 60)
        window = s[lo:a]
        cut = 0
        for cm in _CLAUSE_WORDS.finditer(window):
            cut = cm.end()
        phrase = window[cut:]
        side = None
        start = a
        sides = list(_RE_SIDE_WORD.finditer(phrase))
        if sides:
            side = _side_norm(sides[-1].group(0))
            start = lo + cut + sides[0].start()
        if route:
            subtype = route
        if dtype in ("central_venous_catheter", "catheter") and subtype is None:
            for name, rx in _RE_ROUTE:
                if rx.search(phrase):
                    dtype, subtype = "central_venous_catheter", name
                    break
        if dtype == "catheter":
            om = _RE_OTHER_CATH.search(s[max(0, a - 20): a])
            if om:
                subtype = om.group("w").lower()
        if dtype == "pacemaker_lead" and re.search(r"\b(?:EKG|ECG|monitor\w*|telemetry)\b", phrase, re.I):
            dtype = "ecg_leads"
        tip = None
        note = None
        if dtype not in ("clips", "sternotomy_wires", "stent", "support_devices", "ecg_leads", "external_pads"):
            nxt = merged[j + 1][0] if j + 1 < len(merged) else len(s)
            hi = min(nxt, _sentence_end(s, b), b + 160)
            tip = _tip(s, b, hi)
            lo_note = max(prev_end, a - 40)
            ctx_after = s[b:hi]
            ctx_before = s[lo_note:a]
            if _RE_MALPOSITION.search(ctx_after) or _RE_MALPOSITION.search(ctx_before):
                note = "malpositioned"
            elif _RE_APPROPRIATE.search(ctx_after):
                note = "appropriate"
        out.append(Device(dtype, subtype, side, tip, note, s[start:b], start, b))
    return out


# --------------------------------------------------------------------------------------------
# all together
# --------------------------------------------------------------------------------------------

_EXTRACTORS: dict[str, Callable[[str], list]] = {
    "laterality": extract_laterality,
    "location": extract_location,
    "size": extract_size,
    "severity": extract_severity,
    "quantity": extract_quantity,
    "temporal": extract_temporal,
    "device": extract_devices,
    "certainty": extract_certainty,
}


def extract_attributes(text: str, kinds: Iterable[str] | None = None) -> list[Attribute]:
    """All attributes in ``text`` (every kind, or those in ``kinds``), ordered by ``start``.

    ``kinds`` are names from :data:`ATTRIBUTE_KINDS`; an unknown name raises ``ValueError``
    listing the allowed ones.

    >>> [(a.kind, a.value)
    ...  for a in extract_attributes("New small left pleural effusion.", kinds=["temporal", "severity", "laterality"])]
    [('temporal', 'new'), ('severity', 'mild'), ('laterality', 'left')]
    """
    s = _check(text)
    chosen = ATTRIBUTE_KINDS if kinds is None else tuple(kinds)
    bad = [k for k in chosen if k not in _EXTRACTORS]
    if bad:
        raise ValueError(f"unknown attribute kind(s) {bad}; allowed: {list(ATTRIBUTE_KINDS)}")
    found: list[Attribute] = []
    for k in ATTRIBUTE_KINDS:
        if k in chosen:
            found.extend(_EXTRACTORS[k](s))
    order = {k: i for i, k in enumerate(ATTRIBUTE_KINDS)}
    found.sort(key=lambda a: (a.start, order[a.kind], a.end))
    return found


_FRAME_COLUMNS = ["doc", "kind", "value", "text", "start", "end", "detail"]


def _detail(a: Attribute) -> dict:
    d = {f.name: getattr(a, f.name) for f in dataclasses.fields(a) if f.name not in ("value", "text", "start", "end")}
    if isinstance(a, Device) and a.tip is not None:
        tip = a.tip
        d["tip"] = {
            "location": tip.location, "locations": tip.locations, "distance_mm": tip.distance_mm,
            "relation": tip.relation, "reference": tip.reference, "text": tip.text,
        }
    if isinstance(a, Severity):
        d["level"] = a.level
    return d


def to_frame(items: Iterable[Attribute] | Iterable[str] | Mapping[object, str] | pd.Series,
             kinds: Iterable[str] | None = None) -> pd.DataFrame:
    """A tidy table, one row per attribute: ``doc, kind, value, text, start, end, detail``.

    ``items`` is either a list of attributes (``doc`` is 0) or a batch of texts: a list of str,
    a mapping id -> text or a ``pd.Series`` (``doc`` is the list position, the key or the index).
    In a batch, missing texts (None/NaN) are skipped (they have no attributes); any other
    non-str raises ``TypeError``. ``detail`` holds the kind-specific fields as a dict (for
    devices, ``tip`` as a dict too). Column order is fixed, also when the table is empty.
    """
    if isinstance(items, str):
        raise TypeError("to_frame needs a list of attributes or a batch of texts; wrap a single text in a list")
    if isinstance(items, pd.Series):
        pairs: Iterable[tuple[object, object]] = items.items()
    elif isinstance(items, Mapping):
        pairs = items.items()
    else:
        seq = list(items)
        if all(dataclasses.is_dataclass(x) and hasattr(x, "kind") for x in seq):
            rows = [{"doc": 0, "kind": a.kind, "value": a.value, "text": a.text, "start": a.start, "end": a.end,
                     "detail": _detail(a)} for a in seq]
            return pd.DataFrame(rows, columns=_FRAME_COLUMNS)
        pairs = enumerate(seq)
    rows = []
    for doc, t in pairs:
        if t is None or (isinstance(t, float) and t != t) or t is pd.NA:
            continue
        for a in extract_attributes(_check(t), kinds):
            rows.append({"doc": doc, "kind": a.kind, "value": a.value, "text": a.text, "start": a.start,
                         "end": a.end, "detail": _detail(a)})
    return pd.DataFrame(rows, columns=_FRAME_COLUMNS)
