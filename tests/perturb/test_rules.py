"""Each rewrite rule on a hand-written report: the exact expected rewrite, its verification, and None
when the report has nothing of that kind (ReEvalMed Table 2 aspects, paper 001)."""

from __future__ import annotations

import random

import pytest

from radaudit.data import chexpert_phrases_dir
from radaudit.perturb import ASPECTS, ERROR_TYPES, RULES, SIGNIFICANCE, rules_for
from radaudit.perturb.base import apply_edits
from radaudit.perturb.verify import verify_rewrite
from radaudit.text.labeler import ChexpertLabeler

# (rule, GT, expected ME with random.Random(0)); one editable fact per report where the rule draws one.
CASES = [
    ("loc_flip_side", "Small left pleural effusion. No pneumothorax.",
     'Small right pleural effusion. No pneumothorax.'),
    ("loc_make_bilateral", "Small left pleural effusion. No pneumothorax.",
     'Small bilateral pleural effusion. No pneumothorax.'),
    ("loc_drop_lobe", "There is an opacity in the right upper lobe. No effusion.",
     'There is an opacity. No effusion.'),
    ("loc_drop_side", "Mild blunting of the right costophrenic angle. No pneumothorax.",
     'Mild blunting of the costophrenic angle. No pneumothorax.'),
    ("loc_add_subsite", "Atelectasis in the left base. No pneumothorax.",
     'Atelectasis in the left posterior base. No pneumothorax.'),
    ("loc_redescribe", "New left retrocardiac opacity. No effusion.",
     'New opacity behind the heart on the left. No effusion.'),
    ("sev_shift_two", "Heart is mildly enlarged. No effusion.",
     'Heart is severely enlarged. No effusion.'),
    ("sev_adjacent", "Severe cardiomegaly. No effusion.",
     'Moderate-to-severe cardiomegaly. No effusion.'),
    ("sev_drop_high", "There is a large left pleural effusion. No pneumothorax.",
     'There is a left pleural effusion. No pneumothorax.'),
    ("sev_drop_low", "Mild degenerative changes of the spine. No pneumothorax.",
     'Degenerative changes of the spine. No pneumothorax.'),
    ("sev_add_severe", "Left pleural effusion. No pneumothorax.",
     'Large left pleural effusion. No pneumothorax.'),
    ("sev_add_benign", "The lungs are clear. No pneumothorax.",
     'The lungs are clear. No pneumothorax. Mild elevation of the right hemidiaphragm.'),
    ("desc_opposite", "An irregular mass in the lingula. No effusion.",
     'A smooth mass in the lingula. No effusion.'),
    ("desc_synonym", "Bibasilar ill-defined opacities. No effusion.",
     'Bibasilar poorly defined opacities. No effusion.'),
    ("desc_drop_key", "A calcified nodule in the right upper lobe. No effusion.",
     'A nodule in the right upper lobe. No effusion.'),
    ("desc_drop_minor", "Streaky opacities at the bases. No effusion.",
     'Opacities at the bases. No effusion.'),
    ("desc_add_malignant", "There is a nodule in the left upper lobe. No effusion.",
     'There is a spiculated nodule in the left upper lobe. No effusion.'),
    ("desc_add_benign", "Left basilar atelectasis. No effusion.",
     'Left basilar subsegmental atelectasis. No effusion.'),
    ("cmp_reverse", "Pulmonary edema has improved. No pneumothorax.",
     'Pulmonary edema has worsened. No pneumothorax.'),
    ("cmp_paraphrase", "Pleural effusion is unchanged. No pneumothorax.",
     'Pleural effusion is essentially unchanged. No pneumothorax.'),
    ("cmp_drop_change", "New left pleural effusion. No pneumothorax.",
     'Left pleural effusion. No pneumothorax.'),
    ("cmp_drop_stable", "Stable calcified granuloma. No pneumothorax.",
     'Calcified granuloma. No pneumothorax.'),
    ("cmp_add_change", "Left pleural effusion. No pneumothorax.",
     'Worsening left pleural effusion. No pneumothorax.'),
    ("cmp_add_stable", "Calcified granuloma in the right upper lobe. No pneumothorax.",
     'Stable calcified granuloma in the right upper lobe. No pneumothorax.'),
    ("neg_flip", "No evidence of pneumothorax. Heart size is normal.",
     'Pneumothorax. Heart size is normal.'),
    ("neg_hedge", "No pleural effusion. Heart size is normal.",
     'No definite pleural effusion. Heart size is normal.'),
    ("neg_drop_pertinent", "Heart size is normal. No pneumothorax. Mild degenerative changes.",
     'Heart size is normal. Mild degenerative changes.'),
    ("neg_drop_benign", "Heart size is normal. The osseous structures are unremarkable. No pneumothorax.",
     'Heart size is normal. No pneumothorax.'),
    ("neg_add_negative", "Heart size is normal. The lungs are clear.",
     'Heart size is normal. The lungs are clear. No pleural effusion.'),
    ("mod_wrong", "Recommend chest CT for further evaluation. No effusion.",
     'Recommend abdominal ultrasound for further evaluation. No effusion.'),
    ("mod_synonym", "Recommend chest CT for further evaluation. No effusion.",
     'Recommend CT for further evaluation. No effusion.'),
    ("mod_overclaim", "There is a nodule in the left upper lobe. No effusion.",
     'There is a nodule in the left upper lobe. It is fully characterized on this radiograph and needs no CT. No effusion.'),
    ("size_scale", "Irregularly marginated 3-cm mass in the lingula. No effusion.",
     'Irregularly marginated 7.5-cm mass in the lingula. No effusion.'),
    ("size_jitter", "ET tube tip 4 cm above the carina. No pneumothorax.",
     'ET tube tip 4.2 cm above the carina. No pneumothorax.'),
    ("size_drop", "There is a nodule measuring 8 mm in the left lower lobe. No effusion.",
     'There is a nodule in the left lower lobe. No effusion.'),
    ("size_add", "There is a nodule in the left lower lobe. No effusion.",
     'There is a 4 cm nodule in the left lower lobe. No effusion.'),
    ("size_add_ctr", "The heart is normal in size. The lungs are clear.",
     'The heart is normal in size. The cardiothoracic ratio is 0.49. The lungs are clear.'),
    ("contra_assert", "The lungs are clear. Heart size is normal.",
     'The lungs are clear. There is consolidation in the right base. Heart size is normal.'),
    ("contra_clear", "Left lower lobe consolidation. Heart size is normal.",
     'Left lower lobe consolidation. The lungs are clear. Heart size is normal.'),
    ("contra_hedged", "No pleural effusion. Heart size is normal.",
     'No pleural effusion. A trace pleural effusion may be present. Heart size is normal.'),
    ("unc_swap", "Opacity may represent atelectasis. No effusion.",
     'Opacity might represent atelectasis. No effusion.'),
    ("unc_remove", "Opacity may represent atelectasis. No effusion.",
     'Opacity represents atelectasis. No effusion.'),
    ("unc_add", "Right pneumothorax. Heart size is normal.",
     'Possible right pneumothorax. Heart size is normal.'),
    ("term_wrong", "Small right pleural effusion. No pneumothorax.",
     'Small right pleural empyema. No pneumothorax.'),
    ("term_synonym", "Endotracheal tube in good position. No pneumothorax.",
     'Breathing tube in good position. No pneumothorax.'),
    ("noise_typo", "Subtle opacity may represent atelectasis.",
     'Subtle opacity may reprseent atelectasis.'),
    ("noise_flip", "Opacity most likely due to low lung volumes. No effusion.",
     'Opacity most unlikely due to low lung volumes. No effusion.'),
    ("style_reorder", "The lungs are clear. No pleural effusion. Heart size is normal.",
     'The lungs are clear. Heart size is normal. No pleural effusion.'),
    ("style_template", "There is no pleural effusion. Heart size is normal.",
     'No pleural effusion is seen. Heart size is normal.'),
    ("style_lr_swap", "Bilateral pleural effusions, left greater than right. No pneumothorax.",
     'Bilateral pleural effusions, right greater than left. No pneumothorax.'),
]


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


@pytest.mark.parametrize("name", sorted(set(RULES) - {"neg_add_negative", "sev_add_benign", "size_add_ctr", "noise_flip"}))
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
