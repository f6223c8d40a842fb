"""Rungs 2c and 5r of AtomiMed-clinical's ladder (:mod:`radaudit.atomic.clinical`): the facts a pair's scoring counts
as missed, leaves out, or holds against the candidate as false reassurance, decided for the whole pair before its facts
are scored.

- :func:`facts_as_missed`: a critical finding downgraded two or more grades (or named at a lower stage), a malpositioned
  tube called satisfactory or placed in another compartment, a finding explained away by a benign mimic
  (:func:`mimicked`);
- :func:`false_reassurance`: in a candidate that stands the work-up down (:data:`STAND_DOWN`, :func:`stands_down`), an
  actionable finding mentioned below its grade or explained away.

Which findings are critical, and when a grade is a downgrade: :mod:`~radaudit.atomic.clinical.criticality`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from radaudit.atomic.clinical.criticality import compartments_differ, downgraded, is_critical
from radaudit.atomic.clinical.facets import finding_levels, sides_disjoint
from radaudit.atomic.clinical.ladder import concept_relation, related_clinical
from radaudit.atomic.clinical.options import ClinicalOptions
from radaudit.atomic.concepts import Denial, Tables
from radaudit.atomic.lexicon import related_as
from radaudit.atomic.schema import Finding

__all__ = ["STAND_DOWN", "facts_as_missed", "false_reassurance", "mimicked", "stands_down"]

#: id of the normal-statements entry (``clinical_normals.yaml``) that stands the work-up down ("no further imaging
#: required", "conservative management"): it denies no finding itself, but makes a downgrade false reassurance
STAND_DOWN = "stand-down"

_MALPOSITIONED = "malpositioned "


def _present_fact(findings: Sequence[Finding], name: str) -> int | None:
    """The index of the first present finding called ``name`` (``None``: none)."""
    return next((k for k, f in enumerate(findings) if f.name == name and f.present == "yes"), None)


def facts_as_missed(ref: Sequence[Finding], cand: Sequence[Finding], pairs: Sequence[tuple[int, int]], t: Tables
                    ) -> tuple[set[int], set[int], tuple[set[int], set[int]]]:
    """``(reference facts scored as missed, candidate facts not counted, (reference, candidate) facts of a device
    placed falsely)`` (rung 2c). With ``downgrade_credit`` 0 a critical reference finding that the
    candidate states ``downgrade_level`` or more grades lower is a miss, and the candidate's statement of it is left out
    of its precision (neither credit nor blame): told it can wait, the clinician does not act, as if it were not
    reported. A malpositioned tube or line that the candidate calls in satisfactory position without saying where its
    tip is: the device's two facts (the device, its position) likewise; when the candidate places the tip elsewhere, a
    false position, the device's fact earns nothing on either side (the report's only message about it is wrong)."""
    missed: set[int] = set()
    not_said: set[int] = set()
    if t.downgrade_credit == 0:
        _critical_downgrades(ref, cand, pairs, t, missed, not_said)
    false_r, false_c = _misplaced_devices(ref, cand, pairs, t, missed, not_said)
    for i, j in mimicked(ref, cand, t):
        missed.add(i)
        not_said.add(j)
    return missed, not_said, (false_r, false_c)


def _critical_downgrades(ref: Sequence[Finding], cand: Sequence[Finding], pairs: Sequence[tuple[int, int]], t: Tables,
                         missed: set[int], not_said: set[int]) -> None:
    """Adds to ``missed``/``not_said`` each critical reference finding the candidate downgrades, and its statement."""
    for i, j in pairs:
        if ref[i].present == "yes" and cand[j].present == "yes" and downgraded(ref[i], cand[j], t):
            missed.add(i)
            not_said.add(j)
    # the same process named at a lower stage ("mild venous congestion" for severe alveolar edema): a downgrade too
    paired_present = {i for i, j in pairs if cand[j].present == "yes"}
    for i, r in enumerate(ref):
        if r.present != "yes" or i in missed or i in paired_present or not is_critical(r, t):
            continue
        o, rel, _ = related_clinical(r, cand, t)
        if o is not None and rel == "generic" and downgraded(r, o, t):
            missed.add(i)
            not_said.add(next(k for k, c in enumerate(cand) if c is o))


def _misplaced_devices(ref: Sequence[Finding], cand: Sequence[Finding], pairs: Sequence[tuple[int, int]], t: Tables,
                       missed: set[int], not_said: set[int]) -> tuple[set[int], set[int]]:
    """``(reference, candidate)`` facts of a device placed falsely; adds to ``missed``/``not_said`` the facts of a
    malpositioned device the candidate calls satisfactory without saying where its tip is."""
    false_r: set[int] = set()
    false_c: set[int] = set()
    for i, j in pairs:
        r, c = ref[i], cand[j]
        if not (r.name.startswith(_MALPOSITIONED) and r.present == "yes"):
            continue
        device = r.name[len(_MALPOSITIONED):]
        ri, ci = _present_fact(ref, device), _present_fact(cand, device)
        if c.present == "yes":
            # both call it malpositioned, with the tip in different compartments: opposite instructions, a false position
            if ri is not None and ci is not None and compartments_differ(ref[ri], cand[ci], t):
                false_r.update((i, ri))
                false_c.update((j, ci))
            continue
        if c.present != "no" or ci is None:
            continue
        if "tip:" in (cand[ci].attributes.location or ""):
            false_c.add(ci)
            if ri is not None:
                false_r.add(ri)
        else:
            missed.add(i)
            not_said.update((j, ci))
            if ri is not None:
                missed.add(ri)
    return false_r, false_c


def mimicked(ref: Sequence[Finding], cand: Sequence[Finding], t: Tables) -> list[tuple[int, int]]:
    """``(reference fact, candidate fact)`` of each reference finding the candidate explains away by naming a benign mimic
    instead (the concept table's ``mimics``: "unfolded aorta" for a widened mediastinum, "old healed fractures" for
    acute ones): present in the candidate, on a compatible side, while the candidate does not name the finding itself
    and the reference does not name the mimic (then both are compared as they are)."""
    out = []
    for i, r in enumerate(ref):
        if r.present != "yes" or any(c.name == r.name and c.present == "yes" for c in cand):
            continue
        for finding, mimic in t.mimics:
            if finding != r.name or any(g.name == mimic for g in ref):
                continue
            j = next((k for k, c in enumerate(cand) if c.name == mimic and c.present == "yes"
                      and not sides_disjoint(r, c)), None)
            if j is not None:
                out.append((i, j))
                break
    return out


def stands_down(denials: Sequence[Denial]) -> bool:
    """Whether a report's normal statements include the one that stands the work-up down (:data:`STAND_DOWN`)."""
    return any(d.id == STAND_DOWN for d in denials)


def false_reassurance(ref: Sequence[Finding], cand: Sequence[Finding], to_c: Mapping[int, int], as_missed: set[int],
                      cand_dismissed: Sequence[Finding], opt: ClinicalOptions, t: Tables
                      ) -> tuple[set[int], set[int], set[int]]:
    """``(reference facts, candidate facts, reference facts whose denial weighs on precision)`` of a false reassurance
    (rung 5r): in a candidate that stands the work-up down (:data:`STAND_DOWN`, and the reference does
    not), an actionable reference finding (weight ≥ the urgent tier, 2) that the candidate mentions below its grade -- a
    critical downgrade (:func:`facts_as_missed`), a lower severity, a more generic or lesser finding, a hedge -- or
    explains away (``cand_dismissed``: :func:`~radaudit.atomic.clinical.prepare.dismissed`). The clinician is told there
    is nothing to do: as a normal statement that denies it."""
    out_r: set[int] = set()
    out_c: set[int] = set()
    row: set[int] = set()
    for i, f in enumerate(ref):
        if f.present != "yes":
            continue
        w = opt.significance.weight(f, opt.theta, opt.scorer)
        if is_critical(f, t):
            w = max(w, t.critical_tier)
        if w < 2.0:
            continue
        if i in as_missed:
            out_r.add(i)
            row.add(i)
            continue
        j = to_c.get(i)
        o, rel = (cand[j], "same") if j is not None else (None, None)
        if o is None or o.present != "yes":
            o, rel, _ = related_clinical(f, cand, t)
            j = next((k for k, c in enumerate(cand) if c is o), None) if o is not None else None
        if o is not None and o.present == "yes":
            lf, lo = finding_levels(f), finding_levels(o)
            if rel == "generic" or (lf and lo and max(lo) < max(lf)) or (o.hedged and not f.hedged):
                out_r.add(i)
                out_c.add(j)
            continue
        if any(d.name == f.name or related_as(f.name, d.name) or concept_relation(f.name, d.name, t)[0]
               for d in cand_dismissed):
            out_r.add(i)
            row.add(i)
    return out_r, out_c, row
