"""The one statistics layer: every resample, interval, test and rank statistic of the lab lives here.

Every headline number in a radaudit table carries a 95% bootstrap confidence interval computed by this
package, resampling the unit the paper resamples (reports, pairs, studies, patients). No experiment draws its
own resamples: it calls the engine in :mod:`radaudit.stats.resampling`.

* :mod:`radaudit.stats.resampling` — the seeded bootstrap engine (iid, by cluster, paired across statistics):
  :func:`bootstrap_ci`, :func:`paired_bootstrap`, :func:`stable_seed`, and the draws themselves for
  statistics computed on all resamples at once: :func:`resample_indices` (iid or stratified index blocks),
  :func:`resample_weights` (the same draws as count matrices), :func:`resample_groups` (independent samples);
* :mod:`radaudit.stats.intervals` — intervals from replicates (percentile, basic, shifted, BCa), the bootstrap
  p-value of a paired difference, the Wilson interval;
* :mod:`radaudit.stats.significance` — permutation tests and Benjamini–Hochberg;
* :mod:`radaudit.stats.ranks` — rank statistics: :func:`auroc` (with its every-replicate and two-sample forms),
  Kendall's τ-b and Spearman's ρ (of one pair of samples, of every column pair at once, or on every bootstrap
  replicate at once), and Pearson's r (one pair, or many column pairs at once).

The knob for the number of bootstrap replicates is ``n_bootstrap`` in every experiment's params and in the
resample generators; :func:`bootstrap_ci` and :func:`paired_bootstrap` still call it ``n_bootstrap`` (scipy's
name).
"""

from __future__ import annotations

from radaudit.stats.intervals import (
    METHODS,
    BootstrapError,
    BootstrapResult,
    BootstrapWarning,
    bootstrap_pvalue,
    cover_rounding,
    interval_from_replicates,
    wilson_ci,
)
from radaudit.stats.ranks import (
    auroc,
    auroc_interval,
    auroc_replicates,
    auroc_separation_interval,
    auroc_two_sample,
    average_ranks,
    kendall_tau,
    kendall_tau_columns,
    kendall_tau_replicates,
    kendall_test,
    pairwise_signs,
    pearson_r,
    pearson_r_pairs,
    pearson_test,
    spearman_rho,
    spearman_rho_columns,
    spearman_rho_replicates,
    spearman_test,
)
from radaudit.stats.resampling import (
    DIFFERENCE_SEP,
    PAIRED_COLUMNS,
    BootstrapData,
    ColumnMean,
    Statistic,
    bootstrap_ci,
    column_mean,
    difference_label,
    paired_bootstrap,
    resample_groups,
    resample_indices,
    resample_weights,
    stable_seed,
)
from radaudit.stats.significance import PermutationResult, benjamini_hochberg, permutation_test

__all__ = [
    "DIFFERENCE_SEP",
    "METHODS",
    "PAIRED_COLUMNS",
    "BootstrapData",
    "BootstrapError",
    "BootstrapResult",
    "BootstrapWarning",
    "ColumnMean",
    "PermutationResult",
    "Statistic",
    "auroc",
    "auroc_interval",
    "auroc_replicates",
    "auroc_separation_interval",
    "auroc_two_sample",
    "average_ranks",
    "benjamini_hochberg",
    "bootstrap_ci",
    "bootstrap_pvalue",
    "column_mean",
    "cover_rounding",
    "difference_label",
    "interval_from_replicates",
    "kendall_tau",
    "kendall_tau_columns",
    "kendall_tau_replicates",
    "kendall_test",
    "paired_bootstrap",
    "pairwise_signs",
    "pearson_r",
    "pearson_r_pairs",
    "pearson_test",
    "permutation_test",
    "resample_groups",
    "resample_indices",
    "resample_weights",
    "spearman_rho",
    "spearman_rho_columns",
    "spearman_rho_replicates",
    "spearman_test",
    "stable_seed",
    "wilson_ci",
]
