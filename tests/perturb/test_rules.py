"""Each rewrite rule on a hand-written report: the exact expected rewrite, its verification, and None
when the report has nothing of that kind (ReEvalMed Table 2 aspects, paper 001)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from radaudit.data import chexpert_phrases_dir
from radaudit.perturb import ASPECTS, ERROR_TYPES, RULES, SIGNIFICANCE, rules_for
from radaudit.perturb.base import apply_edits
from radaudit.perturb.verify import verify_rewrite
from radaudit.text.labeler import ChexpertLabeler

CASE_DIR = Path(__file__).parent / "rule_cases"


def _load_cases() -> list[dict]:
    """``{rule, gt, expected}`` (the exact ME with ``random.Random(0)``) from ``rule_cases/<aspect>.yaml``."""
    return [c for path in sorted(CASE_DIR.glob("*.yaml")) for c in yaml.safe_load(path.read_text())]


RAW_CASES = _load_cases()
CASES = [(c["rule"], c["gt"], c["expected"]) for c in RAW_CASES]
#: Rules that add text and so also edit a report with no finding (``adds_to_any_report: true`` in the YAML).
ADDS_TO_ANY = {c["rule"] for c in RAW_CASES if c.get("adds_to_any_report")}


@pytest.fixture(scope="module")
def labeler(shared_data):
    return ChexpertLabeler(chexpert_phrases_dir(shared_data))


def test_every_rule_has_a_case():
    assert {c[0] for c in CASES} == set(RULES)


@pytest.mark.parametrize(("name", "gt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule_rewrites_exactly(name, gt, expected):
    rw = RULES[name](gt, random.Random(0))
    assert rw is not None
    assert rw.apply(gt) == expected
    assert rw.explanation


@pytest.mark.parametrize(("name", "gt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule_rewrite_passes_its_own_verification(name, gt, expected, labeler):
    r = RULES[name]
    rw = r(gt, random.Random(0))
    me, spans = apply_edits(gt, rw.edits)
    v = verify_rewrite(gt, me, spans, r.check, labeler)
    assert v.ok, v.note


NOTHING_TO_EDIT = "Heart size is normal."


@pytest.mark.parametrize("name", sorted(set(RULES) - ADDS_TO_ANY))
def test_rule_returns_none_without_an_editable_fact(name):
    assert RULES[name](NOTHING_TO_EDIT, random.Random(0)) is None


def test_negated_findings_are_not_edited_as_asserted():
    assert RULES["loc_flip_side"]("No left pleural effusion.", random.Random(0)) is None
    assert RULES["sev_shift_two"]("No large pneumothorax.", random.Random(0)) is None
    assert RULES["desc_opposite"]("There are no focal areas of consolidation.", random.Random(0)) is None


def test_upper_case_reports_keep_their_case():
    rw = RULES["sev_add_severe"]("LEFT PLEURAL EFFUSION. NO PNEUMOTHORAX.", random.Random(0))
    assert rw.apply("LEFT PLEURAL EFFUSION. NO PNEUMOTHORAX.") == "LARGE LEFT PLEURAL EFFUSION. NO PNEUMOTHORAX."


def test_articles_follow_the_edit():
    gt = "There is an 8mm nodule in the left lower lobe."
    assert RULES["size_drop"](gt, random.Random(0)).apply(gt) == "There is a nodule in the left lower lobe."


def test_every_cell_of_table2_has_a_rule():
    for aspect in ASPECTS:
        for sig in SIGNIFICANCE:
            assert rules_for(aspect, sig), (aspect, sig)
    for aspect in ("location", "severity", "description", "comparison"):
        for sig in SIGNIFICANCE:
            for et in ERROR_TYPES:
                assert rules_for(aspect, sig, et), (aspect, sig, et)


def test_rules_for_rejects_unknown_cells():
    from radaudit.errors import ParamsError

    with pytest.raises(ParamsError, match="Allowed"):
        rules_for("laterality", "significant")


def test_insignificant_rules_leave_what_changes_management():
    """The side of a pneumothorax decides where the chest tube goes: loc_drop_side (insignificant) must not drop it;
    style_reorder moves a sentence that leans on the previous one ("This is ...") together with it."""
    assert RULES["loc_drop_side"]("Small right apical pneumothorax. Heart size is normal.", random.Random(0)) is None
    gt = "There is separation of the right AC joint. This is age-indeterminate. No pneumothorax. Heart size is normal."
    for seed in range(5):
        me = RULES["style_reorder"](gt, random.Random(seed)).apply(gt)
        assert "There is separation of the right AC joint. This is age-indeterminate." in me
