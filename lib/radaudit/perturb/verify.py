"""Verification that a rewrite changed only the intended part, in the intended way.

ReEvalMed §4.2.1 asks for rewrites that modify "only one targeted aspect" so that "the introduced
change is the primary deviation"; the paper had clinicians check every pair. This module does the
part a program can do, in two layers:

1. **Textual** (:func:`check_outside`): every character outside the declared edited spans is
   unchanged. With spans ``(gt_a, gt_b) -> (me_a, me_b)`` in order, the GT segments between them
   must equal the ME segments between them, byte for byte. Any difference there is reported with
   :func:`describe_changes` (difflib over word tokens), e.g. ``"outside the edited span: 'left' ->
   'right' at GT 40"``. For free-form rewrites (LLM), :func:`changed_envelope` finds the smallest
   GT/ME span pair outside which the texts agree (common prefix and suffix), and
   :func:`verify_declared_span` checks it lies inside the span the model said it edited.
2. **Semantic** (the rule's ``check``): the CheXpert-style labels (:mod:`radaudit.text.labeler`)
   and the attribute extraction (:mod:`radaudit.text.attributes`) differ exactly as intended,
   e.g. a laterality flip changes the side in the edited span, an adjacent-severity edit moves the
   severity by at most one level, a benign rephrasing leaves all 14 labels as they were. The check
   factories below build those checks. Label checks need a labeler; without one they are skipped
   and the verification note says so.

Everything here is a pure function of strings (and an optional labeler object).
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from radaudit.text.attributes import extract_attributes, extract_severity, extract_size
from radaudit.text.sections import sentences

__all__ = [
    "CheckContext", "VerificationResult", "check_outside", "changed_envelope", "describe_changes",
    "verify_rewrite", "verify_declared_span", "labels", "local_attr", "local_measure", "severity_shift", "size_ratio",
    "max_edit_distance", "same_sentences", "all_of", "label_vector",
]

SpanPair = tuple[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class VerificationResult:
    """``ok`` and a human-readable ``note`` (what was checked, or what failed)."""

    ok: bool
    note: str


@dataclass(frozen=True)
class CheckContext:
    """What a semantic check sees: both texts, the edit spans and an optional labeler."""

    gt: str
    me: str
    spans: tuple[SpanPair, ...]
    labeler: Any = None

    @property
    def gt_part(self) -> str:
        """The GT text of the edited spans, joined by a space."""
        return " ".join(self.gt[a:b] for (a, b), _ in self.spans)

    @property
    def me_part(self) -> str:
        return " ".join(self.me[a:b] for _, (a, b) in self.spans)


Check = Callable[[CheckContext], "str | None"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(text)]


def describe_changes(gt: str, me: str, limit: int = 5, offset: int = 0) -> list[str]:
    """Word-level differences between ``gt`` and ``me`` (difflib), as short strings with GT offsets
    (``offset`` is added: the position of ``gt`` in a longer text)."""
    a, b = _tokens(gt), _tokens(me)
    sm = difflib.SequenceMatcher(None, [t[2] for t in a], [t[2] for t in b], autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        old = gt[a[i1][0]:a[i2 - 1][1]] if i2 > i1 else ""
        new = me[b[j1][0]:b[j2 - 1][1]] if j2 > j1 else ""
        at = a[i1][0] if i1 < len(a) else len(gt)
        out.append(f"{old!r} -> {new!r} at GT {at + offset}")
    if not out and gt != me:
        out.append("whitespace or punctuation-only differences")
    return out[:limit]


def check_outside(gt: str, me: str, spans: Sequence[SpanPair]) -> list[str]:
    """The differences outside the declared ``spans`` (empty list: none). Spans must be in order
    and non-overlapping in both texts; a malformed span list is itself reported."""
    problems = []
    gpos = mpos = 0
    for (ga, gb), (ma, mb) in sorted(spans):
        if ga < gpos or ma < mpos or gb < ga or mb < ma or gb > len(gt) or mb > len(me):
            return [f"malformed edit spans {list(spans)} for texts of length {len(gt)}/{len(me)}"]
        if gt[gpos:ga] != me[mpos:ma]:
            problems += [f"outside the edited span: {d}" for d in describe_changes(gt[gpos:ga], me[mpos:ma], offset=gpos)]
        gpos, mpos = gb, mb
    if gt[gpos:] != me[mpos:]:
        problems += [f"outside the edited span (after it): {d}" for d in describe_changes(gt[gpos:], me[mpos:], offset=gpos)]
    return problems


def changed_envelope(gt: str, me: str) -> SpanPair | None:
    """The smallest ``((gt_a, gt_b), (me_a, me_b))`` outside which ``gt`` and ``me`` are identical
    (common prefix and suffix), widened to whole words; ``None`` when the texts are equal."""
    if gt == me:
        return None
    n = min(len(gt), len(me))
    p = 0
    while p < n and gt[p] == me[p]:
        p += 1
    s = 0
    while s < n - p and gt[len(gt) - 1 - s] == me[len(me) - 1 - s]:
        s += 1
    ga, gb, ma, mb = p, len(gt) - s, p, len(me) - s
    while ga > 0 and ma > 0 and gt[ga - 1].isalnum():  # widen to the word start (same prefix in both)
        ga -= 1
        ma -= 1
    while gb < len(gt) and mb < len(me) and gt[gb].isalnum():
        gb += 1
        mb += 1
    return (ga, gb), (ma, mb)


def verify_declared_span(gt: str, me: str, gt_span: tuple[int, int], me_span: tuple[int, int]) -> VerificationResult:
    """A free-form rewrite is acceptable when all of its changes lie inside the declared spans."""
    if gt == me:
        return VerificationResult(False, "the rewrite is identical to the GT")
    problems = check_outside(gt, me, [(tuple(gt_span), tuple(me_span))])
    if problems:
        return VerificationResult(False, "; ".join(problems))
    return VerificationResult(True, "all changes inside the declared span")


def verify_rewrite(gt: str, me: str, spans: Sequence[SpanPair], check: Check | None = None,
                   labeler: Any = None) -> VerificationResult:
    """Both layers: nothing changed outside ``spans``, the texts differ, and ``check`` passes."""
    if gt == me:
        return VerificationResult(False, "the rewrite is identical to the GT")
    problems = check_outside(gt, me, spans)
    if problems:
        return VerificationResult(False, "; ".join(problems))
    notes = ["text outside the edited span unchanged"]
    if check is not None:
        ctx = CheckContext(gt, me, tuple(spans), labeler)
        msg = check(ctx)
        if msg:
            return VerificationResult(False, msg)
        notes.append("semantic check passed" if labeler is not None or not getattr(check, "needs_labeler", False)
                     else "semantic check passed (label checks skipped: no labeler)")
    return VerificationResult(True, "; ".join(notes))


# --------------------------------------------------------------------------- check factories


def label_vector(labeler: Any, text: str) -> tuple[float, ...]:
    """The labeler's 14 labels of ``text`` as a tuple (NaN for blank)."""
    return tuple(labeler.label_one(text).values())


def _same_labels(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b))


def labels(expect: str) -> Check:
    """The 14 CheXpert-style labels of GT and ME are ``"same"`` or ``"differ"`` (skipped without a labeler)."""
    if expect not in ("same", "differ"):
        raise ValueError("expect must be 'same' or 'differ'")

    def check(ctx: CheckContext) -> str | None:
        if ctx.labeler is None:
            return None
        same = _same_labels(label_vector(ctx.labeler, ctx.gt), label_vector(ctx.labeler, ctx.me))
        if expect == "same" and not same:
            return "the CheXpert labels changed, but this rewrite should keep them"
        if expect == "differ" and same:
            return "the CheXpert labels did not change, but this rewrite should change them"
        return None

    check.needs_labeler = True  # type: ignore[attr-defined]
    return check


def _values(text: str, kind: str) -> Counter:
    return Counter(a.value for a in extract_attributes(text, kinds=[kind]))


def local_measure(measure: Callable[[str], Any], expect: str, what: str) -> Check:
    """``measure`` of the edited parts is ``"same"`` or ``"differ"`` between GT and ME; ``what`` names it in the
    message."""

    def check(ctx: CheckContext) -> str | None:
        same = measure(ctx.gt_part) == measure(ctx.me_part)
        if expect == "same" and not same:
            return f"{what} changed in the edited span ({ctx.gt_part!r} -> {ctx.me_part!r}) but should not"
        if expect == "differ" and same:
            return f"{what} did not change in the edited span ({ctx.gt_part!r} -> {ctx.me_part!r})"
        return None

    return check


def local_attr(kind: str, expect: str) -> Check:
    """The ``kind`` attribute values (:mod:`radaudit.text.attributes`) of the edited parts are
    ``"same"`` or ``"differ"`` between GT and ME."""
    return local_measure(lambda part: _values(part, kind), expect, kind)


def severity_shift(lo: float, hi: float) -> Check:
    """The severity level (:data:`~radaudit.text.attributes.SEVERITY_SCALE`, a range counts as its
    mean) in the edited span moved by ``lo <= |shift| <= hi``."""

    def check(ctx: CheckContext) -> str | None:
        a, b = extract_severity(ctx.gt_part), extract_severity(ctx.me_part)
        if len(a) != 1 or len(b) != 1:
            return f"expected one severity on each side, found {len(a)} and {len(b)}"
        shift = abs(b[0].level - a[0].level)
        if not lo <= shift <= hi:
            return f"severity moved by {shift} levels, expected {lo}..{hi}"
        return None

    return check


def size_ratio(lo: float, hi: float) -> Check:
    """The measurement in the edited span was scaled by a factor in ``[lo, hi]``."""

    def check(ctx: CheckContext) -> str | None:
        a, b = extract_size(ctx.gt_part), extract_size(ctx.me_part)
        if len(a) != 1 or len(b) != 1:
            return f"expected one measurement on each side, found {len(a)} and {len(b)}"
        r = b[0].value_mm / a[0].value_mm
        if not lo <= r <= hi:
            return f"size ratio {r:.3f} outside {lo}..{hi}"
        return None

    return check


def max_edit_distance(n: int) -> Check:
    """The edited parts differ by at most ``n`` character edits (Levenshtein, rapidfuzz)."""
    from rapidfuzz.distance import Levenshtein

    def check(ctx: CheckContext) -> str | None:
        d = Levenshtein.distance(ctx.gt_part, ctx.me_part)
        return None if 0 < d <= n else f"edit distance {d}, expected 1..{n}"

    return check


def same_sentences() -> Check:
    """GT and ME consist of the same sentences (any order): a reordering."""

    def check(ctx: CheckContext) -> str | None:
        a = sorted(s.text.rstrip(".") for s in sentences(ctx.gt))
        b = sorted(s.text.rstrip(".") for s in sentences(ctx.me))
        return None if a == b else "the sentences differ, not only their order"

    return check


def all_of(*checks: Check) -> Check:
    """Every check passes (the first failure is reported)."""

    def check(ctx: CheckContext) -> str | None:
        for c in checks:
            msg = c(ctx)
            if msg:
                return msg
        return None

    check.needs_labeler = any(getattr(c, "needs_labeler", False) for c in checks)  # type: ignore[attr-defined]
    return check
