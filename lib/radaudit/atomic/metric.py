"""The ``atomimed`` metric of the registry (:mod:`radaudit.metrics.factual` lists it): AtomiMed as a
:class:`~radaudit.metrics.base.MetricResult`-returning metric, scoring each (reference, candidate)
pair with :func:`radaudit.atomic.pipeline.score_pairs`; formula, options and edge cases in
:mod:`radaudit.metrics.factual`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radaudit.atomic.pipeline import _check, make_backend, score_pairs
from radaudit.metrics.base import MetricResult, check_pairs, mean_result

__all__ = ["AtomiMedMetric", "make_atomimed"]

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
        _check(self.theta, self.scorer, self.weight, self.unmentioned)
        # built once, so the decomposition cache is shared across compute() calls
        self._backend = make_backend(self.backend, generate_fn=self.generate_fn, batched=self.batched,
                                     max_retries=self.max_retries, theta=self.theta, scorer=self.scorer,
                                     uncertain=self.uncertain)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
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


