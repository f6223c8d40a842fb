"""Speed of CAD + WAE (radaudit.metrics.association) on 100,000 reports with 1,000 bootstrap and 1,000
permutation replicates, and how the time grows with the corpus.

Budget (issue 25): one full audit of 100,000 reports in <= 10 s on 2 CPU cores. The figure (best of
``--repeats``) is written to ``benchmarks/results/association.json`` with its ratio to the budget, and the
scaling curve (one audit per size in ``--sizes``, log-log, fitted slope) to ``association_scaling.png``;
nothing is asserted:

    .venv/bin/python benchmarks/bench_association.py [--reports 100000] [--sizes 1000,3000,10000,30000]
        [--resamples 1000] [--permutations 1000] [--ci-method shifted] [--repeats 3] [--data-root ../shared/data]

The corpus is synthetic but built from real report sentences: each reference is 2-6 sentences drawn
from the IU X-ray findings/impressions (``iu-xray-openi/indiana_reports.csv`` under the data root;
a small built-in sentence list when the data root is absent), with a few planted sex-associated
sentences; each prediction is either a fixed normal template (template collapse) or the reference
with sentences dropped and replaced (and, for 5% of male patients, a planted pneumoperitoneum
sentence: a new bias). Timed: tokenisation and counting, CAD (per-word table, BH,
categories) and WAE with its bootstrap CI (BCa by default, which adds a 10,000-report jackknife) and
the label-permutation test — i.e. one full :func:`association_audit` call.
"""

from __future__ import annotations

import argparse
import os
import re
import time

import numpy as np
import pandas as pd
from _results import record, scaling_plot  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

from radaudit.metrics.association import association_audit

BUDGET_S = 10.0

FALLBACK = [
    "The heart size is normal.", "The lungs are clear.", "No pleural effusion or pneumothorax.",
    "Mild cardiomegaly.", "Small left pleural effusion.", "Right lower lobe consolidation.",
    "Degenerative changes of the thoracic spine.", "Calcified granuloma in the right upper lobe.",
    "Stable mediastinal contours.", "Bibasilar atelectasis.", "Hyperinflated lungs consistent with COPD.",
    "Postoperative changes from median sternotomy.", "Interstitial edema.", "No acute cardiopulmonary process.",
]


def sentences(data_root: str | None) -> list[str]:
    root = data_root or os.environ.get("RADAUDIT_DATA") or os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    path = os.path.join(root, "iu-xray-openi", "indiana_reports.csv")
    if not os.path.exists(path):
        return FALLBACK
    df = pd.read_csv(path)
    text = " ".join(df["findings"].fillna("").tolist() + df["impression"].fillna("").tolist())
    sents = [s.strip() + "." for s in re.split(r"(?<=[a-z])\.\s+", text) if len(s.split()) >= 3]
    return sorted(set(sents))


def corpus(n: int, seed: int, pool: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(np.array(["F", "M"]), size=n)
    planted = {"F": ["Status post left mastectomy.", "Breast implants noted."],
               "M": ["Pacemaker leads in the right ventricle.", "AICD in place."]}
    template = "The heart size is normal. The lungs are clear. No pneumothorax or pleural effusion."
    refs, preds = [], []
    for i in range(n):
        k = int(rng.integers(2, 7))
        sents = [pool[j] for j in rng.integers(0, len(pool), size=k)]
        if rng.random() < 0.08:
            sents.append(planted[sex[i]][int(rng.integers(0, 2))])
        refs.append(" ".join(sents))
        if rng.random() < 0.4:
            preds.append(template)  # template collapse
        else:
            keep = [s for s in sents if rng.random() < 0.7]
            keep += [pool[j] for j in rng.integers(0, len(pool), size=int(rng.integers(0, 3)))]
            if sex[i] == "M" and rng.random() < 0.05:
                keep.append("Pneumoperitoneum.")  # planted new bias: only in predictions for M
            preds.append(" ".join(keep))
    return pd.DataFrame({"reference": refs, "prediction": preds, "group": sex})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=100_000)
    ap.add_argument("--sizes", default="1000,3000,10000,30000",
                    help="smaller corpora timed once each for the scaling curve ('' for none)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--permutations", type=int, default=1000)
    ap.add_argument("--ci-method", default="shifted", choices=["shifted", "bca", "percentile", "basic"],
                    help="the interval method timed (shifted is association_audit's default: it holds its estimate; bca adds a jackknife)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-root", default=None)
    a = ap.parse_args()
    pool = sentences(a.data_root)

    def audit(df: pd.DataFrame):
        return association_audit(df, n_bootstrap=a.resamples, n_permutations=a.permutations, ci_method=a.ci_method,
                                 bootstrap_seed=0, permutation_seed=1)

    def timed(n: int, repeats: int) -> tuple[float, object]:
        df = corpus(n, 0, pool)
        times = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            res = audit(df)
            times.append(time.perf_counter() - t0)
        return min(times), res

    sizes = sorted({int(x) for x in a.sizes.split(",") if x.strip()} - {a.reports})
    curve = [(n, timed(n, 1)[0]) for n in sizes]
    best, res = timed(a.reports, a.repeats)
    curve = sorted(curve + [(a.reports, best)])
    print(f"corpus: {a.reports} reports from {len(pool)} real sentences; vocabulary V = {res.params['V']}")
    print(f"categories: {dict(zip(res.categories['category'], res.categories['n_words']))}")
    w = res.wae.set_index("metric")
    for m in ("WAE_pred", "WAE_ref", "delta_WAE_pred", "delta_WAE_ref"):
        r = w.loc[m]
        print(f"  {m:<15} {r.estimate:8.3f}  [{r.low:.3f}, {r.high:.3f}]  perm p = {r.perm_pvalue:.4f}")
    print(f"CAD + WAE ({a.resamples} bootstrap replicates, {a.ci_method}, {a.permutations} permutations): "
          f"{best:.2f} s wall (best of {a.repeats}); ratio to the {BUDGET_S:.0f} s budget: {best / BUDGET_S:.2f}")
    slopes = {}
    if len(curve) >= 2:
        slopes = scaling_plot("association", {"CAD + WAE": ([n for n, _ in curve], [t for _, t in curve])},
                              xlabel="reports", title=f"CAD + WAE, {a.resamples} bootstrap + {a.permutations} "
                              "permutation replicates")
        for n, t in curve:
            print(f"  {n:>7} reports: {t:6.2f} s")
        print(f"fitted log-log slope: {slopes['CAD + WAE']:.2f}")
    record("association", seconds=best, n=a.reports, unit="reports", budget_s=BUDGET_S, repeats=a.repeats, resamples=a.resamples,
           permutations=a.permutations, ci_method=a.ci_method, vocabulary=int(res.params["V"]),
           scaling=[[n, t] for n, t in curve], slopes=slopes)


if __name__ == "__main__":
    main()
