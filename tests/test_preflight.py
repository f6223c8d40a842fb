"""``radaudit preflight``: what a preset needs, checked without loading weights (issue 19)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from radaudit.cli import main
from radaudit.config import Requirement
from radaudit.preflight import check_requirement, memory_gb

PAPER = ["decoding_erasure", "metric_metaeval", "atomic_facts", "modality_shift", "synthetic_cxr"]


@pytest.mark.parametrize("experiment", PAPER)
def test_paper_presets_list_what_is_missing_here_and_exit_2(experiment, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    res = CliRunner().invoke(main, ["preflight", experiment, "--preset", "paper"])
    assert res.exit_code == 2, res.output
    assert "required items are not here" in res.output
    missing = [line for line in res.output.splitlines() if line.startswith("  - ")]
    assert missing and all(": " in line for line in missing)  # one line per missing piece, saying what


def test_modality_shift_paper_names_every_model_with_its_memory_and_llava_med_conversion(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    out = CliRunner().invoke(main, ["preflight", "modality_shift", "--preset", "paper"]).output
    for model in ("Qwen/Qwen2-VL-7B-Instruct", "llava-hf/llava-1.5-7b-hf", "meta-llama/Llama-3.2-11B-Vision-Instruct",
                  "google/medgemma-4b-it", "deepseek-community/Janus-Pro-7B", "microsoft/llava-med-v1.5-mistral-7b"):
        assert model in out
    assert "~19.9 GB GPU at fp16" in out  # Qwen2-VL: 8.29 B x 2 bytes x 1.2
    assert "needs conversion" in out and "convert_llava_weights_to_hf" in out
    assert "race_path" in out and "optional" in out  # reported, not a failure


def test_demo_preset_needs_nothing_missing():
    res = CliRunner().invoke(main, ["preflight", "modality_shift", "--preset", "demo"])
    assert res.exit_code == 0 and "All 1 required items are here." in res.output


def test_check_requirement_statuses(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "data").mkdir()
    assert check_requirement(Requirement("data", "dataset_path", str(tmp_path / "data"))).status == "ok"
    assert check_requirement(Requirement("data", "dataset_path", str(tmp_path / "nope"))).status == "missing"
    assert check_requirement(Requirement("data", "dataset_path", None)).status == "not set"
    assert check_requirement(Requirement("checkpoint", "reid_model", "<path to x.pth>")).status == "not set"
    hub = Requirement("model", "m", "org/model-x", dtype="bf16")
    assert check_requirement(hub).status == "not cached"
    # the same id once its config.json sits in the local hub cache (huggingface_hub's layout)
    snap = tmp_path / "hub" / "models--org--model-x" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--model-x" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--model-x" / "refs" / "main").write_text("abc123")
    assert check_requirement(hub).status == "ok" and "unpinned" in check_requirement(hub).detail
    pinned = check_requirement(Requirement("model", "m", "org/model-x@abc123"))
    assert pinned.status == "ok" and "pinned at abc123" in pinned.detail
    assert check_requirement(Requirement("model", "m", "org/model-x@def456")).status == "not cached"  # another commit
    assert check_requirement(Requirement("model", "m", "demo")).status == "ok"
    assert not check_requirement(Requirement("data", "race_path", None, optional=True)).failed


def test_memory_estimate_hand_computed():
    assert memory_gb("google/medgemma-4b-it", "bf16") == pytest.approx(4.30 * 2 * 1.2, abs=0.05)
    assert memory_gb("google/medgemma-4b-it", None) == pytest.approx(4.30 * 4 * 1.2, abs=0.05)  # fp32
    assert memory_gb("someone/unknown-model", "fp16") is None


def test_radedit_remote_code_is_a_deliberate_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    out = CliRunner().invoke(main, ["preflight", "synthetic_cxr", "--preset", "paper"]).output
    assert "trust_remote_code (RadEdit): not set" in out and "review it, then set true" in out
    assert check_requirement(Requirement("setting", "trust_remote_code", True)).status == "ok"
    assert check_requirement(Requirement("setting", "trust_remote_code", False)).status == "not set"
