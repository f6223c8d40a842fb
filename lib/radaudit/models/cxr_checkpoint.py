"""The Packhäuser et al. re-identification checkpoint that CheXGenBench uses (paper 004, §2.3), read as the
``SiameseReIDModel`` of :mod:`radaudit.models.cxr_nets`: the authors' torchvision ResNet Siamese ``state_dict``
renamed to transformers' ``ResNetModel`` names, with every tensor used and every parameter found.

Part of :mod:`radaudit.models.cxr_nets`, which re-exports the public names here and loads the converted weights
into its model class (:func:`radaudit.models.cxr_nets.load_packhauser_reid`). Pure name and shape bookkeeping: torch
is needed only to tell tensors from the other values of a checkpoint file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from radaudit.errors import DataFormatError, ParamsError

#: The re-ID checkpoint CheXGenBench uses (hub repo / file name), for error messages.
PACKHAUSER_CHECKPOINT = "raman07/Patient_ReIdentification_MIMIC/ResNet-50_epoch11_data_handling_RPN.pth"

_BN = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


def torchvision_resnet_key_map(depths: Sequence[int] = (3, 4, 6, 3), layer_type: str = "bottleneck",
                               hidden_sizes: Sequence[int] = (256, 512, 1024, 2048),
                               embedding_size: int = 64) -> dict[str, str]:
    """torchvision ResNet ``state_dict`` names → transformers ``ResNetModel`` names (without ``fc``).

    torchvision: ``conv1``/``bn1`` (stem), ``layer{s}.{b}.conv{k}``/``bn{k}`` (k = 1..3 bottleneck,
    1..2 basic), ``layer{s}.{b}.downsample.0``/``.1`` (shortcut conv / batch-norm). transformers:
    ``embedder.embedder.convolution``/``normalization``, ``encoder.stages.{s-1}.layers.{b}.layer.{k-1}``,
    ``...shortcut.convolution``/``normalization``. A block has a shortcut when its input and output
    widths differ or it downsamples (first block of stages 2..4) — the rule of both libraries.
    """
    if layer_type not in ("basic", "bottleneck"):
        raise ParamsError(f"layer_type must be 'basic' or 'bottleneck', got {layer_type!r}.")
    n_conv = 3 if layer_type == "bottleneck" else 2
    out: dict[str, str] = {"conv1.weight": "embedder.embedder.convolution.weight"}
    out.update({f"bn1.{p}": f"embedder.embedder.normalization.{p}" for p in _BN})
    widths = [int(embedding_size), *[int(h) for h in hidden_sizes]]
    for s, depth in enumerate(depths):
        for b in range(int(depth)):
            tv, hf = f"layer{s + 1}.{b}", f"encoder.stages.{s}.layers.{b}"
            for k in range(n_conv):
                out[f"{tv}.conv{k + 1}.weight"] = f"{hf}.layer.{k}.convolution.weight"
                out.update({f"{tv}.bn{k + 1}.{p}": f"{hf}.layer.{k}.normalization.{p}" for p in _BN})
            stride = 1 if s == 0 else 2
            if b == 0 and (widths[s] != widths[s + 1] or stride != 1):
                out[f"{tv}.downsample.0.weight"] = f"{hf}.shortcut.convolution.weight"
                out.update({f"{tv}.downsample.1.{p}": f"{hf}.shortcut.normalization.{p}" for p in _BN})
    return out


_WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "net", "siamese")
_STRIP_PREFIXES = ("module.", "_orig_mod.")


def _unwrap_state_dict(obj: Any, path: str) -> dict[str, Any]:
    import torch

    for _ in range(3):  # {"state_dict": {...}} / {"model": {...}} wrappers from training scripts
        if isinstance(obj, Mapping) and not any(isinstance(v, torch.Tensor) for v in obj.values()):
            inner = next((obj[k] for k in _WRAPPER_KEYS if isinstance(obj.get(k), Mapping)), None)
            if inner is None:
                break
            obj = inner
    if not isinstance(obj, Mapping) or not any(isinstance(v, torch.Tensor) for v in obj.values()):
        raise DataFormatError(f"{path!r} does not hold a state_dict (a mapping of parameter names to tensors); got "
                              f"{type(obj).__name__}. Expected the Siamese network's state_dict, e.g. "
                              f"{PACKHAUSER_CHECKPOINT}.")
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if not isinstance(value, torch.Tensor):
            continue
        k = str(key)
        changed = True
        while changed:
            changed = False
            for prefix in _STRIP_PREFIXES:
                if k.startswith(prefix):
                    k, changed = k[len(prefix):], True
        out[k] = value
    return out


def _infer_resnet(sd: Mapping[str, Any], root: str) -> dict[str, Any]:
    """Backbone settings read off a torchvision ResNet state_dict (below ``root``)."""
    import re

    conv1 = sd.get(f"{root}conv1.weight")
    if conv1 is None or conv1.ndim != 4:
        raise DataFormatError(f"No torchvision ResNet stem ({root}conv1.weight) in the checkpoint.")
    depths, hidden = [], []
    for s in range(1, 10):
        blocks = {int(m.group(1)) for k in sd if (m := re.match(rf"{re.escape(root)}layer{s}\.(\d+)\.", k))}
        if not blocks:
            break
        depths.append(max(blocks) + 1)
        last = max(blocks)
        n3 = f"{root}layer{s}.{last}.conv3.weight"
        hidden.append(int(sd[n3].shape[0]) if n3 in sd else int(sd[f"{root}layer{s}.{last}.conv2.weight"].shape[0]))
    if not depths:
        raise DataFormatError(f"No torchvision ResNet stages ({root}layer1.*) in the checkpoint.")
    layer_type = "bottleneck" if f"{root}layer1.0.conv3.weight" in sd else "basic"
    return {"num_channels": int(conv1.shape[1]), "embedding_size": int(conv1.shape[0]), "hidden_sizes": hidden,
            "depths": depths, "layer_type": layer_type}


def convert_torchvision_siamese(state_dict: Mapping[str, Any], *, path: str = "<state_dict>"
                                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config kwargs, state dict)`` for a ``SiameseReIDModel`` from the authors' torchvision Siamese ``state_dict``.

    The authors' ``SiameseNetwork`` (CheXGenBench ``metrics/privacy_metrics.py``) keeps a torchvision
    ResNet under ``model.`` (its ``fc`` replaced by Linear(2048, 128)) and the head ``fc_end``. Accepted
    (the released checkpoint's exact wrapping is not documented): ``module.`` / ``_orig_mod.`` prefixes
    (DataParallel, torch.compile) anywhere they lead, a ``{"state_dict": ...}`` / ``{"model_state_dict":
    ...}`` wrapper, and a backbone without the ``model.`` prefix. Every tensor must be used and every
    parameter found, with matching shapes; only ``num_batches_tracked`` may be missing (it does not
    affect outputs). The architecture (ResNet-18/34/50..., 1 or 3 input channels, ``n_features``) is
    read off the shapes, so the ResNet-50 of the paper needs no settings.
    """
    sd = _unwrap_state_dict(state_dict, path)
    root = "model." if any(k.startswith("model.conv1.") for k in sd) else ""
    arch = _infer_resnet(sd, root)
    if f"{root}fc.weight" not in sd or "fc_end.weight" not in sd:
        raise DataFormatError(f"{path!r}: no Siamese head ({root}fc.weight and fc_end.weight): expected the "
                              "SiameseNetwork state_dict of Packhäuser et al. as used by CheXGenBench "
                              f"({PACKHAUSER_CHECKPOINT}).")
    n_features = int(sd[f"{root}fc.weight"].shape[0])
    mapping = {f"{root}{k}": f"backbone.{v}" for k, v in
               torchvision_resnet_key_map(arch["depths"], arch["layer_type"], arch["hidden_sizes"],
                                          arch["embedding_size"]).items()}
    mapping.update({f"{root}fc.weight": "fc.weight", f"{root}fc.bias": "fc.bias",
                    "fc_end.weight": "fc_end.weight", "fc_end.bias": "fc_end.bias"})
    unused = sorted(set(sd) - set(mapping))
    if unused:
        raise DataFormatError(f"{path!r}: {len(unused)} tensor(s) are not part of a torchvision-ResNet Siamese network "
                              f"(e.g. {unused[:5]}); is it the re-ID checkpoint ({PACKHAUSER_CHECKPOINT})?")
    missing = sorted(k for k in mapping if k not in sd and not k.endswith("num_batches_tracked"))
    if missing:
        raise DataFormatError(f"{path!r}: {len(missing)} parameter(s) of the Siamese network are missing "
                              f"(e.g. {missing[:5]}).")
    converted = {mapping[k]: v for k, v in sd.items()}
    config = {**arch, "n_features": n_features, "image_size": 224, "resize": "squash", "resample": "bilinear"}
    return config, converted
