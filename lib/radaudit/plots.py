"""One look for every radaudit figure, reproducible PNG + PDF files, and the figure kinds notebooks share.

Nothing here runs at import time or picks a backend: notebooks get their inline backend, tests
and the CLI use Agg. :func:`set_theme` is the one function that changes global state (matplotlib's
rcParams), on purpose, once per notebook.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from radaudit.files import atomic_path, ensure_dir
from radaudit.tables import check_output_name

__all__ = [
    "CI_LABEL",
    "DPI",
    "PALETTE",
    "SEX_PALETTE",
    "UNKNOWN",
    "bar_with_ci",
    "distribution_by_group",
    "label_points",
    "MIN_FONT_PT",
    "REPORT_WIDTH_PX",
    "save_figure",
    "set_theme",
    "small_text",
]

DPI = 300
"""Resolution of saved PNGs (dots per inch)."""

PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#000000",  # black
)
"""Okabe & Ito (2008) colour-blind-safe qualitative palette, the lab's default colour cycle."""

UNKNOWN = "unknown"
"""Label given to a missing group value in plots (so missing values are shown, not dropped)."""

SEX_PALETTE: dict[str, str] = {"F": "#E69F00", "M": "#0072B2", "O": "#009E73", UNKNOWN: "#999999"}
"""Fixed colours for the schema's sex codes (Okabe–Ito orange/blue/green; grey for not stated)."""

CI_LABEL = "_ci"
"""Label of the error-bar container :func:`bar_with_ci` adds (underscore: kept out of legends)."""


def set_theme(font_scale: float = 1.2) -> None:
    """Apply the lab's figure style (seaborn ``whitegrid``, ``paper`` context, Okabe–Ito colours).

    Sets matplotlib's global rcParams: TrueType fonts in PDFs (editable text), 300-dpi saves, no
    top/right spines. Call once at the top of a notebook; figures made before are unaffected.
    """
    sns.set_theme(
        context="paper",
        style="whitegrid",
        palette=list(PALETTE),
        font_scale=font_scale,
        rc={
            "axes.spines.top": False,
            "axes.spines.right": False,
            "savefig.dpi": DPI,
            "pdf.fonttype": 42,
            "ps.fonttype": 42,
            "figure.dpi": 100,
        },
    )


def save_figure(
    fig: Figure,
    directory: str | Path,
    name: str,
    *,
    close: bool = False,
    bbox_inches: str | None = "tight",
    dpi: int = DPI,
    pdf: bool = True,
) -> dict[str, Path]:
    """Save ``fig`` as ``<name>.png`` (``dpi``, default 300) and, unless ``pdf=False``, ``<name>.pdf`` under
    ``directory`` (created).

    The bytes are reproducible: the PNG carries no ``Software`` (matplotlib version) text chunk and
    no timestamp, the PDF no ``CreationDate`` and a fixed ``Creator``/``Producer``, so saving the
    same figure twice gives identical files. ``close=True`` closes the figure afterwards.

    Returns:
        ``{"png": path, "pdf": path}`` (no ``"pdf"`` with ``pdf=False``).
    """
    check_output_name(name)
    directory = ensure_dir(directory)
    paths = {"png": directory / f"{name}.png", "pdf": directory / f"{name}.pdf"}
    with atomic_path(paths["png"]) as tmp:  # whole or not at all (radaudit.files)
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches=bbox_inches, metadata={"Software": None})
    small = small_text(fig, display_px=REPORT_WIDTH_PX, dpi=dpi)
    if small:  # a note for whoever draws the figure: the report would show this text below MIN_FONT_PT
        logging.getLogger("radaudit.plots").info(
            "figure %s: %d text(s) under %g pt as a report shows it (%.1f in wide at %d dpi), e.g. %r at %.1f pt",
            name, len(small), MIN_FONT_PT, fig.get_figwidth(), dpi, small[0][0][:40], small[0][1])
    if pdf:
        with atomic_path(paths["pdf"]) as tmp:
            fig.savefig(
                tmp,
                format="pdf",
                dpi=dpi,  # the resolution images are resampled to inside the vector PDF
                bbox_inches=bbox_inches,
                metadata={"CreationDate": None, "ModDate": None, "Creator": "radaudit", "Producer": "radaudit"},
            )
    else:
        del paths["pdf"]
    if close:
        import matplotlib.pyplot as plt  # only when asked: the caller's figure may not be pyplot-managed

        plt.close(fig)
    return paths


def _new_ax(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots()[1]


def _levels(values: pd.Series, order: Sequence[Any] | None) -> list[Any]:
    """Category order: the given one, else a categorical's categories, else order of appearance."""
    if order is not None:
        return list(order)
    if isinstance(values.dtype, pd.CategoricalDtype):
        return list(values.cat.categories)
    return list(pd.unique(values))


def _default_palette(levels: Sequence[Any]) -> dict[str, str] | None:
    return {k: SEX_PALETTE[k] for k in levels} if levels and set(levels) <= set(SEX_PALETTE) else None


def bar_with_ci(
    df: pd.DataFrame,
    x: str,
    y: str,
    low: str,
    high: str,
    *,
    hue: str | None = None,
    ax: Axes | None = None,
    orient: Literal["h", "v"] = "h",
    order: Sequence[Any] | None = None,
    hue_order: Sequence[Any] | None = None,
    palette: Any = None,
    capsize: float = 3.0,
) -> Axes:
    """Bars of precomputed point estimates with asymmetric CI error bars from ``low``/``high`` columns.

    As in seaborn, ``orient="h"`` draws horizontal bars: ``x`` is the value (estimate) column and
    ``y`` the category; ``orient="v"`` swaps them. ``df`` has one row per (category, hue) with the
    estimate and its CI bounds (e.g. :func:`radaudit.stats.paired_bootstrap` output).

    seaborn can only compute its own error bars, so the bars are drawn by ``sns.barplot``
    (``errorbar=None``) and the intervals by one ``Axes.errorbar`` call (label :data:`CI_LABEL`).
    Each bar is matched to its row by reading the drawn bars back: the category from the bar's
    position, the hue from the left-to-right order of the dodged bars within a category (the order
    of ``hue_order``), and the match is checked against the bar's length. Each interval is drawn
    from ``low`` to ``high`` (as a symmetric bar around their midpoint, so an interval that does
    not contain the estimate is still drawn as it is). Rows with a missing estimate are left out
    with a warning. Hue levels that are all sex codes get :data:`SEX_PALETTE` by default.

    Returns:
        The Axes drawn on.
    """
    if orient not in ("h", "v"):
        raise ValueError(f"orient must be 'h' or 'v', got {orient!r}")
    value, cat = (x, y) if orient == "h" else (y, x)
    needed = [c for c in (value, cat, low, high, hue) if c is not None]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise KeyError(f"bar_with_ci: columns {missing} not in the frame; it has {list(df.columns)}")
    keys = [cat] + ([hue] if hue else [])
    if df[keys].isna().any().any():
        raise ValueError(f"bar_with_ci: missing values in {keys}; label them (e.g. {UNKNOWN!r}) before plotting")
    if df.duplicated(keys).any():
        raise ValueError(f"bar_with_ci: more than one row per {keys}; aggregate first (one estimate per bar)")
    na = df[value].isna()
    if na.any():
        warnings.warn(f"bar_with_ci: {int(na.sum())} row(s) with a missing {value!r} are not drawn", stacklevel=2)
    data = df.loc[~na]
    if data.empty:
        raise ValueError("bar_with_ci: no rows with an estimate to draw")

    ax = _new_ax(ax)
    cat_levels = _levels(data[cat], order)
    hue_levels = _levels(data[hue], hue_order) if hue else []
    if hue and palette is None:
        palette = _default_palette(hue_levels)
    n_before = len(ax.containers)
    sns.barplot(
        data=data,
        x=x,
        y=y,
        hue=hue,
        order=cat_levels,
        hue_order=hue_levels or None,
        palette=palette,
        orient=orient,
        errorbar=None,
        ax=ax,
    )

    # read the bars back: (categorical centre, value) per patch
    bars = []
    for container in ax.containers[n_before:]:
        if not isinstance(container, BarContainer):
            continue
        for p in container.patches:
            if orient == "h":
                bars.append((p.get_y() + p.get_height() / 2, p.get_width()))
            else:
                bars.append((p.get_x() + p.get_width() / 2, p.get_height()))
    hue_rank = {h: i for i, h in enumerate(hue_levels)}
    centres, lows, highs = [], [], []
    for ci, level in enumerate(cat_levels):
        rows = data[data[cat] == level]
        if rows.empty:
            continue
        if hue:
            rows = rows.assign(_rank=rows[hue].map(hue_rank)).sort_values("_rank", kind="stable")
        drawn = sorted(b for b in bars if round(b[0]) == ci)
        if len(drawn) != len(rows):
            raise RuntimeError(
                f"bar_with_ci: found {len(drawn)} bars for category {level!r} but {len(rows)} rows; "
                f"cannot align error bars (seaborn {sns.__version__})"
            )
        for (centre, length), (_, row) in zip(drawn, rows.iterrows(), strict=True):
            if not np.isclose(length, float(row[value])):
                raise RuntimeError(f"bar_with_ci: bar of length {length} does not match row {dict(row)}")
            centres.append(centre)
            lows.append(float(row[low]))
            highs.append(float(row[high]))
    lo, hi = np.asarray(lows), np.asarray(highs)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    kw = {"fmt": "none", "ecolor": "0.2", "elinewidth": 1.2, "capsize": capsize, "zorder": 3, "label": CI_LABEL}
    if orient == "h":
        ax.errorbar(mid, centres, xerr=np.abs(half), **kw)
    else:
        ax.errorbar(centres, mid, yerr=np.abs(half), **kw)
    return ax


def distribution_by_group(
    df: pd.DataFrame,
    value: str,
    group: str,
    *,
    kind: Literal["hist", "ecdf", "box"] = "hist",
    ax: Axes | None = None,
    log: bool = False,
    order: Sequence[Any] | None = None,
    palette: Any = None,
) -> Axes:
    """Distribution of ``value`` per level of ``group``: overlaid histograms, ECDFs, or horizontal boxes.

    * ``"hist"``: ``sns.histplot`` step histograms, each group normalised to density on its own
      (``common_norm=False``), so groups of different size are comparable;
    * ``"ecdf"``: ``sns.ecdfplot``, one curve per group;
    * ``"box"``: ``sns.boxplot``, one horizontal box per group.

    Missing group values are shown as :data:`UNKNOWN` (never silently dropped); rows with a
    missing ``value`` cannot be drawn and are left out with a warning. ``log=True`` puts the value
    axis on a log scale (all values must be > 0). Groups that are all sex codes get
    :data:`SEX_PALETTE` by default.

    Returns:
        The Axes drawn on.
    """
    kinds = ("hist", "ecdf", "box")
    if kind not in kinds:
        raise ValueError(f"unknown kind {kind!r}; allowed: {', '.join(kinds)}")
    missing = [c for c in (value, group) if c not in df.columns]
    if missing:
        raise KeyError(f"distribution_by_group: columns {missing} not in the frame; it has {list(df.columns)}")
    data = pd.DataFrame({value: pd.to_numeric(df[value]), group: df[group].astype(object).where(df[group].notna(), UNKNOWN)})
    na = data[value].isna()
    if na.any():
        warnings.warn(f"distribution_by_group: {int(na.sum())} row(s) with a missing {value!r} are not drawn", stacklevel=2)
        data = data.loc[~na]
    if data.empty:
        raise ValueError(f"distribution_by_group: no values of {value!r} to draw")
    if log and (data[value] <= 0).any():
        raise ValueError(f"log=True needs positive values; {int((data[value] <= 0).sum())} of {value!r} are <= 0")
    levels = _levels(data[group], order)
    if palette is None:
        palette = _default_palette(levels)
    ax = _new_ax(ax)
    common = {"data": data, "hue": group, "hue_order": levels, "palette": palette, "ax": ax, "log_scale": log}
    if kind == "hist":
        sns.histplot(x=value, stat="density", common_norm=False, element="step", fill=False, **common)
    elif kind == "ecdf":
        sns.ecdfplot(x=value, **common)
    else:
        with warnings.catch_warnings():
            # seaborn 0.13.2 passes matplotlib's deprecated `vert=` (mpl >= 3.11); nothing a user can fix
            warnings.filterwarnings("ignore", message=r"vert: bool was deprecated", category=DeprecationWarning)
            sns.boxplot(x=value, y=group, order=levels, orient="h", legend=False, **common)
    return ax


MIN_FONT_PT = 8.0
"""The smallest text a figure may carry, in points at its saved size (issue 42: legible at 100%)."""

REPORT_WIDTH_PX = 1052
"""The widest a figure is shown in a run report (``main`` is 1100 CSS px with 24 px padding each side)."""


def small_text(fig: Figure, min_pt: float = MIN_FONT_PT, *, display_px: float | None = None,
               dpi: float = 150.0) -> list[tuple[str, float]]:
    """Visible text of ``fig`` smaller than ``min_pt`` points: ``[(text, effective size in pt), ...]``.

    Without ``display_px`` the size is the font size at the saved size. With ``display_px`` (e.g.
    :data:`REPORT_WIDTH_PX`), it is the size a reader sees at 100% zoom in the report: a PNG saved at ``dpi`` and
    shown at its pixel width appears ``dpi / 96`` times its print size (96 CSS px per inch), and a figure wider than
    ``display_px`` is scaled down to fit, so the size is multiplied by ``min(1, dpi / 96 × min(1, display_px /
    (width × dpi)))`` — never credited more than its own size. A 30-inch strip of 8-pt titles, shown in 1052 px,
    reads as 2.9 pt. Empty and invisible texts are left out."""
    width_px = fig.get_figwidth() * dpi
    scale = 1.0 if display_px is None else min(1.0, dpi / 96.0 * min(1.0, display_px / width_px))
    out = []
    for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")):
        text = t.get_text()
        if not text or not text.strip() or not t.get_visible():
            continue
        size = float(t.get_fontsize()) * scale
        if size < min_pt - 1e-6:
            out.append((text, round(size, 2)))
    return out


def label_points(ax: Axes, items: Sequence[tuple[float, float, str, dict[str, Any]]], *, fontsize: float = MIN_FONT_PT,
                 avoid: Any = None, pad_pt: float = 3.0) -> list[Any]:
    """Label points without overlaps (a greedy placement; ``adjustText`` is not a dependency).

    ``items``: ``(x, y, text, annotate kwargs)`` in priority order. Each label tries places around its point — the
    four corners first, then rings farther out (joined to the point by a thin grey line) — and takes the first whose
    box overlaps no label placed before it, covers no point of ``avoid`` (an ``(n, 2)`` array of data coordinates,
    e.g. every plotted point) and stays inside the axes; a label with no such place takes the one that overlaps the
    fewest labels, then stays inside, then covers the fewest points (never dropped). Call after the figure's layout
    is final (limits, aspect, margins): the boxes are measured on the canvas, and a later ``tight_layout`` moves the
    points under the labels. Returns the annotations."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    pts = np.empty((0, 2))
    if avoid is not None and len(avoid):
        pts = ax.transData.transform(np.asarray(avoid, dtype=float))
        pts = pts[np.isfinite(pts).all(axis=1)]
    gap = 2.0 * fig.dpi / 72.0  # 2 pt
    placed: list[Any] = []
    out = []
    places = []
    for ring, dist in enumerate((pad_pt, 3 * pad_pt, 5 * pad_pt, 8 * pad_pt)):
        for dx, dy, ha, va in ((1, 1, "left", "bottom"), (1, -1, "left", "top"), (-1, 1, "right", "bottom"),
                               (-1, -1, "right", "top"), (0, 1.3, "center", "bottom"), (0, -1.3, "center", "top"),
                               (1.3, 0, "left", "center"), (-1.3, 0, "right", "center")):
            places.append((dx * dist, dy * dist, ha, va, ring > 0))
    for x, y, text, kw in items:
        kw = dict(kw)
        kw.setdefault("fontsize", fontsize)
        kw.setdefault("zorder", 4)
        here = ax.transData.transform((x, y))
        best = None  # (score, place): no overlap with a label first, then inside the axes, then no point covered
        for k, (dx, dy, ha, va, leader) in enumerate(places):
            probe = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **kw)
            box = probe.get_window_extent(renderer).padded(gap)  # a little air around each label
            probe.remove()
            inside = (box.x0 >= axes_box.x0 and box.x1 <= axes_box.x1 and box.y0 >= axes_box.y0
                      and box.y1 <= axes_box.y1)
            covered = 0
            if len(pts):
                hit = ((pts[:, 0] >= box.x0 - 1) & (pts[:, 0] <= box.x1 + 1) & (pts[:, 1] >= box.y0 - 1)
                       & (pts[:, 1] <= box.y1 + 1))
                hit &= ~((np.abs(pts[:, 0] - here[0]) < 0.5) & (np.abs(pts[:, 1] - here[1]) < 0.5))  # its own point
                covered = int(hit.sum())
            score = (sum(box.overlaps(b) for b in placed), 0 if inside else 1, covered, k)
            if best is None or score < best[0]:
                best = (score, (dx, dy, ha, va, leader), box)
            if score[:3] == (0, 0, 0):
                break
        dx, dy, ha, va, leader = best[1]
        extra = {"arrowprops": {"arrowstyle": "-", "color": "0.55", "lw": 0.5, "shrinkA": 0, "shrinkB": 2}} \
            if leader else {}
        chosen = (ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **kw, **extra),
                  best[2])
        placed.append(chosen[1])
        out.append(chosen[0])
    return out
