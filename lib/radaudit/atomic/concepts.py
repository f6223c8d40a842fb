"""The data tables of AtomiMed-clinical (issue 41), read from ``radaudit/resources``: concepts, signs, normal
statements, critical findings and context rules. Not part of the AtomiMed paper: the paper's ``atomimed`` reads none
of them (its rule decomposer keeps :data:`radaudit.atomic.lexicon.FINDINGS`).

- ``clinical_concepts.yaml``: each finding's descriptive, lay and interchangeable forms (with the source of each
  mapping), free-text names an LLM may use, morphology implicit in a form ("airspace disease"), and relations between
  findings beyond :data:`~radaudit.atomic.lexicon.SPECIFIC_OF` (hydropneumothorax → pneumothorax); ``mimics``, benign
  findings that explain a finding away when named instead of it (an unfolded aorta for a widened mediastinum);
  ``rewrites`` of abbreviations, contrasts and lay words ("R PTX", "rather than the oesophagus", "intercostal drain");
  ``number_words`` read as digits before a unit of length ("three centimetres" → "3 centimetres"; nowhere else, so
  "no one" stays).
- ``clinical_signs.yaml``: radiographic signs and the findings each implies, with a credit ≤ 0.45.
- ``clinical_normals.yaml``: normal statements ("the lungs are clear") and the findings each denies.
- ``clinical_criticality.yaml``: critical findings (ACR category 1) and the downgrade rule.
- ``clinical_context.yaml``: which findings the patient's age, indication and history make expected or urgent.

:func:`clinical_vocabulary` builds the clinical rule decomposer's vocabulary: new findings of the concept table, then
the signs (before the lexicon's patterns, so "obscuration of the right heart border" is the sign, not an
"opacity"), then the lexicon's findings with the concept table's forms appended. Every table is validated on load;
an error names the file and the entry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from radaudit.atomic.decompose import one_side, report_body
from radaudit.atomic.lexicon import FINDINGS, MORPHOLOGY, canonical_names
from radaudit.atomic.score import normalize_name
from radaudit.errors import ParamsError
from radaudit.text.attributes import TIP_LOCATIONS
from radaudit.text.sections import sentences

__all__ = ["CONTEXT_KEYS", "DESCRIPTIVE_KINDS", "ContextRule", "CriticalRule", "Denial", "NormalStatement", "Relation",
           "Sign", "Tables",
           "affirmed", "check_context", "clinical_vocabulary", "find_denials", "load_tables", "rewrite", "TABLE_FILES"]

#: The kinds of concept-table form that describe a finding (or say it in lay words) rather than name it: a report's
#: denial of the finding by name overrides them (:class:`radaudit.atomic.clinical.decomposer.ClinicalRuleDecomposer`).
DESCRIPTIVE_KINDS = frozenset({"descriptive", "lay"})

#: The five table files (package resources).
TABLE_FILES = {"concepts": "clinical_concepts.yaml", "signs": "clinical_signs.yaml", "normals": "clinical_normals.yaml",
               "criticality": "clinical_criticality.yaml", "context": "clinical_context.yaml"}

#: Keys a context may have, with their types (issue 41): age in years, sex "F"/"M", indication and history as text.
CONTEXT_KEYS: dict[str, type] = {"age": int, "sex": str, "indication": str, "history": str}

_MAX_SIGN_CREDIT = 0.45  # a sign must stay below the imprecise rung's floor (alpha = 0.5)
_TIERS = {"immediate": 4.0, "urgent": 2.0, "follow_up": 1.0, "incidental": 0.5}
_MORPHOLOGY_TERMS = frozenset(MORPHOLOGY.values())  # the morphology terms a table may name


@dataclass(frozen=True)
class Sign:
    """A radiographic sign: ``kind`` ``"sign"`` (only a pointer) or ``"finding"`` (a finding that is also a sign);
    ``implies``: finding → credit."""

    name: str
    kind: str
    patterns: tuple[str, ...]
    implies: Mapping[str, float]
    reason: str
    source: str
    example: str


@dataclass(frozen=True)
class Relation:
    """``specific`` implies ``generic``; ``interchangeable`` relations hold both ways. ``credit`` scales the
    imprecise rung of the report that names the generic (or the other interchangeable) finding. ``morphology``: the
    relation's credit holds only when the generic finding carries that morphology term (an *airspace* opacity for a
    consolidation); such a relation refines one that exists already and adds none of its own."""

    generic: str
    specific: str
    credit: float
    interchangeable: bool
    reason: str
    morphology: str | None = None


@dataclass(frozen=True)
class NormalStatement:
    """A normal statement: its regex and the findings it denies (``None``: every finding)."""

    id: str
    pattern: re.Pattern[str]
    covers: frozenset[str] | None
    example: str


@dataclass(frozen=True)
class Denial:
    """One normal statement found in a report: what it denies, and on which sides (empty: both)."""

    id: str
    covers: frozenset[str] | None
    sides: frozenset[str]
    text: str

    def denies(self, name: str, sides: frozenset[str]) -> bool:
        """Whether the statement denies finding ``name`` stated on ``sides`` (empty: side not stated). A sided
        statement ("the left lung is clear") denies only a finding stated on that side alone."""
        if self.covers is not None and name not in self.covers:
            return False
        if not self.sides:
            return True
        return bool(sides) and sides <= self.sides


@dataclass(frozen=True)
class CriticalRule:
    """``finding`` is critical ``when`` ``"always"``, ``("severity", level)`` or ``("morphology", term)``."""

    finding: str
    when: tuple[str, Any]
    reason: str


#: a negation cue that, earlier in the same clause of the context text, cancels a rule's text match: "no recent
#: surgery", "denies trauma", "no known heart disease", "without prior imaging" (clinical usage of history lines)
_CONTEXT_NEGATION = re.compile(r"\b(?:no|not|nor|denies|denied|without|never|negative\s+for|free\s+of|ruled\s+out)\b",
                               re.IGNORECASE)
#: what ends a clause of the context text (a negation does not reach past it)
_CONTEXT_CLAUSE = re.compile(r"[.;,:()]|\b(?:but|and\s+then|although|however|whereas)\b", re.IGNORECASE)


def affirmed(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` occurs in ``text`` at least once outside a negated clause: a match counts unless a negation
    cue (:data:`_CONTEXT_NEGATION`) stands between the start of its clause and the match ("no known trauma" does not
    say trauma; "fall, no loss of consciousness" still says fall).

    >>> affirmed(re.compile(r"trauma"), "cough and fever; no known trauma")
    False
    >>> affirmed(re.compile(r"fall"), "fall from a ladder, no loss of consciousness")
    True
    """
    for m in pattern.finditer(text):
        start = 0
        for c in _CONTEXT_CLAUSE.finditer(text, 0, m.start()):
            start = c.end()
        if not _CONTEXT_NEGATION.search(text, start, m.start()):
            return True
    return False


@dataclass(frozen=True)
class ContextRule:
    """A context rule (``clinical_context.yaml``). ``text``/``text_and`` must both occur affirmed
    (:func:`affirmed`) in the indication and history; ``text_not`` affirmed there stops the rule."""

    id: str
    text: re.Pattern[str] | None
    text_not: re.Pattern[str] | None
    age_min: int | None
    age_max: int | None
    sex: str | None
    findings: frozenset[str]
    max_level: int | None
    effect: str
    tier: float
    reason: str
    text_and: re.Pattern[str] | None = None

    def matches(self, context: Mapping[str, Any]) -> bool:
        """Whether every condition of the rule holds for ``context`` (an age bound needs an age)."""
        age = context.get("age")
        if self.age_min is not None and (age is None or age < self.age_min):
            return False
        if self.age_max is not None and (age is None or age > self.age_max):
            return False
        if self.sex is not None and context.get("sex") != self.sex:
            return False
        words = "; ".join(str(context.get(k) or "") for k in ("indication", "history"))
        if self.text is not None and not affirmed(self.text, words):
            return False
        if self.text_and is not None and not affirmed(self.text_and, words):
            return False
        if self.text_not is not None and affirmed(self.text_not, words):
            return False
        return True


@dataclass(frozen=True)
class Tables:
    """Every table, validated (:func:`load_tables`)."""

    forms: Mapping[str, tuple[str, ...]]
    new_findings: Mapping[str, str]
    aliases: Mapping[str, str]
    implicit_morphology: Mapping[str, tuple[tuple[re.Pattern[str], str], ...]]
    concepts: Mapping[str, Mapping[str, Any]]
    relations: tuple[Relation, ...]
    signs: Mapping[str, Sign]
    normals: tuple[NormalStatement, ...]
    critical: tuple[CriticalRule, ...]
    critical_tier: float
    downgrade_level: int
    downgrade_credit: float
    context_rules: tuple[ContextRule, ...]
    expected_factor: float
    #: lay and descriptive wordings rewritten to the words the decomposer knows, before decomposing (``rewrites``)
    rewrites: tuple[tuple[re.Pattern[str], str], ...] = ()
    #: finding -> {morphology term: the term it is read as} (``same_morphology``)
    same_morphology: Mapping[str, Mapping[str, str]] | None = None
    #: cues of the findings a history documents (``clinical_context.yaml``, ``history_documents``)
    history_cue: re.Pattern[str] | None = None
    history_cue_not: re.Pattern[str] | None = None
    #: (finding, mimic): a benign finding named instead of the finding explains it away (``mimics``)
    mimics: tuple[tuple[str, str], ...] = ()
    #: tip location (as the decomposer writes it, "right mainstem bronchus") -> its compartment (``tip_compartments``)
    tip_compartment: Mapping[str, str] | None = None
    #: finding -> the patterns of its forms of kind :data:`DESCRIPTIVE_KINDS` (they describe it; they do not name it)
    descriptive_forms: Mapping[str, tuple[str, ...]] | None = None

    @property
    def pure_signs(self) -> frozenset[str]:
        """Names of the signs of kind ``"sign"`` (not findings of their own)."""
        return frozenset(n for n, s in self.signs.items() if s.kind == "sign")

    def names(self) -> frozenset[str]:
        """Every canonical name of the clinical vocabulary (the lexicon's, new findings, signs)."""
        return frozenset([*canonical_names(), *self.new_findings, *self.signs])


def _read(name: str) -> dict[str, Any]:
    text = resources.files("radaudit.resources").joinpath(name).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or doc.get("schema") != 1:
        raise ParamsError(f"radaudit/resources/{name}: needs 'schema: 1' at the top.")
    return doc


def _err(file: str, where: str, msg: str) -> ParamsError:
    return ParamsError(f"radaudit/resources/{file}, {where}: {msg}")


def _compile(file: str, where: str, pattern: str) -> str:
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as e:
        raise _err(file, where, f"pattern {pattern!r} is not a valid regex ({e}).") from None
    return pattern


def _regex(file: str, where: str, pattern: str) -> re.Pattern[str]:
    """``pattern`` checked (:func:`_compile`) and compiled, case-insensitive."""
    return re.compile(_compile(file, where, pattern), re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def load_tables() -> Tables:
    """Read and validate the five tables (cached; module docstring): one loader per file, in the order in which each
    needs the names the ones before it define (the concept table's new findings, then the signs)."""
    known = frozenset(canonical_names())
    concepts = _load_concepts(known)
    names = known | set(concepts["new_findings"])
    signs = _load_signs(names)
    for name in signs:  # a sign's own name reads as the sign
        concepts["aliases"].setdefault(normalize_name(name), name)
    all_names = names | set(signs)
    return Tables(**concepts, signs=signs, normals=_load_normals(all_names), **_load_criticality(all_names),
                  **_load_context(all_names))


# ------------------------------------------------------------------------------------- clinical_concepts.yaml


def _load_concepts(known: frozenset[str]) -> dict[str, Any]:
    """``clinical_concepts.yaml``: the :class:`Tables` fields ``forms``, ``new_findings``, ``aliases``,
    ``implicit_morphology``, ``same_morphology``, ``concepts``, ``rewrites``, ``relations`` and ``mimics``. ``known``:
    the lexicon's canonical names (a finding outside them must be marked ``new``)."""
    cf = TABLE_FILES["concepts"]
    cdoc = _read(cf)
    out = _concept_entries(cf, cdoc.get("concepts") or {}, known)
    names = known | set(out["new_findings"])
    out.update(concepts=cdoc.get("concepts") or {}, rewrites=_rewrites(cf, cdoc),
               relations=_relations(cf, cdoc.get("relations") or [], names),
               mimics=_mimics(cf, cdoc.get("mimics") or [], names))
    return out


def _concept_entries(cf: str, entries: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Each finding's forms, names (aliases), implicit and same morphology, and the new findings with their patterns."""
    forms: dict[str, tuple[str, ...]] = {}
    described: dict[str, tuple[str, ...]] = {}
    new: dict[str, str] = {}
    aliases: dict[str, str] = {}
    implicit: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {}
    same_morph: dict[str, dict[str, str]] = {}
    for name, entry in entries.items():
        if entry.get("new"):
            new[name] = _compile(cf, name, str(entry["pattern"]))
        elif name not in known:
            raise _err(cf, name, "is not a canonical finding of radaudit.atomic.lexicon; mark a new one 'new: true' with "
                                 "a 'pattern'.")
        fl = []
        for f in entry.get("forms") or []:
            for k in ("pattern", "kind", "source", "example"):
                if not f.get(k):
                    raise _err(cf, name, f"a form needs {k} (form {f!r}).")
            fl.append(_compile(cf, name, str(f["pattern"])))
        forms[name] = tuple(fl)
        described[name] = tuple(p for p, f in zip(fl, entry.get("forms") or []) if f["kind"] in DESCRIPTIVE_KINDS)
        for alias in [name, *(entry.get("names") or [])]:
            aliases[normalize_name(str(alias))] = name
        pairs = []
        for pat, term in (entry.get("implicit_morphology") or {}).items():
            if term not in _MORPHOLOGY_TERMS:
                raise _err(cf, name, f"implicit morphology {term!r} is not a term of lexicon.MORPHOLOGY.")
            pairs.append((_regex(cf, name, pat), term))
        implicit[name] = tuple(pairs)
        same = {str(k): str(v) for k, v in (entry.get("same_morphology") or {}).items()}
        if not set(same) | set(same.values()) <= _MORPHOLOGY_TERMS:
            raise _err(cf, name, f"same_morphology {same!r}: every term must be a term of lexicon.MORPHOLOGY.")
        if same:
            same_morph[name] = same
    return {"forms": forms, "new_findings": new, "aliases": aliases, "implicit_morphology": implicit,
            "same_morphology": same_morph, "descriptive_forms": described}


def _rewrites(cf: str, cdoc: Mapping[str, Any]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The ``rewrites`` (whole words), then the ``number_words`` before a unit of length."""
    rewrites = []
    for k, r in enumerate(cdoc.get("rewrites") or []):
        for key in ("pattern", "replace", "source", "example"):
            if not r.get(key):
                raise _err(cf, f"rewrite {k}", f"needs {key} ({r!r}).")
        pat = re.compile(rf"(?<![\w-])(?:{_compile(cf, f'rewrite {k}', str(r['pattern']))})(?![\w-])", re.IGNORECASE)
        rewrites.append((pat, str(r["replace"])))
    for word, value in (cdoc.get("number_words") or {}).items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise _err(cf, "number_words", f"{word!r} must map to a positive number, got {value!r}.")
        # a number word before a unit of length only ("three centimetres" -> "3 centimetres")
        pat = re.compile(rf"(?<![\w-]){re.escape(str(word))}(?=[\s-]+(?:cm|mm|centimet\w*|millimet\w*)(?![\w]))",
                         re.IGNORECASE)
        rewrites.append((pat, f"{value:g}"))
    return tuple(rewrites)


def _relations(cf: str, raw: Sequence[Mapping[str, Any]], names: frozenset[str]) -> tuple[Relation, ...]:
    """The ``relations``: interchangeable pairs and generic/specific ones (with an optional ``when_morphology``)."""
    relations = []
    for r in raw:
        if "interchangeable" in r:
            a, b = r["interchangeable"]
            relations.append(Relation(a, b, float(r["credit"]), True, str(r.get("reason", ""))))
        else:
            morph = r.get("when_morphology")
            if morph is not None and morph not in _MORPHOLOGY_TERMS:
                raise _err(cf, "relations", f"when_morphology {morph!r} is not a term of lexicon.MORPHOLOGY.")
            relations.append(Relation(r["generic"], r["specific"], float(r["credit"]), False, str(r.get("reason", "")),
                                      morph))
    for r in relations:
        for n in (r.generic, r.specific):
            if n not in names:
                raise _err(cf, "relations", f"{n!r} is not a finding of the vocabulary.")
        if not 0 < r.credit <= 1:
            raise _err(cf, "relations", f"credit {r.credit} of {r.generic}/{r.specific} must be in (0, 1].")
    return tuple(relations)


def _mimics(cf: str, raw: Sequence[Mapping[str, Any]], names: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """The ``mimics`` as ``(finding, mimic)`` pairs."""
    mimics = []
    for k, m in enumerate(raw):
        for key in ("finding", "mimic", "reason", "source"):
            if not m.get(key):
                raise _err(cf, f"mimic {k}", f"needs {key} ({m!r}).")
        for n in (m["finding"], m["mimic"]):
            if n not in names:
                raise _err(cf, f"mimic {k}", f"{n!r} is not a finding of the vocabulary.")
        mimics.append((str(m["finding"]), str(m["mimic"])))
    return tuple(mimics)


# ------------------------------------------------------------------------------------- clinical_signs.yaml


def _load_signs(names: frozenset[str]) -> dict[str, Sign]:
    """``clinical_signs.yaml``: each sign, by name. ``names``: the findings of the vocabulary."""
    sf = TABLE_FILES["signs"]
    sdoc = _read(sf)
    default = float(sdoc.get("default_credit", 0.4))
    return {name: _sign(sf, name, e, names, default) for name, e in (sdoc.get("signs") or {}).items()}


def _sign(sf: str, name: str, e: Mapping[str, Any], names: frozenset[str], default: float) -> Sign:
    kind = e.get("kind")
    if kind not in ("sign", "finding"):
        raise _err(sf, name, f"kind must be 'sign' or 'finding', got {kind!r}.")
    if kind == "finding" and name not in names:
        raise _err(sf, name, "a sign of kind 'finding' must be a finding of the vocabulary.")
    if kind == "sign" and name in names:
        raise _err(sf, name, "a sign of kind 'sign' must not reuse a finding's name.")
    pats = tuple(_compile(sf, name, str(p)) for p in e.get("patterns") or [])
    if kind == "sign" and not pats:
        raise _err(sf, name, "a sign needs patterns.")
    imp = e.get("implies") or {}
    implies = {str(k): default for k in imp} if isinstance(imp, list) else {str(k): float(v) for k, v in imp.items()}
    for f, c in implies.items():
        if f not in names:
            raise _err(sf, name, f"implies {f!r}, which is not a finding of the vocabulary.")
        if not 0 < c <= _MAX_SIGN_CREDIT:
            raise _err(sf, name, f"credit {c} for {f!r} must be in (0, {_MAX_SIGN_CREDIT}] (below the imprecise "
                                 "rung's floor).")
    for k in ("reason", "source", "example"):
        if not e.get(k):
            raise _err(sf, name, f"needs {k}.")
    return Sign(name, kind, pats, implies, str(e["reason"]), str(e["source"]), str(e["example"]))


# ------------------------------------------------------------------------------------- clinical_normals.yaml


def _load_normals(all_names: frozenset[str]) -> tuple[NormalStatement, ...]:
    """``clinical_normals.yaml``: the normal statements, their ``covers`` resolved through the ``groups``."""
    nf = TABLE_FILES["normals"]
    ndoc = _read(nf)
    groups = {g: frozenset(v) for g, v in (ndoc.get("groups") or {}).items()}
    for g, members in groups.items():
        bad = sorted(members - all_names)
        if bad:
            raise _err(nf, f"group {g}", f"{bad} are not findings of the vocabulary.")
    return tuple(_normal_statement(nf, s, groups, all_names) for s in ndoc.get("statements") or [])


def _normal_statement(nf: str, s: Mapping[str, Any], groups: Mapping[str, frozenset[str]],
                      all_names: frozenset[str]) -> NormalStatement:
    covers: set[str] | None = set()
    for c in s["covers"]:
        if c == "all":
            covers = None
            break
        if c in groups:
            covers |= groups[c]
        elif c in all_names:
            covers.add(c)
        else:
            raise _err(nf, s["id"], f"covers {c!r}: not a group ({', '.join(groups)}), 'all' or a finding.")
    pat = re.compile(rf"(?<![\w-])(?:{_compile(nf, s['id'], s['pattern'])})(?![\w])", re.IGNORECASE)
    return NormalStatement(s["id"], pat, None if covers is None else frozenset(covers), str(s["example"]))


# ------------------------------------------------------------------------------------- clinical_criticality.yaml


def _load_criticality(all_names: frozenset[str]) -> dict[str, Any]:
    """``clinical_criticality.yaml``: the :class:`Tables` fields ``critical``, ``critical_tier``, ``downgrade_level``,
    ``downgrade_credit`` and ``tip_compartment``."""
    kf = TABLE_FILES["criticality"]
    kdoc = _read(kf)
    crit = tuple(_critical_rule(kf, c, all_names) for c in kdoc.get("critical") or [])
    tip_compartment = _tip_compartments(kf, kdoc.get("tip_compartments") or {})
    if kdoc.get("tier") not in _TIERS:
        raise _err(kf, "tier", f"must be one of {', '.join(_TIERS)}.")
    return {"critical": crit, "critical_tier": _TIERS[kdoc["tier"]], "downgrade_level": int(kdoc["downgrade_level"]),
            "downgrade_credit": float(kdoc["downgrade_credit"]), "tip_compartment": tip_compartment}


def _critical_rule(kf: str, c: Mapping[str, Any], all_names: frozenset[str]) -> CriticalRule:
    if c["finding"] not in all_names:
        raise _err(kf, c["finding"], "is not a finding of the vocabulary.")
    w = c["when"]
    if w == "always":
        when: tuple[str, Any] = ("always", None)
    elif isinstance(w, dict) and "severity_at_least" in w:
        when = ("severity", float(w["severity_at_least"]))
    elif isinstance(w, dict) and "morphology" in w and w["morphology"] in _MORPHOLOGY_TERMS:
        when = ("morphology", str(w["morphology"]))
    else:
        raise _err(kf, c["finding"], f"when {w!r}: use always, {{severity_at_least: 1-4}} or {{morphology: term}}.")
    return CriticalRule(c["finding"], when, str(c.get("reason", "")))


def _tip_compartments(kf: str, raw: Mapping[str, Any]) -> dict[str, str]:
    """Tip location -> compartment; each location one of the tip reader's (:data:`TIP_LOCATIONS`), in one compartment."""
    tip_names = {k.replace("_", " ") for k in TIP_LOCATIONS}
    tip_compartment: dict[str, str] = {}
    for comp, locs in raw.items():
        for loc in locs:
            if loc not in tip_names:
                raise _err(kf, f"tip_compartments {comp}",
                           f"{loc!r} is not a tip location ({', '.join(sorted(tip_names))}).")
            if loc in tip_compartment:
                raise _err(kf, f"tip_compartments {comp}", f"{loc!r} is in two compartments.")
            tip_compartment[loc] = str(comp)
    return tip_compartment


# ------------------------------------------------------------------------------------- clinical_context.yaml


def _load_context(all_names: frozenset[str]) -> dict[str, Any]:
    """``clinical_context.yaml``: the :class:`Tables` fields ``context_rules``, ``expected_factor``, ``history_cue`` and
    ``history_cue_not``."""
    xf = TABLE_FILES["context"]
    xdoc = _read(xf)
    hist = xdoc.get("history_documents") or {}
    history_cue = _regex(xf, "history_documents", hist["cue"]) if hist.get("cue") else None
    history_cue_not = _regex(xf, "history_documents", hist["cue_not"]) if hist.get("cue_not") else None
    default_tier = xdoc.get("urgent_tier", "immediate")
    rules = tuple(_context_rule(xf, r, all_names, default_tier) for r in xdoc.get("rules") or [])
    return {"context_rules": rules, "expected_factor": float(xdoc.get("expected_factor", 0.5)),
            "history_cue": history_cue, "history_cue_not": history_cue_not}


def _context_rule(xf: str, r: Mapping[str, Any], all_names: frozenset[str], default_tier: str) -> ContextRule:
    when = r.get("when") or {}
    unknown = sorted(set(when) - {"text", "text_and", "text_not", "age_min", "age_max", "sex"})
    if unknown:
        raise _err(xf, r["id"], f"unknown condition(s) {unknown}.")
    bad = sorted(set(r["findings"]) - all_names - {"sternotomy wires", "clips"})
    if bad:
        raise _err(xf, r["id"], f"{bad} are not findings of the vocabulary.")
    if r["effect"] not in ("expected", "urgent"):
        raise _err(xf, r["id"], "effect must be 'expected' or 'urgent'.")
    tier = r.get("tier", default_tier)
    if tier not in _TIERS:
        raise _err(xf, r["id"], f"tier {tier!r} is not one of {', '.join(_TIERS)}.")
    text, text_not, text_and = (_regex(xf, r["id"], when[k]) if k in when else None
                                for k in ("text", "text_not", "text_and"))
    return ContextRule(str(r["id"]), text, text_not, when.get("age_min"), when.get("age_max"), when.get("sex"),
                       frozenset(r["findings"]), r.get("max_level"), r["effect"], _TIERS[tier], str(r.get("reason", "")),
                       text_and)


@functools.lru_cache(maxsize=1)
def clinical_vocabulary() -> dict[str, str]:
    """The clinical rule decomposer's vocabulary, canonical name → regex alternation, in matching order: new
    findings of the concept table, signs (kind ``"sign"``), then :data:`~radaudit.atomic.lexicon.FINDINGS` with the
    concept table's forms appended (module docstring)."""
    t = load_tables()
    out: dict[str, str] = {}
    for name, pat in t.new_findings.items():
        out[name] = "|".join([pat, *t.forms.get(name, ())])
    for name, s in t.signs.items():
        if s.kind == "sign":
            out[name] = "|".join(s.patterns)
    for name, pat in FINDINGS.items():
        out[name] = "|".join([pat, *t.forms.get(name, ())])
    return out


def rewrite(text: str) -> str:
    """``text`` with the concept table's ``rewrites`` applied in order: lay and descriptive wordings turned into the
    words the rule decomposer reads ("the breathing tube" → "the endotracheal tube", "where the windpipe divides" →
    "the carina"). Only the clinical decomposer rewrites; the paper's ``atomimed`` reads the text as written."""
    for pat, rep in load_tables().rewrites:
        text = pat.sub(rep, text)
    return text


def find_denials(text: str) -> tuple[Denial, ...]:
    """The normal statements of a report (``clinical_normals.yaml``), searched in its FINDINGS/IMPRESSION body
    sentence by sentence; each with the sides its own words name ("the left lung is clear": left)."""
    out = []
    for sent in sentences(report_body(text)):
        for st in load_tables().normals:
            for m in st.pattern.finditer(sent.text):
                out.append(Denial(st.id, st.covers, one_side([m.group(0)]), m.group(0)))
    return tuple(out)


def check_context(context: Any, where: str = "context") -> dict[str, Any] | None:
    """A validated copy of one context mapping (keys :data:`CONTEXT_KEYS`), ``None`` for ``None``. Errors name the
    key and what is allowed. Empty strings and NaN values are dropped (a CSV cell left empty)."""
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise ParamsError(f"{where} must be a mapping with keys {', '.join(CONTEXT_KEYS)}, got {type(context).__name__}.")
    unknown = sorted(set(map(str, context)) - set(CONTEXT_KEYS))
    if unknown:
        raise ParamsError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(CONTEXT_KEYS)}.")
    out: dict[str, Any] = {}
    for k, v in context.items():
        if v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()):
            continue
        if k == "age":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not 0 <= v <= 130:
                raise ParamsError(f"{where}: age must be whole years in 0-130, got {v!r}.")
            out[k] = int(v)
        elif k == "sex":
            if v not in ("F", "M"):
                raise ParamsError(f"{where}: sex must be 'F' or 'M', got {v!r}.")
            out[k] = v
        else:
            if not isinstance(v, str):
                raise ParamsError(f"{where}: {k} must be text, got {type(v).__name__}.")
            out[k] = v
    return out
