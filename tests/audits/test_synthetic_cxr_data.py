"""Tests of radaudit.audits.synthetic_cxr.data: labels, the demo frame and its patient split, image
loading, the bring-your-own synthetic set, and the MIMIC-CXR prompts (fixture)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.audits.synthetic_cxr import data as D
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

# --- labels ------------------------------------------------------------------------------------------


def test_group_findings_flat_hierarchical_and_order():
    assert D.group_findings("COVID-19, ARDS") == ["COVID-19", "ARDS"]
    assert D.group_findings(["ARDS", "COVID-19"]) == ["COVID-19", "ARDS"]  # DEMO_LABELS order
    assert D.group_findings(["Klebsiella"]) == ["Other pneumonia"]
    assert D.group_findings(["Pneumonia/Bacterial/Klebsiella"]) == ["Other pneumonia"]
    assert D.group_findings(["Pneumonia/Viral/COVID-19"]) == ["COVID-19"]
    assert D.group_findings(["SARS", "Pneumocystis"]) == ["Other pneumonia"]  # deduplicated
    assert D.group_findings(["no finding"]) == ["No Finding"]  # case-insensitive


def test_group_findings_unknown_term_names_it():
    with pytest.raises(DataFormatError, match="'Sarcoidosis'.*label_groups"):
        D.group_findings(["Sarcoidosis"])
    assert D.group_findings(["Sarcoidosis"], {"Sarcoidosis": "Other"}) == ["Other"]


def test_parse_and_format_labels():
    assert D.parse_labels("COVID-19|ARDS") == ["COVID-19", "ARDS"]
    assert D.parse_labels('["A|B", "C"]') == ["A|B", "C"]
    assert D.parse_labels("") == [] and D.parse_labels(None) == [] and D.parse_labels(float("nan")) == []
    assert D.parse_labels(["x", " y "]) == ["x", "y"]
    assert D.format_labels(["COVID-19", "ARDS"]) == "COVID-19|ARDS"
    assert json.loads(D.format_labels(["A|B", "C"])) == ["A|B", "C"]
    with pytest.raises(DataFormatError, match="not a JSON list"):
        D.parse_labels("[broken")
    with pytest.raises(DataFormatError, match="must be strings"):
        D.parse_labels([1, 2])


# --- the patient split -------------------------------------------------------------------------------

def _toy_frame(n_patients=10, images_per_patient=1):
    rows = []
    for p in range(n_patients):
        for k in range(images_per_patient):
            rows.append({"patient_id": f"p{p}", "study_id": f"p{p}-{k}", "labels": ["COVID-19"]})
    return pd.DataFrame(rows)


def test_split_exact_fractions_for_one_image_patients():
    split = D.split_by_patient(_toy_frame(10), (0.6, 0.2, 0.2), seed=3)
    assert split.value_counts().to_dict() == {"train": 6, "test": 2, "holdout": 2}


def test_split_keeps_patients_whole_is_seeded_and_order_free():
    df = _toy_frame(12, images_per_patient=3)
    s0 = D.split_by_patient(df, seed=0)
    assert (pd.DataFrame({"p": df["patient_id"], "s": s0}).groupby("p")["s"].nunique() == 1).all()
    assert s0.equals(D.split_by_patient(df, seed=0))
    assert not s0.equals(D.split_by_patient(df, seed=1))
    shuffled = df.sample(frac=1.0, random_state=5)
    s_shuf = D.split_by_patient(shuffled, seed=0)
    assert dict(zip(shuffled["patient_id"], s_shuf)) == dict(zip(df["patient_id"], s0))


def test_split_stratifies_rare_groups():
    df = pd.concat([_toy_frame(10), pd.DataFrame([{"patient_id": f"r{i}", "study_id": f"r{i}", "labels": ["ARDS"]}
                                                  for i in range(5)])], ignore_index=True)
    split = D.split_by_patient(df, (0.6, 0.2, 0.2), seed=0)
    rare = split[df["labels"].map(lambda v: v == ["ARDS"])].value_counts().to_dict()
    assert rare == {"train": 3, "test": 1, "holdout": 1}


@pytest.mark.parametrize("bad", [(0.5, 0.5), (0.6, 0.3, 0.3), (0.0, 0.5, 0.5), ("a", 1, 0)])
def test_split_bad_fractions(bad):
    with pytest.raises(ParamsError, match="fractions|train fraction"):
        D.split_by_patient(_toy_frame(4), bad)


# --- the demo frame (real data) --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def frame(shared_data):
    return D.demo_frame(shared_data, seed=0)


def test_demo_frame_split_by_patient_and_sizes(frame):
    assert (frame.groupby("patient_id")["split"].nunique() == 1).all()
    sizes = frame["split"].value_counts(normalize=True)
    for name, f in zip(D.SPLITS, (0.6, 0.2, 0.2)):
        assert abs(sizes[name] - f) < 0.05
    assert frame["study_id"].is_unique


def test_demo_frame_labels_prompts_views(frame):
    assert set(frame["view"]) <= set(D.FRONTAL_VIEWS)
    assert all(set(v) <= set(D.DEMO_LABELS) and v for v in frame["labels"])
    row = frame[frame["finding"] == "COVID-19, ARDS"].iloc[0]
    assert row["labels"] == ["COVID-19", "ARDS"]
    assert row["prompt"] == f"{row['view']} chest X-ray: COVID-19, ARDS"
    klebs = frame[frame["finding"] == "Klebsiella"].iloc[0]
    assert klebs["labels"] == ["Other pneumonia"]
    assert frame["seed"].isna().all()
    assert frame.attrs["n_other_views"] == 44 and frame.attrs["n_unlabelled"] == 78


def test_demo_frame_seeded(shared_data, frame):
    again = D.demo_frame(shared_data, seed=0)
    assert again["split"].tolist() == frame["split"].tolist()
    other = D.demo_frame(shared_data, seed=1)
    assert other["split"].tolist() != frame["split"].tolist()


def test_demo_frame_all_views_and_template(shared_data):
    df = D.demo_frame(shared_data, views=None, prompt_template="{sex} {view}: {labels}")
    assert "LATERAL" in set(df["view"])
    lat = df[df["view"] == "LATERAL"].iloc[0]
    assert lat["prompt"].endswith(f"LATERAL: {', '.join(lat['labels'])}")
    with pytest.raises(ParamsError, match="cannot be filled.*fields"):
        D.demo_frame(shared_data, prompt_template="{nonexistent} X-ray")


# --- images --------------------------------------------------------------------------------------------

def _half_image(path, w=40, h=20, mode="L"):
    arr = np.zeros((h, w), np.uint8)
    arr[:, w // 2:] = 255
    Image.fromarray(arr).convert(mode).save(path)
    return path


def test_load_images_center_crop_squash_pad(tmp_path):
    p = str(_half_image(tmp_path / "half.png"))
    crop = D.load_images([p], size=4)
    # the central 20×20 square is half black, half white
    assert crop.shape == (1, 4, 4) and crop.dtype == np.float32
    np.testing.assert_allclose(crop[0, :, 0], 0.0, atol=0.02)
    np.testing.assert_allclose(crop[0, :, 3], 1.0, atol=0.02)
    squash = D.load_images([p], size=4, resize="squash")
    np.testing.assert_allclose(squash[0, :, :2].mean(), 0.0, atol=0.05)
    pad = D.load_images([p], size=8, resize="pad")  # 40×40: black bands of 10 rows above and below
    assert pad[0, 0, 4:].max() < 0.15 and pad[0, 7, 4:].max() < 0.15  # (bicubic leaks a little)
    assert pad[0, 3:5, 5:].min() > 0.9


def test_load_images_rgb_luma_and_16bit(tmp_path):
    Image.new("RGB", (8, 8), (255, 0, 0)).save(tmp_path / "red.png")
    x = D.load_images([str(tmp_path / "red.png")], size=8)
    np.testing.assert_allclose(x, 76 / 255, atol=1e-6)  # PIL L = 0.299 R (255 → 76)
    a16 = np.full((8, 8), 1000, np.uint16)
    a16[:, 4:] = 3000  # 12-bit range: min-max scaled to 0..255
    Image.fromarray(a16).save(tmp_path / "w16.png")
    y = D.load_images([str(tmp_path / "w16.png")], size=8)
    np.testing.assert_allclose(y[0, :, :4], 0.0)
    np.testing.assert_allclose(y[0, :, 4:], 1.0)


def test_load_images_cache_hit_and_miss_on_change(tmp_path):
    p = tmp_path / "im.png"
    Image.new("L", (10, 10), 100).save(p)
    a = D.load_images([str(p)], size=5, cache_dir=tmp_path / "c")
    Image.new("L", (10, 10), 200).save(p)
    os.utime(p, ns=(1, 1))  # a different mtime: the cache key changes
    b = D.load_images([str(p)], size=5, cache_dir=tmp_path / "c")
    np.testing.assert_allclose(a, 100 / 255, atol=1e-6)
    np.testing.assert_allclose(b, 200 / 255, atol=1e-6)


def test_load_images_errors(tmp_path):
    with pytest.raises(ParamsError, match="list of image paths"):
        D.load_images(str(tmp_path / "x.png"))
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        D.load_images([str(tmp_path / "absent.png")])
    (tmp_path / "bad.png").write_text("not an image")
    with pytest.raises(DataFormatError, match="Cannot read"):
        D.load_images([str(tmp_path / "bad.png")])
    with pytest.raises(ParamsError, match="resize"):
        D.load_images([], resize="stretch")
    with pytest.raises(ParamsError, match="size"):
        D.load_images([], size=2)


def test_iter_images_batches_match_load(tmp_path):
    paths = []
    for i in range(5):
        Image.new("L", (6, 6), 40 * i).save(tmp_path / f"{i}.png")
        paths.append(str(tmp_path / f"{i}.png"))
    batches = list(D.iter_images(paths, size=6, batch_size=2))
    assert [len(b) for b in batches] == [2, 2, 1]
    np.testing.assert_array_equal(np.concatenate(batches), D.load_images(paths, size=6))


def test_frame_fingerprint_follows_image_bytes(tmp_path):
    p = tmp_path / "a.png"
    Image.new("L", (4, 4), 1).save(p)
    df = pd.DataFrame({"study_id": ["s"], "prompt": ["x"], "labels": [["A"]], "image_path": [str(p)]})
    f1 = D.frame_fingerprint(df)
    assert D.frame_fingerprint(df.copy()) == f1
    Image.new("L", (4, 4), 2).save(p)
    assert D.frame_fingerprint(df) != f1
    df2 = df.assign(labels=[["B"]])
    assert D.frame_fingerprint(df2) != D.frame_fingerprint(df)


# --- bring-your-own synthetic set -----------------------------------------------------------------------

def test_synthetic_set_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.random((3, 16, 16)).astype(np.float32)
    meta = pd.DataFrame({"prompt": ["PA chest X-ray: COVID-19", "AP: ARDS", "x"],
                         "labels": [["COVID-19"], ["A|B", "C"], []],
                         "seed": pd.array([7, pd.NA, 0], dtype="Int64"),
                         "source_study_id": ["s1", "s2", "s3"]})
    csv = D.write_synthetic_set(tmp_path / "set", images, meta)
    back = D.read_synthetic_set(csv)
    assert back["prompt"].tolist() == meta["prompt"].tolist()
    assert back["labels"].tolist() == [["COVID-19"], ["A|B", "C"], []]
    assert back["seed"].tolist()[0] == 7 and back["seed"].isna().tolist() == [False, True, False]
    assert back["source_study_id"].tolist() == ["s1", "s2", "s3"]
    pixels = D.load_images(back["image_path"].tolist(), size=16)
    np.testing.assert_allclose(pixels, np.rint(images * 255) / 255, atol=1e-6)  # 8-bit PNGs, exact
    raw = pd.read_csv(csv, dtype=str, keep_default_na=False)
    assert raw["labels"].tolist()[0] == "COVID-19" and raw["image_path"].tolist()[0] == "images/00000.png"


def _write_csv(tmp_path, rows, name="metadata.csv"):
    pd.DataFrame(rows).to_csv(tmp_path / name, index=False)
    return tmp_path / name


def test_read_synthetic_set_errors_name_column_and_row(tmp_path):
    Image.new("L", (4, 4)).save(tmp_path / "a.png")
    ok = {"prompt": "p", "image_path": "a.png", "labels": "COVID-19", "seed": "1"}
    with pytest.raises(DataFormatError, match=r"lacks column\(s\) \['seed'\]"):
        D.read_synthetic_set(_write_csv(tmp_path, [{k: v for k, v in ok.items() if k != "seed"}]))
    with pytest.raises(DataFormatError, match=r"'seed'.*row\(s\) 3"):
        D.read_synthetic_set(_write_csv(tmp_path, [ok, {**ok, "seed": "abc"}]))
    with pytest.raises(DatasetNotFoundError, match=r"'image_path'.*row\(s\) 2.*missing.png"):
        D.read_synthetic_set(_write_csv(tmp_path, [{**ok, "image_path": "missing.png"}]))
    with pytest.raises(DataFormatError, match=r"'prompt' is blank in row\(s\) 3"):
        D.read_synthetic_set(_write_csv(tmp_path, [ok, {**ok, "prompt": " "}]))
    with pytest.raises(DataFormatError, match=r"unknown label\(s\) \['Flu'\] in row 2"):
        D.read_synthetic_set(_write_csv(tmp_path, [{**ok, "labels": "Flu"}]), label_names=D.DEMO_LABELS)
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        D.read_synthetic_set(tmp_path / "nope.csv")


def test_read_synthetic_set_images_root_and_json_labels(tmp_path):
    (tmp_path / "imgs").mkdir()
    Image.new("L", (4, 4)).save(tmp_path / "imgs" / "a.png")
    csv = _write_csv(tmp_path, [{"prompt": "p", "image_path": "a.png", "labels": '["X", "Y"]', "seed": ""}])
    meta = D.read_synthetic_set(csv, images_root=tmp_path / "imgs")
    assert meta["labels"].iloc[0] == ["X", "Y"] and meta["seed"].isna().all()
    assert meta["image_path"].iloc[0] == str((tmp_path / "imgs" / "a.png").resolve())


def test_write_synthetic_set_refuses_bad_input(tmp_path):
    meta = pd.DataFrame({"prompt": ["p"], "labels": [["A"]]})
    with pytest.raises(DataFormatError, match=r"\[0, 1\]"):
        D.write_synthetic_set(tmp_path / "a", np.full((1, 4, 4), 2.0), meta)
    with pytest.raises(DataFormatError, match="1 rows but there are 2 images"):
        D.write_synthetic_set(tmp_path / "b", np.zeros((2, 4, 4)), meta)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("x")
    with pytest.raises(ParamsError, match="not empty"):
        D.write_synthetic_set(tmp_path / "c", np.zeros((1, 4, 4)), meta)


# --- MIMIC-CXR prompts (fixture) ------------------------------------------------------------------------

def test_mimic_prompts_from_impressions(fixtures_dir):
    df = D.mimic_prompts(fixtures_dir / "mimic_cxr")
    # 5 studies: one without a report, one whose report has no IMPRESSION section
    assert df["study_id"].tolist() == ["50414267", "53189527", "52000001"]
    assert df["prompt"].iloc[0] == "No acute cardiopulmonary process."
    assert df["labels"].iloc[1] == ["Cardiomegaly", "Lung Opacity", "Pleural Effusion", "Support Devices"]
    assert df["split"].tolist() == ["train", "train", "valid"]
    assert df.attrs["n_no_caption"] == 2 and df["seed"].isna().all()
    assert df["impression"].tolist() == df["prompt"].tolist()  # kept as Table 5's reference
    assert "findings" in df.columns
    assert D.mimic_prompts(fixtures_dir / "mimic_cxr", splits=["train"])["study_id"].tolist() == ["50414267", "53189527"]


def test_mimic_prompts_from_llavarad_annotations(fixtures_dir, tmp_path):
    ann = pd.DataFrame({
        "path": ["files/p10/p10000032/s50414267/img1.jpg", "files/p11/p11000011/s52000001/img2.jpg",
                 "files/p12/p12000022/s56000002/img3.jpg", "files/p10/p10000032/s53189527/img4.jpg"],
        "annotated_prompt": ["Normal chest.", "Left basal atelectasis.", "Normal chest.", "Cardiomegaly  and effusion."],
        "chexpert_labels": ["{'No Finding': 1.0, 'Atelectasis': nan}", "{'Atelectasis': 1.0, 'Edema': 0.0}",
                            "{'No Finding': 1.0}", "{'Cardiomegaly': 1.0, 'Pleural Effusion': -1.0}"],
    })
    ann.to_csv(tmp_path / "LLAVARAD_ANNOTATIONS_TRAIN.csv", index=False)
    df = D.mimic_prompts(fixtures_dir / "mimic_cxr", annotations_csv=tmp_path / "LLAVARAD_ANNOTATIONS_TRAIN.csv")
    # "Normal chest." repeats: deduplicated on the caption as the authors do
    assert df["prompt"].tolist() == ["Normal chest.", "Left basal atelectasis.", "Cardiomegaly and effusion."]
    assert df["labels"].tolist() == [["No Finding"], ["Atelectasis"], ["Cardiomegaly"]]  # -1 (uncertain) is not positive
    assert df["patient_id"].tolist() == ["10000032", "11000011", "10000032"]
    assert df["split"].tolist() == ["train", "valid", "train"]
    assert df.attrs["n_duplicate_prompts"] == 1
    assert df["impression"].iloc[0] == "No acute cardiopulmonary process."  # the report's, not the caption
    keep = D.mimic_prompts(fixtures_dir / "mimic_cxr", annotations_csv=tmp_path / "LLAVARAD_ANNOTATIONS_TRAIN.csv",
                           dedupe_prompts=False)
    assert len(keep) == 4
    with pytest.raises(DataFormatError, match="prompt_column="):
        D.mimic_prompts(fixtures_dir / "mimic_cxr", annotations_csv=tmp_path / "LLAVARAD_ANNOTATIONS_TRAIN.csv",
                        prompt_column="caption")


def _pictures_on_both_sides(frame: pd.DataFrame) -> list[str]:
    """Files whose picture (radaudit.data.image_duplicates' rule) appears in more than one split."""
    from radaudit.data.image_duplicates import duplicate_groups, thumbnails

    groups = duplicate_groups(thumbnails(frame["image_path"].tolist()))
    splits = pd.Series(frame["split"].to_numpy()).groupby(groups).nunique()
    return sorted(frame.loc[np.isin(groups, splits[splits > 1].index), "image_path"].map(os.path.basename))


def test_no_picture_lies_on_both_sides_of_either_experiments_patient_split(shared_data, frame):
    """covid-chestxray lists one film under two patient ids (000001-27.jpg for 287 and 340, ...): taken as two
    patients, the split put one copy in training and the other in the test set. With the ids merged, never; with
    the ids as listed, the same split leaks (the check can fail)."""
    from radaudit.audits.modality_shift.data import load_samples

    assert _pictures_on_both_sides(frame) == []
    assert _pictures_on_both_sides(load_samples("covid_cxr", data_root=shared_data, seed=0)) == []
    assert "000001-27.jpg" in _pictures_on_both_sides(D.demo_frame(shared_data, seed=0, patients="as_listed"))
