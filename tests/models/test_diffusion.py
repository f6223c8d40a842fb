"""Tests of radaudit.models.diffusion: the paper's pipeline settings, loading and sampling through real
diffusers pipelines (tiny random ones built offline and saved with save_pretrained), and the demo model
(tiny configurations: seconds, not quality)."""

from __future__ import annotations

import json
import string
import sys

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from radaudit.errors import DataFormatError, ParamsError, RadauditError
from radaudit.models import diffusion as M
from radaudit.models.resolver import ModelUnavailableError

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

TINY_HP = {"image_size": 16, "patch_size": 2, "block_out_channels": (8, 16), "norm_num_groups": 4,
           "attention_head_dim": 8, "steps": 3, "batch_size": 4, "warmup_steps": 1, "max_seconds": None}


# --- paper settings ------------------------------------------------------------------------------------

def test_pipeline_defaults_are_the_authors_constants():
    d = M.PIPELINE_DEFAULTS
    assert (d["radedit"]["steps"], d["radedit"]["guidance"]) == (100, 7.5)
    assert (d["sd1"]["steps"], d["sd1"]["guidance"]) == (d["sd2"]["steps"], d["sd2"]["guidance"]) == (50, 7.5)
    assert (d["sd3"]["steps"], d["sd3"]["guidance"], d["sd3"]["extra"]["max_sequence_length"]) == (40, 4.5, 512)
    assert (d["sana"]["steps"], d["sana"]["guidance"]) == (d["pixart"]["steps"], d["pixart"]["guidance"]) == (20, 4.5)
    assert (d["lumina"]["steps"], d["lumina"]["guidance"], d["lumina"]["extra"]["cfg_trunc_ratio"]) == (50, 4.0, 0.25)
    s = M.pipeline_settings("sd3", steps=10, max_sequence_length=256)
    assert s["steps"] == 10 and s["guidance"] == 4.5 and s["extra"] == {"max_sequence_length": 256}
    with pytest.raises(ParamsError, match="Unknown pipeline family 'dalle'"):
        M.pipeline_settings("dalle")


@pytest.mark.parametrize("model_id, family", [
    ("microsoft/radedit", "radedit"), ("stabilityai/stable-diffusion-3.5-medium", "sd3"),
    ("CompVis/stable-diffusion-v1-4", "sd1"), ("stable-diffusion-v1-5/stable-diffusion-v1-5", "sd1"),
    ("stabilityai/stable-diffusion-2-1", "sd2"), ("Efficient-Large-Model/Sana_600M_512px_diffusers", "sana"),
    ("PixArt-alpha/PixArt-Sigma-XL-2-512-MS", "pixart"), ("Alpha-VLLM/Lumina-Image-2.0", "lumina"),
    ("black-forest-labs/FLUX.1-dev", "flux"), ("someone/my-model", "auto")])
def test_infer_family(model_id, family):
    assert M.infer_family(model_id) == family


# --- tiny diffusers pipelines ------------------------------------------------------------------------------

def _tiny_sd(folder):
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in string.ascii_lowercase + string.digits + string.punctuation:
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    tok = CLIPTokenizer(vocab=vocab, merges=[], model_max_length=32)
    torch.manual_seed(0)
    te = CLIPTextModel(CLIPTextConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
                                      pad_token_id=1))
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16),
                                layers_per_block=1, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
                                attention_head_dim=4, norm_num_groups=4)
    vae = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(8, 16),
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        latent_channels=4, norm_num_groups=4, sample_size=16)
    sch = DDIMScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012, clip_sample=False,
                        steps_offset=1)
    StableDiffusionPipeline(vae=vae, text_encoder=te, tokenizer=tok, unet=unet, scheduler=sch, safety_checker=None,
                            feature_extractor=None, requires_safety_checker=False).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory):
    return _tiny_sd(tmp_path_factory.mktemp("tiny_sd") / "pipe")


def test_sd_pipeline_per_image_seeds(tiny_sd):
    pipe = M.load_pipeline(tiny_sd, family="sd1", dtype="fp16", device="cpu")  # fp16 falls back to fp32 on CPU
    assert pipe.radaudit_family == "sd1" and pipe.unet.dtype == torch.float32
    prompts = ["pa chest x-ray: covid-19", "ap chest x-ray: ards", "pa chest x-ray: no finding"]
    kw = {"steps": 2, "guidance": 3.0, "height": 16, "width": 16}
    a = M.generate_images(pipe, prompts, [11, 12, 13], batch_size=3, **kw)
    assert a.shape == (3, 16, 16) and a.dtype == np.float32 and 0 <= a.min() and a.max() <= 1
    b = M.generate_images(pipe, prompts, [11, 12, 13], batch_size=2, **kw)
    np.testing.assert_allclose(a, b, atol=1e-5)  # an image depends on its own seed, not on its batch
    c = M.generate_images(pipe, prompts[2:], [13], batch_size=1, **kw)
    np.testing.assert_allclose(a[2:], c, atol=1e-5)
    d = M.generate_images(pipe, prompts, [11, 99, 13], batch_size=3, **kw)
    np.testing.assert_allclose(a[[0, 2]], d[[0, 2]], atol=1e-5)
    assert np.abs(a[1] - d[1]).max() > 1e-3


def test_auto_family_and_unconditional_pipeline(tiny_sd, tmp_path):
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    pipe = M.load_pipeline(tiny_sd, dtype="fp32", device="cpu")  # family "auto": DiffusionPipeline picks the class
    assert type(pipe).__name__ == "StableDiffusionPipeline" and pipe.radaudit_family == "auto"
    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, block_out_channels=(8, 16), layers_per_block=1,
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10)).save_pretrained(tmp_path / "ddpm")
    ddpm = M.load_pipeline(tmp_path / "ddpm", dtype="fp32", device="cpu")
    x = M.generate_images(ddpm, None, [1, 2, 1], steps=3, batch_size=3)  # guidance/height are not DDPM arguments
    assert x.shape == (3, 8, 8)
    np.testing.assert_allclose(x[0], x[2], atol=1e-6)
    assert np.abs(x[0] - x[1]).max() > 1e-3


def test_load_pipeline_errors(tmp_path, monkeypatch):
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        M.load_pipeline(tmp_path / "nothing", device="cpu")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="hub"):
        M.load_pipeline("microsoft/radedit", device="cpu")
    with pytest.raises(ParamsError, match="Unknown pipeline family"):
        M.load_pipeline(tmp_path, family="dalle")


def test_require_diffusers_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(RadauditError, match=r"pip install 'radaudit\[diffusion\]'"):
        M.require_diffusers()


def test_to_gray_luma_and_layouts():
    rgb = np.zeros((1, 2, 2, 3), np.float32)
    rgb[..., 0] = 1.0
    np.testing.assert_allclose(M._to_gray01(rgb), 0.299, atol=1e-6)
    nchw = np.ones((2, 3, 4, 5), np.float32) * 0.5
    assert M._to_gray01(nchw).shape == (2, 4, 5)
    np.testing.assert_allclose(M._to_gray01(nchw), 0.5, atol=1e-6)


# --- the demo model ------------------------------------------------------------------------------------

def test_condition_vectors_layout():
    vocab = {"views": ["AP", "AP SUPINE", "PA"], "labels": ["COVID-19", "Other pneumonia", "ARDS"]}
    req = pd.DataFrame({"labels": [["COVID-19", "ARDS"], []], "view": ["AP SUPINE", None]})
    np.testing.assert_array_equal(M.condition_vectors(req, vocab),
                                  [[0, 1, 0, 1, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0]])
    by_prompt = M.condition_vectors(pd.DataFrame({"labels": [["ARDS"]], "prompt": ["AP SUPINE chest X-ray: ARDS"]}), vocab)
    np.testing.assert_array_equal(by_prompt, [[0, 1, 0, 0, 0, 1, 0]])  # longest view name wins over "AP"
    parsed = M.condition_vectors(["PA chest X-ray: COVID-19, Other pneumonia"], vocab)
    np.testing.assert_array_equal(parsed, [[0, 0, 1, 1, 1, 0, 0]])
    with pytest.raises(ParamsError, match=r"\['Flu'\].*vocabulary"):
        M.condition_vectors(pd.DataFrame({"labels": [["Flu"]]}), vocab)


def _toy_data(n=8, size=16, seed=0):
    rng = np.random.default_rng(seed)
    base = np.zeros((size, size), np.float32)
    base[:, size // 2 - 2:size // 2 + 2] = 0.9  # a bright "mediastinum"
    images = np.clip(base + 0.05 * rng.standard_normal((n, size, size)), 0, 1).astype(np.float32)
    cond = pd.DataFrame({"labels": [["COVID-19"] if i % 2 else ["No Finding"] for i in range(n)],
                         "view": ["PA" if i % 3 else "AP" for i in range(n)]})
    return images, cond


@pytest.fixture(scope="module")
def tiny_demo(tmp_path_factory):
    images, cond = _toy_data()
    return M.train_demo_diffusion(images, cond, tmp_path_factory.mktemp("demo") / "model", seed=0, **TINY_HP)


def test_demo_model_saved_and_loaded_like_a_pipeline(tiny_demo):
    meta = json.loads((tiny_demo / M.CONFIG_FILE).read_text())
    assert meta["vocab"] == {"views": ["AP", "PA"], "labels": ["COVID-19", "No Finding"]}
    assert meta["steps_done"] == 3 and meta["n_train"] == 8 and meta["patch_size"] == 2
    assert M.infer_family(tiny_demo) == "demo"
    pipe = M.load_pipeline(tiny_demo)
    assert isinstance(pipe, M.DemoDiffusionPipeline) and pipe.unet.config.in_channels == 4  # 2×2 patches


def test_demo_sampling_seeds(tiny_demo):
    pipe = M.load_pipeline(tiny_demo)
    req = pd.DataFrame({"labels": [["COVID-19"], ["No Finding"], ["COVID-19"]], "view": ["PA", "AP", "PA"]})
    a = M.generate_images(pipe, req, [5, 6, 7], steps=4, guidance=2.0, batch_size=3)
    assert a.shape == (3, 16, 16) and a.dtype == np.float32 and 0 <= a.min() and a.max() <= 1
    b = M.generate_images(pipe, req, [5, 6, 7], steps=4, guidance=2.0, batch_size=2)
    np.testing.assert_allclose(a, b, atol=1e-5)
    c = M.generate_images(pipe, req.iloc[[1]], [6], steps=4, guidance=2.0)
    np.testing.assert_allclose(a[1], c[0], atol=1e-5)
    d = M.generate_images(pipe, req, [5, 60, 7], steps=4, guidance=2.0)
    assert np.abs(a[1] - d[1]).max() > 1e-3
    e = M.generate_images(pipe, req, [5, 6, 7], steps=4, guidance=1.0)
    assert np.abs(a - e).max() > 1e-4  # guidance is applied
    f = pipe.generate(req, [5, 6, 7], steps=4, guidance=2.0, sampler="dpm")
    g = pipe.generate(req, [5, 6, 7], steps=4, guidance=2.0, sampler="ddim", eta=1.0)
    assert f.shape == g.shape == (3, 16, 16)
    np.testing.assert_allclose(g, pipe.generate(req, [5, 6, 7], steps=4, guidance=2.0, sampler="ddim", eta=1.0),
                               atol=1e-6)
    np.testing.assert_allclose(f, pipe.generate(req, [5, 6, 7], steps=4, guidance=2.0), atol=1e-6)  # dpm by default
    assert np.abs(f - pipe.generate(req, [5, 6, 7], steps=4, guidance=2.0, sampler="ddim")).max() > 1e-4
    with pytest.raises(ParamsError, match="needs sampler='ddim'"):
        pipe.generate(req, [5, 6, 7], steps=4, eta=0.5)
    with pytest.raises(ParamsError, match="one seed per image"):
        pipe.generate(req, [1, 2])
    with pytest.raises(ParamsError, match="sampler"):
        pipe.generate(req, [1, 2, 3], sampler="euler")


def test_demo_training_is_seeded_and_reused(tmp_path, tiny_demo):
    images, cond = _toy_data()
    again = M.train_demo_diffusion(images, cond, tmp_path / "again", seed=0, **TINY_HP)
    w1 = M.load_pipeline(tiny_demo).unet.state_dict()
    w2 = M.load_pipeline(again).unet.state_dict()
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    other = M.train_demo_diffusion(images, cond, tmp_path / "other", seed=1, **TINY_HP)
    w3 = M.load_pipeline(other).unet.state_dict()
    assert not all(torch.equal(w1[k], w3[k]) for k in w1)
    # the same model into the same folder: reused; a different one: refused
    assert M.train_demo_diffusion(images, cond, tmp_path / "again", seed=0, **TINY_HP) == tmp_path / "again"
    with pytest.raises(ParamsError, match="holds something else"):
        M.train_demo_diffusion(images, cond, tmp_path / "again", seed=2, **TINY_HP)


def test_demo_diffusion_path_is_content_addressed(tmp_path):
    paths = []
    for i in range(4):
        Image.fromarray(np.full((20, 20), 40 * i, np.uint8)).save(tmp_path / f"{i}.png")
        paths.append(str(tmp_path / f"{i}.png"))
    frame = pd.DataFrame({"study_id": list("abcd"), "patient_id": list("abcd"), "split": ["train"] * 3 + ["test"],
                          "prompt": ["PA chest X-ray: COVID-19"] * 4, "labels": [["COVID-19"]] * 4, "view": ["PA"] * 4,
                          "image_path": paths})
    p1 = M.demo_diffusion_path(frame, 0, tmp_path / "cache", **TINY_HP)
    assert p1.parent == tmp_path / "cache" / "demo_models" and p1.name.startswith("diffusion-")
    assert M.demo_diffusion_path(frame, 0, tmp_path / "cache", **TINY_HP) == p1
    assert json.loads((p1 / M.CONFIG_FILE).read_text())["n_train"] == 3  # the train split only
    assert M.diffusion_config_hash("x", 0, **TINY_HP) != M.diffusion_config_hash("x", 1, **TINY_HP)
    assert M.diffusion_config_hash("x", 0, **TINY_HP) != M.diffusion_config_hash("y", 0, **TINY_HP)
    Image.fromarray(np.full((20, 20), 7, np.uint8)).save(paths[0])  # an edited training image: a new model
    assert M.diffusion_config_hash.__name__ and M.demo_diffusion_path(frame, 0, tmp_path / "cache", **TINY_HP) != p1


@pytest.mark.parametrize("bad, match", [
    ({"colour": 1}, "Unknown demo-diffusion setting"),
    ({"block_out_channels": (8, 12), "norm_num_groups": 8}, "multiple of norm_num_groups"),
    ({"image_size": 15}, "multiple of patch_size"),
    ({"prediction_type": "noise"}, "prediction_type"),
    ({"cond_dropout": 1.0}, "cond_dropout"),
    ({"steps": 0}, "steps"),
])
def test_demo_hyperparameter_errors(bad, match):
    with pytest.raises(ParamsError, match=match):
        M.diffusion_config_hash("x", 0, **{**TINY_HP, **bad})


def test_train_demo_input_errors(tmp_path):
    images, cond = _toy_data()
    with pytest.raises(DataFormatError, match="image_size is 16"):
        M.train_demo_diffusion(np.zeros((4, 8, 8), np.float32), cond.iloc[:4], tmp_path / "a", **TINY_HP)
    with pytest.raises(DataFormatError, match="7 rows but there are 8 images"):
        M.train_demo_diffusion(images, cond.iloc[:7], tmp_path / "b", **TINY_HP)
    with pytest.raises(DataFormatError, match=r"\[0, 1\]"):
        M.train_demo_diffusion(images * 3, cond, tmp_path / "c", **TINY_HP)


def test_save_grid_layout(tmp_path):
    imgs = np.stack([np.full((4, 4), v, np.float32) for v in (0.0, 0.5, 1.0)])
    out = M.save_grid(imgs, tmp_path / "g.png", ncol=2, scale=1)
    arr = np.asarray(Image.open(out))
    assert arr.shape == (14, 14)  # 2 rows × (4 + 2 gap) + 2
    assert arr[2, 2] == 0 and arr[2, 8] == 128 and arr[8, 2] == 255 and arr[8, 8] == 255  # last cell: white gap


def test_a_model_cut_short_by_the_time_guard_is_never_reused(tmp_path):
    import json

    from radaudit.models.diffusion import CONFIG_FILE, _is_trained

    folder = tmp_path / "m"
    (folder / "unet").mkdir(parents=True)
    (folder / "scheduler").mkdir()
    (folder / "unet" / "config.json").write_text("{}")
    (folder / "unet" / "diffusion_pytorch_model.safetensors").write_text("")
    (folder / "scheduler" / "scheduler_config.json").write_text("{}")
    (folder / CONFIG_FILE).write_text(json.dumps({"config_hash": "abc", "stopped_early": False}))
    assert _is_trained(folder, "abc") and not _is_trained(folder, "other")
    (folder / CONFIG_FILE).write_text(json.dumps({"config_hash": "abc", "stopped_early": True, "stop_reason": "t"}))
    assert not _is_trained(folder, "abc")
