"""atomic_facts findings.json: verdicts computed from the Table 2 / Table 3 analogs (hand-made tables); on RadPref with
the rule backend they rest on the unseen (test) half, the in-sample value beside them (issue 40)."""

from __future__ import annotations

import pandas as pd
import pytest

from radaudit.audits.atomic_facts import ReaderStudy, headline_findings, split_cases
from radaudit.audits.atomic_facts.findings import IN_SAMPLE, UnseenAgreement, in_sample_reason, unseen_agreement


def _corr(rows):
    base = {"target": "total_errors", "rater": "mean", "coefficient": "kendall", "n_candidates": 40, "n_cases": 20,
            "ci_method": "percentile"}
    return pd.DataFrame([{**base, **r} for r in rows])


ATOMIMED = {"metric": "atomimed", "label": "AtomiMed F1 (paper)", "estimate": 0.5, "low": 0.3, "high": 0.7,
            "diff_vs_reference": float("nan"), "diff_low": float("nan"), "diff_high": float("nan"),
            "diff_p_bh": float("nan")}


def _pref(acc):
    return pd.DataFrame([{"metric": m, "label": m.upper(), "rater": "mean", "statistic": "acc", "estimate": e,
                          "low": lo, "high": hi, "n_strict_pairs": 30} for m, (e, lo, hi) in acc.items()])


UNSEEN_ROWS = [
    ATOMIMED,
    # clearly below AtomiMed: paired CI above 0, adjusted p small -> shown
    {"metric": "bleu4", "label": "BLEU-4", "estimate": 0.2, "low": 0.0, "high": 0.4, "diff_vs_reference": 0.3,
     "diff_low": 0.1, "diff_high": 0.5, "diff_p_bh": 0.01},
    # higher estimate for AtomiMed, but the paired CI reaches 0 -> partly (the estimate clears the bar, the CI does not)
    {"metric": "bertscore", "label": "BERTScore F1", "estimate": 0.45, "low": 0.2, "high": 0.6,
     "diff_vs_reference": 0.05, "diff_low": -0.05, "diff_high": 0.15, "diff_p_bh": 0.3},
    # AtomiMed lower
    {"metric": "chexpert_f1", "label": "Label F1", "estimate": 0.6, "low": 0.4, "high": 0.8,
     "diff_vs_reference": -0.1, "diff_low": -0.2, "diff_high": -0.01, "diff_p_bh": 0.04},
    # paired CI above 0 but the BH-adjusted p is not below 0.05 -> partly, never shown
    {"metric": "rougeL", "label": "ROUGE-L", "estimate": 0.3, "low": 0.1, "high": 0.5, "diff_vs_reference": 0.2,
     "diff_low": 0.01, "diff_high": 0.4, "diff_p_bh": 0.08},
]
#: the same metrics on all cases (in sample): every gain larger; the verdicts must not come from here
ALL_ROWS = [{**r, "n_cases": 100, **({"diff_vs_reference": 0.4, "diff_low": 0.3, "diff_high": 0.5, "diff_p_bh": 0.001}
                                   if r["metric"] != "atomimed" else {"estimate": 0.6, "low": 0.5, "high": 0.7})}
            for r in UNSEEN_ROWS]
HEADLINE = ["bleu4", "bertscore", "chexpert_f1", "rougeL", "green"]


def _unseen(corr=None, pref=None):
    return UnseenAgreement(corr if corr is not None else _corr(UNSEEN_ROWS),
                           pref if pref is not None else _pref({"atomimed": (0.8, 0.7, 0.9), "bleu4": (0.6, 0.5, 0.7),
                                                                "bertscore": (0.65, 0.5, 0.8)}), 20, 100)


def test_radpref_rule_verdicts_rest_on_the_unseen_half_with_the_in_sample_value_beside_them():
    all_pref = _pref({"atomimed": (0.95, 0.9, 0.99), "bleu4": (0.6, 0.5, 0.7), "bertscore": (0.65, 0.5, 0.8)})
    f = {x.id: x for x in headline_findings(_corr(ALL_ROWS), all_pref, HEADLINE, unseen=_unseen())}
    t = f["atomimed_tau_total_errors"]
    assert t.value == 0.5 and t.ci == (0.3, 0.7) and t.verdict == "shown" and t.bar.to_dict() == {"op": ">", "value": 0}
    assert "test half of RadPref: 20 cases" in t.note and "all 100 cases (in sample): τ 0.6 [0.5, 0.7]" in t.note
    assert "unseen half" in t.label
    g = f["atomimed_tau_gain_bleu4"]
    assert g.verdict == "shown" and g.value == 0.3 and g.ci == (0.1, 0.5) and "BLEU-4" in g.label
    assert g.bar.to_dict() == {"op": ">", "value": 0} and "all 100 cases (in sample): 0.4 [0.3, 0.5]" in g.note
    b = f["atomimed_tau_gain_bertscore"]
    assert b.verdict == "partly" and "not higher beyond the noise" in b.note and "crosses the bar" in b.note
    c = f["atomimed_tau_gain_chexpert_f1"]
    assert c.verdict == "not shown" and "lower" in c.note
    r = f["atomimed_tau_gain_rougel"]  # ids are lower case
    assert r.verdict == "partly" and "BH-adjusted p is 0.08" in r.note
    # a headline metric this run did not compute: no value, the reason, never a gap
    assert f["atomimed_tau_gain_green"].value is None and f["atomimed_tau_gain_green"].verdict == "n/a"
    # preference on the unseen half: AtomiMed's CI low (0.7) clears both baselines' estimates (0.6, 0.65)
    p = f["atomimed_preference_accuracy"]
    assert p.verdict == "shown" and p.value == 0.8 and p.paper == pytest.approx(0.9571)
    assert p.bar.to_dict() == {"op": ">", "value": 0.65} and "all cases (in sample): 0.95 [0.9, 0.99]" in p.note
    assert f["atomimed_unparseable_replies"].value == 0 and f["atomimed_unparseable_replies"].verdict == "n/a"


def test_radpref_rule_without_an_unseen_half_is_descriptive_in_sample():
    """The in-sample numbers stay (value, CI, bar) but judge nothing: n/a, the reason first."""
    pref = _pref({"atomimed": (0.8, 0.7, 0.9), "bleu4": (0.6, 0.5, 0.7)})
    missing = UnseenAgreement(None, None, 1, 100, "this run holds 1 case(s) of the test half")
    for unseen in (None, missing):
        f = {x.id: x for x in headline_findings(_corr(ALL_ROWS), pref, ["bleu4"], unseen=unseen)}
        for fid in ("atomimed_tau_total_errors", "atomimed_tau_gain_bleu4", "atomimed_preference_accuracy"):
            assert f[fid].verdict == "n/a" and f[fid].value is not None, fid
            assert f[fid].note.startswith("in-sample: the lexicon was partly written looking at these cases"), fid
        assert f["atomimed_tau_gain_bleu4"].value == 0.4 and f["atomimed_tau_gain_bleu4"].ci == (0.3, 0.5)
    assert "1 case(s) of the test half" in f["atomimed_tau_total_errors"].note
    assert in_sample_reason("radpref", "rule") == IN_SAMPLE and in_sample_reason("radpref/test", "rule") == IN_SAMPLE
    assert in_sample_reason("radpref", "llm") is None and in_sample_reason("rexval", "rule") is None


def test_no_agreement_close_baseline_missing_atomimed_and_llm_failures():
    weak = {**ATOMIMED, "low": -0.05}
    pref = _pref({"atomimed": (0.8, 0.66, 0.9), "bleu4": (0.7, 0.6, 0.8)})
    f = {x.id: x for x in headline_findings(_corr([weak]), pref, ["bleu4"], backend="llm", unparseable=7,
                                            not_scored=3, study="rexval")}
    # ReXVal: the lexicon never saw it, so all cases judge; the estimate is above 0 but the CI reaches it
    assert f["atomimed_tau_total_errors"].verdict == "partly" and "no agreement shown" in f["atomimed_tau_total_errors"].note
    assert "in-sample" not in f["atomimed_tau_total_errors"].note and "unseen" not in f["atomimed_tau_total_errors"].label
    # CI low 0.66 < BLEU-4's 0.7 though the estimate 0.8 is above it
    assert f["atomimed_preference_accuracy"].verdict == "partly"
    assert f["atomimed_unparseable_replies"].value == 7 and "3 candidate(s) left unscored" in f[
        "atomimed_unparseable_replies"].note
    # no baseline to compare the accuracy with: nothing to judge
    h = {x.id: x for x in headline_findings(_corr([ATOMIMED]), _pref({"atomimed": (0.8, 0.7, 0.9)}), ["bleu4"],
                                            study="rexval")}
    assert h["atomimed_preference_accuracy"].verdict == "n/a" and "nothing to compare with" in h[
        "atomimed_preference_accuracy"].note
    # AtomiMed missing altogether (e.g. every decomposition failed): values are None, with the reason
    g = {x.id: x for x in headline_findings(_corr([]), _pref({"bleu4": (0.7, 0.6, 0.8)}), ["bleu4"],
                                            unseen=_unseen(_corr([]), _pref({"bleu4": (0.7, 0.6, 0.8)})))}
    assert g["atomimed_tau_total_errors"].value is None and g["atomimed_tau_total_errors"].verdict == "n/a"
    assert g["atomimed_tau_gain_bleu4"].value is None and g["atomimed_preference_accuracy"].value is None


def _tiny_study(n_cases: int) -> ReaderStudy:
    """``n_cases`` cases x 2 candidates x 2 raters: candidate C2 has one more error than C1 and scores lower."""
    cands, judg = [], []
    for i in range(n_cases):
        for k, cand in enumerate(("C1", "C2")):
            cands.append({"case_id": f"case{i:02d}", "candidate": cand, "system": cand, "reference": "r",
                          "prediction": "p"})
            for r in (1, 2):
                judg.append({"case_id": f"case{i:02d}", "candidate": cand, "rater": r, "total_errors": float(i % 3 + k),
                             "significant_errors": float(k), "rating": float(5 - k)})
    return ReaderStudy("radpref", pd.DataFrame(cands), pd.DataFrame(judg))


def test_unseen_agreement_uses_the_test_half_of_the_whole_study():
    full = _tiny_study(12)
    scores = full.candidates[["case_id", "candidate", "system"]].assign(
        atomimed=[1.0 - 0.1 * (i % 3) - 0.3 * (c == "C2") for i, c in enumerate(full.candidates["candidate"])],
        bleu4=0.5)
    halves = split_cases(full.candidates["case_id"])
    test_ids = {c for c, h in halves.items() if h == "test"}
    u = unseen_agreement(scores, full, ["atomimed", "bleu4"], n_bootstrap=20)
    assert u.n_cases == len(test_ids) == 6 and u.n_split == 12 and u.missing == ""
    assert u.corr["n_cases"].max() == 6 and "split" not in u.corr.columns
    row = u.corr[(u.corr["metric"] == "atomimed") & (u.corr["rater"] == "mean") & (u.corr["target"] == "total_errors")
                 & (u.corr["coefficient"] == "kendall")].iloc[0]
    assert row["estimate"] > 0 and "6 cases of this run (split of 12 cases" in u.description
    # a run cut down to the first 4 cases: the halves are still the whole study's
    first4 = sorted(full.candidates["case_id"].unique())[:4]
    cut = ReaderStudy("radpref", full.candidates[full.candidates["case_id"].isin(first4)].reset_index(drop=True),
                      full.judgements[full.judgements["case_id"].isin(first4)].reset_index(drop=True))
    cut_scores = scores[scores["case_id"].isin(first4)].reset_index(drop=True)
    n_test = sum(halves[c] == "test" for c in first4)
    v = unseen_agreement(cut_scores, cut, ["atomimed", "bleu4"], full_case_ids=full.candidates["case_id"], n_bootstrap=20)
    assert v.n_cases == n_test and v.n_split == 12
    if n_test < 2:
        assert v.corr is None and "need at least 2" in v.missing
    else:
        assert v.corr["n_cases"].max() == n_test
    # fewer than two test cases (a 2-case study: one dev, one test): not computed, said why
    two = _tiny_study(2)
    w = unseen_agreement(scores[scores["case_id"].isin(["case00", "case01"])].reset_index(drop=True), two, ["atomimed"])
    assert w.n_cases == 1 and w.corr is None and w.pref is None and "holds 1 case(s) of the test half" in w.missing


def test_summary_says_the_all_cases_numbers_are_in_sample_and_gives_the_test_half():
    from radaudit.audits.atomic_facts import summary_lines

    pref = _pref({"atomimed": (0.8, 0.7, 0.9), "bleu4": (0.6, 0.5, 0.7)})
    lines = summary_lines(_corr(ALL_ROWS), pref, ["bleu4"], in_sample=IN_SAMPLE, unseen_corr=_corr(UNSEEN_ROWS))
    assert lines[0].startswith("**Read the all-cases numbers below as in sample** (in-sample: the lexicon")
    assert lines[1] == ("**Test half** (20 cases): AtomiMed τ with total errors = 0.50 [0.30, 0.70]; its gain over "
                        "BLEU-4 0.30 [0.10, 0.50] (BH p = 0.010).")
    assert "could not compute" in summary_lines(_corr(ALL_ROWS), pref, ["bleu4"], in_sample=IN_SAMPLE)[0]
    assert not summary_lines(_corr(ALL_ROWS), pref, ["bleu4"])[0].startswith("**Read")
