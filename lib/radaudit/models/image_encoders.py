"""The image-encoder registry: one name or model spec -> an :class:`~radaudit.models.encoders.ImageEncoder`.

Built-in names (:data:`IMAGE_ENCODERS`): ``"inception-fid"`` (:class:`~radaudit.models.encoders.InceptionFIDEncoder`,
from PyPI) and ``"rad-dino"`` (``microsoft/rad-dino`` through :class:`~radaudit.models.encoders.HFVisionEncoder`).
A folder holding a chest X-ray encoder trained by radaudit gives a
:class:`~radaudit.models.cxr_nets.CXREncoder`. This module sits above both :mod:`radaudit.models.encoders`
and :mod:`radaudit.models.cxr_nets` (which builds on the former), so neither imports the other's way back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

from radaudit.errors import ParamsError
from radaudit.models.cxr_nets import cxr_encoder, is_cxr_encoder_folder
from radaudit.models.encoders import RAD_DINO, HFVisionEncoder, ImageEncoder, InceptionFIDEncoder
from radaudit.models.resolver import ModelUnavailableError
from radaudit.registry import Registry

__all__ = ["IMAGE_ENCODERS", "build_image_encoder"]


#: name → factory of an :class:`ImageEncoder` (keyword arguments go to the factory).
IMAGE_ENCODERS: Registry[Callable[..., ImageEncoder]] = Registry("image encoder")
IMAGE_ENCODERS.register(InceptionFIDEncoder, name="inception-fid")
IMAGE_ENCODERS.register(partial(HFVisionEncoder, RAD_DINO, name="rad-dino"), name="rad-dino")


def build_image_encoder(name_or_spec: str | os.PathLike[str] = "inception-fid", **kwargs: Any) -> ImageEncoder:
    """An image encoder by registry name (:data:`IMAGE_ENCODERS`) or model spec.

    A folder holding a radaudit chest X-ray encoder gives a :class:`~radaudit.models.cxr_nets.CXREncoder`;
    a spec ending in ``.pt``/``.pth`` (a TorchScript file) gives an :class:`InceptionFIDEncoder`; any other
    spec an :class:`HFVisionEncoder`. ``kwargs`` go to the constructor (``device``, ``dtype``, ``batch_size``...).
    """
    key = os.fspath(name_or_spec) if isinstance(name_or_spec, os.PathLike) else name_or_spec
    if not isinstance(key, str) or not key.strip():
        raise ParamsError(f"An image encoder is a registry name ({', '.join(IMAGE_ENCODERS)}) or a model spec; "
                          f"got {name_or_spec!r}.")
    key = key.strip()
    try:
        if key in IMAGE_ENCODERS:
            return IMAGE_ENCODERS.lookup(key)(**kwargs)
        if is_cxr_encoder_folder(key):  # a chest X-ray encoder trained by radaudit (synthetic_cxr's demo)
            return cxr_encoder(key, **kwargs)
        if key.lower().endswith((".pt", ".pth")):
            return InceptionFIDEncoder(key, **kwargs)
        return HFVisionEncoder(key, **kwargs)
    except ModelUnavailableError as err:
        raise ModelUnavailableError(f"{err} Image encoders: the registry names {', '.join(map(repr, IMAGE_ENCODERS))} "
                                    "or a model spec; offline, 'inception-fid' runs from PyPI, and any transformers "
                                    "vision backbone saved with save_pretrained (model + image processor) loads from "
                                    "its folder.") from err
