"""The metrics' scores as this experiment shows them: AtomiMed's and the baselines' display names, and which metrics
score every candidate alike (shown once in the figures).

The scores themselves are made by :func:`radaudit.audits.atomic_facts.study.score_study` (the scoring step)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)


METRIC_LABELS: dict[str, str] = {
    "atomimed": "AtomiMed F1 (paper)", "atomimed_disease": "AtomiMed disease F1",
    "atomimed_attribute": "AtomiMed attribute F1", "cider": "CIDEr",
}
"""Display names of AtomiMed's sub-scores and those that differ from the registry's labels
(:func:`radaudit.metrics.base.metric_label`)."""


# ----------------------------------------------------------------------------------------------
# figures


def distinct_metrics(scores: pd.DataFrame, metrics: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Metrics whose per-candidate scores differ from every earlier one's, and ``{duplicate: the
    metric it equals}`` (e.g. CheXpert-label F1 micro and macro are identical on single reports):
    figures show each distinct score once; tables keep all."""
    kept: list[str] = []
    dup: dict[str, str] = {}
    for m in metrics:
        v = scores[m].to_numpy(dtype=float)
        same = next((k for k in kept if np.allclose(scores[k].to_numpy(dtype=float), v, equal_nan=True)), None)
        if same is None:
            kept.append(m)
        else:
            dup[m] = same
    return kept, dup
