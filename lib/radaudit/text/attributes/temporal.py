"""Temporal change: how a finding compares with a prior study.

Temporal change (:func:`extract_temporal`) -- :data:`TEMPORAL_VALUES`
--------------------------------------------------------------------
- ``unchanged``: unchanged, stable/stably/stabilized (not after "hemodynamically"/"clinically"),
  similar, unaltered, "no (significant|appreciable|...) (interval) change(s)", "not
  (significantly) changed", "without (interval) change", "little (interval) change", "not
  significant change". A bare "change(s)" is *not* temporal ("postoperative changes",
  "degenerative change", "interval change" without a direction give nothing).
- ``new``: new, newly, "interval development/appearance/placement/insertion/intubation",
  "has (since) developed", "placement/insertion of", "has been placed/inserted".
- ``increased``: "interval (slight|mild|...) increase(d)", "increase(d/s) in", increasing,
  "has/have increased/enlarged/grown/progressed/worsened", worse/worsen(ed/ing), enlarging,
  progressed/progressing/progression/progressive, "more prominent/conspicuous/confluent/
  extensive/pronounced/dense/opaque", "increased since/from/compared". A bare adjective
  "increased X" is a state, not a change ("increased interstitial markings"), and is skipped.
- ``decreased``: the mirror ("interval decrease", "decrease(d) in", decreasing, "has
  decreased", "less prominent", "reduction in", diminished/diminishing, smaller), plus
  improved/improving/improvement/improves, resolving and clearing (going away, not gone):
  direction refers to the extent of the finding, so improvement is ``decreased``.
  "decreased lung volumes" (a state) is skipped.
- ``resolved``: resolved/resolution, cleared, "no longer seen/visible/present/identified/...";
  for devices "removal/removed/extubation/extubated" (the device is no longer there).
- ``persistent`` (an addition to the five values the issue names): still present, no statement
  about size: persistent/persists/persisting/persisted/persistence, "again seen/noted/
  demonstrated/identified/visualized", redemonstrated/redemonstration, remain(s/ed),
  residual. Repositioning/advancement/retraction of devices is not a value.
- Overlaps: the unchanged phrases are matched first, so "no significant change" is one
  ``unchanged`` and "change" never fires on its own.
"""

from __future__ import annotations

import re

from radaudit.text.attributes.common import check_text, first_matches
from radaudit.text.attributes.records import Temporal

_DEG = (
    r"(?:(?:slight|slightly|mild|mildly|minimal|minimally|marked|markedly|significant|significantly|substantial|small|"
    r"moderate|further|continued|overall)\s+)?"
)
_CMP = r"(?:prominent|conspicuous|confluent|extensive|pronounced|dense|opaque|opacified)"
#: (value, pattern) in the order they are tried; a later match overlapping an earlier one is dropped.
TEMPORAL_PATTERNS: list[tuple[str, str]] = [
    ("unchanged", r"\bno\s+(?:(?:significant|appreciable|substantial|definite|notable|major|marked|real|other|additional|"
     r"further|gross|visible|radiographic)\s+)*(?:(?:interval|radiographic(?:al)?)\s+)?changes?\b"),
    ("unchanged", r"\b(?:not|without|little|minimal)\s+"
     r"(?:(?:significantly|significant|appreciably|substantially|much|any|definite|interval|been)\s+)*change[sd]?\b"),
    ("unchanged", r"\bunchanged\b|\bunaltered\b|\bsimilar\b"),
    ("unchanged", r"(?<!hemodynamically\s)(?<!clinically\s)\b(?:stable|stably|stabilized)\b"),
    ("resolved", r"\bno\s+longer\s+"
     r"(?:(?:well\s+)?seen|visible|visualized|present|identified|evident|apparent|demonstrated|appreciated)\b"),
    ("resolved", r"\b(?:resolved|resolution|cleared)\b"),
    ("resolved", r"\b(?:removal|removed|extubation|extubated)\b"),
    ("new", r"\binterval\s+(?:development|appearance|placement|insertion|intubation)\b"),
    ("new", r"\b(?:has|have)\s+(?:since\s+)?developed\b|\b(?:has|have)\s+been\s+(?:placed|inserted)\b"),
    ("new", r"\b(?:placement|insertion)\s+of\b|\bnew(?:ly)?\b"),
    ("increased", rf"\binterval\s+{_DEG}increase[ds]?\b|\bincrease[ds]?\s+in\b|\bincreas(?:ing|ingly)\b"),
    ("increased", rf"\b(?:has|have|had)\s+{_DEG}(?:increased|enlarged|grown|progressed|worsened)\b|"
     rf"\bincreased(?=\s+(?:since|from|compared|relative))"),
    ("increased", rf"\bworse(?:n(?:ed|ing|s)?)?\b|\benlarging\b|\bprogress(?:ed|ing|ion|ive)\b|\bmore\s+{_CMP}\b"),
    ("decreased", rf"\binterval\s+{_DEG}decrease[ds]?\b|\bdecrease[ds]?\s+in\b|\bdecreasing\b"),
    ("decreased", rf"\b(?:has|have|had)\s+{_DEG}decreased\b|\bdecreased(?=\s+(?:since|from|compared|relative))"),
    ("decreased", rf"\bimprov(?:ed|ing|ement|es)\b|\bsmaller\b|\bresolving\b|\bclearing\b|\bless\s+{_CMP}\b|"
     rf"\breduction\s+in\b|\bdiminish(?:ed|ing)\b"),
    ("persistent", r"\bpersist(?:ent(?:ly)?|s|ing|ed|ence)?\b|"
     r"\bagain\s+(?:seen|noted|demonstrated|identified|visualized|present|evident)\b"),
    ("persistent", r"\bredemonstrat(?:ed|es|ion|ing)\b|\bremain(?:s|ed)?\b|\bresidual\b"),
]
_RE_TEMPORAL = [(v, re.compile(p, re.IGNORECASE)) for v, p in TEMPORAL_PATTERNS]


def extract_temporal(text: str) -> list[Temporal]:
    """Every change-over-time phrase in ``text`` (rules: this module's docstring).

    >>> [a.value for a in extract_temporal(
    ...     "No significant interval change. Interval increase in the left pleural effusion.")]
    ['unchanged', 'increased']
    """
    s = check_text(text)
    return [Temporal(value, s[a:b], a, b) for a, b, value in first_matches(s, _RE_TEMPORAL)]

