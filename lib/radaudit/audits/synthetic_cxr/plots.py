"""Figures of the synthetic-CXR audit (CheXGenBench, paper 004), each drawn from tidy tables or image arrays.

* :func:`plot_sample_grid` — what a radiologist looks at first: samples per generator (rows; real
  test images first), the prompt under each image;
* :func:`plot_nearest_pairs` — what "memorised" means: synthetic images beside their training
  images for the highest re-ID scores (or the smallest pixel/latent distances), with the scores;
* :func:`plot_privacy_distributions` — §2.3 / Table 3: per generator, the distribution over prompts
  of the max re-ID score (with the δ = 0.85 line and the count above it) and of the min pixel
  (and latent) distance;
* :func:`plot_fidelity_bars` — Table 1: FID/KID on both encoders, precision/recall/density/coverage;
* :func:`plot_per_label_heatmap` — Table 2: per-label FID as an annotated heatmap, NaN cells
  (too few images of that label) marked ``n<min``;
* :func:`plot_utility`, :func:`plot_roc_curves` — Table 4: per-label AUROC with CIs per training
  source against the real-data baseline, and the ROC curves behind them;
* :func:`plot_rank_scatter` — Appendix C: fidelity rank vs utility rank with Spearman's ρ;
* :func:`plot_dose_response` — the degrader at graded doses: the images, and FID/KID/precision per
  encoder against the dose (a metric that ranks damage must follow it);
* :func:`plot_reid_calibration` — the re-ID threshold calibrated on the max over seeds, and the share
  of each generator's prompts above it.

Images follow the experiment's convention: float arrays ``[N, H, W]`` in [0, 1], shown in grayscale
with a fixed ``[0, 1]`` range (no per-image contrast stretch, so a washed-out generator looks
washed out). Every function returns a matplotlib Figure; save it with :func:`radaudit.plots.save_figure`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.table4 import MACRO_ALL_LABELS, too_few_test_images
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image.ranking import HIGHER_IS_BETTER, rank_correlation
from radaudit.plots import PALETTE

if TYPE_CHECKING:  # annotation only: the plots do not run the study
    from radaudit.audits.synthetic_cxr.study import Study

__all__ = ["BASELINE_COLOR", "plot_closest_pairs", "plot_dose_response", "plot_fidelity_bars", "plot_nearest_pairs",
           "plot_per_label_heatmap", "plot_privacy_distributions", "plot_reid_calibration", "plot_rank_scatter",
           "plot_roc_curves", "plot_sample_grid", "plot_utility", "source_colors"]

#: The real-data row/baseline is drawn in black; generators take the Okabe–Ito colours in order.
BASELINE_COLOR = "#000000"
DELTA = 0.85  # paper §3.2: re-identified when the Siamese score exceeds δ = 0.85
_ARROW = {True: " (↑ better)", False: " (↓ better)"}


# --- helpers ---------------------------------------------------------------------------------------

def source_colors(sources: Sequence[str], baseline: str | None = "real") -> dict[str, str]:
    """One fixed colour per training source / generator: ``baseline`` black, the others Okabe–Ito in order."""
    others = [s for s in sources if s != baseline]
    out = {s: PALETTE[i % 7] for i, s in enumerate(others)}  # PALETTE[7] is black: kept for the baseline
    if baseline is not None and baseline in sources:
        out[baseline] = BASELINE_COLOR
    return out


MAX_WIDTH_IN = 10.5
"""The widest figure, in inches: a report shows figures at most 1052 px wide, and a 150-dpi PNG wider than ~11 in
is shrunk there, its 8-pt text below 8 pt (:func:`radaudit.plots.small_text`). Wider grids get narrower panels."""


def _subplots(nrows: int, ncols: int, width: float, height: float, **kw: Any) -> tuple[Any, np.ndarray]:
    import matplotlib.pyplot as plt

    width = min(width, MAX_WIDTH_IN / max(ncols, 1))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    return fig, axes


def _image_stack(images: Any, name: str) -> np.ndarray:
    arr = np.asarray(images) if not isinstance(images, (list, tuple)) else np.stack([np.asarray(i) for i in images])
    if arr.ndim != 3:
        raise DataFormatError(f"{name} must be an image array [N, H, W] in [0, 1]; got shape {arr.shape}.")
    return arr


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise DataFormatError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataFormatError(f"{what} has no column(s) {missing}; its columns are {list(frame.columns)}.")
    if frame.empty:
        raise DataFormatError(f"{what} is empty: nothing to plot.")


def _pick(frame: pd.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in frame.columns), None)


def _order(values: pd.Series, order: Sequence[str] | None, first: str | None = None) -> list[str]:
    present = list(pd.unique(values.astype(str)))
    if order is not None:
        unknown = [o for o in order if o not in present]
        if unknown:
            raise ParamsError(f"order names {unknown}, which are not in the table ({present}).")
        return [str(o) for o in order]
    if first is not None and first in present:
        present = [first, *[p for p in present if p != first]]
    return present


def _direction(metric: str) -> bool | None:
    key = str(metric).lower().strip()
    for cand in (key, key.split(" ")[0], key.split("(")[0].strip(), key.split("_")[0], key.split("/")[0]):
        if cand in HIGHER_IS_BETTER:
            return HIGHER_IS_BETTER[cand]
    return None


def _grid(n: int, ncols: int) -> tuple[int, int]:
    ncols = max(1, min(ncols, n))
    return math.ceil(n / ncols), ncols


def _drop_unused(fig: Any, axes: np.ndarray, n: int) -> list[Any]:
    flat = list(axes.ravel())
    for ax in flat[n:]:
        fig.delaxes(ax)
    return flat[:n]


# --- images ----------------------------------------------------------------------------------------

def plot_sample_grid(images_by_generator: Mapping[str, Any], prompts: Mapping[str, Sequence[str]] | None = None,
                     n: int = 8, *, first: str | None = "real", caption_chars: int = 60, cell: float = 1.5,
                     title: str | None = "Samples per source (rows)") -> Any:
    """Rows = generators (the ``first`` key — the real test images — on top), columns = the first ``n`` samples.

    ``images_by_generator``: ``{name: [N, H, W] array in [0, 1]}``. ``prompts``: ``{name: one prompt
    per image}``; each image gets its prompt (wrapped, shortened to ``caption_chars``) as a small
    caption. A row with fewer than ``n`` images leaves the rest of its cells empty.
    """
    if not isinstance(images_by_generator, Mapping) or not images_by_generator:
        raise ParamsError("images_by_generator is empty: pass {generator name: image array [N, H, W]}.")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParamsError(f"n must be a positive integer (samples per row), got {n!r}.")
    stacks = {str(k): _image_stack(v, f"images of {k!r}") for k, v in images_by_generator.items()}
    if prompts is not None:
        if not isinstance(prompts, Mapping):
            raise ParamsError("prompts must be a mapping {generator name: one prompt per image}.")
        unknown = [k for k in prompts if str(k) not in stacks]
        if unknown:
            raise ParamsError(f"prompts names {unknown}, which are not in images_by_generator ({list(stacks)}).")
        for k, p in prompts.items():
            if len(p) != len(stacks[str(k)]):
                raise DataFormatError(f"prompts of {k!r} has {len(p)} entries but there are "
                                      f"{len(stacks[str(k)])} images.")
    names = list(stacks)
    if first is not None and first in stacks:
        names = [first, *[k for k in names if k != first]]
    ncols = min(int(n), max(len(s) for s in stacks.values()))
    fig, axes = _subplots(len(names), ncols, cell, cell * (1.35 if prompts else 1.1))
    for i, name in enumerate(names):
        imgs = stacks[name]
        caps = None if prompts is None else prompts.get(name)
        for j in range(ncols):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if j >= len(imgs):
                ax.set_facecolor("white")
                continue
            ax.imshow(np.asarray(imgs[j], dtype=float), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
            if caps is not None:
                text = textwrap.shorten(str(caps[j]), width=caption_chars, placeholder="…")
                ax.set_xlabel("\n".join(textwrap.wrap(text, width=max(12, int(cell * 11)))), fontsize=8)
        axes[i, 0].set_ylabel(name, fontsize=9, rotation=90)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


_SCORE_LABELS = {"reid": "re-ID", "pixel_distance": "pix", "latent_distance": "lat"}
_INDEX_COLUMNS = {"reid": "reid_index", "pixel_distance": "pixel_index", "latent_distance": "latent_index"}


def plot_nearest_pairs(synth: Any, train: Any, pairs_table: pd.DataFrame, n: int = 6, *, by: str = "reid",
                       generator: str | None = None, cell: float = 1.7) -> Any:
    """The ``n`` most worrying pairs: each synthetic image (top row) above its training image (bottom row).

    ``pairs_table``: one row per synthetic image, as :func:`radaudit.metrics.image.privacy.privacy_pairs`
    writes it: ``reid``, ``pixel_distance``, ``latent_distance`` (any may be missing or NaN) and
    ``train_index`` (or, with ``reference="nearest"``, ``reid_index``/``pixel_index``/``latent_index``:
    the training image each measure picked, used for the chosen ``by``). The synthetic image is
    ``synth[synth_index]`` when that column exists, else the row's position. ``by="reid"`` takes the
    highest re-ID scores (falling back to the smallest pixel distances when no re-ID score exists),
    ``"pixel_distance"``/``"latent_distance"`` the smallest distances. Titles give all scores.
    """
    if by not in _SCORE_LABELS:
        raise ParamsError(f"by={by!r} is not allowed: use 'reid', 'pixel_distance' or 'latent_distance'.")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParamsError(f"n must be a positive integer (pairs to show), got {n!r}.")
    s_imgs = _image_stack(synth, "synth")
    t_imgs = _image_stack(train, "train")
    _require(pairs_table, [], "pairs_table")
    table = pairs_table.reset_index(drop=True).copy()
    if "synth_index" not in table.columns:
        if len(table) != len(s_imgs):
            raise DataFormatError(f"pairs_table has {len(table)} rows but there are {len(s_imgs)} synthetic images; "
                                  "add a 'synth_index' column saying which image each row scores.")
        table["synth_index"] = np.arange(len(table))
    used = by
    if by == "reid" and ("reid" not in table.columns or table["reid"].isna().all()):
        used = "pixel_distance"
    if used not in table.columns or table[used].isna().all():
        raise DataFormatError(f"pairs_table has no {used!r} values to rank the pairs by.")
    idx_col = _INDEX_COLUMNS[used] if _INDEX_COLUMNS[used] in table.columns else "train_index"
    if idx_col not in table.columns:
        raise DataFormatError("pairs_table needs a 'train_index' column (the training image of each pair).")
    ranked = table[table[used].notna() & (table[idx_col] >= 0)]
    ranked = ranked.sort_values(used, ascending=(used != "reid"), kind="stable").head(int(n))
    si, ti = ranked["synth_index"].to_numpy(int), ranked[idx_col].to_numpy(int)
    if len(si) and (si.max() >= len(s_imgs) or si.min() < 0):
        raise DataFormatError(f"synth_index values must lie in [0, {len(s_imgs) - 1}].")
    if len(ti) and (ti.max() >= len(t_imgs) or ti.min() < 0):
        raise DataFormatError(f"{idx_col} values must lie in [0, {len(t_imgs) - 1}].")
    k = len(ranked)
    fig, axes = _subplots(2, max(k, 1), cell, cell * 1.15)
    for j, (_, row) in enumerate(ranked.iterrows()):
        for r, img in ((0, s_imgs[si[j]]), (1, t_imgs[ti[j]])):
            ax = axes[r, j]
            ax.imshow(np.asarray(img, dtype=float), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        parts = [f"{_SCORE_LABELS[c]} {row[c]:.3g}" for c in _SCORE_LABELS if c in row.index and pd.notna(row[c])]
        axes[0, j].set_title("\n".join([" · ".join(parts[:1]), " · ".join(parts[1:])]).strip(), fontsize=8)
    axes[0, 0].set_ylabel("synthetic", fontsize=9)
    axes[1, 0].set_ylabel("training", fontsize=9)
    what = {"reid": "highest re-ID score", "pixel_distance": "smallest pixel distance",
            "latent_distance": "smallest latent distance"}[used]
    head = f"{generator}: " if generator else ""
    note = " (no re-ID scores: ranked by pixel distance)" if used != by else ""
    fig.suptitle(f"{head}the {k} pairs with the {what}{note}", fontsize=10)
    fig.tight_layout()
    return fig


# --- privacy ---------------------------------------------------------------------------------------

def plot_closest_pairs(study: Study, sets: Mapping[str, Mapping[str, Any]], pairs: Mapping[str, pd.DataFrame],
                       generator: str, *, reference: str = "own", n: int = 6) -> Any:
    """``generator``'s ``n`` most re-identifiable privacy pairs (synthetic image over the training image it was
    compared with), from :func:`privacy_for`'s table with the same ``reference``."""
    images, req = sets[generator]["privacy"]
    if reference == "own" and "source_study_id" in req.columns:
        train = study.context.pixels(list(dict.fromkeys(req["source_study_id"].astype(str))))
    else:
        train = study.train
    return plot_nearest_pairs(images, train, pairs[generator], n, generator=generator)


def plot_privacy_distributions(per_prompt: pd.DataFrame, delta: float = DELTA, *, order: Sequence[str] | None = None,
                               generator_col: str = "generator", first: str | None = None) -> Any:
    """Per generator, the distribution over training prompts of the max re-ID score and the min distances.

    ``per_prompt``: one row per (generator, prompt) with ``max_reid`` and ``min_pixel_distance`` (or
    ``min_pixel``), optionally ``min_latent_distance`` (or ``min_latent``) — e.g.
    :func:`radaudit.metrics.image.privacy.per_prompt_privacy` per generator, concatenated with a
    ``generator`` column. The re-ID panel draws the δ line and, above each box, how many prompts
    exceed δ (paper Table 3's count). Box + points; lower re-ID and larger distances are safer.
    """
    if not (isinstance(delta, (int, float)) and 0 <= delta <= 1):
        raise ParamsError(f"delta must lie in [0, 1] (paper: 0.85), got {delta!r}.")
    _require(per_prompt, [generator_col, "max_reid"], "per_prompt")
    pix = _pick(per_prompt, "min_pixel_distance", "min_pixel")
    lat = _pick(per_prompt, "min_latent_distance", "min_latent")
    if pix is None:
        raise DataFormatError("per_prompt needs a 'min_pixel_distance' (or 'min_pixel') column.")
    data = per_prompt.assign(**{generator_col: per_prompt[generator_col].astype(str)})
    gens = _order(data[generator_col], order, first)
    colors = source_colors(gens, first)
    panels = [("max_reid", f"max re-ID score per prompt{_ARROW[False]}"),
              (pix, f"min pixel distance per prompt{_ARROW[True]}")]
    if lat is not None and data[lat].notna().any():
        panels.append((lat, f"min latent distance per prompt{_ARROW[True]}"))
    fig, axes = _subplots(1, len(panels), max(3.2, 0.9 * len(gens) + 1.2), 3.8)
    for ax, (col, label) in zip(axes[0], panels):
        vals = pd.to_numeric(data[col], errors="coerce")
        sub = pd.DataFrame({generator_col: data[generator_col], "_v": vals}).dropna()
        if sub.empty:
            ax.text(0.5, 0.5, "no scores\n(no re-ID scorer)" if col == "max_reid" else "no values",
                    ha="center", va="center", transform=ax.transAxes, fontsize=9)
        else:
            # plain matplotlib boxes + points with a fixed-seed jitter: the figure is byte-reproducible
            groups = [sub.loc[sub[generator_col] == g, "_v"].to_numpy(float) for g in gens]
            pos = [i for i, v in enumerate(groups) if len(v)]
            boxes = ax.boxplot([groups[i] for i in pos], positions=pos, widths=0.55, showfliers=False,
                               patch_artist=True, medianprops={"color": "0.15"})
            for i, patch in zip(pos, boxes["boxes"]):
                patch.set_facecolor(colors[gens[i]])
                patch.set_alpha(0.4)
            jitter = np.random.default_rng(0)
            for i in pos:
                ax.scatter(i + jitter.uniform(-0.2, 0.2, len(groups[i])), groups[i], s=6, color=colors[gens[i]],
                           zorder=3, linewidths=0)
        if col == "max_reid":
            ax.axhline(delta, color=PALETTE[5], linestyle="--", linewidth=1.2, label=f"δ = {delta:g}")
            ax.set_ylim(0, 1.12)
            for i, g in enumerate(gens):
                v = vals[data[generator_col] == g].dropna()
                if len(v):
                    ax.text(i, 1.06, f"{int((v > delta).sum())}/{len(v)} > δ", ha="center", va="center", fontsize=8)
            ax.text(len(gens) - 0.5, delta + 0.01, f"δ = {delta:g}", ha="right", va="bottom", fontsize=8,
                    color=PALETTE[5])
        ax.set_xlabel("")
        ax.set_ylabel(label, fontsize=9)
        ax.set_xticks(range(len(gens)))
        ax.set_xticklabels(gens, rotation=30, ha="right", fontsize=8)
    fig.suptitle("Privacy per training prompt (worst seed per prompt)", fontsize=10)
    fig.tight_layout()
    return fig


# --- fidelity --------------------------------------------------------------------------------------

def plot_fidelity_bars(table: pd.DataFrame, *, metrics: Sequence[str] | None = None,
                       order: Sequence[str] | None = None, first: str | None = "real", ncols: int = 4,
                       title: str = "Fidelity and mode coverage (Table 1)") -> Any:
    """One panel per fidelity metric (FID/KID per encoder, precision, recall, density, coverage), bars per generator.

    ``table``: long, one row per (``generator``, ``metric``) with ``value`` and optional
    ``ci_low``/``ci_high`` (drawn as error bars where finite). Panel titles carry the metric name
    and whether lower or higher is better. Also draws Table 5 (``title=``, with
    :func:`radaudit.audits.synthetic_cxr.reports.bars_frame`).
    """
    _require(table, ["generator", "metric", "value"], "table")
    data = table.assign(generator=table["generator"].astype(str), metric=table["metric"].astype(str))
    if data.duplicated(["generator", "metric"]).any():
        raise DataFormatError("table has more than one row per (generator, metric); aggregate first.")
    mets = list(pd.unique(data["metric"])) if metrics is None else [str(m) for m in metrics]
    unknown = [m for m in mets if m not in set(data["metric"])]
    if unknown:
        raise ParamsError(f"metrics {unknown} are not in the table ({list(pd.unique(data['metric']))}).")
    gens = _order(data["generator"], order, first)
    colors = source_colors(gens, first)
    nrows, nc = _grid(len(mets), ncols)
    fig, axes = _subplots(nrows, nc, max(2.6, 0.45 * len(gens) + 1.2), 3.0)
    axs = _drop_unused(fig, axes, len(mets))
    has_ci = {"ci_low", "ci_high"} <= set(data.columns)
    for ax, m in zip(axs, mets):
        sub = data[data["metric"] == m].set_index("generator").reindex(gens)
        vals = pd.to_numeric(sub["value"], errors="coerce").to_numpy(float)
        x = np.arange(len(gens))
        ax.bar(x, np.nan_to_num(vals), color=[colors[g] for g in gens], alpha=0.85)
        if has_ci:
            lo = pd.to_numeric(sub["ci_low"], errors="coerce").to_numpy(float)
            hi = pd.to_numeric(sub["ci_high"], errors="coerce").to_numpy(float)
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():  # a white halo under the whisker keeps it visible on a dark (baseline) bar
                for color, width in (("white", 3.0), ("0.2", 1.0)):
                    ax.errorbar(x[ok], (lo[ok] + hi[ok]) / 2, yerr=(hi[ok] - lo[ok]) / 2, fmt="none", ecolor=color,
                                capsize=3, elinewidth=width, capthick=width)
        for xi, v in zip(x, vals):
            if not np.isfinite(v):
                ax.text(xi, 0, "n/a", ha="center", va="bottom", fontsize=8)
        d = _direction(m)
        ax.set_title(m + ("" if d is None else _ARROW[d]), fontsize=9)
        ax.set_xticks(x)
        ax.set_xticklabels(gens, rotation=35, ha="right", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_per_label_heatmap(table: pd.DataFrame, *, metric: str = "FID", value: str | None = None,
                           nan_label: str = "n<min", digits: int = 1, cmap: str = "rocket_r") -> Any:
    """Table 2 as a heatmap: generators × labels, each cell annotated with the per-label metric (default FID).

    ``table``: wide (index = generators, columns = labels), or long with ``generator``, ``label`` and
    a value column (``value``, default the lower-cased ``metric`` or ``"value"``). NaN cells — a
    label with too few images to compute the metric (:func:`per_label_fidelity`'s ``min_images``) —
    are hatched grey and annotated ``nan_label``, never left blank.
    """
    import seaborn as sns
    from matplotlib.patches import Rectangle

    if not isinstance(table, pd.DataFrame) or table.empty:
        raise DataFormatError("table is empty: pass generators × labels (wide) or generator/label/value rows (long).")
    if {"generator", "label"} <= set(table.columns):
        col = value or next((c for c in (metric.lower(), metric, "value") if c in table.columns), None)
        if col is None:
            raise DataFormatError(f"The long table has no value column: pass value= (columns {list(table.columns)}).")
        wide = table.pivot_table(index="generator", columns="label", values=col, aggfunc="first", dropna=False,
                                 sort=False)
    else:
        wide = table
    wide = wide.apply(pd.to_numeric, errors="coerce").astype(float)
    if wide.empty or wide.shape[1] == 0:
        raise DataFormatError("table has no label columns to plot.")
    annot = wide.map(lambda v: "" if not np.isfinite(v) else f"{v:.{digits}f}")
    fig, axes = _subplots(1, 1, max(4.0, 0.95 * wide.shape[1] + 2.0), max(2.2, 0.5 * wide.shape[0] + 1.4))
    ax = axes[0, 0]
    all_nan = not np.isfinite(wide.to_numpy()).any()
    sns.heatmap(wide if not all_nan else wide.fillna(0.0), annot=annot.to_numpy(), fmt="", cmap=cmap,
                mask=wide.isna().to_numpy(), ax=ax, cbar=not all_nan, annot_kws={"fontsize": 8},
                cbar_kws={"label": metric} if not all_nan else None, linewidths=0.5, linecolor="white")
    for i in range(wide.shape[0]):
        for j in range(wide.shape[1]):
            if not np.isfinite(wide.iat[i, j]):
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.92", edgecolor="0.75", hatch="///", lw=0))
                ax.text(j + 0.5, i + 0.5, nan_label, ha="center", va="center", fontsize=8, color="0.3")
    d = _direction(metric)
    ax.set_title(f"Per-label {metric}{'' if d is None else _ARROW[d]} (Table 2)", fontsize=10)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_xticklabels([str(c) for c in wide.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticklabels([str(r) for r in wide.index], rotation=0, fontsize=8)
    fig.tight_layout()
    return fig


# --- utility ---------------------------------------------------------------------------------------

def plot_utility(long_table: pd.DataFrame, *, baseline: str = "real", order: Sequence[str] | None = None,
                 labels: Sequence[str] | None = None, min_test_images: int = 0) -> Any:
    """Per-label AUROC on the real test set, one marker + 95 % CI per training source (Table 4 as a figure).

    ``long_table``: :func:`radaudit.audits.synthetic_cxr.table4.utility_flags` (or any table with
    ``source, label, auroc`` and optional ``ci_low, ci_high, significant``). The baseline (real
    training images) is black, with a dashed reference segment across each label; a ``*`` marks a
    generator whose difference to the baseline is significant (paired bootstrap, BH). The dotted
    line is chance (0.5). A label whose AUROC is undefined (single class in the test set) says so; a label with
    fewer than ``min_test_images`` positive or negative test images (the notebook passes
    :data:`radaudit.audits.synthetic_cxr.table4.MIN_TEST_IMAGES`) is drawn without points and says why under its
    name (:func:`radaudit.audits.synthetic_cxr.table4.too_few_test_images`). The macro AUROCs stand last, behind a
    rule: ``macro`` (the headline, over the labels with enough test images) and, where the long table has it,
    ``macro (all labels)`` (:func:`radaudit.audits.synthetic_cxr.utility.run_utility`).
    """
    _require(long_table, ["source", "label", "auroc"], "long_table")
    data = long_table.assign(source=long_table["source"].astype(str), label=long_table["label"].astype(str))
    few = too_few_test_images(data, min_test_images)
    if few:  # no number for them: their rows stay in the table's files
        data = data.assign(auroc=data["auroc"].where(~data["label"].isin(list(few))))
    sources = _order(data["source"], order, baseline)
    labs = list(pd.unique(data["label"])) if labels is None else [str(x) for x in labels]
    macros = [m for m in ("macro", MACRO_ALL_LABELS) if m in labs]  # last: the headline, then the paper's macro
    labs = [x for x in labs if x not in macros] + macros
    colors = source_colors(sources, baseline)
    fig, axes = _subplots(1, 1, max(5.0, 1.1 * len(labs) + 2.5), 4.0)
    ax = axes[0, 0]
    width = 0.8 / max(len(sources), 1)
    has_ci = {"ci_low", "ci_high"} <= set(data.columns)
    for k, src in enumerate(sources):
        sub = data[data["source"] == src].drop_duplicates("label").set_index("label").reindex(labs)
        x = np.arange(len(labs)) - 0.4 + width * (k + 0.5)
        y = pd.to_numeric(sub["auroc"], errors="coerce").to_numpy(float)
        ok = np.isfinite(y)
        if has_ci:
            lo = pd.to_numeric(sub["ci_low"], errors="coerce").to_numpy(float)
            hi = pd.to_numeric(sub["ci_high"], errors="coerce").to_numpy(float)
            ci = ok & np.isfinite(lo) & np.isfinite(hi)
            ax.errorbar(x[ci], y[ci], yerr=[np.clip(y[ci] - lo[ci], 0, None), np.clip(hi[ci] - y[ci], 0, None)],
                        fmt="none", ecolor=colors[src], elinewidth=1.2, capsize=2)
        ax.plot(x[ok], y[ok], linestyle="none", marker="o" if src == baseline else "s", markersize=5,
                color=colors[src], label=src)
        if src == baseline:
            for xi, yi in zip(np.arange(len(labs)), y):
                if np.isfinite(yi):
                    ax.hlines(yi, xi - 0.45, xi + 0.45, colors=BASELINE_COLOR, linestyles="--", linewidth=0.8,
                              alpha=0.6)
        if "significant" in sub.columns:
            sig = sub["significant"].map(lambda v: v is not pd.NA and not (isinstance(v, float) and math.isnan(v))
                                         and bool(v)).to_numpy(bool)
            top = hi if has_ci else y
            for xi, t, s in zip(x, top, sig & ok):
                if s:
                    ax.text(xi, (t if np.isfinite(t) else 0.0) + 0.02, "*", ha="center", va="bottom", fontsize=10,
                            color=colors[src])
    undefined = [lab for lab in labs if not pd.to_numeric(data.loc[data["label"] == lab, "auroc"],
                                                           errors="coerce").notna().any()]
    ax.axhline(0.5, color="0.5", linestyle=":", linewidth=1, label="chance")
    if macros and len(labs) > len(macros):
        ax.axvline(len(labs) - len(macros) - 0.5, color="0.8", linewidth=0.8)
    ax.set_xticks(np.arange(len(labs)))
    ax.set_xticklabels([("\n".join(textwrap.wrap(lab, 10)) if lab in macros else lab)
                        + ("\n" + "\n".join(textwrap.wrap(few[lab], 18)) if lab in few else
                           "\n(undefined)" if lab in undefined and lab in macros else
                           "\n(single class)" if lab in undefined else "") for lab in labs], fontsize=8)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("AUROC on the real test set")
    ax.set_title("Classifier trained on each source only, tested on real images (Table 4)", fontsize=10)
    ax.legend(title="training source", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def plot_roc_curves(roc_points: pd.DataFrame, *, baseline: str = "real", order: Sequence[str] | None = None,
                    labels: Sequence[str] | None = None, ncols: int = 4, too_few: Mapping[str, str] | None = None) -> Any:
    """ROC curves on the real test set: one panel per label, one curve per training source.

    ``roc_points``: ``source, label, fpr, tpr`` (:func:`run_utility`'s ``roc``). The legend gives
    each curve's area (trapezoidal, equal to the tie-corrected AUROC); the diagonal is chance. ``too_few``:
    ``{label: reason}`` (:func:`radaudit.audits.synthetic_cxr.table4.too_few_test_images`): those labels get a panel
    that gives the reason instead of curves.
    """
    _require(roc_points, ["source", "label", "fpr", "tpr"], "roc_points")
    data = roc_points.assign(source=roc_points["source"].astype(str), label=roc_points["label"].astype(str))
    sources = _order(data["source"], order, baseline)
    labs = list(pd.unique(data["label"])) if labels is None else [str(x) for x in labels]
    unknown = [lab for lab in labs if lab not in set(data["label"])]
    if unknown:
        raise ParamsError(f"labels {unknown} have no ROC points (labels with one class in the test set have none).")
    colors = source_colors(sources, baseline)
    nrows, nc = _grid(len(labs), ncols)
    fig, axes = _subplots(nrows, nc, 3.0, 3.0)
    axs = _drop_unused(fig, axes, len(labs))
    too_few = dict(too_few or {})
    for ax, lab in zip(axs, labs):
        if lab in too_few:
            ax.set_axis_off()
            ax.set_title(lab, fontsize=9)
            ax.text(0.5, 0.5, "\n".join(textwrap.wrap(too_few[lab] + ": no ROC curve", 22)), ha="center", va="center",
                    fontsize=9, color="0.35", transform=ax.transAxes)
            continue
        ax.plot([0, 1], [0, 1], color="0.7", linestyle=":", linewidth=1)
        for src in sources:
            sub = data[(data["label"] == lab) & (data["source"] == src)]
            if sub.empty:
                continue
            f, t = sub["fpr"].to_numpy(float), sub["tpr"].to_numpy(float)
            area = float(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2))
            ax.plot(f, t, color=colors[src], linewidth=1.8 if src == baseline else 1.2, label=f"{src} ({area:.2f})",
                    drawstyle="default")
        ax.set_title(lab, fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.set_xlabel("false positive rate", fontsize=8)
        ax.set_ylabel("true positive rate", fontsize=8)
        ax.legend(fontsize=8, loc="lower right", frameon=False, title="source (AUROC)", title_fontsize=8)
    fig.suptitle("ROC curves on the real test set", fontsize=10)
    fig.tight_layout()
    return fig


# --- rankings --------------------------------------------------------------------------------------

def _as_rank_series(x: Any, name: str) -> pd.Series:
    if isinstance(x, pd.Series):
        return pd.to_numeric(x, errors="coerce")
    if isinstance(x, Mapping):
        return pd.to_numeric(pd.Series(dict(x)), errors="coerce")
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise DataFormatError(f"{name} must be 1-D (one rank per generator), got shape {arr.shape}.")
    return pd.Series(arr)


def plot_rank_scatter(fidelity_rank: Any, utility_rank: Any, *, title: str | None = None,
                      order: Sequence[str] | None = None) -> Any:
    """Appendix C of paper 004: each generator's fidelity rank against its utility rank, Spearman's ρ in the title.

    ``fidelity_rank``/``utility_rank``: pandas Series (or dicts) indexed by generator — e.g. the
    ``overall_rank`` of :func:`radaudit.metrics.image.rank_table` on Table 1 and on Table 4 — aligned
    on the generator names; or two equal-length sequences in the same generator order. ρ is
    :func:`radaudit.metrics.image.rank_correlation` (scipy, ties averaged); with fewer than 3
    generators or a constant ranking it is undefined and the title says so. Points on the dashed
    diagonal rank the same on both. ``order``: the generators in the order the other figures use, so
    each keeps its colour (default: the order of ``fidelity_rank``). Without any utility rank (the headline macro
    AUROC is undefined when no label has enough test images: a rehearsal's handful) the figure says so.
    """
    both_named = isinstance(fidelity_rank, (pd.Series, Mapping)) and isinstance(utility_rank, (pd.Series, Mapping))
    a = _as_rank_series(fidelity_rank, "fidelity_rank")
    b = _as_rank_series(utility_rank, "utility_rank")
    if not both_named and len(a) != len(b):
        raise DataFormatError(f"fidelity_rank has {len(a)} entries but utility_rank {len(b)}; give one rank per "
                              "generator in the same order (or Series indexed by generator).")
    if both_named:
        common = [g for g in a.index if g in set(b.index)]
        if not common:
            raise DataFormatError(f"fidelity_rank and utility_rank share no generator: {list(a.index)} vs "
                                  f"{list(b.index)}.")
        a, b = a.loc[common], b.loc[common]
    else:
        b.index = a.index
    if a.notna().any() and not b.notna().any():  # no utility rank at all: the headline macro AUROC is undefined
        fig, axes = _subplots(1, 1, 4.4, 4.2)
        ax = axes[0, 0]
        ax.axis("off")
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(
            "No utility rank: no generator has a headline macro AUROC (no label has enough positive and negative "
            "test images; Table 4).", 40)), ha="center", va="center", fontsize=9, transform=ax.transAxes)
        ax.set_title(title or "Fidelity rank vs utility rank", fontsize=10)
        return fig
    keep = a.notna() & b.notna()
    a, b = a[keep], b[keep]
    if len(a) == 0:
        raise DataFormatError("No generator has both a fidelity and a utility rank.")
    rc = rank_correlation(a.to_numpy(float), b.to_numpy(float))
    fig, axes = _subplots(1, 1, 4.4, 4.2)
    ax = axes[0, 0]
    lim = (0.5, max(float(a.max()), float(b.max())) + 0.5)
    ax.plot(lim, lim, color="0.7", linestyle="--", linewidth=1)
    named = [str(g) for g in (order or [])]
    colors = source_colors(named + [str(g) for g in a.index if str(g) not in named], None)
    for g in a.index:
        ax.scatter(a[g], b[g], color=colors[str(g)], s=40, zorder=3)
        ax.annotate(str(g), (a[g], b[g]), xytext=(4, 4), textcoords="offset points", fontsize=8)
    ax.set_xlim(*lim)
    ax.set_ylim(*lim)
    ax.set_xlabel("fidelity rank (1 = best)")
    ax.set_ylabel("utility rank (1 = best)")
    if math.isfinite(rc["spearman"]):
        rho = f"Spearman ρ = {rc['spearman']:.2f} (n = {rc['n']})"
    else:
        why = f"n = {rc['n']} < 3" if rc["n"] < 3 else "a ranking is constant"
        rho = f"Spearman ρ undefined ({why})"
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{title or 'Fidelity rank vs utility rank'}\n{rho}", fontsize=10)
    fig.tight_layout()
    return fig


_DOSE_METRICS = {"fid": "FID (↑ worse)", "kid": "KID (↑ worse)", "precision": "Precision (↓ worse)"}


def plot_dose_response(dose: pd.DataFrame, images: Mapping[str, Any] | None = None, *, n_examples: int = 3,
                       encoder_names: Mapping[str, str] | None = None, reference: Mapping[str, Any] | None = None,
                       title: str | None = "Degrader dose-response: do the metrics rank graded damage?") -> Any:
    """The degrader's dose-response: top, ``n_examples`` source images at every dose level (columns = levels,
    the same image in each row, full [0, 1] grey range), so the damage can be judged by eye; below, one row of
    panels per encoder and one panel per metric (FID, KID, precision), estimate and 95% CI against the level.

    ``dose``: :func:`radaudit.audits.synthetic_cxr.study.dose_response`'s long table (``level, level_label,
    encoder, metric, estimate, low, high``). ``images``: ``{level label: [N, H, W]}`` in level order.
    ``reference``: optional ``{encoder: {metric: value}}`` drawn as dashed lines (e.g. held-out real images'
    Table-1 values: the floor a realistic generator reaches)."""
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec

    _require(dose, ["level", "encoder", "metric", "estimate", "low", "high"], "the dose table")
    names = dict(encoder_names or {})
    levels = sorted(dose["level"].unique())
    labels = (dose.drop_duplicates("level").set_index("level")["level_label"].reindex(levels).tolist()
              if "level_label" in dose.columns else [str(v) for v in levels])
    metrics = [m for m in _DOSE_METRICS if m in set(dose["metric"])]
    encoders = list(dict.fromkeys(dose["encoder"]))
    stacks = [] if not images else [_image_stack(v, f"images of level {k!r}") for k, v in images.items()]
    n_img = min(n_examples, min((len(s) for s in stacks), default=0)) if stacks else 0
    ncols = max(len(stacks), len(metrics), 1)
    fig = plt.figure(figsize=(max(2.0 * ncols, 3.3 * len(metrics)), 2.0 * n_img + 2.6 * len(encoders) + 0.6))
    gs = GridSpec(n_img + 1, 1, figure=fig, height_ratios=[1.0] * n_img + [1.3 * len(encoders)], hspace=0.35)
    for r in range(n_img):
        sub = gs[r].subgridspec(1, len(stacks), wspace=0.04)
        for c, stack in enumerate(stacks):
            ax = fig.add_subplot(sub[0, c])
            ax.imshow(np.asarray(stack[r], dtype=float), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(textwrap.fill(str(labels[c]), 18), fontsize=8)
    sub = gs[n_img].subgridspec(len(encoders), len(metrics), wspace=0.35, hspace=0.6)
    colors = {e: PALETTE[i % 7] for i, e in enumerate(encoders)}
    for i, e in enumerate(encoders):  # one row per encoder: their scales differ by orders of magnitude
        for j, met in enumerate(metrics):
            ax = fig.add_subplot(sub[i, j])
            d = dose[(dose["encoder"] == e) & (dose["metric"] == met)].sort_values("level")
            if not d.empty:
                y, lo, hi = d["estimate"].to_numpy(float), d["low"].to_numpy(float), d["high"].to_numpy(float)
                ax.errorbar(d["level"], y, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], marker="o",
                            ms=4, capsize=3, color=colors[e])
            ref = (reference or {}).get(e, {}).get(met)
            if ref is not None and np.isfinite(ref):
                ax.axhline(ref, ls="--", lw=0.8, color="grey")
            ax.set_xticks(levels)
            ax.set_title(f"{_DOSE_METRICS[met]} — {names.get(e, e)}", fontsize=8)
            if i == len(encoders) - 1:
                ax.set_xlabel("dose level (blur σ and noise σ grow together)", fontsize=8)
            ax.tick_params(labelsize=8)
    if reference:
        fig.text(0.5, 0.005, "dashed grey: held-out real images (Table 1), the level a realistic generator reaches",
                 ha="center", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_reid_calibration(null_max: Any, per_prompt: pd.DataFrame, threshold: float, *, delta: float = DELTA,
                          order: Sequence[str] | None = None, fpr: float | None = None) -> Any:
    """The re-ID threshold and what it flags: histograms of the per-prompt max re-ID score (over seeds) for the
    null prompts it was calibrated on (other patients' real test images) and for every generator's audited
    prompts, with the calibrated threshold (solid) and the paper's δ (dotted); each panel says the share
    of prompts above the threshold."""
    _require(per_prompt, ["generator", "max_reid"], "the per-prompt privacy table")
    gens = _order(per_prompt["generator"], order)
    panels = [("null: other patients (test split)", np.asarray(null_max, dtype=float))]
    panels += [(g, per_prompt.loc[per_prompt["generator"] == g, "max_reid"].to_numpy(float)) for g in gens]
    fig, axes = _subplots(1, len(panels), 2.6, 2.4, sharex=True)
    bins = np.linspace(0, 1, 41)
    colors = [BASELINE_COLOR] + [PALETTE[i % 7] for i in range(len(gens))]
    for ax, (name, v), col in zip(axes[0], panels, colors):
        v = v[np.isfinite(v)]
        ax.hist(v, bins=bins, color=col, alpha=0.8)
        ax.axvline(threshold, color="#D55E00", lw=1.2)
        ax.axvline(delta, color="grey", ls=":", lw=1)
        share = float((v > threshold).mean()) if len(v) else float("nan")
        ax.set_title(textwrap.fill(name, 24), fontsize=8)
        ax.text(0.02, 0.95, f"> threshold: {share:.0%}\n(n = {len(v)})", transform=ax.transAxes, va="top",
                fontsize=8)
        ax.set_xlabel("max re-ID over seeds", fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0, 0].set_ylabel("prompts", fontsize=8)
    fig.suptitle(f"Re-ID threshold {threshold:.3f} (solid; calibrated on the max over seeds"
                 + (f", {fpr:.0%} of null prompts above" if fpr else "") + f"), paper's δ = {delta} (dotted)",
                 fontsize=9)
    fig.tight_layout()
    return fig
