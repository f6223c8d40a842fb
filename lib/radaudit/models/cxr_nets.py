"""Chest X-ray networks of the synthetic-CXR experiment (CheXGenBench, paper 004): encoder, alignment, re-ID.

CheXGenBench (``../shared/papers/004_175f666718a5c618.txt``) scores synthetic radiographs with three
networks that cannot run offline here: RadDino features for FID/KID/PRDC and the latent distance
(§2.2, §2.3), BioViL-T for the image–text alignment score (§2.2) and the Siamese re-identification
network of Packhäuser et al. (2022) for the re-ID score (§2.3). This module holds, for each, the
``paper`` adapter and a small ``demo`` stand-in trained by
:mod:`radaudit.audits.synthetic_cxr.models` on covid-chestxray. The stand-ins are small networks
trained from scratch on a few hundred images: they show how the metrics behave, not RadDino's or
BioViL-T's numbers.

======================  ==========================================  =================================================
role (paper section)    ``paper``                                   ``demo`` stand-in (this module's classes)
======================  ==========================================  =================================================
fidelity features,      RadDino ``pooler_output`` (768-d CLS):      :class:`CXREncoder` on a ``CXREncoderModel``: a
latent distance         ``HFVisionEncoder("microsoft/rad-dino")``   tiny ResNet (transformers ``ResNetModel``) trained
(§2.2, §2.3)            (``build_image_encoder("rad-dino")``)       on labels + view + SimCLR; features = the global
                                                                    average pool of the last stage
image–text alignment    :class:`BioViLTAlignment` (hi-ml's          :class:`ClipAlignment` on a ``CXRClipModel``: tiny
(§2.2)                  ``ImageTextInferenceEngine`` cosine)        ResNet image tower + frozen all-MiniLM-L6-v2 text
                                                                    tower with a trained projection (symmetric InfoNCE)
re-ID score (§2.3)      :func:`load_packhauser_reid` (the authors'  ``SiameseReIDModel`` with a tiny ResNet backbone,
                        ResNet-50 Siamese ``state_dict``)           trained on covid-chestxray patients; scored by
                                                                    :class:`SiameseScorer` in both presets
======================  ==========================================  =================================================

Images
------
Every network here takes the same inputs: a float32 ``[N, H, W]`` array on [0, 1] (the experiment's
image convention), or a sequence of images — paths, ``PIL.Image``, or numpy arrays (``[H, W]``,
``[H, W, C]``). :func:`to_gray_float` brings one image to grayscale float32 on [0, 1]: float arrays
are taken as already on [0, 1] (clipped, **not** min–max rescaled, so a darkened image stays dark),
integer arrays are divided by their type's maximum (uint8 → /255, uint16 → /65535), PIL 16-bit modes
by 65535, colour is averaged (PIL images: ``convert("L")``). :func:`prepare_images` then resizes to
the network's square ``image_size`` with the network's ``resize`` policy:

- ``"squash"``: resize the whole image to ``image_size × image_size`` (torchvision's
  ``Resize((s, s))``, used by the Packhäuser/CheXGenBench re-ID pipeline: ``Resize((224, 224))`` +
  ``ToTensor()`` with **no** normalisation);
- ``"center_crop"``: crop the central square first, then resize (the demo models; the experiment's
  image loader crops and resamples the same way, so a path and its loaded array give the same input).

Resizing is PIL's antialiased ``resample`` filter — bilinear for the paper's re-ID network
(torchvision's ``Resize`` default), bicubic for the demo networks (as the experiment's image loader
``radaudit.data.image_sets.load_images``) — on the 8-bit image for 8-bit files (what torchvision's ``Resize``
does on PIL images) and in mode ``"F"`` for float arrays. Images already at
``image_size`` are not resized. The input tensor is ``[n, C, s, s]`` on [0, 1] (``C`` = 1 for the
demo networks, 3 replicated channels for the paper's RGB ResNet-50); no mean/std normalisation
(each network starts with a convolution followed by batch-norm). Images are converted one batch at
a time, so memory stays bounded for any number of paths.

Loading saved models: ``load_cxr_model(folder)`` reads ``config.json`` and returns the right class;
each class also loads with its own ``from_pretrained``. The classes are built on first access
(``from radaudit.models.cxr_nets import CXREncoderModel``), so importing this module does not import
torch.

Reaching the demo encoder through ``build_image_encoder``: :func:`cxr_encoder` (``cxr_encoder(folder)``)
builds a :class:`CXREncoder`; :func:`is_cxr_encoder_folder` tells whether a folder holds one.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.models.cxr_checkpoint import (  # noqa: F401 - torchvision_resnet_key_map re-exported
    PACKHAUSER_CHECKPOINT,
    convert_torchvision_siamese,
    torchvision_resnet_key_map,
)
from radaudit.models.encoders import TextEncoder, load_image
from radaudit.models.resolver import DEFAULT_TEXT_ENCODER, ModelUnavailableError, resolve_device
from radaudit.progress import batches as _batches

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "BIOVIL_T_INSTALL",
    "BioViLTAlignment",
    "CXR_MODEL_TYPES",
    "ClipAlignment",
    "CXREncoder",
    "PACKHAUSER_CHECKPOINT",
    "PACKHAUSER_RESNET50",
    "RESIZE_POLICIES",
    "SiameseScorer",
    "alignment_scores",
    "convert_torchvision_siamese",
    "cxr_encoder",
    "is_cxr_encoder_folder",
    "load_cxr_model",
    "load_packhauser_reid",
    "model_classes",
    "prepare_images",
    "to_gray_float",
    "torchvision_resnet_key_map",
]

log = logging.getLogger(__name__)

RESIZE_POLICIES = ("squash", "center_crop")
RESAMPLE_FILTERS = ("bilinear", "bicubic")

#: ``model_type`` of each saved network → class name.
CXR_MODEL_TYPES: dict[str, str] = {
    "radaudit_cxr_encoder": "CXREncoderModel",
    "radaudit_cxr_clip": "CXRClipModel",
    "radaudit_siamese_reid": "SiameseReIDModel",
}

#: The Packhäuser/CheXGenBench Siamese network: torchvision ResNet-50 (v1.5: stride on the 3×3 conv),
#: ``fc`` 2048→128, sigmoid embeddings, ``|e1 − e2|`` → ``fc_end`` Linear(128, 1) → sigmoid; input
#: ``Resize((224, 224))`` + ``ToTensor()`` (RGB, [0, 1], no normalisation).
PACKHAUSER_RESNET50: dict[str, Any] = {
    "num_channels": 3, "embedding_size": 64, "hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3],
    "layer_type": "bottleneck", "n_features": 128, "image_size": 224, "resize": "squash", "resample": "bilinear",
}

#: How to install hi-ml's multimodal package for :class:`BioViLTAlignment`.
BIOVIL_T_INSTALL = "pip install hi-ml-multimodal"


# --- images --------------------------------------------------------------------------------------

def to_gray_float(image: Any) -> np.ndarray:
    """One image as grayscale float32 ``[H, W]`` on [0, 1] (see the module docstring for the rules)."""
    from PIL import Image

    if isinstance(image, (str, os.PathLike, Image.Image)):
        im = load_image(image)
        if im.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
            arr = np.asarray(im).astype(np.float32) / 65535.0
        elif im.mode == "F":
            arr = np.asarray(im, dtype=np.float32)
        else:
            arr = np.asarray(im if im.mode == "L" else im.convert("L"), dtype=np.float32) / 255.0
    elif isinstance(image, np.ndarray):
        raw = image
        if raw.dtype == bool:
            scale = 1.0
        elif np.issubdtype(raw.dtype, np.integer):
            scale = float(np.iinfo(raw.dtype).max)
        elif np.issubdtype(raw.dtype, np.floating):
            scale = 1.0
        else:
            raise DataFormatError(f"An image array must be integer, float or bool; got dtype {raw.dtype}.")
        if raw.ndim == 3 and raw.shape[2] in (2, 4):
            raw = raw[:, :, : raw.shape[2] - 1]  # drop alpha
        if raw.ndim == 3 and raw.shape[2] in (1, 3):
            raw = raw.astype(np.float64).mean(axis=2)
        if raw.ndim != 2:
            raise DataFormatError(f"An image array must be [H, W] or [H, W, C]; got shape {image.shape}.")
        arr = (raw.astype(np.float64) / scale).astype(np.float32)
    else:
        raise ParamsError(f"An image must be a path, a PIL.Image or a numpy array; got {type(image).__name__}.")
    if not np.isfinite(arr).all():
        raise DataFormatError("An image contains NaN or infinite values.")
    return np.clip(arr, 0.0, 1.0)


def _center_square(width: int, height: int) -> tuple[int, int, int, int]:
    s = min(width, height)
    left, top = (width - s) // 2, (height - s) // 2
    return left, top, left + s, top + s


def _resized(image: Any, size: int, resize: str, resample: str = "bilinear") -> np.ndarray:
    """``[size, size]`` float32 on [0, 1]: 8-bit PIL images/paths resized as 8-bit (torchvision on PIL), others in mode F."""
    from PIL import Image

    flt = Image.BICUBIC if resample == "bicubic" else Image.BILINEAR

    if isinstance(image, (str, os.PathLike, Image.Image)):
        im = load_image(image)
        if im.mode in ("L", "RGB", "RGBA", "LA", "P", "1", "CMYK", "YCbCr"):
            im = im if im.mode == "L" else im.convert("L")
            if resize == "center_crop" and im.size[0] != im.size[1]:
                im = im.crop(_center_square(*im.size))
            if im.size != (size, size):
                im = im.resize((size, size), flt)
            return np.asarray(im, dtype=np.float32) / 255.0
    arr = to_gray_float(image)
    h, w = arr.shape
    if resize == "center_crop" and h != w:
        left, top, right, bottom = _center_square(w, h)
        arr = arr[top:bottom, left:right]
    if arr.shape != (size, size):
        arr = np.asarray(Image.fromarray(np.ascontiguousarray(arr), mode="F").resize((size, size), flt),
                         dtype=np.float32)
    return np.clip(arr, 0.0, 1.0)


def _as_image_list(images: Any) -> Sequence[Any]:
    """The images as an indexable sequence: a ``[N, H, W]`` array stays an array (rows are images)."""
    if isinstance(images, np.ndarray):
        if images.ndim == 3:
            return images
        if images.ndim == 4 and images.shape[-1] in (1, 3, 4):
            return images
        raise ParamsError(f"An image array must be a set [N, H, W] (or [N, H, W, C]); got shape {images.shape}. "
                          "Wrap a single image in a list: [image].")
    if isinstance(images, (str, os.PathLike)) or hasattr(images, "mode"):
        raise ParamsError("Pass a list of images (paths, PIL images or arrays) or an [N, H, W] array, not a single "
                          "image: wrap it in [ ].")
    return list(images)


def prepare_images(images: Any, size: int, *, channels: int = 1, resize: str = "center_crop",
                   resample: str = "bilinear") -> torch.Tensor:
    """The network input: float32 ``[n, channels, size, size]`` on [0, 1] (gray replicated to 3 channels if asked)."""
    import torch

    if resize not in RESIZE_POLICIES:
        raise ParamsError(f"resize must be one of {RESIZE_POLICIES}, got {resize!r}.")
    if resample not in RESAMPLE_FILTERS:
        raise ParamsError(f"resample must be one of {RESAMPLE_FILTERS}, got {resample!r}.")
    items = _as_image_list(images)
    if isinstance(items, np.ndarray) and items.ndim == 3 and items.shape[1:] == (size, size) \
            and np.issubdtype(items.dtype, np.floating):
        if not np.isfinite(items).all():
            raise DataFormatError("An image contains NaN or infinite values.")
        x = torch.from_numpy(np.clip(items.astype(np.float32, copy=False), 0.0, 1.0))[:, None]
    else:
        arrays = [_resized(items[i], size, resize, resample) for i in range(len(items))]
        x = torch.from_numpy(np.stack(arrays)) if arrays else torch.zeros((0, size, size))
        x = x[:, None]
    if channels != 1:
        x = x.expand(-1, channels, -1, -1)
    return x.contiguous()


def _check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or int(batch_size) < 1:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    return int(batch_size)


def _take(items: Sequence[Any], idx: range) -> Any:
    return items[idx.start:idx.stop] if isinstance(items, np.ndarray) else [items[i] for i in idx]


# --- the networks (built on first access so that importing this module does not import torch) -------

def _backbone_kwargs(config: Any) -> dict[str, Any]:
    return {"num_channels": int(config.num_channels), "embedding_size": int(config.embedding_size),
            "hidden_sizes": [int(h) for h in config.hidden_sizes], "depths": [int(d) for d in config.depths],
            "layer_type": str(config.layer_type), "hidden_act": "relu", "downsample_in_first_stage": False,
            "downsample_in_bottleneck": False}


def _backbone_bases() -> tuple[type, type]:
    """``(config base, model base)`` shared by the three networks: a transformers ``ResNetModel`` backbone
    with its input conventions, and the heads' initialisation."""
    import torch  # lazy: torch/transformers only when the classes are built (see model_classes)
    from torch import nn
    from transformers import PretrainedConfig, PreTrainedModel, ResNetConfig, ResNetModel
    from transformers import initialization as init

    class _BackboneConfig(PretrainedConfig):
        """A transformers ``ResNetModel`` backbone (``layer_type`` basic/bottleneck) + input conventions."""

        def __init__(self, num_channels: int = 1, embedding_size: int = 16, hidden_sizes: Sequence[int] = (16, 32, 64, 128),
                     depths: Sequence[int] = (1, 1, 1, 1), layer_type: str = "basic", image_size: int = 64,
                     resize: str = "center_crop", resample: str = "bilinear", **kwargs: Any) -> None:
            if layer_type not in ("basic", "bottleneck"):
                raise ParamsError(f"layer_type must be 'basic' or 'bottleneck', got {layer_type!r}.")
            if resize not in RESIZE_POLICIES:
                raise ParamsError(f"resize must be one of {RESIZE_POLICIES}, got {resize!r}.")
            if resample not in RESAMPLE_FILTERS:
                raise ParamsError(f"resample must be one of {RESAMPLE_FILTERS}, got {resample!r}.")
            if len(hidden_sizes) != len(depths) or not hidden_sizes:
                raise ParamsError(f"hidden_sizes {list(hidden_sizes)} and depths {list(depths)} must be non-empty and "
                                  "of the same length (one per stage).")
            self.num_channels = int(num_channels)
            self.embedding_size = int(embedding_size)
            self.hidden_sizes = [int(h) for h in hidden_sizes]
            self.depths = [int(d) for d in depths]
            self.layer_type = str(layer_type)
            self.image_size = int(image_size)
            self.resize = str(resize)
            self.resample = str(resample)
            super().__init__(**kwargs)

    class _Base(PreTrainedModel):
        main_input_name = "pixel_values"
        input_modalities = ("image",)

        def _build_backbone(self, config: Any) -> None:
            self.backbone = ResNetModel(ResNetConfig(**_backbone_kwargs(config)))

        @torch.no_grad()
        def _init_weights(self, module: Any) -> None:  # the heads (the backbone initialises itself, as ResNet)
            if isinstance(module, nn.Linear):
                init.kaiming_uniform_(module.weight, a=math.sqrt(5))
                if module.bias is not None:
                    fan_in = module.weight.shape[1]
                    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                    init.uniform_(module.bias, -bound, bound)

        def pooled(self, pixel_values: Any) -> Any:
            """Global average pool of the backbone's last stage: ``[n, hidden_sizes[-1]]``."""
            return self.backbone(pixel_values=pixel_values).pooler_output.flatten(1)

    return _BackboneConfig, _Base


def _encoder_classes(config_base: type, model_base: type) -> dict[str, type]:
    """``CXREncoderConfig``/``CXREncoderModel``: the demo RadDino stand-in."""
    from torch import nn  # lazy: see model_classes

    class CXREncoderConfig(config_base):
        """The demo chest X-ray encoder: backbone + label / view / SimCLR heads (heads unused for features)."""

        model_type = "radaudit_cxr_encoder"

        def __init__(self, label_names: Sequence[str] = (), view_names: Sequence[str] = (), ssl_dim: int = 64,
                     **kwargs: Any) -> None:
            self.label_names = [str(x) for x in label_names]
            self.view_names = [str(x) for x in view_names]
            self.ssl_dim = int(ssl_dim)
            super().__init__(**kwargs)

    class CXREncoderModel(model_base):
        """Features = ``pooled(x)`` (``hidden_sizes[-1]``-d); heads: multi-label logits, view logits, SimCLR projection."""

        config_class = CXREncoderConfig
        base_model_prefix = "cxr_encoder"

        def __init__(self, config: CXREncoderConfig) -> None:
            super().__init__(config)
            self._build_backbone(config)
            d = config.hidden_sizes[-1]
            self.label_head = nn.Linear(d, len(config.label_names)) if config.label_names else None
            self.view_head = nn.Linear(d, len(config.view_names)) if config.view_names else None
            self.ssl_head = (nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, config.ssl_dim))
                             if config.ssl_dim > 0 else None)
            self.post_init()

        def forward(self, pixel_values: Any, **kwargs: Any) -> dict[str, Any]:
            feats = self.pooled(pixel_values)
            return {"features": feats,
                    "label_logits": self.label_head(feats) if self.label_head is not None else None,
                    "view_logits": self.view_head(feats) if self.view_head is not None else None,
                    "ssl": self.ssl_head(feats) if self.ssl_head is not None else None}

    return {"CXREncoderConfig": CXREncoderConfig, "CXREncoderModel": CXREncoderModel}


def _clip_classes(config_base: type, model_base: type) -> dict[str, type]:
    """``CXRClipConfig``/``CXRClipModel``: the demo BioViL-T stand-in (CLIP-style alignment)."""
    import torch  # lazy: see model_classes
    from torch import nn
    from transformers import initialization as init

    class CXRClipConfig(config_base):
        """Image tower (backbone + linear projection) and a projection of frozen sentence embeddings."""

        model_type = "radaudit_cxr_clip"

        def __init__(self, text_encoder: str = DEFAULT_TEXT_ENCODER, text_dim: int = 384, proj_dim: int = 64,
                     text_hidden: int = 256, logit_scale_init: float = math.log(1 / 0.07), max_logit_scale: float = 100.0,
                     **kwargs: Any) -> None:
            self.text_encoder = str(text_encoder)
            self.text_dim = int(text_dim)
            self.proj_dim = int(proj_dim)
            self.text_hidden = int(text_hidden)
            self.logit_scale_init = float(logit_scale_init)
            self.max_logit_scale = float(max_logit_scale)
            super().__init__(**kwargs)

    class CXRClipModel(model_base):
        """``image_embeds(x)`` and ``text_embeds(t)`` (L2-normalised, ``proj_dim``); ``t`` = the frozen text
        encoder's pooled sentence embeddings (``config.text_encoder``, mean pooling, normalised)."""

        config_class = CXRClipConfig
        base_model_prefix = "cxr_clip"

        def __init__(self, config: CXRClipConfig) -> None:
            super().__init__(config)
            self._build_backbone(config)
            self.image_proj = nn.Linear(config.hidden_sizes[-1], config.proj_dim)
            if config.text_hidden > 0:
                self.text_proj = nn.Sequential(nn.Linear(config.text_dim, config.text_hidden), nn.GELU(),
                                               nn.Linear(config.text_hidden, config.proj_dim))
            else:
                self.text_proj = nn.Sequential(nn.Linear(config.text_dim, config.proj_dim))
            self.logit_scale = nn.Parameter(torch.tensor(float(config.logit_scale_init)))
            self.post_init()

        @torch.no_grad()
        def _init_weights(self, module: Any) -> None:
            super()._init_weights(module)
            if module is self:
                init.constant_(self.logit_scale, float(self.config.logit_scale_init))

        def image_embeds(self, pixel_values: Any) -> Any:
            return nn.functional.normalize(self.image_proj(self.pooled(pixel_values)), dim=-1)

        def text_embeds(self, text_features: Any) -> Any:
            return nn.functional.normalize(self.text_proj(text_features), dim=-1)

        def scale(self) -> Any:
            return self.logit_scale.exp().clamp(max=self.config.max_logit_scale)

        def forward(self, pixel_values: Any, text_features: Any, **kwargs: Any) -> dict[str, Any]:
            img, txt = self.image_embeds(pixel_values), self.text_embeds(text_features)
            return {"image_embeds": img, "text_embeds": txt, "logits_per_image": self.scale() * img @ txt.t()}

    return {"CXRClipConfig": CXRClipConfig, "CXRClipModel": CXRClipModel}


def _siamese_classes(config_base: type, model_base: type) -> dict[str, type]:
    """``SiameseReIDConfig``/``SiameseReIDModel``: Packhäuser et al.'s Siamese re-identification network."""
    import torch  # lazy: see model_classes
    from torch import nn

    class SiameseReIDConfig(config_base):
        """Packhäuser et al.'s Siamese network: backbone → ``fc`` → sigmoid → ``|e1−e2|`` → ``fc_end``.

        ``monotone_head`` (demo networks only; False for the paper checkpoint): ``fc_end``'s weights are
        used as ``−softplus(w)`` ≤ 0, so the score falls monotonically as the embeddings move apart and
        an identical pair gets the highest score (``sigmoid(bias)``); see
        :mod:`radaudit.audits.synthetic_cxr.models` ("Re-ID") for why. The state-dict keys are the same.
        """

        model_type = "radaudit_siamese_reid"

        def __init__(self, n_features: int = 128, source: str = "", monotone_head: bool = False, **kwargs: Any) -> None:
            self.n_features = int(n_features)
            self.source = str(source)
            self.monotone_head = bool(monotone_head)
            kwargs.setdefault("resize", "squash")
            super().__init__(**kwargs)

    class SiameseReIDModel(model_base):
        """``forward(x1, x2)`` → logits ``[n]``; the re-ID score is ``sigmoid(logit)`` (CheXGenBench's
        ``get_reidentification_score``). ``embed(x)`` = ``sigmoid(fc(pool(backbone(x))))`` (``forward_once``)."""

        config_class = SiameseReIDConfig
        base_model_prefix = "siamese"

        def __init__(self, config: SiameseReIDConfig) -> None:
            super().__init__(config)
            self._build_backbone(config)
            self.fc = nn.Linear(config.hidden_sizes[-1], config.n_features)
            self.fc_end = nn.Linear(config.n_features, 1)
            self.post_init()

        def embed(self, pixel_values: Any) -> Any:
            return torch.sigmoid(self.fc(self.pooled(pixel_values)))

        def head(self, e1: Any, e2: Any) -> Any:
            """``fc_end(|e1 − e2|)``; with ``monotone_head`` the weights are ``−softplus(fc_end.weight)`` (≤ 0)."""
            diff = torch.abs(e1 - e2)
            if self.config.monotone_head:
                w = -nn.functional.softplus(self.fc_end.weight)
                return nn.functional.linear(diff, w, self.fc_end.bias).squeeze(-1)
            return self.fc_end(diff).squeeze(-1)

        def forward(self, pixel_values: Any, pixel_values_2: Any, **kwargs: Any) -> Any:
            n = pixel_values.shape[0]
            e = self.embed(torch.cat([pixel_values, pixel_values_2]))  # one pass: eval-mode BN makes it identical
            return self.head(e[:n], e[n:])

    return {"SiameseReIDConfig": SiameseReIDConfig, "SiameseReIDModel": SiameseReIDModel}


@functools.cache
def model_classes() -> dict[str, type]:
    """This module's network classes by name (:data:`CXR_MODEL_TYPES`' classes and their configs:
    ``CXREncoderConfig``/``CXREncoderModel``, ``CXRClipConfig``/``CXRClipModel``,
    ``SiameseReIDConfig``/``SiameseReIDModel``), built on the first call (which imports torch and transformers)
    and the same objects on every later call. Code that trains or loads these networks takes the classes from
    here, so that importing this module stays free of torch."""
    config_base, model_base = _backbone_bases()
    out = {**_encoder_classes(config_base, model_base), **_clip_classes(config_base, model_base),
           **_siamese_classes(config_base, model_base)}
    for name, cls in out.items():  # as if defined at this module's top level: model cards, training logs and
        # pickles name them radaudit.models.cxr_nets.<name>
        cls.__module__ = __name__
        cls.__qualname__ = name
    return out


_CLASS_NAMES = ("CXREncoderConfig", "CXREncoderModel", "CXRClipConfig", "CXRClipModel", "SiameseReIDConfig",
                "SiameseReIDModel")


def __getattr__(name: str) -> Any:  # PEP 562: the model classes are built (importing torch) on first access
    if name in _CLASS_NAMES:
        return model_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _model_type(folder: Path) -> str | None:
    try:
        return json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return None


def load_cxr_model(path: str | os.PathLike[str], device: str | None = None, expected: str | None = None) -> Any:
    """A saved network of this module (encoder, CLIP or Siamese), by its ``config.json`` ``model_type``, in eval mode.

    ``expected``: a class name (``"CXREncoderModel"``...) the folder must hold.
    """
    folder = Path(os.fspath(path)).expanduser()
    if not (folder / "config.json").is_file():
        raise ModelUnavailableError(f"{str(folder)!r} holds no saved model (no config.json). Train one with "
                                    "radaudit.audits.synthetic_cxr.models (demo_encoder_path, demo_clip_path, "
                                    "demo_reid_path) or pass the folder they returned.")
    mtype = _model_type(folder)
    if mtype not in CXR_MODEL_TYPES:
        raise ModelUnavailableError(f"{str(folder)!r} holds a {mtype!r} model, not one of this module's networks "
                                    f"({', '.join(CXR_MODEL_TYPES)}).")
    name = CXR_MODEL_TYPES[mtype]
    if expected is not None and name != expected:
        raise ModelUnavailableError(f"{str(folder)!r} holds a {name}, but a {expected} is needed here.")
    model = model_classes()[name].from_pretrained(str(folder))
    return model.to(resolve_device(device)).eval()


def _model_of(model_or_path: Any, expected: str, device: str | None) -> tuple[Any, str | None]:
    if isinstance(model_or_path, (str, os.PathLike)):
        return load_cxr_model(model_or_path, device, expected), str(Path(os.fspath(model_or_path)))
    cls = model_classes()[expected]
    if not isinstance(model_or_path, cls):
        raise ParamsError(f"Expected a {expected} (or the folder it was saved to), got {type(model_or_path).__name__}.")
    return model_or_path.to(resolve_device(device)).eval(), None


def _card(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return json.loads((Path(path) / "radaudit_cxr_model.json").read_text())
    except (OSError, ValueError):
        return {}


# --- the demo encoder as an ImageEncoder ----------------------------------------------------------

class CXREncoder:
    """:class:`~radaudit.models.encoders.ImageEncoder` of a trained ``CXREncoderModel`` (the demo RadDino stand-in).

    Features: the global average pool of the backbone's last stage (``dim = hidden_sizes[-1]``, 128 by
    default), not the heads' outputs — the representation trained by all three objectives (see
    :func:`radaudit.audits.synthetic_cxr.models.train_demo_encoder`). Preprocessing:
    :func:`prepare_images` with the model's ``image_size``/``resize`` (default 64 px, centre crop).
    """

    def __init__(self, model_or_path: Any, device: str | None = None, batch_size: int = 64) -> None:
        self.model, self.path = _model_of(model_or_path, "CXREncoderModel", device)
        self.device = str(next(self.model.parameters()).device)
        self.batch_size = _check_batch_size(batch_size)
        cfg = self.model.config
        self.dim = int(cfg.hidden_sizes[-1])
        self.name = f"cxr-encoder:{Path(self.path).name}" if self.path else "cxr-encoder"

    def describe(self) -> dict[str, Any]:
        cfg = self.model.config
        card = _card(self.path)
        return {"encoder": "CXREncoder", "path": self.path, "config_hash": card.get("config_hash"),
                "feature": f"global average pool of the last ResNet stage ({self.dim})", "dim": self.dim,
                "preprocessing": f"grayscale [0,1]; {cfg.resize} to {cfg.image_size}x{cfg.image_size} (PIL {cfg.resample})"}

    def embed(self, images: Any, batch_size: int | None = None) -> np.ndarray:
        """float32 ``[n, dim]`` features in input order; images are converted one batch at a time."""
        return _embed_batches(self.model, self.model.pooled, images, batch_size or self.batch_size, self.dim, self.device)


def _embed_batches(model: Any, forward: Any, images: Any, batch_size: int, dim: int, device: str) -> np.ndarray:
    """float32 ``[n, dim]`` = ``forward(pixels)`` of the images in input order, converted one batch at a time
    with the preprocessing of ``model.config`` (image size, channels, resize policy, resampling)."""
    import torch

    items = _as_image_list(images)
    b = _check_batch_size(batch_size)
    cfg = model.config
    out = np.zeros((len(items), dim), dtype=np.float32)
    with torch.inference_mode():
        for idx in _batches(len(items), b):
            x = prepare_images(_take(items, idx), cfg.image_size, channels=cfg.num_channels, resize=cfg.resize,
                               resample=cfg.resample)
            out[idx.start:idx.stop] = forward(x.to(device)).float().cpu().numpy()
    return out


def is_cxr_encoder_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding a saved ``CXREncoderModel``."""
    try:
        folder = Path(os.fspath(path)).expanduser()
    except TypeError:
        return False
    return folder.is_dir() and _model_type(folder) == "radaudit_cxr_encoder"


def cxr_encoder(path: str | os.PathLike[str], device: str | None = None, batch_size: int = 64, **_: Any) -> CXREncoder:
    """The :class:`CXREncoder` saved in ``path`` (what ``build_image_encoder`` should return for such a folder)."""
    return CXREncoder(path, device=device, batch_size=batch_size)


# --- image–text alignment ---------------------------------------------------------------------------

def _check_captions(captions: Any, n: int) -> list[str]:
    if isinstance(captions, str):
        raise ParamsError("Pass one caption per image (a list of strings), not a single string.")
    captions = list(captions)
    bad = [i for i, c in enumerate(captions) if not isinstance(c, str)]
    if bad:
        raise DataFormatError(f"Captions must be strings; item(s) {bad[:5]} are not (e.g. {captions[bad[0]]!r}).")
    if len(captions) != n:
        raise DataFormatError(f"{n} images but {len(captions)} captions: alignment scores pair them one to one.")
    return captions


class ClipAlignment:
    """Image–text alignment with a trained ``CXRClipModel`` (the demo BioViL-T stand-in, paper §2.2).

    ``score(images, captions)``: per pair, the cosine similarity of the L2-normalised image and text
    embeddings in [-1, 1] — the quantity BioViL-T's ``get_similarity_score_from_raw_data`` returns.
    Text embeddings: the frozen sentence encoder named in the model's config (all-MiniLM-L6-v2 from
    PyPI: mean pooling, normalised) followed by the trained projection; unique captions are embedded
    once per call.
    """

    def __init__(self, model_or_path: Any, *, text_encoder: Any = None, device: str | None = None,
                 batch_size: int = 64) -> None:
        self.model, self.path = _model_of(model_or_path, "CXRClipModel", device)
        self.device = str(next(self.model.parameters()).device)
        self.batch_size = _check_batch_size(batch_size)
        self._text_encoder = text_encoder
        self.name = f"cxr-clip:{Path(self.path).name}" if self.path else "cxr-clip"

    @property
    def text_encoder(self) -> Any:
        if self._text_encoder is None:
            self._text_encoder = TextEncoder(self.model.config.text_encoder, device="cpu", pooling="mean",
                                             normalize=True)
        return self._text_encoder

    def describe(self) -> dict[str, Any]:
        card = _card(self.path)
        return {"alignment": "ClipAlignment", "path": self.path, "config_hash": card.get("config_hash"),
                "text_encoder": self.model.config.text_encoder, "score": "cosine of normalised projections"}

    def embed_images(self, images: Any, batch_size: int | None = None) -> np.ndarray:
        return _embed_batches(self.model, self.model.image_embeds, images, batch_size or self.batch_size,
                              self.model.config.proj_dim, self.device)

    def embed_texts(self, captions: Sequence[str], text_features: np.ndarray | None = None) -> np.ndarray:
        """Normalised ``[n, proj_dim]`` text embeddings (``text_features``: precomputed frozen-encoder features)."""
        import torch

        captions = list(captions)
        if text_features is None:
            uniq = sorted(set(captions))
            feats = self.text_encoder.embed(uniq) if uniq else np.zeros((0, self.model.config.text_dim), np.float32)
            pos = {c: i for i, c in enumerate(uniq)}
            text_features = feats[[pos[c] for c in captions]] if captions else feats
        with torch.inference_mode():
            t = torch.as_tensor(np.asarray(text_features, dtype=np.float32), device=self.device)
            return self.model.text_embeds(t).float().cpu().numpy()

    def score(self, images: Any, captions: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """float64 cosine similarity of each ``(images[i], captions[i])`` pair, in [-1, 1]."""
        items = _as_image_list(images)
        captions = _check_captions(captions, len(items))
        if not captions:
            return np.zeros(0, dtype=np.float64)
        img = self.embed_images(items, batch_size).astype(np.float64)
        txt = self.embed_texts(captions).astype(np.float64)
        return np.clip((img * txt).sum(axis=1), -1.0, 1.0)


class BioViLTAlignment:
    """BioViL-T image–text alignment through hi-ml's ``health_multimodal`` (the ``paper`` preset, §2.2).

    As CheXGenBench's ``metrics/img_text_alignment_scores.py``: ``get_bert_inference()`` and
    ``get_image_inference()`` with their defaults (BioViL-T's text and image models in
    hi-ml-multimodal ≥ 0.2), ``ImageTextInferenceEngine``, and per pair
    ``get_similarity_score_from_raw_data(image_path, caption)``: the cosine of the projected global
    image embedding and the normalised text embedding. hi-ml reads images from files, so arrays and
    PIL images are written to temporary 8-bit PNGs first (paths are passed as they are). We keep
    the full-precision score (the authors round each score to 3 decimals before averaging).
    hi-ml downloads the BioViL-T weights from the Hugging Face hub on first use.
    """

    name = "biovil-t"

    def __init__(self, device: str | None = None, engine: Any = None) -> None:
        if engine is None:
            try:
                from health_multimodal.image import get_image_inference
                from health_multimodal.text import get_bert_inference
                from health_multimodal.vlp import ImageTextInferenceEngine
            except ImportError as err:
                raise ModelUnavailableError(
                    f"The BioViL-T alignment score needs hi-ml's health_multimodal package, which is not installed "
                    f"({err}). Install it with `{BIOVIL_T_INSTALL}` (it downloads microsoft/BiomedVLP-BioViL-T from the "
                    "Hugging Face hub on first use), or use the demo alignment model (ClipAlignment).") from err
            engine = ImageTextInferenceEngine(image_inference_engine=get_image_inference(),
                                              text_inference_engine=get_bert_inference())
        self.device = resolve_device(device)
        if hasattr(engine, "to"):
            engine.to(self.device)
        self.engine = engine

    def describe(self) -> dict[str, Any]:
        return {"alignment": "BioViLTAlignment", "package": "hi-ml-multimodal (health_multimodal)",
                "score": "ImageTextInferenceEngine.get_similarity_score_from_raw_data (cosine)"}

    def score(self, images: Any, captions: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """float64 cosine similarity per ``(images[i], captions[i])`` pair."""
        from PIL import Image

        items = _as_image_list(images)
        captions = _check_captions(captions, len(items))
        out = np.zeros(len(items), dtype=np.float64)
        with tempfile.TemporaryDirectory(prefix="radaudit_biovilt_") as tmp:
            for i in range(len(items)):
                image = items[i]
                if isinstance(image, (str, os.PathLike)):
                    path = Path(os.fspath(image))
                    if not path.is_file():
                        raise DatasetNotFoundError(f"Image file {str(path)!r} does not exist.")
                else:
                    arr = np.rint(to_gray_float(image) * 255.0).astype(np.uint8)
                    path = Path(tmp) / f"{i}.png"
                    Image.fromarray(arr, mode="L").save(path)
                out[i] = float(self.engine.get_similarity_score_from_raw_data(path, captions[i]))
        return out


def alignment_scores(model: Any, images: Any, captions: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
    """Image–text alignment (cosine similarity, [-1, 1]) of each ``(images[i], captions[i])`` pair (paper §2.2).

    ``model``: a ``CXRClipModel``, the folder it was saved to, or any object with
    ``score(images, captions)`` (:class:`ClipAlignment`, :class:`BioViLTAlignment`). The paper reports
    the mean over a set's images (Table 1, "Alignment Score").
    """
    scorer = model if hasattr(model, "score") and callable(model.score) else ClipAlignment(model)
    return np.asarray(scorer.score(images, captions, batch_size=batch_size), dtype=np.float64)


# --- Siamese re-identification --------------------------------------------------------------------

class SiameseScorer:
    """:data:`~radaudit.metrics.image.privacy.PairScorer` from a ``SiameseReIDModel`` (paper §2.3, ``s_reid``).

    ``scorer(real_images, synthetic_images)`` → float64 ``[n]`` probabilities that each pair shows the
    same patient: ``sigmoid(fc_end(|e(real) − e(synth)|))``. Both images get the model's
    preprocessing (:func:`prepare_images`; the paper checkpoint: 3 channels, ``Resize((224, 224))``, [0, 1]).
    Pairs are scored ``batch_size`` at a time.
    """

    def __init__(self, model_or_path: Any, device: str | None = None, batch_size: int = 32) -> None:
        self.model, self.path = _model_of(model_or_path, "SiameseReIDModel", device)
        self.device = str(next(self.model.parameters()).device)
        self.batch_size = _check_batch_size(batch_size)
        self.name = f"siamese-reid:{Path(self.path).name}" if self.path else "siamese-reid"

    def describe(self) -> dict[str, Any]:
        cfg = self.model.config
        card = _card(self.path)
        return {"scorer": "SiameseScorer", "path": self.path, "config_hash": card.get("config_hash"),
                "source": cfg.source, "image_size": cfg.image_size, "resize": cfg.resize,
                "channels": cfg.num_channels}

    def _prep(self, images: Any) -> Any:
        cfg = self.model.config
        return prepare_images(images, cfg.image_size, channels=cfg.num_channels, resize=cfg.resize,
                              resample=cfg.resample).to(self.device)

    def embed(self, images: Any, batch_size: int | None = None) -> np.ndarray:
        """The sigmoid embeddings ``[n, n_features]`` (``forward_once``)."""
        import torch

        items = _as_image_list(images)
        b = _check_batch_size(batch_size or self.batch_size)
        out = np.zeros((len(items), self.model.config.n_features), dtype=np.float32)
        with torch.inference_mode():
            for idx in _batches(len(items), b):
                out[idx.start:idx.stop] = self.model.embed(self._prep(_take(items, idx))).float().cpu().numpy()
        return out

    def __call__(self, real_images: Any, synthetic_images: Any, batch_size: int | None = None) -> np.ndarray:
        import torch

        real, synth = _as_image_list(real_images), _as_image_list(synthetic_images)
        if len(real) != len(synth):
            raise DataFormatError(f"{len(real)} real and {len(synth)} synthetic images: pairs must match.")
        b = _check_batch_size(batch_size or self.batch_size)
        out = np.zeros(len(real), dtype=np.float64)
        with torch.inference_mode():
            for idx in _batches(len(real), b):
                logits = self.model(self._prep(_take(real, idx)), self._prep(_take(synth, idx)))
                out[idx.start:idx.stop] = torch.sigmoid(logits.double()).cpu().numpy()
        return out


# --- the authors' checkpoint: torchvision ResNet Siamese state_dict -> SiameseReIDModel ---------------
# (the state_dict conversion itself: radaudit.models.cxr_checkpoint)

def load_packhauser_reid(checkpoint_path: str | os.PathLike[str], device: str | None = None) -> Any:
    """The Packhäuser et al. Siamese re-ID network from CheXGenBench's checkpoint, as a ``SiameseReIDModel`` (eval mode).

    ``checkpoint_path``: the torchvision ``state_dict`` file, e.g. ``ResNet-50_epoch11_data_handling_RPN.pth``
    from the hub repo ``raman07/Patient_ReIdentification_MIMIC`` (download it once; no network is used
    here). It is read with ``torch.load(weights_only=True)``, converted by
    :func:`convert_torchvision_siamese` and loaded strictly. Inputs (through :class:`SiameseScorer`):
    RGB (gray replicated), ``Resize((224, 224))``, [0, 1], no normalisation — as the authors' script.
    The result saves with ``save_pretrained`` and reloads with :func:`load_cxr_model`.
    """
    import torch

    path = Path(os.fspath(checkpoint_path)).expanduser()
    if not path.is_file():
        raise ModelUnavailableError(f"Re-ID checkpoint {str(path)!r} does not exist. Download "
                                    f"'{PACKHAUSER_CHECKPOINT.rsplit('/', 1)[1]}' from the Hugging Face repo "
                                    f"'{PACKHAUSER_CHECKPOINT.rsplit('/', 1)[0]}' and pass its path, or use the demo "
                                    "re-ID network (demo_reid_path).")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - pickle/zip errors of many kinds: one clear message
        raise DataFormatError(f"Could not read {str(path)!r} with torch.load(weights_only=True) "
                              f"({type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}). "
                              f"Expected the Siamese re-ID state_dict ({PACKHAUSER_CHECKPOINT}).") from err
    config_kwargs, converted = convert_torchvision_siamese(state, path=str(path))
    classes = model_classes()
    config = classes["SiameseReIDConfig"](**config_kwargs, source=f"packhauser:{path.name}")
    model = classes["SiameseReIDModel"](config)
    expected = model.state_dict()
    for k, v in converted.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise DataFormatError(f"{str(path)!r}: {k} has shape {tuple(v.shape)}, expected {tuple(expected[k].shape)}.")
    missing = set(expected) - set(converted)
    if any(not k.endswith("num_batches_tracked") for k in missing):  # pragma: no cover - checked in convert
        raise DataFormatError(f"{str(path)!r}: missing {sorted(missing)[:5]}")
    for k in missing:  # num_batches_tracked only: unused in eval mode
        converted[k] = expected[k]
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in converted.items()}, strict=True)
    return model.to(resolve_device(device)).eval()
