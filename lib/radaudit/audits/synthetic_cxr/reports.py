"""Report-generation utility of synthetic chest X-rays (CheXGenBench, paper 004 §2.4 and Table 5).

The question: do a generator's image–text pairs teach a report generator anything that transfers
to real images? In the paper, LLaVA-Rad is fine-tuned on 20,000 synthetic images (each paired with
the prompt / LLaVA-Rad annotation it was generated from) per text-to-image model, and evaluated on
the **real** test set with BLEU-1, BLEU-4, ROUGE-L, F1-RadGraph and the micro F1-5 / F1-14 of the
CheXpert findings, against the same model fine-tuned on real data ("Original"). Table 5 puts one
column per training source and one row per metric; the paper gives no uncertainty.

Two ways to get the generated reports
-------------------------------------
* **Paper path — reports from a file** (:func:`read_generated_reports`). Fine-tune your report
  model elsewhere (one model per training source), generate one report per real test study and
  bring one CSV per source with columns ``study_id, report``. Every test study must be in the file;
  a blank or missing report is kept as an empty string and counted (an empty report is a failure
  of the model and must be scored as one, never dropped).
* **Demo stand-in — nearest-neighbour report retrieval** (:func:`retrieval_reports`). A 7B VLM
  cannot be fine-tuned here, so the demo uses the 1-NN retrieval baseline of the report-generation
  literature (the "CXR-RePaiR"/"1-NN report" baseline): the "training set" is one source's images
  with their texts (a generator's utility images with the prompts they were generated from, or —
  the ``real`` baseline — the real training images with their captions); for each real test image
  the "generated report" is the text of the training image whose feature vector (from the chest
  X-ray encoder) has the highest cosine similarity (ties: the lowest training index; ``k = 1``).
  **What it measures**: whether a source's image–text pairs let a *real* test image find a correct
  report — i.e. whether the source's images sit near real images *that carry the same findings*
  in the encoder's feature space. A generator that ignores its prompt, or draws images unlike real
  ones, retrieves wrong texts; one that reproduces real images faithfully and in line with their
  text retrieves right ones. It tests the image–text alignment of the synthetic pairs, the
  property the paper uses report generation for ("assessing the factual correctness between
  synthetic images and their corresponding clinical descriptions"), without the variance and cost
  of fine-tuning a VLM. It cannot generalise beyond the training texts (with the demo's
  label-list captions every "report" is one of a few captions), so absolute values are not
  comparable with the paper's; the comparison between sources is the result.

Metrics (:func:`report_utility_long`; all on a 0–1 scale — the paper prints BLEU × 100)
--------------------------------------------------------------------------------------
* ``bleu1``, ``bleu4`` — **corpus BLEU** (Papineni et al. 2002, eq. 1–2; sacreBLEU conventions,
  as :func:`radaudit.metrics.base.build_metric` ``("bleu1"/"bleu4")`` scores a corpus):
  ``BLEU-N = BP · exp(Σ_{k=1..N} (1/N) log p_k)``, ``p_k = Σ_i clipped-matches_k(i) / Σ_i
  hyp-k-grams(i)``, ``BP = min(1, exp(1 − R/C))`` with ``C = Σ_i |hyp_i|``, ``R = Σ_i |ref_i|``;
  13a tokenisation, case-sensitive, sacreBLEU's default corpus smoothing ``"exp"`` (an order with
  no match gets ``p_k = 1 / (2^j · total_k)``, ``j`` counting the zero-match orders so far), BLEU = 0
  when no n-gram of any order matches, or when some order has no hypothesis n-gram at all. The
  per-report sufficient statistics (hypothesis and reference length, clipped matches and totals for
  k = 1..4) come from sacreBLEU's own ``_extract_corpus_statistics``, so the full-set estimate equals
  ``sacrebleu.metrics.BLEU(max_ngram_order=N).corpus_score`` (tested to 1e-9).
* ``rougeL`` — the mean over reports of the ROUGE-L F-measure (Lin 2004; the project's
  ``build_metric("rougeL")``: rouge-score tokenizer, no stemming, LCS over the whole report).
* ``radgraph_f1`` — F1-RadGraph (Jain et al. 2021; the project's ``radgraph_f1`` adapter:
  RadGraph-XL, entity + relation "partial" F1, mean over reports). Only when requested, and only
  where it can run: it needs ``pip install 'radaudit[radgraph]'`` and hub access to
  ``StanfordAIMI/RRG_scorers``; offline its rows are NaN with a note that says so (never dropped).
* **Label F1** (Table 5's F1-5 / F1-14), requested as ``"f1"``, expanded by ``label_mode``:

  - ``label_mode="chexpert"`` (free-text reports): both reports are labelled with the project's
    rule-based CheXpert labeler (``build_metric("chexpert_f1_*")``, :mod:`radaudit.metrics.clinical`;
    its default ``uncertain="positive"`` policy — U-Ones, the RadEval/f1chexbert "rrg"
    convention); metrics ``f1_micro_5``, ``f1_macro_5`` (Atelectasis, Cardiomegaly, Consolidation,
    Edema, Pleural Effusion) and ``f1_micro_14``, ``f1_macro_14`` (all 14 observations, No Finding
    included). The paper prints only the micro values and labels with CheXbert (as LLaVA-Rad's
    evaluation does); the rule-based labeler is the offline stand-in.
  - ``label_mode="labels"`` (label-list captions such as the demo's ``"PA chest X-ray: COVID-19,
    ARDS"``): a report is positive for a label when the label name occurs in it as a whole phrase,
    case-insensitive (``"COVID-19"``, ``"Other pneumonia"``, ``"ARDS"``, ``"No Finding"``; runs of
    spaces in a name match any whitespace; not negation-aware — use ``"chexpert"`` for prose);
    metrics ``f1_micro`` and ``f1_macro``.

  With per-report × per-label counts ``tp_il, fp_il, fn_il`` (reference / candidate positive):
  ``micro F1 = 2ΣTP / (2ΣTP + ΣFP + ΣFN)`` over labels and reports; ``macro F1 = mean_l F1_l``,
  ``F1_l = 2TP_l / (2TP_l + FP_l + FN_l)``, 0 when a label has no positive on either side (the
  clinical metric's ``zero_division=0``, scikit-learn's and f1chexbert's convention).
  In the bootstrap, a resample that contains no reference positive of a label that has some in
  the test set is *undefined* for the macro F1 (NaN, left out of its CI and counted in the note;
  above 10 % of the resamples the CI is not computed): with ``zero_division=0`` such a resample
  would score that label 0 for every source and drag the interval down — a perfect source would
  get a lower bound of 0.75 with four labels as soon as a rare label drops out of more than
  2.5 % of the resamples (iid resampling loses a label with 2 test cases, as ARDS in the demo,
  in ~13 %). The failures depend on the references only, so they are the same resamples for
  every source and the paired differences stay paired; stratified resampling (below) avoids them.

Uncertainty (the paper reports none)
------------------------------------
Every estimate is the metric on the full test set. Its 95 % CI is the percentile interval
(:func:`radaudit.stats.interval_from_replicates`) of ``n_bootstrap`` replicates that resample the
**test reports** with replacement — iid, or (``stratify``; default for ``label_mode="labels"``)
within each set of reference labels, as Table 4's bootstrap does, so that a label with two test
cases is in every resample; every source is evaluated on the **same** resampled test
indices, so ``diff = source − baseline`` has a paired-bootstrap CI (the interval of the replicate
differences) and a two-sided bootstrap p-value ``p = min(1, 2·min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) /
(B + 1))`` (as :func:`radaudit.stats.paired_bootstrap`), Benjamini–Hochberg-adjusted
(:func:`radaudit.stats.benjamini_hochberg`) over all non-baseline source × metric tests (``p_bh``).
Corpus metrics are recomputed on each resample, not averaged: the resamples are a ``(B × n)``
matrix of counts (how often each test report is drawn), and each replicate is the metric of the
count-weighted sums of per-report sufficient statistics (BLEU's lengths and n-gram counts, the
label ``tp/fp/fn``, ROUGE-L's F and a "defined" indicator), so 1000 resamples × several sources
take a fraction of a second (vectorised matrix products, in blocks of bounded memory).

Choices where the paper is silent: BLEU's implementation/tokenisation (sacreBLEU 13a, corpus
level, case-sensitive); ROUGE-L without stemming; labeler (rule-based CheXpert, U-Ones); macro
F1 reported besides the paper's micro; the CIs and tests above.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr.models import cosine_knn
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError
from radaudit.metrics.base import MetricUnavailableError, build_metric, check_texts
from radaudit.metrics.clinical import binarize_labels, label_columns
from radaudit.stats import (
    BootstrapError,
    benjamini_hochberg,
    bootstrap_pvalue,
    interval_from_replicates,
    resample_weights,
)
from radaudit.tables import format_ci

__all__ = ["BASE_METRICS", "DEFAULT_METRICS", "F1_METRICS", "LABEL_MODES", "LONG_COLUMNS", "METRIC_LABELS",
           "PAPER_ORDER", "GeneratedReports", "bars_frame", "expand_metrics", "nearest_train_index",
           "read_generated_reports", "report_utility_long", "retrieval_reports", "table5"]

#: How a report's findings are read for the label F1: CheXpert labeler (prose) or label-name phrases (captions).
LABEL_MODES: tuple[str, ...] = ("chexpert", "labels")
#: The metric names that do not depend on ``label_mode``.
BASE_METRICS: tuple[str, ...] = ("bleu1", "bleu4", "rougeL", "radgraph_f1")
#: What ``"f1"`` expands to per ``label_mode`` (each name may also be requested on its own).
F1_METRICS: dict[str, tuple[str, ...]] = {"chexpert": ("f1_micro_5", "f1_macro_5", "f1_micro_14", "f1_macro_14"),
                                          "labels": ("f1_micro", "f1_macro")}
DEFAULT_METRICS: tuple[str, ...] = ("bleu1", "bleu4", "rougeL", "f1")
#: Column order of :func:`table5` (the paper's row order in Table 5, then the macro values it leaves out).
PAPER_ORDER: tuple[str, ...] = ("bleu1", "bleu4", "rougeL", "radgraph_f1", "f1_micro_5", "f1_micro_14", "f1_macro_5",
                                "f1_macro_14", "f1_micro", "f1_macro")
#: Display names (the paper's wording).
METRIC_LABELS: dict[str, str] = {"bleu1": "BLEU-1", "bleu4": "BLEU-4", "rougeL": "ROUGE-L",
                                 "radgraph_f1": "F1-RadGraph", "f1_micro_5": "Micro F1-5",
                                 "f1_micro_14": "Micro F1-14", "f1_macro_5": "Macro F1-5",
                                 "f1_macro_14": "Macro F1-14", "f1_micro": "Micro F1", "f1_macro": "Macro F1"}
#: Columns of :func:`report_utility_long`.
LONG_COLUMNS: tuple[str, ...] = ("source", "metric", "estimate", "low", "high", "n", "n_empty", "diff", "diff_low",
                                 "diff_high", "p_value", "p_bh", "note")
MAX_NGRAM = 4
#: Largest share of non-finite replicates allowed before a CI is reported as not computed.
MAX_FAILED = 0.1
RADGRAPH_HOW = ("to enable it: pip install 'radaudit[radgraph]' (radgraph==0.1.18) and give the machine hub access "
                "to StanfordAIMI/RRG_scorers (or a hub cache that holds it)")


# --- 1. demo stand-in: nearest-neighbour report retrieval ------------------------------------------

def _features(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataFormatError(f"{name} must be a non-empty 2-D array [n, d] of feature vectors; got shape "
                              f"{arr.shape}.")
    if not np.isfinite(arr).all():
        raise DataFormatError(f"{name} contains NaN or infinite values.")
    zero = np.flatnonzero(np.linalg.norm(arr, axis=1) == 0)
    if zero.size:
        raise DataFormatError(f"{name} rows {zero[:5].tolist()} are zero vectors: their cosine similarity is "
                              "undefined.")
    return arr


def nearest_train_index(train_features: Any, query_features: Any, *, block: int = 4_000_000) -> np.ndarray:
    """For each query row, the index of the training row with the highest cosine similarity (ties: lowest index).

    Computed in blocks of queries so that at most ``block`` similarities are held at once (20,000
    training × 5,000 test features would otherwise be an 800 MB matrix); each block uses
    :func:`radaudit.audits.synthetic_cxr.models.cosine_knn` (the encoder's k-NN evaluation, ``k = 1``).
    """
    train = _features(train_features, "train_features")
    query = _features(query_features, "query_features")
    if train.shape[1] != query.shape[1]:
        raise DataFormatError(f"train_features have {train.shape[1]} dimensions but query_features "
                              f"{query.shape[1]}: use the same encoder for both.")
    step = max(1, int(block) // len(train))
    return np.concatenate([cosine_knn(train, query[i:i + step], 1)[:, 0] for i in range(0, len(query), step)])


def retrieval_reports(train_features: Any, train_texts: Sequence[str], query_features: Any, k: int = 1) -> list[str]:
    """The demo's stand-in report generator: the text of each query image's nearest training image.

    Args:
        train_features: ``[m, d]`` encoder features of one source's training images (a generator's
            utility images, or the real training images for the baseline).
        train_texts: the ``m`` texts paired with them (the prompts the images were generated from /
            the real captions or reports).
        query_features: ``[n, d]`` features of the real test images, from the same encoder.
        k: neighbours; only ``k = 1`` (1-NN report retrieval) is implemented.

    Returns:
        ``n`` reports: ``train_texts[j*]`` with ``j*`` the training row of highest cosine similarity
        (ties: the lowest index) — see the module docstring for what this measures.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k != 1:
        raise ParamsError(f"k={k!r}: only k=1 (1-nearest-neighbour report retrieval) is implemented.")
    if isinstance(train_texts, str):
        raise DataFormatError("train_texts must be a sequence of texts (one per training image), not one string.")
    texts = list(train_texts)
    n_train = len(np.asarray(train_features)) if np.ndim(train_features) else 0
    if len(texts) != n_train:
        raise DataFormatError(f"{len(texts)} train_texts but {n_train} training feature rows: pass one text per "
                              "training image.")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise DataFormatError(f"train_texts {bad[:5]} are not strings (missing texts?): every training image "
                              "needs its text.")
    return [texts[j] for j in nearest_train_index(train_features, query_features)]


# --- 2. paper path: reports from a file --------------------------------------------------------------

_NA_STRINGS = ["", "nan", "NaN", "NAN", "None", "none", "NULL", "null", "NA", "N/A", "n/a", "<NA>"]


@dataclass(frozen=True)
class GeneratedReports:
    """What :func:`read_generated_reports` returns.

    ``reports``: one report per requested study id, in that order (``""`` where the file's report
    is blank or missing). ``n_empty``: how many of them are empty; ``n_extra``: rows of the file for
    studies that were not requested (ignored).
    """

    reports: list[str]
    n_empty: int
    n_extra: int
    path: Path

    @property
    def note(self) -> str:
        """A sentence for the run log / table note ("" when nothing to report)."""
        parts = []
        if self.n_empty:
            parts.append(f"{self.n_empty} of {len(self.reports)} reports are empty (kept and scored as empty)")
        if self.n_extra:
            parts.append(f"{self.n_extra} rows for other studies ignored")
        return f"{self.path.name}: " + "; ".join(parts) if parts else ""


def _preview(items: Sequence[Any], n: int = 5) -> str:
    shown = ", ".join(repr(x) for x in list(items)[:n])
    return f"{shown}{', ...' if len(items) > n else ''} ({len(items)} in all)"


def read_generated_reports(path: str | os.PathLike, study_ids: Sequence[Any]) -> GeneratedReports:
    """Read one source's generated reports for the real test studies (the paper path of Table 5).

    The file is a CSV with columns ``study_id`` and ``report`` (others are ignored): one row per real
    test study, the report your model — fine-tuned on that source's images — generated for it.
    Study ids are compared as strings (read as text, so ``"00123"`` stays ``"00123"``).

    Raises:
        DatasetNotFoundError: no file at ``path`` (the message says what to provide).
        DataFormatError: a column is missing, a study id occurs twice, or test studies are absent
            from the file (the message lists a few).

    Blank reports and missing values (empty cell, ``NaN``, ``None``, ``NA``, ...) are **kept** as
    ``""`` and counted in ``n_empty``: an empty report is scored as one (never dropped).
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetNotFoundError(
            f"No generated-report file at {p}. Provide a CSV with columns 'study_id' and 'report': one row per "
            "real test study, holding the report generated for it by your report model fine-tuned on this "
            "source's images (paper §2.4: LLaVA-Rad fine-tuned on 20,000 synthetic image-text pairs).")
    if isinstance(study_ids, str):
        raise ParamsError("study_ids must be a sequence of test study ids, not one string.")
    ids = [str(s).strip() for s in study_ids]
    dup_req = sorted(s for s, k in Counter(ids).items() if k > 1)
    if dup_req:
        raise ParamsError(f"study_ids has duplicates: {_preview(dup_req)}.")
    try:
        frame = pd.read_csv(p, dtype=str, keep_default_na=False, na_values={"report": _NA_STRINGS})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataFormatError(f"{p.name} is not a readable CSV ({err}); expected columns study_id, report.") from err
    missing = [c for c in ("study_id", "report") if c not in frame.columns]
    if missing:
        raise DataFormatError(f"{p.name} has no column(s) {missing}; its columns are {list(frame.columns)}. "
                              "Expected study_id, report.")
    sid = frame["study_id"].astype(str).str.strip()
    dups = sid[sid.duplicated(keep=False)].unique().tolist()
    if dups:
        raise DataFormatError(f"{p.name}: study_id occurs more than once: {_preview(dups)}. Keep one report "
                              "per study.")
    reports = frame["report"].where(frame["report"].notna(), "").astype(str)
    by_id = dict(zip(sid, reports, strict=True))
    absent = [s for s in ids if s not in by_id]
    if absent:
        raise DataFormatError(f"{p.name} has no report for {len(absent)} of {len(ids)} test studies: "
                              f"{_preview(absent)}. Generate a report for every real test study (write an empty "
                              "report where the model produced none).")
    out = [by_id[s] for s in ids]
    n_empty = sum(1 for r in out if not r.strip())
    return GeneratedReports(reports=out, n_empty=n_empty, n_extra=len(by_id) - len(ids), path=p)


# --- 3. scoring ------------------------------------------------------------------------------------

def expand_metrics(metrics: Any, label_mode: str) -> list[str]:
    """The metric names a ``metrics`` list stands for (``"f1"`` expanded by ``label_mode``), validated."""
    if isinstance(metrics, str):
        metrics = [metrics]
    allowed = [*BASE_METRICS, "f1", *F1_METRICS[label_mode]]
    out: list[str] = []
    for m in metrics:
        if m not in allowed:
            raise ParamsError(f"Unknown metric {m!r} for label_mode={label_mode!r}; allowed: {', '.join(allowed)} "
                              f"('f1' = {', '.join(F1_METRICS[label_mode])}).")
        for name in (F1_METRICS[label_mode] if m == "f1" else (m,)):
            if name not in out:
                out.append(name)
    if not out:
        raise ParamsError(f"metrics is empty; choose from {', '.join(allowed)}.")
    return out


def _bleu_stats(references: list[str], candidates: Mapping[str, list[str]]) -> dict[str, np.ndarray]:
    """Per source, the per-report sacreBLEU statistics ``[n, 2 + 2·4]``: hyp_len, ref_len, correct_1..4, total_1..4.

    sacreBLEU's own segment statistics (``_extract_corpus_statistics``, what its paired bootstrap
    uses), with the references tokenised once (``BLEU(references=...)`` caches their n-grams).
    ``force=True`` only silences sacreBLEU's "looks tokenised" warning; the statistics are the same.
    """
    from sacrebleu.metrics import BLEU

    bleu = BLEU(references=[references], max_ngram_order=MAX_NGRAM, force=True)
    return {src: np.asarray(bleu._extract_corpus_statistics(c, None), dtype=np.float64).reshape(
        len(c), 2 + 2 * MAX_NGRAM) for src, c in candidates.items()}


def _bleu_from_stats(stats: np.ndarray, order: int) -> np.ndarray:
    """Corpus BLEU-``order`` (0–1) of each row of summed statistics ``[b, 10]``, as sacreBLEU's
    ``compute_bleu(smooth_method="exp", effective_order=False)`` (see the module docstring)."""
    sys_len, ref_len = stats[:, 0], stats[:, 1]
    correct = stats[:, 2:2 + order]
    total = stats[:, 2 + MAX_NGRAM:2 + MAX_NGRAM + order]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1.0 - ref_len / sys_len), 0.0), 1.0)
        prec = np.zeros_like(correct)
        smooth = np.ones(len(stats))
        alive = np.ones(len(stats), dtype=bool)  # sacreBLEU stops at the first order without hypothesis n-grams
        for k in range(order):
            alive &= total[:, k] > 0
            zero = alive & (correct[:, k] == 0)
            smooth = np.where(zero, smooth * 2.0, smooth)
            prec[:, k] = np.where(alive, np.where(zero, 100.0 / (smooth * total[:, k]),
                                                  100.0 * correct[:, k] / total[:, k]), 0.0)
        logs = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), -9999999999.0)  # sacreBLEU's my_log(0)
        score = bp * np.exp(logs.sum(axis=1) / order)
    score[(correct == 0).all(axis=1)] = 0.0
    return score / 100.0


def _f1_rows(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, average: str) -> np.ndarray:
    """Micro or macro F1 of each row of summed ``[b, L]`` counts (0/0 → 0)."""
    if average == "micro":
        t, f_p, f_n = tp.sum(1), fp.sum(1), fn.sum(1)
        den = 2 * t + f_p + f_n
        return np.divide(2 * t, den, out=np.zeros_like(t), where=den > 0)
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0).mean(axis=1)


def _phrase_patterns(label_names: Sequence[str]) -> list[re.Pattern[str]]:
    return [re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in name.split()) + r"(?!\w)", re.IGNORECASE)
            for name in label_names]


def _phrase_matrix(texts: Sequence[str], patterns: Sequence[re.Pattern[str]]) -> np.ndarray:
    """``[n, L]`` booleans: label ``l``'s name occurs in text ``i`` as a whole phrase (case-insensitive)."""
    return np.array([[bool(p.search(t)) for p in patterns] for t in texts], dtype=bool).reshape(len(texts),
                                                                                                 len(patterns))


def _confusion(ref_pos: np.ndarray, cand_pos: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, ...]:
    return ((ref_pos & cand_pos & known).astype(np.float64), (~ref_pos & cand_pos & known).astype(np.float64),
            (ref_pos & ~cand_pos & known).astype(np.float64))


def _chexpert_counts(refs: list[str], cands: dict[str, list[str]], data_root: Any) -> dict[str, dict[str, tuple]]:
    """Per source, ``{"5"/"14": (tp, fp, fn)}`` as ``[n, L]`` arrays, from one labeler pass.

    All sources are labelled in one :class:`~radaudit.metrics.clinical.ChexpertF1` call (each distinct
    text once), and the per-label counts are rebuilt from its raw ``ref_labels``/``cand_labels`` with
    the metric's own uncertain policy and empty-pair rule, so they sum to its ``tp/fp/fn``.
    """
    metric = build_metric("chexpert_f1_micro_all14", data_root=data_root)
    sources = list(cands)
    n = len(refs)
    all_refs = refs * len(sources)
    all_cands = [c for s in sources for c in cands[s]]
    det = metric.compute(all_refs, all_cands).details
    out: dict[str, dict[str, tuple]] = {}
    for k, src in enumerate(sources):
        sl = slice(k * n, (k + 1) * n)
        both_empty = np.array([not r.strip() and not c.strip() for r, c in zip(refs, cands[src], strict=True)],
                              dtype=bool)
        out[src] = {}
        for key, label_set in (("5", "top5"), ("14", "all14")):
            cols = list(label_columns(label_set))
            r_pos, r_known = binarize_labels(det["ref_labels"][cols].to_numpy(float)[sl], metric.uncertain)
            c_pos, c_known = binarize_labels(det["cand_labels"][cols].to_numpy(float)[sl], metric.uncertain)
            out[src][key] = _confusion(r_pos, c_pos, r_known & c_known & ~both_empty[:, None])
    return out


@dataclass
class _SourceStats:
    """One source's per-report sufficient statistics (rows = test reports)."""

    bleu: np.ndarray | None = None  # [n, 10]
    means: dict[str, tuple[np.ndarray, np.ndarray]] | None = None  # metric -> (value with NaN→0, defined 0/1)
    counts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # "5"/"14"/"" -> tp, fp, fn


def _values(stats: _SourceStats, metric: str, w: np.ndarray) -> np.ndarray:
    """The metric on each row of the ``[b, n]`` count matrix ``w`` (a resample; all ones = the full set)."""
    if metric in ("bleu1", "bleu4"):
        return _bleu_from_stats(w @ stats.bleu, int(metric[-1]))
    if stats.means is not None and metric in stats.means:
        v, d = stats.means[metric]
        den = w @ d
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, (w @ v) / den, np.nan)
    parts = metric.split("_")  # f1_micro_5, f1_macro_14, f1_micro
    tp, fp, fn = stats.counts[parts[2] if len(parts) == 3 else ""]
    wtp, wfn = w @ tp, w @ fn
    out = _f1_rows(wtp, w @ fp, wfn, parts[1])
    if parts[1] == "macro":  # a resample that lost every reference positive of a label of the test set: undefined
        present = (tp + fn).sum(axis=0) > 0
        out[((wtp + wfn)[:, present] == 0).any(axis=1)] = np.nan
    return out


def _count_blocks(n: int, n_bootstrap: int, seed: int, strata: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """``[b, n]`` float count matrices (how often each test report is drawn) of resampled test reports.

    :func:`radaudit.stats.resample_weights` (seeded ``default_rng(seed)``, blocks of bounded memory): iid
    over all ``n`` reports, or — with ``strata`` (an ``[n, L]`` 0/1 matrix of reference labels) — within
    each distinct label set, the draws of Table 4's stratified AUROC bootstrap. One test report: every
    resample is that report (nothing to draw).
    """
    if n == 1:
        return iter([np.ones((n_bootstrap, 1))])
    return resample_weights(n, n_bootstrap, seed=seed, strata=strata)


def _check_args(references: Any, candidates_by_source: Any, baseline: str, n_bootstrap: Any, seed: Any,
                confidence: Any, label_mode: str,
                label_names: Any) -> tuple[list[str], dict[str, list[str]], list[str]]:
    if label_mode not in LABEL_MODES:
        raise ParamsError(f"label_mode={label_mode!r} is not allowed: use one of {', '.join(LABEL_MODES)}.")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, numbers.Integral) or n_bootstrap < 1:
        raise ParamsError(f"n_bootstrap must be a positive integer (e.g. 1000), got {n_bootstrap!r}.")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ParamsError(f"confidence must lie in (0, 1), e.g. 0.95; got {confidence!r}.")
    names: list[str] = []
    if label_mode == "labels":
        if label_names is None or isinstance(label_names, str) or not list(label_names):
            raise ParamsError("label_mode='labels' needs label_names, the label names to look for in the reports, "
                              "e.g. ['COVID-19', 'Other pneumonia', 'ARDS', 'No Finding'].")
        names = [str(x) for x in label_names]
        if len({n.casefold() for n in names}) != len(names) or any(not n.strip() for n in names):
            raise ParamsError(f"label_names must be distinct, non-blank names; got {names}.")
    elif label_names is not None:
        raise ParamsError("label_names is only used with label_mode='labels' (the CheXpert labeler has its own "
                          "14 observations).")
    if isinstance(references, str):
        raise DataFormatError("references must be a sequence of reports (one per real test study), not one string.")
    refs = check_texts(list(references), "references")
    if not refs:
        raise DataFormatError("references is empty: there is no test report to score against.")
    blank = [i for i, r in enumerate(refs) if not r.strip()]
    if blank:
        raise DataFormatError(f"references {blank[:10]} are empty: a test study without a reference report cannot "
                              "be scored; leave such studies out of the test set (and say how many).")
    if not isinstance(candidates_by_source, Mapping) or not candidates_by_source:
        raise ParamsError("candidates_by_source must be a non-empty mapping {source: one generated report per "
                          "test study}.")
    cands: dict[str, list[str]] = {}
    for src, c in candidates_by_source.items():
        if isinstance(c, str):
            raise DataFormatError(f"The candidates of {src!r} are one string; pass one report per test study.")
        lst = check_texts(list(c), f"candidates of {src!r}")
        if len(lst) != len(refs):
            raise DataFormatError(f"{len(refs)} references but {len(lst)} candidates for {src!r}: pass one "
                                  "generated report per test study, in the same order.")
        cands[str(src)] = lst
    if baseline not in cands:
        raise ParamsError(f"The baseline {baseline!r} is not among the sources {list(cands)}; add the reports of "
                          "the model trained on real data under that name (or set baseline=).")
    return refs, cands, names


def _source_stats(refs: list[str], cands: dict[str, list[str]], metrics: list[str], label_mode: str,
                  label_names: list[str], data_root: Any) -> tuple[dict[str, _SourceStats], dict[str, str]]:
    """Per source, the per-report statistics of the requested metrics; and notes of metrics that cannot run."""
    stats = {src: _SourceStats(means={}) for src in cands}
    unavailable: dict[str, str] = {}
    if "bleu1" in metrics or "bleu4" in metrics:
        for src, b in _bleu_stats(refs, cands).items():
            stats[src].bleu = b
    mean_metrics = [m for m in ("rougeL", "radgraph_f1") if m in metrics]
    for m in mean_metrics:
        try:
            metric = build_metric(m)
            per = {src: metric.compute(refs, c).per_sample for src, c in cands.items()}
        except MetricUnavailableError as err:
            how = f" ({RADGRAPH_HOW})" if m == "radgraph_f1" else ""
            unavailable[m] = f"{METRIC_LABELS[m]} not computed: {err}{how}"
            continue
        for src, v in per.items():
            v = np.asarray(v, dtype=np.float64)
            stats[src].means[m] = (np.nan_to_num(v, nan=0.0), np.isfinite(v).astype(np.float64))
    if any(m.startswith("f1_") for m in metrics):
        if label_mode == "chexpert":
            counts = _chexpert_counts(refs, cands, data_root)
            for src in cands:
                stats[src].counts = counts[src]
        else:
            pats = _phrase_patterns(label_names)
            r_pos = _phrase_matrix(refs, pats)
            for src, c in cands.items():
                stats[src].counts = {"": _confusion(r_pos, _phrase_matrix(c, pats), np.ones_like(r_pos))}
    return stats, unavailable


def report_utility_long(references: Sequence[str], candidates_by_source: Mapping[str, Sequence[str]], *,
                        metrics: Sequence[str] = DEFAULT_METRICS, label_mode: str = "chexpert",
                        label_names: Sequence[str] | None = None, baseline: str = "real", n_bootstrap: int = 1000,
                        seed: int = 0, confidence: float = 0.95, stratify: bool | None = None,
                        data_root: str | os.PathLike | None = None, min_positives: int = 0) -> pd.DataFrame:
    """Table 5 in long form: every metric per training source on the real test reports, with paired bootstrap CIs.

    Args:
        references: the real test studies' reports (the references), one per study; none may be blank.
        candidates_by_source: ``{source: generated reports}``, one per reference in the same order
            (:func:`retrieval_reports` in the demo, :func:`read_generated_reports` on the paper path);
            must contain ``baseline``. Empty reports are scored (as empty) and counted in ``n_empty``;
            ``None``/NaN is an error (use ``""``).
        metrics: names from ``bleu1, bleu4, rougeL, radgraph_f1`` and ``"f1"`` (expanded per
            ``label_mode``, see :data:`F1_METRICS`; the expanded names are accepted too).
        label_mode: ``"chexpert"`` (CheXpert labeler on prose reports) or ``"labels"`` (label-name
            phrases in captions; needs ``label_names``).
        label_names: the labels for ``label_mode="labels"``.
        baseline: the source trained on real data; other sources get ``diff = source − baseline``.
        n_bootstrap, seed, confidence: the bootstrap over test reports (shared by every source).
        stratify: resample the test reports within each set of reference labels (the label F1's
            labels; :func:`radaudit.stats.resample_weights` with ``strata``, as Table 4 does),
            so every resample keeps each label's number of reference positives. ``None`` (default):
            ``True`` for ``label_mode="labels"`` (a handful of label sets; the demo test set has 2
            ARDS cases, which iid resampling loses in ~13 % of the resamples, leaving the macro F1's
            CI undefined), ``False`` for ``"chexpert"`` (prose reports have many label sets of a single
            report, whose variance stratification would remove). Needs a label F1 metric.
        data_root: where the CheXpert phrase lists are (default: ``$RADAUDIT_DATA``).
        min_positives: a **macro** label F1 (an unweighted mean over labels, as driven by a label with
            2 reference positives as by one with 80) is tested against the baseline only when every
            label in it has at least this many reference positives; otherwise its CI and difference
            are reported and ``p_value`` is NaN with the note ``significance n/a`` (0: always test).
            Micro F1 pools the counts of all labels and BLEU/ROUGE average over all test reports: tested.

    Returns:
        One row per source (baseline first, then the mapping's order) × metric, columns
        :data:`LONG_COLUMNS`: ``estimate`` (the metric on all ``n`` test reports), ``low``/``high``
        (percentile CI), ``n_empty`` (empty candidate reports), ``diff``/``diff_low``/``diff_high``
        (paired bootstrap; NaN for the baseline), ``p_value`` (two-sided bootstrap p of diff = 0),
        ``p_bh`` (Benjamini–Hochberg over all non-baseline rows), ``note``. A metric that cannot
        run here (F1-RadGraph offline) has NaN values and a note saying how to enable it. The
        settings are in ``attrs`` (``baseline``, ``label_mode``, ``label_names``, ``n_bootstrap``,
        ``seed``, ``confidence``, ``metrics``). Formulas: module docstring.
    """
    refs, cands, names = _check_args(references, candidates_by_source, baseline, n_bootstrap, seed, confidence,
                                     label_mode, label_names)
    mets = expand_metrics(metrics, label_mode)
    has_labels = any(m.startswith("f1_") for m in mets)
    if stratify is None:
        stratify = label_mode == "labels" and has_labels
    elif not isinstance(stratify, (bool, np.bool_)):
        raise ParamsError(f"stratify must be True, False or None (automatic), got {stratify!r}.")
    elif stratify and not has_labels:
        raise ParamsError("stratify=True resamples within reference label sets and needs a label F1 metric ('f1') "
                          "to define them; add it to metrics or set stratify=False.")
    stats, unavailable = _source_stats(refs, cands, mets, label_mode, names, data_root)
    sources = [baseline, *[s for s in cands if s != baseline]]
    live = [m for m in mets if m not in unavailable]
    n = len(refs)
    ones = np.ones((1, n))
    est = {(s, m): float(_values(stats[s], m, ones)[0]) for s in sources for m in live}
    reps: dict[tuple[str, str], list[np.ndarray]] = {key: [] for key in est}
    strata = None
    if stratify:  # reference positives (tp + fn) of every label, the same for every source
        strata = np.hstack([tp + fn for tp, _, fn in stats[baseline].counts.values()]) > 0
    for w in _count_blocks(n, int(n_bootstrap), int(seed), strata):
        for (src, m), parts in reps.items():
            parts.append(_values(stats[src], m, w))
    rep = {key: np.concatenate(v) for key, v in reps.items()}

    def interval(estimate: float, r: np.ndarray, name: str) -> tuple[float, float, str]:
        try:
            res = interval_from_replicates(estimate, r, None, "percentile", float(confidence), n, name, MAX_FAILED)
        except BootstrapError:
            bad = int((~np.isfinite(r)).sum())
            return math.nan, math.nan, (f"CI not computed: {bad} of {len(r)} resamples lost every reference "
                                        f"positive of a label (more than {MAX_FAILED:.0%})")
        why = (f"{res.n_failed} of {len(r)} resamples lost every reference positive of a label and were left out "
               "of the CI" if res.n_failed else "")
        return res.low, res.high, why

    rows = []
    for s in sources:
        n_empty = sum(1 for c in cands[s] if not c.strip())
        empty_note = f"{n_empty} of {n} generated reports are empty (scored as empty reports)" if n_empty else ""
        for m in mets:
            row = {"source": s, "metric": m, "estimate": math.nan, "low": math.nan, "high": math.nan, "n": n,
                   "n_empty": n_empty, "diff": math.nan, "diff_low": math.nan, "diff_high": math.nan,
                   "p_value": math.nan, "p_bh": math.nan}
            notes = [empty_note]
            if m in unavailable:
                notes.append(unavailable[m])
            else:
                row["estimate"] = est[(s, m)]
                row["low"], row["high"], why = interval(est[(s, m)], rep[(s, m)], f"{m} of {s}")
                notes.append(why)
                if s != baseline:
                    d = rep[(s, m)] - rep[(baseline, m)]
                    row["diff"] = est[(s, m)] - est[(baseline, m)]
                    row["diff_low"], row["diff_high"], why = interval(row["diff"], d, f"{m}: {s} - {baseline}")
                    notes.append(why)
                    row["p_value"] = bootstrap_pvalue(d) if math.isfinite(row["diff_low"]) else math.nan
                    if m.startswith("f1_macro") and min_positives:
                        parts = m.split("_")
                        tp, _, fn = stats[baseline].counts[parts[2] if len(parts) == 3 else ""]
                        pos = (tp + fn).sum(axis=0)
                        few = [(names[j] if j < len(names) else f"label {j}", int(k)) for j, k in enumerate(pos)
                               if 0 < k < min_positives]
                        if few:
                            row["p_value"] = math.nan
                            notes.append("significance n/a: " + ", ".join(f"{lab} has {k} reference positive(s)"
                                                                          for lab, k in few)
                                         + f" (< {min_positives})")
            row["note"] = "; ".join(dict.fromkeys(x for x in notes if x))
            rows.append(row)
    long = pd.DataFrame(rows, columns=list(LONG_COLUMNS))
    tested = long["source"] != baseline
    if tested.any():
        _, adj = benjamini_hochberg(long.loc[tested, "p_value"].to_numpy(float))
        long.loc[tested, "p_bh"] = adj
    long.attrs.update({"baseline": baseline, "label_mode": label_mode, "label_names": names,
                       "n_bootstrap": int(n_bootstrap), "seed": int(seed), "confidence": float(confidence),
                       "stratify": bool(stratify), "metrics": mets})
    return long


# --- 4. Table 5 --------------------------------------------------------------------------------------

def table5(long: pd.DataFrame, decimals: int = 3, *, baseline: str | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Table 5 of paper 004: rows = training source (baseline first), columns = metrics in the paper's order.

    Cells are ``"0.123 [0.100, 0.150]"`` (estimate and its CI, :func:`radaudit.tables.format_ci`) with
    ``decimals`` decimals, followed by ``*`` when the source differs from the baseline with a
    Benjamini–Hochberg-adjusted paired-bootstrap p (``p_bh``) below ``alpha``; a metric that could
    not be computed prints ``n/a``. Columns use the paper's names (:data:`METRIC_LABELS`) in its
    order (:data:`PAPER_ORDER`: BLEU-1, BLEU-4, ROUGE-L, F1-RadGraph, Micro F1-5, Micro F1-14, then
    the macro values it leaves out). The paper's table is transposed (sources as columns) and
    prints BLEU × 100; here every metric is on a 0–1 scale. ``baseline`` defaults to
    ``long.attrs["baseline"]``, else the first source of ``long`` (where :func:`report_utility_long`
    puts it). The legend is in ``attrs["legend"]``.
    """
    if not isinstance(long, pd.DataFrame):
        raise DataFormatError(f"long must be a DataFrame (report_utility_long output), got {type(long).__name__}.")
    missing = [c for c in ("source", "metric", "estimate", "low", "high", "p_bh") if c not in long.columns]
    if missing:
        raise DataFormatError(f"long has no column(s) {missing}; pass report_utility_long output.")
    if long.empty:
        raise DataFormatError("long is empty: nothing to tabulate.")
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral) or decimals < 0:
        raise ParamsError(f"decimals must be a non-negative integer, got {decimals!r}.")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ParamsError(f"alpha must lie in (0, 1), got {alpha!r}.")
    sources = list(pd.unique(long["source"].astype(str)))
    base = baseline if baseline is not None else long.attrs.get("baseline", sources[0])
    if base not in sources:
        raise ParamsError(f"The baseline {base!r} is not among the sources {sources}.")
    sources = [base, *[s for s in sources if s != base]]
    present = list(pd.unique(long["metric"].astype(str)))
    cols = [m for m in PAPER_ORDER if m in present] + [m for m in present if m not in PAPER_ORDER]

    def cell(r: pd.Series) -> str:
        text = format_ci(r["estimate"], r["low"], r["high"], int(decimals))
        p = r["p_bh"]
        return text + ("*" if r["source"] != base and pd.notna(p) and float(p) < alpha else "")

    data = long.assign(source=long["source"].astype(str), metric=long["metric"].astype(str))
    data = data.assign(_cell=[cell(r) for _, r in data.iterrows()])
    wide = data.pivot_table(index="source", columns="metric", values="_cell", aggfunc="first")
    wide = wide.reindex(index=sources, columns=cols).fillna("n/a")
    wide.columns = [METRIC_LABELS.get(c, c) for c in cols]
    wide.index.name, wide.columns.name = "training source", None
    wide.attrs["legend"] = (f"estimate [{long.attrs.get('confidence', 0.95):.0%} bootstrap CI over test reports]; "
                            f"'*' differs from {base} (paired bootstrap, Benjamini-Hochberg p < {alpha:g}); all "
                            "metrics on a 0-1 scale (the paper prints BLEU x 100).")
    return wide


def bars_frame(long: pd.DataFrame) -> pd.DataFrame:
    """:func:`report_utility_long` in the layout of :func:`radaudit.audits.synthetic_cxr.plots.plot_fidelity_bars`.

    Columns ``generator, metric, value, ci_low, ci_high`` (metrics under their paper names, in the
    paper's order), so Table 5 is drawn with the existing bar figure — one panel per metric, one bar
    + CI per training source, ``n/a`` for a metric that could not run::

        fig = plot_fidelity_bars(bars_frame(long), first="real")
        fig.suptitle("Report generation on the real test set (Table 5)")  # replaces its Table-1 title
    """
    if not isinstance(long, pd.DataFrame) or long.empty:
        raise DataFormatError("long must be a non-empty DataFrame (report_utility_long output).")
    missing = [c for c in ("source", "metric", "estimate", "low", "high") if c not in long.columns]
    if missing:
        raise DataFormatError(f"long has no column(s) {missing}; pass report_utility_long output.")
    present = list(pd.unique(long["metric"].astype(str)))
    order = [m for m in PAPER_ORDER if m in present] + [m for m in present if m not in PAPER_ORDER]
    out = long.assign(_k=long["metric"].astype(str).map({m: i for i, m in enumerate(order)}))
    out = out.sort_values("_k", kind="stable")
    return pd.DataFrame({"generator": out["source"].astype(str).to_numpy(),
                         "metric": [METRIC_LABELS.get(m, m) for m in out["metric"].astype(str)],
                         "value": out["estimate"].to_numpy(float), "ci_low": out["low"].to_numpy(float),
                         "ci_high": out["high"].to_numpy(float)})
