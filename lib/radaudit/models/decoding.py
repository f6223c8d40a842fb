"""Named decoding strategies as data: the six of the decoding-erasure paper, and any defined in params.

The paper behind ``decoding_erasure`` (``../shared/papers/000_c11b3b836ef0a58a.txt``, §3 "Experiments",
"Inference Strategy Study") evaluates exactly these six strategies, all with max tokens = 512:

=============  ==========================================  =========================================
name           paper's wording                             knobs
=============  ==========================================  =========================================
greedy         (i) Greedy (argmax)                         do_sample=False, num_beams=1
beam4          (ii) Beam Search (k=4)                      do_sample=False, num_beams=4
conservative   (iii) Conservative Sampling (T=0.3, p=0.95)  do_sample=True, temperature=0.3, top_p=0.95
rich           (iv) Rich Sampling (T=0.7, p=0.95)           do_sample=True, temperature=0.7, top_p=0.95
topk50         (v) Top-k (k=50, T=1.0)                      do_sample=True, top_k=50, temperature=1.0
nucleus        (vi) Nucleus Sampling (p=0.9, T=1.0)         do_sample=True, top_p=0.9, temperature=1.0
=============  ==========================================  =========================================

The paper partitions them into *deterministic* (greedy, beam) and *stochastic* (the four samplers);
:attr:`DecodingStrategy.family` gives that label for tables. A knob the paper does not name is
*off*: ``conservative``/``rich``/``nucleus`` have no top-k cut, ``topk50`` no top-p cut, and no
strategy has a repetition or length penalty.

New strategies come from params (YAML)::

    strategies:
      - greedy                       # a registered name
      - {name: hot, base: rich, temperature: 1.2}   # start from a registered one
      - {name: k10, do_sample: true, top_k: 10}

with :func:`strategy_from_params` / :func:`strategies_from_params`.

**Model defaults never leak in.** ``transformers`` fills every generation knob left ``None`` from the
checkpoint's ``generation_config.json`` and then from its global defaults, one of which is
``top_k=50``: a config built as ``GenerationConfig(do_sample=True, top_p=0.9)`` silently samples
from top-50 ∩ top-p-0.9, and a checkpoint shipping ``top_k=20`` or ``repetition_penalty=1.1``
changes every strategy. :meth:`DecodingStrategy.to_generation_config` therefore sets every knob that
has a neutral value explicitly: ``top_k=0`` (no top-k cut), ``top_p=1.0``, ``temperature=1.0``,
``min_p=0.0``, ``repetition_penalty=1.0``, ``no_repeat_ngram_size=0``, ``min_new_tokens=0`` (which
overrides ``min_length``), ``num_beams``, ``length_penalty``, ``early_stopping=False``, ... Knobs
whose only neutral value is ``None`` (``suppress_tokens``, ``bad_words_ids``, ``forced_bos_token_id``,
``sequence_bias``, ...) cannot be pinned in a ``GenerationConfig``, so
:func:`radaudit.models.generate.generate` also hides the checkpoint's ``generation_config`` during
the call (:func:`radaudit.models.backends.checkpoint_defaults_hidden`): nothing of it applies except
its ``eos_token_id``, read once, explicitly. For deterministic strategies the sampling knobs
(``temperature``/``top_k``/``top_p``) are left unset: ``do_sample=False`` is explicit, so no sampling
warper can apply whatever they are filled with (and transformers warns when they are set).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from radaudit.errors import ParamsError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import GenerationConfig

#: The paper's max tokens for every strategy (§3: "All use max tokens=512").
PAPER_MAX_NEW_TOKENS = 512


class DecodingStrategy(BaseModel):
    """One decoding strategy. Immutable; validated; hashable.

    ``top_k=0`` and ``top_p=1.0`` mean "no cut"; ``temperature`` applies only when ``do_sample``.
    Sampling with beams (``do_sample`` and ``num_beams > 1``) is not supported (neither the paper nor
    the vLLM backend uses it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(..., min_length=1, description="Short name used in params, tables and cache records.")
    label: str = Field("", description="Human-readable name (the paper's wording); not part of any cache key.")
    do_sample: bool = Field(False, description="Sample from the (warped) distribution; False = argmax / beam search.")
    num_beams: int = Field(1, ge=1, description="Beam width; 1 = no beam search.")
    temperature: float = Field(1.0, gt=0, description="Softmax temperature (sampling only).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus cut: smallest set with cumulative probability "
                                                      ">= top_p; 1.0 = off.")
    top_k: int = Field(0, ge=0, description="Keep the k most likely tokens; 0 = off.")
    max_new_tokens: int = Field(PAPER_MAX_NEW_TOKENS, ge=1, description="Most tokens generated per prompt (paper: 512).")
    repetition_penalty: float = Field(1.0, gt=0, description="CTRL repetition penalty; 1.0 = off.")
    length_penalty: float = Field(1.0, description="Beam-search length penalty exponent; 1.0 = transformers' default.")

    @model_validator(mode="after")
    def _consistent(self) -> DecodingStrategy:
        if self.do_sample and self.num_beams > 1:
            raise ValueError(f"strategy {self.name!r}: sampling with beams (do_sample=true, num_beams={self.num_beams}) "
                             "is not supported; use do_sample=false for beam search")
        if not self.do_sample:
            set_knobs = [k for k, neutral in (("temperature", 1.0), ("top_p", 1.0), ("top_k", 0))
                         if getattr(self, k) != neutral]
            if set_knobs:
                raise ValueError(f"strategy {self.name!r} is deterministic (do_sample=false) but sets "
                                 f"{', '.join(set_knobs)}, which only apply when sampling: add do_sample: true")
        return self

    # -- descriptions ---------------------------------------------------------------------------

    @property
    def deterministic(self) -> bool:
        """Greedy and beam search: the output does not depend on the seed."""
        return not self.do_sample

    @property
    def family(self) -> str:
        """``"deterministic"`` or ``"stochastic"`` (the paper's partition, §3)."""
        return "deterministic" if self.deterministic else "stochastic"

    def knobs(self) -> dict[str, Any]:
        """The fields that determine the output (everything but ``name``/``label``): the cache key part."""
        return self.model_dump(exclude={"name", "label"})

    def describe(self) -> str:
        """A compact description, e.g. ``"sampling T=0.3 top-p=0.95"``."""
        if not self.do_sample:
            base = "greedy" if self.num_beams == 1 else f"beam search k={self.num_beams}"
        else:
            parts = [f"T={self.temperature:g}"]
            if self.top_k:
                parts.append(f"top-k={self.top_k}")
            if self.top_p < 1:
                parts.append(f"top-p={self.top_p:g}")
            base = "sampling " + " ".join(parts)
        extra = [f"repetition_penalty={self.repetition_penalty:g}"] if self.repetition_penalty != 1 else []
        if self.num_beams > 1 and self.length_penalty != 1:
            extra.append(f"length_penalty={self.length_penalty:g}")
        return base + (f" ({', '.join(extra)})" if extra else "")

    def with_max_new_tokens(self, max_new_tokens: int | None) -> DecodingStrategy:
        return self if max_new_tokens is None else self.model_copy(update={"max_new_tokens": int(max_new_tokens)})

    # -- transformers -----------------------------------------------------------------------------

    def to_generation_config(self, *, max_new_tokens: int | None = None, eos_token_id: int | list[int] | None = None,
                             pad_token_id: int | None = None, bos_token_id: int | None = None) -> GenerationConfig:
        """A ``transformers.GenerationConfig`` for this strategy with every neutral-able knob pinned (see the
        module docstring: no checkpoint or library default can leak in through a ``None``)."""
        from transformers import GenerationConfig

        kwargs: dict[str, Any] = dict(
            do_sample=self.do_sample,
            num_beams=self.num_beams,
            max_new_tokens=int(max_new_tokens or self.max_new_tokens),
            min_new_tokens=0,  # transformers then sets min_length = prompt length (pinning both warns)
            early_stopping=False,  # transformers' default heuristic for beams; the paper names none
            num_return_sequences=1,
            repetition_penalty=self.repetition_penalty,
            encoder_repetition_penalty=1.0,
            length_penalty=self.length_penalty,
            no_repeat_ngram_size=0,
            encoder_no_repeat_ngram_size=0,
            typical_p=1.0,
            epsilon_cutoff=0.0,
            eta_cutoff=0.0,
            guidance_scale=1.0,
            renormalize_logits=False,
            remove_invalid_values=False,
            use_cache=True,
            output_scores=False,
            return_dict_in_generate=False,
        )
        if self.do_sample:
            kwargs.update(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, min_p=0.0)
        ids = {"eos_token_id": eos_token_id, "pad_token_id": pad_token_id, "bos_token_id": bos_token_id}
        kwargs.update({k: v for k, v in ids.items() if v is not None})
        return GenerationConfig(**kwargs)


def _paper(name: str, label: str, **knobs: Any) -> DecodingStrategy:
    return DecodingStrategy(name=name, label=label, max_new_tokens=PAPER_MAX_NEW_TOKENS, **knobs)


#: The six strategies of ``../shared/papers/000_c11b3b836ef0a58a.txt`` §3, in the paper's order.
PAPER_STRATEGIES: dict[str, DecodingStrategy] = {
    s.name: s for s in (
        _paper("greedy", "Greedy (argmax)"),
        _paper("beam4", "Beam Search (k=4)", num_beams=4),
        _paper("conservative", "Conservative Sampling (T=0.3, top-p=0.95)", do_sample=True, temperature=0.3, top_p=0.95),
        _paper("rich", "Rich Sampling (T=0.7, top-p=0.95)", do_sample=True, temperature=0.7, top_p=0.95),
        _paper("topk50", "Top-k (k=50, T=1.0)", do_sample=True, top_k=50, temperature=1.0),
        _paper("nucleus", "Nucleus Sampling (top-p=0.9, T=1.0)", do_sample=True, top_p=0.9, temperature=1.0),
    )
}

STRATEGY_NAMES: tuple[str, ...] = tuple(PAPER_STRATEGIES)


def get_strategy(name: str, registry: Mapping[str, DecodingStrategy] | None = None) -> DecodingStrategy:
    """The registered strategy ``name``; an unknown name raises :class:`ParamsError` listing the known ones."""
    reg = PAPER_STRATEGIES if registry is None else registry
    key = str(name).strip()
    if key in reg:
        return reg[key]
    lowered = {k.lower(): v for k, v in reg.items()}
    if key.lower() in lowered:
        return lowered[key.lower()]
    import difflib

    hint = difflib.get_close_matches(key, list(reg), n=1)
    did = f" Did you mean {hint[0]!r}?" if hint else ""
    raise ParamsError(f"Unknown decoding strategy {name!r}.{did} Known strategies: {', '.join(reg)} "
                      "(or define one in params: {name: ..., do_sample: ..., temperature: ..., top_p: ..., top_k: ..., "
                      "num_beams: ...}).")


def strategy_from_params(params: str | Mapping[str, Any] | DecodingStrategy,
                         registry: Mapping[str, DecodingStrategy] | None = None) -> DecodingStrategy:
    """A strategy from params: a registered name, a mapping of fields, or a strategy (returned as is).

    A mapping may name ``base: <registered name>`` to start from that strategy's fields (its
    ``label`` is dropped unless given). Unknown keys and bad values raise :class:`ParamsError`.
    """
    if isinstance(params, DecodingStrategy):
        return params
    if isinstance(params, str):
        return get_strategy(params, registry)
    if not isinstance(params, Mapping):
        raise ParamsError(f"A decoding strategy must be a name ({', '.join(registry or PAPER_STRATEGIES)}) or a mapping "
                          f"of fields, got {type(params).__name__}: {params!r}.")
    values = dict(params)
    base = values.pop("base", None)
    fields: dict[str, Any] = {}
    if base is not None:
        fields = get_strategy(str(base), registry).model_dump(exclude={"label"})
        fields.pop("name")
    fields.update(values)
    if "name" not in fields:
        raise ParamsError(f"Decoding strategy {dict(params)!r} has no 'name'.")
    try:
        return DecodingStrategy.model_validate(fields)
    except ValidationError as err:
        allowed = ", ".join(["base", *DecodingStrategy.model_fields])
        msgs = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e["loc"]) or "(strategy)"
            if e["type"] == "extra_forbidden":
                msgs.append(f"unknown key {loc!r} (allowed: {allowed})")
            else:
                msgs.append(f"{loc}: {e['msg']}")
        raise ParamsError(f"Invalid decoding strategy {fields.get('name')!r}: " + "; ".join(msgs) + ".") from None


def strategies_from_params(items: Iterable[str | Mapping[str, Any] | DecodingStrategy] | str | Mapping[str, Any],
                           registry: Mapping[str, DecodingStrategy] | None = None) -> list[DecodingStrategy]:
    """A list of strategies from params (see :func:`strategy_from_params`); names must be unique."""
    if isinstance(items, (str, Mapping, DecodingStrategy)):
        items = [items]
    out = [strategy_from_params(i, registry) for i in items]
    names = [s.name for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ParamsError(f"Decoding strategy names must be unique; repeated: {', '.join(dup)}.")
    return out
