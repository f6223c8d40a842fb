"""The metric tables of Selective Modality Shifting (with CIs), all computed from the long results table of
:func:`radaudit.audits.modality_shift.conditions.run_conditions` (one row per model x sample x condition).

Paper: ``../shared/papers/003_528df7f4b7accfa0.txt`` §2.4 (ECE), §3.2 (accuracy, precision, recall,
F1, NFR). Every headline number carries a 95% bootstrap CI over **samples** (the paper has none;
``radaudit.stats``); pass ``units="patient_id"`` to resample patients instead.

Unknown answers (``answer`` not yes/no) are never dropped silently (the anchor drops them):
:func:`answer_rates` reports them per model x condition, and the metrics treat them by the policy
``unknown``:

* ``"wrong"`` (default): an unknown answer is a prediction that is neither yes nor no, so it is
  never correct. Accuracy counts it as an error; recall counts an unknown on a positive as a miss
  (denominator = all positives); specificity counts an unknown on a negative as a miss
  (denominator = all negatives); precision is over the *yes* answers only, so unknowns do not enter.
* ``"drop"``: the anchor's choice: unknown rows are removed before computing the metric (the
  unknown rate still sits beside it in :func:`answer_rates`).

Definitions (TP, FP, TN, FN over yes/no answers; U+ / U- unknown answers on positives / negatives)::

    accuracy    = (TP + TN) / (TP + FP + TN + FN + U+ + U-)
    precision   = TP / (TP + FP)                       (NaN when the model never says yes)
    recall      = TP / (TP + FN + U+)
    specificity = TN / (TN + FP + U-)
    F1          = 2 TP / (2 TP + FP + FN + U+)         (= harmonic mean of precision and recall when
                                                        both exist; 0 when TP = 0, as sklearn's set F1)

Beside every accuracy, the accuracy of the constant answer (:func:`majority_accuracy`): answering the majority
label of the same rows every time, ``max(P, N) / (P + N)``. A model whose accuracy does not exceed it has
learnt nothing a constant answer does not give.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import ALL_CONDITIONS, CONDITION_LABELS, MARKED_CONDITIONS
from radaudit.errors import ParamsError
from radaudit.metrics.classification import (  # noqa: F401  (re-exported: the notebook and tests use them here)
    CALIBRATION_KINDS,
    auroc,
    ece_resamples,
    expected_calibration_error,
    reliability_bins,
)
from radaudit.stats import (
    BootstrapError,
    auroc_interval,
    auroc_replicates,
    bootstrap_ci,
    column_mean,
    cover_rounding,
    paired_bootstrap,
    wilson_ci,
)
from radaudit.tables import column_decimals, format_ci

__all__ = [
    "CLASSIFICATION_METRICS", "UNKNOWN_POLICIES", "answer_change_rate", "answer_rates", "auroc", "auroc_table",
    "changed_table", "classification_metrics", "confusion_counts", "ece_table", "expected_calibration_error",
    "item_means", "item_means_cells", "LAYER_MEASURES", "majority_accuracy", "metrics_table", "negative_flip_rate",
    "nfr_table", "reliability_bins", "reliability_table", "summary_lines",
]

log = logging.getLogger(__name__)

CLASSIFICATION_METRICS: tuple[str, ...] = ("accuracy", "precision", "recall", "f1", "specificity")
UNKNOWN_POLICIES: tuple[str, ...] = ("wrong", "drop")
CI_COLUMNS = ["estimate", "low", "high", "n"]


def _check_policy(unknown: str) -> None:
    if unknown not in UNKNOWN_POLICIES:
        raise ParamsError(f"unknown={unknown!r} is not allowed; use one of {', '.join(UNKNOWN_POLICIES)}.")


def _check_columns(results: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in results.columns]
    if missing:
        raise ParamsError(f"{where}: the results table lacks {missing}; build it with run_conditions.")


def _as_pred(pred: Any) -> np.ndarray:
    """Predictions as floats 1/0/NaN: accepts 1/0/NaN numbers or 'yes'/'no'/other strings."""
    arr = np.asarray(pred)
    if arr.dtype.kind in "biuf":  # already numbers (the tables' own columns, every bootstrap resample): no loop
        return arr.astype(float)
    arr = arr.astype(object)
    out = np.full(arr.shape, np.nan)
    for i, v in enumerate(arr):
        if isinstance(v, str):
            out[i] = 1.0 if v == "yes" else 0.0 if v == "no" else np.nan
        elif v is not None and v is not pd.NA and not (isinstance(v, float) and math.isnan(v)):
            out[i] = float(v)
    return out


# --------------------------------------------------------------------------------------------------
# answers


def answer_rates(results: pd.DataFrame, by: Sequence[str] = ("model", "condition"),
                 confidence: float = 0.95) -> pd.DataFrame:
    """Counts of parsed answers per group and the unknown rate with a Wilson CI (never hidden).

    Columns: ``by..., n, n_yes, n_no, n_unmatched, n_unknown, unknown_rate, unknown_low, unknown_high,
    yes_rate, yes_low, yes_high`` (share of all rows answered yes, Wilson CI). ``unknown`` here means "not a
    yes/no answer" (unknown + unmatched).
    """
    _check_columns(results, [*by, "answer"], "answer_rates")
    rows = []
    for key, g in results.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        counts = g["answer"].value_counts()
        n = len(g)
        n_unk = int(counts.get("unknown", 0))
        n_unm = int(counts.get("unmatched", 0))
        n_yes = int(counts.get("yes", 0))
        lo, hi = wilson_ci(n_unk + n_unm, n, confidence)
        yes_lo, yes_hi = wilson_ci(n_yes, n, confidence)
        rows.append({**dict(zip(by, key)), "n": n, "n_yes": n_yes,
                     "n_no": int(counts.get("no", 0)), "n_unmatched": n_unm, "n_unknown": n_unk,
                     "unknown_rate": (n_unk + n_unm) / n, "unknown_low": lo, "unknown_high": hi,
                     "yes_rate": n_yes / n, "yes_low": yes_lo, "yes_high": yes_hi})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# classification metrics


def confusion_counts(y_true: Any, pred: Any) -> dict[str, int]:
    """``tp, fp, tn, fn`` over yes/no predictions and ``unknown_pos``/``unknown_neg`` (no yes/no answer)."""
    y = np.asarray(y_true, dtype=float)
    p = _as_pred(pred)
    if y.shape != p.shape:
        raise ParamsError(f"y_true and pred differ in length ({y.shape[0]} vs {p.shape[0]}).")
    # p == 1 and p == 0 are False for NaN, so they imply a known answer (called on every bootstrap resample: one
    # pass per mask, count_nonzero rather than sum)
    pos, neg, yes, no, unk = y == 1, y == 0, p == 1, p == 0, np.isnan(p)
    return {"tp": int(np.count_nonzero(yes & pos)), "fp": int(np.count_nonzero(yes & neg)),
            "tn": int(np.count_nonzero(no & neg)), "fn": int(np.count_nonzero(no & pos)),
            "unknown_pos": int(np.count_nonzero(unk & pos)), "unknown_neg": int(np.count_nonzero(unk & neg))}


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def _metrics_from_counts(c: Mapping[str, int], unknown: str) -> dict[str, float]:
    up, un = (c["unknown_pos"], c["unknown_neg"]) if unknown == "wrong" else (0, 0)
    tp, fp, tn, fn = c["tp"], c["fp"], c["tn"], c["fn"]
    return {"accuracy": _ratio(tp + tn, tp + fp + tn + fn + up + un), "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn + up), "f1": _ratio(2 * tp, 2 * tp + fp + fn + up),
            "specificity": _ratio(tn, tn + fp + un)}


def classification_metrics(y_true: Any, pred: Any, *, unknown: str = "wrong") -> dict[str, float]:
    """Accuracy, precision, recall, F1, specificity (paper §3.2; formulas in the module docstring).

    ``pred``: 1/0/NaN or ``"yes"``/``"no"``/other answers; ``unknown``: the policy for non-yes/no answers.
    """
    _check_policy(unknown)
    return _metrics_from_counts(confusion_counts(y_true, pred), unknown)


def majority_accuracy(y_true: Any, confidence: float = 0.95) -> dict[str, float]:
    """Accuracy of always answering the majority label of ``y_true`` (ties: "yes", label 1), with a Wilson CI.

    ``accuracy = max(P, N) / (P + N)`` over the P positive and N negative labels. The majority is read from
    the very samples it is scored on (the best constant answer on them, the strictest constant baseline); the
    interval is the Wilson interval of that share (the number of majority-label samples is binomial).
    Returns ``estimate, low, high, n, majority`` (1 = "yes", 0 = "no"); NaN without samples.

    >>> majority_accuracy([1, 1, 1, 0])["estimate"]
    0.75
    """
    y = np.asarray(y_true, dtype=float)
    n = int(y.shape[0])
    if n == 0:
        return {"estimate": math.nan, "low": math.nan, "high": math.nan, "n": 0, "majority": math.nan}
    pos = int(np.sum(y == 1))
    majority = 1 if pos >= n - pos else 0
    k = pos if majority == 1 else n - pos
    low, high = wilson_ci(k, n, confidence)
    return {"estimate": k / n, "low": low, "high": high, "n": n, "majority": majority}


def _metric_fn(name: str, unknown: str) -> Callable[[np.ndarray, np.ndarray], float]:
    def fn(y: np.ndarray, p: np.ndarray) -> float:
        return _metrics_from_counts(confusion_counts(y, p), unknown)[name]
    return fn


def _ci_rows(data: tuple[np.ndarray, ...], stats: Mapping[str, Callable[..., float]], *, units: Any, n_bootstrap: int,
             seed: int, confidence: float, method: str,
             vectorized: Mapping[str, Callable[..., np.ndarray]] | None = None) -> dict[str, dict[str, float]]:
    """Point estimate and bootstrap CI per statistic, all on the same resamples where possible.

    A statistic that is undefined on the full data (e.g. precision when the model never says yes)
    gets NaN everywhere; one whose replicates fail too often gets its estimate and a NaN interval.
    ``vectorized``: for a single statistic without ``units``, its every-resample-at-once form
    (``bootstrap_ci(vectorized=True)``: the same resamples, one call instead of ``n_bootstrap``); the estimate
    stays the one-row statistic's, the interval widened to it where they differ only by float rounding.
    """
    est = {k: float(f(*data)) for k, f in stats.items()}
    ok = {k: f for k, f in stats.items() if np.isfinite(est[k])}
    out = {k: {"estimate": est[k], "low": math.nan, "high": math.nan} for k in stats}
    if len(data[0]) < 2 or not ok:
        return out
    if vectorized and units is None and len(ok) == 1 and set(ok) <= set(vectorized):
        (k,) = ok
        try:
            r = bootstrap_ci(data, vectorized[k], n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                             method=method, vectorized=True)
            out[k]["low"], out[k]["high"] = cover_rounding(est[k], r.low, r.high)
        except BootstrapError as err:
            log.info("No bootstrap CI for %s: %s", k, err)
        return out
    try:
        table = paired_bootstrap(data, ok, units=units, n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                                 method=method)
        for r in table.itertuples():
            out[r.metric].update(low=float(r.low), high=float(r.high))
    except BootstrapError:
        for k, f in ok.items():
            try:
                r = bootstrap_ci(data, f, units=units, n_bootstrap=n_bootstrap, seed=seed, confidence=confidence,
                                 method=method)
                out[k].update(low=r.low, high=r.high)
            except BootstrapError as err:
                log.info("No bootstrap CI for %s: %s", k, err)
    return out


def metrics_table(results: pd.DataFrame, *, by: Sequence[str] = ("model", "condition"),
                  metrics: Sequence[str] = CLASSIFICATION_METRICS, unknown: str = "wrong", units: str | None = None,
                  n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95,
                  method: str = "percentile") -> pd.DataFrame:
    """Paper Fig. 2a/b: each metric per model x condition with a bootstrap CI over samples.

    Long table: ``by..., metric, estimate, low, high, n, n_unknown, unknown_policy, majority_accuracy,
    majority_low, majority_high``. All metrics of a group are bootstrapped on the same resampled samples
    (:func:`radaudit.stats.paired_bootstrap`, ``method`` interval, seeded). ``units``: a column to resample as
    clusters (e.g. ``"patient_id"``); default one unit per row, i.e. per sample within a model x condition.
    The ``majority_*`` columns, on the accuracy rows only (NaN on the others), are :func:`majority_accuracy` of the
    same rows: the accuracy of the constant answer beside the model's.
    """
    _check_policy(unknown)
    bad = [m for m in metrics if m not in CLASSIFICATION_METRICS]
    if bad:
        raise ParamsError(f"Unknown metric(s) {bad}; use any of {', '.join(CLASSIFICATION_METRICS)}.")
    _check_columns(results, [*by, "label", "prediction"] + ([units] if units else []), "metrics_table")
    rows = []
    for key, g in results.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        if unknown == "drop":
            g = g[g["prediction"].notna()]
        data = (g["label"].to_numpy(dtype=float), g["prediction"].to_numpy(dtype=float))
        stats = {m: _metric_fn(m, unknown) for m in metrics}
        cis = _ci_rows(data, stats, units=None if units is None else g[units].to_numpy(), n_bootstrap=n_bootstrap,
                       seed=seed, confidence=confidence, method=method)
        n_unknown = int(g["prediction"].isna().sum())
        base = majority_accuracy(data[0], confidence)
        for m in metrics:
            major = ({"majority_accuracy": base["estimate"], "majority_low": base["low"], "majority_high": base["high"]}
                     if m == "accuracy" else dict.fromkeys(("majority_accuracy", "majority_low", "majority_high"),
                                                           math.nan))
            rows.append({**dict(zip(by, key)), "metric": m, **cis[m], "n": len(g), "n_unknown": n_unknown,
                         "unknown_policy": unknown, **major})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# negative flip rate


def negative_flip_rate(y_true: Any, base_pred: Any, shift_pred: Any) -> dict[str, float]:
    """Negative flip rate of a shift against the base condition (paper §3.2, after Yan et al. 2021).

    The paper's formula, over the N paired samples::

        nfr = (1/N) * sum_i 1(y_shift_i != y_i  and  y_base_i == y_i)

    and beside it the same flips over the base-correct samples only::

        nfr_base_correct = sum_i 1(y_shift_i != y_i and y_base_i == y_i) / sum_i 1(y_base_i == y_i)

    (``nfr`` can never exceed the base accuracy; ``nfr_base_correct`` is "of the answers that were
    right, how many did the shift break" and reaches 1 when all did). An unknown answer is never
    correct: an unknown base answer is not base-correct, an unknown shifted answer is a flip.
    Returns both rates and ``n``, ``n_base_correct``, ``n_flipped``.
    """
    y = np.asarray(y_true, dtype=float)
    b, s = _as_pred(base_pred), _as_pred(shift_pred)
    if not (y.shape == b.shape == s.shape):
        raise ParamsError("negative_flip_rate: y_true, base_pred and shift_pred must be paired (same length).")
    base_ok = b == y  # NaN compares False: unknown is not correct
    flipped = base_ok & ~(s == y)
    n, n_ok, n_flip = len(y), int(base_ok.sum()), int(flipped.sum())
    return {"nfr": _ratio(n_flip, n), "nfr_base_correct": _ratio(n_flip, n_ok), "n": n, "n_base_correct": n_ok,
            "n_flipped": n_flip}


def _shift_plan(results: pd.DataFrame, base: str | None, shifts: Sequence[str] | None,
                where: str) -> list[tuple[str, str]]:
    """``(base, shift)`` pairs to compare. ``base=None``: each shift against its own unshifted input —
    ``marked_no_shift`` for a marked condition, ``no_shift`` otherwise; ``shifts=None``: every
    condition in the results that is not a base."""
    present = list(pd.unique(results["condition"]))
    bases = {"no_shift", "marked_no_shift"} if base is None else {base}
    if shifts is None:
        shifts = [c for c in present if c not in bases]
    plan = [(base if base is not None else ("marked_no_shift" if c in MARKED_CONDITIONS else "no_shift"), c)
            for c in shifts]
    for b, _ in plan:
        if b not in present:
            raise ParamsError(f"{where}: base condition {b!r} is not in the results (conditions: {sorted(present)}).")
    return plan


def _paired(results: pd.DataFrame, base: str, shift: str, by: Sequence[str]) -> pd.DataFrame:
    keys = [*by, "sample_id"]
    left = results[results["condition"] == base][keys + ["label", "prediction"]]
    right = results[results["condition"] == shift][keys + ["prediction"]]
    for side, frame in (("base", left), ("shift", right)):
        if frame.duplicated(keys).any():
            raise ParamsError(f"nfr_table: more than one {side} row per {keys}; one result per sample x condition.")
    return left.merge(right, on=keys, suffixes=("_base", "_shift"), validate="one_to_one")


def nfr_table(results: pd.DataFrame, *, base: str | None = None, shifts: Sequence[str] | None = None,
              by: Sequence[str] = ("model",), units: str | None = None, n_bootstrap: int = 1000, seed: int = 0,
              confidence: float = 0.95, method: str = "percentile") -> pd.DataFrame:
    """Paper Fig. 2c/d: NFR of every shift against ``base`` per model, both forms, with bootstrap CIs.

    ``base=None`` (default): each shift against its own unshifted input (``no_shift``; ``marked_no_shift``
    for the marked conditions).

    Samples are paired on ``sample_id`` (inner join of base and shift rows; samples missing on
    either side are counted in ``n_unpaired``). Long table: ``by..., condition, measure`` (``nfr`` =
    the paper's formula over all N paired samples, ``nfr_base_correct`` = over base-correct samples),
    ``estimate, low, high, n, n_base_correct, n_flipped, n_unpaired``. Both measures are bootstrapped
    on the same resampled samples.
    """
    _check_columns(results, [*by, "sample_id", "condition", "label", "prediction"], "nfr_table")
    rows = []
    for base, shift in _shift_plan(results, base, shifts, "nfr_table"):
        pairs = _paired(results, base, shift, by)
        seen = results[results["condition"].isin([base, shift])].groupby(list(by), sort=False)["sample_id"].nunique()
        for key, g in pairs.groupby(list(by), sort=False):
            n_all = int(seen.loc[key])
            key = key if isinstance(key, tuple) else (key,)
            data = (g["label"].to_numpy(float), g["prediction_base"].to_numpy(float),
                    g["prediction_shift"].to_numpy(float))
            counts = negative_flip_rate(*data)
            stats = {m: (lambda y, b, s, m=m: negative_flip_rate(y, b, s)[m]) for m in ("nfr", "nfr_base_correct")}
            cis = _ci_rows(data, stats, units=None if units is None else g[units].to_numpy(), n_bootstrap=n_bootstrap,
                           seed=seed, confidence=confidence, method=method)
            for m in ("nfr", "nfr_base_correct"):
                rows.append({**dict(zip(by, key)), "condition": shift, "measure": m, **cis[m], "n": counts["n"],
                             "n_base_correct": counts["n_base_correct"], "n_flipped": counts["n_flipped"],
                             "n_unpaired": n_all - counts["n"]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# ranking (AUROC of P(yes)) and answer changes: the controls of the demo



def auroc_table(results: pd.DataFrame, *, score: str = "p_yes", by: Sequence[str] = ("model", "condition"),
                units: str | None = None, n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95,
                method: str = "percentile") -> pd.DataFrame:
    """AUROC of the first-token P(yes) per model x condition, with a bootstrap CI over samples.

    The ranking uses the model's probability (paper §2.4), not its parsed answer, so it does not
    depend on the unknown-answer policy. Long table: ``by..., estimate, low, high, n, n_positive``.
    The estimate is :func:`auroc` (:func:`radaudit.stats.auroc`, label 1 positive; NaN for a group with
    one class or a missing score); the interval comes from :func:`radaudit.stats.bootstrap_ci` with every
    resample at once (:func:`radaudit.stats.auroc_replicates`), or, with ``units``, from
    :func:`radaudit.stats.paired_bootstrap` on :func:`auroc` one cluster resample at a time. Where the AUROC is
    exactly 1 (or 0) every resample agrees and the bootstrap interval has zero width; the interval is then
    :func:`radaudit.stats.auroc_separation_interval` (an exact bound over the smaller class; the rule is
    :func:`radaudit.stats.auroc_interval`, and ``ci_method`` says which a row has: ``bootstrap`` or ``separation``).
    """
    _check_columns(results, [*by, "label", score] + ([units] if units else []), "auroc_table")
    rows = []
    for key, g in results.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        data = (g["label"].to_numpy(dtype=float), g[score].to_numpy(dtype=float))
        cis = _ci_rows(data, {"auroc": auroc}, units=None if units is None else g[units].to_numpy(),
                       n_bootstrap=n_bootstrap, seed=seed, confidence=confidence, method=method,
                       vectorized={"auroc": auroc_replicates})
        ci = cis["auroc"]
        n_pos = int((data[0] == 1).sum())
        low, high, ci_method = auroc_interval(ci["estimate"], ci["low"], ci["high"], n_pos, len(g) - n_pos, confidence)
        ci = {**ci, "low": low, "high": high}
        rows.append({**dict(zip(by, key)), **ci, "n": len(g), "n_positive": int(g["label"].sum()),
                     "ci_method": ci_method})
    return pd.DataFrame(rows)


def answer_change_rate(base_answers: Any, shift_answers: Any) -> dict[str, float]:
    """Share of samples whose parsed answer differs between the base and the shifted input.

    ``changed = (1/N) sum_i 1[a_i^shift != a_i^base]`` over the N paired samples, whatever the label
    (a shift that moves a wrong answer to the right one counts too; NFR counts only the harmful
    direction). Answers are compared as parsed (yes / no / unknown / unmatched), so a change to
    "unknown" is a change. Returns ``changed`` (NaN when N = 0), ``n_changed`` and ``n``.
    """
    a = np.asarray(base_answers, dtype=object)
    b = np.asarray(shift_answers, dtype=object)
    if a.shape != b.shape:
        raise ParamsError(f"answer_change_rate: {a.shape[0]} base answers but {b.shape[0]} shifted answers.")
    n = int(a.shape[0])
    k = int(sum(x != y for x, y in zip(a.tolist(), b.tolist())))
    return {"changed": k / n if n else math.nan, "n_changed": k, "n": n}


def changed_table(results: pd.DataFrame, *, base: str | None = None, shifts: Sequence[str] | None = None,
                  by: Sequence[str] = ("model",), confidence: float = 0.95) -> pd.DataFrame:
    """:func:`answer_change_rate` of every shift against ``base`` per model, paired on ``sample_id``,
    with a Wilson interval (the unit is the sample and the statistic a proportion).

    Long table: ``by..., condition, estimate, low, high, n_changed, n``.
    """
    _check_columns(results, [*by, "sample_id", "condition", "answer"], "changed_table")
    rows = []
    for base, shift in _shift_plan(results, base, shifts, "changed_table"):
        b = results[results["condition"] == base][[*by, "sample_id", "answer"]]
        s = results[results["condition"] == shift][[*by, "sample_id", "answer"]]
        pairs = b.merge(s, on=[*by, "sample_id"], suffixes=("_base", "_shift"))
        for key, g in pairs.groupby(list(by), sort=False):
            key = key if isinstance(key, tuple) else (key,)
            c = answer_change_rate(g["answer_base"], g["answer_shift"])
            low, high = wilson_ci(c["n_changed"], c["n"], confidence) if c["n"] else (math.nan, math.nan)
            rows.append({**dict(zip(by, key)), "condition": shift, "estimate": c["changed"], "low": low, "high": high,
                         "n_changed": c["n_changed"], "n": c["n"]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# calibration




def reliability_table(results: pd.DataFrame, *, by: Sequence[str] = ("model", "condition"), n_bins: int = 10,
                      prob_column: str = "p_yes", kind: str = "positive") -> pd.DataFrame:
    """Paper Fig. 3c,d data: :func:`reliability_bins` per model x condition (long: ``by..., bin, ...``).

    Every row counts, unknown answers included: the first-token probability exists for all of them.
    """
    _check_columns(results, [*by, "label", prob_column], "reliability_table")
    parts = []
    for key, g in results.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        bins = reliability_bins(g[prob_column].to_numpy(float), g["label"].to_numpy(float), n_bins, kind=kind)
        parts.append(bins.assign(**dict(zip(by, key))))
    table = pd.concat(parts, ignore_index=True)
    return table[[*by] + [c for c in table.columns if c not in by]]


def ece_table(results: pd.DataFrame, *, by: Sequence[str] = ("model", "condition"), n_bins: int = 10,
              prob_column: str = "p_yes", kind: str = "positive", units: str | None = None, n_bootstrap: int = 1000,
              seed: int = 0, confidence: float = 0.95, method: str = "percentile") -> pd.DataFrame:
    """Paper Fig. 3a,b: ECE per model x condition with a bootstrap CI over samples.

    Columns: ``by..., metric`` (``"ece"``), ``estimate, low, high, n, n_bins, kind, prob_column``.
    Note: ECE is biased upwards on small samples (Posocco & Bonnefoy 2021, the paper's [16]); the
    CI shows the sampling spread, not that bias.
    """
    _check_columns(results, [*by, "label", prob_column] + ([units] if units else []), "ece_table")
    rows = []
    for key, g in results.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        data = (g[prob_column].to_numpy(float), g["label"].to_numpy(float))
        stats = {"ece": lambda p, y: expected_calibration_error(p, y, n_bins, kind=kind)}
        cis = _ci_rows(data, stats, units=None if units is None else g[units].to_numpy(), n_bootstrap=n_bootstrap,
                       seed=seed, confidence=confidence, method=method,
                       vectorized={"ece": lambda p, y: ece_resamples(p, y, n_bins, kind=kind)})
        rows.append({**dict(zip(by, key)), "metric": "ece", **cis["ece"], "n": len(g), "n_bins": int(n_bins),
                     "kind": kind, "prob_column": prob_column})
    return pd.DataFrame(rows)


# --- means over traced items (attention by layer, marker saliency) -----------------------------------------

#: The per-layer attention measures of :func:`radaudit.audits.modality_shift.heatmap.layer_modality_shares` whose
#: means over the traced items the report shows (section 9 of the notebook).
LAYER_MEASURES: tuple[str, ...] = ("image_share", "image_per_token", "text_per_token")


def item_means(table: pd.DataFrame, measures: Sequence[str] = LAYER_MEASURES, *,
               by: Sequence[str] = ("model", "condition", "layer"), units: str = "sample_id", n_bootstrap: int = 1000,
               seed: int = 0, confidence: float = 0.95, method: str = "percentile") -> pd.DataFrame:
    """The mean of each measure over the items of every group, with a bootstrap CI over items.

    ``mean_g(m) = (1/n_g) Σ_{i ∈ g} m_i`` over the ``n_g`` items (``units``, default ``sample_id``) of group ``g``
    that have a value: a NaN (``image_per_token`` of an input without image tokens) is left out of that measure
    only. The interval resamples whole items (:func:`radaudit.stats.paired_bootstrap` with
    :func:`radaudit.stats.column_mean`; the measures complete in a group share its resamples), with the same
    ``seed`` in every group: the items are drawn by their sorted ids, so groups that hold the same items (the same
    samples traced under every condition and layer) resample the same items. Fewer than 2 items: no interval (NaN
    bounds; ``"0.41 [n/a]"`` in :func:`item_means_cells`).

    Long table: ``by..., measure, estimate, low, high, n`` (``n``: the items averaged), groups in the order they
    first occur, measures in the order given.
    """
    missing = [c for c in [*by, units, *measures] if c not in table.columns]
    if missing:
        raise ParamsError(f"item_means: the table lacks the columns {missing}; it has {list(table.columns)}.")
    rows = []
    for key, g in table.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        est = {m: _item_mean_ci(g, [m], units, n_bootstrap, seed, confidence, method)[m] for m in measures
               if g[m].isna().any()}
        complete = [m for m in measures if m not in est]
        if complete:
            est |= _item_mean_ci(g, complete, units, n_bootstrap, seed, confidence, method)
        for m in measures:
            rows.append({**dict(zip(by, key)), "measure": m, **est[m]})
    return pd.DataFrame(rows, columns=[*by, "measure", "estimate", "low", "high", "n"])


def _item_mean_ci(g: pd.DataFrame, measures: list[str], units: str, n_bootstrap: int, seed: int, confidence: float,
                  method: str) -> dict[str, dict[str, float]]:
    """``{measure: {estimate, low, high, n}}`` for measures of ``g`` on the rows where they are all present (one
    measure with NaNs is passed alone), on shared item resamples; NaN bounds with fewer than 2 items."""
    g = g.dropna(subset=measures)
    n = int(g[units].nunique())
    out = {m: {"estimate": float(g[m].astype(float).mean()) if len(g) else math.nan, "low": math.nan,
               "high": math.nan, "n": n} for m in measures}
    if n < 2:
        return out
    ci = paired_bootstrap(g, {m: column_mean(m) for m in measures}, units=units, n_bootstrap=n_bootstrap, seed=seed,
                          confidence=confidence, method=method)
    for r in ci.itertuples(index=False):
        out[r.metric].update(estimate=float(r.estimate), low=float(r.low), high=float(r.high))
    return out


def item_means_cells(means: pd.DataFrame, index: Sequence[str] = ("condition", "layer")) -> pd.DataFrame:
    """:func:`item_means`' long table laid out for the report: one row per ``index`` group (``model`` first when
    the table holds more than one model), one column per measure, cells ``"0.412 [0.380, 0.440]"``
    (:func:`radaudit.tables.format_ci`; decimals per measure from the magnitude of its means,
    :func:`radaudit.tables.column_decimals`, five for means below 0.001)."""
    index = [*(["model"] if "model" in means.columns and means["model"].nunique() > 1 else []), *index]
    missing = [c for c in [*index, "measure", "estimate", "low", "high"] if c not in means.columns]
    if missing:
        raise ParamsError(f"item_means_cells: the table lacks the columns {missing}; pass item_means' table.")
    digits = {m: column_decimals(g["estimate"]) for m, g in means.groupby("measure", sort=False)}
    cells = means.assign(cell=[format_ci(e, lo, hi, 5 if digits[m] is None else digits[m])
                               for m, e, lo, hi in zip(means["measure"], means["estimate"], means["low"], means["high"],
                                                       strict=True)])
    wide = cells.pivot_table(index=index, columns="measure", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(columns=list(dict.fromkeys(means["measure"])))
    wide.columns.name = None
    return wide


# --- the run summary in words ------------------------------------------------------------------------------

def _fmt(row: pd.Series) -> str:
    return f"{row['estimate']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def summary_lines(metrics: pd.DataFrame, nfr: pd.DataFrame, ece: pd.DataFrame, rates: pd.DataFrame) -> list[str]:
    """Plain-words findings computed from the run's tables (one block per model), for the notebook's
    closing Markdown. Every number is an estimate with its 95% bootstrap CI (rates: Wilson)."""
    lines = []
    for model in metrics["model"].unique():
        m = metrics[(metrics["model"] == model) & (metrics["metric"] == "accuracy")].set_index("condition")
        lines.append(f"**{model}**")
        acc = ", ".join(f"{CONDITION_LABELS[c]} {_fmt(m.loc[c])}" for c in ALL_CONDITIONS if c in m.index)
        lines.append(f"- Accuracy: {acc}.")
        if "majority_accuracy" in m.columns and "no_shift" in m.index and pd.notna(m.loc["no_shift", "majority_accuracy"]):
            b = m.loc["no_shift"]
            lines.append(f"- Always giving the majority answer: accuracy {b['majority_accuracy']:.3f} "
                         f"[{b['majority_low']:.3f}, {b['majority_high']:.3f}] (Wilson) on the same samples; No Shift "
                         + ("beats it." if b["low"] > b["majority_accuracy"] else
                            "falls below it." if b["estimate"] < b["majority_accuracy"] else "does not clearly beat it."))
        n = nfr[(nfr["model"] == model) & (nfr["measure"] == "nfr")].set_index("condition")
        nb = nfr[(nfr["model"] == model) & (nfr["measure"] == "nfr_base_correct")].set_index("condition")
        for shift in ("image_shift", "text_shift"):
            if shift in n.index:
                lines.append(f"- {CONDITION_LABELS[shift]}: NFR (paper, over all N) {_fmt(n.loc[shift])}; "
                             f"over base-correct predictions {_fmt(nb.loc[shift])} "
                             f"({int(n.loc[shift, 'n_flipped'])} of {int(n.loc[shift, 'n_base_correct'])} "
                             "correct answers flipped).")
        if {"image_shift", "text_shift"} <= set(n.index):
            ti, tt = n.loc["image_shift"], n.loc["text_shift"]
            if tt["low"] > ti["high"]:
                verdict = ("the text shift flips more answers than the image shift (CIs do not overlap): "
                           "the model leans on the text.")
            elif ti["low"] > tt["high"]:
                verdict = ("the image shift flips more answers than the text shift (CIs do not overlap): "
                           "the model leans on the image.")
            else:
                verdict = "the two shifts' NFR intervals overlap: this run cannot say which modality the model leans on."
            lines.append(f"- Verdict: {verdict}")
        e = ece[ece["model"] == model].set_index("condition")
        if len(e):
            lines.append("- ECE: " + ", ".join(f"{CONDITION_LABELS[c]} {_fmt(e.loc[c])}" for c in ALL_CONDITIONS
                                                if c in e.index) + ".")
        rr = rates[rates["model"] == model]
        worst = rr.loc[rr["unknown_rate"].idxmax()]
        lines.append(f"- Answers that are neither yes nor no: {int(rr['n_unknown'].sum() + rr['n_unmatched'].sum())} "
                     f"of {int(rr['n'].sum())}; highest under {CONDITION_LABELS[worst['condition']]} "
                     f"({worst['unknown_rate']:.1%}).")
    return lines
