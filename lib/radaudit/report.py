"""The run's HTML report, written for a reader, and ``outputs/index.html``, the list of every run (issue 22).

A run's ``<experiment>.html`` reads top to bottom as a short paper:

1. the title, the run (experiment, preset, date, status, commit) and links to the executed notebook (the
   code), ``manifest.json``, ``findings.json`` and ``run.log``;
2. one paragraph of what the paper claims, with its arXiv id (:attr:`radaudit.experiments.Experiment.claim`);
3. the findings table of ``findings.json`` (value, 95% CI, the paper's value, verdict, note);
4. the notebook's narrative — its markdown and every figure and table it shows, **code hidden** (cells tagged
   ``parameters``/``injected-parameters`` and every code input left out), printed lines, log lines and
   warnings (stdout and stderr streams) left out (they are in ``run.log``), equations pre-rendered to MathML
   (``latex2mathml``; browsers draw MathML natively, so nothing is fetched), tables complete (they wrap, never
   scroll);
5. methods: how to repeat the run, its parameters, the models it resolved and their revisions, the time
   each section took, the machine and package versions.

The page is one self-contained file: styles inline, figures embedded, no script, style or font from
another host (a browser test opens it with every request off the machine blocked). The notebook is
converted with nbconvert's ``basic`` template, which writes the cells only (no MathJax, no require.js).

:func:`render_index` writes ``index.html`` at the root of an outputs folder: one row per run (experiment,
preset, date, status, commit, its top findings, a thumbnail of its first figure), newest first, linking to
each report. The runner rewrites both after every run.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import shlex
from pathlib import Path
from typing import Any

from radaudit import manifest
from radaudit.experiments import EXPERIMENTS, Experiment
from radaudit.files import atomic_write
from radaudit.html_page import VERDICT_COLOURS
from radaudit.html_page import escape as _e
from radaudit.html_page import fmt_number as _fmt
from radaudit.html_page import page as _page
from radaudit.paths import machine_paths, scrub_paths

__all__ = ["headline_first", "latex_to_mathml", "render_index", "render_run_report", "scrub_paths", "split_wide_tables"]

log = logging.getLogger(__name__)

_HIDDEN_TAGS = {"parameters", "injected-parameters"}
_WIDGET = "application/vnd.jupyter.widget-view+json"
_LOCAL_PAPER = re.compile(r"\s*\(`?\.\./shared/papers/[^)`]*`?\)")
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?![\w$])")

# ----------------------------------------------------------------------------- small helpers

def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _ci(ci: Any) -> str:
    return f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "—"


def _experiment(name: str) -> Experiment | None:
    try:
        return EXPERIMENTS.lookup(name)
    except Exception:  # an outputs folder of an experiment this version does not know
        return None


def latex_to_mathml(text: str) -> str:
    """Replace ``$$...$$`` (block) and ``$...$`` (inline) LaTeX in markdown by MathML, which browsers render
    without any script. An expression ``latex2mathml`` cannot convert is left as code (``<code>``), never lost.
    A ``$`` that does not delimit math (``$5 and $6`` — a space after the opening ``$`` or before the closing
    one) is left alone, as in Jupyter."""
    from latex2mathml.converter import convert

    def repl(display: str):
        def inner(m: re.Match) -> str:
            try:
                return convert(m.group(1).strip(), display=display)
            except Exception:  # noqa: BLE001 - an unsupported macro: show the source
                return f"<code>{_e(m.group(0))}</code>"
        return inner

    return _INLINE_MATH.sub(repl("inline"), _DISPLAY_MATH.sub(repl("block"), text))


def _paper_link(exp: Experiment | None) -> str:
    if exp is None or not exp.reference:
        return ""
    ref = exp.reference
    return f'<a href="https://arxiv.org/abs/{_e(ref)}">arXiv:{_e(ref)}</a>' if re.match(r"^\d{4}\.\d{4,5}$", ref) \
        else _e(ref)


# ----------------------------------------------------------------------------- the notebook body

def _reader_notebook(nb: Any, exp: Experiment | None) -> tuple[Any, str | None]:
    """A copy of ``nb`` for reading, and its title: the first markdown cell's ``# heading`` becomes the page
    title (its ``**Paper:**`` paragraph is replaced by the header's reference); parameter cells, the
    "Parameters" section, code cells without output and stderr streams are dropped; math becomes MathML."""
    nb = copy.deepcopy(nb)
    title, cells = None, []
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & _HIDDEN_TAGS:
            continue
        if cell.cell_type == "markdown":
            src = cell.source
            if src.lstrip().lower().startswith("## parameters"):
                continue
            if title is None and src.lstrip().startswith("# "):
                first, _, rest = src.lstrip().partition("\n")
                title = first[2:].strip()
                src = re.sub(r"(?ms)^\*\*Paper:\*\*.*?(?:\n\s*\n|\Z)", "", rest)  # the whole paragraph
            src = _LOCAL_PAPER.sub("", src)
            cell.source = latex_to_mathml(src)
            if cell.source.strip():
                cells.append(cell)
        elif cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", [])
                            if o.get("output_type") != "stream"  # printed lines and warnings: in run.log
                            and _WIDGET not in o.get("data", {})]  # a progress-bar widget is live state, not a result
            for o in cell.outputs:  # markdown a cell displays (display(Markdown(...))) gets math too
                data = o.get("data", {})
                if "text/markdown" in data:
                    data["text/markdown"] = latex_to_mathml(data["text/markdown"])
                if "text/html" in data:  # a wide table is split into parts that fit the page, never clipped
                    html = data["text/html"]
                    data["text/html"] = split_wide_tables("".join(html) if isinstance(html, list) else html)
            if cell.outputs:
                cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)  # saved widget state: the page would load a widget manager for it
    return nb, title


def notebook_html(nb_path: Path, exp: Experiment | None = None) -> tuple[str, str | None]:
    """``(html fragment, title)`` of the executed notebook at ``nb_path`` as a reader sees it (no code)."""
    import nbformat
    from nbconvert import HTMLExporter

    nb, title = _reader_notebook(nbformat.read(nb_path, as_version=4), exp)
    exporter = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, exclude_anchor_links=True)
    tl = logging.getLogger("traitlets")
    level, tl.level = tl.level, logging.ERROR  # nbconvert's "alternative text is missing" notice
    try:
        body, _ = exporter.from_notebook_node(nb)
    finally:
        tl.setLevel(level)
    return body, title


# ----------------------------------------------------------------------------- sections

def findings_table(findings: list[dict[str, Any]]) -> str:
    """The findings of ``findings.json`` as an HTML table (format: ``../shared/FINDINGS.md``)."""
    if not findings:
        return "<p class='meta' id='findings'>This run wrote no findings.</p>"
    rows = []
    for f in findings:
        verdict = f.get("verdict", "")
        colour = VERDICT_COLOURS.get(verdict, "#5f6368")
        shown_as = verdict
        st = f.get("stability") or {}
        if verdict == "partly" and st.get("verdicts"):
            k, n = sum(v == "shown" for v in st["verdicts"]), len(st["verdicts"])
            shown_as = f"partly ({k}/{n} seeds)" if k < n else verdict
        bar = f.get("bar")
        bar_text = "" if not bar else f"{_BAR_SIGNS.get(bar.get('op'), bar.get('op'))} {_fmt(bar.get('value'))}"
        rests = ", ".join(f.get("controls") or [])
        note = _e(f.get("note")) + (f"<br><span class='meta'>rests on: {_e(rests)}</span>" if rests else "")
        rows.append(
            f"<tr><td>{_e(f.get('label'))}<br><span class='meta'>{_e(f.get('id'))}</span></td>"
            f"<td class='num'>{_e(_fmt(f.get('value')))}</td><td class='num'>{_e(_ci(f.get('ci')))}</td>"
            f"<td class='num'>{_e(_fmt(f.get('paper')))}</td><td class='num'>{_e(bar_text)}</td>"
            f"<td><span class='verdict' style='background:{colour}'>{_e(shown_as)}</span></td>"
            f"<td>{note}</td></tr>")
    return ("<div id='findings'><table><thead><tr><th>Finding</th><th>Value</th><th>95% CI</th>"
            "<th>Paper</th><th>Bar</th><th>Verdict</th><th>Note</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>")


_BAR_SIGNS = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}


def _kv_table(items: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td><code>{_e(v if isinstance(v, str) else json.dumps(v, default=str))}"
                   f"</code></td></tr>" for k, v in items)
    return f"<div class='scroll'><table><tbody>{rows}</tbody></table></div>"


def repeat_command(m: dict[str, Any]) -> str:
    """The command that repeats the run (preset, ``-p`` overrides, ``-f`` files, rehearsal)."""
    parts = ["radaudit", "run", str(m.get("experiment", "?"))]
    if m.get("preset"):
        parts += ["--preset", str(m["preset"])]
    for f in (m.get("params_files") or {}):
        parts += ["-f", str(f)]
    for item in m.get("overrides") or []:  # "key=value" as given on the command line
        parts += ["-p", shlex.quote(str(item))]
    if m.get("rehearsal") is not None:
        parts.append("--rehearse")
    return " ".join(parts)


def methods_section(m: dict[str, Any]) -> str:
    """How the run was made: the command, commit, machine, parameters, models and their revisions, timings."""
    git = m.get("git") or {}
    rec = m.get("recorded") or {}
    out = ["<h2 id='methods'>Methods</h2>",
           f"<p>Repeat this run with <code>{_e(repeat_command(m))}</code> at commit "
           f"<code>{_e((git.get('commit') or '?')[:12])}</code>"
           + (" (with uncommitted changes)" if git.get("dirty") else "") + ". Same parameters and seed give the "
           "same tables; the manifest's <code>recorded.determinism</code> says what the kernels promise.</p>"]
    if m.get("rehearsal"):
        out.append("<p><strong>Rehearsal:</strong> every model was replaced by a tiny random-weight twin of the same "
                   "class and the credentialed data by an invented fixture; the numbers mean nothing, the code "
                   "path is the paper run's.</p>")
        out.append(_kv_table(sorted(m["rehearsal"].items())))
    if rec.get("models"):
        rows = [(spec, f"{v.get('source')} · revision {v.get('revision')}") for spec, v in rec["models"].items()]
        out.append("<h3>Models</h3>" + _kv_table(rows))
    steps = m.get("steps") or {}
    if steps:
        out.append("<h3>Time per section</h3>" + _kv_table([(k, f"{v:.1f} s") for k, v in steps.items()]))
    params = m.get("params") or {}
    out.append("<details><summary>All parameters</summary>" + _kv_table(sorted(params.items())) + "</details>")
    device = m.get("device") or {}
    versions = m.get("versions") or {}
    out.append("<details><summary>Machine and packages</summary>"
               + _kv_table(list(device.items()) + sorted(versions.items())) + "</details>")
    return "\n".join(out)


# ----------------------------------------------------------------------------- public

def render_run_report(run_dir: str | Path, nb_path: str | Path | None = None) -> Path:
    """Write ``<run_dir>/<experiment>.html`` (see the module docstring) from the run's executed notebook,
    ``manifest.json`` and ``findings.json``; returns its path."""
    run_dir = Path(run_dir)
    m = _read_json(run_dir / "manifest.json")
    name = m.get("experiment") or run_dir.parent.name
    exp = _experiment(name)
    nb_path = Path(nb_path) if nb_path else run_dir / f"{name}.ipynb"
    body, title = notebook_html(nb_path, exp) if nb_path.exists() else ("", None)
    title = title or (exp.description if exp else name)
    findings = _read_json(run_dir / "findings.json").get("findings", [])
    git = m.get("git") or {}
    status = m.get("status", "?")
    links = [(f"{name}.ipynb", "executed notebook (code)"), ("manifest.json", "manifest"),
             ("findings.json", "findings.json"), ("run.log", "run.log"), ("tables/", "tables"), ("figures/", "figures")]
    head = [f"<h1>{_e(title)}</h1>",
            f"<p class='meta'>{_e(name)} · preset <b>{_e(m.get('preset') or 'interactive')}</b> · run "
            f"{_e(m.get('run_name') or run_dir.name)} · {_e((m.get('started') or '')[:16].replace('T', ' '))} UTC · "
            f"status <b>{_e(status)}</b> · commit <code>{_e((git.get('commit') or '?')[:8])}</code>"
            + (" (dirty)" if git.get("dirty") else "") + "</p>",
            "<p class='meta'>" + "".join(f"<a href='{_e(h)}'>{_e(t)}</a>" for h, t in links) + "</p>"]
    if m.get("error"):
        head.append(f"<p class='error'><b>This run failed:</b> {_e((m['error'] or {}).get('message'))}. "
                    "What it wrote before the failure is below.</p>")
    if exp is not None and exp.claim:
        head.append(f"<div class='claim'><b>What the paper claims.</b> {_e(exp.claim)} "
                    f"({_e(exp.citation or '')}{', ' if exp.citation else ''}{_paper_link(exp)})</div>")
    page = "\n".join(head + ["<h2>Findings</h2>", findings_table(findings),
                             "<h2>The analysis</h2>", f"<div class='nb'>{body}</div>", methods_section(m)])
    out = run_dir / f"{name}.html"
    html = scrub_paths(_page(f"{title} — {name} ({m.get('preset') or 'interactive'})", page),
                       {p: _e(w) for p, w in _machine_paths(m, run_dir).items()})
    atomic_write(out, html)
    return out


#: A notebook table with more columns than this is shown in parts (its label columns repeated in each part).
MAX_TABLE_COLUMNS = 9


def split_wide_tables(html: str, max_columns: int = MAX_TABLE_COLUMNS) -> str:
    """``html`` with every ``<table>`` of more than ``max_columns`` columns split into parts of at most that many,
    each repeating the table's label columns (the leading ``<th>`` cells of its body rows, pandas' index, and the
    first data column), with a line saying which columns each part shows. Tables with merged cells (``colspan``/
    ``rowspan``) are left whole. A wide table on a page either scrolls (and hides columns, on screen and in print)
    or runs off the page; parts do neither."""
    if "<table" not in html:
        return html
    import copy as _copy

    import lxml.html

    root = lxml.html.fragment_fromstring(html, create_parent="div")
    changed = False
    for table in list(root.iter("table")):
        rows = table.findall(".//tr")
        if not rows or any(c.get("colspan", "1") != "1" or c.get("rowspan", "1") != "1" for r in rows for c in r):
            continue
        n = max(len(r) for r in rows)
        body = table.find("tbody")
        first = (body if body is not None else table).find(".//tr")
        keep = sum(1 for c in first if c.tag == "th") + 1 if first is not None else 1
        step = max_columns - keep
        if n <= max_columns or step < 1:
            continue
        parent, at = table.getparent(), table.getparent().index(table)
        parts = []
        for start in range(keep, n, step):
            stop = min(n, start + step)
            part = _copy.deepcopy(table)
            for r in part.findall(".//tr"):
                for i, c in reversed(list(enumerate(list(r)))):
                    if not (i < keep or start <= i < stop):
                        r.remove(c)
            note = lxml.html.fragment_fromstring(f"<p class='meta'>columns {start + 1}–{stop} of {n}</p>")
            parts += [note, part]
        parent.remove(table)
        for j, el in enumerate(parts):
            parent.insert(at + j, el)
        changed = True
    if not changed:
        return html
    return "".join(lxml.html.tostring(el, encoding="unicode") for el in root)


def _machine_paths(m: dict[str, Any], run_dir: Path) -> dict[str, str]:
    """Folders of this machine a report may mention, and the words that stand for them
    (:func:`radaudit.paths.machine_paths` of the run's params, and the run folder itself)."""
    return {**machine_paths(m.get("params") or {}), str(run_dir.resolve()): "<this run>", str(run_dir): "<this run>"}


def _status_cell(m: dict[str, Any]) -> str:
    """The run's status as :func:`radaudit.manifest.observed_status` sees it: a ``running`` run whose process is
    gone is ``interrupted``, with the last cell it completed."""
    status, why = manifest.observed_status(m)
    cell = manifest.last_cell_text(m)
    notes = []
    if status in {"interrupted", "running"} and cell:
        notes.append(f"after {cell}" if status == "interrupted" else f"{cell} done")
    if m.get("signal") and status == "interrupted":
        notes.append(f"by {m['signal']}")
    elif why:
        notes.append(why)
    return _e(status) + "".join(f"<br><small>{_e(n)}</small>" for n in notes)


def headline_first(findings: list[dict[str, Any]], exp: Experiment | None) -> list[dict[str, Any]]:
    """``findings`` with those that answer the paper's question (:attr:`Experiment.headline`, in that order) first,
    the rest in the run's order."""
    order = {fid: i for i, fid in enumerate(exp.headline if exp is not None else ())}
    return sorted(findings, key=lambda f: order.get(f.get("id"), len(order)))


def render_index(root: str | Path, top: int = 3) -> Path:
    """Write ``<root>/index.html``: every run under ``root`` (``<experiment>/<run>/manifest.json``, sweeps
    included), newest first, with its status (a ``running`` run whose process is gone reads ``interrupted``:
    :func:`radaudit.manifest.observed_status`), commit, its first ``top`` findings and a thumbnail."""
    root = Path(root)
    rows = []
    for run_dir, m in manifest.find_runs(root):
        rel = run_dir.relative_to(root).as_posix()
        name = m.get("experiment") or run_dir.parent.name
        report = f"{rel}/{name}.html"
        findings = headline_first(_read_json(run_dir / "findings.json").get("findings", []), _experiment(name))[:top]
        fcell = "<br>".join(f"{_e(f.get('label'))}: <b>{_e(_fmt(f.get('value')))}</b> "
                            + (f"<small>[{_e(_fmt(f['ci'][0]))}, {_e(_fmt(f['ci'][1]))}]</small> " if f.get("ci") else "")
                            +
                            f"<span class='verdict' style='background:{VERDICT_COLOURS.get(f.get('verdict'), '#5f6368')}'>"
                            f"{_e(f.get('verdict'))}</span>" for f in findings)
        figs = sorted((run_dir / "figures").glob("*.png")) if (run_dir / "figures").is_dir() else []
        thumb = (f"<img class='thumb' loading='lazy' alt='first figure of {_e(rel)}' "
                 f"src='{_e(figs[0].relative_to(root).as_posix())}'>") if figs else ""
        link = f"<a href='{_e(report)}'>{_e(run_dir.name)}</a>" if (run_dir / f"{name}.html").is_file() else _e(run_dir.name)
        rows.append(f"<tr><td>{_e(name)}</td><td>{_e(m.get('preset') or 'interactive')}</td><td>{link}</td>"
                    f"<td>{_e((m.get('started') or '')[:16].replace('T', ' '))}</td><td>{_status_cell(m)}</td>"
                    f"<td><code>{_e(((m.get('git') or {}).get('commit') or '')[:8])}</code></td>"
                    f"<td>{fcell}</td><td>{thumb}</td></tr>")
    table = ("<table><thead><tr><th>Experiment</th><th>Preset</th><th>Run</th><th>Started (UTC)</th><th>Status</th>"
             "<th>Commit</th><th>Top findings</th><th>Figure</th></tr></thead><tbody>" + "".join(rows)
             + "</tbody></table>") if rows else "<p class='meta'>No runs yet: <code>make demo</code>.</p>"
    body = (f"<h1>radaudit runs</h1><p class='meta'>{len(rows)} runs in this folder, newest first; each with the "
            f"findings that answer its paper's question first (value [95% CI], verdict)</p>{table}")
    out = root / "index.html"
    # written whole, then moved: runs side by side (run all --jobs) each rewrite it, and a reader never sees half a file
    return atomic_write(out, _page("radaudit runs", body))
