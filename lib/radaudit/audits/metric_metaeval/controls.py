"""The experiment's control: a planted oracle metric that separates harmful from harmless rewrites by construction.

The headline claim (``whole_report_auroc_median``) is a *negative* one: the median metric cannot tell a
harmful rewrite from a harmless one (AUROC CI below 0.6). A negative result is evidence only if the same
pairs, labels and AUROC code *could* have shown separation. The oracle checks that:

- **What it scores.** For each discrimination/robustness pair: 1 when the rewriting rule that made it is
  registered as clinically *insignificant* (:data:`radaudit.perturb.base.RULES`, read by the pair's ``rule``),
  0 when significant, plus Gaussian noise of standard deviation σ. Two independent draws then give
  ``P(1 + σZ₁ > σZ₂) = Φ(1 / (σ√2))``, so σ = 1 / (√2 · Φ⁻¹(A)) sets the oracle's population AUROC to
  ``A`` (:data:`ORACLE_AUROC` = 0.9; σ ≈ 0.552). The noise is a seeded draw (:func:`radaudit.stats.stable_seed`).
- **Why blurred, not perfect.** A noise-free oracle has AUROC 1 on every bootstrap resample: a zero-width
  CI, fixed by construction, which :func:`radaudit.findings.settle` rightly calls descriptive. Blurred to 0.9,
  its CI says whether *this many pairs* let a metric that does separate be seen to separate.
- **How it is read.** Through :func:`~radaudit.audits.metric_metaeval.scores.median_auroc` on the run's own
  score table (the same pivot by ``pair_id``, orientation and significance column as every metric), with the
  bar ``> 0.6`` (:data:`~radaudit.audits.metric_metaeval.findings.SEPARATION_MIN`): the whole CI must lie
  above the region the headline claims the metrics are in.
- **How it fails.** Pair labels that do not match the rules that made the pairs (shuffled, or misaligned with
  the scores), a broken AUROC orientation, or too few pairs for the CI to clear 0.6
  (``tests/audits/test_controls_fail_metric_metaeval.py``). Pairs of the LLM engine have no registered rule;
  the oracle then reads the pair's own significance label and tests the power and the AUROC code only (the
  finding's note says how many pairs were read each way).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from radaudit.audits.metric_metaeval.scores import median_auroc
from radaudit.errors import DataFormatError, ParamsError
from radaudit.perturb.base import RULES
from radaudit.stats import stable_seed

__all__ = ["ORACLE", "ORACLE_AUROC", "oracle_auroc", "oracle_noise_sd", "oracle_scores"]

#: The oracle's metric name in its score table.
ORACLE = "oracle"
#: The oracle's population AUROC (its noise is set to give this).
ORACLE_AUROC = 0.9


def oracle_noise_sd(target: float = ORACLE_AUROC) -> float:
    """σ = 1 / (√2 · Φ⁻¹(target)): the noise that gives a 0/1 oracle the population AUROC ``target`` (0.5 < target < 1)."""
    if not 0.5 < target < 1:
        raise ParamsError(f"the oracle's target AUROC must lie in (0.5, 1), got {target!r}")
    return 1.0 / (math.sqrt(2.0) * float(sps.norm.ppf(target)))


def oracle_scores(scores: pd.DataFrame, *, target: float = ORACLE_AUROC, seed: int = 0) -> pd.DataFrame:
    """The oracle's score table, in :func:`~radaudit.audits.metric_metaeval.study.score_pairs`' shape (one row
    per discrimination/robustness pair of ``scores``, metric :data:`ORACLE`; module docstring). The pair's
    ``significance`` column is kept as it is in ``scores`` (what the AUROC reads); the score comes from the rule.
    ``attrs["n_from_rules"]`` / ``attrs["n_from_labels"]``: pairs whose truth came from the rule registry / from
    the pair's own label (no registered rule)."""
    need = {"pair_id", "significance", "rule"}
    if not need <= set(scores.columns):
        raise DataFormatError(f"scores needs columns {sorted(need)} (from score_pairs).")
    df = scores[scores["group"].isna()] if "group" in scores.columns else scores
    pairs = df.drop_duplicates("pair_id").sort_values("pair_id", kind="stable").reset_index(drop=True)
    if pairs.empty:
        raise DataFormatError("no discrimination/robustness pairs for the oracle")
    from_rule = pairs["rule"].map(lambda r: RULES[r].significance if isinstance(r, str) and r in RULES else None)
    truth = from_rule.where(from_rule.notna(), pairs["significance"])
    z = np.random.default_rng(stable_seed(seed, "oracle", target)).standard_normal(len(pairs))
    out = pd.DataFrame({"pair_id": pairs["pair_id"], "significance": pairs["significance"], "group": pd.NA,
                        "metric": ORACLE, "score": (truth == "insignificant").astype(float) + oracle_noise_sd(target) * z,
                        "higher_is_better": True})
    out.attrs.update(n_from_rules=int(from_rule.notna().sum()), n_from_labels=int(from_rule.isna().sum()))
    return out


def oracle_auroc(scores: pd.DataFrame, *, target: float = ORACLE_AUROC, n_bootstrap: int = 1000,
                 confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """:func:`~radaudit.audits.metric_metaeval.scores.median_auroc` of :func:`oracle_scores` (one metric, so
    the median is its AUROC, with the same BCa CI over pairs as the headline), plus ``target``,
    ``n_from_rules`` and ``n_from_labels``."""
    o = oracle_scores(scores, target=target, seed=seed)
    res = median_auroc(o, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    return {**res, "target": target, "n_from_rules": o.attrs["n_from_rules"], "n_from_labels": o.attrs["n_from_labels"]}
