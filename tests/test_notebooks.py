"""Notebooks are stored clean: no outputs, no execution counts, one `parameters` cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radaudit.experiments import EXPERIMENTS

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = json.loads(path.read_text())
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them (outputs belong in outputs/ runs)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_one_parameters_cell_first(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "parameters" in code[0].get("metadata", {}).get("tags", []), "the first code cell must be tagged 'parameters'"
    assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in code) == 1


def test_every_experiment_has_its_notebook_and_smoke_and_demo_presets():
    for exp in EXPERIMENTS.values():
        assert (REPO / "notebooks" / exp.notebook).exists(), exp.name
        for preset in ("smoke", "demo"):
            assert (REPO / "params" / exp.name / f"{preset}.yaml").exists(), f"{exp.name} lacks {preset}"
