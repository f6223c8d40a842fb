"""radaudit.stats.ranks on known answers: AUROC and rank correlations by hand, against scikit-learn and scipy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats as sps
from sklearn.metrics import roc_auc_score

from radaudit.errors import ParamsError
from radaudit.stats import (
    auroc,
    auroc_replicates,
    auroc_two_sample,
    average_ranks,
    kendall_tau,
    kendall_tau_columns,
    kendall_tau_replicates,
    kendall_test,
    pairwise_signs,
    pearson_r,
    pearson_r_pairs,
    pearson_test,
    spearman_rho,
    spearman_rho_columns,
    spearman_rho_replicates,
    spearman_test,
)

# ------------------------------------------------------------------------------------------ AUROC


def test_auroc_by_hand():
    # positives 0.35, 0.8; negatives 0.1, 0.4: (0.35 > 0.1) (0.35 < 0.4) (0.8 > 0.1) (0.8 > 0.4) -> 3 of 4
    y, s = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    assert auroc(y, s) == 0.75
    assert auroc_replicates(y, s).tolist() == [0.75]
    assert auroc_two_sample(negatives=[0.1, 0.4], positives=[0.35, 0.8]) == 0.75
    # Mann-Whitney form: ranks 1, 3, 2, 4 -> R+ = 6; (6 - 2*3/2) / (2*2) = 0.75
    assert (6 - 2 * 3 / 2) / (2 * 2) == 0.75


def test_auroc_ties_count_half():
    # positives 0.8, 0.4; negatives 0.4, 0.1: 1 + 1 + ½ (0.4 = 0.4) + 1 = 3.5 of 4
    assert auroc([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]) == 0.875
    assert auroc_replicates([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]).tolist() == [0.875]
    assert auroc([1, 0, 1, 0], [0.3] * 4) == 0.5  # a constant score is chance, exactly
    assert auroc_two_sample([1.0, 1.0, 1.0], [1.0, 1.0]) == 0.5
    assert auroc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0


def test_the_positive_rule_label_equals_positive_everything_else_negative():
    s = [0.1, 0.4, 0.35, 0.8]
    want = auroc([0, 0, 1, 1], s)
    assert auroc([False, False, True, True], s) == want  # True == 1
    assert auroc([0.0, 0.0, 1.0, 1.0], s) == want
    assert auroc([-1, -1, 1, 1], s) == want  # -1 is not 1: negative
    assert auroc([2, 0, 1, 1], s) == want  # 2 is not 1: negative (no "non-zero is positive")
    assert auroc([2, 0, 1, 1], s, positive=2) == auroc([1, 0, 0, 0], s)
    assert auroc(["no", "no", "yes", "yes"], s, positive="yes") == want
    assert auroc_replicates([-1, -1, 1, 1], s).tolist() == [want]
    assert auroc_replicates([[2, 0, 1, 1]], [s], positive=2).tolist() == [auroc([1, 0, 0, 0], s)]
    with pytest.raises(ParamsError, match="NaN labels"):
        auroc([0, np.nan, 1, 1], s)


def test_undefined_auroc_raises_saying_what_to_do_or_gives_nan():
    with pytest.raises(ValueError, match=r"3 positives .*and 0 negatives.*needs both.*undefined='nan'"):
        auroc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"0 positives \(label == 1\).*positive=\.\.\."):
        auroc(["a", "b"], [0.1, 0.2])  # strings: no label equals 1
    with pytest.raises(ValueError, match="1 scores are NaN or infinite.*drop those rows"):
        auroc([1, 0], [0.5, float("nan")])
    with pytest.raises(ValueError, match="shape"):
        auroc([1, 0, 1], [0.5, 0.2])
    with pytest.raises(ValueError, match="undefined="):
        auroc([1, 0], [0.5, 0.2], undefined="zero")
    assert math.isnan(auroc([1, 1, 1], [0.1, 0.2, 0.3], undefined="nan"))
    assert math.isnan(auroc([1, 0], [0.5, float("inf")], undefined="nan"))
    with pytest.raises(ValueError, match="shape"):  # a length mismatch raises even with undefined="nan"
        auroc([1, 0, 1], [0.5, 0.2], undefined="nan")
    with pytest.raises(ValueError, match="non-empty"):
        auroc_two_sample([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        auroc_two_sample([np.nan], [1.0])


@pytest.mark.parametrize("seed", range(4))
def test_replicates_equal_auroc_row_by_row_with_ties_and_undefined_rows(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (80, 40))
    y[0] = 1  # one class: undefined
    s = np.where(rng.random((80, 40)) < 0.5, rng.integers(0, 3, (80, 40)), np.round(rng.normal(size=(80, 40)) + y, 1))
    s[1, 4] = np.nan  # a missing score: undefined
    got = auroc_replicates(y, s)
    want = np.array([auroc(y[i], s[i], undefined="nan") for i in range(len(y))])
    assert np.isnan(got[:2]).all() and np.isnan(want[:2]).all()
    np.testing.assert_allclose(got[2:], want[2:], rtol=0, atol=1e-15)  # the trapezoid vs the exact rank form
    np.testing.assert_allclose(want[2:], [roc_auc_score(y[i], s[i]) for i in range(2, len(y))], rtol=0, atol=0)
    # the two-sample form is one row of the replicate form, bit for bit
    two = [auroc_two_sample(s[i][y[i] == 0], s[i][y[i] == 1]) for i in range(2, len(y))]
    assert np.array_equal(got[2:], two)
    # and the Mann-Whitney U over n+ n-
    u = [sps.mannwhitneyu(s[i][y[i] == 1], s[i][y[i] == 0]).statistic / ((y[i] == 1).sum() * (y[i] == 0).sum())
         for i in range(2, len(y))]
    np.testing.assert_allclose(got[2:], u, rtol=0, atol=1e-15)


def test_replicates_share_one_row_of_labels_and_check_shapes():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 30)
    s = rng.normal(size=(7, 30))
    assert np.array_equal(auroc_replicates(y, s), auroc_replicates(np.tile(y, (7, 1)), s))
    with pytest.raises(ValueError, match="shape"):
        auroc_replicates([[1, 0]], [[0.5, 0.2, 0.1]])


# ------------------------------------------------------------------------------------------ rank correlations

# x = 1 2 3 4, y = 2 1 3 3: pairs (1,2) discordant, (3,4) tied in y, the other 4 concordant.
X4, Y4 = [1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 3.0, 3.0]
TAU_B = (4 - 1) / math.sqrt(6 * (6 - 1))  # (n_c - n_d) / sqrt((n0 - n_x)(n0 - n_y)), n0 = 6, n_x = 0, n_y = 1
# average ranks of y: 2 1 3.5 3.5; centred x: -1.5 -.5 .5 1.5, centred y: -.5 -1.5 1 1
RHO = 3.5 / math.sqrt(5 * 4.5)


def test_kendall_tau_b_and_spearman_rho_by_hand_with_a_tie():
    assert kendall_tau(X4, Y4) == pytest.approx(TAU_B, abs=1e-15)
    assert spearman_rho(X4, Y4) == pytest.approx(RHO, abs=1e-15)
    assert kendall_tau_columns(np.c_[X4], np.c_[Y4])[0, 0] == pytest.approx(TAU_B, abs=1e-15)
    assert spearman_rho_columns(np.c_[X4], np.c_[Y4])[0, 0] == pytest.approx(RHO, abs=1e-15)
    assert average_ranks(Y4).tolist() == [2.0, 1.0, 3.5, 3.5]
    signs = pairwise_signs(np.c_[Y4])
    assert signs.shape == (1, 4, 4) and signs[0, 2, 3] == 0.0 and signs[0, 0, 1] == 1.0 and signs[0, 1, 0] == -1.0


@pytest.mark.parametrize("seed", range(5))
def test_one_pair_forms_are_scipy_and_column_forms_equal_it_per_column(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    x = np.round(rng.normal(size=(n, 3)), int(rng.integers(0, 2)))  # rounding: ties
    y = np.round(x[:, :2] + rng.normal(size=(n, 2)), int(rng.integers(0, 2)))
    tau, rho = kendall_tau_columns(x, y), spearman_rho_columns(x, y)
    assert tau.shape == rho.shape == (3, 2)
    for j in range(3):
        for k in range(2):
            kt, sr = sps.kendalltau(x[:, j], y[:, k]), sps.spearmanr(x[:, j], y[:, k])
            assert kendall_tau(x[:, j], y[:, k]) == kt.statistic  # scipy, exactly
            assert spearman_rho(x[:, j], y[:, k]) == sr.statistic
            assert kendall_test(x[:, j], y[:, k]) == (kt.statistic, kt.pvalue)
            assert spearman_test(x[:, j], y[:, k]) == (sr.statistic, sr.pvalue)
            assert tau[j, k] == pytest.approx(kt.statistic, abs=1e-14)  # the column forms: up to rounding
            assert rho[j, k] == pytest.approx(sr.statistic, abs=1e-14)


def test_constant_input_gives_nan_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3])) and math.isnan(spearman_rho([1, 2, 3], [5, 5, 5]))
        assert all(math.isnan(v) for v in (*kendall_test([2, 2], [1, 2]), *spearman_test([1, 2], [0, 0])))
        tau = kendall_tau_columns(np.c_[[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]], np.c_[[1.0, 3.0, 2.0]])
        rho = spearman_rho_columns(np.c_[[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]], np.c_[[1.0, 3.0, 2.0]])
    assert np.isnan(tau[1, 0]) and np.isnan(rho[1, 0]) and np.isfinite(tau[0, 0]) and np.isfinite(rho[0, 0])


def test_shared_input_checks():
    for f in (kendall_tau, spearman_rho, kendall_test, spearman_test):
        with pytest.raises(ValueError, match="same length"):
            f([1, 2, 3], [1, 2])
        with pytest.raises(ValueError, match="at least 2"):
            f([1], [1])
        with pytest.raises(ValueError, match="NaN.*drop the incomplete pairs"):
            f([1, 2, np.nan], [1, 2, 3])
    for f in (kendall_tau_columns, spearman_rho_columns):
        with pytest.raises(ValueError, match="same number of rows"):
            f(np.ones((3, 1)), np.ones((2, 1)))
        with pytest.raises(ValueError, match="at least 2 rows"):
            f(np.ones((1, 1)), np.ones((1, 1)))
        with pytest.raises(ValueError, match="complete rows"):
            f(np.array([[1.0], [np.nan]]), np.array([[1.0], [2.0]]))


# ------------------------------------------------------------------------------------------ Pearson's r

# X4, Y4 again: centred x -1.5 -.5 .5 1.5, centred y (mean 2.25) -.25 -1.25 .75 .75:
# Σx̃ỹ = .375 + .625 + .375 + 1.125 = 2.5, Σx̃² = 5, Σỹ² = .0625 + 1.5625 + .5625 + .5625 = 2.75
PEARSON = 2.5 / math.sqrt(5 * 2.75)


def test_pearson_r_by_hand_and_equal_to_scipy():
    assert pearson_r(X4, Y4) == pytest.approx(PEARSON, abs=1e-15)
    r, p = pearson_test(X4, Y4)
    assert (r, p) == (sps.pearsonr(X4, Y4).statistic, sps.pearsonr(X4, Y4).pvalue)  # scipy, exactly
    assert r == pytest.approx(PEARSON, abs=1e-15)
    # Spearman's ρ is Pearson's r of the average ranks
    assert pearson_r(average_ranks(X4), average_ranks(Y4)) == pytest.approx(RHO, abs=1e-15)
    assert pearson_r([1, 2, 3], [3, 2, 1]) == -1.0 and pearson_r([0, 1e-9, 2e-9], [0, 1, 2]) <= 1.0  # clipped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(pearson_r([1, 1, 1], [1, 2, 3])) and all(map(math.isnan, pearson_test([2, 2], [1, 2])))
    for f in (pearson_r, pearson_test):
        with pytest.raises(ValueError, match="same length"):
            f([1, 2, 3], [1, 2])
        with pytest.raises(ValueError, match="NaN.*drop the incomplete pairs"):
            f([1, 2, np.nan], [1, 2, 3])


def test_pearson_r_pairs_by_hand_on_a_matrix_and_on_a_stack_of_resamples():
    z = [4.0, 4.0, 4.0, 4.0]  # constant: its pairs are NaN
    mat = np.c_[X4, Y4, z]
    got = pearson_r_pairs(mat, [0, 0, 1], [1, 2, 2])
    assert got[0] == pytest.approx(PEARSON, abs=1e-15) and np.isnan(got[1:]).all()
    # a stack: resample 0 is the data, resample 1 rows 0 0 2 3: x 1 1 3 4, y 2 2 3 3 ->
    # centred x -1.25 -1.25 .75 1.75, y -.5 -.5 .5 .5: Σ = .625 + .625 + .375 + .875 = 2.5, Σx² = 6.75, Σy² = 1
    stack = mat[np.array([[0, 1, 2, 3], [0, 0, 2, 3]])]
    rows = pearson_r_pairs(stack, [0], [1])
    assert rows.shape == (2, 1)
    assert rows[0, 0] == pytest.approx(PEARSON, abs=1e-15) and rows[1, 0] == pytest.approx(2.5 / math.sqrt(6.75), abs=1e-15)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 5))
    i, j = np.triu_indices(5, 1)
    assert pearson_r_pairs(a, i, j) == pytest.approx([sps.pearsonr(a[:, p], a[:, q]).statistic for p, q in zip(i, j)],
                                                     abs=1e-14)
    with pytest.raises(ValueError, match="pearson_r_pairs"):
        pearson_r_pairs(np.ones(4), [0], [1])


# ------------------------------------------------------------------------------------------ every replicate at once

def test_replicate_forms_by_hand():
    # weights 1 1 1 1: the data (TAU_B, RHO); weights 2 0 1 1: x 1 1 3 4, y 2 2 3 3 -> n_c = 4, n_d = 0, n0 = 6,
    # n_x = 1 (the copies of row 0), n_y = 2: τ-b = 4 / √(5 · 4); average ranks x 1.5 1.5 3 4, y 1.5 1.5 3.5 3.5,
    # centred x -1 -1 .5 1.5, y -1 -1 1 1: ρ = 4 / √(4.5 · 4)
    w = np.array([[1, 1, 1, 1], [2, 0, 1, 1]], dtype=np.float32)
    tau = kendall_tau_replicates(np.c_[X4], np.c_[Y4], w)
    rho = spearman_rho_replicates(np.c_[X4], np.c_[Y4], w)
    assert tau.shape == rho.shape == (2, 1, 1)
    assert tau[0, 0, 0] == pytest.approx(TAU_B, abs=1e-12) and tau[1, 0, 0] == pytest.approx(4 / math.sqrt(20), abs=1e-12)
    assert rho[0, 0, 0] == pytest.approx(RHO, abs=1e-15) and rho[1, 0, 0] == pytest.approx(4 / math.sqrt(18), abs=1e-15)
    diag = kendall_tau_replicates(np.c_[X4, Y4], np.c_[Y4, X4], w, diagonal=True)
    assert diag.shape == (2, 2) and diag[0, 1] == pytest.approx(TAU_B, abs=1e-12)


def test_replicate_forms_equal_scipy_on_the_resampled_rows_with_rows_left_out():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (12, 2)).astype(float)
    x[3, 1] = np.nan  # left out for that column only
    y = rng.integers(0, 3, (12, 3)).astype(float)
    w = rng.integers(0, 3, (4, 12)).astype(np.float32)
    tau, rho = kendall_tau_replicates(x, y, w), spearman_rho_replicates(x, y, w)
    for b in range(4):
        rows = np.repeat(np.arange(12), w[b].astype(int))
        for j in range(2):
            ok = rows[np.isfinite(x[rows, j])]
            for k in range(3):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # scipy warns on a constant resample (NaN, as ours)
                    kt, sr = sps.kendalltau(x[ok, j], y[ok, k]).statistic, sps.spearmanr(x[ok, j], y[ok, k]).statistic
                assert tau[b, j, k] == pytest.approx(kt, nan_ok=True)
                assert rho[b, j, k] == pytest.approx(sr, nan_ok=True, abs=1e-14)


def test_auroc_separation_interval_is_the_exact_bound_over_the_smaller_class():
    from radaudit.stats import auroc_separation_interval

    # m = min(110, 35) = 35 comparisons all won: Clopper-Pearson two-sided lower bound (0.025)^(1/35)
    low, high = auroc_separation_interval(1.0, 110, 35)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 35)) and low == pytest.approx(0.89997, abs=1e-5)
    # by hand for m = 5 at 90%: 0.05^(1/5) = 0.5493; AUROC 0 mirrors it
    assert auroc_separation_interval(0.0, 5, 9, confidence=0.9) == pytest.approx((0.0, 1 - 0.05 ** 0.2))
    assert auroc_separation_interval(0.93, 20, 20) is None  # a bootstrap interval has spread there
    assert auroc_separation_interval(1.0, 0, 20) is None
    with pytest.raises(ValueError, match="confidence"):
        auroc_separation_interval(1.0, 5, 5, confidence=1.5)


def test_spearman_replicates_do_not_depend_on_how_many_are_ranked_at_once(monkeypatch):
    """The replicates are ranked in passes (_RANK_ELEMENTS): one at a time gives the same values bit for bit; a
    replicate that keeps fewer than 2 rows of a column is NaN there."""
    from radaudit.stats import ranks

    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (9, 2)).astype(float)
    x[:7, 1] = np.nan  # column 1 has rows 7 and 8 only
    y = rng.integers(0, 4, (9, 2)).astype(float)
    w = rng.integers(0, 3, (6, 9)).astype(np.float32)
    w[2] = [2, 1, 1, 1, 1, 1, 1, 0, 1]  # one row of column 1 left: NaN
    whole = spearman_rho_replicates(x, y, w)
    monkeypatch.setattr(ranks, "_RANK_ELEMENTS", 1)
    assert np.array_equal(spearman_rho_replicates(x, y, w), whole, equal_nan=True)
    assert np.isnan(whole[2, 1]).all() and np.isfinite(whole[2, 0]).any()
