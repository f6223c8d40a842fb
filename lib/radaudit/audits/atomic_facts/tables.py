"""atomic_facts' tables (Table 2, Table 3, the radiologists' mean judgement per system, granular per-system
accuracy, the LLM backend's failed and repaired JSON outputs) and the run summary."""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from radaudit.atomic import ATTRIBUTES, CALL_COLUMNS
from radaudit.audits.atomic_facts.data import (
    INTER_RATER,
    MEAN_RATER,
    NEGATED_TARGETS,
    SYSTEM_LABELS,
    TARGETS,
    ReaderStudy,
)
from radaudit.audits.atomic_facts.scores import METRIC_LABELS
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.base import metric_label
from radaudit.stats import (
    METHODS,
    BootstrapError,
    BootstrapWarning,
    bootstrap_ci,
    column_mean,
    cover_rounding,
    interval_from_replicates,
    resample_weights,
)
from radaudit.tables import format_ci, format_number
from radaudit.text.attributes import DEVICE_TYPES

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# anatomical systems (Fig. 4b)

#: anatomical system -> canonical finding names of the rule lexicon (radaudit.atomic.lexicon) it holds.
ANATOMICAL_SYSTEMS: dict[str, tuple[str, ...]] = {
    "Lungs & airways": (
        "consolidation", "atelectasis", "pneumonia", "aspiration", "pulmonary edema", "opacity", "nodule", "mass",
        "metastatic disease", "granuloma", "lung lesion", "emphysema", "copd", "hyperinflation", "low lung volumes",
        "interstitial abnormality", "fibrosis", "scarring", "peribronchial thickening", "bronchiectasis",
        "airway disease", "volume loss", "air trapping", "increased lung markings", "calcification",
    ),
    "Pleura": ("pleural effusion", "pneumothorax", "pleural thickening"),
    "Heart & vessels": (
        "cardiomegaly", "pericardial effusion", "vascular congestion", "heart failure", "aortic atherosclerosis",
        "tortuous aorta", "aortic aneurysm",
    ),
    "Mediastinum & hila": ("widened mediastinum", "pneumomediastinum", "lymphadenopathy", "hilar enlargement"),
    "Bones & soft tissue": ("fracture", "scoliosis", "kyphosis", "degenerative change", "osteopenia",
                            "subcutaneous emphysema"),
    "Diaphragm & abdomen": ("elevated hemidiaphragm", "hiatal hernia", "pneumoperitoneum"),
    "Devices & surgery": ("postsurgical change", "foreign body"),
}
OTHER_SYSTEM = "Other"
# keyword fallback for free-text (LLM) finding names, checked in this order
_SYSTEM_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("Devices & surgery", r"tube|catheter|\bline\b|picc|pacemaker|pacer|\bicd\b|lead|wire|clip|staple|stent|port\b|"
                          r"device|drain|valve|prosthe|hardware|sternotomy|post-?surgical|post-?operative|ectomy|plasty"),
    ("Pleura", r"pleur|pneumothora|effusion|hydrothora|costophrenic"),
    ("Heart & vessels", r"heart|cardi|aort|vascul|pericard|atri|ventric|coronar|arter|vein|venous"),
    ("Mediastinum & hila", r"mediastin|hil(?:a|um|ar)|lymph|thymus|trachea|thyroid"),
    ("Bones & soft tissue", r"bone|fractur|spine|spinal|vertebr|rib\b|ribs|scolio|kypho|osteo|clavic|scapul|"
                            r"shoulder|humer|degenerat|soft tissue|subcutaneous"),
    ("Diaphragm & abdomen", r"diaphragm|hernia|bowel|abdom|liver|hepat|gastr|stomach|peritone|spleen|kidney|colon"),
    ("Lungs & airways", r"lung|pulmon|pneumo|bronch|airspace|air space|alveol|interstiti|atelecta|consolidat|"
                        r"opacit|nodul|mass|emphysem|fibros|granulom|infiltrat|edema|scar"),
)


def system_of(finding: str) -> str:
    """The anatomical system of a finding name (:data:`ANATOMICAL_SYSTEMS`).

    Exact canonical names (the rule backend's) first, device types (``"central venous catheter"``)
    to ``"Devices & surgery"``, then keywords for free-text names an LLM writes; ``"Other"`` if none.
    """
    name = " ".join(str(finding).lower().replace("_", " ").split())
    for system, names in ANATOMICAL_SYSTEMS.items():
        if name in names:
            return system
    if name in {k.replace("_", " ") for k in DEVICE_TYPES}:
        return "Devices & surgery"
    for system, pattern in _SYSTEM_KEYWORDS:
        if re.search(pattern, name):
            return system
    return OTHER_SYSTEM


def table2(corr: pd.DataFrame, rater: str = MEAN_RATER) -> pd.DataFrame:
    """Table 2 layout: one row per metric (the inter-rater ceiling last), one ``estimate [low, high]``
    column per target × coefficient, for ``rater`` (default: the radiologists' mean); rows sorted
    by Kendall τ with the first target."""
    sub = corr[(corr["rater"] == rater) | (corr["metric"] == INTER_RATER)].copy()
    sub["cell"] = [format_ci(e, lo, hi, 3) for e, lo, hi in zip(sub["estimate"], sub["low"], sub["high"])]
    sub["column"] = [f"{'τ' if c == 'kendall' else 'ρ'} · {TARGETS[t]}" for c, t in zip(sub["coefficient"], sub["target"])]
    order_cols = [f"{s} · {TARGETS[t]}" for t in TARGETS if t in set(sub["target"]) for s in ("τ", "ρ")]
    wide = sub.pivot_table(index=["metric", "label"], columns="column", values="cell", aggfunc="first")
    wide = wide.reindex(columns=order_cols)
    first = sub[(sub["coefficient"] == "kendall") & (sub["target"] == next(t for t in TARGETS if t in set(sub["target"])))]
    key = first.set_index("metric")["estimate"]
    wide = wide.reset_index()
    wide["_k"] = wide["metric"].map(key).fillna(-np.inf)
    wide["_ceiling"] = wide["metric"] == INTER_RATER
    wide = wide.sort_values(["_ceiling", "_k"], ascending=[True, False]).drop(columns=["_k", "_ceiling"])
    return wide.rename(columns={"label": "Metric"}).drop(columns="metric").reset_index(drop=True)


def table3(pref: pd.DataFrame, rater: str = MEAN_RATER) -> pd.DataFrame:
    """Table 3 layout: one row per metric (ceiling last), columns ACC (%), MAE and τ with CIs,
    against ``rater`` (default: the radiologists' consensus); sorted by ACC."""
    sub = pref[(pref["rater"] == rater) | (pref["metric"] == INTER_RATER)].copy()
    scale = np.where(sub["statistic"] == "acc", 100.0, 1.0)
    digits = {"acc": 1, "mae": 3, "tau": 3}
    sub["cell"] = [format_ci(e * s, lo * s, hi * s, digits[st]) for e, lo, hi, s, st in
                   zip(sub["estimate"], sub["low"], sub["high"], scale, sub["statistic"])]
    wide = sub.pivot_table(index=["metric", "label"], columns="statistic", values="cell", aggfunc="first").reset_index()
    acc = sub[sub["statistic"] == "acc"].set_index("metric")["estimate"]
    wide["_k"] = wide["metric"].map(acc).fillna(-np.inf)
    wide["_c"] = wide["metric"] == INTER_RATER
    wide = wide.sort_values(["_c", "_k"], ascending=[True, False])
    n_strict = sub[sub["statistic"] == "acc"].set_index("metric")["n_strict_pairs"]
    wide["strict pairs"] = wide["metric"].map(n_strict)
    wide = wide.rename(columns={"label": "Metric", "acc": "ACC (%)", "mae": "MAE", "tau": "Kendall τ"})
    return wide[["Metric", "ACC (%)", "MAE", "Kendall τ", "strict pairs"]].reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# the radiologists' judgements per system (the reader study's own numbers)


def judgement_means(study: ReaderStudy, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                    method: str = "bca") -> pd.DataFrame:
    """Mean radiologist judgement per system with its bootstrap confidence interval: one row per ``system``
    (sorted), columns ``system``, ``n_reports`` (the rated reports), then per judgement ``t`` of the study
    (:attr:`ReaderStudy.targets`) ``t``, ``t_low``, ``t_high``, and ``ci_method`` (the interval method used).

    The estimate is the mean over the study's judgement rows (one per report × radiologist) of the system's reports,
    missing judgements left out: errors per report and radiologist, or the mean 1–5 rating. **Intervals**: the
    resampling unit is the rated *report* (``case_id`` × ``candidate``), with all its radiologists' judgements
    (a cluster bootstrap, :func:`radaudit.stats.bootstrap_ci` with :func:`radaudit.stats.column_mean`: the mean of a
    resample is ``Σ_u w_u S_u / Σ_u w_u N_u`` over its drawn reports, in closed form). ``method="bca"`` (default): BCa
    from the leave-one-report-out means; the engine falls back to the percentile interval where BCa's constants are
    undefined (``ci_method`` says so). Every system and judgement is drawn with the same ``seed``, so judgements of
    the same reports share their resamples. A system with a single rated report has no interval (missing bounds)."""
    if method not in METHODS:
        raise ParamsError(f"method must be one of {list(METHODS)}, got {method!r}.")
    targets = study.targets
    merged = study.judgements.merge(study.candidates[["case_id", "candidate", "system"]], on=["case_id", "candidate"])
    means = merged.groupby("system")[targets].mean()  # the estimates, as the notebook computed them before intervals
    merged = merged.assign(_report=_report_ids(merged))
    rows = []
    for system, est in means.iterrows():
        sub = merged[merged["system"] == system]
        row: dict[str, object] = {"system": system, "n_reports": int(sub["_report"].nunique())}
        used = set()
        for t in targets:
            e, low, high = float(est[t]), math.nan, math.nan
            d = sub[[t, "_report"]].dropna(subset=[t])
            if math.isfinite(e) and d["_report"].nunique() >= 2:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", BootstrapWarning)  # the method used goes to ci_method
                    ci = bootstrap_ci(d, column_mean(t), units="_report", n_bootstrap=n_bootstrap, confidence=confidence,
                                      method=method, seed=seed)
                # the engine's mean and pandas' may differ in the last bit: keep the bounds around the estimate shown
                low, high = cover_rounding(e, ci.low, ci.high)
                used.add(ci.method)
            row.update({t: e, f"{t}_low": low, f"{t}_high": high})
        row["ci_method"] = ", ".join(sorted(used)) if used else None
        rows.append(row)
    columns = ["system", "n_reports", *(f"{t}{x}" for t in targets for x in ("", "_low", "_high")), "ci_method"]
    return pd.DataFrame(rows, columns=columns)


def judgements_wide(means: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """:func:`judgement_means` for a reader: one row per system (display name, the index), one column per judgement
    (:data:`TARGETS` label) of ``"1.33 [1.05, 1.62]"`` cells (:func:`radaudit.tables.format_ci` at ``digits``), and
    the rated reports."""
    targets = [t for t in TARGETS if t in means.columns]
    out = pd.DataFrame({TARGETS[t]: [format_ci(e, lo, hi, digits) for e, lo, hi in
                                     zip(means[t], means[f"{t}_low"], means[f"{t}_high"], strict=True)]
                        for t in targets}, index=pd.Index([SYSTEM_LABELS.get(str(s), str(s)) for s in means["system"]],
                                                          name="system"))
    out["reports"] = means["n_reports"].to_numpy()
    return out


# ----------------------------------------------------------------------------------------------
# granular analysis (Fig. 4)


#: Columns of :func:`granular_table`: each estimate followed by its interval bounds (``<name>_low``/``<name>_high``).
GRANULAR_COLUMNS: tuple[str, ...] = ("system", "category", "n_gt", "n_inf", "precision", "precision_low", "precision_high",
                                     "recall", "recall_low", "recall_high", "f1", "f1_low", "f1_high", "n", "ci_method")
_GRANULAR_STATISTICS: tuple[str, ...] = ("precision", "recall", "f1")
#: Largest share of bootstrap resamples a granular cell may lose (no question of the cell in the resample) and still
#: get an interval: a cell whose questions come from one or two reports gets none (its bounds are missing, "n/a").
GRANULAR_MAX_FAILED = 0.1
_REPORT_SEP = "\x1f"  # between case_id and candidate in a report id (a character no id holds)


def _report_ids(frame: pd.DataFrame) -> pd.Series:
    """One id per row: its report, ``case_id`` + ``candidate`` (a case's candidates are different reports)."""
    return frame["case_id"].astype(str) + _REPORT_SEP + frame["candidate"].astype(str)


def pooled_prf(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 pooled over questions (the paper's Eq. 3 ratios, micro-averaged) from summed counts.

    ``counts[..., :]`` = ``(asked GT→INF, matched GT→INF, asked INF→GT, matched INF→GT)`` summed over the reports of a
    cell: ``R = matched GT→INF / asked GT→INF``, ``P = matched INF→GT / asked INF→GT``, ``F1 = 2PR / (P + R)``
    (``0`` when ``P = R = 0``). A ratio with nothing asked is NaN, and so is F1 then. Returns three arrays of
    ``counts.shape[:-1]``: the value of every cell (and every resample, for a stack of resampled sums)."""
    c = np.asarray(counts, dtype=float)
    n_gt, k_gt, n_inf, k_inf = np.moveaxis(c, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(n_gt > 0, k_gt / n_gt, np.nan)
        p = np.where(n_inf > 0, k_inf / n_inf, np.nan)
        f = np.where(p + r == 0, 0.0, 2 * p * r / (p + r))  # NaN where P or R is
    return p, r, f


def report_counts(questions: pd.DataFrame, reports: Sequence[str], categories: Sequence[str]) -> np.ndarray:
    """``(U, C, 4)`` question counts of each report × category: asked and matched GT→INF, asked and matched INF→GT
    (:func:`pooled_prf`'s layout). ``questions``: trace rows with ``_report`` (a report id), ``category``,
    ``direction`` and ``match``; ``reports``: the U report ids (rows of the result); ``categories``: the C
    categories (a question of another category or report is not counted)."""
    out = np.zeros((len(reports), len(categories), 4))
    u = pd.Categorical(questions["_report"], categories=list(reports)).codes
    c = pd.Categorical(questions["category"], categories=list(categories)).codes
    keep = (u >= 0) & (c >= 0)
    inf = (questions["direction"].to_numpy() == "inf->gt")[keep].astype(int)
    match = questions["match"].astype(bool).to_numpy()[keep].astype(float)
    np.add.at(out, (u[keep], c[keep], 2 * inf), 1.0)
    np.add.at(out, (u[keep], c[keep], 2 * inf + 1), match)
    return out


def _granular_intervals(counts: np.ndarray, estimates: Sequence[Mapping[str, float]], *, n_bootstrap: int,
                        confidence: float, seed: int, method: str) -> list[dict[str, object]]:
    """The bounds of every category's P, R and F1 for one system: its reports resampled with replacement
    (:func:`radaudit.stats.resample_weights`), the counts summed per resample and the ratios recomputed
    (:func:`pooled_prf`), BCa from the leave-one-report-out sums (:func:`radaudit.stats.interval_from_replicates`)."""
    n_units, n_cat = counts.shape[:2]
    empty = {f"{s}_{b}": math.nan for s in _GRANULAR_STATISTICS for b in ("low", "high")}
    if n_units < 2:  # one report: nothing to resample
        return [dict(empty, ci_method=None) for _ in range(n_cat)]
    flat = counts.reshape(n_units, -1)
    reps = [np.concatenate(parts) for parts in zip(*(
        pooled_prf((w @ flat).reshape(len(w), n_cat, 4)) for w in resample_weights(n_units, n_bootstrap, seed=seed)))]
    jack = pooled_prf(flat.sum(0)[None, :].reshape(1, n_cat, 4) - counts)  # leave one report out
    out = []
    for c in range(n_cat):
        row: dict[str, object] = dict(empty)
        used = {}
        for j, s in enumerate(_GRANULAR_STATISTICS):
            e = float(estimates[c][s])
            if not math.isfinite(e):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", BootstrapWarning)  # the method used goes to ci_method
                    res = interval_from_replicates(e, reps[j][:, c], jack[j][:, c], method, confidence, n_units, s,
                                                   GRANULAR_MAX_FAILED)
            except BootstrapError:  # the cell's questions sit in too few reports: no interval ("n/a")
                continue
            row[f"{s}_low"], row[f"{s}_high"] = res.low, res.high
            used[s] = res.method
        methods = set(used.values())
        row["ci_method"] = (None if not methods else methods.pop() if len(methods) == 1
                            else ", ".join(f"{s}: {m}" for s, m in used.items()))
        out.append(row)
    return out


def granular_table(trace: pd.DataFrame, level: Literal["attribute", "disease"] = "attribute", *,
                   present_only: bool = True, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0,
                   method: str = "bca") -> pd.DataFrame:
    """Per ``system`` × category: pooled precision, recall and F1 of the trace's questions (module
    docstring), each with its bootstrap confidence interval. ``level="attribute"``: categories are the six facets;
    ``"disease"``: anatomical systems (:func:`system_of` of the asked finding). Columns
    (:data:`GRANULAR_COLUMNS`): ``system``, ``category``, ``n_gt`` (questions asked from the references),
    ``n_inf``, ``precision``, ``recall``, ``f1`` (each followed by ``<name>_low``/``<name>_high``), ``n``
    (= n_gt + n_inf) and ``ci_method`` (the interval method used). An empty trace (no question asked, e.g. every
    LLM decomposition failed) gives an empty table with these columns.

    **Intervals** (``confidence``, default 95%): the resampling unit is the *report* (a ``case_id`` × ``candidate``;
    the trace needs both columns). P, R and F1 are ratios of question counts summed over a system's reports (Eq. 3,
    micro), so each of ``n_bootstrap`` resamples draws the system's reports with replacement, sums their counts
    per category and recomputes the ratios from the sums (:func:`pooled_prf`) — never an average of per-report
    ratios, which would weigh a report with one question like one with twenty. The reports of a system are those
    with a question in the trace (at either level), sorted by id, and every system is drawn with the same ``seed``
    (:func:`radaudit.stats.resample_weights`): systems that wrote reports for the same cases (RadPref's two) get
    the same cases in each resample, paired as in the agreement tables; one resample serves every category and
    both levels. ``method="bca"`` (default): BCa from the leave-one-report-out jackknife of the same sums; where
    its constants are undefined the engine falls back to the percentile interval (``ci_method`` says so).
    A cell with no estimate has no interval, and neither has one whose questions sit in so few reports that more
    than :data:`GRANULAR_MAX_FAILED` of the resamples hold none of them (one or two reports: the ratio is
    undefined there, and an interval of the rest would be biased); its bounds are missing ("n/a").
    ``n_bootstrap=0``: no intervals (bounds missing). The estimates do not depend on the bootstrap."""
    need = ("system", "direction", "level", "finding", "attribute", "expected", "match")
    if n_bootstrap:
        need += ("case_id", "candidate")
    missing = [c for c in need if c not in trace.columns]
    if missing:
        raise RadauditError(f"trace lacks column(s) {missing}; pass MetricScores.trace"
                            + (" (or n_bootstrap=0 for no intervals)." if n_bootstrap else "."))
    if level not in ("attribute", "disease"):
        raise ParamsError(f"level must be 'attribute' or 'disease', got {level!r}.")
    if method not in METHODS:
        raise ParamsError(f"method must be one of {list(METHODS)}, got {method!r}.")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 0:
        raise ParamsError(f"n_bootstrap must be an integer >= 0, got {n_bootstrap!r}.")
    if n_bootstrap:
        trace = trace.assign(_report=_report_ids(trace))
    t = trace[trace["level"] == level].copy()
    if level == "disease":
        if present_only:
            t = t[t["expected"] == "yes"]
        t["category"] = [system_of(f) for f in t["finding"]]
        cats = [*ANATOMICAL_SYSTEMS, OTHER_SYSTEM]
    else:
        t["category"] = t["attribute"]
        cats = list(ATTRIBUTES)
    systems = list(dict.fromkeys(trace["system"]))
    rows = []
    for s in systems:
        start = len(rows)
        for c in cats:
            g = t[(t["system"] == s) & (t["category"] == c)]
            gi, fi = g[g["direction"] == "gt->inf"], g[g["direction"] == "inf->gt"]
            n_gt, n_inf = len(gi), len(fi)
            r = gi["match"].astype(bool).mean() if n_gt else math.nan
            p = fi["match"].astype(bool).mean() if n_inf else math.nan
            if n_gt and n_inf:
                f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
            else:
                f = math.nan
            rows.append({"system": s, "category": c, "n_gt": n_gt, "n_inf": n_inf, "precision": p, "recall": r,
                         "f1": f, "n": n_gt + n_inf})
        if n_bootstrap:
            reports = sorted(set(trace.loc[trace["system"] == s, "_report"]))
            counts = report_counts(t[t["system"] == s], reports, cats)
            for row, ci in zip(rows[start:], _granular_intervals(counts, rows[start:], n_bootstrap=n_bootstrap,
                                                                 confidence=confidence, seed=seed, method=method),
                               strict=True):
                row.update(ci)
    return pd.DataFrame(rows, columns=list(GRANULAR_COLUMNS))


# ----------------------------------------------------------------------------------------------
# failed and repaired model outputs (LLM backend)

#: Columns of :func:`failures_table`.
FAILURE_COLUMNS: tuple[str, ...] = ("stage", "n", "ok", "clean", "repaired", "retried", "failed", "attempts")


def failures_table(atomimed: pd.DataFrame, calls: pd.DataFrame | None = None) -> pd.DataFrame:
    """How many of AtomiMed's model outputs failed or needed help, one row per stage.

    ``atomimed``: :attr:`MetricScores.atomimed` (:func:`radaudit.atomic.score_pairs`' table);
    ``calls``: :attr:`MetricScores.calls` (default: ``atomimed.attrs["calls"]``). Rows: the JSON
    calls of each stage (decomposition: one per distinct report; disease / attribute reading: one
    per pair and direction) with ``n`` calls, ``ok`` (``clean`` at the first reply, ``repaired``
    after a JSON repair, ``retried`` on a follow-up prompt), ``failed`` (unusable after repairs and
    retries) and generator ``attempts``; then ``answers`` (one per question: ``failed`` = no usable
    answer, scored as a non-match) and ``pairs`` (``ok`` = scored, ``failed`` = not scored because
    a report's decomposition failed: NaN, left out of every coefficient; ``repaired``: pairs with at
    least one repaired output). Cells that do not apply are empty. All zero for the rule backend.
    """
    if calls is None:
        calls = atomimed.attrs.get("calls")
    if calls is None:
        calls = pd.DataFrame(columns=list(CALL_COLUMNS))
    rows = [{"stage": r.stage, "n": r.calls, "ok": r.ok, "clean": r.clean, "repaired": r.repaired,
             "retried": r.retried, "failed": r.failed, "attempts": r.attempts} for r in calls.itertuples(index=False)]
    n_q = int(atomimed[["n_disease_gt", "n_disease_inf", "n_attribute_gt", "n_attribute_inf"]].to_numpy().sum())
    n_bad = int(atomimed["n_answers_unparseable"].sum())
    rows.append({"stage": "answers", "n": n_q, "ok": n_q - n_bad, "failed": n_bad})
    ok = atomimed["ok"].astype(bool)
    rows.append({"stage": "pairs", "n": len(atomimed), "ok": int(ok.sum()), "failed": int((~ok).sum()),
                 "repaired": int((atomimed["n_repaired"] > 0).sum())})
    out = pd.DataFrame(rows, columns=list(FAILURE_COLUMNS))
    for c in FAILURE_COLUMNS[1:]:
        out[c] = out[c].astype("Int64")
    return out


def failure_line(atomimed: pd.DataFrame, calls: pd.DataFrame | None = None) -> str | None:
    """One plain-words sentence on :func:`failures_table` (``None`` when no model was called)."""
    t = failures_table(atomimed, calls).set_index("stage")
    made = [s for s in t.index if s not in ("answers", "pairs") and t.loc[s, "n"] > 0]
    if not made:
        return None
    pairs = t.loc["pairs"]
    parts = "; ".join(f"{s}: {int(t.loc[s, 'failed'])} of {int(t.loc[s, 'n'])} calls failed, "
                      f"{int(t.loc[s, 'repaired'])} repaired, {int(t.loc[s, 'retried'])} retried" for s in made)
    line = (f"**Model outputs (LLM backend)**: {int(pairs['failed'])} of {int(pairs['n'])} candidate reports could not "
            "be scored (a report's decomposition failed after repairs and retries); they are missing (NaN) and left out "
            "of every AtomiMed coefficient above. " + parts[:1].upper() + parts[1:]
            + f"; {int(t.loc['answers', 'failed'])} of {int(t.loc['answers', 'n'])} answers unusable (scored as "
            "non-matches).")
    if int(pairs["ok"]) == 0:
        line += " AtomiMed scored no candidate here, so its coefficients are undefined."
    return line


# ----------------------------------------------------------------------------------------------
# plain words


def correlation_row(corr: pd.DataFrame, metric: str, target: str, coef: str = "kendall",
                    rater: str = MEAN_RATER) -> pd.Series | None:
    """The row of :func:`~radaudit.audits.atomic_facts.agreement.correlation_table`'s long table for one metric,
    judgement, coefficient and rater; None when it is absent (or the table is empty)."""
    if corr.empty:
        return None
    s = corr[(corr["metric"] == metric) & (corr["target"] == target) & (corr["coefficient"] == coef)
             & (corr["rater"] == rater)]
    return None if s.empty else s.iloc[0]


def summary_lines(corr: pd.DataFrame, pref: pd.DataFrame, headline: Sequence[str], *,
                  skipped: Mapping[str, str] | None = None, backend: str = "rule", study: str = "radpref",
                  atomimed: pd.DataFrame | None = None, calls: pd.DataFrame | None = None,
                  in_sample: str | None = None, unseen_corr: pd.DataFrame | None = None) -> list[str]:
    """Findings in plain words, computed from the tables: AtomiMed's τ against each radiologist
    judgement beside the headline baselines and the best metric, whether the paired differences are
    distinguishable from 0 (BH-adjusted), the pairwise-preference accuracy, and the human ceiling.
    With ``atomimed`` (:attr:`MetricScores.atomimed`) and a backend that called a model, a last
    line counts the failed and repaired model outputs and the candidates left unscored
    (:func:`failure_line`). ``in_sample`` (the reason the all-cases numbers are in sample,
    :func:`~radaudit.audits.atomic_facts.findings.in_sample_reason`) opens the lines with a warning, and
    ``unseen_corr`` (the test half's Table 2 long table) adds AtomiMed's τ and gains there, on total errors."""
    lines = []
    if in_sample:
        lines.append(f"**Read the all-cases numbers below as in sample** ({in_sample}); the findings rest on the "
                     "test half of the cases" + (" (next line)." if unseen_corr is not None else
                                                 ", which this run could not compute."))
        a = correlation_row(unseen_corr, "atomimed", "total_errors") if unseen_corr is not None else None
        if a is not None:
            gains = []
            for m in headline:
                b = correlation_row(unseen_corr, m, "total_errors")
                if b is not None and math.isfinite(b.diff_vs_reference):
                    gain = format_ci(b.diff_vs_reference, b.diff_low, b.diff_high, 2)
                    gains.append(f"{metric_label(m, METRIC_LABELS)} {gain} (BH p = {format_number(b.diff_p_bh, 3)})")
            lines.append(f"**Test half** ({int(a.n_cases)} cases): AtomiMed τ with total errors = "
                         f"{format_ci(a.estimate, a.low, a.high, 2)}" + ("; its gain over " + "; ".join(gains)
                                                                        if gains else "") + ".")
    targets = [t for t in TARGETS if t in set(corr["target"])]
    name = "the rule-based backend" if backend == "rule" else "the LLM backend"
    for t in targets:
        a = correlation_row(corr, "atomimed", t)
        if a is None:
            continue
        parts = [f"AtomiMed ({name}) τ = {format_ci(a.estimate, a.low, a.high, 2)}"]
        verdict = []
        for m in headline:
            b = correlation_row(corr, m, t)
            if b is None:
                parts.append(f"{metric_label(m, METRIC_LABELS)} not computed here")
                continue
            parts.append(f"{metric_label(m, METRIC_LABELS)} {format_number(b.estimate, 2)}")
            if math.isfinite(b.diff_p_bh):
                sig = b.diff_p_bh < 0.05
                direction = "higher" if b.diff_vs_reference > 0 else "lower"
                verdict.append(f"{direction} than {metric_label(m, METRIC_LABELS)} by "
                               f"{format_number(abs(b.diff_vs_reference), 2)}"
                               f" ({'distinguishable' if sig else 'not distinguishable'} from no difference, BH p = "
                               f"{format_number(b.diff_p_bh, 3)})")
        others = corr[(corr["rater"] == MEAN_RATER) & (corr["target"] == t) & (corr["coefficient"] == "kendall")
                      & ~corr["metric"].str.startswith("atomimed")]
        best = others.sort_values("estimate", ascending=False).head(1)
        ceil = correlation_row(corr, INTER_RATER, t, rater=INTER_RATER)
        s = (f"**{TARGETS[t].capitalize()}** (Kendall τ with the radiologists' mean"
             + ("; fewer errors = better" if t in NEGATED_TARGETS else "") + "): ") + "; ".join(parts) + "."
        if verdict:
            s += " AtomiMed is " + "; ".join(verdict) + "."
        if not best.empty:
            b = best.iloc[0]
            s += f" The best other metric here is {b.label} ({format_ci(b.estimate, b.low, b.high, 2)})."
        if ceil is not None:
            s += f" One radiologist against the others reaches τ = {format_ci(ceil.estimate, ceil.low, ceil.high, 2)}."
        lines.append(s)
    acc = pref[(pref["rater"] == MEAN_RATER) & (pref["statistic"] == "acc")].set_index("metric")
    if "atomimed" in acc.index:
        a = acc.loc["atomimed"]
        if int(a.n_strict_pairs) > 0:
            s = (f"**Pairwise preference**: over the {int(a.n_strict_pairs)} candidate pairs where the radiologists' "
                 f"consensus prefers one candidate, AtomiMed picks the same one in "
                 f"{format_ci(100 * a.estimate, 100 * a.low, 100 * a.high, 1)}% (a coin: 50%)")
        else:  # e.g. every LLM decomposition failed: no pair with both scores
            s = ("**Pairwise preference**: AtomiMed scored no candidate pair where the radiologists' consensus prefers "
                 "one candidate, so its preference accuracy is undefined")
        hs = [f"{metric_label(m, METRIC_LABELS)} {format_number(100 * acc.loc[m, 'estimate'], 1)}%"
              for m in headline if m in acc.index]
        if hs:
            s += "; " + ", ".join(hs)
        c = pref[(pref["metric"] == INTER_RATER) & (pref["statistic"] == "acc")]
        if not c.empty:
            s += f"; one radiologist against the others: {format_number(100 * c.iloc[0].estimate, 1)}%"
        lines.append(s + ".")
    if skipped:
        lines.append("Not computed here (they need packages or weights this machine lacks): "
                     + ", ".join(metric_label(m, METRIC_LABELS) for m in skipped) + ".")
    if atomimed is not None:
        line = failure_line(atomimed, calls)
        if line:
            lines.append(line)
    return lines


def score_summary(scores: pd.DataFrame, columns: Sequence[str], by: str = "system", *, n_bootstrap: int = 1000,
                  confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per ``by`` group and score column: the candidates scored (``n``), the mean with its percentile-bootstrap CI
    over candidates (``estimate``/``low``/``high``; :func:`radaudit.stats.bootstrap_ci`) and the median and
    quartiles. Undefined (NaN) scores are left out and counted in ``n_undefined``. What the notebook showed as a
    raw ``describe()`` before: the same spread, with the interval a mean needs."""
    missing = [c for c in [by, *columns] if c not in scores.columns]
    if missing:
        raise ParamsError(f"score_summary: columns {missing} not in the scores table ({list(scores.columns)})")
    rows = []
    for group, sub in scores.groupby(by, sort=False):
        for col in columns:
            vals = pd.to_numeric(sub[col], errors="coerce").to_numpy(float)
            ok = vals[np.isfinite(vals)]
            row = {by: group, "score": metric_label(col, METRIC_LABELS), "n": int(ok.size),
                   "n_undefined": int(vals.size - ok.size), "estimate": math.nan, "low": math.nan, "high": math.nan,
                   "median": math.nan, "q1": math.nan, "q3": math.nan}
            if ok.size:
                row.update(estimate=float(ok.mean()), median=float(np.median(ok)), q1=float(np.quantile(ok, 0.25)),
                           q3=float(np.quantile(ok, 0.75)))
            if ok.size > 1 and np.ptp(ok) == 0:  # every candidate scored the same: nothing to resample
                row.update(low=float(ok[0]), high=float(ok[0]))
            elif ok.size > 1:
                ci = bootstrap_ci(ok, np.mean, n_bootstrap=n_bootstrap, confidence=confidence, method="percentile",
                                  seed=seed)
                row.update(low=float(ci.low), high=float(ci.high))
            rows.append(row)
    return pd.DataFrame(rows, columns=[by, "score", "n", "n_undefined", "estimate", "low", "high", "median", "q1",
                                       "q3"])
