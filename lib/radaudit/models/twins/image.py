"""Twins of the image models the paper presets name (text-to-image pipelines, image encoders, classifiers)."""

from __future__ import annotations

#: family -> builder ``build(folder) -> folder``.
BUILDERS: dict = {}
#: Hub ids of the paper presets -> family.
HUB_IDS: dict[str, str] = {}
#: config.json ``model_type`` -> family.
MODEL_TYPES: dict[str, str] = {}
