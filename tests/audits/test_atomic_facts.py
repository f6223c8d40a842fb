"""Experiment 3 (atomic_facts): agreement formulas on hand-made tables, the ReXVal path, bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from radaudit.audits import atomic_facts as af
from radaudit.audits.atomic_facts import agreement as afa
from radaudit.config import validate_params
from radaudit.errors import ParamsError, RadauditError

REXVAL = Path(__file__).resolve().parents[1] / "fixtures" / "rexval"


# ------------------------------------------------------------------------------------ coefficients

def test_kendall_tau_b_hand_computed():
    # one discordant pair of six: (C - D) / n0 = (5 - 1) / 6
    assert af.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # ties: pairs (2,3) tied in x, (3,4) tied in y; C = 4, D = 0 -> 4 / sqrt((6-1)(6-1)) = 0.8
    x, y = [1, 2, 2, 3], [1, 2, 3, 3]
    assert af.kendall_tau_b(x, y) == pytest.approx(0.8)
    assert af.kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)


def test_spearman_rho_hand_computed():
    # no ties: 1 - 6 * sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60
    assert af.spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    x, y = [3, 1, 2, 2, 5], [1, 1, 2, 4, 3]  # ties on both sides: Pearson of average ranks (scipy)
    assert af.spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert np.isnan(af.spearman_rho([1, 1, 1], [1, 2, 3]))  # constant column: undefined


# ------------------------------------------------------------------------------------ tiny study

def _study(ratings: dict, errors: dict) -> af.ReaderStudy:
    """ratings/errors: {(case, candidate): [per-rater values]}; 3 raters."""
    cands, judg = [], []
    for (case, cand), rs in ratings.items():
        cands.append({"case_id": case, "candidate": cand, "system": {"C1": "gpt", "C2": "medgemma"}[cand],
                      "reference": "No pleural effusion.", "prediction": f"{case} {cand}"})
        for r, (rating, err) in enumerate(zip(rs, errors[(case, cand)]), start=1):
            judg.append({"case_id": case, "candidate": cand, "rater": r, "total_errors": float(err),
                         "significant_errors": float(err > 1), "rating": float(rating)})
    return af.ReaderStudy("tiny", pd.DataFrame(cands), pd.DataFrame(judg))


RATINGS = {("a", "C1"): [5, 4, 3], ("a", "C2"): [3, 4, 2],   # r1 C1, r2 tie, r3 C1 -> 2.5 / 3
           ("b", "C1"): [2, 2, 2], ("b", "C2"): [4, 3, 3],   # all C2 -> 0
           ("c", "C1"): [3, 3, 4], ("c", "C2"): [3, 4, 3],   # tie, C2, C1 -> 1.5 / 3 = 0.5
           ("d", "C1"): [5, 5, 4], ("d", "C2"): [1, 2, 2]}   # all C1 -> 1
ERRORS = {("a", "C1"): [0, 1, 1], ("a", "C2"): [2, 1, 3], ("b", "C1"): [3, 2, 4], ("b", "C2"): [0, 1, 1],
          ("c", "C1"): [1, 1, 0], ("c", "C2"): [1, 0, 1], ("d", "C1"): [0, 0, 0], ("d", "C2"): [4, 3, 3]}


def _scores(study: af.ReaderStudy, **metrics: list[float]) -> pd.DataFrame:
    out = study.candidates[["case_id", "candidate", "system"]].copy()
    for name, values in metrics.items():
        out[name] = values
    return out


def test_human_preference_vote_share_with_ties():
    st = _study(RATINGS, ERRORS)
    h = af.human_preference(st.judgements, "rating").set_index(["case_id", "a", "b"])["human"]
    assert h[("a", "C1", "C2")] == pytest.approx(2.5 / 3)
    assert h[("a", "C2", "C1")] == pytest.approx(0.5 / 3)  # both orders: the matrix is complementary
    assert h[("b", "C1", "C2")] == 0.0 and h[("c", "C1", "C2")] == 0.5 and h[("d", "C1", "C2")] == 1.0
    one = af.human_preference(st.judgements, "rating", rater=2).set_index(["case_id", "a", "b"])["human"]
    assert one[("a", "C1", "C2")] == 0.5  # rater 2 rated both 4
    errs = af.human_preference(st.judgements, "total_errors").set_index(["case_id", "a", "b"])["human"]
    assert errs[("a", "C1", "C2")] == pytest.approx(2.5 / 3)  # fewer errors is better; rater 2 ties
    assert errs[("d", "C1", "C2")] == 1.0


def test_human_preference_leaves_out_unrated_pairs_and_keeps_the_case_order():
    """A candidate one rater did not rate counts on the other raters only; the cases come in the judgements' order
    (z before y), each case's candidates sorted."""
    nan = float("nan")
    rows = [("z", "C1", 1, 3), ("z", "C1", 2, 4), ("z", "C2", 1, 3), ("z", "C2", 2, 2), ("z", "C3", 1, 5),
            ("z", "C3", 2, nan), ("y", "C2", 1, 2), ("y", "C1", 1, 1)]
    j = pd.DataFrame(rows, columns=["case_id", "candidate", "rater", "rating"]).assign(total_errors=0)
    h = af.human_preference(j, "rating")
    assert h["case_id"].tolist()[:6] == ["z"] * 6 and h["case_id"].tolist()[6:] == ["y", "y"]
    assert list(zip(h["a"], h["b"]))[:2] == [("C1", "C2"), ("C1", "C3")]
    got = h.set_index(["case_id", "a", "b"])
    assert got.loc[("z", "C1", "C2"), "human"] == 0.75 and got.loc[("z", "C1", "C2"), "n_raters"] == 2  # tie, C1
    assert got.loc[("z", "C1", "C3"), "human"] == 0.0 and got.loc[("z", "C1", "C3"), "n_raters"] == 1  # rater 1 only
    assert got.loc[("z", "C3", "C2"), "human"] == 1.0 and got.loc[("y", "C1", "C2"), "human"] == 0.0


def test_metric_preference_and_ties():
    st = _study(RATINGS, ERRORS)
    pairs = af.human_preference(st.judgements, "rating")[["case_id", "a", "b"]]
    sc = _scores(st, m=[0.9, 0.5, 0.2, 0.2 + 1e-12, 0.4, 0.6, np.nan, 0.1])
    got = af.metric_preference(sc, "m", pairs, tie_tolerance=1e-9)
    want = {("a", "C1"): 1.0, ("a", "C2"): 0.0, ("b", "C1"): 0.5, ("b", "C2"): 0.5, ("c", "C1"): 0.0,
            ("c", "C2"): 1.0}
    for (case, a), g in zip(zip(pairs["case_id"], pairs["a"]), got):
        if case == "d":
            assert np.isnan(g)
        else:
            assert g == want[(case, a)]


def test_preference_agreement_hand_computed():
    # strict human entries: 0 (h=1, m=1: 1), 2 (h=1, m=1/2: 1/2), 3 (h=0, m=1: 0) -> ACC = 1.5 / 3
    # MAE = (0 + 1/2 + 1/2 + 1) / 4; tau-b: C = 2, D = 2 -> 0
    res = af.preference_agreement([1, 0, 0.5, 1], [1, 0.5, 1, 0])
    assert res["acc"] == pytest.approx(0.5)
    assert res["mae"] == pytest.approx(0.5)
    assert res["tau"] == pytest.approx(0.0)
    assert res["n_strict"] == 3 and res["n_entries"] == 4
    perfect = af.preference_agreement([1, 0, 1, 0], [5 / 6, 1 / 6, 1, 0])
    assert perfect["acc"] == 1.0 and perfect["mae"] == pytest.approx((1 / 6 + 1 / 6) / 4)


def test_preference_table_matches_the_formula_and_orders_do_not_matter():
    st = _study(RATINGS, ERRORS)
    sc = _scores(st, good=[0.9, 0.5, 0.1, 0.8, 0.5, 0.5, 0.9, 0.2], flat=[0.5] * 8)
    tab = af.preference_table(sc, st, ["good", "flat"], n_bootstrap=50, seed=0)
    pairs = af.human_preference(st.judgements, "rating")
    want = af.preference_agreement(af.metric_preference(sc, "good", pairs), pairs["human"].to_numpy())
    got = tab[(tab["metric"] == "good") & (tab["rater"] == "mean")].set_index("statistic")["estimate"]
    assert got["acc"] == pytest.approx(want["acc"]) and got["mae"] == pytest.approx(want["mae"])
    assert got["tau"] == pytest.approx(want["tau"])
    # good: case a C1 (agree), b C2 (agree), c tie (no strict consensus), d C1 (agree): ACC = 1 over 3 strict pairs
    row = tab[(tab["metric"] == "good") & (tab["rater"] == "mean") & (tab["statistic"] == "acc")].iloc[0]
    assert row["estimate"] == 1.0 and row["n_strict_pairs"] == 3
    flat = tab[(tab["metric"] == "flat") & (tab["rater"] == "mean")].set_index("statistic")["estimate"]
    assert flat["acc"] == 0.5  # a constant metric ties everywhere: a coin
    assert {"1", "2", "3", "mean", "inter-rater"} <= set(tab["rater"])
    # relabelling C1 <-> C2 in one case changes nothing
    swapped = st.candidates.copy()
    swapped.loc[swapped["case_id"] == "a", "candidate"] = swapped.loc[swapped["case_id"] == "a", "candidate"].map({"C1": "C2", "C2": "C1"})
    j = st.judgements.copy()
    j.loc[j["case_id"] == "a", "candidate"] = j.loc[j["case_id"] == "a", "candidate"].map({"C1": "C2", "C2": "C1"})
    st2 = af.ReaderStudy("tiny", swapped, j)
    sc2 = sc.copy()
    sc2["candidate"] = swapped["candidate"]
    tab2 = af.preference_table(sc2, st2, ["good", "flat"], n_bootstrap=50, seed=0)
    pd.testing.assert_series_equal(tab["estimate"], tab2["estimate"])


def test_correlation_table_orientation_values_and_ceiling():
    st = _study(RATINGS, ERRORS)
    mean_err = st.judgements.groupby(["case_id", "candidate"], sort=False)["total_errors"].mean().to_numpy()
    mean_rating = st.judgements.groupby(["case_id", "candidate"], sort=False)["rating"].mean().to_numpy()
    noisy = -mean_err + np.array([0.5, -0.4, 0.3, 0.0, -0.6, 0.2, 0.1, -0.3])
    sc = _scores(st, oracle=-mean_err, noisy=noisy)
    corr = af.correlation_table(sc, st, ["oracle", "noisy"], reference="oracle", n_bootstrap=40, seed=0)
    get = corr.set_index(["metric", "target", "rater", "coefficient"])["estimate"]
    assert get[("oracle", "total_errors", "mean", "kendall")] == pytest.approx(1.0)  # fewer errors = higher score
    assert get[("noisy", "total_errors", "mean", "kendall")] == pytest.approx(stats.kendalltau(noisy, -mean_err).statistic)
    assert get[("noisy", "rating", "mean", "spearman")] == pytest.approx(stats.spearmanr(noisy, mean_rating).statistic)
    r1 = st.judgements[st.judgements["rater"] == 1]["total_errors"].to_numpy()
    assert get[("noisy", "total_errors", "1", "kendall")] == pytest.approx(stats.kendalltau(noisy, -r1).statistic)
    # inter-rater ceiling: mean over raters of tau(rater, mean of the others)
    R = st.judgements.pivot_table(index=["case_id", "candidate"], columns="rater", values="rating").to_numpy()
    want = np.mean([stats.kendalltau(R[:, i], np.delete(R, i, axis=1).mean(1)).statistic for i in range(3)])
    assert get[("inter-rater", "rating", "inter-rater", "kendall")] == pytest.approx(want)
    row = corr[(corr["metric"] == "noisy") & (corr["target"] == "total_errors") & (corr["rater"] == "mean")
               & (corr["coefficient"] == "kendall")].iloc[0]
    assert row["diff_vs_reference"] == pytest.approx(1.0 - row["estimate"])
    assert 0 < row["diff_p"] <= 1 and row["low"] <= row["estimate"] <= row["high"]
    wide = af.table2(corr)
    assert wide["Metric"].iloc[-1].startswith("Radiologist") and wide["Metric"].iloc[0] == "oracle"


def test_correlation_bootstrap_is_deterministic_and_resamples_cases():
    st = _study(RATINGS, ERRORS)
    sc = _scores(st, m=[0.9, 0.5, 0.1, 0.8, 0.5, 0.5, 0.9, 0.2])
    a = af.correlation_table(sc, st, n_bootstrap=30, seed=3)
    b = af.correlation_table(sc, st, n_bootstrap=30, seed=3)
    pd.testing.assert_frame_equal(a, b)
    w, n_units = afa._bootstrap_weights(st.candidates["case_id"], 20, seed=0)
    assert n_units == 4 and w.shape == (20, 8)
    assert (w[:, 0::2] == w[:, 1::2]).all()  # both candidates of a case travel together
    assert (w.sum(1) == 8).all()


# ------------------------------------------------------------------------------------ ReXVal path

def test_rexval_fixture_path():
    st = af.rexval_study(REXVAL)
    assert len(st.candidates) == 8 and st.candidates["case_id"].nunique() == 2
    assert st.targets == ["total_errors", "significant_errors"]  # ReXVal has no ratings
    assert st.raters == [0, 1]
    loader = __import__("radaudit.data", fromlist=["load_dataset"]).load_dataset("rexval", path=REXVAL)
    mean_total = st.judgements.groupby(["case_id", "candidate"])["total_errors"].mean()
    for r in loader.itertuples():
        assert mean_total[(str(r.study_id), r.candidate_type)] == pytest.approx(r.mean_errors_total)
    ms = af.score_study(st.candidates, ["bleu4"])
    assert ms.metrics == ["atomimed", "atomimed_disease", "atomimed_attribute", "bleu4"] and not ms.skipped
    assert set(ms.trace["system"]) <= {"radgraph", "bertscore", "s_emb", "bleu"}
    corr = af.correlation_table(ms.scores, st, ["atomimed", "bleu4"], n_bootstrap=20)
    assert set(corr["target"]) == {"total_errors", "significant_errors"}
    pref = af.preference_table(ms.scores, st, ["atomimed"], source="total_errors", n_bootstrap=20)
    assert (pref[pref["rater"] == "mean"]["n_entries"] == 2 * 4 * 3).all()  # 2 studies x 4 x 3 ordered pairs
    with pytest.raises(ParamsError, match="no 'rating'"):
        af.preference_table(ms.scores, st, ["atomimed"], source="rating")


def test_radpref_study_counts(tmp_path):
    from radaudit.data.root import resolve_data_root

    try:
        resolve_data_root(None)
        st = af.radpref_study(max_cases=5)
    except Exception as err:  # noqa: BLE001
        pytest.skip(f"RadPref not available here: {err}")
    assert len(st.candidates) == 10 and len(st.judgements) == 30
    assert set(st.candidates["system"]) <= {"gpt", "medgemma"}
    assert (st.judgements["significant_errors"] <= st.judgements["total_errors"]).all()


# ------------------------------------------------------------------------------------ granular, systems

def test_system_of():
    assert af.system_of("pleural effusion") == "Pleura"
    assert af.system_of("central venous catheter") == "Devices & surgery"
    assert af.system_of("right lower lobe pneumonia") == "Lungs & airways"  # free text (LLM names)
    assert af.system_of("Cardiomegaly") == "Heart & vessels"
    assert af.system_of("xyzzy") == "Other"


def test_granular_table_pooled_f1():
    rows = [("A", "gt->inf", "attribute", "effusion", "location", "left", True),
            ("A", "gt->inf", "attribute", "effusion", "location", "left", False),
            ("A", "inf->gt", "attribute", "effusion", "location", "left", True),
            ("A", "gt->inf", "disease", "pneumothorax", None, "no", True),
            ("A", "gt->inf", "disease", "pleural effusion", None, "yes", False),
            ("A", "inf->gt", "disease", "pleural effusion", None, "yes", True)]
    tr = pd.DataFrame(rows, columns=["system", "direction", "level", "finding", "attribute", "expected", "match"])
    tr = tr.assign(case_id=["r1", "r1", "r1", "r2", "r2", "r2"], candidate="C1")  # the reports the CIs resample
    a = af.granular_table(tr, "attribute").set_index(["system", "category"])
    loc = a.loc[("A", "location")]
    assert loc["recall"] == 0.5 and loc["precision"] == 1.0 and loc["f1"] == pytest.approx(2 / 3) and loc["n"] == 3
    assert np.isnan(a.loc[("A", "size"), "f1"])
    d = af.granular_table(tr, "disease", present_only=True).set_index(["system", "category"])
    assert d.loc[("A", "Pleura"), "n"] == 2  # the negated pneumothorax question is left out
    assert af.granular_table(tr, "disease", present_only=False).set_index(["system", "category"]).loc[("A", "Pleura"), "n"] == 3


def test_granular_table_and_figure_on_an_empty_trace():
    import matplotlib.pyplot as plt

    from radaudit.atomic import trace_frame

    empty = trace_frame([]).assign(case_id=[], candidate=[], system=[])
    attr, dis = af.granular_table(empty, "attribute"), af.granular_table(empty, "disease")
    assert attr.empty and dis.empty
    assert list(attr.columns) == list(dis.columns) == list(af.GRANULAR_COLUMNS)
    fig = af.fig_granular(attr, dis, 5)  # says "no questions" instead of failing
    assert sum("no questions" in t.get_text() for ax in fig.axes for t in ax.texts) == 2
    plt.close(fig)


def _llm(garbage_for: str | None):
    """A fake LLM for _study's reports: the reference has a negated effusion, C1 candidates a present
    one, C2 candidates none; the reader answers every question "no". Decompositions of reports
    containing ``garbage_for`` (every report: ``""``) are prose."""
    import re

    def gen(prompt: str) -> str:
        if "Questions:" in prompt:
            ids = re.findall(r"^(\d+)\. ", prompt.split("Questions:\n", 1)[1], re.M)
            return json.dumps({"answers": [{"id": int(i), "answer": "no"} for i in ids]})
        report = prompt.split("Report:\n", 1)[1]
        if garbage_for is not None and garbage_for in report:
            return "The report shows an effusion."
        if report.startswith("No pleural effusion."):
            return '{"findings": [{"name": "pleural effusion", "present": "no"}]}'
        return '{"findings": [{"name": "pleural effusion", "present": "yes"}]}' if " C1" in report else '{"findings": []}'

    return gen


def test_failed_llm_decompositions_are_missing_counted_and_left_out():
    st = _study(RATINGS, ERRORS)
    opts = {"backend": "llm", "generate_fn": _llm("a C1"), "max_retries": 1}
    ms = af.score_study(st.candidates, [], atomimed=opts)
    bad = (st.candidates["case_id"] == "a") & (st.candidates["candidate"] == "C1")
    assert ms.scores.loc[bad, ["atomimed", "atomimed_disease", "atomimed_attribute"]].isna().all().all()
    assert ms.scores.loc[~bad, "atomimed"].notna().all() and not ms.atomimed.loc[bad, "ok"].any()
    t = af.failures_table(ms.atomimed, ms.calls).set_index("stage")
    assert list(t.reset_index().columns) == list(af.FAILURE_COLUMNS)
    assert t.loc["decomposition", ["n", "ok", "failed", "attempts"]].tolist() == [9, 8, 1, 10]  # 1 ref + 8 candidates
    assert t.loc["pairs", ["n", "ok", "failed"]].tolist() == [8, 7, 1]
    assert t.loc["disease reading", "failed"] == 0 and pd.isna(t.loc["pairs", "retried"])
    corr = af.correlation_table(ms.scores, st, ms.metrics, n_bootstrap=20, seed=0)
    a = corr[(corr["metric"] == "atomimed") & (corr["rater"] == "mean")]
    assert (a["n_undefined"] == 1).all() and (a["n_candidates"] == 7).all()
    pref = af.preference_table(ms.scores, st, ms.metrics, n_bootstrap=20, seed=0)
    lines = af.summary_lines(corr, pref, [], backend="llm", atomimed=ms.atomimed, calls=ms.calls)
    assert "1 of 8 candidate reports could not be scored" in lines[-1]
    assert "Decomposition: 1 of 9 calls failed" in lines[-1]
    # the rule backend calls no model: an all-zero table and no such line
    rule = af.score_study(st.candidates, [])
    assert af.failure_line(rule.atomimed, rule.calls) is None
    assert af.failures_table(rule.atomimed, rule.calls).loc[:2, "n"].tolist() == [0, 0, 0]


def test_every_llm_decomposition_failing_still_gives_every_table():
    import matplotlib.pyplot as plt

    st = _study(RATINGS, ERRORS)
    ms = af.score_study(st.candidates, ["bleu4"], atomimed={"backend": "llm", "generate_fn": _llm(""), "max_retries": 0})
    assert ms.scores["atomimed"].isna().all() and ms.trace.empty and ms.scores["bleu4"].notna().all()
    corr = af.correlation_table(ms.scores, st, ms.metrics, n_bootstrap=20, seed=0)
    assert corr[corr["metric"] == "atomimed"]["estimate"].isna().all() and len(af.table2(corr))
    pref = af.preference_table(ms.scores, st, ms.metrics, n_bootstrap=20, seed=0)
    assert len(af.table3(pref))
    lines = af.summary_lines(corr, pref, ["bleu4"], backend="llm", atomimed=ms.atomimed, calls=ms.calls)
    assert "8 of 8 candidate reports could not be scored" in lines[-1] and "scored no candidate" in lines[-1]
    assert any("AtomiMed scored no candidate pair" in line for line in lines)
    attr, dis = af.granular_table(ms.trace, "attribute"), af.granular_table(ms.trace, "disease")
    assert attr.empty and list(dis.columns) == list(af.GRANULAR_COLUMNS)
    plt.close(af.fig_granular(attr, dis))
    plt.close(af.fig_correlation(corr, "kendall", ms.metrics))
    plt.close(af.fig_preference(pref, ms.metrics))


def test_generations_study(tmp_path):
    p = tmp_path / "gens.csv"
    pd.DataFrame({"strategy": ["greedy", "greedy", "nucleus"], "study_id": ["s1", "s2", "s1"],
                  "reference": ["Small left pleural effusion.", "No acute disease.", "Small left pleural effusion."],
                  "prediction": ["Small left pleural effusion.", "Right pneumothorax.", "No effusion."]}).to_csv(p, index=False)
    cands = af.generations_study(p, max_per_strategy=1)
    assert list(cands["system"]) == ["greedy", "nucleus"]
    ms = af.score_study(cands, [])
    assert ms.scores["atomimed"].iloc[0] == 1.0 and ms.scores["atomimed"].iloc[1] < 1.0
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"strategy": ["x"], "text": ["y"]}).to_csv(bad, index=False)
    with pytest.raises(ParamsError, match="lacks column"):
        af.generations_study(bad)


# ------------------------------------------------------------------------------------ bad inputs

def test_bad_inputs_raise_clear_errors(tmp_path):
    st = _study(RATINGS, ERRORS)
    sc = _scores(st, m=[0.9, 0.5, 0.1, 0.8, 0.5, 0.5, 0.9, 0.2])
    with pytest.raises(RadauditError, match="lacks column"):
        af.ReaderStudy("x", st.candidates.drop(columns="prediction"), st.judgements)
    with pytest.raises(RadauditError, match="unknown candidates"):
        af.ReaderStudy("x", st.candidates.iloc[:2], st.judgements)
    with pytest.raises(RadauditError, match="not aligned"):
        af.correlation_table(sc.iloc[::-1].reset_index(drop=True), st)
    with pytest.raises(ParamsError, match="not columns of scores"):
        af.correlation_table(sc, st, ["nope"])
    with pytest.raises(ParamsError, match="preference source"):
        af.human_preference(st.judgements, "stars")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        af.preference_agreement([2.0], [1.0])
    with pytest.raises(ValueError, match="complete rows"):
        af.agreement_coefficients(np.array([[1.0], [np.nan]]), np.array([[1.0], [2.0]]))
    with pytest.raises(RadauditError, match="empty"):
        af.score_study(st.candidates.iloc[:0], [])
    with pytest.raises(ParamsError, match="baselines"):
        validate_params(af.Params, {"baselines": ["bleu4", "not_a_metric"]})
    with pytest.raises(ParamsError, match="llm_model"):
        af.Params(backend="llm").preflight()
    with pytest.raises(ParamsError, match="no ratings"):
        af.Params(dataset="rexval").preflight()
    with pytest.raises(ParamsError, match="not a file"):
        af.Params(strategy_generations=str(tmp_path / "missing.csv")).preflight()
