"""The pair dataset balanced as ReEvalMed §4.2.1 / Table 2 on real IU X-ray + CheXpert Plus text,
determinism by seed, the monotonicity set (§4.3), and the parquet + provenance round trip."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from radaudit.data import chexpert_phrases_dir
from radaudit.errors import DataFormatError, ParamsError
from radaudit.perturb import MONOTONICITY_GROUPS
from radaudit.perturb.dataset import (
    build_monotonicity_set,
    build_pair_dataset,
    gt_reports,
    load_gt_reports,
    load_pair_dataset,
    save_pair_dataset,
    table2_cells,
)
from radaudit.text.labeler import ChexpertLabeler


@pytest.fixture(scope="module")
def labeler(shared_data):
    return ChexpertLabeler(chexpert_phrases_dir(shared_data))


@pytest.fixture(scope="module")
def reports(shared_data):
    return load_gt_reports(data_root=shared_data)


@pytest.fixture(scope="module")
def dataset(reports, labeler):
    rep, prov = reports
    return build_pair_dataset(rep, "rules", n_per_cell=10, seed=0, labeler=labeler, sources=prov)


def test_table2_cells_total_400():
    cells = table2_cells(10)
    assert len(cells) == 40 and cells["target"].sum() == 400
    hi = cells[cells["error_type"].notna()]
    assert set(hi["aspect"]) == {"location", "severity", "description", "comparison"} and len(hi) == 24
    with pytest.raises(ParamsError):
        table2_cells(0)


def test_reports_from_both_public_sources(reports):
    rep, prov = reports
    assert set(rep["source"]) == {"iu_xray", "chexpert_plus_valid"}
    assert set(prov) == {"iu_xray", "chexpert_plus_valid"}
    assert all(len(v["fingerprint"]) == 16 for v in prov.values())


@pytest.mark.long
def test_balance_on_real_reports(dataset):
    pairs, fill = dataset.pairs, dataset.fill
    assert dataset.complete, dataset.shortfalls().to_string()
    assert len(pairs) == 400 and fill["filled"].sum() == 400
    assert pairs["verified"].all()
    counts = pairs.groupby(["aspect", "significance"]).size()
    hi_aspects = ["location", "severity", "description", "comparison"]
    assert len(counts) == 24 and counts.sum() == 400
    assert (counts[counts.index.get_level_values(0).isin(hi_aspects)] == 30).all()
    assert (counts[~counts.index.get_level_values(0).isin(hi_aspects)] == 10).all()
    hi = pairs[pairs["aspect"].isin(["location", "severity", "description", "comparison"])]
    assert (hi.groupby(["aspect", "error_type", "significance"]).size() == 10).all()
    assert hi.groupby(["aspect", "error_type", "significance"]).ngroups == 24
    # every pair records its annotation, its edited spans and an explanation
    for r in pairs.itertuples():
        assert r.gt[r.gt_start:r.gt_end] == r.gt_edit_text and r.rewritten[r.me_start:r.me_end] == r.me_edit_text
        assert r.explanation and r.human_review == "" and r.gt != r.rewritten
    assert set(pairs["source"]) == {"iu_xray", "chexpert_plus_valid"}
    assert pairs["pair_id"].is_unique
    # §4.2.1: insignificant pairs keep only the edited sentences when that still verifies
    ins = pairs[pairs["significance"] == "insignificant"]
    assert (ins["context"] == "edited_sentences").mean() > 0.5
    assert (pairs.loc[pairs["significance"] == "significant", "context"] == "full").all()


@pytest.mark.long
def test_each_cell_is_shared_over_its_rules(dataset, reports):
    """10 pairs, three rules: 4/3/3 unless a rule applies to too few reports (then another rule fills in);
    without balancing, the rule that applies most often takes most of the cell."""
    from radaudit.perturb import RULES
    from radaudit.perturb.engine import RuleEngine

    pairs = dataset.pairs
    per_cell = pairs.groupby(["aspect", "error_type", "significance"])["rule"].nunique()
    hi = per_cell[per_cell.index.get_level_values(0).isin(["location", "severity", "description", "comparison"])]
    assert (hi >= 2).all() and (hi >= 3).mean() > 0.8, hi[hi < 3]
    share = pairs.groupby(["aspect", "error_type", "significance", "rule"]).size()
    assert share.max() <= 8  # no rule takes a whole cell of 10
    assert set(pairs["rule"]) <= set(RULES)
    rep, _ = reports
    sub = rep.sample(600, random_state=1).reset_index(drop=True)
    cells = pd.DataFrame([{"aspect": "location", "error_type": "inaccuracy", "significance": "significant", "target": 9}])
    even = build_pair_dataset(sub, "rules", cells=cells, seed=0).pairs["rule"].value_counts()
    free = build_pair_dataset(sub, RuleEngine(balance_rules=False), cells=cells, seed=0).pairs["rule"].value_counts()
    assert len(even) >= 3 and even.max() - even.min() <= 1  # 9 pairs over (at least) three rules: 3/3/3
    assert free.max() > even.max()  # unbalanced: the most applicable rule dominates


@pytest.mark.long
def test_shortfall_is_reported_with_counts(reports):
    rep, _ = reports
    few = rep[rep["text"].str.contains("pneumothorax", case=False)].head(30)
    ds = build_pair_dataset(few, "rules", n_per_cell=10, seed=0)
    short = ds.shortfalls()
    assert not ds.complete and len(short) > 0
    assert (short["filled"] + short["shortfall"] == short["target"]).all()
    assert short["note"].str.contains("reports gave a verified rewrite").all()
    assert ds.provenance["counts"]["cells_short"] == len(short)


@pytest.mark.long
def test_determinism_by_seed(reports):
    rep, _ = reports
    sub = rep.sample(400, random_state=0).reset_index(drop=True)
    a = build_pair_dataset(sub, "rules", n_per_cell=2, seed=7)
    b = build_pair_dataset(sub, "rules", n_per_cell=2, seed=7)
    c = build_pair_dataset(sub, "rules", n_per_cell=2, seed=8)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    assert a.provenance == b.provenance
    assert not a.pairs["rewritten"].equals(c.pairs["rewritten"])
    # the order of the input reports does not matter
    d = build_pair_dataset(sub.iloc[::-1].reset_index(drop=True), "rules", n_per_cell=2, seed=7)
    pd.testing.assert_frame_equal(a.pairs, d.pairs)


@pytest.mark.long
def test_save_and_load_round_trip(dataset, tmp_path):
    folder = save_pair_dataset(dataset, tmp_path / "pairs")
    back = load_pair_dataset(folder)
    pd.testing.assert_frame_equal(back.pairs, dataset.pairs)
    pd.testing.assert_frame_equal(back.fill, dataset.fill)
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["seed"] == 0 and prov["engine"]["engine"] == "rules"
    assert prov["sources"]["iu_xray"]["fingerprint"] and prov["radaudit_version"]
    assert prov["counts"]["filled"] == 400
    first = (folder / "pairs.parquet").read_bytes()
    save_pair_dataset(dataset, folder)
    assert (folder / "pairs.parquet").read_bytes() == first
    with pytest.raises(DataFormatError, match="not a saved pair dataset"):
        load_pair_dataset(tmp_path)


def test_monotonicity_set(reports, labeler):
    rep, prov = reports
    ms = build_monotonicity_set(rep, seed=0, labeler=labeler, sources=prov)
    p = ms.pairs
    assert ms.complete and len(p) == 20
    assert sorted(p["group"].unique()) == list(MONOTONICITY_GROUPS)
    # the same four GT reports in every group
    per_group = p.groupby("group")["study_id"].apply(lambda s: tuple(sorted(s)))
    assert per_group.nunique() == 1 and len(per_group.iloc[0]) == 4
    assert (p.loc[p["group"] <= 1, "significance"] == "insignificant").all()
    assert (p.loc[p["group"] >= 2, "significance"] == "significant").all()
    g3 = p[p["group"] == 3]
    assert (g3["edits"].apply(len) >= 3).all() and g3["aspect"].str.count(r"\+").eq(2).all()
    assert (p.loc[p["group"] == 4, "aspect"] == "contradiction").all()
    assert p.loc[p["group"] == 0, "aspect"].isin(["stylistic", "terminology", "uncertainty", "modality", "description",
                                                   "location"]).all()


def test_bad_inputs_raise_clear_errors(reports):
    rep, _ = reports
    with pytest.raises(DataFormatError, match="study_id"):
        build_pair_dataset(pd.DataFrame({"x": [1]}))
    with pytest.raises(DataFormatError, match="empty"):
        build_pair_dataset(rep.iloc[:0])
    with pytest.raises(ParamsError, match="context"):
        build_pair_dataset(rep.head(5), context="some")
    with pytest.raises(ParamsError, match="engine"):
        build_pair_dataset(rep.head(5), engine="gpt")
    with pytest.raises(ParamsError, match="text_field"):
        gt_reports(pd.DataFrame({"study_id": [], "findings": [], "impression": []}), text_field="summary")
