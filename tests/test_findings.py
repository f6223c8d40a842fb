"""findings.json (radaudit.findings, Run.finding): the format's rules hold, and break loudly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from radaudit.findings import Finding, FindingsError, findings_frame, read_findings, write_findings


def test_round_trip_is_deterministic_and_exact(tmp_path):
    fs = [Finding("greedy_distinct_reports", "Distinct reports, greedy", np.float64(0.04), "shown", ci=(0.01, 0.09),
                  paper=0.003),
          Finding("erased_terms_greedy", "Erased words", np.int64(7), "partly", note="fewer than the paper's 32")]
    p = write_findings(tmp_path / "findings.json", "decoding_erasure", "demo", fs)
    first = p.read_bytes()
    write_findings(p, "decoding_erasure", "demo", fs)
    assert p.read_bytes() == first
    doc = json.loads(first)
    assert doc["findings"][0] == {"id": "greedy_distinct_reports", "label": "Distinct reports, greedy", "value": 0.04,
                                  "ci": [0.01, 0.09], "paper": 0.003, "verdict": "shown", "note": "", "bar": None,
                                  "controls": [], "stability": None}
    assert doc["findings"][1]["value"] == 7.0 and doc["findings"][1]["ci"] is None
    back = read_findings(tmp_path)
    assert back["experiment"] == "decoding_erasure" and back["findings"] == fs


@pytest.mark.parametrize("kwargs, message", [
    (dict(id="Greedy-Distinct"), "snake_case"),
    (dict(verdict="maybe"), "verdict must be one of"),
    (dict(verdict="not shown"), "needs a note"),
    (dict(value=math.nan), "value is missing"),
    (dict(value=None), "value is missing"),
    (dict(ci=(0.1, 0.2)), "does not contain the value 0.5"),
    (dict(ci=(0.9, 0.1)), "low > high"),
    (dict(ci=(0.1,)), r"ci must be \[low, high\]"),
    (dict(value="half"), "must be a number"),
    (dict(value=True), "bool"),
    (dict(label=" "), "label"),
])
def test_bad_findings_are_clear_errors(kwargs, message):
    base = dict(id="x_value", label="X", value=0.5, verdict="shown")
    with pytest.raises(FindingsError, match=message):
        Finding(**{**base, **kwargs})


def test_missing_value_with_a_reason_and_unknown_ci_bound_are_kept_honest():
    f = Finding("wae", "WAE", None, "n/a", note="no word is associated in the reference")
    assert f.value is None
    g = Finding("wae_ref", "WAE ref", 1.2, "shown", ci=(math.nan, 2.0))
    assert g.ci is None  # an interval with a missing bound is no interval
    noise = Finding("td", "TD", 1 / 60 + 1e-17, "shown", ci=(1 / 60 - 1e-18, 1 / 60))  # a degenerate bootstrap
    assert noise.ci == (1 / 60 - 1e-18, noise.value)
    t = findings_frame([f, g, Finding("auc", "AUROC", 0.8, "shown", ci=(0.7, 0.9), paper=0.85)])
    assert t["value"].tolist() == ["n/a", "1.2", "0.8 [0.7, 0.9]"]
    assert t["paper"].tolist() == ["", "", "0.85"]
    assert findings_frame([Finding("n", "N", 0.041234, "shown", paper=32)])[["value", "paper"]].values.tolist() == [
        ["0.0412", "32"]]


def test_duplicate_ids_and_bad_files_are_refused(tmp_path):
    f = Finding("a", "A", 1, "shown")
    with pytest.raises(FindingsError, match="repeated"):
        write_findings(tmp_path / "f.json", "e", "demo", [f, f])
    with pytest.raises(FindingsError, match="wrote no findings"):
        read_findings(tmp_path)
    (tmp_path / "findings.json").write_text('{"experiment": "e", "preset": "demo", "findings": '
                                            '[{"id": "a", "label": "A", "value": 1, "verdict": "shown", "extra": 1}]}')
    with pytest.raises(FindingsError, match="unknown keys"):
        read_findings(tmp_path)


def test_run_finding_writes_the_file_with_the_runs_preset_and_replaces_by_id(tmp_path):
    from radaudit.session import Run

    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke"}))
    run = Run(experiment="decoding_erasure", params=None, dir=tmp_path)  # type: ignore[arg-type]
    run.finding("a_b", "A", 0.5, verdict="shown", ci=[0.4, 0.6])
    run.finding("c", "C", 2, verdict="n/a", note="smoke preset: too few reports")
    run.finding("a_b", "A", 0.55, verdict="shown", ci=[0.4, 0.6])  # a re-run cell replaces, keeps the order
    doc = read_findings(tmp_path)
    assert doc["preset"] == "smoke" and [f.id for f in doc["findings"]] == ["a_b", "c"]
    assert doc["findings"][0].value == 0.55
    assert run.findings_table()["verdict"].tolist() == ["shown", "n/a"]


def test_readme_block_is_written_between_its_markers_only():
    from radaudit.findings import readme_block, readme_findings, update_readme

    doc = {"experiment": "decoding_erasure", "preset": "demo",
           "findings": [Finding("greedy_distinct_reports", "Distinct greedy reports", 0.04, "shown", ci=(0.01, 0.09),
                                paper=0.003),
                        Finding("erased_terms_greedy", "Erased words", 7, "not shown", note="controls fail")]}
    block = readme_block(doc, "20261125-1200_demo")
    assert "- **Distinct greedy reports** `greedy_distinct_reports`: 0.04 [0.01, 0.09] (paper: 0.003); *shown*" in block
    assert "- **Erased words** `erased_terms_greedy`: 7; *not shown* — controls fail" in block
    readme = ("# x\n<!-- findings:decoding_erasure -->\nold numbers\n<!-- /findings -->\ntail\n"
              "<!-- findings:modality_shift -->\nkeep\n<!-- /findings -->\n")
    new = update_readme(readme, "decoding_erasure", block)
    assert readme_findings(new, "decoding_erasure") == block and readme_findings(new, "modality_shift") == "keep\n"
    assert new.endswith("tail\n<!-- findings:modality_shift -->\nkeep\n<!-- /findings -->\n")
    with pytest.raises(FindingsError, match="no '<!-- findings:atomic_facts -->'"):
        update_readme(readme, "atomic_facts", block)


def _docs_page(experiment: str) -> str:
    from radaudit.paths import project_root

    return (project_root() / "docs" / "experiments" / f"{experiment}.md").read_text(encoding="utf-8")


def test_docs_show_the_decoding_erasure_findings_of_a_run():
    """The experiment page's numbers are written from a run's findings.json (the slow demo test checks they are
    the latest run's); here: the block is there and names every finding the issues ask for."""
    from radaudit.findings import readme_findings

    body = readme_findings(_docs_page("decoding_erasure"), "decoding_erasure")
    assert body is not None and body.startswith("Headline numbers of the `demo` run (")
    for fid in ("greedy_distinct_reports", "beam_distinct_reports", "reference_associated_words", "erased_terms_greedy",
                "erased_terms_greedy_paper_test", "nucleus_emergent_real_words", "erasure_planted_control",
                "erasure_negative_control"):
        assert f"`{fid}`" in body, fid


def test_docs_show_the_metric_metaeval_findings_of_a_run():
    """As above for metric_metaeval: the context ablation leads, and the rules-per-cell check is quoted."""
    from radaudit.findings import readme_findings

    body = readme_findings(_docs_page("metric_metaeval"), "metric_metaeval")
    assert body is not None and body.startswith("Headline numbers of the `demo` run (")
    ids = [line.split("`")[1] for line in body.splitlines() if line.startswith("- **")]
    assert ids[:2] == ["whole_report_auroc_median", "trimmed_pair_auroc_median"] and "min_rules_per_cell" in ids


# ---------------------------------------------------------------------------------- verdict rules

from radaudit.findings import Bar, judge, settle, verdict_label  # noqa: E402


@pytest.mark.parametrize("value, ci, bar, verdict", [
    (0.80, (0.76, 0.84), (">=", 0.75), "shown"),       # whole CI clears the bar
    (0.80, (0.70, 0.90), (">=", 0.75), "partly"),      # estimate clears it, CI crosses
    (0.70, (0.60, 0.80), (">=", 0.75), "not shown"),   # estimate does not
    (0.75, (0.75, 0.80), (">", 0.75), "not shown"),    # strict bar: the estimate on the bar is not over it
    (0.05, (0.01, 0.09), ("<=", 0.1), "shown"),
    (0.05, (0.01, 0.115), ("<=", 0.1), "partly"),      # the synthetic_cxr held-out control of issue 40
    (6.0, None, (">", 0), "shown"),                    # an exact count: the value is read
    (None, None, (">", 0), "n/a"),
])
def test_judge_reads_the_whole_ci_against_the_bar(value, ci, bar, verdict):
    j = judge(value, ci, bar)
    assert j.verdict == verdict
    assert (j.reason == "") == (verdict == "shown")


def test_bar_forms_and_bad_bars():
    assert Bar.of({"op": ">=", "value": 0.75}) == Bar(">=", 0.75) == Bar.of((">=", 0.75))
    assert str(Bar("<=", 0.1)) == "≤ 0.1" and Bar("<", 1).holds(0.5) and not Bar("<", 1).holds(1)
    for bad, msg in [({"op": "=>", "value": 1}, "op must be one of"), ({"op": ">="}, "bar must be"),
                     ((">=", float("nan")), "finite number"), (">=0.5", r"bar must be \(op, value\)")]:
        with pytest.raises(FindingsError, match=msg):
            Finding("a", "A", 1.0, "shown", bar=bad)


def test_settle_lowers_a_shown_whose_ci_crosses_its_bar_and_says_why():
    f = Finding("held_out_flagged", "Held-out flagged", 0.033, "shown", ci=(0.004, 0.115), bar=("<=", 0.1))
    [g] = settle([f])
    assert g.verdict == "partly" and "crosses the bar" in g.note and "0.115" in g.note
    ok = Finding("held_out_flagged", "Held-out flagged", 0.033, "shown", ci=(0.004, 0.08), bar=("<=", 0.1))
    assert settle([ok]) == [ok]


def test_settle_makes_a_zero_width_shown_descriptive():
    f = Finding("no_input_auroc", "AUROC, no input", 0.5, "shown", ci=(0.5, 0.5))
    [g] = settle([f])
    assert g.verdict == "n/a" and g.note.startswith("descriptive")
    assert settle([Finding("x", "X", 0.5, "shown", ci=(0.4, 0.6))])[0].verdict == "shown"


def test_settle_lowers_findings_whose_control_failed_was_descriptive_or_missing():
    neg = Finding("swap_changed", "Answers changed by a label-preserving swap", 0.3, "shown", ci=(0.2, 0.4),
                  bar=("<=", 0.1))  # fails: lowered to not shown by rule 1, so its dependants fall too
    fixed = Finding("no_input_auroc", "AUROC, no input", 0.5, "shown", ci=(0.5, 0.5))
    a = Finding("text_shift_nfr", "NFR", 0.3, "shown", ci=(0.2, 0.4), controls=("swap_changed",))
    b = Finding("image_auc", "AUROC", 0.8, "shown", ci=(0.7, 0.9), controls=("no_input_auroc",))
    c = Finding("other", "Other", 0.8, "shown", ci=(0.7, 0.9), controls=("never_written",))
    out = {f.id: f for f in settle([a, b, c, neg, fixed])}  # a control listed after its dependant is found
    assert out["swap_changed"].verdict == "not shown"
    assert out["text_shift_nfr"].verdict == "not shown" and "swap_changed (not shown)" in out["text_shift_nfr"].note
    assert out["image_auc"].verdict == "not shown" and "no_input_auroc (n/a)" in out["image_auc"].note
    assert "never_written (not reported)" in out["other"].note
    weak = Finding("weak", "Weak", 0.3, "partly", ci=(0.1, 0.5), controls=("swap_changed",), note="CIs overlap")
    lowered = {f.id: f for f in settle([weak, neg])}["weak"]
    assert lowered.verdict == "not shown" and "swap_changed (not shown)" in lowered.note  # partial evidence needs it too
    good = Finding("swap_changed", "swap", 0.05, "shown", ci=(0.02, 0.08), bar=("<=", 0.1))
    assert {f.id: f.verdict for f in settle([a, good])} == {"text_shift_nfr": "shown", "swap_changed": "shown"}
    with pytest.raises(FindingsError, match="its own control"):
        Finding("a", "A", 1, "shown", controls=("a",))


def test_settle_publishes_a_verdict_that_moves_with_the_seed_as_partly_k_of_n():
    st = {"seeds": [0, 1, 2], "verdicts": ["shown", "not shown", "shown"]}
    f = Finding("image_shift_changed", "Changed by image shift", 0.3, "shown", ci=(0.2, 0.4), stability=st)
    [g] = settle([f])
    assert g.verdict == "partly" and verdict_label(g) == "partly (2/3 seeds)" and "2 of 3" in g.note
    assert settle([g]) == [g]  # idempotent: the note is not written twice
    same = Finding("x", "X", 0.3, "shown", ci=(0.2, 0.4), stability={"seeds": [0, 1, 2], "verdicts": ["shown"] * 3})
    assert settle([same]) == [same] and verdict_label(same) == "shown"
    with pytest.raises(FindingsError, match="one verdict per seed"):
        Finding("x", "X", 0.3, "shown", stability={"seeds": [0, 1], "verdicts": ["shown"]})


def test_a_verdict_shown_here_but_on_no_seed_of_the_benchmark_is_not_shown_not_partly_0_of_n():
    st = {"seeds": [0, 1, 2], "verdicts": ["not shown", "partly", "not shown"]}
    f = Finding("same_label_image_swap_changed", "Changed by a same-label swap", 0.06, "shown", ci=(0.03, 0.1),
                stability=st)
    [g] = settle([f])
    assert g.verdict == "not shown" and verdict_label(g) == "not shown"  # was "partly (0/3 seeds)"
    assert "none of the 3 training seeds" in g.note and settle([g]) == [g]


def test_the_file_holds_the_settled_verdicts_and_reads_back(tmp_path):
    f = Finding("a", "A", 0.8, "shown", ci=(0.7, 0.9), bar={"op": ">=", "value": 0.75}, controls=("c",))
    c = Finding("c", "C", 0.05, "shown", ci=(0.01, 0.09), bar=("<=", 0.1))
    write_findings(tmp_path / "findings.json", "e", "demo", [f, c])
    raw = json.loads((tmp_path / "findings.json").read_text())["findings"][0]
    assert raw["verdict"] == "partly" and raw["bar"] == {"op": ">=", "value": 0.75} and raw["controls"] == ["c"]
    back = read_findings(tmp_path)["findings"]
    assert back[0].bar == Bar(">=", 0.75) and back[0].verdict == "partly"
    t = findings_frame(back)
    assert t["bar"].tolist() == ["≥ 0.75", "≤ 0.1"] and t["controls"].tolist() == ["c", ""]
