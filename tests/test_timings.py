"""radaudit.timings and `radaudit timings`: seconds per executed cell, per section, and the slowest cells over runs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from radaudit.cli import main
from radaudit.errors import ParamsError
from radaudit.timings import cell_times, latest_runs, section_times, slowest_cells


def _cell(kind: str, source: str, seconds: float | None = None) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
    if seconds is not None:
        cell["metadata"]["papermill"] = {"duration": seconds}
    return cell


def _run(root, experiment: str, name: str, durations: list[float | None], *, status="succeeded", preset="demo",
         started="2026-11-27T08:00:00+00:00"):
    """A run folder: manifest + an executed notebook with a heading before the second code cell."""
    run_dir = root / experiment / name
    run_dir.mkdir(parents=True)
    cells = [_cell("code", "import x\n", durations[0]), _cell("markdown", "Intro.\n\n## 2. Training\nText."),
             *[_cell("code", f"# train\n\nmodel_{i} = train({i})\n", d) for i, d in enumerate(durations[1:])]]
    (run_dir / f"{experiment}.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                             "nbformat_minor": 5}))
    (run_dir / "manifest.json").write_text(json.dumps({"experiment": experiment, "preset": preset, "status": status,
                                                       "started": started, "notebook": f"{experiment}.ipynb"}))
    return run_dir


def test_cell_times_sections_and_first_code_line(tmp_path):
    run = _run(tmp_path, "exp", "r1", [1.5, 10.0, None, 2.25])
    cells = cell_times(run / "exp.ipynb")
    # the third code cell did not run (no duration): no row, and the cell numbers stay those of the notebook
    assert cells["cell"].tolist() == [0, 1, 3]
    assert cells["section"].tolist() == ["setup", "2. Training", "2. Training"]
    assert cells["seconds"].tolist() == [1.5, 10.0, 2.25]
    assert cells["code"].tolist() == ["import x", "model_0 = train(0)", "model_2 = train(2)"]  # comments skipped
    assert section_times(run / "exp.ipynb") == {"setup": 1.5, "2. Training": 12.25}


def test_the_manifest_steps_are_the_section_times(tmp_path):
    from radaudit.run import notebook_steps

    run = _run(tmp_path, "exp", "r1", [0.1234, 0.2, 0.3004])
    assert notebook_steps(run / "exp.ipynb") == {"setup": 0.123, "2. Training": 0.5}


def test_slowest_cells_over_runs_with_their_share(tmp_path):
    a = _run(tmp_path, "alpha", "r1", [1.0, 30.0, 9.0])        # run total 40
    b = _run(tmp_path, "beta", "r1", [5.0, 20.0])              # run total 25
    table = slowest_cells([a, b], top=3)
    assert table[["experiment", "cell", "seconds"]].values.tolist() == [["alpha", 1, 30.0], ["beta", 1, 20.0],
                                                                       ["alpha", 2, 9.0]]
    assert table["share_of_run"].tolist() == pytest.approx([30 / 40, 20 / 25, 9 / 40])
    assert (table["preset"] == "demo").all() and (table["run"] == "r1").all()
    with pytest.raises(ParamsError, match="top must be at least 1"):
        slowest_cells([a], top=0)
    with pytest.raises(ParamsError, match="not a run folder"):
        slowest_cells([tmp_path], top=1)


def test_latest_runs_takes_the_newest_succeeded_run_of_the_preset(tmp_path):
    _run(tmp_path, "alpha", "old", [1.0, 1.0], started="2026-11-26T08:00:00+00:00")
    new = _run(tmp_path, "alpha", "new", [1.0, 1.0], started="2026-11-27T08:00:00+00:00")
    _run(tmp_path, "alpha", "newest_failed", [1.0, 1.0], status="failed", started="2026-11-28T08:00:00+00:00")
    _run(tmp_path, "alpha", "newest_smoke", [1.0, 1.0], preset="smoke", started="2026-11-29T08:00:00+00:00")
    beta = _run(tmp_path, "beta", "only", [1.0, 1.0])
    assert latest_runs(tmp_path, "demo") == [new, beta]
    assert latest_runs(tmp_path, None, ["alpha"]) == [tmp_path / "alpha" / "newest_smoke"]


def test_cli_prints_the_slowest_cells_and_says_what_to_do_without_runs(tmp_path):
    _run(tmp_path, "data_overview", "r1", [2.0, 7.5])
    r = CliRunner().invoke(main, ["timings", "--out", str(tmp_path), "--top", "1"])
    assert r.exit_code == 0, r.output
    assert "The 1 slowest cells of 1 run(s)" in r.output
    assert "7.5 s" in r.output and "79%" in r.output  # 7.5 of 9.5 s
    assert "data_overview/r1  cell 1 (2. Training): model_0 = train(0)" in r.output
    r = CliRunner().invoke(main, ["timings", "data_overview", "--preset", "paper", "--out", str(tmp_path)])
    assert r.exit_code == 1 and "No succeeded run of preset 'paper'" in r.output
    r = CliRunner().invoke(main, ["timings", "no_such_experiment", "--out", str(tmp_path)])
    assert r.exit_code != 0 and "no_such_experiment" in r.output
