"""Per-pair metric scores kept on disk (radaudit.metrics.score_memo): only metrics scored by code alone are kept,
a rerun reads back the same bytes without scoring, and any other call (texts, options, code) scores again."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radaudit.metrics.base import build_metric
from radaudit.metrics.score_memo import SCORE_CACHE, memo_per_pair, memoisable, package_digest, score_key_parts
from radaudit.models.cache import ContentCache, array_value, content_key

REFS = ["No pleural effusion.", "Mild cardiomegaly. Small left effusion."]
CANDS = ["Small pleural effusion.", "Mild cardiomegaly."]


def test_only_metrics_scored_by_code_alone_are_kept():
    assert memoisable("lexical", {"n": 4})
    assert memoisable("clinical", {"backend": "rule"}) and memoisable("clinical", {})
    assert not memoisable("clinical", {"backend": "llm"})
    assert not memoisable("embedding", {}) and not memoisable("learned", {})
    assert not memoisable("lexical", {"generate_fn": print})  # not plain JSON: no stable key


def test_a_rerun_reads_the_same_bytes_and_other_calls_score_again(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return build_metric("bleu4").compute(REFS, CANDS).per_sample

    parts = score_key_parts("bleu4", {"n": 4}, REFS, CANDS)
    first, hit1 = memo_per_pair(tmp_path, parts, compute)
    second, hit2 = memo_per_pair(tmp_path, parts, compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert first.dtype == np.float64 and first.tobytes() == second.tobytes()
    memo_per_pair(tmp_path, score_key_parts("bleu4", {"n": 4}, REFS, CANDS[::-1]), compute)  # other candidates
    memo_per_pair(tmp_path, score_key_parts("bleu4", {"n": 3}, REFS, CANDS), compute)  # other options
    other_code = {**parts, "code": "0" * 64}
    memo_per_pair(tmp_path, other_code, compute)  # another version of the package
    assert len(calls) == 4
    memo_per_pair(tmp_path, None, compute)
    memo_per_pair(None, parts, compute)
    assert len(calls) == 6


def test_a_stored_value_of_the_wrong_length_is_scored_again(tmp_path):
    parts = score_key_parts("bleu4", {"n": 4}, REFS, CANDS)
    with ContentCache(tmp_path, name=SCORE_CACHE) as store:
        store.put(content_key(parts), array_value(np.zeros(5), "<f8"), parts)
    vals, hit = memo_per_pair(tmp_path, parts, lambda: np.array([0.25, 0.5]))
    assert not hit and vals.tolist() == [0.25, 0.5]
    vals, hit = memo_per_pair(tmp_path, parts, lambda: pytest.fail("scored again"))
    assert hit and vals.tolist() == [0.25, 0.5]


def test_package_digest_changes_with_any_source_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    before = package_digest(str(tmp_path))
    package_digest.cache_clear()
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert package_digest(str(tmp_path)) != before
    package_digest.cache_clear()
    assert len(package_digest()) == 64


def test_metaeval_scores_from_the_cache_are_the_same_table(tmp_path, monkeypatch):
    """score_pairs with cache=: the second run serves the lexical and rule-based metrics from disk (their factories
    are not called) and writes the same table, byte for byte."""
    import radaudit.audits.metric_metaeval.study as study

    pairs = pd.DataFrame({"pair_id": ["p0", "p1"], "study_id": ["s0", "s1"], "source": "test", "aspect": "finding",
                          "error_type": "false", "significance": "significant", "rule": "r", "group": 1,
                          "gt": REFS, "rewritten": CANDS})
    metrics = ["bleu4", "rougeL", "chexpert_f1_micro_top5", "atomimed"]
    first, _ = study.score_pairs(pairs, metrics, cache=tmp_path)

    def no_scoring(name, **options):
        raise AssertionError(f"{name} was scored again")

    import radaudit.metrics.base as base

    monkeypatch.setattr(base, "build_metric", no_scoring)
    second, _ = study.score_pairs(pairs, metrics, cache=tmp_path)
    assert first.to_csv(index=False) == second.to_csv(index=False)
    with pytest.raises(AssertionError, match="scored again"):
        study.score_pairs(pairs, metrics)  # no cache: scored
