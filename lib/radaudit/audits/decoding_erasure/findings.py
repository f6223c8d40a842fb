"""The headline findings of a decoding_erasure run (``findings.json``, format in ``../shared/FINDINGS.md``).

Each finding is computed from the run's :class:`CorpusResult` objects, placed beside the paper's
value (Table 1 of Parikh et al.) and given a verdict by a stated rule:

- ``greedy_distinct_reports`` / ``beam_distinct_reports``: template diversity (fraction of distinct
  reports) with its bootstrap CI; paper 0.003 / 0.005. *shown* when ≤ 0.05 (collapse of the paper's
  order), else *not shown*.
- ``reference_associated_words``: reference words whose sex association survives Benjamini–Hochberg over the
  vocabulary at the paper's p* (association module, item 11), with a bootstrap CI over studies. Only these words can
  be erased. *shown* when > 0 (bar > 0); 0 means these references cannot show erasure at all, and the note says so.
- ``erased_terms_greedy`` (and ``erased_terms_beam``): reference-associated words the **silence test** calls erased
  (ours, :mod:`radaudit.metrics.association` items 9–11). ``erased_terms_<s>_paper_test``: the paper's Erasure count
  (Eq. 3, §2.1.2; paper 32 / 35) among the reference-associated words. Each with a bootstrap CI over studies
  (:func:`radaudit.audits.decoding_erasure.erasure.erasure_bootstrap`) and the bar > 0, so a count whose CI reaches 0
  is *partly*. When no reference word is associated after BH both are *not shown* with that reason ("no word is
  sex-associated in the references after BH, so none can be erased"). The silence count rests on two controls
  (``controls``): ``erasure_planted_control`` (a planted clinical phrase that one template for every study must be
  found to erase) and ``erasure_negative_control`` (random halves of the references compared with each other must
  raise no false alarm); the paper's count on the negative control.
- ``erasure_planted_control``: the largest BH-adjusted p a planted word needs to be called erased by the silence
  test, bar ≤ p*, percentile bootstrap CI over studies (:func:`radaudit.audits.decoding_erasure.erasure.planted_control`);
  ``erasure_planted_control_paper_test`` beside it: how many planted words the paper's displacement test flags on
  the same data (descriptive, *n/a*: it cannot flag a word the template never writes).
- ``erasure_negative_control``: the share of random sex-stratified halvings of the references (one half as the
  predictions of the other) in which a test flags an erased word, Wilson CI, bar ≤ p*
  (:func:`radaudit.audits.decoding_erasure.erasure.halving_control`).
- ``erasure_positive_control``: the silence count when every study of the *unplanted* references gets one normal
  template — descriptive (*n/a*): the findings rest on the planted control.
- ``nucleus_emergent_real_words``: of the words nucleus sampling writes that its references never
  use ("emergent", Fig. 2b), the share found in GloVe 6B's 400,000-word vocabulary — a check of the
  stand-in (are emergent words real words or gibberish?). CI: Clopper–Pearson (exact binomial) over
  words, since the unit is the word and a bootstrap over words would be the same binomial. *shown*
  when ≥ 0.8.
- ``erasure_ranking_reversed_pairs``: pairs of strategies whose order by Erasure count reverses
  across the p* sweep (Fig. 3; the paper: none), over the Erasure categories where ≥ 2 strategies
  have a word; *n/a* when none has two.

A strategy a preset does not run gives a finding with value ``None`` and verdict *n/a*, never a gap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.audits.decoding_erasure.corpus import PAPER_ERASURE_ASSOCIATED, REFERENCE_ASSOCIATED, CorpusResult
from radaudit.findings import Finding
from radaudit.metrics.association import SILENCE_ERASURE
from radaudit.metrics.weat import load_glove

PAPER: dict[str, float] = {"greedy_distinct_reports": 0.003, "beam_distinct_reports": 0.005,
                           "erased_terms_greedy_paper_test": 32, "erased_terms_beam_paper_test": 35}
"""Paper Table 1 (ReX-BB on ReXGradient): template diversity 0.3% / 0.5%, Erasure 32 / 35."""

COLLAPSE_MAX = 0.05
REAL_WORDS_MIN = 0.8


def _missing(fid: str, label: str, name: str) -> Finding:
    return Finding(fid, label, None, "n/a", paper=PAPER.get(fid), note=f"strategy {name!r} is not run by this preset")


def distinct_reports(by: Mapping[str, CorpusResult], name: str, fid: str) -> Finding:
    label = f"Distinct reports under {name} decoding (template diversity, fraction)"
    if name not in by:
        return _missing(fid, label, name)
    d = by[name].diversity_pred.set_index("metric").loc["template_diversity"]
    value, lo, hi = float(d["estimate"]), float(d["low"]), float(d["high"])
    ok = value <= COLLAPSE_MAX
    note = "" if ok else (f"{100 * value:.0f}% distinct reports: the demo model does not collapse to templates as the "
                          f"paper's VLM does (≤ {100 * COLLAPSE_MAX:.0f}% needed)")
    return Finding(fid, label, value, "shown" if ok else "not shown", ci=(lo, hi), paper=PAPER[fid], note=note)


NO_ASSOCIATION = "no word is sex-associated in the references after BH, so none can be erased"
"""The reason an Erasure count is *not shown* when the references hold no BH-surviving association."""
CONTROLS_SILENCE: tuple[str, ...] = ("erasure_planted_control", "erasure_negative_control")
"""The controls the silence test's Erasure count rests on."""


def _ci(boot: Mapping[str, Any] | None, key: str) -> tuple[float, float] | None:
    r = None if boot is None else boot.get("ci", {}).get(key)
    return None if r is None else (float(r.low), float(r.high))


def _words(ws: Sequence[str], k: int = 8) -> str:
    ws = sorted(ws)
    return ", ".join(ws[:k]) + (" …" if len(ws) > k else "")


def reference_associated(by: Mapping[str, CorpusResult], name: str, boot: Mapping[str, Any] | None) -> Finding:
    """``reference_associated_words`` from the references of corpus ``name`` (every strategy shares them)."""
    fid = "reference_associated_words"
    label = "Reference words whose sex association survives Benjamini–Hochberg over the vocabulary (can be erased)"
    if name not in by:
        name = next(iter(by))
    w = by[name].words
    n = int(w["ref_associated"].sum())
    V, strong = len(w), int((w["z_ref"].abs() > 2.0).sum())
    n_studies = int(sum(by[name].association.n_reports.values()))
    p_star = float(by[name].association.params.get("p_star", 0.05))
    said = (f"{n} of {V} words survive BH at p* = {p_star:g}; {strong} pass the paper's |z_ref| > 2, about "
            f"{0.05 * V:.0f} would by chance alone")
    if n > 0:
        return Finding(fid, label, n, "shown", ci=_ci(boot, "reference_associated"), bar=(">", 0),
                       note=f"{said}: {_words(w.loc[w['ref_associated'], 'word'])}")
    return Finding(fid, label, n, "not shown", ci=_ci(boot, "reference_associated"), bar=(">", 0),
                   note=f"{said}: these {n_studies} studies' references hold no sex-associated word at this sample size, "
                        "so no erasure can be shown on them (no power, not evidence of no erasure)")


def erased_terms(by: Mapping[str, CorpusResult], name: str, controls: Mapping[str, Mapping[str, Any]],
                 boot: Mapping[str, Any] | None = None, short: str | None = None) -> list[Finding]:
    """The silence test's and the paper's Erasure counts for one strategy (see the module docstring). ``boot``:
    :func:`radaudit.audits.decoding_erasure.erasure.erasure_bootstrap` of the strategy (``None``: no CI)."""
    short = short or name
    fid, fid_p = f"erased_terms_{short}", f"erased_terms_{short}_paper_test"
    label = f"Sex-associated words erased under {name} decoding (silence test, ours)"
    label_p = f"Sex-associated words erased under {name} decoding (the paper's displacement test)"
    if name not in by:
        return [_missing(fid, label, name), _missing(fid_p, label_p, name)]
    c = by[name].category_counts()
    w = by[name].words
    n_assoc, n, n_p = c[REFERENCE_ASSOCIATED], c[SILENCE_ERASURE], c[PAPER_ERASURE_ASSOCIATED]
    ci, ci_p = _ci(boot, "silence"), _ci(boot, "paper")
    unrestricted = f"without that requirement the paper's test flags {c['Erasure']}"
    if n_assoc == 0:
        note = f"{NO_ASSOCIATION} (reference_associated_words = 0)"
        return [Finding(fid, label, n, "not shown", ci=ci, bar=(">", 0), controls=CONTROLS_SILENCE, note=note),
                Finding(fid_p, label_p, n_p, "not shown", ci=ci_p, paper=PAPER.get(fid_p), bar=(">", 0),
                        controls=("erasure_negative_control",), note=f"{note}; {unrestricted}")]
    erased = w.loc[w["erased_silence"], "word"]
    if n > 0:
        f = Finding(fid, label, n, "shown", ci=ci, bar=(">", 0), controls=CONTROLS_SILENCE,
                    note=f"{n} of the {n_assoc} BH-associated reference words: {_words(erased)}")
    else:
        f = Finding(fid, label, n, "not shown", ci=ci, bar=(">", 0), controls=CONTROLS_SILENCE,
                    note=f"none of the {n_assoc} BH-associated reference words is erased")
    paper_words = w.loc[(w["category"] == "Erasure") & w["ref_associated"], "word"]
    if n_p > 0:
        fp = Finding(fid_p, label_p, n_p, "shown", ci=ci_p, paper=PAPER.get(fid_p), bar=(">", 0),
                     controls=("erasure_negative_control",),
                     note=f"{n_p} of the {n_assoc} BH-associated reference words: {_words(paper_words)}; {unrestricted}")
    else:
        fp = Finding(fid_p, label_p, n_p, "not shown", ci=ci_p, paper=PAPER.get(fid_p), bar=(">", 0),
                     controls=("erasure_negative_control",),
                     note=("the paper's test cannot flag a word the model never writes (Var_pred = 2/α bounds z_disp): "
                           f"{unrestricted}; see erasure_planted_control_paper_test"))
    return [f, fp]


def emergent_real_words(by: Mapping[str, CorpusResult], name: str, vocabulary: set[str] | frozenset[str]) -> Finding:
    """Share of ``name``'s emergent words (used by its predictions, never by its references) in ``vocabulary``."""
    from scipy.stats import binomtest

    fid = f"{name}_emergent_real_words"
    label = f"Emergent words of {name} sampling that are real words (in GloVe 6B's vocabulary)"
    if name not in by:
        return _missing(fid, label, name)
    w = by[name].words
    emergent = w.loc[(w["c_ref"] == 0) & (w["c_pred"] > 0), "word"].astype(str).tolist()
    if not emergent:
        return Finding(fid, label, None, "n/a", note=f"{name} writes no word its references do not use")
    k = sum(x in vocabulary for x in emergent)
    ci = binomtest(k, len(emergent)).proportion_ci(0.95, method="exact")
    value = k / len(emergent)
    ok = value >= REAL_WORDS_MIN
    examples = ", ".join(sorted(x for x in emergent if x not in vocabulary)[:8])
    note = (f"{k} of {len(emergent)} emergent words" + ("" if ok else f"; not words: {examples} ...: the demo model's "
                                                                      "sampling writes gibberish, so emergent-word and "
                                                                      "New Bias counts are noise"))
    return Finding(fid, label, value, "shown" if ok else "not shown", ci=(ci.low, ci.high), note=note)


def ranking_reversed_pairs(reversals: pd.DataFrame) -> Finding:
    """Fig. 3's claim over the two Erasure categories (paper's test and silence test)."""
    fid, label = "erasure_ranking_reversed_pairs", "Pairs of strategies whose Erasure ranking reverses across the p* sweep"
    r = reversals[reversals["category"].isin(["Erasure", SILENCE_ERASURE])]
    ranked = r[r["preserved"] != "n/a"]
    if ranked.empty:
        return Finding(fid, label, None, "n/a", paper=0, note="fewer than two strategies have an erased word at any p*: "
                                                             "nothing to rank")
    n = int(ranked["reversed_pairs"].sum())
    cats = ", ".join(f"{row.category}: {row.reversed_pairs} of {row.pairs}" for row in ranked.itertuples())
    return Finding(fid, label, n, "shown" if n == 0 else "not shown", paper=0,
                   note=cats if n == 0 else f"the ranking depends on p* ({cats})")


def control_findings(controls: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """The planted (positive) and halving (negative) controls, and the descriptive one-template count.
    ``controls``: :func:`radaudit.audits.decoding_erasure.erasure.erasure_controls`."""
    pc, nc, floor = controls["planted"], controls["negative"], controls["floor"]
    p_star = float(pc["p_star"])
    k, K = len(pc["erased"]), len(pc["planted_words"])
    plant = (f"'{pc['phrase']}' planted in {pc['mentions']} of the {pc['n_target']} {pc['target']} references "
             + (f"({100 * pc['share']:.0f}%: the fewest that pass Bonferroni at p*/{pc['margin']:g} here)" if pc["enough"]
                else "(all of them: even that cannot pass Bonferroni at p*/{:g} with so few studies)".format(pc["margin"])))
    pci = None if not math.isfinite(pc["low"]) else (pc["low"], pc["high"])
    if pc["value"] <= p_star:
        verdict, why = "shown", f"the one-template model erases {k} of the {K} planted words (silence test)"
    else:
        verdict = "not shown"
        why = (f"the silence test calls {k} of the {K} planted words erased"
               + ("; this preset has too few studies for a planted association to survive BH with margin, so the "
                  "Erasure counts it supports cannot be trusted here" if not pc["enough"] else ""))
    out = [
        Finding("erasure_planted_control", f"Planted control: largest BH-adjusted p the planted words need to be called "
                f"erased when one template is written for every study (silence test; erased when ≤ {p_star:g})",
                pc["value"], verdict, ci=pci, bar=("<=", p_star),
                note=f"{plant}; {why}; the paper's test flags {len(pc['paper_flags'])} of them"),
        Finding("erasure_planted_control_paper_test", "The paper's displacement test on the planted control's data: "
                "planted words it calls erased", len(pc["paper_flags"]), "n/a",
                note=(f"descriptive, beside erasure_planted_control: of the {K} planted words the silence test erases "
                      f"{k}, the paper's test {len(pc['paper_flags'])} ({pc['paper_total']} words in all): a word the "
                      "template never writes cannot be displaced (Var_pred = 2/α bounds z_disp)")),
    ]
    alarm_note = (f"{nc['alarms']} of {nc['n_halvings']} random sex-stratified halvings flag a word (silence test "
                  f"{nc['silence_alarms']}, paper's test {nc['paper_alarms']})"
                  + (f": {', '.join(nc['flagged'])}" if nc["flagged"] else "")
                  + f"; a half holds {nc['mean_reference_associated']:.2f} BH-associated reference words on average"
                  + ("; with (almost) none, these halves give the test little to get wrong" if
                     nc["mean_reference_associated"] < 1 else ""))
    neg_label = ("Negative control: share of random halvings of the references (one half as the predictions of the "
                 "other) in which a test flags an erased word")
    if not math.isfinite(nc["value"]):
        out.append(Finding("erasure_negative_control", neg_label, None, "not shown", bar=("<=", float(nc["p_star"])),
                           note=f"could not run: {nc.get('note') or 'no halving'}"))
    else:
        neg_ok = nc["value"] <= float(nc["p_star"])
        out.append(Finding("erasure_negative_control", neg_label, nc["value"], "shown" if neg_ok else "not shown",
                           ci=(nc["low"], nc["high"]), bar=("<=", float(nc["p_star"])),
                           note=alarm_note if neg_ok else f"the tests flag words that nothing erased: {alarm_note}"))
    out.append(Finding("erasure_positive_control", "One normal template for every study of the (unplanted) references: "
                       "words the silence test calls erased", floor[SILENCE_ERASURE], "n/a",
                       note=(f"descriptive, not a control the findings rest on (that is erasure_planted_control): the "
                             f"paper's test flags {floor['Erasure']}; {floor['strong_reference_words_exact']} reference "
                             f"words pass |z| > 2, {floor.get('reference_words_bh', 'n/a')} survive BH over the "
                             "vocabulary")))
    return out


def real_word_vocabulary() -> frozenset[str]:
    """GloVe 6B's 400,000 lower-cased words (:func:`radaudit.metrics.weat.load_glove`): the "real word" list."""
    return frozenset(load_glove().words)


def headline_findings(results: Sequence[CorpusResult], controls: Mapping[str, Mapping[str, Any]],
                      reversals: pd.DataFrame, vocabulary: set[str] | frozenset[str], *,
                      greedy: str = "greedy", beam: str = "beam4", nucleus: str = "nucleus",
                      skews_run: Sequence[float] | None = None, skew_note: str = "",
                      erasure_ci: Mapping[str, Mapping[str, Any]] | None = None) -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``controls``:
    :func:`radaudit.audits.decoding_erasure.erasure.erasure_controls`; ``erasure_ci``:
    :func:`radaudit.audits.decoding_erasure.erasure.erasure_intervals` (the counts' CIs per strategy; ``None``:
    counts without CIs); ``reversals``: :func:`ranking_reversals` of the p* sweep; ``vocabulary``: the real-word
    list (GloVe 6B's words). ``skews_run`` / ``skew_note``: what
    :func:`radaudit.audits.decoding_erasure.study.skew_study_plan` returned (``None``: not asked), so a
    Fig. 2c that could not run is a finding with its reason, never a silent gap."""
    by = {r.name: r for r in results}
    boot = erasure_ci or {}
    out = [distinct_reports(by, greedy, "greedy_distinct_reports"), distinct_reports(by, beam, "beam_distinct_reports")]
    ref_name = greedy if greedy in by else next(iter(by))
    out.append(reference_associated(by, ref_name, boot.get(ref_name) or next(iter(boot.values()), None)))
    out += erased_terms(by, greedy, controls, boot.get(greedy), short="greedy")
    out += erased_terms(by, beam, controls, boot.get(beam), short="beam")
    out += control_findings(controls)
    out.append(emergent_real_words(by, nucleus, vocabulary))
    out.append(ranking_reversed_pairs(reversals))
    if skews_run is not None:
        out.append(skew_study(skews_run, skew_note))
    return out


def skew_study(skews_run: Sequence[float], note: str = "") -> Finding:
    """``skew_study``: whether Fig. 2c (ΔWAE under sex-skewed training) ran, and on which skews.

    It has no single headline number (the table ``fig2c_skew_sensitivity`` holds ΔWAE per skew with
    CIs), so the value is ``None`` and the verdict ``n/a``; the note says which skews ran and why any
    did not (e.g. the paper preset without ``skew_models``).
    """
    label = "Fig. 2c: ΔWAE (pred) under sex-skewed training"
    if not skews_run:
        return Finding("skew_study", label, None, "n/a", note=f"not run: {note or 'no skew could run'}")
    ran = ", ".join(f"{s:g}" for s in skews_run)
    return Finding("skew_study", label, None, "n/a",
                   note=f"run for training skews {ran}; see the fig2c_skew_sensitivity table"
                   + (f"; {note}" if note else ""))
