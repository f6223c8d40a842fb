"""The reader's table formatter (radaudit.tables.for_reader / reader_html, issue 42): every rule by a hand-computed
case, the "not run" sentence of an unavailable metric, legible figures, and a scan of every smoke report's tables."""

from __future__ import annotations

from synthetic_images import squares

import math
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from radaudit.experiments import EXPERIMENTS  # noqa: E402
from radaudit.html_page import fmt_number  # noqa: E402
from radaudit.plots import REPORT_WIDTH_PX, label_points, small_text  # noqa: E402
from radaudit.tables import (  # noqa: E402
    ci_triples,
    column_decimals,
    for_reader,
    format_pvalue,
    format_value,
    is_pvalue_column,
    reader_html,
    save_table,
    show_tables_for_readers,
    tidy_ci_text,
    unavailable_note,
)

pytestmark = pytest.mark.usefixtures("close_figures")  # tests/conftest.py: every figure closed after each test


# ------------------------------------------------------------------------------------------------ number rules


@pytest.mark.parametrize(("values", "decimals"), [
    ([0.712, 0.65], 3),          # proportions, AUROC, τ: 3 decimals
    ([1.0, 0.0], 3),             # an AUROC column that reaches 1
    ([-0.8, 2.5], 3),            # effect sizes below 10
    ([0.0962, 0.0047], 4),       # a KID column: every value below 0.1
    ([24.316667, 22.36], 1),     # mean tokens: 24.3
    ([364.52, 108.38], 0),       # FID (Inception): 365
    ([5.347583e-40, 2.3e-46], None),  # all tiny: scientific
    ([float("nan")], 3),
])
def test_column_decimals_follow_the_largest_magnitude(values, decimals):
    assert column_decimals(values) == decimals


@pytest.mark.parametrize(("x", "decimals", "text"), [
    (24.316667, 1, "24.3"),
    (0.712345, 3, "0.712"),
    (1234.5678, 0, "1,235"),
    (-0.0001, 3, "-0.0001"),     # a non-zero value never reads as 0.000: 2 significant digits, plain down to 1e-4
    (0.00004, 3, "4.0e-05"),     # ... and scientific below
    (-0.0, 3, "0.000"),          # no "-0.000"
    (5.347583e-40, None, "5.35e-40"),
    (float("nan"), 3, "—"),
    (None, 3, "—"),
    (True, 3, "yes"),
    (np.bool_(False), 3, "no"),
    (12345, 3, "12,345"),        # an integer: thousands separated, never decimals
    ("nan", 3, "—"),             # a missing value that became text
    ("CheXpert F1", 3, "CheXpert F1"),
    (float("inf"), 3, "∞"),
])
def test_format_value(x, decimals, text):
    assert format_value(x, decimals) == text


@pytest.mark.parametrize(("p", "text"), [
    (5.347583e-40, "<0.001"), (0.0, "<0.001"), (0.000999, "<0.001"), (0.001, "0.001"), (0.00123, "0.0012"),
    (0.0123, "0.0123"), (0.05, "0.05"), (0.5, "0.5"), (0.9996, "1"), (1.0, "1"), (float("nan"), "—"),
])
def test_pvalues_read_as_less_than_0001_or_three_significant_digits(p, text):
    assert format_pvalue(p) == text


@pytest.mark.parametrize(("name", "is_p"), [
    ("p", True), ("pvalue", True), ("p_adj", True), ("BH p", True), ("p (BH)", True), ("pearson_p_adj", True),
    ("q", True), ("p_yes", False), ("p_star", False), ("n_pairs", False), ("separates", False),
])
def test_pvalue_columns_by_name(name, is_p):
    assert is_pvalue_column(name) is is_p


def test_ci_triples_find_the_estimate_of_each_interval():
    cols = ["model", "estimate", "low", "high", "tau", "tau_low", "tau_high", "unknown_rate", "unknown_low",
            "unknown_high", "value", "ci_low", "ci_high", "auroc", "lo", "hi"]
    assert ci_triples(cols) == [("estimate", "low", "high"), ("tau", "tau_low", "tau_high"),
                                ("unknown_rate", "unknown_low", "unknown_high"), ("value", "ci_low", "ci_high"),
                                ("auroc", "lo", "hi")]
    assert ci_triples(["low", "mid"]) == []  # a "low" without its "high" is no interval


@pytest.mark.parametrize(("text", "tidy"), [
    ("0.00935 [-0.103, 0.131]", "0.009 [-0.103, 0.131]"),  # 5 decimals → the magnitude's 3
    ("0.70 [0.57, 0.81]", "0.70 [0.57, 0.81]"),            # never more decimals than the string had
    ("0.994 [0.979, 1]", "0.994 [0.979, 1.000]"),          # one precision for the three numbers
    ("364.52 [350.19, 379.03]", "365 [350, 379]"),
    ("0.95+ [0.90, 0.99]", "0.95+ [0.90, 0.99]"),          # marked cells are left alone
    ("5.3e-40 [1e-41, 2e-39]", "5.3e-40 [1e-41, 2e-39]"),  # tiny: scientific stays
    ("n/a (fewer than 5 images)", "n/a (fewer than 5 images)"),
])
def test_ci_strings_written_elsewhere_are_rerounded_for_reading(text, tidy):
    assert tidy_ci_text(text) == tidy


# ------------------------------------------------------------------------------------------------ tables


def _raw() -> pd.DataFrame:
    """What notebooks displayed raw (issue 42): floats at 6 decimals, 5.3e-40, True/False, an index column."""
    return pd.DataFrame({
        "strategy": ["greedy", "beam4"], "reports": [300, 1200], "mean_new_tokens": [24.316667, 22.36],
        "share": [0.0, 0.25], "p_adj": [5.347583e-40, 0.0123], "separates": [False, True],
        "auroc": [0.71234, np.nan], "auroc_low": [0.65, 0.1], "auroc_high": [0.77, 0.2], "patients": [200.0, np.nan]})


def test_for_reader_formats_every_cell_by_kind():
    shown = for_reader(_raw())
    assert list(shown.columns) == ["strategy", "reports", "mean_new_tokens", "share", "p_adj", "separates",
                                   "auroc [95% CI]", "patients"]
    assert shown.iloc[0].tolist() == ["greedy", "300", "24.3", "0.000", "<0.001", "no", "0.712 [0.650, 0.770]", "200"]
    assert shown.iloc[1].tolist() == ["beam4", "1,200", "22.4", "0.250", "0.0123", "yes", "—", "—"]
    assert isinstance(shown.index, pd.RangeIndex)


def test_for_reader_hides_row_numbers_and_keeps_a_meaningful_index():
    df = _raw()
    assert "index" not in for_reader(df.iloc[[1, 0]]).columns  # a filter's leftover integer index: not shown
    labelled = for_reader(df.set_index("strategy"))
    assert labelled.columns[0] == "strategy" and labelled.iloc[:, 0].tolist() == ["greedy", "beam4"]
    multi = pd.DataFrame([[1.5, 2.5]], index=pd.MultiIndex.from_tuples([("a", "acc")], names=["model", "metric"]),
                         columns=pd.MultiIndex.from_tuples([("x", "no_shift"), ("x", "text_shift")]))
    shown = for_reader(multi)
    assert list(shown.columns) == ["model", "metric", "x · no_shift", "x · text_shift"]
    assert shown.iloc[0].tolist() == ["a", "acc", "1.500", "2.500"]
    series = for_reader(pd.Series([0.5, 0.25], index=pd.Index(["F", "M"], name="sex"), name="share"))
    assert series.to_dict("list") == {"sex": ["F", "M"], "share": ["0.500", "0.250"]}


def test_confidence_names_the_interval_level():
    df = pd.DataFrame({"estimate": [0.5], "low": [0.4], "high": [0.6]})
    assert list(for_reader(df, confidence=0.9).columns) == ["estimate [90% CI]"]
    assert list(for_reader(df, confidence=None).columns) == ["estimate [CI]"]


def test_reader_html_aligns_numbers_keeps_intervals_whole_and_escapes_text():
    html = reader_html(pd.DataFrame({"metric": ["<b>BLEU</b>"], "estimate": [0.5], "low": [0.4], "high": [0.61]}))
    assert "<td>&lt;b&gt;BLEU&lt;/b&gt;</td>" in html
    assert "<td class='num'>0.500 <span class='ci'>[0.400, 0.610]</span></td>" in html
    assert "<th></th>" not in html  # no index column
    labelled = reader_html(pd.DataFrame({"v": [1.0, 2.5]}, index=pd.Index(["a", "b"], name="k")))
    assert "<tr><th>a</th><td class='num'>1.000</td></tr>" in labelled  # the index's labels as row headers


def test_saved_files_keep_full_precision(tmp_path):
    df = _raw()
    paths = save_table(df, tmp_path, "t")
    back = pd.read_csv(paths["csv"])
    assert back["mean_new_tokens"].tolist() == [24.316667, 22.36] and back["p_adj"][0] == 5.347583e-40
    assert "24.3167" in paths["md"].read_text()  # Markdown/LaTeX: save_table's own 4 decimals, not the reader's


def test_every_displayed_frame_goes_through_the_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    html = ip.display_formatter.formatters["text/html"]
    before = {t: html.type_printers.get(t) for t in (pd.DataFrame, pd.Series)}
    try:
        show_tables_for_readers(0.95)
        data, _ = ip.display_formatter.format(_raw())
        assert "0.712 <span class='ci'>[0.650, 0.770]</span>" in data["text/html"] and "24.316667" not in data["text/html"]
        assert "24.316667" in data["text/plain"]  # the plain view is pandas' own
    finally:
        for t, printer in before.items():
            html.type_printers.pop(t, None)
            if printer is not None:
                html.type_printers[t] = printer


def test_report_findings_numbers_have_at_most_four_decimals():
    assert [fmt_number(x) for x in (0.81234, 0.9, 0.00935, 5.3e-40, 1234.5, 12.345, 3)] == [
        "0.812", "0.9", "0.0094", "5.3e-40", "1,234", "12.3", "3"]


# ------------------------------------------------------------------------------------------------ unavailable metrics


RATESCORE = ("MetricUnavailableError: Metric 'ratescore' needs RaTEScore, medspacy, which is not installed: "
             "pip install 'radaudit[ratescore]'.")


def test_an_unavailable_metric_is_one_sentence_with_its_own_reason():
    from radaudit.metrics.base import metric_label

    note = unavailable_note({"ratescore": RATESCORE, "green": "MetricUnavailableError: Metric 'green' needs its model "
                                                              "from the Hub, which is offline here."}, metric_label)
    assert note == ("*Not run here.* RaTEScore was not run: needs RaTEScore, medspacy, which is not installed: "
                    "`pip install 'radaudit[ratescore]'`. GREEN was not run: needs its model from the Hub, which is "
                    "offline here.")
    assert "Error" not in note and "{" not in note


def test_a_metric_skipped_for_every_strategy_is_named_once():
    note = unavailable_note({"greedy": {"ratescore": RATESCORE}, "beam4": {"ratescore": RATESCORE}},
                            {"ratescore": "RaTEScore"})
    assert note.count("RaTEScore was not run") == 1
    assert unavailable_note({"ratescore": RATESCORE}).startswith("*Not run here.* ratescore was not run")
    assert unavailable_note({}) == "" and unavailable_note(None) == ""


# ------------------------------------------------------------------------------------------------ figures


def test_small_text_counts_the_shrinking_of_a_wide_figure():
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.set_title("eight", fontsize=8)
    ax.text(0.5, 0.5, "six", fontsize=6)
    assert [t for t, _ in small_text(fig)] == ["six"]
    assert [t for t, _ in small_text(fig, display_px=REPORT_WIDTH_PX, dpi=150)] == ["six"]  # 1050 px: shown whole
    wide, ax = plt.subplots(figsize=(30, 3))
    ax.set_title("eight", fontsize=8)
    # 4500 px shown in 1052: 8 pt × 150/96 × 1052/4500 = 2.92 pt
    assert small_text(wide, display_px=REPORT_WIDTH_PX, dpi=150) == [("eight", pytest.approx(2.92, abs=0.01))]


def test_labels_of_clustered_points_do_not_overlap():
    fig, ax = plt.subplots(figsize=(4, 4))
    pts = np.array([[0.5 + 0.01 * i, 0.5] for i in range(6)])
    ax.scatter(pts[:, 0], pts[:, 1])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    anns = label_points(ax, [(x, y, f"word{i}", {}) for i, (x, y) in enumerate(pts)], avoid=pts)
    r = fig.canvas.get_renderer()
    boxes = [plt.Text.get_window_extent(a, r) for a in anns]  # the words (an Annotation's own box holds its line)
    assert all(not boxes[i].overlaps(boxes[j]) for i in range(len(boxes)) for j in range(i))
    assert all(a.get_fontsize() >= 8 for a in anns)
    # the planted defect: the same labels all at one offset overlap (what the figure showed before)
    same = [ax.annotate(f"word{i}", (x, y), xytext=(3, 3), textcoords="offset points") for i, (x, y) in enumerate(pts)]
    boxes = [plt.Text.get_window_extent(a, r) for a in same]
    assert any(boxes[i].overlaps(boxes[j]) for i in range(len(boxes)) for j in range(i))


# ------------------------------------------------------------------------------------------------ synthetic_cxr


def test_per_label_auroc_needs_ten_positive_and_ten_negative_test_images():
    from radaudit.audits.synthetic_cxr.table4 import too_few_test_images, utility_table

    long = pd.DataFrame({
        "source": ["real"] * 3, "label": ["COVID-19", "ARDS", "macro"], "auroc": [0.70, 0.90, 0.8],
        "ci_low": [0.57, 0.82, 0.7], "ci_high": [0.81, 0.96, 0.9], "n_pos": [87, 4, math.nan],
        "n_neg": [20, 103, math.nan]})
    assert too_few_test_images(long) == {"ARDS": "too few test images (4 positives)"}
    assert too_few_test_images(long.assign(n_neg=[9, 103, math.nan])) == {
        "COVID-19": "too few test images (9 negatives)", "ARDS": "too few test images (4 positives)"}
    t4 = utility_table(long, marks=True, ci=True, min_test_images=10)
    assert t4.loc["real", "ARDS"] == "too few test images (4 positives)"
    assert t4.loc["real", "COVID-19"] == "0.70 [0.57, 0.81]" and t4.loc["real", "macro"] == "0.80 [0.70, 0.90]"
    assert utility_table(long, marks=True, ci=True).loc["real", "ARDS"] == "0.90 [0.82, 0.96]"  # default: as before


_squares = squares


def test_the_headline_macro_auroc_averages_only_labels_with_ten_positive_and_ten_negative_test_images():
    from sklearn.metrics import roc_auc_score

    from radaudit.audits.synthetic_cxr.table4 import MACRO_ALL_LABELS, utility_table
    from radaudit.audits.synthetic_cxr.utility import run_utility

    x, y = _squares(64, 5)
    xt, yt = _squares(40, 6)
    yt[:, 1] = 0
    yt[:4, 1] = 1  # "bar": 4 positive test images, below the floor of 10
    noise = np.random.default_rng(0).uniform(size=x.shape).astype(np.float32)
    res = run_utility({"real": (x, y), "noise": (noise, y)}, xt, yt, ["square", "bar"], seed=0, n_bootstrap=200,
                      min_positives=10, epochs=4, lr=3e-3, batch_size=16)  # min_positives: as the notebook
    long = res.long.set_index(["source", "label"])
    for src in ("real", "noise"):
        square = roc_auc_score(yt[:, 0], res.scores[src][:, 0])
        bar = roc_auc_score(yt[:, 1], res.scores[src][:, 1])
        assert long.loc[(src, "macro"), "auroc"] == pytest.approx(square)  # the headline: "square" alone
        assert long.loc[(src, MACRO_ALL_LABELS), "auroc"] == pytest.approx((square + bar) / 2)  # the paper's macro
        assert long.loc[(src, "macro"), "ci_low"] <= long.loc[(src, "macro"), "auroc"] <= long.loc[(src, "macro"),
                                                                                                     "ci_high"]
    assert long.loc[("real", "macro"), "n_pos"] == yt[:, 0].sum()  # the counts of the labels it averages
    assert "(square); left out: bar (4 positives)" in long.loc[("real", "macro"), "note"]
    assert "(square, bar)" in long.loc[("real", MACRO_ALL_LABELS), "note"]
    # its paired difference to the baseline is tested (every label in it has >= 10 positives); the paper's is not
    assert long.loc[("noise", "macro"), "diff"] == pytest.approx(long.loc[("noise", "square"), "diff"])
    assert np.isfinite(long.loc[("noise", "macro"), "pvalue"])
    assert np.isnan(long.loc[("noise", MACRO_ALL_LABELS), "pvalue"])
    t4 = utility_table(res.long, marks=True, ci=True, min_test_images=10)
    assert list(t4.columns) == ["square", "bar", "macro", MACRO_ALL_LABELS]
    assert ("Macro: mean AUROC over the labels with at least 10 positive and 10 negative test images (square); "
            "macro (all labels): over every label with both classes in the test set (square, bar).") in t4.attrs["legend"]
    # with the floor off, one macro over every label, as the paper
    off = run_utility({"real": (x, y)}, xt, yt, ["square", "bar"], seed=0, n_bootstrap=0, min_test_images=0,
                      epochs=4, lr=3e-3, batch_size=16).long.set_index("label")
    assert MACRO_ALL_LABELS not in off.index and off.loc["macro", "auroc"] == pytest.approx(
        long.loc[("real", MACRO_ALL_LABELS), "auroc"])


# ------------------------------------------------------------------------------------------------ every smoke report

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.(\d+))?(?:e([-+]?\d+))?(?![\w.])", re.I)
_NUMERIC_CELL = re.compile(r"^[\s\d.,eE+\-−%\[\]*~<>—/]+$")


def table_cell_problems(html: str) -> list[tuple[str, str]]:
    """``(problem, cell)`` for every table cell of a report a reader should not see: a number with more than 4
    decimals, scientific notation for a number a plain decimal shows (1e-4 ≤ |x| < 1e9), ``True``/``False``,
    ``nan``/``None``. Numbers are read in numeric cells (numbers, intervals, marks), not in prose notes."""
    import lxml.html

    root = lxml.html.fromstring(html)
    out = []
    for cell in root.xpath("//table//td | //table//th"):
        text = cell.text_content().strip()
        if text in {"True", "False", "nan", "NaN", "None", "<NA>"}:
            out.append(("raw value", text))
            continue
        if not text or not _NUMERIC_CELL.match(text):
            continue
        for m in _NUMBER.finditer(text):
            if m.group(1) and len(m.group(1)) > 4 and not m.group(2):
                out.append(("more than 4 decimals", text))
            if m.group(2) is not None:
                value = float(m.group(0).replace(",", "").replace("−", "-"))
                if value == 0 or 1e-4 <= abs(value) < 1e9:
                    out.append(("needless scientific notation", text))
    return out


def test_the_scan_catches_what_issue_42_saw():
    raw = _raw().to_html()  # pandas' own table: what the reports showed
    found = {p for p, _ in table_cell_problems(raw)}
    # 24.316667, True/False, and p_adj's 0.0123 as 1.230000e-02 (pandas writes a column in one format)
    assert found == {"more than 4 decimals", "raw value", "needless scientific notation"}
    assert table_cell_problems(pd.DataFrame({"x": [2.0e-4, 5e-40]}).to_html()) == [
        ("needless scientific notation", "2.000000e-04")]
    assert table_cell_problems(reader_html(_raw())) == []


@pytest.mark.parametrize("experiment", [e.name for e in EXPERIMENTS.values()])
def test_every_smoke_report_table_reads_as_numbers(smoke_runs, experiment):
    res = smoke_runs(experiment)[0]
    assert res.html is not None and res.html.is_file()
    problems = table_cell_problems(res.html.read_text(encoding="utf-8"))
    assert problems == [], f"{experiment}: {problems[:10]}"
