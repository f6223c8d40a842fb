"""Result tables: ``estimate [low, high]`` strings and byte-reproducible CSV + Markdown + LaTeX files.

Number formatting is Python's fixed-point format (``f"{x:.{digits}f}"``): the *binary* value is
correctly rounded, so a float that prints as a decimal tie rounds by its true value (``0.785`` is
stored as 0.78500000000000003… and gives ``0.79``; ``0.125`` is exact and rounds half to even,
``0.12``). pandas, numpy and LaTeX float formatting do the same, so every file agrees. A value
that rounds to zero prints without a sign (``0.00``, never ``-0.00``).
"""

from __future__ import annotations

import html as _html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.files import atomic_write, ensure_dir

__all__ = [
    "DASH", "NA_REP", "NO_INTERVAL", "NOT_ESTIMATE_TOKENS", "STATISTIC_TOKENS", "NoInterval", "check_output_name",
    "ci_column", "ci_triples", "column_decimals", "declared_no_interval", "for_reader", "format_ci", "format_count",
    "format_number", "format_pvalue", "format_value", "is_estimate_column", "is_pvalue_column", "missing_intervals",
    "missing_intervals_in_run", "reader_html", "save_table", "show_tables_for_readers", "tidy_ci_text",
    "unavailable_note",
]

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


# ----------------------------------------------------------------------------------------------------------------------
# The reader's view of a table (issue 42): one formatter for every table a notebook shows in its report. The files
# save_table writes keep their full precision; only the HTML a reader sees is rounded.

DASH = "—"
"""How a missing value reads in a report table."""

_P_TOKENS = {"p", "pvalue", "pval", "q", "qvalue", "padj"}
_P_QUALIFIERS = {"value", "adj", "adjusted", "bh", "raw", "perm", "permutation", "one", "two", "sided", "fdr", "corrected",
                 "pearson", "spearman", "kendall", "mw", "wilcoxon"}
_ID_TOKENS = {"id", "ids", "seed", "year", "index", "idx", "layer", "fold", "level", "rank"}
_LOW = ("_ci_low", "_ci_lo", "_low", "_lo", "_lower", " low", "ci_low", "ci_lo", "low", "lo", "lower")
_HIGH = {"_ci_low": "_ci_high", "_ci_lo": "_ci_hi", "_low": "_high", "_lo": "_hi", "_lower": "_upper", " low": " high",
         "ci_low": "ci_high", "ci_lo": "ci_hi", "low": "high", "lo": "hi", "lower": "upper"}
_ESTIMATE_NAMES = ("estimate", "value", "mean", "point", "est")
_NUM = r"[-+−]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_CI_TEXT = re.compile(rf"^\s*({_NUM}) \[({_NUM}), ({_NUM})\]\s*$", re.I)


def _tokens(name: Any) -> list[str]:
    return [t for t in re.split(r"[^0-9a-z]+", str(name).lower()) if t]


def is_pvalue_column(name: Any) -> bool:
    """Whether a column named ``name`` holds p-values: its name is ``p``, ``pvalue``, ``p_adj``, ``BH p``,
    ``pearson_p_adj``, ``q``... (a p/q token with only qualifiers such as ``adj``, ``BH``, ``value`` beside it).
    ``p_yes`` (a probability) is not."""
    toks = _tokens(name)
    return any(t in _P_TOKENS for t in toks) and all(t in _P_TOKENS or t in _P_QUALIFIERS for t in toks)


def _is_id_column(name: Any) -> bool:
    toks = _tokens(name)
    return bool(toks) and (toks[-1] in _ID_TOKENS or toks[0] in {"seed", "year"})


def column_decimals(values: Any) -> int | None:
    """Decimals a column of floats is shown with, from its largest magnitude ``m`` (finite, non-zero): ``m < 0.1``
    → 4 (``0.0123``, a KID), ``< 10`` → 3 (a proportion, an AUROC, Kendall's τ: ``0.712``), ``< 100`` → 1
    (``24.3``), else 0 (``1,235``: thousands separated). ``None`` when ``m < 0.001`` or ``m ≥ 1e9``: such a column
    is written in scientific notation (``5.35e-40``), the only place a reader sees it."""
    a = np.abs(np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float))
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 3
    m = float(a.max())
    if m < 1e-3 or m >= 1e9:
        return None
    return 4 if m < 0.1 else 3 if m < 10 else 1 if m < 100 else 0


def _plain(x: float, decimals: int | None) -> str:
    """``x`` at ``decimals`` (thousands separated); scientific (3 significant digits) only when ``decimals`` is
    ``None`` or when a non-zero value would read as zero (then 2 significant digits, plain down to 1e-4)."""
    if decimals is None:
        return f"{x:.3g}" if x == 0 or 1e-4 <= abs(x) < 1e9 else f"{x:.2e}"
    s = f"{x:,.{decimals}f}"
    if float(s.replace(",", "")) == 0.0:
        if x != 0:
            return f"{x:.2g}" if abs(x) >= 1e-4 else f"{x:.1e}"
        s = s.lstrip("-")
    return s


def format_pvalue(p: Any) -> str:
    """A p-value as a reader wants it: ``<0.001`` below 0.001 (a permutation p of 0 included), else 3 significant
    digits with at most 4 decimals (``0.0123``, ``0.0012``, ``0.5``); missing → ``—``."""
    if _is_missing(p):
        return DASH
    p = float(p)
    if p < 1e-3:
        return "<0.001"
    return _plain(float(f"{p:.3g}"), 4).rstrip("0").rstrip(".") if p < 1 else "1"


def format_count(n: Any) -> str:
    """An integer with thousands separators (``12,345``); missing → ``—``."""
    return DASH if _is_missing(n) else f"{int(round(float(n))):,}"


def format_value(x: Any, decimals: int | None = 3) -> str:
    """One cell: booleans ``yes``/``no``, missing ``—``, integers with thousands separators, floats at ``decimals``
    (see :func:`column_decimals`), text as it is (``"nan"``/``"None"`` text as ``—``)."""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if _is_missing(x):
        return DASH
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        if np.isinf(x):
            return "∞" if x > 0 else "−∞"
        return _plain(float(x), decimals)
    s = str(x)
    return DASH if s.strip() in {"nan", "NaN", "None", "<NA>", "NaT"} else tidy_ci_text(s)


def tidy_ci_text(s: str) -> str:
    """An ``"estimate [low, high]"`` string another function wrote, re-rounded for reading: the three numbers get
    the decimals :func:`column_decimals` gives their largest magnitude, never more than the string had (no false
    precision): ``"0.00935 [-0.103, 0.131]"`` → ``"0.009 [-0.103, 0.131]"``, ``"0.70 [0.57, 0.81]"`` unchanged.
    Any other string is returned as it is."""
    m = _CI_TEXT.match(s)
    if not m:
        return s
    texts = m.groups()
    try:
        nums = [float(t.replace(",", "").replace("−", "-")) for t in texts]
    except ValueError:
        return s
    had = max(len(t.split(".")[1]) if "." in t and "e" not in t.lower() else 0 for t in texts)
    sci = any("e" in t.lower() for t in texts)
    dec = column_decimals(nums)
    if dec is None:
        return s
    dec = dec if sci else min(dec, had)
    return f"{_plain(nums[0], dec)} [{_plain(nums[1], dec)}, {_plain(nums[2], dec)}]"


def ci_triples(columns: list[Any]) -> list[tuple[Any, Any, Any]]:
    """``(estimate, low, high)`` column triples in ``columns``: ``estimate/low/high``, ``value/ci_low/ci_high``,
    ``auroc/auroc_low/auroc_high``, ``tau/tau_low/tau_high``, ``unknown_rate/unknown_low/unknown_high``...; the
    estimate of a bare ``low``/``high`` pair is the column just before ``low`` (else ``estimate``/``value``/
    ``mean``); of ``<x>_low`` it is ``<x>``, ``<x>_rate``... or else the column just before; of ``low_<x>``/
    ``high_<x>`` (bounds named as a prefix) it is the column just before, when its name ends ``_<x>``
    (``auroc_paper, low_paper, high_paper``). Names compare without case."""
    names = [str(c).lower() for c in columns]
    out = []
    for j, c in enumerate(names):
        suffix = next((x for x in _LOW if c.endswith(x)), None)
        if suffix is None:
            continue
        prefix = c[: len(c) - len(suffix)]
        high = prefix + _HIGH[suffix]
        if high not in names:
            continue
        if prefix.rstrip("_ "):
            candidates = [prefix] + [prefix + x for x in ("_rate", "_estimate", "_mean", "_value")]
        else:  # a bare low/high: the column just before it, else estimate/value/mean
            candidates = ([names[j - 1]] if j > 0 else []) + list(_ESTIMATE_NAMES)
        est = next((e for e in candidates if e in names and e not in (c, high)), None)
        if est is None and j > 0 and names[j - 1] != high:
            est = names[j - 1]
        if est is not None:
            out.append((columns[names.index(est)], columns[j], columns[names.index(high)]))
    for j, c in enumerate(names):  # the bounds as a prefix: auroc_paper, low_paper, high_paper
        m = re.match(r"^(low|lo|lower)_(.+)$", c)
        if not m or j == 0:
            continue
        high = {"low": "high", "lo": "hi", "lower": "upper"}[m.group(1)] + "_" + m.group(2)
        est = names[j - 1]
        if high in names and est.endswith("_" + m.group(2)) and est != high and not any(est in t for t in out):
            out.append((columns[j - 1], columns[j], columns[names.index(high)]))
    return out


def for_reader(obj: Any, *, confidence: float | None = 0.95, counts: tuple = (), pvalues: tuple = ()) -> pd.DataFrame:
    """The reader's view of a table: every cell a string, formatted by kind (DESIGN.md: one table formatter).

    * The index: a pandas ``RangeIndex`` (or any unnamed integer index, e.g. left by a filter) is dropped; a
      meaningful one (named, or labels) becomes the leading label column(s). Column levels are joined with `` · ``.
    * ``estimate``/``low``/``high`` column triples (:func:`ci_triples`) become one column ``"<estimate> [95% CI]"``
      of ``"0.712 [0.650, 0.770]"`` (``confidence`` names the level; ``None`` writes ``[CI]``).
    * p-value columns (:func:`is_pvalue_column`, or named in ``pvalues``): ``<0.001`` or 3 significant digits.
    * counts — integer columns, float columns whose values are all whole numbers (NaN made them float), or named
      in ``counts``: integers with thousands separators. Id-like integers (``seed``, ``layer``, ``*_id``) plain.
    * other floats: decimals from the column's largest magnitude (:func:`column_decimals`), the same for every
      row, so a column reads down; scientific notation only for a column of tiny or huge numbers, or a non-zero
      value that would read as zero.
    * booleans ``yes``/``no``; missing values (NaN, None, text ``"nan"``) ``—``; ``"x [lo, hi]"`` strings another
      function wrote are re-rounded, never to more decimals than they had (:func:`tidy_ci_text`).

    A Series is shown as a one-column table (its index as labels). Returns a new DataFrame with a RangeIndex.
    """
    if isinstance(obj, pd.Series):
        obj = obj.to_frame(name=obj.name if obj.name is not None else "value")
    if not isinstance(obj, pd.DataFrame):
        raise TypeError(f"for_reader needs a DataFrame or Series, got {type(obj).__name__}")
    df = obj.copy()
    if isinstance(df.columns, pd.MultiIndex):
        df.columns = [" · ".join(str(x) for x in c if str(x) != "") for c in df.columns]
    idx = df.index
    if _meaningful_index(idx):
        names = [n if n is not None else " " * i for i, n in enumerate(idx.names)]  # an unnamed level: no header
        taken = set(map(str, df.columns))
        names = [n if str(n) not in taken else f"{n} " for n in names]
        df.index = idx.set_names(names)
        df = df.reset_index()
    df.columns = [str(c) for c in df.columns]
    cols: dict[str, list[str]] = {}
    used = set()
    level = "CI" if confidence is None else f"{100 * confidence:g}% CI"
    triples = {t[0]: t for t in ci_triples(list(df.columns))}
    for c in df.columns:
        if c in used:
            continue
        if c in triples:
            est, lo, hi = triples[c]
            if all(pd.api.types.is_numeric_dtype(df[x]) and not pd.api.types.is_bool_dtype(df[x]) for x in (est, lo, hi)):
                dec = column_decimals(pd.concat([df[est], df[lo], df[hi]]))
                cols[f"{est} [{level}]"] = [
                    DASH if _is_missing(e) else format_value(e, dec) + (
                        "" if _is_missing(a) or _is_missing(b) else f" [{format_value(a, dec)}, {format_value(b, dec)}]")
                    for e, a, b in zip(df[est], df[lo], df[hi], strict=True)]
                used.update((est, lo, hi))
                continue
        cols[c] = _format_column(df[c], c, counts=c in counts, pvalue=c in pvalues)
    return pd.DataFrame(cols, index=pd.RangeIndex(len(df)), dtype=object)


def _meaningful_index(idx: pd.Index) -> bool:
    """An index a reader needs (labels, or a named one), not a row number: a RangeIndex or an unnamed integer
    index (what a filter leaves) is not."""
    if isinstance(idx, pd.MultiIndex):
        return True
    return not (isinstance(idx, pd.RangeIndex) or (idx.name is None and pd.api.types.is_integer_dtype(idx.dtype)))


def _format_column(s: pd.Series, name: str, *, counts: bool = False, pvalue: bool = False) -> list[str]:
    values = s.tolist()
    if pd.api.types.is_bool_dtype(s):
        return [format_value(bool(v)) if not _is_missing(v) else DASH for v in values]
    numeric = pd.api.types.is_numeric_dtype(s)
    if numeric and (pvalue or is_pvalue_column(name)):
        finite = pd.to_numeric(s, errors="coerce").dropna()
        if finite.empty or ((finite >= 0) & (finite <= 1)).all():
            return [format_pvalue(v) for v in values]
    if numeric and _is_id_column(name) and pd.api.types.is_integer_dtype(s):
        return [str(int(v)) for v in values]
    if numeric:
        num = pd.to_numeric(s, errors="coerce")
        finite = num[np.isfinite(num)]
        if counts or pd.api.types.is_integer_dtype(s) or (len(finite) and (finite == finite.round()).all()
                                                         and finite.abs().max() < 1e15):
            if _is_id_column(name):
                return [DASH if _is_missing(v) else str(int(v)) for v in values]
            return [format_count(v) for v in values]
        dec = column_decimals(num)
        return [format_value(float(v), dec) if not _is_missing(v) else DASH for v in values]
    # object columns: each cell by its own kind (a float among text gets its column's decimals)
    floats = [v for v in values if isinstance(v, (float, np.floating)) and not _is_missing(v)]
    dec = column_decimals(floats) if floats else 3
    return [format_value(v, dec) for v in values]


_LONG_ID = re.compile(r"\b\w*_\w*\b")

READER_MAX_ROWS = 500
"""A displayed table longer than this shows its first rows and says how many more its CSV file holds."""

_CI_TAIL = re.compile(r"^(.*?\S) (\[[^\[\]]*\])$")


def reader_html(obj: Any, *, confidence: float | None = 0.95) -> str:
    """:func:`for_reader` as an HTML table for a report: no index column, text escaped, numeric columns
    right-aligned (``class="num"``), the label columns of a meaningful index as ``<th>``, and each interval kept on
    one line (``<span class="ci">``) so a narrow column breaks between the estimate and its interval."""
    shown = for_reader(obj, confidence=confidence)
    n_labels = obj.index.nlevels if _meaningful_index(obj.index) else 0
    numeric = [any(v not in (DASH, "") for v in shown[c]) and all(_looks_numeric(v) for v in shown[c])
               for c in shown.columns]  # blank cells do not make a column text

    def cell(v: str) -> str:
        m = _CI_TAIL.match(v)
        if m and _CI_TEXT.match(v):
            return f"{_html.escape(m.group(1))} <span class='ci'>{_html.escape(m.group(2))}</span>"
        # a long snake_case id may break after its underscores (words are never broken inside: html_page.CSS)
        return _LONG_ID.sub(lambda t: t.group(0).replace("_", "_<wbr>"), _html.escape(v))

    head = "".join(f"<th>{_html.escape(str(c))}</th>" for c in shown.columns)
    rows = []
    more = len(shown) - READER_MAX_ROWS
    for row in (shown.head(READER_MAX_ROWS) if more > 0 else shown).itertuples(index=False, name=None):
        tds = []
        for j, v in enumerate(row):
            tag = "th" if j < n_labels else "td"
            cls = " class='num'" if numeric[j] and j >= n_labels else ""
            tds.append(f"<{tag}{cls}>{cell(str(v))}</{tag}>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    tail = f"<p class='meta'>{more:,} more rows in the table's CSV file</p>" if more > 0 else ""
    return (f"<table class='dataframe reader'><thead><tr>{head}</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>" + tail)


def _looks_numeric(v: str) -> bool:
    return v in (DASH, "", "<0.001") or bool(re.match(rf"^{_NUM}%?( \[.*\])?$", v.replace("\u2212", "-")))


def show_tables_for_readers(confidence: float | None = 0.95) -> None:
    """Make every DataFrame and Series a notebook displays (``display(df)``, or a cell's last expression) render
    through :func:`reader_html` — the one table formatter of the reports. Called once, in a notebook's setup cell;
    outside IPython it does nothing. The plain-text view and the saved table files are unchanged."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook extra
        return
    ip = get_ipython()
    if ip is None:
        return
    fmt = ip.display_formatter.formatters["text/html"]
    for kind in (pd.DataFrame, pd.Series):
        fmt.for_type(kind, lambda obj: reader_html(obj, confidence=confidence))


def unavailable_note(skipped: Any, label: Any = None) -> str:
    """One sentence per metric that could not run here (Markdown, ``""`` when none), for the note under the table
    that would have held it: ``"RaTEScore was not run: needs RaTEScore, medspacy, which is not installed: `pip
    install 'radaudit[ratescore]'`."`` The reason is the error's own message without the exception's class name
    and without the ``Metric 'x'`` it starts with. ``skipped``: ``{metric: reason}`` or ``{system: {metric:
    reason}}`` (a metric skipped for every strategy is named once, with its first reason). ``label``: the display
    name of a metric, a function (e.g. :func:`radaudit.metrics.base.metric_label`) or a mapping; default the name
    itself (this module sits below the metrics layer and does not import it)."""
    flat: dict[str, str] = {}
    for key, value in (skipped or {}).items():
        inner = value if isinstance(value, dict) else {key: value}
        for metric, why in inner.items():
            flat.setdefault(str(metric), str(why))
    if not flat:
        return ""

    def name(metric: str) -> str:
        if callable(label):
            return str(label(metric))
        return str((label or {}).get(metric, metric))

    lines = []
    for metric, why in flat.items():
        reason = why.strip().splitlines()[0] if why.strip() else "not available here"
        reason = re.sub(r"^[A-Za-z_][\w.]*(?:Error|Exception|Warning)\s*:\s*", "", reason)
        reason = re.sub(rf"^Metric\s+'?{re.escape(metric)}'?\s+", "", reason).rstrip(". ")
        reason = re.sub(r"(pip install [^\s`]+(?: [^\s`.]+)*)$", r"`\1`", reason)
        lines.append(f"{name(metric)} was not run: {reason}.")
    return "*Not run here.* " + " ".join(lines)


# ----------------------------------------------------------------------------------------------------------------------
# A CI beside every estimate (issue 42, DESIGN.md "Every headline number in a table carries a 95% bootstrap CI"): which
# columns of a table are estimates that carry no interval.

#: Name tokens of a statistic: a column so named is an estimate even when its values are whole numbers (an accuracy of
#: 1.0 on a smoke run's few samples, an AUROC of 0 or 1).
STATISTIC_TOKENS = frozenset({
    "auroc", "auc", "accuracy", "acc", "f1", "precision", "recall", "sensitivity", "specificity", "ppv", "npv", "rate",
    "share", "proportion", "fraction", "prevalence", "kappa", "alpha", "tau", "rho", "pearson", "spearman", "kendall",
    "correlation", "corr", "fid", "kid", "ece", "nfr", "mean", "estimate", "diff", "difference", "delta", "change",
    "effect", "es", "bleu", "bleu4", "rouge", "rougel", "bertscore", "score", "density", "coverage", "alignment",
    "atomimed", "cad", "wae", "weat", "dir", "ds", "rs", "brier", "mae", "mse", "rmse",
})
#: Name tokens of a column that is no estimate: a count, a setting of the run, the spread or quantiles that describe a
#: sample (median and IQR beside a mean with its CI; a standard error is the uncertainty itself), an interval bound.
NOT_ESTIMATE_TOKENS = {
    "count": frozenset({"n", "count", "counts", "number", "num"}),
    "setting": frozenset({"threshold", "thresholds", "cutoff", "sigma", "temperature", "bin", "bins", "step", "steps"}),
    "spread": frozenset({"se", "sd", "std", "stderr", "var", "variance", "iqr", "min", "max", "median", "q1", "q3",
                         "quantile", "percentile"}),
    "bound": frozenset({"low", "lo", "lower", "high", "hi", "upper"}),
}
_DECIMAL = r"[-+−]?(?:\d[\d,]*\.\d+|\.\d+)(?:e[-+]?\d+)?%?"
_BARE_DECIMAL = re.compile(rf"^\s*{_DECIMAL}(?:\s*/\s*{_DECIMAL})*\s*$", re.I)  # "0.712", "0.35/0.66" (S/ES)
_WITH_INTERVAL = re.compile(r"\S\s*\[[^\[\]]*\]")
_DECIMAL_WITH_INTERVAL = re.compile(rf"^\s*{_DECIMAL}\S*\s*\[[^\[\]]*\]", re.I)  # "0.712 [0.650, 0.770]", "0.95+ [...]"


def _not_estimate_kind(name: Any) -> str | None:
    """Why a column named ``name`` holds no estimate (``"p-value"``, ``"id"``, ``"count"``, ``"setting"``,
    ``"spread"``, ``"bound"``), else ``None``."""
    toks = _tokens(name)
    last_p = max((i for i, t in enumerate(toks) if t in _P_TOKENS), default=None)
    if is_pvalue_column(name) or (last_p is not None and all(t in _P_QUALIFIERS for t in toks[last_p + 1:])):
        return "p-value"  # also the p-value of a named quantity: diff_p, diff_p_bh
    if _is_id_column(name):
        return "id"
    if toks and (toks[0] == "n" or toks[-1] in NOT_ESTIMATE_TOKENS["count"]):
        return "count"
    for kind in ("setting", "spread", "bound"):
        if any(t in NOT_ESTIMATE_TOKENS[kind] for t in toks):
            return kind
    return None


def is_estimate_column(name: Any, values: Any) -> bool:
    """Whether a table column holds estimates a reader needs an interval for (:func:`missing_intervals`' rule).

    A column is an estimate when it holds non-integer numbers: a float column with a finite value that is not a
    whole number (or any finite value, when a name token is a statistic, :data:`STATISTIC_TOKENS`: an accuracy of
    1.0 is an estimate too), or a text column with a cell that is a bare decimal number (``"0.712"``, what
    :func:`for_reader` or a hand-formatted table writes) or a decimal with its interval (``"0.712 [0.650, 0.770]"``);
    integers and whole-number floats are counts, booleans and other text are no numbers.

    It is not an estimate, whatever it holds, when its name marks it as a p- or q-value (:func:`is_pvalue_column`,
    or a p/q token followed only by qualifiers after another name: ``diff_p``, ``diff_p_bh``), an id (``seed``,
    ``layer``, ``*_id``), a count (``n``, ``n_*``, ``*_count``), a setting of the run (``threshold``, ``sigma``,
    ``bin``...), the spread or quantiles that describe a sample (``se``, ``sd``, ``median``, ``q1``, ``min``...) or an
    interval bound (``low``, ``high``...): :data:`NOT_ESTIMATE_TOKENS`."""
    if _not_estimate_kind(name) is not None:
        return False
    s = pd.Series(values) if not isinstance(values, pd.Series) else values
    if pd.api.types.is_bool_dtype(s):
        return False
    if pd.api.types.is_numeric_dtype(s):
        num = pd.to_numeric(s, errors="coerce").astype(float)
        finite = num[np.isfinite(num)]
        if finite.empty:
            return False
        if any(t in STATISTIC_TOKENS for t in _tokens(name)) and not pd.api.types.is_integer_dtype(s):
            return True
        return bool((finite != finite.round()).any())
    return any(isinstance(v, str) and (_BARE_DECIMAL.match(v) or _DECIMAL_WITH_INTERVAL.match(v)) for v in s.tolist())


def _has_interval(values: pd.Series) -> bool:
    """A text column of ``"estimate [low, high]"`` cells: every bare decimal carries its interval."""
    cells = [v for v in values.tolist() if isinstance(v, str)]
    return bool(cells) and any(_WITH_INTERVAL.search(v) for v in cells) and not any(_BARE_DECIMAL.match(v) for v in cells)


def missing_intervals(table: pd.DataFrame, *, descriptive: Any = (), descriptive_rows: Any = ()) -> list[str]:
    """The estimate columns of ``table`` that carry no confidence interval, in column order (``[]``: every estimate has
    one). DESIGN.md: a CI beside every estimate in every report table.

    An estimate column (:func:`is_estimate_column`: non-integer numbers, not a p-value, id, count, setting, spread or
    bound) carries an interval when it is the estimate of an ``estimate``/``low``/``high`` triple
    (:func:`ci_triples`: ``auroc, auroc_low, auroc_high``, ``estimate, low, high``...; a row whose bounds are
    missing counts as given, as ``"0.71 [n/a]"`` does: the interval was tried and could not be computed), or when
    its text cells read ``"0.712 [0.650, 0.770]"`` (what :func:`format_ci` and :func:`for_reader` write) with no bare
    number (``"0.712"``, ``"0.35/0.66"``) among them.

    What legitimately has no interval is declared, never skipped silently (:data:`NO_INTERVAL` holds the lab's
    declarations, each with its reason):

    * ``descriptive``: column names that are estimates by this rule but need no interval (an exact ratio of two counts
      of the run, a number that describes the sample rather than estimates anything);
    * ``descriptive_rows``: row labels of a wide table whose rows are measures (``"Max. Re-ID"``: a sample maximum,
      which a bootstrap cannot bound): rows with a text cell equal to one of them are left out of the check.

    A declared column that is not in ``table`` raises ``KeyError`` (a stale declaration); a declared row label need
    not occur (a table's rows follow the data)."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"missing_intervals needs a DataFrame, got {type(table).__name__}")
    columns = [str(c) for c in table.columns]
    declared = {str(c) for c in descriptive}
    stale = sorted(declared - set(columns))
    if stale:
        raise KeyError(f"missing_intervals: declared descriptive columns {stale} are not in the table; it has {columns}")
    df = table.set_axis(columns, axis=1)
    rows = {str(r) for r in descriptive_rows}
    if rows:
        text = df.select_dtypes(exclude="number")
        keep = ~text.apply(lambda col: col.map(lambda v: isinstance(v, str) and v in rows)).any(axis=1)
        df = df[keep.to_numpy()]
    covered = {c for triple in ci_triples(columns) for c in triple}
    out = []
    for c in columns:
        if c in covered or c in declared or columns.count(c) > 1:
            continue
        s = df[c]
        if not is_estimate_column(c, s):
            continue
        if not pd.api.types.is_numeric_dtype(s) and _has_interval(s.astype(object)):
            continue
        out.append(c)
    return out


@dataclass(frozen=True)
class NoInterval:
    """A declaration that columns (or rows) of a table carry no interval, and why (:func:`missing_intervals`).

    ``columns``: the column names (``("*",)``: every column, for a table of per-item rows, where each number
    measures one item and there is no sample to resample); ``rows``: row labels of a wide table whose rows are
    measures. ``gap``: ``True`` when the number SHOULD carry an interval and does not yet: listed, with what is
    missing, so that the check passes while the gap is open and the gap stays in sight; remove the entry when the
    interval is added. ``optional``: columns only some presets write (a feature the smoke preset leaves out): the
    smoke test does not require them in its table. tests/test_report_intervals.py checks that every declared table,
    column (not optional) and row exists in a smoke run; it cannot tell a closed gap from one that a smoke run's few
    samples do not show (a demo-only WEAT value), so closing one means deleting its entry by hand."""

    reason: str
    columns: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    gap: bool = False
    optional: bool = False


_PER_ITEM = "one row per {}: each number measures one item (the data behind a figure or a later table), not an estimate"
#: The lab's declarations, ``{"<experiment>/<table file stem>": (NoInterval, ...)}``: every estimate column of a table a
#: smoke run writes that has no interval is listed here with its reason, or it is a failure of
#: tests/test_report_intervals.py. One registry, so that a reader sees every exception in one place.
NO_INTERVAL: dict[str, tuple[NoInterval, ...]] = {
    # atomic_facts
    "atomic_facts/scores_per_candidate": (NoInterval(_PER_ITEM.format("candidate report (its scores)"), ("*",)),),
    # decoding_erasure
    "decoding_erasure/fig2c_skew_sensitivity": (
        NoInterval("the skew level: a setting the sweep varies", ("skew",)),),
    "decoding_erasure/fig3_pstar_sweep": (NoInterval("p*: the significance level the sweep varies", ("p_star",)),),
    "decoding_erasure/generation_summary": (NoInterval("describes the generated corpus of this run (length, truncated "
                                                       "share), not a result", ("mean_new_tokens", "hit_length_limit")),),
    "decoding_erasure/vocabulary_transitions": (NoInterval("an exact ratio of two vocabulary counts of this run's corpus",
                                                           ("pred_share_of_ref",)),),
    "decoding_erasure/words_per_strategy": (NoInterval(_PER_ITEM.format("word (its association statistics)"), ("*",)),),
    "decoding_erasure/words_per_system": (NoInterval(_PER_ITEM.format("word (its association statistics)"), ("*",)),),
    # metric_metaeval
    "metric_metaeval/auroc_context_ablation": (
        NoInterval("BH-adjusted p-values of the two AUROCs (the suffix hides the p from the name rule)",
                   ("p_adj_paper", "p_adj_full")),),
    "metric_metaeval/monotonicity_summary": (
        NoInterval("the five group means behind τ; each with its CI in fig4_monotonicity_means",
                   ("mean_g0", "mean_g1", "mean_g2", "mean_g3", "mean_g4")),),
    "metric_metaeval/table1_radpref_rater_pairs": (NoInterval(
        "one row per rater pair: the components of Table 1's mean pairwise correlation, whose CI is in "
        "table1_radpref_long", ("pearson", "spearman")),),
    "metric_metaeval/undefined_scores": (NoInterval("an exact share of this run's pairs (a data-quality count)",
                                                    ("undefined_share",)),),
    # modality_shift
    "modality_shift/attention_by_layer": (NoInterval(_PER_ITEM.format("sample and layer"), ("*",)),),
    "modality_shift/attention_patch_heatmaps": (NoInterval(_PER_ITEM.format("image patch"), ("*",)),),
    "modality_shift/fig3cd_reliability": (NoInterval("per-bin points of the reliability diagram; the ECE they make has "
                                                     "its CI in fig3ab_ece", ("conf", "acc", "gap")),),
    "modality_shift/fig4_attention_shares": (NoInterval(_PER_ITEM.format("sample and generation step"), ("*",)),),
    "modality_shift/fig4_attention_tokens": (NoInterval(_PER_ITEM.format("input token"), ("*",)),),
    "modality_shift/gradient_patch_heatmaps": (NoInterval(_PER_ITEM.format("image patch"), ("*",)),),
    "modality_shift/marker_saliency": (NoInterval(_PER_ITEM.format("sample"), ("*",)),),
    "modality_shift/results_long": (NoInterval(_PER_ITEM.format("model answer (its logits and probabilities)"),
                                               ("*",)),),
    # synthetic_cxr
    "synthetic_cxr/degrader_dose_long": (NoInterval("the bootstrap's bias of the estimate: a diagnostic of its interval, "
                                                    "like se", ("bias",)),),
    "synthetic_cxr/degrader_dose_spearman": (NoInterval("Spearman ρ across the five fixed dose levels (a monotonicity "
                                                        "check on five points, each with its CI in degrader_dose_long)",
                                                        ("spearman",)),),
    "synthetic_cxr/demo_model_quality": (NoInterval("quality checks of the trained stand-ins (a model card), not results "
                                                    "of the audit", ("value",)),),
    "synthetic_cxr/table1_long": (NoInterval("the bootstrap's bias of the estimate: a diagnostic of its interval, like "
                                             "se", ("bias",)),),
    "synthetic_cxr/table3_long": (NoInterval("δ: the re-identification threshold, a setting", ("delta",)),),
    "synthetic_cxr/table3_privacy": (NoInterval("the sample maximum, which a bootstrap cannot bound",
                                                rows=("Max. Re-ID (↓)",)),),
    "synthetic_cxr/table4_long": (
        NoInterval("the real-data AUROC of the same label, repeated on each row for comparison; its CI is on the "
                   "real row", ("auroc_baseline",)),),
    "synthetic_cxr/table8_ranks": (
        NoInterval("ranks of the generators (1 = best), the paper's Table 8",
                   ("fid_cxr", "kid_cxr", "precision", "recall", "density", "coverage", "alignment")),
        NoInterval("the headline macro AUROC of Table 4, with its CI there", ("utility_macro_auroc",)),
        NoInterval("ranks of the generators by the ImageNet-Inception FID/KID, written when the Inception network "
                   "is installed (demo, paper; not smoke)", ("fid_inception", "kid_inception"), optional=True)),
}


def declared_no_interval(key: str) -> tuple[set[str] | None, set[str]]:
    """``(columns, rows)`` :data:`NO_INTERVAL` declares for ``"<experiment>/<table>"``; ``columns`` is ``None`` when
    every column is declared (``"*"``)."""
    columns: set[str] | None = set()
    rows: set[str] = set()
    for d in NO_INTERVAL.get(key, ()):
        if "*" in d.columns:
            columns = None
        elif columns is not None:
            columns.update(d.columns)
        rows.update(d.rows)
    return columns, rows


def missing_intervals_in_run(run_dir: str | Path, experiment: str | None = None) -> dict[str, list[str]]:
    """:func:`missing_intervals` of every table a run wrote (``<run_dir>/tables/*.csv``, read back), with the
    declarations of :data:`NO_INTERVAL`: ``{table stem: [estimate columns without an interval]}``, only the tables
    with some (``{}``: every estimate has its interval). ``experiment`` defaults to the run folder's parent's name
    (``outputs/<experiment>/<run>``)."""
    run_dir = Path(run_dir)
    experiment = experiment or run_dir.resolve().parent.name
    out = {}
    for path in sorted((run_dir / "tables").glob("*.csv")):
        columns, rows = declared_no_interval(f"{experiment}/{path.stem}")
        if columns is None:
            continue
        table = pd.read_csv(path)
        missing = missing_intervals(table, descriptive=columns & set(map(str, table.columns)), descriptive_rows=rows)
        if missing:
            out[path.stem] = missing
    return out
