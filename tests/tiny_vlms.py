"""Tiny random vision-language models for tests: a LLaVA-style model (tiny CLIP vision tower + tiny
Llama) and a Qwen2-VL-style model, with processors built offline (small image processors, a byte-level
BPE tokenizer trained here, chat templates), saved with ``save_pretrained`` so they reload through
``radaudit.models.vlm.load_vlm``. Random weights: for plumbing and invariants, not answers.
Importable from any test as ``import tiny_vlms`` (``tests/`` is on sys.path via its conftest).
"""

from __future__ import annotations

import torch

CORPUS = ["Yes", "No", "yes", "no", "Yes.", "No.", "yes no Yes No",
          "Is there a pleural effusion? Answer yes or no.", "Does the patient have any condition?",
          "Based on the image only, is the heart enlarged?", "The lungs are clear. No pneumothorax.",
          "user assistant system USER ASSISTANT"]

LLAVA_TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{{ '\\n' }}{% elif c['type'] == 'text' %}"
    "{{ c['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}")

QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}{{ '\\n' }}{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}")


def tokenizer(specials: list[str], bos: str | None, **tokens):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=360, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 10, trainer)
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, tok.token_to_id(bos))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, **({"bos_token": bos} if bos else {}), **tokens)


def build_llava(folder):
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tok = tokenizer(["<pad>", "<s>", "</s>", "<image>"], "<s>", eos_token="</s>", pad_token="<pad>",
                     extra_special_tokens={"image_token": "<image>"})
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                       image_size=28, patch_size=14, projection_dim=16),
        text_config=LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                bos_token_id=ids("<s>"), eos_token_id=ids("</s>"), pad_token_id=ids("<pad>")),
        image_token_index=ids("<image>"), image_seq_length=4, vision_feature_select_strategy="default",
        vision_feature_layer=-2)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids("</s>")
    model.generation_config.pad_token_id = ids("<pad>")
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_qwen2vl(folder):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                "<|video_pad|>"]
    tok = tokenizer(specials, None, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = tok.convert_tokens_to_ids
    config = Qwen2VLConfig(
        vision_config=dict(depth=2, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
                         bos_token_id=None, eos_token_id=ids("<|im_end|>"), pad_token_id=ids("<|endoftext|>")),
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids("<|im_end|>")
    model.generation_config.pad_token_id = ids("<|endoftext|>")
    model.save_pretrained(folder)
    # Qwen2VLProcessor(...) cannot be built (nor saved) without torchvision: its video processor
    # needs it. Save the parts the way hub checkpoints ship them; load_vlm reassembles them.
    tok.save_pretrained(folder)
    Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 56).save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(QWEN_TEMPLATE, encoding="utf-8")
    (folder / "processor_config.json").write_text('{"processor_class": "Qwen2VLProcessor"}\n', encoding="utf-8")
    return folder


BUILDERS = {"llava": build_llava, "qwen2vl": build_qwen2vl}
