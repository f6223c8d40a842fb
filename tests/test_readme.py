"""The README's Python example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

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
