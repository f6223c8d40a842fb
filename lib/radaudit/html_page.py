"""One self-contained HTML page: the lab's inline style sheet and small helpers shared by the run report
(:mod:`radaudit.report`) and the scoring page (:mod:`radaudit.scoring`). Nothing is loaded from another host."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["CSS", "VERDICT_COLOURS", "escape", "fmt_number", "page"]

VERDICT_COLOURS = {"shown": "#1b7f3b", "partly": "#a66300", "not shown": "#b3261e", "n/a": "#5f6368"}

CSS = """
:root { --ink:#1f2328; --muted:#5f6368; --rule:#d0d7de; --bg:#ffffff; --panel:#f6f8fa; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 16px/1.55 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 1.5rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.25; margin: .2rem 0 .4rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; padding-bottom: .25rem; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.1rem; margin: 1.6rem 0 .4rem; }
a { color: #0b57d0; }
.meta { color: var(--muted); font-size: .92rem; }
.meta a { margin-right: .8rem; }
.claim { background: var(--panel); border-left: 4px solid #0b57d0; padding: .7rem 1rem; margin: 1rem 0; }
table { border-collapse: collapse; font-size: .88rem; margin: .4rem 0; max-width: 100%; }
th, td { border-bottom: 1px solid var(--rule); padding: .3rem .55rem; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }
td .meta { overflow-wrap: anywhere; }  /* finding ids: long snake_case words may break */
th { background: var(--panel); position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.verdict { display: inline-block; color: #fff; border-radius: 1em; padding: 0 .6em; font-size: .82rem;
  white-space: nowrap; }
.scroll { border: 1px solid var(--rule); margin: .5rem 0; }  /* a box, never a scroll box: nothing is clipped */
.scroll table { margin: 0; }
#findings { overflow-x: auto; margin: .5rem 0; }
#findings th { position: static; }
.nb img { max-width: 100%; height: auto; }
.nb .output_html, .nb .output_text, .nb .jp-RenderedHTML, .nb .jp-RenderedText { margin: .5rem 0; }
.nb table { font-size: .8rem; width: auto; }
.nb th, .nb td { padding: .25rem .4rem; overflow-wrap: anywhere; }
.nb table.reader td, .nb table.reader th { overflow-wrap: break-word; }  /* words whole; ids break at <wbr> */
.nb td.num { white-space: normal; overflow-wrap: normal; }  /* a narrow column breaks before the interval only */
.ci { white-space: nowrap; }
@media print { th { position: static; } }
.nb pre { background: var(--panel); padding: .6rem .8rem; overflow: auto; font-size: .85rem; white-space: pre-wrap; }
.nb .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] { display: none; }
.error { background: #fdecea; border: 1px solid #b3261e; padding: .6rem .8rem; }
details summary { cursor: pointer; color: var(--muted); }
math { font-size: 1.05em; }
img.thumb { width: 140px; height: auto; border: 1px solid var(--rule); background: #fff; }
"""


def escape(x: Any) -> str:
    """``x`` as HTML text (``None`` as empty)."""
    return html.escape("" if x is None else str(x), quote=True)


def fmt_number(x: Any) -> str:
    """A number as a reader wants it: integers as they are (thousands separated), other numbers with 3 significant
    digits but never more than 4 decimals (``0.812``, ``0.0412``, ``0.0093``), from 1,000 up as a whole number
    (``12,346``); scientific notation only where a plain decimal would read as zero (``5.3e-40``). Text as it is."""
    if isinstance(x, bool) or x is None:
        return "—" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x != x:  # NaN
            return "—"
        if abs(x) >= 1e3:
            return f"{x:,.0f}" if abs(x) < 1e15 else f"{x:.3g}"
        s = f"{x:.3g}"
        if "e" in s or ("." in s and len(s.split(".")[1]) > 4):
            s = f"{x:.4f}"
            if float(s) == 0.0:
                return f"{x:.1e}"
        return s
    return str(x)


def page(title: str, body: str) -> str:
    """A whole HTML document: ``title``, the inline style sheet and ``body`` (already HTML) in ``<main>``."""
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>{body}</main></body></html>\n")


