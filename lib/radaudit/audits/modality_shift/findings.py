"""The headline findings of a modality_shift run (``findings.json``, format in ``../shared/FINDINGS.md``).

The paper's claim (Restrepo et al., §4) is that VLMs lean on the text: swapping the text flips many
correct answers (NFR above 0.6 for Qwen2-VL and LLaVA-1.5 on MIMIC-CXR, §4 and Fig. 2c), swapping the image
few. That claim can only be read from a model that *can* use the image, whose answers follow the *label* an
input shows (not which patient it comes from), and on data where the image carries the label about as well
as the text does. So the run carries controls, and every verdict with a threshold is read against a ``bar``
by the central rule (:func:`radaudit.findings.judge`: the whole 95% CI on the bar's side is ``shown``, the
estimate only is ``partly``); a finding that rests on controls lists them in ``controls``, and
:func:`radaudit.findings.settle` lowers it when one fails.

Positive controls (the image pathway works):

- ``only_image_auroc``: AUROC of P(yes) with the text removed; bar ≥ :data:`POSITIVE_MIN` (0.75). When the
  preset runs the marked conditions (the demo: the label burned into the image,
  :mod:`radaudit.audits.modality_shift.marker`) it is read from ``marked_only_image``, because the natural demo
  images carry the label only weakly (see the probes); otherwise from ``only_image``. The label says which.
- ``image_shift_changed``: share of answers that change when only the image is swapped for an
  opposite-label one (marked images when run: ``marked_image_shift`` vs ``marked_no_shift``); bar
  > :data:`CHANGED_MIN` (0.10), Wilson CI.
- ``marker_saliency_share`` (with the marked conditions): the mean share of the answer margin's pixel
  sensitivity (:func:`radaudit.audits.modality_shift.heatmap.gradient_maps`) on the marker's patches in
  ``marked_only_image``, BCa bootstrap CI over samples; bar > :data:`SALIENCY_FACTOR` (2) times the patches'
  share of the grid (where a map blind to the marker would put it).

Negative controls (the answers follow the label an input shows, not the input's identity). Each swaps the input
for another patient's with the **same** label (:data:`radaudit.audits.modality_shift.conditions.SAME_LABEL_CONDITIONS`),
which must change few answers. *Threshold*: at most :data:`SAME_LABEL_SHARE` (one half) of the lower 95% bound of
the share the matching **opposite**-label swap changes, and the whole Wilson CI at or below it. Why relative to
the opposite-label swap: a model that reads which image (or text) it is shown — patient identity, acquisition
noise — changes about as many answers under a same-label swap as under an opposite-label one, while a model that
reads the label changes (almost) none; requiring the same-label swap to stay below half of the opposite-label
swap's effect says that most of that effect comes from the label the input shows. The lower bound, not the
estimate, so the bar does not rise with the opposite swap's noise. When the opposite swap changes nothing for
sure (bound 0), there is no label effect to stay below and the control cannot pass (the note says so).

- ``same_label_image_swap_changed``: ``marked_same_label_image_shift`` vs ``marked_no_shift`` when the marked
  conditions run (bar from ``image_shift_changed``), else ``same_label_image_shift`` vs ``no_shift``.
- ``same_label_text_swap_changed``: ``same_label_text_shift`` vs ``no_shift``, bar from the opposite-label text
  swap's changed share (``text_shift`` vs ``no_shift``).
- ``natural_same_label_image_swap_changed`` (only beside the marked controls): the same on the natural images,
  the control of ``natural_image_shift_changed``.

Beside the marked controls, the paper's quantities on the natural images: ``natural_only_image_auroc`` and
``natural_image_shift_changed``, at the same bars; *partly* when the estimate misses the bar but the CI is above
chance (above 0.5 / above 0).

How much of the label each modality carries (descriptive of the data, not of the model):

- ``image_probe_auroc`` and ``text_probe_auroc``: a pixel logistic regression and a TF-IDF logistic regression
  on the text the model is shown (:mod:`radaudit.audits.modality_shift.probe`), fitted on the training patients and
  scored on the evaluated samples, AUROC with a bootstrap CI; bar ≥ :data:`POSITIVE_MIN` (the level asked of
  the image pathway).
- ``notes_naming_diagnosis_share``: the share of the evaluated samples' notes that name the diagnosis
  (:func:`radaudit.audits.modality_shift.probe.notes_naming_diagnosis`), Wilson CI; *n/a* (descriptive).

Descriptive numbers (*n/a*, never controls):

- ``majority_accuracy``: accuracy of always giving the majority answer on the evaluated samples
  (:func:`radaudit.audits.modality_shift.tables.majority_accuracy`, Wilson CI); the note puts No Shift's
  accuracy beside it.
- ``no_input_auroc``: AUROC of P(yes) with image and text removed. One constant prompt gives one P(yes) for
  every sample, so this AUROC is 0.5 by construction, whatever the model does: it cannot fail, so it is not a
  control (``../shared/FINDINGS.md``).
- ``image_shift_nfr``: the image shift's NFR, context for the text shift's.

The paper's claim, ``text_shift_nfr`` (NFR = flips / all N, natural images; ``controls``: ``only_image_auroc``,
``image_shift_changed``, ``same_label_image_swap_changed``, ``same_label_text_swap_changed``). Rule, in order:

1. *Ordering* (bar: > the image shift NFR's upper 95% bound): *shown* when the text shift's CI lies above the
   image shift's, *partly* when only the estimate is higher, else *not shown*.
2. *The model could have used the image*: when no image swap changes answers (``image_shift_changed`` and
   ``natural_image_shift_changed`` both not *shown*), the ordering is true by construction: *partly*.
3. *The image carries the label at least as well as the text*: leaning on the text is the paper's bias only
   when the pixels offer the label as well as the text does. When the text probe's CI lies wholly above the
   pixel probe's (the text carries the label clearly better), relying on the text is the rational weighting of
   the evidence, not a bias: a *shown* becomes *partly* and the note says so. When the probes were not run, this
   cannot be checked and a *shown* becomes *partly* too. (Overlapping probe CIs, or a better pixel probe, leave
   the verdict as it is.)
4. *Controls* (:func:`radaudit.findings.settle`): a *shown* whose controls did not all pass becomes *not shown*.

Every value is computed by the run's tables (:mod:`radaudit.audits.modality_shift.tables`) and probes; the
thresholds are the constants below. A condition the preset does not run gives ``None`` and *n/a*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from radaudit.findings import Bar, Finding, judge
from radaudit.stats import bootstrap_ci

__all__ = ["CHANGED_MIN", "POSITIVE_MIN", "SALIENCY_FACTOR", "SAME_LABEL_SHARE", "TEXT_NFR_CONTROLS",
           "headline_findings", "marker_saliency", "same_label_bar"]

#: Positive control: the image-only AUROC must reach this (and the probes are read against it).
POSITIVE_MIN = 0.75
#: Share of answers the opposite-label image swap must change.
CHANGED_MIN = 0.10
#: The heatmap's positive control: the marker's patches must hold this many times their share of the grid.
SALIENCY_FACTOR = 2.0
#: The same-label swaps' bar: at most this share of the opposite-label swap's effect (its lower 95% bound).
SAME_LABEL_SHARE = 0.5
#: The controls ``text_shift_nfr`` rests on.
TEXT_NFR_CONTROLS = ("only_image_auroc", "image_shift_changed", "same_label_image_swap_changed",
                     "same_label_text_swap_changed")

_DESCRIPTIVE = "descriptive"


def _row(table: pd.DataFrame | None, model: str, **match: str) -> Mapping[str, Any] | None:
    if table is None or table.empty:
        return None
    sel = table[table["model"] == model]
    for k, v in match.items():
        sel = sel[sel[k] == v]
    return None if sel.empty else sel.iloc[0].to_dict()


def _ci(row: Mapping[str, Any]) -> tuple[float, float] | None:
    lo, hi = row.get("low"), row.get("high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return None
    return float(lo), float(hi)


def _fmt_ci(row: Mapping[str, Any]) -> str:
    if _ci(row) is None:
        return f"{row['estimate']:.3f}"
    return f"{row['estimate']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def _missing(fid: str, label: str, condition: str) -> Finding:
    return Finding(fid, label, None, "n/a", note=f"condition {condition!r} is not run by this preset")


def _judged(fid: str, label: str, row: Mapping[str, Any], bar: tuple[str, float], note: str, *,
            controls: tuple[str, ...] = (), above_chance: float | None = None) -> Finding:
    """A finding whose verdict is :func:`radaudit.findings.judge` of the row against ``bar``; with
    ``above_chance``, a *not shown* whose CI lies above that value becomes *partly*."""
    value, ci = float(row["estimate"]), _ci(row)
    j = judge(value, ci, bar)
    verdict, why = j.verdict, j.reason
    if verdict == "not shown" and above_chance is not None and ci is not None and ci[0] > above_chance:
        verdict, why = "partly", f"{why}, but its 95% CI is above {above_chance:g}"
    note = "; ".join(x for x in (why, note) if x)
    return Finding(fid, label, value, verdict, ci=ci, note=note, bar=Bar.of(bar), controls=controls)


# --- positive controls ---------------------------------------------------------------------------

def _only_image(auroc: pd.DataFrame, model: str, probe: Mapping[str, Any] | None, *, marked: bool) -> Finding:
    fid = "only_image_auroc"
    condition = "marked_only_image" if marked else "only_image"
    label = ("AUROC of P(yes) with the text removed, the label burned into the image: positive control" if marked
             else "AUROC of P(yes) with the text removed (image only): positive control")
    r = _row(auroc, model, condition=condition)
    if r is None:
        return _missing(fid, label, condition)
    note = f"{r['n']} samples ({r['n_positive']} positive); the image pathway must reach {POSITIVE_MIN}"
    if not marked and probe is not None and probe.get("estimate") is not None:
        note += f"; a pixel probe on the same images reaches {_fmt_ci(probe)}"
        if probe.get("high", 1.0) < POSITIVE_MIN:
            note += " — below the bar too, so these images carry less of the label than the control asks for"
    return _judged(fid, label, r, (">=", POSITIVE_MIN), note)


def _natural_only_image(auroc: pd.DataFrame, model: str, probe: Mapping[str, Any] | None) -> Finding:
    fid, label = "natural_only_image_auroc", "AUROC of P(yes) with the text removed, natural images (paper's Only Image)"
    r = _row(auroc, model, condition="only_image")
    if r is None:
        return _missing(fid, label, "only_image")
    note = f"{r['n']} samples; above chance when the CI excludes 0.5"
    if probe is not None and probe.get("estimate") is not None:
        note += f"; the pixel probe's ceiling on the same images: {_fmt_ci(probe)}"
    return _judged(fid, label, r, (">=", POSITIVE_MIN), note, above_chance=0.5)


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
    natural = shares[(shares["model"] == model) & (shares["condition"] == "only_image")]["marker_share"]
    note = (f"{len(sel)} samples; the marker's {int(sel['n_patches'].iloc[0])} patches are {uniform:.3f} of the grid "
            f"(bar: {SALIENCY_FACTOR:g} x that)"
            + (f"; the same corner on the natural images holds {natural.mean():.3f}" if len(natural) else ""))
    row = {"estimate": float(values.mean()), "low": ci.low, "high": ci.high}
    f = _judged(fid, label, row, (">", SALIENCY_FACTOR * uniform), note)
    if f.verdict == "not shown":
        f = replace(f, note=f.note + "; the gradient map does not find the marker the answer follows")
    return f


def _changed(changed: pd.DataFrame, model: str, *, marked: bool, natural: bool = False,
             controls: tuple[str, ...] = ()) -> Finding:
    condition = "marked_image_shift" if marked else "image_shift"
    if natural:
        fid, label = "natural_image_shift_changed", "Share of answers that change when only the natural image is swapped"
    else:
        fid = "image_shift_changed"
        label = ("Share of answers that change when only the image (label burned in) is swapped: positive control"
                 if marked else "Share of answers that change when only the image is swapped: positive control")
    r = _row(changed, model, condition=condition)
    if r is None:
        return _missing(fid, label, condition)
    note = f"{r['n_changed']} of {r['n']} answers; Wilson CI"
    return _judged(fid, label, r, (">", CHANGED_MIN), note, controls=controls, above_chance=0.0 if natural else None)


# --- negative controls: same-label swaps -----------------------------------------------------------

def same_label_bar(opposite: Mapping[str, Any]) -> float:
    """The same-label swap's bar (module docstring): :data:`SAME_LABEL_SHARE` x the lower 95% bound of the
    opposite-label swap's changed share (its estimate when it has no interval)."""
    lo = opposite.get("low")
    base = float(opposite["estimate"]) if lo is None or pd.isna(lo) else float(lo)
    return SAME_LABEL_SHARE * max(0.0, base)


def _same_label(changed: pd.DataFrame, model: str, fid: str, label: str, condition: str, opposite: str) -> Finding:
    r = _row(changed, model, condition=condition)
    if r is None:
        return _missing(fid, label, condition)
    o = _row(changed, model, condition=opposite)
    if o is None:
        return Finding(fid, label, float(r["estimate"]), "n/a", ci=_ci(r),
                       note=f"condition {opposite!r} is not run, so there is no opposite-label swap to read it against")
    bar = same_label_bar(o)
    note = (f"{r['n_changed']} of {r['n']} answers, Wilson CI; negative control: a swap that keeps the label must "
            f"change at most {SAME_LABEL_SHARE:g} x the lower bound of the opposite-label swap's share "
            f"({opposite}: {_fmt_ci(o)}), i.e. the answers follow the label the input shows, not which "
            "patient's input it is")
    if bar <= 0:
        note += "; the opposite-label swap changes no answer for sure, so there is no label effect to stay below"
    f = _judged(fid, label, r, ("<=", bar), note)
    if f.verdict == "not shown" and bar > 0:
        f = replace(f, note=f.note + ": the answers follow the input's identity or noise too")
    return f


def _same_label_image(changed: pd.DataFrame, model: str, *, marked: bool, natural: bool = False) -> Finding:
    if natural:
        return _same_label(changed, model, "natural_same_label_image_swap_changed",
                           "Share of answers that change when the natural image is swapped for another patient's with the "
                           "same label", "same_label_image_shift", "image_shift")
    if marked:
        return _same_label(changed, model, "same_label_image_swap_changed",
                           "Share of answers that change when the image (label burned in) is swapped for another "
                           "patient's with the same label: negative control", "marked_same_label_image_shift",
                           "marked_image_shift")
    return _same_label(changed, model, "same_label_image_swap_changed",
                       "Share of answers that change when the image is swapped for another patient's with the same "
                       "label: negative control", "same_label_image_shift", "image_shift")


def _same_label_text(changed: pd.DataFrame, model: str) -> Finding:
    return _same_label(changed, model, "same_label_text_swap_changed",
                       "Share of answers that change when the text is swapped for another patient's with the same label: "
                       "negative control", "same_label_text_shift", "text_shift")


# --- the data: probes, notes, the constant answer ----------------------------------------------------

def _probe(probe: Mapping[str, Any] | None, *, text: bool, other: Mapping[str, Any] | None) -> Finding:
    if text:
        fid, label = ("text_probe_auroc", "AUROC of a text probe (TF-IDF logistic regression on the text the model "
                                          "sees) on the evaluated samples")
        what, other_name = "the text carries", "pixel"
    else:
        fid, label = ("image_probe_auroc",
                      "AUROC of a pixel probe (logistic regression on the images) on the evaluated samples")
        what, other_name = "the natural images carry", "text"
    if probe is None or probe.get("estimate") is None:
        return Finding(fid, label, None, "n/a", note=f"the {'text' if text else 'image'} probe was not run")
    note = f"{probe['description']}; how much of the label {what}, beside the bar asked of the image pathway"
    if other is not None and other.get("estimate") is not None:
        note += f"; the {other_name} probe: {_fmt_ci(other)}"
    return _judged(fid, label, probe, (">=", POSITIVE_MIN), note)


def _notes(notes: Mapping[str, Any] | None, notes_all: Mapping[str, Any] | None) -> Finding:
    fid, label = "notes_naming_diagnosis_share", "Share of the evaluated samples' notes that name the diagnosis"
    if notes is None:
        return Finding(fid, label, None, "n/a", note="the notes were not searched for the diagnosis in this run")
    note = (f"{_DESCRIPTIVE}: {notes['n_named']} of {notes['n']} notes contain a word for the positive label "
            f"({', '.join(notes['patterns'])}; case-insensitive, negated or not): {notes['n_named_positive']} of "
            f"{notes['n_positive']} positives, {notes['n_named_negative']} of {notes['n_negative']} negatives; "
            "Wilson CI")
    if notes_all is not None:
        note += f"; in the whole data set {notes_all['n_named']} of {notes_all['n']}"
    return Finding(fid, label, float(notes["estimate"]), "n/a", ci=(float(notes["low"]), float(notes["high"])),
                   note=note)


def _majority(metrics: pd.DataFrame | None, model: str) -> Finding:
    fid, label = "majority_accuracy", "Accuracy of always giving the majority answer on the evaluated samples"
    r = _row(metrics, model, condition="no_shift", metric="accuracy")
    if r is None or "majority_accuracy" not in r or pd.isna(r["majority_accuracy"]):
        return Finding(fid, label, None, "n/a", note="no No Shift accuracy with its majority baseline in this run")
    lo, hi = float(r["majority_low"]), float(r["majority_high"])
    acc = _ci(r)
    where = ("above it (CI above the constant answer's)" if acc is not None and acc[0] > r["majority_accuracy"]
             else "below it" if r["estimate"] < r["majority_accuracy"] else "not clearly above it")
    note = (f"{_DESCRIPTIVE}: the constant answer every accuracy is read against (majority label of the {int(r['n'])} "
            f"evaluated samples), Wilson CI; No Shift accuracy {_fmt_ci(r)} is {where}")
    return Finding(fid, label, float(r["majority_accuracy"]), "n/a", ci=(lo, hi), note=note)


def _no_input(auroc: pd.DataFrame, model: str) -> Finding:
    fid, label = "no_input_auroc", "AUROC of P(yes) with image and text removed (one constant prompt)"
    r = _row(auroc, model, condition="no_input")
    if r is None:
        return _missing(fid, label, "no_input")
    return Finding(fid, label, float(r["estimate"]), "n/a", ci=_ci(r),
                   note="descriptive: one constant prompt, AUROC 0.5 by construction (the same P(yes) for every "
                        "sample), so it cannot fail and is not a control")


# --- the paper's claim -------------------------------------------------------------------------------

def _nfr(nfr: pd.DataFrame, model: str, image_used: bool, probe: Mapping[str, Any] | None,
         text_probe: Mapping[str, Any] | None) -> list[Finding]:
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
        bar = (">", float(image["high"]))
        j = judge(float(text["estimate"]), _ci(text), bar)
        if j.verdict == "shown":
            verdict, how = "shown", "above the image shift's, CIs apart: the model leans on the text"
        elif text["estimate"] > image["estimate"]:
            verdict, how = "partly", "above the image shift's but the CIs overlap"
        else:
            verdict, how = "not shown", "not above the image shift's: this model does not lean on the text more"
        reasons = [how]
        if verdict != "not shown" and not image_used:
            verdict = "partly"
            reasons.append("but no image swap changes more than 10% of the answers, so the ordering is true by "
                           "construction")
        have_probes = (probe is not None and probe.get("estimate") is not None and text_probe is not None
                       and text_probe.get("estimate") is not None)
        if have_probes and float(text_probe["low"]) > float(probe["high"]):
            if verdict == "shown":
                verdict = "partly"
            if verdict != "not shown":
                reasons.append(f"the text carries the label clearly better than the pixels (text probe "
                               f"{_fmt_ci(text_probe)} vs pixel probe {_fmt_ci(probe)}), so leaning on the text is "
                               "the rational weighting of the evidence, not the paper's bias")
        elif have_probes:
            better = ("the pixels carry the label clearly better than the text" if float(probe["low"]) >
                      float(text_probe["high"]) else "the probes' CIs overlap, so the text does not carry the label "
                                                     "clearly better than the pixels")
            reasons.append(f"{better} (pixel probe {_fmt_ci(probe)}, text probe {_fmt_ci(text_probe)})")
        elif verdict == "shown":
            verdict = "partly"
            reasons.append("the probes were not run, so whether the image carries the label as well as the text "
                           "(rule 3) is unchecked")
        out.append(Finding("text_shift_nfr", label_t, text["estimate"], verdict, ci=_ci(text), bar=Bar.of(bar),
                           controls=TEXT_NFR_CONTROLS,
                           note=(f"{int(text['n_flipped'])} of {int(text['n'])} answers flipped; image shift "
                                 f"{_fmt_ci(image)}: " + "; ".join(reasons)
                                 + "; the paper reports above 0.6 for Qwen2-VL and LLaVA-1.5")))
    if image is None:
        out.append(_missing("image_shift_nfr", label_i, "image_shift"))
    else:
        out.append(Finding("image_shift_nfr", label_i, image["estimate"], "n/a", ci=_ci(image),
                           note=f"{_DESCRIPTIVE}: {int(image['n_flipped'])} of {int(image['n'])} answers flipped; "
                                "context for text_shift_nfr"))
    return out


def headline_findings(auroc: pd.DataFrame, changed: pd.DataFrame, nfr: pd.DataFrame, *, model: str,
                      probe: Mapping[str, Any] | None = None, marker_shares: pd.DataFrame | None = None,
                      n_bootstrap: int = 1000, seed: int = 0, text_probe: Mapping[str, Any] | None = None,
                      metrics: pd.DataFrame | None = None, notes: Mapping[str, Any] | None = None,
                      notes_all: Mapping[str, Any] | None = None) -> list[Finding]:
    """Every finding of the module docstring for one model, in reading order (controls first).

    ``auroc``: :func:`~radaudit.audits.modality_shift.tables.auroc_table`; ``changed``:
    :func:`~radaudit.audits.modality_shift.tables.changed_table`; ``nfr``:
    :func:`~radaudit.audits.modality_shift.tables.nfr_table`; ``metrics``:
    :func:`~radaudit.audits.modality_shift.tables.metrics_table` (for ``majority_accuracy``); ``probe`` /
    ``text_probe``: :func:`~radaudit.audits.modality_shift.probe.image_probe` /
    :func:`~radaudit.audits.modality_shift.probe.text_probe` (``None``: not run); ``notes`` / ``notes_all``:
    :func:`~radaudit.audits.modality_shift.probe.notes_naming_diagnosis` of the evaluated / of all samples;
    ``marker_shares``: :func:`radaudit.audits.modality_shift.marker.marker_share` of the gradient maps (``None``: not
    run; ``n_bootstrap`` / ``seed`` for its CI). The controls read the marked conditions when ``auroc`` holds
    ``marked_only_image`` for ``model``. The verdicts are final only after :func:`radaudit.findings.settle`
    (which :meth:`radaudit.session.Run.add_findings` applies when it writes them).
    """
    marked = _row(auroc, model, condition="marked_only_image") is not None
    positive = [_only_image(auroc, model, probe, marked=marked), _changed(changed, model, marked=marked)]
    negative = [_same_label_image(changed, model, marked=marked), _same_label_text(changed, model)]
    natural: list[Finding] = []
    if marked:
        positive.append(marker_saliency(marker_shares, model, n_bootstrap=n_bootstrap, seed=seed))
        natural_control = _same_label_image(changed, model, marked=False, natural=True)
        natural = [_natural_only_image(auroc, model, probe),
                   _changed(changed, model, marked=False, natural=True,
                            controls=() if natural_control.value is None else (natural_control.id,)),
                   natural_control]
    # rule 2: some image swap changes more than CHANGED_MIN of the answers (its estimate on the bar's side)
    image_used = any(f.id in ("image_shift_changed", "natural_image_shift_changed") and f.value is not None
                     and f.bar is not None and f.bar.holds(f.value) for f in (*positive, *natural))
    data = [_probe(probe, text=False, other=text_probe), _probe(text_probe, text=True, other=probe),
            _notes(notes, notes_all), _majority(metrics, model), _no_input(auroc, model)]
    # a shown or partly whose control failed is lowered, with the control named, by radaudit.findings.settle
    return [*positive, *negative, *natural, *data, *_nfr(nfr, model, image_used, probe, text_probe)]
