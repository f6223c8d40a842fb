"""The two generation engines build the same prompts and parse the same outputs (issue 23).

vLLM needs a GPU, so its engine is the recorder of ``tests/fake_vllm.py``: the real
:class:`~radaudit.models.backends.VLLMBackend` code runs (rendering, ``SamplingParams``, EOS cut,
decoding) and the recorder captures what would reach ``vllm.LLM``. The transformers engine runs for
real up to ``model.generate``, which is replaced by a stand-in answering with the *same* canned
token ids, so everything after the model (the cut at EOS, decoding, JSON parsing, verification) is
compared on identical inputs. Models: the tiny Llama of ``conftest.py`` (no chat template, as the
decoding_erasure demo model) and the twins of Qwen3-235B-A22B (the Qwen3 chat template, which reads
``enable_thinking``) and of DeepSeek-R1-Distill-Qwen-7B (metric_metaeval's rewriter).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fake_vllm

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from radaudit.models.backends import (  # noqa: E402
    TransformersBackend,
    VLLMBackend,
    eos_token_ids,
    get_backend,
)
from radaudit.models.cache import CACHE_ENV, ContentCache, content_key  # noqa: E402
from radaudit.models.generate import generate  # noqa: E402

REPORTS = ["Small left pleural effusion. No pneumothorax.", "The lungs are clear. Heart size is normal.",
           "Right lower lobe opacity may represent pneumonia."]
THINK_OFF = "<|im_start|>assistant\n<think>\n\n</think>\n\n"  # Qwen3 template, enable_thinking=False


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory) -> Path:
    from radaudit.models.twins.text import build_qwen3_moe

    return build_qwen3_moe(tmp_path_factory.mktemp("qwen3") / "model")


@pytest.fixture(scope="module")
def r1(tmp_path_factory) -> Path:
    from radaudit.models.twins.text import build_qwen2_r1

    return build_qwen2_r1(tmp_path_factory.mktemp("r1") / "model")


# --- one answer book for both engines -----------------------------------------------------------------

def answer_book(tokenizer, answer_for):
    """``prompt ids -> answer ids``: the prompt is decoded (special tokens kept) and ``answer_for(text)``
    gives the answer text, encoded and ended with the tokenizer's EOS (``None``: no EOS, the length limit)."""
    eos = tokenizer.eos_token_id

    def answer(prompt_ids) -> list[int]:
        text, end = answer_for(tokenizer.decode(list(prompt_ids), skip_special_tokens=False))
        return list(tokenizer(text, add_special_tokens=False)["input_ids"]) + ([eos] if end else [])

    return answer


def canned_hf(monkeypatch, model_class, answer) -> list[list[int]]:
    """Replace ``model_class.generate`` by a stand-in returning ``prompt + answer(prompt)`` per row (cut to
    ``max_new_tokens``, padded with the pad id), as ``model.generate`` returns them; returns the unpadded
    prompt ids it was given, in call order."""
    seen: list[list[int]] = []

    def fake_generate(self, input_ids, attention_mask, generation_config, logits_processor=None, **kw):
        mnt = generation_config.max_new_tokens
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            prompt = [t for t, m in zip(ids, mask) if m]
            seen.append(prompt)
            rows.append(answer(prompt)[:mnt])
        width = max(len(r) for r in rows)
        pad = generation_config.pad_token_id
        new = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
        return torch.cat([input_ids, new], dim=1)

    monkeypatch.setattr(model_class, "generate", fake_generate)
    return seen


def canned_vllm(monkeypatch, answer) -> fake_vllm.Recorder:
    """The fake vLLM, answering each prompt with ``answer(prompt ids)`` (finish reason as vLLM would give it)."""
    def respond(prompt, params):
        ids = answer(prompt["prompt_token_ids"])[: params.kw["max_tokens"]]
        stop = params.kw.get("stop_token_ids") or []
        return fake_vllm.Canned(ids, "stop" if ids and ids[-1] in stop else "length")

    return fake_vllm.install(monkeypatch, respond=respond)


def without_engine(gens) -> list[dict]:
    return [{k: v for k, v in g.to_dict().items() if k != "backend"} for g in gens]


# --- prompts --------------------------------------------------------------------------------------------

def test_both_engines_render_the_same_text_and_token_ids_with_thinking_off(qwen3, monkeypatch):
    fake_vllm.install(monkeypatch)
    hf, vl = TransformersBackend(str(qwen3), device="cpu"), VLLMBackend(str(qwen3))
    prompts = [REPORTS[0], [{"role": "system", "content": "You are a radiologist."},
                            {"role": "user", "content": REPORTS[1]}]]
    for p in prompts:
        text, ids, templated = hf.render(p)
        assert (text, ids, templated) == vl.render(p)
        assert templated and text.endswith(THINK_OFF)  # Qwen3 template read enable_thinking=False
        assert ids == hf.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert hf.render(REPORTS[2], chat_template=False) == vl.render(REPORTS[2], chat_template=False)
    assert hf.render(REPORTS[2], chat_template=False)[0] == REPORTS[2]
    # generation stops at the same ids: <|im_end|> and <|endoftext|> (the checkpoint's generation_config)
    tok = hf.tokenizer
    assert vl._eos() == eos_token_ids(hf.loaded.model, tok) == [tok.convert_tokens_to_ids("<|im_end|>"),
                                                                 tok.convert_tokens_to_ids("<|endoftext|>")]


def test_the_ids_each_engine_is_given_are_the_rendered_ones(qwen3, monkeypatch):
    from transformers import Qwen3MoeForCausalLM

    book = answer_book(TransformersBackend(str(qwen3)).tokenizer, lambda text: ("no", True))
    seen_hf = canned_hf(monkeypatch, Qwen3MoeForCausalLM, book)
    rec = canned_vllm(monkeypatch, book)
    hf_gens = generate(str(qwen3), REPORTS, "greedy", max_new_tokens=8, batch_size=2, device="cpu")
    vl_gens = generate(str(qwen3), REPORTS, "greedy", max_new_tokens=8, batch_size=2, backend="vllm")
    rendered = [TransformersBackend(str(qwen3)).render(r)[1] for r in REPORTS]
    assert sorted(seen_hf) == sorted(p["prompt_token_ids"] for p in rec.prompts) == sorted(rendered)
    assert all(THINK_OFF in fake_vllm_text(qwen3, p["prompt_token_ids"]) for p in rec.prompts)
    assert without_engine(hf_gens) == without_engine(vl_gens)
    assert [g.backend for g in hf_gens + vl_gens] == ["transformers"] * 3 + ["vllm"] * 3


def fake_vllm_text(folder, ids) -> str:
    return TransformersBackend(str(folder)).tokenizer.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("strategy", ["greedy", "nucleus"])
def test_the_same_token_ids_give_the_same_records(tiny_causal_lm, monkeypatch, strategy):
    """EOS mid-answer (cut after it, ``eos``), and no EOS (``length``): both engines record the same rows."""
    from transformers import LlamaForCausalLM

    def answer_for(text):
        if "effusion" in text:
            return "small left pleural effusion", True
        return "the lungs are clear heart size is normal no acute", False  # longer than the limit

    tok = TransformersBackend(str(tiny_causal_lm)).tokenizer
    book = answer_book(tok, answer_for)
    canned_hf(monkeypatch, LlamaForCausalLM, book)
    rec = canned_vllm(monkeypatch, book)
    prompts = ["heart size is normal there is a small left pleural effusion", "the lungs are clear"]
    hf = generate(str(tiny_causal_lm), prompts, strategy, seeds=[7, 8], max_new_tokens=6, device="cpu")
    vl = generate(str(tiny_causal_lm), prompts, strategy, seeds=[7, 8], max_new_tokens=6, backend="vllm")
    assert without_engine(hf) == without_engine(vl)
    assert [(g.text, g.finish_reason, g.n_new_tokens) for g in vl] == [
        ("small left pleural effusion", "eos", 5), ("the lungs are clear heart size", "length", 6)]
    assert {p.kw["seed"] for p in rec.params} == ({7, 8} if strategy == "nucleus" else {None})


# --- the cache: one key for both engines -----------------------------------------------------------------

def test_a_generation_cached_by_one_engine_is_served_to_the_other(tiny_causal_lm, tmp_path, monkeypatch):
    rec = fake_vllm.install(monkeypatch)
    prompts = ["the lungs are clear", "no acute"]
    with ContentCache(tmp_path / "c") as cache:
        first = generate(str(tiny_causal_lm), prompts, "nucleus", seeds=[3, 4], max_new_tokens=5, cache=cache,
                         backend="transformers", device="cpu")
        vl = get_backend(str(tiny_causal_lm), "vllm")
        second = generate(vl, prompts, "nucleus", seeds=[3, 4], max_new_tokens=5, cache=cache)
        assert rec.n_requests == 0 and rec.init_calls == [] and vl.n_calls == 0  # no engine was even started
        assert all(g.cached for g in second) and [g.key for g in second] == [g.key for g in first]
        assert without_engine(second) == without_engine(first)
        assert {g.backend for g in second} == {"transformers"}  # provenance: who generated it
        parts = cache.parts(first[0].key)
        assert "backend" not in parts and content_key(parts) == first[0].key
        # the other way round: vLLM first (the recorder answers), transformers is served without loading the model
        third = generate(vl, ["chest radiograph"], "greedy", max_new_tokens=5, cache=cache)
        assert rec.n_requests == 1 and third[0].backend == "vllm"
        tf = TransformersBackend(str(tiny_causal_lm), device="cpu")
        again = generate(tf, ["chest radiograph"], "greedy", max_new_tokens=5, cache=cache)
        assert again[0].cached and tf._loaded is None and again[0].token_ids == third[0].token_ids
    # a different dtype is a different entry: bf16 is not served float32's generations
    with ContentCache(tmp_path / "c") as cache:
        bf16 = generate(get_backend(str(tiny_causal_lm), "vllm", dtype="bf16"), prompts, "nucleus", seeds=[3, 4],
                        max_new_tokens=5, cache=cache)
        assert not any(g.cached for g in bf16) and rec.init_calls[-1]["dtype"] == "bfloat16"
    assert rec.init_calls[0]["dtype"] == "float32"  # dtype None: float32 on both engines, as the key says


# --- what each experiment parses ---------------------------------------------------------------------------

DECOMPOSITION = {"findings": [{"name": "pleural effusion", "present": "yes",
                               "attributes": {"location": "left", "size": None, "morphology": None,
                                              "severity": "small", "quantity": None, "temporal": None}},
                              {"name": "pneumothorax", "present": "no"}]}


def test_atomic_decompositions_parse_the_same_on_both_engines(qwen3, monkeypatch):
    from transformers import Qwen3MoeForCausalLM

    from radaudit.atomic import greedy_generator, make_backend

    def answer_for(text):
        if REPORTS[0] in text:
            return json.dumps(DECOMPOSITION), True
        if REPORTS[1] in text:
            return '{"findings": []}', True
        return "The report says {not json", True  # unparseable: retried, then counted

    book = answer_book(TransformersBackend(str(qwen3)).tokenizer, answer_for)
    canned_hf(monkeypatch, Qwen3MoeForCausalLM, book)
    rec = canned_vllm(monkeypatch, book)
    facts = {}
    for engine in ("hf", "vllm"):
        fn = greedy_generator(str(qwen3), backend=engine, max_new_tokens=128, batch_size=2, device="cpu")
        dec, _ = make_backend("llm", generate_fn=fn, batched=True, max_retries=1)
        facts[engine] = dec.decompose(REPORTS)
    assert facts["hf"] == facts["vllm"]
    ok, empty, bad = facts["vllm"]
    assert ok.ok and [(f.name, f.present) for f in ok.findings] == [("pleural effusion", "yes"), ("pneumothorax", "no")]
    assert ok.findings[0].attributes.location == "left"
    assert empty.ok and empty.findings == ()
    assert not bad.ok and bad.n_unparseable == 1 and bad.attempts == 2
    assert rec.params[0].kw["temperature"] == 0.0 and all(THINK_OFF in fake_vllm_text(qwen3, p["prompt_token_ids"])
                                                          for p in rec.prompts)


def test_metric_metaeval_rewrites_parse_the_same_on_both_engines(r1, monkeypatch):
    from transformers import Qwen2ForCausalLM

    from radaudit.perturb.engine import RewriteTask
    from radaudit.perturb.llm import PAPER_LLM, LLMEngine, generator_from_model

    def answer_for(text):
        if "Ground-truth report:\n" + REPORTS[0] in text:  # a reasoning trace with braces first, as R1 writes
            out = {"rewritten_report": REPORTS[0].replace("left", "right"), "original_span": "left",
                   "rewritten_span": "right", "explanation": "The side is flipped."}
            return "the {side} matters</think>\n" + json.dumps(out), True
        return "I cannot do this {not json", True

    book = answer_book(TransformersBackend(str(r1)).tokenizer, answer_for)
    canned_hf(monkeypatch, Qwen2ForCausalLM, book)
    rec = canned_vllm(monkeypatch, book)
    tasks = [RewriteTask(f"s{i}", "handwritten", text, "location", "significant", "inaccuracy", 0)
             for i, text in enumerate(REPORTS[:2])]
    outcomes = {}
    for engine in ("transformers", "vllm"):
        gen = generator_from_model(str(r1), strategy=PAPER_LLM["strategy"], max_new_tokens=256, seed=0, batch_size=4,
                                   backend=engine)
        outcomes[engine] = LLMEngine(gen, batched=True, model="r1", max_retries=0).rewrite(tasks)
    assert outcomes["transformers"] == outcomes["vllm"]
    ok, bad = outcomes["vllm"]
    assert ok.status == "ok" and ok.pair.rewritten == "Small right pleural effusion. No pneumothorax."
    assert bad.status == "unparseable"
    assert {p.kw["seed"] for p in rec.params} == {0} and rec.params[0].kw["temperature"] == 0.6
    assert all(fake_vllm_text(r1, p["prompt_token_ids"]).endswith("<｜Assistant｜><think>\n") for p in rec.prompts)


# --- each experiment routes backend: vllm to the engine -------------------------------------------------------

def test_decoding_erasure_demo_reports_are_the_same_table_on_both_engines(tiny_causal_lm, monkeypatch):
    from transformers import LlamaForCausalLM

    from radaudit.audits.decoding_erasure.models import generate_reports

    tok = TransformersBackend(str(tiny_causal_lm)).tokenizer
    book = answer_book(tok, lambda text: ("no acute cardiopulmonary process", True))
    canned_hf(monkeypatch, LlamaForCausalLM, book)
    rec = canned_vllm(monkeypatch, book)
    prompts = ["female patient chest radiograph", "male patient shortness of breath"]
    hf = generate_reports(tiny_causal_lm, prompts, ["greedy", "nucleus"], seeds=[1, 2], max_new_tokens=8)
    vl = generate_reports(tiny_causal_lm, prompts, ["greedy", "nucleus"], seeds=[1, 2], max_new_tokens=8,
                          backend="vllm")
    assert hf.equals(vl) and set(vl["text"]) == {"no acute cardiopulmonary process"}
    assert len(rec.init_calls) == 1 and rec.init_calls[0]["model"] == str(tiny_causal_lm)  # one engine, both strategies
    sent = sorted(p["prompt_token_ids"] for p in rec.prompts[:2])  # longest first; no chat template, as the demo
    assert sent == sorted(tok(p)["input_ids"] for p in prompts)


def test_metric_metaeval_make_engine_generates_with_params_backend(r1, monkeypatch, tmp_path):
    from radaudit.audits.metric_metaeval import Params, make_engine
    from radaudit.perturb.engine import RewriteTask

    rec = fake_vllm.install(monkeypatch)
    P = Params(engine="llm", llm_model=str(r1), backend="vllm", llm_max_new_tokens=16, llm_dtype="bf16")
    eng = make_engine(P, cache=tmp_path / "c")
    eng.max_retries = 0
    out = eng.rewrite([RewriteTask("s0", "handwritten", REPORTS[0], "location", "significant", "inaccuracy", 0)])
    assert [o.status for o in out] == ["unparseable"] and rec.n_requests == 1
    assert rec.init_calls[0]["model"] == str(r1) and rec.init_calls[0]["dtype"] == "bfloat16"


def test_atomic_facts_backend_vllm_generates_on_vllm(qwen3, monkeypatch, tmp_path):
    from radaudit.audits.atomic_facts import Params
    from radaudit.audits.atomic_facts.study import atomimed_options

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    rec = fake_vllm.install(monkeypatch)
    P = Params(backend="vllm", llm_model=str(qwen3), llm_max_new_tokens=16, max_retries=0, llm_dtype="bf16")
    assert (P.backend, P.llm_engine) == ("llm", "vllm")
    opts = atomimed_options(P)
    facts = opts["decomposer"].decompose([REPORTS[0]])
    assert not facts[0].ok and rec.n_requests == 1  # the recorder's canned ids are no decomposition: counted
    assert rec.init_calls[0]["model"] == str(qwen3) and rec.init_calls[0]["dtype"] == "bfloat16"
