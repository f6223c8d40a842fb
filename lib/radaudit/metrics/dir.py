"""ΔDIR: the change in the male-to-female token ratio from references to predictions (paper 000).

Parikh et al. 2026 (paper 000, §3 "Our Metrics" (iv) and Table 1 "Fairness") report "Disparity
Impact Ratio (ΔDIR) [19], the change in male-to-female token ratio between reference and
prediction", after stop-word removal ("Stop words are removed prior to all association-based
metric computation"). [19] is Parikh, Das & Feragen (2025), *Investigating label bias and
representational sources of age-related disparities in medical segmentation*, arXiv 2511.00477
(a segmentation paper; its text was not available to us, so nothing here is taken from it). Paper
000 gives no formula beyond that sentence, so we write it out::

    DIR(D)  = N_M(D) / N_F(D)              N_g(D): tokens (after stop-word removal) in the reports
                                           of corpus D whose patient is in group g
    ΔDIR    = DIR(pred) − DIR(ref)

(the "change" is taken as a difference, which is what the signed values of Table 1, −0.32 … 0.01,
read as). ΔDIR > 0: the generated reports spend relatively more words on male patients than the
references do (a verbosity shift towards men); < 0: towards women.

- ``per_report=True`` divides each group's tokens by its number of reports first,
  ``DIR = (N_M / n_M) / (N_F / n_F)`` (a ratio of mean report lengths). On the paper's sex-balanced
  sample (N = 2,000, 50/50) both versions are equal; on an unbalanced corpus the plain token ratio
  mostly measures the group sizes, so use ``per_report=True`` there (and say so). Default: the
  paper's plain token ratio.
- **Zero tokens (chosen behaviour)**: when the *denominator* group (female by default) has no
  tokens in a corpus, DIR is a division by zero: :class:`DIRUndefinedError` is raised, naming the
  corpus and group (``on_zero="nan"`` returns NaN instead, for sweeps that must not stop). A group
  with no *reports* at all raises the same error (an empty group is a data problem, not a ratio).
  A numerator group with reports but no tokens gives DIR = 0, which is a defined ratio.
- Groups are labels in a column (sex ``"M"``/``"F"`` by default, any two labels via
  ``numerator``/``denominator``); rows with any other label (``"O"``, missing) are not counted in
  either group and are reported in ``n_other``.
- Tokens: by default exactly the tokens CAD/WAE count
  (:func:`radaudit.metrics.association.tokenize_for_association`: lower-cased letter runs, NLTK
  English stop words and 1-letter fragments removed), so that ΔDIR and CAD describe the same
  words; ``tokenize`` (a callable ``str -> list[str]``) replaces it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics.association import tokenize_for_association
from radaudit.metrics.base import MetricInputError

__all__ = ["DIRResult", "DIRUndefinedError", "default_tokens", "delta_dir", "disparity_ratio", "group_token_counts"]


class DIRUndefinedError(RadauditError, ValueError):
    """DIR is undefined: the denominator group has no tokens, or a group has no reports."""


def default_tokens(text: str) -> list[str]:
    """The tokens CAD counts: :func:`radaudit.metrics.association.tokenize_for_association` (stop words removed)."""
    return tokenize_for_association(text)


def _check_inputs(texts: Sequence[str], groups: Sequence[Any], what: str) -> list[str]:
    if isinstance(texts, str):
        raise MetricInputError(f"{what} must be a sequence of report strings, not a single string.")
    texts = list(texts)
    groups = list(groups)
    if len(texts) != len(groups):
        raise MetricInputError(f"{len(texts)} {what} but {len(groups)} group labels: pass one label per report.")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise MetricInputError(f"{what} {bad[:10]} are not strings (None/NaN included); use '' for an empty report.")
    return texts


def _missing(g: Any) -> bool:
    if g is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(g)) if pd.api.types.is_scalar(g) else False
    except (TypeError, ValueError):
        return False


def group_token_counts(texts: Sequence[str], groups: Sequence[Any], *,
                       tokenize: Callable[[str], Sequence[str]] | None = None) -> dict[Any, tuple[int, int]]:
    """``{group: (n_tokens, n_reports)}`` over the reports (every label that occurs; missing labels → ``None``)."""
    texts = _check_inputs(texts, groups, "texts")
    tok = tokenize or default_tokens
    out: dict[Any, list[int]] = {}
    for text, g in zip(texts, groups):
        key = None if _missing(g) else g
        c = out.setdefault(key, [0, 0])
        c[0] += len(tok(text))
        c[1] += 1
    return {g: (v[0], v[1]) for g, v in out.items()}


def _ratio(counts: dict[Any, tuple[int, int]], numerator: Any, denominator: Any, per_report: bool, corpus: str,
           on_zero: str) -> float:
    for g in (numerator, denominator):
        if counts.get(g, (0, 0))[1] == 0:
            if on_zero == "nan":
                return math.nan
            raise DIRUndefinedError(f"group {g!r} has no reports in the {corpus} corpus, so DIR is undefined. "
                                    f"Groups present: {sorted(map(repr, counts))}. Check the group labels "
                                    f"(numerator={numerator!r}, denominator={denominator!r}).")
    (t_num, n_num), (t_den, n_den) = counts[numerator], counts[denominator]
    if t_den == 0:
        if on_zero == "nan":
            return math.nan
        raise DIRUndefinedError(f"group {denominator!r} has {n_den} reports but no tokens (after stop-word removal) in "
                                f"the {corpus} corpus: DIR = {t_num}/0 is undefined. This happens when a model emits "
                                "empty reports; report it as such (on_zero='nan' returns NaN instead of raising).")
    if per_report:
        return (t_num / n_num) / (t_den / n_den)
    return t_num / t_den


def disparity_ratio(texts: Sequence[str], groups: Sequence[Any], *, numerator: Any = "M", denominator: Any = "F",
                    per_report: bool = False, tokenize: Callable[[str], Sequence[str]] | None = None,
                    on_zero: Literal["raise", "nan"] = "raise", corpus: str = "given") -> float:
    """DIR of one corpus: ``N_numerator / N_denominator`` tokens (module docstring)."""
    if on_zero not in ("raise", "nan"):
        raise ParamsError(f"on_zero={on_zero!r} is not allowed: use 'raise' or 'nan'.")
    if numerator == denominator:
        raise ParamsError(f"numerator and denominator are the same group ({numerator!r}).")
    return _ratio(group_token_counts(texts, groups, tokenize=tokenize), numerator, denominator, per_report, corpus,
                  on_zero)


@dataclass(frozen=True)
class DIRResult:
    """ΔDIR = ``dir_prediction − dir_reference``, with the token and report counts behind it."""

    delta: float
    dir_reference: float
    dir_prediction: float
    numerator: Any
    denominator: Any
    per_report: bool
    counts: dict[str, dict[Any, tuple[int, int]]] = field(default_factory=dict)
    n_other: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A flat row: ΔDIR, both DIRs and the token/report counts of the two groups in both corpora."""
        row: dict[str, Any] = {"delta_dir": self.delta, "dir_reference": self.dir_reference,
                               "dir_prediction": self.dir_prediction, "per_report": self.per_report,
                               "n_other": self.n_other}
        for corpus in ("reference", "prediction"):
            for g in (self.numerator, self.denominator):
                t, n = self.counts.get(corpus, {}).get(g, (0, 0))
                row[f"tokens_{corpus}_{g}"] = t
                row[f"reports_{corpus}_{g}"] = n
        return row


def delta_dir(references: Sequence[str], predictions: Sequence[str], groups: Sequence[Any], *,
              numerator: Any = "M", denominator: Any = "F", per_report: bool = False,
              tokenize: Callable[[str], Sequence[str]] | None = None,
              on_zero: Literal["raise", "nan"] = "raise") -> DIRResult:
    """ΔDIR = DIR(predictions) − DIR(references) over aligned (reference, prediction, group) rows."""
    if on_zero not in ("raise", "nan"):
        raise ParamsError(f"on_zero={on_zero!r} is not allowed: use 'raise' or 'nan'.")
    if numerator == denominator:
        raise ParamsError(f"numerator and denominator are the same group ({numerator!r}).")
    refs = _check_inputs(references, groups, "references")
    preds = _check_inputs(predictions, groups, "predictions")
    c_ref = group_token_counts(refs, groups, tokenize=tokenize)
    c_pred = group_token_counts(preds, groups, tokenize=tokenize)
    d_ref = _ratio(c_ref, numerator, denominator, per_report, "reference", on_zero)
    d_pred = _ratio(c_pred, numerator, denominator, per_report, "prediction", on_zero)
    n_other = sum(n for g, (_, n) in c_ref.items() if g is None or (g != numerator and g != denominator))
    return DIRResult(delta=d_pred - d_ref, dir_reference=d_ref, dir_prediction=d_pred, numerator=numerator,
                     denominator=denominator, per_report=per_report,
                     counts={"reference": c_ref, "prediction": c_pred}, n_other=n_other)
