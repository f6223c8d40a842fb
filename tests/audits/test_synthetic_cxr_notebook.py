"""The synthetic_cxr notebook end to end on its smoke preset: Tables 1-4 and 8 and their figures, with CIs, and the
reference generators ordered as their construction says they must be."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import run_experiment

ISSUE_21_IDS = ("encoder_view_accuracy", "degrader_dose_spearman", "privacy_reference_overlap", "memoriser_flagged",
                "heldout_real_flagged", "diffusion_vs_heldout_fid_gap_cxr")
ISSUE_40_IDS = ("encoder_view_gain_over_pixels", "memoriser_flagged_paper_delta", "diffusion_flagged")
CONTROL_IDS = ("encoder_view_accuracy", "degrader_dose_spearman", "privacy_reference_overlap", "memoriser_flagged",
               "heldout_real_flagged")


@pytest.fixture(scope="module")
def smoke_run(smoke_runs):
    """The first of the session's two smoke runs (tests/conftest.py), shared with the determinism test."""
    return smoke_runs("synthetic_cxr")[0]


def test_smoke_run_writes_every_table_and_figure(smoke_run):
    d = smoke_run.run_dir
    assert json.loads((d / "manifest.json").read_text())["status"] == "succeeded"
    tables = {p.stem for p in (d / "tables").glob("*.csv")}
    assert {"data_splits", "demo_model_quality", "table1_fidelity", "table1_long", "table2_per_label",
            "table3_privacy", "table3_long", "table4_utility", "table4_long", "table5_report_generation",
            "table5_long", "table8_ranks"} <= tables
    figures = {p.stem for p in (d / "figures").glob("*.png")}
    assert {"samples", "table1_fidelity", "table2_per_label", "table3_privacy", "privacy_nearest_pairs_memoriser",
            "privacy_nearest_pairs_demo-diffusion", "table4_utility", "table4_roc", "table5_report_generation",
            "table8_rank_scatter"} <= figures
    t4 = pd.read_csv(d / "tables" / "table4_utility.csv").set_index("training source")
    assert t4.loc["real", "macro"].count("[") == 1  # every cell carries its CI


def test_reference_generators_get_the_verdicts_they_were_built_for(smoke_run):
    d = smoke_run.run_dir / "tables"
    fid = pd.read_csv(d / "table1_long.csv")
    fid = fid[(fid["metric"] == "fid") & (fid["encoder"] == "cxr")].set_index("generator")
    assert fid["estimate"].idxmax() in ("degrader", "demo diffusion")  # the smoke diffusion model is 5 steps of noise
    assert fid.loc["degrader", "estimate"] > fid.loc["held-out real", "estimate"]
    assert fid[["low", "high"]].notna().all().all()
    priv = pd.read_csv(d / "table3_long.csv")
    pix = priv[priv["metric"] == "avg_pixel_distance"].set_index("generator")["estimate"]
    reid = priv[priv["metric"] == "avg_reid"].set_index("generator")["estimate"]
    assert pix.idxmin() == "memoriser" and reid.idxmax() == "memoriser"  # a copy is closest and most re-identifiable
    rep = pd.read_csv(d / "table5_long.csv")
    assert {"bleu1", "bleu4", "rougeL", "f1_micro", "f1_macro"} <= set(rep["metric"])
    assert set(rep["source"]) == {"real", "demo diffusion", "held-out real", "memoriser", "degrader"}
    # every source is scored on the same real test studies; no order between memoriser and degrader is asserted:
    # both pair training images with their own labels (the degrader blurs them), so 1-NN retrieval of a label can
    # favour either (the demo's three seeds give 0.73 vs 0.65, 0.71 vs 0.77, 0.74 vs 0.74)
    f1 = rep[rep["metric"] == "f1_micro"].set_index("source")
    assert (f1["n"] == f1.loc["real", "n"]).all()
    assert ((f1["low"] <= f1["estimate"]) & (f1["estimate"] <= f1["high"])).all()
    util = pd.read_csv(d / "table4_long.csv")
    assert {"real", "memoriser", "degrader"} <= set(util["source"])
    assert util.loc[util["label"] == "macro", ["ci_low", "ci_high"]].notna().all().all()


def test_smoke_run_writes_the_controls_and_findings(smoke_run):
    """Issue 21: the stand-ins' controls are computed by the run and land in findings.json with the ids the issue
    names; the reference sets are clean by construction (overlap 0, held-out real without replacement)."""
    from radaudit.findings import read_findings

    d = smoke_run.run_dir
    doc = read_findings(d)
    ids = {f.id: f for f in doc["findings"]}
    assert set(ISSUE_21_IDS) <= set(ids)
    assert ids["privacy_reference_overlap"].value == 0 and ids["privacy_reference_overlap"].verdict == "shown"
    assert "majority share" in ids["encoder_view_accuracy"].note
    assert ids["memoriser_flagged"].ci is not None and ids["heldout_real_flagged"].ci is not None
    assert ids["degrader_dose_spearman"].value is not None and "5 levels" in ids["degrader_dose_spearman"].note
    # issue 40: every control has a bar, the findings name the controls they rest on, the re-ID threshold is
    # calibrated on one half of the training patients and the flags are read on the other
    assert set(ISSUE_40_IDS) <= set(ids)
    assert all(ids[c].bar is not None for c in CONTROL_IDS)
    assert set(ids["diffusion_flagged"].controls) == {"privacy_reference_overlap", "memoriser_flagged",
                                                      "heldout_real_flagged"}
    assert set(ids["diffusion_vs_heldout_fid_gap_cxr"].controls) == {"encoder_view_accuracy", "degrader_dose_spearman"}
    held = ids["heldout_real_flagged"].note
    assert "audit-half prompts" in held and "calibration half" in held
    assert ids["encoder_view_gain_over_pixels"].ci is not None
    reid = json.loads((d / "manifest.json").read_text())["recorded"]["reid_threshold"]
    splits = pd.read_csv(d / "tables" / "data_splits.csv").set_index("split")
    # the two halves partition the training patients (ids that share a picture count as one patient)
    assert reid["n_calibration_patients"] + reid["n_audit_patients"] == splits.loc["train", "patients"]
    assert abs(reid["n_calibration_patients"] - reid["n_audit_patients"]) <= 1
    tables = {p.stem for p in (d / "tables").glob("*.csv")}
    assert {"degrader_dose_long", "degrader_dose_spearman", "privacy_reference_overlap"} <= tables
    figures = {p.stem for p in (d / "figures").glob("*.png")}
    assert {"degrader_dose_response", "reid_threshold"} <= figures
    t2 = pd.read_csv(d / "tables" / "table2_per_label_long.csv")
    assert {"fid_low", "fid_high"} <= set(t2.columns)
    ok = t2["fid"].notna()
    assert (t2.loc[ok, "fid_low"] <= t2.loc[ok, "fid_high"]).all()
    util = pd.read_csv(d / "tables" / "table4_long.csv")
    rare = util[(util["source"] != "real") & util["label"].isin(["ARDS", "No Finding"])]
    # an untested row says why (a bare "n/a" would be read back by pandas as a missing value)
    assert rare["pvalue"].isna().all() and rare["significance"].str.startswith("n/a (").all()
    rep = pd.read_csv(d / "tables" / "table5_long.csv")
    macro = rep[(rep["source"] != "real") & (rep["metric"] == "f1_macro")]
    assert macro["p_value"].isna().all() and macro["note"].str.contains("significance n/a").all()


@pytest.fixture(scope="module")
def demo_run(shared_data, tmp_path_factory):
    return run_experiment("synthetic_cxr", "demo", data_root=str(shared_data), out=tmp_path_factory.mktemp("sc_demo"),
                          progress=False)


@pytest.mark.slow
def test_demo_run_meets_issue_21_and_matches_the_readme(demo_run):
    """Issue 21's bars on the demo preset (the encoder's view bar is the test below), and the README block is this
    run's (same params + seed -> same findings.json)."""
    from radaudit.findings import read_findings, readme_block, readme_findings
    from radaudit.paths import project_root

    doc = read_findings(demo_run.run_dir)
    f = {x.id: x for x in doc["findings"]}
    assert f["degrader_dose_spearman"].value == 1.0
    assert f["privacy_reference_overlap"].value == 0
    assert f["memoriser_flagged"].value >= 0.9 and f["heldout_real_flagged"].value <= 0.1
    delta = f["memoriser_flagged_paper_delta"]
    if "below δ" in delta.note:  # the stand-in's ceiling is below the paper's δ: nothing can be flagged at δ
        assert delta.value == 0 and delta.verdict == "not shown"
    gap = f["diffusion_vs_heldout_fid_gap_cxr"]
    assert gap.verdict == "shown" or (gap.verdict == "not shown" and gap.note)
    body = readme_findings((project_root() / "docs" / "experiments" / "synthetic_cxr.md").read_text(encoding="utf-8"),
                          "synthetic_cxr")  # the findings block lives on the experiment page
    run_name = body.split("run (", 1)[1].split(")", 1)[0]
    assert body == readme_block(doc, run_name), "the page's numbers are stale: radaudit findings synthetic_cxr --docs"


@pytest.mark.slow
def test_demo_encoder_sees_the_view(demo_run):
    """Issue 21's encoder bar: view (projection) accuracy >= majority share + 0.15. Met on the Intel Xeon of the
    2026-11-27 demo timings (0.692 against 0.673); the same code trained on the AMD machine of earlier rounds gave
    0.654 (the bar sits at the edge of what ~320 training images at 64 px hold: linear probes on the pixels reach
    0.66-0.70 on the held-out split, where the majority share is 0.613). A failure here on another CPU is that edge,
    reported, not hidden."""
    from radaudit.findings import read_findings

    view = {x.id: x for x in read_findings(demo_run.run_dir)["findings"]}["encoder_view_accuracy"]
    majority = float(view.note.split("majority share ")[1].split(" ")[0])
    assert view.value >= majority + 0.15
