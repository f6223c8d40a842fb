"""Parameters of modality_shift (schema of ``params/modality_shift/*.yaml``): :class:`Params` and its
:class:`ModelSpec` entries."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from radaudit.audits.modality_shift.conditions import ALL_CONDITIONS, CONDITIONS, SAME_LABEL_CONDITIONS, get_template
from radaudit.audits.modality_shift.models import DEMO_MODEL, vllm_unservable
from radaudit.config import BaseParams, Requirement, check_unique_names
from radaudit.errors import ParamsError
from radaudit.models.backends import backend_param


class ModelSpec(BaseModel):
    """One VLM to audit."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="Short name used in tables and figures (e.g. 'Qwen2-VL-7B').")
    model: str = Field(..., description="'demo' (the stand-in trained here) | hub id | local folder | pypi:<dist>/<path>.")
    dtype: str | None = Field(None, description="null (float32) | fp16 | bf16 (paper: fp16).")
    batch_size: int = Field(8, ge=1, description="Items per generation batch.")
    model_type: str | None = Field(None, description="Key of the template's model_suffixes (e.g. 'mllama' adds the anchor's "
                                                     "Llama-3.2 instruction).")
    trust_remote_code: bool = Field(False, description="Passed to from_pretrained (some medical VLMs need it).")
    device: str | None = Field(None, description="null = cuda if available, else cpu.")
    image_processor: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of the checkpoint's image-processor settings (e.g. Qwen2-VL max_pixels: its hub config "
                    "allows 12.8 MP per image).",
    )


class Params(BaseParams):
    """Parameters of the modality_shift experiment (``params/modality_shift/*.yaml``)."""

    dataset: Literal["covid_cxr", "mimic_cxr", "fairvlmed"] = Field(
        "covid_cxr", description="covid_cxr (demo; public), mimic_cxr or fairvlmed (paper; credentialed, by local path).",
    )
    dataset_path: str | None = Field(None, description="Folder of the dataset (default: under the data root).")
    dataset_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra options of the sample builder: mimic_cxr images_dir, patients_path, reports_dir, race_path, "
                    "text_column; fairvlmed notes (note | gpt4_summary), image_cache.",
    )
    max_note_words: int | None = Field(
        None, ge=1,
        description="Keep the first this many words of each sample's notes, marked ' [...]' where cut (null: whole "
                    "notes, as in the paper). The demo cuts covid-chestxray's case descriptions at 80 words so its "
                    "stand-in VLM trains on short prompts; every model and probe of the run reads the same cut notes.",
    )
    eval_split: str = Field("test", description="Split evaluated (paper: the published test sets; demo: "
                                                "the held-out patients).")
    n_samples: int | None = Field(None, ge=2, description="Evaluate at most this many samples of eval_split, "
                                                          "drawn with split_seed (paper: 10000 for MIMIC-CXR, "
                                                          "all 2000 for FairVLMed; null = all).")
    test_size: float = Field(0.3, gt=0, lt=1, description="covid_cxr only: share of patients held out for evaluation "
                                                          "(the rest trains the demo VLM).")
    split_seed: int = Field(0, description="Seed of the covid_cxr patient split and of the n_samples draw.")
    swap_seed: int = Field(0, description="Seed of the swap partners (each sample's opposite-label image and text donors).")
    same_partner: bool = Field(False, description="One partner gives both the swapped image and the swapped text "
                                                  "(default: drawn independently).")
    exclude_same_patient: bool = Field(True, description="Never take a swap partner from the sample's own patient.")
    swap_metadata: bool = Field(True, description="Text shift shows the partner's metadata header with its text "
                                                  "(the anchor swaps the whole row); false swaps only the notes/report.")
    conditions: list[str] = Field(
        default_factory=lambda: [*CONDITIONS, *SAME_LABEL_CONDITIONS],
        description="Conditions to run: no_shift, image_shift, text_shift, only_text, only_image, no_input (neither image "
                    "nor text: one constant prompt, descriptive); no_shift is needed for NFR. same_label_image_shift, "
                    "same_label_text_shift: the swaps' negative controls (another patient's image / text with the same "
                    "label; text_shift_nfr rests on them). marked_no_shift, marked_image_shift, marked_only_image, "
                    "marked_same_label_image_shift: the image pathway's controls on the image with the label burned in "
                    "(only for a model trained on marked images, the demo stand-in).",
    )
    prompt: dict[str, Any] = Field(
        default_factory=dict,
        description="Prompt template keys (header, question, question_only_text, question_only_image, instruction, "
                    "unmatched_suffix, yes_patterns, no_patterns, ...) over the built-in template of `dataset` "
                    "(radaudit.audits.modality_shift.conditions.PROMPTS).",
    )
    unmatched: bool = Field(False, description="Append the anchor's 'unmatched' option to the image+text prompts "
                                               "(answers 'unmatched' are counted, never dropped).")
    models: list[ModelSpec] = Field(
        default_factory=lambda: [ModelSpec(name="demo tiny LLaVA", model=DEMO_MODEL)],
        description="VLMs to audit (paper: Qwen2-VL-7B-Instruct, LLaVA-1.5-7B, Llama-3.2-11B-Vision-Instruct, "
                    "MedGemma-4B-it, LLaVA-Med).",
    )
    demo_vlm: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of the demo VLM's training config (modality_shift.models.DEMO_VLM_CONFIG: "
                    "steps, image_size, ...).",
    )
    max_new_tokens: int = Field(32, ge=1, description="Greedy answer length limit (anchor: 128).")
    candidates: list[str] = Field(
        default_factory=lambda: ["Yes", "No", "yes", "no"],
        description="First-token answer words whose raw logits are kept.",
    )
    pair: Literal["both", "capitalised", "lower"] = Field(
        "both",
        description="Pair-softmax used as P(yes): both casings together (default) "
                    "or the anchor's [Yes, No] ('capitalised').",
    )
    unknown_policy: Literal["wrong", "drop"] = Field(
        "wrong",
        description="How unknown answers enter accuracy/F1/NFR: as wrong predictions (default; nothing hidden) or dropped "
                    "(the anchor) — either way their rate is reported.",
    )
    n_bins: int = Field(10, ge=2, description="Uniform bins of the ECE and the reliability diagrams (paper: 10).")
    attention_samples: int = Field(1, ge=0, description="Test samples whose attention is traced (Fig. 4, attention by "
                                                        "modality per layer, and the heatmap over the image patches per "
                                                        "condition); 0 = skip.")
    attention_max_new_tokens: int = Field(4, ge=1, description="Generated tokens traced in the attention figure.")
    image_probe: bool = Field(True, description="Fit the pixel probe (logistic regression on the training images' pixels): "
                                                "how much of the label the images carry, beside the only_image "
                                                "positive control.")
    image_probe_size: int = Field(32, ge=4, description="Side (pixels) of the grayscale images the pixel probe reads.")
    text_probe: bool = Field(True, description="Fit the text probe (TF-IDF logistic regression on the training patients' "
                                               "Only Text prompts): how much of the label the text carries, beside the "
                                               "pixel probe; text_shift_nfr is read against both.")
    image_probe_max_train: int | None = Field(
        None, ge=4,
        description="At most this many training images for the pixel probe (null = all; the smoke preset caps it).",
    )
    marker_samples: int = Field(30, ge=0, description="Evaluated samples whose gradient map is measured on the marker "
                                                      "(Only Image, marked vs natural): the positive control of the "
                                                      "heatmap; 0 = skip. Runs only with the marked conditions.")
    cache: bool = Field(True, description="Cache generations and scores (content-addressed): an interrupted run resumes.")
    backend: Literal["hf", "vllm"] = Field(
        "hf",
        description="Engine of the VLM answers and first-token scores: hf (transformers; CPU or GPU) or vllm "
                    "(a GPU and `pip install vllm`; a model vLLM serves, not the demo stand-in). Same prompts, images, "
                    "cache keys and tables either way, so a run can switch engine and resume ('transformers' is read as hf; "
                    "--rehearse runs vllm as hf on CPU). Attention and gradient maps (Fig. 4, the heatmaps, the marker "
                    "control) always run on transformers: with vllm the notebook loads the transformers model for them too "
                    "(attention_samples: 0 and marker_samples: 0 skip them).",
    )

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if c not in ALL_CONDITIONS]
        if bad:
            raise ValueError(f"unknown condition(s) {bad}; use any of {list(ALL_CONDITIONS)}")
        if "no_shift" not in v:
            raise ValueError("conditions must include no_shift (the base of every NFR)")
        return v

    @field_validator("models")
    @classmethod
    def _unique_names(cls, v: list[ModelSpec]) -> list[ModelSpec]:
        check_unique_names([m.name for m in v], "models")
        return v

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> str:
        return backend_param(v)  # 'transformers' -> 'hf'; unknown names say what to write

    @model_validator(mode="after")
    def _vllm_serves_the_models(self) -> Params:
        if self.backend == "vllm":
            why = [f"{m.name!r}: {reason}" for m in self.models if (reason := vllm_unservable(m.model))]
            if why:
                raise ValueError("backend vllm cannot serve " + "; ".join(why) + ". Run these with backend: hf, or "
                                 "list models vLLM serves (hub ids or folders of architectures vLLM supports).")
        return self

    def preflight(self) -> None:
        if any(m.model == DEMO_MODEL for m in self.models) and self.dataset != "covid_cxr":
            raise ParamsError("The demo VLM is trained on covid_cxr; with dataset="
                              f"{self.dataset!r} list real models (hub id or folder) in `models`.")
        get_template(self.dataset, self.prompt)  # a bad template fails before any model loads
        if self.image_probe and self.dataset != "covid_cxr":
            raise ParamsError(f"image_probe needs the training patients' images, which dataset={self.dataset!r} does "
                              "not load (only eval_split): set image_probe: false (the probe is the demo's ceiling "
                              "for its positive control).")
        if self.text_probe and self.dataset != "covid_cxr":
            raise ParamsError(f"text_probe needs the training patients' texts, which dataset={self.dataset!r} does "
                              "not load (only eval_split): set text_probe: false (text_shift_nfr then says that it "
                              "could not weigh the two modalities).")

    def requirements(self) -> list[Requirement]:
        """The dataset folder and options (credentialed data by local path) and every model of ``models``."""
        out: list[Requirement] = []
        if self.dataset != "covid_cxr":
            out.append(Requirement("data", "dataset_path", self.dataset_path,
                                   note=f"the {self.dataset} folder (credentialed; by local path)"))
            wanted = {"mimic_cxr": ("images_dir", "patients_path", "race_path"), "fairvlmed": ()}[self.dataset]
            for key in wanted:
                out.append(Requirement("data", f"dataset_options.{key}", self.dataset_options.get(key),
                                       optional=key == "race_path",
                                       note={"images_dir": "MIMIC-CXR-JPG images",
                                             "patients_path": "MIMIC-IV patients.csv.gz (age, sex)",
                                             "race_path": "MIMIC-IV admissions.csv.gz (race; subgroup tables only)"}[key]))
        for i, spec in enumerate(self.models):
            out.append(Requirement("model", f"models[{i}].model ({spec.name})", spec.model, dtype=spec.dtype,
                                   batch_size=spec.batch_size))
        return out
