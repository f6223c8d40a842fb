"""The metric_metaeval notebook on its smoke preset, end to end (tests/test_notebooks.py checks only
that notebooks are stored clean; it does not execute them)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import run_experiment


def test_smoke_notebook_writes_every_table_and_figure(shared_data, tmp_path, monkeypatch):
    # a filled review sheet from "an earlier run": reviewer 1 calls one of two significant pairs harmless
    filled = tmp_path / "filled.csv"
    pd.DataFrame({"pair_id": ["a", "b", "c"], "significance": ["significant", "significant", "insignificant"],
                  "rule": ["r1", "r1", "r2"], "reviewer1_significance": ["significant", "insignificant", "insignificant"],
                  "reviewer1_one_change": ["yes", "yes", ""], "reviewer1_comment": ""}).to_csv(filled, index=False)
    res = run_experiment("metric_metaeval", "smoke", [f"review_sheet={filled}"], data_root=str(shared_data),
                         out=tmp_path, progress=False)
    d = res.run_dir
    m = json.loads((d / "manifest.json").read_text())
    assert m["status"] == "succeeded"
    for t in ("table4_discriminative", "table5_robustness", "ds_rs_long", "auroc_long", "auroc_overall",
              "auroc_context_ablation", "fig4_monotonicity_means", "monotonicity_summary", "table1_radpref_pearson",
              "table1_rexval_pearson", "pair_dataset_fill", "undefined_scores"):
        assert (d / "tables" / f"{t}.csv").exists(), t
    for f in ("fig2_discriminative_vs_robustness", "auroc_heatmap", "auroc_context_ablation", "fig4_monotonicity"):
        assert (d / "figures" / f"{f}.png").exists(), f
    t4 = pd.read_csv(d / "tables" / "table4_discriminative.csv")
    # the label F1 shares the pairs' verifier: marked † in Tables 4/5, the AUROC tables, with the caption's footnote
    assert set(t4["Metric"]) == {"ROUGE-L", "BLEU-4", "CheXpert-label F1 (micro, 14) †"} and "Overall" in t4.columns
    assert "† verified by the same labeler" in (d / "tables" / "table5_robustness.md").read_text(encoding="utf-8")
    overall = pd.read_csv(d / "tables" / "auroc_overall.csv", keep_default_na=False).set_index("label")
    assert overall.at["CheXpert-label F1 (micro, 14) †", "shares_verifier"] == "verified by the same labeler"
    assert overall.at["BLEU-4", "shares_verifier"] == ""
    assert (d / "pairs_dataset" / "pairs.parquet").exists() and (d / "pairs_dataset" / "provenance.json").exists()
    scores = pd.read_parquet(d / "scores_per_pair.parquet")
    assert len(scores) == 3 * (40 + 10)  # 40 Table 2 cells x 1 pair + 2 reports x 5 groups, three metrics
    assert m["recorded"]["pair_datasets"]["pairs_dataset"]["n_pairs"] == 40
    # findings.json: the context ablation's two medians, each the median of the per-metric table's AUROCs
    from radaudit.findings import read_findings

    f = {x.id: x for x in read_findings(d)["findings"]}
    assert list(f)[:3] == ["whole_report_auroc_median", "trimmed_pair_auroc_median", "oracle_auroc_control"]
    comp = pd.read_csv(d / "tables" / "auroc_context_ablation.csv", keep_default_na=False)
    kept = comp[comp["shares_verifier"] == ""]  # the medians leave out the metric that shares the verifier
    assert len(kept) == 2 and len(comp) == 3
    assert f["trimmed_pair_auroc_median"].value == pytest.approx(kept["auroc_paper"].median())
    assert f["whole_report_auroc_median"].value == pytest.approx(kept["auroc_full"].median())
    assert "chexpert_f1_micro_all14 (verified by the same labeler)" in f["whole_report_auroc_median"].note
    assert f["whole_report_auroc_median"].controls == ("oracle_auroc_control",)
    assert f["oracle_auroc_control"].bar.to_dict() == {"op": ">", "value": 0.6}
    assert all(x.ci is None or x.ci[0] <= x.value <= x.ci[1] for x in f.values())
    # every pair is in the review sheet with blank reviewer columns; the filled sheet was read back
    sheet = pd.read_csv(d / "tables" / "review_sheet.csv", keep_default_na=False)
    assert len(sheet) == 40 and (sheet["reviewer2_significance"] == "").all()
    cells = pd.read_csv(d / "tables" / "rules_per_cell.csv")
    assert f["min_rules_per_cell"].value == cells.loc[cells["n_pairs"] > 0, "n_rules"].min()
    review = pd.read_csv(d / "tables" / "review_agreement.csv").set_index("comparison")
    assert review.at["reviewer1 vs rule: significance", "agreement"] == pytest.approx(2 / 3)
    assert (d / "tables" / "ds_rs_by_rule.csv").exists()
    # issue 42: every estimate of this run's tables carries its interval without the gap declarations (Tables 4/5
    # per cell, the ablation's change, τ of the means and pooled τ): the cells read "estimate [low, high]"
    from radaudit import tables as T

    closed = {k: tuple(x for x in v if not x.gap) for k, v in T.NO_INTERVAL.items() if k.startswith("metric_metaeval/")}
    monkeypatch.setattr(T, "NO_INTERVAL", {**T.NO_INTERVAL, **closed})
    assert T.missing_intervals_in_run(d) == {}
    assert t4["Overall"].str.fullmatch(r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]").all()
    assert {"change_low", "change_high"} <= set(comp.columns)
    mono = pd.read_csv(d / "tables" / "monotonicity_summary.csv")
    assert {"tau_of_means_low", "tau_of_means_high", "tau_pooled_low", "tau_pooled_high"} <= set(mono.columns)


@pytest.mark.slow
def test_demo_run_findings_and_readme(shared_data, tmp_path):
    """Issue 20's bar on the demo: three rules behind every cell, both AUROC medians with their CI, and the
    README's numbers are this run's (same params + seed -> same findings.json)."""
    from radaudit.findings import read_findings, readme_block, readme_findings
    from radaudit.paths import project_root

    r = run_experiment("metric_metaeval", "demo", data_root=str(shared_data), out=tmp_path, progress=False)
    doc = read_findings(r.run_dir)
    f = {x.id: x for x in doc["findings"]}
    assert f["min_rules_per_cell"].value >= 3
    for fid in ("whole_report_auroc_median", "trimmed_pair_auroc_median"):
        assert f[fid].ci[0] <= f[fid].value <= f[fid].ci[1]
    comp = pd.read_csv(r.run_dir / "tables" / "auroc_context_ablation.csv", keep_default_na=False)
    kept = comp[comp["shares_verifier"] == ""]  # the label F1s and AtomiMed share the pairs' verifier
    assert set(comp["metric"]) - set(kept["metric"]) == {
        "chexpert_f1_micro_top5", "chexpert_f1_micro_all14", "chexpert_f1_macro_top5", "chexpert_f1_macro_all14",
        "atomimed", "atomimed_clinical"}
    assert f["whole_report_auroc_median"].value == pytest.approx(kept["auroc_full"].median())
    assert f["oracle_auroc_control"].verdict == "shown"  # enough pairs to see a metric that separates
    body = readme_findings((project_root() / "docs" / "experiments" / "metric_metaeval.md").read_text(encoding="utf-8"),
                          "metric_metaeval")  # the findings block lives on the experiment page
    run_name = body.split("run (", 1)[1].split(")", 1)[0]
    assert body == readme_block(doc, run_name), "the page's numbers are stale: radaudit findings metric_metaeval --docs"
