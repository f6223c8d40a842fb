"""metric_metaeval's control, ``oracle_auroc_control``, shown passing on well-made pairs and FAILING on broken ones:
pair labels shuffled (they no longer match the rules that made the pairs), and too few pairs for a separating
metric's CI to clear 0.6. A headline that rests on a failed control is lowered by radaudit.findings.settle."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats as sps

from radaudit.audits import metric_metaeval as mm
from radaudit.findings import settle
from radaudit.perturb.base import RULES

INSIG = [n for n, r in RULES.items() if r.significance == "insignificant"]
SIG = [n for n, r in RULES.items() if r.significance == "significant"]


def _scores(n_per_side: int) -> pd.DataFrame:
    """A score_pairs-shaped table of one metric on ``n_per_side`` harmless and harmful pairs, each with the rule
    that made it (the oracle reads the rule; the AUROC reads the significance column)."""
    rows = []
    for kind, rules in (("insignificant", INSIG), ("significant", SIG)):
        for j in range(n_per_side):
            rows.append({"pair_id": f"{kind[:3]}{j:03d}", "metric": "bleu4", "score": 0.5, "significance": kind,
                         "rule": rules[j % len(rules)], "higher_is_better": True, "group": None})
    return pd.DataFrame(rows)


def _headline_resting_on(oracle) -> dict:
    whole = {"median": 0.5, "low": 0.45, "high": 0.55, "n_metrics": 10, "n_pairs": 400, "method": "bca"}
    return {f.id: f for f in settle(mm.headline_findings(whole, whole, oracle=oracle))}


def test_oracle_noise_is_set_to_its_target_auroc():
    # hand-computed: Φ⁻¹(0.9) = 1.2815516, σ = 1 / (√2 · 1.2815516) = 0.5517584
    assert mm.oracle_noise_sd(0.9) == pytest.approx(0.5517584, abs=1e-6)
    assert mm.oracle_noise_sd(0.76) == pytest.approx(1 / (math.sqrt(2) * 0.7063026), abs=1e-6)
    assert sps.norm.cdf(1 / (mm.oracle_noise_sd(0.8) * math.sqrt(2))) == pytest.approx(0.8)
    for bad in (0.5, 1.0, 0.3):
        with pytest.raises(Exception, match="must lie in"):
            mm.oracle_noise_sd(bad)


def test_the_control_passes_on_well_made_pairs_and_the_headline_keeps_its_verdict():
    res = mm.oracle_auroc(_scores(100), n_bootstrap=300, seed=1)
    assert res["n_from_rules"] == 200 and res["n_from_labels"] == 0 and res["n_pairs"] == 200
    assert 0.8 < res["median"] < 0.97 and res["low"] > 0.6  # ≈ its population AUROC 0.9
    f = _headline_resting_on(res)
    assert f["oracle_auroc_control"].verdict == "shown"
    assert f["whole_report_auroc_median"].verdict == "shown"
    assert f["whole_report_auroc_median"].controls == ("oracle_auroc_control",)


def test_the_control_fails_when_the_pair_labels_are_shuffled():
    df = _scores(100)
    shuffled = df.assign(significance=df["significance"].sample(frac=1, random_state=3).to_numpy())
    res = mm.oracle_auroc(shuffled, n_bootstrap=300, seed=1)
    assert abs(res["median"] - 0.5) < 0.15  # the labels no longer match the rules: no separation
    f = _headline_resting_on(res)
    assert f["oracle_auroc_control"].verdict == "not shown" and "the control failed" in f["oracle_auroc_control"].note
    head = f["whole_report_auroc_median"]
    assert head.verdict == "not shown" and "a control it rests on did not pass: oracle_auroc_control" in head.note


@pytest.mark.parametrize("seed", range(5))
def test_the_control_fails_with_too_few_pairs_to_show_separation(seed):
    """3 + 3 pairs: either the noise happens to separate them perfectly (AUROC 1 on every resample: a zero-width CI,
    descriptive, n/a) or the CI is too wide to clear 0.6 (partly / not shown). Never a passing control."""
    res = mm.oracle_auroc(_scores(3), n_bootstrap=300, seed=seed)
    f = _headline_resting_on(res)
    assert f["oracle_auroc_control"].verdict in ("partly", "not shown", "n/a")
    assert res["low"] < 0.6 or res["low"] == res["high"]
    assert f["whole_report_auroc_median"].verdict == "not shown"


def test_without_a_registered_rule_the_oracle_reads_the_labels_and_says_so():
    df = _scores(20).assign(rule="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")  # LLM-made pairs
    res = mm.oracle_auroc(df, n_bootstrap=100, seed=0)
    assert res["n_from_rules"] == 0 and res["n_from_labels"] == 40
    assert "from the pair's own label for 40" in mm.oracle_finding(res).note
    # same seed, same pairs -> same oracle (deterministic draw)
    assert mm.oracle_scores(df, seed=0)["score"].tolist() == mm.oracle_scores(df, seed=0)["score"].tolist()
