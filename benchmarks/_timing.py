"""Shared timing helper for the benchmark scripts (run them as `python benchmarks/<name>.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``fn()``, in seconds (least disturbed by noise)."""
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
