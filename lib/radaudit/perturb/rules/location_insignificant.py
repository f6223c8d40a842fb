"""Rewrite rules of the Location aspect (ReEvalMed Table 2, paper 001), continued: the further rules of its
insignificant cells (omission, fabrication, inaccuracy of a site that does not change care: granulomas, degenerative
spine, a lobe named as a zone). The first rule of every cell and the significant ones are in
:mod:`radaudit.perturb.rules.location`; this module is imported right after it, so the registry keeps one order
(:mod:`radaudit.perturb.rules`)."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    add_deletion,
    pick_edit,
)
from radaudit.perturb.rules._location_common import (
    GRANULOMA,
    LOBE_SIMPLE,
    lobe_alone,
    prenominal_site,
    site_case,
    site_edit,
    site_terms,
)
from radaudit.perturb.textops import (
    FINDING_NOUN,
    delete_word,
    find_all,
    is_positive,
    match_case,
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

# --------------------------------------------------------------------------- insignificant omission

_BEFORE_GRANULOMA = re.compile(r"(?:[\s-]+(?:calcified|small|tiny|punctate|stable|dense|densely|old|healed|"
                               r"\d+(?:\.\d+)?\s*-?(?:mm|cm)|(?-i:XXXX)))*[\s-]+$", re.IGNORECASE)
_AFTER_GRANULOMA = re.compile(r"(?P<keep>(?:\s+(?:is|are))?(?:\s+(?:again\s+)?(?:noted|seen|present|identified))?)"
                              r"(?P<del>\s*,\s*|\s+(?:(?:in|within|at|of|overlying|projecting\s+over)\s+(?:the\s+)?)?)",
                              re.IGNORECASE)


_SITE_ENDS = re.compile(r"\s*(?:[.,;:]|$)|\s+(?!(?:and|regions?|areas?|zones?|aspect|(?-i:XXXX))\b)\w", re.IGNORECASE)


def _granuloma_sites(text: str) -> list[tuple[str, int, int, tuple[int, int, str]]]:
    """``(site, start, end, deletion)``: a lobe or zone written right before or after an asserted
    granuloma ("Right lung base calcified granuloma", "Calcified granuloma in the left upper lobe") at
    ``[start, end)`` of the report, and the edit ``(a, b, new)`` that deletes it cleanly."""
    out = []
    for g in GRANULOMA.finditer(text):
        if not is_positive(text, g.start(), g.end()):
            continue
        sent = sentence_at(text, g.start(), g.end())
        for loc in extract_location(sent.text):
            a, b = sent.start + loc.start, sent.start + loc.end
            if re.match(r"\s*(?:and\b|/|&)", text[b:]) or re.search(r"(?:\band|/|&)\s*$", text[max(0, a - 6):a]):
                continue  # one of several sites ("right midlung and posterior costophrenic sulcus")
            if b <= g.start() and _BEFORE_GRANULOMA.fullmatch(text, b, g.start()):
                e = delete_word(text, a, b)
                if e is not None:
                    out.append((loc.text, a, b, e))
            elif a >= g.end():
                lead = _AFTER_GRANULOMA.fullmatch(text, g.end(), a)
                if lead is not None and _SITE_ENDS.match(text, b):
                    out.append((loc.text, a, b, (lead.start("del"), b, "")))
    return out


@rule("location", "insignificant", "omission", check=all_of(local_attr("location", "differ"), labels("same")))
def loc_drop_granuloma_site(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the site of a calcified granuloma ("Calcified granuloma in the left upper lobe" -> "Calcified
    granuloma"). (Choice: no example in the paper; a granuloma is a healed benign lesion that needs no
    follow-up wherever it lies, like the side in Appendix A, Location I.)"""
    cands = [(*edit, site) for site, _a, _b, edit in _granuloma_sites(text)]
    return pick_edit(text, rng, cands, lambda old: (
        f"The site {old!r} of a granuloma is omitted: a healed benign lesion needs no follow-up wherever it "
        "lies (Appendix A, Location I)."))


_SPINE_REGION = r"(?:(?:mid|upper|lower)[- ]?)?thoracic|thoracolumbar|cervicothoracic"
_DEGENERATIVE = re.compile(r"(?i)degenerat|spondylo|osteophyt|arthrit|\bDJD\b|spur|scoliosis|kyphosis")
_SPINE_SERIOUS = re.compile(r"(?i)fractur|compression|wedg|deformit|lesion|lytic|blastic|metasta|destruct|collapse|"
                            r"height|kyphoplast|vertebroplast|fusion|hardware|\brods?\b|\bscrews?\b")


@rule("location", "insignificant", "omission", check=all_of(site_terms(_SPINE_REGION, "differ"), labels("same")))
def loc_drop_spine_region(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the region of the spine of an incidental degenerative or curvature finding ("degenerative
    changes of the thoracic spine" -> "... of the spine"). (Choice: no example in the paper; the spine
    seen on a chest radiograph is the thoracic spine, and degenerative change or a mild scoliosis there
    does not alter care; fractures and destructive lesions are left alone.)"""
    cands = []
    for m in find_all(text, rf"\bthe\s+(?P<r>{_SPINE_REGION})\s+spine\b"):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or not _DEGENERATIVE.search(sent.text) or _SPINE_SERIOUS.search(sent.text):
            continue
        if not is_positive(text, m.start("r"), m.end("r")):
            continue
        add_deletion(cands, text, m.start("r"), m.end("r"), m.group("r"))
    return pick_edit(text, rng, cands, lambda old: (
        f"The spinal region {old!r} of a degenerative change is omitted: it is evident on a chest radiograph and "
        "the incidental finding needs no action (Appendix A, Location I)."))


# --------------------------------------------------------------------------- insignificant fabrication

_GRANULOMA_SITES = ("right upper lobe", "left upper lobe", "right midlung", "left midlung", "right lung base",
                    "left lung base")
_GRANULOMATOUS = re.compile(r"\bgranulomas?\b|\bcalcified\s+nodules?\b|"
                            r"\bgranulomatous\s+(?:disease|calcifications?|sequelae?|changes?)\b", re.IGNORECASE)
_NOT_LUNG = re.compile(r"(?i)splen|liver|hepat|abdom|mediastin|hil(?:ar|um|a)\b|node|anterior|posterior|lateral|"
                       r"medial|bilateral|both|throughout|scattered|diffuse|multiple|numerous|\blungs?\b|"
                       r"^\W*(?:this|these|it|they|which)\b")


@rule("location", "insignificant", "fabrication", check=all_of(local_attr("location", "differ"), labels("same")))
def loc_add_granuloma_site(text: str, rng: random.Random) -> Rewrite | None:
    """Give a site to a granuloma the report does not place ("Stable calcified granuloma." -> "Stable
    calcified granuloma in the right upper lobe."). (Choice: no example in the paper; the site of a healed
    benign granuloma changes neither interpretation nor follow-up.)"""
    cands = []
    for g in _GRANULOMATOUS.finditer(text):
        if not is_positive(text, g.start(), g.end()):
            continue
        sent = sentence_at(text, g.start(), g.end())
        if extract_location(sent.text) or extract_laterality(sent.text) or _NOT_LUNG.search(sent.text):
            continue
        after = re.match(r"\s+(?:(?:is|are)\s+)?(?:again\s+)?(?:noted|seen|present|identified)\b", text[g.end():])
        pos = g.end() + (after.end() if after else 0)
        if not re.match(r"\s*(?:[.,;:]|$)", text[pos:]):
            continue
        site = _GRANULOMA_SITES[rng.randrange(len(_GRANULOMA_SITES))]
        cands.append((pos, pos, " " + styled(text, pos, f"in the {site}"), g.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"A site is added to the {old!r}, which the report does not place: a healed benign granuloma needs no "
        "follow-up wherever it lies (Location I)."))


_DEGEN_SPINE = re.compile(
    r"\b(?:degenerative\s+(?:changes?|joint\s+disease|disease)|arthritic\s+changes?|osteoarthritis|DJD)"
    r"(?:\s+(?:are|is)\s+(?:present|noted|seen))?\s+(?:of|in|within|involving|along)\s+the\s+"
    r"(?:(?:mid|upper|lower|visualized)[- ]?)?(?:(?:thoracic|thoracolumbar|lower\s+cervical)\s+)?spine\b",
    re.IGNORECASE,
)


@rule("location", "insignificant", "fabrication", check=all_of(site_terms(r"shoulders?", "differ"), labels("same")))
def loc_add_degenerative_site(text: str, rng: random.Random) -> Rewrite | None:
    """Extend an incidental degenerative change to a second site ("degenerative changes of the thoracic
    spine" -> "... of the thoracic spine and both shoulders"). (Choice: no example in the paper; like
    Appendix A's Severity I example, a common incidental skeletal finding at one more site changes no
    decision on a chest radiograph.)"""
    cands = []
    for m in _DEGEN_SPINE.finditer(text):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or not is_positive(text, m.start(), m.end()) or _SPINE_SERIOUS.search(sent.text):
            continue
        if re.search(r"(?i)shoulder|acromioclavicular|glenohumeral|\bAC\b|endplate|disc|DISH|spondyl|osteophyt",
                     sent.text):
            continue  # a shoulder already named, or a finding only the spine can have
        if not re.match(r"\s*(?:[.,;:]|$)", text[m.end():]):
            continue
        if re.match(r"\s*(?:and\b|,\s*\w+\s+and\b|/)", text[m.end():]):
            continue  # a list of sites already
        cands.append((m.end(), m.end(), " " + styled(text, m.end(), "and both shoulders"), m.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The incidental degenerative change ({old!r}) is extended to both shoulders: common, incidental on a "
        "chest radiograph, and without consequence for care (Location I)."))


# --------------------------------------------------------------------------- insignificant inaccuracy

_NEAR_LOBE = {("right", "upper"): "middle", ("right", "middle"): "lower", ("right", "lower"): "middle",
              ("left", "upper"): "lower", ("left", "lower"): "upper"}


@rule("location", "insignificant", "inaccuracy",
      check=all_of(local_attr("location", "differ"), local_attr("laterality", "same"), labels("same")))
def loc_shift_granuloma_site(text: str, rng: random.Random) -> Rewrite | None:
    """Move a granuloma to the neighbouring lobe or zone of the same side ("calcified granuloma in the
    right upper lobe" -> "... right middle lobe", "right base" -> "right midlung"). (Choice: no example
    in the paper; a healed benign granuloma needs no follow-up wherever it lies.)"""
    cands = []
    for site, a, _b, _edit in _granuloma_sites(text):
        m = LOBE_SIMPLE.match(site)
        if m:
            w, new = m.span("lvl"), _NEAR_LOBE[(m.group("side").lower(), m.group("lvl").lower())]
        elif re.match(r"(?i)(?:left|right)\s+(?:lung\s+)?base$", site):
            w, new = re.search(r"(?i)(?:lung\s+)?base$", site).span(), "midlung"
        elif re.match(r"(?i)(?:left|right)\s+mid[- ]?lung(?:\s+zone)?$", site):
            w, new = re.search(r"(?i)mid[- ]?lung(?:\s+zone)?$", site).span(), "lung base"
        else:
            continue
        cands.append(site_edit(a, site, *w, match_case(site[w[0]:w[1]], new)))
    return pick_edit(text, rng, cands, lambda old: (
        f"The granuloma's site {old!r} is moved to the neighbouring lobe or zone: a healed benign lesion needs no "
        "follow-up wherever it lies (Location I)."))


@rule("location", "insignificant", "inaccuracy",
      check=all_of(local_attr("location", "differ"), local_attr("laterality", "same"), labels("same")))
def loc_lobe_to_zone(text: str, rng: random.Random) -> Rewrite | None:
    """Give the radiographic zone instead of the lobe ("right lower lobe opacity" -> "right basilar
    opacity", "in the left upper lobe" -> "in the left upper lung"). (Choice: no example in the paper; on
    a frontal film the lower lobe is the lung base, and a basal or lower-lobe finding is managed alike.)"""
    cands = []
    for loc in extract_location(text):
        m = LOBE_SIMPLE.match(loc.text)
        if loc.kind_of != "lobe" or not m or m.group("lvl").lower() == "middle" or not is_positive(text, loc.start, loc.end):
            continue
        sent = sentence_at(text, loc.start, loc.end)
        if not any(is_positive(text, sent.start + f.start(), sent.start + f.end())
                   for f in re.finditer(rf"\b(?:{FINDING_NOUN})\b", sent.text, re.IGNORECASE)):
            continue
        if not lobe_alone(text, loc.start, loc.end):
            continue  # "anterior segment of the right lower lobe": a segment of a zone makes no sense
        pre = prenominal_site(text, loc.end)
        zone = {"lower": "basilar" if pre else "lung base", "upper": "upper lung"}[m.group("lvl").lower()]
        new = site_case(text, loc.start + m.start("lvl"), m.group("lvl"), zone)
        cands.append(site_edit(loc.start, loc.text, m.start("lvl"), len(loc.text), new))
    return pick_edit(text, rng, cands, lambda old: (
        f"The lobe {old!r} is given as the corresponding radiographic zone: on a frontal film the two are "
        "the same region, and the finding is managed alike (Location I)."))
