"""Blocks of the README and the docs written by the benchmarks from their results files (never typed).

A block is ``<!-- bench:<name> -->`` ... ``<!-- /bench -->`` in README.md or in one page of ``docs/`` (the speed
lines and ``make demo``'s times in ``docs/speed.md``, the ranking suites in ``docs/experiments/atomic_facts.md``,
the labeler in ``docs/score.md``). A benchmark renders its block from its own results file
(``render(results) -> str``) and, with ``--readme``, writes it into whichever file holds the block;
``tests/test_readme.py`` and ``tests/test_bench_results.py`` render every block again from the committed results
file and check the file holds exactly that, so no page can drift from ``benchmarks/results/``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- bench:{re.escape(name)} -->\n)(?P<body>.*?)(<!-- /bench -->)", re.DOTALL)


def pages() -> list[Path]:
    """The files that may hold a block: README.md, then every Markdown page of ``docs/`` (sorted)."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def block_file(name: str) -> Path | None:
    """The file that holds block ``name`` (``None`` when none does)."""
    for path in pages():
        if path.is_file() and _pattern(name).search(path.read_text(encoding="utf-8")):
            return path
    return None


def read_block(name: str, text: str | None = None) -> str | None:
    """The body of block ``name`` in ``text``, or in the file that holds it (``None`` when there is none)."""
    if text is None:
        path = block_file(name)
        if path is None:
            return None
        text = path.read_text(encoding="utf-8")
    m = _pattern(name).search(text)
    return m.group("body") if m else None


def write_block(name: str, body: str, path: Path | None = None) -> None:
    """Replace the body of block ``name`` in ``path`` (default: the file that holds it); the block must exist (add
    the two markers first)."""
    path = path or block_file(name)
    text = path.read_text(encoding="utf-8") if path is not None else ""
    pat = _pattern(name)
    if path is None or not pat.search(text):
        where = path or "README.md or docs/"
        raise SystemExit(f"{where} has no '<!-- bench:{name} -->' ... '<!-- /bench -->' block; add the markers where "
                         "the numbers should go, then rerun with --readme.")
    body = body if body.endswith("\n") else body + "\n"
    path.write_text(pat.sub(lambda m: m.group(1) + body + m.group(3), text, count=1), encoding="utf-8")


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"
