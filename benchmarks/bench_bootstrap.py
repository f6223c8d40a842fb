"""Speed of radaudit.stats.bootstrap_ci against scipy.stats.bootstrap on the same iid data.

Printed as ratios against the reference run in the same process (no absolute targets), and written to
``benchmarks/results/bootstrap.json`` (``ratio``: the worse of the percentile and BCa settings):

    .venv/bin/python benchmarks/bench_bootstrap.py [--n 2000] [--resamples 2000] [--repeats 3]

Also times the cluster bootstrap (which scipy cannot do) relative to the iid one, and a
DataFrame statistic of the kind the notebooks use, to show what the cluster/frame path costs.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _results import record  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _timing import best_of  # noqa: E402
from scipy import stats as sps

from radaudit.stats import bootstrap_ci, paired_bootstrap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=a.n)
    units = rng.integers(0, a.n // 4, size=a.n)
    frame = pd.DataFrame({"x": x, "y": rng.integers(0, 2, size=a.n)})

    ratios, seconds, diffs = {}, {}, {}
    for method, sp_method in (("percentile", "percentile"), ("bca", "BCa")):
        ref = best_of(lambda: sps.bootstrap((x,), np.mean, n_resamples=a.resamples, method=sp_method, random_state=0), a.repeats)
        ours = best_of(lambda: bootstrap_ci(x, np.mean, n_bootstrap=a.resamples, method=method, seed=0), a.repeats)
        ratios[method], seconds[method] = ours / ref, ours
        # not the same random draws (scipy's and ours), so the intervals agree only to Monte-Carlo error
        r_s = sps.bootstrap((x,), np.mean, n_resamples=a.resamples, method=sp_method, random_state=0).confidence_interval
        r_o = bootstrap_ci(x, np.mean, n_bootstrap=a.resamples, method=method, seed=0)
        diffs[method] = max(abs(r_s.low - r_o.low), abs(r_s.high - r_o.high))
        print(f"iid mean, {method:<10}  radaudit / scipy time ratio: {ours / ref:6.2f}   (scipy {ref * 1e3:.1f} ms); "
              f"interval endpoints differ by {diffs[method]:.1e} (different draws)")

    iid = best_of(lambda: bootstrap_ci(x, np.mean, n_bootstrap=a.resamples, method="bca", seed=0), a.repeats)
    clus = best_of(lambda: bootstrap_ci(x, np.mean, units=units, n_bootstrap=a.resamples, method="bca", seed=0), a.repeats)
    print(f"cluster ({a.n // 4} units) / iid time ratio, BCa:          {clus / iid:6.2f}")
    stats = {"mean_x": lambda d: float(d["x"].mean()), "share_y": lambda d: float(d["y"].mean())}
    paired = best_of(lambda: paired_bootstrap(frame, stats, n_bootstrap=a.resamples, method="bca", seed=0), a.repeats)
    print(f"paired DataFrame (2 statistics) / iid array time ratio, BCa: {paired / iid:6.2f}")
    worst = max(ratios, key=ratios.get)
    record("bootstrap", seconds=seconds[worst], n=a.n, unit="values", ratio=ratios[worst], worst_setting=worst, ratios=ratios,
           resamples=a.resamples, interval_endpoint_diff=diffs, cluster_over_iid=clus / iid, paired_over_iid=paired / iid)


if __name__ == "__main__":
    main()
