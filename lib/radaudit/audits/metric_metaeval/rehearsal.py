"""The CPU dress rehearsal of metric_metaeval's paper preset (``radaudit run metric_metaeval --preset paper --rehearse``).

:func:`rehearse` turns the preset's parameters into the rehearsal's (tiny twins, invented fixtures, sizes cut); the
runner finds it through the registry (:attr:`radaudit.experiments.Experiment.rehearsal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from radaudit.audits.metric_metaeval.params import Params
from radaudit.data.fixtures import write_mimic_cxr, write_rexval
from radaudit.errors import ParamsError
from radaudit.metrics.embedding import MODEL2LAYERS
from radaudit.models.twins import twin_folder


def rehearse(params: Params, workdir: Path) -> tuple[Params, dict[str, str]]:
    """The paper run on CPU (``radaudit run metric_metaeval --preset paper --rehearse``; issue 19).

    Replaced: the rewriting LLM (``llm_model``) and every metric backbone of ``metric_options`` (BERTScore's
    roberta-large) by tiny random-weight twins of the same class (:mod:`radaudit.models.twins`); MIMIC-CXR by the
    invented fixture of :func:`radaudit.data.fixtures.write_mimic_cxr` (16 studies, reports in the real
    ``files/pXX/p<subject>/s<study>.txt`` layout); ReXVal by :func:`radaudit.data.fixtures.write_rexval` (12
    studies x 4 candidates x 6 raters), so Table 1's ReXVal code path runs even where the preset's
    ``rexval_path`` is null. A BERTScore backbone twin is read at the layer the paper run uses by default
    (bert-score's tuned layer for the hub id, 17 for roberta-large: a local twin folder has no hub id to look
    it up by). Cut: one pair per Table 2 cell, one GT report tried per cell, two monotonicity reports (of at
    least one sentence: the fixture's findings are one sentence long), 20 bootstrap resamples, 16 new tokens.
    **vLLM needs a GPU**, so with ``engine: llm``, ``backend: vllm`` runs as ``hf`` (transformers) on the twin, recorded
    as ``rehearsal["backend"]``; both engines are given the same prompts
    (``tests/models/test_backends_equal_prompts.py``). Everything else is the preset's: engine, decoding strategy, dtype,
    batch size, context design, averages.

    The twin's rewrites are noise: each is an unparseable reply, counted and kept as a rejected pair
    (``pair_dataset_fill``, ``pairs_dataset/rejected.parquet``), and every table downstream is built from the
    pairs that remain (the rule-based monotonicity set). Returns ``(params, rehearsal)``: ``rehearsal`` maps
    each model id to its twin's class and each replaced input to what replaced it.
    """
    workdir = Path(workdir)
    credentialed = [d for d in params.datasets if d in ("mimic_cxr", "chexpert_plus", "rexgradient")]
    backbones = {m: o["model"] for m, o in sorted(params.metric_options.items()) if isinstance(o, dict) and o.get("model")}
    if params.engine != "llm" and not credentialed and not backbones and not params.rexval_path:
        raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                          "(run it as it is).")
    unknown = [d for d in credentialed if d != "mimic_cxr"]
    if unknown:
        raise ParamsError(f"No rehearsal fixture for dataset(s) {unknown} yet; rehearse with datasets: [mimic_cxr].")
    rehearsal: dict[str, str] = {}
    update: dict[str, Any] = {"n_bootstrap": 20, "n_per_cell": 1, "n_monotonicity_reports": 2,
                              "monotonicity_min_sentences": 1, "llm_max_tasks_per_cell": 1,
                              "llm_max_new_tokens": min(params.llm_max_new_tokens, 16)}
    if credentialed:
        mimic = write_mimic_cxr(workdir / "data" / "mimic_cxr", n_studies=16)
        update["dataset_paths"] = {**params.dataset_paths, "mimic_cxr": str(mimic)}
        rehearsal["dataset_paths.mimic_cxr"] = "invented MIMIC-CXR fixture (16 studies)"
    update["rexval_path"] = str(write_rexval(workdir / "data" / "rexval", n_studies=12))
    rehearsal["rexval_path"] = (f"{params.rexval_path or 'null'} -> invented ReXVal fixture (12 studies): Table 1's "
                                "ReXVal code path runs")
    if params.engine == "llm":
        folder, cls = twin_folder(params.llm_model, workdir / "twins")
        update["llm_model"] = str(folder)
        rehearsal[params.llm_model] = cls
        if params.backend == "vllm":
            update["backend"] = "hf"
            rehearsal["backend"] = "vllm -> hf (vLLM needs a GPU)"
    options = {m: dict(o) for m, o in params.metric_options.items()}
    for metric, spec in backbones.items():
        folder, cls = twin_folder(spec, workdir / "twins")
        options[metric]["model"] = str(folder)
        if metric == "bertscore" and "num_layers" not in options[metric] and spec in MODEL2LAYERS:
            options[metric]["num_layers"] = MODEL2LAYERS[spec]
            rehearsal[f"metric_options.{metric}.num_layers"] = f"{MODEL2LAYERS[spec]} (bert-score's layer for {spec})"
        rehearsal[spec] = cls
    update["metric_options"] = options
    return params.model_copy(update=update), rehearsal
