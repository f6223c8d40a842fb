"""Rewrite rules of the Size/Distance aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    add_deletion,
    finding_nps,
    one_edit,
    pick_edit,
)
from radaudit.perturb.textops import (
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
    size_ratio,
)
from radaudit.text.attributes import extract_size

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
    return one_edit(text, sz.start, sz.end, new,
                    f"The measurement {sz.text!r} becomes {new!r} (x2.5): a different T stage or "
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
    return one_edit(text, sz.start, sz.end, new, f"The measurement {sz.text!r} becomes {new!r} (±5%), within measurement "
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
        add_deletion(cands, text, sz.start, sz.end, sz.text)
    return pick_edit(text, rng, cands, lambda old: (
        f"The measurement {old!r} is omitted; staging and follow-up intervals depend on it "
        "(Fleischner; §3.1, Size/Distance)."))


@rule("size_distance", "significant", "fabrication", check=local_attr("size", "differ"))
def size_add(text: str, rng: random.Random) -> Rewrite | None:
    """Give an unmeasured nodule/mass a large size ("nodule" -> "3.5 cm nodule")."""
    cands = []
    for m, _a, _mods in finding_nps(text, r"nodules?|mass(?:es)?|lesions?"):
        sent = sentence_at(text, m.start(), m.end())
        if sent is not None and not extract_size(sent.text):
            cands.append(m)
    m = pick(rng, cands)
    if m is None:
        return None
    size = ("3.5 cm", "4 cm", "5 cm")[rng.randrange(3)]
    new = styled(text, m.start(), size) + " "
    return one_edit(text, m.start(), m.start(), new,
                    f"A fabricated size {size!r} is given to {m.group(0)!r}; a lesion over 3 cm "
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
    return one_edit(text, a, b, ins, f"A normal cardiothoracic ratio ({ratio}) is added; it has no bearing on management "
                               "(Appendix A, Size/Distance I).")


_UNIT = re.compile(r"(?i)\b(mm|cm)\b|(?<=\d)(mm|cm)\b")


@rule("size_distance", "insignificant", "inaccuracy", check=all_of(size_ratio(0.99, 1.01), labels("same")))
def size_convert_units(text: str, rng: random.Random) -> Rewrite | None:
    """Write a measurement in the other metric unit ("8 mm" -> "0.8 cm", "4 cm" -> "40 mm"). (Choice: the
    paper's Size/Distance I example changes the number within measurement error; the same number in
    other units is the limiting case — the text changes, the measurement does not.)"""
    cands = []
    for sz in _sizes(text):
        units = {(m.group(1) or m.group(2)).lower() for m in _UNIT.finditer(sz.text)}
        if len(units) != 1:
            continue
        unit = units.pop()
        factor, other = (0.1, "cm") if unit == "mm" else (10.0, "mm")
        new = _UNIT.sub(lambda m: other.upper() if (m.group(1) or m.group(2)).isupper() else other,
                        _scale_numbers(sz.text, factor))
        if new != sz.text:
            cands.append((sz.start, sz.end, new, sz.text))
    return pick_edit(text, rng, cands, lambda old: (
        f"The measurement {old!r} is written in the other metric unit; the size is the same "
        "(Size/Distance I)."))
