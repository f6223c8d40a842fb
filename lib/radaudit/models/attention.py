"""Attention by modality: for each generated token, the share of attention on image vs text input tokens.

Paper: ``../shared/papers/003_*.txt`` §2.3 ("Modality Attention"): ``A_t ∈ R^n`` is the attention of
the t-th generated token over the ``n = n_T + n_I`` *input* tokens, split into ``[A_t^(T), A_t^(I)]``;
the beginning-of-sequence weight is set to zero (``A_t(BOS) = 0``, after Vig & Belinkov). The anchor
code (SMS ``src/vis_utils.py``, adapted from LVLM-Interpret) averages over heads, normalises per
layer, averages over layers, with the first ("null attention") position zeroed. We do exactly that:

For generated token ``t`` (``t = 0`` is the first new token), in every decoder layer ``l``:

1. take the attention row of the **query position that produces token t**: the last prompt position
   ``n - 1`` for ``t = 0`` (the prefill step), and the position of token ``t - 1`` (``n + t - 1``) for
   ``t >= 1`` (each decoding step feeds the previous token as the single query);
2. average over heads; keep the keys ``0 .. n-1`` (the input tokens; attention to earlier *generated*
   tokens is not part of ``A_t`` and is reported separately as ``generated_attention``);
3. set position 0 to zero (the BOS token, or whatever token comes first — e.g. ``<|im_start|>`` for
   Qwen2-VL, which has no BOS — it is the attention sink either way);
4. renormalise the remaining input weights to sum to 1 (``normalise="per_layer"``, the anchor's
   order; ``"after_mean"`` instead averages the un-normalised rows over layers and normalises once).

Then average over layers. ``image_share`` is the sum over image-token positions and ``text_share`` the
sum over every other input position (chat-template markers, the instruction, the report, and the
vision start/end markers, which are text-vocabulary tokens); ``image_share + text_share = 1``. A
text-only prompt has no image positions, so ``image_share = 0`` and ``text_share = 1`` (not NaN).

Image-token positions come from the model config's ``image_token_id`` (``image_token_index`` on older
LLaVA-style configs; the processor's ``image_token_id`` as a fallback) matched against the input ids;
for Qwen2-VL-style configs every run of image tokens must lie between ``vision_start_token_id`` and
``vision_end_token_id``, which is checked.

Cross-attention models (Llama-3.2-Vision / Mllama) do not put image tokens into the text sequence:
the image enters through the layers listed in ``text_config.cross_attention_layers``, whose keys are
vision patches, and the text holds one ``<|image|>`` placeholder. Their attentions cannot be stacked
with the self-attention layers' (other keys), so :func:`self_attention_layers` keeps the
self-attention layers only; there the image position is the placeholder, and the share measures the
attention the answer pays to *that token*, not to the image's content (which arrives through the
cross-attention layers: their number is reported as ``n_cross_attention_layers``). Read the share of a
cross-attention model with that in mind; it is not comparable with a LLaVA-style model's.

Attention weights exist only with ``attn_implementation="eager"`` (sdpa / flash attention never
materialise them). :func:`attention_by_modality` switches a loaded model to eager for the call and
back afterwards; loading with ``load_vlm(..., attn_implementation="eager")`` avoids the switch.
Batch size is 1 (no padding, so positions are the input ids' positions).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError
from radaudit.models.vlm import (
    decoding_strategy,
    encode_batch,
    generate_with_strategy,
    processor_tokenizer,
    special_token_ids,
)

logger = logging.getLogger(__name__)

NORMALISATIONS = ("per_layer", "after_mean")


def _config_id(config: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return int(value)
    return None


def cross_attention_layers(config: Any) -> list[int]:
    """Indices of the decoder layers that cross-attend to the image (Mllama's ``cross_attention_layers``), else ``[]``."""
    text = getattr(config, "text_config", None) or config
    return sorted(int(i) for i in (getattr(text, "cross_attention_layers", None) or []))


def self_attention_layers(attentions: Sequence[Any], config: Any) -> list[Any]:
    """The attention tensors of the self-attention layers (cross-attention layers left out, see the module docstring)."""
    skip = set(cross_attention_layers(config))
    return [a for i, a in enumerate(attentions) if i not in skip]


def image_token_mask(input_ids: Any, config: Any, processor: Any = None) -> np.ndarray:
    """Boolean mask over one sequence's positions: ``True`` where the token is an image (or video) token.

    The image token id is read from ``config`` (``image_token_id`` / ``image_token_index``), else from
    ``processor.image_token_id``. With ``vision_start_token_id``/``vision_end_token_id`` in the config
    (Qwen2-VL family), each run of image tokens must sit between a start and an end marker.
    """
    ids = np.asarray(input_ids.tolist() if hasattr(input_ids, "tolist") else input_ids).reshape(-1)
    image_id = _config_id(config, "image_token_id", "image_token_index")
    if image_id is None and processor is not None:
        image_id = _config_id(processor, "image_token_id")
    if image_id is None:
        raise ParamsError("Cannot find the image token id: the model config has no image_token_id / image_token_index "
                          "and no processor with image_token_id was given.")
    visual = {image_id}
    video_id = _config_id(config, "video_token_id", "video_token_index")
    if video_id is not None:
        visual.add(video_id)
    mask = np.isin(ids, list(visual))
    start, end = _config_id(config, "vision_start_token_id"), _config_id(config, "vision_end_token_id")
    if start is not None and end is not None and mask.any():
        inside = np.zeros_like(mask)
        open_at = None
        for i, t in enumerate(ids):
            if t == start:
                open_at = i
            elif t == end and open_at is not None:
                inside[open_at + 1:i] = True
                open_at = None
        if np.any(mask & ~inside):
            raise ParamsError("Image tokens found outside <vision_start> ... <vision_end> markers: the prompt was not "
                              "built by this model's chat template / processor.")
    return mask


def modality_shares(layer_rows: np.ndarray, image_mask: np.ndarray, *, zero_first: bool = True,
                    normalise: str = "per_layer") -> dict[str, Any]:
    """Shares of one generated token's attention on image vs text input tokens (see the module docstring).

    ``layer_rows``: ``[layers, heads, n_keys]`` attention of the query that produced the token;
    ``image_mask``: ``[n_input]`` booleans, ``n_input <= n_keys`` (keys beyond it are generated tokens).
    Returns ``image_share``, ``text_share``, ``first_position_attention`` (mean over layers and heads
    of the weight on position 0 before zeroing), ``generated_attention`` (mean weight on earlier
    generated tokens) and ``per_position`` (the normalised ``[n_input]`` weights, position 0 = 0).
    """
    if normalise not in NORMALISATIONS:
        raise ParamsError(f"normalise must be one of {', '.join(NORMALISATIONS)}, got {normalise!r}.")
    rows = np.asarray(layer_rows, dtype=np.float64)
    if rows.ndim != 3:
        raise ValueError(f"layer_rows must be [layers, heads, keys], got shape {rows.shape}")
    mask = np.asarray(image_mask, dtype=bool)
    n = mask.shape[0]
    per_layer = rows.mean(axis=1)  # [layers, keys]
    first = float(per_layer[:, 0].mean())
    generated = float(per_layer[:, n:].sum(axis=1).mean())
    inputs = per_layer[:, :n].copy()
    if zero_first:
        inputs[:, 0] = 0.0
    if normalise == "per_layer":
        sums = inputs.sum(axis=1, keepdims=True)
        weights = np.divide(inputs, sums, out=np.zeros_like(inputs), where=sums > 0).mean(axis=0)
    else:
        mean = inputs.mean(axis=0)
        total = mean.sum()
        weights = mean / total if total > 0 else np.zeros_like(mean)
    image = float(weights[mask].sum())
    text = float(weights[~mask].sum())
    return {"image_share": image, "text_share": text, "first_position_attention": first,
            "generated_attention": generated, "per_position": weights}


@contextmanager
def eager_attention(model: Any) -> Iterator[Any]:
    """Run ``model`` with eager attention (needed for attention weights), restoring its setting after."""
    current = getattr(model.config, "_attn_implementation", None)
    if current == "eager" or current is None:
        yield model
        return
    if not hasattr(model, "set_attn_implementation"):
        raise ParamsError(f"Attention weights need attn_implementation='eager' but the model uses {current!r}: load it "
                          "with load_vlm(..., attn_implementation='eager').")
    logger.info("Switching the model from %r to eager attention to read attention weights.", current)
    model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        model.set_attn_implementation(current)


def attention_by_modality(processor: Any, model: Any, prompt: str | None, image: Any = None, max_new_tokens: int = 16,
                          *, system: str | None = None, normalise: str = "per_layer", zero_first: bool = True,
                          return_positions: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """One row per greedily generated token: how its attention splits between image and text input tokens.

    Columns: ``step`` (0 = first generated token), ``token_id``, ``token`` (decoded, special tokens
    kept), ``query_position`` (the position whose attention row is used, see the module docstring),
    ``n_input_tokens``, ``n_image_tokens``, ``n_text_tokens`` (input positions other than the image
    tokens, including the zeroed first position), ``image_share``, ``text_share`` (sum to 1),
    ``first_position_attention``, ``generated_attention`` and ``normalise``.

    ``return_positions=True`` also returns a long table (``step, position, token, modality,
    attention``) of the normalised per-input-token weights, for token-level heat maps (paper Fig. 4).
    """
    inputs, _texts, _pil = encode_batch(processor, model, [prompt], [image], system=system)
    input_ids = inputs["input_ids"][0]
    n = int(input_ids.shape[0])
    mask = image_token_mask(input_ids, model.config, processor)
    eos, pad = special_token_ids(processor, model)
    tok = processor_tokenizer(processor)
    with eager_attention(model):
        out = generate_with_strategy(model, inputs, decoding_strategy("greedy", int(max_new_tokens)), [0], eos, pad,
                                     output_attentions=True, return_dict_in_generate=True)
    if not out.attentions or out.attentions[0] is None or out.attentions[0][0] is None:
        raise ParamsError("The model returned no attention weights; load it with attn_implementation='eager'.")
    new_ids = out.sequences[0, n:].tolist()
    rows, positions = [], []
    input_tokens = ([tok.decode([int(t)], skip_special_tokens=False) for t in input_ids.tolist()]
                    if return_positions else [])
    for step, layers in enumerate(out.attentions):
        if step >= len(new_ids):
            break
        # layers: one [batch, heads, q, keys] tensor per decoder layer; the last query row is the one
        # that produced this step's token (q = n at the prefill step, 1 afterwards).
        stacked = np.stack([layer[0, :, -1, :].float().cpu().numpy()
                            for layer in self_attention_layers(layers, model.config)])
        shares = modality_shares(stacked, mask, zero_first=zero_first, normalise=normalise)
        tid = int(new_ids[step])
        rows.append({"step": step, "token_id": tid, "token": tok.decode([tid], skip_special_tokens=False),
                     "query_position": n - 1 + step, "n_input_tokens": n, "n_image_tokens": int(mask.sum()),
                     "n_text_tokens": int(n - mask.sum()), "image_share": shares["image_share"],
                     "text_share": shares["text_share"], "first_position_attention": shares["first_position_attention"],
                     "generated_attention": shares["generated_attention"], "normalise": normalise,
                     "n_cross_attention_layers": len(cross_attention_layers(model.config))})
        if return_positions:
            for pos, w in enumerate(shares["per_position"]):
                positions.append({"step": step, "position": pos, "token": input_tokens[pos],
                                  "modality": "image" if mask[pos] else "text", "attention": float(w)})
    frame = pd.DataFrame(rows)
    if return_positions:
        return frame, pd.DataFrame(positions, columns=["step", "position", "token", "modality", "attention"])
    return frame


__all__: Sequence[str] = ("attention_by_modality", "cross_attention_layers", "eager_attention", "image_token_mask",
                          "modality_shares", "self_attention_layers")
