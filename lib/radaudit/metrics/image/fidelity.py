"""Fidelity and mode-coverage metrics on image features: FID, KID, precision/recall/density/coverage.

CheXGenBench (paper 004, §2.2 and Tables 1–2) scores a generator by comparing features of its
synthetic images with features of real images, on two encoders (InceptionV3 and RadDino): FID and
KID for fidelity, Precision/Recall/Density/Coverage (k = 5) for mode coverage, and all of them again
per pathology ("conditional analysis"). Every function here is pure numpy/scipy on ``[n, d]``
feature arrays (rows = images); features come from :func:`radaudit.metrics.image.features.extract_features`.

Fréchet distance (FID; Heusel et al. 2017, paper ref. [33])
------------------------------------------------------------
With ``μ_r, Σ_r`` and ``μ_s, Σ_s`` the mean and covariance of the real and synthetic features::

    FID = ‖μ_r − μ_s‖² + Tr(Σ_r) + Tr(Σ_s) − 2 Tr( (Σ_r Σ_s)^{1/2} )

computed exactly as the standard implementation (pytorch-fid's ``calculate_frechet_distance``,
which clean-fid copies): covariances with ``np.cov(rowvar=False)`` (ddof = 1), float64;
``(Σ_r Σ_s)^{1/2}`` by :func:`scipy.linalg.sqrtm`; if that is not finite (singular product, e.g.
fewer images than feature dimensions), ``ε = 1e-6`` is added to both diagonals and the root
recomputed; an imaginary part that is numerical noise (|diag imag| ≤ 1e-3) is dropped, a larger
one raises. ``method="eigvals"`` takes the trace as torchmetrics does (the FID CheXGenBench actually
ran), ``Σ_i Re √λ_i(Σ_r Σ_s)``: the same value up to rounding, about 4× faster at d = 2048.

**Always on the full sets**: CheXGenBench's "memory-saving" mode averages
per-shard FIDs (``tools/combine_shards.py``), which is not the FID of the full sets (the mean of
per-shard Fréchet distances is biased upwards and depends on the shard count). Memory is bounded
instead by streaming features into running sums (:class:`FeatureStats`), so the full-set FID never
needs all images, or even all features, at once.

KID (Bińkowski et al. 2018, "Demystifying MMD GANs", ICLR)
----------------------------------------------------------
The unbiased estimator of the squared MMD with the cubic polynomial kernel
``k(x, y) = (xᵀy / d + 1)³`` (d the feature dimension)::

    MMD²_u = Σ_{i≠j} k(x_i, x_j) / (m(m−1)) + Σ_{i≠j} k(y_i, y_j) / (n(n−1)) − 2 Σ_{i,j} k(x_i, y_j) / (mn)

averaged over ``n_subsets`` random subsets of ``subset_size`` rows drawn without replacement from
each set (torchmetrics' ``KernelInceptionDistance``, which CheXGenBench calls: 100 subsets, subset
size 1000, capped here at ``min(n_real, n_synth)`` where torchmetrics raises — CheXGenBench passes
``min(n_real, n_synth)``, so with equal subset and set sizes every subset is the whole set). Returns the mean
and the standard deviation over subsets (population std, ddof = 0, as torchmetrics). Being unbiased, KID can be
slightly negative when the sets come from one distribution. Randomness: ``numpy.random.default_rng(seed)``.

Precision, recall, density, coverage (Naeem et al. 2020, ICML, paper ref. "prdc")
------------------------------------------------------------------------------------
With ``NND_k(x)`` the distance from a real feature ``x`` to its k-th nearest *other* real feature
(``B(x, r)`` the open ball), real ``X_1..X_N`` and synthetic ``Y_1..Y_M``::

    precision = 1/M Σ_j 1[ ∃ i: Y_j ∈ B(X_i, NND_k(X_i)) ]
    recall    = 1/N Σ_i 1[ ∃ j: X_i ∈ B(Y_j, NND_k(Y_j)) ]       (NND_k among synthetic features)
    density   = 1/(kM) Σ_j Σ_i 1[ Y_j ∈ B(X_i, NND_k(X_i)) ]
    coverage  = 1/N Σ_i 1[ ∃ j: Y_j ∈ B(X_i, NND_k(X_i)) ]

Euclidean distances, strict ``<`` and "k-th nearest other point" = the (k+1)-th smallest distance
in the row including the point itself, exactly as the authors' ``prdc==0.2`` (which CheXGenBench
uses with ``nearest_k=5``). Not imported from ``prdc``: 0.2 needs scikit-learn (not in the
project's environment), ``print``s on every call, runs ``pairwise_distances(n_jobs=8)`` and holds
three full N×M distance matrices; here the distances are computed in row blocks (bounded memory),
with the same results (tested against prdc's formulas).

Per-label ("conditional") metrics
---------------------------------
:func:`per_label_fidelity` recomputes any of the metrics above on the real and synthetic rows that
carry each label (CheXGenBench keeps real rows with ``chexpert_labels[pathology] == 1`` and the
synthetic rows generated from their prompts; here the caller gives the synthetic rows' labels — the
labels of the prompt they were generated from).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import linalg

from radaudit.errors import DataFormatError, ParamsError

__all__ = [
    "FID_EPS",
    "FIDELITY_METRICS",
    "FeatureStats",
    "KIDResult",
    "as_features",
    "check_same_dim",
    "feature_stats",
    "fid",
    "frechet_distance",
    "kid",
    "kth_nn_radii",
    "label_matrix",
    "mmd2_unbiased",
    "pairwise_euclidean",
    "per_label_fidelity",
    "poly_kernel",
    "prdc",
]

FID_EPS = 1e-6
"""Diagonal offset used when ``sqrtm(Σ_r Σ_s)`` is not finite (pytorch-fid's ``eps``)."""

_IMAG_ATOL = 1e-3  # pytorch-fid: an imaginary diagonal above this is an error, below it numerical noise

FIDELITY_METRICS: tuple[str, ...] = ("fid", "kid", "kid_std", "precision", "recall", "density", "coverage")
"""What :func:`per_label_fidelity` can compute (``kid`` also gives ``kid_std``)."""


def as_features(x: Any, name: str, min_rows: int = 2) -> np.ndarray:
    """``x`` as a float64 ``[n_images, n_features]`` array, checked: 2-D, at least ``min_rows`` rows, finite.

    ``name`` is how the error messages call it (e.g. ``"real features"``). Raises
    :class:`~radaudit.errors.DataFormatError`. Every fidelity metric reads its feature sets through it.
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise DataFormatError(f"{name} must be a 2-D array [n_images, n_features]; got shape {arr.shape}.")
    if arr.shape[0] < min_rows:
        raise DataFormatError(f"{name} has {arr.shape[0]} rows; this metric needs at least {min_rows} images.")
    if not np.isfinite(arr).all():
        raise DataFormatError(f"{name} contains NaN or infinite values: check the encoder's output.")
    return arr


def check_same_dim(a: np.ndarray, b: np.ndarray) -> None:
    """A :class:`~radaudit.errors.DataFormatError` unless the real (``a``) and synthetic (``b``) feature
    arrays have the same number of columns (features from one encoder)."""
    if a.shape[1] != b.shape[1]:
        raise DataFormatError(f"Real and synthetic features have different dimensions ({a.shape[1]} vs "
                              f"{b.shape[1]}): use the same encoder for both sets.")


# --- FID -----------------------------------------------------------------------------------------

@dataclass
class FeatureStats:
    """Running mean and covariance of feature rows, for a full-set FID in bounded memory.

    ``update(batch)`` adds rows (float64 running sums ``Σx`` and ``Σxxᵀ``; memory ``O(d²)``,
    independent of the number of images); ``mean``/``cov`` are the full-set mean and the ddof = 1
    covariance, equal to ``features.mean(0)`` and ``np.cov(features, rowvar=False)`` (tested).
    Two stats over disjoint sets can be merged with ``+``: that is how sharded runs must combine,
    never by averaging per-shard FIDs.
    """

    dim: int
    n: int = 0
    sum: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    sum_outer: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _shift: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.sum is None:
            self.sum = np.zeros(self.dim)
        if self.sum_outer is None:
            self.sum_outer = np.zeros((self.dim, self.dim))

    def update(self, batch: Any) -> FeatureStats:
        x = np.asarray(batch, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise DataFormatError(f"A feature batch must have shape [n, {self.dim}]; got {x.shape}.")
        if not np.isfinite(x).all():
            raise DataFormatError("A feature batch contains NaN or infinite values: check the encoder's output.")
        if self._shift is None and len(x):
            # Sums are taken around the first batch's mean: Σ(x−c)(x−c)ᵀ avoids the catastrophic
            # cancellation of Σxxᵀ − n μμᵀ when features have a large common offset.
            self._shift = x.mean(axis=0)
        if len(x):
            xc = x - self._shift
            self.n += len(x)
            self.sum += xc.sum(axis=0)
            self.sum_outer += xc.T @ xc
        return self

    @property
    def mean(self) -> np.ndarray:
        if self.n < 1:
            raise DataFormatError("No features were added.")
        return self.sum / self.n + (self._shift if self._shift is not None else 0.0)

    @property
    def cov(self) -> np.ndarray:
        if self.n < 2:
            raise DataFormatError(f"A covariance needs at least 2 images; got {self.n}.")
        m = self.sum / self.n
        return (self.sum_outer - self.n * np.outer(m, m)) / (self.n - 1)

    def __add__(self, other: FeatureStats) -> FeatureStats:
        if other.dim != self.dim:
            raise DataFormatError(f"Cannot merge feature stats of dimensions {self.dim} and {other.dim}.")
        out = FeatureStats(self.dim)
        for s in (self, other):
            if s.n:
                # re-centre s's sums on out's shift (the first non-empty one's)
                if out._shift is None:
                    out._shift = s._shift.copy()  # type: ignore[union-attr]
                d = s._shift - out._shift  # type: ignore[operator]
                out.sum_outer += s.sum_outer + np.outer(s.sum, d) + np.outer(d, s.sum) + s.n * np.outer(d, d)
                out.sum += s.sum + s.n * d
                out.n += s.n
        return out


def feature_stats(features: Any | Iterable[Any]) -> FeatureStats:
    """:class:`FeatureStats` of an ``[n, d]`` array or of an iterable of ``[b, d]`` batches."""
    if isinstance(features, np.ndarray) or (isinstance(features, Sequence) and features and np.ndim(features[0]) == 1):
        arr = np.asarray(features, dtype=np.float64)
        if arr.ndim != 2:
            raise DataFormatError(f"Features must be [n_images, n_features]; got shape {arr.shape}.")
        return FeatureStats(arr.shape[1]).update(arr)
    stats: FeatureStats | None = None
    for batch in features:
        b = np.asarray(batch, dtype=np.float64)
        if stats is None:
            if b.ndim != 2:
                raise DataFormatError(f"A feature batch must be [n, d]; got shape {b.shape}.")
            stats = FeatureStats(b.shape[1])
        stats.update(b)
    if stats is None:
        raise DataFormatError("No feature batches were given.")
    return stats


def frechet_distance(mu1: Any, sigma1: Any, mu2: Any, sigma2: Any, eps: float = FID_EPS,
                     method: Literal["sqrtm", "eigvals"] = "sqrtm") -> float:
    """Fréchet distance between N(μ1, Σ1) and N(μ2, Σ2) (see the module docstring for the formula).

    ``method="sqrtm"`` (default): pytorch-fid's procedure: ``sqrtm(Σ1 Σ2)``; if not finite, retry
    with ``eps·I`` added to both covariances; drop an imaginary part whose diagonal is below 1e-3 in
    absolute value, else raise. ``method="eigvals"``: torchmetrics' (what CheXGenBench ran):
    ``Tr((Σ1 Σ2)^{1/2}) = Σ_i Re √λ_i(Σ1 Σ2)`` — the same value up to rounding (tested), about 4× faster
    at d = 2048 (scipy 1.17, one thread: 5 s against 21 s).
    """
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, dtype=np.float64)), np.atleast_1d(np.asarray(mu2, dtype=np.float64))
    s1, s2 = np.atleast_2d(np.asarray(sigma1, dtype=np.float64)), np.atleast_2d(np.asarray(sigma2, dtype=np.float64))
    if mu1.shape != mu2.shape or s1.shape != s2.shape or s1.shape != (mu1.size, mu1.size):
        raise DataFormatError(f"Mean and covariance shapes do not match: {mu1.shape}, {s1.shape}, {mu2.shape}, {s2.shape}.")
    diff = mu1 - mu2
    if method == "eigvals":
        lam = np.linalg.eigvals(s1 @ s2).astype(np.complex128)
        tr_covmean = float(np.sqrt(lam).real.sum())
        return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * tr_covmean)
    if method != "sqrtm":
        raise ParamsError(f"method={method!r} is not allowed: use 'sqrtm' or 'eigvals'.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sqrtm warns on singular products; handled below
        covmean = linalg.sqrtm(s1 @ s2)
        if not np.isfinite(covmean).all():
            offset = np.eye(s1.shape[0]) * eps
            covmean = linalg.sqrtm((s1 + offset) @ (s2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=_IMAG_ATOL):
            m = float(np.max(np.abs(covmean.imag)))
            raise DataFormatError(f"sqrtm(Σ1 Σ2) has an imaginary component of {m:.3g}: the covariances are too "
                                  "ill-conditioned (far fewer images than feature dimensions?). Use more images.")
        covmean = covmean.real
    if not np.isfinite(covmean).all():
        raise DataFormatError("sqrtm(Σ1 Σ2) is not finite even after adding eps to the diagonals; use more images.")
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(covmean))


def fid(real: Any, synth: Any, eps: float = FID_EPS, method: Literal["sqrtm", "eigvals"] = "sqrtm") -> float:
    """FID between two full feature sets (``[n, d]`` arrays or :class:`FeatureStats`).

    Never averaged over shards: to bound memory, accumulate a :class:`FeatureStats` per set (or
    merge per-shard stats with ``+``) and pass those.
    """
    stats = []
    for x, name in ((real, "real features"), (synth, "synthetic features")):
        if isinstance(x, FeatureStats):
            stats.append(x)
        else:
            arr = as_features(x, name)
            stats.append(FeatureStats(arr.shape[1]).update(arr))
    if stats[0].dim != stats[1].dim:
        raise DataFormatError(f"Real and synthetic features have different dimensions ({stats[0].dim} vs "
                              f"{stats[1].dim}): use the same encoder for both sets.")
    return frechet_distance(stats[0].mean, stats[0].cov, stats[1].mean, stats[1].cov, eps=eps, method=method)


# --- KID -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KIDResult:
    """KID: mean and std (ddof = 0) of MMD²_u over ``n_subsets`` subsets of ``subset_size`` rows."""

    mean: float
    std: float
    n_subsets: int
    subset_size: int
    seed: int | None

    def __float__(self) -> float:
        return self.mean


def poly_kernel(x: np.ndarray, y: np.ndarray, degree: int = 3, gamma: float | None = None, coef: float = 1.0) -> np.ndarray:
    """``(γ xᵀy + c)^degree`` with ``γ = 1/d`` by default (Bińkowski et al. 2018)."""
    g = 1.0 / x.shape[1] if gamma is None else gamma
    return (x @ y.T * g + coef) ** degree


def mmd2_unbiased(x: np.ndarray, y: np.ndarray, degree: int = 3, gamma: float | None = None, coef: float = 1.0) -> float:
    """Unbiased MMD² between rows of ``x`` (m ≥ 2) and ``y`` (n ≥ 2) with the polynomial kernel."""
    m, n = len(x), len(y)
    kxx, kyy = poly_kernel(x, x, degree, gamma, coef), poly_kernel(y, y, degree, gamma, coef)
    kxy = poly_kernel(x, y, degree, gamma, coef)
    return float((kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
                 - 2.0 * kxy.sum() / (m * n))


def kid(real: Any, synth: Any, *, n_subsets: int = 100, subset_size: int | None = 1000, seed: int | None = 0,
        degree: int = 3, gamma: float | None = None, coef: float = 1.0) -> KIDResult:
    """KID (see the module docstring): mean ± std of MMD²_u over random subsets.

    ``subset_size`` is capped at ``min(n_real, n_synth)``; ``None`` means that minimum (CheXGenBench's
    choice). Subset ``b`` draws ``subset_size`` rows of each set without replacement with
    ``default_rng(seed)``.
    """
    x, y = as_features(real, "real features"), as_features(synth, "synthetic features")
    check_same_dim(x, y)
    if int(n_subsets) < 1:
        raise ParamsError(f"n_subsets must be a positive integer, got {n_subsets!r}.")
    cap = min(len(x), len(y))
    size = cap if subset_size is None else min(int(subset_size), cap)
    if size < 2:
        raise ParamsError(f"subset_size must be at least 2, got {subset_size!r}.")
    rng = np.random.default_rng(seed)
    vals = np.empty(int(n_subsets))
    for b in range(int(n_subsets)):
        xi = x if size == len(x) else x[rng.permutation(len(x))[:size]]
        yi = y if size == len(y) else y[rng.permutation(len(y))[:size]]
        vals[b] = mmd2_unbiased(xi, yi, degree, gamma, coef)
    return KIDResult(float(vals.mean()), float(vals.std(ddof=0)), int(n_subsets), size, seed)


# --- PRDC ----------------------------------------------------------------------------------------

def pairwise_euclidean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances ``[len(a), len(b)]`` (float64, via the Gram expansion, clipped at 0)."""
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.sqrt(np.maximum(d2, 0.0))


def kth_nn_radii(x: np.ndarray, k: int, block: int) -> np.ndarray:
    """Per row of ``x``: the (k+1)-th smallest distance to rows of ``x`` (itself included at 0), i.e.
    the distance to its k-th nearest other row — prdc's ``get_kth_value(d, k + 1)``: the radius of the
    row's k-NN ball in PRDC (Naeem et al. 2020). Distances :func:`pairwise_euclidean`, ``block`` rows of
    ``x`` at a time (memory ``O(block × len(x))``)."""
    out = np.empty(len(x))
    for s in range(0, len(x), block):
        d = pairwise_euclidean(x[s:s + block], x)
        d[np.arange(d.shape[0]), np.arange(s, s + d.shape[0])] = 0.0  # exact self-distance (Gram rounding)
        out[s:s + block] = np.partition(d, k, axis=1)[:, k]
    return out


def prdc(real: Any, synth: Any, nearest_k: int = 5, block: int = 2048) -> dict[str, float]:
    """Precision, recall, density and coverage (Naeem et al. 2020) with ``nearest_k`` neighbours.

    Same definitions and tie conventions as ``prdc==0.2`` (see the module docstring); distances are
    computed ``block`` rows at a time, so memory is ``O(block × max(N, M))``. Both sets need more
    than ``nearest_k`` rows.
    """
    k = int(nearest_k)
    if k < 1 or k != nearest_k:
        raise ParamsError(f"nearest_k must be a positive integer, got {nearest_k!r}.")
    x = as_features(real, "real features", min_rows=k + 1)
    y = as_features(synth, "synthetic features", min_rows=k + 1)
    check_same_dim(x, y)
    r_real = kth_nn_radii(x, k, block)
    r_synth = kth_nn_radii(y, k, block)
    inside_count = np.zeros(len(y))  # per synthetic row: how many real balls contain it
    recalled = np.zeros(len(x), dtype=bool)
    covered = np.zeros(len(x), dtype=bool)
    for s in range(0, len(x), block):
        d = pairwise_euclidean(x[s:s + block], y)  # real block × synthetic
        inside = d < r_real[s:s + block, None]
        inside_count += inside.sum(axis=0)
        covered[s:s + block] = d.min(axis=1) < r_real[s:s + block]
        recalled[s:s + block] = (d < r_synth[None, :]).any(axis=1)
    return {"precision": float((inside_count > 0).mean()), "recall": float(recalled.mean()),
            "density": float(inside_count.mean() / k), "coverage": float(covered.mean())}


# --- per-label (conditional) ---------------------------------------------------------------------

def label_matrix(labels: Any, n: int, name: str, label_names: Sequence[str] | None = None) -> pd.DataFrame:
    """A boolean ``[n, L]`` DataFrame from a 0/1 (or bool) DataFrame, or from one list of label names per row.

    In a 0/1 DataFrame, NaN and -1 (CheXpert's uncertain) count as absent. ``label_names`` selects
    and orders the columns (missing names raise). ``attrs["n_missing"]`` counts the cells read as
    absent because they are missing or not a number (NaN, ``None``, ``"yes"``), or, for lists, the
    rows whose list is missing: nothing is dropped silently.
    """
    if isinstance(labels, pd.DataFrame):
        df = labels.reset_index(drop=True)
        if label_names is not None:
            missing = [c for c in label_names if c not in df.columns]
            if missing:
                raise DataFormatError(f"{name}: no column(s) {missing}; columns are {list(df.columns)}.")
            df = df[list(label_names)]
        num = df.apply(pd.to_numeric, errors="coerce")
        n_missing = int(num.isna().to_numpy().sum())
        mat = num.fillna(0).eq(1)
    else:
        missing_row = [v is None or (isinstance(v, float) and np.isnan(v)) for v in labels]
        rows = [[] if m else ([v] if isinstance(v, str) else list(v)) for v, m in zip(labels, missing_row)]
        n_missing = int(sum(missing_row))
        names = list(label_names) if label_names is not None else sorted({str(lab) for r in rows for lab in r})
        mat = pd.DataFrame([[c in set(map(str, r)) for c in names] for r in rows], columns=names, dtype=bool)
    if len(mat) != n:
        raise DataFormatError(f"{name} has {len(mat)} rows but there are {n} feature rows.")
    mat.attrs["n_missing"] = n_missing
    return mat


def per_label_fidelity(real: Any, real_labels: Any, synth: Any, synth_labels: Any, *,
                       metrics: Sequence[str] = ("fid",), labels: Sequence[str] | None = None,
                       min_images: int = 2, nearest_k: int = 5, kid_kwargs: Mapping[str, Any] | None = None,
                       eps: float = FID_EPS, fid_method: Literal["sqrtm", "eigvals"] = "sqrtm") -> pd.DataFrame:
    """Each metric recomputed per label (CheXGenBench's conditional analysis, Table 2).

    ``real_labels``/``synth_labels``: per row, a 0/1 DataFrame (one column per label) or a list of
    label names (see :func:`label_matrix`); a synthetic row carries the labels of its prompt.
    ``labels``: which labels, in order (default: the union, sorted). Returns one row per label with
    ``n_real``, ``n_synth``, one column per metric, and ``note`` (why a value is NaN: a label with
    fewer than ``min_images`` rows on either side — or ``nearest_k + 1`` for PRDC — is reported, not
    dropped). Missing label cells (NaN) count as absent and are counted in
    ``attrs["n_missing_labels"]`` (``{"real": ..., "synth": ...}``, :func:`label_matrix`).
    """
    bad = [m for m in metrics if m not in FIDELITY_METRICS]
    if bad:
        raise ParamsError(f"Unknown fidelity metric(s) {bad}: use some of {', '.join(FIDELITY_METRICS)}.")
    x, y = np.asarray(real, dtype=np.float64), np.asarray(synth, dtype=np.float64)
    rl = label_matrix(real_labels, len(x), "real_labels", labels)
    sl = label_matrix(synth_labels, len(y), "synth_labels", labels)
    names = list(labels) if labels is not None else sorted(set(rl.columns) | set(sl.columns))
    rows = []
    for lab in names:
        rm = rl[lab].to_numpy() if lab in rl else np.zeros(len(x), bool)
        sm = sl[lab].to_numpy() if lab in sl else np.zeros(len(y), bool)
        row: dict[str, Any] = {"label": lab, "n_real": int(rm.sum()), "n_synth": int(sm.sum())}
        notes = []
        xr, ys = x[rm], y[sm]
        need_prdc = any(m in ("precision", "recall", "density", "coverage") for m in metrics)
        for m in metrics:
            row[m] = np.nan
        if min(len(xr), len(ys)) < max(2, min_images):
            notes.append(f"fewer than {max(2, min_images)} images")
        else:
            if "fid" in metrics:
                row["fid"] = fid(xr, ys, eps=eps, method=fid_method)
            if "kid" in metrics or "kid_std" in metrics:
                res = kid(xr, ys, **dict(kid_kwargs or {}))
                if "kid" in metrics:
                    row["kid"] = res.mean
                if "kid_std" in metrics:
                    row["kid_std"] = res.std
            if need_prdc:
                if min(len(xr), len(ys)) <= nearest_k:
                    notes.append(f"PRDC needs more than nearest_k={nearest_k} images")
                else:
                    pr = prdc(xr, ys, nearest_k=nearest_k)
                    for m in ("precision", "recall", "density", "coverage"):
                        if m in metrics:
                            row[m] = pr[m]
        row["note"] = "; ".join(notes)
        rows.append(row)
    out = pd.DataFrame(rows, columns=["label", "n_real", "n_synth", *metrics, "note"])
    out.attrs["n_missing_labels"] = {"real": rl.attrs["n_missing"], "synth": sl.attrs["n_missing"]}
    return out
