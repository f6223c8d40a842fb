"""``manifest.json``: what a run was (params, code, environment) and how it went.

Fields: experiment, preset, run_name, status (running | succeeded | failed | interrupted |
interactive), params (after merging), seeds, overrides, data_root, git (commit, dirty, branch),
versions (python and key packages), device, platform, started/finished (UTC ISO), duration_s,
steps (seconds per notebook section), error (for failed runs), outputs (figures and tables written);
pid and host (the process that writes the manifest, ``socket.gethostname()``), heartbeat (UTC ISO, refreshed
by the runner every :data:`HEARTBEAT_EVERY_S` seconds and after every cell), last_cell (the last completed code cell
of the executed notebook: ``index`` 0-based, ``of`` cells in all, ``heading`` the nearest markdown heading at or above
it, or ``None``), and for a run stopped by SIGTERM/SIGINT, signal (``"SIGTERM"``).

**Interrupted runs.** A run killed outright (SIGKILL, out of memory, a lost machine) cannot write its end: its
manifest keeps ``status: running``. :func:`observed_status` tells such a run from a live one: a ``running``
manifest whose process is gone is ``interrupted``. On the host that wrote it, gone means no process with its
``pid`` (``os.kill(pid, 0)`` raises ``ProcessLookupError``, or the process is a zombie); seen from another host
(a shared outputs folder), or where signals cannot probe a process (Windows), gone means a heartbeat older than
:data:`HEARTBEAT_STALE_S` seconds (a manifest without one counts from its start). ``radaudit runs`` and
``outputs/index.html`` show runs this way; the manifest itself is left as it was.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from radaudit.files import atomic_write

KEY_PACKAGES = (
    "radaudit", "numpy", "pandas", "scipy", "matplotlib", "seaborn", "papermill", "nbconvert",
    "pydantic", "pyyaml", "torch", "transformers", "datasets",
)


def utcnow() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def package_versions(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = md.version(n)
        except md.PackageNotFoundError:
            continue
    return out


def git_info(cwd: Path) -> dict[str, Any]:
    """Commit, branch and dirty flag of the repository at ``cwd`` (``None`` values outside git)."""
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere), or ``""``. Timings and
    CPU-trained weights are only comparable on the same CPU model, so runs, benchmarks and bundles record it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor().strip()


def machine_description() -> str:
    """``<arch>, <n> cores, <CPU model>`` (the same string for every benchmark, run and bundle on a machine)."""
    cpu = cpu_model()
    return f"{platform.machine()}, {os.cpu_count()} cores" + (f", {cpu}" if cpu else "")


def device_info() -> dict[str, Any]:
    """CPU/GPU description. torch is consulted only if it is already installed (never required)."""
    info: dict[str, Any] = {"cpu": cpu_model() or platform.machine(), "cpu_count": os.cpu_count()}
    try:
        md.version("torch")
    except md.PackageNotFoundError:
        info["accelerator"] = None
        return info
    try:
        import torch  # noqa: PLC0415  (optional, imported only when installed)

        if torch.cuda.is_available():
            info["accelerator"] = f"cuda: {torch.cuda.get_device_name(0)}"
        else:
            info["accelerator"] = None
    except Exception as err:  # a broken torch must not break a run's bookkeeping
        info["accelerator"] = f"unknown ({type(err).__name__})"
    return info


#: Set to 1 to make torch use deterministic kernels (``torch.use_deterministic_algorithms``; slower on GPU).
DETERMINISTIC_ENV = "RADAUDIT_DETERMINISTIC"


def determinism_info() -> dict[str, Any]:
    """What the run's torch kernels promise about repeating bit for bit (``recorded.determinism``).

    Consults torch only when it is already imported (a run that never used torch needs no claim). On CPU
    the lab's tables repeat byte for byte for the same params and seed (``tests/reliability/test_determinism.py``).
    On a GPU, unless deterministic algorithms are on, cuBLAS reductions, atomic adds (scatter, index_add,
    some attention backward passes) and cuDNN autotuning may change the last digits of scores between
    reruns; ``note`` says which case this run is in."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return {"torch": None, "note": "torch not used: no kernel nondeterminism"}
    cuda = bool(torch.cuda.is_available())
    strict = bool(torch.are_deterministic_algorithms_enabled())
    info = {"torch": str(torch.__version__), "accelerator": "cuda" if cuda else "cpu",
            "deterministic_algorithms": strict, "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
            # a trained model's last bits depend on it (radaudit.run.KERNEL_THREADS)
            "torch_threads": int(torch.get_num_threads())}
    if not cuda:
        info["note"] = "CPU kernels: same params and seed give the same tables"
    elif strict:
        info["note"] = "GPU with deterministic algorithms (RADAUDIT_DETERMINISTIC=1): reruns on this GPU and stack repeat"
    else:
        info["note"] = ("GPU kernels are not deterministic here (cuBLAS reductions, atomic adds, cuDNN autotuning): "
                        f"reruns can differ in the last digits of scores; set {DETERMINISTIC_ENV}=1 to trade speed "
                        "for bit-for-bit reruns")
    return info


def use_deterministic_kernels() -> bool:
    """When ``RADAUDIT_DETERMINISTIC=1``: ask torch for deterministic kernels everywhere (``warn_only``: an op
    without one warns instead of failing) and set cuBLAS's workspace so its GEMMs repeat. Returns whether it did."""
    if os.environ.get(DETERMINISTIC_ENV, "").strip() not in {"1", "true", "yes"}:
        return False
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch  # noqa: PLC0415  (only when asked for)

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    return True




def write(path: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` to ``path`` atomically: a temporary file of its own (one per write: a heartbeat thread and
    a signal handler may write while another write is under way), then ``os.replace``. A reader sees the old
    manifest or the new one, never half of one."""
    atomic_write(path, json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n")


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def update(path: Path, **fields: Any) -> dict[str, Any]:
    m = read(path)
    m.update(fields)
    write(path, m)
    return m


def find_runs(root: str | os.PathLike[str]) -> list[tuple[Path, dict[str, Any]]]:
    """Every run under an outputs folder ``root`` with its manifest, newest first (by ``started``): runs
    (``<experiment>/<run>/manifest.json``; the ``latest`` link is not a run of its own) and sweeps' members
    (``<experiment>/sweeps/<sweep>/<member>/``, and the old layout ``<experiment>/sweep_*/<member>/``). A manifest
    that cannot be read is listed as ``{}``."""
    root = Path(root)

    def load(mpath: Path) -> dict[str, Any]:
        try:
            m = read(mpath)
        except (OSError, ValueError):
            return {}
        return m if isinstance(m, dict) else {}

    runs = [(mp.parent, load(mp)) for mp in root.glob("*/*/manifest.json") if not mp.parent.is_symlink()]
    for pattern in ("*/sweeps/*/*/manifest.json", "*/sweep_*/*/manifest.json"):
        runs += [(mp.parent, load(mp)) for mp in root.glob(pattern)]
    return sorted(runs, key=lambda r: (str(r[1].get("started") or ""), str(r[0])), reverse=True)


def base_manifest(*, experiment: str, preset: str | None, run_name: str, params: dict[str, Any],
                  overrides: list[str] | tuple[str, ...] = (), project: Path | None = None,
                  data_root: str | None = None, status: str = "running") -> dict[str, Any]:
    return {
        "experiment": experiment,
        "preset": preset,
        "run_name": run_name,
        "status": status,
        "params": params,
        "overrides": list(overrides),
        "seeds": {"seed": params.get("seed")},
        "data_root": data_root,
        "git": git_info(project) if project else None,
        "versions": package_versions(),
        "device": device_info(),
        "platform": {"system": platform.platform(), "executable": sys.executable},
        "started": (started := utcnow()),
        "finished": None,
        "duration_s": None,
        "steps": {},
        "error": None,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "heartbeat": started,
        "last_cell": None,
    }


#: How often (seconds) a live runner refreshes its manifest's ``heartbeat`` besides after every cell.
HEARTBEAT_EVERY_S = 30.0
#: A ``running`` manifest written on another host is ``interrupted`` once its heartbeat is this old (seconds):
#: 10 minutes, twenty missed heartbeats (a busy shared disk or a clock a little off never reads as a dead run).
HEARTBEAT_STALE_S = 600.0


def process_gone(pid: Any) -> bool:
    """Whether no live process of this host has id ``pid``: ``os.kill(pid, 0)`` raises ``ProcessLookupError``, or
    ``/proc`` says it is a zombie (dead, not yet reaped by its parent). Someone else's process
    (``PermissionError``) is alive. Not asked on Windows, where ``os.kill`` would end the process: ``False``."""
    if os.name != "posix" or isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: a process of another user
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def parse_time(text: Any) -> _dt.datetime | None:
    """A manifest's ISO time (``started``, ``heartbeat``) as an aware datetime (UTC when it names no zone), or
    ``None``."""
    try:
        t = _dt.datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def observed_status(m: dict[str, Any], *, now: _dt.datetime | None = None,
                    host: str | None = None) -> tuple[str, str]:
    """``(status, why)``: the manifest's status, except that a ``running`` run whose process is gone is
    ``interrupted`` (rule: module docstring); ``why`` says how that was seen (``""`` otherwise)."""
    status = str(m.get("status") or "?")
    if status != "running":
        return status, ""
    host = socket.gethostname() if host is None else host
    pid = m.get("pid")
    if m.get("host") == host and pid is not None and os.name == "posix":
        if process_gone(pid):
            return "interrupted", f"its process {pid} on {host} is gone"
        return status, ""
    beat = parse_time(m.get("heartbeat") or m.get("started"))
    if beat is None:
        return status, ""
    age = ((now or _dt.datetime.now(_dt.timezone.utc)) - beat).total_seconds()
    if age > HEARTBEAT_STALE_S:
        where = f" on {m['host']}" if m.get("host") else ""
        return "interrupted", f"no heartbeat{where} for {age / 60:.0f} min (limit {HEARTBEAT_STALE_S / 60:.0f} min)"
    return status, ""


def last_cell_text(m: dict[str, Any]) -> str:
    """``"cell 5/12 (Training)"``: the run's last completed cell, 1-based, and its section; ``""`` when none."""
    cell = m.get("last_cell")
    if not isinstance(cell, dict) or cell.get("index") is None:
        return ""
    of = f"/{cell['of']}" if cell.get("of") else ""
    heading = f" ({cell['heading']})" if cell.get("heading") else ""
    return f"cell {int(cell['index']) + 1}{of}{heading}"
