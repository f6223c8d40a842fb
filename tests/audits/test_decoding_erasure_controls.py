"""Which reference words can be erased (BH over the vocabulary), the Erasure counts' CIs over studies, and the planted
and halving controls (issue 40, item 2). The tests in which each control FAILS are in
tests/audits/test_controls_fail_decoding_erasure.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats as sps  # noqa: E402

from radaudit.audits import decoding_erasure as de  # noqa: E402
from radaudit.audits.decoding_erasure.findings import NO_ASSOCIATION, control_findings, headline_findings  # noqa: E402
from radaudit.findings import settle  # noqa: E402
from radaudit.metrics.association import association_audit, cad, cad_arrays, count_reports  # noqa: E402
from radaudit.stats import resample_weights  # noqa: E402

SENTENCES = ["heart size is normal.", "lungs are clear.", "no pleural effusion.", "mild bibasilar atelectasis.",
             "stable cardiomediastinal silhouette.", "degenerative changes of the spine.", "no pneumothorax.",
             "small left pleural effusion.", "right lower lobe opacity.", "calcified granuloma.",
             "tortuous aorta.", "low lung volumes.", "interval improvement.", "no focal consolidation."]


def corpus(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """``n`` studies (F, M alternating), each three sentences drawn from the same list whatever the sex: no word is
    sex-associated except by chance."""
    rng = np.random.default_rng(seed)
    refs = [" ".join(SENTENCES[j] for j in rng.choice(len(SENTENCES), 3, replace=False)) for _ in range(n)]
    return pd.DataFrame({"reference": refs, "group": ["F", "M"] * (n // 2)})


# ---------------------------------------------------------------------------------------------
# BH survival of the reference associations (association module, item 11), by hand


def _counts(f, m):
    return {"alpha": f[0], "beta": f[1], "gamma": f[2], "delta": f[3]}, {"alpha": m[0], "beta": m[1], "gamma": m[2],
                                                                        "delta": m[3]}


def test_reference_association_survives_bh_hand_computed():
    # alpha 10 vs 0, beta 5 vs 5, gamma 0 vs 8, delta 3 vs 2: N_F = 18, N_M = 15, pi = 18/33
    f, m = _counts((10, 5, 0, 3), (0, 5, 8, 2))
    t = cad({"F": f, "M": m}, {"F": f, "M": m}).set_index("word")
    pi = 18 / 33
    p_alpha = 2 * pi ** 10  # all 10 mentions female: P(X = 10 | n = 10), doubled
    p_gamma = 2 * (1 - pi) ** 8  # all 8 male: P(X = 0 | n = 8), doubled
    p_beta = min(1.0, 2 * min(sps.binom.cdf(5, 10, pi), sps.binom.sf(4, 10, pi)))
    p_delta = min(1.0, 2 * min(sps.binom.cdf(3, 5, pi), sps.binom.sf(2, 5, pi)))
    assert t.loc["alpha", "p_ref_exact"] == pytest.approx(p_alpha)  # 0.004662
    assert t.loc["gamma", "p_ref_exact"] == pytest.approx(p_gamma)  # 0.003643
    assert t.loc["beta", "p_ref_exact"] == pytest.approx(p_beta) and t.loc["delta", "p_ref_exact"] == pytest.approx(p_delta)
    # BH over m = 4: gamma is rank 1 (4 p = 0.01457), alpha rank 2 (4/2 p = 0.009325); the step-up minimum gives
    # both 0.009325
    assert p_gamma < p_alpha < min(p_beta, p_delta)
    adj = min(4 * p_gamma, 2 * p_alpha)
    assert t.loc["gamma", "p_ref_exact_adj"] == pytest.approx(adj)
    assert t.loc["alpha", "p_ref_exact_adj"] == pytest.approx(adj)
    assert adj == pytest.approx(0.009325, abs=1e-6)
    assert t["ref_associated"].to_dict() == {"alpha": True, "beta": False, "delta": False, "gamma": True}
    # at p* = 0.005 both unadjusted p's pass but the adjusted 0.009325 does not: BH, not the per-word threshold, decides
    strict = cad({"F": f, "M": m}, {"F": f, "M": m}, p_star=0.005).set_index("word")
    assert not strict["ref_associated"].any()
    loose = cad({"F": f, "M": m}, {"F": f, "M": m}, p_star=0.005, correction="none").set_index("word")
    assert set(loose.index[loose["ref_associated"]]) == {"alpha", "gamma"}


def test_silence_test_counts_only_words_whose_association_survives_bh():
    # "mastectomy" 6 F mentions, 0 M, equal token totals: p = 2 * 0.5^6 = 0.031, z = 2.15 > z_strong = 2 (the old
    # rule's "strongly associated"); alone it survives BH, among 100 balanced filler words it does not
    # (100 * 0.031 > 0.05). The F predictions are long (each filler word 50 times), so the silence p of a word
    # they never write is tiny: (1 - 5000/5506)^6 = 6e-7, which survives BH
    fill = {f"word{chr(97 + i // 26)}{chr(97 + i % 26)}": 5 for i in range(100)}
    ref = {"F": {"mastectomy": 6, **fill}, "M": {"mastectomy": 0, "ballast": 6, **fill}}
    pred = {"F": {"mastectomy": 0, **{w: 50 for w in fill}}, "M": {"mastectomy": 0, "ballast": 6, **fill}}
    t = cad(ref, pred).set_index("word")
    assert t.loc["mastectomy", "p_ref_exact"] == pytest.approx(2 * 0.5 ** 6)
    assert t.loc["mastectomy", "z_ref_exact"] > 2 and t.loc["mastectomy", "p_silence_adj"] < 0.05
    assert not t.loc["mastectomy", "ref_associated"] and not t.loc["mastectomy", "erased_silence"]
    alone = cad({"F": {"mastectomy": 6, "ballast": 0, "other": 0}, "M": {"mastectomy": 0, "ballast": 6, "other": 0}},
                {"F": {"mastectomy": 0, "ballast": 0, "other": 50}, "M": {"mastectomy": 0, "ballast": 6, "other": 0}})
    alone = alone.set_index("word")
    # m = 3: mastectomy and ballast p = 0.03125 (ranks 1-2), other p = 1: adjusted 3 * 0.03125 / 2 = 0.047 <= 0.05
    assert alone.loc["mastectomy", "p_ref_exact_adj"] == pytest.approx(3 * 2 * 0.5 ** 6 / 2)
    assert alone.loc["mastectomy", "ref_associated"] and alone.loc["mastectomy", "erased_silence"]


def test_cad_arrays_are_the_tables_numbers():
    f, m = _counts((10, 5, 0, 3), (0, 5, 8, 2))
    t = cad({"F": f, "M": m}, {"F": {"alpha": 0, "beta": 5, "gamma": 0, "delta": 3}, "M": m})
    a = cad_arrays(t[["c_ref_F", "c_ref_M"]].to_numpy(), t[["c_pred_F", "c_pred_M"]].to_numpy())
    for col in ("z_ref", "z_disp", "p_adj", "p_ref_exact_adj", "p_silence_adj", "z_pred_exact"):
        np.testing.assert_allclose(a[col], t[col].to_numpy(float))
    assert (a["erased_silence"] == t["erased_silence"].to_numpy()).all()
    assert (a["category"] == t["category"].to_numpy()).all()


# ---------------------------------------------------------------------------------------------
# the counts' bootstrap over studies


def _sexed(n=80):
    """F: mastectomy changes, M: aicd device (strong associations); osteopenia in one F report of eight (n = 80: 5 of
    40, 2 * 0.5^5 = 0.06: not associated after BH here, but in some resamples of the studies)."""
    refs = [("mastectomy changes. " if i % 2 == 0 else "aicd device. ") + "heart normal. lungs clear."
            + (" small effusion." if i % 3 == 0 else "") + (" osteopenia." if i % 16 == 0 else "") for i in range(n)]
    return pd.DataFrame({"reference": refs, "prediction": "heart normal. lungs clear.", "group": ["F", "M"] * (n // 2)})


def test_erasure_bootstrap_counts_words_and_replicates_are_resampled_studies():
    df = _sexed()
    b = de.erasure_bootstrap(df, n_bootstrap=40, seed=3)
    # mastectomy/changes (F) and aicd/device (M) are associated and never written; heart/lungs/normal/clear
    # are written evenly (their rates per sex fall by less than the test needs, or not at all)
    assert set(b["words"]["silence"]) == {"mastectomy", "changes", "aicd", "device"}
    assert b["estimate"]["silence"] == 4 and b["estimate"]["reference_associated"] >= 4
    assert set(b["words"]["silence"]) <= set(b["words"]["reference_associated"])
    for k, r in b["ci"].items():
        assert r.low <= b["estimate"][k] <= r.high and r.n_bootstrap == 40
    # replicate 0 is the audit of the first resample of studies (stratified by sex), recomputed from scratch
    c = count_reports(df["reference"].tolist(), df["prediction"].tolist(), df["group"].tolist())
    w = next(resample_weights(len(df), 40, seed=3, strata=c.group))[0].astype(int)
    rows = df.loc[np.repeat(np.arange(len(df)), w)]
    assert (rows["group"] == "F").sum() == 40  # stratified: 40 studies of each sex in every resample
    again = de.erasure_bootstrap(rows.reset_index(drop=True), n_bootstrap=0)
    assert b["ci"]["silence"].replicates[0] == again["estimate"]["silence"]
    assert b["ci"]["reference_associated"].replicates[0] == again["estimate"]["reference_associated"]
    # the same seed gives the same interval; no bootstrap, no CI
    assert de.erasure_bootstrap(df, n_bootstrap=40, seed=3)["ci"]["silence"].high == b["ci"]["silence"].high
    assert de.erasure_bootstrap(df, n_bootstrap=0)["ci"]["silence"] is None


def test_erasure_bootstrap_replicates_do_not_depend_on_how_many_go_in_one_cad_call(monkeypatch):
    """The replicates go to cad_arrays stacked (100 a call): one at a time, or 7 at a time, gives the same counts,
    replicate for replicate, and a replicate of a later stack is the audit of its resample recomputed alone."""
    from radaudit.audits.decoding_erasure import erasure

    df = _sexed(n=96)
    stacked = de.erasure_bootstrap(df, n_bootstrap=30, seed=5)
    for per_call in (1, 7):
        monkeypatch.setattr(erasure, "_REPLICATES_PER_CALL", per_call)
        other = de.erasure_bootstrap(df, n_bootstrap=30, seed=5)
        for k, r in stacked["ci"].items():
            assert np.array_equal(r.replicates, other["ci"][k].replicates), (per_call, k)
    c = count_reports(df["reference"].tolist(), df["prediction"].tolist(), df["group"].tolist())
    w = next(resample_weights(len(df), 30, seed=5, strata=c.group))[22].astype(int)  # in the fourth stack of 7
    alone = de.erasure_bootstrap(df.loc[np.repeat(np.arange(len(df)), w)].reset_index(drop=True), n_bootstrap=0)
    for k in ("silence", "reference_associated", "paper"):
        assert stacked["ci"][k].replicates[22] == alone["estimate"][k]


# ---------------------------------------------------------------------------------------------
# the planted control


def test_planted_mentions_hand_computed():
    # V = 900, p* = 0.05, margin 2: a resample keeping k_lo mentions must give V * max(2 pi_ref^k_lo,
    # (1 - pi_sil)^k_lo) <= 0.05 / 2, i.e. with need = ln(0.05 / (2 * 900)) = -10.491:
    # reference side k_lo >= (need - ln 2) / ln(0.49) = 15.68; silence side k_lo >= need / ln(0.73) = 33.34.
    # k_lo = k - 2 sqrt(k (1 - k / 150)): 44 -> 32.85 (too few), 45 -> 33.78 (enough)
    need = math.log(0.05 / (2 * 900))
    assert need / math.log(0.73) == pytest.approx(33.34, abs=0.01)
    assert (need - math.log(2)) / math.log(0.49) == pytest.approx(15.68, abs=0.01)
    assert 44 - 2 * math.sqrt(44 * (1 - 44 / 150)) == pytest.approx(32.85, abs=0.01)
    assert 45 - 2 * math.sqrt(45 * (1 - 45 / 150)) == pytest.approx(33.78, abs=0.01)
    assert de.planted_mentions(150, vocab_size=900, pi_reference=0.49, pi_silence=0.27) == (45, True)
    # a template as long as the reports (pi_sil = 0.5, need / ln 0.5 = 15.14): the reference side decides (15.68);
    # 24 -> 15.02 (too few), 25 -> 15.87 (enough)
    assert 24 - 2 * math.sqrt(24 * (1 - 24 / 150)) < 15.68 < 25 - 2 * math.sqrt(25 * (1 - 25 / 150))
    assert de.planted_mentions(150, vocab_size=900, pi_reference=0.49, pi_silence=0.5) == (25, True)
    assert de.planted_mentions(3, vocab_size=900, pi_reference=0.49, pi_silence=0.27) == (3, False)


def test_plant_phrase_adds_the_phrase_to_k_reports_of_the_group():
    df = corpus(40)
    planted, mask = de.plant_phrase(df, 7, target="F", seed=1)
    assert mask.sum() == 7 and (df.loc[mask, "group"] == "F").all()
    assert planted.loc[mask, "reference"].str.endswith(" " + de.PLANTED_PHRASE).all()
    assert (planted.loc[~mask, "reference"] == df.loc[~mask, "reference"]).all()
    again, mask2 = de.plant_phrase(df, 7, target="F", seed=1)
    assert (mask == mask2).all()  # seeded


def test_planted_phrase_is_erased_by_the_template_and_the_paper_test_cannot_see_it():
    df = corpus(200)
    pc = de.planted_control(df, n_bootstrap=200, seed=0)
    assert pc["planted_words"] == ["breast", "implants"] and pc["enough"]
    assert pc["erased"] == ["breast", "implants"]  # the silence test finds the planted erasure
    assert pc["paper_flags"] == []  # the paper's test cannot flag a word the template never writes
    assert pc["value"] <= 0.05 and pc["high"] <= 0.05 and pc["low"] <= pc["value"]  # found in >= 97.5% of resamples
    assert 0 < pc["mentions"] <= pc["n_target"] == 100 and pc["share"] == pc["mentions"] / 100
    # the value is the largest p the planted words need: their BH-adjusted reference and silence p's
    planted, _ = de.plant_phrase(df, pc["mentions"], seed=0)
    w = association_audit(planted.assign(prediction=de.DEFAULT_TEMPLATE), n_bootstrap=0,
                          n_permutations=0).words.set_index("word")
    t = w.loc[["breast", "implants"]]
    assert pc["value"] == pytest.approx(float(np.max(np.maximum(t["p_ref_exact_adj"], t["p_silence_adj"]))))
    f = {x.id: x for x in control_findings(_controls(df, pc))}
    assert f["erasure_planted_control"].verdict == "shown"
    assert f["erasure_planted_control_paper_test"].value == 0 and f["erasure_planted_control_paper_test"].verdict == "n/a"


def _controls(df, planted=None, negative=None):
    return {"planted": planted or de.planted_control(df, n_bootstrap=100),
            "negative": negative or de.halving_control(df),
            "floor": de.collapse_floor(df)}


# ---------------------------------------------------------------------------------------------
# the negative control


def test_halving_control_on_disjoint_real_like_reports_flags_nothing():
    df = _sexed(80)  # strong, real associations (mastectomy/aicd) present in both halves
    nc = de.halving_control(df, n_halvings=60, seed=2)
    assert nc["n_halvings"] == 60 and nc["alarms"] == 0 and nc["value"] == 0.0
    assert nc["mean_reference_associated"] >= 4  # each half has associations it could lose
    lo, hi = nc["low"], nc["high"]
    assert lo == 0.0 and hi == pytest.approx(1.959964 ** 2 / (60 + 1.959964 ** 2))  # Wilson upper bound of 0/60
    again = de.halving_control(df, n_halvings=60, seed=2)
    assert again == nc  # seeded
    assert de.halving_control(df.head(3), n_halvings=5)["n_halvings"] == 0  # one study of a sex: cannot halve


# ---------------------------------------------------------------------------------------------
# the findings


def _result(df, preds, name):
    d = df.assign(prediction=preds)
    return de.evaluate_corpus(d, name=name, encoder=None, n_bootstrap=20, n_permutations=0,
                              surface_metrics=["rouge1"], diversity_metrics=["template_diversity"])


def test_no_association_in_the_references_means_no_erasure_can_be_shown():
    df = corpus(120)
    greedy = _result(df, de.DEFAULT_TEMPLATE, "greedy")
    assert greedy.category_counts()["Reference-associated (BH)"] == 0
    boot = {"greedy": de.erasure_bootstrap(df.assign(prediction=de.DEFAULT_TEMPLATE), n_bootstrap=30)}
    rev = de.ranking_reversals(de.pstar_sweep_table([greedy], [0.05]))
    found = {f.id: f for f in settle(headline_findings([greedy], _controls(df), rev, set(), erasure_ci=boot))}
    ra = found["reference_associated_words"]
    assert ra.value == 0 and ra.verdict == "not shown" and "no power" in ra.note and ra.ci is not None
    for fid in ("erased_terms_greedy", "erased_terms_greedy_paper_test"):
        assert found[fid].value == 0 and found[fid].verdict == "not shown" and NO_ASSOCIATION in found[fid].note
        assert found[fid].bar is not None and found[fid].ci is not None
    assert found["erased_terms_greedy"].controls == ("erasure_planted_control", "erasure_negative_control")
    assert found["erasure_planted_control"].verdict == "shown"  # the test could have seen an erasure
    assert found["erasure_negative_control"].verdict == "shown"
    assert found["erasure_positive_control"].verdict == "n/a"  # descriptive now
    assert found["erased_terms_beam"].verdict == "n/a" and "not run" in found["erased_terms_beam"].note


def test_erased_count_with_controls_and_ci_is_shown_or_partly_by_its_ci():
    df = _sexed(80).drop(columns="prediction")
    greedy = _result(df, "heart normal. lungs clear.", "greedy")
    boot = {"greedy": de.erasure_bootstrap(df.assign(prediction="heart normal. lungs clear."), n_bootstrap=60)}
    rev = de.ranking_reversals(de.pstar_sweep_table([greedy], [0.05]))
    raw = {f.id: f for f in headline_findings([greedy], _controls(df), rev, set(), erasure_ci=boot)}
    g = raw["erased_terms_greedy"]
    assert g.value == 4 and g.verdict == "shown" and g.bar.op == ">" and g.bar.value == 0
    assert "aicd" in g.note and g.ci == (boot["greedy"]["ci"]["silence"].low, boot["greedy"]["ci"]["silence"].high)
    assert 0 < g.ci[0] < g.ci[1]  # osteopenia joins the erased words in some resamples: the CI has width
    settled = {f.id: f for f in settle(raw.values())}
    assert settled["erased_terms_greedy"].verdict == "shown"  # CI above 0, both controls passed
    assert settled["reference_associated_words"].value >= 4


def test_figure1_marks_the_words_whose_reference_association_survives_bh():
    df = _sexed(60).drop(columns="prediction")
    greedy = _result(df, "heart normal. lungs clear.", "greedy")
    assoc = set(greedy.words.loc[greedy.words["ref_associated"], "word"])
    fig = de.fig_association_shift(greedy.words, top_k=8, title="greedy")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"reference association survives BH ({len(assoc)})" in legend
    bold = {t.get_text() for t in ax.texts if t.get_fontweight() == "bold"}
    assert bold and bold <= assoc
    plt.close(fig)
    none = _result(corpus(60), de.DEFAULT_TEMPLATE, "greedy")
    fig = de.fig_association_shift(none.words, top_k=4)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "reference association survives BH (0: none can be erased)" in legend
    plt.close(fig)


def test_summary_lines_say_whether_there_is_anything_to_erase():
    df = corpus(60)
    greedy = _result(df, de.DEFAULT_TEMPLATE, "greedy")
    controls = _controls(df)
    lines = de.summary_lines([greedy], controls["floor"], controls=controls)
    text = "\n".join(lines)
    assert "**Is there anything to erase?**" in text and "cannot show erasure at all" in text
    assert "**Planted control.**" in text and "**Negative control.**" in text
    assert math.isfinite(controls["planted"]["value"])
