"""The GT–ME pair record, the taxonomy constants and the registry of rewrite rules.

ReEvalMed (Li et al., EMNLP 2025; ``../shared/papers/001_d2362e1e05417774.txt``) builds its
meta-evaluation data from *ground-truth* (GT) reports and *Meta-Evaluation rewrites* (ME) that
change exactly one targeted aspect (§4.2.1). Each pair is annotated with

- the **aspect** (the twelve rows of Table 2 / the criteria of §3.1): :data:`ASPECTS`;
- the **error type** (§4.2.1): *omission* (a clinically relevant GT fact is missing from the ME),
  *fabrication* (the ME adds a fact absent from the GT), *inaccuracy* (the same fact is described
  inconsistently): :data:`ERROR_TYPES`;
- the **clinical significance** (§3.1, Table 2 columns): :data:`SIGNIFICANCE`;
- the **edited span** in both texts and an **explanation** (the paper's dataset "contains the
  explanation for each GT-ME pair", Appendix A).

A :class:`Pair` also records how it was made (engine, rule, seed, source study) and whether the
edit was verified (:mod:`radaudit.perturb.verify`), plus an empty ``human_review`` column: the
paper had every pair "reviewed and validated by experienced clinicians" (§4.2.1), which no code can
replace.

Rules (:mod:`radaudit.perturb.rules`) are registered in :data:`RULES` with :func:`rule`.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from radaudit.errors import ParamsError
from radaudit.registry import Registry

__all__ = [
    "ASPECTS", "ERROR_TYPES", "SIGNIFICANCE", "HIGH_IMPACT_ASPECTS", "ASPECT_LABELS", "MONOTONICITY_GROUPS",
    "Edit", "Rewrite", "Pair", "RewriteRule", "RULES", "rule", "rules_for", "apply_edits", "derive_seed",
    "check_cell", "PAIR_COLUMNS",
]

#: The twelve evaluation aspects of Table 2, in the paper's row order.
ASPECTS: tuple[str, ...] = (
    "location", "severity", "description", "negation", "modality", "size_distance", "comparison",
    "contradiction", "uncertainty", "terminology", "noise", "stylistic",
)
#: Table 2 row names as the paper writes them (for tables and prompts).
ASPECT_LABELS: dict[str, str] = {
    "location": "Location", "severity": "Severity", "description": "Description", "negation": "Negation",
    "modality": "Modality", "size_distance": "Size/Distance", "comparison": "Comparison/Progression",
    "contradiction": "Internal Contradiction", "uncertainty": "Uncertainty", "terminology": "Terminology",
    "noise": "Noise", "stylistic": "Stylistic Variation",
}
#: §4.2.1 error types.
ERROR_TYPES: tuple[str, ...] = ("omission", "fabrication", "inaccuracy")
#: Clinical significance (Table 2 columns).
SIGNIFICANCE: tuple[str, ...] = ("significant", "insignificant")
#: §4.2.1: "for those clinically high-impact aspects: Location, Severity, Description, and Comparison /
#: Progression, we generated 10 significant and 10 insignificant error pairs for each of the three error types".
HIGH_IMPACT_ASPECTS: tuple[str, ...] = ("location", "severity", "description", "comparison")
#: §4.3 / Table 3 / Figure 3: the five severity groups of the monotonicity test.
MONOTONICITY_GROUPS: dict[int, str] = {
    0: "stylistic variation (clinically insignificant)",
    1: "minor factual error (clinically insignificant)",
    2: "single clinically significant error",
    3: "multiple (three) clinically significant errors",
    4: "logical contradiction (severe)",
}


def check_cell(aspect: str, significance: str, error_type: str | None = None) -> None:
    """Raise :class:`~radaudit.errors.ParamsError` naming the bad value and the allowed ones."""
    if aspect not in ASPECTS:
        raise ParamsError(f"Unknown aspect {aspect!r}. Allowed: {', '.join(ASPECTS)}.")
    if significance not in SIGNIFICANCE:
        raise ParamsError(f"Unknown significance {significance!r}. Allowed: {', '.join(SIGNIFICANCE)}.")
    if error_type is not None and error_type not in ERROR_TYPES:
        raise ParamsError(f"Unknown error type {error_type!r}. Allowed: {', '.join(ERROR_TYPES)}.")


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed from ``seed`` and ``parts`` (sha256), independent of iteration order and of
    Python's hash randomisation: the same (seed, study, rule) always draws the same choices."""
    h = hashlib.sha256(repr((int(seed),) + tuple(str(p) for p in parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


@dataclass(frozen=True)
class Edit:
    """Replace ``gt[start:end]`` with ``new`` (``start == end``: an insertion; ``new == ""``: a deletion)."""

    start: int
    end: int
    new: str


def apply_edits(text: str, edits: Sequence[Edit]) -> tuple[str, list[tuple[tuple[int, int], tuple[int, int]]]]:
    """Apply non-overlapping ``edits`` (GT coordinates) to ``text``.

    Returns the rewritten text and, per edit in position order, ``((gt_start, gt_end), (me_start, me_end))``.
    Overlapping or out-of-range edits raise ``ValueError``.
    """
    out: list[str] = []
    spans = []
    pos = 0
    shift = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if not (0 <= e.start <= e.end <= len(text)):
            raise ValueError(f"edit {e} is outside the text (length {len(text)}).")
        if e.start < pos:
            raise ValueError(f"edit {e} overlaps the previous edit (which ends at {pos}).")
        out.append(text[pos:e.start])
        out.append(e.new)
        me_start = e.start + shift
        spans.append(((e.start, e.end), (me_start, me_start + len(e.new))))
        shift += len(e.new) - (e.end - e.start)
        pos = e.end
    out.append(text[pos:])
    return "".join(out), spans


@dataclass(frozen=True)
class Rewrite:
    """What a rule returns: the ``edits`` to the GT (GT coordinates) and a one-line ``explanation``
    of the change and why it is (in)significant; ``error_type`` when the rule fixes it."""

    edits: tuple[Edit, ...]
    explanation: str
    error_type: str | None = None

    def apply(self, text: str) -> str:
        return apply_edits(text, self.edits)[0]


Check = Callable[..., "str | None"]


@dataclass(frozen=True)
class RewriteRule:
    """One deterministic rewrite: ``fn(text, rng) -> Rewrite | None`` (``None``: the report has
    nothing this rule can edit). ``check(gt, me, labeler) -> message | None`` is the semantic
    verification (:mod:`radaudit.perturb.verify`); ``labeler`` may be ``None``."""

    name: str
    aspect: str
    significance: str
    error_type: str
    fn: Callable[[str, random.Random], Rewrite | None]
    description: str
    check: Check | None = None

    def __call__(self, text: str, rng: random.Random) -> Rewrite | None:
        return self.fn(text, rng)


#: name -> rule. Filled when :mod:`radaudit.perturb.rules` is imported (the package imports it).
RULES: Registry[RewriteRule] = Registry("rewrite rule")


def rule(aspect: str, significance: str, error_type: str, *, check: Check | None = None, name: str | None = None):
    """Decorator: register ``fn`` as a :class:`RewriteRule` (its docstring's first line is the description)."""
    check_cell(aspect, significance, error_type)

    def deco(fn: Callable[[str, random.Random], Rewrite | None]) -> RewriteRule:
        doc = (fn.__doc__ or "").strip().splitlines()
        r = RewriteRule(name or fn.__name__, aspect, significance, error_type, fn, doc[0] if doc else "", check)
        RULES.register(r)
        return r

    return deco


def rules_for(aspect: str, significance: str, error_type: str | None = None) -> list[RewriteRule]:
    """The registered rules for one cell (all error types when ``error_type`` is ``None``), by name."""
    check_cell(aspect, significance, error_type)
    # RULES is complete here: importing this module imports the package, whose __init__ imports the rules.
    return sorted(
        (r for r in RULES.values() if r.aspect == aspect and r.significance == significance
         and (error_type is None or r.error_type == error_type)),
        key=lambda r: r.name,
    )


@dataclass
class Pair:
    """One GT–ME pair (§4.2.1) with its annotations, provenance and verification.

    ``gt_span``/``me_span``: ``(start, end)`` of the edited part in ``gt``/``rewritten`` (the
    envelope when there are several edits; ``edits`` lists each one as
    ``[gt_start, gt_end, me_start, me_end]``). ``verified``: the automatic checks of
    :mod:`radaudit.perturb.verify` passed; ``verification_note`` says what was checked or what
    failed. ``human_review``: empty until a clinician reviews the pair (the paper's validation step).
    ``group``: the monotonicity group (§4.3), ``None`` for discrimination/robustness pairs.
    """

    pair_id: str
    study_id: str
    source: str
    gt: str
    rewritten: str
    aspect: str
    error_type: str
    significance: str
    gt_span: tuple[int, int]
    me_span: tuple[int, int]
    gt_edit_text: str
    me_edit_text: str
    explanation: str
    engine: str
    rule: str
    seed: int
    verified: bool
    verification_note: str
    human_review: str = ""
    group: int | None = None
    edits: list[list[int]] = field(default_factory=list)
    context: str = "full"

    def to_row(self) -> dict[str, Any]:
        d = asdict(self)
        d["gt_start"], d["gt_end"] = self.gt_span
        d["me_start"], d["me_end"] = self.me_span
        del d["gt_span"], d["me_span"]
        return d


#: Column order of pair tables (:func:`radaudit.perturb.dataset.pairs_frame`).
PAIR_COLUMNS: tuple[str, ...] = (
    "pair_id", "study_id", "source", "aspect", "error_type", "significance", "group", "gt", "rewritten",
    "gt_start", "gt_end", "me_start", "me_end", "gt_edit_text", "me_edit_text", "edits", "explanation",
    "engine", "rule", "seed", "context", "verified", "verification_note", "human_review",
)
