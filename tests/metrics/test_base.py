"""The metric registry's contract: input checks, the result schema, lazy building, clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from radaudit.errors import ParamsError
from radaudit.metrics.base import (
    METRICS,
    MetricInputError,
    MetricResult,
    MetricSpec,
    MetricUnavailableError,
    check_pairs,
    mean_result,
)


def test_check_pairs_accepts_strings_and_empties():
    assert check_pairs(("a", ""), ["", "b"]) == (["a", ""], ["", "b"])


@pytest.mark.parametrize("refs,cands,msg", [
    (["a"], ["a", "b"], "1 references but 2 candidates"),
    (["a", None], ["a", "b"], r"references \[1\] are missing"),
    (["a", "b"], ["a", float("nan")], r"candidates \[1\] are missing"),
    (["a", 3], ["a", "b"], r"references \[1\] are not strings \(got int\)"),
    ("abc", ["a"], "not a single string"),
])
def test_check_pairs_errors(refs, cands, msg):
    with pytest.raises(MetricInputError, match=msg):
        check_pairs(refs, cands)


def test_mean_result_ignores_and_counts_undefined():
    r = mean_result("m", [1.0, math.nan, 0.5], details={"p": np.array([1, 2, 3]), "note": "x"})
    assert r.score == 0.75 and r.n_undefined == 1 and r.aggregate == "mean"
    f = r.to_frame()
    assert list(f.columns) == ["pair", "metric", "score", "p"]  # batch-level details stay out of the frame
    assert f["p"].tolist() == [1, 2, 3] and np.isnan(f["score"][1])
    assert math.isnan(mean_result("m", [math.nan]).score)


def test_result_per_sample_is_float_array():
    r = MetricResult(name="m", score=1.0, per_sample=[1, 0])
    assert r.per_sample.dtype == float and len(r) == 2


def test_unknown_metric_lists_known_ones():
    from radaudit.metrics import build_metric

    with pytest.raises(ParamsError, match="Unknown metric 'nope'"):
        build_metric("nope")


def test_missing_requirement_names_the_extra():
    spec = MetricSpec(name="fake", factory="nowhere:nothing", kind="learned", description="d",
                      requires=("definitely_not_installed_pkg",), extra="fakeextra")
    with pytest.raises(MetricUnavailableError, match=r"pip install 'radaudit\[fakeextra\]'"):
        spec.build()


def test_registering_a_name_twice_fails():
    spec = MetricSpec(name="__dup__", factory="x:y", kind="lexical", description="d")
    METRICS.register(spec)
    try:
        with pytest.raises(ValueError, match="registered twice"):
            METRICS.register(spec)
    finally:
        del METRICS["__dup__"]


def test_cli_metrics_lists_every_registered_metric_and_availability():
    from click.testing import CliRunner

    from radaudit.cli import main

    r = CliRunner().invoke(main, ["metrics"])
    assert r.exit_code == 0
    for name in METRICS:
        assert f" {name} " in r.output
    assert "[x] bleu4" in r.output


def test_metric_label_from_the_registry_with_overrides():
    from radaudit.metrics.base import metric_label

    assert metric_label("rougeL") == "ROUGE-L" and metric_label("bleu4") == "BLEU-4"
    assert metric_label("chexpert_f1_micro_top5") == "CheXpert-label F1 (micro, 5)"
    assert metric_label("cider", {"cider": "CIDEr-D (÷10)"}) == "CIDEr-D (÷10)"
    assert metric_label("not_a_metric") == "not_a_metric"
    assert all(spec.label for spec in METRICS.values())  # every built-in metric has a display name
