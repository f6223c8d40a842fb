"""The inputs of Experiment 1 that are read from datasets: the studies and chest X-rays the paper path's report model
writes for, and the real systems' report corpora of the Table 2 analog.

Paper: Parikh et al., "Measuring What VLMs Don't Say" (``../shared/papers/000_c11b3b836ef0a58a.txt``), §3. The demo
report writer's corpus (public report text per training skew) is built with the model
(:func:`radaudit.audits.decoding_erasure.models.build_training_corpus`); the generation step that uses these inputs is
:mod:`radaudit.audits.decoding_erasure.study`.

Choices (the paper is silent)
-----------------------------
- **Image selection** (paper: frontal views filtered with a foundation model): we take the
  dataset's own view labels (PA/AP), the first frontal image of each study, and studies with a
  non-empty reference (findings, else impression) and sex F or M.
- **Which split.** The paper fine-tunes on 60K ReXGradient studies and evaluates N = 2,000 without
  naming the split; studies the adapter was trained on must not be audited, so ``eval_split``
  (default ``test``, the public test split) restricts the studies before they are drawn.
- **Images** are resized to ``image_size`` x ``image_size`` RGB before the processor (paper §3:
  "Input images are resized to 512x512 RGB"): a plain bicubic resize, aspect ratio not kept, as the
  sentence says; Qwen3-VL's processor then keeps 512 px (a multiple of its 32 px merged patch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data import load_dataset
from radaudit.errors import DataFormatError, ParamsError, RadauditError
from radaudit.models.vlm import load_image
from radaudit.stats import stable_seed

__all__ = ["BASELINE_NAMES", "FRONTAL_VIEWS", "baseline_corpora", "image_studies", "report_images", "resize_square",
           "select_image_studies"]

FRONTAL_VIEWS: tuple[str, ...] = ("PA", "AP")

BASELINE_NAMES: tuple[str, ...] = ("CheXpert Plus (generated)", "RadPref GPT", "RadPref MedGemma")


# ----------------------------------------------------------------------------------------------
# paper: the studies and images a VLM writes reports for


def select_image_studies(df: pd.DataFrame, n: int, *, seed: int, folder: str | Path | None = None,
                         groups: Sequence[str] = ("F", "M"), views: Sequence[str] = FRONTAL_VIEWS) -> pd.DataFrame:
    """``n`` studies balanced over ``groups`` with a frontal image and a reference report (paper §3: N = 2,000).

    Keeps studies whose ``view`` is one of ``views`` and whose ``image_path`` is set, whose reference
    (``findings``, else ``impression``) is non-empty and whose ``sex`` is one of ``groups``; draws
    ``ceil(n / 2)`` per group with ``seed`` (fewer available: a :class:`ParamsError` with the counts).
    Relative image paths are resolved against ``folder``; a missing image file raises a
    :class:`DataFormatError` saying which archive to unpack. Returns ``study_id``, ``reference``,
    ``group``, ``indication``, ``image`` (absolute path), interleaved F, M, F, M, ...
    """
    need = {"study_id", "sex", "view", "image_path", "findings", "impression"}
    if not need <= set(df.columns):
        raise DataFormatError(f"the image dataset needs columns {sorted(need)}; it has {sorted(df.columns)}")
    ref = df["findings"].astype("string").fillna("").str.strip()
    ref = ref.where(ref != "", df["impression"].astype("string").fillna("").str.strip())
    view = df["view"].astype("string").str.upper()
    ok = view.isin([v.upper() for v in views]).fillna(False) & df["image_path"].notna() & (ref != "")
    cand = df.assign(reference=ref)[ok.to_numpy(dtype=bool)]
    rng = np.random.default_rng(stable_seed(seed, "select_image_studies"))
    per = int(math.ceil(n / 2))
    parts = []
    for g in groups:
        rows = cand[cand["sex"] == g]
        if len(rows) < per:
            raise ParamsError(f"only {len(rows)} usable studies with sex {g!r} (frontal view, image and report); "
                              f"n_reports={n} needs {per} per group. Lower n_reports or add data.")
        parts.append(rows.iloc[np.sort(rng.choice(len(rows), size=per, replace=False))].reset_index(drop=True))
    chosen = pd.concat(parts).sort_index(kind="stable").reset_index(drop=True).head(n)
    base = Path(folder) if folder is not None else None
    images = []
    for p in chosen["image_path"].astype(str):
        path = Path(p) if base is None or Path(p).is_absolute() else base / p
        if not path.is_file():
            raise DataFormatError(f"image {path} does not exist. Unpack the dataset's image archives (ReXGradient: "
                                  f"deid_png.part*; MIMIC-CXR: MIMIC-CXR-JPG files/) into its folder {base}.")
        images.append(str(path))
    ind = chosen["indication"] if "indication" in chosen.columns else pd.Series([None] * len(chosen))
    return pd.DataFrame({"study_id": chosen["study_id"].astype(str), "reference": chosen["reference"].astype(str),
                         "group": chosen["sex"].astype(str), "indication": ind.astype(object).to_numpy(),
                         "image": images})


def image_studies(P: Any, data_root: Any = None) -> pd.DataFrame:
    """The studies the report model writes for: ``P.image_dataset`` restricted to ``P.eval_split``, then
    :func:`select_image_studies` (``P.n_reports``, balanced over ``P.groups``, seed ``P.seed``).

    ``eval_split`` keeps the studies a fine-tuned adapter was not trained on out of reach (``None``: every
    split). A split with no study in the data is a :class:`ParamsError` saying what to set.
    """
    from radaudit.data.registry import dataset_folder, load_dataset  # lazy: looked up per call, tests patch it

    splits = None if P.eval_split is None else [P.eval_split]
    df = load_dataset(P.image_dataset, data_root, path=P.dataset_path, splits=splits)
    if splits is not None:
        df = df[df["split"].astype("string").eq(P.eval_split).fillna(False).to_numpy(dtype=bool)]
        if df.empty:
            raise ParamsError(f"{P.image_dataset} has no study in split eval_split={P.eval_split!r} (notes: "
                              f"{'; '.join(df.attrs.get('notes', [])) or 'none'}). Set eval_split to a split the "
                              "data holds (train, valid, test) that report_adapter was not trained on, or null.")
    folder = dataset_folder(P.image_dataset, data_root, P.dataset_path)
    return select_image_studies(df, P.n_reports, seed=P.seed, folder=folder, groups=P.groups)


def resize_square(image: Any, size: int) -> Any:
    """``image`` (a path or PIL image) as a ``size`` x ``size`` RGB PIL image, bicubic, aspect ratio not kept
    (paper §3: "Input images are resized to 512x512 RGB")."""
    from PIL import Image

    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ParamsError(f"image_size must be a positive number of pixels, got {size!r}.")
    img = load_image(image)
    return img if img.size == (size, size) else img.resize((size, size), Image.Resampling.BICUBIC)


def report_images(paths: Sequence[Any], size: int | None) -> list[Any]:
    """What the processor is given for each study: the image resized by :func:`resize_square` to ``size``, or
    the path itself when ``size`` is ``None`` (the processor's own resizing only)."""
    return list(paths) if size is None else [resize_square(p, size) for p in paths]


# ----------------------------------------------------------------------------------------------
# baselines: real model outputs


def baseline_corpora(data_root: str | Path | None = None, max_reports: int | None = None) -> dict[str, pd.DataFrame]:
    """The real systems of the Table 2 analog: (reference, prediction, group) corpora, no generation.

    - ``"CheXpert Plus (generated)"``: the 200 CheXpert Plus impressions (``impression``) and the
      generated impressions shipped with them (``generated_impression``);
    - ``"RadPref GPT"`` / ``"RadPref MedGemma"``: RadPref's reference findings (``findings``) and,
      per case, the candidate (``c1_report`` or ``c2_report``) whose source is that system (100 each).

    The group column is the patient's sex, kept as is: missing and ``"O"`` values are excluded and
    counted by :func:`~radaudit.audits.decoding_erasure.corpus.evaluate_corpus`. ``max_reports``: keep only the
    first N rows of each (for quick runs). Columns: ``study_id``, ``reference``, ``prediction``, ``group``, ``system``.
    """
    out: dict[str, pd.DataFrame] = {}
    cx = load_dataset("chexpert_plus_pairs", data_root)
    out[BASELINE_NAMES[0]] = pd.DataFrame({
        "study_id": cx["study_id"].astype(str).to_numpy(), "reference": cx["impression"].astype(object).to_numpy(),
        "prediction": cx["generated_impression"].astype(object).to_numpy(), "group": cx["sex"].astype(object).to_numpy(),
        "system": "chexpert_plus_generated"})
    rp = load_dataset("radpref", data_root)
    for name, source in ((BASELINE_NAMES[1], "gpt"), (BASELINE_NAMES[2], "medgemma")):
        c1 = (rp["c1_source"] == source).to_numpy(dtype=bool)
        c2 = (rp["c2_source"] == source).to_numpy(dtype=bool)
        if (c1 & c2).any() or (~c1 & ~c2).any():
            raise RadauditError(f"radpref: expected exactly one {source!r} candidate per case; found "
                                f"{int((c1 & c2).sum())} cases with two and {int((~c1 & ~c2).sum())} with none")
        pred = np.where(c1, rp["c1_report"].astype(object).to_numpy(), rp["c2_report"].astype(object).to_numpy())
        out[name] = pd.DataFrame({
            "study_id": rp["study_id"].astype(str).to_numpy(), "reference": rp["findings"].astype(object).to_numpy(),
            "prediction": pred, "group": rp["sex"].astype(object).to_numpy(), "system": source})
    for name, df in list(out.items()):
        df["group"] = df["group"].map(lambda v: None if pd.isna(v) else v)
        if max_reports is not None:
            out[name] = df.head(int(max_reports)).reset_index(drop=True)
    return out
