"""The headline findings of a metric_metaeval run (``findings.json``, format in ``../shared/FINDINGS.md``).

The result that decides how to read the paper leads: **the context ablation**. The paper scores a
harmful rewrite (significant error) on the whole report but a harmless one (insignificant) on the
edited sentences only (§4.2.1). The same rewrites are scored both ways here:

- ``trimmed_pair_auroc_median``: median over the registry's metrics of the overall AUROC
  P(harmless scores above harmful), with the paper's trimmed insignificant pairs. Below 0.5 the
  metrics prefer the harmful rewrite — the paper's "metrics are not robust" verdict.
- ``whole_report_auroc_median``: the same with whole reports for every pair. Near 0.5: the metrics
  cannot tell harmful from harmless edits at all; the inversion above came from the context design.

``min_rules_per_cell`` (a check of the dataset's design, not a claim of the paper: verdict ``n/a``):
the fewest distinct rewriting rules behind any Table 4/5 cell (column x significance), so a reader
knows whether a cell's score is one kind of edit or an average over several; the note names the cells
below three.

Both AUROC findings carry a BCa bootstrap CI over pairs (:func:`radaudit.audits.metric_metaeval.scores.median_auroc`);
the per-metric values are the run's ``auroc_context_ablation`` table. The paper reports no AUROC
(``paper`` is null). Verdicts: the paper's claim — the metrics do not align with clinical judgment —
is *shown* when the median AUROC's CI lies below 0.6 (little or inverted separation), else *not shown*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from radaudit.findings import Finding

SEPARATION_MIN = 0.6


def _auroc_finding(fid: str, label: str, res: Mapping[str, Any] | None, note: str) -> Finding:
    if res is None:
        return Finding(fid, label, None, "n/a", note="context ablation off (context_ablation: false, or context: full)")
    shown = res["high"] < SEPARATION_MIN
    verdict_note = (f"{note}; {res['n_metrics']} metrics, {res['n_pairs']} pairs, BCa CI over pairs"
                    + ("" if shown else f"; the CI reaches {SEPARATION_MIN}: some separation"))
    return Finding(fid, label, res["median"], "shown" if shown else "not shown", ci=(res["low"], res["high"]),
                   note=verdict_note)


def rules_finding(cells: pd.DataFrame, want: int = 3) -> Finding:
    """``min_rules_per_cell`` from :func:`radaudit.audits.metric_metaeval.scores.rules_per_cell` (cells with
    no pair are left out of the minimum and named in the note)."""
    filled = cells[cells["n_pairs"] > 0]
    empty = cells[cells["n_pairs"] == 0]
    if filled.empty:
        return Finding("min_rules_per_cell", "Fewest rewriting rules behind a Table 4/5 cell", None, "n/a",
                       note="no pair in any cell")
    low = filled[filled["n_rules"] < want]

    def name(d: pd.DataFrame) -> str:
        return ", ".join(f"{c} ({s}: {n})" for c, s, n in zip(d["column"], d["significance"], d["n_rules"]))

    note = "dataset design check, not a claim of the paper; " + (
        f"cells with fewer than {want} rules: {name(low)}" if len(low) else f"every filled cell has at least {want} rules")
    if len(empty):
        note += f"; cells without pairs: {name(empty)}"
    return Finding("min_rules_per_cell", "Fewest rewriting rules behind a Table 4/5 cell (column x significance)",
                   int(filled["n_rules"].min()), "n/a", note=note)


def headline_findings(trimmed: Mapping[str, Any] | None, whole: Mapping[str, Any] | None,
                      cells: pd.DataFrame | None = None) -> list[Finding]:
    """``trimmed`` / ``whole``: :func:`median_auroc` of the paper-context and whole-report scores
    (``whole=None`` when the ablation is off; then ``trimmed`` is reported alone); ``cells``:
    :func:`rules_per_cell` of the pair dataset (adds ``min_rules_per_cell``)."""
    return [
        _auroc_finding("whole_report_auroc_median", "Median AUROC (harmless above harmful) over metrics, whole reports "
                       "for every pair", whole, "0.5 = the metrics cannot tell a harmful edit from a harmless one"),
        _auroc_finding("trimmed_pair_auroc_median", "Median AUROC over metrics, the paper's design (harmless pairs "
                       "trimmed to the edited sentences)", trimmed,
                       "below 0.5 the metrics prefer the harmful rewrite: compare whole_report_auroc_median"),
        *([rules_finding(cells)] if cells is not None else []),
    ]
