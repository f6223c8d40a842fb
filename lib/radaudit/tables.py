"""Result tables: ``estimate [low, high]`` strings and byte-reproducible CSV + Markdown + LaTeX files.

Number formatting is Python's fixed-point format (``f"{x:.{digits}f}"``): the *binary* value is
correctly rounded, so a float that prints as a decimal tie rounds by its true value (``0.785`` is
stored as 0.78500000000000003… and gives ``0.79``; ``0.125`` is exact and rounds half to even,
``0.12``). pandas, numpy and LaTeX float formatting do the same, so every file agrees. A value
that rounds to zero prints without a sign (``0.00``, never ``-0.00``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.files import atomic_write, ensure_dir

__all__ = ["NA_REP", "check_output_name", "ci_column", "format_ci", "format_number", "save_table"]

NA_REP = "n/a"
"""How a missing number is written in CI strings and in the Markdown/LaTeX tables."""

# LaTeX specials (and the Unicode minus of paired-difference labels, which pdflatex rejects).
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\u2212": "$-$",
}


def _is_missing(x: Any) -> bool:
    if x is None or x is pd.NA or x is pd.NaT:
        return True
    try:
        return bool(np.isnan(x))
    except (TypeError, ValueError):
        return False


def format_number(x: Any, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals; NaN/None → ``"n/a"``; a value that rounds to 0 has no sign."""
    if not isinstance(digits, (int, np.integer)) or isinstance(digits, bool) or digits < 0:
        raise ValueError(f"digits must be a non-negative integer, got {digits!r}")
    if _is_missing(x):
        return NA_REP
    s = f"{float(x):.{digits}f}"
    if s.startswith("-") and float(s) == 0.0:
        s = s[1:]
    return s


def format_ci(estimate: Any, low: Any, high: Any, digits: int = 2) -> str:
    """``"0.78 [0.76, 0.80]"``: an estimate and its confidence interval.

    A missing estimate gives ``"n/a"``; a finite estimate with a missing bound gives
    ``"0.78 [n/a]"`` (the interval could not be computed). Rounding: see the module docstring.
    """
    est = format_number(estimate, digits)
    if est == NA_REP:
        return NA_REP
    if _is_missing(low) or _is_missing(high):
        return f"{est} [{NA_REP}]"
    return f"{est} [{format_number(low, digits)}, {format_number(high, digits)}]"


def ci_column(
    df: pd.DataFrame,
    estimate: str = "estimate",
    low: str = "low",
    high: str = "high",
    digits: int = 2,
    name: str | None = None,
) -> pd.Series:
    """:func:`format_ci` applied row-wise; a string Series with ``df``'s index, named ``name`` (default ``estimate``)."""
    missing = [c for c in (estimate, low, high) if c not in df.columns]
    if missing:
        raise KeyError(f"ci_column: columns {missing} not in the frame; it has {list(df.columns)}")
    values = [format_ci(e, lo, hi, digits) for e, lo, hi in zip(df[estimate], df[low], df[high], strict=True)]
    return pd.Series(values, index=df.index, name=estimate if name is None else name, dtype=object)


def check_output_name(name: str) -> str:
    """Validate a file stem for an output (table or figure): no path separators, not empty/``.``/``..``."""
    if not isinstance(name, str) or not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        raise ValueError(f"output name must be a plain file stem without path separators, got {name!r}")
    return name


def _latex_escape(s: str) -> str:
    return "".join(_LATEX_ESCAPES.get(c, c) for c in s)


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _cell(x: Any, float_digits: int) -> str:
    if _is_missing(x):
        return NA_REP
    if isinstance(x, (float, np.floating)):
        return format_number(x, float_digits)
    return str(x)


def _display_frame(df: pd.DataFrame, index: bool, float_digits: int) -> tuple[pd.DataFrame, list[bool]]:
    """All cells as strings (numbers at ``float_digits``), the index as leading column(s) if asked.

    Returns the string frame and, per column, whether it is numeric (right-aligned).
    """
    frame = df.reset_index() if index else df
    if frame.columns.duplicated().any():
        raise ValueError(f"save_table: duplicate column names {list(frame.columns[frame.columns.duplicated()])}")
    out = pd.DataFrame(
        {str(c): [_cell(v, float_digits) for v in frame[c]] for c in frame.columns},
        index=pd.RangeIndex(len(frame)),
        dtype=object,
    )
    return out, [_is_numeric(frame[c]) for c in frame.columns]


def _md_cell(cell: str) -> str:
    """A cell as Markdown can hold it: "|" (which would end the cell) escaped, and a line break (which would end the
    table) written as the two characters ``\\n`` (a tokenizer's newline token reads ``\\n``)."""
    return cell.replace("|", "\\|").replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")


def _tabulate_markdown(shown: pd.DataFrame, numeric: list[bool]) -> str:
    """``DataFrame.to_markdown`` (tabulate, ``github`` style, no number parsing) of the cells :func:`_md_cell` makes."""
    return shown.map(_md_cell).rename(columns=lambda c: c.replace("|", "\\|")).to_markdown(
        index=False,
        tablefmt="github",
        disable_numparse=True,
        colalign=["right" if n else "left" for n in numeric] or None,
    )


def markdown_table(shown: pd.DataFrame, numeric: list[bool]) -> str:
    """A GitHub-style Markdown table of string cells, numeric columns right-aligned, a literal "|" escaped (it would
    end a cell): byte for byte what tabulate's ``github`` format writes (tests/test_plots_tables.py compares the
    two), with the same display widths (``wcwidth`` where tabulate uses it). Written directly because tabulate took
    2 s for a 20,000-row table. Cells are stripped of surrounding whitespace, as tabulate does, and line breaks in
    them are written ``\\n`` (:func:`_md_cell`; raw, they would end the table). tabulate itself is used for what it
    treats specially: no rows or columns, headers with surrounding spaces or line breaks, ANSI codes or unprintable
    characters."""
    try:
        from wcwidth import wcswidth as width
    except ImportError:  # tabulate then measures with len() too
        width = len
    # tabulate strips the whitespace around every cell (its PRESERVE_WHITESPACE is off): a token's leading space
    # (" the") or a line-break cell ("\n") is written here as tabulate writes it; headers keep theirs
    headers = [str(c).replace("|", "\\|") for c in shown.columns]
    rows = [[_md_cell(c).strip() for c in row] for row in shown.itertuples(index=False, name=None)]
    texts = headers + [c for row in rows for c in row]
    if not rows or not headers or any(h != h.strip() or "\n" in h for h in headers) or any(
            "\x1b" in t or width(t) < 0 for t in texts):
        return _tabulate_markdown(shown, numeric)
    widths = [max([width(h) + 2] + [width(row[j]) for row in rows]) for j, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        padded = [(" " * (w - width(c)) + c) if right else (c + " " * (w - width(c)))
                  for c, w, right in zip(cells, widths, numeric, strict=True)]
        return "| " + " | ".join(padded) + " |"

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in rows]
    return "\n".join(out)


def latex_tabular(shown: pd.DataFrame, numeric: list[bool], caption: str | None = None) -> str:
    """A booktabs ``tabular`` of string cells (escaped here), byte for byte what ``Styler.to_latex(hrules=True)``
    writes with the index hidden (tests/test_plots_tables.py compares the two), in a ``table[htbp]`` with
    ``caption`` (already escaped) when one is given. Written directly: Styler renders every cell through Jinja
    templates and took 5 s for a 20,000-row table, this takes a few milliseconds."""
    columns = [_latex_escape(str(c)) for c in shown.columns]
    if not columns:  # Styler's layout for a frame without columns
        styler = shown.style.hide(axis="index")
        return styler.to_latex(column_format="", hrules=True, caption=caption, position="htbp" if caption else None)
    lines = []
    if caption:
        lines += ["\\begin{table}[htbp]", f"\\caption{{{caption}}}"]
    lines += ["\\begin{tabular}{" + "".join("r" if n else "l" for n in numeric) + "}", "\\toprule",
              " & ".join(columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(_latex_escape(c) for c in row) + " \\\\" for row in shown.itertuples(index=False, name=None)]
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption:
        lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def save_table(
    df: pd.DataFrame,
    directory: str | Path,
    name: str,
    *,
    caption: str | None = None,
    index: bool = False,
    float_digits: int = 4,
) -> dict[str, Path]:
    """Write ``df`` as ``<name>.csv``, ``<name>.md`` and ``<name>.tex`` under ``directory`` (created).

    * CSV: full precision (pandas' shortest round-trip float repr), so it reads back to the same
      numbers; for machines.
    * Markdown: ``DataFrame.to_markdown`` (tabulate, ``github`` style), floats at
      ``float_digits``, missing values ``n/a``, numeric columns right-aligned; a caption becomes a
      leading ``Table: <caption>`` line (pandoc's table-caption syntax).
    * LaTeX: ``Styler.to_latex`` with booktabs rules (``\\toprule``/``\\midrule``/``\\bottomrule``),
      floats at ``float_digits``, special characters (``% _ & $ # { } ~ ^ \\``) escaped in cells,
      headers and caption; with a caption the tabular is wrapped in a ``table`` environment.

    Every file is UTF-8 with ``\\n`` line endings and no timestamp: two calls on the same frame
    write the same bytes. Columns are flat (a MultiIndex is flattened with ``str``).

    Returns:
        ``{"csv": path, "md": path, "tex": path}``.
    """
    check_output_name(name)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"save_table needs a DataFrame, got {type(df).__name__}")
    directory = ensure_dir(directory)
    paths = {ext: directory / f"{name}.{ext}" for ext in ("csv", "md", "tex")}

    csv_text = df.to_csv(index=index, lineterminator="\n")
    atomic_write(paths["csv"], csv_text.encode("utf-8"))

    shown, numeric = _display_frame(df, index, float_digits)
    md = markdown_table(shown, numeric)
    if caption:
        md = f"Table: {caption}\n\n{md}"
    atomic_write(paths["md"], (md + "\n").encode("utf-8"))

    tex = latex_tabular(shown, numeric, _latex_escape(caption) if caption else None)
    atomic_write(paths["tex"], (tex if tex.endswith("\n") else tex + "\n").encode("utf-8"))
    return paths
