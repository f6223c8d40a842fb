"""modality_shift's ``backend: hf | vllm`` (issue 23): accepted from ``-p`` (``transformers`` reads as hf), refused
for the demo stand-in (vLLM cannot serve it) and for unknown names with what to write, rehearsed on CPU as hf
(recorded), and routing the answers and first-token scores, not the attention, through vLLM."""

from __future__ import annotations

import pandas as pd
import pytest

import fake_vllm
from radaudit.audits import modality_shift as ms
from radaudit.config import resolve_params
from radaudit.errors import ParamsError
from radaudit.experiments import EXPERIMENTS
from radaudit.paths import params_dir


def params(preset: str, *overrides: str) -> ms.Params:
    return resolve_params(EXPERIMENTS.lookup("modality_shift").params_model(), params_dir(), "modality_shift", preset,
                          list(overrides))


def test_backend_param_spellings_and_errors():
    assert params("demo").backend == "hf"
    assert params("demo", "backend=transformers").backend == "hf"
    paper = params("paper", "backend=vllm")  # hub VLMs: accepted
    assert paper.backend == "vllm" and params("paper", "backend=VLLM").backend == "vllm"
    with pytest.raises(ParamsError, match=r"backend must be 'hf' .* or 'vllm'.*got 'bogus'"):
        params("demo", "backend=bogus")
    with pytest.raises(ParamsError, match=r"backend vllm cannot serve 'demo tiny LLaVA'.*demo stand-in.*backend: hf"):
        params("demo", "backend=vllm")
    with pytest.raises(ParamsError, match="cannot serve"):
        params("smoke", "backend=vllm")


def test_rehearsal_runs_backend_vllm_as_hf_and_records_it(tmp_path):
    from radaudit.audits.modality_shift.rehearsal import rehearse

    rehearsed, rehearsal = rehearse(params("paper", "backend=vllm"), tmp_path)
    assert rehearsed.backend == "hf" and rehearsal["backend"] == "vllm -> hf (vLLM needs a GPU)"
    assert all(m.device == "cpu" for m in rehearsed.models)


def test_load_engine_routes_answers_to_vllm_and_attention_stays_on_transformers(tmp_path, monkeypatch):
    from radaudit.models.vlm_vllm import VLLMVision
    from tiny_vlms import BUILDERS

    folder = str(BUILDERS["llava"](tmp_path / "llava"))
    spec = ms.ModelSpec(name="twin", model=folder, batch_size=4, dtype="bf16")
    p = params("paper", "backend=vllm")
    rec = fake_vllm.install_vlm(monkeypatch, respond=lambda prompt, sp: fake_vllm.Canned(
        [5, fake_vllm.EOS_ID], "stop",
        [{t: fake_vllm.Logprob(-1.0 - i) for i, t in enumerate(sp.logprob_token_ids)} | {5: fake_vllm.Logprob(-0.5)},
         {fake_vllm.EOS_ID: fake_vllm.Logprob(-0.1)}]))
    processor, engine, where = ms.load_engine(spec, p)
    assert isinstance(engine, VLLMVision) and where == folder and engine.batch_size == 256
    assert engine.dtype_name == "bfloat16"
    _, hf_model, _ = ms.load_model(spec, p)  # the attention path: transformers whatever the backend
    assert not isinstance(hf_model, VLLMVision) and type(hf_model).__name__ == "LlavaForConditionalGeneration"

    items = pd.DataFrame({"sample_id": ["a", "b"], "patient_id": ["1", "2"], "condition": ["no_shift", "only_text"],
                          "label": [1, 0], "image_path": [None, None], "prompt": ["Is it COVID-19?", "Answer yes or no."]})
    out = ms.run_conditions(processor, engine, items, model_name="twin", max_new_tokens=2)
    assert rec.n_requests == 2 and out["engine"].tolist() == ["vllm", "vllm"]
    assert out["logit_Yes"].isna().all() and out["logprob_Yes"].notna().all()
    assert out["p_yes"].between(0, 1).all() and not out["cached"].any()

    demo = p.model_copy(update={"models": [ms.ModelSpec(name="demo", model=ms.DEMO_MODEL)]})  # skips the validator
    with pytest.raises(ParamsError, match="backend vllm cannot serve 'demo'"):
        ms.load_engine(demo.models[0], demo)
    assert len(rec.init_calls) == 1 and rec.init_calls[0]["dtype"] == "bfloat16"  # one engine, the spec's dtype
