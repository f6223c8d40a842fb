"""The audit trace: every verification question with its answer, as a table, JSONL, or readable text.

One row per question (:class:`~radaudit.atomic.schema.TraceRow`): ``pair`` (position in the
batch), ``direction`` (``gt->inf`` answered from the prediction: recall; ``inf->gt`` answered
from the reference: precision), ``level`` (disease/attribute), ``finding``, ``attribute``,
``question``, ``expected`` (the asking report's answer), ``found`` (the answering report's
answer), ``match``, ``evidence`` (the answering report's sentence), ``source_evidence`` (the
asking report's sentence), ``target`` (aligned finding, attribute level) and ``unparseable``.
Every score of :func:`radaudit.atomic.pipeline.score_pairs` is a count over these rows.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from radaudit.atomic.schema import TraceRow

__all__ = ["TRACE_COLUMNS", "trace_frame", "write_jsonl", "read_jsonl", "format_trace"]

TRACE_COLUMNS: tuple[str, ...] = tuple(TraceRow.__dataclass_fields__)


def trace_frame(rows: Iterable[TraceRow]) -> pd.DataFrame:
    """The trace rows as a DataFrame with the columns :data:`TRACE_COLUMNS` (also when empty)."""
    get = operator.attrgetter(*TRACE_COLUMNS)  # one tuple per row, in column order (no per-row dict)
    return pd.DataFrame([get(r) for r in rows], columns=list(TRACE_COLUMNS))


def write_jsonl(trace: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write the trace as JSON Lines (one question per line, UTF-8, keys in column order); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = [c for c in trace.columns]
    with path.open("w", encoding="utf-8") as fh:
        for rec in trace.to_dict(orient="records"):
            clean = {c: (None if isinstance(rec[c], float) and rec[c] != rec[c] else rec[c]) for c in cols}
            clean = {c: (v.item() if hasattr(v, "item") else v) for c, v in clean.items()}
            fh.write(json.dumps(clean, ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: str | os.PathLike) -> pd.DataFrame:
    """Read a trace written by :func:`write_jsonl` back into a DataFrame."""
    with Path(path).open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return pd.DataFrame(rows, columns=list(TRACE_COLUMNS) if not rows else None)


def _cut(text: object, width: int) -> str:
    s = "" if text is None or (isinstance(text, float) and text != text) else str(text)
    s = " ".join(s.split())
    return s if len(s) <= width else s[: width - 1] + "…"


def format_trace(trace: pd.DataFrame, pair: int | None = None, *, width: int = 40, mismatches_only: bool = False) -> str:
    """A readable fixed-width table of the trace (one pair with ``pair=``; only failed questions
    with ``mismatches_only=True``). Columns: direction, level, question, expected, found, ✓/✗,
    evidence; long cells are cut to ``width`` characters."""
    t = trace
    if pair is not None:
        t = t[t["pair"] == pair]
    if mismatches_only:
        t = t[~t["match"].astype(bool)]
    header = ["pair", "direction", "level", "question", "expected", "found", "ok", "evidence"]
    widths = {"pair": 4, "direction": 7, "level": 9, "question": width, "expected": max(12, width // 2),
              "found": max(12, width // 2), "ok": 2, "evidence": width}
    lines = ["  ".join(h.ljust(widths[h]) for h in header), "  ".join("-" * widths[h] for h in header)]
    for r in t.itertuples(index=False):
        ok = "✓" if r.match else ("?" if r.unparseable else "✗")
        cells = [str(r.pair), r.direction, r.level, r.question, r.expected, r.found, ok, r.evidence]
        lines.append("  ".join(_cut(c, widths[h]).ljust(widths[h]) for c, h in zip(cells, header)))
    return "\n".join(lines)
