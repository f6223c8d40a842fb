"""Tiny random vision-language models for tests: the twins of :mod:`radaudit.models.twins` (LLaVA,
Qwen2-VL, Qwen3-VL, Gemma 3, Mllama, Janus), each ``build(folder) -> folder``. Random weights: for plumbing and
invariants, not answers. Importable from any test as ``import tiny_vlms`` (``tests/`` is on sys.path).
"""

from __future__ import annotations

from radaudit.models.twins import (  # noqa: F401
    CORPUS,
    LLAVA_TEMPLATE,
    QWEN_TEMPLATE,
    build_gemma3,
    build_janus,
    build_llava,
    build_mllama,
    build_qwen2vl,
    tokenizer,
)
from radaudit.models.twins import vlm as _vlm

#: family -> builder, the vision-language twins only (TWINS also holds text and image models)
BUILDERS = dict(_vlm.BUILDERS)
