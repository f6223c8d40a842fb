"""The paper's equations as array functions (Eqs. 1–4; :mod:`radaudit.metrics.association` numbers them).

Count arrays are ``[V × k]``: one column per replicate (bootstrap resample, relabelling), so the CAD table, the
point estimate and every replicate go through the same code. :func:`wae` is Eq. (4) of a CAD table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["assoc_masks", "log_ratio", "wae", "wae_batch", "wae_names"]



# ----------------------------------------------------------------------------------------------
# the equations, vectorised over a trailing batch axis: count arrays are [V × k]


def log_ratio(c0: np.ndarray, c1: np.ndarray, alpha: float, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (1)–(2): s = log p_0/p_1 and Var[s] = 1/c̃_0 + 1/c̃_1 (counts [V × k] → [V × k])."""
    ct0, ct1 = c0 + alpha, c1 + alpha
    # p_g = c̃_g / (N_g + αV), N_g = Σ_w c_g(w): the denominators are per column (per replicate).
    log_denom0 = np.log(c0.sum(axis=0) + alpha * V)
    log_denom1 = np.log(c1.sum(axis=0) + alpha * V)
    s = np.log(ct0) - np.log(ct1) - log_denom0 + log_denom1
    var = 1.0 / ct0 + 1.0 / ct1
    return s, var


def assoc_masks(z_ref: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Words associated with groups[0] (z_ref ≥ τ, z_ref > 0) and groups[1] (z_ref ≤ −τ, z_ref < 0)."""
    return (z_ref >= tau) & (z_ref > 0), (z_ref <= -tau) & (z_ref < 0)


def wae_batch(cr0: np.ndarray, cr1: np.ndarray, cp0: np.ndarray, cp1: np.ndarray, *, alpha: float, V: int,
               tau: float, g: tuple[str, str]) -> dict[str, np.ndarray]:
    """Eq. (4) for every column of the [V × k] count arrays: the 8 WAE statistics, each shaped (k,)."""
    s_r, v_r = log_ratio(cr0, cr1, alpha, V)
    s_p, v_p = log_ratio(cp0, cp1, alpha, V)
    z_ref = s_r / np.sqrt(v_r)
    z2 = (s_p - s_r) ** 2 / (v_p + v_r)  # z_disp², Eq. (3)
    a0, a1 = assoc_masks(z_ref, tau)
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for wt, w in (("pred", cp0 + cp1), ("ref", cr0 + cr1)):
            wz = w * z2
            out[f"WAE_{wt}"] = wz.sum(axis=0) / w.sum(axis=0)
            out[f"WAE_{wt}_{g[0]}"] = (wz * a0).sum(axis=0) / (w * a0).sum(axis=0)
            out[f"WAE_{wt}_{g[1]}"] = (wz * a1).sum(axis=0) / (w * a1).sum(axis=0)
            out[f"delta_WAE_{wt}"] = out[f"WAE_{wt}_{g[0]}"] - out[f"WAE_{wt}_{g[1]}"]
    return out


def wae_names(g: tuple[str, str]) -> list[str]:
    """The names of the 8 WAE statistics of :func:`wae_batch` for groups ``g``, in table order."""
    return [n for wt in ("pred", "ref") for n in (f"WAE_{wt}", f"WAE_{wt}_{g[0]}", f"WAE_{wt}_{g[1]}", f"delta_WAE_{wt}")]


def wae(table: pd.DataFrame, *, assoc_z: float | None = None) -> dict[str, float]:
    """Weighted Association Erasure (Eq. 4) from a CAD table (:func:`cad`): point estimates only.

    Returns ``WAE_pred``, ``WAE_ref`` (ω = c^(pred) or c^(ref), over all V words), the
    group-specific ``WAE_<wt>_<g>`` over the words associated with g in the reference
    (z_ref ≥ τ for groups[0], z_ref ≤ −τ for groups[1]; τ = ``assoc_z``, default the table's
    z_neutral) and ``delta_WAE_<wt>`` = WAE_<wt>_<g0> − WAE_<wt>_<g1>. NaN where the weights sum
    to 0. For CIs and permutation p-values use :func:`wae_inference` / :func:`association_audit`.
    """
    g = table.attrs.get("groups", ("F", "M"))
    tau = float(table.attrs.get("z_neutral", 1.0) if assoc_z is None else assoc_z)
    z2 = table["z_disp"].to_numpy(float) ** 2
    a0, a1 = assoc_masks(table["z_ref"].to_numpy(float), tau)
    out: dict[str, float] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for wt in ("pred", "ref"):
            w = table[f"c_{wt}"].to_numpy(float)
            out[f"WAE_{wt}"] = float(np.sum(w * z2) / np.sum(w))
            out[f"WAE_{wt}_{g[0]}"] = float(np.sum(w * z2 * a0) / np.sum(w * a0))
            out[f"WAE_{wt}_{g[1]}"] = float(np.sum(w * z2 * a1) / np.sum(w * a1))
            out[f"delta_WAE_{wt}"] = out[f"WAE_{wt}_{g[0]}"] - out[f"WAE_{wt}_{g[1]}"]
    return out
