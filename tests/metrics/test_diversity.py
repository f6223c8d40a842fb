"""Diversity metrics (radaudit.metrics.diversity) and ΔDIR (radaudit.metrics.dir), against hand-computed values.

Every expected number below is worked out in the comments from the definitions in the module
docstrings (paper 000 §3 following its reference [8], Guo et al. 2024; ΔDIR from paper 000 §3).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricInputError
from radaudit.metrics.diversity import (
    DIVERSITY_METRICS,
    _semantic_parts,
    diversity_table,
    normalize_report,
    self_bleu,
    self_bleu_per_report,
    semantic_diversity,
    template_diversity,
    type_token_ratio,
    unique_n,
    word_punct_tokens,
)
from radaudit.metrics.dir import DIRUndefinedError, default_tokens, delta_dir, disparity_ratio


class LookupEncoder:
    """A fake encoder: fixed 2-d vectors by (stripped) text, so cosines are known exactly."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.array([self.table[t.strip()] for t in texts], dtype=float)


# ---------------------------------------------------------------------------------------------
# template diversity


def test_template_diversity_four_reports_two_templates():
    # normalised: "no effusion." x2, "small effusion." x2 -> 2 distinct / 4 reports = 0.5
    reports = ["No effusion.", "no   effusion.", "Small effusion.", " small effusion.\n"]
    assert template_diversity(reports) == 0.5
    assert normalize_report("  No \n\t EFFUSION. ") == "no effusion."


def test_template_diversity_keeps_punctuation_and_counts_empty_reports():
    # "no effusion." vs "no effusion" differ (punctuation kept); "" is a template too -> 3/3
    assert template_diversity(["No effusion.", "No effusion", ""]) == 1.0
    # greedy-like collapse: 1 template in 5 reports -> 1/5
    assert template_diversity(["Normal chest."] * 5) == pytest.approx(0.2)


# ---------------------------------------------------------------------------------------------
# type-token ratio


def test_word_punct_tokens_follow_ref8():
    # WordPunct splits "3.5" into 3 . 5 and "cm)," into cm ),; punctuation-only tokens are dropped
    assert word_punct_tokens("Size 3.5 cm), STABLE.") == ["size", "3", "5", "cm", "stable"]


def test_ttr_is_corpus_level_not_mean_per_report():
    reports = ["No acute disease.", "Acute disease, mild."]
    # tokens: [no, acute, disease] + [acute, disease, mild] = 6; types {no, acute, disease, mild} = 4
    assert type_token_ratio(reports) == pytest.approx(4 / 6)
    # (a mean of per-report TTRs would be (3/3 + 3/3)/2 = 1.0)
    # bigrams: (no,acute) (acute,disease) | (acute,disease) (disease,mild): 3 distinct / 4
    assert type_token_ratio(reports, n=2) == pytest.approx(3 / 4)
    # trigrams: (no,acute,disease) | (acute,disease,mild): 2/2; unique-n = (4/6 + 3/4 + 1)/3
    assert type_token_ratio(reports, n=3) == 1.0
    assert unique_n(reports) == pytest.approx((4 / 6 + 3 / 4 + 1.0) / 3)


def test_ttr_token_sampling_and_undefined():
    reports = ["No acute disease.", "Acute disease, mild."]
    assert type_token_ratio(reports, max_tokens=100) == type_token_ratio(reports)  # cap above the total
    assert type_token_ratio(reports, max_tokens=1) == 1.0  # one token: 1 type / 1 token
    a = type_token_ratio(reports, max_tokens=3, seed=7)
    assert a == type_token_ratio(reports, max_tokens=3, seed=7)
    assert math.isnan(type_token_ratio(["", "...", "  "]))  # no tokens at all: undefined
    with pytest.raises(ParamsError):
        type_token_ratio(reports, max_tokens=0)


# ---------------------------------------------------------------------------------------------
# Self-BLEU


def test_self_bleu_identical_reports_is_one():
    reports = ["No acute cardiopulmonary process."] * 3
    # each hypothesis has identical references: every n-gram precision 1, BP 1 -> BLEU 1
    assert self_bleu(reports) == pytest.approx(1.0)
    table = diversity_table(reports, metrics=["one_minus_self_bleu"], n_bootstrap=50)
    assert table.loc[0, "estimate"] == pytest.approx(0.0, abs=1e-12)


def test_self_bleu_hand_computed_pair():
    reports = ["no acute cardiopulmonary process", "no acute cardiopulmonary disease"]
    # hyp 1 vs ref 2 (4 tokens each, BP = 1):
    #   p1 = 3/4 (no, acute, cardiopulmonary), p2 = 2/3, p3 = 1/2, p4 = 0/1 -> "exp" smoothing 1/(2*1)
    #   BLEU = (3/4 * 2/3 * 1/2 * 1/2) ** (1/4) = 0.125 ** 0.25 = 0.59460...; hyp 2 is symmetric
    expected = 0.125 ** 0.25
    np.testing.assert_allclose(self_bleu_per_report(reports), [expected, expected])
    assert 1 - self_bleu(reports) == pytest.approx(1 - expected)


def test_self_bleu_matches_sacrebleu_multi_reference_sentence_bleu():
    from sacrebleu.metrics import BLEU

    reports = [
        "Small left pleural effusion. No pneumothorax.",
        "No pneumothorax. No pneumothorax. Small left effusion.",   # repeated n-grams: clipping
        "Heart size is normal.",                                    # 5 tokens (13a splits the period)
        "Heart size is enlarged.",                                  # equal length: closest-length ties
        "Mild cardiomegaly with small bilateral effusions and no pneumothorax.",
        "Normal.",
        "",                                                          # empty: a reference, never a hypothesis
    ]
    ours = self_bleu_per_report(reports)
    bleu = BLEU(effective_order=True)
    for i, hyp in enumerate(reports):
        if not hyp:
            assert math.isnan(ours[i])
            continue
        others = [r for j, r in enumerate(reports) if j != i]
        assert ours[i] == pytest.approx(bleu.sentence_score(hyp, others).score / 100, abs=1e-12), i


def test_self_bleu_sampling_and_degenerate_corpora():
    reports = [f"finding number {k} is stable" for k in range(6)]
    vals = self_bleu_per_report(reports, max_reports=3, seed=1)
    assert np.count_nonzero(~np.isnan(vals)) == 3
    np.testing.assert_array_equal(np.isnan(vals), np.isnan(self_bleu_per_report(reports, max_reports=3, seed=1)))
    assert math.isnan(self_bleu(["only one report"]))  # no other report to be a reference
    # an empty hypothesis is left out: the two identical non-empty reports score 1
    assert self_bleu(["", "a b", "a b"]) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# semantic diversity


TABLE = {"A.": [1.0, 0.0], "B.": [0.0, 1.0], "A. B.": [1.0, 1.0], "C.": [3.0, 0.0]}


def test_semantic_diversity_hand_computed_with_fake_encoder():
    enc = LookupEncoder(TABLE)
    # identical texts: every pair cos = 1 -> (1 - 1)/2 = 0
    assert semantic_diversity(["A.", "A.", "C."], encoder=enc) == pytest.approx(0.0)  # C. is parallel to A.
    # two orthogonal reports: cos = 0 -> (1 - 0)/2 = 0.5; without rescaling 1 - 0 = 1
    assert semantic_diversity(["A.", "B."], encoder=enc, unit="report") == pytest.approx(0.5)
    assert semantic_diversity(["A.", "B."], encoder=enc, unit="report", rescale=False) == pytest.approx(1.0)
    # sentences A, B (from "A. B.") and A: 6 ordered pairs, cos 1 for (A, A) twice, 0 for the 4 others
    # mean cos = 2/6 -> SD = (1 - 1/3)/2 = 1/3
    assert semantic_diversity(["A. B.", "A."], encoder=enc) == pytest.approx(1 / 3)
    # whole reports instead: "A. B." = [1, 1] vs "A." -> cos = 1/sqrt(2); SD = (1 - 0.7071)/2
    assert semantic_diversity(["A. B.", "A."], encoder=enc, unit="report") == pytest.approx((1 - 2 ** -0.5) / 2)
    # each distinct text is embedded once
    enc.calls.clear()
    semantic_diversity(["A.", "A.", "A.", "B."], encoder=enc)
    assert sorted(enc.calls[0]) == ["A.", "B."]
    assert math.isnan(semantic_diversity(["A.", ""], encoder=enc))  # one sentence: no pair


def test_semantic_weighted_statistic_matches_brute_force_resample():
    # The bootstrap statistic for weights w (report i drawn w_i times): all ordered pairs of sentence
    # copies, except pairs across two copies of the same report. Check against an explicit expansion.
    rng = np.random.default_rng(0)
    vec = {t: rng.normal(size=3).tolist() for t in ["A.", "B.", "C.", "D.", "E."]}
    reports = ["A. B.", "C.", "D. E. A.", "B."]
    parts = _semantic_parts(reports, encoder=LookupEncoder(vec), unit="sentence", rescale=False,
                            max_items=None, seed=0)
    split = [["A.", "B."], ["C."], ["D.", "E.", "A."], ["B."]]
    unit = {t: np.array(v) / np.linalg.norm(v) for t, v in vec.items()}
    for w in ([1, 1, 1, 1], [2, 0, 1, 3], [0, 0, 2, 0], [3, 1, 0, 0]):
        items = [(i, c, k, s) for i, n in enumerate(w) for c in range(n) for k, s in enumerate(split[i])]
        dists = [1 - unit[a[3]] @ unit[b[3]] for a, b in itertools.permutations(items, 2)
                 if not (a[0] == b[0] and a[1] != b[1])]
        assert parts(np.array(w, dtype=float)) == pytest.approx(np.mean(dists)), w


def test_semantic_diversity_real_minilm():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from radaudit.models.encoders import TextEncoder

    enc = TextEncoder(device="cpu")
    same = semantic_diversity(["No acute cardiopulmonary process."] * 3, encoder=enc)
    assert same == pytest.approx(0.0, abs=1e-6)
    varied = semantic_diversity(["No acute cardiopulmonary process.", "Large right pneumothorax.",
                                 "Pacemaker leads in the right atrium and ventricle."], encoder=enc)
    assert 0.05 < varied < 1.0


# ---------------------------------------------------------------------------------------------
# the table


def test_diversity_table_layout_and_estimates():
    reports = ["A.", "A.", "B.", "A. B.", "C."]
    enc = LookupEncoder(TABLE)
    table = diversity_table(reports, seed=3, n_bootstrap=200, encoder=enc)
    assert list(table["metric"]) == list(DIVERSITY_METRICS)
    est = dict(zip(table["metric"], table["estimate"]))
    assert est["template_diversity"] == pytest.approx(template_diversity(reports))  # 4 distinct / 5
    assert est["ttr"] == pytest.approx(type_token_ratio(reports))
    assert est["one_minus_self_bleu"] == pytest.approx(1 - self_bleu(reports))
    assert est["semantic_diversity"] == pytest.approx(semantic_diversity(reports, encoder=LookupEncoder(TABLE)))
    assert (table["low"] <= table["estimate"] + 1e-12).all() and (table["estimate"] <= table["high"] + 1e-12).all()
    again = diversity_table(reports, seed=3, n_bootstrap=200, encoder=enc)
    pd.testing.assert_frame_equal(table, again)  # same seed, same table


def test_diversity_table_all_distinct_corpus_is_not_biased_by_resampling():
    # A naive bootstrap of "fraction unique" would centre near 0.63 (a resample of n distinct
    # reports holds ~63% distinct ones). Our weighted statistic keeps it at 1 in every resample.
    reports = [f"Finding {k} is stable." for k in range(12)]
    table = diversity_table(reports, metrics=["template_diversity"], n_bootstrap=100, method="percentile")
    row = table.iloc[0]
    assert (row["estimate"], row["low"], row["high"]) == (1.0, 1.0, 1.0)


def test_diversity_table_undefined_metrics_get_a_note():
    table = diversity_table(["", "  "], metrics=["template_diversity", "ttr", "one_minus_self_bleu"],
                            n_bootstrap=20, method="percentile")
    by = table.set_index("metric")
    assert by.loc["template_diversity", "estimate"] == 0.5  # "" twice -> 1 template / 2 reports
    assert math.isnan(by.loc["ttr", "estimate"]) and "no tokens" in by.loc["ttr", "note"]
    assert math.isnan(by.loc["one_minus_self_bleu", "low"]) and by.loc["one_minus_self_bleu", "note"]


def test_bad_inputs():
    with pytest.raises(MetricInputError, match="missing"):
        template_diversity(["ok", None])
    with pytest.raises(MetricInputError, match="empty"):
        type_token_ratio([])
    with pytest.raises(MetricInputError, match="single string"):
        self_bleu("one report")
    with pytest.raises(ParamsError):
        diversity_table(["a", "b"], metrics=["bleu"])
    with pytest.raises(ParamsError):
        semantic_diversity(["A."], encoder=LookupEncoder(TABLE), unit="word")


# ---------------------------------------------------------------------------------------------
# ΔDIR


def test_delta_dir_hand_computed():
    refs = ["a b c", "d e", "f g h"]
    preds = ["a", "d e", "f g h i"]
    sex = ["M", "M", "F"]
    split = str.split
    # reference: N_M = 3 + 2 = 5, N_F = 3 -> DIR = 5/3; prediction: N_M = 1 + 2 = 3, N_F = 4 -> 3/4
    res = delta_dir(refs, preds, sex, tokenize=split)
    assert res.dir_reference == pytest.approx(5 / 3)
    assert res.dir_prediction == pytest.approx(3 / 4)
    assert res.delta == pytest.approx(3 / 4 - 5 / 3)  # -0.91667: relatively fewer words for men
    # per report: ref (5/2)/(3/1) = 5/6, pred (3/2)/(4/1) = 3/8 -> delta = 3/8 - 5/6
    assert delta_dir(refs, preds, sex, tokenize=split, per_report=True).delta == pytest.approx(3 / 8 - 5 / 6)
    row = res.to_dict()
    assert (row["tokens_reference_M"], row["tokens_prediction_F"], row["reports_reference_M"]) == (5, 4, 2)


def test_dir_default_tokens_drop_stop_words_and_other_groups():
    assert default_tokens("There is no effusion.") == ["effusion"]  # there/is/no are NLTK stop words
    # M: "effusion" + "cardiomegaly" = 2 tokens; F: "edema" = 1; the "O" and missing rows count nowhere
    texts = ["There is no effusion.", "Cardiomegaly.", "Edema.", "Large mass.", "Nodule."]
    groups = ["M", "M", "F", "O", None]
    assert disparity_ratio(texts, groups) == pytest.approx(2.0)
    res = delta_dir(texts, texts, groups)
    assert res.delta == 0.0 and res.n_other == 2


def test_dir_zero_tokens_and_empty_groups():
    refs = ["effusion", "edema"]
    sex = ["M", "F"]
    # female predictions have no tokens -> DIR(pred) = 1/0: an error naming corpus and group
    with pytest.raises(DIRUndefinedError, match=r"'F'.*prediction"):
        delta_dir(refs, ["effusion", ""], sex)
    assert math.isnan(delta_dir(refs, ["effusion", ""], sex, on_zero="nan").delta)
    # male predictions empty: DIR(pred) = 0/1 = 0 is defined -> delta = 0 - 1 = -1
    assert delta_dir(refs, ["", "edema"], sex).delta == pytest.approx(-1.0)
    # no female report at all: undefined
    with pytest.raises(DIRUndefinedError, match="no reports"):
        delta_dir(["a", "b"], ["a", "b"], ["M", "M"], tokenize=str.split)
    with pytest.raises(MetricInputError):
        delta_dir(["a"], ["a", "b"], ["M"])
    with pytest.raises(ParamsError):
        disparity_ratio(["a"], ["M"], numerator="M", denominator="M")
