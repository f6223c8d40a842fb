"""atomic_dir: a folder appears whole or not at all."""

from __future__ import annotations

import pytest

from radaudit.paths import atomic_dir


def test_atomic_dir_publishes_on_success(tmp_path):
    out = tmp_path / "model"
    with atomic_dir(out) as tmp:
        (tmp / "weights.bin").write_text("w")
        assert not out.exists()
    assert (out / "weights.bin").read_text() == "w"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary folder left


def test_atomic_dir_leaves_nothing_on_error_and_never_overwrites(tmp_path):
    out = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "half.bin").write_text("x")
            raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []
    out.mkdir()
    (out / "keep.txt").write_text("k")
    # a folder with content (another run finished first) is never overwritten: this copy is discarded
    with atomic_dir(out) as tmp:
        (tmp / "new.bin").write_text("n")
    assert (out / "keep.txt").read_text() == "k" and not (out / "new.bin").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_reusable_model_dir_rejects_wrong_hash_missing_files_and_cut_short_models(tmp_path):
    import json

    from radaudit.paths import reusable_model_dir

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "meta.json").write_text(json.dumps({"config_hash": "abc", "stopped_early": False}))
    assert reusable_model_dir(folder, "meta.json", "abc", required=("config.json",))
    assert not reusable_model_dir(folder, "meta.json", "other", required=("config.json",))
    assert not reusable_model_dir(folder, "meta.json", "abc", required=("weights.bin",))
    assert not reusable_model_dir(folder, "meta.json", "abc", required_globs=("*.safetensors",))
    (folder / "meta.json").write_text(json.dumps({"config_hash": "abc", "stopped_early": True}))
    assert not reusable_model_dir(folder, "meta.json", "abc") and not folder.exists()  # removed: retrain writes anew


def test_safe_name_replaces_runs_of_unsafe_characters():
    from radaudit.paths import safe_name

    assert safe_name("privacy pairs: demo diffusion") == "privacy-pairs-demo-diffusion"
    assert safe_name("lr=0.1_x") == "lr=0.1_x"
    assert safe_name("a/b\\c", max_len=3) == "a-b"


def test_file_sha256_hashes_bytes_and_names_an_unreadable_file(tmp_path):
    import hashlib

    from radaudit.errors import DataFormatError
    from radaudit.paths import file_sha256

    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * (3 << 20) + b"tail")  # more than one 1 MiB chunk
    assert file_sha256(f) == hashlib.sha256(f.read_bytes()).hexdigest()
    with pytest.raises(DataFormatError, match="missing.png"):
        file_sha256(tmp_path / "missing.png", DataFormatError)
