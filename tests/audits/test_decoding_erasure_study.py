"""The decoding study: generation on the demo model and on a (tiny) VLM, skew sensitivity, Fig. 2b/2c tables."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from radaudit.audits import decoding_erasure as de  # noqa: E402
from radaudit.audits.decoding_erasure import data as ded  # noqa: E402
from radaudit.audits.decoding_erasure import study as st  # noqa: E402
from radaudit.config import validate_params  # noqa: E402
from radaudit.errors import DataFormatError, ParamsError  # noqa: E402
from radaudit.models.cache import ContentCache  # noqa: E402

# a demo model small enough to train in seconds (the real one: DEMO_CONFIG)
TINY_MODEL = {"steps": 15, "n_layer": 1, "d_model": 32, "n_head": 2, "d_ff": 64, "vocab_size": 300, "batch_size": 16,
              "max_length": 96}
FAST = dict(n_bootstrap=30, n_permutations=20, surface_metrics=["rouge1", "rougeL"],
            diversity_metrics=["template_diversity", "ttr", "one_minus_self_bleu"])


@pytest.fixture(scope="module")
def tiny_params(shared_data):
    return de.Params(data_root=str(shared_data), n_reports=6, max_new_tokens=12, strategies=["greedy", "nucleus"],
                     demo_model=TINY_MODEL, skews=[0.67, 0.33], skew_strategies=["greedy"], **FAST)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    return {"models": root / "models", "cache": root / "cache"}


@pytest.fixture(scope="module")
def demo_gens(tiny_params, dirs):
    return st.study_generations(tiny_params, cache=dirs["cache"], model_dir=dirs["models"])


def test_report_seeds_depend_on_study_only():
    a = st.report_seeds(0, ["s1", "s2", "s3"])
    assert st.report_seeds(0, ["s3", "s1"]) == [a[2], a[0]]
    assert len(set(a)) == 3
    assert st.report_seeds(1, ["s1"])[0] != a[0]


@pytest.mark.long
def test_demo_generations_shape_balance_and_seeds(demo_gens, tiny_params):
    g = demo_gens
    assert list(g.columns) == st.GENERATION_COLUMNS
    assert len(g) == 6 * 2
    assert g["strategy"].tolist() == ["greedy"] * 6 + ["nucleus"] * 6
    for _, part in g.groupby("strategy"):
        assert part["group"].tolist() == ["F", "M"] * 3  # balanced, interleaved
        assert part["reference"].str.len().min() > 0
        assert part["prompt"].str.contains("Sex: female").sum() == 3
    # the same study gets the same seed under both strategies, and it is stable_seed(seed, "report", id)
    nuc = g[g["strategy"] == "nucleus"]
    assert nuc["seed"].tolist() == st.report_seeds(tiny_params.seed, nuc["study_id"].tolist())
    assert g[g["strategy"] == "greedy"]["study_id"].tolist() == nuc["study_id"].tolist()


@pytest.mark.long
def test_demo_generations_resume_from_cache(demo_gens, tiny_params, dirs):
    cache = ContentCache(dirs["cache"])
    again = st.study_generations(tiny_params, cache=cache, model_dir=dirs["models"])
    assert cache.stats()["hits"] == 12 and cache.stats()["misses"] == 0
    pd.testing.assert_frame_equal(again, demo_gens)


@pytest.mark.long
def test_test_split_is_the_same_for_every_skew(demo_gens, tiny_params, dirs):
    other = st.study_generations(tiny_params, skew=0.67, strategies=["greedy"], cache=None, model_dir=dirs["models"])
    assert other["study_id"].tolist() == demo_gens[demo_gens["strategy"] == "greedy"]["study_id"].tolist()
    assert other["reference"].tolist() == demo_gens[demo_gens["strategy"] == "greedy"]["reference"].tolist()


def test_evaluate_strategies_and_tables(demo_gens, tiny_params):
    res = st.evaluate_strategies(demo_gens, tiny_params)
    assert [r.name for r in res] == ["greedy", "nucleus"]
    t = de.strategy_table(res)
    assert list(t.columns) == ["Ref.", "greedy", "nucleus"]
    words = de.words_table(res)
    assert words.columns[0] == "corpus" and set(words["corpus"]) == {"greedy", "nucleus"}
    assert {"c_ref_F", "c_pred_M", "s_ref", "z_ref", "z_disp", "p_adj", "category"} <= set(words.columns)
    s = de.generation_summary(demo_gens)
    assert s["reports"].tolist() == [6, 6]
    assert ((s["hit_length_limit"] >= 0) & (s["hit_length_limit"] <= 1)).all()


@pytest.mark.long
def test_skew_sensitivity_runs_each_skew(tiny_params, dirs):
    table, gens = st.skew_sensitivity(tiny_params, cache=dirs["cache"], model_dir=dirs["models"],
)
    assert sorted(gens["skew"].unique()) == [0.33, 0.67]
    assert set(table["skew"]) == {0.33, 0.67} and set(table["strategy"]) == {"greedy"}
    assert {"ΔWAE (pred)", "WAE (pred)", "WEAT ES", "ROUGE-1", "ROUGE-L"} == set(table["metric"])
    d = table[table["metric"] == "ΔWAE (pred)"]
    assert len(d) == 2 and (d["pvalue"].isna() | d["pvalue"].between(0, 1)).all()  # 6 tiny reports: may be undefined
    fig = de.fig_skew_sensitivity(table)
    assert len(fig.axes) == 2 and [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["67% male", "33% male"]
    plt.close(fig)


def test_skew_key_error_for_vlm_without_skew_model():
    P = de.Params(report_model="/nonexistent", skews=[0.67])
    with pytest.raises(ParamsError, match="skew_models"):
        st.study_generations(P, skew=0.67)


# ---------------------------------------------------------------------------------------------
# Fig. 2b and 2c on hand-made inputs


def _result(refs, preds, name="x"):
    df = pd.DataFrame({"reference": refs, "prediction": preds, "group": ["F", "M"] * (len(refs) // 2)})
    return de.evaluate_corpus(df, name=name, encoder=None,
                              **{**FAST, "diversity_metrics": ["template_diversity"], "surface_metrics": ["rouge1"]})


def test_vocabulary_transitions_hand_counted():
    # reference vocabulary {effusion, pleural, small, heart, normal}; predictions {heart, normal, pneumothorax}
    r = _result(["small pleural effusion", "heart normal"] * 2, ["heart normal", "pneumothorax heart"] * 2)
    t = de.vocabulary_transitions([r]).iloc[0]
    assert (t.ref_vocab, t.pred_vocab, t.retained, t.lost, t.emergent) == (5, 3, 2, 3, 1)
    assert t.pred_share_of_ref == pytest.approx(3 / 5)
    fig = de.fig_vocabulary_transitions([r])
    widths = sorted(p.get_width() for p in fig.axes[0].patches)
    assert widths == [1, 2, 3]
    plt.close(fig)


def test_generation_summary_counts_empty_reports():
    g = pd.DataFrame({"strategy": ["a", "a", "b"], "prediction": ["x", " ", None], "finish_reason": ["eos", "length", "eos"],
                      "n_new_tokens": [3, 12, 0]})
    s = de.generation_summary(g).set_index("strategy")
    assert s.loc["a", "empty"] == 1 and s.loc["b", "empty"] == 1
    assert s.loc["a", "hit_length_limit"] == 0.5 and s.loc["a", "mean_new_tokens"] == 7.5
    with pytest.raises(ParamsError, match="needs columns"):
        de.generation_summary(pd.DataFrame({"x": [1]}))


def test_skew_table_rows_and_empty_figure_error():
    r = _result(["small pleural effusion", "heart normal"] * 2, ["heart normal", "pneumothorax heart"] * 2,
                name="skew 0.5 · greedy")
    t = de.skew_table({0.5: [r]})
    assert t["strategy"].unique().tolist() == ["greedy"] and t["skew"].unique().tolist() == [0.5]
    assert t["metric"].tolist() == ["ΔWAE (pred)", "WAE (pred)", "WEAT ES", "ROUGE-1"]
    with pytest.raises(ParamsError, match="empty"):
        de.fig_skew_sensitivity(de.skew_table({}))
    assert de.skew_label(0.5) == "50/50" and de.skew_label(0.67) == "67% male"


# ---------------------------------------------------------------------------------------------
# params


@pytest.mark.parametrize("bad, match", [
    ({"skews": [0.5, 1.2]}, "skews"),
    ({"skews": [0.5, 0.5]}, "skews"),
    ({"skew_strategies": ["greedy", "warm"]}, "warm"),
    ({"demo_model": {"layers": 2}}, "demo_model"),
])
def test_bad_params_are_named(bad, match):
    with pytest.raises(ParamsError, match=match):
        validate_params(de.Params, bad, "test")


def test_lora_config_is_the_papers():
    pytest.importorskip("peft")
    cfg = st.lora_config(de.Params().lora)
    assert (cfg.r, cfg.lora_alpha) == (16, 32)
    assert {"q_proj", "v_proj", "gate_proj", "down_proj"} <= set(cfg.target_modules)
    with pytest.raises(ParamsError, match="rank"):
        st.lora_config({"rank": 8})


# ---------------------------------------------------------------------------------------------
# the paper path: a VLM on images (tiny random LLaVA, ReXGradient fixture with images written here)


def _image_frame(tmp_path, n_f=3, n_m=3):
    from PIL import Image

    rows = []
    for i in range(n_f + n_m + 2):
        sex = "F" if i < n_f else ("M" if i < n_f + n_m else "O")
        rel = f"img/{i}.png"
        (tmp_path / "img").mkdir(exist_ok=True)
        Image.fromarray(np.full((32, 32), 10 * i, dtype=np.uint8)).save(tmp_path / rel)
        rows.append({"study_id": f"s{i}", "sex": sex, "view": "LATERAL" if i == 0 else "PA", "image_path": rel,
                     "findings": f"finding {i}" if i != 1 else "", "impression": f"impression {i}",
                     "indication": "cough" if i % 2 else None, "split": "test"})
    return pd.DataFrame(rows)


def test_select_image_studies_filters_and_balances(tmp_path):
    df = _image_frame(tmp_path, n_f=4, n_m=4)  # F: s0 (lateral, dropped), s1 (no findings), s2, s3
    s = ded.select_image_studies(df, 6, seed=0, folder=tmp_path)
    assert s["group"].tolist() == ["F", "M"] * 3
    assert sorted(s["study_id"][s["group"] == "F"]) == ["s1", "s2", "s3"]  # lateral view dropped
    assert s.set_index("study_id").loc["s1", "reference"] == "impression 1"  # empty findings -> impression
    assert all(p.startswith(str(tmp_path)) for p in s["image"])
    assert ded.select_image_studies(df, 6, seed=0, folder=tmp_path).equals(s)
    with pytest.raises(ParamsError, match="only 3 usable studies with sex 'F'"):
        ded.select_image_studies(df, 8, seed=0, folder=tmp_path)
    with pytest.raises(DataFormatError, match="does not exist"):
        ded.select_image_studies(df, 4, seed=0, folder=tmp_path / "elsewhere")


def test_vlm_path_generates_from_images(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    import radaudit.data.registry as reg
    import tiny_vlms

    df = _image_frame(tmp_path)
    monkeypatch.setattr(reg, "load_dataset", lambda name, root=None, path=None, **kw: df)
    model = tiny_vlms.build_llava(tmp_path / "vlm")
    P = de.Params(report_model=str(model), dataset_path=str(tmp_path), n_reports=4, max_new_tokens=5,
                  strategies=["greedy", "nucleus"], batch_size=3)
    g = st.study_generations(P, cache=tmp_path / "cache")
    assert list(g.columns) == st.GENERATION_COLUMNS and len(g) == 8
    assert g["group"].tolist()[:4] == ["F", "M", "F", "M"]
    assert g["prompt"].str.contains("Indication: (cough|not given)").all()
    again = st.study_generations(P, cache=tmp_path / "cache")
    pd.testing.assert_frame_equal(g, again)


# ---------------------------------------------------------------------------------------------
# Table 2 analog, ranking across p*, collapse floor


def test_ranking_reversals_counts_strict_reversals_only():
    sweep = pd.DataFrame({
        "corpus": ["a", "b", "c"] * 3, "p_star": [0.01] * 3 + [0.05] * 3 + [0.1] * 3, "category": "Erasure",
        #        a  b  c      a  b  c      a  b  c
        "count": [1, 0, 0] + [2, 2, 1] + [3, 4, 1]})
    r = de.ranking_reversals(sweep).iloc[0]
    # a vs b: a>b at 0.01, a<b at 0.1 -> reversed; a vs c: never a<c; b vs c: tie then b>c -> not reversed
    assert (r.pairs, r.reversed_pairs, r.ranked, bool(r.preserved)) == (3, 1, 3, False)


def test_ranking_reversals_is_na_without_two_corpora_to_rank():
    sweep = pd.DataFrame({"corpus": ["a", "b", "c"] * 2, "p_star": [0.01] * 3 + [0.1] * 3,
                          "category": ["Erasure"] * 6, "count": [0, 0, 0, 0, 3, 0]})
    sweep = pd.concat([sweep, sweep.assign(category="New Bias", count=0)], ignore_index=True)
    r = de.ranking_reversals(sweep).set_index("category")
    assert r.loc["Erasure", "preserved"] == "n/a" and r.loc["Erasure", "ranked"] == 1  # only b has a word
    assert r.loc["New Bias", "preserved"] == "n/a" and r.loc["New Bias", "ranked"] == 0


def _planted(n=200):
    """F: every report mentions mastectomy; M: one in ten. Neither uses the default template's words."""
    refs = ["mastectomy changes. chest stable." if i % 2 == 0 or i % 20 == 1 else "chest stable." for i in range(n)]
    return pd.DataFrame({"reference": refs, "group": ["F", "M"] * (n // 2)})


def test_collapse_floor_paper_test_sees_written_words_silence_test_sees_omitted_ones():
    df = _planted()
    # all four words are strongly sex-associated in the references: mastectomy/changes with F (100 vs 10), and
    # chest/stable with M through the token totals (100 of 220 M tokens vs 100 of 400 F tokens)
    written = de.collapse_floor(df, template="mastectomy changes. chest stable.")
    # the template writes all four evenly: the paper's test flags all four; the silence test flags chest and
    # stable, whose M rate fell from 100/220 to 100/400 tokens, but not mastectomy/changes, whose F rate is kept
    assert written == {"n_reports": 200, "strong_reference_words": 4, "strong_reference_words_exact": 4,
                       "reference_words_bh": 4, "Erasure": 4,
                       "New Bias": 0, "Bias Flip": 0, "Preservation": 0, "Unclassified": 0,
                       "Erasure (silence test)": 2}
    # the default normal template writes none of them: the paper's test cannot flag a total omission
    # (association module, item 8); the silence test flags all four (item 9)
    omitted = de.collapse_floor(df)
    assert omitted["Erasure"] == 0 and omitted["strong_reference_words"] == 4
    assert omitted["Erasure (silence test)"] == 4
    # references that do not differ by sex hold no association to erase, and the count says so
    same = pd.DataFrame({"reference": ["chest stable. mastectomy changes."] * 200, "group": ["F", "M"] * 100})
    flat = de.collapse_floor(same)
    assert flat["reference_words_bh"] == 0 and flat["Erasure (silence test)"] == 0


def test_system_table_cells():
    r = _result(["small pleural effusion", "heart normal"] * 2, ["heart normal", "pneumothorax heart"] * 2, name="sys")
    t = de.system_table([r]).set_index("metric")["sys"]
    assert t["Div. (Temp./Sem. %)"].startswith("50")  # 2 distinct of 4 predictions; no semantic diversity -> n/a
    assert re.fullmatch(r"\d+/\d+/\d+", t["Erasure/NB/BF"])
    assert t["Erasure (silence test)"] == str(r.category_counts()["Erasure (silence test)"])
    assert t["WAE (pred/ref)"].count("/") == 1 and "ROUGE-1" in t.index


def test_summary_lines_state_the_numbers():
    refs = ["small pleural effusion", "heart normal", "mild edema", "no pneumothorax"]
    g = _result(refs, ["heart normal"] * 4, name="greedy")
    n = _result(refs, ["small effusion", "heart big", "edema mild", "lungs clear"], name="nucleus")
    floor = {"n_reports": 4, "strong_reference_words": 0, "Erasure": 0, "Erasure (silence test)": 0}
    lines = de.summary_lines([g, n], floor)
    assert lines[0].startswith("**Template collapse.**")
    assert "(greedy) writes 25% distinct reports" in lines[0] and "sampling (nucleus) writes 100%" in lines[0]
    assert "greedy: 0 erased by the paper's test (0 by the silence test)" in lines[1]
    assert "no power" in lines[-1]
    powered = de.summary_lines([g], {**floor, "Erasure (silence test)": 3})[-1]
    assert "the silence test 3" in powered and "no power" not in powered
    assert "cannot flag a word the model never writes" in powered


# ---------------------------------------------------------------------------------------------
# findings.json: each headline number with its controls and verdict


def _sexed_corpus(n=60):
    """F references mention mastectomy, M references aicd; both mention heart and lungs."""
    refs = []
    for i in range(n):
        sex_word = "mastectomy changes" if i % 2 == 0 else "aicd device"
        refs.append(f"heart normal. lungs clear. {sex_word}. " + ("small effusion." if i % 3 == 0 else ""))
    return refs


def test_headline_findings_template_generator_collapses_and_erases():
    from radaudit.findings import read_findings, write_findings

    refs = _sexed_corpus()
    greedy = _result(refs, ["heart normal. lungs clear."] * len(refs), name="greedy")
    nucleus = _result(refs, [f"heart normal zqxv{i % 7}k lungs" if i % 2 else "heart enlarged pneumothorax"
                             for i in range(len(refs))], name="nucleus")
    df = pd.DataFrame({"reference": refs, "group": ["F", "M"] * (len(refs) // 2)})
    controls = {"planted": de.planted_control(df, n_bootstrap=50), "negative": de.halving_control(df),
                "floor": de.collapse_floor(df)}
    boot = {"greedy": de.erasure_bootstrap(df.assign(prediction="heart normal. lungs clear."), n_bootstrap=30)}
    reversals = de.ranking_reversals(de.pstar_sweep_table([greedy, nucleus], [0.01, 0.05, 0.2]))
    found = {f.id: f for f in de.headline_findings([greedy, nucleus], controls, reversals,
                                                   vocabulary={"heart", "enlarged", "pneumothorax", "normal", "lungs"},
                                                   erasure_ci=boot)}
    g = found["greedy_distinct_reports"]
    assert g.value == pytest.approx(1 / 60) and g.verdict == "shown" and g.ci[0] <= g.value <= g.ci[1]
    assert g.paper == 0.003
    beam = found["beam_distinct_reports"]  # not run here: said, not silently missing
    assert beam.value is None and beam.verdict == "n/a" and "not run" in beam.note
    # the template never says mastectomy/aicd/changes/device, all four sex-associated after BH: the silence test
    # sees their erasure, the paper's test cannot
    assert found["reference_associated_words"].value >= 4 and found["reference_associated_words"].verdict == "shown"
    erased = found["erased_terms_greedy"]
    assert erased.value >= 4 and erased.verdict == "shown" and erased.ci is not None and erased.bar.op == ">"
    assert erased.controls == ("erasure_planted_control", "erasure_negative_control")
    assert found["erased_terms_greedy_paper_test"].value == 0
    assert found["erased_terms_greedy_paper_test"].verdict == "not shown"
    assert found["erasure_planted_control"].verdict == "shown" and found["erasure_negative_control"].value == 0
    assert found["erasure_positive_control"].value > 0 and found["erasure_positive_control"].verdict == "n/a"
    # nucleus writes enlarged, pneumothorax (real) and zqxv/k (not in the vocabulary): 2 of 3 emergent words
    real = found["nucleus_emergent_real_words"]
    assert real.value == pytest.approx(2 / 3) and real.verdict == "not shown" and "zqxv" in real.note
    assert real.ci[0] <= 2 / 3 <= real.ci[1]
    write_findings(Path(tmp := tempfile.mkdtemp()) / "findings.json", "decoding_erasure", "test",
                   found.values())
    assert [f.id for f in read_findings(tmp)["findings"]] == list(found)


def test_headline_findings_controls_that_fail_make_the_count_uninterpretable():
    from radaudit.findings import settle

    refs = _sexed_corpus()
    greedy = _result(refs, ["heart normal. lungs clear."] * len(refs), name="greedy")
    df = pd.DataFrame({"reference": refs, "group": ["F", "M"] * (len(refs) // 2)})
    # a planted control whose model copies the references (erases nothing) and a negative control whose "predictions"
    # are the reports with every sex-specific word removed: both fail
    copied = de.planted_control(df, model=lambda d: d["reference"].tolist(), n_bootstrap=20)
    stripped = df.assign(prediction=df["reference"].str.replace(r"mastectomy changes\.|aicd device\.", "", regex=True))
    bad = {"planted": copied, "negative": de.halving_control(stripped, prediction="prediction", n_halvings=20),
           "floor": de.collapse_floor(df)}
    sweep = de.ranking_reversals(de.pstar_sweep_table([greedy], [0.05]))
    found = {f.id: f for f in settle(de.headline_findings([greedy], bad, sweep, vocabulary=set()))}
    assert found["erasure_planted_control"].verdict == "not shown"
    assert found["erasure_negative_control"].verdict == "not shown"
    note = found["erased_terms_greedy"].note
    assert found["erased_terms_greedy"].verdict == "not shown" and "a control it rests on did not pass" in note
    assert "erasure_planted_control (not shown)" in note and "erasure_negative_control (not shown)" in note
    assert found["erasure_positive_control"].verdict == "n/a" and "descriptive" in found["erasure_positive_control"].note
    assert found["erasure_ranking_reversed_pairs"].verdict == "n/a"  # one strategy: nothing to rank


def test_figure1_marks_and_labels_the_silence_tests_erased_words():
    refs = _sexed_corpus()
    greedy = _result(refs, ["heart normal. lungs clear."] * len(refs), name="greedy")
    erased = set(greedy.words.loc[greedy.words["erased_silence"], "word"])
    assert {"mastectomy", "aicd"} <= erased
    fig = de.fig_association_shift(greedy.words, top_k=6, title="greedy")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"Erasure, silence test ({len(erased)})" in legend
    assoc = int(greedy.words["ref_associated"].sum())
    assert assoc >= len(erased) and f"reference association survives BH ({assoc})" in legend
    blue = {t.get_text() for t in ax.texts if t.get_color() == de.CATEGORY_COLORS["Erasure"]}
    assert {"mastectomy", "aicd"} <= blue  # the paper flags nothing here, so the erased words get the labels
    assert "no word displaced or erased" not in ax.get_title()
    plt.close(fig)
