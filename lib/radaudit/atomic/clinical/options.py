"""The options of AtomiMed-clinical (:mod:`radaudit.atomic.clinical`): :class:`ClinicalOptions` (κ, α, the weight of
a pertinent negative, the hedge factor, θ and the name scorer, the ladder switch) and the significance table it
carries (:class:`Significance`, read by :func:`load_significance`): what a finding weighs before the ladder grades it.

The table (:data:`SIGNIFICANCE_FILE`) puts each finding name in one of four tiers after the ACR actionable-findings
categories (immediate 4, urgent 2, follow-up 1, incidental ½); modifiers raise a finding to a higher tier ("tension"
→ immediate). Not part of the AtomiMed paper, which weighs every fact equally.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from radaudit.atomic.schema import ATTRIBUTES, Finding
from radaudit.atomic.score import entity_similarity, normalize_name
from radaudit.errors import ParamsError

__all__ = ["SIGNIFICANCE_FILE", "Significance", "load_significance", "ClinicalOptions"]

#: The default significance table (package resource).
SIGNIFICANCE_FILE = "clinical_significance.yaml"


@dataclass(frozen=True)
class Significance:
    """Weights of findings by name (:mod:`radaudit.atomic.clinical`, *Weight*). ``weights``: normalised name → weight;
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


@dataclass(frozen=True)
class ClinicalOptions:
    """Constants of AtomiMed-clinical (:mod:`radaudit.atomic.clinical`); the defaults are the documented ones."""

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
