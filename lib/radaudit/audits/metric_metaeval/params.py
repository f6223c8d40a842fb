"""Parameters of metric_metaeval (schema of ``params/metric_metaeval/*.yaml``)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field, field_validator

from radaudit.config import BaseParams, Requirement
from radaudit.metrics import METRICS
from radaudit.models.backends import backend_param

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the metric meta-evaluation (``params/metric_metaeval/*.yaml``)."""

    datasets: list[str] = Field(
        default_factory=lambda: ["iu_xray", "chexpert_plus_valid"],
        description="Datasets whose reports become GT reports "
                    "(paper: MIMIC-CXR + ReXVal; demo: public IU X-ray + CheXpert Plus).",
    )
    dataset_paths: dict[str, str] = Field(
        default_factory=dict,
        description="Folder per dataset for credentialed sets kept outside the data root "
                    "(e.g. {mimic_cxr: /data/mimic-cxr}).",
    )
    text_field: Literal["findings_or_impression", "findings", "impression", "report"] = Field(
        "findings_or_impression", description="Which report text becomes the GT (the paper uses findings).",
    )
    engine: Literal["rules", "llm"] = Field(
        "rules",
        description="Rewriting engine: 'rules' (deterministic, seeded, CPU) or 'llm' (the paper's protocol with llm_model).",
    )
    n_per_cell: int = Field(10, ge=1, description="Pairs per Table 2 cell (paper: 10 -> 400 pairs).")
    context: Literal["paper", "full"] = Field(
        "paper",
        description="'paper': insignificant pairs cut to the edited sentences (§4.2.1); "
                    "'full': whole reports for every pair.",
    )
    n_monotonicity_reports: int = Field(4, ge=1, description="GT reports rewritten at all five severity groups (paper: 4).")
    monotonicity_min_sentences: int = Field(
        4, ge=1, description="Sentences a GT report needs to be used in the monotonicity set.",
    )
    metrics: list[str] | None = Field(None, description="Registry names of the metrics to evaluate; null = every "
                                                        "registered metric (those that cannot run here are skipped and "
                                                        "listed with the reason).")
    metric_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Build options per metric, e.g. {bertscore: {model: roberta-large}}.",
    )
    llm_model: str = Field(
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        description="Rewriting LLM for engine=llm (hub id | local folder | pypi: spec); paper: DeepSeek-R1 7B.",
    )
    llm_strategy: dict[str, Any] = Field(
        default_factory=lambda: {"name": "r1_recommended", "do_sample": True, "temperature": 0.6, "top_p": 0.95},
        description="Decoding of the rewriting LLM (paper: 'standard decoding settings'; DeepSeek's R1 recommendation).",
    )
    llm_max_new_tokens: int = Field(4096, ge=1, description="Generation limit of the rewriting LLM (room for the "
                                                            "R1 reasoning trace).")
    llm_prompt_template: str | None = Field(
        None,
        description="Rewrite prompt template (fields: aspect, aspect_label, aspect_definition, error_type, "
                    "error_type_definition, significance, significance_definition, example_gt, example_me, report); "
                    "null = radaudit.perturb.llm.DEFAULT_TEMPLATE.",
    )
    llm_batch_size: int = Field(4, ge=1, description="Prompts per generation batch.")
    llm_dtype: str | None = Field(None, description="dtype of the rewriting LLM: null (float32) | bf16 | fp16.")
    backend: Literal["hf", "vllm"] = Field(
        "hf",
        description="Generation engine of the rewriting LLM (engine=llm): hf (transformers; CPU or GPU) or vllm "
                    "(a GPU and `pip install vllm`). Same prompts, cache keys and tables either way, so a run can switch "
                    "engine and resume ('transformers' is read as hf; --rehearse runs vllm as hf on CPU).",
    )
    llm_max_tasks_per_cell: int | None = Field(
        None, ge=1, description="Cap on GT reports tried per cell with the LLM engine (null = until the cell is full).",
    )
    context_ablation: bool = Field(True, description="With context='paper', also score the same rewrites kept whole "
                                                     "and compare the AUROC (how much the paper's context design "
                                                     "decides the verdict).")
    agreement: bool = Field(True, description="Compute the Table 1 analog on RadPref's three radiologists.")
    cache: bool = Field(True, description="Keep the per-pair scores of the lexical and rule-based metrics on disk "
                                          "(radaudit.metrics.score_memo): a rerun on the same pairs reads them back.")
    rexval_path: str | None = Field(None, description="Folder of the ReXVal files (credentialed): reproduces the paper's "
                                                      "Table 1; null = skip.")
    cell_average: Literal["rules", "pairs"] = Field(
        "rules",
        description="How a Table 4/5 cell averages its pairs: 'rules' (mean over its rewriting rules of each rule's mean; "
                    "each kind of edit weighs the same) or 'pairs' (the paper's mean over pairs).",
    )
    overall_ci: Literal["paper", "bootstrap"] = Field(
        "bootstrap",
        description="CI of Tables 4/5's Overall: 'paper' (mean ± 1.96·SD/√k over the k column means, the paper's) or "
                    "'bootstrap' (percentile bootstrap over pairs).",
    )
    n_reviewers: int = Field(2, ge=1, description="Reviewer column blocks in the exported review sheet "
                                                  "(tables/review_sheet.csv).")
    review_sheet: str | None = Field(None, description="A filled review sheet (CSV exported by an earlier run) to read "
                                                       "back: agreement between reviewers and the rules; null = none yet.")
    fdr_alpha: float = Field(0.05, gt=0, lt=1, description="Benjamini–Hochberg level for every table with p-values.")
    n_examples: int = Field(1, ge=0, description="Example pairs shown per aspect and significance in the notebook.")

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> str:
        return backend_param(v)  # 'transformers' -> 'hf'; unknown names say what to write

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v

        if not v:
            raise ValueError("metrics is empty; give registry names or null for every registered metric")
        bad = [m for m in v if m not in METRICS]
        if bad:
            raise ValueError(f"unknown metrics {bad}; registered: {', '.join(METRICS)}")
        return v

    def requirements(self) -> list[Requirement]:
        """Credentialed dataset folders, the rewriting LLM (engine=llm), metric backbones and ReXVal."""
        out = [Requirement("data", f"dataset_paths.{name}", self.dataset_paths.get(name),
                           note=f"the {name} folder (credentialed; by local path)")
               for name in self.datasets if name in ("mimic_cxr", "chexpert_plus", "rexgradient")]
        if self.engine == "llm":
            out.append(Requirement("model", "llm_model", self.llm_model, dtype=self.llm_dtype,
                                   batch_size=self.llm_batch_size))
        for metric, options in sorted(self.metric_options.items()):
            if isinstance(options, dict) and options.get("model"):
                out.append(Requirement("model", f"metric_options.{metric}.model", options["model"]))
        out.append(Requirement("data", "rexval_path", self.rexval_path, optional=True,
                               note="ReXVal (credentialed): the paper's Table 1; skipped when not set"))
        return out
