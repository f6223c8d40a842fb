"""Table 4 of paper 004: one row per training source, one column per label, AUROC cells with the paper's marks.

:func:`utility_flags` is the long table (source × label, CIs, paired differences, flags); :func:`utility_table`
pivots it into the paper's layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.inputs import MACRO
from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import benjamini_hochberg
from radaudit.tables import format_number

__all__ = ["MACRO_ALL_LABELS", "MIN_TEST_IMAGES", "macro_legend", "too_few_test_images", "utility_flags", "utility_table"]

MIN_TEST_IMAGES = 10
"""A per-label AUROC is reported only for a label with at least this many positive and this many negative test
images (issue 42): below it the number says more about a handful of images than about the classifier. The headline
macro AUROC (label ``"macro"``) averages only the labels at or above it
(:func:`radaudit.audits.synthetic_cxr.utility.run_utility`)."""

MACRO_ALL_LABELS = "macro (all labels)"
"""The label of the macro AUROC over every label with both classes in the test set (the paper's and the authors' macro),
kept beside the headline ``"macro"`` when the :data:`MIN_TEST_IMAGES` floor leaves some label out of it."""

_MACROS = (MACRO, MACRO_ALL_LABELS)


def too_few_test_images(long: pd.DataFrame, min_test_images: int = MIN_TEST_IMAGES) -> dict[str, str]:
    """``{label: "too few test images (4 positives)"}`` for every label of the long utility table (``label, n_pos,
    n_neg``, :func:`utility_flags`) with fewer than ``min_test_images`` positive or negative test images (the
    macro rows are no labels and are never listed). Presentation only: the AUROCs stay in the long table and its
    files."""
    if min_test_images <= 0 or not {"label", "n_pos", "n_neg"} <= set(long.columns):
        return {}
    out = {}
    for r in long[~long["label"].isin(_MACROS)].drop_duplicates("label").itertuples(index=False):
        pos, neg = r.n_pos, r.n_neg
        if pd.isna(pos) or pd.isna(neg):
            continue
        few = [f"{int(pos)} positive{'s' if int(pos) != 1 else ''}"] if pos < min_test_images else []
        few += [f"{int(neg)} negative{'s' if int(neg) != 1 else ''}"] if neg < min_test_images else []
        if few:
            out[str(r.label)] = f"too few test images ({', '.join(few)})"
    return out

def macro_legend(long: pd.DataFrame, min_test_images: int = MIN_TEST_IMAGES) -> str:
    """Which labels each macro AUROC of the long utility table averages, in words for Table 4's legend (``""`` without
    a macro row): the headline ``macro`` over the labels with at least ``min_test_images`` positive and negative test
    images, ``macro (all labels)`` over every label with both classes. Read from the labels' ``n_pos``/``n_neg`` (one
    test set for every source); ``min_test_images`` is the floor
    :func:`~radaudit.audits.synthetic_cxr.utility.run_utility` applied (both default to :data:`MIN_TEST_IMAGES`)."""
    present = set(long["label"].astype(str)) if "label" in long.columns else set()
    if MACRO not in present or not {"n_pos", "n_neg"} <= set(long.columns):
        return ""
    labs = long[~long["label"].isin(_MACROS)].drop_duplicates("label")
    both = [str(r.label) for r in labs.itertuples(index=False) if r.n_pos > 0 and r.n_neg > 0]
    floored = [str(r.label) for r in labs.itertuples(index=False) if min(r.n_pos, r.n_neg) >= min_test_images]
    m = min_test_images
    if MACRO_ALL_LABELS in present:
        return (f"macro: mean AUROC over the labels with at least {m} positive and {m} negative test images "
                f"({', '.join(floored) or 'none'}); {MACRO_ALL_LABELS}: over every label with both classes in the test "
                f"set ({', '.join(both) or 'none'}).")
    return f"macro: mean AUROC over {', '.join(both) or 'no label'}" + (
        f", each with at least {m} positive and {m} negative test images." if both and floored == both else ".")


def _long_from(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str) -> pd.DataFrame:
    if isinstance(per_generator, pd.DataFrame):
        if "source" not in per_generator.columns:
            raise DataFormatError("A long utility table needs a 'source' column (the training source of each row).")
        long = per_generator.copy()
    else:
        if not per_generator:
            raise ParamsError("per_generator is empty: pass {training source: per_label_auroc table}.")
        frames = []
        for src, tab in per_generator.items():
            missing = [c for c in ("label", "auroc") if c not in tab.columns]
            if missing:
                raise DataFormatError(f"The table of {src!r} has no column(s) {missing}; pass per_label_auroc output.")
            frames.append(tab.assign(source=src))
        long = pd.concat(frames, ignore_index=True)
        long = long[["source", *[c for c in long.columns if c != "source"]]]
    sources = list(pd.unique(long["source"]))
    if baseline not in sources:
        raise ParamsError(f"The baseline {baseline!r} is not among the training sources {sources}; "
                          "train a classifier on the real training images and name it so.")
    order = [baseline, *[s for s in sources if s != baseline]]
    long["source"] = pd.Categorical(long["source"], categories=order, ordered=True)
    long = long.sort_values("source", kind="stable").reset_index(drop=True)
    long["source"] = long["source"].astype(str)
    return long


def utility_flags(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str = "real", *,
                  differences: pd.DataFrame | None = None, tolerance: float = 0.01, alpha: float = 0.05,
                  digits: int = 2) -> pd.DataFrame:
    """The long Table-4 table: one row per source × label (+ macro) with CIs and the paper's flags.

    Flags (NA for the baseline's own row and for NaN cells), computed on the AUROCs **rounded to
    ``digits``** as the paper compares its printed 2-decimal values:

    * ``ge_baseline`` — matches or exceeds the baseline (the paper's bold);
    * ``within_tolerance`` — below the baseline by at most ``tolerance`` = 0.01 (underlined);
    * ``significant`` — with ``differences`` (:func:`paired_auroc_differences`): the paired-bootstrap
      p-value, Benjamini–Hochberg-adjusted (``p_adj``) over all non-baseline cells with a p-value
      (labels and macro × generators, one family), is ``<= alpha``. Without ``differences`` the
      p-values already in a long input table (a previous :func:`utility_flags` result) are used, else
      these columns are NaN/NA.
    """
    if not (isinstance(tolerance, (int, float)) and tolerance >= 0):
        raise ParamsError(f"tolerance must be a non-negative number (paper: 0.01), got {tolerance!r}.")
    long = _long_from(per_generator, baseline)
    base = long[long["source"] == baseline].drop_duplicates("label").set_index("label")["auroc"]
    long["auroc_baseline"] = long["label"].map(base).astype(float)
    a = long["auroc"].astype(float).round(digits)
    b = long["auroc_baseline"].round(digits)
    eps = 10.0 ** -(digits + 6)
    valid = a.notna() & b.notna() & (long["source"] != baseline)
    long["ge_baseline"] = pd.array(np.where(valid, a >= b - eps, False), dtype="boolean")
    long["within_tolerance"] = pd.array(np.where(valid, (a < b - eps) & (b - a <= tolerance + eps), False),
                                        dtype="boolean")
    long.loc[~valid, ["ge_baseline", "within_tolerance"]] = pd.NA
    carried = differences is None and isinstance(per_generator, pd.DataFrame) and "pvalue" in long.columns
    for c in ("diff", "diff_low", "diff_high", "pvalue", "p_adj"):
        if not (carried and c in long.columns and c != "p_adj"):
            long[c] = math.nan
    long["significant"] = pd.array([pd.NA] * len(long), dtype="boolean")
    if differences is not None:
        need = ["source", "label", "diff", "diff_low", "diff_high", "pvalue"]
        missing = [c for c in need if c not in differences.columns]
        if missing:
            raise DataFormatError(f"differences has no column(s) {missing}; pass paired_auroc_differences output.")
        d = differences.set_index(["source", "label"])
        key = list(zip(long["source"], long["label"]))
        for c in ("diff", "diff_low", "diff_high", "pvalue"):
            long[c] = [float(d[c].get(k, math.nan)) for k in key]
        if "note" in differences.columns:
            long["test_note"] = [str(d["note"].get(k, "") or "") for k in key]
    if differences is not None or carried:
        p = long["pvalue"].to_numpy(float)
        rejected, adjusted = benjamini_hochberg(p, alpha=alpha)
        long["p_adj"] = adjusted
        has_p = ~np.isnan(p)
        long["significant"] = pd.array(np.where(has_p, rejected, False), dtype="boolean")
        long.loc[~has_p, "significant"] = pd.NA
        tn = long["test_note"] if "test_note" in long.columns else pd.Series([""] * len(long))
        long["significance"] = [
            "" if src == baseline else
            (f"p_adj = {pa:.3g}" + (" *" if sig is not pd.NA and bool(sig) else "")) if np.isfinite(pv) else
            f"n/a ({_why_untested(n)})"
            for src, pv, pa, sig, n in zip(long["source"], p, long["p_adj"].to_numpy(float),
                                           long["significant"].astype(object), tn)]
    return long


def _why_untested(note: str) -> str:
    """Why a row has no p-value, for its ``significance`` cell: the test note's ``significance n/a:`` reason,
    else the whole note (e.g. "only negatives in the test set"). Never a bare ``n/a``, which pandas and R read
    back as a missing value."""
    if "significance n/a: " in note:
        return note.split("significance n/a: ", 1)[1]
    return note.strip() or "no paired test"


def utility_table(per_generator: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str = "real", *,
                  differences: pd.DataFrame | None = None, tolerance: float = 0.01, alpha: float = 0.05,
                  digits: int = 2, marks: bool = False, ci: bool = False, min_test_images: int = 0) -> pd.DataFrame:
    """Table 4 of paper 004: rows = training source (baseline first), columns = labels + ``macro``, cells = AUROC.

    ``per_generator``: ``{source: per_label_auroc table}`` (or the long :func:`utility_flags` table).
    With ``marks=False`` the cells are the AUROC floats (the flags and CIs are in the long
    :func:`utility_flags` table). With ``marks=True`` the cells are strings with ``digits``
    decimals and ASCII marks that survive CSV/Markdown/LaTeX: ``+`` matches or exceeds the baseline
    (paper: bold), ``~`` within ``tolerance`` below it (paper: underlined), ``*`` significantly
    different from the baseline (paired bootstrap, BH-adjusted p ≤ ``alpha``; needs ``differences``);
    NaN prints as ``n/a``. ``ci=True`` (with ``marks=True``) appends the 95% bootstrap interval,
    e.g. ``"0.69+ [0.56, 0.80]"``. ``min_test_images`` (with ``marks=True``; the notebook passes
    :data:`MIN_TEST_IMAGES`): a label with fewer positive or negative test images shows ``"too few test images (4
    positives)"`` instead of a number (:func:`too_few_test_images`). The macro columns come last: ``macro`` (the
    headline, over the labels at or above the floor) and, when the floor left a label out of it, ``macro (all
    labels)``; the legend (``attrs["legend"]``) names the labels of each (:func:`macro_legend`).
    """
    long = utility_flags(per_generator, baseline, differences=differences, tolerance=tolerance, alpha=alpha,
                         digits=digits)
    sources = list(pd.unique(long["source"]))
    labels = list(pd.unique(long["label"]))
    labels = [lab for lab in labels if lab not in _MACROS] + [m for m in _MACROS if m in labels]
    wide = long.pivot_table(index="source", columns="label", values="auroc", aggfunc="first", dropna=False)
    wide = wide.reindex(index=sources, columns=labels)
    wide.index.name, wide.columns.name = "training source", None
    if not marks:
        if ci:
            raise ParamsError("ci=True needs marks=True (the cells become strings).")
        return wide

    def true(v: Any) -> bool:
        return v is not pd.NA and not (isinstance(v, float) and math.isnan(v)) and bool(v)

    def cell(r: pd.Series) -> str:
        s = format_number(r["auroc"], digits)
        if true(r["ge_baseline"]):
            s += "+"
        elif true(r["within_tolerance"]):
            s += "~"
        if true(r["significant"]):
            s += "*"
        if ci and not (pd.isna(r["ci_low"]) or pd.isna(r["ci_high"])):
            s += f" [{format_number(r['ci_low'], digits)}, {format_number(r['ci_high'], digits)}]"
        return s

    few = too_few_test_images(long, min_test_images)
    long = long.assign(_cell=[few.get(str(r["label"])) or cell(r) for _, r in long.iterrows()])
    out = long.pivot_table(index="source", columns="label", values="_cell", aggfunc="first").reindex(
        index=sources, columns=labels)
    out.index.name, out.columns.name = "training source", None
    out.attrs["legend"] = (f"'+' >= baseline ({baseline}); '~' within {tolerance:g} below it; '*' paired-bootstrap "
                           f"difference significant (BH-adjusted p <= {alpha:g}).")
    if few:
        out.attrs["legend"] += (f" A label with fewer than {min_test_images} positive or negative test images shows no "
                                "AUROC (its number is in table4_long).")
    if ci and "ci_method" in long.columns and (long["ci_method"] == "separation").any():
        out.attrs["legend"] += (" An AUROC of exactly 1 (or 0) carries the exact bound over its smaller class "
                                "(ci_method 'separation' in table4_long), not the zero-width bootstrap interval.")
    macros = macro_legend(long, min_test_images or MIN_TEST_IMAGES)
    if macros:
        out.attrs["legend"] += " " + macros[0].upper() + macros[1:]
    return out.fillna("n/a")
