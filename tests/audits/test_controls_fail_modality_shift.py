"""Every control of modality_shift can fail (issue 40): for each control id, a stand-in scorer with a planted defect,
run through the real item builder, tables and findings (no model, no training), makes that control report failure,
and the findings that rest on it are lowered by :func:`radaudit.findings.settle`.

The stand-in answers each item from the labels its inputs show: a score ``w_text * t + w_image * i`` with ``t`` /
``i`` = +1 / -1 for a positive / negative text / image (0 when the input is absent), P(yes) = sigmoid(score),
"yes" when the score is positive. A defect replaces what one pathway reads: nothing (blind), or which patient's
input it is (identity) instead of its label.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import pytest

from radaudit.audits.modality_shift.conditions import ALL_CONDITIONS, MARKED_CONDITIONS, build_items, draw_partners
from radaudit.audits.modality_shift.findings import TEXT_NFR_CONTROLS, headline_findings, marker_saliency
from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN
from radaudit.audits.modality_shift.tables import auroc_table, changed_table, metrics_table, nfr_table
from radaudit.findings import settle

N = 60
PROBES = {"probe": {"estimate": 0.7, "low": 0.6, "high": 0.8, "description": "pixels"},
          "text_probe": {"estimate": 0.72, "low": 0.62, "high": 0.82, "description": "words"}}


def _samples() -> pd.DataFrame:
    ids = [f"s{i:02d}" for i in range(N)]
    return pd.DataFrame({"sample_id": ids, "patient_id": [f"p{i:02d}" for i in range(N)],
                         "image_path": [f"{s}.png" for s in ids], "text": [f"note of {s}" for s in ids],
                         "label": [1 if i < N // 2 else 0 for i in range(N)], "split": "test", "sex": "F", "age": 50,
                         "view": "PA", MARKED_IMAGE_COLUMN: [f"marked_{s}.png" for s in ids]})


def _identity(sample_id: str) -> int:
    """+1 / -1 by the parity of the bits of the sample's index: which input it is, unrelated to its label."""
    return 1 if bin(int(sample_id[1:])).count("1") % 2 else -1


Scorer = Callable[[pd.Series, dict[str, int]], float]


def _text_weight(source: str) -> float:
    """Every seventh note says little (weight 0.5, below the natural image's 1): so a text swap flips most answers
    but not all, and an image swap a few (no rate is fixed at 0 or 1 by construction)."""
    return 0.5 if int(source[1:]) % 7 == 3 else 2.0


def _good(item: pd.Series, label: dict[str, int]) -> float:
    """Leans on the text (weight 2, see :func:`_text_weight`) over the natural image (1); the marker outweighs
    the text (3). Without the text it misreads three marked images (so its AUROC is high but not a fixed 1)."""
    t = 0.0 if item["text_source"] is None else _text_weight(item["text_source"]) * (2 * label[item["text_source"]] - 1)
    if item["image_source"] is None:
        return t
    i = 2 * label[item["image_source"]] - 1
    if item["condition"] in MARKED_CONDITIONS:
        if item["text_source"] is None and int(item["image_source"][1:]) % 20 == 0:
            i = -i
        return t + 3.0 * i
    return t + 1.0 * i


def _results(scorer: Scorer) -> pd.DataFrame:
    samples = _samples()
    items = build_items(samples, draw_partners(samples, seed=0), "covid_cxr", conditions=ALL_CONDITIONS)
    label = dict(zip(samples["sample_id"], samples["label"]))
    score = items.apply(lambda it: scorer(it, label), axis=1).to_numpy(float)
    out = items[["sample_id", "condition", "label"]].assign(model="m")
    out["p_yes"] = [1.0 / (1.0 + math.exp(-s)) for s in score]
    out["answer"] = ["yes" if s > 0 else "no" for s in score]
    out["prediction"] = [1.0 if s > 0 else 0.0 for s in score]
    return out


def _findings(scorer: Scorer, **kwargs) -> dict:
    res = _results(scorer)
    found = headline_findings(auroc_table(res, n_bootstrap=200, seed=0), changed_table(res),
                              nfr_table(res, n_bootstrap=200, seed=0), model="m",
                              metrics=metrics_table(res, metrics=("accuracy",), n_bootstrap=200, seed=0),
                              **PROBES, **kwargs)
    return {f.id: f for f in settle(found)}


def test_the_good_stand_in_passes_every_control_and_shows_the_text_reliance():
    found = _findings(_good)
    for fid in TEXT_NFR_CONTROLS:
        assert found[fid].verdict == "shown", (fid, found[fid].note)
        assert found[fid].ci[0] < found[fid].ci[1]  # a control with a CI of non-zero width
    assert found["text_shift_nfr"].verdict == "shown"
    assert found["no_input_auroc"].verdict == "n/a" and found["no_input_auroc"].value == 0.5


def test_only_image_auroc_fails_when_the_image_pathway_is_silent_without_text():
    def silent(item, label):  # reads the marker beside a text, nothing when the image is alone
        return 0.0 if item["text_source"] is None else _good(item, label)

    found = _findings(silent)
    assert found["only_image_auroc"].value == 0.5 and found["only_image_auroc"].verdict == "not shown"
    assert found["image_shift_changed"].verdict == "shown"  # the defect is in the image-only pathway alone
    t = found["text_shift_nfr"]
    assert t.verdict == "not shown" and "only_image_auroc (not shown)" in t.note


def test_image_shift_changed_fails_when_the_image_never_outweighs_the_text():
    def weak_marker(item, label):  # the marker counts less than the text: an image swap never changes an answer
        t = 0 if item["text_source"] is None else 2 * label[item["text_source"]] - 1
        i = 0 if item["image_source"] is None else 2 * label[item["image_source"]] - 1
        return 2.0 * t + 1.0 * i

    found = _findings(weak_marker)
    f = found["image_shift_changed"]
    assert f.value == 0.0 and f.verdict == "not shown"
    assert found["text_shift_nfr"].verdict != "shown" and "by construction" in found["text_shift_nfr"].note


def test_same_label_image_swap_fails_when_the_model_reads_which_image_it_is():
    def image_identity(item, label):  # on the marked images it reads the patient, not the marker's label
        if item["condition"] not in MARKED_CONDITIONS:
            return _good(item, label)
        t = 0 if item["text_source"] is None else 2 * label[item["text_source"]] - 1
        return 2.0 * t + 3.0 * _identity(item["image_source"])

    found = _findings(image_identity)
    f = found["same_label_image_swap_changed"]
    assert f.verdict == "not shown" and "identity or noise" in f.note
    assert f.value > f.bar.value and f.ci[0] < f.ci[1]
    assert found["image_shift_changed"].verdict == "shown"  # an opposite-label swap changes answers too: noise
    t = found["text_shift_nfr"]
    assert t.verdict == "not shown" and "same_label_image_swap_changed (not shown)" in t.note


def test_same_label_text_swap_fails_when_the_model_reads_which_text_it_is():
    def text_identity(item, label):  # the text pathway reads the patient the note is about, not its label
        t = 0 if item["text_source"] is None else _identity(item["text_source"])
        i = 0 if item["image_source"] is None else 2 * label[item["image_source"]] - 1
        return 2.0 * t + (3.0 if item["condition"] in MARKED_CONDITIONS else 1.0) * i

    found = _findings(text_identity)
    f = found["same_label_text_swap_changed"]
    assert f.verdict == "not shown" and "identity or noise" in f.note and f.value > f.bar.value
    t = found["text_shift_nfr"]
    assert t.verdict == "not shown" and "same_label_text_swap_changed (not shown)" in t.note


def test_natural_same_label_image_swap_fails_when_natural_images_are_read_by_identity():
    def natural_identity(item, label):  # the marker is read; on natural images the model reads which X-ray it is
        if item["image_source"] is None or item["condition"] in MARKED_CONDITIONS:
            return _good(item, label)
        t = 0 if item["text_source"] is None else 2 * label[item["text_source"]] - 1
        return 1.0 * t + 3.0 * _identity(item["image_source"])

    found = _findings(natural_identity)
    f = found["natural_same_label_image_swap_changed"]
    assert f.verdict == "not shown" and "identity or noise" in f.note
    # the natural image swap changes many answers, but they follow the image's identity: not evidence of image use
    n = found["natural_image_shift_changed"]
    assert n.value > 0.1 and n.verdict == "not shown" and "natural_same_label_image_swap_changed" in n.note


def test_marker_saliency_fails_when_the_gradient_map_ignores_the_marker():
    uniform = 9 / 64
    blind = pd.DataFrame({"model": "m", "condition": "marked_only_image", "sample_id": [f"s{i}" for i in range(6)],
                          "marker_share": [0.13, 0.15, 0.14, 0.16, 0.12, 0.14], "uniform_share": uniform,
                          "n_patches": 9})
    f = marker_saliency(blind, "m", n_bootstrap=200)
    assert f.verdict == "not shown" and f.bar.value == pytest.approx(2 * uniform)
    assert "does not find the marker" in f.note
