"""Rewrite rules of the Noise aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    _one,
    _swap_word,
)
from radaudit.perturb.textops import pick
from radaudit.perturb.verify import max_edit_distance

_NO_TYPO = {"left", "right", "without", "normal", "likely", "unlikely", "possible", "increased", "decreased"}


def _typo(word: str, rng: random.Random) -> str:
    ops = []
    if word.endswith("y"):
        ops.append(word[:-1] + "i")
    ops.append(word[:-1])  # drop the last letter ("atelectasi")
    i = 1 + rng.randrange(len(word) - 3)
    ops.append(word[:i] + word[i + 1] + word[i] + word[i + 2:])  # swap two inner letters
    j = 1 + rng.randrange(len(word) - 2)
    ops.append(word[:j] + word[j] + word[j:])  # double a letter
    out = [o for o in ops if o.lower() != word.lower()]
    return out[rng.randrange(len(out))]


@rule("noise", "insignificant", "inaccuracy", check=max_edit_distance(2))
def noise_typo(text: str, rng: random.Random) -> Rewrite | None:
    """One typo in a long word ("opacity" -> "opaciti", "atelectasis" -> "atelectasi"; Table 2, Noise I)."""
    cands = [m for m in re.finditer(r"\b[A-Za-z]{7,}\b", text) if m.group(0).lower() not in _NO_TYPO
             and not m.group(0).isupper()]
    m = pick(rng, cands)
    if m is None:
        return None
    new = _typo(m.group(0), rng)
    return _one(text, m.start(), m.end(), new, f"Typo {m.group(0)!r} -> {new!r}; a reader infers the intended word "
                                         "(Appendix A, Noise I).")


_MEANING_FLIP = {"likely": "unlikely", "unlikely": "likely", "consistent with": "inconsistent with",
                 "normal": "abnormal"}


def _flip_ok(text: str, m: re.Match[str]) -> bool:
    if m.group(0).lower() == "normal":
        return bool(re.search(r"(?i)\b(?:is|are|appears?|remains?)\s+(?:\w+ly\s+)?$", text[max(0, m.start() - 25):m.start()]))
    return True


@rule("noise", "significant", "inaccuracy", check=max_edit_distance(3))
def noise_flip(text: str, rng: random.Random) -> Rewrite | None:
    """A small slip that reverses meaning ("most likely due to" -> "most unlikely due to", "is normal" ->
    "is abnormal"; Appendix A, Noise S: noise that alters a sentence's meaning)."""
    return _swap_word(text, rng, _MEANING_FLIP, positive=False, extra_ok=_flip_ok,
                      explanation="A one-word slip ({old!r} -> {new!r}) reverses the interpretation of the sentence "
                                  "(Appendix A, Noise S).")
