"""Text generation with named decoding strategies, per-sample seeds and a content-addressed cache.

::

    from radaudit.models.generate import generate, load_for_generation
    from radaudit.models.resolver import SMOLLM2_GGUF
    from radaudit.models.cache import ContentCache

    lm = load_for_generation(SMOLLM2_GGUF, device="cpu")   # or pass the spec to generate()
    with ContentCache() as cache:                        # $RADAUDIT_CACHE or <project>/.cache/radaudit
        gens = generate(lm, prompts, "nucleus", seeds=run.step_seed("nucleus"), max_new_tokens=128,
                        batch_size=8, cache=cache)
        run.record("generation_cache", cache.stats())

What happens (see :mod:`radaudit.models.backends` for the details of each step):

1. the strategy is resolved (a name of :data:`~radaudit.models.decoding.PAPER_STRATEGIES`, a params
   mapping, or a :class:`~radaudit.models.decoding.DecodingStrategy`); ``max_new_tokens`` overrides its own;
2. each prompt is rendered (chat template when ``chat_template`` and the tokenizer has one);
3. each (rendered prompt, strategy knobs, seed, max_new_tokens, model + revision, dtype) gets a
   cache key; cached results are returned without touching the model (a spec is not even loaded).
   The engine (``backend``) is not in the key: a run can switch between ``transformers`` and ``vllm``
   and resume from what the other generated (:mod:`radaudit.models.cache` says what that implies);
   each record keeps the engine that produced it (:attr:`Generation.backend`);
4. the misses are generated in batches of ``batch_size`` (longest prompts first, left padding), and
   each batch's results are written to the cache as soon as it finishes, so an interrupted run
   resumes where it stopped;
5. results come back in the order of ``prompts``, one :class:`Generation` each.

Seeds: ``seeds`` is one int for every prompt or one per prompt. With the same seed, a prompt gets the
same text alone or in any batch, at any position (per-row generators; see the backends module). To
draw several samples of one prompt, repeat the prompt with different seeds. Deterministic strategies
ignore the seed (and share cache entries across seeds); :attr:`Generation.seed` still reports it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from radaudit.errors import ParamsError
from radaudit.models.backends import (
    BACKENDS,
    Backend,
    LoadedCausalLM,
    Prompt,
    TransformersBackend,
    VLLMBackend,
    get_backend,
    load_for_generation,
)
from radaudit.models.cache import ContentCache, content_key, generation_key_parts, open_cache, portable_model_name
from radaudit.models.decoding import DecodingStrategy, strategy_from_params
from radaudit.progress import track

log = logging.getLogger("radaudit.models")

__all__ = ["BACKENDS", "Backend", "Generation", "LoadedCausalLM", "TransformersBackend", "VLLMBackend", "generate",
           "generations_frame", "load_for_generation"]


@dataclass(frozen=True)
class Generation:
    """One generated text and everything needed to reproduce it.

    ``token_ids``: the new tokens, up to and including EOS when the model emitted it.
    ``finish_reason``: ``"eos"`` (the model ended it) or ``"length"`` (``max_new_tokens`` reached).
    ``text``: the new tokens decoded without special tokens, stripped.
    ``model``/``revision``/``backend``: what produced it (see :func:`radaudit.models.backends.model_revision`);
    ``backend`` is the engine that generated the text, which for a cached entry may be the other one
    than this call's (the engine is not part of the cache key).
    ``cached``: whether it came from the cache in this call (not part of equality or :meth:`to_dict`,
    so tables are identical whether or not a run hit the cache). ``key``: its cache key.
    """

    prompt: Any
    text: str
    token_ids: tuple[int, ...]
    strategy: str
    seed: int
    n_new_tokens: int
    finish_reason: str
    model: str
    revision: str | None
    backend: str
    max_new_tokens: int
    cached: bool = field(default=False, compare=False)
    key: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("cached")
        d["token_ids"] = list(self.token_ids)
        return d


def generations_frame(generations: Sequence[Generation]) -> Any:
    """A pandas DataFrame with one row per generation (the columns of :meth:`Generation.to_dict`)."""
    import pandas as pd

    cols = [f for f in Generation.__dataclass_fields__ if f != "cached"]
    return pd.DataFrame([g.to_dict() for g in generations], columns=cols)


def _seeds_for(seeds: int | Sequence[int], n: int) -> list[int]:
    if isinstance(seeds, bool):
        raise ParamsError(f"seeds must be an int or a list of ints, got {seeds!r}.")
    if isinstance(seeds, int):
        return [int(seeds)] * n
    try:
        out = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ParamsError(f"seeds must be an int or a list of ints, got {seeds!r}.") from None
    if len(out) != n:
        raise ParamsError(f"seeds has {len(out)} entries for {n} prompts: pass one seed, or one per prompt.")
    return out


def generate(model: str | os.PathLike[str] | LoadedCausalLM | Backend, prompts: Prompt | Sequence[Prompt],
             strategy: str | Mapping[str, Any] | DecodingStrategy = "greedy", *, seeds: int | Sequence[int] = 0,
             max_new_tokens: int | None = None, batch_size: int = 8, device: str | None = None, dtype: Any = None,
             cache: ContentCache | str | os.PathLike[str] | bool | None = None, chat_template: bool = True,
             backend: str = "transformers", trust_remote_code: bool = False, progress: bool = False,
             **backend_kwargs: Any) -> list[Generation]:
    """Generate one text per prompt with a named decoding strategy (see the module docstring).

    ``model``: a model spec (loaded only if something is not cached), a :class:`LoadedCausalLM`
    (:func:`load_for_generation`), or a :class:`~radaudit.models.backends.Backend`.
    ``prompts``: a text, or a list of texts (or of chat-message lists). ``strategy``: a name
    (``greedy``, ``beam4``, ``conservative``, ``rich``, ``topk50``, ``nucleus``), a params mapping, or a
    :class:`DecodingStrategy`. ``seeds``: one int, or one per prompt. ``max_new_tokens``: overrides the
    strategy's (paper: 512). ``device``/``dtype``/``trust_remote_code``/``backend_kwargs``: used when
    loading a spec. ``cache``: ``None``/``False`` (none), ``True`` (the default folder), a folder, or a
    :class:`~radaudit.models.cache.ContentCache` (whose :meth:`~ContentCache.stats` then count this
    call). ``backend``: ``"transformers"`` (alias ``"hf"``) or ``"vllm"``; not part of the cache key.
    """
    prompt_list: list[Prompt] = [prompts] if isinstance(prompts, str) else list(prompts)
    strat = strategy_from_params(strategy)
    mnt = int(max_new_tokens if max_new_tokens is not None else strat.max_new_tokens)
    if mnt < 1:
        raise ParamsError(f"max_new_tokens must be at least 1, got {max_new_tokens!r}.")
    if int(batch_size) < 1:
        raise ParamsError(f"batch_size must be at least 1, got {batch_size!r}.")
    seed_list = _seeds_for(seeds, len(prompt_list))
    if not prompt_list:
        return []

    be = get_backend(model, backend, device=device, dtype=dtype, trust_remote_code=trust_remote_code, **backend_kwargs)
    owns_cache = cache is not None and not isinstance(cache, ContentCache)
    store = open_cache(cache)
    try:
        if store is not None and be.revision is None:
            raise ParamsError(f"Cannot cache generations of {be.spec!r}: the model has no identity on disk. Save it with "
                              "save_pretrained and load it with load_for_generation(folder), or pass cache=None.")
        rendered = [be.render(p, chat_template) for p in prompt_list]
        keys, parts = [], []
        model_name = portable_model_name(be.spec, store.root if store is not None else None)
        for (text, _ids, templated), seed in zip(rendered, seed_list):
            kp = generation_key_parts(model=model_name, revision=be.revision, prompt=text, strategy=strat, seed=seed,
                                      max_new_tokens=mnt, dtype=be.dtype_name,
                                      extra={"input": "chat_template" if templated else "raw"})
            parts.append(kp)
            keys.append(content_key(kp))
        records: dict[str, dict[str, Any]] = store.get_many(keys) if store is not None else {}
        cached_keys = set(records)

        todo: dict[str, int] = {}  # key -> first prompt index (identical requests are generated once)
        for i, k in enumerate(keys):
            if k not in records and k not in todo:
                todo[k] = i
        order = sorted(todo.values(), key=lambda i: -len(rendered[i][1]))  # longest first: less padding
        log.info("generate %s/%s: %d prompts, %d from cache, %d to generate", be.spec, strat.name, len(prompt_list),
                 len(prompt_list) - sum(1 for k in keys if k in todo), len(order))
        batches = [order[j:j + int(batch_size)] for j in range(0, len(order), int(batch_size))]
        if progress and batches:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"generate {strat.name}", unit="batch")
        else:  # a papermill run: progress as log lines the runner shows (radaudit.progress)
            batches = track(batches, f"generate {strat.name}", unit="batches")
        for batch in batches:
            raws = be.generate([rendered[i][1] for i in batch], [seed_list[i] for i in batch], strat, mnt)
            for i, raw in zip(batch, raws):
                rec = {"text": be.decode(raw.token_ids), "token_ids": list(raw.token_ids),
                       "finish_reason": raw.finish_reason, "n_new_tokens": len(raw.token_ids),
                       "backend": be.name}  # provenance, not part of the key
                records[keys[i]] = rec
                if store is not None:
                    store.put(keys[i], rec, parts[i])  # written now: an interruption loses at most this batch
    finally:
        if owns_cache and store is not None:
            store.close()

    return [Generation(prompt=p, text=r["text"], token_ids=tuple(r["token_ids"]), strategy=strat.name, seed=seed,
                       n_new_tokens=int(r["n_new_tokens"]), finish_reason=r["finish_reason"], model=be.spec,
                       revision=be.revision, backend=r.get("backend", be.name), max_new_tokens=mnt,
                       cached=k in cached_keys, key=k)
            for p, seed, k in zip(prompt_list, seed_list, keys) for r in (records[k],)]
