"""The public dataset loaders on the real files (``shared_data``), against the counts in each SOURCE.md."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
import pytest

from radaudit.data import load_dataset
from radaudit.data import covid_cxr, iu_xray, radpref, rexrank
from radaudit.data.schema import CORE_COLUMNS, validate
from radaudit.errors import DataFormatError, ParamsError

IU = "iu-xray-openi"
RX = "rexrank-chexpertplus-iu"
RP = "crimson-radpref"
CV = "covid-chestxray-dataset"
PAIRS_DERIVED = "chexpertplus_valid_impressions_ref_vs_generated_with_demographics.csv"


def _same(a, b) -> bool:
    na = lambda v: v is None or v is pd.NA or (isinstance(v, float) and v != v)  # noqa: E731
    return (na(a) and na(b)) or (not na(a) and not na(b) and a == b)


# ----------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def iu_csv(shared_data):
    return iu_xray.load(shared_data / IU)


@pytest.fixture(scope="module")
def iu_xml(shared_data):
    return iu_xray.load(shared_data / IU, format="xml")  # the tarball is parsed once for this module


@pytest.fixture(scope="module")
def pairs(shared_data):
    return rexrank.load_chexpert_plus_pairs(shared_data / RX)


# ------------------------------------------------------------------------------------------ IU X-ray

def test_iu_csv_counts(iu_csv):
    validate(iu_csv)
    assert len(iu_csv) == 3851 and iu_csv["study_id"].is_unique
    assert iu_csv["study_id"].iloc[0] == "1"
    assert int(iu_csv["findings"].notna().sum()) == 3337
    assert int(iu_csv["impression"].notna().sum()) == 3820
    assert int(iu_csv["images"].map(len).sum()) == 7466
    projs = pd.Series([p for ps in iu_csv["projections"] for p in ps]).value_counts().to_dict()
    assert projs == {"FRONTAL": 3818, "LATERAL": 3648}
    assert iu_csv["view"].value_counts().head(3).to_dict() == {"FRONTAL|LATERAL": 3194, "FRONTAL": 295, "LATERAL": 151}
    assert iu_csv["patient_id"].isna().all() and iu_csv["split"].isna().all()
    assert (iu_csv["source"] == "iu_xray").all()


def test_iu_csv_row_contents(iu_csv):
    r = iu_csv.set_index("study_id").loc["1"]
    assert r["view"] == "FRONTAL|LATERAL"
    assert r["images"] == ["1_IM-0001-4001.dcm.png", "1_IM-0001-3001.dcm.png"]
    assert r["image_path"] == "1_IM-0001-4001.dcm.png"  # the frontal one, relative (no images shipped)
    assert r["indication"] == "Positive TB test" and r["comparison"] == "None."
    assert r["mesh"] == ["normal"] and r["labels"] == ["normal"]
    r2 = iu_csv.set_index("study_id").loc["2"]
    assert r2["mesh"] == ["Cardiomegaly/borderline", "Pulmonary Artery/enlarged"]
    assert r2["problems"] == ["Cardiomegaly", "Pulmonary Artery"] == r2["labels"]
    # key image = first frontal even when a lateral comes first; lateral-only studies use their first image
    for row in iu_csv.itertuples():
        if "FRONTAL" in row.projections:
            assert row.image_path == row.images[row.projections.index("FRONTAL")]
        else:
            assert row.image_path == row.images[0]
    # repeated problems become one label; "No Indexing" means unlabelled
    r4 = iu_csv.set_index("study_id").loc["4"]
    assert r4["problems"].count("Opacity") == 4 and r4["labels"].count("Opacity") == 1
    no_index = iu_csv["problems"].map(lambda p: "No Indexing" in p)
    assert int(no_index.sum()) == 92 and iu_csv.loc[no_index, "labels"].isna().all()
    assert iu_csv.loc[~no_index, "labels"].map(lambda v: isinstance(v, list) and len(v) > 0).all()


def test_iu_sex_from_indication(iu_csv):
    assert iu_csv["sex"].value_counts().to_dict() == {"F": 680, "M": 469}
    assert iu_csv.attrs["n_with_sex"] == 1149
    assert "NA" in iu_csv.attrs["sex_rule"]
    assert int(iu_csv["age"].notna().sum()) == 12  # ages are de-identified as XXXX
    # the three spreadsheet '#NAME?' indications are blanked
    assert not iu_csv["indication"].eq("#NAME?").any()


@pytest.mark.long
def test_iu_xml_agrees_with_csv(iu_csv, iu_xml):
    validate(iu_xml)
    assert len(iu_xml) == 3955 and iu_xml["study_id"].is_unique
    assert int(iu_xml["images"].map(len).eq(0).sum()) == 104  # the reports the CSV export leaves out
    assert set(iu_csv["study_id"]) <= set(iu_xml["study_id"])
    assert iu_xml["view"].isna().all() and iu_xml["image_path"].isna().all()
    m = iu_csv.merge(iu_xml, on="study_id", suffixes=("_c", "_x"))
    assert len(m) == 3851

    def agree(col):
        return sum(_same(a, b) for a, b in zip(m[f"{col}_c"], m[f"{col}_x"]))

    for col in ("findings", "impression", "comparison", "sex", "age"):
        assert agree(col) == 3851, col
    for col in ("mesh", "problems", "labels"):
        assert sum(a == b if isinstance(a, list) else _same(a, b) for a, b in zip(m[f"{col}_c"], m[f"{col}_x"])) == 3851, col
    assert agree("indication") == 3848  # the CSV's 3 '#NAME?' cells; the XML has '+PPD ...'
    assert m.set_index("study_id").loc["3477", "indication_x"] == "+PPD"
    same_images = sum(sorted(a) == sorted(b) for a, b in zip(m["images_c"], m["images_x"]))
    assert same_images == 3847
    assert iu_xml["mesh_automatic"].map(len).sum() > 0 and iu_csv["mesh_automatic"].isna().all()


def test_iu_bad_format_and_options(shared_data):
    with pytest.raises(ParamsError, match="'csv', 'xml'"):
        iu_xray.load(shared_data / IU, format="json")
    with pytest.raises(ParamsError, match="unknown option"):
        iu_xray.load(shared_data / IU, fmt="xml")


def test_iu_malformed_files(tmp_path):
    (tmp_path / "indiana_reports.csv").write_text("uid,MeSH,image,indication,comparison,findings,impression\n1,normal,x,y,z,f,i\n")
    (tmp_path / "indiana_projections.csv").write_text("uid,filename,projection\n1,1.png,Frontal\n")
    with pytest.raises(DataFormatError, match=r"indiana_reports\.csv.*Problems"):
        iu_xray.load(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"<eCitation><MeSH><major>normal</major></MeSH></eCitation>"
        info = tarfile.TarInfo("ecgen-radiology/1.xml")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    (tmp_path / "NLMCXR_reports.tgz").write_bytes(buf.getvalue())
    with pytest.raises(DataFormatError, match="AbstractText"):
        iu_xray.load(tmp_path, format="xml")


# --------------------------------------------------------------------------------- ReXrank IU X-ray

def test_rexrank_iu_xray(shared_data, iu_csv):
    df = rexrank.load_iu_xray(shared_data / RX)
    validate(df)
    assert len(df) == 886 and df["study_id"].is_unique
    assert df["split"].value_counts().to_dict() == {"test": 590, "valid": 296}
    r = df.set_index("study_id").loc["CXR3030_IM-1405"]
    assert r["indication"] == "Chest pain, dyspnea" and r["comparison"] == "None."
    assert r["view"] == "FRONTAL|LATERAL" and r["image_path"] == "CXR3030_IM-1405/0.png"
    assert r["iu_uid"] == "3030"
    assert df.set_index("study_id").loc["CXR2056_IM-0694-1001", "view"] == "LATERAL|FRONTAL"
    assert int(df["indication"].isna().sum()) == 11  # contexts without "Indication:"
    assert df["comparison"].notna().all()
    # every ReXrank IU study is an Open-i report, with the same text and the same sex by the same rule
    m = df.merge(iu_csv, left_on="iu_uid", right_on="study_id", suffixes=("", "_iu"))
    assert len(m) == 886
    assert all(_same(a, b) for a, b in zip(m["findings"], m["findings_iu"]))
    assert all(_same(a, b) for a, b in zip(m["sex"], m["sex_iu"]))
    assert df.attrs["n_with_sex"] == int(df["sex"].notna().sum()) == 294


def test_split_context():
    assert rexrank.split_context("Indication: XXXX-year-old female. Comparison: None.") == ("XXXX-year-old female.", "None.")
    ind, cmp_ = rexrank.split_context(" Comparison: None")
    assert ind is pd.NA and cmp_ == "None"
    assert rexrank.split_context("free text")[0] == "free text"


# ---------------------------------------------------------------------------- CheXpert Plus (ReXrank)

def test_chexpert_plus_valid(shared_data):
    df = rexrank.load_chexpert_plus_valid(shared_data / RX)
    validate(df)
    assert len(df) == 200 and df["study_id"].is_unique
    assert df["sex"].value_counts(dropna=False).to_dict() == {"M": 104, "F": 94, pd.NA: 2}
    r = df.set_index("study_id").loc["patient64620_study1"]
    assert r["patient_id"] == "patient64620" and r["age"] == 77.0 and r["sex"] == "F"
    assert r["view"] == "AP" and r["image_path"] == "valid/patient64620/study1/view1_frontal.png"
    assert r["findings"] is pd.NA and r["indication"] is pd.NA
    assert r["impression"].startswith("1. SINGLE VIEW OF CHEST") and not r["impression"].endswith("\n")
    assert int(df["findings"].notna().sum()) == 62 and int(df["impression"].notna().sum()) == 200
    assert int(df["indication"].notna().sum()) == 118 and int(df["age"].isna().sum()) == 2
    assert set(df["view"]) >= {"AP", "PA|LATERAL"} and (df["split"] == "valid").all()
    assert df["race"].value_counts()["White"] == 113
    assert set(df["ap_pa"].dropna()) == {"AP", "PA"}


# -------------------------------------------------------------------------------- impression pairs

def test_pairs_reproduce_derived_matching(shared_data, pairs):
    validate(pairs)
    derived = pd.read_csv(shared_data / RX / PAIRS_DERIVED, keep_default_na=False)
    assert len(pairs) == len(derived) == 200
    assert pairs["line"].tolist() == derived["line"].tolist()
    assert pairs["study_id"].tolist() == derived["rexrank_study_key"].tolist()
    assert pairs["study_id"].is_unique
    assert pairs["match_type"].tolist() == derived["match_type"].tolist()
    assert pairs["match_type"].value_counts().to_dict() == {
        "exact": 148, "fuzzy_best_unused_margin>=0.1": 26, "ref_is_substring": 15, "fuzzy>=0.9": 11}
    # the DERIVED ratios came from difflib's SequenceMatcher, ours from rapidfuzz (exact Indel
    # similarity): identical except line 65, where difflib's greedy matching gives 0.857 vs 0.859
    diff = (pairs["match_ratio"] - derived["match_ratio"]).abs()
    assert int((diff > 1e-9).sum()) == 1 and diff.max() < 0.005 and diff.idxmax() == 65
    for ours, theirs in [("impression", "reference_impression_processed"), ("generated_impression", "generated_impression"),
                         ("original_impression", "original_impression"), ("race", "race"), ("ethnicity", "ethnicity"),
                         ("ap_pa", "ap_pa")]:
        assert pairs[ours].tolist() == derived[theirs].tolist(), ours
    sex = derived["sex"].map({"Male": "M", "Female": "F", "Unknown": pd.NA})
    assert all(_same(a, b) for a, b in zip(pairs["sex"], sex))
    assert pairs["sex"].value_counts(dropna=False).to_dict() == {"M": 104, "F": 94, pd.NA: 2}
    assert pairs["findings"].isna().all() and pairs.attrs["n_unmatched"] == 0


def test_pairs_do_not_need_the_derived_file(shared_data, pairs, tmp_path):
    for name in ("ReXRank_CheXpertPlus.json", "radeval_refs_chexpert_impression.txt", "radeval_preds_chexpert_impression.txt"):
        (tmp_path / name).symlink_to(shared_data / RX / name)
    df = rexrank.load_chexpert_plus_pairs(tmp_path)
    pd.testing.assert_frame_equal(df, pairs)


def test_match_references_passes():
    cands = {"a": "No acute disease.", "b": "Small left pleural effusion. Mild cardiomegaly.",
             "c": "Right lower lobe pneumonia, follow up advised", "d": "ET tube 3 cm above carina."}
    refs = ["no acute disease", "small left pleural effusion.", "right lower lobe pneumonia follow up advisd",
            "et tube in good position", "completely unrelated text about nothing"]
    m = rexrank.match_references(refs, cands)
    assert m["key"].tolist()[:4] == ["a", "b", "c", "d"] and m["key"].iloc[4] is pd.NA
    assert m["match_type"].tolist() == ["exact", "ref_is_substring", "fuzzy>=0.9", "fuzzy_best_unused_margin>=0.1", "unmatched"]
    assert m.loc[0, "match_ratio"] == 1.0


def test_pairs_unmatched_line_is_kept(shared_data, tmp_path):
    (tmp_path / "ReXRank_CheXpertPlus.json").symlink_to(shared_data / RX / "ReXRank_CheXpertPlus.json")
    first_ref = (shared_data / RX / "radeval_refs_chexpert_impression.txt").read_text().splitlines()[0]
    (tmp_path / "radeval_refs_chexpert_impression.txt").write_text(first_ref + "\nzzzz qqqq\n")
    (tmp_path / "radeval_preds_chexpert_impression.txt").write_text("pred one\npred two\n")
    df = rexrank.load_chexpert_plus_pairs(tmp_path)
    assert df["study_id"].tolist() == ["patient64544_study1", "radeval_line_1"]
    assert df["match_type"].tolist() == ["exact", "unmatched"] and df.attrs["n_unmatched"] == 1
    assert df.loc[1, "sex"] is pd.NA and df.loc[1, "generated_impression"] == "pred two"


def test_pairs_line_mismatch_is_a_format_error(shared_data, tmp_path):
    (tmp_path / "ReXRank_CheXpertPlus.json").symlink_to(shared_data / RX / "ReXRank_CheXpertPlus.json")
    (tmp_path / "radeval_refs_chexpert_impression.txt").write_text("a\nb\n")
    (tmp_path / "radeval_preds_chexpert_impression.txt").write_text("a\n")
    with pytest.raises(DataFormatError, match="line-aligned"):
        rexrank.load_chexpert_plus_pairs(tmp_path)


def test_rexrank_missing_field_is_a_format_error(tmp_path):
    (tmp_path / "ReXRank_CheXpertPlus.json").write_text(json.dumps({"patient1_study1": {"sex": "Male"}}))
    with pytest.raises(DataFormatError, match=r"ReXRank_CheXpertPlus\.json.*lacks the field"):
        rexrank.load_chexpert_plus_valid(tmp_path)


# ------------------------------------------------------------------------------------------ RadPref

def test_radpref_cases(shared_data):
    df = radpref.load_cases(shared_data / RP)
    validate(df)
    assert len(df) == 100 and df["study_id"].is_unique
    assert df["sex"].value_counts().to_dict() == {"M": 58, "F": 40, "O": 2}
    r = df.iloc[0]
    assert r["study_id"].startswith("pGRDN002XFK7K18YN_aGRDN") and r["patient_id"] == "pGRDN002XFK7K18YN"
    assert r["age"] == 72.0 and r["c1_source"] == "medgemma" and r["c2_source"] == "gpt"
    assert r["findings"].startswith("A right internal jugular") and r["impression"] is pd.NA
    assert r["ground_truth_findings"][0] == "Very low lung volumes" and len(r["c2_findings"]) == 3
    assert int(df["age"].isna().sum()) == 4
    assert set(df["c1_source"]) | set(df["c2_source"]) == {"gpt", "medgemma"}
    assert radpref.dicom_age_years("015M") == 1.25 and radpref.dicom_age_years("") is pd.NA


def test_radpref_findings_as_python_literal_strings(shared_data, tmp_path):
    case = json.loads((shared_data / RP / "preference_data.json").read_text())[0]
    case["C1_findings"] = str(case["C1_findings"])  # a Python-literal list string
    (tmp_path / "preference_data.json").write_text(json.dumps([case]))
    df = radpref.load_cases(tmp_path)
    assert df.loc[0, "c1_findings"] == ["Central venous catheter via right internal jugular approach with tip in mid to lower superior vena cava",
                                        "Abdominal aortic aneurysm"]
    case["C2_findings"] = "__import__('os').getcwd()"
    (tmp_path / "preference_data.json").write_text(json.dumps([case]))
    with pytest.raises(DataFormatError, match="C2_findings"):
        radpref.load_cases(tmp_path)
    del case["PatientSex"]
    (tmp_path / "preference_data.json").write_text(json.dumps([case]))
    with pytest.raises(DataFormatError, match="PatientSex"):
        radpref.load_cases(tmp_path)


def test_radpref_annotations_equal_derived(shared_data):
    df = radpref.load_annotations(shared_data / RP)
    derived = pd.read_csv(shared_data / RP / "radpref_rater_long_DERIVED.csv", dtype={"patient_age": "string"})
    assert len(df) == 600 and df.attrs["n_missing_annotations"] == 0
    assert list(df.columns) == ["study_id", "sex", "age", *derived.columns, "source"]
    for col in derived.columns:
        ours = df[col].astype("string").fillna("<NA>").tolist()
        theirs = derived[col].astype("string").fillna("<NA>").tolist()
        assert ours == theirs, col
    assert (df["study_id"] == df["case_id"]).all()
    assert df["sex"].value_counts().to_dict() == {"M": 348, "F": 240, "O": 12}
    assert df.loc[0, "age"] == 72.0 and (df["source"] == "radpref_annotations").all()
    # attribute errors carry no clinical significance: the n_sig_ columns sum to false + missing
    sig = df[[c for c in df.columns if c.startswith("n_sig_")]].sum(axis=1)
    assert (sig == df["n_false_findings"] + df["n_missing_findings"]).all()


def test_radpref_bad_error_type(shared_data, tmp_path):
    (tmp_path / "preference_data.json").symlink_to(shared_data / RP / "preference_data.json")
    (tmp_path / "radiologist_annotations").mkdir()
    for n in (1, 2, 3):
        data = json.loads((shared_data / RP / f"radiologist_annotations/user_{n}.json").read_text())
        if n == 2:
            first = next(iter(data["annotations"].values()))
            first["C1"]["finding_errors"]["99"] = {"error_type": "wrong"}
        (tmp_path / f"radiologist_annotations/user_{n}.json").write_text(json.dumps(data))
    with pytest.raises(DataFormatError, match=r"user_2\.json.*error_type 'wrong'"):
        radpref.load_annotations(tmp_path)


# ------------------------------------------------------------------------------------------- COVID

def test_covid_cxr(shared_data):
    df = covid_cxr.load(shared_data / CV)
    validate(df)
    assert len(df) == 653 and df["study_id"].is_unique
    assert df.attrs["n_missing_image"] == 14 and df.attrs["n_xray_rows"] == 667
    assert df["sex"].value_counts(dropna=False).to_dict() == {"M": 374, "F": 227, pd.NA: 52}
    assert df["view"].value_counts().to_dict() == {"PA": 309, "AP SUPINE": 135, "AP": 115, "LATERAL": 55}
    assert df["finding"].value_counts().head(2).to_dict() == {"COVID-19": 439, "todo": 78}
    assert df["label"].value_counts(dropna=False).to_dict() == {1: 451, 0: 124, pd.NA: 78}
    assert df.loc[df["finding"] == "No Finding", "label"].eq(0).all()
    assert df.loc[df["finding"] == "COVID-19, ARDS", "labels"].map(lambda v: v == ["COVID-19", "ARDS"]).all()
    assert df["image_path"].map(lambda p: Path(p).is_absolute() and Path(p).is_file()).all()
    dup = df[df["study_id"].str.contains("#")]
    assert len(dup) == 10 and set(dup["study_id"]) >= {"000001-24.jpg#patient285", "000001-24.jpg#patient339"}
    assert df["findings"].isna().all() and df["impression"].isna().all()
    assert int(df["license"].isna().sum()) == 225
    # the same picture under two patient ids is one patient: the five files listed twice and five re-encoded copies
    assert df.attrs["merged_patients"] == [["78", "201"], ["97", "178"], ["285", "339"], ["287", "340"]]
    assert df["patient_id"].nunique() == 347 and df["patient_id_listed"].nunique() == 351
    assert set(df.loc[df["filename"] == "000001-27.jpg", "patient_id"]) == {"287+340"}
    assert set(df.loc[df["filename"] == "16660_3_1.jpg", "patient_id"]) == {"97+178"}
    eight = {"78", "201", "97", "178", "285", "339", "287", "340"}
    assert (df["patient_id"] != df["patient_id_listed"]).sum() == df["patient_id_listed"].isin(eight).sum() == 21
    listed = covid_cxr.load(shared_data / CV, patients="as_listed")
    assert listed["patient_id"].nunique() == 351 and listed.attrs["merged_patients"] == []
    with pytest.raises(ParamsError, match="patients='as_listed'|'merged', 'as_listed'"):
        covid_cxr.load(shared_data / CV, patients="upstream")


def test_covid_upstream_layout_without_manifest(tmp_path):
    cols = ["patientid", "offset", "sex", "age", "finding", "view", "modality", "date", "location", "folder",
            "filename", "doi", "url", "license", "clinical_notes"]
    rows = [
        ["1", "0", "M", "65", "COVID-19", "PA", "X-ray", "", "", "images", "a.png", "", "", "CC BY", "notes"],
        ["1", "3", "M", "65", "todo", "AP Supine", "X-ray", "", "", "images", "b.png", "", "", "", ""],
        ["2", "?", "", "", "No Finding", "L", "X-ray", "", "", "images", "gone.png", "", "", "", ""],
        ["3", "", "F", "40", "COVID-19", "Axial", "CT", "", "", "images", "ct.png", "", "", "", ""],
    ]
    pd.DataFrame(rows, columns=cols).to_csv(tmp_path / "metadata.csv", index=False)
    (tmp_path / "images").mkdir()
    for k, f in enumerate(("a.png", "b.png", "ct.png")):  # three different pictures
        Image.fromarray(np.random.default_rng(k).integers(0, 256, (16, 16), dtype=np.uint8)).save(tmp_path / "images" / f)
    df = covid_cxr.load(tmp_path)
    assert df["study_id"].tolist() == ["a.png", "b.png"]
    assert df["view"].tolist() == ["PA", "AP SUPINE"] and df["label"].tolist()[0] == 1
    assert df["label"].isna().tolist() == [False, True]
    assert df.attrs["n_missing_image"] == 1 and df.attrs["missing_images"] == ["gone.png"]
    assert df.loc[0, "image_path"] == str((tmp_path / "images" / "a.png").resolve())
    with pytest.raises(ParamsError, match="covid_vs_other"):
        covid_cxr.load(tmp_path, label="severity")
    pd.DataFrame(rows, columns=cols).drop(columns=["view"]).to_csv(tmp_path / "metadata.csv", index=False)
    with pytest.raises(DataFormatError, match=r"metadata\.csv.*'view'"):
        covid_cxr.load(tmp_path)


# ------------------------------------------------------------------------------- through the registry

@pytest.mark.parametrize("name, n", [
    ("iu_xray", 3851), ("iu_xray_rexrank", 886), ("chexpert_plus_valid", 200), ("chexpert_plus_pairs", 200),
    ("radpref", 100), ("radpref_annotations", 600), ("covid_cxr", 653),
])
def test_load_dataset(shared_data, name, n):
    df = load_dataset(name, data_root=shared_data)
    assert len(df) == n and df.attrs["dataset"] == name
    assert (df["source"] == name).all()
    if name != "radpref_annotations":
        assert list(df.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
