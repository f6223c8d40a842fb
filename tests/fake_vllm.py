"""A recorder that stands in for the ``vllm`` package where vLLM cannot run (no GPU, not installed).

vLLM needs a CUDA GPU, so tests of the ``backend: vllm`` code paths replace it with this fake: the
code under test imports ``vllm`` as usual, the fake records every call (engine arguments, prompts,
sampling parameters, LoRA requests) and answers with canned token ids, shaped as vLLM's documented
offline API answers (``RequestOutput.outputs[0].token_ids``, ``BeamSearchOutput.sequences[0].tokens``,
per-token ``logprobs`` dicts of ``Logprob``). Importable from any test as ``import fake_vllm``
(``tests/`` is on sys.path)::

    import fake_vllm

    def test_something(monkeypatch):
        rec = fake_vllm.install(monkeypatch, token_ids=[5, 6, 2])   # sys.modules["vllm"] = the fake
        ...                                                         # code that calls vllm.LLM(...).generate(...)
        assert rec.generate_calls[0].prompts[0]["prompt_token_ids"] == [...]
        assert rec.generate_calls[0].params[0].kw["temperature"] == 0.0

What is faked (only what radaudit uses): ``vllm.LLM`` (``generate``, ``beam_search``),
``vllm.SamplingParams`` and ``vllm.sampling_params.BeamSearchParams`` (they keep their keyword
arguments in ``.kw``), ``vllm.lora.request.LoRARequest`` (positional and keyword arguments in
``.args``/``.kw``, plus ``lora_name``/``lora_int_id``/``lora_path``). :func:`uninstalled` makes
``import vllm`` fail, as on a machine without it.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The tiny test tokenizer's EOS id (tests/models/conftest.py EOS_ID).
EOS_ID = 2


@dataclass
class Logprob:
    """vLLM's per-token log-probability entry (``vllm.sequence.Logprob``)."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class SamplingParams:
    """Keeps its keyword arguments in ``.kw`` (and as attributes, as vLLM's exposes them)."""

    def __init__(self, **kw: Any) -> None:
        self.kw = dict(kw)
        for k, v in kw.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kw})"


class BeamSearchParams(SamplingParams):
    """``vllm.sampling_params.BeamSearchParams``: keyword arguments in ``.kw``."""


class LoRARequest:
    """``vllm.lora.request.LoRARequest(lora_name, lora_int_id, lora_path)``: arguments kept as given."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.args, self.kw = args, dict(kw)
        names = ("lora_name", "lora_int_id", "lora_path")
        values = dict(zip(names, args)) | {k: v for k, v in kw.items() if k in names}
        self.lora_name = values.get("lora_name")
        self.lora_int_id = values.get("lora_int_id")
        self.lora_path = values.get("lora_path")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LoRARequest) and (self.lora_name, self.lora_int_id, self.lora_path) == (
            other.lora_name, other.lora_int_id, other.lora_path)

    def __hash__(self) -> int:
        return hash((self.lora_name, self.lora_int_id, self.lora_path))

    def __repr__(self) -> str:
        return f"LoRARequest({self.lora_name!r}, {self.lora_int_id!r}, {self.lora_path!r})"


@dataclass
class Canned:
    """One canned completion: the new token ids, vLLM's finish reason, optional per-token logprobs
    (a list, one ``{token_id: Logprob}`` dict per generated token) and text."""

    token_ids: Sequence[int]
    finish_reason: str = "stop"
    logprobs: list[dict[int, Logprob]] | None = None
    text: str = ""


@dataclass
class GenerateCall:
    """One ``LLM.generate`` call as the fake saw it."""

    prompts: list[Any]
    params: list[SamplingParams]
    lora_request: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class BeamCall:
    """One ``LLM.beam_search`` call as the fake saw it."""

    prompts: list[Any]
    params: BeamSearchParams
    kwargs: dict[str, Any] = field(default_factory=dict)


Respond = Callable[[Any, SamplingParams], "Canned | Sequence[int]"]


class Recorder:
    """What the fake ``vllm`` saw, and how it answers.

    ``init_calls``: the keyword arguments of each ``vllm.LLM(...)``; ``generate_calls``: a
    :class:`GenerateCall` per ``LLM.generate``; ``beam_calls``: a :class:`BeamCall` per
    ``LLM.beam_search``; ``lora_requests``: every ``LoRARequest`` built. ``respond(prompt, params)``
    gives each answer (a :class:`Canned` or a list of token ids); by default every prompt gets
    ``token_ids``. Beam search answers with the prompt's ids followed by ``beam_tokens`` (vLLM's
    beam sequences include the prompt).
    """

    def __init__(self, *, token_ids: Sequence[int] = (5, 6, EOS_ID, 0), finish_reason: str = "stop",
                 respond: Respond | None = None, beam_tokens: Sequence[int] = (7, 8, 9)) -> None:
        self.token_ids, self.finish_reason = list(token_ids), finish_reason
        self.respond = respond
        self.beam_tokens = list(beam_tokens)
        self.init_calls: list[dict[str, Any]] = []
        self.generate_calls: list[GenerateCall] = []
        self.beam_calls: list[BeamCall] = []
        self.lora_requests: list[LoRARequest] = []

    # what the code under test sees ---------------------------------------------------------------
    @property
    def n_requests(self) -> int:
        """Prompts sent to the engine so far (generate and beam search)."""
        return sum(len(c.prompts) for c in self.generate_calls) + sum(len(c.prompts) for c in self.beam_calls)

    @property
    def prompts(self) -> list[Any]:
        """Every prompt sent to ``LLM.generate``, in order."""
        return [p for c in self.generate_calls for p in c.prompts]

    @property
    def params(self) -> list[SamplingParams]:
        """Every prompt's ``SamplingParams``, in order (one per prompt, broadcast when one was given)."""
        return [p for c in self.generate_calls for p in c.params]

    def _answer(self, prompt: Any, params: SamplingParams) -> Canned:
        got = self.respond(prompt, params) if self.respond is not None else list(self.token_ids)
        canned = got if isinstance(got, Canned) else Canned(list(got), self.finish_reason)
        if canned.logprobs is None and getattr(params, "kw", {}).get("logprobs"):
            k = int(params.kw["logprobs"])  # the chosen token first, then k - 1 others, as vLLM returns them
            canned.logprobs = [{t: Logprob(-0.1, 1)} | {o: Logprob(-1.0 - j, j + 1)
                                                          for j, o in enumerate((x for x in range(3, 3 + k) if x != t), 1)
                                                          if j < k}
                               for t in canned.token_ids]
        return canned

    def module(self) -> dict[str, types.ModuleType]:
        """The fake modules (``vllm``, ``vllm.sampling_params``, ``vllm.lora``, ``vllm.lora.request``)."""
        rec = self

        class _LoRARequest(LoRARequest):
            def __init__(self, *args: Any, **kw: Any) -> None:
                super().__init__(*args, **kw)
                rec.lora_requests.append(self)

        class LLM:
            """``vllm.LLM``: records its arguments; answers with the recorder's canned outputs."""

            def __init__(self, model: str | None = None, **kw: Any) -> None:
                rec.init_calls.append({"model": model, **kw} if model is not None else dict(kw))
                self.kw = kw

            def generate(self, prompts: Any, sampling_params: Any = None, use_tqdm: Any = True,
                         lora_request: Any = None, **kwargs: Any) -> list[Any]:
                plist = [prompts] if isinstance(prompts, (str, dict)) else list(prompts)
                if sampling_params is None:
                    sampling_params = SamplingParams()
                params = (list(sampling_params) if isinstance(sampling_params, (list, tuple))
                          else [sampling_params] * len(plist))
                rec.generate_calls.append(GenerateCall(plist, params, lora_request, dict(kwargs)))
                outs = []
                for p, sp in zip(plist, params):
                    c = rec._answer(p, sp)
                    comp = types.SimpleNamespace(index=0, token_ids=list(c.token_ids), text=c.text,
                                                 finish_reason=c.finish_reason, logprobs=c.logprobs,
                                                 cumulative_logprob=None)
                    prompt_ids = p.get("prompt_token_ids") if isinstance(p, dict) else None
                    outs.append(types.SimpleNamespace(prompt=p.get("prompt") if isinstance(p, dict) else p,
                                                      prompt_token_ids=prompt_ids, outputs=[comp], finished=True))
                return outs

            def beam_search(self, prompts: Any, params: Any, **kwargs: Any) -> list[Any]:
                plist = list(prompts)
                rec.beam_calls.append(BeamCall(plist, params, dict(kwargs)))
                out = []
                for p in plist:
                    ids = list(p.get("prompt_token_ids", [])) if isinstance(p, dict) else []
                    seq = types.SimpleNamespace(tokens=ids + rec.beam_tokens, text="", cum_logprob=-1.0)
                    out.append(types.SimpleNamespace(sequences=[seq]))
                return out

        vllm = types.ModuleType("vllm")
        vllm.__version__ = "0.0.0+fake"
        vllm.LLM, vllm.SamplingParams = LLM, SamplingParams
        sp = types.ModuleType("vllm.sampling_params")
        sp.SamplingParams, sp.BeamSearchParams = SamplingParams, BeamSearchParams
        lora = types.ModuleType("vllm.lora")
        lora_request = types.ModuleType("vllm.lora.request")
        lora_request.LoRARequest = _LoRARequest
        lora.request = lora_request
        seq = types.ModuleType("vllm.sequence")
        seq.Logprob = Logprob
        vllm.sampling_params, vllm.lora, vllm.sequence = sp, lora, seq
        return {"vllm": vllm, "vllm.sampling_params": sp, "vllm.lora": lora, "vllm.lora.request": lora_request,
                "vllm.sequence": seq}


def install(monkeypatch: Any, **kw: Any) -> Recorder:
    """Put a fresh fake ``vllm`` into ``sys.modules`` for this test (``monkeypatch`` undoes it) and return
    its :class:`Recorder` (keyword arguments as :class:`Recorder`'s)."""
    import sys

    rec = Recorder(**kw)
    for name, mod in rec.module().items():
        monkeypatch.setitem(sys.modules, name, mod)
    return rec


def uninstalled(monkeypatch: Any) -> None:
    """Make ``import vllm`` raise ImportError for this test, as on a machine without vLLM."""
    import sys

    for name in ("vllm", "vllm.sampling_params", "vllm.lora", "vllm.lora.request", "vllm.sequence"):
        monkeypatch.setitem(sys.modules, name, None)


# --- the vision-language engine (radaudit.models.vlm_vllm) -------------------------------------------

#: The ``vllm.SamplingParams`` fields :mod:`radaudit.models.vlm_vllm` reads to choose how it asks for the
#: candidates' first-token log-probabilities (a real SamplingParams is a msgspec struct listing its
#: fields in ``__struct_fields__``; ``logprob_token_ids`` exists in newer vLLM only).
SAMPLING_FIELDS = ("n", "temperature", "top_p", "top_k", "min_p", "seed", "stop_token_ids", "max_tokens",
                   "logprobs", "logprob_token_ids", "repetition_penalty", "skip_special_tokens")


def install_vlm(monkeypatch: Any, *, logprob_token_ids: bool = True, **kw: Any) -> Recorder:
    """:func:`install` for the VLM engine: the fake ``SamplingParams`` lists its fields like vLLM's msgspec
    struct, with ``logprob_token_ids`` (a newer vLLM) or without it (an older one, which only returns
    top-k log-probabilities). Answer with ``respond`` returning :class:`Canned` outputs with logprobs."""
    rec = install(monkeypatch, **kw)
    fields = SAMPLING_FIELDS if logprob_token_ids else tuple(f for f in SAMPLING_FIELDS if f != "logprob_token_ids")
    monkeypatch.setattr(SamplingParams, "__struct_fields__", fields, raising=False)
    return rec
