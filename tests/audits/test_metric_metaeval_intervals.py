"""Issue 42 for metric_metaeval: a 95% CI beside every estimate of Tables 4/5 (per cell), of the context ablation's
AUROC change, and of the monotonicity summary's τ of the group means and pooled τ. Each replicate checked by hand on
a tiny input; the draws are the documented ones of radaudit.stats (replicate r = the r-th
``default_rng(seed).integers(0, n, n)``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from radaudit.audits import metric_metaeval as mm
from radaudit.audits.metric_metaeval import scores as S
from radaudit.stats import bootstrap_ci, stable_seed
from radaudit.tables import missing_intervals


def _row(metric, aspect, error_type, significance, score, *, pair, study="s", group=None, rule=None, hib=True):
    return {"pair_id": pair, "study_id": study, "source": "x", "aspect": aspect, "error_type": error_type,
            "significance": significance, "rule": rule or f"{aspect}_{significance}_{error_type}", "group": group,
            "metric": metric, "score": score, "score_100": 100 * score, "higher_is_better": hib}


def _frame(rows):
    df = pd.DataFrame(rows)
    df["group"] = df["group"].astype("Int64")
    return df


# ----------------------------------------------------------------------------- Tables 4/5: per-cell CIs


def test_cell_and_overall_replicates_by_hand():
    """Pairs 10, 20 (column A) and 30, 40, 50 (column B). Seed 1 draws pairs [2, 2, 3, 4, 0] first: A holds {10}
    -> 10, B holds {30, 30, 40, 50} -> 37.5, Overall = the mean of the cells present = (10 + 37.5) / 2 = 23.75."""
    assert np.random.default_rng(1).integers(0, 5, 5).tolist() == [2, 2, 3, 4, 0]
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    columns = np.array(["A", "A", "B", "B", "B"], dtype=object)
    labels, cells, overall = mm.dsrs_replicates(values, columns, n_bootstrap=40, seed=1)
    assert labels == ["A", "B"] and cells.shape == (40, 2)
    assert cells[0].tolist() == [10.0, 37.5] and overall[0] == 23.75
    # with rules, a cell is the mean of its rules' means: B's draw {30 (r), 30 (r), 40 (s), 50 (s)} -> (30 + 45) / 2
    _, cells_r, overall_r = mm.dsrs_replicates(values, columns, np.array(["q", "q", "r", "s", "s"], dtype=object),
                                               n_bootstrap=40, seed=1)
    assert cells_r[0].tolist() == [10.0, 37.5] and overall_r[0] == 23.75
    # a replicate that draws no pair of a column has no value there; Overall is then the other column's
    gone = np.flatnonzero(np.isnan(cells[:, 0]))
    assert gone.size and np.allclose(overall[gone], cells[gone, 1])
    # Overall is the mean of the cells on every replicate: one draw shared by all
    np.testing.assert_allclose(overall, np.nanmean(cells, axis=1), rtol=0, atol=1e-12)


def _table_rows():
    """One metric, significant pairs in two columns (Location O: 4 pairs of two rules; Neg. S: 3 pairs) and one
    single-pair column (Noise S)."""
    rows = []
    for i, (v, rule) in enumerate([(0.2, "flip"), (0.4, "flip"), (0.5, "zone"), (0.9, "zone")]):
        rows.append(_row("m", "location", "omission", "significant", v, pair=f"l{i}", rule=rule))
    for i, v in enumerate([0.1, 0.3, 0.8]):
        rows.append(_row("m", "negation", "fabrication", "significant", v, pair=f"n{i}"))
    rows.append(_row("m", "noise", "inaccuracy", "significant", 0.6, pair="z0"))
    rows.append(_row("m", "location", "omission", "insignificant", 0.7, pair="i0"))
    rows.append(_row("m", "location", "omission", "insignificant", 0.75, pair="i1"))
    return rows


def test_ds_rs_long_cells_come_from_the_overall_draw_and_overall_is_unchanged():
    df = _frame(_table_rows())
    long = mm.ds_rs_long(df, n_bootstrap=200, seed=3)
    ds = long[long["score"] == "DS"].set_index("column")
    sig = df[df["significance"] == "significant"].assign(
        column=lambda d: [mm.column_key(a, e) for a, e in zip(d["aspect"], d["error_type"])])
    vals, cols, rules = sig["score_100"].to_numpy(float), sig["column"].to_numpy(), sig["rule"].to_numpy()
    seed = stable_seed(3, "dsrs", "m", "significant", "Overall")
    # Overall: exactly the interval bootstrap_ci gave before issue 42 (same draws, same statistic)
    before = bootstrap_ci((vals, S._codes(cols), S._codes(rules)), S._overall_resamples, n_bootstrap=200,
                          method="percentile", seed=seed, vectorized=True)
    assert (ds.at["Overall", "low"], ds.at["Overall", "high"]) == (before.low, before.high)
    # a cell: the percentile interval of its replicates on those same draws (replicates without the cell left out)
    labels, cells, overall = mm.dsrs_replicates(vals, cols, rules, n_bootstrap=200, seed=seed)
    np.testing.assert_array_equal(overall, before.replicates)
    for col in ("Location O", "Neg. S"):
        r = cells[:, labels.index(col)]
        lo, hi = np.quantile(r[np.isfinite(r)], [0.025, 0.975])
        assert (ds.at[col, "low"], ds.at[col, "high"]) == pytest.approx((lo, hi), abs=1e-12)
        assert ds.at[col, "low"] <= ds.at[col, "estimate"] <= ds.at[col, "high"]
    # the estimates did not change: Location O over rules (30 + 70) / 2, Neg. S (10 + 30 + 80) / 3
    assert ds.at["Location O", "estimate"] == pytest.approx(50.0)
    assert ds.at["Neg. S", "estimate"] == pytest.approx(40.0)
    assert math.isnan(ds.at["Noise S", "low"])  # one pair: no interval
    # same params + seed -> same table; another seed -> other bounds
    pd.testing.assert_frame_equal(long, mm.ds_rs_long(df, n_bootstrap=200, seed=3))
    other = mm.ds_rs_long(df, n_bootstrap=200, seed=4).set_index(["score", "column"])
    assert other.at[("DS", "Location O"), "low"] != ds.at["Location O", "low"]


def test_score_tables_carry_an_interval_in_every_cell():
    long = mm.ds_rs_long(_frame(_table_rows()), n_bootstrap=50, seed=0)
    t4, t5 = mm.score_table(long, "DS"), mm.score_table(long, "RS")
    assert missing_intervals(t4) == [] and missing_intervals(t5) == []
    row = long.set_index(["score", "column"]).loc[("DS", "Neg. S")]
    assert t4.at[0, "Neg. S"] == f"40.00 [{row['low']:.2f}, {row['high']:.2f}]"
    assert t4.at[0, "Noise S"] == "60.00 [n/a]"
    # the pre-issue layout (bare numbers in the cells) is what the check flags (+0.25: whole numbers read as counts)
    old = t4.assign(**{c: [float(x.split(" ")[0]) + 0.25 for x in t4[c]] for c in ("Location O", "Neg. S", "Noise S")})
    assert missing_intervals(old) == ["Location O", "Neg. S", "Noise S"]


# ----------------------------------------------------------------------------- the context ablation's change


def _ablation(full_scores):
    """Significant pairs a, b and insignificant c, d. Paper design: insignificant scored low (trimmed);
    full design: ``full_scores``."""
    paper = [("a", "significant", 0.5), ("b", "significant", 0.7), ("c", "insignificant", 0.1),
             ("d", "insignificant", 0.6)]
    mk = lambda triples: _frame([_row("m", "location", "omission", s, v, pair=p)  # noqa: E731
                                 for p, s, v in triples])
    full = [(p, s, v) for (p, s, _), v in zip(paper, full_scores)]
    return mk(paper), mk(full)


def test_auroc_change_replicate_by_hand():
    """Paper: insignificant {0.1, 0.6} vs significant {0.5, 0.7}: 1 of 4 (0.6 > 0.5) -> AUROC 0.25. Full:
    insignificant {0.8, 0.9} vs significant {0.5, 0.7}: 4 of 4 -> 1. Change 0.75. The resample [a, c, d, d]
    (pairs 0, 2, 3, 3): paper 0.1, 0.6, 0.6 vs 0.5 -> 2 of 3; full all above -> 1; change 1/3."""
    paper, full = _ablation([0.5, 0.7, 0.8, 0.9])
    ch = mm.auroc_change(paper, full, n_bootstrap=200, seed=0).set_index("metric")
    assert ch.at["m", "change"] == pytest.approx(0.75) and ch.at["m", "n_pairs"] == 4
    s_p = np.array([0.5, 0.7, 0.1, 0.6])
    s_f = np.array([0.5, 0.7, 0.8, 0.9])
    lab = np.array([False, False, True, True])
    idx = np.array([[0, 2, 3, 3]])
    assert S._auroc_change_resamples(s_p[idx], s_f[idx], lab[idx])[0] == pytest.approx(1 / 3)
    assert S._auroc_change_one(s_p[idx[0]], s_f[idx[0]], lab[idx[0]]) == pytest.approx(1 / 3)
    # the interval is the BCa interval of those replicates over the pairs (ids sorted: a, b, c, d)
    ref = bootstrap_ci((s_p, s_f, lab), S._auroc_change_one, n_bootstrap=200, method="bca",
                       seed=stable_seed(0, "auroc_change", "m"), max_failed=0.5)
    assert (ch.at["m", "change_low"], ch.at["m", "change_high"]) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert ch.at["m", "change_low"] <= 0.75 <= ch.at["m", "change_high"]


def test_auroc_change_is_paired():
    """The same scores in both designs: each replicate's two AUROCs are computed on the same resampled pairs, so the
    difference is 0 on every replicate and the CI is [0, 0]; two separate bootstraps would give a wide one."""
    rows = [_row("m", "negation", "omission", "significant" if i % 2 else "insignificant", v, pair=f"p{i}")
            for i, v in enumerate(np.random.default_rng(0).random(30))]
    same = _frame(rows)
    ch = mm.auroc_change(same, same, n_bootstrap=100, seed=0).iloc[0]
    assert (ch["change"], ch["change_low"], ch["change_high"]) == (0.0, 0.0, 0.0)
    au = mm.auroc_table(same, n_bootstrap=100)
    assert au.iloc[-1]["high"] - au.iloc[-1]["low"] > 0.2  # each AUROC alone is uncertain


def test_auroc_change_with_undefined_scores_and_the_ablation_table():
    """A NaN in the full design (left out there, as auroc_table does) takes the one-resample-at-a-time path, on the
    same draws; the change is the tables' change, and the ablation table carries its interval."""
    paper = _frame([_row("m", "location", "omission", "significant" if i < 6 else "insignificant", v, pair=f"p{i}")
                    for i, v in enumerate([0.5, 0.7, 0.2, 0.4, 0.6, 0.3, 0.1, 0.6, 0.35, 0.8, 0.2, 0.45])])
    full = paper.assign(score=lambda d: np.where(d["significance"] == "insignificant", d["score"] + 0.3, d["score"]))
    full.loc[full["pair_id"] == "p7", "score"] = np.nan
    full["score_100"] = 100 * full["score"]
    au_p, au_f = mm.auroc_table(paper, n_bootstrap=100), mm.auroc_table(full, n_bootstrap=100)
    ch = mm.auroc_change(paper, full, n_bootstrap=100, seed=0)
    comp = mm.context_comparison(au_p, au_f, change=ch)
    row = comp.iloc[0]
    assert row["change"] == pytest.approx(ch.iloc[0]["change"])
    assert row["change_low"] <= row["change"] <= row["change_high"] and row["change_high"] > row["change_low"]
    assert list(comp.columns[-4:]) == ["change", "change_low", "change_high", "shares_verifier"]
    assert missing_intervals(comp, descriptive=("p_adj_paper", "p_adj_full")) == []
    assert missing_intervals(mm.context_comparison(au_p, au_f), descriptive=("p_adj_paper", "p_adj_full")) == ["change"]
    with pytest.raises(Exception, match="significant in one design"):
        mm.auroc_change(paper, full.assign(significance="significant"))


# ----------------------------------------------------------------------------- monotonicity: τ of means, pooled τ


def _mono_rows():
    """Report r1 falls at every step (0.9, 0.8, 0.7); report r2 rises then falls (0.6, 0.7, 0.5)."""
    rows = []
    for study, vals in (("r1", (0.9, 0.8, 0.7)), ("r2", (0.6, 0.7, 0.5))):
        for g, v in enumerate(vals):
            rows.append(_row("m", "stylistic", "inaccuracy", "insignificant", v, pair=f"{study}{g}", study=study,
                             group=g))
    return rows


def test_tau_replicates_by_hand():
    """Reports drawn {r1, r1}: means (0.9, 0.8, 0.7) fall at every step, τ = 1. {r2, r2}: means (0.6, 0.7, 0.5):
    groups 0-1 discordant, 0-2 and 1-2 concordant: τ = (2 − 1) / 3. {r1, r2}: means (0.75, 0.75, 0.6): one tie in
    the means, two concordant pairs: τ_b = 2 / √(3 · 2). The pooled τ is τ_b over the drawn rows, copies included
    (scipy on the rows written out)."""
    df = _frame(_mono_rows())
    g, s, st = df["group"].to_numpy(float), df["score"].to_numpy(float), df["study_id"].to_numpy()
    reps = mm.monotonicity_replicates(g, s, st, n_bootstrap=12, seed=1)
    draws = np.random.default_rng(1).integers(0, 2, size=(12, 2))  # replicate r: the r-th integers(0, 2, 2)
    by_hand = {(0, 0): 1.0, (1, 1): 1 / 3, (0, 1): 2 / math.sqrt(6)}
    assert {tuple(sorted(d)) for d in draws.tolist()} == set(by_hand)  # every case occurs
    for r, d in enumerate(draws.tolist()):
        assert reps["tau_of_means"][r] == pytest.approx(by_hand[tuple(sorted(d))])
        rows = np.concatenate([np.flatnonzero(st == ("r1", "r2")[k]) for k in d])
        assert reps["tau_pooled"][r] == pytest.approx(sps.kendalltau(g[rows], -s[rows]).statistic)
    # jackknife: leave r1 out -> r2 alone (τ_b 1/3); leave r2 out -> r1 alone (1)
    np.testing.assert_allclose(reps["tau_pooled_jackknife"], [1 / 3, 1.0])
    assert reps["tau_pooled_estimate"] == pytest.approx(sps.kendalltau(g, -s).statistic)


def test_monotonicity_summary_intervals():
    df = _frame(_mono_rows() + [
        {**r, "study_id": r["study_id"] + "x", "pair_id": r["pair_id"] + "x", "score": r["score"] - 0.05}
        for r in _mono_rows()])
    mono = mm.monotonicity_summary(df, n_bootstrap=300, seed=0).set_index("metric")
    row = mono.loc["m"]
    # the estimates are what they were: τ of the means (0.725, 0.725, 0.575) -> 2/√6, pooled τ_b with scipy
    assert row["tau_of_means"] == pytest.approx(2 / math.sqrt(6))
    assert row["tau_pooled"] == pytest.approx(sps.kendalltau(df["group"].astype(float), -df["score"]).statistic)
    for name in ("tau_of_means", "tau_pooled"):
        assert row[f"{name}_low"] <= row[name] <= row[f"{name}_high"]
        assert -1 <= row[f"{name}_low"] < row[f"{name}_high"] <= 1
    # percentile for τ of means: the 2.5% / 97.5% quantiles of its replicates (values from {1/3, 2/√6, 1, ...})
    reps = mm.monotonicity_replicates(df["group"].to_numpy(float), df["score"].to_numpy(float),
                                      df["study_id"].to_numpy(), n_bootstrap=300, seed=stable_seed(0, "tau_ci", "m"))
    r = reps["tau_of_means"][np.isfinite(reps["tau_of_means"])]
    assert (row["tau_of_means_low"], row["tau_of_means_high"]) == pytest.approx(tuple(np.quantile(r, [0.025, 0.975])))
    cols = list(mono.reset_index().columns)
    assert cols[cols.index("tau_of_means"):cols.index("tau_of_means") + 3] == [
        "tau_of_means", "tau_of_means_low", "tau_of_means_high"]
    assert cols[cols.index("tau_pooled"):cols.index("tau_pooled") + 3] == ["tau_pooled", "tau_pooled_low",
                                                                          "tau_pooled_high"]
    means = [c for c in cols if c.startswith("mean_g")]
    assert missing_intervals(mono.reset_index(), descriptive=means) == []
    pd.testing.assert_frame_equal(mono, mm.monotonicity_summary(df, n_bootstrap=300, seed=0).set_index("metric"))
