"""Issue 21, the synthetic_cxr half: the controls that make the demo's stand-ins evidence — reference images drawn
without replacement and never from the prompt's patient, a re-ID threshold calibrated on the max over seeds,
graded degrader doses, per-label FID intervals, significance only with enough positives, and the findings'
verdict rules (each test can fail: it feeds the rule both a passing and a failing input)."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pandas as pd
import pytest

from radaudit.audits.synthetic_cxr import data as D
from radaudit.audits.synthetic_cxr import findings as F
from radaudit.audits.synthetic_cxr import generators as G
from radaudit.audits.synthetic_cxr import params as P
from radaudit.audits.synthetic_cxr import study as S
from radaudit.audits.synthetic_cxr.aurocs import paired_auroc_differences
from radaudit.audits.synthetic_cxr.models import _views
from radaudit.audits.synthetic_cxr.tables import per_label_wide


@pytest.fixture(scope="module")
def frame(shared_data):
    return D.demo_frame(shared_data, seed=0)


@pytest.fixture(scope="module")
def ctx(frame):
    return G.GenerationContext(frame=frame, size=16)


# --- reference images: without replacement, never the prompt's patient -------------------------------------

def test_heldout_real_is_drawn_without_replacement_across_chunks(ctx, frame, tmp_path):
    req = G.fidelity_requests(frame, "test", k=1)
    pool = frame[frame["split"] == "holdout"]
    assigned = G.assign_sources("heldout_real", req, context=ctx)
    ids = assigned["pool_study_id"]
    assert ids.nunique() == min(len(req), len(pool))  # 107 prompts, 106 held-out images: all used, one twice
    assert set(ids) <= set(pool["study_id"])
    # generate_set assigns on the whole frame before it chunks: chunks of 16 still give distinct images
    imgs = G.generate_set("heldout_real", req.iloc[:60], tmp_path, context=ctx, chunk_size=16)
    flat = {imgs[i].tobytes() for i in range(len(imgs))}
    assert len(flat) == 60
    # the old behaviour (with replacement) repeats images: the check above can fail
    with_repl, _ = G.match_pool(req, pool, "heldout_real", distinct=False)
    assert len(set(with_repl)) < len(req) - 1


def test_degrader_never_draws_the_prompts_patient(ctx, frame):
    req = G.privacy_requests(frame, n_prompts=60, n_seeds=5, seed=0)
    got = G.assign_sources("degrader", req, context=ctx)
    assert (got["pool_patient_id"].astype(str) != got["source_patient_id"].astype(str)).all()
    assert (got["pool_study_id"] != got["source_study_id"]).all()
    old = G.assign_sources("degrader", req, context=ctx, other_patient=False, distinct=False)
    assert (old["pool_patient_id"].astype(str) == old["source_patient_id"].astype(str)).any()  # the contamination
    mem = G.assign_sources("memoriser", req, context=ctx)
    assert (mem["pool_study_id"] == mem["source_study_id"]).all()  # the positive control copies by design


def test_match_pool_distinct_uses_every_image_once_per_round():
    pool = pd.DataFrame({"study_id": list("abcd"), "labels": [["X"]] * 4, "view": ["PA"] * 4,
                         "patient_id": ["1", "1", "2", "3"]})
    req = pd.DataFrame({"labels": [["X"]] * 8, "view": ["PA"] * 8, "seed": range(8)})
    ids, _ = G.match_pool(req, pool, "t", distinct=True)
    assert sorted(ids[:4]) == list("abcd") and sorted(ids[4:]) == list("abcd")
    req = req.assign(source_patient_id="1")
    ids, _ = G.match_pool(req, pool, "t", other_patient=True)
    assert set(ids) <= {"c", "d"}


def test_privacy_reference_overlap_counts_shared_patients():
    req = pd.DataFrame({"source_study_id": ["s1", "s2"], "source_patient_id": ["p1", "p2"],
                        "pool_study_id": ["s1", "x"], "pool_patient_id": ["p1", "p9"]})
    clean = req.assign(pool_study_id=["x", "y"], pool_patient_id=["p8", "p9"])
    sets = {"mem": {"privacy": (None, req)}, "deg": {"privacy": (None, clean)},
            "bad": {"privacy": (None, req)}}
    gens = [types.SimpleNamespace(name="mem", kind="memoriser"), types.SimpleNamespace(name="deg", kind="degrader"),
            types.SimpleNamespace(name="bad", kind="degrader")]
    t = S.privacy_reference_overlap(sets, gens).set_index("generator")
    assert t.loc["deg", "same_patient"] == 0 and t.loc["bad", "same_patient"] == 1 and t.loc["bad", "same_image"] == 1
    f = F.overlap(t.reset_index())
    assert f.value == 1 and f.verdict == "not shown"  # the memoriser's own overlap is not counted
    f = F.overlap(t.drop(index="bad").reset_index())
    assert f.value == 0 and f.verdict == "shown"


# --- the re-ID threshold on the max over seeds ----------------------------------------------------------------

class _RandomScorer:
    """Scores unrelated pairs ~U(0, 0.5) and identical images 0.99 (a perfect memorisation detector)."""

    def __call__(self, real, synth):
        out = []
        for a, b in zip(real, synth):
            a, b = np.asarray(a), np.asarray(b)
            out.append(0.99 if np.abs(a - b).max() < 0.05 else
                       float(np.random.default_rng(int(1e6 * abs(float(a.sum() - b.sum())))).uniform(0, 0.5)))
        return np.array(out)


def test_threshold_is_calibrated_on_the_max_over_seeds(frame, ctx):
    """The null: training images of the calibration half of the patients (issue 40), each ``rounds`` times with
    ``n_seeds`` matched test images of other patients; its max over seeds, not single pairs."""
    train = frame[frame["split"] == "train"].reset_index(drop=True)
    test = frame[frame["split"] == "test"].reset_index(drop=True)
    study = types.SimpleNamespace(frame=frame, train_meta=train, test_meta=test, test=ctx.pixels(test["study_id"]),
                                  context=ctx)
    null = S.reid_null_threshold(study, _RandomScorer(), n_seeds=5, fpr=0.05, rounds=2, seed=0, n_prompts=40)
    assert null["n_null"] == 2 * 40 and null["statistic"] == "max over 5 seeds" and null["n_calibration_prompts"] == 40
    assert (null["null_max"] > null["threshold"]).mean() <= 0.05
    # a per-pair threshold at the same rate is lower: applied to the max it lets far more than 5% through
    assert null["pair_threshold"] < null["threshold"]
    assert (null["null_max"] > null["pair_threshold"]).mean() > 0.1
    # calibrated on one half of the training patients only; the privacy prompts are drawn from the other half
    cal, audit = S.reid_halves(frame, 0)
    assert (null["calibration_patients"], null["audit_patients"]) == (cal, audit) and not cal & audit
    assert set(null["null"]["patient_id"]) <= cal
    assert set(train["patient_id"].astype(str)) == cal | audit
    req = G.privacy_requests(frame, n_prompts=60, n_seeds=5, seed=0, patients=audit)
    assert set(req["source_patient_id"]) <= audit and req["source_study_id"].nunique() == 60


def test_flagged_share_and_the_control_verdicts():
    from radaudit.findings import settle

    pp = pd.DataFrame({"max_reid": [0.99] * 19 + [0.2]})
    thr = {"threshold": 0.5, "statistic": "max over 5 seeds", "fpr": 0.01, "n_null": 500}
    s = S.flagged_share(pp, 0.5)
    assert s["share"] == 0.95 and s["low"] < 0.95 < s["high"] and s["k"] == 19
    # 19 of 20 is >= 0.9 but its Wilson CI reaches below 0.9: the central rule makes it partly, not shown
    mem, held = settle([F.flagged("memoriser_flagged", "m", s, thr, positive=True),
                        F.flagged("heldout_real_flagged", "h", s, thr, positive=False)])
    assert mem.verdict == "partly" and mem.bar.op == ">=" and mem.bar.value == 0.9
    assert held.verdict == "not shown" and held.bar.op == "<=" and held.bar.value == 0.1
    big = S.flagged_share(pd.DataFrame({"max_reid": [0.99] * 100}), 0.5)
    assert settle([F.flagged("memoriser_flagged", "m", big, thr, positive=True)])[0].verdict == "shown"
    low = S.flagged_share(pd.DataFrame({"max_reid": [0.1] * 20}), 0.5)
    mem, held = settle([F.flagged("memoriser_flagged", "m", low, thr, positive=True),
                        F.flagged("heldout_real_flagged", "h", low, thr, positive=False)])
    assert mem.verdict == "not shown"
    assert held.verdict == "partly" and held.ci[1] > 0.1  # 0 of 20: too few prompts to clear <= 0.1 with the CI
    none = S.flagged_share(pd.DataFrame({"max_reid": [0.1] * 40}), 0.5)
    assert settle([F.flagged("heldout_real_flagged", "h", none, thr, positive=False)])[0].verdict == "shown"


# --- dose-response, Table 2 intervals, the FID gap --------------------------------------------------------------

def _dose(values, metric="fid", enc="cxr"):
    return pd.DataFrame({"level": range(len(values)), "encoder": enc, "metric": metric, "estimate": values,
                         "low": values, "high": values})


def test_dose_spearman_and_its_verdict():
    good = pd.concat([_dose([1.0, 2, 3, 4, 5]), _dose([0.9, 0.8, 0.5, 0.2, 0.1], "precision")])
    rho = S.dose_spearman(good).set_index("metric")
    assert rho.loc["fid", "spearman"] == 1.0 and rho.loc["fid", "monotone"]
    assert rho.loc["precision", "spearman"] == -1.0 and rho.loc["precision", "monotone"]
    assert F.dose(S.dose_spearman(good)).verdict == "shown"
    bad = S.dose_spearman(_dose([1.0, 3, 2, 4, 5]))
    assert bad["spearman"].iloc[0] < 1 and F.dose(bad).verdict == "not shown"
    assert F.dose(S.dose_spearman(_dose([1.0, 2, 3]))).verdict == "not shown"  # fewer than 4 levels
    assert F.dose(None).verdict == "n/a"


def test_degrader_levels_are_graded_on_the_same_sources(ctx, frame):
    req = G.assign_sources("degrader", G.fidelity_requests(frame, "test").iloc[:8], context=ctx)
    src = ctx.pixels(req["pool_study_id"])
    dist = [float(np.sqrt(((G.generate("degrader", req, context=ctx, **lvl) - src) ** 2).mean()))
            for lvl in P.DEFAULT_DOSE_LEVELS]
    assert dist[0] == 0.0 and all(b > a for a, b in zip(dist, dist[1:]))  # level 0 = the source, then worse
    assert len(P.DEFAULT_DOSE_LEVELS) >= 4


def test_per_label_fid_has_intervals_and_blank_small_labels():
    rng = np.random.default_rng(0)
    real, synth = rng.normal(size=(60, 6)), rng.normal(size=(60, 6)) + 0.5
    labs = [["A"]] * 40 + [["B"]] * 17 + [["C"]] * 3
    t = S.per_label_intervals(real, labs, {"g": (synth, labs)}, ["A", "B", "C"], min_images=5, n_bootstrap=50)
    t = t.set_index("label")
    assert (t.loc[["A", "B"], "fid_low"] <= t.loc[["A", "B"], "fid_high"]).all()
    assert t.loc["B", "fid_high"] - t.loc["B", "fid_low"] > t.loc["A", "fid_high"] - t.loc["A", "fid_low"]
    assert np.isnan(t.loc["C", "fid"]) and "fewer than 5" in t.loc["C", "note"]
    wide = per_label_wide(t.reset_index(), ["A", "B", "C"])
    assert wide.loc["g", "A"].count("[") == 1 and wide.loc["g", "C"].startswith("n/a")


def test_fid_gap_interval_and_encoder_agreement():
    rng = np.random.default_rng(1)
    real = rng.normal(size=(80, 5))
    near, far = rng.normal(size=(80, 5)), rng.normal(size=(80, 5)) + 1.5
    g = S.fid_gap(real, far, near, n_bootstrap=100)
    assert g["gap"] > 0 and g["low"] > 0
    g0 = S.fid_gap(real, near, rng.normal(size=(80, 5)), n_bootstrap=100)
    assert g0["low"] < 0 < g0["high"]
    fid = pd.DataFrame({"generator": ["a", "b", "c"] * 2, "encoder": ["cxr"] * 3 + ["inception"] * 3,
                        "metric": "fid", "estimate": [1.0, 2, 3, 10, 20, 30]})
    assert S.encoder_agreement(fid)["spearman"] == 1.0
    fid.loc[5, "estimate"] = 5.0
    agr = S.encoder_agreement(fid)
    assert agr["spearman"] < 1 and agr["discordant_pairs"] == 2
    assert F.fid_order(agr).verdict == "not shown"


def test_gap_verdict_reads_the_paired_ci_against_zero():
    """The gap's paired bootstrap CI is read against > 0 by the central rule (issue 40); whether the two Table-1
    intervals overlap is reported in the note; the gap rests on the encoder's controls."""
    from radaudit.findings import settle

    def fidelity(dl, dh, hl, hh):
        return pd.DataFrame({"generator": ["d", "h"], "encoder": "cxr", "metric": "fid", "estimate": [(dl + dh) / 2,
                             (hl + hh) / 2], "low": [dl, hl], "high": [dh, hh]})
    apart = F.gap(fidelity(20, 30, 5, 10), {"gap": 17.5, "low": 9, "high": 25}, "d", "h")
    assert apart.verdict == "shown" and "apart" in apart.note and apart.bar.op == ">" and apart.bar.value == 0
    assert apart.controls == ("encoder_view_accuracy", "degrader_dose_spearman")
    overlap = F.gap(fidelity(8, 30, 5, 10), {"gap": 11.5, "low": -1, "high": 25}, "d", "h")
    assert "overlap" in overlap.note
    ctrl = [F.encoder_view({"metrics": {"view_accuracy": 0.95, "view_majority": 0.5, "n_eval": 200}}),
            F.dose(S.dose_spearman(_dose([1.0, 2, 3, 4, 5])))]  # the encoder's controls, passing
    got = {f.id: f for f in settle(ctrl + [apart, dataclasses.replace(overlap, id="gap_overlap")])}
    assert got["diffusion_vs_heldout_fid_gap_cxr"].verdict == "shown"
    assert got["gap_overlap"].verdict == "partly"  # its CI crosses 0
    below = F.gap(fidelity(5, 10, 20, 30), {"gap": -17.5, "low": -25, "high": -9}, "d", "h")
    assert below.verdict == "not shown" and "not above 0" in below.note


# --- the encoder's view task and its verdict -----------------------------------------------------------------

def test_view_target_projection_and_view_verdict():
    meta = pd.DataFrame({"view": ["PA", "AP", "AP SUPINE", "LATERAL", None]})
    assert _views(meta, "projection") == ["PA", "AP", "AP", "LATERAL", None]
    assert _views(meta) == ["PA", "AP", "AP SUPINE", "LATERAL", None]
    from radaudit.findings import settle

    card = {"metrics": {"view_accuracy": 0.70, "view_majority": 0.523, "n_eval": 107}}
    f = F.encoder_view(card)
    assert f.verdict == "shown" and "majority share 0.523" in f.note and f.ci[0] < 0.70 < f.ci[1]
    assert f.bar.op == ">=" and f.bar.value == pytest.approx(0.673)
    assert settle([f])[0].verdict == "partly"  # 0.70 >= 0.673, but the Wilson CI over 107 images crosses the bar
    card["metrics"]["view_accuracy"] = 0.477  # the encoder
    card["metrics"]["pixel_probe_view_accuracy"] = 0.62
    f = F.encoder_view(card)
    assert f.verdict == "not shown" and "linear probe on the same pixels reaches 0.620" in f.note


def test_pixel_view_probe_reads_a_view_the_pixels_show_and_not_one_they_hide():
    from radaudit.audits.synthetic_cxr.models import _pixel_view_probe

    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (80, 8, 8)).astype(np.float32)
    v = np.tile([0, 1], 40)
    shown = x.copy()
    shown[v == 1, :2, :] += 3.0  # view 1: a bright top band
    assert _pixel_view_probe(shown[:60], v[:60], shown[60:], v[60:]) == 1.0
    assert _pixel_view_probe(x[:60], v[:60], x[60:], v[60:]) < 0.8  # pure noise: no better than a guess
    unknown = np.full(60, -1)
    assert _pixel_view_probe(x[:60], unknown, x[60:], v[60:]) is None  # no labelled view: no probe
    assert F.encoder_view(None).verdict == "n/a"


# --- significance only with enough positives -------------------------------------------------------------------

def test_no_significance_test_below_min_positives():
    rng = np.random.default_rng(0)
    n = 120
    y = np.zeros((n, 2))
    y[:40, 0] = 1  # 40 positives
    y[:3, 1] = 1  # 3 positives
    real = y + rng.normal(0, 0.3, y.shape)
    other = rng.normal(size=y.shape)
    d = paired_auroc_differences(y, {"real": real, "gen": other}, ["common", "rare"], n_bootstrap=200,
                                 min_positives=10).set_index("label")
    assert np.isfinite(d.loc["common", "pvalue"])
    assert np.isnan(d.loc["rare", "pvalue"]) and "significance n/a" in d.loc["rare", "note"]
    assert np.isfinite(d.loc["rare", "diff_low"])  # the interval is still reported
    assert np.isnan(d.loc["macro", "pvalue"])  # a macro over a rare label is not tested
    d0 = paired_auroc_differences(y, {"real": real, "gen": other}, ["common", "rare"], n_bootstrap=200).set_index("label")
    assert np.isfinite(d0.loc["rare", "pvalue"])  # without the rule the rare label is tested
