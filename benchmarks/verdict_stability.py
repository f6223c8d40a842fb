"""Verdicts over training seeds (issue 40, item 6): does each published verdict hold on another draw?

    .venv/bin/python benchmarks/verdict_stability.py [--experiments decoding_erasure modality_shift synthetic_cxr] [--merge]
        [--seeds 0 1 2] [--preset demo] [--engine ray|serial|auto] [--out benchmarks/results]

For each experiment: ``radaudit sweep <experiment> --preset <preset> --grid seed=0,1,2`` (the seed that
trains the stand-ins, and every other seeded step with it; Ray engine by default, one run per seed),
with ``RADAUDIT_STABILITY=off`` so each seed's verdict is its own. Writes
``<out>/verdict_stability.json``::

    {"name": "verdict_stability", "seeds": [0, 1, 2], "preset": "demo", "commit", "machine", "seconds", ...,
     "experiments": {"<experiment>": {"recipe": "<radaudit.stability.recipe_id>", "sweep": "<folder>",
        "findings": {"<id>": [{"seed": 0, "value": ..., "ci": [lo, hi], "verdict": "shown"}, ...]}}}}

and ``<out>/verdict_stability.md`` (and, when ``<out>`` is the committed results folder, the block of
``docs/stability.md``; ``--render`` rewrites both from the saved JSON): per experiment, a table finding × seed (value
[CI], verdict) and the published verdict over seeds (``shown`` on every seed; else ``partly (k/n seeds)``; the same
other verdict on every seed as it is). A later run of the same recipe carries these verdicts in its ``findings.json``
(:mod:`radaudit.stability`), and :func:`radaudit.findings.settle` lowers a ``shown`` that does not hold on every seed.
A run of another recipe (another preset, a changed training config, changed findings code) gets none: rerun this
benchmark after such a change. ``--merge`` reruns only ``--experiments`` and keeps the saved blocks of the others
(same seeds and preset), each block naming the commit it ran at.
"""

from __future__ import annotations

import os

os.environ["RADAUDIT_STABILITY"] = "off"  # each seed's verdict is its own (set before radaudit is imported)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS, commit, machine, record, write_readme  # noqa: E402

from radaudit.findings import read_findings  # noqa: E402
from radaudit.stability import recipe_id  # noqa: E402
from radaudit.sweep import sweep  # noqa: E402

EXPERIMENTS = ("decoding_erasure", "modality_shift", "synthetic_cxr")


def published_verdict(verdicts: list[str]) -> str:
    """The verdict over seeds: ``shown`` only on every seed; a ``shown`` on some seeds is ``partly (k/n seeds)``;
    a verdict that is the same on every seed is that verdict; anything else ``mixed (...)``."""
    n = len(verdicts)
    k = sum(v == "shown" for v in verdicts)
    if k == n:
        return "shown"
    if k > 0:
        return f"partly ({k}/{n} seeds)"
    if len(set(verdicts)) == 1:
        return verdicts[0]
    return "mixed (" + ", ".join(verdicts) + ")"


def _fmt(x: Any) -> str:
    if x is None:
        return "n/a"
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.3g}"


def experiment_block(experiment: str, preset: str, seeds: list[int], engine: str, data_root: str | None) -> dict:
    """Run the sweep over ``seeds`` and collect every finding's value, CI and verdict per seed."""
    res = sweep(experiment, preset, [f"seed={','.join(str(s) for s in seeds)}"], engine=engine, data_root=data_root,
                progress=False)
    if res.failed:
        bad = res.summary[res.summary["status"] != "succeeded"][["run", "error"]].to_dict("records")
        raise SystemExit(f"{experiment}: a seed's run failed ({bad}); see {res.sweep_dir}")
    findings: dict[str, list[dict[str, Any]]] = {}
    recipes = set()
    for row in res.summary.itertuples(index=False):
        seed = int(getattr(row, "seed"))
        run_dir = res.sweep_dir / row.folder
        manifest = json.loads((run_dir / "manifest.json").read_text())
        recipes.add(recipe_id(experiment, manifest["params"]))
        for f in read_findings(run_dir)["findings"]:
            findings.setdefault(f.id, []).append({"seed": seed, "value": f.value,
                                                  "ci": None if f.ci is None else list(f.ci), "verdict": f.verdict})
    if len(recipes) != 1:
        raise SystemExit(f"{experiment}: the seeds' runs have different recipes {sorted(recipes)}")
    return {"recipe": recipes.pop(), "sweep": str(res.sweep_dir), "commit": commit(), "machine": machine(),
            "findings": findings}


def merged(saved: dict[str, Any] | None, fresh: dict[str, dict], seeds: list[int], preset: str) -> dict[str, dict]:
    """The experiment blocks of a ``--merge`` run: ``fresh`` (the experiments just run) over the blocks of ``saved``
    (the results file before this run) for the others. Each block keeps the commit it ran at (``commit``;
    blocks written before this field take the file's), so the page says which experiment ran when; a saved block
    is kept only when it was run with the same seeds and preset (else :class:`SystemExit`: rerun it too)."""
    if not saved:
        return dict(fresh)
    if list(saved.get("seeds", [])) != list(seeds) or saved.get("preset") != preset:
        raise SystemExit(f"--merge: the saved results were run with seeds {saved.get('seeds')} on "
                         f"{saved.get('preset')!r}, this run with {seeds} on {preset!r}; run every experiment again.")
    out = {}
    for name, block in saved.get("experiments", {}).items():
        out[name] = {"commit": saved.get("commit"), "machine": saved.get("machine"), **block}
    out.update(fresh)
    return out


def markdown(doc: dict[str, Any]) -> str:
    seeds = doc["seeds"]
    lines = [f"# Verdicts over training seeds (`{doc['preset']}`)", "",
             f"Written by `benchmarks/verdict_stability.py` at {doc['commit']} on {doc['machine']}: each experiment "
             f"run once per training seed ({', '.join(map(str, seeds))}); a verdict is published as *shown* only "
             "when it is shown on every seed, else *partly (k/n seeds)*.", ""]
    for name, block in doc["experiments"].items():
        ran = (f"Run at {block['commit']}" + (f" on {block['machine']}" if block.get("machine") else "") + ". "
               if block.get("commit") and block.get("commit") != doc.get("commit") else "")
        lines += [f"## {name}", ""] + ([ran.strip(), ""] if ran else [])
        lines += ["| finding | " + " | ".join(f"seed {s}" for s in seeds) + " | over seeds |",
                  "|---|" + "---|" * (len(seeds) + 1)]
        for fid, rows in block["findings"].items():
            by_seed = {r["seed"]: r for r in rows}
            cells = []
            for s in seeds:
                r = by_seed.get(s)
                if r is None:
                    cells.append("—")
                    continue
                ci = f" [{_fmt(r['ci'][0])}, {_fmt(r['ci'][1])}]" if r["ci"] else ""
                cells.append(f"{_fmt(r['value'])}{ci} *{r['verdict']}*")
            verdicts = [by_seed[s]["verdict"] for s in seeds if s in by_seed]
            lines.append(f"| `{fid}` | " + " | ".join(cells) + f" | **{published_verdict(verdicts)}** |")
        lines.append("")
    return "\n".join(lines)


DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "stability.md"
_DOCS_BLOCK = ("<!-- stability -->\n", "<!-- /stability -->")


def docs_block(doc: dict[str, Any]) -> str:
    """The docs page's block: :func:`markdown` one heading level down (the page has its own title)."""
    body = markdown(doc).split("\n", 2)[2]  # without the "# ..." title line and the blank line after it
    return "\n".join("#" + ln if ln.startswith("## ") else ln for ln in body.splitlines()) + "\n"


def update_docs(doc: dict[str, Any], page: Path = DOCS_PAGE) -> None:
    """Replace the body between ``<!-- stability -->`` and ``<!-- /stability -->`` of ``page`` with
    :func:`docs_block` (the page must have the markers)."""
    text = page.read_text(encoding="utf-8")
    start, end = _DOCS_BLOCK
    if start not in text or end not in text:
        raise SystemExit(f"{page} has no '{start.strip()}' ... '{end}' block")
    head, rest = text.split(start, 1)
    page.write_text(head + start + docs_block(doc) + end + rest.split(end, 1)[1], encoding="utf-8")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--engine", default="ray", choices=["ray", "serial", "auto"])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--merge", action="store_true",
                    help="keep the saved results of the experiments not run now (each block says its commit)")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite verdict_stability.md and the docs page from the saved JSON (no runs)")
    a = ap.parse_args(argv)
    if a.render:
        doc = json.loads((a.out / "verdict_stability.json").read_text(encoding="utf-8"))
        (a.out / "verdict_stability.md").write_text(markdown(doc) + "\n", encoding="utf-8")
        write_readme(a.out)  # the results README's row comes from the JSON too
        update_docs(doc)
        return doc
    if len(a.seeds) < 2 or len(set(a.seeds)) != len(a.seeds):
        ap.error("--seeds needs at least two different seeds")
    t0 = time.perf_counter()
    experiments = {e: experiment_block(e, a.preset, a.seeds, a.engine, a.data_root) for e in a.experiments}
    n_runs = len(a.seeds) * len(experiments)
    if a.merge:
        saved_path = a.out / "verdict_stability.json"
        saved = json.loads(saved_path.read_text(encoding="utf-8")) if saved_path.is_file() else None
        experiments = merged(saved, experiments, a.seeds, a.preset)
    doc = record("verdict_stability", seconds=time.perf_counter() - t0, n=n_runs, unit="runs", folder=a.out,
                 seeds=a.seeds, preset=a.preset, experiments=experiments)
    (a.out / "verdict_stability.md").write_text(markdown(doc) + "\n", encoding="utf-8")
    if a.out.resolve() == RESULTS.resolve():
        update_docs(doc)
    return doc


if __name__ == "__main__":
    main()
