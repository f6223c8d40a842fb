"""modality_shift controls (issue 21): AUROC of P(yes), changed answers, the no-input condition, the
verdict rules and the findings — each against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.modality_shift.conditions import CONDITIONS, build_items, format_prompt, get_template
from radaudit.audits.modality_shift.findings import control_verdict, headline_findings
from radaudit.audits.modality_shift.tables import answer_change_rate, auroc, auroc_table, changed_table, nfr_table
from radaudit.errors import ParamsError
from radaudit.stats import wilson_ci

COVID = get_template("covid_cxr")


def _samples() -> pd.DataFrame:
    return pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "patient_id": ["p1", "p2", "p3", "p4"],
                         "image_path": ["ia.png", "ib.png", "ic.png", "id.png"],
                         "text": ["Confirmed COVID-19 by PCR.", "Bacterial pneumonia.", "SARS-CoV-2 positive.",
                                  "Legionella infection."],
                         "label": [1, 0, 1, 0], "split": "test", "sex": ["F", "M", "M", "F"], "age": [50, 60, 70, 80],
                         "view": ["PA", "AP", "PA", "AP"]})


def _partners() -> pd.DataFrame:
    return pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "image_partner": ["b", "a", "d", "c"],
                         "text_partner": ["d", "c", "b", "a"]})


# --- AUROC ------------------------------------------------------------------------------------------

def test_auroc_hand_computed():
    # pairs (pos, neg): 0.35>0.1 yes, 0.35>0.4 no, 0.8>0.1 yes, 0.8>0.4 yes -> 3/4
    assert auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    # one tie counts a half: 0.4 = 0.4 -> (1 + 0.5 + 1 + 1) / 4
    assert auroc([0, 0, 1, 1], [0.1, 0.4, 0.4, 0.8]) == pytest.approx(0.875)
    assert auroc([1, 0, 1, 0], [0.3, 0.3, 0.3, 0.3]) == 0.5  # a constant score is chance, exactly
    assert auroc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0
    assert math.isnan(auroc([1, 1], [0.2, 0.3]))  # one class: undefined
    assert math.isnan(auroc([0, 1], [0.2, float("nan")]))  # a row without scores cannot be ranked
    with pytest.raises(ParamsError):
        auroc([0, 1, 1], [0.1, 0.2])


def test_auroc_table_per_condition_with_ci():
    # the four-sample example ten times over (no positive ties a negative): still 0.75
    res = pd.DataFrame({"model": "m", "condition": ["only_image"] * 40 + ["no_input"] * 40,
                        "label": [0, 0, 1, 1] * 20, "p_yes": [0.1, 0.4, 0.35, 0.8] * 10 + [0.6] * 40})
    t = auroc_table(res, n_bootstrap=200, seed=0).set_index("condition")
    assert t.at["only_image", "estimate"] == pytest.approx(0.75)
    assert t.at["no_input", "estimate"] == 0.5
    assert t.at["only_image", "low"] <= 0.75 <= t.at["only_image", "high"]
    assert t.at["only_image", "n"] == 40 and t.at["only_image", "n_positive"] == 20


def test_auroc_and_ece_ci_equal_the_one_replicate_at_a_time_bootstrap():
    """auroc_table / ece_table take every resample at once; their intervals are those of the plain loop over
    the same resamples with the one-row statistics (scikit-learn's AUROC, the binned ECE), to float rounding."""
    from radaudit.audits.modality_shift.tables import ece_table, expected_calibration_error
    from radaudit.stats import bootstrap_ci

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    p = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.25, 60), 0, 1).round(2)  # rounded: ties across classes
    res = pd.DataFrame({"model": "m", "condition": "no_shift", "label": y, "p_yes": p})
    a = auroc_table(res, n_bootstrap=300, seed=5).iloc[0]
    e = ece_table(res, n_bins=10, n_bootstrap=300, seed=5).iloc[0]
    loop_a = bootstrap_ci((y.astype(float), p), auroc, n_bootstrap=300, seed=5, method="percentile")
    loop_e = bootstrap_ci((p, y.astype(float)), lambda q, t: expected_calibration_error(q, t, 10), n_bootstrap=300,
                          seed=5, method="percentile")
    for row, loop in ((a, loop_a), (e, loop_e)):
        assert row["estimate"] == pytest.approx(loop.estimate, abs=1e-12)
        assert (row["low"], row["high"]) == (pytest.approx(loop.low, abs=1e-12), pytest.approx(loop.high, abs=1e-12))
        assert row["low"] < row["estimate"] < row["high"]


# --- changed answers --------------------------------------------------------------------------------

def test_answer_change_rate_hand_computed():
    c = answer_change_rate(["yes", "no", "yes", "unknown"], ["yes", "yes", "yes", "no"])
    assert c == {"changed": 0.5, "n_changed": 2, "n": 4}
    assert math.isnan(answer_change_rate([], [])["changed"])
    with pytest.raises(ParamsError):
        answer_change_rate(["yes"], ["yes", "no"])


def test_changed_table_pairs_on_sample_and_gives_wilson_ci():
    res = pd.DataFrame({"model": "m", "sample_id": ["a", "b", "c", "d", "a", "b", "c", "d"],
                        "condition": ["no_shift"] * 4 + ["image_shift"] * 4,
                        "answer": ["yes", "no", "yes", "no", "yes", "yes", "no", "no"]})
    row = changed_table(res).iloc[0]
    assert row["condition"] == "image_shift" and row["n_changed"] == 2 and row["n"] == 4
    assert row["estimate"] == 0.5
    assert (row["low"], row["high"]) == pytest.approx(wilson_ci(2, 4))


# --- the no-input condition -------------------------------------------------------------------------

def test_no_input_removes_image_and_text():
    items = build_items(_samples(), _partners(), "covid_cxr")
    assert list(items.groupby("sample_id")["condition"].apply(list).iloc[0]) == list(CONDITIONS)
    none = items[items["condition"] == "no_input"]
    assert len(none) == 4
    assert none["image_path"].map(lambda v: v is None).all()
    assert none["image_source"].map(lambda v: v is None).all()
    assert none["text_source"].map(lambda v: v is None).all()
    assert none["prompt"].nunique() == 1  # the same input for every sample: nothing of the sample is left
    prompt = none["prompt"].iloc[0]
    assert prompt.startswith(COVID["question_no_input"])
    for leak in ("Clinical notes", "Age:", "COVID-19 by PCR", "pneumonia", "<image>", "image only"):
        assert leak not in prompt
    assert none["label"].tolist() == [1, 0, 1, 0]  # the ground truth is still the sample's


def test_no_input_question_falls_back_to_the_image_only_question():
    tmpl = {k: v for k, v in COVID.items() if k != "question_no_input"}
    assert format_prompt(tmpl, None, "no_input").startswith(COVID["question_only_image"])


# --- verdict rules and findings ---------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "value", "verdict"), [
    ("positive", 0.75, "shown"), ("positive", 0.7499, "not shown"), ("negative", 0.45, "shown"),
    ("negative", 0.55, "shown"), ("negative", 0.56, "not shown"), ("negative", 0.44, "not shown"),
    ("changed", 0.10, "not shown"), ("changed", 0.11, "shown"), ("positive", None, "n/a"),
    ("changed", float("nan"), "n/a")])
def test_control_verdicts(kind, value, verdict):
    assert control_verdict(kind, value) == verdict


def _tables(only_image=0.8, no_input=0.5, changed=0.2, text_nfr=(0.4, 0.3, 0.5), image_nfr=(0.05, 0.0, 0.1)):
    auroc_t = pd.DataFrame([{"model": "m", "condition": "only_image", "estimate": only_image, "low": only_image - 0.1,
                             "high": min(1.0, only_image + 0.1), "n": 100, "n_positive": 70},
                            {"model": "m", "condition": "no_input", "estimate": no_input, "low": np.nan,
                             "high": np.nan, "n": 100, "n_positive": 70}])
    changed_t = pd.DataFrame([{"model": "m", "condition": "image_shift", "estimate": changed, "low": changed - 0.05,
                               "high": changed + 0.05, "n_changed": int(changed * 100), "n": 100}])
    nfr_t = pd.DataFrame([{"model": "m", "condition": c, "measure": "nfr", "estimate": e, "low": lo, "high": hi,
                           "n": 100, "n_flipped": int(e * 100), "n_base_correct": 80}
                          for c, (e, lo, hi) in (("text_shift", text_nfr), ("image_shift", image_nfr))])
    return auroc_t, changed_t, nfr_t


def test_headline_findings_ids_and_verdicts():
    probe = {"estimate": 0.68, "low": 0.58, "high": 0.78, "description": "pixels"}
    found = {f.id: f for f in headline_findings(*_tables(), model="m", probe=probe)}
    assert list(found) == ["only_image_auroc", "image_shift_changed", "image_probe_auroc", "no_input_auroc",
                           "text_shift_nfr", "image_shift_nfr"]  # no marked conditions: no natural_* findings
    assert found["only_image_auroc"].verdict == "shown" and found["only_image_auroc"].ci == pytest.approx((0.7, 0.9))
    assert "0.680 [0.580, 0.780]" in found["only_image_auroc"].note
    assert found["image_probe_auroc"].verdict == "not shown"
    assert found["no_input_auroc"].verdict == "shown" and found["no_input_auroc"].ci is None
    assert found["image_shift_changed"].value == 0.2 and found["image_shift_changed"].verdict == "shown"
    assert found["text_shift_nfr"].verdict == "shown"  # CI [0.3, 0.5] above the image shift's [0, 0.1]
    assert found["image_shift_nfr"].verdict == "n/a"


def test_headline_findings_failures_say_why():
    found = {f.id: f for f in headline_findings(*_tables(only_image=0.6, no_input=0.7, changed=0.05,
                                                         text_nfr=(0.1, 0.0, 0.2), image_nfr=(0.05, 0.0, 0.1)),
                                                model="m", probe={"estimate": 0.6, "low": 0.5, "high": 0.7,
                                                                  "description": "pixels"})}
    assert found["only_image_auroc"].verdict == "not shown" and "so do the pixels" in found["only_image_auroc"].note
    assert found["no_input_auroc"].verdict == "not shown" and "leak" not in found["no_input_auroc"].label
    assert found["image_shift_changed"].verdict == "not shown"
    assert found["text_shift_nfr"].verdict == "partly"


def test_text_shift_ordering_is_not_evidence_when_the_image_is_ignored():
    found = {f.id: f for f in headline_findings(*_tables(changed=0.0), model="m")}
    assert found["text_shift_nfr"].verdict == "partly" and "by construction" in found["text_shift_nfr"].note


def test_headline_findings_without_conditions_are_na():
    empty_auroc = pd.DataFrame(columns=["model", "condition", "estimate", "low", "high", "n", "n_positive"])
    empty = pd.DataFrame(columns=["model", "condition", "measure", "estimate", "low", "high", "n", "n_flipped",
                                  "n_changed"])
    found = {f.id: f for f in headline_findings(empty_auroc, empty, empty, model="m")}
    assert all(f.verdict == "n/a" and f.value is None and f.note for f in found.values())


def test_nfr_table_covers_no_input():
    res = pd.DataFrame({"model": "m", "sample_id": ["a", "b"] * 2, "condition": ["no_shift"] * 2 + ["no_input"] * 2,
                        "label": [1, 0, 1, 0], "prediction": [1.0, 0.0, 1.0, 1.0]})
    t = nfr_table(res, n_bootstrap=50).query("measure == 'nfr'").iloc[0]
    assert t["condition"] == "no_input" and t["estimate"] == 0.5
