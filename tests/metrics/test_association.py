"""CAD and WAE (radaudit.metrics.association): hand-computed values, planted effects, inference, bad inputs.

Paper: Parikh et al., arXiv 2603.01625, §2 (equation numbers as in the module docstring).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from radaudit.metrics.association import (
    CATEGORY_ORDER,
    AssociationInputError,
    association_audit,
    cad,
    cad_summary,
    classify_shift,
    count_reports,
    erasure_counts,
    exact_association_z,
    load_stopwords,
    tokenize_for_association,
    wae,
    wae_inference,
)
from radaudit.stats import bootstrap_ci

ALPHA = 0.1

# ------------------------------------------------------------------------------------------------
# the hand-computed corpus: 4 reports, vocabulary V = 4 after stop-word removal
#
#   group  reference                 -> tokens                  prediction              -> tokens
#   F      "Mastectomy. Effusion."   -> mastectomy, effusion    "Effusion."             -> effusion
#   F      "Effusion."               -> effusion                "Normal."               -> normal
#   M      "Pacemaker."              -> pacemaker               "Pacemaker. Effusion."  -> pacemaker, effusion
#   M      "Normal."                 -> normal                  ""                      -> (none)
#
# counts c_g(w)         ref F  ref M  pred F  pred M
#   effusion              2      0      1       1
#   mastectomy            1      0      0       0
#   normal                0      1      1       0
#   pacemaker             0      1      0       1
#   N_g                   3      2      2       2          α V = 0.1 · 4 = 0.4

HAND = pd.DataFrame({
    "reference": ["Mastectomy. Effusion.", "Effusion.", "Pacemaker.", "Normal."],
    "prediction": ["Effusion.", "Normal.", "Pacemaker. Effusion.", ""],
    "group": ["F", "F", "M", "M"],
})

# Eq. (1): s = log[(c_F + α)/(N_F + αV)] − log[(c_M + α)/(N_M + αV)]; Eq. (2): Var = 1/(c_F+α) + 1/(c_M+α)
# reference denominators: N_F + αV = 3.4, N_M + αV = 2.4; prediction: 2.4 and 2.4 (they cancel)
S_REF = {
    "effusion": math.log(2.1 / 3.4) - math.log(0.1 / 2.4),    # log(0.617647 / 0.041667) = log(14.8235) = 2.696216
    "mastectomy": math.log(1.1 / 3.4) - math.log(0.1 / 2.4),  # log(0.323529 / 0.041667) = log(7.7647) = 2.049589
    "normal": math.log(0.1 / 3.4) - math.log(1.1 / 2.4),      # log(0.029412 / 0.458333) = −2.746202
    "pacemaker": math.log(0.1 / 3.4) - math.log(1.1 / 2.4),   # same counts as "normal": −2.746202
}
VAR_REF = {
    "effusion": 1 / 2.1 + 1 / 0.1,    # 0.476190 + 10 = 10.476190
    "mastectomy": 1 / 1.1 + 1 / 0.1,  # 0.909091 + 10 = 10.909091
    "normal": 1 / 0.1 + 1 / 1.1,      # 10.909091
    "pacemaker": 1 / 0.1 + 1 / 1.1,   # 10.909091
}
S_PRED = {
    "effusion": math.log(1.1 / 2.4) - math.log(1.1 / 2.4),    # 0 (1 vs 1)
    "mastectomy": math.log(0.1 / 2.4) - math.log(0.1 / 2.4),  # 0: absent from the predictions, both cells smoothed
    "normal": math.log(1.1 / 2.4) - math.log(0.1 / 2.4),      # log 11 = 2.397895
    "pacemaker": math.log(0.1 / 2.4) - math.log(1.1 / 2.4),   # −log 11 = −2.397895
}
VAR_PRED = {
    "effusion": 1 / 1.1 + 1 / 1.1,    # 1.818182
    "mastectomy": 1 / 0.1 + 1 / 0.1,  # 20: 1/α per empty cell
    "normal": 1 / 1.1 + 1 / 0.1,      # 10.909091
    "pacemaker": 1 / 0.1 + 1 / 1.1,   # 10.909091
}
# z = s / sqrt(Var): effusion 2.696216/3.236694 = 0.833015, mastectomy 0.620544, normal/pacemaker −0.831454 (ref);
# pred: 0, 0, 2.397895/3.302891 = 0.725999, −0.725999
# Eq. (3): z_disp = (s_pred − s_ref) / sqrt(Var_pred + Var_ref):
#   effusion   (0 − 2.696216)/sqrt(1.818182 + 10.476190)  = −0.768956
#   mastectomy (0 − 2.049589)/sqrt(20 + 10.909091)        = −0.368658
#   normal     (2.397895 + 2.746202)/sqrt(21.818182)      =  1.101285
#   pacemaker  (−2.397895 + 2.746202)/sqrt(21.818182)     =  0.074568
Z_DISP = {"effusion": -0.768956, "mastectomy": -0.368658, "normal": 1.101285, "pacemaker": 0.074568}


def _hand_table() -> pd.DataFrame:
    return association_audit(HAND, n_bootstrap=0, n_permutations=0).words.set_index("word")


def test_cad_hand_computed_log_ratios_variances_z():
    t = _hand_table()
    assert list(t.index) == ["effusion", "mastectomy", "normal", "pacemaker"]
    assert t.attrs["V"] == 4
    assert t[["c_ref_F", "c_ref_M", "c_pred_F", "c_pred_M"]].loc["effusion"].tolist() == [2, 0, 1, 1]
    assert t[["c_ref", "c_pred"]].loc["mastectomy"].tolist() == [1, 0]
    for w in S_REF:
        assert t.loc[w, "s_ref"] == pytest.approx(S_REF[w], abs=1e-12)
        assert t.loc[w, "var_ref"] == pytest.approx(VAR_REF[w], abs=1e-12)
        assert t.loc[w, "z_ref"] == pytest.approx(S_REF[w] / math.sqrt(VAR_REF[w]), abs=1e-12)
        assert t.loc[w, "s_pred"] == pytest.approx(S_PRED[w], abs=1e-12)
        assert t.loc[w, "var_pred"] == pytest.approx(VAR_PRED[w], abs=1e-12)
        assert t.loc[w, "z_pred"] == pytest.approx(S_PRED[w] / math.sqrt(VAR_PRED[w]), abs=1e-12)
        assert t.loc[w, "z_disp"] == pytest.approx(Z_DISP[w], abs=1e-6)
    assert t.loc["effusion", "s_ref"] == pytest.approx(2.696216, abs=1e-6)
    assert t.loc["normal", "z_pred"] == pytest.approx(0.725999, abs=1e-6)


def test_cad_hand_computed_pvalues_bh_and_categories():
    t = _hand_table()
    # two-sided p = 2 Φ(−|z_disp|): normal 0.270772, effusion 0.441919, mastectomy 0.712383, pacemaker 0.940558
    p = {w: 2 * sps.norm.sf(abs(Z_DISP[w])) for w in Z_DISP}
    for w in p:
        assert t.loc[w, "p"] == pytest.approx(p[w], abs=1e-6)
    # BH over the m = 4 words, sorted p ascending (k = 1..4): p̃_(k) = min_{j>=k} 4 p_(j) / j
    #   pacemaker  k=4: 0.940558
    #   mastectomy k=3: min(0.940558, 4/3 · 0.712383 = 0.949844) = 0.940558
    #   effusion   k=2: min(0.940558, 4/2 · 0.441919 = 0.883839) = 0.883839
    #   normal     k=1: min(0.883839, 4 · 0.270772 = 1.083090)  = 0.883839
    assert t.loc["pacemaker", "p_adj"] == pytest.approx(p["pacemaker"], abs=1e-6)
    assert t.loc["mastectomy", "p_adj"] == pytest.approx(p["pacemaker"], abs=1e-6)
    assert t.loc["effusion", "p_adj"] == pytest.approx(2 * p["effusion"], abs=1e-6)
    assert t.loc["normal", "p_adj"] == pytest.approx(2 * p["effusion"], abs=1e-6)
    # nothing reaches p* = 0.05, so every word is stable
    assert not t["displaced"].any()
    assert (t["category"] == "Stable").all()
    assert t.attrs["z_crit"] == pytest.approx(1.959964, abs=1e-6)  # Φ⁻¹(1 − 0.05/2)


def test_wae_hand_computed_weights():
    t = _hand_table()
    z2 = {w: (t.loc[w, "z_disp"]) ** 2 for w in Z_DISP}
    # Eq. (4), prediction weights ω = c_pred: effusion 2, mastectomy 0, normal 1, pacemaker 1 (Σω = 4)
    #   WAE_pred = (2·0.768956² + 0·0.368658² + 1·1.101285² + 1·0.074568²) / 4 = (1.182587 + 1.212829 + 0.005560)/4
    wae_pred = (2 * z2["effusion"] + 0 * z2["mastectomy"] + z2["normal"] + z2["pacemaker"]) / 4
    assert wae_pred == pytest.approx(0.600244, abs=1e-6)
    # reference weights ω = c_ref: 2, 1, 1, 1 (Σω = 5)
    wae_ref = (2 * z2["effusion"] + z2["mastectomy"] + z2["normal"] + z2["pacemaker"]) / 5
    # group sets with τ = 0 (sign of z_ref): F = {effusion, mastectomy}, M = {normal, pacemaker}
    #   WAE_pred_F = (2·z²_eff + 0·z²_mast) / (2 + 0) = z²_eff;  WAE_pred_M = (z²_norm + z²_pace) / 2
    #   WAE_ref_F  = (2·z²_eff + 1·z²_mast) / 3;                 WAE_ref_M  = (z²_norm + z²_pace) / 2
    expected = {
        "WAE_pred": wae_pred, "WAE_ref": wae_ref,
        "WAE_pred_F": z2["effusion"], "WAE_pred_M": (z2["normal"] + z2["pacemaker"]) / 2,
        "WAE_ref_F": (2 * z2["effusion"] + z2["mastectomy"]) / 3, "WAE_ref_M": (z2["normal"] + z2["pacemaker"]) / 2,
    }
    expected["delta_WAE_pred"] = expected["WAE_pred_F"] - expected["WAE_pred_M"]
    expected["delta_WAE_ref"] = expected["WAE_ref_F"] - expected["WAE_ref_M"]
    got = wae(t.reset_index(), assoc_z=0.0)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k
    # the vectorised engine (association_audit -> wae_inference) gives the same estimates
    res = association_audit(HAND, assoc_z=0.0, n_bootstrap=0, n_permutations=0).wae.set_index("metric")
    for k, v in expected.items():
        assert res.loc[k, "estimate"] == pytest.approx(v, abs=1e-12), k
    assert res.loc["WAE_pred", "n_words"] == 3 and res.loc["WAE_ref_F", "n_words"] == 2
    # with the default τ = z_neutral = 1 no word is associated (|z_ref| <= 0.83): WAE_g is 0/0 = NaN
    default = wae(t.reset_index())
    assert math.isnan(default["WAE_pred_F"]) and math.isnan(default["delta_WAE_ref"])
    assert default["WAE_pred"] == pytest.approx(wae_pred)


def test_cad_token_mapping_api_matches_text_api_and_direction():
    ref = {"F": ["mastectomy", "effusion", "effusion"], "M": ["pacemaker", "normal"]}
    pred = {"F": [["effusion"], ["normal"]], "M": Counter({"pacemaker": 1, "effusion": 1})}
    t = cad(ref, pred).set_index("word")
    h = _hand_table()
    np.testing.assert_allclose(t["z_disp"], h["z_disp"], atol=1e-12)
    # swapping the groups negates every log ratio and z (s = log p_{groups[0]} / p_{groups[1]})
    sw = cad(ref, pred, groups=("M", "F")).set_index("word")
    np.testing.assert_allclose(sw["s_ref"], -t["s_ref"], atol=1e-12)
    np.testing.assert_allclose(sw["z_disp"], -t["z_disp"], atol=1e-12)
    # a {word: 0} entry keeps a word in V: V = 5 changes αV and thus every s
    ref0 = {"F": Counter({"mastectomy": 1, "effusion": 2, "unused": 0}), "M": ["pacemaker", "normal"]}
    t5 = cad(ref0, pred).set_index("word")
    assert t5.attrs["V"] == 5
    assert t5.loc["effusion", "s_ref"] == pytest.approx(math.log(2.1 / 3.5) - math.log(0.1 / 2.5))
    # min_count = 2 keeps words with >= 2 tokens over both corpora and groups (effusion 4, normal 2, pacemaker 2);
    # V = 3 (αV = 0.3) and N_g sums over the kept words only: ref N_F = 2 (mastectomy dropped), N_M = 2
    #   -> s = log(2.1/2.3) − log(0.1/2.3) = log 21 = 3.044522
    t3 = cad(ref, pred, min_count=2).set_index("word")
    assert list(t3.index) == ["effusion", "normal", "pacemaker"] and t3.attrs["V"] == 3
    assert t3.loc["effusion", "s_ref"] == pytest.approx(math.log(21))


# ------------------------------------------------------------------------------------------------
# categories


def test_classify_shift_rules_and_boundaries():
    z_ref = [3.0, 0.5, 1.5, 2.5, 1.5, 3.0, 2.0, 0.0, -1.0]
    z_pred = [0.5, -1.2, -1.5, 4.0, 0.2, 0.5, 0.0, 1.0, -1.0]
    displaced = [True, True, True, True, True, False, True, True, True]
    got = classify_shift(z_ref, z_pred, displaced).tolist()
    assert got == [
        "Erasure",        # |z_ref| 3 > 2, |z_pred| 0.5 < 1
        "New Bias",       # |z_ref| 0.5 < 1, |z_pred| 1.2 >= 1
        "Bias Flip",      # both >= 1, signs differ
        "Preservation",   # both >= 1, same sign
        "Unclassified",   # moderate reference association (1 <= 1.5 <= 2) that became neutral
        "Stable",         # not displaced, whatever the z
        "Unclassified",   # |z_ref| = 2 is not > z_strong
        "New Bias",       # |z_pred| = 1 counts as non-neutral (>= z_neutral)
        "Preservation",   # −1, −1: both non-neutral, same sign
    ]
    assert set(got) <= set(CATEGORY_ORDER)


def _planted() -> tuple[dict, dict]:
    """Counts per (corpus, group): 20 balanced filler words plus one planted word per category."""
    filler = {f"filler{i:02d}": 300 for i in range(20)}
    ref = {"F": Counter(filler), "M": Counter(filler)}
    pred = {"F": Counter(filler), "M": Counter(filler)}
    planted = {  # word: (ref F, ref M, pred F, pred M)
        "mastectomy": (120, 2, 30, 30),     # strongly F in the reference, neutral in predictions -> Erasure
        "pneumothorax": (60, 60, 10, 150),  # neutral in the reference, M in predictions -> New Bias
        "nodule": (100, 30, 30, 100),       # F in the reference, M in predictions -> Bias Flip
        "implant": (40, 20, 200, 10),       # F in both, amplified (displaced) -> Preservation
        "aicd": (5, 80, 5, 80),             # M in both, unchanged -> Stable (not displaced)
    }
    for w, (rf, rm, pf, pm) in planted.items():
        ref["F"][w], ref["M"][w], pred["F"][w], pred["M"][w] = rf, rm, pf, pm
    return ref, pred


def test_planted_effects_are_flagged():
    ref, pred = _planted()
    t = cad(ref, pred).set_index("word")
    assert t.loc["mastectomy", "category"] == "Erasure"
    assert t.loc["mastectomy", "z_ref"] > 2 and abs(t.loc["mastectomy", "z_pred"]) < 1
    assert t.loc["pneumothorax", "category"] == "New Bias"
    assert t.loc["pneumothorax", "z_pred"] < -1  # male-associated in predictions
    assert t.loc["nodule", "category"] == "Bias Flip"
    assert t.loc["implant", "category"] == "Preservation"
    # an unchanged association is not displaced: the paper excludes it as stable
    assert t.loc["aicd", "category"] == "Stable" and t.loc["aicd", "z_ref"] < -2
    assert (t.filter(like="filler", axis=0)["category"] == "Stable").all()
    summary = cad_summary(t.reset_index()).set_index("category")["n_words"]
    assert summary.to_dict() == {"Erasure": 1, "New Bias": 1, "Bias Flip": 1, "Preservation": 1,
                                 "Unclassified": 0, "Stable": 21}
    # a stricter p* keeps fewer (or equal) displaced words; correction="none" flags at least as many as BH
    strict = cad(ref, pred, p_star=1e-12)
    assert strict["displaced"].sum() <= t["displaced"].sum()
    assert cad(ref, pred, correction="none")["displaced"].sum() >= t["displaced"].sum()


def _erasure_corpus() -> pd.DataFrame:
    """Template collapse: every prediction is the same text; "effusion"/"small" were female-associated."""
    refs = ["Small effusion. Heart normal."] * 100 + ["Heart normal."] * 80 + ["Small effusion. Heart normal."] * 20
    return pd.DataFrame({"reference": refs, "prediction": ["Small effusion. Heart normal."] * 200,
                         "group": ["F"] * 100 + ["M"] * 100})


def test_planted_erasure_end_to_end_from_text():
    # V = 4 words only: most relabellings leave a group with no associated word, so ΔWAE's null is
    # mostly undefined (warned about and counted in perm_n_undefined)
    with pytest.warns(RuntimeWarning, match="undefined"):
        res = association_audit(_erasure_corpus(), n_bootstrap=200, n_permutations=99)
    t = res.words.set_index("word")
    # effusion: ref F 100/400 tokens vs M 20/240 -> s = log(100.1/400.4) − log(20.1/240.4) = 1.095290,
    # Var = 1/100.1 + 1/20.1 = 0.059741, z_ref = 1.095290/0.244420 = 4.481176; identical predictions -> s_pred = 0
    assert t.loc["effusion", "s_ref"] == pytest.approx(math.log(100.1 / 400.4) - math.log(20.1 / 240.4))
    assert t.loc["effusion", "z_ref"] == pytest.approx(4.481176, abs=1e-6)
    assert t.loc["effusion", "z_pred"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc["effusion", "category"] == "Erasure"
    assert t.loc["small", "category"] == "Erasure"
    cats = res.categories.set_index("category")["n_words"]
    assert cats["Erasure"] >= 2 and cats["New Bias"] == 0 and cats["Bias Flip"] == 0
    w = res.wae.set_index("metric")
    # the erased words are F-associated in the reference: reference-weighted WAE_F exceeds WAE_M
    assert w.loc["WAE_ref", "estimate"] > 1
    assert w.loc["WAE_ref", "perm_pvalue"] < 0.05  # far above the label-permutation null
    assert w.loc["delta_WAE_ref", "perm_n_undefined"] > 0


def test_word_absent_from_one_corpus_is_defined_by_smoothing():
    ref = {"F": Counter({"mastectomy": 30, "lung": 50}), "M": Counter({"lung": 50})}
    pred = {"F": Counter({"lung": 50}), "M": Counter({"lung": 50})}
    t = cad(ref, pred).set_index("word")
    # V = 2, αV = 0.2; prediction: N_F = N_M = 50 -> s_pred(mastectomy) = log[(0.1/50.2)/(0.1/50.2)] = 0, Var = 1/0.1 + 1/0.1 = 20
    assert t.loc["mastectomy", "s_pred"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc["mastectomy", "var_pred"] == pytest.approx(20.0)
    # reference: s = log(30.1/80.2) − log(0.1/50.2) = log(188.39) = 5.2384, Var = 1/30.1 + 10 = 10.03322
    assert t.loc["mastectomy", "s_ref"] == pytest.approx(math.log(30.1 / 80.2) - math.log(0.1 / 50.2))
    assert t.loc["mastectomy", "var_ref"] == pytest.approx(1 / 30.1 + 10)
    # z_disp = −5.2384 / sqrt(30.03322) = −0.9559: a word the model never writes has Var_pred = 2/α,
    # so its displacement is bounded and here not significant
    assert t.loc["mastectomy", "z_disp"] == pytest.approx(-5.2384 / math.sqrt(30.03322), abs=1e-4)
    assert np.isfinite(t[["s_ref", "s_pred", "z_ref", "z_pred", "z_disp", "p"]].to_numpy()).all()


# ------------------------------------------------------------------------------------------------
# the silence test and exact association z's (module docstring, items 9-10): ours, beside the paper's


def test_silence_test_and_exact_z_hand_computed():
    ref = {"F": Counter({"mastectomy": 30, "lung": 50}), "M": Counter({"lung": 50})}
    pred = {"F": Counter({"lung": 50}), "M": Counter({"lung": 50})}
    t = cad(ref, pred).set_index("word")
    # reference: mastectomy 30 F / 0 M; pi = N_F / (N_F + N_M) = 80/130; two-sided p = 2 (80/130)^30
    p_two = 2 * (80 / 130) ** 30
    assert t.loc["mastectomy", "z_ref_exact"] == pytest.approx(sps.norm.isf(p_two / 2))
    assert t.loc["mastectomy", "z_ref_exact"] == pytest.approx(4.90276, abs=1e-5)
    assert t.loc["mastectomy", "z_ref"] == pytest.approx(1.653846, abs=1e-6)  # the paper's z: not "strong"
    # silence, group F: pi = N_pred_F / (N_pred_F + N_ref_F) = 50/130; P(X <= 0 | n = 30) = (80/130)^30
    assert t.loc["mastectomy", "silence_group"] == "F"
    assert t.loc["mastectomy", "p_silence"] == pytest.approx((80 / 130) ** 30)
    # lung is M-associated in the reference (s_ref < 0): group M, 50 of 100 at pi = 50/100 -> P(X <= 50)
    assert t.loc["lung", "silence_group"] == "M"
    assert t.loc["lung", "p_silence"] == pytest.approx(sps.binom.cdf(50, 100, 0.5))
    # BH over V = 2: the smaller p doubles, the larger stays
    assert t.loc["mastectomy", "p_silence_adj"] == pytest.approx(2 * (80 / 130) ** 30)
    assert t.loc["lung", "p_silence_adj"] == pytest.approx(sps.binom.cdf(50, 100, 0.5))
    assert t.loc["mastectomy", "z_pred_exact"] == 0.0  # never written: no association in the predictions
    assert bool(t.loc["mastectomy", "erased_silence"]) and t.loc["mastectomy", "category"] == "Stable"
    assert not t.loc["lung", "erased_silence"]
    assert erasure_counts(cad(ref, pred)) == {"paper": 0, "silence": 1, "both": 0, "either": 1}


def _template_corpus(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """Sex-specific words in the references (mastectomy, breast / aicd, prostate), a neutral finding
    (atelectasis, equally common), and one template written for every study."""
    rng = np.random.default_rng(seed)
    rows = []
    for sex, specific in (("F", ["mastectomy", "breast"]), ("M", ["aicd", "prostate"])):
        for _ in range(n):
            words = ["lungs clear", "heart size normal"]
            words += [w for w in specific if rng.random() < 0.3]
            if rng.random() < 0.3:
                words.append("bibasilar atelectasis")
            rows.append((" ".join(words), sex))
    df = pd.DataFrame(rows, columns=["reference", "group"])
    return df.assign(prediction="Lungs clear. Heart size normal. No effusion.")


def test_one_template_generator_silence_flags_sex_specific_words_the_paper_flags_none():
    df = _template_corpus()
    t = association_audit(df, n_bootstrap=0, n_permutations=0).words.set_index("word")
    # the paper's test cannot see silence: Var_pred = 2/alpha bounds z_disp (module docstring, item 8)
    assert (t["category"] == "Erasure").sum() == 0
    erased = set(t.index[t["erased_silence"]])
    assert erased == {"mastectomy", "breast", "aicd", "prostate"}
    # negative controls: template words are still written; atelectasis is dropped but was never sex-associated
    assert abs(t.loc["atelectasis", "z_ref_exact"]) < 2 and t.loc["atelectasis", "p_silence_adj"] < 0.05
    assert not t.loc[["lungs", "clear", "heart", "atelectasis"], "erased_silence"].any()


def test_silence_test_flags_nothing_when_predictions_are_the_references():
    df = _template_corpus()
    t = association_audit(df.assign(prediction=df["reference"]), n_bootstrap=0, n_permutations=0).words
    assert not t["erased_silence"].any() and (t["p_silence"] > 0.4).all()


def test_silence_test_bad_shapes_are_clear_errors():
    with pytest.raises(AssociationInputError, match=r"\[V x 2\]"):
        exact_association_z(np.ones((3, 3)), np.ones(3))


# ------------------------------------------------------------------------------------------------
# inference: bootstrap and permutation


def _random_corpus(seed: int, n: int = 60, vocab: int = 20) -> pd.DataFrame:
    """Reports with labels independent of the text (exchangeable)."""
    rng = np.random.default_rng(seed)
    words = [f"term{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(vocab)]
    prob = 1.0 / np.arange(1, vocab + 1)
    prob /= prob.sum()
    refs, preds = [], []
    for _ in range(n):
        ref = list(rng.choice(words, size=int(rng.integers(3, 9)), p=prob))
        pred = [w if rng.random() < 0.6 else str(rng.choice(words, p=prob)) for w in ref]
        refs.append(" ".join(ref))
        preds.append(" ".join(pred))
    return pd.DataFrame({"reference": refs, "prediction": preds, "group": rng.choice(["F", "M"], size=n)})


def test_permutation_null_pvalues_are_roughly_uniform():
    pvals = {"delta_WAE_pred": [], "WAE_pred": []}
    for seed in range(50):
        df = _random_corpus(1000 + seed)
        counts = count_reports(df["reference"], df["prediction"], df["group"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = wae_inference(counts, n_bootstrap=0, n_permutations=99, permutation_seed=seed,
                                permuted=tuple(pvals)).set_index("metric")
        for k in pvals:
            pvals[k].append(res.loc[k, "perm_pvalue"])
    for k, p in pvals.items():
        p = np.asarray(p)
        assert np.isfinite(p).all() and ((p > 0) & (p <= 1)).all()
        assert sps.kstest(p, "uniform").pvalue > 0.01, (k, np.sort(p))


def test_permutation_exact_on_tiny_corpus_and_alternatives():
    res = association_audit(HAND, assoc_z=0.0, n_bootstrap=0, n_permutations=1000).wae.set_index("metric")
    # 4 reports, 2 per group: C(4, 2) = 6 distinct relabellings <= 1000 -> enumerated exactly
    assert bool(res.loc["WAE_pred", "perm_exact"]) and res.loc["WAE_pred", "n_permutations"] == 6
    assert res.loc["WAE_pred", "perm_alternative"] == "greater"
    assert res.loc["delta_WAE_pred", "perm_alternative"] == "two-sided"
    assert math.isnan(res.loc["WAE_pred_F", "perm_pvalue"])  # not tested by default


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [4, 30])  # C(8, 4) = 70 <= 200: exact; 30 + 30: Monte Carlo
def test_conditional_pvalue_is_scipys_formula_when_all_defined(alternative, n):
    from radaudit.metrics.association.inference import _conditional_pvalue
    from radaudit.stats import permutation_test

    rng = np.random.default_rng(n)
    res = permutation_test(rng.normal(size=n), rng.normal(0.3, 1, size=n), n_permutations=200, alternative=alternative,
                           seed=2)
    assert _conditional_pvalue(res.null_distribution, res.statistic, alternative, res.exact) == pytest.approx(res.pvalue)
    # an undefined relabelling is left out of the p-value instead of counting as "not extreme"
    null = np.append(res.null_distribution, np.nan)
    assert _conditional_pvalue(null, res.statistic, alternative, res.exact) == pytest.approx(res.pvalue)


def _fixed_vocab_statistic(df: pd.DataFrame, name: str, assoc_z: float):
    """WAE statistic `name` of the reports idx, through the public cad()/wae() with V fixed (reference path)."""
    toks_r = [tokenize_for_association(t) for t in df["reference"]]
    toks_p = [tokenize_for_association(t) for t in df["prediction"]]
    vocab = sorted({w for d in toks_r + toks_p for w in d})
    groups = df["group"].tolist()

    def stat(idx: np.ndarray) -> float:
        ref = {g: Counter(dict.fromkeys(vocab, 0)) for g in ("F", "M")}
        pred = {g: Counter(dict.fromkeys(vocab, 0)) for g in ("F", "M")}
        for i in np.asarray(idx, dtype=int):
            ref[groups[i]].update(toks_r[i])
            pred[groups[i]].update(toks_p[i])
        return wae(cad(ref, pred), assoc_z=assoc_z)[name]

    stat.__name__ = name
    return stat


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_matches_radaudit_stats_bootstrap_ci(method):
    df = _random_corpus(7, n=30, vocab=12)
    counts = count_reports(df["reference"], df["prediction"], df["group"])
    ours = wae_inference(counts, assoc_z=0.0, n_bootstrap=60, ci_method=method, bootstrap_seed=11,
                         n_permutations=0).set_index("metric")
    for name in ("WAE_pred", "delta_WAE_ref"):
        ref = bootstrap_ci(np.arange(len(df)), _fixed_vocab_statistic(df, name, 0.0), n_bootstrap=60, method=method,
                           seed=11)
        row = ours.loc[name]
        assert row["estimate"] == pytest.approx(ref.estimate, rel=1e-9)
        assert row["low"] == pytest.approx(ref.low, rel=1e-9)
        assert row["high"] == pytest.approx(ref.high, rel=1e-9)
        assert row["se"] == pytest.approx(ref.se, rel=1e-9)
        assert row["method"] == ref.method and row["n_failed"] == ref.n_failed
        assert row["bias"] == pytest.approx(np.nanmean(ref.replicates) - ref.estimate, rel=1e-9, abs=1e-12)


def test_bootstrap_ci_contains_estimate_and_is_reproducible():
    kw = dict(n_bootstrap=300, n_permutations=0)
    a = association_audit(_erasure_corpus(), bootstrap_seed=3, **kw).wae
    b = association_audit(_erasure_corpus(), bootstrap_seed=3, **kw).wae
    c = association_audit(_erasure_corpus(), bootstrap_seed=4, **kw).wae
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["low"].dropna(), c["low"].dropna())
    w = a.set_index("metric")
    for k in ("WAE_pred", "WAE_ref", "WAE_ref_F", "delta_WAE_ref"):
        assert w.loc[k, "low"] <= w.loc[k, "estimate"] <= w.loc[k, "high"], k
        assert w.loc[k, "n_bootstrap"] == 300 and w.loc[k, "method"] == "shifted"


# ------------------------------------------------------------------------------------------------
# bad inputs


def test_one_group_empty_is_a_clear_error():
    df = HAND.assign(group=["M", "M", "M", "O"])
    with pytest.raises(AssociationInputError, match=r"group 'F' has no reports.*'F': 0, 'M': 3.*'O': 1"):
        association_audit(df, n_bootstrap=0, n_permutations=0)


def test_unknown_group_values_are_excluded_and_counted_or_strict_error():
    extra = pd.DataFrame({"reference": ["Effusion.", "Nodule.", "Mass."], "prediction": ["", "Nodule.", "Mass."],
                          "group": ["O", None, np.nan]})
    df = pd.concat([HAND, extra], ignore_index=True)
    res = association_audit(df, n_bootstrap=0, n_permutations=0)
    assert res.excluded == {"<NA>": 2, "O": 1} and res.n_excluded == 3
    assert res.n_reports == {"F": 2, "M": 2}
    pd.testing.assert_frame_equal(res.words, _hand_table().reset_index(), check_like=False)
    with pytest.raises(AssociationInputError, match=r"3 rows .*outside groups.*'<NA>': 2, 'O': 1"):
        association_audit(df, strict=True, n_bootstrap=0, n_permutations=0)


def test_other_group_columns_work():
    df = HAND.assign(band=["<60", "<60", ">=60", ">=60"])
    df = pd.concat([df, df.iloc[[0]].assign(band="unknown")], ignore_index=True)
    res = association_audit(df, group="band", groups=("<60", ">=60"), n_bootstrap=0, n_permutations=0)
    assert res.groups == ("<60", ">=60") and res.excluded == {"unknown": 1}
    assert "c_ref_<60" in res.words.columns
    np.testing.assert_allclose(res.words["z_disp"], _hand_table()["z_disp"].to_numpy(), atol=1e-12)


def test_empty_predictions_are_defined():
    df = HAND.assign(prediction="")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = association_audit(df, n_bootstrap=50, n_permutations=20)
    t = res.words.set_index("word")
    # N_F = N_M = 0 in the predictions: p_g(w) = α/(αV) = 1/V for both groups -> s_pred = 0, Var_pred = 20
    assert (t["s_pred"] == 0).all() and np.allclose(t["var_pred"], 20.0)
    assert t.loc["effusion", "z_disp"] == pytest.approx(-S_REF["effusion"] / math.sqrt(20 + VAR_REF["effusion"]))
    assert res.n_tokens == {"ref_F": 3, "ref_M": 2, "pred_F": 0, "pred_M": 0}
    w = res.wae.set_index("metric")
    assert math.isnan(w.loc["WAE_pred", "estimate"]) and math.isnan(w.loc["WAE_pred", "low"])  # Σω = 0
    assert np.isfinite(w.loc["WAE_ref", "estimate"])


def test_missing_texts_columns_and_bad_params_raise():
    with pytest.raises(AssociationInputError, match=r"'prediction' is missing .*index \[1\].*''"):
        association_audit(HAND.assign(prediction=["a", None, "b", "c"]), n_bootstrap=0, n_permutations=0)
    with pytest.raises(AssociationInputError, match="no column"):
        association_audit(HAND.rename(columns={"group": "sex"}), n_bootstrap=0, n_permutations=0)
    with pytest.raises(AssociationInputError, match="alpha"):
        association_audit(HAND, alpha=0, n_bootstrap=0, n_permutations=0)
    with pytest.raises(AssociationInputError, match="z_neutral"):
        cad({"F": ["a"], "M": ["b"]}, {"F": ["a"], "M": ["b"]}, z_neutral=3, z_strong=2)
    with pytest.raises(AssociationInputError, match="expected exactly"):
        cad({"F": ["a"], "X": ["b"]}, {"F": ["a"], "M": ["b"]})
    with pytest.raises(AssociationInputError, match="no token"):
        association_audit(HAND.assign(reference="the and of", prediction="12 ."), n_bootstrap=0, n_permutations=0)


# ------------------------------------------------------------------------------------------------
# tokenisation


def test_tokenize_for_association():
    text = "No acute disease. The patient's X-ray shows a 2.5 cm nodule at T12; Pneumothorax, née café."
    assert tokenize_for_association(text) == ["acute", "disease", "patient", "ray", "shows", "cm", "nodule",
                                              "pneumothorax", "née", "café"]
    assert tokenize_for_association("") == [] and tokenize_for_association("  \n") == []
    assert tokenize_for_association("no effusion", stopwords=()) == ["no", "effusion"]
    assert tokenize_for_association("x ray", min_length=1) == ["x", "ray"]
    with pytest.raises(TypeError):
        tokenize_for_association(None)  # type: ignore[arg-type]


def test_deidentification_placeholders_are_not_words():
    # IU X-ray writes XXXX for removed words; MIMIC-CXR ___; MIMIC-III [** **] tags; others <NAME>
    text = "Sternotomy XXXX. XXXX-year-old <XXXX> ___ [**Hospital1 18**] <NAME> seen; x-ray taxxxi xxiv"
    assert tokenize_for_association(text) == ["sternotomy", "year", "old", "seen", "ray", "taxxxi", "xxiv"]
    # in CAD a placeholder never enters the vocabulary, whatever the group that carries it
    df = pd.DataFrame({"reference": ["XXXX effusion", "XXXX XXXX XXXX heart"], "prediction": ["xxxx effusion", "heart"],
                       "group": ["F", "M"]})
    assert set(association_audit(df, n_bootstrap=0, n_permutations=0).words["word"]) == {"effusion", "heart"}


def test_default_stopword_list_is_nltk_english():
    stop = load_stopwords()
    assert len(stop) == 179  # NLTK's English list (nltk_data stopwords/english, 2018+)
    assert {"the", "no", "not", "nor", "don", "wouldn't", "should've"} <= stop
    assert not {"effusion", "left", "right", "normal"} & stop


def test_wae_interval_is_clipped_at_zero_and_contains_the_estimate():
    """A corpus whose predictions barely move: the shifted interval would dip below 0 for WAE (a mean of squares)."""
    refs = ["small left pleural effusion", "heart size normal lungs clear"] * 10
    df = pd.DataFrame({"ref": refs, "pred": ["no acute cardiopulmonary process"] * 20, "g": ["F", "M"] * 10})
    w = association_audit(df, "ref", "pred", "g", ("F", "M"), n_bootstrap=200, n_permutations=0).wae.set_index("metric")
    for k in ("WAE_pred", "WAE_ref"):
        assert w.loc[k, "low"] >= 0.0 and w.loc[k, "low"] <= w.loc[k, "estimate"] <= w.loc[k, "high"], k


# --- speed paths (benchmarks/bench_association.py) must not change a number ------------------------------

def test_corpus_count_matrix_equals_tokenising_report_by_report(shared_data):
    """count_reports tokenises the corpus in one pass; every report's counts equal tokenize_for_association's."""
    iu = pd.read_csv(shared_data / "iu-xray-openi" / "indiana_reports.csv")
    texts = iu["findings"].fillna("").tolist()[:1500] + iu["impression"].fillna("").tolist()[:1500]
    texts += ["[**Hospital1 18**] seen. <NAME> XXXX-ray x-ray XXXX12 xxiv Xx __xx__ t12 patient's",
              "", "   ", "[** unclosed\n xx lung", "Épanchement pleural ΟΔΟΣ", "<b>bold</b> <XXXX> <DATE_1> xx",
              "nul\x00inside\n\x00\nand a separator-like run",  # a random-weight model's output can hold NULs
              texts[0]]  # a repeated text
    groups = ["F", "M"] * (len(texts) // 2) + ["F"] * (len(texts) % 2)
    counts = count_reports(texts, texts[::-1], groups)
    assert list(counts.vocab) == sorted(counts.vocab)
    for i in (0, 7, *range(len(texts) - 8, len(texts))):
        for mat, text in ((counts.reference, texts[i]), (counts.prediction, texts[::-1][i])):
            row = mat[i]
            got = {counts.vocab[j]: int(c) for j, c in zip(row.indices, row.data)}
            assert got == dict(Counter(tokenize_for_association(text))), text[:80]
    # totals over the whole corpus, not just the rows looked at
    expected = Counter(t for x in texts for t in tokenize_for_association(x))
    assert dict(zip(counts.vocab, np.asarray(counts.reference.sum(axis=0)).ravel().tolist())) == expected


def test_placeholder_runs_glued_to_digits_are_dropped_but_words_with_x_stay():
    assert tokenize_for_association("XXXX12 XXXX_ <XXXX> xxiv Xx xray x") == ["xxiv", "xray"]
    assert tokenize_for_association("xx x", min_length=1) == ["x"]  # one x is a letter, two a placeholder


def test_threaded_inference_equals_the_sequential_one(monkeypatch):
    """On a large corpus the bootstrap and the permutations run on two threads: same numbers as one thread."""
    import radaudit.metrics.association.inference as assoc

    rng = np.random.default_rng(3)
    words = ["effusion", "mastectomy", "pacemaker", "lung", "heart", "clear", "small", "large", "opacity"]
    refs = [" ".join(rng.choice(words, 6)) for _ in range(300)]
    preds = [" ".join(rng.choice(words, 4)) for _ in range(300)]
    counts = count_reports(refs, preds, rng.choice(["F", "M"], 300))
    kw = dict(n_bootstrap=200, n_permutations=199, bootstrap_seed=5, permutation_seed=6)
    monkeypatch.setattr(assoc, "PARALLEL_WORK", 10**12)
    one = wae_inference(counts, **kw)
    monkeypatch.setattr(assoc, "PARALLEL_WORK", 0)
    two = wae_inference(counts, **kw)
    pd.testing.assert_frame_equal(one, two)
    assert one.set_index("metric").loc[["WAE_pred", "WAE_ref"], "perm_pvalue"].notna().all()
    assert one.set_index("metric").loc[["WAE_pred", "WAE_ref"], "low"].notna().all()


def test_permutation_p_values_equal_one_scipy_call_per_statistic():
    """All WAE statistics are tested on one set of permutations; each p-value equals scipy's own for that
    statistic alone (same seed, hence the same permutations)."""
    import radaudit.metrics.association.inference as assoc

    counts = count_reports(list(_erasure_corpus()["reference"])[::3] + ["lung clear"] * 10,
                           ["heart normal small"] * 77, ["F"] * 40 + ["M"] * 37)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ΔWAE is undefined in most relabellings here
        res = wae_inference(counts, n_bootstrap=0, n_permutations=99, permutation_seed=4).set_index("metric")
    eng = assoc._Engine(counts, 0.1, 1.0)
    idx = np.arange(counts.n_reports)
    for k in ("WAE_pred", "WAE_ref"):
        ref = sps.permutation_test((idx[counts.group == 0].astype(float), idx[counts.group == 1].astype(float)),
                                   lambda x, y, axis=-1, _k=k: eng.relabelled(x)[_k], vectorized=True,
                                   n_resamples=99, alternative="greater", rng=np.random.default_rng(4))
        assert res.loc[k, "perm_pvalue"] == pytest.approx(float(ref.pvalue), abs=1e-12)


def test_cad_arrays_of_stacked_replicates_equal_each_replicate_alone():
    """[V × 2 × B] totals: every per-word array is [V × B] and its column b is the call on replicate b alone, bit
    for bit (BH per column; a replicate whose second group has no reference tokens: its exact tests give p = 1)."""
    from radaudit.metrics.association import cad_arrays

    rng = np.random.default_rng(0)
    V, B = 60, 5
    rate = rng.gamma(0.4, 3.0, size=(V, 1, 1))
    c_ref = rng.poisson(rate, size=(V, 2, B)).astype(float)
    c_pred = rng.poisson(rate, size=(V, 2, B)).astype(float)
    c_ref[:, 1, 4] = 0.0
    for correction in ("bh", "none"):
        stacked = cad_arrays(c_ref, c_pred, correction=correction)
        for b in range(B):
            alone = cad_arrays(c_ref[:, :, b], c_pred[:, :, b], correction=correction)
            for key, value in alone.items():
                got = stacked[key] if key == "z_crit" else stacked[key][:, b]
                assert np.array_equal(np.asarray(got), np.asarray(value), equal_nan=value.dtype != object), key
    assert (cad_arrays(c_ref, c_pred)["p_ref_exact"][:, 4] == 1.0).all()
    with pytest.raises(AssociationInputError, match="V x 2"):
        cad_arrays(c_ref[:, :1], c_pred[:, :1])
