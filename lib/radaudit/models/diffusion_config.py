"""What the ``demo`` diffusion model is, and the paper pipelines' settings (part of :mod:`radaudit.models.diffusion`).

Read :mod:`radaudit.models.diffusion` first: it describes the model and re-exports this module's public names. Here:

* the demo model's settings (:data:`DEMO_DIFFUSION_CONFIG`, checked and completed by :func:`demo_hyperparameters`)
  and its identity (:func:`diffusion_config_hash`, the name of its cache folder; :data:`RECIPE_VERSION`);
* the input layout that training (:mod:`radaudit.models.diffusion_train`) and sampling
  (:mod:`radaudit.models.diffusion_sampling`) must share, kept in one place so that they cannot drift apart:
  the condition vector (:func:`condition_vocab`, :func:`condition_vectors`, :func:`null_vector`) and the 2×2
  folding of pixels into channels (:func:`patchify`, :func:`unpatchify`);
* the ``paper`` side's per-family settings (:data:`PIPELINE_DEFAULTS`, :func:`infer_family`,
  :func:`pipeline_settings`) and :func:`require_diffusers`.

No torch at import time: :func:`patchify`/:func:`unpatchify` import it when called.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data.covid_cxr import DEMO_LABELS
from radaudit.data.image_sets import parse_labels
from radaudit.errors import ParamsError, RadauditError

__all__ = [
    "CONFIG_FILE", "DEMO_DIFFUSION_CONFIG", "FAMILIES", "PIPELINE_DEFAULTS", "RADEDIT_TEXT_ENCODER", "RADEDIT_VAE",
    "RECIPE_VERSION", "SAMPLERS", "condition_vectors", "condition_vocab", "demo_hyperparameters",
    "diffusion_config_hash", "infer_family", "null_vector", "patchify", "pipeline_settings", "require_diffusers",
    "unpatchify",
]

#: Written into a demo model folder; marks it as one and records how it was made.
CONFIG_FILE = "radaudit_diffusion.json"
#: Bump when the recipe changes in a way the hyperparameters do not show.
RECIPE_VERSION = 1
SAMPLERS: tuple[str, ...] = ("ddim", "dpm")

#: The demo model (2.3M parameters, 11.5 GFLOP per training step of 16 images). ``steps`` is the planned
#: training length — about 2–2.5 min on 2 quiet cores (about 4 min with the machine shared) — so the
#: model is a function of the seed, not of the machine's speed; ``max_seconds`` is only the budget
#: (DESIGN.md allows 5 min per demo model): past it a warning is logged and training runs on to the planned
#: steps (a model cut short by a busy CPU moved verdicts, issue 40). Choices, tried on the demo data at equal training
#: steps: x0 ("sample") prediction gives smooth, recognisable chest X-rays after a few hundred steps
#: where v-prediction still gives speckled noise (at high noise it regresses to a blurred image instead
#: of having to explain the noise); 2×2 patches with channels (16, 32, 64, 128) give more lung texture
#: than 4×4 patches at similar cost.
DEMO_DIFFUSION_CONFIG: dict[str, Any] = {
    # images
    "image_size": 64, "patch_size": 2,
    # UNet (on image_size / patch_size pixels, patch_size² channels)
    "block_out_channels": (16, 32, 64, 128), "layers_per_block": 1, "attention_levels": 1, "norm_num_groups": 8,
    "attention_head_dim": 32,
    # diffusion
    "num_train_timesteps": 1000, "beta_schedule": "squaredcos_cap_v2", "prediction_type": "sample",
    "cond_dropout": 0.15, "augment_shift": 2,
    # optimisation
    "steps": 1200, "batch_size": 16, "lr": 2e-3, "warmup_steps": 50, "weight_decay": 0.0, "max_grad_norm": 1.0,
    "ema_decay": 0.995, "max_seconds": 900.0,
}

_INT_KEYS = ("image_size", "patch_size", "layers_per_block", "attention_levels", "norm_num_groups",
             "attention_head_dim", "num_train_timesteps", "augment_shift", "steps", "batch_size", "warmup_steps")
_FLOAT_KEYS = ("cond_dropout", "lr", "weight_decay", "ema_decay")
_BETA_SCHEDULES = ("linear", "scaled_linear", "squaredcos_cap_v2")
_PREDICTION_TYPES = ("epsilon", "v_prediction", "sample")


# --- diffusers availability --------------------------------------------------------------------------

def require_diffusers() -> Any:
    """Import and return ``diffusers``, or raise a clear error saying how to install it."""
    try:
        import diffusers
    except ImportError as err:
        raise RadauditError("The synthetic-CXR generators need the `diffusers` package: "
                            "pip install 'radaudit[diffusion]' (or pip install diffusers).") from err
    return diffusers


# --- paper preset: hub pipelines ---------------------------------------------------------------------

#: Sampling settings per model family. Steps and guidance are the authors' PIPELINE_CONSTANTS
#: (``tools/generate_data_common.py``; ANCHORS §5 "Generation"): radedit 100/7.5, SD 1.x/2.x 50/7.5,
#: SD 3.5 40/4.5 with max_sequence_length 512, Sana 20/4.5, PixArt-Σ 20/4.5, Lumina 2.0 50/4 with
#: cfg_trunc_ratio 0.25 and cfg_normalization. Flux is in the authors' SUPPORTED_MODELS but missing
#: from their constants: we use the diffusers FluxPipeline defaults for FLUX.1-dev (28 steps,
#: distilled guidance 3.5, max_sequence_length 512). ``resolution`` is the model's default
#: resolution in the paper's Table 1 (512 for SD 1.x/2.x, RadEdit, PixArt-Σ, Sana; 1024 for SD 3.5,
#: Lumina 2.0, Flux). ``dtype`` is what the authors load with (fp16, bf16 for Lumina/Flux).
PIPELINE_DEFAULTS: dict[str, dict[str, Any]] = {
    "radedit": {"steps": 100, "guidance": 7.5, "resolution": 512, "dtype": "fp16", "extra": {}},
    "sd1": {"steps": 50, "guidance": 7.5, "resolution": 512, "dtype": "fp16", "extra": {}},
    "sd2": {"steps": 50, "guidance": 7.5, "resolution": 512, "dtype": "fp16", "extra": {}},
    "sd3": {"steps": 40, "guidance": 4.5, "resolution": 1024, "dtype": "fp16", "extra": {"max_sequence_length": 512}},
    "sana": {"steps": 20, "guidance": 4.5, "resolution": 512, "dtype": "fp16", "extra": {}},
    "pixart": {"steps": 20, "guidance": 4.5, "resolution": 512, "dtype": "fp16", "extra": {}},
    "lumina": {"steps": 50, "guidance": 4.0, "resolution": 1024, "dtype": "bf16",
               "extra": {"cfg_trunc_ratio": 0.25, "cfg_normalization": True}},
    "flux": {"steps": 28, "guidance": 3.5, "resolution": 1024, "dtype": "bf16", "extra": {"max_sequence_length": 512}},
    # the project's own CPU stand-in: 10 DPM-Solver++ steps, guidance 2 (guidance chosen from sample grids: 1 is
    # flatter, 3 over-contrasted). Sampler measured on the trained demo model (107 test prompts, FID on the demo
    # CXR encoder): DDIM 25 steps 21.9 in 10.1 s, DDIM 15 20.1, DPM++ 15 19.0, DPM++ 10 18.8 in 4.0 s; the
    # grids look alike, so the 2.5x faster setting is the default.
    "demo": {"steps": 10, "guidance": 2.0, "resolution": 64, "dtype": "fp32", "extra": {}, "sampler": "dpm"},
    # any other diffusers pipeline (DiffusionPipeline.from_pretrained): its own defaults
    "auto": {"steps": 50, "guidance": 7.5, "resolution": None, "dtype": "fp32", "extra": {}},
}
FAMILIES: tuple[str, ...] = tuple(PIPELINE_DEFAULTS)

#: Components RadEdit borrows (the authors' ``load_radedit_pipeline``): the SDXL VAE and BioViL-T.
RADEDIT_VAE = "stabilityai/sdxl-vae"
RADEDIT_TEXT_ENCODER = "microsoft/BiomedVLP-BioViL-T"


def infer_family(model_id: str | os.PathLike) -> str:
    """The :data:`PIPELINE_DEFAULTS` family of a hub id or folder, from its name (``"auto"`` if none fits);
    a radaudit demo folder (with :data:`CONFIG_FILE`) is ``"demo"``."""
    p = Path(str(model_id)).expanduser()
    if p.is_dir() and (p / CONFIG_FILE).is_file():
        return "demo"
    s = str(model_id).lower().replace("_", "-")
    rules = (("radedit", "radedit"), ("stable-diffusion-3", "sd3"), ("sd3", "sd3"), ("sd-v3", "sd3"),
             ("flux", "flux"), ("sana", "sana"), ("pixart", "pixart"), ("lumina", "lumina"),
             ("stable-diffusion-2", "sd2"), ("sd-v2", "sd2"), ("sd2", "sd2"),
             ("stable-diffusion-v1", "sd1"), ("stable-diffusion-1", "sd1"), ("sd-v1", "sd1"), ("sd1", "sd1"),
             ("stable-diffusion", "sd1"))
    for key, fam in rules:
        if key in s:
            return fam
    return "auto"


def pipeline_settings(family: str, **overrides: Any) -> dict[str, Any]:
    """``{"steps", "guidance", "height", "width", "extra"}`` for ``family``, with ``overrides`` applied
    (``steps``, ``guidance``, ``height``, ``width``, or keys of ``extra``)."""
    if family not in PIPELINE_DEFAULTS:
        raise ParamsError(f"Unknown pipeline family {family!r}; known: {', '.join(FAMILIES)}.")
    d = PIPELINE_DEFAULTS[family]
    out = {"steps": d["steps"], "guidance": d["guidance"], "height": d["resolution"], "width": d["resolution"],
           "extra": dict(d["extra"])}
    for k, v in overrides.items():
        if v is None:
            continue
        if k in ("steps", "guidance", "height", "width"):
            out[k] = v
        else:
            out["extra"][k] = v
    return out


# --- demo model: conditions ---------------------------------------------------------------------------

def condition_vocab(conditions: pd.DataFrame) -> dict[str, list[str]]:
    """Views (sorted) and labels (:data:`DEMO_LABELS` order, then any other alphabetically) seen in training."""
    labels: set[str] = set()
    for labs in conditions["labels"]:
        labels.update(labs)
    order = {g: i for i, g in enumerate(DEMO_LABELS)}
    views = sorted({str(v) for v in conditions["view"] if isinstance(v, str)}) if "view" in conditions.columns else []
    return {"views": views, "labels": sorted(labels, key=lambda g: (order.get(g, len(order)), g))}


def _view_of(prompt: str, views: Sequence[str]) -> str | None:
    """The longest known view name found in ``prompt`` as whole words (``"AP SUPINE"`` before ``"AP"``)."""
    text = " ".join(str(prompt).upper().split())
    for v in sorted(views, key=len, reverse=True):
        if re.search(rf"(?<![A-Z0-9]){re.escape(v.upper())}(?![A-Z0-9])", text):
            return v
    return None


def _labels_of(prompt: str, labels: Sequence[str]) -> list[str]:
    text = str(prompt).casefold()
    return [g for g in labels if re.search(rf"(?<!\w){re.escape(g.casefold())}(?!\w)", text)]


def condition_vectors(requests: pd.DataFrame | Sequence[str], vocab: Mapping[str, Sequence[str]]) -> np.ndarray:
    """Condition vectors ``[N, n_views + n_labels + 1]`` (float32) for the demo model.

    Layout: view one-hot (``vocab["views"]``) | label multi-hot (``vocab["labels"]``) | null flag (0).
    ``requests``: a DataFrame with ``labels`` (lists) and ``view`` (or, without ``view``, the view is
    the longest vocabulary view named in ``prompt``); or a list of prompts, from which view and labels
    are both parsed. A missing/unknown view leaves the view slots at 0 (a condition the model has not
    seen: it still samples, as an average view). A label outside the vocabulary raises
    :class:`ParamsError` (the model was never told what it looks like).
    """
    views, labels = list(vocab["views"]), list(vocab["labels"])
    if isinstance(requests, pd.DataFrame):
        if "labels" not in requests.columns:
            raise ParamsError(f"requests need a 'labels' column; they have {list(requests.columns)}.")
        labs = [parse_labels(v) for v in requests["labels"]]
        if "view" in requests.columns:
            vs = [v if isinstance(v, str) else None for v in requests["view"]]
        elif "prompt" in requests.columns:
            vs = [_view_of(p, views) for p in requests["prompt"]]
        else:
            vs = [None] * len(requests)
    else:
        prompts = list(requests)
        labs = [_labels_of(p, labels) for p in prompts]
        vs = [_view_of(p, views) for p in prompts]
    out = np.zeros((len(labs), len(views) + len(labels) + 1), dtype=np.float32)
    vi = {v.upper(): i for i, v in enumerate(views)}
    li = {g: i for i, g in enumerate(labels)}
    for r, (v, ls) in enumerate(zip(vs, labs)):
        if v is not None and v.upper() in vi:
            out[r, vi[v.upper()]] = 1.0
        unknown = [g for g in ls if g not in li]
        if unknown:
            raise ParamsError(f"Label(s) {unknown} (request {r}) are not in the demo model's vocabulary {labels}; "
                              "train it on data with these labels or map them to known ones.")
        for g in ls:
            out[r, len(views) + li[g]] = 1.0
    return out


def null_vector(vocab: Mapping[str, Sequence[str]]) -> np.ndarray:
    """The unconditional input (all slots 0, the null flag 1): what classifier-free guidance and condition
    dropout put in place of a condition."""
    v = np.zeros(len(vocab["views"]) + len(vocab["labels"]) + 1, dtype=np.float32)
    v[-1] = 1.0
    return v


# --- demo model: configuration and identity ------------------------------------------------------------

def demo_hyperparameters(seed: int = 0, **hp: Any) -> dict[str, Any]:
    """:data:`DEMO_DIFFUSION_CONFIG` with the overrides ``hp`` checked and applied, plus ``seed`` and
    :data:`RECIPE_VERSION`, keys sorted: the settings a demo model is trained with and hashed by
    (:func:`diffusion_config_hash`). Raises :class:`ParamsError` naming a bad key or value."""
    unknown = sorted(set(hp) - set(DEMO_DIFFUSION_CONFIG))
    if unknown:
        raise ParamsError(f"Unknown demo-diffusion setting(s) {unknown}; allowed: {sorted(DEMO_DIFFUSION_CONFIG)}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    out: dict[str, Any] = {**DEMO_DIFFUSION_CONFIG, **hp}
    for k in _INT_KEYS:
        v = out[k]
        lo = 0 if k in ("augment_shift", "warmup_steps", "attention_levels") else 1
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < lo:
            raise ParamsError(f"{k} must be an integer >= {lo}, got {v!r}.")
        out[k] = int(v)
    for k in _FLOAT_KEYS:
        try:
            out[k] = float(out[k])
        except (TypeError, ValueError):
            raise ParamsError(f"{k} must be a number, got {out[k]!r}.") from None
    out["max_seconds"] = None if out["max_seconds"] is None else float(out["max_seconds"])
    out["max_grad_norm"] = None if out["max_grad_norm"] is None else float(out["max_grad_norm"])
    ch = out["block_out_channels"]
    if isinstance(ch, (str, bytes)) or not isinstance(ch, Sequence) or not ch or any(
            isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1 for c in ch):
        raise ParamsError(f"block_out_channels must be a list of positive integers, got {ch!r}.")
    out["block_out_channels"] = [int(c) for c in ch]
    if any(c % out["norm_num_groups"] for c in out["block_out_channels"]):
        raise ParamsError(f"Every block_out_channels value must be a multiple of norm_num_groups "
                          f"({out['norm_num_groups']}), got {out['block_out_channels']}.")
    if out["attention_levels"] > len(out["block_out_channels"]):
        raise ParamsError("attention_levels cannot exceed the number of UNet levels (len(block_out_channels)).")
    if out["image_size"] % out["patch_size"]:
        raise ParamsError(f"image_size ({out['image_size']}) must be a multiple of patch_size ({out['patch_size']}).")
    inner = out["image_size"] // out["patch_size"]
    if inner % (2 ** (len(out["block_out_channels"]) - 1)):
        raise ParamsError(f"image_size / patch_size ({inner}) must be divisible by 2**(levels - 1) "
                          f"= {2 ** (len(out['block_out_channels']) - 1)}.")
    if out["beta_schedule"] not in _BETA_SCHEDULES:
        raise ParamsError(f"beta_schedule must be one of {_BETA_SCHEDULES}, got {out['beta_schedule']!r}.")
    if out["prediction_type"] not in _PREDICTION_TYPES:
        raise ParamsError(f"prediction_type must be one of {_PREDICTION_TYPES}, got {out['prediction_type']!r}.")
    if not 0.0 <= out["cond_dropout"] < 1.0:
        raise ParamsError(f"cond_dropout must be in [0, 1), got {out['cond_dropout']}.")
    if not 0.0 <= out["ema_decay"] < 1.0:
        raise ParamsError(f"ema_decay must be in [0, 1) (0 = no averaging), got {out['ema_decay']}.")
    if out["lr"] <= 0:
        raise ParamsError(f"lr must be > 0, got {out['lr']}.")
    out["seed"] = int(seed)
    out["recipe_version"] = RECIPE_VERSION
    return dict(sorted(out.items()))


def diffusion_config_hash(fingerprint: str, seed: int = 0, **hp: Any) -> str:
    """Identity of a trained demo model: SHA-256 (16 hex) of the data fingerprint and every setting."""
    blob = json.dumps({"data": fingerprint, "hyperparameters": demo_hyperparameters(seed, **hp)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- demo model: the pixel layout (2×2 patches folded into channels) ------------------------------------

def patchify(x: Any, p: int) -> Any:
    """``[N, C, S, S]`` → ``[N, C·p², S/p, S/p]`` (``pixel_unshuffle``): what the UNet sees."""
    import torch.nn.functional as F  # lazy: torch only when training or sampling

    return x if p == 1 else F.pixel_unshuffle(x, p)


def unpatchify(x: Any, p: int) -> Any:
    """The inverse of :func:`patchify` (``pixel_shuffle``): the UNet's output back to pixels."""
    import torch.nn.functional as F  # lazy: torch only when training or sampling

    return x if p == 1 else F.pixel_shuffle(x, p)
