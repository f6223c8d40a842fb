"""Progress of long loops, as log lines a terminal and ``run.log`` can show (issue 22).

A notebook run by papermill has no terminal of its own: what the kernel writes to stderr reaches the runner
as papermill log records. :func:`track` wraps a loop (generation batches, training steps, feature batches)
and logs, on the ``radaudit.progress`` logger at INFO, a line such as::

    generate greedy: 12/40 batches (30%), 1.9 batches/s, ETA 0:15

at the start, then at most every ``every_s`` seconds, and at the end. The runner
(:mod:`radaudit.run`) gives these lines back their real level in ``run.log`` and echoes them to the
terminal above papermill's cell bar, so a 4-minute training cell shows where it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["batches", "eta_line", "track"]

T = TypeVar("T")
log = logging.getLogger("radaudit.progress")


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def eta_line(stage: str, done: int, total: int | None, elapsed: float, unit: str = "it") -> str:
    """``"<stage>: done/total <unit> (pct), rate <unit>/s, ETA m:ss"`` (rate and ETA once something is done;
    without ``total``, count and rate only)."""
    rate = done / elapsed if elapsed > 0 and done else None
    head = f"{stage}: {done}/{total} {unit} ({100 * done / total:.0f}%)" if total else f"{stage}: {done} {unit}"
    if rate is None:
        return head
    tail = f", {rate:.3g} {unit}/s" if rate >= 0.1 else f", {1 / rate:.3g} s/{unit}"
    if total and done < total:
        tail += f", ETA {_clock((total - done) / rate)}"
    elif total:
        tail += f", done in {_clock(elapsed)}"
    return head + tail


def track(items: Iterable[T], stage: str, total: int | None = None, *, unit: str = "it", every_s: float = 10.0,
          logger: logging.Logger | None = None) -> Iterator[T]:
    """Yield ``items``, logging progress (:func:`eta_line`) at the start, every ``every_s`` seconds and at the end.
    ``total`` defaults to ``len(items)`` when it has one. A loop of one item logs nothing."""
    lg = logger or log
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    quiet = total is not None and total <= 1
    t0 = last = time.perf_counter()
    done = 0
    if not quiet:
        lg.info(eta_line(stage, 0, total, 0.0, unit))
    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if not quiet and now - last >= every_s and (total is None or done < total):
            lg.info(eta_line(stage, done, total, now - t0, unit))
            last = now
    if not quiet:
        lg.info(eta_line(stage, done, total, time.perf_counter() - t0, unit))


def batches(n: int, batch_size: int, stage: str = "image batches") -> Iterator[range]:
    """``range`` of each consecutive batch of ``n`` items (the last one shorter), with progress as ``stage``."""
    return track((range(start, min(n, start + batch_size)) for start in range(0, n, batch_size)), stage,
                 total=-(-n // batch_size) if n else 0, unit="batches")
