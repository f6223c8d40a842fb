"""The invented ReXVal fixture (:func:`radaudit.data.fixtures.write_rexval`): the release's layout, read by the real
loader, deterministic, and rater counts that agree partly (Table 1 of ReEvalMed can be computed on it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radaudit.data import load_dataset
from radaudit.data.fixtures import write_rexval


def test_rexval_fixture_has_the_release_layout_and_is_deterministic(tmp_path):
    a = write_rexval(tmp_path / "a", n_studies=5, n_raters=3)
    b = write_rexval(tmp_path / "b", n_studies=5, n_raters=3)
    names = ("50_samples_gt_and_candidates.csv", "6_valid_raters_per_rater_error_categories.csv")
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert list(pd.read_csv(a / names[0]).columns) == ["study_id", "gt_report", "radgraph", "bertscore", "s_emb", "bleu"]
    cand = load_dataset("rexval", path=a)
    assert len(cand) == 5 * 4 and set(cand["candidate_type"]) == {"radgraph", "bertscore", "s_emb", "bleu"}
    assert (cand["n_raters"] == 3).all() and cand["findings"].notna().all()  # "FINDINGS:" header parsed
    errors = load_dataset("rexval", path=a, table="errors")
    assert len(errors) == 5 * 4 * 3 * 6 and set(errors["error_category"]) == set(range(1, 7))
    assert write_rexval(tmp_path / "a", n_studies=5, n_raters=3) == a  # same arguments: left as written
    with pytest.raises(ValueError, match="at least 3 studies"):
        write_rexval(tmp_path / "c", n_studies=2)


def test_rexval_fixture_raters_agree_partly(tmp_path):
    from radaudit.audits import metric_metaeval as mm

    counts = mm.rexval_error_counts(load_dataset("rexval", path=write_rexval(tmp_path, n_studies=12), table="errors"))
    agree = mm.rexval_agreement(counts)
    pearson = agree.loc[agree["method"] == "pearson", "estimate"].to_numpy(float)
    assert len(pearson) == 4 * 12 and np.isfinite(pearson).all()
    assert 0 < pearson.mean() < 1  # related but not identical counts, as real raters
