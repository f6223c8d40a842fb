"""The CheXpert-style labeler (radaudit.text.labeler) against the IU X-ray MeSH/Problems annotations,
on a dev half (rules may be written on it) and a test half (never looked at) of the reports.

    .venv/bin/python benchmarks/labeler_iu_xray.py [--data-root ../shared/data] [--out benchmarks/results]
                                                    [--errors 3] [--resamples 2000]

Reads the IU X-ray / Open-i reports (``indiana_reports.csv``) and the CheXpert phrase lists from
the data root, labels findings + impression of every indexed report, maps the manually assigned
MeSH terms to the 14 observations (:data:`MAPPING`; a term maps to 1 or, as CheXpert reads the
concept, to -1 = uncertain) and writes ``labeler_iu_xray.md`` and ``labeler_iu_xray.csv``.

Split (issue 18): :func:`split_half` puts each report uid in "dev" or "test" by a seeded sha256
hash (:data:`SPLIT_SEED`). Results are reported for dev, test and all reports, for the labeler
before and after the rules written on the dev half (``ChexpertLabeler(precision_rules=...)``) and
for the mapping before and after the split (:func:`mapping`). The CSV has one row per half x
labeler version x mapping version x uncertain reading (U+: -1 is positive, U-: -1 is negative,
on both the labeler's and the reference's side) x observation: support (reference positives),
predicted positives, precision, recall, F1, tp, fp, fn. The macro F1 averages the observations
with at least :data:`MIN_SUPPORT` reference positives over all reports. The issue's bars are
checked on the test half with 95% bootstrap CIs. ``--errors N`` adds N false positives and N false
negatives per weak observation to the markdown, from the DEV half only (``--errors-half test`` is
refused).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from radaudit.data import chexpert_phrases_dir, load_dataset
from radaudit.text.labeler import CHEXPERT_LABELER_EXAMPLES, OBSERVATIONS, ChexpertLabeler

MIN_SUPPORT = 30
#: Issue 18's bars ("Done when"), on the test half: macro F1 with uncertain as positive and as negative;
#: Pneumonia precision without recall below the recall bar.
BAR_MACRO = 0.85
BAR_PNEUMONIA_P = 0.6
BAR_PNEUMONIA_R = 0.8

#: Seed of the dev/test split (the issue number, fixed before any result of the split was seen).
SPLIT_SEED = 18
HALVES = ("dev", "test")


def split_half(uid: str, seed: int = SPLIT_SEED) -> str:
    """``"dev"`` or ``"test"`` for IU report ``uid``: the first byte of
    ``sha256(f"radaudit-iu-labeler-split:{seed}:{uid}")`` even -> dev, odd -> test. Depends on the
    uid and the seed only (not on row order, the other uids or the Python hash seed)."""
    digest = hashlib.sha256(f"radaudit-iu-labeler-split:{seed}:{str(uid).strip()}".encode()).digest()
    return HALVES[digest[0] & 1]


def split_halves(uids, seed: int = SPLIT_SEED) -> pd.Series:
    """:func:`split_half` of every uid, as a Series aligned with ``uids`` (index kept for a Series)."""
    index = uids.index if isinstance(uids, pd.Series) else None
    return pd.Series([split_half(u, seed) for u in uids], index=index, dtype=object)


Written = Literal["all", "dev"]


@dataclass(frozen=True)
class MapRule:
    observation: str
    head: str  # MeSH heading (the part before the first "/"), exact
    qualifier: str | None  # regex that some "/"-qualifier must match (None: any)
    exclude: str | None  # regex that no qualifier may match
    why: str
    post_hoc: bool = False  # added after looking at the labeler's errors (reported separately)
    #: 1.0: the term makes the observation positive; -1.0: uncertain, as CheXpert reads the concept
    #: (read like the labeler's -1: positive under U+, negative under U-)
    value: float = 1.0
    #: "all": written before the dev/test split, looking at all reports (test half included);
    #: "dev": written or changed after the split, looking at the dev half only
    written_on: Written = "all"
    #: for a rule the split changed: its value before (the rule then existed, written on all reports)
    value_before_split: float | None = None


#: MeSH heading (+ qualifier condition) -> CheXpert observation. A term maps when its meaning is
#: the observation as the CheXpert phrase lists define it; terms that are ambiguous or that the
#: lists do not cover are left unmapped (listed in UNMAPPED_NOTES).
MAPPING: tuple[MapRule, ...] = (
    MapRule("No Finding", "normal", None, None, "IU's 'normal' index term"),
    MapRule("Enlarged Cardiomediastinum", "Mediastinum", r"enlarged|prominent", r"lymph nodes", "widened / prominent mediastinum"),
    MapRule("Cardiomegaly", "Cardiomegaly", None, None, "same concept"),
    MapRule("Cardiomegaly", "Cardiac Shadow", r"enlarged", None, "enlarged cardiac silhouette"),
    MapRule("Lung Lesion", "Nodule", None, None, "'nodule' in the Lung Lesion list"),
    MapRule("Lung Lesion", "Mass", None, r"breast", "'mass' in the Lung Lesion list (breast masses excluded)"),
    MapRule("Lung Lesion", "Cavitation", None, None, "'cavitary lesion' in the Lung Lesion list"),
    MapRule("Lung Lesion", "Opacity", r"^round$", r"ribs|breast|adipose|mediastinum|sternum|spine|clavicle",
            "a round opacity = 'nodular opacity' in the Lung Lesion list (not over bone or soft tissue)", True),
    MapRule("Lung Lesion", "Density", r"^round$", r"ribs|breast|adipose|mediastinum|sternum|spine|clavicle",
            "a round density = 'nodular density' in the Lung Lesion list (not over bone or soft tissue)", True),
    MapRule("Lung Opacity", "Opacity", None, None, "'opaci' in the Lung Opacity list"),
    MapRule("Lung Opacity", "Airspace Disease", None, None, "'airspace disease' in the Lung Opacity list"),
    MapRule("Lung Opacity", "Infiltrate", None, None, "'infiltrate' in the Lung Opacity list"),
    MapRule("Lung Opacity", "Cicatrix", None, r"pleura|breast|ribs|skin|thorax",
            "'scar' in the Lung Opacity list, in the lung (pleural scars: Pleural Other; breast/chest wall scars: none)"),
    MapRule("Lung Opacity", "Markings", r"interstitial", None, "'interstitial marking' in the Lung Opacity list"),
    MapRule("Lung Opacity", "Lung Diseases, Interstitial", None, None, "'interstitial lung' in the Lung Opacity list"),
    MapRule("Edema", "Pulmonary Edema", None, None, "same concept"),
    MapRule("Edema", "Pulmonary Congestion", None, None,
            "'pulmonary/vascular congestion' in the Edema list, which CheXpert labels uncertain "
            "(post_negation_uncertainty.txt); mapped to the same uncertain value (before the split: positive)",
            post_hoc=True, value=-1.0, written_on="dev", value_before_split=1.0),
    MapRule("Edema", "Heart Failure", None, None, "'heart failure' in the Edema list"),
    MapRule("Consolidation", "Consolidation", None, None, "same concept"),
    MapRule("Pneumonia", "Pneumonia", None, None, "same concept"),
    MapRule("Atelectasis", "Pulmonary Atelectasis", None, None, "same concept"),
    MapRule("Pneumothorax", "Pneumothorax", None, None, "same concept"),
    MapRule("Pneumothorax", "Hydropneumothorax", None, None, "contains a pneumothorax"),
    MapRule("Pneumothorax", "Hemopneumothorax", None, None, "contains a pneumothorax"),
    MapRule("Pleural Effusion", "Pleural Effusion", None, None, "same concept"),
    MapRule("Pleural Effusion", "Hydropneumothorax", None, None, "contains pleural fluid"),
    MapRule("Pleural Other", "Thickening", r"pleura", None, "'pleural thickening' in the Pleural Other list"),
    MapRule("Pleural Other", "Cicatrix", r"pleura", None, "'pleural scar' in the Pleural Other list"),
    MapRule("Pleural Other", "Pleura", None, None, "other pleural abnormality"),
    MapRule("Pleural Other", "Pulmonary Fibrosis", None, None,
            "'fibrosis' is in the Pleural Other list: CheXpert files pulmonary fibrosis there (clinically a "
            "parenchymal finding; left unmapped before the split)", post_hoc=True, written_on="dev"),
    MapRule("Pleural Other", "Fibrosis", None, None, "'fibrosis' in the Pleural Other list (as Pulmonary Fibrosis)",
            post_hoc=True, written_on="dev"),
    MapRule("Fracture", "Fractures, Bone", None, None, "same concept"),
    MapRule("Support Devices", "Catheters, Indwelling", None, None, "'catheter', 'picc', 'line' in the list"),
    MapRule("Support Devices", "Implanted Medical Device", None, None, "'pacemaker', 'valve', 'icd', 'device' in the list"),
    MapRule("Support Devices", "Medical Device", None, None, "'device' in the list"),
    MapRule("Support Devices", "Tube, Inserted", None, None, "'tube' in the list"),
    MapRule("Support Devices", "Stents", None, None, "implanted device ('device', 'coil' in the list)"),
)

#: The mapping versions the benchmark reports: "current" (every rule above), "before split" (the
#: rules as they stood before the dev/test split: written on all reports), "first" (as first
#: written, before any error analysis: no post-hoc rule, no devices-only No Finding).
MAPPING_VERSIONS = ("current", "before split", "first")


def mapping(version: str = "current") -> tuple[MapRule, ...]:
    """The rules of a mapping version (:data:`MAPPING_VERSIONS`)."""
    if version not in MAPPING_VERSIONS:
        raise ValueError(f"mapping version {version!r}: use one of {MAPPING_VERSIONS}")
    if version == "current":
        return MAPPING
    out = []
    for r in MAPPING:
        if r.written_on == "dev":
            if r.value_before_split is None:
                continue  # a rule that did not exist before the split
            r = replace(r, value=r.value_before_split, written_on="all", post_hoc=False)
        if version == "first" and r.post_hoc:
            continue
        out.append(r)
    return tuple(out)


UNMAPPED_NOTES = (
    ("Calcified Granuloma, Granuloma, Granulomatous Disease", "not a Lung Lesion: CheXpert's unmention 'calcified nodul' and 'granuloma' in no_finding.txt"),
    ("Density", "ambiguous site and kind (lung, bone, soft tissue, mediastinum; nodular or airspace)"),
    ("Costophrenic Angle/blunted", "a sign, not an effusion diagnosis; 'blunt' is in no_finding.txt, not in the Pleural Effusion list"),
    ("Surgical Instruments, Sutures, Foreign Bodies", "surgical clips, sutures, nipple rings, bullets: not support devices ('clip' is not in the list)"),
    ("Markings/bronchovascular, Lung/hyperdistention, Lung/hypoinflation, Emphysema, Aorta, spine terms", "no CheXpert observation (they only block No Finding)"),
    ("Pericardial Effusion", "not pleural (CheXpert unmention 'pericardial effusion')"),
)


def mesh_labels(terms: list[str], rules: tuple[MapRule, ...] = MAPPING) -> dict[str, float]:
    """``{observation: value}`` for the rules that match one of a report's MeSH terms (a positive
    match wins over an uncertain one)."""
    out: dict[str, float] = {}
    for term in terms:
        parts = [p.strip() for p in term.split("/")]
        head, quals = parts[0], parts[1:]
        for r in rules:
            if head != r.head:
                continue
            if r.qualifier and not any(re.search(r.qualifier, q, re.I) for q in quals):
                continue
            if r.exclude and any(re.search(r.exclude, q, re.I) for q in quals):
                continue
            out[r.observation] = max(out.get(r.observation, r.value), r.value)
    return out


def gold_table(df: pd.DataFrame, version: str = "current") -> pd.DataFrame:
    """Reports x observations: 1.0 (a mapped term is present), -1.0 (only an uncertain-valued one,
    e.g. Pulmonary Congestion for Edema in the current mapping) or 0.0. No Finding: MeSH ``normal``
    or (post hoc, not in the "first" version) a report whose every term maps to Support Devices
    (CheXpert's No Finding allows support devices)."""
    rules = mapping(version)
    maps = [mesh_labels(t, rules) for t in df["mesh"]]
    if version != "first":
        maps = [{**g, "No Finding": 1.0} if terms and _only_devices(terms) else g for g, terms in zip(maps, df["mesh"])]
    return pd.DataFrame({o: [g.get(o, 0.0) for g in maps] for o in OBSERVATIONS}, index=df.index, dtype=float)


def _only_devices(terms: list[str]) -> bool:
    """Every term of the report maps to Support Devices (and nothing else)."""
    return all(set(mesh_labels([t])) == {"Support Devices"} for t in terms)


def positive(values: pd.DataFrame | pd.Series | np.ndarray, uncertain: str) -> np.ndarray:
    """Labels (1 / -1 / 0 / NaN) read as binary: 1 is positive, -1 is positive under
    ``uncertain="positive"`` (U+) and negative under ``"negative"`` (U-), 0 and NaN negative.
    Applied to the labeler's output and to the mapped MeSH reference alike."""
    v = np.asarray(values, dtype=float)
    return (v == 1) | ((v == -1) if uncertain == "positive" else False)


def prf(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    tp = int((pred & gold).sum())
    fp = int((pred & ~gold).sum())
    fn = int((~pred & gold).sum())
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")
    return {"precision": p, "recall": r, "f1": f, "tp": tp, "fp": fp, "fn": fn}


def evaluate(labels: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """Per observation and uncertain reading: support (reference positives), predicted positives,
    precision, recall, F1, tp, fp, fn."""
    rows = []
    for uncertain in ("positive", "negative"):
        for obs in OBSERVATIONS:
            pred = positive(labels[obs], uncertain)
            g = positive(gold[obs], uncertain)
            rows.append({"uncertain_as": uncertain, "observation": obs, "support": int(g.sum()),
                         "predicted": int(pred.sum()), **prf(pred, g)})
    return pd.DataFrame(rows)


def macro_observations(gold: pd.DataFrame) -> list[str]:
    """The observations of the macro F1: at least :data:`MIN_SUPPORT` reference positives (U+ reading)
    over ALL reports, so that the dev and test halves average the same observations."""
    return [o for o in OBSERVATIONS if int(positive(gold[o], "positive").sum()) >= MIN_SUPPORT]


def macro(res: pd.DataFrame, observations: list[str]) -> pd.Series:
    """Mean F1 over ``observations``, per uncertain reading."""
    sub = res[res["observation"].isin(observations)]
    return sub.groupby("uncertain_as")["f1"].mean()


def _f1_counts(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (pred & gold).sum(0), (pred & ~gold).sum(0), (~pred & gold).sum(0)


def bar_statistics(obs_idx: list[int], pneumonia: int) -> dict[str, object]:
    """Statistics of the issue's bars, as functions of aligned (reports x 14) boolean arrays
    ``(pred U+, gold U+, pred U-, gold U-)``, for :func:`radaudit.stats.paired_bootstrap`."""

    def macro_f1(p: np.ndarray, g: np.ndarray) -> float:
        tp, fp, fn = _f1_counts(p[:, obs_idx], g[:, obs_idx])
        den = 2 * tp + fp + fn
        return float(np.mean(np.where(den > 0, 2 * tp / np.maximum(den, 1), np.nan)))

    def prec(p: np.ndarray, g: np.ndarray) -> float:
        tp, fp, _ = _f1_counts(p[:, [pneumonia]], g[:, [pneumonia]])
        return float(tp[0] / (tp[0] + fp[0])) if tp[0] + fp[0] else float("nan")

    def rec(p: np.ndarray, g: np.ndarray) -> float:
        tp, _, fn = _f1_counts(p[:, [pneumonia]], g[:, [pneumonia]])
        return float(tp[0] / (tp[0] + fn[0])) if tp[0] + fn[0] else float("nan")

    return {
        "macro F1 (U+)": lambda pp, gp, pn, gn: macro_f1(pp, gp),
        "macro F1 (U-)": lambda pp, gp, pn, gn: macro_f1(pn, gn),
        "Pneumonia precision (U+)": lambda pp, gp, pn, gn: prec(pp, gp),
        "Pneumonia recall (U+)": lambda pp, gp, pn, gn: rec(pp, gp),
        "Pneumonia precision (U-)": lambda pp, gp, pn, gn: prec(pn, gn),
        "Pneumonia recall (U-)": lambda pp, gp, pn, gn: rec(pn, gn),
    }


#: The error analysis made BEFORE the dev/test split, on all reports (kept as written then; its rules
#: are the "before the split" ones). The generated tables above it replace its numbers.
ANALYSIS_BEFORE_SPLIT = """\
### Before the split (looking at all reports, test half included)

- **Hedging vs indexing.** The MeSH indexers kept a hedged finding sometimes ("may represent focal
  area of atelectasis" -> Pulmonary Atelectasis, uid 3721) and often not ("most concerning for
  pneumonia", "atelectasis or scarring" -> only Opacity). So U+ wins for Atelectasis, Pleural
  Effusion, Consolidation and Edema recall and U- for Pneumonia, Lung Lesion and Fracture precision;
  neither choice suits every observation.
- **De-identification and list coverage.** Support Devices recall is bounded by the text: IU's
  de-identification replaced many device words ("left chest XXXX with tip in the mid SVC",
  "cardiac XXXX generator"), and the CheXpert list has no "stent", "lead(s)", "stimulator",
  "generator" or "prosthesis". Edema misses congestion written as "engorged", "pulmonary venous
  hypertension", "cephalization", "redistribution" (not in the list).
- **Phrase-list definitions.** The Pleural Other list contains "fibrosis" (pulmonary fibrosis
  becomes Pleural Other) and lacks "apical capping" and "fissural thickening"; the Lung Lesion
  unmention "calcified nodul" drops calcified nodules that MeSH indexes as Nodule; No Finding
  cannot see findings outside the no_finding list (low lung volumes, spondylosis, tortuous aorta,
  surgical clips), which MeSH never calls normal.
- **CheXpert's own conventions.** "Heart size is stable" / "stable mediastinal contours" are
  uncertain by the CheXpert rule, hence the many Enlarged Cardiomediastinum uncertains and a third
  of the Cardiomegaly false positives under U+.

Rules changed during that analysis (all general, none keyed to IU text): "no NN to suggest X" keeps
X negated (NegBio pattern); adjectival uncertainty cues inside a negated list ("no consolidation,
suspicious opacity, or effusion") do not end the negation; comma-separated subject lists before a
predicate ("The heart, pulmonary XXXX and mediastinum are within normal limits"); prepositions in
the verb group ("is near top normal", "is of normal size"); "fractures may not be demonstrated";
hyphens match spaces in phrases; endplate, Kerley B / suture lines and cystic fibrosis unmentions;
the mapping rules marked *post hoc* with "written on: all reports". The first version of the
labeler, before these changes, scored macro F1 0.753 (U+) / 0.764 (U-) with the first mapping
(a number from that time, not regenerated here).
"""

#: What the error analysis on the DEV half found (after the split), and what was changed.
ANALYSIS_AFTER_SPLIT = """\
### After the split (looking at dev-half errors only)

Labeler rules added in the first round (`ChexpertLabeler(precision_rules=1)`; deviations 6-11 in
the docstring of `radaudit.text.labeler`; `precision_rules=False` is the labeler of the
"before" columns; the default, `True`, adds the second round below):

- **Anatomy is not a finding (deviation 7).** CheXpert's Enlarged Cardiomediastinum list is all
  anatomy ("mediastinum", "contour", "mediastinal silhouette", ...), as are most Cardiomegaly
  phrases ("the heart", "heart size"); a mention is positive unless negated, so "The mediastinum is
  shifted", "opacity at the base of the mediastinum", "limits evaluation of the mediastinum",
  "magnified appearance of the heart", "The heart and lungs have XXXX XXXX in the interval" were
  positive, and "stable mediastinal contours" / "heart size is stable" uncertain (CheXpert rule). Now
  such a mention counts only when its clause has a size word (enlarged, widened, prominent, large,
  increased, borderline, ...); negated mentions ("normal heart size") stay 0. This is the main
  Enlarged Cardiomediastinum and Cardiomegaly precision gain, and it is a labeler error (the
  anatomy word says nothing about size), not a reference convention. It departs from CheXpert's
  "stable silhouette -> uncertain" rule, which now only acts on clauses with a size word.
- **Words that are not the observation (deviation 6).** Past infection is not pneumonia ("sequela
  of old granulomatous infection", "prior tuberculosis infection"); soft-tissue / subcutaneous
  edema is not pulmonary edema; rib, hilar, diaphragm and soft-tissue contours are not the
  cardiomediastinal contour; a catheter fracture is not a bone fracture; "lump" in "lumpectomy",
  "support" in "supporting structures" and breast prostheses are not lesions / support devices.
- **Hedges the cue list lacked (deviation 8):** "X would be a consideration", "consistent with
  developing X" (the list had only "compatible with developing"), "possibility of X", "for
  evaluation of X", "could obscure X".
- **"non" prefix (deviation 9):** "nonconsolidating airspace disease" is not consolidation.
- **Limitation statements (deviation 10):** "Please note that fractures may not be demonstrated"
  is dropped (it was uncertain: a Fracture false positive under U+ and a No Finding blocker).
- **Missing phrases for listed concepts (deviation 11):** congestion in other words
  ("congestion", "engorged", "pulmonary venous hypertension", "cephalization", "prominence of the
  central vasculature"), uncertain like CheXpert's own "vascular congestion"; devices the Support
  Devices list lacks (stent, stimulator, leads, generator, prosthesis, tracheostomy, internal
  fixation, and a line/tube tip in the SVC / atrium / above the carina, whose device word IU's
  de-identification often replaced by XXXX); fissural thickening and apical capping for Pleural
  Other.

Mapping rules changed (marked "dev" in the mapping table; the "before" columns use the mapping as
it stood before the split):

- **Pulmonary Congestion -> Edema is now uncertain (-1), not positive.** CheXpert defines
  "pulmonary/vascular congestion" as an *uncertain* Edema mention, so the reference gets the same
  value and is read with the same U+/U- rule as the labeler: under U+ nothing changes, under U- a
  congestion-only report is no longer a guaranteed false negative. This is a change to the
  reference, stated as such; the ablation row "labeler after, mapping before split" shows its share.
- **Pulmonary Fibrosis -> Pleural Other.** The mapping's own principle is "as the CheXpert phrase
  lists define the observation", and the Pleural Other list contains "fibrosis"; before the split
  the term was left unmapped as a "phrase-list quirk". Clinically pulmonary fibrosis is
  parenchymal, so this Pleural Other is CheXpert's, not a radiologist's.

What was **not** changed, because it is the reference's convention and not a labeler error:

- **Hedged pneumonia.** The MeSH indexers add Pneumonia when the radiologist names pneumonia as the
  diagnosis and almost never for "may represent pneumonia", "concerning for pneumonia",
  "atelectasis or pneumonia" (see the table "How MeSH indexes what the labeler calls uncertain").
  CheXpert calls all of these uncertain (-1), correctly. So Pneumonia precision under U+ is bounded
  by the annotation convention: making those mentions negative would bend the labeler to MeSH and
  break CheXpert's definition. U- (hedges read as negative) matches the convention; what is left
  there are positive mentions MeSH did not index and indexed pneumonias the labeler reads as hedged
  (see the dev errors below). Negations ("no pneumonia", "pneumonia is not seen", "no opacity to
  suggest pneumonia") and "cannot exclude pneumonia" (uncertain) were already handled; the
  INDICATION ("to exclude pneumonia") and COMPARISON sections are not labelled (the text is
  findings + impression), so they are not a source of false positives here.
- **Hedged atelectasis** goes the other way: MeSH indexes "may represent atelectasis", so U- loses
  Atelectasis recall. No single reading of uncertain suits both conventions.
- **"likely" was de-identified.** The word "likely" never occurs in the dev half's findings or
  impressions; "XXXX atelectasis", "XXXX infectious infiltrate" read as positive. No rule keys on
  IU's "XXXX" token (the labeler serves other datasets).
- **No Finding** still could not see findings outside CheXpert's no_finding list (low lung
  volumes, tortuous aorta, surgical clips); MeSH does not call those reports normal. (The second
  round below adds them.)

### Second round (2026-11-27; dev-half errors only, after the test half was scored once)

The first round (deviations 6-11 as above) left the test half below the bar with either reading
(the "round 1" columns). Its *aggregate* numbers were seen; no test report, error or per-report
label was. A second round was then written from the dev half's errors alone, each rule for a class
of clinical meaning and kept only if it raised dev F1 (`precision_rules=1` is the first round, the
"round 1" columns):

- **Abnormalities the no_finding list lacks (deviation 12).** The list already holds
  "degenera", "osteophytosis", "scoliosis", "kyphosis", "aortic disease", "volume loss",
  "hyperinflation", "radiopaque", "bullet", "arthropathy"; it lacked spondylosis and spinal spurs,
  a tortuous / ectatic aorta, low lung volumes (the mirror of "hyperinflation") and the crowding
  they cause, surgical clips and foreign bodies, spinal curvature in other words, arthritis,
  spinal fusion, lymphadenopathy, a lobe, lung or breast removed. On dev they were most of the
  No Finding false positives (the No Finding rows of "Before / after"). "Status post sternotomy"
  and "postsurgical changes" were tried and left out: they state what was done, not what the
  image shows, and the indexers called half of those dev reports normal.
- **Phrases for listed concepts (deviation 11, continued):** "fibrotic" (the list has "fibrosis";
  Pleural Other, as the mapping reads Pulmonary Fibrosis), apical thickening and
  "pleural-peripheral scarring" (Pleural Other), a lung cavity (Lung Lesion; the list has only
  "cavitary lesion"; body cavities are unmentioned), pneumonitis (Pneumonia; an entry term of the
  MeSH heading), VP shunt tubing, IVC filters and bone anchors (Support Devices).
- A second scoring of the same test half is weaker evidence than the first: the round exists
  because the first missed the bar. The rules were chosen on dev F1 only, and the "round 1"
  columns keep the first scoring beside the second.
- **Seen and not changed:** a report of several exams ("Chest. ... Left knee. ...", "Right
  shoulder. Healing scapular fracture.") is labelled whole, so a knee's spurs or a scapular
  fracture block No Finding or count as Fracture (a handful of dev reports). Labelling only the
  chest part needs a splitter by body part; it was not written, so that the test half is not
  scored a third time for one more rule.
"""


def _fmt(x: float) -> str:
    return "" if x != x else f"{x:.3f}"


def _ci(r: pd.Series) -> str:
    return f"{r['estimate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"


def bar_table(labels: pd.DataFrame, gold: pd.DataFrame, observations: list[str], seed: int = 0,
              n_bootstrap: int = 2000) -> pd.DataFrame:
    """The bars' statistics with 95% bootstrap CIs (reports resampled; BCa), on one set of reports."""
    from radaudit.stats import paired_bootstrap

    obs_idx = [OBSERVATIONS.index(o) for o in observations]
    arrays = tuple(positive(t[list(OBSERVATIONS)], u) for u in ("positive", "negative") for t in (labels, gold))
    stats = bar_statistics(obs_idx, OBSERVATIONS.index("Pneumonia"))
    return paired_bootstrap(arrays, stats, n_bootstrap=n_bootstrap, seed=seed).set_index("metric")


def verdict(res, macs, bars, labels, gold, masks, observations) -> list[str]:
    """Why the bars are met or not, in numbers of this run (markdown lines)."""

    def c(h: str, obs: str, u: str) -> pd.Series:
        r = res(h)
        return r[(r.observation == obs) & (r.uncertain_as == u)].iloc[0]

    def hedge_share(h: str, v: float) -> tuple[int, float]:
        sel = (labels.loc[masks[h], "Pneumonia"] == v).to_numpy()
        return int(sel.sum()), float((gold.loc[masks[h], "Pneumonia"].to_numpy()[sel] == 1).mean()) if sel.any() else float("nan")

    out = ["### Why the bars are (not) met", ""]
    for u, tag in (("positive", "U+"), ("negative", "U-")):
        b = bars["test"].loc[f"macro F1 ({tag})"]
        gain = macs[("test", "after", "current")][u] - macs[("test", "before", "before split")][u]
        where = ("above" if b["low"] >= BAR_MACRO else "below" if b["high"] < BAR_MACRO else "inside")
        out.append(f"- **Macro F1 {tag}**: test {b['estimate']:.4f} (95% CI {b['low']:.3f}-{b['high']:.3f}; the bar "
                   f"{BAR_MACRO} is {where} the CI), {gain:+.3f} over the labeler and mapping before the split on the same "
                   f"half; dev {macs[('dev', 'after', 'current')][u]:.3f}. The halves differed before any rule of the split "
                   f"was written (before: dev {macs[('dev', 'before', 'before split')][u]:.3f}, test "
                   f"{macs[('test', 'before', 'before split')][u]:.3f}).")
    n_h, share_h = hedge_share("dev", -1.0)
    n_p, share_p = hedge_share("dev", 1.0)
    tn_h, tshare_h = hedge_share("test", -1.0)
    up, un = c("test", "Pneumonia", "positive"), c("test", "Pneumonia", "negative")
    out.append(f"- **Pneumonia, U+**: test precision {up['precision']:.3f} ({up['tp']} of {up['predicted']}), recall "
               f"{up['recall']:.3f}. The reference convention bounds it: of the reports where the labeler's pneumonia is "
               f"only hedged (-1), MeSH indexes Pneumonia in {share_h:.1%} on dev ({n_h} reports) and {tshare_h:.1%} on "
               f"test ({tn_h}), against {share_p:.1%} when the labeler says positive (dev, {n_p}). CheXpert's -1 for "
               "'may represent pneumonia' is right, so the labeler is not bent to the indexers; U+ precision cannot reach "
               f"{BAR_PNEUMONIA_P} while hedged mentions outnumber indexed pneumonias.")
    b_p, b_r = bars["test"].loc["Pneumonia precision (U-)"], bars["test"].loc["Pneumonia recall (U-)"]
    out.append(f"- **Pneumonia, U-**: test precision {un['precision']:.3f} ({un['tp']} of {un['predicted']}; CI "
               f"{b_p['low']:.3f}-{b_p['high']:.3f}), recall {un['recall']:.3f} ({un['tp']} of {un['support']}; CI "
               f"{b_r['low']:.3f}-{b_r['high']:.3f}); dev {c('dev', 'Pneumonia', 'negative')['precision']:.3f} / "
               f"{c('dev', 'Pneumonia', 'negative')['recall']:.3f}. With about 20 MeSH pneumonias per half one report "
               "moves recall by about 0.05; the test half's errors were not read, so they are not explained here.")
    r1 = {u: macs[("test", "round 1", "current")][u] for u in ("positive", "negative")}
    out.append(f"- **Two scorings of the test half.** It was first scored with the first round of rules (deviations "
               f"6-11): macro F1 {r1['positive']:.3f} (U+) / {r1['negative']:.3f} (U-). A second round (deviation 12 and "
               "more phrases for deviation 11; 'What limits the score') was then written from dev-half errors only, "
               "and this is the second scoring. Two rules of the text toolkit under the labeler also changed between "
               "them, written from failures of AtomiMed's ranking suite, not from IU reports ('X obscuring the Y' "
               "hedges only Y; a bare 'tubes/lines in satisfactory position' is the support-devices collective): they "
               "moved no test-half number.")
    return out


def render_readme(summary: dict) -> str:
    """The README block (``<!-- bench:labeler_iu_xray -->``) from ``labeler_iu_xray.json``."""
    def ci(d: dict) -> str:
        return f"{d['estimate']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"

    t, d = summary["bars"]["test"], summary["bars"]["dev"]
    r1 = summary["bars"].get("test round 1")
    first = (f" The test half has been scored twice: first with the first round of rules (macro F1 "
             f"{r1['macro F1 (U+)']['estimate']:.3f} / {r1['macro F1 (U-)']['estimate']:.3f}), then after a second round "
             "written from dev-half errors only." if r1 else "")
    return (f"Against IU X-ray's manual MeSH labels (`benchmarks/results/labeler_iu_xray.md`), on the half of the "
            f"reports no rule was written on ({summary['n_reports']['test']} reports; the dev half, "
            f"{summary['n_reports']['dev']}, is where rules are written): macro F1 {t['macro F1 (U+)']['estimate']:.4f} "
            f"[{t['macro F1 (U+)']['low']:.3f}, {t['macro F1 (U+)']['high']:.3f}] with uncertain read as positive and "
            f"{t['macro F1 (U-)']['estimate']:.4f} [{t['macro F1 (U-)']['low']:.3f}, {t['macro F1 (U-)']['high']:.3f}] as "
            f"negative (dev: {d['macro F1 (U+)']['estimate']:.3f} / {d['macro F1 (U-)']['estimate']:.3f}); Pneumonia "
            f"precision {ci(t['Pneumonia precision (U-)'])} with recall {ci(t['Pneumonia recall (U-)'])} when hedges are "
            f"read as negative, and precision {ci(t['Pneumonia precision (U+)'])} when read as positive — IU's indexers "
            f"rarely index a hedged pneumonia, which caps U+ precision.{first}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--errors", type=int, default=3, help="error examples per observation and kind (dev half only)")
    ap.add_argument("--errors-half", default="dev", choices=HALVES,
                    help="only 'dev' is allowed: the test half's errors are never printed")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap replicates for the CIs")
    ap.add_argument("--readme", action="store_true", help="also rewrite the README's labeler_iu_xray block")
    a = ap.parse_args()
    if a.errors_half != "dev":
        ap.error("--errors-half test is refused: rules are written on the dev half's errors only, and the "
                 "test half stays unseen (issue 18).")

    df = load_dataset("iu_xray", a.data_root)
    n_all = len(df)
    df = df[df["labels"].notna()].copy()  # "No Indexing" reports were never labelled
    text = (df["findings"].fillna("") + "\n\n" + df["impression"].fillna("")).str.strip()
    df = df[text != ""].copy()
    text = text[df.index]
    df["half"] = split_halves(df["study_id"])
    golds = {v: gold_table(df, v) for v in MAPPING_VERSIONS}
    observations = macro_observations(golds["current"])

    t0 = time.perf_counter()
    phrases = chexpert_phrases_dir(a.data_root)
    labeler = ChexpertLabeler(phrases)
    labeler_before = ChexpertLabeler(phrases, precision_rules=False)
    labeler_round1 = ChexpertLabeler(phrases, precision_rules=1)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    labels = labeler.label(text)
    t_label = time.perf_counter() - t0
    labels_before = labeler_before.label(text)
    labels_round1 = labeler_round1.label(text)

    # (labeler version, mapping version) -> labels, gold
    combos = {
        ("after", "current"): (labels, golds["current"]),
        ("round 1", "current"): (labels_round1, golds["current"]),
        ("before", "before split"): (labels_before, golds["before split"]),
        ("after", "before split"): (labels, golds["before split"]),
        ("before", "first"): (labels_before, golds["first"]),
    }
    masks = {"dev": (df["half"] == "dev").to_numpy(), "test": (df["half"] == "test").to_numpy(),
             "all": np.ones(len(df), bool)}
    frames = []
    for (lv, mv), (lab, gold) in combos.items():
        for h, m in masks.items():
            r = evaluate(lab[m], gold[m])
            r.insert(0, "mapping", mv)
            r.insert(0, "labeler", lv)
            r.insert(0, "half", h)
            frames.append(r)
    res_all = pd.concat(frames, ignore_index=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res_all.to_csv(out / "labeler_iu_xray.csv", index=False, float_format="%.4f")

    def res(h: str, lv: str = "after", mv: str = "current") -> pd.DataFrame:
        return res_all[(res_all.half == h) & (res_all.labeler == lv) & (res_all.mapping == mv)]

    def cell(h: str, obs: str, u: str, col: str, lv: str = "after", mv: str = "current") -> float:
        r = res(h, lv, mv)
        return float(r[(r.observation == obs) & (r.uncertain_as == u)].iloc[0][col])

    macs = {(h, lv, mv): macro(res(h, lv, mv), observations) for h in masks for (lv, mv) in combos}
    bars = {h: bar_table(labels[masks[h]], golds["current"][masks[h]], observations, n_bootstrap=a.resamples)
            for h in ("dev", "test")}
    bars["test round 1"] = bar_table(labels_round1[masks["test"]], golds["current"][masks["test"]], observations,
                                     n_bootstrap=a.resamples)

    # the labeler's own examples
    ex_rows = []
    ex_labels = labeler.label([t for t, _ in CHEXPERT_LABELER_EXAMPLES])
    for i, (t, expected) in enumerate(CHEXPERT_LABELER_EXAMPLES):
        got = {o: ex_labels.iloc[i][o] for o in OBSERVATIONS if ex_labels.iloc[i][o] == ex_labels.iloc[i][o]}
        ex_rows.append((t, expected, {k: int(v) for k, v in got.items()}, {k: float(v) for k, v in expected.items()} == got))

    n_dev, n_test = int(masks["dev"].sum()), int(masks["test"].sum())
    lines = [
        "# CheXpert-style labeler vs IU X-ray MeSH annotations",
        "",
        "Generated by `benchmarks/labeler_iu_xray.py` (do not edit by hand).",
        "",
        f"- Reports: {len(df)} of {n_all} in `indiana_reports.csv` (left out: {n_all - len(df)} indexed "
        "'No Indexing' or with empty findings and impression). Text labelled: findings + impression (never the "
        "indication or comparison).",
        "- Reference: the report's manually assigned MeSH terms (`mesh`), mapped to observations by the table below: "
        "1 when a mapped term is present, -1 when only a term mapped as uncertain is (Pulmonary Congestion for Edema), "
        "else 0.",
        "- Prediction: labeler output 1 (positive), -1 (uncertain), 0 / blank (negative). Uncertain is read as positive "
        "(**U+**) or as negative (**U-**), on both sides. No Finding: labeler 1 vs MeSH `normal`, or a report whose every "
        "term maps to Support Devices (CheXpert's No Finding allows support devices).",
        f"- Macro F1: mean F1 over the {len(observations)} observations with >= {MIN_SUPPORT} reference positives over "
        f"all reports ({', '.join(observations)}); the same set for every half.",
        f"- Labelling time: {t_label:.2f} s for {len(df)} reports ({1e3 * t_label / len(df):.2f} ms/report; "
        f"phrase loading {t_load:.2f} s), one CPU core.",
        "",
        "## Dev / test split (issue 18)",
        "",
        f"- Split by report uid, deterministic: `split_half(uid)` = dev when the first byte of "
        f"`sha256('radaudit-iu-labeler-split:{SPLIT_SEED}:<uid>')` is even, else test (seed {SPLIT_SEED}, fixed before "
        f"any result of the split was seen). Dev: {n_dev} reports, test: {n_test}.",
        "- **Only the dev half is looked at.** Labeler and mapping rules written after the split were written from "
        "dev-half errors only; `--errors` prints dev-half examples only and `--errors-half test` is refused. The test "
        "half is only scored.",
        "- **Not fully out of sample.** Every rule that existed before the split (the CheXpert phrase lists and "
        "patterns, the labeler's deviations 1-5 and the negation cues, every mapping rule marked 'all reports' below, "
        "post hoc or not) was written looking at ALL reports, the test half included. So the test-half numbers of "
        "the 'before' columns, and the part of the 'after' numbers those rules carry, are tuned on the union; only "
        "the rules added after the split (labeler deviations 6-12, mapping rules marked 'dev half') are scored out "
        "of sample on the test half.",
        "- **Scored twice.** The test half was first scored with the first round of those rules (deviations 6-11, "
        "`precision_rules=1`); after its aggregate numbers missed the bar, a second round was written from dev-half "
        "errors only, and the test half scored again. Both scorings are reported ('round 1' columns).",
        "",
        "## Issue 18 bars, on the test half",
        "",
        f"Labeler after (`precision_rules=True`, both rounds), current mapping; 95% bootstrap CIs (BCa, {a.resamples} "
        "resamples of reports). Dev half beside it for reference, and the test half's first scoring (round 1).",
        "",
        "| bar | test | dev | met on test | test, round 1 |",
        "|---|---|---|---|---|",
    ]
    checks = [
        ("macro F1 (U+)", f">= {BAR_MACRO}", lambda v: v >= BAR_MACRO),
        ("macro F1 (U-)", f">= {BAR_MACRO}", lambda v: v >= BAR_MACRO),
        ("Pneumonia precision (U+)", f">= {BAR_PNEUMONIA_P}", lambda v: v >= BAR_PNEUMONIA_P),
        ("Pneumonia recall (U+)", f">= {BAR_PNEUMONIA_R}", lambda v: v >= BAR_PNEUMONIA_R),
        ("Pneumonia precision (U-)", f">= {BAR_PNEUMONIA_P}", lambda v: v >= BAR_PNEUMONIA_P),
        ("Pneumonia recall (U-)", f">= {BAR_PNEUMONIA_R}", lambda v: v >= BAR_PNEUMONIA_R),
    ]
    for name, bar, ok in checks:
        t, d = bars["test"].loc[name], bars["dev"].loc[name]
        met = f"{'yes' if ok(t['estimate']) else 'no'} ({t['estimate']:.4f})"  # 4 digits: 0.8499 prints 0.850 above
        lines.append(f"| {name} {bar} | {_ci(t)} | {_ci(d)} | {met} | "
                     f"{_ci(bars['test round 1'].loc[name])} |")
    summary = {"n_reports": {h: int(m.sum()) for h, m in masks.items()}, "split_seed": 18,
               "bars": {h: {name: {k: float(bars[h].loc[name][k]) for k in ("estimate", "low", "high")}
                            for name, _, _ in checks} for h in ("dev", "test", "test round 1")}}
    (out / "labeler_iu_xray.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if a.readme:
        from _readme import write_block

        write_block("labeler_iu_xray", render_readme(summary))
    pn_u = {u: (cell("test", "Pneumonia", u, "precision"), cell("test", "Pneumonia", u, "recall")) for u in ("positive", "negative")}
    pn_ok = {u: p >= BAR_PNEUMONIA_P and r >= BAR_PNEUMONIA_R for u, (p, r) in pn_u.items()}
    without_pn = [o for o in observations if o != "Pneumonia"]
    lines += [
        "",
        f"Pneumonia bar (precision >= {BAR_PNEUMONIA_P} with recall >= {BAR_PNEUMONIA_R}): U+ "
        f"{'met' if pn_ok['positive'] else 'not met'}, U- {'met' if pn_ok['negative'] else 'not met'}. "
        f"Macro F1 on the test half without Pneumonia ({len(without_pn)} observations): U+ "
        f"{res('test')[res('test').observation.isin(without_pn)].groupby('uncertain_as')['f1'].mean()['positive']:.3f}, U- "
        f"{res('test')[res('test').observation.isin(without_pn)].groupby('uncertain_as')['f1'].mean()['negative']:.3f} "
        "(see 'What limits the score' for why hedged pneumonia caps U+).",
        "",
        *verdict(res, macs, bars, labels, golds["current"], masks, observations),
        "",
        "## Before / after",
        "",
        "Before: the labeler with `precision_rules=False` and the mapping as it stood before the split. Round 1: "
        "`precision_rules=1` (deviations 6-11) and the current mapping, as the test half was first scored. After: the "
        "labeler's default (both rounds) and the current mapping. The ablation column keeps the new labeler on the old "
        "mapping.",
        "",
        "| | dev before | dev round 1 | dev after | test before | test round 1 | test after | test: labeler after, mapping before split |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for u, tag in (("positive", "U+"), ("negative", "U-")):
        lines.append(f"| macro F1 {tag} | {macs[('dev', 'before', 'before split')][u]:.3f} | "
                     f"{macs[('dev', 'round 1', 'current')][u]:.3f} | {macs[('dev', 'after', 'current')][u]:.3f} | "
                     f"{macs[('test', 'before', 'before split')][u]:.3f} | {macs[('test', 'round 1', 'current')][u]:.3f} | "
                     f"{macs[('test', 'after', 'current')][u]:.3f} | {macs[('test', 'after', 'before split')][u]:.3f} |")
    for obs in ("No Finding", "Pneumonia", "Pleural Other", "Lung Lesion", "Enlarged Cardiomediastinum", "Edema"):
        for u, tag in (("positive", "U+"), ("negative", "U-")):
            for col, short in (("precision", "P"), ("recall", "R")):
                vals = [cell("dev", obs, u, col, "before", "before split"), cell("dev", obs, u, col, "round 1"),
                        cell("dev", obs, u, col), cell("test", obs, u, col, "before", "before split"),
                        cell("test", obs, u, col, "round 1"), cell("test", obs, u, col),
                        cell("test", obs, u, col, "after", "before split")]
                lines.append(f"| {obs} {short} {tag} | " + " | ".join(_fmt(v) for v in vals) + " |")
    lines += [
        "",
        f"With the mapping as first written (no post-hoc rule, no devices-only No Finding) and the labeler before: "
        f"macro F1 all reports U+ {macs[('all', 'before', 'first')]['positive']:.3f}, "
        f"U- {macs[('all', 'before', 'first')]['negative']:.3f}.",
        "",
        "## Macro F1 per half",
        "",
        "| uncertain as | dev | test | all reports |",
        "|---|---|---|---|",
    ]
    for u in ("positive", "negative"):
        lines.append(f"| {u} | {macs[('dev', 'after', 'current')][u]:.3f} | {macs[('test', 'after', 'current')][u]:.3f} | "
                     f"{macs[('all', 'after', 'current')][u]:.3f} |")
    for u, tag in (("positive", "U+"), ("negative", "U-")):
        lines += ["", f"## Per observation, {tag} (uncertain as {u})", "",
                  "| observation | support dev / test | dev P | dev R | dev F1 | test P | test R | test F1 | all F1 | predicted dev / test |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for obs in OBSERVATIONS:
            mark = "" if obs in observations else " *"
            c = {h: res(h)[(res(h).observation == obs) & (res(h).uncertain_as == u)].iloc[0] for h in masks}
            lines.append(f"| {obs}{mark} | {c['dev']['support']} / {c['test']['support']} | {_fmt(c['dev']['precision'])} | "
                         f"{_fmt(c['dev']['recall'])} | {_fmt(c['dev']['f1'])} | {_fmt(c['test']['precision'])} | "
                         f"{_fmt(c['test']['recall'])} | {_fmt(c['test']['f1'])} | {_fmt(c['all']['f1'])} | "
                         f"{c['dev']['predicted']} / {c['test']['predicted']} |")
        lines += ["", f"\\* not in the macro F1 (fewer than {MIN_SUPPORT} reference positives over all reports)."]

    # how MeSH indexes what the labeler calls uncertain (aggregate shares; no test report is shown)
    lines += ["", "## How MeSH indexes what the labeler calls uncertain", "",
              "Among reports where the labeler says 1 (positive) or -1 (uncertain), the share whose MeSH terms map to "
              "the observation with value 1. A low share for -1 means the indexers do not index hedged mentions of "
              "that finding, so U+ costs precision there; a high one means they do, so U- costs recall. The test "
              "columns are counts only (no test report was read).", "",
              "| observation | dev: labeler 1 | MeSH positive | dev: labeler -1 | MeSH positive | test: labeler 1 | MeSH positive | test: labeler -1 | MeSH positive |",
              "|---|---|---|---|---|---|---|---|---|"]
    for obs in [o for o in OBSERVATIONS if o != "No Finding"]:
        cells = []
        for h in ("dev", "test"):
            h_lab, h_gold = labels[masks[h]], golds["current"][masks[h]]
            for v in (1.0, -1.0):
                sel = (h_lab[obs] == v).to_numpy()
                n = int(sel.sum())
                cells += [str(n), _fmt(float((h_gold[obs].to_numpy()[sel] == 1).mean()) if n else float("nan"))]
        lines.append(f"| {obs} | " + " | ".join(cells) + " |")

    lines += ["", "## MeSH -> observation mapping", "",
              "A MeSH term is `Heading/qualifier/...`; a rule matches the heading exactly and, if given, a qualifier "
              "(regex, case-insensitive). Terms map by meaning, as the CheXpert phrase lists define the observation, "
              "never by what raises the score. 'written on': *all reports* = before the split (test half seen); "
              "*dev half* = written or changed after it, looking at dev errors only.", "",
              "| observation | MeSH heading | qualifier must match | qualifier must not match | value | why | post hoc | written on | reports |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in MAPPING:
        n_rep = int(df["mesh"].map(lambda ts, r=r: any(
            t.split("/")[0].strip() == r.head
            and (r.qualifier is None or any(re.search(r.qualifier, q, re.I) for q in t.split("/")[1:]))
            and not (r.exclude and any(re.search(r.exclude, q, re.I) for q in t.split("/")[1:])) for t in ts)).sum())
        written = "all reports" if r.written_on == "all" else (
            "dev half (changed)" if r.value_before_split is not None else "dev half (new)")
        lines.append(f"| {r.observation} | {r.head} | {r.qualifier or ''} | {r.exclude or ''} | {int(r.value)} | {r.why} | "
                     f"{'yes' if r.post_hoc else ''} | {written} | {n_rep} |")
    lines += ["| No Finding | (every term maps to Support Devices) | | | 1 | CheXpert's No Finding allows support devices | yes | "
              f"all reports | {int(df['mesh'].map(lambda t: bool(t) and _only_devices(t)).sum())} |"]
    lines += ["", "Left unmapped on purpose:", ""]
    lines += [f"- **{t}**: {why}." for t, why in UNMAPPED_NOTES]
    lines += ["", "## The CheXpert labeler's own examples", "",
              "`sample_reports.csv` -> `labeled_reports.csv` of stanfordmlgroup/chexpert-labeler (MIT): the labels its "
              "parse-based pipeline printed, against ours (blank observations omitted).", "",
              "| report | CheXpert labeler | radaudit | equal |", "|---|---|---|---|"]
    for t, exp, got, eq in ex_rows:
        lines.append(f"| {t.replace(chr(10), ' ')} | {exp} | {got} | {'yes' if eq else 'no'} |")

    lines += ["", "## What limits the score (error analysis)", "", ANALYSIS_AFTER_SPLIT.rstrip(), "",
              ANALYSIS_BEFORE_SPLIT.rstrip()]
    if a.errors:
        dev = masks["dev"]
        lines += ["", "## Errors (dev half only)", "",
                  f"For each macro observation with dev F1 below {BAR_MACRO} under a reading, and for Enlarged "
                  f"Cardiomediastinum, the counts and the first {a.errors} false positives / false negatives of the DEV "
                  "half (report id, labeler value, MeSH terms, and the deciding mentions). The test half's errors are "
                  "not printed.", ""]
        dev_idx = df.index[dev]
        for obs in observations + ["Enlarged Cardiomediastinum"]:
            for u, tag in (("positive", "U+"), ("negative", "U-")):
                c = res("dev")[(res("dev").observation == obs) & (res("dev").uncertain_as == u)].iloc[0]
                if obs != "Enlarged Cardiomediastinum" and c["f1"] >= BAR_MACRO:
                    continue
                lines += [f"### {obs}, {tag}: dev F1 {c['f1']:.3f} (TP {c['tp']}, FP {c['fp']}, FN {c['fn']})", ""]
                pred = positive(labels.loc[dev_idx, obs], u)
                g = positive(golds["current"].loc[dev_idx, obs], u)
                for kind, mask in (("FP", pred & ~g), ("FN", ~pred & g)):
                    for idx in dev_idx[mask][: a.errors]:
                        ms = labeler.mentions(text[idx])
                        ms = ms[ms.observation == obs] if obs != "No Finding" else ms[ms.status != "negative"]
                        expl = "; ".join(f"'{m.text}' {m.status} ({m.rule or 'no cue'}) in \"{m.sentence.strip()}\"" for m in ms.itertuples())
                        lines.append(f"- {kind} uid {df.loc[idx, 'study_id']}: labeler {labels.loc[idx, obs]}, MeSH "
                                     f"`{'; '.join(df.loc[idx, 'mesh'])}`: {expl or 'no mention'}")
                lines.append("")
    (out / "labeler_iu_xray.md").write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {out / 'labeler_iu_xray.md'} and .csv; {len(df)} reports labelled in {t_label:.2f} s")


if __name__ == "__main__":
    main()
