"""``findings.json``: the headline results of a run, each beside the paper's value and a verdict.

Format (``../shared/FINDINGS.md``)::

    {"experiment": "decoding_erasure", "preset": "demo", "findings": [
        {"id": "greedy_distinct_reports", "label": "...", "value": 0.04, "ci": [0.01, 0.09],
         "paper": 0.003, "verdict": "shown", "note": "..."}]}

Rules enforced here, so a notebook cannot write a malformed file: ``id`` is snake_case and unique in
the run; ``value`` is a finite number, or ``None`` with a ``note`` saying why it could not be
computed (never a silent gap); ``ci`` is ``None`` or ``[low, high]`` that contains ``value``;
``verdict`` is one of :data:`VERDICTS`, and anything but ``shown`` needs a ``note`` (why not, or
why not applicable). Numbers come from the run: the notebook passes computed values, never literals.
A notebook writes findings with :meth:`radaudit.session.Run.finding`; readers use :func:`read_findings`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from radaudit.errors import RadauditError

__all__ = ["FINDINGS_FILE", "VERDICTS", "Finding", "FindingsError", "findings_frame", "read_findings",
           "readme_block", "readme_findings", "update_readme", "write_findings"]

FINDINGS_FILE = "findings.json"
VERDICTS: tuple[str, ...] = ("shown", "not shown", "partly", "n/a")
_ID = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


class FindingsError(RadauditError, ValueError):
    """A finding that breaks the format of ``FINDINGS.md`` (the message says which rule)."""


def _number(x: Any, what: str, fid: str) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool):
        raise FindingsError(f"finding {fid!r}: {what} must be a number, got a bool ({x!r})")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise FindingsError(f"finding {fid!r}: {what} must be a number or None, got {x!r}") from None
    if not math.isfinite(v):
        return None
    return v


@dataclass(frozen=True)
class Finding:
    """One headline number (see the module docstring for the rules ``__post_init__`` checks).

    A NaN or infinite ``value`` becomes ``None`` and then needs a ``note``; a ``ci`` with a missing
    bound is dropped to ``None`` (an interval that cannot be computed is not an interval); a value
    outside its interval by floating-point noise only (≤ 1e-9 relative; a degenerate bootstrap) widens
    the interval to it, a larger gap is an error.
    """

    id: str
    label: str
    value: float | None
    verdict: str
    ci: tuple[float, float] | None = None
    paper: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise FindingsError(f"finding id {self.id!r} must be snake_case (lower-case letters, digits, '_')")
        if not isinstance(self.label, str) or not self.label.strip():
            raise FindingsError(f"finding {self.id!r}: label must be a non-empty string")
        value = _number(self.value, "value", self.id)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "paper", _number(self.paper, "paper", self.id))
        if self.verdict not in VERDICTS:
            raise FindingsError(f"finding {self.id!r}: verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")
        note = (self.note or "").strip()
        object.__setattr__(self, "note", note)
        if value is None and not note:
            raise FindingsError(f"finding {self.id!r}: value is missing; give a note saying why it could not be computed")
        if self.verdict != "shown" and not note:
            raise FindingsError(f"finding {self.id!r}: verdict {self.verdict!r} needs a note saying why")
        ci = self.ci
        if ci is not None:
            if isinstance(ci, (str, bytes)) or len(ci) != 2:
                raise FindingsError(f"finding {self.id!r}: ci must be [low, high], got {ci!r}")
            lo, hi = (_number(c, "ci", self.id) for c in ci)
            if lo is None or hi is None:
                ci = None
            else:
                if lo > hi:
                    raise FindingsError(f"finding {self.id!r}: ci [{lo}, {hi}] has low > high")
                if value is not None and not (lo <= value <= hi):
                    if min(abs(value - lo), abs(value - hi)) > 1e-9 * max(1.0, abs(value)):
                        raise FindingsError(f"finding {self.id!r}: ci [{lo}, {hi}] does not contain the value {value}")
                    lo, hi = min(lo, value), max(hi, value)  # floating-point noise of a degenerate interval
                ci = (lo, hi)
            object.__setattr__(self, "ci", ci)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = None if self.ci is None else [self.ci[0], self.ci[1]]
        return {k: d[k] for k in ("id", "label", "value", "ci", "paper", "verdict", "note")}


def _document(experiment: str, preset: str, findings: Sequence[Finding]) -> dict[str, Any]:
    ids = [f.id for f in findings]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise FindingsError(f"finding ids must be unique in a run; repeated: {dup}")
    return {"experiment": experiment, "preset": preset, "findings": [f.to_dict() for f in findings]}


def write_findings(path: str | Path, experiment: str, preset: str, findings: Iterable[Finding]) -> Path:
    """Write ``findings.json`` (validated, deterministic: same findings → same bytes)."""
    doc = _document(experiment, preset, list(findings))
    path = Path(path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_findings(path: str | Path) -> dict[str, Any]:
    """Read and validate a ``findings.json`` (a run folder or the file). Returns the document, with
    ``findings`` as a list of :class:`Finding`."""
    path = Path(path)
    if path.is_dir():
        path = path / FINDINGS_FILE
    if not path.exists():
        raise FindingsError(f"{path} does not exist: the run wrote no findings (did it finish? see its manifest.json)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise FindingsError(f"{path} is not valid JSON: {err}") from None
    missing = {"experiment", "preset", "findings"} - set(doc)
    if missing:
        raise FindingsError(f"{path} lacks {sorted(missing)}")
    items = []
    for raw in doc["findings"]:
        extra = set(raw) - {"id", "label", "value", "ci", "paper", "verdict", "note"}
        if extra:
            raise FindingsError(f"{path}: finding {raw.get('id')!r} has unknown keys {sorted(extra)}")
        ci = raw.get("ci")
        items.append(Finding(id=raw.get("id"), label=raw.get("label"), value=raw.get("value"),
                             verdict=raw.get("verdict"), ci=None if ci is None else tuple(ci), paper=raw.get("paper"),
                             note=raw.get("note", "")))
    _document(doc["experiment"], doc["preset"], items)
    return {**doc, "findings": items}


def _fmt(x: float) -> str:
    """Counts as integers (``32``), other numbers with 3 significant digits (``0.003``, ``0.0412``, ``12.3``)."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3g}"


def findings_frame(findings: Iterable[Finding]):
    """A table for reports and notebooks: id, label, value, 95% CI, paper, verdict, note."""
    import pandas as pd

    rows = []
    for f in findings:
        value = "n/a" if f.value is None else _fmt(f.value) + (f" [{_fmt(f.ci[0])}, {_fmt(f.ci[1])}]" if f.ci else "")
        rows.append({"id": f.id, "finding": f.label, "value": value,
                     "paper": "" if f.paper is None else _fmt(f.paper), "verdict": f.verdict, "note": f.note})
    return pd.DataFrame(rows, columns=["id", "finding", "value", "paper", "verdict", "note"])


# ----------------------------------------------------------------------------------------------
# README paragraphs written from a run (never typed)

_BLOCK = re.compile(r"(<!-- findings:(?P<exp>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /findings -->)", re.DOTALL)


def readme_block(doc: dict[str, Any], source: str = "") -> str:
    """The Markdown the README shows for a run's findings: one line per finding with the value, its
    95% CI, the paper's value and the verdict (the note after a dash). ``source`` names the run."""
    lines = [f"Headline numbers of the `{doc['preset']}` run{f' ({source})' if source else ''}, written by "
             f"`radaudit findings {doc['experiment']} --readme` from its `findings.json`:", ""]
    for f in findings_frame(doc["findings"]).itertuples(index=False):
        paper = f" (paper: {f.paper})" if f.paper else ""
        note = f" — {f.note}" if f.note else ""
        lines.append(f"- **{f.finding}** `{f.id}`: {f.value}{paper}; *{f.verdict}*{note}")
    return "\n".join(lines) + "\n"


def update_readme(text: str, experiment: str, block: str) -> str:
    """``text`` with the body between ``<!-- findings:<experiment> -->`` and ``<!-- /findings -->`` replaced
    by ``block``. Raises :class:`FindingsError` when the README has no such markers (add them where the
    experiment's paragraph should show its numbers)."""
    hits = [m for m in _BLOCK.finditer(text) if m.group("exp") == experiment]
    if not hits:
        raise FindingsError(f"the README has no '<!-- findings:{experiment} -->' ... '<!-- /findings -->' block; "
                            "add one where the experiment's numbers belong")
    out = text
    for m in reversed(hits):
        out = out[:m.start("body")] + block + out[m.end("body"):]
    return out


def readme_findings(text: str, experiment: str) -> str | None:
    """The current body of the experiment's README block (``None`` without one)."""
    for m in _BLOCK.finditer(text):
        if m.group("exp") == experiment:
            return m.group("body")
    return None

