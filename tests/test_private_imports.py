"""Private stays private: no module of the library imports another module's ``_name``.

A name that starts with an underscore is its module's own business. What another module needs is public API of
its owner (documented) or moves down a layer. This test walks every ``import`` of ``lib/radaudit`` with
:mod:`ast` and fails on:

* ``from radaudit.x import _y`` (or a relative ``from .x import _y``) where ``radaudit.x`` is not the importing
  module itself; aliasing a public name to a private local (``import f as _f``) is fine;
* ``radaudit.x._y`` reached as an attribute of an imported module (``from radaudit import x; x._y``);
* a private *module* (``radaudit.pkg._mod``) imported from outside its package ``radaudit.pkg``.

It is shown failing on a planted file (a rule that cannot fail proves nothing).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import radaudit

LIB = Path(radaudit.__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The absolute module a ``from ... import`` names (``None`` for a non-radaudit one)."""
    if node.level == 0:
        return node.module if node.module and node.module.split(".")[0] == "radaudit" else None
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path) -> list[str]:
    """Every import of another module's private name (or of a private module from outside its package) under
    ``root`` (a ``radaudit`` package folder), as ``"file:line: what"``."""
    found: list[str] = []
    modules = {_module_name(p, root) for p in root.rglob("*.py")}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imported_modules: dict[str, str] = {}  # local name -> radaudit module it is bound to
        where = f"{path.relative_to(root.parent)}"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                src = _resolve(node, module, is_package)
                if src is None:
                    continue
                for alias in node.names:
                    full = f"{src}.{alias.name}"
                    if full in modules:  # a submodule: bind it, check the module's own privacy below
                        imported_modules[alias.asname or alias.name] = full
                        targets.append(full)
                    elif _private(alias.name) and src != module:
                        found.append(f"{where}:{node.lineno}: imports {src}.{alias.name}")
                targets.append(src)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != "radaudit":
                        continue
                    targets.append(alias.name)
                    if alias.asname:
                        imported_modules[alias.asname] = alias.name
            for target in targets:
                parts = target.split(".")
                for i, part in enumerate(parts):
                    if _private(part):
                        package = ".".join(parts[:i])
                        if not (module == package or module.startswith(package + ".")):
                            found.append(f"{where}:{node.lineno}: imports private module {'.'.join(parts[: i + 1])} "
                                         f"from outside {package}")
                        break
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported_modules and _private(node.attr)
                    and imported_modules[node.value.id] != module):
                found.append(f"{where}:{node.lineno}: uses {imported_modules[node.value.id]}.{node.attr}")
    return sorted(set(found))


def test_no_module_imports_another_modules_private_names():
    found = private_imports(LIB)
    assert not found, ("Private names imported across modules (make them public API of their owner, documented, "
                       "or move them down a layer):\n" + "\n".join(found))


def test_the_rule_fails_on_a_planted_private_import(tmp_path):
    copy = tmp_path / "radaudit"
    shutil.copytree(LIB, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "metrics" / "planted.py").write_text(
        "from radaudit.stats import _private_helper\n"
        "from . import classification as cls\n"
        "from radaudit.perturb.rules import _common\n"
        "def f():\n"
        "    from ..text.labeler import _inner\n"
        "    return cls._hidden\n")
    (copy / "metrics" / "classification.py").write_text(
        (LIB / "metrics" / "classification.py").read_text() + "\nfrom radaudit.metrics.classification import _ok\n")
    found = private_imports(copy)
    assert "radaudit/metrics/planted.py:1: imports radaudit.stats._private_helper" in found
    assert "radaudit/metrics/planted.py:5: imports radaudit.text.labeler._inner" in found
    assert "radaudit/metrics/planted.py:6: uses radaudit.metrics.classification._hidden" in found
    assert any(f.startswith("radaudit/metrics/planted.py:3: imports private module radaudit.perturb.rules._common")
               for f in found)
    assert not any("classification.py" in f for f in found), "a module may import its own private names"
