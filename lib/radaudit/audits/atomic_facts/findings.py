"""The headline findings of an atomic_facts run (``findings.json``, format in ``../shared/FINDINGS.md``).

The paper (``../shared/papers/002_fa40d23387a3f426.txt``) claims that AtomiMed "achieves significantly higher
correlation with human radiologist judgment compared to traditional and model-based metrics" (abstract; §3.2.1,
Table 2: Kendall τ / Spearman ρ against radiologist-annotated error counts) and emulates radiologists' pairwise
preferences (§3.2.2, Table 3: ACC). The run's analogs, read from its Table 2 and Table 3 analogs
(:func:`~radaudit.audits.atomic_facts.agreement.correlation_table`, :func:`~radaudit.audits.atomic_facts.agreement.
preference_table`), against the radiologists' **mean** judgement:

- ``atomimed_tau_total_errors``: Kendall τ between AtomiMed (Eq. 4, the paper's F1) and the radiologists' mean
  count of errors (false + missing findings + wrong attributes), sign turned so that agreement is positive; CI:
  the table's bootstrap over cases. *shown* when the CI lies above 0. ``paper``: null — the paper's number for
  this study does not exist (it reports ReXVal, ρ = 0.806, and its Table 2 values are not in the text we hold).
- ``atomimed_tau_gain_<metric>`` for each ``headline`` baseline (demo: BLEU-4, BERTScore, CheXpert-label F1):
  τ(AtomiMed) − τ(metric) on the same cases (paired bootstrap), the paper's "significantly higher". *shown*
  when the CI lies above 0 and the BH-adjusted p (over every metric × judgement of the table) is below 0.05.
- ``atomimed_preference_accuracy``: of the candidate pairs where the radiologists' consensus prefers one report,
  the share where AtomiMed prefers the same; ``paper``: 0.9571 (X-ray ACC, Table 3 — a preference matrix of
  10 systems' outputs on 80 cases, not RadPref's two candidates per case: compare with care). *shown* when its CI
  lies above every headline baseline's estimate (the table has no paired CI for accuracies; this is the
  conservative reading).
- ``atomimed_unparseable_replies`` (a check of the run, verdict ``n/a``): model replies that matched no schema
  (counted, never an empty perfect decomposition) and candidates left unscored; 0 by construction for the rule
  backend, which calls no model.

Where a judgement, a baseline or AtomiMed itself is missing, the finding has no value and says why.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from radaudit.audits.atomic_facts.data import MEAN_RATER
from radaudit.audits.atomic_facts.tables import correlation_row
from radaudit.findings import Finding

__all__ = ["PAPER", "headline_findings"]

PAPER: dict[str, float] = {"atomimed_preference_accuracy": 0.9571}
"""Paper Table 3 (X-ray): AtomiMed ACC 95.71%."""

ALPHA = 0.05
TARGET = "total_errors"


def _row(corr: pd.DataFrame, metric: str) -> pd.Series | None:
    return correlation_row(corr, metric, TARGET)


def _tau_finding(corr: pd.DataFrame, note: str) -> Finding:
    fid = "atomimed_tau_total_errors"
    label = "Kendall τ of AtomiMed with the radiologists' mean error count (agreement positive)"
    a = _row(corr, "atomimed")
    if a is None or pd.isna(a["estimate"]):
        return Finding(fid, label, None, "n/a", note="AtomiMed or the error counts are missing from this run")
    shown = bool(a["low"] > 0)
    text = (f"{int(a['n_candidates'])} candidates of {int(a['n_cases'])} cases; {a['ci_method']} CI over cases"
            + ("" if shown else "; the CI reaches 0: no agreement shown") + (f"; {note}" if note else ""))
    return Finding(fid, label, float(a["estimate"]), "shown" if shown else "not shown",
                   ci=(float(a["low"]), float(a["high"])), note=text)


def _gain_finding(corr: pd.DataFrame, metric: str) -> Finding:
    fid = f"atomimed_tau_gain_{metric}"
    a, b = _row(corr, "atomimed"), _row(corr, metric)
    label_of = str(b["label"]) if b is not None else metric
    label = f"AtomiMed's Kendall τ minus {label_of}'s, with the radiologists' mean error count"
    if a is None or b is None or pd.isna(b["diff_vs_reference"]):
        who = "AtomiMed" if a is None else label_of
        return Finding(fid, label, None, "n/a", note=f"{who} was not computed in this run")
    lo, hi, p = float(b["diff_low"]), float(b["diff_high"]), float(b["diff_p_bh"])
    shown = lo > 0 and p < ALPHA
    note = (f"τ {a['estimate']:.2f} vs {b['estimate']:.2f}; paired bootstrap over cases, BH p = {p:.3g}"
            + ("" if shown else ("; AtomiMed is not higher beyond the noise" if b["diff_vs_reference"] > 0
                                 else "; AtomiMed is lower")))
    return Finding(fid, label, float(b["diff_vs_reference"]), "shown" if shown else "not shown", ci=(lo, hi),
                   note=note)


def _preference_finding(pref: pd.DataFrame, headline: Sequence[str]) -> Finding:
    fid = "atomimed_preference_accuracy"
    label = "Share of radiologist-preferred candidate pairs where AtomiMed prefers the same candidate"
    if pref.empty:
        return Finding(fid, label, None, "n/a", paper=PAPER[fid], note="no preference table in this run")
    acc = pref[(pref["rater"] == MEAN_RATER) & (pref["statistic"] == "acc")].set_index("metric")
    if "atomimed" not in acc.index or int(acc.loc["atomimed", "n_strict_pairs"]) == 0:
        return Finding(fid, label, None, "n/a", paper=PAPER[fid],
                       note="no candidate pair with both AtomiMed scores and a radiologists' preference")
    a = acc.loc["atomimed"]
    base = {m: float(acc.loc[m, "estimate"]) for m in headline if m in acc.index}
    shown = bool(base) and all(a["low"] > v for v in base.values())
    others = ", ".join(f"{acc.loc[m, 'label']} {v:.3f}" for m, v in base.items()) or "no baseline computed"
    note = (f"{int(a['n_strict_pairs'])} pairs; {others}"
            + ("" if shown else "; AtomiMed's CI does not clear every baseline")
            + "; the paper's 0.9571 is a 10-system preference matrix on X-ray, not RadPref's candidate pairs")
    return Finding(fid, label, float(a["estimate"]), "shown" if shown else "not shown",
                   ci=(float(a["low"]), float(a["high"])), paper=PAPER[fid], note=note)


def _failures_finding(backend: str, unparseable: int, not_scored: int) -> Finding:
    fid = "atomimed_unparseable_replies"
    label = "AtomiMed model replies that matched no schema (counted failures)"
    if backend == "rule":
        return Finding(fid, label, 0, "n/a", note="the rule backend calls no model")
    return Finding(fid, label, int(unparseable), "n/a",
                   note=f"{not_scored} candidate(s) left unscored because a decomposition failed; a failed reply is "
                        "counted, never read as an empty (perfect) decomposition")


def headline_findings(corr: pd.DataFrame, pref: pd.DataFrame, headline: Sequence[str], *, backend: str = "rule",
                      unparseable: int = 0, not_scored: int = 0, study: str = "radpref") -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``corr`` / ``pref``: the run's Table 2 / Table 3
    analogs; ``headline``: the baselines the gains are computed against (their display names come from the
    tables' ``label`` column)."""
    note = ("the rule lexicon was partly written looking at RadPref, so this is in-sample; the unseen half is in "
            "benchmarks/results/radpref_agreement.md") if study == "radpref" and backend == "rule" else ""
    out = [_tau_finding(corr, note)]
    out += [_gain_finding(corr, m) for m in headline]
    out.append(_preference_finding(pref, headline))
    out.append(_failures_finding(backend, unparseable, not_scored))
    return out
