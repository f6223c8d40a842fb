"""The headline findings of a metric_metaeval run (``findings.json``, format in ``../shared/FINDINGS.md``).

The result that decides how to read the paper leads: **the context ablation**. The paper scores a
harmful rewrite (significant error) on the whole report but a harmless one (insignificant) on the
edited sentences only (§4.2.1). The same rewrites are scored both ways here:

- ``trimmed_pair_auroc_median``: median over the registry's metrics of the overall AUROC
  P(harmless scores above harmful), with the paper's trimmed insignificant pairs. Below 0.5 the
  metrics prefer the harmful rewrite — the paper's "metrics are not robust" verdict.
- ``whole_report_auroc_median``: the same with whole reports for every pair. Near 0.5: the metrics
  cannot tell harmful from harmless edits at all; the inversion above came from the context design.

``pairs_filled`` (a check of the run, verdict ``n/a``; only when a Table 2 cell fell short of its target, otherwise
the AUROC notes give the number of pairs): the GT-ME pairs the rewriting engine filled; the note counts the rewrites
rejected, and among them the model replies that never matched the JSON schema (unparseable, counted, never
dropped). When no pair is left (e.g. every LLM reply was unparseable) the two
AUROC findings have no value and say why, and this one is 0: an empty run never reads as a perfect one.

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


ABLATION_OFF = "context ablation off (context_ablation: false, or context: full)"


def _auroc_finding(fid: str, label: str, res: Mapping[str, Any] | None, note: str, missing: str = ABLATION_OFF) -> Finding:
    if res is None:
        return Finding(fid, label, None, "n/a", note=missing)
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


def fill_finding(fill: pd.DataFrame) -> Finding:
    """``pairs_filled`` from the pair dataset's ``fill`` table (:data:`radaudit.perturb.dataset.FILL_COLUMNS`)."""
    target, filled = int(fill["target"].sum()), int(fill["filled"].sum())
    rejected = int(fill["rejected"].sum())
    unparseable = int(fill["unparseable"].sum()) if "unparseable" in fill.columns else 0
    short = int((fill["shortfall"] > 0).sum())
    return Finding("pairs_filled", "GT-ME pairs filled (of the Table 2 target)", filled, "n/a",
                   note=f"target {target}; {rejected} rewrites rejected ({unparseable} unparseable model replies, "
                        f"{rejected - unparseable} failed verification); {short} of {len(fill)} cells short")


def headline_findings(trimmed: Mapping[str, Any] | None, whole: Mapping[str, Any] | None,
                      cells: pd.DataFrame | None = None, fill: pd.DataFrame | None = None, *,
                      no_pairs: str | None = None) -> list[Finding]:
    """``trimmed`` / ``whole``: :func:`median_auroc` of the paper-context and whole-report scores
    (``whole=None`` when the ablation is off; then ``trimmed`` is reported alone); ``cells``:
    :func:`rules_per_cell` of the pair dataset (adds ``min_rules_per_cell``); ``fill``: the pair dataset's
    fill table (adds ``pairs_filled`` when a cell is short of its target); ``no_pairs``: why there is no AUROC at all (no
    discrimination/robustness pair was left), given instead of ``trimmed``/``whole``."""
    missing = no_pairs or ABLATION_OFF
    return [
        _auroc_finding("whole_report_auroc_median", "Median AUROC (harmless above harmful) over metrics, whole reports "
                       "for every pair", whole, "0.5 = the metrics cannot tell a harmful edit from a harmless one",
                       missing),
        _auroc_finding("trimmed_pair_auroc_median", "Median AUROC over metrics, the paper's design (harmless pairs "
                       "trimmed to the edited sentences)", trimmed,
                       "below 0.5 the metrics prefer the harmful rewrite: compare whole_report_auroc_median",
                       no_pairs or "not computed"),
        *([fill_finding(fill)] if fill is not None and (fill["shortfall"] > 0).any() else []),
        *([rules_finding(cells)] if cells is not None else []),
    ]
