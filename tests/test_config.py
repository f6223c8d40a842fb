"""Params: presets, validation messages, typed overrides, and the notebook's defaults."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from radaudit.audits.data_overview import Params
from radaudit.config import load_preset, parse_overrides, resolve_params
from radaudit.errors import ParamsError
from radaudit.experiments import EXPERIMENTS

REPO = Path(__file__).resolve().parents[1]
PARAMS = REPO / "params"


def test_unknown_key_names_key_and_allowed_keys():
    with pytest.raises(ParamsError) as e:
        resolve_params(Params, PARAMS, "data_overview", "demo", ["no_such_key=1"])
    msg = str(e.value)
    assert "unknown key 'no_such_key'" in msg
    for key in ("seed", "datasets", "n_bootstrap", "max_rows"):
        assert key in msg


def test_close_typo_gets_a_suggestion():
    with pytest.raises(ParamsError, match="Did you mean 'n_bootstrap'"):
        resolve_params(Params, PARAMS, "data_overview", "demo", ["n_bootstrapp=10"])


def test_bad_value_names_allowed_values():
    with pytest.raises(ParamsError) as e:
        resolve_params(Params, PARAMS, "data_overview", "demo", ["iu_xray_format=json"])
    assert "iu_xray_format" in str(e.value) and "'csv' or 'xml'" in str(e.value)
    with pytest.raises(ParamsError, match="datasets"):
        resolve_params(Params, PARAMS, "data_overview", "demo", ["datasets=iu_xray,not_a_dataset"])
    with pytest.raises(ParamsError, match="n_bootstrap"):
        resolve_params(Params, PARAMS, "data_overview", "demo", ["n_bootstrap=-5"])


def test_overrides_are_typed_by_the_schema():
    ov = parse_overrides(Params, ["seed=3", "confidence=0.9", "datasets=iu_xray,radpref", "skip_missing=true",
                                  "data_root=123", "dataset_paths.mimic_cxr=/data/mimic", "max_rows=null"])
    assert ov == {"seed": 3, "confidence": 0.9, "datasets": ["iu_xray", "radpref"], "skip_missing": True,
                  "data_root": "123", "dataset_paths": {"mimic_cxr": "/data/mimic"}, "max_rows": None}
    p = resolve_params(Params, PARAMS, "data_overview", "smoke", ["seed=3", "datasets=[iu_xray]"])
    assert p.seed == 3 and p.datasets == ["iu_xray"] and isinstance(p.seed, int)


def test_override_without_equals_is_an_error():
    with pytest.raises(ParamsError, match="key=value"):
        parse_overrides(Params, ["seed"])


def test_extends_merges_and_reserved_keys_are_dropped():
    demo = load_preset(PARAMS, "data_overview", "demo")
    smoke = load_preset(PARAMS, "data_overview", "smoke")
    assert "description" not in smoke and "extends" not in smoke
    assert smoke["datasets"] == demo["datasets"]
    assert smoke["n_bootstrap"] < demo["n_bootstrap"]


def test_extends_cycle_and_unknown_preset(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.yaml").write_text("extends: b\nseed: 1\n")
    (tmp_path / "x" / "b.yaml").write_text("extends: a\n")
    with pytest.raises(ParamsError, match="extends itself"):
        load_preset(tmp_path, "x", "a")
    with pytest.raises(ParamsError, match="Available presets: a, b"):
        load_preset(tmp_path, "x", "nope")


def test_yaml_must_be_a_mapping(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ParamsError, match="mapping"):
        load_preset(tmp_path, "x", "a")


def _parameters_cell(nb_path: Path) -> dict:
    nb = json.loads(nb_path.read_text())
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{nb_path.name} needs exactly one cell tagged 'parameters'"
    values = {}
    for node in ast.parse("".join(cells[0]["source"])).body:
        assert isinstance(node, ast.Assign), "the parameters cell holds plain assignments only"
        values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_notebook_defaults_equal_the_demo_preset(name):
    """Opened in Jupyter, every notebook must run its demo preset: its parameters cell says so."""
    exp = EXPERIMENTS.lookup(name)
    values = _parameters_cell(REPO / "notebooks" / exp.notebook)
    assert values.pop("run_dir") is None
    demo = resolve_params(exp.params_model(), PARAMS, name, "demo").model_dump(mode="json")
    assert values == demo


def test_registry_refuses_duplicates_and_lists_known_names():
    from dataclasses import dataclass

    from radaudit.registry import Registry

    @dataclass
    class Thing:
        name: str

    reg: Registry[Thing] = Registry("thing")
    reg.register(Thing("a"))
    reg.register(Thing("b"))
    with pytest.raises(ValueError, match="thing 'a' registered twice"):
        reg.register(Thing("a"))
    assert reg.lookup("b").name == "b"
    with pytest.raises(ParamsError, match="Unknown thing 'c'. Known things: a, b."):
        reg.lookup("c")


# ----------------------------------------------------------------------------- the bootstrap knob's old name

def test_old_bootstrap_knob_name_is_accepted_with_a_warning_naming_the_new_one(tmp_path):
    from radaudit.config import BaseParams, resolve_params

    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "base.yaml").write_text("n_bootstrap: 1000\n")
    with pytest.warns(FutureWarning, match=r"'n_resamples' is deprecated.*write 'n_bootstrap'"):
        p = resolve_params(BaseParams, tmp_path, "exp", "base", overrides=["n_resamples=250"])
    assert p.n_bootstrap == 250  # the old name in -p overrides the new name in the preset
    (tmp_path / "old.yaml").write_text("n_resamples: 300\n")
    with pytest.warns(FutureWarning, match="n_bootstrap"):
        p = resolve_params(BaseParams, tmp_path, "exp", "base", params_files=[tmp_path / "old.yaml"])
    assert p.n_bootstrap == 300


def test_both_names_of_the_bootstrap_knob_in_one_place_is_an_error():
    from radaudit.config import BaseParams, validate_params

    with pytest.raises(ParamsError, match="sets both 'n_resamples' and 'n_bootstrap'"):
        validate_params(BaseParams, {"n_resamples": 10, "n_bootstrap": 20})
