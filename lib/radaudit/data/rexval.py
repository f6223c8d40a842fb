"""ReXVal (PhysioNet, credentialed): radiologists' error counts on candidate reports.

Yu F, Endo M, Krishnan R, et al. "Evaluating progress in automatic chest X-ray radiology report
generation." Patterns 4(9):100802, 2023; dataset: https://physionet.org/content/rexval-dataset/1.0.0/.
50 MIMIC-CXR test studies; for each, 4 candidate reports (the training-set report that scores
highest against the reference under one metric: ``radgraph``, ``bertscore``, ``s_emb`` (CheXbert
vector similarity), ``bleu``); 6 radiologists counted errors in 6 categories, split into clinically
significant and insignificant.

Where the format comes from
---------------------------
- ``50_samples_gt_and_candidates.csv``: one row per study: ``study_id``, ``gt_report`` (the
  reference report) and one column per candidate type (``radgraph``, ``bertscore``, ``s_emb``,
  ``bleu``) holding that candidate's report text.
- ``6_valid_raters_per_rater_error_categories.csv``: one row per study x candidate x rater x
  error category x significance: ``study_number`` (0-based row position of the study in the
  candidates file), ``candidate_type``, ``rater_index``, ``error_category`` (1-6),
  ``clinically_significant`` (True/False), ``num_errors``.
- Column names and the ``study_number`` -> row mapping as read by public ReXVal code: the GREEN
  repository's ReXVal scripts (Stanford-AIMI/GREEN ``inference/``, see ../shared/ANCHORS.md), a
  ReXVal processor that joins ``ann_data.study_number == row index`` and uses
  ``report_data.columns[2:]`` as the candidate types, and metric-correlation scripts that map
  ``study_number`` to ``study_id`` by ``enumerate(df_studies["study_id"])``.
- Category names (:data:`ERROR_CATEGORIES`) are the paper's six error types.

Tables
------
``table="candidates"`` (default): one row per study x candidate (200 rows), keyed by
(``study_id``, ``candidate_type``). Extras: ``candidate_type``, ``candidate_report``,
``reference_report``, ``study_number``, and from the error file the per-candidate error counts
averaged over raters: ``mean_errors_significant``, ``mean_errors_insignificant``,
``mean_errors_total`` (for each rater, sum ``num_errors`` over the 6 categories; then the mean over
the raters who rated that candidate), plus ``n_raters``.
The reference report is kept whole in ``reference_report``. The file does not say which report
section(s) it holds, so ``findings``/``impression``/``indication`` are filled only when the text
itself has ``FINDINGS:``/``IMPRESSION:``/``INDICATION:`` headers
(:func:`radaudit.text.sections.split_sections`), else ``<NA>``. ReXVal has no demographics:
``patient_id``, ``sex``, ``age``, ``view``, ``image_path``, ``split`` are ``<NA>``.

``table="errors"``: long form, one row per study x candidate x rater x error category, with
``num_errors_significant``, ``num_errors_insignificant`` (0 where the file has only the other
significance for that cell) and ``num_errors_total``; ``error_category`` (1-6) and
``error_category_name``; ``study_id`` joined from the candidates file.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from radaudit.data.io import read_csv_checked
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, ParamsError
from radaudit.text.sections import split_sections

SOURCE = "rexval"
CANDIDATES_FILE = "50_samples_gt_and_candidates.csv"
ERRORS_FILE = "6_valid_raters_per_rater_error_categories.csv"
FORMAT_DOC = "https://physionet.org/content/rexval-dataset/1.0.0/"
TABLES = ("candidates", "errors")
CANDIDATE_COLUMNS = ("study_id", "gt_report")
ERROR_COLUMNS = ("study_number", "candidate_type", "rater_index", "error_category", "clinically_significant", "num_errors")

#: Yu et al. (2023), Table 1: the six error categories.
ERROR_CATEGORIES: dict[int, str] = {
    1: "False prediction of finding",
    2: "Omission of finding",
    3: "Incorrect location/position of finding",
    4: "Incorrect severity of finding",
    5: "Mention of comparison that is not present in the reference impression",
    6: "Omission of comparison describing a change from a previous study",
}

_TRUE = {"true", "1", "1.0", "yes", "y", "t"}
_FALSE = {"false", "0", "0.0", "no", "n", "f"}


def _read_candidates(folder: Path) -> tuple[pd.DataFrame, list[str]]:
    path = folder / CANDIDATES_FILE
    cand = read_csv_checked(path, CANDIDATE_COLUMNS, dataset=SOURCE, what="ReXVal candidates", doc=FORMAT_DOC,
                            dtype=str, keep_default_na=False)
    types = [c for c in cand.columns if c not in CANDIDATE_COLUMNS and not str(c).startswith("Unnamed")]
    if not types:
        raise DataFormatError(f"{path} has no candidate-report columns after study_id, gt_report (expected radgraph, "
                              f"bertscore, s_emb, bleu); see {FORMAT_DOC}.")
    return cand.reset_index(drop=True), types


def _read_errors(folder: Path, cand: pd.DataFrame, types: list[str]) -> pd.DataFrame:
    path = folder / ERRORS_FILE
    err = read_csv_checked(path, ERROR_COLUMNS, dataset=SOURCE, what="ReXVal rater error", doc=FORMAT_DOC)
    sig = err["clinically_significant"].astype(str).str.strip().str.lower()
    bad_sig = sorted(set(sig) - _TRUE - _FALSE)
    if bad_sig:
        raise DataFormatError(f"{path}: clinically_significant must be True/False, found {bad_sig[:5]}.")
    err["_significant"] = sig.isin(_TRUE)
    err["study_number"] = pd.to_numeric(err["study_number"], errors="raise").astype(int)
    err["error_category"] = pd.to_numeric(err["error_category"], errors="raise").astype(int)
    err["num_errors"] = pd.to_numeric(err["num_errors"], errors="raise")
    out_of_range = sorted(set(err["study_number"]) - set(range(len(cand))))
    if out_of_range:
        raise DataFormatError(
            f"{path}: study_number {out_of_range[:5]} is not a row of {CANDIDATES_FILE} (0..{len(cand) - 1}); "
            "study_number is the 0-based row position of the study in that file."
        )
    unknown = sorted(set(err["candidate_type"].astype(str)) - set(types))
    if unknown:
        raise DataFormatError(f"{path}: candidate_type {unknown} has no column in {CANDIDATES_FILE} (columns: {types}).")
    return err


def _errors_long(err: pd.DataFrame, cand: pd.DataFrame) -> pd.DataFrame:
    keys = ["study_number", "candidate_type", "rater_index", "error_category"]
    wide = (err.assign(_col=err["_significant"].map({True: "num_errors_significant", False: "num_errors_insignificant"}))
               .pivot_table(index=keys, columns="_col", values="num_errors", aggfunc="sum", fill_value=0)
               .reset_index())
    for col in ("num_errors_significant", "num_errors_insignificant"):
        if col not in wide.columns:
            wide[col] = 0
    wide.columns.name = None
    wide["num_errors_total"] = wide["num_errors_significant"] + wide["num_errors_insignificant"]
    wide["error_category_name"] = wide["error_category"].map(ERROR_CATEGORIES).astype("string")
    wide["study_id"] = wide["study_number"].map(dict(enumerate(cand["study_id"])))
    return wide.sort_values(keys).reset_index(drop=True)


def load(folder: Path, *, table: str = "candidates") -> pd.DataFrame:
    """Load ReXVal from ``folder`` (holding both CSVs); ``table`` is ``"candidates"`` or ``"errors"``."""
    if table not in TABLES:
        raise ParamsError(f"rexval: table={table!r} is not one of {list(TABLES)}.")
    folder = Path(folder)
    cand, types = _read_candidates(folder)
    err = _read_errors(folder, cand, types)
    long = _errors_long(err, cand)

    if table == "errors":
        out = long.copy()
        res = finalize(out, SOURCE, extra_first=["study_number", "candidate_type", "rater_index", "error_category",
                                                 "error_category_name", "num_errors_significant",
                                                 "num_errors_insignificant", "num_errors_total"])
        res.attrs["table"] = table
        res.attrs["key"] = ["study_id", "candidate_type", "rater_index", "error_category"]
        return res

    per_rater = (long.groupby(["study_number", "candidate_type", "rater_index"])
                     [["num_errors_significant", "num_errors_insignificant", "num_errors_total"]].sum())
    per_cand = per_rater.groupby(level=["study_number", "candidate_type"]).mean()
    n_raters = per_rater.groupby(level=["study_number", "candidate_type"]).size()

    rows = []
    for i, r in cand.iterrows():
        secs = split_sections(r["gt_report"])
        for t in types:
            key = (i, t)
            rows.append({
                "study_id": r["study_id"],
                "findings": secs.get("findings", pd.NA),
                "impression": secs.get("impression", pd.NA),
                "indication": secs.get("indication", pd.NA),
                "candidate_type": t,
                "candidate_report": r[t],
                "reference_report": r["gt_report"],
                "study_number": i,
                "mean_errors_significant": per_cand["num_errors_significant"].get(key, float("nan")),
                "mean_errors_insignificant": per_cand["num_errors_insignificant"].get(key, float("nan")),
                "mean_errors_total": per_cand["num_errors_total"].get(key, float("nan")),
                "n_raters": int(n_raters.get(key, 0)),
            })
    out = pd.DataFrame(rows)
    for col in ("candidate_type", "candidate_report", "reference_report"):
        out[col] = out[col].astype("string")
    for col in ("mean_errors_significant", "mean_errors_insignificant", "mean_errors_total"):
        out[col] = out[col].astype("Float64")
    res = finalize(out, SOURCE, extra_first=["candidate_type", "candidate_report", "reference_report", "study_number"])
    res.attrs["table"] = table
    res.attrs["key"] = ["study_id", "candidate_type"]
    return res
