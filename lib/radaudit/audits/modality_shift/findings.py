"""The headline findings of a modality_shift run (``findings.json``, format in ``../shared/FINDINGS.md``).

The paper's claim (Restrepo et al., §4) is that VLMs lean on the text: swapping the text flips many
correct answers (NFR above 0.6 for Qwen2-VL and LLaVA-1.5 on MIMIC-CXR), swapping the image few. That
claim can only be read from a model that *can* use the image, so the demo carries controls:

- ``only_image_auroc`` (**positive control**): AUROC of P(yes) with the text removed. *shown* when
  ≥ :data:`POSITIVE_MIN` (0.75): the image pathway carries the label. Beside it,
  ``image_probe_auroc``: a logistic regression on the evaluated images' pixels, trained on the
  training patients — how much of the label the pixels hold at all, so a failed positive control
  says whether the model or the data is short.
- ``no_input_auroc`` (**negative control**): AUROC of P(yes) with both image and text removed (the
  same prompt for every sample). *shown* when within :data:`NEGATIVE_BAND` (0.45–0.55): nothing of
  the sample leaks into the input.
- ``image_shift_changed``: share of samples whose answer changes when only the image is swapped.
  *shown* when > :data:`CHANGED_MIN` (0.10): the answers depend on the image, so "the model ignores
  the image" is not true by construction.
- ``text_shift_nfr`` and ``image_shift_nfr``: the paper's NFR (flips / all N) of each shift.
  ``text_shift_nfr`` is *shown* when its CI lies above the image shift's (the paper's ordering: the
  model leans on the text) and the image swap changes answers (``image_shift_changed`` not *not
  shown*: otherwise the ordering is true by construction, *partly*); *partly* when higher with
  overlapping CIs, else *not shown*.

Every value is computed by the run's tables (:mod:`radaudit.audits.modality_shift.metrics`); the
thresholds are the constants below. A condition the preset does not run gives ``None`` and *n/a*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from radaudit.findings import Finding

__all__ = ["CHANGED_MIN", "NEGATIVE_BAND", "POSITIVE_MIN", "control_verdict", "headline_findings"]

#: Positive control: the image-only AUROC must reach this.
POSITIVE_MIN = 0.75
#: Negative control: the no-input AUROC must lie in this band.
NEGATIVE_BAND = (0.45, 0.55)
#: Share of answers the image swap must change.
CHANGED_MIN = 0.10


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


def _only_image(auroc: pd.DataFrame, model: str, probe: Mapping[str, Any] | None) -> Finding:
    fid, label = "only_image_auroc", "AUROC of P(yes) with the text removed (image only): positive control"
    r = _row(auroc, model, condition="only_image")
    if r is None:
        return _missing(fid, label, "only_image")
    verdict = control_verdict("positive", r["estimate"])
    note = f"{r['n']} samples ({r['n_positive']} positive); the image pathway must reach {POSITIVE_MIN}"
    if probe is not None and probe.get("estimate") is not None:
        note += f"; a pixel probe on the same images reaches {_fmt_ci(probe)}"
    if verdict == "not shown":
        note += (": the stand-in's image pathway falls short of the threshold" +
                 (" — and so do the pixels themselves, so the images of this data set carry less of the label "
                  "than the control asks for" if probe is not None and probe.get("high", 1.0) < POSITIVE_MIN else ""))
    return Finding(fid, label, r["estimate"], verdict, ci=_ci(r), note=note)


def _probe(probe: Mapping[str, Any] | None) -> Finding:
    fid, label = "image_probe_auroc", "AUROC of a pixel probe (logistic regression on the images) on the evaluated samples"
    if probe is None or probe.get("estimate") is None:
        return Finding(fid, label, None, "n/a", note="the image probe was not run")
    ok = probe["estimate"] >= POSITIVE_MIN
    note = (f"{probe['description']}; the ceiling the positive control can expect from these images"
            + ("" if ok else f": below {POSITIVE_MIN}, the images carry the label only weakly at this size"))
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


def _changed(changed: pd.DataFrame, model: str) -> Finding:
    fid, label = "image_shift_changed", "Share of answers that change when only the image is swapped"
    r = _row(changed, model, condition="image_shift")
    if r is None:
        return _missing(fid, label, "image_shift")
    verdict = control_verdict("changed", r["estimate"])
    note = f"{r['n_changed']} of {r['n']} answers; Wilson CI"
    if verdict == "not shown":
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
            verdict, how = "partly", ("above the image shift's, CIs apart, but the image controls fail (the image swap "
                                      "changes no more than 10% of the answers), so the ordering is true by construction")
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
                      probe: Mapping[str, Any] | None = None) -> list[Finding]:
    """Every finding of the module docstring for one model, in reading order.

    ``auroc``: :func:`~radaudit.audits.modality_shift.metrics.auroc_table`; ``changed``:
    :func:`~radaudit.audits.modality_shift.metrics.changed_table`; ``nfr``:
    :func:`~radaudit.audits.modality_shift.metrics.nfr_table`; ``probe``:
    :func:`~radaudit.audits.modality_shift.probe.image_probe` (``None``: not run).
    """
    changed_finding = _changed(changed, model)
    image_used = changed_finding.verdict != "not shown"
    return [_only_image(auroc, model, probe), _probe(probe), _no_input(auroc, model), changed_finding,
            *_nfr(nfr, model, image_used)]
