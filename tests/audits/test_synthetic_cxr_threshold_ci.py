"""Table 4's accuracy and F1 at the 0.5 threshold carry a 95% CI from the AUROC's own resamples, and an AUROC of
exactly 1 or 0 carries the separation bound (issue 42)."""

from __future__ import annotations

import numpy as np
import pytest

from radaudit.audits.synthetic_cxr import aurocs as A
from radaudit.audits.synthetic_cxr import table4 as T
from radaudit.stats import auroc_replicates, resample_indices
from radaudit.tables import missing_intervals

Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], float)
S = np.array([[0.9, 0.2], [0.6, 0.7], [0.4, 0.8], [0.1, 0.6]])  # at 0.5: pred [[1,0],[1,1],[0,1],[0,1]]


def test_threshold_replicates_hand_computed_on_a_fixed_resample():
    r = A.threshold_replicates(Y, S, np.array([[0, 0, 1, 3], [3, 3, 3, 3]]))
    # resample 0 = images 0, 0, 1, 3. label 0: truth [1,1,0,0], pred [1,1,1,0] -> 3/4 right; TP 2 FP 1 FN 0 -> 4/5
    # label 1: truth [0,0,1,0], pred [0,0,1,1] -> 3/4 right; TP 1 FP 1 FN 0 -> 2/3. macro: 6/8 right, F1 (4/5+2/3)/2
    assert r["accuracy"][0] == pytest.approx([3 / 4, 3 / 4, 6 / 8])
    assert r["f1"][0] == pytest.approx([4 / 5, 2 / 3, (4 / 5 + 2 / 3) / 2])
    # resample 1 = image 3 four times: label 0 all right with no positive (F1 0/0 -> 0), label 1 all false positives
    assert r["accuracy"][1] == pytest.approx([1.0, 0.0, 0.5])
    assert r["f1"][1] == pytest.approx([0.0, 0.0, 0.0])


def test_the_identity_resample_gives_the_tables_estimates():
    t = A.per_label_auroc(Y, S, ["a", "b"], n_bootstrap=0)
    r = A.threshold_replicates(Y, S, np.arange(4)[None, :])
    assert r["accuracy"][0] == pytest.approx(t["accuracy"].to_numpy())
    assert r["f1"][0] == pytest.approx(t["f1"].to_numpy())
    assert t[["accuracy_low", "f1_high"]].isna().all().all()  # no bootstrap, no interval


def _case(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=(n, 2)) < [0.4, 0.3]).astype(float)
    s = np.clip(0.35 * y + rng.uniform(size=(n, 2)) * 0.75, 0, 1)
    return y, s


def test_accuracy_and_f1_intervals_come_from_the_aurocs_resamples():
    y, s = _case()
    b, seed = 300, 7
    t = A.per_label_auroc(y, s, ["a", "b"], n_bootstrap=b, seed=seed).set_index("label")
    idx = np.concatenate(list(resample_indices(len(y), b, seed=seed, strata=y)))  # the stratified draws, once
    reps = A.threshold_replicates(y, s, idx)
    for j, lab in enumerate(["a", "b", "macro"]):
        for m in ("accuracy", "f1"):
            low, high = np.quantile(reps[m][:, j], [0.025, 0.975])
            assert (t.loc[lab, f"{m}_low"], t.loc[lab, f"{m}_high"]) == pytest.approx((low, high), abs=1e-12)
            assert t.loc[lab, f"{m}_low"] <= t.loc[lab, m] <= t.loc[lab, f"{m}_high"]
            assert t.loc[lab, f"{m}_low"] < t.loc[lab, f"{m}_high"]  # these data give every statistic some spread
    for j, lab in enumerate(["a", "b"]):  # the same draws give the AUROC's interval
        auc = auroc_replicates(y[idx, j] == 1, s[idx, j])
        assert (t.loc[lab, "ci_low"], t.loc[lab, "ci_high"]) == pytest.approx(tuple(np.quantile(auc, [0.025, 0.975])))
        assert t.loc[lab, "ci_method"] == "bootstrap"


def test_same_seed_same_table_byte_for_byte_and_the_auroc_replicates_unchanged():
    y, s = _case(seed=3)
    a = A.per_label_auroc(y, s, ["a", "b"], n_bootstrap=200, seed=5).to_csv(index=False)
    assert a == A.per_label_auroc(y, s, ["a", "b"], n_bootstrap=200, seed=5).to_csv(index=False)
    assert a != A.per_label_auroc(y, s, ["a", "b"], n_bootstrap=200, seed=6).to_csv(index=False)
    with_threshold = A._bootstrap_replicates(y, {"s": s}, 200, 5, True, 0.5)["s"]["auroc"]
    np.testing.assert_array_equal(with_threshold, A._bootstrap_aurocs(y, {"s": s}, 200, 5, True)["s"])


def test_table4_long_lists_no_estimate_without_an_interval():
    y, s = _case(seed=1)
    per = {"real": A.per_label_auroc(y, s, ["a", "b"], n_bootstrap=100, seed=2),
           "g": A.per_label_auroc(y, s[::-1], ["a", "b"], n_bootstrap=100, seed=2)}
    long = T.utility_flags(per, "real")
    declared = {"auroc_baseline"}  # NO_INTERVAL's remaining declaration for table4_long
    assert missing_intervals(long, descriptive=declared) == []
    bare = long.drop(columns=["accuracy_low", "accuracy_high", "f1_low", "f1_high"])
    assert missing_intervals(bare, descriptive=declared) == ["accuracy", "f1"]  # the check can fail


def test_a_perfect_auroc_gets_the_separation_bound_here_too():
    # label p: 12 positives all above 8 negatives; label q: 5 positives all above 15 negatives; label r: imperfect
    y = np.zeros((20, 3))
    y[:12, 0] = 1
    y[:5, 1] = 1
    y[::2, 2] = 1
    s = np.column_stack([np.r_[np.linspace(0.6, 0.9, 12), np.linspace(0.1, 0.4, 8)],
                         np.r_[np.linspace(0.6, 0.9, 5), np.linspace(0.1, 0.4, 15)],
                         np.linspace(0.1, 0.9, 20)])
    t = A.per_label_auroc(y, s, ["p", "q", "r"], n_bootstrap=200, seed=0).set_index("label")
    assert t.loc["p", "auroc"] == 1.0 and t.loc["p", "ci_method"] == "separation"
    assert (t.loc["p", "ci_low"], t.loc["p", "ci_high"]) == pytest.approx((0.025 ** (1 / 8), 1.0))
    assert t.loc["q", "ci_low"] == pytest.approx(0.025 ** (1 / 5))
    assert t.loc["r", "ci_method"] == "bootstrap" and t.loc["r", "ci_low"] < t.loc["r", "auroc"]
    assert t.loc["macro", "ci_method"] == "bootstrap"  # r < 1: the macro has spread
    both = A.per_label_auroc(y[:, :2], s[:, :2], ["p", "q"], n_bootstrap=200, seed=0).set_index("label")
    # a macro of exactly 1: the bound of its smallest class (q: 5 positives)
    assert both.loc["macro", "ci_method"] == "separation"
    assert both.loc["macro", "ci_low"] == pytest.approx(0.025 ** (1 / 5))
    # perfect predictions at 0.5: accuracy and F1 are 1 on every resample, and the note says why the width is 0
    assert (both.loc["p", "accuracy_low"], both.loc["p", "f1_high"]) == (1.0, 1.0)
    assert "same on every resample" in both.loc["p", "note"]
    table = T.utility_table({"real": both.reset_index()}, "real", marks=True, ci=True)
    assert table.loc["real", "p"] == f"1.00 [{0.025 ** (1 / 8):.2f}, 1.00]"
    assert "exact bound" in table.attrs["legend"]
    plain = T.utility_table({"real": A.per_label_auroc(y[:, 2:], s[:, 2:], ["r"], n_bootstrap=50)}, "real",
                            marks=True, ci=True)
    assert "exact bound" not in plain.attrs["legend"]
