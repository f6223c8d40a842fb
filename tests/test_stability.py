"""radaudit.stability: a run carries the stability benchmark's verdicts only for the benchmark's recipe."""

from __future__ import annotations

import json

import pytest

from radaudit.experiments import get_experiment
from radaudit.findings import read_findings
from radaudit.stability import StabilityError, read_stability, recipe_id, stability_for


def _params(**over):
    return get_experiment("modality_shift").params_model()(**over)


def test_the_recipe_ignores_the_seed_and_the_machine_but_not_a_setting():
    base = recipe_id("modality_shift", _params())
    assert recipe_id("modality_shift", _params(seed=2)) == base  # the benchmark varies the seed
    assert recipe_id("modality_shift", _params(data_root="/elsewhere")) == base
    # how figures are saved decides no verdict: a PDF beside the PNGs, or another resolution, is the same recipe
    assert recipe_id("modality_shift", _params(figure_pdf=False, figure_dpi=72)) == base
    assert recipe_id("modality_shift", _params(n_bootstrap=57)) != base  # a setting that moves CIs is another recipe
    assert recipe_id("synthetic_cxr", get_experiment("synthetic_cxr").params_model()()) != base
    assert len(base) == 16 and int(base, 16) >= 0


def test_the_recipe_follows_the_stand_ins_training_config(monkeypatch):
    from radaudit.audits.modality_shift import models

    base = recipe_id("modality_shift", _params())
    monkeypatch.setitem(models.DEMO_VLM_CONFIG, "steps", models.DEMO_VLM_CONFIG["steps"] + 1)
    assert recipe_id("modality_shift", _params()) != base


def _doc(recipe, seeds=(0, 1, 2), verdicts=("shown", "not shown", "shown")):
    rows = [{"seed": s, "value": 0.2, "ci": [0.1, 0.3], "verdict": v} for s, v in zip(seeds, verdicts)]
    return {"seeds": [0, 1, 2], "preset": "demo",
            "experiments": {"modality_shift": {"recipe": recipe, "findings": {"text_shift_nfr": rows}}}}


def test_stability_for_needs_the_same_recipe_and_every_seed():
    doc = _doc("abc")
    assert stability_for(doc, "modality_shift", "abc", "text_shift_nfr") == {
        "seeds": [0, 1, 2], "verdicts": ["shown", "not shown", "shown"]}
    assert stability_for(doc, "modality_shift", "other", "text_shift_nfr") is None
    assert stability_for(doc, "modality_shift", "abc", "unknown") is None
    assert stability_for(_doc("abc", seeds=(0, 1), verdicts=("shown", "shown")), "modality_shift", "abc",
                         "text_shift_nfr") is None  # a seed missing: no claim over seeds


def test_bad_stability_files_are_clear_errors(tmp_path):
    assert read_stability(tmp_path / "none.json") == {}
    (tmp_path / "a.json").write_text("{")
    with pytest.raises(StabilityError, match="not valid JSON"):
        read_stability(tmp_path / "a.json")
    (tmp_path / "b.json").write_text(json.dumps(_doc("abc", verdicts=("shown", "maybe", "shown"))))
    with pytest.raises(StabilityError, match="verdicts outside"):
        read_stability(tmp_path / "b.json")


def test_a_run_of_the_benchmarks_recipe_publishes_a_split_verdict_as_partly(tmp_path, monkeypatch):
    from radaudit.session import Run

    params = _params()
    stab = tmp_path / "verdict_stability.json"
    stab.write_text(json.dumps(_doc(recipe_id("modality_shift", params))))
    monkeypatch.setenv("RADAUDIT_STABILITY", str(stab))
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "demo"}))
    run = Run(experiment="modality_shift", params=params, dir=tmp_path)
    run.finding("text_shift_nfr", "NFR", 0.2, verdict="shown", ci=[0.1, 0.3])
    run.finding("image_shift_nfr", "NFR image", 0.05, verdict="shown", ci=[0.01, 0.09])  # not in the benchmark
    got = {f.id: f for f in read_findings(tmp_path)["findings"]}
    assert got["text_shift_nfr"].verdict == "partly" and got["text_shift_nfr"].note.startswith("partly (2/3 seeds)")
    assert got["image_shift_nfr"].verdict == "shown" and got["image_shift_nfr"].stability is None
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"preset": "demo"}))
    run2 = Run(experiment="modality_shift", params=_params(n_bootstrap=57), dir=other)  # another recipe
    run2.finding("text_shift_nfr", "NFR", 0.2, verdict="shown", ci=[0.1, 0.3])
    assert read_findings(other)["findings"][0].verdict == "shown"
    monkeypatch.setenv("RADAUDIT_STABILITY", "off")
    third = tmp_path / "third"
    third.mkdir()
    (third / "manifest.json").write_text(json.dumps({"preset": "demo"}))
    Run(experiment="modality_shift", params=params, dir=third).finding("text_shift_nfr", "NFR", 0.2, verdict="shown",
                                                                      ci=[0.1, 0.3])
    assert read_findings(third)["findings"][0].stability is None


def _benchmark():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "verdict_stability.py"
    spec = importlib.util.spec_from_file_location("verdict_stability_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_docs_block_is_the_benchmarks_table_and_replaces_only_its_body(tmp_path):
    bench = _benchmark()
    doc = {**_doc("abc"), "commit": "abc1234", "machine": "x86_64, 2 cores, AMD EPYC"}
    block = bench.docs_block(doc)
    assert block.startswith("Written by `benchmarks/verdict_stability.py` at abc1234")
    assert "### modality_shift" in block and "\n## " not in block  # one level below the page's title
    # seed 1 did not show it: published as partly (2/3 seeds), each seed's cell with its CI and verdict
    assert "| `text_shift_nfr` | 0.2 [0.1, 0.3] *shown* | 0.2 [0.1, 0.3] *not shown* |" in block
    assert block.rstrip().endswith("| **partly (2/3 seeds)** |")
    page = tmp_path / "stability.md"
    page.write_text("# Title\n\nprose\n\n<!-- stability -->\nold table\n<!-- /stability -->\n\nafter\n")
    bench.update_docs(doc, page)
    text = page.read_text()
    assert "old table" not in text and text.startswith("# Title\n\nprose\n\n<!-- stability -->\nWritten by")
    assert text.endswith("<!-- /stability -->\n\nafter\n")
    page.write_text("# no markers\n")
    with pytest.raises(SystemExit, match="no '<!-- stability -->'"):
        bench.update_docs(doc, page)


def test_the_published_stability_page_is_the_committed_benchmark():
    """docs/stability.md's block is rendered from benchmarks/results/verdict_stability.json, never typed."""
    bench = _benchmark()
    text = bench.DOCS_PAGE.read_text()
    body = text.split("<!-- stability -->\n", 1)[1].split("<!-- /stability -->", 1)[0]
    saved = bench.RESULTS / "verdict_stability.json"
    if not saved.exists():
        assert body.strip() == "*Not yet run for this recipe.*"
        return
    assert body == bench.docs_block(json.loads(saved.read_text()))


def test_merge_keeps_the_other_experiments_blocks_with_the_commit_they_ran_at():
    bench = _benchmark()
    saved = {"seeds": [0, 1, 2], "preset": "demo", "commit": "old1234", "machine": "m1",
             "experiments": {"decoding_erasure": {"recipe": "r1", "findings": {}},
                             "modality_shift": {"recipe": "r2", "findings": {}}}}
    fresh = {"modality_shift": {"recipe": "r3", "commit": "new5678", "machine": "m2", "findings": {}}}
    out = bench.merged(saved, fresh, [0, 1, 2], "demo")
    assert out["modality_shift"]["recipe"] == "r3"  # the fresh block wins
    assert out["decoding_erasure"] == {"commit": "old1234", "machine": "m1", "recipe": "r1", "findings": {}}
    assert bench.merged(None, fresh, [0, 1, 2], "demo") == fresh
    with pytest.raises(SystemExit, match="seeds"):
        bench.merged(saved, fresh, [0, 1], "demo")
    # the page names the commit of a block that ran at another commit than the file's
    doc = {"seeds": [0, 1, 2], "preset": "demo", "commit": "new5678", "machine": "m2", "experiments": out}
    text = bench.markdown(doc)
    assert "## decoding_erasure\n\nRun at old1234 on m1.\n" in text and "Run at new5678" not in text


def test_unsettled_names_the_findings_a_run_made_before_the_benchmark_left_unsettled():
    """The docs refuse such a run (`radaudit findings --docs`): its `shown` may be one training draw."""
    from radaudit.stability import unsettled

    doc = _doc("abc")
    before = [{"id": "text_shift_nfr", "stability": None}, {"id": "image_shift_nfr", "stability": None}]
    assert unsettled(doc, "modality_shift", "abc", "demo", before) == ["text_shift_nfr"]  # the benchmark holds it
    settled = [{"id": "text_shift_nfr", "stability": {"seeds": [0, 1, 2], "verdicts": ["shown"] * 3}}]
    assert unsettled(doc, "modality_shift", "abc", "demo", settled) == []
    assert unsettled(doc, "modality_shift", "other", "demo", before) == []  # another recipe: nothing to settle by
    assert unsettled(doc, "modality_shift", "abc", "paper", before) == []  # another preset


def test_the_docs_refuse_a_run_whose_findings_were_never_settled(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from radaudit.cli import main
    from radaudit.findings import Finding, write_findings

    params = _params()
    stab = tmp_path / "verdict_stability.json"
    stab.write_text(json.dumps(_doc(recipe_id("modality_shift", params))))
    monkeypatch.setenv("RADAUDIT_STABILITY", str(stab))
    run = tmp_path / "20261203-000000_demo"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"preset": "demo", "params": params.model_dump(mode="json")}))
    write_findings(run / "findings.json", "modality_shift", "demo",
                   [Finding(id="text_shift_nfr", label="NFR", value=0.2, ci=[0.1, 0.3], verdict="shown")])
    page = tmp_path / "docs" / "experiments" / "modality_shift.md"  # the project the command writes to: tmp_path
    page.parent.mkdir(parents=True)
    page.write_text("# x\n\n<!-- findings:modality_shift -->\nold\n<!-- /findings -->\n")
    monkeypatch.setattr("radaudit.cli.project_root", lambda: tmp_path)
    out = CliRunner().invoke(main, ["findings", "modality_shift", "--docs", "--run", str(run)])
    assert out.exit_code != 0 and "text_shift_nfr carry no verdicts over seeds" in out.output
    assert "Run the experiment again" in out.output and "\nold\n" in page.read_text()  # the page is left as it was
    # the same finding settled by the benchmark (as a run after the file was written carries it): the page is written
    write_findings(run / "findings.json", "modality_shift", "demo",
                   [Finding(id="text_shift_nfr", label="NFR", value=0.2, ci=[0.1, 0.3], verdict="partly", note="split",
                            stability={"seeds": [0, 1, 2], "verdicts": ["shown", "not shown", "shown"]})])
    out = CliRunner().invoke(main, ["findings", "modality_shift", "--docs", "--run", str(run)])
    assert out.exit_code == 0, out.output
    assert "partly (2/3 seeds)" in page.read_text()
