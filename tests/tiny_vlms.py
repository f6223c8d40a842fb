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


def random_images(folder, seed: int, sizes=((40, 50), (30, 30))) -> list:
    """Random RGB PNGs ``img<i>.png`` in ``folder``, one per ``(height, width)``, drawn from ``seed``: the test images
    the VLM tests feed (two sizes, so batching must pad or resize)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for i, (h, w) in enumerate(sizes):
        path = folder / f"img{i}.png"
        Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8")).save(path)
        out.append(path)
    return out
