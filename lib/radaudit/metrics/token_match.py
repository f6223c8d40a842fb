"""BERTScore's two costly steps, without padding work: length-bucketed encoder passes and the greedy match.

:class:`radaudit.metrics.embedding.BERTScore` calls these; ``benchmarks/bench_bertscore.py`` times
:func:`forward_states` over :func:`forward_batches` alone (the encoder-only floor) with the very same batches.

Batching (:func:`forward_batches`)
----------------------------------
The distinct texts are sorted by token length and cut into runs of neighbours. A batch of ``n`` texts whose longest
has ``w`` tokens costs about ``call_cost + n * w`` token-steps: ``n * w`` for the padded block the encoder
computes, ``call_cost`` for one forward call's fixed overhead (Python and kernel dispatch of every layer). The cut
points minimise the total by dynamic programming over the sorted lengths (exact; O(texts x batch_size)), at most
``batch_size`` texts a batch. With ``call_cost = 0`` every batch holds texts of one length (no padding at all, many
calls); with a huge one, full batches (fewest calls, most padding). The default, 32, is the MiniLM's measured
overhead on one CPU thread: one forward call of 1 x 2 tokens takes about as long as 35-40 tokens inside a batch
(``benchmarks/bench_bertscore.py`` prints the padding and the number of calls). On the 374 distinct texts of the
200 RadEval pairs this makes 26 calls padding 2.3% instead of 22 calls padding 5.0% (the former rule: a new
batch when a text is under 90% of the batch's longest). A batch whose texts all have the same length is passed
without an attention mask.

Matching (:func:`greedy_match`)
-------------------------------
Pairs sorted by length are matched ``batch_size`` at a time with one batched matrix product of the L2-normalised
token states (``[B, l, d] @ [B, d, k]``); padded rows and columns are masked to ``-inf`` before the maxima, so a
token's best match is over the real tokens of the other text, then weighted sums (weights normalised first, then
summed: bert-score's float order). No Python loop runs over tokens; the only per-pair Python work is gathering the
pair's tensors. Results come back in input order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_CALL_COST", "forward_batches", "forward_states", "greedy_match", "normalised_token_states"]

#: One forward call's fixed cost in token-steps (see the module docstring), for :func:`forward_batches`.
DEFAULT_CALL_COST = 32


def forward_batches(lengths: Sequence[int], batch_size: int, call_cost: float = DEFAULT_CALL_COST) -> list[list[int]]:
    """Indices of ``lengths`` grouped for padded forward passes: sorted by length (longest first; ties by index),
    cut into runs of at most ``batch_size`` that minimise ``sum(call_cost + len(batch) * longest(batch))``.

    Exact dynamic programming over the sorted order (an optimal partition of a sorted list into groups priced by
    their size and largest member is contiguous). Each batch lists its longest text first.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    import numpy as np

    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    n = len(order)
    width = np.array([lengths[i] for i in order], dtype=float)
    best = np.zeros(n + 1)  # best[j]: cheapest cost of the first j sorted texts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        lo = max(0, j - batch_size)
        i = np.arange(lo, j)  # batch = sorted[i:j]; its longest is sorted[i]
        cost = best[lo:j] + call_cost + (j - i) * width[lo:j]
        k = int(np.argmin(cost))  # the first minimum: the largest batch among equals
        best[j], cut[j] = cost[k], lo + k
    batches: list[list[int]] = []
    j = n
    while j > 0:
        batches.append(order[cut[j]:j])
        j = cut[j]
    return batches[::-1]


def forward_states(model: Any, rows: Sequence[Sequence[int]], pad_id: int, device: str,
                   hidden_index: int | None = None) -> Any:
    """``[B, w, d]`` float32 token states of one batch of token-id rows (``w`` = the longest row), padded with
    ``pad_id`` and masked; no mask when every row has the same length. ``hidden_index=None``: the model's first
    output (``last_hidden_state``), else ``hidden_states[hidden_index]``. Call under ``torch.inference_mode``."""
    import torch

    lens = [len(r) for r in rows]
    width = max(lens)
    batch = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for k, r in enumerate(rows):
        batch[k, :lens[k]] = torch.as_tensor(r, dtype=torch.long)
    mask = None
    if min(lens) < width:
        mask = (torch.arange(width)[None, :] < torch.tensor(lens)[:, None]).long().to(device)
    res = model(input_ids=batch.to(device), attention_mask=mask, output_hidden_states=hidden_index is not None)
    states = res.hidden_states[hidden_index] if hidden_index is not None else res[0]
    return states.float()


def normalised_token_states(model: Any, ids: Sequence[Sequence[int]], pad_id: int, batch_size: int, device: str,
                            hidden_index: int | None = None,
                            call_cost: float = DEFAULT_CALL_COST) -> list[Any]:
    """Per text, its ``(len, d)`` L2-normalised float32 token states (views into its batch's tensor, on
    ``device``), encoded in :func:`forward_batches` batches and returned in input order."""
    import torch

    out: list[Any] = [None] * len(ids)
    with torch.inference_mode():
        for idx in forward_batches([len(x) for x in ids], batch_size, call_cost):
            states = forward_states(model, [ids[i] for i in idx], pad_id, device, hidden_index)
            states = states / torch.norm(states, dim=-1, keepdim=True)  # per token, as bert-score (padding unused)
            for k, i in enumerate(idx):
                out[i] = states[k, :len(ids[i])]
    return out


def greedy_match(cand_states: Sequence[Any], ref_states: Sequence[Any], cand_weights: Sequence[Any],
                 ref_weights: Sequence[Any], batch_size: int, clip_p: Sequence[bool] | None = None,
                 clip_r: Sequence[bool] | None = None) -> tuple[Any, Any]:
    """``(P, R)``: float32 CPU tensors ``[n]`` of BERTScore's greedy matching (Zhang et al. 2020, Eq. 1-2) for
    ``n`` pairs given per pair its candidate's and reference's normalised token states ``(l, d)``/``(k, d)`` and
    token weights ``(l,)``/``(k,)``.

    ``P_i = sum_j w_j max_k c_j . r_k / sum_j w_j`` over the candidate's tokens j (recall: roles swapped).
    ``clip_p``/``clip_r`` (per pair) clip a token's best match at 0 (bert-score's padding artefact; see
    :mod:`radaudit.metrics.embedding`). A text without tokens gives NaN (0/0); the caller decides."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    n = len(cand_states)
    P = torch.zeros(n, dtype=torch.float32)
    R = torch.zeros(n, dtype=torch.float32)
    if n == 0:
        return P, R
    clen = [len(s) for s in cand_states]
    rlen = [len(s) for s in ref_states]
    order = sorted(range(n), key=lambda i: max(clen[i], rlen[i]), reverse=True)
    with torch.inference_mode():
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            h = pad_sequence([cand_states[i] for i in idx], batch_first=True)
            r = pad_sequence([ref_states[i] for i in idx], batch_first=True)
            dev = h.device
            hw = pad_sequence([cand_weights[i] for i in idx], batch_first=True).to(dev)
            rw = pad_sequence([ref_weights[i] for i in idx], batch_first=True).to(dev)
            hm = torch.arange(h.shape[1], device=dev)[None, :] < torch.tensor([clen[i] for i in idx], device=dev)[:, None]
            rm = torch.arange(r.shape[1], device=dev)[None, :] < torch.tensor([rlen[i] for i in idx], device=dev)[:, None]
            sim = torch.bmm(h, r.transpose(1, 2))
            sim.masked_fill_(~(hm[:, :, None] & rm[:, None, :]), -math.inf)  # max over real tokens only
            word_p = sim.max(dim=2).values.masked_fill(~hm, 0.0)
            word_r = sim.max(dim=1).values.masked_fill(~rm, 0.0)
            if clip_p is not None:
                cp = torch.tensor([bool(clip_p[i]) for i in idx], device=dev)[:, None]
                word_p = torch.where(cp, word_p.clamp(min=0.0), word_p)
            if clip_r is not None:
                cr = torch.tensor([bool(clip_r[i]) for i in idx], device=dev)[:, None]
                word_r = torch.where(cr, word_r.clamp(min=0.0), word_r)
            # bert-score normalises the weights first, then sums (same float order)
            P[idx] = (word_p * (hw / hw.sum(dim=1, keepdim=True))).sum(dim=1).cpu()
            R[idx] = (word_r * (rw / rw.sum(dim=1, keepdim=True))).sum(dim=1).cpu()
    return P, R
