"""A fixed CPU workload timed beside a wall-clock benchmark, so that figures from different machines can be compared.

``make demo``'s minutes moved 1.6-1.7x between two states of one 2-core AMD machine with the code unchanged (issue 44's
fifth-session note), and 2.6x between an AMD and an Intel 2-core machine for the same scoring code (``bench_score``):
a wall time alone cannot say whether a change made the demo faster. :func:`reference_seconds` times, in the calling
process, a small fixed version of what the demo spends its time on — AdamW steps of a 3-layer Llama text model on
token batches, and of a small convolutional image network (the stand-ins' two kinds of training) — with fixed shapes,
seed and thread count. A demo time divided by it (``reference_units``) is in units of "this machine's reference
workload", and moves far less with the machine than the minutes do.
"""

from __future__ import annotations

import statistics
import time

#: What the workload is, written into the records beside its time.
WORKLOAD = ("10 AdamW steps of a 3-layer Llama (d_model 128, 4 heads, vocab 3000) on 32 x 96 tokens + 10 AdamW steps "
            "of a 4-layer conv net on 16 x 1 x 128 x 128 images; torch's default threads, seed 0; median of 3")


def _llama_step_factory():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=3000, hidden_size=128, intermediate_size=384, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 3000, (32, 96))

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def _conv_step_factory():
    import torch
    from torch import nn

    net = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                        nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
                        nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(64, 2))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x, y = torch.randn(16, 1, 128, 128), torch.randint(0, 2, (16,))

    def step():
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def reference_seconds(repeats: int = 3, steps: int = 10) -> dict:
    """``{"seconds": median over repeats, "runs": [...], "workload": WORKLOAD}``: the fixed workload's wall time here.

    One warm-up step of each network runs first (untimed: allocation, kernel selection); the caller's torch RNG state
    is restored afterwards."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(0)
        llama, conv = _llama_step_factory(), _conv_step_factory()
        llama(), conv()
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(steps):
                llama()
                conv()
            runs.append(round(time.perf_counter() - t0, 3))
    return {"seconds": statistics.median(runs), "runs": runs, "workload": WORKLOAD}


def main(argv: list[str] | None = None) -> None:
    """Print the workload's time as JSON; ``--out FILE`` also writes it there (time it before ``make demo``, then pass
    the file to ``benchmarks/demo_timings.py --reference-before FILE``)."""
    import argparse
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON record to this file")
    args = ap.parse_args(argv)
    rec = reference_seconds()
    text = json.dumps(rec)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
