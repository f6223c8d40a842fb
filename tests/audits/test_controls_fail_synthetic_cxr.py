"""Issue 40: every control of the synthetic_cxr run can fail. One test per control id feeds the library functions a
broken stand-in or a planted defect (small synthetic arrays, nothing trained) and checks that the control's finding is
not ``shown`` after the central rules (:func:`radaudit.findings.settle`), and that a finding resting on it falls with
it. Plus the hand-computed split calibration: threshold from one half of the patients, flags on the other."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.synthetic_cxr import controls as C
from radaudit.audits.synthetic_cxr import findings as F
from radaudit.audits.synthetic_cxr import study as S
from radaudit.findings import settle
from radaudit.stats import wilson_ci

N_SEEDS = 5


def _by_id(findings):
    return {f.id: f for f in settle(findings)}


class _CosineScorer:
    """A stand-in re-ID scorer on feature vectors: (1 + cosine) / 2, so a copy scores ~1 and unrelated vectors ~0.5."""

    def __call__(self, real, synth):
        a, b = np.asarray(real, float), np.asarray(synth, float)
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        return (1 + cos) / 2


def _null_and_audit(heldout: str = "new", memoriser: str = "copy", n_patients: int = 240, d: int = 64, seed: int = 0):
    """Per patient one training "image" (a feature vector). The null pairs every training image with N_SEEDS vectors
    of other (new) patients; the held-out control gives new patients' vectors (or, planted, copies of the training
    image); the memoriser gives noisy copies (or, planted, unrelated vectors)."""
    rng = np.random.default_rng(seed)
    train = rng.normal(size=(n_patients, d))
    pids = [f"p{i}" for i in range(n_patients)]
    scorer = _CosineScorer()

    def maxima(make):
        ref = np.repeat(train, N_SEEDS, axis=0)
        return scorer(ref, make(ref)).reshape(-1, N_SEEDS).max(axis=1)

    def new(ref):
        return rng.normal(size=ref.shape)

    def copy(ref):
        return ref + 0.02 * rng.normal(size=ref.shape)

    null = pd.DataFrame({"patient_id": pids, "max_reid": maxima(new)})
    audit = {"held-out real": pd.DataFrame({"patient_id": pids, "max_reid": maxima(new if heldout == "new" else copy)}),
             "memoriser": pd.DataFrame({"patient_id": pids, "max_reid": maxima(copy if memoriser == "copy" else new)})}
    cal, _ = C.patient_halves(pids, seed=0)
    return C.split_calibration(null, audit, cal, fpr=0.01)


def _privacy_findings(res, overlap_table=None):
    thr = {"threshold": res["threshold"], "fpr": res["fpr"], "n_null": res["n_null"], "statistic": "max over 5 seeds"}
    if overlap_table is None:
        overlap_table = pd.DataFrame({"generator": ["deg"], "n_images": [10], "same_patient": [0],
                                      "counts_toward_overlap": [True]})
    return _by_id([
        F.overlap(overlap_table),
        F.flagged("memoriser_flagged", "m", res["flags"]["memoriser"], thr, positive=True),
        F.flagged("heldout_real_flagged", "h", res["flags"]["held-out real"], thr, positive=False),
        F.diffusion_flagged({"share": 0.5, "low": 0.4, "high": 0.6, "k": 60, "n": 120}, thr, "diffusion"),
    ])


def test_clean_stand_ins_pass_every_privacy_control():
    """The baseline the failing tests below break: new patients are not flagged, copies are, with whole CIs."""
    res = _null_and_audit()
    f = _privacy_findings(res)
    assert res["flags"]["held-out real"]["n"] == 120 and res["flags"]["held-out real"]["n_dropped"] == 120
    assert f["heldout_real_flagged"].verdict == "shown" and f["heldout_real_flagged"].ci[1] <= 0.1
    assert f["memoriser_flagged"].verdict == "shown" and f["memoriser_flagged"].ci[0] >= 0.9
    assert f["privacy_reference_overlap"].verdict == "shown"
    assert f["diffusion_flagged"].verdict == "shown"  # all three controls passed


def test_heldout_real_control_fails_when_the_heldout_images_are_training_copies():
    res = _null_and_audit(heldout="copy")
    f = _privacy_findings(res)
    assert res["flags"]["held-out real"]["share"] == 1.0
    assert f["heldout_real_flagged"].verdict == "not shown"
    assert "flags new patients' real images as memorised" in f["heldout_real_flagged"].note
    assert f["diffusion_flagged"].verdict == "not shown" and "heldout_real_flagged" in f["diffusion_flagged"].note


def test_memoriser_control_fails_when_the_memoriser_does_not_copy():
    res = _null_and_audit(memoriser="new")
    f = _privacy_findings(res)
    assert res["flags"]["memoriser"]["share"] <= 0.1
    assert f["memoriser_flagged"].verdict == "not shown"
    assert f["diffusion_flagged"].verdict == "not shown" and "memoriser_flagged" in f["diffusion_flagged"].note


def test_privacy_reference_overlap_control_fails_on_a_contaminated_reference():
    bad = pd.DataFrame({"generator": ["deg", "mem"], "n_images": [10, 10], "same_patient": [2, 10],
                        "counts_toward_overlap": [True, False]})
    f = _privacy_findings(_null_and_audit(), overlap_table=bad)
    assert f["privacy_reference_overlap"].value == 2 and f["privacy_reference_overlap"].verdict == "not shown"
    assert f["diffusion_flagged"].verdict == "not shown"


def _gap_findings(card, dose_values):
    fidelity = pd.DataFrame({"generator": ["d", "h"], "encoder": "cxr", "metric": "fid", "estimate": [25.0, 7.5],
                             "low": [20.0, 5.0], "high": [30.0, 10.0]})
    dose = pd.DataFrame({"level": range(len(dose_values)), "encoder": "cxr", "metric": "fid", "estimate": dose_values,
                         "low": dose_values, "high": dose_values})
    return _by_id([F.encoder_view(card), F.dose(S.dose_spearman(dose)),
                   F.gap(fidelity, {"gap": 17.5, "low": 9.0, "high": 25.0}, "d", "h")])


def test_encoder_view_control_fails_for_an_encoder_at_the_majority_share():
    good = {"metrics": {"view_accuracy": 0.9, "view_majority": 0.52, "n_eval": 200}}
    f = _gap_findings(good, [1.0, 2, 3, 4, 5])
    assert f["encoder_view_accuracy"].verdict == "shown" and f["diffusion_vs_heldout_fid_gap_cxr"].verdict == "shown"
    blind = {"metrics": {"view_accuracy": 0.52, "view_majority": 0.52, "n_eval": 200}}  # a view head that guesses
    f = _gap_findings(blind, [1.0, 2, 3, 4, 5])
    assert f["encoder_view_accuracy"].verdict == "not shown"
    gap = f["diffusion_vs_heldout_fid_gap_cxr"]
    assert gap.verdict == "not shown" and "encoder_view_accuracy (not shown)" in gap.note


def test_degrader_dose_control_fails_when_fid_does_not_follow_the_dose():
    good = {"metrics": {"view_accuracy": 0.9, "view_majority": 0.52, "n_eval": 200}}
    f = _gap_findings(good, [1.0, 3, 2, 4, 5])  # an encoder whose FID drops at one step of damage
    assert f["degrader_dose_spearman"].value < 1 and f["degrader_dose_spearman"].verdict == "not shown"
    assert f["diffusion_vs_heldout_fid_gap_cxr"].verdict == "not shown"


# --- the split calibration, by hand ------------------------------------------------------------------------------

def test_split_calibration_by_hand():
    """Calibration patients a, b: null maxima 0.1 ... 0.8, 0.9, 0.95 (10 values); fpr 0.2 -> the 0.8 quantile with
    method "higher": virtual index 0.8 * 9 = 7.2 -> index 8 -> 0.9 (1 of 10 above it). The audit patients' null rows
    (0.99, 0.99) must not move it (with them the index 9.6 -> 10 of 12 sorted values would be 0.99). Flags: only the
    rows of audit patients c, d: 0.95 > 0.9 and 0.5 < 0.9 -> 1 of 2; the calibration patient's row 0.97 is dropped."""
    null = pd.DataFrame({"patient_id": ["a"] * 5 + ["b"] * 5 + ["c", "d"],
                         "max_reid": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.99]})
    audit = {"g": pd.DataFrame({"patient_id": ["c", "d", "a"], "max_reid": [0.95, 0.5, 0.97]})}
    res = C.split_calibration(null, audit, {"a", "b"}, fpr=0.2)
    assert res["threshold"] == 0.9 and res["n_null"] == 10 and res["n_null_dropped"] == 2
    g = res["flags"]["g"]
    assert (g["k"], g["n"], g["share"], g["n_dropped"]) == (1, 2, 0.5, 1)
    assert (g["low"], g["high"]) == pytest.approx(wilson_ci(1, 2))
    # hand-computed Wilson bounds of 1/2: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964
    z = 1.959963984540054
    c, h = (0.5 + z * z / 4) / (1 + z * z / 2), z * np.sqrt(0.25 / 2 + z * z / 16) / (1 + z * z / 2)
    assert (g["low"], g["high"]) == pytest.approx((c - h, c + h))


def test_flag_share_gives_zero_and_full_shares_a_nonzero_interval():
    zero = C.flag_share([0.1] * 100, 0.5)
    assert zero["share"] == 0 and zero["low"] == 0 and zero["high"] == pytest.approx(1.959964 ** 2 / (100 + 1.959964 ** 2))
    full = C.flag_share([0.9] * 100, 0.5)
    assert full["share"] == 1 and full["high"] == pytest.approx(1.0) and full["low"] < 1


def test_patient_halves_are_seeded_by_patient_and_disjoint():
    pids = [f"p{i}" for i in range(11)] * 2  # every patient twice
    cal, aud = C.patient_halves(pids, seed=0)
    assert len(cal) == 5 and len(aud) == 6 and not cal & aud and cal | aud == {f"p{i}" for i in range(11)}
    assert C.patient_halves(pids, seed=0) == (cal, aud)
    assert C.patient_halves(pids, seed=1) != (cal, aud)


def test_calibrated_threshold_by_hand():
    assert C.calibrated_threshold([0.3, 0.1, 0.2, 0.4], 0.25) == 0.4  # index 0.75 * 3 = 2.25 -> 3
    assert C.calibrated_threshold([0.3, 0.1, 0.2, 0.4], 0.5) == 0.3  # index 1.5 -> 2


def test_view_gain_by_hand():
    """Encoder right on 8 of 10, pixels on 5 of 10 of the same images: gain 0.3; a paired resample of identical
    columns gives a gain of exactly 0 with a zero-width interval."""
    enc = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], bool)
    pix = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], bool)
    g = C.view_gain(enc, pix, n_bootstrap=200)
    assert g["gain"] == pytest.approx(0.3) and g["encoder"] == 0.8 and g["pixels"] == 0.5 and g["n"] == 10
    assert g["low"] <= 0.3 <= g["high"]
    same = C.view_gain(enc, enc, n_bootstrap=50)
    assert same["gain"] == 0 and same["low"] == same["high"] == 0


def test_view_gain_finding_says_the_encoder_adds_nothing_when_its_ci_includes_zero():
    f = _by_id([F.view_gain({"gain": 0.009, "low": -0.10, "high": 0.13, "encoder": 0.682, "pixels": 0.673, "n": 107})])
    v = f["encoder_view_gain_over_pixels"]
    assert v.verdict == "partly" and "adds nothing over the pixels" in v.note
    up = _by_id([F.view_gain({"gain": 0.2, "low": 0.1, "high": 0.3, "encoder": 0.9, "pixels": 0.7, "n": 107})])
    assert up["encoder_view_gain_over_pixels"].verdict == "shown"
    assert "adds nothing" not in up["encoder_view_gain_over_pixels"].note


def test_paper_delta_finding_names_the_stand_ins_ceiling():
    f = F.paper_delta({"share": 0.0, "low": 0.0, "high": 0.037, "k": 0, "n": 100}, 0.85, 0.81, None)
    assert f.verdict == "not shown" and "0.810, below δ" in f.note and f.bar.value == 0.9
    assert "trained minutes at 64 px" in f.note  # no threshold: no patient count, and none typed in


def test_paper_delta_note_counts_the_runs_training_patients():
    threshold = {"threshold": 0.748, "n_calibration_patients": 97, "n_audit_patients": 98}
    f = F.paper_delta({"share": 0.0, "low": 0.0, "high": 0.037, "k": 0, "n": 100}, 0.85, 0.81, threshold)
    assert "trained minutes on 195 patients at 64 px" in f.note and "at the calibrated threshold 0.748" in f.note


def test_reid_flags_reads_only_the_audit_half():
    """The study-level wrapper maps each prompt to its patient and hands it to split_calibration."""
    frame = pd.DataFrame({"study_id": ["s1", "s2", "s3"], "patient_id": ["a", "c", "d"], "split": "train"})
    null = {"null": pd.DataFrame({"patient_id": ["a"] * 4, "max_reid": [0.1, 0.2, 0.3, 0.4]}), "fpr": 0.25,
            "threshold": 0.4, "calibration_patients": frozenset({"a"})}
    pp = {"g": pd.DataFrame({"prompt": ["s1", "s2", "s3"], "max_reid": [0.9, 0.9, 0.1]})}
    study = types.SimpleNamespace(frame=frame)
    got = S.reid_flags(null, pp, study)["g"]
    assert (got["k"], got["n"], got["n_dropped"]) == (1, 2, 1)
    at = S.reid_flags(null, pp, study, threshold=0.05)["g"]
    assert (at["k"], at["n"]) == (2, 2)
