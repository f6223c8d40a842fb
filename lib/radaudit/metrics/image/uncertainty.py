"""95% bootstrap intervals for the fidelity metrics (FID, KID, precision/recall/density/coverage).

CheXGenBench reports FID, KID and PRDC as bare numbers (Tables 1–2). With a few hundred test images
— the demo, or a rare pathology in MIMIC-CXR — two generators' FIDs can differ by less than the
sampling noise, so every number here comes with an interval. The unit resampled is the **image**,
in both sets independently (real test images and synthetic images are two independent samples).

FID on resamples, fast (the Gram identity)
------------------------------------------
With ``A`` (``n_r × d``) and ``B`` (``n_s × d``) the centred feature rows, ``Σ_r = AᵀA/(n_r−1)`` and
``Σ_s = BᵀB/(n_s−1)``; the non-zero eigenvalues of ``Σ_r Σ_s`` are those of ``M Mᵀ`` with
``M = A Bᵀ / √((n_r−1)(n_s−1))`` (``n_r × n_s``), so::

    Tr((Σ_r Σ_s)^{1/2}) = Σ_i σ_i(M)  (the nuclear norm of M)

and ``FID = ‖μ_r − μ_s‖² + ‖A‖²_F/(n_r−1) + ‖B‖²_F/(n_s−1) − 2‖M‖_*`` needs an ``n_r × n_s`` SVD
instead of a ``d × d`` matrix root: exact (no ε offset is needed), and at d = 2048 with a few hundred
images about a thousand times faster — which makes 1,000 bootstrap replicates affordable. It equals
:func:`radaudit.metrics.image.fidelity.fid` up to rounding (tested).

Intervals
---------
FID and KID are biased upwards by finite samples, and a bootstrap resample (with repeated rows,
fewer distinct images) is biased more: the plain percentile interval sits above the estimate. The
default is therefore the **shifted** percentile interval of :mod:`radaudit.stats` (replicates minus
their mean bias), clipped at 0 for FID; the raw bias is returned in ``bias``. PRDC is bootstrapped
*conditionally on the k-NN radii of the full sets*: each of the four measures is a mean of a per-row
indicator (precision and density over synthetic rows, recall and coverage over real rows), and the
indicators are resampled — recomputing radii on resamples with repeated rows would give zero radii.
A mean of indicators has an unbiased bootstrap, so PRDC gets the plain percentile interval even when
``method="shifted"`` (a shifted interval could leave [0, 1]).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from radaudit.errors import ParamsError
from radaudit.metrics.image.fidelity import as_features, check_same_dim, kth_nn_radii, pairwise_euclidean
from radaudit.stats import interval_from_replicates, resample_groups

__all__ = ["fid_from_grams", "fid_gram", "fidelity_intervals", "gram_replicates", "one_blas_thread", "prdc_indicators"]

_PRDC = ("precision", "recall", "density", "coverage")

_METRICS = ("fid", "kid", "precision", "recall", "density", "coverage")


def fid_gram(real: Any, synth: Any) -> float:
    """FID of two feature sets by the Gram identity (module docstring); the same value as
    :func:`~radaudit.metrics.image.fidelity.fid` up to rounding."""
    x, y = as_features(real, "real features"), as_features(synth, "synthetic features")
    check_same_dim(x, y)
    return _fid_gram(x, y)


def _fid_gram(x: np.ndarray, y: np.ndarray) -> float:
    mx, my = x.mean(0), y.mean(0)
    a, b = x - mx, y - my
    nr, ns = len(x) - 1, len(y) - 1
    nuclear = _nuclear_norm((a @ b.T) / np.sqrt(nr * ns))
    diff = mx - my
    return float(diff @ diff + (a * a).sum() / nr + (b * b).sum() / ns - 2.0 * nuclear)


def prdc_indicators(real: Any, synth: Any, nearest_k: int = 5, block: int = 2048) -> dict[str, np.ndarray]:
    """The per-row indicators behind PRDC (Naeem et al. 2020): ``inside_count`` per synthetic row (how many
    real k-NN balls contain it), ``recalled`` and ``covered`` per real row. Their means are
    :func:`~radaudit.metrics.image.fidelity.prdc`'s values (precision = mean(inside_count > 0),
    density = mean(inside_count)/k, recall = mean(recalled), coverage = mean(covered))."""
    k = int(nearest_k)
    x = as_features(real, "real features", min_rows=k + 1)
    y = as_features(synth, "synthetic features", min_rows=k + 1)
    check_same_dim(x, y)
    r_real, r_synth = kth_nn_radii(x, k, block), kth_nn_radii(y, k, block)
    inside_count = np.zeros(len(y))
    recalled = np.zeros(len(x), dtype=bool)
    covered = np.zeros(len(x), dtype=bool)
    for s in range(0, len(x), block):
        d = pairwise_euclidean(x[s:s + block], y)
        inside_count += (d < r_real[s:s + block, None]).sum(axis=0)
        covered[s:s + block] = d.min(axis=1) < r_real[s:s + block]
        recalled[s:s + block] = (d < r_synth[None, :]).any(axis=1)
    return {"inside_count": inside_count, "recalled": recalled, "covered": covered}


def _nuclear_norm(m: np.ndarray) -> float:
    """Sum of singular values, as √ of the eigenvalues of the smaller of ``M Mᵀ`` / ``Mᵀ M`` (a symmetric
    eigenproblem: several times faster than an SVD at these sizes; rounding negatives clipped at 0)."""
    g = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    return float(np.sqrt(np.clip(np.linalg.eigvalsh(g), 0.0, None)).sum())


def fid_from_grams(kxx: np.ndarray, kyy: np.ndarray, kxy: np.ndarray) -> float:
    """FID from the (uncentred) Gram matrices of the two sets: ``kxx = X Xᵀ``, ``kyy = Y Yᵀ``, ``kxy = X Yᵀ``.

    Centring ``C = I − 11ᵀ/n`` on both sides: ``‖A‖²_F = tr(C kxx C)``, ``A Bᵀ = C_r kxy C_s`` and
    ``‖μ_r − μ_s‖² = mean(kxx) − 2 mean(kxy) + mean(kyy)``, so a bootstrap replicate only indexes
    these ``n × n`` matrices (no ``d``-dimensional work): with resampled rows ``ir`` (real) and ``is_``
    (synthetic), ``fid_from_grams(kxx[np.ix_(ir, ir)], kyy[np.ix_(is_, is_)], kxy[np.ix_(ir, is_)])`` is the
    FID of the resampled sets (the Gram identity of the module docstring; equal to
    :func:`~radaudit.metrics.image.fidelity.fid` up to rounding). Each set needs at least 2 rows."""
    nr, ns = len(kxx), len(kyy)
    tr_a = float(np.trace(kxx) - nr * kxx.mean())
    tr_b = float(np.trace(kyy) - ns * kyy.mean())
    cxy = kxy - kxy.mean(1, keepdims=True) - kxy.mean(0, keepdims=True) + kxy.mean()
    nuclear = _nuclear_norm(cxy / np.sqrt((nr - 1) * (ns - 1)))
    mean_diff = float(kxx.mean() - 2.0 * kxy.mean() + kyy.mean())
    return mean_diff + tr_a / (nr - 1) + tr_b / (ns - 1) - 2.0 * nuclear


def _cubic_kernel(gram: np.ndarray, d: int) -> np.ndarray:
    """KID's polynomial kernel ``(xᵀy/d + 1)³`` from linear Gram entries (cubed by two products: ``** 3`` goes
    through ``pow``, twice as slow on these arrays)."""
    k = gram / d + 1.0
    k *= k * k
    return k


def _mmd2_from_grams(kxx: np.ndarray, kyy: np.ndarray, kxy: np.ndarray, d: int) -> float:
    """Unbiased MMD² with KID's cubic kernel ``(xᵀy/d + 1)³``, from the linear Gram matrices."""
    m, n = len(kxx), len(kyy)
    pxx, pyy, pxy = _cubic_kernel(kxx, d), _cubic_kernel(kyy, d), _cubic_kernel(kxy, d)
    return float((pxx.sum() - np.trace(pxx)) / (m * (m - 1)) + (pyy.sum() - np.trace(pyy)) / (n * (n - 1))
                 - 2.0 * pxy.sum() / (m * n))


_CHUNK_ELEMENTS = 4_000_000
"""Replicates per batch of :func:`gram_replicates` in :func:`fidelity_intervals`: as many as keep three full-size
Gram blocks under this many float64s (32 MB; ~130 replicates of 100 + 100 images; the drawn rows' blocks are
smaller)."""


def _drawn(idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows each replicate drew and how often: ``(rows, counts)``, both ``[B × k]`` with ``k`` the most distinct
    rows any replicate drew; a replicate that drew fewer is padded with row 0 at count 0 (it adds nothing)."""
    counts = np.zeros((len(idx), n))
    np.add.at(counts, (np.arange(len(idx))[:, None], idx), 1.0)
    k = int((counts > 0).sum(axis=1).max())
    rows = np.argsort(counts == 0, axis=1, kind="stable")[:, :k]  # the drawn rows first, in row order
    return rows, np.take_along_axis(counts, rows, axis=1)


def gram_replicates(kxx: np.ndarray, kyy: np.ndarray, kxy: np.ndarray, ir: np.ndarray, is_: np.ndarray, d: int, *,
                    fid: bool = True, kid: bool = True) -> dict[str, np.ndarray]:
    """FID and unbiased KID (MMD², cubic kernel) of a batch of bootstrap replicates from the full sets' Gram
    matrices: replicate ``b`` resamples real rows ``ir[b]`` and synthetic rows ``is_[b]``.

    A resample repeats rows, so each replicate is computed on the rows it drew, weighted by how often it drew them
    (~63% of the rows: the eigenproblem is ~4x smaller). With counts ``c`` (real) and ``e`` (synthetic), the
    quantities of :func:`fid_from_grams` on the resampled sets are: the means ``cᵀK c / n²``; the traces
    ``Σ c_u K_uu``; and the doubly centred cross matrix ``A`` of the resampled rows, ``P_r A_u P_sᵀ`` with ``P`` the
    row-copying matrices (``PᵀP = diag(c)``), whose singular values are those of ``diag(√c) A_u diag(√e)`` — the
    same nuclear norm from a ``k_r × k_s`` matrix. KID's off-diagonal sums are ``cᵀP c − Σ c_u P_uu`` (copies of one
    row are distinct draws). Replicates of one batch are padded to its largest ``k`` with zero counts (zero rows:
    zero eigenvalues) and go to LAPACK in one stacked call. Equal to :func:`fid_from_grams` and the KID of the
    materialised resamples up to rounding (tested to 1e-10 relative). Returns ``{"fid": [B], "kid": [B]}`` (the
    requested ones).
    """
    ir, is_ = np.asarray(ir), np.asarray(is_)
    nr, ns = ir.shape[1], is_.shape[1]
    rr, cr = _drawn(ir, len(kxx))
    rs, cs = _drawn(is_, len(kyy))
    gxx = kxx[rr[:, :, None], rr[:, None, :]]
    gyy = kyy[rs[:, :, None], rs[:, None, :]]
    gxy = kxy[rr[:, :, None], rs[:, None, :]]
    out: dict[str, np.ndarray] = {}
    if fid:
        mean_xx = np.einsum("bi,bij,bj->b", cr, gxx, cr) / (nr * nr)
        mean_yy = np.einsum("bi,bij,bj->b", cs, gyy, cs) / (ns * ns)
        mean_xy = np.einsum("bi,bij,bj->b", cr, gxy, cs) / (nr * ns)
        tr_a = np.einsum("bi,bi->b", cr, np.diagonal(kxx)[rr]) - nr * mean_xx
        tr_b = np.einsum("bi,bi->b", cs, np.diagonal(kyy)[rs]) - ns * mean_yy
        row_mean = np.einsum("bij,bj->bi", gxy, cs) / ns
        col_mean = np.einsum("bi,bij->bj", cr, gxy) / nr
        centred = gxy - row_mean[:, :, None] - col_mean[:, None, :] + mean_xy[:, None, None]
        m = np.sqrt(cr)[:, :, None] * centred * np.sqrt(cs)[:, None, :] / np.sqrt((nr - 1) * (ns - 1))
        g = m @ m.transpose(0, 2, 1) if m.shape[1] <= m.shape[2] else m.transpose(0, 2, 1) @ m
        nuclear = np.sqrt(np.clip(np.linalg.eigvalsh(g), 0.0, None)).sum(axis=1)
        out["fid"] = mean_xx - 2.0 * mean_xy + mean_yy + tr_a / (nr - 1) + tr_b / (ns - 1) - 2.0 * nuclear
    if kid:
        pxx, pyy, pxy = _cubic_kernel(gxx, d), _cubic_kernel(gyy, d), _cubic_kernel(gxy, d)
        off_xx = np.einsum("bi,bij,bj->b", cr, pxx, cr) - np.einsum("bi,bii->b", cr, pxx)
        off_yy = np.einsum("bi,bij,bj->b", cs, pyy, cs) - np.einsum("bi,bii->b", cs, pyy)
        out["kid"] = (off_xx / (nr * (nr - 1)) + off_yy / (ns * (ns - 1))
                      - 2.0 * np.einsum("bi,bij,bj->b", cr, pxy, cs) / (nr * ns))
    return out


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread (``threadpoolctl``; the caller's setting comes back after):
    for loops of small matrix products and eigenproblems, where threads only add a synchronisation per call (see
    :func:`fidelity_intervals`), and whose values should not depend on the machine's core count."""
    return threadpool_limits(1, user_api="blas")


def fidelity_intervals(real: Any, synth: Any, *, metrics: Sequence[str] = _METRICS, n_bootstrap: int = 1000,
                       seed: int = 0, confidence: float = 0.95, nearest_k: int = 5,
                       method: str = "shifted") -> pd.DataFrame:
    """Each fidelity metric with a bootstrap CI over images (see the module docstring).

    Long table: ``metric, estimate, low, high, bias, se, n_real, n_synth, n_bootstrap, method``. KID
    here is the unbiased MMD² of the full sets (CheXGenBench's subset size is ``min(n_real,
    n_synth)``, so with equal sizes its single-subset value is this one); the subset-mean ± std
    form is :func:`~radaudit.metrics.image.fidelity.kid`. ``method``: ``"shifted"`` (default),
    ``"percentile"`` or ``"basic"``. Cost: three Gram matrices once, then ``O(n³)`` per replicate
    (an ``n × n`` symmetric eigenproblem), whatever the feature dimension; the replicates go in batches
    (:func:`gram_replicates`).

    The Gram matrices and replicates run on one BLAS thread: thousands of small ``n × n`` products and
    eigenproblems gain nothing from threads but a synchronisation per call, which turns into a wait for a
    descheduled thread whenever another process shares the cores (two notebooks at once took 10x as long:
    ``radaudit.run_many``). With one thread the values no longer depend on the machine's core count or the
    caller's thread settings (tested); they differ from a two-thread run's in the eighth significant digit
    (BLAS sums in another order).
    """
    bad = [m for m in metrics if m not in _METRICS]
    if bad:
        raise ParamsError(f"Unknown metric(s) {bad}; use any of {', '.join(_METRICS)}.")
    if int(n_bootstrap) < 2:
        raise ParamsError(f"n_bootstrap must be >= 2, got {n_bootstrap}.")
    x, y = as_features(real, "real features"), as_features(synth, "synthetic features")
    check_same_dim(x, y)
    n_r, n_s, d = len(x), len(y), x.shape[1]
    estimates: dict[str, float] = {}
    reps: dict[str, np.ndarray] = {m: np.empty(int(n_bootstrap)) for m in metrics}
    want_prdc = [m for m in metrics if m in _PRDC]
    with one_blas_thread():  # for the Gram matrices and the replicates (docstring)
        kxx, kyy, kxy = x @ x.T, y @ y.T, x @ y.T
        ind = prdc_indicators(x, y, nearest_k) if want_prdc else None
        if "fid" in metrics:
            estimates["fid"] = fid_from_grams(kxx, kyy, kxy)
        if "kid" in metrics:
            estimates["kid"] = _mmd2_from_grams(kxx, kyy, kxy, d)
        if ind is not None:
            k = int(nearest_k)
            estimates.update(precision=float((ind["inside_count"] > 0).mean()),
                             density=float(ind["inside_count"].mean() / k),
                             recall=float(ind["recalled"].mean()), coverage=float(ind["covered"].mean()))
        # the two sets are independent samples: each replicate resamples the real rows, then the synthetic ones
        draws = list(resample_groups((n_r, n_s), int(n_bootstrap), seed=seed))
        ir_all = np.stack([ir for ir, _ in draws])
        is_all = np.stack([is_ for _, is_ in draws])
        if "fid" in metrics or "kid" in metrics:
            step = max(1, _CHUNK_ELEMENTS // (n_r * n_r + n_s * n_s + n_r * n_s))
            for start in range(0, len(draws), step):
                chunk = slice(start, start + step)
                got = gram_replicates(kxx, kyy, kxy, ir_all[chunk], is_all[chunk], d,
                                      fid="fid" in metrics, kid="kid" in metrics)
                for m, values in got.items():
                    reps[m][chunk] = values
        if ind is not None:
            ic = ind["inside_count"][is_all]
            vals = {"precision": (ic > 0).mean(axis=1), "density": ic.mean(axis=1) / nearest_k,
                    "recall": ind["recalled"][ir_all].mean(axis=1), "coverage": ind["covered"][ir_all].mean(axis=1)}
            for m in want_prdc:
                reps[m][:] = vals[m]
    rows = []
    for m in metrics:
        # PRDC values are means of indicators: their bootstrap is unbiased, so the plain percentile interval
        # (which stays inside [0, 1] for precision/recall/coverage) is used instead of the shifted one.
        m_method = "percentile" if method == "shifted" and m in _PRDC else method
        r = interval_from_replicates(estimates[m], reps[m], None, m_method, confidence, min(n_r, n_s), m, 0.05)
        low, high = r.low, r.high
        if m == "fid":
            low, high = max(low, 0.0), max(high, 0.0)
        rows.append({"metric": m, "estimate": estimates[m], "low": low, "high": high,
                     "bias": float(np.nanmean(reps[m]) - estimates[m]), "se": r.se, "n_real": n_r, "n_synth": n_s,
                     "n_bootstrap": int(n_bootstrap), "method": r.method})
    return pd.DataFrame(rows)
