"""Speed of ``radaudit score`` (radaudit.scoring): 1,000 report pairs, two group columns, BLEU, BERTScore and
AtomiMed, 1,000 BCa bootstrap replicates per statistic.

Budget (issue 22): under 30 s on 2 CPU cores. Printed, never asserted; the result is written to
``benchmarks/results/score.json``:

    .venv/bin/python benchmarks/bench_score.py [--pairs 1000] [--resamples 1000] [--data-root ../shared/data]

The pairs are real IU X-ray reports (``iu-xray-openi/indiana_reports.csv`` under the data root): each
reference is a report's findings and its prediction another report's (a shuffled copy for a third of them,
the report itself for a third, an empty prediction for a few), with sex and an age band drawn at random.
The BERTScore encoder is the MiniLM shipped on PyPI (the demo's), so nothing is downloaded. The run uses an empty
cache folder, so the text-output cache cannot serve an earlier run's BERTScore.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _results import record  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

BUDGET_S = 30.0


def pairs(n: int, data_root: str | None, seed: int = 0) -> pd.DataFrame:
    from radaudit.data.root import resolve_data_root

    root = resolve_data_root(data_root)
    reports = pd.read_csv(root / "iu-xray-openi" / "indiana_reports.csv")["findings"].dropna().astype(str)
    reports = reports[reports.str.len() > 20].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    ref = reports.sample(n, replace=n > len(reports), random_state=seed).reset_index(drop=True)
    kind = rng.integers(0, 3, n)
    other = reports.sample(n, replace=True, random_state=seed + 1).reset_index(drop=True)
    pred = np.where(kind == 0, ref, np.where(kind == 1, other, ref.str.split(". ").str[::-1].str.join(". ")))
    pred[rng.choice(n, max(1, n // 100), replace=False)] = ""
    return pd.DataFrame({"reference": ref, "prediction": pred, "sex": rng.choice(["F", "M"], n),
                         "age_group": rng.choice(["<40", "40-60", "60-80", ">80"], n)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--data-root", default=None)
    args = ap.parse_args()

    import os
    import tempfile

    # an empty cache folder: the time is of scoring, never of reading an earlier run's BERTScore calls back from
    # the text-output cache (radaudit.models.text_memo)
    os.environ["RADAUDIT_CACHE"] = tempfile.mkdtemp(prefix="bench_score_cache_")

    import radaudit

    df = pairs(args.pairs, args.data_root)
    t0 = time.perf_counter()
    report = radaudit.score(df, ["bleu", "bertscore", "atomimed"], by=["sex", "age_group"],
                            n_bootstrap=args.resamples, seed=0)
    seconds = time.perf_counter() - t0
    record("score", seconds=seconds, n=args.pairs, unit="pairs", budget_s=BUDGET_S, resamples=args.resamples,
           rows=len(report.table), gaps=len(report.gaps), metrics=["bleu", "bertscore", "atomimed"],
           group_columns=["sex", "age_group"])
    print(f"radaudit score: {args.pairs} pairs x 3 metrics x 2 group columns, {args.resamples} replicates: "
          f"{seconds:.1f} s ({seconds / BUDGET_S:.2f} x the {BUDGET_S:.0f} s budget)")
    print(report.table[report.table["group_column"] == "all"][["metric", "statistic", "estimate", "low", "high"]]
          .to_string(index=False))


if __name__ == "__main__":
    main()
