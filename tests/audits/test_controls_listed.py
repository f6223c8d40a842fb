"""Every control a finding rests on can fail, and a test shows it failing (issue 40, item 1).

On each experiment's smoke run: every id named in any finding's ``controls`` is a finding of the same run, is not a
passing control with a CI of zero width (fixed by how it is computed), carries a ``bar`` (a control is a test: it passes
or fails against something), and is named by a test of ``tests/audits/test_controls_fail_<experiment>.py`` (the
file where each control is shown failing on a broken stand-in, a planted defect or a wrong input). And no finding
anywhere is ``shown`` with a CI of zero width or a CI that crosses its bar (:func:`radaudit.findings.settle`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from radaudit.experiments import EXPERIMENTS
from radaudit.findings import judge, read_findings

HERE = Path(__file__).resolve().parent


def _names_in_tests(path: Path) -> str:
    """The test functions' names and string literals of a test file (where a control id is named)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            parts.append(node.name)
            parts += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return "\n".join(parts)


@pytest.mark.parametrize("experiment", list(EXPERIMENTS))
def test_every_control_can_fail_and_is_shown_failing(smoke_runs, experiment):
    res = smoke_runs(experiment)[0]
    findings = {f.id: f for f in read_findings(res.run_dir)["findings"]}
    controls = sorted({c for f in findings.values() for c in f.controls})
    for f in findings.values():
        assert not (f.verdict == "shown" and f.zero_width), f"{f.id}: shown with a zero-width CI"
        if f.verdict == "shown" and f.bar is not None:
            assert judge(f.value, f.ci, f.bar).verdict == "shown", f"{f.id}: shown with a CI across its bar"
    if not controls:
        return
    fail_tests = HERE / f"test_controls_fail_{experiment}.py"
    assert fail_tests.is_file(), f"{experiment} names controls {controls} but has no {fail_tests.name}"
    named = _names_in_tests(fail_tests)
    for c in controls:
        assert c in findings, f"{experiment}: control {c!r} is named but not reported"
        assert findings[c].bar is not None, f"{experiment}: control {c!r} has no bar to pass or fail against"
        # a control whose CI has zero width cannot pass (settle makes such a shown n/a); on smoke's tiny samples one
        # may come out so, and its findings fall with it
        assert not (findings[c].zero_width and findings[c].verdict == "shown"), c
        assert c in named, f"{experiment}: no test in {fail_tests.name} names control {c!r} (show it failing)"


def test_the_check_finds_a_control_without_a_failing_test(tmp_path):
    """The name check itself can fail: a file whose tests never name the control does not count."""
    f = tmp_path / "test_controls_fail_x.py"
    f.write_text('def test_other():\n    assert "planted_control_a" != "x"\n\n# planted_control_b only in a comment\n')
    named = _names_in_tests(f)
    assert "planted_control_a" in named and "planted_control_b" not in named
