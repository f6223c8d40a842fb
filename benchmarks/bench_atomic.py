"""Speed of AtomiMed's rule backend (radaudit.atomic.score_pairs) on the 200 RadPref pairs.

Budget (issue 7): the rule-based backend scores the 200 RadPref (reference, candidate) pairs in
under 10 s on 2 CPU cores. The figure is printed with its ratio to the budget and to a reference
run in the same process (the rule-based CheXpert-label F1, ``chexpert_f1_micro_all14``, on the
same pairs: another labeler-style clinical metric over the same text toolkit); nothing is asserted:

    .venv/bin/python benchmarks/bench_atomic.py [--n 10000] [--sizes 100,300,1000,3000] [--repeats 3]
        [--data-root ../shared/data]

Pairs: each of the 100 RadPref cases gives (ground-truth report, C1 report) and (ground-truth
report, C2 report): 200 pairs. ``--n N`` draws N pairs with replacement from those 200 (seed 0), as a
corpus of generated reports repeats its references; the issue's target is 10,000 pairs in <= 10 s.
Each timed run builds a fresh backend (no decomposition cache carried over); the first run also pays
for compiling the toolkit's regexes and is printed separately (cold). ``--sizes`` adds a scaling curve
(``benchmarks/results/atomic_scaling.png``); everything is written to ``benchmarks/results/atomic.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _results import record, scaling_plot  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _timing import best_of  # noqa: E402

BUDGET_S = 10.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="pairs, drawn with replacement from the 200 (0: the 200)")
    ap.add_argument("--sizes", default="100,300,1000,3000", help="smaller draws for the scaling curve ('' for none)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-root", default=os.environ.get("RADAUDIT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    a = ap.parse_args()

    from radaudit.atomic import score_pairs
    from radaudit.data import load_dataset
    from radaudit.metrics import build_metric

    cases = load_dataset("radpref", data_root=a.data_root)
    refs200 = list(cases["findings"]) * 2
    preds200 = list(cases["c1_report"]) + list(cases["c2_report"])

    def draw(n: int) -> tuple[list[str], list[str]]:
        if n <= 0:
            return refs200, preds200
        pick = np.random.default_rng(0).integers(0, len(refs200), n)
        return [refs200[i] for i in pick], [preds200[i] for i in pick]

    refs, preds = draw(a.n)
    t0 = time.perf_counter()
    scores = score_pairs(refs, preds)
    cold = time.perf_counter() - t0
    warm = best_of(lambda: score_pairs(refs, preds), a.repeats)

    chexpert = build_metric("chexpert_f1_micro_all14", data_root=a.data_root)
    chexpert.compute(refs[:2], preds[:2])  # load the phrase lists outside the timing
    ref_t = best_of(lambda: build_metric("chexpert_f1_micro_all14", data_root=a.data_root).compute(refs, preds), a.repeats)

    trace = scores.attrs["trace"]
    print(f"{len(refs)} RadPref pairs (from {len(cases)} cases x C1/C2); {len(trace)} questions in the trace; "
          f"mean Eq. 4 F1 {scores['f1'].mean():.3f} (disease {scores['disease_f1'].mean():.3f}, "
          f"attribute {scores['attribute_f1'].mean():.3f} over {scores['attribute_f1'].notna().sum()} pairs)")
    print(f"AtomiMed rule backend: {warm:.2f} s wall (best of {a.repeats}; cold first run {cold:.2f} s); "
          f"ratio to the {BUDGET_S:.0f} s budget: {warm / BUDGET_S:.3f}")
    print(f"reference (chexpert_f1_micro_all14, same pairs, same process): {ref_t:.2f} s; "
          f"ratio AtomiMed / reference: {warm / ref_t:.2f}")
    curve = []
    for n in sorted({int(x) for x in a.sizes.split(",") if x.strip()} - {len(refs)}):
        r, p = draw(n)
        curve.append((n, best_of(lambda: score_pairs(r, p), 1)))
    curve = sorted(curve + [(len(refs), warm)])
    slopes = {}
    if len(curve) >= 2:
        slopes = scaling_plot("atomic", {"AtomiMed (rule)": ([n for n, _ in curve], [t for _, t in curve])},
                              xlabel="report pairs (drawn from RadPref's 200)")
        print("scaling: " + ", ".join(f"{n} pairs {t:.2f} s" for n, t in curve)
              + f"; fitted log-log slope {slopes['AtomiMed (rule)']:.2f}")
    record("atomic", seconds=warm, n=len(refs), unit="pairs", ratio=warm / ref_t, budget_s=BUDGET_S, cold_seconds=cold,
           reference="chexpert_f1_micro_all14 on the same pairs", reference_seconds=ref_t,
           scaling=[[n, t] for n, t in curve], slopes=slopes)


if __name__ == "__main__":
    main()
