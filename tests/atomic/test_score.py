"""Eq. 3, Eq. 4 and the fuzzy alignment, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from radaudit.atomic.score import aggregate, align_findings, f1, level_scores, name_similarity, ratio
from radaudit.errors import ParamsError


def test_eq3_hand_computed():
    # 2 of 3 predicted facts confirmed by the reference, 3 of 4 reference facts found in the prediction
    p, r, f = level_scores(c_inf_gt=2, n_inf=3, c_gt_inf=3, n_gt=4)
    assert p == pytest.approx(2 / 3) and r == pytest.approx(3 / 4)
    assert f == pytest.approx(2 * (2 / 3) * (3 / 4) / (2 / 3 + 3 / 4))  # = 12/17


def test_eq3_both_reports_without_statements_score_one():
    assert level_scores(0, 0, 0, 0) == (1.0, 1.0, 1.0)


def test_eq3_one_empty_side_is_vacuous_but_f1_still_falls():
    # the prediction states nothing, the reference has one unmatched fact: P = 1 (nothing asked), R = 0, F1 = 0
    assert level_scores(0, 0, 0, 1) == (1.0, 0.0, 0.0)


def test_eq4_equal_weights_hand_computed():
    p, r, f = aggregate(p_dis=2 / 3, r_dis=1.0, p_attr=1.0, r_attr=0.5)
    assert p == pytest.approx(5 / 6) and r == pytest.approx(0.75)
    assert f == pytest.approx(2 * (5 / 6) * 0.75 / (5 / 6 + 0.75))


def test_eq4_without_attribute_questions_uses_the_disease_level():
    assert aggregate(0.5, 1.0, None, None) == (0.5, 1.0, pytest.approx(2 / 3))
    assert aggregate(0.5, 1.0, math.nan, math.nan)[:2] == (0.5, 1.0)


def test_eq4_weight_and_errors():
    assert aggregate(1.0, 1.0, 0.0, 0.0, weight=0.75)[:2] == (0.75, 0.75)
    with pytest.raises(ParamsError, match="weight"):
        aggregate(1, 1, 1, 1, weight=1.5)
    with pytest.raises(ParamsError, match="correct"):
        ratio(3, 2)
    assert f1(0.0, 0.0) == 0.0


def test_name_similarity_is_normalised_indel_ratio():
    assert name_similarity("Pleural effusion", "pleural effusion.") == 1.0
    # Indel ratio: 2 * 16 / (16 + 17)
    assert name_similarity("pleural effusion", "pleural effusions") == pytest.approx(32 / 33)
    assert name_similarity("effusion", "pleural effusion") == pytest.approx(16 / 24)
    assert name_similarity("effusion", "left pleural effusion", "token_set_ratio") == 1.0
    with pytest.raises(ParamsError, match="scorer"):
        name_similarity("a", "b", "cosine")


def test_alignment_needs_both_directions_and_theta():
    gt = ["pleural effusion", "pneumothorax", "nodule"]
    inf = ["pleural effusions", "nodule", "pneumothorax"]
    # pneumothorax not matched in the GT->INF direction: not aligned even though the names agree
    al = align_findings(gt, inf, [True, False, True], [True, True, True], theta=0.8)
    assert [(i, j) for i, j, _ in al] == [(0, 0), (2, 1)]
    assert al[0][2] == pytest.approx(32 / 33)
    # at theta = 0.99 the plural no longer aligns
    assert [(i, j) for i, j, _ in align_findings(gt, inf, [True] * 3, [True] * 3, theta=0.99)] == [(1, 2), (2, 1)]


def test_alignment_is_one_to_one_most_similar_first():
    al = align_findings(["effusion"], ["effusions", "effusion"], [True], [True, True], theta=0.8)
    assert [(i, j) for i, j, _ in al] == [(0, 1)]
    with pytest.raises(ParamsError, match="theta"):
        align_findings([], [], [], [], theta=2)
