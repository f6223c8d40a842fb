"""The ``atomimed`` metric of the registry (:mod:`radaudit.metrics.factual` lists it): AtomiMed as a
:class:`~radaudit.metrics.base.MetricResult`-returning metric, scoring each (reference, candidate)
pair with :func:`radaudit.atomic.pipeline.score_pairs`; formula, options and edge cases in
:mod:`radaudit.metrics.factual`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radaudit.atomic.clinical import ClinicalOptions, clinical_decomposer, load_significance, score_pairs_clinical
from radaudit.atomic.pipeline import check_options, make_backend, score_pairs
from radaudit.metrics.base import MetricResult, check_pairs, mean_result
from radaudit.text.language import count_non_english

__all__ = ["AtomiMedMetric", "make_atomimed", "AtomiMedClinicalMetric", "make_atomimed_clinical"]

_PER_PAIR = ("precision", "recall", "disease_precision", "disease_recall", "disease_f1", "attribute_precision",
             "attribute_recall", "attribute_f1", "n_unparseable")


def _language_counts(refs: Sequence[str], cands: Sequence[str]) -> dict[str, int]:
    """How many references / candidates look non-English (:mod:`radaudit.text.language`): the rule
    backend finds no English finding in them, so they score as normal studies — counted, not hidden."""
    return {"n_non_english_reference": count_non_english(refs), "n_non_english_candidate": count_non_english(cands)}


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
        check_options(self.theta, self.scorer, self.weight, self.unmentioned)
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
        details.update({"n_unparseable_total": int(table["n_unparseable"].sum()),
                        "n_repaired_total": int(table["n_repaired"].sum()),
                        "n_not_scored": int((~table["ok"]).sum()), "backend": self.backend,
                        "theta": self.theta, "trace": table.attrs["trace"], "calls": table.attrs["calls"],
                        "table": table, **_language_counts(refs, cands)})
        return mean_result(self.name, np.asarray(table["f1"], dtype=float), details)


def make_atomimed(backend: str = "rule", generate_fn: Callable[..., Any] | None = None, theta: float = 0.8,
                  scorer: str = "ratio", weight: float = 0.5, unmentioned: str = "no", uncertain: str = "yes",
                  batched: bool = False, max_retries: int = 2) -> AtomiMedMetric:
    """The ``atomimed`` metric (module docstring)."""
    return AtomiMedMetric(backend=backend, generate_fn=generate_fn, theta=theta, scorer=scorer, weight=weight,
                          unmentioned=unmentioned, uncertain=uncertain, batched=batched, max_retries=max_retries)




@dataclass
class AtomiMedClinicalMetric:
    """AtomiMed-clinical F1 per pair (:mod:`radaudit.atomic.clinical`; not the paper's definition).

    Same decompositions as ``atomimed`` (``backend`` ``"rule"`` or ``"llm"`` with ``generate_fn``);
    ``kappa``, ``alpha``, ``negative_weight``, ``hedge_factor``, ``theta``, ``scorer``,
    ``significance`` (a table path, ``None`` = the shipped one) and ``rules`` (the issue-41 ladder, concept table,
    critical findings; ``False``: the definition before issue 41) as in
    :class:`~radaudit.atomic.clinical.ClinicalOptions`. The rule backend reads the clinical vocabulary
    (:func:`~radaudit.atomic.clinical.clinical_decomposer`).

    ``compute(references, candidates, context=None)``: ``context`` is ``None``, one mapping for every pair or a
    list with one mapping (or ``None``) per pair, keys ``age``, ``sex``, ``indication``, ``history``
    (:data:`~radaudit.atomic.concepts.CONTEXT_KEYS`); the context rules (``clinical_context.yaml``) scale the
    weights of the findings they name. Without a context the scores are those of a call without it."""

    backend: str = "rule"
    generate_fn: Callable[..., Any] | None = None
    theta: float = 0.8
    scorer: str = "ratio"
    kappa: float = 1.0
    alpha: float = 0.5
    negative_weight: float = 0.25
    hedge_factor: float = 0.75
    significance: str | None = None
    uncertain: str = "yes"
    batched: bool = False
    max_retries: int = 2
    rules: bool = True
    name: str = field(init=False, default="atomimed_clinical")
    _decomposer: Any = field(init=False, repr=False)
    _options: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_options(self.theta, self.scorer, 0.5, "no")
        self._options = ClinicalOptions(kappa=self.kappa, alpha=self.alpha, negative_weight=self.negative_weight,
                                        hedge_factor=self.hedge_factor, theta=self.theta, scorer=self.scorer,
                                        significance=load_significance(self.significance), rules=self.rules)
        if self.backend == "rule":
            self._decomposer = clinical_decomposer(self.uncertain, self.rules)
        else:
            self._decomposer = make_backend(self.backend, generate_fn=self.generate_fn, batched=self.batched,
                                            max_retries=self.max_retries, theta=self.theta, scorer=self.scorer,
                                            uncertain=self.uncertain)[0]

    def compute(self, references: Sequence[str], candidates: Sequence[str], context: Any = None) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        table = score_pairs_clinical(refs, cands, decomposer=self._decomposer, options=self._options, context=context)
        details: dict[str, Any] = {k: table[k].to_numpy(dtype=float) for k in ("precision", "recall", "n_missed",
                                                                               "n_false", "n_unparseable")}
        details.update({"n_not_scored": int((~table["ok"]).sum()), "backend": self.backend, "variant": "clinical",
                        "significance": self._options.significance.source, "trace": table.attrs["trace"],
                        "table": table, **_language_counts(refs, cands)})
        return mean_result(self.name, np.asarray(table["f1"], dtype=float), details)


def make_atomimed_clinical(backend: str = "rule", generate_fn: Callable[..., Any] | None = None, theta: float = 0.8,
                           scorer: str = "ratio", kappa: float = 1.0, alpha: float = 0.5, negative_weight: float = 0.25,
                           hedge_factor: float = 0.75, significance: str | None = None, uncertain: str = "yes",
                           batched: bool = False, max_retries: int = 2, rules: bool = True) -> AtomiMedClinicalMetric:
    """The ``atomimed_clinical`` metric (:class:`AtomiMedClinicalMetric`)."""
    return AtomiMedClinicalMetric(backend=backend, generate_fn=generate_fn, theta=theta, scorer=scorer, kappa=kappa,
                                  alpha=alpha, negative_weight=negative_weight, hedge_factor=hedge_factor,
                                  significance=significance, uncertain=uncertain, batched=batched,
                                  max_retries=max_retries, rules=rules)
