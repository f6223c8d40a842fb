"""Issue 42 for atomic_facts: a 95% bootstrap CI beside Fig. 4's granular P/R/F1 and beside the radiologists' mean
judgement per system; resampling unit: the report, ratios recomputed from resampled counts (micro)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import atomic_facts as af
from radaudit.stats import resample_indices
from radaudit.tables import missing_intervals

TRACE_COLUMNS = ["case_id", "candidate", "system", "direction", "level", "finding", "attribute", "expected", "match"]


def _questions(case: str, direction: str, matches: list[bool], facet: str = "location") -> list[tuple]:
    return [(case, "C1", "A", direction, "attribute", "pleural effusion", facet, "left", m) for m in matches]


def _trace() -> pd.DataFrame:
    """Three reports of system A, location questions (asked / matched):
    a: GT→INF 2/1, INF→GT 1/1;  b: GT→INF 1/0, INF→GT 2/1;  c: GT→INF 3/3, INF→GT 1/0.
    Report b also has one severity question each way (both matched); nobody else has a severity question."""
    rows = (_questions("a", "gt->inf", [True, False]) + _questions("a", "inf->gt", [True])
            + _questions("b", "gt->inf", [False]) + _questions("b", "inf->gt", [True, False])
            + _questions("c", "gt->inf", [True, True, True]) + _questions("c", "inf->gt", [False])
            + _questions("b", "gt->inf", [True], "severity") + _questions("b", "inf->gt", [True], "severity"))
    return pd.DataFrame(rows, columns=TRACE_COLUMNS)


def _seed_drawing(multiset: list[int], n: int) -> int:
    """A seed whose first bootstrap resample of ``n`` units (the engine's draw) is ``multiset`` in some order."""
    for seed in range(10_000):
        if sorted(next(resample_indices(n, 1, seed=seed))[0].tolist()) == sorted(multiset):
            return seed
    raise AssertionError("no seed draws that resample")


# ------------------------------------------------------------------------------------ granular P/R/F1 (Fig. 4)

def test_micro_prf_of_a_fixed_resample_hand_computed():
    tr = _trace().assign(_report=lambda d: d["case_id"] + "\x1f" + d["candidate"], category=lambda d: d["attribute"])
    counts = af.report_counts(tr, sorted(set(tr["_report"])), ["location", "severity"])
    # (asked GT->INF, matched GT->INF, asked INF->GT, matched INF->GT) per report, location
    assert counts[:, 0].tolist() == [[2, 1, 1, 1], [1, 0, 2, 1], [3, 3, 1, 0]]
    # the resample (a, a, c): weights (2, 0, 1); sums GT->INF 7 asked / 5 matched, INF->GT 3 / 2
    w = np.array([[2.0, 0.0, 1.0]])
    p, r, f = af.pooled_prf((w @ counts.reshape(3, -1)).reshape(1, 2, 4))
    assert p[0, 0] == pytest.approx(2 / 3) and r[0, 0] == pytest.approx(5 / 7)
    assert f[0, 0] == pytest.approx(2 * (2 / 3) * (5 / 7) / (2 / 3 + 5 / 7)) and f[0, 0] == pytest.approx(20 / 29)
    # micro, not the mean of per-report ratios: recall (1/2 + 1/2 + 3/3) / 3 = 2/3 would be the macro value
    assert r[0, 0] != pytest.approx(2 / 3)
    # severity: only b asks, and b was not drawn: undefined on this resample
    assert np.isnan(p[0, 1]) and np.isnan(r[0, 1]) and np.isnan(f[0, 1])
    # P = R = 0 gives F1 = 0, as the estimate's convention
    assert af.pooled_prf(np.array([2.0, 0.0, 3.0, 0.0]))[2] == 0.0


def test_granular_table_interval_is_the_engines_resample_recomputed():
    tr = _trace()
    seed = _seed_drawing([0, 0, 2], 3)  # reports sorted by id: a, b, c -> the resample (a, a, c)
    t = af.granular_table(tr, "attribute", n_bootstrap=1, method="percentile", seed=seed).set_index("category")
    loc = t.loc["location"]
    # the estimate (all three reports): P = 2/4, R = 4/6, F1 = 4/7; one replicate: its own interval
    assert (loc["precision"], loc["recall"], loc["f1"]) == pytest.approx((0.5, 2 / 3, 4 / 7))
    assert loc["precision_low"] == loc["precision_high"] == pytest.approx(2 / 3)
    assert loc["recall_low"] == loc["recall_high"] == pytest.approx(5 / 7)
    assert loc["f1_low"] == loc["f1_high"] == pytest.approx(20 / 29)
    assert loc["ci_method"] == "percentile"


def test_granular_intervals_bca_cover_the_estimate_and_leave_the_estimates_alone():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(40):  # 40 reports, 0-4 location questions each way
        for direction in ("gt->inf", "inf->gt"):
            rows += _questions(f"r{i:02d}", direction, (rng.random(rng.integers(0, 5)) < 0.7).tolist())
    tr = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    t = af.granular_table(tr, "attribute", n_bootstrap=400, seed=1)
    plain = af.granular_table(tr, "attribute", n_bootstrap=0)
    est = ["system", "category", "n_gt", "n_inf", "precision", "recall", "f1", "n"]
    pd.testing.assert_frame_equal(t[est], plain[est])  # the bootstrap does not touch the estimates
    assert plain[["precision_low", "f1_high"]].isna().all().all()
    loc = t.set_index("category").loc["location"]
    assert loc["ci_method"] == "bca"
    for s in ("precision", "recall", "f1"):
        assert loc[f"{s}_low"] < loc[s] < loc[f"{s}_high"]
        assert loc[f"{s}_high"] - loc[f"{s}_low"] < 0.5
    # the cells nobody asked about: no estimate, no interval
    assert t.set_index("category").loc["size", ["f1", "f1_low", "f1_high"]].isna().all()


def test_granular_cell_resting_on_one_report_has_no_interval():
    # severity questions come from report b alone: 1 resample in ~3 holds none of them, too many to bound
    t = af.granular_table(_trace(), "attribute", n_bootstrap=200, seed=0).set_index("category")
    sev = t.loc["severity"]
    assert sev["precision"] == 1.0 and math.isnan(sev["precision_low"]) and math.isnan(sev["f1_high"])
    assert pd.isna(sev["ci_method"])


def test_granular_table_reproducible_and_needs_report_ids():
    tr = _trace()
    a = af.granular_table(tr, "attribute", n_bootstrap=50, seed=7).to_csv(index=False)
    assert a == af.granular_table(tr.sample(frac=1, random_state=0), "attribute", n_bootstrap=50, seed=7).to_csv(index=False)
    # a different seed draws other resamples (the tiny 3-report trace could coincide; 40 reports do not)
    big = pd.concat([tr.assign(case_id=tr["case_id"] + str(k)) for k in range(10)], ignore_index=True)
    x = af.granular_table(big, "attribute", n_bootstrap=50, seed=7)
    y = af.granular_table(big, "attribute", n_bootstrap=50, seed=8)
    assert not x["recall_low"].equals(y["recall_low"])
    from radaudit.errors import ParamsError, RadauditError

    with pytest.raises(RadauditError, match="case_id"):
        af.granular_table(tr.drop(columns=["case_id"]), "attribute")
    with pytest.raises(ParamsError, match="method"):
        af.granular_table(tr, "attribute", method="normal")


def test_granular_table_has_no_estimate_without_its_interval():
    t = pd.concat([af.granular_table(_trace(), lvl, n_bootstrap=50).assign(level=lvl) for lvl in ("attribute", "disease")])
    back = pd.read_csv(io.StringIO(t.to_csv(index=False)))  # as missing_intervals_in_run reads the run's file
    assert missing_intervals(back) == []
    # the check could fail: the same table without its bounds lacks them
    assert missing_intervals(back.drop(columns=[c for c in back.columns if c.endswith(("_low", "_high"))])) == [
        "precision", "recall", "f1"]


# ------------------------------------------------------------------------------------ mean judgements per system

def _study() -> af.ReaderStudy:
    """gpt: reports a, b, c; medgemma: reports a, b, c (candidate C2); two radiologists each."""
    errors = {("a", "C1"): [0, 2], ("b", "C1"): [1, 1], ("c", "C1"): [4, 2],
              ("a", "C2"): [3, 3], ("b", "C2"): [5, 4], ("c", "C2"): [2, 2]}
    cands, judg = [], []
    for (case, cand), errs in errors.items():
        cands.append({"case_id": case, "candidate": cand, "system": {"C1": "gpt", "C2": "medgemma"}[cand],
                      "reference": "No pleural effusion.", "prediction": "x"})
        for r, e in enumerate(errs, start=1):
            judg.append({"case_id": case, "candidate": cand, "rater": r, "total_errors": float(e),
                         "significant_errors": float(e > 2), "rating": float(5 - e)})
    return af.ReaderStudy("tiny", pd.DataFrame(cands), pd.DataFrame(judg))


def test_judgement_means_resample_reports_hand_computed():
    st = _study()
    seed = _seed_drawing([0, 0, 2], 3)  # reports sorted: a, b, c -> the resample (a, a, c)
    m = af.judgement_means(st, n_bootstrap=1, method="percentile", seed=seed).set_index("system")
    assert m.loc["gpt", "n_reports"] == 3 and m.loc["gpt", "total_errors"] == pytest.approx(10 / 6)
    # (a, a, c) with both radiologists: (0 + 2 + 0 + 2 + 4 + 2) / 6 = 10/6
    assert m.loc["gpt", "total_errors_low"] == m.loc["gpt", "total_errors_high"] == pytest.approx(10 / 6)
    # medgemma, same draws: (3 + 3 + 3 + 3 + 2 + 2) / 6 = 16/6 (estimate (3+3+5+4+2+2)/6 = 19/6)
    assert m.loc["medgemma", "total_errors"] == pytest.approx(19 / 6)
    assert m.loc["medgemma", "total_errors_low"] == pytest.approx(16 / 6)
    assert m.loc["medgemma", "rating_high"] == pytest.approx(5 - 16 / 6)


def test_judgement_means_estimates_unchanged_intervals_bca_and_declared_nowhere():
    st = _study()
    m = af.judgement_means(st, n_bootstrap=300, seed=0)
    merged = st.judgements.merge(st.candidates[["case_id", "candidate", "system"]], on=["case_id", "candidate"])
    before = merged.groupby("system")[st.targets].mean()  # the notebook's estimate before issue 42
    assert m.set_index("system")[st.targets].equals(before)
    assert (m["ci_method"] == "bca").all()
    for t in st.targets:
        assert (m[f"{t}_low"] <= m[t]).all() and (m[t] <= m[f"{t}_high"]).all()
    assert (m["total_errors_high"] > m["total_errors_low"]).all()
    assert m.to_csv(index=False) == af.judgement_means(st, n_bootstrap=300, seed=0).to_csv(index=False)
    back = pd.read_csv(io.StringIO(m.round(2).to_csv(index=False)))
    assert missing_intervals(back) == []
    assert missing_intervals(back[["system", "n_reports", *st.targets]]) == st.targets  # the table before
    wide = af.judgements_wide(m.round(2))
    assert list(wide.columns) == ["total errors", "clinically significant errors", "1–5 rating", "reports"]
    e, lo, hi = m.round(2).loc[0, ["total_errors", "total_errors_low", "total_errors_high"]]
    assert wide.loc["GPT", "total errors"] == f"{e:.2f} [{lo:.2f}, {hi:.2f}]"
