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
   (|z_ref| > z_strong, |z_pred| < z_neutral), with the z's of item 10, and its reference association
   survives BH (item 11). The ``category`` column
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
11. **Which reference words are sex-associated at all** (``p_ref_exact``, ``p_ref_exact_adj``,
   ``ref_associated``). The paper's "strongly associated" (|z_ref| > z_strong) is a per-word threshold
   over V words with no correction for testing every word: with V ≈ 900 words about 5% pass |z| > 2 by
   chance alone. A word counts as associated with a group in the references only when its exact test
   (item 10) survives Benjamini–Hochberg over the V words at p* (``correction="none"``: unadjusted
   p ≤ p*). The silence test calls a word erased only when it is ``ref_associated`` (besides the
   conditions of item 9): a word that is not sex-associated in the references cannot be erased. The
   paper's ``category`` column is left as the paper defines it (Eq. 3, §2.1.2); a reader who wants the
   paper's Erasure restricted to real associations takes ``(category == "Erasure") & ref_associated``.

Where the parts are (one line per module)
-----------------------------------------
- ``counts.py``: tokenisation (stop words, placeholders) and the sparse [reports × vocabulary] count matrices.
- ``equations.py``: Eqs. (1)–(4) as array functions, vectorised over replicates; :func:`wae` of a CAD table.
- ``cad.py``: the CAD per-word table, the §2.1.2 categories and the silence test (items 3, 4, 8–10).
- ``inference.py``: :func:`wae_inference`: bootstrap CIs over reports and label-permutation p-values (items 6–7).
- ``audit.py``: :func:`association_audit`, the generic entry point (any corpus, any two groups).
Every public name is importable from this package (``from radaudit.metrics.association import cad``).

Speed: reports are tokenised once into sparse [reports × vocabulary] count matrices; bootstrap,
jackknife and permutation replicates are sums of count rows (sparse matrix products); all tested
statistics share one set of permutations, and on a large corpus the bootstrap and the permutations run
on two threads. The time grows linearly with the number of reports; the measured figure and its scaling
curve are in ``benchmarks/results/association.json`` and ``association_scaling.png``
(``benchmarks/bench_association.py``).
"""

from radaudit.metrics.association.audit import AssociationAudit, association_audit
from radaudit.metrics.association.cad import (
    CATEGORIES,
    CATEGORY_ORDER,
    SILENCE_ERASURE,
    cad,
    cad_arrays,
    cad_from_counts,
    cad_summary,
    classify_shift,
    erasure_counts,
    exact_association_p,
    exact_association_z,
    silence_erased,
    silence_pvalues,
)
from radaudit.metrics.association.counts import (
    STOPWORDS_FILE,
    AssociationCounts,
    AssociationInputError,
    count_reports,
    load_stopwords,
    tokenize_for_association,
)
from radaudit.metrics.association.equations import wae
from radaudit.metrics.association.inference import PERMUTED_DEFAULT, WAE_COLUMNS, wae_inference

__all__ = [
    "CATEGORIES",
    "CATEGORY_ORDER",
    "PERMUTED_DEFAULT",
    "STOPWORDS_FILE",
    "WAE_COLUMNS",
    "AssociationAudit",
    "AssociationCounts",
    "AssociationInputError",
    "association_audit",
    "cad",
    "cad_arrays",
    "cad_from_counts",
    "cad_summary",
    "classify_shift",
    "count_reports",
    "erasure_counts",
    "exact_association_p",
    "exact_association_z",
    "load_stopwords",
    "SILENCE_ERASURE",
    "silence_erased",
    "silence_pvalues",
    "tokenize_for_association",
    "wae",
    "wae_inference",
]
