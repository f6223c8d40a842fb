"""IU X-ray / Open-i (Indiana University chest X-ray collection) reports in the tidy schema.

Two formats of the same 2013 Open-i export are supported (``format=``):

``"csv"`` (default)
    ``indiana_reports.csv`` (one row per report: ``uid, MeSH, Problems, image, indication,
    comparison, findings, impression``) and ``indiana_projections.csv`` (one row per image:
    ``uid, filename, projection``), the widely used Kaggle export ("raddar/chest-xrays-indiana-
    university"). 3,851 reports, 7,466 images.
``"xml"``
    ``NLMCXR_reports.tgz``: the original Open-i XML, one file ``ecgen-radiology/<n>.xml`` per report
    (3,955; the 104 reports without any image are the ones the CSV export leaves out). Read in
    memory with :mod:`tarfile` and :mod:`xml.etree.ElementTree`; nothing is extracted to disk.

On the 3,851 reports they share, the two formats agree on findings, impression, comparison, MeSH
and Problems for every report, and on the indication for all but 3 (see ``#NAME?`` below).

One row = one report (study). Core columns:

- ``study_id``: the report number as a string: the CSV ``uid`` / the XML file name ``<n>`` (which
  is also the ``<pmcId id>`` and the ``CXR<n>`` of ``<uId>``), e.g. ``"1"``.
- ``patient_id``: ``<NA>`` (Open-i has no patient identifier).
- ``sex``, ``age``: parsed from the indication by :mod:`radaudit.text.demographics` (rule in
  ``df.attrs["sex_rule"]``; the export has no demographic columns and de-identifies ages as
  "XXXX", so ``age`` is almost always ``<NA>``). ``df.attrs["n_with_sex"]`` counts the rows with a sex
  (CSV: 1,149 of 3,851: F 680, M 469). Caveat for sex-stratified analyses: "woman" occurs in 111
  indications but "man" in none, while "XXXX-year-old XXXX" occurs in 123: the de-identification
  appears to have masked "man" (not "male"), so men are probably under-counted among the rows
  with a sex.
- ``view``: the projections in image order joined by ``"|"`` (``Frontal`` → ``FRONTAL``,
  ``Lateral`` → ``LATERAL``), e.g. ``"FRONTAL|LATERAL"``. CSV only: the XML has no projection,
  so ``view`` is ``<NA>`` there.
- ``image_path``: CSV: the first frontal image's file name (the first image if the study has no
  frontal one). It is relative (the images are not part of these files) unless the image exists
  under ``<folder>/images/images_normalized/`` or ``<folder>/images/`` (the Kaggle layout), in
  which case it is that absolute path. XML: ``<NA>`` (no projection, so no key image).
- ``findings``, ``impression``, ``indication``: the report sections, ``<NA>`` when empty. In the
  CSV three indications read ``#NAME?`` (a spreadsheet turned "+PPD ..." / "-- XXXX" into a
  formula error); they are set to ``<NA>`` (the XML has the real text).
- ``split``: ``<NA>`` (Open-i defines no split; see the ``iu_xray_rexrank`` dataset for one).

Extra columns:

- ``comparison``: the COMPARISON section as written ("None.", "XXXX", ...), ``<NA>`` when empty.
- ``mesh``: list of the manually assigned MeSH terms, CSV ``MeSH`` split on ``";"`` / the XML's
  ``<MeSH><major>`` elements, e.g. ``["Cardiomegaly/borderline", "Pulmonary Artery/enlarged"]``.
- ``mesh_automatic``: list of the XML's ``<MeSH><automatic>`` terms (MTI indexing); ``<NA>`` in
  the CSV format, which does not carry them.
- ``problems``: list, CSV ``Problems`` split on ``";"`` (the head of each MeSH term, repeats kept)
  / in the XML the part of each major term before the first ``"/"`` (identical to the CSV's).
- ``labels``: the positive findings of the row, for cross-dataset prevalence: the distinct
  ``problems`` in order of first appearance, ``"normal"`` kept as a label. Reports indexed
  ``"No Indexing"`` (92) were never labelled, so their ``labels`` is ``<NA>`` (not ``[]``): leave
  them out of a prevalence denominator.
- ``image_type``: the CSV ``image`` column (the image caption, e.g. "Xray Chest PA and Lateral") /
  the first ``<parentImage><caption>`` of the XML (equal for 3,842 of the 3,851 shared reports:
  the CSV keeps HTML escapes such as ``&lt;`` in 8 captions and says "Not Available." for one
  report whose XML caption is empty; both are kept as given).
- ``images``: list of the study's image file names in the CSV's naming (``1_IM-0001-4001.dcm.png``).
  In the XML they come from ``<parentImage id="CXR1_1_IM-0001-4001">`` (``CXR`` prefix dropped,
  ``.dcm.png`` added) in XML order; 4 XML reports list one or two more images than the CSV.
- ``projections``: list of ``"FRONTAL"``/``"LATERAL"`` aligned with ``images`` (CSV); ``<NA>`` (XML).
"""

from __future__ import annotations

import logging
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from radaudit.data.io import read_csv_checked
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.text.demographics import SEX_RULE, age_from_text, sex_from_text

log = logging.getLogger(__name__)

SOURCE = "iu_xray"
FORMATS = ("csv", "xml")
REPORTS_CSV = "indiana_reports.csv"
PROJECTIONS_CSV = "indiana_projections.csv"
REPORTS_TGZ = "NLMCXR_reports.tgz"
REPORT_COLUMNS = ("uid", "MeSH", "Problems", "image", "indication", "comparison", "findings", "impression")
PROJECTION_COLUMNS = ("uid", "filename", "projection")
NO_INDEXING = "No Indexing"
_SPREADSHEET_ERRORS = ("#NAME?",)
_IMAGE_DIRS = ("images/images_normalized", "images")
_CSV_FORMAT = "Open-i CSV export"


def load(folder: Path, format: str = "csv", **options) -> pd.DataFrame:  # noqa: A002 (the documented parameter name)
    """Load the IU X-ray reports from ``folder`` in the tidy schema (columns: module docstring).

    ``format``: ``"csv"`` (``indiana_reports.csv`` + ``indiana_projections.csv``) or ``"xml"``
    (``NLMCXR_reports.tgz``). Raises :class:`ParamsError` for another value or an unknown option,
    :class:`DataFormatError` when a file lacks the expected columns or XML elements.
    """
    if options:
        raise ParamsError(f"iu_xray: unknown option(s) {sorted(options)}; the only option is format={FORMATS}.")
    if format not in FORMATS:
        raise ParamsError(f"iu_xray: format={format!r} is not allowed; use one of {', '.join(map(repr, FORMATS))}.")
    folder = Path(folder)
    df = _load_csv(folder) if format == "csv" else _load_xml(folder)
    df["sex"] = df["indication"].map(sex_from_text)
    df["age"] = df["indication"].map(age_from_text)
    out = finalize(df, source=SOURCE)
    out.attrs["format"] = format
    out.attrs["sex_rule"] = "from the indication: " + SEX_RULE
    out.attrs["n_with_sex"] = int(out["sex"].notna().sum())
    return out


# --------------------------------------------------------------------------------------------- csv

def _split_terms(value: str) -> list[str]:
    return [t.strip() for t in str(value).split(";") if t.strip()]


def _labels(problems: list[str]) -> object:
    if NO_INDEXING in problems:
        return pd.NA
    return list(dict.fromkeys(problems))


def _local_image(folder: Path, filename: str, image_dirs: list[Path]) -> str:
    for d in image_dirs:
        p = d / filename
        if p.exists():
            return str(p.resolve())
    return filename


def _load_csv(folder: Path) -> pd.DataFrame:
    reports = read_csv_checked(folder / REPORTS_CSV, REPORT_COLUMNS, dataset=SOURCE, what=_CSV_FORMAT, dtype=str,
                               keep_default_na=False)
    proj = read_csv_checked(folder / PROJECTIONS_CSV, PROJECTION_COLUMNS, dataset=SOURCE, what=_CSV_FORMAT, dtype=str,
                            keep_default_na=False)
    if reports["uid"].duplicated().any():
        dup = reports.loc[reports["uid"].duplicated(), "uid"].head(5).tolist()
        raise DataFormatError(f"iu_xray: {folder / REPORTS_CSV} has repeated uid values (e.g. {dup}); "
                              f"expected one row per report.")
    proj = proj.assign(projection=proj["projection"].str.strip().str.upper())
    # each report's image files and projections in file order (one pass: groupby().agg(list) took 0.5 s)
    images: dict[str, list[str]] = {}
    projections: dict[str, list[str]] = {}
    for uid, filename, projection in zip(proj["uid"], proj["filename"], proj["projection"], strict=True):
        images.setdefault(uid, []).append(filename)
        projections.setdefault(uid, []).append(projection)
    orphan = set(proj["uid"]) - set(reports["uid"])
    if orphan:
        log.warning("iu_xray: %d uid(s) in %s have no report and are ignored", len(orphan), PROJECTIONS_CSV)

    image_dirs = [folder / d for d in _IMAGE_DIRS if (folder / d).is_dir()]
    rows = []
    for rec in reports.itertuples(index=False):
        imgs = images.get(rec.uid, [])
        projs = projections.get(rec.uid, [])
        key = next((f for f, p in zip(imgs, projs) if p == "FRONTAL"), imgs[0] if imgs else None)
        indication = rec.indication
        if indication.strip() in _SPREADSHEET_ERRORS:
            indication = ""
        problems = _split_terms(rec.Problems)
        rows.append({
            "study_id": rec.uid,
            "view": "|".join(projs),
            "image_path": _local_image(folder, key, image_dirs) if key else pd.NA,
            "findings": rec.findings,
            "impression": rec.impression,
            "indication": indication,
            "comparison": rec.comparison,
            "mesh": _split_terms(rec.MeSH),
            "mesh_automatic": pd.NA,
            "problems": problems,
            "labels": _labels(problems),
            "image_type": rec.image,
            "images": list(imgs),
            "projections": list(projs),
        })
    return _tidy_text(pd.DataFrame(rows))


def _tidy_text(df: pd.DataFrame) -> pd.DataFrame:
    for col in ("findings", "impression", "indication", "comparison", "image_type"):
        s = df[col].astype("string").str.strip()
        df[col] = s.where(s.fillna("") != "", pd.NA)
    return df


# --------------------------------------------------------------------------------------------- xml

_MEMBER = re.compile(r"(?:^|/)ecgen-radiology/(\d+)\.xml$")


def _xml_report(n: str, data: bytes, where: str) -> dict:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise DataFormatError(f"iu_xray: {where} is not well-formed XML ({exc}).") from None
    sections: dict[str, str] = {}
    for el in root.iter("AbstractText"):
        label = (el.get("Label") or "").upper()
        if label:
            sections[label] = "".join(el.itertext())
    if not sections:
        raise DataFormatError(
            f"iu_xray: {where} has no <AbstractText Label=...> elements; expected the Open-i report "
            "format with FINDINGS/IMPRESSION/INDICATION/COMPARISON sections."
        )
    mesh_el = root.find("MeSH")
    major = [(e.text or "").strip() for e in mesh_el.findall("major")] if mesh_el is not None else []
    auto = [(e.text or "").strip() for e in mesh_el.findall("automatic")] if mesh_el is not None else []
    major = [m for m in major if m]
    images, captions = [], []
    for p in root.findall("parentImage"):
        pid = p.get("id") or ""
        images.append((pid[3:] if pid.startswith("CXR") else pid) + ".dcm.png")
        captions.append(p.findtext("caption") or "")
    problems = [m.split("/")[0].strip() for m in major]
    return {
        "study_id": n,
        "view": pd.NA,
        "image_path": pd.NA,
        "findings": sections.get("FINDINGS", ""),
        "impression": sections.get("IMPRESSION", ""),
        "indication": sections.get("INDICATION", ""),
        "comparison": sections.get("COMPARISON", ""),
        "mesh": major,
        "mesh_automatic": [a for a in auto if a],
        "problems": problems,
        "labels": _labels(problems),
        "image_type": captions[0] if captions else "",
        "images": images,
        "projections": pd.NA,
    }


def _load_xml(folder: Path) -> pd.DataFrame:
    path = folder / REPORTS_TGZ
    if not path.exists():
        raise DatasetNotFoundError(
            f"iu_xray: format='xml' needs {path}, which does not exist (it ships with the Open-i NLMCXR "
            "reports and inside the torchxrayvision wheel); use format='csv' or add the file."
        )
    rows = []
    try:
        with tarfile.open(path, mode="r:*") as tf:
            for member in tf:
                m = _MEMBER.search(member.name)
                if not member.isfile() or not m:
                    continue
                fh = tf.extractfile(member)
                rows.append(_xml_report(m.group(1), fh.read(), f"{path.name}:{member.name}"))
    except tarfile.TarError as exc:
        raise DataFormatError(f"iu_xray: {path} is not a readable tar archive ({exc}).") from None
    if not rows:
        raise DataFormatError(f"iu_xray: {path} holds no ecgen-radiology/<n>.xml reports.")
    df = pd.DataFrame(rows)
    df = df.iloc[df["study_id"].astype(int).argsort(kind="stable")].reset_index(drop=True)
    return _tidy_text(df)
