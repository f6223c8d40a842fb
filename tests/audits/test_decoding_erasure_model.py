"""The decoding study's demo report model: corpus, tiny training run, reuse, generation."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from radaudit.audits.decoding_erasure import models as dem
from radaudit.audits.decoding_erasure.models import (
    CONFIG_FILE,
    DEMO_CONFIG,
    PAPER_SKEWS,
    build_training_corpus,
    config_hash,
    demo_model_path,
    generate_reports,
    train_report_model,
)
from radaudit.errors import ParamsError

TINY = {"steps": 30, "n_layer": 1, "d_model": 32, "n_head": 2, "vocab_size": 300, "max_length": 64,
        "batch_size": 16, "lr": 3e-3, "max_seconds": 60.0}


@pytest.fixture(scope="module")
def corpora(shared_data):
    return {skew: build_training_corpus(shared_data, skew=skew, seed=0) for skew in (None, *PAPER_SKEWS)}


@pytest.fixture(scope="module")
def tiny_corpus(corpora):
    c = corpora[0.5]
    train = c[c["split"] == "train"].iloc[:120]
    test = c[c["split"] == "test"].iloc[:20]
    out = pd.concat([train, test], ignore_index=True)
    out.attrs.update(c.attrs)
    return out


@pytest.fixture(scope="module")
def tiny_model(tiny_corpus, tmp_path_factory):
    folder = tmp_path_factory.mktemp("report_lm") / "model"
    return train_report_model(tiny_corpus, folder, seed=0, **TINY)


@pytest.mark.long
def test_corpus_from_real_data(corpora):
    for skew, c in corpora.items():
        assert list(c.columns[:4]) == ["prompt", "target", "sex", "split"]
        assert set(c["sex"]) == {"F", "M", "U"}
        assert set(c["split"]) == {"train", "test"}
        assert (c["target"].str.len() > 0).all()
        assert not c["target"].str.contains(r"\s{2,}|\n").any()
        assert set(c["source"]) == {"iu_xray", "chexpert_plus_valid"}
        word = c["sex"].map({"F": "Sex: female.", "M": "Sex: male.", "U": "Sex: not given."})
        assert all(w in p for w, p in zip(word, c["prompt"]))
        assert c["prompt"].str.match(r"^Indication: .+\. Sex: (female|male|not given)\. Report:$").all()
        test = c[c["split"] == "test"]
        assert test["sex"].value_counts().to_dict() == {"F": 50, "M": 50}  # the test split is sex-labelled only
        # every report without a recorded sex is a training row, the same rows for every skew
        assert (c.loc[c["sex"] == "U", "split"] == "train").all() and (c["sex"] == "U").sum() > 2500
    labelled = corpora[None][(corpora[None]["split"] == "train") & (corpora[None]["sex"] != "U")]
    assert len(labelled) > 1000  # every report with a stated sex
    # the held-out split is the same for every skew (same seed)
    tests = [c.loc[c["split"] == "test", ["prompt", "target"]].reset_index(drop=True) for c in corpora.values()]
    for t in tests[1:]:
        pd.testing.assert_frame_equal(t, tests[0])
    # no held-out report is in a training set
    for c in corpora.values():
        assert not set(c.loc[c["split"] == "train", "study_id"] + c.loc[c["split"] == "train", "source"]) & \
            set(c.loc[c["split"] == "test", "study_id"] + c.loc[c["split"] == "test", "source"])


def test_skew_shares_and_equal_size(corpora):
    sizes = set()
    for skew in PAPER_SKEWS:
        train = corpora[skew][(corpora[skew]["split"] == "train") & (corpora[skew]["sex"] != "U")]
        n_m = int((train["sex"] == "M").sum())
        assert abs(n_m - skew * len(train)) <= 1
        sizes.add(len(train))
    assert len(sizes) == 1 and sizes.pop() > 500


@pytest.mark.long
def test_corpus_seed_and_max_reports(shared_data, corpora):
    again = build_training_corpus(shared_data, skew=0.67, seed=0)
    pd.testing.assert_frame_equal(again, corpora[0.67])
    other = build_training_corpus(shared_data, skew=0.67, seed=1)
    assert not other["target"].reset_index(drop=True).equals(again["target"].reset_index(drop=True))
    capped = build_training_corpus(shared_data, skew=0.33, seed=0, max_reports=100, unlabelled=False)
    train = capped[capped["split"] == "train"]
    assert len(train) == 100 and int((train["sex"] == "M").sum()) == 33 and set(train["sex"]) == {"F", "M"}
    # without the unlabelled rows the sex-labelled rows and the test split are exactly the same
    full = corpora[0.33]
    pd.testing.assert_frame_equal(build_training_corpus(shared_data, skew=0.33, seed=0, unlabelled=False),
                                  full[full["sex"] != "U"].reset_index(drop=True), check_like=False)
    for bad in (0.0, 1.0, 1.5, "half", True):
        with pytest.raises(ParamsError, match="skew"):
            build_training_corpus(shared_data, skew=bad)


def test_tiny_training_saves_reloads_and_learns(tiny_model, tiny_corpus):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    files = {p.name for p in tiny_model.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md", "training_log.json",
            "loss_curve.png", CONFIG_FILE} <= files
    meta = json.loads((tiny_model / CONFIG_FILE).read_text())
    assert meta["config_hash"] == config_hash(tiny_corpus, seed=0, **TINY)
    assert meta["steps_done"] == 30 and set(meta["metrics"]) == {"train_loss", "heldout_loss"}
    card = (tiny_model / "README.md").read_text()
    assert "Sex: female|male" in card and "heldout_loss" in card

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert model.config.num_hidden_layers == 1 and model.config.hidden_size == 32
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<s>", "</s>", "<pad>")
    ids = tok("Sex: male. Report:")["input_ids"]
    assert ids[0] == tok.bos_token_id
    assert tok.convert_ids_to_tokens(ids) == ["<s>", "▁sex", ":", "▁male", ".", "▁report", ":"]  # one token per word
    assert tok.decode(ids, skip_special_tokens=True) == "sex: male. report:"  # lower-cased, spaces restored exactly
    assert tok.convert_ids_to_tokens(tok("zzqx", add_special_tokens=False)["input_ids"]) == ["<unk>"]  # not a word seen

    log = json.loads((tiny_model / "training_log.json").read_text())
    losses = log["loss"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.5  # it learns


def test_loss_only_on_report_tokens(tiny_corpus):
    tok = dem._build_tokenizer(tiny_corpus["prompt"].tolist() + tiny_corpus["target"].tolist(), 300)
    ex = dem._encode(tok, ["Indication: cough. Sex: male. Report:"], ["No acute disease."], 64)[0]
    n_prompt = len(tok("Indication: cough. Sex: male. Report:")["input_ids"])
    assert ex["labels"][:n_prompt] == [-100] * n_prompt
    assert ex["labels"][n_prompt:] == ex["input_ids"][n_prompt:]
    assert ex["input_ids"][-1] == tok.eos_token_id
    assert tok.decode(ex["input_ids"][n_prompt:], skip_special_tokens=True).strip() == "no acute disease."


def test_the_lm_trains_on_length_grouped_batches(tiny_corpus, tmp_path, monkeypatch):
    import radaudit.models.train as train_mod

    seen = {}

    def capture(model, train_data, *args, **kwargs):
        seen["loader"] = train_data
        raise RuntimeError("stop here")

    monkeypatch.setattr(train_mod, "train_model", capture)
    with pytest.raises(RuntimeError, match="stop here"):
        train_report_model(tiny_corpus, tmp_path / "m", seed=0, **TINY)
    sampler = seen["loader"].batch_sampler
    assert isinstance(sampler, train_mod.LengthGroupedBatches) and sampler.batch_size == TINY["batch_size"]
    assert len(sampler.lengths) == int((tiny_corpus["split"] == "train").sum())
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())  # nothing half-written is left


def test_second_call_reuses_the_model(tiny_model, tiny_corpus, monkeypatch):
    import radaudit.models.train as train_mod

    calls = []
    real = train_mod.train_model

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(train_mod, "train_model", counting)
    mtime = (tiny_model / "model.safetensors").stat().st_mtime_ns
    again = train_report_model(tiny_corpus, tiny_model, seed=0, **TINY)
    assert again == tiny_model and calls == []
    assert (tiny_model / "model.safetensors").stat().st_mtime_ns == mtime
    # another config must not silently reuse (or overwrite) the folder
    with pytest.raises(ParamsError, match="not empty"):
        train_report_model(tiny_corpus, tiny_model, seed=1, **TINY)
    assert calls == []


@pytest.mark.long
def test_demo_model_path_is_content_addressed(shared_data, tmp_path, monkeypatch):
    import radaudit.models.train as train_mod

    calls = []
    real = train_mod.train_model
    monkeypatch.setattr(train_mod, "train_model", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    small = {**TINY, "steps": 2}
    t0 = time.monotonic()
    p1 = demo_model_path(shared_data, 0.5, seed=0, cache_dir=tmp_path, **small)
    p2 = demo_model_path(shared_data, 0.5, seed=0, cache_dir=tmp_path, **small)
    assert p1 == p2 and p1.parent == tmp_path / "demo_models" and len(calls) == 1
    p3 = demo_model_path(shared_data, 0.67, seed=0, cache_dir=tmp_path, **small)
    assert p3 != p1 and len(calls) == 2
    assert time.monotonic() - t0 < 30
    with pytest.raises(ParamsError, match="Unknown demo-model setting"):
        demo_model_path(shared_data, 0.5, cache_dir=tmp_path, n_layers=2)


def test_generate_reports_rows_and_greedy_determinism(tiny_model, tiny_corpus, tmp_path):
    prompts = tiny_corpus.loc[tiny_corpus["split"] == "test", "prompt"].tolist()[:3]
    df = generate_reports(tiny_model, prompts, ["greedy", "nucleus"], seeds=[0, 1, 2], max_new_tokens=12)
    assert list(df.columns[:4]) == ["prompt", "strategy", "seed", "text"]
    assert len(df) == 6 and df["strategy"].tolist() == ["greedy"] * 3 + ["nucleus"] * 3
    assert df["prompt"].tolist() == prompts * 2 and df["seed"].tolist() == [0, 1, 2] * 2
    assert (df["n_new_tokens"] <= 12).all()
    again = generate_reports(tiny_model, prompts, "greedy", seeds=[5, 6, 7], max_new_tokens=12, cache=tmp_path / "c")
    assert again["text"].tolist() == df.loc[df["strategy"] == "greedy", "text"].tolist()  # greedy ignores the seed
    nuc = generate_reports(tiny_model, prompts, "nucleus", seeds=[0, 1, 2], max_new_tokens=12)
    assert nuc["text"].tolist() == df.loc[df["strategy"] == "nucleus", "text"].tolist()  # same seeds, same samples


@pytest.mark.slow
def test_full_demo_model_trains_within_budget(shared_data, tmp_path):
    t0 = time.monotonic()
    path = demo_model_path(shared_data, 0.5, seed=0, cache_dir=tmp_path)
    elapsed = time.monotonic() - t0
    meta = json.loads((path / CONFIG_FILE).read_text())
    assert elapsed <= 300, f"demo model took {elapsed:.0f} s (budget 300 s on 2 cores)"
    assert meta["hyperparameters"]["steps"] == DEMO_CONFIG["steps"]
    assert meta["metrics"]["heldout_loss"] < 3.0
    prompts = build_training_corpus(shared_data, skew=0.5, seed=0).query("split == 'test'")["prompt"].tolist()[:5]
    df = generate_reports(path, prompts, ["greedy", "nucleus"], seeds=0, max_new_tokens=64)
    assert (df["text"].str.len() > 0).all()


def test_same_seed_same_weights(tiny_model, tiny_corpus, tmp_path):
    import torch
    from safetensors.torch import load_file

    again = train_report_model(tiny_corpus, tmp_path / "again", seed=0, **TINY)
    a, b = load_file(tiny_model / "model.safetensors"), load_file(again / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tiny_model / "tokenizer.json").read_text() == (again / "tokenizer.json").read_text()


def test_prompt_carries_the_clinical_question_and_the_sex_once():
    """Recipe 3: the indication's demographics and de-identification marks are dropped, so the patient's
    sex reaches the model only through ``Sex:``."""
    assert dem.format_prompt("The patient is a XXXX-year-old male with chest pain.", "M") == \
        "Indication: chest pain. Sex: male. Report:"
    assert dem.format_prompt("XXXX-year-old woman, hypoxia", "F") == "Indication: hypoxia. Sex: female. Report:"
    assert dem.format_prompt("XXXX", "U") == "Indication: not given. Sex: not given. Report:"
    with pytest.raises(ParamsError, match="sex must be"):
        dem.format_prompt("cough", "X")


def test_word_tokenizer_keeps_compound_words_whole_and_round_trips():
    texts = ["left-sided effusion and/or x-ray. the patient's heart (xxxx) is normal.",
             "right-sided pleural effusion. well-expanded lungs, 1.5 cm nodule - stable."] * 2
    tok = dem._build_tokenizer(texts, 200, kind="word")
    pieces = tok.convert_ids_to_tokens(tok(texts[0], add_special_tokens=False)["input_ids"])
    assert pieces[:5] == ["▁left-sided", "▁effusion", "▁and/or", "▁x-ray", "."]
    assert "▁patient's" in pieces and ")" in pieces
    for text in texts[:2]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text  # exact: spaces and punctuation restored
    # recipe 3 made "sided" / "ray" / "or" unmarked continuation tokens that sampling could glue onto any word
    vocab = tok.get_vocab()
    assert not {"sided", "ray", "or", "expanded", "s"} & set(vocab)
    glued = [w for w in vocab if w[:1].isalpha()]
    assert glued == ["xxxx"]  # only the word right after "(" in these texts, which follows no space


def test_the_reports_are_read_once_per_data_version_and_each_caller_gets_a_copy(shared_data, tmp_path, monkeypatch):
    import shutil

    from radaudit.audits.decoding_erasure import models as de_models
    from radaudit.data import require

    reads = []
    real = de_models.load_dataset
    monkeypatch.setattr(de_models, "load_dataset", lambda name, **kw: reads.append(name) or real(name, **kw))
    de_models._report_rows_of.cache_clear()
    first = de_models._report_rows(shared_data)
    first.loc[0, "target"] = "changed by the caller"
    second = de_models._report_rows(shared_data)
    assert reads == list(de_models.SOURCES)  # the second call read nothing
    assert second.loc[0, "target"] != "changed by the caller"  # a copy: one caller cannot change another's rows
    # another data version (a required file rewritten) is read again
    root = tmp_path / "data"
    for name in de_models.SOURCES:
        src = require(name, shared_data)
        shutil.copytree(src, root / src.name, ignore=lambda d, files: [f for f in files if f == "images"])
    pd.testing.assert_frame_equal(de_models._report_rows(root), second)
    assert len(reads) == 2 * len(de_models.SOURCES)
    de_models._report_rows_of.cache_clear()
