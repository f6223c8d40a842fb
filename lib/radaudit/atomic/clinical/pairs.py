"""AtomiMed-clinical of a pair and of a batch (:mod:`radaudit.atomic.clinical`): :func:`clinical_scores` scores two
decompositions with the issue-41 ladder (:mod:`~radaudit.atomic.clinical.scores_issue41`) or, with
``ClinicalOptions(rules=False)``, as before issue 41 (:mod:`~radaudit.atomic.clinical.scores_before_issue41`);
:func:`score_pairs_clinical` decomposes a batch of report pairs, finds each report's normal statements and scores every
pair into a table with its trace, as the ``atomimed_clinical`` metric (:mod:`radaudit.atomic.metric`) does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.atomic.clinical.context import check_contexts
from radaudit.atomic.clinical.decomposer import clinical_decomposer, clinical_text
from radaudit.atomic.clinical.options import ClinicalOptions
from radaudit.atomic.clinical.scores_before_issue41 import scores_before_issue41
from radaudit.atomic.clinical.scores_issue41 import scores_issue41
from radaudit.atomic.clinical.scoring import CLINICAL_COLUMNS, TRACE_COLUMNS
from radaudit.atomic.concepts import Denial, find_denials
from radaudit.atomic.schema import Finding
from radaudit.metrics.base import check_pairs

__all__ = ["clinical_scores", "score_pairs_clinical"]


def clinical_scores(reference: Sequence[Finding], candidate: Sequence[Finding],
                    options: ClinicalOptions | None = None, *, context: Mapping[str, Any] | None = None,
                    reference_denials: Sequence[Denial] = (), candidate_denials: Sequence[Denial] = ()
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """AtomiMed-clinical of one pair from its two decompositions: ``(row, trace)``.

    ``row`` has :data:`~radaudit.atomic.clinical.scoring.CLINICAL_COLUMNS`; ``trace`` one dict per fact and direction
    (``direction`` ``"gt->inf"`` for reference facts, ``"inf->gt"`` for candidate facts, ``finding``, ``present``,
    ``other`` (the paired finding's name and answer, or ``"not mentioned"``), ``relation``
    (``"same"``, ``"specific"``/``"generic"`` for a finding credited through
    :data:`~radaudit.atomic.lexicon.SPECIFIC_OF` or the concept table, ``"sign"``/``"sign-of"`` (signs table),
    ``"same, critical downgrade"``, ``"contradicted"`` (a stated absence of a finding the other report names more
    specifically), ``"denied: <statement>"`` (a normal statement's implied absence), ``"contradicts a sign of the other
    report"``, ``"false reassurance"`` (rung 5r)), ``weight``, ``credit``,
    ``agreement``, ``facets``).

    ``context``: the patient's age/sex/indication/history (:data:`~radaudit.atomic.concepts.CONTEXT_KEYS`), which
    scales the weights of the findings the context rules name; ``None`` (or a context no rule matches) changes
    nothing. ``reference_denials``/``candidate_denials``: the normal statements of each report
    (:func:`~radaudit.atomic.concepts.find_denials`; :func:`score_pairs_clinical` finds them in the texts).

    >>> from radaudit.atomic.schema import Finding
    >>> row, _ = clinical_scores([], [Finding(name="pneumonia", present="yes")])
    >>> round(row["precision"], 4), row["recall"]         # one false urgent finding: (0 + 1) / (2 + 1)
    (0.3333, 1.0)
    """
    opt = options or ClinicalOptions()
    if opt.rules:
        return scores_issue41(list(reference), list(candidate), opt, context, reference_denials, candidate_denials)
    return scores_before_issue41(reference, candidate, opt, context)


def score_pairs_clinical(references: Sequence[str], candidates: Sequence[str], *, decomposer: Any = None,
                         options: ClinicalOptions | None = None, uncertain: str = "yes",
                         context: Any = None) -> pd.DataFrame:
    """AtomiMed-clinical of each (reference, candidate) pair: a DataFrame with ``pair``,
    :data:`~radaudit.atomic.clinical.scoring.CLINICAL_COLUMNS`, ``ok``, ``error`` and ``n_unparseable``; the per-fact
    trace in ``.attrs["trace"]``. ``decomposer``: any decomposer (default:
    :func:`~radaudit.atomic.clinical.decomposer.clinical_decomposer` with ``uncertain``); a pair whose decomposition
    failed (LLM backend) is NaN with ``ok=False``, never scored. ``context``: ``None``, one context for every pair, or
    one per pair (:func:`~radaudit.atomic.clinical.context.check_contexts`)."""
    refs, cands = check_pairs(references, candidates)
    opt = options or ClinicalOptions()
    contexts = check_contexts(context, len(refs))
    dec = decomposer if decomposer is not None else clinical_decomposer(uncertain, opt.rules)
    facts = dec.decompose(refs + cands)
    rows, trace = [], []
    for i, (g, c) in enumerate(zip(facts[: len(refs)], facts[len(refs):])):
        n_unp = g.n_unparseable + c.n_unparseable
        if not (g.ok and c.ok):
            err = "; ".join(f"{side} report: {x.error}" for side, x in (("reference", g), ("candidate", c)) if not x.ok)
            rows.append({"pair": i, **dict.fromkeys(CLINICAL_COLUMNS, math.nan), "ok": False, "error": err,
                         "n_unparseable": n_unp})
            continue
        ctx = contexts[i] if contexts is not None else None
        if opt.rules:
            row, tr = clinical_scores(g.findings, c.findings, opt, context=ctx, reference_denials=_denials(refs[i]),
                                      candidate_denials=_denials(cands[i]))
        else:
            row, tr = clinical_scores(g.findings, c.findings, opt, context=ctx)
        rows.append({"pair": i, **row, "ok": True, "error": "", "n_unparseable": n_unp})
        trace += [{"pair": i, **t} for t in tr]
    frame = pd.DataFrame(rows, columns=["pair", *CLINICAL_COLUMNS, "ok", "error", "n_unparseable"])
    frame.attrs["trace"] = pd.DataFrame(trace, columns=["pair", *TRACE_COLUMNS])
    return frame


@functools.lru_cache(maxsize=4096)
def _denials(text: str) -> tuple[Denial, ...]:
    """The normal statements of a report, read as the clinical decomposer reads it (cached)."""
    return find_denials(clinical_text(text))
