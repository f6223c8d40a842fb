"""Rewrite rules of the Stylistic Variation aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import one_edit
from radaudit.perturb.textops import (
    FINDING_NOUN,
    find_all,
    is_positive,
    match_case,
    np_start,
    pick,
    status_at,
    styled,
)
from radaudit.perturb.verify import (
    CheckContext,
    all_of,
    labels,
    same_sentences,
)
from radaudit.text.attributes import extract_severity
from radaudit.text.sections import Sentence, sentences

_LEANS_BACK = re.compile(r"(?i)^(?:this|these|that|those|it|its|they|their|which|otherwise)\b"
                         r"|\b(?:otherwise|remainder|remaining)\b")


@rule("stylistic", "insignificant", "inaccuracy", check=all_of(same_sentences(), labels("same")))
def style_reorder(text: str, rng: random.Random) -> Rewrite | None:
    """Reorder the sentences (Table 2, Stylistic I: "lung... edema... effusions" -> "effusions... lung...
    edema"). A sentence that leans on the one before it ("This is age-indeterminate.", "The lungs are
    otherwise clear.") moves with it: moved alone, "this" would point at another finding."""
    sents = sentences(text)
    if len(sents) < 3 or any(not re.search(r"[.!?]$", s.text) for s in sents):
        return None
    units: list[list[int]] = []
    for i, sent in enumerate(sents):
        if units and _LEANS_BACK.search(sent.text):
            units[-1].append(i)
        else:
            units.append([i])
    if len(units) < 2:
        return None
    order = list(range(len(units)))
    for _ in range(10):
        rng.shuffle(order)
        if order != sorted(order):
            break
    else:
        return None
    first, last = sents[0].start, sents[-1].end

    def unit_text(u: list[int]) -> str:
        return text[sents[u[0]].start:sents[u[-1]].end]

    pieces = []
    for k, idx in enumerate(order):
        pieces.append(unit_text(units[idx]))
        if k + 1 < len(units):
            pieces.append(text[sents[units[k][-1]].end:sents[units[k + 1][0]].start])
    new = "".join(pieces)
    if new == text[first:last]:
        return None
    return one_edit(text, first, last, new,
                    "The sentences are reordered; the findings and their interpretation are the same "
                    "(Table 2, Stylistic Variation I).")


def _pick_replacement(text: str, rng: random.Random, cands: list[tuple[int, int, str]],
                      explain: Callable[[str, str], str]) -> Rewrite | None:
    """Replace ``text[a:b]`` with ``new`` for one of the ``(a, b, new)`` candidates, chosen by ``rng`` in their order
    (not :func:`~radaudit.perturb.rules._common.pick_edit`'s sorted set), explained by ``explain(old, new)``;
    ``None`` when there is none."""
    c = pick(rng, cands)
    if c is None:
        return None
    a, b, new = c
    return one_edit(text, a, b, new, explain(text[a:b], new))


@rule("stylistic", "insignificant", "inaccuracy", name="style_template", check=labels("same"))
def style_template(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase with another template ("There is no pleural effusion." -> "No pleural effusion is seen.")."""
    cands = []
    for s in sentences(text):
        m = re.fullmatch(r"There (is|are) no ([^.;:,]+?)\.", s.text)
        if m and not re.search(r"(?i)\b(?:or|and|evidence)\b", m.group(2)):
            cands.append((s, m))
    c = pick(rng, cands)
    if c is None:
        return None
    s, m = c
    new = f"No {m.group(2)} {'is' if m.group(1) == 'is' else 'are'} seen."
    return one_edit(text, s.start, s.end, new, f"{s.text!r} is rephrased as {new!r}; same content, other template "
                                         "(Stylistic Variation I).")


@rule("stylistic", "significant", "inaccuracy")
def style_lr_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Swap which side predominates ("left greater than right" -> "right greater than left"; Table 2,
    Stylistic S: "more on the right")."""
    cands = []
    for m in find_all(text, r"\b(left|right)(\s+(?:greater|more|worse|larger)\s+than\s+)(left|right)\b"):
        if m.group(1).lower() != m.group(3).lower():
            new = match_case(m.group(1), m.group(3).lower()) + m.group(2) + match_case(m.group(3), m.group(1).lower())
            cands.append((m.start(), m.end(), new))
    for m in re.finditer(r"\b([LR])\s*>\s*([LR])\b", text):
        if m.group(1) != m.group(2):
            cands.append((m.start(), m.end(), f"{m.group(2)}>{m.group(1)}" if ">" in m.group(0) and " " not in m.group(0)
                          else f"{m.group(2)} > {m.group(1)}"))
    return _pick_replacement(text, rng, cands, lambda old, new: (
        f"{old!r} becomes {new!r}: the phrasing reverses which side is worse (Table 2, Stylistic Variation S)."))


_NEG_LIST = re.compile(r"(?i)((?:there\s+(?:is|are)\s+)?no)\s+([a-z][a-z ,/-]*[a-z])\s*\.")
_NOT_A_LIST = re.compile(r"(?i)\b(?:no|not|new|change|changes|interval|longer|and|is|are|was|were|seen|identified|noted|"
                         r"present|visualized|demonstrated|evidence|significant|other|without|with)\b")
_LIST_SPLIT = re.compile(r"\s*,\s*(?:or\s+)?|\s+or\s+", re.IGNORECASE)


def _negative_list(sent: Sentence) -> tuple[str, list[str]] | None:
    """The negation and the items of a plain negated list sentence ("There is no pneumothorax or pleural
    effusion." -> ("There is no", ["pneumothorax", "pleural effusion"])); ``None`` for any other sentence."""
    m = _NEG_LIST.fullmatch(sent.text)
    if m is None or _NOT_A_LIST.search(m.group(2)):
        return None
    items = [w for w in _LIST_SPLIT.split(m.group(2)) if w]
    return (m.group(1), items) if items and all(len(w.split()) <= 4 for w in items) else None


def _join_negative(text: str, first: Sentence, neg: str, items: list[str]) -> str:
    """"<neg> a, b, or c.", its "or" in the case of the sentence ``first``."""
    conj = styled(text, first.start, "or")
    body = f" {conj} ".join(items) if len(items) == 2 else ", ".join(items[:-1]) + f", {conj} " + items[-1]
    return f"{neg} {body}."


def _adjacent(text: str, sents: list[Sentence]) -> list[tuple[Sentence, Sentence]]:
    """Consecutive sentence pairs separated by spaces only (not across list numbers or lines)."""
    return [(s, t) for s, t in zip(sents, sents[1:]) if re.fullmatch(r"[ \t]+", text[s.end:t.start])]


_FILLER = {"no", "or", "there", "is", "are", "a", "an", "present", "seen", "noted", "identified"}


def _same_words() -> Callable[[CheckContext], str | None]:
    """The edited parts have the same words apart from list glue ("no", "or", "there is a", "is seen"):
    the content was regrouped, not changed."""

    def check(ctx: CheckContext) -> str | None:
        def words(s: str) -> list[str]:
            return sorted(w for w in re.findall(r"[a-z-]+", s.lower()) if w not in _FILLER)

        if words(ctx.gt_part) != words(ctx.me_part):
            return "the merged sentence does not keep the words of the two sentences"
        return None

    return check


@rule("stylistic", "insignificant", "omission", check=all_of(_same_words(), labels("same")))
def style_combine_negatives(text: str, rng: random.Random) -> Rewrite | None:
    """Combine two negative sentences into one list ("No pneumothorax. No pleural effusion." -> "No
    pneumothorax or pleural effusion."). (Choice: filed as omission, the second "No" and the sentence
    break are dropped; no finding changes, Appendix A, Stylistic Variation I: other phrasing/template.)"""
    cands = []
    for s, t in _adjacent(text, sentences(text)):
        a, b = _negative_list(s), _negative_list(t)
        if a and b:
            cands.append((s.start, t.end, _join_negative(text, s, a[0], a[1] + b[1])))
    return _pick_replacement(text, rng, cands, lambda old, new: (
        f"{old!r} is written as one sentence {new!r}; the same findings are ruled out (Stylistic Variation I)."))


_MERGEABLE = r"effusions?|pneumothorax|consolidations?|edema|pneumonia|mass(?:es)?|nodules?|opacit(?:y|ies)|" \
             r"infiltrates?|airspace\s+disease|cardiomegaly|lesions?|densit(?:y|ies)|fractures?"
_SITE = (r"(?:\s+(?:in|at|within|of|involving|along|overlying)\s+(?:the\s+)?(?:[a-z-]+\s+){0,3}?(?:lobes?|bases?|apex|"
         r"apices|lungs?|lingula|hemithorax|zones?|region|hilum|hila|ribs?|clavicle)|\s+bilaterally|"
         r"\s+on\s+the\s+(?:left|right))?")
_FINDING_SENT = re.compile(rf"(?i)(?:there\s+(?:is|are)\s+(?:an?\s+)?)?((?:[a-z0-9-]+\s+){{0,4}}?(?:{_MERGEABLE}){_SITE})"
                           r"(?:\s+(?:is|are)\s+(?:again\s+)?(?:present|seen|noted|identified))?\s*\.")


def _asserted_np(text: str, sent: Sentence) -> str | None:
    """The finding phrase of a sentence that only asserts one finding ("Small left pleural effusion.",
    "There is a left base opacity.", "Right basilar opacity is present.")."""
    m = _FINDING_SENT.fullmatch(sent.text)
    if m is None:
        return None
    head = re.search(rf"(?i)\b(?:{_MERGEABLE})\b", m.group(1))
    h0, h1 = m.start(1) + head.start(), m.start(1) + head.end()
    if np_start(sent.text, h0)[0] != m.start(1) or not is_positive(text, sent.start + h0, sent.start + h1):
        return None
    np = m.group(1)
    if re.search(r"(?i)\b(?:calcified|granulomatous|healed|old|chronic)\b", np):
        return None  # hiding a benign, chronic finding changes nothing
    return np if np.isupper() else np[:1].lower() + np[1:]


@rule("stylistic", "significant", "omission", check=all_of(_same_words(), labels("differ")))
def style_merge_into_negation(text: str, rng: random.Random) -> Rewrite | None:
    """Fold an asserted finding into the neighbouring negative list ("No pneumothorax. Small left pleural
    effusion." -> "No pneumothorax or small left pleural effusion."). (Choice: the paper's Stylistic S
    example is a rephrasing that reverses the reading; here the rephrasing puts a present finding under
    "No", Appendix A, Stylistic S: poor phrasing that leads to clinical misjudgment.)"""
    cands = []
    for s, t in _adjacent(text, sentences(text)):
        for neg, pos in ((s, t), (t, s)):
            nl, np = _negative_list(neg), _asserted_np(text, pos)
            if nl and np:
                cands.append((s.start, t.end, _join_negative(text, s, nl[0], nl[1] + [np]), np))
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new, np = c
    return one_edit(text, a, b, new, f"{text[a:b]!r} is combined into {new!r}: the present finding {np!r} now reads as "
                               "ruled out, a missed abnormality (Appendix A, Stylistic Variation S).")


_SCOPE_Q = r"large|significant|sizable|substantial|definite"
_ITEM = rf"(?:(?!(?:of|evidence|the|and)\b)[a-z-]+\s+){{0,2}}?(?:{FINDING_NOUN})"


def _reordered() -> Callable[[CheckContext], str | None]:
    """The edited parts have the same words in another order."""

    def check(ctx: CheckContext) -> str | None:
        a, b = re.findall(r"\w+", ctx.gt_part.lower()), re.findall(r"\w+", ctx.me_part.lower())
        return None if sorted(a) == sorted(b) and a != b else "the edit is not a reordering of the same words"

    return check


@rule("stylistic", "significant", "inaccuracy", check=_reordered())
def style_shift_qualifier(text: str, rng: random.Random) -> Rewrite | None:
    """Move a size or certainty qualifier to the other item of a negated pair ("No pneumothorax or large
    pleural effusion" -> "No large pneumothorax or pleural effusion"). (Choice: the paper's Stylistic S
    example moves the emphasis between sides; here the rephrasing moves "large", so a small pneumothorax
    is no longer excluded, Appendix A, Stylistic S: ambiguous emphasis or incorrect wording.)"""
    cands = []
    for m in find_all(text, rf"(?:\b(?:no|without)\s+|,\s*)({_ITEM})\s+(or)\s+({_SCOPE_Q})\s+({_ITEM})\b"):
        if extract_severity(m.group(1)) or status_at(text, m.start(4), m.end(4)) != "negative":
            continue
        new = f"{m.group(3)} {m.group(1)} {m.group(2)} {m.group(4)}"
        cands.append((m.start(1), m.end(4), new, m.group(3)))
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    a, b, new, q = c
    first = re.split(r"(?i)\s+or\s+", text[a:b])[0]
    rest = "a possible one" if q.lower() == "definite" else "a smaller one"
    return one_edit(text, a, b, new, f"{text[a:b]!r} becomes {new!r}: only a {q.lower()} {first} is now excluded, {rest} is "
                               "not, and the other finding is now excluded outright (Appendix A, Stylistic Variation S).")
