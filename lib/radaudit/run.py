"""The runner: execute an experiment's notebook with papermill into a fresh run folder.

``outputs/<experiment>/<run-name>/`` receives the executed notebook (``<experiment>.ipynb``), its
HTML export, ``figures/``, ``tables/``, ``manifest.json`` and ``run.log``. A run never overwrites
another (run names carry the start time, and a clash gets a ``-2`` suffix). ``outputs/<experiment>/latest``
points at the newest successful run. A failing cell keeps everything written so far, marks the
manifest ``status: failed`` with the error, and raises :class:`~radaudit.errors.RunFailedError`.

While the notebook runs, the manifest names the runner (``pid``, ``host``) and keeps a ``heartbeat`` and the
``last_cell`` completed (refreshed after every cell and every :data:`~radaudit.manifest.HEARTBEAT_EVERY_S`
seconds), so that a run killed outright reads as ``interrupted`` (:func:`radaudit.manifest.observed_status`).
SIGTERM or SIGINT to the runner marks the manifest ``interrupted`` at once (``finished``, ``signal``), then stops
the notebook and raises :class:`~radaudit.errors.RunInterrupted` (``radaudit run`` exits 128 + the signal's number).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radaudit import manifest, report
from radaudit.config import BaseParams
from radaudit.errors import ParamsError, RunFailedError, RunInterrupted
from radaudit.experiments import Experiment
from radaudit.models.cache import default_cache_dir
from radaudit.paths import check_component, notebooks_dir, outputs_dir, project_root
from radaudit.run_setup import default_run_name, new_run_dir, prepare  # noqa: F401  (run.prepare stays public)
from radaudit.timings import heading_above, section_times

log = logging.getLogger("radaudit.run")

#: torch's intra-op threads in a run's notebook kernel (``OMP_NUM_THREADS``, set for the kernel unless the caller set
#: it). One, so that a run gives the same numbers however it is started (issue 44):
#:
#: * A model trained with 1 and with 2 threads differs in float rounding (8 steps of the demo VLM give different
#:   weights), and a trained stand-in is the start of every number after it. Ray's workers run with 1 thread
#:   (``radaudit sweep``, the verdict-stability benchmark), a kernel alone with as many as the machine has: a sweep's
#:   seed 0 was another model than ``radaudit run``'s seed 0. With one thread everywhere, ``run``, ``run all --jobs N``
#:   and ``sweep`` train the same stand-in from the same seed, and the stability benchmark judges the very models a
#:   user's ``make demo`` trains.
#: * ``make demo`` runs two notebooks at a time, so one thread each still fills two cores; without
#:   ``OMP_WAIT_POLICY=PASSIVE`` two kernels of 2 spinning threads each made a VLM step 5-8x slower than 1 thread
#:   each (``benchmarks/profile_standins.py`` measures the step with 1 and 2 threads, alone and side by side).
#:
#: A paper run on a large machine sets ``OMP_NUM_THREADS`` itself (its models run on the GPU); the value is recorded
#: in ``recorded.determinism.torch_threads``, and another value may change a trained stand-in's last bits.
KERNEL_THREADS = "1"


@dataclass
class RunResult:
    experiment: str
    run_dir: Path
    status: str
    html: Path | None
    manifest: dict[str, Any]


def _point_latest(exp_dir: Path, run_dir: Path) -> None:
    link = exp_dir / "latest"
    tmp = exp_dir / f".latest.{os.getpid()}"
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(os.path.relpath(run_dir, exp_dir), tmp)
        os.replace(tmp, link)
    except OSError:  # no symlinks (some Windows setups): a text file naming the run instead
        (exp_dir / "latest.txt").write_text(run_dir.name + "\n", encoding="utf-8")


def notebook_steps(nb_path: Path) -> dict[str, float]:
    """Seconds spent per notebook section (the nearest markdown heading above each code cell):
    :func:`radaudit.timings.section_times`."""
    return section_times(nb_path)


def _write_report(run_dir: Path, nb_out: Path, index_root: Path) -> Path | None:
    """The run's reading report and the outputs' ``index.html`` (:mod:`radaudit.report`). The notebook is the
    primary record: a failed report is logged, never fatal."""
    html = None
    try:
        if nb_out.exists():
            html = report.render_run_report(run_dir, nb_out)
    except Exception as err:  # noqa: BLE001
        log.error("HTML report of %s failed: %s", nb_out, err)
    try:
        report.render_index(index_root)
    except Exception as err:  # noqa: BLE001
        log.error("outputs index under %s failed: %s", index_root, err)
    return html


def _outputs_listing(run_dir: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for sub in ("figures", "tables"):
        files = sorted(p for p in (run_dir / sub).glob("*") if p.is_file())
        out[sub] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    return out


def kernel_python(kernel_name: str = "python3") -> str:
    """The interpreter the notebook kernel will run in (jupyter_client maps a bare ``python`` to ours)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # lazy: jupyter's stack only for a run

    try:
        argv0 = KernelSpecManager().get_kernel_spec(kernel_name).argv[0]
    except NoSuchKernel:
        raise RunFailedError(
            f"No Jupyter kernel named {kernel_name!r}. Install ipykernel in this environment "
            "(`pip install ipykernel`) or run `make install`."
        ) from None
    if not os.path.isabs(argv0):
        return sys.executable
    if os.path.realpath(argv0) != os.path.realpath(sys.executable):
        log.warning("the %r kernel runs %s, not this environment's %s: the notebook may not see this "
                    "radaudit install (remove that kernelspec or set RADAUDIT_KERNEL)", kernel_name, argv0, sys.executable)
    return argv0


def _kernel_config():
    """Run the kernel over local IPC sockets rather than TCP where the platform has them: nothing
    listens on a network port, and ipykernel's "TCP without encryption" warning goes away."""
    from traitlets.config import Config  # lazy: jupyter's stack only for a run

    if os.name != "posix":
        return Config()
    # for IPC, `ip` is the socket files' path prefix: keep them out of the working directory
    prefix = os.path.join(tempfile.gettempdir(), f"radaudit-kernel-{os.getpid()}")
    return Config({"KernelManager": {"transport": "ipc", "ip": prefix}})


def _recorded(run_dir: Path) -> dict[str, Any]:
    """What the notebook kept with ``run.record(...)`` (see :class:`radaudit.session.Run`)."""
    p = run_dir / "recorded.json"
    try:
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}
    except json.JSONDecodeError as err:
        return {"_error": f"recorded.json unreadable: {err}"}


#: A line the notebook's radaudit logger wrote to stderr (session._show_radaudit_logs: "LEVEL name: message").
_KERNEL_LOG = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) (radaudit[\w.]*): (.*)$", re.S)


class _KernelLogLevels(logging.Filter):
    """papermill logs every line the kernel writes to stderr as ``WARNING papermill``. A line the notebook's
    radaudit logger wrote gets back its real level and logger name (in ``run.log`` and on the terminal);
    other stderr lines (Python warnings, library messages) stay papermill's warnings."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "papermill" and record.levelno == logging.WARNING:
            m = _KERNEL_LOG.match(str(record.getMessage()).rstrip("\n"))
            if m:
                record.levelname, record.levelno = m[1], logging.getLevelName(m[1])
                record.name, record.msg, record.args = m[2], m[3], ()
        return True


class _TerminalStage(logging.Handler):
    """While a notebook runs, echo the kernel's progress lines (:mod:`radaudit.progress`, training steps) and its
    warnings to the terminal, above papermill's cell bar (``tqdm.write``), so a long cell shows its stage. With a
    ``prefix`` (several notebooks at once, :mod:`radaudit.run_many`: no cell bar) each line is printed after it.
    A warning already shown is not shown again (data loaders warn once per call; ``run.log`` keeps every line).
    ``warnings_only`` (``--no-progress``): the warnings alone, printed as they come (a damaged cache set aside, rows
    left out), never the progress."""

    def __init__(self, prefix: str | None = None, *, warnings_only: bool = False) -> None:
        super().__init__()
        self.prefix = prefix
        self.warnings_only = warnings_only
        self._warned: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith("radaudit") or not (
                record.levelno >= logging.WARNING or record.name in ("radaudit.progress", "radaudit.models.train")):
            return
        if self.warnings_only and record.levelno < logging.WARNING:
            return
        line = f"{record.levelname.lower() + ': ' if record.levelno >= logging.WARNING else ''}{record.getMessage()}"
        if record.levelno >= logging.WARNING:
            if line in self._warned:
                return
            self._warned.add(line)
        if self.prefix is not None:
            print(f"  {self.prefix}{line}", flush=True)
            return
        from tqdm import tqdm  # lazy: only with the progress bar on

        tqdm.write(f"  {line}")


class _RunTracker:
    """Keeps a running run's manifest true to its state: a heartbeat and the last completed cell while the notebook
    runs, ``interrupted`` the moment SIGTERM or SIGINT arrives, the final status once. Every write goes through
    one re-entrant lock (a heartbeat thread, the cells' callback and a signal handler in the main thread)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, mpath: Path, t0: float) -> None:
        self.mpath, self.t0 = mpath, t0
        self.lock = threading.RLock()
        self.final = False
        self.signum: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous: dict[int, Any] = {}

    def _update(self, **fields: Any) -> None:
        with self.lock:
            if not self.final:
                manifest.update(self.mpath, **fields)

    def beat(self) -> None:
        try:
            self._update(heartbeat=manifest.utcnow())
        except (OSError, ValueError) as err:  # a full disk must not end the run; the next beat tries again
            log.warning("heartbeat of %s not written: %s", self.mpath, err)

    def cell_done(self, index: int | None, nb: Any) -> None:
        """papermill finished cell ``index`` of ``nb``: a code cell that completed is the run's ``last_cell``; a
        markdown cell, a failed cell or one cut short by a signal only refreshes the heartbeat."""
        cell = nb.cells[index] if index is not None and 0 <= index < len(nb.cells) else None
        state = ((cell.get("metadata") or {}).get("papermill") or {}).get("status") if cell is not None else None
        if cell is None or cell.get("cell_type") != "code" or state != "completed" or self.signum is not None:
            self.beat()
            return
        self._update(heartbeat=manifest.utcnow(),
                     last_cell={"index": index, "of": len(nb.cells), "heading": heading_above(nb.cells, index)})

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.signum is None:
            self.signum = signum
            self._update(status="interrupted", finished=manifest.utcnow(), signal=name,
                         duration_s=round(time.perf_counter() - self.t0, 3), error=self.error())
        previous = self._previous.get(signum)
        if callable(previous) and previous is not signal.default_int_handler:
            previous(signum, frame)  # a host's own handler (a Ray worker's, say) still runs
        raise RunInterrupted(signum, f"interrupted by {name}; what the run wrote is kept in {self.mpath.parent}")

    def error(self) -> dict[str, str]:
        name = signal.Signals(self.signum).name if self.signum is not None else "the user"
        return {"ename": "RunInterrupted", "evalue": name, "message": f"interrupted by {name}"}

    def start(self) -> None:
        """The heartbeat thread, and the signal handlers (main thread only; a signal ignored stays ignored)."""
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                previous = signal.getsignal(sig)
                if previous is signal.SIG_IGN:
                    continue
                self._previous[sig] = previous
                signal.signal(sig, self._on_signal)

        def loop() -> None:
            while not self._stop.wait(manifest.HEARTBEAT_EVERY_S):
                self.beat()

        self._thread = threading.Thread(target=loop, name="radaudit-heartbeat", daemon=True)
        self._thread.start()

    def finish(self, **fields: Any) -> dict[str, Any]:
        """Write the run's end (an interrupted run stays ``interrupted``) and stop the heartbeats."""
        with self.lock:
            if self.signum is not None:
                fields.update(status="interrupted", error=self.error(), signal=signal.Signals(self.signum).name)
            m = manifest.update(self.mpath, **fields, heartbeat=manifest.utcnow())
            self.final = True
        self._stop.set()
        return m

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()


def _tracking_engine() -> str:
    """The name of a papermill engine that is nbclient's plus a callback after each cell (``on_cell=f``: called as
    ``f(cell_index, notebook)``), registered once."""
    from papermill.engines import NBClientEngine, papermill_engines  # lazy: papermill (heavy) only for a run

    class TrackingEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, on_cell=None, **kwargs):
            if on_cell is not None:
                complete = nb_man.cell_complete

                def cell_complete(cell, cell_index=None, **kw):
                    complete(cell, cell_index=cell_index, **kw)
                    on_cell(cell_index, nb_man.nb)

                nb_man.cell_complete = cell_complete
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    name = "radaudit-tracking"
    try:
        papermill_engines.get_engine(name)
    except Exception:  # noqa: BLE001  (papermill's "no engine named")
        papermill_engines.register(name, TrackingEngine)
    return name


def _file_logger(path: Path) -> logging.Handler:
    h = logging.FileHandler(path, encoding="utf-8")
    h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    h.setLevel(logging.INFO)
    return h


def _with_rehearsal(exp: Experiment, params: BaseParams, rehearse: bool) -> tuple[BaseParams, dict[str, Any] | None]:
    """``(params, rehearsal)``: as given when ``rehearse`` is false; else the experiment's rehearsal params (the same
    notebook and code, tiny twins and invented fixtures: see ``Experiment.rehearsal``) and what it records."""
    if not rehearse:
        return params, None
    rehearse_params = exp.rehearsal_function()
    if rehearse_params is None:
        raise ParamsError("This experiment has no rehearsal yet (see issue 19): run its smoke preset instead.")
    return rehearse_params(params, default_cache_dir() / "rehearsal")


def _write_start_manifest(mpath: Path, experiment: str, preset: str, exp: Experiment, params: BaseParams,
                          pdict: dict[str, Any], *, overrides: list[str] | tuple[str, ...],
                          params_files: list[str] | tuple[str, ...], rehearsal: dict[str, Any] | None, project: Path,
                          kernel: dict[str, str]) -> None:
    """The manifest a run starts with (:func:`radaudit.manifest.base_manifest`, the params files' text, the notebook,
    the rehearsal, the kernel); :class:`_RunTracker` keeps it up to date from there."""
    m = manifest.base_manifest(experiment=experiment, preset=preset, run_name=mpath.parent.name, params=pdict,
                               overrides=overrides, project=project, data_root=params.data_root)
    if params_files:
        m["params_files"] = {str(Path(f).resolve()): Path(f).read_text(encoding="utf-8") for f in params_files}
    m["notebook"] = exp.notebook
    if rehearsal is not None:
        m["rehearsal"] = rehearsal
    m["kernel"] = kernel
    manifest.write(mpath, m)


@contextmanager
def _run_logging(log_path: Path, progress: bool, stage_prefix: str | None) -> Iterator[None]:
    """While a run executes: radaudit's and papermill's records go to ``log_path`` (``run.log``), the notebook's cell
    output to ``run.log`` only (not the console), the kernel's radaudit lines with their own levels
    (:class:`_KernelLogLevels`), and the stage lines (or, with neither ``progress`` nor ``stage_prefix``, the warnings
    alone) to the terminal (:class:`_TerminalStage`). Everything is undone on exit."""
    handler = _file_logger(log_path)
    for name_ in ("radaudit", "papermill"):
        logging.getLogger(name_).addHandler(handler)
        logging.getLogger(name_).setLevel(logging.INFO)
    pm_logger = logging.getLogger("papermill")
    pm_propagate, pm_logger.propagate = pm_logger.propagate, False  # cell output goes to run.log, not the console
    levels = _KernelLogLevels()
    pm_logger.addFilter(levels)
    terminal = (_TerminalStage() if progress else _TerminalStage(stage_prefix) if stage_prefix is not None
                else _TerminalStage("", warnings_only=True))
    if terminal is not None:
        pm_logger.addHandler(terminal)
    try:
        yield
    finally:
        pm_logger.propagate = pm_propagate
        pm_logger.removeFilter(levels)
        if terminal is not None:
            pm_logger.removeHandler(terminal)
        for name_ in ("radaudit", "papermill"):
            logging.getLogger(name_).removeHandler(handler)
        handler.close()


@contextmanager
def _kernel_environment() -> Iterator[None]:
    """The environment the notebook kernel (a fresh process) inherits; ``OMP_NUM_THREADS`` is removed again on exit
    when this function set it."""
    os.environ.setdefault("PYTHONHASHSEED", "0")
    # the kernel (a fresh process) inherits this: no tqdm bars as notebook widgets, whose live state is noise in the
    # saved notebook and the report; progress goes to the terminal and run.log (radaudit.progress). This process
    # imported tqdm already (papermill), and tqdm reads the variable at import, so papermill's own bar stays.
    os.environ.setdefault("TQDM_DISABLE", "1")
    # One torch thread per notebook kernel (KERNEL_THREADS), unless the caller set OMP_NUM_THREADS: see the constant.
    omp = os.environ.get("OMP_NUM_THREADS")
    if omp is None:
        os.environ["OMP_NUM_THREADS"] = KERNEL_THREADS
    try:
        yield
    finally:
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)


def _finish(tracker: _RunTracker, run_dir: Path, nb_out: Path, index_root: Path, t0: float, status: str,
            error: dict[str, Any] | None) -> tuple[dict[str, Any], Path | None]:
    """``(manifest, html)``: the run's end written into its manifest (status, error, duration, the notebook's
    section times, the outputs' hashes, what the notebook recorded), then its HTML report and the outputs index."""
    m = tracker.finish(
        status=status, error=error, finished=manifest.utcnow(),
        duration_s=round(time.perf_counter() - t0, 3),
        steps=notebook_steps(nb_out) if nb_out.exists() else {},
        outputs=_outputs_listing(run_dir),
        recorded=_recorded(run_dir),
    )
    return m, _write_report(run_dir, nb_out, index_root=index_root)


def run_experiment(
    experiment: str,
    preset: str = "demo",
    overrides: list[str] | tuple[str, ...] = (),
    *,
    data_root: str | None = None,
    out: str | os.PathLike | None = None,
    name: str | None = None,
    progress: bool = True,
    prepared: tuple[Experiment, BaseParams] | None = None,
    run_parent: Path | None = None,
    params_files: list[str] | tuple[str, ...] = (),
    rehearse: bool = False,
    stage_prefix: str | None = None,
) -> RunResult:
    """Run one experiment; see the module docstring. Raises ``ParamsError`` / ``DatasetNotFoundError``
    before anything is written, ``RunFailedError`` after a failed cell (outputs kept). ``progress=False`` hides the
    cell bar and the stage lines; ``stage_prefix`` then still prints the stage lines (training steps, generation
    batches, warnings), each after that prefix (several notebooks at once)."""
    import papermill as pm  # lazy: papermill (heavy) only for a run, not for importing radaudit.run

    if name is not None and run_parent is None:  # a user's name (a sweep builds its own labels)
        check_component(name, "run name")
    exp, params = prepared or prepare(experiment, preset, overrides, data_root, params_files)
    params, rehearsal = _with_rehearsal(exp, params, rehearse)
    project = project_root()
    notebook = notebooks_dir() / exp.notebook
    if not notebook.exists():
        raise ParamsError(f"The notebook {notebook} of experiment {experiment!r} is missing.")

    kernel_name = os.environ.get("RADAUDIT_KERNEL", "python3")
    kernel_exe = kernel_python(kernel_name)
    exp_dir = Path(out).resolve() / experiment if out else outputs_dir() / experiment
    run_dir = new_run_dir(run_parent or exp_dir, name or (default_run_name(preset, overrides, params_files)
                                                           + ("_rehearsal" if rehearse else "")))
    (run_dir / "figures").mkdir()
    (run_dir / "tables").mkdir()
    nb_out = run_dir / f"{experiment}.ipynb"
    mpath = run_dir / "manifest.json"
    pdict = params.model_dump(mode="json")
    _write_start_manifest(mpath, experiment, preset, exp, params, pdict, overrides=overrides, params_files=params_files,
                          rehearsal=rehearsal, project=project, kernel={"name": kernel_name, "python": kernel_exe})

    with _run_logging(run_dir / "run.log", progress, stage_prefix), _kernel_environment():
        t0 = time.perf_counter()
        status, error = "succeeded", None
        log.info("running %s (preset %s) into %s", experiment, preset, run_dir)
        tracker = _RunTracker(mpath, t0)
        try:
            tracker.start()
            pm.execute_notebook(
                str(notebook), str(nb_out),
                parameters={**pdict, "run_dir": str(run_dir)},
                progress_bar=progress, log_output=True, cwd=str(project), kernel_name=kernel_name,
                request_save_on_cell_execute=True,
                config=_kernel_config(), engine_name=_tracking_engine(), on_cell=tracker.cell_done,
            )
        except pm.PapermillExecutionError as err:
            status = "failed"
            error = {"ename": err.ename, "evalue": err.evalue, "cell_index": err.exec_count,
                     "message": f"{err.ename}: {err.evalue}"}
        except KeyboardInterrupt:  # RunInterrupted (SIGTERM, SIGINT: tracker.finish names the signal) or a bare Ctrl-C
            status, error = "interrupted", {"message": "interrupted by the user"}
            raise
        except Exception as err:  # kernel died, notebook unreadable, ...
            status = "failed"
            error = {"ename": type(err).__name__, "evalue": str(err), "message": f"{type(err).__name__}: {err}"}
        finally:
            try:
                m, html = _finish(tracker, run_dir, nb_out, exp_dir.parent, t0, status, error)
            finally:  # also when a second signal cuts the report short (the logging and environment undo on exit)
                tracker.close()
    if tracker.signum is not None:  # the signal's exception was swallowed on the way (the manifest says so already)
        raise RunInterrupted(tracker.signum, f"interrupted by {signal.Signals(tracker.signum).name}")
    if status != "succeeded":
        raise RunFailedError(
            f"{experiment} failed: {error['message']}\nPartial outputs kept in {run_dir} "
            f"(see {nb_out.name}{' and ' + html.name if html else ''})."
        )
    if run_parent is None:  # sweep members do not move `latest`
        _point_latest(exp_dir, run_dir)
    return RunResult(experiment, run_dir, status, html, m)
