"""modality_shift (issue 40): the text probe, the notes that name the diagnosis, the majority-answer accuracy and the
same-label swap partners — each against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from radaudit.audits.modality_shift.conditions import build_items, draw_partners, get_template
from radaudit.audits.modality_shift.probe import DIAGNOSIS_PATTERNS, notes_naming_diagnosis, text_documents, text_probe
from radaudit.audits.modality_shift.tables import majority_accuracy, metrics_table
from radaudit.errors import ParamsError
from radaudit.stats import wilson_ci


def _frame(texts, labels, prefix="s"):
    n = len(texts)
    return pd.DataFrame({"sample_id": [f"{prefix}{i}" for i in range(n)], "patient_id": [f"{prefix}p{i}" for i in range(n)],
                         "image_path": "x.png", "text": texts, "label": labels, "split": "test", "sex": "F", "age": 50,
                         "view": "PA"})


# --- the text probe ---------------------------------------------------------------------------------

def test_text_probe_hand_computed():
    # the training notes tell the labels apart by one word: "covid" (1) vs "bacterial" (0)
    train = _frame(["covid pneumonia", "covid pneumonia", "bacterial pneumonia", "bacterial pneumonia"], [1, 1, 0, 0], "t")
    # evaluated: A, B, D share the note "covid pneumonia" (one score, the higher), C "bacterial pneumonia" (lower).
    # pairs (positive, negative): (A, C) 1, (A, D) tie 0.5, (B, C) 1, (B, D) tie 0.5 -> AUROC 3/4
    # (five copies of the four, for a bootstrap CI: the same pairs in the same proportions, still 3/4)
    test = _frame(["covid pneumonia", "covid pneumonia", "bacterial pneumonia", "covid pneumonia"] * 5, [1, 1, 0, 0] * 5)
    r = text_probe(train, test, n_bootstrap=200, seed=0)
    assert r["estimate"] == pytest.approx(0.75)
    assert r["low"] < 0.75 < r["high"] and r["n"] == 20 and r["n_train"] == 4
    assert "min_df=1" in r["description"]  # fewer than 10 training documents
    # swapped notes: the positives now read like the negatives -> every positive below or tied with every negative
    flipped = _frame(["bacterial pneumonia", "bacterial pneumonia", "covid pneumonia", "covid pneumonia"], [1, 1, 0, 0])
    assert text_probe(train, flipped, n_bootstrap=50)["estimate"] == 0.0
    with pytest.raises(ParamsError, match="both labels"):
        text_probe(train.assign(label=1), test)


def test_text_documents_are_the_only_text_prompt_the_model_reads():
    s = _frame(["Confirmed COVID-19."], [1])
    (doc,) = text_documents(s, "covid_cxr")
    tmpl = get_template("covid_cxr")
    assert "Clinical notes: Confirmed COVID-19." in doc and "Age: 50" in doc and "Sex: F" in doc
    assert tmpl["question_only_text"] in doc
    assert text_documents(s) == ["Confirmed COVID-19."]  # without a template: the notes alone


# --- notes that name the diagnosis ------------------------------------------------------------------

def test_notes_naming_diagnosis_hand_computed():
    s = _frame(["Confirmed COVID-19 by PCR.", "SARS-CoV-2 positive.", "Bacterial pneumonia.", "Tested negative for "
                "coronavirus.", "2019-nCoV exposure.", "Legionella."], [1, 1, 0, 0, 1, 0])
    r = notes_naming_diagnosis(s, "covid_cxr")
    # named: 0 (covid), 1 (sars-cov-2), 3 (coronavirus: negated, still named), 4 (ncov) -> 4 of 6
    assert (r["n_named"], r["n"]) == (4, 6) and r["estimate"] == pytest.approx(4 / 6)
    assert (r["low"], r["high"]) == pytest.approx(wilson_ci(4, 6))
    assert (r["n_named_positive"], r["n_positive"], r["n_named_negative"], r["n_negative"]) == (3, 3, 1, 3)
    assert notes_naming_diagnosis(s, patterns=[r"pneumonia"])["n_named"] == 1
    assert notes_naming_diagnosis(_frame(["Mild cardiomegaly.", "Normal."], [1, 0]), "mimic_cxr")["n_named"] == 1
    assert set(DIAGNOSIS_PATTERNS) == {"covid_cxr", "mimic_cxr", "fairvlmed"}
    with pytest.raises(ParamsError, match="diagnosis words"):
        notes_naming_diagnosis(s, "unknown_dataset")


# --- the constant answer ----------------------------------------------------------------------------

def test_majority_accuracy_hand_computed():
    r = majority_accuracy([1, 1, 1, 0])
    assert r["estimate"] == 0.75 and r["majority"] == 1 and r["n"] == 4
    assert (r["low"], r["high"]) == pytest.approx(wilson_ci(3, 4))
    assert majority_accuracy([0, 0, 1])["estimate"] == pytest.approx(2 / 3)
    assert majority_accuracy([0, 0, 1])["majority"] == 0
    assert majority_accuracy([1, 0])["majority"] == 1  # a tie answers "yes"
    assert math.isnan(majority_accuracy([])["estimate"])


def test_metrics_table_puts_the_majority_accuracy_beside_every_accuracy():
    res = pd.DataFrame({"model": "m", "condition": ["no_shift"] * 4 + ["text_shift"] * 4,
                        "label": [1, 1, 1, 0] * 2, "prediction": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]})
    t = metrics_table(res, n_bootstrap=50, seed=0)
    acc = t[t["metric"] == "accuracy"].set_index("condition")
    assert acc.at["no_shift", "estimate"] == 0.75 and acc.at["text_shift", "estimate"] == 0.0
    assert (acc["majority_accuracy"] == 0.75).all()  # always "yes": 3 of 4, whatever the model answers
    assert acc.at["no_shift", "majority_low"] == pytest.approx(wilson_ci(3, 4)[0])
    assert t.loc[t["metric"] != "accuracy", "majority_accuracy"].isna().all()


# --- same-label partners ----------------------------------------------------------------------------

def _samples():
    return pd.DataFrame({"sample_id": list("abcdef"), "patient_id": ["p1", "p1", "p2", "p3", "p4", "p5"],
                         "image_path": [f"{x}.png" for x in "abcdef"], "text": [f"note {x}" for x in "abcdef"],
                         "label": [1, 1, 1, 0, 0, 0], "split": "test", "sex": "F", "age": 50, "view": "PA"})


def test_same_label_partners_keep_the_label_and_leave_the_patient():
    s = _samples()
    p = draw_partners(s, seed=3).set_index("sample_id")
    label = s.set_index("sample_id")["label"]
    patient = s.set_index("sample_id")["patient_id"]
    for col in ("same_label_image_partner", "same_label_text_partner"):
        assert (p[col].map(label) == label).all() and (p[col].map(patient) != patient).all()
    # a and b are one patient: their only same-label partner from another patient is c
    assert p.at["a", "same_label_image_partner"] == "c" and p.at["b", "same_label_text_partner"] == "c"
    pd.testing.assert_frame_equal(draw_partners(s, seed=3), draw_partners(s.iloc[::-1], seed=3))
    items = build_items(s, draw_partners(s, seed=3), "covid_cxr",
                        conditions=("no_shift", "same_label_image_shift", "same_label_text_shift")).set_index(
        ["sample_id", "condition"])
    assert items.at[("a", "same_label_image_shift"), "image_source"] == "c"
    assert items.at[("a", "same_label_image_shift"), "text_source"] == "a"
    assert items.at[("d", "same_label_text_shift"), "image_source"] == "d"
    assert "note " + p.at["d", "same_label_text_partner"] in items.at[("d", "same_label_text_shift"), "prompt"]


def test_a_sample_without_a_same_label_partner_cannot_build_the_control():
    s = _samples().iloc[[0, 1, 3, 4]]  # label 1 only from patient p1: a and b have no same-label partner
    p = draw_partners(s, seed=0)
    assert p["same_label_image_partner"].iloc[:2].isna().all()
    build_items(s, p, "covid_cxr", conditions=("no_shift", "image_shift"))  # the other conditions still build
    with pytest.raises(ParamsError, match="no partner in 'same_label_image_partner'"):
        build_items(s, p, "covid_cxr", conditions=("no_shift", "same_label_image_shift"))
    with pytest.raises(ParamsError, match="draw them with draw_partners"):
        build_items(s, p[["sample_id", "image_partner", "text_partner"]], "covid_cxr",
                    conditions=("same_label_text_shift",))


def test_summary_reads_no_shift_against_the_majority_answer():
    from radaudit.audits.modality_shift.tables import answer_rates, ece_table, nfr_table, summary_lines

    res = pd.DataFrame({"model": "m", "sample_id": [f"s{i}" for i in range(8)] * 2,
                        "condition": ["no_shift"] * 8 + ["text_shift"] * 8, "label": [1, 1, 1, 1, 1, 1, 0, 0] * 2,
                        "prediction": [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0] + [0.0] * 8,
                        "p_yes": [0.9, 0.8, 0.7, 0.4, 0.3, 0.2, 0.1, 0.1] + [0.1] * 8})
    res["answer"] = res["prediction"].map({1.0: "yes", 0.0: "no"})
    lines = summary_lines(metrics_table(res, n_bootstrap=50), nfr_table(res, n_bootstrap=50),
                          ece_table(res, n_bootstrap=50), answer_rates(res))
    # No Shift: 5 of 8 right; always "yes": 6 of 8 (Wilson CI)
    (line,) = [x for x in lines if "majority answer" in x]
    lo, hi = wilson_ci(6, 8)
    assert f"accuracy 0.750 [{lo:.3f}, {hi:.3f}]" in line and line.endswith("falls below it.")
