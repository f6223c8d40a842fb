"""Factual-consistency metrics: AtomiMed hierarchical atomic fact-checking (Chang et al., arXiv 2606.31292).

``atomimed`` scores each (reference, candidate) pair with :func:`radaudit.atomic.score_pairs`:
both reports are decomposed into Atomic Clinical Facts (disease-level yes/no facts, Eq. 1, and
location/size/morphology/severity/quantity/temporal facets per finding, Eq. 2), each report's facts
are verified against the other report (GT→INF gives recall, INF→GT precision), Eq. 3 gives
P/R/F1 per level and Eq. 4 combines them with equal weights:

    P = ½ P_dis + ½ P_attr,   R = ½ R_dis + ½ R_attr,   F1 = 2PR / (P + R)

- ``per_sample``: the Eq. 4 F1 of each pair; ``score``: their mean (``aggregate="mean"``).
- ``details``: per-pair arrays ``precision``, ``recall`` (Eq. 4), ``disease_precision``,
  ``disease_recall``, ``disease_f1``, ``attribute_precision``, ``attribute_recall``,
  ``attribute_f1`` (NaN where no attribute question was asked; Eq. 4 then uses the disease level
  alone), ``n_unparseable``; batch values ``n_unparseable_total``, ``backend``, ``theta``; and
  ``trace`` (DataFrame, one row per question: direction, question, expected, found, match,
  evidence sentence) and ``table`` (the full per-pair DataFrame of :func:`score_pairs`).

Options (``build_metric("atomimed", **options)``): ``backend`` ``"rule"`` (default: the text
toolkit, deterministic and offline) or ``"llm"`` with ``generate_fn`` (a ``prompt -> str``
callable, e.g. :func:`radaudit.atomic.greedy_generator`; ``batched=True`` for a list-in/list-out
generator); ``theta`` (fuzzy name threshold, paper 0.8), ``scorer``, ``weight`` (paper 0.5),
``unmentioned``, ``uncertain``, ``max_retries`` (see :func:`radaudit.atomic.score_pairs`).

Edge cases: two reports without any finding (empty, non-English, or "normal chest") score 1, the
paper's rule for true normal studies; ``None``/NaN is a :class:`~radaudit.metrics.base.MetricInputError`.
A pair whose LLM decomposition stays unparseable after repairs and retries is NaN and counted in
``n_undefined`` and ``n_unparseable``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radaudit.metrics.base import MetricResult, MetricSpec, check_pairs, mean_result

__all__ = ["AtomiMedMetric", "make_atomimed", "SPECS"]

_PER_PAIR = ("precision", "recall", "disease_precision", "disease_recall", "disease_f1", "attribute_precision",
             "attribute_recall", "attribute_f1", "n_unparseable")


@dataclass
class AtomiMedMetric:
    """AtomiMed Eq. 4 F1 per pair (module docstring)."""

    backend: str = "rule"
    generate_fn: Callable[..., Any] | None = None
    theta: float = 0.8
    scorer: str = "ratio"
    weight: float = 0.5
    unmentioned: str = "no"
    uncertain: str = "yes"
    batched: bool = False
    max_retries: int = 2
    name: str = field(init=False, default="atomimed")
    _backend: tuple[Any, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from radaudit.atomic.pipeline import _check, make_backend

        _check(self.theta, self.scorer, self.weight, self.unmentioned)
        # built once, so the decomposition cache is shared across compute() calls
        self._backend = make_backend(self.backend, generate_fn=self.generate_fn, batched=self.batched,
                                     max_retries=self.max_retries, theta=self.theta, scorer=self.scorer,
                                     uncertain=self.uncertain)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        from radaudit.atomic.pipeline import score_pairs

        refs, cands = check_pairs(references, candidates)
        dec, rdr = self._backend
        table = score_pairs(refs, cands, self.backend, generate_fn=self.generate_fn, decomposer=dec, reader=rdr,
                            theta=self.theta, scorer=self.scorer, weight=self.weight, unmentioned=self.unmentioned,
                            uncertain=self.uncertain, batched=self.batched, max_retries=self.max_retries)
        details: dict[str, Any] = {k: table[k].to_numpy(dtype=float) for k in _PER_PAIR}
        details.update({"n_unparseable_total": int(table["n_unparseable"].sum()), "backend": self.backend,
                        "theta": self.theta, "trace": table.attrs["trace"], "table": table})
        return mean_result(self.name, np.asarray(table["f1"], dtype=float), details)


def make_atomimed(backend: str = "rule", generate_fn: Callable[..., Any] | None = None, theta: float = 0.8,
                  scorer: str = "ratio", weight: float = 0.5, unmentioned: str = "no", uncertain: str = "yes",
                  batched: bool = False, max_retries: int = 2) -> AtomiMedMetric:
    """The ``atomimed`` metric (module docstring)."""
    return AtomiMedMetric(backend=backend, generate_fn=generate_fn, theta=theta, scorer=scorer, weight=weight,
                          unmentioned=unmentioned, uncertain=uncertain, batched=batched, max_retries=max_retries)


SPECS: list[MetricSpec] = [
    MetricSpec(name="atomimed", label="AtomiMed", factory="radaudit.metrics.factual:make_atomimed", kind="clinical",
               options={"backend": "rule"},
               description=("AtomiMed (Eq. 4 F1): atomic disease/attribute facts verified both ways; "
                            "rule-based backend on the text toolkit by default, LLM backend with generate_fn")),
]
