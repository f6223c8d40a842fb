"""Speed of AtomiMed's rule backend (radaudit.atomic.score_pairs) on the 200 RadPref pairs.

Budget (issue 7): the rule-based backend scores the 200 RadPref (reference, candidate) pairs in
under 10 s on 2 CPU cores. The figure is printed with its ratio to the budget and to a reference
run in the same process (the rule-based CheXpert-label F1, ``chexpert_f1_micro_all14``, on the
same pairs: another labeler-style clinical metric over the same text toolkit); nothing is asserted:

    .venv/bin/python benchmarks/bench_atomic.py [--repeats 3] [--data-root ../shared/data]

Pairs: each of the 100 RadPref cases gives (ground-truth report, C1 report) and (ground-truth
report, C2 report). Each timed run builds a fresh backend (no decomposition cache carried over);
the first run also pays for compiling the toolkit's regexes and is printed separately (cold).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from _timing import best_of  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

BUDGET_S = 10.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-root", default=os.environ.get("RADAUDIT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    a = ap.parse_args()

    from radaudit.atomic import score_pairs
    from radaudit.data import load_dataset
    from radaudit.metrics import build_metric

    cases = load_dataset("radpref", data_root=a.data_root)
    refs = list(cases["findings"]) * 2
    preds = list(cases["c1_report"]) + list(cases["c2_report"])

    t0 = time.perf_counter()
    scores = score_pairs(refs, preds)
    cold = time.perf_counter() - t0
    warm = best_of(lambda: score_pairs(refs, preds), a.repeats)

    chexpert = build_metric("chexpert_f1_micro_all14", data_root=a.data_root)
    chexpert.compute(refs[:2], preds[:2])  # load the phrase lists outside the timing
    ref_t = best_of(lambda: build_metric("chexpert_f1_micro_all14", data_root=a.data_root).compute(refs, preds), a.repeats)

    trace = scores.attrs["trace"]
    print(f"{len(refs)} RadPref pairs ({len(cases)} cases x C1/C2); {len(trace)} questions in the trace; "
          f"mean Eq. 4 F1 {scores['f1'].mean():.3f} (disease {scores['disease_f1'].mean():.3f}, "
          f"attribute {scores['attribute_f1'].mean():.3f} over {scores['attribute_f1'].notna().sum()} pairs)")
    print(f"AtomiMed rule backend: {warm:.2f} s wall (best of {a.repeats}; cold first run {cold:.2f} s); "
          f"ratio to the {BUDGET_S:.0f} s budget: {warm / BUDGET_S:.3f}")
    print(f"reference (chexpert_f1_micro_all14, same pairs, same process): {ref_t:.2f} s; "
          f"ratio AtomiMed / reference: {warm / ref_t:.2f}")


if __name__ == "__main__":
    main()
