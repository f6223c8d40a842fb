"""`radaudit run EXP -f my.yaml`: merged over the preset, validated by the same schema, loaded safely (issue 24)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from radaudit.config import resolve_params
from radaudit.errors import ParamsError
from radaudit.experiments import get_experiment
from radaudit.paths import params_dir


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "radaudit", *args], capture_output=True, text=True, cwd=cwd)


def _resolve(*files, overrides=()):
    model = get_experiment("data_overview").params_model()
    return resolve_params(model, params_dir(), "data_overview", "demo", overrides, params_files=files)


def test_file_is_merged_over_the_preset_and_under_the_overrides(tmp_path):
    f = tmp_path / "my.yaml"
    f.write_text("seed: 7\nmax_rows: 12\n")
    p = _resolve(f)
    assert (p.seed, p.max_rows) == (7, 12)
    assert _resolve(f, overrides=["seed=9"]).seed == 9


def test_unknown_key_and_wrong_type_name_the_key(tmp_path):
    f = tmp_path / "typo.yaml"
    f.write_text("sed: 3\n")
    with pytest.raises(ParamsError, match=r"unknown key 'sed'\. Did you mean 'seed'\?"):
        _resolve(f)
    f.write_text("max_rows: many\n")
    with pytest.raises(ParamsError, match="bad value for 'max_rows'"):
        _resolve(f)
    f.write_text("- just a list\n")
    with pytest.raises(ParamsError, match="must hold a mapping"):
        _resolve(f)
    with pytest.raises(ParamsError, match="does not exist"):
        _resolve(tmp_path / "missing.yaml")


@pytest.mark.long
def test_python_tags_are_refused_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    f = tmp_path / "evil.yaml"
    f.write_text(f'seed: !!python/object/apply:os.system ["touch {marker}"]\n')
    r = _cli("run", "data_overview", "--preset", "smoke", "-f", str(f), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "refused (not executed)" in lines[0], r.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()


@pytest.mark.long
def test_params_output_round_trips_through_f(tmp_path):
    first = _cli("params", "data_overview", "--preset", "smoke", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    f = tmp_path / "my.yaml"
    f.write_text(first.stdout)
    again = _cli("params", "data_overview", "--preset", "demo", "-f", str(f), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout  # demo + the smoke values from the file = smoke, unchanged
