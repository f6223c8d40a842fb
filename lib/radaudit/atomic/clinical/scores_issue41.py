"""AtomiMed-clinical of one pair with the issue-41 ladder (:mod:`radaudit.atomic.clinical`, *The ladder*;
``ClinicalOptions.rules``, the default): the scoring loop, in named steps.

1. :func:`_prepare_pair`: both reports' findings prepared and their signs folded
   (:mod:`~radaudit.atomic.clinical.prepare`), paired over the clinical vocabulary, the context rules matched, and the
   decisions taken on the pair as a whole: facts scored as missed or not counted (rung 2c) and false reassurance (5r)
   (:mod:`~radaudit.atomic.clinical.downgrades`);
2. :func:`_score_direction`, for the reference's facts (recall) then the candidate's (precision), fact by fact: what it
   is compared with (:func:`_compared_with`), its weight (:func:`_weigh`), its credit by the first rung that applies
   (:func:`_rung`), and the normal statement or false reassurance of the other report that denies it (:func:`_denial`);
3. :func:`_deny_folded_signs`: a normal statement that denies a sign the other report folded into its finding;
4. the row (:func:`~radaudit.atomic.clinical.scoring.score_row`).

The weights and weighted credits are summed in the order the facts and denials are met, so that every score is
reproduced to the last bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from radaudit.atomic.clinical.context import context_factor, matched_rules
from radaudit.atomic.clinical.criticality import downgraded, is_critical, one_grade_overcall
from radaudit.atomic.clinical.downgrades import facts_as_missed, false_reassurance, mimicked, stands_down
from radaudit.atomic.clinical.facets import sides_disjoint
from radaudit.atomic.clinical.ladder import contradicted, fact_credit, pair_clinical_entities, related_clinical, sign_link
from radaudit.atomic.clinical.options import ClinicalOptions
from radaudit.atomic.clinical.prepare import dismissed, fold_signs, folded_signs, prepare_findings
from radaudit.atomic.clinical.scoring import denial_row, fact_row, score_row
from radaudit.atomic.compare import location_key
from radaudit.atomic.concepts import ContextRule, Denial, Tables, load_tables
from radaudit.atomic.schema import Finding
from radaudit.atomic.score import normalize_name

__all__ = ["scores_issue41"]


@dataclass(frozen=True)
class _Direction:
    """One direction of a pair: the facts asked (``asking``) and the report they are asked of (``others``)."""

    name: str                      # "gt->inf": the reference's facts (recall); "inf->gt": the candidate's (precision)
    other: str                     # the opposite direction (where a denial of an asking fact is counted)
    asking: list[Finding]
    others: list[Finding]
    link: dict[int, int]           # asking fact -> its paired fact of ``others``
    denials: Sequence[Denial]      # the normal statements of the ``others`` report
    reassured: set[int]            # asking facts scored as false reassurance (rung 5r)
    false_position: set[int]       # asking facts of a device placed falsely (rung 2c)
    folded_other: list[Finding]    # the signs the ``others`` report folded into its findings

    @property
    def reference_side(self) -> bool:
        return self.name == "gt->inf"


@dataclass(frozen=True)
class _Pair:
    """A pair prepared for scoring, with the decisions taken on it as a whole (:func:`_prepare_pair`)."""

    ref: list[Finding]
    cand: list[Finding]
    pairs: list[tuple[int, int]]
    rules: list[ContextRule]
    as_missed: set[int]            # reference facts scored as missed (rung 2c)
    not_said: set[int]             # candidate facts not counted (a downgraded critical finding, a mimic)
    mimic_r: set[int]              # reference facts explained away by a mimic
    mimic_c: set[int]              # the candidate's mimics
    reassured_row: set[int]        # reference facts whose false reassurance weighs on precision
    folded: dict[str, list[Finding]]  # direction -> the signs its asking report folded
    directions: tuple[_Direction, _Direction]


class _Link(NamedTuple):
    """What a fact is compared with in the other report (:func:`_compared_with`)."""

    other: Finding | None          # None: nothing
    relation: str | None           # "same", "specific", "generic", "sign", "sign-of"
    generic_credit: float | None = None  # the concept table's credit of a generic relation
    sign_credit: float = 0.0       # a sign's credit (rung 3)


class _Weight(NamedTuple):
    """A fact's weight (:func:`_weigh`)."""

    parts: list[tuple[str, float]]  # the significance parts, with the critical part when there is one
    total: float                   # their sum
    w: float                       # as counted: a stated absence, a hedge and the context applied


class _Scored(NamedTuple):
    """A fact's credit and how the trace shows it (:func:`_rung`)."""

    credit: float
    other: Finding | None
    relation: str | None
    agreement: float | None = None
    facets: dict[str, float] | None = None


@dataclass
class _Tally:
    """What the loop accumulates, in order: per direction the summed weight and weighted credit, the counts of
    reference findings missed and candidate findings false, and the trace rows."""

    sums: dict[str, list[float]] = field(default_factory=lambda: {"gt->inf": [0.0, 0.0], "inf->gt": [0.0, 0.0]})
    missed: int = 0
    false: int = 0
    trace: list[dict[str, Any]] = field(default_factory=list)

    def add_fact(self, side: _Direction, f: Finding, w: float, credit: float, row: dict[str, Any]) -> None:
        if f.present == "yes" and credit == 0.0:
            if side.reference_side:
                self.missed += 1
            else:
                self.false += 1
        self.sums[side.name][0] += w
        self.sums[side.name][1] += w * credit
        self.trace.append(row)

    def add_denial(self, direction: str, w: float, row: dict[str, Any]) -> None:
        self.sums[direction][0] += w
        self.trace.append(row)


def scores_issue41(ref: list[Finding], cand: list[Finding], opt: ClinicalOptions, context: Mapping[str, Any] | None,
                   ref_denials: Sequence[Denial], cand_denials: Sequence[Denial]
                   ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """AtomiMed-clinical with the issue-41 ladder: ``(row, trace)`` of one pair from its two decompositions and the
    normal statements of each report (the steps: module docstring; the columns:
    :func:`~radaudit.atomic.clinical.clinical_scores`)."""
    t = load_tables()
    pair = _prepare_pair(ref, cand, opt, context, ref_denials, cand_denials, t)
    tally = _Tally()
    for side in pair.directions:
        _score_direction(side, pair, opt, t, tally)
    _deny_folded_signs(pair, opt, ref_denials, cand_denials, tally)
    return score_row(tally.sums, opt.kappa, tally.missed, tally.false, len(pair.pairs)), tally.trace


def _prepare_pair(ref: list[Finding], cand: list[Finding], opt: ClinicalOptions, context: Mapping[str, Any] | None,
                  ref_denials: Sequence[Denial], cand_denials: Sequence[Denial], t: Tables) -> _Pair:
    """Step 1 (module docstring)."""
    cand_dismissed = [f.model_copy(update={"name": t.aliases.get(normalize_name(f.name), f.name)})
                      for f in cand if dismissed(f)]
    ref_p, cand_p = prepare_findings(ref, t), prepare_findings(cand, t)
    ref, cand = fold_signs(ref_p, cand_p, t), fold_signs(cand_p, ref_p, t)
    folded = {"gt->inf": folded_signs(ref_p, ref, t), "inf->gt": folded_signs(cand_p, cand, t)}
    pairs = pair_clinical_entities(ref, cand, opt, t.names())
    to_c = dict(pairs)
    to_r = {j: i for i, j in pairs}
    rules = matched_rules(context, history=True)
    as_missed, not_said, (false_r, false_c) = facts_as_missed(ref, cand, pairs, t)
    mimic_pairs = mimicked(ref, cand, t)
    reassured_r: set[int] = set()
    reassured_c: set[int] = set()
    reassured_row: set[int] = set()
    if stands_down(cand_denials) and not stands_down(ref_denials):
        reassured_r, reassured_c, reassured_row = false_reassurance(ref, cand, to_c, as_missed, cand_dismissed, opt, t)
    directions = (
        _Direction("gt->inf", "inf->gt", ref, cand, to_c, cand_denials, reassured_r, false_r, folded["inf->gt"]),
        _Direction("inf->gt", "gt->inf", cand, ref, to_r, ref_denials, reassured_c, false_c, folded["gt->inf"]),
    )
    return _Pair(ref, cand, pairs, rules, as_missed, not_said, {i for i, _ in mimic_pairs}, {j for _, j in mimic_pairs},
                 reassured_row, folded, directions)


def _score_direction(side: _Direction, pair: _Pair, opt: ClinicalOptions, t: Tables, tally: _Tally) -> None:
    """Step 2 (module docstring): every fact of ``side.asking``, in order, into ``tally``."""
    for k, f in enumerate(side.asking):
        if not side.reference_side and k in pair.not_said:
            # the candidate's statement of a critical finding it downgraded: counted as not said (rung 2c)
            other = side.others[side.link[k]] if k in side.link else None
            relation = "mimic: not counted" if k in pair.mimic_c else "critical downgrade: not counted"
            tally.trace.append(fact_row(side.name, f, other, relation, 0.0, 0.0))
            continue
        link = _compared_with(f, k, side, t)
        weight = _weigh(f, link, side.reference_side, pair.rules, opt, t)
        s = _rung(f, k, link, weight, side, pair, opt, t)
        tally.add_fact(side, f, weight.w, s.credit,
                       fact_row(side.name, f, s.other, s.relation, weight.w, s.credit, s.agreement, s.facets))
        denial = _denial(f, k, weight.w, s, side, pair, opt)
        if denial is not None:
            tally.add_denial(side.other, *denial)


def _compared_with(f: Finding, k: int, side: _Direction, t: Tables) -> _Link:
    """Step 2a: the paired finding; for a present fact whose pair is missing or absent, a related finding (lexicon,
    then concept table), else a sign that implies it, else a sign it is of (rung 3)."""
    other, relation = (side.others[side.link[k]], "same") if k in side.link else (None, None)
    if f.present != "yes" or (other is not None and other.present == "yes"):
        return _Link(other, relation)
    rel_other, rel, generic_credit = related_clinical(f, side.others, t)
    if rel_other is not None:
        return _Link(rel_other, rel, generic_credit)
    s_other, s_rel, sign_credit = sign_link(f, side.others, t, side.reference_side)
    if s_other is not None:
        return _Link(s_other, s_rel, generic_credit, sign_credit)
    return _Link(other, relation, generic_credit, sign_credit)


def _weigh(f: Finding, link: _Link, reference_side: bool, rules: Sequence[ContextRule], opt: ClinicalOptions,
           t: Tables) -> _Weight:
    """Step 2b: the significance parts, with a critical part up to the critical tier for a critical finding (not for a
    candidate's one-grade over-call of its paired reference finding); the weight counted: ``negative_weight`` for a
    stated absence, ``hedge_factor`` for a hedged finding, the context's factor."""
    parts = opt.significance.parts(f, opt.theta, opt.scorer)
    base_total = sum(x for _, x in parts)
    if f.present == "yes" and is_critical(f, t) and base_total < t.critical_tier \
            and not (not reference_side and one_grade_overcall(f, link.other if link.relation == "same" else None, t)):
        parts = [*parts, (f"critical:{f.name}", t.critical_tier - base_total)]
    total = sum(x for _, x in parts)
    w = total * (opt.negative_weight if f.present == "no" else 1.0)
    if f.hedged:
        w *= opt.hedge_factor
    w *= context_factor(f, total, rules)
    return _Weight(parts, total, w)


def _rung(f: Finding, k: int, link: _Link, weight: _Weight, side: _Direction, pair: _Pair, opt: ClinicalOptions,
          t: Tables) -> _Scored:
    """Step 2c: the fact's credit by the first rung that applies: false reassurance (5r); scored as missed or a false
    position (2c); a stated absence of a sign the other report folded into its finding (5); a sign (3: its credit on the
    base part); a stated absence the other report contradicts through a relation (5); else
    :func:`~radaudit.atomic.clinical.ladder.fact_credit` (rungs 1 and 2; a critical downgrade's factor on the base part
    when ``downgrade_credit`` > 0)."""
    other, relation = link.other, link.relation
    missed = side.reference_side and k in pair.as_missed
    if k in side.reassured:
        return _Scored(0.0, other, "false reassurance")
    if missed or k in side.false_position:
        return _Scored(0.0, other, "false position" if not missed else
                       "explained away by a mimic: as a miss" if k in pair.mimic_r else "critical downgrade: as a miss")
    if f.present == "no" and other is None:
        # "no mediastinal shift" against a shift the other report states as part of its tension pneumothorax
        sg = next((g for g in side.folded_other if g.name == f.name and not sides_disjoint(f, g)), None)
        if sg is not None:
            return _Scored(0.0, sg, "contradicts a sign of the other report")
    if relation in ("sign", "sign-of"):
        # a sign earns its credit on the base part; the critical/modifier parts need the finding itself
        return _Scored(weight.parts[0][1] * link.sign_credit / weight.total if link.sign_credit < 1.0 else 1.0, other,
                       relation)
    if f.present == "no" and other is None:
        denied = contradicted(f, side.others, t)
        if denied is not None:
            return _Scored(0.0, denied, "contradicted")
    down = side.reference_side and relation == "same" and f.present == "yes" and other is not None \
        and other.present == "yes" and t.downgrade_credit > 0 and downgraded(f, other, t)
    credit, agreement, facets = fact_credit(f, other, relation, reference_side=side.reference_side, parts=weight.parts,
                                            opt=opt, others=side.others, generic_credit=link.generic_credit,
                                            base_factor=t.downgrade_credit if down else 1.0, tables=t)
    return _Scored(credit, other, "same, critical downgrade" if down else relation, agreement, facets)


def _denial(f: Finding, k: int, w: float, s: _Scored, side: _Direction, pair: _Pair, opt: ClinicalOptions
            ) -> tuple[float, dict[str, Any]] | None:
    """Step 2d: ``(weight, trace row)`` of the other report's statement that denies the fact, counted as a stated
    absence with credit 0 in the other direction (``negative_weight`` of the fact's weight), or ``None``: the
    candidate's false reassurance of a reference finding (5r), or a normal statement of the other report that denies a
    present fact it did not credit (5)."""
    if side.reference_side and k in pair.reassured_row:
        # the candidate's downgraded or explained-away statement, with its "nothing to do", denies the finding
        wd = opt.negative_weight * w
        return wd, denial_row(side.other, f.name, f"{f.name}: yes", "false reassurance (stands the work-up down)", wd)
    if f.present == "yes" and s.credit == 0.0 and (s.other is None or s.other.present == "yes"):
        # an unsided normal statement ("lungs otherwise clear") not when that report states the finding elsewhere
        states = any(o.present == "yes" and o.name == f.name for o in side.others)
        d = next((d for d in side.denials if d.denies(f.name, _sides(f)) and (d.sides or not states)), None)
        if d is not None:
            wd = opt.negative_weight * w
            return wd, denial_row(side.other, f.name, f"{f.name}: yes", f"denied: {d.text}", wd)
    return None


def _deny_folded_signs(pair: _Pair, opt: ClinicalOptions, ref_denials: Sequence[Denial],
                       cand_denials: Sequence[Denial], tally: _Tally) -> None:
    """Step 3: a normal statement of one report that denies a sign the other report folded into its finding
    ("mediastinum central" against a massive effusion "with mediastinal shift"): a stated absence with credit 0 (rung
    5), weighing ``negative_weight`` of the sign's weight."""
    for direction, signs, denials, own in (("inf->gt", pair.folded["gt->inf"], cand_denials, pair.cand),
                                           ("gt->inf", pair.folded["inf->gt"], ref_denials, pair.ref)):
        for g in signs:
            if any(o.name == g.name for o in own):
                continue  # the report states the sign itself (present or absent): scored above
            d = next((d for d in denials if d.denies(g.name, _sides(g))), None)
            if d is not None:
                wd = opt.negative_weight * opt.significance.weight(g, opt.theta, opt.scorer)
                tally.add_denial(direction, wd, denial_row(direction, g.name,
                                                           f"{g.name}: yes (a sign of the other report's finding)",
                                                           f"denied: {d.text}", wd))


def _sides(f: Finding) -> frozenset[str]:
    """The sides (left, right) a finding is stated on; a device's tip is not its side."""
    loc = (f.attributes.location or "").split("tip:")[0]
    return frozenset(location_key(loc)[0] & {"left", "right"}) if loc.strip() else frozenset()
