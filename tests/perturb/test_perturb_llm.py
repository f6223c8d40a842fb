"""LLM rewriting with a fake backend: the paper's protocol in the prompt, malformed JSON counted and
kept, verification of the declared span, reasoning traces stripped. Nothing touches a model."""

from __future__ import annotations

import json

import pandas as pd

from radaudit.perturb.dataset import build_pair_dataset, table2_cells
from radaudit.perturb.engine import RewriteTask
from radaudit.perturb.llm import PAPER_LLM, LLMEngine, build_prompt, strip_reasoning

REPORTS = pd.DataFrame({
    "study_id": ["a", "b", "c", "d"],
    "source": "handwritten",
    "text": ["Small left pleural effusion. No pneumothorax.", "Left basilar atelectasis. Heart size is normal.",
             "Left upper lobe nodule. No effusion.", "Left apical scarring. No edema."],
})


def _report_of(prompt: str) -> str:
    return prompt.split("Ground-truth report:\n", 1)[1].split("\n\nAnswer with", 1)[0]


def fake_model(prompt: str) -> str:
    """Flips left -> right as a clinician-style JSON answer, after a reasoning trace with braces."""
    report = _report_of(prompt)
    if report.startswith("Left upper"):
        return "I cannot do this {not json"  # malformed every time
    if report.startswith("Left apical"):  # changes more than it declares
        me = report.replace("Left", "Right").replace("No edema", "Edema")
    else:
        me = report.replace("left", "right").replace("Left", "Right")
    word = "left" if "left" in report else "Left"
    out = {"rewritten_report": me, "original_span": word, "rewritten_span": word.replace("eft", "ight").replace("l", "r"),
           "explanation": "The side is flipped."}
    return "<think>the {side} matters</think>\n```json\n" + json.dumps(out) + "\n```"


def test_prompt_states_the_protocol():
    p = build_prompt("No pneumothorax.", "negation", "significant", "inaccuracy")
    assert "ONLY ONE targeted aspect" in p and "No evidence of pneumothorax" in p
    assert "the same clinical fact is described inconsistently" in p and p.rstrip().endswith("clinically significant.")
    assert PAPER_LLM["model"].startswith("deepseek-ai/DeepSeek-R1-Distill")


def test_strip_reasoning():
    assert strip_reasoning("<think>{x}</think>{\"a\": 1}") == "{\"a\": 1}"
    assert strip_reasoning("reasoning {x}</think> {\"a\": 1}") == " {\"a\": 1}"


def test_fake_llm_engine_counts_malformed_and_verifies():
    eng = LLMEngine(fake_model, model="fake", max_retries=1)
    tasks = [RewriteTask(r.study_id, r.source, r.text, "location", "significant", "inaccuracy", 0)
             for r in REPORTS.itertuples()]
    out = eng.rewrite(tasks)
    assert [o.status for o in out] == ["ok", "ok", "unparseable", "unverified"]
    ok = out[0].pair
    assert ok.rewritten == "Small right pleural effusion. No pneumothorax."
    assert ok.gt_edit_text == "left" and ok.me_edit_text == "right" and ok.verified and ok.human_review == ""
    bad = out[2].rejected[0]
    assert not bad.verified and bad.verification_note.startswith("unparseable after 2 attempt(s)")
    assert "outside the declared span" in out[3].rejected[0].verification_note
    assert eng.counts() == {"n": 4, "ok": 3, "clean": 0, "repaired": 3, "retried": 0, "failed": 1}


def test_batched_llm_engine_in_the_dataset_builder():
    calls = []

    def batched(prompts):
        calls.append(len(prompts))
        return [fake_model(p) for p in prompts]

    eng = LLMEngine(batched, batched=True, model="fake", max_retries=0)
    cells = table2_cells(1)
    cells = cells[(cells["aspect"] == "location") & (cells["significance"] == "significant")
                  & (cells["error_type"] == "inaccuracy")]
    ds = build_pair_dataset(REPORTS, eng, n_per_cell=1, seed=0, cells=cells)
    assert len(ds.pairs) == 1 and ds.pairs["engine"].iloc[0] == "llm"
    assert calls[0] == 1  # the LLM engine asks for exactly the missing pairs
    # malformed and unverified outputs are kept in `rejected`, with their reasons
    assert ds.fill["tried"].iloc[0] == len(ds.rejected) + 1
    assert ds.provenance["engine"]["model"] == "fake"
