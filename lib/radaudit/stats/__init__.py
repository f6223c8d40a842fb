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

# Each module's ``__all__`` is the one list of its public names: re-exported here as they are (the API page of the
# docs, ``::: radaudit.stats``, reads the same lists).
from radaudit.stats import intervals, ranks, resampling, significance
from radaudit.stats.intervals import *  # noqa: F403  (re-exported: intervals.__all__)
from radaudit.stats.ranks import *  # noqa: F403  (re-exported: ranks.__all__)
from radaudit.stats.resampling import *  # noqa: F403  (re-exported: resampling.__all__)
from radaudit.stats.significance import *  # noqa: F403  (re-exported: significance.__all__)

__all__ = [*intervals.__all__, *ranks.__all__, *resampling.__all__, *significance.__all__]
