"""Generation with named decoding strategies, per-sample seeds, the generation cache and backends.

All models are tiny random Llamas from ``conftest.py``, saved and reloaded through ``from_pretrained``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fake_vllm

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from radaudit.errors import ParamsError, RadauditError  # noqa: E402
from radaudit.models.backends import (  # noqa: E402
    TransformersBackend,
    checkpoint_defaults_hidden,
    get_backend,
    load_for_generation,
    make_seeded_sampler,
)
from radaudit.models.cache import CACHE_ENV, ContentCache, default_cache_dir, generation_key, open_cache  # noqa: E402
from radaudit.models.decoding import (  # noqa: E402
    PAPER_STRATEGIES,
    STRATEGY_NAMES,
    DecodingStrategy,
    get_strategy,
    strategies_from_params,
    strategy_from_params,
)
from radaudit.models.generate import Generation, generate, generations_frame  # noqa: E402

EOS_ID = 2  # the tiny tokenizer's </s> (conftest.EOS_ID; test modules cannot import conftest)
#: A minimal ChatML-like template (SmolLM2-Instruct uses ChatML), in the tiny vocabulary.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant : {% endif %}"
)

PROMPTS = [
    "the lungs are clear",
    "heart size is normal there is a small left pleural effusion",
    "no acute",
    "compared with prior study there is mild pulmonary edema",
    "chest radiograph frontal and lateral views",
]
MNT = 6  # max new tokens in these tests


@pytest.fixture(scope="module")
def lm(tiny_causal_lm: Path):
    loaded = load_for_generation(tiny_causal_lm, device="cpu")
    assert loaded.tokenizer.eos_token_id == EOS_ID
    return loaded


class CallCounter:
    """Wraps ``model.generate`` to count calls and optionally fail after ``fail_after`` calls."""

    def __init__(self, model, fail_after: int | None = None):
        self.model, self.orig, self.calls, self.rows, self.fail_after = model, model.generate, 0, 0, fail_after

    def __enter__(self):
        def wrapped(*args, **kwargs):
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise KeyboardInterrupt("simulated interruption")
            self.calls += 1
            self.rows += kwargs["input_ids"].shape[0]
            return self.orig(*args, **kwargs)

        self.model.generate = wrapped
        return self

    def __exit__(self, *exc):
        self.model.generate = self.orig


def texts(gens: list[Generation]) -> list[tuple[int, ...]]:
    return [g.token_ids for g in gens]


# --- strategies as data ---------------------------------------------------------------------------

def test_paper_strategies_are_the_six_of_section_3():
    assert STRATEGY_NAMES == ("greedy", "beam4", "conservative", "rich", "topk50", "nucleus")
    s = PAPER_STRATEGIES
    assert (s["greedy"].do_sample, s["greedy"].num_beams) == (False, 1)
    assert (s["beam4"].do_sample, s["beam4"].num_beams) == (False, 4)
    assert (s["conservative"].temperature, s["conservative"].top_p, s["conservative"].top_k) == (0.3, 0.95, 0)
    assert (s["rich"].temperature, s["rich"].top_p, s["rich"].top_k) == (0.7, 0.95, 0)
    assert (s["topk50"].temperature, s["topk50"].top_k, s["topk50"].top_p) == (1.0, 50, 1.0)
    assert (s["nucleus"].temperature, s["nucleus"].top_p, s["nucleus"].top_k) == (1.0, 0.9, 0)
    assert all(x.max_new_tokens == 512 for x in s.values())
    assert [x.family for x in s.values()] == ["deterministic"] * 2 + ["stochastic"] * 4
    assert all(x.repetition_penalty == 1.0 and x.length_penalty == 1.0 for x in s.values())
    with pytest.raises(Exception):
        s["greedy"].num_beams = 2  # frozen


def test_strategy_from_params():
    assert strategy_from_params("nucleus") is PAPER_STRATEGIES["nucleus"]
    hot = strategy_from_params({"name": "hot", "base": "rich", "temperature": 1.2})
    assert (hot.temperature, hot.top_p, hot.do_sample, hot.label) == (1.2, 0.95, True, "")
    k10 = strategy_from_params({"name": "k10", "do_sample": True, "top_k": 10, "max_new_tokens": 64})
    assert (k10.top_k, k10.top_p, k10.temperature, k10.max_new_tokens) == (10, 1.0, 1.0, 64)
    assert [x.name for x in strategies_from_params(["greedy", {"name": "x", "base": "beam4"}])] == ["greedy", "x"]
    with pytest.raises(ParamsError, match="unknown key 'topk'"):
        strategy_from_params({"name": "bad", "do_sample": True, "topk": 5})
    with pytest.raises(ParamsError, match="only apply when sampling"):
        strategy_from_params({"name": "bad", "temperature": 0.5})
    with pytest.raises(ParamsError, match="beams"):
        strategy_from_params({"name": "bad", "do_sample": True, "num_beams": 2})
    with pytest.raises(ParamsError, match="top_p"):
        strategy_from_params({"name": "bad", "do_sample": True, "top_p": 1.5})
    with pytest.raises(ParamsError, match="unique"):
        strategies_from_params(["greedy", "greedy"])


def test_unknown_strategy_name_lists_the_known_ones(lm):
    with pytest.raises(ParamsError) as err:
        get_strategy("nucleous")
    msg = str(err.value)
    assert "Did you mean 'nucleus'" in msg
    assert all(name in msg for name in STRATEGY_NAMES)
    with pytest.raises(ParamsError, match="greedy, beam4, conservative, rich, topk50, nucleus"):
        generate(lm, PROMPTS[:1], "beam5", max_new_tokens=2)


def test_to_generation_config_pins_every_neutral_knob():
    nucleus = PAPER_STRATEGIES["nucleus"].to_generation_config(max_new_tokens=7, eos_token_id=2, pad_token_id=0)
    assert (nucleus.do_sample, nucleus.top_p, nucleus.top_k, nucleus.temperature) == (True, 0.9, 0, 1.0)
    assert nucleus.max_new_tokens == 7 and nucleus.eos_token_id == 2 and nucleus.pad_token_id == 0
    assert (nucleus.repetition_penalty, nucleus.no_repeat_ngram_size, nucleus.min_new_tokens, nucleus.min_p) == (1.0, 0, 0, 0.0)
    topk = PAPER_STRATEGIES["topk50"].to_generation_config()
    assert (topk.top_k, topk.top_p, topk.max_new_tokens) == (50, 1.0, 512)
    beam = PAPER_STRATEGIES["beam4"].to_generation_config()
    assert (beam.do_sample, beam.num_beams, beam.length_penalty, beam.early_stopping) == (False, 4, 1.0, False)


# --- every strategy; determinism --------------------------------------------------------------------

@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_every_named_strategy_runs(lm, name):
    gens = generate(lm, PROMPTS[:3], name, seeds=[1, 2, 3], max_new_tokens=MNT, batch_size=2)
    assert [g.prompt for g in gens] == PROMPTS[:3]
    for g, seed in zip(gens, [1, 2, 3]):
        assert g.strategy == name and g.seed == seed and g.max_new_tokens == MNT and g.backend == "transformers"
        assert g.model == str(lm.spec) and g.revision.startswith("sha256:")
        assert 1 <= g.n_new_tokens == len(g.token_ids) <= MNT
        if g.finish_reason == "eos":
            assert g.token_ids[-1] == EOS_ID and EOS_ID not in g.token_ids[:-1]
        else:
            assert g.finish_reason == "length" and g.n_new_tokens == MNT and EOS_ID not in g.token_ids
        assert g.text == lm.tokenizer.decode(list(g.token_ids), skip_special_tokens=True).strip()


@pytest.mark.parametrize("name", ["greedy", "beam4"])
def test_deterministic_strategies_are_batched_and_independent_of_runs_and_batch_size(lm, name):
    with CallCounter(lm.model) as counter:
        batched = generate(lm, PROMPTS, name, max_new_tokens=MNT, batch_size=5)
    assert counter.calls == 1 and counter.rows == 5  # one batched call
    again = generate(lm, PROMPTS, name, max_new_tokens=MNT, batch_size=5)
    pairs = generate(lm, PROMPTS, name, max_new_tokens=MNT, batch_size=2)
    alone = [generate(lm, [p], name, max_new_tokens=MNT)[0] for p in PROMPTS]
    assert texts(batched) == texts(again) == texts(pairs) == texts(alone)
    other_seed = generate(lm, PROMPTS, name, seeds=123, max_new_tokens=MNT)
    assert texts(other_seed) == texts(batched)  # the seed does not matter


def test_left_padding_gives_the_unpadded_greedy_output(lm):
    from transformers import GenerationConfig

    batched = generate(lm, PROMPTS, "greedy", max_new_tokens=MNT, batch_size=len(PROMPTS), chat_template=False)
    gc = GenerationConfig(do_sample=False, max_new_tokens=MNT, eos_token_id=EOS_ID, pad_token_id=0)
    for prompt, g in zip(PROMPTS, batched):
        enc = lm.tokenizer(prompt, return_tensors="pt")  # a single prompt: no padding at all
        out = lm.model.generate(**enc, generation_config=gc)
        ref = out[0, enc["input_ids"].shape[1]:].tolist()
        if EOS_ID in ref:
            ref = ref[: ref.index(EOS_ID) + 1]
        assert list(g.token_ids) == ref
    assert lm.tokenizer.padding_side == "left"


# --- per-sample seeds --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["conservative", "rich", "topk50", "nucleus"])
def test_sampling_is_reproducible_by_seed_and_differs_across_seeds(lm, name):
    a = generate(lm, PROMPTS, name, seeds=7, max_new_tokens=MNT)
    b = generate(lm, PROMPTS, name, seeds=7, max_new_tokens=MNT)
    c = generate(lm, PROMPTS, name, seeds=8, max_new_tokens=MNT)
    assert texts(a) == texts(b)
    assert texts(a) != texts(c)
    # several samples of one prompt: repeat it with different seeds
    many = generate(lm, [PROMPTS[0]] * 6, name, seeds=list(range(6)), max_new_tokens=MNT)
    assert len({g.token_ids for g in many}) > 1


def test_sampling_is_independent_of_batch_composition_and_position(lm):
    target, seed = PROMPTS[1], 42
    alone = generate(lm, [target], "nucleus", seeds=seed, max_new_tokens=MNT)[0]
    layouts = [  # (prompts, seeds, batch size, index of the target)
        ([target, *PROMPTS[2:]], [seed, 1, 2, 3], 4, 0),  # first of a batch of 4
        ([*PROMPTS[2:], target], [9, 8, 7, seed], 4, 3),  # last, other prompts and seeds
        ([PROMPTS[0], PROMPTS[4], target], [5, 5, seed], 2, 2),  # batch of 2, after a longer neighbour
        ([target, target], [99, seed], 2, 1),  # next to itself with another seed
    ]
    for prompts, seeds, bs, idx in layouts:
        gens = generate(lm, prompts, "nucleus", seeds=seeds, max_new_tokens=MNT, batch_size=bs)
        assert gens[idx].token_ids == alone.token_ids
    assert gens[0].token_ids != alone.token_ids  # the other seed of the same prompt differs
    # and with the rich strategy, across batch sizes
    ref = generate(lm, PROMPTS, "rich", seeds=[11, 12, 13, 14, 15], max_new_tokens=MNT, batch_size=5)
    one_by_one = [generate(lm, [p], "rich", seeds=s, max_new_tokens=MNT)[0] for p, s in zip(PROMPTS, [11, 12, 13, 14, 15])]
    assert texts(ref) == texts(one_by_one)


def test_seeded_sampler_samples_the_warped_distribution():
    """Frequencies over many seeds match transformers' warped softmax; filtered tokens are never drawn."""
    from transformers import TopPLogitsWarper

    logits = torch.tensor([[2.0, 1.5, 1.0, 0.0, -1.0, -3.0]])
    strat = DecodingStrategy(name="t", do_sample=True, temperature=0.7, top_p=0.9)
    n = 3000
    sampler = make_seeded_sampler(strat, list(range(n)))
    out = sampler(torch.zeros((n, 1), dtype=torch.long), logits.repeat(n, 1))
    picks = out.argmax(-1)
    assert torch.isfinite(out).sum(-1).eq(1).all()
    warped = TopPLogitsWarper(0.9)(None, logits / 0.7)
    probs = torch.softmax(warped, -1)[0]
    freq = torch.bincount(picks, minlength=6).double() / n
    assert (freq[probs == 0] == 0).all()
    assert torch.allclose(freq, probs.double(), atol=0.03)
    topk = make_seeded_sampler(DecodingStrategy(name="k", do_sample=True, top_k=2), list(range(500)))
    assert set(topk(torch.zeros((500, 1), dtype=torch.long), logits.repeat(500, 1)).argmax(-1).tolist()) == {0, 1}


# --- model defaults do not leak ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def leaky(tiny_causal_lm_leaky_defaults: Path):
    return load_for_generation(tiny_causal_lm_leaky_defaults, device="cpu")


@pytest.mark.parametrize("name", ["greedy", "beam4", "nucleus"])
def test_checkpoint_generation_defaults_do_not_leak(lm, leaky, name):
    assert leaky.model.generation_config.top_k == 5  # the checkpoint really ships them
    clean = generate(lm, PROMPTS, name, seeds=3, max_new_tokens=MNT)
    other = generate(leaky, PROMPTS, name, seeds=3, max_new_tokens=MNT)
    assert texts(other) == texts(clean)
    assert leaky.model.generation_config.top_k == 5  # restored after the call


def test_leak_would_happen_without_the_guards(lm, leaky):
    """Sanity check that the test above is meaningful: plain transformers usage picks the defaults up."""
    from transformers import GenerationConfig

    enc = lm.tokenizer(PROMPTS[1], return_tensors="pt")
    naive = GenerationConfig(max_new_tokens=MNT, eos_token_id=EOS_ID, pad_token_id=0)  # "greedy" left to defaults
    torch.manual_seed(0)
    a = lm.model.generate(**enc, generation_config=naive).tolist()
    torch.manual_seed(0)
    b = leaky.model.generate(**enc, generation_config=naive).tolist()
    assert a != b
    gc = PAPER_STRATEGIES["greedy"].to_generation_config(max_new_tokens=MNT, eos_token_id=EOS_ID, pad_token_id=0)
    with checkpoint_defaults_hidden(leaky.model):
        c = leaky.model.generate(**enc, generation_config=gc).tolist()
    assert c == lm.model.generate(**enc, generation_config=gc).tolist()


def test_to_generation_config_blocks_library_and_checkpoint_defaults_in_native_sampling(lm, tiny_causal_lm_pinnable_defaults):
    """transformers' own sampling with the converted config: a checkpoint's top_k=5 (and the library's
    default top_k=50) never applies to 'nucleus' (top-p only)."""
    from transformers import GenerationConfig

    pinned = load_for_generation(tiny_causal_lm_pinnable_defaults, device="cpu")
    enc = lm.tokenizer(PROMPTS[:2], return_tensors="pt", padding=True)
    gc = PAPER_STRATEGIES["nucleus"].to_generation_config(max_new_tokens=MNT, eos_token_id=EOS_ID, pad_token_id=0)

    def sample(model, config):
        torch.manual_seed(1234)
        return model.generate(**enc, generation_config=config).tolist()

    assert sample(pinned.model, gc) == sample(lm.model, gc)
    naive = GenerationConfig(do_sample=True, top_p=0.9, temperature=1.0, max_new_tokens=MNT, eos_token_id=EOS_ID,
                             pad_token_id=0)
    assert sample(pinned.model, naive) != sample(lm.model, naive)  # top_k=5 etc. leak into the naive config


# --- chat template -----------------------------------------------------------------------------------

#: A Qwen3-like template: it opens an empty think block unless enable_thinking is false.
THINKING_TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant : {% if enable_thinking is defined and enable_thinking is false %}"
    "no {% else %}chest {% endif %}{% endif %}"
)


def test_qwen3_style_templates_get_enable_thinking_false(tiny_causal_lm):
    from radaudit.models.backends import template_kwargs

    chat = load_for_generation(tiny_causal_lm, device="cpu")
    be = get_backend(chat)
    chat.tokenizer.chat_template = THINKING_TEMPLATE
    assert template_kwargs(chat.tokenizer) == {"enable_thinking": False}
    text, _, applied = be.render("no acute")
    assert applied and text.endswith("assistant : no ")  # thinking off
    be.enable_thinking = True
    assert be.render("no acute")[0].endswith("assistant : chest ")
    # a template that does not read it gets no extra variable: its text is unchanged
    chat.tokenizer.chat_template = TINY_CHAT_TEMPLATE
    assert template_kwargs(chat.tokenizer) == {}
    assert be.render("no acute")[0] == "<s> user : no acute </s> <s> assistant : "
    chat.tokenizer.chat_template = {"default": THINKING_TEMPLATE}
    assert template_kwargs(chat.tokenizer, enable_thinking=True) == {"enable_thinking": True}


def test_chat_template_applied_when_present_and_asked(tiny_causal_lm):
    chat = load_for_generation(tiny_causal_lm, device="cpu")
    be = get_backend(chat)
    text, ids, applied = be.render("no acute", chat_template=True)
    assert (text, applied) == ("no acute", False)  # no template: the prompt as is
    chat.tokenizer.chat_template = TINY_CHAT_TEMPLATE
    text, ids, applied = be.render("no acute", chat_template=True)
    assert applied and text == "<s> user : no acute </s> <s> assistant : "
    assert ids[0] == 1 and ids.count(1) == 2  # BOS from the template only, not added twice
    assert be.render("no acute", chat_template=False)[0] == "no acute"
    with_t = generate(chat, ["no acute"], "greedy", max_new_tokens=4, chat_template=True)[0]
    without = generate(chat, ["no acute"], "greedy", max_new_tokens=4, chat_template=False)[0]
    assert with_t.key != without.key
    msgs = generate(chat, [[{"role": "user", "content": "no acute"}]], "greedy", max_new_tokens=4)[0]
    assert msgs.token_ids == with_t.token_ids


def test_finish_reason_eos(tiny_causal_lm):
    """Make EOS the greedy first token: generation stops with finish_reason 'eos' and empty text."""
    m = load_for_generation(tiny_causal_lm, device="cpu")
    first = generate(m, [PROMPTS[0]], "greedy", max_new_tokens=1)[0].token_ids[0]
    with torch.no_grad():
        m.model.lm_head.weight[EOS_ID] = m.model.lm_head.weight[first] * 3
    g = generate(m, [PROMPTS[0]], "greedy", max_new_tokens=MNT)[0]
    assert (g.finish_reason, g.token_ids, g.text, g.n_new_tokens) == ("eos", (EOS_ID,), "", 1)


# --- cache -------------------------------------------------------------------------------------------

def test_cache_rerun_does_no_generation(lm, tmp_path):
    with ContentCache(tmp_path / "c") as cache:
        with CallCounter(lm.model) as first:
            a = generate(lm, PROMPTS, "nucleus", seeds=[1, 2, 3, 4, 5], max_new_tokens=MNT, batch_size=2, cache=cache)
        assert first.calls == 3 and first.rows == 5 and not any(g.cached for g in a)
        assert cache.stats()["misses"] == 5 and cache.stats()["writes"] == 5 and len(cache) == 5
        with CallCounter(lm.model) as second:
            b = generate(lm, PROMPTS, "nucleus", seeds=[1, 2, 3, 4, 5], max_new_tokens=MNT, batch_size=2, cache=cache)
        assert second.calls == 0 and all(g.cached for g in b)
        assert b == a and [g.to_dict() for g in b] == [g.to_dict() for g in a]
        st = cache.stats()
        assert (st["hits"], st["misses"], st["writes"], st["entries"]) == (5, 5, 5, 5)


def test_identical_requests_in_one_call_are_generated_once(lm):
    with CallCounter(lm.model) as counter:
        gens = generate(lm, [PROMPTS[0], PROMPTS[1], PROMPTS[0]], "rich", seeds=[4, 4, 4], max_new_tokens=MNT)
    assert counter.rows == 2 and gens[0] == gens[2] and gens[0].token_ids != gens[1].token_ids


def test_cache_hit_does_not_load_the_model(tiny_causal_lm, tmp_path):
    cache_dir = tmp_path / "c"
    first = TransformersBackend(str(tiny_causal_lm), device="cpu")
    a = generate(first, PROMPTS[:2], "greedy", max_new_tokens=4, cache=cache_dir)
    assert first.n_calls == 1
    second = TransformersBackend(str(tiny_causal_lm), device="cpu")
    b = generate(second, PROMPTS[:2], "greedy", max_new_tokens=4, cache=cache_dir)
    assert b == a and second.n_calls == 0 and second._loaded is None  # tokenizer only, no model


def test_cache_resumes_after_an_interruption(lm, tmp_path):
    seeds = [10, 11, 12, 13, 14]
    reference = generate(lm, PROMPTS, "rich", seeds=seeds, max_new_tokens=MNT)
    with ContentCache(tmp_path / "c") as cache:
        with CallCounter(lm.model, fail_after=2), pytest.raises(KeyboardInterrupt):
            generate(lm, PROMPTS, "rich", seeds=seeds, max_new_tokens=MNT, batch_size=1, cache=cache)
        assert len(cache) == 2  # each finished item was written at once
    with ContentCache(tmp_path / "c") as cache:  # a new process would reopen it
        with CallCounter(lm.model) as counter:
            resumed = generate(lm, PROMPTS, "rich", seeds=seeds, max_new_tokens=MNT, batch_size=1, cache=cache)
        assert counter.rows == 3 and counter.calls == 3
        assert sum(g.cached for g in resumed) == 2
        assert texts(resumed) == texts(reference)


def test_changed_parameters_miss_the_cache(lm, tmp_path):
    with ContentCache(tmp_path / "c") as cache:
        def run(**kw):
            args = dict(strategy="nucleus", seeds=1, max_new_tokens=MNT)
            args.update(kw)
            with CallCounter(lm.model) as c:
                generate(lm, PROMPTS[:2], args.pop("strategy"), cache=cache, **args)
            return c.rows

        assert run() == 2
        assert run() == 0
        assert run(seeds=2) == 2  # seed
        assert run(strategy="rich") == 2  # strategy
        assert run(strategy={"name": "nucleus2", "do_sample": True, "top_p": 0.9}) == 0  # same knobs, new name
        assert run(strategy={"name": "n", "do_sample": True, "top_p": 0.9, "repetition_penalty": 1.1}) == 2
        assert run(max_new_tokens=MNT - 1) == 2  # max tokens
        assert run(chat_template=False) == 0  # no template on this tokenizer: same input
        assert run(strategy="greedy", seeds=1) == 2
        assert run(strategy="greedy", seeds=2) == 0  # deterministic: the seed is not in the key


def test_cache_key_covers_every_part():
    base = dict(model="m", revision="r", prompt="p", strategy=PAPER_STRATEGIES["nucleus"], seed=1,
                max_new_tokens=8, backend="transformers", dtype="float32")
    k = generation_key(**base)
    assert k == generation_key(**base) and len(k) == 64
    for change in [dict(model="m2"), dict(revision="r2"), dict(prompt="p2"), dict(seed=2), dict(max_new_tokens=9),
                   dict(dtype="bfloat16"), dict(image_hash="abc"), dict(strategy=PAPER_STRATEGIES["rich"])]:
        assert generation_key(**{**base, **change}) != k, change
    # the engine is provenance, not identity: both engines share entries (radaudit.models.cache docstring)
    assert generation_key(**{**base, "backend": "vllm"}) == generation_key(**{**base, "backend": None}) == k


def test_cache_tolerates_reopening_and_stats(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env_cache"))
    assert default_cache_dir() == (tmp_path / "env_cache").resolve()
    c = open_cache(True)
    c.put("k", {"a": 1}, {"why": "test"})
    c.close()
    c2 = open_cache(str(tmp_path / "env_cache"))
    assert c2.get("k") == {"a": 1} and c2.parts("k") == {"why": "test"} and c2.get("missing") is None
    assert c2.stats() == {"path": str((tmp_path / "env_cache" / "generations.sqlite").resolve()), "hits": 1,
                          "misses": 1, "writes": 0, "entries": 1}
    c2.close()
    assert open_cache(None) is None and open_cache(False) is None
    with pytest.raises(ParamsError):
        open_cache(3.5)


def test_unsaved_model_cannot_be_cached(lm, tmp_path):
    from radaudit.models.backends import LoadedCausalLM

    anon = LoadedCausalLM(lm.model, lm.tokenizer, "<in-memory model>", None)
    assert generate(anon, PROMPTS[:1], "greedy", max_new_tokens=2)[0].revision is None
    with pytest.raises(ParamsError, match="save_pretrained"):
        generate(anon, PROMPTS[:1], "greedy", max_new_tokens=2, cache=tmp_path / "c")


# --- API details -------------------------------------------------------------------------------------

def test_spec_input_seeds_and_frame(tiny_causal_lm):
    gens = generate(str(tiny_causal_lm), PROMPTS[:2], "greedy", max_new_tokens=3, device="cpu")
    assert len(gens) == 2 and gens[0].model == str(tiny_causal_lm)
    single = generate(str(tiny_causal_lm), PROMPTS[0], "greedy", max_new_tokens=3)
    assert single[0].token_ids == gens[0].token_ids
    df = generations_frame(gens)
    assert list(df.columns)[:3] == ["prompt", "text", "token_ids"] and "cached" not in df.columns and len(df) == 2
    with pytest.raises(ParamsError, match="one per prompt"):
        generate(str(tiny_causal_lm), PROMPTS[:2], "greedy", seeds=[1, 2, 3])
    with pytest.raises(ParamsError, match="batch_size"):
        generate(str(tiny_causal_lm), PROMPTS[:2], "greedy", batch_size=0)
    assert generate(str(tiny_causal_lm), [], "greedy") == []


def test_vllm_backend_missing_gives_a_clear_error(tiny_causal_lm, monkeypatch):
    fake_vllm.uninstalled(monkeypatch)  # as if not installed (import raises ImportError)
    with pytest.raises(RadauditError, match=r"vLLM backend needs a GPU machine and `pip install vllm`"):
        generate(str(tiny_causal_lm), PROMPTS[:1], "greedy", backend="vllm")
    with pytest.raises(ParamsError, match="transformers, vllm"):
        get_backend(str(tiny_causal_lm), "tgi")


def test_vllm_backend_maps_the_strategies(tiny_causal_lm, monkeypatch, tmp_path):
    """The vLLM mapping, against a recorder of vLLM's documented offline API (vLLM needs a GPU)."""
    rec = fake_vllm.install(monkeypatch, token_ids=[5, 6, EOS_ID, 0], beam_tokens=[7, 8, 9])

    be = get_backend(str(tiny_causal_lm), "vllm", dtype="bf16", gpu_memory_utilization=0.5)
    nuc = generate(be, PROMPTS[:2], "nucleus", seeds=[3, 4], max_new_tokens=3, cache=tmp_path / "c")
    assert rec.init_calls == [{"model": str(tiny_causal_lm), "tokenizer": str(tiny_causal_lm), "dtype": "bfloat16",
                              "trust_remote_code": False, "gpu_memory_utilization": 0.5}]
    prompts, params = rec.generate_calls[0].prompts, [p.kw for p in rec.generate_calls[0].params]
    ids = [be.render(p)[1] for p in PROMPTS[:2]]
    assert sorted(map(tuple, (p["prompt_token_ids"] for p in prompts))) == sorted(map(tuple, ids))
    assert {p["seed"] for p in params} == {3, 4}
    p0 = params[0]
    assert (p0["temperature"], p0["top_p"], p0["top_k"], p0["min_p"], p0["max_tokens"], p0["n"]) == (1.0, 0.9, -1, 0.0, 3, 1)
    assert p0["repetition_penalty"] == 1.0 and p0["stop_token_ids"] == [EOS_ID]
    assert [g.token_ids for g in nuc] == [(5, 6, EOS_ID)] * 2 and {g.finish_reason for g in nuc} == {"eos"}
    assert {g.backend for g in nuc} == {"vllm"}

    generate(be, PROMPTS[:1], "greedy", seeds=9, max_new_tokens=3)
    g = rec.generate_calls[1].params[0].kw
    assert (g["temperature"], g["top_p"], g["top_k"], g["seed"]) == (0.0, 1.0, -1, None)
    generate(be, PROMPTS[:1], "topk50", seeds=9, max_new_tokens=3)
    k = rec.generate_calls[2].params[0].kw
    assert (k["temperature"], k["top_p"], k["top_k"], k["seed"]) == (1.0, 1.0, 50, 9)

    beam = generate(be, PROMPTS[:2], "beam4", max_new_tokens=3)
    assert rec.beam_calls[0].params.kw == {"beam_width": 4, "max_tokens": 3, "length_penalty": 1.0, "ignore_eos": False}
    assert [x.token_ids for x in beam] == [(7, 8, 9)] * 2 and {x.finish_reason for x in beam} == {"length"}
    assert len(rec.init_calls) == 1  # one engine, created lazily at the first miss
    # the same request on the transformers backend is the same cache entry: served, with its engine as provenance
    tf = generate(str(tiny_causal_lm), PROMPTS[:2], "nucleus", seeds=[3, 4], max_new_tokens=3, cache=tmp_path / "c",
                  dtype="bf16")
    assert [x.key for x in tf] == [x.key for x in nuc] and all(x.cached for x in tf)
    assert [x.token_ids for x in tf] == [x.token_ids for x in nuc] and {x.backend for x in tf} == {"vllm"}
