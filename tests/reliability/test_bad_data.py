"""Bad data in, a clear error or a counted skip out (issue 24, item 7).

One table, :data:`CASES`: one row per (bad input, public entry point) with the expected outcome:

- ``error``: the entry point raises a :class:`radaudit.errors.RadauditError` subclass (the CLI turns
  it into a one-line message and exit status 2) whose message matches a regex saying what is wrong
  and what to do;
- ``counted``: the input is handled as documented and the result carries the count (or value) that
  says so, e.g. ``n_undefined``, ``n_truncated``, ``excluded``; each expected value is exact.

Every row calls a small builder (tmp files, reports, frames) and then the entry point, and returns
the observables the row checks. Run: ``RADAUDIT_DATA=... pytest -q tests/reliability/test_bad_data.py``.
"""

from __future__ import annotations

import functools
import io
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from radaudit.errors import RadauditError

# --- inputs ------------------------------------------------------------------------------------------

REF = "Heart size is normal. No pleural effusion or pneumothorax. Mild bibasilar atelectasis."
FRENCH = ("Le cœur est de taille normale. Pas d'épanchement pleural ni de pneumothorax. "
          "Atélectasie basale bilatérale discrète.")
GERMAN = "Herzgröße normal. Kein Pleuraerguss, kein Pneumothorax. Geringe bibasale Atelektasen beidseits."
_LONG_BODY = ("FINDINGS: The cardiomediastinal silhouette is within normal limits. The lungs are clear without focal "
              "consolidation. There is no pleural effusion. Degenerative changes of the thoracic spine. ")
_LONG_END = " IMPRESSION: Small right apical pneumothorax."


def long_report(n: int = 20_000) -> str:
    """A realistic report of exactly ``n`` characters whose only abnormal finding is at the very end."""
    body = (_LONG_BODY * (n // len(_LONG_BODY) + 1))[: n - len(_LONG_END)]
    text = body + _LONG_END
    assert len(text) == n
    return text


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def png_bytes(size: int = 16) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.arange(size * size, dtype=np.uint8).reshape(size, size), mode="L").save(buf, format="PNG")
    return buf.getvalue()


def png16(path: Path, width: int = 64) -> np.ndarray:
    """A 16-bit grayscale PNG (PIL mode ``I;16``): a horizontal ramp 0 … 65535; returns the pixel array."""
    from PIL import Image

    arr = np.tile(np.linspace(0, 65535, width).round().astype(np.uint16), (width, 1))
    im = Image.fromarray(arr)
    assert im.mode == "I;16"
    im.save(path)
    return arr


IU_REPORTS = "uid,MeSH,Problems,image,indication,comparison,findings,impression\n"
IU_PROJECTIONS = "uid,filename,projection\n1,1_IM-0001-1001.dcm.png,Frontal\n"


def iu_folder(tmp: Path, reports: str | bytes) -> Path:
    """An IU X-ray folder (the bring-your-own path of ``load_dataset("iu_xray", path=...)``)."""
    folder = tmp / "iu"
    write(folder / "indiana_reports.csv", reports)
    write(folder / "indiana_projections.csv", IU_PROJECTIONS)
    return folder


def synthetic_set(tmp: Path, *, csv: str | bytes | None = None, image: bytes | None = None, labels: str = "Effusion",
                  header: str = "prompt,image_path,labels,seed") -> Path:
    """A user's synthetic set: ``images/0.png`` and ``metadata.csv`` (``csv`` replaces the whole file)."""
    write(tmp / "set" / "images" / "0.png", png_bytes() if image is None else image)
    text = csv if csv is not None else f"{header}\nchest x-ray with effusion,images/0.png,{labels},7\n"
    return write(tmp / "set" / "metadata.csv", text)


@functools.lru_cache(maxsize=1)
def labeler():
    from radaudit.data import chexpert_phrases_dir
    from radaudit.text.labeler import ChexpertLabeler

    return ChexpertLabeler(chexpert_phrases_dir())


def assoc_frame(groups: list[Any]) -> pd.DataFrame:
    refs = ["small left effusion", "no effusion heart normal", "mild cardiomegaly", "lungs clear bilateral",
            "right effusion small", "heart enlarged", "atelectasis basal", "normal chest"]
    preds = ["left effusion", "no effusion", "cardiomegaly", "clear lungs", "effusion right", "enlarged heart",
             "basal atelectasis", "normal"]
    n = len(groups)
    return pd.DataFrame({"reference": (refs * 2)[:n], "prediction": (preds * 2)[:n], "group": groups})


FAST_AUDIT = dict(n_bootstrap=20, n_permutations=20)


# --- entry points: each returns the observables its rows check -------------------------------------------

def load_iu(tmp: Path, reports: str | bytes) -> dict:
    from radaudit.data import load_dataset

    df = load_dataset("iu_xray", path=iu_folder(tmp, reports))
    return {"rows": len(df)}


def read_set(tmp: Path, **kw) -> dict:
    from radaudit.data.image_sets import read_synthetic_set

    return {"rows": len(read_synthetic_set(synthetic_set(tmp, **kw)))}


def load_image_file(tmp: Path, content: bytes) -> dict:
    from radaudit.data.image_sets import load_images

    return {"shape": load_images([write(tmp / "img.png", content)], size=16).shape}


def load_png16(tmp: Path) -> dict:
    from radaudit.data.image_sets import load_images

    raw = png16(tmp / "ramp16.png")
    x = load_images([tmp / "ramp16.png"], size=raw.shape[0])[0]
    expected = np.rint(raw / 65535.0 * 255.0) / 255.0  # min-max over the full 16-bit range, not clipped at 255
    return {"min": float(x.min()), "max": float(x.max()), "n_levels": len(np.unique(x)),
            "max_abs_error": float(np.abs(x - expected).max()) <= 1 / 255 + 1e-6}


def rgb_png16(tmp: Path) -> dict:
    from radaudit.models.encoders import to_rgb

    raw = png16(tmp / "ramp16.png")
    rgb = np.asarray(to_rgb(tmp / "ramp16.png"))
    return {"dtype": str(rgb.dtype), "min": int(rgb.min()), "max": int(rgb.max()), "mid": int(rgb[0, raw.shape[1] // 2, 0]),
            "channels_equal": bool((rgb[..., 0] == rgb[..., 2]).all())}


def metric(name: str, refs: list, cands: list, **options) -> dict:
    from radaudit.metrics import build_metric

    res = build_metric(name, **options).compute(refs, cands)
    out = {"n_undefined": res.n_undefined, "n_pairs": len(res)}
    out.update({k: v for k, v in res.details.items() if k.startswith("n_") and np.ndim(v) == 0})
    out["score_is_nan"] = math.isnan(res.score)
    return out


def label(texts: list[str]) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = labeler().label(texts)
    last = table.iloc[-1]
    return {"rows": len(table), "n_empty": table.attrs["n_empty"], "n_non_english": table.attrs["n_non_english"],
            "last_all_blank": bool(last.isna().all()), "last_pneumothorax": last["Pneumothorax"],
            "warned_non_english": any("non-English" in str(w.message) for w in caught)}


def audit(groups: list[Any], drop: str | None = None) -> dict:
    from radaudit.metrics.association import association_audit

    df = assoc_frame(groups)
    res = association_audit(df if drop is None else df.drop(columns=drop), **FAST_AUDIT)
    return {"excluded": res.excluded, "n_reports": res.n_reports}


def dir_(groups: list[Any]) -> dict:
    from radaudit.metrics.dir import delta_dir

    df = assoc_frame(groups)
    return {"delta": delta_dir(df["reference"], df["prediction"], df["group"]).delta}


def per_label(real_labels: Any, synth_labels: Any) -> dict:
    from radaudit.metrics.image.fidelity import per_label_fidelity

    rng = np.random.default_rng(0)
    real, synth = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    table = per_label_fidelity(real, real_labels, synth, synth_labels, labels=["Effusion", "Nodule"])
    row = table.set_index("label").loc["Nodule"]
    return {"n_missing_labels": table.attrs["n_missing_labels"], "nodule_n_real": int(row["n_real"]),
            "nodule_fid_is_nan": bool(np.isnan(row["fid"])), "nodule_note": row["note"]}


LABELS_01 = pd.DataFrame({"Effusion": [1, 1, 1, np.nan, 0, np.nan], "Nodule": [0, 0, 0, 0, 0, 0]})


# --- the table ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    id: str
    fed: str  # what is fed, in words
    entry: str  # the public entry point
    run: Callable[[Path], dict]
    error: tuple[type, str] | None = None  # (RadauditError subclass, message regex)
    counted: dict[str, Any] = field(default_factory=dict)  # observable -> exact expected value
    xfail: str | None = None


def _err(kind: str) -> type:
    import radaudit.errors as e
    from radaudit.metrics.association import AssociationInputError
    from radaudit.metrics.base import MetricInputError
    from radaudit.metrics.dir import DIRUndefinedError

    return {"DataFormatError": e.DataFormatError, "AssociationInputError": AssociationInputError,
            "MetricInputError": MetricInputError, "DIRUndefinedError": DIRUndefinedError}[kind]


CASES: list[Case] = [
    # ---- an empty CSV
    Case("empty_csv/dataset", "zero-byte indiana_reports.csv", 'load_dataset("iu_xray", path=...)',
         lambda t: load_iu(t, b""), error=("DataFormatError", r"indiana_reports\.csv is empty \(0 bytes\).*fetch it again")),
    Case("header_only_csv/dataset", "indiana_reports.csv with a header and no row", 'load_dataset("iu_xray", path=...)',
         lambda t: load_iu(t, IU_REPORTS), error=("DataFormatError", r"has a header but no data rows.*fetch it again")),
    Case("empty_csv/synthetic_set", "zero-byte metadata.csv", "read_synthetic_set",
         lambda t: read_set(t, csv=b""), error=("DataFormatError", r"metadata\.csv' is empty \(0 bytes\)\. Expected a CSV "
                                                                   r"with a header line prompt,image_path,labels,seed")),
    Case("header_only_csv/synthetic_set", "metadata.csv with only its header", "read_synthetic_set",
         lambda t: read_set(t, csv="prompt,image_path,labels,seed\n"),
         error=("DataFormatError", r"has no rows: a synthetic set needs at least one image")),
    # ---- a missing required column
    Case("missing_column/dataset", "indiana_reports.csv without 'findings'", 'load_dataset("iu_xray", path=...)',
         lambda t: load_iu(t, IU_REPORTS.replace(",findings", "") + "1,normal,normal,x,indication,none,impression\n"),
         error=("DataFormatError", r"lacks the column\(s\) \['findings'\]; expected at least \[.*found \[")),
    Case("missing_column/synthetic_set", "metadata.csv without 'seed'", "read_synthetic_set",
         lambda t: read_set(t, csv="prompt,image_path,labels\nx,images/0.png,Effusion\n"),
         error=("DataFormatError", r"lacks column\(s\) \['seed'\]; required: \['prompt', 'image_path', 'labels', 'seed'\]")),
    Case("missing_column/association", "a frame without the 'group' column", "association_audit",
         lambda t: audit(["F", "M"], drop="group"),
         error=("AssociationInputError", r"df has no column\(s\) \['group'\]; columns are \['reference', 'prediction'\]")),
    # ---- a corrupt or zero-byte image
    Case("zero_byte_png/load_images", "a 0-byte .png", "load_images",
         lambda t: load_image_file(t, b""), error=("DataFormatError", r"img\.png' is empty \(0 bytes\).*remove it")),
    Case("truncated_png/load_images", "the first half of a valid PNG", "load_images",
         lambda t: load_image_file(t, png_bytes(64)[: len(png_bytes(64)) // 2]),
         error=("DataFormatError", r"Cannot read .*img\.png' as an image .*corrupt, truncated or not an image")),
    Case("not_an_image/load_images", "text bytes saved as .png", "load_images",
         lambda t: load_image_file(t, b"this is not a PNG"),
         error=("DataFormatError", r"Cannot read .*img\.png' as an image \(cannot identify image file")),
    Case("zero_byte_png/synthetic_set", "metadata.csv naming a 0-byte image", "read_synthetic_set",
         lambda t: read_set(t, image=b""),
         error=("DataFormatError", r"column 'image_path' names empty \(0-byte\) file\(s\) in row\(s\) 2")),
    # ---- a grayscale 16-bit PNG: full dynamic range, not clipped at 255
    Case("png16/load_images", "I;16 ramp 0..65535", "load_images",
         load_png16, counted={"min": 0.0, "max": 1.0, "n_levels": 64, "max_abs_error": True}),
    Case("png16/to_rgb", "I;16 ramp 0..65535", "models.encoders.to_rgb (image encoders, FID features)",
         rgb_png16, counted={"dtype": "uint8", "min": 0, "max": 255, "mid": 130, "channels_equal": True}),
    # ---- an empty report
    Case("empty_report/metric_both", 'reference "" and candidate ""', 'build_metric("bleu4").compute',
         lambda t: metric("bleu4", ["", REF], ["", REF]),
         counted={"n_undefined": 1, "n_pairs": 2, "score_is_nan": False}),
    Case("empty_report/chexpert_f1", 'reference "" and candidate ""', 'build_metric("chexpert_f1_micro_top5").compute',
         lambda t: metric("chexpert_f1_micro_top5", ["", REF], ["", REF]),
         counted={"n_undefined": 1, "n_pairs": 2, "n_non_english_candidate": 0}),
    Case("empty_report/only_pair", 'a batch of one ("", "")', 'build_metric("rougeL").compute',
         lambda t: metric("rougeL", [""], [""]), counted={"n_undefined": 1, "score_is_nan": True}),
    Case("empty_report/labeler", '"   " (whitespace only)', "ChexpertLabeler.label",
         lambda t: label([REF, "   "]), counted={"rows": 2, "n_empty": 1, "last_all_blank": True}),
    Case("missing_report/metric", "None as a candidate", 'build_metric("bleu4").compute',
         lambda t: metric("bleu4", [REF, REF], [REF, None]),
         error=("MetricInputError", r"candidates \[1\] are missing \(None/NaN\).*use '' for a report")),
    Case("missing_report/labeler", "NaN as a report", "ChexpertLabeler.label",
         lambda t: label([REF, float("nan")]), error=("DataFormatError", r"texts \[1\] are missing \(None/NaN\)")),
    # ---- a 20,000-character report
    Case("long_report/embedding", "a 20,000-character reference", 'build_metric("embedding_similarity").compute',
         lambda t: metric("embedding_similarity", [long_report(), REF], [REF, REF]),
         counted={"n_truncated": 1, "n_undefined": 0}),
    Case("long_report/labeler", "a 20,000-character report, finding in its last sentence", "ChexpertLabeler.label",
         lambda t: label([long_report()]), counted={"rows": 1, "last_pneumothorax": 1.0, "n_non_english": 0}),
    # ---- a report in another language
    Case("french_report/labeler", "a French report", "ChexpertLabeler.label",
         lambda t: label([REF, FRENCH]), counted={"n_non_english": 1, "warned_non_english": True, "n_empty": 0}),
    Case("german_report/chexpert_f1", "a German candidate", 'build_metric("chexpert_f1_micro_top5").compute',
         lambda t: metric("chexpert_f1_micro_top5", [REF, REF], [REF, GERMAN]),
         counted={"n_non_english_candidate": 1, "n_non_english_reference": 0}),
    Case("french_report/atomimed", "a French candidate", 'build_metric("atomimed_clinical").compute',
         lambda t: metric("atomimed_clinical", [REF], [FRENCH]), counted={"n_non_english_candidate": 1,
                                                                         "n_non_english_reference": 0}),
    # ---- a group with no members after filtering
    Case("empty_group/association", "group column all 'F' (+ one 'O')", "association_audit",
         lambda t: audit(["F"] * 5 + ["O"]),
         error=("AssociationInputError", r"group 'M' has no reports \(reports per group: \{'F': 5, 'M': 0\}; excluded "
                                         r"values: \{'O': 1\}\)")),
    Case("empty_group/delta_dir", "group column all 'F'", "metrics.dir.delta_dir",
         lambda t: dir_(["F"] * 6), error=("DIRUndefinedError", r"group 'M' has no reports in the reference corpus")),
    Case("empty_group/per_label_fidelity", "a label no image has", "per_label_fidelity",
         lambda t: per_label([["Effusion"]] * 6, [["Effusion"]] * 6),
         counted={"nodule_n_real": 0, "nodule_fid_is_nan": True, "nodule_note": "fewer than 2 images"}),
    # ---- NaN in a label column
    Case("nan_label/association_group", "NaN in the group column", "association_audit",
         lambda t: audit(["F", "M", np.nan, "F", "M", "F", "M", "F"]),
         counted={"excluded": {"<NA>": 1}, "n_reports": {"F": 4, "M": 3}}),
    Case("nan_label/per_label_fidelity", "NaN in a 0/1 label column", "per_label_fidelity",
         lambda t: per_label(LABELS_01, LABELS_01),
         counted={"n_missing_labels": {"real": 2, "synth": 2}, "nodule_n_real": 0}),
    Case("nan_label/synthetic_set", "labels cell 'NaN' in metadata.csv", "read_synthetic_set",
         lambda t: read_set(t, labels="NaN"),
         error=("DataFormatError", r"labels in metadata\.csv row 2: 'NaN' reads as a missing value.*Leave the cell blank")),
]


def _param(case: Case):
    marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_data(case: Case, tmp_path: Path) -> None:
    assert (case.error is None) != (not case.counted), f"{case.id}: give either an error or counts"
    if case.error is not None:
        kind, pattern = case.error
        with pytest.raises(_err(kind), match=pattern) as info:
            case.run(tmp_path)
        assert isinstance(info.value, RadauditError), "a user error must be a RadauditError (CLI: exit 2, no traceback)"
        return
    got = case.run(tmp_path)
    assert {k: got.get(k, "<absent>") for k in case.counted} == case.counted


def test_table_covers_every_bad_input() -> None:
    """Issue 24 item 7 lists nine kinds of bad data: each has at least one row."""
    kinds = {c.id.split("/")[0] for c in CASES}
    for needed in ("empty_csv", "missing_column", "zero_byte_png", "truncated_png", "png16", "empty_report",
                   "long_report", "french_report", "empty_group", "nan_label"):
        assert needed in kinds, needed
    assert len({c.id for c in CASES}) == len(CASES)
