"""radaudit.stats.auroc_interval (issue 42): the one rule every AUROC table applies — the bootstrap interval, or the
exact separation bound where an AUROC of exactly 1 or 0 leaves the bootstrap interval zero width."""

from __future__ import annotations

import math

import pytest

from radaudit.stats import auroc_interval


def test_a_zero_width_interval_at_one_or_zero_becomes_the_separation_bound():
    # m = min(12, 8) = 8 comparisons, all won: (0.025)^(1/8) = 0.63058
    low, high, how = auroc_interval(1.0, 1.0, 1.0, 12, 8)
    assert how == "separation" and high == 1.0 and low == pytest.approx(0.025 ** (1 / 8)) and low == pytest.approx(
        0.63058, abs=1e-5)
    # AUROC 0 mirrors it; at 90 %: 1 - 0.05^(1/5)
    assert auroc_interval(0.0, 0.0, 0.0, 5, 9, confidence=0.9) == pytest.approx((0.0, 1 - 0.05 ** 0.2, "separation"))


def test_any_other_interval_is_kept_as_the_bootstrap_gave_it():
    assert auroc_interval(0.93, 0.85, 0.99, 20, 20) == (0.85, 0.99, "bootstrap")  # spread: kept
    assert auroc_interval(0.7, 0.7, 0.7, 20, 20) == (0.7, 0.7, "bootstrap")  # zero width, but not 1 or 0
    assert auroc_interval(1.0, 1.0, 1.0, 0, 20) == (1.0, 1.0, "bootstrap")  # an empty class: no bound
    low, high, how = auroc_interval(1.0, math.nan, math.nan, 12, 8)  # no interval stays no interval
    assert math.isnan(low) and math.isnan(high) and how == "bootstrap"
