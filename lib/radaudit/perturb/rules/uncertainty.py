"""Rewrite rules of the Uncertainty aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    add_deletion,
    add_to_np,
    one_edit,
    pick_edit,
    sentence_deletion_span,
    swap_word,
    unqualified_findings,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    FINDING_NOUN,
    delete_word,
    find_all,
    is_plural_before,
    is_positive,
    is_upper_context,
    match_case,
    np_start,
    pick,
    sentence_at,
    status_at,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
)
from radaudit.text.attributes import extract_certainty
from radaudit.text.sections import sentences

_HEDGE_SWAP = {
    "may": "might", "might": "may", "could": "may", "possible": "questionable", "questionable": "possible",
    "probable": "likely", "probably": "likely", "most likely": "probably", "suspicious for": "concerning for",
    "concerning for": "suspicious for", "suggestive of": "suspicious for", "cannot be excluded": "cannot be ruled out",
    "cannot be ruled out": "cannot be excluded", "cannot exclude": "cannot rule out", "cannot rule out": "cannot exclude",
    "possibly": "perhaps",
}


@rule("uncertainty", "insignificant", "inaccuracy", check=labels("same"))
def unc_swap(text: str, rng: random.Random) -> Rewrite | None:
    """Replace a hedge with an equivalent hedge ("may be" -> "might be", "possible" -> "questionable";
    Table 2 and Appendix A, Uncertainty I)."""
    hedges = {c.start for c in extract_certainty(text)}

    def ok(t: str, m: re.Match[str]) -> bool:
        return m.start() in hedges or m.group(0).lower() in ("may", "might", "could")

    def modal_ok(t: str, m: re.Match[str]) -> bool:
        if m.group(0).lower() in ("may", "might", "could"):
            return bool(re.match(r"(?i)\s+(?:also\s+)?(?:be|represent|reflect|indicate|relate|include)\b", t[m.end():]))
        return ok(t, m)

    return swap_word(text, rng, _HEDGE_SWAP, positive=False, extra_ok=modal_ok,
                     explanation="The hedge {old!r} is replaced with {new!r}; both express uncertainty and the next "
                                 "steps are the same (Appendix A, Uncertainty I).")


@rule("uncertainty", "significant", "inaccuracy", check=local_attr("certainty", "differ"))
def unc_remove(text: str, rng: random.Random) -> Rewrite | None:
    """Turn a hedged finding into a certain one ("may represent atelectasis" -> "represents atelectasis";
    Table 2: "Whether this is pneumonia is indeterminate" -> "Pneumonia exists")."""
    cands: list[tuple[int, int, str | None]] = []  # new=None: delete the word(s) a..b
    # not "less/more likely" ("atelectasis versus less likely consolidation" is a ranking, not a hedge to delete)
    for m in find_all(text, r"(?<!less\s)(?<!more\s)\b(?:most\s+)?(?:likely|probably|possibly|presumably|questionably)"
                            r"(?=\s+[a-z])"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:possible|probable|questionable|suspected)(?=\s+[a-z])"
                            r"(?!\s+(?:but|and|or|in|on|at|given|with|for|to|than|as|if|though|although|because)\b)"):
        cands.append((m.start(), m.end(), None))
    for m in find_all(text, r"\b(?:may|might|could)\s+(?:also\s+)?(represent|reflect|indicate|be)\b"):
        plural = is_plural_before(text, m.start()) or bool(
            re.search(r"(?i)\b(?:these|they|those|both)\s+$", text[max(0, m.start() - 8):m.start()]))
        verb = m.group(1).lower()
        cands.append((m.start(), m.end(), ("are" if plural else "is") if verb == "be" else (verb if plural else verb + "s")))
    for m in find_all(text, r"\b(?:cannot|can\s+not)\s+be\s+(?:entirely\s+|completely\s+)?(?:excluded|ruled\s+out)\b"):
        cands.append((m.start(), m.end(), "are present" if is_plural_before(text, m.start()) else "is present"))
    for m in find_all(text, r"\b(?:suspicious|concerning|worrisome)\s+for\b|\bsuggestive\s+of\b"):
        cands.append((m.start(), m.end(), "diagnostic of"))
    c = pick(rng, sorted(set(cands), key=lambda c: (c[0], c[1])))
    if c is None:
        return None
    a, b, new = c
    old = text[a:b]
    if new is None:
        e = delete_word(text, a, b)
        if e is None:
            return None
        a, b, new = e
    else:
        new = new.upper() if is_upper_context(text, a) else match_case(old, new)
    return one_edit(text, a, b, new,
                    f"The hedge {old.strip()!r} is removed: an uncertain finding is reported as certain, which "
                    "may trigger or withhold treatment unjustifiably (Appendix A, Uncertainty S).")


@rule("uncertainty", "significant", "fabrication", check=labels("differ"))
def unc_add(text: str, rng: random.Random) -> Rewrite | None:
    """Hedge a definite critical finding ("right pneumothorax" -> "possible right pneumothorax"): doubt
    that delays an indicated treatment. (Choice: the paper's Uncertainty S example removes doubt;
    adding it to a definite critical finding is the mirror error.)"""
    findings = unqualified_findings(text, CRITICAL_NOUN, extract_certainty, ("possible", "probable", "likely"))
    return add_to_np(text, rng, findings, "possible",
                     "A definite {finding!r} is reported as only possible; an indicated treatment may be "
                     "delayed (§3.1, Uncertainty).")


#: Diagnoses whose dismissal changes management (infection, malignancy, fluid, air).
_CRITICAL_DX = (r"pneumonia|infection|infectious\s+process|infiltrates?|aspiration|consolidation|edema|mass(?:es)?|"
                r"neoplasm|malignancy|tumor|metastas[ie]s|metastatic\s+disease|effusions?|pneumothorax|tuberculosis|"
                r"(?:lymph)?adenopathy|nodules?")
_ALT_JOIN = r"\s+(?:or|versus|vs\.?|and/or)\s+|\s*/\s*"
#: Words after which a differential's first alternative starts ("may represent X or Y", "likely X versus Y").
_ALT_HEAD = re.compile(r"(?i)(?:^|\b(?:represents?|representing|reflects?|reflecting|be|likely|possibly|probably|"
                       r"for|of|to|include|includes|suggests?|suggesting|with|favor|favors)\s+)$")
#: Words that cannot open the alternative left behind ("due to X versus due to Y").
_NOT_ALT = re.compile(r"(?i)(?:due|secondary|related|to|from|less|more|alternatively|other)\b")
_PLURAL_VERB_AFTER = re.compile(r"(?i)^(?:\s+[\w-]+){0,3}?\s+(?:are|were|have)\b")
#: A sentence that does nothing but raise a diagnosis ("This may represent pneumonia.", "Possible small left
#: effusion.", "A subtle infiltrate cannot be excluded.").
_PURE_HEDGE = re.compile(
    r"(?i)^(?:(?:this|these|it|they)\s+(?:\w+\s+){0,2}?(?:may|might|could|probably|likely|possibly|suggests?|"
    r"(?:is|are)\s+(?:likely|suspicious|concerning|worrisome))\b|"
    r"(?:possible|probable|questionable|question(?:\s+of)?|suspected|likely|cannot|can\s+not|could|may|might|"
    r"there\s+(?:may|might|could)\s+(?:also\s+)?be)\b|"
    rf"(?:(?:a|an)\s+)?(?:[\w-]+\s+){{0,3}}?(?:{_CRITICAL_DX})\s+(?:cannot|can\s+not|is\s+not|are\s+not)\s+(?:be\s+)?"
    r"(?:entirely\s+|completely\s+)?(?:excluded|ruled\s+out))")


def _uncertain(text: str, a: int, b: int) -> bool:
    return status_at(text, a, b) == "uncertain"


def _pure_hedge_sentence(text: str, s, crit: list[re.Match[str]], nxt) -> bool:
    """``s`` only raises dangerous diagnoses (all uncertain, nothing asserted, one clause), and the next
    sentence does not lean on it ("However, ...")."""
    if not _PURE_HEDGE.match(s.text) or re.search(r"(?i)\band\b(?!/)", s.text):
        return False
    if nxt is not None and re.match(r"(?i)however|but|this|these", nxt.text):
        return False
    if not all(_uncertain(text, s.start + m.start(), s.start + m.end()) for m in crit):
        return False
    return not any(is_positive(text, s.start + m.start(), s.start + m.end())
                   for m in re.finditer(rf"(?i)\b(?:{FINDING_NOUN})\b", s.text))


def _alternative_drops(text: str, s, m: re.Match[str]) -> list[tuple[int, int, str, str]]:
    """Edits that drop the alternative ``m`` (a match in sentence ``s``) from a differential, keeping the other:
    "X or C" -> "X" (with up to two words before C: "or early atypical infection"), "C versus X" -> "X"."""
    a, b = s.start + m.start(), s.start + m.end()
    if not _uncertain(text, a, b) or _PLURAL_VERB_AFTER.match(text[b:s.end]):
        return []
    out = []
    before = re.search(rf"(?i)[A-Za-z](,?(?:{_ALT_JOIN})(?:[a-z-]+\s+){{0,2}}?)$", text[s.start:a])
    if before and not re.match(r"(?i)\s+of\b", text[b:]):
        start = a - len(before.group(1))
        out.append((start, b, "", text[start:b]))
    after = re.match(rf"(?i)(?:{_ALT_JOIN})(?=[A-Za-z])", text[b:s.end])
    np_a, _mods = np_start(text, a)
    if after and _ALT_HEAD.search(text[s.start:np_a]) and not _NOT_ALT.match(text[b + after.end():]):
        end = b + after.end()
        nxt = re.match(r"[A-Za-z]+", text[end:])
        if np_a == s.start and nxt and not text[end:end + 1].isupper():
            out.append((np_a, end + nxt.end(), nxt.group(0)[:1].upper() + nxt.group(0)[1:], text[np_a:end]))
        else:
            out.append((np_a, end, "", text[np_a:end]))
    return out


@rule("uncertainty", "significant", "omission", check=labels("differ"))
def unc_drop_alternative(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a dangerous diagnosis that the report leaves open ("may represent atelectasis or pneumonia" ->
    "may represent atelectasis"; "A subtle infiltrate cannot be excluded." deleted). (Choice: Appendix A,
    Uncertainty S: "may represent atelectasis or pneumonia" -> "represents atelectasis" dismisses infection;
    here the hedge stays and only the dangerous alternative is lost.)"""
    cands: list[tuple[int, int, str, str]] = []
    sents = sentences(text)
    for i, s in enumerate(sents):
        if not extract_certainty(s.text):
            continue
        crit = list(re.finditer(rf"(?i)\b(?:{_CRITICAL_DX})\b", s.text))
        for m in crit:
            cands += _alternative_drops(text, s, m)
        if len(sents) > 1 and crit and _pure_hedge_sentence(text, s, crit, sents[i + 1] if i + 1 < len(sents) else None):
            a, b = sentence_deletion_span(text, s)
            cands.append((a, b, "", s.text))
    return pick_edit(text, rng, cands,
                     lambda old: f"The open diagnosis in {old.strip()!r} is omitted: a dangerous possibility the "
                                 "radiologist raised is no longer considered, and its work-up or treatment may be withheld "
                                 "(Appendix A, Uncertainty S).")


#: Hedges of a negative or normal statement ("no definite effusion", "no visible pneumothorax", "grossly clear").
_NEG_HEDGE = re.compile(r"(?i)\b(?:no|without|negative\s+for|no\s+evidence\s+of)\s+"
                        r"(definite|obvious|visible|evident|appreciable|convincing|discrete|gross)\b|"
                        r"\b(grossly)\s+(?:clear|normal|unremarkable|intact|within\s+normal\s+limits)\b")


@rule("uncertainty", "insignificant", "omission", check=labels("same"))
def unc_drop_negative_hedge(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the hedge of a negative or normal statement ("No definite pleural effusion" -> "No pleural
    effusion"; "The lungs are grossly clear" -> "The lungs are clear"): Table 2's Negation I pair ("No
    pleural effusion is seen" / "There is no definite pleural effusion") read the other way. (Choice: the
    paper's Uncertainty I example swaps hedges; these hedges only soften an absence.)"""
    cands = []
    for m in _NEG_HEDGE.finditer(text):
        g = 1 if m.group(1) else 2
        add_deletion(cands, text, m.start(g), m.end(g), m.group(g))
    return pick_edit(text, rng, cands,
                     lambda old: f"The hedge {old!r} of a negative or normal statement is omitted; the finding is still "
                                 "reported as absent, and nothing downstream changes (Table 2, Negation I; Uncertainty I).")


#: Definite benign findings: no work-up follows whether they are certain or probable.
_BENIGN_FINDING = (r"granulomas?|granulomatous\s+(?:disease|changes?|process|sequelae?)|degenerative\s+(?:changes?|disease)|"
                   r"spondylosis|osteophytes?|scarring|atherosclerotic\s+calcifications?|aortic\s+calcifications?|"
                   r"(?:calcified\s+)?(?:hilar|mediastinal)\s+lymph\s+nodes?|healed\s+(?:\w+\s+)?fractures?")
_PHRASE_BOUNDARY = re.compile(r"(?i)^|\bthere\s+(?:is|are)\s+(?:(?:a|an|some)\s+)?|[,;:]\s*|"
                              r"\b(?:of|for|with|and|by|in)\s+(?:(?:a|an|the)\s+)?")
_VERBISH = re.compile(r"(?i)\b(?:is|are|was|were|be|been|has|have|noted|seen|again|which|that|no|not)\b")


def _phrase_start(text: str, sent, pos: int) -> int | None:
    """Start of the noun phrase ending at ``pos`` (after the last clause word: "There is a", "of", "and", a
    comma); None when a verb or negation stands in between."""
    seg = text[sent.start:pos]
    start = [m.end() for m in _PHRASE_BOUNDARY.finditer(seg)][-1]
    if _VERBISH.search(seg[start:]) or not re.fullmatch(r"(?:[A-Za-z][\w/-]*\s+)*", seg[start:]):
        return None
    return sent.start + start


@rule("uncertainty", "insignificant", "fabrication", check=all_of(local_attr("certainty", "differ"), labels("same")))
def unc_hedge_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Hedge a definite benign finding ("Calcified granuloma in the right upper lobe" -> "Probable calcified
    granuloma ..."; "Mild degenerative changes" -> "Probable mild degenerative changes"). (Choice: the mirror of
    Uncertainty S "possible right pneumothorax" on a finding that needs no action either way; Appendix A,
    Uncertainty I: hedge wording that does not alter next steps.)"""
    cands = []
    for m in find_all(text, rf"\b(?:{_BENIGN_FINDING})\b"):
        if not is_positive(text, m.start(), m.end()):
            continue
        sent = sentence_at(text, m.start(), m.end())
        if sent is None or extract_certainty(sent.text):
            continue
        a = _phrase_start(text, sent, m.start())
        if a is None or re.search(r"(?i)\b(?:consistent|compatible)\s+with\s+$|\bsuggest\w*\s+$", text[sent.start:a]):
            continue
        first = re.match(r"[A-Za-z][\w/-]*", text[a:]).group(0)
        if is_upper_context(text, a):
            a, b, new = a, a, "PROBABLE "
        elif a == sent.start:
            keep = first.isupper() or not first[1:].islower()  # "XXXX", "T-spine" keep their case
            a, b, new = a, a + len(first), "Probable " + (first if keep else first.lower())
        else:
            a, b, new = a, a, "probable "
        cands.append((a, b, new, text[a:m.end()]))
    return pick_edit(text, rng, cands,
                     lambda old: f"The definite benign finding {old!r} is reported as only probable; it needs no work-up "
                                 "either way (Appendix A, Uncertainty I).")
