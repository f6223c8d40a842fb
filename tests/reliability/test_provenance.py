"""Every model a run resolves is named in its manifest with the revision it ran at, and the manifest says what
its torch kernels promise about repeating (issue 24: pin and record hub revisions; say where GPU kernels
cannot be deterministic)."""

from __future__ import annotations

import json

import pytest

from radaudit import manifest
from radaudit.models.resolver import resolve_model, set_resolve_listener
from radaudit.session import Run


@pytest.fixture
def run(tmp_path):
    r = Run(experiment="data_overview", params=None, dir=tmp_path)  # params unused by record_models
    previous = set_resolve_listener(r.note_model)
    yield r
    set_resolve_listener(previous)


def _recorded(run) -> dict:
    return json.loads((run.dir / "recorded.json").read_text())


def test_a_hub_model_is_recorded_at_the_commit_in_the_local_cache(run, tmp_path, monkeypatch):
    import huggingface_hub.constants as hc

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--owner--tiny"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    resolve_model("owner/tiny")
    resolve_model("owner/other@v1.0")  # pinned, not downloaded yet: the requested revision stands
    models = run.record_models()
    assert models["owner/tiny"] == {"source": "hub", "path_or_id": "owner/tiny", "requested_revision": None,
                                    "revision": commit}
    assert models["owner/other@v1.0"]["requested_revision"] == "v1.0" == models["owner/other@v1.0"]["revision"]
    assert _recorded(run)["models"] == models


def test_an_unpinned_hub_model_gets_its_commit_once_downloaded(run, tmp_path, monkeypatch):
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    resolve_model("owner/late")
    assert run.record_models()["owner/late"]["revision"] == "main"  # not in the cache yet
    commit = "fedcba9876543210fedcba9876543210fedcba98"
    snap = tmp_path / "hub" / "models--owner--late" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text(commit)
    assert run.record_models()["owner/late"]["revision"] == commit  # the next save records the real commit


def test_a_local_model_is_recorded_by_content_and_a_changed_file_changes_it(run, tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}')
    resolve_model(str(folder))
    first = run.record_models()[str(folder)]
    assert first["source"] == "local" and len(first["revision"]) >= 16
    other = Run(experiment="data_overview", params=None, dir=tmp_path)
    set_resolve_listener(other.note_model)
    (folder / "config.json").write_text('{"a": 2}')
    resolve_model(str(folder))
    assert other.record_models()[str(folder)]["revision"] != first["revision"]


def test_determinism_note_says_which_case_the_run_is_in(monkeypatch):
    import torch

    info = manifest.determinism_info()
    assert info["accelerator"] == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        assert info["note"].startswith("CPU kernels")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert "not deterministic" in manifest.determinism_info()["note"]
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    assert manifest.determinism_info()["note"].startswith("GPU with deterministic algorithms")


def test_deterministic_kernels_only_when_asked(monkeypatch):
    import torch

    monkeypatch.delenv(manifest.DETERMINISTIC_ENV, raising=False)
    assert manifest.use_deterministic_kernels() is False
    calls = []
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda on, warn_only: calls.append((on, warn_only)))
    monkeypatch.setenv(manifest.DETERMINISTIC_ENV, "1")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert manifest.use_deterministic_kernels() is True
    assert calls == [(True, True)] and __import__("os").environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
