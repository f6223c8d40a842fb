"""The runner and CLI on a tiny throwaway project: success, failure, sweeps, error messages.

The real notebook's runs are in test_data_overview.py; these use two three-cell notebooks so the
runner's own behaviour is tested in seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbformat.v4 import new_code_cell, new_notebook

from radaudit import experiments
from radaudit.cli import main
from radaudit.config import BaseParams
from radaudit.errors import RunFailedError
from radaudit.run import notebook_steps, run_experiment
from radaudit.sweep import parse_grid, sweep


class EchoParams(BaseParams):
    value: str = "a"


def _nb(path: Path, *cells: str) -> None:
    nb = new_notebook(cells=[new_code_cell(cells[0], metadata={"tags": ["parameters"]})]
                      + [new_code_cell(c) for c in cells[1:]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


PARAMS_CELL = "seed = 0\ndata_root = None\nn_bootstrap = 1000\nconfidence = 0.95\nvalue = 'a'\nrun_dir = None"
WRITE_CELL = ("from pathlib import Path\n"
              "Path(run_dir, 'tables', 'value.csv').write_text(f'value,seed\\n{value},{seed}\\n')")


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "notebooks").mkdir(parents=True)
    for exp in ("echo", "fail"):
        (root / "params" / exp).mkdir(parents=True)
        (root / "params" / exp / "smoke.yaml").write_text("description: tiny\nvalue: b\n")
    _nb(root / "notebooks" / "echo.ipynb", PARAMS_CELL, WRITE_CELL)
    _nb(root / "notebooks" / "fail.ipynb", PARAMS_CELL, WRITE_CELL, "raise ValueError('boom: the model answered nothing')")
    monkeypatch.setenv("RADAUDIT_PROJECT", str(root))
    monkeypatch.setitem(experiments.EXPERIMENTS, "echo", experiments.Experiment("echo", "echo.ipynb", EchoParams, "writes a table"))
    monkeypatch.setitem(experiments.EXPERIMENTS, "fail", experiments.Experiment("fail", "fail.ipynb", EchoParams, "fails"))
    return root


def test_successful_run_writes_everything(project):
    res = run_experiment("echo", "smoke", ["seed=7"], progress=False)
    d = res.run_dir
    assert d.parent == project / "outputs" / "echo"
    assert (d / "tables" / "value.csv").read_text() == "value,seed\nb,7\n"  # preset value + override reached the kernel
    assert (d / "echo.ipynb").exists() and (d / "echo.html").read_text().lstrip().startswith("<!DOCTYPE html>")
    m = json.loads((d / "manifest.json").read_text())
    assert m["status"] == "succeeded" and m["params"]["seed"] == 7 and m["params"]["value"] == "b"
    assert m["overrides"] == ["seed=7"] and m["preset"] == "smoke" and m["error"] is None
    assert m["finished"] and m["duration_s"] > 0 and set(m["versions"]) >= {"python", "pandas", "papermill"}
    assert "value.csv" in m["outputs"]["tables"]
    assert (project / "outputs" / "echo" / "latest").resolve() == d.resolve()
    assert (d / "run.log").exists()


@pytest.mark.long
def test_runs_never_overwrite(project):
    a = run_experiment("echo", "smoke", progress=False, name="same")
    b = run_experiment("echo", "smoke", progress=False, name="same")
    assert a.run_dir != b.run_dir and b.run_dir.name == "same-2"
    assert (a.run_dir / "manifest.json").exists() and (b.run_dir / "manifest.json").exists()
    assert (project / "outputs" / "echo" / "latest").resolve() == b.run_dir.resolve()


def test_failed_cell_keeps_partial_outputs_and_marks_manifest(project):
    with pytest.raises(RunFailedError, match="boom") as e:
        run_experiment("fail", "smoke", progress=False, name="f")
    d = project / "outputs" / "fail" / "f"
    assert "Partial outputs kept in" in str(e.value)
    assert (d / "tables" / "value.csv").exists()  # written before the failing cell
    m = json.loads((d / "manifest.json").read_text())
    assert m["status"] == "failed"
    assert m["error"]["ename"] == "ValueError" and "boom" in m["error"]["evalue"]
    assert (d / "fail.ipynb").exists() and (d / "fail.html").exists()
    assert not (project / "outputs" / "fail" / "latest").exists()  # latest only moves on success


def test_cli_failed_run_exits_1(project):
    r = CliRunner().invoke(main, ["run", "fail", "--preset", "smoke", "--no-progress"])
    assert r.exit_code == 1
    assert "boom" in r.output


def test_cli_unknown_key_fails_before_running(project):
    r = CliRunner().invoke(main, ["run", "echo", "--preset", "smoke", "-p", "no_such_key=1"])
    assert r.exit_code == 2
    assert "unknown key 'no_such_key'" in r.output
    assert "Allowed keys: seed, data_root, n_bootstrap, confidence, figure_dpi, figure_pdf, value" in r.output
    assert not (project / "outputs").exists()


def test_cli_unknown_experiment_and_preset(project):
    r = CliRunner().invoke(main, ["run", "nope"])
    assert r.exit_code == 2 and "Known experiments" in r.output and "echo" in r.output
    r = CliRunner().invoke(main, ["run", "echo", "--preset", "paperr"])
    assert r.exit_code == 2 and "Available presets: smoke" in r.output


@pytest.mark.long
def test_sweep_runs_the_grid_and_writes_an_index(project):
    res = sweep("echo", "smoke", ["value=x,y", "seed=1,2"], progress=False, engine="serial")
    sweep_dir, index = res.sweep_dir, res.summary
    assert sweep_dir.parent == project / "outputs" / "echo" / "sweeps"
    assert list(index["status"]) == ["succeeded"] * 4
    assert sorted(zip(index["value"], index["seed"])) == [("x", "1"), ("x", "2"), ("y", "1"), ("y", "2")]
    for row in index.itertuples():
        table = (sweep_dir / row.folder / "tables" / "value.csv").read_text()
        assert table == f"value,seed\n{row.value},{row.seed}\n"
        assert (sweep_dir / row.folder / "echo.html").exists()
    md = (sweep_dir / "index.md").read_text()
    assert "](00_value=x_seed=1/echo.html)" in md
    assert (sweep_dir / "summary.csv").exists() and (sweep_dir / "manifest.json").exists()
    assert not (project / "outputs" / "echo" / "latest").exists()  # sweeps do not move latest
    assert "00_value=x_seed=1" in (project / "outputs" / "index.html").read_text()  # members listed in the index


def test_sweep_validates_every_combination_first(project):
    from radaudit.errors import ParamsError

    with pytest.raises(ParamsError, match="not a parameter"):
        sweep("echo", "smoke", ["nope=1,2"], progress=False)
    with pytest.raises(ParamsError, match="seed"):
        sweep("echo", "smoke", ["seed=1,x"], progress=False)
    with pytest.raises(ParamsError, match="seed"):  # the bad value is last: nothing ran before it was found
        sweep("echo", "smoke", ["seed=1,2,x"], progress=False, engine="serial")
    assert not (project / "outputs").exists()


def test_parse_grid_errors():
    from radaudit.errors import ParamsError

    assert parse_grid(["a=1,2", "b=x"]) == {"a": ["1", "2"], "b": ["x"]}
    for bad in (["a"], ["a="], ["a=1,,2"], ["a=1", "a=2"], []):
        with pytest.raises(ParamsError):
            parse_grid(bad)


def test_cli_list_shows_experiments_and_presets(project):
    r = CliRunner().invoke(main, ["list"])
    assert r.exit_code == 0
    assert "echo" in r.output and "--preset smoke" in r.output and "tiny" in r.output


def test_notebook_steps_sums_sections(tmp_path):
    from nbformat.v4 import new_markdown_cell

    nb = new_notebook(cells=[new_code_cell("a"), new_markdown_cell("## Load data\ntext"), new_code_cell("b"), new_code_cell("c")])
    for c, d in zip([nb.cells[0], nb.cells[2], nb.cells[3]], [0.5, 1.25, 2.0]):
        c.metadata["papermill"] = {"duration": d}
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert notebook_steps(tmp_path / "x.ipynb") == {"setup": 0.5, "Load data": 3.25}


def test_cli_takes_papermills_param_form_beside_key_equals_value():
    from radaudit.cli import papermill_params

    assert papermill_params(["run", "x", "-p", "seed", "3", "--param", "offset", "-1", "-p", "a=b", "--preset", "s"]) \
        == ["run", "x", "-p", "seed=3", "--param", "offset=-1", "-p", "a=b", "--preset", "s"]
    # a name followed by the next option is left alone: the override parser then names the form it wants
    assert papermill_params(["-p", "seed", "--preset", "demo"]) == ["-p", "seed", "--preset", "demo"]
    for args in (["-p", "seed", "3", "-p", "n_bootstrap=50"], ["-p", "seed=3", "--param", "n_bootstrap", "50"]):
        r = CliRunner().invoke(main, ["params", "data_overview", "--preset", "smoke", *args])
        assert r.exit_code == 0, r.output
        assert "\nseed: 3\n" in "\n" + r.output and "\nn_bootstrap: 50\n" in "\n" + r.output
    r = CliRunner().invoke(main, ["params", "data_overview", "-p", "seed"])
    assert r.exit_code == 2 and "must look like key=value" in r.output


def test_no_progress_still_prints_the_warnings_once(capsys):
    """--no-progress hides the progress lines, not the warnings (a damaged cache set aside must be seen)."""
    import logging

    from radaudit.run import _TerminalStage  # noqa: PLC2701 - the runner's own handler, tested where it lives

    h = _TerminalStage("", warnings_only=True)
    rec = lambda name, level, msg: logging.LogRecord(name, level, __file__, 1, msg, None, None)  # noqa: E731
    h.emit(rec("radaudit.progress", logging.INFO, "generate greedy: 4/12 batches"))
    h.emit(rec("radaudit.models.cache", logging.WARNING, "The cache x.sqlite was damaged"))
    h.emit(rec("radaudit.models.cache", logging.WARNING, "The cache x.sqlite was damaged"))
    out = capsys.readouterr().out
    assert out == "  warning: The cache x.sqlite was damaged\n"


THREADS_CELL = ("import os, torch\nfrom pathlib import Path\n"
                "Path(run_dir, 'tables', 'threads.csv').write_text(f\"{os.environ.get('OMP_NUM_THREADS')},"
                "{torch.get_num_threads()}\\n\")")


@pytest.mark.parametrize("caller", [None, "2"])
def test_the_kernel_runs_one_torch_thread_unless_the_caller_says(project, monkeypatch, caller):
    """radaudit.run.KERNEL_THREADS: a kernel trains on one thread (the same stand-in from `run`, `run all --jobs N`
    and Ray's 1-thread workers); a caller's OMP_NUM_THREADS wins, and the runner's own environment is left as it was."""
    _nb(project / "notebooks" / "echo.ipynb", PARAMS_CELL, THREADS_CELL)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)  # conftest caps it under xdist; torch would take it
    if caller is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", caller)
    res = run_experiment("echo", "smoke", progress=False)
    want = caller or "1"
    assert (res.run_dir / "tables" / "threads.csv").read_text() == f"{want},{want}\n"
    assert os.environ.get("OMP_NUM_THREADS") == caller
