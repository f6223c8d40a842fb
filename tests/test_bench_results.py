"""benchmarks/_results.py: what every benchmark writes, and the README lines made from it (issue 25)."""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def results(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    module = importlib.import_module("_results")
    yield module
    sys.modules.pop("_results", None)


def test_fit_slope_recovers_the_exponent_of_a_power_law(results):
    xs = [100, 1_000, 10_000]
    assert results.fit_slope(xs, [0.02 * x for x in xs]) == pytest.approx(1.0)
    assert results.fit_slope(xs, [3e-6 * x**2 for x in xs]) == pytest.approx(2.0)
    # n log n between 1e3 and 1e5 fits a slope a little above 1: log(1e5 * 5) - log(1e3 * 3) over log(100)
    ys = [x * (len(str(x)) - 1) for x in (1_000, 100_000)]
    assert results.fit_slope([1_000, 100_000], ys) == pytest.approx(1 + (0.69897 - 0.47712) / 2, abs=1e-4)
    assert str(results.fit_slope([5], [1.0])) == "nan"
    # a fixed cost flattens the small sizes: only the top 1.5 decades are fitted (None: every point)
    xs, ys = [10, 100, 1_000, 10_000, 100_000], [5.0, 5.0, 5.0, 10.0, 100.0]
    assert results.fit_slope(xs, ys) == pytest.approx(results.fit_slope([10_000, 100_000], [10.0, 100.0]))
    assert results.fit_slope(xs, ys, decades=None) < 0.5


def test_record_writes_the_fields_and_regenerates_the_readme(results, tmp_path):
    out = results.record("demo_bench", seconds=12.5, n=1000, ratio=0.4, max_abs_diff=2e-7, budget_s=10.0,
                         folder=tmp_path, repeats=3)
    saved = json.loads((tmp_path / "demo_bench.json").read_text())
    assert saved == out
    assert saved["budget_ratio"] == 1.25 and saved["ratio"] == 0.4 and saved["max_abs_diff"] == 2e-7
    assert saved["repeats"] == 3 and saved["peak_rss_mb"] > 0
    # the CPU model is part of the machine: figures from two CPUs are not comparable
    assert saved["machine"].startswith(f"{platform.machine()}, {os.cpu_count()} cores")
    from radaudit.manifest import cpu_model

    assert saved["machine"].endswith(cpu_model()) and cpu_model() in open("/proc/cpuinfo").read()
    assert saved["commit"]  # a sha (maybe +dirty) or "unknown" outside git
    (tmp_path / "quality.json").write_text(json.dumps({"bars": {}}))  # not a speed benchmark
    text = results.write_readme(tmp_path).read_text()
    assert "| `demo_bench` | 0.40 | 1.25× of 10 s | 12.50 | 1,000 | 2.0e-07 |" in text
    assert "`quality.json`" in text.split("## Other results")[1]
    with pytest.raises(ValueError, match="plain file stem"):
        results.record("../x", seconds=1.0, n=1, folder=tmp_path)


def test_scaling_plot_writes_a_figure_with_its_slope(results, tmp_path):
    slopes = results.scaling_plot("grow", {"linear": ([10, 100, 1000], [1, 10, 100]),
                                           "quadratic": ([10, 100], [1, 100])}, xlabel="n", folder=tmp_path)
    assert slopes == pytest.approx({"linear": 1.0, "quadratic": 2.0})
    png = tmp_path / "grow_scaling.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    results.record("grow", seconds=1.0, n=1000, folder=tmp_path, slopes=slopes)
    assert "[`grow_scaling.png`](grow_scaling.png)" in (tmp_path / "README.md").read_text()
    assert "linear 1.00, quadratic 2.00" in (tmp_path / "README.md").read_text()


def test_committed_results_readme_and_speed_lines_are_regenerated_not_typed(results, monkeypatch):
    """benchmarks/results/README.md and README.md's speed lines equal what the committed JSON files render."""
    assert (ROOT / "benchmarks" / "results" / "README.md").read_text() == results.render_readme()
    readme = importlib.import_module("_readme")
    assert readme.read_block("speed") == results.render_speed_block(), \
        "README speed lines are stale: run `python benchmarks/_results.py --readme`"
    assert readme.read_block("demo") == results.render_demo_block(), \
        "README make-demo times are stale: run `python benchmarks/_results.py --readme`"
    sys.modules.pop("_readme", None)


def test_demo_lines_come_from_the_runs_manifests(results, tmp_path):
    """benchmarks/demo_timings.py: the six latest demo runs' durations summed (plus install), per experiment,
    refused when an experiment has no run or the runs span commits."""
    from radaudit.experiments import EXPERIMENTS

    sys.path.insert(0, str(ROOT / "benchmarks"))
    demo = importlib.import_module("demo_timings")
    outputs = tmp_path / "outputs"
    cell = {"cell_type": "code", "source": "x = 1", "metadata": {"papermill": {"duration": 2.5}}, "outputs": []}

    def make(exp, seconds, sha="abc1234def", name="20261127-120000_demo"):
        run = outputs / exp / name
        run.mkdir(parents=True)
        (run / "manifest.json").write_text(json.dumps({
            "experiment": exp, "preset": "demo", "status": "succeeded", "started": name, "duration_s": seconds,
            "notebook": "nb.ipynb", "git": {"commit": sha, "dirty": False}}))
        (run / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                  "nbformat_minor": 5}))

    names = sorted(EXPERIMENTS)
    for i, exp in enumerate(names[:-1]):
        make(exp, 60.0 * (i + 1))
    cache = tmp_path / "cache"  # no model trained: never the project's own cache
    with pytest.raises(SystemExit, match=names[-1]):
        demo.demo_record(outputs, "cached", cache=cache)
    make(names[-1], 30.0)
    rec = demo.demo_record(outputs, "fresh", install_seconds=90.0, cache=cache)
    assert rec["training_seconds"] == 0.0 and rec["training_models"] == 0
    want = sum(60.0 * (i + 1) for i in range(len(names) - 1)) + 30.0
    assert rec["seconds"] == pytest.approx(want + 90.0) and rec["budget_s"] == 900.0 and rec["n"] == len(names)
    assert rec["per_experiment"][names[0]] == 60.0 and rec["run_commit"] == "abc1234"
    assert len(rec["slowest_cells"]) == len(names) and rec["slowest_cells"][0]["seconds"] == 2.5
    assert "reference_units" not in rec and "reference units" not in results.render_demo_block(tmp_path)
    # with the fixed reference workload timed beside it: the demo's seconds in units of that workload
    rec = demo.demo_record(outputs, "fresh", install_seconds=90.0, cache=cache,
                           reference={"seconds": 4.0, "runs": [4.0], "workload": "w"})
    assert rec["reference_units"] == pytest.approx(round((want + 90.0) / 4.0, 1)) and rec["reference_seconds"] == 4.0
    with pytest.raises(SystemExit, match="positive"):
        demo.demo_record(outputs, "fresh", cache=cache, reference={"seconds": 0.0, "workload": "w"})
    # timed before the runs as well: the units use the mean (4.0 and 5.0 -> 4.5 s), and say what either alone gives
    both = demo.demo_record(outputs, "fresh", install_seconds=90.0, cache=cache,
                            reference={"seconds": 5.0, "runs": [5.0], "workload": "w"},
                            reference_before={"seconds": 4.0, "runs": [4.0], "workload": "w"})
    assert both["reference_seconds"] == 4.5 and both["reference_units"] == pytest.approx(round((want + 90.0) / 4.5, 1))
    assert both["reference_units_range"] == [round((want + 90.0) / 5.0, 1), round((want + 90.0) / 4.0, 1)]
    assert (both["reference_seconds_before"], both["reference_seconds_after"]) == (4.0, 5.0)
    results.record("demo_fresh", folder=tmp_path, **both)
    lo, hi = both["reference_units_range"]
    assert f"took 4.00 s before the runs and 5.00 s after, in the same process as the record; {lo:g}-{hi:g} units" in (
        results.render_demo_block(tmp_path))
    with pytest.raises(SystemExit, match="not the one timed after"):
        demo.demo_record(outputs, "fresh", cache=cache, reference={"seconds": 5.0, "workload": "w"},
                         reference_before={"seconds": 4.0, "workload": "another"})
    with pytest.raises(SystemExit, match="positive"):
        demo.demo_record(outputs, "fresh", cache=cache, reference={"seconds": 5.0, "workload": "w"},
                         reference_before={"seconds": 0.0, "workload": "w"})
    results.record("demo_fresh", folder=tmp_path, **rec)
    block = results.render_demo_block(tmp_path)
    assert f"That is {rec['reference_units']:g} reference units" in block and "took 4.00 s" in block
    assert f"**{(want + 90) / 60:.1f} min**" in block and "install 1.5 min" in block
    assert "`make demo` again right after" in block and "not measured yet" in block  # no cached record here
    # runs side by side (make demo's DEMO_JOBS): the wall clock from the first start to the last end, not the sum
    for i, exp in enumerate(names):
        m = json.loads((outputs / exp / "20261127-120000_demo" / "manifest.json").read_text())
        m.update(started=f"2026-11-27T12:0{i // 2}:00+00:00", finished=f"2026-11-27T12:0{i // 2}:50+00:00")
        (outputs / exp / "20261127-120000_demo" / "manifest.json").write_text(json.dumps(m))
    par = demo.demo_record(outputs, "cached", cache=cache)
    last = (len(names) - 1) // 2
    assert par["seconds"] == 60.0 * last + 50.0 and par["parallel"] and par["notebook_seconds_sum"] == want
    results.record("demo_cached", folder=tmp_path, **par)
    assert f"{par['seconds'] / 60:.1f} min of wall clock for {want / 60:.1f} min of notebooks" in \
        results.render_demo_block(tmp_path)
    # a fresh clone given a bundle: install and import are added to the notebooks' wall clock
    bun = demo.demo_record(outputs, "bundle", install_seconds=90.0, import_seconds=4.0, cache=cache)
    assert bun["seconds"] == pytest.approx(par["seconds"] + 94.0) and bun["budget_s"] == 900.0
    results.record("demo_bundle", folder=tmp_path, **bun)
    line = next(ln for ln in results.render_demo_block(tmp_path).splitlines() if "DEMO_BUNDLE" in ln)
    assert f"**{(par['seconds'] + 94.0) / 60:.1f} min**" in line and "install 1.5 min, bundle import 4 s, " in line
    make(names[0], 10.0, sha="fff0000aaa", name="20261127-130000_demo")  # a newer run of another commit
    with pytest.raises(SystemExit, match="several commits"):
        demo.demo_record(outputs, "cached", cache=cache)
    sys.modules.pop("demo_timings", None)


def test_the_fresh_line_says_how_much_of_the_notebooks_was_training(results, tmp_path):
    """demo_timings.trained_during: the training time recorded by the model folders written while the runs ran
    (not one trained before them), and the README line's 'even if training were free' floor from it."""
    from datetime import datetime

    sys.path.insert(0, str(ROOT / "benchmarks"))
    demo = importlib.import_module("demo_timings")
    start, end = "2026-11-27T12:00:00+00:00", "2026-11-27T12:10:00+00:00"
    t_in = datetime.fromisoformat("2026-11-27T12:05:00+00:00").timestamp()
    t_before = datetime.fromisoformat("2026-11-27T11:00:00+00:00").timestamp()
    cache = tmp_path / "cache"

    def model(kind, name, record, when):
        folder = cache / kind / name
        folder.mkdir(parents=True)
        for file, fields in record.items():
            (folder / file).write_text(json.dumps(fields))
            os.utime(folder / file, (when, when))

    model("demo_models", "vlm-1", {"radaudit_vlm_model.json": {"total_seconds": 400.0, "train_seconds": 350.0},
                                   "training_log.json": {"elapsed_seconds": 350.0}}, t_in)  # the inclusive time
    model("demo_models", "diffusion-1", {"radaudit_diffusion.json": {"train_seconds": 200.0}}, t_in)
    model("utility_classifiers", "real-1", {"radaudit_utility_classifier.json": {"elapsed_seconds": 10.5}}, t_in)
    model("demo_models", "old-1", {"radaudit_cxr_model.json": {"total_seconds": 999.0}}, t_before)  # before the runs
    model("demo_models", "untimed", {"config.json": {}}, t_in)  # records no time
    manifests = [{"started": start, "finished": end}]
    assert demo.trained_during(cache, manifests) == (610.5, 3)
    assert demo.trained_during(cache, [{"started": "20261127-120000_demo"}]) == (0.0, 0)
    sys.modules.pop("demo_timings", None)
    line = results._training_note({"training_seconds": 610.5, "training_models": 3, "notebook_seconds_sum": 1210.5,
                                   "parallel": True})  # no `jobs`: make demo's default, 2
    assert "run 3 at a time, would take at least 3.3 min" in results._training_note(
        {"training_seconds": 610.5, "notebook_seconds_sum": 1210.5, "jobs": 3})
    assert "Training the 3 stand-in models took 10.2 of those 20.2 notebook minutes" in line
    assert "the rest, 10.0 min, run 2 at a time, would take at least 5.0 min even if training were free" in line
    assert results._training_note({"training_seconds": 0.0, "notebook_seconds_sum": 100.0}) == ""


def test_speed_lines_say_what_each_file_holds(results, tmp_path):
    results.record("association", seconds=9.8, n=100_000, unit="reports", budget_s=10.0, folder=tmp_path,
                   slopes={"CAD + WAE": 0.93})
    results.record("bertscore", seconds=2.0, n=200, unit="pairs", ratio=0.7, folder=tmp_path,
                   slopes={"radaudit": 1.1, "bert-score": 0.9}, floor_ratio=0.534,
                   floor_ratio_encoder=1.317, floor_target_encoder=1.2)
    block = results.render_speed_block(tmp_path)
    line = next(ln for ln in block.splitlines() if ln.startswith("- CAD + WAE"))
    assert "9.80 s for 100,000 reports" in line and "0.98x the 10 s target" in line and "log-log slope 0.93" in line
    assert "log-log slope radaudit 1.10, bert-score 0.90" in block  # several series: each named
    assert "float32 floor 0.53 (the linear layers alone" in block
    assert "1.32x the encoder's forward passes alone, timed in the same process (target 1.2x)" in block
    assert "floor" not in line  # only where the benchmark measured one
    assert "- AtomiMed rule backend: not measured yet" in block


def test_bertscore_floor_counts_the_linear_layers_of_the_real_tokens(monkeypatch, pypi_minilm):
    """3 layers x (4 attention projections 32x32 + 32x48 + 48x32) = 21,504 multiply-adds per token; the pooler
    (one row per text) is left out; 'no heart' is [CLS] no heart [SEP] and 'heart' 3 tokens, a repeat counts once."""
    import types

    import torch
    import transformers

    from radaudit.models.resolver import DEFAULT_TEXT_ENCODER, resolve_model

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the script sets it on import: undone after this test, not leaked
    bench = importlib.import_module("bench_bertscore")
    tok = transformers.AutoTokenizer.from_pretrained(resolve_model(DEFAULT_TEXT_ENCODER).path_or_id)
    cfg = transformers.BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                                  intermediate_size=48, max_position_embeddings=64)
    torch.manual_seed(0)
    metric = types.SimpleNamespace(tokenizer=tok, model=transformers.BertModel(cfg), max_length=64)
    floor = bench._linear_floor(metric, ["no heart", "heart", "no heart"], repeats=1)
    assert floor["tokens"] == 7
    assert floor["linear_gflop"] == pytest.approx(2 * 7 * 21_504 / 1e9)
    assert floor["floor_seconds"] == pytest.approx(floor["linear_gflop"] / floor["gemm_gflop_s"])
    sys.modules.pop("bench_bertscore", None)


def test_ranking_suite_reports_every_held_out_suite_with_what_it_is(monkeypatch):
    """benchmarks/ranking_suite.py: a held-out file's split is named from its file ('holdout2'), and the README
    block has a column per suite and says of each what it is to the rules (read / read later / never read)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    for var, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
        monkeypatch.setenv(var, value)
    rs = importlib.import_module("ranking_suite")
    assert rs.parse_case_arg("nowhere/ranking_cases_holdout2.yaml")[1] == "holdout2"
    assert rs.parse_case_arg("nowhere/ranking_cases_holdout.yaml")[1] == "holdout"
    assert rs.parse_case_arg("nowhere/ranking_cases.yaml")[1] == "dev"
    assert rs.parse_case_arg("nowhere/mine.yaml:extra")[1] == "extra"

    def metric(**acc):
        return {"status": "ok", "splits": {s: {"accuracy": a} for s, a in acc.items()}}

    result = {"commit": "abc1234", "date": "2026-11-27",
              "suites": {"dev": {"n_cases": 80}, "holdout": {"n_cases": 54}, "holdout2": {"n_cases": 52}},
              "metrics": {"atomimed_clinical": metric(dev=0.98, holdout=1.0, holdout2=0.98),
                          "bleu1": metric(dev=0.60, holdout=0.54, holdout2=0.70),
                          "rouge1": metric(dev=0.62, holdout=0.52, holdout2=0.69),
                          "green": {"status": "unavailable"}}}
    block = rs.render_readme(result)
    assert "| metric | dev | holdout | holdout2 |" in block
    assert "| `atomimed_clinical` | 98% | 100% | 98% |" in block
    assert "| `rouge1` (best other metric on dev) | 62% | 52% | 69% |" in block
    assert "| `bleu1` (best other metric on holdout2) | 60% | 54% | 70% |" in block
    assert "**holdout2** (52 cases): " + rs.SPLIT_NOTES["holdout2"] in block and "never read" in rs.SPLIT_NOTES["holdout2"]
    assert "no longer unseen" in rs.SPLIT_NOTES["holdout"] and "`green`" in block
    sys.modules.pop("ranking_suite", None)


def test_a_blind_suite_without_provenance_is_not_scored_by_a_plain_run(monkeypatch, tmp_path, caplog):
    """A new blind suite dropped into tests/fixtures must not be scored by a run meant for the others: only the
    splits with a provenance in SPLIT_NOTES are in the default run; the new one is named as skipped."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    rs = importlib.import_module("ranking_suite")
    for name in ("ranking_cases_holdout2.yaml", "ranking_cases_holdout99.yaml", "ranking_cases.yaml"):
        (tmp_path / name).write_text("cases: []\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="ranking_suite"):
        specs = rs.default_holdout_specs(tmp_path)
    assert [split for _, split in specs] == ["holdout2"]
    assert "'holdout99' has no provenance in SPLIT_NOTES, so it is not scored" in caplog.text
    sys.modules.pop("ranking_suite", None)


def test_the_reference_workload_is_timed_and_leaves_the_rng_alone():
    pytest.importorskip("torch")
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    ref = importlib.import_module("_reference")
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    out = ref.reference_seconds(repeats=2, steps=1)
    assert torch.equal(torch.rand(3), want)  # the caller's RNG state is restored
    assert len(out["runs"]) == 2 and out["seconds"] == pytest.approx(sum(out["runs"]) / 2)  # the median of two
    assert out["seconds"] > 0 and out["workload"] == ref.WORKLOAD
