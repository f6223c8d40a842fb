"""The synthetic_cxr notebook end to end on its smoke preset: Tables 1-4 and 8 and their figures, with CIs, and the
reference generators ordered as their construction says they must be."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import run_experiment


@pytest.fixture(scope="module")
def smoke_run(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("sc_runs")
    return run_experiment("synthetic_cxr", "smoke", data_root=str(shared_data), out=out, progress=False)


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
    f1 = rep[rep["metric"] == "f1_micro"].set_index("source")
    assert f1.loc["memoriser", "estimate"] > f1.loc["degrader", "estimate"]  # copies with their captions retrieve better
    util = pd.read_csv(d / "table4_long.csv")
    assert {"real", "memoriser", "degrader"} <= set(util["source"])
    assert util.loc[util["label"] == "macro", ["ci_low", "ci_high"]].notna().all().all()
