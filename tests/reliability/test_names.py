"""Names that become paths: one safe component, or exit 2 with one line and nothing written (issue 24)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from radaudit.errors import ParamsError
from radaudit.paths import check_component
from radaudit.run import run_experiment


@pytest.mark.parametrize("bad", ["../escape", "../../../x", "a/b", ".hidden", "..", "", "x" * 101, "a b", "a..b",
                                 "nul\x00", "~root"])
def test_unsafe_components_are_refused(bad):
    with pytest.raises(ParamsError, match="not allowed"):
        check_component(bad)


@pytest.mark.parametrize("good", ["run1", "my-run_2.v3", "20261126-101010_demo", "x" * 100, "A.B"])
def test_safe_components_pass(good):
    assert check_component(good) == good


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "radaudit", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.long
@pytest.mark.parametrize("flag, value", [("--name", "../escape"), ("--name", "../../../x"),
                                         ("--preset", "../../x")])
def test_cli_exits_2_with_one_line_and_writes_nothing(tmp_path, flag, value):
    out = tmp_path / "out"
    r = _cli("run", "data_overview", *([flag, value] if flag == "--preset" else ["--preset", "smoke", flag, value]),
             "--out", str(out), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "not allowed" in lines[0], r.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


def test_library_call_is_checked_too(tmp_path):
    with pytest.raises(ParamsError, match="run name '../x' is not allowed"):
        run_experiment("data_overview", "smoke", name="../x", out=tmp_path)
    assert list(tmp_path.iterdir()) == []
