"""One interface for the two rewriting engines: tasks in, outcomes out.

A :class:`RewriteTask` asks for one rewrite of one GT report in one cell (aspect, significance and
error type; ``error_type=None`` lets the engine sample it, as the paper does for the eight aspects
outside its full grid, §4.2.1). An engine's ``rewrite(tasks, labeler)`` returns one
:class:`Outcome` per task: ``"ok"`` with a verified :class:`~radaudit.perturb.base.Pair`,
``"not_applicable"`` (the report has nothing to edit for that cell), or ``"unverified"`` /
``"unparseable"`` with the rejected pairs kept for the record. :class:`RuleEngine` is the
deterministic engine; :class:`radaudit.perturb.llm.LLMEngine` the LLM one.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radaudit.perturb.base import RULES, Pair, apply_edits, check_cell, derive_seed, rules_for
from radaudit.perturb.verify import verify_rewrite

__all__ = ["RewriteTask", "Outcome", "RuleEngine", "make_pair", "pair_id"]


@dataclass(frozen=True)
class RewriteTask:
    """Rewrite ``gt`` (report ``study_id`` of ``source``) in one cell, with ``seed``; ``rule``: use only
    that rule of the cell (the rule engine; an LLM engine ignores it), ``None``: any rule of the cell."""

    study_id: str
    source: str
    gt: str
    aspect: str
    significance: str
    error_type: str | None
    seed: int
    rule: str | None = None

    def __post_init__(self) -> None:
        check_cell(self.aspect, self.significance, self.error_type)


@dataclass
class Outcome:
    """``status`` in ``ok | not_applicable | unverified | unparseable``; ``pair`` when ok; ``rejected``:
    pairs that were made but failed verification or parsing (kept, never dropped)."""

    status: str
    pair: Pair | None
    rejected: list[Pair] = field(default_factory=list)


def pair_id(*parts: object) -> str:
    """A short stable id from the parts that determine a pair."""
    return "p" + hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:12]


def make_pair(task: RewriteTask, gt: str, me: str, spans: Sequence[tuple[tuple[int, int], tuple[int, int]]],
              explanation: str, *, engine: str, rule: str, error_type: str, verified: bool, note: str,
              group: int | None = None, aspect: str | None = None, significance: str | None = None) -> Pair:
    """A :class:`Pair` from a task and its edit spans (envelope in ``gt_span``/``me_span``)."""
    spans = sorted(spans)
    ga, gb = spans[0][0][0], spans[-1][0][1]
    ma, mb = spans[0][1][0], spans[-1][1][1]
    aspect = aspect or task.aspect
    significance = significance or task.significance
    return Pair(
        pair_id=pair_id(engine, rule, task.source, task.study_id, aspect, significance, error_type, task.seed, group),
        study_id=str(task.study_id), source=task.source, gt=gt, rewritten=me, aspect=aspect, error_type=error_type,
        significance=significance, gt_span=(ga, gb), me_span=(ma, mb), gt_edit_text=gt[ga:gb], me_edit_text=me[ma:mb],
        explanation=explanation, engine=engine, rule=rule, seed=int(task.seed), verified=bool(verified),
        verification_note=note, group=group, edits=[[g[0], g[1], m[0], m[1]] for g, m in spans],
    )


@dataclass
class RuleEngine:
    """The deterministic engine: the rules of the task's cell (or the task's one ``rule``) in a seeded
    order; the first whose rewrite passes verification gives the pair. Rules that apply but fail
    verification are kept as rejected pairs. ``balance_rules``: :func:`~radaudit.perturb.dataset.build_pair_dataset`
    shares each cell's pairs out over its rules (see there)."""

    name: str = "rules"
    batch_hint: int = 64
    balance_rules: bool = True

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "rules": sorted(RULES), "balance_rules": self.balance_rules}

    def rewrite_one(self, task: RewriteTask, labeler: Any = None) -> Outcome:
        rules = rules_for(task.aspect, task.significance, task.error_type)
        if task.rule is not None:
            rules = [r for r in rules if r.name == task.rule]
            if not rules:
                raise ValueError(f"rule {task.rule!r} is not a rule of the cell {task.aspect}/{task.significance}/"
                                 f"{task.error_type}")
        rng = random.Random(derive_seed(task.seed, "rule-order", task.study_id, task.aspect, task.significance,
                                        task.error_type))
        rng.shuffle(rules)
        rejected: list[Pair] = []
        for r in rules:
            rw = r(task.gt, random.Random(derive_seed(task.seed, task.study_id, r.name)))
            if rw is None:
                continue
            me, spans = apply_edits(task.gt, rw.edits)
            v = verify_rewrite(task.gt, me, spans, r.check, labeler)
            pair = make_pair(task, task.gt, me, spans, rw.explanation, engine=self.name, rule=r.name,
                             error_type=rw.error_type or r.error_type, verified=v.ok, note=v.note)
            if v.ok:
                return Outcome("ok", pair, rejected)
            rejected.append(pair)
        return Outcome("unverified" if rejected else "not_applicable", None, rejected)

    def rewrite(self, tasks: Sequence[RewriteTask], labeler: Any = None) -> list[Outcome]:
        return [self.rewrite_one(t, labeler) for t in tasks]
