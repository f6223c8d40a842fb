"""Vision-language model (VLM) inference: loading, chat prompts, batched generation, first-token yes/no scores.

Used by the ``modality_shift`` experiment (Selective Modality Shifting, ``../shared/papers/003_*.txt``;
anchor: ``dsrestrepo/Selective-Modality-Shifting-SMS-``, see ``../shared/ANCHORS.md`` §4). Attention by
modality lives in :mod:`radaudit.models.attention`.

Loading (:mod:`radaudit.models.vlm_loading`)
    :func:`load_vlm` resolves a spec with :func:`~radaudit.models.resolver.resolve_model` and loads
    ``AutoProcessor`` + ``AutoModelForImageTextToText``. transformers' Qwen2-VL / Qwen2.5-VL processors
    insist on a *video* processor, which needs torchvision; torchvision does not work with the CPU torch
    build this lab pins. When ``AutoProcessor`` fails for that reason only, the processor is rebuilt
    from its image processor, tokenizer and chat template with no video processor (images and text
    work; videos raise). With torchvision installed the plain ``AutoProcessor`` path is used.

Prompts (:func:`build_messages`)
    One user turn, content = ``[image?, text?]`` (image first, as LLaVA and Qwen2-VL chat templates
    expect), optionally preceded by a system turn. Three kinds of item:

    * image + text: ``prompt`` and ``image`` given;
    * text only: ``image=None`` — no image placeholder at all (the SMS "Only_text" ablation);
    * image only: ``prompt`` is ``None`` or ``""`` — the user turn holds the image and *no text entry*
      (the chat template still adds its role markers and the generation prompt). SMS's "Only_image"
      condition instead keeps an instruction ("Based on the image only, ...") with the image: that is
      an image + text item whose prompt the experiment writes.

    The text fed to the model is ``processor.apply_chat_template(messages, add_generation_prompt=True)``.

Batching, decoding, caching
    Items are grouped into batches of ``batch_size`` and left-padded (the tokenizer's padding side is
    switched to ``"left"`` for the call and restored), so the last position of every row is the
    position that predicts the first new token. Text-only and image items can share a batch.
    Decoding strategies are those of :mod:`radaudit.models.decoding`, run the way
    :mod:`radaudit.models.backends` runs them for text models: the checkpoint's generation defaults
    hidden, sampling by per-row seeded generators (a sample depends on its seed, not its batch).
    :func:`vlm_generate` can use the content-addressed cache of :mod:`radaudit.models.cache`; the key
    includes :func:`image_hash` of the item's image.

First-token scores (:func:`first_token_scores`)
    Follows SMS (``src/test.py``): the logits of the **first generated position** at the first
    sub-token id of ``tokenizer(candidate, add_special_tokens=False)`` for each candidate
    (default ``Yes, No, yes, no``). Unlike SMS, which reads ``outputs.scores[0]`` (logits *after* the
    logits processors), we keep the **raw** logits (``generate(output_logits=True)``, equal to a plain
    forward pass's last-position logits), their log-softmax (the candidates' log-probabilities) and
    pair-softmax probabilities; see the function's docstring for the casing columns and multi-token
    candidates. The answer parsing and the pair softmax are in :mod:`radaudit.models.vlm_answers`.

Engines (transformers or vLLM)
    ``model`` is a transformers model (:func:`load_vlm`) or a vLLM engine
    (:func:`radaudit.models.vlm_vllm.load_vllm_vlm`, for a GPU machine). Both get the prompt rendered here
    by :func:`render_prompt` and the same PIL image, their answers are decoded here from token ids, and the
    cache keys hold nothing of the engine (the engine is recorded in the cached value and the ``engine``
    column): a run started on one engine resumes on the other. First-token scores are stored as the
    candidates' log-probabilities, which vLLM returns too (it returns no raw logits); see
    :mod:`radaudit.models.vlm_vllm`. Attention weights (:mod:`radaudit.models.attention`) need the model's
    internals and stay on transformers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError, RadauditError
from radaudit.models.backends import (
    checkpoint_defaults_hidden,
    eos_token_ids,
    make_seeded_sampler,
    model_revision,
    thinking_kwargs,
)
from radaudit.models.cache import content_key, generation_key_parts, open_cache, portable_model_name
from radaudit.models.decoding import strategy_from_params
from radaudit.models.resolver import resolve_model
from radaudit.models.vlm_answers import (  # noqa: F401 - re-exported: radaudit.models.vlm keeps its names
    DEFAULT_CANDIDATES,
    PAIRS,
    count_answers,
    pair_probabilities,
    parse_yes_no,
)
from radaudit.models.vlm_loading import (  # noqa: F401 - re-exported, as above
    LLAVA_MED_HOWTO,
    NEEDS_CONVERSION,
    NEEDS_CONVERSION_TYPES,
    check_loadable,
    conversion_needed,
    load_vlm,
    load_vlm_processor,
    processor_tokenizer,
)
from radaudit.progress import track

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image as PILImage

logger = logging.getLogger(__name__)

#: An image argument: a PIL image, a path to an image file, or ``None`` (no image).
ImageLike = Union["PILImage.Image", str, os.PathLike, None]

# --- images --------------------------------------------------------------------------------------

def load_image(image: ImageLike) -> PILImage.Image | None:
    """A PIL image in RGB (what the processors are fed), from a PIL image or a path; ``None`` stays ``None``."""
    if image is None:
        return None
    from PIL import Image

    if isinstance(image, (str, os.PathLike)):
        path = Path(image).expanduser()
        if not path.is_file():
            raise ParamsError(f"Image file {str(path)!r} does not exist (check the data root and the image_path "
                              "column).")
        with Image.open(path) as im:
            im.load()
            return im.convert("RGB")
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    if isinstance(image, np.ndarray):
        return Image.fromarray(image).convert("RGB")
    raise ParamsError(f"An image must be a PIL image, a path or None, got {type(image).__name__}.")


class _Decoded(Sequence):
    """The PIL images of a batch, decoded on first access (:func:`load_image`), each distinct file once."""

    def __init__(self, images: Sequence[ImageLike], decoded: dict[str, Any] | None = None) -> None:
        self._images = list(images)
        self._by_path: dict[str, Any] = dict(decoded or {})

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        im = self._images[i]
        if isinstance(im, (str, os.PathLike)):
            key = os.fspath(im)
            if key not in self._by_path:
                self._by_path[key] = load_image(im)
            return self._by_path[key]
        return load_image(im)


def _file_identity(path: str | os.PathLike) -> dict[str, Any]:
    """What says a file is unchanged: its resolved path, size and modification time (as ``make`` decides)."""
    p = Path(path).expanduser().resolve()
    st = p.stat()
    return {"kind": "image_pixel_hash", "path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def load_images(images: Sequence[ImageLike], cache: Any = None) -> tuple[Sequence[PILImage.Image | None],
                                                                           list[str | None]]:
    """``(pil_images, hashes)`` of a batch's images (:func:`load_image`, :func:`image_hash`), each distinct file
    decoded and hashed once: the conditions of an audit feed the same X-ray to many prompts (its own, swapped,
    image-only...), and decoding was most of a cached run's time. Items naming one file share one PIL image.

    With ``cache`` (a :class:`~radaudit.models.cache.ContentCache` or a folder: its ``image_hashes`` cache), a
    file's hash is kept under its path, size and modification time, and the images are decoded only when an item
    reads them (``pil_images[i]``): a rerun whose answers all come from the cache decodes nothing (~5 s of
    modality_shift's 538 X-rays). Without a cache every file is decoded here, once, to hash it.
    """
    decoded: dict[str, Any] = {}
    by_file: dict[str, str | None] = {}
    if cache is not None and cache is not False:
        paths = sorted({os.fspath(im) for im in images if isinstance(im, (str, os.PathLike))})
        with open_cache(getattr(cache, "root", cache), name="image_hashes") as store:
            for path in paths:
                if not Path(path).expanduser().is_file():
                    load_image(path)  # raises the missing-file message
            identity = {path: _file_identity(path) for path in paths}
            keys = {path: content_key(identity[path]) for path in paths}
            stored = store.get_many(list(keys.values()))
            for path in paths:
                value = stored.get(keys[path])
                if isinstance(value, str) and len(value) == 64:
                    by_file[path] = value
                    continue
                decoded[path] = load_image(path)
                by_file[path] = image_hash(decoded[path])
                store.put(keys[path], by_file[path], identity[path])
    pil = _Decoded(images, decoded)
    hashes: list[str | None] = []
    for i, im in enumerate(images):
        if isinstance(im, (str, os.PathLike)):
            key = os.fspath(im)
            if key not in by_file:  # no cache: decoded here (once per file), kept for the items that read it
                by_file[key] = image_hash(pil[i])
            hashes.append(by_file[key])
        else:
            hashes.append(image_hash(im))
    return pil, hashes


def image_hash(image: ImageLike) -> str | None:
    """Hex sha256 of the image *as fed to the model*: its size and decoded RGB pixels (``None`` → ``None``).

    Hashing pixels rather than file bytes means a picture passed as a path or as an already-opened
    PIL image gets the same hash, and re-saving a file with other metadata or compression settings
    that decode to the same pixels does not change it. Use it in cache keys next to the prompt.
    """
    img = load_image(image)
    if img is None:
        return None
    h = hashlib.sha256(f"RGB:{img.width}x{img.height}:".encode())
    h.update(img.tobytes())
    return h.hexdigest()


# --- prompts -------------------------------------------------------------------------------------

def build_messages(prompt: str | None, image: Any = None, *, system: str | None = None) -> list[dict[str, Any]]:
    """Chat messages for one item: ``[system?], user: [image?, text?]`` (see the module docstring).

    ``image`` only decides whether an image placeholder (``{"type": "image"}``) is added; the pixels are
    passed to the processor separately. ``prompt=None``/``""`` with an image is an image-only item;
    no prompt and no image is an error.
    """
    text = "" if prompt is None else str(prompt)
    content: list[dict[str, Any]] = []
    if image is not None:
        content.append({"type": "image"})
    if text.strip():
        content.append({"type": "text", "text": text})
    if not content:
        raise ParamsError("A VLM item needs a prompt, an image, or both (got an empty prompt and no image).")
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": str(system)}]})
    messages.append({"role": "user", "content": content})
    return messages


def render_prompt(processor: Any, prompt: str | None, image: Any = None, *, system: str | None = None) -> str:
    """The exact text fed to the model for one item (chat template applied, generation prompt added)."""
    messages = build_messages(prompt, image, system=system)
    template = getattr(processor, "chat_template", None) or getattr(processor_tokenizer(processor), "chat_template", None)
    if not template:
        raise ParamsError("This VLM's processor has no chat template; save one with the processor "
                          "(processor.chat_template = '...'; processor.save_pretrained(folder)).")
    # a template that reads enable_thinking (Qwen3-VL) is rendered with thinking off: the answer comes first
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, chat_template=template,
                                         **thinking_kwargs(template))


def _as_items(prompts: Sequence[str | None] | str | None,
              images: Sequence[ImageLike] | ImageLike = None) -> tuple[list[str | None], list[ImageLike]]:
    if isinstance(prompts, str) or prompts is None:
        prompts = [prompts]
    prompts = list(prompts)
    if images is None:
        images = [None] * len(prompts)
    elif not isinstance(images, (list, tuple, pd.Series)):
        images = [images]  # one image (PIL, path or array) for a single prompt
    images = list(images)
    if len(images) != len(prompts):
        raise ParamsError(f"Got {len(prompts)} prompts but {len(images)} images: pass one image (or None) per prompt.")
    return prompts, images


@contextmanager
def _left_padding(tokenizer: Any) -> Iterator[None]:
    side, pad = tokenizer.padding_side, tokenizer.pad_token
    tokenizer.padding_side = "left"
    if pad is None:
        if tokenizer.eos_token is None:
            raise ParamsError("The VLM tokenizer has neither a pad nor an eos token, so batches cannot be padded.")
        tokenizer.pad_token = tokenizer.eos_token
    try:
        yield
    finally:
        tokenizer.padding_side = side
        if pad is None:
            tokenizer.pad_token = None


def encode_batch(processor: Any, model: Any, prompts: Sequence[str | None], images: Sequence[ImageLike], *,
                 system: str | None = None) -> tuple[Any, list[str], list[Any]]:
    """Processor inputs for a batch (left-padded, on the model's device and dtype).

    Returns ``(inputs, texts, pil_images)``: ``texts`` are the rendered chat prompts; ``pil_images`` the
    loaded images (``None`` for text-only items).
    """
    pil = [load_image(im) for im in images]
    texts = [render_prompt(processor, p, im, system=system) for p, im in zip(prompts, pil)]
    return _encode(processor, model, texts, pil), texts, pil


def _encode(processor: Any, model: Any, texts: Sequence[str], pil: Sequence[Any]) -> Any:
    tok = processor_tokenizer(processor)
    bos = getattr(tok, "bos_token", None)
    # The tokenizer adds BOS itself; if the template already wrote it, don't add a second one
    # (what ProcessorMixin.apply_chat_template(tokenize=True) does too).
    add_special = not (bos and all(t.startswith(bos) for t in texts))
    # One list of images per sample ([] for a text-only row): Gemma-3, Mllama and PaliGemma processors
    # read a flat list as one sample with several images and refuse a batch of more than one; LLaVA
    # and Qwen2-VL accept either form (issue 19).
    nested = [[im] if im is not None else [] for im in pil]
    with _left_padding(tok):
        inputs = processor(text=list(texts), images=nested if any(nested) else None, padding=True,
                           return_tensors="pt", add_special_tokens=add_special)
    inputs = inputs.to(model.device)
    for key in ("pixel_values", "pixel_values_videos"):
        if key in inputs and inputs[key].is_floating_point():
            inputs[key] = inputs[key].to(model.dtype)
    return inputs


# --- generation ----------------------------------------------------------------------------------

class NonFiniteLogitsError(RadauditError, FloatingPointError):
    """The model produced NaN or infinite logits: the run stops instead of caching a meaningless score."""


def check_finite_logits(logits: Any, model: Any, prompts: Sequence[str | None] = ()) -> None:
    """Raise :class:`NonFiniteLogitsError` when any row of ``logits`` ``[batch, vocab]`` holds NaN or ±inf.

    The message names the rows, the model's dtype and what to do: a model trained in bfloat16 (Gemma 3 /
    MedGemma, Llama 3.2) can overflow float16's range (max 65504) in its activations; load it in
    ``bf16`` (or ``fp32``). Nothing is cached for the batch, so a rerun with another dtype starts clean.
    """
    import torch

    t = logits if isinstance(logits, torch.Tensor) else torch.as_tensor(np.asarray(logits))
    bad = (~torch.isfinite(t)).reshape(t.shape[0], -1).any(dim=1)
    if bool(bad.any()):
        rows = [int(i) for i in torch.nonzero(bad).flatten().tolist()]
        shown = [str(prompts[i])[:60] for i in rows[:3] if i < len(prompts)]
        dtype = getattr(model, "dtype", None)
        raise NonFiniteLogitsError(
            f"{len(rows)} of {t.shape[0]} items gave NaN/inf logits with the model in {dtype} (rows {rows[:10]}"
            + (f"; e.g. {shown}" if shown else "") + "). A model trained in bfloat16 overflows float16: set its "
            "dtype to bf16 (or fp32) in the params' models entry and rerun; nothing of this batch was cached.")

def decoding_strategy(strategy: Any, max_new_tokens: int | None) -> Any:
    """The :class:`~radaudit.models.decoding.DecodingStrategy` a params value names (a registered name, a mapping
    of fields or a strategy: :func:`~radaudit.models.decoding.strategy_from_params`), with ``max_new_tokens`` set
    on it unless that is ``None``."""
    strat = strategy_from_params(strategy).with_max_new_tokens(max_new_tokens)
    return strat


def special_token_ids(processor: Any, model: Any) -> tuple[list[int], int | None]:
    """``(eos_ids, pad_id)`` for generating with ``model``: the ids that end a generation
    (:func:`~radaudit.models.backends.eos_token_ids`) and the tokenizer's pad id, or the first eos id when the
    tokenizer has no pad token (``None`` when there is neither)."""
    tok = processor_tokenizer(processor)
    eos = eos_token_ids(model, tok)
    pad = tok.pad_token_id if tok.pad_token_id is not None else (eos[0] if eos else None)
    return eos, pad


def generate_with_strategy(model: Any, inputs: Any, strategy: Any, seeds: Sequence[int], eos: list[int],
                           pad: int | None, **config: Any) -> Any:
    """``model.generate`` with the strategy's pinned config, the checkpoint's generation defaults hidden and,
    for sampling strategies, per-row seeded sampling (the same machinery as :mod:`radaudit.models.backends`:
    a row's sample depends on its seed only, not on the batch it is in)."""
    import torch
    from transformers import LogitsProcessorList

    processors = LogitsProcessorList()
    run = strategy
    if strategy.do_sample:
        run = strategy.model_copy(update={"do_sample": False, "temperature": 1.0, "top_p": 1.0, "top_k": 0})
        processors.append(make_seeded_sampler(strategy, seeds))
    gen_cfg = run.to_generation_config(eos_token_id=eos or None, pad_token_id=pad)
    for key, value in config.items():
        setattr(gen_cfg, key, value)
    generate = model.generate
    if type(model).__name__ in _GENERATE_DROPS_LOGITS_PROCESSOR:
        from transformers import GenerationMixin

        generate = functools.partial(GenerationMixin.generate, model)
    with torch.inference_mode(), checkpoint_defaults_hidden(model):
        return generate(**inputs, generation_config=gen_cfg, logits_processor=processors)


#: Models whose own ``generate`` silently drops ``logits_processor`` in text mode (so seeded sampling
#: would fall back to greedy without a word): JanusForConditionalGeneration (transformers 5.x) forwards
#: only the generation config. Their text generation runs through ``GenerationMixin.generate`` instead,
#: which is what their override calls for text anyway (with classifier-free guidance off, as here).
_GENERATE_DROPS_LOGITS_PROCESSOR = frozenset({"JanusForConditionalGeneration"})


def _decode_new(processor: Any, new_ids: Any, eos_ids: Sequence[int]) -> list[dict[str, Any]]:
    """Decode generated ids row by row, cut after the first eos: text, token ids, count, finish reason."""
    return decode_generated_rows(processor, new_ids.tolist(), eos_ids)


def decode_generated_rows(processor: Any, rows: Sequence[Sequence[int]],
                          eos_ids: Sequence[int]) -> list[dict[str, Any]]:
    """Decode generated ids given as lists (what the vLLM engine returns; the transformers engine's tensors go
    through it too), row by row, cut after the first of ``eos_ids``: ``text`` (special tokens removed,
    stripped), ``token_ids``, ``n_generated_tokens`` and ``finish`` (``eos``/``length``). One decoding for both
    engines, so the same ids give the same text, count and finish reason."""
    tok = processor_tokenizer(processor)
    eos = set(eos_ids)
    out = []
    for row in rows:
        row = [int(t) for t in row]
        cut = next((i for i, t in enumerate(row) if t in eos), None)
        ids = row if cut is None else row[:cut + 1]
        out.append({"text": tok.decode(ids, skip_special_tokens=True).strip(), "token_ids": [int(t) for t in ids],
                    "n_generated_tokens": len(ids), "finish": "length" if cut is None else "eos"})
    return out


def _seed_list(seeds: int | Sequence[int], n: int) -> list[int]:
    if isinstance(seeds, bool):
        raise ParamsError(f"seeds must be an int or a list of ints, got {seeds!r}.")
    if isinstance(seeds, (int, np.integer)):
        return [int(seeds)] * n
    out = [int(s) for s in seeds]
    if len(out) != n:
        raise ParamsError(f"seeds has {len(out)} entries for {n} prompts: pass one seed, or one per prompt.")
    return out


def model_identity(model: Any) -> tuple[str, str | None]:
    """``(spec, revision)`` of a loaded model for cache keys: the folder or hub id it was loaded from and
    :func:`radaudit.models.backends.model_revision` of it (a content fingerprint for a local folder)."""
    if _engine(model) is not None:  # a vLLM engine answers for the transformers model of its spec
        return model.identity()
    name = getattr(model, "name_or_path", None) or getattr(model.config, "_name_or_path", None)
    if not name:
        raise ParamsError("Cannot cache generations of a model that was not loaded from a folder or hub id; "
                          "save it with save_pretrained and load it with load_vlm(folder), or pass cache=None.")
    spec, revision = identity_of(name)
    if getattr(model, "peft_config", None):  # a PeftModel answers with its base's name: key the adapter too
        revision = f"{revision}+adapter:{adapter_fingerprint(model)}"
    return spec, revision


def identity_of(name: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``(spec, revision)`` of the model a ``name_or_path`` names (:func:`model_identity` without a model)."""
    resolved = resolve_model(name)
    return resolved.spec or resolved.path_or_id, model_revision(resolved)


def adapter_folder_id(adapter: str | os.PathLike[str]) -> str:
    """16 hex digits naming a LoRA adapter by what it is: the content fingerprint of its folder's files
    (:func:`radaudit.models.backends.model_revision`; a hub adapter: its id and commit). Both engines key an
    adapter given by folder with it (transformers through :func:`mark_adapter`), so they share cache entries."""
    resolved = resolve_model(adapter)
    revision = str(model_revision(resolved))
    text = revision if resolved.is_local else f"{resolved.spec or resolved.path_or_id}@{revision}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mark_adapter(model: Any, adapter: str | os.PathLike[str]) -> Any:
    """Record on a peft model loaded from ``adapter`` that its adapter fingerprint (:func:`adapter_fingerprint`)
    is :func:`adapter_folder_id` of that folder, the identity the vLLM engine gives the same adapter.
    Returns ``model``."""
    model._radaudit_adapter_fingerprint = adapter_folder_id(adapter)
    return model


def _engine(model: Any) -> str | None:
    """``"vllm"`` for a :class:`radaudit.models.vlm_vllm.VLLMVision` engine, ``None`` for a transformers model."""
    return getattr(type(model), "vlm_engine", None)


def engine_name(model: Any) -> str:
    """The engine that runs ``model``: ``"vllm"`` or ``"transformers"`` (recorded in every cached value)."""
    return _engine(model) or "transformers"


def _dtype_name(model: Any) -> str:
    return model.dtype_name if _engine(model) is not None else str(model.dtype).removeprefix("torch.")


def _key_parts(**parts: Any) -> dict[str, Any]:
    """:func:`radaudit.models.cache.generation_key_parts` with no engine in them: both engines get the same
    key for the same item, so a run resumes on either (the engine is recorded in the value)."""
    return generation_key_parts(**parts)


def adapter_fingerprint(model: Any) -> str:
    """SHA-256 (16 hex) of a peft model's adapter: its configs and every adapter weight (names, shapes,
    bytes), so two adapters on one base never share a cache entry. Computed once per model object."""
    cached = getattr(model, "_radaudit_adapter_fingerprint", None)
    if cached:
        return cached
    import torch

    h = hashlib.sha256()
    for name, cfg in sorted((getattr(model, "peft_config", None) or {}).items()):
        h.update(json.dumps({"adapter": name, **cfg.to_dict()}, sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.state_dict().items()):
        if "lora_" in name or "modules_to_save" in name:
            h.update(name.encode())
            h.update(str(tuple(tensor.shape)).encode())
            h.update(tensor.detach().to(torch.float32).cpu().numpy().tobytes())
    digest = h.hexdigest()[:16]
    try:
        model._radaudit_adapter_fingerprint = digest
    except AttributeError:  # pragma: no cover - a model that refuses attributes is hashed again next time
        pass
    return digest


def _run_cached(keys: Sequence[str | None], parts: Sequence[Mapping[str, Any] | None], store: Any, batch_size: int,
                compute: Any, stage: str = "VLM") -> tuple[dict[Any, dict[str, Any]], set[Any]]:
    """Records for every item: from ``store`` where cached, else ``compute(batch_of_item_indices)`` (one record
    per index), batch by batch, each record written to ``store`` as soon as its batch is done (an
    interruption loses at most one batch). Items sharing a key are computed once. Returns
    ``(records keyed by cache key, or by item index without a store; the keys found in the cache)``. Progress
    of the batches to compute is logged as ``stage`` (:func:`radaudit.progress.track`)."""
    records: dict[Any, dict[str, Any]] = store.get_many([k for k in keys if k is not None]) if store is not None else {}
    cached = set(records)
    todo: dict[Any, int] = {}
    for i, k in enumerate(keys):
        key = k if k is not None else i
        if key not in records and key not in todo:
            todo[key] = i
    order = list(todo.values())
    for start in track(range(0, len(order), int(batch_size)), stage, unit="batches"):
        batch = order[start:start + int(batch_size)]
        for i, rec in zip(batch, compute(batch)):
            records[keys[i] if keys[i] is not None else i] = rec
            if store is not None:
                store.put(keys[i], rec, parts[i])
    return records, cached


def vlm_generate(processor: Any, model: Any, prompts: Sequence[str | None] | str,
                 images: Sequence[ImageLike] | ImageLike = None, strategy: Any = "greedy", *,
                 max_new_tokens: int | None = 64, batch_size: int = 8, seeds: int | Sequence[int] = 0,
                 system: str | None = None, cache: Any = None) -> pd.DataFrame:
    """Generate one answer per (prompt, image) item; a tidy table, one row per item, in input order.

    ``images``: one PIL image / path / ``None`` per prompt (``None`` for all = text only); a prompt of
    ``None``/``""`` with an image is an image-only item (see :func:`build_messages`). ``strategy``: a
    decoding-strategy name or params mapping (:mod:`radaudit.models.decoding`; default greedy);
    ``max_new_tokens`` overrides the strategy's. Items run in left-padded batches of ``batch_size``.
    ``seeds``: one int for all items or one per item; sampling strategies draw each row with its own
    seeded generator, so a sample does not depend on the batch it is in (deterministic strategies
    ignore seeds). ``cache``: ``None`` (no cache), ``True`` (the default folder), a folder, or a
    :class:`~radaudit.models.cache.ContentCache`; keys hold the model + revision, the rendered
    prompt, the image hash, the strategy knobs, the seed and ``max_new_tokens``.

    ``model``: a transformers model, or a vLLM engine (:class:`radaudit.models.vlm_vllm.VLLMVision`), which
    gets the same rendered prompts and images, maps the strategy with
    :meth:`radaudit.models.backends.VLLMBackend.sampling_params` (one seed per request; vLLM's sampler, so
    sampled texts differ from transformers' for a seed) and runs ``engine.batch_size`` items per call. The
    cache keys are the same for both engines (a run resumes on either).

    Columns: ``item`` (input position), ``prompt`` (as given), ``has_image``, ``image_hash``
    (:func:`image_hash`), ``kind`` (``image+text``/``text``/``image``), ``rendered_prompt`` (after the chat
    template), ``strategy``, ``seed`` (``None`` for deterministic strategies), ``max_new_tokens``,
    ``n_input_tokens`` (without padding, image tokens expanded; as the engine counts them, ``NaN`` from
    vLLM's beam search), ``n_generated_tokens`` (incl. the eos token, if any), ``finish``
    (``eos``/``length``), ``text`` (special tokens removed, stripped), ``engine`` (``transformers``/``vllm``:
    the engine that generated it, possibly in an earlier run), ``cached``.
    """
    prompts, images = _as_items(prompts, images)
    strat = decoding_strategy(strategy, max_new_tokens)
    if int(batch_size) < 1:
        raise ParamsError(f"batch_size must be >= 1, got {batch_size}.")
    seed_list = _seed_list(seeds, len(prompts))
    pil, hashes = load_images(images, cache)  # with a cache: hashes kept per file, pixels decoded when computed
    texts = [render_prompt(processor, p, im, system=system) for p, im in zip(prompts, images)]
    engine = _engine(model)

    owns_cache = cache is not None and cache is not False and not hasattr(cache, "get_many")
    store = open_cache(cache) if cache is not None else None
    try:
        keys: list[str | None] = [None] * len(prompts)
        parts: list[dict[str, Any] | None] = [None] * len(prompts)
        if store is not None:
            spec, revision = model_identity(model)
            spec = portable_model_name(spec, store.root)  # a stand-in in the cache: the same key in every clone
            dtype = _dtype_name(model)
            for i in range(len(prompts)):
                parts[i] = _key_parts(model=spec, revision=revision, prompt=texts[i], strategy=strat,
                                      seed=seed_list[i], max_new_tokens=strat.max_new_tokens, dtype=dtype,
                                      image_hash=hashes[i], extra={"input": "vlm_chat_template"})
                keys[i] = content_key(parts[i])
        logger.info("vlm_generate %s: %d items (%s)", strat.name, len(prompts), engine_name(model))

        if engine is not None:
            def compute(batch: list[int]) -> list[dict[str, Any]]:
                return model.generate_records(processor, [texts[i] for i in batch], [pil[i] for i in batch], strat,
                                              [seed_list[i] for i in batch])
        else:
            eos, pad = special_token_ids(processor, model)

            def compute(batch: list[int]) -> list[dict[str, Any]]:
                inputs = _encode(processor, model, [texts[i] for i in batch], [pil[i] for i in batch])
                out = generate_with_strategy(model, inputs, strat, [seed_list[i] for i in batch], eos, pad)
                n_in = inputs["attention_mask"].sum(dim=1).tolist()
                decoded = _decode_new(processor, out[:, inputs["input_ids"].shape[1]:], eos)
                return [{**decoded[j], "n_input_tokens": int(n_in[j]), "engine": "transformers"}
                        for j in range(len(batch))]

        run_batch = model.batch_size if engine is not None else batch_size
        records, cached = _run_cached(keys, parts, store, run_batch, compute, f"generate {strat.name}")
    finally:
        if owns_cache and store is not None:
            store.close()

    rows = []
    for i, (p, im) in enumerate(zip(prompts, images)):
        key = keys[i] if keys[i] is not None else i
        rec = records[key]
        rows.append({"item": i, "prompt": p, "has_image": im is not None, "image_hash": hashes[i], "kind": _kind(p, im),
                     "rendered_prompt": texts[i], "strategy": strat.name,
                     "seed": seed_list[i] if strat.do_sample else None, "max_new_tokens": strat.max_new_tokens,
                     "n_input_tokens": rec["n_input_tokens"], "n_generated_tokens": rec["n_generated_tokens"],
                     "finish": rec["finish"], "text": rec["text"], "engine": rec.get("engine", "transformers"),
                     "cached": keys[i] is not None and keys[i] in cached})
    return _frame(rows, _GEN_COLUMNS)


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A DataFrame whose text columns keep ``None`` as ``None`` (pandas 3 would turn it into NaN)."""
    frame = pd.DataFrame(rows, columns=columns)
    for col in _OBJECT_COLUMNS.intersection(columns):
        frame[col] = pd.Series([r.get(col) for r in rows], index=frame.index, dtype=object)
    return frame


_OBJECT_COLUMNS = {"prompt", "image_hash", "seed", "first_token_candidate"}

_GEN_COLUMNS = ["item", "prompt", "has_image", "image_hash", "kind", "rendered_prompt", "strategy", "seed",
                "max_new_tokens", "n_input_tokens", "n_generated_tokens", "finish", "text", "engine", "cached"]


def _kind(prompt: str | None, image: Any) -> str:
    has_text = prompt is not None and str(prompt).strip() != ""
    return "image+text" if image is not None and has_text else ("image" if image is not None else "text")


# --- first-token scores --------------------------------------------------------------------------

def candidate_tokens(processor: Any, candidates: Sequence[str] = DEFAULT_CANDIDATES) -> pd.DataFrame:
    """How each candidate answer tokenises: ``candidate, token_id`` (its first sub-token, the one scored),
    ``token``, ``n_tokens``, ``multi_token``. Logs a warning for multi-token candidates and for candidates
    that share a first token (their logits are then identical)."""
    tok = processor_tokenizer(processor)
    rows = []
    for cand in candidates:
        ids = tok(cand, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ParamsError(f"Candidate answer {cand!r} tokenises to nothing.")
        rows.append({"candidate": cand, "token_id": int(ids[0]), "token": tok.convert_ids_to_tokens(int(ids[0])),
                     "n_tokens": len(ids), "multi_token": len(ids) > 1})
    table = pd.DataFrame(rows)
    for r in table[table["multi_token"]].itertuples():
        logger.warning("Candidate answer %r tokenises to %d tokens; it is scored by its first sub-token %r "
                       "(id %d) only.",
                       r.candidate, r.n_tokens, r.token, r.token_id)
    dup = table[table.duplicated("token_id", keep=False)]
    if not dup.empty:
        logger.warning("Candidate answers %s share a first sub-token, so their first-token logits are identical.",
                       ", ".join(map(repr, dup["candidate"])))
    return table


def first_token_scores(processor: Any, model: Any, prompts: Sequence[str | None] | str,
                       images: Sequence[ImageLike] | ImageLike = None,
                       candidates: Sequence[str] = DEFAULT_CANDIDATES, *, pair: str = "both",
                       max_new_tokens: int = 8, batch_size: int = 8, system: str | None = None,
                       no_patterns: Sequence[str] = (), yes_patterns: Sequence[str] = (),
                       cache: Any = None) -> pd.DataFrame:
    """First-token yes/no scores and the greedy answer, one row per item, in input order.

    One greedy ``generate`` call per left-padded batch (``max_new_tokens`` tokens, no sampling) with
    ``output_logits=True``: the logits of the first generated position are the **raw** logits (before
    any logits processor), identical to the last-position logits of a plain forward pass on the
    prompt. ``model`` may be a vLLM engine (:class:`radaudit.models.vlm_vllm.VLLMVision`): one greedy
    request per item (temperature 0, the same ``max_new_tokens``) that also asks for the candidates'
    first-position log-probabilities, which vLLM computes from the raw logits.

    Columns (besides ``item, prompt, has_image, image_hash, kind``):

    * ``logit_<candidate>`` for each candidate (e.g. ``logit_Yes``): the raw logit of the candidate's
      **first sub-token** (``NaN`` on rows vLLM scored: it returns log-probabilities only).
      Multi-token answers: a candidate that tokenises to several tokens is scored
      by its first sub-token only, as SMS does; a warning is logged and ``df.attrs["candidates"]``
      (:func:`candidate_tokens`) records ``n_tokens`` per candidate.
    * ``logprob_<candidate>``: its full-vocabulary log-probability, ``logit - logsumexp(logits)`` (both
      engines).
    * ``p_yes_capitalised``, ``p_yes_lower``, ``p_yes_both``: pair-softmax probabilities
      (:func:`pair_probabilities`) of the log-probabilities, equal to those of the raw logits (a pair
      softmax depends on logit differences only, and the log-softmax shifts every logit of a position by
      the same constant); so both engines give the same P(yes) up to float error.
    * ``p_yes``, ``p_no``: the pair chosen by ``pair`` (default ``"both"``: robust to the model's casing
      preference; ``"capitalised"`` reproduces SMS's ``[p_Yes, p_No]``), named in column ``pair``.
    * ``mass_candidates``: full-vocabulary softmax probability of the candidates' first tokens
      together (how much of the first token is a yes/no word at all).
    * ``first_token_id``, ``first_token``: the greedy first generated token; ``first_token_candidate``:
      the candidate whose first sub-token it is (``None`` if none).
    * ``generated``: the greedy answer (up to ``max_new_tokens``); ``answer``: :func:`parse_yes_no` of it
      (``yes``/``no``/``unknown``). Unknown rows are kept; :func:`count_answers` counts them and
      ``df.attrs["n_unknown"]`` holds the count. ``n_generated_tokens`` (incl. eos) and ``finish``
      (``eos``/``length``) as in :func:`vlm_generate`.
    * ``engine``: ``transformers`` or ``vllm``, the engine that scored the row (possibly in an earlier run);
      ``cached``: whether the row came from ``cache``.

    ``cache`` (as in :func:`vlm_generate`: ``None``, ``True``, a folder or a
    :class:`~radaudit.models.cache.ContentCache`): one record per item with the candidate
    log-probabilities (and, from transformers, the raw logits), the candidate mass, the first token, the
    greedy answer and the engine, keyed by the model + revision, the rendered prompt, the image hash,
    ``max_new_tokens`` and the candidate token ids — not the engine, so a run interrupted on one engine
    resumes on the other. The one greedy pass gives both the answer and the scores, so nothing is encoded
    twice.
    """
    if pair not in PAIRS:
        raise ParamsError(f"pair must be one of {', '.join(PAIRS)}, got {pair!r}.")
    if batch_size < 1:
        raise ParamsError(f"batch_size must be >= 1, got {batch_size}.")
    prompts, images = _as_items(prompts, images)
    cands = candidate_tokens(processor, candidates)
    cand_list = [int(t) for t in cands["token_id"]]
    greedy = decoding_strategy("greedy", max_new_tokens)
    pil, hashes = load_images(images, cache)  # with a cache: hashes kept per file, pixels decoded when computed
    texts = [render_prompt(processor, p, im, system=system) for p, im in zip(prompts, images)]
    engine = _engine(model)
    owns_cache = cache is not None and cache is not False and not hasattr(cache, "get_many")
    store = open_cache(cache, name="first_token_scores") if cache is not None else None
    keys: list[str | None] = [None] * len(prompts)
    parts: list[dict[str, Any] | None] = [None] * len(prompts)
    try:
        if store is not None:
            keys, parts = _first_token_keys(store, model, texts, hashes, greedy, cands)
        logger.info("first_token_scores: %d items (%s)", len(prompts), engine_name(model))

        if engine is not None:
            def compute(batch: list[int]) -> list[dict[str, Any]]:
                return model.first_token_records(processor, [texts[i] for i in batch], [pil[i] for i in batch],
                                                 cand_list, greedy.max_new_tokens)
        else:
            compute = _first_token_batches(processor, model, texts, pil, prompts, cand_list, greedy)

        run_batch = model.batch_size if engine is not None else batch_size
        records, cached = _run_cached(keys, parts, store, run_batch, compute, "first-token scores")
    finally:
        if owns_cache and store is not None:
            store.close()
    first_of: dict[int, str] = {}
    for r in cands.itertuples():
        first_of.setdefault(r.token_id, r.candidate)
    tok = processor_tokenizer(processor)
    rows: list[dict[str, Any]] = []
    for i, (p, im) in enumerate(zip(prompts, images)):
        key = keys[i] if keys[i] is not None else i
        row = {"item": i, "prompt": p, "has_image": im is not None, "image_hash": hashes[i], "kind": _kind(p, im)}
        row.update(_first_token_row(records[key], list(cands["candidate"]), tok, first_of, no_patterns, yes_patterns))
        row["cached"] = keys[i] is not None and keys[i] in cached
        rows.append(row)
    return _first_token_frame(rows, cands, pair)


def _first_token_keys(store: Any, model: Any, texts: Sequence[str], hashes: Sequence[str | None], greedy: Any,
                      cands: pd.DataFrame) -> tuple[list[str | None], list[dict[str, Any] | None]]:
    """The cache key and key parts of each item of :func:`first_token_scores`: the model + revision (the model
    name made portable for ``store``), the rendered prompt, the image hash, ``max_new_tokens``, the dtype and
    the candidates' token ids."""
    spec, revision = model_identity(model)
    spec = portable_model_name(spec, store.root)  # a stand-in in the cache: the same key in every clone
    dtype = _dtype_name(model)
    candidates = cands[["candidate", "token_id"]].to_dict("records")  # once: the same for every item
    keys: list[str | None] = [None] * len(texts)
    parts: list[dict[str, Any] | None] = [None] * len(texts)
    for i in range(len(texts)):
        parts[i] = _key_parts(model=spec, revision=revision, prompt=texts[i], strategy=greedy, seed=None,
                              max_new_tokens=greedy.max_new_tokens, dtype=dtype, image_hash=hashes[i],
                              extra={"input": "vlm_chat_template", "kind": "first_token_scores",
                                     "scores": "candidate_logprobs", "candidates": [dict(c) for c in candidates]})
        keys[i] = content_key(parts[i])
    return keys, parts


def _first_token_batches(processor: Any, model: Any, texts: Sequence[str], pil: Sequence[Any],
                         prompts: Sequence[str | None], cand_list: Sequence[int], greedy: Any) -> Any:
    """``compute(batch of item indices) -> records`` for a transformers model: one greedy ``generate`` per
    left-padded batch with the raw logits of the first generated position, read at the candidates' tokens
    (:func:`_candidate_scores`)."""
    import torch  # lazy: torch only when a transformers model is run

    eos_ids, pad_id = special_token_ids(processor, model)
    cand_ids = torch.tensor(cand_list)

    def compute(batch: list[int]) -> list[dict[str, Any]]:
        inputs = _encode(processor, model, [texts[i] for i in batch], [pil[i] for i in batch])
        out = generate_with_strategy(model, inputs, greedy, [0] * len(batch), eos_ids, pad_id, output_logits=True,
                                     return_dict_in_generate=True)
        first = out.logits[0].float().cpu()  # [batch, vocab], raw logits of the first generated position
        check_finite_logits(first, model, [prompts[i] for i in batch])
        cand_logits, logprobs, mass = _candidate_scores(first, cand_ids)
        new = out.sequences[:, inputs["input_ids"].shape[1]:]
        decoded = _decode_new(processor, new, eos_ids)
        return [{"logits": [float(v) for v in cand_logits[j]], "logprobs": [float(v) for v in logprobs[j]],
                 "mass_candidates": float(mass[j]), "first_token_id": int(new[j, 0]),
                 "text": decoded[j]["text"], "n_generated_tokens": decoded[j]["n_generated_tokens"],
                 "finish": decoded[j]["finish"], "engine": "transformers"}
                for j in range(len(batch))]

    return compute


def _candidate_scores(first: Any, cand_ids: Any) -> tuple[Any, Any, Any]:
    """From first-position logits ``[batch, vocab]``: the candidates' raw logits and log-probabilities
    (``logit - logsumexp``), both ``[batch, n_candidates]`` float64, and the softmax mass of their (unique)
    first tokens together ``[batch]``."""
    import torch  # lazy: torch only when a transformers model is run

    cand_logits = first[:, cand_ids].double()
    logprobs = cand_logits - torch.logsumexp(first.double(), dim=1, keepdim=True)  # log-softmax
    unique = torch.unique(cand_ids)
    mass = torch.exp(torch.logsumexp(first[:, unique].double(), dim=1)
                     - torch.logsumexp(first.double(), dim=1))
    return cand_logits, logprobs, mass


def _first_token_row(rec: Mapping[str, Any], candidates: Sequence[str], tok: Any, first_of: Mapping[int, str],
                     no_patterns: Sequence[str], yes_patterns: Sequence[str]) -> dict[str, Any]:
    """One item's scores, first token and parsed greedy answer from its record (computed or cached)."""
    ft = int(rec["first_token_id"])
    raw = rec.get("logits")
    row: dict[str, Any] = {f"logit_{c}": float(raw[k]) if raw is not None else np.nan
                           for k, c in enumerate(candidates)}
    row.update({f"logprob_{c}": float(rec["logprobs"][k]) for k, c in enumerate(candidates)})
    text = rec["text"]
    row.update({"mass_candidates": float(rec["mass_candidates"]), "first_token_id": ft,
                "first_token": tok.decode([ft], skip_special_tokens=False),
                "first_token_candidate": first_of.get(ft), "generated": text,
                "answer": parse_yes_no(text, no_patterns=no_patterns, yes_patterns=yes_patterns),
                "n_generated_tokens": int(rec["n_generated_tokens"]), "finish": rec["finish"],
                "engine": rec.get("engine", "transformers")})
    return row


def _first_token_frame(rows: list[dict[str, Any]], cands: pd.DataFrame, pair: str) -> pd.DataFrame:
    """The rows as :func:`first_token_scores`' table: pair probabilities added, columns in order, the candidate
    table and the number of unknown answers in ``attrs``."""
    frame = pd.DataFrame(rows)
    for col in _OBJECT_COLUMNS.intersection(frame.columns):
        frame[col] = pd.Series([r.get(col) for r in rows], index=frame.index, dtype=object)
    # from the log-probabilities, which both engines give (pair-softmax needs logit differences only)
    probs = pair_probabilities({c: frame[f"logprob_{c}"].to_numpy() for c in cands["candidate"]}) if rows else {}
    for name, values in probs.items():
        frame[name] = values
    if rows:
        frame["pair"] = pair
        frame["p_yes"] = frame[f"p_yes_{pair}"]
        frame["p_no"] = 1.0 - frame["p_yes"]
    order = (["item", "prompt", "has_image", "image_hash", "kind"] + [f"logit_{c}" for c in cands["candidate"]]
             + [f"logprob_{c}" for c in cands["candidate"]]
             + ["p_yes_capitalised", "p_yes_lower", "p_yes_both", "pair", "p_yes", "p_no", "mass_candidates",
                "first_token_id", "first_token", "first_token_candidate", "generated", "answer",
                "n_generated_tokens", "finish", "engine", "cached"])
    frame = frame.reindex(columns=order)
    counts = count_answers(frame) if rows else count_answers([])
    frame.attrs["candidates"] = cands.to_dict("records")
    frame.attrs["n_unknown"] = int(counts["unknown"])
    if counts["unknown"]:
        logger.warning("%d of %d generated answers are neither yes nor no (kept with answer='unknown').",
                       counts["unknown"], len(frame))
    return frame
