"""Optional adapters for the field's learned report metrics: RadGraph-F1, RaTEScore, GREEN,
CheXbert-F1 (f1chexbert) and AlignScore.

Each adapter is real code against its package's published API, turned into our
:class:`~radaudit.metrics.base.MetricResult` (per-sample values, one aggregate, details). None of
the packages is a base dependency, and none is imported unless its metric is built:

- package missing → :class:`~radaudit.metrics.base.MetricUnavailableError` from the registry,
  ``pip install 'radaudit[<extra>]'`` (one extra per adapter, pyproject.toml);
- package present but its weights are not cached and the hub cannot be reached (``HF_HUB_OFFLINE=1``,
  or no network) → one ``MetricUnavailableError`` naming the hub ids and saying it needs hub
  access (:func:`hub_access`). Once the weights are cached, the adapters run offline. Without a
  network but with ``HF_HUB_OFFLINE`` unset, huggingface_hub first retries each file for a while
  (minutes); set ``HF_HUB_OFFLINE=1`` to get the error at once.

Every package downloads its models at first use (ANCHORS.md §6–10). Install pain is real and
recorded next to each extra in pyproject.toml: radgraph 0.1.18 breaks with transformers 5 (RadEval
vendored a patched copy), green_score 0.0.12 requires exactly Python 3.12.1 and pins torch 2.2.2,
RaTEScore imports medspaCy at import time, AlignScore needs spaCy's ``en_core_web_sm``.

Empty reports are passed to the packages as they are; what each returns is documented per adapter
(RaTEScore, for instance, gives 0.5 when either side has no entities).

| metric        | package (module)          | score                     |
|---------------|---------------------------|---------------------------|
| radgraph_f1   | radgraph (radgraph)       | mean RG_ER ("partial") F1 |
| ratescore     | RaTEScore (RaTEScore)     | mean RaTEScore            |
| green         | green_score (green_score) | mean GREEN                |
| chexbert_f1   | f1chexbert (f1chexbert)   | corpus micro-F1, top 5    |
| alignscore    | alignscore                | mean AlignScore           |

| metric        | hub ids                                                    |
|---------------|------------------------------------------------------------|
| radgraph_f1   | StanfordAIMI/RRG_scorers (+ the BERT its config names)     |
| ratescore     | Angelakeke/RaTE-NER-Deberta, FremyCompany/BioLORD-2023-C   |
| green         | StanfordAIMI/GREEN-RadLlama2-7b                            |
| chexbert_f1   | StanfordAIMI/RRG_scorers (chexbert.pth), bert-base-uncased |
| alignscore    | yzha/AlignScore (AlignScore-base.ckpt), roberta-base       |
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricResult, MetricSpec, MetricUnavailableError, check_pairs, mean_result
from radaudit.metrics.classification import f1_from_counts as _f1  # 0 where undefined

# --------------------------------------------------------------------------------------------
# Hub access
# --------------------------------------------------------------------------------------------

_HUB_ERROR_TYPES = {
    "LocalEntryNotFoundError", "OfflineModeIsEnabled", "RepositoryNotFoundError", "GatedRepoError",
    "RevisionNotFoundError", "EntryNotFoundError", "HfHubHTTPError", "ConnectError", "ConnectTimeout",
    "ReadTimeout", "NewConnectionError", "MaxRetryError", "NameResolutionError", "ConnectionError",
}
_HUB_ERROR_MODULES = ("huggingface_hub", "httpx", "httpcore", "requests", "urllib3")
_HUB_MESSAGES = (
    "huggingface.co", "hf_hub", "hugging face hub", "offline mode", "hf_hub_offline", "couldn't connect",
    "could not connect", "cannot download", "connection error", "failed to resolve", "local_files_only",
    "not a valid model identifier", "we couldn't connect",
)


def hub_offline() -> bool:
    """Whether the environment forbids hub access (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def is_hub_failure(err: BaseException) -> bool:
    """Whether ``err`` (or an exception it was raised from) is a failure to reach or use the hub.

    Hub client errors are recognised by type and module, a package's own wrapper (radgraph raises
    a bare ``Exception("Cannot download the file ...")``) by its message. Under ``HF_HUB_OFFLINE``
    any ``OSError`` while loading counts too: a file the package meant to download is missing.
    """
    offline = hub_offline()
    for e in _chain(err):
        if type(e).__name__ in _HUB_ERROR_TYPES or type(e).__module__.split(".")[0] in _HUB_ERROR_MODULES:
            return True
        if isinstance(e, (ConnectionError, TimeoutError)) or type(e).__name__ == "gaierror":
            return True
        if any(m in str(e).lower() for m in _HUB_MESSAGES):
            return True
        if offline and isinstance(e, OSError):
            return True
    return False


@contextmanager
def hub_access(metric: str, hub_ids: Sequence[str]) -> Iterator[None]:
    """Turn a weights download that cannot happen into one clear :class:`MetricUnavailableError`.

    Other errors (a bug, a version clash inside the package) propagate unchanged.
    """
    try:
        yield
    except MetricUnavailableError:
        raise
    except Exception as err:
        if not is_hub_failure(err):
            raise
        why = "HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE is set" if hub_offline() else "the hub could not be reached"
        cause = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:300] if str(err).strip() else ''}"
        raise MetricUnavailableError(
            f"Metric {metric!r} needs hub access: its weights come from the Hugging Face hub "
            f"({', '.join(hub_ids)}) and are not in the local cache, and {why}. Run it once where "
            "huggingface.co is reachable (HF_HUB_OFFLINE unset) so they are cached; afterwards it also runs "
            f"offline. (Cause: {cause})"
        ) from err


def _import(module: str, extra: str) -> Any:
    """Import an optional package (the registry has already checked it is installed)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:  # present but broken, e.g. a dependency it does not declare
        raise MetricUnavailableError(
            f"{module} is installed but cannot be imported ({type(err).__name__}: {err}). "
            f"Reinstall it with pip install 'radaudit[{extra}]' (see the comments next to that extra in "
            "pyproject.toml for known version clashes)."
        ) from err


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# --------------------------------------------------------------------------------------------
# RadGraph-F1 (radgraph 0.1.18; Jain et al. 2021, Delbrouck et al. 2022/2024)
# --------------------------------------------------------------------------------------------

RADGRAPH_HUB = ("StanfordAIMI/RRG_scorers",)
RADGRAPH_LEVELS = ("simple", "partial", "complete")


def _radgraph_levels(reward_list: Any, n: int) -> dict[str, np.ndarray]:
    """Per-sample F1 for the three reward levels from ``F1RadGraph(reward_level="all")``.

    radgraph 0.1.18 returns ``([simple...], [partial...], [complete...])``; some releases and forks
    return one ``((P,R,F1) simple, (P,R,F1) partial, (P,R,F1) complete)`` tuple per pair: both are read.
    """
    if isinstance(reward_list, tuple) and len(reward_list) == 3 and all(len(x) == n for x in reward_list) \
            and all(np.ndim(v) == 0 for x in reward_list for v in x):
        return {lvl: np.asarray(vals, dtype=float) for lvl, vals in zip(RADGRAPH_LEVELS, reward_list)}
    rows = list(reward_list)
    if len(rows) == n and all(np.shape(r) == (3, 3) for r in rows):
        arr = np.asarray(rows, dtype=float)  # n x level x (P, R, F1)
        return {lvl: arr[:, k, 2] for k, lvl in enumerate(RADGRAPH_LEVELS)}
    raise MetricUnavailableError("radgraph returned rewards in an unknown layout; use radgraph==0.1.18 "
                                 "(pip install 'radaudit[radgraph]').")


@dataclass
class RadGraphF1:
    """RadGraph-F1: entity/relation F1 between the RadGraph graphs of candidate and reference.

    Levels (``F1RadGraph(reward_level="all")``): ``simple`` = entities (RG_E), ``partial`` =
    entities + whether they have a relation (RG_ER, the usual "RadGraph F1", default ``level``),
    ``complete`` = entities with all their relations (RG_ER-bar). ``score`` = mean of the chosen
    level's per-sample F1 (as radgraph reports it); all three per-sample arrays in ``details``.
    Empty report on either side: radgraph skips the model and gives 0.0.
    """

    level: str = "partial"
    model_type: str = "radgraph-xl"
    cuda: int | None = None
    batch_size: int = 1
    model_cache_dir: str | None = None
    name: str = field(init=False, default="radgraph_f1")
    _scorer: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if self.level not in RADGRAPH_LEVELS:
            raise ParamsError(f"level={self.level!r}: use one of {', '.join(RADGRAPH_LEVELS)}.")
        radgraph = _import("radgraph", "radgraph")
        cuda = self.cuda if self.cuda is not None else (0 if _cuda_available() else -1)
        kwargs: dict[str, Any] = {"cuda": cuda, "batch_size": self.batch_size}
        if self.model_cache_dir:
            kwargs["model_cache_dir"] = self.model_cache_dir
        with hub_access(self.name, RADGRAPH_HUB + (f"{self.model_type}.tar.gz and the BERT encoder its config names",)):
            self._scorer = radgraph.F1RadGraph(reward_level="all", model_type=self.model_type, **kwargs)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        if not refs:
            return mean_result(self.name, [])
        _mean, reward_list, _hyp_ann, _ref_ann = self._scorer(refs=refs, hyps=cands)
        levels = _radgraph_levels(reward_list, len(refs))
        details: dict[str, Any] = {f"f1_{lvl}": v for lvl, v in levels.items()}
        details.update({"level": self.level, "model_type": self.model_type})
        return mean_result(self.name, levels[self.level], details)


# --------------------------------------------------------------------------------------------
# RaTEScore (RaTEScore 0.6.0; Zhao et al. 2024)
# --------------------------------------------------------------------------------------------

RATESCORE_HUB = ("Angelakeke/RaTE-NER-Deberta", "FremyCompany/BioLORD-2023-C")


@dataclass
class RaTEScoreAdapter:
    """RaTEScore: entity-aware similarity (NER + synonym embeddings + type-pair weights), per pair.

    ``RaTEScore(...).compute_score(candidates, references)``; ``score`` = mean. Options map to the
    package's (``bert_model``, ``eval_model``, ``batch_size``, ``affinity_matrix`` "long"/"short";
    None keeps the package default). ``use_gpu`` defaults to whether CUDA is available (the
    package's own default, True, demands CUDA). When either report has no entities RaTEScore
    returns 0.5 by construction, so empty reports score 0.5.
    """

    bert_model: str = RATESCORE_HUB[0]
    eval_model: str = RATESCORE_HUB[1]
    batch_size: int = 1
    use_gpu: bool | None = None
    affinity_matrix: str | None = None
    name: str = field(init=False, default="ratescore")
    _scorer: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        pkg = _import("RaTEScore", "ratescore")
        kwargs: dict[str, Any] = {"bert_model": self.bert_model, "eval_model": self.eval_model,
                                  "batch_size": self.batch_size,
                                  "use_gpu": _cuda_available() if self.use_gpu is None else self.use_gpu}
        if self.affinity_matrix is not None:
            kwargs["affinity_matrix"] = self.affinity_matrix
        with hub_access(self.name, (self.bert_model, self.eval_model)):
            self._scorer = pkg.RaTEScore(**kwargs)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        if not refs:
            return mean_result(self.name, [])
        scores = self._scorer.compute_score(list(cands), list(refs))  # (candidates, references)
        return mean_result(self.name, [float(s) for s in scores],
                           {"bert_model": self.bert_model, "eval_model": self.eval_model})


# --------------------------------------------------------------------------------------------
# GREEN (green_score 0.0.12; Ostmeier et al. 2024)
# --------------------------------------------------------------------------------------------

GREEN_HUB = ("StanfordAIMI/GREEN-RadLlama2-7b",)
GREEN_ERROR_COLUMNS = {
    "(a) False report of a finding in the candidate": "errors_a_false_finding",
    "(b) Missing a finding present in the reference": "errors_b_missing_finding",
    "(c) Misidentification of a finding's anatomic location/position": "errors_c_location",
    "(d) Misassessment of the severity of a finding": "errors_d_severity",
    "(e) Mentioning a comparison that isn't in the reference": "errors_e_extra_comparison",
    "(f) Omitting a comparison detailing a change from a prior study": "errors_f_omitted_comparison",
}


@dataclass
class GreenAdapter:
    """GREEN: an LLM judge counts clinically significant errors; ``matched / (matched + Σ significant)``.

    ``GREEN(model_name, output_dir, cpu, compute_summary_stats)(refs, hyps)`` returns
    ``mean, std, green_score_list, summary, result_df``. Per-sample = the GREEN scores; a response
    the package could not parse (score ``None``) is NaN, counted in ``n_undefined``. ``details``:
    the six significant-error counts and matched findings per pair, and the raw LLM analysis text.
    ``summary=False`` by default (the package's summary clusters error sentences with another hub
    model). ``cpu`` defaults to "no CUDA" (GREEN's default, False, demands a GPU); a 7B model on CPU
    is very slow. GREEN truncates each report to 300 words in its prompt.
    """

    model_name: str = GREEN_HUB[0]
    cpu: bool | None = None
    output_dir: str = "."
    summary: bool = False
    name: str = field(init=False, default="green")
    _scorer: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        pkg = _import("green_score", "green")
        cpu = (not _cuda_available()) if self.cpu is None else self.cpu
        with hub_access(self.name, (self.model_name,)):
            self._scorer = pkg.GREEN(self.model_name, output_dir=self.output_dir, cpu=cpu,
                                     compute_summary_stats=self.summary)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        if not refs:
            return mean_result(self.name, [])
        _mean, _std, scores, summary, df = self._scorer(list(refs), list(cands))
        per = [np.nan if s is None else float(s) for s in scores]
        details: dict[str, Any] = {"model_name": self.model_name,
                                   "n_unparsed": int(sum(s is None for s in scores))}
        if df is not None:
            for col, key in GREEN_ERROR_COLUMNS.items():
                if col in df:
                    details[key] = np.asarray(df[col], dtype=float)
            if "Matched Findings" in df:
                details["matched_findings"] = np.asarray(df["Matched Findings"], dtype=float)
            if "green_analysis" in df:
                details["green_analysis"] = np.asarray(list(df["green_analysis"]), dtype=object)
        if summary is not None:
            details["summary"] = summary
        return mean_result(self.name, per, details)


# --------------------------------------------------------------------------------------------
# CheXbert-F1 (f1chexbert 0.0.2; Smit et al. 2020 labeler)
# --------------------------------------------------------------------------------------------

CHEXBERT_HUB = ("StanfordAIMI/RRG_scorers (chexbert.pth)", "bert-base-uncased")
CHEXBERT_TOP5 = ("Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion")


@dataclass
class CheXbertF1:
    """CheXbert-F1: CheXbert labels (14 CheXpert observations) of candidate vs reference.

    Labels come from ``F1CheXbert().get_label(report, mode="rrg")``, which counts *uncertain as
    positive* (the convention of f1chexbert and RadEval; blank and negative are 0). We compute the
    F1s ourselves from those labels instead of calling ``F1CheXbert.forward``: its per-element
    accuracy goes through sklearn's private ``_check_targets``, which fails on current
    sklearn/scipy (RadEval issue #29). Same definitions as its ``classification_report``:

    - ``score`` (``aggregate="corpus"``): F1 over all pairs for ``labels`` ("top5": Cardiomegaly,
      Edema, Consolidation, Atelectasis, Pleural Effusion; "all14"), ``average`` "micro"
      (pooled TP/FP/FN, default) or "macro" (mean of per-label F1; a label never present in either
      side has F1 0, as sklearn reports it);
    - ``per_sample``: example-based F1 of the pair's positive labels, ``2|A∩B| / (|A| + |B|)``,
      defined as 1.0 when neither report has a positive label (they agree);
    - ``details``: micro/macro F1 for top 5 and all 14, per-label F1, per-pair exact-match
      accuracy of the selected labels (RadEval's ``sample_acc``), and the label matrices.
    """

    labels: str = "top5"
    average: str = "micro"
    device: str | None = None
    name: str = field(init=False, default="chexbert_f1")
    _scorer: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if self.labels not in ("top5", "all14"):
            raise ParamsError(f"labels={self.labels!r}: use 'top5' or 'all14'.")
        if self.average not in ("micro", "macro"):
            raise ParamsError(f"average={self.average!r}: use 'micro' or 'macro'.")
        pkg = _import("f1chexbert", "f1chexbert")
        kwargs = {"device": self.device} if self.device else {}
        with hub_access(self.name, CHEXBERT_HUB):
            self._scorer = pkg.F1CheXbert(**kwargs)

    def _labels(self, reports: Sequence[str]) -> np.ndarray:
        return np.asarray([self._scorer.get_label(r.strip(), mode="rrg") for r in reports], dtype=int)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        names = list(getattr(self._scorer, "target_names"))
        if not refs:
            return MetricResult(self.name, float("nan"), np.zeros(0), aggregate="corpus")
        y_ref, y_hyp = self._labels(refs), self._labels(cands)
        top5 = [names.index(c) for c in CHEXBERT_TOP5]
        details: dict[str, Any] = {}
        for tag, cols in (("top5", top5), ("all14", list(range(len(names))))):
            r, h = y_ref[:, cols], y_hyp[:, cols]
            tp, fp, fn = (r & h).sum(0), ((1 - r) & h).sum(0), (r & (1 - h)).sum(0)
            details[f"micro_f1_{tag}"] = float(_f1(tp.sum(), fp.sum(), fn.sum()))
            details[f"macro_f1_{tag}"] = float(_f1(tp, fp, fn).mean())
        for j, label in enumerate(names):
            r, h = y_ref[:, j], y_hyp[:, j]
            details[f"f1_{label}"] = float(_f1(np.sum(r & h), np.sum((1 - r) & h), np.sum(r & (1 - h))))
        cols = top5 if self.labels == "top5" else list(range(len(names)))
        r, h = y_ref[:, cols], y_hyp[:, cols]
        inter, size = (r & h).sum(1), r.sum(1) + h.sum(1)
        per_sample = np.where(size > 0, 2 * inter / np.maximum(size, 1), 1.0)
        details["sample_exact_match"] = (r == h).all(1).astype(float)
        details["reference_labels"] = y_ref
        details["candidate_labels"] = y_hyp
        details["labels"] = self.labels
        details["average"] = self.average
        return MetricResult(name=self.name, score=details[f"{self.average}_f1_{self.labels}"], per_sample=per_sample,
                            aggregate="corpus", details=details)


# --------------------------------------------------------------------------------------------
# AlignScore (Zha et al. 2023)
# --------------------------------------------------------------------------------------------

ALIGNSCORE_HUB_REPO = "yzha/AlignScore"


@dataclass
class AlignScoreAdapter:
    """AlignScore: factual consistency of the candidate (claim) with the reference (context).

    ``AlignScore(model, batch_size, device, ckpt_path, evaluation_mode).score(contexts=references,
    claims=candidates)``; ``score`` = mean. The checkpoint is ``AlignScore-base.ckpt`` (or
    ``-large`` for a ``*-large`` model) from ``yzha/AlignScore`` unless ``ckpt_path`` is given;
    the package also loads ``model`` (``roberta-base``) from the hub and spaCy's ``en_core_web_sm``
    for sentence splitting (``nli_sp`` mode). The upstream package is not on PyPI; the extra
    installs ``alignscore-speedofmagic``, a PyPI release of the same ``alignscore`` module.
    """

    model: str = "roberta-base"
    ckpt_path: str | None = None
    batch_size: int = 32
    device: str | None = None
    evaluation_mode: str = "nli_sp"
    name: str = field(init=False, default="alignscore")
    _scorer: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        import importlib.util

        pkg = _import("alignscore", "alignscore")
        if importlib.util.find_spec("en_core_web_sm") is None:
            raise MetricUnavailableError(
                "Metric 'alignscore' needs spaCy's English model en_core_web_sm for sentence splitting, which is "
                "not installed: run `python -m spacy download en_core_web_sm` (needs network).")
        device = self.device or ("cuda:0" if _cuda_available() else "cpu")
        ckpt_name = f"AlignScore-{'large' if 'large' in self.model else 'base'}.ckpt"
        with hub_access(self.name, (f"{ALIGNSCORE_HUB_REPO} ({ckpt_name})", self.model)):
            ckpt = self.ckpt_path
            if ckpt is None:
                from huggingface_hub import hf_hub_download

                ckpt = hf_hub_download(ALIGNSCORE_HUB_REPO, ckpt_name)
            kwargs: dict[str, Any] = {"model": self.model, "batch_size": self.batch_size, "device": device,
                                      "ckpt_path": ckpt, "evaluation_mode": self.evaluation_mode}
            if "verbose" in inspect.signature(pkg.AlignScore).parameters:
                kwargs["verbose"] = False
            self._scorer = pkg.AlignScore(**kwargs)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        if not refs:
            return mean_result(self.name, [])
        scores = self._scorer.score(contexts=list(refs), claims=list(cands))
        return mean_result(self.name, [float(s) for s in scores],
                           {"model": self.model, "evaluation_mode": self.evaluation_mode})


# --------------------------------------------------------------------------------------------
# Factories and registry entries
# --------------------------------------------------------------------------------------------

def make_radgraph_f1(**options: Any) -> RadGraphF1:
    """RadGraph-F1 (``level``: simple | partial | complete; ``model_type``: radgraph | radgraph-xl | ...)."""
    return RadGraphF1(**options)


def make_ratescore(**options: Any) -> RaTEScoreAdapter:
    """RaTEScore (options: ``bert_model``, ``eval_model``, ``batch_size``, ``use_gpu``, ``affinity_matrix``)."""
    return RaTEScoreAdapter(**options)


def make_green(**options: Any) -> GreenAdapter:
    """GREEN (options: ``model_name`` hub id, ``cpu``, ``output_dir``, ``summary``)."""
    return GreenAdapter(**options)


def make_chexbert_f1(**options: Any) -> CheXbertF1:
    """CheXbert-F1 (options: ``labels`` top5 | all14, ``average`` micro | macro, ``device``)."""
    return CheXbertF1(**options)


def make_alignscore(**options: Any) -> AlignScoreAdapter:
    """AlignScore (options: ``model``, ``ckpt_path``, ``batch_size``, ``device``, ``evaluation_mode``)."""
    return AlignScoreAdapter(**options)


_A = "radaudit.metrics.adapters"

SPECS: list[MetricSpec] = [
    MetricSpec(name="radgraph_f1", label="RadGraph F1", factory=f"{_A}:make_radgraph_f1", kind="learned",
               requires=("radgraph",), extra="radgraph",
               description="RadGraph-F1 (radgraph 0.1.18, RadGraph-XL; entity+relation 'partial' F1), mean over pairs"),
    MetricSpec(name="ratescore", label="RaTEScore", factory=f"{_A}:make_ratescore", kind="learned",
               requires=("RaTEScore", "medspacy"), extra="ratescore",
               description="RaTEScore (entity-aware NER + BioLORD similarity), mean over pairs"),
    MetricSpec(name="green", label="GREEN", factory=f"{_A}:make_green", kind="learned",
               requires=("green_score",), extra="green",
               description="GREEN (LLM judge StanfordAIMI/GREEN-RadLlama2-7b: matched/(matched+significant errors))"),
    MetricSpec(name="chexbert_f1", label="CheXbert F1", factory=f"{_A}:make_chexbert_f1", kind="learned",
               requires=("f1chexbert",), extra="f1chexbert",
               description="CheXbert-F1 (f1chexbert labels, uncertain=positive): corpus micro-F1 over the top-5 labels"),
    MetricSpec(name="alignscore", label="AlignScore", factory=f"{_A}:make_alignscore", kind="learned",
               requires=("alignscore",), extra="alignscore",
               description="AlignScore (factual consistency of candidate with reference), mean"),
]
