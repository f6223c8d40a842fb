"""AtomiMed end to end: decompose both reports, cross-verify both ways, score (Eq. 3, Eq. 4), trace.

:func:`score_pairs` is what notebooks and the ``atomimed`` metric call::

    from radaudit.atomic import score_pairs, trace_of, format_trace
    scores = score_pairs(refs, preds)                 # rule backend: deterministic, offline
    scores[["precision", "recall", "f1", "disease_f1", "attribute_f1"]]
    print(format_trace(trace_of(scores), pair=0))

    # paper preset: any instruct model through the model layer, temperature 0
    fn = greedy_generator("Qwen/Qwen3-235B-A22B", backend="vllm", dtype="bf16", tensor_parallel_size=8)
    scores = score_pairs(refs, preds, backend="llm", generate_fn=fn, batched=True)

Per pair, in order (§2.2):

1. each report is decomposed once (identical texts share one decomposition);
2. disease level: GT→INF questions are answered from the prediction, INF→GT from the reference;
   ``C``/``N`` counts give P/R/F1 by Eq. 3;
3. the findings that are present and matched in both directions are aligned by fuzzy name
   similarity ≥ θ (:func:`~radaudit.atomic.score.align_findings`); their stated facets become
   attribute questions, answered and counted the same way (attribute P/R/F1);
4. Eq. 4 combines the levels (equal weights), or uses the disease level alone when no attribute
   question was asked (:mod:`radaudit.atomic.score`).

A pair whose decomposition could not be parsed (LLM backend) is never scored: NaN scores,
``ok=False``, its count in ``n_unparseable``/``n_decompose_failed`` and the reason in ``error``;
callers leave it out of averages and correlations and report how many (the ``atomimed`` metric's
``n_undefined``). Answers the reader could not parse count as non-matches and in
``n_unparseable`` too. Every JSON call is counted: per pair, decompositions and readings that
failed or were accepted only after a repair (:data:`SCORE_COLUMNS`); per run, one row per stage in
``frame.attrs["calls"]`` (:func:`calls_of`, :data:`CALL_COLUMNS`). Nothing is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from radaudit.atomic.decompose import LLMDecomposer, ReportFacts, RuleDecomposer
from radaudit.atomic.schema import Answer, TraceRow
from radaudit.atomic.score import SCORERS, aggregate, align_findings, level_scores
from radaudit.atomic.trace import trace_frame
from radaudit.atomic.verify import (
    LLMReader,
    ReadRequest,
    RuleReader,
    attribute_questions,
    disease_questions,
    judge,
)
from radaudit.errors import ParamsError
from radaudit.metrics.base import check_pairs

__all__ = ["BACKENDS", "CALL_COLUMNS", "SCORE_COLUMNS", "calls_of", "score_pairs", "score_pair", "trace_of",
           "make_backend", "check_options"]

BACKENDS = ("rule", "llm")
#: The columns of :func:`score_pairs`' table, in order.
SCORE_COLUMNS: tuple[str, ...] = (
    "pair", "precision", "recall", "f1",
    "disease_precision", "disease_recall", "disease_f1",
    "attribute_precision", "attribute_recall", "attribute_f1",
    "n_disease_gt", "n_disease_inf", "c_disease_gt_inf", "c_disease_inf_gt",
    "n_attribute_gt", "n_attribute_inf", "c_attribute_gt_inf", "c_attribute_inf_gt",
    "n_aligned", "n_unparseable", "n_repaired",
    "n_decompose_failed", "n_decompose_repaired", "n_reader_calls", "n_reader_failed", "n_reader_repaired",
    "n_answers_unparseable", "ok", "error",
)
#: The integer count columns of :data:`SCORE_COLUMNS`.
_COUNT_COLUMNS: tuple[str, ...] = SCORE_COLUMNS[10:SCORE_COLUMNS.index("ok")]
#: The columns of the per-run JSON-call table (:func:`calls_of`): one row per stage
#: (``decomposition``: one call per distinct non-empty report, a decomposition the decomposer had
#: cached from an earlier call counting with its outcome then; ``disease reading`` /
#: ``attribute reading``: one call per pair, direction and level with questions). ``calls`` =
#: ``ok`` + ``failed``; ``clean``: valid at the first reply as it was; ``repaired``: accepted after
#: a JSON repair; ``retried``: accepted on a follow-up prompt; ``attempts``: generator calls.
CALL_COLUMNS: tuple[str, ...] = ("stage", "calls", "ok", "clean", "repaired", "retried", "failed", "attempts")


def make_backend(backend: str = "rule", *, generate_fn: Callable[..., Any] | None = None, batched: bool = False,
                 max_retries: int = 2, theta: float = 0.8, scorer: str = "ratio",
                 uncertain: Literal["yes", "no", "drop"] = "yes", decompose_prompt: str | None = None,
                 disease_prompt: str | None = None, attribute_prompt: str | None = None) -> tuple[Any, Any]:
    """``(decomposer, reader)`` for ``backend`` ``"rule"`` (toolkit; deterministic) or ``"llm"``
    (``generate_fn`` required; prompt templates optional, defaults in :mod:`~radaudit.atomic.decompose`
    and :mod:`~radaudit.atomic.verify`)."""
    if backend == "rule":
        return RuleDecomposer(uncertain=uncertain), RuleReader(theta=theta, scorer=scorer)
    if backend == "llm":
        if generate_fn is None:
            raise ParamsError("backend='llm' needs generate_fn (a prompt -> str callable, e.g. "
                              "radaudit.atomic.greedy_generator(<model spec>)); use backend='rule' offline.")
        dkw = {"prompt_template": decompose_prompt} if decompose_prompt else {}
        rkw = {k: v for k, v in (("disease_prompt", disease_prompt), ("attribute_prompt", attribute_prompt)) if v}
        return (LLMDecomposer(generate_fn, batched=batched, max_retries=max_retries, **dkw),
                LLMReader(generate_fn, batched=batched, max_retries=max_retries, **rkw))
    raise ParamsError(f"backend={backend!r} is not allowed: use one of {', '.join(map(repr, BACKENDS))}.")


def check_options(theta: float, scorer: str, weight: float, unmentioned: str) -> None:
    """Raise :class:`~radaudit.errors.ParamsError` unless AtomiMed's options are allowed: ``theta`` a number in
    [0, 1], ``scorer`` one of :data:`~radaudit.atomic.score.SCORERS`, ``weight`` in [0, 1] and ``unmentioned``
    ``"no"`` or ``"mismatch"``. :func:`score_pairs` and the ``atomimed`` metrics check their options with it
    before any report is read."""
    if not isinstance(theta, (int, float)) or not 0.0 <= theta <= 1.0:
        raise ParamsError(f"theta must be a number in [0, 1] (paper: 0.8), got {theta!r}.")
    if scorer not in SCORERS:
        raise ParamsError(f"scorer={scorer!r} is not allowed: use one of {', '.join(SCORERS)}.")
    if not 0.0 <= weight <= 1.0:
        raise ParamsError(f"weight must be in [0, 1] (paper: 0.5), got {weight!r}.")
    if unmentioned not in ("no", "mismatch"):
        raise ParamsError(f"unmentioned={unmentioned!r} is not allowed: use 'no' or 'mismatch'.")


def score_pairs(references: Sequence[str], predictions: Sequence[str], backend: str = "rule", *,
                generate_fn: Callable[..., Any] | None = None, decomposer: Any = None, reader: Any = None,
                theta: float = 0.8, scorer: str = "ratio", weight: float = 0.5,
                unmentioned: Literal["no", "mismatch"] = "no", uncertain: Literal["yes", "no", "drop"] = "yes",
                batched: bool = False, max_retries: int = 2) -> pd.DataFrame:
    """AtomiMed scores of each (reference, prediction) pair: one row per pair (:data:`SCORE_COLUMNS`).

    ``precision``/``recall``/``f1``: Eq. 4; ``disease_*``: Eq. 3 at the disease level;
    ``attribute_*``: Eq. 3 over the aligned findings' attributes (NaN when no attribute question was
    asked); ``n_*``/``c_*``: question and match counts per direction (``_gt``: asked from the
    reference, ``c_*_gt_inf``: of those, matched in the prediction); ``n_aligned``: findings aligned
    for the attribute level; ``n_unparseable``: failed decompositions + unparseable answers;
    ``n_repaired``: decompositions + readings accepted only after a JSON repair. The breakdown:
    ``n_decompose_failed``/``n_decompose_repaired`` (of the pair's two reports),
    ``n_reader_calls``/``n_reader_failed``/``n_reader_repaired`` (the reader's JSON calls for the
    pair, at most 4; a failed call makes all its questions unparseable) and
    ``n_answers_unparseable`` (questions without a usable answer). ``ok``/``error``: whether the
    pair could be scored and why not: a pair with a failed decomposition has NaN scores and
    ``ok=False``, it is never scored. The audit trace (one row per question, see
    :mod:`radaudit.atomic.trace`) is in ``frame.attrs["trace"]`` (:func:`trace_of`), the per-run
    JSON-call counts in ``frame.attrs["calls"]`` (:func:`calls_of`).

    ``backend``: ``"rule"`` or ``"llm"`` (needs ``generate_fn``; ``batched``/``max_retries`` go to the
    JSON calls); ``decomposer``/``reader`` objects override the backend's (e.g. an LLM decomposer
    with the rule reader). ``theta``: name-similarity threshold (paper 0.8) with rapidfuzz
    ``scorer``; ``weight``: Eq. 4's disease weight (paper ½); ``unmentioned``: see
    :func:`~radaudit.atomic.verify.judge`; ``uncertain``: the rule decomposer's reading of hedged
    findings (:class:`~radaudit.atomic.decompose.RuleDecomposer`; an LLM's hedged "present" reads as
    yes, :mod:`~radaudit.atomic.schema`).
    """
    refs, preds = check_pairs(references, predictions)
    check_options(theta, scorer, weight, unmentioned)
    if decomposer is None or reader is None:
        dec, rdr = make_backend(backend, generate_fn=generate_fn, batched=batched, max_retries=max_retries,
                                theta=theta, scorer=scorer, uncertain=uncertain)
        dec, rdr = decomposer or dec, reader or rdr
    else:
        dec, rdr = decomposer, reader
    facts = dec.decompose(refs + preds)
    gt_facts, inf_facts = facts[: len(refs)], facts[len(refs):]
    live = [i for i, (g, f) in enumerate(zip(gt_facts, inf_facts)) if g.ok and f.ok]
    # disease level (Eq. 1, Eq. 3), then alignment and attribute level (Eq. 2)
    disease = _read(rdr, [req for i in live for req in _disease_requests(refs[i], preds[i], gt_facts[i], inf_facts[i])])
    matches = {i: _judge_pair(disease, k, unmentioned, theta) for k, i in enumerate(live)}
    aligned = {i: _align(gt_facts[i], inf_facts[i], matches[i], theta, scorer) for i in live}
    attribute = _read(rdr, [req for i in live for req in _attribute_requests(refs[i], preds[i], gt_facts[i],
                                                                               inf_facts[i], aligned[i])])
    slot = {i: k for k, i in enumerate(live)}
    rows, trace = [], []
    for i in range(len(refs)):
        if i not in slot:
            rows.append(_failed_row(i, gt_facts[i], inf_facts[i]))
            continue
        rows.append(_scored_row(i, slot[i], gt_facts[i], inf_facts[i], disease, attribute, matches[i],
                                len(aligned[i]), unmentioned, theta, weight, trace))
    frame = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    for c in _COUNT_COLUMNS:
        frame[c] = frame[c].fillna(0).astype(int)
    frame["ok"] = frame["ok"].astype(bool)
    frame.attrs["trace"] = trace_frame(trace)
    frame.attrs["calls"] = _calls_table(refs + preds, facts, disease.calls, attribute.calls)
    frame.attrs["params"] = {"backend": backend, "decomposer": getattr(dec, "name", type(dec).__name__),
                             "reader": getattr(rdr, "name", type(rdr).__name__), "theta": theta, "scorer": scorer,
                             "weight": weight, "unmentioned": unmentioned, "uncertain": uncertain}
    return frame


@dataclass(frozen=True)
class _Reading:
    """One level's reader requests, two per scored pair (GT→INF at ``2k``, INF→GT at ``2k + 1`` for the ``k``-th
    scored pair), with their answers and the reader's JSON-call outcomes (:func:`_reader_calls`)."""

    requests: list[ReadRequest]
    answers: list[list[Answer]]
    calls: list[Any]


def _read(reader: Any, requests: list[ReadRequest]) -> _Reading:
    """One ``reader.read`` of ``requests`` (step 2 or 3 of the module docstring)."""
    answers = reader.read(requests)
    return _Reading(requests, answers, _reader_calls(reader, len(requests)))


def _disease_requests(ref: str, pred: str, gt: ReportFacts, inf: ReportFacts) -> tuple[ReadRequest, ReadRequest]:
    """The pair's disease questions (Eq. 1): GT→INF answered from the prediction, INF→GT from the reference."""
    return (ReadRequest(tuple(disease_questions(gt, "gt->inf")), pred, inf),
            ReadRequest(tuple(disease_questions(inf, "inf->gt")), ref, gt))


def _judge_pair(reading: _Reading, k: int, unmentioned: str, theta: float) -> tuple[list[bool], list[bool]]:
    """Whether each disease question of the ``k``-th scored pair matched (:func:`~radaudit.atomic.verify.judge`),
    GT→INF and INF→GT."""
    gt_inf, inf_gt = ([judge(q, a, unmentioned=unmentioned, theta=theta)
                       for q, a in zip(reading.requests[2 * k + side].questions, reading.answers[2 * k + side])]
                      for side in (0, 1))
    return gt_inf, inf_gt


def _align(gt: ReportFacts, inf: ReportFacts, matches: tuple[list[bool], list[bool]], theta: float, scorer: str
           ) -> list[tuple[int, int, float]]:
    """The findings present and matched in both directions, aligned (:func:`~radaudit.atomic.score.align_findings`)."""
    g_m, f_m = matches
    return align_findings([f.name for f in gt.findings], [f.name for f in inf.findings],
                          [f.present == "yes" and m for f, m in zip(gt.findings, g_m)],
                          [f.present == "yes" and m for f, m in zip(inf.findings, f_m)], theta=theta, scorer=scorer)


def _attribute_requests(ref: str, pred: str, gt: ReportFacts, inf: ReportFacts, aligned: list[tuple[int, int, float]]
                        ) -> tuple[ReadRequest, ReadRequest]:
    """The aligned findings' attribute questions (Eq. 2), GT→INF and INF→GT."""
    g_find, f_find = gt.findings, inf.findings
    gq = [q for a, b, _ in aligned for q in attribute_questions(g_find[a], f_find[b], "gt->inf")]
    fq = [q for a, b, _ in aligned for q in attribute_questions(f_find[b], g_find[a], "inf->gt")]
    return ReadRequest(tuple(gq), pred, inf), ReadRequest(tuple(fq), ref, gt)


def _failed_row(i: int, gt: ReportFacts, inf: ReportFacts) -> dict[str, Any]:
    """The row of a pair whose decomposition failed: NaN scores, ``ok=False`` and the reason (never scored)."""
    dec_failed = int(not gt.ok) + int(not inf.ok)
    dec_repaired = int(gt.repaired) + int(inf.repaired)
    err = "; ".join(f"{side} report: {f.error}" for side, f in (("reference", gt), ("prediction", inf)) if not f.ok)
    return {"pair": i, **dict.fromkeys(SCORE_COLUMNS[1:10], math.nan), "n_aligned": 0,
            "n_unparseable": gt.n_unparseable + inf.n_unparseable, "n_repaired": dec_repaired,
            "n_decompose_failed": dec_failed, "n_decompose_repaired": dec_repaired, "ok": False,
            "error": "not scored (decomposition failed): " + err}


def _level_counts(i: int, k: int, reading: _Reading, matches: tuple[list[bool], list[bool]] | None, unmentioned: str,
                  theta: float, trace: list[TraceRow]) -> tuple[list[tuple[int, int]], int]:
    """``([(C_gt→inf, N_gt), (C_inf→gt, N_inf)], unparseable answers)`` of one level of the ``k``-th scored pair
    (pair ``i``), its questions appended to ``trace``; ``matches``: the judged answers (``None``: judged here)."""
    per_dir = []
    n_unparseable = 0
    for side in (0, 1):
        r, answers = reading.requests[2 * k + side], reading.answers[2 * k + side]
        if matches is not None:
            ms = matches[side]
        else:
            ms = [judge(q, a, unmentioned=unmentioned, theta=theta) for q, a in zip(r.questions, answers)]
        for q, a, m in zip(r.questions, answers, ms):
            n_unparseable += int(a.unparseable)
            trace.append(TraceRow(i, q.direction, q.level, q.finding, q.attribute, q.text, q.expected,
                                  a.found, bool(m), a.evidence, q.source_evidence, q.target, a.unparseable))
        per_dir.append((sum(ms), len(ms)))
    return per_dir, n_unparseable


def _scored_row(i: int, k: int, gt: ReportFacts, inf: ReportFacts, disease: _Reading, attribute: _Reading,
                matches: tuple[list[bool], list[bool]], n_aligned: int, unmentioned: str, theta: float, weight: float,
                trace: list[TraceRow]) -> dict[str, Any]:
    """The row of the ``k``-th scored pair (pair ``i``): Eq. 3 per level, Eq. 4, the counts and the JSON calls; its
    questions appended to ``trace``."""
    dec_failed = int(not gt.ok) + int(not inf.ok)
    dec_repaired = int(gt.repaired) + int(inf.repaired)
    calls = [c for c in (disease.calls[2 * k], disease.calls[2 * k + 1], attribute.calls[2 * k],
                         attribute.calls[2 * k + 1]) if c is not None]
    rd_failed = sum(not c.ok for c in calls)
    rd_repaired = sum(bool(c.ok and c.repairs) for c in calls)
    ((cd_g, nd_g), (cd_f, nd_f)), d_unparseable = _level_counts(i, k, disease, matches, unmentioned, theta, trace)
    ((ca_g, na_g), (ca_f, na_f)), a_unparseable = _level_counts(i, k, attribute, None, unmentioned, theta, trace)
    n_ans_unp = d_unparseable + a_unparseable
    p_d, r_d, f_d = level_scores(cd_f, nd_f, cd_g, nd_g)
    if na_g + na_f:
        p_a, r_a, f_a = level_scores(ca_f, na_f, ca_g, na_g)
    else:
        p_a = r_a = f_a = math.nan
    p, r, f = aggregate(p_d, r_d, p_a, r_a, weight)
    return {
        "pair": i, "precision": p, "recall": r, "f1": f,
        "disease_precision": p_d, "disease_recall": r_d, "disease_f1": f_d,
        "attribute_precision": p_a, "attribute_recall": r_a, "attribute_f1": f_a,
        "n_disease_gt": nd_g, "n_disease_inf": nd_f, "c_disease_gt_inf": cd_g, "c_disease_inf_gt": cd_f,
        "n_attribute_gt": na_g, "n_attribute_inf": na_f, "c_attribute_gt_inf": ca_g, "c_attribute_inf_gt": ca_f,
        "n_aligned": n_aligned, "n_unparseable": dec_failed + n_ans_unp,
        "n_repaired": dec_repaired + rd_repaired, "n_decompose_failed": dec_failed,
        "n_decompose_repaired": dec_repaired, "n_reader_calls": len(calls), "n_reader_failed": rd_failed,
        "n_reader_repaired": rd_repaired, "n_answers_unparseable": n_ans_unp, "ok": True, "error": "",
    }


def score_pair(reference: str, prediction: str, **kwargs: Any) -> pd.Series:
    """:func:`score_pairs` on one pair: its row as a Series (the trace in ``.attrs["trace"]``, the
    call counts in ``.attrs["calls"]``)."""
    frame = score_pairs([reference], [prediction], **kwargs)
    row = frame.iloc[0].copy()
    row.attrs["trace"] = frame.attrs["trace"]
    row.attrs["calls"] = frame.attrs["calls"]
    return row


def _reader_calls(reader: Any, n: int) -> list[Any]:
    """The reader's per-request JSON call outcomes after a ``read`` of ``n`` requests
    (``LLMReader.last_calls``); ``None`` each for a reader that makes no model call."""
    calls = getattr(reader, "last_calls", None)
    if calls is None or len(calls) != n:
        return [None] * n
    return list(calls)


def _call_row(stage: str, outcomes: list[tuple[bool, bool, int]]) -> dict[str, Any]:
    """One :data:`CALL_COLUMNS` row from ``(ok, repaired, attempts)`` per call."""
    ok = sum(o for o, _, _ in outcomes)
    return {"stage": stage, "calls": len(outcomes), "ok": ok,
            "clean": sum(o and not r and a == 1 for o, r, a in outcomes),
            "repaired": sum(o and r for o, r, _ in outcomes), "retried": sum(o and a > 1 for o, _, a in outcomes),
            "failed": len(outcomes) - ok, "attempts": sum(a for _, _, a in outcomes)}


def _calls_table(texts: Sequence[str], facts: Sequence[Any], d_calls: Sequence[Any], a_calls: Sequence[Any]) -> pd.DataFrame:
    seen: dict[str, Any] = {}
    for t, f in zip(texts, facts):
        seen.setdefault(t, f)
    dec = [(f.ok, bool(f.ok and f.repairs), f.attempts) for f in seen.values() if f.attempts or not f.ok]
    rows = [_call_row("decomposition", dec)]
    for stage, calls in (("disease reading", d_calls), ("attribute reading", a_calls)):
        rows.append(_call_row(stage, [(c.ok, bool(c.ok and c.repairs), c.attempts) for c in calls if c is not None]))
    return pd.DataFrame(rows, columns=list(CALL_COLUMNS))


def calls_of(scores: pd.DataFrame | pd.Series) -> pd.DataFrame:
    """The per-run JSON-call counts attached by :func:`score_pairs` (:data:`CALL_COLUMNS`; all zero
    for the rule backend, which calls no model)."""
    calls = scores.attrs.get("calls")
    if calls is None:
        raise ParamsError("This table has no AtomiMed call counts: pass the DataFrame returned by score_pairs "
                          "(pandas drops .attrs on some operations such as concat; keep the original).")
    return calls


def trace_of(scores: pd.DataFrame | pd.Series) -> pd.DataFrame:
    """The audit trace attached by :func:`score_pairs` (one row per question)."""
    trace = scores.attrs.get("trace")
    if trace is None:
        raise ParamsError("This table has no AtomiMed trace: pass the DataFrame returned by score_pairs "
                          "(pandas drops .attrs on some operations such as concat; keep the original).")
    return trace
