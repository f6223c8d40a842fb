"""Tiny random-weight twins of the vision-language models the paper presets name: same transformers
class, same processor type, built offline in seconds.

A twin has the architecture and the processor of the real model — chat template, image processor,
special tokens, how images become tokens (LLaVA's square grid, Qwen2-VL's merged patches and
``image_grid_thw``, Gemma 3's pooled soft tokens, Mllama's tiles and cross-attention layers, Janus's
SigLIP tokens) — with a byte-level BPE tokenizer trained here on a few sentences and layers a few units
wide. Its answers are noise: it exists so that every code path a paper run takes (batching, chat
templates, first-token scores, attention, dtype handling, caching, tables, figures) runs on CPU in
seconds, before hours of GPU time (``radaudit run <experiment> --preset paper --rehearse``), and for
the tests.

:data:`TWINS` maps a family to its builder ``build(folder) -> folder`` (a ``save_pretrained`` folder that the
lab's loader for that kind of model loads); :data:`FAMILY_OF` maps the hub ids of the paper presets to
their family; :func:`twin_folder` builds (once, cached by family and :data:`TWIN_VERSION`) and returns
the folder for a hub id.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from radaudit.errors import ParamsError
from radaudit.models.twins import image, text, vlm
from radaudit.models.twins.base import CORPUS, save_twin, tokenizer
from radaudit.models.twins.vlm import (
    LLAVA_TEMPLATE,
    QWEN_TEMPLATE,
    build_gemma3,
    build_janus,
    build_llava,
    build_mllama,
    build_qwen2vl,
)
from radaudit.paths import atomic_dir

__all__ = ["CORPUS", "FAMILY_OF", "LLAVA_TEMPLATE", "QWEN_TEMPLATE", "TWINS", "TWIN_VERSION", "build_gemma3",
           "build_janus", "build_llava", "build_mllama", "build_qwen2vl", "class_name", "family_of", "save_twin",
           "tokenizer", "twin_folder"]

#: Bump when a builder changes (part of the cached folder's name).
TWIN_VERSION = 1

_KINDS = (vlm, text, image)
#: family -> builder, over every kind (vision-language, text, image).
TWINS = {family: build for kind in _KINDS for family, build in kind.BUILDERS.items()}
#: Hub ids of the paper presets -> family.
FAMILY_OF: dict[str, str] = {hub: family for kind in _KINDS for hub, family in kind.HUB_IDS.items()}
_MODEL_TYPES = {t: family for kind in _KINDS for t, family in kind.MODEL_TYPES.items()}


def family_of(model_id: str) -> str:
    """The twin family of a hub id (:data:`FAMILY_OF`) or of a local folder's ``config.json`` ``model_type``."""
    if model_id in FAMILY_OF:
        return FAMILY_OF[model_id]
    config = Path(model_id) / "config.json"
    if config.is_file():
        model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
        if model_type in _MODEL_TYPES:
            return _MODEL_TYPES[model_type]
    raise ParamsError(f"No tiny twin is known for {model_id!r}: add its family to the HUB_IDS of a module of "
                      f"radaudit.models.twins (families: {', '.join(TWINS)}).")


def class_name(folder: str | os.PathLike) -> str:
    """The class a twin folder is loaded as: ``architectures[0]`` of a transformers ``config.json``, ``_class_name``
    of a diffusers ``model_index.json``, else ``class`` of a ``twin.json`` (for twins of other kinds of file)."""
    folder = Path(folder)
    for name, read in (("config.json", lambda d: (d.get("architectures") or [None])[0]),
                       ("model_index.json", lambda d: d.get("_class_name")), ("twin.json", lambda d: d.get("class"))):
        if (folder / name).is_file():
            found = read(json.loads((folder / name).read_text(encoding="utf-8")))
            if found:
                return found
    raise ParamsError(f"{folder} names no class (config.json architectures, model_index.json or twin.json).")


def twin_folder(model_id: str, root: str | os.PathLike) -> tuple[Path, str]:
    """``(folder, class name)`` of the twin of ``model_id`` under ``root`` (built on first use)."""
    family = family_of(model_id)
    folder = Path(root) / f"{family}-v{TWIN_VERSION}"
    if not folder.is_dir():
        with atomic_dir(folder) as tmp:
            TWINS[family](tmp)
    return folder, class_name(folder)
