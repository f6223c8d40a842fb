"""What every kind of run does before it starts: resolve and check its params, name and create its folder.

One place for the three so that a notebook run (:mod:`radaudit.run`), a shard run (:mod:`radaudit.shards`) and
a sweep (:mod:`radaudit.sweep`) resolve the same params the same way (a shard must compute exactly what the
full run will look up) and name their folders alike. It sits one import layer below them (they are siblings
and may not import one another).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path

from radaudit.config import BaseParams, resolve_params
from radaudit.experiments import Experiment, get_experiment
from radaudit.paths import params_dir

__all__ = ["default_run_name", "new_run_dir", "prepare"]


def prepare(experiment: str, preset: str, overrides: list[str] | tuple[str, ...] = (),
            data_root: str | None = None, params_files: list[str] | tuple[str, ...] = ()) -> tuple[Experiment, BaseParams]:
    """Resolve and validate the params (preset, ``-f`` files, ``-p`` overrides, ``data_root``) and run the
    experiment's preflight checks. Nothing is written."""
    exp = get_experiment(experiment)
    params = resolve_params(exp.params_model(), params_dir(), experiment, preset, overrides,
                            extra={"data_root": data_root}, params_files=params_files)
    params.preflight()
    return exp, params


def default_run_name(preset: str, overrides: list[str] | tuple[str, ...] = (),
                     params_files: list[str] | tuple[str, ...] = ()) -> str:
    """``<time>_<preset>``, plus ``_p<hash>`` of the ``-p`` overrides and ``-f`` files' contents when given."""
    name = f"{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}_{preset}"
    if overrides or params_files:
        parts = sorted(overrides) + [Path(f).read_text(encoding="utf-8") for f in params_files]
        name += "_p" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:6]
    return name


def new_run_dir(base: Path, name: str) -> Path:
    """A fresh folder ``base/name`` (``name-2``, ``name-3``, ... when taken: a run never overwrites another)."""
    base.mkdir(parents=True, exist_ok=True)
    for i in range(1, 10_000):
        d = base / (name if i == 1 else f"{name}-{i}")
        try:
            d.mkdir(exist_ok=False)
            return d
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a fresh folder under {base}")
