"""Devices: lines, tubes and hardware, with their side and tip position.

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
"""

from __future__ import annotations

import dataclasses
import re

from radaudit.text.attributes.common import check_text, first_matches, side_norm
from radaudit.text.attributes.records import Device, Size, TipPosition
from radaudit.text.attributes.size import APPROX_PATTERN, NUM_PATTERN, RE_SIZE, size_from_match
from radaudit.text.attributes.vocabulary import TIP_LOCATIONS

_SENT_END = re.compile(r"[.!?](?=\s|$)")


def _sentence_end(s: str, pos: int) -> int:
    m = _SENT_END.search(s, pos)
    return m.start() if m else len(s)


_CVC_MOD = r"(?:\s+(?:central|venous|approach|dual[- ]lumen|triple[- ]lumen|double[- ]lumen|tunnel(?:l)?ed|large[- ]bore))*"
_CATH = r"(?:catheters?|lines?|sheaths?|introducers?|cordis)"
#: (type, subtype, pattern); at one position the earlier pattern wins.
DEVICE_PATTERNS: list[tuple[str, str | None, str]] = [
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
    "|".join(rf"(?P<d{i}>\b(?:{p})(?![\w]))" for i, (_, _, p) in enumerate(DEVICE_PATTERNS)), re.IGNORECASE
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
    rf"(?P<size>(?:(?:{APPROX_PATTERN})\s*)?{NUM_PATTERN}(?:\s*(?:-|–|to)\s*{NUM_PATTERN})?\s*-?\s*"
    r"(?:mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)\b)"
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


def _tip(s: str, lo: int, hi: int) -> TipPosition | None:
    hits = sorted(first_matches(s, _RE_TIP_LOCS, lo, hi))
    distance: Size | None = None
    relation = reference = None
    spans: list[tuple[int, int]] = []
    dm = _RE_DIST.search(s, lo, hi)
    if dm:
        ref = next(((a, b, loc) for a, b, loc in hits if a == dm.end()), None)
        if ref is None and _RE_CARINA_REF.match(s, dm.end()):
            ref = (dm.end(), dm.end() + 6, "carina")
        if ref is not None:
            sm = RE_SIZE.search(s, dm.start("size"), dm.end("size"))
            distance = size_from_match(s, sm) if sm else None
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
    """Every device mention in ``text`` with side and tip position (rules: this module's docstring).

    >>> d = extract_devices("Endotracheal tube noted with tip approximately 4.5 cm above the carina.")[0]
    >>> (d.value, d.tip.distance_mm, d.tip.relation, d.tip.reference)
    ('endotracheal_tube', 45.0, 'above', 'carina')
    """
    s = check_text(text)
    heads: list[tuple[int, int, str, str | None]] = []
    if not _RE_DEVICE_HINT.search(s):
        return []
    for m in _RE_DEVICES.finditer(s):
        dtype, subtype, _ = DEVICE_PATTERNS[int(m.lastgroup[1:])]
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
            side = side_norm(sides[-1].group(0))
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

