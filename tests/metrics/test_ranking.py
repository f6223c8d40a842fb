"""Ranking suites (radaudit.metrics.ranking): order parsing, verdicts, the loader's checks, the shipped
dev suite, and an evaluation with a fake metric whose scores give a known summary."""

from __future__ import annotations

import json
import math
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radaudit.metrics.base import MetricResult
from radaudit.metrics.ranking import (
    CATEGORIES,
    RankingCase,
    RankingCaseError,
    accepts_context,
    case_verdict,
    evaluate_metric_on_cases,
    load_ranking_cases,
    pair_constraints,
    parse_order,
    summarize,
)

DEV = Path(__file__).resolve().parents[1] / "fixtures" / "ranking_cases.yaml"


# ------------------------------------------------------------------ parse_order / pair_constraints

@pytest.mark.parametrize("order,tiers", [
    ("a > b", [["a"], ["b"]]),
    ("a = b > c", [["a", "b"], ["c"]]),
    ("c>a=b>d", [["c"], ["a", "b"], ["d"]]),
    ("  b = a  ", [["b", "a"]]),
])
def test_parse_order(order, tiers):
    assert parse_order(order) == tiers


@pytest.mark.parametrize("order,cands,msg", [
    ("a > b", "abc", r"does not place candidate\(s\) c"),
    ("a > b > a", "ab", r"names candidate 'a' more than once"),
    ("a < b", "ab", r"uses '<': only '>' \(strictly better\) and '=' \(tie\)"),
    ("a >= b", "ab", r"'' is not a candidate key"),
    ("a, b", "ab", r"uses ',': only '>'"),
    ("a > b > e", "abc", r"names e, which is not a candidate"),
    ("", "ab", "is empty"),
])
def test_parse_order_errors(order, cands, msg):
    with pytest.raises(RankingCaseError, match=msg):
        parse_order(order, list(cands))


def test_pair_constraints_cover_every_pair_once():
    pairs = pair_constraints([["a", "b"], ["c"], ["d"]])
    assert pairs == [("a", "b", "="), ("a", "c", ">"), ("a", "d", ">"), ("b", "c", ">"), ("b", "d", ">"),
                     ("c", "d", ">")]
    assert pair_constraints([["a", "b", "c"]]) == [("a", "b", "="), ("a", "c", "="), ("b", "c", "=")]


# ------------------------------------------------------------------ case_verdict

def test_verdict_strict_order():
    tiers = [["a"], ["b"], ["c"]]
    assert case_verdict({"a": 0.9, "b": 0.5, "c": 0.1}, tiers) == (True, 3, 3)
    # b and c swapped: pairs a>b, a>c right, b>c wrong
    assert case_verdict({"a": 0.9, "b": 0.1, "c": 0.5}, tiers) == (False, 2, 3)
    # equal scores do not satisfy a strict pair
    assert case_verdict({"a": 0.5, "b": 0.5, "c": 0.1}, tiers) == (False, 2, 3)


def test_verdict_tie():
    tiers = [["a", "b"], ["c"]]
    assert case_verdict({"a": 0.7, "b": 0.7, "c": 0.2}, tiers) == (True, 3, 3)
    assert case_verdict({"a": 0.7, "b": 0.6, "c": 0.2}, tiers) == (False, 2, 3)
    assert case_verdict({"a": 0.7, "b": 0.6, "c": 0.2}, tiers, tie_tol=0.1 + 1e-9) == (True, 3, 3)


def test_verdict_tolerance_edges():
    # strict: needs s_x > s_y + tol; exactly tol apart is not enough
    assert case_verdict({"a": 1.5, "b": 1.0}, [["a"], ["b"]], tie_tol=0.5) == (False, 0, 1)
    assert case_verdict({"a": 1.5 + 1e-9, "b": 1.0}, [["a"], ["b"]], tie_tol=0.5) == (True, 1, 1)
    # tie: |s_x - s_y| <= tol, so exactly tol apart is a tie
    assert case_verdict({"a": 1.5, "b": 1.0}, [["a", "b"]], tie_tol=0.5) == (True, 1, 1)
    assert case_verdict({"a": 1.5 + 1e-9, "b": 1.0}, [["a", "b"]], tie_tol=0.5) == (False, 0, 1)
    # the default tolerance is 1e-6
    assert case_verdict({"a": 1.0 + 5e-7, "b": 1.0}, [["a"], ["b"]])[0] is False
    assert case_verdict({"a": 1.0 + 5e-7, "b": 1.0}, [["a", "b"]])[0] is True


def test_verdict_nan_makes_the_case_incorrect():
    tiers = [["a"], ["b"], ["c"]]
    assert case_verdict({"a": 0.9, "b": 0.5, "c": math.nan}, tiers) == (False, 1, 3)
    assert case_verdict({"a": math.nan, "b": math.nan}, [["a", "b"]]) == (False, 0, 1)


def test_verdict_needs_every_score_and_a_sane_tolerance():
    with pytest.raises(KeyError, match="c"):
        case_verdict({"a": 1.0, "b": 0.0}, [["a"], ["b"], ["c"]])
    with pytest.raises(RankingCaseError, match="tie_tol"):
        case_verdict({"a": 1.0, "b": 0.0}, [["a"], ["b"]], tie_tol=-1.0)


# ------------------------------------------------------------------ loader

GOOD_CASE = """\
  - id: x-01
    category: laterality
    truth: "Small left pleural effusion."
    candidates:
      a: "Small left pleural effusion."
      b: "Small right pleural effusion."
    order: "a > b"
    why: "wrong side"
"""


def _write(tmp_path: Path, body: str, header: str = "schema: 1\ncases:\n") -> Path:
    p = tmp_path / "cases.yaml"
    p.write_text(header + textwrap.dedent(body), encoding="utf-8")
    return p


def test_loader_reads_a_good_file(tmp_path):
    cases = load_ranking_cases(_write(tmp_path, GOOD_CASE), split="holdout")
    assert cases == [RankingCase(id="x-01", category="laterality", truth="Small left pleural effusion.",
                                 candidates={"a": "Small left pleural effusion.", "b": "Small right pleural effusion."},
                                 order="a > b", why="wrong side", source="", split="holdout")]
    assert cases[0].tiers == [["a"], ["b"]]


@pytest.mark.parametrize("edit,msg", [
    (lambda s: s.replace('    why: "wrong side"\n', '    why: "wrong side"\n    note: "x"\n'),
     r"case 'x-01': unknown key\(s\) note"),
    (lambda s: s.replace('    why: "wrong side"\n', ""), r"case 'x-01': missing field\(s\) why"),
    (lambda s: s.replace("category: laterality", "category: sidedness"), r"case 'x-01': unknown category 'sidedness'"),
    (lambda s: s.replace("id: x-01", "id: X_01"), r"case 'X_01': id must use only lower-case"),
    (lambda s: s.replace('      b: "Small right pleural effusion."\n', ""), r"case 'x-01': 1 candidates; a case has 2-4"),
    (lambda s: s.replace("      b:", "      c:").replace('"a > b"', '"a > c"'),
     r"case 'x-01': candidate keys a, c: use a, b"),
    (lambda s: s.replace('"a > b"', '"a > b > c"'), r"case 'x-01': order 'a > b > c' names c, which is not a candidate"),
    (lambda s: s.replace('"a > b"', '"a"'), r"case 'x-01': order 'a' does not place candidate\(s\) b"),
    (lambda s: s.replace('"a > b"', '"a > a"'), r"case 'x-01'.*more than once"),
    (lambda s: s.replace('"a > b"', '"a >> b"'), r"case 'x-01'.*not a candidate key"),
    (lambda s: s.replace('truth: "Small left pleural effusion."', "truth: 3"), r"case 'x-01': truth must be a string"),
])
def test_loader_errors_name_the_case(tmp_path, edit, msg):
    with pytest.raises(RankingCaseError, match=msg):
        load_ranking_cases(_write(tmp_path, edit(GOOD_CASE)))


def test_loader_rejects_duplicate_ids_and_bad_files(tmp_path):
    with pytest.raises(RankingCaseError, match=r"case 'x-01': duplicate id \(also case #1\)"):
        load_ranking_cases(_write(tmp_path, GOOD_CASE + GOOD_CASE))
    with pytest.raises(RankingCaseError, match="schema must be 1"):
        load_ranking_cases(_write(tmp_path, GOOD_CASE, header="schema: 2\ncases:\n"))
    with pytest.raises(RankingCaseError, match=r"unknown top-level key\(s\) title"):
        load_ranking_cases(_write(tmp_path, GOOD_CASE, header="schema: 1\ntitle: x\ncases:\n"))
    with pytest.raises(RankingCaseError, match="'cases' must be a non-empty list"):
        load_ranking_cases(_write(tmp_path, "", header="schema: 1\ncases: []\n"))
    with pytest.raises(RankingCaseError, match="No ranking-case file"):
        load_ranking_cases(tmp_path / "missing.yaml")


# ------------------------------------------------------------------ the shipped dev suite

def test_dev_suite_loads_and_covers_every_category():
    cases = load_ranking_cases(DEV)
    counts = Counter(c.category for c in cases)
    assert len(cases) >= 60
    assert set(counts) == set(CATEGORIES) and len(CATEGORIES) == 19
    assert min(counts.values()) >= 4, counts
    assert all(c.split == "dev" for c in cases)
    assert len({c.id for c in cases}) == len(cases)


# ------------------------------------------------------------------ evaluation with a fake metric

@dataclass
class FakeMetric:
    """Scores a candidate by a lookup table keyed by its text; records its calls."""

    table: dict[str, float]
    name: str = "fake"
    calls: list = field(default_factory=list)

    def compute(self, references, candidates):
        self.calls.append((list(references), list(candidates)))
        return MetricResult(name=self.name, score=0.0, per_sample=np.array([self.table[c] for c in candidates]))


def _case(cid, category, order, cands):
    return RankingCase(id=cid, category=category, truth=f"truth of {cid}", candidates=cands, order=order, why="-")


CASES = [
    _case("l1", "laterality", "a > b", {"a": "l1a", "b": "l1b"}),
    _case("l2", "laterality", "a > b", {"a": "l2a", "b": "l2b"}),
    _case("s1", "synonyms", "a = b > c", {"a": "s1a", "b": "s1b", "c": "s1c"}),
]
SCORES = {"l1a": 0.9, "l1b": 0.1,           # correct
          "l2a": 0.2, "l2b": 0.8,           # wrong
          "s1a": 0.5, "s1b": 0.5, "s1c": 0.1}  # correct


def test_evaluate_calls_the_metric_once_and_judges_each_case():
    m = FakeMetric(SCORES)
    frame = evaluate_metric_on_cases(m, CASES)
    assert len(m.calls) == 1
    refs, cands = m.calls[0]
    assert refs == ["truth of l1"] * 2 + ["truth of l2"] * 2 + ["truth of s1"] * 3
    assert cands == ["l1a", "l1b", "l2a", "l2b", "s1a", "s1b", "s1c"]
    assert frame["correct"].tolist() == [True, False, True]
    assert frame["pairs_ok"].tolist() == [1, 0, 3] and frame["pairs"].tolist() == [1, 1, 3]
    assert frame["metric"].unique().tolist() == ["fake"] and frame["split"].unique().tolist() == ["dev"]
    assert json.loads(frame.loc[2, "scores"]) == {"a": 0.5, "b": 0.5, "c": 0.1}


def test_evaluate_lower_is_better_and_nan():
    flipped = evaluate_metric_on_cases(FakeMetric(SCORES), CASES, higher_is_better=False)
    assert flipped["correct"].tolist() == [False, True, False]  # the tie in s1 still holds, but c is now best
    nan_scores = {**SCORES, "l1b": math.nan}
    frame = evaluate_metric_on_cases(FakeMetric(nan_scores), CASES)
    assert frame["correct"].tolist() == [False, False, True]
    assert json.loads(frame.loc[0, "scores"]) == {"a": 0.9, "b": None}


def test_summarize_gives_known_accuracies():
    frame = evaluate_metric_on_cases(FakeMetric(SCORES), CASES)
    other = evaluate_metric_on_cases(FakeMetric({k: 0.0 for k in SCORES}, name="flat"), CASES)
    s = summarize(pd.concat([frame, other], ignore_index=True))
    got = {(r.metric, r.category): (r.n_cases, r.n_correct, r.accuracy) for r in s.itertuples()}
    assert got[("fake", "laterality")] == (2, 1, 0.5)
    assert got[("fake", "synonyms")] == (1, 1, 1.0)
    assert got[("fake", "all")] == (3, 2, pytest.approx(2 / 3))
    # all-equal scores: only the tie pair (s1 a = b) is right, no case is
    assert got[("flat", "all")] == (3, 0, 0.0)
    flat_all = s[(s.metric == "flat") & (s.category == "all")].iloc[0]
    assert (flat_all.pairs_ok, flat_all.pairs) == (1, 5)
    assert s[s.metric == "fake"]["category"].tolist() == ["laterality", "synonyms", "all"]


# ------------------------------------------------------------------ issue 41: the six categories and a case's context

ISSUE41 = ("omission_vs_imprecision", "signs", "paraphrase", "interchangeable_terms", "severity_downgrade", "context")


def test_issue41_categories_have_four_dev_cases_each():
    assert CATEGORIES[-6:] == ISSUE41
    counts = Counter(c.category for c in load_ranking_cases(DEV))
    assert all(counts[c] >= 4 for c in ISSUE41), counts


CTX_CASE = """  - id: ctx-01
    category: context
    truth: "Small right pneumothorax."
    candidates: {a: "No acute process.", b: "No acute process."}
    order: "a > b"
    why: "after a biopsy the pneumothorax is expected"
"""


def test_loader_reads_one_context_for_every_candidate(tmp_path):
    text = CTX_CASE + "    context: {age: 61, sex: F, indication: 'lung biopsy'}\n"
    case = load_ranking_cases(_write(tmp_path, text))[0]
    assert case.context_of("a") == case.context_of("b") == {"age": 61, "sex": "F", "indication": "lung biopsy"}


def test_loader_reads_a_context_per_candidate(tmp_path):
    text = CTX_CASE + "    context:\n      a: {indication: 'lung biopsy'}\n"
    case = load_ranking_cases(_write(tmp_path, text))[0]
    assert case.context_of("a") == {"indication": "lung biopsy"} and case.context_of("b") is None


@pytest.mark.parametrize("ctx,msg", [
    ("{weight: 70}", r"unknown context key\(s\) weight; allowed: age, sex, indication, history"),
    ("{age: 'sixty'}", "age must be whole years"),
    ("{sex: female}", "sex must be 'F' or 'M'"),
    ("{c: {age: 3}}", "names candidate\\(s\\) c, which the case does not have"),
    ("{a: {age: 3}, b: {history: 7}}", "history must be non-empty text"),
])
def test_loader_rejects_a_bad_context(tmp_path, ctx, msg):
    with pytest.raises(RankingCaseError, match=msg):
        load_ranking_cases(_write(tmp_path, CTX_CASE + f"    context: {ctx}\n"))


@dataclass
class ContextMetric:
    """Scores by text, plus 1 for a candidate whose context has an indication; records the contexts it got."""

    name: str = "ctx"
    seen: list = field(default_factory=list)

    def compute(self, references, candidates, context=None):
        self.seen.append(context)
        bonus = [1.0 if c and c.get("indication") else 0.0 for c in (context or [None] * len(candidates))]
        return MetricResult(name=self.name, score=0.0, per_sample=np.array(bonus))


def test_evaluate_passes_context_to_a_metric_that_takes_it_and_not_to_others(tmp_path):
    text = CTX_CASE + "    context:\n      a: {indication: 'lung biopsy'}\n"
    cases = load_ranking_cases(_write(tmp_path, text))
    m = ContextMetric()
    frame = evaluate_metric_on_cases(m, cases)
    assert m.seen == [[{"indication": "lung biopsy"}, None]] and frame["correct"].tolist() == [True]
    fake = FakeMetric({"No acute process.": 0.5})
    flat = evaluate_metric_on_cases(fake, cases)  # no context= in its compute: called as before, ties, wrong
    assert len(fake.calls) == 1 and flat["correct"].tolist() == [False]
    assert accepts_context(m) and not accepts_context(fake)
