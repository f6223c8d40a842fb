"""Bootstrap intervals of the fidelity metrics: the Gram-identity FID and the conditional PRDC bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import linalg

from radaudit.errors import ParamsError
from radaudit.metrics.image.fidelity import fid, mmd2_unbiased, prdc
from radaudit.metrics.image.uncertainty import fid_from_grams, fid_gram, fidelity_intervals, gram_replicates, prdc_indicators


def _scipy_fid(x, y):
    mu1, mu2 = x.mean(0), y.mean(0)
    s1, s2 = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    return float((mu1 - mu2) @ (mu1 - mu2) + np.trace(s1) + np.trace(s2) - 2 * np.trace(linalg.sqrtm(s1 @ s2).real))


@pytest.mark.parametrize("n,m,d", [(40, 30, 8), (25, 35, 64)])  # more images than dims, and fewer
def test_gram_fid_equals_the_matrix_square_root(n, m, d):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d)) * 1.3 + 0.2
    if n > d:
        assert fid_gram(x, y) == pytest.approx(_scipy_fid(x, y), rel=1e-6)
    assert fid_gram(x, y) == pytest.approx(fid(x, y, method="eigvals"), rel=1e-6, abs=1e-6)
    assert fid_gram(x, x) == pytest.approx(0.0, abs=1e-5)


def test_prdc_indicators_average_to_prdc():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(50, 5)), rng.normal(size=(40, 5)) + 0.5
    ind, ref = prdc_indicators(x, y, 5), prdc(x, y, 5)
    assert (ind["inside_count"] > 0).mean() == pytest.approx(ref["precision"])
    assert ind["inside_count"].mean() / 5 == pytest.approx(ref["density"])
    assert ind["recalled"].mean() == pytest.approx(ref["recall"])
    assert ind["covered"].mean() == pytest.approx(ref["coverage"])


def test_intervals_hold_the_point_values_and_are_seeded():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(60, 12)), rng.normal(size=(50, 12)) + 0.4
    t = fidelity_intervals(x, y, n_bootstrap=200, seed=7).set_index("metric")
    assert t.loc["fid", "estimate"] == pytest.approx(fid(x, y), rel=1e-6)
    assert t.loc["kid", "estimate"] == pytest.approx(mmd2_unbiased(x, y), rel=1e-9)
    assert t.loc["coverage", "estimate"] == pytest.approx(prdc(x, y)["coverage"])
    assert (t["low"] <= t["estimate"] + 1e-12).all() and (t["estimate"] <= t["high"] + 1e-12).all()
    assert t.loc["fid", "bias"] > 0  # resamples repeat rows: the FID of a resample is biased upwards
    again = fidelity_intervals(x, y, n_bootstrap=200, seed=7).set_index("metric")
    assert t[["low", "high"]].equals(again[["low", "high"]])
    far = fidelity_intervals(x, y + 3.0, metrics=("fid",), n_bootstrap=200).set_index("metric")
    assert far.loc["fid", "low"] > t.loc["fid", "high"]  # a shifted set is clearly worse, CIs apart


@pytest.mark.parametrize("n,m", [(30, 20), (20, 30)])  # the eigenproblem on rows, then on columns
def test_batched_replicates_equal_each_resample_written_out(n, m):
    """gram_replicates on a stack of resamples = the FID and KID of each resampled set on its own: fid_from_grams of
    the resampled Gram blocks, and the FID / unbiased MMD² of the resampled feature rows themselves."""
    rng = np.random.default_rng(4)
    d = 9
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d)) * 1.2 + 0.3
    kxx, kyy, kxy = x @ x.T, y @ y.T, x @ y.T
    ir, is_ = rng.integers(0, n, size=(5, n)), rng.integers(0, m, size=(5, m))
    got = gram_replicates(kxx, kyy, kxy, ir, is_, d)
    assert got["fid"].shape == got["kid"].shape == (5,)
    for b in range(5):
        xr, yr = x[ir[b]], y[is_[b]]
        # the resample's FID with its nuclear norm from an SVD of the centred cross matrix (accurate to ~1e-15); a
        # nuclear norm from a Gram matrix's eigenvalues (both forms here) carries ~sqrt(eps) from its zero eigenvalues
        xc, yc = xr - xr.mean(0), yr - yr.mean(0)
        nuclear = np.linalg.svd(xc @ yc.T, compute_uv=False).sum() / np.sqrt((n - 1) * (m - 1))
        diff = xr.mean(0) - yr.mean(0)
        exact = diff @ diff + (xc * xc).sum() / (n - 1) + (yc * yc).sum() / (m - 1) - 2.0 * nuclear
        assert got["fid"][b] == pytest.approx(exact, rel=1e-7)
        assert fid_from_grams(xr @ xr.T, yr @ yr.T, xr @ yr.T) == pytest.approx(exact, rel=1e-7)
        assert got["kid"][b] == pytest.approx(mmd2_unbiased(xr, yr), rel=1e-9, abs=1e-12)
    assert set(gram_replicates(kxx, kyy, kxy, ir, is_, d, kid=False)) == {"fid"}


def test_intervals_do_not_depend_on_the_batch_size(monkeypatch):
    from radaudit.metrics.image import uncertainty

    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(25, 6)), rng.normal(size=(30, 6)) + 0.2
    whole = fidelity_intervals(x, y, n_bootstrap=50, seed=2)
    monkeypatch.setattr(uncertainty, "_CHUNK_ELEMENTS", 3 * (25 * 25 + 30 * 30 + 25 * 30))  # 3 replicates a batch
    # the same replicates (a batch pads its replicates to its own largest drawn set: rounding-level differences only)
    pd.testing.assert_frame_equal(fidelity_intervals(x, y, n_bootstrap=50, seed=2), whole, check_exact=False, rtol=1e-7)


def test_prdc_intervals_stay_inside_their_range():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 6))
    y = x[:60] + rng.normal(scale=0.01, size=(60, 6))  # near-copies: precision ~ 1
    t = fidelity_intervals(x, y, metrics=("precision", "recall", "coverage"), n_bootstrap=300, seed=1)
    t = t.set_index("metric")
    assert t.loc["precision", "estimate"] == 1.0
    assert (t["high"] <= 1.0).all() and (t["low"] >= 0.0).all()
    assert (t["method"] == "percentile").all()


def test_bad_input_is_named():
    x = np.zeros((10, 3))
    with pytest.raises(ParamsError, match="Unknown metric"):
        fidelity_intervals(x, x, metrics=("is",))
    with pytest.raises(ParamsError, match="n_bootstrap"):
        fidelity_intervals(x, x, n_bootstrap=1)


def test_intervals_do_not_depend_on_the_callers_blas_threads():
    """fidelity_intervals runs its replicates on one BLAS thread (so that two notebooks sharing the cores do not wait
    on each other's threads): its table is the same, bit for bit, whatever BLAS thread count the caller set, and that
    count is restored afterwards. Two threads may round differently, within 1e-6."""
    import threadpoolctl

    from radaudit.metrics.image import uncertainty as u

    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((150, 32)), rng.standard_normal((160, 32)) + 0.2
    tables = {}
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            tables[threads] = fidelity_intervals(x, y, metrics=("fid", "kid", "precision"), n_bootstrap=40)
            assert {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"} == {threads}
    pd.testing.assert_frame_equal(tables[1], tables[2], check_exact=True)
    kxx, kyy, kxy = x @ x.T, y @ y.T, x @ y.T
    fids = {}
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            fids[threads] = u.fid_from_grams(kxx, kyy, kxy)
    assert fids[1] == pytest.approx(fids[2], rel=1e-6)
