"""radaudit.models.cxr_nets: image inputs, the three network wrappers, the paper adapters.

No training here (see tests/audits/test_synthetic_cxr_models.py): networks are random, built from
configs with a seed, saved and reloaded through the real ``from_pretrained`` path.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from PIL import Image  # noqa: E402

from radaudit.errors import DataFormatError, ParamsError  # noqa: E402
from radaudit.models import cxr_nets as cn  # noqa: E402
from radaudit.models.resolver import ModelUnavailableError  # noqa: E402

TINY = {"embedding_size": 8, "hidden_sizes": [8, 16, 16, 32], "depths": [1, 1, 1, 1], "layer_type": "basic",
        "image_size": 32}



def _rng_images(n: int, size: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, size, size), dtype=np.float32)


def _encoder(seed: int = 0):
    torch.manual_seed(seed)
    return cn.CXREncoderModel(cn.CXREncoderConfig(label_names=["A", "B"], view_names=["PA", "LATERAL"], **TINY)).eval()


# --- image inputs -------------------------------------------------------------------------------------

def test_to_gray_float_scales_by_dtype_and_never_minmax_stretches():
    u8 = np.array([[0, 51], [102, 255]], dtype=np.uint8)
    assert np.allclose(cn.to_gray_float(u8), [[0, 0.2], [0.4, 1.0]])
    u16 = np.array([[0, 65535]], dtype=np.uint16)
    assert np.allclose(cn.to_gray_float(u16), [[0, 1]])
    dim = np.full((4, 4), 0.3, dtype=np.float32)
    dim[0, 0] = 0.5
    out = cn.to_gray_float(dim)  # a dim float image stays dim: no per-image min-max
    assert out.max() == pytest.approx(0.5) and out.min() == pytest.approx(0.3)
    rgb = np.zeros((2, 2, 3), dtype=np.uint8)
    rgb[..., 0] = 255  # mean of channels: 1/3
    assert np.allclose(cn.to_gray_float(rgb), 1 / 3)
    assert cn.to_gray_float(np.array([[-0.5, 1.5]])).tolist() == [[0.0, 1.0]]  # float clipped to [0, 1]


def test_to_gray_float_errors():
    with pytest.raises(DataFormatError, match="NaN"):
        cn.to_gray_float(np.array([[np.nan, 0.0]]))
    with pytest.raises(DataFormatError, match=r"\[H, W\]"):
        cn.to_gray_float(np.zeros((2, 2, 2, 2)))
    with pytest.raises(ParamsError, match="path, a PIL.Image or a numpy array"):
        cn.to_gray_float(3.0)


def test_prepare_images_crop_squash_and_input_kinds_agree(tmp_path):
    # a 2x4 image with distinct columns: centre crop keeps columns 1 and 2
    arr = np.array([[0, 50, 100, 150], [0, 50, 100, 150]], dtype=np.uint8)
    crop = cn.prepare_images([arr], 2, resize="center_crop")
    assert crop.shape == (1, 1, 2, 2) and crop.dtype == torch.float32
    assert np.allclose(crop[0, 0].numpy(), [[50 / 255, 100 / 255]] * 2)
    squash = cn.prepare_images([arr], 2, resize="squash")
    assert not torch.allclose(crop, squash)  # squash keeps the outer columns' content
    # a path, a PIL image and the uint8 array give the same input; gray replicated to 3 channels
    big = (np.random.default_rng(0).random((40, 30)) * 255).astype(np.uint8)
    path = tmp_path / "x.png"
    Image.fromarray(big).save(path)
    a = cn.prepare_images([path], 16, channels=3)
    b = cn.prepare_images([Image.fromarray(big)], 16, channels=3)
    c = cn.prepare_images([big], 16, channels=3)
    assert a.shape == (1, 3, 16, 16) and torch.equal(a, b) and torch.equal(a[:, 0], a[:, 2])
    assert torch.allclose(a, c, atol=1.5 / 255)  # 8-bit vs float resampling
    # an [N, S, S] float set at the right size passes through unchanged
    x = _rng_images(3, 16)
    assert np.array_equal(cn.prepare_images(x, 16)[:, 0].numpy(), x)
    # bicubic (the demo networks, as the experiment's loader): central square, PIL bicubic on 8 bits, / 255
    bic = cn.prepare_images([path], 16, resample="bicubic")
    hand = np.asarray(Image.fromarray(big).crop((0, 5, 30, 35)).resize((16, 16), Image.BICUBIC), dtype=np.float32) / 255
    assert np.array_equal(bic[0, 0].numpy(), hand) and not torch.equal(bic, a[:, :1])


def test_prepare_images_rejects_a_single_image_and_bad_policy():
    with pytest.raises(ParamsError, match="not a single image"):
        cn.prepare_images("img.png", 16)
    with pytest.raises(ParamsError, match=r"\[N, H, W\]"):
        cn.prepare_images(np.zeros((16, 16), dtype=np.float32), 16)
    with pytest.raises(ParamsError, match="resize must be one of"):
        cn.prepare_images(_rng_images(1, 16), 16, resize="pad")
    with pytest.raises(ParamsError, match="resample must be one of"):
        cn.prepare_images(_rng_images(1, 16), 16, resample="lanczos")


# --- the encoder -----------------------------------------------------------------------------------------

def test_cxr_encoder_shapes_batches_seed_and_round_trip(tmp_path):
    x = _rng_images(5)
    model = _encoder(seed=0)
    enc = cn.CXREncoder(model, device="cpu")
    feats = enc.embed(x)
    assert feats.shape == (5, 32) and feats.dtype == np.float32 and enc.dim == 32
    assert np.allclose(enc.embed(x, batch_size=2), feats, atol=1e-6)  # batching does not change features
    assert np.array_equal(cn.CXREncoder(_encoder(seed=0)).embed(x), feats)  # same seed, same weights
    assert not np.allclose(cn.CXREncoder(_encoder(seed=1)).embed(x), feats)
    assert cn.CXREncoder(model).embed(np.zeros((0, 32, 32), np.float32)).shape == (0, 32)
    model.save_pretrained(tmp_path / "enc")
    assert cn.is_cxr_encoder_folder(tmp_path / "enc") and not cn.is_cxr_encoder_folder(tmp_path)
    reloaded = cn.cxr_encoder(tmp_path / "enc", device="cpu")
    assert np.array_equal(reloaded.embed(x), feats)
    assert reloaded.name == "cxr-encoder:enc" and reloaded.describe()["dim"] == 32
    # the ImageEncoder protocol
    from radaudit.models.encoders import ImageEncoder

    assert isinstance(reloaded, ImageEncoder)


def test_cxr_encoder_paths_equal_arrays(tmp_path):
    x8 = (_rng_images(3, 32, seed=2) * 255).round().astype(np.uint8)
    paths = []
    for i, a in enumerate(x8):
        paths.append(tmp_path / f"{i}.png")
        Image.fromarray(a).save(paths[-1])
    enc = cn.CXREncoder(_encoder())
    assert np.allclose(enc.embed(paths), enc.embed(x8.astype(np.float32) / 255.0), atol=1e-5)


def test_load_cxr_model_errors(tmp_path):
    with pytest.raises(ModelUnavailableError, match="no config.json"):
        cn.load_cxr_model(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ModelUnavailableError, match="'bert' model"):
        cn.load_cxr_model(tmp_path)
    _encoder().save_pretrained(tmp_path / "enc")
    with pytest.raises(ModelUnavailableError, match="needed here"):
        cn.SiameseScorer(tmp_path / "enc")
    with pytest.raises(ParamsError, match="Expected a CXREncoderModel"):
        cn.CXREncoder(object())


# --- alignment ----------------------------------------------------------------------------------------------

class _StubText:
    """A frozen 'sentence encoder': a fixed unit vector per distinct caption."""

    def embed(self, texts):
        out = []
        for t in texts:
            v = np.random.default_rng(sum(map(ord, t))).normal(size=12).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


def _clip(seed: int = 0):
    torch.manual_seed(seed)
    return cn.CXRClipModel(cn.CXRClipConfig(text_dim=12, proj_dim=8, text_hidden=16, **TINY)).eval()


def test_clip_alignment_is_the_cosine_of_the_projections():
    model = _clip()
    align = cn.ClipAlignment(model, text_encoder=_StubText())
    x = _rng_images(4)
    caps = ["PA chest X-ray: COVID-19", "LATERAL chest X-ray: COVID-19", "PA chest X-ray: COVID-19", "x"]
    s = align.score(x, caps)
    assert s.shape == (4,) and s.dtype == np.float64 and np.all(np.abs(s) <= 1.0)
    with torch.no_grad():
        img = model.image_embeds(cn.prepare_images(x, 32)).numpy()
        txt = model.text_embeds(torch.from_numpy(_StubText().embed(caps))).numpy()
    hand = (img * txt).sum(1) / np.linalg.norm(img, axis=1) / np.linalg.norm(txt, axis=1)
    assert np.allclose(s, hand, atol=1e-5)
    assert np.allclose(cn.alignment_scores(align, x, caps), s)


def test_alignment_errors():
    align = cn.ClipAlignment(_clip(), text_encoder=_StubText())
    with pytest.raises(DataFormatError, match="2 images but 1 captions"):
        align.score(_rng_images(2), ["a"])
    with pytest.raises(ParamsError, match="not a single string"):
        align.score(_rng_images(1), "a")


def test_clip_round_trip_with_the_pypi_text_encoder(tmp_path, pypi_minilm):
    torch.manual_seed(0)
    model = cn.CXRClipModel(cn.CXRClipConfig(proj_dim=8, text_hidden=16, **TINY)).eval()  # text_dim 384 = MiniLM
    model.save_pretrained(tmp_path / "clip")
    x = _rng_images(3)
    caps = ["PA chest X-ray: COVID-19", "LATERAL chest X-ray: No Finding", "AP chest X-ray: ARDS"]
    a = cn.alignment_scores(tmp_path / "clip", x, caps)
    b = cn.ClipAlignment(model).score(x, caps)
    assert np.allclose(a, b, atol=1e-6) and np.all(np.abs(a) <= 1)
    reloaded = cn.load_cxr_model(tmp_path / "clip")
    assert float(reloaded.logit_scale.detach()) == pytest.approx(float(model.logit_scale.detach()))


def test_biovilt_missing_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "health_multimodal", None)  # import fails
    monkeypatch.setitem(sys.modules, "health_multimodal.image", None)
    with pytest.raises(ModelUnavailableError, match="pip install hi-ml-multimodal"):
        cn.BioViLTAlignment()


def test_biovilt_adapter_calls_hi_ml_per_pair_with_files(monkeypatch, tmp_path):
    calls = []

    class Engine:
        def __init__(self, image_inference_engine, text_inference_engine):
            self.parts = (image_inference_engine, text_inference_engine)

        def to(self, device):
            calls.append(("to", device))

        def get_similarity_score_from_raw_data(self, image_path, query_text):
            arr = np.asarray(Image.open(image_path), dtype=np.float64) / 255.0
            calls.append((Path(image_path), query_text))
            return float(arr.mean()) * (1 if "COVID" in query_text else -1)

    pkg = types.ModuleType("health_multimodal")
    for sub, attrs in (("image", {"get_image_inference": lambda: "image-engine"}),
                       ("text", {"get_bert_inference": lambda: "text-engine"}),
                       ("vlp", {"ImageTextInferenceEngine": Engine})):
        mod = types.ModuleType(f"health_multimodal.{sub}")
        for k, v in attrs.items():
            setattr(mod, k, v)
        monkeypatch.setitem(sys.modules, f"health_multimodal.{sub}", mod)
        setattr(pkg, sub, mod)
    monkeypatch.setitem(sys.modules, "health_multimodal", pkg)
    align = cn.BioViLTAlignment(device="cpu")
    assert align.engine.parts == ("image-engine", "text-engine") and calls[0] == ("to", "cpu")
    on_disk = tmp_path / "real.png"
    Image.fromarray(np.full((8, 8), 255, dtype=np.uint8)).save(on_disk)
    images = [np.full((8, 8), 0.2, dtype=np.float32), on_disk]
    s = cn.alignment_scores(align, images, ["PA: COVID-19", "PA: No Finding"])
    assert s[0] == pytest.approx(51 / 255) and s[1] == pytest.approx(-1.0)
    assert calls[2][0] == on_disk and calls[1][1] == "PA: COVID-19"  # paths passed as they are


# --- Siamese re-ID ------------------------------------------------------------------------------------------

def _siamese(seed: int = 0, monotone: bool = False):
    torch.manual_seed(seed)
    cfg = cn.SiameseReIDConfig(n_features=16, monotone_head=monotone, resize="center_crop", num_channels=1, **TINY)
    return cn.SiameseReIDModel(cfg).eval()


def test_siamese_scorer_probabilities_symmetry_batches_round_trip(tmp_path):
    model = _siamese()
    scorer = cn.SiameseScorer(model, batch_size=2)
    a, b = _rng_images(5, seed=0), _rng_images(5, seed=1)
    s = scorer(a, b)
    assert s.shape == (5,) and s.dtype == np.float64 and np.all((s >= 0) & (s <= 1))
    assert np.allclose(scorer(b, a), s, atol=1e-6)  # |e1 - e2| is symmetric
    assert np.allclose(scorer(a, b, batch_size=5), s, atol=1e-6)
    # the PairScorer contract of the privacy metrics
    from radaudit.metrics.image.privacy import reid_scores

    assert np.allclose(reid_scores(scorer, list(a), list(b)), s)
    model.save_pretrained(tmp_path / "reid")
    # same weights and the same batch size give the same bits (batch 2 vs 32 differ by ~1e-9 in float32 kernels)
    assert np.array_equal(cn.SiameseScorer(tmp_path / "reid", batch_size=2)(a, b), s)
    with pytest.raises(DataFormatError, match="pairs must match"):
        scorer(a, b[:3])


def test_monotone_head_gives_an_identical_pair_the_highest_score():
    model = _siamese(seed=3, monotone=True)
    scorer = cn.SiameseScorer(model)
    x = _rng_images(6, seed=4)
    same = scorer(x, x)
    others = scorer(np.repeat(x[:1], 5, axis=0), x[1:])
    assert np.allclose(same, same[0]) and np.all(others <= same[0] + 1e-12)
    with torch.no_grad():  # score(x, x) = sigmoid(bias): the head's maximum
        assert same[0] == pytest.approx(float(torch.sigmoid(model.fc_end.bias)), abs=1e-6)


# --- the authors' checkpoint: torchvision names -> transformers ResNet --------------------------------------

def _torchvision_shapes(depths, widths, in_ch, stem, n_features, bottleneck=True):
    """The torchvision ResNet Siamese state_dict's names and shapes, written out from torchvision's rules."""
    shapes = {"model.conv1.weight": (stem, in_ch, 7, 7)}
    for p in ("weight", "bias", "running_mean", "running_var"):
        shapes[f"model.bn1.{p}"] = (stem,)
    shapes["model.bn1.num_batches_tracked"] = ()
    inplanes = stem
    for s, (depth, out) in enumerate(zip(depths, widths)):
        mid = out // 4 if bottleneck else out
        for b in range(depth):
            pre = f"model.layer{s + 1}.{b}"
            cin = inplanes if b == 0 else out
            convs = [(mid, cin, 1, 1), (mid, mid, 3, 3), (out, mid, 1, 1)] if bottleneck else \
                [(out, cin, 3, 3), (out, out, 3, 3)]
            for k, shp in enumerate(convs, start=1):
                shapes[f"{pre}.conv{k}.weight"] = shp
                for p in ("weight", "bias", "running_mean", "running_var"):
                    shapes[f"{pre}.bn{k}.{p}"] = (shp[0],)
                shapes[f"{pre}.bn{k}.num_batches_tracked"] = ()
            if b == 0 and (cin != out or s > 0):
                shapes[f"{pre}.downsample.0.weight"] = (out, cin, 1, 1)
                for p in ("weight", "bias", "running_mean", "running_var"):
                    shapes[f"{pre}.downsample.1.{p}"] = (out,)
                shapes[f"{pre}.downsample.1.num_batches_tracked"] = ()
        inplanes = out
    shapes["model.fc.weight"] = (n_features, widths[-1])
    shapes["model.fc.bias"] = (n_features,)
    shapes["fc_end.weight"] = (1, n_features)
    shapes["fc_end.bias"] = (1,)
    return shapes


def _random_state(shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for k, shp in shapes.items():
        if k.endswith("num_batches_tracked"):
            sd[k] = torch.tensor(7)
        elif k.endswith("running_var"):
            sd[k] = 0.5 + torch.rand(shp, generator=g)
        elif k.endswith("running_mean") or k.endswith(".bias"):
            sd[k] = 0.1 * torch.randn(shp, generator=g)
        elif ".bn" in k or "bn1" in k or "downsample.1" in k:
            sd[k] = 1.0 + 0.1 * torch.randn(shp, generator=g)
        else:
            fan_in = int(np.prod(shp[1:])) if len(shp) > 1 else 1
            sd[k] = torch.randn(shp, generator=g) * (1.0 / np.sqrt(fan_in))
    return sd


def test_resnet50_key_map_is_a_bijection_with_matching_shapes():
    mapping = cn.torchvision_resnet_key_map()  # ResNet-50 defaults
    assert len(mapping) == 318  # 53 convs + 53 batch-norms x 5 entries (torchvision's 320 minus fc)
    tv = _torchvision_shapes([3, 4, 6, 3], [256, 512, 1024, 2048], 3, 64, 128)
    assert set(f"model.{k}" for k in mapping) == set(tv) - {"model.fc.weight", "model.fc.bias", "fc_end.weight",
                                                             "fc_end.bias"}
    from transformers import ResNetConfig, ResNetModel

    with torch.device("meta"):
        hf = ResNetModel(ResNetConfig(layer_type="bottleneck", depths=[3, 4, 6, 3],
                                      hidden_sizes=[256, 512, 1024, 2048])).state_dict()
    assert set(mapping.values()) == set(hf)
    for k, v in mapping.items():
        assert tuple(hf[v].shape) == tv[f"model.{k}"], k
    assert mapping["layer1.0.downsample.0.weight"] == "encoder.stages.0.layers.0.shortcut.convolution.weight"
    assert mapping["layer4.2.bn3.running_var"] == "encoder.stages.3.layers.2.layer.2.normalization.running_var"


def _functional_torchvision_siamese(sd, x1, x2, depths, bottleneck=True):
    """The authors' SiameseNetwork forward written with torch.nn.functional on torchvision names (eval mode)."""
    def bn(x, pre):
        return F.batch_norm(x, sd[f"{pre}.running_mean"], sd[f"{pre}.running_var"], sd[f"{pre}.weight"],
                            sd[f"{pre}.bias"], training=False, eps=1e-5)

    def once(x):
        x = F.relu(bn(F.conv2d(x, sd["model.conv1.weight"], stride=2, padding=3), "model.bn1"))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        for s, depth in enumerate(depths):
            for b in range(depth):
                pre = f"model.layer{s + 1}.{b}"
                stride = 2 if (s > 0 and b == 0) else 1
                if bottleneck:  # torchvision v1.5: the stride sits on the 3x3 conv
                    y = F.relu(bn(F.conv2d(x, sd[f"{pre}.conv1.weight"]), f"{pre}.bn1"))
                    y = F.relu(bn(F.conv2d(y, sd[f"{pre}.conv2.weight"], stride=stride, padding=1), f"{pre}.bn2"))
                    y = bn(F.conv2d(y, sd[f"{pre}.conv3.weight"]), f"{pre}.bn3")
                else:
                    y = F.relu(bn(F.conv2d(x, sd[f"{pre}.conv1.weight"], stride=stride, padding=1), f"{pre}.bn1"))
                    y = bn(F.conv2d(y, sd[f"{pre}.conv2.weight"], padding=1), f"{pre}.bn2")
                ident = x
                if f"{pre}.downsample.0.weight" in sd:
                    ident = bn(F.conv2d(x, sd[f"{pre}.downsample.0.weight"], stride=stride), f"{pre}.downsample.1")
                x = F.relu(y + ident)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.sigmoid(F.linear(x, sd["model.fc.weight"], sd["model.fc.bias"]))

    diff = torch.abs(once(x1) - once(x2))
    return F.linear(diff, sd["fc_end.weight"], sd["fc_end.bias"]).squeeze(-1)


@pytest.mark.parametrize("bottleneck", [True, False])
def test_converted_checkpoint_matches_the_torchvision_computation(tmp_path, bottleneck):
    depths, widths = ([2, 1, 1, 1], [32, 64, 64, 128]) if bottleneck else ([2, 1, 1, 1], [8, 16, 16, 32])
    stem = 8
    sd = _random_state(_torchvision_shapes(depths, widths, 3, stem, 16, bottleneck), seed=1)
    path = tmp_path / "reid.pth"
    torch.save({f"module.{k}": v for k, v in sd.items()}, path)  # a DataParallel-style prefix
    model = cn.load_packhauser_reid(path, device="cpu")
    cfg = model.config
    assert (cfg.depths, cfg.hidden_sizes, cfg.n_features, cfg.num_channels, cfg.image_size, cfg.resize) == \
        (depths, widths, 16, 3, 224, "squash")
    assert cfg.layer_type == ("bottleneck" if bottleneck else "basic")
    g = torch.Generator().manual_seed(2)
    x1, x2 = torch.rand((2, 3, 64, 64), generator=g), torch.rand((2, 3, 64, 64), generator=g)
    with torch.no_grad():
        ours = model(x1, x2)
        ref = _functional_torchvision_siamese(sd, x1, x2, depths, bottleneck)
    assert torch.allclose(ours, ref, atol=1e-5)
    # the scorer's preprocessing: RGB replicated gray, Resize((224, 224)) of the whole image, [0, 1]
    img = (np.random.default_rng(3).random((2, 48, 80)) * 255).astype(np.uint8)
    s = cn.SiameseScorer(model)(list(img), list(img[::-1]))
    pre = torch.stack([torch.from_numpy(np.asarray(Image.fromarray(a).convert("RGB").resize((224, 224), Image.BILINEAR),
                                                    dtype=np.float32) / 255.0).permute(2, 0, 1) for a in img])
    with torch.no_grad():
        ref_s = torch.sigmoid(_functional_torchvision_siamese(sd, pre, pre.flip(0), depths, bottleneck)).numpy()
    assert np.allclose(s, ref_s, atol=1e-5)


def test_resnet50_checkpoint_loads_strictly(tmp_path):
    sd = _random_state(_torchvision_shapes([3, 4, 6, 3], [256, 512, 1024, 2048], 3, 64, 128), seed=0)
    sd = {k: v for k, v in sd.items() if not k.endswith("num_batches_tracked")}  # tolerated when absent
    path = tmp_path / "ResNet-50_epoch11_data_handling_RPN.pth"
    torch.save({"state_dict": sd}, path)  # a wrapped state_dict
    model = cn.load_packhauser_reid(path)
    assert model.config.depths == [3, 4, 6, 3] and model.config.hidden_sizes == [256, 512, 1024, 2048]
    assert model.config.layer_type == "bottleneck" and model.config.n_features == 128
    assert torch.equal(model.fc_end.weight, sd["fc_end.weight"])
    assert torch.equal(model.backbone.encoder.stages[2].layers[5].layer[1].convolution.weight,
                       sd["model.layer3.5.conv2.weight"])
    assert model.config.source.endswith("ResNet-50_epoch11_data_handling_RPN.pth")


def test_checkpoint_errors(tmp_path):
    with pytest.raises(ModelUnavailableError, match="raman07/Patient_ReIdentification_MIMIC"):
        cn.load_packhauser_reid(tmp_path / "missing.pth")
    bad = tmp_path / "bad.pth"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(DataFormatError, match="torch.load"):
        cn.load_packhauser_reid(bad)
    shapes = _torchvision_shapes([1, 1, 1, 1], [8, 16, 16, 32], 1, 8, 4, bottleneck=False)
    sd = _random_state(shapes)
    no_head = {k: v for k, v in sd.items() if not k.startswith("fc_end")}
    torch.save(no_head, tmp_path / "nohead.pth")
    with pytest.raises(DataFormatError, match="no Siamese head"):
        cn.load_packhauser_reid(tmp_path / "nohead.pth")
    torch.save({**sd, "model.extra.weight": torch.zeros(2)}, tmp_path / "extra.pth")
    with pytest.raises(DataFormatError, match="model.extra.weight"):
        cn.load_packhauser_reid(tmp_path / "extra.pth")
    torch.save({k: v for k, v in sd.items() if k != "model.layer2.0.conv1.weight"}, tmp_path / "missing_key.pth")
    with pytest.raises(DataFormatError, match="layer2.0.conv1.weight"):
        cn.load_packhauser_reid(tmp_path / "missing_key.pth")
    torch.save([1, 2, 3], tmp_path / "list.pth")
    with pytest.raises(DataFormatError, match="does not hold a state_dict"):
        cn.load_packhauser_reid(tmp_path / "list.pth")
