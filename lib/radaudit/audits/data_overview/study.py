"""The data overview's steps as the notebook runs them, after its inputs: measure every report (words per reference
and per candidate report) and draw the examples shown.

There is no model and no expensive step here: the overview describes the data, which
:mod:`radaudit.audits.data_overview.data` loads, and :mod:`radaudit.audits.data_overview.tables` lays out:

    data, status = load_all(P)                                  # data.py
    lengths      = report_lengths(data)                         # this module: one row per report
    length       = length_table(lengths, ...)                   # tables.py: mean [95% CI], median, quartiles
    examples     = pick_examples(data, P.n_examples, P.seed)    # this module, seeded
"""

from __future__ import annotations

import pandas as pd

from radaudit.audits.data_overview.data import report_datasets
from radaudit.data import report_text
from radaudit.stats import stable_seed

__all__ = ["pick_examples", "report_lengths", "word_count"]


def word_count(text: pd.Series) -> pd.Series:
    """Whitespace-separated words per text (``<NA>`` stays missing)."""
    return text.astype("string").str.split().str.len().astype("Float64")


def report_lengths(data: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Long table: dataset, group (``reference`` or the candidate's source), study_id, words.

    Candidate reports of pair datasets are their own groups: ``generated`` for the CheXpert Plus
    pairs, the candidate's source system for RadPref.
    """
    parts = []
    for name, df in report_datasets(data).items():
        ref = word_count(report_text(df))
        parts.append(pd.DataFrame({"dataset": name, "group": "reference", "study_id": df["study_id"],
                                   "patient_id": df["patient_id"], "words": ref}))
        if "generated_impression" in df:
            parts.append(pd.DataFrame({"dataset": name, "group": "generated", "study_id": df["study_id"],
                                       "patient_id": df["patient_id"], "words": word_count(df["generated_impression"])}))
        for c in ("c1", "c2"):
            if f"{c}_report" in df:
                for src, sub in df.groupby(f"{c}_source"):
                    parts.append(pd.DataFrame({"dataset": name, "group": str(src), "study_id": sub["study_id"],
                                               "patient_id": sub["patient_id"], "words": word_count(sub[f"{c}_report"])}))
    long = (pd.concat(parts, ignore_index=True) if parts
            else pd.DataFrame(columns=["dataset", "group", "study_id", "patient_id", "words"]))
    return long[long["words"].notna() & (long["words"] > 0)].reset_index(drop=True)


def pick_examples(data: dict[str, pd.DataFrame], n: int, seed: int) -> dict[str, pd.DataFrame]:
    """``n`` random rows per dataset with a report (seeded), for display."""
    out = {}
    for name, df in report_datasets(data).items():
        has_text = df[report_text(df).notna() | df.get("clinical_notes", pd.Series(pd.NA, index=df.index)).notna()]
        if len(has_text) and n:
            out[name] = has_text.sample(n=min(n, len(has_text)), random_state=stable_seed(seed, "example", name) % (2**32))
    return out
