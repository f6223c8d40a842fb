"""The CPU dress rehearsal of atomic_facts' paper preset (``radaudit run atomic_facts --preset paper --rehearse``).

:func:`rehearse` turns the preset's parameters into the rehearsal's (tiny twins, invented fixtures, sizes cut); the
runner finds it through the registry (:attr:`radaudit.experiments.Experiment.rehearsal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from radaudit.audits.atomic_facts.params import Params
from radaudit.data.fixtures import write_rexval
from radaudit.errors import ParamsError
from radaudit.models.twins import twin_folder

#: ``llm_options`` keys that only ``vllm.LLM`` takes: a rehearsal on the transformers backend leaves them out.
VLLM_ONLY_OPTIONS = frozenset({"tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
                               "max_model_len", "enforce_eager", "max_num_seqs", "swap_space", "quantization",
                               "enable_prefix_caching", "kv_cache_dtype"})


def rehearse(params: Params, workdir: Path) -> tuple[Params, dict[str, str]]:
    """The paper run on CPU (``radaudit run atomic_facts --preset paper --rehearse``; issue 19).

    Replaced: the decomposer/reader LLM (``llm_model``, paper: Qwen3-235B-A22B) and the ``text_encoder`` when one is
    named, by tiny random-weight twins of the same class (:mod:`radaudit.models.twins`); ReXVal (credentialed; with
    ``dataset=rexval``) by :func:`radaudit.data.fixtures.write_rexval`. RadPref is public and read as it is.
    **vLLM needs a GPU**, so ``llm_engine: vllm`` (``backend: vllm``) becomes the transformers backend on the twin, and
    the ``llm_options`` that only ``vllm.LLM`` takes (``tensor_parallel_size``, ``gpu_memory_utilization``, ...) are left
    out; both are recorded in the returned dict. Both backends render prompts with the same :meth:`Backend.render` (chat
    template, ``enable_thinking=False`` for Qwen3) and vLLM is given exactly those token ids
    (``tests/models/test_generate.py::test_vllm_backend_maps_the_strategies``), so the prompts rehearsed are the paper
    run's. Cut: 4 cases, 20 bootstrap resamples, 16-token answers. Everything else (backend, θ, scorer, weights, batch
    size, retries, prompts, baselines) is the preset's.

    The twin's replies are noise: every decomposition is unparseable, counted (``atomimed_failures``), and no
    candidate gets an AtomiMed score (NaN, left out of the agreement and counted, never read as a perfect match);
    the baselines and every table and figure are still produced. Returns ``(params, rehearsal)``: ``rehearsal``
    maps each model id to its twin's class and each replaced input or setting to what replaced it.
    """
    workdir = Path(workdir)
    if params.backend != "llm" and params.dataset == "radpref" and not params.text_encoder:
        raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                          "(run it as it is).")
    rehearsal: dict[str, str] = {}
    update: dict[str, Any] = {"n_bootstrap": 20, "max_cases": min(params.max_cases or 4, 4),
                              "llm_max_new_tokens": min(params.llm_max_new_tokens, 16)}
    if params.dataset == "rexval":
        update["dataset_path"] = str(write_rexval(workdir / "data" / "rexval", n_studies=12))
        rehearsal["dataset_path"] = "invented ReXVal fixture (12 studies)"
    if params.backend == "llm":
        if not params.llm_model:
            raise ParamsError("backend=llm needs llm_model (e.g. Qwen/Qwen3-235B-A22B).")
        folder, cls = twin_folder(params.llm_model, workdir / "twins")
        update["llm_model"] = str(folder)
        rehearsal[params.llm_model] = cls
        if params.llm_engine == "vllm":
            update["llm_engine"] = "transformers"
            update["llm_options"] = {k: v for k, v in params.llm_options.items() if k not in VLLM_ONLY_OPTIONS}
            rehearsal["llm_engine"] = "vllm -> transformers (vLLM needs a GPU)"
            dropped = sorted(set(params.llm_options) - set(update["llm_options"]))
            if dropped:
                rehearsal["llm_options"] = f"{', '.join(dropped)} left out (vllm.LLM options)"
    if params.text_encoder:
        folder, cls = twin_folder(params.text_encoder, workdir / "twins")
        update["text_encoder"] = str(folder)
        rehearsal[params.text_encoder] = cls
    return params.model_copy(update=update), rehearsal
