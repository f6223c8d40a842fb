"""Selective Modality Shifting (paper 003): samples, swaps, prompts, parsing, metrics, runner, attention.

Hand-computed values are written out next to each assertion.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from radaudit.audits.modality_shift.conditions import (  # noqa: E402
    CONDITIONS,
    PROMPTS,
    attention_table,
    build_items,
    build_samples,
    draw_partners,
    format_prompt,
    get_template,
    parse_answer,
    run_conditions,
    split_by_patient,
    truncate_note,
)
from radaudit.audits.modality_shift.tables import (  # noqa: E402
    answer_rates,
    classification_metrics,
    ece_table,
    expected_calibration_error,
    metrics_table,
    negative_flip_rate,
    nfr_table,
    reliability_bins,
    reliability_table,
)
from radaudit.errors import ParamsError  # noqa: E402

COVID = PROMPTS["covid_cxr"]


def _frame(n: int = 12) -> pd.DataFrame:
    """n rows, patient p<i//2> (two images per patient), labels alternating per patient."""
    return pd.DataFrame({
        "study_id": [f"s{i:02d}" for i in range(n)], "patient_id": [f"p{i // 2}" for i in range(n)],
        "image_path": [f"/img/{i}.png" for i in range(n)], "clinical_notes": [f"notes of case {i}" for i in range(n)],
        "label": [(i // 2) % 2 for i in range(n)], "sex": ["F", "M"] * (n // 2), "age": [40.0 + i for i in range(n)],
        "view": ["PA"] * n})


# --- samples ---------------------------------------------------------------------------------------

def test_build_samples_schema_drops_counted_and_patient_split():
    df = _frame(20)
    df.loc[0, "clinical_notes"] = None
    df.loc[1, "label"] = pd.NA
    s = build_samples(df.astype({"label": "Int64"}), test_size=0.3, seed=0)
    assert list(s.columns[:6]) == ["sample_id", "patient_id", "image_path", "text", "label", "split"]
    assert s.attrs["dropped"] == {"no_label": 1, "no_text": 1, "no_image": 0}
    assert len(s) == 18
    by_patient = s.groupby("patient_id")["split"].nunique()
    assert (by_patient == 1).all()  # no patient in both splits
    assert set(s["split"]) == {"train", "test"}
    assert set(s.loc[s.split == "test", "label"]) == {0, 1}  # stratified by patient label
    again = build_samples(df.sample(frac=1, random_state=3).astype({"label": "Int64"}), seed=0)
    pd.testing.assert_frame_equal(s, again)  # row order does not matter


def test_truncate_note_keeps_the_first_words_and_their_whitespace():
    text = "Fever and cough.\nCT: ground-glass   opacities, COVID-19 confirmed."
    # words: Fever, and, cough., CT:, ground-glass, opacities,, COVID-19, confirmed. (8)
    assert truncate_note(text, 8) == text  # exactly 8 words: unchanged
    assert truncate_note(text, 4) == "Fever and cough.\nCT: [...]"  # the line break is kept
    assert truncate_note(text, 6) == "Fever and cough.\nCT: ground-glass   opacities, [...]"
    assert truncate_note("one", 1) == "one"
    with pytest.raises(ParamsError, match="max_words must be >= 1"):
        truncate_note(text, 0)


def test_build_samples_cuts_notes_and_counts_the_cut_ones():
    df = _frame(6)
    df.loc[0, "clinical_notes"] = "a b c d e f"
    df.loc[3, "clinical_notes"] = "  x y z  "
    s = build_samples(df, seed=0, max_note_words=3).set_index("sample_id")
    assert s.loc["s00", "text"] == "a b c [...]"
    assert s.loc["s03", "text"] == "x y z"  # three words after stripping: not cut
    assert s.loc["s01", "text"] == "notes of case [...]"  # "notes of case 1": four words
    assert s.attrs["notes_truncated"] == 5  # every row but s03
    whole = build_samples(df, seed=0)
    assert whole.attrs["notes_truncated"] == 0 and whole.set_index("sample_id").loc["s00", "text"] == "a b c d e f"
    assert (whole["split"].to_numpy() == s["split"].to_numpy()).all()  # cutting texts never moves the split
    for bad in (0, 2.5, True):
        with pytest.raises(ParamsError, match="max_note_words must be a positive integer"):
            build_samples(df, seed=0, max_note_words=bad)


def test_split_by_patient_is_seeded():
    df = _frame(40).rename(columns={"clinical_notes": "text"})
    a = split_by_patient(df, seed=1)
    assert a.equals(split_by_patient(df, seed=1))
    assert not a.equals(split_by_patient(df, seed=2))
    with pytest.raises(ParamsError):
        split_by_patient(df, test_size=1.5)


# --- swaps ----------------------------------------------------------------------------------------

@pytest.fixture()
def samples():
    return build_samples(_frame(12), seed=0)


def test_partners_always_opposite_label_other_patient(samples):
    for seed in range(5):
        p = draw_partners(samples, seed=seed)
        lab = samples.set_index("sample_id")["label"]
        pat = samples.set_index("sample_id")["patient_id"]
        for col in ("image_partner", "text_partner"):
            assert (lab[p[col]].to_numpy() != lab[p["sample_id"]].to_numpy()).all()
            assert (pat[p[col]].to_numpy() != pat[p["sample_id"]].to_numpy()).all()


def test_partners_reproducible_by_seed_and_order_free(samples):
    a = draw_partners(samples, seed=7)
    pd.testing.assert_frame_equal(a, draw_partners(samples.sample(frac=1, random_state=1), seed=7))
    others = [draw_partners(samples, seed=s) for s in range(8, 12)]
    assert any(not a.equals(o) for o in others)
    same = draw_partners(samples, seed=7, same_partner=True)
    assert (same["image_partner"] == same["text_partner"]).all()


def test_partners_need_both_labels(samples):
    with pytest.raises(ParamsError, match="opposite label"):
        draw_partners(samples[samples.label == 1], seed=0)


# --- prompts and items ------------------------------------------------------------------------------

def test_items_conditions_ground_truth_and_prompts(samples):
    partners = draw_partners(samples, seed=0)
    items = build_items(samples, partners, "covid_cxr")
    assert len(items) == len(samples) * len(CONDITIONS)
    assert list(items.groupby("sample_id")["condition"].apply(list).iloc[0]) == list(CONDITIONS)
    truth = samples.set_index("sample_id")["label"]
    assert (items["label"].to_numpy() == truth[items["sample_id"]].to_numpy()).all()  # gt stays the original's
    sid = samples["sample_id"].iloc[0]
    row = items[items.sample_id == sid].set_index("condition")
    part = partners.set_index("sample_id").loc[sid]
    own_text = samples.set_index("sample_id").at[sid, "text"]
    partner_text = samples.set_index("sample_id").at[part.text_partner, "text"]
    assert row.at["no_shift", "image_source"] == sid and own_text in row.at["no_shift", "prompt"]
    assert row.at["image_shift", "image_source"] == part.image_partner
    assert own_text in row.at["image_shift", "prompt"]
    assert partner_text in row.at["text_shift", "prompt"] and own_text not in row.at["text_shift", "prompt"]
    assert row.at["text_shift", "image_path"] == row.at["no_shift", "image_path"]
    assert row.at["only_text", "image_path"] is None and own_text in row.at["only_text", "prompt"]
    assert row.at["only_image", "text_source"] is None
    assert row.at["only_image", "prompt"].startswith("Based on the image only")
    assert "Clinical notes" not in row.at["only_image", "prompt"]
    assert "Based on the provided patient information, does" in row.at["only_text", "prompt"]


def test_format_prompt_header_missing_values_and_unmatched():
    text = format_prompt(COVID, {"age": 65.0, "sex": None, "view": "PA", "text": "fever"}, "no_shift", unmatched=True)
    assert text.startswith("Patient Information:\nAge: 65\nSex: unknown\nView position: PA\nClinical notes: fever")
    assert text.endswith(COVID["unmatched_suffix"])
    assert COVID["unmatched_suffix"] not in format_prompt(COVID, {"text": "x"}, "only_text", unmatched=True)
    assert format_prompt(COVID, None, "only_image", model_type="mllama").endswith("No additional commentary.")
    with pytest.raises(ParamsError):
        get_template("no_such_dataset")
    with pytest.raises(ParamsError):
        format_prompt(COVID, {"text": "x"}, "swap_everything")


# --- parsing --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Yes, the patient presents abnormal findings", "yes"),
    ("yes", "yes"),
    ("**Yes.**", "yes"),
    ("Answer: No.", "no"),
    ("No evidence of pneumonia.", "no"),
    ("no", "no"),
    ("", "unknown"),
    ("   \n", "unknown"),
    (None, "unknown"),
    ("Not sure", "unknown"),
    ("Maybe", "unknown"),
    ("The patient does not have COVID-19.", "no"),       # dataset no-pattern, checked first
    ("The findings are consistent with COVID-19 pneumonia.", "yes"),  # dataset yes-pattern
    ("unmatched", "unknown"),                              # not an allowed answer without the variant
])
def test_parse_answer_rules(text, expected):
    assert parse_answer(text, no_patterns=COVID["no_patterns"], yes_patterns=COVID["yes_patterns"]) == expected


def test_parse_answer_unmatched_variant():
    assert parse_answer("Unmatched.", unmatched=True) == "unmatched"
    assert parse_answer("Yes", unmatched=True) == "yes"


def test_answer_rates_counts_unknown():
    res = pd.DataFrame({"model": "m", "condition": ["a"] * 4 + ["b"] * 2,
                        "answer": ["yes", "no", "unknown", "unmatched", "yes", "yes"]})
    r = answer_rates(res).set_index("condition")
    assert r.at["a", "n_unknown"] == 1 and r.at["a", "n_unmatched"] == 1
    assert r.at["a", "unknown_rate"] == 0.5 and r.at["b", "unknown_rate"] == 0.0
    assert r.at["b", "unknown_high"] > 0  # Wilson interval is not degenerate at 0/2
    assert r.at["b", "yes_rate"] == 1.0
    # Wilson by hand for 2 of 2, z = 1.96: (1 + z²/4 - z·sqrt(z²/16)) / (1 + z²/2) = 1.0 / 2.9208 = 0.3424
    assert r.at["b", "yes_low"] == pytest.approx(0.34237, abs=1e-4) and r.at["b", "yes_high"] == pytest.approx(1.0)
    from radaudit.tables import missing_intervals

    assert missing_intervals(r.reset_index()) == []  # every rate carries its interval


# --- metrics --------------------------------------------------------------------------------------

def test_classification_metrics_hand_computed():
    y = [1, 1, 1, 0, 0, 0]
    pred = [1, 0, np.nan, 0, 1, np.nan]  # TP=1 FN=1 U+=1 TN=1 FP=1 U-=1
    m = classification_metrics(y, pred)
    assert m["accuracy"] == pytest.approx(2 / 6)
    assert m["precision"] == pytest.approx(1 / 2)
    assert m["recall"] == pytest.approx(1 / 3)
    assert m["specificity"] == pytest.approx(1 / 3)
    assert m["f1"] == pytest.approx(2 * (0.5 * 1 / 3) / (0.5 + 1 / 3))  # = 0.4
    d = classification_metrics(y, pred, unknown="drop")
    assert (d["accuracy"], d["recall"], d["specificity"], d["f1"]) == pytest.approx((0.5, 0.5, 0.5, 0.5))
    assert classification_metrics(y, ["yes", "no", "unknown", "no", "yes", "unmatched"]) == m
    never_yes = classification_metrics([1, 0], [0, 0])
    assert math.isnan(never_yes["precision"]) and never_yes["f1"] == 0.0
    with pytest.raises(ParamsError):
        classification_metrics(y, pred, unknown="ignore")


def test_nfr_both_forms_hand_computed():
    y = [1, 1, 0, 0, 1]
    base = [1, 1, 0, 1, np.nan]   # base-correct: 0, 1, 2 (the unknown is not correct)
    shift = [0, 1, 1, 1, 1]       # flips among them: 0 and 2
    r = negative_flip_rate(y, base, shift)
    assert r["nfr"] == pytest.approx(2 / 5)             # paper: over all N
    assert r["nfr_base_correct"] == pytest.approx(2 / 3)  # over base-correct only
    assert (r["n"], r["n_base_correct"], r["n_flipped"]) == (5, 3, 2)
    r2 = negative_flip_rate([1, 0], [1, 0], [np.nan, 0])  # an unknown shifted answer is a flip
    assert r2["nfr"] == 0.5 and r2["nfr_base_correct"] == 0.5


def test_ece_hand_computed():
    p = [0.05, 0.15, 0.95, 0.85, 0.55]
    y = [0, 1, 1, 1, 0]
    # bins 0, 1, 9, 8, 5 with one item each: gaps .05, .85, .05, .15, .55 -> mean 0.33
    assert expected_calibration_error(p, y) == pytest.approx(0.33)
    bins = reliability_bins(p, y)
    assert bins["n"].tolist() == [1, 1, 0, 0, 0, 1, 0, 0, 1, 1]
    assert reliability_bins([0.1, 0.0, 1.0], [0, 0, 1])["n"].tolist()[:2] == [2, 0]  # right-closed, 0 in bin 0
    # two items in one bin: conf .75, acc .5 -> .25
    assert expected_calibration_error([0.72, 0.78], [1, 0]) == pytest.approx(0.25)
    # top-label: conf .9 (hit) and .8 (miss) -> (0.1 + 0.8) / 2
    assert expected_calibration_error([0.9, 0.2], [1, 1], kind="confidence") == pytest.approx(0.45)
    with pytest.raises(ParamsError):
        expected_calibration_error([np.nan], [1])


def _results(seed: int = 0, n: int = 40) -> pd.DataFrame:
    """A synthetic results table: two models, every condition; model B follows the text."""
    rng = np.random.default_rng(seed)
    rows = []
    labels = rng.integers(0, 2, n)
    for model, text_bias in (("A", 0.1), ("B", 0.9)):
        for cond in CONDITIONS:
            for i, y in enumerate(labels):
                flip = cond == "text_shift" and rng.random() < text_bias
                pred = (1 - y) if flip else (y if rng.random() < 0.85 else 1 - y)
                answer = "unknown" if rng.random() < 0.05 else ("yes" if pred else "no")
                p = float(np.clip(0.8 * pred + 0.1 + rng.normal(0, 0.05), 0, 1))
                rows.append({"model": model, "sample_id": f"s{i}", "patient_id": f"p{i // 2}", "condition": cond,
                             "label": int(y), "answer": answer,
                             "prediction": {"yes": 1.0, "no": 0.0}.get(answer, np.nan), "p_yes": p})
    return pd.DataFrame(rows)


@pytest.mark.long
def test_metrics_table_with_cis_is_seeded():
    res = _results()
    t = metrics_table(res, n_bootstrap=200, seed=1)
    assert len(t) == 2 * len(CONDITIONS) * 5
    assert {"model", "condition", "metric", "estimate", "low", "high", "n", "n_unknown"} <= set(t.columns)
    ok = t.dropna(subset=["low"])
    assert (ok["low"] <= ok["estimate"] + 1e-12).all() and (ok["estimate"] <= ok["high"] + 1e-12).all()
    g = res[(res.model == "A") & (res.condition == "no_shift")]
    acc = t[(t.model == "A") & (t.condition == "no_shift") & (t.metric == "accuracy")]["estimate"].item()
    assert acc == pytest.approx(classification_metrics(g["label"], g["prediction"])["accuracy"])
    pd.testing.assert_frame_equal(t, metrics_table(res, n_bootstrap=200, seed=1))
    clustered = metrics_table(res, n_bootstrap=200, seed=1, units="patient_id")
    assert not clustered["low"].equals(t["low"])


@pytest.mark.long
def test_nfr_and_ece_tables():
    res = _results()
    t = nfr_table(res, n_bootstrap=200)
    assert set(t["condition"]) == set(CONDITIONS) - {"no_shift"}
    assert set(t["measure"]) == {"nfr", "nfr_base_correct"}
    b = t[(t.model == "B") & (t.condition == "text_shift")].set_index("measure")
    a = t[(t.model == "A") & (t.condition == "text_shift")].set_index("measure")
    assert b.at["nfr", "estimate"] > a.at["nfr", "estimate"]  # the text-following model flips more
    est = t["estimate"]
    assert (est[t.measure == "nfr"].to_numpy() <= est[t.measure == "nfr_base_correct"].to_numpy()).all()
    g = res[res.model == "B"].pivot(index="sample_id", columns="condition", values="prediction")
    y = res[(res.model == "B") & (res.condition == "no_shift")].set_index("sample_id")["label"].reindex(g.index)
    assert b.at["nfr", "estimate"] == pytest.approx(negative_flip_rate(y, g["no_shift"], g["text_shift"])["nfr"])
    with pytest.raises(ParamsError):
        nfr_table(res, base="nothing")
    e = ece_table(res, n_bootstrap=100)
    assert len(e) == 2 * len(CONDITIONS) and (e["estimate"] >= 0).all()
    rel = reliability_table(res)
    assert len(rel) == 2 * len(CONDITIONS) * 10 and (rel.groupby(["model", "condition"])["n"].sum() == 40).all()


@pytest.mark.long
def test_figures_from_results_table(tmp_path):
    import matplotlib.pyplot as plt

    from radaudit.audits.modality_shift.plots import (plot_attention_shares, plot_ece_bars, plot_metric_bars,
                                                      plot_nfr_heatmap, plot_reliability, plot_text_attention)
    from radaudit.plots import save_figure

    res = _results(n=16)
    for fig in (plot_metric_bars(res, n_bootstrap=50), plot_nfr_heatmap(res, n_bootstrap=50),
                plot_ece_bars(res, n_bootstrap=50), plot_reliability(res)):
        assert fig.axes
        plt.close(fig)
    shares = pd.DataFrame({"model": "m", "sample_id": "s0", "condition": ["no_shift"] * 2 + ["text_shift"] * 2,
                           "step": [0, 1, 0, 1], "token": ["Yes", ".", "No", "."], "image_share": [.2, .3, .1, .2],
                           "text_share": [.8, .7, .9, .8]})
    tokens = pd.DataFrame({"model": "m", "sample_id": "s0", "condition": "no_shift", "step": 0,
                           "position": range(5), "token": ["<s>", "<image>", "Clinical", " notes", ":"],
                           "modality": ["text", "image", "text", "text", "text"],
                           "attention": [0.0, 0.3, 0.4, 0.2, 0.1]})
    fig = plot_attention_shares(shares)
    paths = save_figure(fig, tmp_path, "fig4_shares", close=True)
    assert paths["png"].stat().st_size > 0
    plt.close(plot_text_attention(tokens))


# --- runner and attention on a tiny random VLM ----------------------------------------------------

@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    from tiny_vlms import build_llava

    from radaudit.models.vlm import load_vlm

    folder = build_llava(tmp_path_factory.mktemp("tiny_llava"))
    return load_vlm(str(folder), device="cpu")


@pytest.fixture(scope="module")
def tiny_items(tmp_path_factory):
    from PIL import Image

    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("sms_images")
    paths = []
    for i in range(4):
        path = folder / f"x{i}.png"
        Image.fromarray((rng.random((32, 32, 3)) * 255).astype("uint8")).save(path)
        paths.append(str(path))
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(4)], "patient_id": [f"p{i}" for i in range(4)],
                          "image_path": paths, "clinical_notes": ["fever cough", "no pneumothorax", "lungs clear",
                                                                  "patchy opacity"],
                          "label": [1, 0, 1, 0], "sex": ["F", "M", "F", "M"], "age": [50, 60, 70, 80], "view": "PA"})
    samples = build_samples(frame, seed=0)
    return build_items(samples, draw_partners(samples, seed=0), "covid_cxr")


def test_run_conditions_on_tiny_vlm(tiny_llava, tiny_items, tmp_path):
    processor, model = tiny_llava
    res = run_conditions(processor, model, tiny_items, model_name="tiny", max_new_tokens=4, batch_size=4,
                         cache=tmp_path / "cache")
    assert len(res) == len(tiny_items) == 4 * len(CONDITIONS)
    assert res[["sample_id", "condition"]].equals(tiny_items[["sample_id", "condition"]].reset_index(drop=True))
    assert set(res["answer"]) <= {"yes", "no", "unmatched", "unknown"}
    for col in ("logit_Yes", "logit_No", "logit_yes", "logit_no", "p_yes", "p_no", "generated", "prediction"):
        assert col in res.columns
    assert res["p_yes"].between(0, 1).all() and np.allclose(res["p_yes"] + res["p_no"], 1)
    assert (res["label"].to_numpy() == tiny_items["label"].to_numpy()).all()
    assert not res["cached"].any()
    again = run_conditions(processor, model, tiny_items, model_name="tiny", max_new_tokens=4, batch_size=2,
                           cache=tmp_path / "cache")
    assert again["cached"].all()
    pd.testing.assert_frame_equal(res.drop(columns="cached"), again.drop(columns="cached"))
    # the whole metric chain runs on a real results table
    assert len(metrics_table(res, n_bootstrap=20)) == 5 * len(CONDITIONS)
    assert len(answer_rates(res)) == len(CONDITIONS)


def test_attention_table_on_tiny_vlm(tiny_llava, tiny_items):
    processor, model = tiny_llava
    sid = tiny_items["sample_id"].iloc[0]
    shares, tokens = attention_table(processor, model, tiny_items, sample_ids=[sid],
                                     conditions=["no_shift", "only_text"], max_new_tokens=3)
    assert set(shares["condition"]) == {"no_shift", "only_text"}
    assert np.allclose(shares["image_share"] + shares["text_share"], 1)
    assert (shares.loc[shares.condition == "only_text", "image_share"] == 0).all()
    assert (shares.loc[shares.condition == "no_shift", "n_image_tokens"] > 0).all()
    assert {"model", "sample_id", "condition", "step", "position", "modality", "attention"} <= set(tokens.columns)
    step0 = tokens[(tokens.condition == "no_shift") & (tokens.step == 0)]
    assert step0["attention"].sum() == pytest.approx(1.0)
    with pytest.raises(ParamsError):
        attention_table(processor, model, tiny_items, sample_ids=["nope"])
