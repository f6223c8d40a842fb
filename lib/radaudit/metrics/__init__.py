"""Report metrics: one registry (:mod:`radaudit.metrics.base`), one output schema.

Importing this package registers the metrics (:mod:`radaudit.metrics.registry`) but builds none:
each is constructed, and its dependencies imported, only when selected.
"""

from radaudit.metrics import registry as _registry  # noqa: F401  (registers the built-in metrics)
from radaudit.metrics.base import (
    METRICS,
    Metric,
    MetricInputError,
    MetricResult,
    MetricSpec,
    MetricUnavailableError,
    build_metric,
    check_pairs,
    list_metrics,
    mean_result,
    register_metric,
    score_pairs,
)

__all__ = [
    "METRICS", "Metric", "MetricInputError", "MetricResult", "MetricSpec", "MetricUnavailableError",
    "build_metric", "check_pairs", "list_metrics", "mean_result", "register_metric", "score_pairs",
]
