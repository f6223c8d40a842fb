"""Several experiments at once: ``radaudit run all --jobs N`` (``make demo`` uses ``DEMO_JOBS``, 2 by default).

Each experiment runs in its own process (:func:`radaudit.run.run_experiment`, exactly as ``radaudit run
<experiment>`` runs it), at most ``jobs`` at a time. Why processes and not more torch threads: measured on 2 cores,
a cached ``make demo`` keeps 1.1 cores busy (user + system time / wall time): most of its cells are single-threaded
Python (rule engines, bootstraps, figure saving), so a second notebook fills the idle core. Each kernel trains its
models on one thread, so on a fresh clone the two notebooks' training fills both cores too.

**Numbers do not change.** Each notebook's kernel is its own process with the same torch thread count as when it
runs alone (one: :data:`radaudit.run.KERNEL_THREADS`, which also keeps two kernels from oversubscribing the cores), the
models train for a fixed number of steps (never "as many as fit in the time"), and the caches the
notebooks share are SQLite databases in WAL mode or content-addressed folders written atomically. Running with
``--jobs 2`` gives the same tables as ``--jobs 1`` (``tests/test_run_many.py`` checks it on the ``smoke`` preset).

**Order.** Longest first (the longest-processing-time rule, which keeps the last job from starting late): each
experiment is placed by the wall time of its newest succeeded run of the same preset under the outputs folder;
experiments never run there (a fresh clone) come first, since their models are not trained yet, the heaviest first
by :attr:`radaudit.experiments.Experiment.first_run_rank` (those of equal rank in registry order). With ``jobs=1``
the order is the registry order, as it always was.

Ray is the lab's engine for distribution (``radaudit sweep``); this is a local pool of a handful of processes and
does not need the ``ray`` extra.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

from radaudit.errors import ParamsError, RunFailedError
from radaudit.experiments import EXPERIMENTS
from radaudit.paths import outputs_dir
from radaudit.run import run_experiment
from radaudit.timings import latest_runs

__all__ = ["STOP_WAIT_S", "RunOutcome", "run_many", "run_order"]

#: After Ctrl-C, how long (seconds) a running notebook gets to mark its run interrupted before it is terminated.
STOP_WAIT_S = 60.0


@dataclass(frozen=True)
class RunOutcome:
    """One experiment of :func:`run_many`: its run folder and report, or the error that stopped it."""

    experiment: str
    run_dir: Path | None
    html: Path | None
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


def run_order(names: Sequence[str], outputs: str | Path, preset: str) -> list[str]:
    """``names`` longest first by their newest succeeded ``preset`` run under ``outputs`` (its ``duration_s``);
    names with no such run first, by their ``first_run_rank`` (highest first, then in the given order; module
    docstring)."""
    seconds: dict[str, float] = {}
    for run in latest_runs(outputs, preset=preset, experiments=names):
        try:
            seconds[run.parent.name] = float(json.loads((run / "manifest.json").read_text(encoding="utf-8"))["duration_s"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    unknown = sorted((n for n in names if n not in seconds),
                     key=lambda n: -(EXPERIMENTS[n].first_run_rank if n in EXPERIMENTS else 0))
    known = sorted((n for n in names if n in seconds), key=lambda n: -seconds[n])
    return unknown + known


def _run_one(experiment: str, preset: str, overrides: tuple[str, ...], data_root: str | None, out: str | None,
             name: str | None, params_files: tuple[str, ...], rehearse: bool) -> RunOutcome:
    """One experiment in a worker process; a failed or interrupted run is returned, not raised (the others go on).

    The notebook's kernel inherits ``OMP_WAIT_POLICY=PASSIVE`` (unless the caller set it): torch's OpenMP threads
    then sleep at the end of a parallel region instead of spinning, which is what spinning threads of two processes
    on shared cores need (an attention cell took 123 s instead of 27 s with the default). It changes no number."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    t0 = time.perf_counter()
    try:
        res = run_experiment(experiment, preset, overrides, data_root=data_root, out=out, name=name, progress=False,
                             params_files=params_files, rehearse=rehearse, stage_prefix=f"[{experiment}] ")
    except RunFailedError as err:
        return RunOutcome(experiment, None, None, str(err), time.perf_counter() - t0)
    except KeyboardInterrupt:  # the runner has marked the run's manifest "interrupted"
        return RunOutcome(experiment, None, None, f"{experiment}: interrupted", time.perf_counter() - t0)
    return RunOutcome(experiment, res.run_dir, res.html, None, time.perf_counter() - t0)


def _worker(results: Any, experiment: str, *args: Any) -> None:
    """A worker process: run one experiment and put its :class:`RunOutcome` on ``results``."""
    results.put(_run_one(experiment, *args))


def run_many(names: Sequence[str], jobs: int, preset: str, overrides: Sequence[str] = (), *,
             data_root: str | None = None, out: str | None = None, name: str | None = None,
             params_files: Sequence[str] = (), rehearse: bool = False,
             on_start: Callable[[str], None] | None = None,
             on_done: Callable[[RunOutcome], None] | None = None) -> list[RunOutcome]:
    """Run ``names`` (validated beforehand by the caller), at most ``jobs`` at a time, each in a new ``spawn``ed
    process (no state of this process leaks into a run; the notebook itself always runs in a kernel of its own).
    Returns one :class:`RunOutcome` per name, in the order they finished. ``on_start(name)`` / ``on_done(outcome)``
    are called in this process as runs start and end.

    Ctrl-C (or SIGINT to this process alone) is passed on to the running workers: each marks its run
    ``interrupted`` in its manifest, as a run alone does, and the ``KeyboardInterrupt`` is raised here once they
    have stopped (at most :data:`STOP_WAIT_S` seconds each); runs not started yet are not started. A worker that
    dies without an answer (killed, out of memory) is an outcome with the error, and the others go on."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ParamsError(f"--jobs must be a positive integer (experiments run at a time), got {jobs!r}.")

    order = run_order(list(names), Path(out) if out else outputs_dir(), preset) if jobs > 1 else list(names)
    args = (preset, tuple(overrides), data_root, out, name, tuple(params_files), rehearse)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    queue, running, done = list(order), {}, []

    def finish(outcome: RunOutcome) -> None:
        proc = running.pop(outcome.experiment, None)
        if proc is not None:
            proc.join(timeout=STOP_WAIT_S)
        done.append(outcome)
        if on_done is not None:
            on_done(outcome)

    try:
        while queue or running:
            while queue and len(running) < jobs:
                n = queue.pop(0)
                if on_start is not None:
                    on_start(n)
                running[n] = ctx.Process(target=_worker, args=(results, n, *args), name=f"radaudit-{n}")
                running[n].start()
            try:
                finish(results.get(timeout=1.0))
            except Empty:
                for n, proc in list(running.items()):
                    if not proc.is_alive() and results.empty():
                        finish(RunOutcome(n, None, None, f"{n}: the worker process ended without a result (exit code "
                                          f"{proc.exitcode}: killed, or out of memory?)", 0.0))
    except KeyboardInterrupt:
        # Ctrl-C in a terminal reached the workers too: give them a moment, so that a second SIGINT does not cut
        # into their manifest update; a SIGINT sent to this process alone is passed on
        for proc in running.values():
            proc.join(timeout=3.0)
        for proc in running.values():
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_WAIT_S
        for proc in running.values():
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.terminate()
        raise
    return done
