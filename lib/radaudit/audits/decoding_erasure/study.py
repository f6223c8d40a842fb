"""The decoding study of Experiment 1, the experiment's steps as the notebook runs them: generate reports under each
strategy, evaluate them, vary the training skew.

Paper: Parikh et al., "Measuring What VLMs Don't Say" (``../shared/papers/000_c11b3b836ef0a58a.txt``), §3
("Inference Strategy Study", "Models") and §4 (Table 1, Fig. 2c "Robustness").

Two report writers, one code path (only the params differ):

* ``report_model = None`` (``demo``): the small language model the project trains on public report text
  (:mod:`radaudit.audits.decoding_erasure.models`), prompted with the indication and the patient's
  sex. The evaluated reports are its held-out test split (balanced by sex, the same prompts for
  every training skew); the references are the radiologists' reports of those studies.
* ``report_model = <hub id | folder>`` (``paper``): a vision-language model (e.g. Qwen3-VL-8B-Instruct,
  with the LoRA adapter ``report_adapter``) writing a report from the chest X-ray
  (:mod:`radaudit.models.vlm`), on ``image_dataset`` (ReXGradient-160K or MIMIC-CXR) frontal images,
  ``n_reports`` studies balanced by sex (paper: N = 2,000).

Every generation is cached (:class:`radaudit.models.cache.ContentCache`, keyed by model, prompt, image,
strategy, seed and length), so an interrupted run resumes and a rerun regenerates nothing. Each
report's sampling seed is ``stable_seed(seed, "report", study_id)``: the same study gets the same
seed under every strategy and every skew, and adding studies does not change the others' samples.

Choices (the paper is silent)
-----------------------------
- **Which strategies in Fig. 2c.** The paper reports one ΔWAE_pred per skewed model without naming
  the strategy; its BERTScore range there (0.76–0.78) matches its greedy/beam/T=0.3 columns. We
  evaluate each skew under ``skew_strategies`` (default greedy and T = 0.7) and show both.
- **The paper's prompt** is not given; ``report_prompt`` is ours (a params string; ``{indication}``
  is filled from the study when present).
- **Image selection, split and resizing** (the paper path's studies and images): see
  :mod:`radaudit.audits.decoding_erasure.data`.
- **Thinking.** The paper's Qwen3-VL-8B-*Instruct* does not think: its chat template has no
  ``enable_thinking`` switch and its generation prompt opens no ``<think>`` block. A template that reads
  ``enable_thinking`` (Qwen3 hybrids) is rendered with thinking off (:func:`radaudit.models.vlm.render_prompt`);
  one that opens ``<think>`` unconditionally (the ``*-Thinking`` checkpoints) is refused
  (:func:`check_report_prompt`): its output would be reasoning, not a report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.decoding_erasure.corpus import evaluate_corpus
from radaudit.audits.decoding_erasure.data import image_studies, report_images
from radaudit.audits.decoding_erasure.models import build_training_corpus, demo_model_path, generate_reports
from radaudit.audits.decoding_erasure.tables import skew_table
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.weat import load_glove
from radaudit.models.cache import ContentCache
from radaudit.models.encoders import TextEncoder
from radaudit.models.vlm import load_vlm, mark_adapter, render_prompt
from radaudit.models.vlm_vllm import load_vllm_vlm
from radaudit.partition import shard_slice
from radaudit.paths import atomic_dir
from radaudit.stats import stable_seed

log = logging.getLogger(__name__)

__all__ = ["GENERATION_COLUMNS", "check_report_prompt", "corpus_kwargs", "evaluate_strategies", "lora_config",
           "report_seeds", "skew_sensitivity", "skew_study_plan", "study_generations", "write_random_adapter"]

GENERATION_COLUMNS: list[str] = ["strategy", "study_id", "prompt", "reference", "prediction", "group", "seed",
                                 "n_new_tokens", "finish_reason"]
"""Columns of :func:`study_generations` (one row per study x strategy)."""


def report_seeds(seed: int, study_ids: Sequence[Any]) -> list[int]:
    """Per-report sampling seeds: ``stable_seed(seed, "report", study_id)`` (same study -> same seed everywhere)."""
    return [int(stable_seed(seed, "report", s)) for s in study_ids]


def _cache(cache: Any) -> Any:
    if cache is None or cache is False:
        return None
    if isinstance(cache, ContentCache):
        return cache
    return ContentCache(None if cache is True else cache)


# ----------------------------------------------------------------------------------------------
# demo: the project's report-writing LM


def _demo_generations(P: Any, skew: float | None, strategies: Sequence[str], data_root: Any, cache: Any,
                      model_dir: Any, shard: tuple[int, int] | None = None) -> pd.DataFrame:
    per_sex = int(math.ceil(P.n_reports / 2))
    corpus = build_training_corpus(data_root, skew=skew, seed=P.seed, n_test_per_sex=per_sex)
    test = corpus[corpus["split"] == "test"]
    # balanced: alternate F and M so that any prefix is balanced too
    by_sex = [test[test["sex"] == s].reset_index(drop=True) for s in ("F", "M")]
    order = pd.concat([by_sex[0], by_sex[1]]).sort_index(kind="stable").reset_index(drop=True)
    order = _shard_rows(order.head(P.n_reports), shard)
    model_path = demo_model_path(data_root, skew, seed=P.seed, cache_dir=model_dir, n_test_per_sex=per_sex,
                                 **dict(P.demo_model))
    seeds = report_seeds(P.seed, order["study_id"].tolist())
    gens = generate_reports(model_path, order["prompt"].tolist(), list(strategies), seeds=seeds,
                            max_new_tokens=P.max_new_tokens, cache=_cache(cache), batch_size=P.batch_size,
                            backend=P.backend)
    n = len(order)
    out = pd.DataFrame({
        "strategy": gens["strategy"].to_numpy(), "study_id": np.tile(order["study_id"].to_numpy(), len(strategies)),
        "prompt": gens["prompt"].to_numpy(), "reference": np.tile(order["target"].to_numpy(), len(strategies)),
        "prediction": gens["text"].to_numpy(), "group": np.tile(order["sex"].to_numpy(), len(strategies)),
        "seed": gens["seed"].to_numpy(), "n_new_tokens": gens["n_new_tokens"].to_numpy(),
        "finish_reason": gens["finish_reason"].to_numpy()})
    assert len(out) == n * len(strategies)
    out.attrs["model"] = str(model_path)
    return out


# ----------------------------------------------------------------------------------------------
# paper: a VLM on chest X-rays


def check_report_prompt(processor: Any, prompt: str = "Write the report.") -> str:
    """The rendered chat prompt of a report request; raises :class:`ParamsError` when the template opens a thinking
    block that no template variable closes (a ``*-Thinking`` checkpoint: the paper's Qwen3-VL-8B-Instruct has none).

    Templates that read ``enable_thinking`` are rendered with thinking off (:func:`radaudit.models.vlm.render_prompt`),
    which for Qwen3 closes an empty ``<think></think>`` block: that passes.
    """
    rendered = render_prompt(processor, prompt)
    tail = rendered.rstrip()
    if tail.endswith("<think>") or tail.count("<think>") > tail.count("</think>"):
        raise ParamsError("report_model's chat template opens a thinking block that cannot be switched off (a "
                          "*-Thinking checkpoint?): its output would be reasoning, not a report, and the reasoning's "
                          "words would enter CAD/WAE. Use the Instruct checkpoint (the paper's "
                          f"Qwen/Qwen3-VL-8B-Instruct). Rendered prompt ends with {rendered[-60:]!r}.")
    return rendered


def lora_config(lora: Mapping[str, Any], *, init_lora_weights: bool = True) -> Any:
    """The paper's LoRA fine-tuning config as a ``peft.LoraConfig`` (§3: r = 16, α = 32, attention + MLP layers).

    ``lora`` is the ``lora`` params mapping (``r``, ``alpha``, ``dropout``, ``target_modules``). Needs
    the optional ``peft`` package (``pip install 'radaudit[peft]'``). ``init_lora_weights=False`` draws both
    LoRA matrices at random (peft's default starts B at zero, an adapter that changes nothing): for rehearsals.
    """
    try:
        from peft import LoraConfig
    except ImportError as err:
        raise RadauditError("LoRA needs the optional package peft: pip install 'radaudit[peft]'") from err
    known = {"r", "alpha", "dropout", "target_modules", "bias"}
    bad = set(lora) - known
    if bad:
        raise ParamsError(f"unknown lora setting(s) {sorted(bad)}; allowed: {sorted(known)}")
    return LoraConfig(r=int(lora.get("r", 16)), lora_alpha=int(lora.get("alpha", 32)),
                      lora_dropout=float(lora.get("dropout", 0.05)),
                      target_modules=list(lora.get("target_modules", ["q_proj", "k_proj", "v_proj", "o_proj",
                                                                       "gate_proj", "up_proj", "down_proj"])),
                      bias=str(lora.get("bias", "none")), task_type="CAUSAL_LM", init_lora_weights=init_lora_weights)


def write_random_adapter(base: str | Path, lora: Mapping[str, Any], out: str | Path, *, seed: int = 0) -> Path:
    """A peft LoRA adapter with random weights for the model folder ``base``, shaped by the ``lora`` params
    (:func:`lora_config`), saved to ``out`` (written once: an existing adapter there is returned as it is).

    For a rehearsal (``radaudit run decoding_erasure --preset paper --rehearse``): it goes through the same
    ``report_adapter`` path as a fine-tuned adapter, and changes the twin's output (a zero-initialised one
    would not).
    """
    out = Path(out)
    if (out / "adapter_config.json").is_file():
        return out
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(str(base))
    torch.manual_seed(int(seed))
    peft_model = get_peft_model(model, lora_config(lora, init_lora_weights=False))
    with atomic_dir(out) as tmp:
        peft_model.save_pretrained(tmp)
    return out


def _load_report_vlm(model: str, adapter: str | None, dtype: Any) -> tuple[Any, Any]:
    """``(processor, model)`` of the report writer on transformers, the LoRA ``adapter`` applied with peft and
    keyed by its folder's content (:func:`radaudit.models.vlm.mark_adapter`), as the vLLM engine keys it."""
    processor, vlm = load_vlm(model, dtype=dtype)
    check_report_prompt(processor)
    if adapter:
        try:
            from peft import PeftModel
        except ImportError as err:
            raise RadauditError("report_adapter needs the optional package peft: pip install 'radaudit[peft]'") from err
        vlm = mark_adapter(PeftModel.from_pretrained(vlm, adapter).eval(), adapter)
    return processor, vlm


def _vlm_generations(P: Any, model: str, adapter: str | None, strategies: Sequence[str], data_root: Any,
                     cache: Any, shard: tuple[int, int] | None = None) -> pd.DataFrame:
    """The paper path's reports. ``P.backend == "vllm"``: a vLLM engine writes them
    (:mod:`radaudit.models.vlm_vllm`), the LoRA adapter served by vLLM's LoRA support (one ``LoRARequest`` per
    request) instead of peft; the prompts, resized images, seeds and cache entries are the transformers path's."""
    from radaudit.models.vlm import vlm_generate  # lazy: looked up per call, tests patch it

    studies = _shard_rows(image_studies(P, data_root), shard)
    prompts = [P.report_prompt.format(indication=(i if isinstance(i, str) and i.strip() else "not given"))
               for i in studies["indication"]]
    if P.backend == "vllm":
        processor, vlm = load_vllm_vlm(model, dtype=P.model_dtype, adapter=adapter)
        check_report_prompt(processor)
    else:
        processor, vlm = _load_report_vlm(model, adapter, P.model_dtype)
    images = report_images(studies["image"].tolist(), P.image_size)
    seeds = report_seeds(P.seed, studies["study_id"].tolist())
    parts = []
    for strat in strategies:
        g = vlm_generate(processor, vlm, prompts, images, strat, max_new_tokens=P.max_new_tokens,
                         batch_size=P.batch_size, seeds=seeds, cache=_cache(cache))
        parts.append(pd.DataFrame({
            "strategy": strat, "study_id": studies["study_id"].to_numpy(), "prompt": prompts,
            "reference": studies["reference"].to_numpy(), "prediction": g["text"].to_numpy(),
            "group": studies["group"].to_numpy(), "seed": seeds, "n_new_tokens": g["n_generated_tokens"].to_numpy(),
            "finish_reason": g["finish"].to_numpy()}))
    out = pd.concat(parts, ignore_index=True)
    out.attrs["model"] = model if not adapter else f"{model} + {adapter}"
    return out


# ----------------------------------------------------------------------------------------------
# entry points


def _shard_rows(studies: pd.DataFrame, shard: tuple[int, int] | None) -> pd.DataFrame:
    """The studies of shard ``(i, n)`` (:func:`radaudit.partition.shard_slice`: the i-th contiguous part), or all."""
    if shard is None:
        return studies

    return studies.iloc[shard_slice(len(studies), *shard)].reset_index(drop=True)


def study_generations(P: Any, *, skew: float | None | str = "train", strategies: Sequence[str] | None = None,
                      data_root: Any = None, cache: Any = True, model_dir: Any = None,
                      shard: tuple[int, int] | None = None) -> pd.DataFrame:
    """Reports written under each decoding strategy, one row per (strategy, study), with their references.

    ``P``: :class:`radaudit.audits.decoding_erasure.Params`. ``skew``: the demo model's male training
    share (``"train"`` = ``P.train_skew``); with a ``report_model`` it picks the model of that skew from
    ``P.skew_models`` (the paper's ReX-MB / ReX-FB; ``"train"`` = ``report_model`` itself).
    ``strategies``: default ``P.strategies``. ``cache``: the generation cache (``True`` = the default
    folder, a folder, a ``ContentCache``, or ``None``). ``model_dir``: where demo models are kept
    (default the radaudit cache). Columns :data:`GENERATION_COLUMNS`; ``attrs["model"]`` names the model.
    ``shard``: ``(i, n)`` keeps only the i-th of n contiguous parts of the studies, in the same order and with
    the same prompts and seeds (``radaudit run decoding_erasure --shard i/n`` fills the cache this way).
    """
    strategies = list(P.strategies if strategies is None else strategies)
    if not strategies:
        raise ParamsError("no decoding strategy to generate with: strategies is empty")
    root = data_root if data_root is not None else P.data_root
    if P.report_model is None:
        s = P.train_skew if skew == "train" else skew
        out = _demo_generations(P, s, strategies, root, cache, model_dir, shard)
    else:
        if skew == "train":
            model, adapter = P.report_model, P.report_adapter
        else:
            key = _skew_key(skew)
            if key not in P.skew_models:
                raise ParamsError(f"no model for training skew {key} in skew_models (have {sorted(P.skew_models)}); "
                                  "give the fine-tuned model or LoRA adapter of each skew, e.g. "
                                  "-p skew_models.'0.67'=/path/to/adapter")
            spec = P.skew_models[key]
            model, adapter = (P.report_model, spec) if P.report_adapter is not None else (spec, None)
        out = _vlm_generations(P, model, adapter, strategies, root, cache, shard)
    out = out[GENERATION_COLUMNS].copy() if set(GENERATION_COLUMNS) <= set(out.columns) else out
    empty = out["prediction"].fillna("").astype(str).str.strip().eq("")
    if empty.any():
        log.warning("%d generated report(s) are empty; they stay in the corpus (counted per strategy)", int(empty.sum()))
    return out


def _skew_key(skew: Any) -> str:
    return "none" if skew is None else f"{float(skew):g}"


def corpus_kwargs(P: Any) -> dict[str, Any]:
    """The keyword arguments of :func:`radaudit.audits.decoding_erasure.evaluate_corpus` taken from ``P``."""
    return dict(groups=tuple(P.groups), seed=P.seed, n_bootstrap=P.n_bootstrap, confidence=P.confidence,
                p_star=P.p_star, alpha=P.alpha, z_neutral=P.z_neutral, z_strong=P.z_strong, correction=P.correction,
                min_count=P.min_count, n_permutations=P.n_permutations, surface_metrics=tuple(P.surface_metrics),
                text_encoder=P.text_encoder, diversity_metrics=tuple(P.diversity_metrics), weat_k=P.weat_k,
                weat_attributes=P.weat_attributes, dir_per_report=P.dir_per_report)


def evaluate_strategies(gens: pd.DataFrame, P: Any, *, prefix: str = "", **overrides: Any) -> list[Any]:
    """One :class:`~radaudit.audits.decoding_erasure.CorpusResult` per strategy of ``gens`` (in its order).

    Corpus names are ``prefix + strategy``. ``overrides`` replace :func:`corpus_kwargs` entries (tests
    pass a fast ``encoder`` / ``word_vectors``). The sentence encoder and GloVe are loaded once.
    """
    kw = {**corpus_kwargs(P), **overrides}
    if "semantic_diversity" in kw["diversity_metrics"] and kw.get("encoder") is None:
        kw["encoder"] = TextEncoder(kw["text_encoder"]) if kw["text_encoder"] is not None else TextEncoder()
    if kw.get("word_vectors") is None:
        kw["word_vectors"] = load_glove()
    out = []
    for strat, part in gens.groupby("strategy", sort=False):
        out.append(evaluate_corpus(part.reset_index(drop=True), name=f"{prefix}{strat}", **kw))
    return out


def skew_sensitivity(P: Any, *, data_root: Any = None, cache: Any = True, model_dir: Any = None,
                     **overrides: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paper Fig. 2c: ΔWAE_pred of the models trained on sex-skewed data, under ``P.skew_strategies``.

    For each skew in ``P.skews`` (male training share; the paper's ReX-MB 0.67, ReX-BB 0.5, ReX-FB 0.33)
    the model of that skew writes the same held-out, sex-balanced studies; each (skew, strategy)
    corpus is evaluated with the full :func:`evaluate_corpus` (so conventional metrics can be
    compared too). Returns ``(table, generations)``: ``table`` has one row per (skew, strategy, metric)
    with ``estimate``, ``low``, ``high``, ``pvalue`` for ΔWAE_pred, WAE_pred, WEAT ES and each surface
    metric (see :func:`radaudit.audits.decoding_erasure.skew_table`); ``generations`` the reports with a
    ``skew`` column.
    """
    skews, note = skew_study_plan(P)
    if not skews:
        raise ParamsError(note or "skews is empty: give the male training shares to compare, e.g. [0.67, 0.5, 0.33]")
    if note:
        log.warning(note)
    results, gens = {}, []
    for skew in skews:
        g = study_generations(P, skew=skew, strategies=P.skew_strategies, data_root=data_root, cache=cache,
                              model_dir=model_dir)
        gens.append(g.assign(skew=skew))
        results[float(skew)] = evaluate_strategies(g, P, prefix=f"skew {skew:g} · ", **overrides)
    return skew_table(results), pd.concat(gens, ignore_index=True)


def skew_study_plan(P: Any) -> tuple[list[float], str]:
    """The skews Fig. 2c can run with these params, and a note on any that cannot.

    The demo trains a model per skew itself. With a ``report_model``, a skew needs its own model or
    adapter in ``skew_models`` (0.5 may reuse ``report_model`` when not listed): the others are left
    out and named in the note.
    """
    if not P.skews:
        return [], "skews is empty: the skew study is not run."
    if P.report_model is None:
        return list(P.skews), ""
    ready = [s for s in P.skews if _skew_key(s) in P.skew_models]
    missing = [_skew_key(s) for s in P.skews if s not in ready]
    note = (f"No model for training skew(s) {', '.join(missing)} in skew_models: left out. Fine-tune one per skew "
            "(lora config in params) and list it, e.g. -p skew_models.'0.67'=/path/to/adapter.") if missing else ""
    return ready, note
