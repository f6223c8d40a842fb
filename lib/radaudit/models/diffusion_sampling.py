"""Loading text-to-image pipelines and sampling images from them (part of :mod:`radaudit.models.diffusion`).

Read :mod:`radaudit.models.diffusion` first: it describes both sides (``paper``: diffusers pipelines from the hub;
``demo``: the CPU stand-in) and the per-image seeding, and re-exports :func:`load_pipeline`,
:func:`generate_images`, :class:`DemoDiffusionPipeline` and :func:`save_grid`. The per-family settings and the
demo model's input layout are in :mod:`radaudit.models.diffusion_config`.

torch, diffusers, transformers and PIL are imported inside the functions that use them (``# lazy``): the library
imports without them (``pip install 'radaudit[diffusion]'`` brings them).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError, RadauditError
from radaudit.models.diffusion_config import (
    CONFIG_FILE,
    FAMILIES,
    PIPELINE_DEFAULTS,
    RADEDIT_TEXT_ENCODER,
    RADEDIT_VAE,
    SAMPLERS,
    condition_vectors,
    infer_family,
    null_vector,
    patchify,
    pipeline_settings,
    require_diffusers,
    unpatchify,
)
from radaudit.models.resolver import (
    ModelUnavailableError,
    load_failed_message,
    resolve_device,
    resolve_dtype,
    resolve_model,
)
from radaudit.progress import track

__all__ = ["DemoDiffusionPipeline", "generate_images", "load_pipeline", "needs_remote_code", "save_grid",
           "to_gray01"]

log = logging.getLogger(__name__)


# --- paper preset: hub pipelines ---------------------------------------------------------------------

def _torch_dtype(dtype: Any, device: str) -> Any:
    import torch

    td = resolve_dtype(dtype)
    if device == "cpu" and td in (torch.float16,):
        log.warning("fp16 is not supported for diffusion on CPU; using float32 instead.")
        return torch.float32
    return td


def _dtype_kwarg() -> str:
    """``dtype`` for diffusers versions that renamed ``torch_dtype`` (0.36+ warn on the old name), else ``torch_dtype``."""
    try:
        from diffusers.utils import deprecation_utils

        return "dtype" if hasattr(deprecation_utils, "_TORCH_DTYPE_DEPRECATION_MESSAGE") else "torch_dtype"
    except ImportError:  # pragma: no cover - very old diffusers
        return "torch_dtype"


def needs_remote_code(spec: str | os.PathLike) -> bool:
    """Whether loading ``spec`` with ``AutoModel`` would run code from the model's files: a local folder whose
    ``config.json`` has no ``auto_map`` is a transformers class and runs none (RadEdit's text encoder given as
    such a folder, e.g. the rehearsal's stand-in); a hub id is assumed to (BioViL-T does, and whether it does
    cannot be checked without downloading its config)."""
    config = Path(os.fspath(spec)).expanduser() / "config.json"
    if config.is_file():
        try:
            return "auto_map" in json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return True
    return True


def load_pipeline(model_id: str | os.PathLike, family: str | None = None, dtype: Any = "fp16",
                  device: str | None = "auto", *, lora: str | os.PathLike | None = None,
                  lora_weight_name: str | None = None, radedit_vae: str = RADEDIT_VAE,
                  radedit_text_encoder: str = RADEDIT_TEXT_ENCODER, trust_remote_code: bool = False,
                  **from_pretrained_kwargs: Any) -> Any:
    """Load a text-to-image pipeline: the demo model folder, a local diffusers folder, or a hub id.

    ``family`` (default :func:`infer_family`) picks the loader, as in the authors' ``load_pipeline``
    but in one place: ``radedit`` builds a ``StableDiffusionPipeline`` from RadEdit's UNet
    (``subfolder="unet"``), the SDXL VAE (``radedit_vae``), BioViL-T (``radedit_text_encoder``,
    ``trust_remote_code``, 128 tokens) and a DDIM scheduler (linear betas, epsilon, "trailing",
    steps_offset 1); ``sd1``/``sd2`` load ``StableDiffusionPipeline`` without the safety checker;
    everything else loads with ``DiffusionPipeline.from_pretrained`` (which picks SD3, Sana, PixArt-Σ,
    Lumina 2, Flux... from the folder's ``model_index.json``). ``lora``: a folder or file of LoRA
    weights (the paper's SD 3.5, Lumina and Flux are LoRA fine-tunes, r = 32), loaded with
    ``load_lora_weights``. ``dtype``: fp16 (default, as the authors), bf16 or fp32; fp16 falls back to
    fp32 on CPU. ``device``: ``"auto"`` = cuda when available. The pipeline gets ``radaudit_family``.
    ``trust_remote_code`` (default off): RadEdit's text encoder (BioViL-T) is code from the Hub; it is
    run only when the caller says so, otherwise loading RadEdit fails with a message naming the flag
    (unless ``radedit_text_encoder`` is a local folder of a plain transformers class, which runs no code:
    :func:`needs_remote_code`).
    """
    require_diffusers()
    dev = resolve_device(device)
    fam = family or infer_family(model_id)
    if fam not in PIPELINE_DEFAULTS:
        raise ParamsError(f"Unknown pipeline family {fam!r}; known: {', '.join(FAMILIES)}.")
    if fam == "demo":
        return DemoDiffusionPipeline.from_pretrained(model_id, device=dev)
    td = _torch_dtype(dtype, dev)
    resolved = resolve_model(str(model_id))
    import diffusers

    dtype_kw = _dtype_kwarg()
    kw = {**resolved.pretrained_kwargs(), dtype_kw: td, **from_pretrained_kwargs}

    try:
        if fam == "radedit":
            from transformers import AutoModel, AutoTokenizer

            if not trust_remote_code and needs_remote_code(radedit_text_encoder):
                raise ParamsError(f"RadEdit's text encoder {radedit_text_encoder!r} runs Python code downloaded from the "
                                  "Hugging Face Hub (trust_remote_code). Review it, then set trust_remote_code: true for "
                                  "this generator to allow it; it is off by default.")

            unet = diffusers.UNet2DConditionModel.from_pretrained(resolved.path_or_id, subfolder="unet", **kw)
            vae = diffusers.AutoencoderKL.from_pretrained(radedit_vae, **{dtype_kw: td})
            text_encoder = AutoModel.from_pretrained(radedit_text_encoder, trust_remote_code=trust_remote_code, dtype=td)
            tokenizer = AutoTokenizer.from_pretrained(radedit_text_encoder, model_max_length=128,
                                                      trust_remote_code=trust_remote_code)
            scheduler = diffusers.DDIMScheduler(beta_schedule="linear", clip_sample=False, prediction_type="epsilon",
                                                timestep_spacing="trailing", steps_offset=1)
            pipe = diffusers.StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                                     scheduler=scheduler, safety_checker=None,
                                                     requires_safety_checker=False, feature_extractor=None)
        elif fam in ("sd1", "sd2"):
            pipe = diffusers.StableDiffusionPipeline.from_pretrained(resolved.path_or_id, safety_checker=None,
                                                                     requires_safety_checker=False, **kw)
        else:
            pipe = diffusers.DiffusionPipeline.from_pretrained(resolved.path_or_id, **kw)
        if lora is not None:
            lp = Path(lora)
            if lp.is_file():
                pipe.load_lora_weights(str(lp.parent), weight_name=lp.name)
            else:
                pipe.load_lora_weights(str(lora), **({"weight_name": lora_weight_name} if lora_weight_name else {}))
    except (OSError, ValueError) as err:  # hub unreachable, files missing (HF errors subclass these)
        if isinstance(err, RadauditError):
            raise
        raise ModelUnavailableError(load_failed_message(resolved, err) + " (diffusers pipeline, family "
                                    f"{fam!r})") from err
    pipe = pipe.to(dev)
    if hasattr(pipe, "set_progress_bar_config"):
        pipe.set_progress_bar_config(disable=True)
    pipe.radaudit_family = fam
    pipe.radaudit_spec = str(model_id)
    return pipe


def to_gray01(images: Any) -> np.ndarray:
    """Pipeline output (numpy ``[N, H, W, C]`` in [0, 1], or PIL images) → float32 ``[N, H, W]``:
    RGB by ITU-R 601 luma (the weights PIL's ``convert("L")`` uses), one channel as is."""
    if isinstance(images, list) and images and hasattr(images[0], "mode"):
        images = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0 for im in images])
    arr = np.asarray(images, dtype=np.float32)
    if arr.ndim == 4 and arr.shape[1] in (1, 3) and arr.shape[-1] not in (1, 3):
        arr = arr.transpose(0, 2, 3, 1)  # NCHW → NHWC
    if arr.ndim == 4 and arr.shape[-1] == 3:
        arr = arr[..., 0] * 0.299 + arr[..., 1] * 0.587 + arr[..., 2] * 0.114
    elif arr.ndim == 4 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim != 3:
        raise DataFormatError(f"The pipeline returned images of shape {arr.shape}; expected [N, H, W, C].")
    return np.clip(arr, 0.0, 1.0).astype(np.float32)


def _check_seeds(seeds: Sequence[Any], n: int) -> list[int]:
    seeds = list(seeds)
    if len(seeds) != n:
        raise ParamsError(f"Give one seed per image: {n} prompts/conditions but {len(seeds)} seeds.")
    out = []
    for i, s in enumerate(seeds):
        if s is None or s is pd.NA or isinstance(s, bool) or not isinstance(s, (int, np.integer)) and not (
                isinstance(s, float) and float(s).is_integer()):
            raise ParamsError(f"Seeds must be integers; seed {i} is {s!r}.")
        s = int(s)
        if not 0 <= s < 2 ** 63:
            raise ParamsError(f"Seeds must be in [0, 2**63); seed {i} is {s}.")
        out.append(s)
    return out


def _positive(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise ParamsError(f"{name} must be a positive integer, got {v!r}.")
    return int(v)


def generate_images(pipeline: Any, prompts: Sequence[str] | pd.DataFrame | None, seeds: Sequence[int], *,
                    steps: int | None = None, guidance: float | None = None, height: int | None = None,
                    width: int | None = None, batch_size: int = 16, **extra: Any) -> np.ndarray:
    """Generate one image per (prompt, seed): float32 ``[N, H, W]`` in [0, 1] (grayscale), in order.

    ``pipeline``: a :class:`DemoDiffusionPipeline` (then ``prompts`` is the requests DataFrame — its
    ``labels`` and ``view``/``prompt`` give the condition, see :func:`condition_vectors` — or a list of
    prompts whose view and labels are parsed from the text) or a diffusers pipeline from
    :func:`load_pipeline` (``prompts``: list of strings; ``None`` for an unconditional pipeline such as
    ``DDPMPipeline``, then ``len(seeds)`` images). ``steps``/``guidance``/``height``/``width``/``extra``
    default to :data:`PIPELINE_DEFAULTS` of the pipeline's family; arguments the pipeline's ``__call__``
    does not take are dropped (and logged). Images are made ``batch_size`` at a time, each with its
    own ``torch.Generator`` seeded with its seed (see the module docstring); RGB output is converted
    to grayscale by luma.
    """
    bs = _positive("batch_size", batch_size)
    if isinstance(pipeline, DemoDiffusionPipeline):
        return pipeline.generate(prompts, seeds, steps=steps, guidance=guidance, batch_size=bs, **extra)
    import torch

    family = getattr(pipeline, "radaudit_family", "auto")
    st = pipeline_settings(family, steps=steps, guidance=guidance, height=height, width=width, **extra)
    if isinstance(prompts, pd.DataFrame):
        prompts = prompts["prompt"].astype(str).tolist()
    n = len(seeds) if prompts is None else len(prompts)
    if prompts is not None:
        prompts = list(prompts)
        bad = [i for i, p in enumerate(prompts) if not isinstance(p, str)]
        if bad:
            raise ParamsError(f"Prompts must be strings; not at position(s) {bad[:10]}.")
    seed_list = _check_seeds(seeds, n)
    params = inspect.signature(pipeline.__call__).parameters
    accepts_any = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    call: dict[str, Any] = {"num_inference_steps": int(st["steps"]), "guidance_scale": float(st["guidance"]),
                            "height": st["height"], "width": st["width"], "output_type": "np", **st["extra"]}
    call = {k: v for k, v in call.items() if v is not None}
    dropped = [k for k in call if k not in params and not accepts_any]
    if dropped:
        log.info("generate_images: %s does not take %s; left out", type(pipeline).__name__, dropped)
    call = {k: v for k, v in call.items() if k in params or accepts_any}
    device = getattr(pipeline, "device", torch.device("cpu"))
    gen_device = "cpu" if getattr(device, "type", str(device)) == "mps" else device
    out: list[np.ndarray] = []
    for start in track(range(0, n, bs), f"generate images ({type(pipeline).__name__})", unit="batches"):
        idx = range(start, min(n, start + bs))
        gens = [torch.Generator(device=gen_device).manual_seed(seed_list[i]) for i in idx]
        kw = dict(call, generator=gens)
        if prompts is not None:
            kw["prompt"] = [prompts[i] for i in idx]
        elif "batch_size" in params:
            kw["batch_size"] = len(idx)
        result = pipeline(**kw)
        images = getattr(result, "images", result[0] if isinstance(result, tuple) else result)
        out.append(to_gray01(images))
        log.debug("generate_images: %d/%d", idx.stop, n)
    return np.concatenate(out) if out else np.zeros((0, st["height"] or 0, st["width"] or 0), np.float32)


# --- demo model: sampling ------------------------------------------------------------------------------

class DemoDiffusionPipeline:
    """The trained demo model, loaded for sampling (``DemoDiffusionPipeline.from_pretrained(folder)``).

    ``generate(requests, seeds, steps, guidance, batch_size, sampler, eta)`` → float32 ``[N, S, S]``.
    """

    radaudit_family = "demo"

    def __init__(self, unet: Any, train_scheduler_config: Mapping[str, Any], meta: Mapping[str, Any],
                 folder: str | None = None, device: str = "cpu") -> None:
        self.unet = unet
        self.train_scheduler_config = dict(train_scheduler_config)
        self.meta = dict(meta)
        self.vocab = {"views": list(meta["vocab"]["views"]), "labels": list(meta["vocab"]["labels"])}
        self.patch_size = int(meta["patch_size"])
        self.image_size = int(meta["image_size"])
        self.folder = folder
        self.device = device
        self.radaudit_spec = folder

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike, device: str | None = "cpu") -> DemoDiffusionPipeline:
        """Load a folder written by :func:`train_demo_diffusion`."""
        require_diffusers()
        from diffusers import DDPMScheduler, UNet2DConditionModel

        f = Path(folder)
        if not (f / CONFIG_FILE).is_file():
            raise ModelUnavailableError(f"{str(f)!r} is not a radaudit demo diffusion folder (no {CONFIG_FILE}); train "
                                        "one with demo_diffusion_path(...) or pass a diffusers pipeline folder/hub id.")
        try:
            meta = json.loads((f / CONFIG_FILE).read_text())
            unet = UNet2DConditionModel.from_pretrained(f / "unet", local_files_only=True)
            sched_cfg = DDPMScheduler.load_config(f / "scheduler")
        except (OSError, ValueError, KeyError) as err:
            raise ModelUnavailableError(f"Cannot load the demo diffusion model at {str(f)!r} ({err}); delete the folder "
                                        "to retrain it.") from err
        dev = resolve_device(device)
        unet.to(dev).eval()
        return cls(unet, sched_cfg, meta, folder=str(f), device=dev)

    def describe(self) -> dict[str, Any]:
        return {"family": "demo", "folder": self.folder, "config_hash": self.meta.get("config_hash"),
                "vocab": self.vocab, "image_size": self.image_size}

    def conditions(self, requests: pd.DataFrame | Sequence[str]) -> np.ndarray:
        return condition_vectors(requests, self.vocab)

    def _sampler(self, sampler: str, eta: float) -> Any:
        from diffusers import DDIMScheduler, DPMSolverMultistepScheduler

        cfg = {k: v for k, v in self.train_scheduler_config.items() if not k.startswith("_")}
        base = {k: cfg[k] for k in ("num_train_timesteps", "beta_schedule", "prediction_type", "beta_start",
                                    "beta_end") if k in cfg}
        if sampler == "ddim":
            return DDIMScheduler(**base, clip_sample=True, clip_sample_range=1.0, timestep_spacing="trailing",
                                 set_alpha_to_one=True)
        if sampler == "dpm":
            return DPMSolverMultistepScheduler(**base, timestep_spacing="trailing", algorithm_type="dpmsolver++",
                                               thresholding=False)
        raise ParamsError(f"sampler must be one of {SAMPLERS}, got {sampler!r}.")

    def generate(self, requests: pd.DataFrame | Sequence[str] | None, seeds: Sequence[int], *,
                 steps: int | None = None, guidance: float | None = None, batch_size: int = 16,
                 sampler: str | None = None, eta: float = 0.0, conditions: np.ndarray | None = None) -> np.ndarray:
        """One image per request, each from its own seeded ``torch.Generator`` (see the module docstring).

        ``steps``/``guidance``/``sampler`` default to ``PIPELINE_DEFAULTS["demo"]`` (DPM-Solver++, 10 steps,
        guidance 2). ``eta`` > 0 (stochastic steps) needs ``sampler="ddim"``."""
        import torch

        steps = _positive("steps", PIPELINE_DEFAULTS["demo"]["steps"] if steps is None else steps)
        g = float(PIPELINE_DEFAULTS["demo"]["guidance"] if guidance is None else guidance)
        if not math.isfinite(g) or g < 0:
            raise ParamsError(f"guidance must be a number >= 0 (1 = no guidance, 0 = unconditional), got {guidance!r}.")
        if not 0.0 <= float(eta) <= 1.0:
            raise ParamsError(f"eta must be in [0, 1], got {eta!r}.")
        sampler = PIPELINE_DEFAULTS["demo"]["sampler"] if sampler is None else sampler
        if sampler not in SAMPLERS:
            raise ParamsError(f"sampler must be one of {SAMPLERS}, got {sampler!r}.")
        if float(eta) > 0 and sampler != "ddim":
            raise ParamsError(f"eta={eta!r} (stochastic sampling) needs sampler='ddim'; {sampler!r} is deterministic.")
        bs = _positive("batch_size", batch_size)
        if conditions is None:
            if requests is None:
                raise ParamsError("Give the requests (DataFrame with labels/view, or prompts) or conditions=.")
            cond = self.conditions(requests)
        else:
            cond = np.asarray(conditions, dtype=np.float32)
        seed_list = _check_seeds(seeds, len(cond))
        null = torch.from_numpy(null_vector(self.vocab))
        p, s = self.patch_size, self.image_size
        out = np.empty((len(cond), s, s), dtype=np.float32)
        with torch.no_grad():
            for start in track(range(0, len(cond), bs), "sample demo diffusion", unit="batches"):
                idx = list(range(start, min(len(cond), start + bs)))
                gens = [torch.Generator().manual_seed(seed_list[i]) for i in idx]
                x = torch.cat([torch.randn((1, 1, s, s), generator=gg) for gg in gens]).to(self.device)
                c = torch.from_numpy(cond[idx]).to(self.device)
                sched = self._sampler(sampler, float(eta))
                sched.set_timesteps(steps)
                x = x * sched.init_noise_sigma
                for t in sched.timesteps:
                    xin = sched.scale_model_input(x, t)
                    if g == 1.0:
                        pred = self._predict(xin, t, c, p)
                    else:
                        both = self._predict(torch.cat([xin, xin]), t, torch.cat([c, null.expand_as(c)]), p)
                        pc, pu = both.chunk(2)
                        pred = pu + g * (pc - pu)
                    # DDIM with eta > 0 draws fresh noise per step: diffusers' randn_tensor takes the list of
                    # generators and draws row i from generator i, so it stays per image too.
                    kw = {"eta": float(eta), "generator": gens} if sampler == "ddim" else {}
                    x = sched.step(pred, t, x, **kw).prev_sample
                out[idx] = ((x[:, 0].clamp(-1, 1) + 1) / 2).cpu().numpy()
        return out

    def _predict(self, x: Any, t: Any, c: Any, p: int) -> Any:
        tt = t.expand(len(x)) if hasattr(t, "expand") else t
        return unpatchify(self.unet(patchify(x, p), tt, encoder_hidden_states=None, class_labels=c).sample, p)

    def __call__(self, prompts: Sequence[str] | pd.DataFrame, seeds: Sequence[int], **kw: Any) -> np.ndarray:
        return self.generate(prompts, seeds, **kw)


# --- a picture of samples ------------------------------------------------------------------------------

def save_grid(images: np.ndarray, path: str | os.PathLike, ncol: int = 8, *, scale: int = 2) -> Path:
    """Save ``images`` (``[N, H, W]`` in [0, 1]) as one grayscale PNG grid (``ncol`` columns, white 2-pixel
    gaps, nearest-neighbour ``scale``-fold enlarged); returns the path."""
    from PIL import Image

    arr = np.asarray(images, dtype=np.float32)
    if arr.ndim != 3 or not len(arr):
        raise DataFormatError(f"save_grid needs images [N, H, W], got shape {arr.shape}.")
    n, h, w = arr.shape
    ncol = max(1, min(int(ncol), n))
    nrow = math.ceil(n / ncol)
    gap = 2
    canvas = np.ones((nrow * (h + gap) + gap, ncol * (w + gap) + gap), dtype=np.float32)
    for i, im in enumerate(arr):
        r, c = divmod(i, ncol)
        canvas[gap + r * (h + gap): gap + r * (h + gap) + h, gap + c * (w + gap): gap + c * (w + gap) + w] = im
    u8 = np.clip(np.rint(canvas * 255), 0, 255).astype(np.uint8)
    img = Image.fromarray(u8, mode="L")
    if scale > 1:
        img = img.resize((img.width * scale, img.height * scale), Image.Resampling.NEAREST)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)
    return out
