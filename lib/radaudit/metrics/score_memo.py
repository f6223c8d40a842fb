"""Per-pair metric scores kept on disk: a rerun on the same texts reads them back instead of scoring again.

A meta-evaluation scores every pair with every metric (paper 002's Tables 2-4), and reruns of its notebook
(a figure redrawn, a bootstrap with another seed) score the same texts again: tens of seconds of METEOR,
the CheXpert rules and AtomiMed per rerun. :func:`memo_per_pair` keeps one metric's per-pair scores
for one batch and returns the same bytes when the same batch comes again.

**What is memoised.** Only metrics whose scores are a function of the texts, the options and the code:
the ``lexical`` kind, and the ``clinical`` kind on its rule backend (the CheXpert labeler, AtomiMed).
An embedding or learned metric (weights that live outside the code), an LLM backend, or an option that
is not plain JSON (a ``generate_fn``) is computed every time: its text-encoder cache
(:mod:`radaudit.models.text_memo`) or generation cache covers what can be covered.

**Key**: the metric's registry name, its options merged with the registry's defaults, the references and
candidates by sha256 in order (:func:`radaudit.models.text_memo.texts_digest`), the versions of the
libraries that compute the scores, and the sha256 of **every source file of the radaudit package**
(:func:`package_digest`). The last is deliberately coarse: a metric's score depends on the text
toolkit, the labeler's phrase lists, the atomic-fact rules..., and a key that named too few modules would
serve the scores of code that no longer exists; any edit to the package recomputes once.

**Value**: the per-pair float64 array, raw bytes (:func:`radaudit.models.cache.array_value`, bit-exact).
**Store**: the :class:`~radaudit.models.cache.ContentCache` named ``metric_scores``, one entry per call.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from radaudit.models.cache import ContentCache, array_from_value, array_value, memo
from radaudit.models.text_memo import library_versions, texts_digest

__all__ = ["SCORE_CACHE", "memo_per_pair", "memoisable", "package_digest", "per_pair_scores", "score_key_parts"]

#: The :class:`ContentCache` name of per-pair metric scores (``<cache>/metric_scores.sqlite``).
SCORE_CACHE = "metric_scores"

#: Libraries whose version can change a lexical or rule-based score.
_LIBRARIES = ("numpy", "sacrebleu", "rouge-score", "nltk", "scikit-learn", "pandas")


@lru_cache(maxsize=None)
def package_digest(root: str | None = None) -> str:
    """sha256 over every ``*.py`` file of the radaudit package (relative path and bytes, in sorted order); once
    per process."""
    base = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(base.rglob("*.py")):
        h.update(path.relative_to(base).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def memoisable(kind: str, options: Mapping[str, Any]) -> bool:
    """Whether a metric of ``kind`` built with ``options`` (the registry's defaults merged in) scores by code alone:
    ``lexical``, or ``clinical`` on the rule backend, with options that are plain JSON."""
    if kind not in ("lexical", "clinical"):
        return False
    if kind == "clinical" and str(options.get("backend", "rule")) != "rule":
        return False
    try:
        json.dumps(dict(options), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def score_key_parts(name: str, options: Mapping[str, Any], references: Sequence[str],
                    candidates: Sequence[str]) -> dict[str, Any]:
    """The key parts of one metric call (module docstring)."""
    return {"kind": "metric_scores", "metric": name, "options": dict(options),
            "references": {"sha256": texts_digest(list(references)), "n": len(references)},
            "candidates": {"sha256": texts_digest(list(candidates)), "n": len(candidates)},
            "libraries": library_versions(*_LIBRARIES), "code": package_digest()}


def memo_per_pair(cache: ContentCache | str | os.PathLike | bool | None, parts: Mapping[str, Any] | None,
                  compute: Callable[[], np.ndarray]) -> tuple[np.ndarray, bool]:
    """``(per_pair, hit)``: the stored float64 scores of the call ``parts`` when the cache holds them, else
    ``compute()``'s, stored before they are returned (:func:`radaudit.models.cache.memo`). ``parts=None`` or no
    cache: computed, not stored. A stored value that does not read back, or has another length than the call's
    pairs, is recomputed and overwritten."""
    n = int(parts["references"]["n"]) if parts is not None else -1

    def decode(found: Any) -> np.ndarray | None:
        vals = array_from_value(found)
        return vals.astype(np.float64, copy=False) if vals is not None and vals.shape == (n,) else None

    return memo(cache, SCORE_CACHE, parts, lambda: np.asarray(compute(), dtype=np.float64),
                encode=lambda vals: array_value(vals, "<f8"), decode=decode,
                what=None if parts is None else f"{parts.get('metric')} per-pair scores")


def per_pair_scores(name: str, references: Sequence[str], candidates: Sequence[str],
                    options: Mapping[str, Any] | None = None, *,
                    cache: ContentCache | str | os.PathLike | bool | None = None) -> tuple[np.ndarray, bool]:
    """``(per_pair, hit)``: the registered metric ``name`` built with ``options`` on the pairs, its float64 per-pair
    scores read from ``cache`` when it holds them and the metric is :func:`memoisable`, else computed (and stored
    when memoisable). Errors of building or running the metric propagate (the callers skip and report it)."""
    from radaudit.metrics.base import METRICS, build_metric  # lazy: base's registry imports the metric modules

    own = dict(options or {})
    spec = METRICS.lookup(name)
    merged = {**spec.options, **own}
    parts = score_key_parts(name, merged, references, candidates) if cache and memoisable(spec.kind, merged) else None
    return memo_per_pair(cache, parts, lambda: build_metric(name, **own).compute(references, candidates).per_sample)
