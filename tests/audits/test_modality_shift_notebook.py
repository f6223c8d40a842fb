"""The modality_shift notebook end to end on its smoke preset: every table and figure, computed from the long table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.audits.modality_shift import tables as msm
from radaudit.session import stable_seed


@pytest.fixture(scope="module")
def smoke_run(smoke_runs):
    """The first of the session's two smoke runs (tests/conftest.py), shared with the determinism test."""
    return smoke_runs("modality_shift")[0]


def test_smoke_run_writes_every_table_and_figure(smoke_run):
    d = smoke_run.run_dir
    m = json.loads((d / "manifest.json").read_text())
    assert m["status"] == "succeeded"
    tables = {p.stem for p in (d / "tables").glob("*.csv")}
    assert {"results_long", "answer_rates", "fig2ab_metrics", "fig2cd_nfr", "fig3ab_ece", "fig3cd_reliability",
            "fig4_attention_shares", "fig4_attention_tokens", "swap_partners", "samples_by_split", "controls_auroc",
            "controls_changed", "attention_by_layer", "attention_patch_heatmaps"} <= tables
    figures = {p.stem for p in (d / "figures").glob("*.png")}
    assert {"fig2ab_metrics", "fig2cd_nfr", "fig3ab_ece", "fig3cd_reliability", "fig4_attention_shares",
            "fig4_text_attention", "attention_by_layer", "attention_patch_heatmaps"} <= figures
    assert m["recorded"]["samples"]["evaluated"] == 12 and len(m["recorded"]["summary"]) >= 5


def test_long_table_holds_every_sample_condition_and_the_raw_scores(smoke_run):
    res = pd.read_parquet(smoke_run.run_dir / "tables" / "results_long.parquet")
    # 6 + 2 same-label controls + 4 marked
    assert len(res) == 12 * 12 and res.groupby("sample_id")["condition"].nunique().eq(12).all()
    for col in ("generated", "answer", "prediction", "logit_Yes", "logit_No", "logit_yes", "logit_no", "p_yes", "p_no"):
        assert col in res.columns
    assert set(res["answer"]) <= {"yes", "no", "unknown", "unmatched"}
    assert res["p_yes"].between(0, 1).all()
    # the swaps: every partner has the opposite label, the ground truth stays the sample's
    partners = pd.read_csv(smoke_run.run_dir / "tables" / "swap_partners.csv", dtype=str)
    label = res.drop_duplicates("sample_id").set_index("sample_id")["label"]
    assert (partners["image_partner"].map(label).to_numpy() != partners["sample_id"].map(label).to_numpy()).all()
    for col in ("same_label_image_partner", "same_label_text_partner"):  # the negative controls: same label
        assert (partners[col].map(label).to_numpy() == partners["sample_id"].map(label).to_numpy()).all()
        assert (partners[col] != partners["sample_id"]).all()
    for cond in ("image_shift", "marked_image_shift"):
        shifted = res[res["condition"] == cond]
        assert (shifted["image_source"] != shifted["sample_id"]).all()
        assert (shifted["label"].to_numpy() == shifted["sample_id"].map(label).to_numpy()).all()


def test_figure_tables_are_recomputed_from_the_long_table(smoke_run):
    d = smoke_run.run_dir / "tables"
    res = pd.read_parquet(d / "results_long.parquet")
    saved = pd.read_csv(d / "fig2cd_nfr.csv")
    again = msm.nfr_table(res, n_bootstrap=30, seed=stable_seed(0, "nfr"))
    pd.testing.assert_frame_equal(saved[["condition", "measure", "estimate", "low", "high"]].reset_index(drop=True),
                                  again[["condition", "measure", "estimate", "low", "high"]].reset_index(drop=True),
                                  check_dtype=False, rtol=1e-9)
    rates = pd.read_csv(d / "answer_rates.csv")
    assert rates["n"].sum() == len(res) and {"unknown_rate", "unknown_low", "unknown_high"} <= set(rates.columns)
    ece = pd.read_csv(d / "fig3ab_ece.csv")
    assert ece[["low", "high"]].notna().all().all() and (ece["low"] <= ece["estimate"] + 1e-12).all()


def test_findings_hold_the_controls(smoke_run):
    from radaudit.findings import read_findings

    doc = read_findings(smoke_run.run_dir)
    assert doc["experiment"] == "modality_shift" and doc["preset"] == "smoke"
    found = {f.id: f for f in doc["findings"]}
    assert {"only_image_auroc", "image_probe_auroc", "text_probe_auroc", "no_input_auroc", "image_shift_changed",
            "same_label_image_swap_changed", "same_label_text_swap_changed", "notes_naming_diagnosis_share",
            "majority_accuracy", "text_shift_nfr", "image_shift_nfr"} <= set(found)
    # no_input is chance by construction (one prompt, no image, for every sample): descriptive, not a control
    assert found["no_input_auroc"].value == 0.5 and found["no_input_auroc"].verdict == "n/a"
    assert all("no_input_auroc" not in f.controls for f in found.values())
    assert set(found["text_shift_nfr"].controls) == {"only_image_auroc", "image_shift_changed",
                                                     "same_label_image_swap_changed", "same_label_text_swap_changed"}
    for fid in ("same_label_image_swap_changed", "same_label_text_swap_changed"):  # a control that can fail
        f = found[fid]
        assert f.bar is not None and f.bar.op == "<=" and f.ci is not None and f.ci[0] < f.ci[1]
    metrics = pd.read_csv(smoke_run.run_dir / "tables" / "fig2ab_metrics.csv")
    acc = metrics[metrics["metric"] == "accuracy"]
    assert acc["majority_accuracy"].notna().all()  # beside every accuracy
    assert found["majority_accuracy"].value == pytest.approx(acc["majority_accuracy"].iloc[0])
    auroc = pd.read_csv(smoke_run.run_dir / "tables" / "controls_auroc.csv").set_index("condition")
    # the smoke preset runs the marked conditions, so the positive control reads them; the natural ones beside
    assert found["only_image_auroc"].value == pytest.approx(auroc.at["marked_only_image", "estimate"])
    assert found["natural_only_image_auroc"].value == pytest.approx(auroc.at["only_image", "estimate"])
    maps = pd.read_csv(smoke_run.run_dir / "tables" / "attention_patch_heatmaps.csv")
    assert set(maps["condition"]) == {"no_shift", "image_shift", "text_shift", "only_image", "marked_no_shift",
                                      "marked_image_shift", "marked_only_image"}
    assert maps.groupby(["sample_id", "condition"])["weight"].sum().between(0.999, 1.001).all()
