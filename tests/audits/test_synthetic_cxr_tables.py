"""synthetic_cxr table assembly: Table 3 aggregates and counts, Table 1 layout, Table 8 ranks and ρ, params."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from radaudit.audits.synthetic_cxr import params as scp
from radaudit.audits.synthetic_cxr import study as sc
from radaudit.audits.synthetic_cxr import tables as sct
from radaudit.errors import ParamsError


def _pp(reid, lat, pix):
    return pd.DataFrame({"prompt": [f"p{i}" for i in range(len(reid))], "n_seeds": 2, "max_reid": reid,
                         "mean_reid": reid, "min_latent_distance": lat, "mean_latent_distance": lat,
                         "min_pixel_distance": pix, "mean_pixel_distance": pix})


def test_privacy_long_aggregates_counts_and_calibrated_threshold():
    pp = {"copy": _pp([0.9, 0.5, 0.86], [0.0, 0.1, 0.2], [0.01, 0.02, 0.03]),
          "gen": _pp([0.2, 0.3, 0.4], [0.5, 0.5, 0.5], [0.3, 0.3, 0.3])}
    t = sc.privacy_long(pp, delta=0.85, n_bootstrap=50, calibrated_threshold=0.35)
    got = t.set_index(["generator", "metric"])["estimate"]
    assert got[("copy", "avg_reid")] == pytest.approx((0.9 + 0.5 + 0.86) / 3)
    assert got[("copy", "avg_pixel_distance")] == pytest.approx(0.02)
    assert got[("copy", "max_reid")] == pytest.approx(0.9)
    assert got[("copy", "count_reid_above_delta")] == 2 and got[("gen", "count_reid_above_delta")] == 0
    assert got[("gen", "count_reid_above_calibrated")] == 1 and got[("copy", "count_reid_above_calibrated")] == 3
    wide = sct.table3(t).set_index("measure")
    assert wide.loc["Count Re-ID > δ (↓)", "copy"].startswith("2 of 3")
    assert wide.loc["Max. Re-ID (↓)", "copy"] == "0.900"


def _fid_long():
    rows = []
    for gen, f, p in (("real", 1.0, 0.9), ("model", 5.0, 0.6), ("blur", 9.0, 0.2)):
        rows += [{"generator": gen, "encoder": "cxr", "metric": "fid", "estimate": f, "low": f - 0.5, "high": f + 0.5},
                 {"generator": gen, "encoder": "cxr", "metric": "precision", "estimate": p, "low": p - 0.1, "high": p + 0.1}]
    return pd.DataFrame(rows)


def test_table1_cells_and_rank_summary():
    t1 = sct.table1(_fid_long(), {"cxr": "CXR encoder"}).set_index("generator")
    assert t1.loc["model", "FID (CXR encoder)"] == "5.00 [4.50, 5.50]"
    assert t1.loc["blur", "Precision"] == "0.200 [0.100, 0.300]"
    util = pd.DataFrame({"source": ["real", "real", "model", "blur"], "label": ["macro", "A", "macro", "macro"],
                         "auroc": [0.8, 0.7, 0.7, 0.55]})
    ranks, corr = sc.rank_summary(_fid_long(), util)
    r = ranks.set_index("generator")
    assert r.loc["real", "overall_rank"] == 1 and r.loc["blur", "overall_rank"] == 3
    assert np.isnan(r.loc["real", "utility_rank"])  # "real" here is a generator without a utility row
    assert corr["n"] == 2
    assert list(ranks["generator"]) == ["real", "model", "blur"]  # best first
    assert list(ranks.columns[:4]) == ["generator", "fid_cxr", "precision", "average_rank"]  # Table 1's order
    rev = _fid_long().assign(estimate=lambda d: np.where(d["metric"] == "fid", 10 - d["estimate"], 1 - d["estimate"]))
    assert list(sc.rank_summary(rev, util)[0]["generator"]) == ["blur", "model", "real"]


def test_params_validation():
    with pytest.raises(ValidationError, match="Unknown metric 'bleu2' for label_mode='labels'"):
        scp.Params(report_generation={"metrics": ["bleu1", "bleu2"]})
    with pytest.raises(ValidationError, match="f1_micro_5"):
        scp.Params(report_generation={"metrics": ["f1_micro_5"]})  # a chexpert-mode metric in labels mode
    assert scp.Params(report_generation={"label_mode": "chexpert", "metrics": ["f1_micro_5"]}).report_generation
    with pytest.raises(ValidationError, match="fractions"):
        scp.Params(fractions=[0.5, 0.5])
    with pytest.raises(ValidationError, match="unknown generator kind"):
        scp.Params(generators=[{"name": "x", "kind": "gan"}])
    with pytest.raises(ParamsError, match="demo encoders are trained on covid_cxr"):
        scp.Params(dataset="mimic_cxr").preflight()
