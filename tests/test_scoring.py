"""radaudit score / radaudit.score (issue 22): each metric overall and per group with CIs, the gaps between groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import radaudit
from radaudit.cli import main
from radaudit.errors import ParamsError

SAME = "Small left pleural effusion."
OTHER = "Heart size normal."


def _frame():
    # group A: three exact copies (ROUGE-L 1); group B: one copy, two with no word in common (0, 0); one row
    # without a group value
    return pd.DataFrame({
        "reference": [SAME, SAME, SAME, SAME, SAME, SAME, SAME],
        "prediction": [SAME, SAME, SAME, SAME, OTHER, OTHER, SAME],
        "site": ["A", "A", "A", "B", "B", "B", None],
    })


def test_mean_metric_overall_groups_and_gap_hand_computed():
    r = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=300, seed=1)
    t = r.table.set_index(["group_column", "group"])
    assert t.loc[("all", "all"), "estimate"] == pytest.approx(5 / 7)
    assert t.loc[("site", "A"), "estimate"] == pytest.approx(1.0) and t.loc[("site", "A"), "n"] == 3
    assert t.loc[("site", "B"), "estimate"] == pytest.approx(1 / 3) and t.loc[("site", "B"), "n"] == 3
    assert "1 pairs without a site value left out" in t.loc[("site", "B"), "note"]
    assert (r.table["statistic"] == "mean per pair").all() and set(r.table["metric"]) == {"rouge (rougeL)"}
    gap = r.gaps.iloc[0]
    assert (gap["a"], gap["b"]) == ("A", "B") and gap["estimate"] == pytest.approx(2 / 3)
    ok = r.table.dropna(subset=["low"])
    assert ((ok["low"] <= ok["estimate"] + 1e-12) & (ok["estimate"] <= ok["high"] + 1e-12)).all()
    assert list(r.pairs["rouge (rougeL)"]) == pytest.approx([1, 1, 1, 1, 0, 0, 1])


def test_corpus_bleu_is_the_corpus_statistic_of_each_group_and_the_mean_is_named_as_such():
    from sacrebleu.metrics import BLEU

    df = pd.DataFrame({"reference": ["the left lung is clear and the heart is normal"] * 3
                       + ["there is a small right pleural effusion today"] * 3,
                       "prediction": ["the left lung is clear and heart normal", "the lung is clear", "heart is normal",
                                      "small right pleural effusion", "there is a small effusion", "no effusion"],
                       "sex": ["F", "F", "F", "M", "M", "M"]})
    r = radaudit.score(df, ["bleu"], by=["sex"], n_bootstrap=200)
    t = r.table.set_index(["statistic", "group"])
    want = BLEU(max_ngram_order=4).corpus_score(df["prediction"][:3].tolist(), [df["reference"][:3].tolist()]).score
    assert t.loc[("corpus", "F"), "estimate"] == pytest.approx(want / 100)
    assert set(r.table["statistic"]) == {"corpus", "mean per pair"}


def test_same_seed_same_tables_and_another_seed_other_intervals():
    a = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=200, seed=3)
    b = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=200, seed=3)
    c = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=200, seed=4)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not np.allclose(a.table["low"].fillna(0), c.table["low"].fillna(0)) or not np.allclose(
        a.table["high"].fillna(0), c.table["high"].fillna(0))


@pytest.mark.parametrize("kwargs, message", [
    ({"by": ["ward"]}, "no column(s) ['ward']"),
    ({"metrics": []}, "at least one metric"),
    ({"reference": "truth"}, "reference=/prediction="),
])
def test_bad_input_says_what_to_do(kwargs, message):
    args = {"metrics": ["rouge"], "by": ["site"], **kwargs}
    with pytest.raises(ParamsError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        radaudit.score(_frame(), **args)


def test_cli_writes_tables_and_an_offline_page(tmp_path):
    path = tmp_path / "preds.csv"
    _frame().to_csv(path, index=False)
    res = CliRunner().invoke(main, ["score", str(path), "--metrics", "rouge,bleu", "--by", "site", "--out",
                                    str(tmp_path / "out"), "--n-bootstrap", "100"])
    assert res.exit_code == 0, res.output
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert set(scores["metric"]) == {"rouge (rougeL)", "bleu (bleu4)"}
    page = (tmp_path / "out" / "scores.html").read_text()
    assert "<script" not in page and "Gaps between groups" in page and "A − B" in page
    bad = CliRunner().invoke(main, ["score", str(path), "--metrics", "rouge", "--by", "ward"])
    assert bad.exit_code == 2 and "no column(s) ['ward']" in bad.output
