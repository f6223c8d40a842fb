"""SMS sample builders of the paper preset: MIMIC-CXR labels/text/split and FairVLMed npz → PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.audits.modality_shift.conditions import CONDITIONS, build_items, draw_partners
from radaudit.audits.modality_shift.data import fairvlmed_samples, load_samples, mimic_labels, mimic_samples
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mimic_cxr"


def test_mimic_labels_follow_the_anchor_rules():
    f = pd.DataFrame({
        "chexpert_no_finding": [1.0, None, None, None, 1.0, None],
        "chexpert_cardiomegaly": [None, 1.0, -1.0, 0.0, 1.0, None],
        "chexpert_pleural_effusion": [None, -1.0, -1.0, None, None, None],
        "chexpert_support_devices": [None, None, None, None, None, 1.0],
    })
    for col in ("atelectasis", "consolidation", "edema", "enlarged_cardiomediastinum", "fracture", "lung_lesion",
                "lung_opacity", "pleural_other", "pneumonia", "pneumothorax"):
        f[f"chexpert_{col}"] = None
    got = mimic_labels(f).tolist()
    # normal; abnormal (cardiomegaly); only uncertain -> no label; all negative -> no label;
    # No Finding wins over a positive (checked first, as the anchor does); support devices alone -> no label
    assert got[:2] == [0, 1]
    assert pd.isna(got[2]) and pd.isna(got[3])
    assert got[4] == 0 and pd.isna(got[5])
    with pytest.raises(DataFormatError, match="CheXpert columns"):
        mimic_labels(pd.DataFrame({"x": [1]}))


def _mimic_images(tmp_path: Path) -> Path:
    meta = pd.read_csv(FIXTURE / "mimic-cxr-2.0.0-metadata.csv.gz", dtype=str)
    root = tmp_path / "files"
    for r in meta.itertuples():
        d = root / f"p{r.subject_id[:2]}" / f"p{r.subject_id}" / f"s{r.study_id}"
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((8, 8), 100, np.uint8)).save(d / f"{r.dicom_id}.jpg")
    return root


def test_mimic_samples_on_the_fixture(tmp_path):
    images = _mimic_images(tmp_path)
    adm = tmp_path / "admissions.csv"
    pd.DataFrame({"subject_id": [10000032, 10000032, 10000032], "race": ["WHITE", "WHITE", "BLACK"]}).to_csv(adm, index=False)
    s = mimic_samples(FIXTURE, split="train", n=None, images_dir=images, race_path=adm)
    # train has 50414267 (No Finding -> 0) and 53189527 (cardiomegaly, effusion -> 1)
    assert dict(zip(s["sample_id"], s["label"])) == {"50414267": 0, "53189527": 1}
    assert set(s["split"]) == {"train"} and s["text"].str.contains("FINAL REPORT").all()
    assert s.loc[s.sample_id == "53189527", "procedure"].item() == "CHEST (PORTABLE AP)"
    assert s["race"].tolist() == ["WHITE", "WHITE"]  # the subject's most frequent race
    # test: 56000002 (No Finding) is the only labelled study; 59999999 has neither label nor report
    with pytest.raises(DataFormatError, match="both labels"):
        mimic_samples(FIXTURE, split="test", n=None, images_dir=images)
    with pytest.raises(DatasetNotFoundError, match="images_dir"):
        mimic_samples(FIXTURE, split="train", n=None, images_dir=tmp_path / "nowhere")
    with pytest.raises(ParamsError, match="text_column"):
        mimic_samples(FIXTURE, split="train", n=None, images_dir=images, text_column="nope")


def test_mimic_draw_is_seeded(tmp_path):
    images = _mimic_images(tmp_path)
    a = mimic_samples(FIXTURE, split="train", n=None, images_dir=images)
    one = mimic_samples(FIXTURE, split="train", n=2, images_dir=images, seed=3)
    assert one["sample_id"].tolist() == a["sample_id"].tolist()  # n >= available: everything, sorted
    with pytest.raises(ParamsError, match="n must be"):
        mimic_samples(FIXTURE, split="train", n=1, images_dir=images)


def _fairvlmed(tmp_path: Path, n: int = 6) -> Path:
    root = tmp_path / "FairVLMed"
    rows = []
    rng = np.random.default_rng(0)
    for i in range(n):
        use = "test" if i < 4 else "training"
        sub = {"test": "Test", "training": "Training"}[use]
        fn = f"data_{i:05d}.npz"
        (root / sub).mkdir(parents=True, exist_ok=True)
        np.savez(root / sub / fn, slo_fundus=rng.integers(0, 4000, size=(12, 10)).astype(np.uint16), glaucoma=i % 2)
        rows.append({"filename": fn, "age": 60 + i, "gender": "female" if i % 2 else "male", "race": "asian",
                     "ethnicity": "non-hispanic", "language": "english", "maritalstatus": "single",
                     "note": f"note {i}: cup-to-disc ratio {0.3 + 0.1 * i:.1f}", "gpt4_summary": f"summary {i}",
                     "glaucoma": "yes" if i % 2 else "no", "use": use})
    pd.DataFrame(rows).to_csv(root / "data_summary.csv", index=False)
    return root


def test_fairvlmed_samples_write_pngs_and_build_items(tmp_path):
    root = _fairvlmed(tmp_path)
    s = fairvlmed_samples(root, split="test")
    assert s["sample_id"].tolist() == [f"data_{i:05d}.npz" for i in range(4)]
    assert s["label"].tolist() == [0, 1, 0, 1] and set(s["split"]) == {"test"}
    img = np.asarray(Image.open(s["image_path"][0]))
    assert img.shape == (12, 10) and img.min() == 0 and img.max() == 255  # min-max scaled to 8 bits
    assert s["text"][1].startswith("note 1")
    summ = fairvlmed_samples(root, split="test", notes="gpt4_summary")
    assert summ["text"][1] == "summary 1"
    items = build_items(s, draw_partners(s, seed=0), "fairvlmed")
    assert "glaucoma" in items["prompt"][0] and len(items) == 4 * len(CONDITIONS)
    same = load_samples("fairvlmed", path=root, split="test")
    pd.testing.assert_frame_equal(same, s)


def test_fairvlmed_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="data_summary.csv"):
        fairvlmed_samples(tmp_path)
    root = _fairvlmed(tmp_path)
    with pytest.raises(ParamsError, match="notes must be"):
        fairvlmed_samples(root, notes="summary")
    with pytest.raises(ParamsError, match="split must be"):
        fairvlmed_samples(root, split="dev")
    pd.read_csv(root / "data_summary.csv").assign(glaucoma="maybe").to_csv(root / "data_summary.csv", index=False)
    with pytest.raises(DataFormatError, match="yes/no"):
        fairvlmed_samples(root)


def test_load_samples_dispatch(shared_data):
    demo = load_samples("covid_cxr", data_root=shared_data, seed=0)
    assert set(demo["split"]) == {"train", "test"}
    with pytest.raises(ParamsError, match="Unknown SMS dataset"):
        load_samples("chexpert")
