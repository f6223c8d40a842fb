"""Credentialed / gated loaders on tiny invented fixtures in each dataset's documented format.

Fixtures: tests/fixtures/{mimic_cxr,rexgradient,chexpert_plus,rexval}/ (see each loader's docstring
for where the format comes from). Expected values below are worked out by hand from those files.
"""

from __future__ import annotations

import gzip
import logging
import shutil
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from radaudit.data import get_spec, is_present, load_dataset
from radaudit.data.schema import CORE_COLUMNS, validate
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.text.sections import split_sections

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _root_with(tmp_path: Path, fixture: str, folder: str) -> Path:
    shutil.copytree(FIX / fixture, tmp_path / folder)
    return tmp_path


def _by_id(df: pd.DataFrame) -> pd.DataFrame:
    return df.set_index("study_id", drop=False)


# --------------------------------------------------------------------------- sections


def test_split_sections_mimic_style_report():
    text = (
        "                                 FINAL REPORT\n"
        " EXAMINATION:  CHEST (PA AND LAT)\n \n"
        " INDICATION:  ___F with cough\n \n"
        " CLINICAL HISTORY: smoker\n"
        " COMPARISON:  None.\n \n"
        " FINDINGS:\n \n The lungs are clear.  No\n effusion.\n \n"
        " IMPRESSION:\n \n No acute process.\n"
    )
    assert split_sections(text) == {
        "examination": "CHEST (PA AND LAT)",
        "indication": "___F with cough",
        "history": "smoker",
        "comparison": "None.",
        "findings": "The lungs are clear. No effusion.",
        "impression": "No acute process.",
    }


def test_split_sections_rules():
    # case-insensitive, synonyms, preamble, repeated sections concatenated
    text = "Chest two views.\nReason for exam: fever\nFindings: left opacity.\nconclusion: pneumonia\nFINDINGS: small effusion."
    assert split_sections(text) == {
        "preamble": "Chest two views.",
        "indication": "fever",
        "findings": "left opacity. small effusion.",
        "impression": "pneumonia",
    }
    # a header must start a line: no split in the middle of a sentence
    assert split_sections("No effusion. Impression: stable") == {"preamble": "No effusion. Impression: stable"}
    # headers without a colon are text; empty sections are dropped
    assert split_sections("IMPRESSION\nclear\nFINDINGS:\nIMPRESSION: ok") == {"preamble": "IMPRESSION clear", "impression": "ok"}
    assert split_sections(None) == {} and split_sections("  ") == {}
    assert split_sections("FINDINGS: a\n  b", normalize_whitespace=False) == {"findings": "a\n  b"}
    assert split_sections("OPINION: x", aliases={"opinion": "impression"}) == {"impression": "x"}


# --------------------------------------------------------------------------- MIMIC-CXR


@pytest.fixture()
def mimic_root(tmp_path):
    return _root_with(tmp_path, "mimic_cxr", "mimic-cxr")


def test_mimic_cxr_loads_one_row_per_study(mimic_root):
    df = load_dataset("mimic_cxr", data_root=mimic_root)
    validate(df)
    assert list(df.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    assert df["study_id"].tolist() == ["50414267", "53189527", "52000001", "56000002", "59999999"]
    d = _by_id(df)
    # key view: LATERAL listed first, PA preferred; AP over LATERAL; LL over a missing ViewPosition
    assert d.loc["50414267", "view"] == "PA"
    assert d.loc["50414267", "views"] == ["LATERAL", "PA"]
    assert d.loc["52000001", "view"] == "AP"
    assert d.loc["56000002", "view"] == "LL"
    assert d.loc["56000002", "views"] == [None, "LL"]
    assert d.loc["50414267", "image_path"] == (
        "files/p10/p10000032/s50414267/5e6f7a8b-55555555-66666666-77777777-88888888.jpg")
    assert d.loc["50414267", "dicom_ids"][0].startswith("0a1b2c3d")
    # split: validate -> valid
    assert d["split"].tolist() == ["train", "train", "valid", "test", "test"]


def test_mimic_cxr_age_from_anchor_year(mimic_root):
    d = _by_id(load_dataset("mimic_cxr", data_root=mimic_root))
    # subject 10000032: F, anchor_age 52 in anchor_year 2180; studies dated 2180-05-06 and 2180-06-26
    assert d.loc["50414267", "sex"] == "F" and d.loc["50414267", "age"] == 52.0
    assert d.loc["53189527", "age"] == 52.0
    # subject 11000011: M, anchor_age 60 in 2153; study 2155-01-01 -> 60 + (2155 - 2153) = 62
    assert d.loc["52000001", "sex"] == "M" and d.loc["52000001", "age"] == 62.0
    # subject 12000022: anchor_age 91 is MIMIC-IV's "over 89": kept as 91 and flagged
    assert d.loc["56000002", "age"] == 91.0 and bool(d.loc["56000002", "age_over_89"]) is True
    assert bool(d.loc["52000001", "age_over_89"]) is False
    # subject 19999999 is not in patients.csv.gz
    assert pd.isna(d.loc["59999999", "sex"]) and pd.isna(d.loc["59999999", "age"])
    assert d.loc["50414267", "study_date"] == pd.Timestamp("2180-05-06")


def test_mimic_cxr_labels_and_sections(mimic_root):
    df = load_dataset("mimic_cxr", data_root=mimic_root)
    d = _by_id(df)
    assert d.loc["53189527", "labels"] == ["Cardiomegaly", "Lung Opacity", "Pleural Effusion", "Support Devices"]
    assert d.loc["53189527", "chexpert_edema"] == -1.0
    assert d.loc["53189527", "chexpert_pneumonia"] == 0.0
    assert pd.isna(d.loc["53189527", "chexpert_atelectasis"])
    assert d.loc["52000001", "labels"] == ["Atelectasis"]  # Pleural Effusion is -1 (uncertain), not listed
    assert d.loc["50414267", "labels"] == ["No Finding"]
    assert d.loc["59999999", "labels"] is pd.NA  # no label row
    assert df["chexpert_support_devices"].dtype == "Float64"
    assert d.loc["50414267", "findings"].startswith("There is no focal consolidation, pleural effusion or pneumothorax.")
    assert d.loc["50414267", "impression"] == "No acute cardiopulmonary process."
    assert d.loc["50414267", "indication"] == "___F with new onset ascites // eval for infection"
    assert d.loc["53189527", "indication"] == "Shortness of breath, evaluate for fluid overload."  # HISTORY fallback
    assert d.loc["56000002", "indication"] == "Chest pain."  # REASON FOR EXAM
    assert pd.isna(d.loc["52000001", "findings"])
    assert pd.isna(d.loc["59999999", "impression"])  # no report file
    assert any("no report file" in n for n in df.attrs["notes"])


def test_mimic_cxr_image_path_absolute_when_jpg_exists(mimic_root):
    jpg = mimic_root / "mimic-cxr/files/p10/p10000032/s50414267/5e6f7a8b-55555555-66666666-77777777-88888888.jpg"
    jpg.parent.mkdir(parents=True)
    jpg.write_bytes(b"\xff\xd8\xff\xd9")
    d = _by_id(load_dataset("mimic_cxr", data_root=mimic_root))
    assert d.loc["50414267", "image_path"] == str(jpg.resolve())
    assert not Path(d.loc["53189527", "image_path"]).is_absolute()


def test_mimic_cxr_patients_file_locations(tmp_path, caplog):
    root = _root_with(tmp_path, "mimic_cxr", "mimic-cxr")
    patients = root / "mimic-cxr" / "patients.csv.gz"
    hosp = root / "mimic-iv" / "hosp"
    hosp.mkdir(parents=True)
    shutil.move(patients, hosp / "patients.csv.gz")
    d = _by_id(load_dataset("mimic_cxr", data_root=root))  # found at <folder>/../mimic-iv/hosp/
    assert d.loc["52000001", "age"] == 62.0
    moved = tmp_path / "elsewhere.csv.gz"
    shutil.move(hosp / "patients.csv.gz", moved)
    d = _by_id(load_dataset("mimic_cxr", data_root=root, patients_path=moved))
    assert d.loc["52000001", "sex"] == "M"
    with caplog.at_level(logging.WARNING, logger="radaudit.data.mimic_cxr"):
        df = load_dataset("mimic_cxr", data_root=root)  # nowhere to be found: not a crash
    assert df["sex"].isna().all() and df["age"].isna().all()
    assert any("patients.csv.gz not found" in n for n in df.attrs["notes"])
    assert "patients.csv.gz not found" in caplog.text


def test_mimic_cxr_options(mimic_root):
    df = load_dataset("mimic_cxr", data_root=mimic_root, splits=["test"], read_reports=False)
    assert df["study_id"].tolist() == ["56000002", "59999999"]
    assert df["findings"].isna().all()
    nb = load_dataset("mimic_cxr", data_root=mimic_root, labeler="negbio")
    assert nb["chexpert_no_finding"].isna().all() and any("negbio" in n for n in nb.attrs["notes"])
    with pytest.raises(ParamsError, match="labeler"):
        load_dataset("mimic_cxr", data_root=mimic_root, labeler="chexbert")


def test_mimic_cxr_missing_column_is_a_format_error(mimic_root):
    meta = mimic_root / "mimic-cxr" / "mimic-cxr-2.0.0-metadata.csv.gz"
    df = pd.read_csv(meta).drop(columns=["ViewPosition"])
    with gzip.open(meta, "wt") as f:
        df.to_csv(f, index=False)
    with pytest.raises(DataFormatError) as e:
        load_dataset("mimic_cxr", data_root=mimic_root)
    assert "ViewPosition" in str(e.value) and "mimic-cxr-2.0.0-metadata.csv.gz" in str(e.value)


# --------------------------------------------------------------------------- ReXGradient


@pytest.fixture()
def rexg_root(tmp_path):
    return _root_with(tmp_path, "rexgradient", "rexgradient-160k")


def test_rexgradient_loads_metadata(rexg_root):
    df = load_dataset("rexgradient", data_root=rexg_root)
    validate(df)
    assert len(df) == 4 and df["split"].tolist() == ["valid", "test", "test", "test"]
    d = df.set_index("patient_id")
    assert d.loc["GRDNAAAA1111BBBB", "age"] == 72.0  # "072Y"
    assert d.loc["GRDNEEEE3333FFFF", "age"] == 0.5  # "006M"
    assert d.loc["GRDNJJJJ5555KKKK", "sex"] == "O"
    # key image: POSTERO_ANTERIOR (listed second) over LATERAL; LL -> LATERAL over a missing view
    assert d.loc["GRDNAAAA1111BBBB", "view"] == "PA"
    assert d.loc["GRDNAAAA1111BBBB", "image_path"].endswith("1.2.826.0.1.3680043.8.498.4002.png")
    assert d.loc["GRDNAAAA1111BBBB", "image_path"].startswith("deid_png/GRDNAAAA1111BBBB/")
    assert d.loc["GRDNJJJJ5555KKKK", "view"] == "LATERAL"
    assert d.loc["GRDNJJJJ5555KKKK", "views"] == [None, "LATERAL"]
    # the valid split has no *_view_position.json: no image information
    assert pd.isna(d.loc["GRDNNNNN7777PPPP", "view"]) and pd.isna(d.loc["GRDNNNNN7777PPPP", "image_path"])
    assert any("valid_metadata_view_position.json" in n for n in df.attrs["notes"])
    assert pd.isna(d.loc["GRDNJJJJ5555KKKK", "findings"]) and pd.isna(d.loc["GRDNJJJJ5555KKKK", "comparison"])
    assert d.loc["GRDNEEEE3333FFFF", "impression"] == "Right lower lobe pneumonia with small effusion."
    assert d.loc["GRDNAAAA1111BBBB", "study_date"] == pd.Timestamp("2019-04-12")
    assert load_dataset("rexgradient", data_root=rexg_root, splits=["test"])["split"].eq("test").all()


def test_rexgradient_empty_folder_is_not_present(tmp_path):
    (tmp_path / "rexgradient-160k").mkdir()
    assert not is_present("rexgradient", data_root=tmp_path)
    from radaudit.data.rexgradient import load

    with pytest.raises(DatasetNotFoundError, match="metadata"):
        load(tmp_path / "rexgradient-160k")


def test_rexgradient_hub_needs_the_hub_extra(tmp_path, monkeypatch):
    from radaudit.data.rexgradient import HUB_ID, load

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails as if not installed
    with pytest.raises(DatasetNotFoundError) as e:
        load(tmp_path / "rexgradient-160k", hub_id=HUB_ID)
    msg = str(e.value)
    assert "pip install 'radaudit[hub]'" in msg and HUB_ID in msg


def test_rexgradient_hub_unreachable_says_what_is_needed(tmp_path, monkeypatch):
    from radaudit.data.rexgradient import HUB_ID, load

    def snapshot_download(**kwargs):
        raise OSError("401 Client Error: gated repo")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    with pytest.raises(DatasetNotFoundError) as e:
        load(None, hub_id=HUB_ID)
    msg = str(e.value)
    assert "terms accepted" in msg and "huggingface.co/datasets/rajpurkarlab/ReXGradient-160K" in msg and "401" in msg


def test_rexgradient_hub_download_then_local_read(tmp_path, monkeypatch):
    from radaudit.data.rexgradient import HUB_ID, load

    calls = {}

    def snapshot_download(**kwargs):  # stands in for the Hub: copies the fixture's metadata/
        calls.update(kwargs)
        shutil.copytree(FIX / "rexgradient" / "metadata", Path(kwargs["local_dir"]) / "metadata")
        return kwargs["local_dir"]

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    df = load(tmp_path / "rexgradient-160k", hub_id=HUB_ID)
    assert len(df) == 4 and calls["repo_id"] == HUB_ID and calls["repo_type"] == "dataset"
    assert any("view_position" in p for p in calls["allow_patterns"])
    assert is_present("rexgradient", data_root=tmp_path)  # now a normal local folder


def test_rexgradient_missing_column_is_a_format_error(rexg_root):
    p = rexg_root / "rexgradient-160k" / "metadata" / "test_metadata.csv"
    pd.read_csv(p).drop(columns=["Impression"]).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match="Impression"):
        load_dataset("rexgradient", data_root=rexg_root)


# --------------------------------------------------------------------------- CheXpert Plus


@pytest.fixture()
def cxp_root(tmp_path):
    return _root_with(tmp_path, "chexpert_plus", "chexpert-plus")


def test_chexpert_plus_one_row_per_study(cxp_root):
    df = load_dataset("chexpert_plus", data_root=cxp_root)
    validate(df)
    assert df["study_id"].tolist() == ["patient00101_study1", "patient00101_study2", "patient00202_study1", "patient64620_study1"]
    d = _by_id(df)
    # patient00202/study1 lists the lateral first: the PA frontal is the key image
    assert d.loc["patient00202_study1", "view"] == "PA"
    assert d.loc["patient00202_study1", "image_path"] == "train/patient00202/study1/view2_frontal.jpg"
    assert d.loc["patient00202_study1", "views"] == ["LATERAL", "PA"]
    assert d.loc["patient00101_study1", "sex"] == "F" and d.loc["patient00101_study1", "age"] == 63.0
    assert pd.isna(d.loc["patient64620_study1", "sex"])  # "Unknown"
    assert d.loc["patient00101_study1", "findings"] == "The heart is normal in size. Lungs are clear without focal consolidation."
    assert pd.isna(d.loc["patient00101_study2", "findings"])
    assert d.loc["patient00101_study1", "indication"] == "Cough for two weeks."
    assert d.loc["patient00101_study2", "indication"] == "Line placement."  # section_history fallback
    assert d.loc["patient64620_study1", "split"] == "valid"
    assert d.loc["patient00202_study1", "labels"] == ["Cardiomegaly", "Pleural Effusion"]
    assert d.loc["patient00202_study1", "chexpert_edema"] == -1.0
    assert d.loc["patient64620_study1", "labels"] is pd.NA  # not in report_fixed.json
    assert d.loc["patient00202_study1", "race"] == "Asian"


def test_chexpert_plus_image_unit_and_options(cxp_root):
    img = load_dataset("chexpert_plus", data_root=cxp_root, unit="image", labels=None)
    assert len(img) == 6 and img["image_id"].is_unique
    assert img["study_id"].tolist().count("patient00101_study1") == 2
    assert img["chexpert_no_finding"].isna().all()
    png = cxp_root / "chexpert-plus" / "train/patient00101/study1/view1_frontal.png"
    png.parent.mkdir(parents=True)
    png.write_bytes(b"\x89PNG")
    d = _by_id(load_dataset("chexpert_plus", data_root=cxp_root))
    assert d.loc["patient00101_study1", "image_path"] == str(png.resolve())  # PNG twin of the .jpg name
    with pytest.raises(ParamsError, match="unit"):
        load_dataset("chexpert_plus", data_root=cxp_root, unit="patient")


def test_chexpert_plus_missing_column_is_a_format_error(cxp_root):
    p = cxp_root / "chexpert-plus" / "df_chexpert_plus_240401.csv"
    pd.read_csv(p).drop(columns=["section_impression"]).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match="section_impression"):
        load_dataset("chexpert_plus", data_root=cxp_root)


# --------------------------------------------------------------------------- ReXVal


@pytest.fixture()
def rexval_root(tmp_path):
    return _root_with(tmp_path, "rexval", "rexval")


def test_rexval_candidates(rexval_root):
    df = load_dataset("rexval", data_root=rexval_root)
    assert len(df) == 8 and list(df.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    assert df["candidate_type"].tolist()[:4] == ["radgraph", "bertscore", "s_emb", "bleu"]
    c = df.set_index(["study_id", "candidate_type"])
    # study 0, radgraph: rater 0 -> 1+1 significant, 0+1 insignificant; rater 1 -> 0+2, 1+0
    assert c.loc[("50010001", "radgraph"), "mean_errors_significant"] == 2.0
    assert c.loc[("50010001", "radgraph"), "mean_errors_insignificant"] == 1.0
    # study 0, bleu: rater 0 -> 3 sig; rater 1 -> 2 sig + 1 insig
    assert c.loc[("50010001", "bleu"), "mean_errors_significant"] == 2.5
    assert c.loc[("50010001", "bleu"), "mean_errors_total"] == 3.0
    # study 1, bleu: rater 0 -> 2+1 sig, 1 insig; rater 1 -> 1+1 sig
    assert c.loc[("50020002", "bleu"), "mean_errors_significant"] == 2.5
    assert c.loc[("50020002", "bleu"), "n_raters"] == 2
    assert c.loc[("50010001", "radgraph"), "candidate_report"].startswith("Right internal jugular catheter")
    # the reference is kept whole; sections only where the text has headers
    assert pd.isna(c.loc[("50010001", "radgraph"), "findings"])
    assert c.loc[("50020002", "radgraph"), "impression"] == "Stable cardiomegaly with small effusions."
    assert c.loc[("50020002", "radgraph"), "reference_report"].startswith("FINDINGS: Moderate cardiomegaly")


def test_rexval_errors_long_form(rexval_root):
    e = load_dataset("rexval", data_root=rexval_root, table="errors")
    assert len(e) == 22
    row = e[(e.study_id == "50010001") & (e.candidate_type == "radgraph") & (e.rater_index == 0) & (e.error_category == 2)]
    assert row[["num_errors_significant", "num_errors_insignificant", "num_errors_total"]].values.tolist() == [[1, 1, 2]]
    assert row["error_category_name"].item() == "Omission of finding"
    only_sig = e[(e.study_id == "50020002") & (e.candidate_type == "s_emb") & (e.rater_index == 1)]
    assert only_sig["num_errors_insignificant"].tolist() == [0]  # the file has no False row for that cell


def test_rexval_bad_table_and_format(rexval_root):
    with pytest.raises(ParamsError) as e:
        load_dataset("rexval", data_root=rexval_root, table="pairs")
    assert "candidates" in str(e.value) and "errors" in str(e.value)
    p = rexval_root / "rexval" / "6_valid_raters_per_rater_error_categories.csv"
    err = pd.read_csv(p)
    err.loc[0, "study_number"] = 50
    err.to_csv(p, index=False)
    with pytest.raises(DataFormatError, match="study_number"):
        load_dataset("rexval", data_root=rexval_root)
    err.drop(columns=["num_errors"]).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match="num_errors"):
        load_dataset("rexval", data_root=rexval_root)


# --------------------------------------------------------------------------- not found


@pytest.mark.parametrize("name, where", [
    ("mimic_cxr", "physionet.org/content/mimic-cxr-jpg"),
    ("rexgradient", "huggingface.co/datasets/rajpurkarlab/ReXGradient-160K"),
    ("chexpert_plus", "stanfordaimi.azurewebsites.net"),
    ("rexval", "physionet.org/content/rexval-dataset"),
])
def test_not_found_message_names_dataset_and_source(tmp_path, name, where):
    with pytest.raises(DatasetNotFoundError) as e:
        load_dataset(name, data_root=tmp_path)
    msg = str(e.value)
    assert repr(name) in msg and where in msg and f"It is {get_spec(name).access}, not public" in msg
    assert f"dataset_paths.{name}=PATH" in msg
