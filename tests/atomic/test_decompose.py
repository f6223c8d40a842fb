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
