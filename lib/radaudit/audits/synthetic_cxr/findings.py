"""The headline findings of a synthetic_cxr run (``findings.json``, format in ``../shared/FINDINGS.md``).

Each finding is computed from the run's tables and given a verdict by a stated rule. Most of them are
**controls**: the demo's stand-ins (a 64-px encoder, a Siamese re-ID network, all trained here in
minutes) can only be trusted where they pass them.

- ``encoder_view_accuracy``: the chest X-ray encoder's view head on the held-out test split (PA / AP /
  AP supine); *shown* when ≥ majority share + 0.15 (both in the note, with the k-NN view accuracy of
  its features, a linear probe on the same pixels — how much of the view the images carry — and the
  label AUROC). CI: Clopper–Pearson over test images.
- ``encoder_fid_order_agreement``: Spearman's ρ between the chest X-ray encoder's and Inception's FID
  over Table 1's generators; *shown* when 1 (same order).
- ``degrader_dose_spearman``: Spearman's ρ between the degrader's dose level and FID on the chest X-ray
  encoder (≥ 4 levels); *shown* when 1. The note gives KID and precision on both encoders.
- ``privacy_reference_overlap``: audited privacy images of non-memorising generators made from an image
  of the prompt's own patient; *shown* when 0 (the memoriser's overlap is by design and is left out).
- ``memoriser_flagged`` (positive control) / ``heldout_real_flagged`` (negative control): the share of
  audited prompts whose max re-ID over seeds exceeds the threshold calibrated on that same statistic;
  *shown* when ≥ 0.9 / ≤ 0.1. CI: Clopper–Pearson over prompts.
- ``diffusion_vs_heldout_fid_gap_cxr``: FID(diffusion) − FID(held-out real) on the chest X-ray encoder
  with a paired bootstrap CI; *shown* when the gap is > 0 and the two Table-1 CIs do not overlap,
  else *not shown* with the reason (Inception's gap in the note).

A quantity a preset cannot compute (no demo encoder, no memoriser, no dose levels) gives ``None`` and
*n/a* with the reason, never a gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.findings import Finding

__all__ = ["VIEW_MARGIN", "MEMORISER_MIN", "HELDOUT_MAX", "headline_findings"]

VIEW_MARGIN = 0.15
MEMORISER_MIN = 0.9
HELDOUT_MAX = 0.1
MIN_DOSE_LEVELS = 4


def _na(fid: str, label: str, why: str) -> Finding:
    return Finding(fid, label, None, "n/a", note=why)


def _clopper(k: int, n: int) -> tuple[float, float] | None:
    from scipy.stats import binomtest

    if n <= 0:
        return None
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def encoder_view(card: Mapping[str, Any] | None) -> Finding:
    fid, label = "encoder_view_accuracy", "View accuracy of the chest X-ray encoder on held-out images (PA / AP / AP supine)"
    m = (card or {}).get("metrics") or {}
    if "view_accuracy" not in m:
        return _na(fid, label, "the chest X-ray encoder is not the demo encoder trained here (no view head to test)")
    acc, maj, n = float(m["view_accuracy"]), float(m["view_majority"]), int(m.get("n_eval", 0))
    ok = acc >= maj + VIEW_MARGIN
    extra = []
    if "knn_view_accuracy" in m:
        extra.append(f"k-NN view accuracy of its features {m['knn_view_accuracy']:.3f}")
    if "pixel_probe_view_accuracy" in m:
        extra.append(f"a linear probe on the same pixels reaches {m['pixel_probe_view_accuracy']:.3f}")
    if "label_auroc_macro" in m:
        extra.append(f"label AUROC (macro) {m['label_auroc_macro']:.3f}")
    note = (f"majority share {maj:.3f} (bar: majority + {VIEW_MARGIN} = {maj + VIEW_MARGIN:.3f}); n = {n} test images"
            + (f"; {'; '.join(extra)}" if extra else "")
            + ("" if ok else "; the encoder cannot tell the views apart well enough to trust its FID"))
    return Finding(fid, label, acc, "shown" if ok else "not shown",
                   ci=_clopper(round(acc * n), n) if n else None, note=note)


def fid_order(agreement: Mapping[str, float]) -> Finding:
    fid, label = ("encoder_fid_order_agreement",
                  "Spearman ρ between chest X-ray encoder FID and Inception FID over the generators")
    rho = agreement.get("spearman", float("nan"))
    if not np.isfinite(rho):
        return _na(fid, label, "needs Inception (use_inception) and at least two generators")
    ok = rho >= 1.0 - 1e-12
    note = (f"{int(agreement.get('n', 0))} generators, Kendall τ {agreement.get('kendall', float('nan')):.2f}, "
            f"{int(agreement.get('discordant_pairs', 0))} pair(s) ordered differently")
    return Finding(fid, label, rho, "shown" if ok else "not shown",
                   note=note if ok else note + ": the two encoders disagree on which generator is closer to real")


def dose(spearman: pd.DataFrame | None, cxr: str = "cxr") -> Finding:
    fid, label = "degrader_dose_spearman", "Spearman ρ between degrader dose level and FID (chest X-ray encoder)"
    if spearman is None or spearman.empty:
        return _na(fid, label, "no degrader dose levels in this preset (degrader_levels is empty)")
    row = spearman[(spearman["encoder"] == cxr) & (spearman["metric"] == "fid")]
    if row.empty:
        return _na(fid, label, "the dose-response was not scored on the chest X-ray encoder")
    r = row.iloc[0]
    n = int(r["n_levels"])
    ok = n >= MIN_DOSE_LEVELS and np.isfinite(r["spearman"]) and r["spearman"] >= 1.0 - 1e-12
    others = "; ".join(f"{m} ({e}) ρ = {s:.2f}" for e, m, s in
                       zip(spearman["encoder"], spearman["metric"], spearman["spearman"]) if not (e == cxr and m == "fid"))
    note = f"{n} levels; {others}" if others else f"{n} levels"
    if not ok:
        note += (f"; fewer than {MIN_DOSE_LEVELS} levels" if n < MIN_DOSE_LEVELS
                 else "; FID does not rise with every step of the dose")
    return Finding(fid, label, r["spearman"], "shown" if ok else "not shown", note=note)


def overlap(table: pd.DataFrame) -> Finding:
    fid, label = ("privacy_reference_overlap",
                  "Audited privacy images sharing a patient with the prompt's image (non-memorising generators)")
    counted = table[table["counts_toward_overlap"]]
    total = int(counted["same_patient"].sum())
    per = ", ".join(f"{g} {int(p)}/{int(n)}" for g, p, n in zip(counted["generator"], counted["same_patient"],
                                                               counted["n_images"]))
    mem = table[~table["counts_toward_overlap"]]
    note = f"per generator: {per}" + (f"; the memoriser copies the prompt's image by design "
                                      f"({int(mem['same_patient'].sum())}/{int(mem['n_images'].sum())}, "
                                      f"the positive control)" if len(mem) else "")
    return Finding(fid, label, total, "shown" if total == 0 else "not shown",
                   note=note if total == 0 else note + ": the reference is contaminated")


def flagged(fid: str, label: str, share: Mapping[str, float] | None, threshold: Mapping[str, Any] | None,
            *, positive: bool) -> Finding:
    if share is None or threshold is None:
        return _na(fid, label, "this preset has no " + ("memoriser" if positive else "held-out real") + " generator")
    ok = share["share"] >= MEMORISER_MIN if positive else share["share"] <= HELDOUT_MAX
    rule = f"≥ {MEMORISER_MIN}" if positive else f"≤ {HELDOUT_MAX}"
    note = (f"{share['k']} of {share['n']} prompts above the re-ID threshold {threshold['threshold']:.3f}, calibrated on "
            f"the {threshold['statistic']} ({threshold['fpr']:.0%} of {threshold['n_null']} null prompts of other "
            f"patients above it); {'positive' if positive else 'negative'} control, needs {rule}")
    if not ok:
        note += ("; the re-ID network does not recognise near-copies of training images" if positive
                 else "; the audit flags new patients' real images as memorised")
    return Finding(fid, label, share["share"], "shown" if ok else "not shown", ci=(share["low"], share["high"]),
                   note=note)


def gap(fidelity: pd.DataFrame, gap_cxr: Mapping[str, float] | None, diffusion: str | None, heldout: str | None,
        cxr: str = "cxr") -> Finding:
    fid, label = ("diffusion_vs_heldout_fid_gap_cxr",
                  "FID gap: diffusion model minus held-out real images (chest X-ray encoder)")
    if gap_cxr is None or diffusion is None or heldout is None:
        return _na(fid, label, "needs a diffusion generator and the held-out real reference")
    f = fidelity[fidelity["metric"] == "fid"].set_index(["generator", "encoder"])
    d, h = f.loc[(diffusion, cxr)], f.loc[(heldout, cxr)]
    apart = d["low"] > h["high"]
    ok = gap_cxr["gap"] > 0 and apart
    note = (f"{diffusion} {d['estimate']:.2f} [{d['low']:.2f}, {d['high']:.2f}] vs {heldout} {h['estimate']:.2f} "
            f"[{h['low']:.2f}, {h['high']:.2f}]")
    if ("inception" in set(fidelity["encoder"])):
        di, hi = f.loc[(diffusion, "inception")], f.loc[(heldout, "inception")]
        note += f"; Inception: {di['estimate']:.1f} vs {hi['estimate']:.1f}"
    if not ok:
        note += ("; the gap is not above 0" if gap_cxr["gap"] <= 0 else "; the Table-1 CIs overlap") + \
            " at this sample size (107 test images, a 64-px stand-in encoder)"
    return Finding(fid, label, gap_cxr["gap"], "shown" if ok else "not shown", ci=(gap_cxr["low"], gap_cxr["high"]),
                   note=note)


def headline_findings(*, encoder_card: Mapping[str, Any] | None, agreement: Mapping[str, float],
                      dose_rho: pd.DataFrame | None, overlap_table: pd.DataFrame,
                      flagged_by_kind: Mapping[str, Mapping[str, float]], threshold: Mapping[str, Any] | None,
                      fidelity: pd.DataFrame, gap_cxr: Mapping[str, float] | None, generators: Sequence[Any]
                      ) -> list[Finding]:
    """Every finding of the module docstring, in reading order. ``flagged_by_kind``: :func:`flagged_share` of the
    ``memoriser`` and ``heldout_real`` generators keyed by kind; ``generators``: the run's generator entries."""
    by_kind: dict[str, str] = {}
    for e in generators:
        by_kind.setdefault(e.kind, e.name)
    return [
        encoder_view(encoder_card),
        fid_order(agreement),
        dose(dose_rho),
        overlap(overlap_table),
        flagged("memoriser_flagged", "Memoriser prompts flagged by the calibrated re-ID threshold (positive control)",
                flagged_by_kind.get("memoriser"), threshold, positive=True),
        flagged("heldout_real_flagged", "Held-out real prompts flagged by the calibrated re-ID threshold (negative control)",
                flagged_by_kind.get("heldout_real"), threshold, positive=False),
        gap(fidelity, gap_cxr, by_kind.get("diffusion"), by_kind.get("heldout_real")),
    ]
