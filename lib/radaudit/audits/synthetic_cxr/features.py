"""The fidelity features of synthetic_cxr: which images go through which encoder, cached by batch.

The notebook's fidelity section (Table 1, Table 2, the degrader's dose-response) embeds the real test images,
each generator's fidelity set and each degrader level's set with every fidelity encoder (the chest X-ray
encoder, and Inception when ``use_inception``). :func:`feature_jobs` lists those (encoder, image set) pairs
in the notebook's order, and :func:`image_features` embeds one set through the feature cache
(:func:`radaudit.models.feature_cache.cached_features`: bit-exact, fixed batches of 32, as
``extract_features``). A shard run (:mod:`radaudit.audits.synthetic_cxr.shards`) computes part of the
batches of every job; the full run then reads them and computes FID/KID/PRDC on the **full** sets (never a
mean of per-shard FIDs, which is not the FID of the whole set).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from radaudit.models.feature_cache import cached_features

__all__ = ["FEATURE_BATCH", "FeatureJob", "feature_jobs", "fidelity_encoders", "fidelity_features", "image_features"]

#: Images per encoder batch (``extract_features``'s default): the unit of the feature cache and of a shard.
FEATURE_BATCH = 32


def image_features(encoder: Any, images: Any, *, cache: Any = True) -> np.ndarray:
    """float32 ``[n, dim]`` features of ``images`` (``extract_features(encoder, list(images))``, bit for bit),
    through the feature cache when ``cache`` (the run's ``cache`` param)."""
    return cached_features(encoder, list(images), cache=cache if cache else None, batch_size=FEATURE_BATCH)


def fidelity_encoders(params: Any, models: Mapping[str, Any]) -> dict[str, Any]:
    """``{"cxr": ..., "inception": ...}``: the encoders fidelity is measured with (Inception only when
    ``params.use_inception``)."""
    return {"cxr": models["cxr"]} | ({"inception": models["inception"]} if params.use_inception else {})


def fidelity_features(encoders: Mapping[str, Any], study: Any, sets: Mapping[str, Mapping[str, Any]], *,
                      cache: Any = True) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """``(real, synthetic)``: ``{encoder: features of the real test images}`` and ``{generator: {encoder:
    features of its fidelity set}}``, the inputs of Tables 1 and 2."""
    real = {name: image_features(enc, study.test, cache=cache) for name, enc in encoders.items()}
    synth = {g: {name: image_features(enc, s["fidelity"][0], cache=cache) for name, enc in encoders.items()}
             for g, s in sets.items()}
    return real, synth


@dataclass(frozen=True)
class FeatureJob:
    """One image set through one encoder: ``label`` says which (``real``, ``fidelity:<generator>``,
    ``dose:<level>``)."""

    label: str
    encoder_name: str
    encoder: Any
    images: Any

    @property
    def n_images(self) -> int:
        return len(self.images)


def feature_jobs(params: Any, study: Any, encoders: Mapping[str, Any], sets: Mapping[str, Mapping[str, Any]],
                 dose: list[tuple[str, dict[str, Any], np.ndarray]] | None = None) -> list[FeatureJob]:
    """Every (image set, encoder) whose features the notebook's full run extracts, in its order: the real test
    images, each generator's fidelity set, then each degrader level (``dose``: :func:`~radaudit.audits.
    synthetic_cxr.study.dose_sets`, when ``params.degrader_levels``)."""
    jobs = [FeatureJob("real", n, e, study.test) for n, e in encoders.items()]
    jobs += [FeatureJob(f"fidelity:{g}", n, e, s["fidelity"][0]) for g, s in sets.items() for n, e in encoders.items()]
    jobs += [FeatureJob(f"dose:{label}", n, e, imgs) for label, _lvl, imgs in (dose or []) for n, e in encoders.items()]
    return jobs
