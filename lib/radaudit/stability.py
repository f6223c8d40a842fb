"""Verdicts over training seeds: the stability benchmark's results, and a run's share of them.

A verdict on a trained stand-in is read from one training draw; another seed can give another
model and another verdict. ``benchmarks/verdict_stability.py`` runs an experiment's preset once per
training seed (``radaudit sweep --grid seed=0,1,2``) and writes
``benchmarks/results/verdict_stability.json``::

    {"seeds": [0, 1, 2], "preset": "demo", "commit": "...", "machine": "...",
     "experiments": {"modality_shift": {"recipe": "3f2a...", "findings": {
         "text_shift_nfr": [{"seed": 0, "value": 0.21, "ci": [0.14, 0.27], "verdict": "shown"}, ...]}}}}

A run's ``findings.json`` carries, for each of its findings, the benchmark's
``{"seeds": [...], "verdicts": [...]}`` (the ``stability`` field of ``../shared/FINDINGS.md``) when its
**recipe** is the benchmark's: :func:`recipe_id` hashes what decides the stand-ins and how their
findings are read — the preset's validated parameters without ``seed`` and machine-local keys, the
experiment's stand-in recipes (the training configs and recipe versions named in its registry entry,
:attr:`radaudit.experiments.Experiment.stand_ins`) and the source of its ``findings`` module. Any change
to these makes the stored verdicts another recipe's, and they are not attached (rerun the benchmark).
:func:`radaudit.findings.settle` then publishes a ``shown`` that does not hold on every seed as
``partly (k/n seeds)``.

Set ``RADAUDIT_STABILITY=off`` to write findings without it (the benchmark's own runs do, so a seed's
verdict is its own), or to a file path to read another stability file.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from radaudit.experiments import get_experiment
from radaudit.findings import VERDICTS
from radaudit.paths import project_root

__all__ = ["LOCAL_KEYS", "STABILITY_FILE", "StabilityError", "recipe_id", "read_stability", "stability_for", "unsettled",
           "stability_path"]

STABILITY_FILE = Path("benchmarks") / "results" / "verdict_stability.json"
#: Parameters that do not decide a stand-in or its verdicts: the training seed (what the benchmark varies),
#: where things are on this machine, and how figures are saved (their resolution, whether a PDF goes beside them).
LOCAL_KEYS: frozenset[str] = frozenset({"seed", "data_root", "cache_dir", "run_dir", "device", "progress",
                                        "figure_dpi", "figure_pdf"})


class StabilityError(ValueError):
    """A stability file that breaks its format (the message says which rule)."""


def _canonical(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "model_dump"):
        return _canonical(x.model_dump(mode="json"))
    return str(x)


def _resolve(ref: str) -> Any:
    module, attr = ref.split(":")
    return getattr(importlib.import_module(module), attr)


def recipe_id(experiment: str, params: Any) -> str:
    """The recipe of a run (16 hex): its validated ``params`` (a params model or dict) without
    :data:`LOCAL_KEYS`, the experiment's stand-in recipes and its findings module's source."""
    exp = get_experiment(experiment)
    p = params.model_dump(mode="json") if hasattr(params, "model_dump") else dict(params)
    p = {k: v for k, v in p.items() if k not in LOCAL_KEYS}
    stand_ins = {ref: _resolve(ref) for ref in exp.stand_ins}
    findings_module = f"radaudit.audits.{experiment}.findings"
    try:
        source = inspect.getsource(importlib.import_module(findings_module))
    except ModuleNotFoundError:
        source = ""
    blob = json.dumps({"experiment": experiment, "params": _canonical(p), "stand_ins": _canonical(stand_ins),
                       "findings_source": hashlib.sha256(source.encode()).hexdigest()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def unsettled(doc: Mapping[str, Any], experiment: str, recipe: str, preset: str, findings: Sequence[Any]) -> list[str]:
    """Findings of a run (:class:`~radaudit.findings.Finding` objects or ``findings.json``'s dicts) that the
    stability benchmark ``doc`` holds for this
    experiment, recipe and preset on every seed, but that carry no ``stability``: the run was made before the
    benchmark's file knew its recipe, so its verdicts were never settled over seeds (a ``shown`` there may be one
    draw). Empty when the benchmark has nothing for the run (another recipe or preset: nothing to settle by)."""
    if doc.get("preset") != preset:
        return []
    rows = [(f["id"], f.get("stability")) if isinstance(f, Mapping) else (f.id, f.stability) for f in findings]
    return [str(fid) for fid, st in rows if st is None and stability_for(doc, experiment, recipe, str(fid)) is not None]


def stability_path() -> Path | None:
    """The benchmark's file for this project; ``RADAUDIT_STABILITY`` may name another file, or switch it
    off (``off``: ``None``)."""
    env = os.environ.get("RADAUDIT_STABILITY", "").strip()
    if env.lower() in {"off", "0", "no", "false"}:
        return None
    return Path(env) if env else project_root() / STABILITY_FILE


def read_stability(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a stability file (``{}`` when it does not exist)."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise StabilityError(f"{path} is not valid JSON: {err}; rerun benchmarks/verdict_stability.py") from None
    if not isinstance(doc.get("seeds"), list) or not isinstance(doc.get("experiments"), dict):
        raise StabilityError(f"{path} needs top-level 'seeds' (a list) and 'experiments' (a mapping)")
    for name, block in doc["experiments"].items():
        for fid, rows in (block.get("findings") or {}).items():
            bad = [r for r in rows if r.get("verdict") not in VERDICTS]
            if bad:
                raise StabilityError(f"{path}: {name}.{fid} has verdicts outside {list(VERDICTS)}: {bad}")
    return doc


def stability_for(doc: Mapping[str, Any], experiment: str, recipe: str, finding_id: str) -> dict[str, Any] | None:
    """``{"seeds": [...], "verdicts": [...]}`` for one finding when ``doc`` holds this experiment's
    ``recipe`` and that finding on every seed of the benchmark; else ``None``."""
    block = (doc.get("experiments") or {}).get(experiment)
    if not block or block.get("recipe") != recipe:
        return None
    rows = (block.get("findings") or {}).get(finding_id)
    seeds = list(doc.get("seeds") or [])
    if not rows or sorted(int(r["seed"]) for r in rows) != sorted(int(s) for s in seeds):
        return None
    rows = sorted(rows, key=lambda r: int(r["seed"]))
    return {"seeds": [int(r["seed"]) for r in rows], "verdicts": [r["verdict"] for r in rows]}
