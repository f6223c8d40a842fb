"""The one ``backend: hf | vllm`` param of the text-generation experiments (issue 23): accepted from ``-p``,
spelled ``transformers`` too, refused with a message that says what to write, and rehearsed on CPU as ``hf``
(vLLM needs a GPU), recorded in the rehearsal dict."""

from __future__ import annotations

import pytest

from radaudit.config import resolve_params
from radaudit.errors import ParamsError
from radaudit.experiments import EXPERIMENTS
from radaudit.paths import params_dir


def params(experiment: str, preset: str, *overrides: str):
    return resolve_params(EXPERIMENTS.lookup(experiment).params_model(), params_dir(), experiment, preset,
                          list(overrides))


def rehearse(experiment: str, p, workdir):
    """The experiment's rehearsal (its registry entry's ``rehearsal`` function) of the parameters ``p``."""
    return EXPERIMENTS.lookup(experiment).rehearsal_function()(p, workdir)


@pytest.mark.parametrize("experiment", ["decoding_erasure", "metric_metaeval"])
def test_backend_param_accepts_hf_vllm_and_the_transformers_spelling(experiment):
    assert params(experiment, "demo").backend == "hf"
    assert params(experiment, "demo", "backend=vllm").backend == "vllm"
    assert params(experiment, "demo", "backend=transformers").backend == "hf"
    assert params(experiment, "demo", "backend=VLLM").backend == "vllm"
    with pytest.raises(ParamsError, match=r"'backend'.*backend must be 'hf' .* or 'vllm'.*got 'bogus'"):
        params(experiment, "demo", "backend=bogus")


def test_atomic_facts_backend_vllm_is_the_llm_backend_on_vllm():
    p = params("atomic_facts", "demo", "backend=vllm", "llm_model=some/model")
    assert (p.backend, p.llm_engine) == ("llm", "vllm")
    # the demo preset holds llm_engine: transformers; the one-param spelling wins over it
    p = params("atomic_facts", "paper", "backend=hf")
    assert (p.backend, p.llm_engine, p.llm_model) == ("llm", "transformers", "Qwen/Qwen3-235B-A22B")
    assert params("atomic_facts", "paper", "backend=transformers").llm_engine == "transformers"
    # the longer spelling keeps working, with hf as the engine's alias
    p = params("atomic_facts", "demo", "backend=llm", "llm_engine=hf")
    assert (p.backend, p.llm_engine) == ("llm", "transformers")
    assert params("atomic_facts", "paper").llm_engine == "vllm" and params("atomic_facts", "demo").backend == "rule"
    with pytest.raises(ParamsError, match=r"backend must be rule, llm, or hf \| vllm.*got 'bogus'"):
        params("atomic_facts", "demo", "backend=bogus")
    with pytest.raises(ParamsError, match="needs llm_model"):
        params("atomic_facts", "demo", "backend=vllm").preflight()


def test_atomic_facts_rehearsal_runs_backend_vllm_on_transformers(tmp_path):
    p = params("atomic_facts", "paper", "backend=vllm", "llm_options={tensor_parallel_size: 8, max_num_seqs: 4}")
    rehearsed, rehearsal = rehearse("atomic_facts", p, tmp_path)
    assert (rehearsed.backend, rehearsed.llm_engine, rehearsed.llm_options) == ("llm", "transformers", {})
    assert rehearsal["llm_engine"] == "vllm -> transformers (vLLM needs a GPU)"
    assert rehearsal["llm_options"] == "max_num_seqs, tensor_parallel_size left out (vllm.LLM options)"
    assert rehearsed.llm_dtype == "bf16"  # the paper's dtype is kept
    _, plain = rehearse("atomic_facts", params("atomic_facts", "paper", "backend=hf"), tmp_path)
    assert "llm_engine" not in plain


def test_metric_metaeval_rehearsal_runs_backend_vllm_as_hf(tmp_path):
    rehearsed, rehearsal = rehearse("metric_metaeval", params("metric_metaeval", "paper", "backend=vllm"), tmp_path)
    assert rehearsed.backend == "hf" and rehearsal["backend"] == "vllm -> hf (vLLM needs a GPU)"
    assert rehearsed.engine == "llm" and rehearsed.llm_dtype == "bf16"
    rehearsed, rehearsal = rehearse("metric_metaeval", params("metric_metaeval", "paper"), tmp_path)
    assert rehearsed.backend == "hf" and "backend" not in rehearsal


def test_decoding_erasure_rehearsal_runs_backend_vllm_as_hf(tmp_path):
    pytest.importorskip("peft")
    rehearsed, rehearsal = rehearse("decoding_erasure", params("decoding_erasure", "paper", "backend=vllm"), tmp_path)
    assert rehearsed.backend == "hf" and rehearsal["backend"] == "vllm -> hf (vLLM needs a GPU)"
    assert rehearsed.model_dtype == "bf16"
