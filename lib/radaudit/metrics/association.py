"""Clinical Association Displacement (CAD) and Weighted Association Erasure (WAE).

Parikh, Feragen, Das & Frank, "Measuring What VLMs Don't Say: Validation Metrics Hide Clinical
Terminology Erasure in Radiology Report Generation" (arXiv 2603.01625), §2. The paper's displays
are unnumbered; this module numbers them in order of appearance:

* Eq. (1), §2.1.1 — Dirichlet-smoothed unigram probability and log ratio::

      p_g^(D)(w) = (c_g^(D)(w) + α) / (N_g^(D) + α V) = c̃_g^(D)(w) / Σ_w' c̃_g^(D)(w'),
      s^(D)(w)   = log p_F^(D)(w) / p_M^(D)(w)               (s > 0: female-associated)

* Eq. (2), §2.1.1 — delta-method variance under a multinomial model and standardised association::

      Var[s^(D)(w)] ≈ 1 / c̃_F^(D)(w) + 1 / c̃_M^(D)(w),      z^(D)(w) = s^(D)(w) / sqrt(Var[s^(D)(w)])

* Eq. (3), §2.1.1 — association displacement and critical value::

      z_disp(w) = (s^(pred)(w) − s^(ref)(w)) / sqrt(Var[s^(pred)(w)] + Var[s^(ref)(w)]),
      z_crit    = Φ⁻¹(1 − p*/2)

* §2.1.2 — categories of shift (no display): stable, Erasure, New Bias, Bias Flip, Preservation.
* Eq. (4), §2.2 — weighted association erasure::

      WAE = Σ_w ω(w) z_disp(w)² / Σ_w ω(w),   ω(w) = c^(pred)(w)  or  c^(ref)(w)

  with WAE_g over the words associated with g in the reference and ΔWAE = WAE_F − WAE_M.

"F" and "M" stand for the two entries of ``groups`` (default ``("F", "M")``): the log ratio is
``log p_{groups[0]} / p_{groups[1]}``, so a positive s/z means "associated with ``groups[0]``".

Decisions where the paper is silent or ambiguous (each is repeated where it applies):

1. **Vocabulary** V is the union of the words of both corpora and both groups (after tokenisation
   and stop-word removal), so a word absent from one corpus (or group) still has a defined,
   smoothed probability α / (N + αV); the same V (and V = |V|) is used for reference and
   prediction. ``min_count`` (default 1 = the paper) drops words whose total count over both
   corpora and groups is below it; N_g then sums over the retained words only.
2. **Counts** c_g^(D)(w) are token occurrences (not document frequencies). ω(w) = c^(D)(w) in
   Eq. (4) is the *raw* (unsmoothed) count summed over the two groups.
3. **Displaced vs stable.** The paper converts z_disp to two-sided p-values, applies
   Benjamini–Hochberg, and "flags words with |z_disp| > z_crit at p*". We flag a word as
   displaced when its BH-adjusted p-value is ≤ p* (``correction="bh"``, default), over the family
   of all V words. Since p_adj ≥ p, every flagged word also has |z_disp| ≥ z_crit.
   ``correction="none"`` flags |z_disp| > z_crit (unadjusted) instead.
4. **Categories** apply to displaced words only (stable words get ``"Stable"``). With
   a = |z_ref|, b = |z_pred|, "neutral" meaning |z| < z_neutral:
   Erasure a > z_strong and b < z_neutral; New Bias a < z_neutral and b ≥ z_neutral;
   Bias Flip a, b ≥ z_neutral and sign(z_ref) ≠ sign(z_pred); Preservation a, b ≥ z_neutral and
   the same sign ("polarity conserved without loss of association"). These are mutually
   exclusive. A displaced word that fits none (a moderate reference association,
   z_neutral ≤ a ≤ z_strong, that becomes neutral) is ``"Unclassified"``: the paper defines no
   category for it, and we count it rather than drop it.
5. **WAE** sums over the whole vocabulary V (Eq. 4 says Σ_{w∈V}), not only displaced words.
   "Associated with g in the reference" means z_ref ≥ τ for groups[0] and z_ref ≤ −τ for
   groups[1], τ = ``assoc_z`` (default z_neutral: the paper calls |z| < z_neutral "neutral";
   ``assoc_z=0`` gives the sign split, zero excluded). ΔWAE = WAE_{groups[0]} − WAE_{groups[1]}
   (the paper's "ΔWAE_F − ΔWAE_M" is read as a typo for WAE_F − WAE_M). A WAE whose weights sum
   to 0 (e.g. prediction-weighted with no predicted tokens, or no associated words) is NaN.
6. **Uncertainty.** Nonparametric bootstrap over *reports* (a row: one reference, its prediction,
   its group). Each replicate resamples rows with replacement, recomputes the group counts, the
   association sets and WAE with the vocabulary fixed at the full-data V. Replicates are drawn
   exactly as :func:`radaudit.stats.bootstrap_ci` draws them (same seed → same resamples; tested)
   and the interval (shifted percentile by default, or BCa with a leave-one-report-out jackknife) is computed by the
   stats module's own interval code; only the replicate *statistics* are vectorised here.
   **Caveat — WAE is an energy statistic.** It is a weighted mean of squared standardised
   displacements, so it carries the sampling noise of every z_disp (E[z_disp²] ≈ δ² + 1 for a
   true standardised displacement δ), and a bootstrap replicate adds that noise a second time:
   replicates sit about one noise unit above the estimate. When that bias is large against the
   spread (little true displacement, e.g. CheXpert Plus's 200 pairs: WAE_ref 0.80, replicates
   0.84–1.65) the percentile interval does not contain the estimate, and BCa's bias constant z0
   becomes extreme (a narrow interval below the estimate, or undefined). The basic interval
   (2θ̂ − q) does not help either: when every replicate lies above θ̂ it puts θ̂ above the
   interval, and its lower bound can go negative for a non-negative statistic. We therefore
   default to the *shifted* percentile interval (``ci_method="shifted"``, :mod:`radaudit.stats`):
   the percentile interval of the replicates minus their bias b̂ = mean(θ*) − θ̂, i.e. the
   bootstrap distribution's spread and skew placed around the estimate. The raw bias is kept in
   the ``bias`` column, so a reader sees how far the replicates sat above θ̂ (a lower bound below 0
   is clipped to 0: WAE is non-negative); ``"percentile"``,
   ``"basic"`` and ``"bca"`` stay available. (The point estimate itself still carries the noise
   floor E[z_disp²] ≈ 1 per word: WAE ≈ 1 means "no more displacement than noise"; the
   permutation test says whether it exceeds chance.) ΔWAE, a difference of two such means, is
   much less affected (the noise largely cancels).
7. **Label permutation.** Group labels are shuffled across the corpus's reports (group sizes
   kept; a report's reference and prediction move together), everything is recomputed, via
   :func:`radaudit.stats.permutation_test` (scipy; p = (1 + #as-or-more-extreme) / (1 + R), exact
   enumeration when all partitions fit in R). WAE is tested one-sided ("greater": the paper's
   "observed WAE exceeds the null"), ΔWAE two-sided. Relabellings where a statistic is undefined
   (a group left without associated words) are counted and left out of its p-value (scipy would
   count them as "not extreme", i.e. too small a p-value).
8. **A word the model never writes** (a consequence of Eqs. 1–3 as written, kept as is): both
   prediction cells are α, so s_pred = log((N_M + αV)/(N_F + αV)) ≈ 0 and Var_pred = 2/α (= 20
   at α = 0.1), hence |z_disp| ≤ |s_ref| / sqrt(20 + Var_ref), which exceeds z_crit = 1.96 only
   if |s_ref| > 8.8. Total omission of a word is therefore almost never flagged; Erasure catches
   words that are still generated, but evenly across groups (e.g. the words of a template). This is
   not a small-sample effect: a word the predictions never contain carries *no information* about
   its association there (0/N_F vs 0/N_M is any ratio), so no test of association displacement can
   flag it, whatever the sample size. The evidence that it was erased is elsewhere: its rate fell.
9. **The silence test** (ours, beside the paper's; ``p_silence``, ``erased_silence``). For each
   word, the group g it is associated with in the reference (g = groups[0] if s_ref ≥ 0, else
   groups[1]) is asked: do the predictions for group g use w less often than the references for
   group g? Under the same token-level multinomial model as Eq. (2) the counts c_g^(pred)(w) and
   c_g^(ref)(w) are Poisson with rates proportional to N_g^(pred) and N_g^(ref); conditional on
   their sum n, H0 (the same rate per token in both corpora) gives
   c_g^(pred)(w) ~ Binomial(n, π), π = N_g^(pred) / (N_g^(pred) + N_g^(ref)) — the exact
   conditional test for two Poisson rates (Przyborowski & Wilenski 1940). ``p_silence`` is its
   one-sided lower tail P(X ≤ c_g^(pred)(w)), so a word never written has p = (1 − π)^n, small as
   soon as the references use it a few times. It is corrected like the paper's test (BH over all V
   words at p*, or unadjusted p ≤ p* with ``correction="none"``) and a word is ``erased_silence``
   when that holds *and* it meets the Erasure conditions of §2.1.2 on association z's
   (|z_ref| > z_strong, |z_pred| < z_neutral), with the z's of item 10. The ``category`` column
   stays the paper's; the two Erasure counts are reported side by side (:func:`erasure_counts`).
   Caveat shared with Eq. (2): tokens are treated as independent draws, so a word repeated within
   one report counts several times.
10. **Exact association z's** (``z_ref_exact``, ``z_pred_exact``; used by the silence test only).
   Eq. (2)'s smoothed Wald variance has the same blind spot on the reference side: a word one group
   never uses ("mastectomy" in no male report) has Var ≥ 1/α = 10, so with 30 female mentions and
   none male z_ref = 1.65 and it is not "strongly associated" — the most sex-specific words are the
   ones the paper's z cannot call strong. The exact analogue: conditional on the word's total
   n = c_F + c_M in a corpus, H0 (no association) gives c_F ~ Binomial(n, N_F / (N_F + N_M)); the
   two-sided p (doubled smaller tail, capped at 1) is turned into a z of the same size,
   z = sign(s) · Φ⁻¹(1 − p/2), so the paper's thresholds z_neutral, z_strong keep their meaning
   (30 vs 0 with equal N: p = 2·0.5³⁰, z = 6.0).

Speed: reports are tokenised once into sparse [reports × vocabulary] count matrices; bootstrap,
jackknife and permutation replicates are sums of count rows (sparse matrix products); all tested
statistics share one set of permutations, and on a large corpus the bootstrap and the permutations run
on two threads. The time grows linearly with the number of reports; the measured figure and its scaling
curve are in ``benchmarks/results/association.json`` and ``association_scaling.png``
(``benchmarks/bench_association.py``).
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse, special, stats

from radaudit.errors import RadauditError
from radaudit.stats import (
    METHODS,
    BootstrapResult,
    PermutationResult,
    benjamini_hochberg,
    interval_from_replicates,
    permutation_test,
    resample_weights,
)
from radaudit.text.deid import strip_placeholders

__all__ = [
    "CATEGORIES",
    "CATEGORY_ORDER",
    "WAE_COLUMNS",
    "AssociationAudit",
    "AssociationCounts",
    "AssociationInputError",
    "association_audit",
    "cad",
    "cad_from_counts",
    "cad_summary",
    "classify_shift",
    "count_reports",
    "erasure_counts",
    "exact_association_z",
    "load_stopwords",
    "SILENCE_ERASURE",
    "silence_erased",
    "silence_pvalues",
    "tokenize_for_association",
    "wae",
    "wae_inference",
]

CATEGORIES: tuple[str, ...] = ("Erasure", "New Bias", "Bias Flip", "Preservation")
"""The paper's categories of displaced words (§2.1.2)."""

CATEGORY_ORDER: tuple[str, ...] = (*CATEGORIES, "Unclassified", "Stable")
"""Every value of the ``category`` column, in summary order (see the module docstring, item 4)."""

SILENCE_ERASURE = "Erasure (silence test)"
"""The label of the silence test's Erasure count (ours, module docstring items 9–10) beside the paper's."""

STOPWORDS_FILE = "stopwords_english_nltk.txt"
"""The default stop-word list under ``radaudit/resources/`` (NLTK's 179 English stop words)."""

WAE_COLUMNS: tuple[str, ...] = (
    "metric", "weighting", "group", "estimate", "low", "high", "se", "bias", "confidence", "method", "n_units",
    "n_bootstrap", "n_failed", "n_words", "perm_pvalue", "perm_alternative", "n_permutations", "perm_exact",
    "perm_n_undefined",
)
"""Columns of the WAE table :func:`wae_inference` returns."""

PERMUTED_DEFAULT: tuple[str, ...] = ("WAE_pred", "WAE_ref", "delta_WAE_pred", "delta_WAE_ref")


class AssociationInputError(RadauditError, ValueError):
    """The corpus cannot be audited: a group without reports, missing texts, no tokens, bad params."""


# ----------------------------------------------------------------------------------------------
# tokenisation


@functools.lru_cache(maxsize=4)
def load_stopwords(name: str = STOPWORDS_FILE) -> frozenset[str]:
    """A stop-word list shipped in ``radaudit/resources/`` (default: NLTK's English list, 179 words).

    The file (see its header for the source and licence) has one word per line; ``#`` lines and
    blank lines are ignored. Words are lower-cased.
    """
    text = resources.files("radaudit").joinpath("resources", name).read_text(encoding="utf-8")
    return frozenset(w.strip().lower() for w in text.splitlines() if w.strip() and not w.lstrip().startswith("#"))


_WORD = re.compile(r"[^\W\d_]+")  # maximal runs of (Unicode) letters: digits, '_', punctuation split


def _stopword_set(stopwords: Iterable[str] | None) -> frozenset[str]:
    if stopwords is None:
        return load_stopwords()
    if isinstance(stopwords, str):
        raise AssociationInputError("stopwords must be a collection of words (or None for the default list), not a string")
    return frozenset(w.lower() for w in stopwords)


def tokenize_for_association(text: str, stopwords: Iterable[str] | None = None, min_length: int = 2) -> list[str]:
    """The word tokens of ``text`` that the association metrics count (paper §3: stop words removed).

    0. de-identification placeholders (IU's ``XXXX``, MIMIC's ``___`` and ``[** **]`` tags,
       ``<NAME>``: :mod:`radaudit.text.deid`) are removed: they are not clinical words;
    1. lower-case;
    2. tokens are maximal runs of letters (Unicode letters; ``[^\\W\\d_]+``): digits, punctuation,
       hyphens, apostrophes and underscores separate tokens and are never part of one, so numbers
       are dropped ("12", "3.5"), "x-ray" gives "x", "ray", "patient's" gives "patient", "s", and
       "t12" gives "t";
    3. stop words are removed (``stopwords=None``: NLTK's English list, see :func:`load_stopwords`;
       pass a collection for another list, ``()`` for none). The list's contracted forms
       ("don't") never match a token; their fragments ("don", "t") are in the list;
    4. tokens shorter than ``min_length`` characters (default 2: stray letters such as the "x" of
       "x-ray" or the "t" of "t12") are dropped;
    5. a token made only of two or more x's is a placeholder and is dropped, also where step 0 left it
       because it was glued to digits ("XXXX12" gives no token; "xxiv" stays a word).

    ``""`` (or whitespace) gives ``[]``: an empty report contributes no tokens.
    """
    return _tokens(text, _stopword_set(stopwords), min_length)


def _tokens(text: str, stop: frozenset[str], min_length: int) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} (use '' for an empty report)")
    return [t for t in _WORD.findall(strip_placeholders(text).lower()) if _counted(t, stop, min_length)]


def _counted(token: str, stop: frozenset[str], min_length: int) -> bool:
    """Steps 3–5 of :func:`tokenize_for_association` for one lower-cased letter run."""
    return len(token) >= min_length and token not in stop and not (len(token) >= 2 and token.strip("x") == "")


# ----------------------------------------------------------------------------------------------
# count matrices


@dataclass(frozen=True)
class AssociationCounts:
    """Token counts of a corpus of (reference, prediction, group) reports, one row per report.

    ``reference`` and ``prediction`` are sparse ``[n_reports × V]`` CSR matrices of token counts
    over the shared, alphabetically sorted vocabulary ``vocab``; ``group[i]`` is 0 for
    ``groups[0]`` and 1 for ``groups[1]``.
    """

    vocab: np.ndarray
    reference: sparse.csr_matrix
    prediction: sparse.csr_matrix
    group: np.ndarray
    groups: tuple[str, str]

    @property
    def n_reports(self) -> int:
        return int(self.group.shape[0])

    @property
    def group_sizes(self) -> dict[str, int]:
        sizes = np.bincount(self.group, minlength=2)
        return {str(self.groups[0]): int(sizes[0]), str(self.groups[1]): int(sizes[1])}

    def group_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """``(c_ref, c_pred)``, each ``[V × 2]``: column k is the count per word in group ``groups[k]``."""
        onehot = sparse.csr_matrix(
            (np.ones(self.n_reports), (np.arange(self.n_reports), self.group)), shape=(self.n_reports, 2)
        )
        return (np.asarray((self.reference.T @ onehot).todense(), dtype=float),
                np.asarray((self.prediction.T @ onehot).todense(), dtype=float))

    def restrict(self, min_count: int) -> AssociationCounts:
        """Drop words whose total count (both corpora, both groups) is below ``min_count``."""
        if min_count <= 1:
            return self
        total = np.asarray(self.reference.sum(axis=0)).ravel() + np.asarray(self.prediction.sum(axis=0)).ravel()
        keep = np.flatnonzero(total >= min_count)
        return AssociationCounts(self.vocab[keep], self.reference[:, keep].tocsr(), self.prediction[:, keep].tocsr(),
                                 self.group, self.groups)


_SEP = "\n\x00\n"  # between texts: no token, placeholder or PHI tag ('.' stops at \n) can span it
_WORD_OR_SEP = re.compile(r"[^\W\d_]+|\x00")
_ASCII_WORD_OR_SEP = re.compile(r"[a-z]+|\x00")  # the same on lower-cased ASCII text, ~1.6x faster


def _count_matrix(texts: list[str], stop: frozenset[str], min_length: int) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``[len(texts) × V]`` token counts (:func:`tokenize_for_association` per text) and the sorted vocabulary.

    Corpus-level, with the same tokens as the per-text function (a test checks): each distinct text is
    tokenised once (generated reports repeat), the distinct texts are joined with a separator that no
    token, placeholder or PHI tag can cross, placeholders are stripped, the string lower-cased and split
    into words in one pass each, and stop words and short tokens are dropped per vocabulary entry rather
    than per token. About 5x faster than tokenising report by report (benchmarks/bench_association.py).
    """
    where, uniq = pd.factorize(pd.Series(texts, dtype=object), sort=False)  # distinct texts, first-seen order
    # A NUL inside a text (a random-weight model writes anything) would read as a separator: it is no letter
    # and no placeholder character, so a space in its place changes no token.
    # Step 0 (strip_placeholders) changes the letter runs only through PHI tags and <TAGS>: x-runs are
    # dropped per vocabulary entry (step 5) and underscores never join a token. Only texts with '<' or
    # '[**' need the regex, which is the slowest part of tokenising.
    texts_u = [t.replace("\x00", " ") if "\x00" in t else t for t in uniq]
    big = _SEP.join(strip_placeholders(t) if ("<" in t or "[**" in t) else t for t in texts_u).lower() + _SEP
    toks = (_ASCII_WORD_OR_SEP if big.isascii() else _WORD_OR_SEP).findall(big)
    codes, words = pd.factorize(pd.Series(toks, dtype=object), sort=False)
    words = np.asarray(words, dtype=object)
    is_sep = np.array([w == "\x00" for w in words], dtype=bool)
    keep_word = np.array([not sep and _counted(w, stop, min_length) for w, sep in zip(words, is_sep)], dtype=bool)
    tok_sep = is_sep[codes]
    text_of = np.cumsum(tok_sep) - tok_sep  # token i belongs to distinct text text_of[i]
    keep = keep_word[codes]
    kept = np.flatnonzero(keep_word)
    vocab = words[kept]
    order = np.argsort(vocab.astype(str), kind="stable")
    vocab = vocab[order]
    remap = np.full(len(words), -1, dtype=np.int64)
    remap[kept[order]] = np.arange(len(kept))
    u = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int64), (text_of[keep], remap[codes[keep]])),
                          shape=(len(uniq), len(vocab)))
    u.sum_duplicates()
    return u[where].tocsr(), vocab


def _as_list(values: Sequence[Any]) -> list[Any]:
    """A list of the values (``tolist()`` where there is one: iterating an Arrow-backed column is slow)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def count_reports(
    references: Sequence[str],
    predictions: Sequence[str],
    group: Sequence[Any],
    *,
    groups: tuple[Any, Any] = ("F", "M"),
    stopwords: Iterable[str] | None = None,
    min_length: int = 2,
) -> AssociationCounts:
    """Tokenise every report once (:func:`tokenize_for_association`) into sparse count matrices.

    ``group`` values must all be one of ``groups`` (filter unknown values first, as
    :func:`association_audit` does). The vocabulary is the sorted union of the tokens of both corpora.
    """
    refs, preds, labels = _as_list(references), _as_list(predictions), _as_list(group)
    if not (len(refs) == len(preds) == len(labels)):
        raise AssociationInputError(
            f"references ({len(refs)}), predictions ({len(preds)}) and group ({len(labels)}) must have the same length")
    g0, g1 = groups
    lab = pd.Series(labels, dtype=object)
    codes = np.where(lab.isna(), -1, np.where(lab == g0, 0, np.where(lab == g1, 1, -1))).astype(np.int64)
    if (codes < 0).any():
        bad = sorted({repr(x) for x, c in zip(labels, codes) if c < 0})
        raise AssociationInputError(f"group values {bad} are not in groups={groups!r}; filter them out first")
    stop = _stopword_set(stopwords)
    n = len(refs)
    texts = refs + preds
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"text must be a str, got {type(t).__name__} (use '' for an empty report)")
    mat, vocab = _count_matrix(texts, stop, min_length)
    return AssociationCounts(vocab=vocab, reference=mat[:n].tocsr(), prediction=mat[n:].tocsr(), group=codes,
                             groups=(g0, g1))


# ----------------------------------------------------------------------------------------------
# the equations, vectorised over a trailing batch axis: count arrays are [V × k]


def _log_ratio(c0: np.ndarray, c1: np.ndarray, alpha: float, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (1)–(2): s = log p_0/p_1 and Var[s] = 1/c̃_0 + 1/c̃_1 (counts [V × k] → [V × k])."""
    ct0, ct1 = c0 + alpha, c1 + alpha
    # p_g = c̃_g / (N_g + αV), N_g = Σ_w c_g(w): the denominators are per column (per replicate).
    log_denom0 = np.log(c0.sum(axis=0) + alpha * V)
    log_denom1 = np.log(c1.sum(axis=0) + alpha * V)
    s = np.log(ct0) - np.log(ct1) - log_denom0 + log_denom1
    var = 1.0 / ct0 + 1.0 / ct1
    return s, var


def _assoc_masks(z_ref: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Words associated with groups[0] (z_ref ≥ τ, z_ref > 0) and groups[1] (z_ref ≤ −τ, z_ref < 0)."""
    return (z_ref >= tau) & (z_ref > 0), (z_ref <= -tau) & (z_ref < 0)


def _wae_batch(cr0: np.ndarray, cr1: np.ndarray, cp0: np.ndarray, cp1: np.ndarray, *, alpha: float, V: int,
               tau: float, g: tuple[str, str]) -> dict[str, np.ndarray]:
    """Eq. (4) for every column of the [V × k] count arrays: the 8 WAE statistics, each shaped (k,)."""
    s_r, v_r = _log_ratio(cr0, cr1, alpha, V)
    s_p, v_p = _log_ratio(cp0, cp1, alpha, V)
    z_ref = s_r / np.sqrt(v_r)
    z2 = (s_p - s_r) ** 2 / (v_p + v_r)  # z_disp², Eq. (3)
    a0, a1 = _assoc_masks(z_ref, tau)
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for wt, w in (("pred", cp0 + cp1), ("ref", cr0 + cr1)):
            wz = w * z2
            out[f"WAE_{wt}"] = wz.sum(axis=0) / w.sum(axis=0)
            out[f"WAE_{wt}_{g[0]}"] = (wz * a0).sum(axis=0) / (w * a0).sum(axis=0)
            out[f"WAE_{wt}_{g[1]}"] = (wz * a1).sum(axis=0) / (w * a1).sum(axis=0)
            out[f"delta_WAE_{wt}"] = out[f"WAE_{wt}_{g[0]}"] - out[f"WAE_{wt}_{g[1]}"]
    return out


def _wae_names(g: tuple[str, str]) -> list[str]:
    return [n for wt in ("pred", "ref") for n in (f"WAE_{wt}", f"WAE_{wt}_{g[0]}", f"WAE_{wt}_{g[1]}", f"delta_WAE_{wt}")]


# ----------------------------------------------------------------------------------------------
# CAD


def silence_pvalues(c_ref: Any, c_pred: Any, s_ref: Any) -> tuple[np.ndarray, np.ndarray]:
    """The silence test (module docstring, item 9): ``(tested_group, p)`` per word.

    ``c_ref``, ``c_pred``: ``[V × 2]`` token counts per (word, group) in the reference and the
    prediction corpus; ``s_ref``: the reference log ratio (Eq. 1). ``tested_group[w]`` is 0 (groups[0],
    s_ref ≥ 0) or 1; ``p[w]`` = P(X ≤ c_pred) for X ~ Binomial(c_ref + c_pred, N_pred / (N_pred + N_ref))
    in that group, the N's being the group's token totals over the V words. p = 1 where the word
    never occurs in that group, and where the group has no reference tokens (π = 1: nothing to lose).
    """
    cr, cp = np.asarray(c_ref, dtype=float), np.asarray(c_pred, dtype=float)
    if cr.shape != cp.shape or cr.ndim != 2 or cr.shape[1] != 2:
        raise AssociationInputError(f"c_ref and c_pred must both be [V x 2] count arrays, got {cr.shape} and {cp.shape}")
    k = np.where(np.asarray(s_ref, dtype=float) >= 0, 0, 1)
    rows = np.arange(cr.shape[0])
    n_ref, n_pred = cr.sum(axis=0), cp.sum(axis=0)
    total = n_ref + n_pred
    pi = np.divide(n_pred, total, out=np.ones(2), where=total > 0)[k]
    x, n = cp[rows, k], cr[rows, k] + cp[rows, k]
    p = np.where(n > 0, stats.binom.cdf(x, n, pi), 1.0)
    return k, np.clip(p, 0.0, 1.0)


def exact_association_z(counts: Any, s: Any) -> np.ndarray:
    """Item 10 of the module docstring: the signed z-equivalent of the exact conditional binomial
    test of no association, per word. ``counts``: ``[V × 2]`` token counts of one corpus (column k =
    groups[k]); ``s``: the Eq. (1) log ratio, whose sign the z takes. A word the corpus never uses has z = 0."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or c.shape[1] != 2:
        raise AssociationInputError(f"counts must be a [V x 2] array, got shape {c.shape}")
    n = c.sum(axis=1)
    totals = c.sum(axis=0)
    pi = totals[0] / totals.sum() if totals.sum() > 0 else 0.5
    if not 0 < pi < 1:  # one group has no tokens at all: nothing can be said about association
        return np.zeros(len(c))
    lower = stats.binom.cdf(c[:, 0], n, pi)
    upper = stats.binom.sf(c[:, 0] - 1, n, pi)
    p = np.where(n > 0, np.minimum(1.0, 2.0 * np.minimum(lower, upper)), 1.0)
    z = stats.norm.isf(np.maximum(p, 1e-300) / 2.0)
    return np.sign(np.asarray(s, dtype=float)) * z


def silence_erased(p_silence: Any, z_ref_exact: Any, z_pred_exact: Any, *, p_star: float, z_neutral: float = 1.0,
                   z_strong: float = 2.0) -> np.ndarray:
    """The silence test's verdict per word (module docstring, item 9): the group's rate fell
    (``p_silence`` ≤ p*; pass the BH-adjusted values for the BH rule) and the word was strongly
    associated in the reference (|z_ref_exact| > z_strong) but is neutral in the predictions
    (|z_pred_exact| < z_neutral). Useful to re-flag a CAD table at another p* (paper Fig. 3)."""
    p = np.asarray(p_silence, dtype=float)
    return (p <= p_star) & (np.abs(np.asarray(z_ref_exact, dtype=float)) > z_strong) & (
        np.abs(np.asarray(z_pred_exact, dtype=float)) < z_neutral)


def erasure_counts(table: pd.DataFrame) -> dict[str, int]:
    """Erased words of a CAD table by each test: ``paper`` (category Erasure, Eq. 3), ``silence``
    (``erased_silence``, item 9), ``both`` and ``either``."""
    paper = (table["category"] == "Erasure").to_numpy()
    silence = table["erased_silence"].to_numpy(dtype=bool)
    return {"paper": int(paper.sum()), "silence": int(silence.sum()), "both": int((paper & silence).sum()),
            "either": int((paper | silence).sum())}


def _check_thresholds(alpha: float, p_star: float, z_neutral: float, z_strong: float) -> None:
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
    _check_thresholds(alpha, p_star, z_neutral, z_strong)
    if correction not in ("bh", "none"):
        raise AssociationInputError(f"correction must be 'bh' or 'none', got {correction!r}")
    counts = counts.restrict(min_count)
    V = len(counts.vocab)
    if V == 0:
        raise AssociationInputError("no word is left after tokenisation, stop-word removal and min_count: nothing to audit")
    c_ref, c_pred = counts.group_totals()
    return _cad_table(counts.vocab, c_ref, c_pred, tuple(map(str, counts.groups)), alpha=alpha, p_star=p_star,
                      z_neutral=z_neutral, z_strong=z_strong, correction=correction)


def _cad_table(vocab: np.ndarray, c_ref: np.ndarray, c_pred: np.ndarray, g: tuple[str, str], *, alpha: float,
               p_star: float, z_neutral: float, z_strong: float, correction: str) -> pd.DataFrame:
    V = len(vocab)
    s_r, v_r = _log_ratio(c_ref[:, [0]], c_ref[:, [1]], alpha, V)
    s_p, v_p = _log_ratio(c_pred[:, [0]], c_pred[:, [1]], alpha, V)
    s_r, v_r, s_p, v_p = s_r[:, 0], v_r[:, 0], s_p[:, 0], v_p[:, 0]
    z_r, z_p = s_r / np.sqrt(v_r), s_p / np.sqrt(v_p)
    z_disp = (s_p - s_r) / np.sqrt(v_p + v_r)
    p = 2.0 * special.ndtr(-np.abs(z_disp))  # two-sided normal p-value of z_disp
    rejected, p_adj = benjamini_hochberg(p, alpha=p_star)
    z_crit = float(special.ndtri(1.0 - p_star / 2.0))
    displaced = rejected if correction == "bh" else np.abs(z_disp) > z_crit
    tested, p_sil = silence_pvalues(c_ref, c_pred, s_r)
    p_sil_adj = benjamini_hochberg(p_sil, alpha=p_star)[1]
    z_r_exact, z_p_exact = exact_association_z(c_ref, s_r), exact_association_z(c_pred, s_p)
    erased_silence = silence_erased(p_sil_adj if correction == "bh" else p_sil, z_r_exact, z_p_exact, p_star=p_star,
                                    z_neutral=z_neutral, z_strong=z_strong)
    table = pd.DataFrame({
        "word": vocab.astype(str),
        f"c_ref_{g[0]}": c_ref[:, 0].astype(np.int64), f"c_ref_{g[1]}": c_ref[:, 1].astype(np.int64),
        f"c_pred_{g[0]}": c_pred[:, 0].astype(np.int64), f"c_pred_{g[1]}": c_pred[:, 1].astype(np.int64),
        "c_ref": (c_ref[:, 0] + c_ref[:, 1]).astype(np.int64), "c_pred": (c_pred[:, 0] + c_pred[:, 1]).astype(np.int64),
        "s_ref": s_r, "var_ref": v_r, "z_ref": z_r,
        "s_pred": s_p, "var_pred": v_p, "z_pred": z_p,
        "z_disp": z_disp, "p": p, "p_adj": p_adj, "displaced": displaced.astype(bool),
        "category": classify_shift(z_r, z_p, displaced, z_neutral=z_neutral, z_strong=z_strong),
        "z_ref_exact": z_r_exact, "z_pred_exact": z_p_exact,
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
        docstring, items 9–10): ``z_ref_exact``, ``z_pred_exact``, ``silence_group``,
        ``p_silence``, ``p_silence_adj`` (BH) and ``erased_silence``. ``table.attrs`` holds the
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


# ----------------------------------------------------------------------------------------------
# WAE


def wae(table: pd.DataFrame, *, assoc_z: float | None = None) -> dict[str, float]:
    """Weighted Association Erasure (Eq. 4) from a CAD table (:func:`cad`): point estimates only.

    Returns ``WAE_pred``, ``WAE_ref`` (ω = c^(pred) or c^(ref), over all V words), the
    group-specific ``WAE_<wt>_<g>`` over the words associated with g in the reference
    (z_ref ≥ τ for groups[0], z_ref ≤ −τ for groups[1]; τ = ``assoc_z``, default the table's
    z_neutral) and ``delta_WAE_<wt>`` = WAE_<wt>_<g0> − WAE_<wt>_<g1>. NaN where the weights sum
    to 0. For CIs and permutation p-values use :func:`wae_inference` / :func:`association_audit`.
    """
    g = table.attrs.get("groups", ("F", "M"))
    tau = float(table.attrs.get("z_neutral", 1.0) if assoc_z is None else assoc_z)
    z2 = table["z_disp"].to_numpy(float) ** 2
    a0, a1 = _assoc_masks(table["z_ref"].to_numpy(float), tau)
    out: dict[str, float] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for wt in ("pred", "ref"):
            w = table[f"c_{wt}"].to_numpy(float)
            out[f"WAE_{wt}"] = float(np.sum(w * z2) / np.sum(w))
            out[f"WAE_{wt}_{g[0]}"] = float(np.sum(w * z2 * a0) / np.sum(w * a0))
            out[f"WAE_{wt}_{g[1]}"] = float(np.sum(w * z2 * a1) / np.sum(w * a1))
            out[f"delta_WAE_{wt}"] = out[f"WAE_{wt}_{g[0]}"] - out[f"WAE_{wt}_{g[1]}"]
    return out


#: reports × (bootstrap + permutation replicates) from which wae_inference runs its bootstrap and its
#: permutations on two threads (below it, thread start-up costs more than it saves)
PARALLEL_WORK = 20_000_000


class _Engine:
    """Vectorised WAE statistics of an :class:`AssociationCounts` under report weights / relabellings."""

    def __init__(self, counts: AssociationCounts, alpha: float, tau: float) -> None:
        self.c = counts
        self.alpha, self.tau = alpha, tau
        self.V = len(counts.vocab)
        # replicates per chunk: [V × chunk] float arrays of ~4M cells (32 MB) at most
        self.chunk = int(np.clip(4_000_000 // max(self.V, 1), 16, 256))
        self.g = (str(counts.groups[0]), str(counts.groups[1]))
        self.n = counts.n_reports
        # Products are taken as ``X.T @ D`` with X the [n × V] CSR count matrix (a CSC view of its transpose)
        # and D a C-ordered [n × k] dense block: scipy's csc kernel walks each report once and adds its row of D
        # to its words, ~5x faster than the [V × n] CSR @ dense layout. Weighted sums of integer counts are
        # exact in float64, so the layout changes no number.
        self.R = counts.reference.astype(float)  # [n × V]
        self.P = counts.prediction.astype(float)
        self.is0 = (counts.group == 0).astype(float)
        self.is1 = 1.0 - self.is0
        self.rows0, self.rows1 = np.flatnonzero(counts.group == 0), np.flatnonzero(counts.group == 1)
        # the bootstrap weights each group's reports: the group's rows only (half the work of weighting all)
        self.R0, self.R1 = self.R[self.rows0], self.R[self.rows1]
        self.P0, self.P1 = self.P[self.rows0], self.P[self.rows1]
        self.tot_r = np.asarray(self.R.sum(axis=0)).ravel()
        self.tot_p = np.asarray(self.P.sum(axis=0)).ravel()
        # relabellings sum 0/1-weighted integer counts, at most a word's total: exact in float32 below 2**24,
        # and float32 halves the memory the [n × chunk] indicator and the products move
        exact32 = max(self.tot_r.max(initial=0), self.tot_p.max(initial=0)) < 2**24
        self.perm_dtype = np.float32 if exact32 else np.float64
        self.RP_perm = sparse.hstack([self.R, self.P], format="csr").astype(self.perm_dtype)  # [n × 2V]
        c_ref, c_pred = counts.group_totals()
        self.cr, self.cp = c_ref, c_pred

    def stats(self, cr0: np.ndarray, cr1: np.ndarray, cp0: np.ndarray, cp1: np.ndarray) -> dict[str, np.ndarray]:
        return _wae_batch(cr0, cr1, cp0, cp1, alpha=self.alpha, V=self.V, tau=self.tau, g=self.g)

    def observed(self) -> dict[str, float]:
        out = self.stats(self.cr[:, [0]], self.cr[:, [1]], self.cp[:, [0]], self.cp[:, [1]])
        return {k: float(v[0]) for k, v in out.items()}

    def _accumulate(self, parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def weighted(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """Statistics for report multiplicities W [k × n] (bootstrap resamples)."""
        parts = []
        for i in range(0, W.shape[0], self.chunk):
            w = W[i:i + self.chunk]
            w0, w1 = np.ascontiguousarray(w[:, self.rows0].T), np.ascontiguousarray(w[:, self.rows1].T)  # [n_g × k]
            parts.append(self.stats(self.R0.T @ w0, self.R1.T @ w1, self.P0.T @ w0, self.P1.T @ w1))
        return self._accumulate(parts)

    def jackknife(self) -> dict[str, np.ndarray]:
        """Leave-one-report-out statistics (BCa acceleration), in report order."""
        parts = []
        R, P = self.c.reference, self.c.prediction
        for i in range(0, self.n, self.chunk):
            rd = R[i:i + self.chunk].toarray().T.astype(float)  # [V × k]
            pd_ = P[i:i + self.chunk].toarray().T.astype(float)
            m0, m1 = self.is0[i:i + self.chunk], self.is1[i:i + self.chunk]
            parts.append(self.stats(self.cr[:, [0]] - rd * m0, self.cr[:, [1]] - rd * m1,
                                    self.cp[:, [0]] - pd_ * m0, self.cp[:, [1]] - pd_ * m1))
        return self._accumulate(parts)

    def relabelled(self, idx0: np.ndarray) -> dict[str, np.ndarray]:
        """Statistics when the reports ``idx0[b]`` form group 0 and the rest group 1 (idx0 [B × n0])."""
        idx0 = np.asarray(idx0)
        single = idx0.ndim == 1
        idx0 = np.atleast_2d(idx0)
        if not np.issubdtype(idx0.dtype, np.integer):
            idx0 = idx0.astype(np.int64)
        parts = []
        for i in range(0, idx0.shape[0], self.chunk):
            sub = idx0[i:i + self.chunk]
            k = sub.shape[0]
            flat = np.zeros(k * self.n, dtype=self.perm_dtype)  # row b marks group 0 in relabelling b
            flat[(sub + (np.arange(k, dtype=np.int64) * self.n)[:, None]).ravel()] = 1.0
            ind = np.ascontiguousarray(flat.reshape(k, self.n).T)  # [n × k], C-ordered for the csc kernel
            rp0 = (self.RP_perm.T @ ind).astype(np.float64)  # [2V × k]: one pass over the indicator for both
            r0, p0 = rp0[:self.V], rp0[self.V:]
            parts.append(self.stats(r0, self.tot_r[:, None] - r0, p0, self.tot_p[:, None] - p0))
        out = self._accumulate(parts)
        return {k: (v[0] if single else v) for k, v in out.items()}


def wae_inference(
    counts: AssociationCounts,
    *,
    alpha: float = 0.1,
    assoc_z: float = 1.0,
    min_count: int = 1,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    ci_method: Literal["percentile", "basic", "bca", "shifted"] = "shifted",
    bootstrap_seed: int | None = 0,
    n_permutations: int = 1000,
    permutation_seed: int | None = 1,
    permuted: Sequence[str] = PERMUTED_DEFAULT,
    max_failed: float = 0.1,
) -> pd.DataFrame:
    """WAE (Eq. 4) with bootstrap CIs over reports and label-permutation p-values.

    Args:
        counts: the corpus (:func:`count_reports`); ``min_count`` as in :func:`cad`.
        alpha: smoothing α of Eq. (1). assoc_z: τ, the |z_ref| a word needs to count as associated
            with a group in WAE_g (pass the CAD z_neutral; module docstring, item 5).
        n_bootstrap, confidence, ci_method, bootstrap_seed, max_failed: the bootstrap over reports
            (``n_bootstrap=0`` skips it). The resamples are :func:`radaudit.stats.resample_weights`'
            report multiplicities, the draws of :func:`radaudit.stats.bootstrap_ci` (``data=report
            indices``, same seed); the interval is the stats module's percentile or BCa
            (leave-one-report-out jackknife) interval.
            Replicates where a statistic is undefined (NaN: an empty association set in the
            resample) count as failed; above ``max_failed`` the CI is NaN (not an error).
            Default percentile, not BCa: see the module docstring (item 6) for why; the ``bias``
            column is mean(replicates) − estimate.
        n_permutations, permutation_seed: the label-permutation test (``0`` skips it), via
            :func:`radaudit.stats.permutation_test` on the report indices of the two groups
            (``permutation_type="independent"``): group sizes are kept, each report's reference
            and prediction move together. ``permuted`` names the statistics tested; ``WAE_*`` are
            tested one-sided ("greater"), ``delta_WAE_*`` two-sided. All statistics are computed
            once per permutation batch (the same seed gives the same permutations to each test).

    Returns:
        One row per statistic (:data:`WAE_COLUMNS`): ``metric`` (``WAE_pred``, ``WAE_pred_<g0>``,
        ``WAE_pred_<g1>``, ``delta_WAE_pred`` and the same for ``ref``), ``weighting``, ``group``
        (``all``, a group, or ``"<g0>-<g1>"``), the estimate, its CI, ``se`` and ``bias`` of the
        replicates, ``n_words`` (words in the sum, ω > 0), and the permutation p-value (NaN where
        not tested). Relabellings in which a statistic is undefined (an empty association set;
        small corpora) are left out of its p-value (the permutation distribution conditional on
        the statistic being defined), counted in ``perm_n_undefined`` and warned about.
    """
    if ci_method not in METHODS:
        raise AssociationInputError(f"ci_method must be one of {METHODS}, got {ci_method!r}")
    if assoc_z < 0:
        raise AssociationInputError(f"assoc_z must be >= 0, got {assoc_z!r}")
    counts = counts.restrict(min_count)
    if len(counts.vocab) == 0:
        raise AssociationInputError("no word is left after tokenisation, stop-word removal and min_count: nothing to audit")
    eng = _Engine(counts, alpha, assoc_z)
    g = eng.g
    names = _wae_names(g)
    unknown = sorted(set(permuted) - set(names))
    if unknown:
        raise AssociationInputError(f"permuted names unknown statistics {unknown}; allowed: {names}")
    est = eng.observed()

    # words that enter each sum (weight > 0 and, for WAE_g, in the reference association set)
    tab_z = _log_ratio(eng.cr[:, [0]], eng.cr[:, [1]], alpha, eng.V)
    z_ref = (tab_z[0] / np.sqrt(tab_z[1]))[:, 0]
    a0, a1 = _assoc_masks(z_ref, assoc_z)
    n_words: dict[str, int] = {}
    for wt, w in (("pred", eng.cp.sum(axis=1)), ("ref", eng.cr.sum(axis=1))):
        n_words[f"WAE_{wt}"] = int((w > 0).sum())
        n_words[f"WAE_{wt}_{g[0]}"] = int(((w > 0) & a0).sum())
        n_words[f"WAE_{wt}_{g[1]}"] = int(((w > 0) & a1).sum())
        n_words[f"delta_WAE_{wt}"] = n_words[f"WAE_{wt}_{g[0]}"] + n_words[f"WAE_{wt}_{g[1]}"]

    if n_bootstrap and eng.n < 2:
        raise AssociationInputError(f"the bootstrap needs at least 2 reports, got {eng.n}")
    idx = np.arange(eng.n, dtype=np.int32 if eng.n < 2**31 else np.int64)  # permuted by scipy: int32 is lighter
    tested = [k for k in names if k in set(permuted)] if n_permutations else []
    live = [k for k in tested if math.isfinite(est[k])]

    def bootstrap_replicates() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
        # report multiplicities [k × n], k = eng.chunk replicates at a time: the draws of bootstrap_ci with this seed
        parts = [eng.weighted(W) for W in resample_weights(eng.n, n_bootstrap, seed=bootstrap_seed, chunk=eng.chunk)]
        return eng._accumulate(parts), (eng.jackknife() if ci_method == "bca" else None)

    def permutations() -> PermutationResult:
        # every tested statistic on the SAME permutations, generated once (scipy's multi-output form)
        def stat(xb: np.ndarray, yb: np.ndarray, axis: int = -1) -> np.ndarray:
            out = eng.relabelled(xb)
            return np.stack([out[k] for k in live], axis=-1)

        return permutation_test(idx[counts.group == 0], idx[counts.group == 1], statistic=stat,
                                n_permutations=n_permutations, alternative="greater", seed=permutation_seed,
                                batch=eng.chunk)

    # The bootstrap and the permutations are independent (own seeds) and spend their time in scipy's sparse
    # products, which release the GIL: on a large corpus they run side by side on two threads. Intervals,
    # p-values and warnings are formed here, in the calling thread, from what the threads return.
    boot_res = perm_res = None
    if n_bootstrap and live and eng.n * (n_bootstrap + n_permutations) >= PARALLEL_WORK:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            fb, fp = pool.submit(bootstrap_replicates), pool.submit(permutations)
            boot_res, perm_res = fb.result(), fp.result()
    else:
        boot_res = bootstrap_replicates() if n_bootstrap else None
        perm_res = permutations() if live else None

    intervals: dict[str, BootstrapResult | None] = {k: None for k in names}
    if boot_res is not None:
        reps, jack = boot_res
        for k in names:
            intervals[k] = _ci(est[k], reps[k], None if jack is None else jack[k], ci_method, confidence, eng.n, k,
                               max_failed)

    perms: dict[str, Any] = {k: (math.nan, "two-sided" if k.startswith("delta_") else "greater", 0, False, 0)
                             for k in tested if k not in live}
    if perm_res is not None:
        # each p-value is scipy's formula on its own column (_conditional_pvalue: equal to scipy's when every
        # null value is defined), with its own alternative
        null = np.asarray(perm_res.null_distribution).reshape(perm_res.n_permutations, len(live))
        for j, k in enumerate(live):
            alt = "two-sided" if k.startswith("delta_") else "greater"
            n_undef = int(np.count_nonzero(~np.isfinite(null[:, j])))
            pvalue = _conditional_pvalue(null[:, j], float(np.atleast_1d(perm_res.statistic)[j]), alt, perm_res.exact)
            if n_undef:
                warnings.warn(f"{k}: undefined (NaN) in {n_undef} of {perm_res.n_permutations} relabellings (an empty "
                              "association set); its p-value is over the defined ones only (see perm_n_undefined)",
                              RuntimeWarning, stacklevel=2)
            perms[k] = (pvalue, alt, perm_res.n_permutations, perm_res.exact, n_undef)

    rows = []
    for k in names:
        wt = "pred" if "_pred" in k else "ref"
        grp = f"{g[0]}-{g[1]}" if k.startswith("delta_") else (k.split(f"WAE_{wt}_", 1)[1] if f"WAE_{wt}_" in k else "all")
        r = intervals[k]
        p = perms.get(k, (math.nan, None, 0, False, 0))
        rows.append({
            "metric": k, "weighting": wt, "group": grp, "estimate": est[k],
            # WAE is a mean of squares: a bound below 0 (shifted/basic intervals) is clipped to 0
            "low": (r.low if k.startswith("delta_") else max(r.low, 0.0)) if r else math.nan,
            "high": r.high if r else math.nan, "se": r.se if r else math.nan,
            "bias": float(np.nanmean(r.replicates)) - est[k] if r else math.nan,
            "confidence": confidence, "method": r.method if r else None, "n_units": eng.n,
            "n_bootstrap": r.n_bootstrap if r else 0, "n_failed": r.n_failed if r else 0,
            "n_words": n_words[k], "perm_pvalue": p[0], "perm_alternative": p[1], "n_permutations": p[2],
            "perm_exact": p[3], "perm_n_undefined": p[4],
        })
    return pd.DataFrame(rows, columns=list(WAE_COLUMNS))


def _conditional_pvalue(null: np.ndarray, observed: float, alternative: str, exact: bool) -> float:
    """Permutation p-value over the relabellings where the statistic is defined.

    scipy (behind :func:`radaudit.stats.permutation_test`) counts a NaN null value as "not as
    extreme", which makes the p-value too small when some relabellings leave a group without
    associated words. This is scipy's formula (same +1 adjustment unless exact, same 100·eps
    tie tolerance, two-sided = 2·min of the tails, capped at 1) restricted to the finite null
    values: the permutation distribution conditional on the statistic being defined. Equal to
    scipy's p-value when every null value is finite (tested).
    """
    d = null[np.isfinite(null)]
    if d.size == 0:
        return math.nan
    adj = 0 if exact else 1
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = (np.count_nonzero(d <= observed + gamma) + adj) / (d.size + adj)
    greater = (np.count_nonzero(d >= observed - gamma) + adj) / (d.size + adj)
    p = {"less": less, "greater": greater, "two-sided": 2 * min(less, greater)}[alternative]
    return float(min(max(p, 0.0), 1.0))


def _ci(estimate: float, reps: np.ndarray, jack: np.ndarray | None, method: str, confidence: float, n: int,
        name: str, max_failed: float) -> BootstrapResult | None:
    """The stats module's interval; None (CI reported as NaN) when the statistic is undefined or too many replicates fail."""
    if not math.isfinite(estimate):
        return None
    ok = np.isfinite(reps)
    if (~ok).sum() > max_failed * len(reps) or not ok.any():
        warnings.warn(f"{name}: {(~ok).sum()} of {len(reps)} bootstrap replicates are undefined (an empty association "
                      "set or no weight in the resample); its CI is reported as NaN", RuntimeWarning, stacklevel=3)
        return None
    return interval_from_replicates(estimate, reps, jack, method, confidence, n, name, max_failed)


# ----------------------------------------------------------------------------------------------
# the generic entry point


@dataclass(frozen=True)
class AssociationAudit:
    """Everything :func:`association_audit` computes for one corpus.

    ``words``: the CAD per-word table (:func:`cad`). ``categories``: words per category
    (:func:`cad_summary`). ``wae``: :func:`wae_inference`'s table. ``n_reports``: reports per group
    that were audited; ``n_tokens``: tokens per (corpus, group) after stop-word removal;
    ``excluded``: rows left out because their group value is not one of ``groups``, by value
    (``"<NA>"`` for missing), never dropped silently. ``params``: the parameters used.
    """

    words: pd.DataFrame
    categories: pd.DataFrame
    wae: pd.DataFrame
    groups: tuple[str, str]
    n_reports: dict[str, int]
    n_tokens: dict[str, int]
    excluded: dict[str, int]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_excluded(self) -> int:
        return int(sum(self.excluded.values()))


def _check_texts(df: pd.DataFrame, col: str) -> None:
    s = df[col]
    missing = s.isna().to_numpy()
    if missing.any():
        bad = list(df.index[missing][:10])
        raise AssociationInputError(
            f"column {col!r} is missing (None/NaN) in {int(missing.sum())} rows (index {bad}"
            f"{' ...' if missing.sum() > 10 else ''}). Drop those rows upstream and report how many, or use '' for a "
            "report that is genuinely empty (it then contributes no tokens).")
    wrong = ~s.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    if wrong.any():
        raise AssociationInputError(f"column {col!r} has non-string values at index {list(df.index[wrong][:10])}")


def association_audit(
    df: pd.DataFrame,
    reference: str = "reference",
    prediction: str = "prediction",
    group: str = "group",
    groups: tuple[Any, Any] = ("F", "M"),
    *,
    alpha: float = 0.1,
    p_star: float = 0.05,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    correction: Literal["bh", "none"] = "bh",
    min_count: int = 1,
    assoc_z: float | None = None,
    stopwords: Iterable[str] | None = None,
    min_length: int = 2,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    ci_method: Literal["percentile", "basic", "bca", "shifted"] = "shifted",
    bootstrap_seed: int | None = 0,
    n_permutations: int = 1000,
    permutation_seed: int | None = 1,
    strict: bool = False,
) -> AssociationAudit:
    """CAD and WAE for any corpus of (reference, prediction, group) rows (paper §2).

    Args:
        df: one row per report; the three named columns hold the reference text, the generated
            text and the group (sex by default; any two values of any column: age bands, sites).
        groups: the two groups compared; s > 0 means associated with ``groups[0]``. Rows whose
            group is anything else (``"O"``, NA, a third band) are excluded and counted in
            ``excluded``; with ``strict=True`` they raise instead.
        alpha, p_star, z_neutral, z_strong, correction, min_count: CAD (:func:`cad`).
        assoc_z: τ of WAE_g (default ``z_neutral``). stopwords, min_length: tokenisation
            (:func:`tokenize_for_association`).
        n_bootstrap, confidence, ci_method, bootstrap_seed, n_permutations, permutation_seed:
            inference (:func:`wae_inference`); the notebook derives the seeds from the run seed.

    Texts: a missing text (None/NaN) is an error naming the rows; ``""`` is a defined, empty
    report with no tokens. If every prediction is empty, all s_pred are 0 (both groups smooth to
    the uniform distribution 1/V), every reference association counts as erased where it is
    displaced, and WAE_pred is NaN (its weights sum to 0).

    Raises:
        AssociationInputError: a missing column or text, a group with no reports (the message
            gives the counts per group and the excluded values), unknown group values with
            ``strict=True``, no token left to audit, bad parameters.
    """
    missing_cols = [c for c in (reference, prediction, group) if c not in df.columns]
    if missing_cols:
        raise AssociationInputError(f"df has no column(s) {missing_cols}; columns are {list(df.columns)}")
    g = tuple(groups)
    if len(g) != 2 or g[0] == g[1]:
        raise AssociationInputError(f"groups must be two distinct values, got {groups!r}")
    _check_thresholds(alpha, p_star, z_neutral, z_strong)
    labels = df[group]
    known = labels.isin(list(g)).to_numpy(dtype=bool) & ~labels.isna().to_numpy(dtype=bool)
    excluded: dict[str, int] = {}
    if (~known).any():
        vals = labels[~known]
        keyed = vals.map(lambda v: "<NA>" if pd.isna(v) else str(v))
        excluded = {str(k): int(v) for k, v in sorted(keyed.value_counts().items())}
        if strict:
            raise AssociationInputError(
                f"{int((~known).sum())} rows have a {group!r} value outside groups={list(g)}: {excluded}. Map or drop "
                "them, or pass strict=False to exclude them (they are then counted in the result's 'excluded').")
    kept = df.loc[known]
    sizes = {str(x): int((kept[group] == x).sum()) for x in g}
    empty = [k for k, v in sizes.items() if v == 0]
    if empty:
        raise AssociationInputError(
            f"group {empty[0]!r} has no reports (reports per group: {sizes}; excluded values: {excluded or 'none'}). "
            "CAD compares two groups: check the group column and the groups parameter.")
    _check_texts(kept, reference)
    _check_texts(kept, prediction)
    counts = count_reports(kept[reference].tolist(), kept[prediction].tolist(), kept[group].tolist(), groups=(g[0], g[1]),
                           stopwords=stopwords, min_length=min_length)
    if len(counts.vocab) == 0:
        raise AssociationInputError("no token is left in either corpus after tokenisation and stop-word removal")
    tau = z_neutral if assoc_z is None else assoc_z
    words = cad_from_counts(counts, alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong,
                            min_count=min_count, correction=correction)
    wae_table = wae_inference(counts, alpha=alpha, assoc_z=tau, min_count=min_count, n_bootstrap=n_bootstrap,
                              confidence=confidence, ci_method=ci_method, bootstrap_seed=bootstrap_seed,
                              n_permutations=n_permutations, permutation_seed=permutation_seed)
    gs = (str(g[0]), str(g[1]))
    n_tokens = {f"{c}_{x}": int(words[f"c_{c}_{x}"].sum()) for c in ("ref", "pred") for x in gs}
    params = dict(alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong, z_crit=words.attrs["z_crit"],
                  correction=correction, min_count=min_count, assoc_z=tau, min_length=min_length,
                  stopwords="nltk_english" if stopwords is None else "custom", V=int(words.attrs["V"]),
                  n_bootstrap=n_bootstrap, confidence=confidence, ci_method=ci_method, bootstrap_seed=bootstrap_seed,
                  n_permutations=n_permutations, permutation_seed=permutation_seed)
    return AssociationAudit(words=words, categories=cad_summary(words), wae=wae_table, groups=gs, n_reports=sizes,
                            n_tokens=n_tokens, excluded=excluded, params=params)
