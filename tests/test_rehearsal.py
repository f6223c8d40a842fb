"""``radaudit run <e> --preset paper --rehearse`` (issue 19): the paper's code path on CPU, tiny twins of
every model it names and invented fixtures of its credentialed data. Select with ``-m rehearsal``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.errors import ParamsError
from radaudit.run import run_experiment

pytestmark = pytest.mark.usefixtures("rehearsal_cache")


@pytest.mark.long
@pytest.mark.rehearsal
def test_modality_shift_paper_rehearsal_runs_every_named_vlm_class(tmp_path):
    res = run_experiment("modality_shift", "paper", out=tmp_path, progress=False, rehearse=True)
    m = json.loads((res.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and res.run_dir.name.endswith("_rehearsal")
    assert m["rehearsal"] == {
        "Qwen/Qwen2-VL-7B-Instruct": "Qwen2VLForConditionalGeneration",
        "llava-hf/llava-1.5-7b-hf": "LlavaForConditionalGeneration",
        "meta-llama/Llama-3.2-11B-Vision-Instruct": "MllamaForConditionalGeneration",
        "google/medgemma-4b-it": "Gemma3ForConditionalGeneration",
        "deepseek-community/Janus-Pro-7B": "JanusForConditionalGeneration",
        "microsoft/llava-med-v1.5-mistral-7b": "LlavaForConditionalGeneration (as converted; see radaudit preflight)"}
    res_long = pd.read_parquet(res.run_dir / "tables" / "results_long.parquet")
    # every model x every evaluated fixture study (8 test studies) x the paper's six conditions and the two
    # same-label swaps (the negative controls), batched
    assert res_long.groupby("model").size().to_dict() == {name: 8 * 8 for name in res_long["model"].unique()}
    assert res_long["model"].nunique() == 6 and res_long["p_yes"].between(0, 1).all()
    # the rest of the paper's params are the paper's: dtype, batch size, conditions
    specs = {s["name"]: s for s in m["params"]["models"]}
    assert specs["MedGemma-4B"]["dtype"] == "bf16" and specs["Qwen2-VL-7B"]["batch_size"] == 16
    assert (res.run_dir / "figures" / "attention_by_layer.png").is_file()


def test_rehearsal_refuses_presets_it_cannot_rehearse(tmp_path):
    with pytest.raises(ParamsError, match="needs neither"):
        run_experiment("modality_shift", "smoke", out=tmp_path, progress=False, rehearse=True)
    with pytest.raises(ParamsError, match="no rehearsal yet"):
        run_experiment("data_overview", "smoke", out=tmp_path, progress=False, rehearse=True)


def test_mimic_fixture_has_the_real_layout_and_is_deterministic(tmp_path):
    from radaudit.audits.modality_shift.data import mimic_samples
    from radaudit.data.fixtures import write_mimic_cxr

    a = write_mimic_cxr(tmp_path / "a", n_studies=8)
    b = write_mimic_cxr(tmp_path / "b", n_studies=8)
    for name in ("mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-chexpert.csv.gz", "mimic-cxr-2.0.0-split.csv.gz",
                 "patients.csv.gz"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    jpgs = sorted(p.relative_to(a) for p in a.glob("files/p*/p*/s*/*.jpg"))
    assert len(jpgs) == 8 and all(len(p.parts) == 5 for p in jpgs)  # files/pXX/pSUBJECT/sSTUDY/DICOM.jpg
    s = mimic_samples(a, n=None, split="test")
    assert len(s) == 4 and s["label"].tolist().count(1) == 2 and s["sex"].notna().all()
