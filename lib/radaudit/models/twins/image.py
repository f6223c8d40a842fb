"""Twins of the image models the paper presets name: the synthetic_cxr (CheXGenBench, paper 004) generators,
encoder, re-identification checkpoint and utility classifier — each of the class the lab loads it as, a few
units wide, random weights, built offline in seconds.

* SD 1.5 (``sd1``; the lab loads ``StableDiffusionPipeline.from_pretrained``,
  :func:`radaudit.models.diffusion.load_pipeline`): a ``StableDiffusionPipeline`` folder — tiny UNet (cross-attention
  at the lowest level only), an 8x ``AutoencoderKL``, ``CLIPTextModel`` + ``CLIPTokenizer``, PNDM scheduler.
* Sana 600M 512 px (``DiffusionPipeline.from_pretrained`` → ``SanaPipeline``): a ``SanaPipeline`` folder with the
  512-px model's latent geometry (32x ``AutoencoderDC``, ``sample_size`` 16: a 512-px image is 16x16 latents), a
  one-layer ``SanaTransformer2DModel``, a one-layer ``Gemma2Model``, a flow-matching scheduler.
* RadEdit (a ``StableDiffusionPipeline`` the lab assembles from RadEdit's ``unet/``, the SDXL VAE and BioViL-T, with a
  DDIM scheduler): ``unet/`` (``UNet2DConditionModel``), ``vae/`` (``AutoencoderKL``, the SDXL VAE's class) and
  ``text_encoder/``: a ``BertModel`` with a WordPiece ``BertTokenizerFast`` — an in-library stand-in of BioViL-T's
  ``CXRBertModel``, which is remote code (a ``BertForMaskedLM`` subclass whose output[0] is the last hidden state,
  what the pipeline reads). Its config has no ``auto_map``, so no code runs with ``trust_remote_code`` off.
* RadDino (``AutoModel`` + ``AutoImageProcessor``, :class:`~radaudit.models.encoders.HFVisionEncoder`): ``Dinov2Model``
  (28 px, 14-px patches) + ``BitImageProcessor`` with rad-dino's mean/std.
* The re-ID checkpoint (``torch.load`` of the Packhäuser torchvision Siamese ``state_dict`` → ``SiameseReIDModel``,
  :func:`~radaudit.models.cxr_nets.load_packhauser_reid`): a torchvision-named Siamese ResNet (bottleneck blocks,
  3 channels, ``fc`` → 8 features, ``fc_end``) saved as ``ResNet-50_epoch11_data_handling_RPN.pth``.
* The ResNet-50 utility classifier (``ResNetForImageClassification.from_pretrained``, head replaced): a two-stage
  bottleneck ``ResNetForImageClassification``.

BioViL-T's alignment score (``alignment_model: biovil-t``) runs through hi-ml-multimodal, which downloads
its weights and runs BioViL-T's remote code: it has no twin here (:data:`NOT_TWINNED`), and a rehearsal
says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from radaudit.models.cxr_nets import torchvision_resnet_key_map
from radaudit.models.twins.base import CORPUS
from radaudit.models.twins.base import tokenizer as _bpe_tokenizer

__all__ = ["BUILDERS", "DIFFUSION_HUB_IDS", "HUB_IDS", "MODEL_TYPES", "NOT_TWINNED", "REID_FILE", "build_packhauser_reid",
           "build_raddino", "build_radedit", "build_resnet50", "build_sana", "build_sd1"]

#: File name of the re-ID twin (the released checkpoint's name).
REID_FILE = "ResNet-50_epoch11_data_handling_RPN.pth"

#: rad-dino's preprocessor mean / std (one grey value repeated over RGB).
_RAD_DINO_MEAN, _RAD_DINO_STD = [0.5307] * 3, [0.2583] * 3


def _seeded():
    import torch

    torch.manual_seed(0)


def _twin_json(folder: Path, cls: str, **extra) -> None:
    (Path(folder) / "twin.json").write_text(json.dumps({"class": cls, **extra}, indent=1) + "\n", encoding="utf-8")


def _clip_tokenizer():
    """A ``CLIPTokenizer`` over single bytes (no merges): every character is a token, each with its
    end-of-word form — enough to tokenise any prompt the way SD 1.5's tokenizer does, 77 tokens long."""
    from tokenizers import pre_tokenizers
    from transformers import CLIPTokenizer

    chars = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(chars + [c + "</w>" for c in chars] + ["<|startoftext|>", "<|endoftext|>"])}
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def _unet(cross_attention_dim: int):
    """Tiny ``UNet2DConditionModel``: three levels (4, 8, 8 channels), cross-attention at the lowest only (a
    512-px image is 64x64 latents; attention there would be 4096 tokens)."""
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=64, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(4, 8, 8),
        down_block_types=("DownBlock2D", "DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D", "UpBlock2D"), cross_attention_dim=cross_attention_dim,
        attention_head_dim=4, norm_num_groups=4)


def _vae_kl(scaling_factor: float = 0.18215):
    """Tiny ``AutoencoderKL`` with the SD VAEs' 8x compression (four levels) and 4 latent channels."""
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(4, 4, 4, 4),
                         down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                         layers_per_block=1, norm_num_groups=2, sample_size=64, scaling_factor=scaling_factor)


def build_sd1(folder):
    """An SD 1.5 twin: ``StableDiffusionPipeline`` (no safety checker, as the lab loads it)."""
    from diffusers import PNDMScheduler, StableDiffusionPipeline
    from transformers import CLIPTextConfig, CLIPTextModel

    folder = Path(folder)
    _seeded()
    tok = _clip_tokenizer()
    text = CLIPTextModel(CLIPTextConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, max_position_embeddings=77, projection_dim=16,
                                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                        pad_token_id=tok.pad_token_id))
    scheduler = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                              steps_offset=1)  # SD 1.5's scheduler_config
    pipe = StableDiffusionPipeline(vae=_vae_kl(), text_encoder=text, tokenizer=tok, unet=_unet(16), scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder


def build_sana(folder):
    """A Sana 600M (512 px) twin: ``SanaPipeline`` with the 512-px model's latent geometry (32x DC-AE, 16x16
    latents of a 512-px image, ``sample_size`` 16), a one-layer transformer and a one-layer Gemma-2 encoder."""
    from diffusers import AutoencoderDC, FlowMatchEulerDiscreteScheduler, SanaPipeline, SanaTransformer2DModel
    from transformers import Gemma2Config, Gemma2Model

    folder = Path(folder)
    _seeded()
    tok = _bpe_tokenizer(["<pad>", "<eos>", "<bos>", "<unk>"], "<bos>", eos_token="<eos>", pad_token="<pad>",
                         unk_token="<unk>")
    text = Gemma2Model(Gemma2Config(vocab_size=len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                    num_attention_heads=2, num_key_value_heads=1, head_dim=4,
                                    max_position_embeddings=1024,
                                    pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                                    eos_token_id=tok.eos_token_id))
    levels = 6  # 2^(6-1) = 32x spatial compression, as DC-AE f32
    vae = AutoencoderDC(in_channels=3, latent_channels=4, attention_head_dim=2,
                        encoder_block_types=("ResBlock",) * levels, decoder_block_types=("ResBlock",) * levels,
                        encoder_block_out_channels=(4,) * levels, decoder_block_out_channels=(4,) * levels,
                        encoder_qkv_multiscales=((),) * levels, decoder_qkv_multiscales=((),) * levels,
                        encoder_layers_per_block=(1,) * levels, decoder_layers_per_block=(1,) * levels,
                        downsample_block_type="conv", upsample_block_type="interpolate", decoder_norm_types="rms_norm",
                        decoder_act_fns="silu", scaling_factor=0.41407)
    transformer = SanaTransformer2DModel(patch_size=1, in_channels=4, out_channels=4, num_layers=1,
                                         num_attention_heads=2, attention_head_dim=4, num_cross_attention_heads=2,
                                         cross_attention_head_dim=4, cross_attention_dim=8, caption_channels=8,
                                         sample_size=16)
    pipe = SanaPipeline(tokenizer=tok, text_encoder=text, vae=vae, transformer=transformer,
                        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0))
    pipe.save_pretrained(folder)
    return folder


def _wordpiece_tokenizer(folder: Path):
    """A lower-case WordPiece ``BertTokenizerFast`` (BioViL-T's tokenizer is a ``BertTokenizer`` subclass): the
    special tokens, single characters and their ``##`` forms, and the twins' corpus words."""
    from transformers import BertTokenizerFast

    chars = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789.,:;!?'\"()-/%"))
    words = sorted({w.strip(".?,").lower() for s in CORPUS for w in s.split()} - set(chars) - {""})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars), *words]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizerFast(str(folder / "vocab.txt"), do_lower_case=True, model_max_length=128)


def build_radedit(folder):
    """A RadEdit twin in the layout :func:`radaudit.models.diffusion.load_pipeline` assembles (``unet/`` from the
    RadEdit repo, the VAE and the text encoder from their own ids): ``unet/``, ``vae/`` and ``text_encoder/``
    (a ``BertModel`` stand-in of BioViL-T's remote-code ``CXRBertModel``, see the module docstring).
    ``twin.json`` names the class the lab builds from them."""
    from transformers import BertConfig, BertModel

    folder = Path(folder)
    _seeded()
    tok = _wordpiece_tokenizer(folder / "text_encoder")
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=128)).save_pretrained(folder / "text_encoder")
    tok.save_pretrained(folder / "text_encoder")
    _unet(16).save_pretrained(folder / "unet")
    _vae_kl(scaling_factor=0.13025).save_pretrained(folder / "vae")  # the SDXL VAE's scaling factor
    _twin_json(folder, "StableDiffusionPipeline", unet="UNet2DConditionModel", vae="AutoencoderKL",
               text_encoder="BertModel (stand-in of BioViL-T's remote-code CXRBertModel)")
    return folder


def build_raddino(folder):
    """A RadDino twin: ``Dinov2Model`` (28 px, 14-px patches) and a ``BitImageProcessor`` with rad-dino's settings."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    folder = Path(folder)
    _seeded()
    Dinov2Model(Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                             image_size=28, patch_size=14)).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}, do_convert_rgb=True,
                      image_mean=_RAD_DINO_MEAN, image_std=_RAD_DINO_STD).save_pretrained(folder)
    return folder


def _tiny_resnet_config(**kw):
    from transformers import ResNetConfig

    return ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck",
                        **kw)


def build_packhauser_reid(folder):
    """A twin of the Packhäuser re-ID checkpoint: the authors' torchvision ``SiameseNetwork`` ``state_dict``
    (``model.<torchvision ResNet>``, ``model.fc`` → 8 features, ``fc_end``) of a two-stage bottleneck ResNet,
    saved with ``torch.save`` under the released file name; ``twin.json`` names the class it loads as."""
    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _seeded()
    cfg = _tiny_resnet_config()
    from transformers import ResNetModel

    backbone = ResNetModel(cfg).state_dict()
    to_tv = {hf: tv for tv, hf in torchvision_resnet_key_map(cfg.depths, cfg.layer_type, cfg.hidden_sizes,
                                                              cfg.embedding_size).items()}
    state = {f"model.{to_tv[k]}": v for k, v in backbone.items() if k in to_tv}
    n_features = 8
    state |= {"model.fc.weight": torch.randn(n_features, cfg.hidden_sizes[-1]) * 0.1,
              "model.fc.bias": torch.zeros(n_features), "fc_end.weight": torch.randn(1, n_features) * 0.1,
              "fc_end.bias": torch.zeros(1)}
    torch.save(state, folder / REID_FILE)
    _twin_json(folder, "SiameseReIDModel", file=REID_FILE, source="torchvision SiameseNetwork state_dict")
    return folder


def build_resnet50(folder):
    """A ``microsoft/resnet-50`` twin: ``ResNetForImageClassification`` (bottleneck blocks, 3 channels, 10-class head
    that the utility classifier replaces, as it replaces ImageNet's 1000)."""
    from transformers import ResNetForImageClassification

    _seeded()
    ResNetForImageClassification(_tiny_resnet_config(num_labels=10)).save_pretrained(folder)
    return folder


#: family -> builder.
BUILDERS = {"sd1": build_sd1, "sana": build_sana, "radedit": build_radedit, "raddino": build_raddino,
            "packhauser_reid": build_packhauser_reid, "resnet50": build_resnet50}
#: Hub ids of the paper presets -> family.
HUB_IDS: dict[str, str] = {
    "stable-diffusion-v1-5/stable-diffusion-v1-5": "sd1", "Efficient-Large-Model/Sana_600M_512px_diffusers": "sana",
    "microsoft/radedit": "radedit", "microsoft/rad-dino": "raddino",
    "raman07/Patient_ReIdentification_MIMIC": "packhauser_reid", "microsoft/resnet-50": "resnet50",
}
#: A diffusion generator's ``family`` (:data:`radaudit.models.diffusion.PIPELINE_DEFAULTS`) -> the hub id of the
#: paper's base model, for presets that name the model by a placeholder ("<your fine-tuned SD 1.5 folder>").
DIFFUSION_HUB_IDS: dict[str, str] = {"sd1": "stable-diffusion-v1-5/stable-diffusion-v1-5",
                                     "sana": "Efficient-Large-Model/Sana_600M_512px_diffusers",
                                     "radedit": "microsoft/radedit"}
#: config.json ``model_type`` -> family (a local folder of one of these is twinned by its type).
MODEL_TYPES = {"dinov2": "raddino"}
#: Models a paper preset names that cannot be twinned, and why.
NOT_TWINNED: dict[str, str] = {
    "biovil-t": "BioViL-T's alignment score runs through hi-ml-multimodal, which downloads "
                "microsoft/BiomedVLP-BioViL-T and runs its remote code (CXRBertModel); no class of it loads offline "
                "without running that code",
}
