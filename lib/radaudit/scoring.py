"""Score your own reports: each metric overall and per group, with 95% CIs and the gaps between groups.

``radaudit score predictions.csv --metrics bleu,bertscore,atomimed,chexpert_f1 --by sex,age_group`` or, from
Python, ``radaudit.score(df, metrics=[...], by=[...])``. The table has one ``reference`` and one
``prediction`` column (names configurable) and any group columns. What comes back (:class:`ScoreReport`):

* ``table``: per metric and statistic, the value over all pairs and in each group of each ``by`` column,
  with ``n`` (pairs), ``n_undefined`` (pairs the metric cannot score, e.g. two empty reports) and a 95%
  **BCa** bootstrap interval (pairs resampled, :func:`radaudit.stats.paired_bootstrap`, ``n_bootstrap``
  replicates, seeded).
* ``gaps``: every pairwise difference between the groups of a column (``a − b``) with its interval (from the
  same replicates, so each gap is consistent with its groups) and a bootstrap p-value, Benjamini–Hochberg
  corrected over every gap of the report (``pvalue_bh``).
* ``pairs``: the per-pair scores beside the input's group columns.

**Which statistic.** A metric the field reports as a *corpus* statistic (BLEU: n-gram counts summed over the
pairs, then one BLEU; CheXpert-label F1: TP/FP/FN summed) is reported as that (``statistic = "corpus"``),
computed exactly on each group and resample from per-pair sufficient statistics
(:attr:`radaudit.metrics.MetricResult.corpus_stats`); its per-pair mean (sentence BLEU, example F1) is a
second row named ``"mean per pair"``. Every other metric is a mean per pair. A corpus metric without
sufficient statistics gets its corpus value without an interval, said in ``note``.

**Patient context** (issue 41): ``context_columns`` (``--context-columns age,indication``) names columns holding
each pair's ``age``, ``sex``, ``indication`` or ``history`` (``key=column`` when the column is named otherwise,
e.g. ``age=patient_age``); a metric whose ``compute`` takes ``context=`` (``atomimed_clinical``) gets one context
per pair, every other metric ignores it (said in ``note``). Empty cells are no context.

Short names: ``bleu`` = ``bleu4``, ``rouge`` = ``rougeL``, ``chexpert_f1`` = ``chexpert_f1_micro_top5`` (the
field's "micro-F1 over the 5 CheXpert labels"); any name of ``radaudit metrics`` works.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError
from radaudit.html_page import escape, fmt_number, page
from radaudit.metrics import build_metric, check_pairs
from radaudit.stats import benjamini_hochberg, bootstrap_ci, paired_bootstrap, stable_seed

__all__ = ["ALIASES", "ScoreReport", "score", "score_file"]

#: Short metric names a user types -> registry names.
ALIASES = {"bleu": "bleu4", "rouge": "rougeL", "chexpert_f1": "chexpert_f1_micro_top5"}
ALL = "all"
TABLE_COLUMNS = ["metric", "statistic", "group_column", "group", "n", "n_undefined", "estimate", "low", "high",
                 "method", "note"]
GAP_COLUMNS = ["metric", "statistic", "group_column", "a", "b", "estimate", "low", "high", "pvalue", "pvalue_bh"]


@dataclass
class ScoreReport:
    """What :func:`score` returns (see the module docstring)."""

    table: pd.DataFrame
    gaps: pd.DataFrame
    pairs: pd.DataFrame
    n_bootstrap: int
    seed: int

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

    def to_html(self, title: str = "Report scores") -> str:
        """One self-contained page: a table per metric (all pairs, each group, CIs), then its gaps."""
        parts = [f"<h1>{escape(title)}</h1>",
                 f"<p class='meta'>{len(self.pairs)} pairs · 95% BCa bootstrap intervals, {self.n_bootstrap} "
                 f"resamples of pairs, seed {self.seed} · gaps: Benjamini–Hochberg over all {len(self.gaps)} "
                 "gaps</p>"]
        for metric, block in self.table.groupby("metric", sort=False):
            parts.append(f"<h2>{escape(metric)}</h2>")
            rows = "".join(
                f"<tr><td>{escape(r.statistic)}</td><td>{escape(r.group_column)}</td><td>{escape(r.group)}</td>"
                f"<td class='num'>{r.n}</td><td class='num'>{fmt_number(r.estimate)}</td>"
                f"<td class='num'>{_ci(r.low, r.high)}</td><td>{escape(r.note)}</td></tr>"
                for r in block.itertuples())
            parts.append("<div class='scroll'><table><thead><tr><th>Statistic</th><th>By</th><th>Group</th><th>n</th>"
                         f"<th>Value</th><th>95% CI</th><th>Note</th></tr></thead><tbody>{rows}</tbody></table></div>")
            gaps = self.gaps[self.gaps["metric"] == metric]
            if len(gaps):
                rows = "".join(
                    f"<tr><td>{escape(r.statistic)}</td><td>{escape(r.group_column)}</td>"
                    f"<td>{escape(r.a)} − {escape(r.b)}</td><td class='num'>{fmt_number(r.estimate)}</td>"
                    f"<td class='num'>{_ci(r.low, r.high)}</td><td class='num'>{fmt_number(r.pvalue_bh)}</td></tr>"
                    for r in gaps.itertuples())
                parts.append("<h3>Gaps between groups</h3><div class='scroll'><table><thead><tr><th>Statistic</th>"
                             "<th>By</th><th>Gap</th><th>Value</th><th>95% CI</th><th>p (BH)</th></tr></thead>"
                             f"<tbody>{rows}</tbody></table></div>")
        return page(title, "\n".join(parts))


def _ci(low: float, high: float) -> str:
    return "—" if not (np.isfinite(low) and np.isfinite(high)) else f"[{fmt_number(low)}, {fmt_number(high)}]"


def _check_frame(df: pd.DataFrame, reference: str, prediction: str, by: Sequence[str]) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ParamsError(f"score() takes a pandas DataFrame, got {type(df).__name__}.")
    missing = [c for c in (reference, prediction, *by) if c not in df.columns]
    if missing:
        raise ParamsError(f"The table has no column(s) {missing}; it has {list(df.columns)}. Name the report columns "
                          "with reference=/prediction= (--reference-column/--prediction-column) and the group "
                          "columns with by=.")
    if len(df) < 2:
        raise ParamsError(f"score() needs at least 2 pairs to bootstrap an interval; the table has {len(df)}.")


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


def score(df: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = (), *, reference: str = "reference",
          prediction: str = "prediction", n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95,
          options: Mapping[str, Mapping[str, Any]] | None = None,
          context_columns: Sequence[str] | str = ()) -> ScoreReport:
    """Score ``df``'s predictions against its references with ``metrics``, overall and per group of each ``by``
    column (see the module docstring). ``options`` maps a metric name to its build options. Rows whose group
    value is missing are left out of that column's groups (counted in ``note``), never dropped silently.
    ``context_columns``: the patient-context columns (module docstring)."""
    from radaudit.metrics.ranking import accepts_context

    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if not metrics:
        raise ParamsError("Name at least one metric (radaudit metrics lists them).")
    cmap = _context_map(context_columns)
    _check_frame(df, reference, prediction, [*by, *dict.fromkeys(c for c in cmap.values() if c not in by)])
    contexts = _contexts(df, cmap) if cmap else None
    refs, preds = check_pairs(df[reference].fillna("").astype(str).tolist(), df[prediction].fillna("").astype(str).tolist())
    n = len(refs)
    idx = np.arange(n)
    pairs = df[by].reset_index(drop=True).copy()
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
            if kind == "corpus" and result.corpus_stats is None:
                rows.append({"metric": label, "statistic": kind, "group_column": ALL, "group": ALL, "n": n,
                             "n_undefined": int(undefined.sum()), "estimate": result.score, "low": math.nan,
                             "high": math.nan, "method": "none",
                             "note": "this corpus metric gives no per-pair statistics: no interval, no groups"})
                continue
            ci = bootstrap_ci((idx,), _statistic(result, kind, None), n_bootstrap=n_bootstrap, confidence=confidence,
                              method="bca", seed=stable_seed(seed, name, kind, ALL))
            rows.append({"metric": label, "statistic": kind, "group_column": ALL, "group": ALL, "n": n,
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
                    rows.append({"metric": label, "statistic": kind, "group_column": col, "group": g,
                                 "n": int(members.sum()), "n_undefined": int((members & undefined).sum()),
                                 "estimate": r["estimate"], "low": r["low"], "high": r["high"], "method": r["method"],
                                 "note": f"{miss} pairs without a {col} value left out" if miss else ""})
                for r in table[table["pvalue"].notna()].itertuples():
                    a, b = r.metric.split(" − ", 1)
                    gaps.append({"metric": label, "statistic": kind, "group_column": col, "a": a, "b": b,
                                 "estimate": r.estimate, "low": r.low, "high": r.high, "pvalue": r.pvalue})
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    gap_table = pd.DataFrame(gaps, columns=GAP_COLUMNS[:-1])
    gap_table["pvalue_bh"] = benjamini_hochberg(gap_table["pvalue"].to_numpy())[1] if len(gap_table) else []
    return ScoreReport(table=table, gaps=gap_table, pairs=pairs, n_bootstrap=n_bootstrap, seed=seed)


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
    return score(df, metrics, by, **kwargs)
