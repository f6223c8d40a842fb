"""Tiny models for the model-layer tests, built offline from transformers configs and saved once per session.

Everything here is random weights and a made-up vocabulary: the tests check plumbing (loading through
the real ``from_pretrained`` path, batching, seeding, caching), never model quality.

Builders (plain functions, reusable from other test modules)::

    build_tiny_tokenizer()                    -> a fast tokenizer (WordLevel, ~110 radiology words)
    build_tiny_causal_lm(folder, ...)         -> save a 2-layer Llama + tokenizer to ``folder``

Fixtures (session scope): ``tiny_causal_lm`` (the saved folder path), ``tiny_causal_lm_leaky_defaults``
(the same weights with a ``generation_config.json`` full of non-neutral values),
``tiny_causal_lm_pinnable_defaults`` (the same with only knobs a GenerationConfig can pin).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TINY_WORDS = (
    "no acute cardiopulmonary process the lungs are clear heart size is normal there a small left right pleural "
    "effusion lower upper lobe opacity pneumothorax edema consolidation mild moderate severe stable unchanged "
    "compared with prior study findings impression cardiomegaly atelectasis bibasilar patchy airspace disease "
    "support devices tube catheter in standard position osseous structures intact degenerative changes spine of "
    "and without mediastinal contour within limits silhouette pulmonary vascular congestion interstitial markings "
    "nodule mass granuloma calcified hilar enlarged trachea midline sternotomy wires pacemaker leads chest "
    "radiograph frontal lateral views male female patient history shortness breath cough fever evaluate for "
    "pneumonia aicd mastectomy . ,"
).split()

SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3



def build_tiny_tokenizer() -> Any:
    """A word-level fast tokenizer: whitespace split, BOS prepended, specials <pad> <s> </s> <unk>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for w in TINY_WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", BOS_ID)])
    tk.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")


def build_tiny_causal_lm(folder: Path, *, seed: int = 0, generation_defaults: dict[str, Any] | None = None,
                         chat_template: str | None = None) -> Path:
    """Save a tiny random Llama causal LM (2 layers, hidden 32) and its tokenizer to ``folder``.

    ``generation_defaults`` are written into the saved ``generation_config.json`` (as a checkpoint
    would ship them). The same ``seed`` gives the same weights.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tok = build_tiny_tokenizer()
    if chat_template is not None:
        tok.chat_template = chat_template
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
                      initializer_range=0.2, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config = GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
                                               **(generation_defaults or {}))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


#: Non-neutral generation defaults a checkpoint might ship (all would change outputs if they leaked).
LEAKY_DEFAULTS: dict[str, Any] = {
    "do_sample": True, "top_k": 5, "top_p": 0.5, "temperature": 0.2, "repetition_penalty": 1.8,
    "no_repeat_ngram_size": 1, "max_new_tokens": 3, "num_beams": 2, "min_new_tokens": 4,
}


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of a tiny random Llama causal LM + word-level tokenizer (loads with AutoModelForCausalLM)."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_causal_lm") / "model")


@pytest.fixture(scope="session")
def tiny_causal_lm_pinnable_defaults(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same weights as ``tiny_causal_lm`` with LEAKY_DEFAULTS in its generation_config.json."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_causal_lm_pinnable") / "model",
                                generation_defaults=LEAKY_DEFAULTS)


@pytest.fixture(scope="session")
def tiny_causal_lm_leaky_defaults(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As above plus defaults whose neutral value is None (only hiding the checkpoint config stops them)."""
    extra = {"suppress_tokens": [4, 5, 6, 7, 8, 9, 10, 11], "forced_bos_token_id": 12}
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_causal_lm_leaky") / "model",
                                generation_defaults={**LEAKY_DEFAULTS, **extra})
