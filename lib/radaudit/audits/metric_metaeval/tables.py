"""metric_metaeval's tables (Tables 4/5, undefined scores per metric, the context ablation) and the run summary."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal

import pandas as pd

from radaudit.audits.metric_metaeval.scores import metric_label, table_columns
from radaudit.audits.metric_metaeval.verifier import mark_labels, verifier_column
from radaudit.errors import DataFormatError, ParamsError
from radaudit.tables import NA_REP, format_ci, format_number

log = logging.getLogger(__name__)


def score_table(long: pd.DataFrame, score: Literal["DS", "RS"], digits: int = 2,
                marks: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 4 (``"DS"``) or Table 5 (``"RS"``) layout: one row per metric, the 20 aspect/error-type
    columns in the paper's order, then ``Overall``. Every cell reads ``"estimate [low, high]"`` (x 100,
    :func:`radaudit.tables.format_ci` at ``digits``; ``"85.00 [n/a]"`` where a cell has no interval, e.g. one pair;
    ``"n/a"`` where a metric has no pair in that column): the cells' CIs come from the same bootstrap replicates
    over pairs as the bootstrap Overall's (:func:`~radaudit.audits.metric_metaeval.scores.ds_rs_long`). When
    ``long``'s Overall rows carry another CI method (``overall_ci="paper"``: mean ± 1.96·SD/√k over the k column
    means), the Overall column is named for it, ``"Overall (paper: ...)"``, so the table says which.
    ``marks`` (:func:`~radaudit.audits.metric_metaeval.verifier.verifier_marks`): those metrics' names get
    :data:`~radaudit.audits.metric_metaeval.verifier.VERIFIER_MARK` (the caption carries
    :func:`~radaudit.audits.metric_metaeval.verifier.verifier_footnote`)."""
    if score not in ("DS", "RS"):
        raise ParamsError(f"score must be 'DS' or 'RS', got {score!r}")
    part = long[long["score"] == score]
    if part.empty:
        raise DataFormatError(f"no {score} rows in the long table")
    if marks:
        part = part.assign(label=mark_labels(part["label"], part["metric"], marks))
    part = part.assign(cell=[format_ci(e, lo, hi, digits) for e, lo, hi in zip(part["estimate"], part["low"], part["high"])])
    wide = part.pivot_table(index="label", columns="column", values="cell", aggfunc="first", sort=False)
    cols = [c for c in table_columns() if c in wide.columns]
    wide = wide[cols].fillna(NA_REP)
    overall_methods = part.loc[part["column"] == "Overall", "ci_method"].dropna().unique() if "ci_method" in part else []
    cell_methods = part.loc[part["column"] != "Overall", "ci_method"].dropna().unique() if "ci_method" in part else []
    if len(overall_methods) == 1 and set(overall_methods) != set(cell_methods) and "Overall" in wide.columns:
        wide = wide.rename(columns={"Overall": f"Overall ({overall_methods[0]})"})
    wide.columns.name = None
    wide.index.name = "Metric"
    return wide.reset_index()


def context_comparison(auroc_paper: pd.DataFrame, auroc_full: pd.DataFrame,
                       marks: Mapping[str, str] | None = None, change: pd.DataFrame | None = None) -> pd.DataFrame:
    """Overall AUROC per metric with the paper's reduced context for insignificant pairs vs the same
    rewrites kept whole (``context="full"``): how much of the separation is the context design. ``change`` =
    ``auroc_full − auroc_paper``; with ``change`` (:func:`~radaudit.audits.metric_metaeval.scores.auroc_change` of
    the two score tables: a paired bootstrap over pairs) its 95% CI follows it as ``change_low``/``change_high``. A
    last column ``shares_verifier`` gives, for a metric in ``marks``, why it is left out of the median findings."""
    cols = ["label", "auroc", "low", "high", "p_adj"]
    a = auroc_paper[auroc_paper["aspect"] == "Overall"][["metric", *cols]]
    b = auroc_full[auroc_full["aspect"] == "Overall"][["metric", *cols]]
    out = a.merge(b.drop(columns="label"), on="metric", suffixes=("_paper", "_full"))
    out["change"] = out["auroc_full"] - out["auroc_paper"]
    if change is not None:
        out = out.merge(change[["metric", "change_low", "change_high"]], on="metric", how="left")
    return verifier_column(out, marks or {})


def undefined_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per metric: pairs scored, undefined (NaN) scores, and their share."""
    g = scores.groupby("metric", sort=False)["score"]
    out = pd.DataFrame({"pairs": g.size(), "undefined": g.apply(lambda s: int(s.isna().sum()))}).reset_index()
    out["undefined_share"] = out["undefined"] / out["pairs"]
    out.insert(1, "label", out["metric"].map(metric_label))
    return out


# ----------------------------------------------------------------------------------------------
# findings in words


def fill_line(fill: pd.DataFrame) -> str:
    """One sentence on the pair dataset: pairs filled of the target, rewrites rejected, unparseable replies."""
    target, filled, rejected = int(fill["target"].sum()), int(fill["filled"].sum()), int(fill["rejected"].sum())
    unparseable = int(fill["unparseable"].sum()) if "unparseable" in fill.columns else 0
    return (f"**Pair dataset.** {filled} of {target} GT-ME pairs filled; {rejected} rewrites rejected, of which "
            f"{unparseable} were model replies that never matched the JSON schema (counted, kept in "
            "pairs_dataset/rejected.parquet)" + (": no discrimination/robustness pair is left, so Tables 4/5 and the "
                                                 "AUROC were not computed." if filled == 0 else "."))


def summary_lines(long: pd.DataFrame | None, auroc_tab: pd.DataFrame | None, mono: pd.DataFrame | None = None,
                  agreement: pd.DataFrame | None = None, *, fdr_alpha: float = 0.05,
                  fill: pd.DataFrame | None = None, marks: Mapping[str, str] | None = None) -> list[str]:
    """Plain-language findings computed from the run's tables (the notebook prints them). ``long`` and
    ``auroc_tab`` are ``None`` when no discrimination/robustness pair was left; ``fill`` (the pair dataset's
    fill table) adds a first line on pairs filled and rewrites rejected; ``marks`` (the metrics that share the
    pairs' verifier, :func:`~radaudit.audits.metric_metaeval.verifier.verifier_marks`) adds a line naming them."""
    lines = [fill_line(fill)] if fill is not None else []
    if marks:
        by: dict[str, list[str]] = {}
        for m, why in marks.items():
            by.setdefault(why, []).append(metric_label(m))
        lines.append("**Scored partly by construction.** " + "; ".join(f"{', '.join(ms)}: {why}" for why, ms in by.items())
                     + ". The rewrites were verified with the labeler or text toolkit these metrics score with, so their "
                     "scores on these pairs partly repeat the verifier's verdict (marked † in the tables); the median-AUROC "
                     "findings leave them out.")
    empty = pd.DataFrame(columns=["column", "label", "score", "estimate", "aspect", "auroc"])
    long = empty if long is None else long
    auroc_tab = empty if auroc_tab is None else auroc_tab
    ov = long[long["column"] == "Overall"].pivot_table(index="label", columns="score", values="estimate", sort=False)
    au = auroc_tab[auroc_tab["aspect"] == "Overall"].set_index("label")
    if {"DS", "RS"} <= set(ov.columns):
        gap = (ov["RS"] - ov["DS"]).sort_values(ascending=False)
        inverted = [m for m in gap.index if gap[m] < 0]
        lines.append("**Discrimination vs robustness.** Mean score on harmful (significant) vs harmless (insignificant) "
                     "rewrites, × 100: " + "; ".join(f"{m} {ov.at[m, 'DS']:.1f} vs {ov.at[m, 'RS']:.1f}" for m in gap.index)
                     + "." + (f" **{', '.join(inverted)}** score harmful rewrites *higher* than harmless ones on average."
                              if inverted else ""))
    if not au.empty:
        best = au["auroc"].idxmax()
        worst = au["auroc"].idxmin()
        n_sep = int(au["separates"].sum())
        lines.append(f"**Separation (AUROC, all aspects).** Best: {best} "
                     f"{format_ci(au.at[best, 'auroc'], au.at[best, 'low'], au.at[best, 'high'])}; "
                     f"worst: {worst} {format_ci(au.at[worst, 'auroc'], au.at[worst, 'low'], au.at[worst, 'high'])}. "
                     f"{n_sep} of {len(au)} metrics separate significant from insignificant errors better than chance "
                     f"(BH-adjusted p ≤ {fdr_alpha:g}); none reaches the AUROC of 1 a clinically sound metric would have."
                     if au["auroc"].max() < 0.999 else
                     f"{n_sep} of {len(au)} metrics separate significant from insignificant errors (BH p ≤ {fdr_alpha:g}).")
        per = auroc_tab[auroc_tab["aspect"] != "Overall"]
        if not per.empty:
            worst_aspects = per.groupby("aspect")["auroc"].median().sort_values()
            below = [a for a, v in worst_aspects.items() if v < 0.5]
            lines.append("**Where metrics fail.** Median AUROC over metrics per aspect, lowest first: "
                         + ", ".join(f"{a} {v:.2f}" for a, v in worst_aspects.head(5).items()) + "."
                         + (f" On {', '.join(below)} the typical metric ranks the *harmful* rewrite above the harmless one."
                            if below else ""))
    if mono is not None and not mono.empty:
        viol = mono.dropna(subset=["violations"])
        perfect = viol[viol["violations"] == 0]["label"].tolist()
        common = pd.Series([t for v in viol["violated"] for t in str(v).split(", ") if "→" in t]).value_counts()
        lines.append(f"**Monotonicity.** {len(perfect)} of {len(viol)} metrics fall at every step from group 0 to 4"
                     + (f" ({', '.join(perfect)})" if perfect else "") + ". "
                     + ("Most often violated transitions: "
                        + ", ".join(f"{t} ({c} metrics)" for t, c in common.head(3).items()) + "."
                        if len(common) else "No transition is violated.")
                     + " Mean within-report Kendall τ ranges from "
                     f"{format_number(mono['tau'].min())} to {format_number(mono['tau'].max())}.")
    if agreement is not None and not agreement.empty:
        p = agreement[(agreement["method"] == "pearson")
                      & (agreement["reports"] == "all reports")].set_index("value")["estimate"]
        p = p.dropna()
        if not p.empty:
            low = [k.replace("_", " ") for k, v in p.items() if v < 0.6]
            lines.append("**How far do radiologists agree? (Table 1 analog, RadPref)** Mean pairwise Pearson of the three "
                         "radiologists' error counts ranges from "
                         f"{format_number(p.min())} ({p.idxmin().replace('_', ' ')}) to "
                         f"{format_number(p.max())} ({p.idxmax().replace('_', ' ')}); the paper found 0.0–0.55 between "
                         "ReXVal's six radiologists. "
                         + (f"Agreement is low (< 0.6) for {', '.join(low)}: there, a metric's correlation with "
                            "radiologists' counts is capped by the radiologists' own disagreement and cannot validate it."
                            if low else "Agreement is at least moderate for every error type here."))
    return lines
