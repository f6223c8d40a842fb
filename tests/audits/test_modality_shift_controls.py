"""modality_shift controls (issues 21, 40): AUROC of P(yes), changed answers, the no-input condition (descriptive),
the same-label swaps, the verdict rules and the findings — each against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.modality_shift.conditions import CONDITIONS, build_items, format_prompt, get_template
from radaudit.audits.modality_shift.findings import headline_findings, same_label_bar
from radaudit.audits.modality_shift.tables import answer_change_rate, auroc, auroc_table, changed_table, nfr_table
from radaudit.errors import ParamsError
from radaudit.findings import settle
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

def test_same_label_bar_is_half_the_opposite_swaps_lower_bound():
    assert same_label_bar({"estimate": 0.6, "low": 0.5, "high": 0.7}) == pytest.approx(0.25)
    assert same_label_bar({"estimate": 0.3, "low": float("nan"), "high": float("nan")}) == pytest.approx(0.15)
    assert same_label_bar({"estimate": 0.0, "low": 0.0, "high": 0.03}) == 0.0


def _tables(only_image=0.8, no_input=0.5, changed=0.2, text_nfr=(0.4, 0.3, 0.5), image_nfr=(0.05, 0.0, 0.1),
            same_image=(0.02, 0.0, 0.06), text_changed=(0.5, 0.4, 0.6), same_text=(0.05, 0.02, 0.11)):
    auroc_t = pd.DataFrame([{"model": "m", "condition": "only_image", "estimate": only_image, "low": only_image - 0.1,
                             "high": min(1.0, only_image + 0.1), "n": 100, "n_positive": 70},
                            {"model": "m", "condition": "no_input", "estimate": no_input, "low": np.nan,
                             "high": np.nan, "n": 100, "n_positive": 70}])
    changed_t = pd.DataFrame([{"model": "m", "condition": c, "estimate": e, "low": lo, "high": hi,
                               "n_changed": round(e * 100), "n": 100}
                              for c, (e, lo, hi) in (("image_shift", (changed, changed - 0.05, changed + 0.05)),
                                                     ("same_label_image_shift", same_image),
                                                     ("text_shift", text_changed), ("same_label_text_shift", same_text))])
    nfr_t = pd.DataFrame([{"model": "m", "condition": c, "measure": "nfr", "estimate": e, "low": lo, "high": hi,
                           "n": 100, "n_flipped": int(e * 100), "n_base_correct": 80}
                          for c, (e, lo, hi) in (("text_shift", text_nfr), ("image_shift", image_nfr))])
    return auroc_t, changed_t, nfr_t


PIXELS = {"estimate": 0.68, "low": 0.58, "high": 0.78, "description": "pixels"}
WORDS_LIKE_PIXELS = {"estimate": 0.7, "low": 0.6, "high": 0.8, "description": "words"}
WORDS_FAR_ABOVE = {"estimate": 0.92, "low": 0.86, "high": 0.97, "description": "words"}


def test_headline_findings_ids_and_verdicts():
    found = {f.id: f for f in settle(headline_findings(*_tables(), model="m", probe=PIXELS,
                                                       text_probe=WORDS_LIKE_PIXELS))}
    assert list(found) == ["only_image_auroc", "image_shift_changed", "same_label_image_swap_changed",
                           "same_label_text_swap_changed", "image_probe_auroc", "text_probe_auroc",
                           "notes_naming_diagnosis_share", "majority_accuracy", "no_input_auroc", "text_shift_nfr",
                           "image_shift_nfr"]  # no marked conditions: no natural_* findings
    assert found["only_image_auroc"].verdict == "partly"  # 0.8 but its CI [0.7, 0.9] crosses 0.75
    assert found["only_image_auroc"].bar.to_dict() == {"op": ">=", "value": 0.75}
    assert "0.680 [0.580, 0.780]" in found["only_image_auroc"].note
    assert found["image_probe_auroc"].verdict == "not shown" and found["image_probe_auroc"].bar is not None
    # no_input: one constant prompt, AUROC 0.5 by construction -> descriptive, never a control
    assert found["no_input_auroc"].verdict == "n/a" and "by construction" in found["no_input_auroc"].note
    assert found["no_input_auroc"].bar is None and all("no_input_auroc" not in f.controls for f in found.values())
    assert found["image_shift_changed"].value == 0.2 and found["image_shift_changed"].verdict == "shown"
    # same-label image swap: 2 of 100, CI [0, 0.06] <= 0.5 x 0.15; same-label text swap: CI [0.02, 0.11] <= 0.5 x 0.4
    assert found["same_label_image_swap_changed"].bar.to_dict() == {"op": "<=", "value": pytest.approx(0.075)}
    assert found["same_label_image_swap_changed"].verdict == "shown"
    assert found["same_label_text_swap_changed"].bar.to_dict() == {"op": "<=", "value": pytest.approx(0.2)}
    assert found["same_label_text_swap_changed"].verdict == "shown"
    # text NFR CI [0.3, 0.5] above the image shift's [0, 0.1], probes alike; rests on the controls, which here
    # include only_image_auroc (partly): settle lowers it
    t = found["text_shift_nfr"]
    assert t.controls == ("only_image_auroc", "image_shift_changed", "same_label_image_swap_changed",
                          "same_label_text_swap_changed")
    assert t.bar.to_dict() == {"op": ">", "value": 0.1}
    assert t.verdict == "not shown" and "only_image_auroc (partly)" in t.note
    assert found["image_shift_nfr"].verdict == "n/a"
    found = {f.id: f for f in settle(headline_findings(*_tables(only_image=0.9), model="m", probe=PIXELS,
                                                       text_probe=WORDS_LIKE_PIXELS))}
    assert found["only_image_auroc"].verdict == "shown" and found["text_shift_nfr"].verdict == "shown"


def test_text_reliance_is_rational_when_the_text_carries_the_label_far_better():
    found = {f.id: f for f in settle(headline_findings(*_tables(only_image=0.9), model="m", probe=PIXELS,
                                                       text_probe=WORDS_FAR_ABOVE))}
    t = found["text_shift_nfr"]
    assert t.verdict == "partly" and "rational weighting" in t.note and "0.920 [0.860, 0.970]" in t.note
    assert found["text_probe_auroc"].verdict == "shown" and "pixel probe: 0.680" in found["text_probe_auroc"].note
    # without the probes the rule cannot be checked: not the paper's claim either
    t = {f.id: f for f in headline_findings(*_tables(only_image=0.9), model="m")}["text_shift_nfr"]
    assert t.verdict == "partly" and "probes were not run" in t.note


def test_headline_findings_failures_say_why():
    found = {f.id: f for f in settle(headline_findings(
        *_tables(only_image=0.6, no_input=0.7, changed=0.05, text_nfr=(0.1, 0.0, 0.2), image_nfr=(0.05, 0.0, 0.1)),
        model="m", probe={"estimate": 0.6, "low": 0.5, "high": 0.7, "description": "pixels"}))}
    assert found["only_image_auroc"].verdict == "not shown" and "below the bar too" in found["only_image_auroc"].note
    assert found["no_input_auroc"].verdict == "n/a"  # whatever its value: descriptive
    assert found["image_shift_changed"].verdict == "not shown"
    # its controls failed: not evidence, not even partial (radaudit.findings rule 3)
    assert found["text_shift_nfr"].verdict == "not shown" and "only_image_auroc (not shown)" in found["text_shift_nfr"].note
    # the opposite-label image swap changes 5 of 100 (CI [0, 0.1]): no label effect to stay below
    assert found["same_label_image_swap_changed"].bar.value == 0.0
    assert found["same_label_image_swap_changed"].verdict != "shown"
    assert "no label effect" in found["same_label_image_swap_changed"].note


def test_text_shift_ordering_is_not_evidence_when_the_image_is_ignored():
    found = {f.id: f for f in headline_findings(*_tables(changed=0.0), model="m", probe=PIXELS,
                                                text_probe=WORDS_LIKE_PIXELS)}
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


def test_a_partly_text_reliance_names_the_controls_that_failed():
    # the same-label text swap changes 30 of 100 (CI [0.2, 0.4]) against a bar of 0.5 x 0.4: the control fails
    found = {f.id: f for f in settle(headline_findings(*_tables(only_image=0.9, same_text=(0.3, 0.2, 0.4)), model="m",
                                                       probe=PIXELS, text_probe=WORDS_FAR_ABOVE))}
    assert found["same_label_text_swap_changed"].verdict == "not shown"
    t = found["text_shift_nfr"]  # partly (rational weighting), and a control failed: not evidence at all
    assert t.verdict == "not shown" and "rational weighting" in t.note
    assert "control it rests on did not pass: same_label_text_swap_changed (not shown)" in t.note


def test_a_perfect_auroc_gets_the_separation_bound_not_a_zero_width_interval():
    """Every positive above every negative: each bootstrap resample gives 1, so [1, 1] would read as fixed by
    construction (findings.settle would call the positive control descriptive); the exact bound is used instead."""
    import pandas as pd

    from radaudit.audits.modality_shift.tables import auroc_table

    labels = [1] * 12 + [0] * 8
    scores = [0.9 + i / 1000 for i in range(12)] + [0.1 + i / 1000 for i in range(8)]
    res = pd.DataFrame({"model": "m", "condition": "marked_only_image", "label": labels, "p_yes": scores})
    row = auroc_table(res, n_bootstrap=200, seed=0).iloc[0]
    assert row["estimate"] == 1.0 and row["ci_method"] == "separation"
    assert row["low"] == pytest.approx(0.025 ** (1 / 8)) and row["high"] == 1.0
    # one negative above one positive: the bootstrap has spread and keeps its own interval
    scores[0], scores[12] = 0.2, 0.95
    row = auroc_table(res.assign(p_yes=scores), n_bootstrap=200, seed=0).iloc[0]
    assert row["ci_method"] == "bootstrap" and row["low"] < row["estimate"] < 1.0
