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
  alone), ``n_unparseable``; batch values ``n_unparseable_total``, ``n_repaired_total``,
  ``n_not_scored`` (pairs whose decomposition failed), ``backend``, ``theta``; and ``trace``
  (DataFrame, one row per question: direction, question, expected, found, match, evidence
  sentence), ``calls`` (JSON calls per stage: ok, repaired, retried, failed; zeros for the rule
  backend) and ``table`` (the full per-pair DataFrame of :func:`score_pairs`).

Options (``build_metric("atomimed", **options)``): ``backend`` ``"rule"`` (default: the text
toolkit, deterministic and offline) or ``"llm"`` with ``generate_fn`` (a ``prompt -> str``
callable, e.g. :func:`radaudit.atomic.greedy_generator`; ``batched=True`` for a list-in/list-out
generator); ``theta`` (fuzzy name threshold, paper 0.8), ``scorer``, ``weight`` (paper 0.5),
``unmentioned``, ``uncertain``, ``max_retries`` (see :func:`radaudit.atomic.score_pairs`).

Edge cases: two reports without any finding (empty, non-English, or "normal chest") score 1, the
paper's rule for true normal studies; ``None``/NaN is a :class:`~radaudit.metrics.base.MetricInputError`.
A pair whose LLM decomposition stays unparseable after repairs and retries (the JSON schema is
strict: a reply that is not ``{"findings": [...]}`` fails) is never scored: NaN, counted in
``n_undefined``, ``n_not_scored`` and ``n_unparseable``, and left out of ``score``.

``atomimed_clinical`` (ours, **not the paper's metric**): the same decompositions scored so that
candidates are ordered as a radiologist orders them: each fact weighted by clinical significance
(four tiers after the ACR actionable-findings categories, ``radaudit/resources/clinical_significance.yaml``),
graded attribute distances (ordinal severity, size ratio, lobe vs side), an omitted detail half an
error and a correct extra detail no error, and smoothed precision/recall ``(credit + κ) / (weight + κ)``
so one false finding and four false findings do not tie at 0. Definition and choices:
:mod:`radaudit.atomic.clinical`; options ``kappa``, ``alpha``, ``negative_weight``, ``hedge_factor``,
``significance`` (a table path) besides ``backend``/``theta``/``scorer``.

Both count the reports that look non-English (``details["n_non_english_reference"]``,
``["n_non_english_candidate"]``, :mod:`radaudit.text.language`): the rule backend reads no finding in
them, so they score as normal studies; the count says how many did.
"""

from __future__ import annotations

from radaudit.metrics.base import MetricSpec

__all__ = ["SPECS"]

#: The metric lives in :mod:`radaudit.atomic.metric` (the AtomiMed package, one layer above the metric
#: registry); the registry names its factory by string and imports it on first use.
SPECS: list[MetricSpec] = [
    MetricSpec(name="atomimed", label="AtomiMed", factory="radaudit.atomic.metric:make_atomimed", kind="clinical",
               options={"backend": "rule"},
               description=("AtomiMed (Eq. 4 F1): atomic disease/attribute facts verified both ways; "
                            "rule-based backend on the text toolkit by default, LLM backend with generate_fn")),
    MetricSpec(name="atomimed_clinical", label="AtomiMed-clinical (ours)",
               factory="radaudit.atomic.metric:make_atomimed_clinical", kind="clinical", options={"backend": "rule"},
               description=("AtomiMed-clinical (NOT the paper's): the same atomic facts weighted by clinical "
                            "significance, graded attribute distances, smoothed so false findings still count")),
]
