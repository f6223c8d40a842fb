"""The image pathway's positive control (issue 21): the marker burned into the image, the marked
conditions, their pairing in the tables and the findings that read them — hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.audits.modality_shift.conditions import (
    MARKED_CONDITIONS,
    base_condition,
    build_items,
    format_prompt,
    get_template,
)
from radaudit.audits.modality_shift.findings import headline_findings
from radaudit.audits.modality_shift.marker import (
    MARKED_IMAGE_COLUMN,
    add_marked_images,
    mark_image,
    marker_box,
    marker_patches,
)
from radaudit.audits.modality_shift.tables import changed_table, nfr_table
from radaudit.errors import DataFormatError, ParamsError
from radaudit.findings import settle

COVID = get_template("covid_cxr")


def test_marker_box_hand_computed():
    # 100 x 200 (portrait): central square side 100 at y0 = 50; size round(22) = 22, margin round(4) = 4
    assert marker_box(100, 200) == (4, 54, 26, 76)
    # landscape 300 x 100: square at x0 = 100
    assert marker_box(300, 100) == (104, 4, 126, 26)
    with pytest.raises(DataFormatError, match="too small"):
        marker_box(5, 100)


def test_mark_image_codes_the_label_by_pattern_and_touches_nothing_else():
    img = Image.fromarray(np.full((200, 100), 128, dtype=np.uint8), mode="L")
    pos, neg = (np.asarray(mark_image(img, y).convert("L")) for y in (1, 0))
    left, top, right, bottom = marker_box(100, 200)
    cy, cx = (top + bottom) // 2, (left + right) // 2
    assert pos[top, left] == 255 and pos[cy, cx] == 0  # COVID-19: white square, black centre
    assert neg[top, left] == 0 and neg[cy, cx] == 255  # other: black square, white centre
    mask = np.zeros_like(pos, dtype=bool)
    mask[top:bottom, left:right] = True
    assert (pos[~mask] == 128).all() and (neg[~mask] == 128).all()  # nothing else touched
    # centre half as wide: 11 px of 22, offset 5 -> columns 9..19 black in the positive's middle row
    assert (pos[cy, left + 5:left + 16] == 0).all() and pos[cy, left + 4] == 255 and pos[cy, left + 16] == 255
    with pytest.raises(ParamsError, match="binary label"):
        mark_image(img, 2)


def test_marker_survives_the_centre_crop_in_the_corner_patches():
    # the demo processor: shortest edge 64, centre crop 64, patches of 8 -> an 8 x 8 grid; 22% of 64 = 14 px
    assert {(0, 0), (0, 1), (1, 0), (1, 1)} <= set(marker_patches(marker_box(100, 200), 100, 200, 8))
    assert all(r <= 2 and c <= 2 for r, c in marker_patches(marker_box(640, 480), 640, 480, 8))


def _samples(tmp_path) -> pd.DataFrame:
    paths = []
    for i, shade in enumerate((60, 120, 180, 240)):
        p = tmp_path / f"img{i}.png"
        Image.fromarray(np.full((40, 48), shade, dtype=np.uint8), mode="L").save(p)
        paths.append(str(p))
    return pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "patient_id": ["p1", "p2", "p3", "p4"], "image_path": paths,
                         "text": ["COVID-19.", "Pneumonia.", "SARS-CoV-2.", "Legionella."], "label": [1, 0, 1, 0],
                         "split": "test", "sex": "F", "age": 50, "view": "PA"})


def test_add_marked_images_writes_each_copy_once_and_names_it_by_content(tmp_path):
    samples = _samples(tmp_path)
    out = add_marked_images(samples, tmp_path / "marked")
    assert MARKED_IMAGE_COLUMN not in samples.columns  # the input is not modified
    marked = out[MARKED_IMAGE_COLUMN].tolist()
    assert len(set(marked)) == 4 and all(p.endswith(".png") for p in marked)
    first = Image.open(marked[0]).convert("L")
    from radaudit.models.vlm import load_image

    for src, label, copy in zip(samples["image_path"], samples["label"], marked):  # fast zlib level, lossless
        assert np.array_equal(np.asarray(Image.open(copy)), np.asarray(mark_image(load_image(src), int(label))))
    left, top, _, _ = marker_box(48, 40)
    assert np.asarray(first)[top, left] == 255 and first.size == (48, 40)  # sample a: COVID-19, white frame
    stamp = [Path_mtime(p) for p in marked]
    again = add_marked_images(samples, tmp_path / "marked")
    assert again[MARKED_IMAGE_COLUMN].tolist() == marked and [Path_mtime(p) for p in marked] == stamp
    flipped = add_marked_images(samples.assign(label=[0, 1, 0, 1]), tmp_path / "marked")
    assert not set(flipped[MARKED_IMAGE_COLUMN]) & set(marked)  # another label is another copy
    with pytest.raises(ParamsError, match="image_path"):
        add_marked_images(samples.drop(columns="image_path"), tmp_path / "marked")


def Path_mtime(p: str) -> int:
    import os

    return os.stat(p).st_mtime_ns


def test_marked_items_show_the_marked_copy_with_the_unmarked_prompt(tmp_path):
    samples = add_marked_images(_samples(tmp_path), tmp_path / "marked")
    partners = pd.DataFrame({"sample_id": list("abcd"), "image_partner": list("badc"), "text_partner": list("dcba"),
                             "same_label_image_partner": list("cdab"), "same_label_text_partner": list("cdab")})
    items = build_items(samples, partners, COVID, conditions=("no_shift", *MARKED_CONDITIONS)).set_index(
        ["sample_id", "condition"])
    marked = samples.set_index("sample_id")[MARKED_IMAGE_COLUMN]
    assert items.at[("a", "marked_no_shift"), "image_path"] == marked["a"]
    assert items.at[("a", "marked_image_shift"), "image_path"] == marked["b"]  # the partner's copy: opposite marker
    assert items.at[("a", "marked_image_shift"), "image_source"] == "b"
    assert items.at[("a", "marked_only_image"), "image_path"] == marked["a"]
    # the negative control: another patient's marked copy with the same marker (same label)
    assert items.at[("a", "marked_same_label_image_shift"), "image_path"] == marked["c"]
    assert items.at[("a", "marked_same_label_image_shift"), "prompt"] == items.at[("a", "no_shift"), "prompt"]
    assert items.at[("a", "marked_no_shift"), "prompt"] == items.at[("a", "no_shift"), "prompt"]
    assert items.at[("a", "marked_only_image"), "prompt"] == format_prompt(COVID, None, "only_image")
    assert "marked" not in items.at[("a", "no_shift"), "prompt"]  # the copy's path is not a metadata field
    assert [base_condition(c) for c in MARKED_CONDITIONS] == ["no_shift", "image_shift", "only_image",
                                                               "same_label_image_shift"]
    with pytest.raises(ParamsError, match="add_marked_images"):
        build_items(_samples(tmp_path), partners, COVID, conditions=("marked_only_image",))


def test_tables_pair_each_marked_shift_with_the_marked_base():
    # marked base answers differ from the natural base: a shift must be compared with its own base
    res = pd.DataFrame({"model": "m", "sample_id": list("ab") * 4, "label": [1, 0] * 4,
                        "condition": ["no_shift"] * 2 + ["image_shift"] * 2 + ["marked_no_shift"] * 2
                        + ["marked_image_shift"] * 2,
                        "answer": ["yes", "yes", "yes", "yes", "yes", "no", "no", "yes"],
                        "prediction": [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]})
    ch = changed_table(res).set_index("condition")
    assert list(ch.index) == ["image_shift", "marked_image_shift"]
    assert ch.at["image_shift", "estimate"] == 0.0  # yes,yes -> yes,yes
    assert ch.at["marked_image_shift", "estimate"] == 1.0  # yes,no -> no,yes (vs no_shift it would be 0.5)
    nfr = nfr_table(res, n_bootstrap=20).query("measure == 'nfr'").set_index("condition")
    assert nfr.at["marked_image_shift", "estimate"] == 1.0  # both base-correct answers flipped
    assert nfr_table(res, base="no_shift", n_bootstrap=20).query("measure == 'nfr'").set_index(
        "condition").at["marked_image_shift", "estimate"] == 0.5  # an explicit base is kept
    with pytest.raises(ParamsError, match="marked_no_shift"):
        changed_table(res[res["condition"] != "marked_no_shift"])


def _tables(marked_auroc=0.95, natural_auroc=0.6, marked_changed=0.4, natural_changed=0.03, marked_same=0.02,
            natural_same=0.01):
    auroc_t = pd.DataFrame([{"model": "m", "condition": c, "estimate": e, "low": e - 0.08, "high": e + 0.08, "n": 100,
                             "n_positive": 70}
                            for c, e in (("marked_only_image", marked_auroc), ("only_image", natural_auroc),
                                         ("no_input", 0.5))])
    changed_t = pd.DataFrame([{"model": "m", "condition": c, "estimate": e, "low": max(0.0, e - 0.02),
                               "high": e + 0.05, "n_changed": round(e * 100), "n": 100}
                              for c, e in (("marked_image_shift", marked_changed), ("image_shift", natural_changed),
                                           ("marked_same_label_image_shift", marked_same),
                                           ("same_label_image_shift", natural_same), ("text_shift", 0.5),
                                           ("same_label_text_shift", 0.05))])
    nfr_t = pd.DataFrame([{"model": "m", "condition": c, "measure": "nfr", "estimate": e, "low": lo, "high": hi,
                           "n": 100, "n_flipped": round(e * 100), "n_base_correct": 80}
                          for c, (e, lo, hi) in (("text_shift", (0.4, 0.3, 0.5)), ("image_shift", (0.02, 0.0, 0.05)))])
    return auroc_t, changed_t, nfr_t


PROBES = {"probe": {"estimate": 0.7, "low": 0.6, "high": 0.8, "description": "pixels"},
          "text_probe": {"estimate": 0.72, "low": 0.62, "high": 0.82, "description": "words"}}


def test_findings_read_the_marked_positive_control_and_report_the_natural_images_beside():
    found = {f.id: f for f in settle(headline_findings(*_tables(), model="m", **PROBES))}
    assert list(found) == ["only_image_auroc", "image_shift_changed", "marker_saliency_share",
                           "same_label_image_swap_changed", "same_label_text_swap_changed",
                           "natural_only_image_auroc", "natural_image_shift_changed",
                           "natural_same_label_image_swap_changed", "image_probe_auroc", "text_probe_auroc",
                           "notes_naming_diagnosis_share", "majority_accuracy", "no_input_auroc", "text_shift_nfr",
                           "image_shift_nfr"]
    assert found["marker_saliency_share"].verdict == "n/a"  # no gradient maps given
    assert found["only_image_auroc"].value == 0.95 and "burned" in found["only_image_auroc"].label
    assert found["only_image_auroc"].verdict == "shown"
    assert found["image_shift_changed"].value == 0.4 and found["image_shift_changed"].verdict == "shown"
    # the marked same-label swap is read against the marked opposite-label swap: 0.5 x 0.38
    assert found["same_label_image_swap_changed"].bar.value == pytest.approx(0.19)
    assert found["same_label_image_swap_changed"].verdict == "shown"
    assert found["natural_only_image_auroc"].value == 0.6
    assert found["natural_only_image_auroc"].verdict == "partly"  # CI [0.52, 0.68] above chance, below 0.75
    # 3 of 100: CI above 0 (partly), but its negative control cannot pass on so small an effect (bar 0.5 x its lower
    # bound): without its control not even partial evidence
    assert found["natural_image_shift_changed"].verdict == "not shown"
    assert "natural_same_label_image_swap_changed (not shown)" in found["natural_image_shift_changed"].note
    assert found["natural_image_shift_changed"].controls == ("natural_same_label_image_swap_changed",)
    # the model reads marked images but follows the text on natural ones: the paper's ordering, not by construction
    assert found["text_shift_nfr"].verdict == "shown"


def test_findings_when_the_marked_control_fails_too():
    found = {f.id: f for f in settle(headline_findings(
        *_tables(marked_auroc=0.55, marked_changed=0.0, natural_changed=0.0), model="m", **PROBES))}
    assert found["only_image_auroc"].verdict == "not shown"
    assert found["image_shift_changed"].verdict == "not shown"
    assert found["natural_image_shift_changed"].verdict == "not shown"
    assert found["text_shift_nfr"].verdict == "not shown" and "by construction" in found["text_shift_nfr"].note
    assert "only_image_auroc (not shown)" in found["text_shift_nfr"].note


def _maps(tmp_path, shares):
    """A 4 x 4 map per (sample, condition): ``shares[cond]`` on the top-left patch, the rest spread evenly."""
    img = tmp_path / "m.png"
    Image.fromarray(np.zeros((64, 64), dtype=np.uint8), mode="L").save(img)
    rows = []
    for cond, per_sample in shares.items():
        for i, top_left in enumerate(per_sample):
            for r in range(4):
                for c in range(4):
                    w = top_left if (r, c) == (0, 0) else (1 - top_left) / 15
                    rows.append({"model": "m", "sample_id": f"s{i}", "condition": cond, "row": r, "col": c,
                                 "weight": w, "grid_rows": 4, "grid_cols": 4, "image_path": str(img)})
    return pd.DataFrame(rows)


def test_marker_share_sums_the_marker_patches_and_the_finding_reads_it(tmp_path):
    from radaudit.audits.modality_shift.findings import marker_saliency
    from radaudit.audits.modality_shift.marker import marker_share

    # 64 px: box (3, 3, 17, 17) -> on a 4 x 4 grid of 16 px cells it overlaps (0,0), (0,1), (1,0), (1,1)
    assert set(marker_patches(marker_box(64, 64), 64, 64, 4)) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    maps = _maps(tmp_path, {"marked_only_image": [0.7, 0.5, 0.6], "only_image": [1 / 16, 1 / 16, 1 / 16]})
    t = marker_share(maps).set_index(["condition", "sample_id"])
    # top-left 0.7 + 3 other marker patches x 0.3/15 = 0.76
    assert t.at[("marked_only_image", "s0"), "marker_share"] == pytest.approx(0.76)
    assert t.at[("only_image", "s0"), "marker_share"] == pytest.approx(0.25)  # a flat map: the corner's area
    assert t.at[("only_image", "s0"), "uniform_share"] == 0.25 and not t.at[("only_image", "s0"), "marked"]
    f = marker_saliency(marker_share(maps), "m", n_bootstrap=200)
    assert f.value == pytest.approx((0.76 + 0.6 + 0.68) / 3) and f.verdict == "shown"  # CI above 2 x 0.25
    assert "the same corner on the natural images holds 0.250" in f.note
    assert f.bar.to_dict() == {"op": ">", "value": 0.5}
    blind = marker_share(_maps(tmp_path, {"marked_only_image": [0.07, 0.06, 0.08]}))
    assert marker_saliency(blind, "m", n_bootstrap=200).verdict == "not shown"


def test_pool_to_grid_hand_computed():
    from radaudit.audits.modality_shift.heatmap import pool_to_grid

    sal = np.zeros((4, 4))
    sal[0, 0], sal[3, 3], sal[2, 0] = 2.0, 1.0, 1.0
    assert pool_to_grid(sal, (2, 2)).tolist() == [[0.5, 0.0], [0.25, 0.25]]
    assert pool_to_grid(np.zeros((4, 4)), (2, 2)).sum() == 0
    with pytest.raises(ParamsError, match="does not divide"):
        pool_to_grid(np.zeros((5, 4)), (2, 2))


def test_gradient_map_on_a_tiny_llava_and_a_clear_error_for_flattened_patches(tmp_path):
    from tiny_vlms import build_llava, build_qwen2vl

    from radaudit.audits.modality_shift.heatmap import answer_gradient
    from radaudit.models.vlm import load_vlm

    img = tmp_path / "x.png"
    Image.fromarray((np.arange(40 * 40).reshape(40, 40) % 255).astype(np.uint8), mode="L").save(img)
    processor, model = load_vlm(build_llava(tmp_path / "llava"), device="cpu")
    sal, grid = answer_gradient(processor, model, "Is there an effusion?", str(img))
    assert sal.shape == (28, 28) and grid == (2, 2) and (sal >= 0).all() and sal.sum() > 0
    processor, model = load_vlm(build_qwen2vl(tmp_path / "qwen"), device="cpu")
    with pytest.raises(ParamsError, match="gradient maps need"):
        answer_gradient(processor, model, "Is there an effusion?", str(img))
