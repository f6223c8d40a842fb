"""``radaudit run metric_metaeval --preset paper --rehearse`` (issue 19): ReEvalMed's paper path on CPU, with tiny twins
of DeepSeek-R1-Distill-Qwen-7B (the rewriter) and roberta-large (BERTScore), invented MIMIC-CXR and ReXVal fixtures.
Select with ``-m rehearsal``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.errors import ParamsError
from radaudit.run import run_experiment

pytestmark = [pytest.mark.rehearsal, pytest.mark.usefixtures("rehearsal_cache")]



@pytest.mark.long
def test_metric_metaeval_paper_rehearsal_runs_with_every_reply_unparseable(tmp_path):
    res = run_experiment("metric_metaeval", "paper", out=tmp_path, progress=False, rehearse=True)
    m = json.loads((res.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and res.run_dir.name.endswith("_rehearsal")
    rehearsal = m["rehearsal"]
    # every model id the preset names, with its twin's class (the class AutoModel loads for BERTScore)
    assert {k: v for k, v in rehearsal.items() if "/" in k or k == "roberta-large"} == {
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "Qwen2ForCausalLM", "roberta-large": "RobertaModel"}
    assert rehearsal["rexval_path"].startswith("null -> invented ReXVal fixture")
    assert rehearsal["metric_options.bertscore.num_layers"].startswith("17 ")

    # the paper's other params are kept: engine, dtype, batch size, decoding strategy, averages
    p = m["params"]
    assert (p["engine"], p["llm_dtype"], p["llm_batch_size"], p["cell_average"], p["overall_ci"]) == (
        "llm", "bf16", 8, "pairs", "paper")
    assert p["llm_strategy"] == {"name": "r1_recommended", "do_sample": True, "temperature": 0.6, "top_p": 0.95}
    assert p["metric_options"]["bertscore"]["num_layers"] == 17 and p["datasets"] == ["mimic_cxr"]

    # the twin's rewrites are noise: every one of the 40 Table 2 cells' replies is unparseable, counted, kept
    fill = pd.read_csv(res.run_dir / "tables" / "pair_dataset_fill.csv")
    assert len(fill) == 40 and fill["filled"].sum() == 0
    assert (fill["unparseable"] == 1).all() and (fill["rejected"] == 1).all()
    rejected = pd.read_parquet(res.run_dir / "pairs_dataset" / "rejected.parquet")
    assert len(rejected) == 40 and rejected["verification_note"].str.startswith("unparseable after 3 attempt").all()
    assert m["recorded"]["pair_datasets"]["pairs_dataset"]["n_unparseable"] == 40

    # ... and the run says so instead of reporting an empty, perfect result
    findings = {f["id"]: f for f in json.loads((res.run_dir / "findings.json").read_text())["findings"]}
    assert findings["pairs_filled"]["value"] == 0 and "40 unparseable" in findings["pairs_filled"]["note"]
    for fid in ("trimmed_pair_auroc_median", "whole_report_auroc_median"):
        assert findings[fid]["value"] is None and "no discrimination/robustness pair" in findings[fid]["note"]

    # what does not depend on the rewriter still runs the paper's way: BERTScore on the roberta twin over the
    # rule-built monotonicity set, Figure 4, and Table 1 on the ReXVal fixture (its code path, though rexval_path is null)
    scores = pd.read_parquet(res.run_dir / "scores_per_pair.parquet")
    assert scores["group"].notna().all() and "bertscore" in set(scores["metric"])
    assert (res.run_dir / "figures" / "fig4_monotonicity.png").is_file()
    t1 = pd.read_csv(res.run_dir / "tables" / "table1_rexval_pearson.csv")
    assert len(t1) == 4 and len(t1.columns) == 13  # four candidate types x (6 categories x 2 significances)


def test_metric_metaeval_rehearsal_refuses_what_it_cannot_rehearse(tmp_path):
    with pytest.raises(ParamsError, match="needs neither"):
        run_experiment("metric_metaeval", "demo", out=tmp_path, progress=False, rehearse=True)
    with pytest.raises(ParamsError, match=r"No rehearsal fixture for dataset\(s\) \['chexpert_plus'\]"):
        run_experiment("metric_metaeval", "paper", ["datasets=[chexpert_plus]"], out=tmp_path, progress=False,
                       rehearse=True)
