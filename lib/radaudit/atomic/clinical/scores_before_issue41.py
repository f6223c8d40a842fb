"""AtomiMed-clinical of one pair as defined before issue 41 (``ClinicalOptions(rules=False)``), kept for comparison: it
shows that nothing but the ladder moved (tested against the stored scores of that definition). The definition
(:mod:`radaudit.atomic.clinical`, *Definition*): facts paired by name
(:func:`~radaudit.atomic.clinical.ladder.pair_entities`), a present fact without a present pair compared with a more
specific or generic form (the lexicon's only), every credit from :func:`~radaudit.atomic.clinical.ladder.fact_credit`;
no signs, normal statements, critical grades or concept table. A context scales the weights, as in the issue-41
definition (without the history's findings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from radaudit.atomic.clinical.context import context_factor, matched_rules
from radaudit.atomic.clinical.ladder import fact_credit, pair_entities, related_finding
from radaudit.atomic.clinical.options import ClinicalOptions
from radaudit.atomic.clinical.scoring import fact_row, score_row
from radaudit.atomic.concepts import ContextRule
from radaudit.atomic.schema import Finding

__all__ = ["scores_before_issue41"]


def scores_before_issue41(reference: Sequence[Finding], candidate: Sequence[Finding], opt: ClinicalOptions,
                          context: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The definition before issue 41 (``rules=False``), unchanged except that a context scales weights:
    ``(row, trace)`` of one pair (columns: :func:`~radaudit.atomic.clinical.clinical_scores`)."""
    rules = matched_rules(context)
    ref, cand = list(reference), list(candidate)
    pairs = pair_entities(ref, cand, opt.theta, opt.scorer)
    to_c = dict(pairs)
    to_r = {j: i for i, j in pairs}
    trace: list[dict[str, Any]] = []
    sums = {}
    counts = {}
    for direction, asking, others, link in (("gt->inf", ref, cand, to_c), ("inf->gt", cand, ref, to_r)):
        w_sum, c_sum, counts[direction] = _score_direction(direction, asking, others, link, rules, opt, trace)
        sums[direction] = (w_sum, c_sum)
    return score_row(sums, opt.kappa, counts["gt->inf"], counts["inf->gt"], len(pairs)), trace


def _score_direction(direction: str, asking: Sequence[Finding], others: Sequence[Finding], link: Mapping[int, int],
                     rules: Sequence[ContextRule], opt: ClinicalOptions, trace: list[dict[str, Any]]
                     ) -> tuple[float, float, int]:
    """``(summed weight, summed weighted credit, present facts with credit 0)`` of one direction's facts, their trace
    rows appended to ``trace``."""
    reference_side = direction == "gt->inf"
    w_sum = c_sum = 0.0
    zero = 0
    for k, f in enumerate(asking):
        other, relation = (others[link[k]], "same") if k in link else (None, None)
        if f.present == "yes" and (other is None or other.present != "yes"):
            rel_other, rel = related_finding(f, others)
            if rel_other is not None:
                other, relation = rel_other, rel
        parts = opt.significance.parts(f, opt.theta, opt.scorer)
        w = sum(x for _, x in parts) * (opt.negative_weight if f.present == "no" else 1.0)
        if f.hedged:
            w *= opt.hedge_factor  # "possible pneumothorax" claims less than "pneumothorax"
        if rules:
            w *= context_factor(f, sum(x for _, x in parts), rules)
        credit, agreement, facets = fact_credit(f, other, relation, reference_side=reference_side, parts=parts,
                                                opt=opt, others=others)
        if f.present == "yes" and credit == 0.0:
            zero += 1
        w_sum += w
        c_sum += w * credit
        trace.append(fact_row(direction, f, other, relation, w, credit, agreement, facets))
    return w_sum, c_sum, zero
