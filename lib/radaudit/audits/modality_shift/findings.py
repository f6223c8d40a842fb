"""The headline findings of a modality_shift run (``findings.json``, format in ``../shared/FINDINGS.md``).

The paper's claim (Restrepo et al., §4) is that VLMs lean on the text: swapping the text flips many
correct answers (NFR above 0.6 for Qwen2-VL and LLaVA-1.5 on MIMIC-CXR), swapping the image few. That
claim can only be read from a model that *can* use the image, so the demo carries controls:

- ``only_image_auroc`` (**positive control**): AUROC of P(yes) with the text removed, on images that
  show the label. *shown* when ≥ :data:`POSITIVE_MIN` (0.75). When the preset runs the marked
  conditions (the demo: the label burned into the image, :mod:`radaudit.audits.modality_shift.marker`)
  it is read from ``marked_only_image``, because the natural demo images carry the label only
  weakly (see the probe); otherwise from ``only_image`` (a real VLM on MIMIC-CXR sees the findings).
  The label says which.
- ``image_shift_changed`` (positive control of the swap): share of samples whose answer changes
  when only the image is swapped for an opposite-label one — on the marked images when run
  (``marked_image_shift`` vs ``marked_no_shift``), else the natural ones. *shown* when
  > :data:`CHANGED_MIN` (0.10): the measurement sees image use where there is some to see.
- ``natural_only_image_auroc`` and ``natural_image_shift_changed`` (only beside marked controls):
  the same two numbers on the natural images — the paper's Only Image and Image Shift. *shown* at
  the same thresholds; *partly* when better than chance / nonzero (CI above 0.5 / above 0).
- ``marker_saliency_share`` (positive control of the heatmap, with the marked conditions): the mean
  share of the answer margin's pixel sensitivity (:func:`radaudit.audits.modality_shift.heatmap.gradient_maps`)
  that lies on the marker's patches in ``marked_only_image``, with a BCa bootstrap CI over samples.
  *shown* when the CI's lower end is above :data:`SALIENCY_FACTOR` (2) times the patches' share of the
  grid (where a map blind to the marker would put it); the same corner on the natural images is the
  negative control, in the note.
- ``image_probe_auroc``: a logistic regression on the evaluated images' pixels, trained on the
  training patients — how much of the label the natural pixels hold at all, so a low natural AUROC
  says whether the model or the data is short.
- ``no_input_auroc`` (**negative control**): AUROC of P(yes) with both image and text removed (the
  same prompt for every sample). *shown* when within :data:`NEGATIVE_BAND` (0.45–0.55): nothing of
  the sample leaks into the input.
- ``text_shift_nfr`` and ``image_shift_nfr``: the paper's NFR (flips / all N) of each shift, on the
  natural images. ``text_shift_nfr`` is *shown* when its CI lies above the image shift's (the
  paper's ordering: the model leans on the text) and the model demonstrably uses images (one of the
  ``*image_shift_changed`` findings *shown*: otherwise the ordering is true by construction,
  *partly*); *partly* when higher with overlapping CIs, else *not shown*.

Every value is computed by the run's tables (:mod:`radaudit.audits.modality_shift.tables`); the
thresholds are the constants below. A condition the preset does not run gives ``None`` and *n/a*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from radaudit.findings import Finding
from radaudit.stats import bootstrap_ci

__all__ = ["CHANGED_MIN", "NEGATIVE_BAND", "POSITIVE_MIN", "SALIENCY_FACTOR", "control_verdict", "headline_findings",
           "marker_saliency"]

#: Positive control: the image-only AUROC must reach this.
POSITIVE_MIN = 0.75
#: Negative control: the no-input AUROC must lie in this band.
NEGATIVE_BAND = (0.45, 0.55)
#: Share of answers the image swap must change.
CHANGED_MIN = 0.10
#: The heatmap's positive control: the marker's patches must hold this many times their share of the grid.
SALIENCY_FACTOR = 2.0


def _row(table: pd.DataFrame, model: str, **match: str) -> Mapping[str, Any] | None:
    sel = table[table["model"] == model]
    for k, v in match.items():
        sel = sel[sel[k] == v]
    return None if sel.empty else sel.iloc[0].to_dict()


def _ci(row: Mapping[str, Any]) -> tuple[float, float]:
    return float(row["low"]), float(row["high"])


def _fmt_ci(row: Mapping[str, Any]) -> str:
    return f"{row['estimate']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def control_verdict(kind: str, value: float | None) -> str:
    """The verdict of a control by its rule: ``positive`` (value ≥ :data:`POSITIVE_MIN`), ``negative``
    (value in :data:`NEGATIVE_BAND`, inclusive) or ``changed`` (value > :data:`CHANGED_MIN`);
    ``n/a`` when the value is missing."""
    if value is None or pd.isna(value):
        return "n/a"
    ok = {"positive": lambda v: v >= POSITIVE_MIN,
          "negative": lambda v: NEGATIVE_BAND[0] <= v <= NEGATIVE_BAND[1],
          "changed": lambda v: v > CHANGED_MIN}[kind](float(value))
    return "shown" if ok else "not shown"


def _missing(fid: str, label: str, condition: str) -> Finding:
    return Finding(fid, label, None, "n/a", note=f"condition {condition!r} is not run by this preset")


def _only_image(auroc: pd.DataFrame, model: str, probe: Mapping[str, Any] | None, *, marked: bool) -> Finding:
    fid = "only_image_auroc"
    condition = "marked_only_image" if marked else "only_image"
    label = ("AUROC of P(yes) with the text removed, the label burned into the image: positive control" if marked
             else "AUROC of P(yes) with the text removed (image only): positive control")
    r = _row(auroc, model, condition=condition)
    if r is None:
        return _missing(fid, label, condition)
    verdict = control_verdict("positive", r["estimate"])
    note = f"{r['n']} samples ({r['n_positive']} positive); the image pathway must reach {POSITIVE_MIN}"
    if not marked and probe is not None and probe.get("estimate") is not None:
        note += f"; a pixel probe on the same images reaches {_fmt_ci(probe)}"
    if verdict == "not shown":
        note += (": the model's image pathway falls short of the threshold" +
                 (" — and so do the pixels themselves, so the images of this data set carry less of the label "
                  "than the control asks for" if not marked and probe is not None
                  and probe.get("high", 1.0) < POSITIVE_MIN else ""))
    return Finding(fid, label, r["estimate"], verdict, ci=_ci(r), note=note)


def _natural_only_image(auroc: pd.DataFrame, model: str, probe: Mapping[str, Any] | None) -> Finding:
    fid, label = "natural_only_image_auroc", "AUROC of P(yes) with the text removed, natural images (paper's Only Image)"
    r = _row(auroc, model, condition="only_image")
    if r is None:
        return _missing(fid, label, "only_image")
    verdict = control_verdict("positive", r["estimate"])
    if verdict == "not shown" and r["low"] > 0.5:
        verdict = "partly"
    note = f"{r['n']} samples; above chance when the CI excludes 0.5"
    if probe is not None and probe.get("estimate") is not None:
        note += f"; the pixel probe's ceiling on the same images: {_fmt_ci(probe)}"
    return Finding(fid, label, r["estimate"], verdict, ci=_ci(r), note=note)


def marker_saliency(shares: pd.DataFrame | None, model: str, *, n_bootstrap: int = 1000, seed: int = 0) -> Finding:
    """``marker_saliency_share`` from :func:`radaudit.audits.modality_shift.marker.marker_share` of gradient maps."""
    fid, label = ("marker_saliency_share",
                  "Share of the answer's pixel sensitivity on the burned-in marker (Only Image, marked)")
    if shares is None or shares.empty:
        return Finding(fid, label, None, "n/a", note="no gradient maps on marked images in this run")
    sel = shares[(shares["model"] == model) & (shares["condition"] == "marked_only_image")]
    if len(sel) < 2:
        return Finding(fid, label, None, "n/a", note="fewer than 2 marked Only Image gradient maps")
    values = sel["marker_share"].to_numpy(float)
    uniform = float(sel["uniform_share"].iloc[0])
    ci = bootstrap_ci(values, lambda v: float(v.mean()), n_bootstrap=n_bootstrap, seed=seed, method="bca")
    ok = ci.low > SALIENCY_FACTOR * uniform
    natural = shares[(shares["model"] == model) & (shares["condition"] == "only_image")]["marker_share"]
    note = (f"{len(sel)} samples; the marker's {int(sel['n_patches'].iloc[0])} patches are {uniform:.3f} of the grid "
            f"(bar: CI above {SALIENCY_FACTOR:g} x that = {SALIENCY_FACTOR * uniform:.3f})"
            + (f"; the same corner on the natural images holds {natural.mean():.3f} (negative control)"
               if len(natural) else "")
            + ("" if ok else "; the gradient map does not find the marker the answer follows"))
    return Finding(fid, label, float(values.mean()), "shown" if ok else "not shown", ci=(ci.low, ci.high), note=note)


def _probe(probe: Mapping[str, Any] | None) -> Finding:
    fid, label = "image_probe_auroc", "AUROC of a pixel probe (logistic regression on the images) on the evaluated samples"
    if probe is None or probe.get("estimate") is None:
        return Finding(fid, label, None, "n/a", note="the image probe was not run")
    ok = probe["estimate"] >= POSITIVE_MIN
    note = (f"{probe['description']}; how much of the label the natural images carry"
            + ("" if ok else f": below {POSITIVE_MIN}, they carry it only weakly at this size"))
    return Finding(fid, label, probe["estimate"], "shown" if ok else "not shown", ci=(probe["low"], probe["high"]),
                   note=note)


def _no_input(auroc: pd.DataFrame, model: str) -> Finding:
    fid, label = "no_input_auroc", "AUROC of P(yes) with image and text removed: negative control"
    r = _row(auroc, model, condition="no_input")
    if r is None:
        return _missing(fid, label, "no_input")
    verdict = control_verdict("negative", r["estimate"])
    note = "" if verdict == "shown" else (f"outside {NEGATIVE_BAND[0]}-{NEGATIVE_BAND[1]}: something of the sample "
                                          "reaches the model without image or text — check the inputs")
    ci = None if pd.isna(r["low"]) else _ci(r)  # a constant score has a degenerate interval
    return Finding(fid, label, r["estimate"], verdict, ci=ci, note=note)


def _changed(changed: pd.DataFrame, model: str, *, marked: bool, natural: bool = False) -> Finding:
    condition = "marked_image_shift" if marked else "image_shift"
    if natural:
        fid, label = "natural_image_shift_changed", "Share of answers that change when only the natural image is swapped"
    else:
        fid = "image_shift_changed"
        label = ("Share of answers that change when only the image (label burned in) is swapped: positive control"
                 if marked else "Share of answers that change when only the image is swapped")
    r = _row(changed, model, condition=condition)
    if r is None:
        return _missing(fid, label, condition)
    verdict = control_verdict("changed", r["estimate"])
    note = f"{r['n_changed']} of {r['n']} answers; Wilson CI"
    if verdict == "not shown" and natural and r["low"] > 0:
        verdict = "partly"
        note += ": some answers follow the image, fewer than the threshold"
    elif verdict == "not shown":
        note += f": at most {CHANGED_MIN:.0%} change, so the answers barely depend on the image"
    return Finding(fid, label, r["estimate"], verdict, ci=_ci(r), note=note)


def _nfr(nfr: pd.DataFrame, model: str, image_used: bool = True) -> list[Finding]:
    text = _row(nfr, model, condition="text_shift", measure="nfr")
    image = _row(nfr, model, condition="image_shift", measure="nfr")
    label_t = "Negative flip rate under Text Shift (flips / all N)"
    label_i = "Negative flip rate under Image Shift (flips / all N)"
    out = []
    if text is None:
        out.append(_missing("text_shift_nfr", label_t, "text_shift"))
    elif image is None:
        out.append(Finding("text_shift_nfr", label_t, text["estimate"], "n/a", ci=_ci(text),
                           note="no image shift to compare with"))
    else:
        if text["low"] > image["high"] and not image_used:
            verdict, how = "partly", ("above the image shift's, CIs apart, but the image controls fail (no image swap "
                                      "changes more than 10% of the answers), so the ordering is true by construction")
        elif text["low"] > image["high"]:
            verdict, how = "shown", "above the image shift's, CIs apart: the model leans on the text"
        elif text["estimate"] > image["estimate"]:
            verdict, how = "partly", "above the image shift's but the CIs overlap"
        else:
            verdict, how = "not shown", "not above the image shift's: this model does not lean on the text more"
        out.append(Finding("text_shift_nfr", label_t, text["estimate"], verdict, ci=_ci(text),
                           note=(f"{int(text['n_flipped'])} of {int(text['n'])} answers flipped; image shift "
                                 f"{_fmt_ci(image)}: {how}; the paper reports above 0.6 for Qwen2-VL and LLaVA-1.5")))
    if image is None:
        out.append(_missing("image_shift_nfr", label_i, "image_shift"))
    else:
        out.append(Finding("image_shift_nfr", label_i, image["estimate"], "n/a", ci=_ci(image),
                           note=f"{int(image['n_flipped'])} of {int(image['n'])} answers flipped; context for "
                                "text_shift_nfr"))
    return out


def headline_findings(auroc: pd.DataFrame, changed: pd.DataFrame, nfr: pd.DataFrame, *, model: str,
                      probe: Mapping[str, Any] | None = None, marker_shares: pd.DataFrame | None = None,
                      n_bootstrap: int = 1000, seed: int = 0) -> list[Finding]:
    """Every finding of the module docstring for one model, in reading order.

    ``auroc``: :func:`~radaudit.audits.modality_shift.tables.auroc_table`; ``changed``:
    :func:`~radaudit.audits.modality_shift.tables.changed_table`; ``nfr``:
    :func:`~radaudit.audits.modality_shift.tables.nfr_table`; ``probe``:
    :func:`~radaudit.audits.modality_shift.probe.image_probe` (``None``: not run); ``marker_shares``:
    :func:`~radaudit.audits.modality_shift.marker.marker_share` of the gradient maps (``None``: not run;
    ``n_bootstrap`` / ``seed`` for its CI). The positive controls read the marked conditions when
    ``auroc`` holds ``marked_only_image`` for ``model``.
    """
    marked = _row(auroc, model, condition="marked_only_image") is not None
    controls = [_only_image(auroc, model, probe, marked=marked), _changed(changed, model, marked=marked)]
    natural = ([_natural_only_image(auroc, model, probe), _changed(changed, model, marked=False, natural=True)]
               if marked else [])
    if marked:
        controls.append(marker_saliency(marker_shares, model, n_bootstrap=n_bootstrap, seed=seed))
    image_used = any(f.verdict == "shown" for f in (controls[1], *natural[1:]))
    return [*controls, *natural, _probe(probe), _no_input(auroc, model), *_nfr(nfr, model, image_used)]
