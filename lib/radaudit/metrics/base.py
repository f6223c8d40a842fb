"""The report-metric registry: name -> lazily built metric, one input convention, one output schema.

Every metric compares batches of (reference, candidate) report pairs and returns a
:class:`MetricResult`: an aggregate ``score``, one ``per_sample`` value per pair, and optional
``details`` (sub-scores such as precision/recall, per-sample arrays or scalars). Metrics are
registered by name with a :class:`MetricSpec` whose ``factory`` ("module:callable") is imported
only when the metric is built, so selecting BLEU never imports torch, and an optional adapter
(RadGraph, GREEN, ...) is imported only when it is selected.

>>> from radaudit.metrics import build_metric
>>> bleu = build_metric("bleu4")                         # doctest: +SKIP
>>> res = bleu.compute(["no effusion."], ["no pleural effusion."])   # doctest: +SKIP
>>> res.score, res.per_sample                          # doctest: +SKIP

Input convention (:func:`check_pairs`)
--------------------------------------
- ``references`` and ``candidates`` are equal-length sequences of ``str``.
- ``None`` (or NaN) is an error that names the offending indices: a missing report is a data
  problem to fix upstream (use ``""`` for a report that is genuinely empty).
- Empty strings are allowed. Each metric documents what it returns for them; a pair on which the
  metric is undefined gets ``NaN`` in ``per_sample`` and is counted in ``n_undefined``; the
  aggregate is taken over the defined pairs. Nothing is dropped silently.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from radaudit.errors import RadauditError
from radaudit.registry import Registry

Kind = Literal["lexical", "embedding", "clinical", "learned"]


class MetricInputError(RadauditError, ValueError):
    """The (reference, candidate) batch is malformed: mismatched lengths, ``None``, non-strings."""


class MetricUnavailableError(RadauditError, ImportError):
    """An optional metric cannot run here: a package is missing or its weights need hub access."""


@dataclass(frozen=True)
class MetricResult:
    """What every metric returns.

    ``score``: the aggregate (``aggregate`` says how it relates to ``per_sample``: ``"mean"`` of
    the defined per-sample values, or ``"corpus"`` for corpus-level statistics such as sacreBLEU's).
    ``per_sample``: float array, one value per pair, ``NaN`` where undefined.
    ``details``: sub-scores; arrays of length n are per-sample, anything else is a batch-level value.
    """

    name: str
    score: float
    per_sample: np.ndarray
    aggregate: Literal["mean", "corpus"] = "mean"
    details: dict[str, Any] = field(default_factory=dict)
    n_undefined: int = 0
    #: For a corpus statistic: per-pair sufficient statistics (``n × k``: BLEU's n-gram matches and totals,
    #: F1's TP/FP/FN) and the function that turns their column sums into the score, so the statistic of any
    #: subset of pairs (a group, a bootstrap resample) is ``from_stats(corpus_stats[idx].sum(0))`` — exact, and
    #: without running the metric again. ``None`` where the metric does not provide them.
    corpus_stats: np.ndarray | None = field(default=None, repr=False, compare=False)
    from_stats: Callable[[np.ndarray], float] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_sample", np.asarray(self.per_sample, dtype=float))

    def corpus_score(self, idx: Any = None) -> float:
        """The corpus statistic of the pairs ``idx`` (all by default) from :attr:`corpus_stats`; for
        ``aggregate="mean"``, the mean of their defined per-pair values."""
        if self.aggregate == "mean":
            vals = self.per_sample if idx is None else self.per_sample[idx]
            vals = vals[~np.isnan(vals)]
            return float(vals.mean()) if vals.size else math.nan
        if self.corpus_stats is None or self.from_stats is None:
            raise ValueError(f"{self.name}: this corpus metric gives no per-pair statistics to recompute it on a subset")
        stats = self.corpus_stats if idx is None else self.corpus_stats[idx]
        return float(self.from_stats(stats.sum(0)))

    def __len__(self) -> int:
        return len(self.per_sample)

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: ``pair`` (index), ``metric``, ``score`` and every per-sample detail."""
        n = len(self.per_sample)
        cols: dict[str, Any] = {"pair": np.arange(n), "metric": self.name, "score": self.per_sample}
        for k, v in self.details.items():
            arr = np.asarray(v) if isinstance(v, (list, tuple, np.ndarray, pd.Series)) else None
            if arr is not None and arr.ndim == 1 and len(arr) == n:
                cols[k] = arr
        return pd.DataFrame(cols)


def mean_result(name: str, per_sample: Sequence[float], details: dict[str, Any] | None = None) -> MetricResult:
    """A :class:`MetricResult` whose score is the mean of the defined (non-NaN) per-sample values."""
    arr = np.asarray(per_sample, dtype=float)
    defined = ~np.isnan(arr)
    score = float(arr[defined].mean()) if defined.any() else math.nan
    return MetricResult(name=name, score=score, per_sample=arr, aggregate="mean", details=details or {},
                        n_undefined=int((~defined).sum()))


def check_pairs(references: Sequence[str], candidates: Sequence[str]) -> tuple[list[str], list[str]]:
    """Validate a batch (see the module docstring) and return it as two lists of ``str``."""
    if isinstance(references, str) or isinstance(candidates, str):
        raise MetricInputError("references and candidates must be sequences of strings, not a single string "
                               "(wrap one report in a list).")
    refs, cands = list(references), list(candidates)
    if len(refs) != len(cands):
        raise MetricInputError(f"{len(refs)} references but {len(cands)} candidates: pass one candidate per reference.")
    check_texts(refs, "references")
    check_texts(cands, "candidates")
    return refs, cands


def check_texts(texts: list, label: str) -> list[str]:
    """Every item of ``texts`` must be a ``str``: ``None``/NaN and non-strings raise
    :class:`MetricInputError` naming their indices (``label`` names the sequence in the message)."""
    bad = [i for i, x in enumerate(texts) if x is None or (isinstance(x, float) and math.isnan(x))]
    if bad:
        raise MetricInputError(
            f"{label} {bad[:10]}{' ...' if len(bad) > 10 else ''} are missing (None/NaN). Drop those "
            "upstream and report how many, or use '' for a report that is genuinely empty."
        )
    wrong = [i for i, x in enumerate(texts) if not isinstance(x, str)]
    if wrong:
        raise MetricInputError(f"{label} {wrong[:10]} are not strings (got {type(texts[wrong[0]]).__name__}).")
    return texts


@runtime_checkable
class Metric(Protocol):
    """A built metric: ``compute(references, candidates) -> MetricResult``."""

    name: str

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult: ...


@dataclass(frozen=True)
class MetricSpec:
    """A registry entry. ``factory(**options)`` returns a :class:`Metric`."""

    name: str
    factory: str  # "module:callable"
    kind: Kind
    description: str
    higher_is_better: bool = True
    requires: tuple[str, ...] = ()  # importable modules it needs beyond the base install
    extra: str | None = None  # the pip extra that provides them
    options: dict[str, Any] = field(default_factory=dict)  # default options passed to the factory
    label: str = ""  # display name in tables and figures ("" = the registry name)

    def build(self, **options: Any) -> Metric:
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            how = f"pip install 'radaudit[{self.extra}]'" if self.extra else f"pip install {' '.join(missing)}"
            raise MetricUnavailableError(f"Metric {self.name!r} needs {', '.join(missing)}, which is not installed: {how}.")
        module, func = self.factory.split(":")
        factory: Callable[..., Metric] = getattr(importlib.import_module(module), func)
        return factory(**{**self.options, **options})


METRICS: Registry[MetricSpec] = Registry("metric")
register_metric = METRICS.register


def metric_label(name: str, overrides: Mapping[str, str] | None = None) -> str:
    """The display name of a metric in tables and figures: ``overrides[name]`` if given (an experiment's
    own wording, or a sub-score that is not a registry entry), else the registry's ``label``, else ``name``."""
    if overrides and name in overrides:
        return overrides[name]
    spec = METRICS.get(name)
    return (spec.label or spec.name) if spec is not None else name


def build_metric(name: str, **options: Any) -> Metric:
    """Build the registered metric ``name`` with ``options`` (see its factory's docstring)."""
    return METRICS.lookup(name).build(**options)


def list_metrics() -> pd.DataFrame:
    """Name, kind, description, extra and whether it can be built here, one row per metric."""
    rows = []
    for s in METRICS.values():
        available = all(importlib.util.find_spec(m) is not None for m in s.requires)
        rows.append({"name": s.name, "kind": s.kind, "higher_is_better": s.higher_is_better, "extra": s.extra,
                     "available": available, "description": s.description})
    return pd.DataFrame(rows)


def score_pairs(names: Sequence[str], references: Sequence[str], candidates: Sequence[str],
                **options_by_metric: dict) -> pd.DataFrame:
    """Run several metrics on one batch; a tidy per-pair table (``pair``, ``metric``, ``score``, details).
    (Named so as not to shadow Hugging Face's ``evaluate`` package in user code; groups and CIs:
    :func:`radaudit.scoring.score`.)

    ``options_by_metric`` maps a metric name to its build options, e.g. ``bertscore={"idf": True}``.
    """
    refs, cands = check_pairs(references, candidates)
    frames = [build_metric(n, **options_by_metric.get(n, {})).compute(refs, cands).to_frame() for n in names]
    return pd.concat(frames, ignore_index=True)
