"""The data overview's headline numbers (``findings.json``): what each dataset's patients and reports look like.

The data overview reproduces no paper, so every finding is descriptive: verdict ``n/a``, no paper value, and a
note saying what the number is. Per dataset, in the order the tables list them:

- ``<dataset>_female_share``: the share of female patients among the records that **state** a sex (the
  ``share_of_stated`` column of the ``sex`` table), with its 95% bootstrap CI and the number of records it
  rests on; the note says how many records state none (IU X-ray parses sex from the indication, so most of
  its records state none: a share over all records would mostly count that gap);
- ``<dataset>_mean_age``: mean age in years over the records that state it (datasets without ages have none);
  **withheld** (value ``None``, the note says why) when fewer than :data:`MIN_N_MEAN` records state an age —
  a mean of a dozen ages describes a dozen patients, not the dataset;
- ``<dataset>_mean_report_words``: mean words of the reference report (findings + impression), withheld
  below :data:`MIN_N_MEAN` reports likewise.

Each CI is the one in the corresponding table (same resampling unit, resamples and seed), so the findings and
the tables never disagree. A sweep over the seed (``radaudit sweep data_overview --grid seed=1,2``) shows how
much of a number is the draw: on ``demo`` (every row) the values stay and only the bootstrap intervals move; on
``smoke`` (``max_rows``: the seed also draws the rows) the values move too.
"""

from __future__ import annotations

import re

import pandas as pd

from radaudit.audits.data_overview.tables import MIN_N_MEAN
from radaudit.findings import Finding

__all__ = ["MIN_N_MEAN", "headline_findings"]

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
            out.append(_female_share(ds, s))
        a = age[age["dataset"] == ds] if len(age) else age
        if len(a):
            r = a.iloc[0]
            out.append(_mean(_fid(ds, "mean_age"), f"Mean age of {ds} patients, years (where stated)", r,
                             f"records state an age (unit: {r['unit']})"))
        w = length[(length["dataset"] == ds) & (length["group"] == "reference")] if len(length) else length
        if len(w):
            r = w.iloc[0]
            out.append(_mean(_fid(ds, "mean_report_words"), f"Mean words per {ds} reference report", r,
                             f"reports, findings + impression (unit: {r['unit']})"))
    return out


def _female_share(ds: str, s: pd.DataFrame) -> Finding:
    fid, label = _fid(ds, "female_share"), f"Share of female patients among {ds} records that state a sex"
    total = int(s["n"].sum())
    n_stated = int(s["n_stated"].iloc[0]) if "n_stated" in s else total
    missing = f"{total - n_stated} of {total} records state no sex" if n_stated < total else "every record states a sex"
    if n_stated == 0:
        return Finding(fid, label, None, "n/a", note=f"{_NOTE}; no record of {ds} states a sex")
    f = s[s["sex"] == "F"]
    if not len(f):
        return Finding(fid, label, 0.0, "n/a", note=f"{_NOTE}; no record of {ds} states a female patient "
                                                    f"({n_stated} state a sex; {missing})")
    r = f.iloc[0]
    value = float(r["share_of_stated"]) if "share_of_stated" in r and pd.notna(r["share_of_stated"]) else None
    if value is None:
        return Finding(fid, label, None, "n/a", note=f"{_NOTE}; too few records state a sex ({n_stated})")
    ci = _ci(pd.Series({"low": r["stated_low"], "high": r["stated_high"]}))
    return Finding(fid, label, value, "n/a", ci=ci,
                   note=f"{_NOTE}; over the {n_stated} records that state a sex ({missing}; unit: {r['unit']})")


def _mean(fid: str, label: str, r: pd.Series, what: str) -> Finding:
    n = int(r["n"])
    if n < MIN_N_MEAN:
        return Finding(fid, label, None, "n/a", note=f"{_NOTE}; withheld: only {n} {what}, fewer than {MIN_N_MEAN} "
                                                     "(the table keeps it, flagged)")
    return Finding(fid, label, float(r["mean"]), "n/a", ci=_ci(r), note=f"{_NOTE}; {n} {what}")
