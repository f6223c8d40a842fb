"""Experiment 0 — data overview: what each dataset holds before any audit uses it.

For every dataset that is asked for and present: counts (studies, patients, sections, images),
the sex and age distribution, the distribution of report length, the prevalence of the labels the
dataset ships with, and one example. Headline numbers carry a 95% bootstrap CI.

Choices
-------
- Resampling unit: the patient where every row has a ``patient_id`` (several studies of one
  patient are not independent), otherwise the study (row). The unit is reported with each table.
- Report length is counted in whitespace-separated words of findings + impression
  (:func:`radaudit.data.schema.report_text`); for pair datasets the candidate reports are counted
  too, as their own group (e.g. ``radpref · gpt``), so generated and reference lengths can be compared.
- "Sex not stated" is a category of its own, never dropped: for IU X-ray it is most reports,
  because sex is only known where the indication states it.
- Label prevalence uses the labels each dataset ships (IU X-ray Problems terms, the COVID image
  collection's finding, MIMIC-CXR/CheXpert labels) — no labeler is run here.
"""

from __future__ import annotations

import logging
import os
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from radaudit.config import BaseParams
from radaudit.data import DATASETS, fingerprint, get_spec, is_present, load_dataset, report_text, require
from radaudit.stats import bootstrap_ci, paired_bootstrap
from radaudit.tables import format_ci

log = logging.getLogger(__name__)

DatasetName = Literal[
    "iu_xray", "iu_xray_rexrank", "chexpert_plus_valid", "chexpert_plus_pairs", "radpref",
    "radpref_annotations", "covid_cxr", "mimic_cxr", "rexgradient", "chexpert_plus", "rexval",
]
SEX_ORDER = ["F", "M", "O", "not stated"]


class Params(BaseParams):
    """Parameters of the data overview (``params/data_overview/*.yaml``)."""

    datasets: list[DatasetName] = Field(
        default_factory=lambda: ["iu_xray", "chexpert_plus_valid", "chexpert_plus_pairs", "radpref", "radpref_annotations", "covid_cxr"],
        description="Datasets to describe (registry names; `radaudit data list` shows them).",
    )
    skip_missing: bool = Field(False, description="Skip a listed dataset that is not present instead of failing.")
    dataset_paths: dict[DatasetName, str] = Field(default_factory=dict, description="Own folder per dataset (credentialed sets kept outside the data root).")
    iu_xray_format: Literal["csv", "xml"] = Field("csv", description="Read IU X-ray from the CSV pair or the original Open-i XML tarball.")
    max_rows: int | None = Field(None, ge=1, description="Random subsample per dataset (rows), for quick runs; null = all.")
    top_labels: int = Field(12, ge=1, description="Labels shown per dataset in the prevalence table and figure.")
    n_examples: int = Field(1, ge=0, description="Example reports shown per dataset.")
    show_images: bool = Field(True, description="Show an example image for datasets that ship images.")

    def preflight(self) -> None:
        if self.skip_missing:
            return
        for name in self.datasets:
            require(name, self.data_root, self.dataset_paths.get(name))


# ----------------------------------------------------------------------------- loading

def load_all(params: Params) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Load every requested dataset that is present; return them and a status table.

    ``max_rows`` subsamples rows with a seed derived from ``params.seed`` and the dataset name.
    The status table carries each dataset's :func:`~radaudit.data.fingerprint` (its data version).
    """
    from radaudit.session import stable_seed

    data, rows = {}, []
    for name in params.datasets:
        path = params.dataset_paths.get(name)
        spec = get_spec(name)
        if not is_present(name, params.data_root, path):
            if not params.skip_missing:
                require(name, params.data_root, path)  # raises with where to get it
            rows.append({"dataset": name, "title": spec.title, "access": spec.access, "status": "not present", "rows": 0,
                         "fingerprint": None})
            continue
        kwargs = {"format": params.iu_xray_format} if name == "iu_xray" else {}
        df = load_dataset(name, params.data_root, path=path, **kwargs)
        n_all = len(df)
        if params.max_rows is not None and len(df) > params.max_rows:
            df = df.sample(n=params.max_rows, random_state=stable_seed(params.seed, "subsample", name) % (2**32)).sort_index()
        data[name] = df
        rows.append({"dataset": name, "title": spec.title, "access": spec.access,
                     "status": "loaded" + (f" (subsample of {n_all})" if len(df) < n_all else ""), "rows": len(df),
                     "fingerprint": fingerprint(name, params.data_root, path)})
    return data, pd.DataFrame(rows)


def resampling_units(df: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Patient ids if every row has one, else study ids; and the unit's name."""
    if "patient_id" in df and df["patient_id"].notna().all():
        return df["patient_id"].to_numpy(dtype=object), "patient"
    return df["study_id"].to_numpy(dtype=object), "study"


def _report_like(data: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Datasets with one row per study (annotation tables excluded; unregistered names count as reports)."""
    return {k: v for k, v in data.items() if k not in DATASETS or DATASETS[k].kind != "annotations"}


# ----------------------------------------------------------------------------- tables

def counts_table(data: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset: rows, patients, and how many rows have each field."""
    rows = []
    for name, df in _report_like(data).items():
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


def sex_table(data: dict[str, pd.DataFrame], *, n_resamples: int, confidence: float, seed: int) -> pd.DataFrame:
    """Share of rows per sex category (F, M, O, not stated) with bootstrap CIs, per dataset.

    The shares of one dataset are bootstrapped jointly (the same resampled units for every category).
    """
    out = []
    for name, df in _report_like(data).items():
        sex = df["sex"].fillna("not stated").astype(str).to_numpy()
        cats = [c for c in SEX_ORDER if (sex == c).any()]
        units, unit_name = resampling_units(df)
        frame = pd.DataFrame({"sex": sex})
        stats = {c: (lambda d, c=c: float((d["sex"].to_numpy() == c).mean())) for c in cats}
        res = paired_bootstrap(frame, stats, units=units, n_resamples=n_resamples, confidence=confidence, seed=seed)
        for r in res.itertuples():
            out.append({"dataset": name, "sex": r.metric, "n": int((sex == r.metric).sum()),
                        "share": r.estimate, "low": r.low, "high": r.high, "unit": unit_name})
    t = pd.DataFrame(out)
    if len(t):
        t["share [95% CI]"] = [format_ci(e, lo, hi) for e, lo, hi in zip(t["share"], t["low"], t["high"])]
    return t


def _summary_with_ci(values: pd.Series, units: np.ndarray, *, n_resamples: int, confidence: float, seed: int) -> dict:
    v = values.to_numpy(dtype=float)
    ci = bootstrap_ci(v, np.mean, units=units, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return {
        "n": len(v), "mean": ci.estimate, "low": ci.low, "high": ci.high,
        "mean [95% CI]": format_ci(ci.estimate, ci.low, ci.high, digits=1),
        "median": float(np.median(v)), "q1": float(np.quantile(v, 0.25)), "q3": float(np.quantile(v, 0.75)),
        "min": float(v.min()), "max": float(v.max()),
    }


def age_table(data: dict[str, pd.DataFrame], *, n_resamples: int, confidence: float, seed: int) -> pd.DataFrame:
    """Age in years (rows with a stated age): mean with bootstrap CI, median, quartiles, range."""
    out = []
    for name, df in _report_like(data).items():
        known = df[df["age"].notna()]
        if len(known) < 2:
            continue
        units, unit_name = resampling_units(known)
        out.append({"dataset": name, **_summary_with_ci(known["age"].astype(float), units, n_resamples=n_resamples,
                                                         confidence=confidence, seed=seed), "unit": unit_name})
    return pd.DataFrame(out)


def word_count(text: pd.Series) -> pd.Series:
    """Whitespace-separated words per text (``<NA>`` stays missing)."""
    return text.astype("string").str.split().str.len().astype("Float64")


def report_lengths(data: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Long table: dataset, group (``reference`` or the candidate's source), study_id, words.

    Candidate reports of pair datasets are their own groups: ``generated`` for the CheXpert Plus
    pairs, the candidate's source system for RadPref.
    """
    parts = []
    for name, df in _report_like(data).items():
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
    long = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["dataset", "group", "study_id", "patient_id", "words"])
    return long[long["words"].notna() & (long["words"] > 0)].reset_index(drop=True)


def length_table(lengths: pd.DataFrame, *, n_resamples: int, confidence: float, seed: int) -> pd.DataFrame:
    """Words per report by dataset and group: mean with bootstrap CI, median and quartiles."""
    out = []
    for (name, group), sub in lengths.groupby(["dataset", "group"], sort=False):
        if len(sub) < 2:
            continue
        units, unit_name = resampling_units(sub)
        out.append({"dataset": name, "group": group, **_summary_with_ci(sub["words"].astype(float), units,
                    n_resamples=n_resamples, confidence=confidence, seed=seed), "unit": unit_name})
    return pd.DataFrame(out)


def label_prevalence(data: dict[str, pd.DataFrame], *, top_k: int, n_resamples: int, confidence: float, seed: int) -> pd.DataFrame:
    """Prevalence of each dataset's own labels (the ``labels`` list column), top ``top_k`` per dataset.

    The denominator is the rows that carry a label list (an empty list counts: labelled, no label);
    rows whose ``labels`` is missing were not labelled by the source and are left out.
    """
    out = []
    for name, df in _report_like(data).items():
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
        stats = {lab: (lambda d, lab=lab: float(d[lab].to_numpy().mean())) for lab in top}
        res = paired_bootstrap(frame, stats, units=units, n_resamples=n_resamples, confidence=confidence, seed=seed)
        for r in res.itertuples():
            out.append({"dataset": name, "label": r.metric, "n": int(counts[r.metric]), "prevalence": r.estimate,
                        "low": r.low, "high": r.high, "unit": unit_name})
    t = pd.DataFrame(out)
    if len(t):
        t["prevalence [95% CI]"] = [format_ci(e, lo, hi, digits=3) for e, lo, hi in zip(t["prevalence"], t["low"], t["high"])]
    return t


def rating_table(annotations: pd.DataFrame, *, n_resamples: int, confidence: float, seed: int) -> pd.DataFrame:
    """RadPref: mean 1–5 rating and mean error counts per candidate source, bootstrapped over cases."""
    cols = {"rating_1to5": "rating (1-5)", "n_false_findings": "false findings", "n_missing_findings": "missing findings",
            "n_attribute_error_findings": "attribute errors"}
    out = []
    for src, sub in annotations.groupby("candidate_source"):
        units = sub["study_id"].to_numpy(dtype=object)
        stats = {label: (lambda d, c=c: float(d[c].astype(float).mean())) for c, label in cols.items()}
        res = paired_bootstrap(sub[list(cols)].reset_index(drop=True), stats, units=units,
                               n_resamples=n_resamples, confidence=confidence, seed=seed)
        for r in res.itertuples():
            out.append({"candidate source": src, "measure": r.metric, "mean": r.estimate, "low": r.low, "high": r.high,
                        "mean [95% CI]": format_ci(r.estimate, r.low, r.high), "cases": sub["study_id"].nunique(),
                        "raters": sub["rater"].nunique()})
    return pd.DataFrame(out)


def pick_examples(data: dict[str, pd.DataFrame], n: int, seed: int) -> dict[str, pd.DataFrame]:
    """``n`` random rows per dataset with a report (seeded), for display."""
    from radaudit.session import stable_seed

    out = {}
    for name, df in _report_like(data).items():
        has_text = df[report_text(df).notna() | df.get("clinical_notes", pd.Series(pd.NA, index=df.index)).notna()]
        if len(has_text) and n:
            out[name] = has_text.sample(n=min(n, len(has_text)), random_state=stable_seed(seed, "example", name) % (2**32))
    return out


def example_markdown(name: str, row: pd.Series) -> str:
    """One example as Markdown: identifiers, demographics, and the report sections it has."""
    head = f"**{name}** · study `{row['study_id']}`"
    demo = ", ".join(f"{k}: {row[k]}" for k in ("sex", "age", "view") if pd.notna(row.get(k)))
    lines = [head + (f" · {demo}" if demo else "")]
    for sec in ("indication", "findings", "impression", "clinical_notes", "generated_impression", "c1_report", "c2_report"):
        val = row.get(sec)
        if isinstance(val, str) and val.strip():
            label = {"c1_report": f"candidate 1 ({row.get('c1_source')})", "c2_report": f"candidate 2 ({row.get('c2_source')})",
                     "generated_impression": "generated impression"}.get(sec, sec)
            lines.append(f"- *{label}*: {' '.join(val.split())}")
    labels = row.get("labels")
    if isinstance(labels, (list, tuple)) and labels:
        lines.append(f"- *labels*: {', '.join(map(str, labels))}")
    if isinstance(row.get("license"), str):
        lines.append(f"- *licence*: {row['license']}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- figures

def fig_sex(sex: pd.DataFrame):
    """Share of records per sex category and dataset, with 95% CIs (horizontal bars)."""
    import matplotlib.pyplot as plt

    from radaudit.plots import SEX_PALETTE, bar_with_ci

    n_ds = sex["dataset"].nunique()
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * n_ds * 2 + 1.2))
    cats = [c for c in SEX_ORDER if c in set(sex["sex"])]
    palette = {c: SEX_PALETTE.get(c, SEX_PALETTE.get("unknown")) for c in cats}
    bar_with_ci(sex, x="share", y="dataset", low="low", high="high", hue="sex", ax=ax, orient="h",
                hue_order=cats, palette=palette)
    totals = sex.groupby("dataset")["n"].sum()
    ax.set_yticks(ax.get_yticks(), [f"{t.get_text()}\n(n={totals.get(t.get_text(), 0)})" for t in ax.get_yticklabels()])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of records (95% bootstrap CI)")
    ax.set_ylabel("")
    ax.set_title("Patient sex as recorded (or stated in the report)")
    ax.legend(title="sex", loc="lower right", frameon=True)
    fig.tight_layout()
    return fig


def fig_age(data: dict[str, pd.DataFrame]):
    """Age distribution per dataset, split by sex (box plots; whiskers at 1.5 IQR)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from radaudit.plots import SEX_PALETTE

    parts = [pd.DataFrame({"dataset": name, "age": df["age"].astype(float), "sex": df["sex"].fillna("not stated").astype(str)})
             for name, df in _report_like(data).items() if df["age"].notna().sum() >= 2]
    fig, ax = plt.subplots(figsize=(7.5, 0.7 * max(len(parts), 1) + 1.5))
    if not parts:
        ax.text(0.5, 0.5, "no dataset states ages", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    long = pd.concat(parts, ignore_index=True).dropna(subset=["age"])
    cats = [c for c in SEX_ORDER if c in set(long["sex"])]
    palette = {c: SEX_PALETTE.get(c, SEX_PALETTE.get("unknown")) for c in cats}
    sns.boxplot(data=long, x="age", y="dataset", hue="sex", hue_order=cats, palette=palette, ax=ax,
                fliersize=2, linewidth=0.8)
    counts = long.groupby("dataset")["age"].size()
    ax.set_yticks(ax.get_yticks(), [f"{t.get_text()}\n(n={counts.get(t.get_text(), 0)})" for t in ax.get_yticklabels()])
    ax.set_xlabel("age (years)")
    ax.set_ylabel("")
    ax.set_title("Age at the study, by dataset and sex")
    ax.legend(title="sex", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def fig_length(lengths: pd.DataFrame):
    """Empirical CDF of words per report for each dataset and group, on a log axis."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    lengths = lengths.assign(series=[d if g == "reference" else f"{d} · {g}" for d, g in zip(lengths["dataset"], lengths["group"])])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    sns.ecdfplot(data=lengths, x="words", hue="series", ax=ax, log_scale=True, linewidth=1.6)
    ax.set_xlabel("words in findings + impression (log scale)")
    ax.set_ylabel("share of reports with at most this many words")
    ax.set_title("Report length")
    leg = ax.get_legend()
    if leg is not None:
        leg.set_title("")
    fig.tight_layout()
    return fig


def fig_labels(prev: pd.DataFrame):
    """Label prevalence with 95% CIs, one panel per dataset."""
    import matplotlib.pyplot as plt

    from radaudit.plots import bar_with_ci

    names = list(dict.fromkeys(prev["dataset"]))
    heights = [prev["dataset"].eq(n).sum() for n in names]
    fig, axes = plt.subplots(len(names), 1, figsize=(7.5, 0.32 * sum(heights) + 1.3 * len(names)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        sub = prev[prev["dataset"] == name].sort_values("prevalence", ascending=False)
        bar_with_ci(sub, x="prevalence", y="label", low="low", high="high", ax=ax, orient="h")
        ax.set_title(f"{name} (n = {len(sub) and int(round(sub['n'].iloc[0] / sub['prevalence'].iloc[0]))} records)", loc="left")
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.set_xlim(0, min(1.0, float(sub["high"].max()) * 1.15 + 0.02))
    axes[-1, 0].set_xlabel("share of records with the label (95% bootstrap CI)")
    fig.tight_layout()
    return fig


def fig_ratings(annotations: pd.DataFrame):
    """RadPref: distribution of the 1–5 rating per candidate source and rater."""
    import matplotlib.pyplot as plt

    tab = (annotations.groupby(["candidate_source", "rater"])["rating_1to5"].value_counts(normalize=True)
           .rename("share").reset_index())
    sources = sorted(tab["candidate_source"].unique())
    raters = sorted(tab["rater"].unique(), reverse=True)  # rater 1 on top
    fig, axes = plt.subplots(1, len(sources), figsize=(7.5, 3.6), sharey=True, squeeze=False)
    cmap = plt.get_cmap("RdYlGn", 5)
    for ax, src in zip(axes[0], sources):
        sub = tab[tab["candidate_source"] == src]
        left = np.zeros(len(raters))
        for k in range(1, 6):
            vals = np.array([sub[(sub["rater"] == r) & (sub["rating_1to5"] == k)]["share"].sum() for r in raters])
            ax.barh([f"rater {r}" for r in raters], vals, left=left, color=cmap(k - 1), label=str(k), edgecolor="white", linewidth=0.5)
            left += vals
        n_cases = annotations.loc[annotations["candidate_source"] == src, "study_id"].nunique()
        ax.set_title(f"candidates from {src} ({n_cases} cases)")
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of cases")
    axes[0, -1].legend(title="rating", bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.suptitle("RadPref: each radiologist's 1-5 rating of the candidate reports (5 = best)")
    fig.tight_layout()
    return fig


def fig_example_images(data: dict[str, pd.DataFrame], seed: int, n: int = 3):
    """A few images (seeded choice) from datasets that ship them, captioned with view, finding and licence."""
    import matplotlib.pyplot as plt
    from PIL import Image

    from radaudit.session import stable_seed

    picks = []
    for name, df in _report_like(data).items():
        paths = df["image_path"].dropna()
        exists = paths[[os.path.isabs(p) and os.path.exists(p) for p in paths]]
        if len(exists):
            rows = df.loc[exists.index].sample(n=min(n, len(exists)), random_state=stable_seed(seed, "image", name) % (2**32))
            picks += [(name, r) for _, r in rows.iterrows()]
    if not picks:
        return None
    fig, axes = plt.subplots(1, len(picks), figsize=(2.6 * len(picks), 3.2), squeeze=False)
    for ax, (name, r) in zip(axes[0], picks):
        with Image.open(r["image_path"]) as im:
            ax.imshow(np.asarray(im.convert("L")), cmap="gray")
        finding = r.get("finding")
        finding = "unlabelled" if not isinstance(finding, str) or finding.strip().lower() in ("", "todo") else finding
        view = r.get("view")
        cap = [name, f"{view if isinstance(view, str) else 'view not stated'} · {finding}"]
        lic = r.get("license")
        cap.append(f"licence: {lic if isinstance(lic, str) else 'not stated'}")
        ax.set_title("\n".join(cap), fontsize=7)
        ax.set_axis_off()
    fig.tight_layout()
    return fig
