"""The headline findings of a decoding_erasure run (``findings.json``, format in ``../shared/FINDINGS.md``).

Each finding is computed from the run's :class:`CorpusResult` objects, placed beside the paper's
value (Table 1 of Parikh et al.) and given a verdict by a stated rule:

- ``greedy_distinct_reports`` / ``beam_distinct_reports``: template diversity (fraction of distinct
  reports) with its bootstrap CI; paper 0.003 / 0.005. *shown* when ≤ 0.05 (collapse of the paper's
  order), else *not shown*.
- ``erased_terms_greedy``: words the **silence test** calls erased under greedy decoding (ours,
  :mod:`radaudit.metrics.association` items 9–10). ``erased_terms_greedy_paper_test``: the paper's
  Erasure count (Eq. 3, §2.1.2; paper 32). *shown* when > 0. The silence count is trusted only with
  its controls: ``erasure_positive_control`` (one normal template for every study: the silence test
  must flag > 0) and ``erasure_negative_control`` (predictions = references: it must flag 0).
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

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from radaudit.audits.decoding_erasure.corpus import CorpusResult
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


def erased_terms(by: Mapping[str, CorpusResult], name: str, controls: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """The silence test's and the paper's Erasure counts for one strategy (see the module docstring)."""
    fid, fid_p = f"erased_terms_{name}", f"erased_terms_{name}_paper_test"
    label = f"Sex-associated words erased under {name} decoding (silence test, ours)"
    label_p = f"Sex-associated words erased under {name} decoding (the paper's displacement test)"
    if name not in by:
        return [_missing(fid, label, name), _missing(fid_p, label_p, name)]
    c = by[name].category_counts()
    pos, neg = controls["positive"][SILENCE_ERASURE], controls["negative"][SILENCE_ERASURE]
    trusted = pos > 0 and neg == 0
    n = c[SILENCE_ERASURE]
    if n > 0 and trusted:
        verdict, note = "shown", f"controls pass (template: {pos} erased, copy: {neg})"
    elif not trusted:
        verdict, note = "not shown", (f"the controls fail (template: {pos} erased, must be > 0; copy: {neg}, must be 0): "
                                      "the count cannot be interpreted")
    else:
        bh = controls["positive"].get("reference_words_bh")
        verdict, note = "not shown", (f"no word erased; the template control flags {pos}, and {bh} reference words' sex "
                                      "association survives BH: these references hold (almost) nothing to erase at "
                                      "this sample size")
    out = [Finding(fid, label, n, verdict, note=note + f"; the paper's test flags {c['Erasure']}")]
    n_p = c["Erasure"]
    out.append(Finding(fid_p, label_p, n_p, "shown" if n_p > 0 else "not shown", paper=PAPER.get(fid_p),
                       note="" if n_p > 0 else (
                           "the paper's test cannot flag a word the model never writes (Var_pred = 2/α bounds z_disp): "
                           f"it flags {controls['positive']['Erasure']} even for one template written for every study")))
    return out


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
    pos, neg = controls["positive"], controls["negative"]
    return [
        Finding("erasure_positive_control", "Positive control: words erased by one normal template for every study "
                "(silence test)", pos[SILENCE_ERASURE], "shown" if pos[SILENCE_ERASURE] > 0 else "not shown",
                note=(f"the paper's test flags {pos['Erasure']}; {pos['strong_reference_words_exact']} reference words pass "
                      f"|z| > 2, {pos.get('reference_words_bh', 'n/a')} of them survive BH over the vocabulary (more "
                      "than chance)") + ("" if pos[SILENCE_ERASURE] > 0 else
                                         ": these references cannot show erasure at all (no power)")),
        Finding("erasure_negative_control", "Negative control: words erased when every prediction is its reference "
                "(silence test)", neg[SILENCE_ERASURE], "shown" if neg[SILENCE_ERASURE] == 0 else "not shown",
                note="" if neg[SILENCE_ERASURE] == 0 else "the test flags words with nothing erased: do not trust it"),
    ]


def real_word_vocabulary() -> frozenset[str]:
    """GloVe 6B's 400,000 lower-cased words (:func:`radaudit.metrics.weat.load_glove`): the "real word" list."""
    return frozenset(load_glove().words)


def headline_findings(results: Sequence[CorpusResult], controls: Mapping[str, Mapping[str, Any]],
                      reversals: pd.DataFrame, vocabulary: set[str] | frozenset[str], *,
                      greedy: str = "greedy", beam: str = "beam4", nucleus: str = "nucleus",
                      skews_run: Sequence[float] | None = None, skew_note: str = "") -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``controls``: ``{"positive":
    collapse_floor(...), "negative": copy_control(...)}``; ``reversals``: :func:`ranking_reversals` of the
    p* sweep; ``vocabulary``: the real-word list (GloVe 6B's words). ``skews_run`` / ``skew_note``: what
    :func:`radaudit.audits.decoding_erasure.study.skew_study_plan` returned (``None``: not asked), so a
    Fig. 2c that could not run is a finding with its reason, never a silent gap."""
    by = {r.name: r for r in results}
    out = [distinct_reports(by, greedy, "greedy_distinct_reports"), distinct_reports(by, beam, "beam_distinct_reports")]
    out += erased_terms(by, greedy, controls)
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
