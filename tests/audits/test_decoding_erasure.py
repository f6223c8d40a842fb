"""The decoding-erasure audit: one corpus -> every table, Table 1 layout, real baselines, figures."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from radaudit.audits import decoding_erasure as de  # noqa: E402
from radaudit.config import validate_params  # noqa: E402
from radaudit.errors import ParamsError  # noqa: E402
from radaudit.metrics.association import SILENCE_ERASURE  # noqa: E402

FAST = dict(n_bootstrap=50, n_permutations=50, surface_metrics=("rouge1", "rougeL", "ratescore"))
FILLER = ["lungs", "clear", "heart", "size", "normal", "effusion", "pleural", "opacity", "mild", "stable",
          "atelectasis", "basilar", "cardiomegaly", "osseous", "intact", "consolidation"]


class HashEncoder:
    """A fast stand-in sentence encoder: hashed bag of words, L2-normalised."""

    def embed(self, texts):
        out = np.zeros((len(texts), 32))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % 32] += 1.0
            out[i, 31] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def planted_corpus(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """40 reports, half F: the references tie "mastectomy" strongly to F; every prediction says it once.

    The word is still generated, but evenly across groups: its association is erased (paper §2.1.2).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        g = "F" if i < n // 2 else "M"
        filler = " ".join(rng.choice(FILLER, size=8))
        if g == "F":
            ref = f"{filler} mastectomy mastectomy mastectomy mastectomy."
        else:
            ref = f"{filler} mastectomy." if i == n - 1 else f"{filler}."
        pred = f"{' '.join(rng.choice(FILLER, size=6))} mastectomy."
        rows.append({"reference": ref, "prediction": pred, "group": g})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def erased() -> de.CorpusResult:
    return de.evaluate_corpus(planted_corpus(), name="erased", encoder=HashEncoder(), **FAST)


@pytest.fixture(scope="module")
def copied() -> de.CorpusResult:
    df = planted_corpus().assign(prediction=lambda d: d["reference"])
    with pytest.warns(RuntimeWarning, match="undefined"):  # a relabelling can leave a group without associated words
        return de.evaluate_corpus(df, name="copy", encoder=HashEncoder(), **FAST)


def test_planted_erasure_is_flagged(erased):
    words = erased.words.set_index("word")
    assert words.loc["mastectomy", "category"] == "Erasure"
    assert words.loc["mastectomy", "z_ref"] > 2 and abs(words.loc["mastectomy", "z_pred"]) < 1
    assert erased.category_counts()["Erasure"] >= 1
    assert (erased.words["corpus"] == "erased").all()


def test_corpus_tables_have_expected_rows(erased):
    assert erased.n_reports == 40
    assert erased.surface["metric"].tolist() == ["rouge1", "rougeL"]  # ratescore cannot run offline here
    assert "ratescore" in erased.skipped
    s = erased.surface
    assert ((s["low"] <= s["estimate"]) & (s["estimate"] <= s["high"])).all()
    for table in (erased.diversity_pred, erased.diversity_ref):
        assert table["metric"].tolist() == ["template_diversity", "ttr", "one_minus_self_bleu", "semantic_diversity"]
        assert table["estimate"].between(0, 1).all()
    assert erased.diversity_ref.set_index("metric").loc["template_diversity", "estimate"] == 1.0
    assert set(erased.wae["metric"]) >= {"WAE_pred", "WAE_ref", "delta_WAE_pred", "delta_WAE_ref"}
    assert erased.weat["side"].tolist() == ["pred", "ref"]
    assert set(erased.dir) >= {"delta_dir", "dir_reference", "dir_prediction"}
    assert erased.excluded == {}


def test_copy_has_no_displacement(copied):
    counts = copied.category_counts()
    assert counts["Erasure"] == counts["New Bias"] == counts["Bias Flip"] == 0
    assert copied.dir["delta_dir"] == pytest.approx(0.0)
    assert copied.surface.set_index("metric").loc["rouge1", "estimate"] == pytest.approx(1.0)


def test_strategy_table_layout(erased, copied):
    wide = de.strategy_table([erased, copied])
    assert list(wide.columns) == ["Ref.", "erased", "copy"]  # same references -> one Ref. column
    sections = list(dict.fromkeys(wide.index.get_level_values("section")))
    assert sections == list(de.SECTION_ORDER)
    metrics = wide.index.get_level_values("metric").tolist()
    for m in ("ROUGE-1", "ROUGE-L", "Template Div. (%)", "TTR (%)", "1 − Self-BLEU (%)", "Semantic Div. (%)",
              "Erasure (#, paper's test)", "Erasure (#, silence test)", "New Bias (#)", "Bias Flip (#)", "WAE (pred)", "WAE (ref)", "WEAT (S/ES)", "ΔDIR"):
        assert m in metrics
    ci = re.compile(r"^-?\d+\.\d\d \[-?\d+\.\d\d, -?\d+\.\d\d\]$")
    assert ci.match(wide.loc[("Surface Level Similarity", "ROUGE-1"), "erased"])
    assert ci.match(wide.loc[("Textual Diversity & Collapse", "Template Div. (%)"), "Ref."])
    assert wide.loc[("Textual Diversity & Collapse", "Template Div. (%)"), "Ref."].startswith("100.00")
    assert wide.loc[("Clinical Categories", "Erasure (#, paper's test)"), "erased"] == str(
        erased.category_counts()["Erasure"])
    assert wide.loc[("Clinical Categories", "Erasure (#, silence test)"), "erased"] == str(
        erased.category_counts()["Erasure (silence test)"])
    assert wide.loc[("Clinical Categories", "Erasure (#, paper's test)"), "Ref."] == ""  # Ref. only for diversity rows
    assert "/" in wide.loc[("Fairness", "WEAT (S/ES)"), "erased"]

    long = de.strategy_table_long([erased, copied])
    assert list(long.columns) == ["section", "metric", "corpus", "estimate", "low", "high", "pvalue", "cell", "note"]
    wae = long[(long["metric"] == "WAE (pred)") & (long["corpus"] == "erased")].iloc[0]
    assert wae["estimate"] == pytest.approx(erased.wae.set_index("metric").loc["WAE_pred", "estimate"])
    assert 0 < wae["pvalue"] <= 1
    with pytest.raises(ParamsError, match="unique"):
        de.strategy_table([erased, erased])


def test_pstar_sweep_matches_audit(erased, copied):
    table = de.pstar_sweep_table([erased, copied], [0.01, 0.05, 0.2])
    assert len(table) == 2 * 3 * 6
    at = table[(table["corpus"] == "erased") & (table["p_star"] == 0.05)].set_index("category")["count"]
    counts = erased.category_counts()
    for c in ("Erasure", "Erasure (silence test)", "New Bias", "Bias Flip", "Preservation"):
        assert at[c] == counts[c]
    er = table[(table["corpus"] == "erased") & (table["category"] == "Erasure")]["count"].to_numpy()
    assert (np.diff(er) >= 0).all()  # a looser p* flags at least as many words


def test_figures_build(erased, copied):
    fig = de.fig_association_shift(erased.words, top_k=5, title="planted")
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "mastectomy" in labels
    assert "female-associated" in fig.axes[0].get_xlabel() and "male-associated" in fig.axes[0].get_ylabel()
    plt.close(fig)
    fig = de.fig_pstar_sweep([erased, copied], [0.01, 0.05, 0.2])
    assert [a.get_title() for a in fig.axes] == ["Erasure (paper's test)", "Erasure (silence test)", "New Bias",
                                                 "Bias Flip"]
    table = de.pstar_sweep_table([erased, copied], [0.01, 0.05, 0.2])
    for ax, cat in zip(fig.axes, ["Erasure", SILENCE_ERASURE, "New Bias", "Bias Flip"]):
        # every corpus has its line, on zero where it flags nothing; a category with no word at any p* says n/a
        assert len(ax.lines) == 2
        zero = table.loc[table["category"] == cat, "count"].max() == 0
        empty = any(t.get_text().startswith("n/a (no word in this category") for t in ax.texts)
        assert empty == zero
        if zero:
            assert all((line.get_ydata() == 0).all() for line in ax.lines)
    plt.close(fig)
    fig = de.fig_surface_vs_diversity([erased, copied], metric="rougeL")
    assert any("unique" in t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)


def test_baseline_corpora_real_data(shared_data):
    corpora = de.baseline_corpora(shared_data)
    assert list(corpora) == list(de.BASELINE_NAMES)
    assert [len(df) for df in corpora.values()] == [200, 100, 100]
    for df in corpora.values():
        assert {"reference", "prediction", "group"} <= set(df.columns)
        assert df["prediction"].map(lambda t: isinstance(t, str) and t != "").all()
    gpt, med = corpora["RadPref GPT"], corpora["RadPref MedGemma"]
    assert (gpt["reference"] == med["reference"]).all() and (gpt["prediction"] != med["prediction"]).all()
    results = [de.evaluate_corpus(df, name=name, n_bootstrap=20, n_permutations=20, surface_metrics=("rouge1",),
                                  diversity_metrics=("template_diversity",)) for name, df in corpora.items()]
    assert [r.excluded for r in results] == [{"<NA>": 2}, {"O": 2}, {"O": 2}]
    assert [sum(r.association.n_reports.values()) for r in results] == [198, 98, 98]
    wide = de.strategy_table(results)
    # CheXpert Plus and RadPref have different references: one Ref. column per reference set
    assert list(wide.columns) == ["Ref. (CheXpert Plus (generated))", "Ref. (RadPref GPT)", *de.BASELINE_NAMES]


def test_params_defaults_and_errors():
    p = de.Params()
    assert (p.alpha, p.p_star, p.z_neutral, p.z_strong) == (0.1, 0.05, 1.0, 2.0)
    assert p.groups == ["F", "M"] and p.group_column == "sex"
    assert p.strategies == ["greedy", "beam4", "conservative", "rich", "topk50", "nucleus"]
    assert all(f.description for f in de.Params.model_fields.values())
    with pytest.raises(ParamsError, match="strategies"):
        validate_params(de.Params, {"strategies": ["greedy", "warm"]})
    with pytest.raises(ParamsError, match="groups"):
        validate_params(de.Params, {"groups": ["F"]})
