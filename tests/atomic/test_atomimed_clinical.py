"""AtomiMed-clinical (radaudit.atomic.clinical): hand-computed scores, graded facets, the significance table."""

from __future__ import annotations

import math

import pytest

from radaudit.atomic.clinical import (
    ClinicalOptions,
    clinical_scores,
    facet_credit,
    load_significance,
    score_pairs_clinical,
)
from radaudit.atomic.schema import Attributes, Finding
from radaudit.errors import ParamsError
from radaudit.metrics import build_metric


def F(name, present="yes", hedged=False, **attrs):
    return Finding(name=name, present=present, attributes=Attributes(**attrs), hedged=hedged)


def test_one_false_finding_against_a_normal_reference():
    row, _ = clinical_scores([], [F("pneumonia")])
    # P = (0 + κ) / (w + κ) = 1 / (2 + 1); R = (0 + 1) / (0 + 1)
    assert row["precision"] == pytest.approx(1 / 3)
    assert row["recall"] == 1.0
    assert row["f1"] == pytest.approx(0.5)
    assert row["n_false"] == 1


def test_four_false_findings_score_below_one():
    row, _ = clinical_scores([], [F("pneumonia"), F("pleural effusion"), F("cardiomegaly"), F("pneumothorax")])
    # weights 2 + 2 + 1 + 2 = 7: P = 1/8, F1 = 2 (1/8) / (9/8) = 2/9
    assert row["precision"] == pytest.approx(1 / 8)
    assert row["f1"] == pytest.approx(2 / 9)
    one, _ = clinical_scores([], [F("pneumonia")])
    assert one["f1"] > row["f1"]


def test_two_normal_reports_score_one():
    row, _ = clinical_scores([], [])
    assert (row["precision"], row["recall"], row["f1"]) == (1.0, 1.0, 1.0)


def test_tension_is_a_separate_part_of_the_weight():
    ref = [F("pneumothorax", location="right", morphology="tension")]
    row, trace = clinical_scores(ref, [F("pneumothorax", location="right")])
    # reference side: base 2 earns 0.5 + 0.5 * mean(location 1, morphology omitted 0.5) = 0.875 -> 1.75;
    # the tension part (2) earns 0: credit 1.75 / 4; R = (1.75 + 1) / (4 + 1) = 0.55; P = (2 + 1) / (2 + 1) = 1
    assert trace[0]["weight"] == 4.0
    assert row["recall"] == pytest.approx(0.55)
    assert row["precision"] == 1.0
    assert row["f1"] == pytest.approx(2 * 0.55 / 1.55)
    full, _ = clinical_scores(ref, [F("pneumothorax", location="right", morphology="tension")])
    assert full["f1"] == 1.0


def test_missed_emergency_costs_more_than_missed_incidental():
    ref = [F("pneumothorax", location="right", morphology="tension"), F("granuloma", location="left upper lobe")]
    miss_ptx, _ = clinical_scores(ref, [ref[1]])
    miss_granuloma, _ = clinical_scores(ref, [ref[0]])
    # R = (0.5 + 1) / (4.5 + 1) vs (4 + 1) / (4.5 + 1)
    assert miss_ptx["recall"] == pytest.approx(1.5 / 5.5)
    assert miss_granuloma["recall"] == pytest.approx(5 / 5.5)


def test_graded_severity_is_counted_on_both_sides_when_worse_than_omission():
    # the graded facets before issue 41's critical findings (a large effusion is critical since: its downgrade is
    # tested in test_clinical_ladder.py)
    opt = ClinicalOptions(rules=False)
    ref = [F("pleural effusion", location="right", severity="large")]
    row, _ = clinical_scores(ref, [F("pleural effusion", location="right", severity="small")], opt)
    # severity 1 - |4 - 2| / 3 = 1/3 (< 1/2, so the candidate's side counts it too), location 1: a = 2/3;
    # credit 0.5 + 0.5 * 2/3 = 5/6; R = P = (2 * 5/6 + 1) / 3 = 8/9
    assert row["recall"] == pytest.approx(8 / 9)
    assert row["precision"] == pytest.approx(8 / 9)
    near, _ = clinical_scores(ref, [F("pleural effusion", location="right", severity="moderate")], opt)
    # severity 2/3 >= 1/2: held against recall only; R = (2 * (0.5 + 0.5 * 5/6) + 1) / 3, P = 1
    assert near["recall"] == pytest.approx((2 * (0.5 + 0.5 * 5 / 6) + 1) / 3)
    assert near["precision"] == 1.0
    vague, _ = clinical_scores(ref, [F("pleural effusion", location="right")], opt)
    assert near["f1"] > vague["f1"] > row["f1"]


def test_extra_correct_detail_is_not_penalised():
    ref = [F("pleural effusion", location="right")]
    vague, _ = clinical_scores(ref, [F("pleural effusion", location="right")])
    specific, _ = clinical_scores(ref, [F("pleural effusion", location="right", severity="small")])
    lobe, _ = clinical_scores([F("opacity", location="right")], [F("opacity", location="right lower lobe")])
    assert vague["f1"] == specific["f1"] == lobe["f1"] == 1.0


def test_wrong_side_is_a_different_finding():
    row, trace = clinical_scores([F("pleural effusion", location="right")], [F("pleural effusion", location="left")])
    assert row["n_missed"] == 1 and row["n_false"] == 1
    assert row["recall"] == pytest.approx(1 / 3) and row["precision"] == pytest.approx(1 / 3)


def test_pertinent_negative_weighs_a_quarter():
    row, trace = clinical_scores([F("pneumothorax", present="no")], [F("pneumothorax")])
    assert trace[0]["weight"] == pytest.approx(0.5)
    # R = (0 + 1) / (0.5 + 1); P = (0 + 1) / (2 + 1)
    assert row["recall"] == pytest.approx(1 / 1.5)
    assert row["precision"] == pytest.approx(1 / 3)


def test_generic_finding_for_a_specific_one():
    row, trace = clinical_scores([F("pneumonia")], [F("opacity")])
    # recall: opacity stands for pneumonia at GENERIC_CREDIT["opacity"] = 0.5: R = (1 + 1) / (2 + 1);
    # precision: pneumonia implies the opacity: P = 1
    assert row["recall"] == pytest.approx(2 / 3)
    assert row["precision"] == 1.0
    assert [t["relation"] for t in trace] == ["generic", "specific"]


def test_hedge_mismatch_on_the_reference_side():
    row, trace = clinical_scores([F("pneumonia", hedged=True)], [F("pneumonia")])
    # a hedged finding weighs 2 * 0.75 = 1.5; credit 0.5 + 0.5 * 1 * 0.75 = 0.875: R = (1.5 * 0.875 + 1) / 2.5
    assert trace[0]["weight"] == pytest.approx(1.5)
    assert row["recall"] == pytest.approx((1.5 * 0.875 + 1) / 2.5)
    assert row["precision"] == 1.0


@pytest.mark.parametrize("facet, expected, found, credit", [
    ("severity", "moderate", "small", 2 / 3),
    ("severity", "moderate", "large", 2 / 3),
    ("severity", "moderate", "tiny", 1 / 3),
    ("severity", "small to moderate", "moderate", 1 - 0.5 / 3),
    ("size", "10 mm", "1 cm", 1.0),
    ("size", "10 mm", "30 mm", 0.0),
    ("temporal", "increased", "new", 0.5),
    ("temporal", "increased", "decreased", 0.0),
    ("temporal", "unchanged", "stable", 1.0),
    ("location", "right lower lobe", "right upper lobe", 0.25),
    ("location", "bilateral", "right", 0.5),
    # a lobe and a zone it projects over: a side without its lobe (0.75), not a wrong place (0.25)
    ("location", "right middle lobe", "right lung base", 0.75),
    ("location", "lingula", "left base", 0.75),
    ("location", "right upper lobe", "right base", 0.25),
    # region families by Jaccard: right lower lobe vs right lower lobe and lingula = sides 1/2 x families 1/2
    ("location", "right lower lobe", "right lower lobe, lingula", 0.25),
    ("location", "right lower lobe", "right lower lobe and left lower lobe", 0.5),
    # morphology per term: found 1, exclusive 0, another compatible descriptor 1/2
    ("morphology", "hazy", "interstitial", 0.5),
    ("morphology", "calcified", "noncalcified", 0.0),
    ("morphology", "calcified spiculated", "spiculated", 0.75),
    ("morphology", "focal", "diffuse", 0.0),
    ("quantity", "2", "4", 0.5),
])
def test_facet_credit_hand_values(facet, expected, found, credit):
    assert facet_credit(facet, expected, found) == pytest.approx(credit)


def test_facet_credit_omitted_and_extra():
    assert facet_credit("severity", "large", None) == 0.5
    assert facet_credit("severity", "large", None, extra_neutral=True) is None
    with pytest.raises(ParamsError, match="facet"):
        facet_credit("colour", "red", "blue")


def test_significance_table_and_errors(tmp_path):
    sig = load_significance()
    assert sig.weight(F("pneumoperitoneum")) == 4.0
    assert sig.weight(F("granuloma")) == 0.5
    assert sig.weight(F("pneumothorax", morphology="tension")) == 4.0
    assert sig.weight(F("something unlisted")) == 1.0
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: 1\nweights: {a: 1}\ndefault: a\ntiers: {b: [x]}\n")
    with pytest.raises(ParamsError, match="tier 'b' has no weight"):
        load_significance(bad)
    bad.write_text("schema: 1\nweights: {a: 1, b: 2}\ndefault: a\ntiers: {a: [x], b: [x]}\n")
    with pytest.raises(ParamsError, match="two tiers"):
        load_significance(bad)
    with pytest.raises(ParamsError, match="not a file"):
        load_significance(tmp_path / "missing.yaml")


def test_options_are_checked():
    with pytest.raises(ParamsError, match="kappa must be > 0"):
        ClinicalOptions(kappa=0)
    with pytest.raises(ParamsError, match="alpha"):
        ClinicalOptions(alpha=2)


def test_end_to_end_orders_from_text():
    refs = ["Large right tension pneumothorax. Calcified granuloma in the left upper lobe."] * 3
    cands = ["Calcified granuloma in the left upper lobe.",
             "Large right pneumothorax. Calcified granuloma in the left upper lobe.",
             "Large right tension pneumothorax."]
    f1 = score_pairs_clinical(refs, cands)["f1"].tolist()
    assert f1[2] > f1[1] > f1[0]


def test_registry_metric_and_failed_decompositions_are_not_scored():
    from radaudit.atomic.decompose import ReportFacts

    class Failing:
        def decompose(self, reports):
            return [ReportFacts(findings=(), ok=False, n_unparseable=1, error="bad json") for _ in reports]

    table = score_pairs_clinical(["Effusion."], ["Effusion."], decomposer=Failing())
    assert not table["ok"][0] and math.isnan(table["f1"][0]) and table["n_unparseable"][0] == 2
    res = build_metric("atomimed_clinical").compute(["Normal chest.", "Right effusion."], ["Pneumonia.", "Right effusion."])
    # issue 41: "Normal chest." denies the pneumonia (a stated absence, weight 2/4, credit 0): R = 1 / 1.5, P = 1/3
    assert res.per_sample.tolist() == pytest.approx([4 / 9, 1.0])
    old = build_metric("atomimed_clinical", rules=False).compute(["Normal chest."], ["Pneumonia."])
    assert old.per_sample.tolist() == pytest.approx([0.5])


def test_finding_with_a_wrong_detail_beats_leaving_it_out():
    # the paper's attribute level exists only for findings both reports share, so leaving a finding out can
    # avoid its attribute penalty; here a wrong degree costs part of the finding, never more than missing it
    ref = [F("pleural effusion", location="left", severity="small"), F("pneumothorax", present="no")]
    wrong_degree, _ = clinical_scores(ref, [F("pleural effusion", location="left", severity="large"),
                                            F("pneumothorax", present="no")])
    silent, _ = clinical_scores(ref, [F("pneumothorax", present="no")])
    vague, _ = clinical_scores(ref, [F("pleural effusion", location="left"), F("pneumothorax", present="no")])
    assert vague["f1"] > wrong_degree["f1"] > silent["f1"]


def test_a_lobe_stated_by_the_candidate_against_a_zone_is_consistent_extra_detail():
    assert facet_credit("location", "right middle lobe", "right base", extra_neutral=True) == 1.0
    assert facet_credit("location", "right lower lobe", "left base", extra_neutral=True) == 0.0


def test_resolved_is_nearer_persistent_than_worse():
    """Reference: edema resolved (absent). A candidate's present edema earns ½·(1 − |Δ|/4) on the temporal axis
    (resolved −2): decreased ⅜, unchanged ¼, increased ⅛, new 0, so the order follows the clinical distance."""
    ref = [F("pulmonary edema", present="no", temporal="resolved"), F("cardiomegaly", temporal="stable")]
    credits = {}
    for change in ("decreased", "persistent", "worsening", "new"):
        _, trace = clinical_scores(ref, [F("pulmonary edema", temporal=change), F("cardiomegaly", temporal="stable")])
        credits[change] = next(t["credit"] for t in trace if t["finding"] == "pulmonary edema" and
                               t["direction"] == "gt->inf")
    assert credits == pytest.approx({"decreased": 0.375, "persistent": 0.25, "worsening": 0.125, "new": 0.0})


@pytest.mark.parametrize("truth, better, worse", [
    # "X obscuring the Y" states X: the opacity is not hedged by the silhouette sign
    ("Retrocardiac opacity with loss of the medial left hemidiaphragm, consistent with left lower lobe collapse.",
     "Retrocardiac opacity obscuring the medial left hemidiaphragm, consistent with LLL atelectasis.",
     "No retrocardiac opacity. Lungs are clear."),
    # PTX is pneumothorax
    ("Small left apical pneumothorax. Left chest tube in place.", "Small left apical PTX. Left chest tube in place.",
     "No pneumothorax. Left chest tube in place."),
    # the side of an enlarged hilum is the hilum's
    ("The right hilum is enlarged. Right upper lobe mass.", "Enlarged right hilum. Right upper lobe mass.",
     "Enlarged left hilum. Right upper lobe mass."),
    # the middle lobe is at the right base: a vaguer but consistent place beats none
    ("Right middle lobe pneumonia.", "Right basilar pneumonia.", "Pneumonia."),
    # one more lobe named is worse than none more
    ("Right lower lobe pneumonia.", "Bilateral lower lobe pneumonia.",
     "Pneumonia in the right lower lobe, lingula and left lower lobe."),
    # "tubes in satisfactory position" is the collective of the tubes the reference names
    ("Endotracheal tube 5 cm above the carina. Nasogastric tube in the stomach. Tubes in satisfactory position.",
     "ETT 5 cm above the carina. NGT in the stomach. Tubes in satisfactory position.",
     "ETT 5 cm above the carina. NGT in the stomach. Left pleural effusion."),
])
def test_orders_from_text_the_new_rules_decide(truth, better, worse):
    f1 = score_pairs_clinical([truth, truth], [better, worse])["f1"].tolist()
    assert f1[0] > f1[1]


def test_sternotomy_wires_and_clips_are_what_status_post_cabg_looks_like():
    truth = "Status post CABG. Heart size is normal. No pleural effusion."
    f1 = score_pairs_clinical([truth] * 3, ["Median sternotomy wires and mediastinal clips. Normal heart size. No effusion.",
                                            "Postoperative changes of prior CABG. Normal heart size. No effusion.",
                                            "Postoperative changes of prior CABG. Normal heart size. Left pleural effusion."]
                              )["f1"].tolist()
    assert f1[0] == pytest.approx(f1[1]) == pytest.approx(1.0) and f1[2] < 1.0
