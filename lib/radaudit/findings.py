"""``findings.json``: the headline results of a run, each beside the paper's value and a verdict.

Format (``../shared/FINDINGS.md``)::

    {"experiment": "decoding_erasure", "preset": "demo", "findings": [
        {"id": "greedy_distinct_reports", "label": "...", "value": 0.04, "ci": [0.01, 0.09],
         "paper": 0.003, "verdict": "shown", "note": "...",
         "bar": {"op": ">=", "value": 0.01}, "controls": ["erasure_planted_control"], "stability": null}]}

Rules enforced here, so a notebook cannot write a malformed file: ``id`` is snake_case and unique in
the run; ``value`` is a finite number, or ``None`` with a ``note`` saying why it could not be
computed (never a silent gap); ``ci`` is ``None`` or ``[low, high]`` that contains ``value``;
``verdict`` is one of :data:`VERDICTS`, and anything but ``shown`` needs a ``note`` (why not, or
why not applicable). Numbers come from the run: the notebook passes computed values, never literals.
A notebook writes findings with :meth:`radaudit.session.Run.finding`; readers use :func:`read_findings`.

**The verdict rules live here, and only here** (:func:`judge` for one number, :func:`settle` for a
run's document; every experiment uses them, and ``docs/verdicts.md`` states them):

1. *The CI, not the point estimate, clears the bar.* With a ``bar`` (:class:`Bar`), :func:`judge` says
   ``shown`` when the whole 95% CI is on the bar's side, ``partly`` when the estimate is but the CI
   crosses the bar, ``not shown`` when the estimate is on the wrong side. A number without a CI is read
   as exact (a count of the whole data, not an estimate).
2. *A number fixed by how it is computed is not evidence.* A ``shown`` whose CI has zero width is
   made ``n/a`` ("descriptive"); it cannot serve as a control either.
3. *A finding is shown only when every control it rests on passed.* ``controls`` lists the ids of
   the control findings (each a finding of the same run whose ``shown`` means "the control passed");
   a control that failed, is ``n/a`` or was not reported makes a ``shown`` or ``partly`` that rests on
   it ``not shown`` (without its controls a number is not evidence, not even partial), and the note
   names the control. Each control has a test in which it fails.
4. *A verdict on a trained stand-in holds over seeds.* With ``stability`` (the verdicts of the
   stability benchmark's training seeds for the same recipe), a ``shown`` that is not shown on every
   seed becomes ``partly``, and the note says on how many (``partly (k/n seeds)``).

:func:`settle` applies rules 1-4 in that order whenever a document is written, so no file on disk
can hold a ``shown`` that breaks them; it only ever lowers a verdict, and says why in the note.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from radaudit.errors import RadauditError
from radaudit.files import atomic_write

__all__ = ["FINDINGS_FILE", "VERDICTS", "Bar", "Finding", "FindingsError", "Judgement", "findings_frame", "judge",
           "read_findings", "readme_block", "readme_findings", "settle", "update_readme", "verdict_label",
           "write_findings"]

FINDINGS_FILE = "findings.json"
VERDICTS: tuple[str, ...] = ("shown", "not shown", "partly", "n/a")
_KEYS = ("id", "label", "value", "ci", "paper", "verdict", "note", "bar", "controls", "stability")
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


_OPS: dict[str, tuple[str, Any]] = {
    ">=": ("≥", lambda x, b: x >= b), ">": (">", lambda x, b: x > b),
    "<=": ("≤", lambda x, b: x <= b), "<": ("<", lambda x, b: x < b),
}


@dataclass(frozen=True)
class Bar:
    """The threshold a finding's verdict is read against: ``op`` one of ``>=``, ``>``, ``<=``, ``<``.

    ``Bar(">=", 0.75)`` reads "the quantity is at least 0.75"; ``str`` gives ``≥ 0.75``.
    """

    op: str
    value: float

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise FindingsError(f"bar op must be one of {list(_OPS)}, got {self.op!r}")
        v = _number(self.value, "bar value", "bar")
        if v is None:
            raise FindingsError(f"bar value must be a finite number, got {self.value!r}")
        object.__setattr__(self, "value", v)

    @classmethod
    def of(cls, bar: Bar | dict[str, Any] | Sequence[Any] | None) -> Bar | None:
        """A :class:`Bar` from a ``Bar``, ``{"op": ">=", "value": 0.75}``, ``(">=", 0.75)`` or ``None``."""
        if bar is None or isinstance(bar, Bar):
            return bar
        if isinstance(bar, dict):
            if set(bar) != {"op", "value"}:
                raise FindingsError(f"bar must be {{'op': ..., 'value': ...}}, got {bar!r}")
            return cls(bar["op"], bar["value"])
        if isinstance(bar, (str, bytes)) or len(bar) != 2:
            raise FindingsError(f"bar must be (op, value), got {bar!r}")
        return cls(bar[0], bar[1])

    def holds(self, x: float) -> bool:
        """Whether ``x`` is on the bar's side."""
        return bool(_OPS[self.op][1](x, self.value))

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "value": self.value}

    def __str__(self) -> str:
        return f"{_OPS[self.op][0]} {_fmt(self.value)}"


@dataclass(frozen=True)
class Judgement:
    """A verdict and the sentence that explains it (empty for a plain ``shown``)."""

    verdict: str
    reason: str = ""


def judge(value: float | None, ci: Sequence[float] | None, bar: Bar | dict[str, Any] | Sequence[Any]) -> Judgement:
    """Rule 1 of the module docstring: the verdict of ``value`` with 95% ``ci`` against ``bar``.

    ``shown`` when the whole CI is on the bar's side (for an exact number without a CI: the value);
    ``partly`` when the estimate is on the bar's side but the CI crosses the bar; ``not shown`` when
    the estimate is not; ``n/a`` when there is no value.

    >>> judge(0.8, (0.7, 0.9), (">=", 0.75)).verdict
    'partly'
    """
    bar = Bar.of(bar)
    assert bar is not None
    if value is None or not math.isfinite(float(value)):
        return Judgement("n/a", "no value to read against the bar")
    if not bar.holds(float(value)):
        return Judgement("not shown", f"the estimate {_fmt(float(value))} is not {bar}")
    if ci is None:
        return Judgement("shown")
    lo, hi = (float(c) for c in ci)
    if bar.holds(lo) and bar.holds(hi):
        return Judgement("shown")
    return Judgement("partly", f"the estimate is {bar} but its 95% CI [{_fmt(lo)}, {_fmt(hi)}] crosses the bar")


@dataclass(frozen=True)
class Finding:
    """One headline number (see the module docstring for the rules ``__post_init__`` checks).

    A NaN or infinite ``value`` becomes ``None`` and then needs a ``note``; a ``ci`` with a missing
    bound is dropped to ``None`` (an interval that cannot be computed is not an interval); a value
    outside its interval by floating-point noise only (≤ 1e-9 relative; a degenerate bootstrap) widens
    the interval to it, a larger gap is an error. ``bar`` accepts a :class:`Bar`, a dict or a pair;
    ``controls`` the ids of the control findings this one rests on; ``stability`` the benchmark's
    ``{"seeds": [...], "verdicts": [...]}`` for the same recipe.
    """

    id: str
    label: str
    value: float | None
    verdict: str
    ci: tuple[float, float] | None = None
    paper: float | None = None
    note: str = ""
    bar: Bar | None = None
    controls: tuple[str, ...] = ()
    stability: dict[str, Any] | None = None

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
        try:
            object.__setattr__(self, "bar", Bar.of(self.bar))
        except FindingsError as err:
            raise FindingsError(f"finding {self.id!r}: {err}") from None
        controls = self.controls
        if isinstance(controls, str) or not all(isinstance(c, str) and _ID.match(c) for c in controls):
            raise FindingsError(f"finding {self.id!r}: controls must be a list of finding ids, got {controls!r}")
        if self.id in controls:
            raise FindingsError(f"finding {self.id!r} cannot be its own control")
        object.__setattr__(self, "controls", tuple(controls))
        object.__setattr__(self, "stability", _stability(self.stability, self.id))

    @property
    def zero_width(self) -> bool:
        """Whether the CI has zero width (fixed by construction, or a bootstrap that cannot show spread)."""
        return self.ci is not None and self.ci[0] == self.ci[1]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "value": self.value,
                "ci": None if self.ci is None else [self.ci[0], self.ci[1]], "paper": self.paper,
                "verdict": self.verdict, "note": self.note,
                "bar": None if self.bar is None else self.bar.to_dict(), "controls": list(self.controls),
                "stability": None if self.stability is None else {k: list(v) for k, v in self.stability.items()}}


def _stability(st: Any, fid: str) -> dict[str, Any] | None:
    if st is None:
        return None
    if not isinstance(st, dict) or set(st) != {"seeds", "verdicts"}:
        raise FindingsError(f"finding {fid!r}: stability must be {{'seeds': [...], 'verdicts': [...]}}, got {st!r}")
    seeds, verdicts = list(st["seeds"]), list(st["verdicts"])
    if not seeds or len(seeds) != len(verdicts):
        raise FindingsError(f"finding {fid!r}: stability needs one verdict per seed, got {st!r}")
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad:
        raise FindingsError(f"finding {fid!r}: stability verdicts must be in {list(VERDICTS)}, got {bad}")
    return {"seeds": tuple(int(x) for x in seeds), "verdicts": tuple(verdicts)}


def _lowered(f: Finding, verdict: str, why: str) -> Finding:
    note = f"{why}. {f.note}" if f.note else why
    return replace(f, verdict=verdict, note=note)


def settle(findings: Sequence[Finding]) -> list[Finding]:
    """Rules 2-4 of the module docstring (and rule 1 for a ``shown`` with a ``bar``) applied to a
    run's findings: returns them with every ``shown`` the evidence does not carry lowered, and the
    reason put first in its note. Idempotent; it never raises a verdict."""
    out: list[Finding] = []
    for f in findings:
        if f.verdict == "shown" and f.bar is not None:
            j = judge(f.value, f.ci, f.bar)
            if j.verdict != "shown":
                f = _lowered(f, j.verdict, j.reason)
        if f.verdict == "shown" and f.zero_width:
            f = _lowered(f, "n/a", "descriptive: its 95% CI has zero width, so it is fixed by how it is computed "
                                   "(or the interval cannot show its spread) and is not evidence")
        out.append(f)
    by_id = {f.id: f for f in out}
    settled = []
    for f in out:
        if f.verdict in ("shown", "partly") and f.controls:
            failed = [c for c in f.controls if c not in by_id or by_id[c].verdict != "shown"]
            if failed:
                said = ", ".join(f"{c} ({by_id[c].verdict})" if c in by_id else f"{c} (not reported)" for c in failed)
                f = _lowered(f, "not shown", f"a control it rests on did not pass: {said}")
        if f.verdict == "shown" and f.stability is not None:
            k, n = sum(v == "shown" for v in f.stability["verdicts"]), len(f.stability["verdicts"])
            if k == 0:  # "partly (0/3 seeds)" would contradict itself: shown here, on no seed of the benchmark
                f = _lowered(f, "not shown", f"shown in this run but on none of the {n} training seeds of the stand-in "
                                             "(stability benchmark): one draw, not evidence")
            elif k < n:
                f = _lowered(f, "partly", f"partly ({k}/{n} seeds): shown on {k} of {n} training seeds of the stand-in")
        settled.append(f)
    return settled


def verdict_label(f: Finding) -> str:
    """The verdict as a reader sees it: ``partly (2/3 seeds)`` where the stability benchmark split it."""
    if f.stability is not None and f.verdict == "partly":
        k, n = sum(v == "shown" for v in f.stability["verdicts"]), len(f.stability["verdicts"])
        if 0 < k < n:
            return f"partly ({k}/{n} seeds)"
    return f.verdict


def _document(experiment: str, preset: str, findings: Sequence[Finding]) -> dict[str, Any]:
    ids = [f.id for f in findings]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise FindingsError(f"finding ids must be unique in a run; repeated: {dup}")
    return {"experiment": experiment, "preset": preset, "findings": [f.to_dict() for f in findings]}


def write_findings(path: str | Path, experiment: str, preset: str, findings: Iterable[Finding]) -> Path:
    """Write ``findings.json`` (validated, deterministic: same findings → same bytes)."""
    doc = _document(experiment, preset, settle(list(findings)))
    return atomic_write(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


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
        extra = set(raw) - set(_KEYS)
        if extra:
            raise FindingsError(f"{path}: finding {raw.get('id')!r} has unknown keys {sorted(extra)}")
        ci = raw.get("ci")
        items.append(Finding(id=raw.get("id"), label=raw.get("label"), value=raw.get("value"),
                             verdict=raw.get("verdict"), ci=None if ci is None else tuple(ci), paper=raw.get("paper"),
                             note=raw.get("note", ""), bar=raw.get("bar"), controls=tuple(raw.get("controls") or ()),
                             stability=raw.get("stability")))
    _document(doc["experiment"], doc["preset"], items)
    return {**doc, "findings": items}


def _fmt(x: float) -> str:
    """Counts as integers (``32``), other numbers with 3 significant digits (``0.003``, ``0.0412``, ``12.3``)."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3g}"


def findings_frame(findings: Iterable[Finding]):
    """A table for reports and notebooks: id, label, value with its 95% CI, paper, bar, verdict (with the
    seeds where the stability benchmark split it, :func:`verdict_label`), the controls it rests on, note."""
    import pandas as pd

    rows = []
    for f in findings:
        value = "n/a" if f.value is None else _fmt(f.value) + (f" [{_fmt(f.ci[0])}, {_fmt(f.ci[1])}]" if f.ci else "")
        rows.append({"id": f.id, "finding": f.label, "value": value,
                     "paper": "" if f.paper is None else _fmt(f.paper), "bar": "" if f.bar is None else str(f.bar),
                     "verdict": verdict_label(f), "controls": ", ".join(f.controls), "note": f.note})
    return pd.DataFrame(rows, columns=["id", "finding", "value", "paper", "bar", "verdict", "controls", "note"])


# ----------------------------------------------------------------------------------------------
# The findings blocks of the docs' experiment pages, written from a run (never typed). The functions keep their
# README names: the blocks lived in README.md before the docs site (docs/experiments/<experiment>.md) took them.

_BLOCK = re.compile(r"(<!-- findings:(?P<exp>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /findings -->)", re.DOTALL)


def readme_block(doc: dict[str, Any], source: str = "") -> str:
    """The Markdown an experiment's docs page shows for a run's findings: one line per finding with the value,
    its 95% CI, the paper's value and the verdict (the note after a dash). ``source`` names the run."""
    lines = [f"Headline numbers of the `{doc['preset']}` run{f' ({source})' if source else ''}, written by "
             f"`radaudit findings {doc['experiment']} --docs` from its `findings.json`:", ""]

    def md(text: str) -> str:  # a label's or note's "p*" must not start Markdown emphasis
        return str(text).replace("*", "\\*")

    for f in findings_frame(doc["findings"]).itertuples(index=False):
        paper = f" (paper: {f.paper})" if f.paper else ""
        bar = f" (bar {f.bar})" if f.bar else ""
        note = f" — {md(f.note)}" if f.note else ""
        lines.append(f"- **{md(f.finding)}** `{f.id}`: {f.value}{paper}{bar}; *{f.verdict}*{note}")
    return "\n".join(lines) + "\n"


def update_readme(text: str, experiment: str, block: str) -> str:
    """``text`` with the body between ``<!-- findings:<experiment> -->`` and ``<!-- /findings -->`` replaced
    by ``block``. ``text`` is a page's Markdown (``docs/experiments/<experiment>.md``). Raises
    :class:`FindingsError` when it has no such markers (add them where the experiment's numbers belong)."""
    hits = [m for m in _BLOCK.finditer(text) if m.group("exp") == experiment]
    if not hits:
        raise FindingsError(f"the page has no '<!-- findings:{experiment} -->' ... '<!-- /findings -->' block; "
                            "add one where the experiment's numbers belong")
    out = text
    for m in reversed(hits):
        out = out[:m.start("body")] + block + out[m.end("body"):]
    return out


def readme_findings(text: str, experiment: str) -> str | None:
    """The current body of the experiment's findings block in ``text`` (a page's Markdown; ``None`` without one)."""
    for m in _BLOCK.finditer(text):
        if m.group("exp") == experiment:
            return m.group("body")
    return None

