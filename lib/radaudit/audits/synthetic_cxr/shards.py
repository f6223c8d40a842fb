"""The shard step of synthetic_cxr (``radaudit run synthetic_cxr --shard i/n``): fidelity feature extraction.

The work items are the **feature batches** of every (image set, encoder) job of the fidelity section
(:func:`~radaudit.audits.synthetic_cxr.features.feature_jobs`: real test images, each generator's fidelity
set, each degrader level; the chest X-ray encoder and Inception), the batches of 32 at fixed positions that
the feature cache stores (:mod:`radaudit.models.feature_cache`), listed job by job in the notebook's order.
Shard ``i`` of ``n`` computes the ``i``-th contiguous part of that list (:func:`radaudit.partition.shard_slice`) into
the feature cache; ``radaudit run synthetic_cxr`` with the same params then reads every batch and computes
FID, KID and PRDC on the full sets (not an average of per-shard FIDs, which is not the FID of the whole).

What every shard does in full, because the features need it: prepare the study, load (on first use train)
the encoders, and make the image sets (``generate_sets``, ``dose_sets``). Those are cached on disk and
written atomically, so shards sharing one cache reuse one another's models and images (a shard that starts
before another has finished trains or generates its own identical copy; the first to finish is kept).
Sharding the image generation itself is not done here.
"""

from __future__ import annotations

from typing import Any

from radaudit.audits.synthetic_cxr.features import FEATURE_BATCH, feature_jobs, fidelity_encoders
from radaudit.audits.synthetic_cxr.study import dose_sets, generate_sets, load_models, prepare
from radaudit.errors import ParamsError
from radaudit.models.cache import ContentCache
from radaudit.models.feature_cache import FEATURE_CACHE, batch_bounds, fill_features
from radaudit.partition import check_shard, shard_slice

__all__ = ["feature_step", "feature_units"]


def feature_units(jobs: list[Any]) -> list[tuple[int, int]]:
    """``[(job index, batch index)]``: every fixed feature batch of every job, in order (the shard's items)."""
    return [(j, k) for j, job in enumerate(jobs) for k in range(len(batch_bounds(job.n_images, FEATURE_BATCH)))]


def feature_step(params: Any, shard: tuple[int, int]) -> dict[str, Any]:
    """Compute shard ``shard = (i, n)`` of the fidelity feature batches into the feature cache; returns counts
    (``items``: batches in the shard, ``computed``/``found``: of them, made here / already cached, ``images``,
    and per job)."""
    from itertools import groupby

    i, n = check_shard(shard)
    if not params.cache:
        raise ParamsError("A shard run writes its features into the cache, and cache is false: set cache=true (the "
                          "default) so that the full run can find them.")
    study = prepare(params)
    models = load_models(params, study)
    sets = generate_sets(params, study)
    dose = dose_sets(params, study) if params.degrader_levels else None
    jobs = feature_jobs(params, study, fidelity_encoders(params, models), sets, dose)
    units = feature_units(jobs)
    mine = units[shard_slice(len(units), i, n)]
    counts: dict[str, Any] = {"unit": f"feature batch ({FEATURE_BATCH} images, one encoder)", "items_total": len(units),
                              "items": len(mine), "computed": 0, "found": 0, "images": 0, "jobs": []}
    with ContentCache(None, name=FEATURE_CACHE) as store:
        for j, group in groupby(mine, key=lambda u: u[0]):
            job = jobs[j]
            _, c = fill_features(job.encoder, job.images, store, batch_size=FEATURE_BATCH, batches=[k for _, k in group])
            counts["computed"] += c["computed"]
            counts["found"] += c["found"]
            counts["images"] += c["images"]
            counts["jobs"].append({"job": job.label, "encoder": job.encoder_name, **c})
        counts["cache"] = store.stats()
    return counts
