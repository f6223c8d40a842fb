"""``radaudit run all --jobs N`` (radaudit.run_many): the order runs start in, bad input, and the numbers being those of
one run at a time."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from radaudit.cli import main
from radaudit.errors import ParamsError
from radaudit.experiments import EXPERIMENTS
from radaudit.run_many import run_many, run_order


def _manifest(root, experiment: str, name: str, seconds: float, *, preset: str = "demo", status: str = "succeeded",
              started: str = "2026-11-27T10:00:00+00:00") -> None:
    d = root / experiment / name
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"experiment": experiment, "preset": preset, "status": status,
                                                 "started": started, "duration_s": seconds}))


def test_order_is_longest_first_with_never_run_experiments_first(tmp_path):
    _manifest(tmp_path, "data_overview", "a", 9.0)
    _manifest(tmp_path, "synthetic_cxr", "a", 40.0)
    _manifest(tmp_path, "modality_shift", "a", 50.0)
    # the newest succeeded run of the preset counts: an older long run, a failed one and a smoke run do not
    _manifest(tmp_path, "modality_shift", "old", 500.0, started="2026-11-26T10:00:00+00:00")
    _manifest(tmp_path, "data_overview", "failed", 900.0, status="failed", started="2026-11-28T10:00:00+00:00")
    _manifest(tmp_path, "atomic_facts", "s", 800.0, preset="smoke")
    names = ["data_overview", "decoding_erasure", "atomic_facts", "modality_shift", "synthetic_cxr"]
    assert run_order(names, tmp_path, "demo") == ["decoding_erasure", "atomic_facts", "modality_shift",
                                                   "synthetic_cxr", "data_overview"]
    # a fresh clone: the experiments that train stand-ins first, the heaviest first; the rest in registry order
    assert run_order(names, tmp_path / "nothing-here", "demo") == ["synthetic_cxr", "modality_shift", "decoding_erasure",
                                                                   "data_overview", "atomic_facts"]
    _manifest(tmp_path, "synthetic_cxr", "b", 5.0, started="2026-11-28T10:00:00+00:00")  # once run, its time counts
    assert run_order(names, tmp_path, "demo")[:2] == ["decoding_erasure", "atomic_facts"]


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(ParamsError, match="--jobs must be a positive integer"):
        run_many(["data_overview"], jobs, "smoke")


def test_cli_refuses_zero_jobs():
    res = CliRunner().invoke(main, ["run", "all", "--preset", "smoke", "--jobs", "0"])
    assert res.exit_code == 2 and "--jobs" in res.output


@pytest.mark.long
def test_two_at_a_time_gives_the_tables_of_one_at_a_time(smoke_runs, shared_data, tmp_path, monkeypatch):
    """Two smoke runs in parallel worker processes (one cache of their own) give, byte for byte, the tables and
    findings of the session's one-at-a-time smoke runs."""
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "cache"))  # the spawned workers inherit it
    names = ["data_overview", "atomic_facts"]
    started: list[str] = []
    outcomes = run_many(names, 2, "smoke", data_root=str(shared_data), out=str(tmp_path / "out"),
                        on_start=started.append)
    assert sorted(started) == sorted(names) and all(o.ok for o in outcomes), [o.error for o in outcomes]
    for o in outcomes:
        (alone,) = smoke_runs(o.experiment)
        for sub in ("tables",):
            ours = sorted(p.relative_to(o.run_dir) for p in (o.run_dir / sub).rglob("*") if p.is_file())
            theirs = sorted(p.relative_to(alone.run_dir) for p in (alone.run_dir / sub).rglob("*") if p.is_file())
            assert ours == theirs and ours
            for rel in ours:
                assert (o.run_dir / rel).read_bytes() == (alone.run_dir / rel).read_bytes(), rel
        assert (json.loads((o.run_dir / "findings.json").read_text())["findings"]
                == json.loads((alone.run_dir / "findings.json").read_text())["findings"])


def test_stage_lines_carry_the_experiment_name(capsys):
    """With several notebooks at once there is no cell bar: each stage line (training steps, warnings) is printed
    after its experiment's name, a repeated warning once; other loggers' lines stay out of the terminal."""
    import logging

    from radaudit.run import _TerminalStage

    h = _TerminalStage("[modality_shift] ")
    h.emit(logging.LogRecord("radaudit.models.train", logging.INFO, __file__, 1, "train 200/800 steps", (), None))
    h.emit(logging.LogRecord("radaudit.audits", logging.WARNING, __file__, 1, "74 of 108 answers are unknown", (), None))
    h.emit(logging.LogRecord("radaudit.audits", logging.WARNING, __file__, 1, "74 of 108 answers are unknown", (), None))
    h.emit(logging.LogRecord("radaudit.models.train", logging.INFO, __file__, 1, "train 200/800 steps", (), None))
    h.emit(logging.LogRecord("radaudit.audits", logging.INFO, __file__, 1, "an ordinary info line", (), None))
    h.emit(logging.LogRecord("papermill", logging.WARNING, __file__, 1, "kernel stderr", (), None))
    assert capsys.readouterr().out.splitlines() == ["  [modality_shift] train 200/800 steps",
                                                    "  [modality_shift] warning: 74 of 108 answers are unknown",
                                                    "  [modality_shift] train 200/800 steps"]  # a warning shows once


@pytest.mark.long
def test_interrupt_marks_the_running_notebooks_and_starts_no_more(shared_data, tmp_path):
    """SIGINT to `radaudit run all --jobs 2` alone (a scheduler would send it so): it is passed on to the running
    notebooks, which mark their manifests `interrupted` as a lone run does; the runs not started are never started."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    out = tmp_path / "out"
    env = {**os.environ, "RADAUDIT_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "radaudit"), "run", "all", "--preset", "smoke", "--jobs",
                             "2", "--out", str(out), "--data-root", str(shared_data)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            # a shell without job control starts background commands (`make test &`) with SIGINT
                            # ignored, and Python then leaves it ignored: the runner would never see this SIGINT
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    running = []
    while time.monotonic() < deadline and not running:
        time.sleep(0.5)
        for m in out.glob("synthetic_cxr/2*/manifest.json"):  # first in a fresh folder's order (heaviest first)
            try:
                running = [m] if json.loads(m.read_text())["status"] == "running" else []
            except ValueError:
                pass
    assert running, "synthetic_cxr never started"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=180)
    assert proc.returncode != 0, output
    assert json.loads(running[0].read_text())["status"] == "interrupted", output
    assert run_order(list(EXPERIMENTS), tmp_path / "empty", "smoke")[-1] == "atomic_facts"
    assert not (out / "atomic_facts").exists(), output  # the last in the order: never started
