"""Deterministic parts of an ordered work list: the one rule every shard step uses.

``radaudit run <experiment> --shard i/n`` (radaudit.shards) splits an experiment's expensive step: the step lists
its work items in one deterministic order (the notebook's: studies, image batches) and shard i of n takes the i-th
of n **contiguous, near-equal** parts, counting from 1 (as ``jest --shard=1/3``). The parts are
``numpy.array_split``'s: the first ``n_items % n`` parts have one item more (10 items in 3: sizes 4, 3, 3); they are
disjoint and cover every item, and a part may be empty when there are fewer items than shards. Contiguous rather
than strided so that neighbouring items (one generation batch, one feature batch) stay in one process. The rule
lives here, below the audits, so that every experiment's shard step and radaudit.shards use the one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radaudit.errors import ParamsError

__all__ = ["check_shard", "shard_slice", "split_parts"]


def check_shard(shard: Any) -> tuple[int, int]:
    """``(i, n)`` as ints with ``1 <= i <= n``; anything else is a :class:`ParamsError` naming the form."""
    try:
        i, n = shard
        ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (i, n)) and 1 <= i <= n
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParamsError(f"shard {shard!r} must be (i, n) with 1 <= i <= n: the i-th of n parts, counting from 1 "
                          "(e.g. 1/3, 2/3, 3/3).")
    return int(i), int(n)


def shard_slice(n_items: int, i: int, n: int) -> slice:
    """The items of shard ``i`` of ``n`` (1-based) among ``n_items`` ordered items, as a slice (see the module
    docstring: ``numpy.array_split`` parts, the larger ones first)."""
    i, n = check_shard((i, n))
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 0:
        raise ParamsError(f"n_items must be a count (an int >= 0), got {n_items!r}.")
    size, extra = divmod(n_items, n)
    start = (i - 1) * size + min(i - 1, extra)
    return slice(start, start + size + (1 if i <= extra else 0))


def split_parts(items: Sequence[Any], n: int) -> list[list[Any]]:
    """``items`` cut into ``n`` contiguous near-equal parts, in order (part ``k`` is shard ``k + 1``)."""
    items = list(items)
    return [items[shard_slice(len(items), k, n)] for k in range(1, check_shard((1, n))[1] + 1)]
