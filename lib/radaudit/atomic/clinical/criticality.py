"""Critical findings of AtomiMed-clinical (:mod:`radaudit.atomic.clinical`; ``clinical_criticality.yaml``): which
present findings are critical (tension, a large pneumothorax, free intraperitoneal air, a malpositioned tube or line, a
large or massive collection, complete collapse, severe edema), when a candidate's grade is a critical downgrade (rung
2c) or a one-grade over-call, and in which compartment a device's tip lies.

What the ladder does with these answers is in :mod:`~radaudit.atomic.clinical.downgrades` (facts scored as missed,
false reassurance) and :mod:`~radaudit.atomic.clinical.scores_issue41` (the critical part of a finding's weight).
"""

from __future__ import annotations

from radaudit.atomic.clinical.facets import finding_levels
from radaudit.atomic.concepts import Tables, load_tables
from radaudit.atomic.lexicon import morphology_terms
from radaudit.atomic.schema import Finding

__all__ = ["compartments_differ", "downgraded", "is_critical", "one_grade_overcall"]


def is_critical(f: Finding | None, tables: Tables | None = None) -> bool:
    """Whether a present finding meets a criterion of the critical-findings table (``clinical_criticality.yaml``):
    always (free intraperitoneal air, a malpositioned tube), a severity at or above a level (a large pneumothorax,
    a massive effusion: "complete"/"white-out" is the top level) or a morphology term (tension)."""
    if f is None or f.present != "yes":
        return False
    t = tables or load_tables()
    for rule in t.critical:
        if rule.finding != f.name:
            continue
        kind, value = rule.when
        if kind == "always":
            return True
        if kind == "severity":
            lv = finding_levels(f)
            if lv and max(lv) >= value:
                return True
        if kind == "morphology" and value in {x for x, _, _ in morphology_terms(f.attributes.morphology or "")}:
            return True
    return False


def downgraded(ref: Finding, cand: Finding, t: Tables) -> bool:
    """A critical reference finding that the candidate states at a grade of ``downgrade_level`` or less."""
    if not is_critical(ref, t) or is_critical(cand, t):
        return False
    lv = finding_levels(cand)
    return bool(lv) and max(lv) <= t.downgrade_level


def one_grade_overcall(cand: Finding, ref: Finding | None, t: Tables) -> bool:
    """A candidate finding at a critical grade (large) whose paired reference finding states the same finding one grade
    below it (moderate), and not critical by any criterion: an overcall by one step (issue 41, after holdout6). The
    candidate's statement then weighs as the reference's does - the overcall costs its severity facet only, as
    imprecision, and not the critical part a false critical report carries (a moderate pneumothorax called large is
    drained either way; a small one called large, or a simple one called tension, is still a false critical finding)."""
    if ref is None or ref.present != "yes" or ref.name != cand.name or is_critical(ref, t):
        return False
    lc, lr = finding_levels(cand), finding_levels(ref)
    return bool(lc) and bool(lr) and max(lc) - max(lr) <= 1 and not _morphology_critical(cand, t)


def _morphology_critical(f: Finding, t: Tables) -> bool:
    """Whether ``f`` meets a morphology criterion of the critical table (tension)."""
    terms = {x for x, _, _ in morphology_terms(f.attributes.morphology or "")}
    return any(r.finding == f.name and r.when[0] == "morphology" and r.when[1] in terms for r in t.critical)


def _tip_compartments(f: Finding, t: Tables) -> frozenset[str]:
    """The compartments (``tip_compartments`` of ``clinical_criticality.yaml``) of the tip locations a device states."""
    loc = f.attributes.location or ""
    if "tip:" not in loc:
        return frozenset()
    tips = [x.strip() for x in loc.split("tip:", 1)[1].split(",")]
    table = t.tip_compartment or {}
    return frozenset(table[x] for x in tips if x in table)


def compartments_differ(r: Finding, c: Finding, t: Tables) -> bool:
    """Whether both reports place the device's tip in a known compartment (airway, digestive, venous, heart, pulmonary
    artery) and the compartments do not meet."""
    a, b = _tip_compartments(r, t), _tip_compartments(c, t)
    return bool(a and b and not a & b)
