"""Image metrics of CheXGenBench (radaudit.metrics.image) on tiny features and images.

Expected values are either worked out by hand in the comments (PRDC, pixel distances, δ count,
ranks) or computed here independently of the library (FID via symmetric eigendecompositions instead
of sqrtm; PRDC with the ``prdc==0.2`` formulas on full distance matrices; KID by explicit loops).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import linalg
from scipy.spatial.distance import cdist
from scipy import stats as sps

from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image import (
    FeatureStats,
    as_float_image,
    extract_features,
    feature_stats,
    fid,
    iter_features,
    kid,
    latent_distance,
    per_label_fidelity,
    per_prompt_privacy,
    pixel_distance,
    prdc,
    privacy_pairs,
    privacy_summary,
    rank_correlation,
    rank_table,
    reid_scores,
)
from radaudit.metrics.image.fidelity import mmd2_unbiased


@pytest.fixture(scope="module")
def feats():
    rng = np.random.default_rng(0)
    mix = rng.normal(size=(12, 12))
    a = rng.normal(size=(400, 12)) @ mix  # correlated features
    b = rng.normal(size=(400, 12)) @ mix + 0.3  # same distribution, shifted
    noise = rng.uniform(-20, 20, size=(400, 12))
    return a, b, noise


# --- FID -----------------------------------------------------------------------------------------

def independent_fid(x: np.ndarray, y: np.ndarray) -> float:
    """FID computed differently: hand-written covariances and Tr((Σ1Σ2)^½) = Σ √eig(Σ1^½ Σ2 Σ1^½),
    from symmetric eigendecompositions (no sqrtm)."""
    def mean_cov(z):
        mu = z.sum(axis=0) / len(z)
        c = z - mu
        return mu, (c.T @ c) / (len(z) - 1)

    m1, s1 = mean_cov(x)
    m2, s2 = mean_cov(y)
    w, v = linalg.eigh(s1)
    s1_half = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    lam = linalg.eigvalsh(s1_half @ s2 @ s1_half)
    return float(np.sum((m1 - m2) ** 2) + np.trace(s1) + np.trace(s2) - 2 * np.sum(np.sqrt(np.clip(lam, 0, None))))


def test_fid_self_zero_noise_large(feats):
    a, b, noise = feats
    assert abs(fid(a, a)) < 1e-6
    assert fid(a, noise) > 50 * max(fid(a, b), 1e-3)
    assert fid(a, b) > 0.1


@pytest.mark.parametrize("method", ["sqrtm", "eigvals"])
def test_fid_matches_independent_computation(feats, method):
    a, b, noise = feats
    for y in (b, noise):
        assert fid(a, y, method=method) == pytest.approx(independent_fid(a, y), rel=1e-7, abs=1e-7)


def test_fid_univariate_closed_form():
    # 1-D: FID = (μ1−μ2)² + σ1² + σ2² − 2σ1σ2 = (μ1−μ2)² + (σ1−σ2)²
    x = np.array([[0.0], [2.0], [4.0]])  # mean 2, var 4
    y = np.array([[1.0], [2.0], [3.0]])  # mean 2, var 1
    assert fid(x, y) == pytest.approx((2 - 1) ** 2)
    assert fid(x, y + 3) == pytest.approx(9 + 1)


def test_fid_streaming_stats_equal_full_set(feats):
    a, b, _ = feats
    chunked = feature_stats([a[:37], a[37:250], a[250:]])
    assert np.allclose(chunked.mean, a.mean(0)) and np.allclose(chunked.cov, np.cov(a, rowvar=False))
    merged = FeatureStats(a.shape[1]).update(a[:100] + 1e3) + FeatureStats(a.shape[1]).update(a[100:] + 1e3)
    assert np.allclose(merged.cov, np.cov(a, rowvar=False), atol=1e-8)
    assert fid(chunked, FeatureStats(12).update(b)) == pytest.approx(fid(a, b), rel=1e-9)
    # averaging per-shard FIDs (the authors' memory-saving mode) is *not* the full-set FID
    shard = np.mean([fid(a[i::4], b[i::4]) for i in range(4)])
    assert shard > fid(a, b) * 1.05


def test_fid_singular_covariance_is_finite():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(6, 40)), rng.normal(size=(6, 40))  # 6 images, 40-d: both covariances singular
    v = fid(x, y)
    assert math.isfinite(v) and v > 0
    assert fid(x, y, method="eigvals") == pytest.approx(v, rel=1e-3)


def test_fid_input_errors(feats):
    a, _, _ = feats
    with pytest.raises(DataFormatError, match="different dimensions"):
        fid(a, a[:, :5])
    with pytest.raises(DataFormatError, match="at least 2"):
        fid(a[:1], a)
    with pytest.raises(DataFormatError, match="NaN"):
        fid(np.full((3, 2), np.nan), a[:, :2])
    with pytest.raises(ParamsError, match="method"):
        fid(a, a, method="svd")


# --- KID -----------------------------------------------------------------------------------------

def test_mmd2_unbiased_by_explicit_loops():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)) + 1
    k = lambda u, v: (u @ v / 3 + 1) ** 3  # noqa: E731
    xx = sum(k(x[i], x[j]) for i in range(5) for j in range(5) if i != j) / (5 * 4)
    yy = sum(k(y[i], y[j]) for i in range(4) for j in range(4) if i != j) / (4 * 3)
    xy = sum(k(x[i], y[j]) for i in range(5) for j in range(4)) / (5 * 4)
    assert mmd2_unbiased(x, y) == pytest.approx(xx + yy - 2 * xy)


def test_kid_self_near_zero_noise_large(feats):
    a, b, noise = feats
    a_std = (a - a.mean(0)) / a.std(0)
    b_std = (b - a.mean(0)) / a.std(0)
    n_std = (noise - a.mean(0)) / a.std(0)
    same = kid(a_std[:200], a_std[200:], n_subsets=20, subset_size=100, seed=0)
    far = kid(a_std, n_std, n_subsets=20, subset_size=100, seed=0)
    assert abs(same.mean) < 0.1 * far.mean
    assert far.mean > 3 * far.std > 0
    assert kid(a_std, b_std + 1.0, n_subsets=20, subset_size=100, seed=0).mean > 3 * abs(same.mean)
    # CheXGenBench's subset size min(n_real, n_synth): every subset is the whole set, std 0
    whole = kid(a_std, n_std, n_subsets=3, subset_size=None)
    assert whole.subset_size == 400 and whole.std == pytest.approx(0.0, abs=1e-12)
    assert whole.mean == pytest.approx(mmd2_unbiased(a_std, n_std))


def test_kid_seeded():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(50, 4)), rng.normal(size=(60, 4))
    r1, r2 = kid(x, y, n_subsets=5, subset_size=20, seed=7), kid(x, y, n_subsets=5, subset_size=20, seed=7)
    assert r1 == r2 and float(r1) == r1.mean
    assert kid(x, y, n_subsets=5, subset_size=20, seed=8).mean != r1.mean
    assert r1.subset_size == 20 and kid(x, y, subset_size=1000, n_subsets=1).subset_size == 50


# --- PRDC ----------------------------------------------------------------------------------------

def test_prdc_hand_checked_2d():
    # k = 1. Real: r0 (0,0), r1 (1,0), r2 (0,1), r3 (8,0); distance to nearest other real: 1, 1, 1, 7.
    # Synthetic: s0 (0.2,0.2), s1 (0.9,0.1), s2 (-3,-3); nearest other synthetic: 0.707, 0.707, 4.525.
    # Real balls holding each synthetic: s0 in r0 (0.283), r1 (0.825), r2 (0.825) -> 3;
    #   s1 in r0 (0.906), r1 (0.141); not r2 (1.273), not r3 (7.1007 > 7) -> 2; s2 in none -> 0.
    #   precision = 2/3, density = (3 + 2 + 0) / (1 * 3) = 5/3.
    # Recall: r0 within 0.707 of s0 (0.283) yes; r1 of s1 (0.141) yes; r2: 0.825 / 1.273 / 5 (vs 4.525) no;
    #   r3: 7.8 / 7.1 / 11.4 no -> 2/4. Coverage: nearest synthetic closer than own radius:
    #   r0 0.283 < 1, r1 0.141 < 1, r2 0.825 < 1, r3 7.1007 > 7 -> 3/4.
    real = np.array([[0, 0], [1, 0], [0, 1], [8, 0]], float)
    synth = np.array([[0.2, 0.2], [0.9, 0.1], [-3, -3]], float)
    out = prdc(real, synth, nearest_k=1)
    assert out == pytest.approx({"precision": 2 / 3, "recall": 0.5, "density": 5 / 3, "coverage": 0.75})
    assert prdc(real, synth, nearest_k=1, block=1) == pytest.approx(out)  # blocking changes nothing


def prdc_reference(real, fake, k):
    """prdc==0.2's compute_prdc, with sklearn's pairwise_distances replaced by scipy's cdist."""
    def kth(d, kk):
        idx = np.argpartition(d, kk, axis=-1)[..., :kk]
        return np.take_along_axis(d, idx, axis=-1).max(axis=-1)

    rr, ff = kth(cdist(real, real), k + 1), kth(cdist(fake, fake), k + 1)
    d = cdist(real, fake)
    return {"precision": (d < rr[:, None]).any(axis=0).mean(), "recall": (d < ff[None, :]).any(axis=1).mean(),
            "density": (1 / k) * (d < rr[:, None]).sum(axis=0).mean(), "coverage": (d.min(axis=1) < rr).mean()}


def test_prdc_matches_prdc_package_formulas(feats):
    a, b, noise = feats
    for y in (a[::-1] + 0.01, b, noise):
        assert prdc(a, y, nearest_k=5, block=64) == pytest.approx(prdc_reference(a, y, 5))
    same = prdc(a, a)
    assert same["precision"] == 1 and same["recall"] == 1 and same["coverage"] == 1


def test_prdc_too_few_rows():
    with pytest.raises(DataFormatError, match="at least 6"):
        prdc(np.zeros((5, 2)), np.zeros((10, 2)), nearest_k=5)


# --- per-label -----------------------------------------------------------------------------------

def test_per_label_fidelity(feats):
    a, b, _ = feats
    real_labels = pd.DataFrame({"Edema": [1] * 200 + [0] * 200, "Fracture": [0] * 398 + [1, 1], "Other": [-1] * 400})
    synth_labels = [["Edema"] if i % 2 else [] for i in range(400)]
    synth_labels[0] = ["Fracture"]
    out = per_label_fidelity(a, real_labels, b, synth_labels, metrics=("fid", "kid", "precision"),
                             labels=["Edema", "Fracture", "Other"], kid_kwargs={"n_subsets": 2, "subset_size": 50})
    row = out.set_index("label")
    assert list(out.columns) == ["label", "n_real", "n_synth", "fid", "kid", "precision", "note"]
    assert row.loc["Edema", "n_real"] == 200 and row.loc["Edema", "n_synth"] == 200
    assert row.loc["Edema", "fid"] == pytest.approx(fid(a[:200], b[1::2]))
    assert row.loc["Edema", "precision"] == pytest.approx(prdc(a[:200], b[1::2])["precision"])
    assert math.isnan(row.loc["Fracture", "fid"]) and "fewer than 2" in row.loc["Fracture", "note"]
    assert row.loc["Other", "n_real"] == 0  # -1 (uncertain) is not positive
    with pytest.raises(ParamsError, match="Unknown fidelity metric"):
        per_label_fidelity(a, real_labels, b, synth_labels, metrics=("is",))


# --- privacy -------------------------------------------------------------------------------------

def test_pixel_distance_uint8_no_wraparound():
    a = np.full((4, 4), 3, np.uint8)
    b = np.full((4, 4), 5, np.uint8)
    assert int((a - b)[0, 0]) == 254  # what the authors' uint8 subtraction gives
    assert pixel_distance(a, b) == pytest.approx(2 / 255)
    assert pixel_distance(b, a) == pytest.approx(2 / 255)
    assert pixel_distance(np.zeros((3, 3), np.uint8), np.full((3, 3), 255, np.uint8)) == pytest.approx(1.0)
    # half the pixels differ by 51/255 = 0.2: sqrt(0.5 * 0.04)
    c = a.copy()
    c[:2] = 54
    assert pixel_distance(a, c) == pytest.approx(math.sqrt(0.5 * 0.2 ** 2))
    # RGB copies of a grayscale image and 16-bit images land on the same [0, 1] scale
    assert pixel_distance(np.stack([a] * 3, axis=2), b) == pytest.approx(2 / 255)
    assert pixel_distance(a.astype(np.uint16) * 257, b) == pytest.approx(2 / 255)
    with pytest.raises(DataFormatError, match="size"):
        pixel_distance(a, np.zeros((5, 5), np.uint8))
    assert pixel_distance(a, np.full((8, 8), 5, np.uint8), size=4) == pytest.approx(2 / 255, abs=1e-6)


def test_as_float_image_from_files(tmp_path):
    from PIL import Image

    arr = (np.arange(64).reshape(8, 8) * 4).astype(np.uint8)
    Image.fromarray(arr).save(tmp_path / "a.png")
    Image.fromarray(arr).convert("RGB").save(tmp_path / "rgb.png")
    Image.fromarray(arr.astype(np.uint16) * 257).save(tmp_path / "a16.png")
    for name in ("a.png", "rgb.png", "a16.png"):
        assert np.allclose(as_float_image(tmp_path / name), arr / 255.0, atol=1e-9), name


def test_latent_distance():
    assert latent_distance([0, 0, 0, 0], [1, 1, 1, 1]) == pytest.approx(1.0)  # ‖(1,1,1,1)‖ / √4
    assert np.allclose(latent_distance(np.zeros((2, 9)), np.full((2, 9), 3.0)), [3.0, 3.0])


def test_reid_scores_validation():
    assert np.allclose(reid_scores(lambda a, b: [0.2] * len(a), [1, 2], [3, 4]), [0.2, 0.2])
    with pytest.raises(DataFormatError, match="outside"):
        reid_scores(lambda a, b: [1.5, 0.1], [1, 2], [3, 4])
    with pytest.raises(DataFormatError, match="returned 1"):
        reid_scores(lambda a, b: [0.1], [1, 2], [3, 4])


def _images():
    rng = np.random.default_rng(5)
    train = [rng.integers(0, 256, size=(16, 16), dtype=np.uint8) for _ in range(3)]
    # prompt 0: seed 0 memorised (exact copy), seed 1 new; prompt 1: two noisy; prompt 2: a copy of train[0]
    synth = [train[0].copy(), rng.integers(0, 256, size=(16, 16), dtype=np.uint8),
             np.clip(train[1].astype(int) + 10, 0, 255).astype(np.uint8), train[1][::-1].copy(), train[0].copy()]
    return train, synth, [0, 0, 1, 1, 2]


def _scorer(real, synth):
    # a stand-in Siamese network: 1 − pixel distance, so an exact copy scores 1
    return [1.0 - pixel_distance(r, s) for r, s in zip(real, synth)]


def test_privacy_pairs_own_image_each_seed():
    train, synth, idx = _images()
    pairs = privacy_pairs(train, synth, idx, scorer=_scorer, size=None, batch_size=2,
                          train_features=np.eye(3, 4), synth_features=np.eye(3, 4)[idx])
    assert list(pairs["seed"]) == [0, 1, 0, 1, 0]
    # every seed is compared with its own generation (not the last one) and its own prompt's image
    assert pairs["pixel_distance"][0] == 0 and pairs["pixel_distance"][1] > 0.2
    assert pairs["pixel_distance"][2] == pytest.approx(10 / 255, abs=0.01)
    assert pairs["pixel_distance"][4] > 0.2  # prompt 2's own image is train[2], not the copied train[0]
    assert np.allclose(pairs["latent_distance"], 0) and pairs["reid"][0] == pytest.approx(1.0)
    nearest = privacy_pairs(train, synth, idx, scorer=_scorer, size=None, reference="nearest", batch_size=2)
    assert nearest["pixel_distance"][4] == 0 and nearest["pixel_index"][4] == 0 and nearest["reid_index"][4] == 0
    assert nearest["reid"][4] == pytest.approx(1.0) and nearest["latent_distance"].isna().all()
    assert (nearest["pixel_distance"] <= pairs["pixel_distance"] + 1e-12).all()


def test_privacy_summary_delta_count():
    pairs = pd.DataFrame({
        "prompt": ["a", "a", "b", "b", "c", "c", "d", "d"],
        "reid": [0.10, 0.90, 0.85, 0.20, 0.86, 0.99, 0.30, 0.40],
        "pixel_distance": [0.5, 0.1, 0.4, 0.3, 0.2, 0.6, 0.7, 0.9],
        "latent_distance": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
    })
    pp = per_prompt_privacy(pairs).set_index("prompt")
    assert list(pp["max_reid"]) == [0.90, 0.85, 0.99, 0.40]
    s = privacy_summary(pairs)
    # per-prompt maxima 0.90, 0.85, 0.99, 0.40: above δ = 0.85 (strictly): a and c -> 2 (b's 0.85 is not)
    assert s["count_reid_above_delta"] == 2 and s["fraction_reid_above_delta"] == 0.5
    assert s["avg_reid"] == pytest.approx((0.90 + 0.85 + 0.99 + 0.40) / 4)
    assert s["max_reid"] == 0.99
    assert s["avg_pixel_distance"] == pytest.approx((0.1 + 0.3 + 0.2 + 0.7) / 4)
    assert s["avg_latent_distance"] == pytest.approx((1 + 3 + 5 + 7) / 4)
    assert s["n_prompts"] == 4 and s["n_images"] == 8
    m = privacy_summary(pairs, per_prompt="mean")
    assert m["avg_reid"] == pytest.approx(pairs["reid"].mean()) and m["count_reid_above_delta"] == 2
    assert privacy_summary(pairs, delta=0.5)["count_reid_above_delta"] == 3
    assert privacy_summary(pp.reset_index()) == s


# --- rankings ------------------------------------------------------------------------------------

def test_rank_table_ties_and_average():
    scores = pd.DataFrame({"FID (RadDino)": [50.0, 70.0, 70.0, 120.0], "recall": [0.6, 0.5, 0.1, 0.5],
                           "precision": [0.7, np.nan, 0.8, 0.4]}, index=["Sana", "RadEdit", "LLM-CXR", "SD"])
    r = rank_table(scores)
    # FID (lower better): 50 -> 1, 70 and 70 share ranks 2 and 3 -> 2.5 each, 120 -> 4
    assert list(r["FID (RadDino)"]) == [1, 2.5, 2.5, 4]
    # recall (higher better): 0.6 -> 1, 0.5 twice -> 2.5, 0.1 -> 4
    assert list(r["recall"]) == [1, 2.5, 4, 2.5]
    # precision: RadEdit missing -> NaN; 0.8 -> 1, 0.7 -> 2, 0.4 -> 3
    assert r.loc["RadEdit", "precision"] != r.loc["RadEdit", "precision"] and r.loc["LLM-CXR", "precision"] == 1
    assert r.loc["Sana", "average_rank"] == pytest.approx((1 + 1 + 2) / 3)
    assert r.loc["RadEdit", "average_rank"] == pytest.approx(2.5) and r.loc["RadEdit", "n_metrics"] == 2
    assert r.loc["LLM-CXR", "average_rank"] == pytest.approx(7.5 / 3) and r.loc["SD", "average_rank"] == pytest.approx(9.5 / 3)
    # averages 1.333, 2.5, 2.5, 3.167 -> overall 1, 2.5, 2.5, 4
    assert list(r["overall_rank"]) == [1, 2.5, 2.5, 4]
    assert list(rank_table(scores, ties="min")["FID (RadDino)"]) == [1, 2, 2, 4]
    with pytest.raises(ParamsError, match="No direction"):
        rank_table(pd.DataFrame({"mystery": [1, 2]}))
    assert list(rank_table(pd.DataFrame({"mystery": [1, 2]}), higher_is_better={"mystery": True})["mystery"]) == [2, 1]


def test_rank_correlation():
    fidelity = pd.Series([1, 2, 3, 4, 5], index=list("abcde"))
    utility = pd.Series([2, 1, 3, 5, 4, 9], index=list("bacedz"))  # 'z' has no fidelity rank: dropped
    res = rank_correlation(fidelity, utility)
    assert res["n"] == 5 and res["spearman"] == pytest.approx(1.0)
    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    res = rank_correlation(x, y)
    assert res["spearman"] == pytest.approx(1 - 6 * 6 / (6 * 35))  # Σd² = 6
    assert res["spearman"] == pytest.approx(sps.spearmanr(x, y).statistic)
    tied = rank_correlation([1, 2, 2, 4], [1, 3, 2, 4])
    assert tied["spearman"] == pytest.approx(sps.spearmanr([1, 2, 2, 4], [1, 3, 2, 4]).statistic)
    assert math.isnan(rank_correlation([1, 2], [2, 1])["spearman"])


# --- batched feature extraction ------------------------------------------------------------------

class CountingEncoder:
    """A cheap deterministic encoder that records the batches it sees."""

    name, dim = "counting", 3

    def __init__(self):
        self.batches = []

    def embed(self, images, batch_size=None):
        self.batches.append(len(images))
        rows = []
        for im in images:
            x = as_float_image(im)
            rows.append([x.mean(), x.std(), x[0, 0]])
        return np.asarray(rows, np.float32)


def test_extractor_batching_same_as_one_batch():
    rng = np.random.default_rng(6)
    stack = rng.integers(0, 256, size=(11, 8, 8), dtype=np.uint8)
    enc = CountingEncoder()
    one = extract_features(enc, list(stack), batch_size=64)
    assert enc.batches == [11]
    enc.batches.clear()
    many = extract_features(enc, stack, batch_size=4)
    assert enc.batches == [4, 4, 3] and np.array_equal(one, many)
    pulled = []

    def lazy():
        for i, im in enumerate(stack):
            pulled.append(i)
            yield im

    it = iter_features(enc, lazy(), batch_size=3)
    next(it)
    assert pulled == [0, 1, 2]  # only one batch of images has been read
    assert np.array_equal(np.concatenate([next(iter_features(enc, stack[:3], 3)), *it]), one)
    assert np.array_equal(extract_features(enc, lazy(), batch_size=5), one)
    assert extract_features(enc, [], batch_size=2).shape == (0, 3)
    with pytest.raises(ParamsError, match="batch_size"):
        extract_features(enc, stack, batch_size=0)
    with pytest.raises(ParamsError, match="not a single image"):
        extract_features(enc, "image.png")


@pytest.mark.long
def test_extractor_inception_batches(tmp_path):
    from radaudit.models.encoders import InceptionFIDEncoder

    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(7)
    paths = []
    for i in range(3):
        from PIL import Image

        p = tmp_path / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, size=(40, 48), dtype=np.uint8)).save(p)
        paths.append(p)
    enc = InceptionFIDEncoder()
    one = extract_features(enc, paths, batch_size=3)
    many = extract_features(enc, paths, batch_size=2)
    assert one.shape == (3, 2048) and one.dtype == np.float32
    assert np.allclose(one, many, atol=1e-4, rtol=1e-4)
