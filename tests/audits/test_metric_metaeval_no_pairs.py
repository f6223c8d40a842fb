"""metric_metaeval when the rewriting LLM's replies never parse (issue 19's rehearsal found it; a paper run with a
badly prompted or truncated model hits the same): each reply counted per cell as unparseable, distinct from a
rewrite that fails verification, and the findings and summary say there is nothing to score instead of crashing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import metric_metaeval as mm
from radaudit.perturb.dataset import build_pair_dataset
from radaudit.perturb.llm import LLMEngine

REPORTS = pd.DataFrame({"study_id": ["s1", "s2", "s3"], "source": "fixture",
                        "text": ["The lungs are clear. No pleural effusion.", "Mild cardiomegaly. No pneumothorax.",
                                 "Small left pleural effusion. The heart is normal in size."]})


def _dataset(reply: str):
    prompts: list[int] = []

    def generate(batch: list[str]) -> list[str]:
        prompts.append(len(batch))
        return [reply] * len(batch)

    engine = LLMEngine(generate, batched=True, max_retries=1, model="garbage-model")
    return build_pair_dataset(REPORTS, engine, n_per_cell=1, seed=0, max_tasks_per_cell=1), prompts


def test_unparseable_replies_are_counted_per_cell_apart_from_failed_verification():
    ds, prompts = _dataset("<think>hmm</think> the report is fine")
    assert ds.pairs.empty and len(ds.rejected) == 40 and prompts == [40, 40]  # one try + one retry per cell
    assert (ds.fill["unparseable"] == 1).all() and (ds.fill["rejected"] == 1).all()
    assert "1 replies were unparseable, 0 rewrites failed verification" in ds.fill["note"].iloc[0]
    assert ds.provenance["counts"]["unparseable"] == 40

    # a reply that parses but changes text it does not declare is rejected too, and is not "unparseable"
    parsed, _ = _dataset('{"rewritten_report": "Something else entirely.", "original_span": ""}')
    assert parsed.pairs.empty and parsed.fill["unparseable"].sum() == 0 and parsed.fill["rejected"].sum() == 40
    assert "0 replies were unparseable, 1 rewrites failed verification" in parsed.fill["note"].iloc[0]


def test_no_pair_left_gives_counted_findings_and_summary_not_a_crash():
    ds, _ = _dataset("not json")
    examples = mm.examples_table(ds.pairs, 1)
    assert examples.empty and "GT (edited part)" in examples.columns
    scores = pd.DataFrame({"pair_id": ["m1", "m2"], "group": pd.array([0, 1], dtype="Int64"),
                           "metric": "bleu4", "score": [0.9, 0.8]})
    assert mm.n_discrimination_pairs(scores) == 0
    assert mm.n_discrimination_pairs(scores.assign(group=pd.array([pd.NA, 1], dtype="Int64"))) == 1

    findings = {f.id: f for f in mm.headline_findings(None, None, mm.rules_per_cell(ds.pairs), ds.fill,
                                                     no_pairs="no discrimination/robustness pair was left")}
    assert findings["pairs_filled"].value == 0 and "40 unparseable model replies" in findings["pairs_filled"].note
    for fid in ("trimmed_pair_auroc_median", "whole_report_auroc_median"):
        assert findings[fid].value is None and findings[fid].note == "no discrimination/robustness pair was left"
    assert findings["min_rules_per_cell"].value is None

    lines = mm.summary_lines(None, None, fill=ds.fill)
    assert lines == ["**Pair dataset.** 0 of 40 GT-ME pairs filled; 40 rewrites rejected, of which 40 were model "
                     "replies that never matched the JSON schema (counted, kept in pairs_dataset/rejected.parquet): "
                     "no discrimination/robustness pair is left, so Tables 4/5 and the AUROC were not computed."]


def _loop_mean(mat: np.ndarray, method: str) -> float:
    from radaudit.audits.metric_metaeval.agreement import _corr

    vals = [_corr(mat[:, a], mat[:, b], method) for a, b in itertools.combinations(range(mat.shape[1]), 2)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_mean_pairwise_agreement_all_pairs_at_once_equals_pair_by_pair(method):
    from radaudit.audits.metric_metaeval.agreement import _mean_pairwise

    rng = np.random.default_rng(3)
    mat = rng.poisson(1.0, size=(12, 6)).astype(float)
    mat[:, 4] = 2.0  # a constant rater: its pairs are undefined and left out
    fast = _mean_pairwise(mat, method)
    assert np.isfinite(fast) and fast == pytest.approx(_loop_mean(mat, method), abs=1e-12)
    gappy = mat.copy()
    gappy[0, 1] = np.nan  # a missing rating: pairs use the items both rated
    assert _mean_pairwise(gappy, method) == pytest.approx(_loop_mean(gappy, method), abs=1e-12)
    assert math.isnan(_mean_pairwise(mat[:2], method)) and math.isnan(_mean_pairwise(np.ones((5, 3)), method))


def test_pairs_filled_is_a_finding_only_when_a_cell_falls_short():
    ds, _ = _dataset("not json")
    full = ds.fill.assign(filled=ds.fill["target"], shortfall=0, rejected=0, unparseable=0)
    assert "pairs_filled" not in {f.id for f in mm.headline_findings(None, None, fill=full)}
    assert "pairs_filled" in {f.id for f in mm.headline_findings(None, None, fill=ds.fill)}
