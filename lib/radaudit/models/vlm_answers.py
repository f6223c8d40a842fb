"""Reading a VLM's yes/no answers: the generated text parsed to yes/no/unknown, and the pair-softmax P(yes) of the
candidates' first-token scores.

Part of :mod:`radaudit.models.vlm` (which re-exports every public name here): plain text and arrays, no model. The
answer parsing follows SMS's ``clean_label`` (``../shared/papers/003_*.txt``; anchor
``dsrestrepo/Selective-Modality-Shifting-SMS-``), made explicit in :func:`parse_yes_no`; the probabilities are those
of :func:`radaudit.models.vlm.first_token_scores` (:func:`pair_probabilities`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: SMS's candidate answers (``src/test.py``): both casings of yes/no.
DEFAULT_CANDIDATES: tuple[str, ...] = ("Yes", "No", "yes", "no")

#: Casing pairs for the pair-softmax columns (see :func:`radaudit.models.vlm.first_token_scores`).
PAIRS = ("both", "capitalised", "lower")


# --- yes/no parsing ------------------------------------------------------------------------------

_STRIP = re.compile(r"^[\s\"'`*_#>\-:.,!()\[\]]+|[\s\"'`*_#>\-:.,!()\[\]]+$")
_PREFIX = re.compile(r"^(?:the\s+)?(?:final\s+)?(?:answer|response|assistant)\s*(?:is)?\s*[:\-]?\s*", re.I)
_FIRST_WORD = re.compile(r"^(yes|y|no|n)\b(?![-'])", re.I)


def parse_yes_no(text: str | None, *, no_patterns: Sequence[str] = (), yes_patterns: Sequence[str] = ()) -> str:
    """``"yes"``, ``"no"`` or ``"unknown"`` for a generated answer (SMS ``clean_label``, made explicit).

    1. Strip whitespace, quotes, markdown and punctuation at both ends and a leading "Answer:"-style
       prefix; lower-case.
    2. The whole answer, or its first word, is ``yes``/``y`` or ``no``/``n`` (``"Yes, there is ..."`` →
       yes; ``"Not sure"`` → unknown; ``"No."`` → no).
    3. Else the regexes ``no_patterns`` then ``yes_patterns`` (SMS checks its "no" patterns first),
       searched case-insensitively.
    4. Else ``"unknown"``. Unknown answers are kept and counted (:func:`count_answers`), never dropped.
    """
    if text is None:
        return "unknown"
    t = _STRIP.sub("", str(text))
    t = _STRIP.sub("", _PREFIX.sub("", t)).lower()
    m = _FIRST_WORD.match(t)
    if m:
        return "yes" if m.group(1).startswith("y") else "no"
    for pat in no_patterns:
        if re.search(pat, t, re.I):
            return "no"
    for pat in yes_patterns:
        if re.search(pat, t, re.I):
            return "yes"
    return "unknown"


def count_answers(frame: pd.DataFrame | Sequence[str], column: str = "answer") -> pd.Series:
    """Counts of ``yes``/``no``/``unknown`` (all three always present), e.g. for a table of parse failures."""
    values = frame[column] if isinstance(frame, pd.DataFrame) else pd.Series(list(frame), dtype=object)
    counts = values.value_counts()
    return pd.Series({k: int(counts.get(k, 0)) for k in ("yes", "no", "unknown")}, name="n")


# --- pair probabilities --------------------------------------------------------------------------

def _logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    return (m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))).squeeze(axis)


def pair_probabilities(logits: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Pair-softmax P(yes) from first-token logits keyed by candidate (``"Yes"``, ``"No"``, ``"yes"``, ``"no"``).

    * ``p_yes_capitalised`` = softmax(``[Yes, No]``)[0] (SMS's ``[p_Yes, p_No]`` re-normalisation);
    * ``p_yes_lower`` = softmax(``[yes, no]``)[0];
    * ``p_yes_both`` = ``(e^Yes + e^yes) / (e^Yes + e^yes + e^No + e^no)``: both casings summed in
      probability space, i.e. the probability of a yes-word among the four first tokens.

    A column is ``NaN`` when one of its candidates is missing. ``p_no_* = 1 - p_yes_*``.
    """
    def get(name: str) -> np.ndarray | None:
        return np.asarray(logits[name], dtype=np.float64) if name in logits else None

    out: dict[str, np.ndarray] = {}
    n = len(next(iter(logits.values()))) if logits else 0
    nan = np.full(n, np.nan)
    for pair, (y, no) in {"capitalised": ("Yes", "No"), "lower": ("yes", "no")}.items():
        ly, ln = get(y), get(no)
        out[f"p_yes_{pair}"] = nan.copy() if ly is None or ln is None else 1.0 / (1.0 + np.exp(ln - ly))
    yes = [v for v in (get("Yes"), get("yes")) if v is not None]
    no = [v for v in (get("No"), get("no")) if v is not None]
    if yes and no:
        ly, ln = _logsumexp(np.stack(yes), axis=0), _logsumexp(np.stack(no), axis=0)
        out["p_yes_both"] = 1.0 / (1.0 + np.exp(ln - ly))
    else:
        out["p_yes_both"] = nan.copy()
    return out
