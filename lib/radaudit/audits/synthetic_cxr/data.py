"""Data for the synthetic-CXR benchmark (CheXGenBench, ``../shared/papers/004_175f666718a5c618.txt``).

What this module gives the rest of experiment 5:

* :func:`demo_frame`: the ``demo`` real data — covid-chestxray X-rays with a label, split **by patient**
  into ``train`` (what the generators learn from, and the privacy audit's reference set, §2.3),
  ``test`` (the real set for fidelity, §2.2, and the utility classifiers' evaluation set, §2.4) and
  ``holdout`` (real images no generator saw, used by the ``heldout_real`` reference generator: the
  best a generator can do). Each row gets a caption ``prompt`` and coarse ``labels`` groups.
* :func:`load_images`: images as float32 ``[N, H, W]`` in [0, 1] (the experiment's image convention),
  decoded one at a time, optionally cached on disk.
* :func:`read_synthetic_set` / :func:`write_synthetic_set`: the bring-your-own synthetic set — a
  folder of images plus a ``metadata.csv`` (``prompt, image_path, labels, seed``), as the paper's
  users bring their generations (the authors' ``prompt_INFO.csv`` has ``prompt, img_savename``).
* :func:`mimic_prompts`: the ``paper`` preset's prompts — MIMIC-CXR studies with the 14 CheXpert
  labels and the LLaVA-Rad annotation as caption (§2.1 "Training Dataset with Enhanced Captions"),
  else the report impression.

Image convention (shared by the whole experiment): an image set is a float32 numpy array
``[N, H, W]`` in [0, 1] (grayscale) plus a DataFrame of per-image metadata with columns ``prompt``
(str), ``labels`` (list of label names), ``seed`` (int or ``<NA>``), ``image_path`` (str or
``<NA>``) and, for real images, ``patient_id`` and ``study_id``.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data import load_dataset
from radaudit.data.covid_cxr import DEMO_LABELS, LABEL_GROUPS, group_findings
from radaudit.data.image_sets import (
    META_COLUMNS,
    RESIZE_POLICIES,
    format_labels,
    format_rows,
    frame_fingerprint,
    is_missing,
    iter_images,
    load_images,
    parse_labels,
    read_synthetic_set,
    write_synthetic_set,
)
from radaudit.data.mimic_cxr import CHEXPERT_LABELS
from radaudit.data.mimic_cxr import load as load_mimic
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

log = logging.getLogger(__name__)

__all__ = [
    "DEMO_LABELS", "FRONTAL_VIEWS", "LABEL_GROUPS", "META_COLUMNS", "RESIZE_POLICIES", "SPLITS",
    "demo_frame", "format_labels", "frame_fingerprint", "group_findings", "iter_images", "load_images",
    "mimic_prompts", "parse_labels", "read_synthetic_set", "split_by_patient", "write_synthetic_set",
]

log = logging.getLogger(__name__)


#: Frontal views (the default ``views`` of :func:`demo_frame`).
FRONTAL_VIEWS: tuple[str, ...] = ("PA", "AP", "AP SUPINE")
SPLITS: tuple[str, ...] = ("train", "test", "holdout")


# --- the demo frame ----------------------------------------------------------------------------------

def _check_fractions(fractions: Any) -> tuple[float, float, float]:
    try:
        fr = tuple(float(f) for f in fractions)
    except (TypeError, ValueError):
        raise ParamsError(f"fractions must be three numbers (train, test, holdout), got {fractions!r}.") from None
    if len(fr) != 3 or any(f < 0 or not math.isfinite(f) for f in fr) or not math.isclose(sum(fr), 1.0, abs_tol=1e-6):
        raise ParamsError(f"fractions must be three non-negative numbers (train, test, holdout) summing to 1, "
                          f"got {fractions!r}.")
    if fr[0] <= 0:
        raise ParamsError(f"The train fraction must be > 0 (generators learn from it), got {fractions!r}.")
    return fr  # type: ignore[return-value]


def split_by_patient(frame: pd.DataFrame, fractions: Sequence[float] = (0.6, 0.2, 0.2), seed: int = 0,
                     *, names: Sequence[str] = SPLITS, stratify: str | None = "labels") -> pd.Series:
    """A split name per row such that every patient's images fall in one split.

    Patients are stratified by the *rarest* label group among their images (group frequency counted
    in images; a patient with no labels forms its own stratum), so rare groups reach every split when
    they have enough patients. Within a stratum, patients (sorted by id, then shuffled with
    ``np.random.default_rng(seed)``) are laid end to end by image count, and each goes to the split
    whose share of the stratum's images contains the middle of the patient's run: the image counts
    per split approach ``fractions`` (exact for one-image patients; a stratum with one patient goes
    wholly to one split). Same frame and seed → the same split; the input row order does not matter.
    """
    fr = _check_fractions(fractions)
    if len(names) != 3:
        raise ParamsError(f"names must be three split names, got {names!r}.")
    for col in ("patient_id",) + ((stratify,) if stratify else ()):
        if col not in frame.columns:
            raise ParamsError(f"split_by_patient needs a {col!r} column; the frame has {list(frame.columns)}.")
    pid = frame["patient_id"].astype(str)
    counts = pid.value_counts()
    if stratify:
        freq: dict[str, int] = {}
        for labs in frame[stratify]:
            for g in ([] if is_missing(labs) else list(labs)):
                freq[g] = freq.get(g, 0) + 1
        stratum: dict[str, str] = {}
        for p, labs in zip(pid, frame[stratify]):
            gs = [] if is_missing(labs) else list(labs)
            key = min(gs, key=lambda g: (freq[g], g)) if gs else "<none>"
            prev = stratum.get(p)
            stratum[p] = key if prev is None else min((prev, key), key=lambda g: (freq.get(g, 10**9), g))
    else:
        stratum = {p: "<all>" for p in counts.index}
    rng = np.random.default_rng(int(seed))
    edges = np.cumsum(fr)
    assign: dict[str, str] = {}
    for key in sorted(set(stratum.values())):
        patients = sorted(p for p, s in stratum.items() if s == key)
        patients = [patients[i] for i in rng.permutation(len(patients))]
        sizes = np.array([counts[p] for p in patients], dtype=float)
        total = sizes.sum()
        mids = (np.cumsum(sizes) - sizes / 2) / total
        for p, m in zip(patients, mids):
            assign[p] = names[int(min(np.searchsorted(edges, m, side="right"), 2))]
    return pd.Series([assign[p] for p in pid], index=frame.index, name="split", dtype="string")


def _format_prompt(template: str, row: Mapping[str, Any]) -> str:
    fields = {k: ("" if is_missing(v) else v) for k, v in row.items() if isinstance(k, str)}
    fields["labels"] = ", ".join(row["labels"]) if row["labels"] else "No label"
    try:
        return " ".join(template.format(**fields).split())
    except (KeyError, IndexError, ValueError) as err:
        raise ParamsError(f"prompt_template {template!r} cannot be filled ({err!r}); it may use the fields "
                          f"{sorted(fields)}.") from None


def demo_frame(data_root: str | os.PathLike | None = None, *, seed: int = 0,
               fractions: Sequence[float] = (0.6, 0.2, 0.2), label_groups: Mapping[str, str] | None = None,
               prompt_template: str = "{view} chest X-ray: {labels}",
               views: Sequence[str] | None = FRONTAL_VIEWS, patients: str = "merged") -> pd.DataFrame:
    """covid-chestxray X-rays with a label, a caption and a patient-level split (the ``demo`` real data).

    Rows: the ``covid_cxr`` loader's X-ray rows with a finding (``"todo"``/blank are unlabelled
    upstream and left out) whose ``view`` is in ``views``. **Default: frontal views only**
    (PA, AP, AP SUPINE): the paper's prompts each describe one frontal radiograph, and the 44
    labelled laterals are too few to learn a view of their own at demo scale; pass
    ``views=None`` to keep every view (then ``{view}`` in a prompt may be ``LATERAL``).

    Columns: the loader's (``study_id, patient_id, sex, age, view, image_path, finding, clinical_notes``,
    ...), plus ``labels`` (demo label groups via :func:`group_findings` and ``label_groups``, default
    :data:`LABEL_GROUPS`; the loader's term list is kept as ``finding_terms``), ``prompt``,
    ``seed`` (``<NA>``: real images) and ``split`` ∈ {train, test, holdout} from
    :func:`split_by_patient` (``fractions`` of images, stratified by the rarest label group, seeded).

    Prompts are captions built from metadata with ``prompt_template`` (fields: ``{view}``,
    ``{labels}`` = the groups joined by ", ", and any other column, e.g. ``{sex}``): the dataset's
    ``clinical_notes`` are case histories copied from papers and websites (symptoms, course, other
    imaging), not descriptions of the image, so they are not used as prompts (the paper's prompts
    are report summaries: LLaVA-Rad annotations, §2.1).

    ``patients`` goes to the loader (:func:`radaudit.data.covid_cxr.load`): ``"merged"`` (default) makes patient ids
    that share a picture one patient, so that no picture lies on both sides of the split; ``"as_listed"`` keeps the
    metadata's ids (then ``000001-27.jpg`` is in training and its copy in the test set at seed 0).

    ``df.attrs`` records the counts left out (unlabelled, other views) and the split sizes.
    """
    fr = _check_fractions(fractions)
    raw = load_dataset("covid_cxr", data_root, patients=patients)
    n_all = len(raw)
    labelled = raw[raw["labels"].map(lambda v: not is_missing(v) and len(v) > 0)]
    n_unlabelled = n_all - len(labelled)
    if views is not None:
        if isinstance(views, str):
            views = [views]
        wanted = {str(v).strip().upper() for v in views}
        keep = labelled["view"].map(lambda v: (not is_missing(v)) and str(v).upper() in wanted).astype(bool)
        n_other_views = int((~keep).sum())
        df = labelled[keep].copy()
    else:
        n_other_views = 0
        df = labelled.copy()
    if df.empty:
        raise DataFormatError(f"covid_cxr has no labelled X-rays with views {list(views or [])}; views seen: "
                              f"{sorted(labelled['view'].dropna().astype(str).unique())}.")
    df = df.reset_index(drop=True)
    df["finding_terms"] = df["labels"]
    df["labels"] = [group_findings(t, label_groups) for t in df["finding_terms"]]
    df["prompt"] = [_format_prompt(prompt_template, row) for row in df.to_dict("records")]
    df["seed"] = pd.array([pd.NA] * len(df), dtype="Int64")
    df["split"] = split_by_patient(df, fr, seed)
    by_patient = df.groupby("patient_id")["split"].nunique()
    if (by_patient > 1).any():  # guard the contract: cannot happen by construction
        raise RuntimeError(f"patients crossing splits: {by_patient[by_patient > 1].index.tolist()[:5]}")
    front = ["study_id", "patient_id", "split", "prompt", "labels", "seed", "view", "image_path"]
    df = df[front + [c for c in df.columns if c not in front]]
    df.attrs.update({
        "n_xray_rows": n_all, "n_unlabelled": n_unlabelled, "n_other_views": n_other_views,
        "views": None if views is None else sorted({str(v).upper() for v in views}), "fractions": list(fr),
        "seed": int(seed), "prompt_template": prompt_template,
        "split_sizes": {s: int((df["split"] == s).sum()) for s in SPLITS},
    })
    log.info("demo_frame: %d images (%d unlabelled and %d other views left out); split sizes %s", len(df),
             n_unlabelled, n_other_views, df.attrs["split_sizes"])
    return df


# --- paper preset: MIMIC-CXR prompts -----------------------------------------------------------------

_STUDY_RE = re.compile(r"(?:^|/)s(\d+)(?:/|$)")
_SUBJECT_RE = re.compile(r"(?:^|/)p(\d{3,})(?:/|$)")


def _labels_from_cell(cell: Any, names: Sequence[str], where: str) -> list[str]:
    """CheXGenBench's ``chexpert_labels`` cell: a Python/JSON dict {observation: 1.0/0.0/-1.0/NaN}
    (the authors read it with ``ast.literal_eval``), or a list of positive names → positive names."""
    import ast

    if is_missing(cell) or (isinstance(cell, str) and not cell.strip()):
        return []
    value = cell
    if isinstance(cell, str):
        text = re.sub(r"\bnan\b", "None", cell)
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return parse_labels(cell, where=where)
    if isinstance(value, dict):
        return [n for n in names if value.get(n) is not None and float(value.get(n)) == 1.0]
    if isinstance(value, (list, tuple)):
        return [str(x) for x in value]
    raise DataFormatError(f"chexpert labels{where}: expected a dict of observation → 1/0/-1 or a list, got {cell!r}.")


#: Report sections kept next to the prompt (the references of the report-generation utility, Table 5).
_REPORT_COLUMNS = ("findings", "impression")


def mimic_prompts(folder: str | os.PathLike | None = None, *,
                  annotations_csv: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
                  splits: Sequence[str] | None = None, prompt_column: str = "annotated_prompt",
                  path_column: str = "path", labels_column: str | None = "chexpert_labels",
                  fallback_section: str = "impression", dedupe_prompts: bool = True,
                  pool_splits: Sequence[str] = (), frame: pd.DataFrame | None = None,
                  **load_kwargs: Any) -> pd.DataFrame:
    """MIMIC-CXR prompts with the 14 CheXpert labels, in the experiment's metadata convention (``paper``).

    Studies come from :func:`radaudit.data.mimic_cxr.load` (``folder``, ``load_kwargs``; or an already
    loaded ``frame``). Two caption sources:

    * ``annotations_csv`` given (the LLaVA-Rad annotations the paper uses, §2.1; CheXGenBench ships
      them as ``MIMIC_Splits/LLAVARAD_ANNOTATIONS_{TRAIN,TEST}.csv``; one file or a list of files, read
      in order): one row per image; the caption
      is ``prompt_column`` (the authors' scripts read ``annotated_prompt``), the image ``path_column``
      (``path``: ``files/p10/p10000032/s50414267/<dicom>.jpg``, relative to the MIMIC-CXR-JPG root),
      and the labels ``labels_column`` (``chexpert_labels``: a dict string {observation: 1.0/0.0/-1.0/nan},
      positive = 1.0, as the authors' conditional FID reads it). The study and subject are parsed from
      the path (or read from ``study_id``/``subject_id`` columns when present) and joined to the
      loader's rows for ``split``, ``view`` and — when ``labels_column`` is None or absent — labels.
    * otherwise the caption is the report's ``fallback_section`` (default ``impression``; studies
      without it are left out and counted in ``attrs["n_no_caption"]``), labels from the loader.

    ``dedupe_prompts`` keeps the first row of each caption, as the authors' generation and FID scripts
    do (``drop_duplicates(subset=['annotated_prompt'])``). ``splits`` keeps those splits
    (``train``/``valid``/``test``). ``pool_splits`` (MIMIC names, ``validate`` = ``valid``): studies of
    these splits that the annotations do not cover are added from the MIMIC-CXR metadata (labels and view
    from the loader, caption = ``fallback_section`` or empty, never deduplicated): the images of the
    held-out real generator, which draws by labels and view, not by caption (CheXGenBench's LLaVA-Rad
    files cover train and test only). Columns: ``prompt, labels, seed`` (``<NA>``), ``image_path``
    (absolute if the JPG exists), ``patient_id, study_id, split, view``, the report's ``findings`` and
    ``impression`` (the references of Table 5) and the ``chexpert_<name>`` columns of the loader.
    """
    if frame is None:
        if folder is None:
            raise ParamsError("mimic_prompts needs the MIMIC-CXR-JPG folder (folder=...) or a loaded frame (frame=...).")
        frame = load_mimic(Path(folder), **load_kwargs)
    studies = frame.copy()
    studies["study_id"] = studies["study_id"].astype(str)
    if annotations_csv is not None:
        out, n_no_caption, n_unmatched, source = _annotation_prompts(studies, annotations_csv, folder, load_kwargs,
                                                                     prompt_column, path_column, labels_column)
    else:
        out, n_no_caption, n_unmatched, source = _report_prompts(studies, fallback_section)
    if splits is not None:
        wanted = {"valid" if s == "validate" else s for s in ([splits] if isinstance(splits, str) else splits)}
        out = out[out["split"].isin(wanted)]
    n_before = len(out)
    if dedupe_prompts:
        out = out.drop_duplicates("prompt", keep="first")
    n_duplicates = n_before - len(out)
    n_pool = 0
    if pool_splits and annotations_csv is not None:
        pool = _pool_rows(studies, pool_splits, set(out["study_id"].astype(str)), fallback_section)
        n_pool = len(pool)
        out = pd.concat([out, pool[[c for c in out.columns if c in pool.columns]]], ignore_index=True)
    out = out.reset_index(drop=True)
    out.insert(2, "seed", pd.array([pd.NA] * len(out), dtype="Int64"))
    out.attrs.update({"caption_source": source, "n_no_caption": n_no_caption, "n_unmatched": n_unmatched,
                      "n_duplicate_prompts": n_duplicates, "n_pool_rows": n_pool,
                      "label_names": list(CHEXPERT_LABELS)})
    return out


def _read_annotation_files(annotations_csv: str | os.PathLike | Sequence[str | os.PathLike], prompt_column: str,
                           path_column: str) -> tuple[pd.DataFrame, list[tuple[str, int]], Path]:
    """The LLaVA-Rad annotation file(s), read in order and concatenated: ``(rows, (file name, CSV line) per row,
    the path that names them in ``caption_source``)``."""
    files = [annotations_csv] if isinstance(annotations_csv, (str, os.PathLike)) else list(annotations_csv)
    if not files:
        raise ParamsError("annotations_csv is an empty list; give the LLaVA-Rad annotation file(s).")
    parts, where = [], []
    for f in files:
        part = _read_annotations(Path(f), prompt_column, path_column)
        parts.append(part)
        where += [(Path(f).name, i + 2) for i in range(len(part))]
    ann = pd.concat(parts, ignore_index=True)
    ann_path = Path(files[0]) if len(files) == 1 else Path("+".join(Path(f).name for f in files))
    return ann, where, ann_path


def _study_and_subject(ann: pd.DataFrame, rel: pd.Series, where: Sequence[tuple[str, int]],
                       path_column: str) -> tuple[pd.Series, pd.Series]:
    """Each annotation row's study and subject id: from ``study_id``/``subject_id`` columns when present, else
    parsed from the image path (``s<digits>``/``p<digits>`` folders); a row without a study is an error."""
    if "study_id" in ann.columns:
        study = ann["study_id"].str.strip().str.lstrip("s")
    else:
        study = rel.map(lambda s: (m.group(1) if (m := _STUDY_RE.search(s)) else ""))
    if "subject_id" in ann.columns:
        subject = ann["subject_id"].str.strip().str.lstrip("p")
    else:
        subject = rel.map(lambda s: (m.group(1) if (m := _SUBJECT_RE.search(s)) else ""))
    bad = [i for i, s in enumerate(study) if not s]
    if bad:
        name = where[bad[0]][0]
        rows = [where[i][1] for i in bad if where[i][0] == name]
        raise DataFormatError(f"{name}: cannot find the study id (an 's<digits>' folder) in column "
                              f"{path_column!r} in row(s) {format_rows(rows)}; add a study_id column.")
    return study, subject


def _annotation_prompts(studies: pd.DataFrame, annotations_csv: str | os.PathLike | Sequence[str | os.PathLike],
                        folder: str | os.PathLike | None, load_kwargs: Mapping[str, Any], prompt_column: str,
                        path_column: str, labels_column: str | None) -> tuple[pd.DataFrame, int, int, str]:
    """:func:`mimic_prompts` from LLaVA-Rad annotations: one row per annotated image, joined to the loader's
    studies; ``(rows, n_no_caption, n_unmatched, caption_source)``."""
    ann, where, ann_path = _read_annotation_files(annotations_csv, prompt_column, path_column)
    rel = ann[path_column].str.replace("\\", "/", regex=False)
    study, subject = _study_and_subject(ann, rel, where, path_column)
    by_study = studies.set_index("study_id")
    root = Path(folder) if folder is not None else None
    images_dir = Path(load_kwargs["images_dir"]) if load_kwargs.get("images_dir") else (
        root / "files" if root is not None else None)
    use_csv_labels = labels_column is not None and labels_column in ann.columns
    rows = []
    for i, (s, subj, r, prompt) in enumerate(zip(study, subject, rel, ann[prompt_column])):
        info = by_study.loc[s] if s in by_study.index else None
        r_clean = r[len("files/"):] if r.startswith("files/") else r
        path: Any = r
        if images_dir is not None and (images_dir / r_clean).is_file():
            path = str((images_dir / r_clean).resolve())
        if use_csv_labels:
            labs = _labels_from_cell(ann[labels_column].iloc[i], CHEXPERT_LABELS,
                                     f" in {where[i][0]} row {where[i][1]}")
        else:
            labs = [] if info is None or is_missing(info["labels"]) else list(info["labels"])
        rows.append({
            "prompt": " ".join(str(prompt).split()), "labels": labs, "image_path": path,
            "patient_id": subj or (None if info is None else info["patient_id"]), "study_id": s,
            "split": pd.NA if info is None else info["split"], "view": pd.NA if info is None else info["view"],
            **({c: (pd.NA if info is None else info[c]) for c in by_study.columns
                if c.startswith("chexpert_") or c in _REPORT_COLUMNS}),
        })
    out = pd.DataFrame(rows)
    n_no_caption = int((out["prompt"] == "").sum())
    out = out[out["prompt"] != ""]
    n_unmatched = int(out["split"].isna().sum())
    if n_unmatched:
        log.warning("mimic_prompts: %d annotation rows have no study in the MIMIC-CXR metadata (split/view <NA>)",
                    n_unmatched)
    source = f"annotations:{ann_path.name}:{prompt_column}"
    return out, n_no_caption, n_unmatched, source


def _report_prompts(studies: pd.DataFrame, fallback_section: str) -> tuple[pd.DataFrame, int, int, str]:
    """:func:`mimic_prompts` without annotations: the caption is each study's ``fallback_section``;
    ``(rows, n_no_caption, n_unmatched, caption_source)``."""
    if fallback_section not in studies.columns:
        raise ParamsError(f"fallback_section={fallback_section!r} is not a column of the MIMIC-CXR frame; use "
                          "'impression' or 'findings'.")
    text = studies[fallback_section]
    has = text.map(lambda t: not is_missing(t) and bool(str(t).strip()))
    n_no_caption = int((~has).sum())
    if n_no_caption:
        log.warning("mimic_prompts: %d of %d studies have no %s and are left out", n_no_caption, len(studies),
                    fallback_section)
    st = studies[has]
    out = pd.DataFrame({
        "prompt": [" ".join(str(t).split()) for t in st[fallback_section]],
        "labels": [[] if is_missing(v) else list(v) for v in st["labels"]],
        "image_path": st["image_path"].to_numpy(), "patient_id": st["patient_id"].astype(str).to_numpy(),
        "study_id": st["study_id"].to_numpy(), "split": st["split"].to_numpy(), "view": st["view"].to_numpy(),
        **{c: st[c].to_numpy() for c in st.columns if c.startswith("chexpert_") or c in _REPORT_COLUMNS},
    })
    n_unmatched = 0
    source = f"report:{fallback_section}"
    return out, n_no_caption, n_unmatched, source


def _read_annotations(path: Path, prompt_column: str, path_column: str) -> pd.DataFrame:
    """One LLaVA-Rad annotation CSV (every column as text), with the two columns :func:`mimic_prompts` needs."""
    if not path.is_file():
        raise DatasetNotFoundError(f"LLaVA-Rad annotations file {str(path)!r} does not exist (CheXGenBench "
                                   "MIMIC_Splits/llavarad_annotations.zip → LLAVARAD_ANNOTATIONS_TRAIN/TEST.csv).")
    try:
        ann = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, OSError) as err:
        raise DataFormatError(f"Cannot read {str(path)!r} as a CSV ({err}).") from err
    need = [c for c in (prompt_column, path_column) if c not in ann.columns]
    if need:
        raise DataFormatError(f"{path.name} lacks column(s) {need} (found {list(ann.columns)}); pass "
                              "prompt_column=/path_column= with the names your file uses.")
    return ann


def _pool_rows(studies: pd.DataFrame, pool_splits: Sequence[str], have: set[str], section: str) -> pd.DataFrame:
    """The loader's studies of ``pool_splits`` (MIMIC names; ``validate`` = the loader's ``valid``) not in
    ``have``, as image-pool rows: labels and view from the MIMIC-CXR files, caption = ``section`` or empty."""
    wanted = {"valid" if s == "validate" else s for s in ([pool_splits] if isinstance(pool_splits, str) else pool_splits)}
    st = studies[studies["split"].isin(wanted) & ~studies["study_id"].astype(str).isin(have)]
    text = st[section] if section in st.columns else pd.Series(pd.NA, index=st.index)
    return pd.DataFrame({
        "prompt": ["" if is_missing(t) else " ".join(str(t).split()) for t in text],
        "labels": [[] if is_missing(v) else list(v) for v in st["labels"]],
        "image_path": st["image_path"].to_numpy(), "patient_id": st["patient_id"].astype(str).to_numpy(),
        "study_id": st["study_id"].astype(str).to_numpy(), "split": st["split"].to_numpy(),
        "view": st["view"].to_numpy(),
        **{c: st[c].to_numpy() for c in st.columns if c.startswith("chexpert_") or c in _REPORT_COLUMNS},
    })
