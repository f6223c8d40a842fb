"""What the Location rules share (:mod:`radaudit.perturb.rules.location` and
:mod:`radaudit.perturb.rules.location_insignificant`): the site patterns, the case of an edited site, the
tests of what a site is attached to, and the checks of the edited sites and device tips."""

from __future__ import annotations

import re
from collections import Counter

from radaudit.perturb.textops import (
    FINDING_NOUN,
    is_positive,
    is_upper_context,
    sentence_at,
)
from radaudit.perturb.verify import (
    CheckContext,
    local_measure,
)
from radaudit.text.attributes import (
    extract_devices,
    extract_location,
)

#: Benign, calcified or healed findings whose site does not change care (Fleischner: a benign calcification
#: pattern needs no follow-up): their site is edited only by the insignificant rules below.
BENIGN = re.compile(r"\b(?:granulom\w*|calcifi\w*|calcium)\b", re.IGNORECASE)
GRANULOMA = re.compile(r"\bgranulom(?:as?|ata)\b", re.IGNORECASE)
#: Findings whose bilateral/unilateral distribution changes the differential and work-up.
SIG_NOUN = (r"effusions?|opacit(?:y|ies)|consolidations?|infiltrates?|airspace\s+(?:disease|opacit(?:y|ies))|"
             r"pneumonia|nodules?|mass(?:es)?|pneumothora(?:x|ces)")
NOT_A_LESION = re.compile(r"(?i)obscur|overlap|limit|exclud|evaluat|marker|fiducial|projecting\s+over|overl[iy]|"
                           r"dependent|shrapnel|foreign|suture")
LOBE_SIMPLE = re.compile(r"^(?P<side>left|right)(?P<sep>\s+)(?P<lvl>upper|middle|lower)(?P<tail>\s+lobe)$",
                          re.IGNORECASE)


def site_case(text: str, pos: int, src: str, new: str) -> str:
    """``new`` in the case of the report around ``pos``: all capitals in an upper-case sentence,
    Capitalised where ``src`` is Capitalised ("Lingular ..."), else as written ("mid SVC")."""
    if is_upper_context(text, pos):
        return new.upper()
    if src[:1].isupper() and not src.isupper():
        return new[:1].upper() + new[1:]
    return new


def site_edit(start: int, site: str, a: int, b: int, new: str) -> tuple[int, int, str, str]:
    """A candidate edit that rewrites the whole site phrase ``site`` (at ``start`` in the report) with its
    part ``site[a:b]`` replaced by ``new``, so that the checks see the whole site on both sides."""
    return start, start + len(site), site[:a] + new + site[b:], site


def lobe_alone(text: str, a: int, b: int) -> bool:
    """The lobe at ``[a, b)`` is not a segment's lobe ("posterior segment of the right upper lobe", "right
    upper lobe anterior segment") and no zone in its sentence ties the finding to a level ("retrocardiac
    left lower lobe atelectasis", "left upper lobe collapse with left apical thickening")."""
    if re.search(r"(?i)\b(?:segments?|portion|aspect)\s+of\s+(?:the\s+)?$", text[max(0, a - 30):a]) or \
            re.match(r"(?i)\s+(?:(?-i:XXXX)\s+)?(?:\w+\s+)?segment", text[b:]):
        return False
    sent = sentence_at(text, a, b)
    rest = text[sent.start:a] + " " + text[b:sent.end]
    return not re.search(r"(?i)retrocardiac|basilar|\bbases?\b|apical|\bapex|apices|costophrenic|infrahilar|"
                         r"suprahilar|lung\s+zone", rest)


def lesion_sentence(text: str, a: int, b: int) -> bool:
    """The sentence around ``[a, b)`` asserts a lung/pleural finding (:data:`FINDING_NOUN`) and
    mentions nothing benign or calcified (:data:`BENIGN`), nor a site used for something else
    ("bony overlap in the lung apices could obscure a nodule", "markers projecting over the apex")."""
    sent = sentence_at(text, a, b)
    if sent is None or BENIGN.search(sent.text) or NOT_A_LESION.search(sent.text):
        return False
    return any(is_positive(text, sent.start + m.start(), sent.start + m.end())
               for m in re.finditer(rf"\b(?:{FINDING_NOUN})\b", sent.text, re.IGNORECASE))


def prenominal_site(text: str, end: int) -> bool:
    """The site ending at ``end`` modifies a finding noun that follows ("right lower lobe opacity")."""
    m = re.match(rf"[\s-]+((?:[\w-]+\s+){{0,2}})(?:{FINDING_NOUN})\b", text[end:], re.IGNORECASE)
    return bool(m) and not re.search(r"(?i)\b(?:a|an|the|is|are|was|were|with|and|or|of|in|at|on|to|which|that)\b",
                                     m.group(1))


def site_terms(pattern: str, expect: str):
    """Check: the ``pattern`` matches (lower case, spaces collapsed) in the edited parts are ``"same"``
    or ``"differ"`` between GT and ME (for sites :mod:`radaudit.text.attributes` does not extract)."""
    rx = re.compile(pattern, re.IGNORECASE)

    def count(s: str) -> Counter:
        return Counter(" ".join(m.group(0).lower().split()) for m in rx.finditer(s))

    return local_measure(count, expect, "the site terms")


def same_site_side():
    """Check: the sides of the sites (:class:`~radaudit.text.attributes.Location` ``side``, which knows
    that the lingula is left) in the edited parts are the same in GT and ME."""

    def check(ctx: CheckContext) -> str | None:
        a = Counter(loc.side for loc in extract_location(ctx.gt_part))
        b = Counter(loc.side for loc in extract_location(ctx.me_part))
        return None if a == b else f"the side of the site changed ({ctx.gt_part!r} -> {ctx.me_part!r}) but should not"

    return check


def tip_positions(text: str) -> tuple[Counter, Counter]:
    devices = extract_devices(text)
    return (Counter(d.tip.location for d in devices if d.tip is not None and d.tip.location),
            Counter(d.value for d in devices))


def tip_check(expect: str):
    """Check: the device tip positions (:func:`~radaudit.text.attributes.extract_devices`) of the whole
    report were ``"added"``, ``"dropped"`` or ``"moved"`` (same number, another place), with the same
    devices in GT and ME."""

    def check(ctx: CheckContext) -> str | None:
        (gt_tips, gt_dev), (me_tips, me_dev) = tip_positions(ctx.gt), tip_positions(ctx.me)
        if gt_dev != me_dev:
            return f"the devices changed ({dict(gt_dev)} -> {dict(me_dev)}), only a tip position should"
        ok = {"added": not (gt_tips - me_tips) and bool(me_tips - gt_tips),
              "dropped": not (me_tips - gt_tips) and bool(gt_tips - me_tips),
              "moved": gt_tips != me_tips and sum(gt_tips.values()) == sum(me_tips.values())}[expect]
        return None if ok else f"tip positions {dict(gt_tips)} -> {dict(me_tips)}: expected one {expect}"

    return check
