"""radaudit.stats' public draws (resample_indices, resample_weights, resample_groups): hand-checkable streams.

Every bootstrap of the lab draws through these three functions, so their draw order is a contract: replicate r
of a seed is the r-th call ``default_rng(seed).integers(0, n, n)``, whatever the block size.
"""

from __future__ import annotations

import numpy as np
import pytest

from radaudit.stats import bootstrap_ci, resample_groups, resample_indices, resample_weights


def _all(blocks) -> np.ndarray:
    return np.concatenate(list(blocks))


# ------------------------------------------------------------------------------- iid index blocks


def test_replicate_r_is_the_r_th_call_of_default_rng():
    idx = _all(resample_indices(7, 5, seed=3))
    rng = np.random.default_rng(3)
    assert idx.shape == (5, 7) and idx.dtype == np.int64
    for r in range(5):
        assert np.array_equal(idx[r], rng.integers(0, 7, 7))


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 100])
def test_chunked_equals_unchunked(chunk):
    blocks = list(resample_indices(9, 7, seed=11, chunk=chunk))
    assert [len(b) for b in blocks] == [min(chunk, 7 - s) for s in range(0, 7, chunk)]
    assert np.array_equal(np.concatenate(blocks), next(resample_indices(9, 7, seed=11, chunk=7)))


def test_a_generator_seed_continues_its_stream():
    rng = np.random.default_rng(5)
    first = rng.integers(0, 4, 4)
    nxt = next(resample_indices(4, 1, seed=rng))[0]
    ref = np.random.default_rng(5)
    assert np.array_equal(first, ref.integers(0, 4, 4)) and np.array_equal(nxt, ref.integers(0, 4, 4))


def test_bootstrap_ci_evaluates_its_statistic_on_these_draws():
    x = np.random.default_rng(0).normal(size=23)
    res = bootstrap_ci(x, np.mean, n_bootstrap=40, method="percentile", seed=7)
    want = np.array([x[row].mean() for row in _all(resample_indices(len(x), 40, seed=7))])
    assert np.array_equal(res.replicates, want)


# ------------------------------------------------------------------------------- strata


def test_stratified_draws_stay_within_strata_and_keep_their_sizes():
    keys = np.array(["b", "a", "b", "a", "a", "c", "b", "b"])
    for idx in _all(resample_indices(len(keys), 50, seed=2, strata=keys)):
        assert sorted(keys[idx]) == sorted(keys)  # each stratum keeps its size
    # columns are grouped stratum by stratum (sorted keys: a, b, c); c has one unit, drawn every time
    idx = _all(resample_indices(len(keys), 50, seed=2, strata=keys))
    assert set(keys[idx[:, :3]].ravel()) == {"a"} and set(keys[idx[:, 3:7]].ravel()) == {"b"}
    assert (idx[:, 7] == 5).all()


def test_stratified_stream_by_hand():
    keys = [1, 0, 1, 0, 0]  # stratum 0: units [1, 3, 4]; stratum 1: units [0, 2]
    blocks = list(resample_indices(5, 2, seed=0, strata=keys, chunk=2))
    rng = np.random.default_rng(0)
    s0, s1 = np.array([1, 3, 4]), np.array([0, 2])
    want = np.concatenate([s0[rng.integers(0, 3, size=(2, 3))], s1[rng.integers(0, 2, size=(2, 2))]], axis=1)
    assert len(blocks) == 1 and np.array_equal(blocks[0], want)


def test_label_matrix_strata_keep_every_label_count():
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 0], [0, 1]], dtype=float)
    for idx in _all(resample_indices(len(y), 30, seed=4, strata=y)):
        assert np.array_equal(y[idx].sum(axis=0), y.sum(axis=0))


# ------------------------------------------------------------------------------- count matrices


def test_weights_count_the_drawn_indices_and_rows_sum_to_n():
    idx = _all(resample_indices(6, 9, seed=8, chunk=4))
    w = _all(resample_weights(6, 9, seed=8, chunk=4))
    assert w.dtype == np.float64 and w.shape == (9, 6)
    assert (w.sum(axis=1) == 6).all()
    for r in range(9):
        assert np.array_equal(w[r], np.bincount(idx[r], minlength=6))
    w32 = _all(resample_weights(6, 9, seed=8, dtype=np.float32))
    assert w32.dtype == np.float32 and np.array_equal(w32, w)


def test_stratified_weights_keep_stratum_totals():
    keys = np.array([0, 0, 1, 1, 1, 2])
    w = _all(resample_weights(6, 20, seed=1, strata=keys))
    for k in (0, 1, 2):
        assert (w[:, keys == k].sum(axis=1) == (keys == k).sum()).all()


# ------------------------------------------------------------------------------- independent groups


def test_groups_draw_group_by_group_in_order():
    draws = list(resample_groups([3, 4, 2], 2, seed=9))
    rng = np.random.default_rng(9)
    assert len(draws) == 2
    for rep in draws:
        assert len(rep) == 3
        for g, size in enumerate((3, 4, 2)):
            assert np.array_equal(rep[g], rng.integers(0, size, size))


# ------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(("call", "match"), [
    (lambda: resample_indices(1, 10), "n must"),
    (lambda: resample_indices(5, 0), "n_bootstrap must"),
    (lambda: resample_indices(5, 10, chunk=0), "chunk must"),
    (lambda: resample_indices(True, 10), "n must"),
    (lambda: resample_indices(5, 2.0), "n_bootstrap must"),
    (lambda: resample_indices(5, 10, strata=[0, 1, 0]), "strata"),
    (lambda: resample_indices(3, 10, strata=[0.0, np.nan, 1.0]), "strata"),
    (lambda: resample_weights(1, 10), "n must"),
    (lambda: resample_groups([5, 1], 10), r"sizes\[1\]"),
    (lambda: resample_groups([], 10), "sizes"),
    (lambda: resample_groups([3, 3], 0), "n_bootstrap must"),
])
def test_bad_inputs_raise_when_called_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()  # before any draw: the generators check their arguments eagerly


def test_the_old_name_of_the_replicate_count_still_works_with_a_deprecation_warning():
    from radaudit.stats import bootstrap_ci, paired_bootstrap

    x = np.arange(20.0)
    new = bootstrap_ci(x, np.mean, n_bootstrap=50, method="percentile", seed=1)
    with pytest.warns(DeprecationWarning, match=r"bootstrap_ci\(n_resamples=\.\.\.\) is deprecated; pass n_bootstrap=50"):
        old = bootstrap_ci(x, np.mean, n_resamples=50, method="percentile", seed=1)
    assert (old.low, old.high, old.n_bootstrap) == (new.low, new.high, 50)
    with pytest.warns(DeprecationWarning, match="paired_bootstrap"):
        t = paired_bootstrap(x, {"mean": np.mean}, n_resamples=40, method="percentile")
    assert t["n_bootstrap"].tolist() == [40]
