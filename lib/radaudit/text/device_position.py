"""Is a tube or line where it should be? A verdict per device mention from its tip and its sentence.

A malpositioned tube or line is one of the findings radiologists communicate at once (an
endotracheal tube in a mainstem bronchus, a feeding tube in the airway: ACR Actionable Reporting
Work Group, Larson et al. 2014, doi:10.1016/j.jacr.2013.12.016). :func:`radaudit.text.attributes.extract_devices`
finds the device, its tip location and any explicit remark (``position_note``); :func:`device_position`
turns that into ``"malpositioned"``, ``"appropriate"`` or ``None`` (not stated, or no rule for this
device).

Rules (ours, from standard chest radiograph teaching; a stated remark always counts)
-----------------------------------------------------------------------------------
- An explicit remark decides: "malpositioned", "misplaced", "too high/low/deep", "coiled/looped/
  kinked", or a recommendation to advance, withdraw, retract, pull back or reposition →
  malpositioned; "in standard/good/satisfactory/appropriate/expected position", "appropriately
  positioned" → appropriate.
- Airway tubes (endotracheal, tracheostomy): tip in a mainstem bronchus, the bronchus intermedius,
  the esophagus, at or below the carina → malpositioned; an endotracheal tip less than 2 cm or more
  than 8 cm above the carina → malpositioned (the accepted range is about 5 ± 2 cm with the neck
  neutral); in the trachea, 2-8 cm above the carina → appropriate.
- Enteric tubes (nasogastric, orogastric, feeding): tip in the esophagus, at the GE junction (side
  port above it), in the trachea or a bronchus, or "in the lung/airway" → malpositioned; in the
  stomach, duodenum or below the diaphragm → appropriate.
- Central venous catheters, PICCs, ports: tip in the SVC, at the cavoatrial junction or in the right
  atrium → appropriate; in the internal jugular, subclavian or axillary vein, the right ventricle
  or the IVC → malpositioned. Pulmonary artery (Swan-Ganz) catheters: main/right/left pulmonary
  artery → appropriate; right atrium/ventricle (coiled short) or an interlobar artery (too far)
  → malpositioned.
- Other devices (chest tubes, pacemaker leads, clips, ...): only an explicit remark gives a verdict.
"""

from __future__ import annotations

import re
from typing import Literal

from radaudit.text.attributes import Device

__all__ = ["device_position", "POSITIONED_DEVICES"]

Verdict = Literal["malpositioned", "appropriate"]

#: Devices whose position is judged (the others only by an explicit remark).
POSITIONED_DEVICES: tuple[str, ...] = ("endotracheal_tube", "tracheostomy_tube", "enteric_tube",
                                       "central_venous_catheter", "port", "swan_ganz", "chest_tube", "iabp")

_REMARK_BAD = re.compile(
    r"\b(?:mal-?position\w*|misplac\w*|too\s+(?:high|low|deep|proximal|distal|shallow)|(?:coiled|looped|kinked|"
    r"curled|folded)\b|(?:recommend\w*|suggest\w*|should|could|consider\w*|needs?|requires?|may\s+be)\s+"
    r"(?:be\s+)?(?:\w+\s+)?(?:advanc\w*|withdr[ae]w\w*|retract\w*|pull\w*\s+back|reposition\w*|re-?position\w*)|"
    r"(?:advancement|withdrawal|retraction|repositioning)\s+(?:is\s+|by\s+|of\s+)?(?:recommended|suggested|advised|"
    r"\d))",
    re.IGNORECASE)
_AIRWAY_WORDS = re.compile(r"\b(?:bronch\w*|airway|trachea|lung|pleural\s+space)\b", re.IGNORECASE)
_AIRWAY_BAD = {"right_mainstem_bronchus", "left_mainstem_bronchus", "esophagus", "carina"}
_ENTERIC_BAD = {"esophagus", "ge_junction", "trachea", "right_mainstem_bronchus", "left_mainstem_bronchus", "carina"}
_ENTERIC_OK = {"stomach", "duodenum", "below_diaphragm"}
_VENOUS_OK = {"svc", "upper_svc", "mid_svc", "lower_svc", "cavoatrial_junction", "right_atrium"}
_VENOUS_BAD = {"internal_jugular_vein", "subclavian_vein", "axillary_vein", "right_ventricle", "ivc"}
_PA_OK = {"pulmonary_artery", "right_pulmonary_artery", "left_pulmonary_artery"}
_PA_BAD = {"right_atrium", "right_ventricle"}


def device_position(device: Device, sentence: str = "") -> Verdict | None:
    """``"malpositioned"``, ``"appropriate"`` or ``None`` for one device of ``sentence`` (rules: module
    docstring). ``sentence`` is the text the device was extracted from (its words after the device
    are searched for a remark the extractor does not read, e.g. "coiled", "recommend advancing").

    >>> from radaudit.text.attributes import extract_devices
    >>> s = "Endotracheal tube tip is in the right mainstem bronchus."
    >>> device_position(extract_devices(s)[0], s)
    'malpositioned'
    >>> s = "ETT terminates 4 cm above the carina."
    >>> device_position(extract_devices(s)[0], s)
    'appropriate'
    """
    if device.position_note == "malpositioned":
        return "malpositioned"
    after = sentence[device.end:] if sentence else ""
    after = re.split(r"[.;]|\b(?:and|with)\s+(?:an?|the)\s+\w+\s+(?:tube|line|catheter)\b", after, maxsplit=1)[0]
    if _REMARK_BAD.search(after):
        return "malpositioned"
    verdict = _by_tip(device, after)
    if verdict is not None:
        return verdict
    if device.position_note == "appropriate":
        return "appropriate"
    return None


def _by_tip(device: Device, after: str) -> Verdict | None:
    tip = device.tip
    locs = set(tip.locations) if tip else set()
    kind = device.value
    if kind in ("endotracheal_tube", "tracheostomy_tube"):
        if locs & _AIRWAY_BAD or (tip and tip.relation == "below" and tip.reference == "carina"):
            return "malpositioned"
        if kind == "endotracheal_tube" and tip and tip.reference == "carina" and tip.distance_mm is not None:
            return "appropriate" if 20.0 <= tip.distance_mm <= 80.0 else "malpositioned"
        return "appropriate" if locs & {"trachea", "clavicles"} else None
    if kind == "enteric_tube":
        if locs & _ENTERIC_BAD or (not locs and _AIRWAY_WORDS.search(after)):
            return "malpositioned"
        return "appropriate" if locs & _ENTERIC_OK else None
    if kind in ("central_venous_catheter", "port"):
        if locs & _VENOUS_BAD:
            return "malpositioned"
        return "appropriate" if locs & _VENOUS_OK else None
    if kind == "swan_ganz":
        if locs & _PA_BAD or re.search(r"\binterlobar\b", tip.text if tip else "", re.IGNORECASE):
            return "malpositioned"
        return "appropriate" if locs & _PA_OK else None
    return None
