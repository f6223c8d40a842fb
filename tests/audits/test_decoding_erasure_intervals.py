"""Issue 42: a 95% CI beside ΔDIR, WEAT S/ES, ΔWAE and the diversity pair in decoding_erasure's Table 1, Table 2 and
Fig. 2c (radaudit.audits.decoding_erasure.intervals), with hand-computed replicates and the report-table rule of
radaudit.tables.missing_intervals."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from test_decoding_erasure import FAST, HashEncoder, planted_corpus  # pytest puts tests/audits on sys.path

from radaudit.audits import decoding_erasure as de
from radaudit.audits.decoding_erasure import intervals as iv
from radaudit.audits.decoding_erasure import tables as det
from radaudit.metrics.dir import delta_dir
from radaudit.metrics.weat import weat_from_vectors
from radaudit.stats import interval_from_replicates, resample_weights
from radaudit.tables import NO_INTERVAL, format_ci, missing_intervals

CI = r"-?\d+\.\d\d \[(?:-?\d+\.\d\d, -?\d+\.\d\d|n/a)\]"
"""One number with its interval, as format_ci writes it ("[n/a]": tried, could not be formed)."""

# ---------------------------------------------------------------------------------------------
# ΔDIR


def test_delta_dir_replicate_by_hand_on_a_fixed_resample():
    # three reports: F, F, M; tokens (reference) 2, 4, 3 and (prediction) 1, 1, 3
    t_ref, t_pred = np.array([2.0, 4.0, 3.0]), np.array([1.0, 1.0, 3.0])
    is_m, is_f = np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0])
    # the data: DIR(ref) = 3 / 6 = 0.5, DIR(pred) = 3 / 2 = 1.5, ΔDIR = 1.0
    assert iv.delta_dir_weighted(t_ref, t_pred, is_m, is_f, np.ones(3)) == 1.0
    # a stratified resample: report 0 drawn twice for the two F slots, report 2 for the M slot
    #   DIR*(ref) = 3 / (2 + 2) = 0.75, DIR*(pred) = 3 / (1 + 1) = 1.5, ΔDIR* = 0.75
    w = np.array([[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(iv.delta_dir_weighted(t_ref, t_pred, is_m, is_f, w), [0.75, 1.0])
    # the jackknife without report 0, group sizes held (n_M = 1, n_F = 2): F's mean is report 1's alone, 4
    #   DIR(ref) = (1 · 3/1) / (2 · 4/1) = 0.375, DIR(pred) = (1 · 3/1) / (2 · 1/1) = 1.5, ΔDIR = 1.125
    jack = np.array([0.0, 1.0, 1.0])
    assert iv.delta_dir_weighted(t_ref, t_pred, is_m, is_f, jack, hold_sizes=True) == pytest.approx(1.125)
    assert iv.delta_dir_weighted(t_ref, t_pred, is_m, is_f, np.ones(3), hold_sizes=True) == pytest.approx(1.0)
    # per report: mean lengths, (3/1) / (6/2) = 1 and (3/1) / (2/2) = 3 -> ΔDIR = 2
    assert iv.delta_dir_weighted(t_ref, t_pred, is_m, is_f, np.ones(3), per_report=True) == pytest.approx(2.0)


def test_delta_dir_interval_is_the_stats_interval_of_stratified_report_resamples():
    refs = ["a b", "a b c d", "a b c", "a", "a b c d e", "a b"]
    preds = ["a", "a", "a b c", "a b", "a b c", "a b c d"]
    sex = ["F", "F", "M", "F", "M", "M"]
    est = delta_dir(refs, preds, sex, tokenize=str.split).delta
    ci = iv.delta_dir_interval(refs, preds, sex, numerator="M", denominator="F", estimate=est, n_bootstrap=200,
                               seed=7, tokenize=str.split)
    # the same draws, counted by hand: each replicate keeps 3 F and 3 M reports, and its ΔDIR is the plain token ratio
    # of the reports it drew (no weights, no scale)
    tr, tp = np.array([len(t.split()) for t in refs]), np.array([len(t.split()) for t in preds])
    m = np.array([s == "M" for s in sex])
    W = next(resample_weights(6, 200, seed=7, strata=m.astype(int)))
    assert (W[:, ~m].sum(axis=1) == 3).all() and (W[:, m].sum(axis=1) == 3).all()
    reps = np.array([(w[m] @ tp[m]) / (w[~m] @ tp[~m]) - (w[m] @ tr[m]) / (w[~m] @ tr[~m]) for w in W])
    # the jackknife holds the group sizes (n_M / n_F = 1 here): leaving report i out gives the ratio of the mean
    # lengths of the other reports, i.e. delta_dir's per-report form without report i
    jack = np.array([delta_dir([r for j, r in enumerate(refs) if j != i], [p for j, p in enumerate(preds) if j != i],
                               [s for j, s in enumerate(sex) if j != i], tokenize=str.split, per_report=True).delta
                     for i in range(6)])
    want = interval_from_replicates(est, reps, jack, "bca", 0.95, 6, "ΔDIR", 0.1)
    assert ci["method"] == "bca" and ci["n_bootstrap"] == 200 and ci["n_units"] == 6
    # the same replicates (z0 counts ties with the estimate: equal to the last bit); the jackknife to rounding
    assert (ci["low"], ci["high"]) == pytest.approx((want.low, want.high), rel=1e-12)
    assert ci["low"] <= est <= ci["high"] and ci["low"] < ci["high"]
    # seeded from params: the same seed gives the same interval, another seed another one
    again = iv.delta_dir_interval(refs, preds, sex, numerator="M", denominator="F", estimate=est, n_bootstrap=200,
                                  seed=7, tokenize=str.split)
    assert again == ci
    other = iv.delta_dir_interval(refs, preds, sex, numerator="M", denominator="F", estimate=est, n_bootstrap=200,
                                  seed=8, tokenize=str.split)
    assert (other["low"], other["high"]) != (ci["low"], ci["high"])


def test_delta_dir_interval_falls_back_and_says_so():
    refs, preds = ["a b", "a b c", "a"], ["a", "a b", "a b c"]
    est = delta_dir(refs, preds, ["F", "F", "M"], tokenize=str.split).delta
    one_m = iv.delta_dir_interval(refs, preds, ["F", "F", "M"], numerator="M", denominator="F", estimate=est,
                                  n_bootstrap=50, tokenize=str.split)
    assert one_m["method"] == "percentile"  # the lone M report has no leave-one-out mean: no BCa
    assert math.isfinite(one_m["low"])
    off = iv.delta_dir_interval(refs, preds, ["F", "F", "M"], numerator="M", denominator="F", estimate=est,
                                n_bootstrap=0, tokenize=str.split)
    assert math.isnan(off["low"]) and off["n_bootstrap"] == 0
    undefined = iv.delta_dir_interval(refs, preds, ["F", "F", "M"], numerator="M", denominator="F", estimate=math.nan,
                                      n_bootstrap=50, tokenize=str.split)
    assert math.isnan(undefined["high"])


# ---------------------------------------------------------------------------------------------
# WEAT


def test_weat_replicates_by_hand():
    # test_weat's 2-d vectors: s_x = {1, 0}, s_y = {-1, -1}; S = 3, ES = 1.5 / 0.829156 (ddof 0)
    X, Y = np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[0.0, 1.0], [-1.0, 0.0]])
    res = weat_from_vectors(X, Y, np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))
    S, ES = iv.weat_replicates(res.s_x, res.s_y, n_x=2, n_y=2)
    assert S[0] == pytest.approx(res.statistic) == pytest.approx(3.0)
    assert ES[0] == pytest.approx(res.effect_size) == pytest.approx(1.5 / math.sqrt(0.6875))
    # a resample drawing X's first word twice: S* = 2·1 − 2·(−1) = 4, ES* = (1 − (−1)) / std{1, 1, −1, −1} = 2
    S, ES = iv.weat_replicates([[1.0, 1.0]], [[-1.0, -1.0]], n_x=2, n_y=2)
    assert (S[0], ES[0]) == pytest.approx((4.0, 2.0))
    # the jackknife without X's first word, sizes held: S = 2·0 − 2·(−1) = 2, ES = 1 / std{0, −1, −1} = 1 / 0.4714
    S, ES = iv.weat_replicates([0.0], [-1.0, -1.0], n_x=2, n_y=2)
    assert (S[0], ES[0]) == pytest.approx((2.0, 1 / math.sqrt(2 / 9)))


def test_weat_interval_resamples_words_within_each_set():
    s_x, s_y = np.array([1.0, 0.0]), np.array([-1.0, -1.0])
    ci = iv.weat_interval(s_x, s_y, statistic=3.0, effect_size=1.5 / math.sqrt(0.6875), n_bootstrap=300, seed=3)
    # within sets, the mean of X* is 0, 0.5 or 1 and Y* is always −1: S* ∈ {2, 3, 4}; a draw across sets would give
    # S* down to 2·(−1) − 2·(−1) = 0
    assert 2.0 <= ci["S"]["low"] <= 3.0 <= ci["S"]["high"] <= 4.0
    assert ci["S"]["n_units"] == 4 and ci["ES"]["n_bootstrap"] == 300
    assert ci == iv.weat_interval(s_x, s_y, statistic=3.0, effect_size=1.5 / math.sqrt(0.6875), n_bootstrap=300, seed=3)
    single = iv.weat_interval([0.4], [0.1, -0.2], statistic=0.5, effect_size=1.0, n_bootstrap=50)
    assert single["S"]["method"] == "percentile"  # leaving X's only word out empties X: no BCa


# ---------------------------------------------------------------------------------------------
# the tables: every estimate carries its interval (radaudit.tables.missing_intervals)

TABLES = ("table1_long", "table1_strategies", "table2_long", "table2_systems", "fig2c_skew_sensitivity")


def _declared_without_gaps(key: str) -> tuple[set[str], set[str]]:
    """NO_INTERVAL's declarations for ``decoding_erasure/<key>`` once the issue-42 gap entries are deleted."""
    cols, rows = set(), set()
    for d in NO_INTERVAL.get(f"decoding_erasure/{key}", ()):
        if not d.gap:
            cols.update(d.columns)
            rows.update(d.rows)
    return cols, rows


@pytest.fixture(scope="module")
def corpora():
    with warnings.catch_warnings():  # a relabelling can leave a group without associated words (counted in the table)
        warnings.filterwarnings("ignore", message=".*relabellings", category=RuntimeWarning)
        erased = de.evaluate_corpus(planted_corpus(), name="greedy", encoder=HashEncoder(), **FAST)
        sampled = de.evaluate_corpus(planted_corpus(seed=1), name="skew 0.5 · rich", encoder=HashEncoder(), **FAST)
    return erased, sampled


def test_tables_carry_an_interval_beside_every_estimate(corpora):
    erased, sampled = corpora
    built = {"table1_long": de.strategy_table_long([erased, sampled]),
             "table1_strategies": de.strategy_table([erased, sampled]).reset_index(),
             "table2_long": de.strategy_table_long([erased]),
             "table2_systems": de.system_table([erased, sampled]),
             "fig2c_skew_sensitivity": de.skew_table({0.5: [sampled]})}
    for key, table in built.items():
        cols, rows = _declared_without_gaps(key)
        assert missing_intervals(table, descriptive=cols & set(table.columns), descriptive_rows=rows) == [], key
    wide = built["table1_strategies"].set_index("metric")
    for label in ("ΔDIR", "ΔWAE (pred)"):
        assert re.fullmatch(CI, wide.loc[label, "greedy"]), wide.loc[label, "greedy"]
    # a combined cell carries an interval for EACH number (the rule of missing_intervals alone would let
    # "0.35 [0.1, 0.6] / 0.66" pass)
    for cell in (wide.loc["WEAT (S/ES)", "greedy"], *built["table2_systems"].set_index("metric").loc[
            ["WEAT (S/ES)", "Div. (Temp./Sem. %)"]].to_numpy().ravel()):
        assert re.fullmatch(rf"{CI} / {CI}", cell), cell
    fig2c = built["fig2c_skew_sensitivity"].set_index("metric")
    assert fig2c.loc["WEAT ES", "low"] <= fig2c.loc["WEAT ES", "estimate"] <= fig2c.loc["WEAT ES", "high"]


def test_the_check_fails_on_the_old_cells(corpora):
    erased, sampled = corpora
    wide = de.strategy_table([erased, sampled]).reset_index()
    old = wide.copy()
    at = old["metric"] == "ΔDIR"
    old.loc[at, "greedy"] = f"{erased.dir['delta_dir']:.2f}"  # the bare number the table printed before issue 42
    assert missing_intervals(old) == ["greedy"]
    sys2 = de.system_table([erased])
    sys2.loc[sys2["metric"] == "WEAT (S/ES)", "greedy"] = "0.35/0.66"
    assert missing_intervals(sys2) == ["greedy"]


def test_table_numbers_are_the_estimates_and_their_intervals(corpora):
    erased, _ = corpora
    long = de.strategy_table_long([erased]).set_index("metric")
    wp = erased.weat.set_index("side").loc["pred"]
    d = erased.dir
    # estimates unchanged: ΔDIR is delta_dir's, WEAT's S is weat's
    df = planted_corpus()
    assert d["delta_dir"] == delta_dir(df["reference"], df["prediction"], df["group"], numerator="M",
                                       denominator="F").delta
    assert long.loc["ΔDIR", "estimate"] == d["delta_dir"]
    assert (long.loc["ΔDIR", "low"], long.loc["ΔDIR", "high"]) == (d["delta_dir_low"], d["delta_dir_high"])
    assert d["delta_dir_low"] <= d["delta_dir"] <= d["delta_dir_high"] and d["delta_dir_ci_method"] == "bca"
    assert long.loc["WEAT (S/ES)", "cell"] == (f"{format_ci(wp['S'], wp['S_low'], wp['S_high'])} / "
                                               f"{format_ci(wp['ES'], wp['ES_low'], wp['ES_high'])}")
    assert wp["S_low"] <= wp["S"] <= wp["S_high"] and wp["ES_low"] <= wp["ES"] <= wp["ES_high"]
    div = erased.diversity_pred.set_index("metric")
    pair = det.diversity_pair_cell(erased.diversity_pred)
    assert pair.split(" / ")[1] == format_ci(*(100 * div.loc["semantic_diversity", k] for k in ("estimate", "low", "high")))


def test_an_interval_that_could_not_be_formed_says_so(corpora):
    erased, _ = corpora
    wae = erased.wae.copy()
    wae.loc[wae["metric"] == "delta_WAE_pred", ["low", "high"]] = math.nan  # e.g. too many undefined replicates
    r = dataclasses.replace(erased, association=dataclasses.replace(erased.association, wae=wae))
    cell = de.strategy_table([r]).loc[("Fairness", "ΔWAE (pred)"), "greedy"]
    assert re.fullmatch(r"-?\d+\.\d\d \[n/a\]", cell), cell
    no_weat = pd.Series({"S": math.nan, "ES": math.nan})
    assert det.weat_cell(no_weat) == "n/a / n/a"


@pytest.mark.filterwarnings("ignore:.*relabellings:RuntimeWarning")
def test_same_params_and_seed_give_the_same_tables(corpora):
    erased, _ = corpora
    again = de.evaluate_corpus(planted_corpus(), name="greedy", encoder=HashEncoder(), **FAST)
    assert de.strategy_table_long([again]).to_csv() == de.strategy_table_long([erased]).to_csv()
    assert de.system_table([again]).to_csv() == de.system_table([erased]).to_csv()
    other = de.evaluate_corpus(planted_corpus(), name="greedy", encoder=HashEncoder(), **{**FAST, "seed": 1})
    assert other.dir["delta_dir"] == erased.dir["delta_dir"]  # the estimate does not depend on the seed
    assert (other.dir["delta_dir_low"], other.dir["delta_dir_high"]) != (erased.dir["delta_dir_low"],
                                                                       erased.dir["delta_dir_high"])
