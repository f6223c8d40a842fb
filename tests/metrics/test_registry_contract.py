"""Every metric that can run here honours the registry's contract on the same real batch.

One table of cases for all metrics: aggregate vs per-sample consistency, the output schema,
identical reports, empty strings, None, non-English and very long reports.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from radaudit.metrics import METRICS, MetricInputError, build_metric, list_metrics

AVAILABLE = list_metrics().query("available")["name"].tolist()
FAST_OPTIONS = {"bertscore": {"device": "cpu"}, "embedding_similarity": {"device": "cpu"}}


@pytest.fixture(scope="module")
def batch(shared_data):
    d = shared_data / "rexrank-chexpertplus-iu"
    refs = (d / "radeval_refs_chexpert_impression.txt").read_text().splitlines()[:12]
    cands = (d / "radeval_preds_chexpert_impression.txt").read_text().splitlines()[:12]
    return refs, cands


@pytest.fixture(scope="module")
def built():
    return {}


def _metric(name, built):
    if name not in built:
        built[name] = build_metric(name, **FAST_OPTIONS.get(name, {}))
    return built[name]


def test_the_learned_adapters_are_the_only_unavailable_ones():
    unavailable = set(METRICS) - set(AVAILABLE)
    assert unavailable <= {"meteor", "radgraph_f1", "ratescore", "green", "chexbert_f1", "alignscore"}


@pytest.mark.long
@pytest.mark.parametrize("name", AVAILABLE)
def test_schema_and_aggregate_consistency(name, batch, built):
    refs, cands = batch
    res = _metric(name, built).compute(refs, cands)
    assert res.name == name and len(res.per_sample) == len(refs)
    assert res.n_undefined == int(np.isnan(res.per_sample).sum())
    if res.aggregate == "mean":
        assert res.score == pytest.approx(np.nanmean(res.per_sample), abs=1e-12)
    else:
        assert res.aggregate == "corpus" and math.isfinite(res.score)
    frame = res.to_frame()
    assert len(frame) == len(refs) and (frame["metric"] == name).all()


@pytest.mark.parametrize("name", AVAILABLE)
def test_identical_reports_score_at_least_as_high_as_different_ones(name, batch, built):
    refs, cands = batch
    m = _metric(name, built)
    same = m.compute(refs, refs)
    diff = m.compute(refs, cands)
    higher = METRICS[name].higher_is_better
    assert (same.score >= diff.score) if higher else (same.score <= diff.score)


@pytest.mark.parametrize("name", AVAILABLE)
def test_none_is_a_clear_error(name, built):
    with pytest.raises(MetricInputError, match="missing"):
        _metric(name, built).compute(["no effusion.", None], ["no effusion.", "clear."])


@pytest.mark.long
@pytest.mark.parametrize("name", AVAILABLE)
def test_empty_non_english_and_long_reports_give_defined_results(name, built):
    long = " ".join(["Heart size is normal. The lungs are clear without effusion or pneumothorax."] * 400)
    refs = ["", "no effusion.", "", "Kein Pleuraerguss, Herz normal groß.", "心脏大小正常。", long]
    cands = ["", "", "no effusion.", "Kein Pleuraerguss.", "心脏大小正常。", long]
    res = _metric(name, built).compute(refs, cands)
    assert len(res.per_sample) == len(refs)
    assert res.n_undefined == int(np.isnan(res.per_sample).sum())  # undefined pairs are counted, not dropped
    defined = res.per_sample[~np.isnan(res.per_sample)]
    assert np.all(np.isfinite(defined))
