"""Shard runs: ``radaudit run <experiment> --shard i/n`` does the i-th of n parts of the expensive step.

A shard run does **not** execute the notebook. It resolves the params exactly as a full run does
(:func:`prepare_params`, :func:`radaudit.run_setup.prepare` as a full run: preset, ``-f`` files, ``-p`` overrides,
preflight), calls the experiment's shard step (:attr:`radaudit.experiments.Experiment.shard_step`;
decoding_erasure: report generation, synthetic_cxr: fidelity feature extraction), which writes its part into the
shared cache (``$RADAUDIT_CACHE``), and records what it did in
``outputs/<experiment>/shards/<time>_<preset>[_p<hash>]_<i>of<n>/manifest.json``. Once every shard has run
(on one machine after another, or on several machines sharing the cache folder), ``radaudit run
<experiment>`` with the same params finds every entry cached and produces the tables: byte for byte those of
an unsharded run (``tests/test_shards.py``).

Shards count from 1, as ``jest --shard=1/3`` and ``playwright test --shard=1/3``. The parts are contiguous
and near-equal (:func:`radaudit.partition.shard_slice`: ``numpy.array_split``'s rule), over the items in the order
the notebook uses them, so they are disjoint, cover everything, and do not depend on the machine or on
which shards already ran. What a part holds is each experiment's choice (studies; feature batches).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from radaudit import manifest
from radaudit.config import BaseParams
from radaudit.errors import ParamsError
from radaudit.experiments import EXPERIMENTS, get_experiment
from radaudit.models.cache import default_cache_dir
from radaudit.partition import check_shard, shard_slice, split_parts
from radaudit.paths import outputs_dir, project_root
from radaudit.run_setup import default_run_name, new_run_dir, prepare

__all__ = ["parse_shard", "prepare_params", "run_shard", "shard_slice", "shardable_experiments", "split_parts"]

_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``: the i-th of n parts, counting from 1. Anything else (``"0/3"``, ``"4/3"``,
    ``"a/b"``, ``"3"``) is a :class:`ParamsError` that gives the form."""
    m = _FORM.match(str(text))
    if m is None:
        raise ParamsError(f"--shard {text!r} must look like I/N, e.g. --shard 1/3: the I-th of N parts, shards "
                          "counted from 1.")
    i, n = int(m[1]), int(m[2])
    if n < 1 or not 1 <= i <= n:
        raise ParamsError(f"--shard {text!r}: I must be between 1 and N (shards are counted from 1: 1/{max(n, 1)} "
                          f"... {max(n, 1)}/{max(n, 1)}).")
    return i, n


def shardable_experiments() -> list[str]:
    """The experiments that name a shard step."""
    return [name for name, exp in EXPERIMENTS.items() if exp.shard_step is not None]


def prepare_params(experiment: str, preset: str, overrides: list[str] | tuple[str, ...] = (),
                   data_root: str | None = None, params_files: list[str] | tuple[str, ...] = ()) -> BaseParams:
    """The params of a run, resolved and checked by :func:`radaudit.run_setup.prepare`, the function a full run
    uses, so that a shard computes what the full run will look up."""
    return prepare(experiment, preset, overrides, data_root, params_files)[1]


def run_shard(experiment: str, preset: str, overrides: list[str] | tuple[str, ...] = (), *,
              shard: tuple[int, int], data_root: str | None = None,
              params_files: list[str] | tuple[str, ...] = (), out: str | os.PathLike | None = None,
              prepared: tuple[Any, BaseParams] | None = None) -> dict[str, Any]:
    """Run part ``shard = (i, n)`` of ``experiment``'s shard step into the cache; returns the shard's manifest.

    ``prepared``: the ``(Experiment, params)`` a driver already resolved and validated (a sweep's Ray tasks pass
    them, as to :func:`radaudit.run.run_experiment`), so a worker runs exactly those params.

    Raises :class:`ParamsError` before anything is written for an experiment without a shard step (naming
    those that have one), bad params, or a bad shard. The manifest (``<out or outputs>/<experiment>/shards/
    <time>_<preset>[_p<hash>]_<i>of<n>/manifest.json``) holds the params, the shard, the step's counts (items in
    this shard, computed vs found in the cache), the duration and the commit; a failed step is recorded
    there as ``status: failed`` and re-raised."""
    i, n = check_shard(shard)
    exp = prepared[0] if prepared is not None else get_experiment(experiment)
    if exp.shard_step is None:
        raise ParamsError(f"{experiment} has no shard step: run it whole (radaudit run {experiment}). Experiments that "
                          f"can be sharded: {', '.join(shardable_experiments()) or 'none'}.")
    params = prepared[1] if prepared is not None else prepare_params(experiment, preset, overrides, data_root,
                                                                     params_files)
    step = exp.shard_function()
    base = (Path(out).resolve() / experiment if out else outputs_dir() / experiment) / "shards"
    folder = new_run_dir(base, f"{default_run_name(preset, overrides, params_files)}_{i}of{n}")
    pdict = params.model_dump(mode="json")
    m = manifest.base_manifest(experiment=experiment, preset=preset, run_name=folder.name, params=pdict,
                               overrides=overrides, project=project_root(), data_root=params.data_root)
    if params_files:
        m["params_files"] = {str(Path(f).resolve()): Path(f).read_text(encoding="utf-8") for f in params_files}
    m |= {"kind": "shard", "shard": {"index": i, "count": n, "text": f"{i}/{n}"}, "step": exp.shard_step,
          "cache": str(default_cache_dir()),
          "merge": f"radaudit run {experiment} --preset {preset} (same -p/-f params) once every shard has run"}
    path = folder / "manifest.json"
    manifest.write(path, m)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    t0 = time.perf_counter()
    try:
        counts = step(params, (i, n))
    except BaseException as err:
        status = "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
        manifest.update(path, status=status, finished=manifest.utcnow(), duration_s=round(time.perf_counter() - t0, 3),
                        error={"ename": type(err).__name__, "evalue": str(err), "message": f"{type(err).__name__}: {err}"})
        raise
    m = manifest.update(path, status="succeeded", finished=manifest.utcnow(),
                        duration_s=round(time.perf_counter() - t0, 3), counts=counts,
                        determinism=manifest.determinism_info())
    m["path"] = str(path)
    return m
