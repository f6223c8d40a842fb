"""AtomiMed-clinical's issue-41 rules: the ladder's credits, critical findings, the concept and sign tables, normal
statements, context rules (each with a hand-computed score), and that without them nothing moved."""

from __future__ import annotations

import json
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
from radaudit.atomic.concepts import check_context, clinical_vocabulary, find_denials, load_tables
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


def test_a_critical_downgrade_costs_nearly_a_miss():
    ref = [F("pneumothorax", location="right", severity="large")]
    row, trace = clinical_scores(ref, [F("pneumothorax", location="right", severity="small")])
    # reference: a = mean(location 1, severity 1 - |4 - 2| / 3 = 1/3) = 2/3, rung 2 = 5/6, x 0.3 = 0.25 on the base
    # part (2): credit 0.5 / 4 = 0.125; R = (4 * 0.125 + 1) / 5 = 0.3. Candidate: weight 2, credit 5/6 -> P = 8/9
    assert trace[0]["relation"] == "same, critical downgrade"
    assert trace[0]["credit"] == pytest.approx(0.125)
    assert row["recall"] == pytest.approx(0.3) and row["precision"] == pytest.approx(8 / 9)
    miss, _ = clinical_scores(ref, [])
    moderate, _ = clinical_scores(ref, [F("pneumothorax", location="right", severity="moderate")])
    assert moderate["f1"] > row["f1"] > miss["f1"]


def test_tension_reported_as_small_is_a_downgrade():
    ref = [F("pneumothorax", location="right", morphology="tension")]
    _, trace = clinical_scores(ref, [F("pneumothorax", location="right", severity="small")])
    assert trace[0]["relation"] == "same, critical downgrade"


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
