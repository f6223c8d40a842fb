"""Inter-radiologist agreement on error counts (the paper's Table 1): RadPref and ReXVal."""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from radaudit.data.io import read_json_checked
from radaudit.data.radpref import ATTRIBUTE_LEVELS, CANDIDATES, RATER_FILES, SIGNIFICANCE, read_cases
from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import (
    average_ranks,
    bootstrap_ci,
    pearson_r,
    pearson_r_pairs,
    pearson_test,
    spearman_test,
    stable_seed,
)
from radaudit.tables import format_ci, format_number

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# inter-annotator agreement (Table 1)


def _corr(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Pearson or Spearman correlation of two aligned vectors on the items both rated; NaN when either is constant
    or n < 3.

    Spearman's ρ is Pearson's r of the average ranks (:func:`radaudit.stats.average_ranks`), so both methods share
    :func:`radaudit.stats.pearson_r`, as :func:`_mean_pairwise` and :func:`_mean_pairwise_rows` share
    :func:`radaudit.stats.pearson_r_pairs`."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    if method == "spearman":
        x, y = average_ranks(x), average_ranks(y)
    elif method != "pearson":
        raise ParamsError(f"method must be 'pearson' or 'spearman', got {method!r}")
    return pearson_r(x, y)


def _mean_pairwise(mat: np.ndarray, method: str) -> float:
    """Mean over rater pairs (columns) of their correlation over items (rows); undefined pairs left out.

    When every rater rated every item (no NaN) all pairs come from one centred Gram matrix: the same numbers as
    :func:`_corr` pair by pair, about as many times faster as there are rater pairs (ReXVal: 15), which is what the
    bootstrap repeats per replicate and cell. With gaps each pair uses the items both rated (:func:`_corr`)."""
    if method not in ("pearson", "spearman"):
        raise ParamsError(f"method must be 'pearson' or 'spearman', got {method!r}")
    if mat.shape[1] >= 2 and np.isfinite(mat).all():
        if mat.shape[0] < 3:
            return math.nan
        x = average_ranks(mat, axis=0) if method == "spearman" else mat
        a, b = np.triu_indices(mat.shape[1], 1)
        keep = (np.ptp(mat, axis=0)[a] > 0) & (np.ptp(mat, axis=0)[b] > 0)  # a constant rater has no correlation
        if not keep.any():
            return math.nan
        return float(np.mean(pearson_r_pairs(x, a[keep], b[keep])))
    vals = [_corr(mat[:, a], mat[:, b], method) for a, b in itertools.combinations(range(mat.shape[1]), 2)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def _mean_pairwise_rows(mat: np.ndarray, idx: np.ndarray, method: str) -> np.ndarray:
    """:func:`_mean_pairwise` of ``mat[idx[k]]`` for every row ``k`` of ``idx`` at once (a bootstrap's resamples:
    ``bootstrap_ci(vectorized=True)``), for a matrix without gaps: the same centred Gram computation, batched."""
    x = mat[idx]  # resamples x items x raters
    if x.shape[1] < 3:
        return np.full(len(idx), np.nan)
    spread = np.ptp(x, axis=1)
    if method == "spearman":
        x = average_ranks(x, axis=1)
    a, b = np.triu_indices(mat.shape[1], 1)
    keep = (spread[:, a] > 0) & (spread[:, b] > 0)  # a constant rater has no correlation
    r = pearson_r_pairs(x, a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(keep.any(axis=1), np.where(keep, r, 0.0).sum(axis=1) / keep.sum(axis=1), np.nan)


def _rater_matrices(counts: pd.DataFrame, item: Sequence[str], rater: str, values: Sequence[str]) -> dict[str, pd.DataFrame]:
    item, values = list(item), list(values)
    missing = [c for c in [*item, rater, *values] if c not in counts.columns]
    if missing:
        raise DataFormatError(f"counts lacks the columns {missing}")
    if counts.duplicated([*item, rater]).any():
        raise DataFormatError(f"counts has more than one row per ({', '.join(item)}, {rater})")
    raters = sorted(counts[rater].unique())
    if len(raters) < 2:
        raise DataFormatError(f"agreement needs at least two raters, found {raters}")
    return {v: counts.pivot_table(index=item, columns=rater, values=v, aggfunc="first").reindex(columns=raters)
            for v in values}


def pairwise_rater_correlations(counts: pd.DataFrame, *, item: Sequence[str], rater: str,
                                values: Sequence[str]) -> pd.DataFrame:
    """Pearson and Spearman correlation between every two raters of each count column.

    ``counts``: one row per item x rater (``item`` columns identify a rated report). For raters a < b
    the items both rated are used. One row per value column x rater pair: ``n``, ``pearson``,
    ``pearson_p``, ``spearman``, ``spearman_p`` (NaN when either vector is constant or n < 3).
    """
    rows = []
    for v, wide in _rater_matrices(counts, item, rater, values).items():
        for a, b in itertools.combinations(wide.columns, 2):
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(float), both[b].to_numpy(float)
            row = {"value": v, "rater_a": a, "rater_b": b, "n": len(both), "pearson": math.nan, "pearson_p": math.nan,
                   "spearman": math.nan, "spearman_p": math.nan}
            if len(both) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
                (r, r_p), (rho, rho_p) = pearson_test(x, y), spearman_test(x, y)
                row.update(pearson=r, pearson_p=r_p, spearman=rho, spearman_p=rho_p)
            rows.append(row)
    return pd.DataFrame(rows)


def mean_pairwise_agreement(counts: pd.DataFrame, *, item: Sequence[str], rater: str, values: Sequence[str],
                            method: Literal["pearson", "spearman"] = "pearson") -> dict[str, float]:
    """``{value column: mean over rater pairs of the correlation}`` (undefined pairs left out)."""
    return {v: _mean_pairwise(w.to_numpy(float), method) for v, w in _rater_matrices(counts, item, rater, values).items()}


#: RadPref error types -> the paper's error types; significance mapping (module docstring).
RADPREF_TYPES: dict[str, str] = {"false": "fabrication", "missing": "omission", "attribute": "inaccuracy"}
RADPREF_SIGNIFICANT = ("urgent", "actionable_not_urgent")
RADPREF_INSIGNIFICANT = ("not_actionable_not_urgent", "benign_expected")
AGREEMENT_TYPES: tuple[str, ...] = ("fabrication", "omission", "inaccuracy")


def radpref_error_counts(folder: str | Path) -> pd.DataFrame:
    """Per case x candidate x rater: errors per paper error type x significance from RadPref's raw
    annotation files (false finding = fabrication, missing finding = omission, attribute error =
    inaccuracy; significance as the module docstring). Columns ``case_id, candidate, candidate_source,
    rater`` and ``<significant|insignificant>_<type>`` for the three types, plus ``..._total``."""
    folder = Path(folder)
    cases = read_cases(folder)
    rows = []
    for n, rel in RATER_FILES.items():
        data = read_json_checked(folder / rel, dataset="radpref_annotations", top_level=dict,
                                 expected="a JSON object with 'user_id' and 'annotations'")
        ann = data.get("annotations")
        if not isinstance(ann, dict):
            raise DataFormatError(f"radpref: {folder / rel} has no 'annotations' object")
        rater_id = int(data.get("user_id", n))
        for case in cases:
            cid = str(case["id"])
            for cand in CANDIDATES:
                a = (ann.get(cid) or {}).get(cand)
                if a is None:
                    continue
                c = {f"{s}_{t}": 0 for s in ("significant", "insignificant") for t in AGREEMENT_TYPES}

                def add(level: str, etype: str, where: str) -> None:
                    if level in RADPREF_SIGNIFICANT or level == "significant":
                        c[f"significant_{etype}"] += 1
                    elif level in RADPREF_INSIGNIFICANT or level == "negligible":
                        c[f"insignificant_{etype}"] += 1
                    else:
                        raise DataFormatError(f"radpref: {where}: significance {level!r}; expected one of "
                                              f"{SIGNIFICANCE} or {ATTRIBUTE_LEVELS}")

                where = f"{rel}: case {cid} {cand}"
                for idx, err in (a.get("finding_errors") or {}).items():
                    if err.get("error_type") == "false":
                        add(err.get("clinical_significance"), "fabrication", f"{where} finding {idx}")
                    elif err.get("error_type") == "attribute":
                        for attr, level in (err.get("attributes") or {}).items():
                            add(level, "inaccuracy", f"{where} finding {idx} attribute {attr}")
                    else:
                        raise DataFormatError(f"radpref: {where}: finding {idx} has error_type {err.get('error_type')!r}")
                for idx, miss in (a.get("missing_findings") or {}).items():
                    add((miss or {}).get("clinical_significance"), "omission", f"{where} missing {idx}")
                rows.append({"case_id": cid, "candidate": cand, "candidate_source": case[f"{cand}_source"],
                             "rater": rater_id, **c})
    out = pd.DataFrame(rows)
    for s in ("significant", "insignificant"):
        out[f"{s}_total"] = out[[f"{s}_{t}" for t in AGREEMENT_TYPES]].sum(axis=1)
    return out.sort_values(["case_id", "candidate", "rater"], kind="stable").reset_index(drop=True)


def _agreement_cells(groups: Mapping[str, pd.DataFrame], *, item: list[str], cluster: str, rater: str,
                     values: list[str], n_bootstrap: int, confidence: float, seed: int) -> pd.DataFrame:
    """Mean pairwise Pearson and Spearman per report set x value, with a cluster bootstrap CI
    (``cluster`` resampled with replacement, all its items kept)."""
    rows = []
    for gname, sub in groups.items():
        mats = _rater_matrices(sub, item, rater, values)
        for v, wide in mats.items():
            mat = wide.to_numpy(float)
            units = wide.index.get_level_values(cluster).to_numpy() if cluster in wide.index.names else np.arange(len(wide))
            for method in ("pearson", "spearman"):
                est = _mean_pairwise(mat, method)
                row = {"reports": gname, "method": method, "value": v, "estimate": est, "low": math.nan,
                       "high": math.nan, "n_items": int(len(wide)), "n_raters": int(mat.shape[1])}
                if n_bootstrap and np.isfinite(est) and len(np.unique(units)) >= 2:
                    # every resample at once where it can (no gaps, clusters of one size), else one at a time
                    fast = bool(np.isfinite(mat).all()) and pd.Series(units).value_counts().nunique() == 1
                    stat = ((lambda idx, m=mat, meth=method: _mean_pairwise_rows(m, idx, meth)) if fast else
                            (lambda idx, m=mat, meth=method: _mean_pairwise(m[idx], meth)))
                    try:
                        ci = bootstrap_ci(np.arange(len(mat)), stat, units=units, n_bootstrap=n_bootstrap,
                                          confidence=confidence, method="percentile", max_failed=0.5,
                                          seed=stable_seed(seed, "agree", gname, method, v), vectorized=fast)
                        row["low"], row["high"] = ci.low, ci.high
                    except Exception as err:  # noqa: BLE001 - a CI that cannot be formed stays n/a; the reason is logged
                        log.info("agreement CI %s/%s/%s not computed: %s", gname, method, v, err)
                rows.append(row)
    return pd.DataFrame(rows)


def radpref_agreement(counts: pd.DataFrame, *, n_bootstrap: int = 0, confidence: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Table 1 analog on RadPref: mean pairwise Pearson / Spearman between the three radiologists, per
    candidate source (``gpt``, ``medgemma``, ``all``) x significance x error type (+ total). CI:
    bootstrap over cases (a case's two candidates stay together). Long form."""
    values = [f"{s}_{t}" for s in ("significant", "insignificant") for t in (*AGREEMENT_TYPES, "total")]
    groups = {f"{src} reports": g for src, g in counts.groupby("candidate_source", sort=True)}
    groups["all reports"] = counts
    return _agreement_cells(groups, item=["case_id", "candidate"], cluster="case_id", rater="rater",
                            values=values, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)


REXVAL_CANDIDATE_LABELS = {"bertscore": "BERTScore reports", "bleu": "BLEU reports", "radgraph": "Radgraph reports",
                           "s_emb": "S-Emb reports"}


def rexval_error_counts(errors: pd.DataFrame) -> pd.DataFrame:
    """ReXVal's long error table (``load_dataset("rexval", table="errors")``) as one row per study x
    candidate x rater with ``significant_<1..6>`` / ``insignificant_<1..6>`` counts (missing = 0)."""
    need = {"study_number", "candidate_type", "rater_index", "error_category", "num_errors_significant",
            "num_errors_insignificant"}
    if not need <= set(errors.columns):
        raise DataFormatError(f"ReXVal errors need columns {sorted(need)}; load them with "
                              "load_dataset('rexval', table='errors').")
    e = errors.assign(error_category=errors["error_category"].astype(int))
    keys = e[["study_number", "candidate_type", "rater_index"]].drop_duplicates()
    out = keys.copy()
    for s in ("significant", "insignificant"):
        wide = e.pivot_table(index=["study_number", "candidate_type", "rater_index"], columns="error_category",
                             values=f"num_errors_{s}", aggfunc="sum")
        wide = wide.reindex(columns=range(1, 7)).fillna(0)
        wide.columns = [f"{s}_{c}" for c in wide.columns]
        out = out.merge(wide.reset_index(), on=["study_number", "candidate_type", "rater_index"], how="left")
    cols = [c for c in out.columns if c.startswith(("significant_", "insignificant_"))]
    out[cols] = out[cols].fillna(0).astype(int)
    return out.sort_values(["candidate_type", "study_number", "rater_index"]).reset_index(drop=True)


def rexval_agreement(counts: pd.DataFrame, *, n_bootstrap: int = 0, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The paper's Table 1 on ReXVal: per candidate type x significance x category 1–6, the mean
    pairwise Pearson (and Spearman) between raters across the studies. Long form."""
    values = [f"{s}_{c}" for s in ("significant", "insignificant") for c in range(1, 7)]
    groups = {REXVAL_CANDIDATE_LABELS.get(k, f"{k} reports"): g for k, g in counts.groupby("candidate_type", sort=True)}
    return _agreement_cells(groups, item=["study_number", "candidate_type"], cluster="study_number",
                            rater="rater_index", values=values, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)


def agreement_table(long: pd.DataFrame, method: Literal["pearson", "spearman"] = "pearson", *, with_ci: bool = False,
                    digits: int = 3) -> pd.DataFrame:
    """Table 1 layout: rows = report sets, columns = ``Significant <type>`` ... ``Insignificant <type>``."""
    part = long[long["method"] == method]
    if part.empty:
        raise DataFormatError(f"no {method} rows in the agreement table")
    part = part.assign(cell=[format_ci(e, lo, hi, digits) if with_ci else format_number(e, digits)
                             for e, lo, hi in zip(part["estimate"], part["low"], part["high"])],
                       col=[v.replace("insignificant_", "Insignificant ").replace("significant_", "Significant ")
                            for v in part["value"]])
    wide = part.pivot_table(index="reports", columns="col", values="cell", aggfunc="first", sort=False)
    wide = wide[list(dict.fromkeys(part["col"]))]
    wide.index.name = "Reports"
    return wide.reset_index()
