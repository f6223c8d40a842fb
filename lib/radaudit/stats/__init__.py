"""The one statistics layer: every resample, interval, test and rank statistic of the lab lives here.

Every headline number in a radaudit table carries a 95% bootstrap confidence interval computed by this
package, resampling the unit the paper resamples (reports, pairs, studies, patients). No experiment draws its
own resamples: it calls the engine in :mod:`radaudit.stats.resampling`.

* :mod:`radaudit.stats.resampling` — the seeded bootstrap engine (iid, by cluster, paired across statistics):
  :func:`bootstrap_ci`, :func:`paired_bootstrap`, :func:`stable_seed`;
* :mod:`radaudit.stats.intervals` — intervals from replicates (percentile, basic, shifted, BCa), the bootstrap
  p-value of a paired difference, the Wilson interval;
* :mod:`radaudit.stats.significance` — permutation tests and Benjamini–Hochberg.

The knob for the number of bootstrap replicates is ``n_bootstrap`` in every experiment's params; the
functions here call it ``n_resamples`` (scipy's name) where it is a plain argument.
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
    "benjamini_hochberg",
    "bootstrap_ci",
    "bootstrap_pvalue",
    "column_mean",
    "cover_rounding",
    "difference_label",
    "interval_from_replicates",
    "paired_bootstrap",
    "permutation_test",
    "stable_seed",
    "wilson_ci",
]
