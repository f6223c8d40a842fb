"""Report-generation utility (CheXGenBench §2.4, Table 5): retrieval, report files, metrics with paired CIs, Table 5.

Hand-computed values: BLEU-1 on a 2-pair toy, label-phrase micro/macro F1 on 4 demo-style captions, the
CheXpert-label F1s on the IU X-ray / ReXrank reports of ``tests/metrics/test_clinical.py`` (labels re-derived
there); BLEU equals sacreBLEU's corpus score (and the project's ``bleu1``/``bleu4``) on full sets and on
explicit resamples.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from sacrebleu.metrics import BLEU

from radaudit.audits.synthetic_cxr import reports as R
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.metrics import build_metric
from radaudit.metrics.base import MetricInputError, MetricUnavailableError

LABELS = ["COVID-19", "Other pneumonia", "ARDS", "No Finding"]

# Real reports (tests/metrics/test_clinical.py): IU X-ray impressions and a ReXrank CheXpert Plus impression.
A = "Left lower lobe atelectasis otherwise no acute cardiopulmonary disease."
B = "Cardiomegaly and pulmonary vascular congestion."
C = "1. Findings consistent with mild congestive heart failure."
D = "1. Small left pleural effusion."
E = ("1.STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.\n \n2.UNCHANGED CARDIOMEGALY.\n \n"
     "3.NO NEW CONSOLIDATION.")
REPORT_REFS = [A, C, E, "No acute cardiopulmonary abnormality. Heart size is normal.",
               "Small bilateral pleural effusions with bibasilar atelectasis.", D]
REPORT_CANDS = [B, D, B, "No acute cardiopulmonary process. The heart is normal in size.",
                "Small left pleural effusion. No pneumothorax.", ""]


def _long(refs, cands, **kw):
    kw.setdefault("n_bootstrap", 200)
    return R.report_utility_long(refs, cands, **kw)


def _est(long, source, metric, col="estimate"):
    row = long[(long["source"] == source) & (long["metric"] == metric)]
    assert len(row) == 1
    return row[col].iloc[0]


# --- BLEU ------------------------------------------------------------------------------------------

def test_bleu1_hand_computed_two_sentence_toy():
    # unigram matches: "the cat" 2/2, "a big dog" 2/3 ("big" unmatched) -> p1 = 4/5
    # lengths C = 2 + 3 = 5 < R = 3 + 3 = 6 -> BP = exp(1 - 6/5)
    refs, cands = ["the cat sat", "a dog ran"], ["the cat", "a big dog"]
    long = _long(refs, {"real": cands}, metrics=["bleu1"])
    assert _est(long, "real", "bleu1") == pytest.approx(0.8 * math.exp(-0.2), abs=1e-12)


@pytest.mark.parametrize("cands", [REPORT_CANDS, [r[: len(r) // 2] for r in REPORT_REFS],  # truncated: BP < 1
                                   ["No acute disease."] * 6])  # no 4-gram match: "exp" smoothing
def test_bleu_equals_sacrebleu_corpus_score_and_project_metric(cands):
    long = _long(REPORT_REFS, {"real": cands}, metrics=["bleu1", "bleu4"])
    for n in (1, 4):
        sacre = BLEU(max_ngram_order=n).corpus_score(cands, [REPORT_REFS]).score / 100
        ours = _est(long, "real", f"bleu{n}")
        assert ours == pytest.approx(sacre, abs=1e-9)
        assert ours == pytest.approx(build_metric(f"bleu{n}").compute(REPORT_REFS, cands).score, abs=1e-9)


def test_bleu_replicates_equal_sacrebleu_on_the_resampled_corpus():
    # a replicate = BLEU of count-weighted per-report statistics = sacreBLEU on the corpus with reports repeated
    stats = R._bleu_stats(REPORT_REFS, {"s": REPORT_CANDS})["s"]
    rng = np.random.default_rng(5)
    for _ in range(5):
        w = np.bincount(rng.integers(0, 6, 6), minlength=6).astype(float)
        idx = np.repeat(np.arange(6), w.astype(int))
        refs, cands = [REPORT_REFS[i] for i in idx], [REPORT_CANDS[i] for i in idx]
        for n in (1, 4):
            got = R._bleu_from_stats((w @ stats)[None, :], n)[0]
            assert got == pytest.approx(BLEU(max_ngram_order=n).corpus_score(cands, [refs]).score / 100, abs=1e-9)
    # edge cases of the vectorised formula: all candidates empty (BP = 0), and fewer than 4 hypothesis tokens
    empty = R._bleu_stats(["a b c d e"], {"s": [""]})["s"]
    assert R._bleu_from_stats(empty, 1)[0] == 0.0
    short = R._bleu_stats(["a b c d e"], {"s": ["a b c"]})["s"]
    sacre4 = BLEU(max_ngram_order=4).corpus_score(["a b c"], [["a b c d e"]]).score / 100
    assert R._bleu_from_stats(short, 4)[0] == sacre4 == 0.0  # no 4-gram in the hypothesis: BLEU-4 = 0
    assert R._bleu_from_stats(short, 1)[0] == pytest.approx(math.exp(1 - 5 / 3), abs=1e-12)


def test_rougeL_is_the_mean_of_the_project_metric_and_ci_brackets_it():
    long = _long(REPORT_REFS, {"real": REPORT_CANDS}, metrics=["rougeL"])
    expected = build_metric("rougeL").compute(REPORT_REFS, REPORT_CANDS).score
    row = long.iloc[0]
    assert row["estimate"] == pytest.approx(expected, abs=1e-12)
    assert row["low"] <= row["estimate"] <= row["high"] and row["high"] > row["low"]
    assert row["n"] == 6 and row["n_empty"] == 1 and "1 of 6 generated reports are empty" in row["note"]


# --- label F1 ----------------------------------------------------------------------------------------

def test_label_phrase_f1_hand_computed():
    refs = ["PA chest X-ray: COVID-19", "AP chest X-ray: COVID-19, ARDS", "PA chest X-ray: No Finding",
            "PA chest X-ray: Other pneumonia"]
    cands = ["PA chest X-ray: COVID-19", "AP chest X-ray: COVID-19", "PA chest X-ray: covid-19",
             "PA chest X-ray: Other  pneumonia, ARDS"]
    # per label (TP, FP, FN): COVID-19 (2, 1, 0) -> 4/5; Other pneumonia (1, 0, 0) -> 1; ARDS (0, 1, 1) -> 0;
    # No Finding (0, 0, 1) -> 0.   micro: 2·3 / (2·3 + 2 + 2) = 0.6; macro: (0.8 + 1 + 0 + 0) / 4 = 0.45
    long = _long(refs, {"real": cands}, label_mode="labels", label_names=LABELS, metrics=["f1"])
    assert list(long["metric"]) == ["f1_micro", "f1_macro"]
    assert _est(long, "real", "f1_micro") == pytest.approx(0.6)
    assert _est(long, "real", "f1_macro") == pytest.approx(0.45)


def test_label_phrases_match_whole_phrases_case_insensitively():
    pats = R._phrase_patterns(["ARDS", "COVID-19", "No Finding"])
    got = R._phrase_matrix(["CARDS; covid-190", "ards, Covid-19", "no\nfinding", "No Findings"], pats)
    assert got.tolist() == [[False, False, False], [True, True, False], [False, False, True],
                            [False, False, False]]


def test_chexpert_f1_hand_computed_and_equal_to_the_project_metrics(shared_data):
    # tests/metrics/test_clinical.py: micro (top5 and all14) 4/11, macro top5 0.2, macro all14 1/14
    refs, cands = [A, C, E], [B, D, B]
    long = _long(refs, {"real": cands, "self": refs}, data_root=shared_data)
    assert list(long["metric"].iloc[:7]) == ["bleu1", "bleu4", "rougeL", "f1_micro_5", "f1_macro_5", "f1_micro_14",
                                             "f1_macro_14"]
    expected = {"f1_micro_5": 4 / 11, "f1_macro_5": 0.2, "f1_micro_14": 4 / 11, "f1_macro_14": 1 / 14}
    for m, v in expected.items():
        assert _est(long, "real", m) == pytest.approx(v)
    # the same as the project's metrics on a larger set with an empty candidate, for every source
    cands2 = {"real": REPORT_CANDS, "self": REPORT_REFS}
    long2 = _long(REPORT_REFS, cands2, data_root=shared_data)
    for src, c in cands2.items():
        for avg in ("micro", "macro"):
            for k, ls in (("5", "top5"), ("14", "all14")):
                score = build_metric(f"chexpert_f1_{avg}_{ls}", data_root=shared_data).compute(REPORT_REFS, c).score
                assert _est(long2, src, f"f1_{avg}_{k}") == pytest.approx(score, abs=1e-12)
    # the per-label counts sum to the metric's per-pair tp/fp/fn
    counts = R._chexpert_counts(REPORT_REFS, {"real": REPORT_CANDS}, shared_data)["real"]["14"]
    det = build_metric("chexpert_f1_micro_all14", data_root=shared_data).compute(REPORT_REFS, REPORT_CANDS).details
    for arr, key in zip(counts, ("tp", "fp", "fn"), strict=True):
        np.testing.assert_array_equal(arr.sum(1), det[key])


# --- RadGraph offline ----------------------------------------------------------------------------------

def test_radgraph_offline_gives_nan_rows_with_a_note():
    with pytest.raises(MetricUnavailableError) as err:  # the real error of this (offline) environment
        build_metric("radgraph_f1").compute(["a"], ["a"])
    long = _long(REPORT_REFS, {"real": REPORT_CANDS, "g": REPORT_REFS}, metrics=["bleu1", "radgraph_f1"])
    rg = long[long["metric"] == "radgraph_f1"]
    assert len(rg) == 2 and rg[["estimate", "low", "high", "diff", "p_value", "p_bh"]].isna().all().all()
    assert all(str(err.value) in n and "pip install 'radaudit[radgraph]'" in n for n in rg["note"])
    assert np.isfinite(_est(long, "g", "bleu1", "p_bh"))  # the other metrics are still tested and corrected
    table = R.table5(long)
    assert list(table.columns) == ["BLEU-1", "F1-RadGraph"] and (table["F1-RadGraph"] == "n/a").all()


# --- bootstrap, pairing, BH -----------------------------------------------------------------------------

def test_identical_source_has_zero_difference_and_p_one():
    long = _long(REPORT_REFS, {"real": REPORT_CANDS, "twin": list(REPORT_CANDS)}, metrics=["bleu4", "rougeL"])
    twin = long[long["source"] == "twin"]
    assert (twin["diff"] == 0).all() and (twin["diff_low"] == 0).all() and (twin["diff_high"] == 0).all()
    assert (twin["p_value"] == 1).all() and (twin["p_bh"] == 1).all()
    base = long[long["source"] == "real"]
    assert base[["diff", "diff_low", "diff_high", "p_value", "p_bh"]].isna().all().all()


def test_stratified_resampling_keeps_rare_labels_for_the_macro_ci():
    rng = np.random.default_rng(0)
    refs = [f"PA chest X-ray: {x}" for x in rng.choice(["COVID-19", "Other pneumonia", "No Finding"], 60)]
    refs[0] = "PA chest X-ray: ARDS"  # 1 ARDS case: iid resampling loses it in (1 - 1/60)^60 = 36 % of resamples
    cands = {"real": refs[::-1], "copy": list(refs)}
    iid = _long(refs, cands, label_mode="labels", label_names=LABELS, stratify=False, n_bootstrap=400)
    row = iid[(iid["source"] == "copy") & (iid["metric"] == "f1_macro")].iloc[0]
    assert math.isnan(row["low"]) and "lost every reference positive of a label" in row["note"]
    strat = _long(refs, cands, label_mode="labels", label_names=LABELS, n_bootstrap=400)  # default: stratified
    assert strat.attrs["stratify"] is True
    row = strat[(strat["source"] == "copy") & (strat["metric"] == "f1_macro")].iloc[0]
    assert (row["estimate"], row["low"], row["high"]) == (1.0, 1.0, 1.0) and row["note"] == ""


def test_bootstrap_is_fast_for_six_sources():
    rng = np.random.default_rng(1)
    vocab = ["no", "acute", "process", "small", "left", "right", "pleural", "effusion", "mild", "cardiomegaly",
             "edema", "atelectasis"]
    refs = [" ".join(rng.choice(vocab, 12)) + "." for _ in range(500)]
    cands = {s: [" ".join(rng.choice(vocab, 10)) + "." for _ in range(500)] for s in ["real", *"abcde"]}
    labels = ["effusion", "cardiomegaly", "edema", "atelectasis"]
    _long(refs[:5], {k: v[:5] for k, v in cands.items()}, label_mode="labels", label_names=labels)  # warm imports
    t0 = time.perf_counter()
    long = R.report_utility_long(refs, cands, label_mode="labels", label_names=labels, n_bootstrap=1000)
    assert time.perf_counter() - t0 < 3.0  # metrics on 3000 pairs + 1000 resamples x 6 sources x 5 metrics
    assert len(long) == 30 and long["low"].notna().all()  # 6 sources x (BLEU-1, BLEU-4, ROUGE-L, micro/macro F1)


# --- end to end: retrieval -> scores -> Table 5 ---------------------------------------------------------

def _retrieval_setup():
    rng = np.random.default_rng(3)
    n, d = 40, 8
    texts = [f"PA chest X-ray: {x}" for x in rng.choice(["COVID-19", "Other pneumonia", "ARDS", "No Finding"], n)]
    test_f = rng.normal(size=(n, d))
    perm = rng.permutation(n)
    train = {"real": (test_f + 0.3 * rng.normal(size=(n, d)), texts),  # near copies: mostly right
             "copy": (test_f[perm], [texts[i] for i in perm]),  # perfect copies (other order) with their texts
             "shuffled": (test_f, [texts[i] for i in perm])}  # right images, texts of other images
    return test_f, texts, train


def test_end_to_end_perfect_copies_beat_a_shuffled_source():
    test_f, refs, train = _retrieval_setup()
    cands = {src: R.retrieval_reports(f, t, test_f) for src, (f, t) in train.items()}
    assert cands["copy"] == refs
    long = R.report_utility_long(refs, cands, label_mode="labels", label_names=LABELS, n_bootstrap=300)
    for m in ("bleu1", "bleu4", "rougeL", "f1_micro", "f1_macro"):
        assert _est(long, "copy", m) == pytest.approx(1.0)
        assert _est(long, "shuffled", m) < 1.0
    assert _est(long, "shuffled", "f1_micro", "p_bh") < 0.05 and _est(long, "shuffled", "f1_micro", "diff") < 0
    table = R.table5(long)
    assert list(table.index) == ["real", "copy", "shuffled"]
    assert list(table.columns) == ["BLEU-1", "BLEU-4", "ROUGE-L", "Micro F1", "Macro F1"]
    assert table.loc["copy", "BLEU-1"].startswith("1.000 [1.000, 1.000]")


def test_same_seed_same_table_other_seed_other_intervals():
    test_f, refs, train = _retrieval_setup()
    cands = {src: R.retrieval_reports(f, t, test_f) for src, (f, t) in train.items()}
    kw = {"label_mode": "labels", "label_names": LABELS, "n_bootstrap": 200}
    a, b = R.report_utility_long(refs, cands, seed=7, **kw), R.report_utility_long(refs, cands, seed=7, **kw)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(R.table5(a), R.table5(b))
    c = R.report_utility_long(refs, cands, seed=8, **kw)
    assert np.array_equal(a["estimate"], c["estimate"]) and not a["low"].equals(c["low"])


# --- retrieval ---------------------------------------------------------------------------------------

def test_retrieval_cosine_nearest_ties_lowest_index_and_blocks():
    train = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # rows 0 and 1: same direction (tie)
    query = np.array([[3.0, 0.1], [0.0, 5.0], [1.0, 0.9], [5.0, 0.0]])
    assert R.retrieval_reports(train, ["a", "b", "c", "d"], query) == ["a", "c", "d", "a"]
    rng = np.random.default_rng(0)
    tr, q = rng.normal(size=(50, 4)), rng.normal(size=(30, 4))
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (tr / np.linalg.norm(tr, axis=1, keepdims=True)).T
    np.testing.assert_array_equal(R.nearest_train_index(tr, q, block=60), cos.argmax(1))  # 1 query per block


def test_retrieval_errors():
    f = np.ones((3, 2))
    with pytest.raises(ParamsError, match="only k=1"):
        R.retrieval_reports(f, ["a", "b", "c"], f, k=3)
    with pytest.raises(DataFormatError, match="2 train_texts but 3"):
        R.retrieval_reports(f, ["a", "b"], f)
    with pytest.raises(DataFormatError, match="same encoder"):
        R.retrieval_reports(f, ["a", "b", "c"], np.ones((2, 3)))
    with pytest.raises(DataFormatError, match="zero vectors"):
        R.retrieval_reports(np.array([[1.0, 0], [0, 0]]), ["a", "b"], f)
    with pytest.raises(DataFormatError, match="not strings"):
        R.retrieval_reports(f, ["a", None, "c"], f)


# --- reports from a file ---------------------------------------------------------------------------------

def test_read_generated_reports_keeps_and_counts_empty_reports(tmp_path):
    p = tmp_path / "sana.csv"
    pd.DataFrame({"study_id": ["00123", "s2", "s3", "s4", "extra"],
                  "report": ["No acute process.", "", None, "Small effusion.", "x"],
                  "model": "llava-rad"}).to_csv(p, index=False)
    got = R.read_generated_reports(p, ["s4", "00123", "s2", "s3"])
    assert got.reports == ["Small effusion.", "No acute process.", "", ""]
    assert (got.n_empty, got.n_extra) == (2, 1)
    assert "2 of 4 reports are empty" in got.note and "1 rows for other studies ignored" in got.note


def test_read_generated_reports_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="columns 'study_id' and 'report'"):
        R.read_generated_reports(tmp_path / "missing.csv", ["s1"])
    p = tmp_path / "r.csv"
    pd.DataFrame({"study": ["s1"], "text": ["a"]}).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match=r"no column\(s\) \['study_id', 'report'\]"):
        R.read_generated_reports(p, ["s1"])
    pd.DataFrame({"study_id": ["s1", "s1", "s2"], "report": ["a", "b", "c"]}).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match="more than once: 's1'"):
        R.read_generated_reports(p, ["s1", "s2"])
    pd.DataFrame({"study_id": ["s1"], "report": ["a"]}).to_csv(p, index=False)
    with pytest.raises(DataFormatError, match=r"no report for 7 of 8 test studies: 's2', 's3', 's4', 's5', 's6', \.\."):
        R.read_generated_reports(p, [f"s{i}" for i in range(1, 9)])


# --- input validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    ({"metrics": ["bleu2"]}, ParamsError, "allowed: bleu1, bleu4, rougeL, radgraph_f1, f1"),
    ({"metrics": ["f1_micro"]}, ParamsError, "Unknown metric 'f1_micro' for label_mode='chexpert'"),
    ({"baseline": "original"}, ParamsError, "baseline 'original' is not among the sources"),
    ({"n_bootstrap": 0}, ParamsError, "positive integer"),
    ({"n_bootstrap": True}, ParamsError, "positive integer"),
    ({"confidence": 95}, ParamsError, "confidence must lie in"),
    ({"label_mode": "chexbert"}, ParamsError, "use one of chexpert, labels"),
    ({"label_mode": "labels"}, ParamsError, "needs label_names"),
    ({"label_names": LABELS}, ParamsError, "only used with label_mode='labels'"),
    ({"metrics": ["bleu1"], "stratify": True}, ParamsError, "needs a label F1 metric"),
])
def test_parameter_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        R.report_utility_long(["a b"], {"real": ["a b"]}, **kwargs)


def test_data_errors():
    with pytest.raises(DataFormatError, match="2 references but 1 candidates for 'real'"):
        R.report_utility_long(["a", "b"], {"real": ["a"]}, metrics=["bleu1"])
    with pytest.raises(MetricInputError, match="use '' for a report that is genuinely empty"):
        R.report_utility_long(["a", "b"], {"real": ["a", None]}, metrics=["bleu1"])
    with pytest.raises(DataFormatError, match=r"references \[1\] are empty"):
        R.report_utility_long(["a", " "], {"real": ["a", "b"]}, metrics=["bleu1"])
    with pytest.raises(ParamsError, match="non-empty mapping"):
        R.report_utility_long(["a"], {}, metrics=["bleu1"])


# --- Table 5 -----------------------------------------------------------------------------------------

def test_table5_layout_cells_and_marks():
    rows = []
    for src, est, p in (("gen", 0.5, 0.01), ("real", 0.6, math.nan), ("gen2", 0.55, 0.2)):
        for m in ("f1_micro_14", "bleu1", "f1_micro_5"):
            rows.append({"source": src, "metric": m, "estimate": est, "low": est - 0.05, "high": est + 0.0512,
                         "p_bh": p})
    long = pd.DataFrame(rows)
    long.attrs["baseline"] = "real"
    t = R.table5(long, decimals=2)
    assert list(t.index) == ["real", "gen", "gen2"]
    assert list(t.columns) == ["BLEU-1", "Micro F1-5", "Micro F1-14"]
    assert t.loc["real", "BLEU-1"] == "0.60 [0.55, 0.65]"
    assert t.loc["gen", "Micro F1-5"] == "0.50 [0.45, 0.55]*" and t.loc["gen2", "BLEU-1"] == "0.55 [0.50, 0.60]"
    assert "Benjamini-Hochberg" in t.attrs["legend"]
    with pytest.raises(ParamsError, match="baseline 'x'"):
        R.table5(long, baseline="x")
    with pytest.raises(DataFormatError, match="p_bh"):
        R.table5(long.drop(columns="p_bh"))


def test_table5_plot_reuses_the_fidelity_bar_figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from radaudit.audits.synthetic_cxr.plots import plot_fidelity_bars

    long = _long(REPORT_REFS, {"real": REPORT_CANDS, "g": REPORT_REFS}, metrics=["rougeL", "bleu1", "radgraph_f1"])
    frame = R.bars_frame(long)
    assert list(pd.unique(frame["metric"])) == ["BLEU-1", "ROUGE-L", "F1-RadGraph"]
    fig = plot_fidelity_bars(frame, first="real", title="Report generation on the real test set (Table 5)")
    assert [ax.get_title() for ax in fig.axes] == ["BLEU-1", "ROUGE-L", "F1-RadGraph"]
    assert fig._suptitle.get_text().endswith("(Table 5)")
    assert "n/a" in [t.get_text() for t in fig.axes[2].texts]  # RadGraph offline: drawn as n/a, not dropped
    # each CI whisker is drawn twice: a white halo under the dark line (visible on the black baseline bar)
    colors = [c.get_color() for c in fig.axes[0].collections if hasattr(c, "get_color")]
    assert any(np.allclose(np.ravel(c)[:3], 1.0) for c in colors)
    plt.close(fig)
