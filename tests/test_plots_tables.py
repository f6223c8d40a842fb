"""radaudit.tables and radaudit.plots: exact strings, file contents, byte-identical repeats, bar/CI alignment."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from PIL import Image  # noqa: E402

from radaudit.plots import (  # noqa: E402
    CI_LABEL,
    SEX_PALETTE,
    bar_with_ci,
    distribution_by_group,
    save_figure,
    set_theme,
)
from radaudit.tables import ci_column, format_ci, format_number, save_table  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_figures")  # tests/conftest.py: every figure closed after each test


# ------------------------------------------------------------------------------------ format_ci


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((0.781, 0.756, 0.8), {}, "0.78 [0.76, 0.80]"),
        ((0.781, 0.756, 0.8), {"digits": 3}, "0.781 [0.756, 0.800]"),
        ((12.0, 10.5, 13.25), {"digits": 0}, "12 [10, 13]"),  # 10.5 is a binary tie: half to even
        # 0.785 is stored as 0.78500000000000003…, so it rounds up; 0.125 is exact: half to even
        ((0.785, 0.125, 0.375), {}, "0.79 [0.12, 0.38]"),
        ((-0.12, -0.2, -0.051), {}, "-0.12 [-0.20, -0.05]"),
        ((-0.001, -0.004, 0.3), {}, "0.00 [0.00, 0.30]"),  # no "-0.00"
        ((-0.0, -0.0, 0.0), {}, "0.00 [0.00, 0.00]"),
        ((float("nan"), 0.1, 0.2), {}, "n/a"),
        ((None, None, None), {}, "n/a"),
        ((0.5, float("nan"), 0.6), {}, "0.50 [n/a]"),
        ((np.float32(0.25), np.float64(0.2), 1), {}, "0.25 [0.20, 1.00]"),
    ],
)
def test_format_ci_exact_strings(args, kwargs, expected):
    assert format_ci(*args, **kwargs) == expected


def test_format_number_validates_digits():
    assert format_number(pd.NA) == "n/a"
    with pytest.raises(ValueError, match="digits"):
        format_number(1.0, digits=-1)


def test_ci_column_keeps_the_index():
    df = pd.DataFrame({"estimate": [0.5, np.nan], "low": [0.4, 0.1], "high": [0.61, 0.2]}, index=["a", "b"])
    s = ci_column(df, digits=1)
    assert s.to_dict() == {"a": "0.5 [0.4, 0.6]", "b": "n/a"}
    assert s.name == "estimate"
    with pytest.raises(KeyError, match="lo"):
        ci_column(df, low="lo")


# ----------------------------------------------------------------------------------- save_table


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "metric": ["AUC_macro", "recall %", "A − B"],
            "estimate": [0.78125, 1 / 3, np.nan],
            "low": [0.7, -0.00001, 0.1],
            "n": [120, 80, 40],
        }
    )


def test_save_table_writes_three_files_with_the_expected_content(tmp_path):
    df = _frame()
    paths = save_table(df, tmp_path / "tables", "t1", caption="Results & 95% CI")
    assert set(paths) == {"csv", "md", "tex"}
    assert [p.name for p in paths.values()] == ["t1.csv", "t1.md", "t1.tex"]

    back = pd.read_csv(paths["csv"])
    pd.testing.assert_frame_equal(back, df)  # full precision: the same numbers back
    assert b"\r\n" not in paths["csv"].read_bytes()

    md = paths["md"].read_text(encoding="utf-8")
    assert md.splitlines() == [
        "Table: Results & 95% CI",
        "",
        "| metric    |   estimate |    low |   n |",
        "|-----------|------------|--------|-----|",
        "| AUC_macro |     0.7812 | 0.7000 | 120 |",
        "| recall %  |     0.3333 | 0.0000 |  80 |",
        "| A − B     |        n/a | 0.1000 |  40 |",
    ]

    tex = paths["tex"].read_text(encoding="utf-8")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\begin{tabular}{lrrr}" in tex
    assert "\\caption{Results \\& 95\\% CI}" in tex
    assert "recall \\% & 0.3333 & 0.0000 & 80 \\\\" in tex
    assert "AUC\\_macro & 0.7812" in tex
    assert "A $-$ B & n/a" in tex
    assert "recall %" not in tex


# Random frames for the hand-written Markdown and LaTeX writers: names and cells mixing LaTeX specials, "|",
# accents, a combining accent, wide CJK characters and spaces; empty frames; floats over 8 orders of magnitude.
_ALPHABET = list("abc XYZ_|&%{}~^\\0123456789.-αβ·–≥中文é") + ["a\u0301"]


def _random_frames(seed: int, n: int):
    rng = np.random.default_rng(seed)

    def text() -> str:
        return "".join(rng.choice(_ALPHABET, rng.integers(0, 12)))

    for _ in range(n):
        cols: dict = {}
        nrow = int(rng.integers(0, 8))
        for j in range(int(rng.integers(0, 5))):
            name = (text() or "c") + str(j)
            kind = rng.integers(0, 3)
            cols[name] = (rng.random(nrow) * 10.0 ** rng.integers(-3, 5) if kind == 0 else
                          rng.integers(-100, 10000, nrow) if kind == 1 else [text() for _ in range(nrow)])
        yield pd.DataFrame(cols) if cols else pd.DataFrame(index=range(nrow))


def test_markdown_writer_equals_tabulate_and_latex_writer_equals_styler():
    """save_table writes Markdown and LaTeX itself (tabulate and Styler took seconds on long tables): on 150 random
    frames both equal, byte for byte, what tabulate's github format and Styler.to_latex write."""
    from radaudit.tables import _display_frame, _latex_escape, _tabulate_markdown, latex_tabular, markdown_table

    for df in _random_frames(0, 150):
        shown, numeric = _display_frame(df, False, 4)
        assert markdown_table(shown, numeric) == _tabulate_markdown(shown, numeric), df
        escaped = shown.map(_latex_escape)
        escaped.columns = [_latex_escape(c) for c in shown.columns]
        for caption in (None, "Words per category: 50% & more_than {x}"):
            cap = _latex_escape(caption) if caption else None
            styler = escaped.style.hide(axis="index").to_latex(
                column_format="".join("r" if n else "l" for n in numeric), hrules=True, caption=cap,
                position="htbp" if caption else None)
            assert latex_tabular(shown, numeric, cap) == styler, df


def test_markdown_writer_equals_tabulate_on_cells_with_spaces_and_line_breaks():
    """Decoded tokens (" the", "\\n") and free text put whitespace around cells and line breaks in them: stripped as
    tabulate strips them, line breaks written as the two characters \\n (raw, they would end the Markdown table)."""
    from radaudit.tables import _display_frame, _tabulate_markdown, markdown_table

    global _ALPHABET
    saved, _ALPHABET = _ALPHABET, _ALPHABET + [" ", "  ", "\t", "\n", "\r\n"]
    try:
        for df in _random_frames(1, 400):
            shown, numeric = _display_frame(df, False, 4)
            assert markdown_table(shown, numeric) == _tabulate_markdown(shown, numeric), df
    finally:
        _ALPHABET = saved
    shown, numeric = _display_frame(pd.DataFrame({"token": [" the", "\n", "a\nb"], "share": [0.5, 0.25, 0.25]}),
                                    False, 4)
    assert markdown_table(shown, numeric).splitlines()[2:] == ["| the     |  0.5000 |", "| \\n      |  0.2500 |",
                                                                "| a\\nb    |  0.2500 |"]


def test_markdown_writer_takes_its_own_path_on_plain_cells(monkeypatch):
    """The comparison above means something only if the hand-written path runs: on plain cells, cells with
    surrounding spaces and line breaks, tabulate is never called."""
    import radaudit.tables as tables

    df = pd.DataFrame({"finding | side": ["effusion", "中文 é", "a|b", " the", "\n"], "share": [0.5, np.nan, 1e-6, 1, 2],
                       "n": [1, 22, 333, 4, 5]})
    shown, numeric = tables._display_frame(df, False, 4)
    expected = tables._tabulate_markdown(shown, numeric)
    monkeypatch.setattr(tables, "_tabulate_markdown", lambda *a: pytest.fail("tabulate was called"))
    assert tables.markdown_table(shown, numeric) == expected
    # widths: a column is as wide as its widest cell and at least its header + 2 ("finding \\| side": 15 + 2)
    assert expected.splitlines()[2] == "| effusion          |  0.5000 |   1 |"


def test_save_table_is_byte_identical_across_calls(tmp_path):
    a = save_table(_frame(), tmp_path / "a", "t")
    b = save_table(_frame(), tmp_path / "b", "t")
    for ext in a:
        assert a[ext].read_bytes() == b[ext].read_bytes()
    again = save_table(_frame(), tmp_path / "a", "t")
    assert {k: v.read_bytes() for k, v in again.items()} == {k: v.read_bytes() for k, v in b.items()}


def test_save_table_with_index(tmp_path):
    df = _frame().set_index("metric")
    paths = save_table(df, tmp_path, "ix", index=True, float_digits=2)
    pd.testing.assert_frame_equal(pd.read_csv(paths["csv"], index_col="metric"), df)
    assert paths["md"].read_text(encoding="utf-8").splitlines()[2] == "| AUC_macro |       0.78 |  0.70 | 120 |"
    assert "\\begin{tabular}{lrrr}" in paths["tex"].read_text(encoding="utf-8")


@pytest.mark.parametrize("bad", ["a/b", "..", "", "a\\b", "../t"])
def test_save_table_rejects_path_like_names(tmp_path, bad):
    with pytest.raises(ValueError, match="path separators"):
        save_table(_frame(), tmp_path, bad)


# ----------------------------------------------------------------------------------- figures


def _figure():
    set_theme()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 3, 2], label="line")
    ax.set_title("Δ AUC, 95% CI")
    ax.legend()
    return fig


def test_save_figure_png_is_300_dpi_and_pdf_is_a_pdf(tmp_path):
    paths = save_figure(_figure(), tmp_path / "figs", "f")
    assert [p.name for p in paths.values()] == ["f.png", "f.pdf"]
    with Image.open(paths["png"]) as img:
        assert img.info["dpi"] == pytest.approx((300, 300), abs=0.01)
        assert "Software" not in img.info
    pdf = paths["pdf"].read_bytes()
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf


def test_save_figure_dpi_scales_the_png_and_pdf_false_writes_no_pdf(tmp_path):
    """The smoke presets' settings (figure_dpi 72, figure_pdf false): a PNG a quarter as wide as at 300 dpi, no PDF."""
    full = save_figure(_figure(), tmp_path / "full", "f")
    low = save_figure(_figure(), tmp_path / "low", "f", dpi=72, pdf=False)
    assert list(low) == ["png"] and not (tmp_path / "low" / "f.pdf").exists()
    with Image.open(full["png"]) as a, Image.open(low["png"]) as b:
        assert b.info["dpi"] == pytest.approx((72, 72), abs=0.01)
        assert b.size[0] == pytest.approx(a.size[0] * 72 / 300, abs=2)  # tight bbox: same inches, 72/300 the pixels


def test_run_figure_follows_the_params(tmp_path):
    from radaudit.config import BaseParams
    from radaudit.session import Run

    run = Run(experiment="x", params=BaseParams(figure_dpi=100, figure_pdf=False), dir=tmp_path)
    paths = run.figure(_figure(), "f")
    assert list(paths) == ["png"] and run.figures == ["f"]
    with Image.open(paths["png"]) as img:
        assert img.info["dpi"] == pytest.approx((100, 100), abs=0.01)


def test_save_figure_is_byte_identical_across_saves(tmp_path):
    fig = _figure()
    a = save_figure(fig, tmp_path / "a", "f")
    b = save_figure(fig, tmp_path / "b", "f")
    for ext in ("png", "pdf"):
        assert a[ext].read_bytes() == b[ext].read_bytes()
    # a fresh, identical figure too
    c = save_figure(_figure(), tmp_path / "c", "f")
    for ext in ("png", "pdf"):
        assert a[ext].read_bytes() == c[ext].read_bytes()


def test_save_figure_closes_only_when_asked(tmp_path):
    fig = _figure()
    save_figure(fig, tmp_path, "f")
    assert plt.fignum_exists(fig.number)
    save_figure(fig, tmp_path, "f", close=True)
    assert not plt.fignum_exists(fig.number)
    with pytest.raises(ValueError):
        save_figure(_figure(), tmp_path, "sub/f")


# ---------------------------------------------------------------------------------- bar_with_ci


def _ci_frame() -> pd.DataFrame:
    # category "c" has only one hue level: its bar still sits at the M offset of a dodged plot
    df = pd.DataFrame(
        {
            "metric": ["a", "a", "b", "b", "c"],
            "sex": ["F", "M", "F", "M", "M"],
            "estimate": [0.50, 0.60, 0.70, 0.70, 0.90],  # equal estimates in "b": no matching by value
            "low": [0.40, 0.55, 0.60, 0.65, 0.85],
            "high": [0.55, 0.70, 0.75, 0.80, 0.93],
        }
    )
    return df


def _bars(ax, orient):
    out = []
    for c in ax.containers:
        if isinstance(c, BarContainer):
            for p in c.patches:
                if orient == "h":
                    out.append((p.get_y() + p.get_height() / 2, p.get_width()))
                else:
                    out.append((p.get_x() + p.get_width() / 2, p.get_height()))
    return sorted(out)


def _ci_segments(ax, orient):
    (container,) = [c for c in ax.containers if c.get_label() == CI_LABEL]
    segs = container.lines[2][0].get_segments()
    if orient == "h":  # [[low, y], [high, y]]
        return sorted((s[0][1], s[0][0], s[1][0]) for s in segs)
    return sorted((s[0][0], s[0][1], s[1][1]) for s in segs)


@pytest.mark.parametrize("orient", ["h", "v"])
def test_bar_with_ci_error_bars_sit_on_the_bars(orient):
    df = _ci_frame()
    x, y = ("estimate", "metric") if orient == "h" else ("metric", "estimate")
    fig, ax = plt.subplots()
    out = bar_with_ci(df, x, y, "low", "high", hue="sex", orient=orient, ax=ax, hue_order=["F", "M"])
    assert out is ax
    bars = _bars(ax, orient)
    segs = _ci_segments(ax, orient)
    assert len(bars) == len(segs) == 5
    # dodged: F left of / above M within each category, each 0.4 wide around ±0.2
    expected = {  # (category position + dodge offset) -> (low, high)
        -0.2: (0.40, 0.55),
        0.2: (0.55, 0.70),
        0.8: (0.60, 0.75),
        1.2: (0.65, 0.80),
        2.2: (0.85, 0.93),
    }
    for (centre, _), (seg_pos, lo, hi) in zip(bars, segs, strict=True):
        assert seg_pos == pytest.approx(centre, abs=1e-9)
        assert (lo, hi) == pytest.approx(expected[round(centre, 6)], abs=1e-9)
    # the bar colours are the sex palette's
    colours = {matplotlib.colors.to_hex(c.patches[0].get_facecolor()) for c in ax.containers if isinstance(c, BarContainer)}
    assert len(colours) == 2


def test_bar_with_ci_reversed_hue_order_swaps_the_intervals():
    df = _ci_frame()
    fig, ax = plt.subplots()
    bar_with_ci(df, "estimate", "metric", "low", "high", hue="sex", hue_order=["M", "F"], ax=ax)
    segs = {round(p, 6): (lo, hi) for p, lo, hi in _ci_segments(ax, "h")}
    assert segs[-0.2] == pytest.approx((0.55, 0.70))  # M first now
    assert segs[0.2] == pytest.approx((0.40, 0.55))


def test_bar_with_ci_without_hue_and_with_an_interval_missing_the_estimate():
    df = pd.DataFrame({"m": ["x", "y"], "e": [0.3, 0.5], "lo": [0.35, 0.4], "hi": [0.6, 0.7]})
    fig, ax = plt.subplots()
    bar_with_ci(df, "m", "e", "lo", "hi", orient="v", ax=ax)
    np.testing.assert_allclose(_ci_segments(ax, "v"), [(0.0, 0.35, 0.6), (1.0, 0.4, 0.7)], atol=1e-12)


def test_bar_with_ci_rejects_duplicates_and_warns_on_missing_estimates():
    df = _ci_frame()
    with pytest.raises(ValueError, match="more than one row"):
        bar_with_ci(pd.concat([df, df]), "estimate", "metric", "low", "high", hue="sex")
    df.loc[0, "estimate"] = math.nan
    with pytest.warns(UserWarning, match="1 row"):
        ax = bar_with_ci(df, "estimate", "metric", "low", "high", hue="sex")
    assert len(_ci_segments(ax, "h")) == 4


# ------------------------------------------------------------------------- distribution_by_group


@pytest.mark.parametrize("kind", ["hist", "ecdf", "box"])
def test_distribution_by_group_kinds(kind, tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "len": rng.lognormal(3, 0.5, 300),
            "sex": pd.array(rng.choice(["F", "M", None], 300), dtype="string"),
        }
    )
    fig, ax = plt.subplots()
    out = distribution_by_group(df, "len", "sex", kind=kind, ax=ax, log=True)
    assert out is ax
    assert ax.get_xscale() == "log"
    if kind == "box":
        assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["F", "M", "unknown"]
    else:
        legend = ax.get_legend()
        assert sorted(t.get_text() for t in legend.get_texts()) == ["F", "M", "unknown"]
    save_figure(fig, tmp_path, kind)


def test_distribution_by_group_errors():
    df = pd.DataFrame({"v": [0.0, 1.0], "g": ["F", "M"]})
    with pytest.raises(ValueError, match="positive"):
        distribution_by_group(df, "v", "g", log=True)
    with pytest.raises(ValueError, match="allowed: hist, ecdf, box"):
        distribution_by_group(df, "v", "g", kind="violin")


def test_sex_palette_covers_the_schema_codes():
    assert set(SEX_PALETTE) == {"F", "M", "O", "unknown"}
    assert len(set(SEX_PALETTE.values())) == 4
