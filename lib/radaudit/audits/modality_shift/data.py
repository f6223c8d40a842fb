"""SMS samples for the ``paper`` preset: MIMIC-CXR and FairVLMed (paper §3.1 "Datasets").

Both builders return the tidy SMS sample table of :func:`radaudit.audits.modality_shift.conditions.build_samples`
(``sample_id, patient_id, image_path, text, label, split`` + the prompt header's metadata) with the
dataset's own split kept (the paper evaluates the published test sets; nothing is trained on them).
:func:`load_samples` picks the builder by the ``dataset`` param; ``covid_cxr`` is the demo data
(:func:`radaudit.audits.modality_shift.conditions.covid_samples`).

MIMIC-CXR (§3.1: "10k random chest radiographs from the test set ... reports are preprocessed to
remove uncertain labels"), with the anchor's rules (``src/datasets.py``: ``remove_uncertain_labels``
and ``convert_to_multiclass``) written out:

* the 13 CheXpert observations other than Support Devices are used; uncertain (-1) becomes 0;
* ``No Finding`` = 1 gives label 0 ("No"), checked first; else any of the 12 conditions = 1 gives
  label 1 ("Yes", abnormal); a study with no positive observation at all (every one 0 or not
  mentioned) has no defined label and is left out — counted in ``attrs["dropped"]["no_label"]``;
* text = the whole report (the anchor's ``Summary: {report}``; ``text_column`` may name another
  column, e.g. ``impression``); the header shows age, sex, race, view position and the procedure
  description (MIMIC-CXR metadata ``PerformedProcedureStepDescription``). Race is not in MIMIC-CXR
  or MIMIC-IV ``patients``: give it with ``race_path`` (MIMIC-IV ``hosp/admissions.csv.gz``, the
  most frequent ``race`` of the subject's admissions), else it renders as "unknown";
* ``n`` studies drawn from ``split`` with ``numpy.random.default_rng(seed)`` (the anchor takes the
  first 10,000 rows of a private, pre-shuffled ``test.csv``); studies whose key image is not on
  disk are left out and counted (``attrs["dropped"]["no_image_file"]``), before the draw.

FairVLMed (§3.1: the full test set, 2k SLO images; "metadata and clinical notes are concatenated"):
``data_summary.csv`` (FairCLIP release; columns ``filename, age, gender, race, ..., note,
gpt4_summary, glaucoma, use``) and one ``.npz`` per sample (key ``slo_fundus``) under
``Training/``, ``Validation/``, ``Test/`` (optionally inside ``Dataset/``). The SLO arrays are
written once as PNG files under ``image_cache`` (the VLM layer reads image files); ``glaucoma``
yes/1 → label 1. ``notes="note"`` uses the original de-identified note, ``"gpt4_summary"`` the
GPT-4 summary.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.audits.modality_shift.conditions import build_samples, covid_samples, get_template
from radaudit.audits.modality_shift.params import Params
from radaudit.data import load_dataset
from radaudit.data.mimic_cxr import chexpert_column
from radaudit.data.root import resolve_data_root
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

__all__ = ["DATASETS", "MIMIC_CONDITIONS", "all_samples", "evaluation_samples", "fairvlmed_samples", "load_samples",
           "mimic_labels", "mimic_samples", "template"]

log = logging.getLogger(__name__)

#: Datasets with a sample builder (and a prompt template in ``modality_shift.PROMPTS``).
DATASETS = ("covid_cxr", "mimic_cxr", "fairvlmed")

#: The 12 conditions of the MIMIC prompt (CheXpert observations other than No Finding and Support Devices).
MIMIC_CONDITIONS = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum",
                    "Fracture", "Lung Lesion", "Lung Opacity", "Pleural Effusion", "Pleural Other", "Pneumonia",
                    "Pneumothorax")


def mimic_labels(frame: pd.DataFrame) -> pd.Series:
    """Binary SMS labels from the ``chexpert_*`` columns of the MIMIC-CXR loader (see the module docstring).

    1 = abnormal (any of :data:`MIMIC_CONDITIONS` positive), 0 = ``No Finding`` positive (checked
    first, as the anchor does), ``<NA>`` = no positive observation (uncertain -1 counts as 0).
    """
    cols = {name: chexpert_column(name) for name in ("No Finding", *MIMIC_CONDITIONS)}
    missing = [c for c in cols.values() if c not in frame.columns]
    if missing:
        raise DataFormatError(f"mimic_labels needs the CheXpert columns {missing}; load MIMIC-CXR with labeler='chexpert'.")
    pos = {name: pd.to_numeric(frame[col], errors="coerce").fillna(0).eq(1) for name, col in cols.items()}
    abnormal = pd.concat([pos[c] for c in MIMIC_CONDITIONS], axis=1).any(axis=1)
    out = pd.Series(pd.NA, index=frame.index, dtype="Int64")
    out[abnormal] = 1
    out[pos["No Finding"]] = 0
    return out


def _race_by_subject(path: str | os.PathLike) -> pd.Series:
    adm = pd.read_csv(path, usecols=lambda c: c in ("subject_id", "race"), dtype={"race": str})
    if not {"subject_id", "race"} <= set(adm.columns):
        raise DataFormatError(f"{path}: a MIMIC-IV admissions file needs columns subject_id and race.")
    adm = adm.dropna(subset=["race"])
    return adm.groupby("subject_id")["race"].agg(lambda s: Counter(s).most_common(1)[0][0])


def mimic_samples(path: str | os.PathLike | None = None, *, data_root: Any = None, n: int | None = 10_000,
                  seed: int = 0, split: str = "test", text_column: str = "report",
                  race_path: str | os.PathLike | None = None, max_note_words: int | None = None,
                  **loader_options: Any) -> pd.DataFrame:
    """MIMIC-CXR SMS samples (paper §3.1); rules in the module docstring.

    ``path``: the MIMIC-CXR-JPG folder (default: ``mimic_cxr`` under the data root);
    ``loader_options`` go to :func:`radaudit.data.mimic_cxr.load` (``patients_path``, ``reports_dir``,
    ``images_dir``). Metadata columns: ``age, sex, race, view, procedure``.
    """
    if n is not None and n < 2:
        raise ParamsError(f"n must be >= 2 (or null for every study), got {n}.")
    frame = load_dataset("mimic_cxr", data_root, path=path, splits=[split], **loader_options)
    if frame.empty:
        raise DatasetNotFoundError(f"MIMIC-CXR has no studies in split {split!r}; check the split file.")
    if text_column not in frame.columns:
        raise ParamsError(f"text_column={text_column!r} is not a MIMIC-CXR column; use report, findings or impression.")
    frame = frame.copy()
    frame["label"] = mimic_labels(frame)
    frame["race"] = frame["patient_id"].astype("int64").map(_race_by_subject(race_path)) if race_path else None
    on_disk = frame["image_path"].map(lambda p: isinstance(p, str) and Path(p).is_file())
    n_no_file = int((~on_disk).sum())
    if n_no_file:
        log.warning("mimic_samples: %d of %d studies have no key image on disk; left out.", n_no_file, len(frame))
    frame = frame[on_disk]
    if frame.empty:
        raise DatasetNotFoundError("No MIMIC-CXR key image was found on disk; pass images_dir= (the MIMIC-CXR-JPG "
                                   "files/ folder).")
    samples = build_samples(frame, text_column=text_column, metadata_columns=("age", "sex", "race", "view", "procedure"),
                            split_column="split", max_note_words=max_note_words)
    dropped = {**samples.attrs["dropped"], "no_image_file": n_no_file}
    if n is not None and len(samples) > n:
        keep = np.sort(np.random.default_rng(seed).choice(len(samples), size=n, replace=False))
        samples = samples.iloc[keep].reset_index(drop=True)
    samples.attrs.update(dropped=dropped, source="mimic_cxr", n_drawn=n, seed=seed)
    return samples


_FAIR_SPLITS = {"training": ("train", "Training"), "validation": ("valid", "Validation"), "test": ("test", "Test")}
_FAIR_COLUMNS = ("filename", "age", "gender", "race", "glaucoma", "use")


def _fair_summary(folder: Path) -> Path:
    for cand in (folder / "data_summary.csv", folder / "ReadMe" / "data_summary.csv"):
        if cand.is_file():
            return cand
    raise DatasetNotFoundError(f"No data_summary.csv in {folder} (or {folder / 'ReadMe'}); download Harvard-FairVLMed "
                               "(https://github.com/Harvard-Ophthalmology-AI-Lab/FairCLIP) and pass its folder.")


def _fair_npz(folder: Path, sub: str, filename: str) -> Path | None:
    for base in (folder, folder / "Dataset"):
        p = base / sub / filename
        if p.is_file():
            return p
    return None


def _slo_png(npz: Path, cache: Path, key: str) -> str:
    """The SLO image of one ``.npz`` as an 8-bit grayscale PNG (written once; min-max scaled per image)."""
    from PIL import Image

    out = cache / (npz.stem + ".png")
    if out.is_file():
        return str(out)
    with np.load(npz, allow_pickle=False) as z:
        if key not in z:
            raise DataFormatError(f"{npz} has no array {key!r} (keys: {sorted(z.files)}).")
        arr = np.asarray(z[key], dtype=np.float64)
    if arr.ndim == 3 and arr.shape[-1] in (1, 3):
        arr = arr.mean(axis=-1)
    if arr.ndim != 2:
        raise DataFormatError(f"{npz}:{key} must be a 2-D image, got shape {arr.shape}.")
    lo, hi = float(arr.min()), float(arr.max())
    img = np.zeros_like(arr) if hi <= lo else (arr - lo) / (hi - lo) * 255.0
    tmp = out.with_suffix(".tmp.png")
    Image.fromarray(np.rint(img).astype(np.uint8)).save(tmp)
    os.replace(tmp, out)  # a crash never leaves a half-written PNG
    return str(out)


def fairvlmed_samples(path: str | os.PathLike | None = None, *, data_root: Any = None, split: str = "test",
                      notes: Literal["note", "gpt4_summary"] = "note", image_cache: str | os.PathLike | None = None,
                      image_key: str = "slo_fundus", n: int | None = None, seed: int = 0,
                      max_note_words: int | None = None) -> pd.DataFrame:
    """FairVLMed SMS samples (glaucoma vs healthy; paper §3.1). See the module docstring.

    ``path``: the FairVLMed folder (default ``fairvlmed`` under the data root). ``image_cache``: where
    the PNGs go (default ``<path>/png_cache``). Metadata columns: ``age, sex, race``. Each sample is
    its own patient (FairVLMed has one sample per subject).
    """
    if notes not in ("note", "gpt4_summary"):
        raise ParamsError(f"notes must be 'note' or 'gpt4_summary', got {notes!r}.")
    folder = Path(path) if path else Path(resolve_data_root(data_root)) / "fairvlmed"
    summary = pd.read_csv(_fair_summary(folder), dtype=str, keep_default_na=False)
    missing = [c for c in (*_FAIR_COLUMNS, notes) if c not in summary.columns]
    if missing:
        raise DataFormatError(f"FairVLMed data_summary.csv lacks columns {missing}; it has {list(summary.columns)}.")
    wanted = {v[0]: k for k, v in _FAIR_SPLITS.items()}
    if split not in wanted:
        raise ParamsError(f"split must be one of {sorted(wanted)}, got {split!r}.")
    rows = summary[summary["use"].str.strip().str.lower() == wanted[split]].copy()
    if rows.empty:
        raise DatasetNotFoundError(f"FairVLMed data_summary.csv has no rows with use={wanted[split]!r}.")
    cache = Path(image_cache) if image_cache else folder / "png_cache"
    cache.mkdir(parents=True, exist_ok=True)
    sub = _FAIR_SPLITS[wanted[split]][1]
    paths = []
    for fn in rows["filename"]:
        npz = _fair_npz(folder, sub, fn.strip())
        paths.append(_slo_png(npz, cache, image_key) if npz is not None else None)
    rows["image_path"] = paths
    g = rows["glaucoma"].str.strip().str.lower().map({"yes": 1, "1": 1, "1.0": 1, "no": 0, "0": 0, "0.0": 0})
    if g.isna().any():
        bad = rows.loc[g.isna(), "glaucoma"].unique()[:5].tolist()
        raise DataFormatError(f"FairVLMed glaucoma values must be yes/no or 1/0; found {bad}.")
    rows["label"] = g.astype(int)
    rows["sample_id"] = rows["filename"].str.strip()
    rows["patient_id"] = rows["sample_id"]
    rows["sex"] = rows["gender"]
    rows["age"] = pd.to_numeric(rows["age"], errors="coerce")
    rows["split"] = split
    samples = build_samples(rows, text_column=notes, id_column="sample_id", metadata_columns=("age", "sex", "race"),
                            split_column="split", max_note_words=max_note_words)
    if n is not None and len(samples) > n:
        keep = np.sort(np.random.default_rng(seed).choice(len(samples), size=n, replace=False))
        samples = samples.iloc[keep].reset_index(drop=True)
    samples.attrs.update(source="fairvlmed", notes=notes, n_drawn=n, seed=seed)
    return samples


def load_samples(dataset: str, *, data_root: Any = None, path: str | os.PathLike | None = None, seed: int = 0,
                 test_size: float = 0.3, **options: Any) -> pd.DataFrame:
    """The SMS samples of ``dataset`` (:data:`DATASETS`): ``covid_cxr`` is split by patient here
    (``test_size``); the paper datasets keep their published split. ``options`` go to the builder."""
    if dataset == "covid_cxr":
        return covid_samples(data_root, test_size=test_size, seed=seed, path=path, **options)
    if dataset == "mimic_cxr":
        return mimic_samples(path, data_root=data_root, seed=seed, **options)
    if dataset == "fairvlmed":
        return fairvlmed_samples(path, data_root=data_root, seed=seed, **options)
    raise ParamsError(f"Unknown SMS dataset {dataset!r}; use one of {', '.join(DATASETS)}.")


# --- the run's inputs, selected from its Params ---------------------------------------------------------------

def template(params: Params) -> dict[str, Any]:
    """The prompt template of the run: ``PROMPTS[dataset]`` with ``params.prompt`` on top."""
    return get_template(params.dataset, params.prompt)


def all_samples(params: Params) -> pd.DataFrame:
    """Every sample of the run's dataset with its ``split`` (MIMIC-CXR and FairVLMed: the evaluated split only)."""
    options = dict(params.dataset_options)
    if params.dataset == "mimic_cxr":
        options.setdefault("n", None)
        options.setdefault("split", params.eval_split)
    if params.dataset == "fairvlmed":
        options.setdefault("split", params.eval_split)
    return load_samples(params.dataset, data_root=params.data_root, path=params.dataset_path,
                        seed=params.split_seed, test_size=params.test_size, max_note_words=params.max_note_words,
                        **options)


def evaluation_samples(params: Params, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """The evaluated samples: ``eval_split`` of the dataset, at most ``n_samples`` drawn with ``split_seed``.

    ``samples``: :func:`all_samples` when already loaded. ``attrs["split_counts"]`` keeps the split
    counts of the whole table (label x split) for the notebook.
    """
    samples = all_samples(params) if samples is None else samples
    counts = samples.groupby(["split", "label"]).size().rename("n").reset_index()
    ev = samples[samples["split"] == params.eval_split].reset_index(drop=True)
    if ev.empty:
        raise ParamsError(f"No samples in split {params.eval_split!r}; splits present: {sorted(samples['split'].unique())}.")
    if params.n_samples is not None and len(ev) > params.n_samples:
        keep = np.sort(np.random.default_rng(params.split_seed).choice(len(ev), size=params.n_samples, replace=False))
        ev = ev.iloc[keep].reset_index(drop=True)
    ev.attrs["split_counts"] = counts
    ev.attrs["dropped"] = samples.attrs.get("dropped", {})
    return ev
