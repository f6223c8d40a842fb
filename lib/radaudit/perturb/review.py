"""Clinician review of GT–ME pairs: a sheet to fill in, its loader, and agreement with the rules.

ReEvalMed had every pair "reviewed and validated by experienced clinicians" (§4.2.1, paper 001). No code
replaces that step, but the lab can make it cheap and measurable:

1. :func:`review_sheet` exports one row per pair — ``pair_id``, aspect, error type, the significance the
   rule (or LLM) assigned, the rule, the **original sentence(s)** holding the edit and the **rewritten
   sentence(s)** — with blank columns for each reviewer:

   - ``reviewer<k>_significance``: ``significant`` | ``insignificant`` | ``unsure`` — would this change,
     found in a real report, plausibly alter a clinical decision?
   - ``reviewer<k>_one_change``: ``yes`` | ``no`` — does the rewrite make exactly the stated kind of
     change (aspect and error type) and nothing else?
   - ``reviewer<k>_comment``: free text.

   A blank cell means "not reviewed" and is left out of every count. Values are read case-insensitively.
2. :func:`load_review_sheet` reads a filled sheet back (CSV) and rejects a value it does not know with
   the row, the column and the allowed values — a typo must not turn into a silent disagreement.
3. :func:`review_agreement` reports, per reviewer, how often they agree with the rule's significance
   (share with a Wilson 95% CI, Cohen's κ with a percentile bootstrap CI over pairs) and how often they
   confirm the edit is a single change of the stated kind; between every two reviewers, the same on the
   pairs both reviewed. :func:`review_by_rule` breaks the agreement down by rule, so a rule whose
   "significant" edits reviewers call harmless stands out.

κ uses :func:`sklearn.metrics.cohen_kappa_score`. Its CI is a percentile bootstrap (not BCa: with a
few dozen 0/1 agreements the jackknife acceleration is unstable); with fewer than 2 reviewed pairs, or
one class only, κ is NaN and the row says so in ``note``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError
from radaudit.stats import bootstrap_ci, stable_seed, wilson_ci
from radaudit.text.sections import sentences

__all__ = ["REVIEW_COLUMNS", "SIGNIFICANCE_VALUES", "ONE_CHANGE_VALUES", "review_sheet", "load_review_sheet",
           "reviewer_slots", "review_agreement", "review_by_rule"]

#: The pair columns of a review sheet, before the reviewer columns.
REVIEW_COLUMNS: tuple[str, ...] = ("pair_id", "aspect", "error_type", "significance", "rule", "original_sentence",
                                   "rewritten_sentence", "explanation")
SIGNIFICANCE_VALUES: tuple[str, ...] = ("significant", "insignificant", "unsure")
ONE_CHANGE_VALUES: tuple[str, ...] = ("yes", "no")
_SLOT = re.compile(r"^reviewer(\d+)_significance$")


def _sentences_around(text: str, start: int, end: int) -> str:
    """The sentence(s) of ``text`` overlapping ``[start, end]`` (an insertion: the sentence it touches)."""
    sel = [s for s in sentences(text) if s.start <= end and s.end >= start]
    if not sel:
        return text.strip()
    return text[min(s.start for s in sel): max(s.end for s in sel)].strip()


def review_sheet(pairs: pd.DataFrame, n_reviewers: int = 2) -> pd.DataFrame:
    """One row per pair (:data:`REVIEW_COLUMNS`) and blank ``reviewer<k>_significance``,
    ``reviewer<k>_one_change``, ``reviewer<k>_comment`` columns for ``k = 1..n_reviewers``.

    ``pairs``: a pair table (:attr:`radaudit.perturb.dataset.PairDataset.pairs`). Monotonicity pairs
    (``group`` set) are left out: their significance is the group's, not one rule's."""
    need = {"pair_id", "aspect", "error_type", "significance", "rule", "gt", "rewritten", "gt_start", "gt_end",
            "me_start", "me_end"}
    if not isinstance(pairs, pd.DataFrame) or not need <= set(pairs.columns):
        raise DataFormatError(f"pairs must be a pair table with columns {sorted(need)} (PairDataset.pairs).")
    if not isinstance(n_reviewers, int) or n_reviewers < 1:
        raise ParamsError(f"n_reviewers must be a positive integer, got {n_reviewers!r}.")
    df = pairs[pairs["group"].isna()] if "group" in pairs.columns else pairs
    out = pd.DataFrame({
        "pair_id": df["pair_id"].astype(str).to_numpy(),
        "aspect": df["aspect"].to_numpy(), "error_type": df["error_type"].to_numpy(),
        "significance": df["significance"].to_numpy(), "rule": df["rule"].to_numpy(),
        "original_sentence": [_sentences_around(t, int(a), int(b))
                              for t, a, b in zip(df["gt"], df["gt_start"], df["gt_end"])],
        "rewritten_sentence": [_sentences_around(t, int(a), int(b))
                               for t, a, b in zip(df["rewritten"], df["me_start"], df["me_end"])],
        "explanation": df["explanation"].to_numpy() if "explanation" in df.columns else "",
    })
    for k in range(1, n_reviewers + 1):
        out[f"reviewer{k}_significance"] = ""
        out[f"reviewer{k}_one_change"] = ""
        out[f"reviewer{k}_comment"] = ""
    return out


def reviewer_slots(sheet: pd.DataFrame) -> list[int]:
    """The reviewer numbers ``k`` of a sheet's ``reviewer<k>_significance`` columns, sorted."""
    return sorted(int(m.group(1)) for c in sheet.columns if (m := _SLOT.match(str(c))))


def load_review_sheet(path: str | os.PathLike) -> pd.DataFrame:
    """Read a filled review sheet (CSV) and validate it; values are lower-cased and stripped, blanks = "".

    Raises :class:`~radaudit.errors.DataFormatError` naming the file, the row (``pair_id``), the column
    and the allowed values for anything it cannot read."""
    p = Path(path)
    if not p.is_file():
        raise DataFormatError(f"No review sheet at {p}: export one with radaudit.perturb.review.review_sheet "
                              "(a metric_metaeval run writes tables/review_sheet.csv).")
    sheet = pd.read_csv(p, dtype=str, keep_default_na=False)
    missing = [c for c in ("pair_id", "significance", "rule") if c not in sheet.columns]
    if missing:
        raise DataFormatError(f"{p.name} lacks the columns {missing}; keep the exported sheet's columns.")
    slots = reviewer_slots(sheet)
    if not slots:
        raise DataFormatError(f"{p.name} has no reviewer<k>_significance column; keep the exported sheet's columns.")
    if sheet["pair_id"].duplicated().any():
        dup = sheet.loc[sheet["pair_id"].duplicated(), "pair_id"].iloc[0]
        raise DataFormatError(f"{p.name}: pair {dup} appears twice; each pair must have one row.")
    for k in slots:
        for col, allowed in ((f"reviewer{k}_significance", SIGNIFICANCE_VALUES),
                             (f"reviewer{k}_one_change", ONE_CHANGE_VALUES)):
            if col not in sheet.columns:
                sheet[col] = ""
                continue
            vals = sheet[col].str.strip().str.lower()
            bad = ~vals.isin(("", *allowed))
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataFormatError(f"{p.name}, pair {sheet.at[i, 'pair_id']} (row {i + 2}), column {col}: "
                                      f"{sheet.at[i, col]!r} is not one of {', '.join(allowed)} (or blank = not reviewed).")
            sheet[col] = vals
    return sheet


def _kappa(a: Sequence[str], b: Sequence[str]) -> float:
    from sklearn.metrics import cohen_kappa_score

    a, b = np.asarray(a), np.asarray(b)
    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return float("nan")
    return float(cohen_kappa_score(a, b))


def _compare(a: np.ndarray, b: np.ndarray, *, what: str, rule: str, n_bootstrap: int, confidence: float,
             seed: int) -> dict:
    n = int(len(a))
    agree = int((a == b).sum())
    row = {"comparison": what, "rule": rule, "n": n, "agreement": np.nan, "low": np.nan, "high": np.nan,
           "kappa": np.nan, "kappa_low": np.nan, "kappa_high": np.nan, "note": ""}
    if n == 0:
        row["note"] = "no pair reviewed"
        return row
    row["agreement"] = agree / n
    row["low"], row["high"] = wilson_ci(agree, n, confidence)
    k = _kappa(a, b)
    row["kappa"] = k
    if not np.isfinite(k):
        row["note"] = "kappa undefined (fewer than 2 pairs, or one class only)"
    elif n >= 4:
        ci = bootstrap_ci((a, b), _kappa, n_bootstrap=n_bootstrap, confidence=confidence, method="percentile",
                          seed=seed, max_failed=0.5)
        row["kappa_low"], row["kappa_high"] = ci.low, ci.high
    return row


def _rows_for(sheet: pd.DataFrame, rule: str, *, n_bootstrap: int, confidence: float, seed: int) -> list[dict]:
    rows = []
    truth = sheet["significance"].str.strip().str.lower().to_numpy()
    slots = reviewer_slots(sheet)
    for k in slots:
        s = sheet[f"reviewer{k}_significance"].to_numpy()
        done = np.isin(s, ("significant", "insignificant"))
        rows.append(_compare(s[done], truth[done], what=f"reviewer{k} vs rule: significance", rule=rule,
                             n_bootstrap=n_bootstrap, confidence=confidence, seed=stable_seed(seed, "review", k, rule)))
        rows[-1]["n_unsure"] = int((s == "unsure").sum())
        one = sheet[f"reviewer{k}_one_change"].to_numpy()
        done1 = np.isin(one, ONE_CHANGE_VALUES)
        yes = int((one[done1] == "yes").sum())
        r = {"comparison": f"reviewer{k}: a single change of the stated kind", "rule": rule, "n": int(done1.sum()),
             "agreement": np.nan, "low": np.nan, "high": np.nan, "kappa": np.nan, "kappa_low": np.nan,
             "kappa_high": np.nan, "note": "share of 'yes'", "n_unsure": 0}
        if done1.any():
            r["agreement"] = yes / int(done1.sum())
            r["low"], r["high"] = wilson_ci(yes, int(done1.sum()), confidence)
        rows.append(r)
    for i, k in enumerate(slots):
        for j in slots[i + 1:]:
            a, b = sheet[f"reviewer{k}_significance"].to_numpy(), sheet[f"reviewer{j}_significance"].to_numpy()
            both = np.isin(a, ("significant", "insignificant")) & np.isin(b, ("significant", "insignificant"))
            rows.append({**_compare(a[both], b[both], what=f"reviewer{k} vs reviewer{j}: significance", rule=rule,
                                    n_bootstrap=n_bootstrap, confidence=confidence,
                                    seed=stable_seed(seed, "review", k, j, rule)), "n_unsure": 0})
    return rows


def review_agreement(sheet: pd.DataFrame, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                     seed: int = 0) -> pd.DataFrame:
    """Agreement of each reviewer with the rules and with each other, over all reviewed pairs.

    Columns: ``comparison``, ``rule`` (``"all"``), ``n`` (pairs with a usable answer), ``agreement``
    (share, Wilson CI ``low``/``high``), ``kappa`` (Cohen's κ, percentile bootstrap CI ``kappa_low``/
    ``kappa_high``), ``n_unsure``, ``note``."""
    return pd.DataFrame(_rows_for(sheet, "all", n_bootstrap=n_bootstrap, confidence=confidence, seed=seed))


def review_by_rule(sheet: pd.DataFrame, *, n_bootstrap: int = 200, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """:func:`review_agreement` for each rule's pairs (only comparisons with at least one reviewed pair)."""
    rows = []
    for rule_name, g in sheet.groupby("rule", sort=True):
        rows += _rows_for(g.reset_index(drop=True), str(rule_name), n_bootstrap=n_bootstrap, confidence=confidence,
                          seed=seed)
    out = pd.DataFrame(rows)
    return out[out["n"] > 0].reset_index(drop=True) if len(out) else out
