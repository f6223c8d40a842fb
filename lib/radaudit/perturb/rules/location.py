"""Rewrite rules of the Location aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    add_deletion,
    one_edit,
    pick_edit,
)
from radaudit.perturb.rules._location_common import (
    BENIGN,
    GRANULOMA,
    LOBE_SIMPLE,
    SIG_NOUN,
    lesion_sentence,
    lobe_alone,
    prenominal_site,
    same_site_side,
    site_case,
    site_edit,
    tip_check,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    FINDING_NOUN,
    find_all,
    is_positive,
    is_upper_context,
    match_case,
    pick,
    sentence_at,
    styled,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
)
from radaudit.text.attributes import (
    extract_devices,
    extract_laterality,
    extract_location,
)

# --------------------------------------------------------------------------- the first rule of each cell


@rule("location", "significant", "inaccuracy", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_flip_side(text: str, rng: random.Random) -> Rewrite | None:
    """Flip the side of an asserted finding (left <-> right); Table 2: "left-sided rib fractures" -> "right"."""
    cands = []
    for lat in extract_laterality(text):
        if lat.value not in ("left", "right") or not is_positive(text, lat.start, lat.end):
            continue
        sent = sentence_at(text, lat.start, lat.end)
        sides = [a.value for a in extract_laterality(sent.text)] if sent is not None else []
        if sent is None or set(sides) >= {"left", "right"} or sides.count(lat.value) > 1:
            continue  # "right greater than left", "left hemithorax with left-sided volume loss": a flip contradicts
        if re.match(r"(?i)[\s-]+middle\s+lobe", text[lat.end:]) or _NORMAL_SIDE.match(text, lat.end):
            continue  # "left middle lobe" does not exist; "the right lung is clear" is no finding
        cands.append(lat)
    lat = pick(rng, cands)
    if lat is None:
        return None
    word = lat.text
    other = re.sub(r"(?i)left|right", lambda m: "right" if m.group(0).lower() == "left" else "left", word, count=1)
    if word in ("L", "R"):
        other = "R" if word == "L" else "L"
    new = match_case(word, other) if word not in ("L", "R") else other
    return one_edit(text, lat.start, lat.end, new,
                    f"The side of the finding changes ({word!r} -> {new!r}): a wrong site implies a different etiology "
                    "and a procedure on the wrong side (§3.1, Location).")


_NORMAL_SIDE = re.compile(r"(?i)(?:[\s-]+sided)?\s+(?:lung|hemithorax)\s+(?:(?:is|are|appears?|remains?)\s+)?"
                          r"(?:(?:grossly|otherwise|now|well|essentially)\s+)?"
                          r"(?:clear|normal|unremarkable|expanded|aerated)")
_PAIRED_AFTER = re.compile(
    rf"^[\s-]+(?:(?:\w+[\s-]+){{0,2}})(?:{FINDING_NOUN}|lung|base|apex|apical|basilar|costophrenic|hilar|hilum|"
    r"perihilar|pleural|hemithorax)\b",
    re.IGNORECASE,
)


@rule("location", "significant", "fabrication", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_make_bilateral(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a unilateral finding into a bilateral one (Appendix A: "medial right apex" -> "left and right
    apex" fabricates contralateral involvement, a possible stage shift)."""
    cands = []
    for lat in extract_laterality(text):
        if lat.value not in ("left", "right") or len(lat.text) == 1 or not is_positive(text, lat.start, lat.end):
            continue
        if not _PAIRED_AFTER.match(text[lat.end:]) or re.match(r"[\s-]+(?:upper|middle|lower)\s+lobe", text[lat.end:], re.I):
            continue
        sent = sentence_at(text, lat.start, lat.end)
        if _NORMAL_SIDE.match(text, lat.end) or (sent is not None and _NOT_BILATERAL.search(sent.text)):
            continue  # "the right lung is clear", "pads overlie the right hemithorax", "a 9 mm nodule": nothing to spread
        edit = _bilateral_edit(text, lat)
        if edit is not None:
            cands.append((*edit, lat.text))
    c = pick(rng, cands)
    if c is None:
        return None
    a, b, new, old = c
    return one_edit(text, a, b, new,
                    f"{old!r} becomes {new!r}: the finding is fabricated on the other side as well, which changes "
                    "staging and management (Appendix A, Location S).")


_NOT_BILATERAL = re.compile(r"(?i)overl[iy]|project|\b(?:nodule|mass|lesion|cavity|node|granuloma)\b|"
                            r"\b(?:a|an|one)\s+(?:[\w-]+\s+){0,3}(?:nodular\s+)?(?:opacity|density)\b|\d\s*(?:mm|cm)\b")
_SINGULAR_SITE = {"base": "bases", "apex": "apices", "hilum": "hila", "hemithorax": "hemithoraces", "lung": "lungs",
                  "effusion": "effusions", "angle": "angles", "sulcus": "sulci", "hemidiaphragm": "hemidiaphragms"}
_SITE_AFTER_SIDE = re.compile(
    r"(?P<gap>[\s-]+(?:(?:lung|mid|upper|lower|medial|lateral|posterior|anterior|costophrenic|pleural)\s+)*)"
    r"(?P<n>base|apex|hilum|hemithorax|lung|effusion|angle|sulcus|hemidiaphragm)\b", re.IGNORECASE)


def _bilateral_edit(text: str, lat) -> tuple[int, int, str] | None:
    """The edit that makes the side ``lat`` bilateral, with the site after it in the plural ("left base"
    -> "bilateral bases", "left base opacity" -> "bibasilar opacity"); None where that cannot be written
    ("a small left pleural effusion", "left lung base is ...")."""
    m = _SITE_AFTER_SIDE.match(text, lat.end)
    if m is None or re.match(r"\s+(?:base|apex|angle|sulcus|zone|field)", text[m.end():], re.IGNORECASE):
        return lat.start, lat.end, match_case(lat.text, "bilateral")  # "left hilar", "left pleural effusion" (see below)
    n = m.group("n")
    if prenominal_site(text, m.end()):
        if n.lower() in ("base", "apex"):
            return lat.start, m.end(), match_case(lat.text, "bibasilar" if n.lower() == "base" else "biapical")
        return lat.start, lat.end, match_case(lat.text, "bilateral")
    if re.search(r"(?i)\b(?:a|an|one)\s+(?:[\w-]+\s+){0,3}$", text[max(0, lat.start - 40):lat.start]) or \
            re.match(r"(?i)\s+(?:is|was|has|appears|remains|measures)\b", text[m.end():]):
        return None  # the article or the verb would have to change too
    return lat.start, m.end(), match_case(lat.text, "bilateral") + m.group("gap") + match_case(n, _SINGULAR_SITE[n.lower()])


_NOT_DROPPABLE = re.compile(r"(?i)resect|lobectomy|status\s+post|\bs/p\b|surgical")
_LOBE_PREP = re.compile(r"(?:,\s*|\s+)(?:in|within|of|at|involving|at\s+the\s+level\s+of)\s+(?:the\s+)?$", re.IGNORECASE)


@rule("location", "significant", "omission", check=all_of(local_attr("location", "differ"), labels("same")))
def loc_drop_lobe(text: str, rng: random.Random) -> Rewrite | None:
    """Remove the lobe of an asserted finding ("opacity in the right upper lobe" -> "opacity"): where
    the lesion is, needed for follow-up and intervention, is lost. (Choice: the paper gives no
    omission example for this cell; a lobe-level site is treated as clinically relevant.)"""
    cands = []
    for loc in extract_location(text):
        if loc.kind_of != "lobe" or loc.value in ("upper_lobe", "lower_lobe") or not is_positive(text, loc.start, loc.end):
            continue
        sent = sentence_at(text, loc.start, loc.end)
        if GRANULOMA.search(sent.text) or _NOT_DROPPABLE.search(sent.text):
            continue  # a healed granuloma's site is insignificant (loc_drop_granuloma_site); a resected lobe is history
        before = text[max(0, loc.start - 40):loc.start]
        if re.match(r"\s*(?:and\b|/|&)", text[loc.end:]) or re.search(r"(?i)(?:\band|/|&|\b(?:segments?|portion|aspect|"
                                                                     r"region|periphery)\s+of(?:\s+the)?)\s*$", before):
            continue  # one of several sites, or a part of the lobe: deleting it leaves "present and right upper lobe"
        pm = _LOBE_PREP.search(before)
        if pm and pm.group(0).strip()[:1].isupper():
            continue  # "In the left lower lobe a patchy infiltrate ...": the sentence would start in lower case
        if not pm and re.search(r"(?i)\bthe\s+$", before):
            continue  # "the right upper lobe was consolidated": the lobe is the subject
        if pm:
            a = max(0, loc.start - 40) + pm.start()
            cands.append((a, loc.end, "", loc.text))
            continue
        add_deletion(cands, text, loc.start, loc.end, loc.text)
    return pick_edit(text, rng, cands, lambda old: (
        f"The site {old!r} of the finding is omitted; the lesion can no longer be localised "
        "for follow-up or intervention (§3.1, Location)."))


_ZONE_AFTER = re.compile(r"^[\s-]+(?:lung\s+base|costophrenic|basilar|apical|apex|hemidiaphragm|hilar|hilum|perihilar)",
                         re.IGNORECASE)


@rule("location", "insignificant", "omission", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_drop_side(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the side of a zone-level finding ("blunting of the right costophrenic angle" -> "... the
    costophrenic angle"; Appendix A, Location I: the side is evident on the image). Not in a sentence
    with a pneumothorax, effusion, consolidation, pneumonia, mass or nodule: their side decides where a
    chest tube, a needle or a biopsy goes, so omitting it is significant."""

    def critical(a: int, b: int) -> bool:
        sent = sentence_at(text, a, b)
        return sent is not None and re.search(rf"(?i)\b(?:{CRITICAL_NOUN})\b", sent.text) is not None

    cands = []
    for m in find_all(text, r"\s+on\s+the\s+(?:left|right)(?:\s+side)?(?=\s*[.,;]|$)"):
        if is_positive(text, m.start() + 1, m.end()) and not critical(m.start() + 1, m.end()):
            cands.append((m.start(), m.end(), "", m.group(0).strip()))
    for lat in extract_laterality(text):
        if lat.value in ("left", "right") and len(lat.text) > 1 and _ZONE_AFTER.match(text[lat.end:]) \
                and is_positive(text, lat.start, lat.end) and not critical(lat.start, lat.end):
            add_deletion(cands, text, lat.start, lat.end, lat.text)
    return pick_edit(text, rng, cands, lambda old: (
        f"The side {old!r} of a zone-level finding is omitted; it is evident on the image and "
        "does not change management (Appendix A, Location I)."))


@rule("location", "insignificant", "fabrication", check=all_of(local_attr("laterality", "same"), labels("same")))
def loc_add_subsite(text: str, rng: random.Random) -> Rewrite | None:
    """Add an anatomically irrelevant sub-site to a zone ("left base" -> "left posterior base").
    (Choice: no example in the paper; a finer position within the same zone does not change care.)"""
    cands = []
    for loc in extract_location(text):
        if loc.kind_of != "zone" or loc.value not in ("base", "costophrenic_angle") or loc.side not in ("left", "right"):
            continue
        if not is_positive(text, loc.start, loc.end):
            continue
        m = re.match(r"(?i)(?:left|right)(?:-sided)?\s+(?:lung\s+)?", loc.text)
        if not m or re.search(r"(?i)posterior|lateral|medial|anterior", loc.text):
            continue
        word = "posterior" if loc.value == "base" else "lateral"
        pos = loc.start + m.end()
        cands.append((pos, word))
    c = pick(rng, cands)
    if c is None:
        return None
    pos, word = c
    new = styled(text, pos, word) + " "
    return one_edit(text, pos, pos, new, f"A finer sub-site {word!r} is added within the same zone; it does not alter "
                                   "the interpretation (Location I).")


_REDESCRIBE = [
    (r"\b(left|right)[- ]sided\b", lambda m: m.group(1)),
    (r"\bbibasilar\b", lambda m: "bilateral basilar"),
    (r"\bbibasal\b", lambda m: "bilateral basal"),
    (r"\bbiapical\b", lambda m: "bilateral apical"),
    (r"\b(left|right)\s+base\b", lambda m: f"{m.group(1)} lung base"),
    (r"\b(left|right)\s+lung\s+base\b", lambda m: f"{m.group(1)} base"),
    (r"\bcostophrenic\s+angle\b", lambda m: "costophrenic sulcus"),
    (r"\bcostophrenic\s+angles\b", lambda m: "costophrenic sulci"),
    (r"\b(left|right)\s+retrocardiac\s+(opacity|opacities|density|atelectasis|consolidation)\b",
     lambda m: f"{m.group(2)} behind the heart on the {m.group(1)}"),
    (r"\bretrocardiac\s+(opacity|opacities|density|atelectasis|consolidation)\b",
     lambda m: f"{m.group(1)} behind the heart"),
    (r"\bright\s+middle\s+lobe\b", lambda m: "middle lobe"),
    (r"\bperihilar\b", lambda m: "parahilar"),
    (r"\blingula\b", lambda m: "lingular segment"),
    (r"\b(left|right)\s+(apex)\b", lambda m: f"{m.group(1)} apical region"),
]


@rule("location", "insignificant", "inaccuracy", check=labels("same"))
def loc_redescribe(text: str, rng: random.Random) -> Rewrite | None:
    """Re-describe the same site in other words ("left retrocardiac opacity" -> "opacity behind the heart
    on the left"; Table 2, Location I)."""
    cands = []
    for i, (pat, fn) in enumerate(_REDESCRIBE):
        for m in find_all(text, pat):
            if is_positive(text, m.start(), m.end()):
                cands.append((m.start(), m.end(), i, m))
    cands = [c for c in cands if not any(o[0] <= c[0] and c[1] <= o[1] and (o[1] - o[0]) > (c[1] - c[0]) for o in cands)]
    c = pick(rng, sorted(cands, key=lambda c: (c[0], c[2])))
    if c is None:
        return None
    a, b, i, m = c
    new = _REDESCRIBE[i][1](m)
    new = new.upper() if is_upper_context(text, a) else match_case(m.group(0), new)
    return one_edit(text, a, b, new, f"The same site is re-described ({m.group(0)!r} -> {new!r}); the clinical meaning is "
                               "unchanged (Table 2, Location I).")


# --------------------------------------------------------------------------- more rules per cell: significant inaccuracy

_OTHER_LOBES = {("right", "upper"): ("middle", "lower"), ("right", "middle"): ("upper", "lower"),
                ("right", "lower"): ("upper", "middle"), ("left", "upper"): ("lower",), ("left", "lower"): ("upper",)}


@rule("location", "significant", "inaccuracy",
      check=all_of(local_attr("location", "differ"), same_site_side(), labels("same")))
def loc_swap_lobe(text: str, rng: random.Random) -> Rewrite | None:
    """Move an asserted lung finding to another lobe of the same side ("opacity in the right upper lobe"
    -> "... right lower lobe"; "lingular opacity" -> "left lower lobe opacity"). (Choice: the paper's
    examples change the side; a wrong lobe on the right side also misdirects bronchoscopy, biopsy and
    follow-up, and upper- vs lower-lobe disease suggests different causes: reactivation TB or cancer vs
    aspiration. Benign calcified lesions are left to the insignificant rules.)"""
    cands = []
    for loc in extract_location(text):
        if loc.kind_of != "lobe" or not is_positive(text, loc.start, loc.end):
            continue
        if not lesion_sentence(text, loc.start, loc.end) or not lobe_alone(text, loc.start, loc.end):
            continue
        sent = sentence_at(text, loc.start, loc.end)
        m = LOBE_SIMPLE.match(loc.text)
        if m:
            side, lvl = m.group("side").lower(), m.group("lvl").lower()
            for other in _OTHER_LOBES.get((side, lvl), ()):
                if not re.search(rf"(?i)\b{other}\s+lobe", sent.text):
                    cands.append(site_edit(loc.start, loc.text, *m.span("lvl"), match_case(m.group("lvl"), other)))
        elif loc.value == "lingula" and not re.search(r"(?i)\blower\s+lobe", sent.text):
            side = re.search(r"(?i)\bleft\s+$", text[max(0, loc.start - 8):loc.start])
            a = loc.start - len(side.group(0)) if side else loc.start
            cands.append((a, loc.end, site_case(text, a, text[a:loc.end], "left lower lobe"), text[a:loc.end]))
    return pick_edit(text, rng, cands, lambda old: (
        f"The finding is moved from the {old!r} to another lobe of the same side: follow-up, bronchoscopy or biopsy "
        "would target the wrong lobe, and upper- vs lower-lobe disease points to different causes (§3.1, Location)."))


_APEX_BASE = {"bibasilar": "biapical", "biapical": "bibasilar", "basilar": "apical", "apical": "basilar",
              "basal": "apical", "bases": "apices", "apices": "bases", "base": "apex", "apex": "base",
              "upper": "lower", "lower": "upper"}
_ZONE_WORD = re.compile(r"\b(?:bibasilar|biapical|basilar|apical|basal|bases|apices|base|apex|upper|lower)\b", re.IGNORECASE)


@rule("location", "significant", "inaccuracy",
      check=all_of(local_attr("location", "differ"), local_attr("laterality", "same"), labels("same")))
def loc_swap_apex_base(text: str, rng: random.Random) -> Rewrite | None:
    """Swap the cranio-caudal zone of an asserted finding, apex <-> base ("left basilar opacity" -> "left
    apical opacity", "bibasilar opacities" -> "biapical opacities", "upper lung zone" -> "lower lung
    zone"). (Choice: no example in the paper; apical disease suggests reactivation TB, a Pancoast tumour or
    centrilobular emphysema, basal disease aspiration, atelectasis or fibrosis, so the work-up differs.)"""
    cands = []
    for loc in extract_location(text):
        if loc.kind_of != "zone" or loc.value not in ("apex", "base", "upper_zone", "lower_zone"):
            continue
        if not is_positive(text, loc.start, loc.end) or not lesion_sentence(text, loc.start, loc.end):
            continue
        words = list(_ZONE_WORD.finditer(loc.text))
        if not words or re.match(r"(?i)\s+lordotic", text[loc.end:]):
            continue
        w = words[-1]
        new = _APEX_BASE[w.group(0).lower()]
        if new in ("apex", "base") and prenominal_site(text, loc.end):
            new = {"apex": "apical", "base": "basilar"}[new]  # "left base opacity" -> "left apical opacity"
        sent = sentence_at(text, loc.start, loc.end)
        rest = text[sent.start:loc.start] + " " + text[loc.end:sent.end]
        if re.search(r"(?i)\b(?:bi)?(?:apic|apex|upper|basal|basilar|base|lower)", rest):
            continue  # a zone is named again in the sentence ("in the left lower lung, ... lower lobe")
        cands.append(site_edit(loc.start, loc.text, *w.span(), match_case(w.group(0), new)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The zone of the finding ({old!r}) is moved between lung apex and base: apical and basal disease have "
        "different causes (reactivation TB, Pancoast tumour vs aspiration, atelectasis, fibrosis) and work-up "
        "(§3.1, Location)."))


_TIP_TERMS = [
    (r"(?:(?:upper|proximal|high|superior|mid(?:dle)?|lower|distal|low)(?:[- ]|\s+to\s+))*(?:portion\s+of\s+the\s+)?"
     r"(?:SVC|superior\s+vena\s+cava)", "right atrium"),
    (r"(?:superior\s+)?(?:cavo[- ]?atrial|caval[- ]atrial|atrio[- ]?caval|atrial[- ]caval)\s+junction", "right atrium"),
    (r"(?:(?:upper|proximal|high|mid|lower|distal|low)\s+)?right\s+atrium", "mid SVC"),
    (r"(?:(?:left|right)\s+)?(?:brachiocephalic|innominate)\s+vein", "right atrium"),
    (r"(?:(?:body\s+of\s+the\s+)|(?:gastric\s+))?stomach", "distal esophagus"),
    (r"(?:gastro-?o?esophageal|GE)\s+junction", "stomach"),
    (r"right\s+(?:mainstem|main[- ]stem|main)\s+bronchus", "mid trachea"),
]
_TIP_RX = re.compile("|".join(f"(?P<t{i}>{p})" for i, (p, _) in enumerate(_TIP_TERMS)), re.IGNORECASE)
#: Lines and tubes whose tip position is read on the film (not dialysis or tunnelled catheters, whose tip
#: belongs in the atrium, nor gastrostomy tubes, pacemaker leads or drains).
_TIP_DEVICES = ("central_venous_catheter", "port", "catheter", "enteric_tube", "endotracheal_tube")
_NOT_TIP_DEVICE = re.compile(r"(?i)dialysis|tunnel|hickman|gastrostomy|g-tube|peg\b|epidural|intrathecal|drain|femoral")


_REPOSITION = re.compile(r"(?i)reposition|retract|advanc|withdr[ae]w|pull(?:ed|ing)?\s+back|malposition|recommend|"
                         r"should\s+be|needs?\s+to")


def _tip_terms(text: str) -> list[tuple[object, re.Match[str]]]:
    """``(device, match)`` for each line/tube whose tip lies at exactly one term of :data:`_TIP_TERMS`
    and is not reported as malpositioned."""
    out = []
    for d in extract_devices(text):
        if d.value not in _TIP_DEVICES or d.tip is None or len(d.tip.locations) != 1 or d.position_note == "malpositioned":
            continue
        if _NOT_TIP_DEVICE.search(text[max(0, d.start - 20):d.end]) or not is_positive(text, d.start, d.end):
            continue
        ms = [m for m in _TIP_RX.finditer(text, d.end, d.tip.end)
              if not re.match(r"[\w-]", text[m.start() - 1:m.start()]) and not re.match(r"[\w-]", text[m.end():m.end() + 1])]
        if len(ms) != 1 or ms[0].start() > d.tip.start or ms[0].end() < d.tip.end:
            continue  # a distance ("3 cm above the cavoatrial junction") or a second place is part of the tip
        if not re.match(r"\s*(?:[.,;:/)]|$)|\s+(?:and|with|which|stable|unchanged|without|in|on|at)\b", text[ms[0].end():]):
            continue  # "within the stomach body"
        sent = sentence_at(text, d.start, d.end)
        nxt = sentence_at(text, sent.end + 1, sent.end + 2) if sent is not None and sent.end + 2 <= len(text) else None
        if any(s is not None and _REPOSITION.search(s.text) for s in (sent, nxt)):
            continue  # "... Consider repositioning": the report already calls it malpositioned
        out.append((d, ms[0]))
    return out


@rule("location", "significant", "inaccuracy", check=all_of(tip_check("moved"), labels("same")))
def loc_move_tip(text: str, rng: random.Random) -> Rewrite | None:
    """Move the tip of a line or tube between a correct and a wrong position ("PICC with tip in the mid
    SVC" -> "... in the right atrium"; "enteric tube tip in the stomach" -> "... in the distal esophagus").
    (Choice: no device example in the paper; where a tip lies decides whether the line or tube may be used
    or must be repositioned, cf. Table 3 group 4, "malpositioned right internal jugular catheter".)"""
    cands = []
    for _d, m in _tip_terms(text):
        i = int(m.lastgroup[1:])
        new = _TIP_TERMS[i][1]
        cands.append((m.start(), m.end(), site_case(text, m.start(), m.group(0), new), m.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The tip position {old!r} is moved between a correct and a wrong place: a tip in the right atrium or "
        "an enteric tube in the esophagus must be repositioned before use, a correct one may be used "
        "(§3.1, Location; Table 3)."))


# --------------------------------------------------------------------------- significant fabrication

_ONE_LESION = re.compile(r"(?i)\b(?:nodule|mass|lesion|nodular\s+opacity|density|cavity)\b|\d\s*(?:mm|cm)\b")
_ADD_LOBE = {("right", "upper"): "upper and middle", ("right", "middle"): "middle and lower",
             ("right", "lower"): "middle and lower", ("left", "upper"): "upper and lower",
             ("left", "lower"): "upper and lower"}


@rule("location", "significant", "fabrication",
      check=all_of(local_attr("location", "differ"), local_attr("laterality", "same"), labels("same")))
def loc_add_lobe(text: str, rng: random.Random) -> Rewrite | None:
    """Spread an asserted finding to a second lobe of the same side ("opacity in the right lower lobe" ->
    "... right middle and lower lobes"). (Choice: the paper's example adds the other side; a multilobar
    process on one side also changes severity scoring of pneumonia (multilobar infiltrates are an IDSA/ATS
    minor criterion for severe pneumonia) and the extent a resection or follow-up must cover.)"""
    cands = []
    for loc in extract_location(text):
        m = LOBE_SIMPLE.match(loc.text)
        if loc.kind_of != "lobe" or not m or not is_positive(text, loc.start, loc.end):
            continue
        if not lesion_sentence(text, loc.start, loc.end) or not lobe_alone(text, loc.start, loc.end):
            continue
        if _ONE_LESION.search(sentence_at(text, loc.start, loc.end).text):
            continue  # one nodule or mass lies in one lobe: "a nodule in the right upper and middle lobes" is no report
        side, lvl = m.group("side").lower(), m.group("lvl").lower()
        both = _ADD_LOBE[(side, lvl)]
        added = next(w for w in both.split(" and ") if w != lvl)
        if re.search(rf"(?i)\b{added}\s+lobe", sentence_at(text, loc.start, loc.end).text):
            continue
        tail = m.group("tail") if prenominal_site(text, loc.end) else m.group("tail") + "s"
        new = match_case(m.group("lvl"), both) + match_case(m.group("tail"), tail)
        cands.append(site_edit(loc.start, loc.text, m.start("lvl"), len(loc.text), new))
    return pick_edit(text, rng, cands, lambda old: (
        f"The finding in the {old!r} is extended to a second lobe of that side: a multilobar process is a marker "
        "of severe pneumonia and widens the extent of any resection or follow-up (§3.1, Location)."))


_ADD_TIP = {"central_venous_catheter": "right atrium", "port": "right atrium", "enteric_tube": "distal esophagus",
            "endotracheal_tube": "right mainstem bronchus"}
_TIP_TALK = re.compile(r"(?i)\btip\b|terminat|remov|extubat|withdraw|no\s+longer|discontinu|pulled|"
                       r"above|below|carina|\bcm\b|coil|cours|advanc|retract|\bends?\b|project|overl[iy]|extends")


@rule("location", "significant", "fabrication", check=all_of(tip_check("added"), labels("same")))
def loc_add_tip(text: str, rng: random.Random) -> Rewrite | None:
    """Give a line or tube whose tip the report does not place a wrong tip position ("Left subclavian line
    is stable." -> "Left subclavian line with the tip in the right atrium is stable."; an enteric tube in
    the distal esophagus, an endotracheal tube in the right mainstem bronchus). (Choice: no device example
    in the paper; a fabricated malposition prompts repositioning or a repeat film, Table 3 group 4.)"""
    cands = []
    for d in extract_devices(text):
        if d.value not in _ADD_TIP or d.tip is not None or d.position_note is not None:
            continue
        if _NOT_TIP_DEVICE.search(text[max(0, d.start - 20):d.end]) or not is_positive(text, d.start, d.end):
            continue
        sent = sentence_at(text, d.start, d.end)
        if sent is None or _TIP_TALK.search(sent.text):
            continue
        nxt = sentence_at(text, sent.end + 1, sent.end + 2) if sent.end + 2 <= len(text) else None
        if nxt is not None and re.search(r"(?i)\btip\b|terminat", nxt.text):
            continue  # "PICC line is in place. The tip is in ...": the tip is placed in the next sentence
        if not re.match(r"[\s.,;:]|$", text[d.end:d.end + 1]):
            continue
        cands.append((d.end, d.end, " " + styled(text, d.end, f"with the tip in the {_ADD_TIP[d.value]}"), d.text))
    return pick_edit(text, rng, cands, lambda old: (
        f"A tip position the report does not give is added to the {old!r}: a tip in the right atrium, the "
        "esophagus or a mainstem bronchus is a malposition that must be corrected before use (§3.1, Location; "
        "Table 3)."))


# --------------------------------------------------------------------------- significant omission

_BILATERAL_FORMS = re.compile(
    r"\b(?P<bi>bilateral|both)(?=[\s-])"
    r"|\b(?P<pre>bibasilar|biapical|bibasal)\b"
    r"|\b(?P<adv>bilaterally)\b"
    r"|\b(?P<bases>(?:(?:both|bilateral)\s+)?lung\s+bases|(?<=the\s)bases)\b",
    re.IGNORECASE,
)
_ASYMMETRY = re.compile(r"(?i)\bthan\b|[<>]|larger|greater|more\s+on|predominan|asymmetr|symmetr|equal|"
                        r"\bleft\b|\bright\b|\bL\b|\bR\b")
_PLURAL_SITE = re.compile(r"(?i)\b(?:bases|apices|zones|fields|lungs|hila|hemithoraces|diffuse(?:ly)?|throughout)\b")
_ANATOMIC_NEXT = re.compile(r"(?i)[\s-]+(?:pleural|upper|middle|mid|lower|lung|basilar|basal|apical|perihilar|hilar|"
                            r"parenchymal|pulmonary)\b")


@rule("location", "significant", "omission", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_make_unilateral(text: str, rng: random.Random) -> Rewrite | None:
    """Keep one side of a bilateral finding and drop the other ("small bilateral pleural effusions" ->
    "small left pleural effusion", "bibasilar opacities" -> "right basilar opacities"). (Choice: the
    mirror of Appendix A's Location S example; bilateral opacities are a criterion of ARDS and bilateral
    effusions suggest heart failure, while a unilateral effusion or opacity calls for a local work-up,
    e.g. diagnostic thoracentesis.)"""
    cands = []
    for m in _BILATERAL_FORMS.finditer(text):
        if not is_positive(text, m.start(), m.end()):
            continue
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or BENIGN.search(sent.text) or re.search(r"(?i)atelecta|scar|emphysema", sent.text):
            continue
        rest = sent.text[:m.start() - sent.start] + " " + sent.text[m.end() - sent.start:]
        if _ASYMMETRY.search(rest) or _BILATERAL_FORMS.search(rest) or _PLURAL_SITE.search(rest):
            continue  # "left greater than right", another side named: dropping one side would contradict it
        nxt = sentence_at(text, sent.end + 1, sent.end + 2) if sent.end + 2 <= len(text) else None
        if nxt is not None and (_BILATERAL_FORMS.search(nxt.text) or _PLURAL_SITE.search(nxt.text)):
            continue  # "Innumerable bilateral nodules. These are seen throughout both lungs."
        side = ("left", "right")[rng.randrange(2)]
        after = text[m.end():sent.end]
        noun = re.match(rf"(?P<gap>(?:[\s-]+[A-Za-z-]+?){{0,3}}?)[\s-]+(?P<n>{SIG_NOUN})\b", after, re.IGNORECASE)
        if noun is not None and not is_positive(text, m.end() + noun.start("n"), m.end() + noun.end("n")):
            noun = None
        if m.group("bi"):
            if noun is None or m.group("bi").lower() == "both":
                continue
            n = noun.group("n")
            word = side if _ANATOMIC_NEXT.match(after) else f"{side}-sided"
            if n.lower() == "effusions":
                if re.search(r"(?i)\b(?:are|were|two)\s+(?:\w+\s+){0,2}$", text[sent.start:m.start()]) or \
                        re.match(r"(?i)\s+(?:are|were|have|persist|remain)\b", after[noun.end():]):
                    continue
                b = m.end() + noun.end()
                new = match_case(m.group(0), word) + after[:noun.end("n") - 1]  # "effusions" -> "effusion"
                cands.append((m.start(), b, new, m.group(0)))
            else:
                cands.append((m.start(), m.end(), match_case(m.group(0), word), m.group(0)))
        elif m.group("pre"):
            if noun is None:
                continue
            new = match_case(m.group(0), f"{side} {m.group(0).lower()[2:]}")
            cands.append((m.start(), m.end(), new, m.group(0)))
        else:
            before = [f for f in re.finditer(rf"(?i)\b(?:{SIG_NOUN})\b", text[sent.start:m.start()])
                      if is_positive(text, sent.start + f.start(), sent.start + f.end())]
            if not before and noun is None:
                continue
            if m.group("adv"):
                cands.append((m.start(), m.end(), styled(text, m.start(), f"on the {side}"), m.group(0)))
            else:
                words = m.group(0).split()
                new = f"{side} lung base" if words[-2:][0].lower() == "lung" else f"{side} base"
                cands.append((m.start(), m.end(), site_case(text, m.start(), m.group(0), new), m.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The bilateral finding ({old!r}) is reported on one side only: the other side's involvement is lost, "
        "and unilateral vs bilateral opacities or effusions have different causes and work-up (bilateral "
        "opacities are an ARDS criterion; a unilateral effusion calls for thoracentesis) (§3.1, Location)."))


_TIP_LEAD = re.compile(
    r"(?P<keep>(?:\s+(?:is|are|remains|again\s+seen|unchanged|stable|present|noted|seen|identified|coiled))*)"
    r"(?P<del>,?\s+(?:(?:with|and)\s+)?(?:(?:its|the)\s+)?(?:distal\s+)?(?:tip\s+)?(?:(?:is|lies|appears|projects|"
    r"projecting|overlies|overlying|terminates|terminating|ends|seen)\s+)?(?:(?:in|at|within|over|near)\s+)?"
    r"(?:the\s+)?(?:expected\s+(?:location|region)\s+of\s+the\s+)?)",
    re.IGNORECASE,
)


@rule("location", "significant", "omission", check=all_of(tip_check("dropped"), labels("same")))
def loc_drop_tip(text: str, rng: random.Random) -> Rewrite | None:
    """Omit where the tip of a line or tube lies ("Right PICC is unchanged with tip at the caval atrial
    junction." -> "Right PICC is unchanged."). (Choice: no device example in the paper; the tip position
    is what a line check film is read for, and without it a line cannot be cleared for use.)"""
    cands = []
    for d, m in _tip_terms(text):
        lead = _TIP_LEAD.fullmatch(text, d.end, m.start())
        if lead is None or not re.search(r"[A-Za-z,]", lead.group("del")):
            continue
        if not re.match(r"\s*(?:[.,;:]|$)|\s+and\b", text[m.end():]):
            continue
        cands.append((lead.start("del"), m.end(), "", text[lead.start("del"):m.end()].strip()))
    return pick_edit(text, rng, cands, lambda old: (
        f"The tip position ({old!r}) is omitted: a line or tube cannot be cleared for use, and a malposition "
        "cannot be excluded, without it (§3.1, Location)."))
