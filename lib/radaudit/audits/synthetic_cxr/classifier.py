"""The utility classifier of paper 004 §2.4: a multi-label ResNet trained on one training source, and its cache.

What differs from the authors' recipe (listed in :mod:`~radaudit.audits.synthetic_cxr.utility`), and why
---------------------------------------------------------------------------------------------------
* **Architecture.** timm/torchvision do not work in this environment and no ImageNet or chest
  X-ray weights ship offline, so the ``demo`` preset trains a small ResNet from scratch
  (transformers ``ResNetConfig``: basic blocks, depths ``[1, 1, 1, 1]``, widths ``[16, 32, 64, 128]``,
  one input channel, ~0.3 M parameters, :data:`DEMO_ARCHITECTURE`). It is a **stand-in**: its AUROCs
  are not comparable with the paper's numbers, only the comparison between training sources is.
  ``architecture="resnet50"`` builds the paper's ResNet-50 (transformers ``ResNetConfig`` defaults:
  bottleneck blocks ``[3, 4, 6, 3]``, widths ``[256, 512, 1024, 2048]``, 3 channels), optionally
  initialised from ``pretrained`` (a hub id such as ``microsoft/resnet-50`` — the ImageNet weights
  transformers ports from timm/torchvision — or a local ``save_pretrained`` folder); the 1000-class
  head is replaced. Any other ``ResNetConfig`` can be passed as a dict.
* **Augmentation** is written in plain torch (torchvision does not work here): per image, a
  horizontal flip with probability 0.5 and a rotation drawn uniformly from ``[-10°, 10°]``
  (``affine_grid``/``grid_sample``, bilinear, zero fill; torchvision's default interpolation is
  nearest), drawn from a seeded ``torch.Generator``. As in the authors' transform, images are
  resized first, then augmented, then normalised. (A horizontal flip moves the heart to the right;
  the authors flip anyway, and so do we, to stay comparable; ``augment=False`` turns it off.)
* **Normalisation**: ImageNet mean/std for 3-channel models (grayscale replicated, as
  ``convert("RGB")`` does); for 1-channel models the channel averages of ImageNet's mean/std
  (0.449, 0.226).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.inputs import as_label_matrix, check_images, check_label_names, positive_int
from radaudit.errors import ParamsError
from radaudit.models.resolver import (
    ModelUnavailableError,
    load_failed_message,
    resolve_device,
    resolve_model,
)
from radaudit.paths import atomic_dir, reusable_model_dir
from radaudit.stats import stable_seed

__all__ = ["ARCHITECTURES", "DEMO_ARCHITECTURE", "RECIPE_VERSION", "TRAIN_DEFAULTS", "TrainedClassifier",
           "build_classifier", "check_train_settings", "classifier_fingerprint", "load_or_train_classifier",
           "predict_scores", "train_classifier"]

log = logging.getLogger(__name__)

#: Named architectures (``architecture=`` also takes a dict of ``ResNetConfig`` arguments).
ARCHITECTURES: tuple[str, ...] = ("demo_resnet", "resnet50")
#: The demo stand-in: a ~0.3 M-parameter ResNet with basic blocks, trained from scratch on 1 channel.
DEMO_ARCHITECTURE: dict[str, Any] = {"num_channels": 1, "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128],
                                     "depths": [1, 1, 1, 1], "layer_type": "basic",
                                     "downsample_in_first_stage": False}
#: The paper's ResNet-50 (``ResNetConfig`` defaults, spelled out).
RESNET50_ARCHITECTURE: dict[str, Any] = {"num_channels": 3, "embedding_size": 64,
                                         "hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3],
                                         "layer_type": "bottleneck", "downsample_in_first_stage": False}
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
#: Bump when the training recipe changes in a way the settings do not show (invalidates cached classifiers).
RECIPE_VERSION = 1
META_FILE = "radaudit_utility_classifier.json"
#: The :func:`train_classifier` settings and their defaults (the paper's, except the architecture and batch size).
TRAIN_DEFAULTS: dict[str, Any] = {"epochs": 20, "batch_size": 32, "lr": 1e-4, "weight_decay": 1e-5, "augment": True,
                                  "max_rotation": 10.0, "architecture": "demo_resnet", "pretrained": None,
                                  "image_size": None, "val_fraction": 0.05, "lr_factor": 0.1, "lr_patience": 2,
                                  "select_best": True, "max_seconds": None}


def check_train_settings(hp: Mapping[str, Any]) -> None:
    """Raise :class:`ParamsError` on a classifier setting that is not a :data:`TRAIN_DEFAULTS` key or ``device``."""
    unknown = sorted(set(hp) - set(TRAIN_DEFAULTS) - {"device"})
    if unknown:
        raise ParamsError(f"Unknown classifier setting(s) {unknown}; allowed: {', '.join(TRAIN_DEFAULTS)}, device.")


@dataclass
class TrainedClassifier:
    """What :func:`train_classifier` returns.

    ``model``: a transformers ``ResNetForImageClassification`` (eval mode) whose config carries the
    label names (``id2label``) and the preprocessing (``radaudit_preprocessing``) that
    :func:`predict_scores` applies. ``history``: per epoch ``epoch, train_loss, val_loss, lr``.
    ``best_epoch``: the epoch whose weights were kept (lowest validation loss with ``select_best``).
    """

    model: Any
    label_names: list[str]
    history: pd.DataFrame
    best_epoch: int
    n_train: int
    n_val: int
    settings: dict[str, Any]
    elapsed_seconds: float = 0.0
    stopped_early: bool = False
    from_cache: bool = False
    folder: Path | None = None


def _architecture_config(architecture: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(architecture, Mapping):
        return dict(architecture)
    if architecture == "demo_resnet":
        return dict(DEMO_ARCHITECTURE)
    if architecture == "resnet50":
        return dict(RESNET50_ARCHITECTURE)
    raise ParamsError(f"architecture={architecture!r} is not known: use one of {', '.join(ARCHITECTURES)}, "
                      "or a dict of transformers ResNetConfig arguments.")


def build_classifier(architecture: str | Mapping[str, Any], label_names: Sequence[str], *,
                     pretrained: str | None = None, image_size: int | None = None) -> Any:
    """A ``ResNetForImageClassification`` with ``len(label_names)`` logits for multi-label BCE.

    ``architecture``: ``"demo_resnet"`` (:data:`DEMO_ARCHITECTURE`, from scratch), ``"resnet50"``
    (the paper's backbone) or a dict of ``ResNetConfig`` arguments. ``pretrained``: a hub id
    (``microsoft/resnet-50``) or a local ``save_pretrained`` folder whose weights initialise the
    backbone (the architecture then comes from the checkpoint; its head is replaced —
    ``ignore_mismatched_sizes``). The initial weights of new layers follow torch's global RNG: call
    inside ``torch.manual_seed`` (as :func:`train_classifier` does). ``image_size``: the side images
    are resized to before the network (None: kept as given; the paper uses 224), stored in the config.
    """
    from transformers import ResNetConfig, ResNetForImageClassification

    names = check_label_names(label_names)
    if image_size is not None and (isinstance(image_size, bool) or not isinstance(image_size, numbers.Integral)
                                   or image_size < 8):
        raise ParamsError(f"image_size must be an integer >= 8 (or None to keep the input size), got {image_size!r}.")
    head = {"num_labels": len(names), "problem_type": "multi_label_classification",
            "id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}
    if pretrained is not None:
        resolved = resolve_model(pretrained)
        try:
            model = ResNetForImageClassification.from_pretrained(resolved.path_or_id, ignore_mismatched_sizes=True,
                                                                 **resolved.pretrained_kwargs(), **head)
        except (OSError, ValueError) as err:
            raise ModelUnavailableError(load_failed_message(resolved, err)
                                        + " Or train from scratch: pretrained=None.") from err
    else:
        cfg_kwargs = _architecture_config(architecture)
        try:
            config = ResNetConfig(**cfg_kwargs, **head)
        except (TypeError, ValueError) as err:
            raise ParamsError(f"Bad ResNetConfig arguments {cfg_kwargs}: {err}") from err
        model = ResNetForImageClassification(config)
    channels = int(model.config.num_channels)
    if channels == 3:
        mean, std = list(IMAGENET_MEAN), list(IMAGENET_STD)
    elif channels == 1:
        mean, std = [float(np.mean(IMAGENET_MEAN))], [float(np.mean(IMAGENET_STD))]
    else:
        raise ParamsError(f"The classifier has {channels} input channels; grayscale X-rays need 1 or 3.")
    model.config.radaudit_preprocessing = {"image_size": None if image_size is None else int(image_size),
                                           "mean": mean, "std": std}
    return model


def _preprocessing(model: Any) -> dict[str, Any]:
    pre = getattr(model.config, "radaudit_preprocessing", None)
    if not pre:
        channels = int(model.config.num_channels)
        mean = list(IMAGENET_MEAN) if channels == 3 else [float(np.mean(IMAGENET_MEAN))]
        std = list(IMAGENET_STD) if channels == 3 else [float(np.mean(IMAGENET_STD))]
        pre = {"image_size": None, "mean": mean, "std": std}
    return dict(pre)


def _prepare(batch: np.ndarray, pre: Mapping[str, Any], augment: bool, max_rotation: float, generator: Any) -> Any:
    """``[B, H, W]`` in [0, 1] → resized, optionally flipped/rotated, channel-replicated, normalised tensor."""
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(np.ascontiguousarray(batch, dtype=np.float32)).unsqueeze(1)
    size = pre.get("image_size")
    if size is not None and tuple(x.shape[-2:]) != (size, size):
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False).clamp_(0, 1)
    if augment:
        n = x.shape[0]
        flip = torch.rand(n, generator=generator) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        if max_rotation > 0:
            angle = (torch.rand(n, generator=generator) * 2 - 1) * math.radians(max_rotation)
            cos, sin = torch.cos(angle), torch.sin(angle)
            zero = torch.zeros_like(cos)
            theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    mean = torch.tensor(pre["mean"], dtype=torch.float32).view(1, -1, 1, 1)
    std = torch.tensor(pre["std"], dtype=torch.float32).view(1, -1, 1, 1)
    if mean.shape[1] == 3:
        x = x.expand(-1, 3, -1, -1)
    return (x - mean) / std


def _settings(epochs: int, batch_size: int, lr: float, weight_decay: float, augment: bool, max_rotation: float,
              architecture: str | Mapping[str, Any], pretrained: str | None, image_size: int | None,
              val_fraction: float, lr_factor: float, lr_patience: int, select_best: bool,
              max_seconds: float | None) -> dict[str, Any]:
    epochs = positive_int("epochs", epochs)
    batch_size = positive_int("batch_size", batch_size)
    for name, v in (("lr", lr), ("lr_factor", lr_factor)):
        if not (isinstance(v, (int, float)) and v > 0):
            raise ParamsError(f"{name} must be a positive number, got {v!r}.")
    if not (isinstance(weight_decay, (int, float)) and weight_decay >= 0):
        raise ParamsError(f"weight_decay must be >= 0, got {weight_decay!r}.")
    if not (isinstance(val_fraction, (int, float)) and 0 <= val_fraction < 1):
        raise ParamsError(f"val_fraction must lie in [0, 1) (paper: 0.05), got {val_fraction!r}.")
    if isinstance(lr_patience, bool) or not isinstance(lr_patience, numbers.Integral) or lr_patience < 0:
        raise ParamsError(f"lr_patience must be a non-negative integer (paper: 2), got {lr_patience!r}.")
    if not (isinstance(max_rotation, (int, float)) and 0 <= max_rotation <= 180):
        raise ParamsError(f"max_rotation must be a number of degrees in [0, 180] (paper: 10), got {max_rotation!r}.")
    if max_seconds is not None and not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise ParamsError(f"max_seconds must be a positive number of seconds or None, got {max_seconds!r}.")
    if isinstance(architecture, str):
        _architecture_config(architecture)  # validates the name
    return {"epochs": epochs, "batch_size": batch_size, "lr": float(lr), "weight_decay": float(weight_decay),
            "augment": bool(augment), "max_rotation": float(max_rotation),
            "architecture": architecture if isinstance(architecture, str) else dict(architecture),
            "pretrained": None if pretrained is None else str(pretrained),
            "image_size": None if image_size is None else int(image_size), "val_fraction": float(val_fraction),
            "lr_factor": float(lr_factor), "lr_patience": int(lr_patience), "select_best": bool(select_best),
            "max_seconds": None if max_seconds is None else float(max_seconds),
            "optimizer": "Adam", "loss": "BCEWithLogits", "scheduler": "ReduceLROnPlateau(min)"}


def _split(n: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random train/validation split of the training source (authors: ``test_size=0.05``)."""
    n_val = int(round(val_fraction * n))
    if val_fraction > 0 and n_val == 0 and n >= 2:
        n_val = 1
    n_val = min(n_val, n - 1)
    perm = np.random.default_rng(stable_seed(seed, "val_split")).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _mean_loss(model: Any, images: np.ndarray, y: np.ndarray, idx: np.ndarray, pre: Mapping[str, Any],
               batch_size: int, device: str) -> float:
    import torch
    import torch.nn.functional as F

    total = 0.0
    with torch.no_grad():
        for start in range(0, len(idx), batch_size):
            b = idx[start:start + batch_size]
            x = _prepare(images[b], pre, False, 0.0, None).to(device)
            logits = model(pixel_values=x).logits
            total += float(F.binary_cross_entropy_with_logits(logits, torch.from_numpy(y[b]).to(device),
                                                              reduction="sum")) / y.shape[1]
    return total / len(idx)


def train_classifier(images: Any, y: Any, *, label_names: Sequence[str], seed: int = 0, epochs: int = 20,
                     batch_size: int = 32, lr: float = 1e-4, weight_decay: float = 1e-5, augment: bool = True,
                     max_rotation: float = 10.0, architecture: str | Mapping[str, Any] = "demo_resnet",
                     pretrained: str | None = None, image_size: int | None = None, val_fraction: float = 0.05,
                     lr_factor: float = 0.1, lr_patience: int = 2, select_best: bool = True,
                     max_seconds: float | None = None, device: str | None = "cpu") -> TrainedClassifier:
    """Train the multi-label classifier of paper §2.4 on one training source (images ``[N, H, W]`` in [0, 1]).

    The recipe is the authors' (see the module docstring): BCE with logits, Adam (``lr``,
    ``weight_decay`` as L2), ``ReduceLROnPlateau(factor=lr_factor, patience=lr_patience)`` on the
    validation loss, flip + rotation augmentation, ``epochs`` passes, and the weights of the epoch
    with the lowest validation loss (``select_best``). ``val_fraction`` of the source (at least one
    image when > 0) is held out for that; with ``val_fraction=0`` the scheduler follows the
    training loss and the last epoch is kept. Defaults are the paper's except the architecture (the
    demo stand-in, see :data:`DEMO_ARCHITECTURE`) and ``batch_size`` (their script: 768).

    ``max_seconds``: a wall-clock budget checked after each epoch (stopping is recorded in
    ``stopped_early``; the result then depends on the machine's speed). Same inputs and ``seed`` →
    identical weights on the same machine (the caller's RNG state is left untouched).
    """
    import torch
    import torch.nn.functional as F

    names = check_label_names(label_names)
    x_all = check_images(images)
    y_all = as_label_matrix(y, len(x_all), names)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    hp = _settings(epochs, batch_size, lr, weight_decay, augment, max_rotation, architecture, pretrained, image_size,
                   val_fraction, lr_factor, lr_patience, select_best, max_seconds)
    device = resolve_device(device)
    train_idx, val_idx = _split(len(x_all), hp["val_fraction"], int(seed))
    start = time.monotonic()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = build_classifier(architecture, names, pretrained=pretrained, image_size=hp["image_size"]).to(device)
        pre = _preprocessing(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=hp["lr_factor"],
                                                               patience=hp["lr_patience"])
        shuffle = torch.Generator().manual_seed(int(seed))
        aug = torch.Generator().manual_seed(stable_seed(int(seed), "augment"))
        history = []
        best_loss, best_epoch, best_state = math.inf, 0, None
        stopped = False
        for epoch in range(1, hp["epochs"] + 1):
            model.train()
            order = train_idx[torch.randperm(len(train_idx), generator=shuffle).numpy()]
            total = 0.0
            for s in range(0, len(order), hp["batch_size"]):
                b = order[s:s + hp["batch_size"]]
                x = _prepare(x_all[b], pre, hp["augment"], hp["max_rotation"], aug).to(device)
                target = torch.from_numpy(y_all[b]).to(device)
                optimizer.zero_grad(set_to_none=True)
                loss = F.binary_cross_entropy_with_logits(model(pixel_values=x).logits, target)
                if not torch.isfinite(loss):
                    raise ParamsError(f"The training loss is {float(loss)} in epoch {epoch} (lr={hp['lr']}): lower lr.")
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(b)
            train_loss = total / len(order)
            model.eval()
            val_loss = (_mean_loss(model, x_all, y_all, val_idx, pre, hp["batch_size"], device) if len(val_idx)
                        else math.nan)
            monitored = val_loss if len(val_idx) else train_loss
            history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss,
                            "lr": optimizer.param_groups[0]["lr"]})
            log.info("epoch %d/%d  train loss %.4f  val loss %.4f", epoch, hp["epochs"], train_loss, val_loss)
            if hp["select_best"] and len(val_idx) and val_loss < best_loss:
                best_loss, best_epoch = val_loss, epoch
                best_state = copy.deepcopy(model.state_dict())
            scheduler.step(monitored)
            if hp["max_seconds"] is not None and time.monotonic() - start >= hp["max_seconds"] and epoch < hp["epochs"]:
                log.warning("Classifier training stopped on its time budget after %d of %d epochs.", epoch,
                            hp["epochs"])
                stopped = True
                break
        if best_state is not None:
            model.load_state_dict(best_state)
        else:
            best_epoch = len(history)
    model.eval()
    return TrainedClassifier(model=model, label_names=names, history=pd.DataFrame(history), best_epoch=best_epoch,
                             n_train=len(train_idx), n_val=len(val_idx), settings={**hp, "seed": int(seed)},
                             elapsed_seconds=time.monotonic() - start, stopped_early=stopped)


def predict_scores(model: Any, images: Any, batch_size: int = 64, device: str | None = None) -> np.ndarray:
    """Sigmoid probabilities ``[N, L]`` (float64) of a trained classifier, ``batch_size`` images at a time.

    ``model``: a :class:`TrainedClassifier` or its ``model``; the preprocessing stored in its config
    (resize, channels, normalisation) is applied, without augmentation.
    """
    import torch

    model = model.model if isinstance(model, TrainedClassifier) else model
    arr = check_images(images)
    batch_size = positive_int("batch_size", batch_size)
    dev = device or str(next(model.parameters()).device)
    pre = _preprocessing(model)
    was_training = model.training
    model.eval()
    out = []
    try:
        with torch.no_grad():
            for s in range(0, len(arr), batch_size):
                x = _prepare(arr[s:s + batch_size], pre, False, 0.0, None).to(dev)
                out.append(torch.sigmoid(model(pixel_values=x).logits.float()).cpu().numpy())
    finally:
        model.train(was_training)
    return np.concatenate(out).astype(np.float64)


def classifier_fingerprint(images: Any, y: Any, label_names: Sequence[str], seed: int = 0, **settings: Any) -> str:
    """The identity of a trained classifier: SHA-256 (16 hex) of the images, labels, names, seed and settings."""
    names = check_label_names(label_names)
    arr = np.ascontiguousarray(check_images(images), dtype=np.float32)
    mat = np.ascontiguousarray(as_label_matrix(y, len(arr), names), dtype=np.float32)
    h = hashlib.sha256()
    h.update(repr((RECIPE_VERSION, arr.shape, names, int(seed))).encode())
    h.update(arr.tobytes())
    h.update(mat.tobytes())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _is_trained(folder: Path, digest: str) -> bool:
    return reusable_model_dir(folder, META_FILE, digest, required=('config.json', 'model.safetensors'), required_globs=(),
                              key='fingerprint')


def _slug(name: str) -> str:
    s = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(name)).strip("-")
    return s[:40] or "source"


def load_or_train_classifier(images: Any, y: Any, *, label_names: Sequence[str], cache_dir: str | Path,
                             name: str = "source", seed: int = 0, **hp: Any) -> TrainedClassifier:
    """:func:`train_classifier`, cached: ``<cache_dir>/<name>-<fingerprint>/`` (``save_pretrained`` + history).

    The fingerprint covers the images, labels, label names, seed, every setting and
    :data:`RECIPE_VERSION`: a changed input trains a new classifier; an unchanged one is loaded
    (``from_cache=True``). The folder is written atomically (:func:`radaudit.paths.atomic_dir`).
    """
    from transformers import ResNetForImageClassification

    check_train_settings(hp)
    device = hp.pop("device", "cpu")
    settings = _settings(**{**TRAIN_DEFAULTS, **hp})
    digest = classifier_fingerprint(images, y, label_names, seed, **settings)
    folder = Path(cache_dir) / f"{_slug(name)}-{digest}"
    names = check_label_names(label_names)
    if _is_trained(folder, digest):
        meta = json.loads((folder / META_FILE).read_text())
        model = ResNetForImageClassification.from_pretrained(folder, local_files_only=True).eval()
        log.info("Loaded the cached utility classifier for %r from %s", name, folder)
        return TrainedClassifier(model=model, label_names=names, history=pd.DataFrame(meta["history"]),
                                 best_epoch=int(meta["best_epoch"]), n_train=int(meta["n_train"]),
                                 n_val=int(meta["n_val"]), settings=meta["settings"],
                                 elapsed_seconds=float(meta["elapsed_seconds"]),
                                 stopped_early=bool(meta["stopped_early"]), from_cache=True, folder=folder)
    if folder.exists() and any(folder.iterdir()):
        import shutil

        shutil.rmtree(folder)  # a stale or incomplete folder under our own content address
    result = train_classifier(images, y, label_names=names, seed=seed, device=device, **hp)
    with atomic_dir(folder) as tmp:
        result.model.save_pretrained(tmp)
        meta = {"fingerprint": digest, "name": name, "label_names": names, "settings": result.settings,
                "history": result.history.to_dict(orient="records"), "best_epoch": result.best_epoch,
                "n_train": result.n_train, "n_val": result.n_val, "stopped_early": result.stopped_early,
                "elapsed_seconds": round(result.elapsed_seconds, 3), "recipe_version": RECIPE_VERSION}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    result.folder = folder
    return result
