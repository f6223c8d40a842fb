"""The built-in metrics. Each family module declares its entries in a module-level ``SPECS`` list
and keeps its heavy imports (sacrebleu, torch, transformers, optional packages) inside the
functions that build or run a metric, so registering every metric imports nothing heavy.
"""

from __future__ import annotations

import importlib

from radaudit.metrics.base import register_metric

FAMILIES = ("lexical", "embedding", "clinical", "adapters", "factual")


def _register_families() -> None:
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"radaudit.metrics.{family}")
        except ModuleNotFoundError as err:
            if err.name == f"radaudit.metrics.{family}":  # family not written yet
                continue
            raise
        for spec in module.SPECS:
            register_metric(spec)


_register_families()
