"""ReXGradient-160K (gated on the Hugging Face Hub): one row per study.

Where the format comes from
---------------------------
The Hub repository ``rajpurkarlab/ReXGradient-160K`` (terms must be accepted) ships, per split
(``train`` 140,000 / ``valid`` 10,000 / public ``test`` 10,000 studies), under ``metadata/``:

- ``<split>_metadata.csv``: one row per study, keyed by ``id``, with the report sections
  ``Indication``, ``Comparison``, ``Findings``, ``Impression`` and the study's ``PatientID``,
  ``PatientAge`` (DICOM age string such as ``"072Y"``), ``PatientSex`` (``M``/``F``/``O``),
  ``StudyDate`` (YYYYMMDD), ``AccessionNumber``, ``StudyInstanceUid``;
- ``<split>_metadata_view_position.json`` (and the older ``<split>_metadata.json``): a dict keyed by
  the same ``id`` whose entries add the per-image lists ``ImagePath`` (``"../deid_png/<PatientID>/
  <AccessionNumber>/studies/<StudyInstanceUid>/series/<...>/instances/<...>.png"``, relative to
  ``metadata/``) and ``ImageViewPosition`` (``PA``, ``AP``, ``LATERAL``, ``LL``,
  ``POSTERO_ANTERIOR``, ...);
- the PNGs ship as ``deid_png.part*`` tar parts that unpack to ``deid_png/``.

Sources: the dataset card (mirrored at modelscope ``AI-ModelScope/ReXGradient-160K``), the
RadHarmony documentation of this release (f10409/RadHarmony ``docs/wiki/datasets/rexgradient.md``
and ``radharmony/harmonizer/rexgradient/rexgradient.py``) and public code that reads the CSV by
``id``, ``Findings``, ``Impression``, ``Comparison``, ``Indication``, ``PatientAge``,
``PatientSex``, ``StudyDate``. The CRIMSON RadPref cases (``crimson-radpref``) are ReXGradient
studies and carry the same ``PatientAge``/``PatientSex`` encodings.

Choices
-------
- Required columns: ``id``, ``Findings``, ``Impression``. The others are used when present.
- ``study_id`` = ``id``; ``patient_id`` = ``PatientID``, else taken from the ``id``, which is
  ``p<PatientID>_a<AccessionNumber>_s<StudyInstanceUid>`` (as in the RadPref case ids);
  ``split`` from the file name (``train``/``valid``/``test``).
- ``age`` in years from the DICOM age string (``nnnY``; ``nnnM``/``nnnW``/``nnnD`` are converted,
  e.g. ``"006M"`` -> 0.5); ``sex`` M/F/O as given.
- Images (only with the JSON file): the key image is the first with the best view in the order
  PA (incl. ``POSTERO_ANTERIOR``), AP (incl. ``ANTERO_POSTERIOR``), LATERAL (incl. ``LL``), others,
  missing. ``view`` is its normalised view; ``image_path`` is its PNG, absolute if it exists, else
  the path relative to the dataset folder (``deid_png/...``). ``image_paths``/``views`` list all.
  Without the JSON file ``view``/``image_path`` are ``<NA>`` (noted in ``df.attrs["notes"]``).
- ``hub_id="rajpurkarlab/ReXGradient-160K"`` downloads only ``metadata/*.csv`` and
  ``metadata/*_view_position.json`` with ``huggingface_hub.snapshot_download`` (into ``folder`` if
  given, else the Hugging Face cache), then reads them as above. ``datasets.load_dataset`` is not
  used: the image-path JSON files are dicts keyed by study id, not record lists, so only a plain
  file download keeps them intact. Needs the ``hub`` extra, network access, a logged-in token
  and accepted terms; otherwise :class:`~radaudit.errors.DatasetNotFoundError` says what is missing.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from radaudit.data.io import read_csv_checked, read_json_checked
from radaudit.data.mimic_cxr import key_image_index
from radaudit.data.schema import finalize
from radaudit.errors import DatasetNotFoundError, ParamsError

logger = logging.getLogger(__name__)

SOURCE = "rexgradient"
HUB_ID = "rajpurkarlab/ReXGradient-160K"
HUB_URL = f"https://huggingface.co/datasets/{HUB_ID}"
SPLITS = ("train", "valid", "test")
REQUIRED_COLUMNS = ("id", "Findings", "Impression")
_JSON_EXPECTED = "a JSON object keyed by study id (ReXGradient *_metadata_view_position.json)"
HUB_PATTERNS = ["metadata/*_metadata.csv", "metadata/*_metadata_view_position.json", "README.md"]

_VIEW_MAP = {"POSTERO_ANTERIOR": "PA", "ANTERO_POSTERIOR": "AP", "LL": "LATERAL", "LATERAL": "LATERAL",
             "PA": "PA", "AP": "AP"}
_VIEW_PRIORITY = ("PA", "AP", "LATERAL")
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([YMWD]?)\s*$", re.IGNORECASE)
_AGE_UNIT = {"Y": 1.0, "": 1.0, "M": 1 / 12, "W": 7 / 365.25, "D": 1 / 365.25}


def parse_dicom_age(value: object) -> float | None:
    """DICOM age string (``"072Y"``, ``"006M"``, ``"010D"``) or a plain number -> years; else ``None``."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return None
    m = _AGE.match(str(value))
    if not m:
        return None
    return float(m.group(1)) * _AGE_UNIT[m.group(2).upper()]


def normalize_view(value: object) -> str | None:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return None
    v = str(value).strip().upper()
    if not v or v in ("NONE", "N/A", "NAN"):
        return None
    return _VIEW_MAP.get(v, v)


def metadata_dir(folder: Path) -> Path | None:
    """The folder holding ``<split>_metadata.csv``: ``folder/metadata`` or ``folder`` itself."""
    for d in (folder / "metadata", folder):
        if any((d / f"{s}_metadata.csv").is_file() for s in SPLITS):
            return d
    return None


def _hub_download(hub_id: str, folder: Path | None, revision: str | None) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as e:
        raise DatasetNotFoundError(
            f"Loading ReXGradient-160K by hub_id={hub_id!r} needs the `hub` extra: "
            "pip install 'radaudit[hub]' (installs datasets and huggingface_hub). "
            f"Or download its metadata/ folder by hand from {HUB_URL} and pass path=<folder>."
        ) from e
    kwargs = {"repo_id": hub_id, "repo_type": "dataset", "allow_patterns": HUB_PATTERNS, "revision": revision}
    if folder is not None:
        kwargs["local_dir"] = str(folder)
    try:
        local = snapshot_download(**kwargs)
    except Exception as e:  # network, 401/403 gated, 404, ...: all mean "no access from here"
        raise DatasetNotFoundError(
            f"Could not download {hub_id!r} from the Hugging Face Hub ({type(e).__name__}: {e}). "
            f"It is gated: it needs network access to huggingface.co, a logged-in token "
            f"(`huggingface-cli login` or HF_TOKEN) and its terms accepted at {HUB_URL}. "
            "Without hub access, download the metadata/ folder by hand and pass path=<folder>."
        ) from e
    return Path(local)


def load(
    folder: Path | None,
    *,
    hub_id: str | None = None,
    revision: str | None = None,
    splits: Iterable[str] | None = None,
    images_dir: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """Load ReXGradient-160K metadata from ``folder`` (or by ``hub_id``) in the tidy schema.

    ``folder``: the dataset folder holding ``metadata/<split>_metadata.csv`` (or the metadata folder
    itself). ``hub_id``: download the metadata from the Hub first (see module docstring).
    ``splits``: a subset of ``("train", "valid", "test")``. ``images_dir``: where ``deid_png/``
    is (default: ``<folder>``; image paths in the JSON are relative to ``metadata/``).
    """
    folder = Path(folder) if folder not in (None, "") else None
    want = tuple(splits) if splits is not None else SPLITS
    bad = [s for s in want if s not in SPLITS]
    if bad:
        raise ParamsError(f"rexgradient: unknown split(s) {bad}; allowed: {list(SPLITS)}.")

    mdir = metadata_dir(folder) if folder is not None else None
    if mdir is None and hub_id:
        root = _hub_download(hub_id, folder, revision)
        mdir = metadata_dir(root)
    if mdir is None:
        where = str(folder) if folder is not None else "(no folder)"
        raise DatasetNotFoundError(
            f"No ReXGradient-160K metadata in {where}: expected metadata/<split>_metadata.csv for split in {list(SPLITS)}. "
            f"Accept the terms at {HUB_URL} and download its metadata/ folder (huggingface-cli download {HUB_ID} "
            f"--repo-type dataset --include 'metadata/*'), or pass hub_id={HUB_ID!r} (needs the `hub` extra)."
        )
    dataset_root = mdir.parent if mdir.name == "metadata" else mdir
    img_root = Path(images_dir) if images_dir not in (None, "") else dataset_root
    notes: list[str] = []

    frames = []
    for split in want:
        csv_path = mdir / f"{split}_metadata.csv"
        if not csv_path.is_file():
            notes.append(f"no {csv_path.name}: split {split!r} not loaded")
            continue
        t = read_csv_checked(csv_path, REQUIRED_COLUMNS, dataset=SOURCE, what="ReXGradient-160K metadata", doc=HUB_URL,
                             dtype=str, keep_default_na=False, na_values=[""])
        t["split"] = split
        json_path = next((p for p in (mdir / f"{split}_metadata_view_position.json", mdir / f"{split}_metadata.json")
                          if p.is_file()), None)
        if json_path is not None:
            entries = read_json_checked(json_path, dataset=SOURCE, top_level=dict, expected=_JSON_EXPECTED)
            t["_images"] = [list((entries.get(i) or {}).get("ImagePath") or []) for i in t["id"]]
            t["_views"] = [list((entries.get(i) or {}).get("ImageViewPosition") or []) for i in t["id"]]
        else:
            notes.append(f"no {split}_metadata_view_position.json: view and image_path are <NA> for {split!r}")
            t["_images"] = [[] for _ in range(len(t))]
            t["_views"] = [[] for _ in range(len(t))]
        frames.append(t)
    if not frames:
        raise DatasetNotFoundError(f"No ReXGradient-160K metadata for splits {list(want)} in {mdir}.")
    df = pd.concat(frames, ignore_index=True)

    out = pd.DataFrame(index=df.index)
    out["study_id"] = df["id"]
    if "PatientID" in df.columns:
        out["patient_id"] = df["PatientID"]
    else:
        out["patient_id"] = df["id"].str.extract(r"^p([^_]+)_a", expand=False)
    out["sex"] = df["PatientSex"] if "PatientSex" in df.columns else pd.NA
    out["age"] = [parse_dicom_age(v) for v in df["PatientAge"]] if "PatientAge" in df.columns else pd.NA

    views_out, paths_out, keys_view, keys_path = [], [], [], []
    for imgs, views in zip(df["_images"], df["_views"]):
        views = [normalize_view(v) for v in views] + [None] * max(0, len(imgs) - len(views))
        views = views[:len(imgs)]
        rels = [p[3:] if isinstance(p, str) and p.startswith("../") else p for p in imgs]
        if rels:
            k = key_image_index(views, _VIEW_PRIORITY)
            p = img_root / rels[k]
            keys_path.append(str(p.resolve()) if p.is_file() else rels[k])
            keys_view.append(views[k] if views[k] is not None else pd.NA)
        else:
            keys_path.append(pd.NA)
            keys_view.append(pd.NA)
        views_out.append(views)
        paths_out.append(rels)
    out["view"] = keys_view
    out["image_path"] = keys_path
    out["findings"] = df["Findings"]
    out["impression"] = df["Impression"]
    out["indication"] = df["Indication"] if "Indication" in df.columns else pd.NA
    out["split"] = df["split"]
    out["comparison"] = (df["Comparison"] if "Comparison" in df.columns
                         else pd.Series(pd.NA, index=df.index)).astype("string")
    if "StudyDate" in df.columns:
        out["study_date"] = pd.to_datetime(df["StudyDate"], format="%Y%m%d", errors="coerce")
    for col, src in (("accession_number", "AccessionNumber"), ("study_instance_uid", "StudyInstanceUid")):
        if src in df.columns:
            out[col] = df[src].astype("string")
    out["image_paths"] = paths_out
    out["views"] = views_out
    for col in ("findings", "impression", "indication", "comparison"):
        # the metadata writes missing sections as blank or the string "None"
        out[col] = out[col].astype("string").mask(out[col].astype("string").str.strip().str.lower().isin(["none", "nan"]))
    res = finalize(out, SOURCE, extra_first=["comparison", "study_date", "accession_number", "study_instance_uid",
                                             "image_paths", "views"])
    res.attrs["notes"] = notes
    return res
