"""Rankings of generators across metrics (CheXGenBench Appendix C, Tables 8 and 9).

Table 8 ranks each generator on every fidelity metric (1 = best; lower is better for FID/KID,
higher for alignment, precision, recall, density, coverage), averages the ranks ("Average Rank",
e.g. SD V1-4: (9+9+9+9+4+8+5+7+8)/9 = 7.55) and ranks that average ("Normalized Rank"). Table 9
does the same for downstream AUROC per pathology, with tied AUROCs sharing the mean of their ranks
(5.5, 2.5, ...). Appendix C then correlates the fidelity and the utility rank ("The Pearson
correlation between fidelity and classification rank is 0.70"); a Pearson correlation of ranks is
Spearman's ρ when the ranks have no ties, so :func:`rank_correlation` reports Spearman's ρ (scipy,
ties averaged) and, for comparison with the paper, Pearson's r of the two rank vectors.

Choices: ties take the mean rank (``ties="average"``, Table 9's convention; ``"min"`` gives
competition ranking). A generator missing a metric (NaN) gets no rank for it, its average is over
the metrics it has, and ``n_metrics`` says how many.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import average_ranks, pearson_test, spearman_test

__all__ = ["HIGHER_IS_BETTER", "rank_correlation", "rank_table"]

HIGHER_IS_BETTER: dict[str, bool] = {
    "fid": False, "kid": False, "kid_std": False, "alignment": True, "precision": True, "recall": True,
    "density": True, "coverage": True, "auroc": True, "auc": True,
    "avg_reid": False, "max_reid": False, "count_reid_above_delta": False,
    "avg_latent_distance": True, "avg_pixel_distance": True,
}
"""Default direction of the metrics used in Tables 1–4 (matched on the lower-cased column name or its
prefix before a space/parenthesis/underscore-encoder suffix, e.g. ``"FID (RadDino)"`` → ``fid``)."""

Ties = Literal["average", "min", "max", "dense", "first"]


def _direction(col: str, higher_is_better: Mapping[str, bool] | bool | None) -> bool:
    if isinstance(higher_is_better, bool):
        return higher_is_better
    if higher_is_better is not None and col in higher_is_better:
        return bool(higher_is_better[col])
    key = str(col).lower().strip()
    for cand in (key, key.split(" ")[0], key.split("(")[0].strip(), key.split("_")[0], key.split("/")[0]):
        if cand in HIGHER_IS_BETTER:
            return HIGHER_IS_BETTER[cand]
    raise ParamsError(f"No direction known for metric {col!r}: pass higher_is_better={{{col!r}: True/False}}.")


def rank_table(scores: pd.DataFrame, higher_is_better: Mapping[str, bool] | bool | None = None,
               ties: Ties = "average") -> pd.DataFrame:
    """Per-metric ranks (1 = best), their average and the rank of the average (Table 8 layout).

    ``scores``: one row per generator (the index names them), one column per metric.
    ``higher_is_better``: per column (default: :data:`HIGHER_IS_BETTER` by name), or one bool for all.
    Returns the rank columns (same names) plus ``average_rank``, ``n_metrics`` and ``overall_rank``
    (the rank of ``average_rank``, lower = better, same ``ties`` rule).
    """
    if ties not in ("average", "min", "max", "dense", "first"):
        raise ParamsError(f"ties={ties!r} is not allowed: use 'average', 'min', 'max', 'dense' or 'first'.")
    if not isinstance(scores, pd.DataFrame) or scores.shape[1] == 0 or len(scores) == 0:
        raise DataFormatError("scores must be a non-empty DataFrame: one row per generator, one column per metric.")
    ranks = pd.DataFrame(index=scores.index)
    for col in scores.columns:
        vals = pd.to_numeric(scores[col], errors="coerce")
        ranks[col] = vals.rank(ascending=not _direction(col, higher_is_better), method=ties, na_option="keep")
    out = ranks.copy()
    out["average_rank"] = ranks.mean(axis=1, skipna=True)
    out["n_metrics"] = ranks.notna().sum(axis=1)
    out["overall_rank"] = out["average_rank"].rank(ascending=True, method=ties, na_option="keep")
    return out


def rank_correlation(a: Any, b: Any) -> dict[str, float]:
    """Spearman's ρ (and Pearson's r of the ranks) between two per-generator rankings or scores.

    ``a``, ``b``: pandas Series indexed by generator (aligned on the index; generators missing from
    either are dropped) or equal-length sequences. Returns ``spearman``, ``spearman_p``, ``pearson_of_ranks``,
    ``pearson_p`` and ``n``. With fewer than 3 generators, or a constant ranking, the values are NaN.
    ρ and its p-value: :func:`radaudit.stats.spearman_test`; r and its p-value: :func:`radaudit.stats.pearson_test`
    of the ranks (:func:`radaudit.stats.average_ranks`).
    """
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").apply(pd.to_numeric, errors="coerce").dropna()
        x, y = both["a"].to_numpy(float), both["b"].to_numpy(float)
    else:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if x.shape != y.shape or x.ndim != 1:
            raise DataFormatError(f"Rankings must be 1-D and of equal length; got {x.shape} and {y.shape}.")
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = x[keep], y[keep]
    n = len(x)
    nan = float("nan")
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"spearman": nan, "spearman_p": nan, "pearson_of_ranks": nan, "pearson_p": nan, "n": n}
    rho, rho_p = spearman_test(x, y)
    r, r_p = pearson_test(average_ranks(x), average_ranks(y))
    return {"spearman": rho, "spearman_p": rho_p, "pearson_of_ranks": r, "pearson_p": r_p, "n": n}
