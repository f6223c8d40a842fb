"""Data root precedence, the dataset registry, and the tidy schema helpers."""

from __future__ import annotations

import pandas as pd
import pytest

from radaudit.data import DATASETS, list_datasets, load_dataset, require
from radaudit.data import root as root_mod
from radaudit.data.schema import CORE_COLUMNS, finalize, normalize_sex, report_text, validate
from radaudit.errors import DatasetNotFoundError, ParamsError


def test_precedence_param_then_env_then_shared(tmp_path, monkeypatch):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    monkeypatch.setattr(root_mod, "default_candidates", lambda: [c])
    monkeypatch.setenv(root_mod.ENV_VAR, str(b))
    assert root_mod.resolve_data_root(str(a)) == a.resolve()
    assert root_mod.resolve_data_root(None) == b.resolve()
    monkeypatch.delenv(root_mod.ENV_VAR)
    assert root_mod.resolve_data_root(None) == c.resolve()


def test_no_root_and_missing_root_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv(root_mod.ENV_VAR, raising=False)
    monkeypatch.setattr(root_mod, "default_candidates", lambda: [tmp_path / "nope"])
    with pytest.raises(DatasetNotFoundError, match="--data-root PATH.*RADAUDIT_DATA.*radaudit data fetch"):
        root_mod.resolve_data_root(None)
    with pytest.raises(DatasetNotFoundError, match=r"from the data_root parameter\) does not exist"):
        root_mod.resolve_data_root(str(tmp_path / "missing"))
    monkeypatch.setenv(root_mod.ENV_VAR, str(tmp_path / "gone"))
    with pytest.raises(DatasetNotFoundError, match="RADAUDIT_DATA environment variable"):
        root_mod.resolve_data_root(None)


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(ParamsError, match="Known datasets: .*iu_xray"):
        load_dataset("iu_xrays")


def test_resource_is_not_a_table(shared_data):
    with pytest.raises(ParamsError, match="resource"):
        load_dataset("cxr_label_phrases", data_root=shared_data)


def test_missing_public_dataset_message(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        require("radpref", data_root=tmp_path)
    msg = str(e.value)
    assert "Dataset 'radpref'" in msg and "github.com/rajpurkarlab/CRIMSON" in msg
    assert "radaudit data fetch radpref" in msg


def test_list_datasets_sees_the_shared_data(shared_data):
    df = list_datasets(shared_data).set_index("name")
    assert set(df.index) == set(DATASETS)
    public = [n for n, s in DATASETS.items() if s.access == "public"]
    assert df.loc[public, "present"].all()
    assert not df.loc["mimic_cxr", "present"]


@pytest.mark.parametrize("raw,want", [("F", "F"), ("female", "F"), ("Male", "M"), (" m ", "M"), ("O", "O"),
                                       ("Unknown", pd.NA), ("", pd.NA), (None, pd.NA), (float("nan"), pd.NA)])
def test_normalize_sex(raw, want):
    got = normalize_sex(raw)
    assert (got is pd.NA) if want is pd.NA else got == want


def test_finalize_orders_types_and_validates():
    df = finalize(pd.DataFrame({"extra": [1, 2], "study_id": ["a", "b"], "sex": ["Female", "x"], "age": ["71", None],
                                "findings": ["  ", "Clear."], "impression": ["Normal.", None]}), source="toy")
    assert list(df.columns) == list(CORE_COLUMNS) + ["extra"]
    assert df["sex"].tolist()[0] == "F" and df["sex"].isna().tolist() == [False, True]
    assert df["age"].dtype == "Float64" and df["age"].tolist()[0] == 71.0
    assert df["findings"].isna().tolist() == [True, False]  # blank text becomes missing
    assert report_text(df).tolist() == ["Normal.", "Clear."]
    validate(df)
    with pytest.raises(ValueError, match="study_id"):
        finalize(pd.DataFrame({"study_id": [None]}), source="toy")
    with pytest.raises(ValueError, match="missing core columns"):
        validate(pd.DataFrame({"study_id": ["a"]}))


def test_report_text_joins_sections():
    df = finalize(pd.DataFrame({"study_id": ["a", "b", "c"], "findings": ["F.", None, None], "impression": ["I.", "I.", None]}), source="t")
    out = report_text(df)
    assert out.iloc[0] == "F.\n\nI." and out.iloc[1] == "I." and out.isna().iloc[2]


def test_fingerprint_identifies_the_data_version(shared_data, tmp_path):
    import shutil

    from radaudit.data import fingerprint

    src = shared_data / "crimson-radpref"
    copy = tmp_path / "crimson-radpref"
    shutil.copytree(src, copy)
    fp = fingerprint("radpref", data_root=shared_data)
    assert len(fp) == 16 and fingerprint("radpref", data_root=tmp_path) == fp  # same bytes, same print
    (copy / "preference_data.json").write_bytes((src / "preference_data.json").read_bytes() + b" ")
    assert fingerprint("radpref", data_root=tmp_path) != fp


def test_required_files_lists_files_under_a_required_folder_in_fingerprint_order(tmp_path):
    from radaudit.data import fingerprint, required_files

    mention = tmp_path / "cxr-label-phrases" / "chexpert-labeler" / "phrases" / "mention"
    (mention / "sub").mkdir(parents=True)
    for rel, text in [("b.txt", "effusion"), ("a.txt", "edema"), ("sub/c.txt", "opacity")]:
        (mention / rel).write_text(text)
    folder, files = required_files("cxr_label_phrases", data_root=tmp_path)
    assert folder == tmp_path / "cxr-label-phrases"
    # files only (the folder "sub" is not one), sorted: the order the fingerprint hashes them in
    assert [str(f.relative_to(mention)) for f in files] == ["a.txt", "b.txt", "sub/c.txt"]
    before = fingerprint("cxr_label_phrases", data_root=tmp_path)
    (mention / "sub" / "c.txt").write_text("opacities")  # a file deep under the required folder is part of the version
    assert fingerprint("cxr_label_phrases", data_root=tmp_path) != before
