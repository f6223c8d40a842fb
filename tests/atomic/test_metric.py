"""The registered ``atomimed`` metric (radaudit.atomic.metric, listed in radaudit.metrics.factual)."""

from __future__ import annotations

import numpy as np
import pytest

from radaudit.atomic import score_pairs
from radaudit.errors import ParamsError
from radaudit.metrics import METRICS, MetricInputError, build_metric, list_metrics

REFS = ["Small left pleural effusion. No pneumothorax.", "Small left pleural effusion. No pneumothorax.", ""]
CANDS = ["Small right pleural effusion. No pneumothorax.", "No pneumothorax.", ""]


def test_registered_and_available():
    assert METRICS["atomimed"].kind == "clinical" and METRICS["atomimed"].higher_is_better
    assert bool(list_metrics().set_index("name").loc["atomimed", "available"])


def test_per_sample_is_eq4_f1_with_sub_scores_in_details():
    res = build_metric("atomimed").compute(REFS, CANDS)
    np.testing.assert_allclose(res.per_sample, [0.75, 2 / 3, 1.0])
    assert res.score == pytest.approx(np.mean([0.75, 2 / 3, 1.0])) and res.aggregate == "mean"
    np.testing.assert_allclose(res.details["disease_recall"], [1.0, 0.5, 1.0])
    np.testing.assert_allclose(res.details["attribute_precision"], [0.5, np.nan, np.nan])
    assert res.details["n_unparseable_total"] == 0 and len(res.details["trace"]) > 0
    frame = res.to_frame()
    assert {"precision", "recall", "disease_f1", "attribute_f1"} <= set(frame.columns)
    direct = score_pairs(REFS, CANDS)
    np.testing.assert_allclose(res.per_sample, direct["f1"])


def test_options_and_errors():
    strict = build_metric("atomimed", theta=1.0, unmentioned="mismatch").compute(REFS[:1], ["Small right pleural effusion."])
    assert strict.details["disease_recall"][0] == 0.5
    with pytest.raises(ParamsError, match="theta"):
        build_metric("atomimed", theta=80)
    with pytest.raises(ParamsError, match="generate_fn"):
        build_metric("atomimed", backend="llm")
    with pytest.raises(MetricInputError, match="missing"):
        build_metric("atomimed").compute(["x", None], ["x", "y"])


def test_empty_batch_and_lazy_import():
    import subprocess
    import sys

    res = build_metric("atomimed").compute([], [])
    assert len(res) == 0 and np.isnan(res.score)
    code = "import sys, radaudit.metrics; print('radaudit.atomic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"  # registering the metric imports nothing of the scorer
