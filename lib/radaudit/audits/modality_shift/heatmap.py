"""Where does the answer look? The answer token's attention by layer and over the image patches.

Paper §2.3 ("Modality Attention", Fig. 4) splits a generated token's attention into image and text
tokens. Two views are added here, both read from **one forward pass** over the prompt: the query at
the last prompt position is the one that produces the first answer token ("Yes"/"No"), so its
attention row in every layer is the answer's attention (the same row
:func:`radaudit.models.attention.attention_by_modality` uses for step 0):

* :func:`layer_modality_shares`: per decoder layer, the share of that row on **all** image tokens vs
  **all** text tokens (heads averaged, the first position zeroed as ``A_t(BOS) = 0``, renormalised
  over the input, as :func:`radaudit.models.attention.modality_shares` does for one layer), plus the
  mean weight per token of each modality (there are more text tokens than image tokens, so a share
  alone favours the text);
* :func:`patch_heatmap`: the image part of that row laid out on the image-token grid — the share of
  the answer's image attention on each patch, summing to 1 — for an overlay on the X-ray
  (:func:`radaudit.audits.modality_shift.plots.plot_patch_heatmaps`).

Attention over the language model's image tokens is not where the answer's evidence lies in the
pixels: the vision encoder has already mixed the patches before the language model reads them (the
demo's marked images show it: the answer follows a marker in one corner while its attention rests
elsewhere). :func:`gradient_maps` therefore adds a **gradient map**: the sensitivity of the answer
margin ``logit(Yes) - logit(No)`` at the first answer position to each input pixel
(``|d margin / d pixel|`` summed over channels — plain sensitivity, not gradient x input, which would
favour the marker's extreme pixel values by construction), summed over the same patch grid and
normalised to shares. It needs ``pixel_values`` of shape ``[1, channels, height, width]`` (LLaVA,
Gemma-3 / MedGemma; not Qwen2-VL's flattened patches, nor Mllama's tiles: a clear error).

Positions come from the model, never from assumptions about one architecture: the image tokens are
found by :func:`radaudit.models.attention.image_token_mask` (the config's image token id) and laid out
row-major on the grid of :func:`image_grid` — the square of a LLaVA-style model (576 = 24 x 24 for
LLaVA-1.5, 256 = 16 x 16 for Gemma-3/MedGemma), or ``image_grid_thw`` divided by the spatial merge
size for the Qwen2-VL family. Models that do not put image tokens into the language model's sequence
(Llama-3.2-Vision's cross-attention) have no such positions and raise a clear error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import is_missing
from radaudit.audits.modality_shift.traces import memo_traces
from radaudit.errors import ParamsError
from radaudit.models.attention import (
    cross_attention_layers,
    eager_attention,
    image_token_mask,
    modality_shares,
    self_attention_layers,
)
from radaudit.models.vlm import encode_batch, processor_tokenizer

__all__ = ["MAP_COLUMNS", "AnswerAttention", "answer_attention", "answer_gradient", "attention_maps", "gradient_maps",
           "image_grid", "layer_modality_shares", "patch_heatmap", "pool_to_grid"]


@dataclass(frozen=True)
class AnswerAttention:
    """The answer token's attention in one item.

    ``rows``: ``[layers, heads, n]`` attention of the last prompt position over the ``n`` input
    positions; ``image_mask``: ``[n]`` booleans (image tokens); ``grid``: ``(rows, cols)`` of the image
    tokens, ``None`` without an image; ``input_ids``: ``[n]``.
    """

    rows: np.ndarray
    image_mask: np.ndarray
    grid: tuple[int, int] | None
    input_ids: np.ndarray


def image_grid(n_image_tokens: int, config: Any = None, image_grid_thw: Any = None) -> tuple[int, int]:
    """``(rows, cols)`` of one image's tokens in the language model's sequence, row-major.

    With ``image_grid_thw`` (Qwen2-VL family: ``[t, h, w]`` patches of the vision encoder) the grid is
    ``(h / m, w / m)`` with ``m`` the ``spatial_merge_size`` of ``config.vision_config`` (default 2);
    otherwise the tokens must form a square (LLaVA, Gemma-3, PaliGemma). Raises :class:`ParamsError`
    when the count fits neither (e.g. LLaVA-NeXT's any-resolution tiles, or several images).
    """
    n = int(n_image_tokens)
    if n < 1:
        raise ParamsError("image_grid: the input holds no image tokens.")
    if image_grid_thw is not None:
        thw = np.asarray(image_grid_thw.tolist() if hasattr(image_grid_thw, "tolist") else image_grid_thw).reshape(-1, 3)
        if len(thw) != 1:
            raise ParamsError(f"image_grid: {len(thw)} images in one input; the heatmap handles one image.")
        vision = getattr(config, "vision_config", None)
        merge = int(getattr(vision, "spatial_merge_size", None) or 2)
        t, h, w = (int(v) for v in thw[0])
        grid = (h // merge, w // merge)
        if t * grid[0] * grid[1] != n:
            raise ParamsError(f"image_grid: image_grid_thw {thw[0].tolist()} with merge size {merge} gives "
                              f"{t * grid[0] * grid[1]} tokens but the input holds {n}.")
        if t != 1:
            raise ParamsError("image_grid: a video (t > 1) has no single spatial grid.")
        return grid
    side = math.isqrt(n)
    if side * side != n:
        raise ParamsError(f"image_grid: {n} image tokens do not form a square grid and the processor gave no "
                          "image_grid_thw: this model's image layout (tiles?) is not supported by the heatmap.")
    return side, side


def answer_attention(processor: Any, model: Any, prompt: str | None, image: Any = None, *,
                     system: str | None = None) -> AnswerAttention:
    """One forward pass (eager attention, batch of one, no padding) and the answer token's attention.

    The prompt is rendered and encoded exactly as :func:`radaudit.models.vlm.vlm_generate` does
    (:func:`radaudit.models.vlm.encode_batch`).
    """
    import torch

    inputs, _texts, _pil = encode_batch(processor, model, [prompt], [image], system=system)
    input_ids = inputs["input_ids"][0]
    mask = image_token_mask(input_ids, model.config, processor)
    with eager_attention(model), torch.no_grad():
        out = model(**inputs, output_attentions=True, return_dict=True)
    if not out.attentions or out.attentions[0] is None:
        raise ParamsError("The model returned no attention weights; load it with attn_implementation='eager'.")
    rows = np.stack([layer[0, :, -1, :].float().cpu().numpy()
                     for layer in self_attention_layers(out.attentions, model.config)])
    # a cross-attention model's one <|image|> placeholder is no patch grid: no heatmap (its layer shares stay)
    grid = (image_grid(int(mask.sum()), model.config, inputs.get("image_grid_thw"))
            if mask.any() and not cross_attention_layers(model.config) else None)
    return AnswerAttention(rows=rows, image_mask=mask, grid=grid, input_ids=input_ids.cpu().numpy())


def layer_modality_shares(rows: np.ndarray, image_mask: np.ndarray, *, zero_first: bool = True) -> pd.DataFrame:
    """Per layer: the answer token's attention on all image vs all text input tokens.

    ``rows``: ``[layers, heads, n_keys]``; ``image_mask``: ``[n]`` with ``n <= n_keys``. For each layer
    ``l`` (heads averaged, position 0 zeroed, renormalised over the ``n`` input positions):
    ``image_share = sum_{i in I} a_l(i)``, ``text_share = 1 - image_share`` (0 and 1 without image
    tokens), ``image_per_token = image_share / |I|`` and ``text_per_token = text_share / |T|`` (NaN
    for an empty modality; ``|T|`` excludes the zeroed position 0).
    Columns: ``layer, image_share, text_share, image_per_token, text_per_token, n_image_tokens,
    n_text_tokens``.
    """
    rows = np.asarray(rows, dtype=np.float64)
    mask = np.asarray(image_mask, dtype=bool)
    n_image = int(mask.sum())
    n_text = int((~mask).sum()) - (1 if zero_first and not mask[0] else 0)
    out = []
    for layer in range(rows.shape[0]):
        s = modality_shares(rows[layer:layer + 1], mask, zero_first=zero_first)
        out.append({"layer": layer, "image_share": s["image_share"], "text_share": s["text_share"],
                    "image_per_token": s["image_share"] / n_image if n_image else math.nan,
                    "text_per_token": s["text_share"] / n_text if n_text > 0 else math.nan,
                    "n_image_tokens": n_image, "n_text_tokens": n_text})
    return pd.DataFrame(out)


def patch_heatmap(rows: np.ndarray, image_mask: np.ndarray, grid: tuple[int, int], *,
                  layers: Sequence[int] | None = None, zero_first: bool = True) -> np.ndarray:
    """``[grid_rows, grid_cols]``: the share of the answer token's image attention on each patch (sums to 1).

    The per-position weights are those of :func:`radaudit.models.attention.modality_shares` over
    ``layers`` (default all: heads averaged, position 0 zeroed, each layer normalised, layers
    averaged); the image positions, in sequence order, are laid out row-major on ``grid`` and
    divided by their sum (all zeros when the image gets no attention at all).
    """
    rows = np.asarray(rows, dtype=np.float64)
    mask = np.asarray(image_mask, dtype=bool)
    h, w = (int(v) for v in grid)
    if int(mask.sum()) != h * w:
        raise ParamsError(f"patch_heatmap: {int(mask.sum())} image positions do not fill a {h} x {w} grid.")
    sel = rows if layers is None else rows[list(layers)]
    if sel.shape[0] == 0:
        raise ParamsError("patch_heatmap: no layer selected.")
    weights = modality_shares(sel, mask, zero_first=zero_first)["per_position"][mask]
    total = weights.sum()
    return (weights / total if total > 0 else np.zeros_like(weights)).reshape(h, w)


def attention_maps(processor: Any, model: Any, items: pd.DataFrame, *, sample_ids: Sequence[str],
                   conditions: Sequence[str] | None = None, model_name: str | None = None,
                   system: str | None = None, cache: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The answer's attention for the chosen items: ``(layers, maps)``, two tidy tables.

    ``layers``: one row per (sample, condition, layer), :func:`layer_modality_shares`' columns.
    ``maps``: one row per (sample, condition, patch) of the items that show an image:
    ``row, col, weight`` (:func:`patch_heatmap` over all layers), ``grid_rows, grid_cols``,
    ``image_path`` and ``image_source`` (the image shown: the partner's under Image Shift), ``label``.
    Both start with ``model, sample_id, condition``. ``cache``: as
    :func:`radaudit.audits.modality_shift.conditions.attention_table`'s (:mod:`radaudit.audits.modality_shift.traces`).
    """
    sel = _select(items, sample_ids, conditions, "attention_maps")
    name = _model_name(model, model_name)

    def compute() -> tuple[pd.DataFrame, pd.DataFrame]:
        layer_parts, map_rows = [], []
        for it in sel.itertuples(index=False):
            image = _image_of(it)
            att = answer_attention(processor, model, it.prompt, image, system=system)
            keys = {"model": name, "sample_id": it.sample_id, "condition": it.condition}
            layer_parts.append(layer_modality_shares(att.rows, att.image_mask).assign(**keys))
            if att.grid is not None:
                map_rows += _map_rows(name, it, image, patch_heatmap(att.rows, att.image_mask, att.grid))
        layers_df = pd.concat(layer_parts, ignore_index=True)
        layers_df = layers_df[_LEAD + [c for c in layers_df.columns if c not in _LEAD]]
        return layers_df, pd.DataFrame(map_rows, columns=MAP_COLUMNS)

    layers_df, maps_df = memo_traces("modality_shift.attention_maps", model, sel, {"model_name": name, "system": system},
                                     cache, compute)
    return layers_df, maps_df


_LEAD = ["model", "sample_id", "condition"]
#: Columns of a heatmap table (:func:`attention_maps` ``[1]``, :func:`gradient_maps`).
MAP_COLUMNS = [*_LEAD, "row", "col", "weight", "grid_rows", "grid_cols", "image_path", "image_source", "label"]


def _select(items: pd.DataFrame, sample_ids: Sequence[str], conditions: Sequence[str] | None, where: str,
            *, with_image: bool = False) -> pd.DataFrame:
    sel = items[items["sample_id"].isin(list(sample_ids))]
    if conditions is not None:
        sel = sel[sel["condition"].isin(list(conditions))]
    if with_image:
        sel = sel[[_image_of(it) is not None for it in sel.itertuples(index=False)]]
    if sel.empty:
        raise ParamsError(f"{where}: no items{' with an image' if with_image else ''} match the requested "
                          "sample_ids / conditions.")
    return sel


def _model_name(model: Any, model_name: str | None) -> str:
    return model_name or getattr(model, "name_or_path", None) or type(model).__name__


def _image_of(item: Any) -> str | None:
    return None if is_missing(item.image_path) else str(item.image_path)


def _map_rows(name: str, item: Any, image: str | None, heat: np.ndarray) -> list[dict[str, Any]]:
    """One :data:`MAP_COLUMNS` row per patch of ``heat`` (``[rows, cols]`` shares) for ``item``."""
    rows, cols = heat.shape
    return [{"model": name, "sample_id": item.sample_id, "condition": item.condition, "row": r, "col": c,
             "weight": float(w), "grid_rows": rows, "grid_cols": cols, "image_path": image,
             "image_source": item.image_source, "label": int(item.label)} for (r, c), w in np.ndenumerate(heat)]


def pool_to_grid(saliency: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """``[rows, cols]`` shares (sum 1) of a ``[height, width]`` saliency map summed over equal blocks.

    ``height`` and ``width`` must be multiples of the grid (the processor's crop is); all zeros stay zeros.
    """
    sal = np.asarray(saliency, dtype=np.float64)
    h, w = (int(v) for v in grid)
    if sal.ndim != 2 or sal.shape[0] % h or sal.shape[1] % w:
        raise ParamsError(f"pool_to_grid: a {sal.shape} map does not divide into a {h} x {w} grid.")
    blocks = sal.reshape(h, sal.shape[0] // h, w, sal.shape[1] // w).sum(axis=(1, 3))
    total = blocks.sum()
    return blocks / total if total > 0 else blocks


def answer_gradient(processor: Any, model: Any, prompt: str | None, image: Any, *, yes: str = "Yes", no: str = "No",
                    system: str | None = None) -> tuple[np.ndarray, tuple[int, int]]:
    """``(saliency [height, width], grid)``: ``|d (logit(yes) - logit(no)) / d pixel|`` summed over channels.

    One forward and backward pass (batch of one) over the prompt encoded as
    :func:`radaudit.models.vlm.encode_batch` does; the logits are those of the last prompt position
    (the first answer token), ``yes`` / ``no`` single tokens of the tokenizer. ``grid`` is the image-token
    grid (:func:`image_grid`), the same as the attention map's.
    """
    import torch

    if image is None:
        raise ParamsError("answer_gradient: a gradient map needs an image.")
    inputs, _texts, _pil = encode_batch(processor, model, [prompt], [image], system=system)
    pixels = inputs.get("pixel_values")
    if pixels is None or pixels.ndim != 4 or pixels.shape[0] != 1:
        shape = None if pixels is None else tuple(pixels.shape)
        raise ParamsError(f"answer_gradient: pixel_values of shape {shape}; gradient maps need [1, channels, height, "
                          "width] (LLaVA, Gemma-3), not flattened patches or tiles.")
    tok = processor_tokenizer(processor)
    ids = []
    for word in (yes, no):
        enc = tok(word, add_special_tokens=False)["input_ids"]
        if len(enc) != 1:
            raise ParamsError(f"answer_gradient: {word!r} is not one token for this tokenizer.")
        ids.append(enc[0])
    mask = image_token_mask(inputs["input_ids"][0], model.config, processor)
    grid = image_grid(int(mask.sum()), model.config, inputs.get("image_grid_thw"))
    pixels = pixels.detach().clone().requires_grad_(True)
    inputs["pixel_values"] = pixels
    with torch.enable_grad():
        logits = model(**inputs, logits_to_keep=1, return_dict=True).logits[0, -1]
        margin = logits[ids[0]] - logits[ids[1]]
        (grad,) = torch.autograd.grad(margin.float(), pixels)
    return grad[0].abs().sum(dim=0).float().cpu().numpy(), grid


def gradient_maps(processor: Any, model: Any, items: pd.DataFrame, *, sample_ids: Sequence[str],
                  conditions: Sequence[str] | None = None, model_name: str | None = None,
                  system: str | None = None, cache: Any = None) -> pd.DataFrame:
    """The answer margin's gradient map for the chosen items that show an image: the ``maps`` table of
    :func:`attention_maps` (same columns, so the same figure code draws it) with ``weight`` = the
    patch's share of the summed pixel sensitivity (:func:`answer_gradient`, :func:`pool_to_grid`). ``cache``: as
    :func:`attention_maps`'."""
    sel = _select(items, sample_ids, conditions, "gradient_maps", with_image=True)
    name = _model_name(model, model_name)

    def compute() -> tuple[pd.DataFrame]:
        rows = []
        for it in sel.itertuples(index=False):
            image = _image_of(it)
            sal, grid = answer_gradient(processor, model, it.prompt, image, system=system)
            rows += _map_rows(name, it, image, pool_to_grid(sal, grid))
        return (pd.DataFrame(rows, columns=MAP_COLUMNS),)

    (maps,) = memo_traces("modality_shift.gradient_maps", model, sel, {"model_name": name, "system": system}, cache,
                          compute)
    return maps
