"""The library's shape: one package per experiment, one-way layers checked by import-linter.

The contracts are in ``pyproject.toml`` (``[tool.importlinter]``). These tests run ``lint-imports`` on the
library as it is (it must pass), and on a copy with one deliberate upward import and one deliberate
cycle (it must fail, naming them): a contract that cannot fail would prove nothing.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import radaudit
from radaudit.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
LIB = Path(radaudit.__file__).resolve().parent
LINT = Path(sys.executable).with_name("lint-imports")


def lint(lib_parent: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the repository's contracts on the ``radaudit`` package found in ``lib_parent``."""
    if not LINT.exists():
        pytest.fail(f"{LINT} is missing: install the dev extra (pip install -e '.[dev]'), which brings import-linter.")
    env = {**os.environ, "PYTHONPATH": str(lib_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_layers_and_cycles_hold():
    res = lint(LIB.parent, ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Contracts: 3 kept, 0 broken." in res.stdout


@pytest.fixture(scope="module")
def broken_copy(tmp_path_factory) -> Path:
    """A copy of the library with an upward import (data -> audits) and a cycle (text.labeler <-> text.negation)."""
    top = tmp_path_factory.mktemp("lib")
    shutil.copytree(LIB, top / "radaudit", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (top / "radaudit" / "data" / "upward.py").write_text("from radaudit.audits.synthetic_cxr import data  # noqa\n")
    neg = top / "radaudit" / "text" / "negation.py"  # the labeler imports negation; now negation imports it back
    neg.write_text(neg.read_text() + "\n\ndef _cycle():\n    from radaudit.text import labeler  # noqa: F401\n")
    return top


def test_an_upward_import_fails_the_layers_contract(broken_copy, tmp_path):
    res = lint(broken_copy, tmp_path)
    assert res.returncode != 0
    assert "Layers run one way" in res.stdout and "BROKEN" in res.stdout
    assert "radaudit.data is not allowed to import radaudit.audits" in res.stdout
    assert "radaudit.data.upward -> radaudit.audits.synthetic_cxr" in res.stdout


def test_a_cycle_fails_the_acyclic_contract(broken_copy, tmp_path):
    res = lint(broken_copy, tmp_path)
    assert "No import cycles between sibling modules" in res.stdout
    assert "No cycles are allowed in radaudit.text" in res.stdout
    assert ".negation -> .labeler" in res.stdout or ".labeler -> .negation" in res.stdout


def test_one_package_per_registered_experiment():
    audits = LIB / "audits"
    entries = {p.name for p in audits.iterdir() if p.name != "__pycache__"}
    assert entries == {"__init__.py", *EXPERIMENTS}, "lib/radaudit/audits holds the six experiment packages only"
    for name in EXPERIMENTS:
        assert (audits / name / "__init__.py").is_file()
        # no <experiment>_*.py flat files left, and the registry's params class is the package's
        assert EXPERIMENTS[name].params == f"radaudit.audits.{name}:Params"


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_params_are_schemas_and_each_package_has_one_layout(name):
    """Params only validate (the rehearsal is the package's rehearsal.py, found through the registry), and modules
    are named the same way in every package: no ``model.py`` beside ``models.py``, no module named like a layer."""
    exp = EXPERIMENTS[name]
    assert not hasattr(exp.params_model(), "rehearse"), "a rehearsal is rehearsal.py's rehearse(params, workdir)"
    modules = {p.name for p in (LIB / "audits" / name).glob("*.py")}
    assert "params.py" in modules and not modules & {"model.py", "metrics.py", "stats.py", "data_io.py"}
    if exp.rehearsal is None:
        assert "rehearsal.py" not in modules
    else:
        assert exp.rehearsal == f"radaudit.audits.{name}.rehearsal:rehearse" and callable(exp.rehearsal_function())


#: The six modules of every experiment package, meaning the same thing in each (``radaudit.audits``' docstring).
LAYOUT = ("params.py", "data.py", "study.py", "tables.py", "plots.py", "findings.py")
#: Modules the registry names where an experiment has that step (``rehearsal``, ``shard_step``).
HOOKS = ("rehearsal.py", "shards.py")
#: Modules named like a library layer that stay, and why. Each ``models.py`` path is part of its stand-ins' recipe
#: id: the registry's ``stand_ins`` names ``radaudit.audits.<e>.models:RECIPE_VERSION`` (and the training configs),
#: and :func:`radaudit.stability.recipe_id` hashes those names, so renaming the module would change the recipe ids
#: and invalidate the verdict-stability benchmark's stored verdicts.
LAYER_NAMED_EXCEPTIONS: dict[tuple[str, str], str] = {
    (name, "models.py"): f"stand-in recipe id radaudit.audits.{name}.models:RECIPE_VERSION (verdict-stability benchmark)"
    for name in ("decoding_erasure", "modality_shift", "synthetic_cxr")
}
#: Layout modules a package does not have yet, and why: to be emptied, not grown (a test fails once a gap is closed,
#: so the entry is removed with the fix).
LAYOUT_GAPS: dict[tuple[str, str], str] = {}


def library_layer_modules(lib: Path = LIB) -> set[str]:
    """``<name>.py`` for every top-level module and package of ``radaudit`` (``metrics.py`` for ``radaudit/metrics/``)
    but the layout's and the hooks' own names: an experiment module named so reads as a copy of that layer."""
    names = {p.stem for p in lib.glob("*.py")} | {p.name for p in lib.iterdir() if (p / "__init__.py").is_file()}
    return {f"{n}.py" for n in names if not n.startswith("_")} - set(LAYOUT) - set(HOOKS)


def layout_problems(package: Path) -> list[str]:
    """What breaks the one layout in an experiment ``package`` folder: a missing layout module (less
    :data:`LAYOUT_GAPS`), a module named like a library layer (less :data:`LAYER_NAMED_EXCEPTIONS`)."""
    modules = {p.name for p in package.glob("*.py")}
    problems = [f"{package.name} lacks {m}" for m in LAYOUT if m not in modules and (package.name, m) not in LAYOUT_GAPS]
    problems += [f"{package.name}/{m} is named like the library layer radaudit.{m.removesuffix('.py')}"
                 for m in sorted(modules & library_layer_modules()) if (package.name, m) not in LAYER_NAMED_EXCEPTIONS]
    return problems


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_has_the_one_layout(name):
    """params, data, study, tables, plots and findings in every package, no module named like a layer, the registry's
    hooks where it names them, and every module named in the package's docstring (the newcomer's map)."""
    package = LIB / "audits" / name
    assert layout_problems(package) == []
    modules = {p.name for p in package.glob("*.py")} - {"__init__.py"}
    exp = EXPERIMENTS[name]
    assert ("shards.py" in modules) == (exp.shard_step is not None)
    assert exp.shard_step is None or exp.shard_step.startswith(f"radaudit.audits.{name}.shards:")
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert [m for m in sorted(modules) if f"``{m}``" not in doc] == [], f"name them in {name}/__init__.py's docstring"


def test_the_layout_check_fails_on_a_missing_module_and_a_layer_name(tmp_path):
    package = tmp_path / "toy"
    package.mkdir()
    for m in ("__init__.py", "params.py", "data.py", "tables.py", "plots.py", "findings.py", "stats.py", "models.py",
              "agreement.py", "shards.py"):
        (package / m).write_text("")
    assert layout_problems(package) == ["toy lacks study.py",
                                        "toy/models.py is named like the library layer radaudit.models",
                                        "toy/stats.py is named like the library layer radaudit.stats"]
    assert {"metrics.py", "text.py", "models.py", "stats.py"} <= library_layer_modules()
    assert not library_layer_modules() & {*LAYOUT, *HOOKS, "__init__.py", "__main__.py"}


def test_the_layout_gaps_are_still_open():
    """A gap that is closed (the module exists now) is removed from :data:`LAYOUT_GAPS`, so the check covers it."""
    assert [gap for gap in LAYOUT_GAPS if (LIB / "audits" / gap[0] / gap[1]).is_file()] == []


def test_the_layer_named_exceptions_still_hold_a_stand_in_recipe():
    """An exception is kept only while its reason holds: the module exists and the registry's ``stand_ins`` name it."""
    for (name, module) in LAYER_NAMED_EXCEPTIONS:
        assert (LIB / "audits" / name / module).is_file()
        assert f"radaudit.audits.{name}.{module.removesuffix('.py')}:RECIPE_VERSION" in EXPERIMENTS[name].stand_ins


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_package_exports_resolve(name):
    import importlib

    pkg = importlib.import_module(f"radaudit.audits.{name}")
    missing = [n for n in pkg.__all__ if not hasattr(pkg, n)]
    assert not missing
    assert len(set(pkg.__all__)) == len(pkg.__all__)
    assert EXPERIMENTS[name].params_model() is pkg.Params


def _code_cells(nb: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_notebook_calls_only_its_experiment_package(name):
    """Notebooks stay thin: the only audits import is the experiment's own package, and nothing is defined."""
    nb = ROOT / "notebooks" / EXPERIMENTS[name].notebook
    audits_imports, defs = [], []
    for src in _code_cells(nb):
        tree = ast.parse("\n".join(line for line in src.splitlines() if not line.startswith(("%", "!"))))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("radaudit.audits"):
                audits_imports.append((node.module, tuple(a.name for a in node.names)))
            elif isinstance(node, ast.Import):
                audits_imports += [(a.name, ()) for a in node.names if a.name.startswith("radaudit.audits")]
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defs.append(node.name)
    assert audits_imports == [("radaudit.audits", (name,))], audits_imports
    assert not defs, f"{nb.name} defines {defs}: logic belongs in radaudit.audits.{name}"


def _radaudit_imports(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """Every ``from radaudit... import name`` / ``import radaudit...`` in a module, function-local ones included."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "radaudit":
            found += [(node.lineno, node.module, a.name) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == "radaudit"]
    return found


def _unresolved(label: str, source: str) -> list[str]:
    import importlib

    bad = []
    for line, module, name in _radaudit_imports(ast.parse(source)):
        try:
            mod = importlib.import_module(module)
        except ImportError as err:
            bad.append(f"{label}:{line} import {module}: {err}")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                bad.append(f"{label}:{line} from {module} import {name}")
    return bad


@pytest.mark.long
def test_every_radaudit_import_resolves_including_function_local_ones():
    """import-linter sees the graph, not whether a name exists: a lazy import inside a function that names a
    module that moved (``from ...synthetic_cxr.study import models``) only fails when the function runs. Check
    every one statically, in the library, the tests, the benchmarks and the notebooks."""
    files = [*LIB.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    bad = [b for f in files if "__pycache__" not in f.parts for b in _unresolved(f.name, f.read_text())]
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = [line for src in _code_cells(nb) for line in src.splitlines() if not line.startswith(("%", "!"))]
        bad += _unresolved(nb.name, "\n".join(code))
    assert not bad, "unresolvable imports:\n" + "\n".join(bad)


def test_the_import_check_catches_a_moved_module(tmp_path):
    mod = tmp_path / "lazy.py"
    mod.write_text("def f():\n    from radaudit.audits.synthetic_cxr.study import models\n"
                   "def g():\n    from radaudit.audits.synthetic_cxr import models\n")
    assert _unresolved(mod.name, mod.read_text()) == ["lazy.py:2 from radaudit.audits.synthetic_cxr.study import models"]
