"""The reading report and the runs index (radaudit.report, issue 22): what a reader sees and what is hidden."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from radaudit.report import findings_table, latex_to_mathml, render_index, render_run_report, repeat_command


def test_math_becomes_mathml_and_dollars_that_are_not_math_stay():
    out = latex_to_mathml(r"ECE $= \sum_b \frac{|B_b|}{N}$ and $$x^2$$; it costs $5 and $6 here")
    assert out.count("<math") == 2 and 'display="block"' in out and "<mfrac>" in out
    assert "costs $5 and $6 here" in out  # a price is not an equation
    assert latex_to_mathml("no math") == "no math"


def test_findings_table_shows_value_ci_paper_and_verdict():
    html = findings_table([{"id": "x_auc", "label": "AUROC <b>", "value": 0.81234, "ci": [0.74, 0.87], "paper": 0.9,
                            "verdict": "not shown", "note": "small n"}])
    assert "0.812" in html and "[0.74, 0.87]" in html and "0.9" in html and "not shown" in html
    assert "AUROC &lt;b&gt;" in html  # labels are escaped, never markup
    assert "wrote no findings" in findings_table([])


def test_repeat_command_names_preset_overrides_and_files():
    m = {"experiment": "modality_shift", "preset": "paper", "overrides": ["n_bootstrap=50", "note=a b"],
         "params_files": {"/x/my.yaml": "..."}, "rehearsal": {"a": "B"}}
    assert repeat_command(m) == ("radaudit run modality_shift --preset paper -f /x/my.yaml -p n_bootstrap=50 "
                                 "-p 'note=a b' --rehearse")


def _fake_run(tmp_path, experiment="decoding_erasure"):
    run = tmp_path / experiment / "20260101-000000_smoke"
    (run / "figures").mkdir(parents=True)
    (run / "tables").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 01 · A title\n\n**Paper:** someone, *a title over\ntwo lines* (`../shared/papers/x.txt`)."
                                      "\n\nIntro $a+b$."),
        nbformat.v4.new_markdown_cell("## Parameters\n\nThe cell below is tagged `parameters`."),
        nbformat.v4.new_code_cell("seed = 0", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("SECRET_CODE = 1\nprint('visible')", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="visible output\n"),
            nbformat.v4.new_output("stream", name="stderr", text="WARNING a log line\n")]),
        nbformat.v4.new_code_cell("x = 2"),  # no output: nothing to show
        nbformat.v4.new_markdown_cell("## 1. Results"),
    ]
    nbformat.write(nb, run / f"{experiment}.ipynb")
    (run / "manifest.json").write_text(json.dumps({
        "experiment": experiment, "preset": "smoke", "run_name": run.name, "status": "succeeded",
        "started": "2026-01-01T00:00:00+00:00", "git": {"commit": "abcdef1234567890", "dirty": False},
        "params": {"seed": 0}, "overrides": [], "steps": {"1. Results": 2.5}}))
    (run / "findings.json").write_text(json.dumps({"experiment": experiment, "preset": "smoke", "findings": [
        {"id": "f1", "label": "First finding", "value": 0.5, "ci": [0.4, 0.6], "paper": None, "verdict": "shown",
         "note": ""}]}))
    return run


def test_report_hides_code_parameters_and_logs_and_cites_arxiv(tmp_path):
    run = _fake_run(tmp_path)
    page = render_run_report(run).read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h1>01 · A title</h1>" in page
    assert "SECRET_CODE" not in page and "seed = 0" not in page and "The cell below is tagged" not in page
    assert "WARNING a log line" not in page and "visible output" not in page  # printed lines and logs: run.log
    assert "shared/papers" not in page and "https://arxiv.org/abs/2603.01625" in page  # the paper by arXiv id
    assert "two lines" not in page and "Intro" in page  # the notebook's own citation paragraph, all of it, is gone
    assert page.index("id='findings'") < page.index("The analysis") < page.index("id='methods'")
    assert "<math" in page and "radaudit run decoding_erasure --preset smoke" in page
    # nothing a browser would fetch from another host: no script at all, no remote stylesheet, font or image
    assert "<script" not in page
    assert not re.search(r"""(src|href)=['"]?(https?:)?//(?!arxiv\.org/abs/)""", page.replace("<a href=", "<a x="))


def test_failed_run_says_so_above_what_it_wrote(tmp_path):
    run = _fake_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m.update(status="failed", error={"message": "ValueError: boom"})
    (run / "manifest.json").write_text(json.dumps(m))
    page = render_run_report(run).read_text()
    assert "This run failed" in page and "ValueError: boom" in page and page.index("This run failed") < page.index(
        "id='findings'")


def test_index_lists_every_run_newest_first_with_findings_and_thumbnail(tmp_path):
    a = _fake_run(tmp_path, "decoding_erasure")
    b = _fake_run(tmp_path, "modality_shift")
    m = json.loads((b / "manifest.json").read_text())
    m["started"] = "2026-02-01T00:00:00+00:00"
    (b / "manifest.json").write_text(json.dumps(m))
    (b / "figures" / "fig.png").write_bytes(b"\x89PNG")
    render_run_report(a)
    (tmp_path / "modality_shift" / "latest").symlink_to(b.name)  # not listed twice
    page = render_index(tmp_path).read_text()
    rows = re.findall(r"<tr><td>(\w+)</td>", page)
    assert rows == ["modality_shift", "decoding_erasure"]
    assert "First finding: <b>0.5</b> <small>[0.4, 0.6]</small>" in page and "src='modality_shift/20260101-000000_smoke/figures/fig.png'" in page
    assert "href='decoding_erasure/20260101-000000_smoke/decoding_erasure.html'" in page


@pytest.mark.parametrize("bad", [None, "not json"])
def test_report_of_a_run_without_manifest_or_findings_still_renders(tmp_path, bad):
    run = _fake_run(tmp_path)
    (run / "findings.json").unlink()
    if bad is None:
        (run / "manifest.json").unlink()
    else:
        (run / "manifest.json").write_text(bad)
    page = render_run_report(run, run / "decoding_erasure.ipynb").read_text()
    assert "wrote no findings" in page and "A title" in page


def test_a_report_shows_no_path_of_the_machine_that_made_it(tmp_path, monkeypatch):
    from radaudit.paths import project_root

    data = tmp_path / "lab" / "data"
    monkeypatch.setenv("RADAUDIT_DATA", str(data))
    run = _fake_run(tmp_path)
    nb = nbformat.read(run / "decoding_erasure.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("display(...)", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/markdown": f"Run folder: `{run}`; cache `{project_root()}/.cache/radaudit`; "
                                               f"images under {data}/iu_xray"})]))
    nbformat.write(nb, run / "decoding_erasure.ipynb")
    page = render_run_report(run).read_text()
    assert str(tmp_path) not in page and str(project_root()) not in page
    assert "Run folder: <code>&lt;this run&gt;</code>" in page
    assert "&lt;project&gt;/.cache/radaudit" in page and "$RADAUDIT_DATA/iu_xray" in page
    index = render_index(tmp_path).read_text()
    assert str(tmp_path) not in index


def test_index_leads_each_run_with_the_finding_that_answers_the_papers_question(tmp_path):
    run = _fake_run(tmp_path, "modality_shift")
    doc = json.loads((run / "findings.json").read_text())
    doc["findings"] = [dict(doc["findings"][0], id="only_image_auroc", label="Positive control"),
                       dict(doc["findings"][0], id="text_shift_nfr", label="Text shift NFR")]
    (run / "findings.json").write_text(json.dumps(doc))
    page = render_index(tmp_path, top=1).read_text()
    assert "Text shift NFR" in page and "Positive control" not in page


def test_a_wide_table_is_shown_in_parts_that_repeat_its_labels():
    import pandas as pd

    from radaudit.report import split_wide_tables

    df = pd.DataFrame({f"c{i}": [i, 10 * i] for i in range(12)}, index=pd.Index(["bleu", "rouge"], name="metric"))
    html = split_wide_tables(df.to_html(), max_columns=6)
    parts = pd.read_html(__import__("io").StringIO(html))
    # 13 columns (the index + 12): label columns = index + c0, then 4 data columns per part: 11 / 4 -> 3 parts
    assert len(parts) == 3 and "columns 3–6 of 13" in html and "columns 11–13 of 13" in html
    assert all(list(p.iloc[:, 0]) == ["bleu", "rouge"] for p in parts)
    names = [str(c[0] if isinstance(c, tuple) else c) for p in parts for c in p.columns]
    got = sorted({c for c in names if c.startswith("c")}, key=lambda c: int(c[1:]))
    assert got == [f"c{i}" for i in range(12)]  # every column shown once beside the labels (c0 in every part)
    narrow = df.iloc[:, :3].to_html()
    assert split_wide_tables(narrow, max_columns=6) == narrow  # nothing to split: untouched
    merged = pd.DataFrame([[1] * 12], columns=pd.MultiIndex.from_product([["a", "b"], list("uvwxyz")])).to_html()
    assert split_wide_tables(merged, max_columns=6) == merged  # merged header cells: left whole
