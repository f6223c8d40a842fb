"""Rewrite rules of the Location aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _one,
    _pick_edit,
)
from radaudit.perturb.textops import (
    FINDING_NOUN,
    delete_word,
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
    extract_laterality,
    extract_location,
)


@rule("location", "significant", "inaccuracy", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_flip_side(text: str, rng: random.Random) -> Rewrite | None:
    """Flip the side of an asserted finding (left <-> right); Table 2: "left-sided rib fractures" -> "right"."""
    cands = []
    for lat in extract_laterality(text):
        if lat.value not in ("left", "right") or not is_positive(text, lat.start, lat.end):
            continue
        sent = sentence_at(text, lat.start, lat.end)
        if sent is None or {a.value for a in extract_laterality(sent.text)} >= {"left", "right"}:
            continue  # "right greater than left": flipping one side makes nonsense
        cands.append(lat)
    lat = pick(rng, cands)
    if lat is None:
        return None
    word = lat.text
    other = re.sub(r"(?i)left|right", lambda m: "right" if m.group(0).lower() == "left" else "left", word, count=1)
    if word in ("L", "R"):
        other = "R" if word == "L" else "L"
    new = match_case(word, other) if word not in ("L", "R") else other
    return _one(text, lat.start, lat.end, new,
                f"The side of the finding changes ({word!r} -> {new!r}): a wrong site implies a different etiology "
                "and a procedure on the wrong side (§3.1, Location).")


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
        cands.append(lat)
    lat = pick(rng, cands)
    if lat is None:
        return None
    new = match_case(lat.text, "bilateral")
    return _one(text, lat.start, lat.end, new,
                f"{lat.text!r} becomes {new!r}: the finding is fabricated on the other side as well, which changes "
                "staging and management (Appendix A, Location S).")


_LOBE_PREP = re.compile(r"(?:,\s*|\s+)(?:in|within|of|at|involving|at\s+the\s+level\s+of)\s+the\s+$", re.IGNORECASE)


@rule("location", "significant", "omission", check=all_of(local_attr("location", "differ"), labels("same")))
def loc_drop_lobe(text: str, rng: random.Random) -> Rewrite | None:
    """Remove the lobe of an asserted finding ("opacity in the right upper lobe" -> "opacity"): where
    the lesion is, needed for follow-up and intervention, is lost. (Choice: the paper gives no
    omission example for this cell; a lobe-level site is treated as clinically relevant.)"""
    cands = []
    for loc in extract_location(text):
        if loc.kind_of != "lobe" or loc.value in ("upper_lobe", "lower_lobe") or not is_positive(text, loc.start, loc.end):
            continue
        pm = _LOBE_PREP.search(text[max(0, loc.start - 40):loc.start])
        if pm:
            a = max(0, loc.start - 40) + pm.start()
            cands.append((a, loc.end, "", loc.text))
            continue
        e = delete_word(text, loc.start, loc.end)
        if e is not None:
            cands.append((*e, loc.text))
    return _pick_edit(text, rng, cands, lambda old: (
        f"The site {old!r} of the finding is omitted; the lesion can no longer be localised "
        "for follow-up or intervention (§3.1, Location)."))


_ZONE_AFTER = re.compile(r"^[\s-]+(?:lung\s+base|costophrenic|basilar|apical|apex|hemidiaphragm|hilar|hilum|perihilar)",
                         re.IGNORECASE)


@rule("location", "insignificant", "omission", check=all_of(local_attr("laterality", "differ"), labels("same")))
def loc_drop_side(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the side of a zone-level finding ("blunting of the right costophrenic angle" -> "... the
    costophrenic angle"; Appendix A, Location I: the side is evident on the image)."""
    cands = []
    for m in find_all(text, r"\s+on\s+the\s+(?:left|right)(?:\s+side)?(?=\s*[.,;]|$)"):
        if is_positive(text, m.start() + 1, m.end()):
            cands.append((m.start(), m.end(), "", m.group(0).strip()))
    for lat in extract_laterality(text):
        if lat.value in ("left", "right") and len(lat.text) > 1 and _ZONE_AFTER.match(text[lat.end:]) \
                and is_positive(text, lat.start, lat.end):
            e = delete_word(text, lat.start, lat.end)
            if e is not None:
                cands.append((*e, lat.text))
    return _pick_edit(text, rng, cands, lambda old: (
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
    return _one(text, pos, pos, new, f"A finer sub-site {word!r} is added within the same zone; it does not alter "
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
    (r"\bretrocardiac\s+(opacity|opacities|density|atelectasis|consolidation)\b", lambda m: f"{m.group(1)} behind the heart"),
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
    return _one(text, a, b, new, f"The same site is re-described ({m.group(0)!r} -> {new!r}); the clinical meaning is "
                           "unchanged (Table 2, Location I).")
