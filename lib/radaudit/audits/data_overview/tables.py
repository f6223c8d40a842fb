"""The data overview's tables: counts, sex, age, report length, label prevalence, RadPref ratings, examples (95%
bootstrap CIs)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from radaudit.audits.data_overview.data import report_datasets, resampling_units
from radaudit.stats import bootstrap_ci, column_mean, paired_bootstrap
from radaudit.tables import format_ci

log = logging.getLogger(__name__)


SEX_ORDER = ["F", "M", "O", "not stated"]


#: A mean over fewer records than this is flagged in the tables and withheld from the headline findings: a mean of
#: a dozen ages describes a dozen patients, not the dataset.
MIN_N_MEAN = 30


# ----------------------------------------------------------------------------- tables

def counts_table(data: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset: rows, patients, and how many rows have each field."""
    rows = []
    for name, df in report_datasets(data).items():
        rows.append({
            "dataset": name,
            "studies": len(df),
            "patients": int(df["patient_id"].nunique()) if df["patient_id"].notna().any() else pd.NA,
            "with findings": int(df["findings"].notna().sum()),
            "with impression": int(df["impression"].notna().sum()),
            "with indication": int(df["indication"].notna().sum()),
            "with sex": int(df["sex"].notna().sum()),
            "with age": int(df["age"].notna().sum()),
            "with image path": int(df["image_path"].notna().sum()),
        })
    return pd.DataFrame(rows)


def sex_table(data: dict[str, pd.DataFrame], *, n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """Share of rows per sex category (F, M, O, not stated) with bootstrap CIs, per dataset: ``share`` over all
    records, and ``share_of_stated`` over the ``n_stated`` records that state a sex (the honest headline where
    many records do not: IU X-ray parses sex from the indication, so most of its records state none).

    The shares of one dataset are bootstrapped jointly (the same resampled units for every category).
    """
    out = []
    for name, df in report_datasets(data).items():
        sex = df["sex"].fillna("not stated").astype(str).to_numpy()
        cats = [c for c in SEX_ORDER if (sex == c).any()]
        units, unit_name = resampling_units(df)
        frame = pd.DataFrame({c: sex == c for c in cats})
        stats = {c: column_mean(c) for c in cats}  # shares: means of indicators, bootstrapped in closed form
        res = paired_bootstrap(frame, stats, units=units, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
        stated = sex != "not stated"
        of_stated = {}
        stated_cats = [c for c in cats if c != "not stated"]
        if stated.sum() >= 2 and stated_cats:
            sub = frame.loc[stated, stated_cats].reset_index(drop=True)
            of_stated = {r.metric: r for r in paired_bootstrap(
                sub, {c: column_mean(c) for c in stated_cats}, units=units[stated], n_bootstrap=n_bootstrap,
                confidence=confidence, seed=seed).itertuples()}
        for r in res.itertuples():
            s = of_stated.get(r.metric)
            out.append({"dataset": name, "sex": r.metric, "n": int((sex == r.metric).sum()),
                        "share": r.estimate, "low": r.low, "high": r.high, "n_stated": int(stated.sum()),
                        "share_of_stated": s.estimate if s is not None else np.nan,
                        "stated_low": s.low if s is not None else np.nan,
                        "stated_high": s.high if s is not None else np.nan, "unit": unit_name})
    t = pd.DataFrame(out)
    if len(t):
        t["share [95% CI]"] = [format_ci(e, lo, hi) for e, lo, hi in zip(t["share"], t["low"], t["high"])]
        t["share of stated [95% CI]"] = ["" if pd.isna(e) else format_ci(e, lo, hi)
                                         for e, lo, hi in zip(t["share_of_stated"], t["stated_low"], t["stated_high"])]
    return t


def _summary_with_ci(values: pd.Series, units: np.ndarray, *, n_bootstrap: int, confidence: float, seed: int) -> dict:
    v = values.to_numpy(dtype=float)
    ci = bootstrap_ci(pd.DataFrame({"value": v}), column_mean("value"), units=units, n_bootstrap=n_bootstrap,
                      confidence=confidence, seed=seed)
    return {
        "n": len(v), "mean": ci.estimate, "low": ci.low, "high": ci.high,
        "mean [95% CI]": format_ci(ci.estimate, ci.low, ci.high, digits=1),
        "median": float(np.median(v)), "q1": float(np.quantile(v, 0.25)), "q3": float(np.quantile(v, 0.75)),
        "min": float(v.min()), "max": float(v.max()),
        "flag": f"few records (n < {MIN_N_MEAN})" if len(v) < MIN_N_MEAN else "",
    }


def age_table(data: dict[str, pd.DataFrame], *, n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """Age in years (rows with a stated age): mean with bootstrap CI, median, quartiles, range."""
    out = []
    for name, df in report_datasets(data).items():
        known = df[df["age"].notna()]
        if len(known) < 2:
            continue
        units, unit_name = resampling_units(known)
        out.append({"dataset": name, **_summary_with_ci(known["age"].astype(float), units, n_bootstrap=n_bootstrap,
                                                         confidence=confidence, seed=seed), "unit": unit_name})
    return pd.DataFrame(out)


def length_table(lengths: pd.DataFrame, *, n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """Words per report by dataset and group: mean with bootstrap CI, median and quartiles."""
    out = []
    for (name, group), sub in lengths.groupby(["dataset", "group"], sort=False):
        if len(sub) < 2:
            continue
        units, unit_name = resampling_units(sub)
        out.append({"dataset": name, "group": group, **_summary_with_ci(sub["words"].astype(float), units,
                    n_bootstrap=n_bootstrap, confidence=confidence, seed=seed), "unit": unit_name})
    return pd.DataFrame(out)


def label_prevalence(data: dict[str, pd.DataFrame], *, top_k: int, n_bootstrap: int, confidence: float,
                     seed: int) -> pd.DataFrame:
    """Prevalence of each dataset's own labels (the ``labels`` list column), top ``top_k`` per dataset.

    The denominator is the rows that carry a label list (an empty list counts: labelled, no label);
    rows whose ``labels`` is missing were not labelled by the source and are left out.
    """
    out = []
    for name, df in report_datasets(data).items():
        if "labels" not in df:
            continue
        labelled = df["labels"].apply(lambda x: isinstance(x, (list, tuple, np.ndarray)))
        df = df[labelled]  # rows the source left unlabelled are not in the denominator
        labels = df["labels"].apply(list)
        counts = pd.Series([lab for labs in labels for lab in set(labs)]).value_counts()
        if counts.empty:
            continue
        top = list(counts.index[:top_k])
        frame = pd.DataFrame({lab: labels.apply(lambda labs, lab=lab: lab in labs) for lab in top})
        units, unit_name = resampling_units(df)
        stats = {lab: column_mean(lab) for lab in top}
        res = paired_bootstrap(frame, stats, units=units, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
        for r in res.itertuples():
            out.append({"dataset": name, "label": r.metric, "n": int(counts[r.metric]), "prevalence": r.estimate,
                        "low": r.low, "high": r.high, "unit": unit_name})
    t = pd.DataFrame(out)
    if len(t):
        t["prevalence [95% CI]"] = [format_ci(e, lo, hi, digits=3)
                                    for e, lo, hi in zip(t["prevalence"], t["low"], t["high"])]
    return t


def rating_table(annotations: pd.DataFrame, *, n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """RadPref: mean 1–5 rating and mean error counts per candidate source, bootstrapped over cases."""
    cols = {"rating_1to5": "rating (1-5)", "n_false_findings": "false findings", "n_missing_findings": "missing findings",
            "n_attribute_error_findings": "attribute errors"}
    out = []
    for src, sub in annotations.groupby("candidate_source"):
        units = sub["study_id"].to_numpy(dtype=object)
        stats = {label: (lambda d, c=c: float(d[c].astype(float).mean())) for c, label in cols.items()}
        res = paired_bootstrap(sub[list(cols)].reset_index(drop=True), stats, units=units,
                               n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
        for r in res.itertuples():
            out.append({"candidate source": src, "measure": r.metric, "mean": r.estimate, "low": r.low, "high": r.high,
                        "mean [95% CI]": format_ci(r.estimate, r.low, r.high), "cases": sub["study_id"].nunique(),
                        "raters": sub["rater"].nunique()})
    return pd.DataFrame(out)


def example_markdown(name: str, row: pd.Series) -> str:
    """One example as Markdown: identifiers, demographics, and the report sections it has."""
    head = f"**{name}** · study `{row['study_id']}`"
    demo = ", ".join(f"{k}: {row[k]}" for k in ("sex", "age", "view") if pd.notna(row.get(k)))
    lines = [head + (f" · {demo}" if demo else "")]
    for sec in ("indication", "findings", "impression", "clinical_notes", "generated_impression", "c1_report", "c2_report"):
        val = row.get(sec)
        if isinstance(val, str) and val.strip():
            label = {"c1_report": f"candidate 1 ({row.get('c1_source')})",
                     "c2_report": f"candidate 2 ({row.get('c2_source')})",
                     "generated_impression": "generated impression"}.get(sec, sec)
            lines.append(f"- *{label}*: {' '.join(val.split())}")
    labels = row.get("labels")
    if isinstance(labels, (list, tuple)) and labels:
        lines.append(f"- *labels*: {', '.join(map(str, labels))}")
    if isinstance(row.get("license"), str):
        lines.append(f"- *licence*: {row['license']}")
    return "\n".join(lines)
