"""Verification: only the intended part changed (text), in the intended way (labels / attributes)."""

from __future__ import annotations

import pytest

from radaudit.data import chexpert_phrases_dir
from radaudit.perturb.base import Edit, apply_edits
from radaudit.perturb.verify import (
    changed_envelope,
    check_outside,
    labels,
    local_attr,
    severity_shift,
    size_ratio,
    verify_declared_span,
    verify_rewrite,
)
from radaudit.text.labeler import ChexpertLabeler

GT = "Small left pleural effusion. No pneumothorax."


def test_apply_edits_maps_spans():
    me, spans = apply_edits(GT, [Edit(6, 10, "right"), Edit(29, 31, "A")])
    assert me == "Small right pleural effusion. A pneumothorax."
    assert spans == [((6, 10), (6, 11)), ((29, 31), (30, 31))]
    with pytest.raises(ValueError, match="overlaps"):
        apply_edits(GT, [Edit(6, 10, "x"), Edit(8, 12, "y")])


def test_edit_inside_span_passes():
    me, spans = apply_edits(GT, [Edit(6, 10, "right")])
    v = verify_rewrite(GT, me, spans)
    assert v.ok and "unchanged" in v.note


def test_edit_outside_span_is_caught():
    # the declared edit is left -> right, but the rewrite also drops the negation of pneumothorax
    me = "Small right pleural effusion. Pneumothorax."
    v = verify_rewrite(GT, me, [((6, 10), (6, 11))])
    assert not v.ok
    assert "outside the edited span" in v.note and "'No pneumothorax' -> 'Pneumothorax' at GT 29" in v.note


def test_identical_rewrite_is_not_verified():
    assert not verify_rewrite(GT, GT, [((0, 0), (0, 0))]).ok


def test_check_outside_reports_malformed_spans():
    assert "malformed" in check_outside(GT, GT, [((10, 6), (6, 10))])[0]


def test_changed_envelope_widens_to_words():
    (ga, gb), (ma, mb) = changed_envelope("mild effusion", "mold effusion")
    assert ("mild effusion"[ga:gb], "mold effusion"[ma:mb]) == ("mild", "mold")
    assert changed_envelope("a", "a") is None


def test_declared_span_check():
    me = "Small right pleural effusion. No pneumothorax."
    assert verify_declared_span(GT, me, (6, 10), (6, 11)).ok
    assert not verify_declared_span(GT, me, (0, 5), (0, 5)).ok


def test_semantic_checks():
    me, spans = apply_edits(GT, [Edit(0, 5, "Large")])
    assert verify_rewrite(GT, me, spans, severity_shift(2, 4)).ok
    assert not verify_rewrite(GT, me, spans, severity_shift(0.5, 1)).ok
    assert not verify_rewrite(GT, me, spans, local_attr("severity", "same")).ok
    gt2 = "A 3 cm mass."
    me2, spans2 = apply_edits(gt2, [Edit(2, 6, "7.5 cm")])
    assert verify_rewrite(gt2, me2, spans2, size_ratio(2.3, 2.7)).ok


def test_label_checks_use_the_labeler(shared_data):
    lab = ChexpertLabeler(chexpert_phrases_dir(shared_data))
    gt = "No pneumothorax."
    me, spans = apply_edits(gt, [Edit(0, 15, "Pneumothorax")])
    assert verify_rewrite(gt, me, spans, labels("differ"), lab).ok
    v = verify_rewrite(gt, me, spans, labels("same"), lab)
    assert not v.ok and "labels changed" in v.note
    # without a labeler the label check is skipped, and the note says so
    v = verify_rewrite(gt, me, spans, labels("same"), None)
    assert v.ok and "skipped" in v.note
