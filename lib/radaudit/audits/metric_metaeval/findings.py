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
(``paper`` is null).

**Which metrics the medians are over.** Every metric scored *except* those that share the pairs' verifier
(:mod:`radaudit.audits.metric_metaeval.verifier`: the CheXpert-label F1s, verified by the same labeler, and
AtomiMed, verified by the same toolkit): on rule-made pairs part of their score is fixed by construction, so
they would pull the median towards whatever the verifier decided. The note names those left out; the
per-metric tables keep them, marked †.

**Bar.** The paper's claim (abstract, §5.1: metrics "fail to distinguish clinically significant from
insignificant errors"; "none excel at both" discrimination and robustness) is read as: the typical metric's
AUROC of harmless above harmful rewrites is below ``SEPARATION_MIN`` = 0.6, i.e. at most weak separation
(0.5 = none; 0.6 is the usual lower edge of "poor" discrimination). ``bar = ("<", 0.6)``, judged with the
whole CI (:func:`radaudit.findings.judge`): *shown* when the CI lies below 0.6, *partly* when only the
estimate does, *not shown* otherwise. The same bar for the trimmed design, whose reading is the paper's.

**Control.** Both rest on ``oracle_auroc_control`` (:mod:`radaudit.audits.metric_metaeval.controls`): a planted
metric that knows each pair's significance from the rule that made it, blurred to a population AUROC of 0.9,
read through the same AUROC code on the same pairs; bar ``(">", 0.6)`` — its whole CI above 0.6. It shows
that these pairs and this code *can* show separation, so "the metrics cannot" is a finding about the metrics.
It fails when the pair labels do not match the rules (shuffled or misaligned), or when there are too few
pairs for a separating metric's CI to clear 0.6; a headline resting on a failed control is *not shown*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from radaudit.audits.metric_metaeval.controls import oracle_auroc
from radaudit.audits.metric_metaeval.scores import median_auroc, n_discrimination_pairs
from radaudit.audits.metric_metaeval.verifier import verifier_marks, without_shared
from radaudit.findings import Finding, judge

#: The AUROC below which a metric separates harmful from harmless rewrites weakly or not at all (module docstring).
SEPARATION_MIN = 0.6
#: The headline claim's bar: the median AUROC below SEPARATION_MIN (module docstring).
CLAIM_BAR = ("<", SEPARATION_MIN)
#: The oracle control's bar: its AUROC above SEPARATION_MIN.
ORACLE_BAR = (">", SEPARATION_MIN)
ORACLE_CONTROL_ID = "oracle_auroc_control"


ABLATION_OFF = "context ablation off (context_ablation: false, or context: full)"


def _excluded_note(excluded: Mapping[str, str] | None) -> str:
    if not excluded:
        return ""
    by = {}
    for m, why in excluded.items():
        by.setdefault(why, []).append(m)
    return ("; left out because they share the pairs' verifier: "
            + "; ".join(f"{', '.join(ms)} ({why})" for why, ms in by.items()))


def _auroc_finding(fid: str, label: str, res: Mapping[str, Any] | None, note: str, missing: str = ABLATION_OFF,
                   excluded: Mapping[str, str] | None = None, controls: tuple[str, ...] = ()) -> Finding:
    if res is None:
        return Finding(fid, label, None, "n/a", note=missing + _excluded_note(excluded))
    j = judge(res["median"], (res["low"], res["high"]), CLAIM_BAR)
    verdict_note = (f"{note}; median over {res['n_metrics']} metrics{_excluded_note(excluded)}; {res['n_pairs']} pairs, "
                    "BCa CI over pairs" + (f"; {j.reason}" if j.reason else ""))
    return Finding(fid, label, res["median"], j.verdict, ci=(res["low"], res["high"]), note=verdict_note,
                   bar=CLAIM_BAR, controls=controls)


def oracle_finding(res: Mapping[str, Any] | None, missing: str = "not computed") -> Finding:
    """``oracle_auroc_control`` from :func:`~radaudit.audits.metric_metaeval.controls.oracle_auroc` (``None``: no
    pair to compute it on; ``missing`` says why)."""
    label = (f"AUROC of a planted oracle (each pair's significance from the rule that made it, blurred to a "
             f"population AUROC of {res['target']:g})" if res is not None else "AUROC of a planted oracle (control)")
    if res is None:
        return Finding(ORACLE_CONTROL_ID, label, None, "n/a", note=missing)
    j = judge(res["median"], (res["low"], res["high"]), ORACLE_BAR)
    source = (f"significance from the rule registry for {res['n_from_rules']} pairs"
              + (f", from the pair's own label for {res['n_from_labels']} (no registered rule: power and AUROC code "
                 "only)" if res["n_from_labels"] else ""))
    note = (f"control: these pairs and this AUROC code can show a metric that separates; {res['n_pairs']} pairs, BCa "
            f"CI over pairs; {source}" + (f"; {j.reason}: the control failed" if j.reason else ""))
    return Finding(ORACLE_CONTROL_ID, label, res["median"], j.verdict, ci=(res["low"], res["high"]), note=note,
                   bar=ORACLE_BAR)


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
                      no_pairs: str | None = None, oracle: Mapping[str, Any] | None = None,
                      excluded: Mapping[str, str] | None = None, no_metric: str | None = None) -> list[Finding]:
    """``trimmed`` / ``whole``: :func:`median_auroc` of the paper-context and whole-report scores
    (``whole=None`` when the ablation is off; then ``trimmed`` is reported alone); ``cells``:
    :func:`rules_per_cell` of the pair dataset (adds ``min_rules_per_cell``); ``fill``: the pair dataset's
    fill table (adds ``pairs_filled`` when a cell is short of its target); ``no_pairs``: why there is no AUROC at all (no
    discrimination/robustness pair was left), given instead of ``trimmed``/``whole``; ``oracle``:
    :func:`~radaudit.audits.metric_metaeval.controls.oracle_auroc` (adds ``oracle_auroc_control``, and the two
    medians rest on it); ``excluded``: the metrics left out of the medians, with why
    (:func:`~radaudit.audits.metric_metaeval.verifier.verifier_marks`); ``no_metric``: why there is no median
    although there are pairs (every metric scored was left out)."""
    missing = no_pairs or no_metric or ABLATION_OFF
    controls = (ORACLE_CONTROL_ID,) if oracle is not None else ()
    return [
        _auroc_finding("whole_report_auroc_median", "Median AUROC (harmless above harmful) over metrics, whole reports "
                       "for every pair", whole, "0.5 = the metrics cannot tell a harmful edit from a harmless one",
                       missing, excluded, controls),
        _auroc_finding("trimmed_pair_auroc_median", "Median AUROC over metrics, the paper's design (harmless pairs "
                       "trimmed to the edited sentences)", trimmed,
                       "below 0.5 the metrics prefer the harmful rewrite: compare whole_report_auroc_median",
                       no_pairs or no_metric or "not computed", excluded, controls),
        *([oracle_finding(oracle)] if oracle is not None else []),
        *([fill_finding(fill)] if fill is not None and (fill["shortfall"] > 0).any() else []),
        *([rules_finding(cells)] if cells is not None else []),
    ]


def run_findings(scores: pd.DataFrame, scores_full: pd.DataFrame | None, cells: pd.DataFrame | None,
                 fill: pd.DataFrame | None, *, engine: str = "rules", n_bootstrap: int = 1000, confidence: float = 0.95,
                 seeds: Mapping[str, int] | None = None) -> list[Finding]:
    """The run's findings from its score tables (what the notebook calls): the metrics that share the pairs'
    verifier (:func:`~radaudit.audits.metric_metaeval.verifier.verifier_marks` for ``engine``) are left out of
    both medians, the oracle control is computed on ``scores``' pairs, and :func:`headline_findings` reads them.
    ``scores_full``: the whole-report scores (``None``: ablation off). ``seeds``: ``{"trimmed", "whole",
    "oracle"}`` (the run's step seeds; 0 where absent)."""
    seeds = dict(seeds or {})
    kw = dict(n_bootstrap=n_bootstrap, confidence=confidence)
    if not n_discrimination_pairs(scores):
        return headline_findings(None, None, cells, fill, no_pairs="no discrimination/robustness pair was left: every "
                                 "rewrite was rejected (see pairs_filled)")
    marks = verifier_marks(list(dict.fromkeys(scores["metric"])), engine)
    kept = without_shared(scores, marks)
    oracle = oracle_auroc(scores, seed=seeds.get("oracle", 0), **kw)
    if kept.empty:
        return headline_findings(None, None, cells, fill, oracle=oracle, excluded=marks,
                                 no_metric="every metric scored shares the pairs' verifier, so no median is left")
    trimmed = median_auroc(kept, seed=seeds.get("trimmed", 0), **kw)
    whole = (None if scores_full is None
             else median_auroc(without_shared(scores_full, marks), seed=seeds.get("whole", 0), **kw))
    return headline_findings(trimmed, whole, cells, fill, oracle=oracle, excluded=marks)
