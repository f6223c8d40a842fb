"""The headline findings of an atomic_facts run (``findings.json``, format in ``../shared/FINDINGS.md``).

The paper (``../shared/papers/002_fa40d23387a3f426.txt``) claims that AtomiMed "achieves significantly higher
correlation with human radiologist judgment compared to traditional and model-based metrics" (abstract; §3.2.1,
Table 2: Kendall τ / Spearman ρ against radiologist-annotated error counts) and emulates radiologists' pairwise
preferences (§3.2.2, Table 3: ACC). The run's analogs, read from its Table 2 and Table 3 analogs
(:func:`~radaudit.audits.atomic_facts.agreement.correlation_table`, :func:`~radaudit.audits.atomic_facts.agreement.
preference_table`), against the radiologists' **mean** judgement:

- ``atomimed_tau_total_errors``: Kendall τ between AtomiMed (Eq. 4, the paper's F1) and the radiologists' mean
  count of errors (false + missing findings + wrong attributes), sign turned so that agreement is positive; CI:
  the table's bootstrap over cases. ``bar = (">", 0)``: *shown* when the CI lies above 0. ``paper``: null — the
  paper's number for this study does not exist (it reports ReXVal, ρ = 0.806, and its Table 2 values are not in
  the text we hold).
- ``atomimed_tau_gain_<metric>`` for each ``headline`` baseline (demo: BLEU-4, BERTScore, CheXpert-label F1):
  τ(AtomiMed) − τ(metric) on the same cases (paired bootstrap), the paper's "significantly higher".
  ``bar = (">", 0)``: *shown* when the paired CI lies above 0 **and** the BH-adjusted p (over every metric of the
  table, per judgement and coefficient) is below 0.05; a CI above 0 with a larger adjusted p is *partly*.
  ``paper``: null (no per-baseline difference in the text we hold).
- ``atomimed_preference_accuracy``: of the candidate pairs where the radiologists' consensus prefers one report,
  the share where AtomiMed prefers the same; ``paper``: 0.9571 (X-ray ACC, Table 3 — a preference matrix of
  10 systems' outputs on 80 cases, not RadPref's two candidates per case: compare with care). ``bar = (">", the
  highest headline baseline's estimate)``: *shown* when its whole CI lies above every baseline's estimate (the
  table has no paired CI for accuracies; this is the conservative reading); *n/a* without a baseline.
- ``atomimed_unparseable_replies`` (a check of the run, verdict ``n/a``): model replies that matched no schema
  (counted, never an empty perfect decomposition) and candidates left unscored; 0 by construction for the rule
  backend, which calls no model.

**In sample, and the unseen half** (issue 40). The rule backend's lexicon (finding names, attribute and negation
rules) was partly written looking at RadPref. A verdict of the rule backend on all RadPref cases is therefore
in sample: the cases helped shape the scorer they now judge. So on RadPref with ``backend: rule``
(:func:`in_sample_reason`) the three agreement findings are computed on the **test half** of RadPref
(:func:`unseen_agreement`: :func:`~radaudit.audits.atomic_facts.data.split_cases` of *all* RadPref case ids,
seed :data:`~radaudit.audits.atomic_facts.data.SPLIT_SEED`, by patient, exactly half; ``test`` is the half rule
writers do not read), with its own case-bootstrap CIs and BH adjustment; the all-cases (in-sample) value stays
in the note beside it, and ``paper`` beside both. Where the test half cannot be computed (a cut-down run with
fewer than two of its cases), the finding keeps the in-sample value and is *n/a* with the reason
:data:`IN_SAMPLE`. The test half is only *partly* unseen: the rules written before the split quoted sentences
from both halves (``benchmarks/results/radpref_agreement.md`` also reports the test half without those cases).
With the LLM backend or another study (ReXVal) every case is unseen and all cases are used.

Where a judgement, a baseline or AtomiMed itself is missing, the finding has no value and says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from radaudit.audits.atomic_facts.agreement import agreement_by_split
from radaudit.audits.atomic_facts.data import MEAN_RATER, SPLIT_SEED, ReaderStudy, split_cases
from radaudit.audits.atomic_facts.tables import correlation_row
from radaudit.errors import RadauditError
from radaudit.findings import Finding, judge

__all__ = ["IN_SAMPLE", "PAPER", "UnseenAgreement", "headline_findings", "in_sample_reason", "unseen_agreement"]

PAPER: dict[str, float] = {"atomimed_preference_accuracy": 0.9571}
"""Paper Table 3 (X-ray): AtomiMed ACC 95.71%."""

ALPHA = 0.05
TARGET = "total_errors"
#: Bar of the τ and of the τ gains: above 0.
ABOVE_ZERO = (">", 0.0)
#: Why an all-cases RadPref verdict of the rule backend is descriptive.
IN_SAMPLE = "in-sample: the lexicon was partly written looking at these cases"
UNSEEN_PART = "test"


def in_sample_reason(study: str, backend: str) -> str | None:
    """:data:`IN_SAMPLE` when the rule backend is judged on RadPref (whose cases the lexicon was partly written
    on), else ``None`` (an LLM scorer, or a study the lexicon never saw)."""
    return IN_SAMPLE if str(study).split("/")[0] == "radpref" and backend == "rule" else None


@dataclass(frozen=True)
class UnseenAgreement:
    """The Table 2 / Table 3 analogs on the unseen (test) half of the cases (:func:`unseen_agreement`).

    ``corr`` / ``pref``: the long tables of that half (``None`` when not computed; ``missing`` says why);
    ``n_cases``: its cases in this run; ``n_split``: the cases the split was drawn on."""

    corr: pd.DataFrame | None
    pref: pd.DataFrame | None
    n_cases: int
    n_split: int
    missing: str = ""

    @property
    def description(self) -> str:
        return (f"test half of RadPref: {self.n_cases} cases of this run (split of {self.n_split} cases by patient, "
                f"seed {SPLIT_SEED}; the half rule writers do not read, only partly unseen: the rules written before "
                "the split quoted sentences from both halves)")


def unseen_agreement(scores: pd.DataFrame, study: ReaderStudy, metrics: Sequence[str] | None = None, *,
                     full_case_ids: Iterable[Any] | None = None, source: str = "rating", tie_tolerance: float = 1e-9,
                     n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> UnseenAgreement:
    """:func:`~radaudit.audits.atomic_facts.agreement.agreement_by_split` on the ``test`` half only, the split drawn
    on ``full_case_ids`` (all of the study's cases: pass them when ``study`` was cut down by ``max_cases``, so the
    halves are those of the whole study; default: the study's own case ids). Fewer than two test cases in the run
    (or none): ``corr``/``pref`` are ``None`` and ``missing`` says so."""
    ids = list(full_case_ids) if full_case_ids is not None else list(study.candidates["case_id"])
    assignment = split_cases(ids)
    here = set(study.candidates["case_id"].astype(str))
    n = sum(1 for c, h in assignment.items() if h == UNSEEN_PART and c in here)
    if n < 2:
        return UnseenAgreement(None, None, n, len(assignment), f"this run holds {n} case(s) of the test half; the "
                                                               "coefficients and their CIs need at least 2")
    try:
        corr, pref = agreement_by_split(scores, study, metrics, parts=[UNSEEN_PART], assignment=assignment, source=source,
                                        tie_tolerance=tie_tolerance, n_bootstrap=n_bootstrap, confidence=confidence,
                                        seed=seed)
    except RadauditError as err:
        return UnseenAgreement(None, None, n, len(assignment), f"the test half could not be scored: {err}")
    return UnseenAgreement(corr.drop(columns="split"), pref.drop(columns="split"), n, len(assignment))


def _row(corr: pd.DataFrame | None, metric: str) -> pd.Series | None:
    return None if corr is None else correlation_row(corr, metric, TARGET)


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:.3g}, {hi:.3g}]"


def _tau_finding(corr: pd.DataFrame, held: UnseenAgreement | None, reason: str | None) -> Finding:
    fid = "atomimed_tau_total_errors"
    label = "Kendall τ of AtomiMed with the radiologists' mean error count (agreement positive)"
    a_all = _row(corr, "atomimed")
    use = held.corr if (reason and held is not None and held.corr is not None) else None
    a = _row(use, "atomimed") if use is not None else a_all
    if a is None or pd.isna(a["estimate"]):
        return Finding(fid, label, None, "n/a", note="AtomiMed or the error counts are missing from this run")
    ci = (float(a["low"]), float(a["high"]))
    where = f"{int(a['n_candidates'])} candidates of {int(a['n_cases'])} cases; {a['ci_method']} CI over cases"
    if reason and use is None:  # in sample, and no unseen half to judge on: descriptive
        why = held.missing if held is not None else "not computed"
        return Finding(fid, label, float(a["estimate"]), "n/a", ci=ci, bar=ABOVE_ZERO,
                       note=f"{reason}; the unseen half could not be used ({why}); {where}")
    j = judge(float(a["estimate"]), ci, ABOVE_ZERO)
    text = where + (f"; {j.reason}: no agreement shown" if j.reason else "")
    if use is not None and a_all is not None:
        text = (f"{held.description}; {text}; all {int(a_all['n_cases'])} cases (in sample): "
                f"τ {a_all['estimate']:.3g} {_ci(a_all['low'], a_all['high'])}")
    return Finding(fid, label + (" — unseen half of RadPref" if use is not None else ""), float(a["estimate"]),
                   j.verdict, ci=ci, note=text, bar=ABOVE_ZERO)


def _gain(corr: pd.DataFrame | None, metric: str) -> tuple[pd.Series | None, pd.Series | None]:
    return _row(corr, "atomimed"), _row(corr, metric)


def _gain_finding(corr: pd.DataFrame, metric: str, held: UnseenAgreement | None, reason: str | None) -> Finding:
    fid = f"atomimed_tau_gain_{metric.lower()}"  # ids are snake_case (rougeL -> rougel)
    a_all, b_all = _gain(corr, metric)
    use = held.corr if (reason and held is not None and held.corr is not None) else None
    a, b = _gain(use, metric) if use is not None else (a_all, b_all)
    label_of = str(b["label"]) if b is not None else (str(b_all["label"]) if b_all is not None else metric)
    label = f"AtomiMed's Kendall τ minus {label_of}'s, with the radiologists' mean error count"
    if a is None or b is None or pd.isna(b["diff_vs_reference"]):
        who = "AtomiMed" if a is None else label_of
        return Finding(fid, label, None, "n/a", note=f"{who} was not computed in this run")
    value, lo, hi, p = float(b["diff_vs_reference"]), float(b["diff_low"]), float(b["diff_high"]), float(b["diff_p_bh"])
    base = f"τ {a['estimate']:.2f} vs {b['estimate']:.2f}; paired bootstrap over cases, BH p = {p:.3g}"
    if reason and use is None:
        why = held.missing if held is not None else "not computed"
        return Finding(fid, label, value, "n/a", ci=(lo, hi), bar=ABOVE_ZERO,
                       note=f"{reason}; the unseen half could not be used ({why}); {base}")
    j = judge(value, (lo, hi), ABOVE_ZERO)
    verdict, why = j.verdict, j.reason
    if verdict == "shown" and not p < ALPHA:
        verdict, why = "partly", f"the paired CI lies above 0 but the BH-adjusted p is {p:.3g} (not below {ALPHA})"
    note = base + ("" if verdict == "shown" else ("; AtomiMed is lower" if value <= 0 else
                                                  f"; AtomiMed is not higher beyond the noise ({why})"))
    if use is not None:
        note = f"{held.description}; {note}" + (
            "" if b_all is None else f"; all {int(b_all['n_cases'])} cases (in sample): {b_all['diff_vs_reference']:.3g} "
                                     f"{_ci(b_all['diff_low'], b_all['diff_high'])}, BH p = {b_all['diff_p_bh']:.3g}")
        label += " — unseen half of RadPref"
    return Finding(fid, label, value, verdict, ci=(lo, hi), note=note, bar=ABOVE_ZERO)


def _acc(pref: pd.DataFrame | None) -> pd.DataFrame:
    if pref is None or pref.empty:
        return pd.DataFrame()
    return pref[(pref["rater"] == MEAN_RATER) & (pref["statistic"] == "acc")].set_index("metric")


def _preference_finding(pref: pd.DataFrame, headline: Sequence[str], held: UnseenAgreement | None,
                        reason: str | None) -> Finding:
    fid = "atomimed_preference_accuracy"
    label = "Share of radiologist-preferred candidate pairs where AtomiMed prefers the same candidate"
    paper_note = "the paper's 0.9571 is a 10-system preference matrix on X-ray, not RadPref's candidate pairs"
    if pref.empty:
        return Finding(fid, label, None, "n/a", paper=PAPER[fid], note="no preference table in this run")
    use = held.pref if (reason and held is not None and held.pref is not None) else None
    acc_all = _acc(pref)
    acc = _acc(use) if use is not None else acc_all
    if "atomimed" not in acc.index or int(acc.loc["atomimed", "n_strict_pairs"]) == 0:
        return Finding(fid, label, None, "n/a", paper=PAPER[fid],
                       note="no candidate pair with both AtomiMed scores and a radiologists' preference")
    a = acc.loc["atomimed"]
    ci = (float(a["low"]), float(a["high"]))
    base = {m: float(acc.loc[m, "estimate"]) for m in headline if m in acc.index}
    others = ", ".join(f"{acc.loc[m, 'label']} {v:.3f}" for m, v in base.items()) or "no baseline computed"
    where = f"{int(a['n_strict_pairs'])} pairs; {others}"
    if not base:
        return Finding(fid, label, float(a["estimate"]), "n/a", ci=ci, paper=PAPER[fid],
                       note=f"{where}: nothing to compare with; {paper_note}")
    bar = (">", max(base.values()))
    if reason and use is None:
        why = held.missing if held is not None else "not computed"
        return Finding(fid, label, float(a["estimate"]), "n/a", ci=ci, paper=PAPER[fid], bar=bar,
                       note=f"{reason}; the unseen half could not be used ({why}); {where}; {paper_note}")
    j = judge(float(a["estimate"]), ci, bar)
    note = where + ("" if j.verdict == "shown" else f"; AtomiMed's CI does not clear every baseline ({j.reason})")
    if use is not None:
        ao = acc_all.loc["atomimed"] if "atomimed" in acc_all.index else None
        note = (f"{held.description}; {note}" + (f"; all cases (in sample): {ao['estimate']:.3g} "
                                                  f"{_ci(ao['low'], ao['high'])} over {int(ao['n_strict_pairs'])} pairs"
                                                  if ao is not None else ""))
        label += " — unseen half of RadPref"
    return Finding(fid, label, float(a["estimate"]), j.verdict, ci=ci, paper=PAPER[fid], note=f"{note}; {paper_note}",
                   bar=bar)


def _failures_finding(backend: str, unparseable: int, not_scored: int) -> Finding:
    fid = "atomimed_unparseable_replies"
    label = "AtomiMed model replies that matched no schema (counted failures)"
    if backend == "rule":
        return Finding(fid, label, 0, "n/a", note="the rule backend calls no model")
    return Finding(fid, label, int(unparseable), "n/a",
                   note=f"{not_scored} candidate(s) left unscored because a decomposition failed; a failed reply is "
                        "counted, never read as an empty (perfect) decomposition")


def headline_findings(corr: pd.DataFrame, pref: pd.DataFrame, headline: Sequence[str], *, backend: str = "rule",
                      unparseable: int = 0, not_scored: int = 0, study: str = "radpref",
                      unseen: UnseenAgreement | None = None) -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``corr`` / ``pref``: the run's Table 2 / Table 3
    analogs on all cases; ``headline``: the baselines the gains are computed against (their display names come
    from the tables' ``label`` column); ``unseen``: :func:`unseen_agreement` — the tables the verdicts rest on
    when the run is in sample (:func:`in_sample_reason`); without it an in-sample run's agreement findings are
    descriptive (``n/a``, :data:`IN_SAMPLE`)."""
    reason = in_sample_reason(study, backend)
    out = [_tau_finding(corr, unseen, reason)]
    out += [_gain_finding(corr, m, unseen, reason) for m in headline]
    out.append(_preference_finding(pref, headline, unseen, reason))
    out.append(_failures_finding(backend, unparseable, not_scored))
    return out
