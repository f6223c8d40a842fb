"""metric_metaeval's figures: DS/RS bars, AUROC heatmap, monotonicity, whole-report vs trimmed AUROC."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError
from radaudit.perturb.base import ASPECT_LABELS, ASPECTS
from radaudit.tables import format_number

log = logging.getLogger(__name__)


SIG_COLOR, INSIG_COLOR = "#D55E00", "#0072B2"  # Okabe–Ito vermillion (harmful) / blue (harmless)


# ----------------------------------------------------------------------------------------------
# figures


def _metric_order(long: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(long["label"]))


def fig_ds_rs(long: pd.DataFrame, auroc_tab: pd.DataFrame | None = None):
    """Figure 2: per metric, the Discriminative Score (mean on significant pairs, vermillion) and the
    Robustness Score (mean on insignificant pairs, blue), 95% CIs, joined by a line. A metric that
    separates harmful from harmless rewrites has its blue dot well right of its vermillion dot; the
    overall AUROC is printed at the right."""
    import matplotlib.pyplot as plt

    ov = long[long["column"] == "Overall"]
    if ov.empty:
        raise DataFormatError("fig_ds_rs needs the Overall rows of ds_rs_long")
    labels = _metric_order(ov)
    fig, ax = plt.subplots(figsize=(7.8, 0.42 * len(labels) + 1.6))
    y = np.arange(len(labels))[::-1]
    pos = dict(zip(labels, y))
    ds = ov[ov["score"] == "DS"].set_index("label")
    rs = ov[ov["score"] == "RS"].set_index("label")
    for lab in labels:
        if lab in ds.index and lab in rs.index:
            ax.plot([ds.at[lab, "estimate"], rs.at[lab, "estimate"]], [pos[lab]] * 2, color="#999999", lw=1.2, zorder=1)
    for part, color, name in ((ds, SIG_COLOR, "Discriminative Score: significant errors (lower = better)"),
                              (rs, INSIG_COLOR, "Robustness Score: insignificant changes (higher = better)")):
        yy = np.array([pos[lab] for lab in part.index])
        e = part["estimate"].to_numpy(float)
        err = np.vstack([e - part["low"].to_numpy(float), part["high"].to_numpy(float) - e])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.errorbar(e, yy, xerr=err, fmt="o", color=color, ms=6, capsize=2.5, lw=1.2, label=name, zorder=2)
    ax.set_yticks(y, labels)
    ax.set_xlabel("mean metric score on GT–ME pairs (× 100), 95% CI")
    lo = float(np.nanmin(ov["low"].fillna(ov["estimate"])))
    ax.set_xlim(max(0.0, lo - 5), 101)
    if auroc_tab is not None:
        au = auroc_tab[auroc_tab["aspect"] == "Overall"].set_index("label")["auroc"]
        for lab in labels:
            if lab in au.index:
                ax.annotate(f"AUROC {au[lab]:.2f}", (1.0, pos[lab]), xycoords=("axes fraction", "data"), xytext=(8, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=8, color="#333333",
                            annotation_clip=False)
    ax.set_title("Does the metric punish harmful errors more than harmless changes?", fontsize=10)
    handles, names = ax.get_legend_handles_labels()
    height = fig.get_size_inches()[1]
    fig.legend(handles, names, loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.5 / height, 1, 1))
    return fig


def fig_auroc_heatmap(auroc_tab: pd.DataFrame, *, fdr_alpha: float = 0.05):
    """AUROC per metric (rows) x aspect (columns), annotated; 0.5 (white) = cannot tell significant from
    insignificant errors, blue = ranks harmless changes above harmful errors, red = the reverse.
    Cells whose BH-adjusted p-value is above ``fdr_alpha`` are shown in grey text."""
    import matplotlib.pyplot as plt

    t = auroc_tab.copy()
    aspects = [a for a in ASPECTS if a in set(t["aspect"])] + ["Overall"]
    labels = list(dict.fromkeys(t["label"]))
    mat = (t.pivot_table(index="label", columns="aspect", values="auroc", aggfunc="first")
           .reindex(index=labels, columns=aspects))
    sig = (t.pivot_table(index="label", columns="aspect", values="separates", aggfunc="first")
           .reindex(index=labels, columns=aspects))
    padj = (t.pivot_table(index="label", columns="aspect", values="p_adj", aggfunc="first")
            .reindex(index=labels, columns=aspects))
    # at most ~11 in wide: a report shows 1052 px, and a wider 150-dpi PNG is shrunk, its cell numbers with it
    fig, ax = plt.subplots(figsize=(min(0.6 * len(aspects) + 3.2, 10.5), 0.45 * len(labels) + 2.4))
    im = ax.imshow(mat.to_numpy(float), cmap="RdBu", vmin=0, vmax=1, aspect="auto")
    for i in range(len(labels)):
        for j in range(len(aspects)):
            v = mat.iat[i, j]
            if not np.isfinite(v):
                continue
            strong = bool(padj.iat[i, j] <= fdr_alpha) if np.isfinite(padj.iat[i, j]) else False
            color = ("white" if abs(v - 0.5) > 0.3 else "black") if strong else "#777777"
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9, color=color,
                    fontweight="bold" if bool(sig.iat[i, j]) else "normal")
    ax.set_xticks(range(len(aspects)), [ASPECT_LABELS.get(a, a) for a in aspects], rotation=40, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.axvline(len(aspects) - 1.5, color="black", lw=1)
    ax.grid(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    cb.set_ticks([0, 0.5, 1])
    cb.set_ticklabels(["0: harmful\nerror higher", "0.5: coin\nflip", "1: harmless\nchange higher"], fontsize=8)
    cb.set_label("AUROC", fontsize=9)
    ax.set_title("Can the metric tell a harmful error from a harmless change?\n"
                 f"(0.5 = coin flip; bold = separates after BH at {fdr_alpha:g}; grey = not significant)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_monotonicity(mono_long: pd.DataFrame, summary: pd.DataFrame | None = None, *, ncols: int = 3):
    """Figure 4: mean score (× 100, 95% CI over reports) per severity group, one panel per metric with
    its own y-axis. Rising segments (a violated transition: the score goes *up* as errors get worse)
    are drawn in vermillion; the panel title gives Kendall τ (+1 = always falls)."""
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(mono_long["label"]))
    n = len(labels)
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.5 * nrows + 0.9), squeeze=False, sharex=True)
    tau = summary.set_index("label") if summary is not None else None
    for k, lab in enumerate(labels):
        ax = axes[k // ncols][k % ncols]
        d = mono_long[mono_long["label"] == lab].sort_values("group")
        g, e = d["group"].to_numpy(int), d["estimate"].to_numpy(float)
        lo, hi = d["low"].to_numpy(float), d["high"].to_numpy(float)
        ax.fill_between(g, np.where(np.isfinite(lo), lo, e), np.where(np.isfinite(hi), hi, e), color=INSIG_COLOR,
                        alpha=0.15, lw=0)
        for i in range(len(g) - 1):
            up = e[i + 1] > e[i]
            ax.plot(g[i:i + 2], e[i:i + 2], color=SIG_COLOR if up else INSIG_COLOR, lw=2.4 if up else 1.6)
        ax.plot(g, e, "o", color="black", ms=3.5, zorder=3)
        title = lab
        if tau is not None and lab in tau.index:
            t = tau.loc[lab]
            title += f"\nτ = {format_number(t['tau'])}, {format_number(t['violations'], 0)} rise(s)"
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(5))
        ax.tick_params(labelsize=8, labelbottom=True)
        if k + ncols >= n:  # the lowest panel of its column
            ax.set_xlabel("severity group", fontsize=9)
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle("Does the score fall as the errors get worse?\n0 stylistic · 1 minor insignificant · "
                 "2 one significant · 3 three significant · 4 contradiction\n(blue = falls as it should, "
                 "vermillion = rises; band = 95% CI over reports; score × 100)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_auroc_context(comp: pd.DataFrame):
    """Overall AUROC per metric (95% CI): insignificant pairs cut to the edited sentences as in the paper
    (open circles) vs the same rewrites in whole reports (filled); 0.5 = chance."""
    import matplotlib.pyplot as plt

    labels = comp["label"].tolist()
    y = np.arange(len(labels))[::-1]
    fig, ax = plt.subplots(figsize=(7.2, 0.38 * len(labels) + 1.9))
    for suffix, mk, face, name, dy in (
        ("paper", "o", "white", "insignificant pairs cut to the edited sentences (paper §4.2.1)", 0.14),
        ("full", "o", "#009E73", "same rewrites, whole reports for every pair", -0.14),
    ):
        e = comp[f"auroc_{suffix}"].to_numpy(float)
        err = np.vstack([e - comp[f"low_{suffix}"].to_numpy(float), comp[f"high_{suffix}"].to_numpy(float) - e])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.errorbar(e, y + dy, xerr=err, fmt=mk, mfc=face, mec="#009E73", ecolor="#009E73", ms=6, capsize=2, lw=1,
                    label=name)
    ax.axvline(0.5, color="#888888", ls="--", lw=1)
    ax.text(0.51, 0.995, "chance", transform=ax.get_xaxis_transform(), fontsize=8, color="#666666", va="top", ha="left")
    ax.set_xlim(0, 1)
    ax.set_yticks(y, labels)
    ax.set_xlabel("AUROC: P(harmless change scores higher than harmful error), 95% CI")
    ax.set_title("How much does the context design decide the verdict?", fontsize=10)
    height = fig.get_size_inches()[1]
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.55 / height, 1, 1))
    return fig
