"""ReXrank public splits (IU X-ray test/valid, CheXpert Plus valid) and the RadEval CheXpert Plus
impression pairs, in the tidy schema.

Three loaders, one per registry entry:

- :func:`load_iu_xray` (``iu_xray_rexrank``): ``ReXRank_IUXray_test.json`` (590) and
  ``ReXRank_IUXray_valid.json`` (296), ReXrank's IU X-ray leaderboard splits.
- :func:`load_chexpert_plus_valid` (``chexpert_plus_valid``): ``ReXRank_CheXpertPlus.json``, 200
  CheXpert Plus validation studies with age, sex, race and ethnicity.
- :func:`load_chexpert_plus_pairs` (``chexpert_plus_pairs``): the 200 (reference, generated)
  impression pairs of RadEval's test utterances (``radeval_refs_chexpert_impression.txt``,
  ``radeval_preds_chexpert_impression.txt``), each matched back to its ReXrank study by
  :func:`match_references` so that every pair carries the patient's sex, age and race.

All ReXrank files are JSON objects keyed by study (``{"<key>": {field: value}}``); the CheXpert
Plus file contains bare ``NaN`` tokens, which :func:`json.load` accepts (and which become
``<NA>``). Images are not part of these files, so ``image_path`` is the relative
``key_image_path`` unless that file exists under the dataset folder (then it is absolute).
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import pandas as pd
from rapidfuzz import fuzz

from radaudit.data.io import read_json_checked
from radaudit.data.schema import finalize
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.text.demographics import SEX_RULE, age_from_text, sex_from_text

log = logging.getLogger(__name__)

IU_FILES = {"test": "ReXRank_IUXray_test.json", "valid": "ReXRank_IUXray_valid.json"}
IU_FIELDS = ("key_image_path", "image_path", "section_findings", "section_impression", "split", "frontal_lateral", "context")
CHEXPERT_FILE = "ReXRank_CheXpertPlus.json"
CHEXPERT_FIELDS = (
    "image_path", "section_clinical_history", "section_findings", "section_impression", "frontal_lateral",
    "ap_pa", "age", "sex", "race", "ethnicity", "key_image_path",
)
REFS_FILE = "radeval_refs_chexpert_impression.txt"
PREDS_FILE = "radeval_preds_chexpert_impression.txt"

#: thresholds of the reference-to-study matching (see :func:`match_references`)
FUZZY_MIN_RATIO = 0.9
MARGIN_MIN = 0.1
MATCH_TYPES = ("exact", "ref_is_substring", "fuzzy>=0.9", "fuzzy_best_unused_margin>=0.1", "unmatched")

_SPLIT_NAMES = {"val": "valid", "validation": "valid", "valid": "valid", "test": "test", "train": "train"}


def _no_options(name: str, options: dict) -> None:
    if options:
        raise ParamsError(f"{name}: unknown option(s) {sorted(options)}; this loader takes no options.")


def _missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _clean(v: object) -> object:
    """A JSON text field stripped of surrounding whitespace; ``None``/``NaN``/blank become ``<NA>``."""
    if _missing(v):
        return pd.NA
    s = str(v).strip()
    return s if s else pd.NA


def _read_json_dict(path: Path, fields: tuple[str, ...], name: str) -> dict[str, dict]:
    """A ReXrank file: a JSON object keyed by study id whose values are objects with ``fields``."""
    return read_json_checked(path, dataset=name, top_level=dict, record_fields=fields, record="study",
                             expected="a JSON object keyed by study id")  # json.load accepts the bare NaN tokens


def _as_list(v: object) -> list:
    if _missing(v):
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _local(folder: Path, rel: object) -> object:
    if _missing(rel) or not str(rel):
        return pd.NA
    p = folder / str(rel)
    return str(p.resolve()) if p.exists() else str(rel)


def _split_name(v: object) -> object:
    if _missing(v):
        return pd.NA
    return _SPLIT_NAMES.get(str(v).strip().lower(), str(v).strip())


_CONTEXT = re.compile(r"^\s*(?:Indication:(?P<ind>.*?))?\s*(?:Comparison:(?P<cmp>.*))?$", re.DOTALL)


def split_context(context: object) -> tuple[object, object]:
    """``"Indication: ... Comparison: ..."`` → ``(indication, comparison)``, each stripped or ``<NA>``.

    Either part may be absent (11 IU X-ray studies have no "Indication:"); a context that follows
    neither pattern is returned whole as the indication.
    """
    if _missing(context):
        return pd.NA, pd.NA
    m = _CONTEXT.match(str(context))
    if not m:
        return _clean(context), pd.NA
    return _clean(m.group("ind")), _clean(m.group("cmp"))


# ---------------------------------------------------------------------------------- IU X-ray splits

def load_iu_xray(folder: Path, **options) -> pd.DataFrame:
    """ReXrank's IU X-ray test (590) and valid (296) studies, one row per study.

    Core columns: ``study_id`` = the JSON key (``"CXR3030_IM-1405"``); ``patient_id`` ``<NA>``;
    ``sex``/``age`` parsed from the indication with :mod:`radaudit.text.demographics` (the same
    rule as the ``iu_xray`` loader, ``df.attrs["sex_rule"]``; ReXrank has no demographic field);
    ``view`` = ``frontal_lateral`` upper-cased and joined by ``"|"`` (in 68 studies
    ``frontal_lateral`` has a different length than ``image_path``: ReXrank lists the original
    study's projections but ships two images, so ``view`` describes the study, not ``images``);
    ``image_path`` = ``key_image_path``; ``findings``/``impression`` = ``section_findings``/
    ``section_impression`` stripped; ``indication`` = the part of ``context`` between
    "Indication:" and "Comparison:"; ``split`` = the record's ``split`` with ``"val"`` renamed
    ``"valid"`` (the schema's name).

    Extra columns: ``comparison`` (the part of ``context`` after "Comparison:"), ``iu_uid`` (the
    Open-i report number in the key, ``"CXR3030_IM-1405"`` → ``"3030"``, the ``study_id`` of the
    ``iu_xray`` dataset), ``images`` (list, ``image_path``), ``frontal_lateral`` (list, as given),
    ``report`` (the full report text as given).
    """
    _no_options("iu_xray_rexrank", options)
    folder = Path(folder)
    rows = []
    for file_split, fname in IU_FILES.items():
        data = _read_json_dict(folder / fname, IU_FIELDS, "iu_xray_rexrank")
        for key, rec in data.items():
            indication, comparison = split_context(rec["context"])
            split = _split_name(rec["split"])
            if split is not pd.NA and split != file_split:
                log.warning("iu_xray_rexrank: %s in %s says split=%r", key, fname, rec["split"])
            m = re.match(r"^CXR(\d+)_", key)
            fl = [str(v).strip() for v in _as_list(rec["frontal_lateral"]) if not _missing(v)]
            rows.append({
                "study_id": key,
                "view": "|".join(v.upper() for v in fl),
                "image_path": _local(folder, rec["key_image_path"]),
                "findings": _clean(rec["section_findings"]),
                "impression": _clean(rec["section_impression"]),
                "indication": indication,
                "split": split,
                "comparison": comparison,
                "iu_uid": m.group(1) if m else pd.NA,
                "images": _as_list(rec["image_path"]),
                "frontal_lateral": fl,
                "report": _clean(rec.get("report")),
            })
    df = pd.DataFrame(rows)
    if df["study_id"].duplicated().any():
        raise DataFormatError(f"iu_xray_rexrank: a study key occurs in both {IU_FILES['test']} and {IU_FILES['valid']}: "
                              f"{df.loc[df['study_id'].duplicated(), 'study_id'].head(3).tolist()}")
    df["sex"] = df["indication"].map(sex_from_text)
    df["age"] = df["indication"].map(age_from_text)
    out = finalize(df, source="iu_xray_rexrank")
    for c in ("comparison", "iu_uid", "report"):
        out[c] = out[c].astype("string")
    out.attrs["sex_rule"] = "from the indication: " + SEX_RULE
    out.attrs["n_with_sex"] = int(out["sex"].notna().sum())
    return out


# ------------------------------------------------------------------------------- CheXpert Plus valid

def _chexpert_view(fl: list, ap_pa: list) -> str:
    """Per image: the AP/PA code of a frontal image (``"FRONTAL"`` if not given), ``"LATERAL"``."""
    views = []
    for i, v in enumerate(fl):
        if _missing(v):
            views.append("UNKNOWN")
            continue
        v = str(v).strip().upper()
        code = ap_pa[i] if i < len(ap_pa) else None
        if v == "FRONTAL" and not _missing(code) and str(code).strip():
            views.append(str(code).strip().upper())
        else:
            views.append(v)
    return "|".join(views)


def _first_code(ap_pa: list) -> object:
    for v in ap_pa:
        if not _missing(v) and str(v).strip():
            return str(v).strip()
    return pd.NA


def _chexpert_rows(folder: Path, name: str) -> pd.DataFrame:
    data = _read_json_dict(folder / CHEXPERT_FILE, CHEXPERT_FIELDS, name)
    rows = []
    for key, rec in data.items():
        m = re.match(r"^(patient\d+)_(study\d+)$", key)
        if not m:
            raise DataFormatError(f"{name}: {folder / CHEXPERT_FILE}: key {key!r} is not of the form 'patient<N>_study<M>'.")
        fl = _as_list(rec["frontal_lateral"])
        ap_pa = _as_list(rec["ap_pa"])
        key_image = rec["key_image_path"]
        split = str(key_image).split("/", 1)[0] if not _missing(key_image) else ""
        rows.append({
            "study_id": key,
            "patient_id": m.group(1),
            "sex": rec["sex"],
            "age": pd.NA if _missing(rec["age"]) else float(rec["age"]),
            "view": _chexpert_view(fl, ap_pa),
            "image_path": _local(folder, key_image),
            "findings": _clean(rec["section_findings"]),
            "impression": _clean(rec["section_impression"]),
            "indication": _clean(rec["section_clinical_history"]),
            "split": _SPLIT_NAMES.get(split, pd.NA),
            "race": _clean(rec["race"]),
            "ethnicity": _clean(rec["ethnicity"]),
            "ap_pa": _first_code(ap_pa),
            "frontal_lateral": [None if _missing(v) else str(v) for v in fl],
            "images": _as_list(rec["image_path"]),
            "original_impression": None if _missing(rec["section_impression"]) else str(rec["section_impression"]),
        })
    return pd.DataFrame(rows)


def load_chexpert_plus_valid(folder: Path, **options) -> pd.DataFrame:
    """The 200 CheXpert Plus validation studies of ReXrank, one row per study.

    Core columns: ``study_id`` = the JSON key (``"patient64620_study1"``); ``patient_id`` = its
    ``patient<N>`` part; ``sex`` from ``sex`` (``Male``/``Female`` → ``M``/``F``, ``Unknown`` →
    ``<NA>``); ``age`` = ``age`` (float, ``NaN`` → ``<NA>``); ``view`` = one code per entry of
    ``frontal_lateral``: a frontal image's ``ap_pa`` code (``"AP"``/``"PA"``, or ``"FRONTAL"`` when
    ``ap_pa`` has no code for it), ``"LATERAL"`` for a lateral one, joined by ``"|"``;
    ``image_path`` = ``key_image_path``; ``findings``/``impression``/``indication`` =
    ``section_findings``/``section_impression``/``section_clinical_history`` stripped (``NaN`` →
    ``<NA>``); ``split`` = ``"valid"`` (the first component of ``key_image_path``).

    Extra columns: ``race``, ``ethnicity`` (as given; "Unknown"/"Patient Refused" kept as values),
    ``ap_pa`` (the study's frontal projection: the first non-missing ``ap_pa`` entry), ``frontal_lateral``
    (list as given), ``images`` (list, ``image_path``), ``original_impression``
    (``section_impression`` unstripped).
    """
    _no_options("chexpert_plus_valid", options)
    df = _chexpert_rows(Path(folder), "chexpert_plus_valid")
    out = finalize(df, source="chexpert_plus_valid")
    for c in ("race", "ethnicity", "ap_pa", "original_impression"):
        out[c] = out[c].astype("string")
    return out


# ------------------------------------------------------------------------- RadEval impression pairs

def normalize_for_matching(text: object) -> str:
    """Lower case, every character that is not ``[a-z0-9]`` removed (spaces included)."""
    return re.sub(r"[^a-z0-9]", "", str(text).lower()) if not _missing(text) else ""


def match_references(references: list[str], candidates: dict[str, str]) -> pd.DataFrame:
    """Match each reference line to one candidate study, 1:1. Returns ``line, key, match_type, match_ratio``.

    Both sides are normalised by :func:`normalize_for_matching`; ``ratio`` is
    ``rapidfuzz.fuzz.ratio / 100`` (normalised Indel similarity, 0-1). Four passes, each over the
    lines still unmatched in line order, each choosing only among studies not yet taken:

    1. ``exact``: equal normalised texts (the first such study in file order);
    2. ``ref_is_substring``: the reference is a substring of the study's text (RadEval lines are
       sometimes a truncation of the impression); among several, the highest ratio;
    3. ``fuzzy>=0.9``: the best ratio, if it is at least :data:`FUZZY_MIN_RATIO`;
    4. ``fuzzy_best_unused_margin>=0.1``: the best ratio, if it beats the second best by at least
       :data:`MARGIN_MIN` (weaker: check ``match_ratio``).

    A line left over gets ``key`` ``<NA>`` and ``match_type`` ``"unmatched"``. ``match_ratio`` is
    the ratio of the chosen pair rounded to 3 decimals (1.0 for exact matches). Ties keep the
    candidates' file order. This reproduces, line for line, the keys and match types of the
    DERIVED csv shipped with the lab's copy of the data (SOURCE.md of rexrank-chexpertplus-iu).
    Its ratios were computed with :class:`difflib.SequenceMatcher` (``autojunk=False``), whose
    greedy block matching is not an optimal alignment; rapidfuzz computes the exact Indel
    similarity, so one ratio differs (line 65: 0.859 here, 0.857 there) and nothing else.
    """
    keys = list(candidates)
    cand = {k: normalize_for_matching(candidates[k]) for k in keys}
    refs = [normalize_for_matching(r) for r in references]
    used: set[str] = set()
    out: dict[int, tuple[str, str, float]] = {}

    def ratio(i: int, k: str) -> float:
        return fuzz.ratio(refs[i], cand[k]) / 100.0

    def take(i: int, k: str, kind: str, r: float) -> None:
        out[i] = (k, kind, r)
        used.add(k)

    for i, r in enumerate(refs):
        k = next((k for k in keys if k not in used and cand[k] == r), None)
        if k is not None:
            take(i, k, "exact", 1.0)
    for i, r in enumerate(refs):
        if i in out or not r:
            continue
        hits = [k for k in keys if k not in used and r in cand[k]]
        if hits:
            k = max(hits, key=lambda k: ratio(i, k))  # max keeps the first of equal ratios
            take(i, k, "ref_is_substring", ratio(i, k))
    for i in range(len(refs)):
        if i in out:
            continue
        scored = sorted(((ratio(i, k), n, k) for n, k in enumerate(keys) if k not in used), key=lambda t: (-t[0], t[1]))
        if scored and scored[0][0] >= FUZZY_MIN_RATIO:
            take(i, scored[0][2], "fuzzy>=0.9", scored[0][0])
    for i in range(len(refs)):
        if i in out:
            continue
        scored = sorted(((ratio(i, k), n, k) for n, k in enumerate(keys) if k not in used), key=lambda t: (-t[0], t[1]))
        if not scored:
            continue
        second = scored[1][0] if len(scored) > 1 else 0.0
        if scored[0][0] - second >= MARGIN_MIN:
            take(i, scored[0][2], "fuzzy_best_unused_margin>=0.1", scored[0][0])
    rows = []
    for i in range(len(refs)):
        k, kind, r = out.get(i, (pd.NA, "unmatched", math.nan))
        rows.append({"line": i, "key": k, "match_type": kind, "match_ratio": round(r, 3)})
    df = pd.DataFrame(rows, columns=["line", "key", "match_type", "match_ratio"])
    df["key"] = df["key"].astype("string")
    df["match_type"] = df["match_type"].astype("string")
    return df


def _read_lines(path: Path, name: str) -> list[str]:
    if not path.exists():
        raise DatasetNotFoundError(f"{name}: {path} does not exist.")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    return lines


def load_chexpert_plus_pairs(folder: Path, **options) -> pd.DataFrame:
    """The 200 RadEval CheXpert Plus (reference, generated) impression pairs with the study's demographics.

    Inputs: ``radeval_refs_chexpert_impression.txt`` and ``radeval_preds_chexpert_impression.txt``
    (RadEval ``tests/utterances``; line *i* of one is the reference for line *i* of the other;
    lower-cased and tokenised; which model wrote the predictions is not documented upstream) and
    ``ReXRank_CheXpertPlus.json``. Each reference line is matched to the study whose
    ``section_impression`` it is by :func:`match_references` (exact 148, substring 15, fuzzy 11,
    margin 26 on the public files; a 1:1 assignment of all 200). A line that cannot be matched is
    kept with ``study_id`` ``"radeval_line_<i>"``, ``match_type`` ``"unmatched"`` and no
    demographics, logged and counted in ``df.attrs["n_unmatched"]``.

    One row = one pair (one line). Core columns: ``study_id`` = the matched ReXrank key;
    ``patient_id``, ``sex``, ``age``, ``view``, ``image_path``, ``indication``, ``split`` of that
    study (as in :func:`load_chexpert_plus_valid`); ``impression`` = the reference line as given
    (RadEval's processed text); ``findings`` = ``<NA>``.

    Extra columns: ``line`` (0-based line number), ``generated_impression`` (the prediction line),
    ``match_type``, ``match_ratio`` (see :func:`match_references`), ``race``, ``ethnicity``,
    ``ap_pa`` (the study's frontal projection), ``original_impression`` (the study's
    ``section_impression`` exactly as in the JSON).
    """
    _no_options("chexpert_plus_pairs", options)
    folder = Path(folder)
    name = "chexpert_plus_pairs"
    refs = _read_lines(folder / REFS_FILE, name)
    preds = _read_lines(folder / PREDS_FILE, name)
    if len(refs) != len(preds):
        raise DataFormatError(
            f"{name}: {REFS_FILE} has {len(refs)} lines but {PREDS_FILE} has {len(preds)}; "
            "they must be line-aligned (one reference and one prediction per line)."
        )
    studies = _chexpert_rows(folder, name).set_index("study_id", drop=False)
    candidates = {k: ("" if v is None else v) for k, v in studies["original_impression"].items()}
    match = match_references(refs, candidates)

    rows = []
    for m in match.itertuples(index=False):
        base = {
            "study_id": f"radeval_line_{m.line}",
            "impression": refs[m.line],
            "findings": pd.NA,
            "line": m.line,
            "generated_impression": preds[m.line],
            "match_type": m.match_type,
            "match_ratio": m.match_ratio,
        }
        if m.match_type != "unmatched":
            s = studies.loc[m.key]
            base.update({
                "study_id": m.key,
                **{c: s[c] for c in ("patient_id", "sex", "age", "view", "image_path", "indication", "split",
                                     "race", "ethnicity", "ap_pa", "original_impression")},
            })
        rows.append(base)
    df = pd.DataFrame(rows)
    for c in ("race", "ethnicity", "ap_pa", "original_impression"):
        if c not in df.columns:
            df[c] = pd.NA
    n_unmatched = int((match["match_type"] == "unmatched").sum())
    if n_unmatched:
        log.warning("%s: %d of %d reference lines matched no ReXrank study", name, n_unmatched, len(match))
    out = finalize(df, source=name, extra_first=("line", "generated_impression", "match_type", "match_ratio",
                                                   "race", "ethnicity", "ap_pa", "original_impression"))
    for c in ("generated_impression", "match_type", "race", "ethnicity", "ap_pa", "original_impression"):
        out[c] = out[c].astype("string")
    out["line"] = out["line"].astype("int64")
    out["match_ratio"] = out["match_ratio"].astype("float64")
    out.attrs["n_unmatched"] = n_unmatched
    out.attrs["match_counts"] = {k: int(v) for k, v in out["match_type"].value_counts().items()}
    return out
