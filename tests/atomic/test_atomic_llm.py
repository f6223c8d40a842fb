"""The LLM backend with a fake generator (no model): JSON repaired, retried, or counted as unparseable."""

from __future__ import annotations

import json
import math
import re

import pytest

from radaudit.atomic import LLMDecomposer, score_pair, score_pairs, trace_of
from radaudit.errors import ParamsError
from radaudit.metrics import build_metric

GT = "Small left pleural effusion. No pneumothorax."
SWAP = "Small right pleural effusion. No pneumothorax."
FACTS = {
    GT: {"findings": [{"name": "pleural effusion", "present": "yes", "attributes": {"location": "left", "severity": "small"}},
                      {"name": "pneumothorax", "present": "no", "attributes": {}}]},
    SWAP: {"findings": [{"name": "Pleural effusion", "present": True, "attributes": {"location": "right", "severity": "small"}},
                        {"name": "pneumothorax", "present": "absent"}]},
}
_FACETS = {"temporal change": "temporal"}


class FakeLLM:
    """Answers decomposition prompts from FACTS (through ``mangle``) and reader prompts from the
    answering report's FACTS, as a well-behaved model would."""

    def __init__(self, mangle=lambda report, text, attempt: text, drop_ids=()):
        self.mangle, self.drop_ids = mangle, set(drop_ids)
        self.prompts: list[str] = []
        self.attempts: dict[str, int] = {}

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "Questions:" not in prompt:  # decomposition
            report = prompt.split("Report:\n", 1)[1].split("\n\nYour previous answer", 1)[0].strip()
            n = self.attempts[report] = self.attempts.get(report, 0) + 1
            return self.mangle(report, json.dumps(FACTS[report]), n)
        m = re.search(r"Report:\n(.*?)\n\nQuestions:\n(.*)", prompt, re.S)
        findings = {f["name"].lower(): f for f in FACTS[m.group(1)]["findings"]}
        answers = []
        for line in m.group(2).strip().splitlines():
            k, q = line.split(". ", 1)
            if int(k) in self.drop_ids:
                continue
            if q.startswith("Is there "):
                f = findings.get(q[len("Is there "):-1].lower())
                ans = "not mentioned" if f is None else {"yes": "yes", True: "yes"}.get(f["present"], "no")
            else:
                facet, name = re.match(r"What is the (.+?) of the (.+?)\?", q).groups()
                f = findings.get(name.lower())
                ans = (f or {}).get("attributes", {}).get(_FACETS.get(facet, facet)) or "not mentioned"
            answers.append({"id": int(k), "answer": ans, "evidence": "quoted"})
        return json.dumps({"answers": answers})


def test_llm_backend_gives_the_hand_computed_scores():
    fake = FakeLLM()
    row = score_pair(GT, SWAP, backend="llm", generate_fn=fake)
    assert (row.disease_precision, row.disease_recall) == (1.0, 1.0)
    assert (row.attribute_precision, row.attribute_recall) == (0.5, 0.5)
    assert (row.precision, row.recall, row.f1) == (0.75, 0.75, 0.75)
    assert row.n_unparseable == 0 and row.n_repaired == 0 and bool(row.ok)
    # 2 decompositions + 2 disease readings + 2 attribute readings, each report in its prompt
    assert len(fake.prompts) == 6 and GT in fake.prompts[0] and '"findings"' in fake.prompts[0]
    t = trace_of(row)
    assert t[t["attribute"] == "location"]["evidence"].tolist() == ["quoted", "quoted"]


def _sloppy(report, text, attempt):
    # a fenced reply with prose, single quotes, a trailing comma and Python literals
    body = text.replace('"', "'").replace("]}", ",]}").replace("'yes'", "True")
    return f"Sure! Here is the JSON:\n```json\n{body}\n```\nHope this helps."


def test_malformed_json_is_repaired_and_counted():
    row = score_pair(GT, SWAP, backend="llm", generate_fn=FakeLLM(_sloppy))
    assert (row.precision, row.recall, row.f1) == (0.75, 0.75, 0.75)
    assert row.n_repaired == 2 and row.n_unparseable == 0


def test_a_retry_recovers_a_bad_first_reply():
    fake = FakeLLM(lambda report, text, n: "I am not sure." if n == 1 else text)
    row = score_pair(GT, GT, backend="llm", generate_fn=fake)
    assert row.f1 == 1.0 and fake.attempts[GT] == 2
    assert any("It was rejected" in p for p in fake.prompts)


def test_unparseable_output_is_counted_never_dropped():
    fake = FakeLLM(lambda report, text, n: "{'findings': [{'name': " if report == SWAP else text)
    df = score_pairs([GT, GT], [SWAP, GT], backend="llm", generate_fn=fake, max_retries=2)
    assert fake.attempts[SWAP] == 3  # one call and two retries
    bad = df.loc[0]
    assert not bad.ok and math.isnan(bad.f1) and bad.n_unparseable == 1 and "prediction report" in bad.error
    assert df.loc[1, "f1"] == 1.0 and df.loc[1, "ok"]
    metric = build_metric("atomimed", backend="llm", generate_fn=FakeLLM(fake.mangle))
    res = metric.compute([GT, GT], [SWAP, GT])
    assert res.n_undefined == 1 and res.details["n_unparseable_total"] == 1 and res.score == 1.0


def test_reader_answers_left_out_are_unparseable_non_matches():
    row = score_pair(GT, GT, backend="llm", generate_fn=FakeLLM(drop_ids={2}))
    # question 2 of every reading (pneumothorax; the severity facet) goes unanswered: 1 of 2 per list
    assert row.n_unparseable == 4
    assert (row.disease_precision, row.disease_recall, row.attribute_precision, row.attribute_recall) == (0.5, 0.5, 0.5, 0.5)
    assert trace_of(row)["unparseable"].sum() == 4


def test_llm_errors_are_clear():
    with pytest.raises(ParamsError, match="generate_fn"):
        score_pairs([GT], [GT], backend="llm")
    with pytest.raises(ParamsError, match="backend"):
        score_pairs([GT], [GT], backend="gpt")
    with pytest.raises(ParamsError, match=r"\{report\}"):
        LLMDecomposer(FakeLLM(), prompt_template="Decompose this.")
    # empty reports need no model call
    fake = FakeLLM()
    assert score_pair("", "", backend="llm", generate_fn=fake).f1 == 1.0 and fake.prompts == []


def test_greedy_generator_uses_the_model_layer_at_temperature_zero(monkeypatch):
    import types

    import radaudit.models.backends as backends
    import radaudit.models.generate as gen
    from radaudit.atomic import greedy_generator

    built, seen = [], []
    monkeypatch.setattr(backends, "get_backend", lambda model, backend, **kw: built.append((model, backend)) or "B")

    def fake_generate(model, prompts, strategy, **kw):
        seen.append((model, strategy, kw["max_new_tokens"]))
        return [types.SimpleNamespace(text=f"out:{p}") for p in prompts]

    monkeypatch.setattr(gen, "generate", fake_generate)
    fn = greedy_generator("some/model", backend="vllm", max_new_tokens=64)
    assert fn(["a", "b"]) == ["out:a", "out:b"] and fn(["c"]) == ["out:c"]
    assert built == [("some/model", "vllm")]  # built once, on the first call
    assert seen == [("B", "greedy", 64), ("B", "greedy", 64)]


# --- garbage is never accepted (issue 18) ----------------------------------------------------------

GARBAGE = {
    "empty object": "{}",
    "another object": '{"answer": "sure"}',
    "empty array": "[]",
    "truncated": '{"findings": [{"name": "effusion"',
    "prose": "The report shows an effusion.",
    "unknown top-level key": '{"findings": [], "answer": "sure"}',
    "unknown finding key": '{"findings": [{"name": "effusion", "present": "yes", "confidence": 0.9}]}',
    "unknown attribute": '{"findings": [{"name": "effusion", "present": "yes", "attributes": {"colour": "red"}}]}',
    "findings not a list": '{"findings": {"name": "effusion", "present": "yes"}}',
}
READER_GARBAGE = {
    "empty object": "{}",
    "another object": '{"answer": "sure"}',
    "empty array": "[]",
    "truncated": '{"answers": [{"id": 1, "answer": "yes"',
    "prose": "The report shows an effusion.",
    "unknown key": '{"answers": [{"id": 1, "answer": "yes", "confidence": 1}, {"id": 2, "answer": "no", "confidence": 1}]}',
    "answers not objects": '{"answers": ["yes", "no"]}',
    "answer missing": '{"answers": [{"id": 1}, {"id": 2}]}',
}


def _decomposition_reply(reply):
    """A generator whose decompositions are ``reply``; readers as FakeLLM (never reached when garbage)."""
    good = FakeLLM()

    def gen(prompt):
        return good(prompt) if "Questions:" in prompt else reply

    return gen


@pytest.mark.parametrize("reply", list(GARBAGE.values()), ids=list(GARBAGE))
def test_decomposer_garbage_is_a_counted_failure_never_a_score(reply):
    from radaudit.atomic import calls_of
    from radaudit.atomic.schema import Decomposition
    from radaudit.models.llm_json import call_json

    assert not call_json(lambda p: reply, "p", Decomposition, max_retries=0, reject_repairs=["close_truncated"]).ok
    [facts] = LLMDecomposer(lambda p: reply, max_retries=1).decompose([GT])
    assert not facts.ok and facts.n_unparseable == 1 and facts.findings == () and facts.attempts == 2 and facts.error
    calls = 0

    def counting(prompt):
        nonlocal calls
        calls += 1
        return _decomposition_reply(reply)(prompt)

    df = score_pairs([GT, GT], [GT, SWAP], backend="llm", generate_fn=counting, max_retries=1)
    assert not df["ok"].any() and df["f1"].isna().all() and df["precision"].isna().all()
    assert (df["f1"] != 1.0).all() and (df["n_decompose_failed"] == 2).all() and (df["n_unparseable"] == 2).all()
    assert df["error"].str.startswith("not scored (decomposition failed)").all()
    assert (df["n_reader_calls"] == 0).all() and len(trace_of(df)) == 0 and calls == 4  # 2 reports x 2 attempts
    c = calls_of(df).set_index("stage")
    assert c.loc["decomposition", ["calls", "ok", "failed", "attempts"]].tolist() == [2, 0, 2, 4]
    assert c.loc["disease reading", "calls"] == 0
    res = build_metric("atomimed", backend="llm", generate_fn=_decomposition_reply(reply), max_retries=0).compute([GT], [GT])
    assert math.isnan(res.score) and res.n_undefined == 1 and res.details["n_not_scored"] == 1


@pytest.mark.parametrize("reply", list(READER_GARBAGE.values()), ids=list(READER_GARBAGE))
def test_reader_garbage_is_a_counted_failure_never_a_match(reply):
    from radaudit.atomic import LLMReader, calls_of
    from radaudit.atomic.verify import ReaderReply
    from radaudit.models.llm_json import call_json

    assert not call_json(lambda p: reply, "p", ReaderReply, max_retries=0, reject_repairs=["close_truncated"]).ok
    good = FakeLLM()
    seen = []

    def gen(prompt):
        if "Questions:" in prompt:
            seen.append(prompt)
            return reply
        return good(prompt)

    row = score_pair(GT, GT, backend="llm", generate_fn=gen, max_retries=1)
    # both readings (2 questions each) fail: every answer unparseable, a non-match, counted
    assert bool(row.ok) and row.n_reader_calls == 2 and row.n_reader_failed == 2 and row.n_answers_unparseable == 4
    assert row.n_unparseable == 4 and row.f1 == 0.0 and row.disease_precision == row.disease_recall == 0.0
    assert trace_of(row)["unparseable"].all() and len(seen) == 4  # a retry each
    c = calls_of(row).set_index("stage")
    assert c.loc["disease reading", ["calls", "ok", "failed"]].tolist() == [2, 0, 2]
    assert c.loc["decomposition", ["calls", "ok", "failed"]].tolist() == [1, 1, 0]  # one distinct report
    # the reader alone: every question of the failed call unparseable, the call kept in last_calls
    from radaudit.atomic import RuleDecomposer
    from radaudit.atomic.verify import ReadRequest, disease_questions

    facts = RuleDecomposer().decompose([GT])[0]
    reader = LLMReader(lambda p: reply, max_retries=0)
    req = ReadRequest(tuple(disease_questions(facts, "gt->inf")), GT, facts)
    [answers] = reader.read([req])
    assert len(answers) == 2 and all(a.unparseable for a in answers)
    assert len(reader.last_calls) == 1 and not reader.last_calls[0].ok and reader.last_calls[0].attempts == 1


def test_empty_findings_are_a_valid_normal_report_for_both_sides():
    from radaudit.atomic import calls_of

    fake = FakeLLM()

    def gen(prompt):
        return '{"findings": []}' if "Questions:" not in prompt else fake(prompt)

    row = score_pair(GT, SWAP, backend="llm", generate_fn=gen)
    assert bool(row.ok) and row.f1 == 1.0 and row.n_unparseable == 0 and row.n_reader_calls == 0
    assert calls_of(row).set_index("stage").loc["decomposition", ["calls", "clean", "failed"]].tolist() == [2, 2, 0]


def test_reader_repairs_and_failures_are_counted_per_pair():
    fake = FakeLLM()

    def gen(prompt):
        out = fake(prompt)
        if "Questions:" in prompt and "Is there" in prompt:
            return "Sure:\n```json\n" + out.replace('"', "'") + "\n```"  # repaired
        return out

    row = score_pair(GT, SWAP, backend="llm", generate_fn=gen)
    assert (row.precision, row.recall, row.f1) == (0.75, 0.75, 0.75)
    assert row.n_reader_calls == 4 and row.n_reader_repaired == 2 and row.n_reader_failed == 0
    assert row.n_repaired == 2 and row.n_decompose_repaired == 0 and row.n_unparseable == 0


def test_thinking_block_is_skipped_not_parsed():
    fake = FakeLLM()

    def gen(prompt):
        return '<think>\nThe user wants {"findings": "all"} ... let me think.\n</think>\n\n' + fake(prompt)

    row = score_pair(GT, SWAP, backend="llm", generate_fn=gen)
    assert (row.f1, row.n_repaired, row.n_unparseable) == (0.75, 0, 0)
    # cut off while still thinking: no answer, a counted failure
    bad = score_pair(GT, SWAP, backend="llm", max_retries=0,
                     generate_fn=lambda p: '<think>\nmaybe {"findings": []}')
    assert not bad.ok and math.isnan(bad.f1) and bad.n_decompose_failed == 2


def test_a_cut_off_decomposition_is_never_closed_into_a_shorter_one():
    from radaudit.atomic.schema import Decomposition
    from radaudit.models.llm_json import call_json

    cut = '{"findings": [{"name": "pleural effusion", "present": "yes"}, {"name": "pneumo'
    two = '{"findings": [{"name": "pleural effusion", "present": "yes"}'  # closes into a valid 1-finding list
    assert call_json(lambda p: two, "p", Decomposition, max_retries=0).repairs == ["close_truncated"]
    for reply in (cut, two):
        r = call_json(lambda p: reply, "p", Decomposition, max_retries=0, reject_repairs=("close_truncated",))
        assert not r.ok and "cut off" in r.error
        [facts] = LLMDecomposer(lambda p: reply, max_retries=0).decompose([GT])
        assert not facts.ok and "cut off" in facts.error
    with pytest.raises(ParamsError, match="reject_repairs"):
        call_json(lambda p: two, "p", Decomposition, reject_repairs=("close_everything",))
