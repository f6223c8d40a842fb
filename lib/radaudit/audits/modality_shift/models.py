"""The modality-shift study's ``demo`` vision-language model: a tiny LLaVA trained here on covid-chestxray.

The paper (``../shared/papers/003_528df7f4b7accfa0.txt``) audits large VLMs (Qwen2-VL, LLaVA-1.5, ...)
that cannot run offline on 2 CPU cores, and no VLM ships on PyPI. The ``demo`` preset therefore uses a
**scaled-down stand-in** built only from transformers classes and trained from scratch on the demo
training split (491-595 s per seed measured on a 2-core AMD EPYC, one thread each beside another training job,
the warm start and image loading included; 17 minutes before the demo's notes were cut to 80 words):

* vision tower: a ``CLIPVisionModel`` ViT (``image_size`` 64 px, ``patch_size`` 8: 64 patches + CLS,
  hidden 64, 2 layers), trained here; the LLaVA projector (linear-GELU-linear) maps its 64 patch
  features (``vision_feature_select_strategy="default"``: CLS dropped, last layer) to the LM;
* language model: a 2-layer ``LlamaForCausalLM`` (hidden 128) with its own byte-level BPE tokenizer
  (``tokenizers``) trained on the training notes and prompts, ``<image>`` expanded to 64 tokens;
* ``LlavaForConditionalGeneration`` + ``LlavaProcessor`` (image processor ``CLIPImageProcessorPil``:
  PIL/numpy preprocessing; torchvision does not work with the pinned CPU torch) + a LLaVA-1.5-style
  chat template (``USER: <image>\\n{prompt}\\nASSISTANT:``), saved with ``save_pretrained`` so
  :func:`radaudit.models.vlm.load_vlm` loads it like any hub VLM and
  :func:`radaudit.audits.modality_shift.conditions.run_conditions` runs it unchanged.

Training recipe (version 6: version 4 of issue 21 with the warm start gated on reading the marker and the joint
training's rate decayed by a cosine, issue 44).
Version 1's image pathway was dead (only-image AUROC 0.34, no answer changed by an image swap), so "the model
ignores the image" was true by construction; version 2's warm start on the natural images never left the
constant predictor's loss (they carry the label only weakly); version 3 added marked copies coded by corner,
which a pooled head cannot see, so it read flattened tokens — and the language model still did not read the
marker with text present.

1. **Vision warm start** (:func:`_warm_start_vision`): the ViT and the projector are trained, until they read
   the marker on held-back training images (the gate; at most ``vision_warmup_epochs``), as an image-only
   COVID-19 classifier (the projected image tokens,
   averaged -> linear head, class-weighted binary cross-entropy), as LLaVA aligns its
   projector before tuning the language model. Each image draw shows the image's **marked copy**
   (the label burned in, :mod:`radaudit.audits.modality_shift.marker`) with probability ``p_marked``
   (0.5): the positive control needs a model that can read a label the image does show. No
   pretrained image model can feed LLaVA's vision tower here (none ships offline in a transformers
   class; the FID InceptionV3 is TorchScript), and a linear probe on frozen InceptionV3 features
   reaches no more held-out AUROC (about 0.68) than one on 32-px pixels, so the stand-in learns its
   own small ViT.
2. **Joint training** on the experiment's own prompts, the vision tower frozen (``freeze_vision``;
   LLaVA's second stage freezes its vision encoder too) and the projector and language model
   trained: items are :func:`radaudit.audits.modality_shift.conditions.build_items` rows of the
   *training* samples with the ``covid_cxr`` template, rendered by the chat template exactly as at
   inference; the target is ``Yes</s>`` (COVID-19) or ``No</s>``, and the loss is on those two tokens
   only (the answer token, plus end-of-sequence so that greedy generation stops after the answer).
   Each time a sample is drawn its condition is drawn too: ``only_image`` with probability
   ``p_only_image`` (0.35), ``only_text`` with ``p_only_text`` (0.2), else ``no_shift`` — so both
   pathways learn to answer on their own — and its image is the marked copy with probability
   ``p_marked``. When a ``no_shift`` draw shows the marked copy, its text is, with probability
   ``p_marked_decoy`` (0.5), another training sample's (any label): on these draws only the marker
   tells the answer. Without them the model memorises the training notes (training AUROC 0.99 from
   the text) and never needs the marker when text is present: the held-out marked No Shift AUROC
   equalled the unmarked one at 400 and at 800 steps, and swapping the marked image changed 3 of 145
   answers. So the positive control is a model *known* to use the image when the image shows the
   label; the natural images' draws never carry a decoy, so what the model does with natural images
   and real notes — the paper's question — is left to the data. Other shifted pairs and ``no_input``
   are never trained on (as for the paper's models).
   Images get a light seeded augmentation (random shift, contrast/brightness jitter) in training only.

The demo preset cuts every note to its first 80 words (``max_note_words``; 118 of 464 notes are longer, the longest
783 words): the prompts then run to a few hundred tokens instead of up to ~1,250, and a training step at 1,024
tokens costs 12x one at 128 (``benchmarks/profile_standins.py``: 2.65 s against 0.22 s; issue 44). The model trains and
is evaluated on the same cut notes.

What the demo can show: the notes often name the diagnosis (106 of 464 cut notes mention COVID-19/SARS-CoV-2,
98% of them positive; 136 of the whole notes), so the text is a strong shortcut; the natural images carry the label only
weakly at this data size (the run's pixel probe, :mod:`radaudit.audits.modality_shift.probe`,
measures how much), the marked copies carry it fully. The held-out first-token accuracies and AUROCs per
condition are in the model card.
That is the paper's phenomenon in miniature, not a claim about the paper's models.

::

    from radaudit.audits.modality_shift.models import demo_vlm_path
    from radaudit.models.vlm import load_vlm

    path = demo_vlm_path(data_root, seed=0)          # trains on first use (minutes), then reused
    processor, model = load_vlm(path, device="cpu")
    results = run_conditions(processor, model, items, model_name="demo-tiny-llava")

Reuse: the folder is ``<cache>/demo_models/vlm-<config hash>``; the hash covers the samples (rows,
split, text, labels, metadata and the bytes of every image file), the prompt template, every
hyperparameter and :data:`RECIPE_VERSION`. ``radaudit_vlm_model.json`` in the folder records it with
the held-out metrics and the training time.

A ``models`` entry names the stand-in with :data:`DEMO_MODEL` (``"demo"``); :func:`vllm_unservable` says why
vLLM cannot serve it (transformers only).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import build_items, covid_samples, get_template, is_missing
from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN, MARKER_VERSION, add_marked_images
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.classification import auroc
from radaudit.models.cache import default_cache_dir
from radaudit.models.train import LR_SCHEDULES, LengthGroupedBatches, train_model
from radaudit.models.vlm import load_image, render_prompt
from radaudit.paths import atomic_dir, file_sha256, reusable_model_dir

__all__ = ["CHAT_TEMPLATE", "CONFIG_FILE", "DEMO_MODEL", "DEMO_VLM_CONFIG", "RECIPE_VERSION", "TRAIN_CONDITIONS",
           "config_hash", "demo_vlm_path", "samples_fingerprint", "train_demo_vlm", "vllm_unservable"]

log = logging.getLogger(__name__)

#: ``model`` value that means "the demo VLM the project trains" (this module).
DEMO_MODEL = "demo"
#: Written into the model folder; its ``config_hash`` decides whether a folder can be reused.
CONFIG_FILE = "radaudit_vlm_model.json"
#: Bump when the recipe changes in a way the hyperparameters do not show.
#: 2: vision warm start (issue 21), 64 px / 8 px patches; 3: marked images, flattened warm-start head;
#: 4: decoy texts on marked draws, mean-pooled warm start; 5: the warm start runs until it reads the marker on
#: held-back training images (a gate).
RECIPE_VERSION = 6
#: The conditions the model is trained on (never the shifted ones).
TRAIN_CONDITIONS: tuple[str, ...] = ("no_shift", "only_image", "only_text")

#: LLaVA-1.5-style chat template (``USER: <image>\n{prompt}\nASSISTANT:``), no BOS in the text (the
#: tokenizer adds it), one line per message; system messages render as ``SYSTEM: ...``.
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{{ '\\n' }}{% elif c['type'] == 'text' %}"
    "{{ c['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}")

#: The real demo configuration (~1.1M parameters). ``steps`` is the planned length, so the model is a function of the
#: seed, not of the machine's speed. Recipe 4 trained 800 joint steps after a fixed 40-epoch warm start: with 300
#: steps the language model had only just learnt to read the marker, and 400 sat on a knife edge (the same seed
#: trained on two CPUs gave marked image swaps that changed 64% of the answers on one and 8.3% on the other). Over
#: three seeds (issue 40's stability benchmark) the two whose warm start had read the marker did so by step 200
#: (held-out marked only-image AUROC 0.96-1.0), and the third never did, at any step up to 800 (0.56). Recipe 5 gates
#: the warm start on reading the marker (:func:`_warm_start_vision`): on seeds 0, 1, 2 the gate passed after 35, 15
#: and 40 epochs. Halving the joint steps to 400 with the gate was tried and undone (2026-12-02, this machine): the
#: marked only-image AUROC held (0.99 / 0.97 / 1.00) but the marked image swap changed only 12.4% [8.0, 18.8], 5.5%
#: [2.8, 10.5] and 11.0% [6.9, 17.2] of the answers (bar > 10%; 31.7% and 35.2% at 800 steps on recipe 4's seeds 0
#: and 1): with text present the language model needs the longer training to weigh the marker over the notes. So the
#: demo keeps **800** steps. At 800 steps with the gate (stability benchmark at 82994ca) the marked only-image AUROC
#: is shown on all three seeds (0.985, 0.955, 1.0), but the marked image swap changed 28.3%, 3.5% and 11.7% of the
#: answers: shown on seed 0 only (and the same seed-0 recipe retrained on another CPU gave 71.7%: a knife edge).
#: Every marked no_shift draw with a decoy text (``p_marked_decoy`` 1.0) was tried and
#: undone: 9.0% / 18.6% / 24.8%, and seed 0's model lost the marker between steps 600 and 800 (held-out marked only-
#: image AUROC 0.996 -> 0.774). The open problem was the late training (a constant learning rate to the last step),
#: not the marker's visibility: recipe 6 decays the joint training's rate to 0 by a cosine (``lr_schedule``). With
#: the demo's notes cut to 80 words (``max_note_words``), the stability benchmark (2026-12-02, 2-core AMD EPYC) shows
#: both positive controls on all three seeds: marked only-image AUROC 1.0 / 0.969 / 1.0 and marked image swaps
#: changing 27.6% [21.0, 35.4], 17.2% [12.0, 24.2] and 65.5% [57.5, 72.8] of the answers. The cut notes with the
#: constant rate were tried first: seed 1's held-out marked only-image AUROC was 0.882 (0.969 with the cosine).
#: The same recipe on a 2-core Intel Xeon (2026-12-02, stability benchmark at 0b8bbb0's recipe): the AUROC holds on all
#: three seeds (0.98 / 0.994 / 0.996), but the marked image swaps change 12.4% [8.0, 18.8], 29.0% and 18.6%: seed 0 is
#: *partly* against the 10% bar, so the control holds on 2 of 3 seeds there. Still a recipe to make robust (the
#: trained weights differ across CPUs' float kernels; margins, not bitwise equality, must carry a verdict).
#: With the patient ids that share a picture merged (covid_cxr, 2026-12-03; the test split changed with them, same
#: Intel machine, stability benchmark at f007d5c): AUROC 0.971 / 0.962 / 0.991 (shown 3/3), marked image swaps
#: 47.4%, 12.4% [7.9, 19.0] (*partly*, seed 1) and 83.2%: again 2 of 3 seeds, the knife edge moved to another seed.
#: ``max_seconds`` is only a runaway guard, set far
#: above the planned time: a model stopped by it depends on the machine's speed and is never reused
#: (:func:`radaudit.paths.reusable_model_dir` removes it), so a guard near the planned time makes a busy machine
#: retrain the model on every run (seen with 240 s on 2 shared cores: 48 of 120 steps). The vision warm start runs
#: before the joint steps and outside that budget.
DEMO_VLM_CONFIG: dict[str, Any] = {
    # data / task
    "dataset": "covid_cxr", "p_only_image": 0.35, "p_only_text": 0.2, "p_marked": 0.5, "p_marked_decoy": 0.5,
    "augment": True,
    "max_train": None, "max_eval": None,
    # tokenizer
    "vocab_size": 2000,
    # vision tower (CLIP ViT, from scratch)
    "image_size": 64, "patch_size": 8, "vision_hidden": 64, "vision_layers": 2, "vision_heads": 4,
    "vision_mlp": 256,
    # vision warm start: image-only classification before the joint training, until the head reads the marker on
    # the gate's held-back training images (AUROC >= vision_warmup_gate_auroc) or vision_warmup_epochs (the cap;
    # 0 = no warm start) have run; gate_auroc 0 = run every epoch (recipe 4)
    "vision_warmup_epochs": 200, "vision_warmup_lr": 1e-3, "vision_warmup_gate_auroc": 0.95,
    "vision_warmup_gate_share": 0.2,
    # joint training: keep the warmed-up vision tower fixed (LLaVA's stage 2 freezes its vision encoder)
    "freeze_vision": True,
    # language model (Llama)
    "text_hidden": 128, "text_layers": 2, "text_heads": 4, "text_mlp": 384,
    # optimisation (radaudit.models.train.train_model)
    "steps": 800, "batch_size": 16, "lr": 2e-3, "lr_schedule": "cosine", "weight_decay": 0.01, "max_grad_norm": 1.0,
    "max_seconds": 1800.0,
}

_INT_KEYS = ("vocab_size", "image_size", "patch_size", "vision_hidden", "vision_layers", "vision_heads", "vision_mlp",
             "text_hidden", "text_layers", "text_heads", "text_mlp", "steps", "batch_size")
_FLOAT_KEYS = ("p_only_image", "p_only_text", "p_marked", "p_marked_decoy", "lr", "weight_decay", "vision_warmup_lr",
               "vision_warmup_gate_auroc", "vision_warmup_gate_share")
#: The warm start's gate is checked every this many epochs (:func:`_warm_start_vision`).
_GATE_EVERY = 5
_OPTIONAL_INT_KEYS = ("max_train", "max_eval")
_OPTIONAL_FLOAT_KEYS = ("max_grad_norm", "max_seconds")
_SPECIALS = ["<pad>", "<s>", "</s>", "<image>"]
_ANSWERS = {1: "Yes", 0: "No"}


# --- configuration and identity ----------------------------------------------------------------------

def _hyperparameters(seed: int = 0, **hp: Any) -> dict[str, Any]:
    """:data:`DEMO_VLM_CONFIG` updated with ``hp``, validated and normalised (the hashed settings)."""
    unknown = sorted(set(hp) - set(DEMO_VLM_CONFIG))
    if unknown:
        raise ParamsError(f"Unknown demo-VLM setting(s) {unknown}; allowed: {sorted(DEMO_VLM_CONFIG)} (and seed).")
    out: dict[str, Any] = {**DEMO_VLM_CONFIG, **hp}
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    for k in _INT_KEYS:
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
            raise ParamsError(f"{k} must be a positive integer, got {v!r}.")
        out[k] = int(v)
    for k in _OPTIONAL_INT_KEYS:
        v = out[k]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 2):
            raise ParamsError(f"{k} must be an integer >= 2 or None (all samples), got {v!r}.")
        out[k] = None if v is None else int(v)
    for k in _FLOAT_KEYS:
        out[k] = float(out[k])
    for k in _OPTIONAL_FLOAT_KEYS:
        out[k] = None if out[k] is None else float(out[k])
    v = out["vision_warmup_epochs"]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
        raise ParamsError(f"vision_warmup_epochs must be an integer >= 0, got {v!r}.")
    out["vision_warmup_epochs"] = int(v)
    if not 0.0 <= out["vision_warmup_gate_auroc"] <= 1.0 or not 0.0 <= out["vision_warmup_gate_share"] < 1.0:
        raise ParamsError("vision_warmup_gate_auroc must be in [0, 1] (0 = no gate) and vision_warmup_gate_share in "
                          f"[0, 1), got {out['vision_warmup_gate_auroc']} and {out['vision_warmup_gate_share']}.")
    out["augment"] = bool(out["augment"])
    out["freeze_vision"] = bool(out["freeze_vision"])
    out["dataset"] = str(out["dataset"])
    if out["lr_schedule"] not in LR_SCHEDULES:
        raise ParamsError(f"lr_schedule must be one of {list(LR_SCHEDULES)}, got {out['lr_schedule']!r}.")
    if not (0.0 <= out["p_only_image"] and 0.0 <= out["p_only_text"] and out["p_only_image"] + out["p_only_text"] < 1):
        raise ParamsError("p_only_image and p_only_text must be >= 0 and sum to < 1 (the rest is no_shift), got "
                          f"{out['p_only_image']} and {out['p_only_text']}.")
    for key, what in (("p_marked", "the share of image draws shown marked"),
                      ("p_marked_decoy", "the share of marked image + text draws given another sample's text")):
        if not 0.0 <= out[key] <= 1.0:
            raise ParamsError(f"{key} must be in [0, 1] ({what}), got {out[key]}.")
    if out["image_size"] % out["patch_size"]:
        raise ParamsError(f"image_size ({out['image_size']}) must be a multiple of patch_size ({out['patch_size']}).")
    for width, heads in (("vision_hidden", "vision_heads"), ("text_hidden", "text_heads")):
        if out[width] % out[heads]:
            raise ParamsError(f"{width} ({out[width]}) must be a multiple of {heads} ({out[heads]}).")
    out["seed"] = int(seed)
    out["recipe_version"] = RECIPE_VERSION
    out["marker_version"] = MARKER_VERSION
    return dict(sorted(out.items()))


_FINGERPRINT_COLUMNS = ("sample_id", "patient_id", "text", "label", "split")


def samples_fingerprint(samples: pd.DataFrame) -> str:
    """SHA-256 (16 hex) of the samples: every column's value (images by file content, not by path), in order."""
    _check_samples(samples)
    h = hashlib.sha256()
    cols = sorted(c for c in samples.columns if c not in ("image_path", MARKED_IMAGE_COLUMN))
    for row in samples[cols].itertuples(index=False):
        values = [None if (isinstance(v, float) and math.isnan(v)) else v for v in row]
        h.update(json.dumps(dict(zip(cols, values)), sort_keys=True, default=str, ensure_ascii=False).encode())
    for path in samples["image_path"]:
        h.update(file_sha256(path, DataFormatError).encode())
    return h.hexdigest()[:16]


def _check_samples(samples: Any) -> None:
    if not isinstance(samples, pd.DataFrame):
        raise ParamsError(f"samples must be a DataFrame from covid_samples/build_samples, got {type(samples).__name__}.")
    missing = [c for c in (*_FINGERPRINT_COLUMNS, "image_path") if c not in samples.columns]
    if missing:
        raise ParamsError(f"samples lack column(s) {missing}; build them with modality_shift.build_samples.")


def _template_of(dataset: str) -> dict[str, Any]:
    return get_template(dataset)


def _digest(fingerprint: str, hp: Mapping[str, Any]) -> str:
    blob = json.dumps({"samples": fingerprint, "template": _template_of(hp["dataset"]), "hyperparameters": hp},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def config_hash(samples: pd.DataFrame, seed: int = 0, **hyperparameters: Any) -> str:
    """The identity of a trained demo VLM: SHA-256 (16 hex) of the samples, the template and every setting."""
    return _digest(samples_fingerprint(samples), _hyperparameters(seed, **hyperparameters))


def _is_trained(folder: Path, digest: str) -> bool:
    return reusable_model_dir(folder, CONFIG_FILE, digest,
                              required=('config.json', 'model.safetensors', 'tokenizer.json', 'processor_config.json'),
                              required_globs=(), key='config_hash')


# --- building blocks ---------------------------------------------------------------------------------

def _subset(frame: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """At most ``n`` rows, both labels kept when possible (seeded, stratified by label); order kept."""
    if n is None or len(frame) <= n:
        return frame
    rng = np.random.default_rng(seed)
    pos = frame.index[frame["label"] == 1].to_numpy()
    neg = frame.index[frame["label"] == 0].to_numpy()
    n_pos = min(len(pos), max(1, int(round(n * len(pos) / len(frame)))))
    n_neg = min(len(neg), n - n_pos)
    keep = np.concatenate([rng.choice(pos, n_pos, replace=False), rng.choice(neg, n_neg, replace=False)])
    return frame.loc[np.sort(keep)]


def _items(samples: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Training/eval items: build_items rows of the unshifted conditions (no partners needed)."""
    partners = pd.DataFrame({"sample_id": pd.Series(dtype=object), "image_partner": pd.Series(dtype=object),
                             "text_partner": pd.Series(dtype=object)})
    return build_items(samples, partners, dataset, conditions=TRAIN_CONDITIONS)


def _decoy_items(samples: pd.DataFrame, dataset: str, seed: int) -> pd.DataFrame:
    """One ``no_shift``-layout item per sample whose header and notes are another training sample's,
    drawn uniformly (any label, never the sample itself; ``numpy.random.default_rng(seed)``), as
    condition ``"decoy"``: the text of these items says nothing about the label."""
    ids = samples["sample_id"].sort_values(kind="stable").to_numpy()
    rng = np.random.default_rng(seed)
    other = [ids[(i + 1 + rng.integers(len(ids) - 1)) % len(ids)] for i in range(len(ids))]
    partners = pd.DataFrame({"sample_id": ids, "image_partner": ids, "text_partner": other})
    items = build_items(samples, partners, dataset, conditions=("text_shift",))
    return items.assign(condition="decoy")


def _build_processor(texts: Sequence[str], hp: Mapping[str, Any]) -> Any:
    """LlavaProcessor: a byte-level BPE tokenizer trained on ``texts`` + the PIL CLIP image processor."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlavaProcessor, PreTrainedTokenizerFast
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tk = Tokenizer(models.BPE(unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=int(hp["vocab_size"]), min_frequency=2, special_tokens=_SPECIALS,
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    # The candidate answers (radaudit.models.vlm.DEFAULT_CANDIDATES) must be single tokens: repeat them so
    # their merges come first whatever the vocabulary size.
    answers = ["Yes", "No", "yes", "no"] * 200
    tk.train_from_iterator(list(texts) + answers, trainer=trainer)
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                      special_tokens=[("<s>", tk.token_to_id("<s>"))])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  extra_special_tokens={"image_token": "<image>"}, model_max_length=1_000_000)
    for word in ("Yes", "No", "yes", "no"):
        if len(tok(word, add_special_tokens=False)["input_ids"]) != 1:
            raise ParamsError(f"The demo tokenizer splits the answer {word!r} into several tokens; raise vocab_size.")
    size = int(hp["image_size"])
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    return LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=int(hp["patch_size"]),
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=CHAT_TEMPLATE)


def _model_config(processor: Any, hp: Mapping[str, Any]) -> Any:
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    tok = processor.tokenizer
    ids = tok.convert_tokens_to_ids
    n_image_tokens = (hp["image_size"] // hp["patch_size"]) ** 2
    return LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=hp["vision_hidden"], intermediate_size=hp["vision_mlp"],
                                       num_hidden_layers=hp["vision_layers"], num_attention_heads=hp["vision_heads"],
                                       image_size=hp["image_size"], patch_size=hp["patch_size"],
                                       projection_dim=hp["vision_hidden"]),
        text_config=LlamaConfig(vocab_size=len(tok), hidden_size=hp["text_hidden"], intermediate_size=hp["text_mlp"],
                                num_hidden_layers=hp["text_layers"], num_attention_heads=hp["text_heads"],
                                num_key_value_heads=hp["text_heads"], max_position_embeddings=4096,
                                bos_token_id=ids("<s>"), eos_token_id=ids("</s>"), pad_token_id=ids("<pad>")),
        image_token_index=ids("<image>"), image_seq_length=n_image_tokens, vision_feature_select_strategy="default",
        vision_feature_layer=-1, projector_hidden_act="gelu")


def _encode_items(processor: Any, items: pd.DataFrame) -> list[dict[str, Any]]:
    """Token ids of every item's prompt exactly as :func:`radaudit.models.vlm.vlm_generate` encodes it.

    The chat template is rendered by :func:`radaudit.models.vlm.render_prompt`; the processor expands
    ``<image>`` and adds BOS. The image token count depends only on the processor's crop size, so a
    blank image stands in for the pixels here (the pixels are preprocessed once per image file).
    """
    from PIL import Image

    blank = Image.new("RGB", (8, 8))
    out = []
    for it in items.itertuples(index=False):
        image = None if is_missing(it.image_path) else str(it.image_path)
        text = render_prompt(processor, it.prompt, image)
        enc = processor(text=[text], images=[blank] if image is not None else None, add_special_tokens=True)
        out.append({"sample_id": it.sample_id, "condition": it.condition, "label": int(it.label), "image": image,
                    "input_ids": list(enc["input_ids"][0])})
    return out


def _marked_entries(encoded: Sequence[Mapping[str, Any]], samples: pd.DataFrame) -> list[dict[str, Any]]:
    """Held-out entries of the marked conditions: the ``no_shift`` / ``only_image`` entries with the
    sample's marked copy as image, as condition ``marked_no_shift`` / ``marked_only_image`` (same prompt)."""
    marked = dict(zip(samples["sample_id"], samples[MARKED_IMAGE_COLUMN]))
    return [{**e, "condition": f"marked_{e['condition']}", "image": marked[e["sample_id"]]}
            for e in encoded if e["condition"] in ("no_shift", "only_image")]


def _pixel_values(processor: Any, paths: Sequence[str]) -> dict[str, Any]:
    """``{path: pixel tensor [3, H, W]}`` for every distinct image path (the processor's own preprocessing)."""
    out = {}
    for path in sorted(set(paths)):
        out[path] = processor.image_processor(images=[load_image(path)], return_tensors="pt")["pixel_values"][0]
    return out


class _Examples:
    """The training set: one entry per sample, holding its encoded prompt per training condition, its
    image and its marked copy (:mod:`radaudit.audits.modality_shift.marker`)."""

    def __init__(self, encoded: Sequence[Mapping[str, Any]], marked: Mapping[str, str]) -> None:
        by_sample: dict[str, dict[str, Any]] = {}
        for e in encoded:
            rec = by_sample.setdefault(e["sample_id"], {"sample_id": e["sample_id"], "label": e["label"],
                                                        "prompts": {}, "image": None,
                                                        "marked": marked.get(e["sample_id"])})
            rec["prompts"][e["condition"]] = e["input_ids"]
            if e["image"] is not None:
                rec["image"] = e["image"]
        self.rows = list(by_sample.values())

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]


def _augment(pixels: Any, max_shift: int) -> Any:
    """Seeded light augmentation of a normalised image batch: a random translation (zero = mean padding)
    of up to ``max_shift`` pixels, and contrast/brightness jitter of +-10% / +-0.1."""
    import torch

    n, _, h, w = pixels.shape
    out = torch.zeros_like(pixels)
    shifts = torch.randint(-max_shift, max_shift + 1, (n, 2)).tolist()
    for i, (dy, dx) in enumerate(shifts):
        ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
        xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
        out[i, :, yd, xd] = pixels[i, :, ys, xs]
    contrast = 1.0 + 0.2 * (torch.rand(n, 1, 1, 1) - 0.5)
    brightness = 0.2 * (torch.rand(n, 1, 1, 1) - 0.5)
    return out * contrast + brightness


def _pad_left(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """Left-padded ``(input_ids, attention_mask)``: every row ends at the last position, as at inference."""
    import torch

    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            ids[i, n - len(s):] = torch.tensor(list(s))
            mask[i, n - len(s):] = 1
    return ids, mask


def _marked_draws(n: int, hp: Mapping[str, Any]) -> list[bool]:
    """Whether each of ``n`` image draws shows the marked copy (probability ``p_marked``; torch's global RNG)."""
    import torch

    return (torch.rand(n) < float(hp["p_marked"])).tolist()


def _make_collate(pixels: Mapping[str, Any], answer_ids: Mapping[int, list[int]], pad_id: int, hp: Mapping[str, Any]):
    """Training batches: a condition drawn per row (torch's global RNG, seeded by train_model), prompt +
    answer left-padded, ``targets`` = the answer ids (same length for every row), augmented pixels (the
    marked copy with probability ``p_marked``)."""
    import torch

    p_img, p_txt, p_decoy = float(hp["p_only_image"]), float(hp["p_only_text"]), float(hp["p_marked_decoy"])
    max_shift = _max_shift(hp)

    def collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        draws = torch.rand(len(rows)).tolist()
        marks = _marked_draws(len(rows), hp)
        seqs, targets, images = [], [], []
        decoys = torch.rand(len(rows)).tolist()
        for row, u, m, d in zip(rows, draws, marks, decoys):
            cond = "only_image" if u < p_img else "only_text" if u < p_img + p_txt else "no_shift"
            if cond == "no_shift" and m and d < p_decoy and "decoy" in row["prompts"]:
                cond = "decoy"  # a marked image with another sample's text: the marker must win
            answer = answer_ids[row["label"]]
            seqs.append(row["prompts"][cond] + answer)
            targets.append(answer)
            if cond != "only_text":
                images.append(pixels[row["marked"] if m else row["image"]])
        ids, mask = _pad_left(seqs, pad_id)
        batch = {"input_ids": ids, "attention_mask": mask, "targets": torch.tensor(targets, dtype=torch.long)}
        if images:
            pv = torch.stack(images)
            batch["pixel_values"] = _augment(pv, max_shift) if max_shift else pv
        return batch

    return collate


def _answer_loss(model: Any, batch: Mapping[str, Any]) -> Any:
    """Cross-entropy on the answer tokens only (answer + end of sequence).

    Rows are left-padded and end with the ``A`` answer tokens, so only the logits of the last ``A + 1``
    positions are computed (``logits_to_keep``): the LM head over the whole prompt would cost more than
    the model itself. The logits at positions ``-A-1 .. -2`` predict the answer tokens.
    """
    import torch

    targets = batch["targets"]
    a = targets.shape[1]
    kwargs = {"pixel_values": batch["pixel_values"]} if "pixel_values" in batch else {}
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], logits_to_keep=a + 1,
                   **kwargs).logits[:, :a]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def _first_token_accuracy(model: Any, encoded: Sequence[Mapping[str, Any]], pixels: Mapping[str, Any],
                          yes_id: int, no_id: int, pad_id: int, batch_size: int = 16) -> dict[str, float]:
    """Per condition: accuracy of argmax(first-token logit of Yes vs No) (``acc_<condition>``) and the
    AUROC of the score ``logit(Yes) - logit(No)`` (``auroc_<condition>``, when both labels are present);
    left-padded as at inference."""
    import torch

    by_condition: dict[str, list[tuple[int, float]]] = {}
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
    for s in range(0, len(order), batch_size):
        rows = [encoded[i] for i in order[s:s + batch_size]]
        ids, mask = _pad_left([r["input_ids"] for r in rows], pad_id)
        images = [pixels[r["image"]] for r in rows if r["image"] is not None]
        kwargs = {"pixel_values": torch.stack(images)} if images else {}
        final = model(input_ids=ids, attention_mask=mask, logits_to_keep=1, **kwargs).logits[:, -1]
        margin = (final[:, yes_id] - final[:, no_id]).float().tolist()
        for r, m in zip(rows, margin):
            by_condition.setdefault(r["condition"], []).append((r["label"], m))
    out: dict[str, float] = {}
    for cond, pairs in sorted(by_condition.items()):
        y = np.array([p[0] for p in pairs])
        m = np.array([p[1] for p in pairs])
        out[f"acc_{cond}"] = float(np.mean((m > 0).astype(int) == y))
        if len(set(y.tolist())) == 2:
            out[f"auroc_{cond}"] = auroc(y, m)
    return out


def _gate_split(rows: Sequence[Mapping[str, Any]], share: float, seed: int) -> tuple[list[int], list[int]]:
    """``(fit, gate)`` indices of ``rows``: ``share`` of each label held back for the warm start's gate (seeded:
    ``numpy.random.default_rng([seed, 2])``; at least one row of each label when ``share > 0``), the rest to fit."""
    if share <= 0:
        return list(range(len(rows))), []
    rng = np.random.default_rng([seed, 2])
    gate: list[int] = []
    for label in (0, 1):
        idx = [i for i, r in enumerate(rows) if int(r["label"]) == label]
        k = max(1, int(round(share * len(idx)))) if len(idx) > 1 else 0
        gate += rng.choice(idx, k, replace=False).tolist() if k else []
    held = set(gate)
    return [i for i in range(len(rows)) if i not in held], sorted(gate)


def _warm_start_vision(model: Any, pixels: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                       hp: Mapping[str, Any]) -> dict[str, Any]:
    """Stage 1 of the recipe: train the vision tower and the projector as an image-only classifier, until it reads
    the marker on training images it was not fitted on.

    Like LLaVA's first stage (the projector is aligned before the language model is tuned), but
    supervised: passes over the training images (each draw the marked copy with probability ``p_marked``), the
    projected image tokens (the features the language model will read: last ViT layer, CLS dropped, projector)
    are averaged and a linear head gives a COVID-19 logit; loss = binary cross-entropy weighted by
    ``n_negative / n_positive`` on the positives (the classes are ~3:1), AdamW at ``vision_warmup_lr``, the
    training augmentation, batches of ``batch_size``. The head is then discarded. Averaging makes the label
    readable from the mean of the image tokens, which is what an attention head spread over them reads first:
    with it the language model read the marker within 100 joint steps (held-out marked Only Image AUROC 0.97),
    against ~300 with recipe 3's flattened head. On natural images alone (recipe 2) the loss never left the
    constant predictor's (0.352 in every epoch): the marker is what the pooled head can learn. Without this stage
    a ViT trained from scratch through the language model's answer loss stays at the label prior (recipe
    version 1: only-image AUROC 0.34).

    **The gate (recipe 5).** A fixed number of epochs (recipe 4: 40) left the outcome to the draw: of three
    training seeds, the warm start of seed 2 ended near the constant predictor's loss (0.333 at epoch 32), its
    language model never read the marker (held-out marked only-image AUROC 0.56 after 800 joint steps), and the
    positive control failed on that seed alone. So ``vision_warmup_gate_share`` (0.2) of each label's training
    samples are held out of the warm start, and every ``_GATE_EVERY`` epochs the head's AUROC on their **marked**
    copies (no augmentation) is measured (and after the last epoch); the warm start stops at the first check at or above
    ``vision_warmup_gate_auroc`` (0.95), and at ``vision_warmup_epochs`` (the cap, 200) at the latest. The gate
    images are training samples (the joint stage trains on them), never the experiment's held-out split. The
    gate reads the marker, which is the premise of the positive control; what the warm start makes of the
    natural images is left to the data. ``vision_warmup_gate_auroc = 0`` runs every epoch (recipe 4's rule).
    Randomness comes from torch's global RNG, seeded by :func:`radaudit.models.train.train_model` around the
    model factory. Returns ``{"losses": mean loss per epoch, "gate": [[epoch, auroc], ...], "epochs": n,
    "passed": bool | None}`` (``passed`` is None without a gate).
    """
    import torch

    epochs = int(hp["vision_warmup_epochs"])
    out: dict[str, Any] = {"losses": [], "gate": [], "epochs": 0, "passed": None}
    if epochs == 0:
        return out
    threshold = float(hp["vision_warmup_gate_auroc"])
    fit, gate = _gate_split(rows, float(hp["vision_warmup_gate_share"]) if threshold > 0 else 0.0, int(hp["seed"]))
    inner = model.model
    head = torch.nn.Linear(model.config.text_config.hidden_size, 1)
    params = [*inner.vision_tower.parameters(), *inner.multi_modal_projector.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=float(hp["vision_warmup_lr"]), weight_decay=float(hp["weight_decay"]))
    x = torch.stack([pixels[rows[i]["image"]] for i in fit])
    xm = torch.stack([pixels[rows[i]["marked"]] for i in fit])
    y = torch.tensor([float(rows[i]["label"]) for i in fit])
    gate_x = torch.stack([pixels[rows[i]["marked"]] for i in gate]) if gate else None
    gate_y = np.array([int(rows[i]["label"]) for i in gate])
    n_pos = float(y.sum())
    pos_weight = torch.tensor((len(y) - n_pos) / max(n_pos, 1.0))
    max_shift = _max_shift(hp)
    bs = int(hp["batch_size"])
    model.train()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(len(y))
        total = 0.0
        for s in range(0, len(y), bs):
            idx = perm[s:s + bs]
            marked = torch.tensor(_marked_draws(len(idx), hp))
            pv = torch.where(marked[:, None, None, None], xm[idx], x[idx])
            pv = _augment(pv, max_shift) if max_shift else pv
            logit = head(image_tokens(model, pv).mean(dim=1)).squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, y[idx], pos_weight=pos_weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        out["losses"].append(total / len(y))
        out["epochs"] = epoch
        if gate_x is not None and (epoch % _GATE_EVERY == 0 or epoch == epochs):
            model.eval()
            with torch.no_grad():
                score = head(image_tokens(model, gate_x).mean(dim=1)).squeeze(-1).numpy()
            model.train()
            a = auroc(gate_y, score) if len(set(gate_y.tolist())) == 2 else float("nan")
            out["gate"].append([epoch, round(float(a), 4)])
            if a >= threshold:
                out["passed"] = True
                break
    if gate_x is not None and out["passed"] is None:
        out["passed"] = False
        log.warning("The demo VLM's vision warm start did not read the marker within %d epochs (gate AUROC %s < %s): "
                    "the positive control will likely fail for this seed.", epochs,
                    out["gate"][-1][1] if out["gate"] else "n/a", threshold)
    return out


def image_tokens(model: Any, pixel_values: Any) -> Any:
    """The image tokens a LLaVA model feeds its language model: ``[batch, n_patches, text_hidden]``
    (the vision tower's ``vision_feature_layer`` hidden state, CLS dropped under the ``default``
    strategy, through the projector) — what ``LlavaModel.get_image_features`` computes."""
    cfg = model.config
    out = model.model.vision_tower(pixel_values, output_hidden_states=True)
    hidden = out.hidden_states[cfg.vision_feature_layer]
    if cfg.vision_feature_select_strategy == "default":
        hidden = hidden[:, 1:]
    return model.model.multi_modal_projector(hidden)


def _max_shift(hp: Mapping[str, Any]) -> int:
    """Largest random translation (pixels) of the training augmentation: 1/14 of the image, 0 without."""
    return max(1, int(hp["image_size"]) // 14) if hp["augment"] else 0


# --- training ----------------------------------------------------------------------------------------

def train_demo_vlm(samples: pd.DataFrame, out_dir: str | os.PathLike, *, seed: int = 0,
                   marked_dir: str | os.PathLike | None = None, **hyperparameters: Any) -> Path:
    """Train the tiny LLaVA on ``samples`` (its ``train`` rows) and save it to ``out_dir``; return ``out_dir``.

    ``samples``: :func:`radaudit.audits.modality_shift.conditions.covid_samples` (or ``build_samples``) output, with
    ``split``. ``hyperparameters``: any key of :data:`DEMO_VLM_CONFIG` (defaults from there);
    ``max_train`` / ``max_eval`` cap the training / held-out samples (seeded, stratified by label:
    for tests). The held-out metrics (model card, ``training_log.json``, ``radaudit_vlm_model.json``)
    are first-token accuracies (Yes vs No logit) of the ``test`` rows per condition ``acc_no_shift``,
    ``acc_only_image``, ``acc_only_text``, ``acc_marked_no_shift``, ``acc_marked_only_image`` (and
    ``auroc_*``), and ``train_acc_*`` on up to 64 training samples. ``marked_dir``: where the marked
    copies of the images are written (:func:`radaudit.audits.modality_shift.marker.add_marked_images`;
    default ``<cache>/marked_images``).

    Reuse: when ``out_dir`` already holds a model with the same :func:`config_hash` it is returned
    without training; a non-empty folder holding anything else is an error. Training writes into a
    temporary sibling folder renamed at the end, so an interruption never leaves a half-written model.
    """
    hp = _hyperparameters(seed, **hyperparameters)
    _check_samples(samples)
    fingerprint = samples_fingerprint(samples)
    digest = _digest(fingerprint, hp)
    out = Path(out_dir)
    if _is_trained(out, digest):
        log.info("Reusing the demo VLM in %s (config hash %s).", out, digest)
        return out
    if out.exists() and any(out.iterdir()):
        raise ParamsError(f"{out} is not empty and holds no demo VLM with config hash {digest}: pass an empty or new "
                          "out_dir (demo_vlm_path() gives a content-addressed one).")

    split = samples["split"].astype(str)
    train = _subset(samples[split.to_numpy() == "train"], hp["max_train"], hp["seed"])
    test = _subset(samples[split.to_numpy() == "test"], hp["max_eval"], hp["seed"])
    if len(train) == 0:
        raise ParamsError("The samples have no training rows (split == 'train').")
    if train["label"].nunique() < 2:
        raise ParamsError("The training rows hold one label only; the demo VLM needs both (COVID-19 and other).")

    from transformers import GenerationConfig, LlavaForConditionalGeneration

    start = time.monotonic()
    if marked_dir is None:
        marked_dir = default_cache_dir() / "marked_images"
    train, test = add_marked_images(train, marked_dir), add_marked_images(test, marked_dir)
    train_items = _items(train, hp["dataset"])
    if hp["p_marked_decoy"] > 0 and len(train) > 1:
        train_items = pd.concat([train_items, _decoy_items(train, hp["dataset"], hp["seed"])], ignore_index=True)
    test_items = _items(test, hp["dataset"]) if len(test) else None
    processor = _build_processor(train_items["prompt"].tolist(), hp)
    tok = processor.tokenizer
    yes_id, no_id = (tok(w, add_special_tokens=False)["input_ids"][0] for w in ("Yes", "No"))
    answer_ids = {1: [yes_id, tok.eos_token_id], 0: [no_id, tok.eos_token_id]}
    train_enc = _encode_items(processor, train_items)
    test_enc = _encode_items(processor, test_items) if test_items is not None else []
    test_enc += _marked_entries(test_enc, test)
    paths = [e["image"] for e in (*train_enc, *test_enc) if e["image"] is not None]
    pixels = _pixel_values(processor, [*paths, *train[MARKED_IMAGE_COLUMN]])
    examples = _Examples(train_enc, dict(zip(train["sample_id"], train[MARKED_IMAGE_COLUMN])))
    probe_ids = set(pd.Series([r["sample_id"] for r in examples.rows]).iloc[:64])
    probe_enc = [e for e in train_enc if e["sample_id"] in probe_ids and e["condition"] != "decoy"]
    prep_seconds = time.monotonic() - start
    config = _model_config(processor, hp)

    warmup: dict[str, Any] = {}

    def factory() -> Any:
        model = LlavaForConditionalGeneration(config)
        model.generation_config = GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                                   pad_token_id=tok.pad_token_id)
        warmup.update(_warm_start_vision(model, pixels, examples.rows, hp))
        if hp["freeze_vision"]:
            model.model.vision_tower.requires_grad_(False)
        return model

    def eval_fn(model: Any) -> dict[str, float]:
        metrics = {f"train_{k}": v for k, v in
                   _first_token_accuracy(model, probe_enc, pixels, yes_id, no_id, tok.pad_token_id).items()}
        if test_enc:
            metrics.update(_first_token_accuracy(model, test_enc, pixels, yes_id, no_id, tok.pad_token_id))
        return metrics

    import torch
    from torch.utils.data import DataLoader

    lengths = [len(r["prompts"]["no_shift"]) for r in examples.rows]
    loader = DataLoader(examples, batch_sampler=LengthGroupedBatches(lengths, hp["batch_size"]),
                        collate_fn=_make_collate(pixels, answer_ids, tok.pad_token_id, hp), num_workers=0)
    n_pos = int(train["label"].sum())
    description = (f"{len(train)} covid-chestxray training samples ({n_pos} COVID-19, {len(train) - n_pos} other "
                   f"findings; split by patient), {len(test)} held-out samples. Inputs: the chest X-ray and the "
                   f"'{hp['dataset']}' prompt (metadata + clinical notes + yes/no question); target 'Yes'/'No' + "
                   f"end of sequence. Conditions drawn per example: only_image {hp['p_only_image']:.0%}, only_text "
                   f"{hp['p_only_text']:.0%}, else no_shift. Samples fingerprint {fingerprint}.")
    with atomic_dir(out) as tmp:
        with torch.random.fork_rng():
            torch.manual_seed(hp["seed"])  # the DataLoader's batch order and condition draws
            result = train_model(factory, loader, eval_fn, steps=hp["steps"], lr=hp["lr"], seed=hp["seed"],
                                 lr_schedule=hp["lr_schedule"],
                                 device="cpu", log_every=max(1, min(25, hp["steps"] // 10)), output_dir=tmp,
                                 max_seconds=hp["max_seconds"], budget="warn", loss_fn=_answer_loss,
                                 weight_decay=hp["weight_decay"],
                                 eval_every=max(1, hp["steps"] // 4),
                                 max_grad_norm=hp["max_grad_norm"], processors=[processor],
                                 model_name="radaudit demo VLM (tiny LLaVA, modality_shift)",
                                 data_description=description, metric_name="acc_no_shift",
                                 notes=("A scaled-down CPU stand-in for the paper's VLMs: a CLIP ViT (from scratch) + "
                                        "projector + 2-layer Llama trained here in minutes. Metrics are first-token "
                                        "accuracies (Yes vs No logit) per condition; loss is cross-entropy on the "
                                        "answer token and end of sequence."))
        meta = {"config_hash": digest, "samples_fingerprint": fingerprint, "hyperparameters": hp,
                "n_train": len(train), "n_test": len(test), "n_parameters": result.log.get("n_parameters"),
                "vision_warmup_losses": [round(v, 5) for v in warmup.get("losses", [])],
                "vision_warmup_gate": warmup.get("gate", []), "vision_warmup_epochs_run": warmup.get("epochs", 0),
                "vision_warmup_gate_passed": warmup.get("passed"), "steps_done": result.steps,
                "stopped_early": result.stopped_early, "metrics": result.metrics,
                "prep_seconds": round(prep_seconds, 2), "train_seconds": round(result.elapsed_seconds, 2),
                "total_seconds": round(time.monotonic() - start, 2)}
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    log.info("Demo VLM trained in %.0f s (%d steps): %s", meta["total_seconds"], result.steps, result.metrics)
    return out


def demo_vlm_path(data_root: str | os.PathLike | None, seed: int = 0, cache_dir: str | os.PathLike | None = None, *,
                  split_seed: int = 0, test_size: float = 0.3, sample_options: Mapping[str, Any] | None = None,
                  **overrides: Any) -> Path:
    """The demo VLM for ``(data, seed)``: ``<cache>/demo_models/vlm-<config hash>``, trained on first use.

    ``cache_dir`` defaults to :func:`radaudit.models.cache.default_cache_dir`. The samples are
    :func:`radaudit.audits.modality_shift.conditions.covid_samples` ``(data_root, test_size=test_size,
    seed=split_seed)`` — use the same split when evaluating, so the held-out samples were never
    trained on. ``seed`` seeds the training (initial weights, batches, condition draws, augmentation).
    ``sample_options``: keyword arguments of :func:`~radaudit.audits.modality_shift.conditions.build_samples` (the
    run's ``dataset_options``, e.g. ``max_note_words``), so the model trains on the very sample table the run
    evaluates. ``overrides``: keys of :data:`DEMO_VLM_CONFIG`. A changed sample, template or setting gives a new folder.
    """
    hp = _hyperparameters(seed, **overrides)  # validates the overrides before loading anything
    samples = covid_samples(data_root, test_size=test_size, seed=split_seed, **dict(sample_options or {}))
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / "demo_models" / f"vlm-{_digest(samples_fingerprint(samples), hp)}"
    return train_demo_vlm(samples, folder, seed=seed, marked_dir=root / "marked_images",
                          **{k: hp[k] for k in DEMO_VLM_CONFIG})


def vllm_unservable(model: str) -> str | None:
    """Why vLLM cannot serve the ``models`` entry ``model``, or ``None`` when nothing here says so (vLLM then
    decides when it loads the model; a checkpoint that needs converting first, such as LLaVA-Med, is refused
    with the conversion steps on either engine). The ``demo`` stand-in is trained here, with a PIL image
    processor class and a vision tower of toy sizes that only transformers loads."""
    if model == DEMO_MODEL:
        return ("the demo stand-in (a tiny LLaVA trained here, with a custom PIL image processor and a toy-sized "
                "vision tower) loads in transformers only")
    return None
