"""Sweeps: one run of an experiment per parameter set, as Ray tasks (locally or on a cluster) or one after another.

    radaudit sweep data_overview --preset smoke --grid seed=1,2 [--grid key=v1,v2 ...]
                   [--engine auto|ray|serial] [--address ray://head:10001] [--gpus-per-run 1] [--plot FINDING_ID]

Every combination of the grid is resolved and validated (params, preflight) before the first run starts, so a
typo costs nothing. Then each combination is one :func:`radaudit.run.run_experiment` call (the experiment's
notebook, executed by papermill) into ``outputs/<experiment>/sweeps/<YYYYmmdd-HHMMSS>_<preset>/``::

    <NN>_<key>=<value>...   one member run folder each, as ``radaudit run`` writes it (``latest`` does not move)
    summary.csv             one row per member: run, the grid values, status, duration_s, folder, error, and per
                            finding of the members' findings.json its value, ``<id>.ci_low``, ``<id>.ci_high``,
                            ``<id>.verdict``
    index.md                the same as a readable table, with a link to each member's report
    summary.png (+ .pdf)    one finding against the first grid key, 95% CI error bars, one line per combination of
                            the other keys (:func:`summary_figure`)
    manifest.json           engine, Ray version and address, resources per run, grid, preset, overrides, commit,
                            started/finished and every member's status

Engines. ``ray`` runs each member as a Ray task asking for ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs, so Ray
places as many runs at once as the machine (or cluster) holds and gives each its own GPU. Without ``address`` it
starts a local Ray with this machine's CPUs (and GPUs), and shuts it down afterwards; ``"auto"`` or
``"ray://head:10001"`` joins a running cluster. A Ray already initialised in this process (a notebook, the tests) is
used as it is and left running. ``serial`` runs the members one after another in this process; its outputs are the
same files with the same columns, so the two can be compared. ``auto`` is ``ray`` when Ray is installed.

On a cluster every node must see the project, the data root and the outputs folder at the same paths (a shared
filesystem): each task writes its member folder where the driver names it. The summary itself is built from what
the tasks return (status, duration, error, findings), not by reading the folders back.

A member that fails is recorded (status ``failed`` and the error) and the sweep goes on; the CLI exits 1 if any
member failed. A member whose Ray worker dies is recorded failed too, never re-run silently into a second folder.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from radaudit import manifest, report
from radaudit.config import BaseParams, parse_overrides
from radaudit.errors import ParamsError, RadauditError, RunFailedError
from radaudit.experiments import Experiment, get_experiment
from radaudit.findings import FindingsError, read_findings
from radaudit.paths import outputs_dir, project_root, safe_name
from radaudit.run import run_experiment
from radaudit.run_setup import new_run_dir, prepare
from radaudit.shards import run_shard, shardable_experiments

log = logging.getLogger("radaudit.sweep")

__all__ = ["ENGINES", "FORWARDED_ENV", "SweepResult", "parse_grid", "run_member", "summary_figure", "summary_frame",
           "sweep", "wants_gpu"]

ENGINES = ("auto", "ray", "serial")
RAY_MISSING = ("Ray is not installed in this environment: `pip install 'radaudit[ray]'` (or `--engine serial` to run "
               "the sweep one run after another without it).")

#: Environment variables a Ray worker gets from the driver (``runtime_env``), so a member finds the same data,
#: model cache, kernel and hashing as a run started here. ``RADAUDIT_PROJECT`` is always set to this project.
FORWARDED_ENV = ("RADAUDIT_DATA", "RADAUDIT_CACHE", "RADAUDIT_KERNEL", "RADAUDIT_DETERMINISTIC", "HF_HOME",
                 "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

#: Presets that run the paper's models: on these a sweep asks for a GPU per run when the cluster has GPUs.
GPU_PRESETS = ("paper", "full")

_MODEL_KEY = re.compile(r"^(?:.*_)?models?$")  # model, models, llm_model, report_model, skew_models, ...
_PLOT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


# ----------------------------------------------------------------------------------------------- the grid

def parse_grid(items: list[str] | tuple[str, ...]) -> dict[str, list[str]]:
    """``["seed=0,1", "n_bootstrap=200,500"]`` -> ``{"seed": ["0", "1"], ...}`` (values as text; a value
    written ``[a,b]`` is one list value)."""
    grid: dict[str, list[str]] = {}
    for item in items:
        if "=" not in item:
            raise ParamsError(f"--grid {item!r} must look like key=v1,v2,...")
        key, raw = item.split("=", 1)
        values = [v.strip() for v in raw.split(",")] if not raw.strip().startswith("[") else [raw.strip()]
        if not key.strip() or not values or any(v == "" for v in values):
            raise ParamsError(f"--grid {item!r} needs a key and at least one non-empty value.")
        if key.strip() in grid:
            raise ParamsError(f"--grid names {key!r} twice.")
        grid[key.strip()] = values
    if not grid:
        raise ParamsError("A sweep needs at least one --grid key=v1,v2,...")
    return grid


def member_label(index: int, combo: dict[str, str]) -> str:
    """A member's folder name: ``<NN>_<key>=<value>_...`` (file-safe)."""
    return f"{index:02d}_" + "_".join(f"{safe_name(k)}={safe_name(v)}" for k, v in combo.items())


def wants_gpu(params: dict[str, Any], preset: str) -> bool:
    """Whether a member should ask Ray for a GPU (when the cluster has any): its resolved params name a CUDA
    device anywhere (a string value ``cuda`` or ``cuda:N``), or the preset is a paper-scale one
    (:data:`GPU_PRESETS`) and the params name a model (a non-empty key ``model``, ``models``, ``*_model`` or
    ``*_models``). Demo and smoke presets run their small models on CPU."""
    def walk(node: Any, key: str = "") -> tuple[bool, bool]:
        if isinstance(node, dict):
            found = [walk(v, str(k)) for k, v in node.items()]
            return any(c for c, _ in found), any(m for _, m in found)
        if isinstance(node, (list, tuple)):
            found = [walk(v, key) for v in node]
            named = bool(_MODEL_KEY.match(key)) and bool(node)
            return any(c for c, _ in found), named or any(m for _, m in found)
        cuda = isinstance(node, str) and (node == "cuda" or node.startswith("cuda:"))
        return cuda, bool(_MODEL_KEY.match(key)) and node not in (None, "", False)

    cuda, model = walk(params)
    return cuda or (preset in GPU_PRESETS and model)


# ----------------------------------------------------------------------------------------------- one member

def _failure(label: str, params: dict[str, str], message: str, folder: str = "",
             duration: float | None = None) -> dict[str, Any]:
    return {"run": label, "params": params, "status": "failed", "duration_s": duration, "folder": folder,
            "error": message.strip().splitlines()[0] if message.strip() else "failed", "findings": []}


def run_member(experiment: str, preset: str, overrides: list[str], label: str, params: dict[str, str], *,
               sweep_dir: str, out_root: str, data_root: str | None = None, params_files: Sequence[str] = (),
               prepared: tuple[Experiment, BaseParams] | None = None, progress: bool = False) -> dict[str, Any]:
    """Run one member of a sweep and return a small, JSON-able record of it (the body of a Ray task; the serial
    engine calls it directly). Never raises for a failed run: the record says ``status: failed`` and the first line
    of the error, so one bad parameter set does not stop the others. ``prepared`` carries the params the driver
    validated, so a worker runs exactly them (and needs no registry entry of its own)."""
    sweep_path = Path(sweep_dir)
    try:
        res = run_experiment(experiment, preset, list(overrides), data_root=data_root, out=out_root, name=label,
                             progress=progress, prepared=prepared, run_parent=sweep_path,
                             params_files=list(params_files))
        run_dir, status, error, duration = res.run_dir, res.status, "", res.manifest.get("duration_s")
    except RunFailedError as err:
        run_dir = sweep_path / label
        mpath = run_dir / "manifest.json"
        m = manifest.read(mpath) if mpath.exists() else {}
        status, error, duration = "failed", str(err).splitlines()[0], m.get("duration_s")
    except Exception as err:  # noqa: BLE001  (a member must not take the sweep down: recorded, then the next)
        return _failure(label, params, f"{type(err).__name__}: {err}",
                        folder=label if (sweep_path / label).is_dir() else "")
    findings: list[dict[str, Any]] = []
    if (run_dir / "findings.json").exists():
        try:
            findings = [f.to_dict() for f in read_findings(run_dir)["findings"]]
        except FindingsError as err:
            error = error or f"findings.json unreadable: {err}"
    return {"run": label, "params": params, "status": status, "duration_s": duration,
            "folder": run_dir.name if run_dir.is_dir() else "", "error": error, "findings": findings}


def run_shard_task(experiment: str, preset: str, overrides: list[str], label: str, shard: tuple[int, int], *,
                   out_root: str, data_root: str | None = None, params_files: Sequence[str] = (),
                   prepared: tuple[Experiment, BaseParams] | None = None) -> dict[str, Any]:
    """One shard of one member (``--shards N``; the body of a Ray task): :func:`radaudit.shards.run_shard` into the
    shared cache. Never raises: a failed shard is a record (``status: failed`` and the error's first line), and the
    member's merge run still follows, computing what the shard left undone, so nothing already cached is lost."""
    i, n = shard
    try:
        m = run_shard(experiment, preset, list(overrides), shard=(i, n), data_root=data_root,
                      params_files=list(params_files), out=out_root, prepared=prepared)
        return {"run": label, "shard": f"{i}/{n}", "status": "succeeded", "error": "",
                "counts": m.get("counts", {}), "duration_s": m.get("duration_s")}
    except Exception as err:  # noqa: BLE001  (recorded; the merge run computes the rest)
        text = f"{type(err).__name__}: {err}".strip().splitlines()[0]
        return {"run": label, "shard": f"{i}/{n}", "status": "failed", "error": text, "counts": {}, "duration_s": None}


# ----------------------------------------------------------------------------------------------- the summary

def summary_frame(grid: dict[str, list[str]], members: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per member: ``run``, the grid values (as given), ``status``, ``duration_s``, ``folder``, ``error``,
    then for every finding id (in order of first appearance) its ``value`` as column ``<id>``, its 95% interval as
    ``<id>.ci_low`` / ``<id>.ci_high`` and ``<id>.verdict``. A member without a finding has empty cells there."""
    ids: list[str] = []
    for mem in members:
        for f in mem.get("findings") or []:
            if f["id"] not in ids:
                ids.append(f["id"])
    rows = []
    for mem in members:
        row: dict[str, Any] = {"run": mem["run"], **{k: mem["params"].get(k) for k in grid},
                               "status": mem["status"], "duration_s": mem.get("duration_s"),
                               "folder": mem.get("folder", ""), "error": mem.get("error") or ""}
        by_id = {f["id"]: f for f in mem.get("findings") or []}
        for fid in ids:
            f = by_id.get(fid)
            ci = (f or {}).get("ci") or (None, None)
            row[fid] = float("nan") if f is None or f.get("value") is None else float(f["value"])
            row[f"{fid}.ci_low"] = float("nan") if ci[0] is None else float(ci[0])
            row[f"{fid}.ci_high"] = float("nan") if ci[1] is None else float(ci[1])
            row[f"{fid}.verdict"] = "" if f is None else f.get("verdict", "")
        rows.append(row)
    columns = ["run", *grid, "status", "duration_s", "folder", "error",
               *[c for fid in ids for c in (fid, f"{fid}.ci_low", f"{fid}.ci_high", f"{fid}.verdict")]]
    return pd.DataFrame(rows, columns=columns)


def finding_labels(members: Sequence[dict[str, Any]]) -> dict[str, str]:
    """``{finding id: its label}`` from the members' findings (the first label seen)."""
    labels: dict[str, str] = {}
    for mem in members:
        for f in mem.get("findings") or []:
            labels.setdefault(f["id"], f.get("label") or f["id"])
    return labels


def default_plot_column(summary: pd.DataFrame, finding_ids: Sequence[str]) -> str:
    """The first finding with a numeric value in some member; ``duration_s`` when no finding has one (an experiment
    that writes no findings still gets a plot: seconds per run against the swept parameter)."""
    for fid in finding_ids:
        if pd.to_numeric(summary[fid], errors="coerce").notna().any():
            return fid
    return "duration_s"


def summary_figure(summary: pd.DataFrame, grid: dict[str, list[str]], column: str, *, label: str | None = None):
    """A figure of ``column`` (a finding id or ``duration_s``) against the first grid key, with 95% CI error bars
    where the summary has ``<column>.ci_low`` / ``.ci_high``, one line per combination of the other grid keys.
    A numeric grid key is drawn on a numeric axis (log-scaled when it spans 100x or more), any other in grid order.
    A seed (a key named ``seed`` or ``*_seed``) is a label, not a quantity: its points are not joined by a line, and
    a dashed line marks their mean, so the spread across seeds reads at a glance.
    Members without a value (failed runs) are left out. Returns a matplotlib ``Figure`` (no pyplot state)."""
    from matplotlib.figure import Figure  # lazy: matplotlib (heavy) only when a sweep draws its summary

    if column not in summary.columns:
        raise RadauditError(f"The sweep summary has no column {column!r}.")
    keys = list(grid)
    x_key, others = keys[0], keys[1:]
    is_seed = x_key == "seed" or x_key.endswith("_seed")
    raw_x = summary[x_key].astype(str)
    numeric = pd.to_numeric(raw_x, errors="coerce")
    is_numeric = bool(numeric.notna().all())
    x = numeric if is_numeric else raw_x.map({str(v): i for i, v in enumerate(grid[x_key])}).astype(float)
    y = pd.to_numeric(summary[column], errors="coerce")
    lo_col, hi_col = f"{column}.ci_low", f"{column}.ci_high"
    lo = pd.to_numeric(summary[lo_col], errors="coerce") if lo_col in summary else pd.Series(float("nan"), summary.index)
    hi = pd.to_numeric(summary[hi_col], errors="coerce") if hi_col in summary else pd.Series(float("nan"), summary.index)

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    lines = pd.Series([", ".join(f"{k}={summary.at[j, k]}" for k in others) for j in summary.index], summary.index)
    any_ci = False
    for i, legend in enumerate(pd.unique(lines)):
        idx = sorted((j for j in summary.index[lines == legend] if pd.notna(y[j])), key=lambda j: x[j])
        if not idx:
            continue
        colour = f"C{i % 10}"
        if is_seed:
            ax.plot(x[idx], y[idx], marker="o", linestyle="none", color=colour, label=legend or None)
            ax.axhline(float(y[idx].mean()), color=colour, linestyle="--", linewidth=1,
                       label=f"mean over {x_key}" + (f" ({legend})" if legend else ""))
        else:
            ax.plot(x[idx], y[idx], marker="o", color=colour, label=legend or None)
        with_ci = [j for j in idx if pd.notna(lo[j]) and pd.notna(hi[j])]
        if with_ci:
            any_ci = True
            ax.errorbar(x[with_ci], y[with_ci], yerr=[(y[with_ci] - lo[with_ci]).to_numpy(),
                                                      (hi[with_ci] - y[with_ci]).to_numpy()],
                        fmt="none", ecolor=colour, capsize=4, elinewidth=1.2)
    ticks = sorted(set(x.dropna()))
    if is_numeric:
        if ticks and ticks[0] > 0 and ticks[-1] / ticks[0] >= 100:
            ax.set_xscale("log")
        if len(ticks) <= 12:
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    else:
        ax.set_xticks(range(len(grid[x_key])), [str(v) for v in grid[x_key]])
    ax.set_xlabel(x_key)
    ax.set_ylabel(column)
    title = label or ("seconds per run" if column == "duration_s" else column)
    ax.set_title(title + ("\n(error bars: 95% CI)" if any_ci else ""), fontsize="medium")
    if others or is_seed:
        ax.legend(title=None, fontsize="small")
    return fig


def _plot(summary: pd.DataFrame, grid: dict[str, list[str]], column: str, label: str | None, folder: Path) -> Path:
    import matplotlib as mpl  # lazy: as radaudit.plots below

    from radaudit.plots import save_figure, set_theme  # lazy: radaudit.plots imports pyplot and seaborn

    with mpl.rc_context():  # the lab's look for this figure only; the caller's rcParams come back afterwards
        set_theme()
        fig = summary_figure(summary, grid, column, label=label)
        return save_figure(fig, folder, "summary")["png"]


def _cell(value: Any, lo: Any, hi: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = f"{value:.4g}"
    if not (pd.isna(lo) or pd.isna(hi)):
        text += f" [{lo:.4g}, {hi:.4g}]"
    return text


def write_index_md(path: Path, summary: pd.DataFrame, grid: dict[str, list[str]], m: dict[str, Any],
                   finding_ids: Sequence[str], plot: Path | None) -> Path:
    """``index.md``: how the sweep ran, a table with each member's link, its findings (value [95% CI]) and
    the errors of failed members."""
    experiment = m["experiment"]
    table = pd.DataFrame({
        "run": [f"[{r}]({f}/{experiment}.html)" if f else r for r, f in zip(summary["run"], summary["folder"])],
        **{k: summary[k] for k in grid},
        "status": summary["status"],
        "duration_s": summary["duration_s"],
        **{fid: [_cell(v, lo, hi) for v, lo, hi in zip(summary[fid], summary[f"{fid}.ci_low"], summary[f"{fid}.ci_high"])]
           for fid in finding_ids},
    })
    engine = m["engine"]
    how = (f"Ray {m['ray_version']} at `{m['address']}`, {m['resources_per_run']['num_cpus']:g} CPU and "
           f"{m['resources_per_run']['num_gpus']:g} GPU per run" if engine == "ray" else "one run after another")
    n_ok = int((summary["status"] == "succeeded").sum())
    lines = [f"# Sweep of {experiment} (preset {m['preset']})", "",
             f"Engine: **{engine}** ({how}). Grid: " + "; ".join(f"`{k}` in {', '.join(v)}" for k, v in grid.items())
             + (f"; overrides {', '.join(f'`{o}`' for o in m['overrides'])}" if m["overrides"] else "")
             + f". {len(summary)} runs, {n_ok} succeeded.", "",
             table.to_markdown(index=False), ""]
    failed = summary[summary["status"] != "succeeded"]
    if len(failed):
        lines += ["## Failed runs", ""] + [f"- `{r.run}`: {r.error}" for r in failed.itertuples()] + [""]
    if plot is not None:
        lines += [f"![{m['plot']['column']} against {next(iter(grid))}]({plot.name})", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------- engines

def _import_ray(required: bool):
    """The ``ray`` module, or ``None`` when it is not installed and not ``required`` (then a clear error)."""
    try:
        import ray  # lazy: an optional dependency (radaudit[ray]), heavy to import
    except ImportError:
        if required:
            raise RadauditError(RAY_MISSING) from None
        return None
    return ray


def _worker_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)}
    env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
    env["RADAUDIT_PROJECT"] = str(project_root())
    return env


def _shard_tasks(task: dict[str, Any], shards: int) -> list[dict[str, Any]]:
    """The ``shards`` shard tasks of one member (:func:`run_shard_task` keyword arguments)."""
    return [{"experiment": task["experiment"], "preset": task["preset"], "overrides": task["overrides"],
             "label": task["label"], "shard": (j, shards), "out_root": task["out_root"], "data_root": task["data_root"],
             "params_files": task["params_files"], "prepared": task["prepared"]} for j in range(1, shards + 1)]


def _serial(tasks: list[dict[str, Any]], progress: bool, on_done: Callable[[int, dict[str, Any]], None],
            shards: int = 0) -> list[dict]:
    results = []
    for i, task in enumerate(tasks):
        log.info("sweep %d/%d: %s", i + 1, len(tasks), task["label"])
        done_shards = [run_shard_task(**st) for st in _shard_tasks(task, shards)]
        results.append({**run_member(**task, progress=progress), **({"shards": done_shards} if shards else {})})
        on_done(i, results[-1])
    return results


@dataclass
class _RaySession:
    """A Ray connection for one sweep: ``started`` when this sweep started it (and so shuts it down)."""
    ray: Any
    started: bool
    address: str
    resources: dict[str, float]


def _ray_connect(address: str | None) -> _RaySession:
    ray = _import_ray(required=True)
    started = False
    if not ray.is_initialized():
        if address is None:  # a local Ray of this machine's CPUs (and the GPUs Ray detects)
            for attempt in (1, 2):  # Ray gives its raylet 30 s to register: a busy machine can miss it once
                try:
                    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
                    break
                except Exception as err:  # noqa: BLE001
                    ray.shutdown()
                    if attempt == 2:
                        raise RadauditError(f"Could not start a local Ray: {err} Try again when the machine is less "
                                            "busy, or run the sweep with --engine serial.") from err
                    log.warning("a local Ray did not start (%s); trying once more", err)
        else:
            try:
                ray.init(address=address, log_to_driver=False)
            except Exception as err:  # noqa: BLE001  (connection refused, bad address, version mismatch ...)
                raise RadauditError(f"Cannot connect to the Ray cluster at {address!r}: {err}. Check the address "
                                    "(`ray://<head>:10001` or `auto` on a cluster node) and that the cluster runs "
                                    f"Ray {ray.__version__}.") from err
        started = True
    resources = {k: float(v) for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU", "memory")}
    return _RaySession(ray, started, address or "local", resources)


def _ray(session: _RaySession, tasks: list[dict[str, Any]], cpus: float, gpus: float,
         on_done: Callable[[int, dict[str, Any]], None], shards: int = 0) -> list[dict]:
    """Members as Ray tasks. With ``shards``, every member's shards are submitted first (all members' at once, so
    they spread over the cluster) and a member's merge run is submitted as soon as its last shard is back."""
    ray = session.ray
    remote, shard_remote = ray.remote(run_member), ray.remote(run_shard_task)
    env = _worker_env()

    def opts(name: str) -> dict[str, Any]:
        return {"num_cpus": cpus, "num_gpus": gpus, "max_retries": 0, "name": name, "runtime_env": {"env_vars": env}}

    refs: dict[Any, tuple[str, int, int]] = {}  # ref -> ("member" | "shard", member index, shard index)
    shard_results: list[list[dict]] = [[] for _ in tasks]
    for i, task in enumerate(tasks):
        if shards:
            for st in _shard_tasks(task, shards):
                ref = shard_remote.options(**opts(f"radaudit:{task['label']}:shard{st['shard'][0]}of{shards}")).remote(**st)
                refs[ref] = ("shard", i, st["shard"][0])
        else:
            refs[remote.options(**opts(f"radaudit:{task['label']}")).remote(**task)] = ("member", i, 0)
    log.info("sweep: %d runs%s submitted to Ray at %s (%g CPU, %g GPU each)", len(tasks),
             f" (first {shards} shards each)" if shards else "", session.address, cpus, gpus)
    results: list[dict | None] = [None] * len(tasks)
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                kind, i, j = refs[ref]
                task = tasks[i]
                if kind == "shard":
                    try:
                        rec = ray.get(ref)
                    except Exception as err:  # noqa: BLE001  (the worker died): recorded, the merge computes the rest
                        rec = {"run": task["label"], "shard": f"{j}/{shards}", "status": "failed", "counts": {},
                               "duration_s": None, "error": f"Ray task failed: {type(err).__name__}"}
                    shard_results[i].append(rec)
                    log.info("sweep %s: shard %s %s%s", task["label"], rec["shard"], rec["status"],
                             f" ({rec['error']})" if rec["error"] else "")
                    if len(shard_results[i]) == shards:  # the member's last shard: its merge run
                        merge = remote.options(**opts(f"radaudit:{task['label']}")).remote(**task)
                        refs[merge] = ("member", i, 0)
                        pending.append(merge)
                    continue
                try:
                    results[i] = ray.get(ref)
                except Exception as err:  # noqa: BLE001  (the worker died, or the task could not start)
                    folder = task["label"] if (Path(task["sweep_dir"]) / task["label"]).is_dir() else ""
                    results[i] = _failure(task["label"], task["params"], f"Ray task failed: {type(err).__name__}: "
                                          f"{str(err).strip().splitlines()[-1] if str(err).strip() else err!r}", folder)
                if shards:
                    results[i]["shards"] = sorted(shard_results[i], key=lambda r: int(r["shard"].split("/")[0]))
                on_done(i, results[i])
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return [r for r in results if r is not None]


# ----------------------------------------------------------------------------------------------- the sweep

@dataclass
class SweepResult:
    """What a sweep wrote: its folder, the summary table (``summary.csv``), its manifest and the plot (or None)."""
    sweep_dir: Path
    summary: pd.DataFrame
    manifest: dict[str, Any]
    plot: Path | None

    @property
    def failed(self) -> bool:
        return bool((self.summary["status"] != "succeeded").any())


def _check_resources(session: _RaySession, cpus: float, gpus: float) -> None:
    have_cpu, have_gpu = session.resources.get("CPU", 0.0), session.resources.get("GPU", 0.0)
    short = [f"{need:g} {what} per run but the cluster has {have:g}"
             for need, what, have in ((cpus, "CPU", have_cpu), (gpus, "GPU", have_gpu)) if need > have]
    if not short:
        return
    if session.address == "local":
        raise RadauditError(f"The sweep asks for {'; '.join(short)}: its tasks would wait forever. Lower "
                            "--cpus-per-run / --gpus-per-run, or give --address of a cluster that has them.")
    log.warning("the sweep asks for %s: its tasks wait until the cluster (autoscaler) adds such a node",
                "; ".join(short))


def sweep(
    experiment: str,
    preset: str,
    grid_items: list[str] | tuple[str, ...],
    overrides: list[str] | tuple[str, ...] = (),
    *,
    data_root: str | None = None,
    out: str | os.PathLike | None = None,
    progress: bool = True,
    params_files: list[str] | tuple[str, ...] = (),
    engine: str = "auto",
    address: str | None = None,
    cpus_per_run: float = 1.0,
    gpus_per_run: float | None = None,
    plot: str | None = None,
    shards: int = 0,
) -> SweepResult:
    """Run the experiment once per combination of the grid and write the sweep's summary (module docstring).

    ``engine``: ``auto`` | ``ray`` | ``serial``. ``address``: ``None`` (a local Ray), ``auto`` or ``ray://host:port``.
    ``gpus_per_run``: ``None`` = 1 when the Ray cluster has a GPU and a member :func:`wants_gpu`, else 0.
    ``plot``: the finding id (or ``duration_s``) to draw; ``None`` = the first finding with a number.
    ``shards``: ``N > 0`` runs each member's expensive step as N shard tasks first (``radaudit run <e> --shard i/N``,
    :mod:`radaudit.shards`, into the shared cache), then the member's notebook, which finds it all cached; the
    shards' records (counts, status) go into the manifest's ``runs``. A failed shard is recorded and the merge run
    computes what it left.
    Raises ``ParamsError`` / ``RadauditError`` before anything is written; a failed member does not raise.
    """
    if engine not in ENGINES:
        raise RadauditError(f"--engine {engine!r} is not one of {', '.join(ENGINES)}.")
    if cpus_per_run <= 0 or (gpus_per_run is not None and gpus_per_run < 0):
        raise RadauditError("--cpus-per-run must be > 0 and --gpus-per-run >= 0.")
    if plot is not None and not _PLOT_NAME.match(plot):
        raise RadauditError(f"--plot {plot!r} must be a finding id (snake_case, as in findings.json) or duration_s.")
    grid = parse_grid(grid_items)
    exp = get_experiment(experiment)
    if shards < 0 or shards == 1:
        raise RadauditError(f"--shards {shards} must be 0 (no shards) or at least 2.")
    if shards and exp.shard_step is None:
        raise ParamsError(f"{experiment} has no shard step, so --shards cannot split it; experiments that can be "
                          f"sharded: {', '.join(shardable_experiments()) or 'none'}.")
    model = exp.params_model()
    for key in grid:
        if key.split(".")[0] not in model.model_fields:
            raise ParamsError(f"--grid key {key!r} is not a parameter of {experiment!r}. "
                              f"Allowed keys: {', '.join(model.model_fields)}.")

    combos = [dict(zip(grid, vals)) for vals in itertools.product(*grid.values())]
    prepared = []
    for combo in combos:  # every combination validated (and preflighted) before the first run starts
        ov = list(overrides) + [f"{k}={v}" for k, v in combo.items()]
        parse_overrides(model, ov)
        prepared.append((combo, ov, prepare(experiment, preset, ov, data_root, params_files)))

    if engine == "auto":  # an --address means Ray: without it, say how to install it rather than run serially
        engine = "ray" if _import_ray(required=address is not None) is not None else "serial"
        if engine == "serial":
            log.warning("Ray is not installed: the sweep runs one run after another "
                        "(`pip install 'radaudit[ray]'` runs them in parallel)")
    elif engine == "ray":
        _import_ray(required=True)
    if engine == "serial" and address is not None:
        raise RadauditError("--address needs the Ray engine (--engine ray).")

    session = _ray_connect(address) if engine == "ray" else None
    try:
        cpus, gpus = None, None
        if session is not None:
            cpus = float(cpus_per_run)
            if gpus_per_run is None:
                any_gpu = any(wants_gpu(p.model_dump(mode="json"), preset) for _, _, (_, p) in prepared)
                gpus = 1.0 if session.resources.get("GPU", 0.0) >= 1 and any_gpu else 0.0
            else:
                gpus = float(gpus_per_run)
            _check_resources(session, cpus, gpus)
        return _execute(experiment, preset, grid, list(overrides), prepared, data_root=data_root, out=out,
                        progress=progress, params_files=list(params_files), engine=engine, session=session,
                        cpus=cpus, gpus=gpus, plot=plot, shards=shards)
    finally:
        if session is not None and session.started:
            session.ray.shutdown()


def _execute(experiment, preset, grid, overrides, prepared, *, data_root, out, progress, params_files, engine,
             session, cpus, gpus, plot, shards=0) -> SweepResult:
    out_root = Path(out).resolve() if out else outputs_dir()
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    sweep_dir = new_run_dir(out_root / experiment / "sweeps", f"{stamp}_{preset}")
    tasks = []
    for i, (combo, ov, prep) in enumerate(prepared):
        tasks.append({"experiment": experiment, "preset": preset, "overrides": ov, "label": member_label(i, combo),
                      "params": combo, "sweep_dir": str(sweep_dir), "out_root": str(out_root), "data_root": data_root,
                      "params_files": params_files, "prepared": prep})
    ray_version = session.ray.__version__ if session is not None else None
    m: dict[str, Any] = {
        "kind": "sweep", "experiment": experiment, "preset": preset, "sweep_name": sweep_dir.name, "status": "running",
        "engine": engine, "ray_version": ray_version, "address": session.address if session is not None else None,
        "cluster_resources": session.resources if session is not None else None,
        "resources_per_run": {"num_cpus": cpus, "num_gpus": gpus}, "shards_per_run": shards,
        "grid": grid, "overrides": overrides,
        "params_files": [str(Path(f).resolve()) for f in params_files], "data_root": data_root,
        "git": manifest.git_info(project_root()), "versions": {**manifest.package_versions(),
                                                               **({"ray": ray_version} if ray_version else {})},
        "platform": {"executable": sys.executable},
        "started": manifest.utcnow(), "finished": None, "duration_s": None,
        "runs": [{"run": t["label"], "params": t["params"], "status": "pending"} for t in tasks],
    }
    mpath = sweep_dir / "manifest.json"
    manifest.write(mpath, m)
    t0 = time.perf_counter()

    def on_done(i: int, res: dict[str, Any]) -> None:
        log.info("sweep %d/%d %s: %s%s", sum(r["status"] != "pending" for r in m["runs"]) + 1, len(tasks),
                 res["run"], res["status"], f" ({res['error']})" if res["error"] else "")
        m["runs"][i] = {k: res[k] for k in ("run", "params", "status", "duration_s", "folder", "error", "shards")
                        if k in res}
        manifest.write(mpath, m)

    try:
        members = (_ray(session, tasks, cpus, gpus, on_done, shards) if engine == "ray"
                   else _serial(tasks, progress, on_done, shards))
    except BaseException:
        manifest.update(mpath, status="interrupted", finished=manifest.utcnow(),
                        duration_s=round(time.perf_counter() - t0, 3), runs=m["runs"])
        raise

    summary = summary_frame(grid, members)
    summary.to_csv(sweep_dir / "summary.csv", index=False)
    labels = finding_labels(members)
    ids = list(labels)
    column = plot or default_plot_column(summary, ids)
    plot_path, plot_error = None, None
    if column != "duration_s" and column not in ids:
        plot_error = (f"--plot {column!r} is not a finding of these runs; their findings: "
                      f"{', '.join(ids) or 'none'} (or duration_s)")
        log.warning("no summary plot: %s", plot_error)
    else:
        try:
            plot_path = _plot(summary, grid, column, labels.get(column), sweep_dir)
        except Exception as err:  # noqa: BLE001  (the runs and their summary matter more than the figure)
            plot_error = f"{type(err).__name__}: {err}"
            log.error("summary plot failed: %s", plot_error)
    m.update(status="failed" if (summary["status"] != "succeeded").any() else "succeeded",
             finished=manifest.utcnow(), duration_s=round(time.perf_counter() - t0, 3),
             plot={"column": column, "file": plot_path.name if plot_path else None, "error": plot_error})
    manifest.write(mpath, m)
    write_index_md(sweep_dir / "index.md", summary, grid, m, ids, plot_path)
    try:  # the outputs' index.html lists the members (each member rendered it too, possibly at the same time)
        report.render_index(out_root)
    except Exception as err:  # noqa: BLE001
        log.error("outputs index under %s failed: %s", out_root, err)
    return SweepResult(sweep_dir, summary, json.loads(json.dumps(m, default=str)), plot_path)
