"""``manifest.json``: what a run was (params, code, environment) and how it went.

Fields: experiment, preset, run_name, status (running | succeeded | failed | interrupted |
interactive), params (after merging), seeds, overrides, data_root, git (commit, dirty, branch),
versions (python and key packages), device, platform, started/finished (UTC ISO), duration_s,
steps (seconds per notebook section), error (for failed runs), outputs (figures and tables written).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

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
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG")}
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
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def update(path: Path, **fields: Any) -> dict[str, Any]:
    m = read(path)
    m.update(fields)
    write(path, m)
    return m


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
        "started": utcnow(),
        "finished": None,
        "duration_s": None,
        "steps": {},
        "error": None,
    }
