"""Where a stand-in's training time goes (issue 44, item 1), measured in one process, as ratios.

    .venv/bin/python benchmarks/profile_standins.py [--steps 6] [--lengths 128 256 512 1024] [--cache DIR]
                                                    [--out benchmarks/results]

Three parts, written to ``<out>/profile_standins.json`` (and the results README):

1. **The demo VLM's training step by prompt length** (modality_shift's tiny LLaVA,
   :data:`radaudit.audits.modality_shift.models.DEMO_VLM_CONFIG`, batch 16, the vision tower frozen as in
   training): seconds per step at each length, and the share of the step spent in attention (torch.profiler:
   ``scaled_dot_product_attention`` and its backward), with SDPA and with eager attention; plus the
   distribution of the real prompts' token lengths (the length-grouped batches pay for their longest prompt).
2. **Threads**: the same step with 1 and with 2 torch threads, alone and with a second process doing the same
   beside it (as ``make demo``'s two notebooks do); the reason :data:`radaudit.run.KERNEL_THREADS` is 1.
3. **The stand-ins in a cache** (``--cache``, default the project's): per trained model folder, its kind, seed,
   planned steps, training seconds and, where its training log has them, the held-out metrics at each
   evaluation (how many steps the model needed: e.g. the VLM's marked only-image AUROC, the positive
   control's premise, at 1/4, 1/2, 3/4 and all of its steps).

It profiles the trainer's own steps, so it calls the trainer's private helpers (``_build_processor``,
``_model_config``, ``_items``, ``_encode_items`` of :mod:`radaudit.audits.modality_shift.models`): a benchmark, not
library code. Times are this machine's (named in the JSON, with its load average at the start): compare the ratios, not the
seconds, with another machine's.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS, record  # noqa: E402

#: held-out metrics worth following over a stand-in's evaluations (the others are in its training log)
FOLLOW = ("auroc_marked_only_image", "auroc_marked_no_shift", "auroc_no_shift", "auroc_only_image", "auroc_only_text",
          "acc_no_shift")


def _vlm(attn: str = "sdpa"):
    """A demo-config tiny LLaVA (random weights) and its config; the vision tower frozen as in training."""
    from transformers import LlavaForConditionalGeneration

    from radaudit.audits.modality_shift import models as ms_models

    hp = ms_models.DEMO_VLM_CONFIG
    texts = ["clinical notes with some words for the tokenizer"] * 40
    processor = ms_models._build_processor(texts, {**hp, "seed": 0})
    config = ms_models._model_config(processor, hp)
    config._attn_implementation = attn
    config.text_config._attn_implementation = attn
    config.vision_config._attn_implementation = attn
    model = LlavaForConditionalGeneration(config)
    model.model.vision_tower.requires_grad_(False)
    return model, config


def _step_fn(model, config, length: int, batch: int = 16):
    import torch

    g = torch.Generator().manual_seed(0)
    n_img = int(config.image_seq_length)
    ids = torch.randint(8, 60, (batch, length), generator=g)
    ids[:, 2:2 + n_img] = config.image_token_index
    pixels = torch.randn(batch, 3, 64, 64, generator=g)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def step() -> None:
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixels, logits_to_keep=2)
        out.logits.float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad()

    return step


def step_seconds(attn: str, length: int, steps: int) -> float:
    """Median seconds per training step (after one warm-up step)."""
    model, config = _vlm(attn)
    step = _step_fn(model, config, length)
    step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def attention_share(attn: str, length: int) -> float:
    """Share of a training step's CPU time in attention kernels (forward and backward), by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    model, config = _vlm(attn)
    step = _step_fn(model, config, length)
    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    keys = ("scaled_dot_product", "_efficient_attention", "_flash_attention", "softmax", "bmm", "baddbmm")
    att = sum(e.self_cpu_time_total for e in events if any(k in e.key for k in keys))
    return att / total if total else float("nan")


def prompt_lengths(data_root: str | None) -> dict[str, Any]:
    """Token lengths of the real training prompts (no_shift condition), as the demo tokenizer encodes them."""
    from radaudit.audits.modality_shift import models as ms_models
    from radaudit.audits.modality_shift.conditions import covid_samples

    samples = covid_samples(data_root)
    train = samples[samples["split"] == "train"]
    items = ms_models._items(train, "covid_cxr")
    processor = ms_models._build_processor(items["prompt"].tolist(), {**ms_models.DEMO_VLM_CONFIG, "seed": 0})
    lengths = np.array([len(e["input_ids"]) for e in ms_models._encode_items(processor, items)])
    q = {f"p{p}": int(np.percentile(lengths, p)) for p in (10, 50, 75, 90, 95, 99, 100)}
    return {"n_prompts": int(lengths.size), "tokens": q}


def _threads_child(threads: int, steps: int, policy: str):
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": policy}
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import profile_standins as p; "
            f"print(p.step_seconds('sdpa', 256, {steps}))")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL)


def threads_table(steps: int) -> list[dict[str, Any]]:
    """Seconds per step (length 256) with 1 and 2 threads, one process alone and two side by side; OpenMP's wait
    policy PASSIVE (what ``radaudit run all`` sets) and, for 2 threads side by side, ACTIVE (spinning threads)."""
    rows = []
    for threads, side_by_side, policy in ((1, 1, "PASSIVE"), (1, 2, "PASSIVE"), (2, 1, "PASSIVE"), (2, 2, "PASSIVE"),
                                          (2, 2, "ACTIVE")):
        procs = [_threads_child(threads, steps, policy) for _ in range(side_by_side)]
        secs = [float(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        rows.append({"threads": threads, "processes": side_by_side, "wait_policy": policy,
                     "seconds_per_step": max(secs)})
    return rows


def cache_inventory(cache: Path) -> list[dict[str, Any]]:
    """Every trained stand-in folder under ``<cache>/demo_models``: kind, seed, steps, training seconds, and the
    followed held-out metrics at each evaluation of its training log."""
    rows = []
    for folder in sorted((cache / "demo_models").glob("*")):
        records = sorted(folder.glob("radaudit_*.json"))
        if not records:
            continue
        meta = json.loads(records[0].read_text())
        hp = meta.get("hyperparameters") or meta.get("config") or {}
        seconds = meta.get("train_seconds") or meta.get("elapsed_seconds")
        row = {"folder": folder.name, "kind": records[0].stem.replace("radaudit_", ""), "seed": hp.get("seed"),
               "steps": hp.get("steps"), "train_seconds": seconds, "torch_threads": meta.get("torch_threads")}
        log_file = folder / "training_log.json"
        if log_file.exists():
            history = json.loads(log_file.read_text()).get("eval_history") or []
            row["evaluations"] = [{"step": e.get("step"), **{k: round(float(e[k]), 3) for k in FOLLOW if k in e}}
                                  for e in history]
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=6, help="timed steps per setting (median)")
    ap.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512, 1024])
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args()

    import torch

    from radaudit.models.cache import default_cache_dir

    torch.set_num_threads(1)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    by_length = []
    for length in a.lengths:
        sdpa, eager = step_seconds("sdpa", length, a.steps), step_seconds("eager", length, a.steps)
        by_length.append({"length": length, "sdpa_s": sdpa, "eager_s": eager, "eager_over_sdpa": eager / sdpa,
                          "attention_share_sdpa": attention_share("sdpa", length),
                          "attention_share_eager": attention_share("eager", length)})
        print(by_length[-1], flush=True)
    lengths = prompt_lengths(a.data_root)
    print(lengths, flush=True)
    threads = threads_table(a.steps)
    print(threads, flush=True)
    base = next(r["seconds_per_step"] for r in threads if r["threads"] == 1 and r["processes"] == 1)
    for r in threads:
        r["ratio_to_1_thread_alone"] = r["seconds_per_step"] / base
    inventory = cache_inventory(a.cache or default_cache_dir())
    worst = max(r["ratio_to_1_thread_alone"] for r in threads if r["threads"] == 2 and r["processes"] == 2)
    # the throughput that matters for `make demo`: two notebooks at once, seconds per step of each
    rec = record("profile_standins", seconds=time.perf_counter() - t0, n=len(a.lengths), unit="prompt lengths",
                 ratio=worst, load_average_at_start=round(load, 2), vlm_step_by_length=by_length,
                 prompt_lengths=lengths, threads=threads, stand_ins=inventory,
                 ratio_is=("2 threads in each of 2 processes side by side (the worse wait policy) / 1 thread alone "
                           "(seconds per VLM step)"),
                 folder=a.out)
    print(json.dumps({k: rec[k] for k in ("ratio", "threads", "prompt_lengths")}, indent=1))


if __name__ == "__main__":
    main()
