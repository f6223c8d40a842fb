"""SIGKILL during a cached step, then rerun: it completes, reuses every finished item, equals an
uninterrupted run (issue 24, item 4). Also: a half-written model folder is never reused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from radaudit.models.cache import ContentCache
from radaudit.models.generate import generate, load_for_generation

TESTS = Path(__file__).resolve().parents[1]
PROMPTS = [f"Findings: case {i} shows" for i in range(12)]

CHILD = textwrap.dedent("""
    import os, signal, sys
    from radaudit.models.generate import generate, load_for_generation
    model_dir, cache_dir, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lm = load_for_generation(model_dir, device="cpu")
    orig, calls = lm.model.generate, [0]

    def dying(*a, **k):
        if calls[0] == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)   # no cleanup, no finally: the hardest kind of stop
        calls[0] += 1
        return orig(*a, **k)

    lm.model.generate = dying
    prompts = [f"Findings: case {i} shows" for i in range(12)]
    generate(lm, prompts, "nucleus", max_new_tokens=6, batch_size=3, cache=cache_dir, seed=0)
""")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_models_conftest", TESTS / "models" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # tests/models/conftest.py: the tiny random Llama every model test uses
    return mod.build_tiny_causal_lm(tmp_path_factory.mktemp("kill") / "model")


@pytest.mark.long
def test_sigkill_mid_generation_then_resume(tiny_lm, tmp_path):
    cache_dir = tmp_path / "cache"
    child = subprocess.run([sys.executable, "-c", CHILD, str(tiny_lm), str(cache_dir), "2"], capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr  # it really was killed mid-way
    with ContentCache(cache_dir) as c:
        assert len(c) == 6  # two finished batches of 3 were committed before the kill, nothing half-written

    lm = load_for_generation(tiny_lm, device="cpu")
    calls = []
    orig = lm.model.generate

    def counting(*a, **k):
        calls.append(k["input_ids"].shape[0])
        return orig(*a, **k)

    lm.model.generate = counting
    resumed = generate(lm, PROMPTS, "nucleus", max_new_tokens=6, batch_size=3, cache=str(cache_dir), seed=0)
    assert sum(calls) == 6  # only the 6 prompts the killed run had not finished
    lm.model.generate = orig
    fresh = generate(lm, PROMPTS, "nucleus", max_new_tokens=6, batch_size=3, cache=str(tmp_path / "fresh"), seed=0)
    assert [g.text for g in resumed] == [g.text for g in fresh]


def test_a_crashed_model_folder_is_never_left_behind(tmp_path):
    from radaudit.paths import atomic_dir, reusable_model_dir

    out = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "weights.bin").write_bytes(b"x" * 10)
            raise RuntimeError("killed during training")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # a folder whose metadata does not match (or is unreadable) is not reused
    out.mkdir()
    (out / "meta.json").write_text("{not json")
    assert not reusable_model_dir(out, "meta.json", "abc")
    (out / "meta.json").write_text(json.dumps({"config_hash": "abc", "stopped_early": True}))
    assert not reusable_model_dir(out, "meta.json", "abc") and not out.exists()  # cut-short model removed
    os.makedirs(out)
    (out / "meta.json").write_text(json.dumps({"config_hash": "abc"}))
    assert reusable_model_dir(out, "meta.json", "abc")


def test_a_corrupted_model_file_is_detected_and_the_model_rebuilt(tmp_path):
    from radaudit.paths import atomic_dir, reusable_model_dir

    out = tmp_path / "model"
    with atomic_dir(out) as tmp:
        (tmp / "meta.json").write_text(json.dumps({"config_hash": "abc"}))
        (tmp / "weights.bin").write_bytes(b"\x01" * 1000)
    assert reusable_model_dir(out, "meta.json", "abc", required=("weights.bin",))
    with open(out / "weights.bin", "r+b") as fh:  # truncated, as by a full disk or a killed copy
        fh.truncate(500)
    assert not reusable_model_dir(out, "meta.json", "abc", required=("weights.bin",))
    assert not out.exists()  # discarded (with a warning), so the caller trains it again


def test_two_writers_of_one_model_folder_both_succeed(tmp_path):
    import threading

    from radaudit.paths import atomic_dir

    out, errors, gate = tmp_path / "model", [], threading.Barrier(2)

    def writer(k):
        try:
            with atomic_dir(out) as tmp:
                (tmp / "weights.bin").write_bytes(bytes([k]) * 100)
                gate.wait()  # both finish training at the same moment
        except Exception as err:  # pragma: no cover - the failure this test guards against
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (out / "weights.bin").read_bytes() in (b"\x01" * 100, b"\x02" * 100)
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary folder left behind
