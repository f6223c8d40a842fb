"""DS/RS cell and Overall CIs take every bootstrap resample at once (bootstrap_ci(vectorized=True)): the same
intervals as the one-replicate-at-a-time statistics, within float rounding, on random cells."""

from __future__ import annotations

import numpy as np
import pytest

from radaudit.audits.metric_metaeval import scores as S
from radaudit.stats import bootstrap_ci


def _cases(n_cases: int = 15):
    rng = np.random.default_rng(0)
    for seed in range(n_cases):
        n = int(rng.integers(3, 40))
        values = np.round(rng.random(n) * 100, int(rng.integers(0, 3)))  # ties, as label F1's 0/100 make
        rules = rng.choice(["swap", "negate", "drop", "zz"][: int(rng.integers(1, 5))], n).astype(object)
        columns = rng.choice(["A", "B", "C", "D", "E"][: int(rng.integers(1, 6))], n).astype(object)
        yield seed, values, rules, columns


def test_group_means_by_hand():
    values = np.array([[1.0, 3.0, 10.0], [2.0, 2.0, 2.0]])
    keys = np.array([[0, 0, 2], [1, 1, 1]])
    out = S._group_means(values, keys, 3)
    np.testing.assert_array_equal(out[0], [2.0, np.nan, 10.0])   # key 1 absent from resample 0
    np.testing.assert_array_equal(out[1], [np.nan, 2.0, np.nan])
    # each rule weighs the same: rules (0: 1, 3) and (2: 10) -> (2 + 10) / 2
    assert S._cell_mean_resamples(values[:1], keys[:1])[0] == 6.0


@pytest.mark.parametrize("with_rules", [False, True])
def test_cell_ci_equals_the_per_replicate_statistic(with_rules):
    for seed, values, rules, _ in _cases():
        if with_rules:
            loop = bootstrap_ci((values, rules), S._cell_mean, n_bootstrap=200, method="percentile", seed=seed)
            vec = bootstrap_ci((values, S._codes(rules)), S._cell_mean_resamples, n_bootstrap=200,
                               method="percentile", seed=seed, vectorized=True)
        else:
            loop = bootstrap_ci(values, np.mean, n_bootstrap=200, method="percentile", seed=seed)
            vec = bootstrap_ci((values,), S._cell_mean_resamples, n_bootstrap=200, method="percentile", seed=seed,
                               vectorized=True)
        np.testing.assert_allclose(vec.replicates, loop.replicates, rtol=0, atol=1e-10)
        assert vec.low == pytest.approx(loop.low, abs=1e-10) and vec.high == pytest.approx(loop.high, abs=1e-10)


@pytest.mark.parametrize("with_rules", [False, True])
def test_overall_ci_equals_the_per_replicate_statistic(with_rules):
    for seed, values, rules, columns in _cases():
        r = rules if with_rules else None
        loop = bootstrap_ci((values, columns, r) if with_rules else (values, columns),
                            lambda v, c, rr=None: S._overall_of_columns(v, c, rr), n_bootstrap=200,
                            method="percentile", seed=seed)
        data = (values, S._codes(columns), S._codes(rules)) if with_rules else (values, S._codes(columns))
        vec = bootstrap_ci(data, S._overall_resamples, n_bootstrap=200, method="percentile", seed=seed,
                           vectorized=True)
        np.testing.assert_allclose(vec.replicates, loop.replicates, rtol=0, atol=1e-10)


def test_auroc_ci_equals_the_per_replicate_statistic_including_failed_resamples():
    """Midrank U of every resample at once: the same replicates as auroc() one at a time; a resample without
    both kinds of pair is NaN (a failed replicate), where auroc() raises and the loop counts it failed."""
    rng = np.random.default_rng(1)
    failed = 0
    for seed in range(15):
        n = int(rng.integers(4, 30))
        s = np.round(rng.normal(size=n), int(rng.integers(0, 2)))  # ties
        lab = rng.random(n) < rng.uniform(0.1, 0.9)
        lab[:2] = [True, False]
        loop = bootstrap_ci((s, lab), S._auroc_labels, n_bootstrap=200, method="percentile", seed=seed, max_failed=0.9)
        vec = bootstrap_ci((s, lab), S._auroc_resamples, n_bootstrap=200, method="percentile", seed=seed,
                           max_failed=0.9, vectorized=True)
        np.testing.assert_array_equal(vec.replicates, loop.replicates)
        assert vec.n_failed == loop.n_failed and (vec.low, vec.high) == (loop.low, loop.high)
        failed += vec.n_failed
    assert failed > 0  # the failed-resample path was exercised
    # by hand: insignificant {3, 1}, significant {2}: P(X > Y) = 1/2
    assert S._auroc_resamples(np.array([[3.0, 1.0, 2.0]]), np.array([[True, True, False]]))[0] == 0.5


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_rater_agreement_of_every_resample_at_once_equals_one_at_a_time(method):
    """The agreement table's bootstrap takes every resample at once when the rater matrix has no gaps: per resample
    the same mean pairwise correlation (constant raters in a resample left out, as one at a time), and over a
    cluster bootstrap with clusters of two rows the same interval."""
    from radaudit.audits.metric_metaeval.agreement import _mean_pairwise, _mean_pairwise_rows
    from radaudit.stats import bootstrap_ci

    rng = np.random.default_rng(2)
    mat = rng.integers(0, 4, (40, 3)).astype(float)  # error counts: many ties, resamples with a constant rater
    idx = rng.integers(0, 40, (200, 40))
    idx[0] = 5  # one item repeated: every rater constant -> undefined
    got = _mean_pairwise_rows(mat, idx, method)
    want = np.array([_mean_pairwise(mat[i], method) for i in idx])
    assert np.isnan(got[0]) and np.isnan(want[0])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)
    units = np.repeat(np.arange(20), 2)  # a case and its two candidate reports
    loop = bootstrap_ci(np.arange(40), lambda i: _mean_pairwise(mat[i], method), units=units, n_bootstrap=300, seed=1,
                        method="percentile", max_failed=0.5)
    vec = bootstrap_ci(np.arange(40), lambda i: _mean_pairwise_rows(mat, i, method), units=units, n_bootstrap=300,
                       seed=1, method="percentile", max_failed=0.5, vectorized=True)
    assert (vec.low, vec.high) == (pytest.approx(loop.low, abs=1e-12), pytest.approx(loop.high, abs=1e-12))
