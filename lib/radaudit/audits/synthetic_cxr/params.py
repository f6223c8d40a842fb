"""Parameters of synthetic_cxr (schema of ``params/synthetic_cxr/*.yaml``): :class:`Params`, its
:class:`GeneratorEntry` and :class:`ReportUtility` blocks, and the defaults they read (splits, dose levels)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from radaudit.audits.synthetic_cxr.generators import GENERATORS
from radaudit.audits.synthetic_cxr.reports import expand_metrics
from radaudit.config import BaseParams, Requirement, check_unique_names
from radaudit.data.covid_cxr import DEMO_LABELS
from radaudit.errors import ParamsError
from radaudit.models.diffusion import RADEDIT_TEXT_ENCODER, RADEDIT_VAE

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
                    "...; covid_cxr: patients = merged (ids sharing a picture are one patient, the default) or "
                    "as_listed).",
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
    privacy_prompts: int = Field(
        100, ge=1,
        description="Training prompts audited for privacy, drawn from the audit half of the training patients (paper: "
                    "2000); as many null prompts are drawn from the other half to calibrate the re-ID threshold. The demo's "
                    "100 (of 153 audit-half images) let a clean held-out control clear its bar (<= 0.1) with its whole "
                    "Wilson CI with up to 4 prompts flagged.",
    )
    privacy_seeds: int = Field(5, ge=1, description="Synthetic images per audited prompt, one seed each (paper: 10).")
    delta: float = Field(0.85, gt=0, lt=1, description="Re-identification threshold δ of the Table 3 count (paper: 0.85).")
    reid_fpr: float = Field(
        0.01, gt=0, lt=0.5,
        description="False-positive rate of the calibrated re-ID threshold: the share of null prompts (training images of "
                    "the calibration half of the patients, each with privacy_seeds label/view-matched test images of OTHER "
                    "patients) whose max re-ID over seeds exceeds it — the statistic the audit applies it, on the other "
                    "half.",
    )
    reid_null_rounds: int = Field(
        5, ge=1,
        description="Null prompts per calibration-half training image for the re-ID threshold (each = privacy_seeds "
                    "images of other patients from the test split).",
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
        description="Classifier settings (synthetic_cxr.classifier.train_classifier: epochs, batch_size, lr, architecture, "
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
        check_unique_names([g.name for g in v], "generators")
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
