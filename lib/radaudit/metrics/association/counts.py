"""What the association metrics count: word tokens (paper §3: stop words removed) and per-report count matrices.

See the package docstring (:mod:`radaudit.metrics.association`) for the paper and the decisions taken.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from radaudit.errors import RadauditError
from radaudit.text.deid import strip_placeholders

__all__ = ["STOPWORDS_FILE", "AssociationCounts", "AssociationInputError", "count_reports", "load_stopwords",
           "tokenize_for_association"]

STOPWORDS_FILE = "stopwords_english_nltk.txt"
"""The default stop-word list under ``radaudit/resources/`` (NLTK's 179 English stop words)."""


class AssociationInputError(RadauditError, ValueError):
    """The corpus cannot be audited: a group without reports, missing texts, no tokens, bad params."""


# ----------------------------------------------------------------------------------------------
# tokenisation


@functools.lru_cache(maxsize=4)
def load_stopwords(name: str = STOPWORDS_FILE) -> frozenset[str]:
    """A stop-word list shipped in ``radaudit/resources/`` (default: NLTK's English list, 179 words).

    The file (see its header for the source and licence) has one word per line; ``#`` lines and
    blank lines are ignored. Words are lower-cased.
    """
    text = resources.files("radaudit").joinpath("resources", name).read_text(encoding="utf-8")
    return frozenset(w.strip().lower() for w in text.splitlines() if w.strip() and not w.lstrip().startswith("#"))


_WORD = re.compile(r"[^\W\d_]+")  # maximal runs of (Unicode) letters: digits, '_', punctuation split


def _stopword_set(stopwords: Iterable[str] | None) -> frozenset[str]:
    if stopwords is None:
        return load_stopwords()
    if isinstance(stopwords, str):
        raise AssociationInputError("stopwords must be a collection of words (or None for the default list), not a string")
    return frozenset(w.lower() for w in stopwords)


def tokenize_for_association(text: str, stopwords: Iterable[str] | None = None, min_length: int = 2) -> list[str]:
    """The word tokens of ``text`` that the association metrics count (paper §3: stop words removed).

    0. de-identification placeholders (IU's ``XXXX``, MIMIC's ``___`` and ``[** **]`` tags,
       ``<NAME>``: :mod:`radaudit.text.deid`) are removed: they are not clinical words;
    1. lower-case;
    2. tokens are maximal runs of letters (Unicode letters; ``[^\\W\\d_]+``): digits, punctuation,
       hyphens, apostrophes and underscores separate tokens and are never part of one, so numbers
       are dropped ("12", "3.5"), "x-ray" gives "x", "ray", "patient's" gives "patient", "s", and
       "t12" gives "t";
    3. stop words are removed (``stopwords=None``: NLTK's English list, see :func:`load_stopwords`;
       pass a collection for another list, ``()`` for none). The list's contracted forms
       ("don't") never match a token; their fragments ("don", "t") are in the list;
    4. tokens shorter than ``min_length`` characters (default 2: stray letters such as the "x" of
       "x-ray" or the "t" of "t12") are dropped;
    5. a token made only of two or more x's is a placeholder and is dropped, also where step 0 left it
       because it was glued to digits ("XXXX12" gives no token; "xxiv" stays a word).

    ``""`` (or whitespace) gives ``[]``: an empty report contributes no tokens.
    """
    return _tokens(text, _stopword_set(stopwords), min_length)


def _tokens(text: str, stop: frozenset[str], min_length: int) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} (use '' for an empty report)")
    return [t for t in _WORD.findall(strip_placeholders(text).lower()) if _counted(t, stop, min_length)]


def _counted(token: str, stop: frozenset[str], min_length: int) -> bool:
    """Steps 3–5 of :func:`tokenize_for_association` for one lower-cased letter run."""
    return len(token) >= min_length and token not in stop and not (len(token) >= 2 and token.strip("x") == "")


# ----------------------------------------------------------------------------------------------
# count matrices


@dataclass(frozen=True)
class AssociationCounts:
    """Token counts of a corpus of (reference, prediction, group) reports, one row per report.

    ``reference`` and ``prediction`` are sparse ``[n_reports × V]`` CSR matrices of token counts
    over the shared, alphabetically sorted vocabulary ``vocab``; ``group[i]`` is 0 for
    ``groups[0]`` and 1 for ``groups[1]``.
    """

    vocab: np.ndarray
    reference: sparse.csr_matrix
    prediction: sparse.csr_matrix
    group: np.ndarray
    groups: tuple[str, str]

    @property
    def n_reports(self) -> int:
        return int(self.group.shape[0])

    @property
    def group_sizes(self) -> dict[str, int]:
        sizes = np.bincount(self.group, minlength=2)
        return {str(self.groups[0]): int(sizes[0]), str(self.groups[1]): int(sizes[1])}

    def group_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """``(c_ref, c_pred)``, each ``[V × 2]``: column k is the count per word in group ``groups[k]``."""
        onehot = sparse.csr_matrix(
            (np.ones(self.n_reports), (np.arange(self.n_reports), self.group)), shape=(self.n_reports, 2)
        )
        return (np.asarray((self.reference.T @ onehot).todense(), dtype=float),
                np.asarray((self.prediction.T @ onehot).todense(), dtype=float))

    def restrict(self, min_count: int) -> AssociationCounts:
        """Drop words whose total count (both corpora, both groups) is below ``min_count``."""
        if min_count <= 1:
            return self
        total = np.asarray(self.reference.sum(axis=0)).ravel() + np.asarray(self.prediction.sum(axis=0)).ravel()
        keep = np.flatnonzero(total >= min_count)
        return AssociationCounts(self.vocab[keep], self.reference[:, keep].tocsr(), self.prediction[:, keep].tocsr(),
                                 self.group, self.groups)


_SEP = "\n\x00\n"  # between texts: no token, placeholder or PHI tag ('.' stops at \n) can span it
_WORD_OR_SEP = re.compile(r"[^\W\d_]+|\x00")
_ASCII_WORD_OR_SEP = re.compile(r"[a-z]+|\x00")  # the same on lower-cased ASCII text, ~1.6x faster


def _count_matrix(texts: list[str], stop: frozenset[str], min_length: int) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``[len(texts) × V]`` token counts (:func:`tokenize_for_association` per text) and the sorted vocabulary.

    Corpus-level, with the same tokens as the per-text function (a test checks): each distinct text is
    tokenised once (generated reports repeat), the distinct texts are joined with a separator that no
    token, placeholder or PHI tag can cross, placeholders are stripped, the string lower-cased and split
    into words in one pass each, and stop words and short tokens are dropped per vocabulary entry rather
    than per token. About 5x faster than tokenising report by report (benchmarks/bench_association.py).
    """
    where, uniq = pd.factorize(pd.Series(texts, dtype=object), sort=False)  # distinct texts, first-seen order
    # A NUL inside a text (a random-weight model writes anything) would read as a separator: it is no letter
    # and no placeholder character, so a space in its place changes no token.
    # Step 0 (strip_placeholders) changes the letter runs only through PHI tags and <TAGS>: x-runs are
    # dropped per vocabulary entry (step 5) and underscores never join a token. Only texts with '<' or
    # '[**' need the regex, which is the slowest part of tokenising.
    texts_u = [t.replace("\x00", " ") if "\x00" in t else t for t in uniq]
    big = _SEP.join(strip_placeholders(t) if ("<" in t or "[**" in t) else t for t in texts_u).lower() + _SEP
    toks = (_ASCII_WORD_OR_SEP if big.isascii() else _WORD_OR_SEP).findall(big)
    codes, words = pd.factorize(pd.Series(toks, dtype=object), sort=False)
    words = np.asarray(words, dtype=object)
    is_sep = np.array([w == "\x00" for w in words], dtype=bool)
    keep_word = np.array([not sep and _counted(w, stop, min_length) for w, sep in zip(words, is_sep)], dtype=bool)
    tok_sep = is_sep[codes]
    text_of = np.cumsum(tok_sep) - tok_sep  # token i belongs to distinct text text_of[i]
    keep = keep_word[codes]
    kept = np.flatnonzero(keep_word)
    vocab = words[kept]
    order = np.argsort(vocab.astype(str), kind="stable")
    vocab = vocab[order]
    remap = np.full(len(words), -1, dtype=np.int64)
    remap[kept[order]] = np.arange(len(kept))
    u = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int64), (text_of[keep], remap[codes[keep]])),
                          shape=(len(uniq), len(vocab)))
    u.sum_duplicates()
    return u[where].tocsr(), vocab


def _as_list(values: Sequence[Any]) -> list[Any]:
    """A list of the values (``tolist()`` where there is one: iterating an Arrow-backed column is slow)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def count_reports(
    references: Sequence[str],
    predictions: Sequence[str],
    group: Sequence[Any],
    *,
    groups: tuple[Any, Any] = ("F", "M"),
    stopwords: Iterable[str] | None = None,
    min_length: int = 2,
) -> AssociationCounts:
    """Tokenise every report once (:func:`tokenize_for_association`) into sparse count matrices.

    ``group`` values must all be one of ``groups`` (filter unknown values first, as
    :func:`association_audit` does). The vocabulary is the sorted union of the tokens of both corpora.
    """
    refs, preds, labels = _as_list(references), _as_list(predictions), _as_list(group)
    if not (len(refs) == len(preds) == len(labels)):
        raise AssociationInputError(
            f"references ({len(refs)}), predictions ({len(preds)}) and group ({len(labels)}) must have the same length")
    g0, g1 = groups
    lab = pd.Series(labels, dtype=object)
    codes = np.where(lab.isna(), -1, np.where(lab == g0, 0, np.where(lab == g1, 1, -1))).astype(np.int64)
    if (codes < 0).any():
        bad = sorted({repr(x) for x, c in zip(labels, codes) if c < 0})
        raise AssociationInputError(f"group values {bad} are not in groups={groups!r}; filter them out first")
    stop = _stopword_set(stopwords)
    n = len(refs)
    texts = refs + preds
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"text must be a str, got {type(t).__name__} (use '' for an empty report)")
    mat, vocab = _count_matrix(texts, stop, min_length)
    return AssociationCounts(vocab=vocab, reference=mat[:n].tocsr(), prediction=mat[n:].tocsr(), group=codes,
                             groups=(g0, g1))
