"""Clinical Association Displacement (paper §2.1): the per-word table, its categories and the silence test.

Decisions where the paper is silent (items 1–4, 8–10) are in :mod:`radaudit.metrics.association`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse, special, stats

from radaudit.metrics.association.counts import AssociationCounts, AssociationInputError
from radaudit.metrics.association.equations import log_ratio
from radaudit.stats import benjamini_hochberg

__all__ = ["CATEGORIES", "CATEGORY_ORDER", "SILENCE_ERASURE", "cad", "cad_arrays", "cad_from_counts", "cad_summary",
           "check_thresholds", "classify_shift", "erasure_counts", "exact_association_p", "exact_association_z",
           "silence_erased", "silence_pvalues"]

CATEGORIES: tuple[str, ...] = ("Erasure", "New Bias", "Bias Flip", "Preservation")
"""The paper's categories of displaced words (§2.1.2)."""
CATEGORY_ORDER: tuple[str, ...] = (*CATEGORIES, "Unclassified", "Stable")
"""Every value of the ``category`` column, in summary order (see the module docstring, item 4)."""
SILENCE_ERASURE = "Erasure (silence test)"
"""The label of the silence test's Erasure count (ours, module docstring items 9–10) beside the paper's."""


def silence_pvalues(c_ref: Any, c_pred: Any, s_ref: Any) -> tuple[np.ndarray, np.ndarray]:
    """The silence test (module docstring, item 9): ``(tested_group, p)`` per word.

    ``c_ref``, ``c_pred``: ``[V × 2]`` token counts per (word, group) in the reference and the
    prediction corpus; ``s_ref``: the reference log ratio (Eq. 1). ``tested_group[w]`` is 0 (groups[0],
    s_ref ≥ 0) or 1; ``p[w]`` = P(X ≤ c_pred) for X ~ Binomial(c_ref + c_pred, N_pred / (N_pred + N_ref))
    in that group, the N's being the group's token totals over the V words. p = 1 where the word
    never occurs in that group, and where the group has no reference tokens (π = 1: nothing to lose).
    ``[V × 2 × B]`` counts (B replicates, ``s_ref`` ``[V × B]``) give ``[V × B]`` results, each column as alone.
    """
    cr, cp = np.asarray(c_ref, dtype=float), np.asarray(c_pred, dtype=float)
    if cr.shape != cp.shape or cr.ndim not in (2, 3) or cr.shape[1] != 2:
        raise AssociationInputError(f"c_ref and c_pred must both be [V x 2] count arrays, got {cr.shape} and {cp.shape}")
    k = np.where(np.asarray(s_ref, dtype=float) >= 0, 0, 1)
    n_ref, n_pred = cr.sum(axis=0), cp.sum(axis=0)  # [2] (or [2 × B])
    total = n_ref + n_pred
    pi_g = np.divide(n_pred, total, out=np.ones(total.shape), where=total > 0)
    first = k == 0
    pi = np.where(first, pi_g[0], pi_g[1])
    x = np.where(first, cp[:, 0], cp[:, 1])
    n = np.where(first, cr[:, 0], cr[:, 1]) + x
    p = np.where(n > 0, stats.binom.cdf(x, n, pi), 1.0)
    return k, np.clip(p, 0.0, 1.0)


def exact_association_p(counts: Any) -> np.ndarray:
    """Item 10 of the module docstring: the two-sided p of the exact conditional binomial test of no
    association, per word. ``counts``: ``[V × 2]`` token counts of one corpus (column k = groups[k]).
    Given the word's total n = c_0 + c_1, H0 gives c_0 ~ Binomial(n, N_0 / (N_0 + N_1)); p is the doubled
    smaller tail, capped at 1. A word the corpus never uses, or a corpus where a group has no tokens at all
    (nothing can be said about association), has p = 1. ``[V × 2 × B]`` counts (B replicates) give ``[V × B]``,
    each column as alone."""
    c = np.asarray(counts, dtype=float)
    if c.ndim not in (2, 3) or c.shape[1] != 2:
        raise AssociationInputError(f"counts must be a [V x 2] array, got shape {c.shape}")
    n = c.sum(axis=1)
    totals = c.sum(axis=0)  # [2] (or [2 × B])
    both = totals.sum(axis=0)
    pi = np.divide(totals[0], both, out=np.full(np.shape(both), 0.5), where=both > 0)
    informative = (0 < pi) & (pi < 1)
    if not np.any(informative):
        return np.ones(n.shape)
    pi_safe = np.where(informative, pi, 0.5)  # a corpus with a group of no tokens: p = 1 below, whatever this is
    lower = stats.binom.cdf(c[:, 0], n, pi_safe)
    upper = stats.binom.sf(c[:, 0] - 1, n, pi_safe)
    return np.where((n > 0) & informative, np.minimum(1.0, 2.0 * np.minimum(lower, upper)), 1.0)


def exact_association_z(counts: Any, s: Any) -> np.ndarray:
    """Item 10 of the module docstring: the signed z-equivalent of :func:`exact_association_p`, per word,
    z = sign(s) · Φ⁻¹(1 − p/2). ``counts``: ``[V × 2]`` token counts of one corpus (column k = groups[k]);
    ``s``: the Eq. (1) log ratio, whose sign the z takes. A word the corpus never uses has z = 0."""
    p = exact_association_p(counts)
    z = stats.norm.isf(np.maximum(p, 1e-300) / 2.0)
    return np.sign(np.asarray(s, dtype=float)) * z


def silence_erased(p_silence: Any, z_ref_exact: Any, z_pred_exact: Any, *, p_star: float, z_neutral: float = 1.0,
                   z_strong: float = 2.0, p_ref: Any = None) -> np.ndarray:
    """The silence test's verdict per word (module docstring, items 9 and 11): the group's rate fell
    (``p_silence`` ≤ p*; pass the BH-adjusted values for the BH rule), the word was strongly
    associated in the reference (|z_ref_exact| > z_strong) and that association is real (``p_ref`` ≤ p*:
    pass the BH-adjusted :func:`exact_association_p` of the references, column ``p_ref_exact_adj``; ``None``
    skips this condition), and it is neutral in the predictions (|z_pred_exact| < z_neutral). Useful to
    re-flag a CAD table at another p* (paper Fig. 3)."""
    p = np.asarray(p_silence, dtype=float)
    out = (p <= p_star) & (np.abs(np.asarray(z_ref_exact, dtype=float)) > z_strong) & (
        np.abs(np.asarray(z_pred_exact, dtype=float)) < z_neutral)
    if p_ref is not None:
        out &= np.asarray(p_ref, dtype=float) <= p_star
    return out


def erasure_counts(table: pd.DataFrame) -> dict[str, int]:
    """Erased words of a CAD table by each test: ``paper`` (category Erasure, Eq. 3), ``silence``
    (``erased_silence``, item 9), ``both`` and ``either``."""
    paper = (table["category"] == "Erasure").to_numpy()
    silence = table["erased_silence"].to_numpy(dtype=bool)
    return {"paper": int(paper.sum()), "silence": int(silence.sum()), "both": int((paper & silence).sum()),
            "either": int((paper | silence).sum())}


def check_thresholds(alpha: float, p_star: float, z_neutral: float, z_strong: float) -> None:
    """Raise :class:`AssociationInputError` unless α > 0, 0 < p* < 1 and 0 < z_neutral ≤ z_strong."""
    if not (isinstance(alpha, (int, float)) and alpha > 0 and math.isfinite(alpha)):
        raise AssociationInputError(f"alpha must be a positive number (the paper's default is 0.1), got {alpha!r}")
    if not 0.0 < p_star < 1.0:
        raise AssociationInputError(f"p_star must be in (0, 1) (the paper's default is 0.05), got {p_star!r}")
    if not 0.0 < z_neutral <= z_strong:
        raise AssociationInputError(
            f"need 0 < z_neutral <= z_strong (the paper uses 1 and 2), got z_neutral={z_neutral!r}, z_strong={z_strong!r}")


def classify_shift(
    z_ref: Any, z_pred: Any, displaced: Any, *, z_neutral: float = 1.0, z_strong: float = 2.0
) -> np.ndarray:
    """§2.1.2 categories for each word: an object array of :data:`CATEGORY_ORDER` values.

    ``displaced`` is the boolean "not stable" flag (see :func:`cad_from_counts`). With
    a = |z_ref|, b = |z_pred| (neutral: |z| < z_neutral):

    * Erasure — a > z_strong and b < z_neutral;
    * New Bias — a < z_neutral and b ≥ z_neutral;
    * Bias Flip — a ≥ z_neutral, b ≥ z_neutral and sign(z_ref) ≠ sign(z_pred);
    * Preservation — a ≥ z_neutral, b ≥ z_neutral and the same sign;
    * Unclassified — displaced but none of the above (z_neutral ≤ a ≤ z_strong and b < z_neutral);
    * Stable — not displaced.

    Useful to re-categorise a CAD table under other thresholds (e.g. a p* sweep, paper Fig. 3).
    """
    zr, zp = np.asarray(z_ref, dtype=float), np.asarray(z_pred, dtype=float)
    disp = np.asarray(displaced, dtype=bool)
    a, b = np.abs(zr), np.abs(zp)
    both = (a >= z_neutral) & (b >= z_neutral)
    same = np.sign(zr) == np.sign(zp)
    out = np.full(zr.shape, "Stable", dtype=object)
    out[disp] = "Unclassified"
    out[disp & (a > z_strong) & (b < z_neutral)] = "Erasure"
    out[disp & (a < z_neutral) & (b >= z_neutral)] = "New Bias"
    out[disp & both & ~same] = "Bias Flip"
    out[disp & both & same] = "Preservation"
    return out


def cad_from_counts(
    counts: AssociationCounts,
    *,
    alpha: float = 0.1,
    p_star: float = 0.05,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    min_count: int = 1,
    correction: Literal["bh", "none"] = "bh",
) -> pd.DataFrame:
    """The CAD per-word table (Eqs. 1–3, §2.1.2) of an :class:`AssociationCounts`. See :func:`cad`."""
    check_thresholds(alpha, p_star, z_neutral, z_strong)
    if correction not in ("bh", "none"):
        raise AssociationInputError(f"correction must be 'bh' or 'none', got {correction!r}")
    counts = counts.restrict(min_count)
    V = len(counts.vocab)
    if V == 0:
        raise AssociationInputError("no word is left after tokenisation, stop-word removal and min_count: nothing to audit")
    c_ref, c_pred = counts.group_totals()
    return _cad_table(counts.vocab, c_ref, c_pred, tuple(map(str, counts.groups)), alpha=alpha, p_star=p_star,
                      z_neutral=z_neutral, z_strong=z_strong, correction=correction)


def cad_arrays(c_ref: Any, c_pred: Any, *, alpha: float = 0.1, p_star: float = 0.05, z_neutral: float = 1.0,
               z_strong: float = 2.0, correction: Literal["bh", "none"] = "bh") -> dict[str, np.ndarray]:
    """Every per-word quantity of the CAD table (:func:`cad`) from ``[V × 2]`` group totals, as arrays.

    The one code path of the table's numbers: :func:`cad_from_counts` lays these arrays out as its
    DataFrame, and a bootstrap that recomputes the Erasure counts on each resample (e.g. over studies)
    calls this directly (no DataFrame per replicate). V = ``len(c_ref)``, as given (no ``min_count``).
    ``[V × 2 × B]`` totals (B replicates stacked on a last axis) give every per-word array as ``[V × B]``, each
    column equal to the call on that replicate alone (BH corrects each column's V words as one family).
    Keys: the table's numeric columns (``s_ref``, ``var_ref``, ``z_ref``, ``s_pred``, ..., ``z_disp``,
    ``p``, ``p_adj``, ``displaced``, ``category``, ``z_ref_exact``, ``z_pred_exact``, ``p_ref_exact``,
    ``p_ref_exact_adj``, ``ref_associated``, ``silence_tested`` (0/1), ``p_silence``, ``p_silence_adj``,
    ``erased_silence``) and ``z_crit``.
    """
    c_ref, c_pred = np.asarray(c_ref, dtype=float), np.asarray(c_pred, dtype=float)
    if c_ref.shape != c_pred.shape or c_ref.ndim not in (2, 3) or c_ref.shape[1] != 2:
        raise AssociationInputError(f"c_ref and c_pred must both be [V x 2] (or [V x 2 x B]) count arrays, got "
                                    f"{c_ref.shape} and {c_pred.shape}")
    V = len(c_ref)
    s_r, v_r = log_ratio(c_ref[:, 0], c_ref[:, 1], alpha, V)
    s_p, v_p = log_ratio(c_pred[:, 0], c_pred[:, 1], alpha, V)
    z_r, z_p = s_r / np.sqrt(v_r), s_p / np.sqrt(v_p)
    z_disp = (s_p - s_r) / np.sqrt(v_p + v_r)
    p = 2.0 * special.ndtr(-np.abs(z_disp))  # two-sided normal p-value of z_disp
    rejected, p_adj = benjamini_hochberg(p, alpha=p_star, axis=0)  # one family of V words (per replicate)
    z_crit = float(special.ndtri(1.0 - p_star / 2.0))
    displaced = rejected if correction == "bh" else np.abs(z_disp) > z_crit
    tested, p_sil = silence_pvalues(c_ref, c_pred, s_r)
    p_sil_adj = benjamini_hochberg(p_sil, alpha=p_star, axis=0)[1]
    # item 11: a reference association is real when its exact test survives BH over the V words at p*
    p_r_exact = exact_association_p(c_ref)
    p_r_exact_adj = benjamini_hochberg(p_r_exact, alpha=p_star, axis=0)[1]
    ref_associated = (p_r_exact_adj if correction == "bh" else p_r_exact) <= p_star
    z_r_exact = np.sign(s_r) * stats.norm.isf(np.maximum(p_r_exact, 1e-300) / 2.0)
    z_p_exact = exact_association_z(c_pred, s_p)
    erased_silence = silence_erased(p_sil_adj if correction == "bh" else p_sil, z_r_exact, z_p_exact, p_star=p_star,
                                    z_neutral=z_neutral, z_strong=z_strong,
                                    p_ref=p_r_exact_adj if correction == "bh" else p_r_exact)
    return {"s_ref": s_r, "var_ref": v_r, "z_ref": z_r, "s_pred": s_p, "var_pred": v_p, "z_pred": z_p,
            "z_disp": z_disp, "p": p, "p_adj": p_adj, "displaced": np.asarray(displaced, dtype=bool),
            "category": classify_shift(z_r, z_p, displaced, z_neutral=z_neutral, z_strong=z_strong),
            "z_ref_exact": z_r_exact, "z_pred_exact": z_p_exact, "p_ref_exact": p_r_exact,
            "p_ref_exact_adj": p_r_exact_adj, "ref_associated": np.asarray(ref_associated, dtype=bool),
            "silence_tested": tested, "p_silence": p_sil, "p_silence_adj": p_sil_adj,
            "erased_silence": np.asarray(erased_silence, dtype=bool), "z_crit": np.float64(z_crit)}


def _cad_table(vocab: np.ndarray, c_ref: np.ndarray, c_pred: np.ndarray, g: tuple[str, str], *, alpha: float,
               p_star: float, z_neutral: float, z_strong: float, correction: str) -> pd.DataFrame:
    V = len(vocab)
    a = cad_arrays(c_ref, c_pred, alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong,
                   correction=correction)  # type: ignore[arg-type]
    s_r, v_r, z_r, s_p, v_p, z_p = (a[k] for k in ("s_ref", "var_ref", "z_ref", "s_pred", "var_pred", "z_pred"))
    z_disp, p, p_adj, displaced, z_crit = a["z_disp"], a["p"], a["p_adj"], a["displaced"], float(a["z_crit"])
    tested, p_sil, p_sil_adj, erased_silence = a["silence_tested"], a["p_silence"], a["p_silence_adj"], a["erased_silence"]
    z_r_exact, z_p_exact = a["z_ref_exact"], a["z_pred_exact"]
    table = pd.DataFrame({
        "word": vocab.astype(str),
        f"c_ref_{g[0]}": c_ref[:, 0].astype(np.int64), f"c_ref_{g[1]}": c_ref[:, 1].astype(np.int64),
        f"c_pred_{g[0]}": c_pred[:, 0].astype(np.int64), f"c_pred_{g[1]}": c_pred[:, 1].astype(np.int64),
        "c_ref": (c_ref[:, 0] + c_ref[:, 1]).astype(np.int64), "c_pred": (c_pred[:, 0] + c_pred[:, 1]).astype(np.int64),
        "s_ref": s_r, "var_ref": v_r, "z_ref": z_r,
        "s_pred": s_p, "var_pred": v_p, "z_pred": z_p,
        "z_disp": z_disp, "p": p, "p_adj": p_adj, "displaced": displaced.astype(bool),
        "category": a["category"],
        "z_ref_exact": z_r_exact, "z_pred_exact": z_p_exact, "p_ref_exact": a["p_ref_exact"],
        "p_ref_exact_adj": a["p_ref_exact_adj"], "ref_associated": a["ref_associated"],
        "silence_group": np.asarray(g, dtype=object)[tested], "p_silence": p_sil, "p_silence_adj": p_sil_adj,
        "erased_silence": erased_silence.astype(bool),
    })
    table.attrs.update(groups=g, alpha=alpha, p_star=p_star, z_crit=z_crit, z_neutral=z_neutral, z_strong=z_strong,
                       correction=correction, V=V)
    return table


def _as_counter(x: Any, label: str) -> Counter[str]:
    if isinstance(x, Mapping):
        return Counter({str(k): int(v) for k, v in x.items()})
    if isinstance(x, str):
        raise AssociationInputError(f"{label}: pass tokens (a list of str), per-report token lists, or a word->count "
                                    "mapping, not one string (tokenise it with tokenize_for_association)")
    items = list(x)
    if all(isinstance(t, str) for t in items):
        return Counter(items)
    out: Counter[str] = Counter()
    for doc in items:
        if isinstance(doc, str):
            raise AssociationInputError(f"{label}: mixes tokens and token lists")
        out.update(doc)
    return out


def cad(
    ref_tokens_by_group: Mapping[Any, Any],
    pred_tokens_by_group: Mapping[Any, Any],
    *,
    groups: tuple[Any, Any] = ("F", "M"),
    alpha: float = 0.1,
    p_star: float = 0.05,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    min_count: int = 1,
    correction: Literal["bh", "none"] = "bh",
) -> pd.DataFrame:
    """Clinical Association Displacement (paper §2.1): one row per vocabulary word.

    Args:
        ref_tokens_by_group, pred_tokens_by_group: ``{group: tokens}`` for the reference and the
            prediction corpus, with exactly the keys ``groups``. ``tokens`` is a list of tokens,
            a list of per-report token lists, or a ``{word: count}`` mapping (already tokenised:
            see :func:`tokenize_for_association`). The vocabulary V is every word seen or listed:
            a ``{word: 0}`` entry keeps a word in V (and in αV) though it never occurs.
        groups: the two groups; s = log p_{groups[0]} / p_{groups[1]} (paper: F vs M, s > 0 = F).
        alpha: Dirichlet smoothing α > 0, Eq. (1) (paper default 0.1).
        p_star: significance level p* of the displacement test, Eq. (3) (default 0.05).
        z_neutral, z_strong: category thresholds of §2.1.2 (defaults 1 and 2).
        min_count: drop words whose total count (both corpora and groups) is below this (1: none).
        correction: ``"bh"`` — displaced iff the Benjamini–Hochberg adjusted p ≤ p* (default);
            ``"none"`` — displaced iff |z_disp| > z_crit = Φ⁻¹(1 − p*/2).

    Returns:
        A DataFrame sorted by word, with columns ``word``; the counts ``c_ref_<g>``, ``c_pred_<g>``
        per group and corpus and their totals ``c_ref``, ``c_pred`` (the WAE weights);
        ``s_ref``, ``var_ref``, ``z_ref``, ``s_pred``, ``var_pred``, ``z_pred`` (Eqs. 1–2);
        ``z_disp`` (Eq. 3), its two-sided normal p-value ``p``, the BH-adjusted ``p_adj``,
        ``displaced`` and ``category`` (:func:`classify_shift`); the silence test (module
        docstring, items 9–11): ``z_ref_exact``, ``z_pred_exact``, the reference association's exact
        p ``p_ref_exact``, its BH-adjusted ``p_ref_exact_adj`` and ``ref_associated`` (it survives BH at p*),
        ``silence_group``, ``p_silence``, ``p_silence_adj`` (BH) and ``erased_silence``. ``table.attrs`` holds the
        parameters, ``z_crit`` and V. A word absent from one corpus or group has count 0 and the
        smoothed probability α / (N + αV) there (module docstring, item 1).
    """
    g = tuple(groups)
    if len(g) != 2 or g[0] == g[1]:
        raise AssociationInputError(f"groups must be two distinct values, got {groups!r}")
    for label, m in (("ref_tokens_by_group", ref_tokens_by_group), ("pred_tokens_by_group", pred_tokens_by_group)):
        if set(m) != set(g):
            raise AssociationInputError(f"{label} has groups {sorted(map(str, m))}; expected exactly {list(map(str, g))}")
    counters = {(c, k): _as_counter(m[k], f"{c}[{k!r}]") for c, m in (("ref", ref_tokens_by_group),
                                                                    ("pred", pred_tokens_by_group)) for k in g}
    if any(v < 0 for c in counters.values() for v in c.values()):
        raise AssociationInputError("token counts must be >= 0")
    # every key is in the vocabulary, so a {word: 0} entry fixes V (a word never seen still smooths)
    vocab = np.array(sorted({w for c in counters.values() for w in c}), dtype=object)
    if len(vocab) == 0:
        raise AssociationInputError("both corpora are empty: no tokens to audit")
    idx = {w: i for i, w in enumerate(vocab)}

    def vec(c: Counter[str]) -> np.ndarray:
        out = np.zeros(len(vocab))
        for w, v in c.items():
            out[idx[w]] = v
        return out

    c_ref = np.stack([vec(counters["ref", g[0]]), vec(counters["ref", g[1]])], axis=1)
    c_pred = np.stack([vec(counters["pred", g[0]]), vec(counters["pred", g[1]])], axis=1)
    # reuse the count-matrix path (min_count filtering) with one pseudo-report per (corpus, group)
    counts = AssociationCounts(vocab=vocab, reference=sparse.csr_matrix(c_ref.T.astype(np.int64)),
                               prediction=sparse.csr_matrix(c_pred.T.astype(np.int64)), group=np.array([0, 1]),
                               groups=(g[0], g[1]))
    return cad_from_counts(counts, alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong,
                           min_count=min_count, correction=correction)


def cad_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Counts of words per category (:data:`CATEGORY_ORDER`, every category listed, 0 included)."""
    counts = table["category"].value_counts()
    return pd.DataFrame({"category": list(CATEGORY_ORDER),
                         "n_words": [int(counts.get(c, 0)) for c in CATEGORY_ORDER]})
