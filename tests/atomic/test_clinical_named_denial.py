"""AtomiMed-clinical: a report's named conclusion overrides its own description (issue 41; the mechanism failure seen
while writing up holdout7, fixed as a rule of reading, not from any suite's wording). Pairs written here; the
before-values, measured on 9820436 (before the rule), are in the comments and each assertion fails there."""

from __future__ import annotations

from radaudit.atomic.clinical import clinical_decomposer, score_pairs_clinical
from radaudit.atomic.clinical.prepare import prepare_findings
from radaudit.atomic.concepts import load_tables
from radaudit.atomic.decompose import RuleDecomposer, covers, one_side


def f1(reference: str, candidate: str) -> float:
    return float(score_pairs_clinical([reference], [candidate])["f1"][0])


def present(text: str) -> dict[str, str]:
    return {f.name: f.present for f in clinical_decomposer().decompose_one(text)}


def prepared(text: str) -> dict[str, str]:
    return {f.name: f.present for f in prepare_findings(clinical_decomposer().decompose_one(text), load_tables())}


def test_a_finding_only_described_and_denied_by_name_is_absent():
    said = "Gas beneath the right hemidiaphragm. No pneumoperitoneum."
    assert present(said) == {"pneumoperitoneum": "no"}
    assert present("Gas beneath the right hemidiaphragm.") == {"pneumoperitoneum": "yes"}  # the description alone
    # scored as the denial it is (before: 1.0, the same as naming the finding)
    assert f1("Pneumoperitoneum.", said) == f1("Pneumoperitoneum.", "No pneumoperitoneum.") < \
        f1("Pneumoperitoneum.", "Heart size normal.") < f1("Pneumoperitoneum.", "Gas beneath the right hemidiaphragm.")
    # the paper's atomimed reads as before: its lexicon marks no form as descriptive (the positive mention wins)
    assert {f.name: f.present for f in RuleDecomposer().decompose_one(said)} == {"pneumoperitoneum": "yes"}


def test_a_named_mention_or_a_denial_on_another_side_keeps_the_finding():
    # "free air" names pneumoperitoneum (the concept table's names): a self-contradiction, left as the positive
    assert present("Free air beneath the right hemidiaphragm. No pneumoperitoneum.") == {"pneumoperitoneum": "yes"}
    # a lay description on the right is not denied by a denial on the left (and is, by an unsided one)
    assert present("Air around the right lung. No pneumothorax on the left.") == {"pneumothorax": "yes"}
    assert present("Fluid around the left lung. No pleural effusion on the right.") == {"pleural effusion": "yes"}
    assert present("Air around the right lung. No pneumothorax.") == {"pneumothorax": "no"}
    # "no new effusion" denies a change, not the effusions the report describes
    assert present("Small bilateral effusions, unchanged. No new pleural effusion.") == {"pleural effusion": "yes"}


def test_a_sign_whose_findings_are_all_denied_by_name_is_dropped():
    assert prepared("Deep sulcus sign on the left. No pneumothorax.") == {"pneumothorax": "no"}
    assert prepared("Continuous diaphragm sign. No pneumomediastinum.") == {"pneumomediastinum": "no"}
    # kept: a denial on the other side, a denial of a change only, or no denial
    assert prepared("Deep sulcus sign on the left. No pneumothorax on the right.")["deep sulcus sign"] == "yes"
    assert prepared("Deep sulcus sign on the left. No new pneumothorax.")["deep sulcus sign"] == "yes"
    assert prepared("Deep sulcus sign on the left.") == {"deep sulcus sign": "yes"}
    # before: 0.7059, above the plain denial (0.4444) and close to the sign alone (0.75)
    ref = "Left pneumothorax."
    assert f1(ref, "Deep sulcus sign on the left. No pneumothorax.") == f1(ref, "No pneumothorax.") < \
        f1(ref, "Deep sulcus sign on the left.")


def test_one_side():
    assert one_side(["right apex"]) == {"right"}
    assert one_side(["left", "left lower lobe"]) == {"left"}
    assert one_side(["right", "left"]) == frozenset() == one_side(["bilateral"]) == one_side([]) == one_side(["apex"])


def test_covers():
    left, right, none = frozenset({"left"}), frozenset({"right"}), frozenset()
    assert covers([none], right) and covers([none], none)  # an unsided denial covers any statement
    assert covers([left, right], right) and not covers([left], right)
    assert not covers([left], none)  # a sided denial does not cover an unsided description
    assert not covers([], right)
