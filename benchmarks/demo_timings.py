"""`make demo`'s wall time, recorded from its runs like a benchmark (issue 44: <= 15 min from a fresh clone on a 2-core
machine, install included, <= 1.5 min again with its caches present; issue 25's 8 min cold target was retired with the
weights bundle).

    make demo && .venv/bin/python benchmarks/demo_timings.py --kind fresh --install-seconds 84   # a new clone
    make demo && .venv/bin/python benchmarks/demo_timings.py --kind cached                       # right after
    make demo DEMO_BUNDLE=b.tar.gz && .venv/bin/python benchmarks/demo_timings.py --kind bundle \
        --install-seconds 84 --import-seconds 3                                                   # a new clone + bundle

Reads the newest succeeded ``demo`` run of each experiment under ``--outputs`` (``radaudit.timings.latest_runs``),
takes the wall clock from the first run's start to the last run's end (``make demo`` runs ``DEMO_JOBS`` notebooks at
a time, so their ``duration_s`` overlap; the sum is kept as ``notebook_seconds_sum``) and writes
``benchmarks/results/demo_<kind>.json``: ``seconds`` (the notebooks, plus ``--install-seconds`` for a fresh clone:
``make install``'s wall time, which the runs cannot see), ``per_experiment`` seconds, ``runs``, ``slowest_cells``
(the ten slowest cells of those runs, ``radaudit timings``), ``budget_s`` (900 fresh and bundle, 90 cached), then
the README's speed lines. Which kind a run was is the caller's word: *fresh* = a new clone with empty caches (the
stand-in models are trained, the generations made); *cached* = ``make demo`` again with every cache present;
*bundle* = a new clone whose ``make demo`` first imports a cache bundle (``radaudit cache export`` on another
clone; ``--import-seconds``: the import's wall time, which ``radaudit cache import`` prints).
The script refuses runs that are not all on the same commit, or fewer than every experiment.

``training_seconds`` (``--cache``, default the project's cache folder): the seconds the runs spent training stand-in
models, summed from the records of every model folder in the cache whose record was written between the first run's
start and the last run's end (:func:`radaudit.models.bundle.training_seconds`; ``training_models`` counts them). On a
fresh clone that is every model; with caches present, or with a bundle, none. It is notebook time (inflated, like the
per-experiment times, by the notebooks beside it), so ``notebook_seconds_sum - training_seconds`` is what the
notebooks would cost if the stand-ins were free: the fresh clone's floor without a bundle, whatever else is made faster.

``reference_units`` (unless ``--no-reference``): ``seconds`` divided by the time this process takes, right after the
runs, for a fixed training workload (``benchmarks/_reference.py``): minutes move with the machine (1.7x between two
states of one machine here), the ratio much less, so two records from different machines compare by it. The
workload timed once moved ~5% within an hour on an idle machine, so time it before the runs as well
(``python benchmarks/_reference.py --out FILE``, then ``--reference-before FILE``): the units then use the mean and the
record keeps both times.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _readme import write_block  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _results import record, render_demo_block  # noqa: E402

BUDGETS_S = {"fresh": 900.0, "cached": 90.0, "bundle": 900.0}


def wall_span(manifests) -> float | None:
    """Seconds from the first run's start to the last run's end (the manifests' ``started`` / ``finished``): the
    notebooks' wall clock, whether they ran one after another or ``--jobs`` at a time; ``None`` when a time is
    missing or unreadable (then the durations are summed)."""
    from datetime import datetime

    try:
        starts = [datetime.fromisoformat(m["started"]) for m in manifests]
        ends = [datetime.fromisoformat(m["finished"]) for m in manifests]
    except (KeyError, TypeError, ValueError):
        return None
    return (max(ends) - min(starts)).total_seconds() if starts else None


def trained_during(cache: Path, manifests) -> tuple[float, int]:
    """``(seconds, n)``: the training time recorded by the model folders of ``cache`` whose record was written while
    the runs of ``manifests`` ran (module docstring), and how many folders that is."""
    from datetime import datetime

    from radaudit.models.bundle import KINDS, cache_entries, training_record

    try:
        start = min(datetime.fromisoformat(m["started"]).timestamp() for m in manifests)
        end = max(datetime.fromisoformat(m["finished"]).timestamp() for m in manifests)
    except (KeyError, TypeError, ValueError):
        return 0.0, 0
    total, n = 0.0, 0
    for kind in (k for k, layout in KINDS.items() if layout == "folders"):
        for folder in cache_entries(cache, kind):
            rec = training_record(folder)
            if rec is not None and start <= rec[1].stat().st_mtime <= end + 1:
                total, n = total + rec[0], n + 1
    return round(total, 1), n


def demo_record(outputs: Path, kind: str, install_seconds: float | None = None,
                import_seconds: float | None = None, cache: Path | None = None, jobs: int = 2,
                reference: dict | None = None, reference_before: dict | None = None) -> dict:
    """The fields :func:`_results.record` gets for ``demo_<kind>`` (see the module docstring); with ``reference``
    (:func:`_reference.reference_seconds`'s dict, timed after the runs), also ``reference_seconds``,
    ``reference_workload`` and ``reference_units`` = ``seconds / reference_seconds``. With ``reference_before`` too
    (the same workload timed before the runs, ``benchmarks/_reference.py --out FILE``), ``reference_seconds`` is the
    mean of the two, both are kept (``reference_seconds_before`` / ``_after``), and ``reference_units_range`` gives
    the units by either alone: how much the machine itself moved while the demo ran."""
    from radaudit.experiments import EXPERIMENTS
    from radaudit.models.cache import default_cache_dir
    from radaudit.timings import latest_runs, slowest_cells

    if kind not in BUDGETS_S:
        raise SystemExit(f"--kind must be one of {sorted(BUDGETS_S)}, got {kind!r}.")
    runs = latest_runs(outputs, preset="demo")
    manifests = {r.parent.name: json.loads((r / "manifest.json").read_text(encoding="utf-8")) for r in runs}
    missing = sorted(set(EXPERIMENTS) - set(manifests))
    if missing:
        raise SystemExit(f"No succeeded demo run of {missing} under {outputs}: run `make demo` first.")
    commits = {(m.get("git") or {}).get("commit", "?")[:7] + ("+dirty" if (m.get("git") or {}).get("dirty") else "")
               for m in manifests.values()}
    if len(commits) > 1:
        raise SystemExit(f"The latest demo runs come from several commits ({sorted(commits)}): one `make demo` "
                         "is one commit; run it again.")
    per = {e: round(float(m["duration_s"]), 1) for e, m in sorted(manifests.items())}
    total = sum(per.values())
    span = wall_span(manifests.values())
    notebooks = span if span is not None else total
    seconds = notebooks + (install_seconds or 0.0) + (import_seconds or 0.0)
    cells = slowest_cells(runs, top=10)
    training, n_models = trained_during(cache if cache is not None else default_cache_dir(), manifests.values())
    ref = {}
    if reference is not None:
        timed = [r for r in (reference_before, reference) if r is not None]
        for r in timed:
            if not r.get("seconds", 0) > 0:
                raise SystemExit(f"The reference workload's time must be positive, got {r.get('seconds')!r}.")
        if reference_before is not None and reference_before.get("workload") != reference["workload"]:
            raise SystemExit("The reference workload timed before the runs is not the one timed after "
                             f"({reference_before.get('workload')!r}); time it again with this checkout.")
        mean = sum(r["seconds"] for r in timed) / len(timed)
        ref = {"reference_seconds": round(mean, 3), "reference_workload": reference["workload"],
               "reference_units": round(seconds / mean, 1)}
        if reference_before is not None:
            ref.update(reference_seconds_before=reference_before["seconds"], reference_seconds_after=reference["seconds"],
                       reference_units_range=[round(seconds / max(r["seconds"] for r in timed), 1),
                                              round(seconds / min(r["seconds"] for r in timed), 1)])
    return {"seconds": seconds, "n": len(per), "unit": "notebooks", "budget_s": BUDGETS_S[kind], **ref,
            "notebook_seconds": round(notebooks, 1), "notebook_seconds_sum": round(total, 1),
            "parallel": span is not None and span < 0.95 * total,
            "training_seconds": training, "training_models": n_models, "jobs": int(jobs),
            "kind": kind, "install_seconds": install_seconds, "import_seconds": import_seconds, "per_experiment": per,
            "runs": {r.parent.name: r.name for r in sorted(runs)},
            "run_commit": commits.pop(),
            "slowest_cells": [{"experiment": c.experiment, "section": c.section, "cell": int(c.cell),
                               "seconds": round(float(c.seconds), 1), "code": c.code} for c in cells.itertuples()]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", required=True, choices=sorted(BUDGETS_S))
    ap.add_argument("--outputs", type=Path, default=Path(__file__).resolve().parents[1] / "outputs")
    ap.add_argument("--install-seconds", type=float, default=None,
                    help="make install's wall time, for a fresh clone (the runs cannot see it)")
    ap.add_argument("--import-seconds", type=float, default=None,
                    help="the bundle import's wall time, for --kind bundle (radaudit cache import prints it)")
    ap.add_argument("--cache", type=Path, default=None, help="the cache folder the runs used (default: the project's)")
    ap.add_argument("--jobs", type=int, default=2, help="the DEMO_JOBS the runs had (make demo's default: 2)")
    ap.add_argument("--no-reference", action="store_true",
                    help="do not time the fixed reference workload (benchmarks/_reference.py) beside the record")
    ap.add_argument("--reference-before", type=Path, default=None,
                    help="the reference workload timed before the runs (`python benchmarks/_reference.py --out FILE`): "
                         "the units then use the mean of before and after, and the record keeps both")
    args = ap.parse_args(argv)
    reference = before = None
    if not args.no_reference:
        from _reference import reference_seconds  # noqa: E402

        reference = reference_seconds()
        if args.reference_before is not None:
            before = json.loads(args.reference_before.read_text(encoding="utf-8"))
    fields = demo_record(args.outputs, args.kind, args.install_seconds, args.import_seconds, args.cache, args.jobs,
                         reference, before)
    out = record(f"demo_{args.kind}", **fields)
    write_block("demo", render_demo_block())
    print(f"make demo ({args.kind}): {out['seconds'] / 60:.1f} min for {out['n']} notebooks "
          f"({out['budget_ratio']:.2f} x the {out['budget_s'] / 60:g} min target)")
    for e, s in out["per_experiment"].items():
        print(f"  {e:18s} {s / 60:5.1f} min")


if __name__ == "__main__":
    sys.exit(main())
