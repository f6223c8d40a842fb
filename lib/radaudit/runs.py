"""The runs under an outputs folder, for a terminal: ``radaudit runs`` lists them, ``radaudit open`` finds one's report.

One record per run (:func:`run_record`): experiment, run folder name, preset, status, commit and dirty flag,
start time, duration and the headline findings. The status is the manifest's as
:func:`radaudit.manifest.observed_status` sees it (``succeeded`` reads ``ok``): a ``running`` run whose process is
gone (killed outright: SIGKILL, out of memory, a lost machine) is ``interrupted``, with the last cell it completed.
A run may be named (:func:`resolve_run`) by its folder name, ``<experiment>/<run>``, its path under the outputs
folder (a sweep's member: ``<experiment>/sweeps/<sweep>/<member>``), ``latest`` (the newest run with a report) or
``<experiment>/latest``.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import socket
from pathlib import Path
from typing import Any

from radaudit import manifest
from radaudit.errors import RadauditError
from radaudit.findings import FINDINGS_FILE
from radaudit.html_page import fmt_number

__all__ = ["STATUSES", "finding_text", "format_runs", "list_runs", "report_of", "resolve_run", "run_record"]

#: What ``radaudit runs`` shows (and ``--status`` takes): the manifest's ``succeeded`` reads ``ok``.
STATUSES = ("running", "ok", "failed", "interrupted", "interactive")
_SHOWN = {"succeeded": "ok"}


def _findings(run_dir: Path, top: int) -> list[dict[str, Any]] | None:
    """The first ``top`` findings of the run's findings.json (``None``: no such file, or unreadable)."""
    try:
        doc = manifest.read(run_dir / FINDINGS_FILE)
    except (OSError, ValueError):
        return None
    found = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(found, list):
        return None
    return [{k: f.get(k) for k in ("id", "value", "ci", "verdict")} for f in found[:top] if isinstance(f, dict)]


def _seconds(m: dict[str, Any], status: str, now: _dt.datetime) -> float | None:
    """The run's duration: the manifest's; for a run without one, from its start to now (running) or to its last
    heartbeat (interrupted)."""
    if isinstance(m.get("duration_s"), (int, float)):
        return float(m["duration_s"])
    start = manifest.parse_time(m.get("started"))
    end = now if status == "running" else manifest.parse_time(m.get("heartbeat") or m.get("started"))
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def run_record(root: Path, run_dir: Path, m: dict[str, Any], *, top: int = 3, now: _dt.datetime | None = None,
               host: str | None = None) -> dict[str, Any]:
    """One run as ``radaudit runs --json`` prints it (module docstring)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    observed, why = manifest.observed_status(m, now=now, host=host)
    status = _SHOWN.get(observed, observed)
    git = m.get("git") or {}
    experiment = m.get("experiment") or run_dir.parent.name
    report = run_dir / f"{experiment}.html"
    return {
        "experiment": experiment,
        "run": run_dir.name,
        "path": run_dir.relative_to(root).as_posix(),
        "preset": m.get("preset") or ("interactive" if m.get("status") == "interactive" else None),
        "status": status,
        "manifest_status": m.get("status"),
        "why": why,
        "signal": m.get("signal"),
        "last_cell": manifest.last_cell_text(m) or None,
        "pid": m.get("pid"),
        "host": m.get("host"),
        "heartbeat": m.get("heartbeat"),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "started": m.get("started"),
        "duration_s": _seconds(m, observed, now),
        "findings": _findings(run_dir, top),
        "report": str(report) if report.is_file() else None,
        "run_dir": str(run_dir),
    }


def list_runs(root: str | Path, *, experiment: str | None = None, preset: str | None = None,
              status: str | None = None, limit: int | None = 20, top: int = 3) -> list[dict[str, Any]]:
    """The runs under ``root``, newest first, as :func:`run_record` dicts, filtered (``status`` as shown:
    ``ok``, not ``succeeded``) and cut to ``limit`` (``None``: all)."""
    root = Path(root)
    if status == "succeeded":
        status = "ok"
    now, host = _dt.datetime.now(_dt.timezone.utc), socket.gethostname()
    out = []
    for run_dir, m in manifest.find_runs(root):
        if experiment and (m.get("experiment") or run_dir.parent.name) != experiment:
            continue
        if preset and m.get("preset") != preset:
            continue
        rec = run_record(root, run_dir, m, top=top, now=now, host=host)
        if status and rec["status"] != status:
            continue
        out.append(rec)
        if limit is not None and len(out) >= limit:
            break
    return out


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{s}s"


def _number(x: Any) -> str:
    return fmt_number(x) if not (isinstance(x, float) and math.isinf(x)) else str(x)


def finding_text(f: dict[str, Any]) -> str:
    """``auroc=0.812 [0.74, 0.88] shown``."""
    ci = f.get("ci")
    interval = f" [{_number(ci[0])}, {_number(ci[1])}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
    return f"{f.get('id')}={_number(f.get('value'))}{interval} {f.get('verdict') or ''}".rstrip()


def format_runs(records: list[dict[str, Any]]) -> list[str]:
    """The lines ``radaudit runs`` prints: a header, then per run a row and an indented line of findings (and one
    saying where an interrupted or running run got to)."""
    if not records:
        return []
    rows = [("STARTED (UTC)", "EXPERIMENT", "RUN", "PRESET", "STATUS", "COMMIT", "DURATION")]
    for r in records:
        commit = (r["commit"] or "?")[:8] + ("+dirty" if r["dirty"] else "")
        rows.append(((r["started"] or "?")[:16].replace("T", " "), r["experiment"], r["run"], r["preset"] or "-",
                     r["status"], commit, _clock(r["duration_s"])))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]

    def line(row: tuple[Any, ...]) -> str:
        return "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()

    out = [line(rows[0])]
    for r, row in zip(records, rows[1:], strict=True):
        out.append(line(row))
        if r["status"] in {"interrupted", "running"}:
            where = (f"after {r['last_cell']}" if r["status"] == "interrupted" else f"{r['last_cell']} done") \
                if r["last_cell"] else "before its first cell completed"
            how = f"by {r['signal']}" if r["signal"] and r["status"] == "interrupted" else r["why"]
            out.append(f"    {r['status']} {where}" + (f": {how}" if how else ""))
        found = r["findings"]
        out.append("    " + ("; ".join(finding_text(f) for f in found) if found else "no findings"))
    return out


def report_of(run_dir: Path, m: dict[str, Any] | None = None) -> Path:
    """The run's HTML report (``<run>/<experiment>.html``); a :class:`RadauditError` saying why when it has none."""
    m = m if m is not None else (manifest.read(run_dir / "manifest.json") if (run_dir / "manifest.json").is_file() else {})
    experiment = m.get("experiment") or run_dir.parent.name
    html = run_dir / f"{experiment}.html"
    if html.is_file():
        return html
    status, _ = manifest.observed_status(m)
    nb = run_dir / f"{experiment}.ipynb"
    raise RadauditError(f"The run {run_dir} ({_SHOWN.get(status, status)}) has no report: the runner writes it when the "
                        "notebook ends." + (f" Its executed notebook so far: {nb}" if nb.is_file() else ""))


def resolve_run(root: str | Path, spec: str) -> Path:
    """The run folder ``spec`` names under ``root`` (module docstring). Unknown or ambiguous: a
    :class:`RadauditError` listing the close matches."""
    root = Path(root)
    spec = spec.strip().strip("/")
    runs = manifest.find_runs(root)
    if not runs:
        raise RadauditError(f"No runs under {root}: run one first (radaudit run <experiment>).")
    with_report = [(d, m) for d, m in runs if (d / f"{m.get('experiment') or d.parent.name}.html").is_file()]
    if spec == "latest":
        if not with_report:
            raise RadauditError(f"No run under {root} has a report yet (radaudit runs lists them).")
        return with_report[0][0]
    if spec.endswith("/latest"):
        experiment = spec[: -len("/latest")]
        link = root / experiment / "latest"
        if link.is_dir():
            return link.resolve()
        mine = [d for d, m in with_report if (m.get("experiment") or d.parent.name) == experiment]
        if mine:
            return mine[0]
        known = sorted({m.get("experiment") or d.parent.name for d, m in runs})
        raise RadauditError(f"No run of {experiment!r} with a report under {root}; experiments with runs: "
                            f"{', '.join(known)}.")
    hits = []
    for d, m in runs:
        rel = d.relative_to(root).as_posix()
        if spec in {d.name, rel, f"{m.get('experiment') or d.parent.name}/{d.name}"}:
            hits.append(rel)
    if len(hits) == 1:
        return root / hits[0]
    if hits:
        raise RadauditError(f"{spec!r} names {len(hits)} runs: " + ", ".join(hits) + ". Name one as <experiment>/<run>.")
    names = sorted({d.relative_to(root).as_posix() for d, _ in runs} | {d.name for d, _ in runs})
    close = difflib.get_close_matches(spec, names, n=5, cutoff=0.5)
    if not close:  # a prefix or a part of a name (a date, a preset) is a close match too
        close = [n for n in names if spec.lower() in n.lower()][:5]
    hint = f" Close matches: {', '.join(close)}." if close else " `radaudit runs` lists them."
    raise RadauditError(f"No run {spec!r} under {root}.{hint}")
