"""AtomiMed (Chang et al., arXiv 2606.31292): hierarchical atomic fact-checking of radiology reports.

A report is decomposed into Atomic Clinical Facts (disease-level yes/no questions, Eq. 1, and
attribute-level questions per finding, Eq. 2: :mod:`~radaudit.atomic.decompose`); the facts of
each report are verified against the other report in both directions
(:mod:`~radaudit.atomic.verify`); precision/recall/F1 per level (Eq. 3) are combined with equal
weights (Eq. 4: :mod:`~radaudit.atomic.score`); every question is kept in an audit trace
(:mod:`~radaudit.atomic.trace`). Two interchangeable backends: rule-based on the text toolkit
(deterministic, offline, the default) and an instruct LLM returning JSON (paper: Qwen3-235B-A22B,
temperature 0). Entry point: :func:`score_pairs`; registered as the ``atomimed`` metric
(:mod:`radaudit.atomic.metric`, listed in :mod:`radaudit.metrics.factual`).
"""

from radaudit.atomic.compare import values_match
from radaudit.atomic.decompose import (
    DEFAULT_DECOMPOSE_PROMPT,
    LLMDecomposer,
    ReportFacts,
    RuleDecomposer,
    greedy_generator,
)
from radaudit.atomic.pipeline import (
    CALL_COLUMNS,
    SCORE_COLUMNS,
    calls_of,
    make_backend,
    score_pair,
    score_pairs,
    trace_of,
)
from radaudit.atomic.schema import ATTRIBUTES, Attributes, Decomposition, Finding, Question, TraceRow
from radaudit.atomic.score import aggregate, align_findings, level_scores, name_similarity
from radaudit.atomic.trace import format_trace, read_jsonl, trace_frame, write_jsonl
from radaudit.atomic.verify import (
    DEFAULT_ATTRIBUTE_READER_PROMPT,
    DEFAULT_DISEASE_READER_PROMPT,
    LLMReader,
    RuleReader,
)

__all__ = [
    "ATTRIBUTES", "Attributes", "CALL_COLUMNS", "DEFAULT_ATTRIBUTE_READER_PROMPT", "DEFAULT_DECOMPOSE_PROMPT",
    "DEFAULT_DISEASE_READER_PROMPT", "Decomposition", "Finding", "LLMDecomposer", "LLMReader", "Question",
    "ReportFacts", "RuleDecomposer", "RuleReader", "SCORE_COLUMNS", "TraceRow", "aggregate", "align_findings", "calls_of",
    "format_trace", "greedy_generator", "level_scores", "make_backend", "name_similarity", "read_jsonl",
    "score_pair", "score_pairs", "trace_frame", "trace_of", "values_match", "write_jsonl",
]
