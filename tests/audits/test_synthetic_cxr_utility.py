"""Downstream utility (CheXGenBench §2.4, Table 4): AUROC, bootstrap CIs, paired tests, flags, the classifier."""

from __future__ import annotations

from synthetic_images import squares

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from radaudit.audits.synthetic_cxr import aurocs as A
from radaudit.audits.synthetic_cxr import classifier as C
from radaudit.audits.synthetic_cxr import inputs as I
from radaudit.audits.synthetic_cxr import table4 as T
from radaudit.audits.synthetic_cxr import utility as U
from radaudit.errors import DataFormatError, ParamsError

# --- AUROC -----------------------------------------------------------------------------------------

def test_auroc_hand_cases():
    assert A.auroc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0  # perfect
    assert A.auroc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0  # reversed
    assert A.auroc([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]) == 0.5  # all tied
    # 3 positives / 3 negatives: pairs won 3 (0.9) + 1 (0.4 > 0.2) + 2 (0.6 > 0.5, 0.2) + ½ (0.6 = 0.6) = 6.5 of 9
    assert A.auroc([1, 1, 1, 0, 0, 0], [0.9, 0.4, 0.6, 0.5, 0.2, 0.6]) == pytest.approx(6.5 / 9)
    assert math.isnan(A.auroc([1, 1, 1], [0.1, 0.2, 0.3]))


def test_auroc_equals_mann_whitney_u_with_ties():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.normal(size=200) + y, 1)  # rounding makes many ties
    u = stats.mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert A.auroc(y, s) == pytest.approx(u / ((y == 1).sum() * (y == 0).sum()), abs=1e-12)


def test_roc_points_area_equals_auroc():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (50, 2))
    s = np.round(rng.uniform(size=(50, 2)) + 0.5 * y, 1)
    roc = A.roc_curve_points(y, s, ["a", "b"])
    for j, lab in enumerate(["a", "b"]):
        r = roc[roc["label"] == lab]
        f, t = r["fpr"].to_numpy(), r["tpr"].to_numpy()
        assert (f[0], t[0]) == (0.0, 0.0) and (f[-1], t[-1]) == (1.0, 1.0)
        assert np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2) == pytest.approx(A.auroc(y[:, j], s[:, j]))


# --- per-label table -------------------------------------------------------------------------------

def _case():
    y = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]], float)
    s = np.array([[0.9, 0.2, 0.1], [0.8, 0.7, 0.3], [0.3, 0.6, 0.2], [0.2, 0.1, 0.6],
                  [0.4, 0.4, 0.1], [0.6, 0.9, 0.2], [0.7, 0.3, 0.1], [0.1, 0.5, 0.4]])
    return y, s


def test_per_label_auroc_values_ci_and_single_class_note():
    y, s = _case()
    tab = A.per_label_auroc(y, s, ["A", "B", "C"], n_bootstrap=300, seed=1).set_index("label")
    assert tab.loc["A", "auroc"] == pytest.approx(A.auroc(y[:, 0], s[:, 0]))
    assert tab.loc["A", "ci_low"] <= tab.loc["A", "auroc"] <= tab.loc["A", "ci_high"]
    assert (tab.loc["A", "n_pos"], tab.loc["A", "n_neg"]) == (4, 4)
    # C has no positive: reported with a note, not skipped
    assert math.isnan(tab.loc["C", "auroc"]) and tab.loc["C", "note"] == "only negatives in the test set"
    macro = tab.loc["macro"]
    assert macro["auroc"] == pytest.approx((tab.loc["A", "auroc"] + tab.loc["B", "auroc"]) / 2)
    assert "left out (single class): C" in macro["note"]
    assert macro["ci_low"] <= macro["auroc"] <= macro["ci_high"]
    # accuracy at 0.5: A predicts [1,1,0,0,0,1,1,0] vs truth [1,1,0,0,1,0,1,0] -> 6/8; F1 = 2·3/(2·3+1+1)
    assert tab.loc["A", "accuracy"] == pytest.approx(6 / 8)
    assert tab.loc["A", "f1"] == pytest.approx(6 / 8)
    # the macro row's accuracy is the authors' flattened accuracy
    assert macro["accuracy"] == pytest.approx(((s >= 0.5) == (y == 1)).mean())


def test_only_positives_note_and_label_lists():
    labels = [["A"], ["A", "B"], ["A"], ["A", "B"]]
    tab = A.per_label_auroc(labels, np.array([[0.1, 0.2], [0.2, 0.9], [0.3, 0.1], [0.4, 0.8]]), ["A", "B"],
                            n_bootstrap=0)
    assert tab.set_index("label").loc["A", "note"] == "only positives in the test set"
    assert tab.set_index("label").loc["B", "auroc"] == 1.0
    assert np.isnan(tab["ci_low"]).all()  # n_bootstrap=0: no CI


def test_stratified_bootstrap_keeps_a_rare_label_iid_cannot():
    rng = np.random.default_rng(0)
    y = np.zeros((150, 1))
    y[:2] = 1  # 2 positives: (1 − 2/150)^150 ≈ 13 % of iid resamples have none (> 10 % allowed)
    s = rng.uniform(size=(150, 1)) + y * 0.5
    strat = A.per_label_auroc(y, s, ["rare"], n_bootstrap=300, seed=0).iloc[0]
    assert np.isfinite(strat["ci_low"]) and "understates" in strat["note"]
    iid = A.per_label_auroc(y, s, ["rare"], n_bootstrap=300, seed=0, stratify=False).iloc[0]
    assert math.isnan(iid["ci_low"]) and "CI not computed" in iid["note"]


def test_bootstrap_is_seeded():
    y, s = _case()
    a = A.per_label_auroc(y, s, ["A", "B", "C"], n_bootstrap=200, seed=5)
    b = A.per_label_auroc(y, s, ["A", "B", "C"], n_bootstrap=200, seed=5)
    pd.testing.assert_frame_equal(a, b)


def test_threshold_metrics_hand_computed():
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    s = np.array([[0.9, 0.2], [0.6, 0.7], [0.4, 0.8], [0.1, 0.6]])
    m = A.threshold_metrics(y, s)
    # pred [[1,0],[1,1],[0,1],[0,1]]: label 0 TP1 FP1 FN1, label 1 TP2 FP1 FN0
    assert m["accuracy"] == pytest.approx(5 / 8)
    assert m["f1_micro"] == pytest.approx(2 * 3 / (2 * 3 + 2 + 1))
    assert m["f1_macro"] == pytest.approx((2 / 4 + 4 / 5) / 2)


def test_label_matrix_forms_and_errors():
    names = ["COVID-19", "ARDS"]
    assert I.label_matrix([["COVID-19", "ARDS"], [], ["SARS"], pd.NA], names).tolist() == [[1, 1], [0, 0], [0, 0],
                                                                                          [0, 0]]
    assert I.label_matrix(np.array([[1, -1], [np.nan, 1]]), names).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(DataFormatError, match="2 label names"):
        I.label_matrix(np.zeros((3, 3)), names)
    with pytest.raises(ParamsError, match="unique"):
        I.label_matrix([["a"]], ["a", "a"])


# --- paired differences, flags, Table 4 ----------------------------------------------------------

def test_paired_difference_obvious_gap_is_significant_and_identical_is_not():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, (120, 2)).astype(float)
    good = np.clip(0.7 * y + 0.3 * rng.uniform(size=y.shape), 0, 1)
    noise = rng.uniform(size=y.shape)
    d = A.paired_auroc_differences(y, {"real": good, "bad": noise, "same": good.copy()}, ["a", "b"],
                                   n_bootstrap=400, seed=0).set_index(["source", "label"])
    bad = d.loc[("bad", "a")]
    assert bad["diff"] < -0.3 and bad["diff_high"] < 0 and bad["pvalue"] < 0.01
    assert d.loc[("bad", "macro"), "pvalue"] < 0.01
    same = d.loc[("same", "a")]
    assert same["diff"] == 0 and same["pvalue"] == 1.0


def _per(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"label": list(values), "auroc": list(values.values())})


def test_table4_flags_rounding_tolerance_and_bh():
    per = {"real": _per({"A": 0.75, "B": 0.80}), "g1": _per({"A": 0.76, "B": 0.7901}),
           "g2": _per({"A": 0.74, "B": 0.60}), "g3": _per({"A": math.nan, "B": 0.803})}
    diffs = pd.DataFrame({"source": ["g1", "g1", "g2", "g2"], "label": ["A", "B", "A", "B"],
                          "diff": [0.01, -0.01, -0.01, -0.2], "diff_low": 0.0, "diff_high": 0.0,
                          "pvalue": [0.04, 0.5, 0.03, 0.01]})
    long = T.utility_flags(per, "real", differences=diffs).set_index(["source", "label"])
    assert long.loc[("g1", "A"), "ge_baseline"] and not long.loc[("g1", "A"), "within_tolerance"]
    assert long.loc[("g1", "B"), "within_tolerance"]  # 0.79 vs 0.80: within 0.01 (paper: underlined)
    assert long.loc[("g2", "A"), "within_tolerance"]
    assert not long.loc[("g2", "B"), "ge_baseline"] and not long.loc[("g2", "B"), "within_tolerance"]
    assert long.loc[("g3", "B"), "ge_baseline"]  # 0.803 rounds to 0.80: matches the baseline
    assert pd.isna(long.loc[("g3", "A"), "ge_baseline"]) and pd.isna(long.loc[("real", "A"), "ge_baseline"])
    # BH over the 4 p-values [0.04, 0.5, 0.03, 0.01]: adjusted [0.0533, 0.5, 0.0533, 0.04]
    assert long.loc[("g2", "B"), "p_adj"] == pytest.approx(0.04)
    assert long.loc[("g1", "A"), "p_adj"] == pytest.approx(0.16 / 3)
    assert long.loc[("g2", "B"), "significant"] and not long.loc[("g1", "A"), "significant"]
    marked = T.utility_table(per, "real", differences=diffs, marks=True)
    assert list(marked.index) == ["real", "g1", "g2", "g3"] and list(marked.columns) == ["A", "B"]
    assert marked.loc["g1", "A"] == "0.76+" and marked.loc["g1", "B"] == "0.79~"
    assert marked.loc["g2", "B"] == "0.60*" and marked.loc["g3", "A"] == "n/a" and marked.loc["real", "A"] == "0.75"
    num = T.utility_table(per, "real")
    assert num.loc["g2", "B"] == 0.60 and num.loc["real", "A"] == 0.75
    # the long table keeps its p-values: Table 4 rebuilt from it has the same marks
    pd.testing.assert_frame_equal(T.utility_table(long.reset_index(), "real", marks=True), marked)
    per_ci = {k: v.assign(ci_low=v["auroc"] - 0.1, ci_high=v["auroc"] + 0.05) for k, v in per.items()}
    with_ci = T.utility_table(per_ci, "real", differences=diffs, marks=True, ci=True)
    assert with_ci.loc["g2", "B"] == "0.60* [0.50, 0.65]" and with_ci.loc["real", "A"] == "0.75 [0.65, 0.80]"
    assert with_ci.loc["g3", "A"] == "n/a"
    with pytest.raises(ParamsError, match="ci=True needs marks=True"):
        T.utility_table(per_ci, "real", ci=True)


def test_table4_needs_the_baseline():
    with pytest.raises(ParamsError, match="baseline 'real'"):
        T.utility_table({"g1": _per({"A": 0.7})}, "real")
    with pytest.raises(ParamsError, match="empty"):
        T.utility_table({}, "real")


# --- the classifier --------------------------------------------------------------------------------

_squares = squares


TINY = {"epochs": 4, "lr": 3e-3, "batch_size": 16}


def test_classifier_learns_separable_images():
    x, y = _squares(96, 0)
    xt, yt = _squares(48, 1)
    clf = C.train_classifier(x, y, label_names=["square", "bar"], seed=0, **TINY)
    scores = C.predict_scores(clf, xt)
    assert scores.shape == (48, 2) and (scores >= 0).all() and (scores <= 1).all()
    tab = A.per_label_auroc(yt, scores, ["square", "bar"], n_bootstrap=0).set_index("label")
    assert tab.loc["square", "auroc"] > 0.9 and tab.loc["bar", "auroc"] > 0.9
    assert len(clf.history) == 4 and clf.n_val == 5 and 1 <= clf.best_epoch <= 4


def test_training_is_deterministic_for_a_seed():
    x, y = _squares(40, 2)
    kw = {"label_names": ["square", "bar"], "epochs": 2, "lr": 3e-3, "batch_size": 16}
    a = C.predict_scores(C.train_classifier(x, y, seed=7, **kw), x)
    b = C.predict_scores(C.train_classifier(x, y, seed=7, **kw), x)
    c = C.predict_scores(C.train_classifier(x, y, seed=8, **kw), x)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)


def test_augmentation_flips_or_keeps_each_image():
    import torch

    x = np.random.default_rng(0).uniform(size=(8, 6, 6)).astype(np.float32)
    pre = {"image_size": None, "mean": [0.0], "std": [1.0]}
    out = C._prepare(x, pre, True, 0.0, torch.Generator().manual_seed(0))[:, 0].numpy()
    flipped = [np.allclose(o, xi[:, ::-1], atol=1e-6) for o, xi in zip(out, x)]
    kept = [np.allclose(o, xi, atol=1e-6) for o, xi in zip(out, x)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    rot = C._prepare(x, pre, True, 10.0, torch.Generator().manual_seed(0))[:, 0].numpy()
    assert not np.allclose(rot, out)  # rotated: interpolated, corners filled with 0


def test_bad_inputs_raise_clear_errors():
    x, y = _squares(10, 0)
    with pytest.raises(DataFormatError, match="divide uint8"):
        C.train_classifier(x * 255, y, label_names=["a", "b"], epochs=1)
    with pytest.raises(DataFormatError, match="9 rows but there are 10 images"):
        C.train_classifier(x, y[:9], label_names=["a", "b"], epochs=1)
    with pytest.raises(ParamsError, match="architecture='vgg'"):
        C.train_classifier(x, y, label_names=["a", "b"], epochs=1, architecture="vgg")
    with pytest.raises(ParamsError, match="Unknown classifier setting"):
        U.run_utility({"real": (x, y)}, x, y, ["a", "b"], epoch=3)
    with pytest.raises(ParamsError, match="baseline 'real' is not in train_sets"):
        U.run_utility({"gen": (x, y)}, x, y, ["a", "b"], epochs=1)


def test_paper_resnet50_config_and_local_pretrained(tmp_path):
    import torch
    from transformers import ResNetConfig, ResNetForImageClassification

    big = C.build_classifier("resnet50", ["a", "b", "c"])
    assert big.config.depths == [3, 4, 6, 3] and big.config.layer_type == "bottleneck"
    assert big.config.hidden_sizes[-1] == 2048 and big.config.num_labels == 3
    assert big.config.radaudit_preprocessing["mean"] == [0.485, 0.456, 0.406]
    del big
    torch.manual_seed(0)  # a tiny random "ImageNet" checkpoint with a 10-class head, saved locally
    tiny = ResNetForImageClassification(ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16],
                                                     depths=[1, 1], layer_type="bottleneck", num_labels=10))
    tiny.save_pretrained(tmp_path / "ckpt")
    x, y = _squares(12, 3)
    clf = C.train_classifier(x, y, label_names=["a", "b"], architecture="resnet50", pretrained=str(tmp_path / "ckpt"),
                             image_size=24, epochs=1, lr=1e-12, val_fraction=0)
    conv = clf.model.resnet.embedder.embedder.convolution.weight
    assert torch.allclose(conv, tiny.resnet.embedder.embedder.convolution.weight, atol=1e-6)  # loaded (lr ~ 0)
    assert clf.model.config.num_labels == 2 and clf.model.config.id2label == {0: "a", 1: "b"}
    assert C.predict_scores(clf, x).shape == (12, 2)
    with pytest.raises(Exception, match="does not exist"):
        C.build_classifier("resnet50", ["a"], pretrained=str(tmp_path / "missing"))


def test_classifier_cache_reuses_and_invalidates(tmp_path):
    x, y = _squares(24, 4)
    kw = {"label_names": ["a", "b"], "cache_dir": tmp_path, "name": "gen x", "seed": 1, "epochs": 1}
    first = C.load_or_train_classifier(x, y, **kw)
    again = C.load_or_train_classifier(x, y, **kw)
    assert not first.from_cache and again.from_cache and again.folder == first.folder
    assert np.array_equal(C.predict_scores(first, x), C.predict_scores(again, x))
    assert again.history["train_loss"].tolist() == pytest.approx(first.history["train_loss"].tolist())
    other = C.load_or_train_classifier(x, y, **{**kw, "epochs": 2})
    assert other.folder != first.folder and not other.from_cache


def test_run_utility_end_to_end_tiny():
    x, y = _squares(64, 5)
    xt, yt = _squares(40, 6)
    noise = np.random.default_rng(0).uniform(size=x.shape).astype(np.float32)
    res = U.run_utility({"noise": (noise, y), "real": (x, y)}, xt, yt, ["square", "bar"], seed=0,
                        n_bootstrap=200, **TINY)
    long, table, roc = res
    assert list(table.index) == ["real", "noise"] and list(table.columns) == ["square", "bar", "macro"]
    assert table.loc["real", "macro"] > 0.9 > table.loc["noise", "macro"]
    row = long.set_index(["source", "label"]).loc[("noise", "macro")]
    assert row["diff"] < 0 and bool(row["significant"]) and not bool(row["ge_baseline"])
    assert set(roc["source"]) == {"real", "noise"} and set(roc["label"]) == {"square", "bar"}
    assert list(res.summary["source"]) == ["real", "noise"] and res.summary["n_val"].tolist() == [3, 3]


def test_run_utility_repeats_average_the_seeded_classifiers():
    x, y = _squares(24, 7)
    xt, yt = _squares(16, 8)
    kw = {"epochs": 1, "lr": 3e-3, "batch_size": 16}
    res = U.run_utility({"real": (x, y)}, xt, yt, ["square", "bar"], seed=3, n_bootstrap=0, n_repeats=2, **kw)
    seeds = res.summary.loc[0, "seeds"]
    assert seeds[0] == U.stable_seed(3, "utility", "real") and len(set(seeds)) == 2
    manual = np.mean([C.predict_scores(C.train_classifier(x, y, label_names=["square", "bar"], seed=s, **kw), xt)
                      for s in seeds], axis=0)
    np.testing.assert_allclose(res.scores["real"], manual)
    assert sorted(res.history["repeat"].unique()) == [0, 1]
    assert np.isfinite(res.summary.loc[0, "macro_auroc_single_sd"])
