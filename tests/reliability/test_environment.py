"""The suite owns its environment: a caller's `HF_HUB_OFFLINE=1` (usual on a GPU cluster) changes nothing.

``tests/conftest.py`` clears the hub and lab variables of the caller's shell before anything is imported. Shown
here on the test that an exported ``HF_HUB_OFFLINE=1`` used to break: it passes with the variable exported, and
fails with it exported when the conftest is left out (``--noconftest``), so the clearing is what makes it pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST = "tests/models/test_vlm.py::test_llava_med_needs_conversion_and_says_how_before_any_download"

pytestmark = pytest.mark.long


def _pytest(*extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    env["PYTHONPATH"] = str(REPO / "tests")  # the tests' helper modules (tiny_vlms), found without the conftest too
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-m", "",
                           *extra, TEST], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_an_exported_hub_offline_switch_changes_no_test():
    res = _pytest()
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def test_without_the_conftest_the_same_shell_breaks_that_test():
    res = _pytest("--noconftest")
    assert res.returncode == 1 and "hub access is off" in res.stdout, res.stdout[-3000:]
