"""Every interval reported beside an estimate contains it (issue 24, item 8)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from radaudit.metrics.association import association_audit
from radaudit.stats import bootstrap_ci

WORDS = ["effusion", "opacity", "nodule", "pneumothorax", "cardiomegaly", "atelectasis", "edema", "consolidation",
         "granuloma", "scarring", "emphysema", "fracture", "catheter", "tube", "hernia", "scoliosis", "calcification",
         "pacemaker", "sternotomy", "congestion"]


@pytest.fixture(scope="module")
def noise_corpus():
    """No true association: WAE is pure noise, so its bootstrap distribution sits far above the estimate
    (a replicate adds the noise a second time) — the case where the percentile interval misses."""
    rng = np.random.default_rng(0)

    def rep():
        return " ".join(rng.choice(WORDS, size=6))

    n = 300
    return pd.DataFrame({"reference": [rep() for _ in range(n)], "prediction": [rep() for _ in range(n)],
                         "group": rng.choice(["F", "M"], n)})


def _wae(df, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = association_audit(df, n_bootstrap=200, n_permutations=20, ci_method=method)
    return res.wae.set_index("metric").loc[["WAE_pred", "WAE_ref"]]


def test_wae_default_interval_holds_its_estimate(noise_corpus):
    w = _wae(noise_corpus, "shifted")  # association_audit's default
    assert ((w.low <= w.estimate) & (w.estimate <= w.high)).all(), w
    default = association_audit.__kwdefaults__["ci_method"]
    assert default == "shifted"


def test_the_percentile_interval_misses_here(noise_corpus):
    # the control: on this corpus the plain percentile interval lies entirely above the estimate
    w = _wae(noise_corpus, "percentile")
    assert (w.low > w.estimate).all(), w


@pytest.mark.parametrize("method", ["bca", "percentile", "shifted"])
def test_bootstrap_ci_holds_a_skewed_ratio(method):
    # a ratio of means on lognormal data: skewed, but unbiased enough that every method holds its estimate
    rng = np.random.default_rng(1)
    x, y = rng.lognormal(0, 1, 80), rng.lognormal(0.3, 1, 80)
    ci = bootstrap_ci((x, y), lambda a, b: a.mean() / b.mean(), n_bootstrap=500, method=method, seed=0)
    assert ci.low <= ci.estimate <= ci.high
