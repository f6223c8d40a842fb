"""``radaudit``: run experiments, sweeps and data downloads from the command line.

    radaudit list
    radaudit params data_overview --preset demo > my.yaml     # edit it, then: radaudit run data_overview -f my.yaml
    radaudit run data_overview --preset demo [-p key=value ...] [-f my.yaml] [--data-root PATH] [--out DIR]
    radaudit run all --preset demo
    radaudit run decoding_erasure --preset demo --shard 1/3      # then 2/3, 3/3 (any order; machines sharing
    radaudit run decoding_erasure --preset demo                  # the cache), then this run finds all cached
    radaudit sweep data_overview --preset smoke --grid seed=0,1 [--grid key=v1,v2 ...] [--engine ray --address ray://head:10001]
    radaudit findings decoding_erasure [--run DIR]
    radaudit runs [--experiment NAME] [--preset NAME] [--status interrupted] [--limit N] [--json]
    radaudit open latest [--browser]                                 # or a run's folder name, or <experiment>/<run>
    radaudit preflight modality_shift --preset paper                # what a paper run needs; exit 2 if missing
    radaudit metrics
    radaudit score predictions.csv --metrics bleu,bertscore,atomimed,chexpert_f1 --by sex,age_group [--out DIR]
    radaudit data list [--data-root PATH]
    radaudit data fetch iu_xray [--data-root PATH] [--mirror URL]

Errors a user can cause print one message (no traceback) and exit with status 2; a failed run
exits with status 1 after keeping its partial outputs; a run stopped by SIGTERM or SIGINT exits with 128 + the
signal's number (143, 130) after marking its manifest ``interrupted``.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
import time
import webbrowser
from pathlib import Path

import click

from radaudit.errors import RadauditError, RunFailedError, RunInterrupted
from radaudit.findings import findings_frame, read_findings, readme_block, update_readme
from radaudit.paths import check_component, outputs_dir, params_dir, project_root
from radaudit.runs import STATUSES, format_runs, list_runs, report_of, resolve_run

# A command imports the rest of the lab inside its function: radaudit.config and radaudit.experiments (pydantic),
# pandas, papermill, torch and the data registry cost 0.5-5 s each, which `radaudit --help` and every other command
# would pay. Each such import says so (`# lazy: ...`); the cheap ones above are shared by several commands.


def _fail(err: Exception, code: int) -> None:
    click.echo(click.style("error: ", fg="red", bold=True) + str(err), err=True)
    sys.exit(code)


PARAM_FLAGS = ("-p", "--param")


def _is_value(token: str) -> bool:
    """Whether ``token`` can be a parameter's value rather than the next option (``-1`` and ``-0.5`` are values)."""
    if not token.startswith("-"):
        return True
    try:
        float(token)
    except ValueError:
        return False
    return True


def papermill_params(args: list[str]) -> list[str]:
    """``-p name value`` (papermill's form) as ``-p name=value``; ``-p name=value`` and everything else unchanged.

    >>> papermill_params(["run", "x", "-p", "seed", "3", "--param", "offset", "-1", "-p", "a=b"])
    ['run', 'x', '-p', 'seed=3', '--param', 'offset=-1', '-p', 'a=b']
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if (token in PARAM_FLAGS and i + 2 < len(args) and "=" not in args[i + 1]
                and not args[i + 1].startswith("-") and _is_value(args[i + 2])):
            out += [token, f"{args[i + 1]}={args[i + 2]}"]
            i += 3
            continue
        out.append(token)
        i += 1
    return out


class _Group(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, papermill_params(list(args)))

    def invoke(self, ctx: click.Context):  # one place that turns user errors into clean messages
        try:
            return super().invoke(ctx)
        except RunFailedError as err:
            _fail(err, 1)
        except RadauditError as err:
            _fail(err, 2)
        except RunInterrupted as err:  # the manifest says `interrupted` already
            _fail(err, err.exit_code)


@click.group(cls=_Group)
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
@click.version_option(package_name="radaudit")
def main(verbose: bool) -> None:
    """radaudit: reproducible audits of how radiology AI is evaluated."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("radaudit").setLevel(logging.INFO)


@main.command("list")
def list_cmd() -> None:
    """Experiments and their presets, each with a one-line description."""
    from radaudit.config import list_presets  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.experiments import EXPERIMENTS  # lazy: as radaudit.config

    measured = _demo_minutes()
    for exp in EXPERIMENTS.values():
        click.echo(click.style(exp.name, bold=True) + f"  ({exp.notebook})")
        click.echo(f"    {exp.description}")
        for preset, desc in list_presets(params_dir(), exp.name).items():
            click.echo(f"    --preset {preset:<8} {desc}")
            if preset == "demo" and exp.name in measured:
                click.echo(f"    {'':<17} measured: {measured[exp.name]}")


def _demo_minutes() -> dict[str, str]:
    """Per experiment, what its demo took on a fresh clone and with its models cached, from the benchmark results
    (``benchmarks/results/demo_fresh.json``, ``demo_cached.json``), with the machine and date: never a typed time."""
    out: dict[str, dict[str, float]] = {}
    where = {}
    for kind in ("fresh", "cached"):
        try:
            doc = json.loads((project_root() / "benchmarks" / "results" / f"demo_{kind}.json").read_text())
        except (OSError, ValueError, RadauditError):
            continue
        for name, seconds in (doc.get("per_experiment") or {}).items():
            out.setdefault(name, {})[kind] = float(seconds) / 60
        where[kind] = f"{doc.get('machine', '?')}, {str(doc.get('date', '?'))[:10]}"
    text = {}
    for name, t in out.items():
        parts = [f"{t[k]:.1f} min {label}" for k, label in (("fresh", "on a fresh clone (models trained)"),
                                                             ("cached", "with its models cached")) if k in t]
        text[name] = "; ".join(parts) + f" ({where.get('fresh') or where.get('cached')})"
    return text


@main.command("params")
@click.argument("experiment")
@click.option("--preset", default="demo", show_default=True)
@click.option("-p", "--param", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("-f", "--params-file", "params_files", multiple=True, type=click.Path(dir_okay=False),
              help="A YAML of parameters merged over the preset (repeatable; -p overrides come after).")
def params_cmd(experiment: str, preset: str, overrides: tuple[str, ...], params_files: tuple[str, ...]) -> None:
    """Show an experiment's resolved parameters and what every key means, as YAML (save it, edit it,
    run it with -f)."""
    import yaml  # lazy: ~50 ms off `radaudit --help`

    from radaudit.config import resolve_params  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.experiments import get_experiment  # lazy: as radaudit.config

    model = get_experiment(experiment).params_model()
    params = resolve_params(model, params_dir(), experiment, preset, overrides, params_files=params_files)
    values = params.model_dump(mode="json")
    for key, field in model.model_fields.items():
        click.echo(f"# {field.description or ''}".rstrip())
        click.echo(yaml.safe_dump({key: values[key]}, sort_keys=False, default_flow_style=False).rstrip())


@main.command("preflight")
@click.argument("experiment")
@click.option("--preset", default="paper", show_default=True, help="params/<experiment>/<preset>.yaml")
@click.option("-p", "--param", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override one parameter (repeatable): -p key=value, or papermill's -p key value.")
@click.option("-f", "--params-file", "params_files", multiple=True, type=click.Path(dir_okay=False),
              help="A YAML of parameters merged over the preset (repeatable; -p overrides come after).")
def preflight_cmd(experiment: str, preset: str, overrides: tuple[str, ...], params_files: tuple[str, ...]) -> None:
    """List every dataset path, model, adapter and checkpoint a preset needs, whether each is here, and
    the GPU memory of each model at its dtype; exit 2 when a required item is missing. Loads no weights."""
    from radaudit.config import resolve_params  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.experiments import get_experiment  # lazy: as radaudit.config
    from radaudit.preflight import preflight_report  # lazy: as radaudit.config

    exp = get_experiment(experiment)
    params = resolve_params(exp.params_model(), params_dir(), experiment, preset, overrides, params_files=params_files)
    checks, lines = preflight_report(params)
    click.echo(click.style(f"{experiment} --preset {preset}: what the run needs", bold=True))
    for line in lines:
        click.echo(line)
    if any(c.failed for c in checks):
        sys.exit(2)


@main.command("run")
@click.argument("experiment")
@click.option("--preset", default="demo", show_default=True, help="params/<experiment>/<preset>.yaml")
@click.option("-p", "--param", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override one parameter (repeatable): -p key=value, or papermill's -p key value.")
@click.option("--data-root", type=click.Path(file_okay=False), default=None, help="Folder that holds the datasets.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Outputs root (default: <project>/outputs).")
@click.option("--name", default=None, help="Run folder name (default: <time>_<preset>); letters, digits, '.', '_', '-'.")
@click.option("--no-progress", is_flag=True, help="Hide the per-cell progress bar.")
@click.option("-f", "--params-file", "params_files", multiple=True, type=click.Path(dir_okay=False),
              help="A YAML of parameters merged over the preset (repeatable; -p overrides come after).")
@click.option("--rehearse", is_flag=True, help="Dress rehearsal on CPU: tiny random-weight twins of the preset's "
              "models and invented fixtures of its credentialed data, through the same code path.")
@click.option("--shard", "shard", default=None, metavar="I/N", help="Do only the I-th of N equal parts of the expensive "
              "step (generation, feature extraction) into the shared cache, without the notebook; once all N have run, "
              "the same command without --shard makes the tables from the cache.")
@click.option("--jobs", "jobs", default=1, show_default=True, type=click.IntRange(min=1), help="With 'all': run this "
              "many experiments at a time, each in its own process (same numbers as one at a time; `make demo` uses 2). "
              "On a GPU they share its memory: keep 1 for the paper presets.")
def run_cmd(experiment, preset, overrides, data_root, out, name, no_progress, params_files, rehearse, shard, jobs) -> None:
    """Execute an experiment's notebook into outputs/<experiment>/<run>/ (EXPERIMENT may be 'all')."""
    from radaudit.config import list_presets  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.experiments import EXPERIMENTS  # lazy: as radaudit.config
    from radaudit.run import prepare, run_experiment  # lazy: the run machinery (papermill is imported at the run)

    if shard is not None:
        _run_shard(experiment, preset, overrides, data_root, out, name, params_files, rehearse, shard)
        return
    if name is not None:
        check_component(name, "--name")
    if experiment == "all":
        names = [e for e in EXPERIMENTS if preset in list_presets(params_dir(), e)]
        if not names:
            raise RadauditError(f"No experiment has a preset {preset!r}.")
    else:
        names = [experiment]
    prepared = {n: prepare(n, preset, overrides, data_root, params_files) for n in names}  # all checks first
    hint = _first_run_hint(names, preset)
    if hint:
        click.echo(hint)
    if jobs > 1 and len(names) > 1:
        _run_parallel(names, jobs, preset, overrides, data_root, out, name, params_files, rehearse)
        return
    done, failed = [], []
    for n in names:
        click.echo(click.style(f"== {n} ({preset})", bold=True))
        try:
            res = run_experiment(n, preset, overrides, data_root=data_root, out=out, name=name,
                                 progress=not no_progress, prepared=prepared[n], params_files=params_files,
                                 rehearse=rehearse)
            done.append(res)
            click.echo(f"   outputs: {res.run_dir}")
            click.echo(f"   report:  {res.html}")
        except RunFailedError as err:
            failed.append((n, err))
            click.echo(click.style(f"   FAILED: {err}", fg="red"), err=True)
    if len(names) > 1:
        click.echo(click.style("\nSummary", bold=True))
        for r in done:
            click.echo(f"  ok      {r.experiment:<20} {r.run_dir}")
        for n, _ in failed:
            click.echo(f"  FAILED  {n}")
    if failed:
        sys.exit(1)


def _first_run_hint(names, preset) -> str | None:
    """A line for a demo run whose cache holds no trained stand-in yet: those experiments train theirs first (most of
    a fresh clone's time), and a cache bundle from another clone skips that."""
    from radaudit.experiments import EXPERIMENTS  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.models.bundle import cache_entries  # lazy: the models layer, ~50 ms off `radaudit --help`
    from radaudit.models.cache import default_cache_dir  # lazy: as radaudit.models.bundle

    training = [n for n in names if EXPERIMENTS[n].first_run_rank > 0]
    if preset != "demo" or not training:
        return None
    root = default_cache_dir()
    if cache_entries(root, "demo_models"):
        return None
    return (f"The cache ({root}) holds no trained stand-in yet: {', '.join(training)} train theirs first, which is "
            "most of a first run's time. To skip it, import another clone's cache bundle first: "
            "`make demo DEMO_BUNDLE=FILE` (README: Cache bundles).")


def _run_parallel(names, jobs, preset, overrides, data_root, out, name, params_files, rehearse) -> None:
    """``radaudit run all --jobs N`` (:mod:`radaudit.run_many`): a line as each run starts and ends, then the summary."""
    from radaudit.run_many import run_many  # lazy: pandas and the run machinery, ~2.5 s off `radaudit --help`

    t0 = time.monotonic()
    click.echo(f"Running {len(names)} experiments, {jobs} at a time (each notebook's log: its run folder's run.log).")

    def started(n: str) -> None:
        click.echo(click.style(f"== {n} ({preset}) started", bold=True))

    def finished(o) -> None:
        if o.ok:
            report = f" (report: {o.html.name})" if o.html else ""
            click.echo(f"   {o.experiment} done in {o.seconds:.0f} s: {o.run_dir}{report}")
        else:
            click.echo(click.style(f"   FAILED: {o.error}", fg="red"), err=True)

    outcomes = run_many(names, jobs, preset, overrides, data_root=data_root, out=out, name=name,
                        params_files=params_files, rehearse=rehearse, on_start=started, on_done=finished)
    click.echo(click.style(f"\nSummary ({time.monotonic() - t0:.0f} s)", bold=True))
    by_name = {o.experiment: o for o in outcomes}
    for n in names:
        o = by_name[n]
        click.echo(f"  {'ok' if o.ok else 'FAILED':<7} {n:<20} {o.run_dir if o.ok else ''}")
    if not all(o.ok for o in outcomes):
        sys.exit(1)


def _run_shard(experiment, preset, overrides, data_root, out, name, params_files, rehearse, shard) -> None:
    """``radaudit run <e> --shard I/N`` (:mod:`radaudit.shards`). Refused, with the reason: ``all`` (one experiment
    per command: each has its own step and items), ``--rehearse`` (a rehearsal is a handful of items on tiny twins,
    and its twins and single-threaded kernels are set up by the notebook runner: run it whole) and ``--name`` (a
    shard's folder is named for its shard: ``<time>_<preset>_<i>of<n>``)."""
    from radaudit.shards import parse_shard, run_shard, shardable_experiments  # lazy: pydantic, ~0.6 s off --help

    i, n = parse_shard(shard)
    can = ", ".join(shardable_experiments())
    if experiment == "all":
        raise RadauditError(f"--shard runs one experiment: run `radaudit run <experiment> --shard {i}/{n}` for each of "
                            f"{can}, then `radaudit run all` without --shard.")
    if rehearse:
        raise RadauditError("--shard and --rehearse do not go together: a rehearsal is a handful of items on tiny twins; "
                            "run it whole (radaudit run ... --rehearse).")
    if name is not None:
        raise RadauditError(f"--name names a notebook run; a shard's folder is named <time>_{preset}_{i}of{n}. Drop --name "
                            "here and give it to the full run that merges the shards.")
    m = run_shard(experiment, preset, overrides, shard=(i, n), data_root=data_root, params_files=params_files, out=out)
    c = m.get("counts") or {}
    click.echo(click.style(f"== {experiment} ({preset}) shard {i}/{n}: {m['step']}", bold=True))
    click.echo(f"   items:    {c.get('items')} of {c.get('items_total')} ({c.get('unit')})")
    click.echo(f"   computed: {c.get('computed')}, found in the cache: {c.get('found')}")
    click.echo(f"   cache:    {m['cache']}")
    click.echo(f"   manifest: {m['path']} ({m['duration_s']} s)")
    again = " ".join(["radaudit run", experiment, "--preset", preset, *(f"-p {o}" for o in overrides),
                      *(f"-f {f}" for f in params_files), *(["--data-root", data_root] if data_root else []),
                      *(["--out", out] if out else [])])
    click.echo(f"When all {n} shards have run (same params, same cache), merge with: {again}")


@main.command("sweep")
@click.argument("experiment")
@click.option("--preset", default="demo", show_default=True)
@click.option("--grid", "grid", multiple=True, required=True, metavar="KEY=V1,V2",
              help="A parameter and its values (repeatable: the product is run).")
@click.option("-p", "--param", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--data-root", type=click.Path(file_okay=False), default=None)
@click.option("--out", type=click.Path(file_okay=False), default=None)
@click.option("--no-progress", is_flag=True)
@click.option("-f", "--params-file", "params_files", multiple=True, type=click.Path(dir_okay=False),
              help="A YAML of parameters merged over the preset (repeatable).")
@click.option("--engine", type=click.Choice(["auto", "ray", "serial"]), default="auto", show_default=True,
              help="ray: each run a Ray task (parallel, GPUs, clusters); serial: one after another; auto: ray if installed.")
@click.option("--address", default=None, metavar="ADDRESS",
              help="A Ray cluster (ray://head:10001, or auto on a cluster node); default: a local Ray of this machine.")
@click.option("--cpus-per-run", type=float, default=1.0, show_default=True, help="CPUs each Ray task asks for.")
@click.option("--gpus-per-run", type=float, default=None,
              help="GPUs each Ray task asks for (default: 1 if the cluster has GPUs and the params ask for cuda, or "
                   "name a model on a paper/full preset; else 0).")
@click.option("--shards", type=int, default=0, show_default=True, metavar="N",
              help="Split each run's expensive step into N shard tasks first (decoding_erasure, synthetic_cxr: "
                   "radaudit run <e> --shard i/N), then run its notebook on the shared cache.")
@click.option("--plot", "plot", default=None, metavar="FINDING_ID",
              help="The finding drawn in summary.png against the first --grid key (default: the first numeric finding; "
                   "duration_s when the runs write none).")
def sweep_cmd(experiment, preset, grid, overrides, data_root, out, no_progress, params_files, engine, address,
              cpus_per_run, gpus_per_run, shards, plot) -> None:
    """Run an experiment over a grid of parameters (one run per combination, as Ray tasks or serially) and write
    outputs/<experiment>/sweeps/<time>_<preset>/ with summary.csv, index.md, summary.png and manifest.json."""
    from radaudit.sweep import sweep  # lazy: pandas and the run machinery, ~2.5 s off `radaudit --help`

    res = sweep(experiment, preset, grid, overrides, data_root=data_root, out=out, progress=not no_progress,
                params_files=params_files, engine=engine, address=address, cpus_per_run=cpus_per_run,
                gpus_per_run=gpus_per_run, plot=plot, shards=shards)
    s = res.summary
    keys = list(res.manifest["grid"])
    column = res.manifest["plot"]["column"]
    shown = ["run", *keys, "status", "duration_s"] + ([column] if column in s.columns and column != "duration_s" else [])
    click.echo(s[shown].to_string(index=False))
    m = res.manifest
    how = f"ray {m['ray_version']} at {m['address']}" if m["engine"] == "ray" else "serial"
    click.echo(f"\nengine:  {how}")
    click.echo(f"summary: {res.sweep_dir / 'summary.csv'}")
    click.echo(f"index:   {res.sweep_dir / 'index.md'}")
    click.echo(f"plot:    {res.plot}" if res.plot else f"plot:    none ({m['plot']['error']})")
    if res.failed:
        for r in s[s["status"] != "succeeded"].itertuples():
            click.echo(click.style(f"FAILED  {r.run}: {r.error}", fg="red"), err=True)
        sys.exit(1)


@main.command("findings")
@click.argument("experiment")
@click.option("--run", "run_dir", type=click.Path(file_okay=False), default=None,
              help="A run folder (default: outputs/<experiment>/latest).")
# a maintainer's flag, hidden from the user help (docs/maintainers.md documents it); --readme is its old name
@click.option("--docs", "--readme", "write_docs", is_flag=True, hidden=True,
              help="Rewrite the findings block of docs/experiments/<experiment>.md from this run.")
def findings_cmd(experiment, run_dir, write_docs) -> None:
    """A run's headline findings (findings.json)."""
    from radaudit.experiments import get_experiment  # lazy: pydantic, ~0.5 s off `radaudit --help`

    get_experiment(experiment)
    folder = Path(run_dir) if run_dir else project_root() / "outputs" / experiment / "latest"
    doc = read_findings(folder)
    click.echo(findings_frame(doc["findings"]).drop(columns=["note"]).to_string(index=False))
    if write_docs:
        _refuse_unsettled(experiment, folder, doc)
        page = Path("docs") / "experiments" / f"{experiment}.md"
        path = project_root() / page
        name = folder.resolve().name
        path.write_text(update_readme(path.read_text(encoding="utf-8"), experiment, readme_block(doc, name)),
                        encoding="utf-8")
        click.echo(f"{page}: findings of {experiment} written from {name}")


def _refuse_unsettled(experiment: str, folder: Path, doc: dict) -> None:
    """The docs show verdicts settled over seeds: refuse a run whose findings the stability benchmark holds but
    that carry no stability (made before the benchmark's file knew its recipe; :func:`radaudit.stability.unsettled`)."""
    import json

    from radaudit.experiments import get_experiment
    from radaudit.stability import read_stability, recipe_id, stability_path, unsettled

    path = stability_path()
    manifest = folder / "manifest.json"
    if path is None or not manifest.is_file():
        return
    params = json.loads(manifest.read_text(encoding="utf-8")).get("params") or {}
    validated = get_experiment(experiment).params_model().model_validate(params)
    missing = unsettled(read_stability(path), experiment, recipe_id(experiment, validated), doc.get("preset", ""),
                        doc["findings"])
    if missing:
        raise click.ClickException(
            f"{folder.name}'s findings {', '.join(missing)} carry no verdicts over seeds, although {path} holds them "
            "for this run's recipe: the run was made before that file was. Run the experiment again (`make demo`) and "
            "write the docs from the new run.")


_OUT_OPTION = click.option("--out", type=click.Path(file_okay=False), default=None,
                           help="Outputs root (default: <project>/outputs).")


def _outputs_root(out: str | None) -> Path:
    return Path(out) if out else outputs_dir()


@main.command("runs")
@click.option("--experiment", default=None, metavar="NAME", help="Only the runs of this experiment.")
@click.option("--preset", default=None, metavar="NAME", help="Only the runs of this preset.")
@click.option("--status", type=click.Choice(STATUSES), default=None,
              help="Only the runs with this status (a running run whose process is gone is interrupted).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON list (every field of each).")
@_OUT_OPTION
def runs_cmd(experiment, preset, status, limit, as_json, out) -> None:
    """The runs, newest first: experiment, run, preset, status, commit, start, duration and headline findings
    (also rewrites outputs/index.html, so that it shows the same statuses)."""
    from radaudit.report import render_index  # lazy: pandas, ~0.4 s off `radaudit --help`

    root = _outputs_root(out)
    records = list_runs(root, experiment=experiment, preset=preset, status=status, limit=limit)
    if root.is_dir():
        try:
            render_index(root)
        except OSError as err:  # a read-only outputs folder still lists
            logging.getLogger("radaudit").warning("%s not rewritten: %s", root / "index.html", err)
    if as_json:
        click.echo(json.dumps(records, indent=2, default=str))
        return
    if not records:
        which = " matching " + ", ".join(f"--{k} {v}" for k, v in
                                         (("experiment", experiment), ("preset", preset), ("status", status)) if v)
        click.echo(f"No runs under {root}{which if (experiment or preset or status) else ''}.")
        return
    for line in format_runs(records):
        click.echo(line)


@main.command("open")
@click.argument("run")
@click.option("--browser", is_flag=True, help="Also open the report in the default web browser.")
@_OUT_OPTION
def open_cmd(run, browser, out) -> None:
    """Print the path of a run's HTML report. RUN: a run folder's name, <experiment>/<run>, latest (the newest run
    with a report) or <experiment>/latest."""
    html = report_of(resolve_run(_outputs_root(out), run)).resolve()
    click.echo(str(html))
    if browser:
        if not webbrowser.open(html.as_uri()):
            raise RadauditError(f"No web browser could be started here: open {html} by hand.")


@main.command("timings")
@click.argument("experiments", nargs=-1)
@click.option("--preset", default=None, help="Only runs of this preset (default: any).")
@click.option("--run", "run_dirs", multiple=True, type=click.Path(file_okay=False),
              help="A run folder (repeatable; default: the newest succeeded run of each experiment).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Outputs root (default: <project>/outputs).")
@click.option("--top", type=int, default=10, show_default=True, help="How many cells to list.")
def timings_cmd(experiments, preset, run_dirs, out, top) -> None:
    """Where the time went: the slowest notebook cells over the latest runs (or the --run folders)."""
    from radaudit.experiments import get_experiment  # lazy: pydantic, ~0.5 s off `radaudit --help`
    from radaudit.timings import latest_runs, slowest_cells  # lazy: pandas, ~1 s off `radaudit --help`

    for e in experiments:
        get_experiment(e)
    root = Path(out) if out else project_root() / "outputs"
    runs = [Path(r) for r in run_dirs] or latest_runs(root, preset, experiments or None)
    if not runs:
        what = f" of preset {preset!r}" if preset else ""
        raise click.ClickException(f"No succeeded run{what} under {root}: run one first (radaudit run <experiment>).")
    table = slowest_cells(runs, top)
    click.echo(f"The {len(table)} slowest cells of {len(runs)} run(s) (wall seconds, share of their run):")
    for r in table.itertuples():
        click.echo(f"  {r.seconds:7.1f} s  {r.share_of_run:4.0%}  {r.experiment}/{r.run}  cell {r.cell} "
                   f"({r.section}): {r.code}")


@main.command("metrics")
def metrics_cmd() -> None:
    """The report metrics in the registry, and whether each can run in this environment."""
    from radaudit.metrics import list_metrics  # lazy: the metric registry, ~5 s off `radaudit --help`

    df = list_metrics()
    for r in df.itertuples():
        mark = "[x]" if r.available else "[ ]"
        extra = f"  (needs radaudit[{r.extra}])" if (not r.available and r.extra) else ""
        click.echo(f"  {mark} {r.name:<26} {r.kind:<10} {r.description}{extra}")


@main.command("score")
@click.argument("table", type=click.Path(dir_okay=False))
@click.option("--metrics", "metrics", required=True, help="Comma-separated metric names (radaudit metrics; short: "
              "bleu, rouge, chexpert_f1).")
@click.option("--by", "by", default="", help="Comma-separated group columns (e.g. sex,age_group); each group's "
              "scores and the largest gap per metric are printed.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for scores.csv, gaps.csv, pairs.csv and scores.html (default outputs/score/<file>_<time>). "
                   "pairs.csv: row (the pair's 0-based position in TABLE as pandas reads it; line row + 2 of a file "
                   "without blank lines or multi-line cells), the group columns, both texts, per-pair scores.")
@click.option("--reference-column", default="reference", show_default=True, help="The column of the reference reports.")
@click.option("--prediction-column", default="prediction", show_default=True,
              help="The column of the generated reports.")
@click.option("--n-bootstrap", type=int, default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--context-columns", "context_columns", default="",
              help="Comma-separated patient-context columns: age, sex, indication, history (key=column when named "
                   "otherwise); passed to metrics that take a context (atomimed_clinical), ignored by the others.")
def score_cmd(table, metrics, by, out, reference_column, prediction_column, n_bootstrap, seed, context_columns) -> None:
    """Score your own reports: each metric overall and per group, with 95% BCa bootstrap CIs and the gaps
    between groups (BH-corrected p-values). TABLE is a CSV with reference and prediction columns.

    Report each metric's "headline" row: the corpus statistic of a corpus metric (BLEU, chexpert_f1: counts
    summed over the pairs, as the field computes them), the mean of any other; a "per-pair view" is a corpus
    metric's mean over pairs."""
    import warnings

    from radaudit.scoring import score_file  # lazy: the metric registry, ~5 s off `radaudit --help`
    from radaudit.stats import BootstrapWarning  # lazy: numpy and scipy, off `radaudit --help`

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    groups = [b.strip() for b in by.split(",") if b.strip()]
    with warnings.catch_warnings():   # a BCa fallback is one note of the summary, not a warning per interval
        warnings.simplefilter("ignore", BootstrapWarning)
        report = score_file(table, names, groups, reference=reference_column, prediction=prediction_column,
                            n_bootstrap=n_bootstrap, seed=seed, context_columns=context_columns)
    stem = Path(table).stem
    folder = Path(out) if out else outputs_dir() / "score" / f"{stem}_{_dt.datetime.now():%Y%m%d-%H%M%S}"
    title = f"Scores of {Path(table).name}"
    paths = report.write(folder, title=title)
    click.echo(report.summary(title))
    click.echo(f"\n   tables: {paths['scores'].parent}  (scores.csv, gaps.csv, pairs.csv)\n   page:   {paths['html']}")


@main.group("data")
def data_group() -> None:
    """Datasets: what is registered and present, and downloads of the public ones."""


@data_group.command("list")
@click.option("--data-root", type=click.Path(file_okay=False), default=None)
def data_list(data_root) -> None:
    """Registered datasets and whether they are present under the data root."""
    from radaudit.data import list_datasets  # lazy: the data registry (pandas), ~1.5 s off `radaudit --help`
    from radaudit.data.root import resolve_data_root  # lazy: as radaudit.data

    root = resolve_data_root(data_root, must_exist=False)
    click.echo(f"data root: {root}{'' if root.is_dir() else '  (does not exist)'}")
    df = list_datasets(data_root)
    for r in df.itertuples():
        mark = "[x]" if r.present else "[ ]"
        click.echo(f"  {mark} {r.name:<22} {r.access:<12} {r.title}")


@data_group.command("fetch")
@click.argument("names", nargs=-1, required=True)
@click.option("--data-root", type=click.Path(file_okay=False), default=None, help="Where to put the datasets.")
@click.option("--mirror", default=None, help="A mirror of the canonical URLs (e.g. file:///srv/mirror).")
@click.option("--force", is_flag=True, help="Download again even if a file is present and verified.")
def data_fetch(names, data_root, mirror, force) -> None:
    """Download public datasets from their canonical sources (NAMES, or 'public' for all)."""
    from radaudit.data import DATASETS  # lazy: the data registry (pandas), ~1.5 s off `radaudit --help`
    from radaudit.data.fetch import fetch  # lazy: as radaudit.data
    from radaudit.data.root import resolve_data_root  # lazy: as radaudit.data

    root = Path(data_root).resolve() if data_root else resolve_data_root(None, must_exist=False)
    root.mkdir(parents=True, exist_ok=True)
    if names == ("public",):
        names = tuple(n for n, s in DATASETS.items() if s.sources)
    for n in names:
        paths = fetch(n, root, mirror=mirror, force=force)
        click.echo(f"{n}: {len(paths)} files in {root / DATASETS[n].folder}")


@main.group("cache")
def cache_group() -> None:
    """The cache of trained stand-ins, generated images and model outputs: what it holds, and bundles of it
    that another clone imports to skip the training (a lab trains once and hands the bundle out)."""


def _cache_root(cache: str | None) -> Path:
    from radaudit.models.cache import default_cache_dir  # lazy: the models layer, off `radaudit --help`

    return Path(cache).expanduser().resolve() if cache else default_cache_dir()


_CACHE_OPTION = click.option("--cache", "cache", type=click.Path(file_okay=False), default=None,
                             help="The cache folder (default: $RADAUDIT_CACHE, else <project>/.cache/radaudit).")


@cache_group.command("info")
@_CACHE_OPTION
def cache_info(cache) -> None:
    """What the cache holds, its size, and what a bundle carries."""
    from radaudit.models.bundle import cache_summary  # lazy: the models layer, ~50 ms off `radaudit --help`

    root = _cache_root(cache)
    rows = cache_summary(root)
    click.echo(f"cache: {root}{'' if rows else '  (empty)'}")
    for r in rows:
        bundled = "bundled" if r["bundled"] == "yes" else f"not bundled: {r['bundled']}"
        trained = f"  (trained in {r['training_seconds'] / 60:.1f} min)" if r["training_seconds"] else ""
        click.echo(f"  {r['name']:<22} {r['what']:>14} {r['bytes'] / 2**20:9.1f} MiB  {bundled}{trained}")


@cache_group.command("check")
@_CACHE_OPTION
@click.option("--repair", is_flag=True, help="Move damaged SQLite files aside and remove damaged model folders, array "
                                           "parts and leftovers (each is recomputed on next use).")
def cache_check(cache, repair) -> None:
    """Check every cache entry: SQLite files, model folders against their file lists, array parts, leftovers of
    interrupted writes. Exits 1 when something is damaged and --repair was not given."""
    from radaudit.models.cache_check import check_cache  # lazy: the models layer, ~0.25 s off `radaudit --help`

    report = check_cache(_cache_root(cache), repair=repair)
    click.echo(f"cache: {report.root}")
    for line in report.lines():
        click.echo("  " + line)
    if report.problems and not repair:
        click.echo("Run `radaudit cache check --repair` to set them aside (their entries are recomputed).")
        raise SystemExit(1)
    click.echo("clean" if report.clean else "repaired: the next runs recompute what was set aside")


@cache_group.command("export")
@click.argument("bundle", type=click.Path(dir_okay=False))
@_CACHE_OPTION
@click.option("--kind", "kinds", multiple=True, help="Carry only these folders (repeatable; the SQLite caches always go).")
def cache_export(bundle, cache, kinds) -> None:
    """Pack the cache into BUNDLE (*.tar, *.tar.gz or *.tgz)."""
    from radaudit.models.bundle import export_bundle  # lazy: the models layer, ~50 ms off `radaudit --help`

    start = time.monotonic()
    manifest = export_bundle(_cache_root(cache), bundle, kinds=list(kinds) or None)
    n = {k: len(v) for k, v in manifest["entries"].items()}
    size = Path(bundle).stat().st_size / 2**20
    click.echo(f"{bundle}: {size:.1f} MiB in {time.monotonic() - start:.0f} s; "
               + ", ".join(f"{k} {v}" for k, v in n.items())
               + "".join(f", {db} {rows:,} rows" for db, rows in manifest["sqlite"].items()))
    if manifest["training_seconds"]:
        click.echo(f"Its models took {manifest['training_seconds'] / 60:.1f} min to train here (their own records); "
                   "a clone that imports it skips that.")
    click.echo("Another clone: radaudit cache import " + str(bundle))


@cache_group.command("import")
@click.argument("bundle", type=click.Path(dir_okay=False))
@_CACHE_OPTION
def cache_import(bundle, cache) -> None:
    """Add what BUNDLE holds to the cache, never overwriting; runs then reuse every entry their data and params
    match (entries made from other data or another recipe are carried, never used)."""
    from radaudit.models.bundle import import_bundle  # lazy: the models layer, ~50 ms off `radaudit --help`

    start = time.monotonic()
    report = import_bundle(bundle, _cache_root(cache))
    m = report.manifest
    click.echo(f"{bundle}: exported {m.get('created', '?')} on {m.get('machine', '?')} at commit "
               f"{(m.get('commit') or '?')[:7]}; imported in {time.monotonic() - start:.0f} s")
    for line in report.lines():
        click.echo("  " + line)
    if report.refused:
        raise RadauditError(f"{len(report.refused)} model folder(s) of the bundle failed their file check and were "
                            "not imported (see above); the rest was. Copy the bundle again, or let the runs train "
                            "those models.")


if __name__ == "__main__":
    main()
