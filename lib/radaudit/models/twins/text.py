"""Twins of the language models and text encoders the paper presets name (rewriters, decomposers, BERTScore backbones)."""

from __future__ import annotations

#: family -> builder ``build(folder) -> folder``.
BUILDERS: dict = {}
#: Hub ids of the paper presets -> family.
HUB_IDS: dict[str, str] = {}
#: config.json ``model_type`` -> family.
MODEL_TYPES: dict[str, str] = {}
