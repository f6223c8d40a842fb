"""Both engines of the vision-language steps build the same requests and read the same answers (issue 23).

vLLM cannot run here (no GPU, not installed), so its engine is the recorder of ``tests/fake_vllm.py``:
the code under test imports ``vllm`` as usual and the fake records what it was given. The tiny
random-weight VLM twins of ``tests/tiny_vlms.py`` stand in for the models. What is checked:

* the prompt: the chat-template text transformers renders is what vLLM gets (or, when the template writes
  BOS itself, exactly the token ids transformers tokenises), and the image is the same picture (pixel hash);
* the numbers: vLLM outputs made from the transformers model's own first-position log-softmax and greedy
  token ids parse to the same frame (P(yes) within 1e-6, same answers, texts, first tokens), by either
  way of asking vLLM for the candidates' log-probabilities;
* the cache: the same keys, and a run resumes across engines without a request;
* LoRA: the adapter is one ``LoRARequest`` on every request, and the engine is built for its rank.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

import fake_vllm

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from PIL import Image  # noqa: E402

from radaudit.errors import RadauditError  # noqa: E402
from radaudit.models.cache import ContentCache  # noqa: E402
from radaudit.models.vlm import (  # noqa: E402
    encode_batch,
    first_token_scores,
    image_hash,
    load_image,
    load_vlm,
    processor_tokenizer,
    render_prompt,
    vlm_generate,
)
from radaudit.models.vlm_vllm import LORA_NAME, load_vllm_vlm, lora_rank  # noqa: E402
from tiny_vlms import BUILDERS, random_images  # noqa: E402

MAX_NEW = 3


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return random_images(tmp_path_factory.mktemp("images"), seed=1)


def _items(images):
    prompts = ["Is there a pleural effusion? Answer yes or no.", "Does the patient have any condition?", None,
               "Based on the image only, is the heart enlarged?"]
    return prompts, [images[0], None, images[1], Image.open(images[1])]


@pytest.fixture(scope="module", params=["llava", "gemma3"])
def twin(request, tmp_path_factory):
    """``(name, folder, processor, model)``: LLaVA (the tokenizer adds BOS) and Gemma 3 (its template writes BOS)."""
    folder = BUILDERS[request.param](tmp_path_factory.mktemp(request.param))
    processor, model = load_vlm(str(folder), device="cpu")
    return request.param, folder, processor, model


def _pixels(image) -> str:
    img = load_image(image)
    return hashlib.sha256(img.tobytes() + f"{img.size}".encode()).hexdigest()


def _request_key(req) -> tuple:
    text = req.get("prompt") if "prompt" in req else tuple(req["prompt_token_ids"])
    image = (req.get("multi_modal_data") or {}).get("image")
    return text, None if image is None else image_hash(image)


def _hf_truth(processor, model, prompts, images):
    """Per item (keyed as the vLLM request will be): the transformers model's first-position log-softmax over
    the whole vocabulary and its greedy token ids (``MAX_NEW`` tokens, cut after EOS)."""
    from radaudit.models.backends import eos_token_ids

    eos = set(eos_token_ids(model, processor_tokenizer(processor)))
    truth = {}
    for p, im in zip(prompts, images):
        inputs, texts, pil = encode_batch(processor, model, [p], [im])  # a batch of one: no padding
        with torch.inference_mode():
            logits = model(**inputs).logits[0, -1].double()
            out = model.generate(**inputs, max_new_tokens=MAX_NEW, do_sample=False)
        ids = out[0, inputs["input_ids"].shape[1]:].tolist()
        cut = next((i for i, t in enumerate(ids) if t in eos), None)
        ids = ids if cut is None else ids[:cut + 1]
        text = texts[0]
        bos = processor_tokenizer(processor).bos_token
        if bos and text.startswith(bos):
            key = tuple(processor_tokenizer(processor)(text, add_special_tokens=False)["input_ids"])
        else:
            key = text
        truth[(key, image_hash(pil[0]))] = (torch.log_softmax(logits, dim=-1).numpy(), ids)
    return truth


def _responder(truth):
    """A fake-vLLM ``respond`` giving each request the transformers model's own numbers: the greedy ids, and
    the log-probabilities vLLM was asked for (``logprob_token_ids``, or all ``logprobs`` top tokens)."""
    def respond(prompt, params):
        lsm, ids = truth[_request_key(prompt)]
        n = int(params.max_tokens)
        ids = ids[:n]
        wanted = getattr(params, "logprob_token_ids", None)
        k = getattr(params, "logprobs", None)
        logprobs = None
        if wanted or k:
            top = [int(t) for t in np.argsort(-lsm)[: int(k)]] if k else []
            chosen = top + [int(t) for t in (wanted or [])] + [ids[0]]
            logprobs = [{t: fake_vllm.Logprob(float(lsm[t])) for t in chosen}]
            logprobs += [{t: fake_vllm.Logprob(-0.5)} for t in ids[1:]]
        return fake_vllm.Canned(ids, "stop" if len(ids) < n else "length", logprobs)
    return respond


# --- the prompt ----------------------------------------------------------------------------------

def test_both_engines_feed_the_same_rendered_prompt_and_image(twin, images, monkeypatch):
    name, folder, processor, model = twin
    prompts, imgs = _items(images)
    seen = []
    import radaudit.models.vlm as vlm_mod

    real_encode = vlm_mod._encode

    def spy(processor_, model_, texts, pil):
        seen.extend(zip(texts, pil))
        return real_encode(processor_, model_, texts, pil)

    monkeypatch.setattr(vlm_mod, "_encode", spy)
    hf = vlm_generate(processor, model, prompts, imgs, max_new_tokens=2, batch_size=2)
    rec = fake_vllm.install_vlm(monkeypatch)
    vproc, engine = load_vllm_vlm(str(folder))
    vl = vlm_generate(vproc, engine, prompts, imgs, max_new_tokens=2, batch_size=2)

    assert len(seen) == len(rec.prompts) == len(prompts)
    assert list(vl["rendered_prompt"]) == list(hf["rendered_prompt"])
    tok = processor_tokenizer(processor)
    for i, ((text, pil), req) in enumerate(zip(seen, rec.prompts)):  # both engines run the items in order
        assert text == render_prompt(processor, prompts[i], load_image(imgs[i]))
        # the ids vLLM will tokenise == the ids transformers tokenised (one BOS, not two)
        add_special = not (tok.bos_token and text.startswith(tok.bos_token))
        hf_ids = tok(text, add_special_tokens=add_special)["input_ids"]
        if "prompt" in req:
            assert req["prompt"] == text and add_special
            assert tok(req["prompt"])["input_ids"] == hf_ids  # vLLM encodes a text prompt with special tokens
        else:
            assert not add_special and req["prompt_token_ids"] == hf_ids
            assert hf_ids.count(tok.bos_token_id) == 1
        image = (req.get("multi_modal_data") or {}).get("image")
        assert (image is None) == (pil is None)
        if pil is not None:
            assert _pixels(image) == _pixels(pil) and image.mode == "RGB" and image.size == pil.size
    assert name != "gemma3" or all("prompt_token_ids" in r for r in rec.prompts)  # its template writes <bos>
    init = rec.init_calls[0]
    assert init["limit_mm_per_prompt"] == {"image": 1} and init["dtype"] == "float32"
    assert "enable_lora" not in init


# --- the numbers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("by_token_ids", [True, False], ids=["logprob_token_ids", "full_vocab_logprobs"])
def test_canned_vllm_outputs_parse_to_the_same_scores_and_answers(twin, images, monkeypatch, by_token_ids):
    name, folder, processor, model = twin
    prompts, imgs = _items(images)
    hf = first_token_scores(processor, model, prompts, imgs, max_new_tokens=MAX_NEW, batch_size=2)
    truth = _hf_truth(processor, model, prompts, imgs)
    rec = fake_vllm.install_vlm(monkeypatch, logprob_token_ids=by_token_ids, respond=_responder(truth))
    vproc, engine = load_vllm_vlm(str(folder))
    vl = first_token_scores(vproc, engine, prompts, imgs, max_new_tokens=MAX_NEW, batch_size=2)

    assert list(vl.columns) == list(hf.columns)
    cands = [c["candidate"] for c in hf.attrs["candidates"]]
    for c in cands:
        np.testing.assert_allclose(vl[f"logprob_{c}"], hf[f"logprob_{c}"], atol=1e-6)
        assert vl[f"logit_{c}"].isna().all() and hf[f"logit_{c}"].notna().all()  # vLLM gives no raw logits
    for col in ("p_yes_capitalised", "p_yes_lower", "p_yes_both", "p_yes", "p_no", "mass_candidates"):
        np.testing.assert_allclose(vl[col], hf[col], atol=1e-6, err_msg=col)
    same = ["first_token_id", "first_token", "first_token_candidate", "generated", "answer", "n_generated_tokens",
            "finish", "kind", "image_hash"]
    pd.testing.assert_frame_equal(vl[same], hf[same])
    assert set(vl["engine"]) == {"vllm"} and set(hf["engine"]) == {"transformers"}
    # P(yes) is a softmax of logit differences: the raw logits give it too
    r = hf.iloc[0]
    assert r["p_yes_capitalised"] == pytest.approx(1 / (1 + math.exp(r["logit_No"] - r["logit_Yes"])), abs=1e-9)

    params = rec.params
    wanted = sorted({c["token_id"] for c in hf.attrs["candidates"]})
    answers = [p for p in params if p.kw["max_tokens"] == MAX_NEW]
    assert len(answers) == len(prompts) and all(p.kw["temperature"] == 0.0 and p.kw["seed"] is None for p in answers)
    if by_token_ids:  # one request per item, asking for exactly the candidates' first tokens
        assert len(params) == len(prompts)
        assert all(sorted(p.logprob_token_ids) == wanted for p in params)
    else:  # an older vLLM: a second, one-token request per item for every token's log-probability
        vocab = model.config.get_text_config().vocab_size
        scoring = [p for p in params if p.kw["max_tokens"] == 1]
        assert len(scoring) == len(prompts) and all(p.logprobs == vocab for p in scoring)
        assert rec.init_calls[0]["max_logprobs"] == vocab


def test_generated_reports_parse_the_same_and_carry_the_strategy(twin, images, monkeypatch):
    name, folder, processor, model = twin
    prompts, imgs = _items(images)
    hf = vlm_generate(processor, model, prompts, imgs, "greedy", max_new_tokens=MAX_NEW)
    truth = _hf_truth(processor, model, prompts, imgs)
    rec = fake_vllm.install_vlm(monkeypatch, respond=_responder(truth))
    vproc, engine = load_vllm_vlm(str(folder))
    vl = vlm_generate(vproc, engine, prompts, imgs, "greedy", max_new_tokens=MAX_NEW)
    cols = ["item", "prompt", "kind", "image_hash", "rendered_prompt", "strategy", "seed", "max_new_tokens",
            "n_generated_tokens", "finish", "text"]
    pd.testing.assert_frame_equal(vl[cols], hf[cols])
    assert list(vl.columns) == list(hf.columns) and set(vl["engine"]) == {"vllm"}

    sampled = vlm_generate(vproc, engine, prompts, imgs, {"name": "t07", "do_sample": True, "temperature": 0.7},
                           max_new_tokens=MAX_NEW, seeds=[11, 12, 13, 14])
    last = rec.params[-len(prompts):]
    assert [p.kw["seed"] for p in last] == [11, 12, 13, 14]
    assert all(p.kw["temperature"] == 0.7 and p.kw["max_tokens"] == MAX_NEW for p in last)
    assert list(sampled["seed"]) == [11, 12, 13, 14]

    beams = vlm_generate(vproc, engine, prompts, imgs, "beam4", max_new_tokens=MAX_NEW)
    call = rec.beam_calls[-1]
    assert call.params.kw["beam_width"] == 4 and call.params.kw["max_tokens"] == MAX_NEW
    tok = processor_tokenizer(processor)
    for beam_req, req in zip(call.prompts, rec.prompts[:len(prompts)]):  # the same ids vLLM's beam search encodes
        ids = req.get("prompt_token_ids") or tok(req["prompt"])["input_ids"]
        assert beam_req["prompt_token_ids"] == ids and _request_key(beam_req)[1] == _request_key(req)[1]
    # the fake's beam answers the prompt's ids + beam_tokens: the prompt is cut off exactly
    assert beams["n_generated_tokens"].tolist() == [len(rec.beam_tokens)] * len(prompts)


# --- the cache -----------------------------------------------------------------------------------

def _keys(folder, name):
    with sqlite3.connect(str(folder / f"{name}.sqlite")) as con:
        return {k: json.loads(p) for k, p in con.execute("SELECT key, parts FROM entries")}


def test_same_cache_keys_and_resume_across_engines(twin, images, monkeypatch, tmp_path):
    name, folder, processor, model = twin
    prompts, imgs = _items(images)
    truth = _hf_truth(processor, model, prompts, imgs)
    hf = first_token_scores(processor, model, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "hf")
    hf_gen = vlm_generate(processor, model, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "hf")
    rec = fake_vllm.install_vlm(monkeypatch, respond=_responder(truth))
    vproc, engine = load_vllm_vlm(str(folder))
    first_token_scores(vproc, engine, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "vllm")
    vlm_generate(vproc, engine, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "vllm")
    for cache in ("first_token_scores", "generations"):
        hf_keys, vl_keys = _keys(tmp_path / "hf", cache), _keys(tmp_path / "vllm", cache)
        assert hf_keys == vl_keys and len(hf_keys) == len(prompts)  # same keys, same parts
        assert not any("backend" in p or "engine" in p for p in hf_keys.values())
    with ContentCache(tmp_path / "vllm", name="first_token_scores") as store:
        assert {v["engine"] for v in store.get_many(list(_keys(tmp_path / "vllm", "first_token_scores"))).values()} \
            == {"vllm"}

    n = rec.n_requests
    resumed = first_token_scores(vproc, engine, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "hf")
    again = vlm_generate(vproc, engine, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "hf")
    assert rec.n_requests == n  # everything from the transformers run's cache: vLLM was not asked
    assert resumed["cached"].all() and set(resumed["engine"]) == {"transformers"}
    cols = [c for c in hf.columns if c != "cached"]
    pd.testing.assert_frame_equal(resumed[cols], hf[cols])
    pd.testing.assert_frame_equal(again.drop(columns="cached"), hf_gen.drop(columns="cached"))

    # the other way: two items scored on vLLM, the rest by transformers in the same cache
    first_token_scores(vproc, engine, prompts[:2], imgs[:2], max_new_tokens=MAX_NEW, cache=tmp_path / "mixed")
    mixed = first_token_scores(processor, model, prompts, imgs, max_new_tokens=MAX_NEW, cache=tmp_path / "mixed")
    assert mixed["cached"].tolist() == [True, True, False, False]
    assert mixed["engine"].tolist() == ["vllm", "vllm", "transformers", "transformers"]
    np.testing.assert_allclose(mixed["p_yes"], hf["p_yes"], atol=1e-6)


# --- LoRA, errors ----------------------------------------------------------------------------------

def test_lora_adapter_is_on_every_request_and_keys_match_the_peft_model(tmp_path, images, monkeypatch):
    peft = pytest.importorskip("peft")
    from radaudit.models.vlm import mark_adapter, model_identity

    base = BUILDERS["llava"](tmp_path / "llava")
    processor, model = load_vlm(str(base), device="cpu")
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(model, cfg).save_pretrained(tmp_path / "adapter")
    assert lora_rank(tmp_path / "adapter") == 8  # r=4 rounded up to a rank vLLM accepts
    _, base_model = load_vlm(str(base), device="cpu")
    tuned = mark_adapter(peft.PeftModel.from_pretrained(base_model, str(tmp_path / "adapter")).eval(),
                         tmp_path / "adapter")

    rec = fake_vllm.install_vlm(monkeypatch)
    vproc, engine = load_vllm_vlm(str(base), adapter=tmp_path / "adapter")
    prompts, imgs = _items(images)
    vlm_generate(vproc, engine, prompts, imgs, max_new_tokens=2)
    init = rec.init_calls[0]
    assert init["enable_lora"] is True and init["max_lora_rank"] == 8 and init["max_loras"] == 1
    call = rec.generate_calls[0]
    assert call.lora_request.lora_path == str(tmp_path / "adapter") and call.lora_request.lora_name == LORA_NAME
    assert model_identity(engine) == model_identity(tuned)  # one cache entry per (base, adapter) on both engines
    assert model_identity(engine) != model_identity(base_model)
    assert "+adapter:" in model_identity(engine)[1]


def test_vllm_missing_says_what_to_do(tmp_path, monkeypatch):
    fake_vllm.uninstalled(monkeypatch)
    folder = BUILDERS["llava"](tmp_path / "llava")
    with pytest.raises(RadauditError, match="pip install vllm"):
        load_vllm_vlm(str(folder))


def test_a_candidate_missing_from_vllm_logprobs_is_an_error(tmp_path, images, monkeypatch):
    folder = BUILDERS["llava"](tmp_path / "llava")
    fake_vllm.install_vlm(monkeypatch, respond=lambda p, sp: fake_vllm.Canned(
        [5, 2], "stop", [{5: fake_vllm.Logprob(-0.1)}, {2: fake_vllm.Logprob(-0.2)}]))
    vproc, engine = load_vllm_vlm(str(folder))
    with pytest.raises(RadauditError, match="no log-probability for candidate"):
        first_token_scores(vproc, engine, ["Is there an effusion?"], [images[0]], max_new_tokens=2)
