"""Text-to-image generators for the synthetic-CXR benchmark: the ``demo`` diffusion model and hub pipelines.

CheXGenBench (``../shared/papers/004_175f666718a5c618.txt``, §2.1) benchmarks fine-tuned text-to-image
models (SD 1.x/2.x/3.5, PixArt-Σ, Sana, RadEdit, Lumina 2.0, Flux.1-Dev) that need a GPU and the
hub. This module has both sides, behind one sampling call (:func:`generate_images`):

``paper``: :func:`load_pipeline` (a diffusers pipeline by hub id or local folder, per model family,
optionally with the LoRA weights the paper trains for the >1B models) and :data:`PIPELINE_DEFAULTS`
(steps and guidance per family, from the authors' ``tools/generate_data_common.py``).

``demo``: a **scaled-down stand-in** trained here on CPU in minutes (:func:`train_demo_diffusion`,
:func:`demo_diffusion_path`): a label- and view-conditional DDPM on 64×64 grayscale covid-chestxray
images, built only from diffusers classes —

* denoiser: ``UNet2DConditionModel`` without cross-attention, conditioned through its
  ``class_embed_type="projection"`` embedding on a small vector ``[view one-hot | label multi-hot |
  null flag]`` added to the timestep embedding (global FiLM-style conditioning: view and labels
  describe the whole image); self-attention at the lowest resolution only;
* pixels are folded 2×2 into channels (``pixel_unshuffle``: a 64×64×1 image is a 32×32×4 tensor to
  the UNet, unfolded again at the output) — the same image at a quarter of the spatial positions,
  which is what makes CPU training in minutes possible;
* training: x0 targets (``prediction_type="sample"``: the network predicts the clean image; see
  :data:`DEMO_DIFFUSION_CONFIG` for why) with the cosine ("squaredcos_cap_v2") noise schedule of
  ``DDPMScheduler`` (1000 steps); classifier-free guidance by replacing the condition with the null
  vector with probability ``cond_dropout``; AdamW with a linear warm-up, gradient clipping, and an
  exponential moving average of the weights (the EMA weights are saved: they give far cleaner
  samples after a short training run); a random shift of ±``augment_shift`` pixels (edge-replicated)
  as the only augmentation — no flips (a chest X-ray is not left–right symmetric);
* sampling: ``DPMSolverMultistepScheduler`` (DPM-Solver++, "trailing" spacing; the default, 10 steps)
  or ``DDIMScheduler`` (η ≥ 0, "trailing" timestep spacing, ``clip_sample``), with guidance ``g`` on the network's output
  (the predicted clean image): ``out = out_uncond + g (out_cond - out_uncond)``.

Per-image seeds (the authors' per-prompt generator is commented out, so their images depend on the
batch and on the global seed; ANCHORS "Generation"): every image gets its own ``torch.Generator``
seeded with the image's seed, which draws its starting noise (and, for η > 0, its step noise). An
image therefore depends on its seed and condition only, not on its batch (up to float rounding
across batch sizes).

The model folder (``save_pretrained``): ``unet/`` (config + EMA weights), ``scheduler/`` (the training
noise schedule), ``radaudit_diffusion.json`` (condition vocabulary, patch size, image size,
hyperparameters, config hash, loss curve, timings). :func:`load_pipeline` loads it like a hub id.

Where the code is (this module is the public face; import from here): :mod:`radaudit.models.diffusion_config`
(the demo model's settings, identity hash and input layout; the paper pipelines' per-family settings),
:mod:`radaudit.models.diffusion_train` (training the demo model, its cache folder) and
:mod:`radaudit.models.diffusion_sampling` (loading pipelines, sampling, :func:`save_grid`).
"""

from __future__ import annotations

from radaudit.models.diffusion_config import (
    CONFIG_FILE,
    DEMO_DIFFUSION_CONFIG,
    FAMILIES,
    PIPELINE_DEFAULTS,
    RADEDIT_TEXT_ENCODER,
    RADEDIT_VAE,
    RECIPE_VERSION,
    SAMPLERS,
    condition_vectors,
    diffusion_config_hash,
    infer_family,
    pipeline_settings,
    require_diffusers,
)
from radaudit.models.diffusion_sampling import (
    DemoDiffusionPipeline,
    generate_images,
    load_pipeline,
    needs_remote_code,
    save_grid,
    to_gray01,
)
from radaudit.models.diffusion_train import demo_diffusion_path, is_trained, train_demo_diffusion

__all__ = [
    "CONFIG_FILE", "DEMO_DIFFUSION_CONFIG", "DemoDiffusionPipeline", "FAMILIES", "PIPELINE_DEFAULTS",
    "RADEDIT_TEXT_ENCODER", "RADEDIT_VAE", "RECIPE_VERSION", "SAMPLERS", "condition_vectors", "demo_diffusion_path",
    "diffusion_config_hash", "generate_images", "infer_family", "load_pipeline", "pipeline_settings",
    "require_diffusers", "save_grid", "train_demo_diffusion",
]

# Three helpers under the private names they had before the split, which tests still read
# (tests/models/test_diffusion.py, tests/audits/test_synthetic_cxr_paper_path.py); new code uses the public names of
# the modules that own them (diffusion_train.is_trained, diffusion_sampling.needs_remote_code / to_gray01).
_is_trained = is_trained
_needs_remote_code = needs_remote_code
_to_gray01 = to_gray01
