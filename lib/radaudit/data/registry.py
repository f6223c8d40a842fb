"""The dataset registry: one entry per dataset, one way to load any of them.

Each :class:`DatasetSpec` says where the dataset's folder sits under the data root, which files
must be there for it to count as present, where it comes from (shown in every "not found" error),
and which function loads it (imported only when the dataset is loaded). Downloadable public sets
also list their :class:`Source` files for ``radaudit data fetch``.

>>> from radaudit.data import load_dataset
>>> df = load_dataset("iu_xray")            # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from radaudit.data.root import ENV_VAR, resolve_data_root
from radaudit.data.schema import validate
from radaudit.errors import DatasetNotFoundError, ParamsError

Access = Literal["public", "credentialed", "gated"]
Kind = Literal["reports", "pairs", "annotations", "images", "resource"]


@dataclass(frozen=True)
class Source:
    """One file of a public dataset as its canonical source serves it.

    ``dest`` is the path relative to the dataset folder. ``sha256`` (optional) is checked after the
    download. ``mirror_path`` is the path under a mirror root that holds the same file (used by
    ``radaudit data fetch --mirror``); it defaults to ``dest``.
    """

    url: str
    dest: str
    sha256: str | None = None
    mirror_path: str | None = None


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    folder: str
    title: str
    kind: Kind
    access: Access
    homepage: str
    license: str
    loader: str | None  # "module:function"; None for resources that are read by other modules
    required: tuple[str, ...]
    how_to_get: str
    sources: tuple[Source, ...] = field(default=())
    description: str = ""

    def path(self, data_root: str | os.PathLike | None = None) -> Path:
        return resolve_data_root(data_root) / self.folder

    def missing_files(self, folder: Path) -> list[str]:
        return [r for r in self.required if not (folder / r).exists()]


def _public_how(name: str, homepage: str) -> str:
    return (
        f"It is public: run `radaudit data fetch {name} --data-root <root>` to download it from {homepage}, "
        f"then point --data-root / -p data_root=... / {ENV_VAR} at <root>."
    )


DATASETS: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    if spec.name in DATASETS:
        raise ValueError(f"dataset {spec.name!r} registered twice")
    DATASETS[spec.name] = spec
    return spec


register(DatasetSpec(
    name="iu_xray",
    folder="iu-xray-openi",
    title="IU X-ray / Open-i (Indiana University chest X-ray reports)",
    kind="reports",
    access="public",
    homepage="https://openi.nlm.nih.gov/faq (NLMCXR collection; Demner-Fushman et al., JAMIA 2016)",
    license="Open-i terms of use (NLM); cite Demner-Fushman et al. 2016",
    loader="radaudit.data.iu_xray:load",
    required=("indiana_reports.csv", "indiana_projections.csv"),
    how_to_get=_public_how("iu_xray", "Open-i and its widely used CSV export"),
    description="3,851 de-identified reports (findings, impression, indication, MeSH/Problems) and 7,466 projections; sex parsed from the indication.",
))
register(DatasetSpec(
    name="iu_xray_rexrank",
    folder="rexrank-chexpertplus-iu",
    title="IU X-ray ReXrank test/valid splits",
    kind="reports",
    access="public",
    homepage="https://github.com/rajpurkarlab/ReXrank (MIT)",
    license="MIT (ReXrank); text from Open-i",
    loader="radaudit.data.rexrank:load_iu_xray",
    required=("ReXRank_IUXray_test.json", "ReXRank_IUXray_valid.json"),
    how_to_get=_public_how("iu_xray_rexrank", "the ReXrank repository"),
    description="The IU X-ray test (590) and valid (296) studies of the ReXrank leaderboard.",
))
register(DatasetSpec(
    name="chexpert_plus_valid",
    folder="rexrank-chexpertplus-iu",
    title="CheXpert Plus validation reports (ReXrank, 200 studies)",
    kind="reports",
    access="public",
    homepage="https://github.com/rajpurkarlab/ReXrank (MIT); text from CheXpert Plus (Stanford AIMI)",
    license="MIT (ReXrank); CheXpert Plus research-use agreement for the text",
    loader="radaudit.data.rexrank:load_chexpert_plus_valid",
    required=("ReXRank_CheXpertPlus.json",),
    how_to_get=_public_how("chexpert_plus_valid", "the ReXrank repository"),
    description="200 CheXpert Plus validation reports with age, sex, race and ethnicity.",
))
register(DatasetSpec(
    name="chexpert_plus_pairs",
    folder="rexrank-chexpertplus-iu",
    title="CheXpert Plus impressions: reference vs generated, with demographics (200 pairs)",
    kind="pairs",
    access="public",
    homepage="https://github.com/jbdel/RadEval (MIT) test utterances, joined to ReXrank CheXpert Plus",
    license="MIT (RadEval, ReXrank); CheXpert Plus research-use agreement for the text",
    loader="radaudit.data.rexrank:load_chexpert_plus_pairs",
    required=("ReXRank_CheXpertPlus.json", "radeval_refs_chexpert_impression.txt", "radeval_preds_chexpert_impression.txt"),
    how_to_get=_public_how("chexpert_plus_pairs", "the RadEval and ReXrank repositories"),
    description="200 (reference, generated) impression pairs, each joined to the study's sex, age and race.",
))
register(DatasetSpec(
    name="radpref",
    folder="crimson-radpref",
    title="RadPref (CRIMSON): reference report and two candidate reports per case",
    kind="pairs",
    access="public",
    homepage="https://github.com/rajpurkarlab/CRIMSON (MIT)",
    license="MIT",
    loader="radaudit.data.radpref:load_cases",
    required=("preference_data.json",),
    how_to_get=_public_how("radpref", "the CRIMSON repository"),
    description="100 ReXGradient cases: ground-truth report, GPT and MedGemma candidates, patient sex and age.",
))
register(DatasetSpec(
    name="radpref_annotations",
    folder="crimson-radpref",
    title="RadPref radiologist annotations (long form: case x candidate x rater)",
    kind="annotations",
    access="public",
    homepage="https://github.com/rajpurkarlab/CRIMSON (MIT)",
    license="MIT",
    loader="radaudit.data.radpref:load_annotations",
    required=("preference_data.json", "radiologist_annotations/user_1.json", "radiologist_annotations/user_2.json", "radiologist_annotations/user_3.json"),
    how_to_get=_public_how("radpref_annotations", "the CRIMSON repository"),
    description="3 cardiothoracic radiologists x 100 cases x 2 candidates: false/missing/attribute errors by clinical significance and a 1-5 rating.",
))
register(DatasetSpec(
    name="covid_cxr",
    folder="covid-chestxray-dataset",
    title="COVID-19 image data collection (Cohen et al.), X-ray subset",
    kind="images",
    access="public",
    homepage="https://github.com/ieee8023/covid-chestxray-dataset",
    license="per image (metadata `license` column); metadata CC BY-NC-SA 4.0",
    loader="radaudit.data.covid_cxr:load",
    required=("metadata.csv",),
    how_to_get=_public_how("covid_cxr", "the covid-chestxray-dataset repository"),
    description="Chest X-ray images with patient id, view, sex, age, clinical notes, finding and per-image licence.",
))
register(DatasetSpec(
    name="cxr_label_phrases",
    folder="cxr-label-phrases",
    title="CheXpert labeler phrase lists and NegBio negation/uncertainty patterns",
    kind="resource",
    access="public",
    homepage="https://github.com/stanfordmlgroup/chexpert-labeler (MIT), https://github.com/ncbi-nlp/NegBio (public domain)",
    license="MIT / US public domain",
    loader=None,
    required=("chexpert-labeler/phrases/mention",),
    how_to_get=_public_how("cxr_label_phrases", "the chexpert-labeler and NegBio repositories"),
    description="Mention/unmention phrases for 14 observations; negation and uncertainty patterns.",
))

_CRED = (
    "It is credentialed: {how} Then either put it under <data root>/{folder} or pass its folder with "
    "`path=...` (params key `{name}_path`)."
)

register(DatasetSpec(
    name="mimic_cxr",
    folder="mimic-cxr",
    title="MIMIC-CXR (reports, metadata, CheXpert labels, JPGs) + MIMIC-IV patients",
    kind="reports",
    access="credentialed",
    homepage="https://physionet.org/content/mimic-cxr-jpg/2.1.0/ and https://physionet.org/content/mimic-cxr/2.1.0/ (PhysioNet credentialed access)",
    license="PhysioNet Credentialed Health Data License 1.5.0",
    loader="radaudit.data.mimic_cxr:load",
    required=("mimic-cxr-2.0.0-metadata.csv.gz",),
    how_to_get=_CRED.format(
        how="sign the PhysioNet DUA and download MIMIC-CXR-JPG (metadata, chexpert, split CSVs and files/), "
        "the MIMIC-CXR reports (mimic-cxr-reports.zip, unzipped) and MIMIC-IV hosp/patients.csv.gz.",
        folder="mimic-cxr", name="mimic_cxr"),
    description="Credentialed: 227k studies; sex and age from the MIMIC-IV patients table.",
))
register(DatasetSpec(
    name="rexgradient",
    folder="rexgradient-160k",
    title="ReXGradient-160K",
    kind="reports",
    access="gated",
    homepage="https://huggingface.co/datasets/rajpurkarlab/ReXGradient-160K (gated: accept the terms on the Hub)",
    license="ReXGradient-160K data use agreement",
    loader="radaudit.data.rexgradient:load",
    required=(),
    how_to_get=_CRED.format(
        how="accept the terms of rajpurkarlab/ReXGradient-160K on the Hugging Face Hub and either load it by hub id "
        "(`hub_id=...`, needs the `hub` extra and network) or download its metadata parquet/CSV files.",
        folder="rexgradient-160k", name="rexgradient"),
    description="Gated: 160k chest X-ray studies from 3 US health systems with reports and demographics.",
))
register(DatasetSpec(
    name="chexpert_plus",
    folder="chexpert-plus",
    title="CheXpert Plus (full report CSV)",
    kind="reports",
    access="credentialed",
    homepage="https://stanfordaimi.azurewebsites.net/datasets/5158c524-d3ab-4e02-96e9-6ee9efc110a1 (Stanford AIMI research-use agreement)",
    license="Stanford University School of Medicine CheXpert Plus Dataset Research Use Agreement",
    loader="radaudit.data.chexpert_plus:load",
    required=(),
    how_to_get=_CRED.format(
        how="accept the Stanford AIMI research-use agreement and download df_chexpert_plus_240401.csv "
        "(and the PNG/JPG images if you need them).",
        folder="chexpert-plus", name="chexpert_plus"),
    description="Credentialed: 223k reports with sections and demographics.",
))
register(DatasetSpec(
    name="rexval",
    folder="rexval",
    title="ReXVal: radiologist error annotations of candidate reports (Yu et al.)",
    kind="annotations",
    access="credentialed",
    homepage="https://physionet.org/content/rexval-dataset/1.0.0/ (PhysioNet credentialed access)",
    license="PhysioNet Credentialed Health Data License 1.5.0",
    loader="radaudit.data.rexval:load",
    required=("50_samples_gt_and_candidates.csv", "6_valid_raters_per_rater_error_categories.csv"),
    how_to_get=_CRED.format(
        how="sign the PhysioNet DUA and download the ReXVal dataset's two CSVs.",
        folder="rexval", name="rexval"),
    description="Credentialed: 50 studies x 4 candidate reports x 6 radiologists, error counts by category and significance.",
))


def get_spec(name: str) -> DatasetSpec:
    """The registry entry for ``name``; an unknown name raises a ``ParamsError`` listing the known ones."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ParamsError(
            f"Unknown dataset {name!r}. Known datasets: {', '.join(sorted(DATASETS))}."
        ) from None


def dataset_folder(name: str, data_root: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> Path:
    """The folder that should hold dataset ``name``: ``path`` if given, else ``<data root>/<folder>``."""
    spec = get_spec(name)
    if path not in (None, ""):
        return Path(os.path.expanduser(str(path))).resolve()
    return resolve_data_root(data_root) / spec.folder


def not_found_message(spec: DatasetSpec, folder: Path, missing: list[str]) -> str:
    what = f"its folder {folder} does not exist" if not folder.exists() else f"{folder} lacks {', '.join(missing)}"
    return (
        f"Dataset {spec.name!r} ({spec.title}) was not found: {what}. "
        f"It comes from {spec.homepage}. {spec.how_to_get}"
    )


def is_present(name: str, data_root: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> bool:
    spec = get_spec(name)
    try:
        folder = dataset_folder(name, data_root, path)
    except DatasetNotFoundError:
        return False
    return folder.is_dir() and not spec.missing_files(folder)


def require(name: str, data_root: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> Path:
    """Return the dataset's folder, or raise :class:`DatasetNotFoundError` saying where to get it."""
    spec = get_spec(name)
    folder = dataset_folder(name, data_root, path)
    missing = spec.missing_files(folder)
    if not folder.is_dir() or missing:
        raise DatasetNotFoundError(not_found_message(spec, folder, missing))
    return folder


def load_dataset(name: str, data_root: str | os.PathLike | None = None, *, path: str | os.PathLike | None = None, **kwargs) -> pd.DataFrame:
    """Load dataset ``name`` in the tidy schema (:mod:`radaudit.data.schema`).

    ``data_root`` follows :func:`radaudit.data.root.resolve_data_root`; ``path`` points at the
    dataset's own folder instead (credentialed sets kept elsewhere). Extra keyword arguments go to
    the dataset's loader (see its docstring).
    """
    spec = get_spec(name)
    if spec.loader is None:
        raise ParamsError(f"{name!r} is a resource ({spec.title}), not a table; read it with the module that uses it.")
    folder = require(name, data_root, path)
    module, func = spec.loader.split(":")
    df = getattr(importlib.import_module(module), func)(folder, **kwargs)
    if spec.kind != "annotations":
        validate(df)
    df.attrs.setdefault("source", name)
    df.attrs["dataset"] = name
    df.attrs["folder"] = str(folder)
    return df


def list_datasets(data_root: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per registered dataset: name, title, kind, access, and whether it is present."""
    rows = []
    for spec in DATASETS.values():
        rows.append({
            "name": spec.name,
            "kind": spec.kind,
            "access": spec.access,
            "present": is_present(spec.name, data_root),
            "title": spec.title,
            "fetchable": bool(spec.sources),
        })
    return pd.DataFrame(rows)
