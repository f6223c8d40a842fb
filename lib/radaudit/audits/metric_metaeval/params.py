"""Parameters of metric_metaeval (schema of ``params/metric_metaeval/*.yaml``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from radaudit.config import BaseParams, Requirement
from radaudit.errors import ParamsError

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
        from radaudit.models.backends import backend_param

        return backend_param(v)  # 'transformers' -> 'hf'; unknown names say what to write

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        from radaudit.metrics import METRICS

        if not v:
            raise ValueError("metrics is empty; give registry names or null for every registered metric")
        bad = [m for m in v if m not in METRICS]
        if bad:
            raise ValueError(f"unknown metrics {bad}; registered: {', '.join(METRICS)}")
        return v

    def rehearse(self, workdir: Path) -> tuple[Params, dict[str, str]]:
        """The paper run on CPU (``radaudit run metric_metaeval --preset paper --rehearse``; issue 19).

        Replaced: the rewriting LLM (``llm_model``) and every metric backbone of ``metric_options`` (BERTScore's
        roberta-large) by tiny random-weight twins of the same class (:mod:`radaudit.models.twins`); MIMIC-CXR by the
        invented fixture of :func:`radaudit.data.fixtures.write_mimic_cxr` (16 studies, reports in the real
        ``files/pXX/p<subject>/s<study>.txt`` layout); ReXVal by :func:`radaudit.data.fixtures.write_rexval` (12
        studies x 4 candidates x 6 raters), so Table 1's ReXVal code path runs even where the preset's
        ``rexval_path`` is null. A BERTScore backbone twin is read at the layer the paper run uses by default
        (bert-score's tuned layer for the hub id, 17 for roberta-large: a local twin folder has no hub id to look
        it up by). Cut: one pair per Table 2 cell, one GT report tried per cell, two monotonicity reports (of at
        least one sentence: the fixture's findings are one sentence long), 20 bootstrap resamples, 16 new tokens.
        **vLLM needs a GPU**, so with ``engine: llm``, ``backend: vllm`` runs as ``hf`` (transformers) on the twin, recorded
        as ``rehearsal["backend"]``; both engines are given the same prompts
        (``tests/models/test_backends_equal_prompts.py``). Everything else is the preset's: engine, decoding strategy, dtype,
        batch size, context design, averages.

        The twin's rewrites are noise: each is an unparseable reply, counted and kept as a rejected pair
        (``pair_dataset_fill``, ``pairs_dataset/rejected.parquet``), and every table downstream is built from the
        pairs that remain (the rule-based monotonicity set). Returns ``(params, rehearsal)``: ``rehearsal`` maps
        each model id to its twin's class and each replaced input to what replaced it.
        """
        from radaudit.data.fixtures import write_mimic_cxr, write_rexval
        from radaudit.metrics.embedding import MODEL2LAYERS
        from radaudit.models.twins import twin_folder

        workdir = Path(workdir)
        credentialed = [d for d in self.datasets if d in ("mimic_cxr", "chexpert_plus", "rexgradient")]
        backbones = {m: o["model"] for m, o in sorted(self.metric_options.items()) if isinstance(o, dict) and o.get("model")}
        if self.engine != "llm" and not credentialed and not backbones and not self.rexval_path:
            raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                              "(run it as it is).")
        unknown = [d for d in credentialed if d != "mimic_cxr"]
        if unknown:
            raise ParamsError(f"No rehearsal fixture for dataset(s) {unknown} yet; rehearse with datasets: [mimic_cxr].")
        rehearsal: dict[str, str] = {}
        update: dict[str, Any] = {"n_bootstrap": 20, "n_per_cell": 1, "n_monotonicity_reports": 2,
                                  "monotonicity_min_sentences": 1, "llm_max_tasks_per_cell": 1,
                                  "llm_max_new_tokens": min(self.llm_max_new_tokens, 16)}
        if credentialed:
            mimic = write_mimic_cxr(workdir / "data" / "mimic_cxr", n_studies=16)
            update["dataset_paths"] = {**self.dataset_paths, "mimic_cxr": str(mimic)}
            rehearsal["dataset_paths.mimic_cxr"] = "invented MIMIC-CXR fixture (16 studies)"
        update["rexval_path"] = str(write_rexval(workdir / "data" / "rexval", n_studies=12))
        rehearsal["rexval_path"] = (f"{self.rexval_path or 'null'} -> invented ReXVal fixture (12 studies): Table 1's "
                                    "ReXVal code path runs")
        if self.engine == "llm":
            folder, cls = twin_folder(self.llm_model, workdir / "twins")
            update["llm_model"] = str(folder)
            rehearsal[self.llm_model] = cls
            if self.backend == "vllm":
                update["backend"] = "hf"
                rehearsal["backend"] = "vllm -> hf (vLLM needs a GPU)"
        options = {m: dict(o) for m, o in self.metric_options.items()}
        for metric, spec in backbones.items():
            folder, cls = twin_folder(spec, workdir / "twins")
            options[metric]["model"] = str(folder)
            if metric == "bertscore" and "num_layers" not in options[metric] and spec in MODEL2LAYERS:
                options[metric]["num_layers"] = MODEL2LAYERS[spec]
                rehearsal[f"metric_options.{metric}.num_layers"] = f"{MODEL2LAYERS[spec]} (bert-score's layer for {spec})"
            rehearsal[spec] = cls
        update["metric_options"] = options
        return self.model_copy(update=update), rehearsal

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
