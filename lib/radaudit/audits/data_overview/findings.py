"""The data overview's headline numbers (``findings.json``): what each dataset's patients and reports look like.

The data overview reproduces no paper, so every finding is descriptive: verdict ``n/a``, no paper value, and a
note saying what the number is. Per dataset, in the order the tables list them:

- ``<dataset>_female_share``: the share of the dataset's records whose patient is female, over **all** records
  (records whose sex is not stated stay in the denominator, as in the ``sex`` table: for IU X-ray, where sex is
  only parsed from the indication, that share is small for that reason), with its 95% bootstrap CI;
- ``<dataset>_mean_age``: mean age in years over the records that state it (datasets without ages have none);
- ``<dataset>_mean_report_words``: mean words of the reference report (findings + impression).

Each CI is the one in the corresponding table (same resampling unit, resamples and seed), so the findings and
the tables never disagree. A sweep over the seed (``radaudit sweep data_overview --grid seed=1,2``) shows how
much of a number is the draw: on ``demo`` (every row) the values stay and only the bootstrap intervals move; on
``smoke`` (``max_rows``: the seed also draws the rows) the values move too.
"""

from __future__ import annotations

import re

import pandas as pd

from radaudit.findings import Finding

__all__ = ["headline_findings"]

_NOTE = "descriptive (the data overview tests no paper claim)"


def _fid(dataset: str, what: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", f"{dataset}_{what}".lower()).strip("_")


def _ci(row: pd.Series) -> tuple[float, float] | None:
    lo, hi = row.get("low"), row.get("high")
    return None if lo is None or hi is None or pd.isna(lo) or pd.isna(hi) else (float(lo), float(hi))


def headline_findings(sex: pd.DataFrame, age: pd.DataFrame, length: pd.DataFrame) -> list[Finding]:
    """Findings from the notebook's ``sex_table``, ``age_table`` and ``length_table`` (module docstring).

    A dataset with no female record gets a female share of 0 (it is a count, not a gap); a dataset absent from
    a table (no ages) simply has no finding of that kind.
    """
    out: list[Finding] = []
    datasets = list(dict.fromkeys(list(sex.get("dataset", [])) + list(length.get("dataset", []))))
    for ds in datasets:
        s = sex[sex["dataset"] == ds] if len(sex) else sex
        if len(s):
            f = s[s["sex"] == "F"]
            if len(f):
                r = f.iloc[0]
                out.append(Finding(_fid(ds, "female_share"), f"Share of {ds} records whose patient is female",
                                   float(r["share"]), "n/a", ci=_ci(r),
                                   note=f"{_NOTE}; records whose sex is not stated count in the denominator "
                                        f"({int(s['n'].sum())} records, unit: {r['unit']})"))
            else:
                out.append(Finding(_fid(ds, "female_share"), f"Share of {ds} records whose patient is female", 0.0,
                                   "n/a", note=f"{_NOTE}; no record of {ds} states a female patient"))
        a = age[age["dataset"] == ds] if len(age) else age
        if len(a):
            r = a.iloc[0]
            out.append(Finding(_fid(ds, "mean_age"), f"Mean age of {ds} patients, years (where stated)",
                               float(r["mean"]), "n/a", ci=_ci(r),
                               note=f"{_NOTE}; {int(r['n'])} records state an age (unit: {r['unit']})"))
        w = length[(length["dataset"] == ds) & (length["group"] == "reference")] if len(length) else length
        if len(w):
            r = w.iloc[0]
            out.append(Finding(_fid(ds, "mean_report_words"), f"Mean words per {ds} reference report",
                               float(r["mean"]), "n/a", ci=_ci(r),
                               note=f"{_NOTE}; findings + impression, {int(r['n'])} reports (unit: {r['unit']})"))
    return out
