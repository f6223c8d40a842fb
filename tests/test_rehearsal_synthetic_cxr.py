"""``radaudit run synthetic_cxr --preset paper --rehearse`` (issue 19): the paper's code path on CPU with tiny twins
of every model the preset names (:mod:`radaudit.models.twins.image`) and an invented MIMIC-CXR + LLaVA-Rad
fixture (:func:`radaudit.data.fixtures.write_llava_rad`). Select with ``-m rehearsal``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import prepare, run_experiment

pytestmark = [pytest.mark.rehearsal, pytest.mark.usefixtures("rehearsal_cache")]


def _model_ids(params) -> set[str]:
    """Every model id the paper preset names (as written there), RadEdit's borrowed VAE and text encoder included."""
    ids = {params.cxr_encoder, params.reid_model, params.alignment_model, params.utility["pretrained"]}
    for g in params.generators:
        if g.kind == "diffusion":
            ids.add(g.params["model"])
            if g.params.get("family") == "radedit":
                ids |= {"stabilityai/sdxl-vae", "microsoft/BiomedVLP-BioViL-T"}
    return ids


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    return run_experiment("synthetic_cxr", "paper", out=tmp_path_factory.mktemp("sc_rehearsal"), progress=False,
                          rehearse=True)


@pytest.mark.long
def test_paper_rehearsal_runs_every_named_model_class(rehearsal):
    m = json.loads((rehearsal.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and rehearsal.run_dir.name.endswith("_rehearsal")
    _, paper = prepare("synthetic_cxr", "paper")
    reh = m["rehearsal"]
    assert _model_ids(paper) <= set(reh)
    assert reh["<your fine-tuned SD 1.5 folder>"] == "StableDiffusionPipeline"
    assert reh["<your fine-tuned Sana folder>"] == "SanaPipeline"
    assert reh["microsoft/radedit"] == "StableDiffusionPipeline" and reh["stabilityai/sdxl-vae"] == "AutoencoderKL"
    assert reh["microsoft/BiomedVLP-BioViL-T"].startswith("BertModel (in-library stand-in")
    assert reh["microsoft/rad-dino"] == "Dinov2Model"
    assert reh[paper.reid_model] == "SiameseReIDModel"
    assert reh["microsoft/resnet-50"] == "ResNetForImageClassification"
    assert reh["biovil-t"].startswith("✗ not rehearsed: ") and "hi-ml-multimodal" in reh["biovil-t"]


@pytest.mark.long
def test_paper_rehearsal_tables_have_every_generator_and_the_real_baseline(rehearsal):
    t = rehearsal.run_dir / "tables"
    names = ["SD V1-5", "Sana", "RadEdit", "held-out real"]
    fid = pd.read_csv(t / "table1_long.csv")
    assert sorted(fid["generator"].unique()) == sorted(names)
    assert fid[fid["metric"] == "fid"]["estimate"].notna().all()
    assert set(pd.read_csv(t / "table3_long.csv")["generator"]) == set(names)
    util = pd.read_csv(t / "table4_long.csv")
    assert set(util["source"]) == {"real", *names}
    assert set(pd.read_csv(t / "table5_long.csv")["source"]) == {"real", *names}
    splits = pd.read_csv(t / "data_splits.csv").set_index("split")["images"].to_dict()
    assert splits == {"train": 4, "test": 6, "valid": 2}  # valid: MIMIC's validate split, the held-out real pool


@pytest.mark.long
def test_paper_rehearsal_keeps_the_papers_other_params(rehearsal):
    p = json.loads((rehearsal.run_dir / "manifest.json").read_text())["params"]
    _, paper = prepare("synthetic_cxr", "paper")
    assert p["resize"] == "squash" and p["heldout_split"] == "validate" and p["labels"] == paper.labels
    gens = {g["name"]: g["params"] for g in p["generators"]}
    assert {n: (g["family"], g["dtype"]) for n, g in gens.items() if "family" in g} == {
        "SD V1-5": ("sd1", "fp16"), "Sana": ("sana", "bf16"), "RadEdit": ("radedit", "fp16")}
    assert gens["RadEdit"]["trust_remote_code"] is False  # the stand-in text encoder runs no remote code
    assert p["report_generation"] == paper.report_generation.model_dump(mode="json")
    assert {k: p["utility"][k] for k in ("architecture", "batch_size", "n_repeats")} == {
        "architecture": "resnet50", "batch_size": 768, "n_repeats": 1}
    assert (p["delta"], p["nearest_k"], p["privacy_reference"]) == (paper.delta, paper.nearest_k, paper.privacy_reference)


def test_rehearsal_refuses_the_demo_data_and_a_folder_generator(tmp_path):
    from radaudit.audits.synthetic_cxr.rehearsal import rehearse
    from radaudit.errors import ParamsError

    with pytest.raises(ParamsError, match="needs neither"):
        run_experiment("synthetic_cxr", "smoke", out=tmp_path, progress=False, rehearse=True)
    _, paper = prepare("synthetic_cxr", "paper")
    values = paper.model_dump(mode="json")
    values["generators"] = values["generators"][:1] + [{"name": "mine", "kind": "folder", "params": {}}]
    folder = type(paper).model_validate(values)
    with pytest.raises(ParamsError, match="folders of your images"):
        rehearse(folder, tmp_path)
    assert not any(tmp_path.iterdir())  # refused before writing anything
