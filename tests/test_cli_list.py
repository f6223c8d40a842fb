"""`radaudit list`: a demo's time is the benchmark's measurement (machine and date), never a typed phrase."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from radaudit.cli import main
from radaudit.config import list_presets
from radaudit.experiments import EXPERIMENTS
from radaudit.paths import params_dir, project_root


def test_list_prints_the_measured_demo_times():
    fresh = json.loads((project_root() / "benchmarks" / "results" / "demo_fresh.json").read_text())
    out = CliRunner().invoke(main, ["list"]).output
    for name, seconds in fresh["per_experiment"].items():
        block = out[out.index(name + "  ("):]
        assert f"measured: {seconds / 60:.1f} min on a fresh clone" in block.split("\n--preset")[0] or \
            f"measured: {seconds / 60:.1f} min on a fresh clone" in block[:4000], name
    assert fresh["machine"] in out


def test_no_preset_description_types_a_duration():
    typed = re.compile(r"\b(a few|about (a|one|two|three)|under a|in) minutes?\b|\bminutes:", re.IGNORECASE)
    for name in EXPERIMENTS:
        for preset, desc in list_presets(params_dir(), name).items():
            if preset in ("demo", "full", "paper"):
                assert not typed.search(desc), f"{name} {preset}: {typed.search(desc).group(0)!r} (measured times " \
                                               "come from benchmarks/results via radaudit list)"
