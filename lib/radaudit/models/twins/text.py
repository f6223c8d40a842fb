"""Twins of the language models and text encoders the paper presets name (rewriters, decomposers, BERTScore backbones).

Each twin has the real checkpoint's transformers class, chat template and tokenizer class, with a byte-level BPE
vocabulary of 2000 trained here on a few sentences in the register of the lab's prompts (:data:`TEXT_CORPUS`) and
layers a few units wide:

- ``deepseek-ai/DeepSeek-R1-Distill-Qwen-7B`` (metric_metaeval's rewriter): ``Qwen2ForCausalLM``; the R1-distill chat
  template (``<｜User｜>`` / ``<｜Assistant｜>`` turns after the BOS, a generation prompt that opens ``<think>\\n`` so the
  model reasons first, earlier assistant turns cut after ``</think>``); ``tokenizer_config.json`` names
  ``LlamaTokenizerFast`` over a byte-level ``tokenizer.json``, as the hub checkpoint does (transformers 5 notices the
  mismatch and loads the tokenizer of the config's model type, ``Qwen2Tokenizer``: the twin goes through that same
  path); the BOS prepended by the tokenizer; EOS ``<｜end▁of▁sentence｜>``.
- ``Qwen/Qwen3-235B-A22B`` (atomic_facts' decomposer and reader): ``Qwen3MoeForCausalLM`` (4 experts, 2 per token);
  ``Qwen2Tokenizer``; the Qwen3 chat template, which reads ``enable_thinking`` (``false`` appends the empty
  ``<think>\\n\\n</think>\\n\\n`` block; :func:`radaudit.models.backends.template_kwargs` passes it); generation stops at
  ``<|im_end|>`` or ``<|endoftext|>``.
- ``roberta-large`` (BERTScore's English default, bert-score's layer 17): ``RobertaModel``, the class
  :func:`radaudit.models.resolver.load_text_encoder` (``AutoModel``) loads, with all 24 layers (so the paper's layer
  exists in the twin) 16 units wide; ``RobertaTokenizer`` with ``<s>``/``<pad>``/``</s>``/``<unk>`` at ids 0-3 and
  ``model_max_length`` 512.

A twin's outputs are noise: a rewrite or decomposition it writes never matches the JSON schema, which a rehearsal
counts and reports as failures (that path has to work too).
"""

from __future__ import annotations

import json
from pathlib import Path

from radaudit.models.twins.base import CORPUS
from radaudit.models.twins.base import save_twin as _save

__all__ = ["BUILDERS", "HUB_IDS", "MODEL_TYPES", "QWEN3_TEMPLATE", "R1_TEMPLATE", "build_qwen2_r1", "build_qwen3_moe",
           "build_roberta"]

#: DeepSeek-R1-Distill's chat template (tool turns left out): system prompt after the BOS, ``<｜User｜>`` /
#: ``<｜Assistant｜>`` turns, an assistant turn's reasoning cut at its last ``</think>``, and a generation prompt
#: that opens the ``<think>`` block.
R1_TEMPLATE = (
    "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
    "{% set ns = namespace(system_prompt='') %}{% for m in messages %}{% if m['role'] == 'system' %}"
    "{% set ns.system_prompt = m['content'] %}{% endif %}{% endfor %}{{ bos_token }}{{ ns.system_prompt }}"
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ '<｜User｜>' + m['content'] }}"
    "{% elif m['role'] == 'assistant' %}{% set content = m['content'] %}{% if '</think>' in content %}"
    "{% set content = content.split('</think>')[-1] %}{% endif %}{{ '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<｜Assistant｜><think>\\n' }}{% endif %}")

#: Qwen3's chat template (tool calls left out): ChatML turns; an assistant turn's reasoning cut at its last
#: ``</think>``; ``enable_thinking=false`` closes an empty think block after the generation prompt.
QWEN3_TEMPLATE = (
    "{% for m in messages %}{% set content = m['content'] %}{% if m['role'] == 'assistant' and '</think>' in content %}"
    "{% set content = content.split('</think>')[-1].lstrip('\\n') %}{% endif %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + content + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}"
    "{% endif %}")

_THINK = ["<think>", "</think>"]  # added, not special, in both Qwen-based tokenizers (decoded as text)

#: Text in the register of the lab's prompts and reports: the BPE merges it yields keep prompts a few characters per
#: token, as a real tokenizer does (one token per byte would make a rehearsal's prompts several times longer).
TEXT_CORPUS = [
    "You are an experienced radiologist helping to build a benchmark of radiology report pairs.",
    "You are an expert radiologist. Decompose the radiology report below into atomic clinical facts.",
    "Rewrite the ground-truth chest X-ray report below by modifying only one targeted aspect, and keep every other "
    "part of the report word for word.",
    "Targeted aspect: location, severity, description, negation, modality, size and distance, comparison, "
    "contradiction, uncertainty, terminology, noise, stylistic.",
    "Error type: omission, fabrication, inaccuracy. Clinical significance: clinically significant or insignificant; "
    "the change may plausibly affect downstream clinical decisions (diagnosis, treatment or follow-up).",
    "Answer with only a JSON object with these keys: the full rewritten report; the exact text of the ground-truth "
    "report that you changed; one or two sentences on what changed and why.",
    'Answer with only a JSON object of this form: {"findings": [{"name": "pleural effusion", "present": "yes", '
    '"attributes": {"location": "left", "size": null, "morphology": null, "severity": "small", "quantity": null, '
    '"temporal": null}}]}',
    "List every finding the report mentions, whether it is present or explicitly absent. For each finding give a "
    "short normalised clinical entity, without location, size, severity or change words.",
    "Read the report and answer each question with yes or no. Questions: Is there a pleural effusion? Is the "
    "finding described with the same location, size, morphology, severity, quantity and temporal change?",
    "Your previous answer was rejected: it is not valid JSON. Answer again with only a JSON value that matches this "
    "JSON schema, and nothing else: properties, required, type, string, array, object, title, description.",
    "FINDINGS: The lungs are clear. There is no focal consolidation, pleural effusion or pneumothorax. The heart is "
    "mildly enlarged. The cardiomediastinal silhouette is stable. IMPRESSION: No acute cardiopulmonary process.",
    "Small left pleural effusion with adjacent atelectasis. Moderate pulmonary edema has improved since the prior "
    "study. Right lower lobe opacity may represent pneumonia. Endotracheal tube terminates 4 cm above the carina.",
    "Multiple chronic appearing left-sided rib fractures. An irregular mass with spiculated margins in the right upper "
    "lobe, 3 cm. Bibasilar patchy ill-defined opacities. Severe cardiomegaly is unchanged.",
]


def _vocab_merges(specials: list[str], vocab_size: int = 2000) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE trained on :data:`~radaudit.models.twins.base.CORPUS` + :data:`TEXT_CORPUS` as
    ``(vocab, merges)`` (``specials`` first), for the tokenizer classes that are built from a vocabulary and merges."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator((CORPUS + TEXT_CORPUS) * 10, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


def _set_tokenizer_class(folder: Path, name: str) -> None:
    path = Path(folder) / "tokenizer_config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg["tokenizer_class"] = name
    path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build_qwen2_r1(folder):
    """A DeepSeek-R1-Distill-Qwen twin: ``Qwen2ForCausalLM`` with the R1 chat template (module docstring)."""
    from tokenizers import processors
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer

    bos, eos = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
    vocab, merges = _vocab_merges([bos, eos, "<｜User｜>", "<｜Assistant｜>"])
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=bos, eos_token=eos, pad_token=eos,
                         extra_special_tokens=["<｜User｜>", "<｜Assistant｜>"])
    tok.add_tokens(_THINK)
    # the hub tokenizer.json prepends the BOS (add_bos_token): as the real one, through its post-processor
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.convert_tokens_to_ids(bos))])
    tok.chat_template = R1_TEMPLATE
    ids = tok.convert_tokens_to_ids
    config = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
                         bos_token_id=ids(bos), eos_token_id=ids(eos))
    _save(folder, Qwen2ForCausalLM, config, ids(eos), ids(eos), tok)
    _set_tokenizer_class(folder, "LlamaTokenizerFast")  # as the hub checkpoint's tokenizer_config.json
    return folder


def build_qwen3_moe(folder):
    """A Qwen3-235B-A22B twin: ``Qwen3MoeForCausalLM`` (4 experts, top-2), ``Qwen2Tokenizer``, Qwen3 chat template."""
    from transformers import Qwen2Tokenizer, Qwen3MoeConfig, Qwen3MoeForCausalLM

    vocab, merges = _vocab_merges(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=None, eos_token="<|im_end|>",
                         pad_token="<|endoftext|>", extra_special_tokens=["<|im_start|>"])
    tok.add_tokens(_THINK)
    tok.chat_template = QWEN3_TEMPLATE
    tok.model_max_length = 131072
    ids = tok.convert_tokens_to_ids
    config = Qwen3MoeConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                            num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1, max_position_embeddings=8192,
                            tie_word_embeddings=False, bos_token_id=ids("<|endoftext|>"), eos_token_id=ids("<|im_end|>"))
    return _save(folder, Qwen3MoeForCausalLM, config, [ids("<|im_end|>"), ids("<|endoftext|>")], ids("<|endoftext|>"),
                 tok)


def build_roberta(folder):
    """A roberta-large twin for BERTScore: ``RobertaModel`` with 24 layers of 16 units, ``RobertaTokenizer``."""
    import torch
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    vocab, merges = _vocab_merges(["<s>", "<pad>", "</s>", "<unk>"])
    vocab["<mask>"] = len(vocab)
    tok = RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=512)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=24,
                           num_attention_heads=2, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
                           bos_token_id=0, eos_token_id=2)
    torch.manual_seed(0)
    RobertaModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


#: family -> builder ``build(folder) -> folder``.
BUILDERS: dict = {"qwen2_r1": build_qwen2_r1, "qwen3_moe": build_qwen3_moe, "roberta": build_roberta}
#: Hub ids of the paper presets -> family.
HUB_IDS: dict[str, str] = {"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "qwen2_r1", "Qwen/Qwen3-235B-A22B": "qwen3_moe",
                           "roberta-large": "roberta", "FacebookAI/roberta-large": "roberta"}
#: config.json ``model_type`` -> family (a local folder of one of these is twinned by its type).
MODEL_TYPES: dict[str, str] = {"qwen2": "qwen2_r1", "qwen3_moe": "qwen3_moe", "roberta": "roberta"}
