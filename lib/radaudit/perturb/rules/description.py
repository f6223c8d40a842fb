"""Rewrite rules of the Description aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _DESCRIPTORS,
    _del,
    _finding_nps,
    _one,
    _prenominal,
    _swap_word,
)
from radaudit.perturb.textops import (
    find_all,
    is_positive,
    pick,
    styled,
)
from radaudit.perturb.verify import labels

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
