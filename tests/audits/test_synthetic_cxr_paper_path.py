"""The synthetic_cxr paper path (issue 19): the held-out real set as MIMIC-CXR has it, a streaming prepare(), the
real utility baseline size-matched to the generators, the benchmark's resize, and the LLaVA-Rad fixture."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.audits import synthetic_cxr as sc
from radaudit.audits.synthetic_cxr import generators as g
from radaudit.config import validate_params
from radaudit.data.fixtures import write_llava_rad
from radaudit.errors import ParamsError

PAPER_ENCODERS = {"cxr_encoder": "microsoft/rad-dino", "reid_model": "x.pth", "alignment_model": "none"}


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    return write_llava_rad(tmp_path_factory.mktemp("llava_rad"), n_studies=12, image_size=48)


def _mimic_params(fx, **kw):
    options = {"annotations_csv": fx.annotations, "images_dir": str(fx.mimic / "files")}
    return validate_params(sc.Params, {"dataset": "mimic_cxr", "dataset_path": str(fx.mimic), "dataset_options": options,
                                       "image_size": 16, "labels": ["No Finding", "Edema"], **PAPER_ENCODERS, **kw})


# --- the LLaVA-Rad fixture ----------------------------------------------------------------------------

def test_llava_rad_fixture_has_the_benchmark_layout_and_is_deterministic(tmp_path, llava):
    again = write_llava_rad(tmp_path / "again", n_studies=12, image_size=48)
    for a, b in ((llava.train_csv, again.train_csv), (llava.test_csv, again.test_csv)):
        assert a.name.startswith("LLAVARAD_ANNOTATIONS_") and a.parent.name == "MIMIC_Splits"
        assert a.read_bytes() == b.read_bytes()
    ann = pd.read_csv(llava.train_csv)
    assert list(ann.columns) == ["path", "annotated_prompt", "chexpert_labels"]
    assert ann["path"].str.match(r"^files/p\d\d/p\d+/s\d+/[^/]+\.jpg$").all()
    assert all((llava.mimic / p).is_file() for p in ann["path"])
    split = pd.read_csv(llava.mimic / "mimic-cxr-2.0.0-split.csv.gz")
    assert set(split["split"]) == {"train", "validate", "test"}
    frame = sc.mimic_prompts(llava.mimic, annotations_csv=llava.annotations, images_dir=str(llava.mimic / "files"),
                             pool_splits=["validate"])
    counts = frame["split"].value_counts().to_dict()
    assert counts == {"test": 6, "train": 4, "valid": 2} and frame.attrs["n_pool_rows"] == 2
    # annotated rows carry the LLaVA-Rad caption and the CSV's labels; pool rows the loader's labels
    assert frame.loc[frame["split"] == "train", "prompt"].str.contains("Study").all()
    assert frame["labels"].map(len).gt(0).all()


# --- (a) the held-out real set ------------------------------------------------------------------------

def test_heldout_split_is_mimics_validate_by_default_and_refuses_the_reference_splits(llava):
    assert _mimic_params(llava).heldout() == "validate"
    assert validate_params(sc.Params, {}).heldout() == "holdout"
    for bad, match in (("holdout", "not a split of mimic_cxr"), ("test", "must not be the test images"),
                       ("train", "no generator trains on")):
        with pytest.raises(ParamsError, match=match):
            _mimic_params(llava, heldout_split=bad)


def test_heldout_real_generator_draws_mimic_validate_images(llava):
    params = _mimic_params(llava, generators=[{"name": "held-out real", "kind": "heldout_real"}], privacy_prompts=2,
                           privacy_seeds=1, utility_n=8)
    study = sc.prepare(params)
    valid = set(study.frame.loc[study.frame["split"] == "valid", "study_id"])
    assert len(valid) == 2
    sets = sc.generate_sets(params, study)
    for purpose, (images, req) in sets["held-out real"].items():
        assert set(req[g.SOURCE_COLUMN]) <= valid, purpose
        assert images.shape[1:] == (16, 16) and np.isfinite(images).all()


# --- (b) prepare() streams ----------------------------------------------------------------------------

def test_prepare_does_not_decode_the_training_split(tmp_path, monkeypatch):
    """A 50,000-row manifest: before, prepare() decoded every training image (50,000 x 32 x 32 float32 = 205 MB);
    now only the test split is decoded and the traced peak stays under 40 MB."""
    paths = []
    for i in range(4):
        p = tmp_path / f"img{i}.png"
        Image.fromarray(np.full((40, 60), 40 * i + 20, np.uint8)).save(p)
        paths.append(str(p))
    n_train, n_test = 50_000, 8
    n = n_train + n_test
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(n)], "patient_id": [f"p{i // 2}" for i in range(n)],
                          "split": ["train"] * n_train + ["test"] * n_test, "prompt": "PA chest X-ray",
                          "labels": [["No Finding"]] * n, "view": "PA", "image_path": [paths[i % 4] for i in range(n)]})
    monkeypatch.setattr(sc.study, "mimic_prompts", lambda *a, **k: frame)
    params = validate_params(sc.Params, {"dataset": "mimic_cxr", "image_size": 32, **PAPER_ENCODERS})
    tracemalloc.start()
    try:
        study = sc.prepare(params)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(study.train_meta) == n_train and study.test.shape == (n_test, 32, 32)
    assert peak < 40 * 2 ** 20, f"prepare() peaked at {peak / 2 ** 20:.0f} MiB"
    assert study._train is None  # decoded only when something asks for every training image


# --- (c) the real utility baseline is size-matched ----------------------------------------------------

def test_real_utility_baseline_has_the_generators_prompts_and_size(llava):
    params = _mimic_params(llava, generators=[{"name": "held-out real", "kind": "heldout_real"}], utility_n=9,
                           privacy_prompts=1, privacy_seeds=1)
    study = sc.prepare(params)
    sets = sc.generate_sets(params, study)
    train_sets = sc.utility_train_sets(params, study, sets)
    assert list(train_sets) == ["real", "held-out real"]
    assert len(train_sets["real"][0]) == len(train_sets["held-out real"][0]) == 9 != len(study.train_meta)
    req = sets["held-out real"]["utility"][1]
    images, meta = sc.real_utility_set(params, study)
    assert meta["study_id"].tolist() == req["source_study_id"].tolist()  # the images the prompts were written from
    np.testing.assert_array_equal(images, study.context.pixels(req["source_study_id"].tolist()))
    assert train_sets["real"][1] == req["labels"].tolist()


# --- (d) the benchmark's resize -----------------------------------------------------------------------

def test_paper_preset_squashes_like_the_benchmark_and_crop_is_the_option():
    """CheXGenBench resizes with torchvision Resize((299, 299)) / Resize((224, 224)): the whole image squashed to a
    square (what each policy does to an image: test_synthetic_cxr_data.test_load_images_center_crop_squash_pad)."""
    from radaudit.run import prepare

    _, paper = prepare("synthetic_cxr", "paper")
    _, demo = prepare("synthetic_cxr", "demo")
    assert paper.resize == "squash" and validate_params(sc.Params, {}).resize == "squash"
    assert demo.resize == "center_crop"  # the option, kept by the demo (its stand-in models were trained on crops)


# --- RadEdit's text encoder: trust_remote_code stays off when no code would run -----------------------

def test_radedit_refuses_a_remote_code_text_encoder_without_the_flag(tmp_path):
    from radaudit.models.diffusion import _needs_remote_code

    plain, remote = tmp_path / "plain", tmp_path / "remote"
    plain.mkdir()
    remote.mkdir()
    (plain / "config.json").write_text('{"model_type": "bert", "architectures": ["BertModel"]}')
    (remote / "config.json").write_text('{"model_type": "bert", "auto_map": {"AutoModel": "modeling_cxrbert.CXRBertModel"}}')
    assert not _needs_remote_code(plain)
    assert _needs_remote_code(remote) and _needs_remote_code("microsoft/BiomedVLP-BioViL-T")
