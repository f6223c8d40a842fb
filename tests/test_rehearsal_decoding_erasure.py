"""``radaudit run decoding_erasure --preset paper --rehearse`` (issue 19): the paper's code path on CPU with the tiny
Qwen3-VL twin, a random LoRA adapter in place of the ReX-BB fine-tune and an invented ReXGradient-160K. Select with
``-m rehearsal``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import run_experiment

pytestmark = [pytest.mark.rehearsal, pytest.mark.usefixtures("rehearsal_cache")]


@pytest.mark.long
def test_decoding_erasure_paper_rehearsal_runs_the_vlm_adapter_path(tmp_path):
    res = run_experiment("decoding_erasure", "paper", out=tmp_path, progress=False, rehearse=True)
    m = json.loads((res.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and res.run_dir.name.endswith("_rehearsal")
    assert set(m["rehearsal"]) == {"Qwen/Qwen3-VL-8B-Instruct", "report_adapter"}
    assert m["rehearsal"]["Qwen/Qwen3-VL-8B-Instruct"] == "Qwen3VLForConditionalGeneration"
    assert m["rehearsal"]["report_adapter"].startswith("a random LoRA adapter of the twin")
    p = m["params"]
    # the paper's settings are kept: dtype, batch size, the six strategies, the 512 px resize, the test split
    assert (p["model_dtype"], p["batch_size"], p["image_size"], p["eval_split"]) == ("bf16", 16, 512, "test")
    strategies = ["greedy", "beam4", "conservative", "rich", "topk50", "nucleus"]
    assert p["strategies"] == strategies and p["n_reports"] == 12
    assert m["recorded"]["report_model"].endswith(" + " + p["report_adapter"])  # the adapter was applied
    # every strategy wrote every report (strategies x reports), none empty
    summary = pd.read_csv(res.run_dir / "tables" / "generation_summary.csv")
    assert summary["strategy"].tolist() == strategies
    assert (summary["reports"] == 12).all() and (summary["empty"] == 0).all()
    table1 = pd.read_csv(res.run_dir / "tables" / "table1_long.csv")
    per_corpus = table1.groupby("corpus", sort=False).size()
    assert [c for c in per_corpus.index if c != "Ref."] == strategies  # Table 1: every metric for every strategy
    assert per_corpus.drop("Ref.").nunique() == 1 and per_corpus["greedy"] > per_corpus["Ref."]  # + the refs' diversity
    # Fig. 2c: skew_models is {} in the preset, so it is reported as not run, with the reason
    findings = json.loads((res.run_dir / "findings.json").read_text())
    skew = next(f for f in findings["findings"] if f["id"] == "skew_study")
    assert skew["note"].startswith("not run: No model for training skew(s) 0.67, 0.5, 0.33 in skew_models")
    assert not (res.run_dir / "tables" / "fig2c_skew_sensitivity.csv").exists()
