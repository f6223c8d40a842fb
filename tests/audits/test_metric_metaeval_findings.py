"""metric_metaeval's findings: the median AUROC over metrics (hand-computed) and its verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from radaudit.audits import metric_metaeval as mm


def _scores(copies: int = 2) -> pd.DataFrame:
    """4 metrics on pairs i1, i2 (insignificant) and s1, s2 (significant), repeated ``copies`` times.

    a (lower is better): insig 0.1, 0.2 vs sig 0.9, 0.8 -> negated, AUROC 1
    b (higher is better): insig 0.1, 0.2 vs sig 0.9, 0.8 -> AUROC 0
    c: insig 0.5, 0.1 vs sig 0.3, 0.3 -> 2 of 4 comparisons -> 0.5
    d: insig 0.9, 0.4 vs sig 0.5, 0.3 -> 3 of 4 -> 0.75;  median(1, 0, 0.5, 0.75) = 0.625
    """
    values = {"a": ([0.1, 0.2], [0.9, 0.8], False), "b": ([0.1, 0.2], [0.9, 0.8], True),
              "c": ([0.5, 0.1], [0.3, 0.3], True), "d": ([0.9, 0.4], [0.5, 0.3], True)}
    rows = []
    for k in range(copies):
        for m, (ins, sig, hib) in values.items():
            for j, v in enumerate(ins):
                rows.append({"metric": m, "pair_id": f"i{j}_{k}", "score": v, "significance": "insignificant",
                             "higher_is_better": hib, "group": None})
            for j, v in enumerate(sig):
                rows.append({"metric": m, "pair_id": f"s{j}_{k}", "score": v, "significance": "significant",
                             "higher_is_better": hib, "group": None})
    return pd.DataFrame(rows)


def test_median_auroc_hand_computed_with_a_ci_over_pairs():
    res = mm.median_auroc(_scores(3), n_bootstrap=300, seed=0)
    assert res["median"] == pytest.approx(0.625)
    assert res["n_metrics"] == 4 and res["n_pairs"] == 12
    assert res["low"] <= 0.625 <= res["high"] and res["high"] - res["low"] > 0
    # the per-metric values are auroc_table's Overall rows
    au = mm.auroc_table(_scores(3).assign(aspect="Laterality"), n_bootstrap=50).query("aspect == 'Overall'")
    assert au.set_index("metric")["auroc"].to_dict() == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.5, "d": 0.75})


def test_median_auroc_ignores_an_undefined_metric_and_refuses_no_pairs():
    df = _scores(3)
    df.loc[df["metric"] == "d", "score"] = np.nan  # d undefined everywhere: median(1, 0, 0.5) = 0.5
    assert mm.median_auroc(df, n_bootstrap=100)["median"] == pytest.approx(0.5)
    with pytest.raises(Exception, match="no discrimination"):
        mm.median_auroc(df.iloc[:0])


def test_median_auroc_equals_the_metric_by_metric_computation_bit_for_bit():
    """The statistic ranks the metrics scored on every pair in one call: the same values, interval included, as
    scoring each metric on its own (the pre-batching form, written out here), with ties and a partly undefined
    metric."""
    from radaudit.stats import bootstrap_ci, stable_seed

    rng = np.random.default_rng(3)
    n, metrics = 40, ["m0", "m1", "m2", "m3"]
    sig = np.where(np.arange(n) % 3 == 0, "insignificant", "significant")
    rows = []
    for k, m in enumerate(metrics):
        vals = np.round(rng.normal(size=n), 1)  # rounded: many ties
        if m == "m3":
            vals[:5] = np.nan  # undefined on some pairs: computed on its own
        rows += [{"metric": m, "pair_id": f"p{i:02d}", "score": v, "significance": s, "higher_is_better": k != 1,
                  "group": None} for i, (v, s) in enumerate(zip(vals, sig))]
    scores = pd.DataFrame(rows)
    res = mm.median_auroc(scores, n_bootstrap=200, seed=5)

    wide = scores.pivot_table(index="pair_id", columns="metric", values="score", aggfunc="first", dropna=False)
    values = (wide[metrics] * np.array([1.0, -1.0, 1.0, 1.0])).to_numpy(float)
    insig = scores.groupby("pair_id")["significance"].first().reindex(wide.index).to_numpy() == "insignificant"

    def one_by_one(v, lab):
        lab = np.asarray(lab, dtype=bool)
        per = [mm.auroc(v[:, j][np.isfinite(v[:, j]) & lab], v[:, j][np.isfinite(v[:, j]) & ~lab])
               for j in range(v.shape[1])]
        return float(np.median(per))

    ci = bootstrap_ci((values, insig), one_by_one, n_bootstrap=200, method="bca", seed=stable_seed(5, "median_auroc"),
                      max_failed=0.5)
    assert res["median"] == one_by_one(values, insig)
    assert (res["low"], res["high"]) == (ci.low, ci.high)


def test_findings_verdicts_follow_the_stated_rule():
    whole = {"median": 0.5, "low": 0.45, "high": 0.55, "n_metrics": 17, "n_pairs": 800, "method": "bca"}
    trimmed = {"median": 0.15, "low": 0.1, "high": 0.2, "n_metrics": 17, "n_pairs": 800, "method": "bca"}
    f = {x.id: x for x in mm.headline_findings(trimmed, whole)}
    assert list(f) == ["whole_report_auroc_median", "trimmed_pair_auroc_median"]  # the ablation leads
    assert f["whole_report_auroc_median"].verdict == "shown" and f["whole_report_auroc_median"].ci == (0.45, 0.55)
    # the bar is the paper's claim, "cannot tell harmful from harmless": the median AUROC below 0.6
    assert f["whole_report_auroc_median"].bar.to_dict() == {"op": "<", "value": 0.6} and {
        "op": "<", "value": 0.6} == f["trimmed_pair_auroc_median"].bar.to_dict()
    assert f["whole_report_auroc_median"].controls == ()  # no oracle given: rests on nothing
    separating = {**whole, "median": 0.7, "low": 0.62, "high": 0.78}
    assert mm.headline_findings(trimmed, separating)[0].verdict == "not shown"
    # the estimate is below 0.6 but the CI reaches it: partly, and the note says why
    crossing = mm.headline_findings(trimmed, {**whole, "median": 0.55, "low": 0.48, "high": 0.63})[0]
    assert crossing.verdict == "partly" and "crosses the bar" in crossing.note
    # with the oracle, both medians rest on it and it is reported after them
    oracle = {"median": 0.9, "low": 0.85, "high": 0.94, "n_metrics": 1, "n_pairs": 800, "method": "bca", "target": 0.9,
              "n_from_rules": 800, "n_from_labels": 0}
    g = mm.headline_findings(trimmed, whole, oracle=oracle)
    assert [x.id for x in g] == ["whole_report_auroc_median", "trimmed_pair_auroc_median", "oracle_auroc_control"]
    assert g[0].controls == g[1].controls == ("oracle_auroc_control",)
    assert g[2].verdict == "shown" and g[2].bar.to_dict() == {"op": ">", "value": 0.6} and g[2].controls == ()
    off = mm.headline_findings(trimmed, None)[0]
    assert off.value is None and off.verdict == "n/a" and "ablation off" in off.note
    assert not math.isnan(f["trimmed_pair_auroc_median"].value)
