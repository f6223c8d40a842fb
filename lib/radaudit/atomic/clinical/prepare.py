"""A report's findings as AtomiMed-clinical's issue-41 scoring reads them (:mod:`radaudit.atomic.clinical`), before any
fact is paired or credited.

:func:`prepare_findings` maps names to the concept table's canonical names, reads "both" as bilateral, normalises
morphology terms and adds the morphology a form implies, and drops stated-absent pure signs and findings the report
explains away as technique (:func:`dismissed`). :func:`fold_signs` then folds a report's signs into the finding each
implies (the sign is that finding's description, not a second fact); :func:`folded_signs` lists what was folded, for
the normal statements that deny such a sign (rung 5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from radaudit.atomic.clinical.facets import sides_disjoint
from radaudit.atomic.concepts import Tables
from radaudit.atomic.decompose import CHANGE_ONLY, covers, one_side
from radaudit.atomic.lexicon import morphology_terms
from radaudit.atomic.schema import Finding
from radaudit.atomic.score import normalize_name

__all__ = ["dismissed", "fold_signs", "folded_signs", "prepare_findings"]

#: "both" and "bilaterally" name the two sides ("free air under both hemidiaphragms" is bilateral free air; issue 41,
#: after holdout4): read as "bilateral" by :func:`prepare_findings` (the rules' path only; ``rules=False`` is unchanged)
_BOTH_SIDES = re.compile(r"\b(?:both|bilaterally|on\s+both\s+sides)\b", re.IGNORECASE)

#: a finding explained away in its own sentence as technique, projection or artifact ("the mediastinum appears
#: prominent, likely related to supine AP technique"): the report does not assert it (clinical usage)
_DISMISSED = re.compile(
    r"\b(?:(?:likely|probably|presumably|most\s+likely|may\s+be|could\s+be|is|are|possibly)\s+)?(?:related|due|"
    r"attributable|attributed|secondary)\s+to\s+(?:the\s+)?(?:supine|ap|portable|projection\w*|technique|technical|"
    r"positioning|patient\s+positioning|rotation|(?:patient\s+)?rotation|low\s+lung\s+volumes|poor\s+inspiration|"
    r"shallow\s+inspiration|overlying\s+(?:soft\s+tissues?|breast\s+tissue)|artifact|artefact)"
    r"|\b(?:likely|probably|presumably|most\s+likely)\s+(?:technical|projectional|artifactual|artefactual|positional)\b",
    re.IGNORECASE)


def dismissed(f: Finding) -> bool:
    """Whether a present finding is explained away as technique in the sentence that states it (:data:`_DISMISSED`)."""
    return f.present == "yes" and bool(f.evidence) and bool(_DISMISSED.search(f.evidence or ""))


def prepare_findings(findings: Sequence[Finding], t: Tables) -> list[Finding]:
    """Names mapped to the concept table's canonical names (an LLM's "hyperexpansion"), stated-absent pure signs
    dropped ("no deep sulcus sign" adds nothing the finding's own negation does not), findings explained away as
    technique dropped (:func:`dismissed`), present pure signs dropped when the report denies by name every finding
    they imply (the named conclusion overrides the sign, as a named denial overrides a description in the decomposer),
    morphology terms read as the concept table's same term ("linear" atelectasis
    is plate-like), morphology implicit in a form added ("airspace disease" is an airspace opacity)."""
    out = []
    denied = _named_denials(findings, t)
    for f in findings:
        name = t.aliases.get(normalize_name(f.name), f.name)
        if (name in t.pure_signs and f.present == "no") or dismissed(f):
            continue
        if name in t.pure_signs and f.present == "yes" and t.signs[name].implies and all(
                covers(denied.get(n, ()), one_side([f.attributes.location or ""])) for n in t.signs[name].implies):
            continue  # "deep sulcus on the left ... no pneumothorax": the report's named conclusion overrides its sign

        upd: dict[str, Any] = {"name": name} if name != f.name else {}
        if f.attributes.location and _BOTH_SIDES.search(f.attributes.location):
            f = f.model_copy(update={"attributes": f.attributes.model_copy(
                update={"location": _BOTH_SIDES.sub("bilateral", f.attributes.location)})})
        same = (t.same_morphology or {}).get(name)
        if same and f.attributes.morphology:
            terms = [x for x, _, _ in morphology_terms(f.attributes.morphology)]
            if any(x in same for x in terms):
                morph = ", ".join(dict.fromkeys(same.get(x, x) for x in terms))
                f = f.model_copy(update={"attributes": f.attributes.model_copy(update={"morphology": morph})})
        implicit = t.implicit_morphology.get(name, ())
        if implicit and f.present == "yes" and f.evidence:
            have = {x for x, _, _ in morphology_terms(f.attributes.morphology or "")}
            add = [term for pat, term in implicit if pat.search(f.evidence) and term not in have]
            if add:
                morph = ", ".join([*([f.attributes.morphology] if f.attributes.morphology else []), *dict.fromkeys(add)])
                upd["attributes"] = f.attributes.model_copy(update={"morphology": morph})
        out.append(f.model_copy(update=upd) if upd else f)
    return out


def _named_denials(findings: Sequence[Finding], t: Tables) -> dict[str, list[frozenset[str]]]:
    """finding -> the sides of each sentence that denies it (``frozenset()``: no side), for the findings a report states
    absent, not only as a change ("no new effusion", :data:`~radaudit.atomic.decompose.CHANGE_ONLY`); a denied
    finding denies its specific forms too (the concept table's relations: no pneumothorax, no hydropneumothorax)."""
    out: dict[str, list[frozenset[str]]] = {}
    for f in findings:
        if f.present == "no" and not CHANGE_ONLY.search(f.evidence or ""):
            out.setdefault(t.aliases.get(normalize_name(f.name), f.name), []).append(one_side([f.evidence or ""]))
    for r in t.relations:
        if r.generic in out and not r.interchangeable:
            out.setdefault(r.specific, []).extend(out[r.generic])
    return out


def fold_signs(findings: list[Finding], other: Sequence[Finding], t: Tables) -> list[Finding]:
    """A report's present signs dropped when the same report names a finding each implies, not hedged ("consider a
    pericardial effusion" does not absorb the enlarged silhouette), on a compatible side (a
    mediastinal shift's side is the direction it moves, so any side): "a pleural line with no markings beyond it ...
    small pneumothorax", "massive effusion with opacification of the hemithorax and contralateral shift". A sign is the
    evidence for a finding; once the report draws the conclusion, the sign is part of that finding's description,
    not a second fact (clinical usage: reports list the signs that make the diagnosis). A finding without a stated place
    takes its sign's ("a pleural line at the right apex ... a small pocket of air": a right apical pneumothorax), and a
    finding without a stated grade (severity, size) its sign's ("a large retrocardiac gas-filled structure with an
    air-fluid level ... a hiatus hernia": a large hernia; not a mediastinal shift's, whose grade is the shift's). A sign
    the ``other`` report states present too stays, and the two are compared as they are (a side, a grade)."""
    out: list[Finding] = []
    place: dict[int, str] = {}
    grade: dict[int, dict[str, str]] = {}
    for f in findings:
        s = t.signs.get(f.name)
        if any(o.name == f.name and o.present == "yes" for o in other):
            s = None  # the other report states the sign too: the two are compared as they are
        into = next((k for k, g in enumerate(findings) if g is not f and g.present == "yes" and not g.hedged
                     and s is not None and g.name in s.implies
                     and (f.name == "mediastinal shift" or not sides_disjoint(f, g))), None) if f.present == "yes" else None
        if into is None:
            out.append(f)
        elif f.name != "mediastinal shift":
            g = findings[into]
            if f.attributes.location and not g.attributes.location:
                place.setdefault(into, f.attributes.location)  # the sign's place ("pleural line at the apex")
            for facet in ("severity", "size"):
                # the sign's grade is the finding's ("large retrocardiac air-fluid level ... a hiatus hernia"; issue 41)
                if getattr(f.attributes, facet) and not getattr(g.attributes, facet):
                    grade.setdefault(into, {}).setdefault(facet, getattr(f.attributes, facet))
    if place or grade:
        moved = {id(findings[k]): {"location": loc} for k, loc in place.items()}
        for k, upd in grade.items():
            moved.setdefault(id(findings[k]), {}).update(upd)
        out = [f.model_copy(update={"attributes": f.attributes.model_copy(update=moved[id(f)])})
               if id(f) in moved else f for f in out]
    return out


def folded_signs(before: Sequence[Finding], after: Sequence[Finding], t: Tables) -> list[Finding]:
    """The present signs :func:`fold_signs` folded into the finding they imply (in ``before``, not in ``after``)."""
    return [f for f in before if f.present == "yes" and f.name in t.signs and all(g is not f for g in after)]
