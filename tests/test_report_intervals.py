"""A 95% CI beside every estimate in every report table (issue 42; DESIGN.md): the rule that says which columns are
estimates (radaudit.tables.missing_intervals) by hand-made tables, and its run over every table every experiment's
smoke run writes, with the lab's declared exceptions (radaudit.tables.NO_INTERVAL)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from radaudit.experiments import EXPERIMENTS
from radaudit.tables import (
    NO_INTERVAL,
    ci_triples,
    declared_no_interval,
    for_reader,
    is_estimate_column,
    missing_intervals,
    missing_intervals_in_run,
)


def _auroc_table() -> pd.DataFrame:
    return pd.DataFrame({"model": ["a", "b"], "auroc": [0.712, 0.650], "n": [120, 80], "p_adj": [0.003, 0.2]})


def test_an_estimate_without_an_interval_is_named_and_passes_once_the_interval_is_added():
    table = _auroc_table()
    assert missing_intervals(table) == ["auroc"]  # n is a count, p_adj a p-value: no interval needed
    with_ci = table.assign(auroc_low=[0.650, 0.580], auroc_high=[0.770, 0.720])
    assert missing_intervals(with_ci) == []
    # the same two tables as a reader sees them (radaudit.tables.for_reader): text cells
    assert missing_intervals(for_reader(table)) == ["auroc"]
    assert missing_intervals(for_reader(with_ci)) == []


def test_text_cells_carry_an_interval_only_when_every_number_has_one():
    wide = pd.DataFrame({"measure": ["AUROC", "F1"], "real": ["0.70 [0.57, 0.81]", "0.66 [n/a]"],
                         "synthetic": ["0.62 [0.50, 0.71]", "0.58"]})
    assert missing_intervals(wide) == ["synthetic"]  # "0.58" is bare; "[n/a]": an interval tried and not computable
    pair = pd.DataFrame({"metric": ["WEAT (S/ES)"], "greedy": ["0.35/0.66"], "beam": ["n/a/n/a"]})
    assert missing_intervals(pair) == ["greedy"]
    assert missing_intervals(pair, descriptive_rows=["WEAT (S/ES)"]) == []  # a declared row leaves the check


def test_a_declared_column_passes_and_a_stale_declaration_fails():
    assert missing_intervals(_auroc_table(), descriptive=["auroc"]) == []
    with pytest.raises(KeyError, match="accuracy"):
        missing_intervals(_auroc_table(), descriptive=["accuracy"])


@pytest.mark.parametrize(("name", "values", "estimate"), [
    ("auroc", [0.712, 0.65], True),
    ("accuracy", [1.0, 0.0], True),          # a statistic's name: an estimate even when its values are whole
    ("mean_new_tokens", [24.3, 22.4], True),
    ("Overall", [95.15, 88.61], True),       # any name: non-integer numbers are estimates unless the name says not
    ("patients", [200.0, np.nan], False),    # whole numbers (NaN made them float): a count
    ("n_pos", [4.5], False),                 # a count by name
    ("p_adj", [0.03], False), ("diff_p_bh", [0.2], False), ("q", [0.1], False),
    ("p_yes", [0.4], True),                  # a probability, not a p-value
    ("threshold", [0.5], False), ("sigma", [1.5], False),  # settings
    ("median", [3.5], False), ("se", [0.02], False), ("q1", [2.5], False),  # spread and quantiles
    ("auroc_low", [0.6], False),             # a bound
    ("seed", [0.0, 1.0], False), ("separates", [True, False], False),
    ("auroc", [np.nan, np.nan], False),      # nothing to bound
    ("cell", ["0.712", "n/a"], True), ("cell", ["12", "1,200"], False), ("cell", ["0.70 [0.57, 0.81]"], True),
])
def test_which_columns_are_estimates(name, values, estimate):
    assert is_estimate_column(name, pd.Series(values)) is estimate


def test_bounds_named_as_a_prefix_make_a_triple():
    cols = ["metric", "auroc_paper", "low_paper", "high_paper", "p_adj_paper", "auroc_full", "low_full", "high_full"]
    assert ci_triples(cols) == [("auroc_paper", "low_paper", "high_paper"), ("auroc_full", "low_full", "high_full")]
    assert ci_triples(["auroc", "low_x", "high_x"]) == []  # "auroc" does not end with "_x": no estimate for them


def test_every_declaration_has_a_reason_and_a_target():
    for key, decls in NO_INTERVAL.items():
        experiment, _, table = key.partition("/")
        assert experiment in EXPERIMENTS and table, key
        for d in decls:
            assert d.reason.strip() and (d.columns or d.rows), (key, d)


# ------------------------------------------------------------------------------------------------ every smoke run


@pytest.mark.parametrize("experiment", [e.name for e in EXPERIMENTS.values()])
def test_every_estimate_in_every_smoke_table_has_its_interval_or_a_declared_reason(smoke_runs, experiment):
    run_dir = smoke_runs(experiment)[0].run_dir
    missing = missing_intervals_in_run(run_dir, experiment)
    assert missing == {}, (
        f"{experiment}: estimate columns without a 95% CI, table: [columns]: {missing}. Add the interval "
        "(estimate/low/high columns or 'x [lo, hi]' cells), or declare why there is none in radaudit.tables.NO_INTERVAL")
    tables = {p.stem: p for p in (run_dir / "tables").glob("*.csv")}
    for key, decls in NO_INTERVAL.items():
        if not key.startswith(experiment + "/"):
            continue
        stem = key.split("/", 1)[1]
        assert stem in tables, f"{key}: declared in NO_INTERVAL, but the smoke run writes no such table"
        table = pd.read_csv(tables[stem])
        columns, _ = declared_no_interval(key)
        required = None if columns is None else {c for d in decls if not d.optional for c in d.columns}
        assert required is None or required <= set(map(str, table.columns)), (
            f"{key}: declared columns {sorted(required - set(map(str, table.columns)))} are not in the table")
        text = {str(v) for c in table.columns if not pd.api.types.is_numeric_dtype(table[c]) for v in table[c]}
        for d in decls:  # each row declaration names a row of the table (a renamed measure leaves a stale entry)
            assert not d.rows or set(d.rows) & text, (
                f"{key}: {dataclasses.asdict(d)} names rows {list(d.rows)}, none of which is in the table")
