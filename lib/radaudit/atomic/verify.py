"""Agentic cross-verification (AtomiMed §2.2): questions from one report, answered from the other.

Questions
---------
- Disease level: every :class:`~radaudit.atomic.schema.Finding` of the asking report becomes
  "Is there <name>?" with the expected answer ``yes``/``no`` (Eq. 1). GT→INF questions (from the
  reference, answered from the prediction) give recall; INF→GT questions give precision.
- Attribute level (Eq. 2): only for findings "correctly aligned in both directions"
  (:func:`radaudit.atomic.score.align_findings`): every facet the asking report states for the
  finding becomes "What is the <facet> of the <name>?" with the stated value as the expected answer;
  the question carries the aligned finding's name in the answering report (``target``).

Readers (one interface: ``read(requests) -> list[list[Answer]]``, one list per request, in order)
------------------------------------------------------------------------------------------------
:class:`RuleReader` (deterministic) answers from the answering report's decomposition: a disease
question from the finding whose name is most similar (≥ θ) to the asked one (its ``present`` and
evidence sentence), else :data:`~radaudit.atomic.schema.NOT_MENTIONED`; an attribute question from
the aligned finding's value for that facet. :class:`LLMReader` asks a model with the answering
report's text: one prompt per (pair, direction, level) listing all questions, JSON reply
``{"answers": [{"id", "answer", "evidence"?, "match"?}]}`` through
:func:`radaudit.models.llm_json.call_json_batch`. The reply schema (:class:`ReaderReply`) is strict:
``answers`` is required and must be a list of objects with ``id`` and ``answer``; an unknown key
(top level or item) is rejected, so ``{}``, ``{"answer": "sure"}``, ``[]``, truncated JSON (a
cut-off reply is not closed by repair here) or prose fail (then retried, then counted). A reply
that fails after repairs/retries marks every question of its prompt ``unparseable``; a valid
reply that leaves a question out or answers it with something that is not an answer marks that
question ``unparseable``. Unparseable answers count as non-matches and in ``n_unparseable``,
never dropped. Each prompt's JSON call
outcome (ok, repairs, attempts) is kept in :attr:`LLMReader.last_calls` so that
:func:`radaudit.atomic.pipeline.score_pairs` can count failed and repaired readings per pair.

Judging (:func:`judge`)
-----------------------
A disease answer matches when it equals the expected one; a finding the answering report does not
mention reads as absent (``unmentioned="no"``, default: reports list pertinent negatives and
leave the rest unsaid), or as a non-match whatever was expected (``unmentioned="mismatch"``).
An attribute answer matches when the reader says so (LLM) or
:func:`radaudit.atomic.compare.values_match` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from radaudit.atomic.compare import values_match
from radaudit.atomic.decompose import ReportFacts, render_prompt
from radaudit.atomic.schema import NOT_MENTIONED, Answer, Finding, Question, normalize_yes_no
from radaudit.atomic.score import entity_similarity
from radaudit.errors import ParamsError
from radaudit.models.llm_json import call_json_batch

__all__ = ["ReadRequest", "RuleReader", "LLMReader", "disease_questions", "attribute_questions", "judge",
           "DEFAULT_DISEASE_READER_PROMPT", "DEFAULT_ATTRIBUTE_READER_PROMPT", "ReaderReply"]


def disease_questions(facts: ReportFacts, direction: str) -> list[Question]:
    """Eq. 1 questions of one report, one per finding, in order."""
    return [Question(direction, "disease", f.name, None, f"Is there {f.name}?", f.present,
                     source_evidence=f.evidence) for f in facts.findings]


_LABEL = {"temporal": "temporal change"}


def attribute_questions(finding: Finding, target: Finding, direction: str) -> list[Question]:
    """Eq. 2 questions for one aligned finding: one per facet it states, in the paper's facet order."""
    return [Question(direction, "attribute", finding.name, k, f"What is the {_LABEL.get(k, k)} of the {finding.name}?", v,
                     target=target.name, source_evidence=finding.evidence)
            for k, v in finding.attributes.stated().items()]


@dataclass(frozen=True)
class ReadRequest:
    """Questions to answer from one report: its ``text`` and its decomposition ``facts``."""

    questions: tuple[Question, ...]
    report: str
    facts: ReportFacts


def judge(question: Question, answer: Answer, *, unmentioned: Literal["no", "mismatch"] = "no",
          theta: float = 0.8) -> bool:
    """Whether ``answer`` confirms ``question.expected`` (module docstring, "Judging")."""
    if answer.unparseable:
        return False
    if question.level == "disease":
        found = answer.found
        if found == NOT_MENTIONED:
            if unmentioned == "mismatch":
                return False
            found = "no"
        return found == question.expected
    if answer.match is not None:
        return bool(answer.match)
    return values_match(question.attribute or "", question.expected, answer.found, theta)


# ------------------------------------------------------------------------------------------ rule reader

@dataclass
class RuleReader:
    """Answers from the answering report's decomposition (module docstring). ``theta``/``scorer``:
    the name similarity used to find the asked finding (:func:`~radaudit.atomic.score.entity_similarity`)."""

    theta: float = 0.8
    scorer: str = "ratio"
    name: str = field(init=False, default="rule")

    def read(self, requests: Sequence[ReadRequest]) -> list[list[Answer]]:
        return [[self._answer(q, r.facts) for q in r.questions] for r in requests]

    def _answer(self, q: Question, facts: ReportFacts) -> Answer:
        if q.level == "attribute":
            target = next((f for f in facts.findings if f.name == q.target), None)
            if target is None:
                return Answer(NOT_MENTIONED)
            value = getattr(target.attributes, q.attribute or "")
            return Answer(value if value is not None else NOT_MENTIONED, target.evidence)
        best, best_s = None, -1.0
        for f in facts.findings:
            s = entity_similarity(q.finding, f.name, self.scorer)
            # most similar; among equals a present finding wins (a positive statement outranks a negative)
            if s >= self.theta and (s > best_s or (s == best_s and f.present == "yes" and best.present == "no")):
                best, best_s = f, s
        if best is None:
            return Answer(NOT_MENTIONED)
        return Answer(best.present, best.evidence)


# ------------------------------------------------------------------------------------------ LLM reader

#: Disease-level evidence-reader prompt: ``{report}`` and ``{questions}`` (numbered lines) are filled in.
DEFAULT_DISEASE_READER_PROMPT = (
    "You are an expert radiologist checking a radiology report. Answer each question using only the report below.\n"
    'For each question answer "yes" if the report states the finding is present or possibly present, "no" if it '
    'states it is absent, or "not mentioned" if the report does not address it. Quote the sentence of the report '
    'you relied on as "evidence" ("" when not mentioned).\n'
    "Answer with only a JSON object of this form: "
    '{"answers": [{"id": 1, "answer": "yes", "evidence": "..."}]}\n\n'
    "Report:\n{report}\n\nQuestions:\n{questions}\n"
)
#: Attribute-level evidence-reader prompt: ``{report}`` and ``{questions}`` (numbered lines with the
#: expected answer) are filled in.
DEFAULT_ATTRIBUTE_READER_PROMPT = (
    "You are an expert radiologist checking a radiology report. Answer each question using only the report below.\n"
    'For each question give the report\'s answer in the report\'s own words ("not mentioned" if the report does not '
    'state it), "match": true if it agrees with the expected answer given with the question and false otherwise, '
    'and the sentence of the report you relied on as "evidence".\n'
    "Answer with only a JSON object of this form: "
    '{"answers": [{"id": 1, "answer": "left lower lobe", "match": true, "evidence": "..."}]}\n\n'
    "Report:\n{report}\n\nQuestions:\n{questions}\n"
)


class ReaderItem(BaseModel):
    """One answer of an LLM reader: ``id`` (the question's number) and ``answer`` are required;
    ``evidence`` and ``match`` optional; any other key is rejected. A ``null`` answer reads as
    ``""`` (not mentioned), a boolean as yes/no, a number as its text."""

    model_config = ConfigDict(extra="forbid")

    id: int
    answer: str
    evidence: str = ""
    match: bool | None = None

    @field_validator("answer", "evidence", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, (int, float)):
            return str(v)
        return v


class ReaderReply(BaseModel):
    """The JSON an LLM evidence reader must return: ``{"answers": [ReaderItem, ...]}``, ``answers``
    required, nothing else allowed."""

    model_config = ConfigDict(extra="forbid")

    answers: list[ReaderItem]


_NOT_MENTIONED_SPELLINGS = {"not mentioned", "not_mentioned", "not stated", "unknown", "n/a", "none", "",
                            "not addressed", "not reported", "unclear", "null"}


def _disease_answer(item: ReaderItem) -> Answer:
    a = normalize_yes_no(item.answer)
    if a in ("yes", "no"):
        return Answer(a, item.evidence)
    if item.answer.strip().strip(".").lower() in _NOT_MENTIONED_SPELLINGS:
        return Answer(NOT_MENTIONED, item.evidence)
    return Answer(item.answer, item.evidence, unparseable=True)


def _attribute_answer(item: ReaderItem) -> Answer:
    found = item.answer.strip()
    if found.strip(".").lower() in _NOT_MENTIONED_SPELLINGS:
        found = NOT_MENTIONED
    return Answer(found, item.evidence, match=item.match)


@dataclass
class LLMReader:
    """Evidence reader backed by an instruct LLM (module docstring). ``generate_fn``/``batched``/
    ``max_retries``/``repair`` as in :class:`~radaudit.atomic.decompose.LLMDecomposer`;
    ``disease_prompt``/``attribute_prompt`` must contain ``{report}`` and ``{questions}``.

    ``last_calls``: after :meth:`read`, one entry per request, in order: the
    :class:`~radaudit.models.llm_json.JsonCallResult` of its prompt (``ok``, ``repairs``,
    ``attempts``, ``error``), or ``None`` for a request without questions (no call);
    ``last_summary``: the :class:`~radaudit.models.llm_json.JsonBatchSummary` of those calls."""

    generate_fn: Callable[..., Any]
    disease_prompt: str = DEFAULT_DISEASE_READER_PROMPT
    attribute_prompt: str = DEFAULT_ATTRIBUTE_READER_PROMPT
    batched: bool = False
    max_retries: int = 2
    repair: bool = True
    on_generate_error: Literal["raise", "record"] = "record"
    name: str = field(init=False, default="llm")

    def __post_init__(self) -> None:
        if not callable(self.generate_fn):
            raise ParamsError("LLMReader needs generate_fn, a callable prompt -> str.")
        for t in (self.disease_prompt, self.attribute_prompt):
            render_prompt(t, report="", questions="")
        self.last_calls: list[Any] = []
        self.last_summary: Any = None

    def _prompt(self, r: ReadRequest) -> str:
        lines = []
        for k, q in enumerate(r.questions, 1):
            if q.level == "disease":
                lines.append(f"{k}. {q.text}")
            else:
                label = _LABEL.get(q.attribute or "", q.attribute)
                lines.append(f"{k}. What is the {label} of the {q.target or q.finding}? Expected answer: {q.expected}")
        template = self.disease_prompt if r.questions[0].level == "disease" else self.attribute_prompt
        return render_prompt(template, report=r.report, questions="\n".join(lines))

    def read(self, requests: Sequence[ReadRequest]) -> list[list[Answer]]:
        out: list[list[Answer]] = [[] for _ in requests]
        self.last_calls = [None] * len(requests)
        todo = [k for k, r in enumerate(requests) if r.questions]
        if not todo:
            return out
        prompts = [self._prompt(requests[k]) for k in todo]
        results, self.last_summary = call_json_batch(self.generate_fn, prompts, ReaderReply, batched=self.batched,
                                     max_retries=self.max_retries, repair=self.repair,
                                     on_generate_error=self.on_generate_error, reject_repairs=("close_truncated",))
        for k, res in zip(todo, results):
            self.last_calls[k] = res
            qs = requests[k].questions
            if not res.ok:
                out[k] = [Answer(NOT_MENTIONED, unparseable=True) for _ in qs]
                continue
            by_id = {}
            for item in res.value.answers:
                by_id.setdefault(item.id, item)
            answers = []
            for n, q in enumerate(qs, 1):
                item = by_id.get(n)
                if item is None:
                    answers.append(Answer(NOT_MENTIONED, unparseable=True))
                elif q.level == "disease":
                    answers.append(_disease_answer(item))
                else:
                    answers.append(_attribute_answer(item))
            out[k] = answers
        return out
