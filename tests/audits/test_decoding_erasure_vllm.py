"""decoding_erasure's paper path on vLLM (issue 23): the report writer with its LoRA adapter served through vLLM's
LoRA support gets the transformers path's prompts, resized images and seeds, and shares its cache entries, so a
run resumes across engines. vLLM is the recorder of ``tests/fake_vllm.py``; the model is the Qwen3-VL twin."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

import fake_vllm
from radaudit.audits import decoding_erasure as de
from radaudit.audits.decoding_erasure import data as ded
from radaudit.audits.decoding_erasure import study as st
from radaudit.audits.decoding_erasure.rehearsal import rehearse
from radaudit.config import resolve_params
from radaudit.paths import params_dir

# found, not imported: importing peft takes ~4 s, which every pytest-xdist worker would pay while collecting
for _pkg in ("transformers", "peft"):
    if importlib.util.find_spec(_pkg) is None:
        pytest.skip(f"needs {_pkg} (pip install -e '.[models]')", allow_module_level=True)


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory):
    """The paper params rehearsed (twin, random LoRA adapter, ReXGradient fixture), cut to 4 reports x 2 strategies."""
    paper = resolve_params(de.Params, params_dir(), "decoding_erasure", "paper", ["backend=vllm"])
    params, rehearsal = rehearse(paper, tmp_path_factory.mktemp("de_vllm"))
    assert params.backend == "hf" and rehearsal["backend"].startswith("vllm -> hf")
    return params.model_copy(update={"n_reports": 4, "max_new_tokens": 3, "image_size": 64,
                                     "strategies": ["greedy", next(s for s in params.strategies if s.startswith("t"))]})


def test_vllm_reports_use_the_same_prompts_images_seeds_and_cache(rehearsed, tmp_path, monkeypatch):
    P = rehearsed
    hf = st.study_generations(P, cache=tmp_path / "cache")
    rec = fake_vllm.install_vlm(monkeypatch)
    vP = P.model_copy(update={"backend": "vllm"})
    resumed = st.study_generations(vP, cache=tmp_path / "cache")
    assert rec.n_requests == 0  # every report came from the transformers run's cache entries
    pd.testing.assert_frame_equal(resumed, hf)

    fresh = st.study_generations(vP, cache=tmp_path / "fresh")
    assert rec.n_requests == len(hf) == len(fresh)  # one request per report and strategy
    init = rec.init_calls[0]
    assert init["enable_lora"] is True and init["max_lora_rank"] == 16 and init["dtype"] == "bfloat16"
    assert all(c.lora_request.lora_path == P.report_adapter for c in rec.generate_calls)

    from radaudit.models.vlm import load_vlm_processor, render_prompt

    processor = load_vlm_processor(P.report_model)
    studies = ded.image_studies(P)
    n = len(studies)
    greedy_reqs = rec.prompts[:n]
    assert [r["prompt"] for r in greedy_reqs] == [render_prompt(processor, p, "image") for p in hf["prompt"][:n]]
    assert all(r["multi_modal_data"]["image"].size == (64, 64) for r in greedy_reqs)  # image_size, as transformers
    sampled = rec.params[n:]
    assert [p.kw["seed"] for p in sampled] == st.report_seeds(P.seed, studies["study_id"].tolist())
    assert all(p.kw["temperature"] > 0 for p in sampled) and all(p.kw["temperature"] == 0 for p in rec.params[:n])
