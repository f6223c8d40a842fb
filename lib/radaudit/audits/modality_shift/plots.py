"""Figures of Selective Modality Shifting, each computed from the long results table (or, for Fig. 4,
the attention tables of :func:`radaudit.audits.modality_shift.conditions.attention_table`) — never from typed-in
numbers (the anchor's notebooks plot "sample data (replace with your actual computed values)").

* :func:`plot_metric_bars` — paper Fig. 2a/b: metric bars per model x condition with bootstrap CIs;
* :func:`plot_nfr_heatmap` — Fig. 2c/d: NFR (paper formula) and NFR over base-correct, model x shift;
* :func:`plot_ece_bars`, :func:`plot_reliability` — Fig. 3a/b and 3c/d;
* :func:`plot_attention_shares`, :func:`plot_text_attention` — Fig. 4;
* :func:`plot_layer_shares`, :func:`plot_patch_heatmaps` — ours: the answer token's attention by
  modality per layer, and over the image patches overlaid on the X-ray.

Each function returns a matplotlib Figure; save it with :func:`radaudit.plots.save_figure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import (
    ALL_CONDITIONS,
    CONDITION_LABELS,
    CONDITIONS,
)
from radaudit.audits.modality_shift.tables import ece_table, metrics_table, nfr_table, reliability_table
from radaudit.errors import ParamsError
from radaudit.models.vlm import load_image
from radaudit.plots import PALETTE, bar_with_ci

__all__ = ["CONDITION_COLORS", "model_view", "plot_attention_shares", "plot_ece_bars", "plot_layer_shares",
           "plot_metric_bars", "plot_nfr_heatmap", "plot_patch_heatmaps", "plot_reliability", "plot_text_attention"]

#: A distinct colour for every condition, No Shift in blue as in the paper's Fig. 2: the paper's conditions
#: and No Input take the first six Okabe-Ito colours; the marked conditions (the positive control) the other
#: two (black, yellow), grey and indigo, so a marked bar is never mistaken for its natural twin; the same-label
#: controls two colours of Paul Tol's muted scheme (wine, teal), also colour-blind safe.
CONDITION_COLORS: dict[str, str] = {CONDITION_LABELS[c]: PALETTE[i] for i, c in enumerate(CONDITIONS)}
CONDITION_COLORS.update({CONDITION_LABELS[c]: colour for c, colour in zip(
    ("marked_no_shift", "marked_image_shift", "marked_only_image", "marked_same_label_image_shift",
     "same_label_image_shift", "same_label_text_shift"),
    (PALETTE[7], PALETTE[6], "#999999", "#332288", "#882255", "#44AA99"))})
NFR_LABELS = {"nfr": "NFR (paper: flips / all N)", "nfr_base_correct": "NFR over base-correct (flips / base-correct)"}


#: The widest a figure is drawn, in inches: a report shows figures at most 1052 px wide, and a 150-dpi PNG wider
#: than ~11 in is shrunk below its print size there (radaudit.plots.small_text), so its 8-pt text stops being 8 pt.
MAX_WIDTH_IN = 10.5


def _subplots(n: int, width: float = 5.0, height: float = 3.6, sharey: bool = False,
              ncols: int | None = None) -> tuple[Any, list[Any]]:
    """``n`` panels of ``width`` x ``height`` inches, wrapped into rows of ``ncols`` (default: as many as fit in
    :data:`MAX_WIDTH_IN`, at least one); the grid's unused cells are hidden. Returns the figure and the ``n`` axes,
    row by row."""
    import matplotlib.pyplot as plt

    ncols = max(1, min(n, ncols if ncols is not None else int(MAX_WIDTH_IN // width) or 1))
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), sharey=sharey, squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _conditions_present(table: pd.DataFrame) -> list[str]:
    present = set(table["condition"])
    return [c for c in ALL_CONDITIONS if c in present] + sorted(present - set(ALL_CONDITIONS))


def _label(cond: str) -> str:
    return CONDITION_LABELS.get(cond, cond)


def plot_metric_bars(results: pd.DataFrame, metrics: Sequence[str] = ("accuracy", "f1"), *, unknown: str = "wrong",
                     n_bootstrap: int = 1000, seed: int = 0, units: str | None = None) -> Any:
    """Fig. 2a/b: one panel per metric; bars = models x conditions, error bars = 95% bootstrap CIs.

    The unknown-answer rate is printed under each panel's title, as the metrics depend on its policy. The
    accuracy panel draws the accuracy of the constant majority answer on the same samples
    (:func:`radaudit.audits.modality_shift.tables.majority_accuracy`) as a dashed line across it, with its
    value in the legend: a bar below the line is worse than always giving that answer.
    """
    table = metrics_table(results, metrics=metrics, unknown=unknown, n_bootstrap=n_bootstrap, seed=seed, units=units)
    conds = _conditions_present(table)
    table = table.assign(condition_label=table["condition"].map(_label))
    unk = results.groupby("condition")["prediction"].apply(lambda s: s.isna().mean())
    fig, axes = _subplots(len(metrics), width=min(7.0, max(4.5, 1.2 * table["model"].nunique() * len(conds) / 2)),
                          ncols=1)
    baselines: dict[int, list[Any]] = {}
    for ax, metric in zip(axes, metrics):
        sub = table[table["metric"] == metric]
        bar_with_ci(sub, x="model", y="estimate", low="low", high="high", hue="condition_label", ax=ax, orient="v",
                    hue_order=[_label(c) for c in conds], palette=CONDITION_COLORS)
        ax.set_ylim(0, 1.05)
        if metric == "accuracy" and "majority_accuracy" in sub:
            baselines[id(ax)] = [ax.axhline(value, color="0.35", ls="--", lw=1.1, zorder=0,
                                            label=f"majority answer always: {value:.3f}")
                                 for value in sorted(set(sub["majority_accuracy"].dropna().round(6)))]
        ax.set_xlabel("")
        ax.set_ylabel(metric.capitalize() if metric != "f1" else "F1")
        title = f"{ax.get_ylabel()}  (unknown answers: max {unk.max():.1%}, policy '{unknown}')"
        if baselines.get(id(ax)):
            title += "\ndashed: always the majority answer (" + ", ".join(
                f"{line.get_ydata()[0]:.3f}" for line in baselines[id(ax)]) + ")"
        ax.set_title(title, fontsize=10)
        if ax is not axes[-1] and ax.get_legend() is not None:
            ax.get_legend().remove()
    if axes[-1].get_legend() is not None:
        axes[-1].legend(title="", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_nfr_heatmap(results: pd.DataFrame, measures: Sequence[str] = ("nfr", "nfr_base_correct"), *,
                     base: str | None = None, n_bootstrap: int = 1000, seed: int = 0, units: str | None = None) -> Any:
    """Fig. 2c/d: heatmaps (rows = models, columns = shifts) of each NFR measure, annotated with the
    estimate and its CI; colour map ``YlGnBu_r`` as the anchor's ``plot_nfr_heatmap``.

    ``base``: as :func:`radaudit.audits.modality_shift.tables.nfr_table`, whose default this shares, so the figure
    and the ``fig2cd_nfr`` table show the same numbers: ``None`` compares each shift with its own unshifted input
    (No Shift; No Shift (marked) for the marked shifts), which the figure's subtitle says."""
    import seaborn as sns

    table = nfr_table(results, base=base, n_bootstrap=n_bootstrap, seed=seed, units=units)
    if table.empty:
        raise ParamsError(f"No shifted condition to compare with {base or 'its unshifted input'!r} in the results.")
    conds = _conditions_present(table)
    fig, axes = _subplots(len(measures), width=min(MAX_WIDTH_IN, 0.85 * len(conds) + 2.2),
                          height=0.75 * table["model"].nunique() + 2.6, ncols=1)
    for ax, measure in zip(axes, measures):
        sub = table[table["measure"] == measure]
        est = sub.pivot(index="model", columns="condition", values="estimate").reindex(columns=conds)
        lo = sub.pivot(index="model", columns="condition", values="low").reindex(columns=conds)
        hi = sub.pivot(index="model", columns="condition", values="high").reindex(columns=conds)
        annot = est.map(lambda v: f"{v:.2f}") + "\n[" + lo.map(lambda v: f"{v:.2f}") + ", " + hi.map(
            lambda v: f"{v:.2f}") + "]"
        sns.heatmap(est.rename(columns=_label), annot=annot.to_numpy(), fmt="", cmap="YlGnBu_r", vmin=0, vmax=1,
                    ax=ax, cbar=True, annot_kws={"fontsize": 8})
        ax.set_title(NFR_LABELS.get(measure, measure), fontsize=10)
        ax.tick_params(axis="x", labelrotation=40)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
        ax.set_xlabel("")
        ax.set_ylabel("")
    said = (f"base: {_label(base)}" if base is not None else
            "base: No Shift; the marked shifts against No Shift (marked)")
    fig.suptitle(said, fontsize=10)
    fig.tight_layout()
    return fig


def plot_ece_bars(results: pd.DataFrame, *, n_bins: int = 10, prob_column: str = "p_yes", kind: str = "positive",
                  n_bootstrap: int = 1000, seed: int = 0, units: str | None = None) -> Any:
    """Fig. 3a/b: ECE (10 uniform bins on the first-token P(yes)) per model x condition with CIs."""
    table = ece_table(results, n_bins=n_bins, prob_column=prob_column, kind=kind, n_bootstrap=n_bootstrap, seed=seed,
                      units=units)
    conds = _conditions_present(table)
    table = table.assign(condition_label=table["condition"].map(_label))
    fig, (ax,) = _subplots(1, width=max(5.0, 1.0 * table["model"].nunique() * len(conds) / 2))
    bar_with_ci(table, x="model", y="estimate", low="low", high="high", hue="condition_label", ax=ax, orient="v",
                hue_order=[_label(c) for c in conds], palette=CONDITION_COLORS)
    ax.set_ylabel(f"ECE ({n_bins} bins, {kind})")
    ax.set_xlabel("")
    if ax.get_legend() is not None:
        ax.legend(title="", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_reliability(results: pd.DataFrame, *, n_bins: int = 10, prob_column: str = "p_yes", kind: str = "positive",
                     conditions: Sequence[str] | None = None) -> Any:
    """Fig. 3c/d: reliability diagrams, one panel per condition, one line per model (non-empty bins;
    marker area proportional to the bin count), the diagonal = perfect calibration."""
    table = reliability_table(results, n_bins=n_bins, prob_column=prob_column, kind=kind)
    conds = list(conditions) if conditions is not None else _conditions_present(table)
    models = list(pd.unique(table["model"]))
    fig, axes = _subplots(len(conds), width=3.4, height=3.4, sharey=True, ncols=3)
    total = table.groupby(["model", "condition"])["n"].transform("sum")
    table = table.assign(share=table["n"] / total)
    for ax, cond in zip(axes, conds):
        lo = 0.0 if kind == "positive" else 0.5
        ax.plot([lo, 1], [lo, 1], ls="--", color="0.6", lw=1)
        for i, m in enumerate(models):
            sub = table[(table["condition"] == cond) & (table["model"] == m) & (table["n"] > 0)]
            color = PALETTE[i % len(PALETTE)]
            ax.plot(sub["conf"], sub["acc"], color=color, lw=1.2, label=m)
            ax.scatter(sub["conf"], sub["acc"], s=10 + 200 * sub["share"], color=color, zorder=3)
        ax.set_title(_label(cond), fontsize=10)
        ax.set_xlim(lo - 0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("mean P(yes)" if kind == "positive" else "mean confidence")
        ax.tick_params(labelleft=True)
    for ax in axes[::3]:
        ax.set_ylabel("fraction positive" if kind == "positive" else "accuracy")
    axes[min(2, len(axes) - 1)].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
    fig.tight_layout()
    return fig


def plot_attention_shares(shares: pd.DataFrame, *, sample_id: str | None = None, model: str | None = None) -> Any:
    """Fig. 4 (top): image vs text share of attention for each generated token, one panel per condition
    (stacked bars summing to 1), for one sample (default: the first in the table)."""
    if shares.empty:
        raise ParamsError("plot_attention_shares: the attention table is empty.")
    sample_id = sample_id if sample_id is not None else shares["sample_id"].iloc[0]
    model = model if model is not None else shares["model"].iloc[0]
    sel = shares[(shares["sample_id"] == sample_id) & (shares["model"] == model)]
    if sel.empty:
        raise ParamsError(f"No attention rows for sample {sample_id!r} and model {model!r}.")
    conds = _conditions_present(sel)
    fig, axes = _subplots(len(conds), width=min(MAX_WIDTH_IN / 2, max(3.0, 0.4 * sel["step"].max() + 1.6)),
                          height=3.6, sharey=True)
    for ax, cond in zip(axes, conds):
        sub = sel[sel["condition"] == cond].sort_values("step")
        x = np.arange(len(sub))
        ax.bar(x, sub["image_share"], color=PALETTE[0], label="image tokens")
        ax.bar(x, sub["text_share"], bottom=sub["image_share"], color=PALETTE[1], label="text tokens")
        ax.set_xticks(x, [repr(t.strip())[1:-1] or "␣" for t in sub["token"]], rotation=60, fontsize=8)
        ax.set_title(_label(cond), fontsize=10)
        ax.set_ylim(0, 1)
        ax.tick_params(labelleft=True)
        ax.set_ylabel("attention share")
    axes[0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.12), ncol=2, frameon=False, fontsize=9)
    fig.suptitle(f"{model} — sample {sample_id}", fontsize=10)
    fig.tight_layout()
    return fig


def _token_layout(sub: pd.DataFrame, width_chars: int, skip_special: bool) -> list[tuple[int, int, str, float, bool]]:
    """Word-wrap the prompt's tokens into ``(column, line, label, weight, is_image)`` boxes; the image tokens
    become one ``[image: share]`` box; weights are relative to the largest text weight."""
    text = sub[sub["modality"] == "text"]
    wmax = float(text["attention"].max()) if len(text) else 1.0
    wmax = wmax or 1.0
    boxes: list[tuple[int, int, str, float, bool]] = []
    col, line, image_done = 0, 0, False
    for r in sub.itertuples():
        if r.modality == "image":
            if image_done:
                continue
            image_done = True
            label = f"[image: {sub.loc[sub['modality'] == 'image', 'attention'].sum():.2f}]"
            weight, is_image = 0.0, True
        else:
            raw = str(r.token)
            special = raw.startswith("<") and raw.endswith(">")
            if skip_special and special:
                continue
            if "\n" in raw:  # a newline token ends the line
                col, line = 0, line + 1 if col else line
                continue
            label = raw.strip()
            if not label:
                continue
            weight, is_image = float(r.attention) / wmax, False
            if col and not raw[:1].isspace() and boxes and not boxes[-1][4]:
                col -= 1  # a word piece: glue it to the previous token, as the text reads
        if col + len(label) > width_chars and col:
            col, line = 0, line + 1
        boxes.append((col, line, label, weight, is_image))
        col += len(label) + 1
    return boxes


def plot_text_attention(tokens: pd.DataFrame, *, sample_id: str | None = None, condition: str = "no_shift",
                        steps: Sequence[int] = (0,), model: str | None = None, width_chars: int = 90,
                        skip_special: bool = True) -> Any:
    """Fig. 4 (panels): the input prompt's text tokens shaded by the attention a generated token pays
    them (blue intensity = weight / the panel's max text weight), one panel per generated step; the
    image tokens are shown as one ``[image: share]`` box. ``tokens`` is ``attention_table(...)[1]``."""
    import matplotlib.pyplot as plt

    if tokens.empty:
        raise ParamsError("plot_text_attention: the token table is empty (attention_table(..., positions=True)).")
    sample_id = sample_id if sample_id is not None else tokens["sample_id"].iloc[0]
    model = model if model is not None else tokens["model"].iloc[0]
    sel = tokens[(tokens["sample_id"] == sample_id) & (tokens["condition"] == condition) & (tokens["model"] == model)]
    if sel.empty:
        raise ParamsError(f"No token rows for sample {sample_id!r}, condition {condition!r}, model {model!r}.")
    steps = [s for s in steps if s in set(sel["step"])]
    if not steps:
        raise ParamsError(f"None of the requested steps exist; available: {sorted(set(sel['step']))}.")
    cmap = plt.get_cmap("Blues")
    panels = [_token_layout(sel[sel["step"] == step].sort_values("position"), width_chars, skip_special)
              for step in steps]
    # layout in character cells (x = column, y = line), so boxes never overlap whatever the text length:
    # 8-pt monospace is ~0.069 in per character and ~0.21 in per line
    heights = [max(1, max((ln for _, ln, *_ in boxes), default=0) + 1) for boxes in panels]
    fig, axes = plt.subplots(len(steps), 1,
                             figsize=(0.069 * width_chars + 0.4, 0.21 * sum(heights) + 0.6 * len(steps) + 0.4),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, step, boxes, n_lines in zip(axes[:, 0], steps, panels, heights):
        for col, line, label, weight, is_image in boxes:
            face = PALETTE[1] if is_image else cmap(0.05 + 0.9 * weight)
            ax.text(col, line, label, fontsize=8, va="center", ha="left", family="monospace",
                    color="white" if weight > 0.6 else "black",
                    bbox={"facecolor": face, "edgecolor": "none", "pad": 0.8})
        ax.set_xlim(-0.5, width_chars + 0.5)
        ax.set_ylim(n_lines - 0.4, -0.6)
        ax.set_axis_off()
        ax.set_title(f"generated token {step} (blue = share of the text attention, darkest = largest)", fontsize=8,
                     loc="left")
    fig.suptitle(f"{model} — sample {sample_id} — {_label(condition)}", fontsize=10)
    fig.tight_layout()
    return fig


def _answer_lookup(results: pd.DataFrame | None) -> dict[tuple[str, str, str], str]:
    if results is None:
        return {}
    return {(r.model, r.sample_id, r.condition): str(r.answer) for r in
            results[["model", "sample_id", "condition", "answer"]].itertuples(index=False)}


def model_view(image_path: str, grid: tuple[int, int], processor: Any = None) -> Any:
    """The X-ray as the model's image tokens cover it, in grayscale (PIL ``L``).

    With a processor that centre-crops (``do_center_crop``, the CLIP/LLaVA image processors), the
    largest centred crop of the grid's aspect ratio — what a shortest-edge resize + centre crop keeps;
    otherwise the whole image (processors that resize without cropping, e.g. Qwen2-VL's).
    """
    im = load_image(image_path).convert("L")
    image_processor = getattr(processor, "image_processor", processor)
    if not getattr(image_processor, "do_center_crop", False):
        return im
    w, h = im.size
    aspect = grid[1] / grid[0]
    cw, ch = (min(w, round(h * aspect)), min(h, round(w / aspect)))
    left, top = (w - cw) // 2, (h - ch) // 2
    return im.crop((left, top, left + cw, top + ch))


def _short(text: str, n: int = 22) -> str:
    """A long sample or file id cut to ``n`` characters (middle elided) so titles do not overlap."""
    return text if len(text) <= n else f"{text[: n // 2 - 1]}…{text[-(n // 2 - 1):]}"


def plot_patch_heatmaps(maps: pd.DataFrame, results: pd.DataFrame | None = None, *, processor: Any = None,
                        label_names: Sequence[str] = ("negative", "positive"), alpha: float = 0.45,
                        cmap: str = "inferno", model: str | None = None,
                        what: str = "attention of the answer token over the image patches") -> Any:
    """Where on the X-ray the answer token looks: one panel per sample (rows) x condition with an image (columns).

    Each panel shows the image the model saw in that condition (under Image Shift the partner's) in
    grayscale, as :func:`model_view` crops it, with the answer token's attention over the image patches
    (``maps`` = :func:`radaudit.audits.modality_shift.heatmap.attention_maps` ``[1]``: share of the image
    attention per patch) upsampled bilinearly and overlaid semi-transparently; the colour scale runs from
    0 to the panel's largest patch share, printed in the title with the condition, the sample's label
    (``label_names[label]``) and the model's parsed answer (from ``results``). ``what`` names the map in
    the title (:func:`radaudit.audits.modality_shift.heatmap.gradient_maps` gives the same table).
    """
    import matplotlib.pyplot as plt

    if maps.empty:
        raise ParamsError("plot_patch_heatmaps: no heatmap rows (no item with an image was traced).")
    model = model if model is not None else maps["model"].iloc[0]
    sel = maps[maps["model"] == model]
    samples = list(dict.fromkeys(sel["sample_id"]))
    conds = _conditions_present(sel)
    answers = _answer_lookup(results)
    # constrained layout reserves each row's title block (tight_layout let the swap columns' titles run into the
    # images above them)
    # one column per sample, one row per condition: the conditions are many (7 with the marked ones) and a strip of
    # them was 20 in wide, its titles shrunk to 4 pt in the report; a tall figure reads at full size
    fig, axes = plt.subplots(len(conds), len(samples), figsize=(3.3 * len(samples), 3.9 * len(conds)), squeeze=False,
                             layout="constrained")
    for j, sid in enumerate(samples):
        for i, cond in enumerate(conds):
            ax = axes[i, j]
            ax.set_axis_off()
            g = sel[(sel["sample_id"] == sid) & (sel["condition"] == cond)]
            if g.empty:
                continue
            first = g.iloc[0]
            grid = (int(first["grid_rows"]), int(first["grid_cols"]))
            heat = np.zeros(grid)
            heat[g["row"].to_numpy(int), g["col"].to_numpy(int)] = g["weight"].to_numpy(float)
            view = model_view(str(first["image_path"]), grid, processor)
            w, h = view.size
            # a panel is ~900 px wide at 300 dpi: draw (and embed in the PDF) at most 640 px of the X-ray, in the
            # model view's own coordinates, so the overlay stays aligned (full resolution made this figure 20 s)
            small = view.copy()
            small.thumbnail((640, 640))
            ax.imshow(np.asarray(small), cmap="gray", extent=(0, w, h, 0))
            top = float(heat.max())
            uniform = 1.0 / heat.size
            # colour scale 0 .. max(largest share, twice uniform): a flat map stays mid-dark, a focus is bright
            ax.imshow(heat, cmap=cmap, alpha=alpha, vmin=0.0, vmax=max(top, 2 * uniform), interpolation="bilinear",
                      extent=(0, w, h, 0))
            answer = answers.get((model, sid, cond), "?")
            swapped = cond in ("image_shift", "marked_image_shift")
            shown = f"image of {_short(str(first['image_source']))}" if swapped else "its own image"
            ax.set_title(f"{_label(cond)} · {_short(str(sid))}\nlabel: {label_names[int(first['label'])]} · answer: {answer}"
                         f"\n{shown}\nmax patch share {top:.3f} (uniform {uniform:.3f})", fontsize=9)
    fig.suptitle(f"{model}: {what}\n(bright = more)", fontsize=11)
    return fig


def plot_layer_shares(layers: pd.DataFrame, *, model: str | None = None) -> Any:
    """Attention by modality per layer: the answer token's share on all image tokens (left) and the
    mean weight per image token vs per text token (right), per condition, averaged over the traced
    samples (``layers`` = :func:`radaudit.audits.modality_shift.heatmap.attention_maps` ``[0]``)."""
    import matplotlib.pyplot as plt

    if layers.empty:
        raise ParamsError("plot_layer_shares: the layer table is empty.")
    model = model if model is not None else layers["model"].iloc[0]
    sel = layers[layers["model"] == model]
    mean = sel.groupby(["condition", "layer"], sort=False)[["image_share", "image_per_token", "text_per_token"]].mean()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for cond in _conditions_present(sel):
        g = mean.loc[cond]
        color = CONDITION_COLORS.get(_label(cond))
        left.plot(g.index, g["image_share"], marker="o", color=color, label=_label(cond))
        if g["image_per_token"].notna().any():
            right.plot(g.index, g["image_per_token"], marker="o", color=color, label=f"{_label(cond)}: image")
        right.plot(g.index, g["text_per_token"], marker="x", linestyle="--", color=color, label=f"{_label(cond)}: text")
    left.set_ylim(0, 1)
    left.set_xlabel("layer")
    left.set_ylabel("share of attention on image tokens")
    left.set_title("Answer token: image share per layer", fontsize=10)
    right.set_xlabel("layer")
    right.set_ylabel("mean attention per token")
    right.set_title("Per image token (o) vs per text token (x)", fontsize=10)
    for ax in (left, right):
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    left.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    right.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    fig.suptitle(f"{model}: attention by modality per layer ({sel['sample_id'].nunique()} samples)", fontsize=10)
    fig.tight_layout()
    return fig
