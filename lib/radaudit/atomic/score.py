"""AtomiMed's scores as pure functions: Eq. 3 (one level), Eq. 4 (both levels), fuzzy name alignment.

Notation (§2.2): ``N_gt`` questions are decomposed from the reference and posed against the
prediction (GT→INF), ``C_gt→inf`` of them match; ``N_inf`` questions come from the prediction and
are posed against the reference (INF→GT), ``C_inf→gt`` match.

Eq. 3 (disease level, and "analogously" the attribute level)::

    P = C_inf→gt / N_inf        R = C_gt→inf / N_gt        F1 = 2PR / (P + R)

Eq. 4 (final aggregation, equal weights)::

    P = ½ P_dis + ½ P_attr      R = ½ R_dis + ½ R_attr      F1 = 2PR / (P + R)

Empty denominators (the paper fixes one case; the rest are our documented choices)
---------------------------------------------------------------------------------
- ``N_gt = N_inf = 0`` → P = R = F1 = 1 (paper: "to avoid penalizing true normal studies").
- One side empty: the ratio with the empty denominator is 1 (nothing asked, so nothing failed:
  the same reading as the paper's rule, applied per side), the other ratio is computed. A
  prediction with no findings against a reference with unmatched findings still gets F1 = 0,
  because its recall is 0; a silent prediction against a reference whose only facts are
  pertinent negatives scores 1, because unmentioned findings are read as absent.
- Attribute level with no attribute questions in either direction (no aligned finding states any
  facet): the level is undefined and Eq. 4 uses the disease level alone (``P = P_dis``,
  ``R = R_dis``) instead of averaging with a vacuous 1 that would lift every report by half.
- ``P + R = 0`` → F1 = 0.

Fuzzy alignment
---------------
"Disease names are extracted from question surface forms and matched via fuzzy string similarity
(θ = 0.8) to attribute-level keys." :func:`name_similarity` is rapidfuzz's normalised Indel
similarity (``fuzz.ratio / 100``) of the names after lower-casing, removing punctuation and
collapsing spaces (``"Pleural effusion"`` = ``"pleural effusion."`` = 1.0; ``"pleural effusion"``
vs ``"pleural effusions"`` = 0.97; ``"effusion"`` vs ``"pleural effusion"`` = 0.67). The paper
does not name its similarity function; ``scorer="token_set_ratio"`` (word-set overlap, so
``"effusion"`` vs ``"left pleural effusion"`` = 1.0) or ``"partial_ratio"`` can be chosen.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence

from rapidfuzz import fuzz

from radaudit.atomic.lexicon import is_canonical
from radaudit.errors import ParamsError

__all__ = ["SCORERS", "level_scores", "aggregate", "f1", "ratio", "normalize_name", "name_similarity",
           "entity_similarity", "align_findings", "greedy_pairs"]

SCORERS = ("ratio", "token_set_ratio", "token_sort_ratio", "partial_ratio")
_PUNCT = re.compile(r"[^\w\s]")


def ratio(correct: int, total: int) -> float:
    """``correct / total``; 1.0 when ``total`` is 0 (nothing asked; module docstring)."""
    if correct < 0 or total < 0 or correct > total:
        raise ParamsError(f"counts must satisfy 0 <= correct <= total, got correct={correct}, total={total}.")
    return 1.0 if total == 0 else correct / total


def f1(p: float, r: float) -> float:
    """Harmonic mean ``2PR / (P + R)``, 0 when ``P + R = 0`` (Eq. 3 and Eq. 4)."""
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def level_scores(c_inf_gt: int, n_inf: int, c_gt_inf: int, n_gt: int) -> tuple[float, float, float]:
    """Eq. 3: ``(P, R, F1)`` of one level from the match counts of both directions.

    ``P = C_inf→gt / N_inf``, ``R = C_gt→inf / N_gt``, ``F1 = 2PR/(P+R)``; both sides empty → (1, 1, 1)
    (paper); one side empty → that ratio is 1 (module docstring).

    >>> level_scores(1, 2, 1, 1)
    (0.5, 1.0, 0.6666666666666666)
    >>> level_scores(0, 0, 0, 0)
    (1.0, 1.0, 1.0)
    """
    p, r = ratio(c_inf_gt, n_inf), ratio(c_gt_inf, n_gt)
    return p, r, f1(p, r)


def aggregate(p_dis: float, r_dis: float, p_attr: float | None, r_attr: float | None,
              weight: float = 0.5) -> tuple[float, float, float]:
    """Eq. 4: ``P = w P_dis + (1-w) P_attr``, ``R = w R_dis + (1-w) R_attr``, ``F1 = 2PR/(P+R)``.

    ``weight`` ``w`` is the paper's ½ ("equal-weight averaging"). ``p_attr``/``r_attr`` ``None`` (or
    NaN): the attribute level is undefined and the disease level is returned alone.

    >>> aggregate(1.0, 1.0, 0.5, 0.5)
    (0.75, 0.75, 0.75)
    >>> aggregate(0.5, 1.0, None, None)
    (0.5, 1.0, 0.6666666666666666)
    """
    if not 0.0 <= weight <= 1.0:
        raise ParamsError(f"weight must be in [0, 1], got {weight!r}.")
    undefined = p_attr is None or r_attr is None or math.isnan(p_attr) or math.isnan(r_attr)
    if undefined:
        p, r = p_dis, r_dis
    else:
        p = weight * p_dis + (1 - weight) * p_attr
        r = weight * r_dis + (1 - weight) * r_attr
    return p, r, f1(p, r)


@functools.lru_cache(maxsize=65536)
def normalize_name(name: str) -> str:
    """Lower case, punctuation removed, spaces collapsed: the form names are compared in (memoised: the
    same few hundred names are compared millions of times on a large corpus)."""
    return " ".join(_PUNCT.sub(" ", name.lower()).split())


def name_similarity(a: str, b: str, scorer: str = "ratio") -> float:
    """Similarity in [0, 1] of two finding names (rapidfuzz ``fuzz.<scorer> / 100`` on
    :func:`normalize_name` forms; module docstring).

    >>> name_similarity("Pleural effusion", "pleural effusion.")
    1.0
    """
    if scorer not in SCORERS:
        raise ParamsError(f"scorer={scorer!r} is not allowed: use one of {', '.join(SCORERS)}.")
    a_n, b_n = normalize_name(a), normalize_name(b)
    if a_n == b_n:
        return 1.0
    return getattr(fuzz, scorer)(a_n, b_n) / 100.0


@functools.lru_cache(maxsize=262144)
def entity_similarity(a: str, b: str, scorer: str = "ratio") -> float:
    """:func:`name_similarity`, except that two *different* names of the rule lexicon's canonical
    vocabulary (:func:`radaudit.atomic.lexicon.canonical_names`) are different entities (0.0).

    θ is the paper's threshold for matching surface forms of one entity; the rule decomposer already
    normalises every name, so with the rule backend θ never decides anything (and a θ low enough to
    merge, say, "malpositioned enteric tube" with "malpositioned endotracheal tube", ratio 0.84, would
    merge different findings). θ acts wherever at least one name is free text (LLM backend).

    >>> entity_similarity("malpositioned enteric tube", "malpositioned endotracheal tube")
    0.0
    >>> round(entity_similarity("pleural effusion", "pleural effusions"), 2)
    0.97
    """
    if normalize_name(a) != normalize_name(b) and is_canonical(a) and is_canonical(b):
        return 0.0
    return name_similarity(a, b, scorer)


def align_findings(gt_names: Sequence[str], inf_names: Sequence[str], gt_ok: Sequence[bool],
                   inf_ok: Sequence[bool], theta: float = 0.8, scorer: str = "ratio") -> list[tuple[int, int, float]]:
    """One-to-one alignment of reference and predicted findings for the attribute level.

    Only findings "correctly aligned in both directions" take part: ``gt_ok[i]`` says reference
    finding ``i`` is present and its GT→INF disease question matched, ``inf_ok[j]`` the same for
    predicted finding ``j`` in the INF→GT direction. Eligible pairs with
    ``entity_similarity >= theta`` are taken greedily, most similar first (ties: reference order,
    then prediction order). Returns ``[(i, j, similarity), ...]`` sorted by ``i``.
    """
    if not 0.0 <= theta <= 1.0:
        raise ParamsError(f"theta must be in [0, 1], got {theta!r}.")
    if len(gt_ok) != len(gt_names) or len(inf_ok) != len(inf_names):
        raise ParamsError("gt_ok/inf_ok must have one flag per finding name.")
    cands = []
    for i, a in enumerate(gt_names):
        if not gt_ok[i]:
            continue
        for j, b in enumerate(inf_names):
            if inf_ok[j]:
                s = entity_similarity(a, b, scorer)
                if s >= theta:
                    cands.append((s, i, j))
    return greedy_pairs(cands)


def greedy_pairs(candidates: Iterable[tuple[float, int, int]]) -> list[tuple[int, int, float]]:
    """One-to-one pairs from scored candidates ``(similarity, i, j)``: taken greedily, most similar first (ties: ``i``,
    then ``j``), each ``i`` and each ``j`` at most once. Returns ``[(i, j, similarity), ...]`` sorted by ``i``.

    >>> greedy_pairs([(0.9, 0, 1), (0.95, 1, 1), (0.85, 0, 0)])
    [(0, 0, 0.85), (1, 1, 0.95)]
    """
    used_i: set[int] = set()
    used_j: set[int] = set()
    out = []
    for s, i, j in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        if i in used_i or j in used_j:
            continue
        used_i.add(i)
        used_j.add(j)
        out.append((i, j, s))
    return sorted(out)
