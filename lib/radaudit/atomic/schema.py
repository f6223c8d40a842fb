"""The fixed schema of AtomiMed's Atomic Clinical Facts (ACFs), questions and audit-trace rows.

AtomiMed (Chang et al., arXiv 2606.31292, §2.1) decomposes a report into a two-level hierarchy:

- **Disease level** (Eq. 1): ``Q_dis(R) = {(q_i, a_i)}``, ``a_i ∈ {yes, no}``; ``q_i`` instantiates a
  normalised clinical entity. Here one :class:`Finding` is one disease-level pair: ``name`` is the
  entity, ``present`` the answer.
- **Attribute level** (Eq. 2): ``Q_attr(R) = {(d_k, {(q_kj, a_kj)})}`` over the facets location, size,
  morphology, severity, quantity and temporal change. Here ``Finding.attributes`` holds the
  report's answer for each facet (``None``: not stated).

The same pydantic models are the JSON schema the LLM backend must emit (:data:`DECOMPOSITION_EXAMPLE`
shows it) and the output of the rule-based backend, so both backends feed the same verifier.

**Strict for the LLM.** A model's reply is accepted only when it *is* a decomposition: the top-level
object must have ``findings`` (a list; ``{"findings": []}`` is a report without findings), every
finding needs ``name`` and ``present``, and an unknown key anywhere (top level, finding, attributes)
is rejected (``extra="forbid"``). So ``{}``, ``{"answer": "sure"}``, ``[]``, a finding without
``present`` (e.g. a truncated reply closed by the repair step) or prose fail validation and are
retried and then counted as failures by :mod:`radaudit.atomic.decompose`; they never become an
empty decomposition that scores 1.0 against another. The rule backend builds the same models in
code with the known fields only, so the strictness costs it nothing.

Choices where the paper is silent (documented here, used everywhere):

- ``present`` is the string ``"yes"``/``"no"`` of Eq. 1. LLM replies are normalised before
  validation: booleans, ``"Yes"``, ``"present"``, ``"positive"``, ``"true"`` → ``"yes"``;
  ``"absent"``, ``"negative"``, ``"false"`` → ``"no"``; a hedged answer (``"uncertain"``,
  ``"possible"``, ``"maybe"``) → ``"yes"`` (a possible finding is a claim the other report has to
  support, the U-Ones convention of CheXpert-label metrics). Anything else fails validation and
  is repaired/retried/counted by :mod:`radaudit.models.llm_json`.
- Attribute values are short free-text strings in the report's own words (``"left lower lobe"``,
  ``"5 mm"``, ``"small"``); :mod:`radaudit.atomic.compare` decides whether two values agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ATTRIBUTES", "DIRECTIONS", "LEVELS", "NOT_MENTIONED", "Attributes", "Finding", "Decomposition",
    "DECOMPOSITION_EXAMPLE", "Question", "Answer", "TraceRow", "normalize_yes_no",
]

#: The six attribute facets of Eq. 2, in the paper's order.
ATTRIBUTES: tuple[str, ...] = ("location", "size", "morphology", "severity", "quantity", "temporal")
#: GT→INF questions are answered from the predicted report (recall); INF→GT from the reference (precision).
DIRECTIONS: tuple[str, ...] = ("gt->inf", "inf->gt")
LEVELS: tuple[str, ...] = ("disease", "attribute")
#: The answer recorded when the answering report does not address a question.
NOT_MENTIONED = "not mentioned"

_YES = {"yes", "y", "true", "present", "positive", "1", "uncertain", "possible", "possibly", "maybe", "probable",
        "likely", "questionable", "suspected"}
_NO = {"no", "n", "false", "absent", "negative", "0", "none", "not present"}


def normalize_yes_no(value: Any) -> Any:
    """``"yes"``/``"no"`` for the spellings listed in the module docstring; anything else unchanged
    (so that validation rejects it with a message)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        v = value.strip().strip(".").lower()
        if v in _YES:
            return "yes"
        if v in _NO:
            return "no"
    return value


def _clean_value(value: Any) -> Any:
    """Attribute values: ``None``/empty/"null"/"not mentioned"/"n/a" → ``None``; numbers → text;
    a list of strings → joined with ``", "``."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        value = ", ".join(str(v) for v in value if str(v).strip())
    if isinstance(value, str):
        v = " ".join(value.split())
        if v.lower() in {"", "null", "none", "n/a", "na", "not stated", "not mentioned", "unknown", "-"}:
            return None
        return v
    return value


class Attributes(BaseModel):
    """The six facets of one finding (Eq. 2); ``None`` = the report does not state it (or the key is
    left out). Any other key is rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    location: str | None = None
    size: str | None = None
    morphology: str | None = None
    severity: str | None = None
    quantity: str | None = None
    temporal: str | None = None

    @field_validator(*ATTRIBUTES, mode="before")
    @classmethod
    def _clean(cls, v: Any) -> Any:
        return _clean_value(v)

    def stated(self) -> dict[str, str]:
        """``{facet: value}`` for the facets the report states, in :data:`ATTRIBUTES` order."""
        return {k: getattr(self, k) for k in ATTRIBUTES if getattr(self, k) is not None}


class Finding(BaseModel):
    """One disease-level fact (Eq. 1) with its attribute-level facts (Eq. 2).

    ``evidence``: the sentence(s) of the report that state it (filled by the rule backend; optional
    for the LLM). ``name`` and ``present`` are required; any other key is rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    present: Literal["yes", "no"]
    attributes: Attributes = Field(default_factory=Attributes)
    evidence: str = ""
    #: The report states the finding only as possible ("may represent pneumonia"): ``present`` is then
    #: "yes" (the U-Ones reading) and ``hedged`` True. Set by the rule backend; optional for the LLM.
    #: Not in the paper; used by AtomiMed-clinical (:mod:`radaudit.atomic.clinical`) only.
    hedged: bool = False

    @field_validator("present", mode="before")
    @classmethod
    def _yes_no(cls, v: Any) -> Any:
        return normalize_yes_no(v)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> Any:
        return " ".join(v.split()) if isinstance(v, str) else v

    @field_validator("attributes", mode="before")
    @classmethod
    def _attrs(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, v: Any) -> Any:
        return "" if v is None else v


class Decomposition(BaseModel):
    """What a decomposer returns for one report: its findings, as the LLM must emit them.

    ``findings`` is required (``[]`` for a report without findings); no other key is allowed, so an
    object that is not a decomposition (``{}``, ``{"answer": "sure"}``) fails validation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    findings: list[Finding]


#: An example of the JSON an LLM decomposer must return (quoted in the default prompt).
DECOMPOSITION_EXAMPLE = (
    '{"findings": [{"name": "pleural effusion", "present": "yes", "attributes": {"location": "left", '
    '"size": null, "morphology": null, "severity": "small", "quantity": null, "temporal": "increased"}}, '
    '{"name": "pneumothorax", "present": "no", "attributes": {}}]}'
)


@dataclass(frozen=True)
class Question:
    """One verification question (§2.2).

    ``direction``: ``"gt->inf"`` (asked from the reference, answered from the prediction: recall)
    or ``"inf->gt"`` (precision). ``level``: ``"disease"`` or ``"attribute"``. ``finding``: the
    finding's name in the asking report; ``attribute``: the facet (attribute level). ``expected``:
    the asking report's answer (``"yes"``/``"no"`` or the attribute value). ``target``: for an
    attribute question, the name of the aligned finding in the answering report.
    ``source_evidence``: the asking report's sentence for the fact.
    """

    direction: str
    level: str
    finding: str
    attribute: str | None
    text: str
    expected: str
    target: str | None = None
    source_evidence: str = ""


@dataclass(frozen=True)
class Answer:
    """A reader's answer: ``found`` (``"yes"``/``"no"``/:data:`NOT_MENTIONED` or an attribute
    value), the ``evidence`` sentence of the answering report, ``match`` when the reader itself
    judged agreement (LLM attribute reader; ``None`` otherwise) and ``unparseable`` when the
    reader's output for this question could not be used (counted, scored as no match)."""

    found: str
    evidence: str = ""
    match: bool | None = None
    unparseable: bool = False


@dataclass(frozen=True)
class TraceRow:
    """One line of the audit trace: a question, what was expected, what was found, whether it matched."""

    pair: int
    direction: str
    level: str
    finding: str
    attribute: str | None
    question: str
    expected: str
    found: str
    match: bool
    evidence: str
    source_evidence: str = ""
    target: str | None = None
    unparseable: bool = False

    def to_dict(self) -> dict[str, Any]:
        # every field is a str/bool/int/None: a shallow dict equals dataclasses.asdict, ~10x faster
        return {f: getattr(self, f) for f in self.__dataclass_fields__}
