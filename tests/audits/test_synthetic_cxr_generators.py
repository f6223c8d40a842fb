"""Tests of radaudit.audits.synthetic_cxr.generators: the reference generators' known verdicts on real
covid-chestxray images, seeding, the request builders, the bring-your-own folder, the diffusion generator
(tiny demo model) and the crash-safe cache of generate_set."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.audits.synthetic_cxr import data as D
from radaudit.audits.synthetic_cxr import generators as G
from radaudit.errors import DataFormatError, ParamsError


def rms(a, b):
    """Pixel distance as the paper defines it (§2.3): ‖a − b‖₂ / √(number of pixels)."""
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


@pytest.fixture(scope="module")
def frame(shared_data):
    return D.demo_frame(shared_data, seed=0)


@pytest.fixture(scope="module")
def ctx(frame):
    return G.GenerationContext(frame=frame, size=32)


@pytest.fixture(scope="module")
def preq(frame):
    return G.privacy_requests(frame, n_prompts=6, n_seeds=2, seed=0)


# --- request builders -----------------------------------------------------------------------------------

def test_privacy_requests_layout_and_reproducible(frame, preq):
    assert len(preq) == 12 and list(preq.columns[:4]) == ["request_id", "prompt", "labels", "seed"]
    train_ids = set(frame.loc[frame["split"] == "train", "study_id"])
    assert set(preq["source_study_id"]) <= train_ids and preq["source_study_id"].nunique() == 6
    assert preq["seed_index"].tolist() == [0, 1] * 6
    assert preq["seed"].nunique() == 12  # one seed per image
    src = frame.set_index("study_id").loc[preq["source_study_id"]]
    assert preq["prompt"].tolist() == src["prompt"].tolist() and preq["labels"].tolist() == src["labels"].tolist()
    pd.testing.assert_frame_equal(preq, G.privacy_requests(frame, n_prompts=6, n_seeds=2, seed=0))
    other = G.privacy_requests(frame, n_prompts=6, n_seeds=2, seed=1)
    assert other["source_study_id"].tolist() != preq["source_study_id"].tolist()
    assert other["seed"].tolist() != preq["seed"].tolist()
    uniq = G.privacy_requests(frame, n_prompts=1000, n_seeds=1, unique_prompts=True)
    assert uniq["prompt"].is_unique and len(uniq) < 20  # the demo's captions repeat


def test_fidelity_and_utility_requests(frame):
    test = frame[frame["split"] == "test"]
    f = G.fidelity_requests(frame, k=2)
    assert len(f) == 2 * len(test) and set(f["source_study_id"]) == set(test["study_id"])
    assert f["seed"].nunique() == len(f)
    u = G.utility_requests(frame, n=500, seed=0)
    n_train = int((frame["split"] == "train").sum())
    counts = u["source_study_id"].value_counts()
    assert len(u) == 500 and counts.max() == 2 and counts.min() == 1 and len(counts) == n_train  # every image, then again
    pd.testing.assert_frame_equal(u, G.utility_requests(frame, n=500, seed=0))
    with pytest.raises(ParamsError, match="n must be an integer >= 1"):
        G.utility_requests(frame, n=0)
    with pytest.raises(DataFormatError, match="no 'valid' rows"):
        G.fidelity_requests(frame, split="valid")


# --- reference generators: known verdicts ----------------------------------------------------------------

@pytest.mark.long
def test_memoriser_is_close_to_its_source_and_degrader_is_far(ctx, preq):
    src = ctx.pixels(preq["source_study_id"])
    mem = G.generate("memoriser", preq, context=ctx)
    deg = G.generate("degrader", preq, context=ctx)
    assert mem.shape == deg.shape == (12, 32, 32) and mem.dtype == np.float32
    d_mem = [rms(m, s) for m, s in zip(mem, src)]
    d_deg = [rms(m, s) for m, s in zip(deg, src)]
    assert max(d_mem) < 0.025  # σ = 0.02 noise (a little less after clipping)
    assert min(d_deg) > 0.1
    # and the memoriser's image is nearest its own source among all training images
    train = ctx.frame[ctx.frame["split"] == "train"]
    pool = ctx.pixels(train["study_id"])
    nearest = [train["study_id"].iloc[int(np.argmin(((pool - m) ** 2).mean(axis=(1, 2))))] for m in mem]
    assert nearest == preq["source_study_id"].tolist()


def test_degrader_source_mode_blurs_the_source(ctx, preq):
    src = ctx.pixels(preq["source_study_id"][:2])
    deg = G.generate("degrader", preq.iloc[:2], context=ctx, match="source", noise_sigma=0.0, blur_sigma=1.0)
    from scipy.ndimage import gaussian_filter

    np.testing.assert_allclose(deg[0], gaussian_filter(src[0], 1.0, mode="reflect"), atol=1e-6)


def test_memoriser_without_source_uses_same_labels(ctx, frame):
    req = pd.DataFrame({"prompt": ["AP chest X-ray: Other pneumonia"], "labels": [["Other pneumonia"]], "seed": [3],
                        "view": ["AP"]})
    out = G.generate("memoriser", req, context=ctx, sigma=0.0)
    train = frame[(frame["split"] == "train") & frame["labels"].map(lambda v: v == ["Other pneumonia"])
                  & (frame["view"] == "AP")]
    pool = ctx.pixels(train["study_id"])
    assert min(rms(out[0], p) for p in pool) == 0.0


@pytest.mark.long
def test_heldout_real_never_a_training_image_and_matches_labels(ctx, frame):
    req = G.fidelity_requests(frame, k=1).iloc[:20]
    out = G.generate("heldout_real", req, context=ctx)
    hold = frame[frame["split"] == "holdout"]
    train = frame[frame["split"] == "train"]
    hold_px, train_px = ctx.pixels(hold["study_id"]), ctx.pixels(train["study_id"])
    for img, labs in zip(out, req["labels"]):
        d_hold = ((hold_px - img) ** 2).mean(axis=(1, 2))
        j = int(np.argmin(d_hold))
        assert d_hold[j] == 0.0  # exactly a held-out image
        assert hold["labels"].iloc[j] == labs  # with the request's labels
        assert ((train_px - img) ** 2).mean(axis=(1, 2)).min() > 0  # and not a training image
    ids, counts = G.match_pool(req, hold, "x")
    assert counts["overlap"] == 0


def test_match_pool_tiers_and_seeding():
    pool = pd.DataFrame({"study_id": ["a", "b", "c", "d"], "labels": [["X"], ["X"], ["X", "Y"], ["Z"]],
                         "view": ["PA", "AP", "PA", "PA"]})
    req = pd.DataFrame({"labels": [["X"], ["X"], ["Y"], ["Q"]], "view": ["AP", "LATERAL", "PA", "PA"],
                        "seed": [1, 1, 1, 1]})
    ids, counts = G.match_pool(req, pool, "t")
    assert ids[0] == "b"  # same labels and view
    assert ids[1] in {"a", "b"}  # same labels, no such view
    assert ids[2] == "c"  # closest overlap: {X, Y} vs {Y}
    assert ids[3] in {"a", "c", "d"}  # nothing overlaps: any PA image (overlap 0, same view first)
    assert counts == {"exact": 1, "labels": 1, "overlap": 2}
    many = pd.DataFrame({"labels": [["X"]] * 40, "view": [None] * 40, "seed": range(40)})
    picks, _ = G.match_pool(many, pool, "t")
    assert set(picks) == {"a", "b"}  # different seeds reach different candidates
    assert picks == G.match_pool(many, pool, "t")[0]


def test_same_seed_same_images_different_seed_different(ctx, preq):
    for name in ("memoriser", "degrader", "heldout_real"):
        a = G.generate(name, preq, context=ctx)
        b = G.generate(name, preq, context=ctx)
        np.testing.assert_array_equal(a, b)
        c = G.generate(name, preq.assign(seed=preq["seed"] + 1), context=ctx)
        if name == "heldout_real":  # a seed picks among same-label held-out images
            assert any(np.abs(x - y).max() > 0 for x, y in zip(a, c))
        else:
            assert all(np.abs(x - y).max() > 0 for x, y in zip(a, c))


# --- folder (bring your own) -----------------------------------------------------------------------------

def test_folder_round_trip(tmp_path, ctx, preq):
    imgs = G.generate("memoriser", preq, context=ctx)
    csv = D.write_synthetic_set(tmp_path / "set", imgs, preq)
    back = G.generate("folder", preq, context=ctx, metadata_csv=csv)
    np.testing.assert_allclose(back, np.rint(imgs * 255) / 255, atol=1e-6)
    shuffled = preq.iloc[::-1]
    np.testing.assert_allclose(G.generate("folder", shuffled, context=ctx, metadata_csv=csv), back[::-1], atol=0)
    whole = G.generate("folder", None, context=ctx, metadata_csv=csv)
    np.testing.assert_array_equal(whole, back)
    with pytest.raises(DataFormatError, match="no image in .* same prompt and seed"):
        G.generate("folder", preq.assign(seed=preq["seed"] + 1), context=ctx, metadata_csv=csv)
    with pytest.raises(ParamsError, match="metadata_csv="):
        G.generate("folder", None, context=ctx)


# --- bad inputs ------------------------------------------------------------------------------------------

def test_bad_inputs_give_clear_errors(ctx, preq):
    with pytest.raises(ParamsError, match="Unknown generator 'gan'.*memoriser"):
        G.generate("gan", preq, context=ctx)
    with pytest.raises(ParamsError, match=r"no parameter\(s\) \['sigmaa'\]"):
        G.generate("memoriser", preq, context=ctx, sigmaa=0.1)
    with pytest.raises(ParamsError, match=r"lack column\(s\) \['seed'\]"):
        G.generate("memoriser", preq.drop(columns="seed"), context=ctx)
    with pytest.raises(ParamsError, match="'seed' must hold integers"):
        G.generate("memoriser", preq.assign(seed="x"), context=ctx)
    with pytest.raises(ParamsError, match="sigma must be a finite number >= 0"):
        G.generate("memoriser", preq, context=ctx, sigma=-1)
    with pytest.raises(ParamsError, match="needs the real data"):
        G.generate("heldout_real", preq, context=G.GenerationContext())
    with pytest.raises(ParamsError, match="needs requests"):
        G.generate("memoriser", None, context=ctx)


# --- generate_set: cache and resume ------------------------------------------------------------------------

def test_generate_set_caches_and_resumes(tmp_path, ctx, preq, monkeypatch):
    calls = []
    spec = G.GENERATORS["memoriser"]

    def counting(requests, **kw):
        calls.append(len(requests))
        return spec.fn(requests, **kw)

    monkeypatch.setitem(G.GENERATORS, "memoriser", dataclasses.replace(spec, fn=counting))
    a = G.generate_set("memoriser", preq, tmp_path, context=ctx, chunk_size=5)
    assert calls == [5, 5, 2]
    np.testing.assert_array_equal(a, G.generate("memoriser", preq, context=ctx))
    calls.clear()
    b = G.generate_set("memoriser", preq, tmp_path, context=ctx, chunk_size=5)
    assert calls == [] and np.array_equal(a, b)
    folder = next((tmp_path / "synthetic").iterdir())
    sorted(folder.glob("part-*.npy"))[1].unlink()  # a run that crashed during the second chunk
    c = G.generate_set("memoriser", preq, tmp_path, context=ctx, chunk_size=5)
    assert calls == [5] and np.array_equal(a, c)
    calls.clear()
    G.generate_set("memoriser", preq, tmp_path, context=ctx, chunk_size=5, sigma=0.05)  # new params: new key
    assert calls == [5, 5, 2]
    k = G.generator_key("memoriser", preq, context=ctx)
    assert k != G.generator_key("memoriser", preq.iloc[:-1], context=ctx)
    assert k != G.generator_key("memoriser", preq, context=dataclasses.replace(ctx, size=16))
    assert k == G.generator_key("memoriser", preq.copy(), context=ctx)


# --- diffusion (tiny demo model) ---------------------------------------------------------------------------

TINY_TRAIN = {"patch_size": 2, "block_out_channels": (8, 16), "norm_num_groups": 4, "attention_head_dim": 8,
              "steps": 2, "batch_size": 4, "warmup_steps": 1, "max_seconds": None}


@pytest.fixture(scope="module")
def toy_ctx(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    rows = []
    for i in range(6):
        arr = np.zeros((20, 20), np.uint8)
        arr[:, 8:12] = 200 + i
        Image.fromarray(arr).save(d / f"{i}.png")
        rows.append({"study_id": f"s{i}", "patient_id": f"p{i}", "split": "train" if i < 4 else "holdout",
                     "prompt": f"PA chest X-ray: {'COVID-19' if i % 2 else 'No Finding'}",
                     "labels": ["COVID-19"] if i % 2 else ["No Finding"], "view": "PA", "image_path": str(d / f"{i}.png")})
    return G.GenerationContext(frame=pd.DataFrame(rows), size=16, cache_dir=d / "cache")


def test_diffusion_generator_demo_model(toy_ctx):
    req = G.privacy_requests(toy_ctx.frame, n_prompts=2, n_seeds=2)
    kw = {"train": TINY_TRAIN, "steps": 3, "guidance": 2.0}
    a = G.generate("diffusion", req, context=toy_ctx, **kw)
    assert a.shape == (4, 16, 16) and a.dtype == np.float32
    np.testing.assert_array_equal(a, G.generate("diffusion", req, context=toy_ctx, **kw))
    b = G.generate("diffusion", req.assign(seed=req["seed"] + 1), context=toy_ctx, **kw)
    assert all(np.abs(x - y).max() > 1e-4 for x, y in zip(a, b))
    k1 = G.generator_key("diffusion", req, context=toy_ctx, **kw)
    assert k1 == G.generator_key("diffusion", req, context=toy_ctx, batch_size=1, **kw)  # batching is not identity
    assert k1 != G.generator_key("diffusion", req, context=toy_ctx, **{**kw, "model_seed": 1})
    assert k1 != G.generator_key("diffusion", req, context=toy_ctx, **{**kw, "guidance": 3.0})
