"""Twins of the vision-language models the paper presets name (LLaVA, Qwen2-VL, Qwen3-VL, Gemma 3, Mllama,
Janus): same transformers class and processor type, a few units wide."""

from __future__ import annotations

from pathlib import Path

from radaudit.models.twins.base import save_twin as _save
from radaudit.models.twins.base import tokenizer

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
    return _save(folder, LlavaForConditionalGeneration, config, ids("</s>"), ids("<pad>"), processor)


#: Qwen2-VL / Qwen3-VL special tokens (pad, chat turns, vision span, image / video placeholders).
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                 "<|video_pad|>"]


def _qwen_tokenizer(extra: tuple[str, ...] = ()):
    return tokenizer(QWEN_SPECIALS + list(extra), None, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def _qwen_vision_ids(ids) -> dict:
    return dict(image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
                vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))


def _save_qwen(folder, model_class, config, tok, image_processor, template: str, processor_class: str):
    """Save a Qwen-VL twin the way hub checkpoints ship it: model, tokenizer, image processor, chat template and
    ``processor_config.json`` naming the processor class. ``Qwen2VLProcessor(...)`` / ``Qwen3VLProcessor(...)``
    cannot be built (nor saved) without torchvision, which their video processor needs; load_vlm reassembles
    them without it (:func:`radaudit.models.vlm.load_vlm`)."""
    ids = tok.convert_tokens_to_ids
    _save(folder, model_class, config, ids("<|im_end|>"), ids("<|endoftext|>"))
    tok.save_pretrained(folder)
    image_processor.save_pretrained(folder)
    (Path(folder) / "chat_template.jinja").write_text(template, encoding="utf-8")
    (Path(folder) / "processor_config.json").write_text(f'{{"processor_class": "{processor_class}"}}\n', encoding="utf-8")
    return folder


def build_qwen2vl(folder):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = _qwen_tokenizer()
    ids = tok.convert_tokens_to_ids
    config = Qwen2VLConfig(
        vision_config=dict(depth=2, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
                         bos_token_id=None, eos_token_id=ids("<|im_end|>"), pad_token_id=ids("<|endoftext|>")),
        **_qwen_vision_ids(ids))
    return _save_qwen(folder, Qwen2VLForConditionalGeneration, config, tok,
                      Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 56), QWEN_TEMPLATE, "Qwen2VLProcessor")


#: Qwen3-VL-*-Instruct's chat template, rendered the same for system / user / assistant turns with text and images
#: (tools left out). Unlike Qwen2-VL's it adds no default system turn. It has no ``enable_thinking`` switch: the
#: Instruct checkpoints do not think (their generation prompt is ``<|im_start|>assistant\n``); the separate
#: ``*-Thinking`` checkpoints open ``<think>\n`` there, which no template variable turns off.
QWEN3VL_TEMPLATE = (
    "{%- if messages[0].role == 'system' %}<|im_start|>system\n{% if messages[0].content is string %}"
    "{{ messages[0].content }}{% else %}{% for c in messages[0].content %}{% if 'text' in c %}{{ c.text }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}{% if m.role == 'user' %}"
    "<|im_start|>user\n{% if m.content is string %}{{ m.content }}{% else %}{% for c in m.content %}"
    "{% if c.type == 'image' or 'image' in c or 'image_url' in c %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c.type == 'video' or 'video' in c %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in c %}{{ c.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% elif m.role == 'assistant' %}<|im_start|>assistant\n{% if m.content is string %}{{ m.content }}{% else %}"
    "{% for c in m.content %}{% if 'text' in c %}{{ c.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_qwen3vl(folder):
    """A Qwen3-VL twin (``Qwen3VLForConditionalGeneration``, processor ``Qwen3VLProcessor``): a 2-block vision tower
    with 16 px patches merged 2 x 2, one DeepStack feature, interleaved M-RoPE, a tiny Qwen3 text model (q/k norms,
    ``head_dim`` 16). Its image processor is Qwen3-VL's (16 px patches, mean/std 0.5) capped at 64 x 64 px, so a
    rehearsal image costs 4 tokens; the real one keeps a 512 x 512 image at 256."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = _qwen_tokenizer(("<think>", "</think>"))
    ids = tok.convert_tokens_to_ids
    config = Qwen3VLConfig(
        vision_config=dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2, patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]),
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "mrope_section": [4, 2, 2], "mrope_interleaved": True,
                                          "rope_theta": 5000000.0},
                         eos_token_id=ids("<|im_end|>"), pad_token_id=ids("<|endoftext|>")),
        **_qwen_vision_ids(ids))
    image_processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3,
                                               image_std=[0.5] * 3, min_pixels=32 * 32, max_pixels=64 * 64)
    return _save_qwen(folder, Qwen3VLForConditionalGeneration, config, tok, image_processor, QWEN3VL_TEMPLATE,
                      "Qwen3VLProcessor")


GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<start_of_image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")

MLLAMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|image|>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{% endif %}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n"
    "{% endif %}")


def build_gemma3(folder):
    """A Gemma-3 / MedGemma twin: SigLIP tower (28 px, 7 px patches) pooled to 4 image tokens, tiny Gemma-3 text model."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tok = tokenizer(["<pad>", "<eos>", "<bos>", "<start_of_image>", "<end_of_image>", "<image_soft_token>",
                     "<start_of_turn>", "<end_of_turn>"], "<bos>", eos_token="<eos>", pad_token="<pad>",
                    extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                          "image_token": "<image_soft_token>"})
    ids = tok.convert_tokens_to_ids
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessorPil(size={"height": 28, "width": 28}),
                                tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=4)
    config = Gemma3Config(
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                         sliding_window=64, bos_token_id=ids("<bos>"), eos_token_id=ids("<eos>"),
                         pad_token_id=ids("<pad>")),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                           image_size=28, patch_size=7),
        mm_tokens_per_image=4, boi_token_index=ids("<start_of_image>"), eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"))
    return _save(folder, Gemma3ForConditionalGeneration, config, ids("<eos>"), ids("<pad>"), processor)


def build_mllama(folder):
    """A Llama-3.2-Vision twin: a one-tile Mllama vision tower (28 px) read through one cross-attention layer."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaProcessor
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil

    tok = tokenizer(["<|finetune_right_pad_id|>", "<|begin_of_text|>", "<|eot_id|>", "<|image|>", "<|python_tag|>",
                     "<|start_header_id|>", "<|end_header_id|>"], "<|begin_of_text|>", eos_token="<|eot_id|>",
                    pad_token="<|finetune_right_pad_id|>")
    ids = tok.convert_tokens_to_ids
    processor = MllamaProcessor(image_processor=MllamaImageProcessorPil(size={"height": 28, "width": 28},
                                                                        max_image_tiles=1),
                                tokenizer=tok, chat_template=MLLAMA_TEMPLATE)
    config = MllamaConfig(
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_global_layers=1,
                           attention_heads=2, image_size=28, patch_size=14, max_num_tiles=1, vision_output_dim=32,
                           intermediate_layers_indices=[0], supported_aspect_ratios=[[1, 1]]),
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                         cross_attention_layers=[1], bos_token_id=ids("<|begin_of_text|>"),
                         eos_token_id=ids("<|eot_id|>"), pad_token_id=ids("<|finetune_right_pad_id|>")),
        image_token_index=ids("<|image|>"))
    return _save(folder, MllamaForConditionalGeneration, config, ids("<|eot_id|>"), ids("<|finetune_right_pad_id|>"),
                 processor)


JANUS_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}<|User|>: {% else %}<|Assistant|>: {% endif %}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image_placeholder>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n\n{% endfor %}{% if add_generation_prompt %}<|Assistant|>:{% endif %}")


def build_janus(folder):
    """A Janus-Pro twin (``JanusForConditionalGeneration``): SigLIP-style tower (28 px, 14 px patches, 4 image
    tokens), a tiny VQ-VAE (generation side, unused here) and a tiny Llama."""
    from transformers import JanusConfig, JanusForConditionalGeneration, JanusProcessor
    from transformers.models.janus.image_processing_pil_janus import JanusImageProcessorPil

    bos, eos, pad = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
    tok = tokenizer([pad, bos, eos, "<image_placeholder>", "<begin_of_image>", "<end_of_image>", "<|User|>",
                     "<|Assistant|>"], bos, eos_token=eos, pad_token=pad,
                    extra_special_tokens={"boi_token": "<begin_of_image>", "eoi_token": "<end_of_image>",
                                          "image_token": "<image_placeholder>"})
    ids = tok.convert_tokens_to_ids
    processor = JanusProcessor(image_processor=JanusImageProcessorPil(size={"height": 28, "width": 28}), tokenizer=tok,
                               chat_template=JANUS_TEMPLATE, num_image_tokens=4)
    config = JanusConfig(
        text_config=dict(model_type="llama", vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                         bos_token_id=ids(bos), eos_token_id=ids(eos), pad_token_id=ids(pad)),
        vision_config=dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, image_size=28, patch_size=14,
                           projection_dim=32, num_image_tokens=4, mlp_ratio=2.0),
        vq_config=dict(embed_dim=4, num_embeddings=16, latent_channels=4, base_channels=32, channel_multiplier=[1, 1],
                       num_res_blocks=1, num_patches=2, projection_dim=32, image_token_embed_dim=32),
        image_token_id=ids("<image_placeholder>"), tie_word_embeddings=False)  # tied, the twin repeats its last token
    return _save(folder, JanusForConditionalGeneration, config, ids(eos), ids(pad), processor)


#: family -> builder.
BUILDERS = {"llava": build_llava, "qwen2vl": build_qwen2vl, "qwen3vl": build_qwen3vl, "gemma3": build_gemma3,
            "mllama": build_mllama, "janus": build_janus}
#: Hub ids of the paper presets -> family. LLaVA-Med v1.5 is rehearsed as what it must be converted to
#: (:data:`radaudit.models.vlm.NEEDS_CONVERSION`): a LlavaForConditionalGeneration.
HUB_IDS: dict[str, str] = {
    "Qwen/Qwen2-VL-7B-Instruct": "qwen2vl", "llava-hf/llava-1.5-7b-hf": "llava",
    "meta-llama/Llama-3.2-11B-Vision-Instruct": "mllama", "google/medgemma-4b-it": "gemma3",
    "deepseek-community/Janus-Pro-7B": "janus", "microsoft/llava-med-v1.5-mistral-7b": "llava",
    "Qwen/Qwen3-VL-8B-Instruct": "qwen3vl",
}
#: config.json ``model_type`` -> family (a local folder of one of these is twinned by its type).
MODEL_TYPES = {"llava": "llava", "qwen2_vl": "qwen2vl", "qwen3_vl": "qwen3vl", "gemma3": "gemma3", "mllama": "mllama",
               "janus": "janus"}
