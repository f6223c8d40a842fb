"""Parameters of atomic_facts (schema of ``params/atomic_facts/*.yaml``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from radaudit.config import BaseParams, Requirement
from radaudit.errors import ParamsError
from radaudit.metrics import list_metrics
from radaudit.models.backends import engine_name

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# parameters


class Params(BaseParams):
    """Parameters of the atomic_facts experiment (``params/atomic_facts/*.yaml``)."""

    dataset: Literal["radpref", "rexval"] = Field(
        "radpref",
        description="Reader study: radpref (public; 100 cases x 2 candidates x 3 radiologists) or rexval (credentialed "
                    "PhysioNet; 50 studies x 4 candidates x 6 radiologists).",
    )
    dataset_path: str | None = Field(
        None,
        description="Folder of the dataset (default: under the data root); for rexval the folder holding "
                    "50_samples_gt_and_candidates.csv.",
    )
    max_cases: int | None = Field(
        None, ge=4,
        description="Use only the first N cases (null = all; the smoke preset uses a few).",
    )
    backend: Literal["rule", "llm"] = Field(
        "rule",
        description="AtomiMed backend: rule (text toolkit; deterministic, offline) or llm (llm_model; paper: "
                    "Qwen3-235B-A22B, temperature 0) on the engine llm_engine. The one-param spelling hf | vllm means llm "
                    "on that engine (backend: vllm = backend: llm + llm_engine: vllm; it sets llm_engine) and is stored "
                    "that way ('transformers' reads as hf).",
    )
    theta: float = Field(
        0.8, ge=0, le=1,
        description="Fuzzy name-similarity threshold θ for aligning findings (paper: 0.8). It acts on an LLM's free-text "
                    "finding names; with the rule backend every name comes from one canonical vocabulary and two different "
                    "canonical names are never merged, so θ has no effect there.",
    )
    scorer: Literal["ratio", "token_set_ratio", "token_sort_ratio", "partial_ratio"] = Field(
        "ratio",
        description="rapidfuzz scorer behind the name similarity.",
    )
    weight: float = Field(0.5, ge=0, le=1, description="Weight of the disease level in Eq. 4 (paper: equal weights, 0.5).")
    unmentioned: Literal["no", "mismatch"] = Field(
        "no",
        description="A disease question the other report does not address reads as 'no' (default) or as a mismatch.",
    )
    uncertain: Literal["yes", "no", "drop"] = Field(
        "yes",
        description="Rule backend: a hedged finding ('possible pneumonia') is read as present (yes), absent (no) or "
                    "dropped.",
    )
    llm_model: str | None = Field(
        None,
        description="Instruct model for backend=llm (hub id | local folder | pypi:...), e.g. Qwen/Qwen3-235B-A22B.",
    )
    llm_engine: Literal["transformers", "vllm"] = Field(
        "transformers",
        description="Generation engine of the model layer for llm_model: transformers (alias hf) or vllm (paper; a GPU and "
                    "`pip install vllm`). Both get the same prompts and share cache entries. The longer spelling of "
                    "backend: hf | vllm.",
    )
    llm_dtype: str | None = Field(
        None,
        description="dtype of llm_model: null (float32, on either engine) | bf16 | fp16 (paper: bf16).",
    )
    llm_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra keyword arguments for the generation backend (e.g. tensor_parallel_size for vLLM).",
    )
    llm_max_new_tokens: int = Field(1024, ge=16, description="Token limit of each JSON answer.")
    llm_batch_size: int = Field(8, ge=1, description="Prompts per generation batch.")
    max_retries: int = Field(
        2, ge=0,
        description="Re-asks after an unparseable JSON answer (then it is counted, never dropped).",
    )
    decompose_prompt: str | None = Field(
        None,
        description="Decomposition prompt template with {report}; null = radaudit.atomic.DEFAULT_DECOMPOSE_PROMPT.",
    )
    disease_prompt: str | None = Field(
        None,
        description="Disease-level reader prompt with {report} and {questions}; null = "
                    "radaudit.atomic.DEFAULT_DISEASE_READER_PROMPT.",
    )
    attribute_prompt: str | None = Field(
        None,
        description="Attribute-level reader prompt with {report} and {questions}; null = "
                    "radaudit.atomic.DEFAULT_ATTRIBUTE_READER_PROMPT.",
    )
    baselines: list[str] = Field(
        default_factory=lambda: ["all"],
        description="Registry metrics compared with AtomiMed; 'all' = every registered metric. Ones that cannot run here "
                    "are skipped with the reason recorded.",
    )
    headline: list[str] = Field(
        default_factory=lambda: ["bleu4", "bertscore", "chexpert_f1_micro_all14"],
        description="Baselines named in the plain-words summary (BLEU, BERTScore, label F1).",
    )
    text_encoder: str | None = Field(
        None,
        description="Encoder for BERTScore / embedding similarity (model spec); null = the all-MiniLM-L6-v2 shipped on "
                    "PyPI.",
    )
    preference_from: Literal["rating", "total_errors", "significant_errors"] = Field(
        "rating",
        description="What makes a radiologist prefer a candidate: the higher 1-5 rating, or fewer errors (rexval has no "
                    "ratings: errors are used).",
    )
    tie_tolerance: float = Field(
        1e-9, ge=0,
        description="Two metric scores closer than this are a tie in the preference analysis.",
    )
    present_only: bool = Field(
        True,
        description="Granular analysis: count only findings asserted present (pertinent negatives excluded).",
    )
    min_questions: int = Field(5, ge=1, description="Granular heatmaps leave a cell blank below this many questions.")
    cache: bool = Field(True, description="Keep the lexical and rule-based baselines' per-pair scores on disk "
                                          "(radaudit.metrics.score_memo): a rerun on the same reports reads them back.")
    strategy_generations: str | None = Field(
        None,
        description="Optional table (CSV/Parquet/JSONL) of decoding_erasure generations with columns strategy, reference, "
                    "prediction: its strategies join the granular heatmaps. null = off.",
    )
    max_strategy_reports: int | None = Field(
        None, ge=1,
        description="Use only the first N reports per strategy of strategy_generations (null = all).",
    )
    trace_case: int = Field(0, ge=0, description="Position of the case whose audit trace the notebook prints.")

    @model_validator(mode="before")
    @classmethod
    def _engine_as_backend(cls, data: Any) -> Any:
        """The one normalisation of the engine spellings: ``backend: hf | vllm`` (``transformers``/``huggingface``
        read as hf) becomes ``backend: llm`` with ``llm_engine`` set to that engine, and it overrides the
        ``llm_engine`` a preset may hold (the shorter spelling is the more specific one); ``llm_engine: hf`` is
        ``transformers``. Everything downstream sees ``backend`` in {rule, llm} and ``llm_engine`` in
        {transformers, vllm}."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in ("backend", "llm_engine"):
            if isinstance(data.get(key), str):
                value = data[key].strip().lower()
                try:
                    data[key] = engine_name(value)  # transformers | vllm
                except ParamsError:
                    data[key] = value  # rule, llm, or a bad value the field check reports
        if data.get("backend") in ("transformers", "vllm"):
            data["llm_engine"], data["backend"] = data["backend"], "llm"
        return data

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> Any:
        if v in ("transformers", "vllm", "hf"):  # only an assignment to an existing Params gets here
            raise ValueError(f"backend={v!r} is read when params are built (Params(backend=...), -p backend=...); on "
                             "an existing Params set backend='llm' and llm_engine instead")
        if v not in ("rule", "llm"):
            raise ValueError(f"backend must be rule, llm, or hf | vllm (= llm on that engine); got {v!r}")
        return v

    @field_validator("baselines", "headline")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        known = set(list_metrics()["name"])
        bad = [m for m in v if m != "all" and m not in known]
        if bad:
            raise ValueError(f"unknown metric(s) {bad}; registered: {sorted(known)} (or 'all')")
        return v

    def preflight(self) -> None:
        if self.backend == "llm" and not self.llm_model:
            raise ParamsError("backend=llm (or hf | vllm) needs llm_model (e.g. -p llm_model=Qwen/Qwen3-235B-A22B "
                              "-p backend=vllm); use backend=rule offline.")
        if self.dataset == "rexval" and self.preference_from == "rating":
            raise ParamsError("rexval has no ratings: set preference_from=total_errors or significant_errors.")
        if self.strategy_generations is not None and not Path(self.strategy_generations).is_file():
            raise ParamsError(f"strategy_generations={self.strategy_generations!r} is not a file; give a CSV/Parquet/JSONL "
                              "table with columns strategy, reference, prediction, or null.")

    def requirements(self) -> list[Requirement]:
        """The dataset (ReXVal by local path), the LLM (backend=llm) and the encoder."""
        out = []
        if self.dataset != "radpref":
            out.append(Requirement("data", "dataset_path", self.dataset_path,
                                   note=f"the {self.dataset} folder (credentialed; by local path)"))
        if self.backend == "llm":
            out.append(Requirement("model", "llm_model", self.llm_model, dtype=getattr(self, "llm_dtype", None),
                                   batch_size=getattr(self, "llm_batch_size", None)))
        if self.text_encoder:
            out.append(Requirement("model", "text_encoder", self.text_encoder, note="BERTScore / embedding encoder"))
        return out
