"""README blocks written by the benchmarks from their results files (never typed).

A block is ``<!-- bench:<name> -->`` ... ``<!-- /bench -->`` in README.md. A benchmark renders its
block from its own results file (``render(results) -> str``) and, with ``--readme``, writes it;
``tests/test_readme.py`` renders every block again from the committed results file and checks the
README holds exactly that, so the README cannot drift from ``benchmarks/results/``.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- bench:{re.escape(name)} -->\n)(?P<body>.*?)(<!-- /bench -->)", re.DOTALL)


def read_block(name: str, text: str | None = None) -> str | None:
    """The body of block ``name`` in the README (``None`` when it has none)."""
    m = _pattern(name).search(README.read_text(encoding="utf-8") if text is None else text)
    return m.group("body") if m else None


def write_block(name: str, body: str, path: Path = README) -> None:
    """Replace the body of block ``name`` in ``path``; the block must exist (add the two markers first)."""
    text = path.read_text(encoding="utf-8")
    pat = _pattern(name)
    if not pat.search(text):
        raise SystemExit(f"{path} has no '<!-- bench:{name} -->' ... '<!-- /bench -->' block; add the markers where "
                         "the numbers should go, then rerun with --readme.")
    body = body if body.endswith("\n") else body + "\n"
    path.write_text(pat.sub(lambda m: m.group(1) + body + m.group(3), text, count=1), encoding="utf-8")


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"
