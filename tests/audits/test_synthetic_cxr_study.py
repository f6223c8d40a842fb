"""synthetic_cxr glue between the sets and the tables: the sample grid's rows, which generators' closest privacy
pairs are drawn, and Table 5's report sources (retrieval stand-in or a user's reports file)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.synthetic_cxr import params as scp
from radaudit.audits.synthetic_cxr import study as sc
from radaudit.audits.synthetic_cxr.plots import plot_closest_pairs
from radaudit.errors import DataFormatError, ParamsError


class _Context:
    def __init__(self, pixels: dict[str, np.ndarray]):
        self._pixels = pixels

    def pixels(self, ids):
        return np.stack([self._pixels[str(i)] for i in ids])


class _FlatEncoder:
    """Features = the flattened pixels (so retrieval finds exact copies)."""

    def embed(self, images, batch_size=32):
        return np.stack([np.asarray(im, dtype=np.float32).ravel() + 1e-3 for im in images])


def _img(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(8, 8)).astype(np.float32)


@pytest.fixture()
def study():
    train_ids, test_ids = ["t0", "t1", "t2", "t3"], ["s0", "s1", "s2"]
    px = {i: _img(k) for k, i in enumerate(train_ids)}
    px |= {"s0": px["t0"] + 0.01, "s1": px["t2"] + 0.01, "s2": _img(99)}
    train_meta = pd.DataFrame({"study_id": train_ids, "prompt": ["PA: X", "PA: X", "AP: Y", "AP: Y"],
                               "labels": [["X"], ["X"], ["Y"], ["Y"]], "split": "train"})
    test_meta = pd.DataFrame({"study_id": test_ids, "prompt": ["PA: X", "AP: Y", "PA: X"],
                              "labels": [["X"], ["Y"], ["X"]], "split": "test",
                              "findings": ["x seen", None, "x seen"]})
    ctx = _Context(px)
    return sc.Study(frame=pd.concat([train_meta, test_meta], ignore_index=True), context=ctx,
                    train=ctx.pixels(train_ids), test=ctx.pixels(test_ids), train_meta=train_meta, test_meta=test_meta)


def _requests(ids, prompts):
    return pd.DataFrame({"prompt": prompts, "source_study_id": ids, "labels": [[p[-1]] for p in prompts],
                         "seed": range(len(ids))})


@pytest.fixture()
def sets(study):
    fid_req = _requests(["s0", "s1", "s2"], ["PA: X", "AP: Y", "PA: X"])
    util_req = _requests(["t0", "t2"], ["PA: X", "AP: Y"])
    priv_req = _requests(["t0", "t0", "t2", "t2"], ["PA: X", "PA: X", "AP: Y", "AP: Y"])
    copy_priv = study.context.pixels(["t0", "t0", "t2", "t2"])
    flipped = {"fidelity": (study.test[:, ::-1].copy(), fid_req),
               "utility": (study.context.pixels(["t2", "t0"]), util_req),  # images paired with the wrong prompt
               "privacy": (copy_priv[:, ::-1].copy(), priv_req)}
    copies = {"fidelity": (study.test.copy(), fid_req), "utility": (study.context.pixels(["t0", "t2"]), util_req),
              "privacy": (copy_priv, priv_req)}
    return {"copies": copies, "swapped": flipped}


def test_sample_grid_rows_show_the_same_prompts_with_their_real_image(study, sets):
    grid, prompts = sc.sample_grid_inputs(study, sets, n=2)
    assert list(grid) == ["real (test)", "copies", "swapped"]
    assert prompts["real (test)"] == prompts["copies"] == prompts["swapped"] == ["PA: X", "AP: Y"]
    np.testing.assert_array_equal(grid["real (test)"], study.context.pixels(["s0", "s1"]))
    np.testing.assert_array_equal(grid["swapped"], study.test[:2, ::-1])
    grid3, prompts3 = sc.sample_grid_inputs(study, sets, n=8)  # fewer distinct prompts than n: repeats fill in
    assert prompts3["real (test)"] == ["PA: X", "AP: Y", "PA: X"] and len(grid3["copies"]) == 3


def test_generators_to_inspect_worst_first_then_models():
    gens = [scp.GeneratorEntry(name="model", kind="diffusion"), scp.GeneratorEntry(name="copy", kind="memoriser"),
            scp.GeneratorEntry(name="real", kind="heldout_real")]
    pairs = {"model": pd.DataFrame({"reid": [0.2, 0.3]}), "copy": pd.DataFrame({"reid": [0.9, 0.8]}),
             "real": pd.DataFrame({"reid": [0.1, 0.1]})}
    assert sc.generators_to_inspect(pairs, gens) == ["copy", "model"]
    pairs["model"] = pd.DataFrame({"reid": [0.95, 0.99]})
    assert sc.generators_to_inspect(pairs, gens) == ["model"]


def test_closest_pairs_figure_puts_each_image_over_its_own_training_image(study, sets):
    images, req = sets["copies"]["privacy"]
    pairs = {"copies": pd.DataFrame({"reid": [0.1, 0.9, 0.2, 0.3], "pixel_distance": 0.0, "latent_distance": 0.0,
                                     "train_index": [0, 0, 1, 1]})}
    fig = plot_closest_pairs(study, sets, pairs, "copies", n=2)
    assert fig._suptitle.get_text().startswith("copies: the 2 pairs with the highest re-ID")
    top, bottom = fig.axes[0].images[0].get_array(), fig.axes[2].images[0].get_array()
    np.testing.assert_allclose(top, images[1])  # the highest re-ID score (0.9) is image 1 ...
    np.testing.assert_allclose(bottom, study.context.pixels(["t0"])[0])  # ... generated from t0's prompt


def _params(**kw):
    return scp.Params(labels=["X", "Y"], n_bootstrap=40, report_generation=kw)


def test_report_sources_retrieve_or_read_a_file(study, sets, tmp_path):
    models = {"cxr": _FlatEncoder()}
    reports, how = sc.report_candidates(_params(), study, sets, models)
    assert list(reports) == ["real", "copies", "swapped"]
    # s0 ~ t0 ("PA: X"), s1 ~ t2 ("AP: Y"); the swapped source pairs t0's image with "AP: Y"
    assert reports["real"][:2] == ["PA: X", "AP: Y"] and reports["copies"][:2] == ["PA: X", "AP: Y"]
    assert reports["swapped"][:2] == ["AP: Y", "PA: X"]
    assert how["how"].str.startswith("retrieval").all()
    csv = tmp_path / "swapped.csv"
    pd.DataFrame({"study_id": ["s0", "s1", "s2"], "report": ["PA: X", "", "PA: X"]}).to_csv(csv, index=False)
    reports, how = sc.report_candidates(_params(files={"swapped": str(csv)}), study, sets, models)
    assert reports["swapped"] == ["PA: X", "", "PA: X"]
    row = how.set_index("source").loc["swapped"]
    assert row["how"] == f"file {csv}" and row["n_empty"] == 1
    with pytest.raises(ParamsError, match=r"names source\(s\) \['nobody'\]"):
        sc.report_candidates(_params(files={"nobody": str(csv)}), study, sets, models)


def test_report_utility_scores_sources_and_leaves_out_studies_without_reference(study, sets):
    reports = {"real": ["PA: X", "AP: Y", "PA: X"], "copies": ["PA: X", "AP: Y", "PA: X"],
               "swapped": ["AP: Y", "PA: X", "AP: Y"]}
    long = sc.report_utility(_params(), study, reports).set_index(["source", "metric"])
    assert long.loc[("copies", "f1_micro"), "estimate"] == 1.0 and long.loc[("swapped", "f1_micro"), "estimate"] == 0.0
    assert long.loc[("real", "bleu1"), "n"] == 3
    # findings: the second test study has none -> scored on the other two, and counted
    p = _params(reference_column="findings", metrics=["rougeL"])
    got = sc.report_utility(p, study, reports)
    assert got.attrs["n_without_reference"] == 1 and set(got["n"]) == {2}
    with pytest.raises(ParamsError, match="reference_column='impression' is not a column"):
        sc.report_utility(_params(reference_column="impression"), study, reports)
    with pytest.raises(DataFormatError, match="'real' has 2 reports for 3 test studies"):
        sc.report_utility(_params(), study, {**reports, "real": reports["real"][:2]})


def test_utility_classifiers_are_cached_under_the_cache_root_unless_cache_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path))
    assert sc.utility_cache_dir(scp.Params(labels=["X", "Y"])) == tmp_path.resolve() / "utility_classifiers"
    assert sc.utility_cache_dir(scp.Params(labels=["X", "Y"]), tmp_path / "elsewhere") == \
        tmp_path / "elsewhere" / "utility_classifiers"
    assert sc.utility_cache_dir(scp.Params(labels=["X", "Y"], cache=False)) is None
