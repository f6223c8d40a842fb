"""Same preset + seed twice → byte-identical tables and the same findings, for every experiment (issue 24, item 6).

Two real `smoke` runs per experiment, sharing one model/generation cache (as two runs on one machine
do); every `tables/*.csv` is compared byte for byte, and `findings.json` without its run-specific
fields (run id, time, commit)."""

from __future__ import annotations

import hashlib
import json

import pytest

from radaudit.experiments import EXPERIMENTS


def _csv_digests(run_dir):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((run_dir / "tables").glob("*.csv"))}


def _findings(run_dir):
    path = run_dir / "findings.json"
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    return doc.get("findings")


pytestmark = pytest.mark.long  # a second smoke run of every notebook: CI's tier, not `make test`'s


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS))
def test_smoke_twice_is_byte_identical(experiment, smoke_runs):
    runs = smoke_runs(experiment, 2)  # the notebook tests' run and a second one (tests/conftest.py)
    a, b = (_csv_digests(r.run_dir) for r in runs)
    assert a, f"{experiment}: the smoke run wrote no tables/*.csv"
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    assert not differ, f"{experiment}: tables differ between two identical runs: {differ}"
    assert _findings(runs[0].run_dir) == _findings(runs[1].run_dir)
