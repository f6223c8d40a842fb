"""decoding_erasure findings: Fig. 2c is reported whether or not it could run (issue 19)."""


def test_skew_study_is_a_finding_whether_or_not_it_ran():
    from radaudit.audits.decoding_erasure.findings import skew_study

    not_run = skew_study([], "No model for training skew(s) 0.67, 0.5, 0.33 in skew_models: left out.")
    assert not_run.id == "skew_study" and not_run.value is None and not_run.verdict == "n/a"
    assert not_run.note.startswith("not run: No model for training skew(s) 0.67")
    ran = skew_study([0.67, 0.5], "No model for training skew(s) 0.33 in skew_models: left out.")
    assert "run for training skews 0.67, 0.5" in ran.note and "0.33" in ran.note
