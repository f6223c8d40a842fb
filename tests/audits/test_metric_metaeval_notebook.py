"""The metric_metaeval notebook on its smoke preset, end to end (tests/test_notebooks.py checks only
that notebooks are stored clean; it does not execute them)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.run import run_experiment


def test_smoke_notebook_writes_every_table_and_figure(shared_data, tmp_path):
    res = run_experiment("metric_metaeval", "smoke", data_root=str(shared_data), out=tmp_path, progress=False)
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
    assert set(t4["Metric"]) == {"ROUGE-L", "BLEU-4"} and "Overall" in t4.columns
    assert (d / "pairs_dataset" / "pairs.parquet").exists() and (d / "pairs_dataset" / "provenance.json").exists()
    scores = pd.read_parquet(d / "scores_per_pair.parquet")
    assert len(scores) == 2 * (40 + 10)  # 40 Table 2 cells x 1 pair + 2 reports x 5 groups, two metrics
    assert m["recorded"]["pair_datasets"]["pairs_dataset"]["n_pairs"] == 40
    # findings.json: the context ablation's two medians, each the median of the per-metric table's AUROCs
    from radaudit.findings import read_findings

    f = {x.id: x for x in read_findings(d)["findings"]}
    assert list(f)[:2] == ["whole_report_auroc_median", "trimmed_pair_auroc_median"]
    comp = pd.read_csv(d / "tables" / "auroc_context_ablation.csv")
    assert f["trimmed_pair_auroc_median"].value == pytest.approx(comp["auroc_paper"].median())
    assert f["whole_report_auroc_median"].value == pytest.approx(comp["auroc_full"].median())
    assert all(x.ci is None or x.ci[0] <= x.value <= x.ci[1] for x in f.values())
