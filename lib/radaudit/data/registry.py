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
from radaudit.registry import Registry

Access = Literal["public", "credentialed", "gated"]
Kind = Literal["reports", "pairs", "annotations", "images", "resource"]


@dataclass(frozen=True)
class Source:
    """One file of a public dataset as its canonical source serves it.

    ``dest`` is the path relative to the dataset folder. ``sha256`` (optional) is checked after the
    download. ``radaudit data fetch --mirror URL`` fetches ``<URL>/<host>/<path>`` instead of
    ``https://<host>/<path>``.
    """

    url: str
    dest: str
    sha256: str | None = None


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


def github_file(repo_at: tuple[str, str], path: str, dest: str | None = None, sha256: str | None = None) -> Source:
    """A file of a public GitHub repository at a fixed commit (``repo_at`` = ("owner/name", commit)).

    ``dest`` defaults to the file's name.
    """
    repo, commit = repo_at
    return Source(url=f"https://raw.githubusercontent.com/{repo}/{commit}/{path}", dest=dest or path.rsplit("/", 1)[-1],
                  sha256=sha256)


def github_tree(repo_at: tuple[str, str], files: tuple[tuple[str, str], ...], under: str = "") -> tuple[Source, ...]:
    """Files of one public GitHub repository at a fixed commit (:func:`github_file`), each kept at its repository
    path behind ``under`` (``dest = under + path``); ``files`` are ``(path, sha256)`` pairs, in download order."""
    return tuple(github_file(repo_at, path, dest=under + path, sha256=sha256) for path, sha256 in files)


# The repositories (at the commits the lab's copies were taken from) that public files are fetched from.
_IU_CSV_EXPORT = ("SaadSubhaniTheProgrammerVersion/Textual-Report-Generation-from-Chest-X-rays-Indiana-Dataset",
                  "6b316b7cd51c966d9259b334650fca458437507e")
_TORCHXRAYVISION = ("mlmed/torchxrayvision", "f4087a0b0d0cdc6a5877fb5456965b6d29adb1e5")
_REXRANK = ("rajpurkarlab/ReXrank", "8152f99919e4b1b2241bf6d485c51f17e59e8559")
_RADEVAL = ("jbdel/RadEval", "e0a39097e7788b6d0a229432add96c63ea60d62f")
_CRIMSON = ("rajpurkarlab/CRIMSON", "07e333152f2cb9c3429ec4d4eba12a1a7fce979e")
COVID_CXR_REPO = ("hida6/covid-chestxray-dataset", "584034aa7fbf06496741f11008d72fd791c8e443")
_NEGBIO = ("ncbi-nlp/NegBio", "073199e2792824740e89844a59c13d3d40ce4d23")
_CHEXPERT_LABELER = ("stanfordmlgroup/chexpert-labeler", "44ddeb363149aa657296237f18b5472a73c1756f")

#: The files of ``cxr_label_phrases`` as (path in the repository, sha256), in download order: NegBio's kept at
#: their repository path, the chexpert-labeler's under ``chexpert-labeler/``.
_NEGBIO_FILES = (
    ("negbio/chexpert/phrases/mention/airspace_opacity.txt",
     "b34537c30a35388ef313ca4053459fd675526b65531c153df4fb49013e9843e6"),
    ("negbio/chexpert/phrases/unmention/airspace_opacity.txt",
     "2ec2b6f95ae394f3c9fbdceca6bf4ea5d2273d16ee906c35171f44f4790d349f"),
    ("negbio/patterns/neg_patterns.txt", "df439f1072dfcf519d9b074739fc80fd76220707ef82c00c0930da067de1ec1c"),
    ("negbio/patterns/section_titles.txt", "97ce3ac896ba51c94978c43753e3f5399f758d9253db63e40b1f3a7fd1cd7607"),
    ("negbio/patterns/uncertainty_patterns.txt", "e5d7ab8f877025f5c670b3acbb6026ea17619adf139bceba143d630d4579fabd"),
)
_CHEXPERT_LABELER_FILES = (
    ("patterns/negation.txt", "ae6921e56116580a0c7960799ef468be9d659157748be10b82705c224f67657e"),
    ("patterns/post_negation_uncertainty.txt", "e96a3020ca0678fabadf648c17de30ed79baadccaf6eb3f3c63d7c09446e97d9"),
    ("patterns/pre_negation_uncertainty.txt", "50ea5fbab90e8f0ba266dec8c67065abd86b02277733f4bac4acae424557c5cd"),
    ("phrases/mention/atelectasis.txt", "8b3f6d2e35a0113211e6a07009c81285fe8e03d0a04ec2e3630d8921c155469a"),
    ("phrases/mention/cardiomegaly.txt", "6617db2e2b0453f4954248f695f182023f54d8a7caae874c9d034030c62b41b3"),
    ("phrases/mention/consolidation.txt", "ba5b4dfefc4ff02277385cd7766a83e350d7248e7f3e54805132dce889c0832e"),
    ("phrases/mention/edema.txt", "1a48c85d71f3bc68a49be949a4df64aaec41dc709d6179db22656a2397c8b71c"),
    ("phrases/mention/enlarged_cardiomediastinum.txt", "7cb10e12326b2cf9592edfe49ac833c747f847bf548d0c89155e03ec14f8bb7b"),
    ("phrases/mention/fracture.txt", "832b43dccfd46539e926d0a305138bafe5f08b9a21f89e3a8035401bbbbc2a94"),
    ("phrases/mention/lung_lesion.txt", "be930e05c34da0d9416f003210562c8d601c73f5b187011a5693bb519b8a0e79"),
    ("phrases/mention/lung_opacity.txt", "b34537c30a35388ef313ca4053459fd675526b65531c153df4fb49013e9843e6"),
    ("phrases/mention/no_finding.txt", "be9b32f7a2731dc220597e1a50b5d979e37109ecef77d36e9dc613a19cc1aecb"),
    ("phrases/mention/pleural_effusion.txt", "e3b74867eaf431d7e5a4861809adb625bcdb01b7fe548d3cff0d16c1198554b3"),
    ("phrases/mention/pleural_other.txt", "819be879d7ca9e941be377a1996faaefc0b2c33cc9d2392bc18a16ad6caabe4a"),
    ("phrases/mention/pneumonia.txt", "67b3c3b8eeac60490d5f4be01a37d8cf3f10f24e6f4f084ce46960e2952c4338"),
    ("phrases/mention/pneumothorax.txt", "0102b7b345e57141740f956bf1fcd388d7ea9a68222257d0c4226e9617e8265e"),
    ("phrases/mention/support_devices.txt", "c269d798f4ac82227d38ff6839df26e3bce1f5708c1c30e7ab719e92810aad0e"),
    ("phrases/unmention/lung_lesion.txt", "07df1cc93bb8788bc050299238de802a21812938374af3e5c6b06c32cd5c0421"),
    ("phrases/unmention/lung_opacity.txt", "bebcfe763e5ac862e8352b26a42e1c2da541cdf6a3edf9fed246a57210738b26"),
    ("phrases/unmention/pleural_effusion.txt", "ec73c6d93cd1f8c29f51a28453c218ef5ad90140e5baed15666e6dcbab55ba29"),
)


def _public_how(name: str, homepage: str) -> str:
    return (
        f"It is public: run `radaudit data fetch {name} --data-root <root>` to download it from {homepage}, "
        f"then point --data-root / -p data_root=... / {ENV_VAR} at <root>."
    )


DATASETS: Registry[DatasetSpec] = Registry("dataset")
register = DATASETS.register


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
    sources=(
        github_file(_IU_CSV_EXPORT, "indiana_reports.csv",
                    sha256="fd718e074451e93effedd868ca8995d2495e58e85878e08853f2dd35810f2149"),
        github_file(_IU_CSV_EXPORT, "indiana_projections.csv",
                    sha256="7af9c8a6b4f8ae695c654ecd4208edd193a37892a5607b7cb9e609dc997e6b7a"),
        # The Open-i collection file as torchxrayvision ships it at a fixed commit: the bytes are pinned by
        # the hash (Open-i itself serves https://openi.nlm.nih.gov/imgs/collections/NLMCXR_reports.tgz).
        github_file(_TORCHXRAYVISION, "torchxrayvision/data/NLMCXR_reports.tgz",
                    sha256="8fb6de7eec73d8c3665067ad4bb003ccd57f971ae316d2642e1627ac7268667a"),
    ),
    description=("3,851 de-identified reports (findings, impression, indication, MeSH/Problems) and 7,466 projections; "
                 "sex parsed from the indication."),
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
    sources=(
        github_file(_REXRANK, "data/iu_xray/ReXRank_IUXray_test.json",
                    sha256="4d30a534525e3d92acacaef329ad35a2429b8853b45ef9003e3034b9c9db8464"),
        github_file(_REXRANK, "data/iu_xray/ReXRank_IUXray_valid.json",
                    sha256="1f1810aefde816cbdfa1d06ce878311dc5b589ebb6ebd3cc2d1d9aed20892b7d"),
    ),
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
    sources=(
        github_file(_REXRANK, "data/chexpert_plus/ReXRank_CheXpertPlus.json",
                    sha256="dbfce88f69a646d1e21c77b46545bd948bce4101cec8b209d1883ee104a3fef3"),
    ),
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
    sources=(
        github_file(_REXRANK, "data/chexpert_plus/ReXRank_CheXpertPlus.json",
                    sha256="dbfce88f69a646d1e21c77b46545bd948bce4101cec8b209d1883ee104a3fef3"),
        github_file(_RADEVAL, "tests/utterances/refs_chexpert_impression.txt",
                    dest="radeval_refs_chexpert_impression.txt",
                    sha256="14f00117c20dcb9234e9299ca3c11ed64c028a6b4e1494e29a7125c470d0f194"),
        github_file(_RADEVAL, "tests/utterances/preds_chexpert_impression.txt",
                    dest="radeval_preds_chexpert_impression.txt",
                    sha256="96debf14b5112f7075af24d144d7b4e18f0e124599ccd10f789a076e187efadb"),
    ),
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
    sources=(
        github_file(_CRIMSON, "RadPref/preference_data.json",
                    sha256="8e7d74ca1c2d5082b39ee0f9ccfcfd7c0ba7b8363378538152504ae6d7790841"),
        github_file(_CRIMSON, "sample_data.csv",
                    dest="crimson_sample_data.csv",
                    sha256="2b9fa43815821944e45ead8dcd8022c57b45585661679d144ab7f0de7962a21c"),
    ),
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
    required=("preference_data.json", "radiologist_annotations/user_1.json", "radiologist_annotations/user_2.json",
              "radiologist_annotations/user_3.json"),
    how_to_get=_public_how("radpref_annotations", "the CRIMSON repository"),
    sources=(
        github_file(_CRIMSON, "RadPref/preference_data.json",
                    sha256="8e7d74ca1c2d5082b39ee0f9ccfcfd7c0ba7b8363378538152504ae6d7790841"),
        github_file(_CRIMSON, "RadPref/radiologist_annotations/user_1.json",
                    dest="radiologist_annotations/user_1.json",
                    sha256="b3f65de868c9124db880d238bb74bf3dd302b3af6be3cb980c402d8cfb5fd481"),
        github_file(_CRIMSON, "RadPref/radiologist_annotations/user_2.json",
                    dest="radiologist_annotations/user_2.json",
                    sha256="89ca347cccd9fd0b27e7cfc6da2025f49ec0337e44c5b27b46606ed49d3a23b6"),
        github_file(_CRIMSON, "RadPref/radiologist_annotations/user_3.json",
                    dest="radiologist_annotations/user_3.json",
                    sha256="9fa291d8f1c75606ec0b4bc17c4484468baef3cd48157bda4d0f789e9540ffc5"),
    ),
    description=("3 cardiothoracic radiologists x 100 cases x 2 candidates: false/missing/attribute errors by clinical "
                 "significance and a 1-5 rating."),
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
    sources=(
        github_file(COVID_CXR_REPO, "metadata.csv",
                    sha256="e46ffab4cdeb4866491d32afe466baefd7acbcf268a75c260f81d8520b8664a0"),
        github_file(COVID_CXR_REPO, "SCHEMA.md", sha256="9c3cc8d4ef4313e8d8588dd642e17812c1264361374708f2e3cc49fabade1c25"),
        github_file(COVID_CXR_REPO, "annotations/covid-severity-scores.csv",
                    sha256="a26f308bc405845cebd28cdc72caa21deb734d239c0aff4e487c26949b6d86d7"),
    ),
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
    sources=(*github_tree(_NEGBIO, _NEGBIO_FILES),
             *github_tree(_CHEXPERT_LABELER, _CHEXPERT_LABELER_FILES, under="chexpert-labeler/")),
    description="Mention/unmention phrases for 14 observations; negation and uncertainty patterns.",
))

_CRED = (
    "It is {access}, not public: {how} Then either put it under <data root>/{folder}, or point at its folder with "
    "`-p dataset_paths.{name}=PATH` (in Python: `load_dataset({name!r}, path=PATH)`)."
)

register(DatasetSpec(
    name="mimic_cxr",
    folder="mimic-cxr",
    title="MIMIC-CXR (reports, metadata, CheXpert labels, JPGs) + MIMIC-IV patients",
    kind="reports",
    access="credentialed",
    homepage=("https://physionet.org/content/mimic-cxr-jpg/2.1.0/ and https://physionet.org/content/mimic-cxr/2.1.0/ "
              "(PhysioNet credentialed access)"),
    license="PhysioNet Credentialed Health Data License 1.5.0",
    loader="radaudit.data.mimic_cxr:load",
    required=("mimic-cxr-2.0.0-metadata.csv.gz",),
    how_to_get=_CRED.format(
        how="sign the PhysioNet DUA, then download MIMIC-CXR-JPG 2.0.0/2.1.0 "
        "(https://physionet.org/content/mimic-cxr-jpg/): mimic-cxr-2.0.0-metadata.csv.gz, -chexpert.csv.gz, "
        "-split.csv.gz (optionally -negbio.csv.gz) at the top of the folder and the JPGs under files/; unzip the "
        "MIMIC-CXR reports (mimic-cxr-reports.zip from https://physionet.org/content/mimic-cxr/) so that "
        "files/pXX/p<subject>/s<study>.txt sits in the same files/ tree (or pass reports_dir=); and put MIMIC-IV "
        "hosp/patients.csv.gz (https://physionet.org/content/mimiciv/) in the folder, at <folder>/../mimic-iv/hosp/, "
        "or pass patients_path= (without it sex and age are missing).",
        folder="mimic-cxr", name="mimic_cxr", access="credentialed"),
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
    required=("metadata/test_metadata.csv",),
    how_to_get=_CRED.format(
        how="accept the terms of rajpurkarlab/ReXGradient-160K on the Hugging Face Hub, then download its metadata "
        "folder (`huggingface-cli download rajpurkarlab/ReXGradient-160K --repo-type dataset --include 'metadata/*' "
        "--local-dir <data root>/rexgradient-160k`; <split>_metadata.csv and <split>_metadata_view_position.json), "
        "or let radaudit do it once with `radaudit.data.rexgradient.load(<data root>/rexgradient-160k, "
        "hub_id='rajpurkarlab/ReXGradient-160K')` (needs `pip install 'radaudit[hub]'`, network and a Hub token). "
        "Unpack the deid_png.part* archives next to metadata/ if you need the images.",
        folder="rexgradient-160k", name="rexgradient", access="gated"),
    description="Gated: 160k chest X-ray studies from 3 US health systems with reports and demographics.",
))
register(DatasetSpec(
    name="chexpert_plus",
    folder="chexpert-plus",
    title="CheXpert Plus (full report CSV)",
    kind="reports",
    access="credentialed",
    homepage=("https://stanfordaimi.azurewebsites.net/datasets/5158c524-d3ab-4e02-96e9-6ee9efc110a1 "
              "(Stanford AIMI research-use agreement)"),
    license="Stanford University School of Medicine CheXpert Plus Dataset Research Use Agreement",
    loader="radaudit.data.chexpert_plus:load",
    required=("df_chexpert_plus_240401.csv",),
    how_to_get=_CRED.format(
        how="accept the Stanford AIMI research-use agreement and download df_chexpert_plus_240401.csv "
        "(optionally the CheXbert labels report_fixed.json / findings_fixed.json / impression_fixed.json, in the folder "
        "or its chexbert_labels/ subfolder, and the PNG images, unpacked so that train/ and valid/ sit in the folder).",
        folder="chexpert-plus", name="chexpert_plus", access="credentialed"),
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
        how="sign the PhysioNet DUA and download the ReXVal dataset's two CSVs, 50_samples_gt_and_candidates.csv "
        "and 6_valid_raters_per_rater_error_categories.csv, from https://physionet.org/content/rexval-dataset/1.0.0/.",
        folder="rexval", name="rexval", access="credentialed"),
    description=("Credentialed: 50 studies x 4 candidate reports x 6 radiologists, error counts by category and "
                 "significance."),
))


def get_spec(name: str) -> DatasetSpec:
    """The registry entry for ``name``; an unknown name raises a ``ParamsError`` listing the known ones."""
    return DATASETS.lookup(name)


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


def chexpert_phrases_dir(data_root: str | os.PathLike | None = None) -> Path:
    """The chexpert-labeler ``phrases`` folder of dataset ``cxr_label_phrases`` under the data root
    (what :class:`radaudit.text.labeler.ChexpertLabeler` reads); raises :class:`DatasetNotFoundError`
    saying how to fetch it when it is missing."""
    return require("cxr_label_phrases", data_root) / "chexpert-labeler" / "phrases"

def load_dataset(name: str, data_root: str | os.PathLike | None = None, *, path: str | os.PathLike | None = None,
                 **kwargs) -> pd.DataFrame:
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


def required_files(name: str, data_root: str | os.PathLike | None = None,
                   path: str | os.PathLike | None = None) -> tuple[Path, list[Path]]:
    """The dataset's folder and every file its ``required`` entries name, in a fixed order.

    A required folder stands for every file under it. The order (required entries sorted, then the files under each
    sorted) is the one :func:`fingerprint` hashes in, so callers that only need the files' sizes or times (a
    per-process cache keyed on the data version) see the same files the fingerprint does.
    """
    spec = get_spec(name)
    folder = require(name, data_root, path)
    files: list[Path] = []
    for rel in sorted(spec.required):
        p = folder / rel
        files.extend(sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p])
    return folder, files


def fingerprint(name: str, data_root: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> str:
    """SHA-256 (first 16 hex digits) over the dataset's required files, names and bytes.

    It identifies the data version a run read: two runs with the same fingerprint read the same
    files. Images and other bulk files are not hashed (only the ``required`` metadata/report files,
    :func:`required_files`).
    """
    import hashlib

    folder, files = required_files(name, data_root, path)
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(folder)).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


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
