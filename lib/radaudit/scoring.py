"""Score your own reports: each metric overall and per group, with 95% CIs and the gaps between groups.

``radaudit score predictions.csv --metrics bleu,bertscore,atomimed,chexpert_f1 --by sex,age_group`` or, from
Python, ``radaudit.score(df, metrics=[...], by=[...])``. The table has one ``reference`` and one
``prediction`` column (names configurable) and any group columns. What comes back (:class:`ScoreReport`):

* ``table``: per metric and statistic, the value over all pairs and in each group of each ``by`` column,
  with ``n`` (pairs), ``n_undefined`` (pairs the metric cannot score, e.g. two empty reports) and a 95%
  **BCa** bootstrap interval (pairs resampled, :func:`radaudit.stats.paired_bootstrap`, ``n_bootstrap``
  replicates, seeded), and ``kind`` (``headline`` or ``per-pair view``, below).
* ``gaps``: every pairwise difference between the groups of a column (``a − b``) with its interval (from the
  same replicates, so each gap is consistent with its groups) and a bootstrap p-value, Benjamini–Hochberg
  corrected over every gap of the report (``pvalue_bh``; ``significant``: BH's decision at FDR 0.05).
* ``pairs``: one row per input pair: ``row`` (the pair's **0-based position in the input as pandas reads it**,
  ``df.iloc[row]``; in a file without blank lines or multi-line cells it is on line ``row + 2``, the header being
  line 1), the group columns, the context columns, the ``reference`` and ``prediction`` texts, then one column
  of per-pair scores per metric.

**Which statistic, and which to report.** A metric the field reports as a *corpus* statistic (BLEU: n-gram counts
summed over the pairs, then one BLEU; CheXpert-label F1: TP/FP/FN summed) is reported as that
(``statistic = "corpus"``), computed exactly on each group and resample from per-pair sufficient statistics
(:attr:`radaudit.metrics.MetricResult.corpus_stats`); its per-pair mean (sentence BLEU, example F1) is a second
row named ``"mean per pair"``. Every other metric is a mean per pair. The column ``kind`` says which number to
report: ``"headline"`` (the corpus statistic of a corpus metric, the mean of any other) or ``"per-pair view"``
(a corpus metric's mean per pair: how the pairs spread, not the metric's value). For ``chexpert_f1`` the headline
is the corpus micro-F1 because that is what the field's labeler-F1 tools compute: f1chexbert (as vendored in
RadEval) returns micro/macro/weighted F1 from sklearn's ``classification_report`` over all reports at once, and
per sample only a label accuracy (``shared/ANCHORS.md`` §10); sacreBLEU's ``corpus_score`` likewise is BLEU's
headline. A corpus metric without sufficient statistics gets its corpus value without an interval, said in
``note``.

**The terminal summary** (:meth:`ScoreReport.summary`, what ``radaudit score`` prints): the overall rows with
their kind; then, per ``by`` column, one table of the groups (n, and each metric's headline value with its CI,
metrics split over several tables where the lines would pass 100 characters) and, per metric, the largest gap of
that column (|estimate|) with its CI, BH-adjusted p and how many of the column's gaps are significant (BH at
FDR 0.05, :func:`radaudit.stats.benjamini_hochberg`'s decision over every gap of the report); one note counts
the intervals that are percentile rather than BCa (BCa undefined, e.g. for a group of one pair; ``radaudit score``
prints that note instead of a warning per interval). ``scores.html`` shows the same summary above the full tables.

**Column errors** name the columns the table has, the closest one (an exact match but for case, then
:func:`difflib.get_close_matches`, then a column containing the name, then for the report columns a usual name
such as ``findings``/``impression`` or ``generated``/``pred``) and the flag that fixes it (``--reference-column``,
``--prediction-column``, ``--by``, ``--context-columns``, with the keyword for Python).

**Patient context** (issue 41): ``context_columns`` (``--context-columns age,indication``) names columns holding
each pair's ``age``, ``sex``, ``indication`` or ``history`` (``key=column`` when the column is named otherwise,
e.g. ``age=patient_age``); a metric whose ``compute`` takes ``context=`` (``atomimed_clinical``) gets one context
per pair, every other metric ignores it (said in ``note``). Empty cells are no context.

Short names: ``bleu`` = ``bleu4``, ``rouge`` = ``rougeL``, ``chexpert_f1`` = ``chexpert_f1_micro_top5`` (the
field's "micro-F1 over the 5 CheXpert labels"); any name of ``radaudit metrics`` works.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError
from radaudit.html_page import escape, fmt_number, page
from radaudit.metrics import build_metric, check_pairs
from radaudit.metrics.ranking import accepts_context
from radaudit.stats import benjamini_hochberg, bootstrap_ci, paired_bootstrap, stable_seed

__all__ = ["ALIASES", "ScoreReport", "closest_column", "score", "score_file"]

#: Short metric names a user types -> registry names.
ALIASES = {"bleu": "bleu4", "rouge": "rougeL", "chexpert_f1": "chexpert_f1_micro_top5"}
ALL = "all"
HEADLINE, PER_PAIR_VIEW = "headline", "per-pair view"
#: The false-discovery rate at which a gap counts as significant (Benjamini–Hochberg over every gap of a report).
FDR = 0.05
TABLE_COLUMNS = ["metric", "statistic", "kind", "group_column", "group", "n", "n_undefined", "estimate", "low", "high",
                 "method", "note"]
GAP_COLUMNS = ["metric", "statistic", "kind", "group_column", "a", "b", "estimate", "low", "high", "method",
               "pvalue", "pvalue_bh", "significant"]
#: The width the terminal summary keeps to (characters per line, where the names allow).
WIDTH = 100
#: A group with fewer pairs is marked † in the summary, and the "largest gap" is taken among larger groups where there
#: are two: with 2 pairs a group's CI is nearly the whole range, and any gap to it is the largest by noise.
MIN_GROUP_N = 10
#: At most this many gap rows per metric and grouping in the summary (the largest, then significant ones).
MAX_GAP_ROWS = 6


@dataclass
class ScoreReport:
    """What :func:`score` returns (see the module docstring)."""

    table: pd.DataFrame
    gaps: pd.DataFrame
    pairs: pd.DataFrame
    n_bootstrap: int
    seed: int
    by: list[str] = field(default_factory=list)

    def write(self, folder: str | os.PathLike, title: str = "Report scores") -> dict[str, Path]:
        """Write ``scores.csv``, ``gaps.csv``, ``pairs.csv`` and ``scores.html`` into ``folder``."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"scores": out / "scores.csv", "gaps": out / "gaps.csv", "pairs": out / "pairs.csv",
                 "html": out / "scores.html"}
        self.table.to_csv(paths["scores"], index=False)
        self.gaps.to_csv(paths["gaps"], index=False)
        self.pairs.to_csv(paths["pairs"], index=False)
        paths["html"].write_text(self.to_html(title), encoding="utf-8")
        return paths

    # -- the summary: the same rows for the terminal and the page ------------------------------------------------

    def _meta(self) -> str:
        return (f"{len(self.pairs)} pairs · 95% BCa bootstrap CIs ({self.n_bootstrap} resamples of pairs, seed "
                f"{self.seed}) · report each metric's headline row; a per-pair view is a mean over pairs, not the "
                "metric's value")

    def _overall(self) -> tuple[list[str], list[list[str]], list[str]]:
        """Header, rows and notes of the overall scores."""
        rows = self.table[self.table["group_column"] == ALL]
        undefined = bool((rows["n_undefined"] > 0).any())
        header = ["metric", "statistic", "kind", "n", *(["undefined"] if undefined else []), "value", "95% CI"]
        body, notes = [], []
        for r in rows.itertuples():
            body.append([r.metric, r.statistic, r.kind, fmt_number(int(r.n)),
                         *([fmt_number(int(r.n_undefined))] if undefined else []), fmt_number(r.estimate),
                         _ci(r.low, r.high)])
            if isinstance(r.note, str) and r.note and f"{r.metric}: {r.note}" not in notes:
                notes.append(f"{r.metric}: {r.note}")
        return header, body, notes

    def _groups(self, col: str) -> tuple[str, list[str], list[list[str]]]:
        """Caption, header and rows of one ``by`` column's groups: n, then each metric's headline with its CI."""
        block = self.table[(self.table["group_column"] == col) & (self.table["kind"] == HEADLINE)]
        metrics = list(dict.fromkeys(block["metric"]))
        groups = list(dict.fromkeys(block["group"]))
        first = block[block["metric"] == metrics[0]].set_index("group") if metrics else None
        header = [col, "n", *(f"{_short(m)} {self._statistic_of(m)}" for m in metrics)]
        body = []
        for g in groups:
            n = int(first.loc[g, "n"])
            cells = [g + (" †" if n < MIN_GROUP_N else ""), fmt_number(n)]
            for m in metrics:
                r = block[(block["metric"] == m) & (block["group"] == g)].iloc[0]
                cells.append(_value_ci(r["estimate"], r["low"], r["high"]))
            body.append(cells)
        miss = len(self.pairs) - (int(first["n"].sum()) if first is not None else 0)
        small = [g for g in groups if int(first.loc[g, "n"]) < MIN_GROUP_N]
        caption = (f"By {col}: {len(groups)} group{'s' if len(groups) != 1 else ''}, headline value [95% CI]"
                   + (f"; {miss} pair{'s' if miss != 1 else ''} without a {col} value left out" if miss else "")
                   + (f"; † fewer than {MIN_GROUP_N} pairs: its CI says little, and the largest gap below is "
                      "taken between larger groups where there are two" if small else ""))
        return caption, header, body

    def _group_sizes(self, col: str) -> dict[str, int]:
        block = self.table[(self.table["group_column"] == col) & (self.table["kind"] == HEADLINE)]
        return {str(g): int(n) for g, n in zip(block["group"], block["n"])}

    def _fallback_note(self) -> str:
        """One sentence for the intervals that are percentile, not BCa (BCa undefined, e.g. a group of one pair;
        :func:`radaudit.stats.bootstrap_ci` warns for each), or ``""``."""
        rows = self.table[self.table["method"] == "percentile"]
        gaps = self.gaps[self.gaps["method"] == "percentile"] if "method" in self.gaps else self.gaps.iloc[:0]
        k = len(rows) + len(gaps)
        if not k:
            return ""
        groups = list(dict.fromkeys(rows["group"].astype(str)))
        named = ", ".join(groups[:5]) + (f" and {len(groups) - 5} more" if len(groups) > 5 else "")
        return (f"{k} interval{'s are' if k != 1 else ' is'} percentile, not BCa (BCa undefined"
                + (f"; groups {named}" if groups else "") + "): column method of scores.csv and gaps.csv")

    def _statistic_of(self, metric: str) -> str:
        stat = self.table[(self.table["metric"] == metric) & (self.table["kind"] == HEADLINE)]["statistic"]
        return "corpus" if len(stat) and stat.iloc[0] == "corpus" else "mean"

    def _largest_gaps(self, col: str) -> tuple[str, list[str], list[list[str]]]:
        """Caption, header and rows: per metric, the largest gap (|a − b|) between ``col``'s groups, then its other
        significant gaps (largest first, at most :data:`MAX_GAP_ROWS` rows per metric; ``gaps.csv`` holds all)."""
        block = self.gaps[(self.gaps["group_column"] == col) & (self.gaps["kind"] == HEADLINE)]
        header = ["metric", "gap", "value [95% CI]", "p (BH)", "significant"]
        body = []
        sizes = self._group_sizes(col)

        def pair(r) -> str:
            a, b = (f"{x}{' †' if sizes.get(str(x), 0) < MIN_GROUP_N else ''}" for x in (r["a"], r["b"]))
            return f"{a} − {b}"

        for metric, g in block.groupby("metric", sort=False):
            g = g[g["estimate"].notna()]
            if not len(g):
                continue
            # the largest gap between groups of at least MIN_GROUP_N pairs (a group of 2 makes any gap "largest");
            # only when no gap has two such groups, the largest of all, its small group marked †
            big = g[[sizes.get(str(a), 0) >= MIN_GROUP_N and sizes.get(str(b), 0) >= MIN_GROUP_N
                     for a, b in zip(g["a"], g["b"])]]
            pool = big if len(big) else g
            top = pool["estimate"].abs().idxmax()
            r = pool.loc[top]
            n_sig = int(g["significant"].sum())
            body.append([_short(metric), f"largest: {pair(r)}", _value_ci(r["estimate"], r["low"], r["high"]),
                         fmt_number(float(r["pvalue_bh"])), f"{n_sig} of {len(g)}"])
            rest = g[g["significant"].astype(bool) & (g.index != top)]
            # a "significant" gap to a group of a few pairs rests on a CI that cannot show its spread (one pair: a
            # zero-width CI): listed only as a count, when groups of MIN_GROUP_N are there to compare
            small = rest[~rest.index.isin(big.index)] if len(big) else rest.iloc[:0]
            rest = rest[~rest.index.isin(small.index)]
            rest = rest.loc[rest["estimate"].abs().sort_values(ascending=False).index]
            for i, (_, x) in enumerate(rest.iterrows()):
                if i == MAX_GAP_ROWS - 2 and len(rest) > MAX_GAP_ROWS - 1:  # the last row says how many are left
                    body.append(["", f"… {len(rest) - i} more significant, in gaps.csv", "", "", ""])
                    break
                body.append(["", f"significant: {pair(x)}", _value_ci(x["estimate"], x["low"], x["high"]),
                             fmt_number(float(x["pvalue_bh"])), ""])
            if len(small):
                body.append(["", f"{len(small)} more significant with a † group: not listed (in gaps.csv)", "", "",
                             ""])
        caption = (f"{col} gaps: the largest, then every other significant one (p (BH) ≤ {FDR:g}; BH over all "
                   f"{len(self.gaps)} gaps of the report, all in gaps.csv)")
        return caption, header, body

    def summary(self, title: str | None = None, width: int = WIDTH) -> str:
        """The terminal summary (module docstring): overall scores with their kind, then per ``by`` column its
        groups and its largest gap per metric; metric columns are split over several tables to keep lines within
        ``width`` characters where the names allow."""
        lines = [title] if title else []
        lines += textwrap.wrap(self._meta(), width)
        header, body, notes = self._overall()
        lines += ["", "Overall", *_text_table(header, body, right={3, 4, 5} if len(header) == 8 else {3, 4})]
        for n in [*notes, self._fallback_note()]:
            lines += textwrap.wrap(f"note: {n}", width, initial_indent="  ", subsequent_indent="    ") if n else []
        for col in self.by:
            caption, header, body = self._groups(col)
            lines += ["", *textwrap.wrap(caption, width)]
            for cols in _chunks([len(c) for c in header], [[len(x) for x in r] for r in body], width):
                lines += _text_table([header[i] for i in cols], [[r[i] for i in cols] for r in body], right={1})
            caption, header, body = self._largest_gaps(col)
            if body:
                lines += [*textwrap.wrap(caption, width), *_text_table(header, body, right={3})]
            else:
                lines.append(f"  (one {col} group: no gaps)")
        return "\n".join(lines)

    def to_html(self, title: str = "Report scores") -> str:
        """One self-contained page: the summary (overall, each grouping's groups and largest gaps), then a table
        per metric (all pairs, each group, CIs) and its gaps."""
        parts = [f"<h1>{escape(title)}</h1>", f"<p class='meta'>{escape(self._meta())} · gaps: Benjamini–Hochberg "
                 f"over all {len(self.gaps)} gaps</p>", "<h2>Summary</h2>"]
        header, body, notes = self._overall()
        parts.append("<h3>Overall</h3>" + _html_table(header, body, numeric={"n", "undefined", "value", "95% CI"}))
        parts += [f"<p class='meta'>{escape(n)}</p>" for n in [*notes, self._fallback_note()] if n]
        for col in self.by:
            caption, header, body = self._groups(col)
            parts.append(f"<h3>{escape(caption)}</h3>" + _html_table(header, body, numeric=set(header[1:])))
            caption, header, body = self._largest_gaps(col)
            if body:
                parts.append(f"<p class='meta'>{escape(caption)}</p>"
                             + _html_table(header, body, numeric={"value [95% CI]", "p (BH)"}))
        for metric, block in self.table.groupby("metric", sort=False):
            parts.append(f"<h2>{escape(metric)}</h2>")
            rows = "".join(
                f"<tr><td>{escape(r.statistic)}</td><td>{escape(r.kind)}</td><td>{escape(r.group_column)}</td>"
                f"<td>{escape(r.group)}</td><td class='num'>{r.n}</td><td class='num'>{fmt_number(r.estimate)}</td>"
                f"<td class='num'>{_ci(r.low, r.high)}</td><td>{escape(r.note)}</td></tr>"
                for r in block.itertuples())
            parts.append("<div class='scroll'><table><thead><tr><th>Statistic</th><th>Kind</th><th>By</th><th>Group</th>"
                         "<th>n</th><th>Value</th><th>95% CI</th><th>Note</th></tr></thead>"
                         f"<tbody>{rows}</tbody></table></div>")
            gaps = self.gaps[self.gaps["metric"] == metric]
            if len(gaps):
                rows = "".join(
                    f"<tr><td>{escape(r.statistic)}</td><td>{escape(r.kind)}</td><td>{escape(r.group_column)}</td>"
                    f"<td>{escape(r.a)} − {escape(r.b)}</td><td class='num'>{fmt_number(r.estimate)}</td>"
                    f"<td class='num'>{_ci(r.low, r.high)}</td><td class='num'>{fmt_number(r.pvalue_bh)}</td>"
                    f"<td>{'yes' if r.significant else 'no'}</td></tr>"
                    for r in gaps.itertuples())
                parts.append("<h3>Gaps between groups</h3><div class='scroll'><table><thead><tr><th>Statistic</th>"
                             "<th>Kind</th><th>By</th><th>Gap</th><th>Value</th><th>95% CI</th><th>p (BH)</th>"
                             f"<th>Significant</th></tr></thead><tbody>{rows}</tbody></table></div>")
        return page(title, "\n".join(parts))


def _short(metric: str) -> str:
    """``"bleu (bleu4)"`` -> ``"bleu"``: the name the user typed."""
    return metric.split(" (", 1)[0]


def _value_ci(estimate: float, low: float, high: float) -> str:
    ci = _ci(low, high)
    return fmt_number(float(estimate)) + ("" if ci == "—" else f" {ci}")


def _text_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int] = frozenset()) -> list[str]:
    """Lines of a plain-text table, indented two spaces, columns two spaces apart (``right``: right-aligned)."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        return ("  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths)))).rstrip()
    return [line(header), *(line(r) for r in rows)]


def _chunks(header: Sequence[int], rows: Sequence[Sequence[int]], width: int, fixed: int = 2) -> list[list[int]]:
    """Column indices of each table when the columns after the first ``fixed`` (cell lengths ``header``/``rows``)
    are split so a line stays within ``width`` (a column wider than that still gets a table of its own)."""
    widths = [max(col) for col in zip(header, *rows)]
    base = 2 + sum(widths[:fixed]) + 2 * (fixed - 1)
    out: list[list[int]] = []
    cur: list[int] = []
    for i in range(fixed, len(widths)):
        if cur and base + sum(widths[j] + 2 for j in [*cur, i]) > width:
            out.append(cur)
            cur = []
        cur.append(i)
    out.append(cur)
    return [list(range(fixed)) + c for c in out]


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[str] = frozenset()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td class='num'>{escape(c)}</td>" if h in numeric else f"<td>{escape(c)}</td>"
                                    for h, c in zip(header, r)) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _ci(low: float, high: float) -> str:
    return "—" if not (np.isfinite(low) and np.isfinite(high)) else f"[{fmt_number(low)}, {fmt_number(high)}]"


#: Words that start a part of the name of a column usually holding the reference report / the generated one (parts
#: split at anything but letters and digits, case ignored; a word under 5 letters must be the whole part, or it
#: with an "s"), tried in this order when no column's name is close.
USUAL_NAMES = {"reference": ("reference", "ref", "findings", "impression", "groundtruth", "ground", "gt", "target",
                             "original", "report"),
               "prediction": ("prediction", "pred", "generated", "generation", "candidate", "cand",
                              "hypothesis", "hyp", "output", "model")}
#: Words that name a report section or any report, so they do not tell a reference column from a generated one.
SECTION_WORDS = ("report", "findings", "impression")
#: Per role: the command-line flag that names the column, and the keyword of :func:`score`.
FLAGS = {"reference": ("--reference-column", "reference"), "prediction": ("--prediction-column", "prediction"),
         "by": ("--by", "by"), "context": ("--context-columns", "context_columns")}


def closest_column(name: str, columns: Sequence[str], role: str = "by", taken: Sequence[str] = ()) -> str | None:
    """The column of ``columns`` a user most likely meant by ``name`` (``None`` when none is likely): the same name
    but for case, else :func:`difflib.get_close_matches` (cutoff 0.6), else a column whose name contains ``name``
    or is contained in it, else, for ``role`` ``"reference"``/``"prediction"``, the first column named as such
    columns usually are (:data:`USUAL_NAMES`). Columns in ``taken`` (used for another role) are never suggested,
    nor, for a report column, one named like the other report column (``generated_report`` is no reference;
    :data:`SECTION_WORDS` are no sign of either).

    >>> closest_column("report", ["id", "findings", "generated"], "reference")
    'findings'
    >>> closest_column("sitee", ["id", "site"])
    'site'
    """
    def named(c: str, words: Sequence[str]) -> bool:
        parts = [part for part in re.split(r"[^a-z0-9]+", c.lower()) if part]
        return any(part.startswith(w) if len(w) >= 5 else part in (w, w + "s") for part in parts for w in words)

    free = [str(c) for c in columns if str(c) not in set(taken) and str(c) != name]
    if role in USUAL_NAMES:
        other = [w for w in USUAL_NAMES["prediction" if role == "reference" else "reference"] if w not in SECTION_WORDS]
        free = [c for c in free if not named(c, other)]
    low = {c.lower(): c for c in free}
    if name.lower() in low:
        return low[name.lower()]
    close = difflib.get_close_matches(name, free, n=1, cutoff=0.6)
    if close:
        return close[0]
    key = name.lower()
    inside = [c for c in free if len(key) >= 2 and (key in c.lower() or (len(c) >= 3 and c.lower() in key))]
    if inside:
        return inside[0]
    for word in USUAL_NAMES.get(role, ()):
        for c in free:
            if named(c, [word]):
                return c
    return None


def _column_list(columns: Sequence[str], most: int = 20) -> str:
    cols = [str(c) for c in columns]
    return ", ".join(cols) if len(cols) <= most else ", ".join(cols[:most]) + f", … ({len(cols)} in all)"


def _missing_message(role: str, guess: str | None, fix: str) -> str:
    """What fixes one missing column: the closest column and the flag (and keyword) that names it."""
    flag, keyword = FLAGS[role]
    what = {"reference": "the column of the reference reports", "prediction": "the column of the generated reports",
            "by": "group columns the table has", "context": "context columns the table has (key=column)"}[role]
    if guess is None:
        return f"Name {what} with {flag} (Python: {keyword}=)."
    py = repr(fix.split(",")) if role == "by" else repr(fix)
    return f"Did you mean {guess!r}? Pass {flag} {fix} (Python: {keyword}={py})."


def _check_frame(df: pd.DataFrame, reference: str, prediction: str, by: Sequence[str],
                 cmap: Mapping[str, str] | None = None, source: str = "The table") -> None:
    """Raise :class:`ParamsError` for a missing column, naming the table's columns, the closest one and the flag
    that fixes it (see the module docstring)."""
    if not isinstance(df, pd.DataFrame):
        raise ParamsError(f"score() takes a pandas DataFrame, got {type(df).__name__}.")
    columns = [str(c) for c in df.columns]
    have = set(df.columns)
    cmap = dict(cmap or {})
    messages: list[tuple[str, str]] = []   # (missing column, what fixes it)
    taken = [c for c in (reference, prediction) if c in have]
    for role, col in (("reference", reference), ("prediction", prediction)):
        if col not in have:
            guess = closest_column(col, columns, role, taken)
            taken += [guess] if guess else []
            messages.append((col, _missing_message(role, guess, guess or "")))
    text_cols = [c for c in (reference, prediction) if c in have]
    missing_by = [c for c in by if c not in have]
    if missing_by:
        guesses = {c: closest_column(c, columns, "by", text_cols) for c in missing_by}
        fix = ",".join(guesses.get(c) or c for c in by)
        messages += [(c, _missing_message("by", guesses[c], fix)) for c in missing_by]
    missing_ctx = {k: c for k, c in cmap.items() if c not in have}
    if missing_ctx:
        guesses = {k: closest_column(c, columns, "context", text_cols) for k, c in missing_ctx.items()}
        spec = []
        for k, c in cmap.items():
            c = guesses.get(k) or c
            spec.append(k if c == k else f"{k}={c}")
        messages += [(c, _missing_message("context", guesses[k], ",".join(spec))) for k, c in missing_ctx.items()]
    if len(messages) == 1:
        col, fix = messages[0]
        raise ParamsError(f"{source} has no column {col!r} (columns: {_column_list(columns)}). {fix}")
    if messages:
        names = ", ".join(repr(c) for c, _ in messages[:-1]) + f" or {messages[-1][0]!r}"
        raise ParamsError(f"{source} has no column {names} (columns: {_column_list(columns)}).\n"
                          + "\n".join(f"  {c!r}: {fix}" for c, fix in messages))
    if len(df) < 2:
        raise ParamsError(f"score() needs at least 2 pairs to bootstrap an interval; {source} has {len(df)}.")


def _statistic(result: Any, kind: str, rows_of: np.ndarray | None):
    """``f(idx) -> value`` of one statistic on the resampled pair indices ``idx`` restricted to ``rows_of``."""
    def stat(idx: np.ndarray) -> float:
        sel = idx if rows_of is None else idx[rows_of[idx]]
        if sel.size == 0:
            return math.nan
        if kind == "corpus":
            return result.corpus_score(sel)
        vals = result.per_sample[sel]
        vals = vals[~np.isnan(vals)]
        return float(vals.mean()) if vals.size else math.nan
    return stat


#: What a context column may hold (issue 41; :data:`radaudit.metrics.ranking.CONTEXT_KEYS`).
CONTEXT_KEYS = ("age", "sex", "indication", "history")


def _context_map(context_columns: Sequence[str] | str) -> dict[str, str]:
    """``["age", "indication=reason"]`` -> ``{"age": "age", "indication": "reason"}`` (context key -> column)."""
    items = context_columns.split(",") if isinstance(context_columns, str) else list(context_columns)
    out: dict[str, str] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, _, column = item.partition("=")
        key, column = key.strip(), (column.strip() or key.strip())
        if key not in CONTEXT_KEYS:
            raise ParamsError(f"context column {item!r}: {key!r} is not a context key; use {', '.join(CONTEXT_KEYS)} "
                              "(or key=column, e.g. age=patient_age).")
        out[key] = column
    return out


def _contexts(df: pd.DataFrame, cmap: Mapping[str, str]) -> list[dict[str, Any] | None]:
    rows: list[dict[str, Any] | None] = []
    for rec in df[list(cmap.values())].to_dict("records"):
        ctx = {k: rec[c] for k, c in cmap.items() if not (rec[c] is None or (isinstance(rec[c], float) and rec[c] != rec[c])
                                                          or (isinstance(rec[c], str) and not rec[c].strip()))}
        if "age" in ctx and isinstance(ctx["age"], float) and ctx["age"].is_integer():
            ctx["age"] = int(ctx["age"])
        rows.append(ctx or None)
    return rows


#: Column names of ``pairs`` the input's group/context columns must not take (one that does is suffixed " (input)").
PAIR_COLUMNS = ("row", "reference", "prediction")


def _pairs_frame(df: pd.DataFrame, by: Sequence[str], context: Sequence[str], refs: Sequence[str],
                 preds: Sequence[str]) -> pd.DataFrame:
    """``row``, the group and context columns, both texts (the per-pair scores are added by :func:`score`)."""
    out = {"row": np.arange(len(df))}
    for c in [*by, *context]:
        out[c if c not in PAIR_COLUMNS else f"{c} (input)"] = df[c].to_numpy()
    out["reference"], out["prediction"] = list(refs), list(preds)
    return pd.DataFrame(out)


def score(df: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = (), *, reference: str = "reference",
          prediction: str = "prediction", n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95,
          options: Mapping[str, Mapping[str, Any]] | None = None,
          context_columns: Sequence[str] | str = (), source: str = "The table") -> ScoreReport:
    """Score ``df``'s predictions against its references with ``metrics``, overall and per group of each ``by``
    column (see the module docstring). ``options`` maps a metric name to its build options. Rows whose group
    value is missing are left out of that column's groups (counted in ``note``), never dropped silently.
    ``context_columns``: the patient-context columns (module docstring). ``source`` names the table in error
    messages (:func:`score_file` passes the file's name). ``pairs["row"]`` is each pair's 0-based position in
    ``df`` (``df.iloc[row]``), not its index label."""
    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if not metrics:
        raise ParamsError("Name at least one metric (radaudit metrics lists them).")
    cmap = _context_map(context_columns)
    _check_frame(df, reference, prediction, by, cmap, source)
    contexts = _contexts(df, cmap) if cmap else None
    refs, preds = check_pairs(df[reference].fillna("").astype(str).tolist(), df[prediction].fillna("").astype(str).tolist())
    n = len(refs)
    idx = np.arange(n)
    pairs = _pairs_frame(df, by, [c for c in cmap.values() if c not in by], refs, preds)
    rows, gaps = [], []
    for name in metrics:
        reg = ALIASES.get(name, name)
        opts = dict((options or {}).get(name) or (options or {}).get(reg) or {})
        metric = build_metric(reg, **opts)
        ctx_note = ""
        if contexts is not None and accepts_context(metric):
            result = metric.compute(refs, preds, context=contexts)
            ctx_note = f"context from {', '.join(cmap.values())}"
        else:
            result = metric.compute(refs, preds)
            ctx_note = "context columns ignored: this metric takes no context" if contexts is not None else ""
        label = name if reg == name else f"{name} ({reg})"
        pairs[label] = result.per_sample
        kinds = ["corpus", "mean per pair"] if result.aggregate == "corpus" else ["mean per pair"]
        undefined = np.isnan(result.per_sample)
        for kind in kinds:
            note = ""
            headline = HEADLINE if kind == kinds[0] else PER_PAIR_VIEW
            if kind == "corpus" and result.corpus_stats is None:
                rows.append({"metric": label, "statistic": kind, "kind": headline, "group_column": ALL, "group": ALL, "n": n,
                             "n_undefined": int(undefined.sum()), "estimate": result.score, "low": math.nan,
                             "high": math.nan, "method": "none",
                             "note": "this corpus metric gives no per-pair statistics: no interval, no groups"})
                continue
            ci = bootstrap_ci((idx,), _statistic(result, kind, None), n_bootstrap=n_bootstrap, confidence=confidence,
                              method="bca", seed=stable_seed(seed, name, kind, ALL))
            rows.append({"metric": label, "statistic": kind, "kind": headline, "group_column": ALL, "group": ALL, "n": n,
                         "n_undefined": int(undefined.sum()), "estimate": ci.estimate, "low": ci.low,
                         "high": ci.high, "method": ci.method, "note": "; ".join(x for x in (note, ctx_note) if x)})
            for col in by:
                values = df[col].reset_index(drop=True)
                present = values.notna().to_numpy()
                groups = sorted(values[present].astype(str).unique())
                text = values.astype(str).to_numpy()
                stats = {g: _statistic(result, kind, present & (text == g)) for g in groups}
                if not groups:
                    raise ParamsError(f"Column {col!r} has no values: every row is empty there.")
                table = paired_bootstrap((idx,), stats, n_bootstrap=n_bootstrap, confidence=confidence, method="bca",
                                         seed=stable_seed(seed, name, kind, col), differences=len(groups) > 1,
                                         max_failed=0.5)
                miss = int((~present).sum())
                for g in groups:
                    r = table[table["metric"] == g].iloc[0]
                    members = present & (text == g)
                    rows.append({"metric": label, "statistic": kind, "kind": headline, "group_column": col, "group": g,
                                 "n": int(members.sum()), "n_undefined": int((members & undefined).sum()),
                                 "estimate": r["estimate"], "low": r["low"], "high": r["high"], "method": r["method"],
                                 "note": f"{miss} pairs without a {col} value left out" if miss else ""})
                for r in table[table["pvalue"].notna()].itertuples():
                    a, b = r.metric.split(" − ", 1)
                    gaps.append({"metric": label, "statistic": kind, "kind": headline, "group_column": col, "a": a, "b": b,
                                 "estimate": r.estimate, "low": r.low, "high": r.high, "method": r.method,
                                 "pvalue": r.pvalue})
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    gap_table = pd.DataFrame(gaps, columns=GAP_COLUMNS[:-2])
    rejected, adjusted = benjamini_hochberg(gap_table["pvalue"].to_numpy(dtype=float), alpha=FDR)
    gap_table["pvalue_bh"] = adjusted
    gap_table["significant"] = rejected.astype(bool)
    return ScoreReport(table=table, gaps=gap_table, pairs=pairs, n_bootstrap=n_bootstrap, seed=seed, by=by)


def score_file(path: str | os.PathLike, metrics: Sequence[str], by: Sequence[str] = (), **kwargs: Any) -> ScoreReport:
    """:func:`score` on a CSV file (``.csv``; ``.tsv`` read tab-separated), with a clear error for a missing or
    unreadable file."""
    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"{p} does not exist: pass a CSV with columns reference, prediction and your group columns.")
    try:
        df = pd.read_csv(p, sep="\t" if p.suffix.lower() == ".tsv" else ",", keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ParamsError(f"Could not read {p} as a table ({err}).") from None
    kwargs.setdefault("source", p.name)
    return score(df, metrics, by, **kwargs)
