"""The modality_shift experiment as the notebook runs it: params, models, the long results table, summary.

Paper: Restrepo et al., Selective Modality Shifting (``../shared/papers/003_528df7f4b7accfa0.txt``).
The inputs are built by :mod:`radaudit.audits.modality_shift.conditions`, the paper datasets by
:mod:`radaudit.audits.modality_shift.data`, the metrics by :mod:`radaudit.audits.modality_shift.metrics`
and the figures by :mod:`radaudit.audits.modality_shift.plots`; this module joins them:

    P        = Params(**preset)
    samples  = evaluation_samples(P)                          # the evaluated split, seeded
    partners = draw_partners(samples, seed=P.swap_seed)       # opposite-label donors, seeded
    results  = run_models(P, samples, partners)               # one long table, every model
    save_results(results, run.dir / "tables")                 # parquet + CSV; every figure reads it

The long results table has one row per model x sample x condition: the generated text, the parsed
answer (yes / no / unmatched / unknown), the prediction, the raw first-token logits and the
pair-softmax probabilities (:data:`radaudit.audits.modality_shift.conditions.RESULT_COLUMNS` + score columns).
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

from radaudit.audits.modality_shift.conditions import (
    ALL_CONDITIONS,
    CONDITION_LABELS,
    CONDITIONS,
    MARKED_CONDITIONS,
    get_template,
)
from radaudit.config import BaseParams, Requirement
from radaudit.errors import ParamsError

__all__ = ["DEMO_MODEL", "ModelSpec", "Params", "all_samples", "build_run_items", "condition_order", "evaluation_samples",
           "load_engine", "load_model", "pick_attention_samples", "run_models", "save_results", "summary_lines", "template",
           "vllm_unservable"]

log = logging.getLogger(__name__)

#: ``model`` value that means "the demo VLM the project trains" (:mod:`radaudit.audits.modality_shift.model`).
DEMO_MODEL = "demo"


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
        default_factory=lambda: list(CONDITIONS),
        description="Conditions to run: no_shift, image_shift, text_shift, only_text, only_image, no_input (the negative "
                    "control: neither image nor text); no_shift is needed for NFR. marked_no_shift, marked_image_shift, "
                    "marked_only_image: the image pathway's positive control (the image with the label burned in; "
                    "only for a model trained on marked images, the demo stand-in).",
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
        description="Overrides of the demo VLM's training config (modality_shift.model.DEMO_VLM_CONFIG: "
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
        names = [m.name for m in v]
        if not v or len(set(names)) != len(names):
            raise ValueError(f"models need at least one entry and unique names; got {names}")
        return v

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> str:
        from radaudit.models.backends import backend_param

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

    def rehearse(self, workdir: Path) -> tuple[Params, dict[str, str]]:
        """The paper run on CPU: an invented MIMIC-CXR fixture (16 studies, 8 evaluated), every VLM's tiny
        twin (same class and processor type, its dtype kept), 50 bootstrap resamples, 8 new tokens, one
        traced sample. LLaVA-Med is rehearsed as the LlavaForConditionalGeneration it must be converted to.
        **vLLM needs a GPU**, so ``backend: vllm`` runs as ``hf`` on the twins, recorded as ``rehearsal["backend"]``;
        both engines are given the same rendered prompts and images (``tests/models/test_vlm_backends_equal.py``)."""
        from radaudit.data.fixtures import write_mimic_cxr
        from radaudit.models.twins import twin_folder
        from radaudit.models.vlm import conversion_needed

        if self.dataset == "covid_cxr":
            raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                              "(run it as it is).")
        if self.dataset != "mimic_cxr":
            raise ParamsError(f"No rehearsal fixture for dataset={self.dataset!r} yet; rehearse with dataset=mimic_cxr.")
        data = write_mimic_cxr(Path(workdir) / "data" / "mimic_cxr", n_studies=16)
        models, rehearsal = [], {}
        if self.backend == "vllm":  # vLLM needs a GPU; both engines get the same prompts and images
            rehearsal["backend"] = "vllm -> hf (vLLM needs a GPU)"
        for spec in self.models:
            if spec.model == DEMO_MODEL:
                raise ParamsError("The demo VLM trains on covid_cxr; a rehearsal replaces hub models only.")
            folder, cls = twin_folder(spec.model, Path(workdir) / "twins")
            rehearsal[spec.model] = cls + (" (as converted; see radaudit preflight)" if conversion_needed(spec.model)
                                           else "")
            models.append(spec.model_copy(update={"model": str(folder), "device": "cpu", "trust_remote_code": False,
                                                  "image_processor": {}}))
        options = {**self.dataset_options, "images_dir": str(data / "files"),
                   "patients_path": str(data / "patients.csv.gz"), "race_path": None}
        params = self.model_copy(update={"dataset_path": str(data), "dataset_options": options, "models": models,
                                         "backend": "hf",
                                         "n_bootstrap": 50, "max_new_tokens": min(self.max_new_tokens, 8),
                                         "attention_samples": min(self.attention_samples, 1),
                                         "attention_max_new_tokens": min(self.attention_max_new_tokens, 2)})
        return params, rehearsal

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


def template(params: Params) -> dict[str, Any]:
    """The prompt template of the run: ``PROMPTS[dataset]`` with ``params.prompt`` on top."""
    return get_template(params.dataset, params.prompt)


def all_samples(params: Params) -> pd.DataFrame:
    """Every sample of the run's dataset with its ``split`` (MIMIC-CXR and FairVLMed: the evaluated split only)."""
    from radaudit.audits.modality_shift.data import load_samples

    options = dict(params.dataset_options)
    if params.dataset == "mimic_cxr":
        options.setdefault("n", None)
        options.setdefault("split", params.eval_split)
    if params.dataset == "fairvlmed":
        options.setdefault("split", params.eval_split)
    return load_samples(params.dataset, data_root=params.data_root, path=params.dataset_path,
                        seed=params.split_seed, test_size=params.test_size, **options)


def evaluation_samples(params: Params, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """The evaluated samples: ``eval_split`` of the dataset, at most ``n_samples`` drawn with ``split_seed``.

    ``samples``: :func:`all_samples` when already loaded. ``attrs["split_counts"]`` keeps the split
    counts of the whole table (label x split) for the notebook.
    """
    samples = all_samples(params) if samples is None else samples
    counts = samples.groupby(["split", "label"]).size().rename("n").reset_index()
    ev = samples[samples["split"] == params.eval_split].reset_index(drop=True)
    if ev.empty:
        raise ParamsError(f"No samples in split {params.eval_split!r}; splits present: {sorted(samples['split'].unique())}.")
    if params.n_samples is not None and len(ev) > params.n_samples:
        keep = np.sort(np.random.default_rng(params.split_seed).choice(len(ev), size=params.n_samples, replace=False))
        ev = ev.iloc[keep].reset_index(drop=True)
    ev.attrs["split_counts"] = counts
    ev.attrs["dropped"] = samples.attrs.get("dropped", {})
    return ev


def vllm_unservable(model: str) -> str | None:
    """Why vLLM cannot serve the ``models`` entry ``model``, or ``None`` when nothing here says so (vLLM then
    decides when it loads the model; a checkpoint that needs converting first, such as LLaVA-Med, is refused
    with the conversion steps on either engine). The ``demo`` stand-in is trained here, with a PIL image
    processor class and a vision tower of toy sizes that only transformers loads."""
    if model == DEMO_MODEL:
        return ("the demo stand-in (a tiny LLaVA trained here, with a custom PIL image processor and a toy-sized "
                "vision tower) loads in transformers only")
    return None


def load_model(spec: ModelSpec, params: Params, cache_dir: str | os.PathLike | None = None) -> tuple[Any, Any, str]:
    """``(processor, model, where)`` for one spec, on **transformers** whatever ``params.backend`` (attention and
    gradient maps read the model's internals, which vLLM does not expose); ``demo`` trains the stand-in on
    first use (then reuses it). :func:`load_engine` gives the engine of the answers."""
    from radaudit.models.vlm import load_vlm

    where = spec.model
    if spec.model == DEMO_MODEL:
        from radaudit.audits.modality_shift.model import demo_vlm_path

        where = str(demo_vlm_path(params.data_root, seed=params.seed, cache_dir=cache_dir, split_seed=params.split_seed,
                                  test_size=params.test_size, **params.demo_vlm))
    processor, model = load_vlm(where, device=spec.device, dtype=spec.dtype, trust_remote_code=spec.trust_remote_code,
                                image_processor_kwargs=spec.image_processor or None)
    return processor, model, where


def load_engine(spec: ModelSpec, params: Params, cache_dir: str | os.PathLike | None = None) -> tuple[Any, Any, str]:
    """``(processor, model or engine, where)`` that answers and scores the items: :func:`load_model` with
    ``backend: hf``; with ``backend: vllm`` the model's processor and a vLLM engine
    (:func:`radaudit.models.vlm_vllm.load_vllm_vlm`: same prompts, images and cache keys; the spec's dtype and
    image-processor overrides; ``batch_size`` items per vLLM call at least 256, as vLLM batches itself)."""
    if params.backend != "vllm":
        return load_model(spec, params, cache_dir)
    reason = vllm_unservable(spec.model)
    if reason:
        raise ParamsError(f"backend vllm cannot serve {spec.name!r}: {reason}. Run it with backend: hf.")
    from radaudit.models.vlm_vllm import load_vllm_vlm

    processor, engine = load_vllm_vlm(spec.model, dtype=spec.dtype, trust_remote_code=spec.trust_remote_code,
                                      image_processor_kwargs=spec.image_processor or None,
                                      batch_size=max(256, spec.batch_size))
    return processor, engine, spec.model


def build_run_items(params: Params, samples: pd.DataFrame, partners: pd.DataFrame,
                    model_type: str | None = None, cache_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The run's items (sample x condition x prompt) with the run's template, conditions and options.

    With a marked condition among ``params.conditions``, the samples' marked copies are written (once)
    under ``<cache>/marked_images`` (:func:`radaudit.audits.modality_shift.marker.add_marked_images`).
    """
    from radaudit.audits.modality_shift.conditions import build_items
    from radaudit.audits.modality_shift.marker import MARKED_IMAGE_COLUMN, add_marked_images

    if any(c in MARKED_CONDITIONS for c in params.conditions) and MARKED_IMAGE_COLUMN not in samples.columns:
        from radaudit.models.cache import default_cache_dir

        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        samples = add_marked_images(samples, root / "marked_images")
    return build_items(samples, partners, template(params), conditions=condition_order(params.conditions),
                       unmatched=params.unmatched, model_type=model_type, swap_metadata=params.swap_metadata)


def run_models(params: Params, samples: pd.DataFrame, partners: pd.DataFrame, *,
               cache_dir: str | os.PathLike | None = None,
               loaded: Mapping[str, tuple[Any, Any]] | None = None) -> pd.DataFrame:
    """Run every model of ``params.models`` on every item: the long results table (models stacked).

    Each model gets the items of :func:`build_run_items` with its own ``model_type`` suffix and is run by
    ``params.backend`` (:func:`load_engine`: transformers or vLLM, the same cache keys, so a run resumes on
    either; the ``engine`` column says which answered each row).
    ``loaded``: already loaded ``{name: (processor, model)}`` pairs to reuse. ``attrs["models"]``
    records where each model came from (the demo's trained folder, a hub id, a path).
    """
    from radaudit.audits.modality_shift.conditions import run_conditions
    from radaudit.models.cache import open_cache

    store = open_cache(cache_dir if cache_dir is not None else True) if params.cache else None
    parts, where = [], {}
    try:
        for spec in params.models:
            if loaded and spec.name in loaded:
                processor, model = loaded[spec.name]
                where[spec.name] = spec.model
            else:
                processor, model, where[spec.name] = load_engine(spec, params, cache_dir)
            items = build_run_items(params, samples, partners, model_type=spec.model_type, cache_dir=cache_dir)
            parts.append(run_conditions(processor, model, items, model_name=spec.name,
                                        max_new_tokens=params.max_new_tokens, batch_size=spec.batch_size, cache=store,
                                        candidates=params.candidates, pair=params.pair))
    finally:
        if store is not None:
            store.close()
    results = pd.concat(parts, ignore_index=True)
    results.attrs["models"] = where
    return results


def save_results(results: pd.DataFrame, folder: str | os.PathLike) -> dict[str, Path]:
    """Write the long results table as ``results_long.parquet`` (exact floats; what the figures read)
    and ``results_long.csv`` (for a spreadsheet). The ``cached`` column (whether an answer came from the
    generation cache) describes this run, not the result, so it is left out: the same params and seed give
    byte-identical tables whether or not the answers were cached (tests/reliability/test_determinism.py)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {"parquet": folder / "results_long.parquet", "csv": folder / "results_long.csv"}
    frame = results.drop(columns=["cached"], errors="ignore").copy()
    frame.attrs = {}
    for col in frame.columns:  # mixed None/str object columns -> string for parquet
        if frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    frame.to_parquet(out["parquet"], index=False)
    frame.to_csv(out["csv"], index=False)
    return out


def pick_attention_samples(results: pd.DataFrame, n: int = 1, model: str | None = None) -> list[str]:
    """The samples shown in Fig. 4, best first: positive samples answered correctly without a shift whose
    answer the text shift flips (the paper's case), then other correct positives, then the rest
    (each group in ``sample_id`` order)."""
    r = results if model is None else results[results["model"] == model]
    wide = r.pivot_table(index="sample_id", columns="condition", values="correct", aggfunc="first")
    labels = r.groupby("sample_id")["label"].first().reindex(wide.index)
    ok = wide["no_shift"] == 1
    flipped = ok & (wide["text_shift"] == 0) if "text_shift" in wide else pd.Series(False, index=wide.index)
    rank = np.where(flipped & (labels == 1), 0, np.where(ok & (labels == 1), 1, 2))
    order = pd.DataFrame({"sample_id": wide.index.astype(str), "rank": rank}).sort_values(["rank", "sample_id"])
    return order["sample_id"].head(n).tolist()


def _fmt(row: pd.Series) -> str:
    return f"{row['estimate']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def summary_lines(metrics: pd.DataFrame, nfr: pd.DataFrame, ece: pd.DataFrame, rates: pd.DataFrame) -> list[str]:
    """Plain-words findings computed from the run's tables (one block per model), for the notebook's
    closing Markdown. Every number is an estimate with its 95% bootstrap CI (rates: Wilson)."""
    lines = []
    for model in metrics["model"].unique():
        m = metrics[(metrics["model"] == model) & (metrics["metric"] == "accuracy")].set_index("condition")
        lines.append(f"**{model}**")
        acc = ", ".join(f"{CONDITION_LABELS[c]} {_fmt(m.loc[c])}" for c in ALL_CONDITIONS if c in m.index)
        lines.append(f"- Accuracy: {acc}.")
        n = nfr[(nfr["model"] == model) & (nfr["measure"] == "nfr")].set_index("condition")
        nb = nfr[(nfr["model"] == model) & (nfr["measure"] == "nfr_base_correct")].set_index("condition")
        for shift in ("image_shift", "text_shift"):
            if shift in n.index:
                lines.append(f"- {CONDITION_LABELS[shift]}: NFR (paper, over all N) {_fmt(n.loc[shift])}; "
                             f"over base-correct predictions {_fmt(nb.loc[shift])} "
                             f"({int(n.loc[shift, 'n_flipped'])} of {int(n.loc[shift, 'n_base_correct'])} "
                             "correct answers flipped).")
        if {"image_shift", "text_shift"} <= set(n.index):
            ti, tt = n.loc["image_shift"], n.loc["text_shift"]
            if tt["low"] > ti["high"]:
                verdict = ("the text shift flips more answers than the image shift (CIs do not overlap): "
                           "the model leans on the text.")
            elif ti["low"] > tt["high"]:
                verdict = ("the image shift flips more answers than the text shift (CIs do not overlap): "
                           "the model leans on the image.")
            else:
                verdict = "the two shifts' NFR intervals overlap: this run cannot say which modality the model leans on."
            lines.append(f"- Verdict: {verdict}")
        e = ece[ece["model"] == model].set_index("condition")
        if len(e):
            lines.append("- ECE: " + ", ".join(f"{CONDITION_LABELS[c]} {_fmt(e.loc[c])}" for c in ALL_CONDITIONS
                                                if c in e.index) + ".")
        rr = rates[rates["model"] == model]
        worst = rr.loc[rr["unknown_rate"].idxmax()]
        lines.append(f"- Answers that are neither yes nor no: {int(rr['n_unknown'].sum() + rr['n_unmatched'].sum())} "
                     f"of {int(rr['n'].sum())}; highest under {CONDITION_LABELS[worst['condition']]} "
                     f"({worst['unknown_rate']:.1%}).")
    return lines


def condition_order(conditions: Sequence[str]) -> list[str]:
    """Conditions in the paper's order."""
    return [c for c in ALL_CONDITIONS if c in conditions]
