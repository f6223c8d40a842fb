"""The data-overview experiment: its functions on hand-built frames, and the notebook end to end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from radaudit.audits import data_overview as ov
from radaudit.cli import main
from radaudit.data.schema import finalize
from radaudit.run import run_experiment


def _frame(n_f=3, n_m=1, n_na=1):
    sexes = ["F"] * n_f + ["M"] * n_m + [None] * n_na
    n = len(sexes)
    return finalize(pd.DataFrame({
        "study_id": [f"s{i}" for i in range(n)],
        "patient_id": [f"p{i}" for i in range(n)],
        "sex": sexes,
        "age": [30.0, 40.0, 50.0, 60.0, None][:n],
        "findings": ["No effusion.", "Small left effusion.", None, "Heart size normal. Lungs clear.", "Clear."][:n],
        "impression": ["Normal.", None, "Cardiomegaly.", None, None][:n],
        "labels": [["normal"], ["effusion"], ["cardiomegaly", "effusion"], ["normal"], []][:n],
    }), source="toy")


def test_counts_table_by_hand():
    t = ov.counts_table({"toy": _frame()})
    row = t.iloc[0]
    assert (row["studies"], row["patients"], row["with findings"], row["with impression"], row["with sex"], row["with age"]) == (5, 5, 4, 2, 4, 4)


def test_sex_table_shares_and_not_stated_category():
    t = ov.sex_table({"toy": _frame()}, n_bootstrap=200, confidence=0.95, seed=0).set_index("sex")
    assert list(t.index) == ["F", "M", "not stated"]
    assert t.loc["F", "share"] == pytest.approx(0.6) and t.loc["M", "share"] == pytest.approx(0.2)
    assert t.loc["not stated", "n"] == 1
    assert (t["low"] <= t["share"]).all() and (t["share"] <= t["high"]).all()
    assert t.loc["F", "share [95% CI]"].startswith("0.60 [")
    assert set(t["unit"]) == {"patient"}
    # over the 4 records that state a sex: F 3/4, M 1/4; "not stated" has no share of the stated
    assert t.loc["F", "share_of_stated"] == pytest.approx(0.75) and t.loc["M", "share_of_stated"] == pytest.approx(0.25)
    assert (t["n_stated"] == 4).all() and pd.isna(t.loc["not stated", "share_of_stated"])
    assert t.loc["F", "stated_low"] <= 0.75 <= t.loc["F", "stated_high"]


def test_word_count_and_lengths():
    df = _frame()
    lengths = ov.report_lengths({"toy": df})
    # findings + impression joined: "No effusion. Normal." = 3 words; "Small left effusion." = 3; "Cardiomegaly." = 1; 5; 1
    assert list(lengths["words"]) == [3, 3, 1, 5, 1]
    t = ov.length_table(lengths, n_bootstrap=100, confidence=0.95, seed=0)
    assert t.iloc[0]["mean"] == pytest.approx(13 / 5) and t.iloc[0]["median"] == 3


def test_label_prevalence_by_hand():
    t = ov.label_prevalence({"toy": _frame()}, top_k=2, n_bootstrap=100, confidence=0.95, seed=0).set_index("label")
    assert list(t.index) == ["normal", "effusion"]  # 2 each; ties keep first-seen order
    assert t.loc["effusion", "prevalence"] == pytest.approx(2 / 5)
    assert t.loc["effusion", "n"] == 2


def test_age_table_by_hand():
    t = ov.age_table({"toy": _frame()}, n_bootstrap=100, confidence=0.95, seed=0)
    r = t.iloc[0]
    assert (r["n"], r["mean"], r["median"], r["min"], r["max"]) == (4, 45.0, 45.0, 30.0, 60.0)


def test_headline_findings_from_the_tables_by_hand():
    """Female share 3/4 over the records that state a sex (the not-stated one is left out and counted in the
    note); means over fewer than 30 records withheld with the reason; a dataset with no female record gets 0 with
    a note, one without ages no age finding. Repeated 8 times (40 records), the means are reported:
    age (30+40+50+60)/4 = 45, reference words (3+3+1+5+1)/5 = 13/5."""
    boot = dict(n_bootstrap=200, confidence=0.95, seed=0)
    data = {"toy": _frame(), "men": _frame(n_f=0, n_m=2, n_na=0)}
    data["men"] = data["men"].assign(age=np.nan)
    big = pd.concat([_frame()] * 8, ignore_index=True)
    big["study_id"] = [f"s{i}" for i in range(len(big))]
    big["patient_id"] = [f"p{i}" for i in range(len(big))]
    data["toy40"] = big
    sex, age = ov.sex_table(data, **boot), ov.age_table(data, **boot)
    length = ov.length_table(ov.report_lengths(data), **boot)
    found = {f.id: f for f in ov.headline_findings(sex, age, length)}
    assert found["toy_female_share"].value == pytest.approx(0.75)
    assert "over the 4 records that state a sex (1 of 5 records state no sex" in found["toy_female_share"].note
    lo, hi = found["toy_female_share"].ci
    assert lo <= 0.75 <= hi and hi - lo > 0
    assert found["toy_mean_age"].value is None and "withheld: only 4 records state an age" in found["toy_mean_age"].note
    assert found["toy_mean_report_words"].value is None and "only 5 reports" in found["toy_mean_report_words"].note
    assert found["toy40_mean_age"].value == pytest.approx(45.0) and "32 records state an age" in found["toy40_mean_age"].note
    assert found["toy40_mean_report_words"].value == pytest.approx(13 / 5)
    assert age.set_index("dataset").loc["toy", "flag"] == "few records (n < 30)"
    assert age.set_index("dataset").loc["toy40", "flag"] == ""
    assert found["men_female_share"].value == 0.0 and "no record" in found["men_female_share"].note
    assert "men_mean_age" not in found
    assert all(f.verdict == "n/a" and f.paper is None for f in found.values())


def test_resampling_unit_falls_back_to_study():
    df = _frame()
    df.loc[0, "patient_id"] = pd.NA
    units, name = ov.resampling_units(df)
    assert name == "study" and list(units) == list(df["study_id"])


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*")) if p.is_file()}


@pytest.mark.long
def test_smoke_twice_gives_identical_tables_figures_and_findings(smoke_runs):
    """Two runs with the same params: two run folders, byte-identical tables, figures (PNG and PDF) and findings."""
    a, b = smoke_runs("data_overview", 2)
    assert a.run_dir != b.run_dir
    for sub in ("tables", "figures"):
        da, db = _digests(a.run_dir / sub), _digests(b.run_dir / sub)
        assert da and da == db, sub
    assert (a.run_dir / "findings.json").read_bytes() == (b.run_dir / "findings.json").read_bytes()


def test_smoke_run_end_to_end(smoke_runs, shared_data):
    """Every cell runs; real numbers in the tables; findings equal to the tables'."""
    (a,) = smoke_runs("data_overview")
    ta = _digests(a.run_dir / "tables")
    for name in ("counts", "sex", "age", "report_length", "label_prevalence", "radpref_ratings"):
        assert {f"{name}.csv", f"{name}.md", f"{name}.tex"} <= set(ta), name
    for name in ("sex", "age", "report_length", "label_prevalence", "radpref_ratings", "example_images"):
        # smoke and demo save PNGs only (figure_pdf: false); the paper preset adds the vector PDF
        assert (a.run_dir / "figures" / f"{name}.png").exists() and not (a.run_dir / "figures" / f"{name}.pdf").exists()
    counts = pd.read_csv(a.run_dir / "tables" / "counts.csv").set_index("dataset")
    assert (counts["studies"] == 60).all()  # smoke subsamples 60 rows per dataset
    m = json.loads((a.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and m["params"]["max_rows"] == 60 and m["params"]["data_root"] == str(shared_data)
    assert len(m["steps"]) >= 6 and m["git"]["commit"]
    recorded = {d["dataset"]: d for d in m["recorded"]["datasets"]}
    from radaudit.data import fingerprint

    assert recorded["iu_xray"]["fingerprint"] == fingerprint("iu_xray", data_root=shared_data)
    html = (a.run_dir / "data_overview.html").read_text()
    assert "Data overview" in html and "data:image/png;base64" in html
    # findings.json: the headline numbers are the tables' own (same estimate and CI)
    from radaudit.findings import read_findings

    found = {f.id: f for f in read_findings(a.run_dir)["findings"]}
    age = pd.read_csv(a.run_dir / "tables" / "age.csv").set_index("dataset")
    for ds in age.index:
        f = found[f"{ds}_mean_age"]
        if age.loc[ds, "n"] < ov.MIN_N_MEAN:
            assert f.value is None and "withheld" in f.note
        else:
            assert f.value == pytest.approx(age.loc[ds, "mean"]) and f.verdict == "n/a"
    assert {"iu_xray_female_share", "iu_xray_mean_report_words"} <= set(found)


def test_wrong_data_root_names_the_missing_dataset(tmp_path):
    r = CliRunner().invoke(main, ["run", "data_overview", "--preset", "smoke", "--data-root", str(tmp_path), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "Dataset 'iu_xray'" in r.output and "was not found" in r.output
    assert "radaudit data fetch iu_xray" in r.output
    assert not (tmp_path / "o").exists()


def test_unknown_param_fails_before_running(tmp_path):
    r = CliRunner().invoke(main, ["run", "data_overview", "-p", "no_such_key=1", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "no_such_key" in r.output and "Allowed keys:" in r.output and "datasets" in r.output
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_demo_run(shared_data, tmp_path):
    res = run_experiment("data_overview", "demo", data_root=str(shared_data), out=tmp_path, progress=False)
    counts = pd.read_csv(res.run_dir / "tables" / "counts.csv").set_index("dataset")
    assert counts.loc["iu_xray", "studies"] == 3851
    assert counts.loc["chexpert_plus_valid", "studies"] == 200
    sex = pd.read_csv(res.run_dir / "tables" / "sex.csv")
    cp = sex[sex["dataset"] == "chexpert_plus_valid"].set_index("sex")
    assert cp.loc["F", "n"] == 94 and cp.loc["M", "n"] == 104 and cp.loc["not stated", "n"] == 2


@pytest.mark.long
def test_smoke_run_on_credentialed_fixtures(fixtures_dir, tmp_path):
    """The overview reads credentialed sets from their own folders (dataset_paths) and uses their labels."""
    ov_args = ["datasets=[mimic_cxr,chexpert_plus,rexgradient]",
               f"dataset_paths.mimic_cxr={fixtures_dir / 'mimic_cxr'}",
               f"dataset_paths.chexpert_plus={fixtures_dir / 'chexpert_plus'}",
               f"dataset_paths.rexgradient={fixtures_dir / 'rexgradient'}"]
    res = run_experiment("data_overview", "smoke", ov_args, data_root=str(tmp_path), out=tmp_path / "o", progress=False)
    counts = pd.read_csv(res.run_dir / "tables" / "counts.csv").set_index("dataset")
    assert list(counts.index) == ["mimic_cxr", "chexpert_plus", "rexgradient"]
    from radaudit.data import load_dataset

    mimic = load_dataset("mimic_cxr", path=fixtures_dir / "mimic_cxr")
    assert counts.loc["mimic_cxr", "studies"] == len(mimic)
    prev = pd.read_csv(res.run_dir / "tables" / "label_prevalence.csv")
    assert "mimic_cxr" in set(prev["dataset"])


def test_missing_credentialed_dataset_is_skipped_only_when_asked(tmp_path, shared_data):
    from radaudit.errors import DatasetNotFoundError
    from radaudit.run import prepare

    with pytest.raises(DatasetNotFoundError, match="dataset_paths.mimic_cxr"):
        prepare("data_overview", "smoke", ["datasets=[iu_xray,mimic_cxr]"], data_root=str(shared_data))
    _, params = prepare("data_overview", "smoke", ["datasets=[iu_xray,mimic_cxr]", "skip_missing=true"], data_root=str(shared_data))
    data, status = ov.load_all(params)
    assert list(data) == ["iu_xray"]
    assert status.set_index("dataset").loc["mimic_cxr", "status"] == "not present"


def test_example_images_handle_missing_view_and_licence(tmp_path):
    from PIL import Image

    img = tmp_path / "x.png"
    Image.fromarray((np.arange(64 * 64).reshape(64, 64) % 255).astype("uint8")).save(img)
    df = _frame(1, 0, 0)
    df["image_path"] = str(img)
    df["view"] = pd.NA
    df["finding"] = ["todo"]
    df["license"] = [pd.NA]
    fig = ov.fig_example_images({"toy": df}, seed=0)
    title = fig.axes[0].get_title()
    assert "view not stated" in title and "unlabelled" in title and "licence: not stated" in title


@pytest.mark.long
def test_sweep_over_seeds_on_the_real_notebook(shared_data, tmp_path):
    """Other seeds draw other subsamples (and examples): every one must run, and differ."""
    from radaudit.sweep import sweep

    res = sweep("data_overview", "smoke", ["seed=1,2"], data_root=str(shared_data), out=tmp_path, progress=False,
                engine="serial")  # the Ray engine on the same sweep: tests/test_sweep_ray.py
    sweep_dir, index = res.sweep_dir, res.summary
    assert sweep_dir.parent == tmp_path / "data_overview" / "sweeps"
    assert list(index["status"]) == ["succeeded", "succeeded"], index["error"].tolist()
    ages = [pd.read_csv(sweep_dir / f / "tables" / "age.csv")["mean"].tolist() for f in index["folder"]]
    assert ages[0] != ages[1]
