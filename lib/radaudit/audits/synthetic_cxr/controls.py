"""The computations behind two of the stand-ins' controls (issue 40): a re-ID threshold calibrated on one half of
the training patients and tested on the other, and the encoder's view accuracy read against a pixel probe.

**The split-calibrated re-ID threshold.** A prompt is flagged as memorised when the highest re-ID score of its
``n_seeds`` images exceeds a threshold (CheXGenBench §2.3 counts ``s_reid > δ`` with δ = 0.85 for the paper's
network; our stand-in network's scores sit on another scale, so its threshold is calibrated). The threshold is
the ``1 − fpr`` quantile of a **null**: for a training image, ``n_seeds`` label- and view-matched real images of
*other* patients, the max of their re-ID scores — what a generator that makes realistic, new patients would give.
The held-out real generator is exactly such a generator, so a threshold calibrated on the prompts it is then
tested on would pass that negative control by construction. Here the *training patients* are split in two
(:func:`patient_halves`, seeded, by patient so no patient's images sit on both sides): the threshold comes from
null prompts of the **calibration** half only, and every generator (memoriser, held-out real, the models) is
audited on prompts of the **audit** half only (:func:`split_calibration`). The held-out control is then an
out-of-sample test: it fails when the "held-out" images are not new patients (a leak), or when the threshold
does not carry over to new prompts and a new image pool.

Shares of flagged prompts get a **Wilson** 95% interval (:func:`radaudit.stats.wilson_ci`): the unit is the
prompt, the count binomial, and 0/n or n/n still get an interval of non-zero width (a clean control must clear
its bar with the whole interval, so the audit half must be large enough: with 0 of n flagged the upper bound is
``z²/(n + z²)``, ≤ 0.1 from n = 35; at a 1% false-positive rate, n = 100 clears it with up to 4 flagged).
Prompts of one patient are not independent (the demo has ~1.7 images per training patient), which the binomial
interval ignores; the note of the finding says so.

**The encoder's gain over the pixels.** A view (PA / AP) accuracy above the majority share says the encoder
sees the projection; a linear probe on the raw pixels (:func:`radaudit.audits.synthetic_cxr.models.view_correctness`)
says how much of it any linear model reads off the images. :func:`view_gain` is the encoder's accuracy minus the
probe's on the same test images, with a paired bootstrap CI over images (:func:`radaudit.stats.paired_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError
from radaudit.stats import paired_bootstrap, stable_seed, wilson_ci

__all__ = ["calibrated_threshold", "flag_share", "patient_halves", "split_calibration", "view_gain"]


def patient_halves(patient_ids: Iterable[Any], seed: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """``(calibration, audit)``: the distinct patients split in two, seeded and by patient.

    Patients are ordered by ``stable_seed(seed, "reid-half", patient)`` (the same order in every process) and
    the first ``⌊n/2⌋`` are the calibration half; the audit half gets the odd one out, because the controls'
    verdicts are read on it."""
    pids = sorted({str(p) for p in patient_ids})
    if len(pids) < 2:
        raise DataFormatError(f"The re-ID threshold needs at least two training patients to split; got {len(pids)}.")
    order = sorted(pids, key=lambda p: (stable_seed(seed, "reid-half", p), p))
    k = len(order) // 2
    return frozenset(order[:k]), frozenset(order[k:])


def calibrated_threshold(null_max: Sequence[float], fpr: float) -> float:
    """The ``1 − fpr`` quantile of the null maxima, ``method="higher"``: at most ``fpr`` of them lie above it
    (a prompt is flagged when its max re-ID is strictly above the threshold)."""
    x = np.asarray(null_max, dtype=float)
    x = x[np.isfinite(x)]
    if not len(x):
        raise DataFormatError("The re-ID null has no finite maxima to calibrate a threshold on.")
    if not 0 < fpr < 1:
        raise DataFormatError(f"fpr must be in (0, 1), got {fpr}.")
    return float(np.quantile(x, 1.0 - fpr, method="higher"))


def flag_share(maxima: Sequence[float], threshold: float, confidence: float = 0.95) -> dict[str, float]:
    """Share of prompts whose max re-ID exceeds ``threshold``, with its Wilson interval: ``share, low, high, k, n``
    (NaN with n = 0)."""
    mx = np.asarray(maxima, dtype=float)
    mx = mx[np.isfinite(mx)]
    k, n = int((mx > threshold).sum()), len(mx)
    if n == 0:
        return {"share": float("nan"), "low": float("nan"), "high": float("nan"), "k": 0, "n": 0}
    lo, hi = wilson_ci(k, n, confidence)
    return {"share": k / n, "low": lo, "high": hi, "k": k, "n": n}


def split_calibration(null: pd.DataFrame, audit: Mapping[str, pd.DataFrame], calibration_patients: Collection[str], *,
                      fpr: float, confidence: float = 0.95) -> dict[str, Any]:
    """Threshold from the calibration half, flags on the audit half.

    ``null``: one row per null prompt, columns ``patient_id`` and ``max_reid``; ``audit``: per generator, one row
    per audited prompt with the same columns. The threshold (:func:`calibrated_threshold`) uses only the null rows
    of ``calibration_patients``; each generator's share (:func:`flag_share`) only its rows of the *other* patients.
    Returns ``threshold``, ``n_null`` (calibration null prompts used), ``n_null_dropped`` (null rows of audit
    patients, left out), ``flags`` ``{generator: flag_share(...) + {"n_dropped": rows of calibration patients}}``."""
    cal = {str(p) for p in calibration_patients}
    for name, df in {"null": null, **audit}.items():
        missing = {"patient_id", "max_reid"} - set(df.columns)
        if missing:
            raise DataFormatError(f"{name!r} lacks column(s) {sorted(missing)} (need patient_id, max_reid).")
    in_cal = null["patient_id"].astype(str).isin(cal).to_numpy()
    thr = calibrated_threshold(null.loc[in_cal, "max_reid"].to_numpy(float), fpr)
    flags = {}
    for g, df in audit.items():
        keep = ~df["patient_id"].astype(str).isin(cal).to_numpy()
        flags[g] = {**flag_share(df.loc[keep, "max_reid"].to_numpy(float), thr, confidence),
                    "n_dropped": int((~keep).sum())}
    return {"threshold": thr, "fpr": float(fpr), "n_null": int(in_cal.sum()), "n_null_dropped": int((~in_cal).sum()),
            "flags": flags}


def view_gain(encoder_correct: Sequence[bool], pixel_correct: Sequence[bool], *, n_bootstrap: int = 1000,
              seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Encoder view accuracy minus pixel-probe view accuracy on the same images, with a paired bootstrap
    percentile CI over images (both accuracies on the same resampled images): ``gain, low, high, encoder,
    pixels, n``."""
    e = np.asarray(encoder_correct, dtype=float)
    p = np.asarray(pixel_correct, dtype=float)
    if e.shape != p.shape or e.ndim != 1 or len(e) < 2:
        raise DataFormatError(f"view_gain needs two aligned 1-D arrays of >= 2 images, got {e.shape} and {p.shape}.")
    t = paired_bootstrap((e, p), {"encoder": lambda a, b: float(a.mean()), "pixels": lambda a, b: float(b.mean())},
                         n_bootstrap=n_bootstrap, confidence=confidence, method="percentile", seed=seed,
                         differences=[("encoder", "pixels")])
    d = t.iloc[2]
    return {"gain": float(d["estimate"]), "low": float(d["low"]), "high": float(d["high"]),
            "encoder": float(e.mean()), "pixels": float(p.mean()), "n": int(len(e))}
