"""Generators of synthetic chest X-rays for the benchmark, behind one registry and one signature.

CheXGenBench (``../shared/papers/004_175f666718a5c618.txt``) scores text-to-image models; a user may
also bring their own images (§2: "a user brings synthetic images plus a metadata file"). Every
generator here has the signature::

    generate(requests, *, context, **params) -> float32 [N, H, W] in [0, 1]

``requests``: a DataFrame with one row per image wanted — ``prompt`` (str), ``labels`` (list),
``seed`` (int: the image's own seed), optionally ``view`` and ``source_study_id`` (the real image the
prompt was taken from; the privacy audit compares the synthetic image with it, §2.3). ``context``: a
:class:`GenerationContext` (the real data frame with its split, the image size, caches).

Registered generators (:data:`GENERATORS`):

``diffusion``
    A text-to-image model: the project's demo model (``model="demo"``, trained on first use by
    :func:`radaudit.models.diffusion.demo_diffusion_path` on the ``train`` split) or any diffusers
    pipeline by hub id / local folder (``paper``). Same code path; only the params differ.
``memoriser``
    A reference generator whose verdict is known: it returns the training image the prompt came from
    (``source_study_id``; else a training image with the same labels and view, drawn by the request's
    seed) plus slight Gaussian noise (σ = ``sigma``, seeded per request). The privacy audit must flag it.
``degrader``
    Real training images (same labels/view as the prompt, drawn by the request's seed, never an image
    of the prompt's own patient — ``other_patient``, checked by the privacy audit as
    ``privacy_reference_overlap`` — so its privacy scores stay those of an unrelated image; without
    replacement over the request frame) blurred (Gaussian, ``blur_sigma`` pixels at the output size)
    and noised (``noise_sigma``). Fidelity must penalise it, and more at a higher dose (the
    dose-response study runs it at graded levels).
``heldout_real``
    Real images of the held-out split ``split`` — patients no generator trains on, disjoint from the
    test split the fidelity metrics compare with: ``holdout`` of the demo's patient split, MIMIC-CXR's
    ``validate`` for the paper (the experiment's ``heldout_split`` param) — with the same labels (and
    view, when possible) as the prompt, drawn by the request's seed **without replacement** (every
    held-out image once before any twice): the best a generator can do. Drawing with replacement
    repeated images (67 distinct of 107), which shrinks the feature covariance and inflates its FID.
``folder``
    A user's images + ``metadata.csv`` (:func:`radaudit.audits.synthetic_cxr.data.read_synthetic_set`),
    matched to the requests by ``(prompt, seed)``; ``requests=None`` takes the whole set.

Label matching (memoriser fallback, degrader, heldout_real): the candidates are the pool's images
with the same label set and view; if none, the same label set; if none, the highest label-set
Jaccard overlap (then same view first). The tier used is counted and logged — never silent.
Which real image each request gets is decided on the whole request frame (:func:`assign_sources`,
column :data:`SOURCE_COLUMN`) before generation is chunked, so "without replacement" holds across
chunks, and the returned requests say where every reference image came from.

:func:`generate_set` caches a generator's output on disk, keyed by everything that determines it
(generator, params, model identity, the real data's fingerprint, the requests, the image size), in
chunks written as they finish, so an interrupted run resumes where it stopped.
Request builders: :func:`privacy_requests`, :func:`fidelity_requests`, :func:`utility_requests`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.data import frame_fingerprint, load_images, parse_labels, read_synthetic_set
from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.backends import model_revision
from radaudit.models.cache import default_cache_dir
from radaudit.models.diffusion import (
    DemoDiffusionPipeline,
    demo_diffusion_path,
    diffusion_config_hash,
    generate_images,
    load_pipeline,
)
from radaudit.models.resolver import resolve_model
from radaudit.registry import Registry
from radaudit.stats import stable_seed

__all__ = [
    "CACHE_VERSION", "FRAME_SPLIT_NAMES", "GENERATORS", "GenerationContext", "GeneratorSpec", "REQUEST_COLUMNS",
    "SOURCE_COLUMN", "assign_sources", "fidelity_requests",
    "generate", "generate_set", "generator_key", "match_pool", "privacy_requests", "utility_requests",
]

log = logging.getLogger(__name__)

#: Bump when a generator's output changes for the same inputs (invalidates cached sets).
CACHE_VERSION = 3  # 3: held-out real drawn without replacement, the degrader never from the prompt's patient
#: Column a real-image generator's requests carry after :func:`assign_sources`: the real image each one is made from.
SOURCE_COLUMN = "pool_study_id"
#: Columns every request frame has (``view`` and ``source_study_id`` are optional extras).
REQUEST_COLUMNS: tuple[str, ...] = ("prompt", "labels", "seed")


# --- context -------------------------------------------------------------------------------------------

@dataclass
class GenerationContext:
    """What generators share: the real data and caches.

    ``frame``: the real images' metadata with ``split`` (:func:`~radaudit.audits.synthetic_cxr.data.demo_frame`
    or the same columns for other data): ``study_id``, ``image_path``, ``labels``, ``split``, optionally
    ``view``, ``patient_id``. ``size``: output images are ``size × size``. ``cache_dir``: where demo
    models, decoded real images and generated sets are kept (default: the lab cache).
    ``resize``: the :func:`load_images` policy for real images and for resizing pipeline outputs.
    """

    frame: pd.DataFrame | None = None
    size: int = 64
    cache_dir: str | os.PathLike | None = None
    resize: str = "center_crop"
    _pixels: dict[tuple[str, int, str], np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _pipelines: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False)

    def root(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir is not None else default_cache_dir()

    def require_frame(self, who: str) -> pd.DataFrame:
        if self.frame is None:
            raise ParamsError(f"The {who!r} generator needs the real data: GenerationContext(frame=demo_frame(...)).")
        missing = [c for c in ("study_id", "image_path", "labels", "split") if c not in self.frame.columns]
        if missing:
            raise ParamsError(f"The context frame lacks column(s) {missing}; build it with demo_frame(...).")
        return self.frame

    def fingerprint(self) -> str:
        """:func:`frame_fingerprint` of the real data (computed once)."""
        if self.frame is None:
            return "no-frame"
        if self._fingerprint is None:
            self._fingerprint = frame_fingerprint(self.frame)
        return self._fingerprint

    def pixels(self, study_ids: Sequence[str]) -> np.ndarray:
        """Real images ``[n, size, size]`` of these study ids (decoded once, then kept in memory)."""
        frame = self.require_frame("real-image")
        ids = [str(s) for s in study_ids]
        tag = (self.size, self.resize)
        todo = sorted({s for s in ids if (s, *tag) not in self._pixels})
        if todo:
            uniq = frame.drop_duplicates("study_id")
            by_id = uniq.set_index(uniq["study_id"].astype(str))
            unknown = [s for s in todo if s not in by_id.index]
            if unknown:
                raise DataFormatError(f"Study id(s) {unknown[:5]} are not in the context frame.")
            cache = None if self.cache_dir is None else self.root()
            arr = load_images(by_id.loc[todo, "image_path"].tolist(), self.size, resize=self.resize, cache_dir=cache)
            self._pixels.update(((s, *tag), a) for s, a in zip(todo, arr))
        if not ids:
            return np.zeros((0, self.size, self.size), np.float32)
        return np.stack([self._pixels[(s, *tag)] for s in ids])


# --- requests ------------------------------------------------------------------------------------------

def _check_requests(requests: Any, who: str = "generator") -> pd.DataFrame:
    if not isinstance(requests, pd.DataFrame):
        raise ParamsError(f"requests for the {who} must be a DataFrame with columns {list(REQUEST_COLUMNS)}, got "
                          f"{type(requests).__name__}.")
    missing = [c for c in REQUEST_COLUMNS if c not in requests.columns]
    if missing:
        raise ParamsError(f"requests lack column(s) {missing}; build them with privacy_requests/fidelity_requests/"
                          f"utility_requests (columns {list(REQUEST_COLUMNS)}, optional view, source_study_id).")
    out = requests.reset_index(drop=True).copy()
    bad = [i for i, s in enumerate(out["seed"]) if s is None or s is pd.NA or isinstance(s, bool)
           or not isinstance(s, (int, np.integer)) and not (isinstance(s, float) and float(s).is_integer())]
    if bad:
        raise ParamsError(f"requests: column 'seed' must hold integers (each image's own seed); not in row(s) {bad[:10]}.")
    out["seed"] = [int(s) for s in out["seed"]]
    out["labels"] = [parse_labels(v, where=f" (request {i})") for i, v in enumerate(out["labels"])]
    out["prompt"] = out["prompt"].astype(str)
    return out


def _per_image_seed(seed: int, *keys: object) -> int:
    return stable_seed(seed, *keys)


def _request_frame(rows: pd.DataFrame, seeds: Sequence[int], purpose: str, extra: Mapping[str, Any]) -> pd.DataFrame:
    out = pd.DataFrame({
        "request_id": [f"{purpose}-{i:06d}" for i in range(len(rows))],
        "prompt": rows["prompt"].astype(str).to_numpy(),
        "labels": [list(v) for v in rows["labels"]],
        "seed": pd.array([int(s) for s in seeds], dtype="Int64"),
        "view": rows["view"].to_numpy() if "view" in rows.columns else pd.NA,
        "source_study_id": rows["study_id"].astype(str).to_numpy(),
        "source_patient_id": rows["patient_id"].astype(str).to_numpy() if "patient_id" in rows.columns else pd.NA,
        **extra,
    })
    return out


def _check_count(name: str, v: Any, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < lo:
        raise ParamsError(f"{name} must be an integer >= {lo}, got {v!r}.")
    return int(v)


def _split_rows(frame: pd.DataFrame, split: str) -> pd.DataFrame:
    if "split" not in frame.columns:
        raise ParamsError("The frame has no 'split' column; build it with demo_frame(...).")
    rows = frame[frame["split"] == split]
    if rows.empty:
        raise DataFormatError(f"The frame has no {split!r} rows (splits: {sorted(frame['split'].dropna().unique())}).")
    return rows


def privacy_requests(frame: pd.DataFrame, n_prompts: int = 2000, n_seeds: int = 10, seed: int = 0, *,
                     split: str = "train", unique_prompts: bool = False,
                     patients: Collection[Any] | None = None) -> pd.DataFrame:
    """Requests for the privacy audit (§2.3): ``n_prompts`` training prompts × ``n_seeds`` seeds.

    The paper takes 2000 training image–caption pairs and generates N = 10 images per caption, each
    with its own seed, then compares every image with the pair's real image. Rows: a seeded subset
    (``np.random.default_rng(seed)``, without replacement; all rows if fewer) of the ``split`` rows,
    each repeated ``n_seeds`` times; ``source_study_id`` is the real image, ``seed`` is
    ``stable_seed(seed, "privacy", source_study_id, j)`` for j = 0..n_seeds-1 (one generator per image;
    the authors draw 10 seeds shared by all prompts, and never pass them to the pipeline).
    ``unique_prompts``: first keep one row per caption, as the authors' ``drop_duplicates`` on
    ``annotated_prompt`` (right for LLaVA-Rad captions, where a caption is near-unique; the demo's
    metadata captions repeat, so the default samples images). ``patients``: draw only from these patients' rows
    (the audit half of :func:`radaudit.audits.synthetic_cxr.controls.patient_halves`, so the re-ID threshold is
    calibrated on patients the audit never sees). Extra columns ``prompt_index``, ``seed_index``.
    """
    n_prompts = _check_count("n_prompts", n_prompts)
    n_seeds = _check_count("n_seeds", n_seeds)
    rows = _split_rows(frame, split)
    if patients is not None:
        keep = {str(p) for p in patients}
        rows = rows[rows["patient_id"].astype(str).isin(keep)]
        if rows.empty:
            raise ParamsError(f"No {split!r} rows of the {len(keep)} given patients to draw privacy prompts from.")
    if unique_prompts:
        rows = rows.drop_duplicates("prompt")
    rows = rows.sort_values("study_id", kind="stable")
    rng = np.random.default_rng(int(seed))
    take = rng.choice(len(rows), size=min(n_prompts, len(rows)), replace=False)
    chosen = rows.iloc[np.sort(take)].reset_index(drop=True)
    rep = chosen.loc[chosen.index.repeat(n_seeds)].reset_index(drop=True)
    j = np.tile(np.arange(n_seeds), len(chosen))
    seeds = [_per_image_seed(seed, "privacy", sid, int(k)) for sid, k in zip(rep["study_id"], j)]
    return _request_frame(rep, seeds, "privacy", {"prompt_index": np.repeat(np.arange(len(chosen)), n_seeds),
                                                  "seed_index": j})


def fidelity_requests(frame: pd.DataFrame, split: str = "test", k: int = 1, seed: int = 0) -> pd.DataFrame:
    """Requests for the fidelity metrics (§2.2): ``k`` images per ``split`` row (default: one per test image).

    One request per real image (not per distinct caption) keeps the synthetic label and view mix equal
    to the real set's, which FID/KID and the per-label conditional FID compare against.
    ``source_study_id`` is the real image whose caption is used; seeds are
    ``stable_seed(seed, "fidelity", source_study_id, j)``. Extra column ``seed_index``.
    """
    k = _check_count("k", k)
    rows = _split_rows(frame, split).sort_values("study_id", kind="stable").reset_index(drop=True)
    rep = rows.loc[rows.index.repeat(k)].reset_index(drop=True)
    j = np.tile(np.arange(k), len(rows))
    seeds = [_per_image_seed(seed, "fidelity", sid, int(i)) for sid, i in zip(rep["study_id"], j)]
    return _request_frame(rep, seeds, "fidelity", {"seed_index": j})


def utility_requests(frame: pd.DataFrame, n: int, seed: int = 0, *, split: str = "train") -> pd.DataFrame:
    """Requests for the utility classifier (§2.4: trained on synthetic images only): ``n`` training prompts.

    Every ``split`` row once (in a seeded order), then again, ... until ``n`` (so the label mix follows
    the training set; with ``n`` < rows, a seeded subset). Seeds: ``stable_seed(seed, "utility", i)``.
    """
    n = _check_count("n", n)
    rows = _split_rows(frame, split).sort_values("study_id", kind="stable").reset_index(drop=True)
    rng = np.random.default_rng(int(seed))
    order = np.concatenate([rng.permutation(len(rows)) for _ in range(-(-n // len(rows)))])[:n]
    chosen = rows.iloc[order].reset_index(drop=True)
    seeds = [_per_image_seed(seed, "utility", i) for i in range(n)]
    return _request_frame(chosen, seeds, "utility", {})


# --- label matching ------------------------------------------------------------------------------------

def match_pool(requests: pd.DataFrame, pool: pd.DataFrame, salt: str, *, other_patient: bool = False,
               distinct: bool = False) -> tuple[list[str], dict[str, int]]:
    """For each request, a ``study_id`` from ``pool`` with the same labels (and view), drawn by its seed.

    Tiers (first non-empty): same label set and view; same label set; highest Jaccard overlap of label
    sets (same view first). Within the tier, the candidate is ``sorted(study_ids)[rng.integers(n)]``
    with ``rng = np.random.default_rng([seed, sha(salt)])``: same seed → same image. Returns the ids and
    the number of requests served by each tier (``exact``, ``labels``, ``overlap``).

    ``other_patient``: never draw an image of the request's own patient (``source_patient_id`` of the
    request against the pool's ``patient_id``): a reference generator whose output must be *unrelated*
    to the prompt's image (the degrader) would otherwise, now and then, return that very image or
    another image of the same patient, and its privacy scores would be a memoriser's.
    ``distinct``: draw **without replacement** over the whole request frame, in its row order: an
    image is used once before any image is used twice (when every allowed image is used, a new round
    starts, logged). The tiers are searched among the unused images, so a request whose exact matches
    are used up takes an unused image of the next tier. Needs the whole frame at once (see
    :func:`assign_sources`: chunked generation assigns before it chunks).
    """
    if pool.empty:
        raise DataFormatError("The image pool is empty: no real images to draw from.")
    salt_int = int(hashlib.sha256(salt.encode()).hexdigest()[:8], 16)
    keys = [frozenset(v) for v in pool["labels"]]
    views = np.array([v if isinstance(v, str) else None
                      for v in (pool["view"] if "view" in pool.columns else [None] * len(pool))], dtype=object)
    ids = np.array(pool["study_id"].astype(str).tolist(), dtype=object)
    order = np.argsort(ids, kind="stable")  # candidates are always taken in sorted-id order
    ids, views, keys = ids[order], views[order], [keys[i] for i in order]
    if other_patient:
        if "patient_id" not in pool.columns:
            raise ParamsError(f"{salt}: other_patient=True needs a 'patient_id' column in the image pool.")
        pool_pat = np.array([str(v) for v in pool["patient_id"].to_numpy()[order]], dtype=object)
    counts = {"exact": 0, "labels": 0, "overlap": 0}
    out = []
    used = np.zeros(len(ids), dtype=bool)
    rounds = 1
    same_cache: dict[frozenset, np.ndarray] = {}
    jac_cache: dict[frozenset, np.ndarray] = {}
    n = len(requests)
    req_views = requests["view"].tolist() if "view" in requests.columns else [None] * n
    req_pat = (requests["source_patient_id"].tolist() if "source_patient_id" in requests.columns else [None] * n)
    for labs, view, s, pat in zip(requests["labels"], req_views, requests["seed"], req_pat):
        key = frozenset(labs)
        view = view if isinstance(view, str) else None
        if key not in same_cache:
            same_cache[key] = np.array([k == key for k in keys], dtype=bool)
            jac_cache[key] = np.array([1.0 if not (k | key) else len(k & key) / len(k | key) for k in keys])
        allowed = np.ones(len(ids), dtype=bool)
        if other_patient and isinstance(pat, str) and pat not in ("", "<NA>", "nan", "None"):
            allowed &= pool_pat != pat
        if not allowed.any():
            raise DataFormatError(f"{salt}: every image of the pool belongs to the request's patient {pat!r}.")
        free = allowed & ~used if distinct else allowed
        if not free.any():  # every allowed image used once: a new round
            used[:] = False
            rounds += 1
            free = allowed
        same = same_cache[key] & free
        exact = same & (views == view)
        if exact.any():
            cand, tier = exact, "exact"
        elif same.any():
            cand, tier = same, "labels"
        else:
            jac = np.where(free, jac_cache[key], -1.0)
            best = free & (jac == jac.max())
            same_view = best & (views == view)
            cand, tier = (same_view if same_view.any() else best), "overlap"
        idx = np.flatnonzero(cand)
        rng = np.random.default_rng([int(s), salt_int])
        pick = int(idx[int(rng.integers(len(idx)))])
        used[pick] = True
        out.append(str(ids[pick]))
        counts[tier] += 1
    if counts["overlap"] or counts["labels"] or rounds > 1:
        log.info("%s: %d requests matched labels and view, %d labels only, %d by the closest label overlap%s", salt,
                 counts["exact"], counts["labels"], counts["overlap"],
                 f"; {rounds} rounds through the pool (more requests than images)" if rounds > 1 else "")
    return out, counts


def _memoriser_sources(requests: pd.DataFrame, context: GenerationContext, **_: Any) -> list[str]:
    frame = context.require_frame("memoriser")
    train = frame[frame["split"] == "train"]
    train_ids = set(train["study_id"].astype(str))
    src = requests["source_study_id"] if "source_study_id" in requests.columns else pd.Series([None] * len(requests))
    own = [isinstance(s, str) and s in train_ids for s in src]
    ids: list[str] = [str(s) if o else "" for s, o in zip(src, own)]
    if not all(own):
        rest = requests[[not o for o in own]]
        found, _ = match_pool(rest, train, "memoriser")
        it = iter(found)
        ids = [i if o else next(it) for i, o in zip(ids, own)]
        log.info("memoriser: %d of %d requests are not training prompts; used a training image with their labels",
                 len(rest), len(requests))
    return ids


def _degrader_sources(requests: pd.DataFrame, context: GenerationContext, *, match: str = "labels",
                      other_patient: bool = True, distinct: bool = True, **_: Any) -> list[str]:
    frame = context.require_frame("degrader")
    if match not in ("labels", "source"):
        raise ParamsError(f"degrader match must be 'labels' or 'source', got {match!r}.")
    if match == "source":
        if "source_study_id" not in requests.columns:
            raise ParamsError("degrader match='source' needs requests with source_study_id.")
        return requests["source_study_id"].astype(str).tolist()
    train = frame[frame["split"] == "train"]
    return match_pool(requests, train, "degrader", other_patient=other_patient, distinct=distinct)[0]


#: Split names as a dataset's own files spell them -> as the loaders' frames spell them (MIMIC-CXR's split file
#: says ``validate``; :func:`radaudit.data.mimic_cxr.load` renames it ``valid``, the tidy schema's name).
FRAME_SPLIT_NAMES: dict[str, str] = {"validate": "valid"}


def _heldout_sources(requests: pd.DataFrame, context: GenerationContext, *, split: str = "holdout",
                     distinct: bool = True, **_: Any) -> list[str]:
    frame = context.require_frame("heldout_real")
    present = sorted(frame["split"].dropna().astype(str).unique())
    name = split if split in present else FRAME_SPLIT_NAMES.get(split, split)
    pool = frame[frame["split"] == name]
    if pool.empty:
        raise DataFormatError(f"The context frame has no {split!r} images (its splits: {present}): the held-out real "
                              "generator draws from a split no generator trains on (demo: demo_frame(fractions=...) must "
                              "leave a holdout; MIMIC-CXR: its validate split, added by mimic_prompts(pool_splits=...)).")
    return match_pool(requests, pool, "heldout_real", distinct=distinct)[0]


def _sources_of(requests: pd.DataFrame, who: str) -> list[str] | None:
    """The assigned source images (:func:`assign_sources`), or None when the requests carry none."""
    if SOURCE_COLUMN in requests.columns:
        vals = requests[SOURCE_COLUMN].tolist()
        if all(isinstance(v, str) and v for v in vals):
            return vals
    return None


def assign_sources(name: str, requests: pd.DataFrame, *, context: GenerationContext, **params: Any) -> pd.DataFrame:
    """``requests`` with the real image each request of a real-image generator is made from:
    :data:`SOURCE_COLUMN` (``pool_study_id``) and ``pool_patient_id`` (``None`` for a generator that
    draws no real image: diffusion, folder).

    The assignment is a function of the **whole** request frame (without replacement needs it), so
    :func:`generate_set` calls this once before it generates in chunks; the generators then read the
    column. It is also the provenance the privacy audit checks (``privacy_reference_overlap``: no
    image of a non-memorising reference generator may share a patient with the prompt's image)."""
    spec = GENERATORS.lookup(name)
    p = spec.check_params(params)
    req = _check_requests(requests, name)
    out = requests.reset_index(drop=True).copy()
    if spec.assign is None:
        out[SOURCE_COLUMN] = None
        out["pool_patient_id"] = None
        return out
    ids = spec.assign(req, context, **p)
    frame = context.require_frame(name)
    uniq = frame.drop_duplicates("study_id")
    pat = dict(zip(uniq["study_id"].astype(str), uniq["patient_id"].astype(str))) if "patient_id" in uniq else {}
    out[SOURCE_COLUMN] = ids
    out["pool_patient_id"] = [pat.get(i) for i in ids]
    return out


# --- the generators ------------------------------------------------------------------------------------

def _float_param(name: str, v: Any, lo: float = 0.0) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ParamsError(f"{name} must be a number, got {v!r}.") from None
    if not np.isfinite(f) or f < lo:
        raise ParamsError(f"{name} must be a finite number >= {lo}, got {v!r}.")
    return f


def _noise(seed: int, salt: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng([int(seed), int(hashlib.sha256(salt.encode()).hexdigest()[:8], 16)])
    return rng.standard_normal(shape).astype(np.float32)


def _memoriser(requests: pd.DataFrame, *, context: GenerationContext, sigma: float = 0.02) -> np.ndarray:
    """The prompt's own training image (``source_study_id`` in the train split; else one with the same
    labels/view, :func:`match_pool`) + N(0, σ²) per pixel from the request's seed, clipped to [0, 1]."""
    sigma = _float_param("sigma", sigma)
    ids = _sources_of(requests, "memoriser") or _memoriser_sources(requests, context)
    base = context.pixels(ids)
    noise = np.stack([_noise(s, "memoriser", base.shape[1:]) for s in requests["seed"]]) if len(base) else base
    return np.clip(base + sigma * noise, 0.0, 1.0).astype(np.float32)


def _degrader(requests: pd.DataFrame, *, context: GenerationContext, blur_sigma: float = 2.5,
              noise_sigma: float = 0.15, match: str = "labels", other_patient: bool = True,
              distinct: bool = True) -> np.ndarray:
    """A training image with the prompt's labels (``match="labels"``, drawn by seed, never of the prompt's
    own patient with ``other_patient``, without replacement with ``distinct``) or the prompt's own
    (``match="source"``), Gaussian-blurred (``blur_sigma`` pixels, reflect borders) then noised
    (N(0, ``noise_sigma``²) from the request's seed), clipped to [0, 1]. The dose-response study runs it
    at several (``blur_sigma``, ``noise_sigma``) levels on the same source images."""
    from scipy.ndimage import gaussian_filter

    blur_sigma = _float_param("blur_sigma", blur_sigma)
    noise_sigma = _float_param("noise_sigma", noise_sigma)
    ids = _sources_of(requests, "degrader") or _degrader_sources(requests, context, match=match,
                                                                   other_patient=other_patient, distinct=distinct)
    base = context.pixels(ids)
    out = np.empty_like(base)
    for i, (img, s) in enumerate(zip(base, requests["seed"])):
        b = gaussian_filter(img, blur_sigma, mode="reflect") if blur_sigma > 0 else img
        out[i] = np.clip(b + noise_sigma * _noise(s, "degrader", img.shape), 0.0, 1.0)
    return out.astype(np.float32)


def _heldout_real(requests: pd.DataFrame, *, context: GenerationContext, split: str = "holdout",
                  distinct: bool = True) -> np.ndarray:
    """Real ``split`` images (default ``holdout``; MIMIC-CXR's ``validate`` is read as the frame's ``valid``) with
    the prompt's labels and view, drawn by the seed, without replacement over the request frame (``distinct``;
    see :func:`match_pool`)."""
    ids = _sources_of(requests, "heldout_real") or _heldout_sources(requests, context, split=split, distinct=distinct)
    return context.pixels(ids)


def _folder(requests: pd.DataFrame | None, *, context: GenerationContext, metadata_csv: str | os.PathLike,
            images_root: str | os.PathLike | None = None) -> np.ndarray:
    """A user's synthetic set (``metadata.csv`` + images), resized to the context size; rows matched to the
    requests by ``(prompt, seed)`` (``requests=None``: every row, in file order)."""
    meta = read_synthetic_set(metadata_csv, images_root)
    if requests is None:
        paths = meta["image_path"].tolist()
    else:
        key = {}
        for p, s, path in zip(meta["prompt"], meta["seed"], meta["image_path"]):
            key.setdefault((p, None if s is pd.NA else int(s)), path)
        paths, missing = [], []
        for i, (p, s) in enumerate(zip(requests["prompt"], requests["seed"])):
            path = key.get((p, int(s)))
            if path is None:
                missing.append(i)
            paths.append(path)
        if missing:
            r = requests.iloc[missing[0]]
            raise DataFormatError(f"{len(missing)} request(s) have no image in {metadata_csv} with the same prompt and "
                                  f"seed, e.g. request {missing[0]} (prompt {r['prompt']!r}, seed {r['seed']}). Generate "
                                  "those images or pass requests=None to use the set as it is.")
    return load_images(paths, context.size, resize=context.resize)


def _resize_to(images: np.ndarray, size: int, policy: str) -> np.ndarray:
    """Float images ``[N, H, W]`` → ``[N, size, size]``: made square by ``policy`` (centre crop, black
    padding, or none for "squash"), then PIL bicubic resize in float (mode "F"), clipped to [0, 1]."""
    if images.shape[1:] == (size, size):
        return images
    from PIL import Image

    out = np.empty((len(images), size, size), dtype=np.float32)
    for i, im in enumerate(np.asarray(images, dtype=np.float32)):
        h, w = im.shape
        if policy == "center_crop" and h != w:
            s = min(h, w)
            im = im[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
        elif policy == "pad" and h != w:
            s = max(h, w)
            canvas = np.zeros((s, s), dtype=np.float32)
            canvas[(s - h) // 2:(s - h) // 2 + h, (s - w) // 2:(s - w) // 2 + w] = im
            im = canvas
        pil = Image.fromarray(np.ascontiguousarray(im), mode="F")
        out[i] = np.asarray(pil.resize((size, size), Image.Resampling.BICUBIC), dtype=np.float32)
    return np.clip(out, 0.0, 1.0)


def _diffusion(requests: pd.DataFrame, *, context: GenerationContext, model: str = "demo", steps: int | None = None,
               guidance: float | None = None, batch_size: int = 16, model_seed: int = 0, family: str | None = None,
               dtype: Any = "fp16", device: str | None = "auto", lora: str | None = None, sampler: str | None = None,
               eta: float = 0.0, height: int | None = None, width: int | None = None,
               train: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None,
               trust_remote_code: bool = False, radedit_vae: str | None = None,
               radedit_text_encoder: str | None = None) -> np.ndarray:
    """Images from a text-to-image model: ``model="demo"`` (the project's demo model, trained with
    ``train`` settings and ``model_seed`` on the context's train split) or a hub id / local folder
    (:func:`radaudit.models.diffusion.load_pipeline` with ``family``, ``dtype``, ``device``, ``lora`` and
    ``trust_remote_code``, off unless the generator's params say ``trust_remote_code: true``: RadEdit needs it;
    ``radedit_vae`` / ``radedit_text_encoder``: the components RadEdit borrows, default the authors' hub ids).
    Sampling: :func:`radaudit.models.diffusion.generate_images` (per-image seeds); outputs are resized
    to the context size with the context's resize policy."""
    pipe = _pipeline(context, model, model_seed=model_seed, family=family, dtype=dtype, device=device, lora=lora,
                     train=train, trust_remote_code=trust_remote_code, radedit_vae=radedit_vae,
                     radedit_text_encoder=radedit_text_encoder)
    if isinstance(pipe, DemoDiffusionPipeline):
        imgs = pipe.generate(requests, requests["seed"].tolist(), steps=steps, guidance=guidance,
                             batch_size=batch_size, sampler=sampler, eta=eta)
    else:
        imgs = generate_images(pipe, requests["prompt"].tolist(), requests["seed"].tolist(), steps=steps,
                               guidance=guidance, height=height, width=width, batch_size=batch_size, **(extra or {}))
    return _resize_to(imgs, context.size, context.resize)


def _pipeline(context: GenerationContext, model: str, *, model_seed: int = 0, family: str | None = None,
              dtype: Any = "fp16", device: str | None = "auto", lora: str | None = None,
              train: Mapping[str, Any] | None = None, trust_remote_code: bool = False,
              radedit_vae: str | None = None, radedit_text_encoder: str | None = None) -> Any:
    key = json.dumps([model, model_seed, family, str(dtype), device, lora, dict(train or {}), radedit_vae,
                      radedit_text_encoder], sort_keys=True, default=str)
    if key not in context._pipelines:
        if model == "demo":
            path = demo_diffusion_path(context.require_frame("diffusion"), model_seed, context.root(),
                                       **{"image_size": context.size, **dict(train or {})})
            context._pipelines[key] = load_pipeline(path, family="demo", device="cpu" if device in (None, "auto")
                                                    else device)
        else:
            components = {k: v for k, v in (("radedit_vae", radedit_vae), ("radedit_text_encoder", radedit_text_encoder))
                          if v is not None}
            context._pipelines[key] = load_pipeline(model, family=family, dtype=dtype, device=device, lora=lora,
                                                    trust_remote_code=trust_remote_code, **components)
    return context._pipelines[key]


def _diffusion_identity(context: GenerationContext, params: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies a diffusion generator's model: the demo model's config hash (data + settings) or
    the pipeline's revision (hub commit when cached, else the id; a local folder's content hash)."""
    model = params.get("model", "demo")
    if model == "demo":
        frame = context.require_frame("diffusion")
        train = frame[frame["split"] == "train"]
        hp = {"image_size": context.size, **dict(params.get("train") or {})}
        return {"model": "demo", "config_hash": diffusion_config_hash(frame_fingerprint(train),
                                                                      params.get("model_seed", 0), **hp)}
    lora = params.get("lora")
    lora_rev = None
    if lora is not None:
        lora_rev = model_revision(resolve_model(str(lora))) if Path(str(lora)).exists() else str(lora)
    return {"model": str(model), "revision": model_revision(resolve_model(str(model))), "lora": lora_rev}


def _folder_identity(context: GenerationContext, params: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata file's content and each listed image's path, size and modification time (hashing
    every image's bytes would cost minutes for a large set)."""
    meta = read_synthetic_set(params["metadata_csv"], params.get("images_root"))
    h = hashlib.sha256(Path(params["metadata_csv"]).read_bytes())
    for p in meta["image_path"]:
        st = os.stat(p)
        h.update(f"{p}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return {"folder": h.hexdigest()[:24]}


def _real_identity(context: GenerationContext, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"data": context.fingerprint()}


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: ``fn(requests, *, context, **params)``, its allowed params and defaults,
    and ``identity(context, params)``: what, beyond params and requests, determines its output."""

    name: str
    fn: Callable[..., np.ndarray]
    description: str
    defaults: Mapping[str, Any]
    identity: Callable[[GenerationContext, Mapping[str, Any]], dict[str, Any]]
    needs_requests: bool = True
    required: tuple[str, ...] = ()
    #: ``assign(requests, context, **params) -> study ids``: the real image of each request, decided on the
    #: whole request frame (:func:`assign_sources`); None for generators that draw no real image.
    assign: Callable[..., list[str]] | None = None

    def check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ParamsError(f"Generator {self.name!r} has no parameter(s) {unknown}; allowed: {sorted(self.defaults)}.")
        out = {**self.defaults, **params}
        missing = [k for k in self.required if out.get(k) is None]
        if missing:
            raise ParamsError(f"The {self.name!r} generator needs {', '.join(f'{k}=' for k in missing)} "
                              f"({self.description}).")
        return out


#: The generators, by name (``GENERATORS.lookup(name)``; an unknown name lists the known ones).
GENERATORS: Registry[GeneratorSpec] = Registry("generator")
GENERATORS.register(GeneratorSpec(
    "diffusion", _diffusion, "text-to-image model: the demo model (model='demo') or a diffusers pipeline by hub id",
    {"model": "demo", "steps": None, "guidance": None, "batch_size": 16, "model_seed": 0, "family": None,
     "dtype": "fp16", "device": "auto", "lora": None, "sampler": None, "eta": 0.0, "height": None, "width": None,
     "train": None, "extra": None, "trust_remote_code": False, "radedit_vae": None, "radedit_text_encoder": None},
    _diffusion_identity))
GENERATORS.register(GeneratorSpec(
    "memoriser", _memoriser, "the prompt's training image + slight noise (privacy must flag it)", {"sigma": 0.02},
    _real_identity, assign=_memoriser_sources))
GENERATORS.register(GeneratorSpec(
    "degrader", _degrader, "blurred + noised training images with the prompt's labels (fidelity must penalise it)",
    {"blur_sigma": 2.5, "noise_sigma": 0.15, "match": "labels", "other_patient": True, "distinct": True},
    _real_identity, assign=_degrader_sources))
GENERATORS.register(GeneratorSpec(
    "heldout_real", _heldout_real, "held-out real images with the prompt's labels (the best a generator can do)",
    {"split": "holdout", "distinct": True}, _real_identity, assign=_heldout_sources))
GENERATORS.register(GeneratorSpec(
    "folder", _folder, "a user's images + metadata.csv (bring your own)", {"metadata_csv": None, "images_root": None},
    _folder_identity, needs_requests=False, required=("metadata_csv",)))

#: Params that change how images are computed but not what they are (left out of cache keys).
_NON_IDENTITY_PARAMS = ("batch_size", "device")


def generate(name: str, requests: pd.DataFrame | None, *, context: GenerationContext, **params: Any) -> np.ndarray:
    """Run generator ``name`` on ``requests`` (no caching): float32 ``[N, size, size]`` in [0, 1]."""
    spec = GENERATORS.lookup(name)
    p = spec.check_params(params)
    if requests is None:
        if spec.needs_requests:
            raise ParamsError(f"The {name!r} generator needs requests (privacy_requests/fidelity_requests/...).")
        req = None
    else:
        req = _check_requests(requests, name)
        if spec.assign is not None and SOURCE_COLUMN not in req.columns:
            req[SOURCE_COLUMN] = spec.assign(req, context, **p)
    out = spec.fn(req, context=context, **p)
    out = np.asarray(out, dtype=np.float32)
    n = None if req is None else len(req)
    if out.ndim != 3 or (n is not None and len(out) != n):
        raise DataFormatError(f"Generator {name!r} returned shape {out.shape} for {n} requests.")
    return out


def _requests_digest(req: pd.DataFrame | None) -> str:
    if req is None:
        return "all"
    cols = [c for c in ("prompt", "labels", "seed", "view", "source_study_id") if c in req.columns]
    h = hashlib.sha256(json.dumps(cols).encode())
    for row in req[cols].itertuples(index=False):
        h.update(json.dumps([None if (v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))) else v
                             for v in row], default=str).encode())
    return h.hexdigest()[:24]


def generator_key(name: str, requests: pd.DataFrame | None, *, context: GenerationContext, **params: Any) -> str:
    """The cache key of :func:`generate_set`: SHA-256 (24 hex) of the generator, its params (those that
    change the images), its identity (model hash / data fingerprint / folder content), the requests,
    the image size and resize policy, and :data:`CACHE_VERSION`."""
    spec = GENERATORS.lookup(name)
    p = spec.check_params(params)
    req = None if requests is None else _check_requests(requests, name)
    blob = json.dumps({"generator": name, "params": {k: v for k, v in p.items() if k not in _NON_IDENTITY_PARAMS},
                       "identity": spec.identity(context, p), "requests": _requests_digest(req),
                       "size": context.size, "resize": context.resize, "version": CACHE_VERSION},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def generate_set(name: str, requests: pd.DataFrame | None, cache_dir: str | os.PathLike | None = None, *,
                 context: GenerationContext, chunk_size: int = 64, **params: Any) -> np.ndarray:
    """:func:`generate` with an on-disk cache that survives crashes: float32 ``[N, size, size]``.

    The requests are generated ``chunk_size`` at a time; each finished chunk is saved as
    ``<cache>/synthetic/<name>-<key>/part-<i>.npy`` (written to a temporary file, then renamed) before
    the next starts, so a rerun after a crash generates only the missing chunks; a changed parameter,
    model, real data or request gives another key (:func:`generator_key`). ``cache_dir`` defaults to
    the context's cache. Memory: the output array plus one chunk in progress.
    """
    chunk_size = _check_count("chunk_size", chunk_size)
    key = generator_key(name, requests, context=context, **params)
    root = Path(cache_dir) if cache_dir is not None else context.root()
    folder = root / "synthetic" / f"{name}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    spec = GENERATORS.lookup(name)
    info = {"generator": name, "params": {k: v for k, v in spec.check_params(params).items()}, "key": key,
            "size": context.size, "n": None if requests is None else len(requests)}
    (folder / "info.json").write_text(json.dumps(info, indent=2, sort_keys=True, default=str) + "\n")
    if requests is None:  # a user's folder: one part, all rows
        part = folder / "part-all.npy"
        if part.is_file():
            return np.load(part)
        arr = generate(name, None, context=context, **params)
        _save_atomic(part, arr)
        return arr
    req = requests.reset_index(drop=True)
    if spec.assign is not None and SOURCE_COLUMN not in req.columns:  # on the whole frame, before chunking
        req = req.assign(**{SOURCE_COLUMN: spec.assign(_check_requests(req, name), context, **spec.check_params(params))})
    n = len(req)
    out = np.empty((n, context.size, context.size), dtype=np.float32)
    n_cached = 0
    for i, start in enumerate(range(0, n, chunk_size)):
        stop = min(n, start + chunk_size)
        part = folder / f"part-{i:05d}-{stop - start}.npy"
        arr = None
        if part.is_file():
            try:
                arr = np.load(part)
                if arr.shape != (stop - start, context.size, context.size):
                    arr = None
            except (OSError, ValueError):
                arr = None
        if arr is None:
            arr = generate(name, req.iloc[start:stop], context=context, **params)
            _save_atomic(part, arr)
        else:
            n_cached += stop - start
        out[start:stop] = arr
        log.info("generate_set %s: %d/%d images", name, stop, n)
    if n_cached:
        log.info("generate_set %s: %d of %d images read from the cache (%s)", name, n_cached, n, folder)
    return out


def _save_atomic(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npy")
    np.save(tmp, np.asarray(arr, dtype=np.float32), allow_pickle=False)
    os.replace(tmp, path)
