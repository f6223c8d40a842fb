"""The dev/test split of the IU X-ray labeler benchmark (``benchmarks/labeler_iu_xray.py``, issue 18)
and the reference mapping's uncertain values.

The benchmark is a script, not a package module: it is loaded from its file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "labeler_iu_xray.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("labeler_iu_xray_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up while the file runs
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def iu_uids(shared_data):
    df = pd.read_csv(shared_data / "iu-xray-openi" / "indiana_reports.csv", dtype=str, keep_default_na=False)
    return df["uid"].tolist()


def test_split_is_the_documented_hash(bench):
    for uid in ("1", "42", "3851"):
        first = hashlib.sha256(f"radaudit-iu-labeler-split:{bench.SPLIT_SEED}:{uid}".encode()).digest()[0]
        assert bench.split_half(uid) == ("dev" if first % 2 == 0 else "test")
    assert bench.split_half(" 42 ") == bench.split_half("42") == bench.split_half(42)


def test_split_is_deterministic_and_order_free(bench, iu_uids):
    a = bench.split_halves(iu_uids)
    shuffled = list(iu_uids)
    random.Random(0).shuffle(shuffled)
    b = dict(zip(shuffled, bench.split_halves(shuffled)))
    assert [b[u] for u in iu_uids] == a.tolist()
    assert bench.split_halves(iu_uids).tolist() == a.tolist()
    s = pd.Series(iu_uids[:5], index=list("abcde"))
    assert list(bench.split_halves(s).index) == list("abcde")


def test_split_is_disjoint_covers_every_uid_and_is_about_half(bench, iu_uids):
    halves = bench.split_halves(iu_uids)
    assert set(halves) == {"dev", "test"}
    dev = {u for u, h in zip(iu_uids, halves) if h == "dev"}
    test = {u for u, h in zip(iu_uids, halves) if h == "test"}
    assert not dev & test and dev | test == set(iu_uids)
    assert 0.45 < len(dev) / len(iu_uids) < 0.55


def test_another_seed_gives_another_split(bench, iu_uids):
    a = bench.split_halves(iu_uids).to_numpy()
    b = bench.split_halves(iu_uids, seed=bench.SPLIT_SEED + 1).to_numpy()
    assert 0.4 < (a == b).mean() < 0.6  # independent halves agree about half the time


def test_errors_of_the_test_half_are_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["labeler_iu_xray.py", "--errors-half", "test"])
    with pytest.raises(SystemExit) as exc:
        bench.main()
    assert exc.value.code == 2 and "refused" in capsys.readouterr().err


def test_mapping_versions_and_uncertain_reference(bench):
    mesh = pd.DataFrame({"mesh": [["Pulmonary Congestion/mild"], ["Pulmonary Congestion", "Pulmonary Edema"],
                                  ["Pulmonary Fibrosis/base"], ["normal"]]})
    cur = bench.gold_table(mesh)
    before = bench.gold_table(mesh, "before split")
    # congestion is CheXpert-uncertain Edema now, positive before the split; edema wins over congestion
    assert cur["Edema"].tolist() == [-1.0, 1.0, 0.0, 0.0] and before["Edema"].tolist() == [1.0, 1.0, 0.0, 0.0]
    # pulmonary fibrosis -> Pleural Other only after the split
    assert cur["Pleural Other"].tolist() == [0.0, 0.0, 1.0, 0.0] and before["Pleural Other"].sum() == 0
    assert cur["No Finding"].tolist() == [0.0, 0.0, 0.0, 1.0]
    # every rule new after the split is marked as written on the dev half
    assert all(r.written_on == "all" for r in bench.mapping("before split"))
    assert {r.head for r in bench.MAPPING if r.written_on == "dev"} == {"Pulmonary Congestion", "Pulmonary Fibrosis", "Fibrosis"}
    with pytest.raises(ValueError, match="mapping version"):
        bench.mapping("test")


def test_uncertain_is_read_the_same_way_on_both_sides(bench):
    v = np.array([1.0, -1.0, 0.0, np.nan])
    assert bench.positive(v, "positive").tolist() == [True, True, False, False]
    assert bench.positive(v, "negative").tolist() == [True, False, False, False]
    labels = pd.DataFrame({"Edema": [-1.0, -1.0, 1.0, 0.0]}).reindex(columns=list(bench.OBSERVATIONS))
    gold = pd.DataFrame({"Edema": [-1.0, 0.0, 1.0, 1.0]}).reindex(columns=list(bench.OBSERVATIONS)).fillna(0.0)
    res = bench.evaluate(labels, gold).set_index(["uncertain_as", "observation"])
    assert res.loc[("positive", "Edema"), ["tp", "fp", "fn"]].tolist() == [2, 1, 1]
    assert res.loc[("negative", "Edema"), ["tp", "fp", "fn"]].tolist() == [1, 0, 1]
