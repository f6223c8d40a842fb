"""AtomiMed-clinical's issue-41 rules: the ladder's credits, critical findings, the concept and sign tables, normal
statements, context rules (each with a hand-computed score), and that without them nothing moved."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from radaudit.atomic.clinical import (
    ClinicalOptions,
    clinical_decomposer,
    clinical_scores,
    context_factor,
    is_critical,
    score_pairs_clinical,
)
from radaudit.atomic.concepts import Denial, check_context, clinical_vocabulary, find_denials, load_tables
from radaudit.atomic.schema import Attributes, Finding
from radaudit.errors import ParamsError
from radaudit.metrics import build_metric
from radaudit.metrics.ranking import load_ranking_cases

HERE = Path(__file__).resolve().parent
DEV = HERE.parent / "fixtures" / "ranking_cases.yaml"
BEFORE = HERE / "clinical_scores_before_issue41.json"
NORMAL = ("The heart size is normal. The lungs are clear. No pleural effusion or pneumothorax. "
          "No acute cardiopulmonary process.")


def F(name, present="yes", hedged=False, **attrs):
    return Finding(name=name, present=present, attributes=Attributes(**attrs), hedged=hedged)


def f1(p, r):
    return 2 * p * r / (p + r)


# ------------------------------------------------------------------ the ladder, rung by rung (weights: urgent 2)

REF = [F("opacity", location="right")]


def test_rung1_exact():
    row, _ = clinical_scores(REF, [F("opacity", location="right")])
    assert row["f1"] == 1.0


def test_rung2_wrong_attribute():
    row, _ = clinical_scores([F("opacity", location="right lower lobe")], [F("opacity", location="right upper lobe")])
    # location: side 1 x wrong lobe 0.25 = 0.25 < 1/2, held on both sides: credit 0.5 + 0.5 * 0.25 = 0.625
    # R = P = (2 * 0.625 + 1) / 3 = 0.75
    assert row["recall"] == pytest.approx(0.75) and row["precision"] == pytest.approx(0.75)


def test_rung3_sign():
    row, trace = clinical_scores(REF, [F("obscured heart border", location="right")])
    # reference opacity: the sign implies it at 0.4 -> R = (2 * 0.4 + 1) / (2 + 1) = 0.6
    # the candidate's sign (follow-up, 1) is accounted for by the reference's opacity -> P = (1 + 1) / (1 + 1) = 1
    assert [t["relation"] for t in trace] == ["sign", "sign-of"]
    assert row["recall"] == pytest.approx(0.6) and row["precision"] == 1.0
    assert row["f1"] == pytest.approx(0.75)


def test_rung4_omission():
    row, _ = clinical_scores(REF, [])
    assert row["recall"] == pytest.approx(1 / 3) and row["precision"] == 1.0 and row["f1"] == pytest.approx(0.5)


def test_rung5_explicit_denial():
    row, _ = clinical_scores(REF, [F("opacity", present="no")])
    # the candidate's "no opacity" weighs 2 / 4 = 0.5 with credit 0: P = 1 / 1.5; R = 1 / 3
    assert row["precision"] == pytest.approx(2 / 3) and row["f1"] == pytest.approx(4 / 9)


def test_rung5_normal_statement_denies_like_a_stated_absence():
    row, trace = clinical_scores(REF, [], candidate_denials=find_denials("The lungs are clear."))
    assert trace[-1]["relation"] == "denied: The lungs are clear" and trace[-1]["weight"] == pytest.approx(0.5)
    assert row["precision"] == pytest.approx(2 / 3) and row["f1"] == pytest.approx(4 / 9)


def test_rung5_denied_generic_finding_contradicts_the_specific_one():
    row, trace = clinical_scores([F("pneumonia")], [F("consolidation", present="no")])
    # "no consolidation" against pneumonia (specific of consolidation): credit 0, weight 2 / 4 -> P = 1 / 1.5
    assert trace[1]["relation"] == "contradicted"
    assert row["recall"] == pytest.approx(1 / 3) and row["precision"] == pytest.approx(2 / 3)


def test_the_ladder_is_ordered():
    cands = {"exact": [F("opacity", location="right")], "imprecise": [F("opacity", location="right", severity="large")],
             "sign": [F("obscured heart border", location="right")], "omission": [], "denied": [F("opacity", present="no")]}
    ref = [F("opacity", location="right", severity="small")]
    s = {k: clinical_scores(ref, c)[0]["f1"] for k, c in cands.items()}
    assert s["exact"] > s["imprecise"] > s["sign"] > s["omission"] > s["denied"]


def test_a_sided_normal_statement_denies_only_its_side():
    left = find_denials("The left lung is clear.")
    row_r, _ = clinical_scores(REF, [], candidate_denials=left)
    row_l, _ = clinical_scores([F("opacity", location="left")], [], candidate_denials=left)
    assert row_r["precision"] == 1.0 and row_l["precision"] == pytest.approx(2 / 3)


def test_otherwise_clear_does_not_deny_a_finding_the_report_states():
    row, trace = clinical_scores([F("opacity", location="left")], [F("opacity", location="right")],
                                 candidate_denials=find_denials("The lungs are otherwise clear."))
    assert not any(str(t["relation"]).startswith("denied") for t in trace)
    # sides disjoint: a miss (R = 1/3) and a false finding (P = 1/3), no denial on top
    assert row["recall"] == pytest.approx(1 / 3) and row["precision"] == pytest.approx(1 / 3)


def test_the_reference_sign_is_accounted_for_by_the_finding():
    row, trace = clinical_scores([F("costophrenic angle blunting", location="right")],
                                 [F("pleural effusion", location="right")])
    # reference sign (1): the candidate names the effusion it implies: credit 1 -> R = 1; the candidate's effusion is
    # supported by the reference's own sign: credit 1 -> P = 1
    assert row["f1"] == 1.0 and [t["relation"] for t in trace] == ["sign-of", "sign"]


def test_a_negated_pure_sign_is_dropped():
    row, trace = clinical_scores([], [F("deep sulcus sign", present="no")])
    assert trace == [] and row["f1"] == 1.0


# ------------------------------------------------------------------ critical findings and downgrades

def test_a_critical_grade_weighs_the_immediate_tier():
    ref = [F("pleural effusion", location="right", severity="large")]
    assert is_critical(ref[0]) and not is_critical(F("pleural effusion", severity="moderate"))
    row, trace = clinical_scores(ref, [F("pleural effusion", location="right")])
    # weight 2 + 2 (critical part); the candidate states no grade: base 0.5 + 0.5 * mean(1, 0.5) = 0.875 earns
    # 2 * 0.875 = 1.75, the critical part 0: credit 1.75 / 4; R = (1.75 + 1) / 5 = 0.55; P = 1
    assert trace[0]["weight"] == 4.0
    assert row["recall"] == pytest.approx(0.55) and row["precision"] == 1.0


def test_a_critical_downgrade_is_scored_as_a_miss():
    ref = [F("pneumothorax", location="right", severity="large")]
    row, trace = clinical_scores(ref, [F("pneumothorax", location="right", severity="small")])
    # reference: weight 2 + 2 (critical part), credit 0 -> R = 1 / (4 + 1) = 0.2; the candidate's "small" statement is
    # left out of its precision (weight 0): P = (0 + 1) / (0 + 1) = 1; F1 = 2 * 0.2 / 1.2 = 1/3
    assert trace[0]["relation"] == "critical downgrade: as a miss" and trace[0]["credit"] == 0.0
    assert trace[1]["relation"] == "critical downgrade: not counted" and trace[1]["weight"] == 0.0
    assert row["recall"] == pytest.approx(0.2) and row["precision"] == 1.0 and row["f1"] == pytest.approx(1 / 3)
    miss, _ = clinical_scores(ref, [])
    denied, _ = clinical_scores(ref, [F("pneumothorax", present="no")])
    moderate, _ = clinical_scores(ref, [F("pneumothorax", location="right", severity="moderate")])
    # a downgrade ties the miss exactly; a denial is below both; one grade lower (moderate) is imprecise, above both
    assert moderate["f1"] > row["f1"] == miss["f1"] > denied["f1"]


def test_a_downgrade_of_a_non_critical_finding_stays_imprecise():
    ref = [F("pneumothorax", location="right", severity="moderate")]
    row, trace = clinical_scores(ref, [F("pneumothorax", location="right", severity="small")])
    # not critical: rung 2. A pneumothorax is actionable (weight 2), so the under-call costs UNDERCALL_FACTOR (1.5) per
    # grade: severity 1 - 1.5 * 1/3 = 1/2, a = mean(location 1, severity 1/2) = 3/4 -> credit 0.5 + 0.5 * 3/4 = 7/8
    # R = (2 * 7/8 + 1) / 3 = 0.9167; the candidate asks severity small vs moderate 2/3 (>= 1/2, kept 1): P = 1
    assert trace[0]["relation"] == "same"
    assert row["recall"] == pytest.approx((2 * 7 / 8 + 1) / 3) and row["precision"] == 1.0


def test_a_malpositioned_tube_called_satisfactory_is_a_miss_and_a_false_position_is_worse():
    ref = [F("endotracheal tube", location="tip: right main bronchus"), F("malpositioned endotracheal tube")]
    satisfactory = [F("endotracheal tube"), F("malpositioned endotracheal tube", present="no")]
    silent: list = []
    elsewhere = [F("endotracheal tube", location="tip: 4 cm above the carina"),
                 F("malpositioned endotracheal tube", present="no")]
    sat, trace = clinical_scores(ref, satisfactory)
    sil, _ = clinical_scores(ref, silent)
    # both reference facts (tube 1, malposition 4) earn 0 in both: R = 1 / 6; the satisfactory candidate's two facts are
    # not counted: P = 1 -> the same F1 as silence
    assert [t["relation"] for t in trace[:2]] == ["critical downgrade: as a miss"] * 2
    assert sat["recall"] == pytest.approx(1 / 6) and sat["precision"] == 1.0 and sat["f1"] == sil["f1"]
    # a tip placed elsewhere: the tube's fact earns nothing on either side; the candidate's "not malpositioned"
    # (immediate 4 x 1/4 = 1) is contradicted (credit 0): P = 1 / (1 + 1 + 1) = 1/3, R = 1/6 -> F1 = 2/9 < 2/7 (silence)
    far, trace = clinical_scores(ref, elsewhere)
    assert trace[0]["relation"] == "false position"
    assert far["precision"] == pytest.approx(1 / 3) and far["f1"] == pytest.approx(2 / 9)
    assert sil["f1"] == pytest.approx(2 / 7)


def test_a_finding_explained_away_as_technique_is_not_asserted():
    ref = [F("widened mediastinum")]
    dismissed = [Finding(name="widened mediastinum", present="yes", attributes=Attributes(severity="mildly"),
                         evidence="Mediastinum appears mildly prominent, likely related to supine AP technique.")]
    row, _ = clinical_scores(ref, dismissed)
    miss, _ = clinical_scores(ref, [])
    # the dismissed finding is dropped: exactly the miss, R = 1 / (2 + 1), P = 1
    assert row == miss and row["recall"] == pytest.approx(1 / 3)


def test_a_sign_is_folded_into_the_finding_its_report_names():
    ref = [F("pneumothorax", location="right", severity="small")]
    cand = [F("pleural line", location="right apex"), F("pneumothorax", severity="small")]
    row, trace = clinical_scores(ref, cand)
    # the candidate's pleural line is part of its pneumothorax (dropped), which takes its place (right apex): exact, 1
    assert row["f1"] == 1.0 and [t["finding"] for t in trace] == ["pneumothorax", "pneumothorax"]
    # a mediastinal shift beside a tension pneumothorax is its sign whatever its side (the side it moves to)
    ref = [F("pneumothorax", location="right", morphology="tension"), F("mediastinal shift", location="left")]
    row, _ = clinical_scores(ref, [F("pneumothorax", location="right", morphology="tension")])
    assert row["f1"] == 1.0
    # not into a hedged finding, and not when the other report states the sign too (then they are compared)
    hedged = [F("cardiomegaly", severity="marked"), F("pericardial effusion", hedged=True)]
    _, trace = clinical_scores(hedged, [F("cardiomegaly", severity="mild")])
    assert trace[0]["finding"] == "cardiomegaly"
    _, trace = clinical_scores([F("hilar enlargement", location="right"), F("lymphadenopathy")],
                               [F("hilar enlargement", location="left"), F("lymphadenopathy")])
    assert trace[0]["finding"] == "hilar enlargement" and trace[0]["credit"] == 0.0


def test_tension_reported_as_small_is_a_downgrade():
    ref = [F("pneumothorax", location="right", morphology="tension")]
    _, trace = clinical_scores(ref, [F("pneumothorax", location="right", severity="small")])
    assert trace[0]["relation"] == "critical downgrade: as a miss"


# ------------------------------------------------------------------ concept table relations

def test_generic_relation_from_the_concept_table():
    row, trace = clinical_scores([F("hydropneumothorax")], [F("pneumothorax")])
    # pneumothorax for hydropneumothorax: 0.75 x rung 2 (1) -> R = (2 * 0.75 + 1) / 3; the candidate's pneumothorax
    # is implied by the reference's hydropneumothorax -> P = 1
    assert [t["relation"] for t in trace] == ["generic", "specific"]
    assert row["recall"] == pytest.approx(2.5 / 3) and row["precision"] == 1.0


def test_interchangeable_relation_from_the_concept_table():
    row, _ = clinical_scores([F("scarring", location="right")], [F("fibrosis", location="right")])
    # 0.75 x rung 2 (1) both ways; scarring is incidental (0.5), fibrosis follow-up (1):
    # R = (0.5 * 0.75 + 1) / 1.5, P = (1 * 0.75 + 1) / 2
    assert row["recall"] == pytest.approx(1.375 / 1.5) and row["precision"] == pytest.approx(1.75 / 2)


def test_llm_names_are_mapped_to_the_concept_table():
    row, _ = clinical_scores([F("hyperinflation")], [F("Hyperexpansion")])
    assert row["f1"] == 1.0


# ------------------------------------------------------------------ context rules, each hand-computed

#: rule id -> (a context that matches it, a finding it names, weight without context, weight with it)
CONTEXT_CASES = {
    "post-procedure-air": ({"indication": "CT-guided lung biopsy"}, F("pneumothorax", severity="small"), 2.0, 1.0),
    "post-drain-removal": ({"history": "chest tube removed yesterday"}, F("subcutaneous emphysema"), 1.0, 0.5),
    "thoracic-surgery": ({"history": "right upper lobectomy 2 days ago"}, F("volume loss"), 1.0, 0.5),
    "cardiac-surgery": ({"history": "CABG three days ago"}, F("pleural effusion", severity="small"), 2.0, 1.0),
    "old-tuberculosis": ({"history": "treated tuberculosis"}, F("scarring"), 0.5, 0.25),
    "known-copd": ({"history": "COPD"}, F("hyperinflation"), 0.5, 0.25),
    "elderly": ({"age": 80}, F("degenerative change"), 0.5, 0.25),
    "mastectomy": ({"history": "left mastectomy"}, F("postsurgical change"), 0.5, 0.25),
    "trauma-immediate": ({"indication": "fall from a ladder"}, F("pneumothorax"), 2.0, 4.0),
    "trauma-urgent": ({"indication": "motor vehicle collision"}, F("subcutaneous emphysema"), 1.0, 2.0),
    "known-malignancy": ({"history": "breast cancer"}, F("nodule"), 1.0, 2.0),
    "breathless-or-failure": ({"indication": "shortness of breath"}, F("vascular congestion"), 1.0, 2.0),
    "infection-question": ({"indication": "fever and productive cough"}, F("consolidation"), 2.0, 4.0),
    "remote-trauma": ({"history": "rib fractures in a fall three months ago"}, F("fracture"), 2.0, 1.0),
    "post-abdominal-surgery": ({"history": "laparoscopic cholecystectomy two days ago"}, F("pneumoperitoneum"), 4.0, 2.0),
    "esophageal-rupture-risk": ({"indication": "chest pain after repeated vomiting"}, F("pneumomediastinum"), 2.0, 4.0),
    "suspected-tuberculosis": ({"indication": "night sweats and cough"}, F("scarring"), 0.5, 2.0),
    "suspected-malignancy": ({"history": "30 pack-year smoker"}, F("nodule"), 1.0, 2.0),
    "known-sarcoidosis": ({"history": "sarcoidosis"}, F("lymphadenopathy"), 2.0, 1.0),
    "known-heart-disease": ({"history": "ischemic cardiomyopathy"}, F("cardiomegaly"), 1.0, 0.5),
    "acute-cardiac-symptoms": ({"indication": "pleuritic chest pain"}, F("cardiomegaly"), 1.0, 2.0),
    "young-adult": ({"age": 28}, F("emphysema"), 0.5, 2.0),
    "infant-fracture": ({"age": 1, "history": "no known trauma"}, F("fracture"), 2.0, 4.0),
}


def test_every_context_rule_has_a_case():
    assert set(CONTEXT_CASES) == {r.id for r in load_tables().context_rules}


@pytest.mark.parametrize("rule_id", sorted(CONTEXT_CASES))
def test_context_rule(rule_id):
    ctx, finding, before, after = CONTEXT_CASES[rule_id]
    assert any(r.id == rule_id and r.matches(ctx) for r in load_tables().context_rules)
    _, plain = clinical_scores([finding], [])
    _, with_ctx = clinical_scores([finding], [], context=ctx)
    assert plain[0]["weight"] == pytest.approx(before) and with_ctx[0]["weight"] == pytest.approx(after)
    # the reference finding missed: R = kappa / (w + kappa), P = 1
    row, _ = clinical_scores([finding], [], context=ctx)
    assert row["recall"] == pytest.approx(1 / (after + 1))


def test_context_changes_what_a_miss_costs():
    ref = [F("pneumothorax", location="right", severity="small")]
    none, _ = clinical_scores(ref, [])
    biopsy, _ = clinical_scores(ref, [], context={"indication": "lung biopsy this morning"})
    fall, _ = clinical_scores(ref, [], context={"age": 23, "indication": "fall"})
    # w = 2, 1, 4: F1 = 2R / (1 + R) with R = 1 / (w + 1): 1/2, 2/3, 1/3
    assert (none["f1"], biopsy["f1"], fall["f1"]) == pytest.approx((0.5, 2 / 3, 1 / 3))


def test_expected_only_up_to_its_grade_and_not_for_a_remote_history():
    large = F("pneumothorax", severity="large")
    assert context_factor(large, 4.0, [r for r in load_tables().context_rules if r.id == "post-procedure-air"]) == 1.0
    _, t = clinical_scores([F("pleural effusion")], [], context={"history": "remote CABG"})
    assert t[0]["weight"] == 2.0


@pytest.mark.parametrize("ctx", [None, {}, {"age": 40, "sex": "F", "indication": "cough"}])
def test_no_context_or_no_matching_rule_changes_nothing(ctx):
    ref = [F("pneumothorax", location="right"), F("degenerative change")]
    cand = [F("pneumothorax", location="left")]
    assert clinical_scores(ref, cand, context=ctx) == clinical_scores(ref, cand)


def test_a_negated_or_remote_context_does_not_fire():
    fx = F("fracture")
    # "no known trauma": the trauma rules do not fire (weight stays 2); the same words affirmed raise it to 4
    assert clinical_scores([fx], [], context={"history": "no known trauma"})[1][0]["weight"] == 2.0
    assert clinical_scores([fx], [], context={"history": "trauma"})[1][0]["weight"] == 2.0 * 1  # urgent tier = own tier
    ptx = F("pneumothorax")
    assert clinical_scores([ptx], [], context={"indication": "fall"})[1][0]["weight"] == 4.0
    assert clinical_scores([ptx], [], context={"indication": "cough", "history": "denies any fall"})[1][0]["weight"] == 2.0
    # a fall two months ago makes nothing urgent today; its healing fracture is expected (2 x 1/2)
    assert clinical_scores([ptx], [], context={"history": "fall two months ago"})[1][0]["weight"] == 2.0
    assert clinical_scores([fx], [], context={"history": "fall two months ago"})[1][0]["weight"] == 1.0
    # living where tuberculosis is endemic is a risk of it, not a history of it: scarring urgent (2), not expected
    assert clinical_scores([F("scarring")], [], context={"history": "from a region where tuberculosis is endemic"}
                           )[1][0]["weight"] == 2.0


def test_the_history_documents_known_findings():
    from radaudit.atomic.clinical import history_findings

    assert history_findings("biopsy-proven sarcoidosis with hilar adenopathy stable for 5 years") == {"lymphadenopathy"}
    assert history_findings("longstanding cardiomyopathy with known, unchanged cardiomegaly") == {"cardiomegaly"}
    assert history_findings("new cardiomegaly on last week's film") == frozenset()
    assert history_findings("no pneumothorax on the prior film") == frozenset()
    ctx = {"history": "identical right apical scarring on many prior radiographs"}
    _, t = clinical_scores([F("scarring", location="right")], [], context=ctx)
    # scarring incidental 0.5 x expected 1/2 = 0.25: R = 1 / 1.25 = 0.8
    assert t[0]["weight"] == pytest.approx(0.25)
    assert clinical_scores([F("scarring")], [], context=ctx)[0]["recall"] == pytest.approx(0.8)


def test_affirmed_reads_negation_per_clause():
    import re

    from radaudit.atomic.concepts import affirmed

    trauma = re.compile(r"\btrauma\b")
    assert not affirmed(trauma, "cough; no known trauma")
    assert affirmed(trauma, "no fever, trauma to the chest")
    assert affirmed(trauma, "no fever; blunt trauma")


def _rewrites():
    from importlib import resources

    import yaml

    doc = yaml.safe_load(resources.files("radaudit.resources").joinpath("clinical_concepts.yaml").read_text("utf-8"))
    return [(r["replace"], r["example"]) for r in doc["rewrites"]]


@pytest.mark.parametrize("replace,example", _rewrites(), ids=[e for _, e in _rewrites()])
def test_each_rewrite_changes_its_example(replace, example):
    from radaudit.atomic.concepts import rewrite

    # a replacement with group references ("small \\1 pleural effusion") is checked by its literal parts
    assert all(part in rewrite(example) for part in re.split(r"\\\d", replace)), (example, rewrite(example))


def test_a_tube_in_lay_words_is_read_as_in_technical_words():
    lay = clinical_decomposer().decompose_one("The breathing tube ends 4 cm above where the windpipe divides.")
    tech = clinical_decomposer().decompose_one("The endotracheal tube ends 4 cm above the carina.")
    assert [(f.name, f.present, f.attributes.location) for f in lay] == \
        [(f.name, f.present, f.attributes.location) for f in tech] != []


def test_context_is_validated():
    assert check_context({"age": 61.0, "sex": "M", "indication": ""}) == {"age": 61, "sex": "M"}
    with pytest.raises(ParamsError, match="unknown key"):
        check_context({"weight": 70})
    with pytest.raises(ParamsError, match="sex must be"):
        check_context({"sex": "female"})
    with pytest.raises(ParamsError, match="age must be"):
        check_context({"age": "sixty"})


# ------------------------------------------------------------------ the metric: compute(..., context=...)

def test_metric_compute_with_context():
    m = build_metric("atomimed_clinical")
    refs, cands = ["Small right apical pneumothorax."] * 3, ["No acute cardiopulmonary process."] * 3
    plain = m.compute(refs, cands).per_sample
    ctx = [{"indication": "CT-guided biopsy"}, None, {"indication": "fall"}]
    scored = m.compute(refs, cands, context=ctx).per_sample
    assert scored[1] == plain[1] and scored[0] > plain[0] > scored[2]
    assert np.array_equal(m.compute(refs, cands, context=None).per_sample, plain)
    one = m.compute(refs, cands, context={"indication": "fall"}).per_sample
    assert np.allclose(one, scored[2])
    with pytest.raises(ParamsError, match="3 pairs"):
        m.compute(refs, cands, context=[None])


# ------------------------------------------------------------------ every finding of the concept table

def _mentions():
    t = load_tables()
    out = []
    for name, entry in t.concepts.items():
        for text in entry.get("mentions") or []:
            out.append((name, entry["reference"], text))
    for name, sign in t.signs.items():
        for finding in sign.implies:
            ref = t.concepts.get(finding, {}).get("reference")
            if ref:
                out.append((f"{finding} <- {name}", ref, sign.example))
    return out


MENTIONS = _mentions()


def test_every_finding_of_the_concept_table_has_a_reference_and_mentions():
    t = load_tables()
    assert set(t.concepts) >= set(clinical_vocabulary()) - set(t.pure_signs)
    for name, entry in t.concepts.items():
        assert entry.get("reference") and entry.get("mentions"), name


@pytest.fixture(scope="module")
def clinical():
    return build_metric("atomimed_clinical")


@pytest.mark.parametrize("finding,reference,mention", MENTIONS, ids=[f"{m[0]}: {m[2]}" for m in MENTIONS])
def test_a_normal_report_scores_below_every_mention(clinical, finding, reference, mention):
    normal, mentioned = clinical.compute([reference, reference], [NORMAL, mention]).per_sample
    assert mentioned > normal, (reference, mention, mentioned, normal)


def _forms():
    t = load_tables()
    return [(name, f["example"]) for name, e in t.concepts.items() for f in e.get("forms") or []] + \
        [(name, s.example) for name, s in t.signs.items() if s.kind == "sign"]


@pytest.mark.parametrize("name,example", _forms(), ids=[f"{n}: {e}" for n, e in _forms()])
def test_each_form_and_sign_is_read_as_its_finding(name, example):
    found = {f.name for f in clinical_decomposer().decompose_one(example) if f.present == "yes"}
    assert name in found, (example, found)


# ------------------------------------------------------------------ nothing else moved

@pytest.fixture(scope="module")
def before():
    return json.loads(BEFORE.read_text())["scores"]


def _dev_pairs(keys):
    refs, cands, ks = [], [], []
    for c in load_ranking_cases(DEV):
        for k, text in c.candidates.items():
            key = f"dev/{c.id}/{k}"
            if key in keys:
                refs.append(c.truth)
                cands.append(text)
                ks.append(key)
    return refs, cands, ks


def _radpref_pairs(root):
    from radaudit.audits.atomic_facts.data import radpref_study

    st = radpref_study(root).candidates
    return (st["reference"].tolist(), st["prediction"].tolist(),
            [f"radpref/{r.case_id}/{r.candidate}" for r in st.itertuples()])


def _check_before(before, refs, cands, keys):
    assert len(keys) > 0
    paper = build_metric("atomimed").compute(refs, cands).per_sample
    off = build_metric("atomimed_clinical", rules=False).compute(refs, cands).per_sample
    assert [before["atomimed"][k] for k in keys] == paper.tolist()
    assert [before["atomimed_clinical"][k] for k in keys] == off.tolist()


def test_before_issue41_scores_are_reproduced_on_the_dev_suite(before):
    """The paper's atomimed is unchanged, and atomimed_clinical(rules=False) is the definition before issue 41,
    on the dev suite's pairs of that time (scores from a worktree of commit b9ff89f)."""
    refs, cands, keys = _dev_pairs(set(before["atomimed"]))
    assert len(keys) == 181
    _check_before(before, refs, cands, keys)


def test_before_issue41_scores_are_reproduced_on_radpref(before, shared_data):
    refs, cands, keys = _radpref_pairs(shared_data)
    assert len(keys) == 200
    _check_before(before, refs, cands, keys)


def test_context_none_equals_no_context_on_the_dev_suite(clinical):
    refs, cands, _ = _dev_pairs({f"dev/{c.id}/{k}" for c in load_ranking_cases(DEV) for k in c.candidates})
    assert np.array_equal(clinical.compute(refs, cands).per_sample, clinical.compute(refs, cands, context=None).per_sample)


def test_rules_off_with_the_rule_decomposer_matches_score_pairs():
    opt = ClinicalOptions(rules=False)
    a = score_pairs_clinical(["Small right effusion."], ["Lungs are clear."], options=opt)
    b = score_pairs_clinical(["Small right effusion."], ["Lungs are clear."])
    assert a["f1"].iloc[0] == pytest.approx(0.5)       # before: a normal report keeps the smoothing's floor
    assert b["f1"].iloc[0] == pytest.approx(0.5)       # effusion is pleural: "lungs are clear" does not deny it
    c = score_pairs_clinical(["Right lower lobe pneumonia."], ["Lungs are clear."])
    assert c["f1"].iloc[0] == pytest.approx(4 / 9)     # pneumonia is parenchymal: denied (rung 5)


# ------------------------------------------------------------------ radaudit score --context-columns

def test_score_cli_passes_context_columns(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from radaudit.cli import main

    df = pd.DataFrame({"reference": ["Small right apical pneumothorax."] * 3,
                       "prediction": ["No acute cardiopulmonary process."] * 3,
                       "age": [70, 23, None], "indication": ["CT-guided lung biopsy", "fall from a ladder", ""]})
    path = tmp_path / "pairs.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["score", str(path), "--metrics", "atomimed_clinical,bleu", "--context-columns",
                                    "age,indication", "--n-bootstrap", "50", "--out", str(out)])
    assert res.exit_code == 0, res.output
    pairs = pd.read_csv(out / "pairs.csv")
    got = pairs["atomimed_clinical"].tolist()
    ctx = [{"age": 70, "indication": "CT-guided lung biopsy"}, {"age": 23, "indication": "fall from a ladder"}, None]
    want = build_metric("atomimed_clinical").compute(df["reference"].tolist(), df["prediction"].tolist(), context=ctx)
    assert got == pytest.approx(want.per_sample.tolist())
    # "no acute cardiopulmonary process" denies the pneumothorax (rung 5): R = 1 / (w + 1), P = 1 / (w / 4 + 1);
    # biopsy (expected, w 1): R 1/2, P 4/5, F1 8/13; fall (urgent, w 4): R 1/5, P 1/2, F1 2/7; none (w 2): 4/9
    assert got == pytest.approx([8 / 13, 2 / 7, 4 / 9])
    notes = pd.read_csv(out / "scores.csv").set_index("metric")["note"].fillna("")
    assert "context from age, indication" in notes["atomimed_clinical"]
    assert "context columns ignored" in notes.filter(like="bleu").iloc[0]


def test_score_rejects_an_unknown_context_key():
    import pandas as pd

    from radaudit.scoring import score

    df = pd.DataFrame({"reference": ["a", "b"], "prediction": ["a", "b"], "weight": [1, 2]})
    with pytest.raises(ParamsError, match="'weight' is not a context key"):
        score(df, ["bleu"], context_columns="weight")
    with pytest.raises(ParamsError, match="no column"):
        score(df, ["bleu"], context_columns="age")


# ------------------------------------------------------------------ after holdout4: false reassurance and its kin

STAND_DOWN = Denial(id="stand-down", covers=frozenset(), sides=frozenset(), text="no further action needed")


def test_a_critical_downgrade_that_stands_the_work_up_down_ranks_below_silence():
    ref = [F("pleural effusion", location="left", severity="large")]  # urgent 2 + critical part 2 = 4
    small = [F("pleural effusion", location="left", severity="small")]
    silent, _ = clinical_scores(ref, [])
    plain, _ = clinical_scores(ref, small)
    reassured, tr = clinical_scores(ref, small, candidate_denials=[STAND_DOWN])
    # silence and the plain downgrade: R = 1 / (4 + 1), P = 1 (the downgraded statement is not counted): F1 = 1/3
    assert silent["f1"] == pytest.approx(1 / 3) and plain["f1"] == pytest.approx(1 / 3)
    # with "no further action": the statement denies the effusion, 0.25 x 4 = 1 on precision with credit 0
    assert reassured["recall"] == pytest.approx(0.2) and reassured["precision"] == pytest.approx(0.5)
    assert reassured["f1"] == pytest.approx(f1(0.5, 0.2))
    assert any(r["relation"].startswith("false reassurance") for r in tr)
    # the reference standing down too (the finding is not actionable to its author): no false reassurance
    both, _ = clinical_scores(ref, small, candidate_denials=[STAND_DOWN], reference_denials=[STAND_DOWN])
    assert both["f1"] == pytest.approx(1 / 3)


def test_a_lesser_finding_with_a_stand_down_is_false_reassurance_and_with_a_work_up_stays_imprecise():
    ref = [F("mass", location="right upper lobe")]  # urgent, 2
    cand = [F("nodule", location="right upper lobe")]  # interchangeable (credit 0.75), follow-up, 1
    kept, _ = clinical_scores(ref, cand)
    # imprecise: R = (2 x 0.75 + 1) / 3, P = (1 x 0.75 + 1) / 2
    assert kept["recall"] == pytest.approx(2.5 / 3) and kept["precision"] == pytest.approx(0.875)
    reassured, _ = clinical_scores(ref, cand, candidate_denials=[STAND_DOWN])
    # both facts credit 0: R = 1 / 3, P = 1 / 2, F1 = 0.4, below silence (R = 1/3, P = 1: F1 = 0.5)
    assert reassured["f1"] == pytest.approx(0.4)
    assert clinical_scores(ref, [])[0]["f1"] == pytest.approx(0.5)


def test_an_incidental_finding_downgraded_with_a_stand_down_is_not_false_reassurance():
    ref = [F("hiatal hernia", severity="large")]  # incidental: nothing to act on
    cand = [F("hiatal hernia", severity="small")]
    assert clinical_scores(ref, cand, candidate_denials=[STAND_DOWN])[0]["f1"] == \
        pytest.approx(clinical_scores(ref, cand)[0]["f1"])


def test_a_finding_explained_away_with_a_stand_down_ranks_below_silence():
    ref = [F("widened mediastinum")]  # urgent, 2
    dismissed = [Finding(name="widened mediastinum", present="yes", attributes=Attributes(severity="mildly"),
                         evidence="Mediastinum appears mildly prominent, likely related to supine AP technique.")]
    plain, _ = clinical_scores(ref, dismissed)
    assert plain["f1"] == pytest.approx(0.5)  # the explanation alone: as silence (holdout3's rule, kept)
    row, _ = clinical_scores(ref, dismissed, candidate_denials=[STAND_DOWN])
    # + "no further imaging": R = 1/3, P = 1 / (0.25 x 2 + 1) = 2/3, F1 = 4/9
    assert row["f1"] == pytest.approx(4 / 9)


def test_denying_a_sign_the_reference_folded_into_its_finding_is_a_contradiction():
    ref = [F("pleural effusion", location="right", severity="massive"), F("mediastinal shift", location="left")]
    small = F("pleural effusion", location="right", severity="small")
    # the shift is part of the massive effusion (folded); the small effusion is a critical downgrade (a miss)
    silent, _ = clinical_scores(ref, [])
    assert silent["f1"] == pytest.approx(1 / 3)  # R = 1 / (4 + 1), P = 1
    explicit, tr = clinical_scores(ref, [small, F("mediastinal shift", present="no")])
    # "no mediastinal shift": 0.25 x 2 = 0.5 on precision with credit 0: P = 1 / 1.5, R = 1/5
    assert explicit["precision"] == pytest.approx(2 / 3) and explicit["f1"] == pytest.approx(f1(2 / 3, 0.2))
    assert any(r["relation"] == "contradicts a sign of the other report" for r in tr)
    central = Denial(id="mediastinum-central", covers=frozenset({"mediastinal shift"}), sides=frozenset(),
                     text="The trachea is midline")
    stated, _ = clinical_scores(ref, [small], candidate_denials=[central])
    assert stated["f1"] == pytest.approx(explicit["f1"])
    assert [d.id for d in find_denials("The trachea is midline.")] == ["mediastinum-central"]


def test_the_same_process_at_a_lower_stage_is_a_critical_downgrade():
    ref = [F("pulmonary edema", severity="severe")]  # critical: weighs 4
    row, tr = clinical_scores(ref, [F("vascular congestion", severity="mild")])
    # as a miss, the congestion not counted: R = 1/5, P = 1, F1 = 1/3, as silence
    assert row["f1"] == pytest.approx(1 / 3) == clinical_scores(ref, [])[0]["f1"]
    assert any(r["relation"] == "critical downgrade: as a miss" for r in tr)


def test_denying_a_lesion_under_its_other_name_is_a_contradiction():
    ref = [F("nodule", location="right upper lobe")]  # follow-up, 1
    row, _ = clinical_scores(ref, [F("nodule", present="no"), F("mass", present="no")])
    # "no nodule" 0.25, "no mass" 0.5 (contradicted through the interchangeable relation), both credit 0:
    # P = 1 / 1.75 = 4/7, R = 1/2, F1 = 8/15
    assert row["precision"] == pytest.approx(4 / 7) and row["f1"] == pytest.approx(8 / 15)


def test_both_sides_read_as_bilateral():
    ref = [F("pneumoperitoneum", location="both")]  # critical, 4
    assert clinical_scores(ref, [F("pneumoperitoneum", location="bilateral")])[0]["f1"] == pytest.approx(1.0)
    row, _ = clinical_scores(ref, [F("pneumoperitoneum", location="left")])
    # side Jaccard 1/2: credit 0.5 + 0.5 x 0.5 = 0.75, R = (4 x 0.75 + 1) / 5 = 0.8; P = 1 (a narrower side, not worse
    # than leaving it out, is not held against the candidate)
    assert row["recall"] == pytest.approx(0.8) and row["precision"] == pytest.approx(1.0)


def test_findings_before_an_impression_header_are_read():
    from radaudit.atomic.clinical import clinical_text

    text = "PA chest. Moderate right pleural effusion. IMPRESSION: Effusion."
    assert clinical_text(text).startswith("FINDINGS: PA chest. Moderate right pleural effusion.")
    f = [x for x in clinical_decomposer().decompose_one(text) if x.name == "pleural effusion"]
    assert f and f[0].attributes.location == "right" and f[0].attributes.severity
    assert clinical_text("Moderate right pleural effusion.") == "Moderate right pleural effusion."


def test_stand_down_statements_are_found_and_deny_nothing_themselves():
    ds = find_denials("Small left effusion; conservative management. No further imaging required.")
    assert [d.id for d in ds] == ["stand-down", "stand-down"]
    assert not any(d.denies("pleural effusion", frozenset()) for d in ds)
    # alone (no reference finding it downgrades) it changes nothing
    ref = [F("pneumothorax", location="right", severity="small")]
    assert clinical_scores(ref, ref, candidate_denials=[STAND_DOWN])[0]["f1"] == pytest.approx(1.0)
