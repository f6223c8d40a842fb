"""The modality-shift study's demo VLM (tiny LLaVA): a tiny training run, reuse, reload, run_conditions."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from radaudit.audits.modality_shift.conditions import build_items, covid_samples, draw_partners, run_conditions
from radaudit.audits.modality_shift.models import (
    CONFIG_FILE,
    DEMO_VLM_CONFIG,
    config_hash,
    demo_vlm_path,
    train_demo_vlm,
)
from radaudit.errors import ParamsError
from radaudit.models.vlm import candidate_tokens, load_vlm

#: A few steps on a handful of images with a very small model: plumbing, and just enough training (20 steps)
#: that the answer format is learnt (3 steps left the first-token mass on Yes/No at the uniform 4/400); 30 since
#: recipe 6 decays the rate by a cosine (20 left the mass at 0.0194, just under twice the uniform).
TINY = {"steps": 30, "batch_size": 4, "max_train": 8, "max_eval": 4, "vocab_size": 400, "vision_hidden": 16,
        "vision_mlp": 32, "vision_heads": 2, "text_hidden": 32, "text_mlp": 64, "text_heads": 2, "max_seconds": 600.0,
        "vision_warmup_epochs": 1}


@pytest.fixture(scope="module")
def samples(shared_data):
    return covid_samples(shared_data, seed=0)


@pytest.fixture(scope="module")
def tiny_model(shared_data, tmp_path_factory):
    cache = tmp_path_factory.mktemp("vlm_cache")
    return demo_vlm_path(shared_data, seed=0, cache_dir=cache, **TINY), cache


@pytest.mark.long
def test_saves_a_loadable_llava(tiny_model, samples):
    path, cache = tiny_model
    assert path.parent == cache / "demo_models" and path.name.startswith("vlm-")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "processor_config.json", "chat_template.jinja",
                 "README.md", "training_log.json", CONFIG_FILE):
        assert (path / name).is_file(), name
    meta = json.loads((path / CONFIG_FILE).read_text())
    assert meta["config_hash"] == config_hash(samples, seed=0, **TINY) == path.name.removeprefix("vlm-")
    assert meta["n_train"] == 8 and meta["n_test"] == 4 and meta["steps_done"] == TINY["steps"]
    assert {"acc_no_shift", "acc_only_image", "acc_only_text", "acc_marked_no_shift",
            "acc_marked_only_image"} <= set(meta["metrics"])
    # the marked copies (positive control) are written beside the models, one per training / held-out image
    assert len(list((cache / "marked_images").glob("v*/*.png"))) == 8 + 4
    assert meta["hyperparameters"]["freeze_vision"] is True and meta["hyperparameters"]["marker_version"] >= 2

    processor, model = load_vlm(path, device="cpu")
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    assert model.config.vision_config.image_size == 64 and model.config.image_seq_length == 64
    assert len(meta["vision_warmup_losses"]) == TINY["vision_warmup_epochs"]
    cands = candidate_tokens(processor)
    assert not cands["multi_token"].any() and cands["token_id"].nunique() == 4  # Yes / No / yes / no: one token each


def test_run_conditions_on_the_demo_vlm(tiny_model, samples):
    path, _ = tiny_model
    processor, model = load_vlm(path, device="cpu")
    test = samples[samples["split"] == "test"]
    items = build_items(test, draw_partners(test, seed=0), "covid_cxr", conditions=("no_shift", "text_shift"))
    items = items.iloc[:2]
    out = run_conditions(processor, model, items, model_name="demo", max_new_tokens=4, batch_size=2)
    assert len(out) == 2 and list(out["condition"]) == ["no_shift", "text_shift"]
    # trained on "Yes"/"No" + end of sequence: twenty steps give a parseable answer, and the first token's
    # probability mass on the four candidates is well above the uniform 4 / vocabulary
    assert set(out["answer"]) <= {"yes", "no"}, out["generated"].tolist()
    assert out["p_yes"].between(0, 1).all()
    assert (out["mass_candidates"] > 2 * 4 / len(processor.tokenizer)).all(), out["mass_candidates"].tolist()


@pytest.mark.long
def test_reuse_and_same_seed_same_weights(tiny_model, samples, shared_data, tmp_path):
    path, cache = tiny_model
    mtime = (path / "model.safetensors").stat().st_mtime_ns
    assert demo_vlm_path(shared_data, seed=0, cache_dir=cache, **TINY) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == mtime  # reused, not retrained

    again = train_demo_vlm(samples, tmp_path / "again", seed=0, marked_dir=tmp_path / "marked", **TINY)
    a, b = load_file(path / "model.safetensors"), load_file(again / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert (path / "tokenizer.json").read_text() == (again / "tokenizer.json").read_text()
    assert config_hash(samples, seed=1, **TINY) != config_hash(samples, seed=0, **TINY)
    # notes cut to fewer words are other training texts: another model, never the whole-notes one reused
    cut = covid_samples(shared_data, seed=0, max_note_words=20)
    assert cut.attrs["notes_truncated"] > 0
    assert config_hash(cut, seed=0, **TINY) != config_hash(samples, seed=0, **TINY)


def test_demo_vlm_trains_on_the_runs_own_sample_options():
    from radaudit.audits.modality_shift.params import Params
    from radaudit.audits.modality_shift.study import _demo_sample_options

    assert _demo_sample_options(Params.model_validate({"max_note_words": 80})) == {"max_note_words": 80}
    assert _demo_sample_options(Params.model_validate({})) == {}  # whole notes: the samples as they were
    with pytest.raises(ValueError, match="max_note_words"):
        Params.model_validate({"max_note_words": 0})


def test_bad_settings_are_named(samples, tmp_path):
    with pytest.raises(ParamsError, match="Unknown demo-VLM setting"):
        train_demo_vlm(samples, tmp_path / "x", no_such_key=1)
    with pytest.raises(ParamsError, match="multiple of patch_size"):
        train_demo_vlm(samples, tmp_path / "x", image_size=100)
    with pytest.raises(ParamsError, match="p_marked"):
        train_demo_vlm(samples, tmp_path / "x", p_marked=1.5)
    with pytest.raises(ParamsError, match="sum to < 1"):
        train_demo_vlm(samples, tmp_path / "x", p_only_image=0.6, p_only_text=0.5)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other.txt").write_text("x")
    with pytest.raises(ParamsError, match="not empty"):
        train_demo_vlm(samples, tmp_path / "full", **TINY)
    assert set(TINY) <= set(DEMO_VLM_CONFIG)


def test_decoy_items_carry_another_samples_text_and_the_samples_own_image(samples):
    from radaudit.audits.modality_shift.models import _decoy_items

    train = samples[samples["split"] == "train"].head(6)
    items = _decoy_items(train, "covid_cxr", seed=0)
    assert len(items) == 6 and set(items["condition"]) == {"decoy"}
    assert (items["text_source"] != items["sample_id"]).all()  # never the sample's own text
    assert (items["image_source"] == items["sample_id"]).all()  # but its own image
    text_of = train.set_index("sample_id")["text"]
    for it in items.itertuples():
        assert str(text_of[it.text_source]) in it.prompt
    again = _decoy_items(train, "covid_cxr", seed=0)
    assert again["text_source"].tolist() == items["text_source"].tolist()  # seeded


def test_gate_split_holds_back_a_share_of_each_label():
    from radaudit.audits.modality_shift.models import _gate_split

    rows = [{"label": 1}] * 10 + [{"label": 0}] * 30
    fit, gate = _gate_split(rows, 0.2, seed=3)
    assert sorted(fit + gate) == list(range(40)) and not set(fit) & set(gate)
    assert sum(rows[i]["label"] for i in gate) == 2 and len(gate) == 2 + 6   # 20% of 10 positives, of 30 negatives
    assert _gate_split(rows, 0.2, seed=3) == (fit, gate) and _gate_split(rows, 0.2, seed=4) != (fit, gate)
    assert _gate_split(rows, 0.0, seed=3) == (list(range(40)), [])


@pytest.mark.long
@pytest.mark.parametrize(("settings", "passed"), [({"p_marked": 0.0, "vision_warmup_gate_auroc": 0.95}, False),
                                                  ({"vision_warmup_gate_auroc": 0.01}, True)])
def test_warm_start_gate_records_whether_the_marker_was_read(shared_data, tmp_path, settings, passed):
    """The gate can fail: a tower never shown a marked copy (``p_marked`` 0) cannot read the marker on the gate's
    held-back marked copies, so the bar is not reached, every epoch runs and the record says so; a bar any head
    reaches stops the warm start at the first check."""
    hp = {**TINY, "vision_warmup_epochs": 10, "max_train": 60, "steps": 2, **settings}
    path = demo_vlm_path(shared_data, seed=0, cache_dir=tmp_path, **hp)
    meta = json.loads((path / CONFIG_FILE).read_text())
    assert meta["vision_warmup_gate_passed"] is passed
    assert meta["vision_warmup_epochs_run"] == (10 if not passed else 5)
    assert [e for e, _ in meta["vision_warmup_gate"]] == ([5, 10] if not passed else [5])
    assert all(0.0 <= a <= 1.0 for _, a in meta["vision_warmup_gate"])
    assert (meta["vision_warmup_gate"][-1][1] < 0.95) if not passed else True
