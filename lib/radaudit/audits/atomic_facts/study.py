"""The atomic_facts experiment's steps as the notebook runs them, after its inputs: score every candidate report of a
reader study with AtomiMed (and its audit trace) and with the baseline metrics.

Paper: Chang et al., AtomiMed (``../shared/papers/002_fa40d23387a3f426.txt``). The reader studies are built by
:mod:`radaudit.audits.atomic_facts.data`, the scorer is :mod:`radaudit.atomic`, the agreement with the radiologists
is :mod:`radaudit.audits.atomic_facts.agreement`; this module runs the expensive step between them:

    study = radpref_study(P.data_root, P.max_cases)                                   # data.py
    ms    = score_study(study.candidates, P.baselines, atomimed=atomimed_options(P))  # this module
    corr  = correlation_table(ms.scores, study, ms.metrics, ...)                      # agreement.py

With ``backend: llm``, :func:`atomimed_options` builds the LLM generator (the model is loaded here).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from radaudit.atomic import calls_of, greedy_generator, make_backend, score_pairs, trace_of
from radaudit.audits.atomic_facts.data import CANDIDATE_COLUMNS
from radaudit.audits.atomic_facts.params import Params
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics import MetricUnavailableError, list_metrics
from radaudit.metrics.score_memo import per_pair_scores

log = logging.getLogger(__name__)

__all__ = ["MetricScores", "atomimed_options", "resolve_baselines", "score_study"]


@dataclass(frozen=True)
class MetricScores:
    """Per-candidate scores. ``scores``: the candidates' key columns (``case_id``, ``candidate``,
    ``system``) plus one column per metric that ran (AtomiMed NaN for a candidate it could not
    score: a report's LLM decomposition failed); ``skipped``: metric → why it could not run;
    ``atomimed``: :func:`radaudit.atomic.score_pairs`' table (one row per candidate, same order,
    with its ``ok``/``error`` and failure/repair counts); ``trace``: its audit trace with
    ``case_id``, ``candidate`` and ``system`` added; ``calls``: the JSON calls per stage
    (:func:`radaudit.atomic.calls_of`; zeros for the rule backend)."""

    scores: pd.DataFrame
    skipped: dict[str, str]
    atomimed: pd.DataFrame
    trace: pd.DataFrame
    metrics: list[str] = field(default_factory=list)
    calls: pd.DataFrame | None = None


def resolve_baselines(names: Sequence[str]) -> list[str]:
    """``["all"]`` → every registered metric but ``atomimed``; otherwise the names, in order, deduplicated."""
    out: list[str] = []
    for n in names:
        out.extend(list_metrics()["name"].tolist() if n == "all" else [n])
    return [n for n in dict.fromkeys(out) if n != "atomimed"]


def atomimed_options(P: Params) -> dict[str, Any]:
    """Keyword arguments of :func:`radaudit.atomic.score_pairs` from the params (builds the LLM generator)."""
    opts: dict[str, Any] = {"theta": P.theta, "scorer": P.scorer, "weight": P.weight, "unmentioned": P.unmentioned,
                            "uncertain": P.uncertain, "backend": P.backend}
    if P.backend == "llm":
        if not P.llm_model:
            raise ParamsError("backend=llm needs llm_model (e.g. Qwen/Qwen3-235B-A22B).")
        fn = greedy_generator(P.llm_model, backend=P.llm_engine, max_new_tokens=P.llm_max_new_tokens,
                              batch_size=P.llm_batch_size, cache=True, dtype=P.llm_dtype, **P.llm_options)
        dec, rdr = make_backend("llm", generate_fn=fn, batched=True, max_retries=P.max_retries, theta=P.theta,
                                scorer=P.scorer, decompose_prompt=P.decompose_prompt, disease_prompt=P.disease_prompt,
                                attribute_prompt=P.attribute_prompt)
        opts.update(decomposer=dec, reader=rdr, generate_fn=fn, batched=True, max_retries=P.max_retries)
    return opts


def score_study(candidates: pd.DataFrame, baselines: Sequence[str] = ("all",), *,
                atomimed: Mapping[str, Any] | None = None,
                metric_options: Mapping[str, Mapping[str, Any]] | None = None, cache: Any = None) -> MetricScores:
    """AtomiMed (with its trace) and every baseline on each candidate report against its reference.

    ``atomimed``: keyword arguments of :func:`radaudit.atomic.score_pairs` (default: rule backend).
    ``baselines``: registry names (``"all"`` expands, :func:`resolve_baselines`); a metric that
    cannot be built or run here (missing package, weights offline) is skipped and its reason kept in
    ``skipped``. ``metric_options``: build options per metric (``{"bertscore": {"model": ...}}``).
    Besides ``atomimed`` (Eq. 4 F1) the table has ``atomimed_disease`` and ``atomimed_attribute``;
    a candidate AtomiMed could not score (``ok`` false in :attr:`MetricScores.atomimed`) is NaN in
    all three, and the agreement analyses leave it out and count it (``n_undefined``). ``cache`` (a folder, ``True``
    for the default one, or ``None``): the lexical and rule-based baselines' per-pair scores are kept there and read
    back on a rerun (:func:`radaudit.metrics.score_memo.per_pair_scores`).
    """
    missing = [c for c in CANDIDATE_COLUMNS if c not in candidates.columns]
    if missing:
        raise RadauditError(f"candidates lacks column(s) {missing}; it needs {list(CANDIDATE_COLUMNS)}.")
    if candidates.empty:
        raise RadauditError("no candidate reports to score (empty table).")
    refs, preds = candidates["reference"].tolist(), candidates["prediction"].tolist()
    table = score_pairs(refs, preds, **dict(atomimed or {}))
    keys = candidates[["case_id", "candidate", "system"]].reset_index(drop=True)
    out = keys.copy()
    scored = table["ok"].to_numpy(dtype=bool)
    for col, src in (("atomimed", "f1"), ("atomimed_disease", "disease_f1"), ("atomimed_attribute", "attribute_f1")):
        out[col] = np.where(scored, table[src].to_numpy(dtype=float), np.nan)  # never a score without a decomposition
    if not scored.all():
        log.warning("AtomiMed could not score %d of %d candidates (a report's decomposition failed): NaN, left out "
                    "of the agreement analyses and counted", int((~scored).sum()), len(scored))
    trace = trace_of(table)
    pos = trace["pair"].to_numpy(dtype=int)
    trace = pd.concat([pd.DataFrame({c: keys[c].to_numpy()[pos] for c in ("case_id", "candidate", "system")}),
                       trace.reset_index(drop=True)], axis=1)
    skipped: dict[str, str] = {}
    ran = ["atomimed", "atomimed_disease", "atomimed_attribute"]
    opts = {k: dict(v) for k, v in (metric_options or {}).items()}
    for name in resolve_baselines(baselines):
        try:
            out[name], _ = per_pair_scores(name, refs, preds, opts.get(name, {}), cache=cache)
        except (MetricUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("baseline %s skipped: %s", name, err)
            continue
        ran.append(name)
    return MetricScores(scores=out, skipped=skipped, atomimed=table, trace=trace.reset_index(drop=True), metrics=ran,
                        calls=calls_of(table))
