"""The README is a landing page and docs/ a site that builds (issue 42, items 1 and 2).

- ``mkdocs build --strict`` passes: no broken link, no page left out of the nav, no docstring mkdocstrings cannot
  read (``docs/_hooks.py`` lowers only prose brackets in docstrings that look like Markdown links);
- the README stays a landing page (at most :data:`README_MAX_LINES` lines, the two commands, "score your own
  reports" and "audit your own model" in its first screen) and none of its links points at a missing file;
- the glossary defines every abbreviation of the reports' headings and table headers, collected from the code
  (the notebooks' Markdown headings and tables, every display string of the experiments' ``tables.py`` and
  ``plots.py``), not from a typed list;
- every number typed as a fact (``<!-- fact:NAME -->value<!-- /fact -->``) in the README and the pages equals what
  the code, the presets or ``benchmarks/results/`` say (:func:`expected_facts`);
- the findings blocks live on the experiment pages and ``radaudit findings <experiment> --docs`` (hidden from the
  user help) writes them there; the Python examples of the pages run and print what they say.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250
#: what a reader sees without scrolling: the README's first lines
FIRST_SCREEN = 70
PAPER_EXPERIMENTS = ("decoding_erasure", "metric_metaeval", "atomic_facts", "modality_shift", "synthetic_cxr")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


# ---------------------------------------------------------------------------------------------------------------
# the site builds


def test_mkdocs_build_strict(tmp_path):
    """The site builds with --strict: a broken link, an orphan page or an unreadable docstring fails it."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[docs]' (the dev extra has it)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[docs]'")
    pytest.importorskip("mkdocstrings_handlers.python",
                        reason="mkdocstrings[python] is not installed: pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for page in ("index.html", "glossary/index.html", "verdicts/index.html", "api/stats/index.html",
                 *(f"experiments/{e}/index.html" for e in PAPER_EXPERIMENTS)):
        assert (tmp_path / "site" / page).is_file(), page
    api = (tmp_path / "site" / "api" / "stats" / "index.html").read_text(encoding="utf-8")
    assert 'id="radaudit.stats.bootstrap_ci"' in api, "the API page lists no function: mkdocstrings found nothing"


# ---------------------------------------------------------------------------------------------------------------
# the README is a landing page


def test_readme_is_a_landing_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move it to docs/"
    first = "\n".join(lines[:FIRST_SCREEN])
    for must in ("make demo", "make test", "radaudit score", "## Score your own reports", "## Audit your own model"):
        assert must in first, f"{must!r} is not in the README's first {FIRST_SCREEN} lines"
    for e in PAPER_EXPERIMENTS + ("data_overview",):
        assert f"docs/experiments/{e}.md" in "\n".join(lines) and f"docs/img/{e}.png" in "\n".join(lines), e
    assert "<!-- findings:" not in "\n".join(lines), "findings blocks live on docs/experiments/<experiment>.md"


def _local_targets(text: str) -> list[str]:
    links = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"""<img[^>]*\bsrc=["']([^"']+)["']""", text)
    return [t for t in links if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_no_readme_link_points_at_a_missing_file():
    targets = _local_targets(README.read_text(encoding="utf-8"))
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_link_check_finds_a_missing_file():
    """The check above can fail: a planted link to a page that does not exist is found."""
    text = "see [the audits](docs/experiments/index.md) and [gone](docs/nope.md), <img src=\"docs/img/x.png\">"
    assert [t for t in _local_targets(text) if not (ROOT / t).exists()] == ["docs/nope.md", "docs/img/x.png"]


# ---------------------------------------------------------------------------------------------------------------
# the glossary defines every abbreviation of the reports

_PART = r"(?:Δ)?[A-Za-z][A-Za-z0-9]*"
_TOKEN = re.compile(rf"(?<!\w)({_PART}(?:[–-]{_PART})*)")
_GREEK = re.compile(r"[α-ωΑ-Ω]")
_HEX = re.compile(r"#[0-9A-Fa-f]{6}\b")


def _upper(s: str) -> int:
    return sum(c.isupper() for c in s)


def _abbreviation_part(word: str) -> bool:
    """``AUROC``, ``BCa``, ``ΔDIR``, ``F1``: at least two capitals and no more lower-case letters than capitals
    (so ``AtomiMed`` and ``RadPref``, names, are not abbreviations), or one capital and digits."""
    capitals = _upper(word)
    return (capitals >= 2 and capitals >= sum(c.islower() for c in word)) or bool(re.fullmatch(r"[A-Z]\d+", word))


def abbreviations_in(text: str) -> set[str]:
    """The abbreviations and Greek symbols of ``text``. A hyphenated token stays whole when every part is
    capitalised (``GT–ME``, ``Re-ID``, ``Self-BLEU``) or it is ``re-ID``; otherwise its parts count alone
    (``BH-adjusted`` -> ``BH``); ``DS/RS`` gives ``DS`` and ``RS``. Colours (``#E69F00``) are not words."""
    text = _HEX.sub(" ", text)
    found: set[str] = set(_GREEK.findall(text))
    for tok in _TOKEN.findall(text):
        words = re.split(r"[–-]", tok)
        if len(words) > 1 and any(map(_abbreviation_part, words)) and (all(map(_upper, words)) or words[0] == "re"):
            found.add(tok)
        else:
            found.update(w for w in words if _abbreviation_part(w))
    return found


def _display_strings(source: str) -> list[str]:
    """Every string constant of a module that a reader can see: not docstrings, not ``__all__``, not the messages
    of ``raise`` and of logging calls."""
    tree = ast.parse(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            skip.add(id(body[0].value))
        quiet = (isinstance(node, ast.Raise)
                 or (isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets))
                 or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                     and node.func.attr in {"debug", "info", "warning", "error", "exception", "warn"}))
        if quiet:
            skip.update(id(n) for n in ast.walk(node))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def report_abbreviations() -> dict[str, set[str]]:
    """abbreviation -> where it was found: the notebooks' Markdown headings and table rows, and the display strings
    of ``lib/radaudit/audits/*/tables.py`` and ``plots.py`` (column headers, titles, axis labels, legends)."""
    import matplotlib

    colormaps = set(matplotlib.colormaps)
    found: dict[str, set[str]] = {}

    def add(text: str, where: str) -> None:
        for a in abbreviations_in(text):
            if a not in colormaps and a.removesuffix("_r") not in colormaps:
                found.setdefault(a, set()).add(where)

    for path in sorted((ROOT / "lib" / "radaudit" / "audits").glob("*/*.py")):
        if path.name in ("tables.py", "plots.py"):
            for s in _display_strings(path.read_text(encoding="utf-8")):
                add(s, f"{path.parent.name}/{path.name}")
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                for line in "".join(cell["source"]).splitlines():
                    if line.lstrip().startswith(("#", "|")):
                        add(line, nb.name)
    return found


def _norm(term: str) -> str:
    return term.replace("–", "-").casefold()


def glossary_terms() -> set[str]:
    """The bold terms of the first column of the glossary's tables."""
    terms = set()
    for line in (DOCS / "glossary.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| **"):
            terms.update(_norm(t.replace("\\*", "*")) for t in re.findall(r"\*\*(.+?)\*\*", line.split(" | ")[0]))
    return terms


def test_glossary_defines_every_abbreviation_the_reports_use():
    found = report_abbreviations()
    assert {"AUROC", "WAE", "ΔDIR", "NFR", "FID", "τ"} <= set(found), sorted(found)  # the collector finds them
    terms = glossary_terms()
    missing = {a: sorted(w) for a, w in found.items() if _norm(a) not in terms}
    assert not missing, f"define these in docs/glossary.md (term: where the reports use it): {missing}"


def test_abbreviation_collector_reads_headers_not_names():
    """What the collector counts: abbreviations in a header, not names, colours, __all__ or error messages."""
    assert abbreviations_in("ΔDIR, GT–ME pairs, DS/RS, BH-adjusted p, re-ID, Kendall τ (BCa CI) #E69F00 AtomiMed") == {
        "ΔDIR", "Δ", "GT–ME", "DS", "RS", "BH", "re-ID", "τ", "BCa", "CI"}  # Δ: the symbol alone is defined too
    src = ('__all__ = ["WAE_TABLE"]\n\ndef f():\n    """Docstring: XYZ."""\n    raise ValueError("JSONX")\n'
           '    return "NFR (95% CI)"\n')
    assert _display_strings(src) == ["NFR (95% CI)"]


# ---------------------------------------------------------------------------------------------------------------
# facts: numbers in the prose that the code, a preset or a results file determines

_FACT = re.compile(r"<!-- fact:(?P<name>[a-z0-9_:]+) -->(?P<value>.*?)<!-- /fact -->", re.DOTALL)


def _results(name: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text(encoding="utf-8"))


def _preset_values(preset: str, key: str) -> set:
    """``key`` of ``preset`` (after ``extends``) in every experiment that has the preset; the schema's default where
    the preset sets none."""
    from radaudit.config import list_presets, load_preset
    from radaudit.experiments import EXPERIMENTS
    from radaudit.paths import params_dir

    values = set()
    for name in EXPERIMENTS:
        if preset in list_presets(params_dir(), name):
            model = EXPERIMENTS.lookup(name).params_model()
            values.add(load_preset(params_dir(), name, preset).get(key, model.model_fields[key].default))
    return values


def _one(values: set, what: str):
    assert len(values) == 1, f"{what} differs between experiments ({sorted(values)}): the docs cannot state one value"
    return next(iter(values))


def expected_facts() -> dict:
    """fact name -> a function giving the value the docs must show (a string)."""
    from radaudit.audits.decoding_erasure import models as de_models
    from radaudit.audits.modality_shift import models as ms_models
    from radaudit.audits.synthetic_cxr.params import Params as SyntheticParams
    from radaudit.audits.synthetic_cxr.table4 import MIN_TEST_IMAGES
    from radaudit.config import BaseParams, load_preset
    from radaudit.manifest import HEARTBEAT_EVERY_S, HEARTBEAT_STALE_S
    from radaudit.paths import params_dir

    def preset(experiment: str, key: str):
        return lambda: str(load_preset(params_dir(), experiment, "demo")[key])

    return {
        "figure_dpi:demo": lambda: str(_one(_preset_values("demo", "figure_dpi"), "figure_dpi of demo")),
        "figure_dpi:paper": lambda: str(_one(_preset_values("paper", "figure_dpi"), "figure_dpi of paper")),
        "figure_dpi:smoke": lambda: str(_one(_preset_values("smoke", "figure_dpi"), "figure_dpi of smoke")),
        "figure_dpi:default": lambda: str(BaseParams.model_fields["figure_dpi"].default),
        "figure_pdf:demo": lambda: str(_one(_preset_values("demo", "figure_pdf") | _preset_values("smoke", "figure_pdf"),
                                            "figure_pdf of demo and smoke")).lower(),
        "figure_pdf:paper": lambda: str(_one(_preset_values("paper", "figure_pdf"), "figure_pdf of paper")).lower(),
        "de_layers": lambda: str(de_models.DEMO_CONFIG["n_layer"]),
        "de_width": lambda: str(de_models.DEMO_CONFIG["d_model"]),
        "de_steps": lambda: str(de_models.DEMO_CONFIG["steps"]),
        "de_reports": preset("decoding_erasure", "n_reports"),
        "ms_steps": lambda: str(ms_models.DEMO_VLM_CONFIG["steps"]),
        "sc_image_size": preset("synthetic_cxr", "image_size"),
        # synthetic_cxr's per-label floor of Table 4 and the significance floor's default (notebook 05's markdown)
        "sc_min_test_images": lambda: str(MIN_TEST_IMAGES),
        "sc_min_positives_test": lambda: str(SyntheticParams.model_fields["min_positives_test"].default),
        "heartbeat_s": lambda: f"{HEARTBEAT_EVERY_S:g}",
        "heartbeat_stale_min": lambda: f"{HEARTBEAT_STALE_S / 60:g}",
        # pyproject's [tool.ruff] line-length (read with a pattern: tomllib is Python >= 3.11, the lab supports 3.10)
        "line_length": lambda: re.search(r"^\[tool\.ruff\]\nline-length = (\d+)$", (ROOT / "pyproject.toml").read_text(),
                                         re.M).group(1),
        "demo_fresh_min": lambda: f"{_results('demo_fresh')['seconds'] / 60:.0f}",
        "demo_cached_min": lambda: f"{_results('demo_cached')['seconds'] / 60:.1f}",
        # the fresh demo's time in units of benchmarks/_reference.py's fixed workload, timed in the same process
        "demo_fresh_units": lambda: f"{_results('demo_fresh')['reference_units']:.0f}",
        "demo_cores": lambda: re.search(r"(\d+) cores", _results("demo_fresh")["machine"]).group(1),
        # the CPU both demo timings were measured on (the machine string's last part, e.g. "AMD EPYC")
        "demo_cpu": lambda: _results("demo_fresh")["machine"].split(", ")[-1],
        # BERTScore's time over its encoder-only floor, measured in the same process (issue 44), and that machine's CPU
        "bertscore_floor_ratio": lambda: f"{_results('bertscore')['floor_ratio_encoder']:.2f}",
        "bertscore_cpu": lambda: _results("bertscore")["machine"].split(", ")[-1],
    }


def typed_facts() -> list[tuple[str, str, str]]:
    """(file, fact name, typed value) of every fact in the README, the pages and the notebooks' markdown cells."""
    import nbformat

    out = []
    for path in [README, *pages()]:
        for m in _FACT.finditer(path.read_text(encoding="utf-8")):
            out.append((str(path.relative_to(ROOT)), m.group("name"), m.group("value").strip()))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for m in _FACT.finditer(cell.source):
                    out.append((str(path.relative_to(ROOT)), m.group("name"), m.group("value").strip()))
    return out


def test_typed_facts_equal_the_code():
    facts = typed_facts()
    expected = expected_facts()
    assert {"figure_dpi:paper", "de_layers", "demo_fresh_min"} <= {name for _, name, _ in facts}
    unknown = sorted({name for _, name, _ in facts} - set(expected))
    assert not unknown, f"facts tests/test_docs.py cannot compute (add them to expected_facts): {unknown}"
    wrong = [f"{file}: {name} typed {value!r}, the code says {expected[name]()!r}"
             for file, name, value in facts if value != expected[name]()]
    assert not wrong, "\n".join(wrong)


def test_a_drifted_fact_is_found():
    """The fact check can fail: a page that types another dpi than the preset's is caught."""
    m = _FACT.search("PNG at <!-- fact:figure_dpi:smoke -->300<!-- /fact --> dpi")
    assert m.group("value") != expected_facts()[m.group("name")]()


# ---------------------------------------------------------------------------------------------------------------
# the experiment pages: the paper, the generated findings block, the maintainer command that writes it


@pytest.mark.parametrize("experiment", PAPER_EXPERIMENTS)
def test_experiment_page_has_the_paper_and_its_findings_block(experiment):
    from radaudit.experiments import get_experiment
    from radaudit.findings import readme_findings

    exp = get_experiment(experiment)
    text = (DOCS / "experiments" / f"{experiment}.md").read_text(encoding="utf-8")
    assert exp.reference in text, f"the page does not cite arXiv {exp.reference}"
    body = readme_findings(text, experiment)
    assert body and body.startswith("Headline numbers of the `"), "no findings block written from a run"
    assert experiment in (DOCS / "img" / "figures.json").read_text(encoding="utf-8")


def test_findings_docs_flag_writes_the_page_and_is_hidden(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import radaudit.cli
    import radaudit.paths
    from radaudit.cli import main
    from radaudit.findings import readme_findings

    page = tmp_path / "docs" / "experiments" / "decoding_erasure.md"
    page.parent.mkdir(parents=True)
    page.write_text("# x\n<!-- findings:decoding_erasure -->\nold\n<!-- /findings -->\ntail\n", encoding="utf-8")
    run = tmp_path / "outputs" / "decoding_erasure" / "20261201-000000_demo"
    run.mkdir(parents=True)
    (run / "findings.json").write_text(json.dumps({"experiment": "decoding_erasure", "preset": "demo", "findings": [
        {"id": "greedy_distinct_reports", "label": "Distinct reports", "value": 0.03, "ci": [0.02, 0.05],
         "paper": 0.003, "verdict": "shown", "note": ""}]}), encoding="utf-8")
    monkeypatch.setattr(radaudit.paths, "project_root", lambda: tmp_path)
    monkeypatch.setattr(radaudit.cli, "project_root", lambda: tmp_path)  # the CLI imports it at module level
    res = CliRunner().invoke(main, ["findings", "decoding_erasure", "--run", str(run), "--docs"])
    assert res.exit_code == 0, res.output
    body = readme_findings(page.read_text(encoding="utf-8"), "decoding_erasure")
    assert "`greedy_distinct_reports`: 0.03 [0.02, 0.05]" in body and "(20261201-000000_demo)" in body
    assert page.read_text(encoding="utf-8").endswith("<!-- /findings -->\ntail\n")
    assert not (tmp_path / "README.md").exists()
    helps = CliRunner().invoke(main, ["findings", "--help"]).output + CliRunner().invoke(main, ["--help"]).output
    assert "--docs" not in helps and "--readme" not in helps, "the maintainer flag shows in the user help"


# ---------------------------------------------------------------------------------------------------------------
# the pages' Python examples run and print what they say


@pytest.mark.parametrize("page", ["score.md", "library.md", "experiments/decoding_erasure.md"])
def test_docs_python_examples(page, shared_data, monkeypatch):
    monkeypatch.setenv("RADAUDIT_DATA", str(shared_data))
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)
    assert blocks, f"docs/{page} has no Python example"
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"docs/{page}", "exec"), {})
        promised = re.findall(r"print\(.*\)\s+#\s*(\S.*)$", code, flags=re.M)
        assert out.getvalue().strip().splitlines() == [p.strip() for p in promised]


def test_readme_bertscore_identity_claim_holds_for_the_committed_run():
    """The README says BERTScore's scores equal bert-score's within 1e-6: true of the committed benchmark run."""
    assert "within 1e-6" in README.read_text(encoding="utf-8")
    assert _results("bertscore")["max_abs_diff"] <= 1e-6
