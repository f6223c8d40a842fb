"""modality_shift.params and .study: params validation, attention-sample choice and the computed summary."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from radaudit.audits.modality_shift.params import Params
from radaudit.audits.modality_shift.study import pick_attention_samples
from radaudit.audits.modality_shift.tables import summary_lines
from radaudit.errors import ParamsError


def test_params_reject_bad_conditions_models_and_demo_on_paper_data():
    with pytest.raises(ValidationError, match="no_shift"):
        Params(conditions=["image_shift"])
    with pytest.raises(ValidationError, match="unknown condition"):
        Params(conditions=["no_shift", "swap"])
    with pytest.raises(ValidationError, match="unique names"):
        Params(models=[{"name": "a", "model": "x"}, {"name": "a", "model": "y"}])
    with pytest.raises(ParamsError, match="demo VLM is trained on covid_cxr"):
        Params(dataset="mimic_cxr").preflight()
    with pytest.raises(ParamsError, match="lacks"):
        Params(prompt={"question": ""}).preflight()


def _results(rows):
    return pd.DataFrame(rows, columns=["model", "sample_id", "condition", "label", "correct"])


def test_pick_attention_samples_prefers_text_flipped_positives():
    rows = []
    for sid, label, base, text in (("a", 0, 1, 0), ("b", 1, 1, 1), ("c", 1, 1, 0), ("d", 1, 0, 0)):
        rows += [("m", sid, "no_shift", label, base), ("m", sid, "text_shift", label, text)]
    assert pick_attention_samples(_results(rows), 3) == ["c", "b", "a"]


def _ci(est):
    return {"estimate": est, "low": est - 0.05, "high": est + 0.05}


def test_summary_lines_state_the_numbers_and_the_verdict():
    metrics = pd.DataFrame([{"model": "m", "metric": "accuracy", "condition": c, **_ci(v)}
                            for c, v in (("no_shift", 0.8), ("image_shift", 0.78), ("text_shift", 0.4))])
    nfr = pd.DataFrame([{"model": "m", "condition": c, "measure": meas, **_ci(v), "n_flipped": k, "n_base_correct": 80}
                        for c, v, k in (("image_shift", 0.03, 3), ("text_shift", 0.42, 42))
                        for meas in ("nfr", "nfr_base_correct")])
    ece = pd.DataFrame([{"model": "m", "condition": "no_shift", **_ci(0.1)}])
    rates = pd.DataFrame([{"model": "m", "condition": c, "n": 100, "n_unknown": u, "n_unmatched": 0,
                           "unknown_rate": u / 100} for c, u in (("no_shift", 0), ("text_shift", 7))])
    text = "\n".join(summary_lines(metrics, nfr, ece, rates))
    assert "No Shift 0.800 [0.750, 0.850]" in text and "Text Shift 0.400" in text
    assert "42 of 80 correct answers flipped" in text
    assert "the text shift flips more answers than the image shift" in text
    assert "7 of 200; highest under Text Shift (7.0%)" in text
    nfr.loc[nfr["condition"] == "text_shift", ["estimate", "low", "high"]] = [0.05, 0.0, 0.1]
    assert "intervals overlap" in "\n".join(summary_lines(metrics, nfr, ece, rates))


def test_demo_cuts_the_notes_and_the_paper_preset_keeps_them_whole():
    from pathlib import Path

    from radaudit.config import load_preset

    params_dir = Path(__file__).resolve().parents[2] / "params"
    assert load_preset(params_dir, "modality_shift", "demo")["max_note_words"] == 80
    assert load_preset(params_dir, "modality_shift", "smoke")["max_note_words"] == 80  # smoke extends demo
    # paper extends demo: without its own null it would inherit the demo's cut
    assert load_preset(params_dir, "modality_shift", "paper")["max_note_words"] is None
    assert Params().max_note_words is None  # the library default: whole notes
