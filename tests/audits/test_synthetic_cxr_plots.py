"""Figures of the synthetic-CXR audit: layout, names, the δ line, NaN annotations, and input errors."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

from radaudit.audits.synthetic_cxr import plots as P  # noqa: E402
from radaudit.audits.synthetic_cxr.aurocs import auroc, roc_curve_points  # noqa: E402
from radaudit.errors import DataFormatError, ParamsError  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _imgs(n: int, seed: int = 0, size: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(n, size, size)).astype(np.float32)


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


# --- sample grid -----------------------------------------------------------------------------------

def test_sample_grid_rows_real_first_captions_and_short_rows():
    images = {"diffusion": _imgs(5, 1), "degrader": _imgs(2, 2), "real": _imgs(6, 3)}
    prompts = {"real": [f"real prompt {i}" for i in range(6)], "diffusion": [f"synth {i}" for i in range(5)]}
    fig = P.plot_sample_grid(images, prompts, n=4)
    assert len(fig.axes) == 3 * 4
    assert [fig.axes[i * 4].get_ylabel() for i in range(3)] == ["real", "diffusion", "degrader"]
    assert fig.axes[1].get_xlabel() == "real prompt 1"
    shown = [len([c for c in ax.get_children() if isinstance(c, AxesImage)]) for ax in fig.axes]
    assert shown == [1] * 8 + [1, 1, 0, 0]  # the degrader has only 2 images
    np.testing.assert_allclose(fig.axes[4].images[0].get_array(), images["diffusion"][0])


def test_sample_grid_bad_inputs():
    with pytest.raises(ParamsError, match="empty"):
        P.plot_sample_grid({})
    with pytest.raises(DataFormatError, match="3 entries but there are 4 images"):
        P.plot_sample_grid({"real": _imgs(4)}, {"real": ["a", "b", "c"]})
    with pytest.raises(DataFormatError, match=r"\[N, H, W\]"):
        P.plot_sample_grid({"real": np.zeros((8, 8))})
    with pytest.raises(ParamsError, match="positive integer"):
        P.plot_sample_grid({"real": _imgs(2)}, n=0)


# --- nearest pairs ---------------------------------------------------------------------------------

def test_nearest_pairs_picks_highest_reid_and_the_right_training_image():
    synth, train = _imgs(5, 1), _imgs(4, 2)
    pairs = pd.DataFrame({"train_index": [3, 0, 1, 2, 0], "reid": [0.2, 0.95, 0.5, 0.99, 0.1],
                          "pixel_distance": [0.3, 0.01, 0.2, 0.05, 0.4], "latent_distance": np.nan})
    fig = P.plot_nearest_pairs(synth, train, pairs, n=2, generator="memoriser")
    assert len(fig.axes) == 4  # 2 rows (synthetic, training) x 2 pairs
    top = fig.axes[:2]
    assert top[0].get_title().startswith("re-ID 0.99") and top[1].get_title().startswith("re-ID 0.95")
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), synth[3])
    np.testing.assert_allclose(fig.axes[2].images[0].get_array(), train[2])  # row 3's training image
    assert "memoriser" in fig._suptitle.get_text() and "highest re-ID" in fig._suptitle.get_text()


def test_nearest_pairs_falls_back_to_pixel_distance_and_checks_indices():
    synth, train = _imgs(3, 1), _imgs(2, 2)
    pairs = pd.DataFrame({"train_index": [0, 1, 0], "reid": np.nan, "pixel_distance": [0.3, 0.01, 0.2]})
    fig = P.plot_nearest_pairs(synth, train, pairs, n=1)
    assert "pix 0.01" in fig.axes[0].get_title() and "no re-ID scores" in fig._suptitle.get_text()
    np.testing.assert_allclose(fig.axes[1].images[0].get_array(), train[1])
    with pytest.raises(DataFormatError, match=r"train_index values must lie in \[0, 1\]"):
        P.plot_nearest_pairs(synth, train, pairs.assign(train_index=[0, 5, 0]), n=1, by="pixel_distance")
    with pytest.raises(DataFormatError, match="4 rows but there are 3"):
        P.plot_nearest_pairs(synth, train, pd.concat([pairs, pairs.head(1)]))


# --- privacy ---------------------------------------------------------------------------------------

def _per_prompt() -> pd.DataFrame:
    return pd.DataFrame({"generator": ["memoriser"] * 4 + ["diffusion"] * 3,
                         "max_reid": [0.99, 0.9, 0.86, 0.5, 0.2, 0.9, 0.1],
                         "min_pixel_distance": [0.01, 0.02, 0.01, 0.03, 0.2, 0.1, 0.3],
                         "min_latent_distance": [0.1, 0.1, 0.2, 0.1, 0.5, 0.6, 0.7]})


def test_privacy_distributions_delta_line_and_counts():
    fig = P.plot_privacy_distributions(_per_prompt())
    assert len(fig.axes) == 3
    reid_ax = fig.axes[0]
    flat = [ln for ln in reid_ax.lines if len(set(ln.get_ydata())) == 1 and ln.get_ydata()[0] == pytest.approx(0.85)]
    assert len(flat) == 1
    texts = [t.get_text() for t in reid_ax.texts]
    assert "3/4 > δ" in texts and "1/3 > δ" in texts and "δ = 0.85" in texts
    assert [t.get_text() for t in reid_ax.get_xticklabels()] == ["memoriser", "diffusion"]
    assert "re-ID" in reid_ax.get_ylabel() and "pixel" in fig.axes[1].get_ylabel()


def test_privacy_distributions_other_delta_no_latent_and_errors():
    pp = _per_prompt().drop(columns="min_latent_distance").rename(columns={"min_pixel_distance": "min_pixel"})
    fig = P.plot_privacy_distributions(pp, delta=0.95, order=["diffusion", "memoriser"])
    assert len(fig.axes) == 2
    assert "1/4 > δ" in [t.get_text() for t in fig.axes[0].texts]
    with pytest.raises(DataFormatError, match="min_pixel_distance"):
        P.plot_privacy_distributions(pp.drop(columns="min_pixel"))
    with pytest.raises(ParamsError, match="delta"):
        P.plot_privacy_distributions(pp, delta=1.5)
    with pytest.raises(DataFormatError, match="empty"):
        P.plot_privacy_distributions(pp.iloc[:0])


# --- fidelity --------------------------------------------------------------------------------------

def test_fidelity_bars_one_panel_per_metric_with_directions():
    rows = [{"generator": g, "metric": m, "value": v, "ci_low": v - 1, "ci_high": v + 1}
            for g in ["real", "diffusion", "degrader"] for m, v in [("FID (Inception)", 10.0), ("KID (CXR)", 0.1),
                                                                     ("precision", 0.5), ("coverage", 0.4),
                                                                     ("density", 0.9)]]
    fig = P.plot_fidelity_bars(pd.DataFrame(rows))
    assert len(fig.axes) == 5
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "FID (Inception) (↓ better)" and titles[2] == "precision (↑ better)"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["real", "diffusion", "degrader"]
    with pytest.raises(DataFormatError, match="more than one row"):
        P.plot_fidelity_bars(pd.DataFrame(rows + rows[:1]))
    with pytest.raises(DataFormatError, match="no column"):
        P.plot_fidelity_bars(pd.DataFrame(rows).drop(columns="value"))


def test_per_label_heatmap_annotates_values_and_nan_cells():
    wide = pd.DataFrame([[44.6, np.nan, 120.0], [80.25, 90.0, np.nan]], index=["sana", "degrader"],
                        columns=["No Finding", "ARDS", "COVID-19"])
    fig = P.plot_per_label_heatmap(wide)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n<min") == 2
    assert {"44.6", "120.0", "80.2", "90.0"} <= set(texts)
    assert "FID" in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["No Finding", "ARDS", "COVID-19"]
    long = wide.reset_index(names="generator").melt(id_vars="generator", var_name="label", value_name="fid")
    fig2 = P.plot_per_label_heatmap(long)
    assert [t.get_text() for t in fig2.axes[0].texts].count("n<min") == 2
    with pytest.raises(DataFormatError, match="empty"):
        P.plot_per_label_heatmap(pd.DataFrame())


# --- utility ---------------------------------------------------------------------------------------

def _long() -> pd.DataFrame:
    return pd.DataFrame({
        "source": ["real"] * 3 + ["sana"] * 3 + ["degrader"] * 3,
        "label": ["A", "B", "macro"] * 3,
        "auroc": [0.8, np.nan, 0.8, 0.81, np.nan, 0.81, 0.55, np.nan, 0.55],
        "ci_low": [0.7, np.nan, 0.7, 0.72, np.nan, 0.72, 0.45, np.nan, 0.45],
        "ci_high": [0.9, np.nan, 0.9, 0.9, np.nan, 0.9, 0.65, np.nan, 0.65],
        "significant": pd.array([pd.NA, pd.NA, pd.NA, False, pd.NA, False, True, pd.NA, True], dtype="boolean"),
    })


def test_plot_utility_sources_baseline_chance_and_marks():
    fig = P.plot_utility(_long())
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["real", "sana", "degrader"] and "chance" in legend
    assert any(ln.get_ydata()[0] == 0.5 and len(set(ln.get_ydata())) == 1 for ln in ax.lines)
    assert [t.get_text() for t in ax.texts].count("*") == 2  # degrader A and macro
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "B\n(single class)", "macro"]
    with pytest.raises(DataFormatError, match="auroc"):
        P.plot_utility(_long().drop(columns="auroc"))


def test_plot_roc_curves_one_panel_per_label_with_auroc_in_legend():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (40, 2))
    scores = {"real": rng.uniform(size=(40, 2)) + y, "sana": rng.uniform(size=(40, 2)) + 0.3 * y}
    roc = pd.concat([roc_curve_points(y, s, ["A", "B"]).assign(source=k) for k, s in scores.items()])
    fig = P.plot_roc_curves(roc)
    assert len(fig.axes) == 2 and [ax.get_title() for ax in fig.axes] == ["A", "B"]
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend == [f"real ({auroc(y[:, 1], scores['real'][:, 1]):.2f})",
                      f"sana ({auroc(y[:, 1], scores['sana'][:, 1]):.2f})"]
    with pytest.raises(ParamsError, match="no ROC points"):
        P.plot_roc_curves(roc, labels=["A", "C"])


# --- rank scatter ----------------------------------------------------------------------------------

def test_rank_scatter_title_has_spearman_rho():
    fid = pd.Series({"a": 1, "b": 2, "c": 3, "d": 4})
    util = pd.Series({"b": 1, "a": 2, "c": 3, "d": 4})  # aligned by name, not position
    fig = P.plot_rank_scatter(fid, util)
    assert "Spearman ρ = 0.80 (n = 4)" in fig.axes[0].get_title()  # 1 − 6·2 / (4·15)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["a", "b", "c", "d"]
    # colours follow `order` (the other figures' order), not the order of the rank Series
    from matplotlib.colors import to_hex

    fig = P.plot_rank_scatter(fid, util, order=["d", "c", "b", "a"])
    got = {t.get_text(): to_hex(c.get_facecolor()[0]) for t, c in zip(fig.axes[0].texts, fig.axes[0].collections)}
    assert got == {g: to_hex(c) for g, c in P.source_colors(["d", "c", "b", "a"], None).items()}


def test_rank_scatter_undefined_and_bad_inputs():
    fig = P.plot_rank_scatter([1, 2], [2, 1])
    assert "undefined (n = 2 < 3)" in fig.axes[0].get_title()
    with pytest.raises(DataFormatError, match="3 entries but utility_rank 2"):
        P.plot_rank_scatter([1, 2, 3], [1, 2])
    with pytest.raises(DataFormatError, match="share no generator"):
        P.plot_rank_scatter(pd.Series({"a": 1}), pd.Series({"b": 1}))
