"""Image sets on disk and in memory: the lab's image convention, shared by every experiment that reads images.

An image set is a float32 numpy array ``[N, H, W]`` in [0, 1] (grayscale) plus a DataFrame of
per-image metadata with columns ``prompt`` (str), ``labels`` (list of label names), ``seed`` (int or
``<NA>``), ``image_path`` (str or ``<NA>``) and, for real images, ``patient_id`` and ``study_id``.

* :func:`load_images` / :func:`iter_images`: images decoded one at a time, resized by a named policy,
  optionally cached on disk.
* :func:`read_synthetic_set` / :func:`write_synthetic_set`: a folder of images plus a ``metadata.csv``
  (``prompt, image_path, labels, seed``), as users bring their generations.
* :func:`parse_labels` / :func:`format_labels`: the labels cell of such a CSV.
* :func:`frame_fingerprint`: the identity of an image set for content-addressed caches.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.paths import atomic_dir, file_sha256

log = logging.getLogger(__name__)


#: Columns of a synthetic set's ``metadata.csv`` (and of every image set's metadata frame).
META_COLUMNS: tuple[str, ...] = ("prompt", "image_path", "labels", "seed")
RESIZE_POLICIES: tuple[str, ...] = ("center_crop", "pad", "squash")

_METADATA_FILE = "metadata.csv"


# --- labels ------------------------------------------------------------------------------------------

def is_missing(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, float) and math.isnan(v))
    except TypeError:
        return False


#: Cells that spell a missing value: never read as a label name (a CSV written from a frame with NaN).
MISSING_TOKENS = frozenset({"nan", "none", "null", "na", "n/a", "<na>"})


def parse_labels(value: Any, *, where: str = "") -> list[str]:
    """A labels cell → list of names: a list/tuple/array as is, a JSON list string (``'["A", "B"]'``),
    or a ``"A|B"`` string; blank or missing (``None``/NaN) → ``[]`` (no label). A string that spells a
    missing value (``"NaN"``, ``"None"``, ``"null"``, ``"NA"``, ``"N/A"``, ``"<NA>"``: :data:`MISSING_TOKENS`)
    raises :class:`DataFormatError` rather than becoming a label of that name; so does anything else
    that is not a list or a string."""
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    elif is_missing(value):
        return []
    elif isinstance(value, str):
        s = value.strip()
        if not s:
            return []
        if s.lower() in MISSING_TOKENS:
            raise DataFormatError(f"labels{where}: {value!r} reads as a missing value, not a label name. Leave the "
                                  "cell blank for an image with no label, or write the label names ('A|B').")
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
    if p.stat().st_size == 0:
        raise DataFormatError(f"Image file {str(p)!r} is empty (0 bytes): write or download it again, or remove it "
                              "(and its metadata row) from the set.")
    try:
        with Image.open(p) as im:
            im.load()
            g = _to_gray(im)
    except (UnidentifiedImageError, OSError) as err:
        raise DataFormatError(f"Cannot read {str(p)!r} as an image ({err}): the file is corrupt, truncated or not an "
                              "image; write or download it again, or remove it (and its metadata row) from the "
                              "set.") from err
    g = _square(g, policy)
    if g.size != (size, size):
        g = g.resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(g, dtype=np.float32) / 255.0


def _paths_list(paths: Any) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        raise ParamsError("Pass a list of image paths, not a single path: wrap it in [ ].")
    out = list(paths)
    bad = [i for i, p in enumerate(out) if is_missing(p) or not isinstance(p, (str, os.PathLike))]
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
        values = [None if is_missing(v) else (list(v) if isinstance(v, (list, tuple, np.ndarray)) else v) for v in row]
        h.update(json.dumps(values, default=str, ensure_ascii=False).encode())
    if image_column is not None and image_column in frame.columns:
        for p in frame[image_column]:
            if is_missing(p):
                h.update(b"<NA>")
                continue
            h.update(bytes.fromhex(file_sha256(p, DatasetNotFoundError)))
    return h.hexdigest()[:16]


# --- bring-your-own synthetic set ---------------------------------------------------------------------

def format_rows(rows: Sequence[int], n: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:n])
    return shown + (f" and {len(rows) - n} more" if len(rows) > n else "")


def read_synthetic_set(metadata_csv: str | os.PathLike, images_root: str | os.PathLike | None = None,
                       label_names: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a user's synthetic set: ``metadata.csv`` with columns ``prompt, image_path, labels, seed``.

    * ``prompt``: the text the image was generated from (non-blank).
    * ``image_path``: relative to ``images_root`` (default: the CSV's folder), or absolute; the file
      must exist and not be empty (any format PIL reads; :func:`load_images` converts to grayscale and
      raises :class:`DataFormatError` naming a corrupt file).
    * ``labels``: ``"A|B"`` or a JSON list (``["A", "B"]``); blank = no label; ``NaN``/``None``/``NA``
      spelled out is an error (:func:`parse_labels`). With ``label_names``, every label must be one of them.
    * ``seed``: an integer, or blank when unknown.

    Extra columns are kept. Returns the metadata (``image_path`` absolute, ``labels`` lists, ``seed``
    ``Int64``); rows are numbered as in a spreadsheet (header = row 1) in error messages, which name
    the column and the rows at fault.
    """
    csv = Path(metadata_csv)
    if not csv.is_file():
        raise DatasetNotFoundError(f"Synthetic-set metadata file {str(csv)!r} does not exist. Expected a CSV with "
                                   f"columns {', '.join(META_COLUMNS)} (write one with write_synthetic_set).")
    if csv.stat().st_size == 0:
        raise DataFormatError(f"{str(csv)!r} is empty (0 bytes). Expected a CSV with a header line "
                              f"{','.join(META_COLUMNS)} and one row per image (write one with write_synthetic_set).")
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
        raise DataFormatError(f"{csv.name}: column 'prompt' is blank in row(s) {format_rows(blank)}.")

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
                              f"{format_rows(bad_seed)} (e.g. {meta['seed'].iloc[bad_seed[0] - 2]!r}).")

    paths, absent, empty, zero = [], [], [], []
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
        elif p.stat().st_size == 0:
            zero.append((r, str(p)))
        paths.append(str(p.resolve()))
    if empty:
        raise DataFormatError(f"{csv.name}: column 'image_path' is blank in row(s) {format_rows(empty)}.")
    if absent:
        raise DatasetNotFoundError(f"{csv.name}: column 'image_path' names missing file(s) in row(s) "
                                   f"{format_rows([r for r, _ in absent])}, e.g. {absent[0][1]!r}; paths are relative "
                                   f"to {str(root)!r} (images_root).")
    if zero:
        raise DataFormatError(f"{csv.name}: column 'image_path' names empty (0-byte) file(s) in row(s) "
                              f"{format_rows([r for r, _ in zero])}, e.g. {zero[0][1]!r}: write those images again, "
                              "or remove their rows.")

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
