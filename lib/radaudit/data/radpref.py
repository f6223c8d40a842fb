"""RadPref (CRIMSON, Baharoon et al.): reference reports, two candidate reports per case, and three
radiologists' error annotations of the candidates.

Files (``rajpurkarlab/CRIMSON``, folder ``RadPref/``):

- ``preference_data.json``: a JSON list of 100 cases, each an object with ``id``,
  ``ground_truth_report``, ``ground_truth_findings``, ``C1_report``, ``C1_findings``, ``C1_source``,
  ``C2_report``, ``C2_findings``, ``C2_source`` (``"gpt"`` / ``"medgemma"``), ``PatientAge``
  (DICOM age string ``"072Y"``), ``PatientSex`` (``M``/``F``/``O``), ``Indication``,
  ``Comparison``, ``StudyDescription``. Case ids are ReXGradient ids
  ``p<patient>_a<accession>_s<study UID>``.
- ``radiologist_annotations/user_{1,2,3}.json``: ``{"user_id": n, "annotations": {case_id:
  {"C1": ann, "C2": ann, "new_finding_indices": ...}}}`` where ``ann`` is ``{"finding_errors":
  {candidate finding index: {"error_type": "false" | "attribute", "clinical_significance": ...,
  "attributes": {attribute: "significant" | "negligible"}}}, "missing_findings": {reference
  finding index: {"clinical_significance": ...}}, "rating": 1-5}``. Clinical significance is one
  of ``urgent``, ``actionable_not_urgent``, ``not_actionable_not_urgent``, ``benign_expected``.

Two loaders: :func:`load_cases` (``radpref``, one row per case) and :func:`load_annotations`
(``radpref_annotations``, one row per case x candidate x rater).
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pandas as pd

from radaudit.data.io import read_json_checked
from radaudit.data.schema import finalize, normalize_sex
from radaudit.errors import DataFormatError, ParamsError

log = logging.getLogger(__name__)

CASES_FILE = "preference_data.json"
RATER_FILES = {1: "radiologist_annotations/user_1.json", 2: "radiologist_annotations/user_2.json",
               3: "radiologist_annotations/user_3.json"}
_RATER_EXPECTED = "a JSON object with 'user_id' and 'annotations' ({case_id: {'C1': ..., 'C2': ...}})"
CASE_FIELDS = (
    "id", "ground_truth_report", "ground_truth_findings", "C1_report", "C1_findings", "C1_source",
    "C2_report", "C2_findings", "C2_source", "PatientAge", "PatientSex", "Indication", "Comparison",
    "StudyDescription",
)
CANDIDATES = ("C1", "C2")
SIGNIFICANCE = ("urgent", "actionable_not_urgent", "not_actionable_not_urgent", "benign_expected")
ERROR_TYPES = ("false", "attribute")
ATTRIBUTE_LEVELS = ("significant", "negligible")
#: the columns of the long annotation table, in order (those of radpref_rater_long_DERIVED.csv)
ANNOTATION_COLUMNS = (
    "case_id", "candidate", "rater", "candidate_source", "patient_sex", "patient_age", "rating_1to5",
    "n_false_findings", "n_missing_findings", "n_attribute_error_findings",
    "n_attribute_errors_significant", "n_attribute_errors_negligible",
    *(f"n_sig_{s}" for s in SIGNIFICANCE),
)
COUNT_COLUMNS = tuple(c for c in ANNOTATION_COLUMNS if c.startswith("n_"))

_DICOM_AGE = re.compile(r"^\s*(\d{1,3})\s*([DWMY])\s*$", re.IGNORECASE)
_DICOM_UNIT_YEARS = {"D": 1 / 365, "W": 1 / 52, "M": 1 / 12, "Y": 1.0}


def dicom_age_years(value: object) -> object:
    """A DICOM Age String (VR ``AS``, ``nnnD|W|M|Y``, PS3.5 §6.2) in years: ``"072Y"`` → 72.0,
    ``"015M"`` → 1.25, ``"002D"`` → 2/365. Blank or anything else → ``pd.NA``."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return pd.NA
    m = _DICOM_AGE.match(str(value))
    if not m:
        return pd.NA
    return int(m.group(1)) * _DICOM_UNIT_YEARS[m.group(2).upper()]


def patient_from_case_id(case_id: str) -> object:
    """``"pGRDN..._aGRDN..._s1.2.3"`` → ``"pGRDN..."`` (``pd.NA`` if the id has another shape)."""
    m = re.match(r"^(p[^_]+)_a[^_]+_s", str(case_id))
    return m.group(1) if m else pd.NA


def _findings_list(value: object, where: str) -> list[str]:
    """A findings field as a list of strings: a JSON list as is, or a Python-literal string parsed
    with :func:`ast.literal_eval` (never ``eval``)."""
    if isinstance(value, list):
        return [str(v) for v in value]
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, str):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise DataFormatError(f"radpref: {where} is neither a list nor a Python-literal list string: "
                                  f"{value[:80]!r}") from None
        if isinstance(parsed, (list, tuple)):
            return [str(v) for v in parsed]
    raise DataFormatError(f"radpref: {where} should be a list of findings, found {type(value).__name__}.")


def read_cases(folder: Path) -> list[dict]:
    """The raw case records of ``preference_data.json`` in ``folder``: the JSON list as it is, each case checked
    to be an object carrying every field of :data:`CASE_FIELDS` (:class:`~radaudit.errors.DataFormatError`
    otherwise). :func:`load_cases` and :func:`load_annotations` build their tables from it, and code that needs
    the candidates' finding lists as the annotations index them reads it directly."""
    return read_json_checked(folder / CASES_FILE, dataset="radpref", top_level=list, record_fields=CASE_FIELDS,
                             record="case", id_field="id", expected="a JSON list of cases")


def load_cases(folder: Path, **options) -> pd.DataFrame:
    """RadPref cases, one row per case (100).

    Core columns: ``study_id`` = ``id``; ``patient_id`` = the ``p<...>`` part of ``id``; ``sex`` =
    ``PatientSex`` (``M``/``F``/``O`` kept, ``O`` = other/unspecified as the source records it);
    ``age`` = ``PatientAge`` read as a DICOM age string (``"072Y"`` → 72.0; 3 infants are given in
    months, 3 in days, and 4 cases are blank → ``<NA>``); ``findings`` = ``ground_truth_report``
    (the reference report is a findings-style text; there is no separate impression, so
    ``impression`` is ``<NA>``); ``indication`` = ``Indication``; ``view``, ``image_path``,
    ``split``: ``<NA>`` (no images; ``study_description`` says e.g. "DG CHEST 1V PORT").

    Extra columns: ``comparison`` (``Comparison``), ``study_description`` (``StudyDescription``),
    ``c1_report``, ``c1_source``, ``c2_report``, ``c2_source`` (candidate reports and which model
    wrote them, ``gpt``/``medgemma``; the order is randomised per case), ``ground_truth_findings``,
    ``c1_findings``, ``c2_findings`` (lists of finding strings; the annotations index into them).
    """
    if options:
        raise ParamsError(f"radpref: unknown option(s) {sorted(options)}; this loader takes no options.")
    folder = Path(folder)
    rows = []
    for rec in read_cases(folder):
        cid = str(rec["id"])
        rows.append({
            "study_id": cid,
            "patient_id": patient_from_case_id(cid),
            "sex": rec["PatientSex"],
            "age": dicom_age_years(rec["PatientAge"]),
            "findings": rec["ground_truth_report"],
            "indication": rec["Indication"],
            "comparison": rec["Comparison"],
            "study_description": rec["StudyDescription"],
            "c1_report": rec["C1_report"],
            "c1_source": rec["C1_source"],
            "c2_report": rec["C2_report"],
            "c2_source": rec["C2_source"],
            "ground_truth_findings": _findings_list(rec["ground_truth_findings"], f"{cid}: ground_truth_findings"),
            "c1_findings": _findings_list(rec["C1_findings"], f"{cid}: C1_findings"),
            "c2_findings": _findings_list(rec["C2_findings"], f"{cid}: C2_findings"),
        })
    df = pd.DataFrame(rows)
    if df["study_id"].duplicated().any():
        raise DataFormatError(f"radpref: {folder / CASES_FILE} repeats case ids: "
                              f"{df.loc[df['study_id'].duplicated(), 'study_id'].head(3).tolist()}")
    out = finalize(df, source="radpref")
    for c in ("comparison", "study_description", "c1_report", "c1_source", "c2_report", "c2_source"):
        s = out[c].astype("string").str.strip()
        out[c] = s.where(s.fillna("") != "", pd.NA)
    return out


def _count_annotation(ann: dict, where: str) -> dict:
    """The counts of one rater's annotation of one candidate (column meanings: :func:`load_annotations`)."""
    for key in ("finding_errors", "missing_findings", "rating"):
        if key not in ann:
            raise DataFormatError(f"radpref: {where} lacks {key!r}; expected finding_errors, missing_findings and rating.")
    counts = {c: 0 for c in COUNT_COLUMNS}
    for idx, err in (ann["finding_errors"] or {}).items():
        etype = err.get("error_type")
        if etype == "false":
            counts["n_false_findings"] += 1
            sig = err.get("clinical_significance")
            if sig not in SIGNIFICANCE:
                raise DataFormatError(f"radpref: {where}: false finding {idx} has clinical_significance {sig!r}; "
                                      f"expected one of {SIGNIFICANCE}.")
            counts[f"n_sig_{sig}"] += 1
        elif etype == "attribute":
            counts["n_attribute_error_findings"] += 1
            for attr, level in (err.get("attributes") or {}).items():
                if level not in ATTRIBUTE_LEVELS:
                    raise DataFormatError(f"radpref: {where}: attribute {attr!r} of finding {idx} is {level!r}; "
                                          f"expected one of {ATTRIBUTE_LEVELS}.")
                counts[f"n_attribute_errors_{level}"] += 1
        else:
            raise DataFormatError(f"radpref: {where}: finding {idx} has error_type {etype!r}; "
                                  f"expected one of {ERROR_TYPES}.")
    for idx, miss in (ann["missing_findings"] or {}).items():
        counts["n_missing_findings"] += 1
        sig = (miss or {}).get("clinical_significance")
        if sig not in SIGNIFICANCE:
            raise DataFormatError(f"radpref: {where}: missing finding {idx} has clinical_significance {sig!r}; "
                                  f"expected one of {SIGNIFICANCE}.")
        counts[f"n_sig_{sig}"] += 1
    rating = ann["rating"]
    try:
        rating = int(rating)
    except (TypeError, ValueError):
        raise DataFormatError(f"radpref: {where}: rating {rating!r} is not an integer 1-5.") from None
    if not 1 <= rating <= 5:
        raise DataFormatError(f"radpref: {where}: rating {rating} is outside 1-5.")
    counts["rating_1to5"] = rating
    return counts


def load_annotations(folder: Path, **options) -> pd.DataFrame:
    """The radiologists' annotations in long form: one row per case x candidate x rater (600).

    Built from ``radiologist_annotations/user_{1,2,3}.json`` and ``preference_data.json`` (for the
    candidate's source model and the patient). Rows are ordered by case (file order), candidate
    (C1, C2), rater. Columns, in order:

    - ``study_id`` (= ``case_id``), ``sex`` (``PatientSex`` normalised: ``F``/``M``/``O``),
      ``age`` (``PatientAge`` in years, as in :func:`load_cases`), then
    - ``case_id``; ``candidate`` (``"C1"``/``"C2"``); ``rater`` (the file's ``user_id``, 1-3);
      ``candidate_source`` (``gpt``/``medgemma``); ``patient_sex``, ``patient_age`` (as given,
      e.g. ``"072Y"``); ``rating_1to5`` (the rater's overall rating, 5 = best);
    - ``n_false_findings``: candidate findings marked ``error_type: "false"`` (not in the reference);
    - ``n_missing_findings``: reference findings the candidate misses (entries of ``missing_findings``);
    - ``n_attribute_error_findings``: candidate findings marked ``error_type: "attribute"`` (right
      finding, wrong attribute);
    - ``n_attribute_errors_significant`` / ``_negligible``: the wrong attributes (location, severity,
      measurement, ...) over all attribute-error findings, by the rater's weight; a finding can have
      several;
    - ``n_sig_urgent``, ``n_sig_actionable_not_urgent``, ``n_sig_not_actionable_not_urgent``,
      ``n_sig_benign_expected``: false + missing findings by clinical significance (attribute
      errors carry no clinical significance, so these sum to ``n_false + n_missing``);
    - ``source`` (``"radpref_annotations"``).

    A case a rater did not annotate gives no row for that rater; such gaps are logged and counted
    in ``df.attrs["n_missing_annotations"]`` (0 on the public files). Not in the tidy report
    schema: an annotation table keyed by (``case_id``, ``candidate``, ``rater``).
    """
    if options:
        raise ParamsError(f"radpref_annotations: unknown option(s) {sorted(options)}; this loader takes no options.")
    folder = Path(folder)
    cases = read_cases(folder)
    raters: dict[int, dict] = {}
    for n, rel in RATER_FILES.items():
        path = folder / rel
        data = read_json_checked(path, dataset="radpref_annotations", top_level=dict, expected=_RATER_EXPECTED)
        if not isinstance(data.get("annotations"), dict):
            raise DataFormatError(f"radpref_annotations: {path} should hold {_RATER_EXPECTED}; "
                                  "its 'annotations' is missing or not an object.")
        rater_id = int(data.get("user_id", n))
        raters[rater_id] = {"path": path, "annotations": data["annotations"]}

    rows, n_missing = [], 0
    for case in cases:
        cid = str(case["id"])
        for cand in CANDIDATES:
            for rater_id, r in sorted(raters.items()):
                ann_case = r["annotations"].get(cid)
                if ann_case is None or cand not in ann_case:
                    n_missing += 1
                    continue
                where = f"{r['path'].name}: case {cid!r} {cand}"
                counts = _count_annotation(ann_case[cand], where)
                rows.append({
                    "study_id": cid,
                    "sex": normalize_sex(case["PatientSex"]),
                    "age": dicom_age_years(case["PatientAge"]),
                    "case_id": cid,
                    "candidate": cand,
                    "rater": rater_id,
                    "candidate_source": case[f"{cand}_source"],
                    "patient_sex": case["PatientSex"],
                    "patient_age": case["PatientAge"],
                    **counts,
                })
    if n_missing:
        log.warning("radpref_annotations: %d case x candidate x rater annotations are missing", n_missing)
    df = pd.DataFrame(rows, columns=["study_id", "sex", "age", *ANNOTATION_COLUMNS])
    for c in ("study_id", "sex", "case_id", "candidate", "candidate_source", "patient_sex", "patient_age"):
        s = df[c].astype("string")
        df[c] = s.where(s.fillna("").str.strip() != "", pd.NA)
    df["age"] = pd.to_numeric(df["age"], errors="coerce").astype("Float64")
    for c in ("rater", "rating_1to5", *COUNT_COLUMNS):
        df[c] = df[c].astype("int64")
    df["source"] = pd.Series("radpref_annotations", index=df.index, dtype="string")
    df.attrs["source"] = "radpref_annotations"
    df.attrs["n_missing_annotations"] = n_missing
    return df
