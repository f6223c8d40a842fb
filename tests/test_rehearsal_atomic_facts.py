"""``radaudit run atomic_facts --preset paper --rehearse`` (issue 19): AtomiMed's LLM path on CPU with a tiny twin of
Qwen3-235B-A22B, on the transformers backend in place of vLLM (which needs a GPU). Select with ``-m rehearsal``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from radaudit.errors import ParamsError
from radaudit.run import run_experiment

pytestmark = [pytest.mark.rehearsal, pytest.mark.usefixtures("rehearsal_cache")]



@pytest.mark.long
def test_atomic_facts_paper_rehearsal_counts_every_failed_decomposition(tmp_path):
    res = run_experiment("atomic_facts", "paper", out=tmp_path, progress=False, rehearse=True)
    m = json.loads((res.run_dir / "manifest.json").read_text())
    assert m["status"] == "succeeded" and res.run_dir.name.endswith("_rehearsal")
    assert m["rehearsal"] == {"Qwen/Qwen3-235B-A22B": "Qwen3MoeForCausalLM",
                              "llm_engine": "vllm -> transformers (vLLM needs a GPU)",
                              "llm_options": "tensor_parallel_size left out (vllm.LLM options)"}
    # the paper's other params are kept: the LLM backend, its batch size, retries, theta and weights
    p = m["params"]
    assert (p["backend"], p["llm_batch_size"], p["max_retries"], p["theta"], p["weight"]) == ("llm", 64, 2, 0.8, 0.5)
    assert p["llm_engine"] == "transformers" and p["llm_options"] == {} and p["max_cases"] == 4

    # every decomposition reply of the twin is unparseable: each is counted, no candidate gets a score
    fails = pd.read_csv(res.run_dir / "tables" / "atomimed_failures.csv").set_index("stage")
    # 4 RadPref cases: 4 references + 8 candidates, each asked once and re-asked max_retries times
    assert fails.loc["decomposition", ["n", "ok", "failed", "attempts"]].tolist() == [12, 0, 12, 36]
    assert fails.loc["pairs", "failed"] == 8
    assert m["recorded"]["atomimed_not_scored"] == 8 and m["recorded"]["atomimed_unparseable"] == 16
    scores = pd.read_csv(res.run_dir / "tables" / "scores_per_candidate.csv")
    assert scores["atomimed"].isna().all() and np.isfinite(scores["bleu4"]).all()  # never a score without facts
    assert any("8 of 8 candidate reports could not be scored" in line for line in m["recorded"]["summary"])
    # every table and figure is still produced
    for name in ("table2_agreement.csv", "table3_preference.csv", "fig4_granular.csv"):
        assert (res.run_dir / "tables" / name).is_file()
    assert (res.run_dir / "figures" / "table3_preference.png").is_file()


def test_atomic_facts_rehearsal_replaces_rexval_and_refuses_the_rule_backend(tmp_path):
    from radaudit.audits.atomic_facts import Params, rexval_study
    from radaudit.audits.atomic_facts.rehearsal import rehearse

    with pytest.raises(ParamsError, match="needs neither"):
        run_experiment("atomic_facts", "demo", out=tmp_path, progress=False, rehearse=True)
    params, rehearsal = rehearse(Params(dataset="rexval", preference_from="total_errors", backend="rule"), tmp_path)
    assert rehearsal == {"dataset_path": "invented ReXVal fixture (12 studies)"}
    study = rexval_study(params.dataset_path, None, params.max_cases)
    assert study.candidates["case_id"].nunique() == 4 and len(study.raters) == 6
