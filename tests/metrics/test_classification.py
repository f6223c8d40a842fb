"""The lab's one implementation of F1 from counts and ECE (and the AUROC name), against scikit-learn on random and tied
inputs. The AUROC itself and its every-replicate form: tests/stats/test_ranks.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import f1_score, roc_auc_score

from radaudit.errors import ParamsError
from radaudit.metrics.classification import (
    auroc,
    ece_resamples,
    expected_calibration_error,
    f1_from_counts,
    reliability_bins,
)


@pytest.mark.parametrize("seed", range(5))
def test_auroc_equals_sklearn_on_random_and_heavily_tied_scores(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    for s in (rng.normal(size=200) + y, rng.integers(0, 3, 200).astype(float)):  # continuous; 3 values only (ties)
        assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_auroc_hand_computed_and_undefined_cases():
    # positives 0.8, 0.4; negatives 0.4, 0.1: pairs (0.8>0.4)=1, (0.8>0.1)=1, (0.4=0.4)=0.5, (0.4>0.1)=1 -> 3.5/4
    assert auroc([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]) == 0.875
    assert math.isnan(auroc([1, 1, 1], [0.1, 0.2, 0.3]))  # one class
    assert math.isnan(auroc([1, 0], [0.5, float("nan")]))  # a missing score cannot be ranked
    with pytest.raises(ParamsError, match="shape"):
        auroc([1, 0, 1], [0.5, 0.2])


@pytest.mark.parametrize("seed", range(5))
def test_f1_from_counts_equals_sklearn_per_label(seed):
    rng = np.random.default_rng(seed)
    y, p = rng.integers(0, 2, (60, 5)), rng.integers(0, 2, (60, 5))
    p[:, 4] = 0
    y[:, 4] = 0  # a label nobody has: 0/0 -> zero_division
    tp, fp, fn = (y & p).sum(0), ((1 - y) & p).sum(0), (y & (1 - p)).sum(0)
    np.testing.assert_allclose(f1_from_counts(tp, fp, fn), f1_score(y, p, average=None, zero_division=0.0))
    assert f1_from_counts(0, 0, 0, zero_division=1.0) == 1.0 and f1_from_counts(1, 1, 1) == 0.5


def test_reliability_bins_match_sklearn_calibration_curve_and_ece_hand_computed():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    bins = reliability_bins(p, y, 10)
    acc, conf = calibration_curve(y, p, n_bins=10, strategy="uniform")
    full = bins[bins["n"] > 0]
    np.testing.assert_allclose(full["acc"], acc)
    np.testing.assert_allclose(full["conf"], conf)
    # two bins: {0.1, 0.2} labels {0, 1} -> |0.5 - 0.15| ; {0.9} label 1 -> |1 - 0.9|; weights 2/3, 1/3
    assert expected_calibration_error([0.1, 0.2, 0.9], [0, 1, 1], 2) == pytest.approx(2 / 3 * 0.35 + 1 / 3 * 0.1)


# --- every bootstrap resample at once (bootstrap_ci(vectorized=True)) ---------------------------------------

@pytest.mark.parametrize("kind", ["positive", "confidence"])
def test_ece_resamples_equals_ece_per_row(kind):
    rng = np.random.default_rng(0)
    p = rng.random((50, 40))
    p[:, :5] = np.array([0.0, 0.1, 0.2, 0.5, 1.0])  # bin edges: right-closed bins, 0 in the first
    y = (rng.random((50, 40)) < p).astype(float)
    got = ece_resamples(p, y, 10, kind=kind)
    want = [expected_calibration_error(p[i], y[i], 10, kind=kind) for i in range(50)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # hand-computed: bins (0, .5], (.5, 1] of P(yes) .2, .4 | .9 with labels 0, 1 | 1:
    # |acc - conf| = |.5 - .3| in the first (2 of 3 rows), |1 - .9| in the second: 2/3 * .2 + 1/3 * .1 = 1/6
    assert ece_resamples([[0.2, 0.4, 0.9]], [[0, 1, 1]], 2)[0] == pytest.approx(1 / 6, abs=1e-15)
    p[3, 7] = np.nan
    assert np.isnan(ece_resamples(p, y, 10, kind=kind)[3])
    with pytest.raises(ParamsError, match="kind"):
        ece_resamples(p, y, 10, kind="top")
