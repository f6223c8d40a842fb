"""Ranking suites for report metrics: does a metric order candidate reports as a radiologist would?

A *ranking case* is a ground-truth report and 2-4 candidate reports (keys ``a``..``d``) with the
order a radiologist gives them, e.g. ``"a = b > c"``: ``>`` strictly better, ``=`` clinically
equivalent (a tie). Cases live in YAML files (``tests/fixtures/ranking_cases.yaml``, the "dev"
suite; a held-out suite in the same schema)::

    schema: 1
    cases:
      - id: false-count-01            # unique, [a-z0-9-]
        category: false_finding_count # one of CATEGORIES
        truth: "Small left pleural effusion. No pneumothorax."
        candidates: {a: "...", b: "..."}
        order: "a > b"
        why: "one line: the clinical reason for the order"
        source: "optional: citation"
        context: {age: 67, sex: F, indication: "...", history: "..."}   # optional (issue 41)

``context`` (optional): the patient's context, either one mapping for every candidate or a mapping from candidate
key to a mapping (candidates not listed have none); keys ``age`` (whole years), ``sex`` (``"F"``/``"M"``),
``indication`` and ``history`` (text). :func:`evaluate_metric_on_cases` passes it to a metric whose ``compute``
takes ``context=`` (``compute(references, candidates, context=[per-pair dict or None, ...])``, e.g.
``atomimed_clinical``); every other metric ignores it and scores the texts alone.

How a metric is judged (:func:`case_verdict`). The order is read as tiers
(:func:`parse_order`: ``"a = b > c"`` -> ``[["a", "b"], ["c"]]``) and expanded into every pair of
candidates (:func:`pair_constraints`): each candidate of a higher tier against each of every lower
tier (relation ``>``) and each pair inside a tier (relation ``=``). With the metric's per-pair scores
``s`` (oriented so that higher is better) and a tolerance ``tol``:

    strict pair x > y correct  iff  s_x > s_y + tol
    tie    pair x = y correct  iff  |s_x - s_y| <= tol
    case correct               iff  every pair is correct (a NaN score makes the case incorrect)

A metric's accuracy on a suite is the fraction of correct cases (:func:`summarize`, per category and
overall). Pair counts are kept too (``pairs_ok``/``pairs``) for a softer view.

Batching (:func:`evaluate_metric_on_cases`): every (truth, candidate) pair of the suite goes into ONE
``metric.compute(references, candidates)`` call. For corpus-dependent metrics this matters:
CIDEr-D takes its idf from the references of the batch, so its per-pair values here are computed
with idf over the whole suite batch (each truth appears once per candidate of its case, so the
document frequencies count it 2-4 times); the same case scored in another batch gets other values.
All candidates of one case share the same idf, so only the weighting of n-grams, not the fairness
between candidates, depends on the batch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import RadauditError
from radaudit.metrics.base import METRICS, Metric, MetricInputError

__all__ = [
    "CATEGORIES", "CANDIDATE_KEYS", "CONTEXT_KEYS", "RankingCase", "RankingCaseError", "case_verdict",
    "accepts_context", "evaluate_metric_on_cases", "load_ranking_cases", "pair_constraints", "parse_order", "summarize",
]

#: The 13 categories of the suite (issue 18); every case belongs to exactly one.
CATEGORIES: tuple[str, ...] = (
    "false_finding_count",          # fewer invented findings is better
    "false_finding_severity",       # a false emergency is worse than a false incidental finding
    "missed_finding_significance",  # missing a critical finding is worse than missing an incidental one
    "severity_distance",            # ordinal size/severity: the nearer grade is better
    "laterality",                   # right vs left
    "location_granularity",         # correct lobe > correct side only > no location; wrong lobe is wrong
    "extra_specificity",            # a correct, consistent extra detail must not rank below a vaguer report
    "synonyms",                     # the same finding in other words
    "negation_resolution",          # resolved / no longer seen / no evidence of
    "temporal_change",              # new vs increased vs unchanged vs decreased
    "devices",                      # tube/line present, position correct vs malpositioned
    "uncertainty",                  # hedged vs definite vs negated
    "normal_abnormal",              # a normal study vs a report with findings, and the reverse
    # issue 41
    "omission_vs_imprecision",      # the finding at a wrong size/extent > a sign of it > left out > denied by a normal
    "signs",                        # a radiographic sign that implies the finding (silhouette sign, cephalisation)
    "paraphrase",                   # the same facts in descriptive or lay words
    "interchangeable_terms",        # terms radiologists use interchangeably (hyperinflation / hyperexpansion)
    "severity_downgrade",           # a critical finding reported as a mild one is nearly a miss
    "context",                      # the patient's age, indication and history change what a miss costs
)

#: Keys of a case's optional ``context`` (issue 41) and their types.
CONTEXT_KEYS: tuple[str, ...] = ("age", "sex", "indication", "history")

#: Candidate keys, in order; a case uses the first 2-4.
CANDIDATE_KEYS: tuple[str, ...] = ("a", "b", "c", "d")

SCHEMA_VERSION = 1
_REQUIRED = ("id", "category", "truth", "candidates", "order", "why")
_OPTIONAL = ("source", "context")
_ID_RE = re.compile(r"^[a-z0-9-]+$")
_ORDER_TOKEN_RE = re.compile(r"\s*([>=])\s*")


class RankingCaseError(RadauditError, ValueError):
    """A ranking-case file or order string is malformed; the message names the case and what to fix."""


@dataclass(frozen=True)
class RankingCase:
    """One ranking case: ``truth``, ``candidates`` (key -> report), the radiologist's ``order``.

    ``split`` is the suite the case came from ("dev", "holdout"), set by the loader, not the file.
    """

    id: str
    category: str
    truth: str
    candidates: Mapping[str, str]
    order: str
    why: str
    source: str = ""
    split: str = "dev"
    #: candidate key -> its context (module docstring); ``None``: the case has none
    context: Mapping[str, Mapping[str, Any] | None] | None = None

    @property
    def tiers(self) -> list[list[str]]:
        """The order as tiers, best first (:func:`parse_order`)."""
        return parse_order(self.order, self.candidates.keys())

    def context_of(self, key: str) -> Mapping[str, Any] | None:
        """The context of candidate ``key`` (``None`` when it has none)."""
        return None if self.context is None else self.context.get(key)


def parse_order(order: str, candidates: Sequence[str] | None = None) -> list[list[str]]:
    """Parse ``"a = b > c"`` into tiers, best first: ``[["a", "b"], ["c"]]``.

    Only ``>`` (strictly better) and ``=`` (tie) may join candidate keys. With ``candidates`` given,
    every candidate must appear exactly once and nothing else may. Raises :class:`RankingCaseError`.
    """
    if not isinstance(order, str) or not order.strip():
        raise RankingCaseError(f"order {order!r} is empty: write e.g. 'a > b' or 'a = b > c'.")
    symbols = sorted(set(re.sub(r"[a-z\s>=]", "", order)))
    if symbols:
        raise RankingCaseError(f"order {order!r} uses {' '.join(repr(s) for s in symbols)}: only '>' (strictly "
                               "better) and '=' (tie) may join candidate keys, e.g. 'a = b > c'.")
    parts = _ORDER_TOKEN_RE.split(order.strip())
    # split with a capturing group alternates: name, op, name, op, ..., name
    names, ops = parts[0::2], parts[1::2]
    bad = [n for n in names if not re.fullmatch(r"[a-z]", n)]
    if bad:
        raise RankingCaseError(
            f"order {order!r}: {bad[0]!r} is not a candidate key; join single-letter keys with '>' "
            "(strictly better) or '=' (tie) only, e.g. 'a = b > c'.")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise RankingCaseError(f"order {order!r} names candidate {n!r} more than once; "
                                   "each candidate appears exactly once.")
        seen.add(n)
    if candidates is not None:
        cands = set(candidates)
        extra = sorted(seen - cands)
        if extra:
            raise RankingCaseError(f"order {order!r} names {', '.join(extra)}, which is not a candidate "
                                   f"(candidates: {', '.join(sorted(cands))}).")
        missing = sorted(cands - seen)
        if missing:
            raise RankingCaseError(f"order {order!r} does not place candidate(s) {', '.join(missing)}; "
                                   "each candidate appears exactly once.")
    tiers: list[list[str]] = [[names[0]]]
    for op, name in zip(ops, names[1:]):
        if op == "=":
            tiers[-1].append(name)
        else:
            tiers.append([name])
    return tiers


def pair_constraints(tiers: Sequence[Sequence[str]]) -> list[tuple[str, str, str]]:
    """Every pair of candidates with its relation: ``(x, y, ">")`` for x in a higher tier than y,
    ``(x, y, "=")`` for x and y in one tier. n candidates give n(n-1)/2 pairs.

    >>> pair_constraints([["a", "b"], ["c"]])
    [('a', 'b', '='), ('a', 'c', '>'), ('b', 'c', '>')]
    """
    out: list[tuple[str, str, str]] = []
    for i, tier in enumerate(tiers):
        for j, x in enumerate(tier):
            for y in tier[j + 1:]:
                out.append((x, y, "="))
            for lower in tiers[i + 1:]:
                for y in lower:
                    out.append((x, y, ">"))
    return out


def case_verdict(scores: Mapping[str, float], tiers: Sequence[Sequence[str]],
                 tie_tol: float = 1e-6) -> tuple[bool, int, int]:
    """``(correct, n_pairs_ok, n_pairs)`` for one case (higher score = better; see the module docstring).

    A strict pair ``x > y`` is correct iff ``s_x > s_y + tie_tol``; a tie ``x = y`` iff
    ``|s_x - s_y| <= tie_tol``. A pair with a NaN score is not correct, and a NaN anywhere in the
    case makes the case incorrect. Every candidate of ``tiers`` needs a score (else ``KeyError``).
    """
    if tie_tol < 0 or math.isnan(tie_tol):
        raise RankingCaseError(f"tie_tol must be >= 0, got {tie_tol}.")
    names = [n for t in tiers for n in t]
    missing = [n for n in names if n not in scores]
    if missing:
        raise KeyError(f"no score for candidate(s) {', '.join(missing)}")
    s = {n: float(scores[n]) for n in names}
    pairs = pair_constraints(tiers)
    n_ok = 0
    for x, y, rel in pairs:
        sx, sy = s[x], s[y]
        if math.isnan(sx) or math.isnan(sy):
            continue
        ok = (sx > sy + tie_tol) if rel == ">" else (abs(sx - sy) <= tie_tol)
        n_ok += bool(ok)
    any_nan = any(math.isnan(v) for v in s.values())
    return (not any_nan and n_ok == len(pairs)), n_ok, len(pairs)


def _fail(where: str, msg: str) -> RankingCaseError:
    return RankingCaseError(f"{where}: {msg}")


def _check_case(raw: Any, index: int, path: Path, split: str) -> RankingCase:
    where = f"{path.name}, case #{index + 1}"
    if not isinstance(raw, Mapping):
        raise _fail(where, f"a case must be a mapping with keys {', '.join(_REQUIRED)}, got {type(raw).__name__}.")
    cid = raw.get("id")
    if isinstance(cid, str) and cid:
        where = f"{path.name}, case {cid!r}"
    unknown = sorted(set(map(str, raw)) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_REQUIRED + _OPTIONAL)}.")
    missing = [k for k in _REQUIRED if raw.get(k) in (None, "")]
    if missing:
        raise _fail(where, f"missing field(s) {', '.join(missing)}.")
    for key in ("id", "category", "truth", "order", "why"):
        if not isinstance(raw[key], str):
            raise _fail(where, f"{key} must be a string, got {type(raw[key]).__name__}.")
    source = raw.get("source") or ""
    if not isinstance(source, str):
        raise _fail(where, f"source must be a string, got {type(source).__name__}.")
    if not _ID_RE.fullmatch(cid):
        raise _fail(where, "id must use only lower-case letters, digits and '-'.")
    if raw["category"] not in CATEGORIES:
        raise _fail(where, f"unknown category {raw['category']!r}; use one of {', '.join(CATEGORIES)}.")
    cands = raw["candidates"]
    if not isinstance(cands, Mapping):
        raise _fail(where, f"candidates must be a mapping key -> report, got {type(cands).__name__}.")
    keys = [str(k) for k in cands]
    if not 2 <= len(keys) <= 4:
        raise _fail(where, f"{len(keys)} candidates; a case has 2-4 (keys a, b, c, d).")
    if sorted(keys) != list(CANDIDATE_KEYS[: len(keys)]):
        raise _fail(where, f"candidate keys {', '.join(keys)}: use {', '.join(CANDIDATE_KEYS[: len(keys)])} "
                           f"for {len(keys)} candidates.")
    for k, v in cands.items():
        if not isinstance(v, str) or not v.strip():
            raise _fail(where, f"candidate {k!r} must be a non-empty string.")
    if not raw["truth"].strip():
        raise _fail(where, "truth is blank.")
    try:
        parse_order(raw["order"], keys)
    except RankingCaseError as err:
        raise _fail(where, str(err)) from None
    context = _check_context(raw.get("context"), sorted(keys), where)
    return RankingCase(id=cid, category=raw["category"], truth=raw["truth"],
                       candidates={k: cands[k] for k in sorted(keys)}, order=raw["order"].strip(),
                       why=raw["why"], source=source, split=split, context=context)


def _check_one_context(ctx: Any, where: str) -> dict[str, Any]:
    if not isinstance(ctx, Mapping):
        raise _fail(where, f"a context must be a mapping with keys {', '.join(CONTEXT_KEYS)}, got {type(ctx).__name__}.")
    unknown = sorted(set(map(str, ctx)) - set(CONTEXT_KEYS))
    if unknown:
        raise _fail(where, f"unknown context key(s) {', '.join(unknown)}; allowed: {', '.join(CONTEXT_KEYS)}.")
    out: dict[str, Any] = {}
    for k, v in ctx.items():
        if k == "age":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 130:
                raise _fail(where, f"context age must be whole years (an integer 0-130), got {v!r}.")
        elif k == "sex":
            if v not in ("F", "M"):
                raise _fail(where, f"context sex must be 'F' or 'M', got {v!r}.")
        elif not isinstance(v, str) or not v.strip():
            raise _fail(where, f"context {k} must be non-empty text, got {v!r}.")
        out[str(k)] = v
    return out


def _check_context(raw: Any, keys: Sequence[str], where: str) -> dict[str, dict[str, Any] | None] | None:
    """A case's ``context`` as candidate key -> context (module docstring): one mapping of context keys applies to
    every candidate; a mapping whose keys are candidate keys gives each its own."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw:
        raise _fail(where, f"context must be a non-empty mapping (keys {', '.join(CONTEXT_KEYS)}, or candidate keys "
                           f"{', '.join(keys)} each with such a mapping).")
    names = set(map(str, raw))
    if names <= set(CANDIDATE_KEYS):
        extra = sorted(names - set(keys))
        if extra:
            raise _fail(where, f"context names candidate(s) {', '.join(extra)}, which the case does not have.")
        return {k: (_check_one_context(raw[k], f"{where}, context of {k}") if k in raw else None) for k in keys}
    one = _check_one_context(raw, where)
    return {k: one for k in keys}


def load_ranking_cases(path: str | Path, split: str = "dev") -> list[RankingCase]:
    """Read and strictly validate a ranking-case YAML file (schema in the module docstring).

    Checks: ``schema: 1`` and a ``cases`` list and nothing else at the top; per case only the known
    keys, all required fields present and strings, id ``[a-z0-9-]`` and unique, a known category,
    2-4 candidates keyed ``a``..``d``, and an order that places each candidate exactly once with only
    ``>`` and ``=``. Every error is a :class:`RankingCaseError` naming the file and the case id.
    ``split`` labels the cases (e.g. "dev", "holdout").
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise RankingCaseError(f"No ranking-case file at {p}.")
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise RankingCaseError(f"{p.name} is not valid YAML: {err}") from None
    if not isinstance(doc, Mapping):
        raise RankingCaseError(f"{p.name}: the top level must be a mapping with 'schema: {SCHEMA_VERSION}' and 'cases:'.")
    extra = sorted(set(map(str, doc)) - {"schema", "cases"})
    if extra:
        raise RankingCaseError(f"{p.name}: unknown top-level key(s) {', '.join(extra)}; only 'schema' and 'cases'.")
    if doc.get("schema") != SCHEMA_VERSION:
        raise RankingCaseError(f"{p.name}: schema must be {SCHEMA_VERSION}, got {doc.get('schema')!r}.")
    raw_cases = doc.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise RankingCaseError(f"{p.name}: 'cases' must be a non-empty list.")
    cases: list[RankingCase] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_cases):
        case = _check_case(raw, i, p, split)
        if case.id in seen:
            raise RankingCaseError(f"{p.name}, case {case.id!r}: duplicate id (also case #{seen[case.id] + 1}).")
        seen[case.id] = i
        cases.append(case)
    return cases


def _higher_is_better(metric: Metric) -> bool:
    spec = METRICS.get(getattr(metric, "name", ""))
    return True if spec is None else bool(spec.higher_is_better)


def accepts_context(metric: Any) -> bool:
    """Whether ``metric.compute`` takes a ``context=`` keyword (issue 41; e.g. ``atomimed_clinical``)."""
    import inspect

    try:
        params = inspect.signature(metric.compute).parameters
    except (TypeError, ValueError, AttributeError):
        return False
    return "context" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def evaluate_metric_on_cases(metric: Metric, cases: Sequence[RankingCase], tie_tol: float = 1e-6,
                             higher_is_better: bool | None = None) -> pd.DataFrame:
    """Score every candidate of every case with ONE ``metric.compute`` call and judge each case.

    The batch is ``references = [truth] * n_candidates`` per case and ``candidates`` the case's
    reports, concatenated over the cases (so batch-dependent metrics such as CIDEr-D take their
    statistics from the whole suite; see the module docstring). Cases with a ``context`` pass it, one entry
    per pair, to a metric that accepts ``context=`` (:func:`accepts_context`); other metrics ignore it
    (issue 41). ``higher_is_better``: the metric's
    direction (default: the registry's ``MetricSpec.higher_is_better`` for ``metric.name``, or True
    for an unregistered metric); lower-is-better scores are negated before judging.

    Returns one row per case: ``metric``, ``case``, ``category``, ``split``, ``correct``,
    ``pairs_ok``, ``pairs`` and ``scores`` (the raw per-candidate scores as JSON, NaN as null).
    """
    if not cases:
        raise RankingCaseError("No cases to evaluate.")
    hib = _higher_is_better(metric) if higher_is_better is None else higher_is_better
    refs: list[str] = []
    cands: list[str] = []
    contexts: list[Mapping[str, Any] | None] = []
    index: list[tuple[int, str]] = []
    for ci, case in enumerate(cases):
        for key, text in case.candidates.items():
            refs.append(case.truth)
            cands.append(text)
            contexts.append(case.context_of(key))
            index.append((ci, key))
    if any(c is not None for c in contexts) and accepts_context(metric):
        result = metric.compute(refs, cands, context=contexts)
    else:  # no context in the batch, or a metric that cannot use one: it scores the texts alone
        result = metric.compute(refs, cands)
    values = np.asarray(result.per_sample, dtype=float)
    if values.shape != (len(refs),):
        raise MetricInputError(f"metric {getattr(metric, 'name', metric)!r} returned {values.shape} per-sample "
                               f"values for {len(refs)} pairs.")
    per_case: list[dict[str, float]] = [{} for _ in cases]
    for (ci, key), v in zip(index, values):
        per_case[ci][key] = float(v)
    rows = []
    name = getattr(result, "name", None) or getattr(metric, "name", "metric")
    for case, scores in zip(cases, per_case):
        oriented = scores if hib else {k: -v for k, v in scores.items()}
        correct, ok, n = case_verdict(oriented, case.tiers, tie_tol)
        rows.append({"metric": name, "case": case.id, "category": case.category, "split": case.split,
                     "correct": correct, "pairs_ok": ok, "pairs": n,
                     "scores": json.dumps({k: (None if math.isnan(v) else v) for k, v in scores.items()})})
    return pd.DataFrame(rows)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per metric x category, plus an ``"all"`` row per metric (and per split if present).

    ``frame``: rows of :func:`evaluate_metric_on_cases` (several metrics/splits concatenated).
    Columns: ``metric``, [``split``,] ``category``, ``n_cases``, ``n_correct``, ``accuracy``,
    ``pairs_ok``, ``pairs``, ``pair_accuracy``. Categories follow :data:`CATEGORIES` order, ``all`` last.
    """
    keys = ["metric"] + (["split"] if "split" in frame.columns else [])
    agg = {"n_cases": ("case", "size"), "n_correct": ("correct", "sum"),
           "pairs_ok": ("pairs_ok", "sum"), "pairs": ("pairs", "sum")}
    by_cat = frame.groupby(keys + ["category"], sort=False).agg(**agg).reset_index()
    overall = frame.groupby(keys, sort=False).agg(**agg).reset_index()
    overall["category"] = "all"
    out = pd.concat([by_cat, overall[by_cat.columns]], ignore_index=True)
    out["n_correct"] = out["n_correct"].astype(int)
    out["accuracy"] = out["n_correct"] / out["n_cases"]
    out["pair_accuracy"] = out["pairs_ok"] / out["pairs"]
    order = {c: i for i, c in enumerate(CATEGORIES + ("all",))}
    out["_o"] = out["category"].map(lambda c: order.get(c, len(order)))
    out = out.sort_values(keys + ["_o", "category"], kind="stable").drop(columns="_o").reset_index(drop=True)
    return out[keys + ["category", "n_cases", "n_correct", "accuracy", "pairs_ok", "pairs", "pair_accuracy"]]
