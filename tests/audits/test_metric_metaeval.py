"""metric_metaeval (ReEvalMed): every formula against hand-computed values, known answers, bad inputs.

Fast: tiny hand-made tables; the only real data read is RadPref's annotation files (for the
count mapping) and the ReXVal fixture.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import metric_metaeval as mm
from radaudit.config import validate_params
from radaudit.errors import DataFormatError, ParamsError


def _row(metric, aspect, error_type, significance, score, *, pair, study="s", group=None, hib=True, rule=None):
    return {"pair_id": pair, "study_id": study, "source": "x", "aspect": aspect, "error_type": error_type,
            "significance": significance, "rule": rule or f"{aspect}_{significance}_{error_type}", "group": group,
            "metric": metric, "score": score,
            "score_100": 100 * score / mm.METRIC_RANGES.get(metric, 1.0), "higher_is_better": hib}


@pytest.fixture
def tiny():
    """m: location omission significant 0.2, 0.4 (DS 30) / insignificant 0.9, 1.0 (RS 95);
    negation significant 0.5 (DS 50) / insignificant 0.8 and an undefined NaN (RS 80, 1 undefined)."""
    rows = [
        _row("m", "location", "omission", "significant", 0.2, pair="a"),
        _row("m", "location", "omission", "significant", 0.4, pair="b"),
        _row("m", "location", "omission", "insignificant", 0.9, pair="c"),
        _row("m", "location", "omission", "insignificant", 1.0, pair="d"),
        _row("m", "negation", "fabrication", "significant", 0.5, pair="e"),
        _row("m", "negation", "inaccuracy", "insignificant", 0.8, pair="f"),
        _row("m", "negation", "omission", "insignificant", math.nan, pair="g"),
    ]
    df = pd.DataFrame(rows)
    df["group"] = df["group"].astype("Int64")
    return df


# ----------------------------------------------------------------------------- DS / RS


def test_ds_rs_by_hand(tiny):
    long = mm.ds_rs_long(tiny, n_bootstrap=50, seed=0)
    cell = long.set_index(["score", "column"])
    assert cell.at[("DS", "Location O"), "estimate"] == pytest.approx(30.0)
    assert cell.at[("DS", "Neg. S"), "estimate"] == pytest.approx(50.0)
    # Overall = the mean of the column estimates (the paper's Overall), not of the pairs: (30 + 50) / 2
    assert cell.at[("DS", "Overall"), "estimate"] == pytest.approx(40.0)
    assert cell.at[("RS", "Location O"), "estimate"] == pytest.approx(95.0)
    assert cell.at[("RS", "Neg. S"), "estimate"] == pytest.approx(80.0)  # the NaN is left out ...
    assert cell.at[("RS", "Neg. S"), "n_undefined"] == 1  # ... and counted
    assert cell.at[("RS", "Overall"), "estimate"] == pytest.approx((95 + 80) / 2)
    assert cell.at[("DS", "Overall"), "ci_method"] == "percentile bootstrap over pairs"
    ov = cell.loc[("DS", "Overall")]
    assert ov["low"] <= ov["estimate"] <= ov["high"]
    assert math.isnan(cell.at[("DS", "Neg. S"), "low"])  # one pair: no interval


def test_paper_overall_ci_by_hand(tiny):
    # column means 30 and 50: mean 40, SD 14.1421 (ddof 1), SE = 14.1421 / sqrt(2) = 10, half-width 1.959964 * 10
    assert mm.paper_overall_ci([30.0, 50.0]) == pytest.approx((40.0, 40.0 - 19.59964, 40.0 + 19.59964), abs=1e-5)
    est, lo, hi = mm.paper_overall_ci([30.0])
    assert est == 30.0 and math.isnan(lo) and math.isnan(hi)  # one column: no SD
    long = mm.ds_rs_long(tiny, n_bootstrap=20, overall_ci="paper").set_index(["score", "column"])
    assert long.at[("DS", "Overall"), "low"] == pytest.approx(20.40036, abs=1e-4)
    assert long.at[("DS", "Overall"), "ci_method"].startswith("paper")
    with pytest.raises(ParamsError, match="overall_ci"):
        mm.ds_rs_long(tiny, overall_ci="wald")


def test_cell_is_averaged_over_rules():
    """Rule A made two pairs (0.2, 0.4: mean 30), rule B one (0.9: 90): over rules (30 + 90) / 2 = 60;
    over pairs (the paper) (20 + 40 + 90) / 3 = 50."""
    rows = [_row("m", "severity", "omission", "significant", v, pair=p, rule=r)
            for v, p, r in ((0.2, "a", "A"), (0.4, "b", "A"), (0.9, "c", "B"))]
    df = pd.DataFrame(rows).assign(group=pd.array([pd.NA] * 3, dtype="Int64"))
    by_rules = mm.ds_rs_long(df, n_bootstrap=50).set_index("column")
    by_pairs = mm.ds_rs_long(df, n_bootstrap=50, cell_average="pairs").set_index("column")
    assert by_rules.at["Severity O", "estimate"] == pytest.approx(60.0)
    assert by_rules.at["Severity O", "n_rules"] == 2
    assert by_pairs.at["Severity O", "estimate"] == pytest.approx(50.0)
    drill = mm.ds_rs_by_rule(df, n_bootstrap=50).set_index("rule")
    assert drill.at["A", "estimate"] == pytest.approx(30.0) and drill.at["A", "n"] == 2
    assert drill.at["B", "estimate"] == pytest.approx(90.0) and drill.at["B", "n"] == 1
    cells = mm.rules_per_cell(df.drop(columns=["metric", "score", "score_100", "higher_is_better"]))
    row = cells[(cells["column"] == "Severity O") & (cells["significance"] == "significant")].iloc[0]
    assert (row["n_pairs"], row["n_rules"], row["rules"]) == (3, 2, "A (2), B (1)")
    assert len(cells) == 40 and cells["n_rules"].sum() == 2  # 20 columns x 2 significances; the rest empty


def test_score_table_layout(tiny):
    long = mm.ds_rs_long(tiny, n_bootstrap=20)
    t4 = mm.score_table(long, "DS")
    assert list(t4.columns) == ["Metric", "Location O", "Neg. S", "Overall"]
    # every cell is "estimate [low, high]" from the long table; Neg. S has one pair: no interval
    loc = long.set_index(["score", "column"]).loc[("DS", "Location O")]
    assert t4.loc[0, "Location O"] == f"30.00 [{loc['low']:.2f}, {loc['high']:.2f}]"
    assert t4.loc[0, "Neg. S"] == "50.00 [n/a]" and t4.loc[0, "Overall"].startswith("40.00 [")
    t4p = mm.score_table(mm.ds_rs_long(tiny, n_bootstrap=20, overall_ci="paper"), "DS")
    assert t4p.columns[-1] == "Overall (paper: mean ± 1.96·SD/√k over the k column means)"
    assert t4p.iloc[0, -1] == "40.00 [20.40, 59.60]"  # 40 ± 1.959964 · 10
    assert len(mm.table_columns()) == 21 and mm.table_columns()[:4] == [
        "Comparison/Progression E", "Comparison/Progression F", "Comparison/Progression O", "Cont. S"]
    with pytest.raises(ParamsError):
        mm.score_table(mm.ds_rs_long(tiny, n_bootstrap=20), "XX")


def test_column_key():
    assert mm.column_key("location", "inaccuracy") == "Location E"
    assert mm.column_key("comparison", "fabrication") == "Comparison/Progression F"
    assert mm.column_key("size_distance", "omission") == "S/D S"
    with pytest.raises(ParamsError, match="unknown aspect"):
        mm.column_key("laterality", "omission")
    with pytest.raises(ParamsError, match="error type"):
        mm.column_key("severity", "typo")


def test_cider_is_put_on_0_100():
    r = _row("cider", "noise", "omission", "significant", 5.0, pair="a")
    assert r["score_100"] == 50.0


# ----------------------------------------------------------------------------- AUROC


def test_auroc_with_ties_by_hand():
    # pairs (insig, sig): (.9,.5)=1 (.9,.1)=1 (.5,.5)=½ (.5,.1)=1 (.5,.5)=½ (.5,.1)=1 -> 5/6
    assert mm.auroc([0.9, 0.5, 0.5], [0.5, 0.1]) == pytest.approx(5 / 6)
    assert mm.auroc([1, 1], [1, 1, 1]) == 0.5
    assert mm.auroc([2, 3], [0, 1]) == 1.0 and mm.auroc([0, 1], [2, 3]) == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        mm.auroc([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        mm.auroc([np.nan], [1.0])


def test_auroc_table_known_answers(tiny):
    lower = tiny.assign(metric="err", higher_is_better=False, score=-tiny["score"])  # same ordering, lower-is-better
    t = mm.auroc_table(pd.concat([tiny, lower]), n_bootstrap=50, seed=0).set_index(["metric", "aspect"])
    # location: insig {.9, 1} all above sig {.2, .4}
    assert t.at[("m", "location"), "auroc"] == 1.0
    # negation: insig {.8} (NaN dropped and counted) vs sig {.5}
    assert t.at[("m", "negation"), "auroc"] == 1.0 and t.at[("m", "negation"), "n_undefined"] == 1
    # overall: insig {.9, 1, .8} vs sig {.2, .4, .5}
    assert t.at[("m", "Overall"), "auroc"] == 1.0
    assert t.at[("err", "Overall"), "auroc"] == 1.0  # the lower-is-better metric is negated first
    assert (t["p_adj"] >= t["pvalue"] - 1e-12).all()  # BH never lowers a p-value


# ----------------------------------------------------------------------------- monotonicity


def test_violated_transitions_by_hand():
    assert mm.violated_transitions([5, 4, 4.5, 3, 3.5]) == [1, 3]
    assert mm.violated_transitions([5, 4, 3, 2, 1]) == []
    assert mm.violated_transitions([3, 3]) == []  # equal is not a rise
    with pytest.raises(ValueError, match="NaN"):
        mm.violated_transitions([1, np.nan, 0])
    with pytest.raises(ValueError, match="at least two"):
        mm.violated_transitions([1])


def test_kendall_tau_by_hand():
    g = [0, 1, 2, 3, 4]
    assert mm.kendall_tau(g, [5, 4, 3, 2, 1]) == pytest.approx(1.0)
    assert mm.kendall_tau(g, [1, 2, 3, 4, 5]) == pytest.approx(-1.0)
    # one discordant pair (groups 1, 2: the score rises 3 -> 4) of 10: (9 - 1) / 10
    assert mm.kendall_tau(g, [5, 3, 4, 2, 1]) == pytest.approx(0.8)
    assert math.isnan(mm.kendall_tau(g, [1, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="aligned"):
        mm.kendall_tau([0, 1], [1, 2, 3])


def _mono_frame():
    rows = []
    for study in ("r1", "r2", "r3"):
        for g in range(5):
            base = {"r1": 0.0, "r2": 0.05, "r3": 0.1}[study]
            rows.append(_row("perfect", "stylistic", "inaccuracy", "insignificant", 0.9 - 0.1 * g - base,
                             pair=f"p{study}{g}", study=study, group=g))
            # rises from group 1 to 2 in every report
            bumpy = [0.9, 0.6, 0.7, 0.4, 0.3][g] - base
            rows.append(_row("bumpy", "stylistic", "inaccuracy", "insignificant", bumpy, pair=f"b{study}{g}",
                             study=study, group=g))
    df = pd.DataFrame(rows)
    df["group"] = df["group"].astype("Int64")
    return df


def test_monotonicity_known_answers():
    s = mm.monotonicity_summary(_mono_frame(), n_bootstrap=30, seed=0).set_index("metric")
    assert s.at["perfect", "violations"] == 0 and s.at["perfect", "violated"] == "none"
    assert s.at["perfect", "tau"] == pytest.approx(1.0) and s.at["perfect", "tau_of_means"] == pytest.approx(1.0)
    assert s.at["perfect", "mean_g0"] == pytest.approx(100 * (0.9 - 0.05))
    assert s.at["bumpy", "violations"] == 1 and s.at["bumpy", "violated"] == "1→2"
    assert s.at["bumpy", "tau"] == pytest.approx(0.8)  # one discordant pair per report
    long = mm.monotonicity_long(_mono_frame(), n_bootstrap=30)
    row = long[(long["metric"] == "bumpy") & (long["group"] == 2)].iloc[0]
    assert row["estimate"] == pytest.approx(100 * (0.7 - 0.05)) and row["low"] <= row["estimate"] <= row["high"]


def test_monotonicity_needs_groups(tiny):
    with pytest.raises(DataFormatError, match="monotonicity pairs"):
        mm.monotonicity_summary(tiny)


# ----------------------------------------------------------------------------- agreement


def _counts(**raters):
    rows = [{"item": i, "rater": r, "v": x} for r, xs in raters.items() for i, x in enumerate(xs)]
    return pd.DataFrame(rows)


def test_pairwise_correlations_by_hand():
    # a = [-1.5, -.5, .5, 1.5], b = [-1.5, .5, -.5, 1.5]: a.b = 4, |a|^2 = |b|^2 = 5 -> r = 0.8 (Spearman too)
    pw = mm.pairwise_rater_correlations(_counts(A=[1, 2, 3, 4], B=[1, 3, 2, 4]), item=["item"], rater="rater", values=["v"])
    assert pw.loc[0, "pearson"] == pytest.approx(0.8) and pw.loc[0, "spearman"] == pytest.approx(0.8)
    assert pw.loc[0, "n"] == 4
    mean = mm.mean_pairwise_agreement(_counts(A=[0, 1, 2, 3], B=[0, 1, 2, 3], C=[3, 2, 1, 0]), item=["item"],
                                      rater="rater", values=["v"])
    assert mean["v"] == pytest.approx((1 - 1 - 1) / 3)
    # a constant rater has no correlation: left out of the mean
    mean = mm.mean_pairwise_agreement(_counts(A=[1, 2, 3, 4], B=[1, 3, 2, 4], C=[0, 0, 0, 0]), item=["item"],
                                      rater="rater", values=["v"])
    assert mean["v"] == pytest.approx(0.8)


def test_agreement_bad_inputs():
    with pytest.raises(DataFormatError, match="two raters"):
        mm.pairwise_rater_correlations(_counts(A=[1, 2, 3]), item=["item"], rater="rater", values=["v"])
    dup = pd.concat([_counts(A=[1, 2, 3], B=[1, 2, 3])] * 2)
    with pytest.raises(DataFormatError, match="more than one row"):
        mm.pairwise_rater_correlations(dup, item=["item"], rater="rater", values=["v"])
    with pytest.raises(DataFormatError, match="lacks the columns"):
        mm.pairwise_rater_correlations(_counts(A=[1, 2, 3], B=[1, 2, 3]), item=["item"], rater="rater", values=["w"])


def _radpref_folder(tmp_path, sig="urgent"):
    case = {k: "" for k in ("id", "ground_truth_report", "ground_truth_findings", "C1_report", "C1_findings",
                            "C1_source", "C2_report", "C2_findings", "C2_source", "PatientAge", "PatientSex",
                            "Indication", "Comparison", "StudyDescription")}
    case.update(id="c1", C1_source="gpt", C2_source="medgemma", PatientSex="F", PatientAge="070Y",
                ground_truth_findings="[]", C1_findings="[]", C2_findings="[]")
    (tmp_path / "preference_data.json").write_text(json.dumps([case]))
    (tmp_path / "radiologist_annotations").mkdir()
    ann = {"finding_errors": {"0": {"error_type": "false", "clinical_significance": sig},
                              "1": {"error_type": "attribute", "attributes": {"location": "significant", "severity": "negligible"}}},
           "missing_findings": {"2": {"clinical_significance": "benign_expected"}}, "rating": 3}
    empty = {"finding_errors": {}, "missing_findings": {}, "rating": 5}
    for r in (1, 2, 3):
        (tmp_path / "radiologist_annotations" / f"user_{r}.json").write_text(
            json.dumps({"user_id": r, "annotations": {"c1": {"C1": ann, "C2": empty}}}))
    return tmp_path


def test_radpref_counts_mapping(tmp_path):
    c = mm.radpref_error_counts(_radpref_folder(tmp_path))
    assert len(c) == 6 and set(c["rater"]) == {1, 2, 3}
    r = c[(c["candidate"] == "C1")].iloc[0]
    assert (r["significant_fabrication"], r["insignificant_fabrication"]) == (1, 0)  # urgent false finding
    assert (r["significant_inaccuracy"], r["insignificant_inaccuracy"]) == (1, 1)  # one attribute each way
    assert (r["significant_omission"], r["insignificant_omission"]) == (0, 1)  # benign missed finding
    assert r["significant_total"] == 2 and r["insignificant_total"] == 2
    assert c[c["candidate"] == "C2"][["significant_total", "insignificant_total"]].sum().sum() == 0


def test_radpref_bad_significance(tmp_path):
    with pytest.raises(DataFormatError, match="significance 'deadly'"):
        mm.radpref_error_counts(_radpref_folder(tmp_path, sig="deadly"))


def test_radpref_counts_agree_with_the_loader(shared_data):
    from radaudit.data import load_dataset

    ann = load_dataset("radpref_annotations", shared_data)
    c = mm.radpref_error_counts(ann.attrs["folder"])
    assert len(c) == len(ann) == 600
    m = c.merge(ann, on=["case_id", "candidate", "rater"])
    fab = m["significant_fabrication"] + m["insignificant_fabrication"]
    om = m["significant_omission"] + m["insignificant_omission"]
    inacc = m["significant_inaccuracy"] + m["insignificant_inaccuracy"]
    assert (fab + om == m["n_false_findings"] + m["n_missing_findings"]).all()
    assert (inacc == m["n_attribute_errors_significant"] + m["n_attribute_errors_negligible"]).all()
    t = mm.agreement_table(mm.radpref_agreement(c, n_bootstrap=0), "pearson")
    assert list(t["Reports"]) == ["gpt reports", "medgemma reports", "all reports"]
    assert "Significant fabrication" in t.columns and "Insignificant inaccuracy" in t.columns


def test_rexval_zero_fill_and_table1_layout(fixtures_dir):
    from radaudit.data import load_dataset

    err = load_dataset("rexval", path=fixtures_dir / "rexval", table="errors")
    c = mm.rexval_error_counts(err)
    # fixture: study 0, radgraph, rater 0 has category 1 (1 sig, 0 insig) and no row for category 3 -> 0
    r = c[(c["study_number"] == 0) & (c["candidate_type"] == "radgraph") & (c["rater_index"] == 0)].iloc[0]
    assert r["significant_1"] == 1 and r["insignificant_1"] == 0 and r["significant_3"] == 0
    t = mm.agreement_table(mm.rexval_agreement(c), "pearson")
    assert list(t.columns) == ["Reports", *[f"Significant {k}" for k in range(1, 7)], *[f"Insignificant {k}" for k in range(1, 7)]]
    assert set(t["Reports"]) == {"BERTScore reports", "BLEU reports", "Radgraph reports", "S-Emb reports"}


def test_rexval_agreement_by_hand():
    # 4 studies, 1 candidate type, 2 raters; category-1 significant counts r0 = [1,2,3,4], r1 = [1,3,2,4] -> r = 0.8
    rows = [{"study_number": s, "candidate_type": "bleu", "rater_index": r, "error_category": 1,
             "num_errors_significant": x, "num_errors_insignificant": 0}
            for r, xs in ((0, [1, 2, 3, 4]), (1, [1, 3, 2, 4])) for s, x in enumerate(xs)]
    c = mm.rexval_error_counts(pd.DataFrame(rows))
    long = mm.rexval_agreement(c, n_bootstrap=0).set_index(["method", "value"])
    assert long.at[("pearson", "significant_1"), "estimate"] == pytest.approx(0.8)
    assert math.isnan(long.at[("pearson", "significant_2"), "estimate"])  # all zeros: undefined
    with pytest.raises(DataFormatError, match="table='errors'"):
        mm.rexval_error_counts(pd.DataFrame({"x": [1]}))


# ----------------------------------------------------------------------------- scoring and params


def _pairs():
    return pd.DataFrame({"pair_id": ["a", "b"], "study_id": ["1", "2"], "source": ["x", "x"], "gt": ["No effusion.", "Mild cardiomegaly."],
                         "rewritten": ["No effusion.", "Severe cardiomegaly."], "aspect": ["stylistic", "severity"],
                         "error_type": ["inaccuracy", "inaccuracy"], "significance": ["insignificant", "significant"],
                         "group": pd.array([pd.NA, pd.NA], dtype="Int64")})


def test_score_pairs_long_table_and_skips():
    scores, skipped = mm.score_pairs(_pairs(), ["rougeL", "radgraph_f1"])
    assert list(scores.columns) == list(mm.SCORE_COLUMNS) and len(scores) == 2
    assert scores.set_index("pair_id").at["a", "score_100"] == pytest.approx(100.0)
    if "radgraph_f1" in skipped:  # not installed here: skipped with the reason, never a failure
        assert "radgraph" in skipped["radgraph_f1"]
    with pytest.raises(ParamsError, match="unknown metrics"):
        mm.score_pairs(_pairs(), ["not_a_metric"])


def test_score_pairs_bad_inputs():
    with pytest.raises(DataFormatError, match="empty"):
        mm.score_pairs(_pairs().iloc[:0], ["rougeL"])
    with pytest.raises(DataFormatError, match="columns"):
        mm.score_pairs(_pairs().drop(columns="gt"), ["rougeL"])
    with pytest.raises(DataFormatError, match="duplicate"):
        mm.score_pairs(_pairs().assign(pair_id="a"), ["rougeL"])


def test_params_validation_and_paper_defaults():
    from radaudit.perturb.llm import PAPER_LLM

    p = mm.Params()
    assert p.llm_model == PAPER_LLM["model"] and p.llm_strategy == PAPER_LLM["strategy"]
    assert p.llm_max_new_tokens == PAPER_LLM["max_new_tokens"] and p.n_per_cell == 10
    with pytest.raises(ParamsError, match="unknown metrics"):
        validate_params(mm.Params, {"metrics": ["bleu4", "bleuu"]})
    with pytest.raises(ParamsError, match="engine"):
        validate_params(mm.Params, {"engine": "gpt"})
    assert mm.resolve_metrics(None)[:1] == ["bleu1"]


def test_min_rules_per_cell_finding_names_the_thin_cells():
    cells = pd.DataFrame({"column": ["Location E", "Location E", "Neg. S", "Neg. S"],
                          "significance": ["significant", "insignificant"] * 2,
                          "n_pairs": [10, 10, 10, 0], "n_rules": [3, 4, 2, 0], "rules": ""})
    f = mm.rules_finding(cells)
    assert f.id == "min_rules_per_cell" and f.value == 2 and f.verdict == "n/a"
    assert "fewer than 3 rules: Neg. S (significant: 2)" in f.note
    assert "cells without pairs: Neg. S (insignificant: 0)" in f.note
    full = mm.rules_finding(cells.assign(n_rules=[3, 3, 5, 0]))
    assert full.value == 3 and "every filled cell has at least 3 rules" in full.note
