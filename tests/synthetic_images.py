"""Tiny labelled images for the classifier tests (imported by test modules, like tiny_vlms)."""

from __future__ import annotations

import numpy as np


def squares(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Label 0: a bright central square; label 1: a bright top bar (both survive flips and ±10° rotations)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (n, 2)).astype(np.float32)
    x = rng.uniform(0, 0.3, (n, 16, 16)).astype(np.float32)
    x[y[:, 0] == 1, 5:11, 5:11] += 0.6
    x[y[:, 1] == 1, 1:3, 2:14] += 0.6
    return np.clip(x, 0, 1), y
