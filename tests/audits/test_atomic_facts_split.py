"""atomic_facts, issue 18 item 4: the seeded dev/test split of a reader study, agreement per half
(hand-computed on a tiny table, through the functions ``benchmarks/radpref_agreement.py`` uses),
and the BCa intervals of the agreement tables."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import atomic_facts as af
from radaudit.audits.atomic_facts import agreement as afa
from radaudit.stats import kendall_tau_replicates
from radaudit.errors import ParamsError, RadauditError

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "radpref_agreement.py"


def _bench():
    """The benchmark script as a module (its table functions; importing it sets nothing)."""
    name = "radpref_agreement_bench"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses resolve annotations through sys.modules
        spec.loader.exec_module(mod)
    return sys.modules[name]


# ------------------------------------------------------------------------------------ split

IDS = [f"case{i:03d}" for i in range(100)]


def test_split_is_deterministic_exactly_half_and_disjoint():
    a = af.split_cases(IDS, seed=18)
    assert list(a) == IDS                                   # first-seen order
    assert af.split_cases(IDS, seed=18) == a                # same seed, same split
    shuffled = IDS[:]
    random.Random(0).shuffle(shuffled)
    assert af.split_cases(shuffled + IDS[:5], seed=18) == {c: a[c] for c in shuffled}  # order / repeats do not matter
    dev = {c for c, h in a.items() if h == "dev"}
    test = {c for c, h in a.items() if h == "test"}
    assert set(a.values()) == {"dev", "test"}
    assert dev.isdisjoint(test) and dev | test == set(IDS)
    assert len(dev) == len(test) == 50
    odd = af.split_cases(IDS[:7], seed=18)                  # the odd case goes to test
    assert list(odd.values()).count("dev") == 3 and list(odd.values()).count("test") == 4
    assert af.split_cases([], seed=18) == {}
    assert af.split_cases([1, 2], seed=18).keys() == {"1", "2"}  # ids as strings


def test_another_seed_gives_another_split():
    splits = [af.split_cases(IDS, seed=s) for s in (0, 1, 18)]
    assert splits[0] != splits[1] and splits[1] != splits[2] and splits[0] != splits[2]
    assert all(list(s.values()).count("dev") == 50 for s in splits)
    assert af.split_cases(IDS) == splits[2] and af.SPLIT_SEED == 18  # the default seed


def test_split_keeps_a_patients_cases_together():
    # ReXGradient-style ids: 30 patients, 10 of them with two studies
    ids = [f"pGRDN{p:04d}_aGRDN{p:04d}{k}_s1.2.{p}.{k}" for p in range(30) for k in range(2 if p < 10 else 1)]
    assert af.data.case_patient(ids[0]) == "pGRDN0000" and af.data.case_patient("plain-id") == "plain-id"
    a = af.split_cases(ids, seed=3)
    by_patient: dict[str, set] = {}
    for c, h in a.items():
        by_patient.setdefault(af.data.case_patient(c), set()).add(h)
    assert all(len(h) == 1 for h in by_patient.values())
    assert list(a.values()).count("dev") == 20               # exactly half of 40 cases
    flat = af.split_cases(ids, seed=3, by_patient=False)      # by case only: may cut a patient
    assert list(flat.values()).count("dev") == 20


def test_split_bad_seed_and_parts():
    with pytest.raises(ParamsError, match="seed must be an integer"):
        af.split_cases(IDS, seed="18")
    st = _study()
    with pytest.raises(ParamsError, match="split part must be one of"):
        af.split_study(st, "train")
    with pytest.raises(RadauditError, match="none of the 1 selected cases"):
        af.select_cases(st, ["zzz"])


def test_radpref_split_halves(shared_data):
    st = af.radpref_study(shared_data)
    a = af.split_cases(st.candidates["case_id"])
    assert list(a.values()).count("dev") == list(a.values()).count("test") == 50
    cases = pd.read_json(shared_data / "crimson-radpref" / "preference_data.json")
    from radaudit.data import load_dataset

    loaded = load_dataset("radpref", shared_data)
    assert (loaded["study_id"].map(af.data.case_patient) == loaded["patient_id"]).all()
    assert len(cases) == 100
    test = af.split_study(st, "test")
    assert test.name == "radpref/test" and test.candidates["case_id"].nunique() == 50
    assert set(test.judgements["case_id"]) == set(test.candidates["case_id"])
    assert af.split_study(st, "all") is st


# ------------------------------------------------------------------------------------ tiny study


def _study() -> af.ReaderStudy:
    """4 cases x 2 candidates x 3 raters; every rater counts the same errors (so the mean is that
    count); ratings differ per rater. dev = a, b; test = c, d (given as the assignment)."""
    errors = {("a", "C1"): 0, ("a", "C2"): 2, ("b", "C1"): 1, ("b", "C2"): 0,
              ("c", "C1"): 1, ("c", "C2"): 2, ("d", "C1"): 0, ("d", "C2"): 3}
    ratings = {("a", "C1"): [5, 5, 4], ("a", "C2"): [2, 3, 2], ("b", "C1"): [3, 3, 3], ("b", "C2"): [4, 4, 5],
               ("c", "C1"): [4, 4, 3], ("c", "C2"): [3, 3, 3],   # r1, r2 prefer C1, r3 ties: 2.5 / 3 for C1
               ("d", "C1"): [5, 4, 4], ("d", "C2"): [2, 2, 2]}   # all prefer C1
    cands, judg = [], []
    for (case, cand), err in errors.items():
        cands.append({"case_id": case, "candidate": cand, "system": cand, "reference": "r", "prediction": "p"})
        for r, rating in enumerate(ratings[(case, cand)], start=1):
            judg.append({"case_id": case, "candidate": cand, "rater": r, "total_errors": float(err),
                         "significant_errors": float(err), "rating": float(rating)})
    return af.ReaderStudy("tiny", pd.DataFrame(cands), pd.DataFrame(judg))


ASSIGN = {"a": "dev", "b": "dev", "c": "test", "d": "test"}
METRIC = [0.9, 0.2, 0.3, 0.8, 0.5, 0.6, 0.9, 0.1]  # a1 a2 b1 b2 c1 c2 d1 d2


def _scores(st: af.ReaderStudy) -> pd.DataFrame:
    out = st.candidates[["case_id", "candidate", "system"]].copy()
    out["atomimed"] = METRIC
    out["bleu4"] = [0.5] * 8  # constant: τ undefined
    return out


def test_agreement_by_split_hand_computed():
    st = _study()
    corr, pref = af.agreement_by_split(_scores(st), st, ["atomimed", "bleu4"], assignment=ASSIGN, n_bootstrap=50, seed=1)
    long = _bench().long_table(corr, pref)

    def get(part, stat, target, metric="atomimed"):
        r = long[(long["split"] == part) & (long["statistic"] == stat) & (long["target"] == target)
                 & (long["metric"] == metric) & (long["rater"] == "mean")]
        assert len(r) == 1
        return r.iloc[0]

    # test half: metric (c1, c2, d1, d2) = (0.5, 0.6, 0.9, 0.1) vs -errors (-1, -2, 0, -3).
    # Pairs: (c1,c2) discordant; (c1,d1) (c1,d2) (c2,d1) (c2,d2) (d1,d2) concordant; no ties:
    # tau-b = (5 - 1) / 6. Ranks (2, 3, 4, 1) vs (3, 2, 4, 1): sum d^2 = 2, rho = 1 - 6*2 / (4*15) = 0.8.
    assert get("test", "kendall", "total_errors")["estimate"] == pytest.approx(4 / 6)
    assert get("test", "spearman", "total_errors")["estimate"] == pytest.approx(0.8)
    assert get("test", "kendall", "total_errors")["n_cases"] == 2
    # preference (rating): case c consensus C1 (5/6), metric prefers C2 -> wrong on both ordered
    # entries; case d all prefer C1, metric too -> right on both: ACC = 2 / 4, over 2 strict pairs.
    acc = get("test", "pref_acc", "preference")
    assert acc["estimate"] == pytest.approx(0.5) and acc["n_strict_pairs"] == 2
    # dev half: metric (0.9, 0.2, 0.3, 0.8) vs -errors (0, -2, -1, 0): (a1, b2) tied in y, the
    # other 5 pairs concordant, none discordant: tau-b = 5 / sqrt(6 * (6 - 1))
    assert get("dev", "kendall", "total_errors")["estimate"] == pytest.approx(5 / np.sqrt(30))
    # dev preference: a consensus C1, metric C1 (right); b consensus C2, metric C2 (right): ACC 1
    assert get("dev", "pref_acc", "preference")["estimate"] == pytest.approx(1.0)
    # all 4 cases: the same as correlation_table on the whole study
    whole = af.correlation_table(_scores(st), st, ["atomimed", "bleu4"], n_bootstrap=50, seed=1)
    w = whole[(whole["metric"] == "atomimed") & (whole["target"] == "total_errors") & (whole["rater"] == "mean")
              & (whole["coefficient"] == "kendall")].iloc[0]
    assert get("all", "kendall", "total_errors")["estimate"] == pytest.approx(w["estimate"])
    assert get("all", "kendall", "total_errors")["low"] == pytest.approx(w["low"], nan_ok=True)
    assert np.isnan(get("test", "kendall", "total_errors", "bleu4")["estimate"])  # constant metric
    assert set(corr["split"]) == set(pref["split"]) == {"all", "dev", "test"}


def test_agreement_by_split_named_subsets_and_errors():
    st = _study()
    corr, _ = af.agreement_by_split(_scores(st), st, ["atomimed"], parts={"cd": ["c", "d"]}, n_bootstrap=20)
    assert set(corr["split"]) == {"cd"}
    r = corr[(corr["metric"] == "atomimed") & (corr["target"] == "total_errors") & (corr["rater"] == "mean")
             & (corr["coefficient"] == "kendall")].iloc[0]
    assert r["estimate"] == pytest.approx(4 / 6)
    with pytest.raises(ParamsError, match="unknown split part"):
        af.agreement_by_split(_scores(st), st, ["atomimed"], parts=["train"], n_bootstrap=0)
    with pytest.raises(RadauditError, match="not aligned"):
        af.agreement_by_split(_scores(st).iloc[::-1], st, ["atomimed"], n_bootstrap=0)


def test_verdict_needs_non_overlapping_cis():
    bench = _bench()
    rows = []
    for metric, est, lo, hi in (("atomimed", 0.5, 0.35, 0.62), ("bleu4", 0.2, 0.05, 0.34), ("bertscore", 0.3, 0.15, 0.40)):
        rows.append({"split": "test", "metric": metric, "statistic": "kendall", "target": "total_errors", "rater": "mean",
                     "estimate": est, "low": lo, "high": hi, "diff_vs_reference": np.nan})
    v = {r["baseline"]: r for r in bench.verdicts(pd.DataFrame(rows), ["atomimed"], "test")}
    assert v["bleu4"]["above"] and v["bleu4"]["above_ci_apart"]          # 0.35 > 0.34
    assert v["bertscore"]["above"] and not v["bertscore"]["above_ci_apart"]  # 0.35 <= 0.40: CIs overlap


# ------------------------------------------------------------------------------------ BCa


def test_jackknife_weights_give_leave_one_case_out_tau():
    rng = np.random.default_rng(4)
    cases = np.repeat(np.arange(8), 2).astype(str)
    x = rng.normal(size=(16, 1))
    y = rng.integers(0, 4, (16, 1)).astype(float)
    jk = kendall_tau_replicates(x, y, afa._jackknife_weights(cases))[:, 0, 0]
    for u in range(8):
        keep = cases != str(u)
        assert jk[u] == pytest.approx(af.kendall_tau_b(x[keep, 0], y[keep, 0]))


@pytest.mark.long
def test_bca_intervals_in_both_tables():
    rng = np.random.default_rng(7)
    n = 30
    cands, judg = [], []
    for i in range(n):
        for c in ("C1", "C2"):
            err = int(rng.integers(0, 5))
            cands.append({"case_id": f"k{i}", "candidate": c, "system": c, "reference": "r", "prediction": "p"})
            for r in (1, 2, 3):
                e = max(0, err + int(rng.integers(-1, 2)))
                judg.append({"case_id": f"k{i}", "candidate": c, "rater": r, "total_errors": float(e),
                             "significant_errors": float(e > 2), "rating": float(5 - min(e, 4))})
    st = af.ReaderStudy("synthetic", pd.DataFrame(cands), pd.DataFrame(judg))
    sc = st.candidates[["case_id", "candidate", "system"]].copy()
    truth = st.judgements.groupby(["case_id", "candidate"], sort=False)["total_errors"].mean().to_numpy()
    sc["atomimed"] = -truth + rng.normal(0, 1.0, len(sc))
    sc["bleu4"] = rng.normal(size=len(sc))
    corr = af.correlation_table(sc, st, ["atomimed", "bleu4"], n_bootstrap=200, seed=0, ci_method="bca")
    pref = af.preference_table(sc, st, ["atomimed", "bleu4"], n_bootstrap=200, seed=0, ci_method="bca")
    pct = af.correlation_table(sc, st, ["atomimed", "bleu4"], n_bootstrap=200, seed=0)
    assert set(corr["ci_method"]) <= {"bca", "percentile"} and (corr["ci_method"] == "bca").mean() > 0.9
    assert (pref["ci_method"] == "bca").mean() > 0.9 and set(pct["ci_method"]) == {"percentile"}
    ok = corr["low"].notna()
    assert ((corr.loc[ok, "low"] <= corr.loc[ok, "estimate"]) & (corr.loc[ok, "estimate"] <= corr.loc[ok, "high"])).all()
    pd.testing.assert_series_equal(corr["estimate"], pct["estimate"])  # same estimates, other intervals
    assert not np.allclose(corr.loc[ok, "low"], pct.loc[ok, "low"])
    with pytest.raises(ParamsError, match="ci_method"):
        af.correlation_table(sc, st, ["atomimed"], n_bootstrap=10, ci_method="basic")
