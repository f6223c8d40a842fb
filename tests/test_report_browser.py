"""Each experiment's report and the runs index, opened in headless Chromium (issue 22): no console error, no
request leaves the machine, the findings table is in the first screen, every image loads. A screenshot of each
report is kept in its run folder (``report.png``). Chromium is Debian's package: ``make browser``."""

from __future__ import annotations

import os
import shutil

import pytest

from radaudit.experiments import EXPERIMENTS
from radaudit.report import render_index

pytestmark = pytest.mark.long  # headless Chromium on every notebook's smoke report: CI's tier (make test-ci)

VIEWPORT = {"width": 1280, "height": 800}


def _chromium() -> str | None:
    return os.environ.get("RADAUDIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium here: `make browser` installs Debian's package")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser, path):
    """Open ``path`` with every request that is not a local file blocked and recorded; returns
    ``(page, console errors, blocked requests)``."""
    page = browser.new_page(viewport=VIEWPORT)
    errors, blocked = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: errors.append(str(err)))

    def route(r):
        if r.request.url.startswith(("file:", "data:", "about:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, errors, blocked


_CLIPPED = """() => {
  const main = document.querySelector('main').getBoundingClientRect();
  const out = [];
  for (const el of document.querySelectorAll('main *')) {
    const st = getComputedStyle(el);
    const scrolls = ['auto', 'scroll', 'hidden'].includes(st.overflowX) || ['auto', 'scroll', 'hidden'].includes(st.overflowY);
    if (scrolls && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
      out.push(el.tagName + '.' + el.className + ': ' + el.scrollWidth + 'x' + el.scrollHeight + ' in ' + el.clientWidth + 'x' + el.clientHeight);
  }
  for (const t of document.querySelectorAll('main table'))
    if (t.getBoundingClientRect().right > main.right + 1) out.push('table wider than the page: ' + t.getBoundingClientRect().width);
  return out;
}"""


def assert_a_document(page) -> None:
    """A report is a document: no traceback or exception name, no path of this machine, no table clipped by a
    scroll box or running off the page (issue 42, item 6)."""
    import re

    from radaudit.paths import project_root

    text = page.inner_text("main")
    assert "Traceback" not in text
    assert not re.findall(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b", text), "an exception name in the report"
    for p in {str(project_root()), os.path.expanduser("~"), os.environ.get("RADAUDIT_DATA", "")} - {"", "/"}:
        assert p not in text, f"a path of this machine in the report: {p}"
    assert page.evaluate(_CLIPPED) == []


def _images(page) -> list[tuple[bool, int]]:
    return page.evaluate("Array.from(document.images).map(i => [i.complete, i.naturalWidth])")


# The heaviest smoke runs first. The notebook tests (collected first, tests/conftest.py) have usually made them by
# now; if not, this order and the determinism test's name order make the two workers build different runs side by
# side instead of one waiting on the other's file lock (tests/conftest.py: smoke_runs).
@pytest.mark.parametrize("experiment", [e.name for e in EXPERIMENTS.values()][::-1])
def test_report_reads_offline_with_findings_first(browser, smoke_runs, experiment):
    res = smoke_runs(experiment)[0]
    assert res.html is not None and res.html.is_file()
    page, errors, blocked = open_page(browser, res.html)
    try:
        assert errors == [] and blocked == []
        box = page.locator("#findings").bounding_box()
        assert box is not None and box["y"] < VIEWPORT["height"] - 100  # its header and first rows on screen
        images = _images(page)
        assert images and all(done and width > 0 for done, width in images)
        assert page.locator(".jp-InputArea").count() == 0  # no code
        assert_a_document(page)
        page.screenshot(path=str(res.run_dir / "report.png"))
    finally:
        page.close()


def test_index_lists_the_runs_and_its_thumbnails_load(browser, smoke_runs):
    res = smoke_runs("data_overview")[0]
    index = render_index(res.run_dir.parent.parent)
    page, errors, blocked = open_page(browser, index)
    try:
        assert errors == [] and blocked == []
        assert page.locator("tbody tr").count() >= 1
        page.locator("tbody tr a").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("data_overview.html")
        images = _images(page)
        assert all(done and width > 0 for done, width in images)
    finally:
        page.close()
