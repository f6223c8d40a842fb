"""One home for statistics: rank statistics and bootstrap draws live in ``radaudit.stats`` only.

Outside ``lib/radaudit/stats/`` no module may compute an AUROC or a rank correlation itself
(``roc_auc_score``, ``kendalltau``, ``spearmanr``, ``pearsonr``, ``rankdata``) or draw bootstrap resamples itself
(``scipy.stats.bootstrap``, or ``np.bincount(rng.integers(...))`` — the count matrix of a hand-made bootstrap).
They call :mod:`radaudit.stats.ranks` and :mod:`radaudit.stats.resampling`. Docstrings may name the functions.
The rule is shown failing on a planted module.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import radaudit

LIB = Path(radaudit.__file__).resolve().parent
FORBIDDEN = {"roc_auc_score", "kendalltau", "spearmanr", "pearsonr", "rankdata", "bootstrap"}


def _scipy_or_sklearn_names(tree: ast.AST) -> set[str]:
    """Local names bound to scipy.stats / sklearn.metrics modules or to a forbidden function imported from them."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("scipy.stats", "sklearn.metrics", "scipy"):
            for a in node.names:
                if a.name in FORBIDDEN or a.name == "stats":
                    bound.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("scipy.stats", "sklearn.metrics"):
                    bound.add(a.asname or a.name)
    return bound


def statistics_outside_stats(root: Path) -> list[str]:
    """Each use of a forbidden rank statistic or bootstrap draw in ``root`` (a radaudit folder) outside ``stats/``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "stats":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(root.parent)
        bound = _scipy_or_sklearn_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("scipy.stats", "sklearn.metrics"):
                names = [a.name for a in node.names if a.name in FORBIDDEN]
                if names:
                    found.append(f"{where}:{node.lineno}: imports {', '.join(names)} from {node.module}")
            elif (isinstance(node, ast.Attribute) and node.attr in FORBIDDEN and isinstance(node.value, ast.Name)
                  and node.value.id in bound):
                found.append(f"{where}:{node.lineno}: uses {node.value.id}.{node.attr}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "bincount"
                  and node.args and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Attribute)
                  and node.args[0].func.attr == "integers"):
                found.append(f"{where}:{node.lineno}: draws bootstrap counts (bincount of rng.integers)")
    return found


def test_rank_statistics_and_bootstrap_draws_live_in_radaudit_stats():
    found = statistics_outside_stats(LIB)
    assert not found, "compute these with radaudit.stats (ranks, resampling):\n" + "\n".join(found)


def test_the_rule_fails_on_planted_statistics(tmp_path):
    copy = tmp_path / "radaudit"
    shutil.copytree(LIB, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "metrics" / "planted.py").write_text(
        "import numpy as np\n"
        "from scipy import stats as sps\n"
        "from sklearn.metrics import roc_auc_score\n"
        "def f(x, y, rng):\n"
        "    w = np.bincount(rng.integers(0, 5, 5), minlength=5)\n"
        "    return sps.kendalltau(x, y), roc_auc_score(x, y), w\n")
    found = statistics_outside_stats(copy)
    assert sorted(found) == ["radaudit/metrics/planted.py:3: imports roc_auc_score from sklearn.metrics",
                             "radaudit/metrics/planted.py:5: draws bootstrap counts (bincount of rng.integers)",
                             "radaudit/metrics/planted.py:6: uses sps.kendalltau"]
