"""The rows AtomiMed-clinical writes for a pair (:mod:`radaudit.atomic.clinical`, *Precision / recall / F1*), shared by
both definitions (:mod:`~radaudit.atomic.clinical.scores_issue41`, :mod:`~radaudit.atomic.clinical.scores_before_issue41`):
the pair's score row from its summed weights and credits (:func:`score_row`, :data:`CLINICAL_COLUMNS`), and the trace
rows of a fact (:func:`fact_row`) and of a stated or implied absence scored 0 (:func:`denial_row`), whose keys are
:data:`TRACE_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from radaudit.atomic.schema import Finding
from radaudit.atomic.score import f1

__all__ = ["CLINICAL_COLUMNS", "TRACE_COLUMNS", "denial_row", "fact_row", "score_row"]

#: Per-pair columns of :func:`~radaudit.atomic.clinical.clinical_scores`.
CLINICAL_COLUMNS: tuple[str, ...] = ("precision", "recall", "f1", "w_reference", "w_candidate", "credit_reference",
                                     "credit_candidate", "n_missed", "n_false", "n_paired")

#: The keys of a trace row (:func:`fact_row`, :func:`denial_row`); the batch's trace adds ``pair`` in front.
TRACE_COLUMNS: tuple[str, ...] = ("direction", "finding", "present", "hedged", "other", "relation", "weight", "credit",
                                  "agreement", "facets")


def score_row(sums: Mapping[str, Sequence[float]], kappa: float, missed: int, false: int, n_paired: int
              ) -> dict[str, Any]:
    """The pair's smoothed recall and precision (credit + kappa over weight + kappa, each direction) and F1, with the
    weights, credits and counts they come from: one row of the score table. ``sums``: direction (``"gt->inf"``,
    ``"inf->gt"``) → (summed weight, summed weighted credit).

    >>> row = score_row({"gt->inf": (0.0, 0.0), "inf->gt": (2.0, 0.0)}, 1.0, 0, 1, 0)
    >>> round(row["precision"], 4), row["recall"]         # one false urgent finding: (0 + 1) / (2 + 1)
    (0.3333, 1.0)
    """
    (w_r, c_r), (w_c, c_c) = sums["gt->inf"], sums["inf->gt"]
    recall = (c_r + kappa) / (w_r + kappa)
    precision = (c_c + kappa) / (w_c + kappa)
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall), "w_reference": w_r,
            "w_candidate": w_c, "credit_reference": c_r, "credit_candidate": c_c, "n_missed": missed,
            "n_false": false, "n_paired": n_paired}


def fact_row(direction: str, f: Finding, other: Finding | None, relation: str | None, weight: float, credit: float,
             agreement: float | None = None, facets: dict[str, float] | None = None) -> dict[str, Any]:
    """The trace row of fact ``f`` asked in ``direction``, compared with ``other`` (``None``: not mentioned)."""
    return {"direction": direction, "finding": f.name, "present": f.present, "hedged": f.hedged,
            "other": f"{other.name}: {other.present}" if other is not None else "not mentioned",
            "relation": relation, "weight": weight, "credit": credit, "agreement": agreement,
            "facets": {} if facets is None else facets}


def denial_row(direction: str, finding: str, other: str, relation: str, weight: float) -> dict[str, Any]:
    """The trace row of a stated or implied absence of ``finding`` (a normal statement, a false reassurance) that the
    other report contradicts (``other``): weight ``weight``, credit 0."""
    return {"direction": direction, "finding": finding, "present": "no", "hedged": False, "other": other,
            "relation": relation, "weight": weight, "credit": 0.0, "agreement": None, "facets": {}}
