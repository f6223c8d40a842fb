"""Atomic decomposition (AtomiMed §2.1): a report → its findings (Eq. 1) with their attributes (Eq. 2).

Two backends behind one interface, ``decompose(reports) -> list[ReportFacts]``:

:class:`RuleDecomposer` (deterministic, offline; the demo default)
    Built on the text toolkit. The report is restricted to its FINDINGS and IMPRESSION sections
    when it has section headers (so "INDICATION: eval for pneumonia" is not a finding), split into
    sentences (:func:`radaudit.text.sections.sentences`), and in each sentence

    1. findings are found with the vocabulary of :mod:`radaudit.atomic.lexicon` (abnormality and
       anatomy patterns) and devices with :func:`radaudit.text.attributes.extract_devices`;
    2. each mention is classified positive / negative / uncertain by
       :mod:`radaudit.text.negation` ("no new X" read as a negation, ``no_new="negative"``, since
       here it states absence rather than CheXpert's label uncertainty); uncertain mentions
       ("consolidation versus atelectasis", "possible pneumonia") count as present by default
       (``uncertain="yes"``; ``"no"`` or ``"drop"`` are the alternatives);
    3. attributes are extracted with :mod:`radaudit.text.attributes` (laterality + lobe/zone →
       location, size, severity, quantity, temporal change; device tip position → location) and
       :data:`~radaudit.atomic.lexicon.MORPHOLOGY` (morphology), and each attribute is attached to
       one finding of its clause (clauses end at ``;``/``:`` and but/however/whereas/while/
       although): the finding whose span contains it, else the nearest finding *after* it (English
       modifiers precede the noun: "small left pleural effusion"), else the nearest one before it
       ("opacity in the right lower lobe", "effusion has increased"); with a finding on both
       sides, the one before when a coordination (``,``/and/or/with/versus) separates the
       attribute from the next finding but not from the previous one ("nodule in the right upper
       lobe and a small effusion"). Size, severity, quantity and
       morphology words inside a finding's own words ("small lung volumes") are part of its name.

    Mentions of the same canonical finding are merged: present if any mention is positive (else
    uncertain, else negative), the attribute values of its positive/uncertain mentions joined with
    ``", "`` in order, and its ``evidence`` the sentences that decided it. One exception, for a
    vocabulary that marks descriptive forms (the clinical decomposer's; the lexicon's marks none): a
    finding only *described* ("gas beneath the right hemidiaphragm") and also *denied by name* in
    the same report ("no pneumoperitoneum"), on a side covering the description, is absent: the
    named statement is the radiologist's conclusion about the appearance (``_denied_by_name``).

:class:`LLMDecomposer` (any instruct model; paper preset: Qwen3-235B-A22B via vLLM, T = 0)
    Formats ``prompt_template`` (must contain ``{report}``) per report and asks ``generate_fn``
    for JSON matching :class:`~radaudit.atomic.schema.Decomposition` through
    :func:`radaudit.models.llm_json.call_json_batch` (extraction, repair, bounded retries; a
    leading ``<think>`` block is skipped). The schema is strict: ``{"findings": [...]}`` with
    nothing else, so ``{}``, ``{"answer": "sure"}``, ``[]`` and prose all fail
    (``{"findings": []}`` is a valid report without findings); so does a reply cut off before its
    end (truncated JSON is not closed by repair here: the findings after the cut would be lost
    unnoticed; raise the token limit). A reply that still fails is **not**
    turned into "no findings": its :class:`ReportFacts` has ``ok=False`` and ``n_unparseable=1``,
    and every pair that uses it is scored NaN, ``ok=False``, and counted. Every outcome is kept:
    ``ReportFacts.repairs``/``attempts``/``error`` per report and the batch's
    :class:`~radaudit.models.llm_json.JsonBatchSummary` in ``LLMDecomposer.last_summary``;
    :func:`radaudit.atomic.pipeline.score_pairs` turns them into per-pair and per-run counts.
    ``generate_fn`` is a plain ``prompt -> str`` callable (``batched=True``: ``list -> list``);
    :func:`greedy_generator` builds one from a model spec with the project's model layer
    (greedy decoding = temperature 0).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from radaudit.atomic.lexicon import ANATOMY, FINDINGS, compile_alternation, malposition_name, morphology_terms
from radaudit.atomic.schema import ATTRIBUTES, DECOMPOSITION_EXAMPLE, Attributes, Decomposition, Finding
from radaudit.errors import ParamsError
from radaudit.models import backends as model_backends
from radaudit.models import generate as model_generate
from radaudit.models.llm_json import call_json_batch
from radaudit.text.attributes import (
    extract_devices,
    extract_laterality,
    extract_location,
    extract_quantity,
    extract_severity,
    extract_size,
    extract_temporal,
)
from radaudit.text.device_position import POSITIONED_DEVICES, device_position
from radaudit.text.negation import explain_mention, find_cues
from radaudit.text.sections import sentences, split_sections

__all__ = ["CHANGE_ONLY", "DEFAULT_DECOMPOSE_PROMPT", "LLMDecomposer", "ReportFacts", "RuleDecomposer",
           "covers", "greedy_generator", "one_side", "render_prompt", "report_body"]

#: The default decomposition prompt (``{report}`` is replaced by the report text). Our wording: the
#: paper's template is not published (see ANCHORS.md §3).
DEFAULT_DECOMPOSE_PROMPT = (
    "You are an expert radiologist. Decompose the radiology report below into atomic clinical facts.\n"
    "List every finding the report mentions, whether it is present or explicitly absent (pertinent negatives "
    "such as 'no pneumothorax' count). For each finding give:\n"
    '- "name": a short normalised clinical entity (e.g. "pleural effusion", "pneumothorax", "cardiomegaly", '
    '"pulmonary nodule", "central venous catheter"), without location, size, severity or change words;\n'
    '- "present": "yes" if the report states it is present or possibly present, "no" if it states it is absent;\n'
    '- "attributes": for a present finding, the report\'s own words for each of "location", "size", "morphology", '
    '"severity", "quantity" and "temporal" (change since a prior study); null when the report does not state it.\n'
    "Do not add findings the report does not mention. Answer with only a JSON object of this form:\n"
    f"{DECOMPOSITION_EXAMPLE}\n\n"
    "Report:\n{report}\n"
)


def render_prompt(template: str, **fields: str) -> str:
    """``template`` with each ``{name}`` replaced by ``fields[name]`` (plain replacement, so JSON
    braces in the template need no escaping). Every field must occur in the template."""
    missing = [k for k in fields if "{" + k + "}" not in template]
    if missing:
        raise ParamsError(f"The prompt template has no {', '.join('{' + k + '}' for k in missing)} placeholder; "
                          "add it where the text should go.")
    out = template
    for k, v in fields.items():
        out = out.replace("{" + k + "}", v)
    return out


@dataclass(frozen=True)
class ReportFacts:
    """The decomposition of one report.

    ``findings``: the ACFs. ``ok``: whether the decomposition could be read (always true for the rule
    backend). ``n_unparseable``: 1 when the LLM's output could not be parsed and validated after
    repairs and retries (then ``findings`` is empty and must not be scored), else 0. ``repairs``:
    the JSON repairs applied; ``attempts``: generator calls (0: no model call, e.g. the rule
    backend or an empty report); ``error``: why it failed; ``raw_output``: the last reply (LLM
    backend).
    """

    findings: tuple[Finding, ...]
    ok: bool = True
    n_unparseable: int = 0
    repairs: tuple[str, ...] = ()
    attempts: int = 0
    error: str | None = None
    raw_output: str = ""

    @property
    def repaired(self) -> bool:
        """Read, but only after at least one JSON repair."""
        return self.ok and bool(self.repairs)

    @property
    def retried(self) -> bool:
        """Read on a follow-up attempt (the first reply failed)."""
        return self.ok and self.attempts > 1

    def to_frame(self) -> pd.DataFrame:
        """One row per finding: ``name, present, <six facets>, evidence``."""
        rows = [{"name": f.name, "present": f.present, **f.attributes.model_dump(), "evidence": f.evidence}
                for f in self.findings]
        return pd.DataFrame(rows, columns=["name", "present", *ATTRIBUTES, "evidence"])


def report_body(text: str) -> str:
    """The FINDINGS and IMPRESSION sections of ``text`` when it has section headers, else ``text``."""
    secs = split_sections(text, inline=True)
    body = " ".join(secs[k] for k in ("findings", "impression") if k in secs)
    return body if body else text


# ------------------------------------------------------------------------------------------ rule backend

#: a finding explained away as a mimic in its own sentence is read as uncertain (hedged)
_MIMIC = re.compile(r"\b(?:likely|probabl[ey]|most\s+likely|may\s+(?:be|represent)|could\s+(?:be|represent)|"
                    r"consistent\s+with|represents?|due\s+to|reflects?|compatible\s+with)\s+(?:an?\s+|the\s+)?"
                    r"(?:(?:bilateral\s+|right\s+|left\s+)?nipple\s+shadows?|artifacts?|artefacts?|overlying\s+(?:soft\s+tissues?|"
                    r"vessels?|skin\s+folds?|clothing|hair)|overlapping\s+(?:soft\s+tissues?|vessels?|structures)|"
                    r"skin\s+folds?|summation|costochondral\s+(?:calcification|cartilage))", re.IGNORECASE)


def _is_resolution(value: str) -> bool:
    return any(t.value == "resolved" for t in extract_temporal(value))


_CLAUSE_END = re.compile(r"[;:]|\b(?:but|however|whereas|while|although)\b", re.IGNORECASE)
_COORD = re.compile(r",|\b(?:and|or|with|as\s+well\s+as|versus|vs)\b", re.IGNORECASE)
_STATUS_RANK = {"positive": 2, "uncertain": 1, "negative": 0}


@dataclass(frozen=True)
class _Mention:
    name: str
    start: int
    end: int
    status: str
    device: bool
    tip: str = ""
    position: str | None = None
    tip_span: tuple[int, int] | None = None
    #: matched by a descriptive or lay form, not by the finding's name (:meth:`RuleDecomposer._is_descriptive`)
    descriptive: bool = False


@dataclass
class RuleDecomposer:
    """Rule-based decomposition on the text toolkit (module docstring).

    ``uncertain``: how a hedged-only finding is answered (``"yes"`` default, ``"no"``, or ``"drop"``
    to leave it out). ``no_new``: passed to the negation module (``"negative"`` default).
    ``findings``/``anatomy``: vocabularies replacing :data:`~radaudit.atomic.lexicon.FINDINGS` /
    :data:`~radaudit.atomic.lexicon.ANATOMY`. ``sections``: restrict to FINDINGS/IMPRESSION when
    present (default True).
    """

    uncertain: Literal["yes", "no", "drop"] = "yes"
    no_new: Literal["uncertain", "negative"] = "negative"
    findings: Mapping[str, str] | None = None
    anatomy: Mapping[str, tuple[str, str]] | None = None
    sections: bool = True
    name: str = field(init=False, default="rule")

    def __post_init__(self) -> None:
        if self.uncertain not in ("yes", "no", "drop"):
            raise ParamsError(f"uncertain={self.uncertain!r} is not allowed: use 'yes', 'no' or 'drop'.")
        if self.no_new not in ("uncertain", "negative"):
            raise ParamsError(f"no_new={self.no_new!r} is not allowed: use 'negative' or 'uncertain'.")
        table = dict(FINDINGS if self.findings is None else self.findings)
        anat = dict(ANATOMY if self.anatomy is None else self.anatomy)
        if not table:
            raise ParamsError("findings= must name at least one finding.")
        self._names = list(table)
        self._re = compile_alternation(table.values())
        self._anat_names = list(anat)
        self._anat_re = compile_alternation(v[0] for v in anat.values()) if anat else None
        self._anat_pred = {k: re.compile(rf"\b(?:{v[1]})", re.IGNORECASE) for k, v in anat.items()}
        self._cache: dict[str, ReportFacts] = {}

    # ---------------------------------------------------------------------------------------- public
    def decompose(self, reports: Sequence[str]) -> list[ReportFacts]:
        """One :class:`ReportFacts` per report, in order (identical texts are decomposed once)."""
        out = []
        for i, text in enumerate(reports):
            if not isinstance(text, str):
                raise ParamsError(f"report {i} is a {type(text).__name__}, not a str (use '' for an empty report).")
            if text not in self._cache:
                self._cache[text] = ReportFacts(findings=tuple(self.decompose_one(text)))
            out.append(self._cache[text])
        return out

    def decompose_one(self, text: str) -> list[Finding]:
        """The findings of one report (module docstring)."""
        body = report_body(text) if self.sections else text
        merged: dict[str, dict[str, Any]] = {}
        for sent in sentences(body):
            for m, attrs in self._sentence(sent.text):
                slot = merged.setdefault(m.name, {"rank": -1, "attrs": {k: [] for k in ATTRIBUTES}, "ev": {}})
                rank = _STATUS_RANK[m.status]
                if m.status == "negative" and not m.descriptive and not CHANGE_ONLY.search(sent.text):
                    # the finding denied by name ("no pneumoperitoneum"; not "no new effusion", which denies a change)
                    slot.setdefault("denied", []).append((sent.text, one_side(attrs["location"])))
                elif not m.descriptive:
                    slot["named"] = True
                else:
                    slot.setdefault("described_sides", []).append(one_side(attrs["location"]))
                slot["ev"].setdefault(rank, [])
                if sent.text not in slot["ev"][rank]:
                    slot["ev"][rank].append(sent.text)
                slot["rank"] = max(slot["rank"], rank)
                if m.status != "negative":
                    for k, vals in attrs.items():
                        for v in vals:
                            if v not in slot["attrs"][k]:
                                slot["attrs"][k].append(v)
                else:
                    slot.setdefault("resolved", []).extend(v for v in attrs["temporal"] if _is_resolution(v))
                if m.status != "negative" and _MIMIC.search(sent.text):
                    slot["mimic"] = True
        findings = []
        for name, slot in merged.items():
            rank = slot["rank"]
            if rank == 1 and self.uncertain == "drop":
                continue
            if rank > 0 and _denied_by_name(slot):
                rank = 0  # the report's named conclusion overrides its own description (module docstring)
                slot["ev"][0] = [ev for ev, _ in slot["denied"]]
            evidence = " ".join(slot["ev"][rank])
            if rank == 2 and slot.get("mimic"):
                rank = 1  # "nodular opacity, likely a nipple shadow": stated, then explained away
            present = "yes" if rank == 2 or (rank == 1 and self.uncertain == "yes") else "no"
            if present == "yes":
                attrs = {k: ", ".join(v) or None for k, v in slot["attrs"].items()}
            else:  # an absent finding keeps only a statement that it resolved ("effusion has resolved")
                attrs = {"temporal": ", ".join(dict.fromkeys(slot.get("resolved", []))) or None}
            findings.append(Finding(name=name, present=present, attributes=Attributes(**attrs),
                                    evidence=evidence, hedged=present == "yes" and rank == 1))
        return findings

    # ---------------------------------------------------------------------------------------- internals
    def _is_descriptive(self, name: str, text: str) -> bool:
        """Whether ``text``, matched for ``name``, is a descriptive or lay form rather than the finding's name (the
        lexicon's vocabulary has none: always ``False``; the clinical decomposer reads its concept table's kinds)."""
        return False

    def _mentions(self, sent: str) -> list[_Mention]:
        raw: list[tuple[str, int, int, bool, str, str | None, tuple[int, int] | None]] = []
        for m in self._re.finditer(sent):
            raw.append((self._names[int(m.lastgroup[1:])], m.start(), m.end(), False, "", None, None))
        for d in extract_devices(sent):
            if any(d.start < r[2] and r[1] < d.end for r in raw):
                raw = [r for r in raw if not (d.start < r[2] and r[1] < d.end)]
            tip = ", ".join(loc.replace("_", " ") for loc in d.tip.locations) if d.tip else ""
            if d.tip and d.tip.reference and d.tip.relation:
                tip = ", ".join(x for x in (tip, d.tip.text) if x)
            position = device_position(d, sent) if d.value in POSITIONED_DEVICES else None
            raw.append((d.value.replace("_", " "), d.start, d.end, True, tip, position,
                        (d.tip.start, d.tip.end) if d.tip else None))
        anat: list[tuple[str, int, int]] = []
        if self._anat_re is not None:
            for m in self._anat_re.finditer(sent):
                if not any(m.start() < r[2] and r[1] < m.end() for r in raw):
                    anat.append((self._anat_names[int(m.lastgroup[1:])], m.start(), m.end()))
        if not raw and not anat:
            return []
        cues = find_cues(sent, no_new=self.no_new)
        out = []
        for name, s, e, device, tip, position, tip_span in raw:
            status, _ = explain_mention(sent, (s, e), cues=cues)
            out.append(_Mention(name, s, e, status, device, tip, position, tip_span,
                                descriptive=not device and self._is_descriptive(name, sent[s:e])))
        for name, s, e in anat:
            status, _ = explain_mention(sent, (s, e), cues=cues)
            if status != "negative" and not _anatomy_predicate(sent, s, e, self._anat_pred[name],
                                                               [m[1] for m in raw]):
                continue  # "the heart size is stable", "contours obscured by opacity": anatomy, not a finding
            out.append(_Mention(name, s, e, status, False))
        out.sort(key=lambda m: (m.start, m.end))
        return out

    def _sentence(self, sent: str) -> list[tuple[_Mention, dict[str, list[str]]]]:
        mentions = self._mentions(sent)
        if not mentions:
            return []
        tips = [m.tip_span for m in mentions if m.tip_span]
        # the words of a tip position ("in the right atrium") are the tip's, not a side of the device
        items = [it for it in _attribute_items(sent) if not (it[0] == "location" and any(a < it[2] and it[1] < b
                                                                                         for a, b in tips))]
        attrs: list[dict[str, list[str]]] = [{k: [] for k in ATTRIBUTES} for _ in mentions]
        for facet, a, b in items:
            k = _owner(mentions, sent, facet, a, b)
            if k is not None:
                t = sent[a:b]
                if t not in attrs[k][facet]:
                    attrs[k][facet].append(t)
        for k, m in enumerate(mentions):
            if m.tip:
                attrs[k]["location"].append(f"tip: {m.tip}")
        out = list(zip(mentions, attrs))
        for m in mentions:
            # a judged device position is a finding of its own ("malpositioned endotracheal tube": yes/no)
            if m.position is not None and m.status != "negative":
                status = m.status if m.position == "malpositioned" else "negative"
                out.append((_Mention(malposition_name(m.name), m.start, m.end, status, True),
                            {k: [] for k in ATTRIBUTES}))
        return out


#: a denial of a change, not of the finding ("no new effusion", "no increase in the pneumothorax")
CHANGE_ONLY = re.compile(r"\b(?:new|newly|interval|further|increas\w*|enlarg\w*|worsen\w*|progress\w*|change\w*|"
                          r"recurren\w*)\b", re.IGNORECASE)


def one_side(texts: Sequence[str]) -> frozenset[str]:
    """The one side, ``{"left"}`` or ``{"right"}``, that ``texts`` name; both sides, "bilateral" or none:
    ``frozenset()`` (a statement that covers either side)."""
    sides = frozenset(a.value for x in texts for a in extract_laterality(x))
    return frozenset() if sides >= {"left", "right"} or "bilateral" in sides else sides & {"left", "right"}


def _denied_by_name(slot: Mapping[str, Any]) -> bool:
    """Whether a finding the report describes (descriptive or lay forms only) is also denied by name, on a side that
    covers every description: "gas beneath the right hemidiaphragm ... no pneumoperitoneum". The named statement is
    the radiologist's conclusion about what the described appearance is, and wins (issue 41: a descriptive form had
    beaten the same report's explicit denial). A named positive mention anywhere, or a denial on another side ("no
    pneumothorax on the left" beside a right-sided pleural line), leaves the finding present."""
    if slot.get("named") or not slot.get("denied") or not slot.get("described_sides"):
        return False
    return all(covers([d for _, d in slot["denied"]], s) for s in slot["described_sides"])


def covers(denials: Sequence[frozenset[str]], side: frozenset[str]) -> bool:
    """Whether one of ``denials`` (the sides of each denying statement, :func:`one_side`) covers a statement on
    ``side``: an unsided denial covers any side, a sided one only a statement on that side."""
    return any(not d or (bool(side) and side <= d) for d in denials)


_PRED_STOP = re.compile(r"[,;:()]|\b(?:by|with|and|but|which|that|due|from|secondary|related|in|at|of|for|to|"
                        r"than|compared|since|although|while|whereas)\b", re.IGNORECASE)


def _anatomy_predicate(sent: str, s: int, e: int, pred: re.Pattern[str], other_starts: list[int]) -> bool:
    """Whether the anatomy mention ``[s, e)`` has an abnormal predicate of its own: within the two
    words before it ("enlarged cardiac silhouette", "prominent hila") or in the words after it up to
    the first preposition, comma or other finding ("the heart is mildly enlarged"; not "the contours
    are obscured by increased opacity", where "increased" belongs to the opacity)."""
    lo, hi = _clause_bounds(sent, s, e)
    before = sent[lo:s].split()[-2:]
    if before and pred.search(" ".join(before)):
        return True
    stop = _PRED_STOP.search(sent, e, hi)
    end = stop.start() if stop else hi
    end = min([end, *[x for x in other_starts if x >= e]])
    return bool(pred.search(sent, e, end))


def _clause_bounds(sent: str, s: int, e: int) -> tuple[int, int]:
    lo, hi = 0, len(sent)
    for m in _CLAUSE_END.finditer(sent):
        if m.end() <= s:
            lo = m.end()
        elif m.start() >= e:
            hi = m.start()
            break
    return lo, hi


def _attribute_items(sent: str) -> list[tuple[str, int, int]]:
    """``(facet, start, end)`` of every attribute in the sentence (module docstring, step 3)."""
    items: list[tuple[str, int, int]] = []
    locs = extract_location(sent)
    items += [("location", a.start, a.end) for a in locs]
    items += [("location", a.start, a.end) for a in extract_laterality(sent)
              if not any(loc.start <= a.start and a.end <= loc.end for loc in locs)]
    items += [("size", a.start, a.end) for a in extract_size(sent) if a.measures == "size"]
    items += [("severity", a.start, a.end) for a in extract_severity(sent)]
    items += [("quantity", a.start, a.end) for a in extract_quantity(sent, articles=False)]
    items += [("temporal", a.start, a.end) for a in extract_temporal(sent)]
    items += [("morphology", a, b) for _, a, b in morphology_terms(sent)]
    items.sort(key=lambda x: (x[1], x[2]))
    return items


def _owner(mentions: list[_Mention], sent: str, facet: str, a: int, b: int) -> int | None:
    """Index of the mention an attribute at ``[a, b)`` belongs to (module docstring, step 3)."""
    for k, m in enumerate(mentions):
        if m.start <= a and b <= m.end:
            if m.device or facet == "location":
                return k
            return None  # part of the finding's own words
        if a < m.end and m.start < b:
            # a place that shares words with the finding is the finding's own ("right hilar enlargement",
            # "enlarged left hilum": the side is the hilum's); any other attribute straddling it is ambiguous
            return k if facet == "location" else None
    lo, hi = _clause_bounds(sent, a, b)
    after = [k for k, m in enumerate(mentions) if m.start >= b and m.start < hi]
    before = [k for k, m in enumerate(mentions) if m.end <= a and m.end > lo]
    nxt = min(after, key=lambda k: mentions[k].start) if after else None
    prev = max(before, key=lambda k: mentions[k].end) if before else None
    if nxt is not None and prev is not None:
        # "nodule in the right upper lobe and ... effusion": a coordination after the attribute and
        # none before it attaches it to the preceding finding
        if _COORD.search(sent, b, mentions[nxt].start) and not _COORD.search(sent, mentions[prev].end, a):
            return prev
        return nxt
    return nxt if nxt is not None else prev


# ------------------------------------------------------------------------------------------ LLM backend

@dataclass
class LLMDecomposer:
    """Decomposition by an instruct LLM returning JSON (module docstring).

    ``generate_fn``: ``prompt -> str`` (or ``list -> list`` with ``batched=True``), e.g.
    :func:`greedy_generator`. ``prompt_template``: must contain ``{report}``. ``max_retries``,
    ``repair``: as in :func:`radaudit.models.llm_json.call_json`. A generator that raises is
    recorded as an unparseable decomposition (``on_generate_error="record"``) or propagates
    (``"raise"``). ``last_summary``: the :class:`~radaudit.models.llm_json.JsonBatchSummary` of
    the last :meth:`decompose` that called the model (``None`` before).
    """

    generate_fn: Callable[..., Any]
    prompt_template: str = DEFAULT_DECOMPOSE_PROMPT
    batched: bool = False
    max_retries: int = 2
    repair: bool = True
    on_generate_error: Literal["raise", "record"] = "record"
    name: str = field(init=False, default="llm")

    def __post_init__(self) -> None:
        if not callable(self.generate_fn):
            raise ParamsError("LLMDecomposer needs generate_fn, a callable prompt -> str (see greedy_generator).")
        render_prompt(self.prompt_template, report="")  # fail early on a template without {report}
        self._cache: dict[str, ReportFacts] = {}
        self.last_summary: Any = None

    def decompose(self, reports: Sequence[str]) -> list[ReportFacts]:
        """One :class:`ReportFacts` per report; empty reports have no findings and need no call."""
        for i, text in enumerate(reports):
            if not isinstance(text, str):
                raise ParamsError(f"report {i} is a {type(text).__name__}, not a str (use '' for an empty report).")
        todo = [t for t in dict.fromkeys(reports) if t not in self._cache]
        for t in [t for t in todo if not t.strip()]:
            self._cache[t] = ReportFacts(findings=())
        todo = [t for t in todo if t.strip()]
        if todo:
            prompts = [render_prompt(self.prompt_template, report=t) for t in todo]
            results, self.last_summary = call_json_batch(
                self.generate_fn, prompts, Decomposition, batched=self.batched, max_retries=self.max_retries,
                repair=self.repair, on_generate_error=self.on_generate_error, reject_repairs=("close_truncated",))
            for t, r in zip(todo, results):
                self._cache[t] = ReportFacts(
                    findings=tuple(r.value.findings) if r.ok else (), ok=r.ok, n_unparseable=0 if r.ok else 1,
                    repairs=tuple(r.repairs), attempts=r.attempts, error=r.error,
                    raw_output=r.raw_outputs[-1] if r.raw_outputs else "")
        return [self._cache[t] for t in reports]


def greedy_generator(model: Any, *, max_new_tokens: int = 1024, batch_size: int = 8, backend: str = "transformers",
                     cache: Any = None, device: str | None = None, dtype: Any = None,
                     **backend_kwargs: Any) -> Callable[[list[str]], list[str]]:
    """A batched ``generate_fn`` (use with ``batched=True``) built on the model layer:
    :func:`radaudit.models.generate.generate` with the ``greedy`` strategy (temperature 0, as the
    paper). ``model``: a spec (paper preset ``"Qwen/Qwen3-235B-A22B"`` with ``backend="vllm"``), a
    loaded model or a backend. ``backend``: ``"transformers"`` (alias ``"hf"``) or ``"vllm"``; both
    render the same prompts and share cache entries. ``dtype``: ``None`` is float32 on either engine
    (pass ``"bf16"`` for a large model). The backend is built on the first call and kept; ``cache`` (a
    :class:`~radaudit.models.cache.ContentCache`, a folder or ``True``) makes reruns free."""
    # get_backend and generate are looked up on their modules when called, so tests can patch them there

    @functools.lru_cache(maxsize=1)
    def _backend() -> Any:
        return model_backends.get_backend(model, backend, device=device, dtype=dtype, **backend_kwargs)

    def fn(prompts: list[str]) -> list[str]:
        gens = model_generate.generate(_backend(), list(prompts), "greedy", max_new_tokens=max_new_tokens,
                                       batch_size=batch_size, cache=cache)
        return [g.text for g in gens]

    return fn
