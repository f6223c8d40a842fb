"""The clinician review sheet: export, strict loading, agreement by hand (ReEvalMed §4.2.1's review step)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from radaudit.errors import DataFormatError
from radaudit.perturb.dataset import pairs_frame
from radaudit.perturb.engine import RewriteTask, RuleEngine
from radaudit.perturb.review import load_review_sheet, review_agreement, review_by_rule, review_sheet

GT = "Heart size is normal. Small left pleural effusion. No pneumothorax."


def _pair(aspect="location", significance="significant", error_type="inaccuracy"):
    out = RuleEngine().rewrite_one(RewriteTask("s1", "x", GT, aspect, significance, error_type, 0))
    assert out.status == "ok"
    return out.pair


def test_sheet_shows_the_edited_sentence_and_blank_reviewer_columns():
    sheet = review_sheet(pairs_frame([_pair()]), n_reviewers=2)
    row = sheet.iloc[0]
    assert row["rule"] == "loc_flip_side" and row["significance"] == "significant"
    assert row["original_sentence"] == "Small left pleural effusion."
    assert row["rewritten_sentence"] == "Small right pleural effusion."
    assert [c for c in sheet.columns if c.startswith("reviewer")] == [
        "reviewer1_significance", "reviewer1_one_change", "reviewer1_comment",
        "reviewer2_significance", "reviewer2_one_change", "reviewer2_comment"]
    assert (sheet.filter(like="reviewer") == "").all().all()


def _filled(tmp_path, r1, r2, one1=("yes", "yes", "no", "")):
    sheet = pd.DataFrame({
        "pair_id": ["a", "b", "c", "d"], "aspect": "location", "error_type": "inaccuracy",
        "significance": ["significant", "significant", "insignificant", "insignificant"],
        "rule": ["R1", "R1", "R2", "R2"], "original_sentence": "x", "rewritten_sentence": "y", "explanation": "",
        "reviewer1_significance": r1, "reviewer1_one_change": list(one1), "reviewer1_comment": "",
        "reviewer2_significance": r2, "reviewer2_one_change": "", "reviewer2_comment": "",
    })
    path = tmp_path / "review_sheet.csv"
    sheet.to_csv(path, index=False)
    return path


def test_agreement_by_hand(tmp_path):
    path = _filled(tmp_path, ["Significant", "insignificant ", "insignificant", "insignificant"],
                   ["significant", "significant", "insignificant", "unsure"])
    sheet = load_review_sheet(path)
    ag = review_agreement(sheet, n_bootstrap=200).set_index("comparison")
    r1 = ag.loc["reviewer1 vs rule: significance"]
    # truth S S I I, reviewer1 S I I I: 3 of 4 agree; p_e = 1/4 * 2/4 + 3/4 * 2/4 = 1/2; kappa = (3/4 - 1/2) / (1/2)
    assert r1["n"] == 4 and r1["agreement"] == pytest.approx(0.75) and r1["kappa"] == pytest.approx(0.5)
    assert r1["low"] < 0.75 < r1["high"]
    # reviewer2's "unsure" is left out and counted
    r2 = ag.loc["reviewer2 vs rule: significance"]
    assert r2["n"] == 3 and r2["agreement"] == pytest.approx(1.0) and r2["n_unsure"] == 1
    # reviewers on the 3 pairs both answered: S I I vs S S I -> 2 of 3
    rr = ag.loc["reviewer1 vs reviewer2: significance"]
    assert rr["n"] == 3 and rr["agreement"] == pytest.approx(2 / 3)
    one = ag.loc["reviewer1: a single change of the stated kind"]
    assert one["n"] == 3 and one["agreement"] == pytest.approx(2 / 3)
    by_rule = review_by_rule(sheet, n_bootstrap=50).set_index(["comparison", "rule"])
    # R1's two significant pairs: reviewer1 called one harmless
    assert by_rule.at[("reviewer1 vs rule: significance", "R1"), "agreement"] == pytest.approx(0.5)
    assert math.isnan(by_rule.at[("reviewer2 vs rule: significance", "R1"), "kappa"])  # one class only


def test_a_typo_in_the_sheet_is_an_error_not_a_disagreement(tmp_path):
    path = _filled(tmp_path, ["significant", "maybe", "", ""], ["", "", "", ""])
    with pytest.raises(DataFormatError, match=r"pair b \(row 3\), column reviewer1_significance: 'maybe' is not one of "
                                              r"significant, insignificant, unsure"):
        load_review_sheet(path)


def test_missing_sheet_and_columns_say_what_to_do(tmp_path):
    with pytest.raises(DataFormatError, match="review_sheet"):
        load_review_sheet(tmp_path / "nope.csv")
    pd.DataFrame({"pair_id": ["a"], "significance": ["significant"], "rule": ["R"]}).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(DataFormatError, match="no reviewer<k>_significance column"):
        load_review_sheet(tmp_path / "s.csv")
