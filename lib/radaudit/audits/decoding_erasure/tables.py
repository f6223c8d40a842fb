"""decoding_erasure's tables: Table 1 (strategies), Table 2 (systems), the p* sweep, skews, words, vocabulary transitions and
the run summary."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.decoding_erasure.corpus import CorpusResult
from radaudit.errors import ParamsError
from radaudit.metrics.association import CATEGORIES, SILENCE_ERASURE, classify_shift, silence_erased
from radaudit.tables import format_ci, format_number

log = logging.getLogger(__name__)


DIVERSITY_LABELS: dict[str, str] = {
    "template_diversity": "Template Div. (%)", "ttr": "TTR (%)", "one_minus_self_bleu": "1 − Self-BLEU (%)",
    "semantic_diversity": "Semantic Div. (%)",
}

SECTION_ORDER: tuple[str, ...] = ("Surface Level Similarity", "Textual Diversity & Collapse", "Clinical Categories",
                                  "Fairness")
"""The row groups of Table 1, in the paper's order."""

REF_COLUMN = "Ref."


# ----------------------------------------------------------------------------------------------
# Table 1 / Table 2


def _row(section: str, metric: str, corpus: str, estimate: Any, low: Any = math.nan, high: Any = math.nan,
         pvalue: Any = math.nan, cell: str | None = None, note: str = "") -> dict[str, Any]:
    """One row of a long table. The cell is ``"0.12 [0.05, 0.20]"`` (:func:`radaudit.tables.format_ci`): every estimate
    row has an interval, and where it could not be formed (too few reports, too many undefined replicates,
    ``n_bootstrap = 0``) the cell says so, ``"0.12 [n/a]"``; counts pass their own ``cell``."""
    if cell is None:
        cell = format_ci(estimate, low, high)
    return {"section": section, "metric": metric, "corpus": corpus, "estimate": estimate, "low": low, "high": high,
            "pvalue": pvalue, "cell": cell, "note": note}


def weat_cell(weat_side: Any) -> str:
    """WEAT's ``"S [low, high] / ES [low, high]"`` (Table 1's and Table 2's "WEAT (S/ES)"); ``weat_side``: a row of
    :attr:`CorpusResult.weat`. Each number carries its own interval (``"n/a"`` where WEAT could not run)."""
    return (f"{format_ci(weat_side['S'], weat_side.get('S_low'), weat_side.get('S_high'))} / "
            f"{format_ci(weat_side['ES'], weat_side.get('ES_low'), weat_side.get('ES_high'))}")


def diversity_pair_cell(diversity: pd.DataFrame, metrics: Sequence[str] = ("template_diversity",
                                                                          "semantic_diversity")) -> str:
    """Table 2's "Div. (Temp./Sem. %)": each diversity metric ×100 with its 95% interval
    (:func:`radaudit.metrics.diversity.diversity_table`'s, reports resampled), ``" / "``-joined; ``"n/a"`` for a
    metric not computed."""
    d = diversity.set_index("metric")
    cells = []
    for k in metrics:
        if k in d.index:
            cells.append(format_ci(100 * d.loc[k, "estimate"], 100 * d.loc[k, "low"], 100 * d.loc[k, "high"]))
        else:
            cells.append(format_number(math.nan))
    return " / ".join(cells)


def _diversity_rows(table: pd.DataFrame, corpus: str) -> list[dict[str, Any]]:
    out = []
    for r in table.itertuples(index=False):
        out.append(_row("Textual Diversity & Collapse", DIVERSITY_LABELS.get(r.metric, r.metric), corpus,
                        100 * r.estimate, 100 * r.low, 100 * r.high, note=r.note or ""))
    return out


def _ref_columns(results: Sequence[CorpusResult]) -> dict[str, str]:
    """Reference hash -> its column name: one "Ref." when every corpus shares its references."""
    hashes = list(dict.fromkeys(r.reference_hash for r in results))
    if len(hashes) == 1:
        return {hashes[0]: REF_COLUMN}
    first = {h: next(r.name for r in results if r.reference_hash == h) for h in hashes}
    return {h: f"{REF_COLUMN} ({first[h]})" for h in hashes}


CATEGORY_ROWS: dict[str, str] = {"Erasure": "Erasure (#, paper's test)", SILENCE_ERASURE: "Erasure (#, silence test)"}
"""Table 1's labels of the two Erasure counts: the paper's displacement test (Eq. 3) and ours, which can
see a word the model never writes (radaudit.metrics.association, items 9-10)."""


def strategy_table_long(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """Tidy Table 1: one row per (section, metric, corpus) with the estimate, CI, p-value and the formatted cell.

    Reference-corpus diversity rows have ``corpus`` = the "Ref." column name (one per distinct
    reference set). Columns: ``section``, ``metric``, ``corpus``, ``estimate``, ``low``, ``high``,
    ``pvalue`` (WAE's permutation p, WEAT's p), ``cell``, ``note``. The "WEAT (S/ES)" row's estimate and bounds are
    S's; its cell holds both numbers with their intervals (:func:`weat_cell`).
    """
    if not results:
        raise ParamsError("strategy_table needs at least one CorpusResult")
    names = [r.name for r in results]
    if len(set(names)) != len(names):
        raise ParamsError(f"corpus names must be unique, got {names}")
    rows: list[dict[str, Any]] = []
    refcols = _ref_columns(results)
    done_refs: set[str] = set()
    for r in results:
        for s in r.surface.itertuples(index=False):
            rows.append(_row("Surface Level Similarity", s.label, r.name, s.estimate, s.low, s.high))
        if r.reference_hash not in done_refs:
            done_refs.add(r.reference_hash)
            rows += _diversity_rows(r.diversity_ref, refcols[r.reference_hash])
        rows += _diversity_rows(r.diversity_pred, r.name)
        counts = r.category_counts()
        for c in ("Erasure", SILENCE_ERASURE, "New Bias", "Bias Flip"):
            label = CATEGORY_ROWS.get(c, f"{c} (#)")
            rows.append(_row("Clinical Categories", label, r.name, counts[c], cell=str(counts[c])))
        w = r.wae.set_index("metric")
        for key, label in (("WAE_pred", "WAE (pred)"), ("WAE_ref", "WAE (ref)"), ("delta_WAE_pred", "ΔWAE (pred)")):
            x = w.loc[key]
            rows.append(_row("Fairness", label, r.name, x["estimate"], x["low"], x["high"], pvalue=x["perm_pvalue"]))
        wp = r.weat.set_index("side").loc["pred"]
        rows.append(_row("Fairness", "WEAT (S/ES)", r.name, wp["S"], wp.get("S_low", math.nan),
                         wp.get("S_high", math.nan), pvalue=wp["pvalue"], cell=weat_cell(wp), note=wp["note"]))
        rows.append(_row("Fairness", "ΔDIR", r.name, r.dir["delta_dir"], r.dir.get("delta_dir_low", math.nan),
                         r.dir.get("delta_dir_high", math.nan)))
    return pd.DataFrame(rows)


def strategy_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The paper's Table 1 layout: rows (section, metric), one column per corpus plus "Ref." column(s).

    Every estimate's cell is ``"0.78 [0.76, 0.80]"`` (:func:`radaudit.tables.format_ci`; ``"0.78 [n/a]"`` where the
    interval could not be formed), counts for the clinical categories, ``"S [CI] / ES [CI]"`` for WEAT
    (:func:`weat_cell`); the "Ref." column is filled for the diversity rows only (empty string elsewhere). Which unit
    each interval resamples: :mod:`radaudit.audits.decoding_erasure.intervals`. The tidy version is
    :func:`strategy_table_long`.
    """
    long = strategy_table_long(results)
    refcols = list(_ref_columns(results).values())
    cols = [*refcols, *[r.name for r in results]]
    metric_order = list(dict.fromkeys(zip(long["section"], long["metric"])))
    metric_order.sort(key=lambda sm: SECTION_ORDER.index(sm[0]))  # stable: keeps first-seen order within a section
    wide = long.pivot_table(index=["section", "metric"], columns="corpus", values="cell", aggfunc="first")
    wide = wide.reindex(index=pd.MultiIndex.from_tuples(metric_order, names=["section", "metric"]), columns=cols)
    wide.columns.name = None
    return wide.fillna("")


# ----------------------------------------------------------------------------------------------
# p* sweep (Figure 3)


def pstar_sweep_table(results: Sequence[CorpusResult], p_grid: Sequence[float]) -> pd.DataFrame:
    """Category counts per corpus as p* sweeps (paper Fig. 3): re-flag and re-classify each word table.

    A word is displaced at p* when its BH-adjusted p ≤ p* (``correction="bh"``, the audit's own
    rule) or |z_disp| > Φ⁻¹(1 − p*/2) (``correction="none"``); categories by
    :func:`radaudit.metrics.association.classify_shift` with the audit's z_neutral / z_strong.
    The silence test's Erasure (:data:`SILENCE_ERASURE`) is re-flagged the same way from
    ``p_silence_adj`` (or ``p_silence``) by :func:`radaudit.metrics.association.silence_erased`, with the
    reference association re-tested at the same p* (``p_ref_exact_adj`` ≤ p*, association module item 11).
    Columns: ``corpus``, ``p_star``, ``category``, ``count``.
    """
    from scipy.stats import norm

    rows = []
    for r in results:
        w = r.association.words
        prm = r.association.params
        for p in p_grid:
            if not 0 < p < 1:
                raise ParamsError(f"p* values must lie in (0, 1), got {p!r}")
            if prm.get("correction", "bh") == "bh":
                displaced = w["p_adj"].to_numpy() <= p
            else:
                displaced = np.abs(w["z_disp"].to_numpy()) > norm.ppf(1 - p / 2)
            cats = classify_shift(w["z_ref"], w["z_pred"], displaced, z_neutral=prm["z_neutral"],
                                  z_strong=prm["z_strong"])
            for c in (*CATEGORIES, "Unclassified"):
                rows.append({"corpus": r.name, "p_star": float(p), "category": c, "count": int((cats == c).sum())})
            bh = prm.get("correction", "bh") == "bh"
            p_sil = w["p_silence_adj" if bh else "p_silence"]
            silent = silence_erased(p_sil, w["z_ref_exact"], w["z_pred_exact"], p_star=p, z_neutral=prm["z_neutral"],
                                    z_strong=prm["z_strong"], p_ref=w["p_ref_exact_adj" if bh else "p_ref_exact"])
            rows.append({"corpus": r.name, "p_star": float(p), "category": SILENCE_ERASURE, "count": int(silent.sum())})
    return pd.DataFrame(rows, columns=["corpus", "p_star", "category", "count"])


# ----------------------------------------------------------------------------------------------
# Figure 2b: vocabulary transitions; Figure 2c: skew sensitivity; generation summary


def vocabulary_transitions(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """Paper Fig. 2b ("global lexical shift"): how each corpus's vocabulary relates to its references'.

    Over the association vocabulary (stop words removed, the rows of the two groups; the words of
    :attr:`CorpusResult.words`): ``ref_vocab`` words the references use, ``pred_vocab`` words the
    predictions use, ``retained`` (both), ``lost`` (references only), ``emergent`` (predictions only),
    and ``pred_share_of_ref`` = pred_vocab / ref_vocab (the paper: deterministic decoding keeps "5% of
    the original reference vocabulary"). One row per corpus.
    """
    rows = []
    for r in results:
        w = r.association.words
        in_ref, in_pred = w["c_ref"].to_numpy() > 0, w["c_pred"].to_numpy() > 0
        n_ref, n_pred = int(in_ref.sum()), int(in_pred.sum())
        rows.append({"corpus": r.name, "ref_vocab": n_ref, "pred_vocab": n_pred, "retained": int((in_ref & in_pred).sum()),
                     "lost": int((in_ref & ~in_pred).sum()), "emergent": int((~in_ref & in_pred).sum()),
                     "pred_share_of_ref": n_pred / n_ref if n_ref else math.nan})
    return pd.DataFrame(rows)


def skew_table(results: Mapping[float, Sequence[CorpusResult]]) -> pd.DataFrame:
    """Paper Fig. 2c / "Robustness": per training skew and strategy, ΔWAE_pred and the conventional metrics.

    ``results``: male training share -> the :class:`CorpusResult` of each strategy (names
    ``"skew <s> · <strategy>"`` or plain strategy names). One row per (skew, strategy, metric) with
    ``estimate``, ``low``, ``high`` (95% CI; WEAT ES's resamples the target words,
    :mod:`radaudit.audits.decoding_erasure.intervals`), ``pvalue`` (permutation p for the WAE rows) and ``cell``;
    metrics: ``ΔWAE (pred)``, ``WAE (pred)``, ``WEAT ES`` (pred side) and every surface metric.
    """
    rows = []
    for skew, corpora in results.items():
        for r in corpora:
            strat = r.name.split(" · ")[-1]
            base = {"skew": float(skew), "strategy": strat, "corpus": r.name}
            w = r.wae.set_index("metric")
            for key, label in (("delta_WAE_pred", "ΔWAE (pred)"), ("WAE_pred", "WAE (pred)")):
                x = w.loc[key]
                rows.append({**base, **_row("Fairness", label, r.name, x["estimate"], x["low"], x["high"],
                                            pvalue=x["perm_pvalue"])})
            wp = r.weat.set_index("side").loc["pred"]
            rows.append({**base, **_row("Fairness", "WEAT ES", r.name, wp["ES"], wp.get("ES_low", math.nan),
                                        wp.get("ES_high", math.nan), pvalue=wp["pvalue"], note=wp["note"])})
            for s in r.surface.itertuples(index=False):
                rows.append({**base, **_row("Surface Level Similarity", s.label, r.name, s.estimate, s.low, s.high)})
    cols = ["skew", "strategy", "section", "metric", "estimate", "low", "high", "pvalue", "cell", "note"]
    return pd.DataFrame(rows)[cols] if rows else pd.DataFrame(columns=cols)


def skew_label(skew: float) -> str:
    """``0.67`` -> ``"67% male"``; ``0.5`` -> ``"50/50"`` (axis labels of Fig. 2c)."""
    return "50/50" if abs(skew - 0.5) < 1e-9 else f"{100 * skew:.0f}% male"


def generation_summary(gens: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: reports, empty predictions (kept in the corpus, counted here), distinct reports,
    mean generated tokens and the share that hit the length limit. ``gens``: ``study_generations`` rows."""
    need = {"strategy", "prediction"}
    if not need <= set(gens.columns):
        raise ParamsError(f"generation_summary needs columns {sorted(need)}; got {list(gens.columns)}")
    rows = []
    for strat, g in gens.groupby("strategy", sort=False):
        text = g["prediction"].fillna("").astype(str).str.strip()
        row = {"strategy": strat, "reports": len(g), "empty": int((text == "").sum()), "distinct": int(text.nunique())}
        if "n_new_tokens" in g:
            row["mean_new_tokens"] = float(pd.to_numeric(g["n_new_tokens"], errors="coerce").mean())
        if "finish_reason" in g:
            row["hit_length_limit"] = float((g["finish_reason"] == "length").mean())
        rows.append(row)
    return pd.DataFrame(rows)


def words_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The per-word CSV of the issue: every corpus's CAD table (counts, s, var, z, z_disp, p, p_adj,
    category) stacked, with a leading ``corpus`` column."""
    parts = [r.words for r in results]
    if not parts:
        raise ParamsError("words_table needs at least one CorpusResult")
    out = pd.concat(parts, ignore_index=True)
    return out[["corpus", *[c for c in out.columns if c != "corpus"]]]


# ----------------------------------------------------------------------------------------------
# Table 2 analog, ranking across p*, and what a reference set can show at all


def system_table(results: Sequence[CorpusResult]) -> pd.DataFrame:
    """The paper's Table 2 layout (systems x strategy, compact cells), one column per corpus.

    Rows: ``Div. (Temp./Sem. %)`` (each with its 95% CI, :func:`diversity_pair_cell`); ``Erasure/NB/BF`` (the
    paper's test); ``Erasure (silence test)`` (ours, beside it); ``WAE (pred/ref)`` (each with its 95% CI);
    ``WEAT (S/ES)`` (prediction side, each with its 95% CI, :func:`weat_cell`); ``<first surface metric>`` with CI,
    since the paper only says text similarity is "comparable (Δ ≤ 2%, unshown)" and we show it.
    """
    if not results:
        raise ParamsError("system_table needs at least one CorpusResult")
    cols: dict[str, dict[str, str]] = {}
    for r in results:
        c = r.category_counts()
        w = r.wae.set_index("metric")
        wp = r.weat.set_index("side").loc["pred"]
        cell = {
            "Div. (Temp./Sem. %)": diversity_pair_cell(r.diversity_pred),
            "Erasure/NB/BF": f"{c['Erasure']}/{c['New Bias']}/{c['Bias Flip']}",
            "Erasure (silence test)": str(c[SILENCE_ERASURE]),
            "WAE (pred/ref)": " / ".join(format_ci(w.loc[k, "estimate"], w.loc[k, "low"], w.loc[k, "high"])
                                         for k in ("WAE_pred", "WAE_ref")),
            "WEAT (S/ES)": weat_cell(wp),
        }
        if not r.surface.empty:
            s = r.surface.iloc[0]
            cell[str(s["label"])] = format_ci(s["estimate"], s["low"], s["high"])
        cols[r.name] = cell
    out = pd.DataFrame(cols)
    out.index.name = "metric"
    return out.fillna("").reset_index()


def ranking_reversals(sweep: pd.DataFrame) -> pd.DataFrame:
    """Is the ranking of corpora preserved as p* sweeps (paper Fig. 3, "strictly preserves")?

    ``sweep``: :func:`pstar_sweep_table`. Per category, over every pair of corpora: ``reversed_pairs``
    = pairs ordered a > b at some p* and a < b at another (ties do not count as an order), of
    ``pairs``; ``preserved`` = no reversed pair. A ranking needs something to rank: where fewer than
    two corpora have a word in the category at any p*, ``ranked`` is the number that do and
    ``preserved`` is ``"n/a"`` (an all-zero sweep trivially "preserves" an empty ranking, which is no
    evidence for the paper's claim). One row per category.
    """
    rows = []
    for cat, part in sweep.groupby("category", sort=False):
        wide = part.pivot_table(index="p_star", columns="corpus", values="count", aggfunc="first")
        ranked = int((wide.max(axis=0) > 0).sum())
        if ranked < 2:
            rows.append({"category": cat, "pairs": 0, "reversed_pairs": 0, "ranked": ranked, "preserved": "n/a"})
            continue
        names = list(wide.columns)
        rev = 0
        pairs = 0
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                diff = np.sign(wide[names[i]].to_numpy() - wide[names[j]].to_numpy())
                pairs += 1
                rev += int((diff > 0).any() and (diff < 0).any())
        rows.append({"category": cat, "pairs": pairs, "reversed_pairs": rev, "ranked": ranked, "preserved": rev == 0})
    return pd.DataFrame(rows, columns=["category", "pairs", "reversed_pairs", "ranked", "preserved"])


def summary_lines(results: Sequence[CorpusResult], floor: Mapping[str, Any] | None = None,
                  deterministic: Sequence[str] = ("greedy", "beam4"),
                  controls: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Plain-language findings of a run, computed from its numbers (the notebook prints them as Markdown).

    Compares the deterministic corpora (``deterministic`` names present in ``results``) with the
    others on template diversity, vocabulary kept, category counts and WAE_pred; says how many reference words
    are sex-associated after BH (the only words that can be erased); states what the collapse floor
    (:func:`collapse_floor`) says about CAD's power here; and, with ``controls`` (:func:`erasure_controls`),
    what the planted and the halving controls found.
    """
    by = {r.name: r for r in results}
    det = [n for n in deterministic if n in by]
    sto = [n for n in by if n not in det]
    voc = vocabulary_transitions(results).set_index("corpus")
    lines = []

    def td(n: str) -> float:
        return 100 * float(by[n].diversity_pred.set_index("metric")["estimate"].get("template_diversity", math.nan))

    def rng(names: Sequence[str], f: Any, fmt: str = "{:.0f}") -> str:
        vals = [f(n) for n in names]
        lo, hi = min(vals), max(vals)
        return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"

    if det and sto:
        lines.append(f"**Template collapse.** Deterministic decoding ({', '.join(det)}) writes "
                     f"{rng(det, td)}% distinct reports and uses "
                     f"{rng(det, lambda n: 100 * voc.loc[n, 'pred_share_of_ref'])}% "
                     f"of the reference vocabulary; sampling ({', '.join(sto)}) writes {rng(sto, td)}% distinct reports "
                     f"with {rng(sto, lambda n: 100 * voc.loc[n, 'pred_share_of_ref'])}% of the vocabulary and "
                     f"{rng(sto, lambda n: voc.loc[n, 'emergent'])} words never seen in the references.")
    cats = {n: by[n].category_counts() for n in by}
    lines.append("**CAD categories at p\\* = {:g}.** ".format(float(results[0].association.params.get("p_star", 0.05)))
                 + "; ".join(f"{n}: {c['Erasure']} erased by the paper's test ({c[SILENCE_ERASURE]} by the silence "
                             f"test), {c['New Bias']} new bias, {c['Bias Flip']} flipped" for n, c in cats.items()) + ".")
    wae = {n: by[n].wae.set_index("metric").loc["WAE_pred"] for n in by}
    lines.append("**WAE (pred).** " + "; ".join(
        f"{n}: {format_ci(w['estimate'], w['low'], w['high'])} (permutation p = {format_number(w['perm_pvalue'])})"
        for n, w in wae.items()) + ". WAE ≈ 1 is the noise floor (no more displacement than sampling noise).")
    w0 = results[0].association.words
    if "ref_associated" in w0:
        n_assoc, n_strong, V = int(w0["ref_associated"].sum()), int((w0["z_ref"].abs() > 2.0).sum()), len(w0)
        n_studies = int(sum(results[0].association.n_reports.values()))
        lines.append(
            f"**Is there anything to erase?** Of the {V} words of these {n_studies} studies' references, {n_strong} pass "
            f"the paper's |z_ref| > 2 (about {0.05 * V:.0f} would by chance alone), and {n_assoc} survive "
            "Benjamini–Hochberg over the vocabulary: "
            + ("a word that is not sex-associated in the references cannot be erased, so these references cannot show "
               "erasure at all, and every Erasure count of this run is *not shown* for that reason (no power), not evidence "
               "of no erasure." if n_assoc == 0 else
               f"only these {n_assoc} can count as erased ({', '.join(sorted(w0.loc[w0['ref_associated'], 'word'])[:10])}"
               f"{' …' if n_assoc > 10 else ''})."))
    if controls is not None and "planted" in controls:
        pc, nc = controls["planted"], controls["negative"]
        found = pc["value"] <= pc["p_star"]
        lines.append(
            f"**Planted control.** '{pc['phrase']}' was added to {pc['mentions']} of the {pc['n_target']} "
            f"{pc['target']} references ({100 * pc['share']:.0f}%) and every study given the normal template: the silence "
            f"test calls {len(pc['erased'])} of the {len(pc['planted_words'])} planted words erased "
            f"({'found' if found else 'not found'}: largest p {pc['value']:.2g}, 95% CI "
            f"[{pc['low']:.2g}, {pc['high']:.2g}], needs ≤ {pc['p_star']:g}), the paper's test "
            f"{len(pc['paper_flags'])}." + ("" if pc["enough"] else " This preset has too few studies for a planted "
                                              "association to survive BH with margin."))
        lines.append(
            f"**Negative control.** In {nc['alarms']} of {nc['n_halvings']} random halvings of the references (one half "
            f"as the predictions of the other) a test flagged an erased word (95% CI [{nc['low']:.2g}, "
            f"{nc['high']:.2g}] for the share, needs ≤ {nc['p_star']:g}); a half held {nc['mean_reference_associated']:.2f} "
            "BH-associated words on average.")
    if floor is not None:
        silence = floor.get(SILENCE_ERASURE, 0)
        lines.append(
            f"**One template, unplanted (descriptive).** If every one of these {floor['n_reports']} studies got the same "
            "normal template, the "
            f"paper's test would flag {floor.get('Erasure', 0)} erased words and the silence test {silence}. The paper's "
            "test cannot flag a word the model never writes, at any sample size (its predicted count is 0, so its "
            "variance is the smoothing floor 2/α and the displacement cannot reach significance): a template erases "
            "words by leaving them out, so the paper's count is a floor and the silence test's is the one to read"
            + (". The silence test flags nothing even here: these references hold no sex-associated word frequent "
               "enough to detect its loss, so zeros mean *no power*, not *no erasure*." if silence == 0 else "."))
    return lines


def controls_table(controls: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The erasure controls (:func:`erasure_controls`) as a table a reader can scan: one row per control with its
    value and interval (``estimate``/``low``/``high``, NaN where the control has none, e.g. the collapse floor) and
    every other entry as ``name value`` in ``details`` (lists joined with commas, an empty list as ``none``). The
    ``flagged`` word lists stay in ``manifest.json``. Replaces the raw dict the notebook used to show."""
    rows = []
    for name, entry in controls.items():
        entry = dict(entry or {})
        entry.pop("flagged", None)
        est, low, high = (entry.pop(k, math.nan) for k in ("value", "low", "high"))
        details = []
        for key, value in entry.items():
            if isinstance(value, (list, tuple, set)):
                text = ", ".join(map(str, value)) or "none"
            elif isinstance(value, bool):
                text = "yes" if value else "no"
            elif isinstance(value, float):
                text = f"{value:.3g}"
            elif value is None or value == "":
                continue
            else:
                text = str(value)
            details.append(f"{key.replace('_', ' ')}: {text}")
        rows.append({"control": name, "estimate": est, "low": low, "high": high, "details": "; ".join(details)})
    return pd.DataFrame(rows, columns=["control", "estimate", "low", "high", "details"])
