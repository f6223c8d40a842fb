"""Means over the traced items with a 95% bootstrap CI over items (issue 42): the attention by layer and the marker
saliency the modality_shift report shows by condition."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.modality_shift.tables import LAYER_MEASURES, item_means, item_means_cells
from radaudit.errors import ParamsError
from radaudit.stats import bootstrap_ci, column_mean


def _layers(values: dict[str, list[float]], condition: str = "no_shift", layer: int = 0) -> pd.DataFrame:
    n = len(next(iter(values.values())))
    return pd.DataFrame({"model": "m", "sample_id": [f"s{i}" for i in range(n)], "condition": condition,
                         "layer": layer, **values})


def test_two_items_hand_computed():
    # items 0.2 and 0.6: the resamples' means are 0.2 (1/4), 0.4 (1/2), 0.6 (1/4) -> percentile CI [0.2, 0.6]
    t = item_means(_layers({"image_share": [0.2, 0.6]}), ["image_share"], n_bootstrap=2000, seed=0).iloc[0]
    assert t["estimate"] == pytest.approx(0.4) and t["n"] == 2
    assert (t["low"], t["high"]) == pytest.approx((0.2, 0.6))


def test_the_interval_is_the_stats_bootstrap_over_items_and_nan_leaves_only_its_measure():
    rng = np.random.default_rng(0)
    share = rng.uniform(size=9)
    per_token = np.r_[rng.uniform(size=8) / 50, np.nan]  # one item without a value for this measure
    t = item_means(_layers({"image_share": share, "image_per_token": per_token, "text_per_token": share / 10}),
                   n_bootstrap=500, seed=3).set_index("measure")
    assert list(t.index) == list(LAYER_MEASURES)
    ref = bootstrap_ci(pd.DataFrame({"x": share, "u": range(9)}), column_mean("x"), units="u", n_bootstrap=500,
                       seed=3, method="percentile")
    assert (t.loc["image_share", "low"], t.loc["image_share", "high"]) == pytest.approx((ref.low, ref.high))
    assert t.loc["image_per_token", "estimate"] == pytest.approx(per_token[:8].mean())
    assert t.loc["image_per_token", "n"] == 8 and t.loc["image_share", "n"] == 9
    assert t.loc["image_per_token", "low"] < t.loc["image_per_token", "estimate"] < t.loc["image_per_token", "high"]


def test_groups_with_the_same_items_share_their_resamples_whatever_the_row_order():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=7)
    a = _layers({"image_share": x}, condition="no_shift")
    b = _layers({"image_share": x + 0.1}, condition="text_shift").iloc[::-1]  # same items, rows reversed
    t = item_means(pd.concat([a, b]), ["image_share"], n_bootstrap=300, seed=4).set_index("condition")
    assert t.loc["text_shift", "low"] == pytest.approx(t.loc["no_shift", "low"] + 0.1)
    assert t.loc["text_shift", "high"] == pytest.approx(t.loc["no_shift", "high"] + 0.1)


def test_cells_read_estimate_and_interval_and_one_item_has_none():
    two = _layers({"image_share": [0.2, 0.6], "image_per_token": [0.002, 0.006], "text_per_token": [0.01, 0.03]})
    one = _layers({"image_share": [0.41], "image_per_token": [np.nan], "text_per_token": [0.05]}, layer=1)
    means = item_means(pd.concat([two, one]), n_bootstrap=2000, seed=0)
    cells = item_means_cells(means)
    assert list(cells.columns) == list(LAYER_MEASURES) and list(cells.index) == [("no_shift", 0), ("no_shift", 1)]
    assert cells.loc[("no_shift", 0), "image_share"] == "0.400 [0.200, 0.600]"
    assert cells.loc[("no_shift", 0), "image_per_token"] == "0.0040 [0.0020, 0.0060]"  # small means: more decimals
    assert cells.loc[("no_shift", 1), "image_share"] == "0.410 [n/a]"  # one item: no interval
    assert cells.loc[("no_shift", 1), "image_per_token"] == "n/a"
    assert math.isnan(means.iloc[-2]["estimate"]) and means.iloc[-2]["n"] == 0
    with pytest.raises(ParamsError, match="sample_id"):
        item_means(two.drop(columns="sample_id"))
