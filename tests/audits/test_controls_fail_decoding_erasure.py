"""Every control of decoding_erasure can fail (issue 40): for each control id, a planted defect or a wrong input makes
that control report failure, and the Erasure finding that rests on it is lowered by :func:`radaudit.findings.settle`.

The corpus has real sex associations (F reports: "mastectomy changes", M reports: "aicd device") and a generator
that writes "heart normal. lungs clear." for every study, so with working controls ``erased_terms_greedy`` is
*shown*; each test below breaks one control and checks that it fails for the right reason.
"""

from __future__ import annotations

import pandas as pd
import pytest

from radaudit.audits import decoding_erasure as de
from radaudit.audits.decoding_erasure.findings import control_findings, headline_findings
from radaudit.findings import settle

TEMPLATE = "heart normal. lungs clear."


def _refs(n: int = 80) -> pd.DataFrame:
    refs = [("mastectomy changes. " if i % 2 == 0 else "aicd device. ") + "heart normal. lungs clear."
            + (" small effusion." if i % 3 == 0 else "") + (" osteopenia." if i % 16 == 0 else "") for i in range(n)]
    return pd.DataFrame({"reference": refs, "group": ["F", "M"] * (n // 2)})


@pytest.fixture(scope="module")
def run():
    """The greedy corpus, its counts' bootstrap and the three controls as a run computes them."""
    df = _refs()
    greedy = de.evaluate_corpus(df.assign(prediction=TEMPLATE), name="greedy", encoder=None, n_bootstrap=20,
                                n_permutations=0, surface_metrics=["rouge1"], diversity_metrics=["template_diversity"])
    boot = {"greedy": de.erasure_bootstrap(df.assign(prediction=TEMPLATE), n_bootstrap=60)}
    controls = {"planted": de.planted_control(df, n_bootstrap=100), "negative": de.halving_control(df),
                "floor": de.collapse_floor(df)}
    rev = de.ranking_reversals(de.pstar_sweep_table([greedy], [0.05]))
    return {"df": df, "greedy": greedy, "boot": boot, "controls": controls, "rev": rev}


def _settled(run, **replaced):
    controls = {**run["controls"], **replaced}
    found = headline_findings([run["greedy"]], controls, run["rev"], set(), erasure_ci=run["boot"])
    return {f.id: f for f in settle(found)}


def test_with_working_controls_the_erased_count_is_shown(run):
    f = _settled(run)
    assert f["erasure_planted_control"].verdict == "shown" and f["erasure_negative_control"].verdict == "shown"
    assert f["erased_terms_greedy"].verdict == "shown" and f["erased_terms_greedy"].value == 4


def test_erasure_planted_control_fails_when_the_model_copies_the_planted_phrase(run):
    # a "model" that writes each study's own (planted) reference erases nothing: the planted words' rate does not
    # fall, so no silence p survives and the control reports failure
    pc = de.planted_control(run["df"], model=lambda d: d["reference"].tolist(), n_bootstrap=100)
    assert pc["erased"] == [] and pc["value"] > pc["p_star"]
    f = _settled(run, planted=pc)
    assert f["erasure_planted_control"].verdict == "not shown"
    assert "calls 0 of the 2 planted words erased" in f["erasure_planted_control"].note
    g = f["erased_terms_greedy"]
    assert g.verdict == "not shown" and "erasure_planted_control (not shown)" in g.note


def test_erasure_planted_control_fails_when_the_plant_is_too_small_to_survive_bh(run):
    # 3 mentions of 40: 2 * 0.5^3 = 0.25 for the reference association, far from surviving BH
    pc = de.planted_control(run["df"], mentions=3, n_bootstrap=100)
    assert pc["mentions"] == 3 and pc["erased"] == [] and pc["value"] > pc["p_star"]
    f = {x.id: x for x in control_findings({**run["controls"], "planted": pc})}
    assert f["erasure_planted_control"].verdict == "not shown"
    assert _settled(run, planted=pc)["erased_terms_greedy"].verdict == "not shown"


def test_erasure_negative_control_fails_when_the_two_halves_differ_by_a_planted_association(run):
    # the "predictions" are the same real reports with a sex-specific phrase removed: every halving compares half A
    # (with the phrase in 80% of its F reports) with half B (without), so the tests flag it as erased every time
    df = run["df"].copy()
    f_rows = (df["group"] == "F").to_numpy() & (df.index.to_numpy() % 5 < 4)
    df.loc[f_rows, "reference"] = df.loc[f_rows, "reference"] + " Pectus excavatum."
    df["prediction"] = df["reference"].str.replace(" Pectus excavatum.", "", regex=False)
    nc = de.halving_control(df, prediction="prediction", n_halvings=50)
    assert nc["alarms"] == 50 and nc["value"] == 1.0 and nc["low"] > nc["p_star"]
    assert {"pectus", "excavatum"} <= set(nc["flagged"])
    f = _settled(run, negative=nc)
    assert f["erasure_negative_control"].verdict == "not shown"
    assert "the tests flag words that nothing erased" in f["erasure_negative_control"].note
    g = f["erased_terms_greedy"]
    assert g.verdict == "not shown" and "erasure_negative_control (not shown)" in g.note
    # the paper's count rests on it too
    assert "erasure_negative_control" in f["erased_terms_greedy_paper_test"].controls
