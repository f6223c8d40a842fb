"""MIMIC-CXR (credentialed): one row per study, with CheXpert labels, split, report sections and
sex/age from MIMIC-IV.

Where the formats come from
---------------------------
- MIMIC-CXR-JPG 2.0.0 / 2.1.0 (PhysioNet, https://physionet.org/content/mimic-cxr-jpg/2.1.0/):
  ``mimic-cxr-2.0.0-metadata.csv.gz`` has one row per image with columns ``dicom_id, subject_id,
  study_id, PerformedProcedureStepDescription, ViewPosition, Rows, Columns, StudyDate, StudyTime,
  ProcedureCodeSequence_CodeMeaning, ViewCodeSequence_CodeMeaning,
  PatientOrientationCodeSequence_CodeMeaning``; ``mimic-cxr-2.0.0-chexpert.csv.gz`` and
  ``-negbio.csv.gz`` have one row per study: ``subject_id, study_id`` and the 14 CheXpert
  observations, each ``1.0`` (positive), ``0.0`` (negative), ``-1.0`` (uncertain) or blank (not
  mentioned); ``mimic-cxr-2.0.0-split.csv.gz`` has ``dicom_id, study_id, subject_id, split`` with
  ``train``/``validate``/``test``. JPGs are ``files/p<first 2 digits>/p<subject_id>/s<study_id>/
  <dicom_id>.jpg``. (Column lists as read by public loaders of these files: mlmed/torchxrayvision
  ``datasets.py`` ``MIMIC_Dataset``; f10409/RadHarmony ``docs/wiki/datasets/mimic_cxr_jpg.md``.)
- MIMIC-CXR reports (https://physionet.org/content/mimic-cxr/2.1.0/, ``mimic-cxr-reports.zip``):
  ``files/pXX/p<subject_id>/s<study_id>.txt``, free text with ``FINAL REPORT`` and upper-case
  ``SECTION:`` headers at line starts (format as parsed by MIT-LCP/mimic-code
  ``mimic-iv-cxr/txt/section_parser.py``). Sections are split with
  :func:`radaudit.text.sections.split_sections`.
- MIMIC-IV ``hosp/patients.csv.gz`` (MIT-LCP/mimic-website
  ``content/en/docs/IV/modules/hosp/patients.md``): ``subject_id, gender, anchor_age,
  anchor_year, anchor_year_group, dod``. ``anchor_age`` is the age in the (shifted)
  ``anchor_year``; ages over 89 are recorded as 91.

Choices
-------
- One row per study in the metadata file. ``study_id``/``patient_id`` are the MIMIC ids as strings.
- ``view`` is the ViewPosition of the *key image*: the first image of the study (metadata file
  order) with the best view in the order PA, AP, LATERAL, LL, then anything else, then missing.
  ``image_path`` is that image's JPG, absolute if it exists under ``images_dir`` (default
  ``<folder>/files``), else the relative ``files/...`` path. ``dicom_ids`` and ``views`` list all
  images of the study in metadata order. ``procedure`` is the key image's
  ``PerformedProcedureStepDescription`` (``<NA>`` when the column is absent or blank).
- ``age`` at the study = ``anchor_age + (study year - anchor_year)``, where the study year is the
  year of ``StudyDate`` (YYYYMMDD). MIMIC-CXR dates are shifted per patient with the same shift as
  MIMIC-IV, so the difference to ``anchor_year`` is real elapsed time. Patients whose
  ``anchor_age`` is 91 (MIMIC-IV's code for "over 89") get ``age = 91`` and ``age_over_89 = True``:
  their true age is unknown. ``sex`` is MIMIC-IV ``gender`` (F/M).
- Without a patients file, ``sex`` and ``age`` are ``<NA>``; a warning is logged and a note is
  added to ``df.attrs["notes"]``. The loader looks for it at ``patients_path=``, then
  ``<folder>/patients.csv.gz`` (or ``.csv``), ``<folder>/../mimic-iv/hosp/patients.csv.gz``,
  ``<folder>/../mimic-iv/<version>/hosp/patients.csv.gz``.
- ``split``: ``validate`` is renamed ``valid`` (the tidy schema's name); ``<NA>`` without a split file.
- Labels: ``chexpert_<snake_name>`` columns (``Float64``: 1, 0, -1, ``<NA>``) from the CheXpert
  file (``labeler="negbio"`` reads the NegBio file instead; ``labeler=None`` skips labels) and
  ``labels``: the list of observation names (e.g. ``"Pleural Effusion"``) that are 1.0, ``<NA>``
  for a study without a label row.
- ``indication`` is the INDICATION (or REASON FOR EXAM) section, else the HISTORY section.
  ``comparison`` and the whole ``report`` text are extra columns. A study without a report file
  has ``<NA>`` text; the count is logged and noted in ``df.attrs["notes"]``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from radaudit.data.io import read_csv_checked
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, ParamsError
from radaudit.text.sections import split_sections

logger = logging.getLogger(__name__)

SOURCE = "mimic_cxr"

METADATA_FILE = "mimic-cxr-2.0.0-metadata.csv.gz"
CHEXPERT_FILE = "mimic-cxr-2.0.0-chexpert.csv.gz"
NEGBIO_FILE = "mimic-cxr-2.0.0-negbio.csv.gz"
SPLIT_FILE = "mimic-cxr-2.0.0-split.csv.gz"
PATIENTS_FILE = "patients.csv.gz"

FORMAT_DOC = "https://physionet.org/content/mimic-cxr-jpg/2.1.0/"
PATIENTS_DOC = "https://mimic.mit.edu/docs/iv/modules/hosp/patients/"

#: The 14 CheXpert observations, spelled as in the label files.
CHEXPERT_LABELS: tuple[str, ...] = (
    "Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum",
    "Fracture", "Lung Lesion", "Lung Opacity", "No Finding", "Pleural Effusion", "Pleural Other",
    "Pneumonia", "Pneumothorax", "Support Devices",
)

#: Key-image preference: earlier is better; any other value ranks after these, missing last.
VIEW_PRIORITY: tuple[str, ...] = ("PA", "AP", "LATERAL", "LL")

METADATA_COLUMNS = ("dicom_id", "subject_id", "study_id", "ViewPosition", "StudyDate")
SPLIT_COLUMNS = ("dicom_id", "study_id", "split")
PATIENTS_COLUMNS = ("subject_id", "gender", "anchor_age", "anchor_year")
LABELERS = ("chexpert", "negbio", None)

MIMIC_AGE_CAP = 91  # MIMIC-IV records anchor_age > 89 as 91


def chexpert_column(label: str) -> str:
    """``"Enlarged Cardiomediastinum"`` -> ``"chexpert_enlarged_cardiomediastinum"``."""
    return "chexpert_" + re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def view_rank(view: object, priority: Sequence[str] = VIEW_PRIORITY) -> int:
    """Position of ``view`` in ``priority`` (case-insensitive); ``len(priority)`` for any other
    view, ``len(priority) + 1`` for a missing one. Lower is better."""
    if view is None or view is pd.NA or (isinstance(view, float) and pd.isna(view)) or not str(view).strip():
        return len(priority) + 1
    v = str(view).strip().upper()
    return priority.index(v) if v in priority else len(priority)


def key_image_index(views: Sequence[object], priority: Sequence[str] = VIEW_PRIORITY) -> int:
    """Index of the key image among ``views``: the first with the best :func:`view_rank`; 0 if empty."""
    if not len(views):
        return 0
    ranks = [view_rank(v, priority) for v in views]
    return ranks.index(min(ranks))


def positive_label_lists(labels: pd.DataFrame, has_labels: pd.Series) -> list[object]:
    """Per row, the CheXpert observation names whose column (in :data:`CHEXPERT_LABELS` order) is
    1.0; ``<NA>`` where ``has_labels`` is False (no label row)."""
    pos = labels.eq(1.0).fillna(False).to_numpy(dtype=bool)
    return [[CHEXPERT_LABELS[j] for j in np.flatnonzero(row)] if has else pd.NA
            for row, has in zip(pos, has_labels.to_numpy(dtype=bool))]


def find_file(folder: Path, name: str) -> Path | None:
    """``folder/name``, or the same name without ``.gz`` (an unpacked copy), or ``None``."""
    p = folder / name
    if p.is_file():
        return p
    if name.endswith(".gz") and (folder / name[:-3]).is_file():
        return folder / name[:-3]
    return None


def _first_dir(candidates: Iterable[Path]) -> list[Path]:
    return [c for c in candidates if c.is_dir()]


def _find_patients(folder: Path, patients_path: str | os.PathLike | None) -> Path | None:
    if patients_path not in (None, ""):
        p = Path(os.path.expanduser(str(patients_path)))
        if not p.is_file():
            raise DataFormatError(f"patients_path={str(patients_path)!r} is not a file (MIMIC-IV hosp/patients.csv.gz).")
        return p
    cands = [folder / PATIENTS_FILE, folder / "patients.csv",
             folder.parent / "mimic-iv" / "hosp" / PATIENTS_FILE, folder.parent / "mimic-iv" / "hosp" / "patients.csv"]
    mimic_iv = folder.parent / "mimic-iv"
    if mimic_iv.is_dir():
        cands += sorted(mimic_iv.glob(f"*/hosp/{PATIENTS_FILE}"), reverse=True)  # newest version first
    for c in cands:
        if c.is_file():
            return c
    return None


def _study_path(subject: int, study: int) -> str:
    s = str(subject)
    return f"p{s[:2]}/p{s}/s{study}"


def _read_report(dirs: list[Path], rel: str) -> str | None:
    for d in dirs:
        p = d / f"{rel}.txt"
        if p.is_file():
            return p.read_text(encoding="utf-8", errors="replace")
    return None


def _read_metadata(folder: Path) -> pd.DataFrame:
    """The MIMIC-CXR-JPG metadata file, one row per image, with integer ``study_id``/``subject_id``."""
    meta_path = find_file(folder, METADATA_FILE)
    if meta_path is None:
        raise DataFormatError(f"{folder} has no {METADATA_FILE}; download it from {FORMAT_DOC}.")
    meta = read_csv_checked(meta_path, METADATA_COLUMNS, dataset=SOURCE, what="MIMIC-CXR-JPG metadata", doc=FORMAT_DOC,
                            dtype={"dicom_id": str, "ViewPosition": str})
    meta["study_id"] = pd.to_numeric(meta["study_id"], errors="raise").astype("int64")
    meta["subject_id"] = pd.to_numeric(meta["subject_id"], errors="raise").astype("int64")
    return meta


def _studies(meta: pd.DataFrame) -> pd.DataFrame:
    """One row per study (order of first appearance): its key image, view, procedure, all images and date."""
    meta["_order"] = range(len(meta))
    meta["_rank"] = [view_rank(v) for v in meta["ViewPosition"]]
    meta["_date"] = pd.to_numeric(meta["StudyDate"], errors="coerce")
    key = meta.sort_values(["_rank", "_order"], kind="stable").drop_duplicates("study_id").set_index("study_id")
    grouped = meta.groupby("study_id", sort=False)  # studies in order of first appearance
    df = pd.DataFrame({"study": meta["study_id"].drop_duplicates().to_numpy()})
    df["subject_id"] = df["study"].map(key["subject_id"]).astype("int64")
    df["key_dicom"] = df["study"].map(key["dicom_id"])
    key_view = key["ViewPosition"].astype("string").str.strip()
    df["view"] = df["study"].map(key_view.where(key_view != "", pd.NA)).astype("string")
    if "PerformedProcedureStepDescription" in meta.columns:  # e.g. "CHEST (PA AND LAT)"; the SMS prompt header
        proc = key["PerformedProcedureStepDescription"].astype("string").str.strip()
        df["procedure"] = df["study"].map(proc.where(proc != "", pd.NA)).astype("string")
    else:
        df["procedure"] = pd.Series(pd.NA, index=df.index, dtype="string")
    df["dicom_ids"] = df["study"].map(grouped["dicom_id"].agg(list))
    df["views"] = [[v.strip() if isinstance(v, str) and v.strip() else None for v in vs]
                   for vs in df["study"].map(grouped["ViewPosition"].agg(list))]
    df["study_date_int"] = df["study"].map(grouped["_date"].min()).astype("Int64")
    df["study_date"] = pd.to_datetime(df["study_date_int"].astype("string"), format="%Y%m%d", errors="coerce")
    return df


def _add_split(df: pd.DataFrame, folder: Path, splits: Iterable[str] | None, notes: list[str]) -> pd.DataFrame:
    """``df`` with its ``split`` (``validate`` -> ``valid``; ``<NA>`` without a split file), keeping only ``splits``."""
    split_path = find_file(folder, SPLIT_FILE)
    if split_path is not None:
        sp = read_csv_checked(split_path, SPLIT_COLUMNS, dataset=SOURCE, what="MIMIC-CXR-JPG split", doc=FORMAT_DOC,
                              dtype={"dicom_id": str})
        sp["study_id"] = pd.to_numeric(sp["study_id"]).astype("int64")
        per_study = sp.drop_duplicates("study_id").set_index("study_id")["split"].astype("string")
        df["split"] = df["study"].map(per_study).replace({"validate": "valid"})
    else:
        df["split"] = pd.NA
        notes.append(f"no {SPLIT_FILE}: split is <NA>")
    if splits is not None:
        wanted = {"valid" if s == "validate" else s for s in splits}
        df = df[df["split"].isin(wanted)].reset_index(drop=True)
    return df


def _read_labels(folder: Path, labeler: str | None, notes: list[str]) -> pd.DataFrame | None:
    """The ``labeler``'s label file, one row per study (index ``study_id``); ``None`` without a labeler or file."""
    if labeler is None:
        return None
    lname = CHEXPERT_FILE if labeler == "chexpert" else NEGBIO_FILE
    lpath = find_file(folder, lname)
    if lpath is None:
        msg = f"no {lname}: CheXpert label columns are <NA>"
        logger.warning("mimic_cxr: %s", msg)
        notes.append(msg)
        return None
    lab = read_csv_checked(lpath, ("study_id", *CHEXPERT_LABELS), dataset=SOURCE,
                           what=f"MIMIC-CXR-JPG {labeler} label", doc=FORMAT_DOC)
    lab["study_id"] = pd.to_numeric(lab["study_id"]).astype("int64")
    return lab.drop_duplicates("study_id").set_index("study_id")


def _add_labels(df: pd.DataFrame, lab: pd.DataFrame | None, label_cols: list[str]) -> None:
    """The ``chexpert_*`` columns (``Float64``, ``<NA>`` without labels) and ``labels`` (the positive names) of ``df``."""
    has_labels = pd.Series(False, index=df.index)
    for label, col in zip(CHEXPERT_LABELS, label_cols):
        if lab is not None:
            df[col] = pd.to_numeric(df["study"].map(lab[label]), errors="coerce").astype("Float64")
        else:
            df[col] = pd.Series(pd.NA, index=df.index, dtype="Float64")
    if lab is not None:
        has_labels = df["study"].isin(lab.index)
    df["labels"] = positive_label_lists(df[label_cols], has_labels)


def _add_demographics(df: pd.DataFrame, folder: Path, patients_path: str | os.PathLike | None,
                      notes: list[str]) -> None:
    """``sex``, ``age`` at the study and ``age_over_89`` of ``df`` from MIMIC-IV patients (``<NA>`` without it)."""
    ppath = _find_patients(folder, patients_path)
    df["age_over_89"] = pd.Series(pd.NA, index=df.index, dtype="boolean")
    if ppath is None:
        msg = ("MIMIC-IV patients.csv.gz not found (looked for patients_path=, <folder>/patients.csv.gz, "
               "<folder>/../mimic-iv/hosp/patients.csv.gz): sex and age are <NA>. Download MIMIC-IV hosp/patients.csv.gz "
               "from https://physionet.org/content/mimiciv/ and pass patients_path=...")
        logger.warning("mimic_cxr: %s", msg)
        notes.append(msg)
        df["sex"] = pd.NA
        df["age"] = pd.NA
        return
    pat = read_csv_checked(ppath, PATIENTS_COLUMNS, dataset=SOURCE, what="MIMIC-IV patients", doc=PATIENTS_DOC)
    pat["subject_id"] = pd.to_numeric(pat["subject_id"]).astype("int64")
    pat = pat.drop_duplicates("subject_id").set_index("subject_id")
    df["sex"] = df["subject_id"].map(pat["gender"])
    anchor_age = pd.to_numeric(df["subject_id"].map(pat["anchor_age"]), errors="coerce").astype("Float64")
    anchor_year = pd.to_numeric(df["subject_id"].map(pat["anchor_year"]), errors="coerce").astype("Float64")
    study_year = (pd.to_numeric(df["study_date_int"], errors="coerce") // 10000).astype("Float64")
    age = anchor_age + (study_year - anchor_year)
    capped = anchor_age >= MIMIC_AGE_CAP
    df["age"] = age.mask(capped.fillna(False), float(MIMIC_AGE_CAP))
    df["age_over_89"] = capped.astype("boolean")
    n_missing = int(df["sex"].isna().sum())
    if n_missing:
        notes.append(f"{n_missing} studies' subject_id not in {ppath.name}: sex/age <NA>")


def _add_image_paths(df: pd.DataFrame, folder: Path, images_dir: str | os.PathLike | None) -> None:
    """``image_path`` of ``df``: the key image's JPG, absolute if it exists under the images folder, else relative."""
    img_dir = Path(images_dir) if images_dir not in (None, "") else folder / "files"
    paths = []
    for study, subject, dicom in zip(df["study"], df["subject_id"], df["key_dicom"]):
        rel = f"{_study_path(subject, study)}/{dicom}.jpg"
        p = img_dir / rel
        paths.append(str(p.resolve()) if p.is_file() else f"files/{rel}")
    df["image_path"] = paths


def _report_dirs(folder: Path, reports_dir: str | os.PathLike | None) -> list[Path]:
    """The folders to look for report files in: ``reports_dir``, else the default ones that exist."""
    if reports_dir not in (None, ""):
        rdirs = [Path(reports_dir)]
        if not rdirs[0].is_dir():
            raise DataFormatError(f"reports_dir={str(reports_dir)!r} is not a folder "
                                  f"(the unzipped mimic-cxr-reports files/).")
        return rdirs
    return _first_dir([folder / "files", folder / "mimic-cxr-reports" / "files", folder / "reports" / "files"])


def _add_reports(df: pd.DataFrame, folder: Path, rdirs: list[Path], read_reports: bool, notes: list[str]) -> None:
    """The report sections (findings, impression, indication, comparison) and whole ``report`` text of ``df``."""
    sections: list[dict[str, str]] = []
    reports: list[object] = []
    n_missing_reports = 0
    for study, subject in zip(df["study"], df["subject_id"]):
        text = _read_report(rdirs, _study_path(subject, study)) if read_reports else None
        if text is None:
            n_missing_reports += int(read_reports)
            sections.append({})
            reports.append(pd.NA)
        else:
            sections.append(split_sections(text))
            reports.append(text.strip())
    if read_reports and n_missing_reports:
        msg = f"{n_missing_reports} of {len(df)} studies have no report file under {[str(d) for d in rdirs] or folder}"
        logger.warning("mimic_cxr: %s", msg)
        notes.append(msg)
    df["findings"] = [s.get("findings", pd.NA) for s in sections]
    df["impression"] = [s.get("impression", pd.NA) for s in sections]
    df["indication"] = [s.get("indication", s.get("history", pd.NA)) for s in sections]
    df["comparison"] = pd.Series([s.get("comparison", pd.NA) for s in sections], index=df.index, dtype="string")
    df["report"] = pd.Series(reports, index=df.index, dtype="string")


def _tidy(df: pd.DataFrame, label_cols: list[str], labeler: str | None, notes: list[str]) -> pd.DataFrame:
    """``df`` in the tidy schema: string ids, working columns dropped, the MIMIC extras first, notes attached."""
    df["study_id"] = df["study"].astype(str)
    df["patient_id"] = df["subject_id"].astype(str)
    out = df.drop(columns=["study", "key_dicom", "study_date_int"])
    extra = ["subject_id", "study_date", "procedure", "dicom_ids", "views", "labels", *label_cols, "comparison", "report",
             "age_over_89"]
    out = finalize(out, SOURCE, extra_first=extra)
    out.attrs["notes"] = notes
    out.attrs["labeler"] = labeler
    return out


def load(
    folder: Path,
    *,
    patients_path: str | os.PathLike | None = None,
    reports_dir: str | os.PathLike | None = None,
    images_dir: str | os.PathLike | None = None,
    labeler: str | None = "chexpert",
    splits: Iterable[str] | None = None,
    read_reports: bool = True,
) -> pd.DataFrame:
    """Load MIMIC-CXR from ``folder`` (the MIMIC-CXR-JPG root) in the tidy schema.

    ``patients_path``: MIMIC-IV ``patients.csv.gz`` (else searched, see module docstring).
    ``reports_dir``: the unzipped reports' ``files/`` folder (default: ``<folder>/files``,
    ``<folder>/mimic-cxr-reports/files``, ``<folder>/reports/files``, whichever exist).
    ``images_dir``: the JPG ``files/`` folder (default ``<folder>/files``).
    ``labeler``: ``"chexpert"`` (default), ``"negbio"`` or ``None``.
    ``splits``: keep only these splits (``train``/``valid``/``test``) before reading reports.
    ``read_reports=False`` skips the report files (sections are ``<NA>``).
    """
    folder = Path(folder)
    if labeler not in LABELERS:
        raise ParamsError(f"mimic_cxr: labeler={labeler!r} is not one of {list(LABELERS)}.")
    notes: list[str] = []
    df = _studies(_read_metadata(folder))
    df = _add_split(df, folder, splits, notes)
    label_cols = [chexpert_column(label) for label in CHEXPERT_LABELS]
    _add_labels(df, _read_labels(folder, labeler, notes), label_cols)
    _add_demographics(df, folder, patients_path, notes)
    _add_image_paths(df, folder, images_dir)
    _add_reports(df, folder, _report_dirs(folder, reports_dir), read_reports, notes)
    return _tidy(df, label_cols, labeler, notes)
