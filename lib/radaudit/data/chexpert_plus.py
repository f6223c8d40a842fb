"""CheXpert Plus (Stanford AIMI research-use agreement): reports with sections and demographics.

Where the format comes from
---------------------------
- ``df_chexpert_plus_240401.csv`` (Chambon et al., "CheXpert Plus", arXiv 2405.19538; release at
  https://stanfordaimi.azurewebsites.net/datasets/5158c524-d3ab-4e02-96e9-6ee9efc110a1, also the
  Redivis table ``aimi.chexpert_plus ... df_chexpert_plus_240401``) has **one row per image**, each
  carrying its study's report: ``path_to_image`` (``train/patient42142/study5/view1_frontal.jpg``),
  ``path_to_dcm``, ``frontal_lateral`` (``Frontal``/``Lateral``), ``ap_pa`` (``AP``/``PA``, blank for
  laterals), ``deid_patient_id``, ``patient_report_date_order``, ``report`` and its sections
  ``section_narrative``, ``section_clinical_history``, ``section_history``,
  ``section_comparison``, ``section_technique``, ``section_procedure_comments``,
  ``section_findings``, ``section_impression``, ``section_end_of_impression``,
  ``section_summary``, ``section_accession_number``, and ``age``, ``sex`` (``Male``/``Female``/
  ``Unknown``), ``race``, ``ethnicity``, ``split`` (``train``/``valid``). Column names as used by
  Stanford-AIMI/chexpert-plus ``README.md`` (``section_findings``), the RadHarmony harmonizer
  (f10409/RadHarmony ``radharmony/harmonizer/chexpert/chexpert_plus.py``: ``path_to_image``,
  ``path_to_dcm``, ``frontal_lateral``, ``ap_pa``, ``split``) and a public Redivis client listing
  the identifier, demographic and report columns; the value encodings match the ReXrank export of
  the validation split (``rexrank-chexpertplus-iu/ReXRank_CheXpertPlus.json``).
- CheXbert labels ship separately (``chexbert_labels``: ``report_fixed.json``,
  ``findings_fixed.json``, ``impression_fixed.json``): JSON lines, one object per image with
  ``path_to_image`` and the 14 CheXpert observations (1 positive, 0 negative, -1 uncertain,
  missing = not mentioned), labelled from the whole report / the findings / the impression
  (RadHarmony ``docs/wiki/datasets/chexpert_plus.md``).

Choices
-------
- ``unit="study"`` (default): one row per study (``<patient folder>_<study folder>`` from
  ``path_to_image``, e.g. ``patient42142_study5``), the report of its first row. The key image is
  the first PA, else AP, else other frontal, else lateral image; ``view`` is its view (``PA``/
  ``AP``/``FRONTAL``/``LATERAL``: ``ap_pa`` for frontals, ``LATERAL`` for ``frontal_lateral ==
  "Lateral"``), ``image_path`` its image. ``image_paths``/``views`` list all images.
  ``unit="image"``: one row per CSV row, as the file has it; ``study_id`` then repeats across the
  images of a study and ``image_id`` (``patient42142_study5_view1_frontal``) is unique.
- ``patient_id`` = ``deid_patient_id`` (else the patient folder of ``path_to_image``).
- ``indication`` = ``section_clinical_history``, else ``section_history``; ``comparison``,
  ``race``, ``ethnicity``, ``report`` are extras. ``sex`` ``Unknown`` becomes ``<NA>``.
- ``image_path`` is absolute when the file exists under ``images_dir`` (default ``folder``); the
  PNG release stores ``.png`` files for the ``.jpg`` names in the CSV, so a ``.png`` twin is
  accepted. Otherwise it is ``path_to_image`` as written.
- Labels: ``labels="report"`` (default) merges ``report_fixed.json`` when it exists (in
  ``folder``, ``folder/chexbert_labels`` or ``labels_dir=``) into ``chexpert_<snake_name>``
  columns and a ``labels`` list of positive observations, exactly like :mod:`mimic_cxr`;
  ``"findings"``/``"impression"`` pick the other files; ``None`` skips labels. For ``unit="study"``
  the key image's labels are used (all images of a study share the report the labels come from).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from radaudit.data.io import read_csv_checked
from radaudit.data.mimic_cxr import CHEXPERT_LABELS, chexpert_column, positive_label_lists, view_rank
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

logger = logging.getLogger(__name__)

SOURCE = "chexpert_plus"
CSV_FILE = "df_chexpert_plus_240401.csv"
FORMAT_DOC = ("https://stanfordaimi.azurewebsites.net/datasets/5158c524-d3ab-4e02-96e9-6ee9efc110a1 "
              "(CheXpert Plus, arXiv 2405.19538)")
REQUIRED_COLUMNS = ("path_to_image", "frontal_lateral", "ap_pa", "deid_patient_id", "section_findings",
                    "section_impression", "age", "sex", "split")
LABEL_FILES = {"report": "report_fixed.json", "findings": "findings_fixed.json", "impression": "impression_fixed.json"}
UNITS = ("study", "image")
_VIEW_PRIORITY = ("PA", "AP", "FRONTAL", "LATERAL")


def _view(frontal_lateral: object, ap_pa: object) -> object:
    fl = str(frontal_lateral).strip().lower() if isinstance(frontal_lateral, str) else ""
    if fl == "lateral":
        return "LATERAL"
    ap = str(ap_pa).strip().upper() if isinstance(ap_pa, str) else ""
    if ap in ("AP", "PA"):
        return ap
    if ap == "LL":
        return "LATERAL"
    if fl == "frontal":
        return "FRONTAL"
    return pd.NA


def _read_labels(path: Path) -> pd.DataFrame:
    records = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if line:
                    records.append(json.loads(line))
    except (OSError, ValueError) as e:
        raise DataFormatError(f"Could not read {path} as CheXbert JSON lines ({e}); see {FORMAT_DOC}.") from e
    lab = pd.DataFrame(records)
    missing = [c for c in ("path_to_image", *CHEXPERT_LABELS) if c not in lab.columns]
    if missing:
        raise DataFormatError(f"{path} lacks {missing}: expected one JSON object per line with path_to_image "
                              f"and the 14 CheXpert observations.")
    return lab.drop_duplicates("path_to_image").set_index("path_to_image")


def _resolve(img_root: Path, rel: str) -> str:
    p = img_root / rel
    if p.is_file():
        return str(p.resolve())
    png = p.with_suffix(".png")
    if png.is_file():
        return str(png.resolve())
    return rel


def _check_options(unit: str, labels: str | None) -> None:
    """Raise ``ParamsError`` for a ``unit`` or ``labels`` choice this loader does not know."""
    if unit not in UNITS:
        raise ParamsError(f"chexpert_plus: unit={unit!r} is not one of {list(UNITS)}.")
    if labels is not None and labels not in LABEL_FILES:
        raise ParamsError(f"chexpert_plus: labels={labels!r} is not one of {[*LABEL_FILES, None]}.")


def _read_rows(folder: Path, splits: Iterable[str] | None) -> pd.DataFrame:
    """The per-image CSV rows (``df_chexpert_plus_240401.csv``, columns checked), kept to ``splits`` when given."""
    csv_path = folder / CSV_FILE
    if not csv_path.is_file():
        raise DatasetNotFoundError(
            f"{folder} has no {CSV_FILE}. Accept the Stanford AIMI research-use agreement and download it from {FORMAT_DOC}."
        )
    raw = read_csv_checked(csv_path, REQUIRED_COLUMNS, dataset=SOURCE, what="CheXpert Plus", doc=FORMAT_DOC,
                           low_memory=False)
    if splits is not None:
        raw = raw[raw["split"].isin(list(splits))].reset_index(drop=True)
    return raw


def _add_keys(raw: pd.DataFrame) -> None:
    """Working columns from ``path_to_image`` and the view columns: ``_study_key`` (``patient42142_study5``),
    ``_image_id`` (``patient42142_study5_view1_frontal``) and ``_view`` (:func:`_view`)."""
    parts = raw["path_to_image"].astype(str).str.split("/")
    patient_folder = parts.str[-3]
    raw["_study_key"] = patient_folder + "_" + parts.str[-2]
    raw["_image_id"] = raw["_study_key"] + "_" + parts.str[-1].str.rsplit(".", n=1).str[0]
    raw["_view"] = [_view(fl, ap) for fl, ap in zip(raw["frontal_lateral"], raw["ap_pa"])]


def _find_labels(folder: Path, labels: str | None, labels_dir: str | os.PathLike | None,
                 notes: list[str]) -> pd.DataFrame | None:
    """The CheXbert label file ``labels`` names (``labels_dir``, else ``folder``, else ``folder/chexbert_labels``),
    read by :func:`_read_labels`; ``None`` (with a note) when it is not there or ``labels`` is ``None``."""
    if labels is None:
        return None
    name = LABEL_FILES[labels]
    cands = (([Path(labels_dir) / name] if labels_dir not in (None, "") else [])
             + [folder / name, folder / "chexbert_labels" / name])
    lpath = next((c for c in cands if c.is_file()), None)
    if lpath is None:
        notes.append(f"no {name} (CheXbert labels): CheXpert label columns are <NA>")
        logger.info("chexpert_plus: no %s found; label columns are <NA>", name)
        return None
    return _read_labels(lpath)


def _add_labels(raw: pd.DataFrame, lab: pd.DataFrame | None, label_cols: list[str]) -> None:
    """Per image: the 14 ``chexpert_<snake_name>`` columns (``Float64``; ``<NA>`` without labels) and the ``labels``
    list of positive observations (:func:`radaudit.data.mimic_cxr.positive_label_lists`)."""
    for label, col in zip(CHEXPERT_LABELS, label_cols):
        if lab is not None:
            raw[col] = pd.to_numeric(raw["path_to_image"].map(lab[label]), errors="coerce").astype("Float64")
        else:
            raw[col] = pd.Series(pd.NA, index=raw.index, dtype="Float64")
    has_labels = raw["path_to_image"].isin(lab.index) if lab is not None else pd.Series(False, index=raw.index)
    raw["labels"] = positive_label_lists(raw[label_cols], has_labels)


def _one_row_per_study(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per study, in order of first appearance: the key image's row (PA, else AP, else frontal, else
    lateral; ties by file order) with the study's report, demographics and split from its first row, and
    ``image_paths``/``views`` listing all its images."""
    raw["_order"] = range(len(raw))
    raw["_rank"] = [view_rank(v, _VIEW_PRIORITY) for v in raw["_view"]]
    key = raw.sort_values(["_rank", "_order"], kind="stable").drop_duplicates("_study_key").set_index("_study_key")
    grouped = raw.groupby("_study_key", sort=False)  # studies in order of first appearance
    order = raw["_study_key"].drop_duplicates()
    df = key.loc[order.to_numpy()].reset_index()
    # the report, demographics and split are the study's: take them from its first row
    first = raw.drop_duplicates("_study_key").set_index("_study_key")
    for col in ([c for c in raw.columns if c.startswith("section_")]
                + ["report", "age", "sex", "race", "ethnicity", "split", "deid_patient_id"]):
        if col in raw.columns:
            df[col] = df["_study_key"].map(first[col]).values
    df["image_paths"] = df["_study_key"].map(grouped["path_to_image"].agg(lambda s: [str(x) for x in s])).values
    df["views"] = df["_study_key"].map(grouped["_view"].agg(lambda s: [None if v is pd.NA else v for v in s])).values
    return df


def _indication(df: pd.DataFrame) -> pd.Series:
    """``section_clinical_history``, else (blank or missing) ``section_history``."""
    hist = df["section_clinical_history"] if "section_clinical_history" in df.columns else pd.Series(pd.NA, index=df.index)
    if "section_history" in df.columns:
        hist = hist.astype("string").where(hist.astype("string").str.strip().fillna("") != "",
                                           df["section_history"].astype("string"))
    return hist


def _tidy(df: pd.DataFrame, unit: str, img_root: Path, label_cols: list[str]) -> pd.DataFrame:
    """The schema's columns from the CSV's (rows as ``unit`` made them), then the extras and the label columns;
    :func:`radaudit.data.schema.finalize` is applied by the caller."""
    out = pd.DataFrame(index=df.index)
    out["study_id"] = df["_study_key"]
    pid = df["deid_patient_id"].astype("string")
    out["patient_id"] = pid.fillna(df["_study_key"].str.split("_").str[0])
    out["sex"] = df["sex"]
    out["age"] = df["age"]
    out["view"] = df["_view"]
    out["image_path"] = [_resolve(img_root, str(p)) for p in df["path_to_image"]]
    out["findings"] = df["section_findings"]
    out["impression"] = df["section_impression"]
    out["indication"] = _indication(df)
    out["split"] = df["split"]
    for col in ("findings", "impression", "indication"):
        out[col] = out[col].astype("string").str.strip()
    if unit == "image":
        out["image_id"] = df["_image_id"]
    else:
        out["image_paths"] = df["image_paths"]
        out["views"] = df["views"]
    for extra, src in (("comparison", "section_comparison"), ("race", "race"), ("ethnicity", "ethnicity"),
                       ("patient_report_date_order", "patient_report_date_order"), ("report", "report")):
        if src in df.columns:
            out[extra] = df[src]
    out["labels"] = df["labels"]
    for col in label_cols:
        out[col] = df[col]
    if "comparison" in out.columns:
        out["comparison"] = out["comparison"].astype("string").str.strip()
    return out


def load(
    folder: Path,
    *,
    unit: str = "study",
    labels: str | None = "report",
    labels_dir: str | os.PathLike | None = None,
    images_dir: str | os.PathLike | None = None,
    splits=None,
) -> pd.DataFrame:
    """Load CheXpert Plus from ``folder`` (holding ``df_chexpert_plus_240401.csv``) in the tidy schema.

    ``unit``: ``"study"`` (default) or ``"image"``. ``labels``: ``"report"`` (default),
    ``"findings"``, ``"impression"`` or ``None``. ``splits``: keep only these (``train``/``valid``).
    """
    folder = Path(folder)
    _check_options(unit, labels)
    raw = _read_rows(folder, splits)
    notes: list[str] = []
    _add_keys(raw)
    img_root = Path(images_dir) if images_dir not in (None, "") else folder
    label_cols = [chexpert_column(label) for label in CHEXPERT_LABELS]
    lab = _find_labels(folder, labels, labels_dir, notes)
    _add_labels(raw, lab, label_cols)
    df = _one_row_per_study(raw) if unit == "study" else raw.copy()
    res = finalize(_tidy(df, unit, img_root, label_cols), SOURCE,
                   extra_first=["image_id", "image_paths", "views", "race", "ethnicity", "comparison"])
    res.attrs["notes"] = notes
    res.attrs["unit"] = unit
    res.attrs["labels"] = labels if lab is not None else None
    return res
