"""Benchmark results that stay: one JSON per benchmark, a log-log scaling plot where it measures growth,
and ``benchmarks/results/README.md`` regenerated from every JSON (never typed).

Each ``bench_<name>.py`` ends with :func:`record`, which writes ``benchmarks/results/<name>.json``::

    {"name", "seconds", "n", "ratio", "max_abs_diff", "peak_rss_mb", "commit", "machine", "date", ...}

- ``ratio`` = our time / the reference's time, measured in the same process and interleaved, the *worst*
  (largest) of the settings the benchmark tries; ``null`` where the benchmark has no reference.
- ``budget_s`` / ``budget_ratio`` where the issue sets an absolute target (``seconds / budget_s``).
- ``max_abs_diff`` where our numbers are compared with the reference's.
- ``commit`` is ``git rev-parse --short HEAD``, with ``+dirty`` when ``lib/`` or ``benchmarks/`` had
  uncommitted changes (such a figure does not belong to that commit).

:func:`scaling_plot` fits ``log(seconds) = slope · log(n) + c`` by least squares per series and writes
``<name>_scaling.png`` with the slope in the legend: 1 is linear growth, 2 quadratic.
"""

from __future__ import annotations

import datetime as _dt
import json
import resource
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]


def commit() -> str:
    """Short HEAD commit, ``+dirty`` when ``lib/`` or ``benchmarks/`` differ from it; ``unknown`` outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "lib", "benchmarks"], capture_output=True,
                               text=True, cwd=REPO).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    # the results folder itself is rewritten by every benchmark: it does not make a figure dirty
    dirty = [ln for ln in dirty.splitlines() if "benchmarks/results/" not in ln]
    return sha + ("+dirty" if dirty else "")


def machine() -> str:
    """``<arch>, <n> cores, <CPU model>`` (:func:`radaudit.manifest.machine_description`). The CPU model is there
    because one figure is not comparable with another taken on another CPU: ``bench_score`` took 39.2 s on one
    2-core machine (AMD, F.linear at 56 GFLOP/s per core) and 15.2 s, same code, on an Intel Xeon."""
    from radaudit.manifest import machine_description

    return machine_description()


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.4g}") if abs(x) < 1e-3 and x != 0 else round(x, 4)
    if isinstance(x, Mapping):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_round(v) for v in x]
    return x


def record(name: str, *, seconds: float, n: int, unit: str = "items", ratio: float | None = None,
           max_abs_diff: float | None = None, budget_s: float | None = None, folder: Path = RESULTS,
           **extra: Any) -> dict[str, Any]:
    """Write ``<folder>/<name>.json`` and regenerate ``<folder>/README.md``; returns the record.

    ``ratio`` must be ours / reference (the worst setting); ``budget_s`` adds ``budget_ratio``. Extra keys
    (settings, per-setting ratios, scaling points) are kept as given.
    """
    if not name or "/" in name:
        raise ValueError(f"benchmark name must be a plain file stem, got {name!r}")
    out: dict[str, Any] = {"name": name, "seconds": seconds, "n": int(n), "unit": unit, "ratio": ratio,
                           "max_abs_diff": max_abs_diff}
    if budget_s is not None:
        out["budget_s"] = budget_s
        out["budget_ratio"] = seconds / budget_s
    out.update(extra)
    out.update({"peak_rss_mb": peak_rss_mb(), "commit": commit(), "machine": machine(),
                "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")})
    out = _round(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    write_readme(folder)
    return out


def fit_slope(xs: Sequence[float], ys: Sequence[float], decades: float | None = 1.5) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (the exponent k of ``y ∝ xᵏ``); NaN with < 2 points.

    ``decades``: fit only the points within this many decades of the largest x (at least two points), where
    the work grows and fixed costs (imports, thread start-up, a first batch) no longer flatten the curve;
    ``None`` fits every point.
    """
    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    if decades is not None and len(x) > 2:
        keep = x >= x.max() - decades * np.log(10)
        if keep.sum() < 2:
            keep = x >= np.sort(x)[-2]
        x, y = x[keep], y[keep]
    if len(x) < 2 or np.ptp(x) == 0:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def scaling_plot(name: str, series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, xlabel: str,
                 ylabel: str = "seconds (wall)", title: str | None = None, folder: Path = RESULTS) -> dict[str, float]:
    """Log-log plot of each ``label -> (n, seconds)`` series with its fitted slope (:func:`fit_slope`, over the
    top 1.5 decades of n) in the legend, saved as ``<folder>/<name>_scaling.png``. A dotted line of slope 1 through each series' first point shows what
    linear growth would look like. Returns ``{label: slope}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slopes: dict[str, float] = {}
    fig, ax = plt.subplots(figsize=(5.6, 4.0), dpi=120)
    for label, (xs, ys) in series.items():
        slope = fit_slope(xs, ys)
        slopes[label] = slope
        (line,) = ax.plot(xs, ys, marker="o", label=f"{label} (slope {slope:.2f})")
        x0, y0 = float(xs[0]), float(ys[0])
        ax.plot([x0, float(xs[-1])], [y0, y0 * float(xs[-1]) / x0], linestyle=":", color=line.get_color(), alpha=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    sizes = sorted({float(x) for xs, _ in series.values() for x in xs})
    ax.set_xticks(sizes)  # one tick per measured size, written out ("10,000", not "10^4")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    # minor y labels at 2x and 5x each power of ten only: every minor tick labelled crowds the axis
    ax.yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if v > 0 and round(v / 10 ** np.floor(np.log10(v)), 6) in (2.0, 5.0) else ""))
    ax.tick_params(axis="both", which="both", labelsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title or f"{name}: cost against size", fontsize=9, wrap=True)
    ax.text(0.99, 0.01, "dotted: slope 1 (linear growth) from the first point", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=7, color="0.35")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}_scaling.png")
    plt.close(fig)
    return slopes


def _fmt(x: Any, fmt: str = "{:.3g}") -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else fmt.format(x)


def render_readme(folder: Path = RESULTS) -> str:
    """``README.md`` of the results folder from every benchmark JSON in it (sorted by name)."""
    rows, figures, other = [], [], []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("name") != path.stem or "seconds" not in data:
            other.append(path.name)  # a quality benchmark's results (its own .md explains it)
            continue
        target = (f"{_fmt(data.get('budget_ratio'), '{:.2f}')}× of {data['budget_s']:g} s" if data.get("budget_s")
                  else "–")
        rows.append(f"| `{data['name']}` | {_fmt(data.get('ratio'), '{:.2f}')} | {target} | "
                    f"{_fmt(data['seconds'], '{:.2f}')} | {data['n']:,} | {_fmt(data.get('max_abs_diff'), '{:.1e}')} | "
                    f"{_fmt(data.get('peak_rss_mb'), '{:.0f}')} | {data.get('commit', '–')} | {data.get('machine', '–')} | {data.get('date', '–')} |")
        png = folder / f"{data['name']}_scaling.png"
        if png.exists():
            slopes = ", ".join(f"{k} {v:.2f}" for k, v in (data.get("slopes") or {}).items())
            figures.append(f"- [`{png.name}`]({png.name}) — commit {data['commit']}; fitted log-log slopes: "
                           f"{slopes or 'n/a'}")
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (each `benchmarks/bench_<name>.py` writes `<name>.json`; this file is regenerated "
        "from them, never edited by hand). `ratio` is our time / the reference's, run in the same process and "
        "interleaved — the worst of the settings tried; `target` is seconds / the issue's budget. A commit "
        "ending in `+dirty` was measured with uncommitted changes.",
        "",
        "| benchmark | ratio | target | seconds | n | max abs diff | peak RSS MiB | commit | machine | date |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "## Scaling figures",
        "",
        *(figures or ["(none yet)"]),
    ]
    if other:
        lines += ["", "## Other results", "", "Quality benchmarks with their own write-ups (`.md` beside each): "
                  + ", ".join(f"`{o}`" for o in other) + "."]
    return "\n".join(lines) + "\n"


def write_readme(folder: Path = RESULTS) -> Path:
    path = folder / "README.md"
    path.write_text(render_readme(folder), encoding="utf-8")
    return path


#: the speed lines of docs/speed.md: (results file stem, what it measures) in the order shown
SPEED_LINES = (
    ("association", "CAD + WAE, 1,000 bootstrap + 1,000 permutation replicates"),
    ("atomic", "AtomiMed rule backend"),
    ("bertscore", "BERTScore against `bert_score` (same model, pairs and process)"),
    ("score", "`radaudit score`: BLEU, BERTScore, AtomiMed x 2 group columns, 1,000 BCa replicates"),
    ("image_features", "InceptionV3 FID features against decoding every image first"),
    ("bootstrap", "`radaudit.stats.bootstrap_ci` against `scipy.stats.bootstrap`"),
)


def _load(folder: Path, stem: str) -> dict[str, Any] | None:
    """``<folder>/<stem>.json`` as a dict, or None when it does not exist."""
    path = folder / f"{stem}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def render_speed_block(folder: Path = RESULTS) -> str:
    """The ``<!-- bench:speed -->`` block (docs/speed.md): one line per benchmark, from its results file only."""
    found = [d for d in (_load(folder, stem) for stem, _ in SPEED_LINES) if d is not None]
    machines = sorted({d.get("machine", "?") for d in found})
    on = machines[0] if len(machines) == 1 else "several machines (each line's file names its own)"
    lines = [f"Measured by `make bench` on {on} (`benchmarks/results/README.md` has every figure, its commit "
             "and the scaling plots; figures from another CPU are not comparable):", ""]
    for stem, what in SPEED_LINES:
        d = _load(folder, stem)
        if d is None:
            lines.append(f"- {what}: not measured yet (`python benchmarks/bench_{stem}.py`).")
            continue
        parts = [f"{d['seconds']:.2f} s for {d['n']:,} {d.get('unit', 'items')}"]
        if d.get("ratio") is not None:
            parts.append(f"ratio to the reference {d['ratio']:.2f}" + (f" ({d['worst_setting']}, the worst setting)"
                                                                         if d.get("worst_setting") else ""))
        if d.get("budget_s"):
            parts.append(f"{d['seconds'] / d['budget_s']:.2f}x the {d['budget_s']:g} s target")
        if d.get("max_abs_diff") is not None:
            parts.append(f"max |diff| {d['max_abs_diff']:.1e}")
        if d.get("floor_ratio") is not None:
            parts.append(f"float32 floor {d['floor_ratio']:.2f} (the linear layers alone at the GEMM rate measured "
                         "alongside)")
        if d.get("floor_ratio_encoder") is not None:
            parts.append(f"{d['floor_ratio_encoder']:.2f}x the encoder's forward passes alone, timed in the same process "
                         f"(target {d.get('floor_target_encoder', 1.2):g}x)")
        if d.get("slopes"):
            many = len(d["slopes"]) > 1
            parts.append("log-log slope " + ", ".join((f"{k} " if many else "") + f"{v:.2f}" for k, v in d["slopes"].items()))
        lines.append(f"- {what}: " + "; ".join(parts) + f" (commit {d.get('commit', '?')}).")
    return "\n".join(lines) + "\n"


DEMO_KINDS = (("fresh", "from a fresh clone (`make install`, then every stand-in model trained and every generation made)"),
              ("cached", "again right after, with every cache present"),
              ("bundle", "from a fresh clone given a cache bundle of another clone's trained stand-ins (`make install`, "
                         "then `make demo DEMO_BUNDLE=FILE`: nothing trained; see "
                         "[cache bundles](reliability.md#cache-bundles-train-once-hand-out))"))


def _training_note(d: dict) -> str:
    """The fresh run's training share (``demo_timings.py``'s ``training_seconds``), or nothing when none was trained."""
    training, total = d.get("training_seconds"), d.get("notebook_seconds_sum")
    if not training or not total:
        return ""
    rest = total - training
    jobs = d.get("jobs") or (2 if d.get("parallel") else 1)  # records before `jobs` was kept: make demo's default
    return (f" Training the {d.get('training_models', '?')} stand-in models took {training / 60:.1f} of those "
            f"{total / 60:.1f} notebook minutes (the models' own records); the rest, {rest / 60:.1f} min, run "
            f"{jobs} at a time, would take at least {rest / jobs / 60:.1f} min even if training were free.")


def _reference_note(d: dict[str, Any]) -> str:
    """`` That is N reference units ...``: the demo time over the fixed workload timed beside it, when recorded."""
    if not d.get("reference_seconds"):
        return ""
    if d.get("reference_seconds_before"):
        lo, hi = d["reference_units_range"]
        took = (f"took {d['reference_seconds_before']:.2f} s before the runs and {d['reference_seconds_after']:.2f} s "
                f"after, in the same process as the record; {lo:g}-{hi:g} units by either alone")
    else:
        took = f"took {d['reference_seconds']:.2f} s in the same process"
    return (f" That is {d['reference_units']:g} reference units (the fixed training workload of "
            f"`benchmarks/_reference.py` {took}): compare machines by this ratio, not by the minutes.")


def render_demo_block(folder: Path = RESULTS) -> str:
    """The ``<!-- bench:demo -->`` block (docs/speed.md; its link is relative to docs/): ``make demo``'s wall time,
    from ``demo_<kind>.json`` (``benchmarks/demo_timings.py``), per experiment and with the slowest cells of the cached run."""
    lines = []
    for kind, what in DEMO_KINDS:
        d = _load(folder, f"demo_{kind}")
        if d is None:
            lines.append(f"- `make demo` {what}: not measured yet (`python benchmarks/demo_timings.py --kind {kind}`).")
            continue
        install = f"install {d['install_seconds'] / 60:.1f} min, " if d.get("install_seconds") else ""
        if d.get("import_seconds"):
            install += f"bundle import {d['import_seconds']:.0f} s, "
        parts = ", ".join(f"{e} {s / 60:.1f}" for e, s in d["per_experiment"].items())
        overlap = (f"; they ran side by side, {d['notebook_seconds'] / 60:.1f} min of wall clock for "
                   f"{d['notebook_seconds_sum'] / 60:.1f} min of notebooks" if d.get("parallel") else "")
        lines.append(f"- `make demo` {what}: **{d['seconds'] / 60:.1f} min**, {d['budget_ratio']:.2f}x the "
                     f"{d['budget_s'] / 60:g} min target ({install}notebooks in minutes: {parts}{overlap}; runs of commit "
                     f"{d.get('run_commit', '?')} on {d.get('machine', '?')}, {d.get('date', '?')}).{_training_note(d)}"
                     f"{_reference_note(d)}")
    cached = _load(folder, "demo_cached")
    if cached is not None:
        cells = cached.get("slowest_cells") or []
        if cells:
            lines += ["", "The slowest cells of the cached run (`radaudit timings --preset demo`):", "",
                      "| experiment | section | cell | seconds | code |", "| --- | --- | --- | --- | --- |"]
            lines += [f"| {c['experiment']} | {c['section']} | {c['cell']} | {c['seconds']:.1f} | "
                      f"`{c['code'].replace('|', '&#124;')}` |" for c in cells]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # `python benchmarks/_results.py --readme`: rewrite results/README.md and the docs' blocks
    import sys

    write_readme()
    if "--readme" in sys.argv:
        from _readme import write_block

        write_block("speed", render_speed_block())
        write_block("demo", render_demo_block())
