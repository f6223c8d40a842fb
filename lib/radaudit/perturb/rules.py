"""Deterministic, seeded rewrite rules: one small function per (aspect, significance, error type).

Each rule reads a real report, finds an editable fact with the text toolkit (sentences, negation
scope, attribute extraction), chooses one with the ``rng`` it is given, and returns a
:class:`~radaudit.perturb.base.Rewrite` (edits in GT coordinates and an explanation), or ``None``
when the report has nothing of that kind. Facts are edited only where they are *asserted*
(:func:`~radaudit.perturb.textops.is_positive`) unless the rule is about negation. The
``check`` of each rule is its semantic verification (:mod:`radaudit.perturb.verify`).

The clinical reading of each rule follows ReEvalMed's Table 2 examples and Appendix A explanations
(paper 001); where the paper gives no example for a cell, the rule's docstring says what was chosen.
Significant ≈ "may plausibly affect downstream clinical decisions"; insignificant ≈ "does not alter
diagnostic interpretation or treatment" (§3.1, §4.3).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from radaudit.perturb.base import Edit, Rewrite, rule
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    FINDING_NOUN,
    delete_word,
    find_all,
    fix_article,
    insert_at_np,
    is_plural_before,
    is_positive,
    is_upper_context,
    match_case,
    np_start,
    pick,
    sentence_at,
    sentence_end_insert,
    status_at,
    styled,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
    max_edit_distance,
    same_sentences,
    severity_shift,
    size_ratio,
)
from radaudit.text.attributes import (
    SEVERITY_SYNONYMS,
    extract_certainty,
    extract_laterality,
    extract_location,
    extract_severity,
    extract_size,
    extract_temporal,
)
from radaudit.text.sections import sentences

__all__: list[str] = []  # the rules are reached through radaudit.perturb.base.RULES


def _one(text: str, a: int, b: int, new: str, explanation: str) -> Rewrite:
    """One edit, with the indefinite article before it agreed ("an 8mm nodule" -> "a nodule")."""
    a, b, new = fix_article(text, a, b, new)
    return Rewrite((Edit(a, b, new),), explanation)


def _pick_edit(text: str, rng: random.Random, cands: list[tuple[int, int, str, str]],
               explain: Callable[[str], str]) -> Rewrite | None:
    """One of the ``(start, end, new, old)`` candidate edits, chosen by ``rng`` from their sorted set
    (a deterministic order), explained by ``explain(old)``; ``None`` when there is none."""
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new, old = c
    return _one(text, a, b, new, explain(old))


def _del(text: str, a: int, b: int, explanation: str) -> Rewrite | None:
    e = delete_word(text, a, b)
    return None if e is None else _one(text, *e, explanation)


def _swap_word(text: str, rng: random.Random, table: dict[str, str | tuple[str, ...]], *, positive: bool = True,
               explanation: str, extra_ok=None) -> Rewrite | None:
    """Replace one whole-word/phrase key of ``table`` (case-insensitive; longest first) with its value."""
    keys = sorted(table, key=len, reverse=True)
    pat = r"(?<![\w-])(?:" + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in keys) + r")(?![\w-])"
    cands = []
    for m in find_all(text, pat):
        if positive and not is_positive(text, m.start(), m.end()):
            continue
        if extra_ok is not None and not extra_ok(text, m):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    key = " ".join(m.group(0).lower().split())
    val = table[key]
    new = val if isinstance(val, str) else val[rng.randrange(len(val))]
    new = match_case(m.group(0), new)
    return _one(text, m.start(), m.end(), new, explanation.format(old=m.group(0), new=new))


def _finding_nps(text: str, nouns: str = FINDING_NOUN, *, positive: bool = True) -> list[tuple[re.Match[str], int, list[str]]]:
    """Finding nouns (asserted by default) with their noun-phrase start and modifiers."""
    out = []
    for m in find_all(text, rf"\b(?:{nouns})\b"):
        if positive and not is_positive(text, m.start(), m.end()):
            continue
        a, mods = np_start(text, m.start())
        out.append((m, a, mods))
    return out


_SEV_WORDS = set(SEVERITY_SYNONYMS)
_TEMPORAL_WORDS = {"new", "stable", "increasing", "worsening", "improving", "decreasing", "enlarging", "persistent",
                   "residual", "chronic"}
_DESCRIPTORS = {"calcified", "noncalcified", "non-calcified", "spiculated", "irregular", "cavitary", "patchy",
                "streaky", "linear", "subsegmental", "plate-like", "platelike", "hazy", "faint", "subtle", "nodular",
                "reticular", "ill-defined", "well-defined", "round", "rounded", "discoid", "bandlike", "coarse",
                "smooth", "focal", "diffuse", "interstitial", "alveolar", "granulomatous"}

# =============================================================================== location


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


# =============================================================================== severity

_SIZE_CLASS = {2: "tiny", 3: "small", 4: "moderate", 5: "large"}
_DEGREE_CLASS = {1: "trace", 2: "minimal", 3: "mild", 4: "moderate", 5: "severe"}
_ADVERB_CLASS = {2: "minimally", 3: "mildly", 4: "moderately", 5: "severely"}
_SIZE_WORDS = {"small", "large", "tiny", "massive", "huge"}
_ADVERBS = {"mildly", "minimally", "moderately", "severely", "slightly", "markedly"}
_NOT_DEGREE_AFTER = re.compile(r"^[\s-]+(?:increase|decrease|improvement|change|interval|enlargement\s+of\s+the\s+(?:bowel))",
                               re.IGNORECASE)


def _sev_class(word: str, after: str) -> dict[int, str]:
    w = word.lower().split("-")[0]
    if w in _ADVERBS:
        return _ADVERB_CLASS
    if w in _SIZE_WORDS or (w == "moderate" and re.match(r"(?i)[\s-]+(?:sized?\s+)?(?:\w+\s+){0,2}(?:effusion|pneumothorax|amount|size)", after)):
        return _SIZE_CLASS
    return _DEGREE_CLASS


def _severity_candidates(text: str, levels: set[int]) -> list:
    out = []
    for sv in extract_severity(text):
        if sv.low != sv.high or sv.low not in levels or _NOT_DEGREE_AFTER.match(text[sv.end:]):
            continue
        if not is_positive(text, sv.start, sv.end):
            continue
        out.append(sv)
    return out


@rule("severity", "significant", "inaccuracy", check=all_of(severity_shift(2, 4), labels("same")))
def sev_shift_two(text: str, rng: random.Random) -> Rewrite | None:
    """Move a severity two levels on the ordinal scale ("mild" -> "severe", "large" -> "small"; Table 2:
    "mildly enlarged" -> "severely enlarged")."""
    sv = pick(rng, _severity_candidates(text, {1, 2, 3, 4, 5}))
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    target = sv.low + 2 if sv.low + 2 in cls else sv.low - 2
    if target not in cls:
        return None
    word = sv.text.split("-")[0].split()[0]
    new = match_case(word, cls[target]) + sv.text[len(word):]
    return _one(text, sv.start, sv.end, new, f"Severity {sv.text!r} becomes {new!r} (two levels on the scale trace < minimal "
                                       "< mild < moderate < severe): a different urgency and treatment (§3.1, Severity).")


@rule("severity", "insignificant", "inaccuracy", check=all_of(severity_shift(0.5, 0.5), labels("same")))
def sev_adjacent(text: str, rng: random.Random) -> Rewrite | None:
    """Widen a severity to a range with the adjacent level ("severe" -> "moderate-to-severe"; Table 2,
    Severity I)."""
    sv = pick(rng, _severity_candidates(text, {1, 2, 3, 4, 5}))
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    options = [lv for lv in (sv.low - 1, sv.low + 1) if lv in cls]
    if not options:
        return None
    other = options[rng.randrange(len(options))]
    lo, hi = sorted((sv.low, other))
    word = sv.text.split("-")[0].split()[0]
    joiner = " to " if cls is _ADVERB_CLASS else "-to-"
    new = match_case(word, f"{cls[lo]}{joiner}{cls[hi]}") + sv.text[len(word):]
    return _one(text, sv.start, sv.end, new, f"Severity {sv.text!r} becomes the adjacent range {new!r}; the grade is "
                                       "essentially the same (Table 2, Severity I).")


@rule("severity", "significant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_high(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a moderate/severe grade ("large left pleural effusion" -> "left pleural effusion"): the
    urgency is lost. (Choice: the paper has no omission example for this cell.)"""
    sv = pick(rng, _severity_candidates(text, {4, 5}))
    if sv is None:
        return None
    return _del(text, sv.start, sv.end, f"The grade {sv.text!r} of the finding is omitted; its urgency can no longer "
                                        "be judged (§3.1, Severity).")


@rule("severity", "insignificant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_low(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a trace/minimal/mild grade of a non-critical finding ("mild degenerative changes" ->
    "degenerative changes")."""
    cands = [sv for sv in _severity_candidates(text, {1, 2, 3})
             if not re.match(rf"(?i)^[\s-]+(?:\w+[\s-]+){{0,3}}?(?:{CRITICAL_NOUN})\b", text[sv.end:])]
    sv = pick(rng, cands)
    if sv is None:
        return None
    return _del(text, sv.start, sv.end, f"The minor grade {sv.text!r} is omitted from a non-critical finding; "
                                        "management is unchanged (Severity I).")


_SEVERE_FOR = {"effusion": "large", "effusions": "large", "pneumothorax": "large", "cardiomegaly": "severe",
               "edema": "severe", "atelectasis": "severe", "consolidation": "extensive", "emphysema": "severe",
               "opacities": "extensive", "opacity": "extensive"}


@rule("severity", "significant", "fabrication", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_add_severe(text: str, rng: random.Random) -> Rewrite | None:
    """Add a severe grade to an ungraded asserted finding ("left pleural effusion" -> "large left pleural
    effusion"; Appendix A, Severity S: fabricated severity suggests acute deterioration)."""
    cands = []
    for m, _a, mods in _finding_nps(text, "|".join(_SEVERE_FOR)):
        if any(w in _SEV_WORDS or w.split("-")[0] in _SEV_WORDS or w == "borderline" for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = _SEVERE_FOR[m.group(0).lower()]
    a, b, new = insert_at_np(text, m.start(), word)
    return _one(text, a, b, new, f"A fabricated grade {word!r} is added to {m.group(0)!r}; it suggests a severe process and "
                           "may escalate treatment (Appendix A, Severity S).")


_BENIGN_ADDITIONS = (
    ("Mild degenerative changes of the thoracic spine.", r"spine|degenerative|spondyl|osteophyt"),
    ("Mild elevation of the right hemidiaphragm.", r"hemidiaphragm|diaphragm"),
    ("Minimal biapical pleural thickening.", r"apical|apex|apices|pleural\s+thickening"),
)


@rule("severity", "insignificant", "fabrication", check=local_attr("severity", "differ"))
def sev_add_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Append a mild, common, non-specific finding ("Mild elevation of the right hemidiaphragm."; Appendix
    A, Severity I)."""
    sents = sentences(text)
    if not sents:
        return None
    options = [s for s, pat in _BENIGN_ADDITIONS if not re.search(pat, text, re.I)]
    new = pick(rng, options)
    if new is None:
        return None
    a, b, ins = sentence_end_insert(text, sents[-1], new)
    return _one(text, a, b, ins, f"A mild benign finding is added ({new!r}); it rarely needs intervention and does not "
                           "alter management (Appendix A, Severity I).")


# =============================================================================== description

_DESC_OPPOSITE = {
    "calcified": "noncalcified", "noncalcified": "calcified", "non-calcified": "calcified", "spiculated": "smooth",
    "irregular": "smooth", "irregularly": "smoothly", "ill-defined": "well-defined", "poorly defined": "well-defined",
    "well-defined": "ill-defined", "well-circumscribed": "ill-defined", "smooth": "irregular", "focal": "diffuse",
    "diffuse": "focal", "linear": "nodular", "streaky": "nodular", "platelike": "masslike", "plate-like": "masslike",
    "reticular": "nodular", "nodular": "linear", "cavitary": "solid", "interstitial": "alveolar",
    "alveolar": "interstitial", "patchy": "masslike", "round": "spiculated", "rounded": "spiculated",
}
_DESC_SYNONYM = {
    "ill-defined": "poorly defined", "poorly defined": "ill-defined", "well-defined": "well-circumscribed",
    "well-circumscribed": "well-defined", "streaky": "strandlike", "linear": "bandlike", "platelike": "discoid",
    "plate-like": "discoid", "patchy": "faint", "hazy": "faint", "faint": "subtle", "subtle": "faint",
    "coarse": "coarsened", "coarsened": "coarse", "reticular": "reticulated", "calcified": "densely calcified",
    "rounded": "round", "round": "rounded", "irregular": "uneven", "confluent": "coalescent", "nodular": "nodule-like",
}


def _prenominal(text: str, m: re.Match[str]) -> bool:
    """The descriptor modifies a noun in the same phrase (a word follows it)."""
    return bool(re.match(r"[\s-]+[A-Za-z]", text[m.end():]))


@rule("description", "significant", "inaccuracy")
def desc_opposite(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a morphology descriptor with one of opposite implication ("irregularly marginated" ->
    "smoothly marginated", "calcified" -> "noncalcified"; Table 2 and Appendix A, Description S)."""
    return _swap_word(text, rng, _DESC_OPPOSITE,
                      explanation="The morphology {old!r} becomes {new!r}: a different benign/malignant reading and "
                                  "work-up (Appendix A, Description S).")


@rule("description", "insignificant", "inaccuracy", check=labels("same"))
def desc_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a morphology descriptor with a near-synonym ("ill-defined" -> "poorly defined"; Table 2,
    Description I)."""
    return _swap_word(text, rng, _DESC_SYNONYM,
                      explanation="The descriptor {old!r} is rephrased as {new!r}; the implication is the same "
                                  "(Table 2, Description I).")


_KEY_DESC = r"calcified|noncalcified|non-calcified|spiculated|irregular(?:ly\s+marginated)?|cavitary|cavitating"
_MINOR_DESC = r"patchy|streaky|linear|hazy|faint|subtle|platelike|plate-like|subsegmental|bandlike|coarse"


@rule("description", "significant", "omission")
def desc_drop_key(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a descriptor that decides benign vs malignant ("calcified nodule" -> "nodule",
    "spiculated mass" -> "mass")."""
    cands = [m for m in find_all(text, rf"\b(?:{_KEY_DESC})\b(?=[\s-]+(?:\w+\s+){{0,2}}(?:nodules?|mass(?:es)?|lesions?|opacit(?:y|ies)|densit(?:y|ies))\b)")
             if is_positive(text, m.start(), m.end())]
    m = pick(rng, cands)
    if m is None:
        return None
    return _del(text, m.start(), m.end(), f"The descriptor {m.group(0)!r} is omitted; without it the lesion's "
                                          "benign or malignant character is unknown (Appendix A, Description S).")


@rule("description", "insignificant", "omission", check=labels("same"))
def desc_drop_minor(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a descriptor that does not change the reading ("streaky opacities" -> "opacities")."""
    cands = [m for m in find_all(text, rf"\b(?:{_MINOR_DESC})\b") if _prenominal(text, m) and is_positive(text, m.start(), m.end())]
    m = pick(rng, cands)
    if m is None:
        return None
    return _del(text, m.start(), m.end(), f"The descriptor {m.group(0)!r} is omitted; the finding and its "
                                          "implications are unchanged (Description I).")


@rule("description", "significant", "fabrication", check=labels("same"))
def desc_add_malignant(text: str, rng: random.Random) -> Rewrite | None:
    """Add a malignancy-suggesting descriptor ("nodule" -> "spiculated nodule", "opacity" -> "cavitary opacity")."""
    cands = []
    for m, _a, mods in _finding_nps(text, r"nodules?|mass(?:es)?|lesions?|opacit(?:y|ies)|consolidation"):
        if any(w in _DESCRIPTORS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = "cavitary" if m.group(0).lower().startswith(("opac", "consol")) else "spiculated"
    new = styled(text, m.start(), word) + " "
    return _one(text, m.start(), m.start(), new, f"A fabricated {word!r} morphology is added to {m.group(0)!r}; it raises "
                                           "suspicion of malignancy or infection and triggers work-up (Description S).")


_BENIGN_DESC = {"atelectasis": "subsegmental", "scarring": "linear", "granuloma": "calcified",
                "granulomas": "calcified"}


@rule("description", "insignificant", "fabrication", check=labels("same"))
def desc_add_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Add the usual benign descriptor of a benign finding ("atelectasis" -> "subsegmental atelectasis",
    "granuloma" -> "calcified granuloma")."""
    cands = []
    for m, _a, mods in _finding_nps(text, "|".join(_BENIGN_DESC)):
        if any(w in _DESCRIPTORS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = _BENIGN_DESC[m.group(0).lower()]
    new = styled(text, m.start(), word) + " "
    return _one(text, m.start(), m.start(), new, f"A benign descriptor {word!r} is added to {m.group(0)!r}; it does not "
                                           "change interpretation (Description I).")


# =============================================================================== comparison

_REVERSE = {
    "improved": "worsened", "improving": "worsening", "improvement": "worsening", "improves": "worsens",
    "decreased": "increased", "increased": "decreased", "decrease": "increase", "increase": "decrease",
    "decreasing": "increasing", "increasing": "decreasing", "worsened": "improved", "worsening": "improving",
    "worse": "better", "smaller": "larger", "resolving": "worsening", "progressed": "improved",
    "progression": "improvement", "less": "more", "more": "less", "unchanged": "worsened", "stable": "worsening",
    "diminished": "increased", "reduction": "increase",
}
_PARAPHRASE = {
    "unchanged": "essentially unchanged", "stable": "unchanged", "improved": "slightly improved",
    "improving": "slowly improving", "decreased": "diminished", "worsened": "progressed", "worsening": "progressing",
    "increasing": "enlarging", "decreasing": "diminishing", "redemonstrated": "again seen",
}


def _temporal_word_cands(text: str, table: dict[str, str], values: set[str]) -> list[tuple[int, int, str]]:
    out = []
    for t in extract_temporal(text):
        if t.value not in values:
            continue
        for w in re.finditer(r"[A-Za-z]+", t.text):
            if w.group(0).lower() in table:
                a, b = t.start + w.start(), t.start + w.end()
                if status_at(text, a, b) is not None:
                    out.append((a, b, w.group(0)))
                break
    return out


@rule("comparison", "significant", "inaccuracy", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_reverse(text: str, rng: random.Random) -> Rewrite | None:
    """Reverse the direction of a change ("edema has improved" -> "has worsened"; Table 2, Comparison S)."""
    c = pick(rng, _temporal_word_cands(text, _REVERSE, {"increased", "decreased", "unchanged"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _REVERSE[word.lower()])
    return _one(text, a, b, new, f"The change {word!r} is reversed to {new!r}: the patient appears to deteriorate (or "
                           "improve) when the opposite is true (Table 2 and Appendix A, Comparison S).")


@rule("comparison", "insignificant", "inaccuracy", check=all_of(local_attr("temporal", "same"), labels("same")))
def cmp_paraphrase(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase a change keeping its direction ("unchanged" -> "essentially unchanged", "improved" ->
    "slightly improved"; Table 2 and Appendix A, Comparison I)."""
    c = pick(rng, _temporal_word_cands(text, _PARAPHRASE, {"increased", "decreased", "unchanged", "persistent"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _PARAPHRASE[word.lower()])
    return _one(text, a, b, new, f"The change {word!r} is rephrased as {new!r}; the direction is the same (Comparison I).")


_CHANGE_ADJ = r"new|newly|increasing|worsening|improving|decreasing|enlarging|progressive|resolving"


@rule("comparison", "significant", "omission", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_drop_change(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a stated change of an asserted finding ("new left effusion" -> "left effusion"; ReXVal
    category (f), omission of a change from the previous study)."""
    cands = [m for m in find_all(text, rf"\b(?:{_CHANGE_ADJ})\b") if _prenominal(text, m)
             and is_positive(text, m.start(), m.end())]
    m = pick(rng, cands)
    if m is None:
        return None
    return _del(text, m.start(), m.end(), f"The change {m.group(0)!r} is omitted; the progression of the finding "
                                          "is lost (§2, ReXVal error (f); Comparison S).")


@rule("comparison", "insignificant", "omission", check=labels("same"))
def cmp_drop_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a statement of stability ("stable calcified granuloma" -> "calcified granuloma", ", unchanged
    from prior" removed): no change is lost."""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, r",?\s+(?:unchanged|stable)\s+(?:from|since|compared\s+(?:to|with))\s+(?:the\s+)?"
                            r"(?:prior|previous)(?:\s+(?:study|exam|examination|radiograph|film|studies))?"):
        cands.append((m.start(), m.end(), "", m.group(0).strip(" ,")))
    for m in find_all(text, r"\bagain\s+(?=(?:seen|noted|identified|demonstrated|visualized)\b)"):
        cands.append((m.start(), m.end(), "", m.group(0).strip()))
    for m in find_all(text, r"\b(?:stable|unchanged|persistent)\b"):
        if _prenominal(text, m) and not re.match(r"(?i)[\s-]+(?:from|since|and|compared|in|to|appearance)\b", text[m.end():]) \
                and is_positive(text, m.start(), m.end()):
            e = delete_word(text, m.start(), m.end())
            if e is not None:
                cands.append((*e, m.group(0)))
    return _pick_edit(text, rng, cands, lambda old: (
        f"The stability statement {old!r} is omitted; no change from the prior study is lost "
        "(Comparison I)."))


@rule("comparison", "significant", "fabrication", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_add_change(text: str, rng: random.Random) -> Rewrite | None:
    """Add a change that the GT does not state ("left pleural effusion" -> "worsening left pleural
    effusion"; ReXVal (e), a comparison not in the reference)."""
    cands = []
    for m, _a, mods in _finding_nps(text, CRITICAL_NOUN + r"|opacit(?:y|ies)|atelectasis|cardiomegaly"):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_temporal(sent.text) or any(w in _TEMPORAL_WORDS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    word = ("new", "worsening", "increasing")[rng.randrange(3)]
    a, b, new = insert_at_np(text, m.start(), word)
    return _one(text, a, b, new, f"A fabricated change {word!r} is added to {m.group(0)!r}; it implies progression and may "
                           "escalate care (§2, ReXVal (e); Comparison S).")


_CHRONIC = r"granulomas?|degenerative|scarring|osteophytes?|calcifications?|sternotomy|clips|emphysema|hyperexpan\w+|hyperinfla\w+|spondylosis|kyphosis|scoliosis"


@rule("comparison", "insignificant", "fabrication", check=labels("same"))
def cmp_add_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Add "stable" to a chronic benign finding ("calcified granuloma" -> "stable calcified granuloma")."""
    cands = []
    for m, _a, mods in _finding_nps(text, _CHRONIC):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_temporal(sent.text) or any(w in _TEMPORAL_WORDS for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    a, b, new = insert_at_np(text, m.start(), "stable")
    return _one(text, a, b, new, f"'stable' is added to the chronic finding {m.group(0)!r}; nothing in management depends "
                           "on it (Comparison I).")


# =============================================================================== negation

_FINDING_IN = re.compile(rf"\b(?:{FINDING_NOUN}|fractures?|abnormalit(?:y|ies))\b", re.IGNORECASE)


@rule("negation", "significant", "inaccuracy", check=labels("differ"))
def neg_flip(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a negated finding into an asserted one ("No evidence of pneumothorax" -> "Pneumothorax";
    "There is no effusion" -> "There is effusion"; Table 2, Negation S)."""
    cands = []
    for s in sentences(text):
        m = re.match(r"(?i)no\s+(?:(?:evidence|signs?)\s+of\s+)?(?=[a-z])", s.text)
        if m and _FINDING_IN.search(s.text) and "no new" not in s.text.lower()[:7]:
            nxt = re.match(r"[A-Za-z]+", s.text[m.end():])
            word = nxt.group(0)
            new_word = word if s.text.isupper() else word[:1].upper() + word[1:]
            cands.append((s.start, s.start + m.end() + len(word), new_word))
        for m2 in re.finditer(r"(?i)\b(there\s+(?:is|are))\s+no\s+(?:(?:evidence|signs?)\s+of\s+)?", s.text):
            if _FINDING_IN.search(s.text, m2.end()):
                keep = m2.group(1) + " " + ("evidence of " if re.search(r"(?i)evidence", m2.group(0)) else "")
                cands.append((s.start + m2.start(), s.start + m2.end(), keep))
        for m3 in re.finditer(r"(?i)\bwithout\b(?=\s+(?:\w+\s+){0,3}?(?:" + FINDING_NOUN + r")\b)", s.text):
            cands.append((s.start + m3.start(), s.start + m3.end(), match_case(m3.group(0), "with")))
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new = c
    return _one(text, a, b, new, f"The negation is removed ({text[a:b]!r} -> {new!r}): an absent finding is reported as "
                           "present, a critical false positive (Appendix A, Negation S).")


@rule("negation", "insignificant", "inaccuracy", check=labels("same"))
def neg_hedge(text: str, rng: random.Random) -> Rewrite | None:
    """Soften a negation into an equivalent hedge ("No pleural effusion" -> "No definite pleural effusion";
    Table 2, Negation I)."""
    cands = []
    for m in find_all(text, r"\bno\s+(?!definite|new\b|longer|change|significant|interval|other)(?=[a-z])"):
        if _FINDING_IN.search(text[m.end():m.end() + 60]):
            cands.append(m.end())
    pos = pick(rng, cands)
    if pos is None:
        return None
    new = styled(text, pos, "definite") + " "
    return _one(text, pos, pos, new, "'definite' is added to a negation; the finding is still reported as absent "
                               "(Table 2, Negation I).")


_PERTINENT = r"pneumothorax|pleural\s+effusions?|effusions?|consolidation|edema|pneumonia"


def _sentence_deletion(text: str, sent) -> tuple[int, int]:
    """Span deleting ``sent`` with the whitespace after it (or before it, for the last sentence)."""
    m = re.match(r"\s*", text[sent.end:])
    b = sent.end + m.end()
    if b < len(text):
        return sent.start, b
    m2 = re.search(r"\s*$", text[:sent.start])
    return sent.start - len(m2.group(0)), sent.end


@rule("negation", "significant", "omission", check=labels("differ"))
def neg_drop_pertinent(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a pertinent negative ("No pneumothorax." deleted). (Choice: the paper's omission example is
    insignificant; a pertinent negative of pneumothorax/effusion/consolidation/edema is treated as
    significant because it rules out an actionable diagnosis, §3.1 Negation.)"""
    sents = sentences(text)
    if len(sents) < 2:
        return None
    cands = []
    for s in sents:
        hits = list(re.finditer(rf"(?i)\b(?:{_PERTINENT})\b", s.text))
        if hits and all(status_at(s.text, h.start(), h.end()) == "negative" for h in hits) \
                and not any(is_positive(s.text, m.start(), m.end()) for m in re.finditer(rf"(?i)\b(?:{FINDING_NOUN})\b", s.text)):
            cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    a, b = _sentence_deletion(text, s)
    return _one(text, a, b, "", f"The pertinent negative {s.text!r} is omitted; an actionable diagnosis is no longer ruled "
                          "out (§3.1, Negation).")


_BENIGN_NORMAL = r"osseous|bony\s+(?:structures|thorax)|bones|soft\s+tissues?|upper\s+abdomen|visualized\s+skeleton|skeletal\s+structures"


@rule("negation", "insignificant", "omission", check=labels("same"))
def neg_drop_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a benign normal statement ("The osseous structures are unremarkable." deleted; Appendix A,
    Negation I: omitting a non-pertinent detail has little clinical impact)."""
    sents = sentences(text)
    if len(sents) < 2:
        return None
    cands = [s for s in sents if re.search(rf"(?i)\b(?:{_BENIGN_NORMAL})\b", s.text)
             and re.search(r"(?i)\b(?:unremarkable|intact|normal|no\s+acute|within\s+normal\s+limits)\b", s.text)
             and not re.search(rf"(?i)\b(?:{FINDING_NOUN}|fractures?)\b", s.text)]
    s = pick(rng, cands)
    if s is None:
        return None
    a, b = _sentence_deletion(text, s)
    return _one(text, a, b, "", f"The benign normal statement {s.text!r} is omitted; it does not influence diagnosis or "
                          "treatment (Appendix A, Negation I).")


@rule("negation", "insignificant", "fabrication")
def neg_add_negative(text: str, rng: random.Random) -> Rewrite | None:
    """Add a negative statement about a finding the GT does not mention ("No pneumothorax.")."""
    sents = sentences(text)
    if not sents:
        return None
    options = [s for s, pat in (("No pneumothorax.", r"pneumothora"), ("No pleural effusion.", r"effusion"),
                                ("No acute osseous abnormality.", r"osseous|bony|bones|fracture"))
               if not re.search(pat, text, re.I)]
    new = pick(rng, options)
    if new is None:
        return None
    a, b, ins = sentence_end_insert(text, sents[-1], new)
    return _one(text, a, b, ins, f"An unstated negative is added ({new!r}); it states the usual default and changes no "
                           "decision (Negation I).")


# =============================================================================== modality

_MODALITY_WRONG = {"ct": "ultrasound", "chest ct": "abdominal ultrasound", "ct scan": "ultrasound",
                   "ct chest": "abdominal ultrasound", "ct thorax": "abdominal ultrasound", "mri": "ultrasound",
                   "radiograph": "ultrasound", "radiographs": "ultrasounds", "chest radiograph": "abdominal ultrasound"}
_MODALITY_SYN = {"radiograph": "x-ray", "radiographs": "x-rays", "x-ray": "radiograph", "x-rays": "radiographs",
                 "chest ct": "CT", "ct chest": "CT", "ct of the chest": "CT", "ct scan": "CT", "ct": "CT scan",
                 "chest radiograph": "chest x-ray", "chest x-ray": "chest radiograph", "chest film": "chest radiograph"}
_MODALITY_CONTEXT = re.compile(r"(?i)\b(?:prior|previous|recent|follow-?up|followup|recommend\w*|consider\w*|comparison|"
                               r"correlat\w*|dedicated|further|outside|earlier)\b")


def _modality_ok(text: str, m: re.Match[str]) -> bool:
    if m.group(0).lower().startswith("radiograph"):
        return bool(_MODALITY_CONTEXT.search(text[max(0, m.start() - 30):m.start()]))
    return True


@rule("modality", "significant", "inaccuracy", check=labels("same"))
def mod_wrong(text: str, rng: random.Random) -> Rewrite | None:
    """Refer to the wrong imaging modality ("Refer to prior CT torso" -> "prior abdominal ultrasound";
    Table 2, Modality S)."""
    return _swap_word(text, rng, _MODALITY_WRONG, positive=False, extra_ok=_modality_ok,
                      explanation="The modality {old!r} becomes {new!r}: a study that cannot show the finding is "
                                  "referenced or recommended (Table 2, Modality S).")


@rule("modality", "insignificant", "inaccuracy", check=labels("same"))
def mod_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Name the same modality differently ("chest CT" -> "CT", "radiograph" -> "x-ray"; Appendix A,
    Modality I)."""
    return _swap_word(text, rng, _MODALITY_SYN, positive=False,
                      explanation="The modality {old!r} is written as {new!r}; the intent is clear (Appendix A, "
                                  "Modality I).")


@rule("modality", "significant", "fabrication")
def mod_overclaim(text: str, rng: random.Random) -> Rewrite | None:
    """Claim that a radiograph fully characterises a lesion that needs cross-sectional imaging
    (Appendix A, Modality S: "clearly delineated on X-ray" is incorrect)."""
    cands = _finding_nps(text, r"nodules?|mass(?:es)?|lesions?|nodular\s+opacit(?:y|ies)")
    c = pick(rng, cands)
    if c is None:
        return None
    m = c[0]
    sent = sentence_at(text, m.start(), m.end())
    if sent is None:
        return None
    new = "It is fully characterized on this radiograph and needs no CT."
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"A fabricated claim ({new!r}) about what a radiograph can show; the lesion needs CT, and "
                           "the statement may stop the work-up (Appendix A, Modality S).")


# =============================================================================== size / distance

_NUM = re.compile(r"\d+(?:\.\d+)?|\.\d+")


def _fmt(x: float) -> str:
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return s if s else "0"


def _scale_numbers(span_text: str, factor: float) -> str:
    return _NUM.sub(lambda m: _fmt(float(m.group(0)) * factor), span_text)


def _sizes(text: str, *, measures: str | None = None) -> list:
    out = []
    for sz in extract_size(text):
        if sz.bound not in ("=",) or not sz.dims_mm:
            continue
        if measures is not None and sz.measures != measures:
            continue
        if status_at(text, sz.start, sz.end) == "negative":
            continue
        out.append(sz)
    return out


@rule("size_distance", "significant", "inaccuracy", check=all_of(size_ratio(2.3, 2.7), labels("same")))
def size_scale(text: str, rng: random.Random) -> Rewrite | None:
    """Multiply a measurement by 2.5 ("3-cm mass" -> "7.5-cm mass"; Table 2: 3 cm -> 8 cm)."""
    sz = pick(rng, _sizes(text))
    if sz is None:
        return None
    new = _scale_numbers(sz.text, 2.5)
    return _one(text, sz.start, sz.end, new, f"The measurement {sz.text!r} becomes {new!r} (x2.5): a different T stage or "
                                       "device position and a different treatment (§3.1, Appendix A, Size/Distance S).")


@rule("size_distance", "insignificant", "inaccuracy", check=all_of(size_ratio(0.94, 1.06), labels("same")))
def size_jitter(text: str, rng: random.Random) -> Rewrite | None:
    """Change a measurement by 5% ("1 cm" -> "0.95 cm"; Table 2: ET tube 1 cm -> 0.9 cm above the carina)."""
    sz = pick(rng, _sizes(text))
    if sz is None:
        return None
    factor = (0.95, 1.05)[rng.randrange(2)]
    new = _scale_numbers(sz.text, factor)
    if new == sz.text:
        return None
    return _one(text, sz.start, sz.end, new, f"The measurement {sz.text!r} becomes {new!r} (±5%), within measurement "
                                       "error; no decision changes (Table 2, Size/Distance I).")


@rule("size_distance", "significant", "omission", check=all_of(local_attr("size", "differ"), labels("same")))
def size_drop(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the size of a lesion ("nodule measuring 2.2 x 1.6 cm" -> "nodule")."""
    cands = []
    for sz in _sizes(text, measures="size"):
        pm = re.search(r"(?i),?\s+(?:measuring|measures|which\s+measures|of)\s+$", text[max(0, sz.start - 30):sz.start])
        if pm:
            cands.append((max(0, sz.start - 30) + pm.start(), sz.end, "", sz.text))
            continue
        e = delete_word(text, sz.start, sz.end)
        if e is not None:
            cands.append((*e, sz.text))
    return _pick_edit(text, rng, cands, lambda old: (
        f"The measurement {old!r} is omitted; staging and follow-up intervals depend on it "
        "(Fleischner; §3.1, Size/Distance)."))


@rule("size_distance", "significant", "fabrication", check=local_attr("size", "differ"))
def size_add(text: str, rng: random.Random) -> Rewrite | None:
    """Give an unmeasured nodule/mass a large size ("nodule" -> "3.5 cm nodule")."""
    cands = []
    for m, _a, _mods in _finding_nps(text, r"nodules?|mass(?:es)?|lesions?"):
        sent = sentence_at(text, m.start(), m.end())
        if sent is not None and not extract_size(sent.text):
            cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    size = ("3.5 cm", "4 cm", "5 cm")[rng.randrange(3)]
    new = styled(text, m.start(), size) + " "
    return _one(text, m.start(), m.start(), new, f"A fabricated size {size!r} is given to {m.group(0)!r}; a lesion over 3 cm "
                                           "is a mass with a higher T stage (Appendix A, Size/Distance S).")


_NORMAL_HEART = re.compile(
    r"(?i)\b(?:heart\s+(?:size\s+)?(?:is\s+)?(?:normal|within\s+normal\s+limits)|normal\s+heart\s+size|heart\s+is\s+normal\s+in\s+size|"
    r"(?:cardiac|cardiomediastinal)\s+silhouette\s+(?:is\s+)?(?:normal|within\s+normal\s+limits|unremarkable)|"
    r"(?:cardiac|cardiomediastinal)\s+silhouette\s+and\s+\w+(?:\s+\w+)?\s+(?:size\s+)?(?:are|is)\s+(?:normal|within\s+normal\s+limits))")


@rule("size_distance", "insignificant", "fabrication", check=labels("same"))
def size_add_ctr(text: str, rng: random.Random) -> Rewrite | None:
    """Add a normal cardiothoracic ratio after a normal-heart statement (Appendix A, Size/Distance I:
    "adding a normal cardiothoracic ratio (e.g., 0.49)")."""
    m = _NORMAL_HEART.search(text)
    if m is None:
        return None
    sent = sentence_at(text, m.start(), m.end())
    if sent is None or re.search(r"(?i)cardiothoracic\s+ratio", text):
        return None
    ratio = ("0.42", "0.45", "0.47", "0.49")[rng.randrange(4)]
    a, b, ins = sentence_end_insert(text, sent, f"The cardiothoracic ratio is {ratio}.")
    return _one(text, a, b, ins, f"A normal cardiothoracic ratio ({ratio}) is added; it has no bearing on management "
                           "(Appendix A, Size/Distance I).")


# =============================================================================== internal contradiction

_ASSERT = {
    "pneumothorax": "There is a small right apical pneumothorax.",
    "effusion": "There is a moderate left pleural effusion.",
    "consolidation": "There is consolidation in the right lower lobe.",
    "edema": "There is mild pulmonary edema.",
    "pneumonia": "There is right lower lobe pneumonia.",
    "clear": "There is consolidation in the right base.",
}
_NEG_TOPIC = re.compile(r"(?i)\b(pneumothorax|effusions?|consolidation|edema|pneumonia)\b|\blungs?\s+(?:are|is)\s+(?:\w+\s+)?clear\b|\bclear\s+lungs\b")


def _negated_topics(text: str) -> list[tuple[object, str]]:
    out = []
    for s in sentences(text):
        for m in _NEG_TOPIC.finditer(s.text):
            if m.group(1):
                topic = m.group(1).lower().rstrip("s") if m.group(1).lower().startswith("effusion") else m.group(1).lower()
                if status_at(s.text, m.start(1), m.end(1)) != "negative":
                    continue
            else:
                topic = "clear"
            out.append((s, topic))
    return out


@rule("contradiction", "significant", "fabrication", check=labels("differ"))
def contra_assert(text: str, rng: random.Random) -> Rewrite | None:
    """Right after a sentence that rules a finding out, assert it ("The lungs are clear." -> "The lungs
    are clear. There is consolidation in the right base."; Table 2, Internal Contradiction S)."""
    c = pick(rng, _negated_topics(text))
    if c is None:
        return None
    sent, topic = c
    new = _ASSERT[topic]
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"{new!r} contradicts {sent.text!r}; the report can no longer be trusted (Table 2, "
                           "Internal Contradiction S).")


@rule("contradiction", "significant", "inaccuracy")
def contra_clear(text: str, rng: random.Random) -> Rewrite | None:
    """Right after an asserted lung finding, state that the lungs are clear (Appendix A, Internal
    Contradiction S: "lungs are clear" after describing effusion and consolidation)."""
    if re.search(r"(?i)\bclear\b", text):
        return None
    cands = []
    for m, _a, _mods in _finding_nps(text, r"opacit(?:y|ies)|consolidation|atelectasis|effusions?|edema|infiltrates?|pneumonia"):
        s = sentence_at(text, m.start(), m.end())
        if s is not None and s not in cands:
            cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    a, b, ins = sentence_end_insert(text, s, "The lungs are clear.")
    return _one(text, a, b, ins, f"'The lungs are clear.' is inserted after {s.text!r}: a major contradiction (Appendix A, "
                           "Internal Contradiction S).")


_HEDGED_MINOR = {"effusion": "A trace pleural effusion may be present.",
                 "edema": "Minimal interstitial edema may be present."}


@rule("contradiction", "insignificant", "fabrication")
def contra_hedged(text: str, rng: random.Random) -> Rewrite | None:
    """After ruling out a finding, hedge a trace amount of it ("No current evidence of larger pleural
    effusions. Minimal pleural effusions may exist"; Table 2, Internal Contradiction I)."""
    c = pick(rng, [(s, t) for s, t in _negated_topics(text) if t in _HEDGED_MINOR])
    if c is None:
        return None
    sent, topic = c
    new = _HEDGED_MINOR[topic]
    a, b, ins = sentence_end_insert(text, sent, new)
    return _one(text, a, b, ins, f"{new!r} mildly qualifies {sent.text!r}: an inconsistency, not a true contradiction "
                           "(Table 2 and Appendix A, Internal Contradiction I).")


# =============================================================================== uncertainty

_HEDGE_SWAP = {
    "may": "might", "might": "may", "could": "may", "possible": "questionable", "questionable": "possible",
    "probable": "likely", "probably": "likely", "most likely": "probably", "suspicious for": "concerning for",
    "concerning for": "suspicious for", "suggestive of": "suspicious for", "cannot be excluded": "cannot be ruled out",
    "cannot be ruled out": "cannot be excluded", "cannot exclude": "cannot rule out", "cannot rule out": "cannot exclude",
    "possibly": "perhaps",
}


@rule("uncertainty", "insignificant", "inaccuracy", check=labels("same"))
def unc_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a hedge with an equivalent hedge ("may be" -> "might be", "possible" -> "questionable";
    Table 2 and Appendix A, Uncertainty I)."""
    hedges = {c.start for c in extract_certainty(text)}

    def ok(t: str, m: re.Match[str]) -> bool:
        return m.start() in hedges or m.group(0).lower() in ("may", "might", "could")

    def modal_ok(t: str, m: re.Match[str]) -> bool:
        if m.group(0).lower() in ("may", "might", "could"):
            return bool(re.match(r"(?i)\s+(?:also\s+)?(?:be|represent|reflect|indicate|relate|include)\b", t[m.end():]))
        return ok(t, m)

    return _swap_word(text, rng, _HEDGE_SWAP, positive=False, extra_ok=modal_ok,
                      explanation="The hedge {old!r} is replaced with {new!r}; both express uncertainty and the next "
                                  "steps are the same (Appendix A, Uncertainty I).")


@rule("uncertainty", "significant", "inaccuracy", check=local_attr("certainty", "differ"))
def unc_remove(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a hedged finding into a certain one ("may represent atelectasis" -> "represents atelectasis";
    Table 2: "Whether this is pneumonia is indeterminate" -> "Pneumonia exists")."""
    cands: list[tuple[int, int, str | None]] = []  # new=None: delete the word(s) a..b
    for m in find_all(text, r"\b(?:most\s+)?(?:likely|probably|possibly|presumably|questionably)(?=\s+[a-z])"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:possible|probable|questionable|suspected)(?=\s+[a-z])"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:may|might|could)\s+(?:also\s+)?(represent|reflect|indicate|be)\b"):
        plural = is_plural_before(text, m.start())
        verb = m.group(1).lower()
        cands.append((m.start(), m.end(), ("are" if plural else "is") if verb == "be" else (verb if plural else verb + "s")))
    for m in find_all(text, r"\b(?:cannot|can\s+not)\s+be\s+(?:entirely\s+|completely\s+)?(?:excluded|ruled\s+out)\b"):
        cands.append((m.start(), m.end(), "are present" if is_plural_before(text, m.start()) else "is present"))
    for m in find_all(text, r"\b(?:suspicious|concerning|worrisome)\s+for\b|\bsuggestive\s+of\b"):
        cands.append((m.start(), m.end(), "diagnostic of"))
    c = pick(rng, sorted(set(cands), key=lambda c: (c[0], c[1])))
    if c is None:
        return None
    a, b, new = c
    old = text[a:b]
    if new is None:
        e = delete_word(text, a, b)
        if e is None:
            return None
        a, b, new = e
    else:
        new = new.upper() if is_upper_context(text, a) else match_case(old, new)
    return _one(text, a, b, new, f"The hedge {old.strip()!r} is removed: an uncertain finding is reported as certain, which "
                           "may trigger or withhold treatment unjustifiably (Appendix A, Uncertainty S).")


@rule("uncertainty", "significant", "fabrication", check=labels("differ"))
def unc_add(text: str, rng: random.Random) -> Rewrite | None:
    """Hedge a definite critical finding ("right pneumothorax" -> "possible right pneumothorax"): doubt
    that delays an indicated treatment. (Choice: the paper's Uncertainty S example removes doubt;
    adding it to a definite critical finding is the mirror error.)"""
    cands = []
    for m, _a, mods in _finding_nps(text, CRITICAL_NOUN):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_certainty(sent.text) or any(w in ("possible", "probable", "likely") for w in mods):
            continue
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    a, b, new = insert_at_np(text, m.start(), "possible")
    return _one(text, a, b, new, f"A definite {m.group(0)!r} is reported as only possible; an indicated treatment may be "
                           "delayed (§3.1, Uncertainty).")


# =============================================================================== terminology

_TERM_WRONG = {"pleural effusion": "pleural empyema", "pleural effusions": "pleural empyemas", "atelectasis": "mass",
               "cardiomegaly": "pericardial effusion", "granuloma": "metastasis", "granulomas": "metastases",
               "scarring": "tumor", "consolidation": "mass", "edema": "hemorrhage", "emphysema": "pneumothorax"}
_TERM_SYN = {"endotracheal tube": "breathing tube", "nasogastric tube": "feeding tube", "enteric tube": "feeding tube",
             "mass": "lesion", "cardiomegaly": "cardiac enlargement", "opacity": "density", "opacities": "densities",
             "osseous structures": "bony structures", "pleural effusion": "pleural fluid",
             "hyperinflated": "hyperexpanded", "hyperexpanded": "hyperinflated", "pulmonary vascularity": "pulmonary vasculature",
             "pulmonary vasculature": "pulmonary vascularity", "degenerative changes": "degenerative disease",
             "cardiomediastinal silhouette": "cardiomediastinal contours", "thoracic spine": "T-spine"}


@rule("terminology", "significant", "inaccuracy", check=labels("differ"))
def term_wrong(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a clinically different one ("pleural effusion" -> "pleural empyema",
    "atelectasis" -> "mass"; Appendix A, Terminology S)."""
    return _swap_word(text, rng, _TERM_WRONG,
                      explanation="The term {old!r} becomes {new!r}: a different disease with a different, often "
                                  "invasive, work-up (Appendix A, Terminology S).")


@rule("terminology", "insignificant", "inaccuracy", check=labels("same"))
def term_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a term with a synonym or lay term ("endotracheal tube" -> "breathing tube", "mass" ->
    "lesion"; Table 2 and Appendix A, Terminology I)."""
    return _swap_word(text, rng, _TERM_SYN, positive=False,
                      explanation="The term {old!r} is written as {new!r}; the medical meaning is preserved "
                                  "(Appendix A, Terminology I).")


# =============================================================================== noise

_NO_TYPO = {"left", "right", "without", "normal", "likely", "unlikely", "possible", "increased", "decreased"}


def _typo(word: str, rng: random.Random) -> str:
    ops = []
    if word.endswith("y"):
        ops.append(word[:-1] + "i")
    ops.append(word[:-1])  # drop the last letter ("atelectasi")
    i = 1 + rng.randrange(len(word) - 3)
    ops.append(word[:i] + word[i + 1] + word[i] + word[i + 2:])  # swap two inner letters
    j = 1 + rng.randrange(len(word) - 2)
    ops.append(word[:j] + word[j] + word[j:])  # double a letter
    out = [o for o in ops if o.lower() != word.lower()]
    return out[rng.randrange(len(out))]


@rule("noise", "insignificant", "inaccuracy", check=max_edit_distance(2))
def noise_typo(text: str, rng: random.Random) -> Rewrite | None:
    """One typo in a long word ("opacity" -> "opaciti", "atelectasis" -> "atelectasi"; Table 2, Noise I)."""
    cands = [m for m in re.finditer(r"\b[A-Za-z]{7,}\b", text) if m.group(0).lower() not in _NO_TYPO
             and not m.group(0).isupper()]
    m = pick(rng, cands)
    if m is None:
        return None
    new = _typo(m.group(0), rng)
    return _one(text, m.start(), m.end(), new, f"Typo {m.group(0)!r} -> {new!r}; a reader infers the intended word "
                                         "(Appendix A, Noise I).")


_MEANING_FLIP = {"likely": "unlikely", "unlikely": "likely", "consistent with": "inconsistent with",
                 "normal": "abnormal"}


def _flip_ok(text: str, m: re.Match[str]) -> bool:
    if m.group(0).lower() == "normal":
        return bool(re.search(r"(?i)\b(?:is|are|appears?|remains?)\s+(?:\w+ly\s+)?$", text[max(0, m.start() - 25):m.start()]))
    return True


@rule("noise", "significant", "inaccuracy", check=max_edit_distance(3))
def noise_flip(text: str, rng: random.Random) -> Rewrite | None:
    """A small slip that reverses meaning ("most likely due to" -> "most unlikely due to", "is normal" ->
    "is abnormal"; Appendix A, Noise S: noise that alters a sentence's meaning)."""
    return _swap_word(text, rng, _MEANING_FLIP, positive=False, extra_ok=_flip_ok,
                      explanation="A one-word slip ({old!r} -> {new!r}) reverses the interpretation of the sentence "
                                  "(Appendix A, Noise S).")


# =============================================================================== stylistic variation


@rule("stylistic", "insignificant", "inaccuracy", check=all_of(same_sentences(), labels("same")))
def style_reorder(text: str, rng: random.Random) -> Rewrite | None:
    """Reorder the sentences (Table 2, Stylistic I: "lung... edema... effusions" -> "effusions... lung...
    edema")."""
    sents = sentences(text)
    if len(sents) < 3 or any(not re.search(r"[.!?]$", s.text) for s in sents):
        return None
    order = list(range(len(sents)))
    for _ in range(10):
        rng.shuffle(order)
        if order != sorted(order):
            break
    else:
        return None
    first, last = sents[0].start, sents[-1].end
    pieces = []
    for k, idx in enumerate(order):
        pieces.append(sents[idx].text)
        if k + 1 < len(sents):
            pieces.append(text[sents[k].end:sents[k + 1].start])
    new = "".join(pieces)
    if new == text[first:last]:
        return None
    return _one(text, first, last, new, "The sentences are reordered; the findings and their interpretation are the same "
                                  "(Table 2, Stylistic Variation I).")


@rule("stylistic", "insignificant", "inaccuracy", name="style_template", check=labels("same"))
def style_template(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase with another template ("There is no pleural effusion." -> "No pleural effusion is seen.")."""
    cands = []
    for s in sentences(text):
        m = re.fullmatch(r"There (is|are) no ([^.;:,]+?)\.", s.text)
        if m and not re.search(r"(?i)\b(?:or|and|evidence)\b", m.group(2)):
            cands.append((s, m))
    c = pick(rng, cands)
    if c is None:
        return None
    s, m = c
    new = f"No {m.group(2)} {'is' if m.group(1) == 'is' else 'are'} seen."
    return _one(text, s.start, s.end, new, f"{s.text!r} is rephrased as {new!r}; same content, other template "
                                     "(Stylistic Variation I).")


@rule("stylistic", "significant", "inaccuracy")
def style_lr_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Swap which side predominates ("left greater than right" -> "right greater than left"; Table 2,
    Stylistic S: "more on the right")."""
    cands = []
    for m in find_all(text, r"\b(left|right)(\s+(?:greater|more|worse|larger)\s+than\s+)(left|right)\b"):
        if m.group(1).lower() != m.group(3).lower():
            new = match_case(m.group(1), m.group(3).lower()) + m.group(2) + match_case(m.group(3), m.group(1).lower())
            cands.append((m.start(), m.end(), new))
    for m in re.finditer(r"\b([LR])\s*>\s*([LR])\b", text):
        if m.group(1) != m.group(2):
            cands.append((m.start(), m.end(), f"{m.group(2)}>{m.group(1)}" if ">" in m.group(0) and " " not in m.group(0)
                          else f"{m.group(2)} > {m.group(1)}"))
    c = pick(rng, cands)
    if c is None:
        return None
    a, b, new = c
    return _one(text, a, b, new, f"{text[a:b]!r} becomes {new!r}: the phrasing reverses which side is worse (Table 2, "
                           "Stylistic Variation S).")
