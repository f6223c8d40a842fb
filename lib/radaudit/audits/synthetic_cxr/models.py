"""The synthetic-CXR experiment's ``demo`` networks: chest X-ray encoder, CLIP-style alignment, Siamese re-ID.

CheXGenBench (``../shared/papers/004_175f666718a5c618.txt``) scores synthetic radiographs with RadDino
(FID/KID/PRDC and the latent distance, §2.2–2.3), BioViL-T (the alignment score, §2.2) and the
Packhäuser et al. Siamese re-ID network (§2.3). None of them runs offline on 2 CPU cores, so the
``demo`` preset trains **small stand-ins** from scratch on the demo training images (covid-chestxray,
64×64 grayscale, a few hundred images) in about a minute each. They are far weaker than the paper's
networks; what they give is a working, checkable version of every metric. The held-out quality of
each is measured at the end of training and written into its model card so the notebook can print it.

Inputs (the experiment's image convention): ``images`` float32 ``[N, S, S]`` on [0, 1] and ``meta``
a DataFrame with one row per image — ``labels`` (list of label names; NA = none), ``view`` (optional:
PA / AP / AP SUPINE / LATERAL ...), ``prompt`` (the caption) and ``patient_id``. Training uses the
``train`` images only; the held-out images (``eval_*``: the test split, different patients) only
measure quality.

The three recipes (every setting is a hyperparameter, defaults in the ``DEMO_*_CONFIG`` dicts)
------------------------------------------------------------------------------------------------
**Encoder** (:func:`train_demo_encoder`; RadDino stand-in; a ``CXREncoderModel``): a tiny ResNet
(transformers ``ResNetModel``, basic blocks, widths 16-32-64-128, one block per stage, ~0.3M
parameters). Features = the 128-d global average pool of its last stage. Objective, summed over two
augmented copies of each image: (1) multi-label BCE on the label groups (positive classes weighted by
``neg/pos``, capped at 10: "No Finding" and "ARDS" are rare), (2) cross-entropy on the projection
(PA vs AP; ``view_target``), and (3) SimCLR's NT-Xent (temperature 0.2, weight 0.25) between the two
copies through a 2-layer projection head that is discarded for features. The saved weights are an
exponential moving average of the training weights (``ema_decay``), which steadies a network that
overfits ~300 images within a few hundred steps. Why: FID/KID/PRDC need features that know what chest X-rays look like
(anatomy, projection, opacities), which the supervised terms give, and that separate individual
images rather than collapsing each class to a point, which instance discrimination gives (RadDino
itself is a self-supervised DINOv2). The augmentations are deliberately mild and geometric/photometric
only — shift, rotation ±7°, scale 0.9–1.1, brightness/contrast — with **no blur, no noise and no
flips**: the features must stay sensitive to blur and noise (the degrader generator must get a bad
FID) and to laterality (a mirrored radiograph is not realistic).

**Alignment** (:func:`train_demo_clip`; BioViL-T stand-in; a ``CXRClipModel``): image tower = the same
tiny ResNet + a linear projection to 64-d; text tower = all-MiniLM-L6-v2 from PyPI, **frozen**
(mean-pooled, normalised sentence embeddings, computed once per caption) + a trained MLP projection
(384→256→64). Symmetric InfoNCE with a learned temperature (CLIP). Captions repeat (a few dozen
distinct "view + findings" captions), so a batch holds true pairs beyond the diagonal: the targets
are spread uniformly over every column with the same caption (multi-positive InfoNCE), instead of
punishing the model for matching an image to an identical caption. Same augmentations as above.

**Re-ID** (:func:`train_demo_reid`; Packhäuser stand-in; a ``SiameseReIDModel``): the architecture of
Packhäuser et al. — backbone → Linear(128, 128) → sigmoid embeddings, ``|e1 − e2|`` → Linear(128, 1)
→ sigmoid — with the tiny ResNet as backbone. Pairs are drawn afresh at every step (seeded), one per
training image as anchor: with probability ``p_positive`` (1/2) a positive, else a negative (an image
of a different training patient). A positive is another image of the same patient, or — with
probability ``p_self`` (0.3), and always for patients with a single image — the anchor itself under
independent augmentation; half of those (``p_copy``) are exact copies of the anchor's augmented image.
Both images then get their own slight Gaussian noise (σ uniform in [0, 0.03]). BCE on the logit.
Two choices differ from Packhäuser's training and are made for what the score is used for here
(memorisation, §2.3): (a) self-pairs and copies teach that a near-copy of a training image is the same
patient — with only ~100 multi-image training patients, the network otherwise stays unsure even for
identical images; (b) ``monotone_head``: the head's weights are constrained ≤ 0
(``−softplus``), so the score can only fall as the embeddings move apart and an exact copy gets the
highest score the network can give. With an unconstrained head (the paper's), our small network
scored some random different-patient pairs *above* exact copies, which would let a generator that
outputs unrelated images look more "re-identifiable" than one that copies its training set.
The patients are the data loader's, where ids that share a picture are one patient
(:mod:`radaudit.data.image_duplicates`): with the ids as listed, ten exact copies in covid-chestxray were "different
patients", so the network was also taught to call a copy another patient, and the privacy null held exact copies
(seed 0: the null's top 1% at 0.782 against a noisy copy's ~0.79, and 5 of 100 memoriser prompts fell below it).
Held-out metrics: verification AUROC on :func:`verification_pairs` of the held-out patients (every
same-patient pair against as many random different-patient pairs), the mean score of identical and
noisy-copy pairs, and ``threshold_at_fpr_0.01`` (the 99th percentile of all held-out different-patient
pair scores): the paper's δ = 0.85 belongs to the paper's network; this is the demo network's
threshold with a 1% false-positive rate, for a second "count above δ" column.

Reuse: ``demo_*_path(train_images, train_meta, eval_images, eval_meta, seed=, cache_dir=, **hp)``
returns ``<cache>/demo_models/<kind>-<config hash>``, training on first use. The hash covers the image
bytes, the metadata columns the recipe reads, every hyperparameter, the seed, :data:`RECIPE_VERSION`
(and for CLIP the text encoder and its version). The folder holds the model
(``save_pretrained``: ``config.json`` + ``model.safetensors``; load with
:func:`radaudit.models.cxr_nets.load_cxr_model`), ``README.md`` (model card with the held-out
metrics), ``training_log.json``, ``loss_curve.png/.pdf`` and :data:`CARD_FILE` (read with
:func:`model_card`). Training writes into a temporary sibling folder renamed at the end
(:func:`radaudit.paths.atomic_dir`). The same data, settings and seed give the same weights.

::

    enc_dir = demo_encoder_path(train_x, train_meta, test_x, test_meta, seed=0)
    encoder = CXREncoder(enc_dir)                 # an ImageEncoder: FID/KID/PRDC, latent distance
    clip = ClipAlignment(demo_clip_path(train_x, train_meta, test_x, test_meta))
    scorer = SiameseScorer(demo_reid_path(train_x, train_meta, test_x, test_meta))   # a PairScorer
    model_card(enc_dir)["metrics"]                # held-out quality, for the notebook
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.cache import default_cache_dir
from radaudit.models.cxr_nets import model_classes
from radaudit.models.encoders import TextEncoder
from radaudit.models.resolver import DEFAULT_TEXT_ENCODER, resolve_model
from radaudit.models.train import train_model
from radaudit.paths import atomic_dir, reusable_model_dir
from radaudit.stats import auroc

__all__ = [
    "CARD_FILE",
    "DEMO_CLIP_CONFIG",
    "DEMO_ENCODER_CONFIG",
    "DEMO_REID_CONFIG",
    "RECIPE_VERSION",
    "augment",
    "binary_auroc",
    "config_hash",
    "cosine_knn",
    "data_fingerprint",
    "demo_clip_path",
    "demo_encoder_path",
    "demo_reid_path",
    "label_names_of",
    "model_card",
    "pixel_view_probe_predictions",
    "train_demo_clip",
    "train_demo_encoder",
    "train_demo_reid",
    "verification_pairs",
    "view_correctness",
]

log = logging.getLogger(__name__)

#: Written last into a model folder; its ``config_hash`` decides whether a folder can be reused.
CARD_FILE = "radaudit_cxr_model.json"
#: Bump when a recipe changes in a way the hyperparameters do not show.
RECIPE_VERSION = 3  # 2: encoder view target = projection (PA/AP), EMA weights, 400 steps, lighter SSL (issue 21);
#                     3: card adds the pixel probe

_BACKBONE = {"embedding_size": 16, "hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 1, 1], "layer_type": "basic"}
_AUGMENT = {"max_shift": 0.06, "max_rotate": 7.0, "scale_min": 0.9, "scale_max": 1.1, "brightness": 0.08,
            "contrast": 0.15}

#: The demo encoder's settings. ``steps`` is fixed (the model is a function of data and seed, not of the
#: machine's speed); ``max_seconds`` is only a budget guard. Recipe 1 (200 steps at lr 2e-3, SimCLR
#: weight 1, the three views as classes) could not tell the views apart on held-out patients (0.48
#: against a majority share of 0.52; issue 21): the contrastive term dominated, an erect and a supine AP
#: film are not separable at 64 px from ~300 images, and the last weights of a fast-overfitting run
#: are a noisy pick. Recipe 2: the view target is the **projection** (``view_target="projection"``:
#: PA vs AP, AP supine counted as AP) at weight 2, SimCLR at weight 0.25, lr 1e-3 with weight decay
#: 1e-3, and the kept weights are an exponential moving average (``ema_decay``) of the training weights.
#: ~2-3 min on 2 busy cores at 64 px; ``max_seconds`` (all three networks) is a generous guard, so a
#: model trained on a heavily shared machine is not cut short (a truncated model is retrained).
DEMO_ENCODER_CONFIG: dict[str, Any] = {
    **_BACKBONE, **_AUGMENT,
    "label_names": None,  # None: every label in the training metadata, sorted
    "use_view": True, "view_target": "projection", "ssl_dim": 64, "temperature": 0.2,
    "label_weight": 1.0, "view_weight": 2.0, "ssl_weight": 0.25, "max_pos_weight": 10.0, "ema_decay": 0.99,
    "steps": 400, "batch_size": 64, "lr": 1e-3, "weight_decay": 1e-3, "max_seconds": 1800.0, "knn_k": 5,
}
#: How ``view_target`` maps a view name to the encoder's view class.
VIEW_TARGETS: tuple[str, ...] = ("projection", "view")
#: The demo CLIP model's settings (~30 s on 2 busy cores at 64 px, plus loading the text encoder).
DEMO_CLIP_CONFIG: dict[str, Any] = {
    **_BACKBONE, **_AUGMENT,
    "text_encoder": DEFAULT_TEXT_ENCODER, "proj_dim": 64, "text_hidden": 256, "temperature_init": 0.07,
    "steps": 400, "batch_size": 64, "lr": 2e-3, "weight_decay": 1e-4, "max_seconds": 1800.0,
}
#: The demo re-ID network's settings (~50 s on 2 busy cores at 64 px).
DEMO_REID_CONFIG: dict[str, Any] = {
    **_BACKBONE, **_AUGMENT,
    "n_features": 128, "p_positive": 0.5, "p_self": 0.3, "p_copy": 0.5, "noise_max": 0.03, "monotone_head": True,
    "steps": 1000, "batch_size": 32, "lr": 2e-3, "weight_decay": 1e-4, "max_seconds": 1800.0,
    "max_eval_pairs": 2000,
}

_KINDS = {"encoder": DEMO_ENCODER_CONFIG, "clip": DEMO_CLIP_CONFIG, "reid": DEMO_REID_CONFIG}
_COLUMNS = {"encoder": ("labels", "view"), "clip": ("prompt",), "reid": ("patient_id",)}


def _pixel_view_probe(x_tr: np.ndarray, v_tr: np.ndarray, x_ev: np.ndarray, v_ev: np.ndarray) -> float | None:
    """Held-out view accuracy of a linear probe on the raw pixels: how much of the view the images carry.

    A logistic regression (scikit-learn, L2 with ``C=0.01``, standardised pixels) on the training images
    (flattened, the encoder's own size) with a known view, scored on the held-out images with a known view.
    The encoder's view accuracy is read beside it: an encoder that does not beat the pixels has learnt
    nothing a linear model on pixels could not. ``None`` when either side lacks two views.
    """
    pred = pixel_view_probe_predictions(x_tr, v_tr, x_ev, v_ev)
    if pred is None:
        return None
    ev = v_ev >= 0
    return float((pred[ev] == v_ev[ev]).mean())


def pixel_view_probe_predictions(x_tr: np.ndarray, v_tr: np.ndarray, x_ev: np.ndarray, v_ev: np.ndarray
                                 ) -> np.ndarray | None:
    """The pixel probe of the encoder's model card (logistic regression, L2 with ``C=0.01``, on standardised
    flattened pixels of the training images with a known view code ``v_tr >= 0``): its predicted view code for
    every held-out image (``-1`` where ``v_ev`` is unknown). ``None`` when either side lacks two views / a
    known view. The card's ``pixel_probe_view_accuracy`` is the accuracy of these predictions."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    v_tr, v_ev = np.asarray(v_tr), np.asarray(v_ev)
    tr, ev = v_tr >= 0, v_ev >= 0
    if len(np.unique(v_tr[tr])) < 2 or not ev.any():
        return None
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.01, max_iter=5000))
    clf.fit(x_tr[tr].reshape(int(tr.sum()), -1), v_tr[tr])
    pred = np.full(len(v_ev), -1, dtype=np.int64)
    pred[ev] = clf.predict(x_ev[ev].reshape(int(ev.sum()), -1))
    return pred


def view_correctness(encoder: Any, train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray,
                     eval_meta: pd.DataFrame, view_target: str = "projection") -> pd.DataFrame | None:
    """Per held-out image with a known view: whether the demo encoder's view head and the pixel probe
    (:func:`pixel_view_probe_predictions`, trained on ``train_images``) get its view right — the paired data of
    :func:`radaudit.audits.synthetic_cxr.controls.view_gain`. ``encoder``: a ``CXREncoderModel``, or anything
    with one as ``.model`` (a :class:`~radaudit.models.cxr_nets.CXREncoder`). The head is read exactly as the
    model card's ``view_accuracy`` (same images, same tensors), so the accuracies here equal the card's.
    Columns ``row`` (index into ``eval_meta``), ``view``, ``encoder_correct``, ``pixel_correct``; ``None`` when
    the encoder has no view head or the views do not allow a probe. Nothing is trained but the probe."""
    import torch

    model = getattr(encoder, "model", encoder)
    view_names = list(getattr(model.config, "view_names", []) or [])
    if len(view_names) < 2 or getattr(model, "view_head", None) is None:
        return None
    v_index = {v: i for i, v in enumerate(view_names)}
    v_tr = np.array([v_index.get(v, -1) if v is not None else -1 for v in _views(train_meta, view_target)], dtype=np.int64)
    v_ev = np.array([v_index.get(v, -1) if v is not None else -1 for v in _views(eval_meta, view_target)], dtype=np.int64)
    probe = pixel_view_probe_predictions(np.asarray(train_images), v_tr, np.asarray(eval_images), v_ev)
    if probe is None:
        return None
    X_ev = _tensor(np.asarray(eval_images))
    device = next(model.parameters()).device
    with torch.inference_mode():
        vlog = torch.cat([model(X_ev[i:i + 128].to(device))["view_logits"].float().cpu()
                          for i in range(0, len(X_ev), 128)]).numpy()
    known = np.flatnonzero(v_ev >= 0)
    return pd.DataFrame({"row": known, "view": [view_names[v] for v in v_ev[known]],
                         "encoder_correct": vlog.argmax(1)[known] == v_ev[known],
                         "pixel_correct": probe[known] == v_ev[known]})


# --- inputs -------------------------------------------------------------------------------------------

def _check_set(images: Any, meta: Any, name: str, required: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    if not isinstance(images, np.ndarray) or images.ndim != 3:
        raise ParamsError(f"{name}_images must be a float32 numpy array [N, S, S] on [0, 1] (the experiment's image "
                          f"convention), got {type(images).__name__}"
                          + (f" of shape {images.shape}" if isinstance(images, np.ndarray) else "") + ".")
    if not np.issubdtype(images.dtype, np.floating):
        raise ParamsError(f"{name}_images must be float on [0, 1], got dtype {images.dtype} (divide 8-bit images by 255).")
    if images.shape[1] != images.shape[2]:
        raise ParamsError(f"{name}_images must be square [N, S, S], got {images.shape}: load them at one size.")
    if not np.isfinite(images).all() or images.min(initial=0.0) < 0.0 or images.max(initial=0.0) > 1.0:
        raise DataFormatError(f"{name}_images must be finite and on [0, 1].")
    if not isinstance(meta, pd.DataFrame):
        raise ParamsError(f"{name}_meta must be a pandas DataFrame, got {type(meta).__name__}.")
    if len(meta) != len(images):
        raise DataFormatError(f"{name}_meta has {len(meta)} rows but {name}_images has {len(images)} images.")
    missing = [c for c in required if c not in meta.columns]
    if missing:
        raise ParamsError(f"{name}_meta lacks column(s) {missing} (has {list(meta.columns)}).")
    return np.ascontiguousarray(images, dtype=np.float32), meta.reset_index(drop=True)


def _labels_list(value: Any) -> list[str]:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def label_names_of(meta: pd.DataFrame) -> list[str]:
    """Every label name in ``meta["labels"]``, sorted."""
    return sorted({lab for v in meta["labels"] for lab in _labels_list(v)})


def _label_matrix(meta: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    rows = [set(_labels_list(v)) for v in meta["labels"]]
    return np.array([[n in r for n in names] for r in rows], dtype=np.float32).reshape(len(rows), len(names))


def _views(meta: pd.DataFrame, target: str = "view") -> list[str | None]:
    """The view of each row; ``target="projection"``: PA / AP / LATERAL (an "AP SUPINE" film is an AP projection)."""
    if "view" not in meta.columns:
        return [None] * len(meta)
    out = [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))) else str(v)
           for v in meta["view"]]
    if target == "projection":
        def proj(v: str) -> str:
            u = v.upper().strip()
            if "LAT" in u:
                return "LATERAL"
            return "AP" if u.startswith("AP") else "PA" if u.startswith("PA") else v
        out = [None if v is None else proj(v) for v in out]
    return out


def _json_value(v: Any) -> Any:
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_json_value(x) for x in v]
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v if isinstance(v, (int, float, str, bool)) else str(v)


def data_fingerprint(images: np.ndarray, meta: pd.DataFrame, columns: Sequence[str]) -> str:
    """SHA-256 (16 hex) of the image array (shape, dtype float32, bytes) and ``meta[columns]`` (present ones), in order."""
    h = hashlib.sha256()
    arr = np.ascontiguousarray(images, dtype=np.float32)
    h.update(json.dumps({"shape": list(arr.shape), "dtype": "float32"}).encode())
    h.update(arr.tobytes())
    cols = [c for c in columns if c in meta.columns]
    h.update(json.dumps(cols).encode())
    for row in meta[cols].itertuples(index=False):
        h.update(json.dumps([_json_value(v) for v in row], ensure_ascii=False, default=str).encode())
    return h.hexdigest()[:16]


def _hyperparameters(kind: str, seed: int, hp: Mapping[str, Any]) -> dict[str, Any]:
    base = _KINDS[kind]
    unknown = sorted(set(hp) - set(base))
    if unknown:
        raise ParamsError(f"Unknown demo-{kind} setting(s) {unknown}; allowed: {sorted(base)} (and seed).")
    out = {**base, **hp}
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    for k in ("steps", "batch_size", "embedding_size"):
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
            raise ParamsError(f"{k} must be a positive integer, got {v!r}.")
        out[k] = int(v)
    if out["batch_size"] < 2:
        raise ParamsError("batch_size must be at least 2 (contrastive and pair losses need several images).")
    for k in ("hidden_sizes", "depths"):
        v = out[k]
        if not isinstance(v, (list, tuple)) or not v or not all(isinstance(x, (int, np.integer)) and x > 0 for x in v):
            raise ParamsError(f"{k} must be a non-empty list of positive integers, got {v!r}.")
        out[k] = [int(x) for x in v]
    if len(out["hidden_sizes"]) != len(out["depths"]):
        raise ParamsError(f"hidden_sizes {out['hidden_sizes']} and depths {out['depths']} need one entry per stage.")
    for k, v in out.items():
        if isinstance(v, (float, np.floating)):
            out[k] = float(v)
    if not (0 < out["scale_min"] <= out["scale_max"]):
        raise ParamsError(f"scale_min ({out['scale_min']}) must be > 0 and <= scale_max ({out['scale_max']}).")
    if out.get("max_seconds") is not None and float(out["max_seconds"]) <= 0:
        raise ParamsError(f"max_seconds must be positive or None, got {out['max_seconds']!r}.")
    if kind == "encoder" and out["label_names"] is not None:
        out["label_names"] = [str(x) for x in out["label_names"]]
    if kind == "encoder" and out["view_target"] not in VIEW_TARGETS:
        raise ParamsError(f"view_target must be one of {VIEW_TARGETS}, got {out['view_target']!r}.")
    if kind == "encoder" and not (0.0 <= out["ema_decay"] < 1.0):
        raise ParamsError(f"ema_decay must be in [0, 1) (0: keep the last weights), got {out['ema_decay']!r}.")
    if kind == "reid" and not (0.0 < out["p_positive"] < 1.0):
        raise ParamsError(f"p_positive must be in (0, 1), got {out['p_positive']!r}.")
    for k in ("p_self", "p_copy"):
        if kind == "reid" and not (0.0 <= out[k] <= 1.0):
            raise ParamsError(f"{k} must be in [0, 1], got {out[k]!r}.")
    out["seed"] = int(seed)
    out["recipe_version"] = RECIPE_VERSION
    return dict(sorted(out.items()))


def _text_encoder_identity(spec: str) -> dict[str, Any]:
    resolved = resolve_model(spec)
    return {"spec": resolved.spec, "revision": resolved.revision, "source": resolved.source}


def _digest(kind: str, fingerprints: Mapping[str, str], hp: Mapping[str, Any]) -> str:
    extra = _text_encoder_identity(hp["text_encoder"]) if kind == "clip" else None
    blob = json.dumps({"kind": kind, "data": dict(fingerprints), "hyperparameters": dict(hp), "text_encoder": extra},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _fingerprints(kind: str, train: tuple[np.ndarray, pd.DataFrame],
                  held: tuple[np.ndarray, pd.DataFrame] | None) -> dict[str, str]:
    cols = _COLUMNS[kind]
    out = {"train": data_fingerprint(train[0], train[1], cols)}
    out["eval"] = data_fingerprint(held[0], held[1], cols) if held is not None else "none"
    return out


def config_hash(kind: str, train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None = None,
                eval_meta: pd.DataFrame | None = None, *, seed: int = 0, **hyperparameters: Any) -> str:
    """The identity (16 hex) of a demo network: ``kind`` (``"encoder"``, ``"clip"``, ``"reid"``), data, settings, seed."""
    if kind not in _KINDS:
        raise ParamsError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}.")
    hp = _hyperparameters(kind, seed, hyperparameters)
    train, held = _inputs(kind, train_images, train_meta, eval_images, eval_meta)
    return _digest(kind, _fingerprints(kind, train, held), hp)


def _inputs(kind: str, train_images: Any, train_meta: Any, eval_images: Any, eval_meta: Any
            ) -> tuple[tuple[np.ndarray, pd.DataFrame], tuple[np.ndarray, pd.DataFrame] | None]:
    required = {"encoder": ("labels",), "clip": ("prompt",), "reid": ("patient_id",)}[kind]
    train = _check_set(train_images, train_meta, "train", required)
    if (eval_images is None) != (eval_meta is None):
        raise ParamsError("Pass both eval_images and eval_meta (the held-out set), or neither.")
    held = _check_set(eval_images, eval_meta, "eval", required) if eval_images is not None else None
    if held is not None and held[0].shape[1:] != train[0].shape[1:]:
        raise ParamsError(f"eval_images are {held[0].shape[1:]} but train_images are {train[0].shape[1:]}: use one size.")
    return train, held


def _is_trained(folder: Path, digest: str) -> bool:
    return reusable_model_dir(folder, CARD_FILE, digest, required=('config.json', 'model.safetensors'), required_globs=(),
                              key='config_hash')


def model_card(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The :data:`CARD_FILE` of a trained demo network: kind, config hash, settings, held-out ``metrics``, timing."""
    file = Path(os.fspath(path)) / CARD_FILE
    try:
        return json.loads(file.read_text())
    except OSError as err:
        raise ParamsError(f"{str(path)!r} holds no demo network card ({CARD_FILE}); train one with "
                          "demo_encoder_path / demo_clip_path / demo_reid_path.") from err


# --- metrics ------------------------------------------------------------------------------------------

def binary_auroc(y_true: Any, scores: Any) -> float:
    """Area under the ROC curve = P(score of a positive > score of a negative) + ½ P(tie) (Mann–Whitney U):
    :func:`radaudit.stats.auroc` on ``y_true`` read as booleans (any non-zero label is positive: the conversion
    is made here). NaN when it holds one class or a score is missing."""
    y = np.asarray(y_true).astype(bool).reshape(-1)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(y) != len(s):
        raise DataFormatError(f"{len(y)} labels but {len(s)} scores.")
    return auroc(y, s, undefined="nan")


# --- augmentation (torch; random numbers from torch's global generator, seeded by train_model) ---------

def augment(x: Any, *, max_shift: float = 0.06, max_rotate: float = 7.0, scale_min: float = 0.9,
            scale_max: float = 1.1, brightness: float = 0.08, contrast: float = 0.15, noise_max: float = 0.0,
            generator: Any = None) -> Any:
    """A randomly shifted/rotated/scaled, brightness/contrast-jittered copy of ``x`` (``[n, 1, S, S]`` on [0, 1]).

    Geometry: one affine map per image (shift up to ``max_shift`` of the width, rotation up to
    ``max_rotate`` degrees, isotropic scale in ``[scale_min, scale_max]``), bilinear resampling with
    border replication. Intensity: ``(x − mean)·c + mean + b`` with ``c`` in ``1 ± contrast``, ``b`` in
    ``± brightness``; then Gaussian noise with σ uniform in ``[0, noise_max]`` (0: none); clipped to [0, 1].
    No flips and no blur (see the module docstring).
    """
    import torch
    import torch.nn.functional as F

    n = x.shape[0]
    kw = {"generator": generator, "device": x.device, "dtype": x.dtype}

    def u(lo: float, hi: float) -> Any:
        return lo + (hi - lo) * torch.rand(n, **kw)

    angle = u(-max_rotate, max_rotate) * (math.pi / 180.0)
    scale = u(scale_min, scale_max)
    tx, ty = u(-2 * max_shift, 2 * max_shift), u(-2 * max_shift, 2 * max_shift)  # grid units: width 2
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    y = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    c = u(1 - contrast, 1 + contrast).view(n, 1, 1, 1)
    b = u(-brightness, brightness).view(n, 1, 1, 1)
    mean = y.mean(dim=(1, 2, 3), keepdim=True)
    y = (y - mean) * c + mean + b
    if noise_max > 0:
        sigma = u(0.0, noise_max).view(n, 1, 1, 1)
        y = y + sigma * torch.randn(y.shape, **kw)
    return y.clamp(0.0, 1.0)


def _aug_kwargs(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {k: hp[k] for k in _AUGMENT}


def _tensor(images: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))[:, None]


def _batched_apply(fn: Callable[[Any], Any], x: Any, batch_size: int = 128) -> Any:
    import torch

    outs = [fn(x[i:i + batch_size]) for i in range(0, x.shape[0], batch_size)]
    return torch.cat(outs) if outs else None


def _backbone_config(hp: Mapping[str, Any], image_size: int) -> dict[str, Any]:
    return {"num_channels": 1, "embedding_size": hp["embedding_size"], "hidden_sizes": hp["hidden_sizes"],
            "depths": hp["depths"], "layer_type": hp["layer_type"], "image_size": int(image_size),
            "resize": "center_crop", "resample": "bicubic"}


# --- shared training driver ------------------------------------------------------------------------------

def _train(kind: str, out_dir: str | os.PathLike, digest: str, hp: Mapping[str, Any], fingerprints: Mapping[str, str],
           build: Callable[[], Any], n_anchors: int, loss_fn: Callable[[Any, Any], Any],
           eval_fn: Callable[[Any], dict[str, float]] | None, description: str, notes: str,
           extra: Mapping[str, Any], finalize: Callable[[Any], None] | None = None) -> Path:
    """Train with :func:`radaudit.models.train.train_model` and save; ``finalize(model)`` runs once after the last
    step, before the held-out evaluation and the save (e.g. swapping in averaged weights)."""
    if finalize is not None:
        inner = eval_fn

        def eval_fn(model: Any) -> dict[str, float]:  # train_model evaluates once, at the end, then saves
            finalize(model)
            return inner(model) if inner is not None else {}

    out = Path(out_dir)
    if _is_trained(out, digest):
        log.info("Reusing the demo %s in %s (config hash %s).", kind, out, digest)
        return out
    if out.exists() and any(out.iterdir()):
        raise ParamsError(f"{out} is not empty and holds no demo {kind} with config hash {digest}: pass an empty or new "
                          f"out_dir (demo_{kind}_path() gives a content-addressed one).")
    start = time.monotonic()
    with atomic_dir(out) as tmp:
        result = train_model(build, list(range(n_anchors)), eval_fn, steps=hp["steps"], lr=hp["lr"],
                             batch_size=min(hp["batch_size"], n_anchors), seed=hp["seed"], device="cpu",
                             output_dir=tmp, max_seconds=hp["max_seconds"], budget="warn", loss_fn=loss_fn,
                             weight_decay=hp["weight_decay"], max_grad_norm=5.0,
                             model_name=f"radaudit demo {kind} ({description})", data_description=notes,
                             metric_name="metric", log_every=20,
                             notes="A small stand-in trained from scratch for the demo preset; see "
                                   "radaudit.audits.synthetic_cxr.models for the recipe.")
        card = {"kind": kind, "config_hash": digest, "recipe_version": RECIPE_VERSION, "data": dict(fingerprints),
                "hyperparameters": dict(hp), "metrics": result.metrics, "steps": result.steps,
                "stopped_early": result.stopped_early, "stop_reason": result.stop_reason,
                "train_seconds": round(result.elapsed_seconds, 2),
                "total_seconds": round(time.monotonic() - start, 2), **dict(extra)}
        (tmp / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    log.info("Trained the demo %s in %.1f s: %s", kind, card["total_seconds"], result.metrics)
    return out


def _cache_folder(kind: str, digest: str, cache_dir: str | os.PathLike | None) -> Path:
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / "demo_models" / f"cxr-{kind}-{digest}"


# --- 1. the encoder (RadDino stand-in) -------------------------------------------------------------------

def _nt_xent(z1: Any, z2: Any, temperature: float) -> Any:
    """SimCLR's NT-Xent loss between two views ``[n, d]`` (each row's positive is its other view)."""
    import torch
    import torch.nn.functional as F

    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, target)


def _encoder_targets(hp: Mapping[str, Any], meta: pd.DataFrame) -> tuple[list[str], np.ndarray, list[str],
                                                                      dict[str, int], np.ndarray, np.ndarray]:
    """The encoder's training targets: ``(label names, label matrix, view names, view index, view codes,
    pos_weight)``; views need two distinct values (else no view head), a view code is -1 where unknown."""
    names = hp["label_names"] if hp["label_names"] is not None else label_names_of(meta)
    y_tr = _label_matrix(meta, names)
    views_tr = _views(meta, hp["view_target"])
    view_names = sorted({v for v in views_tr if v is not None}) if hp["use_view"] else []
    if len(view_names) < 2:
        view_names = []
    v_index = {v: i for i, v in enumerate(view_names)}
    v_tr = np.array([v_index.get(v, -1) if v is not None else -1 for v in views_tr], dtype=np.int64)
    if not names and not view_names and hp["ssl_weight"] <= 0:
        raise ParamsError("Nothing to train the encoder on: no labels, fewer than two views and ssl_weight 0.")
    pos = y_tr.sum(axis=0)
    pos_weight = np.clip((len(y_tr) - pos) / np.maximum(pos, 1.0), 1.0, hp["max_pos_weight"]) if names else np.zeros(0)
    return names, y_tr, view_names, v_index, v_tr, pos_weight


def _encoder_loss(hp: Mapping[str, Any], X: Any, Y: Any, V: Any, PW: Any, aug: Mapping[str, Any],
                  ema: dict[str, Any]) -> Callable[[Any, Any], Any]:
    """The encoder's training loss ``loss_fn(model, idx)``: label BCE + view cross-entropy + NT-Xent on two
    augmentations; with ``ema_decay`` it first folds the current weights into ``ema`` (read by
    :func:`_ema_finalize`)."""
    import torch
    import torch.nn.functional as F

    def loss_fn(model: Any, idx: Any) -> Any:
        if hp["ema_decay"] > 0:  # the average of the weights after every step so far (updated before this one)
            with torch.no_grad():
                params = dict(model.named_parameters())
                if not ema:
                    ema.update({k: p.detach().clone() for k, p in params.items()})
                else:
                    for k, p in params.items():
                        ema[k].mul_(hp["ema_decay"]).add_(p.detach(), alpha=1.0 - hp["ema_decay"])
        x = X[idx]
        out = model(torch.cat([augment(x, **aug), augment(x, **aug)]))
        n = x.shape[0]
        loss = torch.zeros((), dtype=torch.float32)
        if out["label_logits"] is not None and hp["label_weight"] > 0:
            loss = loss + hp["label_weight"] * F.binary_cross_entropy_with_logits(
                out["label_logits"], torch.cat([Y[idx], Y[idx]]), pos_weight=PW)
        if out["view_logits"] is not None and hp["view_weight"] > 0:
            v = torch.cat([V[idx], V[idx]])
            if (v >= 0).any():
                loss = loss + hp["view_weight"] * F.cross_entropy(out["view_logits"], v, ignore_index=-1)
        if out["ssl"] is not None and hp["ssl_weight"] > 0:
            loss = loss + hp["ssl_weight"] * _nt_xent(out["ssl"][:n], out["ssl"][n:], hp["temperature"])
        return loss

    return loss_fn


def _encoder_eval(hp: Mapping[str, Any], held: tuple[np.ndarray, pd.DataFrame] | None, names: Sequence[str],
                  view_names: Sequence[str], v_index: Mapping[str, int], X: Any, x_tr: np.ndarray, y_tr: np.ndarray,
                  v_tr: np.ndarray) -> Callable[[Any], dict[str, float]] | None:
    """The encoder's held-out evaluation ``eval_fn(model)`` (the card metrics of :func:`train_demo_encoder`);
    None without held-out images."""
    import torch

    eval_fn = None
    if held is not None:
        x_ev, m_ev = held
        X_ev = _tensor(x_ev)
        y_ev = _label_matrix(m_ev, names)
        v_ev = np.array([v_index.get(v, -1) if v is not None else -1 for v in _views(m_ev, hp["view_target"])],
                        dtype=np.int64)

        def eval_fn(model: Any) -> dict[str, float]:
            outs = [model(X_ev[i:i + 128]) for i in range(0, len(X_ev), 128)]
            feats_ev = torch.cat([o["features"] for o in outs]).numpy()
            feats_tr = _batched_apply(model.pooled, X).numpy()
            metrics: dict[str, float] = {"n_eval": float(len(x_ev))}
            if names:
                logits = torch.cat([o["label_logits"] for o in outs]).numpy()
                aucs = {n: binary_auroc(y_ev[:, j], logits[:, j]) for j, n in enumerate(names)}
                metrics.update({f"label_auroc_{n}": a for n, a in aucs.items() if not math.isnan(a)})
                defined = [a for a in aucs.values() if not math.isnan(a)]
                if defined:
                    metrics["label_auroc_macro"] = float(np.mean(defined))
            nn_idx = cosine_knn(feats_tr, feats_ev, hp["knn_k"])
            if names:
                knn_scores = y_tr[nn_idx].mean(axis=1)
                knn_aucs = [binary_auroc(y_ev[:, j], knn_scores[:, j]) for j in range(len(names))]
                knn_aucs = [a for a in knn_aucs if not math.isnan(a)]
                if knn_aucs:
                    metrics["knn_label_auroc_macro"] = float(np.mean(knn_aucs))
            known = v_ev >= 0
            if view_names and known.any():
                vlog = torch.cat([o["view_logits"] for o in outs]).numpy()
                metrics["view_accuracy"] = float((vlog.argmax(1)[known] == v_ev[known]).mean())
                metrics["view_majority"] = float(np.bincount(v_ev[known]).max() / known.sum())
                votes = v_tr[nn_idx]
                pred = np.array([np.bincount(r[r >= 0], minlength=len(view_names)).argmax() if (r >= 0).any() else -1
                                 for r in votes])
                metrics["knn_view_accuracy"] = float((pred[known] == v_ev[known]).mean())
                probe = _pixel_view_probe(x_tr, v_tr, x_ev, v_ev)
                if probe is not None:
                    metrics["pixel_probe_view_accuracy"] = probe
            return metrics

    return eval_fn


def _ema_finalize(ema: Mapping[str, Any]) -> Callable[[Any], None]:
    """``finalize(model)``: copy the averaged weights in ``ema`` (if any) into the model, once, after training."""
    import torch

    def finalize(model: Any) -> None:
        if ema:
            with torch.no_grad():
                for k, p in model.named_parameters():
                    p.copy_(ema[k])

    return finalize


def train_demo_encoder(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None,
                       eval_meta: pd.DataFrame | None, out_dir: str | os.PathLike, *, seed: int = 0,
                       **hyperparameters: Any) -> Path:
    """Train the demo chest X-ray encoder (module docstring, "Encoder") and save it to ``out_dir``; return ``out_dir``.

    ``*_meta`` need ``labels`` (lists of label names) and, for the view head, ``view``.
    ``hyperparameters``: keys of :data:`DEMO_ENCODER_CONFIG`. Held-out metrics (card ``metrics``):
    ``label_auroc_<label>`` / ``label_auroc_macro`` (label head, labels with both classes held out),
    ``view_accuracy`` and ``view_majority`` (view head; majority-class baseline),
    ``knn_label_auroc_macro`` and ``knn_view_accuracy`` (k-NN on the *features*, cosine, k = ``knn_k``,
    training images as reference: what FID/PRDC see), ``n_eval``.
    """
    import torch

    hp = _hyperparameters("encoder", seed, hyperparameters)
    (x_tr, m_tr), held = _inputs("encoder", train_images, train_meta, eval_images, eval_meta)
    fingerprints = _fingerprints("encoder", (x_tr, m_tr), held)
    digest = _digest("encoder", fingerprints, hp)
    if _is_trained(Path(out_dir), digest):
        return Path(out_dir)
    names, y_tr, view_names, v_index, v_tr, pos_weight = _encoder_targets(hp, m_tr)
    size = x_tr.shape[1]
    classes = model_classes()
    config = classes["CXREncoderConfig"](label_names=names, view_names=view_names, ssl_dim=hp["ssl_dim"],
                                         **_backbone_config(hp, size))
    X, Y, V = _tensor(x_tr), torch.from_numpy(y_tr), torch.from_numpy(v_tr)
    PW = torch.from_numpy(pos_weight.astype(np.float32))
    aug = _aug_kwargs(hp)
    ema: dict[str, Any] = {}
    loss_fn = _encoder_loss(hp, X, Y, V, PW, aug, ema)
    eval_fn = _encoder_eval(hp, held, names, view_names, v_index, X, x_tr, y_tr, v_tr)
    notes = (f"{len(x_tr)} training images ({size}x{size}), labels {names}, views {view_names}; held-out: "
             f"{0 if held is None else len(held[0])} images")
    finalize = _ema_finalize(ema)
    return _train("encoder", out_dir, digest, hp, fingerprints, lambda: classes["CXREncoderModel"](config), len(x_tr),
                  loss_fn, eval_fn, "tiny ResNet: labels + projection + SimCLR, EMA weights", notes,
                  {"label_names": names, "view_names": view_names, "view_target": hp["view_target"], "n_train": len(x_tr),
                   "n_eval": 0 if held is None else len(held[0]), "image_size": size,
                   "pos_weight": [float(p) for p in pos_weight]}, finalize=finalize)


def cosine_knn(ref: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Indices ``[n_query, k]`` of the ``k`` nearest reference rows by cosine similarity (ties: lower index).

    Rows are L2-normalised (a zero row counts as norm 1e-12), ``k`` is clipped to ``[1, len(ref)]``. The demo
    encoder's k-NN evaluation uses it, and so does the report-retrieval stand-in of
    :func:`radaudit.audits.synthetic_cxr.reports.nearest_train_index` (``k = 1``). Memory: the full
    ``[n_query, n_ref]`` similarity matrix; pass queries in blocks for large sets.
    """
    a = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
    b = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    sim = b @ a.T
    k = max(1, min(int(k), len(ref)))
    return np.argsort(-sim, axis=1, kind="stable")[:, :k]


def demo_encoder_path(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None = None,
                      eval_meta: pd.DataFrame | None = None, *, seed: int = 0,
                      cache_dir: str | os.PathLike | None = None, **hyperparameters: Any) -> Path:
    """The demo encoder for this data/settings/seed: ``<cache>/demo_models/cxr-encoder-<hash>``, trained on first use.

    ``cache_dir`` defaults to :func:`radaudit.models.cache.default_cache_dir`. Load it with
    :class:`radaudit.models.cxr_nets.CXREncoder` (an ``ImageEncoder``).
    """
    digest = config_hash("encoder", train_images, train_meta, eval_images, eval_meta, seed=seed, **hyperparameters)
    folder = _cache_folder("encoder", digest, cache_dir)
    return train_demo_encoder(train_images, train_meta, eval_images, eval_meta, folder, seed=seed, **hyperparameters)


# --- 2. the CLIP-style alignment model (BioViL-T stand-in) -------------------------------------------------

def _text_features(spec: str, captions: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Unique captions (sorted) and their frozen sentence embeddings (mean pooling, normalised)."""
    uniq = sorted(set(captions))
    enc = TextEncoder(spec, device="cpu", pooling="mean", normalize=True)
    return uniq, enc.embed(uniq).astype(np.float32)


def _captions(meta: pd.DataFrame, name: str) -> list[str]:
    out = []
    for i, c in enumerate(meta["prompt"]):
        if not isinstance(c, str) or not c.strip():
            raise DataFormatError(f"{name}_meta['prompt'] row {i} is {c!r}: every image needs a caption.")
        out.append(c)
    return out


def _soft_info_nce(logits: Any, caption_ids: Any) -> Any:
    """Symmetric InfoNCE with multi-positive targets: row i's target mass is spread over columns with i's caption."""
    import torch

    same = (caption_ids[:, None] == caption_ids[None, :]).to(logits.dtype)
    targets = same / same.sum(dim=1, keepdim=True)
    loss_i = -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
    loss_t = -(targets * torch.log_softmax(logits.t(), dim=1)).sum(dim=1).mean()  # `same` is symmetric
    return (loss_i + loss_t) / 2


def train_demo_clip(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None,
                    eval_meta: pd.DataFrame | None, out_dir: str | os.PathLike, *, seed: int = 0,
                    **hyperparameters: Any) -> Path:
    """Train the demo CLIP-style alignment model (module docstring, "Alignment") on (image, ``prompt``) pairs.

    Held-out metrics (card ``metrics``): ``matched_mean`` (mean cosine of each image with its own
    caption), ``shuffled_mean`` (with the caption of a seeded random permutation of the held-out
    images, as a generator with unrelated images would get), ``auroc_matched_vs_different`` (matched
    pairs vs shuffled pairs whose caption differs), ``retrieval_top1`` (the own caption scores highest
    among the held-out set's distinct captions) with ``retrieval_majority`` (always the commonest
    caption), and, from ``view``/``labels`` when present, ``auroc_view_group`` (matched vs shuffled pairs
    whose partner differs in frontal/lateral) and ``auroc_covid`` (… whose partner differs in COVID-19).
    """
    import torch

    hp = _hyperparameters("clip", seed, hyperparameters)
    (x_tr, m_tr), held = _inputs("clip", train_images, train_meta, eval_images, eval_meta)
    fingerprints = _fingerprints("clip", (x_tr, m_tr), held)
    digest = _digest("clip", fingerprints, hp)
    if _is_trained(Path(out_dir), digest):
        return Path(out_dir)
    cap_tr = _captions(m_tr, "train")
    cap_ev = _captions(held[1], "eval") if held is not None else []
    uniq, feats = _text_features(hp["text_encoder"], cap_tr + cap_ev)
    pos = {c: i for i, c in enumerate(uniq)}
    size = x_tr.shape[1]
    classes = model_classes()
    config = classes["CXRClipConfig"](text_encoder=hp["text_encoder"], text_dim=int(feats.shape[1]),
                                      proj_dim=hp["proj_dim"], text_hidden=hp["text_hidden"],
                                      logit_scale_init=math.log(1.0 / hp["temperature_init"]),
                                      **_backbone_config(hp, size))
    X = _tensor(x_tr)
    T = torch.from_numpy(feats)
    cid_tr = torch.tensor([pos[c] for c in cap_tr], dtype=torch.long)
    aug = _aug_kwargs(hp)

    def loss_fn(model: Any, idx: Any) -> Any:
        cid = cid_tr[idx]
        out = model(augment(X[idx], **aug), T[cid])
        return _soft_info_nce(out["logits_per_image"], cid)

    eval_fn = None
    if held is not None:
        x_ev, m_ev = held
        X_ev = _tensor(x_ev)
        cid_ev = np.array([pos[c] for c in cap_ev])
        perm = np.random.default_rng(hp["seed"]).permutation(len(x_ev))
        views_ev = _views(m_ev)
        group = np.array([None if v is None else ("lateral" if "LAT" in v.upper() else "frontal") for v in views_ev],
                         dtype=object)
        covid = (np.array(["COVID-19" in _labels_list(v) for v in m_ev["labels"]]) if "labels" in m_ev.columns
                 else None)

        def eval_fn(model: Any) -> dict[str, float]:
            img = _batched_apply(model.image_embeds, X_ev).numpy().astype(np.float64)
            txt_all = model.text_embeds(T).numpy().astype(np.float64)
            txt = txt_all[cid_ev]
            matched = (img * txt).sum(1)
            shuffled = (img * txt[perm]).sum(1)
            diff = cid_ev[perm] != cid_ev
            metrics = {"n_eval": float(len(x_ev)), "matched_mean": float(matched.mean()),
                       "shuffled_mean": float(shuffled.mean())}
            if diff.any():
                metrics["auroc_matched_vs_different"] = binary_auroc(
                    np.r_[np.ones(len(matched)), np.zeros(int(diff.sum()))], np.r_[matched, shuffled[diff]])
            cand = np.unique(cid_ev)
            sims = img @ txt_all[cand].T
            metrics["retrieval_top1"] = float((cand[sims.argmax(1)] == cid_ev).mean())
            metrics["retrieval_majority"] = float(np.bincount(cid_ev).max() / len(cid_ev))
            for key, attr in (("auroc_view_group", group), ("auroc_covid", covid)):
                if attr is None:
                    continue
                known = np.array([a is not None for a in attr]) & np.array([attr[p] is not None for p in perm])
                sel = known & np.array([attr[i] != attr[p] for i, p in enumerate(perm)])
                if sel.any():
                    metrics[key] = binary_auroc(np.r_[np.ones(int(known.sum())), np.zeros(int(sel.sum()))],
                                                np.r_[matched[known], shuffled[sel]])
            return metrics

    notes = (f"{len(x_tr)} training (image, caption) pairs ({size}x{size}), {len(set(cap_tr))} distinct captions; "
             f"text tower {hp['text_encoder']} (frozen); held-out: {0 if held is None else len(held[0])} images")
    return _train("clip", out_dir, digest, hp, fingerprints, lambda: classes["CXRClipModel"](config), len(x_tr),
                  loss_fn, eval_fn, "tiny ResNet + frozen MiniLM, InfoNCE", notes,
                  {"text_encoder": _text_encoder_identity(hp["text_encoder"]), "n_train": len(x_tr),
                   "n_eval": 0 if held is None else len(held[0]), "n_captions": len(set(cap_tr)), "image_size": size})


def demo_clip_path(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None = None,
                   eval_meta: pd.DataFrame | None = None, *, seed: int = 0,
                   cache_dir: str | os.PathLike | None = None, **hyperparameters: Any) -> Path:
    """The demo alignment model: ``<cache>/demo_models/cxr-clip-<hash>``, trained on first use.

    Load it with :class:`radaudit.models.cxr_nets.ClipAlignment` (or pass the folder to ``alignment_scores``).
    """
    digest = config_hash("clip", train_images, train_meta, eval_images, eval_meta, seed=seed, **hyperparameters)
    folder = _cache_folder("clip", digest, cache_dir)
    return train_demo_clip(train_images, train_meta, eval_images, eval_meta, folder, seed=seed, **hyperparameters)


# --- 3. the Siamese re-identification network (Packhäuser stand-in) ------------------------------------------

def _patients(meta: pd.DataFrame, name: str) -> np.ndarray:
    pid = meta["patient_id"]
    if pid.isna().any():
        raise DataFormatError(f"{name}_meta['patient_id'] has missing values: every image needs its patient.")
    return pid.astype(str).to_numpy()


def verification_pairs(patient_ids: Sequence[Any], *, max_pairs: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Held-out verification pairs: ``(pairs [m, 2], same [m])``.

    Positives: every pair of images of the same patient (at most ``max_pairs // 2``, seeded subsample);
    negatives: as many pairs of images of different patients, drawn uniformly at random (seeded).
    """
    pid = np.asarray([str(p) for p in patient_ids])
    rng = np.random.default_rng(seed)
    pos = [(i, j) for i in range(len(pid)) for j in range(i + 1, len(pid)) if pid[i] == pid[j]]
    if len(pos) > max_pairs // 2:
        pos = [pos[k] for k in np.sort(rng.choice(len(pos), max_pairs // 2, replace=False))]
    if not pos or len(set(pid)) < 2:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=bool)
    neg: list[tuple[int, int]] = []
    while len(neg) < len(pos):
        i, j = rng.integers(0, len(pid), 2)
        if pid[i] != pid[j]:
            neg.append((int(i), int(j)))
    pairs = np.array(pos + neg, dtype=np.int64)
    return pairs, np.r_[np.ones(len(pos), dtype=bool), np.zeros(len(neg), dtype=bool)]


def _reid_mates(pid_tr: np.ndarray, hp: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], int,
                                                                  np.ndarray, np.ndarray]:
    """The training patients' structure: ``(patient code per image, images per patient, each patient's images,
    width, mates [n, width], n_mates [n])``, where ``mates[i]`` lists the other images of image i's patient (-1
    padded); raises when there are no positive pairs or fewer than two patients."""
    _, inverse, counts = np.unique(pid_tr, return_inverse=True, return_counts=True)
    if int((counts >= 2).sum()) < 1 and hp["p_self"] < 1.0:
        raise DataFormatError("The re-ID network needs training patients with at least two images (positive pairs); "
                              "found none.")
    if len(counts) < 2:
        raise DataFormatError("The re-ID network needs at least two training patients (for negative pairs).")
    # for each image: the other images of its patient (padded with -1)
    groups = [np.flatnonzero(inverse == g) for g in range(len(counts))]
    width = max(int(counts.max()) - 1, 1)
    mates = np.full((len(pid_tr), width), -1, dtype=np.int64)
    n_mates = np.zeros(len(pid_tr), dtype=np.int64)
    for members in groups:
        for i in members:
            others = members[members != i]
            mates[i, :len(others)] = others
            n_mates[i] = len(others)
    return inverse, counts, groups, width, mates, n_mates


def _reid_loss(hp: Mapping[str, Any], X: Any, MATES: Any, NMATES: Any, PAT: Any, width: int,
               aug: Mapping[str, Any]) -> Callable[[Any, Any], Any]:
    """The re-ID training loss ``loss_fn(model, anchors)``: BCE on anchor/partner pairs (same patient, self
    copy, exact copy plus noise, or another patient), drawn from torch's global RNG at each step."""
    import torch
    import torch.nn.functional as F

    def loss_fn(model: Any, a: Any) -> Any:
        n = a.shape[0]
        positive = torch.rand(n) < hp["p_positive"]
        self_copy = (torch.rand(n) < hp["p_self"]) | (NMATES[a] == 0)
        pick = (torch.rand(n) * NMATES[a].float()).long().clamp(min=0, max=width - 1)
        mate = torch.where(self_copy, a, MATES[a, pick])
        other = torch.randint(0, len(X), (n,))
        for _ in range(20):  # redraw negatives that hit the anchor's own patient
            clash = PAT[other] == PAT[a]
            if not clash.any():
                break
            other = torch.where(clash, torch.randint(0, len(X), (n,)), other)
        partner = torch.where(positive, mate, other)
        target = (PAT[partner] == PAT[a]).float()
        xa, xp = augment(X[a], **aug), augment(X[partner], **aug)
        copy = (positive & self_copy & (torch.rand(n) < hp["p_copy"])).view(n, 1, 1, 1)
        xp = torch.where(copy, xa, xp)  # an exact copy of the anchor's augmented image ...
        if hp["noise_max"] > 0:  # ... both then get their own slight noise (as a memoriser's output would)
            xa = xa + hp["noise_max"] * torch.rand(n, 1, 1, 1) * torch.randn(xa.shape)
            xp = xp + hp["noise_max"] * torch.rand(n, 1, 1, 1) * torch.randn(xp.shape)
        logits = model(xa.clamp(0, 1), xp.clamp(0, 1))
        return F.binary_cross_entropy_with_logits(logits, target)

    return loss_fn


def _reid_eval(hp: Mapping[str, Any],
               held: tuple[np.ndarray, pd.DataFrame] | None) -> Callable[[Any], dict[str, float]] | None:
    """The re-ID network's held-out evaluation ``eval_fn(model)`` (the card metrics of :func:`train_demo_reid`);
    None without held-out images. Its pairs and the noisy copies are drawn from numpy generators seeded by
    ``hp["seed"]``."""
    import torch

    eval_fn = None
    if held is not None:
        x_ev, m_ev = held
        X_ev = _tensor(x_ev)
        pairs, same = verification_pairs(_patients(m_ev, "eval"), max_pairs=hp["max_eval_pairs"], seed=hp["seed"])
        noise = torch.from_numpy(np.random.default_rng(hp["seed"]).normal(0.0, 0.02, x_ev.shape).astype(np.float32))
        X_noisy = (X_ev + noise[:, None]).clamp(0, 1)

        def eval_fn(model: Any) -> dict[str, float]:
            emb = _batched_apply(model.embed, X_ev)
            emb_noisy = _batched_apply(model.embed, X_noisy)
            metrics = {"n_eval": float(len(x_ev)),
                       "mean_identical": float(torch.sigmoid(model.head(emb, emb)).mean()),
                       "mean_noisy_copy": float(torch.sigmoid(model.head(emb, emb_noisy)).mean())}
            pid_ev = _patients(m_ev, "eval")
            iu, ju = np.triu_indices(len(pid_ev), k=1)
            diff_pat = pid_ev[iu] != pid_ev[ju]
            if diff_pat.any():  # every different-patient pair: the score a 1% false-positive rate allows
                i_t, j_t = torch.from_numpy(iu[diff_pat]), torch.from_numpy(ju[diff_pat])
                neg = torch.cat([torch.sigmoid(model.head(emb[i_t[k:k + 4096]], emb[j_t[k:k + 4096]]))
                                 for k in range(0, len(i_t), 4096)]).double().numpy()
                metrics["threshold_at_fpr_0.01"] = float(np.quantile(neg, 0.99))
                metrics["fpr_at_delta_0.85"] = float((neg > 0.85).mean())
            if len(pairs):
                p = torch.from_numpy(pairs)
                s = torch.sigmoid(model.head(emb[p[:, 0]], emb[p[:, 1]])).double().numpy()
                metrics.update({"n_pairs": float(len(pairs)), "verification_auroc": binary_auroc(same, s),
                                "accuracy_at_0.5": float(((s > 0.5) == same).mean()),
                                "mean_same_patient": float(s[same].mean()),
                                "mean_different_patient": float(s[~same].mean())})
            return metrics

    return eval_fn


def train_demo_reid(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None,
                    eval_meta: pd.DataFrame | None, out_dir: str | os.PathLike, *, seed: int = 0,
                    **hyperparameters: Any) -> Path:
    """Train the demo Siamese re-ID network (module docstring, "Re-ID") on training patients; save to ``out_dir``.

    ``*_meta`` need ``patient_id``; the held-out patients must differ from the training ones.
    Held-out metrics (card ``metrics``): ``verification_auroc`` and ``accuracy_at_0.5`` on
    :func:`verification_pairs` of the held-out images, ``n_pairs``, ``mean_same_patient`` /
    ``mean_different_patient`` (mean scores), ``mean_identical`` (an image against itself) and
    ``mean_noisy_copy`` (against a copy with Gaussian noise σ = 0.02): what a memorising generator gets;
    ``threshold_at_fpr_0.01`` (99th percentile of every held-out different-patient pair's score) and
    ``fpr_at_delta_0.85`` (the share of those above the paper's δ).
    """
    import torch

    hp = _hyperparameters("reid", seed, hyperparameters)
    (x_tr, m_tr), held = _inputs("reid", train_images, train_meta, eval_images, eval_meta)
    fingerprints = _fingerprints("reid", (x_tr, m_tr), held)
    digest = _digest("reid", fingerprints, hp)
    if _is_trained(Path(out_dir), digest):
        return Path(out_dir)
    pid_tr = _patients(m_tr, "train")
    if held is not None:
        shared = sorted(set(pid_tr) & set(_patients(held[1], "eval")))
        if shared:
            raise DataFormatError(f"{len(shared)} patient(s) are in both the training and the held-out images (e.g. "
                                  f"{shared[:3]}): split by patient, or re-ID quality is overstated.")
    inverse, counts, groups, width, mates, n_mates = _reid_mates(pid_tr, hp)
    size = x_tr.shape[1]
    classes = model_classes()
    config = classes["SiameseReIDConfig"](n_features=hp["n_features"], source="radaudit demo (covid-chestxray)",
                                          monotone_head=bool(hp["monotone_head"]),
                                          **_backbone_config(hp, size))
    X = _tensor(x_tr)
    MATES, NMATES = torch.from_numpy(mates), torch.from_numpy(n_mates)
    PAT = torch.from_numpy(inverse.astype(np.int64))
    aug = _aug_kwargs(hp)
    loss_fn = _reid_loss(hp, X, MATES, NMATES, PAT, width, aug)
    eval_fn = _reid_eval(hp, held)
    notes = (f"{len(x_tr)} training images ({size}x{size}) of {len(groups)} patients, "
             f"{int((counts >= 2).sum())} of them with >= 2 images; held-out: {0 if held is None else len(held[0])} "
             "images of other patients")
    return _train("reid", out_dir, digest, hp, fingerprints, lambda: classes["SiameseReIDModel"](config),
                  len(x_tr), loss_fn, eval_fn, "Siamese tiny ResNet, Packhäuser head", notes,
                  {"n_train": len(x_tr), "n_multi_image_patients": int((counts >= 2).sum()), "n_train_patients": len(groups),
                   "n_eval": 0 if held is None else len(held[0]), "image_size": size})


def demo_reid_path(train_images: np.ndarray, train_meta: pd.DataFrame, eval_images: np.ndarray | None = None,
                   eval_meta: pd.DataFrame | None = None, *, seed: int = 0,
                   cache_dir: str | os.PathLike | None = None, **hyperparameters: Any) -> Path:
    """The demo re-ID network: ``<cache>/demo_models/cxr-reid-<hash>``, trained on first use.

    Score pairs with :class:`radaudit.models.cxr_nets.SiameseScorer` (a ``PairScorer``).
    """
    digest = config_hash("reid", train_images, train_meta, eval_images, eval_meta, seed=seed, **hyperparameters)
    folder = _cache_folder("reid", digest, cache_dir)
    return train_demo_reid(train_images, train_meta, eval_images, eval_meta, folder, seed=seed, **hyperparameters)
