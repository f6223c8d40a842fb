"""Runs that end badly say how, and ``radaudit runs`` / ``radaudit open`` (issues 42 item 5, 43 item 2).

A real runner in a subprocess, on a tiny notebook whose third code cell sleeps: killed with SIGKILL it is listed
``interrupted`` (by ``radaudit runs`` and in ``outputs/index.html``) with the last cell it completed; SIGTERM and
SIGINT mark its manifest ``interrupted`` at once and it exits 128 + the signal. The listing's filters, ``--json``
and ``radaudit open`` run on fabricated run folders (milliseconds each).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from radaudit import experiments, manifest
from radaudit.cli import main
from radaudit.config import BaseParams
from radaudit.run import run_experiment

PARAMS_CELL = "seed = 0\ndata_root = None\nn_bootstrap = 1000\nconfidence = 0.95\nrun_dir = None"
SLOW_CELL = "import time\nfrom pathlib import Path\nPath(run_dir, 'slow_cell_started').write_text('yes')\ntime.sleep(45)"
FINDINGS_CELL = textwrap.dedent("""
    from pathlib import Path
    from radaudit.findings import Finding, write_findings
    write_findings(Path(run_dir, 'findings.json'), 'quick', 'smoke', [
        Finding(id='auroc', label='AUROC', value=0.812, ci=[0.74, 0.88], verdict='shown'),
        Finding(id='gap', label='Gap', value=0.05, ci=[-0.01, 0.11], verdict='not shown', note='CI crosses 0'),
        Finding(id='n_cases', label='Cases', value=40, verdict='n/a', note='a count'),
        Finding(id='fourth', label='Not shown in the listing', value=1.0, verdict='n/a', note='fourth')])
""")

# the runner as `radaudit run` starts it, in a process of its own; the experiment registered there, heartbeats
# every half second (30 s in a real run) so that a sleeping cell's heartbeat is seen to move
CHILD = textwrap.dedent("""
    from radaudit import experiments, manifest
    from radaudit.config import BaseParams
    manifest.HEARTBEAT_EVERY_S = 0.5
    experiments.EXPERIMENTS["slow"] = experiments.Experiment("slow", "slow.ipynb", BaseParams, "sleeps in a cell")
    from radaudit.cli import main
    main(["run", "slow", "--preset", "smoke", "--no-progress"])
""")


def _notebook(path: Path, *cells) -> None:
    nb = new_notebook(cells=[new_code_cell(PARAMS_CELL, metadata={"tags": ["parameters"]}), *cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "notebooks").mkdir(parents=True)
    for exp in ("slow", "quick"):
        (root / "params" / exp).mkdir(parents=True)
        (root / "params" / exp / "smoke.yaml").write_text("description: tiny\nfigure_pdf: false\n")
    _notebook(root / "notebooks" / "slow.ipynb", new_markdown_cell("## Warm-up"), new_code_cell("x = 1"),
              new_markdown_cell("## The slow part"), new_code_cell(SLOW_CELL), new_code_cell("y = 2"))
    _notebook(root / "notebooks" / "quick.ipynb", new_markdown_cell("## Results"), new_code_cell(FINDINGS_CELL))
    monkeypatch.setenv("RADAUDIT_PROJECT", str(root))
    monkeypatch.setitem(experiments.EXPERIMENTS, "quick",
                        experiments.Experiment("quick", "quick.ipynb", BaseParams, "writes findings"))
    return root


def _start_runner(project: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """The runner of `slow` in a subprocess, once its slow cell has started: (process, manifest path)."""
    before = set((project / "outputs" / "slow").glob("*"))
    log = open(tmp_path / "runner.log", "w")  # noqa: SIM115  (closed with the process)
    proc = subprocess.Popen([sys.executable, "-c", CHILD], cwd=project, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "RADAUDIT_PROJECT": str(project)},
                            # a shell without job control starts background jobs with SIGINT ignored, and the
                            # runner leaves an ignored signal ignored: give it the default back
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        started = [p for p in (project / "outputs" / "slow").glob("*/slow_cell_started") if p.parent not in before]
        if started:
            return proc, started[0].parent / "manifest.json"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the slow cell never started:\n" + (tmp_path / "runner.log").read_text())


def _runs(*args: str) -> str:
    res = CliRunner().invoke(main, ["runs", *args])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.long
def test_a_run_killed_with_sigkill_is_listed_interrupted_with_its_last_cell(project, tmp_path):
    proc, mpath = _start_runner(project, tmp_path)
    try:
        m = manifest.read(mpath)
        assert m["status"] == "running" and m["pid"] == proc.pid and m["host"] == socket.gethostname()
        assert m["last_cell"]["heading"] == "Warm-up"  # the slow cell has started: `x = 1` is the last one done
        assert m["last_cell"]["index"] == 3 and m["last_cell"]["of"] == 7  # papermill's injected cell counts
        first = m["heartbeat"]
        time.sleep(2.2)
        assert manifest.read(mpath)["heartbeat"] > first  # refreshed while a cell runs, not only between cells
        live = _runs()
        assert "running" in live and "interrupted" not in live  # its process is alive: not interrupted
    finally:
        proc.kill()  # SIGKILL: no handler, no finally
        proc.wait(timeout=30)
        proc.log.close()
    assert manifest.read(mpath)["status"] == "running"  # what the manifest says, forever
    listing = _runs()
    assert "interrupted" in listing and "after cell 4/7 (Warm-up)" in listing, listing
    assert f"its process {proc.pid} on {socket.gethostname()} is gone" in listing
    rec = json.loads(_runs("--json"))[0]
    assert rec["status"] == "interrupted" and rec["manifest_status"] == "running" and rec["findings"] is None
    index = (project / "outputs" / "index.html").read_text()  # `radaudit runs` rewrote it with the same rule
    assert "interrupted<br><small>after cell 4/7 (Warm-up)</small>" in index
    assert _runs("--status", "interrupted").count("slow") == 1 and "No runs" in _runs("--status", "running")


@pytest.mark.long
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_mark_the_manifest_interrupted_at_once(project, tmp_path, sig):
    proc, mpath = _start_runner(project, tmp_path)
    sent = dt.datetime.now(dt.timezone.utc)
    proc.send_signal(sig)
    deadline, seen = time.monotonic() + 20, None
    while time.monotonic() < deadline and seen is None:
        m = manifest.read(mpath)
        seen = m if m["status"] != "running" else None
        time.sleep(0.05)
    try:
        rc = proc.wait(timeout=90)
    finally:
        proc.kill()
        proc.log.close()
    assert seen is not None and seen["status"] == "interrupted", (tmp_path / "runner.log").read_text()
    assert seen["signal"] == sig.name and seen["error"]["message"] == f"interrupted by {sig.name}"
    finished = manifest.parse_time(seen["finished"])
    assert finished is not None and (finished - sent).total_seconds() < 10  # within seconds, not when the kernel ends
    assert rc == 128 + sig, (tmp_path / "runner.log").read_text()  # 143, 130: a death by that signal
    final = manifest.read(mpath)
    assert final["status"] == "interrupted" and final["signal"] == sig.name and final["last_cell"]["heading"] == "Warm-up"
    assert f"interrupted after cell 4/7 (Warm-up): by {sig.name}" in _runs()
    assert f"error: interrupted by {sig.name}; what the run wrote is kept in" in (tmp_path / "runner.log").read_text()


@pytest.mark.long
def test_a_finished_run_lists_ok_with_its_first_three_findings(project):
    res = run_experiment("quick", "smoke", progress=False)
    m = manifest.read(res.run_dir / "manifest.json")
    assert m["status"] == "succeeded" and m["last_cell"]["heading"] == "Results" and m["pid"] == os.getpid()
    out = _runs()
    row = next(line for line in out.splitlines() if res.run_dir.name in line)
    assert " ok " in row and "smoke" in row and (m["git"]["commit"] or "?")[:8] in row
    assert "auroc=0.812 [0.74, 0.88] shown; gap=0.05 [-0.01, 0.11] not shown; n_cases=40 n/a" in out
    assert "fourth" not in out  # the first three findings only
    res2 = CliRunner().invoke(main, ["open", "latest"])
    assert res2.exit_code == 0 and res2.output.strip() == str((res.run_dir / "quick.html").resolve())
    assert f"{res.run_dir.name}</a></td><td>2" in (project / "outputs" / "index.html").read_text()


# ------------------------------------------------------------------------------------- fabricated run folders

def _fake_run(root: Path, experiment: str, name: str, *, preset: str = "demo", status: str = "succeeded",
              started: str, findings: list | None = None, report: bool = True, **extra) -> Path:
    d = root / experiment / name
    d.mkdir(parents=True)
    m = {"experiment": experiment, "preset": preset, "run_name": name, "status": status, "started": started,
         "duration_s": 75.0 if status != "running" else None, "git": {"commit": "0123456789abcdef", "dirty": False},
         **extra}
    manifest.write(d / "manifest.json", m)
    if findings is not None:
        (d / "findings.json").write_text(json.dumps({"experiment": experiment, "preset": preset, "findings": findings}))
    if report:
        (d / f"{experiment}.html").write_text("<!DOCTYPE html>")
    return d


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    root = tmp_path / "proj" / "outputs"
    (root.parent / "notebooks").mkdir(parents=True)
    (root.parent / "params").mkdir()
    monkeypatch.setenv("RADAUDIT_PROJECT", str(root.parent))
    now = dt.datetime.now(dt.timezone.utc)
    old = (now - dt.timedelta(hours=2)).isoformat(timespec="seconds")
    _fake_run(root, "decoding_erasure", "20250101-100000_demo", started="2025-01-01T10:00:00+00:00",
              findings=[{"id": "distinct", "value": 0.04, "ci": [0.01, 0.09], "verdict": "shown"}])
    _fake_run(root, "decoding_erasure", "20250102-100000_smoke", preset="smoke", status="failed",
              started="2025-01-02T10:00:00+00:00")
    _fake_run(root, "data_overview", "20250103-100000_demo", started="2025-01-03T10:00:00+00:00",
              git={"commit": "fedcba9876543210", "dirty": True})
    # killed on another machine two hours ago: its heartbeat stopped then
    _fake_run(root, "data_overview", "20250104-100000_demo", status="running", started=old, report=False,
              pid=12345, host="another-host.example", heartbeat=old,
              last_cell={"index": 5, "of": 20, "heading": "Bootstrap"})
    return root


def test_filters_order_and_limit(outputs):
    out = _runs()
    names = [n for n in ("20250104", "20250103", "20250102", "20250101") if n in out]
    assert [out.index(n) for n in names] == sorted(out.index(n) for n in names) and len(names) == 4  # newest first
    assert "20250101" not in _runs("--experiment", "data_overview") and "20250103" in _runs("--experiment", "data_overview")
    smoke = _runs("--preset", "smoke")
    assert "20250102" in smoke and "20250101" not in smoke and "failed" in smoke
    ok = _runs("--status", "ok")
    assert "20250101" in ok and "20250103" in ok and "20250102" not in ok and "20250104" not in ok
    assert "fedcba98+dirty" in ok and "01234567 " in ok and "1m15s" in ok
    assert "distinct=0.04 [0.01, 0.09] shown" in ok and "no findings" in ok
    one = _runs("--limit", "1")
    assert "20250104" in one and "20250103" not in one
    assert "No runs under" in _runs("--experiment", "nothing_like_it")


def test_a_stale_heartbeat_on_another_host_is_interrupted(outputs):
    out = _runs("--status", "interrupted")
    assert "20250104-100000_demo" in out and "after cell 6/20 (Bootstrap)" in out
    assert "no heartbeat on another-host.example for 120 min (limit 10 min)" in out
    m = manifest.read(outputs / "data_overview" / "20250104-100000_demo" / "manifest.json")
    fresh = {**m, "heartbeat": manifest.utcnow()}
    assert manifest.observed_status(fresh) == ("running", "")  # the same run, heard from a minute ago: alive
    assert manifest.observed_status({**m, "status": "failed"})[0] == "failed"  # only `running` is ever reread


def test_same_host_runs_are_judged_by_their_pid():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = socket.gethostname()
    recent = manifest.utcnow()
    assert manifest.observed_status({"status": "running", "pid": dead.pid, "host": here, "heartbeat": recent}) == (
        "interrupted", f"its process {dead.pid} on {here} is gone")  # gone though its heartbeat is fresh
    old = "2020-01-01T00:00:00+00:00"
    alive = {"status": "running", "pid": os.getpid(), "host": here, "heartbeat": old}
    assert manifest.observed_status(alive)[0] == "running"  # its process lives: an old heartbeat does not matter here


def test_json_lists_every_field(outputs):
    recs = json.loads(_runs("--json", "--experiment", "decoding_erasure"))
    assert [r["run"] for r in recs] == ["20250102-100000_smoke", "20250101-100000_demo"]
    assert recs[1]["status"] == "ok" and recs[1]["manifest_status"] == "succeeded" and recs[1]["commit"].startswith("0123")
    assert recs[1]["findings"] == [{"id": "distinct", "value": 0.04, "ci": [0.01, 0.09], "verdict": "shown"}]
    assert recs[0]["status"] == "failed" and recs[0]["findings"] is None and recs[0]["duration_s"] == 75.0
    assert recs[1]["report"].endswith("decoding_erasure/20250101-100000_demo/decoding_erasure.html")


def test_open_finds_a_run_by_name_path_or_latest(outputs, monkeypatch):
    def opened(*args):
        res = CliRunner().invoke(main, ["open", *args])
        assert res.exit_code == 0, res.output
        return res.output.strip()

    expected = str((outputs / "decoding_erasure" / "20250101-100000_demo" / "decoding_erasure.html").resolve())
    assert opened("20250101-100000_demo") == expected
    assert opened("decoding_erasure/20250101-100000_demo") == expected
    assert opened("latest").endswith("data_overview/20250103-100000_demo/data_overview.html")  # newest with a report
    assert opened("decoding_erasure/latest").endswith("decoding_erasure/20250102-100000_smoke/decoding_erasure.html")
    calls = []
    monkeypatch.setattr("webbrowser.open", lambda url: calls.append(url) or True)
    assert opened("20250101-100000_demo", "--browser") == expected and calls == [Path(expected).as_uri()]


def test_open_a_missing_run_names_close_matches(outputs):
    res = CliRunner().invoke(main, ["open", "20250101-100000_dem"])
    assert res.exit_code == 2
    assert "No run '20250101-100000_dem'" in res.output and "20250101-100000_demo" in res.output
    assert "Close matches" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["open", "20250104-100000_demo"])  # killed before its report was written
    assert res.exit_code == 2 and "(interrupted) has no report" in res.output


def test_manifest_writes_are_atomic(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    manifest.write(path, {"status": "running"})

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        manifest.update(path, status="succeeded")
    assert manifest.read(path) == {"status": "running"}  # the old manifest, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temporary file left behind
