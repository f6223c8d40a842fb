"""The data overview's figures, one function per figure."""

from __future__ import annotations

import logging
import os

import numpy as np
import pandas as pd

from radaudit.audits.data_overview.data import report_datasets
from radaudit.audits.data_overview.tables import SEX_ORDER
from radaudit.stats import stable_seed

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- figures

def fig_sex(sex: pd.DataFrame):
    """Share of records per sex category and dataset, with 95% CIs (horizontal bars)."""
    import matplotlib.pyplot as plt

    from radaudit.plots import SEX_PALETTE, bar_with_ci  # lazy: radaudit.plots pulls in seaborn and pyplot

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

    from radaudit.plots import SEX_PALETTE  # lazy: radaudit.plots pulls in seaborn and pyplot

    parts = [pd.DataFrame({"dataset": name, "age": df["age"].astype(float),
                           "sex": df["sex"].fillna("not stated").astype(str)})
             for name, df in report_datasets(data).items() if df["age"].notna().sum() >= 2]
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

    lengths = lengths.assign(series=[d if g == "reference" else f"{d} · {g}"
                                     for d, g in zip(lengths["dataset"], lengths["group"])])
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

    from radaudit.plots import bar_with_ci  # lazy: radaudit.plots pulls in seaborn and pyplot

    names = list(dict.fromkeys(prev["dataset"]))
    heights = [prev["dataset"].eq(n).sum() for n in names]
    fig, axes = plt.subplots(len(names), 1, figsize=(7.5, 0.32 * sum(heights) + 1.3 * len(names)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        sub = prev[prev["dataset"] == name].sort_values("prevalence", ascending=False)
        bar_with_ci(sub, x="prevalence", y="label", low="low", high="high", ax=ax, orient="h")
        ax.set_title(f"{name} (n = {len(sub) and int(round(sub['n'].iloc[0] / sub['prevalence'].iloc[0]))} records)",
                     loc="left")
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
            ax.barh([f"rater {r}" for r in raters], vals, left=left, color=cmap(k - 1), label=str(k), edgecolor="white",
                    linewidth=0.5)
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

    picks = []
    for name, df in report_datasets(data).items():
        paths = df["image_path"].dropna()
        exists = paths[[os.path.isabs(p) and os.path.exists(p) for p in paths]]
        if len(exists):
            rows = df.loc[exists.index].sample(n=min(n, len(exists)),
                                               random_state=stable_seed(seed, "image", name) % (2**32))
            picks += [(name, r) for _, r in rows.iterrows()]
    if not picks:
        return None
    fig, axes = plt.subplots(1, len(picks), figsize=(2.6 * len(picks), 3.2), squeeze=False)
    for ax, (name, r) in zip(axes[0], picks):
        with Image.open(r["image_path"]) as im:
            small = im.convert("L")
            small.thumbnail((640, 640))  # a 2.6-inch panel: full-resolution X-rays only slow the PNG/PDF down
            ax.imshow(np.asarray(small), cmap="gray")
        finding = r.get("finding")
        finding = "unlabelled" if not isinstance(finding, str) or finding.strip().lower() in ("", "todo") else finding
        view = r.get("view")
        cap = [name, f"{view if isinstance(view, str) else 'view not stated'} · {finding}"]
        lic = r.get("license")
        cap.append(f"licence: {lic if isinstance(lic, str) else 'not stated'}")
        ax.set_title("\n".join(cap), fontsize=8)
        ax.set_axis_off()
    fig.tight_layout()
    return fig
