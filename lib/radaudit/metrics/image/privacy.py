"""Privacy and re-identification metrics of synthetic images (CheXGenBench, paper 004 §2.3, Table 3).

Protocol (§3.2 "Experimental Setting"): for each of a subset of training image–prompt pairs
``(x_i, c_i)`` (2,000 in the paper), N synthetic images ``x̂_i^1..x̂_i^N`` are generated from
``c_i`` with N seeds (10 in the paper); each real–synthetic pair ``(x_i, x̂_i^n)`` gets

- a **pixel distance** ``ℓ_pix = ‖x̂ − x‖₂ / √P`` (P = number of pixels; the authors' code divides
  by √N of the array);
- a **latent distance** ``ℓ_lat = ‖f(x̂) − f(x)‖₂ / √d`` in an encoder's feature space (RadDino's
  CLS in the paper, d its dimension);
- a **re-identification score** ``s_reid ∈ [0, 1]``: the probability from a Siamese network that the
  two images show the same patient (Packhäuser et al. 2022; any callable here, see :data:`PairScorer`).

Per training prompt the worst case over its N seeds is kept (max re-ID, min distances: "This
approach enables us to identify the greatest privacy risk posed for each training sample across
multiple generations"), and Table 3 reports, over the prompts: **Avg. Re-ID** (mean of the per-prompt
maxima), **Avg. Latent / Pixel Distance** (means of the per-prompt minima), **Max. Re-ID** (the
largest), and **Count Re-ID > δ** (prompts whose max re-ID exceeds δ = 0.85).

Where the paper is ambiguous, and what we chose
-----------------------------------------------
* *Which aggregate is "Avg."*: §2.3's formulas average over all M generated images, but §3.2 keeps
  per-prompt worst cases, Table 6(b) labels the same numbers "Max. Re-ID", "Min Latent" and "Min.
  Pixel", and "Count" is a count of *samples* (10–25% of 2,000 prompts, e.g. 196/2000 and 498/2000).
  :func:`privacy_summary` therefore aggregates the per-prompt worst cases by default
  (``per_prompt="worst"``); ``per_prompt="mean"`` averages each prompt's seeds instead, and
  :func:`per_prompt_privacy` returns both for every prompt.
* *Against which real image*: §3.2 compares each synthetic image with its own prompt's training
  image; §2.3 speaks of "its closest training image". ``reference="own"`` (default) is §3.2 and the
  authors' code; ``reference="nearest"`` takes, per synthetic image and per measure separately, the
  closest training image of the whole pool given (min distance, max re-ID), and records which one.
* *δ comparison*: Table 3 and the Count formula use ``s_reid > δ`` (strict); §2.3's text says
  ``≥``. We count ``>`` (the formula and the table header) — the count is never left out, unlike the
  authors' script, which does not compute it at all.

Pixel distances are on float images, never on uint8
---------------------------------------------------
The authors' ``pixelwise_distance`` subtracts two ``uint8`` arrays, which wraps around modulo 256
(``3 − 5 = 254``), so identical-looking images get large distances and the value of ~145 in Table 3 is
dominated by wrap-around; it also compares every seed with the *last* generated image. Here both
images go through :func:`as_float_image` first: grayscale (channels averaged; alpha dropped), float64
on **[0, 1]** (integer images divided by their type's maximum: 255 for 8-bit, 65535 for 16-bit), then
resized to a common ``size`` (PIL bilinear on the float image). ``ℓ_pix`` is therefore in [0, 1]
(0 = identical; multiply by 255 to compare with 8-bit-scale numbers).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image.features import extract_features
from radaudit.models.encoders import load_image

__all__ = [
    "DELTA",
    "PairScorer",
    "as_float_image",
    "latent_distance",
    "per_prompt_privacy",
    "pixel_distance",
    "privacy_pairs",
    "privacy_summary",
    "reid_scores",
]

DELTA = 0.85
"""CheXGenBench's high-risk re-identification threshold δ (§3.2)."""

PairScorer = Callable[[Sequence[Any], Sequence[Any]], Any]
"""``scorer(real_images, synthetic_images) -> scores``: one probability in [0, 1] per pair (same length)."""


# --- pixel and latent distances ------------------------------------------------------------------

def _integer_max(arr: np.ndarray) -> float:
    return float(np.iinfo(arr.dtype).max) if np.issubdtype(arr.dtype, np.integer) else 1.0


def as_float_image(image: Any, size: tuple[int, int] | int | None = None) -> np.ndarray:
    """A grayscale float64 ``[H, W]`` image on [0, 1] from a path, a ``PIL.Image`` or a numpy array.

    Integer arrays and images are divided by their type's maximum (uint8 → /255, uint16 and PIL 16-bit
    modes → /65535); float arrays are taken as already on [0, 1] (not rescaled); bool → 0/1. Colour is
    averaged over channels (alpha dropped). ``size`` = ``(width, height)`` (or one int for a square)
    resizes with PIL's bilinear filter on the float image.
    """
    from PIL import Image

    if isinstance(image, (str, os.PathLike, Image.Image)):
        im = load_image(image)
        if im.mode in ("I;16", "I;16B", "I;16L", "I;16N"):
            arr = np.asarray(im).astype(np.float64) / 65535.0
        elif im.mode in ("I",):  # 16-bit PNGs often open as 32-bit "I" holding 0..65535
            arr = np.asarray(im).astype(np.float64) / 65535.0
        elif im.mode == "F":
            arr = np.asarray(im, dtype=np.float64)
        else:
            if im.mode not in ("L", "RGB", "RGBA", "LA"):
                im = im.convert("RGBA" if "A" in im.getbands() else "RGB")
            arr = np.asarray(im).astype(np.float64) / 255.0
            if arr.ndim == 3:
                arr = arr[:, :, : (3 if arr.shape[2] >= 3 else 1)]
    elif isinstance(image, np.ndarray):
        raw = image
        if raw.dtype == bool:
            raw = raw.astype(np.uint8)
        if not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)):
            raise DataFormatError(f"An image array must be integer or float; got dtype {raw.dtype}.")
        arr = raw.astype(np.float64) / _integer_max(raw) if image.dtype != bool else raw.astype(np.float64)
        if arr.ndim == 3 and arr.shape[2] in (2, 4):
            arr = arr[:, :, : arr.shape[2] - 1]  # drop alpha
    else:
        raise ParamsError(f"An image must be a path, a PIL.Image or a numpy array; got {type(image).__name__}.")
    if arr.ndim == 3:
        arr = arr.mean(axis=2)
    if arr.ndim != 2:
        raise DataFormatError(f"An image must be [H, W] or [H, W, C]; got shape {np.shape(arr)}.")
    if size is not None:
        w, h = (size, size) if isinstance(size, int) else tuple(int(s) for s in size)
        if (arr.shape[1], arr.shape[0]) != (w, h):
            im = Image.fromarray(arr.astype(np.float32), mode="F").resize((w, h), Image.BILINEAR)
            arr = np.asarray(im, dtype=np.float64)
    return arr


def pixel_distance(a: Any, b: Any, size: tuple[int, int] | int | None = None) -> float:
    """``‖a − b‖₂ / √P`` on float images on [0, 1] (:func:`as_float_image`; P = pixels).

    Images of different sizes need ``size`` (both are resized to it); never computed on uint8 values.
    """
    x, y = as_float_image(a, size), as_float_image(b, size)
    if x.shape != y.shape:
        raise DataFormatError(f"Images have different sizes {x.shape} and {y.shape}: pass size=(width, height) "
                              "to resize both before comparing.")
    return float(np.sqrt(np.mean((x - y) ** 2)))


def latent_distance(za: Any, zb: Any) -> np.ndarray | float:
    """``‖z_a − z_b‖₂ / √d`` between feature vectors (or row-wise between two ``[n, d]`` arrays)."""
    a, b = np.asarray(za, dtype=np.float64), np.asarray(zb, dtype=np.float64)
    if a.shape != b.shape or a.ndim not in (1, 2):
        raise DataFormatError(f"Feature arrays must have the same shape, [d] or [n, d]; got {a.shape} and {b.shape}.")
    d = np.sqrt(np.mean((a - b) ** 2, axis=-1))
    return float(d) if a.ndim == 1 else d


def reid_scores(scorer: PairScorer, real_images: Sequence[Any], synth_images: Sequence[Any]) -> np.ndarray:
    """Re-identification scores of pairs ``(real_images[i], synth_images[i])`` from any Siamese ``scorer``.

    The scorer returns one probability per pair (a list, numpy array or torch tensor); values outside
    [0, 1] or a wrong count raise (a logit-returning scorer must apply its sigmoid).
    """
    if len(real_images) != len(synth_images):
        raise DataFormatError(f"{len(real_images)} real and {len(synth_images)} synthetic images: pairs must match.")
    out = scorer(list(real_images), list(synth_images))
    if hasattr(out, "detach"):
        out = out.detach().float().cpu().numpy()
    s = np.asarray(out, dtype=np.float64).reshape(-1)
    if len(s) != len(real_images):
        raise DataFormatError(f"The re-ID scorer returned {len(s)} scores for {len(real_images)} pairs.")
    if not np.isfinite(s).all() or (s < 0).any() or (s > 1).any():
        raise DataFormatError("The re-ID scorer returned values outside [0, 1]: it must return probabilities "
                              "(apply the sigmoid to logits).")
    return s


# --- all pairs for a set of training prompts -----------------------------------------------------

def _rms_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``‖a_i − b_j‖₂ / √P`` for all row pairs (float64 Gram expansion, clipped at 0)."""
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.sqrt(np.maximum(d2, 0.0) / a.shape[1])


def _chunks(n: int, b: int) -> list[range]:
    return [range(s, min(n, s + b)) for s in range(0, n, b)]


def privacy_pairs(train_images: Sequence[Any], synth_images: Sequence[Any], train_index: Sequence[int], *,
                  prompt_ids: Sequence[Any] | None = None, seeds: Sequence[Any] | None = None,
                  encoder: Any = None, train_features: Any = None, synth_features: Any = None,
                  scorer: PairScorer | None = None, size: tuple[int, int] | int | None = 256,
                  reference: Literal["own", "nearest"] = "own", batch_size: int = 32) -> pd.DataFrame:
    """One row per synthetic image: its pixel distance, latent distance and re-ID score to a training image.

    Args:
        train_images: the training images (paths, arrays or PIL images): the prompts' own images,
            plus any others the ``"nearest"`` search should consider.
        synth_images: the synthetic images.
        train_index: for each synthetic image, the index in ``train_images`` of the training image
            whose prompt generated it.
        prompt_ids, seeds: labels stored in the ``prompt`` and ``seed`` columns (default: the
            ``train_index`` and the running number of the image within its prompt).
        encoder: an :class:`~radaudit.models.encoders.ImageEncoder` for latent distances, or
            precomputed ``train_features``/``synth_features`` (``[n, d]``); without either the
            ``latent_distance`` column is NaN.
        scorer: a Siamese re-ID scorer (:data:`PairScorer`); without it ``reid`` is NaN.
        size: ``(width, height)`` both images are resized to for the pixel distance (None: they
            must already match).
        reference: ``"own"`` (the prompt's own training image; paper §3.2, default) or ``"nearest"``
            (per measure, the closest image in ``train_images``; columns ``*_index`` say which).
        batch_size: images loaded at a time (memory stays bounded; ``"nearest"`` streams the
            training images once per batch of synthetic images, and scores every pair with ``scorer``).
    """
    n_t, n_s = len(train_images), len(synth_images)
    idx = np.asarray(train_index, dtype=np.int64)
    if reference not in ("own", "nearest"):
        raise ParamsError(f"reference={reference!r} is not allowed: use 'own' or 'nearest'.")
    if len(idx) != n_s:
        raise DataFormatError(f"train_index has {len(idx)} entries for {n_s} synthetic images.")
    if n_s and (idx.min() < 0 or idx.max() >= n_t):
        raise DataFormatError(f"train_index values must lie in [0, {n_t - 1}].")
    if batch_size < 1:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    for name, v in (("prompt_ids", prompt_ids), ("seeds", seeds)):
        if v is not None and len(v) != n_s:
            raise DataFormatError(f"{name} has {len(v)} entries for {n_s} synthetic images.")

    ft = fs = None
    if train_features is not None or synth_features is not None:
        if train_features is None or synth_features is None:
            raise ParamsError("Pass both train_features and synth_features (or an encoder).")
        ft, fs = np.asarray(train_features, dtype=np.float64), np.asarray(synth_features, dtype=np.float64)
        if len(ft) != n_t or len(fs) != n_s or ft.shape[1:] != fs.shape[1:]:
            raise DataFormatError(f"Features of shape {ft.shape} and {fs.shape} do not match {n_t} training and "
                                  f"{n_s} synthetic images.")
    elif encoder is not None:
        need = np.unique(idx) if reference == "own" else np.arange(n_t)
        sub = extract_features(encoder, [train_images[i] for i in need], batch_size=batch_size).astype(np.float64)
        ft = np.full((n_t, sub.shape[1]), np.nan)
        ft[need] = sub
        fs = extract_features(encoder, synth_images, batch_size=batch_size).astype(np.float64)

    pix = np.full(n_s, np.nan)
    lat = np.full(n_s, np.nan)
    reid = np.full(n_s, np.nan)
    pix_i = np.full(n_s, -1, dtype=np.int64)
    lat_i = np.full(n_s, -1, dtype=np.int64)
    reid_i = np.full(n_s, -1, dtype=np.int64)

    if reference == "own":
        for r in _chunks(n_s, batch_size):
            synth = [synth_images[j] for j in r]
            real = [train_images[idx[j]] for j in r]
            for k, j in enumerate(r):
                pix[j] = pixel_distance(real[k], synth[k], size)
            if scorer is not None:
                reid[list(r)] = reid_scores(scorer, real, synth)
        pix_i[:] = lat_i[:] = idx
        reid_i[:] = idx if scorer is not None else -1
        if ft is not None:
            lat = np.asarray(latent_distance(fs, ft[idx]))
    else:
        for r in _chunks(n_s, batch_size):
            synth_raw = [synth_images[j] for j in r]
            synth = np.stack([as_float_image(s, size) for s in synth_raw]).reshape(len(r), -1)
            best_p = np.full(len(r), np.inf)
            best_r = np.full(len(r), -np.inf)
            for t in _chunks(n_t, batch_size):
                real_raw = [train_images[i] for i in t]
                real = np.stack([as_float_image(x, size) for x in real_raw]).reshape(len(t), -1)
                if real.shape[1] != synth.shape[1]:
                    raise DataFormatError("Training and synthetic images have different sizes: pass size=(width, height).")
                j_best = _rms_dist(synth, real).argmin(axis=1)
                d_best = np.sqrt(np.mean((synth - real[j_best]) ** 2, axis=1))  # exact, not Gram-rounded
                better = d_best < best_p
                best_p[better] = d_best[better]
                pix_i[np.asarray(r)[better]] = np.asarray(t)[j_best[better]]
                if scorer is not None:
                    s = reid_scores(scorer, [x for x in real_raw for _ in r], [y for _ in t for y in synth_raw])
                    s = s.reshape(len(t), len(r)).T  # [synth, train]
                    j_best = s.argmax(axis=1)
                    better = s[np.arange(len(r)), j_best] > best_r
                    best_r[better] = s[np.arange(len(r)), j_best][better]
                    reid_i[np.asarray(r)[better]] = np.asarray(t)[j_best[better]]
            pix[list(r)] = best_p
            if scorer is not None:
                reid[list(r)] = best_r
        if ft is not None:
            for r in _chunks(n_s, 1024):
                j_best = _rms_dist(fs[r.start:r.stop], ft).argmin(axis=1)
                lat_i[r.start:r.stop] = j_best
                lat[r.start:r.stop] = latent_distance(fs[r.start:r.stop], ft[j_best])

    if seeds is None:
        seen: dict[int, int] = {}
        seed_col = []
        for i in idx:
            seed_col.append(seen.get(int(i), 0))
            seen[int(i)] = seed_col[-1] + 1
    else:
        seed_col = list(seeds)
    out = pd.DataFrame({"prompt": list(prompt_ids) if prompt_ids is not None else idx, "seed": seed_col,
                        "train_index": idx, "pixel_distance": pix, "latent_distance": lat, "reid": reid})
    if reference == "nearest":
        out["pixel_index"], out["latent_index"], out["reid_index"] = pix_i, np.where(np.isnan(lat), -1, lat_i), reid_i
    out.attrs["reference"] = reference
    out.attrs["size"] = size
    return out


# --- aggregation (Table 3) -----------------------------------------------------------------------

def per_prompt_privacy(pairs: pd.DataFrame, prompt_col: str = "prompt") -> pd.DataFrame:
    """Per training prompt, over its seeds: max and mean re-ID, min and mean pixel and latent distances.

    ``pairs``: one row per synthetic image with columns ``reid``, ``pixel_distance`` and
    ``latent_distance`` (any may be all-NaN when not measured), e.g. from :func:`privacy_pairs`.
    """
    need = ["reid", "pixel_distance", "latent_distance"]
    missing = [c for c in [prompt_col, *need] if c not in pairs.columns]
    if missing:
        raise DataFormatError(f"pairs has no column(s) {missing}; columns are {list(pairs.columns)}.")
    g = pairs.groupby(prompt_col, sort=False)
    out = pd.DataFrame({
        "n_seeds": g.size(),
        "max_reid": g["reid"].max(), "mean_reid": g["reid"].mean(),
        "min_pixel_distance": g["pixel_distance"].min(), "mean_pixel_distance": g["pixel_distance"].mean(),
        "min_latent_distance": g["latent_distance"].min(), "mean_latent_distance": g["latent_distance"].mean(),
    })
    return out.reset_index()


def privacy_summary(pairs_or_per_prompt: pd.DataFrame, delta: float = DELTA,
                    per_prompt: Literal["worst", "mean"] = "worst") -> dict[str, float]:
    """Table 3 of paper 004 for one generator, from :func:`privacy_pairs` rows (or :func:`per_prompt_privacy`).

    ``per_prompt="worst"`` (default; see the module docstring): each prompt's max re-ID and min
    distances over its seeds, then over prompts: ``avg_reid`` (mean of maxima), ``avg_latent_distance``
    and ``avg_pixel_distance`` (means of minima), ``max_reid`` (largest), ``count_reid_above_delta``
    (prompts with max re-ID ``> delta``) and its ``fraction``. ``"mean"``: each prompt's mean over
    seeds instead (``max_reid`` stays the largest single score; the count uses the per-prompt max).
    """
    if per_prompt not in ("worst", "mean"):
        raise ParamsError(f"per_prompt={per_prompt!r} is not allowed: use 'worst' or 'mean'.")
    if not 0.0 <= float(delta) <= 1.0:
        raise ParamsError(f"delta must lie in [0, 1], got {delta!r}.")
    pp = pairs_or_per_prompt if "max_reid" in pairs_or_per_prompt.columns else per_prompt_privacy(pairs_or_per_prompt)
    if len(pp) == 0:
        raise DataFormatError("No prompts to summarise.")
    if per_prompt == "worst":
        reid, lat, pix = pp["max_reid"], pp["min_latent_distance"], pp["min_pixel_distance"]
    else:
        reid, lat, pix = pp["mean_reid"], pp["mean_latent_distance"], pp["mean_pixel_distance"]
    mx = pp["max_reid"]
    count = int((mx > float(delta)).sum())
    n_scored = int(mx.notna().sum())
    return {
        "avg_reid": float(reid.mean()), "avg_latent_distance": float(lat.mean()), "avg_pixel_distance": float(pix.mean()),
        "max_reid": float(mx.max()) if n_scored else float("nan"),
        "count_reid_above_delta": count if n_scored else float("nan"),
        "fraction_reid_above_delta": count / n_scored if n_scored else float("nan"),
        "delta": float(delta), "n_prompts": int(len(pp)),
        "n_images": int(pp["n_seeds"].sum()) if "n_seeds" in pp else float("nan"),
    }
