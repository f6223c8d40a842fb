"""Rewrite rules of the Description aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    DESCRIPTORS,
    finding_nps,
    is_prenominal,
    one_edit,
    pick_deletion,
    pick_edit,
    swap_word,
)
from radaudit.perturb.textops import (
    find_all,
    insert_at_np,
    is_positive,
    match_case,
    pick,
    sentence_at,
    styled,
)
from radaudit.perturb.verify import CheckContext, all_of, labels

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


@rule("description", "significant", "inaccuracy")
def desc_opposite(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a morphology descriptor with one of opposite implication ("irregularly marginated" ->
    "smoothly marginated", "calcified" -> "noncalcified"; Table 2 and Appendix A, Description S)."""
    return swap_word(text, rng, _DESC_OPPOSITE,
                     explanation="The morphology {old!r} becomes {new!r}: a different benign/malignant reading and "
                                 "work-up (Appendix A, Description S).")


@rule("description", "insignificant", "inaccuracy", check=labels("same"))
def desc_synonym(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a morphology descriptor with a near-synonym ("ill-defined" -> "poorly defined"; Table 2,
    Description I)."""
    return swap_word(text, rng, _DESC_SYNONYM,
                     explanation="The descriptor {old!r} is rephrased as {new!r}; the implication is the same "
                                 "(Table 2, Description I).")


_KEY_DESC = r"calcified|noncalcified|non-calcified|spiculated|irregular(?:ly\s+marginated)?|cavitary|cavitating"
_MINOR_DESC = r"patchy|streaky|linear|hazy|faint|subtle|platelike|plate-like|subsegmental|bandlike|coarse"


@rule("description", "significant", "omission")
def desc_drop_key(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a descriptor that decides benign vs malignant ("calcified nodule" -> "nodule",
    "spiculated mass" -> "mass")."""
    cands = [m for m in find_all(text, rf"\b(?:{_KEY_DESC})\b(?=[\s-]+(?:\w+\s+){{0,2}}"
                                       r"(?:nodules?|mass(?:es)?|lesions?|opacit(?:y|ies)|densit(?:y|ies))\b)")
             if is_positive(text, m.start(), m.end())]
    return pick_deletion(text, rng, cands,
                         lambda old: f"The descriptor {old!r} is omitted; without it the lesion's benign or malignant "
                                     "character is unknown (Appendix A, Description S).")


@rule("description", "insignificant", "omission", check=labels("same"))
def desc_drop_minor(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a descriptor that does not change the reading ("streaky opacities" -> "opacities")."""
    cands = [m for m in find_all(text, rf"\b(?:{_MINOR_DESC})\b")
             if is_prenominal(text, m) and is_positive(text, m.start(), m.end())]
    return pick_deletion(text, rng, cands,
                         lambda old: f"The descriptor {old!r} is omitted; the finding and its implications are "
                                     "unchanged (Description I).")


def _undescribed(text: str, nouns: str) -> list[re.Match[str]]:
    """Asserted findings ``nouns`` without a morphology descriptor (:data:`DESCRIPTORS`) among their modifiers."""
    return [m for m, _a, mods in finding_nps(text, nouns) if not any(w in DESCRIPTORS for w in mods)]


@rule("description", "significant", "fabrication", check=labels("same"))
def desc_add_malignant(text: str, rng: random.Random) -> Rewrite | None:
    """Add a malignancy-suggesting descriptor ("nodule" -> "spiculated nodule", "opacity" -> "cavitary opacity")."""
    m = pick(rng, _undescribed(text, r"nodules?|mass(?:es)?|lesions?|opacit(?:y|ies)|consolidation"))
    if m is None:
        return None
    word = "cavitary" if m.group(0).lower().startswith(("opac", "consol")) else "spiculated"
    new = styled(text, m.start(), word) + " "
    return one_edit(text, m.start(), m.start(), new,
                    f"A fabricated {word!r} morphology is added to {m.group(0)!r}; it raises "
                    "suspicion of malignancy or infection and triggers work-up (Description S).")


_BENIGN_DESC = {"atelectasis": "subsegmental", "scarring": "linear", "granuloma": "calcified",
                "granulomas": "calcified"}


@rule("description", "insignificant", "fabrication", check=labels("same"))
def desc_add_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Add the usual benign descriptor of a benign finding ("atelectasis" -> "subsegmental atelectasis",
    "granuloma" -> "calcified granuloma")."""
    m = pick(rng, _undescribed(text, "|".join(_BENIGN_DESC)))
    if m is None:
        return None
    word = _BENIGN_DESC[m.group(0).lower()]
    new = styled(text, m.start(), word) + " "
    return one_edit(text, m.start(), m.start(), new, f"A benign descriptor {word!r} is added to {m.group(0)!r}; it does not "
                                               "change interpretation (Description I).")


# --------------------------------------------------------------------------- more kinds of description edits
# The first rule of each cell above edits the morphology words of a lung finding (margins, calcification, cavitation,
# shape words before "opacity"/"nodule"/"atelectasis"). The rules below edit other described properties that real
# chest X-ray reports carry: the character of a bone process, the contour of the aorta, the chronicity of a fracture, the
# pattern of an opacity, the behaviour of pleural fluid, the shape of the cardiac silhouette, the calcification
# and chronicity of granulomas, the appearance of hyperinflated lungs.


def _edited(removed: str | None = None, added: str | None = None):
    """Check: the edited GT part has ``removed`` and the ME part has not; the ME part has ``added`` and the GT part
    has not (case-insensitive regexes). Catches an edit that landed on the wrong words."""

    def check(ctx: CheckContext) -> str | None:
        g, m = ctx.gt_part, ctx.me_part
        if removed and not (re.search(removed, g, re.I) and not re.search(removed, m, re.I)):
            return f"expected {removed!r} to be removed in the edited span ({g!r} -> {m!r})"
        if added and not (re.search(added, m, re.I) and not re.search(added, g, re.I)):
            return f"expected {added!r} to be added in the edited span ({g!r} -> {m!r})"
        return None

    return check


def _insert_word(text: str, pos: int, np_a: int, noun_pos: int, word: str) -> tuple[int, int, str]:
    """Insert ``word`` at ``pos`` inside the noun phrase that starts at ``np_a`` (sentence case kept at its start)."""
    if pos == np_a:
        return insert_at_np(text, noun_pos, word)
    return pos, pos, styled(text, pos, word) + " "


def _sentence_has(text: str, a: int, b: int, pattern: str) -> bool:
    s = sentence_at(text, a, b)
    return s is not None and re.search(pattern, s.text, re.I) is not None


# ---- significant inaccuracy


@rule("description", "significant", "inaccuracy", check=_edited(removed=r"degenerative", added=r"destructive"))
def desc_degenerative_to_destructive(text: str, rng: random.Random) -> Rewrite | None:
    """Describe degenerative bone changes as destructive ("degenerative changes of the thoracic spine" ->
    "destructive changes of the thoracic spine"). (Choice: the paper's Description S example is a lung mass; this
    is the same benign -> aggressive reversal of a bone process's morphology.)"""
    if re.search(r"destructi|lytic", text, re.I):
        return None  # "no lytic or destructive lesion" elsewhere would make it a contradiction
    cands = [m for m in find_all(text, r"(?<![\w-])degenerative(?=[\s-]+(?:(?:endplate|joint|facet|arthritic)\s+)?"
                                       r"changes?\b)")
             if is_positive(text, m.start(), m.end())
             and not _sentence_has(text, m.start(), m.end(), r"osteophyt|spur|\bDISH\b|hyperostosis|spondylo|arthriti")]
    m = pick(rng, cands)
    if m is None:
        return None
    new = match_case(m.group(0), "destructive")
    return one_edit(text, m.start(), m.end(), new,
                    f"The bone changes are described as {new!r} instead of {m.group(0)!r}: wear-and-tear osteophytes and "
                    "disc narrowing become bone destruction (infection or metastasis), which calls for urgent MRI and "
                    "work-up (Appendix A, Description S).")


_AORTA_CONTOUR = r"tortu\w*|ectat\w*|ectasia|unfold\w*"


@rule("description", "significant", "inaccuracy", check=_edited(removed=r"tortuous", added=r"aneurysmal"))
def desc_tortuous_to_aneurysmal(text: str, rng: random.Random) -> Rewrite | None:
    """Describe a tortuous aorta as aneurysmal ("The aorta is tortuous." -> "The aorta is aneurysmal.").
    (Choice: no example in the paper; the contour of the aorta changes from an age-related finding to one that
    needs CT angiography.)"""
    cands = [m for m in find_all(text, r"(?<![\w-])tortuous(?![\w-])")
             if is_positive(text, m.start(), m.end()) and _sentence_has(text, m.start(), m.end(), r"aort")
             and not _sentence_has(text, m.start(), m.end(), r"ectat|ectasia|dilat|unfold")
             and not re.search(r"aneurysm", text, re.I)]
    m = pick(rng, cands)
    if m is None:
        return None
    new = match_case(m.group(0), "aneurysmal")
    return one_edit(text, m.start(), m.end(), new,
                    "The aorta is described as aneurysmal instead of tortuous: an elongated, age-related contour becomes a "
                    "dilatation that needs CT angiography and surveillance or repair (Description S).")


# ---- insignificant inaccuracy


_CONTOUR_SWAP = {"tortuous": "ectatic", "ectatic": "tortuous", "unfolded": "tortuous", "tortuosity": "ectasia",
                 "ectasia": "tortuosity", "unfolding": "tortuosity"}


def _aorta_contour_swapped(ctx: CheckContext) -> str | None:
    g = re.findall(_AORTA_CONTOUR, ctx.gt_part, re.I)
    m = re.findall(_AORTA_CONTOUR, ctx.me_part, re.I)
    if len(g) != 1 or len(m) != 1 or g[0][:4].lower() == m[0][:4].lower():
        return f"expected one aortic contour word replaced by another ({ctx.gt_part!r} -> {ctx.me_part!r})"
    if re.search(r"aneurysm", ctx.me_part, re.I):
        return "an aneurysm is not an insignificant contour change"
    return None


@rule("description", "insignificant", "inaccuracy", check=all_of(_aorta_contour_swapped, labels("same")))
def desc_aorta_contour(text: str, rng: random.Random) -> Rewrite | None:
    """Describe the aorta's benign contour with a neighbouring benign term ("tortuous aorta" -> "ectatic aorta",
    "unfolded" -> "tortuous"). (Choice: no example in the paper; both are age-related contours with no work-up.)"""
    cands = []
    for m in find_all(text, r"(?<![\w-])(?:" + "|".join(_CONTOUR_SWAP) + r")(?![\w-])"):
        new = _CONTOUR_SWAP[m.group(0).lower()]
        if (not is_positive(text, m.start(), m.end()) or not _sentence_has(text, m.start(), m.end(), r"aort")
                or re.search(rf"aneurysm|{new[:5]}", text, re.I)):
            continue
        cands.append((m.start(), m.end(), match_case(m.group(0), new), m.group(0)))
    return pick_edit(text, rng, cands,
                     lambda old: f"The aortic contour {old!r} is described with a neighbouring benign term; both are "
                                 "age-related changes that need no work-up (Description I).")


_HYPER = {"hyperexpanded": "hyperlucent", "hyperinflated": "hyperlucent", "hyperexpansion": "hyperlucency",
          "hyperinflation": "hyperlucency"}


@rule("description", "insignificant", "inaccuracy",
      check=all_of(_edited(removed=r"hyper(?:expan|infla)", added=r"hyperluc"), labels("same")))
def desc_hyperexpanded_to_hyperlucent(text: str, rng: random.Random) -> Rewrite | None:
    """Describe hyperexpanded lungs by their lucency instead ("The lungs are hyperexpanded." -> "The lungs are
    hyperlucent."). (Choice: no example in the paper; volume and lucency are two signs of the same chronic
    obstructive lung, as Appendix A, Description I accepts a different wording with the same implication.)"""
    cands = []
    for m in find_all(text, r"(?<![\w-])(?:" + "|".join(_HYPER) + r")(?![\w-])"):
        if not is_positive(text, m.start(), m.end()) or _sentence_has(text, m.start(), m.end(), r"hyperluc|lucen"):
            continue
        cands.append((m.start(), m.end(), match_case(m.group(0), _HYPER[m.group(0).lower()]), m.group(0)))
    return pick_edit(text, rng, cands,
                     lambda old: f"The lungs' {old!r} is described by their lucency instead; both point to chronic "
                                 "obstructive lung disease and nothing in management changes (Description I).")


# ---- significant omission


_FX_AGE = r"(?<![\w-])(?:old\s+healed|chronic[\s-]+appearing|old|healed|remote|chronic)(?![\w-])"
_NOT_IN_NP = {"and", "or", "with", "without", "of", "in", "at", "to", "the", "is", "are", "was", "were", "no", "not",
              "but", "from", "which", "that"}


def _before_fracture(text: str, end: int) -> bool:
    """A fracture or deformity follows within the same noun phrase ("old healed left lateral rib fractures")."""
    m = re.match(r"[\s-]+((?:[\w-]+[\s-]+){0,5}?)(?:fractures?|deformit(?:y|ies))\b", text[end:], re.I)
    return m is not None and not any(w.lower() in _NOT_IN_NP for w in re.findall(r"[\w-]+", m.group(1)))


@rule("description", "significant", "omission",
      check=all_of(_edited(removed=r"\b(?:old|healed|remote|chronic)\b"), labels("same")))
def desc_drop_fracture_age(text: str, rng: random.Random) -> Rewrite | None:
    """Omit that a fracture looks old or healed ("Old healed left rib fractures." -> "Left rib fractures.").
    (Choice: the paper has no omission example for this cell; healed callus is the morphology that dates a
    fracture.)"""
    cands = []
    for m in find_all(text, _FX_AGE):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or not _before_fracture(text, m.end()) or not is_positive(text, m.start(), m.end()):
            continue
        rest = sent.text[:m.start() - sent.start] + sent.text[m.end() - sent.start:]
        if re.search(r"corticat|callus|heal|\bold\b|remote|chronic|sclero", rest, re.I):
            continue  # the fracture would still read as old ("corticated deformity ..., remote fracture")
        cands.append(m)
    return pick_deletion(text, rng, cands,
                         lambda old: f"The healed appearance {old!r} of the fracture is omitted; it now reads "
                                     "as possibly acute, which calls for trauma work-up, pain control and a search "
                                     "for pneumothorax (Description S).")


_PATTERN = r"interstitial|air[\s-]?space|alveolar"
#: A sentence that names the process ("... opacities consistent with edema") keeps its reading without the pattern.
_NAMED_PROCESS = r"edema|pneumonia|infect|infiltrat|fibros|atelecta|aspiration|scar|hemorrhage|ARDS|congesti"


@rule("description", "significant", "omission", check=all_of(_edited(removed=_PATTERN), labels("same")))
def desc_drop_pattern(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the pattern of an opacity ("bibasilar interstitial opacities" -> "bibasilar opacities",
    "airspace opacity" -> "opacity"). (Choice: the paper has no omission example for this cell; the pattern
    decides between edema or atypical infection and alveolar pneumonia.)"""
    pat = rf"(?<![\w/-])(?:{_PATTERN})(?=\s+(?:opacit(?:y|ies)|opacification|infiltrates?|densit(?:y|ies))\b)"
    cands = [m for m in find_all(text, pat)
             if is_positive(text, m.start(), m.end()) and not re.search(r"(?:\band|\bor|/)\s*$", text[:m.start()], re.I)
             and not _sentence_has(text, m.start(), m.end(), _NAMED_PROCESS)]
    return pick_deletion(text, rng, cands,
                         lambda old: f"The pattern {old!r} of the opacity is omitted; interstitial "
                                     "(edema, atypical infection, fibrosis) and airspace (pneumonia, aspiration) "
                                     "opacities are treated differently (Description S).")


# ---- insignificant omission


@rule("description", "insignificant", "omission", check=all_of(_edited(removed=r"calcified"), labels("same")))
def desc_drop_granuloma_calcification(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the calcification of a granuloma ("Calcified granuloma in the right upper lobe." -> "Granuloma in the
    right upper lobe."). (Choice: a granuloma is a healed benign lesion with or without the word.)"""
    cands = []
    for m in find_all(text, r"(?<![\w-])calcified(?=[\s-]+((?:[\w-]+\s+){0,3}?)granulomas?\b)"):
        between = re.findall(r"[\w-]+", m.group(1).lower())
        if (re.search(r"\w+ly\s+$", text[:m.start()]) or not is_positive(text, m.start(), m.end())
                or any(w in _NOT_IN_NP or re.match(r"nodul|mass|opacit|densit|lesion|lymph|node", w) for w in between)):
            continue
        cands.append(m)
    return pick_deletion(text, rng, cands,
                         lambda _old: "The calcification of the granuloma is omitted; a granuloma is a healed benign "
                                      "lesion either way and needs no follow-up (Description I).")


@rule("description", "insignificant", "omission",
      check=all_of(_edited(removed=r"old|prior|previous|remote|healed"), labels("same")))
def desc_drop_granulomatous_age(text: str, rng: random.Random) -> Rewrite | None:
    """Omit that granulomatous disease is old ("Sequelae of prior granulomatous disease." -> "Sequelae of
    granulomatous disease."). (Choice: on a chest radiograph granulomatous disease is by nature the healed sequela
    of an old infection.)"""
    cands = [m for m in find_all(text, r"(?<![\w-])(?:old|prior|previous|remote|healed)(?=\s+granulomatous\b)")
             if is_positive(text, m.start(), m.end())]
    return pick_deletion(text, rng, cands,
                         lambda old: f"The qualifier {old!r} of granulomatous disease is omitted; calcified "
                                     "granulomas and nodes are the healed sequela of an old infection either way "
                                     "(Description I).")


# ---- significant fabrication


#: Not a pleural effusion, or one whose shape is not free: skipped in the sentence (first) or the report (second).
_EFFUSION_SKIP = r"pericardial|joint|knee|ankle|elbow|hip|apical|subpulmonic"
_EFFUSION_SHAPED = r"loculat\w*|layering|free[\s-]flowing|encysted|meniscus|empyema|hydropneumothorax|air[\s-]fluid"
_SIDE_WORDS = {"left", "right", "bilateral", "left-sided", "right-sided", "pleural"}


def _effusion_slots(text: str) -> list[tuple[int, int, int]]:
    """Asserted pleural effusions as ``(insert position, noun-phrase start, noun position)``: the position is before
    the side or "pleural" word ("small |left pleural effusion"), else before the noun."""
    if re.search(_EFFUSION_SHAPED, text, re.I):
        return []
    out = []
    for m, a, _mods in finding_nps(text, r"effusions?"):
        if _sentence_has(text, m.start(), m.end(), _EFFUSION_SKIP):
            continue
        pos = m.start()
        for w in re.finditer(r"[A-Za-z][A-Za-z-]*", text[a:m.start()]):
            if w.group(0).lower() in _SIDE_WORDS:
                pos = a + w.start()
                break
        out.append((pos, a, m.start()))
    return out


@rule("description", "significant", "fabrication", check=all_of(_edited(added=r"loculated"), labels("same")))
def desc_add_loculated(text: str, rng: random.Random) -> Rewrite | None:
    """Add a fabricated loculation to a pleural effusion ("small left pleural effusion" -> "small loculated left
    pleural effusion"). (Choice: no example in the paper; loculation suggests a complicated effusion or empyema.)"""
    slot = pick(rng, _effusion_slots(text))
    if slot is None:
        return None
    a, b, new = _insert_word(text, *slot, "loculated")
    return one_edit(text, a, b, new, "The effusion is described as loculated: that suggests a complicated parapneumonic "
                                     "effusion or empyema, and calls for CT and drainage (Description S).")


def _cardiomegaly_slots(text: str) -> list[tuple[int, int, str]]:
    if re.search(r"globular|water[\s-]?bottle|pericardi", text, re.I):
        return []
    skip = r"borderline|upper\s+limits?|top\s+normal"
    out = []
    for m, a, _mods in finding_nps(text, r"cardiomegaly"):
        if not _sentence_has(text, m.start(), m.end(), skip):
            out.append(_insert_word(text, m.start(), a, m.start(), "globular"))
    after = (r"(?i)\b(?:heart|cardiac\s+silhouette|cardiac\s+shadow)\s+(?:is|appears|remains)\s+"
             r"(?:(?:mildly|moderately|markedly|severely|slightly)\s+)?(enlarged)(?=\s*(?:[.,;:]|$))")
    for m in re.finditer(after, text):
        if is_positive(text, m.start(1), m.end(1)) and not _sentence_has(text, m.start(1), m.end(1), skip):
            out.append((m.end(1), m.end(1), " " + styled(text, m.end(1), "and globular")))
    for m in re.finditer(r"(?i)\b(enlarged)\s+(?:heart|cardiac\s+silhouette)\b(?=\s*(?:[.;]|$))", text):
        if is_positive(text, m.start(1), m.end(1)) and not _sentence_has(text, m.start(1), m.end(1), skip):
            out.append((m.end(), m.end(), " " + styled(text, m.end(), "with a globular configuration")))
    return sorted(set(out))


@rule("description", "significant", "fabrication", check=all_of(_edited(added=r"globular"), labels("same")))
def desc_add_globular_heart(text: str, rng: random.Random) -> Rewrite | None:
    """Add a fabricated globular shape to an enlarged heart ("Moderate cardiomegaly." -> "Moderate globular
    cardiomegaly."). (Choice: no example in the paper; a globular, "water-bottle" silhouette suggests a
    pericardial effusion.)"""
    slot = pick(rng, _cardiomegaly_slots(text))
    if slot is None:
        return None
    return one_edit(text, *slot, "The enlarged cardiac silhouette is described as globular: that suggests a pericardial "
                                 "effusion rather than cardiomegaly and calls for echocardiography to exclude tamponade "
                                 "(Description S).")


# ---- insignificant fabrication


@rule("description", "insignificant", "fabrication", check=all_of(_edited(added=r"layering"), labels("same")))
def desc_add_layering(text: str, rng: random.Random) -> Rewrite | None:
    """Add that a pleural effusion layers ("small left pleural effusion" -> "small layering left pleural effusion").
    (Choice: no example in the paper; a layering, free-flowing effusion is the usual simple effusion.)"""
    slot = pick(rng, _effusion_slots(text))
    if slot is None:
        return None
    a, b, new = _insert_word(text, *slot, "layering")
    return one_edit(text, a, b, new, "The effusion is described as layering, i.e. free-flowing: the usual behaviour of a "
                                     "simple effusion, which changes nothing in management (Description I).")


_DEGEN_SPINE = (r"(?<![\w-])degenerative\s+(?:(?:endplate|joint|facet|disc|disk)\s+)?(?:changes?|disease)"
                r"(?P<tail>(?:\s+(?:are\s+(?:present|noted|seen)\s+)?(?:of|in|involving|within|along|at)\s+(?:the\s+)?"
                r"(?:[\w/-]+\s+){0,3}?spine|\s+(?:thoracic\s+|thoracolumbar\s+|lumbar\s+)?spine)?)\b(?=\s*(?:[.;,]|$))")


@rule("description", "insignificant", "fabrication", check=all_of(_edited(added=r"osteophyte"), labels("same")))
def desc_add_osteophytes(text: str, rng: random.Random) -> Rewrite | None:
    """Add osteophytes to degenerative changes of the spine ("Degenerative changes of the thoracic spine." ->
    "Degenerative changes of the thoracic spine with osteophyte formation."). (Choice: no example in the paper;
    osteophytes are the usual morphology of spinal degeneration.)"""
    if re.search(r"osteophyt|spur|\bDISH\b|spondyl|ankylos|hyperostosis", text, re.I):
        return None  # the report already describes the bony outgrowths
    cands = []
    for m in find_all(text, _DEGEN_SPINE):
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or not is_positive(text, m.start(), m.start() + len("degenerative")):
            continue
        if not m.group("tail") and not re.search(r"spine", text[sent.start:m.start()], re.I):
            continue  # not the spine ("degenerative changes of the right shoulder")
        cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    return one_edit(text, m.end(), m.end(), " " + styled(text, m.end(), "with osteophyte formation"),
                    "Osteophytes are added to the degenerative changes of the spine; they are what degeneration looks like "
                    "and change nothing in management (Description I).")
