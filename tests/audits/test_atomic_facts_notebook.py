"""The atomic_facts notebook end to end on its smoke preset."""

from __future__ import annotations

import json

import pandas as pd


def test_smoke_run_writes_agreement_tables_and_figures(smoke_runs):
    r = smoke_runs("atomic_facts")[0]
    m = json.loads((r.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded"
    tables = {p.stem for p in (r.run_dir / "tables").glob("*.csv")}
    assert {"table2_agreement", "table2_long", "table3_preference", "table3_long", "fig4_granular",
            "scores_per_candidate", "trace_example", "atomimed_failures"} <= tables
    figures = {p.stem for p in (r.run_dir / "figures").glob("*.png")}
    assert {"table2_kendall_forest", "table3_preference", "fig4_granular"} <= figures
    failures = pd.read_csv(r.run_dir / "tables" / "atomimed_failures.csv").set_index("stage")
    assert failures.loc["pairs", "n"] == 16 and failures.loc["pairs", "failed"] == 0  # rule backend: no model call
    assert failures.loc["decomposition", "n"] == 0 and m["params"]["backend"] == "rule"
    long = pd.read_csv(r.run_dir / "tables" / "table2_long.csv")
    assert long.filter(like="low").notna().any().any()  # CIs are present
