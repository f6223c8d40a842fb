"""The rule-based decomposer on hand-written sentences."""

from __future__ import annotations

import pytest

from radaudit.atomic.decompose import RuleDecomposer, render_prompt, report_body
from radaudit.errors import ParamsError


def facts(text, **kw):
    return {f.name: f for f in RuleDecomposer(**kw).decompose_one(text)}


def test_presence_negation_and_attributes():
    f = facts("Small left pleural effusion. No pneumothorax.")
    assert f["pleural effusion"].present == "yes" and f["pneumothorax"].present == "no"
    a = f["pleural effusion"].attributes
    assert (a.location, a.severity) == ("left", "Small")
    assert f["pleural effusion"].evidence == "Small left pleural effusion."
    assert f["pneumothorax"].attributes.stated() == {}


def test_attribute_goes_to_its_finding_in_the_clause():
    f = facts("5 mm calcified nodule in the right upper lobe and moderate right pleural effusion, which has increased.")
    n, e = f["nodule"].attributes, f["pleural effusion"].attributes
    assert (n.size, n.morphology, n.location) == ("5 mm", "calcified", "right upper lobe")
    assert (e.severity, e.location) == ("moderate", "right")
    assert n.temporal is None


def test_uncertainty_policy():
    text = "Left lower lobe consolidation versus atelectasis."
    assert facts(text)["atelectasis"].present == "yes"
    assert facts(text, uncertain="no")["atelectasis"].present == "no"
    assert "atelectasis" not in facts(text, uncertain="drop")
    with pytest.raises(ParamsError, match="uncertain"):
        RuleDecomposer(uncertain="maybe")


def test_anatomy_needs_an_abnormal_predicate():
    assert facts("The heart is enlarged.")["cardiomegaly"].present == "yes"
    assert facts("Heart size is normal.")["cardiomegaly"].present == "no"
    assert "cardiomegaly" not in facts("The cardiac silhouette is stable.")


def test_devices_carry_side_and_tip():
    f = facts("A right internal jugular central venous catheter has been placed with its tip in the lower SVC.")
    cvc = f["central venous catheter"]
    assert cvc.present == "yes" and cvc.attributes.location == "right, tip: lower svc"


def test_mentions_merge_and_sections():
    f = facts("Small right effusion. No left effusion. The effusion has increased.")
    assert f["pleural effusion"].present == "yes"
    assert f["pleural effusion"].attributes.temporal == "has increased"
    text = "INDICATION: Evaluate for pneumonia.\nFINDINGS: The lungs are clear. No pneumothorax."
    assert report_body(text) == "The lungs are clear. No pneumothorax."
    assert set(facts(text)) == {"pneumothorax"}


def test_empty_and_bad_input():
    d = RuleDecomposer()
    assert d.decompose(["", "Kein Pleuraerguss."])[0].findings == ()
    assert d.decompose(["Kein Pleuraerguss."])[0].findings == ()
    with pytest.raises(ParamsError, match="not a str"):
        d.decompose([None])


def test_render_prompt_needs_the_placeholder():
    assert render_prompt('{"a": 1} {report}', report="x") == '{"a": 1} x'
    with pytest.raises(ParamsError, match=r"\{report\}"):
        render_prompt("no placeholder", report="x")


# ---- issue 18: lexicon gaps, wrong mappings, resolution after the noun, tension, devices, mimics

@pytest.mark.parametrize("text, name", [
    ("Enlarged mediastinal lymph nodes.", "lymphadenopathy"),
    ("Bulky right paratracheal nodes.", "lymphadenopathy"),
    ("Hilar lymph node enlargement.", "lymphadenopathy"),
    ("Fluid in the right pleural space.", "pleural effusion"),
    ("Air in the left pleural space.", "pneumothorax"),
    ("Gas under the right hemidiaphragm.", "pneumoperitoneum"),
    ("Enlarged cardiac silhouette.", "cardiomegaly"),
    ("The heart is mildly enlarged.", "cardiomegaly"),
    ("Obscuration of the right heart border.", "opacity"),
    ("Shift of the mediastinum to the left.", "mediastinal shift"),
    ("Complete collapse of the left lower lobe.", "atelectasis"),
    ("Nodular opacity in the left upper lobe.", "nodule"),
])
def test_synonyms_and_gaps_are_found(text, name):
    f = facts(text)
    assert name in f and f[name].present == "yes", f


def test_mediastinal_shift_and_obscured_contours_are_not_a_widened_mediastinum():
    assert "widened mediastinum" not in facts("Shift of the mediastinum to the left.")
    assert "widened mediastinum" not in facts("The mediastinum is shifted to the right.")
    f = facts("The cardiomediastinal contours are obscured by increased opacity at the right base.")
    assert "widened mediastinum" not in f and f["opacity"].present == "yes"
    # an anatomy word with its own abnormal predicate still is one
    assert facts("The mediastinum is widened.")["widened mediastinum"].present == "yes"
    assert "cardiomegaly" not in facts("The heart size is stable, with prominent interstitial markings.")


@pytest.mark.parametrize("text", [
    "No longer seen is the left pleural effusion.",
    "The left pleural effusion has resolved.",
    "Resolved left pleural effusion.",
    "Interval resolution of the left pleural effusion.",
    "Also resolved is the left pleural effusion.",
])
def test_resolution_is_absence_and_keeps_its_temporal_word(text):
    e = facts(text)["pleural effusion"]
    assert e.present == "no"
    assert e.attributes.temporal is not None  # kept: AtomiMed-clinical compares "resolved" with "decreased"


def test_resolution_does_not_reach_a_later_finding():
    f = facts("Resolved left pneumothorax with persistent small effusion.")
    assert f["pneumothorax"].present == "no" and f["pleural effusion"].present == "yes"


def test_tension_is_a_morphology_of_the_pneumothorax():
    f = facts("Large right tension pneumothorax with leftward mediastinal shift.")
    assert f["pneumothorax"].attributes.morphology == "tension"
    assert f["mediastinal shift"].present == "yes"


@pytest.mark.parametrize("text, device, malpositioned", [
    ("Endotracheal tube tip is in the right mainstem bronchus.", "endotracheal tube", "yes"),
    ("ETT terminates 4 cm above the carina.", "endotracheal tube", "no"),
    ("Nasogastric tube is coiled in the esophagus.", "enteric tube", "yes"),
    ("NG tube tip is in the stomach.", "enteric tube", "no"),
    ("Right PICC terminates in the right internal jugular vein.", "central venous catheter", "yes"),
    ("Left IJ central line tip in the mid SVC.", "central venous catheter", "no"),
])
def test_device_position_is_a_finding(text, device, malpositioned):
    f = facts(text)
    assert f[device].present == "yes"
    assert f[f"malpositioned {device}"].present == malpositioned


def test_tip_words_are_not_the_device_side():
    f = facts("Left chest wall pacemaker with leads in the right atrium and right ventricle.")
    assert f["pacemaker"].attributes.location == "Left"
    assert "right" not in (f["pacemaker lead"].attributes.location or "").split("tip:")[0].lower()


def test_a_finding_explained_as_a_mimic_is_hedged():
    f = facts("Nodular opacity over the right lower lung, likely a nipple shadow.")
    assert f["nodule"].present == "yes" and f["nodule"].hedged
    assert not facts("Nodular opacity over the right lower lung.")["nodule"].hedged
    assert facts("Possible right lower lobe pneumonia.")["pneumonia"].hedged
