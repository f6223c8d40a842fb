"""decoding_erasure's figures: Fig. 1 (surface vs diversity), 2a (association shift), 2c (skew sensitivity), 3 (p* sweep) and
vocabulary transitions."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.decoding_erasure.corpus import SURFACE_LABELS, CorpusResult
from radaudit.audits.decoding_erasure.tables import (
    pstar_sweep_table,
    skew_label,
    vocabulary_transitions,
)
from radaudit.errors import ParamsError
from radaudit.metrics.association import SILENCE_ERASURE
from radaudit.metrics.base import metric_label
from radaudit.plots import label_points

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# figures

CATEGORY_COLORS: dict[str, str] = {"Erasure": "#0072B2", "New Bias": "#D55E00", "Bias Flip": "#CC79A7",
                                   "Preservation": "#009E73", "Unclassified": "#E69F00", "Stable": "#BBBBBB"}
_GROUP_WORDS = {"F": "female", "M": "male"}


def _axis_label(corpus: str, groups: Sequence[str]) -> str:
    g0, g1 = (_GROUP_WORDS.get(str(x), str(x)) for x in groups)
    return f"$z_{{{corpus}}}$  (← {g1}-associated · {g0}-associated →)"


def fig_association_shift(words_table: pd.DataFrame, top_k: int = 12, *, title: str | None = None, ax: Any = None,
                          place_labels: bool = True):
    """Figure 1: each word's association in the references (x, z_ref) vs the predictions (y, z_pred).

    The diagonal is "no change"; the grey band |z_pred − z_ref| ≤ z_crit marks where associations
    are roughly stable (a guide to the eye: whether a word is displaced is decided by its own
    z_disp, Eq. 3, which the colours show). Dotted lines at ±z_neutral mark neutrality. Colours
    are the §2.1.2 categories; blue rings mark the words the silence test calls erased (ours: most sit
    near y = 0, never written); black squares mark the words whose sex association in the references
    survives Benjamini–Hochberg over the vocabulary (column ``ref_associated``, association module item 11:
    the only words that can be erased), and their labels are bold. The legend always has the square's entry,
    with its count (0 included: then no point on the plot is a real reference association). The ``top_k``
    displaced words with the largest |z_disp| are labelled, then the silence test's erased words (blue), then
    the BH-associated words, then the most sex-associated stable words (grey italics); the labels are placed so
    that none overlaps another (:func:`radaudit.plots.label_points`) and the legend sits below the axes, off the
    points. ``place_labels=False`` leaves the labels to the caller (:func:`fig_association_shifts` places them after
    its layout is fixed).
    Positive z = associated with ``groups[0]`` (female by default), as in CAD.
    Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    need = {"word", "z_ref", "z_pred", "z_disp", "category"}
    if not need <= set(words_table.columns):
        raise ParamsError(f"words_table needs columns {sorted(need)} (a CAD table); it has {list(words_table.columns)}")
    groups = words_table.attrs.get("groups", ("F", "M"))
    z_crit = float(words_table.attrs.get("z_crit", 1.959964))
    z_neutral = float(words_table.attrs.get("z_neutral", 1.0))
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 6))
    else:
        fig = ax.figure
    x, y = words_table["z_ref"].to_numpy(float), words_table["z_pred"].to_numpy(float)
    finite = np.isfinite(x) & np.isfinite(y)
    lim = float(np.nanmax(np.abs(np.concatenate([x[finite], y[finite], [3.0]])))) * 1.1
    grid = np.array([-lim, lim])
    ax.fill_between(grid, grid - z_crit, grid + z_crit, color="#DDDDDD", alpha=0.6, lw=0,
                    label=f"stable band (|Δz| ≤ {z_crit:.2f})", zorder=0)
    ax.plot(grid, grid, color="#888888", lw=0.8, zorder=1)
    for v in (-z_neutral, z_neutral):
        ax.axvline(v, color="#AAAAAA", lw=0.6, ls=":", zorder=1)
        ax.axhline(v, color="#AAAAAA", lw=0.6, ls=":", zorder=1)
    for cat in ("Stable", "Unclassified", "Preservation", "Bias Flip", "New Bias", "Erasure"):
        m = (words_table["category"] == cat).to_numpy() & finite
        if m.any():
            ax.scatter(x[m], y[m], s=12 if cat == "Stable" else 22,
                       color="#999999" if cat == "Stable" else CATEGORY_COLORS[cat],
                       alpha=0.6 if cat == "Stable" else 0.9, label=f"{cat} ({int(m.sum())})",
                       zorder=2 if cat == "Stable" else 3, edgecolor="none")
    silent = (words_table["erased_silence"].to_numpy(bool) if "erased_silence" in words_table
              else np.zeros(len(words_table), dtype=bool))
    if (silent & finite).any():  # ours, beside the paper's: words whose rate fell in the associated group
        m = silent & finite
        ax.scatter(x[m], y[m], s=70, facecolors="none", edgecolors=CATEGORY_COLORS["Erasure"], linewidths=1.3,
                   label=f"Erasure, silence test ({int(m.sum())})", zorder=3)
    assoc = (words_table["ref_associated"].to_numpy(bool) if "ref_associated" in words_table
             else np.zeros(len(words_table), dtype=bool))
    n_assoc = int(assoc.sum())
    if (assoc & finite).any():
        ax.scatter(x[assoc & finite], y[assoc & finite], s=95, marker="s", facecolors="none", edgecolors="black",
                   linewidths=1.1, zorder=3)
    bh_label = (f"reference association survives BH ({n_assoc})" if n_assoc else
                "reference association survives BH (0: none can be erased)")
    assoc_words = set(words_table.loc[assoc, "word"].astype(str))

    def weight(word: str) -> str:
        return "bold" if word in assoc_words else "normal"

    disp = words_table[words_table["category"] != "Stable"]
    labels: list[tuple[float, float, str, dict[str, Any]]] = []  # in priority order, placed after the limits are set
    if top_k:
        top = disp.reindex(disp["z_disp"].abs().sort_values(ascending=False).index).head(top_k)
        for r in top.itertuples(index=False):
            labels.append((r.z_ref, r.z_pred, r.word, {"fontweight": weight(r.word)}))
        n_labels = len(top)
        done = set(top["word"].astype(str))
        if n_labels < top_k and silent.any():  # then the silence test's erased words, most associated first
            extra = words_table[silent & ~words_table["word"].isin(top["word"]).to_numpy()]
            extra = extra.reindex(extra["z_ref_exact"].abs().sort_values(ascending=False).index).head(top_k - n_labels)
            for r in extra.itertuples(index=False):
                labels.append((r.z_ref, r.z_pred, r.word, {"color": CATEGORY_COLORS["Erasure"],
                                                           "fontweight": weight(r.word)}))
            n_labels += len(extra)
            done |= set(extra["word"].astype(str))
        if n_labels < top_k and n_assoc:  # then the BH-associated reference words, most associated first
            extra = words_table[assoc & finite & ~words_table["word"].astype(str).isin(done).to_numpy()]
            extra = extra.reindex(extra["z_ref"].abs().sort_values(ascending=False).index).head(top_k - n_labels)
            for r in extra.itertuples(index=False):
                labels.append((r.z_ref, r.z_pred, r.word, {"fontweight": "bold"}))
            n_labels += len(extra)
            done |= set(extra["word"].astype(str))
        if n_labels < top_k:  # fill with the most sex-associated stable words, in grey: which words these are
            stable = words_table[(words_table["category"] == "Stable").to_numpy() & ~silent
                                 & ~words_table["word"].astype(str).isin(done).to_numpy()]
            strength = np.maximum(stable["z_ref"].abs(), stable["z_pred"].abs())
            for r in (stable.reindex(strength.sort_values(ascending=False).index)
                      .head(top_k - n_labels).itertuples(index=False)):
                labels.append((r.z_ref, r.z_pred, r.word, {"color": "#555555", "style": "italic",
                                                           "fontweight": weight(r.word)}))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    if place_labels:  # no two labels overlap, none covers a point
        label_points(ax, [item for item in labels if np.isfinite(item[0]) and np.isfinite(item[1])],
                     avoid=np.column_stack([x[finite], y[finite]]))
    else:
        ax._radaudit_labels = labels  # placed by fig_association_shifts once the layout is final
    ax.set_xlabel(_axis_label("ref", groups))
    ax.set_ylabel(_axis_label("pred", groups))
    if disp.empty and not silent.any():
        title = (f"{title}\n" if title else "") + "no word displaced or erased at this p*"
    if title:
        ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()  # the legend's (the word labels are drawn above)
    handles.append(Line2D([], [], marker="s", ls="none", markerfacecolor="none", markeredgecolor="black",
                          markersize=8))
    labels.append(bh_label)
    # below the axes, never over the points and their word labels
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=1, frameon=False)
    return fig


def fig_association_shifts(tables: dict[str, pd.DataFrame], top_k: int = 12, *, panel_in: float = 4.6):
    """Figure 1 for several corpora side by side (the notebook shows the first and the last strategy): one
    :func:`fig_association_shift` panel each, ``panel_in`` inches square, legends below. The layout is fixed first
    (``tight_layout``), then the word labels are placed (:func:`radaudit.plots.label_points`), so no later layout
    step moves the points from under their labels."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection

    n = max(1, len(tables))
    fig, axes = plt.subplots(1, n, figsize=(panel_in * n + 0.6, panel_in + 2.2), squeeze=False)
    for ax, (name, table) in zip(axes[0], tables.items()):
        fig_association_shift(table, top_k, title=name, ax=ax, place_labels=False)
    fig.tight_layout()
    for ax in axes[0]:
        labels = getattr(ax, "_radaudit_labels", [])
        avoid = np.concatenate([np.asarray(o.get_offsets(), dtype=float).reshape(-1, 2) for o in ax.collections
                                if isinstance(o, PathCollection)] or [np.empty((0, 2))])  # the scattered words
        label_points(ax, [item for item in labels if np.isfinite(item[0]) and np.isfinite(item[1])], avoid=avoid)
    return fig


PANEL_TITLES: dict[str, str] = {"Erasure": "Erasure (paper's test)", SILENCE_ERASURE: "Erasure (silence test)"}


def fig_pstar_sweep(results: Sequence[CorpusResult], p_grid: Sequence[float],
                    categories: Sequence[str] = ("Erasure", SILENCE_ERASURE, "New Bias", "Bias Flip")):
    """Figure 3: words per category for each corpus as p* sweeps (log x axis); one panel per category.

    Lines that do not cross mean the ranking of the corpora is preserved across thresholds (the
    paper's claim). The counts are :func:`pstar_sweep_table`'s; the paper's Erasure and the silence
    test's are side by side. A category with no word at any p* keeps its lines on zero (0 is the count:
    for the paper's test on a collapsed model it is the finding) and says so in its panel ("n/a (no word in
    this category ...)": there is nothing to rank). Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    table = pstar_sweep_table(results, p_grid)
    fig, axes = plt.subplots(1, len(categories), figsize=(4 * len(categories), 3.6), sharex=True, squeeze=False)
    for ax, cat in zip(axes[0], categories):
        sub = table[table["category"] == cat]
        for name, part in sub.groupby("corpus", sort=False):
            ax.plot(part["p_star"], part["count"], marker="o", ms=3, label=name)
        ax.set_xscale("log")
        ax.set_title(PANEL_TITLES.get(cat, cat))
        ax.set_xlabel("$p^\\star$ (BH-adjusted)")
        ax.set_ylabel("words (#)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.2, max(3, int(sub["count"].max()) + 1) if len(sub) else 3)  # a line on zero stays visible
        if not len(sub) or sub["count"].max() == 0:
            ax.text(0.5, 0.5, "n/a (no word in this category\nat any $p^\\star$ of the grid:\nevery corpus counts 0)",
                    transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#555555",
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    drawn = [ax for ax in axes[0] if ax.lines]
    if drawn:
        drawn[-1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def fig_surface_vs_diversity(results: Sequence[CorpusResult], metric: str | None = None):
    """Figure 2a analog: one surface-similarity metric per corpus (bar + 95% CI), template diversity annotated.

    ``metric`` is a surface row (``"bertscore"``, ``"rougeL"``, ...; default the first one the
    first corpus has). Each bar is labelled with the corpus's template diversity (% unique reports),
    so a high score bought by template collapse is visible. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    if not results:
        raise ParamsError("fig_surface_vs_diversity needs at least one CorpusResult")
    if metric is None:
        if results[0].surface.empty:
            raise ParamsError(f"corpus {results[0].name!r} has no surface metric to plot")
        metric = str(results[0].surface["metric"].iloc[0])
    names, est, lo, hi, tdiv = [], [], [], [], []
    for r in results:
        row = r.surface[r.surface["metric"] == metric]
        if row.empty:
            raise ParamsError(f"corpus {r.name!r} has no surface metric {metric!r} (has {r.surface['metric'].tolist()})")
        names.append(r.name)
        est.append(float(row["estimate"].iloc[0]))
        lo.append(float(row["low"].iloc[0]))
        hi.append(float(row["high"].iloc[0]))
        td = r.diversity_pred.set_index("metric")["estimate"].get("template_diversity", math.nan)
        tdiv.append(float(td))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 1), 3.8))
    pos = np.arange(len(names))
    e = np.asarray(est)
    yerr = np.vstack([e - np.asarray(lo), np.asarray(hi) - e])
    yerr = np.where(np.isfinite(yerr), np.clip(yerr, 0, None), 0)
    ax.bar(pos, e, color="#56B4E9", edgecolor="#0072B2")
    ax.errorbar(pos, e, yerr=yerr, fmt="none", ecolor="black", capsize=3, lw=1)
    for p, v, h, td in zip(pos, e, np.asarray(hi), tdiv):
        top = h if np.isfinite(h) else v
        ax.annotate("n/a" if not np.isfinite(td) else f"{100 * td:.1f}% unique", (p, top), xytext=(0, 4),
                    textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(pos, names, rotation=20, ha="right")
    ax.set_ylabel(f"{metric_label(metric, SURFACE_LABELS)} (95% CI)")
    ax.set_ylim(0, max(1.0, float(np.nanmax(np.asarray(hi, dtype=float))) * 1.15 if np.isfinite(hi).any() else 1.0))
    ax.set_title("Surface similarity vs template diversity")
    fig.tight_layout()
    return fig


def fig_vocabulary_transitions(results: Sequence[CorpusResult]):
    """Figure 2b: per corpus, one bar of the reference vocabulary split into retained / lost, and the
    emergent words (never in the references) stacked beyond it; :func:`vocabulary_transitions`'s counts."""
    import matplotlib.pyplot as plt

    t = vocabulary_transitions(results)
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(t) + 2.0))
    pos = np.arange(len(t))[::-1]
    ax.barh(pos, t["retained"], color="#009E73", label="retained (in references and predictions)")
    ax.barh(pos, t["lost"], left=t["retained"], color="#BBBBBB", label="lost (references only)")
    ax.barh(pos, t["emergent"], left=t["retained"] + t["lost"], color="#D55E00", label="emergent (predictions only)")
    for p, r in zip(pos, t.itertuples(index=False)):
        ax.annotate(f"{r.pred_vocab} words used; {r.retained} of the {r.ref_vocab} reference words kept",
                    (r.ref_vocab + r.emergent, p),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(pos, t["corpus"])
    ax.set_xlabel("distinct words (stop words removed)")
    ax.set_xlim(0, float((t["ref_vocab"] + t["emergent"]).max()) * 1.75 + 1)
    ax.set_title("Vocabulary kept, lost and invented per decoding strategy")
    ax.grid(axis="y", visible=False)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def fig_skew_sensitivity(table: pd.DataFrame, surface_metric: str | None = None):
    """Figure 2c: ΔWAE_pred (95% CI) per training skew, one line per strategy; beside it a conventional
    metric (default the first surface metric in ``table``) to show it stays flat. ``table`` is
    :func:`skew_table`'s. Returns the Figure."""
    import matplotlib.pyplot as plt

    if table.empty:
        raise ParamsError("fig_skew_sensitivity: the skew table is empty (no skews were run)")
    surf = table[table["section"] == "Surface Level Similarity"]
    if surface_metric is None and not surf.empty:
        surface_metric = str(surf["metric"].iloc[0])
    panels = [("ΔWAE (pred)", "ΔWAE$_{pred}$ = WAE$_F$ − WAE$_M$ (95% CI)")]
    if surface_metric:
        panels.append((surface_metric, f"{surface_metric} (95% CI)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    skews = sorted(table["skew"].unique(), reverse=True)
    xpos = {s: i for i, s in enumerate(skews)}
    strategies = list(dict.fromkeys(table["strategy"]))
    for ax, (metric, ylabel) in zip(axes[0], panels):
        sub = table[table["metric"] == metric]
        for j, strat in enumerate(strategies):
            part = sub[sub["strategy"] == strat].sort_values("skew", ascending=False)
            x = np.array([xpos[s] for s in part["skew"]]) + (j - (len(strategies) - 1) / 2) * 0.08
            e = part["estimate"].to_numpy(float)
            err = np.vstack([e - part["low"].to_numpy(float), part["high"].to_numpy(float) - e])
            err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
            ax.errorbar(x, e, yerr=err, marker="o", ms=5, capsize=3, lw=1.2, label=strat)
        if metric == "ΔWAE (pred)":
            ax.axhline(0, color="#888888", lw=0.8, ls="--")
        ax.set_xticks(range(len(skews)), [skew_label(s) for s in skews])
        ax.set_xlabel("training data (male share)")
        ax.set_ylabel(ylabel)
    axes[0][0].set_title("ΔWAE$_{pred}$ by training skew")
    if len(panels) > 1:
        axes[0][1].set_title(f"{surface_metric} by training skew")
    axes[0][0].legend(fontsize=8, title="decoding", title_fontsize=8)
    fig.tight_layout()
    return fig
