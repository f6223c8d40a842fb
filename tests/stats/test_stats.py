"""radaudit.stats on known answers: textbook values, hand enumerations, scipy on iid data."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from radaudit.stats import (
    METHODS,
    PAIRED_COLUMNS,
    BootstrapError,
    BootstrapResult,
    BootstrapWarning,
    benjamini_hochberg,
    bootstrap_ci,
    difference_label,
    paired_bootstrap,
    permutation_test,
    wilson_ci,
)

# ------------------------------------------------------------------------------- bootstrap_ci


def test_normal_mean_ci_matches_the_normal_approximation():
    rng = np.random.default_rng(42)
    x = rng.normal(10.0, 2.0, size=4000)
    half = 1.959964 * x.std(ddof=1) / math.sqrt(x.size)
    for method in METHODS:
        r = bootstrap_ci(x, np.mean, n_bootstrap=4000, method=method, seed=1)
        assert r.estimate == pytest.approx(x.mean())
        assert r.low == pytest.approx(x.mean() - half, abs=0.1 * half)
        assert r.high == pytest.approx(x.mean() + half, abs=0.1 * half)
        assert r.se == pytest.approx(x.std(ddof=1) / math.sqrt(x.size), rel=0.05)
        assert (r.method, r.n_units, r.n_bootstrap, r.n_failed, r.confidence) == (method, 4000, 4000, 0, 0.95)


def _exact_percentiles(values, q):
    """Quantiles of the exact bootstrap distribution of the mean of `values` (all n^n resamples)."""
    means = np.sort([np.mean(s) for s in itertools.product(values, repeat=len(values))])
    cdf = np.arange(1, means.size + 1) / means.size
    return [float(means[np.searchsorted(cdf, p)]) for p in q]


def test_percentile_ci_of_an_enumerable_case():
    # mean of 3 draws from {0, 1, 2}: the sum has counts 1,3,6,7,6,3,1 over 27 resamples, so
    # P(mean = 0) = 1/27 ≈ 0.037 and P(mean = 2) = 1/27: the 95% interval is [0, 2] and the 90%
    # interval [1/3, 5/3] (0.05 falls inside the mass at sum = 1, 0.95 inside that at sum = 5).
    data = np.array([0.0, 1.0, 2.0])
    assert _exact_percentiles(data, [0.025, 0.975]) == [0.0, 2.0]
    assert _exact_percentiles(data, [0.05, 0.95]) == pytest.approx([1 / 3, 5 / 3])
    r95 = bootstrap_ci(data, np.mean, method="percentile", n_bootstrap=20000, seed=0)
    assert (r95.low, r95.high) == (0.0, 2.0)
    r90 = bootstrap_ci(data, np.mean, method="percentile", confidence=0.90, n_bootstrap=20000, seed=0)
    assert r90.low == pytest.approx(1 / 3)
    assert r90.high == pytest.approx(5 / 3)


def test_percentile_ci_is_the_quantiles_of_the_replicates():
    rng = np.random.default_rng(3)
    x = rng.gamma(2.0, size=50)
    r = bootstrap_ci(x, np.median, method="percentile", n_bootstrap=999, seed=5)
    assert r.replicates.shape == (999,)
    assert (r.low, r.high) == tuple(np.quantile(r.replicates, [0.025, 0.975]))
    assert r.se == pytest.approx(np.std(r.replicates, ddof=1))


def test_bca_acceleration_matches_a_hand_computed_jackknife():
    # x = 1, 2, 3, 10; leave-one-out means 5, 14/3, 13/3, 2 (mean 4); d = 4 - θ(i) = -1, -2/3, -1/3, 2
    # Σd³ = 20/3, Σd² = 50/9  ->  a = (20/3) / (6 (50/9)^{3/2}) = 0.06·√2
    r = bootstrap_ci(np.array([1.0, 2.0, 3.0, 10.0]), np.mean, method="bca", seed=0)
    assert r.acceleration == pytest.approx(0.06 * math.sqrt(2), rel=1e-12)


def test_bca_equals_percentile_for_symmetric_data():
    # symmetric around its mean: the jackknife skewness Σd³ is exactly 0, so a = 0, and z0 ≈ 0
    half = np.linspace(0.1, 3.0, 200)
    x = np.concatenate([-half, half]) + 5.0
    bca = bootstrap_ci(x, np.mean, method="bca", n_bootstrap=20000, seed=2)
    pct = bootstrap_ci(x, np.mean, method="percentile", n_bootstrap=20000, seed=2)
    assert bca.acceleration == pytest.approx(0.0, abs=1e-12)
    assert abs(bca.z0) < 0.03
    np.testing.assert_array_equal(bca.replicates, pct.replicates)
    width = pct.high - pct.low
    assert bca.low == pytest.approx(pct.low, abs=0.02 * width)
    assert bca.high == pytest.approx(pct.high, abs=0.02 * width)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "shifted"])  # scipy has no shifted interval
def test_agrees_with_scipy_bootstrap_on_iid_data(method):
    rng = np.random.default_rng(11)
    x = rng.exponential(size=150)  # skewed: BCa and percentile differ
    ours = bootstrap_ci(x, np.mean, method=method, n_bootstrap=20000, seed=7)
    ref = sps.bootstrap((x,), np.mean, method=method, n_resamples=20000, rng=np.random.default_rng(8))
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.02 * width)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.02 * width)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.03)


def test_agrees_with_scipy_on_paired_arrays():
    rng = np.random.default_rng(12)
    x = rng.normal(size=120)
    y = x + rng.normal(size=120)

    def corr(a, b, axis=-1):
        a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
        a, b = a - a.mean(-1, keepdims=True), b - b.mean(-1, keepdims=True)
        return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))

    ours = bootstrap_ci((x, y), corr, n_bootstrap=10000, seed=1)
    ref = sps.bootstrap((x, y), corr, paired=True, n_resamples=10000, rng=np.random.default_rng(2))
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert ours.estimate == pytest.approx(float(corr(x, y)))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.03 * width)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.03 * width)


def test_dataframe_input_and_units_by_column_name():
    df = pd.DataFrame({"study": [1, 1, 2, 2, 3, 3, 4, 4], "y": [1, 0, 1, 1, 0, 0, 1, 0]})
    r = bootstrap_ci(df, lambda d: d["y"].mean(), units="study", n_bootstrap=200, seed=0)
    assert r.n_units == 4
    assert r.estimate == 0.5


# ---------------------------------------------------------------------------- cluster bootstrap


@pytest.mark.parametrize("method", METHODS)
def test_cluster_with_identical_rows_equals_iid_over_one_row_per_unit(method):
    rng = np.random.default_rng(0)
    per_unit = rng.normal(size=40)
    rows = np.repeat(per_unit, 3)  # every unit has 3 identical rows
    units = np.repeat([f"s{i:02d}" for i in range(40)], 3)
    cl = bootstrap_ci(rows, np.mean, units=units, method=method, n_bootstrap=3000, seed=9)
    iid = bootstrap_ci(per_unit, np.mean, method=method, n_bootstrap=3000, seed=9)
    assert cl.n_units == iid.n_units == 40
    np.testing.assert_allclose(cl.replicates, iid.replicates, rtol=0, atol=1e-12)
    assert cl.high - cl.low == pytest.approx(iid.high - iid.low, abs=1e-12)
    assert (cl.low, cl.high) == pytest.approx((iid.low, iid.high), abs=1e-12)


def test_cluster_result_does_not_depend_on_row_order():
    rng = np.random.default_rng(1)
    units = np.repeat(np.arange(30), rng.integers(1, 5, size=30))
    x = rng.normal(size=units.size) + units % 3
    perm = rng.permutation(units.size)
    a = bootstrap_ci(x, np.mean, units=units, n_bootstrap=500, seed=4)
    b = bootstrap_ci(x[perm], np.mean, units=units[perm], n_bootstrap=500, seed=4)
    np.testing.assert_allclose(a.replicates, b.replicates, atol=1e-12)


def test_strongly_clustered_data_gives_a_wider_cluster_ci():
    rng = np.random.default_rng(5)
    n_units, k = 30, 10
    effect = rng.normal(0, 1.0, size=n_units)
    x = np.repeat(effect, k) + rng.normal(0, 0.1, size=n_units * k)
    units = np.repeat(np.arange(n_units), k)
    naive = bootstrap_ci(x, np.mean, n_bootstrap=2000, seed=0)
    cluster = bootstrap_ci(x, np.mean, units=units, n_bootstrap=2000, seed=0)
    assert cluster.n_units == n_units and naive.n_units == n_units * k
    # the design effect here is ≈ 1 + (k - 1)·ICC ≈ 10, so the width ratio ≈ √10
    assert (cluster.high - cluster.low) > 2.0 * (naive.high - naive.low)


# -------------------------------------------------------------------------- degenerate / errors


@pytest.mark.parametrize("method", METHODS)
def test_constant_data_gives_a_point_interval_without_warnings(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = bootstrap_ci(np.full(25, 0.75), np.mean, method=method)
    assert (r.estimate, r.low, r.high, r.se, r.n_failed) == (0.75, 0.75, 0.75, 0.0, 0)
    assert r.method == method


def test_failed_replicates_are_counted_and_dropped():
    # the statistic is undefined (NaN) when a resample contains no positive: P = (27/30)^30 ≈ 4%
    y = np.zeros(30)
    y[[0, 10, 20]] = 1.0
    x = np.arange(30.0)

    def mean_x_of_positives(xs, ys):
        return xs[ys == 1].mean() if (ys == 1).any() else np.nan

    r = bootstrap_ci((x, y), mean_x_of_positives, n_bootstrap=2000, method="percentile", seed=0)
    assert 0.02 * 2000 < r.n_failed < 0.07 * 2000
    assert np.isnan(r.replicates).sum() == r.n_failed
    ok = r.replicates[~np.isnan(r.replicates)]
    assert (r.low, r.high) == tuple(np.quantile(ok, [0.025, 0.975]))
    assert 0.0 <= r.low < r.estimate == 10.0 < r.high <= 20.0


def test_exceptions_in_replicates_count_as_failures():
    y = np.r_[np.ones(3), np.zeros(27)]

    def needs_a_positive(v):
        if not (v == 1).any():
            raise ValueError("only one class")
        return v.mean()

    r = bootstrap_ci(y, needs_a_positive, n_bootstrap=1000, method="percentile", seed=0)
    assert 0.02 * 1000 < r.n_failed < 0.07 * 1000


def test_too_many_failures_raise_a_clear_error():
    y = np.r_[np.ones(1), np.zeros(9)]  # no positive in 0.9^10 ≈ 35% of resamples
    with pytest.raises(BootstrapError, match=r"failed .* on \d+ of 1000 bootstrap replicates"):
        bootstrap_ci(y, lambda v: v.mean() if v.any() else np.nan, n_bootstrap=1000, seed=0)


def test_nan_estimate_raises():
    with pytest.raises(BootstrapError, match="full data"):
        bootstrap_ci(np.array([1.0, np.nan, 2.0]), np.mean)


def test_fewer_than_two_units_raises():
    with pytest.raises(ValueError, match="at least 2 units, got 1"):
        bootstrap_ci(np.array([1.0, 2.0, 3.0]), np.mean, units=["a", "a", "a"])
    with pytest.raises(ValueError, match="at least 2 units"):
        bootstrap_ci(np.array([1.0]), np.mean)


def test_bad_method_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed: percentile, bca, basic, shifted"):
        bootstrap_ci(np.arange(5.0), np.mean, method="studentized")


def test_misaligned_or_missing_units_raise():
    with pytest.raises(ValueError, match="aligned"):
        bootstrap_ci(np.arange(5.0), np.mean, units=[1, 2, 3])
    with pytest.raises(ValueError, match="missing ids"):
        bootstrap_ci(np.arange(3.0), np.mean, units=["a", None, "b"])


def test_non_scalar_statistic_raises_type_error():
    with pytest.raises(TypeError, match="one number"):
        bootstrap_ci(np.arange(5.0), lambda v: v[:2])


def test_bca_falls_back_to_percentile_when_undefined():
    # the statistic fails on the jackknife sample that leaves out the only positive
    y = np.r_[1.0, np.zeros(59)]
    x = np.arange(60.0)
    stat = lambda xs, ys: xs[ys == 1].mean() if (ys == 1).any() else np.nan  # noqa: E731
    with pytest.warns(BootstrapWarning, match="percentile"):
        r = bootstrap_ci((x, y), stat, n_bootstrap=500, method="bca", seed=0, max_failed=0.5)
    assert r.method == "percentile"


# ------------------------------------------------------------------------------ reproducibility


def test_same_seed_same_replicates_different_seed_different():
    x = np.random.default_rng(0).normal(size=60)
    a = bootstrap_ci(x, np.mean, seed=123)
    b = bootstrap_ci(x, np.mean, seed=123)
    c = bootstrap_ci(x, np.mean, seed=124)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a == b
    assert not np.array_equal(a.replicates, c.replicates)
    assert "replicates" not in repr(a)


def test_result_to_dict_has_no_replicates():
    d = bootstrap_ci(np.arange(10.0), np.mean, n_bootstrap=50).to_dict()
    assert "replicates" not in d and d["n_bootstrap"] == 50
    assert isinstance(bootstrap_ci(np.arange(10.0), np.mean, n_bootstrap=50), BootstrapResult)


# ----------------------------------------------------------------------------- paired bootstrap


def test_paired_table_layout_and_agreement_with_bootstrap_ci():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": rng.normal(0.0, 1, 80), "b": rng.normal(0.5, 1, 80)})
    stats = {"A": lambda d: d["a"].mean(), "B": lambda d: d["b"].mean()}
    t = paired_bootstrap(df, stats, n_bootstrap=1000, seed=3, differences=True)
    assert list(t.columns) == list(PAIRED_COLUMNS)
    assert list(t["metric"]) == ["A", "B", difference_label("A", "B")]
    assert difference_label("A", "B") == "A − B"
    single = bootstrap_ci(df, stats["A"], n_bootstrap=1000, seed=3)
    row = t.iloc[0]
    assert (row.estimate, row.low, row.high, row.se) == (single.estimate, single.low, single.high, single.se)
    assert np.isnan(row.pvalue)
    diff = t.iloc[2]
    assert diff.estimate == pytest.approx(df["a"].mean() - df["b"].mean())
    assert diff.low < diff.estimate < diff.high
    assert 0 < diff.pvalue <= 1


def test_identical_metrics_have_a_zero_difference_interval():
    x = np.random.default_rng(0).normal(size=50)
    for method in METHODS:
        t = paired_bootstrap(x, {"m1": np.mean, "m2": np.mean}, n_bootstrap=500, method=method, differences=True)
        d = t.set_index("metric").loc["m1 − m2"]
        assert (d.estimate, d.low, d.high, d.se) == (0.0, 0.0, 0.0, 0.0)
        assert d.pvalue == 1.0


def test_paired_difference_is_narrower_than_unpaired_for_correlated_systems():
    rng = np.random.default_rng(4)
    base = rng.normal(size=200)
    df = pd.DataFrame({"s1": base + rng.normal(0, 0.1, 200), "s2": base + 0.05 + rng.normal(0, 0.1, 200)})
    t = paired_bootstrap(
        df, {"s1": lambda d: d.s1.mean(), "s2": lambda d: d.s2.mean()}, n_bootstrap=2000, differences=[("s2", "s1")]
    ).set_index("metric")
    d = t.loc["s2 − s1"]
    assert d.se < 0.25 * math.hypot(t.loc["s1", "se"], t.loc["s2", "se"])
    assert d.low > 0 and d.pvalue < 0.01


def test_paired_pvalue_definition():
    # all replicate differences > 0: p = 2 (1 + 0) / (B + 1)
    x = np.arange(1.0, 21.0)
    t = paired_bootstrap(x, {"hi": lambda v: v.mean() + 1, "lo": np.mean}, n_bootstrap=999, differences=True)
    assert t.iloc[2].pvalue == pytest.approx(2 / 1000)


def test_paired_bad_difference_names():
    with pytest.raises(ValueError, match="unknown"):
        paired_bootstrap(np.arange(5.0), {"a": np.mean}, differences=[("a", "zzz")])


# ---------------------------------------------------------------------------- permutation test


def test_permutation_exact_unpaired_enumerable():
    # C(6, 3) = 20 splits; mean_diff = -3 only for the observed split -> one-sided 1/20, two-sided 0.1
    r = permutation_test([1, 2, 3], [4, 5, 6])
    assert r.statistic == -3.0
    assert r.pvalue == pytest.approx(0.1)
    assert r.exact and r.n_permutations == 20


def test_permutation_exact_paired_sign_flips():
    # differences 1, 2, 3, 4: 2^4 = 16 sign patterns, the observed one is the unique maximum
    r = permutation_test([2, 4, 6, 8], [1, 2, 3, 4], paired=True)
    assert r.statistic == 2.5
    assert r.pvalue == pytest.approx(2 / 16)
    assert r.exact and r.n_permutations == 16
    assert permutation_test([2, 4, 6, 8], [1, 2, 3, 4], paired=True, alternative="greater").pvalue == pytest.approx(1 / 16)


def test_permutation_separated_and_identical_samples():
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, 40)
    assert permutation_test(a, a + 3.0, n_permutations=2000).pvalue < 0.01
    assert permutation_test(a, rng.permutation(a), n_permutations=2000).pvalue > 0.9  # same values, shuffled
    assert permutation_test(a, a, paired=True, n_permutations=2000).pvalue == 1.0


def test_permutation_reproducible_and_custom_statistic():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=30), rng.normal(0.3, 1, size=30)
    a = permutation_test(x, y, statistic=lambda u, v: np.median(u) - np.median(v), n_permutations=500, seed=3)
    b = permutation_test(x, y, statistic=lambda u, v: np.median(u) - np.median(v), n_permutations=500, seed=3)
    assert a == b and not a.exact and a.n_permutations == 500
    with pytest.raises(ValueError, match="allowed: mean_diff"):
        permutation_test(x, y, statistic="t")
    with pytest.raises(ValueError, match="same length"):
        permutation_test(x, y[:5], paired=True)


# ------------------------------------------------------------------------- Benjamini–Hochberg


def test_benjamini_hochberg_textbook_example():
    # sorted p: .005 .01 .03 .04 .2 ; m·p/k: .025 .025 .05 .05 .2 ; running min from the top keeps them
    rejected, adjusted = benjamini_hochberg([0.01, 0.04, 0.03, 0.005, 0.2], alpha=0.05)
    np.testing.assert_allclose(adjusted, [0.025, 0.05, 0.05, 0.025, 0.2])
    np.testing.assert_array_equal(rejected, [True, True, True, True, False])
    # step-up: k = 4 is the largest with p_(k) <= k·α/m (0.04 <= 0.04); at α = 0.04, k = 2
    rejected, _ = benjamini_hochberg([0.01, 0.04, 0.03, 0.005, 0.2], alpha=0.04)
    np.testing.assert_array_equal(rejected, [True, False, False, True, False])


def test_benjamini_hochberg_monotone_step():
    # raw m·p/k = .04 .045 .04 -> the running minimum lowers the second to .04
    _, adjusted = benjamini_hochberg([0.04, 0.01, 0.03])
    np.testing.assert_allclose(adjusted, [0.04, 0.03, 0.04])


def test_benjamini_hochberg_nan_handling():
    rejected, adjusted = benjamini_hochberg([0.01, np.nan, 0.04, 0.03, 0.005, np.nan, 0.2])
    np.testing.assert_allclose(adjusted, [0.025, np.nan, 0.05, 0.05, 0.025, np.nan, 0.2])
    np.testing.assert_array_equal(rejected, [True, False, True, True, True, False, False])
    r, a = benjamini_hochberg([np.nan, np.nan])
    assert not r.any() and np.isnan(a).all()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, 1.5])


# ------------------------------------------------------------------------------------- Wilson


def test_wilson_ci_newcombe_examples():
    # Newcombe (1998), Stat Med 17:857, worked examples for the score (Wilson) interval
    assert wilson_ci(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson_ci(0, 20) == pytest.approx((0.0, 0.1611), abs=5e-5)
    assert wilson_ci(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)
    with pytest.raises(ValueError):
        wilson_ci(3, 0)


def test_basic_interval_reflects_the_percentile_quantiles_and_matches_scipy():
    from scipy import stats as sps

    rng = np.random.default_rng(3)
    x = rng.exponential(size=300)
    ours = bootstrap_ci(x, np.mean, method="basic", n_bootstrap=4000, seed=11)
    pct = bootstrap_ci(x, np.mean, method="percentile", n_bootstrap=4000, seed=11)
    # same replicates: basic = reflection of the percentile bounds around the estimate
    assert ours.low == pytest.approx(2 * ours.estimate - pct.high)
    assert ours.high == pytest.approx(2 * ours.estimate - pct.low)
    ref = sps.bootstrap((x,), np.mean, method="basic", n_resamples=4000, random_state=12).confidence_interval
    width = ref.high - ref.low
    assert abs(ours.low - ref.low) < 0.05 * width and abs(ours.high - ref.high) < 0.05 * width


def test_basic_interval_contains_a_shifted_statistic():
    """Mean of squared noise: every replicate is biased upwards; basic still brackets the estimate."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=40)
    stat = lambda v: float(np.mean(v) ** 2 * len(v))  # noqa: E731  (a chi-square-like, upward-biased statistic)
    basic = bootstrap_ci(z, stat, method="basic", n_bootstrap=2000, seed=0)
    assert basic.low <= basic.estimate <= basic.high


def test_shifted_interval_is_the_percentile_interval_minus_the_bootstrap_bias():
    from radaudit.stats import interval_from_replicates

    reps = np.array([2.0, 3.0, 4.0, 5.0, 6.0])  # mean 4; estimate 1 -> bias 3
    r = interval_from_replicates(1.0, reps, None, "shifted", 0.5, 5, "wae", 0.0)
    # 25% and 75% linear quantiles of reps are 3 and 5; minus the bias 3
    assert (r.low, r.high) == (pytest.approx(0.0), pytest.approx(2.0))
    p = interval_from_replicates(1.0, reps, None, "percentile", 0.5, 5, "wae", 0.0)
    assert (p.low, p.high) == (pytest.approx(3.0), pytest.approx(5.0))  # excludes the estimate; shifted does not


def test_shifted_interval_brackets_an_upward_biased_statistic():
    rng = np.random.default_rng(0)
    z = rng.normal(size=40)
    stat = lambda v: float(np.mean(v) ** 2 * len(v))  # noqa: E731
    r = bootstrap_ci(z, stat, method="shifted", n_bootstrap=2000, seed=0)
    assert r.low <= r.estimate <= r.high and r.method == "shifted"


def test_interval_covers_an_estimate_that_misses_it_only_by_rounding():
    """sklearn's AUROC gives 0.19999999999999996 where the rank formula gives 0.2 on every resample: the
    interval must still contain its estimate (the synthetic_cxr rehearsal's error bars broke on exactly this)."""
    from radaudit.stats import interval_from_replicates

    est = 0.19999999999999996
    res = interval_from_replicates(est, np.full(50, 0.2), None, "percentile", 0.95, 10, "auroc", 0.1)
    assert res.low == est and res.high == 0.2
    # a real miss (the bootstrap distribution lies wholly above the estimate) is left as it is
    res = interval_from_replicates(0.1, np.full(50, 0.2), None, "percentile", 0.95, 10, "auroc", 0.1)
    assert res.low == 0.2 and res.high == 0.2


def test_permutation_test_with_several_statistics_tests_each_on_the_same_permutations():
    from radaudit.stats import permutation_test

    rng = np.random.default_rng(1)
    x, y = rng.normal(0.4, 1, 30), rng.normal(0, 1, 25)

    def both(a, b, axis=-1):
        return np.stack([a.mean(axis) - b.mean(axis), np.median(a, axis) - np.median(b, axis)], axis=-1)

    res = permutation_test(x, y, statistic=both, n_permutations=199, alternative="greater", seed=2, batch=50)
    assert res.null_distribution.shape == (199, 2) and res.n_permutations == 199 and not res.exact
    for j, fn in enumerate((lambda a, b, axis=-1: a.mean(axis) - b.mean(axis),
                            lambda a, b, axis=-1: np.median(a, axis) - np.median(b, axis))):
        one = permutation_test(x, y, statistic=fn, n_permutations=199, alternative="greater", seed=2)
        assert res.pvalue[j] == pytest.approx(one.pvalue) and res.statistic[j] == pytest.approx(one.statistic)


def test_exact_permutation_count_is_only_computed_when_it_could_be_reached():
    from radaudit.stats.significance import _n_distinct

    assert _n_distinct(3, 3, False, 1000) == 20 and _n_distinct(5, 5, True, 100) == 32 and _n_distinct(5, 5, True, 10) == math.inf
    assert _n_distinct(50_000, 50_000, False, 1000) == math.inf  # C(100000, 50000) is never enumerated
    # an exact test still happens when the permutations fit: 6 relabellings of 2 + 2 reports
    from radaudit.stats import permutation_test
    assert permutation_test([1.0, 2.0], [3.0, 4.0], n_permutations=1000).exact


def test_permutation_test_on_integer_data_equals_the_float_test():
    """Integer inputs (unit indices) are permuted as integers, with the same permutations and p-value as floats."""
    from radaudit.stats import permutation_test

    x, y = np.arange(0, 40, 2, dtype=np.int32), np.arange(1, 61, 2, dtype=np.int32)
    seen = []

    def stat(a, b, axis=-1):
        seen.append(a.dtype)
        return a.mean(axis) - b.mean(axis)

    as_int = permutation_test(x, y, statistic=stat, n_permutations=199, seed=3)
    as_float = permutation_test(x.astype(float), y.astype(float), statistic=stat, n_permutations=199, seed=3)
    assert np.issubdtype(seen[0], np.integer) and seen[-1] == np.float64
    assert as_int.pvalue == as_float.pvalue and as_int.statistic == pytest.approx(as_float.statistic)
    np.testing.assert_allclose(as_int.null_distribution, as_float.null_distribution)


# ------------------------------------------------------------------------------------ vectorized statistics

@pytest.mark.parametrize("method", ["percentile", "bca", "basic"])
def test_vectorized_statistic_gives_the_loops_interval(method):
    """vectorized=True draws the same resamples in the same order: a mean difference gives the same replicates,
    interval and (BCa) jackknife as the one-replicate-at-a-time loop, bit for bit."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=37), rng.normal(size=37)
    loop = bootstrap_ci((x, y), lambda u, v: np.mean(u - v), method=method, n_bootstrap=500, seed=4)
    vec = bootstrap_ci((x, y), lambda u, v: np.mean(u - v, axis=-1), method=method, n_bootstrap=500, seed=4,
                       vectorized=True)
    assert (vec.estimate, vec.low, vec.high, vec.n_failed) == (loop.estimate, loop.low, loop.high, loop.n_failed)
    np.testing.assert_array_equal(vec.replicates, loop.replicates)


def test_vectorized_statistic_counts_nan_resamples_as_failed_and_refuses_what_it_cannot_do():
    x = np.array([0.0, 0.0, 1.0, 1.0])

    def ratio(a):  # NaN on a resample without a 1
        s = a.sum(axis=-1)
        return np.where(s > 0, a.mean(axis=-1) / np.where(s > 0, s, 1), np.nan)

    loop = bootstrap_ci(x, lambda a: a.mean() / a.sum() if a.sum() else math.nan, method="percentile",
                        n_bootstrap=400, seed=1, max_failed=0.2)
    vec = bootstrap_ci(x, ratio, method="percentile", n_bootstrap=400, seed=1, max_failed=0.2, vectorized=True)
    assert vec.n_failed == loop.n_failed > 0 and (vec.low, vec.high) == (loop.low, loop.high)
    with pytest.raises(ValueError, match="not a DataFrame"):
        bootstrap_ci(pd.DataFrame({"a": x}), lambda f: f["a"].mean(), vectorized=True)
    with pytest.raises(ValueError, match="same number of rows"):
        bootstrap_ci(x, lambda a: a.mean(axis=-1), units=[0, 0, 0, 1], vectorized=True)
    with pytest.raises(TypeError, match="one number per resample"):
        bootstrap_ci(x, lambda a: a.mean(), vectorized=True, method="percentile", n_bootstrap=10)


def test_vectorized_statistic_in_several_batches_keeps_the_loops_draws(monkeypatch):
    """With batches of 7 resamples (the batch bound forced down), replicates and jackknife still equal the loop's."""
    import radaudit.stats.resampling as stats_module

    monkeypatch.setattr(stats_module, "_BATCH_ELEMENTS", 7 * 37)
    rng = np.random.default_rng(5)
    x = rng.normal(size=37)
    loop = bootstrap_ci(x, np.mean, method="bca", n_bootstrap=100, seed=2)
    vec = bootstrap_ci(x, lambda a: a.mean(axis=-1), method="bca", n_bootstrap=100, seed=2, vectorized=True)
    np.testing.assert_array_equal(vec.replicates, loop.replicates)
    assert (vec.low, vec.high) == (loop.low, loop.high)


# --- column means in closed form ---------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("clustered", [False, True])
def test_column_means_in_closed_form_equal_the_resampling_loop(method, clustered):
    """column_mean statistics skip building resampled frames (per-unit sums, weighted by how often each unit was
    drawn; the jackknife by subtraction): the same draws as the loop, so the same interval to float rounding."""
    from radaudit.stats import column_mean

    rng = np.random.default_rng(7)
    n = 300
    frame = pd.DataFrame({"F": rng.random(n) < 0.4, "M": rng.random(n) < 0.5, "age": rng.normal(60, 15, n)})
    units = rng.integers(0, 90, n).astype(str) if clustered else None  # clusters of 1 to ~8 rows
    fast = paired_bootstrap(frame, {c: column_mean(c) for c in frame.columns}, units=units, n_bootstrap=400, seed=3,
                            method=method, differences=[("F", "M")])
    loop = paired_bootstrap(frame, {c: (lambda d, c=c: float(d[c].to_numpy(dtype=float).mean())) for c in frame.columns},
                            units=units, n_bootstrap=400, seed=3, method=method, differences=[("F", "M")])
    for col in ("estimate", "low", "high", "se", "pvalue"):
        np.testing.assert_allclose(fast[col].to_numpy(float), loop[col].to_numpy(float), rtol=0, atol=1e-12,
                                   equal_nan=True)
    one = bootstrap_ci(frame, column_mean("age"), units=units, n_bootstrap=400, seed=3, method=method)
    assert one.low == pytest.approx(fast.set_index("metric").at["age", "low"], abs=1e-12)


def test_column_mean_with_missing_values_takes_the_loop_and_counts_failures():
    from radaudit.stats import column_mean

    frame = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0]})
    with pytest.raises(BootstrapError, match="nan on the full data"):
        bootstrap_ci(frame, column_mean("x"), n_bootstrap=50)
    assert column_mean("x")(frame.dropna()) == pytest.approx(3.6)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_vectorized_cluster_bootstrap_with_equal_clusters_equals_the_loop(method):
    """Clusters of equal size give rectangular resamples: the vectorized statistic gets the loop's rows, unit by unit
    in the order drawn (a statistic that depends on row order would notice), and the same leave-one-cluster-out
    jackknife."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=60)
    units = np.repeat(rng.permutation(20), 3)  # 20 clusters of 3 rows, shuffled ids

    def weighted(a):  # order-dependent on purpose: weights 1..n along the rows
        w = np.arange(1, a.shape[-1] + 1)
        return (a * w).sum(axis=-1) / w.sum()

    loop = bootstrap_ci(x, weighted, units=units, n_bootstrap=300, seed=4, method=method)
    vec = bootstrap_ci(x, weighted, units=units, n_bootstrap=300, seed=4, method=method, vectorized=True)
    assert vec.estimate == pytest.approx(loop.estimate, abs=1e-12)
    assert (vec.low, vec.high) == (pytest.approx(loop.low, abs=1e-12), pytest.approx(loop.high, abs=1e-12))
    assert vec.n_units == loop.n_units == 20


def test_bh_along_an_axis_corrects_each_family_on_its_own():
    """axis=0 on [V × B]: each column is one family of V tests, as if corrected alone; a NaN (a test not run)
    leaves that column's m one smaller and no other column's."""
    from radaudit.stats import benjamini_hochberg

    p = np.array([[0.01, 0.04], [0.02, np.nan], [0.03, 0.03], [0.5, 0.001]])
    rej, adj = benjamini_hochberg(p, alpha=0.05, axis=0)
    # column 0 by hand: sorted 0.01, 0.02, 0.03, 0.5 (m = 4) -> 0.04, 0.04, 0.04, 0.5
    np.testing.assert_allclose(adj[:, 0], [0.04, 0.04, 0.04, 0.5])
    # column 1: m = 3 (NaN left out): 0.001, 0.03, 0.04 -> 0.003, 0.04, 0.04
    np.testing.assert_allclose(adj[[3, 2, 0], 1], [0.003, 0.04, 0.04])
    assert np.isnan(adj[1, 1]) and not rej[1, 1]
    assert rej[:, 0].tolist() == [True, True, True, False]
    # without a NaN: one scipy call for every column, the same numbers as column by column
    q = np.random.default_rng(0).uniform(size=(30, 6)) ** 2
    _, whole = benjamini_hochberg(q, alpha=0.1, axis=0)
    for j in range(6):
        assert np.array_equal(whole[:, j], benjamini_hochberg(q[:, j], alpha=0.1)[1])
    # axis=None keeps the old meaning: every p-value in one family
    assert not np.array_equal(benjamini_hochberg(q, alpha=0.1)[1], whole)
