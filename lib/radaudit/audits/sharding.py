"""How a shard run (``radaudit run <experiment> --shard i/n``) splits an experiment's expensive step.

The rule, shared by every experiment's shard step (:mod:`radaudit.shards` runs them): the step lists its
work items in one deterministic order (the order the notebook's full run uses: studies, image batches),
and shard ``i`` of ``n`` takes the ``i``-th of ``n`` **contiguous, near-equal** parts of that list,
counting from 1 (as ``jest --shard=1/3`` and ``playwright --shard=1/3``). The parts are those of
``numpy.array_split``: the first ``n_items % n`` parts have one item more, so 10 items in 3 parts are
``[0..3]``, ``[4..6]``, ``[7..9]`` (sizes 4, 3, 3). Together the parts are disjoint and cover every item;
a part may be empty when there are fewer items than shards.

Contiguous rather than strided (``i, i+n, i+2n, ...``): each item's cached value must not depend on which
shard computed it, and both splits give that; contiguous parts keep neighbouring items (one generation
batch, one feature batch) in one process. It lives here, in the audits layer, so that each experiment's
shard step and :mod:`radaudit.shards` use the one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from radaudit.errors import ParamsError

__all__ = ["check_shard", "shard_slice", "split_parts"]

T = TypeVar("T")


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


def split_parts(items: Sequence[T], n: int) -> list[list[T]]:
    """``items`` cut into ``n`` contiguous near-equal parts, in order (part ``k`` is shard ``k + 1``)."""
    items = list(items)
    return [items[shard_slice(len(items), k, n)] for k in range(1, check_shard((1, n))[1] + 1)]
