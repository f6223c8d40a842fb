"""What every twin shares: a byte-level BPE tokenizer trained here on a few sentences, and how a twin is saved."""

from __future__ import annotations

__all__ = ["CORPUS", "save_twin", "tokenizer"]

CORPUS = ["Yes", "No", "yes", "no", "Yes.", "No.", "yes no Yes No",
          "Is there a pleural effusion? Answer yes or no.", "Does the patient have any condition?",
          "Based on the image only, is the heart enlarged?", "The lungs are clear. No pneumothorax.",
          "user assistant system USER ASSISTANT"]


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


def save_twin(folder, model_class, config, eos_id: int, pad_id: int, processor=None):
    """Build ``model_class(config)`` with seed 0, set its generation eos/pad ids, save it (and the processor)."""
    import torch

    torch.manual_seed(0)
    model = model_class(config)
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    model.save_pretrained(folder)
    if processor is not None:
        processor.save_pretrained(folder)
    return folder
