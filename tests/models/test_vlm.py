"""VLM inference, first-token scores and attention by modality on two tiny random VLMs.

The models are built from transformers configs (a LLaVA-style model: tiny CLIP vision tower + tiny
Llama; a Qwen2-VL-style model: ``Qwen2VLConfig`` with tiny vision/text configs), with processors
built offline (an image processor with small sizes, a byte-level BPE tokenizer trained here with
the ``tokenizers`` library, a chat template string), saved with ``save_pretrained`` and reloaded
through ``load_vlm`` (``AutoProcessor`` / ``AutoModelForImageTextToText``). Random weights: the tests
check plumbing and invariants, not answers.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from PIL import Image  # noqa: E402

from radaudit.errors import ParamsError  # noqa: E402
from radaudit.models.attention import (  # noqa: E402
    attention_by_modality,
    image_token_mask,
    modality_shares,
    self_attention_layers,
)
from radaudit.models.vlm import (  # noqa: E402
    build_messages,
    count_answers,
    encode_batch,
    first_token_scores,
    image_hash,
    load_vlm,
    pair_probabilities,
    parse_yes_no,
    vlm_generate,
)
from tiny_vlms import BUILDERS, random_images  # noqa: E402


@pytest.fixture(scope="module", params=["llava", "qwen2vl", "qwen3vl", "gemma3", "mllama", "janus"])
def vlm(request, tmp_path_factory):
    """``(name, processor, model)`` loaded through load_vlm from a saved folder."""
    build = BUILDERS[request.param]
    folder = build(tmp_path_factory.mktemp(request.param))
    processor, model = load_vlm(str(folder), device="cpu")
    return request.param, processor, model


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return random_images(tmp_path_factory.mktemp("images"), seed=0)


def _items(images):
    prompts = ["Is there a pleural effusion? Answer yes or no.", "Does the patient have any condition?", None,
               "Based on the image only, is the heart enlarged?", "yes or no?"]
    imgs = [images[0], None, images[1], Image.open(images[1]), None]
    return prompts, imgs


def _expected_image_tokens(name, processor, image_path):
    """Image tokens the model needs for one image, computed from the vision geometry (not the ids)."""
    if name == "llava":
        cfg = processor.image_processor.crop_size
        return (cfg["height"] // processor.patch_size) * (cfg["width"] // processor.patch_size)
    if name == "gemma3":
        return processor.image_seq_length
    if name == "janus":
        return processor.num_image_tokens  # the SigLIP patches pooled to mm_tokens_per_image
    if name == "mllama":
        return 1  # one <|image|> placeholder: the image itself enters through the cross-attention layers
    feats = processor.image_processor(images=[Image.open(image_path).convert("RGB")], return_tensors="pt")
    return int(feats["image_grid_thw"][0].prod()) // processor.image_processor.merge_size ** 2


# --- loading, prompts, hashing -------------------------------------------------------------------

def test_load_vlm_through_from_pretrained(vlm):
    name, processor, model = vlm
    assert type(model).__name__ == {"llava": "LlavaForConditionalGeneration",
                                    "qwen2vl": "Qwen2VLForConditionalGeneration",
                                    "qwen3vl": "Qwen3VLForConditionalGeneration",
                                    "gemma3": "Gemma3ForConditionalGeneration",
                                    "mllama": "MllamaForConditionalGeneration",
                                    "janus": "JanusForConditionalGeneration"}[name]
    assert not model.training and model.device.type == "cpu" and model.dtype == torch.float32
    assert processor.chat_template
    if name in ("qwen2vl", "qwen3vl") and not transformers.utils.is_torchvision_available():
        assert type(processor).__name__ == {"qwen2vl": "Qwen2VLProcessorWithoutVideo",
                                            "qwen3vl": "Qwen3VLProcessorWithoutVideo"}[name]


def test_load_vlm_missing_path_is_clear():
    from radaudit.models.resolver import ModelUnavailableError

    with pytest.raises(ModelUnavailableError, match="does not exist"):
        load_vlm("./no/such/vlm")


def test_build_messages_kinds():
    assert build_messages("Q?", "img") == [{"role": "user",
                                            "content": [{"type": "image"}, {"type": "text", "text": "Q?"}]}]
    assert build_messages("Q?") == [{"role": "user", "content": [{"type": "text", "text": "Q?"}]}]
    assert build_messages(None, "img") == [{"role": "user", "content": [{"type": "image"}]}]
    assert build_messages("", "img", system="S")[0] == {"role": "system", "content": [{"type": "text", "text": "S"}]}
    with pytest.raises(ParamsError, match="needs a prompt, an image"):
        build_messages("  ", None)


def test_load_images_decodes_each_file_once(images, monkeypatch):
    import radaudit.models.vlm as vlm

    decoded = []
    real = vlm.load_image
    monkeypatch.setattr(vlm, "load_image", lambda im: decoded.append(im) or real(im))
    batch = [images[0], None, images[1], images[0], Image.open(images[1]), images[0]]
    pil, hashes = vlm.load_images(batch)
    files = [str(d) for d in decoded if d is not None and not isinstance(d, Image.Image)]
    assert sorted(files) == sorted([str(images[0]), str(images[1])])  # two distinct files, each decoded once
    assert pil[0] is pil[3] is pil[5] and pil[1] is None and hashes[1] is None
    assert hashes == [image_hash(images[0]), None, image_hash(images[1]), image_hash(images[0]),
                      image_hash(images[1]), image_hash(images[0])]
    assert pil[2].mode == "RGB" and pil[2].tobytes() == real(images[1]).tobytes()


def test_load_images_with_a_cache_keeps_each_files_hash_and_decodes_when_read(images, tmp_path, monkeypatch):
    """With a cache, a rerun finds every file's pixel hash under its path, size and mtime and decodes nothing until
    an item's pixels are read; a rewritten file is hashed again; a missing file is named."""
    import shutil

    import radaudit.models.vlm as vlm

    a, b = tmp_path / "a.png", tmp_path / "b.png"
    shutil.copy(images[0], a)
    shutil.copy(images[1], b)
    h0, h1, pixels1 = image_hash(images[0]), image_hash(images[1]), vlm.load_image(images[1]).tobytes()
    decoded = []
    real = vlm.load_image
    monkeypatch.setattr(vlm, "load_image", lambda im: (isinstance(im, (str, os.PathLike)) and decoded.append(str(im))) or real(im))
    batch = [a, None, b, a]
    pil, hashes = vlm.load_images(batch, tmp_path / "cache")
    assert hashes == [h0, None, h1, h0]
    assert decoded == [str(a), str(b)]  # the first call decodes and hashes each file once
    decoded.clear()
    pil, again = vlm.load_images(batch, tmp_path / "cache")
    assert again == hashes and decoded == []  # the rerun reads the hashes back: nothing decoded
    assert pil[0] is pil[3] and pil[1] is None and decoded == [str(a)]  # decoded when read, each file once
    assert pil[2].tobytes() == pixels1
    Image.open(images[1]).save(a)  # a rewritten (another size or time): its new pixels' hash
    assert vlm.load_images([a], tmp_path / "cache")[1] == [h1]
    with pytest.raises(ParamsError, match="does not exist"):
        vlm.load_images([tmp_path / "gone.png"], tmp_path / "cache")


def test_image_hash_pixels(images):
    h = image_hash(images[0])
    assert h == image_hash(Image.open(images[0])) == image_hash(Image.open(images[0]).convert("RGBA").convert("RGB"))
    assert len(h) == 64 and h != image_hash(images[1])
    assert image_hash(None) is None
    with pytest.raises(ParamsError, match="does not exist"):
        image_hash(images[0].parent / "missing.png")


# --- generation ----------------------------------------------------------------------------------

def test_generate_mixed_batch_in_order_and_deterministic(vlm, images):
    name, processor, model = vlm
    prompts, imgs = _items(images)
    a = vlm_generate(processor, model, prompts, imgs, max_new_tokens=5, batch_size=3)
    b = vlm_generate(processor, model, prompts, imgs, max_new_tokens=5, batch_size=3)
    assert list(a["item"]) == [0, 1, 2, 3, 4]
    assert list(a["prompt"]) == prompts
    assert list(a["has_image"]) == [True, False, True, True, False]
    assert list(a["kind"]) == ["image+text", "text", "image", "image+text", "text"]
    assert a["image_hash"].tolist() == [image_hash(i) for i in imgs]
    assert a.loc[2, "image_hash"] == a.loc[3, "image_hash"]  # same picture as a path and as PIL
    assert (a["n_generated_tokens"] >= 1).all() and (a["n_generated_tokens"] <= 5).all()
    assert set(a["finish"]) <= {"eos", "length"}
    assert a["text"].tolist() == b["text"].tolist()
    image_token = processor.image_token
    assert image_token in a.loc[0, "rendered_prompt"] and image_token not in a.loc[1, "rendered_prompt"]


def test_batched_equals_unbatched_greedy(vlm, images):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    batched = vlm_generate(processor, model, prompts, imgs, max_new_tokens=5, batch_size=5)
    single = vlm_generate(processor, model, prompts, imgs, max_new_tokens=5, batch_size=1)
    assert batched["text"].tolist() == single["text"].tolist()
    assert batched["n_input_tokens"].tolist() == single["n_input_tokens"].tolist()


def test_sampling_reproducible_by_seed_and_batch_independent(vlm, images):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    kw = dict(strategy="nucleus", max_new_tokens=6)
    a = vlm_generate(processor, model, prompts[:3], imgs[:3], seeds=[3, 4, 5], batch_size=3, **kw)
    b = vlm_generate(processor, model, prompts[:3], imgs[:3], seeds=[3, 4, 5], batch_size=1, **kw)
    c = vlm_generate(processor, model, prompts[:3], imgs[:3], seeds=[13, 14, 15], batch_size=3, **kw)
    assert a["text"].tolist() == b["text"].tolist() and a["seed"].tolist() == [3, 4, 5]
    assert a["text"].tolist() != c["text"].tolist()


def test_generate_cache_hits_resume_and_misses(vlm, images, tmp_path):
    from radaudit.models.cache import ContentCache

    _, processor, model = vlm
    prompts, imgs = _items(images)
    with ContentCache(tmp_path / "cache") as cache:
        part = vlm_generate(processor, model, prompts[:2], imgs[:2], max_new_tokens=4, cache=cache)  # "interrupted"
        full = vlm_generate(processor, model, prompts, imgs, max_new_tokens=4, cache=cache, batch_size=2)
        again = vlm_generate(processor, model, prompts, imgs, max_new_tokens=4, cache=cache)
        longer = vlm_generate(processor, model, prompts[:1], imgs[:1], max_new_tokens=5, cache=cache)
    assert not part["cached"].any()
    assert full["cached"].tolist() == [True, True, False, False, False]
    assert again["cached"].all() and again["text"].tolist() == full["text"].tolist()
    assert full["text"].tolist() == vlm_generate(processor, model, prompts, imgs, max_new_tokens=4)["text"].tolist()
    assert not longer["cached"].any()


def test_generate_rejects_mismatched_images(vlm):
    _, processor, model = vlm
    with pytest.raises(ParamsError, match="one image"):
        vlm_generate(processor, model, ["a", "b"], [None])


# --- first-token scores ---------------------------------------------------------------------------

def test_first_token_logits_equal_forward_pass(vlm, images):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    scores = first_token_scores(processor, model, prompts, imgs, batch_size=3, max_new_tokens=3)
    assert len(scores) == 5 and list(scores["item"]) == list(range(5))
    cand = {c["candidate"]: c["token_id"] for c in scores.attrs["candidates"]}
    tok = processor.tokenizer
    for c in ("Yes", "No", "yes", "no"):
        assert cand[c] == tok("%s" % c, add_special_tokens=False)["input_ids"][0]
    for i, (p, im) in enumerate(zip(prompts, imgs)):
        inputs, _, _ = encode_batch(processor, model, [p], [im])  # batch of one: no padding
        with torch.inference_mode():
            last = model(**inputs).logits[0, -1].float()
        for c, tid in cand.items():
            assert scores.loc[i, f"logit_{c}"] == pytest.approx(float(last[tid]), abs=1e-4)
        assert scores.loc[i, "first_token_id"] == int(last.argmax())


def test_first_token_scores_cache_resumes_and_misses_on_change(vlm, images, tmp_path):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    part = first_token_scores(processor, model, prompts[:2], imgs[:2], max_new_tokens=3, cache=tmp_path)
    assert not part["cached"].any()
    full = first_token_scores(processor, model, prompts, imgs, max_new_tokens=3, cache=tmp_path, batch_size=2)
    assert full["cached"].tolist() == [True, True, False, False, False]
    fresh = first_token_scores(processor, model, prompts, imgs, max_new_tokens=3)
    cols = [c for c in fresh.columns if c != "cached"]
    pd.testing.assert_frame_equal(full[cols], fresh[cols], check_exact=False, rtol=1e-5)
    longer = first_token_scores(processor, model, prompts[:2], imgs[:2], max_new_tokens=4, cache=tmp_path)
    assert not longer["cached"].any()  # a changed max_new_tokens is a different answer


def test_pair_softmax_probabilities(vlm, images):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    s = first_token_scores(processor, model, prompts, imgs, max_new_tokens=2)
    for r in s.itertuples():
        e = {c: math.exp(getattr(r, f"logit_{c}")) for c in ("Yes", "No", "yes", "no")}
        assert r.p_yes_capitalised == pytest.approx(e["Yes"] / (e["Yes"] + e["No"]))
        assert r.p_yes_lower == pytest.approx(e["yes"] / (e["yes"] + e["no"]))
        assert r.p_yes_both == pytest.approx((e["Yes"] + e["yes"]) / sum(e.values()))
        assert r.p_yes + r.p_no == pytest.approx(1.0) and r.p_yes == r.p_yes_both and r.pair == "both"
        assert 0 < r.mass_candidates < 1
    cap = first_token_scores(processor, model, prompts[:2], imgs[:2], pair="capitalised", max_new_tokens=2)
    assert (cap["p_yes"] == cap["p_yes_capitalised"]).all() and (cap["pair"] == "capitalised").all()
    with pytest.raises(ParamsError, match="pair must be"):
        first_token_scores(processor, model, prompts[:1], imgs[:1], pair="upper")


def test_pair_probabilities_hand_values():
    p = pair_probabilities({"Yes": np.array([2.0]), "No": np.array([0.0]), "yes": np.array([0.0]),
                            "no": np.array([1.0])})
    assert p["p_yes_capitalised"][0] == pytest.approx(1 / (1 + math.exp(-2)))
    assert p["p_yes_lower"][0] == pytest.approx(1 / (1 + math.e))
    assert p["p_yes_both"][0] == pytest.approx((math.exp(2) + 1) / (math.exp(2) + 1 + 1 + math.e))
    only_cap = pair_probabilities({"Yes": np.array([0.0]), "No": np.array([0.0])})
    assert only_cap["p_yes_capitalised"][0] == 0.5 and np.isnan(only_cap["p_yes_lower"][0])


def test_multi_token_candidate_scored_by_first_subtoken(vlm, images, caplog):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    with caplog.at_level(logging.WARNING, logger="radaudit.models.vlm"):
        s = first_token_scores(processor, model, prompts[:2], imgs[:2], candidates=("Yes", "No", "Perhaps"),
                               max_new_tokens=2)
    info = {c["candidate"]: c for c in s.attrs["candidates"]}
    ids = processor.tokenizer("Perhaps", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1 and info["Perhaps"]["n_tokens"] == len(ids) and info["Perhaps"]["token_id"] == ids[0]
    assert "'Perhaps' tokenises to" in caplog.text
    inputs, _, _ = encode_batch(processor, model, prompts[:1], imgs[:1])
    with torch.inference_mode():
        last = model(**inputs).logits[0, -1]
    assert s.loc[0, "logit_Perhaps"] == pytest.approx(float(last[ids[0]]), abs=1e-4)
    assert np.isnan(s["p_yes_lower"]).all() and not np.isnan(s["p_yes_capitalised"]).any()


def test_unparseable_answers_are_counted_not_dropped(vlm, images):
    _, processor, model = vlm
    prompts, imgs = _items(images)
    s = first_token_scores(processor, model, prompts, imgs, max_new_tokens=4)
    assert len(s) == len(prompts)
    counts = count_answers(s)
    assert counts.sum() == len(s) and set(s["answer"]) <= {"yes", "no", "unknown"}
    assert s.attrs["n_unknown"] == counts["unknown"] == int((s["answer"] == "unknown").sum())
    assert (s["answer"] == [parse_yes_no(t) for t in s["generated"]]).all()


@pytest.mark.parametrize("text, expected", [
    ("Yes", "yes"), ("no.", "no"), ("**No**", "no"), ("Yes, there is an effusion.", "yes"), ("Answer: yes", "yes"),
    (" N ", "no"), ("Not sure", "unknown"), ("nothing", "unknown"), ("", "unknown"), (None, "unknown"),
    ("The lungs are clear", "unknown"), ("yes-ish", "unknown")])
def test_parse_yes_no(text, expected):
    assert parse_yes_no(text) == expected


def test_parse_yes_no_patterns_no_first():
    no, yes = [r"\bno evidence\b"], [r"\beffusion\b"]
    assert parse_yes_no("There is no evidence of effusion", no_patterns=no, yes_patterns=yes) == "no"
    assert parse_yes_no("Small effusion", no_patterns=no, yes_patterns=yes) == "yes"
    assert count_answers(["yes", "unknown", "unknown"]).to_dict() == {"yes": 1, "no": 0, "unknown": 2}


# --- attention by modality ------------------------------------------------------------------------

def test_modality_shares_hand_computed():
    # 2 layers, 1 head, 4 keys: 3 input tokens (0 = BOS, 1 = image, 2 = text) + 1 generated token.
    rows = np.array([[[0.5, 0.2, 0.2, 0.1]], [[0.7, 0.0, 0.3, 0.0]]])
    mask = np.array([False, True, False])
    s = modality_shares(rows, mask)
    assert s["image_share"] == pytest.approx((0.5 + 0.0) / 2) and s["text_share"] == pytest.approx((0.5 + 1.0) / 2)
    assert s["first_position_attention"] == pytest.approx(0.6) and s["generated_attention"] == pytest.approx(0.05)
    m = modality_shares(rows, mask, normalise="after_mean")
    assert m["image_share"] == pytest.approx(0.1 / 0.35) and m["image_share"] + m["text_share"] == pytest.approx(1)
    assert modality_shares(rows, np.zeros(3, bool))["image_share"] == 0.0


def test_attention_shares_per_generated_token(vlm, images):
    name, processor, model = vlm
    table, positions = attention_by_modality(processor, model, "Is there a pleural effusion?", images[0],
                                             max_new_tokens=4, return_positions=True)
    assert 1 <= len(table) <= 4 and list(table["step"]) == list(range(len(table)))
    assert table["image_share"].between(0, 1).all() and table["text_share"].between(0, 1).all()
    assert np.allclose(table["image_share"] + table["text_share"], 1.0)
    assert (table["image_share"] > 0).all()
    n = table["n_input_tokens"].iloc[0]
    assert table["query_position"].tolist() == [n - 1 + t for t in range(len(table))]
    assert (table["n_image_tokens"] == _expected_image_tokens(name, processor, images[0])).all()
    per_step = positions.groupby("step")["attention"].sum()
    assert np.allclose(per_step, 1.0) and (positions.query("position == 0")["attention"] == 0).all()
    img = positions[positions["modality"] == "image"].groupby("step")["attention"].sum()
    assert np.allclose(img.to_numpy(), table["image_share"].to_numpy())


def test_attention_first_row_equals_forward_pass(vlm, images):
    _, processor, model = vlm
    prompt = "Does the patient have any condition?"
    table = attention_by_modality(processor, model, prompt, images[1], max_new_tokens=1)
    inputs, _, _ = encode_batch(processor, model, [prompt], [images[1]])
    mask = image_token_mask(inputs["input_ids"][0], model.config)
    assert mask.sum() == table.loc[0, "n_image_tokens"]
    from radaudit.models.attention import eager_attention

    with eager_attention(model), torch.inference_mode():
        att = model(**inputs, output_attentions=True).attentions
    rows = np.stack([a[0, :, -1, :].numpy() for a in self_attention_layers(att, model.config)])
    assert table.loc[0, "image_share"] == pytest.approx(modality_shares(rows, mask)["image_share"], abs=1e-6)
    # Mllama reads the image through its cross-attention layer (keys = vision patches): left out, counted
    assert table.loc[0, "n_cross_attention_layers"] == (1 if type(model).__name__.startswith("Mllama") else 0)
    assert len(rows) == model.config.get_text_config().num_hidden_layers - table.loc[0, "n_cross_attention_layers"]


def test_attention_text_only_has_zero_image_share(vlm):
    _, processor, model = vlm
    table = attention_by_modality(processor, model, "Does the patient have any condition?", None, max_new_tokens=3)
    assert (table["n_image_tokens"] == 0).all()
    assert (table["image_share"] == 0.0).all() and np.allclose(table["text_share"], 1.0)


def test_attention_restores_attn_implementation(vlm, images):
    _, processor, model = vlm
    before = model.config._attn_implementation
    attention_by_modality(processor, model, None, images[0], max_new_tokens=2)  # image-only item
    assert model.config._attn_implementation == before


def test_non_finite_logits_stop_the_run_with_what_to_do():
    from radaudit.models.vlm import NonFiniteLogitsError, check_finite_logits

    class M:
        dtype = torch.float16

    check_finite_logits(torch.zeros(2, 5), M())  # finite: nothing happens
    bad = torch.zeros(3, 5)
    bad[1, 2] = float("nan")
    bad[2, 0] = float("inf")
    with pytest.raises(NonFiniteLogitsError, match=r"2 of 3 items.*torch.float16.*rows \[1, 2\].*bf16"):
        check_finite_logits(bad, M(), ["a", "Is there an effusion?", "c"])


def test_first_token_scores_refuse_nan_logits_and_cache_nothing(vlm, images, tmp_path):
    from radaudit.models.cache import ContentCache
    from radaudit.models.vlm import NonFiniteLogitsError, first_token_scores

    _, processor, model = vlm
    head = model.get_output_embeddings()
    saved = head.weight.data.clone()
    head.weight.data[0, 0] = float("nan")
    try:
        with ContentCache(tmp_path / "c") as store, pytest.raises(NonFiniteLogitsError):
            first_token_scores(processor, model, ["Is there an effusion?"], [images[0]], cache=store)
        with ContentCache(tmp_path / "c") as store:
            assert len(store) == 0
    finally:
        head.weight.data.copy_(saved)


def test_image_processor_settings_from_params_cap_qwen2vl_pixels(tmp_path):
    """The paper preset caps Qwen2-VL's max_pixels; the tiny twin's config allows 56 x 56 = 3136 px."""
    folder = BUILDERS["qwen2vl"](tmp_path / "q")
    big = Image.new("RGB", (112, 112), (90, 90, 90))
    default, _ = load_vlm(str(folder), device="cpu")
    capped, _ = load_vlm(str(folder), device="cpu", image_processor_kwargs={"max_pixels": 28 * 28})
    thw = lambda p: p.image_processor(images=[big], return_tensors="pt")["image_grid_thw"][0].tolist()  # noqa: E731
    assert thw(default) == [1, 4, 4]  # 56 x 56 px in 14 px patches
    assert thw(capped) == [1, 2, 2]  # 28 x 28 px: four times fewer patches


def test_llava_med_needs_conversion_and_says_how_before_any_download(tmp_path):
    from radaudit.models.resolver import ModelUnavailableError

    with pytest.raises(ModelUnavailableError, match=r"llava_mistral.*convert_llava_weights_to_hf"):
        load_vlm("microsoft/llava-med-v1.5-mistral-7b", device="cpu")
    folder = tmp_path / "llava-med"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llava_mistral"}')
    with pytest.raises(ModelUnavailableError, match="LlavaForConditionalGeneration folder"):
        load_vlm(str(folder), device="cpu")


def test_render_prompt_turns_thinking_off_where_the_template_reads_it(vlm):
    from radaudit.models.vlm import render_prompt

    _, processor, _ = vlm
    plain = render_prompt(processor, "Is there an effusion?")
    saved = processor.chat_template
    try:  # a Qwen3-style template: thinking unless told otherwise
        processor.chat_template = saved + "{% if enable_thinking is defined and not enable_thinking %}<NOTHINK>" \
                                          "{% else %}<THINK>{% endif %}"
        assert render_prompt(processor, "Is there an effusion?") == plain + "<NOTHINK>"
    finally:
        processor.chat_template = saved
    assert render_prompt(processor, "Is there an effusion?") == plain  # other templates render as before


def test_lora_adapter_changes_the_twin_and_has_its_own_cache_entries(tmp_path, images):
    """decoding_erasure's report_adapter path (issue 19): the adapter is applied, and its generations are
    never served from the base model's cache (before the fix they were: same name_or_path, same key)."""
    peft = pytest.importorskip("peft")
    from radaudit.audits.decoding_erasure.study import _load_report_vlm
    from radaudit.models.cache import ContentCache
    from radaudit.models.vlm import adapter_fingerprint, first_token_scores

    base = BUILDERS["llava"](tmp_path / "llava")
    _, model = load_vlm(str(base), device="cpu")
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(model, cfg).save_pretrained(tmp_path / "adapter")
    p0, m0 = _load_report_vlm(str(base), None, None)
    p1, m1 = _load_report_vlm(str(base), str(tmp_path / "adapter"), None)
    s0 = first_token_scores(p0, m0, ["Describe the image."], [images[0]]).filter(like="logit_").to_numpy()
    s1 = first_token_scores(p1, m1, ["Describe the image."], [images[0]]).filter(like="logit_").to_numpy()
    assert not np.allclose(s0, s1)  # the adapter is applied
    with ContentCache(tmp_path / "cache") as store:
        vlm_generate(p0, m0, ["Describe the image."], [images[0]], "greedy", max_new_tokens=3, cache=store)
        again = vlm_generate(p1, m1, ["Describe the image."], [images[0]], "greedy", max_new_tokens=3, cache=store)
    assert not again["cached"].any()
    assert adapter_fingerprint(m1) == adapter_fingerprint(m1) and len(adapter_fingerprint(m1)) == 16
