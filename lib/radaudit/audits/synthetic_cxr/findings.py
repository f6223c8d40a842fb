"""The headline findings of a synthetic_cxr run (``findings.json``, format in ``../shared/FINDINGS.md``).

Each finding is computed from the run's tables, given a ``bar`` and a first verdict by where its estimate lies;
:func:`radaudit.findings.settle` then reads the whole 95% CI against the bar and lowers a ``shown`` whose
``controls`` did not pass (the central rules; nothing here overrides them). The demo's stand-ins (a 64-px
encoder, a Siamese re-ID network, all trained here in minutes) are only evidence where their **controls** pass.

Controls (each can fail, and ``tests/audits/test_controls_fail_synthetic_cxr.py`` shows it failing):

- ``encoder_view_accuracy`` (positive, the encoder): the chest X-ray encoder's view head on the held-out test
  split (PA / AP); bar ≥ majority share + 0.15. CI: Wilson over test images.
- ``degrader_dose_spearman`` (positive, FID on that encoder): Spearman's ρ between the degrader's dose level and
  FID on the chest X-ray encoder; bar ≥ 1 with ≥ 4 levels (an exact number: no CI). KID and precision in the note.
- ``privacy_reference_overlap`` (negative, the privacy references): audited privacy images of non-memorising
  generators made from an image of the prompt's own patient; bar ≤ 0 (an exact count).
- ``memoriser_flagged`` (positive) / ``heldout_real_flagged`` (negative): the share of **audit-half** prompts
  whose max re-ID over seeds exceeds the threshold calibrated on null prompts of the **other** half of the training
  patients (:mod:`radaudit.audits.synthetic_cxr.controls`: tested out of sample, so the negative control can
  fail); bars ≥ 0.9 / ≤ 0.1 on the Wilson CI over prompts.

Findings that rest on them:

- ``diffusion_flagged`` (controls: the three privacy controls): the demo diffusion model's audit-half prompts
  above the calibrated threshold; bar ≥ 0.1, the low end of the paper's "10% to 25%" of prompts above δ (§3.2,
  Table 3; the paper's share is at its network's δ, ours at a threshold calibrated for the stand-in).
- ``diffusion_vs_heldout_fid_gap_cxr`` (controls: ``encoder_view_accuracy``, ``degrader_dose_spearman``):
  FID(diffusion) − FID(held-out real) on the chest X-ray encoder with a paired bootstrap CI; bar > 0.

Descriptive findings, read beside the controls:

- ``encoder_view_gain_over_pixels``: the encoder's view accuracy minus a linear probe's on the raw pixels of the
  same test images, paired bootstrap CI over images; bar > 0. When the CI includes 0 the note says plainly that
  the encoder adds nothing over the pixels for the view.
- ``memoriser_flagged_paper_delta``: the memoriser's audit-half prompts above the paper's δ = 0.85; bar ≥ 0.9.
  δ belongs to the paper's network (Packhäuser et al.'s ResNet-50 Siamese net, trained on ChestX-ray14's ~30,000
  patients with an unconstrained head; its scores reach 0.99 and above, Table 3 "Max. Re-ID"). The stand-in scores
  on another scale: its head is constrained (``monotone_head``, :mod:`radaudit.audits.synthetic_cxr.models`) so that
  an exact copy gets the highest score it can give, ``sigmoid(bias)``, and BCE on pairs of the demo's training
  patients (a few hundred; the note counts them) at 64 px — where same-patient pairs include different films that
  look unlike each other — settles that ceiling at about 0.81 in the demo: below δ, so at δ even an exact copy is
  never flagged. The note gives the run's ceiling (:func:`radaudit.audits.synthetic_cxr.study.reid_ceiling`).
- ``encoder_fid_order_agreement``: Spearman's ρ between the chest X-ray encoder's and Inception's FID over
  Table 1's generators; bar ≥ 1 (the same order).

A quantity a preset cannot compute (no demo encoder, no memoriser, no dose levels) gives ``None`` and
*n/a* with the reason, never a gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.findings import Bar, Finding
from radaudit.stats import wilson_ci

__all__ = ["DIFFUSION_PAPER_MIN", "HELDOUT_MAX", "MEMORISER_MIN", "VIEW_MARGIN", "headline_findings"]

VIEW_MARGIN = 0.15
MEMORISER_MIN = 0.9
HELDOUT_MAX = 0.1
#: The low end of the paper's share of prompts above δ ("ranging from 10% to 25%", §3.2).
DIFFUSION_PAPER_MIN = 0.1
MIN_DOSE_LEVELS = 4
#: The findings the others rest on.
ENCODER_CONTROLS = ("encoder_view_accuracy", "degrader_dose_spearman")
PRIVACY_CONTROLS = ("privacy_reference_overlap", "memoriser_flagged", "heldout_real_flagged")


def _na(fid: str, label: str, why: str, bar: Any = None, controls: Sequence[str] = ()) -> Finding:
    return Finding(fid, label, None, "n/a", note=why, bar=bar, controls=tuple(controls))


def _side(value: float, bar: Any) -> str:
    """The first verdict: ``shown`` when the estimate is on the bar's side (the CI is settle's to read)."""
    return "shown" if Bar.of(bar).holds(float(value)) else "not shown"


def encoder_view(card: Mapping[str, Any] | None, gain: Mapping[str, float] | None = None) -> Finding:
    fid, label = "encoder_view_accuracy", "View accuracy of the chest X-ray encoder on held-out images (PA / AP / AP supine)"
    m = (card or {}).get("metrics") or {}
    if "view_accuracy" not in m:
        return _na(fid, label, "the chest X-ray encoder is not the demo encoder trained here (no view head to test)")
    acc, maj, n = float(m["view_accuracy"]), float(m["view_majority"]), int(m.get("n_eval", 0))
    bar = (">=", round(maj + VIEW_MARGIN, 12))
    extra = []
    if "knn_view_accuracy" in m:
        extra.append(f"k-NN view accuracy of its features {m['knn_view_accuracy']:.3f}")
    if "pixel_probe_view_accuracy" in m:
        extra.append(f"a linear probe on the same pixels reaches {m['pixel_probe_view_accuracy']:.3f}"
                     + (" (encoder_view_gain_over_pixels)" if gain is not None else ""))
    if "label_auroc_macro" in m:
        extra.append(f"label AUROC (macro) {m['label_auroc_macro']:.3f}")
    verdict = _side(acc, bar)
    note = (f"positive control of the encoder; majority share {maj:.3f} (bar: majority + {VIEW_MARGIN} = "
            f"{maj + VIEW_MARGIN:.3f}); n = {n} test images, Wilson CI" + (f"; {'; '.join(extra)}" if extra else "")
            + ("" if verdict == "shown" else "; the encoder cannot tell the views apart well enough to trust its FID"))
    ci = wilson_ci(int(round(acc * n)), n) if n else None
    return Finding(fid, label, acc, verdict, ci=ci, note=note, bar=bar)


def view_gain(gain: Mapping[str, float] | None) -> Finding:
    fid, label = ("encoder_view_gain_over_pixels",
                  "View accuracy of the chest X-ray encoder minus a linear probe on the pixels (same test images)")
    bar = (">", 0.0)
    if gain is None:
        return _na(fid, label, "needs the demo encoder's view head and a pixel probe (views in the metadata)", bar)
    g, lo, hi = float(gain["gain"]), float(gain["low"]), float(gain["high"])
    note = (f"encoder {gain['encoder']:.3f} vs pixel probe {gain['pixels']:.3f} on the same {int(gain['n'])} test "
            "images; paired bootstrap CI over images")
    if hi < 0:
        note += ("; the encoder adds nothing over the pixels for the view: a logistic regression on the raw pixels "
                 "tells PA from AP better than the encoder's view head")
    elif lo <= 0:
        note += ("; the encoder adds nothing over the pixels for the view: a logistic regression on the raw pixels "
                 "tells PA from AP about as well (the gain's CI includes 0), so the view accuracy does not show that "
                 "the encoder learnt more than a linear read-out of image intensity")
    return Finding(fid, label, g, _side(g, bar), ci=(lo, hi), note=note, bar=bar)


def fid_order(agreement: Mapping[str, float]) -> Finding:
    fid, label = ("encoder_fid_order_agreement",
                  "Spearman ρ between chest X-ray encoder FID and Inception FID over the generators")
    bar = (">=", 1.0)
    rho = agreement.get("spearman", float("nan"))
    if not np.isfinite(rho):
        return _na(fid, label, "needs Inception (use_inception) and at least two generators", bar)
    verdict = _side(rho, bar)
    note = (f"{int(agreement.get('n', 0))} generators, Kendall τ {agreement.get('kendall', float('nan')):.2f}, "
            f"{int(agreement.get('discordant_pairs', 0))} pair(s) ordered differently; exact over the generators (no CI)")
    return Finding(fid, label, rho, verdict, bar=bar,
                   note=note if verdict == "shown" else note + ": the two encoders disagree on which generator is closer "
                                                             "to real")


def dose(spearman: pd.DataFrame | None, cxr: str = "cxr") -> Finding:
    fid, label = "degrader_dose_spearman", "Spearman ρ between degrader dose level and FID (chest X-ray encoder)"
    bar = (">=", 1.0)
    if spearman is None or spearman.empty:
        return _na(fid, label, "no degrader dose levels in this preset (degrader_levels is empty)", bar)
    row = spearman[(spearman["encoder"] == cxr) & (spearman["metric"] == "fid")]
    if row.empty:
        return _na(fid, label, "the dose-response was not scored on the chest X-ray encoder", bar)
    r = row.iloc[0]
    n = int(r["n_levels"])
    rho = float(r["spearman"])
    ok = n >= MIN_DOSE_LEVELS and np.isfinite(rho) and Bar.of(bar).holds(rho)
    others = "; ".join(f"{m} ({e}) ρ = {s:.2f}" for e, m, s in
                       zip(spearman["encoder"], spearman["metric"], spearman["spearman"]) if not (e == cxr and m == "fid"))
    note = f"positive control of FID on the encoder; {n} levels" + (f"; {others}" if others else "")
    if not ok:
        note += (f"; fewer than {MIN_DOSE_LEVELS} levels" if n < MIN_DOSE_LEVELS
                 else "; FID does not rise with every step of the dose")
    return Finding(fid, label, rho if np.isfinite(rho) else None, "shown" if ok else "not shown", note=note, bar=bar)


def overlap(table: pd.DataFrame) -> Finding:
    fid, label = ("privacy_reference_overlap",
                  "Audited privacy images sharing a patient with the prompt's image (non-memorising generators)")
    bar = ("<=", 0)
    counted = table[table["counts_toward_overlap"]]
    total = int(counted["same_patient"].sum())
    per = ", ".join(f"{g} {int(p)}/{int(n)}" for g, p, n in zip(counted["generator"], counted["same_patient"],
                                                               counted["n_images"]))
    mem = table[~table["counts_toward_overlap"]]
    note = ("negative control of the privacy references (an exact count); per generator: " + per
            + (f"; the memoriser copies the prompt's image by design ({int(mem['same_patient'].sum())}/"
               f"{int(mem['n_images'].sum())}, the positive control)" if len(mem) else ""))
    verdict = _side(total, bar)
    return Finding(fid, label, total, verdict, bar=bar,
                   note=note if verdict == "shown" else note + ": the reference is contaminated")


def _threshold_words(threshold: Mapping[str, Any]) -> str:
    cal = threshold.get("n_calibration_patients")
    where = (f"training images of the calibration half of the patients, {cal} patients, "
             f"{threshold.get('n_calibration_prompts')} images x {threshold.get('rounds')} rounds, each with matched "
             f"real images of other patients; audited on the other half, {threshold.get('n_audit_patients')} patients"
             if cal is not None else "null prompts of other patients")
    return (f"the re-ID threshold {threshold['threshold']:.3f}: the {threshold['statistic']} that {threshold['fpr']:.0%} "
            f"of {threshold['n_null']} null prompts exceed ({where})")


def flagged(fid: str, label: str, share: Mapping[str, float] | None, threshold: Mapping[str, Any] | None,
            *, positive: bool) -> Finding:
    """A control on the flagged share: ``memoriser_flagged`` (positive, bar ≥ 0.9) or ``heldout_real_flagged``
    (negative, bar ≤ 0.1); ``share``: :func:`radaudit.audits.synthetic_cxr.controls.flag_share` of the audit-half
    prompts (Wilson CI)."""
    bar = (">=", MEMORISER_MIN) if positive else ("<=", HELDOUT_MAX)
    if share is None or threshold is None or not share.get("n"):
        return _na(fid, label, "this preset has no " + ("memoriser" if positive else "held-out real")
                   + " generator (or no audited prompt of the audit half)", bar)
    verdict = _side(share["share"], bar)
    note = (f"{'positive' if positive else 'negative'} control; {share['k']} of {share['n']} audit-half prompts above "
            f"{_threshold_words(threshold)}; Wilson 95% CI over prompts (prompts of one patient are not independent, "
            "which it ignores)")
    if verdict != "shown":
        note += ("; the re-ID network does not recognise near-copies of training images" if positive
                 else "; the audit flags new patients' real images as memorised")
    return Finding(fid, label, share["share"], verdict, ci=(share["low"], share["high"]), note=note, bar=bar)


def _training_patients(threshold: Mapping[str, Any] | None) -> int | None:
    """The re-ID network's training patients, as the run counted them (calibration + audit halves), or None."""
    if threshold is None:
        return None
    cal, audit = threshold.get("n_calibration_patients"), threshold.get("n_audit_patients")
    return int(cal) + int(audit) if cal is not None and audit is not None else None


def paper_delta(share: Mapping[str, float] | None, delta: float, ceiling: float | None,
                threshold: Mapping[str, Any] | None) -> Finding:
    """``memoriser_flagged_paper_delta``: the memoriser's audit-half prompts above the paper's δ (descriptive; the
    module docstring says why the stand-in's scale differs)."""
    fid, label = "memoriser_flagged_paper_delta", f"Memoriser prompts flagged at the paper's δ = {delta:g}"
    bar = (">=", MEMORISER_MIN)
    if share is None or not share.get("n"):
        return _na(fid, label, "this preset has no memoriser generator", bar)
    verdict = _side(share["share"], bar)
    note = (f"{share['k']} of {share['n']} audit-half prompts above δ = {delta:g} (paper §2.3, calibrated for "
            "Packhäuser et al.'s ResNet-50 network, whose scores reach 0.99); Wilson 95% CI")
    if threshold is not None:
        note += f"; at the calibrated threshold {threshold['threshold']:.3f} see memoriser_flagged"
    if ceiling is not None:
        note += (f"; the stand-in re-ID network's highest possible score (an exact copy: sigmoid of its monotone "
                 f"head's bias) is {ceiling:.3f}" + (", below δ, so δ cannot flag even an exact copy" if ceiling <= delta
                                                     else ""))
    if verdict != "shown":
        n_patients = _training_patients(threshold)
        trained = f"trained minutes on {n_patients} patients at 64 px" if n_patients else "trained minutes at 64 px"
        note += ("; δ is a threshold of the paper's network, not of this stand-in, whose scores sit on another scale "
                 f"({trained}): read privacy at the calibrated threshold")
    return Finding(fid, label, share["share"], verdict, ci=(share["low"], share["high"]), note=note, bar=bar)


def diffusion_flagged(share: Mapping[str, float] | None, threshold: Mapping[str, Any] | None,
                      name: str | None) -> Finding:
    """``diffusion_flagged``: the demo diffusion model's audit-half prompts above the calibrated threshold; rests on
    the privacy controls."""
    fid, label = "diffusion_flagged", "Diffusion-model prompts flagged by the calibrated re-ID threshold"
    bar = (">=", DIFFUSION_PAPER_MIN)
    if share is None or threshold is None or name is None or not share.get("n"):
        return _na(fid, label, "this preset has no diffusion generator", bar, PRIVACY_CONTROLS)
    verdict = _side(share["share"], bar)
    note = (f"{name}: {share['k']} of {share['n']} audit-half prompts above {_threshold_words(threshold)}; Wilson 95% "
            f"CI; the paper finds 10% to 25% of prompts above δ for every model (§3.2, Table 3), at its own network's δ")
    if verdict != "shown":
        note += (f"; {name} is not flagged more often than the {threshold['fpr']:.0%} of new patients' images the "
                 "threshold lets through by design: no memorisation shows at this scale"
                 if share["low"] <= threshold["fpr"] else
                 f"; {name} is flagged more often than the threshold's {threshold['fpr']:.0%} false-positive rate, "
                 f"but less often than the paper's {DIFFUSION_PAPER_MIN:.0%}")
    return Finding(fid, label, share["share"], verdict, ci=(share["low"], share["high"]), note=note, bar=bar,
                   controls=PRIVACY_CONTROLS)


def gap(fidelity: pd.DataFrame, gap_cxr: Mapping[str, float] | None, diffusion: str | None, heldout: str | None,
        cxr: str = "cxr") -> Finding:
    """``diffusion_vs_heldout_fid_gap_cxr``: the paired-bootstrap CI of the gap is read against ``> 0`` by the
    central rule; whether the two Table-1 intervals overlap is reported in the note."""
    fid, label = ("diffusion_vs_heldout_fid_gap_cxr",
                  "FID gap: diffusion model minus held-out real images (chest X-ray encoder)")
    bar = (">", 0.0)
    if gap_cxr is None or diffusion is None or heldout is None:
        return _na(fid, label, "needs a diffusion generator and the held-out real reference", bar, ENCODER_CONTROLS)
    f = fidelity[fidelity["metric"] == "fid"].set_index(["generator", "encoder"])
    d, h = f.loc[(diffusion, cxr)], f.loc[(heldout, cxr)]
    apart = d["low"] > h["high"]
    note = (f"{diffusion} {d['estimate']:.2f} [{d['low']:.2f}, {d['high']:.2f}] vs {heldout} {h['estimate']:.2f} "
            f"[{h['low']:.2f}, {h['high']:.2f}] (Table-1 CIs {'apart' if apart else 'overlap'}); paired bootstrap CI")
    if ("inception" in set(fidelity["encoder"])):
        di, hi = f.loc[(diffusion, "inception")], f.loc[(heldout, "inception")]
        note += f"; Inception: {di['estimate']:.1f} vs {hi['estimate']:.1f}"
    verdict = _side(gap_cxr["gap"], bar)
    if verdict != "shown":
        note += "; the gap is not above 0 at this sample size (107 test images, a 64-px stand-in encoder)"
    return Finding(fid, label, gap_cxr["gap"], verdict, ci=(gap_cxr["low"], gap_cxr["high"]), note=note, bar=bar,
                   controls=ENCODER_CONTROLS)


def headline_findings(*, encoder_card: Mapping[str, Any] | None, agreement: Mapping[str, float],
                      dose_rho: pd.DataFrame | None, overlap_table: pd.DataFrame,
                      flagged_by_kind: Mapping[str, Mapping[str, float]], threshold: Mapping[str, Any] | None,
                      fidelity: pd.DataFrame, gap_cxr: Mapping[str, float] | None, generators: Sequence[Any],
                      view_gain_result: Mapping[str, float] | None = None,
                      memoriser_at_delta: Mapping[str, float] | None = None, delta: float = 0.85,
                      reid_ceiling: float | None = None) -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``flagged_by_kind``: the audit-half flagged shares
    (:func:`radaudit.audits.synthetic_cxr.study.reid_flags`) of the first ``memoriser``, ``heldout_real`` and
    ``diffusion`` generators keyed by kind; ``generators``: the run's generator entries; ``view_gain_result``:
    :func:`radaudit.audits.synthetic_cxr.controls.view_gain`; ``memoriser_at_delta``: the memoriser's audit-half
    share above ``delta``; ``reid_ceiling``: the stand-in re-ID network's highest possible score."""
    by_kind: dict[str, str] = {}
    for e in generators:
        by_kind.setdefault(e.kind, e.name)
    return [
        encoder_view(encoder_card, view_gain_result),
        view_gain(view_gain_result),
        fid_order(agreement),
        dose(dose_rho),
        overlap(overlap_table),
        flagged("memoriser_flagged", "Memoriser prompts flagged by the calibrated re-ID threshold (positive control)",
                flagged_by_kind.get("memoriser"), threshold, positive=True),
        flagged("heldout_real_flagged", "Held-out real prompts flagged by the calibrated re-ID threshold (negative control)",
                flagged_by_kind.get("heldout_real"), threshold, positive=False),
        paper_delta(memoriser_at_delta, delta, reid_ceiling, threshold),
        diffusion_flagged(flagged_by_kind.get("diffusion"), threshold, by_kind.get("diffusion")),
        gap(fidelity, gap_cxr, by_kind.get("diffusion"), by_kind.get("heldout_real")),
    ]
