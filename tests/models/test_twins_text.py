"""The text twins (:mod:`radaudit.models.twins.text`): the class, tokenizer class and chat-template behaviour of the
real checkpoints, loaded through the lab's own loaders, offline."""

from __future__ import annotations

import json

import pytest

from radaudit.models.twins import twin_folder


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    root = tmp_path_factory.mktemp("twins")
    return {hub: twin_folder(hub, root) for hub in
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "Qwen/Qwen3-235B-A22B", "roberta-large")}


def test_r1_distill_twin_opens_a_think_block_and_generates(twins):
    from radaudit.models.backends import TransformersBackend
    from radaudit.models.generate import generate

    folder, cls = twins["deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"]
    assert cls == "Qwen2ForCausalLM"
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "LlamaTokenizerFast"
    backend = TransformersBackend(str(folder), device="cpu")
    text, ids, templated = backend.render("Is there an effusion?")
    assert templated and text == "<｜begin▁of▁sentence｜><｜User｜>Is there an effusion?<｜Assistant｜><think>\n"
    tok = backend.tokenizer
    assert type(tok).__name__ == "Qwen2Tokenizer"  # what transformers 5 makes of the hub's LlamaTokenizerFast entry
    assert tok("x")["input_ids"][0] == tok.bos_token_id  # the BOS the hub tokenizer prepends
    prompt = ("Rewrite the ground-truth chest X-ray report below by modifying only one targeted aspect. "
              "Small left pleural effusion. The lungs are clear.")
    assert len(prompt) / len(tok(prompt)["input_ids"]) > 2.5  # merges, not one token per byte
    (gen,) = generate(backend, [prompt], "greedy", max_new_tokens=5)
    assert 1 <= len(gen.token_ids) <= 5


def test_qwen3_moe_twin_reads_enable_thinking(twins):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from radaudit.models.backends import template_kwargs

    folder, cls = twins["Qwen/Qwen3-235B-A22B"]
    assert cls == "Qwen3MoeForCausalLM"
    tok = AutoTokenizer.from_pretrained(folder)
    assert type(tok).__name__ == "Qwen2Tokenizer" and template_kwargs(tok) == {"enable_thinking": False}
    msgs = [{"role": "user", "content": "hi"}]
    off = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    on = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=True)
    assert off == on + "<think>\n\n</think>\n\n" and on.endswith("<|im_start|>assistant\n")
    model = AutoModelForCausalLM.from_pretrained(folder)
    ids = tok.convert_tokens_to_ids
    assert model.config.num_experts == 4 and model.generation_config.eos_token_id == [ids("<|im_end|>"), ids("<|endoftext|>")]


def test_roberta_twin_runs_bertscore_at_the_papers_layer(twins):
    from radaudit.metrics import build_metric

    folder, cls = twins["roberta-large"]
    assert cls == "RobertaModel"
    bs = build_metric("bertscore", model=str(folder), num_layers=17)  # roberta-large's bert-score layer exists
    assert type(bs.tokenizer).__name__ == "RobertaTokenizer" and bs.max_length == 512
    assert bs.tokenizer.convert_tokens_to_ids(["<s>", "<pad>", "</s>"]) == [0, 1, 2]
    res = bs.compute(["The lungs are clear.", "Small effusion."], ["The lungs are clear.", "No effusion."])
    assert res.per_sample[0] == pytest.approx(1.0, abs=1e-6) and res.per_sample[1] < 1.0
