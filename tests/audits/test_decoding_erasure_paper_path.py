"""decoding_erasure's paper path (issue 19): the Qwen3-VL twin, the ReXGradient fixture, the split filter, the 512 px
resize, thinking off, the LoRA adapter and the rehearsal (``decoding_erasure.rehearsal.rehearse``) — each without
running the notebook (that is ``tests/test_rehearsal_decoding_erasure.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import decoding_erasure as de
from radaudit.audits.decoding_erasure import data as ded
from radaudit.audits.decoding_erasure import study as st
from radaudit.audits.decoding_erasure.rehearsal import rehearse
from radaudit.config import resolve_params, validate_params
from radaudit.data.fixtures import write_rexgradient
from radaudit.errors import ParamsError
from radaudit.paths import params_dir

pytest.importorskip("transformers")

PAPER_ID = "Qwen/Qwen3-VL-8B-Instruct"


def _paper() -> de.Params:
    return resolve_params(de.Params, params_dir(), "decoding_erasure", "paper", [])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("de_rehearsal")


@pytest.fixture(scope="module")
def twin(workdir):
    from radaudit.models.twins import twin_folder

    folder, cls = twin_folder(PAPER_ID, workdir / "twins")
    assert cls == "Qwen3VLForConditionalGeneration"
    return folder


@pytest.fixture(scope="module")
def rexgradient(workdir):
    return write_rexgradient(workdir / "rexgradient", n_studies=32)


# --- the fixture ---------------------------------------------------------------------------------

def test_rexgradient_fixture_has_the_release_layout_and_is_deterministic(tmp_path):
    from radaudit.data.rexgradient import load

    a = write_rexgradient(tmp_path / "a", n_studies=12)
    b = write_rexgradient(tmp_path / "b", n_studies=12)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert {f"metadata/{s}_metadata{x}" for s in ("train", "valid", "test") for x in (".csv", "_view_position.json")} \
        <= {f.as_posix() for f in files}
    pngs = [f for f in files if f.suffix == ".png"]
    # deid_png/<PatientID>/<AccessionNumber>/studies/<StudyInstanceUid>/series/<series>/instances/<instance>.png
    assert pngs and all(f.parts[0] == "deid_png" and len(f.parts) == 9
                        and f.parts[3::2] == ("studies", "series", "instances") for f in pngs)
    entry = next(iter(json.loads((a / "metadata/test_metadata_view_position.json").read_text()).values()))
    assert entry["ImagePath"][0].startswith("../deid_png/")  # relative to metadata/, as in the release
    df = load(a)
    assert df["split"].value_counts().to_dict() == {"test": 6, "train": 3, "valid": 3}
    assert set(df["sex"]) == {"F", "M", "O"} and df["age"].between(25, 85).all()
    assert df["study_id"].str.match(r"^p[^_]+_a[^_]+_s[\d.]+$").all()
    assert set(df["view"].dropna()) == {"PA", "AP", "LATERAL"}
    assert df["image_path"].map(lambda p: Path(p).is_file()).all()


# --- eval_split: the studies the adapter was fine-tuned on are not audited ------------------------

def test_eval_split_keeps_the_adapters_training_studies_out(rexgradient):
    from radaudit.data.rexgradient import load

    split_of = load(rexgradient).set_index("study_id")["split"]
    P = de.Params(report_model="unused", dataset_path=str(rexgradient), n_reports=8)
    assert P.eval_split == "test" and _paper().eval_split == "test"
    chosen = ded.image_studies(P)
    assert len(chosen) == 8 and set(split_of[chosen["study_id"]]) == {"test"}
    # without the filter the same draw audits training and validation studies: what the filter is for
    unfiltered = ded.image_studies(P.model_copy(update={"eval_split": None}))
    assert set(split_of[unfiltered["study_id"]]) > {"test"}
    valid = ded.image_studies(P.model_copy(update={"eval_split": "valid", "n_reports": 4}))
    assert set(split_of[valid["study_id"]]) == {"valid"}
    with pytest.raises(ParamsError, match="'eval_split'.*'holdout'"):  # MIMIC's own name for it is not a split here
        validate_params(de.Params, {"eval_split": "holdout"}, "test")


# --- the paper's 512 x 512 resize -----------------------------------------------------------------

def test_images_are_resized_to_512_before_the_processor(tmp_path, monkeypatch):
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    assert _paper().image_size == 512 and de.Params().image_size is None
    # a chest X-ray at a real size (3056 x 2544, 8-bit grey): a gradient, so the resize can be checked
    path = tmp_path / "cxr.png"
    Image.fromarray(np.tile(np.linspace(0, 255, 2544, dtype=np.uint8), (3056, 1))).save(path)
    [img] = ded.report_images([path], 512)
    assert img.size == (512, 512) and img.mode == "RGB"
    row = np.asarray(img)[256, :, 0].astype(int)
    assert row[0] < 10 and row[-1] > 245 and np.all(np.diff(row) >= -1)  # squashed, not cropped
    assert ded.report_images([path], None) == [path]
    # Qwen3-VL's image processor (16 px patches, merged 2 x 2, its hub pixel limits) keeps 512 px: 256 tokens
    qwen3 = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, min_pixels=65536, max_pixels=16777216)
    assert qwen3(images=[img], return_tensors="np")["image_grid_thw"].tolist() == [[1, 32, 32]]
    assert qwen3.get_number_of_image_patches(3056, 2544, {}) == 30 * 32 * 32  # unresized: 30x the paper's tokens
    with pytest.raises(ParamsError, match="image_size"):
        ded.resize_square(path, 0)

    # the generation path hands the processor the resized images
    seen = {}

    def fake_generate(processor, model, prompts, images, strategy, **kw):
        seen["images"] = images
        n = len(prompts)
        return pd.DataFrame({"text": ["x"] * n, "n_generated_tokens": [1] * n, "finish": ["eos"] * n})

    import radaudit.models.vlm as vlm

    studies = pd.DataFrame({"study_id": ["a", "b"], "reference": ["r", "r"], "group": ["F", "M"],
                            "indication": [None, "cough"], "image": [str(path)] * 2})
    monkeypatch.setattr(st, "image_studies", lambda P, root=None: studies)
    monkeypatch.setattr(st, "_load_report_vlm", lambda model, adapter, dtype: (None, None))
    monkeypatch.setattr(vlm, "vlm_generate", fake_generate)
    P = de.Params(report_model="unused", image_size=512, n_reports=4, strategies=["greedy"])
    st.study_generations(P, cache=None)
    assert [im.size for im in seen["images"]] == [(512, 512)] * 2


# --- thinking off -------------------------------------------------------------------------------

def test_qwen3vl_prompt_has_no_thinking_and_a_thinking_checkpoint_is_refused(twin):
    from radaudit.models.twins.vlm import QWEN3VL_TEMPLATE
    from radaudit.models.vlm import load_vlm

    processor, _ = load_vlm(str(twin), device="cpu")
    rendered = st.check_report_prompt(processor, "Write the report.")
    assert rendered == "<|im_start|>user\nWrite the report.<|im_end|>\n<|im_start|>assistant\n"
    generation_prompt = "{%- if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
    assert QWEN3VL_TEMPLATE.endswith(generation_prompt.replace("\\n", "\n"))
    try:
        # a Qwen3-VL-*-Thinking template: the generation prompt opens <think>, and no variable closes it
        processor.chat_template = QWEN3VL_TEMPLATE.replace("assistant\n{% endif %}", "assistant\n<think>\n{% endif %}")
        with pytest.raises(ParamsError, match="Thinking checkpoint"):
            st.check_report_prompt(processor)
        # a Qwen3 hybrid template reads enable_thinking: rendered with thinking off (an empty, closed block)
        processor.chat_template = QWEN3VL_TEMPLATE.replace(
            "assistant\n{% endif %}",
            "assistant\n{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
            "{% endif %}{% endif %}")
        assert st.check_report_prompt(processor).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    finally:
        processor.chat_template = QWEN3VL_TEMPLATE


# --- the adapter --------------------------------------------------------------------------------

def test_the_rehearsal_adapter_is_applied_and_changes_the_twins_output(twin, workdir, rexgradient):
    pytest.importorskip("peft")
    from radaudit.models.vlm import first_token_scores

    lora = _paper().lora
    out = st.write_random_adapter(twin, lora, workdir / "adapter", seed=0)
    cfg = json.loads((out / "adapter_config.json").read_text())
    assert (cfg["r"], cfg["lora_alpha"]) == (16, 32) and set(cfg["target_modules"]) == set(lora["target_modules"])
    stamp = (out / "adapter_model.safetensors").stat().st_mtime_ns
    assert st.write_random_adapter(twin, lora, out, seed=0) == out  # written once
    assert (out / "adapter_model.safetensors").stat().st_mtime_ns == stamp
    image = next(rexgradient.glob("deid_png/**/*.png"))
    p0, m0 = st._load_report_vlm(str(twin), None, "bf16")
    p1, m1 = st._load_report_vlm(str(twin), str(out), "bf16")
    assert type(m1).__name__ == "PeftModelForCausalLM" and type(m1.get_base_model()).__name__ == type(m0).__name__
    s0 = first_token_scores(p0, m0, ["Write the report."], [image]).filter(like="logit_").to_numpy()
    s1 = first_token_scores(p1, m1, ["Write the report."], [image]).filter(like="logit_").to_numpy()
    assert np.isfinite(s1).all() and not np.allclose(s0, s1)


# --- rehearsal.rehearse --------------------------------------------------------------------------

def test_rehearse_swaps_models_data_and_sizes_and_keeps_the_rest(workdir):
    paper = _paper().model_copy(update={"skew_models": {"0.67": "/my/rex-mb", "0.33": "/my/rex-fb"}})
    params, rehearsal = rehearse(paper, workdir)
    assert rehearsal[PAPER_ID] == "Qwen3VLForConditionalGeneration"
    assert "random LoRA" in rehearsal["report_adapter"] and rehearsal["report_adapter"].endswith("null")
    assert rehearsal["skew_models.0.67"].endswith("/my/rex-mb")
    assert Path(params.report_model, "config.json").is_file()
    adapters = [params.report_adapter, params.skew_models["0.67"], params.skew_models["0.33"]]
    assert len(set(adapters)) == 3 and all(Path(a, "adapter_config.json").is_file() for a in adapters)
    assert Path(params.dataset_path, "metadata", "test_metadata.csv").is_file()
    assert (params.n_reports, params.max_new_tokens, params.baselines) == (12, 8, False)
    kept = ("model_dtype", "batch_size", "strategies", "image_size", "eval_split", "report_prompt", "lora", "skews")
    assert {k: getattr(params, k) for k in kept} == {k: getattr(paper, k) for k in kept}
    assert params.model_dtype == "bf16" and params.batch_size == 16 and len(params.strategies) == 6
    with pytest.raises(ParamsError, match="needs neither"):
        rehearse(de.Params(), workdir)
