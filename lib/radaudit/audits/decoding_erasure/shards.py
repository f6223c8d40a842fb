"""The shard step of decoding_erasure (``radaudit run decoding_erasure --shard i/n``): report generation.

The work items are the **studies** the report writer writes for, in the order of the notebook's full run
(the demo's held-out test prompts interleaved F, M, F, ...; the paper path's :func:`~radaudit.audits.
decoding_erasure.data.image_studies`). Shard ``i`` of ``n`` takes the ``i``-th contiguous part of them
(:func:`radaudit.partition.shard_slice`) and generates, into the generation cache, every report the notebook will
look up for those studies: under each of ``strategies`` with the training-skew model (section 1), and under
each of ``skew_strategies`` with the model of each skew the skew study runs (section 8,
:func:`~radaudit.audits.decoding_erasure.study.skew_study_plan`). It calls the notebook's own
:func:`~radaudit.audits.decoding_erasure.study.study_generations` with ``shard=(i, n)``: the same model,
prompts, per-study seeds (``stable_seed(seed, "report", study_id)``), strategies and ``max_new_tokens``, so the
same cache keys, and a report does not depend on which shard (or batch) wrote it.

The demo models (one per skew) are trained on first use under the cache, into a temporary folder renamed
into place when complete (:func:`radaudit.paths.atomic_dir`): shards running at once on one cache may each
train a copy, the first to finish is kept and every shard then generates with that one (its content
fingerprint is part of the generation key), and none reads a half-written model.
"""

from __future__ import annotations

from typing import Any

from radaudit.audits.decoding_erasure.study import skew_study_plan, study_generations
from radaudit.models.cache import ContentCache
from radaudit.partition import check_shard, shard_slice

__all__ = ["generation_jobs", "generation_step"]


def generation_jobs(params: Any) -> list[tuple[Any, list[str]]]:
    """``[(skew, strategies)]``: the generations the notebook's full run asks for, in its order (``"train"`` is
    the run's own model; then each skew of the skew study with ``skew_strategies``)."""
    jobs: list[tuple[Any, list[str]]] = [("train", list(params.strategies))]
    skews, _note = skew_study_plan(params)
    jobs += [(skew, list(params.skew_strategies)) for skew in skews]
    return jobs


def generation_step(params: Any, shard: tuple[int, int]) -> dict[str, Any]:
    """Generate shard ``shard = (i, n)`` of the studies' reports into the generation cache; returns counts
    (``items``: studies in the shard, ``computed``/``found``: reports generated here / already cached, per job)."""
    i, n = check_shard(shard)
    part = shard_slice(int(params.n_reports), i, n)
    counts: dict[str, Any] = {"unit": "study", "items_total": int(params.n_reports), "items": part.stop - part.start,
                              "item_range": [part.start, part.stop], "computed": 0, "found": 0, "jobs": []}
    if part.stop == part.start:  # more shards than studies: nothing to do (no model is loaded)
        return counts
    with ContentCache(None) as store:
        for skew, strategies in generation_jobs(params):
            before = (store.hits, store.writes)
            gens = study_generations(params, skew=skew, strategies=strategies, cache=store, shard=(i, n))
            hits, writes = store.hits - before[0], store.writes - before[1]
            counts["computed"] += writes
            counts["found"] += hits
            counts["jobs"].append({"skew": skew if skew == "train" else float(skew), "strategies": strategies,
                                   "studies": int(gens["study_id"].nunique()), "reports": len(gens),
                                   "computed": writes, "found": hits, "model": gens.attrs.get("model")})
        counts["cache"] = store.stats()
    return counts
