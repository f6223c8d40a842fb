"""The issue's "done when" cases with the rule backend: hand-made pairs with hand-computed scores.

GT = "Small left pleural effusion. No pneumothorax." decomposes into two disease facts,
effusion = yes (location "left", severity "Small") and pneumothorax = no.
"""

from __future__ import annotations

import pytest

from radaudit.atomic import score_pair, score_pairs, trace_of

GT = "Small left pleural effusion. No pneumothorax."


def test_identical_reports_score_one():
    row = score_pair(GT, GT)
    assert (row.precision, row.recall, row.f1) == (1.0, 1.0, 1.0)
    assert (row.disease_f1, row.attribute_f1) == (1.0, 1.0)
    # 2 disease + 2 attribute questions in each direction, all matched
    assert (row.n_disease_gt, row.n_disease_inf, row.n_attribute_gt, row.n_attribute_inf) == (2, 2, 2, 2)


@pytest.mark.parametrize("ref, pred", [
    ("", ""),                                                      # no statements on either side (paper's rule)
    ("Normal chest radiograph.", "No acute cardiopulmonary process."),
    ("Heart size is normal. No pneumothorax. No pleural effusion.", "The lungs are clear. No effusion."),
])
def test_both_normal_score_one(ref, pred):
    row = score_pair(ref, pred)
    assert (row.precision, row.recall, row.f1) == (1.0, 1.0, 1.0)


def test_laterality_swap_hits_the_attribute_level_only():
    row = score_pair(GT, "Small right pleural effusion. No pneumothorax.")
    assert (row.disease_precision, row.disease_recall) == (1.0, 1.0)
    # location mismatches, severity matches, in each direction: 1/2
    assert (row.attribute_precision, row.attribute_recall) == (0.5, 0.5)
    # Eq. 4: P = R = 1/2 * 1 + 1/2 * 1/2 = 0.75
    assert (row.precision, row.recall, row.f1) == (0.75, 0.75, 0.75)
    t = trace_of(row)
    bad = t[~t["match"]]
    assert list(bad["attribute"]) == ["location", "location"]
    assert list(bad["direction"]) == ["gt->inf", "inf->gt"]
    assert list(bad["expected"]) == ["left", "right"] and list(bad["found"]) == ["right", "left"]
    assert list(bad["evidence"]) == ["Small right pleural effusion.", "Small left pleural effusion."]


def test_omitted_finding_lowers_recall_not_precision():
    row = score_pair(GT, "No pneumothorax.")
    # GT->INF: effusion not mentioned (miss), pneumothorax no = no (match): R_dis = 1/2
    # INF->GT: pneumothorax no = no: P_dis = 1; no finding aligned: Eq. 4 uses the disease level
    assert (row.disease_precision, row.disease_recall) == (1.0, 0.5)
    assert (row.precision, row.recall) == (1.0, 0.5)
    assert row.f1 == pytest.approx(2 / 3)
    assert row.n_aligned == 0


def test_fabricated_finding_lowers_precision():
    row = score_pair(GT, GT + " Right upper lobe nodule.")
    # INF->GT: effusion, pneumothorax match, nodule not in GT: P_dis = 2/3; R_dis = 1
    # attributes of the aligned effusion all match: P_attr = R_attr = 1
    assert (row.disease_precision, row.disease_recall) == (pytest.approx(2 / 3), 1.0)
    assert (row.attribute_precision, row.attribute_recall) == (1.0, 1.0)
    # Eq. 4: P = 1/2 * 2/3 + 1/2 * 1 = 5/6, R = 1, F1 = 2 * 5/6 / (11/6) = 10/11
    assert row.precision == pytest.approx(5 / 6) and row.recall == 1.0
    assert row.f1 == pytest.approx(10 / 11)


def test_contradicted_finding_lowers_both():
    row = score_pair(GT, "Small left pleural effusion. Small right pneumothorax.")
    # pneumothorax: GT no vs INF yes, a mismatch in both directions: P_dis = R_dis = 1/2
    assert (row.disease_precision, row.disease_recall) == (0.5, 0.5)
    # the effusion is aligned and its attributes agree: Eq. 4 P = R = 0.75
    assert (row.precision, row.recall, row.f1) == (0.75, 0.75, 0.75)


def test_omitted_attribute_lowers_attribute_recall_only():
    row = score_pair(GT, "Left pleural effusion. No pneumothorax.")
    # GT->INF: location left = left, severity small not mentioned: R_attr = 1/2; INF->GT: location: P_attr = 1
    assert (row.attribute_precision, row.attribute_recall) == (1.0, 0.5)
    assert (row.precision, row.recall) == (1.0, 0.75)


def test_batch_table_and_options():
    refs = [GT, GT, ""]
    preds = [GT, "No pneumothorax.", "Small left pleural effusion."]
    df = score_pairs(refs, preds)
    assert list(df["pair"]) == [0, 1, 2] and df["ok"].all()
    # empty reference vs a finding: R vacuous 1, P = 0 -> F1 = 0
    assert (df.loc[2, "precision"], df.loc[2, "recall"], df.loc[2, "f1"]) == (0.0, 1.0, 0.0)
    assert set(trace_of(df)["pair"]) == {0, 1, 2}
    # an unmentioned pertinent negative is a miss with unmentioned="mismatch"
    strict = score_pairs([GT], ["Small left pleural effusion."], unmentioned="mismatch")
    assert strict.loc[0, "disease_recall"] == 0.5
    lenient = score_pairs([GT], ["Small left pleural effusion."])
    assert lenient.loc[0, "disease_recall"] == 1.0
    assert df.attrs["params"]["theta"] == 0.8
