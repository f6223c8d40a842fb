"""The patient's context in AtomiMed-clinical (:mod:`radaudit.atomic.clinical`, *Context*; ``clinical_context.yaml``):
which context rules a context matches (:func:`matched_rules`), the findings a history documents as already known
(:func:`history_findings`), and the factor a matched rule puts on a finding's weight (:func:`context_factor`: an
expected finding weighs less, a finding the context makes dangerous is raised to its rule's tier). A batch's contexts
are validated by :func:`check_contexts`. No context changes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from radaudit.atomic.clinical.decomposer import ClinicalRuleDecomposer
from radaudit.atomic.clinical.facets import finding_levels
from radaudit.atomic.concepts import ContextRule, check_context, clinical_vocabulary, load_tables
from radaudit.atomic.decompose import RuleDecomposer
from radaudit.atomic.schema import Finding
from radaudit.atomic.score import normalize_name
from radaudit.errors import ParamsError

__all__ = ["check_contexts", "context_factor", "history_findings", "matched_rules"]


def matched_rules(context: Mapping[str, Any] | None, history: bool = False) -> list[ContextRule]:
    """The context rules ``context`` matches; ``history``: also the rule of the findings its history documents
    (:func:`history_findings`; the issue-41 rules only)."""
    if not context:
        return []
    rules = [r for r in load_tables().context_rules if r.matches(context)]
    known = history_findings(str(context.get("history") or "")) if history else frozenset()
    if known:
        rules.append(ContextRule("history-documents-finding", None, None, None, None, None, known, None, "expected",
                                 0.0, "a finding the history already documents as known, stable or treated"))
    return rules


@functools.lru_cache(maxsize=1024)
def history_findings(history: str) -> frozenset[str]:
    """The findings a patient's history documents as already known (``clinical_context.yaml``, ``history_documents``):
    stated present, not hedged, in a sentence with a cue of chronicity ("known, unchanged cardiomegaly", "adenopathy
    stable for 5 years", "rib fractures in a car accident two months ago") and none of novelty ("new", "enlarging").
    A finding the team already knows costs less when a report leaves it out (an expected finding).

    >>> sorted(history_findings("dilated cardiomyopathy with known, unchanged cardiomegaly"))
    ['cardiomegaly']
    >>> sorted(history_findings("new cardiomegaly on last week's film")), sorted(history_findings("fall today"))
    ([], [])
    """
    t = load_tables()
    if not history.strip() or t.history_cue is None:
        return frozenset()
    out = set()
    for f in _history_decomposer().decompose_one(history):
        ev = f.evidence or ""
        if f.present == "yes" and not f.hedged and t.history_cue.search(ev) and \
                not (t.history_cue_not is not None and t.history_cue_not.search(ev)):
            out.add(t.aliases.get(normalize_name(f.name), f.name))
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def _history_decomposer() -> RuleDecomposer:
    return ClinicalRuleDecomposer(findings=clinical_vocabulary(), sections=False)


def context_factor(f: Finding, total: float, rules: Sequence[ContextRule]) -> float:
    """The factor a matched context rule puts on finding ``f``'s weight ``total`` (``clinical_context.yaml``): an
    urgent rule raises the weight to its tier (never lowers it), then any expected rule (whose ``max_level`` the
    finding's stated grade does not exceed) multiplies it by ``expected_factor`` (once). No rule naming the finding:
    1."""
    hits = [r for r in rules if f.name in r.findings]
    if not hits:
        return 1.0
    factor = 1.0
    urgent = [r.tier for r in hits if r.effect == "urgent"]
    if urgent and total > 0 and max(urgent) > total:
        factor = max(urgent) / total
    lv = finding_levels(f)
    if any(r.effect == "expected" and (r.max_level is None or not lv or max(lv) <= r.max_level) for r in hits):
        factor *= load_tables().expected_factor
    return factor


def check_contexts(context: Any, n: int) -> list[dict[str, Any] | None] | None:
    """``context`` of a batch of ``n`` pairs as a list of validated per-pair dicts (``None`` entries allowed), or
    ``None``. One mapping applies to every pair; a sequence must have one entry per pair."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        one = check_context(context)
        return [one] * n
    items = list(context)
    if len(items) != n:
        raise ParamsError(f"context has {len(items)} entries for {n} pairs: give one per pair (or one mapping for all).")
    return [check_context(c, f"context of pair {i}") for i, c in enumerate(items)]
