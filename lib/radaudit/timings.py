"""Where a run's time went: seconds per executed notebook cell, per section, and the slowest cells over runs.

papermill writes each code cell's wall time into the executed notebook (``metadata.papermill.duration``). A
cell's **section** is the nearest markdown heading above it (``#`` to ``###``; ``setup`` before the first);
the manifest's ``steps`` are these sections' sums (:func:`section_times`). :func:`slowest_cells` ranks the
cells of several runs (say, the latest demo run of every experiment) so the ones worth speeding up are in
one table; ``radaudit timings`` prints it, and ``make demo`` ends with it.

Times are wall-clock seconds on whatever else the machine was doing: a run made beside another (two
notebooks at once, a test suite) reads slower than it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from radaudit.errors import ParamsError

_HEADING = re.compile(r"^#{1,3}\s+(.+)$", flags=re.M)

CELL_COLUMNS = ["cell", "section", "seconds", "code"]
SLOWEST_COLUMNS = ["experiment", "run", "preset", "section", "cell", "seconds", "share_of_run", "code"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _first_code_line(source: str, width: int = 80) -> str:
    """The cell's first line that is neither blank nor a comment, cut to ``width`` characters."""
    for line in source.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s if len(s) <= width else s[: width - 1] + "…"
    return ""


def heading_above(cells: Iterable[Any], index: int) -> str | None:
    """The section of cell ``index`` of ``cells`` (notebook cells, dicts or nbformat nodes): the nearest markdown
    heading (``#`` to ``###``) at or above it, ``None`` before the first."""
    found = None
    for i, cell in enumerate(cells):
        if i > index:
            break
        if cell.get("cell_type") == "markdown":
            m = _HEADING.search(_source(cell))
            if m:
                found = m.group(1).strip()
    return found


def cell_times(notebook: str | Path) -> pd.DataFrame:
    """One row per code cell papermill timed, in notebook order: ``cell`` (0-based among the code cells),
    ``section`` (the heading above it), ``seconds``, ``code`` (its first code line). A cell that did not run
    (an error above it) has no duration and no row."""
    path = Path(notebook)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ParamsError(f"Cannot read the executed notebook {path}: {err}. Point at a run folder's .ipynb.") from None
    rows, section, index = [], "setup", -1
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            m = _HEADING.search(_source(cell))
            if m:
                section = m.group(1).strip()
        elif cell.get("cell_type") == "code":
            index += 1
            duration = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
            if duration is not None:
                rows.append({"cell": index, "section": section, "seconds": float(duration),
                             "code": _first_code_line(_source(cell))})
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def section_times(notebook: str | Path) -> dict[str, float]:
    """Seconds per section (the sum of its cells, to the millisecond), in notebook order: the manifest's ``steps``."""
    cells = cell_times(notebook)
    out: dict[str, float] = {}
    for section, seconds in zip(cells["section"], cells["seconds"], strict=True):
        out[section] = round(out.get(section, 0.0) + seconds, 3)
    return out


def run_notebook(run_dir: str | Path) -> Path:
    """The executed notebook of a run folder (named in its ``manifest.json``, else its only ``.ipynb``)."""
    run_dir = Path(run_dir)
    try:
        name = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("notebook")
    except (OSError, ValueError):
        name = None
    if name and (run_dir / name).is_file():
        return run_dir / name
    found = sorted(run_dir.glob("*.ipynb"))
    if len(found) != 1:
        raise ParamsError(f"{run_dir} is not a run folder with one executed notebook (found {len(found)} .ipynb files).")
    return found[0]


def slowest_cells(run_dirs: Iterable[str | Path], top: int = 10) -> pd.DataFrame:
    """The ``top`` slowest cells over the given runs, slowest first: ``experiment``, ``run`` (folder name),
    ``preset``, ``section``, ``cell``, ``seconds``, ``share_of_run`` (of the sum of that run's cells), ``code``."""
    if top < 1:
        raise ParamsError(f"top must be at least 1, got {top}.")
    frames = []
    for run_dir in map(Path, run_dirs):
        cells = cell_times(run_notebook(run_dir))
        try:
            m = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            m = {}
        total = float(cells["seconds"].sum())
        frames.append(cells.assign(experiment=m.get("experiment", run_dir.parent.name), run=run_dir.name,
                                   preset=m.get("preset"), share_of_run=cells["seconds"] / total if total else 0.0))
    if not frames:
        return pd.DataFrame(columns=SLOWEST_COLUMNS)
    table = pd.concat(frames, ignore_index=True)[SLOWEST_COLUMNS]
    return table.sort_values("seconds", ascending=False, kind="stable").head(top).reset_index(drop=True)


def latest_runs(outputs: str | Path, preset: str | None = None, experiments: Iterable[str] | None = None) -> list[Path]:
    """The newest succeeded run of each experiment under ``outputs`` (``<experiment>/<run>/manifest.json``),
    of ``preset`` when given, in experiment-name order; sweeps' member runs are not considered."""
    wanted = set(experiments) if experiments is not None else None
    best: dict[str, tuple[str, Path]] = {}
    for mpath in Path(outputs).glob("*/*/manifest.json"):
        if mpath.parent.is_symlink():  # `latest` names a run listed under its own name
            continue
        try:
            m = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        exp = m.get("experiment") or mpath.parent.parent.name
        if m.get("status") != "succeeded" or (preset and m.get("preset") != preset) or (wanted and exp not in wanted):
            continue
        key = str(m.get("started") or mpath.parent.name)
        if exp not in best or key > best[exp][0]:
            best[exp] = (key, mpath.parent)
    return [best[e][1] for e in sorted(best)]
