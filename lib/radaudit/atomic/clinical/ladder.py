"""The ladder's rungs of AtomiMed-clinical (:mod:`radaudit.atomic.clinical`, *Credit* and *The ladder*): what one fact
earns from the other report.

- pairing: :func:`pair_entities` (the definition before issue 41) and :func:`pair_clinical_entities` (over the clinical
  vocabulary), one-to-one by name similarity ≥ θ;
- the other report's finding a fact is compared with when it has no pair: a more specific or generic form
  (:func:`related_finding`: the lexicon; :func:`related_clinical`: the lexicon, then the concept table,
  :func:`concept_relation`), a sign that implies it (rung 3, :func:`sign_link`), or a finding its stated absence
  denies (rung 5, :func:`contradicted`);
- the credit itself (rungs 1 and 2, a generic name, a finding stated resolved): :func:`fact_credit`.

Which facts the ladder scores as missed or as false reassurance (rungs 2c, 5r) is
:mod:`~radaudit.atomic.clinical.downgrades`; the loop that applies the rungs,
:mod:`~radaudit.atomic.clinical.scores_issue41`.
"""

from __future__ import annotations

from collections.abc import Sequence

from radaudit.atomic.clinical.criticality import is_critical
from radaudit.atomic.clinical.facets import OMITTED, UNDERCALL_FACTOR, attribute_agreement, sides_disjoint, temporal_credit
from radaudit.atomic.clinical.options import ClinicalOptions
from radaudit.atomic.concepts import Tables
from radaudit.atomic.lexicon import GENERIC_CREDIT, morphology_terms, related_as
from radaudit.atomic.schema import Finding
from radaudit.atomic.score import align_findings, greedy_pairs, name_similarity, normalize_name

__all__ = ["concept_relation", "contradicted", "fact_credit", "other_resolved", "pair_clinical_entities",
           "pair_entities", "related_clinical", "related_finding", "sign_link"]

_RESOLVED_NEAR = 0.5  # a change against "resolved" earns half its whole-axis temporal credit (package docstring)


def pair_entities(reference: Sequence[Finding], candidate: Sequence[Finding], theta: float = 0.8,
                  scorer: str = "ratio") -> list[tuple[int, int]]:
    """One-to-one pairs ``(i, j)`` of reference and candidate findings naming the same entity
    (:func:`~radaudit.atomic.score.entity_similarity` ≥ ``theta``), most similar first; ties by
    reference order, then candidate order: the paper's alignment (:func:`~radaudit.atomic.score.align_findings`)
    over every finding, present or absent."""
    pairs = align_findings([f.name for f in reference], [f.name for f in candidate], [True] * len(reference),
                           [True] * len(candidate), theta=theta, scorer=scorer)
    return [(i, j) for i, j, _ in pairs]


def pair_clinical_entities(ref: Sequence[Finding], cand: Sequence[Finding], opt: ClinicalOptions,
                           names: frozenset[str]) -> list[tuple[int, int]]:
    """:func:`pair_entities` over the clinical vocabulary ``names``: two different names of the vocabulary (lexicon,
    new findings, signs) are different entities; otherwise name similarity ≥ θ, most similar first."""
    cands = []
    for i, a in enumerate(ref):
        for j, b in enumerate(cand):
            na, nb = normalize_name(a.name), normalize_name(b.name)
            s = 1.0 if na == nb else (0.0 if na in names and nb in names else name_similarity(a.name, b.name, opt.scorer))
            if s >= opt.theta:
                cands.append((s, i, j))
    return [(i, j) for i, j, _ in greedy_pairs(cands)]


def other_resolved(f: Finding) -> bool:
    """Whether an absent finding is stated as resolved (its temporal facet reads "resolved")."""
    return f.present == "no" and bool(f.attributes.temporal) and \
        (temporal_credit("resolved", f.attributes.temporal) or 0.0) == 1.0


def related_finding(f: Finding, others: Sequence[Finding]) -> tuple[Finding | None, str | None]:
    """``(other, "specific" | "generic")``: the first present finding of ``others`` that is a more specific / more
    generic form of ``f`` (:func:`~radaudit.atomic.lexicon.related_as`), on a compatible side; ``(None, None)``."""
    for rel in ("specific", "generic"):
        for o in others:
            if o.present == "yes" and related_as(f.name, o.name) == rel and not sides_disjoint(f, o):
                return o, rel
    return None, None


def concept_relation(asking: str, other: str, t: Tables) -> tuple[str | None, float | None]:
    """``(relation, credit)`` of finding name ``other`` seen from ``asking`` in the concept table's relations:
    ``"generic"`` (``other`` is the more generic or an interchangeable name; with the relation's credit),
    ``"specific"`` (credit ``None``), or ``(None, None)``. A ``when_morphology`` relation is not one
    (:func:`_refined_credit`)."""
    for r in t.relations:
        if r.morphology is not None:
            continue  # a refinement of an existing relation's credit (:func:`_refined_credit`), not a relation
        if r.interchangeable and {asking, other} == {r.generic, r.specific} and asking != other:
            return "generic", r.credit
        if not r.interchangeable and asking == r.generic and other == r.specific:
            return "specific", None
        if not r.interchangeable and asking == r.specific and other == r.generic:
            return "generic", r.credit
    return None, None


def _refined_credit(specific: Finding, generic: Finding, t: Tables) -> float | None:
    """The concept table's credit for ``generic`` named for ``specific`` when a relation holds only for a morphology the
    generic finding states (``when_morphology``: an *airspace* opacity for a consolidation earns 1, a bare opacity keeps
    :data:`~radaudit.atomic.lexicon.GENERIC_CREDIT`); ``None``: no such relation."""
    terms = {x for x, _, _ in morphology_terms(generic.attributes.morphology or "")}
    for r in t.relations:
        if r.morphology is not None and r.specific == specific.name and r.generic == generic.name and r.morphology in terms:
            return r.credit
    return None


def related_clinical(f: Finding, others: Sequence[Finding], t: Tables
                     ) -> tuple[Finding | None, str | None, float | None]:
    """``(other, relation, credit)``: the lexicon's relations (:func:`related_finding`), then the concept table's
    (:func:`concept_relation`), more specific before more generic; ``credit`` is the concept table's credit of a
    generic relation (``None``: the lexicon's default)."""
    o, rel = related_finding(f, others)
    if o is not None:
        return o, rel, (_refined_credit(f, o, t) if rel == "generic" else None)
    for want in ("specific", "generic"):
        for o in others:
            if o.present == "yes" and not sides_disjoint(f, o):
                rel, credit = concept_relation(f.name, o.name, t)
                if rel == want:
                    return o, rel, credit
    return None, None, None


def sign_link(f: Finding, others: Sequence[Finding], t: Tables, reference_side: bool
              ) -> tuple[Finding | None, str | None, float]:
    """``(other, relation, credit)`` of a present finding through the signs table (rung 3).

    ``"sign"``: the other report states a sign implying ``f``: a reference finding earns the sign's credit (on its
    base part); a candidate finding earns 1 when the reference's sign is a pure sign (the reference's own
    observation supports it), else the sign's credit. ``"sign-of"``: ``f`` is a sign and the other report names a
    finding it implies: 1 (the sign is accounted for), except a reference finding-sign (mediastinal shift) whose own
    finding the candidate did not report."""
    best: tuple[Finding | None, str | None, float] = (None, None, 0.0)
    for o in others:
        s = t.signs.get(o.name)
        if o.present == "yes" and s is not None and f.name in s.implies and not sides_disjoint(f, o):
            c = s.implies[f.name] if reference_side or s.kind == "finding" else 1.0
            if c > best[2]:
                best = (o, "sign", c)
    if best[0] is not None:
        return best
    s = t.signs.get(f.name)
    if s is not None and not (reference_side and s.kind == "finding"):
        for o in others:
            if o.present == "yes" and o.name in s.implies and not sides_disjoint(f, o):
                return o, "sign-of", 1.0
    return best


def contradicted(f: Finding, others: Sequence[Finding], t: Tables) -> Finding | None:
    """A present finding of the other report that a stated absence ``f`` denies through a relation (rung 5): "no
    consolidation" against "pneumonia" (the other finding is a more specific form of the denied one)."""
    for o in others:
        if o.present != "yes" or sides_disjoint(f, o):
            continue
        if related_as(f.name, o.name) == "specific" or concept_relation(f.name, o.name, t)[0] == "specific":
            return o
        if any(r.interchangeable and {f.name, o.name} == {r.generic, r.specific} for r in t.relations):
            return o  # "no pulmonary nodule or mass" against a nodule: the same lesion denied under its other name
    return None


def fact_credit(asking: Finding, other: Finding | None, relation: str | None, *, reference_side: bool,
                parts: list[tuple[str, float]], opt: ClinicalOptions, others: Sequence[Finding] = (),
                generic_credit: float | None = None, base_factor: float = 1.0, tables: Tables | None = None
                ) -> tuple[float, float | None, dict[str, float]]:
    """``(credit, attribute agreement, facet credits)`` of one fact (:mod:`radaudit.atomic.clinical`, *Credit*).
    ``generic_credit``: the concept table's credit of a generic relation (default
    :data:`~radaudit.atomic.lexicon.GENERIC_CREDIT`); ``base_factor``: the critical-downgrade factor on the base part;
    ``tables``: the issue-41 tables (a ``critical:`` part is earned when the other finding is critical too)."""
    other_present = other is not None and other.present == "yes"
    if asking.present == "no" or (other is not None and other.present == "no" and other_resolved(other)):
        # absent in one report, present in the other: no credit, except that a report which says the
        # finding resolved is nearer one that says it decreased than one that says it is unchanged
        if not other_present and asking.present == "no":
            return 1.0, None, {}
        resolved, changed = (asking, other) if asking.present == "no" else (other, asking)
        if changed is None or changed.present != "yes" or not changed.attributes.temporal or \
                not other_resolved(resolved):
            return 0.0, None, {}
        # graded over the whole axis (resolved -2 .. new +2), so that a finding called persistent is nearer
        # the resolved one than a finding called worse: decreased 3/4, unchanged 1/2, increased 1/4, new 0
        c = temporal_credit(resolved.attributes.temporal or "", changed.attributes.temporal, span=4.0)
        return _RESOLVED_NEAR * (c or 0.0), None, {"temporal": c or 0.0}
    if not other_present or sides_disjoint(asking, other):
        return 0.0, None, {}  # not reported, or reported on the other side (a different finding)

    context = [o for o in others if o is not other and o.present == "yes" and related_as(other.name, o.name)]
    # an actionable reference finding under-called costs more than over-called (UNDERCALL_FACTOR; issue-41 rules only)
    under = UNDERCALL_FACTOR if tables is not None and reference_side and sum(w for _, w in parts) >= 2.0 else 1.0
    a, credits = attribute_agreement(asking, other, extra_neutral=not reference_side, theta=opt.theta,
                                     context=context, under=under)
    if not reference_side:
        # the candidate's details: only one worse than leaving it out is held against it (package docstring)
        credits = {k: (c if c < OMITTED else 1.0) for k, c in credits.items()}
        a = sum(credits.values()) / len(credits) if credits else 1.0
    h = opt.hedge_factor if reference_side and asking.hedged != other.hedged else 1.0
    base = opt.alpha + (1 - opt.alpha) * a * h
    if relation == "generic":
        base *= generic_credit if generic_credit is not None else GENERIC_CREDIT.get(" ".join(other.name.lower().split()),
                                                                                     0.5)
    total = sum(w for _, w in parts)
    earned = parts[0][1] * base * base_factor
    for label, w in parts[1:]:
        facet, term = label.split(":", 1)
        if facet == "critical":
            earned += w * (1.0 if tables is not None and is_critical(other, tables) else 0.0)
            continue
        value = getattr(other.attributes, facet, None)
        earned += w * (1.0 if value and term in value.lower() else 0.0)
    return earned / total, a, credits
