"""COVID-19 image data collection (Cohen, Morrison, Dao et al.; github.com/ieee8023/covid-chestxray-dataset),
chest X-ray subset, in the tidy schema.

Files: ``metadata.csv`` (one row per image; columns described in the repository's ``SCHEMA.md``:
``patientid, offset, sex, age, finding, ..., view, modality, date, location, folder, filename,
doi, url, license, clinical_notes, other_notes``) and the images under ``images/``. Two layouts
are supported:

- upstream (a clone or download of the repository): the original files at ``images/<filename>``;
- the lab's processed copy: an ``images_manifest.csv`` (columns ``filename, local_file, ...,
  license``) maps each metadata ``filename`` to the local file (downscaled ``.jpg``). When the
  manifest is present it is used first; a filename it does not list is looked for at
  ``images/<filename>``.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from radaudit.data.image_duplicates import duplicate_groups, merge_ids_sharing_images, thumbnails
from radaudit.data.io import read_csv_checked
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, ParamsError

log = logging.getLogger(__name__)

SOURCE = "covid_cxr"
METADATA = "metadata.csv"
MANIFEST = "images_manifest.csv"
FORMAT_DOC = "https://github.com/ieee8023/covid-chestxray-dataset (SCHEMA.md)"
METADATA_COLUMNS = (
    "patientid", "offset", "sex", "age", "finding", "view", "modality", "date", "location", "folder",
    "filename", "doi", "url", "license", "clinical_notes",
)
MANIFEST_COLUMNS = ("filename", "local_file")
LABEL_MODES = ("covid_vs_other",)
#: ``patients="merged"`` (the default): patient ids that share a picture are one patient
#: (:mod:`radaudit.data.image_duplicates`); ``"as_listed"``: ``patientid`` as the metadata gives it.
PATIENT_MODES = ("merged", "as_listed")
UNLABELLED = ("", "todo")

_VIEWS = {
    "PA": "PA", "AP": "AP", "AP SUPINE": "AP SUPINE", "APS": "AP SUPINE", "L": "LATERAL",
    "LATERAL": "LATERAL", "LL": "LATERAL",
}
_BLANK = ("", "nan", "none", "?")


def normalize_view(value: object) -> object:
    """``PA`` → ``"PA"``, ``AP`` → ``"AP"``, ``AP Supine``/``APS`` → ``"AP SUPINE"``, ``L`` →
    ``"LATERAL"``; blank or ``"?"`` → ``pd.NA``; anything else upper-cased as is."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return pd.NA
    v = " ".join(str(value).split()).upper()
    if v.lower() in _BLANK:
        return pd.NA
    return _VIEWS.get(v, v)


def _blank_to_na(s: pd.Series) -> pd.Series:
    s = s.astype("string").str.strip()
    return s.where(~s.fillna("").str.lower().isin(_BLANK), pd.NA)


def _label(finding: str) -> object:
    f = finding.strip()
    if f.lower() in UNLABELLED:
        return pd.NA
    return 1 if "covid-19" in f.lower() else 0


def _labels(finding: str) -> object:
    f = finding.strip()
    if f.lower() in UNLABELLED:
        return pd.NA
    return [t.strip() for t in f.split(",") if t.strip()]


def _file_key(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return (path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _picture_groups_of(keys: tuple[tuple[str, int, int], ...]) -> np.ndarray:
    return duplicate_groups(thumbnails([k[0] for k in keys]))


def _picture_groups(paths: tuple[str, ...]) -> np.ndarray:
    """:func:`radaudit.data.image_duplicates.duplicate_groups` of these files, memoised per process by path, size
    and modification time (decoding the 653 thumbnails takes ~2 s, and a notebook loads the data more than once)."""
    return _picture_groups_of(tuple(_file_key(p) for p in paths)).copy()


def load(folder: Path, label: str = "covid_vs_other", patients: str = "merged", **options) -> pd.DataFrame:
    """X-ray rows of ``metadata.csv`` whose image exists locally, one row per image.

    Rows: ``modality == "X-ray"`` and ``folder == "images"`` (CT rows and ``volumes/`` are left out)
    and the image file exists (via ``images_manifest.csv`` if present, else ``images/<filename>``).
    X-ray rows whose image is missing are never dropped silently: their number is logged and kept in
    ``df.attrs["n_missing_image"]`` (their filenames in ``df.attrs["missing_images"]``). On the
    lab's copy: 667 X-ray rows, 653 with an image, 14 missing.

    Core columns: ``study_id`` = ``filename``. Five files are listed twice under two patient ids
    (``000001-24.jpg`` for patients 285 and 339, ...); for every row whose filename is not unique,
    ``study_id`` is ``"<filename>#patient<patientid>"`` (and ``"#2"``, ``"#3"``... appended if that
    still repeats), so ``study_id`` is unique; ``filename`` keeps the original name.
    ``patient_id`` = ``patientid`` as a string, except that ids sharing a picture are merged (``patients="merged"``,
    the default; :mod:`radaudit.data.image_duplicates`): the same image under two ids — the five files listed twice
    and five re-encoded copies, ten pairs on the lab's copy — is one patient, ``"285+339"``, so that a patient split
    cannot put one copy in training and the other in the test set, and a re-ID audit's "other patient" is never
    the same picture. On the lab's copy four pairs of ids merge (285+339, 287+340, 78+201, 97+178); the upstream id
    stays in ``patient_id_listed`` and the merged sets in ``df.attrs["merged_patients"]``. ``patients="as_listed"``
    keeps ``patientid`` as given. ``sex`` (``M``/``F``, blank → ``<NA>``), ``age``
    (years, blank → ``<NA>``). ``view``: :func:`normalize_view`. ``image_path``: absolute path of
    the local image. ``findings``, ``impression``, ``indication``: ``<NA>``: ``clinical_notes`` are
    case descriptions from papers and websites (history, course, imaging), not a radiology report of
    this image, so they are kept only as an extra column and never used as report text.
    ``split``: ``<NA>``.

    ``label`` (only ``"covid_vs_other"``): extra column ``label`` = 1 when ``finding`` contains
    "COVID-19" (incl. "COVID-19, ARDS"), 0 for any other finding (incl. "No Finding", "SARS",
    "Pneumonia"), ``<NA>`` when ``finding`` is blank or "todo" (not yet labelled upstream).

    Extra columns: ``finding`` (as given), ``label``, ``labels`` (``finding`` split on ``","``, e.g.
    ``["COVID-19", "ARDS"]``, ``["No Finding"]``; ``<NA>`` when unlabelled), ``license`` (the
    metadata's per-image licence; where blank, the manifest's if it has one; blank → ``<NA>``, which
    means unknown: check before redistributing an image), ``clinical_notes``, ``offset`` (days since
    symptom onset or admission, integer; "?"/blank → ``<NA>``), ``date``, ``location``, ``doi``,
    ``url`` (as given), ``filename``.
    """
    if options:
        raise ParamsError(f"covid_cxr: unknown option(s) {sorted(options)}; the options are label={LABEL_MODES} and "
                          f"patients={PATIENT_MODES}.")
    if patients not in PATIENT_MODES:
        raise ParamsError(f"covid_cxr: patients={patients!r} is not allowed; use one of "
                          f"{', '.join(map(repr, PATIENT_MODES))}.")
    if label not in LABEL_MODES:
        raise ParamsError(f"covid_cxr: label={label!r} is not allowed; use one of {', '.join(map(repr, LABEL_MODES))}.")
    folder = Path(folder)
    meta_path = folder / METADATA
    meta = read_csv_checked(meta_path, METADATA_COLUMNS, dataset=SOURCE, what="covid-chestxray-dataset metadata",
                            doc=FORMAT_DOC, dtype=str, keep_default_na=False)
    xray = meta[(meta["modality"].str.strip() == "X-ray") & (meta["folder"].str.strip() == "images")].copy()

    manifest: dict[str, tuple[str, str]] = {}
    if (folder / MANIFEST).exists():
        man = read_csv_checked(folder / MANIFEST, MANIFEST_COLUMNS, dataset=SOURCE, what="images manifest",
                               allow_empty=True, dtype=str, keep_default_na=False)
        lic = man["license"] if "license" in man.columns else pd.Series("", index=man.index)
        manifest = {f: (lf, li) for f, lf, li in zip(man["filename"], man["local_file"], lic)}

    paths, man_license = [], []
    for fname in xray["filename"]:
        found = pd.NA
        lf, li = manifest.get(fname, ("", ""))
        if lf and (folder / lf).is_file():
            found = str((folder / lf).resolve())
        elif fname and (folder / "images" / fname).is_file():
            found = str((folder / "images" / fname).resolve())
        paths.append(found)
        man_license.append(li)
    xray["image_path"] = paths
    xray["_manifest_license"] = man_license
    has_image = xray["image_path"].notna()
    missing = xray.loc[~has_image, "filename"].tolist()
    if missing:
        log.warning("covid_cxr: %d of %d X-ray rows in %s have no local image and are left out (e.g. %s)",
                    len(missing), len(xray), METADATA, missing[:3])
    xray = xray[has_image].reset_index(drop=True)

    study_id = xray["filename"].copy()
    dup = xray["filename"].duplicated(keep=False)
    study_id[dup] = xray.loc[dup, "filename"] + "#patient" + xray.loc[dup, "patientid"].str.strip()
    rank = study_id.groupby(study_id).cumcount()
    study_id = study_id.where(rank == 0, study_id + "#" + (rank + 1).astype(str))

    listed = xray["patientid"].str.strip()
    patient_id, merges = listed, []
    if patients == "merged" and len(xray):
        merged, merges = merge_ids_sharing_images(listed.tolist(), _picture_groups(tuple(xray["image_path"])))
        patient_id = pd.Series(merged.to_numpy(), index=xray.index)
        if merges:
            log.info("covid_cxr: %d patient ids share pictures and are merged into %d patients (%s); "
                     "patients='as_listed' keeps them apart", sum(map(len, merges)), len(merges),
                     ", ".join("+".join(m) for m in merges))

    license_ = _blank_to_na(xray["license"])
    license_ = license_.fillna(_blank_to_na(xray["_manifest_license"]))

    df = pd.DataFrame({
        "study_id": study_id,
        "patient_id": patient_id,
        "sex": xray["sex"],
        "age": pd.to_numeric(xray["age"].str.strip(), errors="coerce"),
        "view": xray["view"].map(normalize_view),
        "image_path": xray["image_path"],
        "finding": _blank_to_na(xray["finding"]),
        "label": pd.array(xray["finding"].map(_label).tolist(), dtype="Int64"),
        "labels": xray["finding"].map(_labels),
        "license": license_,
        "clinical_notes": _blank_to_na(xray["clinical_notes"]),
        "offset": pd.to_numeric(xray["offset"].str.strip(), errors="coerce").round().astype("Int64"),
        "date": _blank_to_na(xray["date"]),
        "location": _blank_to_na(xray["location"]),
        "doi": _blank_to_na(xray["doi"]),
        "url": _blank_to_na(xray["url"]),
        "filename": xray["filename"].astype("string"),
        "patient_id_listed": listed.astype("string"),
    })
    if df["study_id"].duplicated().any():  # cannot happen after the renaming above; guard the contract
        raise DataFormatError(f"covid_cxr: study ids still repeat in {meta_path}")
    out = finalize(df, source=SOURCE)
    out.attrs["label"] = label
    out.attrs["patients"] = patients
    out.attrs["merged_patients"] = merges
    out.attrs["n_xray_rows"] = int(len(has_image))
    out.attrs["n_missing_image"] = len(missing)
    out.attrs["missing_images"] = missing
    out.attrs["image_source"] = "manifest" if manifest else "images/<filename>"
    return out


# --- label groups of the demo experiments ---------------------------------------------------------
#: The demo's label names, in the order used everywhere (tables, condition vectors).
DEMO_LABELS: tuple[str, ...] = ("COVID-19", "Other pneumonia", "ARDS", "No Finding")

_OTHER = "Other pneumonia"

#: covid-chestxray ``finding`` term → demo label group. Keys are matched case-insensitively. The
#: lab's copy has flat terms (``"COVID-19, ARDS"`` is split on commas first); the current upstream
#: metadata uses hierarchical terms (``"Pneumonia/Viral/COVID-19"``), which :func:`group_findings`
#: resolves from the most specific component up. "Other pneumonia" is every non-COVID infectious or
#: pneumonia finding (viral, bacterial, fungal, lipoid); ARDS and "No Finding" keep their own group.
LABEL_GROUPS: dict[str, str] = {
    "COVID-19": "COVID-19", "SARS-CoV-2": "COVID-19",
    "ARDS": "ARDS",
    "No Finding": "No Finding",
    **{term: _OTHER for term in (
        "SARS", "MERS", "MERS-CoV", "Pneumocystis", "Pneumonia", "Streptococcus", "Klebsiella",
        "Mycoplasma Bacterial Pneumonia", "Mycoplasma", "Legionella", "Lipoid", "Varicella", "E.Coli", "Bacterial",
        "Influenza", "Viral", "Fungal", "Aspergillosis", "Nocardia", "Chlamydophila", "Staphylococcus", "Herpes",
        "Tuberculosis", "Aspiration", "Chlamydia", "H1N1", "Adenovirus", "Lobar",
    )},
}


def group_findings(findings: Sequence[str] | str, label_groups: Mapping[str, str] | None = None,
                   order: Sequence[str] | None = None) -> list[str]:
    """Demo label groups of one image's covid-chestxray findings, deduplicated, in ``order``.

    ``findings``: a list of terms (the loader's ``labels`` column, e.g. ``["COVID-19", "ARDS"]``) or
    the raw ``finding`` string (split on commas). A hierarchical term (``"Pneumonia/Bacterial/
    Klebsiella"``) is looked up whole, then by its components from the most specific. ``order``
    (default: :data:`DEMO_LABELS` then any other group alphabetically) sorts the groups. A term no
    mapping knows raises :class:`DataFormatError` naming it (pass ``label_groups`` with it).
    """
    groups = {k.casefold(): v for k, v in (LABEL_GROUPS if label_groups is None else label_groups).items()}
    terms = [t.strip() for t in findings.split(",")] if isinstance(findings, str) else [str(t).strip() for t in findings]
    out: set[str] = set()
    for term in terms:
        if not term:
            continue
        candidates = [term, *reversed([p.strip() for p in term.split("/") if p.strip()])]
        hit = next((groups[c.casefold()] for c in candidates if c.casefold() in groups), None)
        if hit is None:
            raise DataFormatError(f"Finding {term!r} has no label group. Pass label_groups={{..., {term!r}: "
                                  f"'<group>'}} (the default mapping is radaudit.data.covid_cxr.LABEL_GROUPS).")
        out.add(hit)
    rank = {g: i for i, g in enumerate(DEMO_LABELS if order is None else order)}
    return sorted(out, key=lambda g: (rank.get(g, len(rank)), g))
