"""``radaudit sweep`` through Ray: a real local Ray (2 CPUs), members as Ray tasks, the summary they leave.

Three kinds of checks. The summary and plot builders on hand-made findings (column names, CI columns, the error
bar drawn from a value and interval computed here). A throwaway experiment (``echo_sweep``, a notebook of two cells
that writes findings from its seed and fails on seed 3) swept on Ray and serially: the failed member is recorded
while the others succeed, the findings columns are the members' findings.json values, and both engines give the
same summary. And the lab's real ``data_overview`` smoke preset swept over two seeds on Ray, the issue's "done when".
The Ray instance is started once for the module and shut down after it.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from click.testing import CliRunner
from nbformat.v4 import new_code_cell, new_notebook

from radaudit import experiments
from radaudit.cli import main
from radaudit.config import BaseParams
from radaudit.errors import RadauditError
from radaudit.sweep import default_plot_column, summary_figure, summary_frame, sweep, wants_gpu

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def worker_modules(tmp_path_factory) -> Path:
    """A folder on the Ray workers' ``PYTHONPATH`` (set before Ray starts): test modules written there (a shard
    step) are importable by the workers, as the lab's own modules are."""
    return tmp_path_factory.mktemp("worker_modules")


@pytest.fixture(scope="module")
def ray_local(worker_modules):
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # pragma: no cover - another module left one running
        ray.shutdown()
    # Every Ray daemon is a Python process that spends ~3 s of CPU importing ray (jsonschema's optional rfc3987-syntax
    # builds a lark grammar at import, ~2 s here), and Ray gives its raylet and dashboard agent fixed 15-30 s to come
    # up: with the other pytest worker busy, a start can miss that. So: no workers prestarted while the daemons start
    # (they start with the first task), no usage-stats thread, and up to three tries.
    env = {"RAY_enable_worker_prestart": "0", "RAY_prestart_worker_first_driver": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(worker_modules), os.environ.get("PYTHONPATH", "")) if p)}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        for attempt in (1, 2, 3):
            try:
                ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 ** 2, log_to_driver=False)
                break
            except Exception:
                ray.shutdown()
                if attempt == 3:
                    raise
    yield ray
    ray.shutdown()


PARAMS_CELL = "seed = 0\ndata_root = None\nn_bootstrap = 1000\nconfidence = 0.95\nrun_dir = None"
FINDINGS_CELL = """\
from pathlib import Path
from radaudit.findings import Finding, write_findings
if seed == 3:
    raise ValueError('boom: seed 3 fails on purpose')
v = seed / 10
write_findings(Path(run_dir, 'findings.json'), 'echo_sweep', 'smoke', [
    Finding('tenth_of_seed', 'A tenth of the seed', v, 'shown', ci=(v - 0.05, v + 0.25)),
    Finding('seed_squared', 'The seed squared', seed ** 2, 'n/a', note='a count, no interval'),
])
"""


@pytest.fixture(scope="module")
def echo_project(tmp_path_factory):
    """A project with one experiment whose params are :class:`BaseParams` (importable in a Ray worker, unlike a
    class defined in a test module): ``RADAUDIT_PROJECT`` points at it, the registry knows it."""
    root = tmp_path_factory.mktemp("proj")
    (root / "notebooks").mkdir()
    (root / "params" / "echo_sweep").mkdir(parents=True)
    (root / "params" / "echo_sweep" / "smoke.yaml").write_text("description: tiny\nn_bootstrap: 10\n")
    nb = new_notebook(cells=[new_code_cell(PARAMS_CELL, metadata={"tags": ["parameters"]}), new_code_cell(FINDINGS_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "echo_sweep.ipynb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAUDIT_PROJECT", str(root))
        mp.setenv("RADAUDIT_CACHE", str(root / "cache"))
        mp.setitem(experiments.EXPERIMENTS, "echo_sweep",
                   experiments.Experiment("echo_sweep", "echo_sweep.ipynb", BaseParams, "writes findings from its seed"))
        yield root


@pytest.fixture(scope="module")
def echo_ray(echo_project, ray_local):
    return sweep("echo_sweep", "smoke", ["seed=1,2,3"], engine="ray", progress=False)


def _findings(run_dir: Path) -> dict[str, dict]:
    return {f["id"]: f for f in json.loads((run_dir / "findings.json").read_text())["findings"]}


def _finding_columns(summary: pd.DataFrame, grid_keys: list[str]) -> list[str]:
    fixed = {"run", *grid_keys, "status", "duration_s", "folder", "error"}
    return [c for c in summary.columns if c not in fixed and "." not in c]


# ----------------------------------------------------------------------------------------------- builders

DOCS = [
    {"run": "00_seed=1", "params": {"seed": "1"}, "status": "succeeded", "duration_s": 2.5, "folder": "00_seed=1",
     "error": "", "findings": [
         {"id": "auroc", "label": "AUROC", "value": 0.8, "ci": [0.7, 0.9], "paper": 0.85, "verdict": "shown", "note": ""},
         {"id": "n_cases", "label": "Cases", "value": 40, "ci": None, "paper": None, "verdict": "n/a", "note": "count"}]},
    {"run": "01_seed=2", "params": {"seed": "2"}, "status": "succeeded", "duration_s": 3.0, "folder": "01_seed=2",
     "error": "", "findings": [
         {"id": "auroc", "label": "AUROC", "value": 0.6, "ci": [0.45, 0.7], "paper": 0.85, "verdict": "not shown",
          "note": "small sample"}]},
    {"run": "02_seed=3", "params": {"seed": "3"}, "status": "failed", "duration_s": 1.0, "folder": "02_seed=3",
     "error": "echo failed: ValueError: boom", "findings": []},
]


def test_summary_frame_columns_and_values():
    s = summary_frame({"seed": ["1", "2", "3"]}, DOCS)
    assert list(s.columns) == ["run", "seed", "status", "duration_s", "folder", "error",
                               "auroc", "auroc.ci_low", "auroc.ci_high", "auroc.verdict",
                               "n_cases", "n_cases.ci_low", "n_cases.ci_high", "n_cases.verdict"]
    assert s["seed"].tolist() == ["1", "2", "3"] and s["status"].tolist() == ["succeeded", "succeeded", "failed"]
    assert s["auroc"].tolist()[:2] == [0.8, 0.6] and math.isnan(s["auroc"].iloc[2])
    assert s["auroc.ci_low"].tolist()[:2] == [0.7, 0.45] and s["auroc.ci_high"].tolist()[:2] == [0.9, 0.7]
    assert s["auroc.verdict"].tolist() == ["shown", "not shown", ""]
    assert s["n_cases"].iloc[0] == 40 and s["n_cases"].isna().tolist() == [False, True, True]
    assert s["n_cases.ci_low"].isna().all()  # a count without an interval has empty CI cells
    assert s["error"].tolist() == ["", "", "echo failed: ValueError: boom"]
    assert default_plot_column(s, ["auroc", "n_cases"]) == "auroc"
    assert default_plot_column(s.assign(auroc=float("nan")), ["auroc", "n_cases"]) == "n_cases"
    assert default_plot_column(summary_frame({"seed": ["3"]}, DOCS[2:]), []) == "duration_s"


def test_summary_figure_draws_the_interval_around_each_value():
    s = summary_frame({"seed": ["1", "2", "3"]}, DOCS)
    fig = summary_figure(s, {"seed": ["1", "2", "3"]}, "auroc", label="AUROC")
    ax = fig.axes[0]
    (line,) = ax.get_lines()[:1]
    assert line.get_xdata().tolist() == [1.0, 2.0] and line.get_ydata().tolist() == [0.8, 0.6]  # seed 3 failed: left out
    segments = [seg for coll in ax.collections for seg in coll.get_segments()]
    # the bars run from ci_low to ci_high: 0.8 - 0.1 .. 0.8 + 0.1 at seed 1, 0.6 - 0.15 .. 0.6 + 0.1 at seed 2
    spans = sorted((round(seg[0][0], 9), round(seg[0][1], 9), round(seg[1][1], 9)) for seg in segments)
    assert spans == [(1.0, 0.7, 0.9), (2.0, 0.45, 0.7)]
    assert ax.get_xlabel() == "seed" and "95% CI" in ax.get_title() and ax.get_title().startswith("AUROC")
    # a seed is a label, not a quantity: points not joined, and a dashed line at their mean (0.8 + 0.6) / 2
    assert line.get_linestyle() == "None"
    (mean,) = [ln for ln in ax.get_lines() if ln.get_label() == "mean over seed"]
    assert list(mean.get_ydata()) == pytest.approx([0.7, 0.7]) and mean.get_linestyle() == "--"
    other = summary_figure(s.rename(columns={"seed": "n_bootstrap"}), {"n_bootstrap": ["1", "2", "3"]}, "auroc")
    assert other.axes[0].get_lines()[0].get_linestyle() == "-"  # a quantity: joined


def test_summary_figure_one_line_per_combination_of_the_other_keys():
    grid = {"metric": ["bleu", "rouge"], "seed": ["1", "2"]}
    docs = [{"run": f"{i:02d}", "params": {"metric": m, "seed": s}, "status": "succeeded", "duration_s": 1.0,
             "folder": "", "error": "", "findings": [{"id": "score", "label": "Score", "value": v, "ci": None,
                                                      "paper": None, "verdict": "shown", "note": ""}]}
            for i, (m, s, v) in enumerate([("bleu", "1", 0.1), ("bleu", "2", 0.2), ("rouge", "1", 0.3), ("rouge", "2", 0.5)])]
    fig = summary_figure(summary_frame(grid, docs), grid, "score")
    ax = fig.axes[0]
    lines = {ln.get_label(): ln.get_ydata().tolist() for ln in ax.get_lines()}
    assert lines == {"seed=1": [0.1, 0.3], "seed=2": [0.2, 0.5]}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bleu", "rouge"]  # a text key, in grid order
    assert "95% CI" not in ax.get_title()  # no interval, no claim of one


def test_wants_gpu_rule():
    assert wants_gpu({"device": "cuda:1", "seed": 0}, "demo")
    assert wants_gpu({"models": [{"model": "Qwen/Qwen2-VL-7B-Instruct", "device": None}]}, "paper")
    assert wants_gpu({"llm_model": "meta-llama/Llama-3.1-8B"}, "full")
    assert not wants_gpu({"llm_model": "meta-llama/Llama-3.1-8B"}, "demo")  # demo presets stay on CPU
    assert not wants_gpu({"llm_model": None, "seed": 0, "datasets": ["iu_xray"]}, "paper")
    assert not wants_gpu({"device": "cpu", "note": "cuda is not used"}, "demo")


# ----------------------------------------------------------------------------------------------- on Ray

@pytest.mark.long
def test_ray_sweep_records_each_member_and_a_failure(echo_project, ray_local, echo_ray):
    res = echo_ray
    s = res.summary
    assert res.sweep_dir.parent == echo_project / "outputs" / "echo_sweep" / "sweeps"
    assert res.sweep_dir.name.endswith("_smoke")
    assert s["run"].tolist() == ["00_seed=1", "01_seed=2", "02_seed=3"]
    assert s["status"].tolist() == ["succeeded", "succeeded", "failed"] and res.failed
    assert "boom: seed 3 fails on purpose" in s["error"].iloc[2] and s["error"].iloc[0] == ""
    assert _finding_columns(s, ["seed"]) == ["tenth_of_seed", "seed_squared"]
    for row in s[s["status"] == "succeeded"].itertuples():
        found = _findings(res.sweep_dir / row.folder)
        got = s.set_index("run").loc[row.run]
        assert got["tenth_of_seed"] == found["tenth_of_seed"]["value"] == int(row.seed) / 10
        assert [got["tenth_of_seed.ci_low"], got["tenth_of_seed.ci_high"]] == found["tenth_of_seed"]["ci"]
        assert got["tenth_of_seed.verdict"] == "shown" and got["seed_squared.verdict"] == "n/a"
        assert got["seed_squared"] == found["seed_squared"]["value"] == int(row.seed) ** 2
    assert (res.sweep_dir / "02_seed=3" / "manifest.json").exists()  # the failed member's partial folder is kept
    on_disk = pd.read_csv(res.sweep_dir / "summary.csv")
    assert on_disk["tenth_of_seed"].tolist()[:2] == [0.1, 0.2] and on_disk["status"].tolist()[2] == "failed"
    m = json.loads((res.sweep_dir / "manifest.json").read_text())
    assert m["engine"] == "ray" and m["ray_version"] == ray_local.__version__ and m["address"] == "local"
    assert m["resources_per_run"] == {"num_cpus": 1.0, "num_gpus": 0.0}  # no GPU here, smoke preset
    assert m["grid"] == {"seed": ["1", "2", "3"]} and m["preset"] == "smoke" and m["status"] == "failed"
    assert [r["status"] for r in m["runs"]] == ["succeeded", "succeeded", "failed"]
    assert m["git"] is not None and m["started"] and m["finished"]
    assert m["plot"] == {"column": "tenth_of_seed", "file": "summary.png", "error": None}
    png = (res.sweep_dir / "summary.png").read_bytes()
    assert png[:8] == PNG_MAGIC and 10_000 < len(png) < 2_000_000
    md = (res.sweep_dir / "index.md").read_text()
    assert "[00_seed=1](00_seed=1/echo_sweep.html)" in md and "0.1 [0.05, 0.35]" in md and "boom" in md
    assert not (echo_project / "outputs" / "echo_sweep" / "latest").exists()  # sweeps do not move latest
    index = (echo_project / "outputs" / "index.html").read_text()
    assert "00_seed=1" in index and "01_seed=2" in index  # the outputs index lists the members


@pytest.mark.long
def test_serial_engine_gives_the_same_summary_as_ray(echo_project, echo_ray):
    serial = sweep("echo_sweep", "smoke", ["seed=1,2,3"], engine="serial", progress=False)
    m = json.loads((serial.sweep_dir / "manifest.json").read_text())
    assert m["engine"] == "serial" and m["ray_version"] is None and m["address"] is None
    assert serial.sweep_dir != echo_ray.sweep_dir
    same = [c for c in echo_ray.summary.columns if c != "duration_s"]
    assert list(serial.summary.columns) == list(echo_ray.summary.columns)
    pd.testing.assert_frame_equal(serial.summary[same], echo_ray.summary[same])


@pytest.mark.long
def test_ray_sweep_refuses_resources_the_local_ray_lacks(echo_project, ray_local, tmp_path):
    with pytest.raises(RadauditError, match="1 GPU per run but the cluster has 0"):
        sweep("echo_sweep", "smoke", ["seed=1,2"], engine="ray", gpus_per_run=1, out=tmp_path, progress=False)
    assert not (tmp_path / "echo_sweep").exists()  # refused before a folder or a task


@pytest.mark.long
def test_data_overview_smoke_sweep_through_ray(shared_data, ray_local, tmp_path, monkeypatch):
    """The issue's "done when": the real notebook over seed=1,2 as Ray tasks, each seed a different subsample."""
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RADAUDIT_PROJECT", raising=False)  # the lab itself, not the echo project of the tests above
    res = sweep("data_overview", "smoke", ["seed=1,2"], data_root=str(shared_data), out=tmp_path / "out",
                engine="ray", progress=False)
    s = res.summary
    assert len(s) == 2 and s["status"].tolist() == ["succeeded", "succeeded"], s["error"].tolist()
    assert res.sweep_dir.parent == tmp_path / "out" / "data_overview" / "sweeps"
    ages = [pd.read_csv(res.sweep_dir / f / "tables" / "age.csv")["mean"].tolist() for f in s["folder"]]
    assert ages[0] != ages[1]  # the seed reached each worker's notebook
    ids = []
    for row in s.itertuples():  # whatever findings the notebook writes are the summary's columns, value for value
        path = res.sweep_dir / row.folder / "findings.json"
        found = {f["id"]: f for f in json.loads(path.read_text())["findings"]} if path.exists() else {}
        ids = ids or list(found)
        for fid, f in found.items():
            assert s.set_index("run").loc[row.run, fid] == pytest.approx(f["value"], nan_ok=True)
    assert _finding_columns(s, ["seed"]) == ids
    m = json.loads((res.sweep_dir / "manifest.json").read_text())
    assert (m["engine"], m["ray_version"], m["address"]) == ("ray", ray_local.__version__, "local")
    assert [r["status"] for r in m["runs"]] == ["succeeded", "succeeded"]
    assert m["plot"]["column"] == (ids[0] if ids else "duration_s")
    png = (res.sweep_dir / "summary.png").read_bytes()
    assert png[:8] == PNG_MAGIC and 10_000 < len(png) < 2_000_000


# ----------------------------------------------------------------------------------------------- the CLI

def test_cli_engine_ray_without_ray_says_how_to_install(echo_project, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    r = CliRunner().invoke(main, ["sweep", "echo_sweep", "--preset", "smoke", "--grid", "seed=1,2", "--engine", "ray",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 2 and "pip install 'radaudit[ray]'" in r.output
    r = CliRunner().invoke(main, ["sweep", "echo_sweep", "--preset", "smoke", "--grid", "seed=1,2", "--address",
                                  "ray://head:10001", "--out", str(tmp_path)])  # a cluster address means Ray too
    assert r.exit_code == 2 and "pip install 'radaudit[ray]'" in r.output
    assert not (tmp_path / "echo_sweep").exists()


@pytest.mark.long
def test_cli_auto_without_ray_runs_serially_and_exits_1_on_a_failed_member(echo_project, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    r = CliRunner().invoke(main, ["sweep", "echo_sweep", "--preset", "smoke", "--grid", "seed=2,3", "--no-progress",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 1, r.output
    assert "engine:  serial" in r.output and "FAILED  01_seed=3" in r.output and "summary.csv" in r.output
    (sweep_dir,) = (tmp_path / "echo_sweep" / "sweeps").iterdir()
    m = json.loads((sweep_dir / "manifest.json").read_text())
    assert m["engine"] == "serial" and [r["status"] for r in m["runs"]] == ["succeeded", "failed"]


# ----------------------------------------------------------------------------------------------- --shards

SHARD_STEP = """\
import os
from pathlib import Path


def step(params, shard):
    i, n = shard
    cache = Path(os.environ["RADAUDIT_CACHE"])
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"echo_shard_seed{params.seed}_{i}of{n}").write_text(str(os.getpid()))
    return {"items": 1, "computed": 1, "cached": 0}
"""

MERGE_CELL = """\
import os
from pathlib import Path
from radaudit.findings import Finding, write_findings
marks = sorted(Path(os.environ["RADAUDIT_CACHE"]).glob(f"echo_shard_seed{seed}_*"))
write_findings(Path(run_dir, "findings.json"), "echo_shards", "smoke", [
    Finding("shards_found", "Shard marks the merge run finds in the cache", len(marks), "n/a", note="a count"),
])
"""


@pytest.fixture
def echo_shards(echo_project, worker_modules, tmp_path, monkeypatch):
    """``echo_shards``: an experiment whose shard step leaves one mark per shard in the cache and whose notebook (the
    merge run) counts the marks of its seed, so the summary shows whether the shards ran before the merge."""
    (worker_modules / "echo_shard_step.py").write_text(SHARD_STEP)
    monkeypatch.syspath_prepend(str(worker_modules))
    (echo_project / "params" / "echo_shards").mkdir(exist_ok=True)
    (echo_project / "params" / "echo_shards" / "smoke.yaml").write_text("description: tiny\n")
    nb = new_notebook(cells=[new_code_cell(PARAMS_CELL, metadata={"tags": ["parameters"]}), new_code_cell(MERGE_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, echo_project / "notebooks" / "echo_shards.ipynb")
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(experiments.EXPERIMENTS, "echo_shards", experiments.Experiment(
        "echo_shards", "echo_shards.ipynb", BaseParams, "counts its shards' marks", shard_step="echo_shard_step:step"))
    return tmp_path / "cache"


@pytest.mark.long
def test_ray_sweep_runs_each_members_shards_before_its_merge(echo_shards, ray_local, tmp_path):
    res = sweep("echo_shards", "smoke", ["seed=4,5"], engine="ray", shards=3, out=tmp_path / "out", progress=False)
    assert res.summary["status"].tolist() == ["succeeded", "succeeded"], res.summary["error"].tolist()
    assert res.summary["shards_found"].tolist() == [3, 3]  # each merge run saw all three of its own shards
    assert sorted(p.name for p in echo_shards.glob("echo_shard_*")) == [
        f"echo_shard_seed{s}_{i}of3" for s in (4, 5) for i in (1, 2, 3)]
    m = json.loads((res.sweep_dir / "manifest.json").read_text())
    assert m["engine"] == "ray" and m["shards_per_run"] == 3
    for run in m["runs"]:
        assert [(r["shard"], r["status"]) for r in run["shards"]] == [("1/3", "succeeded"), ("2/3", "succeeded"),
                                                                      ("3/3", "succeeded")]
        assert run["shards"][0]["counts"] == {"items": 1, "computed": 1, "cached": 0}


@pytest.mark.long
def test_serial_sweep_with_shards_and_the_refusals(echo_shards, tmp_path):
    res = sweep("echo_shards", "smoke", ["seed=6"], engine="serial", shards=2, out=tmp_path / "out", progress=False)
    assert res.summary["shards_found"].tolist() == [2]
    assert [r["shard"] for r in res.manifest["runs"][0]["shards"]] == ["1/2", "2/2"]
    with pytest.raises(RadauditError, match="at least 2"):
        sweep("echo_shards", "smoke", ["seed=6"], engine="serial", shards=1, out=tmp_path / "x", progress=False)
    with pytest.raises(RadauditError, match="echo_sweep has no shard step.*decoding_erasure"):
        sweep("echo_sweep", "smoke", ["seed=6"], engine="serial", shards=2, out=tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()
