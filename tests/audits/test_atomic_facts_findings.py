"""atomic_facts findings.json: verdicts computed from the Table 2 / Table 3 analogs (hand-made tables)."""

from __future__ import annotations

import pandas as pd
import pytest

from radaudit.audits.atomic_facts import headline_findings


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


def test_agreement_and_gains_follow_their_cis_and_bh_p():
    corr = _corr([
        ATOMIMED,
        # clearly below AtomiMed: paired CI above 0, adjusted p small -> shown
        {"metric": "bleu4", "label": "BLEU-4", "estimate": 0.2, "low": 0.0, "high": 0.4, "diff_vs_reference": 0.3,
         "diff_low": 0.1, "diff_high": 0.5, "diff_p_bh": 0.01},
        # higher estimate for AtomiMed, but the paired CI reaches 0 -> not shown
        {"metric": "bertscore", "label": "BERTScore F1", "estimate": 0.45, "low": 0.2, "high": 0.6,
         "diff_vs_reference": 0.05, "diff_low": -0.05, "diff_high": 0.15, "diff_p_bh": 0.3},
        # AtomiMed lower
        {"metric": "chexpert_f1", "label": "Label F1", "estimate": 0.6, "low": 0.4, "high": 0.8,
         "diff_vs_reference": -0.1, "diff_low": -0.2, "diff_high": -0.01, "diff_p_bh": 0.04},
    ])
    pref = _pref({"atomimed": (0.8, 0.7, 0.9), "bleu4": (0.6, 0.5, 0.7), "bertscore": (0.65, 0.5, 0.8)})
    f = {x.id: x for x in headline_findings(corr, pref, ["bleu4", "bertscore", "chexpert_f1", "green"])}
    assert f["atomimed_tau_total_errors"].value == 0.5 and f["atomimed_tau_total_errors"].ci == (0.3, 0.7)
    assert f["atomimed_tau_total_errors"].verdict == "shown" and "in-sample" in f["atomimed_tau_total_errors"].note
    assert f["atomimed_tau_gain_bleu4"].verdict == "shown" and f["atomimed_tau_gain_bleu4"].value == 0.3
    assert f["atomimed_tau_gain_bleu4"].ci == (0.1, 0.5) and "BLEU-4" in f["atomimed_tau_gain_bleu4"].label
    assert f["atomimed_tau_gain_bertscore"].verdict == "not shown" and "not higher beyond the noise" in f[
        "atomimed_tau_gain_bertscore"].note
    assert f["atomimed_tau_gain_chexpert_f1"].verdict == "not shown" and "lower" in f["atomimed_tau_gain_chexpert_f1"].note
    # a headline metric this run did not compute: no value, the reason, never a gap
    assert f["atomimed_tau_gain_green"].value is None and f["atomimed_tau_gain_green"].verdict == "n/a"
    # preference: AtomiMed's CI low (0.7) clears both baselines' estimates (0.6, 0.65)
    p = f["atomimed_preference_accuracy"]
    assert p.verdict == "shown" and p.value == 0.8 and p.paper == pytest.approx(0.9571)
    assert f["atomimed_unparseable_replies"].value == 0 and f["atomimed_unparseable_replies"].verdict == "n/a"


def test_no_agreement_close_baseline_missing_atomimed_and_llm_failures():
    weak = {**ATOMIMED, "low": -0.05}
    pref = _pref({"atomimed": (0.8, 0.66, 0.9), "bleu4": (0.7, 0.6, 0.8)})
    f = {x.id: x for x in headline_findings(_corr([weak]), pref, ["bleu4"], backend="llm", unparseable=7,
                                            not_scored=3, study="rexval")}
    assert f["atomimed_tau_total_errors"].verdict == "not shown" and "reaches 0" in f["atomimed_tau_total_errors"].note
    assert "in-sample" not in f["atomimed_tau_total_errors"].note  # ReXVal: the lexicon never saw it
    assert f["atomimed_preference_accuracy"].verdict == "not shown"  # CI low 0.66 < BLEU-4's 0.7
    assert f["atomimed_unparseable_replies"].value == 7 and "3 candidate(s) left unscored" in f[
        "atomimed_unparseable_replies"].note
    # AtomiMed missing altogether (e.g. every decomposition failed): values are None, with the reason
    g = {x.id: x for x in headline_findings(_corr([]), _pref({"bleu4": (0.7, 0.6, 0.8)}), ["bleu4"])}
    assert g["atomimed_tau_total_errors"].value is None and g["atomimed_tau_total_errors"].verdict == "n/a"
    assert g["atomimed_tau_gain_bleu4"].value is None and g["atomimed_preference_accuracy"].value is None
