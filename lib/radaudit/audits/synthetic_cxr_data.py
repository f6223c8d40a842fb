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

import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.paths import file_sha256

__all__ = [
    "DEMO_LABELS", "FRONTAL_VIEWS", "LABEL_GROUPS", "META_COLUMNS", "RESIZE_POLICIES", "SPLITS",
    "demo_frame", "format_labels", "frame_fingerprint", "group_findings", "iter_images", "load_images",
    "mimic_prompts", "parse_labels", "read_synthetic_set", "split_by_patient", "write_synthetic_set",
]

log = logging.getLogger(__name__)

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

#: Frontal views (the default ``views`` of :func:`demo_frame`).
FRONTAL_VIEWS: tuple[str, ...] = ("PA", "AP", "AP SUPINE")
SPLITS: tuple[str, ...] = ("train", "test", "holdout")
#: Columns of a synthetic set's ``metadata.csv`` (and of every image set's metadata frame).
META_COLUMNS: tuple[str, ...] = ("prompt", "image_path", "labels", "seed")
RESIZE_POLICIES: tuple[str, ...] = ("center_crop", "pad", "squash")

_METADATA_FILE = "metadata.csv"


# --- labels ------------------------------------------------------------------------------------------

def _is_missing(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, float) and math.isnan(v))
    except TypeError:
        return False


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
                                  f"'<group>'}} (the default mapping is synthetic_cxr_data.LABEL_GROUPS).")
        out.add(hit)
    rank = {g: i for i, g in enumerate(DEMO_LABELS if order is None else order)}
    return sorted(out, key=lambda g: (rank.get(g, len(rank)), g))


def parse_labels(value: Any, *, where: str = "") -> list[str]:
    """A labels cell → list of names: a list/tuple/array as is, a JSON list string (``'["A", "B"]'``),
    or a ``"A|B"`` string; blank or missing → ``[]``. Anything else raises :class:`DataFormatError`."""
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    elif _is_missing(value):
        return []
    elif isinstance(value, str):
        s = value.strip()
        if not s:
            return []
        if s.startswith("["):
            try:
                items = json.loads(s)
            except ValueError as err:
                raise DataFormatError(f"labels{where}: {value!r} starts with '[' but is not a JSON list ({err}). "
                                      "Write labels as a JSON list of strings or as 'A|B'.") from err
            if not isinstance(items, list):
                raise DataFormatError(f"labels{where}: {value!r} is not a JSON list.")
        else:
            items = s.split("|")
    else:
        raise DataFormatError(f"labels{where}: expected a list or a string ('A|B' or a JSON list), got "
                              f"{type(value).__name__} {value!r}.")
    bad = [x for x in items if not isinstance(x, str)]
    if bad:
        raise DataFormatError(f"labels{where}: label names must be strings, got {bad[:3]!r}.")
    return [x.strip() for x in items if x.strip()]


def format_labels(labels: Sequence[str]) -> str:
    """List of names → the CSV cell: ``"A|B"``, or a JSON list when a name contains ``|`` or starts with ``[``."""
    labels = [str(x) for x in labels]
    if any("|" in x or x.strip().startswith("[") or x != x.strip() for x in labels):
        return json.dumps(labels, ensure_ascii=False)
    return "|".join(labels)


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
            for g in ([] if _is_missing(labs) else list(labs)):
                freq[g] = freq.get(g, 0) + 1
        stratum: dict[str, str] = {}
        for p, labs in zip(pid, frame[stratify]):
            gs = [] if _is_missing(labs) else list(labs)
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
    fields = {k: ("" if _is_missing(v) else v) for k, v in row.items() if isinstance(k, str)}
    fields["labels"] = ", ".join(row["labels"]) if row["labels"] else "No label"
    try:
        return " ".join(template.format(**fields).split())
    except (KeyError, IndexError, ValueError) as err:
        raise ParamsError(f"prompt_template {template!r} cannot be filled ({err!r}); it may use the fields "
                          f"{sorted(fields)}.") from None


def demo_frame(data_root: str | os.PathLike | None = None, *, seed: int = 0,
               fractions: Sequence[float] = (0.6, 0.2, 0.2), label_groups: Mapping[str, str] | None = None,
               prompt_template: str = "{view} chest X-ray: {labels}",
               views: Sequence[str] | None = FRONTAL_VIEWS) -> pd.DataFrame:
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

    ``df.attrs`` records the counts left out (unlabelled, other views) and the split sizes.
    """
    from radaudit.data import load_dataset

    fr = _check_fractions(fractions)
    raw = load_dataset("covid_cxr", data_root)
    n_all = len(raw)
    labelled = raw[raw["labels"].map(lambda v: not _is_missing(v) and len(v) > 0)]
    n_unlabelled = n_all - len(labelled)
    if views is not None:
        if isinstance(views, str):
            views = [views]
        wanted = {str(v).strip().upper() for v in views}
        keep = labelled["view"].map(lambda v: (not _is_missing(v)) and str(v).upper() in wanted).astype(bool)
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


# --- images ------------------------------------------------------------------------------------------

def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or int(size) < 4:
        raise ParamsError(f"size must be an integer >= 4 (pixels per side), got {size!r}.")
    return int(size)


def _to_gray(im: Any) -> Any:
    """8-bit grayscale: RGB(A)/palette → ``L`` (PIL's ITU-R 601 luma, alpha dropped); 16-bit/float
    images (``I;16``, ``I``, ``F``) min–max scaled per image to 0..255 (12-bit X-rays would otherwise be dark)."""
    from PIL import Image

    if im.mode == "L":
        return im
    if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        a = np.asarray(im, dtype=np.float64)
        lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
        a = np.zeros_like(a) if hi <= lo else (a - lo) / (hi - lo) * 255.0
        return Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8))
    return im.convert("L")  # RGB(A), LA, P, 1, CMYK: PIL drops alpha and uses L = 0.299 R + 0.587 G + 0.114 B


def _square(im: Any, policy: str) -> Any:
    from PIL import Image

    w, h = im.size
    if policy == "center_crop" and w != h:
        s = min(w, h)
        left, top = (w - s) // 2, (h - s) // 2
        return im.crop((left, top, left + s, top + s))
    if policy == "pad" and w != h:
        s = max(w, h)
        canvas = Image.new("L", (s, s), 0)
        canvas.paste(im, ((s - w) // 2, (s - h) // 2))
        return canvas
    return im  # squash: the resize does it


def _read_one(path: str, size: int, policy: str) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise DatasetNotFoundError(f"Image file {str(p)!r} does not exist; check the data root or the metadata file.")
    try:
        with Image.open(p) as im:
            im.load()
            g = _to_gray(im)
    except (UnidentifiedImageError, OSError) as err:
        raise DataFormatError(f"Cannot read {str(p)!r} as an image ({err}).") from err
    g = _square(g, policy)
    if g.size != (size, size):
        g = g.resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(g, dtype=np.float32) / 255.0


def _paths_list(paths: Any) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        raise ParamsError("Pass a list of image paths, not a single path: wrap it in [ ].")
    out = list(paths)
    bad = [i for i, p in enumerate(out) if _is_missing(p) or not isinstance(p, (str, os.PathLike))]
    if bad:
        raise ParamsError(f"Image paths must be strings; missing or invalid at position(s) {bad[:10]}.")
    return [str(p) for p in out]


def iter_images(paths: Sequence[str | os.PathLike], size: int = 64, *, batch_size: int = 64,
                resize: str = "center_crop") -> Iterator[np.ndarray]:
    """Yield float32 ``[b, size, size]`` batches (b ≤ ``batch_size``) of :func:`load_images`, in order:
    memory is one batch, whatever the number of paths."""
    size = _check_size(size)
    if resize not in RESIZE_POLICIES:
        raise ParamsError(f"resize={resize!r} is not one of {RESIZE_POLICIES}.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
    ps = _paths_list(paths)
    for start in range(0, len(ps), int(batch_size)):
        chunk = ps[start:start + int(batch_size)]
        out = np.empty((len(chunk), size, size), dtype=np.float32)
        for i, p in enumerate(chunk):
            out[i] = _read_one(p, size, resize)
        yield out


def _images_cache_key(paths: list[str], size: int, resize: str) -> str:
    h = hashlib.sha256(json.dumps({"v": 1, "size": size, "resize": resize}).encode())
    for p in paths:
        try:
            st = os.stat(p)
            h.update(f"{os.path.abspath(p)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{p}|missing\n".encode())
    return h.hexdigest()[:24]


def load_images(paths: Sequence[str | os.PathLike], size: int = 64, *, batch_size: int = 64,
                resize: str = "center_crop", cache_dir: str | os.PathLike | None = None) -> np.ndarray:
    """Images as float32 ``[N, size, size]`` in [0, 1] (grayscale), in the order of ``paths``.

    Per image: decode with PIL → 8-bit grayscale (RGB by ITU-R 601 luma; 16-bit min–max scaled) →
    make square by ``resize``: ``"center_crop"`` (default: the central square of side min(W, H); the
    paper generates square images and chest X-rays are close to square, so little anatomy is lost),
    ``"pad"`` (black borders to max(W, H)) or ``"squash"`` (no crop; the authors' FID script's
    ``Resize((299, 299))`` squashes) → PIL bicubic resize to ``size`` (antialiased when shrinking;
    skipped when already that size, so a written 8-bit PNG reads back exactly) → ``/ 255``.

    Images are decoded one at a time into the output (memory: the output plus one decoded image;
    :func:`iter_images` bounds it by a batch). ``cache_dir``: keep the array as
    ``<cache_dir>/images/<key>.npy``, keyed by the paths, their sizes and modification times,
    ``size`` and ``resize`` (written atomically; a changed file misses).
    """
    size = _check_size(size)
    ps = _paths_list(paths)
    if resize not in RESIZE_POLICIES:
        raise ParamsError(f"resize={resize!r} is not one of {RESIZE_POLICIES}.")
    target = None
    if cache_dir is not None:
        target = Path(cache_dir) / "images" / f"{_images_cache_key(ps, size, resize)}.npy"
        if target.is_file():
            try:
                arr = np.load(target, allow_pickle=False)
                if arr.shape == (len(ps), size, size) and arr.dtype == np.float32:
                    return arr
            except (OSError, ValueError):
                log.warning("load_images: unreadable cache file %s; decoding again", target)
    out = np.empty((len(ps), size, size), dtype=np.float32)
    start = 0
    for batch in iter_images(ps, size, batch_size=batch_size, resize=resize):
        out[start:start + len(batch)] = batch
        start += len(batch)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, out, allow_pickle=False)
        os.replace(tmp, target)
    return out


def frame_fingerprint(frame: pd.DataFrame, columns: Sequence[str] = ("study_id", "patient_id", "split", "prompt",
                                                                       "labels", "view"),
                      *, image_column: str | None = "image_path") -> str:
    """SHA-256 (16 hex) of ``frame``'s ``columns`` (those present), row by row, and of the bytes of each
    image file in ``image_column``: the identity of a data set for content-addressed caches (a moved
    copy of the same files gives the same fingerprint; an edited image or a changed split does not)."""
    h = hashlib.sha256()
    cols = [c for c in columns if c in frame.columns]
    h.update(json.dumps(cols).encode())
    for row in frame[cols].itertuples(index=False):
        values = [None if _is_missing(v) else (list(v) if isinstance(v, (list, tuple, np.ndarray)) else v) for v in row]
        h.update(json.dumps(values, default=str, ensure_ascii=False).encode())
    if image_column is not None and image_column in frame.columns:
        for p in frame[image_column]:
            if _is_missing(p):
                h.update(b"<NA>")
                continue
            h.update(bytes.fromhex(file_sha256(p, DatasetNotFoundError)))
    return h.hexdigest()[:16]


# --- bring-your-own synthetic set ---------------------------------------------------------------------

def _rows_text(rows: Sequence[int], n: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:n])
    return shown + (f" and {len(rows) - n} more" if len(rows) > n else "")


def read_synthetic_set(metadata_csv: str | os.PathLike, images_root: str | os.PathLike | None = None,
                       label_names: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a user's synthetic set: ``metadata.csv`` with columns ``prompt, image_path, labels, seed``.

    * ``prompt``: the text the image was generated from (non-blank).
    * ``image_path``: relative to ``images_root`` (default: the CSV's folder), or absolute; the file
      must exist (any format PIL reads; :func:`load_images` converts to grayscale).
    * ``labels``: ``"A|B"`` or a JSON list (``["A", "B"]``); blank = no label. With ``label_names``,
      every label must be one of them.
    * ``seed``: an integer, or blank when unknown.

    Extra columns are kept. Returns the metadata (``image_path`` absolute, ``labels`` lists, ``seed``
    ``Int64``); rows are numbered as in a spreadsheet (header = row 1) in error messages, which name
    the column and the rows at fault.
    """
    csv = Path(metadata_csv)
    if not csv.is_file():
        raise DatasetNotFoundError(f"Synthetic-set metadata file {str(csv)!r} does not exist. Expected a CSV with "
                                   f"columns {', '.join(META_COLUMNS)} (write one with write_synthetic_set).")
    try:
        meta = pd.read_csv(csv, dtype=str, keep_default_na=False)
    except (ValueError, OSError) as err:
        raise DataFormatError(f"Cannot read {str(csv)!r} as a CSV ({err}).") from err
    missing = [c for c in META_COLUMNS if c not in meta.columns]
    if missing:
        raise DataFormatError(f"{csv.name} lacks column(s) {missing}; required: {list(META_COLUMNS)}; found "
                              f"{list(meta.columns)}.")
    if meta.empty:
        raise DataFormatError(f"{csv} has no rows: a synthetic set needs at least one image.")
    root = Path(images_root) if images_root is not None else csv.parent
    rowno = [i + 2 for i in range(len(meta))]

    blank = [r for r, p in zip(rowno, meta["prompt"]) if not p.strip()]
    if blank:
        raise DataFormatError(f"{csv.name}: column 'prompt' is blank in row(s) {_rows_text(blank)}.")

    labels = []
    for r, v in zip(rowno, meta["labels"]):
        labels.append(parse_labels(v, where=f" in {csv.name} row {r}"))
    if label_names is not None:
        allowed = set(label_names)
        bad = [(r, [x for x in labs if x not in allowed]) for r, labs in zip(rowno, labels)]
        bad = [(r, u) for r, u in bad if u]
        if bad:
            raise DataFormatError(f"{csv.name}: column 'labels' has unknown label(s) {bad[0][1]} in row {bad[0][0]}"
                                  f"{f' (and {len(bad) - 1} more rows)' if len(bad) > 1 else ''}; allowed: "
                                  f"{list(label_names)}.")

    seeds: list[Any] = []
    bad_seed = []
    for r, v in zip(rowno, meta["seed"]):
        s = v.strip()
        if not s:
            seeds.append(pd.NA)
        elif re.fullmatch(r"[+-]?\d+(\.0*)?", s):
            seeds.append(int(float(s)) if "." in s else int(s))
        else:
            bad_seed.append(r)
    if bad_seed:
        raise DataFormatError(f"{csv.name}: column 'seed' must be an integer or blank; not in row(s) "
                              f"{_rows_text(bad_seed)} (e.g. {meta['seed'].iloc[bad_seed[0] - 2]!r}).")

    paths, absent, empty = [], [], []
    for r, v in zip(rowno, meta["image_path"]):
        s = v.strip()
        if not s:
            empty.append(r)
            paths.append(pd.NA)
            continue
        p = Path(s).expanduser()
        p = p if p.is_absolute() else root / p
        if not p.is_file():
            absent.append((r, str(p)))
        paths.append(str(p.resolve()))
    if empty:
        raise DataFormatError(f"{csv.name}: column 'image_path' is blank in row(s) {_rows_text(empty)}.")
    if absent:
        raise DatasetNotFoundError(f"{csv.name}: column 'image_path' names missing file(s) in row(s) "
                                   f"{_rows_text([r for r, _ in absent])}, e.g. {absent[0][1]!r}; paths are relative "
                                   f"to {str(root)!r} (images_root).")

    out = meta.copy()
    out["prompt"] = meta["prompt"].astype(str)
    out["image_path"] = paths
    out["labels"] = labels
    out["seed"] = pd.array(seeds, dtype="Int64")
    out.attrs["metadata_csv"] = str(csv.resolve())
    out.attrs["images_root"] = str(root.resolve())
    return out


def write_synthetic_set(folder: str | os.PathLike, images: np.ndarray, meta: pd.DataFrame, *,
                        image_dir: str = "images") -> Path:
    """Write ``images`` (float ``[N, H, W]`` in [0, 1]) as 8-bit grayscale PNGs (``round(x·255)``) under
    ``folder/image_dir/00000.png``... and ``folder/metadata.csv`` in :func:`read_synthetic_set`'s format
    (``prompt, image_path`` relative to ``folder``, ``labels`` as ``"A|B"`` — a JSON list when a name
    contains ``|`` —, ``seed``, then ``meta``'s other columns, list values as JSON). The folder is
    written all at once (it must be absent or empty). Returns the metadata path."""
    from PIL import Image

    from radaudit.paths import atomic_dir

    arr = np.asarray(images)
    if arr.ndim != 3:
        raise DataFormatError(f"images must be [N, H, W] (grayscale), got shape {arr.shape}.")
    if not isinstance(meta, pd.DataFrame):
        raise ParamsError(f"meta must be a DataFrame, got {type(meta).__name__}.")
    if len(meta) != len(arr):
        raise DataFormatError(f"meta has {len(meta)} rows but there are {len(arr)} images.")
    missing = [c for c in ("prompt", "labels") if c not in meta.columns]
    if missing:
        raise DataFormatError(f"meta lacks column(s) {missing}; it needs at least prompt and labels (seed optional).")
    if not np.isfinite(arr).all():
        raise DataFormatError("images contain NaN or infinite values.")
    if arr.size and (arr.min() < -1e-6 or arr.max() > 1 + 1e-6):
        raise DataFormatError(f"images must be in [0, 1]; got values in [{arr.min():.3g}, {arr.max():.3g}].")
    out_dir = Path(folder)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ParamsError(f"{str(out_dir)!r} exists and is not empty; choose a new folder for the synthetic set.")
    width = max(5, len(str(len(arr))))
    rel = [f"{image_dir}/{i:0{width}d}.png" for i in range(len(arr))]
    rows = pd.DataFrame({
        "prompt": meta["prompt"].astype(str).to_numpy(),
        "image_path": rel,
        "labels": [format_labels(parse_labels(v)) for v in meta["labels"]],
        "seed": (pd.array(meta["seed"], dtype="Int64") if "seed" in meta.columns
                 else pd.array([pd.NA] * len(arr), dtype="Int64")),
    })
    for c in meta.columns:
        if c in META_COLUMNS:
            continue
        rows[c] = [json.dumps(list(v), default=str) if isinstance(v, (list, tuple, np.ndarray)) else v
                   for v in meta[c]]
    with atomic_dir(out_dir) as tmp:
        (tmp / image_dir).mkdir(parents=True)
        u8 = np.clip(np.rint(arr * 255.0), 0, 255).astype(np.uint8)
        for r, img in zip(rel, u8):
            Image.fromarray(img, mode="L").save(tmp / r)
        rows.to_csv(tmp / _METADATA_FILE, index=False)
    return out_dir / _METADATA_FILE


# --- paper preset: MIMIC-CXR prompts -----------------------------------------------------------------

_STUDY_RE = re.compile(r"(?:^|/)s(\d+)(?:/|$)")
_SUBJECT_RE = re.compile(r"(?:^|/)p(\d{3,})(?:/|$)")


def _labels_from_cell(cell: Any, names: Sequence[str], where: str) -> list[str]:
    """CheXGenBench's ``chexpert_labels`` cell: a Python/JSON dict {observation: 1.0/0.0/-1.0/NaN}
    (the authors read it with ``ast.literal_eval``), or a list of positive names → positive names."""
    import ast

    if _is_missing(cell) or (isinstance(cell, str) and not cell.strip()):
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


def mimic_prompts(folder: str | os.PathLike | None = None, *, annotations_csv: str | os.PathLike | None = None,
                  splits: Sequence[str] | None = None, prompt_column: str = "annotated_prompt",
                  path_column: str = "path", labels_column: str | None = "chexpert_labels",
                  fallback_section: str = "impression", dedupe_prompts: bool = True,
                  frame: pd.DataFrame | None = None, **load_kwargs: Any) -> pd.DataFrame:
    """MIMIC-CXR prompts with the 14 CheXpert labels, in the experiment's metadata convention (``paper``).

    Studies come from :func:`radaudit.data.mimic_cxr.load` (``folder``, ``load_kwargs``; or an already
    loaded ``frame``). Two caption sources:

    * ``annotations_csv`` given (the LLaVA-Rad annotations the paper uses, §2.1; CheXGenBench ships
      them as ``MIMIC_Splits/LLAVARAD_ANNOTATIONS_{TRAIN,TEST}.csv``): one row per image; the caption
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
    (``train``/``valid``/``test``). Columns: ``prompt, labels, seed`` (``<NA>``), ``image_path``
    (absolute if the JPG exists), ``patient_id, study_id, split, view``, the report's ``findings`` and
    ``impression`` (the references of Table 5) and the ``chexpert_<name>`` columns of the loader.
    """
    from radaudit.data.mimic_cxr import CHEXPERT_LABELS
    from radaudit.data.mimic_cxr import load as load_mimic

    if frame is None:
        if folder is None:
            raise ParamsError("mimic_prompts needs the MIMIC-CXR-JPG folder (folder=...) or a loaded frame (frame=...).")
        frame = load_mimic(Path(folder), **load_kwargs)
    studies = frame.copy()
    studies["study_id"] = studies["study_id"].astype(str)
    if annotations_csv is not None:
        ann_path = Path(annotations_csv)
        if not ann_path.is_file():
            raise DatasetNotFoundError(f"LLaVA-Rad annotations file {str(ann_path)!r} does not exist (CheXGenBench "
                                       "MIMIC_Splits/llavarad_annotations.zip → LLAVARAD_ANNOTATIONS_TRAIN/TEST.csv).")
        try:
            ann = pd.read_csv(ann_path, dtype=str, keep_default_na=False)
        except (ValueError, OSError) as err:
            raise DataFormatError(f"Cannot read {str(ann_path)!r} as a CSV ({err}).") from err
        need = [c for c in (prompt_column, path_column) if c not in ann.columns]
        if need:
            raise DataFormatError(f"{ann_path.name} lacks column(s) {need} (found {list(ann.columns)}); pass "
                                  "prompt_column=/path_column= with the names your file uses.")
        rel = ann[path_column].str.replace("\\", "/", regex=False)
        if "study_id" in ann.columns:
            study = ann["study_id"].str.strip().str.lstrip("s")
        else:
            study = rel.map(lambda s: (m.group(1) if (m := _STUDY_RE.search(s)) else ""))
        if "subject_id" in ann.columns:
            subject = ann["subject_id"].str.strip().str.lstrip("p")
        else:
            subject = rel.map(lambda s: (m.group(1) if (m := _SUBJECT_RE.search(s)) else ""))
        bad = [i + 2 for i, s in enumerate(study) if not s]
        if bad:
            raise DataFormatError(f"{ann_path.name}: cannot find the study id (an 's<digits>' folder) in column "
                                  f"{path_column!r} in row(s) {_rows_text(bad)}; add a study_id column.")
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
                                         f" in {ann_path.name} row {i + 2}")
            else:
                labs = [] if info is None or _is_missing(info["labels"]) else list(info["labels"])
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
    else:
        if fallback_section not in studies.columns:
            raise ParamsError(f"fallback_section={fallback_section!r} is not a column of the MIMIC-CXR frame; use "
                              "'impression' or 'findings'.")
        text = studies[fallback_section]
        has = text.map(lambda t: not _is_missing(t) and bool(str(t).strip()))
        n_no_caption = int((~has).sum())
        if n_no_caption:
            log.warning("mimic_prompts: %d of %d studies have no %s and are left out", n_no_caption, len(studies),
                        fallback_section)
        st = studies[has]
        out = pd.DataFrame({
            "prompt": [" ".join(str(t).split()) for t in st[fallback_section]],
            "labels": [[] if _is_missing(v) else list(v) for v in st["labels"]],
            "image_path": st["image_path"].to_numpy(), "patient_id": st["patient_id"].astype(str).to_numpy(),
            "study_id": st["study_id"].to_numpy(), "split": st["split"].to_numpy(), "view": st["view"].to_numpy(),
            **{c: st[c].to_numpy() for c in st.columns if c.startswith("chexpert_") or c in _REPORT_COLUMNS},
        })
        n_unmatched = 0
        source = f"report:{fallback_section}"
    if splits is not None:
        wanted = {"valid" if s == "validate" else s for s in ([splits] if isinstance(splits, str) else splits)}
        out = out[out["split"].isin(wanted)]
    n_before = len(out)
    if dedupe_prompts:
        out = out.drop_duplicates("prompt", keep="first")
    out = out.reset_index(drop=True)
    out.insert(2, "seed", pd.array([pd.NA] * len(out), dtype="Int64"))
    out.attrs.update({"caption_source": source, "n_no_caption": n_no_caption, "n_unmatched": n_unmatched,
                      "n_duplicate_prompts": n_before - len(out), "label_names": list(CHEXPERT_LABELS)})
    return out
