"""The README's Python example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example(shared_data, monkeypatch):
    monkeypatch.setenv("RADAUDIT_DATA", str(shared_data))
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has a Python example"
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
        promised = re.findall(r"print\(.*\)\s+#\s*(\S.*)$", code, flags=re.M)
        assert out.getvalue().strip().splitlines() == [p.strip() for p in promised]


@pytest.mark.parametrize("bench, results", [
    ("ranking_suite", "ranking_suite.json"),
    ("radpref_agreement", "radpref_agreement.json"),
    ("labeler_iu_xray", "labeler_iu_xray.json"),
])
def test_benchmark_blocks_match_their_results(bench, results, monkeypatch):
    """The README's <!-- bench:... --> blocks are what the benchmark renders from its committed results file
    (regenerate with `python benchmarks/<bench>.py --readme`), so README numbers cannot drift from them."""
    import importlib
    import json
    import sys

    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    # the benchmarks switch the hub off on import; set here, they are undone after the test (they leaked into
    # test_provenance, which turns hub access on and off itself)
    for var, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
        monkeypatch.setenv(var, value)
    module = importlib.import_module(bench)
    readme = importlib.import_module("_readme")
    data = json.loads((root / "benchmarks" / "results" / results).read_text(encoding="utf-8"))
    block = readme.read_block(bench)
    assert block is not None, f"README.md has no <!-- bench:{bench} --> block"
    assert block == module.render_readme(data), f"README block {bench} is stale: run benchmarks/{bench}.py --readme"
    sys.modules.pop(bench, None)
