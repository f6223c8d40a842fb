"""The GT-ME pair datasets of metric_metaeval: the rewriting engine, the rule/LLM rewrites, examples."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pandas as pd

from radaudit.audits.metric_metaeval.params import Params
from radaudit.data import chexpert_phrases_dir, fingerprint, load_dataset
from radaudit.perturb.dataset import build_monotonicity_set, build_pair_dataset, gt_reports
from radaudit.perturb.llm import DEFAULT_TEMPLATE, LLMEngine, generator_from_model
from radaudit.text.labeler import ChexpertLabeler

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# building the data


def make_engine(P: Params, cache: Any = True) -> Any:
    """``"rules"`` or an :class:`~radaudit.perturb.llm.LLMEngine` on ``P.llm_model`` (paper preset), generating
    with ``P.backend`` (hf | vllm: the same prompts and cache entries either way)."""
    if P.engine == "rules":
        return "rules"

    gen = generator_from_model(P.llm_model, strategy=P.llm_strategy, max_new_tokens=P.llm_max_new_tokens, seed=P.seed,
                               batch_size=P.llm_batch_size, cache=cache, dtype=P.llm_dtype, backend=P.backend)
    return LLMEngine(gen, template=P.llm_prompt_template or DEFAULT_TEMPLATE, batched=True, model=P.llm_model,
                     batch_hint=P.llm_batch_size)


@dataclass
class MetaevalData:
    """The run's data: ``pairs`` (the balanced pair dataset), ``mono`` (the monotonicity set),
    ``full`` (the same rewrites kept whole, for the context ablation; ``None`` when not asked),
    ``reports`` (the GT reports drawn from)."""

    pairs: Any
    mono: Any
    full: Any
    reports: pd.DataFrame


def build_datasets(P: Params, *, engine: Any = None, labeler: Any = None) -> MetaevalData:
    """The pair dataset, the monotonicity set and (for the context ablation) the same rewrites with full
    context, for the params (see :mod:`radaudit.perturb.dataset`). The monotonicity set is rule-based
    with either engine (its groups are defined by rules)."""
    frames, prov = [], {}
    for name in P.datasets:
        path = P.dataset_paths.get(name)
        df = gt_reports(load_dataset(name, P.data_root, path=path), text_field=P.text_field, source=name)
        frames.append(df)
        prov[name] = {"fingerprint": fingerprint(name, P.data_root, path), "n_reports": int(len(df)),
                      "text_field": P.text_field}
    reports = pd.concat(frames, ignore_index=True)
    lab = labeler if labeler is not None else ChexpertLabeler(chexpert_phrases_dir(P.data_root))
    eng = engine if engine is not None else make_engine(P)
    kw = dict(n_per_cell=P.n_per_cell, seed=P.seed, labeler=lab, sources=prov,
              max_tasks_per_cell=P.llm_max_tasks_per_cell if P.engine == "llm" else None)
    pairs = build_pair_dataset(reports, eng, context=P.context, **kw)
    full = build_pair_dataset(reports, eng, context="full", **kw) if P.context_ablation and P.context == "paper" else None
    mono = build_monotonicity_set(reports, seed=P.seed, n_reports=P.n_monotonicity_reports, labeler=lab,
                                  min_sentences=P.monotonicity_min_sentences, sources=prov)
    return MetaevalData(pairs, mono, full, reports)


EXAMPLE_COLUMNS = ["aspect", "significance", "error_type", "GT (edited part)", "ME (edited part)", "explanation"]


def examples_table(pairs: pd.DataFrame, n: int = 1) -> pd.DataFrame:
    """``n`` pairs per aspect x significance: the edited GT text, the ME text and the explanation
    (:data:`EXAMPLE_COLUMNS`; no rows when there are no pairs, e.g. every LLM rewrite was rejected)."""
    rows = []
    for (a, s), g in pairs.groupby(["aspect", "significance"], sort=False):
        for r in g.head(n).itertuples(index=False):
            rows.append({"aspect": a, "significance": s, "error_type": r.error_type, "GT (edited part)": r.gt_edit_text,
                         "ME (edited part)": r.me_edit_text, "explanation": r.explanation})
    return pd.DataFrame(rows, columns=EXAMPLE_COLUMNS)
