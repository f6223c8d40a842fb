"""The answer token's attention per layer and over the image patches (issue 21): pure functions against
hand-computed values, then the same code on tiny random LLaVA and Qwen2-VL twins (image-token positions)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.modality_shift.conditions import CONDITIONS, build_items, build_samples, draw_partners
from radaudit.audits.modality_shift.heatmap import (
    answer_attention,
    attention_maps,
    gradient_maps,
    image_grid,
    layer_modality_shares,
    patch_heatmap,
)
from radaudit.audits.modality_shift.plots import model_view, plot_layer_shares, plot_patch_heatmaps
from radaudit.errors import ParamsError

# two layers, one head, six input positions; positions 1-4 are the image (a 2 x 2 grid)
ROWS = np.array([[[0.5, 0.1, 0.1, 0.1, 0.1, 0.1]],
                 [[0.2, 0.4, 0.0, 0.0, 0.0, 0.4]]])
MASK = np.array([False, True, True, True, True, False])


def test_layer_modality_shares_hand_computed():
    # layer 0: position 0 zeroed -> [0, .1, .1, .1, .1, .1] / .5 -> image .8, text .2
    # layer 1: [0, .4, 0, 0, 0, .4] / .8 -> image .5, text .5; one text token besides the zeroed position 0
    t = layer_modality_shares(ROWS, MASK)
    assert t["layer"].tolist() == [0, 1]
    assert t["image_share"].tolist() == pytest.approx([0.8, 0.5])
    assert t["text_share"].tolist() == pytest.approx([0.2, 0.5])
    assert t["image_per_token"].tolist() == pytest.approx([0.2, 0.125])
    assert t["text_per_token"].tolist() == pytest.approx([0.2, 0.5])
    assert (t["n_image_tokens"] == 4).all() and (t["n_text_tokens"] == 1).all()
    none = layer_modality_shares(ROWS, np.zeros(6, dtype=bool))
    assert (none["image_share"] == 0).all() and none["image_per_token"].isna().all()


def test_patch_heatmap_hand_computed_and_row_major():
    # layers averaged: [0, .35, .1, .1, .1, .35]; image part [.35, .1, .1, .1] / .65, laid out row-major
    heat = patch_heatmap(ROWS, MASK, (2, 2))
    assert heat.shape == (2, 2)
    assert heat == pytest.approx(np.array([[0.35, 0.1], [0.1, 0.1]]) / 0.65)
    assert heat.sum() == pytest.approx(1.0)
    assert patch_heatmap(ROWS, MASK, (2, 2), layers=[1]) == pytest.approx(np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert patch_heatmap(ROWS, MASK, (1, 4)).tolist()[0] == pytest.approx([0.35 / 0.65] + [0.1 / 0.65] * 3)
    with pytest.raises(ParamsError):
        patch_heatmap(ROWS, MASK, (3, 3))
    with pytest.raises(ParamsError):
        patch_heatmap(ROWS, MASK, (2, 2), layers=[])
    dead = np.array([[[1.0, 0, 0, 0, 0, 0]]])
    assert (patch_heatmap(dead, MASK, (2, 2)) == 0).all()  # no attention on the image: zeros, not NaN


def test_image_grid():
    assert image_grid(64) == (8, 8) and image_grid(576) == (24, 24)
    cfg = SimpleNamespace(vision_config=SimpleNamespace(spatial_merge_size=2))
    assert image_grid(6, cfg, [[1, 4, 6]]) == (2, 3)
    with pytest.raises(ParamsError):
        image_grid(5, cfg, [[1, 4, 6]])  # the count does not match the grid
    with pytest.raises(ParamsError):
        image_grid(10)  # not square, no grid given
    with pytest.raises(ParamsError):
        image_grid(0)
    with pytest.raises(ParamsError):
        image_grid(12, cfg, [[1, 4, 6], [1, 4, 6]])  # two images


# --- on tiny random VLMs -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_vlms import BUILDERS

    from radaudit.models.vlm import load_vlm

    return {name: load_vlm(str(build(tmp_path_factory.mktemp(name))), device="cpu") for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    from PIL import Image

    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("heat_images")
    paths = []
    for i in range(4):
        path = folder / f"x{i}.png"
        Image.fromarray((rng.random((56, 84)) * 255).astype("uint8")).save(path)  # grayscale, not square
        paths.append(str(path))
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(4)], "patient_id": [f"p{i}" for i in range(4)],
                          "image_path": paths, "clinical_notes": ["fever", "no effusion", "lungs clear", "opacity"],
                          "label": [1, 0, 1, 0], "sex": "F", "age": 50, "view": "PA"})
    samples = build_samples(frame, seed=0)
    return build_items(samples, draw_partners(samples, seed=0), "covid_cxr")


@pytest.mark.parametrize(("name", "grid"), [("llava", (2, 2)), ("qwen2vl", (1, 2))])
def test_answer_attention_uses_the_models_image_positions(tiny, items, name, grid):
    processor, model = tiny[name]
    item = items[items["condition"] == "no_shift"].iloc[0]
    att = answer_attention(processor, model, item["prompt"], item["image_path"])
    n_layers = model.config.text_config.num_hidden_layers
    assert att.rows.shape[0] == n_layers and att.rows.shape[2] == len(att.input_ids) == len(att.image_mask)
    assert np.allclose(att.rows.sum(axis=-1), 1.0, atol=1e-4)  # softmax rows of the last prompt position
    image_id = getattr(model.config, "image_token_id", None) or model.config.image_token_index
    assert (att.image_mask == (att.input_ids == image_id)).all()
    assert att.grid == grid and att.image_mask.sum() == grid[0] * grid[1]
    heat = patch_heatmap(att.rows, att.image_mask, att.grid)
    assert heat.shape == grid and heat.sum() == pytest.approx(1.0)
    text_only = answer_attention(processor, model, item["prompt"], None)
    assert text_only.grid is None and not text_only.image_mask.any()


def test_attention_maps_and_figures(tiny, items, tmp_path):
    processor, model = tiny["llava"]
    sids = items["sample_id"].unique()[:2].tolist()
    layers, maps = attention_maps(processor, model, items, sample_ids=sids, model_name="tiny")
    assert len(layers) == 2 * len(CONDITIONS) * model.config.text_config.num_hidden_layers
    no_image = layers[layers["condition"].isin(["only_text", "no_input"])]
    assert (no_image["image_share"] == 0).all() and np.allclose(no_image["text_share"], 1.0)
    with_image = {"no_shift", "image_shift", "text_shift", "only_image"}
    assert set(maps["condition"]) == with_image
    sums = maps.groupby(["sample_id", "condition"])["weight"].sum()
    assert len(sums) == 2 * len(with_image) and np.allclose(sums, 1.0)
    assert (maps.groupby(["sample_id", "condition"]).size() == 4).all()
    shifted = maps[maps["condition"] == "image_shift"]
    own = items.set_index(["sample_id", "condition"])
    for r in shifted.drop_duplicates(["sample_id"]).itertuples():
        assert r.image_path == own.at[(r.sample_id, "image_shift"), "image_path"]  # the partner's image
        assert r.image_source != r.sample_id
    view = model_view(maps["image_path"].iloc[0], (2, 2), processor)
    assert view.mode == "L" and view.size == (56, 56)  # the centred square crop the CLIP processor keeps
    results = items.assign(model="tiny", answer="yes")
    fig = plot_patch_heatmaps(maps, results, processor=processor, label_names=("other finding", "COVID-19"))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 2 * len(with_image)
    assert any("Image Shift" in t and "answer: yes" in t and "label: COVID-19" in t for t in titles)
    fig.savefig(tmp_path / "heat.png")
    assert (tmp_path / "heat.png").stat().st_size > 0
    assert plot_layer_shares(layers).axes
    with pytest.raises(ParamsError):
        attention_maps(processor, model, items, sample_ids=["nope"])


def test_patch_heatmap_titles_stay_clear_of_the_panels_above(monkeypatch):
    """Every panel title (four lines; the swap columns name the partner's image) sits below the images of the row
    above once drawn: the layout reserves the space instead of letting long titles run into them."""
    import matplotlib.pyplot as plt
    from PIL import Image

    import radaudit.audits.modality_shift.plots as plots

    rows = []
    for s, sid in enumerate(["a", "b"]):
        for cond in ("no_shift", "image_shift", "only_image"):
            for r in range(2):
                for c in range(2):
                    rows.append({"model": "m", "sample_id": sid, "condition": cond, "label": s, "row": r, "col": c,
                                 "grid_rows": 2, "grid_cols": 2, "weight": 0.25 + 0.1 * (r - c) * (s + 1),
                                 "image_path": None, "image_source": f"partner_of_{sid}_with_a_long_file_name.png"})
    maps = pd.DataFrame(rows)
    img = Image.fromarray((np.arange(64 * 64).reshape(64, 64) % 251).astype(np.uint8))
    monkeypatch.setattr(plots, "model_view", lambda path, grid, processor=None: img)  # no image files needed
    fig = plot_patch_heatmaps(maps)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = np.array(fig.axes).reshape(2, 3)
    for j in range(3):
        title = axes[1, j].title.get_window_extent(renderer)
        above = axes[0, j].get_window_extent(renderer)
        assert title.y1 <= above.y0 + 1, (j, title, above)  # pixels: y grows upwards
    assert all(ax.get_title().count("\n") == 3 for ax in fig.axes)
    plt.close(fig)


def test_traces_are_read_back_bit_exact_and_missed_for_another_call(tiny, items, tmp_path, monkeypatch):
    """With cache=, a rerun on the same model and items serves the attention tables without running the model,
    byte for byte; other samples, another model or an edited image are computed afresh."""
    import radaudit.audits.modality_shift.conditions as conditions_mod
    import radaudit.audits.modality_shift.heatmap as heatmap_mod
    from radaudit.audits.modality_shift.conditions import attention_table

    processor, model = tiny["llava"]
    sids = items["sample_id"].unique()[:1].tolist()
    cache = tmp_path / "cache"
    layers, maps = attention_maps(processor, model, items, sample_ids=sids, model_name="tiny", cache=cache)
    shares, tokens = attention_table(processor, model, items, sample_ids=sids, model_name="tiny", max_new_tokens=2,
                                     cache=cache)
    grads = gradient_maps(processor, model, items, sample_ids=sids, model_name="tiny", cache=cache)
    import shutil

    own = items["sample_id"].isin(sids) & items["image_path"].notna()
    copies = {p: str(tmp_path / f"copy{i}.png") for i, p in enumerate(items.loc[own, "image_path"].unique())}
    for src, dst in copies.items():
        shutil.copyfile(src, dst)
    copied = items.assign(image_path=items["image_path"].map(lambda p: copies.get(p, p)))
    attention_maps(processor, model, copied, sample_ids=sids, model_name="tiny", cache=cache)
    with open(next(iter(copies.values())), "ab") as fh:
        fh.write(b"\0")

    def no_model(*args, **kwargs):
        raise AssertionError("the model ran on a cached call")

    monkeypatch.setattr(heatmap_mod, "answer_attention", no_model)
    monkeypatch.setattr(conditions_mod, "attention_by_modality", no_model)
    monkeypatch.setattr(heatmap_mod, "answer_gradient", no_model)
    pd.testing.assert_frame_equal(gradient_maps(processor, model, items, sample_ids=sids, model_name="tiny",
                                                cache=cache), grads)
    layers2, maps2 = attention_maps(processor, model, items, sample_ids=sids, model_name="tiny", cache=cache)
    shares2, tokens2 = attention_table(processor, model, items, sample_ids=sids, model_name="tiny", max_new_tokens=2,
                                       cache=cache)
    for a, b in ((layers, layers2), (maps, maps2), (shares, shares2), (tokens, tokens2)):
        pd.testing.assert_frame_equal(a, b)
        assert a.to_csv(index=False) == b.to_csv(index=False)
    other = items["sample_id"].unique()[1:2].tolist()
    with pytest.raises(AssertionError, match="the model ran"):
        attention_maps(processor, model, items, sample_ids=other, model_name="tiny", cache=cache)
    with pytest.raises(AssertionError, match="the model ran"):
        attention_table(processor, model, items, sample_ids=sids, model_name="tiny", max_new_tokens=3, cache=cache)
    with pytest.raises(AssertionError, match="the model ran"):
        attention_maps(*tiny["qwen2vl"], items, sample_ids=sids, model_name="tiny", cache=cache)
    with pytest.raises(AssertionError, match="the model ran"):  # same path, other bytes
        attention_maps(processor, model, copied, sample_ids=sids, model_name="tiny", cache=cache)
