"""AtomiMed-clinical, issue 41 after holdout5: paraphrase and severity rules, on report pairs written here (none is
taken from a ranking suite). Each rule has a pair whose score it changes: the assertion fails without the rule (the
before-values, measured on the code before the rule, are in the comments)."""

from __future__ import annotations

import pytest

from radaudit.atomic.clinical import UNDERCALL_FACTOR, clinical_scores, facet_credit, score_pairs_clinical
from radaudit.atomic.concepts import load_tables, rewrite
from radaudit.atomic.schema import Attributes, Finding


def f1(reference: str, candidate: str) -> float:
    return float(score_pairs_clinical([reference], [candidate])["f1"][0])


def F(name: str, present: str = "yes", **attrs) -> Finding:  # noqa: N802
    return Finding(name=name, present=present, attributes=Attributes(**attrs))


# ------------------------------------------------------------------------------------------------ paraphrase

@pytest.mark.parametrize("candidate", ["Negative for pneumothorax.", "Pneumothorax is not seen.",
                                       "No evidence of pneumothorax.", "Lungs clear without pneumothorax."])
def test_negation_phrasings_compare_equal(candidate):
    assert f1("No pneumothorax.", candidate) == 1.0


@pytest.mark.parametrize("candidate", ["No acute cardiopulmonary process.", "Unremarkable chest radiograph."])
def test_normal_phrasings_compare_equal(candidate):
    assert f1("Normal chest radiograph.", candidate) == 1.0


def test_laterality_abbreviations_are_the_side_and_a_changed_side_ranks_below():
    ref = "Small left pleural effusion."
    # before: "Small L" 0.89, "Small Lt." 0.91, and the WRONG side "Small rt" 0.96 above both
    assert f1(ref, "Small L pleural effusion.") == f1(ref, "Small Lt. pleural effusion.") == 1.0
    assert f1(ref, "Small rt pleural effusion.") == f1(ref, "Small right pleural effusion.") < 0.5
    assert rewrite("Post RT fibrosis.") == "Post RT fibrosis."  # RT is also radiotherapy: left alone
    assert rewrite("5 L of oxygen") == "5 L of oxygen"          # litres after a number


def test_an_intercostal_drain_is_a_chest_tube():
    # before: the drain was not read (0.75, as silence about it)
    assert f1("Right chest tube in place. No pneumothorax.", "Right intercostal drain in place. No pneumothorax.") == 1.0


def test_a_contrasted_place_is_not_the_tip():
    ref = "Endotracheal tube tip in the right main bronchus; withdraw by 2 cm."
    # before: 0.9787 ("trachea" read as a second tip)
    assert f1(ref, "Endotracheal tube tip lies in the right main bronchus rather than the trachea; withdraw by 2 cm.") \
        == f1(ref, ref) == 1.0


def test_number_words_before_a_unit_are_read_as_digits():
    # before: 0.9677 (the size not read)
    assert f1("Nodule measuring 3 cm in the right upper lobe.",
              "Nodule measuring three centimetres in the right upper lobe.") == 1.0
    assert rewrite("two nodules; no one") == "two nodules; no one"


def test_grade_words_read_as_their_grade():
    # before: "sizeable" unread, 0.7097, below "moderate" (0.7234)
    ref = "Large left pleural effusion."
    assert f1(ref, "Sizeable left pleural effusion.") == 1.0 > f1(ref, "Moderate left pleural effusion.")
    assert rewrite("minor fissure") == "minor fissure" and rewrite("minor effusion") == "small effusion"


def test_an_airspace_opacity_is_a_consolidation_a_bare_opacity_stays_generic():
    ref = "Consolidation in the left upper lobe."
    # before: all three 0.8 (every opacity at GENERIC_CREDIT 0.5)
    assert f1(ref, "Airspace opacity in the left upper lobe.") == f1(ref, "Left upper lobe airspace disease.") == 1.0
    assert 0.5 < f1(ref, "Opacity in the left upper lobe.") < 1.0
    # more shared words, another side: below the faithful paraphrase and the bare opacity
    assert f1(ref, "Airspace opacity in the right upper lobe.") < f1(ref, "Opacity in the left upper lobe.")
    assert any(r.morphology == "airspace" for r in load_tables().relations)


def test_a_fissure_bounding_the_lobe_is_not_a_second_place():
    # before: 0.9091 (the fissure counted as one more region family)
    assert f1("Right middle lobe consolidation.",
              "Consolidation of the right middle lobe, bounded by the horizontal fissure.") == 1.0


def test_a_sign_folded_into_its_finding_gives_it_its_grade():
    ref = "Large hiatus hernia."
    # before: 0.9565 ("large" stayed on the folded sign)
    assert f1(ref, "Large retrocardiac air-fluid level, in keeping with a hiatus hernia.") == 1.0
    assert f1(ref, "Retrocardiac air-fluid level, in keeping with a hiatus hernia.") < 1.0


# ------------------------------------------------------------------------------------------------ severity

def test_under_call_costs_more_than_over_call_for_an_actionable_finding():
    # hand-computed: severity credit 1 - 1.5 * 1/3 = 1/2 below, 1 - 1/3 = 2/3 above
    assert facet_credit("severity", "small", "trace", under=UNDERCALL_FACTOR) == pytest.approx(0.5)
    assert facet_credit("severity", "small", "moderate", under=UNDERCALL_FACTOR) == pytest.approx(2 / 3)
    # a range that reaches the reference's grade is not an under-call
    assert facet_credit("severity", "moderate", "small to moderate", under=UNDERCALL_FACTOR) == \
        facet_credit("severity", "moderate", "moderate to large", under=UNDERCALL_FACTOR)
    ref = [F("pleural effusion", location="right", severity="small")]
    trace_, _ = clinical_scores(ref, [F("pleural effusion", location="right", severity="trace")])
    over, _ = clinical_scores(ref, [F("pleural effusion", location="right", severity="moderate")])
    # trace: a = (1 + 1/2)/2 = 3/4, credit 1/2 + 1/2 * 3/4 = 7/8, R = (2 * 7/8 + 1)/3 = 11/12; P = 1
    assert trace_["recall"] == pytest.approx(11 / 12) and trace_["precision"] == 1.0
    # moderate: a = (1 + 2/3)/2 = 5/6, credit 11/12, R = (2 * 11/12 + 1)/3 = 17/18; P = 1 (before: both 17/18, a tie)
    assert over["recall"] == pytest.approx(17 / 18) and over["precision"] == 1.0
    assert f1("Small right pleural effusion.", "Trace right pleural effusion.") < \
        f1("Small right pleural effusion.", "Moderate right pleural effusion.")


def test_an_incidental_finding_keeps_the_symmetric_grade():
    # follow-up tier (weight 1, below the urgent 2): the under-call factor does not apply (it would if it were global)
    ref = [F("hiatal hernia", severity="moderate")]
    small, _ = clinical_scores(ref, [F("hiatal hernia", severity="small")])
    large, _ = clinical_scores(ref, [F("hiatal hernia", severity="large")])
    assert small["recall"] == pytest.approx(large["recall"])


def test_a_benign_mimic_named_for_the_finding_is_a_miss_not_a_second_error():
    ref = "The mediastinum is widened. Recommend CT angiography."
    # before: 0.4444, below silence (the unfolded aorta counted as a false finding too)
    assert f1(ref, "Tortuous thoracic aorta.") == f1(ref, "No pneumothorax.") == 0.5
    # naming the finding, with the mimic as its possible cause, is reporting it
    assert f1(ref, "Widened mediastinum, possibly a tortuous aorta.") > 0.9
    row, trace = clinical_scores([F("widened mediastinum")], [F("tortuous aorta")])
    assert trace[0]["relation"] == "explained away by a mimic: as a miss" and trace[1]["weight"] == 0.0
    assert row["precision"] == 1.0 and row["recall"] == pytest.approx(1 / 3)  # R = (0 + 1)/(2 + 1)


def test_an_acute_fracture_called_old_and_healed_ties_silence():
    ref = "Acute fracture of the right fifth rib."
    # before: 1.0 (the healed fracture read as the same fracture)
    assert f1(ref, "Old healed fracture of the right fifth rib.") == f1(ref, "Lungs clear.") == 0.5
    assert f1("Old healed fracture of the right fifth rib.", "Old healed fracture of the right fifth rib.") == 1.0
    # an old fracture called acute is a false acute finding (before: 1.0)
    assert f1("Old healed fracture of the right fifth rib.", "Acute fracture of the right fifth rib.") < 0.5


def test_a_malposition_in_another_compartment_ranks_below_silence():
    ref = "Nasogastric tube tip in the right main bronchus; remove and reinsert."
    wrong = f1(ref, "Nasogastric tube tip in the esophagus; advance by 10 cm.")   # before: 0.9375
    same = f1(ref, "Nasogastric tube tip in the trachea; remove.")                # airway too: imprecise
    assert wrong < f1(ref, "Lungs clear.") < same < 1.0
    t = load_tables()
    assert t.tip_compartment["esophagus"] == "digestive" and t.tip_compartment["right mainstem bronchus"] == "airway"
