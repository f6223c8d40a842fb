"""radaudit score / radaudit.score (issues 22, 42): each metric overall and per group with CIs, the gaps between groups;
the terminal summary (groups, largest gaps), pairs.csv's row ids and texts, the headline/per-pair-view labels and
column errors that name the flag that fixes them."""

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
    ({"by": ["ward"]}, "The table has no column 'ward' (columns: reference, prediction, site). Name group columns the "
                       "table has with --by (Python: by=)."),
    ({"by": ["Site"]}, "Did you mean 'site'? Pass --by site (Python: by=['site'])."),
    ({"metrics": []}, "at least one metric"),
    ({"reference": "truth"}, "no column 'truth' (columns: reference, prediction, site). Did you mean 'reference'? "
                             "Pass --reference-column reference (Python: reference='reference')."),
    ({"reference": "truth", "prediction": "reference"}, "no column 'truth' (columns: reference, prediction, site). "
                                                        "Name the column of the reference reports with "
                                                        "--reference-column (Python: reference=)."),
])
def test_bad_input_says_what_to_do(kwargs, message):
    args = {"metrics": ["rouge"], "by": ["site"], **kwargs}
    with pytest.raises(ParamsError) as err:
        radaudit.score(_frame(), **args)
    assert message in str(err.value)


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
    assert bad.exit_code == 2 and "preds.csv has no column 'ward'" in bad.output and "--by" in bad.output


# ---------------------------------------------------------------------------------------------- issue 42


def _written(tmp_path, df, *args):
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    res = CliRunner().invoke(main, ["score", str(path), "--out", str(tmp_path / "out"), "--n-bootstrap", "200", *args])
    return res


def test_cli_prints_each_groups_scores_and_the_largest_gap(tmp_path):
    df = _frame().assign(sex=["F", "M", "F", "M", "F", "M", "F"])
    res = _written(tmp_path, df, "--metrics", "rouge,bleu", "--by", "site,sex")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    # site: A = three exact copies (ROUGE-L 1, n 3), B = one copy and two misses (1/3, n 3), row 7 has no site
    # every group here has fewer than 10 pairs: marked †, the caption (wrapped over two lines) says what that means
    at = next(i for i, x in enumerate(lines)
              if x.startswith("By site: 2 groups, headline value [95% CI]; 1 pair without a site value left out"))
    assert "† fewer than 10 pairs" in " ".join(lines[at:at + 3])
    at = next(i for i in range(at, len(lines)) if lines[i].split()[:2] == ["site", "n"]) - 1
    head, a, b = (lines[at + i].split() for i in (1, 2, 3))
    assert head[:4] == ["site", "n", "rouge", "mean"] and head[4:] == ["bleu", "corpus"]
    assert a[:4] == ["A", "†", "3", "1"] and b[:4] == ["B", "†", "3", "0.333"]
    # sex: F = rows 1, 3, 5, 7 (1, 1, 0, 1: 3/4), M = rows 2, 4, 6 (1, 1, 0: 2/3); no row without a sex
    at = next(i for i, x in enumerate(lines) if x.startswith("By sex: 2 groups, headline value [95% CI]"))
    at = next(i for i in range(at, len(lines)) if lines[i].split()[:2] == ["sex", "n"])
    f, m = lines[at + 1].split(), lines[at + 2].split()
    assert f[:4] == ["F", "†", "4", "0.75"] and m[:4] == ["M", "†", "3", "0.667"]
    gaps = next(i for i, x in enumerate(lines) if x.startswith("site gaps: the largest, then every other significant"))
    assert lines[gaps + 2].split()[:2] == ["metric", "gap"]
    rouge = lines[gaps + 3].split()
    assert rouge[:8] == ["rouge", "largest:", "A", "†", "−", "B", "†", "0.667"] and rouge[-2:] == ["of", "1"] and rouge[-3] in ("0", "1")
    assert "BH over all 6 gaps of the report" in " ".join(lines[gaps:gaps + 2])    # (rouge, bleu corpus, bleu per pair) x (site, sex)
    assert all(len(x) <= 100 for x in lines if not x.lstrip().startswith(("tables:", "page:")))


def test_the_largest_gap_is_the_largest_in_absolute_value_and_says_how_many_are_significant():
    same, other = SAME, OTHER
    # A: 11 of 12 copies (11/12), B: 2 of 12 (1/6), C: 12 of 12 (1): the largest |gap| is C − B = 5/6
    df = pd.DataFrame({"reference": [same] * 36, "prediction": [same] * 11 + [other] + [other] * 10 + [same] * 2
                       + [same] * 12, "site": ["A"] * 12 + ["B"] * 12 + ["C"] * 12})
    r = radaudit.score(df, ["rouge"], by=["site"], n_bootstrap=300)
    _, header, body = r._largest_gaps("site")
    assert body[0][1] in ("largest: B − C", "largest: C − B") and body[0][2].split()[0] in ("0.833", "-0.833")
    k = int(r.gaps["significant"].sum())
    assert body[0][4] == f"{k} of 3"
    # then every other significant gap, largest first: A − B (3/4) is significant on 12 pairs each, A − C (1/12) not
    others = [row[1] for row in body[1:]]
    assert "significant: A − B" in others and not any("A − C" in x for x in others)
    assert len(body) == k  # the largest is significant here too: one row per significant gap
    from radaudit.stats import benjamini_hochberg
    assert list(r.gaps["significant"]) == list(benjamini_hochberg(r.gaps["pvalue"].to_numpy())[0])
    assert r.gaps.set_index(["a", "b"]).loc[("A", "B"), "significant"]      # 11/12 vs 2/12 on 12 pairs each


def test_a_group_under_ten_pairs_is_marked_and_not_taken_for_the_largest_gap():
    """scoring.MIN_GROUP_N: with A 11/12, B 10/12 and a 2-pair group U at 0/2, the largest |gap| is U's (11/12),
    but it is noise; the summary's largest gap is A − B (1/12) and U is marked †. Without two groups of 10, the
    largest of all is shown, its small groups marked."""
    same, other = SAME, OTHER
    df = pd.DataFrame({"reference": [same] * 26,
                       "prediction": [same] * 11 + [other] + [same] * 10 + [other] * 2 + [other] * 2,
                       "site": ["A"] * 12 + ["B"] * 12 + ["U"] * 2})
    r = radaudit.score(df, ["rouge"], by=["site"], n_bootstrap=200)
    assert r.gaps["estimate"].abs().max() == pytest.approx(11 / 12)  # gaps.csv keeps every gap, U's included
    _, _, body = r._largest_gaps("site")
    assert body[0][1] == "largest: A − B" and body[0][2].split()[0] == "0.0833"
    # U's gaps (11/12 and 10/12 against a zero-width 0 [0, 0]) come out "significant"; they are counted, not listed
    with_u = r.gaps[(r.gaps["significant"].astype(bool)) & ((r.gaps["a"] == "U") | (r.gaps["b"] == "U"))]
    assert len(with_u) >= 1 and not any("U" in row[1] for row in body[1:] if row[1].startswith("significant"))
    assert body[-1][1] == f"{len(with_u)} more significant with a † group: not listed (in gaps.csv)"
    caption, _, rows = r._groups("site")
    assert [row[0] for row in rows] == ["A", "B", "U †"] and "† fewer than 10 pairs" in caption
    small = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=100)  # A and B have 3 pairs each
    assert small._largest_gaps("site")[2][0][1] == "largest: A † − B †"


def test_one_group_prints_that_there_is_no_gap():
    r = radaudit.score(_frame().assign(site="A"), ["rouge"], by=["site"], n_bootstrap=100)
    assert "(one site group: no gaps)" in r.summary()


def test_many_metrics_split_the_group_table_to_stay_within_100_columns():
    r = radaudit.score(_frame(), ["rouge", "bleu", "rouge1", "rouge2", "bleu1", "bleu2"], by=["site"], n_bootstrap=100)
    text = r.summary()
    groups = [x for x in text.splitlines() if x.split()[:1] == ["A"]]
    assert len(groups) >= 2, text                          # the six metric columns did not fit one table
    assert sum(len(x.split()) for x in groups) >= 2 + 6   # every metric is in one of them
    assert all(len(x) <= 100 for x in text.splitlines()), text


def test_pairs_keep_the_row_the_groups_and_both_texts(tmp_path):
    df = _frame().rename(columns={"reference": "findings", "prediction": "generated"})
    df.insert(0, "study", [f"s{i}" for i in range(7)])
    res = _written(tmp_path, df, "--metrics", "rouge", "--by", "site", "--reference-column", "findings",
                   "--prediction-column", "generated")
    assert res.exit_code == 0, res.output
    pairs = pd.read_csv(tmp_path / "out" / "pairs.csv", keep_default_na=False)
    assert list(pairs.columns) == ["row", "site", "reference", "prediction", "rouge (rougeL)"]
    assert pairs["row"].tolist() == list(range(7))
    back = pd.read_csv(tmp_path / "preds.csv", keep_default_na=False)
    for r in pairs.itertuples():                     # row is the position as pandas reads the file
        assert back.iloc[r.row]["findings"] == r.reference and back.iloc[r.row]["generated"] == r.prediction
    assert pairs["prediction"].tolist()[4:6] == [OTHER, OTHER] and pairs["site"].tolist() == ["A"] * 3 + ["B"] * 3 + [""]
    assert pairs["rouge (rougeL)"].tolist() == pytest.approx([1, 1, 1, 1, 0, 0, 1])


def test_pairs_row_is_the_position_not_the_index_label():
    df = _frame().iloc[[6, 4, 0]]                        # index labels 6, 4, 0
    r = radaudit.score(df, ["rouge"], n_bootstrap=50)
    assert r.pairs["row"].tolist() == [0, 1, 2] and r.pairs["prediction"].tolist() == [SAME, OTHER, SAME]


def test_a_group_column_named_like_a_pairs_column_keeps_both():
    df = _frame().rename(columns={"site": "row"})
    r = radaudit.score(df, ["rouge"], by=["row"], n_bootstrap=50)
    assert r.pairs["row"].tolist() == list(range(7)) and r.pairs["row (input)"].tolist()[:4] == ["A", "A", "A", "B"]


def test_chexpert_f1_corpus_is_the_headline_and_the_mean_per_pair_a_per_pair_view(tmp_path):
    # 12 pairs in A: 11 copies of an effusion report, 1 that misses it -> TP 11, FN 1: F1 = 22/23, per pair 11/12;
    # 12 in B: 2 copies, 10 misses -> F1 = 4/14, per pair 2/12; all: TP 13, FN 11 -> 26/37
    df = pd.DataFrame({"reference": [SAME] * 24, "prediction": [SAME] * 11 + [OTHER] * 11 + [SAME] * 2,
                       "site": ["A"] * 12 + ["B"] * 12})
    res = _written(tmp_path, df, "--metrics", "chexpert_f1", "--by", "site")
    assert res.exit_code == 0, res.output
    scores = pd.read_csv(tmp_path / "out" / "scores.csv").set_index(["statistic", "group"])
    assert scores.loc[("corpus", "all"), "kind"] == "headline"
    assert scores.loc[("corpus", "all"), "estimate"] == pytest.approx(26 / 37)
    assert scores.loc[("corpus", "A"), "estimate"] == pytest.approx(22 / 23)
    assert scores.loc[("mean per pair", "all"), "kind"] == "per-pair view"
    assert scores.loc[("mean per pair", "B"), "estimate"] == pytest.approx(2 / 12)
    out = res.output.splitlines()
    corpus = next(x for x in out if x.split()[:3] == ["chexpert_f1", "(chexpert_f1_micro_top5)", "corpus"])
    view = next(x for x in out if "mean per pair" in x and x.split()[0] == "chexpert_f1")
    assert corpus.split()[3:6] == ["headline", "24", "0.703"]
    assert view.split()[5:7] == ["per-pair", "view"]
    at = out.index("By site: 2 groups, headline value [95% CI]")
    assert out[at + 1].split() == ["site", "n", "chexpert_f1", "corpus"]      # the group table shows the headline
    assert out[at + 2].split()[:3] == ["A", "12", "0.957"] and out[at + 3].split()[:3] == ["B", "12", "0.286"]
    page = (tmp_path / "out" / "scores.html").read_text()
    assert "<td>headline</td>" in page and "<td>per-pair view</td>" in page and "<h2>Summary</h2>" in page
    gaps = pd.read_csv(tmp_path / "out" / "gaps.csv")
    assert set(gaps["kind"]) == {"headline", "per-pair view"}


def test_a_mean_metric_has_one_row_and_it_is_the_headline():
    r = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=50)
    assert set(r.table["kind"]) == {"headline"}


def test_the_page_shows_each_groups_values_and_the_largest_gap():
    page = radaudit.score(_frame(), ["rouge"], by=["site"], n_bootstrap=100).to_html()
    summary = page.split("<h2>rouge (rougeL)</h2>")[0]
    assert "By site: 2 groups" in summary and "<td>A †</td><td class='num'>3</td><td class='num'>1 [" in summary
    assert "<td>B †</td><td class='num'>3</td><td class='num'>0.333 [" in summary
    assert "<td>largest: A † − B †</td><td class='num'>0.667 [" in summary


# ------------------------------------------------------------------ column errors name the flag that fixes them


def test_the_error_names_the_columns_the_closest_one_and_the_flag(tmp_path):
    df = pd.DataFrame({"id": [1, 2], "findings": [SAME, SAME], "generated": [SAME, OTHER], "site": ["A", "B"]})
    res = _written(tmp_path, df, "--metrics", "rouge", "--reference-column", "report", "--prediction-column",
                   "generated")
    assert res.exit_code == 2
    assert ("preds.csv has no column 'report' (columns: id, findings, generated, site). Did you mean 'findings'? "
            "Pass --reference-column findings (Python: reference='findings').") in res.output
    res = _written(tmp_path, df, "--metrics", "rouge", "--by", "sex,stie")
    assert res.exit_code == 2
    assert "preds.csv has no column 'reference', 'prediction', 'sex' or 'stie' (columns: id, findings, generated, site)" \
        in res.output
    assert "'reference': Did you mean 'findings'? Pass --reference-column findings" in res.output
    assert "'prediction': Did you mean 'generated'? Pass --prediction-column generated" in res.output
    assert "'stie': Did you mean 'site'? Pass --by sex,site (Python: by=['sex', 'site'])" in res.output
    assert "'sex': Name group columns the table has with --by" in res.output


def test_a_missing_context_column_suggests_key_equals_column():
    df = _frame().assign(patient_age=[70] * 7)
    with pytest.raises(ParamsError) as err:
        radaudit.score(df, ["rouge"], context_columns="age")
    assert "has no column 'age'" in str(err.value)
    assert "Did you mean 'patient_age'? Pass --context-columns age=patient_age" in str(err.value)


@pytest.mark.parametrize("name, columns, role, want", [
    ("report", ["id", "findings", "generated"], "reference", "findings"),
    ("reference", ["generated_report", "gt_report"], "reference", "gt_report"),       # never the generated one
    ("prediction", ["findings", "gender", "preds"], "prediction", "preds"),           # "gender" is no generation
    ("prediction", ["findings", "gender"], "prediction", None),
    ("reference", ["Reference", "prediction"], "reference", "Reference"),            # case
    ("age_group", ["sex", "agegroup"], "by", "agegroup"),                             # difflib
    ("age", ["sex", "patient_age"], "context", "patient_age"),                        # contains the name
    ("ward", ["sex", "site"], "by", None),
    ("prediction", ["reference_impression", "generated_impression"], "prediction", "generated_impression"),
    ("reference", ["generated_impression", "original_impression"], "reference", "original_impression"),
])
def test_closest_column(name, columns, role, want):
    from radaudit.scoring import closest_column

    assert closest_column(name, columns, role) == want


def test_the_closest_column_is_never_the_other_report_column():
    from radaudit.scoring import closest_column

    assert closest_column("ref", ["pred", "site"], "reference", taken=["pred"]) is None


def test_the_error_shown_in_docs_is_the_one_the_command_gives(tmp_path, monkeypatch):
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "score.md").read_text(encoding="utf-8")
    command, shown = page.split("```text\n$ ", 1)[1].split("\n```", 1)[0].split("\n")
    args = shlex.split(command)
    assert args[:3] == ["radaudit", "score", "preds.csv"]
    pd.DataFrame({"id": [1, 2], "findings": [SAME, SAME], "generated": [SAME, OTHER], "sex": ["F", "M"]}).to_csv(
        tmp_path / "preds.csv", index=False)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, args[1:])
    assert res.exit_code == 2 and res.output.strip() == shown


def test_a_bca_fallback_is_one_note_not_a_warning_per_interval(tmp_path):
    df = _frame().assign(site=["A", "A", "A", "B", "B", "B", "C"])      # C: one pair, BCa's jackknife is undefined
    res = _written(tmp_path, df, "--metrics", "rouge", "--by", "site")
    assert res.exit_code == 0, res.output
    assert "BootstrapWarning" not in res.output and "BCa interval for" not in res.output
    scores, gaps = pd.read_csv(tmp_path / "out" / "scores.csv"), pd.read_csv(tmp_path / "out" / "gaps.csv")
    k = int((scores["method"] == "percentile").sum() + (gaps["method"] == "percentile").sum())
    assert k >= 1 and scores.set_index("group").loc["C", "method"] == "percentile"
    note = " ".join(x.strip() for x in res.output.split("note: ", 1)[1].split("\n\n")[0].splitlines())
    assert note.startswith(f"{k} interval") and "groups C)" in note


def test_the_significant_gaps_are_capped_with_a_pointer_to_gaps_csv():
    """Four groups of 12 at 1 and four at 0: 16 gaps of |1| are all significant; the summary shows the largest, then
    four more, then one line saying how many are left (scoring.MAX_GAP_ROWS = 6 rows per metric)."""
    from radaudit.scoring import MAX_GAP_ROWS

    groups = [f"g{i}" for i in range(8)]
    df = pd.DataFrame({"reference": [SAME] * 96,
                       "prediction": [SAME if i < 4 else OTHER for i in range(8) for _ in range(12)],
                       "site": [g for g in groups for _ in range(12)]})
    r = radaudit.score(df, ["rouge"], by=["site"], n_bootstrap=200)
    _, _, body = r._largest_gaps("site")
    n_sig = int(r.gaps["significant"].sum())
    assert n_sig == 16 and len(body) == MAX_GAP_ROWS == 6
    assert body[0][4] == "16 of 28" and all(row[1].startswith("significant: ") for row in body[1:5])
    assert body[5][1] == "… 11 more significant, in gaps.csv"
