"""AtomiMed-clinical: AtomiMed's facts, scored so that the order of candidates is the order a radiologist gives.

**Not the paper's metric.** The paper (Chang et al., arXiv 2606.31292, Eq. 3-4) counts every fact
equally, matches attributes all-or-nothing, and scores attributes only for findings both reports
agree on. Written as small report pairs whose right order any radiologist knows, that definition
ranks many of them wrongly or as ties (issue 18): one false finding ties four when nothing else
matches (the zero floor); a missed tension pneumothorax costs what a missed granuloma costs;
"small" and "tiny" tie against "large"; a candidate that adds a correct detail the reference did not
state scores below a vaguer one; and a candidate that finds a finding but words one attribute
differently scores below one that leaves the finding out (the attribute level exists only for
findings both reports share, so silence avoids its penalty). The paper's definition stays the
registry's ``atomimed`` (:mod:`radaudit.atomic.pipeline`); this module is ``atomimed_clinical``.
Both use the same decompositions (either backend).

Definition
----------
Facts are the findings of both decompositions (:class:`~radaudit.atomic.schema.Finding`). Each
reference finding is paired with at most one candidate finding naming the same entity
(:func:`~radaudit.atomic.score.entity_similarity` ≥ θ, most similar first); an unpaired finding
reads as absent in the other report (the paper's ``unmentioned="no"``).

- **Weight** ``w(f)``: the clinical significance of the finding (:data:`SIGNIFICANCE_FILE`, four tiers
  after the ACR actionable-findings categories: immediate 4, urgent 2, follow-up 1, incidental ½),
  raised by a modifier ("tension" → immediate). A finding stated absent (a pertinent negative)
  weighs ``negative_weight · w`` (default ¼): saying "no pneumothorax" is worth less than finding one.
- **Credit** of a fact from the other report: absent–absent ``1``; present–present
  ``α + (1 − α)·a·h``; otherwise ``0``, except that a finding stated resolved against the same finding
  still present earns ``½ · (1 − |Δ|/4)`` on the whole temporal axis below (decreased ⅜, unchanged ¼,
  increased ⅛, new 0: "persistent edema" is nearer "edema has resolved" than "worsening edema").
  ``α`` = ½ (the paper's equal weight of the disease and attribute levels, Eq. 4), ``a`` the attribute
  agreement below, ``h`` = ``hedge_factor`` (¾) when one report hedges the finding ("possible pneumonia")
  and the other does not, else 1.
- **Attribute agreement** ``a`` of a paired finding, seen from the asking report: the mean over the facets the
  asking report states of a graded credit in [0, 1] (:func:`facet_credit`): location — side sets by Jaccard
  (left vs right 0), lobe/zone family met 1, a different family on the right side 0.25, not stated 0.75;
  severity/size word — ordinal distance on trace/minimal (1) < small/mild (2) < moderate (3) < large/severe
  (4), ``1 − |Δ|/3``; size — ``1 − |ln(a/b)| / ln 3`` (10 % tolerance); quantity — single/multiple equal 1,
  counts ``min/max``; temporal change — on resolved (−2) < decreased (−1) < unchanged (0) < increased (1) <
  new (2), ``1 − |Δ|/2``; morphology — per term of the asking report 1 when the other states it, 0 when the
  other states an exclusive term (calcified vs non-calcified, focal vs diffuse, ...), else ½ (another
  descriptor that does not contradict it, as if unstated), averaged. A lobe in one report and a zone it
  projects over in the other ("right middle lobe" vs "right base") count as a side without its lobe (0.75),
  not a wrong place; region families are compared by Jaccard, so naming one more family costs as naming one
  more side. A facet the other report does not state counts ½ when the reference asks (an omitted detail is
  half an error) and is **not assessed** when the candidate asks (a detail the reference did not state cannot
  be checked, so a correct extra detail is not penalised). No assessed facet → ``a`` = 1.
- **Precision / recall / F1**::

      R = (Σ_ref w·credit + κ) / (Σ_ref w + κ)      P = (Σ_cand w·credit + κ) / (Σ_cand w + κ)
      F1 = 2PR / (P + R)

  ``κ`` (default 1, the weight of one follow-up finding) is what a report gets for everything it
  leaves unsaid: it keeps scores apart when nothing matches (one false urgent finding against a
  normal reference gives P = 1/3, four give 1/9, where the paper's P is 0 for both) and gives two
  reports without findings 1, as the paper's rule for true normal studies does.

The ladder (issue 41; ``ClinicalOptions.rules``, default on)
-----------------------------------------------------------
What a present reference finding of weight ``w`` earns, by what the candidate says about it (credits are
fractions of ``w``; the tables are data files in ``radaudit/resources``, read by :mod:`radaudit.atomic.concepts`):

===  ===================================  ================================  =======================================
#    the candidate                        credit                            clinical reason
===  ===================================  ================================  =======================================
1    names it, every stated facet         1                                 finding and description are right
     agreeing (the concept table's
     descriptive, lay and
     interchangeable forms are its name)
2    names it with a wrong or missing     α + (1 − α)·a·h ∈ [½, 1); a more  found: the disease level (Eq. 4's half)
     attribute (size, extent, severity,   generic name × its credit (½-1)   is right, the description is graded
     lobe, change)
2c   names a critical finding two or      0, as rung 4, and its statement   told it can wait, the clinician does not
     more grades lower (tension/large →   is left out of precision          act: the same harm as a miss
     small, massive → trace; severe       (``downgrade_credit`` 0; a        (``clinical_criticality.yaml``); a tube
     alveolar edema → mild congestion,    tube placed elsewhere: its fact   said to lie where it does not is a false
     the same process at a lower stage),  earns 0 on both sides)            statement, worse than silence
     calls a malpositioned tube
     "satisfactory", or explains it away
     as technique
3    states a sign that implies it        the sign's σ ≤ 0.45 (default      the reader must infer the finding; some
     (silhouette sign, cephalisation,     0.4) on the base part             signs have other causes
     deep sulcus sign, hilar                                                (``clinical_signs.yaml``)
     displacement, ...)
4    says nothing about it                0                                 a miss
5    denies it: "no X", a denied more     0, and the stated or implied      the report tells the clinician it is
     generic or interchangeable finding   absence weighs                    not there: worse than silence
     ("no consolidation" for pneumonia,   ``negative_weight``·w on          (``clinical_normals.yaml``)
     "no nodule or mass" for a nodule),   precision with credit 0 (a
     a normal statement covering it       sign: ¼ of the sign's weight)
     ("lungs are clear"), or a sign the
     reference states as part of it ("no
     mediastinal shift", "trachea
     midline" against a tension
     pneumothorax)
5r   false reassurance: names an          0, and its statement counts       the report changes management the wrong
     actionable finding (weight ≥ 2)      against precision as a denial     way: the team stops as after a normal
     below its grade (2c, a lower size    (its own fact at credit 0, or     report; a downgrade that keeps the
     or severity, a lesser or generic     ``negative_weight``·w)            right next step ("small nodule, CT
     finding, a hedge) or explains it                                       suggested" for a mass) stays rung 2
     away, AND stands the work-up down
     ("no further imaging needed",
     "conservative management";
     :data:`STAND_DOWN`), where the
     reference does not
===  ===================================  ================================  =======================================

Rungs 2c, 5 and 5r after holdout4 (issue 41). Two authors of written cases disagreed on a critical downgrade: holdout3
tied "small pneumothorax, no mediastinal shift, follow-up film" for a tension pneumothorax with silence, holdout4 ranked
"small pneumothorax, no mediastinal shift, conservative management" below it. The rule taken is on management, not on
wording: a downgrade that leaves the team to decide costs a miss (2c); a report that also denies a sign of the critical
grade (5) or stands the work-up down (5r) tells the team to do nothing and ranks below silence, like a contradicting
normal statement; a downgrade that keeps the right next step is imprecise (2). holdout3's severity-downgrade-01 (its
candidate denies the shift) now scores just below silence and fails; that is this rule, not an accident.

After holdout5 (issue 41, paraphrase and severity; its failures read on 2026-12-02):

- **Mimics (rung 2c).** A benign finding named *instead of* the reference's finding explains the same shadow away
  (the concept table's ``mimics``: an unfolded aorta for a widened mediastinum, old healed fractures for acute ones):
  the finding is a miss and the mimic's statement is left out of precision, so the report ties silence
  (:func:`_mimicked`). Naming the finding with the mimic as its possible cause is reporting it.
- **Under-calls.** For an actionable reference finding (weight ≥ 2) a grade below the reference's costs
  :data:`UNDERCALL_FACTOR` (1.5) per grade, an over-call 1 (module constant, reason there); a range that reaches the
  reference's grade is not an under-call. An over-call *into* a critical grade also claims the critical part, which the
  candidate earns only when the reference is critical too (a false critical alarm), as before.
- **Tip compartments.** Both reports calling a tube or line malpositioned, with its tip in different compartments
  (airway, digestive, venous, heart, pulmonary artery: ``clinical_criticality.yaml``), give opposite instructions: the
  candidate's device and malposition facts are a false position, credit 0 on both sides (:func:`_as_missed`).
- **Paraphrase.** An *airspace* opacity earns the full rung against a consolidation (a relation with
  ``when_morphology``; a bare opacity keeps its generic credit); a fissure named beside a shared lobe is its edge, not a
  second place (:data:`_BOUNDARIES`); a folded sign gives the finding its grade (:func:`_fold_signs`); abbreviations,
  contrasts, number words and grade words are rewritten by the concept table (:func:`~radaudit.atomic.concepts.rewrite`).

So a missed or denied finding pulls recall to its floor ``κ/(w + κ)`` and leaves precision at best unchanged,
while any rung ≥ 2c raises recall at an equal or smaller cost to precision: a report that mentions the finding
scores above one that misses or denies it (tested on every finding of the concept table). The other way round
(the reference states a sign, the candidate names the finding it implies) the sign is accounted for (credit 1).
"Both" and "bilaterally" are read as bilateral (:func:`_prepare`), and findings written before an IMPRESSION header
without a FINDINGS header are read as the findings (:func:`clinical_text`).

Signs a report states beside the finding they imply (same report, compatible side, the finding not hedged) are part
of that finding's description, not second facts (:func:`_fold_signs`): "a pleural line with no markings beyond it,
a small pocket of air" is a small pneumothorax, "a massive effusion with white-out and contralateral shift" one massive
effusion; a sign the other report states too is compared as it is. A finding the report itself explains away as
technique ("likely related to supine AP technique") is not asserted (:func:`_dismissed`). The clinical decomposer
reads a report after the concept table's ``rewrites`` (lay words for devices and anatomy: "breathing tube", "where the
windpipe divides"; :class:`ClinicalRuleDecomposer`).

Critical findings (``clinical_criticality.yaml``: tension, a large pneumothorax, free intraperitoneal air, a
malpositioned tube or line, a large or massive collection, complete collapse, severe edema) weigh the immediate
tier (4); the part above the name's tier is earned only by a report that states the critical grade too.

Context (``clinical_context.yaml``, :func:`context_factor`): with the patient's age, sex, indication and history,
a finding the context explains (expected) weighs ``expected_factor`` (½) of its weight in both reports, and a finding
the context makes dangerous (urgent) is raised to its rule's tier. A rule's words count only where the context affirms
them ("no known trauma", "denies vomiting" do not fire; :func:`~radaudit.atomic.concepts.affirmed`), an injury or an
operation weeks or years ago explains (expected) rather than alarms, and a finding the history itself documents as
known, stable or treated is expected (:func:`history_findings`). No context changes nothing (tested).

The trace (:func:`clinical_trace`) has one row per fact and direction: its weight, credit, the
attribute agreement and the facets compared, so every score can be checked by hand.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from radaudit.atomic.compare import location_key
from radaudit.atomic.concepts import (
    ContextRule,
    Denial,
    Tables,
    check_context,
    clinical_vocabulary,
    find_denials,
    load_tables,
    rewrite,
)
from radaudit.atomic.decompose import RuleDecomposer
from radaudit.atomic.lexicon import GENERIC_CREDIT, morphology_terms, related_as
from radaudit.atomic.schema import ATTRIBUTES, Finding
from radaudit.atomic.score import align_findings, entity_similarity, f1, name_similarity, normalize_name
from radaudit.errors import ParamsError
from radaudit.metrics.base import check_pairs
from radaudit.text.attributes import extract_location, extract_quantity, extract_severity, extract_size, extract_temporal
from radaudit.text.sections import split_sections

__all__ = ["Significance", "load_significance", "SIGNIFICANCE_FILE", "facet_credit", "attribute_agreement",
           "pair_entities", "clinical_scores", "CLINICAL_COLUMNS", "ClinicalOptions", "ClinicalRuleDecomposer",
           "history_findings"]

#: The default significance table (package resource).
SIGNIFICANCE_FILE = "clinical_significance.yaml"

#: Per-pair columns of :func:`clinical_scores`.
CLINICAL_COLUMNS: tuple[str, ...] = ("precision", "recall", "f1", "w_reference", "w_candidate", "credit_reference",
                                     "credit_candidate", "n_missed", "n_false", "n_paired")


@dataclass(frozen=True)
class Significance:
    """Weights of findings by name (module docstring). ``weights``: normalised name → weight;
    ``default``: weight of a name not in the table; ``modifiers``: ``(facet, term, weight)`` that
    raise a finding's weight when its facet contains the term."""

    weights: dict[str, float]
    default: float
    modifiers: tuple[tuple[str, str, float], ...] = ()
    source: str = ""

    def weight(self, finding: Finding, theta: float = 0.8, scorer: str = "ratio") -> float:
        """The finding's weight: its name's tier (exact, else the most similar name ≥ ``theta``, else
        ``default``), raised by any matching modifier (the sum of :meth:`parts`)."""
        return sum(w for _, w in self.parts(finding, theta, scorer))

    def parts(self, finding: Finding, theta: float = 0.8, scorer: str = "ratio") -> list[tuple[str, float]]:
        """The weight split into ``[("", base), ("<facet>:<term>", raise), ...]``: the name's tier, then
        what each matching modifier adds to reach its tier. A tension pneumothorax is a pneumothorax
        (urgent, 2) plus "tension" (2 more, to immediate): a candidate that reports the pneumothorax
        without the tension earns the first part and misses the second."""
        base = self._name_weight(finding.name, theta, scorer)
        out, total = [("", base)], base
        for facet, term, mw in self.modifiers:
            value = getattr(finding.attributes, facet, None)
            if value and term in value.lower() and mw > total:
                out.append((f"{facet}:{term}", mw - total))
                total = mw
        return out

    def _name_weight(self, name: str, theta: float, scorer: str) -> float:
        key = normalize_name(name)
        if key in self.weights:
            return self.weights[key]
        best, best_s = None, -1.0
        for k in self.weights:
            s = entity_similarity(name, k, scorer)
            if s >= theta and s > best_s:
                best, best_s = k, s
        return self.weights[best] if best is not None else self.default


def load_significance(path: str | Path | None = None) -> Significance:
    """Read a significance table (YAML, format of the shipped ``clinical_significance.yaml``); ``None``:
    the shipped one. Errors name the problem: unknown tier, a name in two tiers, a weight that is not
    a positive number."""

    if path is None:
        text = resources.files("radaudit.resources").joinpath(SIGNIFICANCE_FILE).read_text(encoding="utf-8")
        source = f"radaudit/resources/{SIGNIFICANCE_FILE}"
    else:
        p = Path(path)
        if not p.is_file():
            raise ParamsError(f"significance table {str(p)!r} is not a file; pass a YAML like "
                              f"radaudit/resources/{SIGNIFICANCE_FILE} or None for the shipped one.")
        text, source = p.read_text(encoding="utf-8"), str(p)
    return _parse_significance(text, source)


@functools.lru_cache(maxsize=8)
def _parse_significance(text: str, source: str) -> Significance:
    import yaml

    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not {"weights", "tiers", "default"} <= set(doc):
        raise ParamsError(f"{source}: a significance table needs the keys weights, tiers and default.")
    tiers = doc["weights"]
    for t, w in tiers.items():
        if not isinstance(w, (int, float)) or isinstance(w, bool) or w <= 0:
            raise ParamsError(f"{source}: weight of tier {t!r} must be a positive number, got {w!r}.")
    weights: dict[str, float] = {}
    for tier, names in doc["tiers"].items():
        if tier not in tiers:
            raise ParamsError(f"{source}: tier {tier!r} has no weight; known tiers: {', '.join(tiers)}.")
        for n in names or []:
            k = normalize_name(str(n))
            if k in weights:
                raise ParamsError(f"{source}: {n!r} is listed in two tiers; keep one.")
            weights[k] = float(tiers[tier])
    if doc["default"] not in tiers:
        raise ParamsError(f"{source}: default {doc['default']!r} is not a tier ({', '.join(tiers)}).")
    mods = []
    for m in doc.get("modifiers") or []:
        (facet, term), tier = [(k, v) for k, v in m.items() if k != "tier"][0], m.get("tier")
        if facet not in ATTRIBUTES or tier not in tiers:
            raise ParamsError(f"{source}: modifier {m!r} needs a facet of {ATTRIBUTES} and a known tier.")
        mods.append((facet, str(term).lower(), float(tiers[tier])))
    return Significance(weights, float(tiers[doc["default"]]), tuple(mods), source)


# ------------------------------------------------------------------------------------- graded facets

_SEV4 = {1: 1, 2: 1, 3: 2, 4: 3, 5: 4}  # SEVERITY_SCALE (trace..severe) -> tiny/small/moderate/large
_TEMPORAL_AXIS = {"resolved": -2, "decreased": -1, "unchanged": 0, "persistent": 0, "increased": 1, "new": 2}
_REGION_MISS = 0.25   # right side, wrong lobe/zone
_PART_OMITTED = 0.75  # side stated, lobe/zone not (reference asks)
_OMITTED = 0.5        # the facet is not stated at all (reference asks)


_COMPLETE = re.compile(r"\b(?:complete|total|white-?out)\b", re.IGNORECASE)


def _severity_levels(value: str) -> list[float]:
    """Levels on the four-step scale; "complete"/"total" (collapse, opacification) is the top step."""
    out = [(_SEV4[s.low] + _SEV4[s.high]) / 2 for s in extract_severity(value)]
    return out + [4.0] if _COMPLETE.search(value) else out


#: lobes and the frontal-film zones they project over (a lobe named in one report, a zone in the other: a
#: consistent description at another granularity, not a wrong place). The middle lobe and the lingula fill the
#: mid and lower zones beside the heart ("right base" is said of middle-lobe pneumonia); the lower lobes' superior
#: segments reach the mid zone; the left upper lobe holds the lingula. Pairs of one family already agree.
_LOBE_ZONES: dict[str, frozenset[str]] = {
    "RML": frozenset({"mid_zone", "lower_zone", "base", "cardiophrenic_angle", "infrahilar", "perihilar"}),
    "lingula": frozenset({"mid_zone", "lower_zone", "base", "cardiophrenic_angle", "infrahilar", "perihilar"}),
    "RLL": frozenset({"mid_zone", "infrahilar"}),
    "LLL": frozenset({"mid_zone", "infrahilar"}),
    "LUL": frozenset({"mid_zone", "perihilar", "suprahilar"}),
    "RUL": frozenset({"suprahilar"}),
}


def _zone_consistent(expected: str, found: str) -> bool:
    """Whether a lobe named in one value and a zone named in the other are the same place seen at two
    granularities (:data:`_LOBE_ZONES`; the sides are compared separately)."""
    e, f = ({loc.value for loc in extract_location(v)} for v in (expected, found))
    return any(b in _LOBE_ZONES.get(a, ()) or a in _LOBE_ZONES.get(b, ()) for a in e for b in f)


#: "both" and "bilaterally" name the two sides ("free air under both hemidiaphragms" is bilateral free air; issue 41,
#: after holdout4): read as "bilateral" by :func:`_prepare` (the rules' path only; ``rules=False`` is unchanged)
_BOTH_SIDES = re.compile(r"\b(?:both|bilaterally|on\s+both\s+sides)\b", re.IGNORECASE)


#: region families that mark a lobe's edge, not a place of its own (issue 41, paraphrase): "airspace opacification of the
#: right upper lobe, bounded inferiorly by the horizontal fissure" is in one place, the right upper lobe. Named beside a
#: region both reports share, a boundary is not counted as one more region; named alone ("fluid in the fissure") it is
#: the place.
_BOUNDARIES = frozenset({"fissure"})


def _location_credit(expected: str, found: str, extra_neutral: bool) -> float | None:
    # a device's tip ("tip: right atrium") is compared as a region, never as the device's side
    e_sides, e_regions = location_key(expected.split("tip:")[0])[0], location_key(expected)[1]
    if not e_sides and not e_regions:
        return None
    f_sides, f_regions = location_key(found.split("tip:")[0])[0], location_key(found)[1]
    if e_regions & f_regions:
        f_regions = f_regions - (_BOUNDARIES - e_regions)  # "RUL opacity bounded by the fissure": one place, not two
    if e_sides and f_sides:
        side = len(e_sides & f_sides) / len(e_sides | f_sides)
    elif e_sides:
        side = 1.0 if extra_neutral else _PART_OMITTED
    else:
        side = 1.0
    if e_regions and f_regions:
        if e_regions & f_regions:  # shared regions by Jaccard: one more lobe family named costs as one more side
            region = len(e_regions & f_regions) / len(e_regions | f_regions)
        elif _zone_consistent(expected, found):  # "right middle lobe" vs "right base": a lobe and its zone
            region = 1.0 if extra_neutral else _PART_OMITTED
        else:
            region = _REGION_MISS
    elif e_regions:
        region = 1.0 if extra_neutral else _PART_OMITTED
    else:
        region = 1.0
    return side * region


#: what an under-call costs per grade, relative to an over-call of the same distance, for an actionable finding (weight
#: >= the urgent tier, 2; issue 41, severity): calling a moderate pneumothorax small can leave it undrained, calling it
#: large drains one that might have been watched; the first harm is the patient's, the second a procedure's. So
#: ``1 − 1.5·Δ/3`` below the reference's grade and ``1 − Δ/3`` above it. A range that reaches the reference's grade
#: ("small to moderate" for moderate) is not an under-call (symmetric, as before).
UNDERCALL_FACTOR = 1.5


def _severity_top(value: str) -> float:
    """The highest grade a severity value reaches on the four-step scale (a range's upper end)."""
    tops = [float(_SEV4[s.high]) for s in extract_severity(value)]
    return max([*tops, *([4.0] if _COMPLETE.search(value) else [])], default=0.0)


def _severity_credit(expected: str, found: str, under: float = 1.0) -> float | None:
    """``1 − k·|Δ|/3`` on the four-step scale, Δ between the highest stated grades; ``k`` = ``under`` when every grade
    ``found`` states lies below ``expected``'s (an under-call), else 1."""
    e = _severity_levels(expected)
    if not e:
        return None
    f = _severity_levels(found)
    if not f:
        return 0.0
    k = under if _severity_top(found) < max(e) else 1.0
    return max(0.0, 1.0 - k * abs(max(e) - max(f)) / 3.0)


def _size_credit(expected: str, found: str) -> float | None:
    e = extract_size(expected)
    if not e:
        return None
    f = extract_size(found)
    if not f:
        return 0.0
    a, b = max(s.value_mm for s in e), max(s.value_mm for s in f)
    if a <= 0 or b <= 0:
        return 1.0 if a == b else 0.0
    if abs(a - b) <= max(1.0, 0.1 * max(a, b)):
        return 1.0
    return max(0.0, 1.0 - abs(math.log(a / b)) / math.log(3.0))


def _quantity_credit(expected: str, found: str) -> float | None:
    e = extract_quantity(f"{expected} findings", articles=False)
    if not e:
        return None
    f = extract_quantity(f"{found} findings", articles=False)
    if not f:
        return 0.0
    qe, qf = e[0], f[0]
    if qe.value != qf.value:
        return 0.0
    if qe.count and qf.count:
        return min(qe.count, qf.count) / max(qe.count, qf.count)
    return 1.0


def _temporal_axis(value: str) -> list[int]:
    """Positions of ``value``'s temporal words on :data:`_TEMPORAL_AXIS` (a bare "increased"/"decreased", an
    LLM's short value, is read as a change: "has increased")."""
    return [_TEMPORAL_AXIS[t.value] for t in (extract_temporal(value) or extract_temporal(f"has {value}"))]


def _temporal_credit(expected: str, found: str, span: float = 2.0) -> float | None:
    """``1 − |Δ|/span`` on the temporal axis (the nearest pair of stated changes), 0 at and beyond ``span``."""
    e = _temporal_axis(expected)
    if not e:
        return None
    f = _temporal_axis(found)
    if not f:
        return 0.0
    return max(max(0.0, 1.0 - abs(x - y) / span) for x in e for y in f)


#: morphology terms that cannot describe the same thing (a calcified nodule is not a non-calcified one; a focal
#: opacity is not a diffuse one); any other two descriptors can both be true ("hazy" and "interstitial" edema)
_MORPHOLOGY_EXCLUSIVE: frozenset[frozenset[str]] = frozenset(frozenset(p) for p in (
    ("calcified", "noncalcified"), ("spiculated", "well-defined"), ("ill-defined", "well-defined"),
    ("focal", "diffuse"), ("focal", "multifocal"), ("loculated", "layering"), ("interstitial", "airspace"),
    ("linear", "nodular"), ("linear", "round"), ("plate-like", "nodular"), ("plate-like", "round"),
    ("cystic", "dense"), ("lobar", "segmental"),
))


def _morphology_credit(expected: str, found: str) -> float | None:
    """Per term of ``expected``: 1 when ``found`` has it, 0 when ``found`` has a term exclusive with it
    (:data:`_MORPHOLOGY_EXCLUSIVE`), else ½ (another descriptor that does not contradict it counts as
    one not stated: "hazy" against "interstitial" edema); the mean over the terms."""
    e = {t for t, _, _ in morphology_terms(expected)}
    if not e:
        return None
    f = {t for t, _, _ in morphology_terms(found)}

    def one(term: str) -> float:
        if term in f:
            return 1.0
        if any(frozenset((term, o)) in _MORPHOLOGY_EXCLUSIVE for o in f):
            return 0.0
        return _OMITTED

    return sum(one(t) for t in sorted(e)) / len(e)


_GRADED = {"location": _location_credit, "severity": _severity_credit, "size": _size_credit,
           "quantity": _quantity_credit, "temporal": _temporal_credit, "morphology": _morphology_credit}


def facet_credit(facet: str, expected: str, found: str | None, *, extra_neutral: bool = False,
                 theta: float = 0.8, under: float = 1.0) -> float | None:
    """Graded agreement in [0, 1] of ``found`` with ``expected`` for one facet (module docstring).

    ``found`` ``None``: the other report does not state the facet → ½, or ``None`` (not assessed)
    with ``extra_neutral=True`` (the candidate's extra detail). ``under``: the severity facet's cost factor of an
    under-call (:data:`UNDERCALL_FACTOR` for an actionable reference finding; 1: symmetric). Free text the extractors
    cannot read falls back to name similarity ≥ ``theta`` (1 or 0), as :func:`~radaudit.atomic.compare.values_match`.

    >>> facet_credit("severity", "large", "moderate"), facet_credit("severity", "large", "small")
    (0.6666666666666667, 0.33333333333333337)
    >>> facet_credit("location", "right lower lobe", "right"), facet_credit("location", "right", "right lower lobe")
    (0.75, 1.0)
    >>> facet_credit("location", "right lower lobe", "left lower lobe")
    0.0
    """
    if facet not in _GRADED:
        raise ParamsError(f"facet={facet!r} is not one of {', '.join(ATTRIBUTES)}.")
    if found is None or not found.strip():
        return None if extra_neutral else _OMITTED
    fn = _GRADED[facet]
    if facet == "location":
        credit = fn(expected, found, extra_neutral)
    elif facet == "severity":
        credit = fn(expected, found, under)
    else:
        credit = fn(expected, found)
    if credit is None:
        credit = 1.0 if name_similarity(expected, found) >= theta else 0.0
    return float(credit)


def _facets(f: Finding) -> dict[str, str]:
    """The stated facets; "complete"/"total" written as morphology ("complete collapse") is also a severity."""
    out = f.attributes.stated()
    if "severity" not in out and _COMPLETE.search(out.get("morphology", "")):
        out["severity"] = out["morphology"]
    return out


def attribute_agreement(asking: Finding, answering: Finding, *, extra_neutral: bool, theta: float = 0.8,
                        context: Sequence[Finding] = (), under: float = 1.0) -> tuple[float, dict[str, float]]:
    """``(a, {facet: credit})``: the mean graded credit over the facets ``asking`` states (module
    docstring); facets not assessed are left out; ``a`` = 1 when none is assessed.

    ``context``: other findings of the answering report that are more specific/generic forms of the
    answering finding (:func:`~radaudit.atomic.lexicon.related_as`): a facet the answering finding
    leaves empty is read from them ("right lower lobe opacity may represent pneumonia": the
    pneumonia is in the right lower lobe)."""
    credits: dict[str, float] = {}
    answers = _facets(answering)
    for facet, value in _facets(asking).items():
        other = answers.get(facet)
        if other is None:
            other = next((getattr(c.attributes, facet) for c in context if getattr(c.attributes, facet)), None)
        c = facet_credit(facet, value, other, extra_neutral=extra_neutral, theta=theta, under=under)
        if c is not None:
            credits[facet] = c
    a = sum(credits.values()) / len(credits) if credits else 1.0
    return a, credits


def pair_entities(reference: Sequence[Finding], candidate: Sequence[Finding], theta: float = 0.8,
                  scorer: str = "ratio") -> list[tuple[int, int]]:
    """One-to-one pairs ``(i, j)`` of reference and candidate findings naming the same entity
    (:func:`~radaudit.atomic.score.entity_similarity` ≥ ``theta``), most similar first; ties by
    reference order, then candidate order: the paper's alignment (:func:`~radaudit.atomic.score.align_findings`)
    over every finding, present or absent."""
    pairs = align_findings([f.name for f in reference], [f.name for f in candidate], [True] * len(reference),
                           [True] * len(candidate), theta=theta, scorer=scorer)
    return [(i, j) for i, j, _ in pairs]


@dataclass(frozen=True)
class ClinicalOptions:
    """Constants of AtomiMed-clinical (module docstring); the defaults are the documented ones."""

    kappa: float = 1.0
    alpha: float = 0.5
    negative_weight: float = 0.25
    hedge_factor: float = 0.75
    theta: float = 0.8
    scorer: str = "ratio"
    significance: Significance = field(default_factory=load_significance)
    #: the issue-41 rules (ladder: signs, normal statements, critical downgrades; the concept table; critical weights).
    #: False: the definition before issue 41, exactly (kept to show that nothing else moved; tested).
    rules: bool = True

    def __post_init__(self) -> None:
        for name, lo, hi in (("kappa", 0.0, math.inf), ("alpha", 0.0, 1.0), ("negative_weight", 0.0, 1.0),
                             ("hedge_factor", 0.0, 1.0), ("theta", 0.0, 1.0)):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise ParamsError(f"{name} must be a number in [{lo}, {hi}], got {v!r}.")
        if self.kappa == 0:
            raise ParamsError("kappa must be > 0: with kappa = 0 two reports without findings have no score.")



_RESOLVED_NEAR = 0.5  # a change against "resolved" earns half its whole-axis temporal credit (module docstring)


def other_resolved(f: Finding) -> bool:
    """Whether an absent finding is stated as resolved (its temporal facet reads "resolved")."""
    return f.present == "no" and bool(f.attributes.temporal) and \
        (_temporal_credit("resolved", f.attributes.temporal) or 0.0) == 1.0


def _sides_disjoint(a: Finding, b: Finding) -> bool:
    # a device's tip ("tip: right atrium") names where it ends, not its side
    la = (a.attributes.location or "").split("tip:")[0]
    lb = (b.attributes.location or "").split("tip:")[0]
    if not la.strip() or not lb.strip():
        return False
    sa, sb = location_key(la)[0], location_key(lb)[0]
    return bool(sa and sb and not sa & sb)


def _related(f: Finding, others: Sequence[Finding]) -> tuple[Finding | None, str | None]:
    """The first present finding of ``others`` that is a more specific / more generic form of ``f``."""
    for rel in ("specific", "generic"):
        for o in others:
            if o.present == "yes" and related_as(f.name, o.name) == rel and not _sides_disjoint(f, o):
                return o, rel
    return None, None


def _credit(asking: Finding, other: Finding | None, relation: str | None, *, reference_side: bool,
            parts: list[tuple[str, float]], opt: ClinicalOptions, others: Sequence[Finding] = (),
            generic_credit: float | None = None, base_factor: float = 1.0, tables: Tables | None = None
            ) -> tuple[float, float | None, dict[str, float]]:
    """``(credit, attribute agreement, facet credits)`` of one fact (module docstring). ``generic_credit``: the
    concept table's credit of a generic relation (default :data:`~radaudit.atomic.lexicon.GENERIC_CREDIT`);
    ``base_factor``: the critical-downgrade factor on the base part; ``tables``: the issue-41 tables (a
    ``critical:`` part is earned when the other finding is critical too)."""
    other_present = other is not None and other.present == "yes"
    if asking.present == "no" or (other is not None and other.present == "no" and other_resolved(other)):
        # absent in one report, present in the other: no credit, except that a report which says the
        # finding resolved is nearer one that says it decreased than one that says it is unchanged
        if not other_present and asking.present == "no":
            return 1.0, None, {}
        resolved, changed = (asking, other) if asking.present == "no" else (other, asking)
        if changed is None or changed.present != "yes" or not changed.attributes.temporal or \
                not other_resolved(resolved):
            return 0.0, None, {}
        # graded over the whole axis (resolved -2 .. new +2), so that a finding called persistent is nearer
        # the resolved one than a finding called worse: decreased 3/4, unchanged 1/2, increased 1/4, new 0
        c = _temporal_credit(resolved.attributes.temporal or "", changed.attributes.temporal, span=4.0)
        return _RESOLVED_NEAR * (c or 0.0), None, {"temporal": c or 0.0}
    if not other_present or _sides_disjoint(asking, other):
        return 0.0, None, {}  # not reported, or reported on the other side (a different finding)

    context = [o for o in others if o is not other and o.present == "yes" and related_as(other.name, o.name)]
    # an actionable reference finding under-called costs more than over-called (UNDERCALL_FACTOR; issue-41 rules only)
    under = UNDERCALL_FACTOR if tables is not None and reference_side and sum(w for _, w in parts) >= 2.0 else 1.0
    a, credits = attribute_agreement(asking, other, extra_neutral=not reference_side, theta=opt.theta,
                                     context=context, under=under)
    if not reference_side:
        # the candidate's details: only one worse than leaving it out is held against it (module docstring)
        credits = {k: (c if c < _OMITTED else 1.0) for k, c in credits.items()}
        a = sum(credits.values()) / len(credits) if credits else 1.0
    h = opt.hedge_factor if reference_side and asking.hedged != other.hedged else 1.0
    base = opt.alpha + (1 - opt.alpha) * a * h
    if relation == "generic":
        base *= generic_credit if generic_credit is not None else GENERIC_CREDIT.get(" ".join(other.name.lower().split()),
                                                                                     0.5)
    total = sum(w for _, w in parts)
    earned = parts[0][1] * base * base_factor
    for label, w in parts[1:]:
        facet, term = label.split(":", 1)
        if facet == "critical":
            earned += w * (1.0 if tables is not None and is_critical(other, tables) else 0.0)
            continue
        value = getattr(other.attributes, facet, None)
        earned += w * (1.0 if value and term in value.lower() else 0.0)
    return earned / total, a, credits


# ------------------------------------------------------------------------------------- issue 41: the ladder


def _levels(f: Finding) -> list[float]:
    return _severity_levels(_facets(f).get("severity", ""))


def is_critical(f: Finding | None, tables: Tables | None = None) -> bool:
    """Whether a present finding meets a criterion of the critical-findings table (``clinical_criticality.yaml``):
    always (free intraperitoneal air, a malpositioned tube), a severity at or above a level (a large pneumothorax,
    a massive effusion: "complete"/"white-out" is the top level) or a morphology term (tension)."""
    if f is None or f.present != "yes":
        return False
    t = tables or load_tables()
    for rule in t.critical:
        if rule.finding != f.name:
            continue
        kind, value = rule.when
        if kind == "always":
            return True
        if kind == "severity":
            lv = _levels(f)
            if lv and max(lv) >= value:
                return True
        if kind == "morphology" and value in {x for x, _, _ in morphology_terms(f.attributes.morphology or "")}:
            return True
    return False


def _downgraded(ref: Finding, cand: Finding, t: Tables) -> bool:
    """A critical reference finding that the candidate states at a grade of ``downgrade_level`` or less."""
    if not is_critical(ref, t) or is_critical(cand, t):
        return False
    lv = _levels(cand)
    return bool(lv) and max(lv) <= t.downgrade_level


def _one_grade_overcall(cand: Finding, ref: Finding | None, t: Tables) -> bool:
    """A candidate finding at a critical grade (large) whose paired reference finding states the same finding one grade
    below it (moderate), and not critical by any criterion: an overcall by one step (issue 41, after holdout6). The
    candidate's statement then weighs as the reference's does - the overcall costs its severity facet only, as
    imprecision, and not the critical part a false critical report carries (a moderate pneumothorax called large is
    drained either way; a small one called large, or a simple one called tension, is still a false critical finding)."""
    if ref is None or ref.present != "yes" or ref.name != cand.name or is_critical(ref, t):
        return False
    lc, lr = _levels(cand), _levels(ref)
    return bool(lc) and bool(lr) and max(lc) - max(lr) <= 1 and not _morphology_critical(cand, t)


def _morphology_critical(f: Finding, t: Tables) -> bool:
    """Whether ``f`` meets a morphology criterion of the critical table (tension)."""
    terms = {x for x, _, _ in morphology_terms(f.attributes.morphology or "")}
    return any(r.finding == f.name and r.when[0] == "morphology" and r.when[1] in terms for r in t.critical)


def _context_rules(context: Mapping[str, Any] | None, history: bool = False) -> list[ContextRule]:
    """The context rules ``context`` matches; ``history``: also the rule of the findings its history documents
    (:func:`history_findings`)."""
    if not context:
        return []
    rules = [r for r in load_tables().context_rules if r.matches(context)]
    known = history_findings(str(context.get("history") or "")) if history else frozenset()
    if known:
        rules.append(ContextRule("history-documents-finding", None, None, None, None, None, known, None, "expected",
                                 0.0, "a finding the history already documents as known, stable or treated"))
    return rules


@functools.lru_cache(maxsize=1024)
def history_findings(history: str) -> frozenset[str]:
    """The findings a patient's history documents as already known (``clinical_context.yaml``, ``history_documents``):
    stated present, not hedged, in a sentence with a cue of chronicity ("known, unchanged cardiomegaly", "adenopathy
    stable for 5 years", "rib fractures in a car accident two months ago") and none of novelty ("new", "enlarging").
    A finding the team already knows costs less when a report leaves it out (an expected finding).

    >>> sorted(history_findings("dilated cardiomyopathy with known, unchanged cardiomegaly"))
    ['cardiomegaly']
    >>> sorted(history_findings("new cardiomegaly on last week's film")), sorted(history_findings("fall today"))
    ([], [])
    """
    t = load_tables()
    if not history.strip() or t.history_cue is None:
        return frozenset()
    out = set()
    for f in _history_decomposer().decompose_one(history):
        ev = f.evidence or ""
        if f.present == "yes" and not f.hedged and t.history_cue.search(ev) and \
                not (t.history_cue_not is not None and t.history_cue_not.search(ev)):
            out.add(t.aliases.get(normalize_name(f.name), f.name))
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def _history_decomposer() -> RuleDecomposer:
    return ClinicalRuleDecomposer(findings=clinical_vocabulary(), sections=False)


def context_factor(f: Finding, total: float, rules: Sequence[ContextRule]) -> float:
    """The factor a matched context rule puts on finding ``f``'s weight ``total`` (``clinical_context.yaml``): an
    urgent rule raises the weight to its tier (never lowers it), then any expected rule (whose ``max_level`` the
    finding's stated grade does not exceed) multiplies it by ``expected_factor`` (once). No rule naming the finding:
    1."""
    hits = [r for r in rules if f.name in r.findings]
    if not hits:
        return 1.0
    factor = 1.0
    urgent = [r.tier for r in hits if r.effect == "urgent"]
    if urgent and total > 0 and max(urgent) > total:
        factor = max(urgent) / total
    lv = _levels(f)
    if any(r.effect == "expected" and (r.max_level is None or not lv or max(lv) <= r.max_level) for r in hits):
        factor *= load_tables().expected_factor
    return factor


def _prepare(findings: Sequence[Finding], t: Tables) -> list[Finding]:
    """Names mapped to the concept table's canonical names (an LLM's "hyperexpansion"), stated-absent pure signs
    dropped ("no deep sulcus sign" adds nothing the finding's own negation does not), findings explained away as
    technique dropped (:func:`_dismissed`), morphology terms read as the concept table's same term ("linear" atelectasis
    is plate-like), morphology implicit in a form added ("airspace disease" is an airspace opacity)."""
    out = []
    for f in findings:
        name = t.aliases.get(normalize_name(f.name), f.name)
        if (name in t.pure_signs and f.present == "no") or _dismissed(f):
            continue
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


#: a finding explained away in its own sentence as technique, projection or artifact ("the mediastinum appears
#: prominent, likely related to supine AP technique"): the report does not assert it (clinical usage)
_DISMISSED = re.compile(
    r"\b(?:(?:likely|probably|presumably|most\s+likely|may\s+be|could\s+be|is|are|possibly)\s+)?(?:related|due|"
    r"attributable|attributed|secondary)\s+to\s+(?:the\s+)?(?:supine|ap|portable|projection\w*|technique|technical|"
    r"positioning|patient\s+positioning|rotation|(?:patient\s+)?rotation|low\s+lung\s+volumes|poor\s+inspiration|"
    r"shallow\s+inspiration|overlying\s+(?:soft\s+tissues?|breast\s+tissue)|artifact|artefact)"
    r"|\b(?:likely|probably|presumably|most\s+likely)\s+(?:technical|projectional|artifactual|artefactual|positional)\b",
    re.IGNORECASE)


def _dismissed(f: Finding) -> bool:
    """Whether a present finding is explained away as technique in the sentence that states it (:data:`_DISMISSED`)."""
    return f.present == "yes" and bool(f.evidence) and bool(_DISMISSED.search(f.evidence or ""))


def _fold_signs(findings: list[Finding], other: Sequence[Finding], t: Tables) -> list[Finding]:
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
                     and (f.name == "mediastinal shift" or not _sides_disjoint(f, g))), None) if f.present == "yes" else None
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


def _as_missed(ref: Sequence[Finding], cand: Sequence[Finding], pairs: Sequence[tuple[int, int]], t: Tables
               ) -> tuple[set[int], set[int], tuple[set[int], set[int]]]:
    """``(reference facts scored as missed, candidate facts not counted, (reference, candidate) facts of a device
    placed falsely)`` (module docstring, rung 2c). With ``downgrade_credit`` 0 a critical reference finding that the
    candidate states ``downgrade_level`` or more grades lower is a miss, and the candidate's statement of it is left out
    of its precision (neither credit nor blame): told it can wait, the clinician does not act, as if it were not
    reported. A malpositioned tube or line that the candidate calls in satisfactory position without saying where its
    tip is: the device's two facts (the device, its position) likewise; when the candidate places the tip elsewhere, a
    false position, the device's fact earns nothing on either side (the report's only message about it is wrong)."""
    missed: set[int] = set()
    not_said: set[int] = set()
    false_r: set[int] = set()
    false_c: set[int] = set()
    if t.downgrade_credit == 0:
        for i, j in pairs:
            if ref[i].present == "yes" and cand[j].present == "yes" and _downgraded(ref[i], cand[j], t):
                missed.add(i)
                not_said.add(j)
        # the same process named at a lower stage ("mild venous congestion" for severe alveolar edema): a downgrade too
        paired_present = {i for i, j in pairs if cand[j].present == "yes"}
        for i, r in enumerate(ref):
            if r.present != "yes" or i in missed or i in paired_present or not is_critical(r, t):
                continue
            o, rel, _ = _related_issue41(r, cand, t)
            if o is not None and rel == "generic" and _downgraded(r, o, t):
                missed.add(i)
                not_said.add(next(k for k, c in enumerate(cand) if c is o))
    for i, j in pairs:
        r, c = ref[i], cand[j]
        if r.name.startswith("malpositioned ") and r.present == "yes" and c.present == "yes":
            # both call it malpositioned, with the tip in different compartments: opposite instructions, a false position
            device = r.name[len("malpositioned "):]
            ri = next((k for k, f in enumerate(ref) if f.name == device and f.present == "yes"), None)
            ci = next((k for k, f in enumerate(cand) if f.name == device and f.present == "yes"), None)
            if ri is not None and ci is not None and _compartments_differ(ref[ri], cand[ci], t):
                false_r.update((i, ri))
                false_c.update((j, ci))
            continue
        if not (r.name.startswith("malpositioned ") and r.present == "yes" and c.present == "no"):
            continue
        device = r.name[len("malpositioned "):]
        ri = next((k for k, f in enumerate(ref) if f.name == device and f.present == "yes"), None)
        ci = next((k for k, f in enumerate(cand) if f.name == device and f.present == "yes"), None)
        if ci is None:
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
    for i, j in _mimicked(ref, cand, t):
        missed.add(i)
        not_said.add(j)
    return missed, not_said, (false_r, false_c)


def _tip_compartments(f: Finding, t: Tables) -> frozenset[str]:
    """The compartments (``tip_compartments`` of ``clinical_criticality.yaml``) of the tip locations a device states."""
    loc = f.attributes.location or ""
    if "tip:" not in loc:
        return frozenset()
    tips = [x.strip() for x in loc.split("tip:", 1)[1].split(",")]
    table = t.tip_compartment or {}
    return frozenset(table[x] for x in tips if x in table)


def _compartments_differ(r: Finding, c: Finding, t: Tables) -> bool:
    """Whether both reports place the device's tip in a known compartment and the compartments do not meet."""
    a, b = _tip_compartments(r, t), _tip_compartments(c, t)
    return bool(a and b and not a & b)


def _mimicked(ref: Sequence[Finding], cand: Sequence[Finding], t: Tables) -> list[tuple[int, int]]:
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
                      and not _sides_disjoint(r, c)), None)
            if j is not None:
                out.append((i, j))
                break
    return out


#: id of the normal-statements entry (``clinical_normals.yaml``) that stands the work-up down ("no further imaging
#: required", "conservative management"): it denies no finding itself, but makes a downgrade false reassurance
STAND_DOWN = "stand-down"


def _stands_down(denials: Sequence[Denial]) -> bool:
    return any(d.id == STAND_DOWN for d in denials)


def _folded(before: Sequence[Finding], after: Sequence[Finding], t: Tables) -> list[Finding]:
    """The present signs :func:`_fold_signs` folded into the finding they imply (in ``before``, not in ``after``)."""
    return [f for f in before if f.present == "yes" and f.name in t.signs and all(g is not f for g in after)]


def _false_reassurance(ref: Sequence[Finding], cand: Sequence[Finding], to_c: Mapping[int, int], as_missed: set[int],
                       cand_dismissed: Sequence[Finding], opt: ClinicalOptions, t: Tables
                       ) -> tuple[set[int], set[int], set[int]]:
    """``(reference facts, candidate facts, reference facts whose denial weighs on precision)`` of a false reassurance
    (module docstring, rung 5r): in a candidate that stands the work-up down (:data:`STAND_DOWN`, and the reference does
    not), an actionable reference finding (weight ≥ the urgent tier, 2) that the candidate mentions below its grade -- a
    critical downgrade (:func:`_as_missed`), a lower severity, a more generic or lesser finding, a hedge -- or explains
    away (:func:`_dismissed`). The clinician is told there is nothing to do: as a normal statement that denies it."""
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
            o, rel, _ = _related_issue41(f, cand, t)
            j = next((k for k, c in enumerate(cand) if c is o), None) if o is not None else None
        if o is not None and o.present == "yes":
            lf, lo = _levels(f), _levels(o)
            if rel == "generic" or (lf and lo and max(lo) < max(lf)) or (o.hedged and not f.hedged):
                out_r.add(i)
                out_c.add(j)
            continue
        if any(d.name == f.name or related_as(f.name, d.name) or _concept_relation(f.name, d.name, t)[0]
               for d in cand_dismissed):
            out_r.add(i)
            row.add(i)
    return out_r, out_c, row


def _pair_issue41(ref: Sequence[Finding], cand: Sequence[Finding], opt: ClinicalOptions,
                  names: frozenset[str]) -> list[tuple[int, int]]:
    """:func:`pair_entities` over the clinical vocabulary: two different names of the vocabulary (lexicon, new
    findings, signs) are different entities; otherwise name similarity ≥ θ, most similar first."""
    cands = []
    for i, a in enumerate(ref):
        for j, b in enumerate(cand):
            na, nb = normalize_name(a.name), normalize_name(b.name)
            s = 1.0 if na == nb else (0.0 if na in names and nb in names else name_similarity(a.name, b.name, opt.scorer))
            if s >= opt.theta:
                cands.append((-s, i, j))
    cands.sort()
    used_i: set[int] = set()
    used_j: set[int] = set()
    out = []
    for _, i, j in cands:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            out.append((i, j))
    return sorted(out)


def _concept_relation(asking: str, other: str, t: Tables) -> tuple[str | None, float | None]:
    for r in t.relations:
        if r.morphology is not None:
            continue  # a refinement of an existing relation's credit (:func:`_refined_credit`), not a relation
        if r.interchangeable and {asking, other} == {r.generic, r.specific} and asking != other:
            return "generic", r.credit
        if not r.interchangeable and asking == r.generic and other == r.specific:
            return "specific", None
        if not r.interchangeable and asking == r.specific and other == r.generic:
            return "generic", r.credit
    return None, None


def _refined_credit(specific: Finding, generic: Finding, t: Tables) -> float | None:
    """The concept table's credit for ``generic`` named for ``specific`` when a relation holds only for a morphology the
    generic finding states (``when_morphology``: an *airspace* opacity for a consolidation earns 1, a bare opacity keeps
    :data:`~radaudit.atomic.lexicon.GENERIC_CREDIT`); ``None``: no such relation."""
    terms = {x for x, _, _ in morphology_terms(generic.attributes.morphology or "")}
    for r in t.relations:
        if r.morphology is not None and r.specific == specific.name and r.generic == generic.name and r.morphology in terms:
            return r.credit
    return None


def _related_issue41(f: Finding, others: Sequence[Finding], t: Tables
                     ) -> tuple[Finding | None, str | None, float | None]:
    """The lexicon's relations (:func:`_related`), then the concept table's: more specific before more generic."""
    o, rel = _related(f, others)
    if o is not None:
        return o, rel, (_refined_credit(f, o, t) if rel == "generic" else None)
    for want in ("specific", "generic"):
        for o in others:
            if o.present == "yes" and not _sides_disjoint(f, o):
                rel, credit = _concept_relation(f.name, o.name, t)
                if rel == want:
                    return o, rel, credit
    return None, None, None


def _sign_link(f: Finding, others: Sequence[Finding], t: Tables, reference_side: bool
               ) -> tuple[Finding | None, str | None, float]:
    """``(other, relation, credit)`` of a present finding through the signs table (module docstring, rung 3).

    ``"sign"``: the other report states a sign implying ``f``: a reference finding earns the sign's credit (on its
    base part); a candidate finding earns 1 when the reference's sign is a pure sign (the reference's own
    observation supports it), else the sign's credit. ``"sign-of"``: ``f`` is a sign and the other report names a
    finding it implies: 1 (the sign is accounted for), except a reference finding-sign (mediastinal shift) whose own
    finding the candidate did not report."""
    best: tuple[Finding | None, str | None, float] = (None, None, 0.0)
    for o in others:
        s = t.signs.get(o.name)
        if o.present == "yes" and s is not None and f.name in s.implies and not _sides_disjoint(f, o):
            c = s.implies[f.name] if reference_side or s.kind == "finding" else 1.0
            if c > best[2]:
                best = (o, "sign", c)
    if best[0] is not None:
        return best
    s = t.signs.get(f.name)
    if s is not None and not (reference_side and s.kind == "finding"):
        for o in others:
            if o.present == "yes" and o.name in s.implies and not _sides_disjoint(f, o):
                return o, "sign-of", 1.0
    return best


def _contradicted(f: Finding, others: Sequence[Finding], t: Tables) -> Finding | None:
    """A present finding of the other report that a stated absence ``f`` denies through a relation: "no
    consolidation" against "pneumonia" (the other finding is a more specific form of the denied one)."""
    for o in others:
        if o.present != "yes" or _sides_disjoint(f, o):
            continue
        if related_as(f.name, o.name) == "specific" or _concept_relation(f.name, o.name, t)[0] == "specific":
            return o
        if any(r.interchangeable and {f.name, o.name} == {r.generic, r.specific} for r in t.relations):
            return o  # "no pulmonary nodule or mass" against a nodule: the same lesion denied under its other name
    return None


def _sides(f: Finding) -> frozenset[str]:
    loc = (f.attributes.location or "").split("tip:")[0]
    return frozenset(location_key(loc)[0] & {"left", "right"}) if loc.strip() else frozenset()


def _scores_issue41(ref: list[Finding], cand: list[Finding], opt: ClinicalOptions, context: Mapping[str, Any] | None,
                    ref_denials: Sequence[Denial], cand_denials: Sequence[Denial]
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """AtomiMed-clinical with the issue-41 ladder (module docstring)."""
    t = load_tables()
    cand_dismissed = [f.model_copy(update={"name": t.aliases.get(normalize_name(f.name), f.name)})
                      for f in cand if _dismissed(f)]
    ref_p, cand_p = _prepare(ref, t), _prepare(cand, t)
    ref, cand = _fold_signs(ref_p, cand_p, t), _fold_signs(cand_p, ref_p, t)
    folded = {"gt->inf": _folded(ref_p, ref, t), "inf->gt": _folded(cand_p, cand, t)}
    pairs = _pair_issue41(ref, cand, opt, t.names())
    to_c = dict(pairs)
    to_r = {j: i for i, j in pairs}
    rules = _context_rules(context, history=True)
    as_missed, not_said, false_position = _as_missed(ref, cand, pairs, t)
    mimic_pairs = _mimicked(ref, cand, t)
    mimic_r, mimic_c = {i for i, _ in mimic_pairs}, {j for _, j in mimic_pairs}
    reassured_r: set[int] = set()
    reassured_c: set[int] = set()
    reassured_row: set[int] = set()
    if _stands_down(cand_denials) and not _stands_down(ref_denials):
        reassured_r, reassured_c, reassured_row = _false_reassurance(ref, cand, to_c, as_missed, cand_dismissed, opt, t)
    trace: list[dict[str, Any]] = []
    sums = {"gt->inf": [0.0, 0.0], "inf->gt": [0.0, 0.0]}
    missed = false = 0
    for direction, asking, others, link, denials, other_dir in (
            ("gt->inf", ref, cand, to_c, cand_denials, "inf->gt"), ("inf->gt", cand, ref, to_r, ref_denials, "gt->inf")):
        reference_side = direction == "gt->inf"
        for k, f in enumerate(asking):
            other, relation = (others[link[k]], "same") if k in link else (None, None)
            generic_credit, sign_credit = None, 0.0
            if not reference_side and k in not_said:
                # the candidate's statement of a critical finding it downgraded: counted as not said (rung 2c)
                trace.append({"direction": direction, "finding": f.name, "present": f.present, "hedged": f.hedged,
                              "other": f"{other.name}: {other.present}" if other is not None else "not mentioned",
                              "relation": "mimic: not counted" if k in mimic_c else "critical downgrade: not counted",
                              "weight": 0.0, "credit": 0.0,
                              "agreement": None, "facets": {}})
                continue
            if f.present == "yes" and (other is None or other.present != "yes"):
                rel_other, rel, generic_credit = _related_issue41(f, others, t)
                if rel_other is not None:
                    other, relation = rel_other, rel
                else:
                    s_other, s_rel, sign_credit = _sign_link(f, others, t, reference_side)
                    if s_other is not None:
                        other, relation = s_other, s_rel
            parts = opt.significance.parts(f, opt.theta, opt.scorer)
            base_total = sum(x for _, x in parts)
            if f.present == "yes" and is_critical(f, t) and base_total < t.critical_tier \
                    and not (not reference_side and _one_grade_overcall(f, other if relation == "same" else None, t)):
                parts = [*parts, (f"critical:{f.name}", t.critical_tier - base_total)]
            total = sum(x for _, x in parts)
            w = total * (opt.negative_weight if f.present == "no" else 1.0)
            if f.hedged:
                w *= opt.hedge_factor
            w *= context_factor(f, total, rules)
            agreement, facets = None, {}
            signs_other = folded[other_dir]
            if k in (reassured_r if reference_side else reassured_c):
                credit, relation = 0.0, "false reassurance"
            elif (reference_side and k in as_missed) or (k in (false_position[0] if reference_side else false_position[1])):
                credit = 0.0
                relation = ("false position" if not (reference_side and k in as_missed) else
                            "explained away by a mimic: as a miss" if k in mimic_r else "critical downgrade: as a miss")
            elif f.present == "no" and other is None and (sg := next(
                    (g for g in signs_other if g.name == f.name and not _sides_disjoint(f, g)), None)) is not None:
                # "no mediastinal shift" against a shift the other report states as part of its tension pneumothorax
                credit, other, relation = 0.0, sg, "contradicts a sign of the other report"
            elif relation in ("sign", "sign-of"):
                # a sign earns its credit on the base part; the critical/modifier parts need the finding itself
                credit = parts[0][1] * sign_credit / total if sign_credit < 1.0 else 1.0
            elif f.present == "no" and other is None and (denied := _contradicted(f, others, t)) is not None:
                credit, other, relation = 0.0, denied, "contradicted"
            else:
                down = reference_side and relation == "same" and f.present == "yes" and other is not None \
                    and other.present == "yes" and t.downgrade_credit > 0 and _downgraded(f, other, t)
                credit, agreement, facets = _credit(f, other, relation, reference_side=reference_side, parts=parts,
                                                    opt=opt, others=others, generic_credit=generic_credit,
                                                    base_factor=t.downgrade_credit if down else 1.0, tables=t)
                if down:
                    relation = "same, critical downgrade"
            if f.present == "yes" and credit == 0.0:
                if reference_side:
                    missed += 1
                else:
                    false += 1
            sums[direction][0] += w
            sums[direction][1] += w * credit
            trace.append({"direction": direction, "finding": f.name, "present": f.present, "hedged": f.hedged,
                          "other": f"{other.name}: {other.present}" if other is not None else "not mentioned",
                          "relation": relation, "weight": w, "credit": credit, "agreement": agreement,
                          "facets": facets})
            if reference_side and k in reassured_row:
                # the candidate's downgraded or explained-away statement, with its "nothing to do", denies the finding
                wd = opt.negative_weight * w
                sums[other_dir][0] += wd
                trace.append({"direction": other_dir, "finding": f.name, "present": "no", "hedged": False,
                              "other": f"{f.name}: yes", "relation": "false reassurance (stands the work-up down)",
                              "weight": wd, "credit": 0.0, "agreement": None, "facets": {}})
            elif f.present == "yes" and credit == 0.0 and (other is None or other.present == "yes"):
                # the other report's normal statement denies it: a stated absence of the other report (rung 5);
                # an unsided one ("lungs otherwise clear") not when that report states the finding elsewhere
                states = any(o.present == "yes" and o.name == f.name for o in others)
                d = next((d for d in denials if d.denies(f.name, _sides(f)) and (d.sides or not states)), None)
                if d is not None:
                    wd = opt.negative_weight * w
                    sums[other_dir][0] += wd
                    trace.append({"direction": other_dir, "finding": f.name, "present": "no", "hedged": False,
                                  "other": f"{f.name}: yes", "relation": f"denied: {d.text}", "weight": wd,
                                  "credit": 0.0, "agreement": None, "facets": {}})
    # a normal statement of one report that denies a sign the other report folded into its finding ("mediastinum
    # central" against a massive effusion "with mediastinal shift"): a stated absence with credit 0 (rung 5)
    for direction, signs, denials, own in (("inf->gt", folded["gt->inf"], cand_denials, cand),
                                           ("gt->inf", folded["inf->gt"], ref_denials, ref)):
        for g in signs:
            if any(o.name == g.name for o in own):
                continue  # the report states the sign itself (present or absent): scored above
            d = next((d for d in denials if d.denies(g.name, _sides(g))), None)
            if d is not None:
                wd = opt.negative_weight * opt.significance.weight(g, opt.theta, opt.scorer)
                sums[direction][0] += wd
                trace.append({"direction": direction, "finding": g.name, "present": "no", "hedged": False,
                              "other": f"{g.name}: yes (a sign of the other report's finding)",
                              "relation": f"denied: {d.text}", "weight": wd, "credit": 0.0, "agreement": None,
                              "facets": {}})
    return _score_row(sums, opt.kappa, missed, false, len(pairs)), trace


def clinical_scores(reference: Sequence[Finding], candidate: Sequence[Finding],
                    options: ClinicalOptions | None = None, *, context: Mapping[str, Any] | None = None,
                    reference_denials: Sequence[Denial] = (), candidate_denials: Sequence[Denial] = ()
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """AtomiMed-clinical of one pair from its two decompositions: ``(row, trace)``.

    ``row`` has :data:`CLINICAL_COLUMNS`; ``trace`` one dict per fact and direction (``direction``
    ``"gt->inf"`` for reference facts, ``"inf->gt"`` for candidate facts, ``finding``, ``present``,
    ``other`` (the paired finding's name and answer, or ``"not mentioned"``), ``relation``
    (``"same"``, ``"specific"``/``"generic"`` for a finding credited through
    :data:`~radaudit.atomic.lexicon.SPECIFIC_OF` or the concept table, ``"sign"``/``"sign-of"`` (signs table),
    ``"same, critical downgrade"``, ``"contradicted"`` (a stated absence of a finding the other report names more
    specifically), ``"denied: <statement>"`` (a normal statement's implied absence), ``"contradicts a sign of the other
    report"``, ``"false reassurance"`` (rung 5r)), ``weight``, ``credit``,
    ``agreement``, ``facets``).

    ``context``: the patient's age/sex/indication/history (:data:`~radaudit.atomic.concepts.CONTEXT_KEYS`), which
    scales the weights of the findings the context rules name; ``None`` (or a context no rule matches) changes
    nothing. ``reference_denials``/``candidate_denials``: the normal statements of each report
    (:func:`~radaudit.atomic.concepts.find_denials`; :func:`score_pairs_clinical` finds them in the texts).

    >>> from radaudit.atomic.schema import Finding
    >>> row, _ = clinical_scores([], [Finding(name="pneumonia", present="yes")])
    >>> round(row["precision"], 4), row["recall"]         # one false urgent finding: (0 + 1) / (2 + 1)
    (0.3333, 1.0)
    """
    opt = options or ClinicalOptions()
    if opt.rules:
        return _scores_issue41(list(reference), list(candidate), opt, context, reference_denials, candidate_denials)
    return _scores_before_issue41(reference, candidate, opt, context)


def _scores_before_issue41(reference: Sequence[Finding], candidate: Sequence[Finding], opt: ClinicalOptions,
                           context: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The definition before issue 41 (``rules=False``), unchanged except that a context scales weights."""
    rules = _context_rules(context)
    ref, cand = list(reference), list(candidate)
    pairs = pair_entities(ref, cand, opt.theta, opt.scorer)
    to_c = dict(pairs)
    to_r = {j: i for i, j in pairs}
    trace: list[dict[str, Any]] = []
    sums = {}
    missed = false = 0
    for direction, asking, others, link in (("gt->inf", ref, cand, to_c), ("inf->gt", cand, ref, to_r)):
        reference_side = direction == "gt->inf"
        w_sum = c_sum = 0.0
        for k, f in enumerate(asking):
            other, relation = (others[link[k]], "same") if k in link else (None, None)
            if f.present == "yes" and (other is None or other.present != "yes"):
                rel_other, rel = _related(f, others)
                if rel_other is not None:
                    other, relation = rel_other, rel
            parts = opt.significance.parts(f, opt.theta, opt.scorer)
            w = sum(x for _, x in parts) * (opt.negative_weight if f.present == "no" else 1.0)
            if f.hedged:
                w *= opt.hedge_factor  # "possible pneumothorax" claims less than "pneumothorax"
            if rules:
                w *= context_factor(f, sum(x for _, x in parts), rules)
            credit, agreement, facets = _credit(f, other, relation, reference_side=reference_side, parts=parts,
                                                opt=opt, others=others)
            if f.present == "yes" and credit == 0.0:
                if reference_side:
                    missed += 1
                else:
                    false += 1
            w_sum += w
            c_sum += w * credit
            trace.append({"direction": direction, "finding": f.name, "present": f.present, "hedged": f.hedged,
                          "other": f"{other.name}: {other.present}" if other is not None else "not mentioned",
                          "relation": relation, "weight": w, "credit": credit, "agreement": agreement,
                          "facets": facets})
        sums[direction] = (w_sum, c_sum)
    return _score_row(sums, opt.kappa, missed, false, len(pairs)), trace


@dataclass
class ClinicalRuleDecomposer(RuleDecomposer):
    """The rule decomposer reading each report after the concept table's ``rewrites``
    (:func:`~radaudit.atomic.concepts.rewrite`: lay words such as "breathing tube" or "where the windpipe divides"
    turned into "endotracheal tube", "the carina")."""

    def decompose_one(self, text: str) -> list[Finding]:
        return super().decompose_one(clinical_text(text) if self.sections else rewrite(text))


def clinical_text(text: str) -> str:
    """``text`` as the clinical decomposer reads it: after the concept table's rewrites, and with findings written
    before an IMPRESSION header without a FINDINGS header of their own ("Erect chest. Free gas under both
    hemidiaphragms. IMPRESSION: Pneumoperitoneum.") labelled FINDINGS, so that the section reader keeps them (issue 41,
    after holdout4: the description, with its sides and sizes, is where the attributes are; the paper's ``atomimed``
    reads the FINDINGS and IMPRESSION sections only)."""
    text = rewrite(text)
    secs = split_sections(text, inline=True)
    if "findings" not in secs and "impression" in secs and (secs.get("preamble") or "").strip():
        return f"FINDINGS: {secs['preamble']} IMPRESSION: {secs['impression']}"
    return text


def clinical_decomposer(uncertain: str = "yes", rules: bool = True) -> RuleDecomposer:
    """The rule decomposer of AtomiMed-clinical: the lexicon's vocabulary with the concept table's forms and the
    signs (:func:`~radaudit.atomic.concepts.clinical_vocabulary`), reading the text after the concept table's
    rewrites (:class:`ClinicalRuleDecomposer`); ``rules=False``: the lexicon's own (as before issue 41 and as the
    paper's ``atomimed``)."""
    if not rules:
        return RuleDecomposer(uncertain=uncertain)
    return ClinicalRuleDecomposer(uncertain=uncertain, findings=clinical_vocabulary())


def check_contexts(context: Any, n: int) -> list[dict[str, Any] | None] | None:
    """``context`` of a batch of ``n`` pairs as a list of validated per-pair dicts (``None`` entries allowed), or
    ``None``. One mapping applies to every pair; a sequence must have one entry per pair."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        one = check_context(context)
        return [one] * n
    items = list(context)
    if len(items) != n:
        raise ParamsError(f"context has {len(items)} entries for {n} pairs: give one per pair (or one mapping for all).")
    return [check_context(c, f"context of pair {i}") for i, c in enumerate(items)]


def score_pairs_clinical(references: Sequence[str], candidates: Sequence[str], *, decomposer: Any = None,
                         options: ClinicalOptions | None = None, uncertain: str = "yes", context: Any = None):
    """AtomiMed-clinical of each (reference, candidate) pair: a DataFrame with ``pair``,
    :data:`CLINICAL_COLUMNS`, ``ok``, ``error`` and ``n_unparseable``; the per-fact trace in
    ``.attrs["trace"]``. ``decomposer``: any decomposer (default: :func:`clinical_decomposer` with
    ``uncertain``); a pair whose decomposition failed (LLM backend) is NaN with ``ok=False``, never
    scored. ``context``: ``None``, one context for every pair, or one per pair (:func:`check_contexts`)."""
    import pandas as pd

    refs, cands = check_pairs(references, candidates)
    opt = options or ClinicalOptions()
    contexts = check_contexts(context, len(refs))
    dec = decomposer if decomposer is not None else clinical_decomposer(uncertain, opt.rules)
    facts = dec.decompose(refs + cands)
    rows, trace = [], []
    for i, (g, c) in enumerate(zip(facts[: len(refs)], facts[len(refs):])):
        n_unp = g.n_unparseable + c.n_unparseable
        if not (g.ok and c.ok):
            err = "; ".join(f"{side} report: {x.error}" for side, x in (("reference", g), ("candidate", c)) if not x.ok)
            rows.append({"pair": i, **dict.fromkeys(CLINICAL_COLUMNS, math.nan), "ok": False, "error": err,
                         "n_unparseable": n_unp})
            continue
        ctx = contexts[i] if contexts is not None else None
        if opt.rules:
            row, tr = clinical_scores(g.findings, c.findings, opt, context=ctx, reference_denials=_denials(refs[i]),
                                      candidate_denials=_denials(cands[i]))
        else:
            row, tr = clinical_scores(g.findings, c.findings, opt, context=ctx)
        rows.append({"pair": i, **row, "ok": True, "error": "", "n_unparseable": n_unp})
        trace += [{"pair": i, **t} for t in tr]
    frame = pd.DataFrame(rows, columns=["pair", *CLINICAL_COLUMNS, "ok", "error", "n_unparseable"])
    frame.attrs["trace"] = pd.DataFrame(trace, columns=["pair", "direction", "finding", "present", "hedged", "other",
                                                         "relation", "weight", "credit", "agreement", "facets"])
    return frame


@functools.lru_cache(maxsize=4096)
def _denials(text: str) -> tuple[Denial, ...]:
    return find_denials(clinical_text(text))


def _score_row(sums: dict, kappa: float, missed: int, false: int, n_paired: int) -> dict:
    """The pair's smoothed recall and precision (credit + kappa over weight + kappa, each direction) and F1, with the
    weights, credits and counts they come from: one row of the score table."""
    (w_r, c_r), (w_c, c_c) = sums["gt->inf"], sums["inf->gt"]
    recall = (c_r + kappa) / (w_r + kappa)
    precision = (c_c + kappa) / (w_c + kappa)
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall), "w_reference": w_r,
            "w_candidate": w_c, "credit_reference": c_r, "credit_candidate": c_c, "n_missed": missed,
            "n_false": false, "n_paired": n_paired}
