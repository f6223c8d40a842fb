"""atomic_facts' figures: correlations, preference agreement, granular accuracy."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from radaudit.audits.atomic_facts.data import (
    INTER_RATER,
    MEAN_RATER,
    NEGATED_TARGETS,
    SYSTEM_LABELS,
    TARGETS,
)
from radaudit.audits.atomic_facts.scores import METRIC_LABELS
from radaudit.metrics.base import metric_label

log = logging.getLogger(__name__)


def fig_correlation(corr: pd.DataFrame, coefficient: str = "kendall", metrics: Sequence[str] | None = None):
    """Forest plot: one panel per radiologist judgement, one row per metric (radiologists' mean),
    the coefficient with its 95% CI; the inter-rater ceiling as a shaded band. AtomiMed rows in colour."""
    import matplotlib.pyplot as plt

    from radaudit.plots import PALETTE  # lazy: radaudit.plots pulls in seaborn and pyplot

    sub = corr[corr["coefficient"] == coefficient]
    targets = [t for t in TARGETS if t in set(sub["target"])]
    base = sub[(sub["rater"] == MEAN_RATER)]
    if metrics is not None:
        base = base[base["metric"].isin(metrics)]
    first = base[base["target"] == targets[0]].sort_values("estimate")
    order = first["metric"].tolist()
    n = first.set_index("metric")["n_candidates"]
    labels = [metric_label(m, METRIC_LABELS) + (f" (n={n[m]})" if n[m] < n.max() else "") for m in order]
    # at most ~10.5 in wide: a report shows 1052 px and shrinks a wider 150-dpi PNG, its 8-pt text with it
    fig, axes = plt.subplots(1, len(targets), figsize=(min(3.0 * len(targets) + 2.5, 10.5), 0.32 * len(order) + 1.9),
                             sharey=True, squeeze=False)
    sym = "Kendall τ" if coefficient == "kendall" else "Spearman ρ"
    for ax, t in zip(axes[0], targets):
        d = base[base["target"] == t].set_index("metric").reindex(order)
        y = np.arange(len(order))
        colors = [PALETTE[5] if m.startswith("atomimed") else PALETTE[0] for m in order]
        ax.errorbar(d["estimate"], y, xerr=[d["estimate"] - d["low"], d["high"] - d["estimate"]], fmt="none",
                    ecolor="#555555", elinewidth=1, capsize=2)
        ax.scatter(d["estimate"], y, c=colors, zorder=3, s=22)
        ceil = sub[(sub["metric"] == INTER_RATER) & (sub["target"] == t)]
        if not ceil.empty:
            c = ceil.iloc[0]
            ax.axvspan(c["low"], c["high"], color="#999999", alpha=0.2, lw=0)
            ax.axvline(c["estimate"], color="#777777", ls="--", lw=1)
        ax.axvline(0, color="black", lw=0.6)
        ax.set_yticks(y, labels)
        ax.set_title(f"vs {TARGETS[t]}\n" + ("(fewer = better)" if t in NEGATED_TARGETS else "(higher = better)"),
                     fontsize=10)
        ax.set_xlabel(f"{sym} (95% CI)")
    fig.suptitle(f"Agreement of each metric with the radiologists' mean judgement of {int(n.max())} reports ({sym}, 95% CI; "
                 "orange: AtomiMed; grey band: one radiologist vs the others)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_preference(pref: pd.DataFrame, metrics: Sequence[str] | None = None):
    """Pairwise preference: ACC (%) and MAE with 95% CIs per metric against the radiologists'
    consensus; the inter-rater ceiling dashed; 50% (a coin) dotted."""
    import matplotlib.pyplot as plt

    from radaudit.plots import PALETTE  # lazy: radaudit.plots pulls in seaborn and pyplot

    base = pref[pref["rater"] == MEAN_RATER]
    if metrics is not None:
        base = base[base["metric"].isin(metrics)]
    acc = base[base["statistic"] == "acc"].sort_values("estimate")
    order = acc["metric"].tolist()
    npairs = acc.set_index("metric")["n_strict_pairs"]
    labels = [metric_label(m, METRIC_LABELS) + (f" ({npairs[m]} pairs)" if npairs[m] < npairs.max() else "") for m in order]
    ceil = pref[pref["metric"] == INTER_RATER].set_index("statistic")
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.32 * len(order) + 1.6), sharey=True)
    for ax, stat, scale, xl in ((axes[0], "acc", 100, "ranking accuracy ACC (%)"),
                                (axes[1], "mae", 1, "MAE of the preference (lower is better)")):
        d = base[base["statistic"] == stat].set_index("metric").reindex(order)
        y = np.arange(len(order))
        colors = [PALETTE[5] if m.startswith("atomimed") else PALETTE[0] for m in order]
        ax.errorbar(d["estimate"] * scale, y, xerr=[(d["estimate"] - d["low"]) * scale, (d["high"] - d["estimate"]) * scale],
                    fmt="none", ecolor="#555555", elinewidth=1, capsize=2)
        ax.scatter(d["estimate"] * scale, y, c=colors, zorder=3, s=22)
        if stat in ceil.index:
            c = ceil.loc[stat]
            ax.axvspan(c["low"] * scale, c["high"] * scale, color="#999999", alpha=0.2, lw=0)
            ax.axvline(c["estimate"] * scale, color="#777777", ls="--", lw=1)
        if stat == "acc":
            ax.axvline(50, color="black", ls=":", lw=0.8)
        ax.set_yticks(y, labels)
        ax.set_xlabel(xl)
    n = int(acc["n_strict_pairs"].max()) if not acc.empty else 0
    fig.suptitle(f"Does the metric prefer the report the radiologists prefer? {n} candidate pairs with a consensus "
                 "(95% CI; orange: AtomiMed; grey band: one radiologist vs the others; dotted: a coin)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_granular(attr: pd.DataFrame, dis: pd.DataFrame, min_questions: int = 5):
    """Fig. 4 analog: (a) attribute-level F1 (%) per facet, (b) disease-level F1 (%) per anatomical
    system, one row per system compared; each cell shows F1 and the number of questions; cells
    with fewer than ``min_questions`` questions are left blank (grey) and show only their count. A
    panel without any question (an empty trace) says so instead of drawing a heatmap."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(2, 1, figsize=(min(10.5, max(7.5, 1.0 * dis["category"].nunique() + 2.5)),
                                            1.3 * attr["system"].nunique() + 1.3 * dis["system"].nunique() + 3.0))
    for ax, tab, title in ((axes[0], attr, "(a) attribute level: F1 (%) per facet, over findings both reports state"),
                           (axes[1], dis, "(b) disease level: F1 (%) per anatomical system (n = questions; "
                                          f"blank: fewer than {min_questions})")):
        if tab.empty or tab["n"].sum() == 0:
            ax.text(0.5, 0.5, "no questions", ha="center", va="center", fontsize=11, color="#666666",
                    transform=ax.transAxes)
            ax.set_axis_off()
            ax.set_title(title, fontsize=10, loc="left")
            continue
        val = tab.pivot(index="system", columns="category", values="f1") * 100
        n = tab.pivot(index="system", columns="category", values="n")
        cols = [c for c in dict.fromkeys(tab["category"]) if n[c].sum() > 0]
        rows = list(dict.fromkeys(tab["system"]))
        val, n = val.reindex(index=rows, columns=cols), n.reindex(index=rows, columns=cols)
        masked = val.where(n >= min_questions)
        annot = masked.copy().astype(object)
        for i in masked.index:
            for c in masked.columns:
                v = masked.loc[i, c]
                annot.loc[i, c] = (f"n={int(n.loc[i, c])}" if pd.isna(v) else f"{v:.0f}\nn={int(n.loc[i, c])}")
        masked.index = [SYSTEM_LABELS.get(str(i), str(i)) for i in masked.index]
        ax.set_facecolor("#f0f0f0")
        sns.heatmap(masked, ax=ax, vmin=0, vmax=100, cmap="viridis", annot=annot, fmt="", cbar_kws={"label": "F1 (%)"},
                    annot_kws={"fontsize": 8}, linewidths=0.5, linecolor="white")
        for yi, i in enumerate(val.index):  # seaborn does not annotate blank cells: say how few questions there were
            for xi, c in enumerate(val.columns):
                if pd.isna(masked.iloc[yi, xi]):
                    ax.text(xi + 0.5, yi + 0.5, f"n={int(n.loc[i, c])}", ha="center", va="center", fontsize=8,
                            color="#666666")
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=30)
        for lab in ax.get_xticklabels():
            lab.set_horizontalalignment("right")
        ax.tick_params(axis="y", rotation=0)
    fig.tight_layout()
    return fig
