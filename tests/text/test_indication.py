"""clinical_indication: the clinical question without demographics or de-identification marks."""

from __future__ import annotations

import pytest

from radaudit.text.indication import clinical_indication

CASES = [
    ("The patient is a XXXX-year-old male with left upper abdominal pain.", "left upper abdominal pain"),
    ("Chest pain status post MVA. Male, 53 years.", "chest pain status post mva"),
    ("XXXX-year-old woman, hypoxia", "hypoxia"),
    ("54 old male with chest pain", "chest pain"),
    ("The patient is a XXXX year-old old male with chest pain", "chest pain"),
    ("A 30-year-old female with pneumonia", "pneumonia"),
    ("XXXX year-old female with hemoptysis. History of sarcoidosis.", "hemoptysis. history of sarcoidosis"),
    ("r/o pleural effusion", "r/o pleural effusion"),  # nothing demographic: only lower-cased
    ("Female with history of breast cancer", "history of breast cancer"),
    ("XXXX", ""),  # only a placeholder: nothing clinical is left
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_clinical_question_is_kept_and_demographics_removed(raw, expected):
    assert clinical_indication(raw) == expected


def test_no_sex_word_survives_and_missing_values_are_empty():
    for raw, _ in CASES:
        assert not {"male", "female", "man", "woman"} & set(clinical_indication(raw).replace(",", " ").split())
    assert clinical_indication(None) == "" and clinical_indication(float("nan")) == ""
