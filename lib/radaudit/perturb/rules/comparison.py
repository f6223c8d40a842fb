"""Rewrite rules of the Comparison/Progression aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import functools
import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    TEMPORAL_WORDS,
    add_deletion,
    add_to_np,
    finding_nps,
    is_prenominal,
    one_edit,
    pick_deletion,
    pick_edit,
    unqualified_findings,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    FINDING_NOUN,
    find_all,
    is_plural_before,
    is_positive,
    match_case,
    np_start,
    pick,
    sentence_at,
    status_at,
    styled,
)
from radaudit.perturb.verify import (
    all_of,
    labels,
    local_attr,
)
from radaudit.text.attributes import extract_certainty, extract_severity, extract_temporal
from radaudit.text.sections import sentences

_REVERSE = {
    "improved": "worsened", "improving": "worsening", "improvement": "worsening", "improves": "worsens",
    "decreased": "increased", "increased": "decreased", "decrease": "increase", "increase": "decrease",
    "decreasing": "increasing", "increasing": "decreasing", "worsened": "improved", "worsening": "improving",
    "worse": "better", "smaller": "larger", "resolving": "worsening", "progressed": "improved",
    "progression": "improvement", "less": "more", "more": "less", "unchanged": "worsened", "stable": "worsening",
    "diminished": "increased", "reduction": "increase",
}
_PARAPHRASE = {
    "unchanged": "essentially unchanged", "stable": "unchanged", "improved": "slightly improved",
    "improving": "slowly improving", "decreased": "diminished", "worsened": "progressed", "worsening": "progressing",
    "increasing": "enlarging", "decreasing": "diminishing", "redemonstrated": "again seen",
}


def _temporal_word_cands(text: str, table: dict[str, str], values: set[str]) -> list[tuple[int, int, str]]:
    out = []
    for t in extract_temporal(text):
        if t.value not in values:
            continue
        for w in re.finditer(r"[A-Za-z]+", t.text):
            if w.group(0).lower() in table:
                a, b = t.start + w.start(), t.start + w.end()
                if status_at(text, a, b) is not None:
                    out.append((a, b, w.group(0)))
                break
    return out


@rule("comparison", "significant", "inaccuracy", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_reverse(text: str, rng: random.Random) -> Rewrite | None:
    """Reverse the direction of a change ("edema has improved" -> "has worsened"; Table 2, Comparison S)."""
    c = pick(rng, _temporal_word_cands(text, _REVERSE, {"increased", "decreased", "unchanged"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _REVERSE[word.lower()])
    return one_edit(text, a, b, new, f"The change {word!r} is reversed to {new!r}: the patient appears to deteriorate (or "
                               "improve) when the opposite is true (Table 2 and Appendix A, Comparison S).")


@rule("comparison", "insignificant", "inaccuracy", check=all_of(local_attr("temporal", "same"), labels("same")))
def cmp_paraphrase(text: str, rng: random.Random) -> Rewrite | None:
    """Rephrase a change keeping its direction ("unchanged" -> "essentially unchanged", "improved" ->
    "slightly improved"; Table 2 and Appendix A, Comparison I)."""
    c = pick(rng, _temporal_word_cands(text, _PARAPHRASE, {"increased", "decreased", "unchanged", "persistent"}))
    if c is None:
        return None
    a, b, word = c
    new = match_case(word, _PARAPHRASE[word.lower()])
    return one_edit(text, a, b, new,
                    f"The change {word!r} is rephrased as {new!r}; the direction is the same (Comparison I).")


_CHANGE_ADJ = r"new|newly|increasing|worsening|improving|decreasing|enlarging|progressive|resolving"
#: The adjective modifies a finding (not "lung volumes", not a device, whose newness cmp_drop_device_new omits).
_CHANGE_HEAD = re.compile(rf"(?i)[\s-]+(?:[\w-]+\s+){{0,4}}?(?:{FINDING_NOUN}|opacification|cardiomegaly|enlargement|"
                          rf"lymphadenopathy)\b")


@rule("comparison", "significant", "omission", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_drop_change(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a stated change of an asserted finding ("new left effusion" -> "left effusion"; ReXVal
    category (f), omission of a change from the previous study)."""
    cands = [m for m in find_all(text, rf"\b(?:{_CHANGE_ADJ})\b") if is_prenominal(text, m)
             and is_positive(text, m.start(), m.end()) and _CHANGE_HEAD.match(text, m.end())]
    return pick_deletion(text, rng, cands, lambda old: f"The change {old!r} is omitted; the progression of the finding "
                                                       "is lost (§2, ReXVal error (f); Comparison S).")


@rule("comparison", "insignificant", "omission", check=labels("same"))
def cmp_drop_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a statement of stability ("stable calcified granuloma" -> "calcified granuloma", ", unchanged
    from prior" removed): no change is lost."""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, r",?\s+(?:unchanged|stable)\s+(?:from|since|compared\s+(?:to|with))\s+(?:the\s+)?"
                            r"(?:prior|previous)(?:\s+(?:study|exam|examination|radiograph|film|studies))?"):
        cands.append((m.start(), m.end(), "", m.group(0).strip(" ,")))
    for m in find_all(text, r"\bagain\s+(?=(?:seen|noted|identified|demonstrated|visualized)\b)"):
        cands.append((m.start(), m.end(), "", m.group(0).strip()))
    for m in find_all(text, r"\b(?:stable|unchanged|persistent)\b"):
        if is_prenominal(text, m) \
                and not re.match(r"(?i)[\s-]+(?:from|since|and|compared|in|to|appearance)\b", text[m.end():]) \
                and is_positive(text, m.start(), m.end()):
            add_deletion(cands, text, m.start(), m.end(), m.group(0))
    # The stability or persistence of a pertinent finding is left to the significant omissions.
    pertinent = [(a, b) for a, b, _n, _o in _lesion_stable_cands(text) + _persistence_cands(text)]
    cands = [c for c in cands if not any(c[0] < b and a < c[1] for a, b in pertinent)]
    return pick_edit(text, rng, cands, lambda old: (
        f"The stability statement {old!r} is omitted; no change from the prior study is lost "
        "(Comparison I)."))


@rule("comparison", "significant", "fabrication", check=all_of(local_attr("temporal", "differ"), labels("same")))
def cmp_add_change(text: str, rng: random.Random) -> Rewrite | None:
    """Add a change that the GT does not state ("left pleural effusion" -> "worsening left pleural
    effusion"; ReXVal (e), a comparison not in the reference)."""
    findings = unqualified_findings(text, CRITICAL_NOUN + r"|opacit(?:y|ies)|atelectasis|cardiomegaly", extract_temporal,
                                    TEMPORAL_WORDS)
    return add_to_np(text, rng, findings, lambda _m: ("new", "worsening", "increasing")[rng.randrange(3)],
                     "A fabricated change {word!r} is added to {finding!r}; it implies progression and may "
                     "escalate care (§2, ReXVal (e); Comparison S).")


_CHRONIC = (r"granulomas?|degenerative|scarring|osteophytes?|calcifications?|sternotomy|clips|emphysema|hyperexpan\w+|"
            r"hyperinfla\w+|spondylosis|kyphosis|scoliosis")


@rule("comparison", "insignificant", "fabrication", check=labels("same"))
def cmp_add_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Add "stable" to a chronic benign finding ("calcified granuloma" -> "stable calcified granuloma")."""
    return add_to_np(text, rng, unqualified_findings(text, _CHRONIC, extract_temporal, TEMPORAL_WORDS), "stable",
                     "'stable' is added to the chronic finding {finding!r}; nothing in management depends "
                     "on it (Comparison I).")


# --------------------------------------------------------------------------- more rules per cell
# Each cell of the aspect has three rules that make clinically different edits (the engine averages a
# metric's score over them). Shared vocabulary and checks first.

#: Findings whose interval change or stability matters for care (a new/stable nodule, a resolving effusion).
_PERTINENT = (r"effusions?|pneumothorax|pneumothoraces|consolidations?|opacit(?:y|ies)|infiltrates?|edema|atelectasis|"
              r"airspace\s+disease|nodules?|mass(?:es)?|pneumonia|cardiomegaly|lymphadenopathy|cavity|cavitation")
#: Chronic findings without consequence for care, whatever their course (cf. :data:`_CHRONIC`).
_BENIGN = (r"degenerative|granulomas?|atherosclero\w+|calcifications?|spondylosis|osteophytes?|kyphosis|scoliosis|"
           r"eventration")  # not aortic tortuosity: a widening aorta may be an aneurysm
_DEVICE = (r"tubes?|lines?|catheters?|picc|port|mediport|pacemaker|pacer|defibrillator|drains?|stents?|wires?|leads?|"
           r"clips?|hardware|prosthesis|device|generator")
_DEGREE = (r"(?:slight|slightly|mild|mildly|minimal|minimally|marked|markedly|significant|significantly|partial|partially|"
           r"some|somewhat|further)")
#: A named prior study ("prior exam", "the previous study", "comparison radiograph from XXXX").
_REF = (r"(?:the\s+)?(?:most\s+recent\s+)?(?:prior|previous|last|comparison)(?:\s+(?:chest\s+)?(?:study|studies|exams?|"
        r"examinations?|radiographs?|films?|imaging|x-xxxx))?(?:\s+(?:from|of|dated|on)\s+xxxx)?")
_REF_WORDS = re.compile(r"(?i)\b(?:prior|previous|comparison|compared|since|from|interval|before|earlier|last|baseline|"
                        r"previously|xxxx\s+exam)\b")
_CONTRA_RESOLVED = re.compile(r"(?i)\b(?:residual|persist\w*|remain\w*|still|again|stable|unchanged|similar)\b")
#: A stated course of a finding other than a change: stability, persistence, no change.
_PERSIST_MARK = re.compile(r"(?i)\b(?:persist\w*|again\s+(?:seen|noted|demonstrated|identified|visualized)|redemonstrat\w+|"
                           r"remain\w*|residual|unchanged|stable|similar|no\s+(?:\w+\s+){0,2}changes?)\b")
_IMPROVE_WORDS = r"improved|improving|decreasing|diminished"
#: The rest of a sentence after a finding is at most a site ("... in the left base.").
_TO_END = r"(?:\s+(?:in|at|within|of|over)\s+[^.;,]{0,40})?\s*(?:[.;]|$)"


def _temporal_edit(*pairs: tuple[str | None, str | None]):
    """Check: the edited span moved from temporal value ``frm`` to ``to`` for one ``(frm, to)`` pair
    (:func:`~radaudit.text.attributes.extract_temporal`; ``None``: no temporal phrase on that side)."""

    def check(ctx) -> str | None:
        g = {a.value for a in extract_temporal(ctx.gt_part)}
        m = {a.value for a in extract_temporal(ctx.me_part)}
        for frm, to in pairs:
            before = not g if frm is None else frm in g
            if to is not None:
                after = to in m and to not in g
            else:  # the value is gone (an omission), or nothing temporal on either side
                after = not m if frm is None else frm not in m
            if before and after:
                return None
        return f"temporal change {sorted(g)} -> {sorted(m)} in the edited span is none of {list(pairs)}"

    return check


def _report_temporal_same(ctx) -> str | None:
    """Check: the whole report states the same changes (temporal values) before and after the edit."""
    g = sorted(a.value for a in extract_temporal(ctx.gt))
    m = sorted(a.value for a in extract_temporal(ctx.me))
    return None if g == m else f"the report's temporal statements changed ({g} -> {m}) but should not"


def _np_word(text: str, m: re.Match[str], words: str) -> tuple[int, int, str] | None:
    """The word of ``words`` inside the noun phrase of the noun ``m`` or right before it
    ("stable left pleural effusion", "unchanged moderate cardiomegaly"): ``(start, end, word)``."""
    a, _mods = np_start(text, m.start())
    words = rf"(?:(?:grossly|essentially|largely|overall)\s+)?(?:{words})"
    inside = list(re.finditer(rf"(?i)\b{words}\b", text[a:m.start()]))
    if inside:
        w = inside[-1]
        return a + w.start(), a + w.end(), w.group(0)
    before = re.search(rf"(?i)\b{words}\s+$", text[max(0, a - 30):a])
    if before:
        s = max(0, a - 30) + before.start()
        word = before.group(0).rstrip()
        return s, s + len(word), word
    return None


def _sentence_has(text: str, pos: int, pattern: str) -> bool:
    s = sentence_at(text, pos, pos)
    return s is not None and re.search(pattern, s.text, re.IGNORECASE) is not None


def _pertinent_before(text: str, pos: int, *, positive: bool = True) -> bool:
    """An (asserted) pertinent finding stands earlier in the sentence of ``pos``."""
    s = sentence_at(text, pos, pos)
    if s is None:
        return False
    for m in re.finditer(rf"(?i)\b(?:{_PERTINENT})\b", text[s.start:pos]):
        a, b = s.start + m.start(), s.start + m.end()
        if not positive or is_positive(text, a, b):
            return True
    return False


def _negated_elsewhere(text: str, pos: int) -> bool:
    """A pertinent finding of the sentence of ``pos`` is negated in another sentence of the report
    ("... effusion has resolved." with "No pleural effusion."): calling it persistent would contradict that."""
    s = sentence_at(text, pos, pos)
    if s is None:
        return True
    for m in re.finditer(rf"(?i)\b(?:{_PERTINENT})\b", s.text):
        stem = re.escape(m.group(0).lower()[:5])
        for o in re.finditer(rf"(?i)\b{stem}\w*", text):
            if not (s.start <= o.start() < s.end) and not is_positive(text, o.start(), o.end()):
                return True
    return False


def _sentence_rest(text: str, a: int, b: int) -> str:
    """The sentence around ``text[a:b]`` without it."""
    sent = sentence_at(text, a, b)
    return "" if sent is None else text[sent.start:a] + " " + text[b:sent.end]


def _only_course(text: str, a: int, b: int, *, nor_change: bool = False) -> bool:
    """``text[a:b]`` is the only stated course (stable, persistent, no change ...; with ``nor_change`` also no
    increase or decrease) in its sentence, which is not about a calcified granuloma: editing it leaves no
    other course there to contradict or to keep."""
    sent = sentence_at(text, a, b)
    if sent is None or re.search(r"(?i)\bcalcifi\w+|granulom", sent.text):
        return False
    rest = text[sent.start:a] + " " + text[b:sent.end]
    return _PERSIST_MARK.search(rest) is None and not (nor_change and extract_temporal(rest))


def _next_refers_back(text: str, pos: int) -> bool:
    """The sentence after the one of ``pos`` goes on about it ("This is increased since ...")."""
    s = sentence_at(text, pos, pos)
    return s is not None and re.match(r"(?i)\s*(?:this|it|these|they|which|currently|now)\b", text[s.end:]) is not None


def _near(text: str, pos: int) -> str:
    """The sentence of ``pos`` with its neighbours: a fabricated course must not meet a stated one there."""
    sents = sentences(text)
    for i, s in enumerate(sents):
        if s.start <= pos < max(s.end, s.start + 1):
            return " ".join(t.text for t in sents[max(0, i - 1):i + 2])
    return ""


def _insert_ok(text: str, a: int) -> bool:
    """A word may be put before the noun phrase starting at ``a``: it opens the sentence or follows an
    article, a verb of presence, a preposition or punctuation (not "some"/"Atherosclerotic")."""
    before = text[max(0, a - 30):a]
    if not before.strip() or re.search(r"[.:;,(\n]\s*$|^\s*\d+[.)]\s*$", before):
        return True
    return re.search(r"(?i)\b(?:a|an|the|is|are|of|with|and|or|there|shows?|demonstrates?|noted|seen|including)\s+$",
                     before) is not None


def _content_end(sent) -> int:
    """Offset just after the last word of ``sent`` (before its closing period and spaces)."""
    return sent.start + len(sent.text.rstrip().rstrip(".;:!? \n"))


# Comparison S, inaccuracy -------------------------------------------------------------------


@rule("comparison", "significant", "inaccuracy",
      check=all_of(_temporal_edit(("unchanged", "new"), ("persistent", "new"), ("new", "unchanged")), labels("same")))
def cmp_misstate_onset(text: str, rng: random.Random) -> Rewrite | None:
    """Misstate when a pertinent finding appeared: a known one is called new ("stable left pleural effusion"
    -> "new left pleural effusion", "effusions are again seen" -> "are newly seen") or a new one stable.
    (Choice: the paper's Comparison S example reverses a direction; onset is the other temporal fact a
    clinician acts on: a "new" nodule or effusion triggers a work-up, a "stable" one closes it.)"""
    cands: list[tuple[int, int, str, str]] = []
    if re.search(r"(?i)\bno\s+(?:significant\s+)?(?:interval\s+)?changes?\b", text):
        return None  # "No interval change." elsewhere would contradict any new finding
    only = functools.partial(_only_course, text, nor_change=True)
    for m in find_all(text, rf"\b(?:{_PERTINENT})\b"):
        if not is_positive(text, m.start(), m.end()) or _sentence_has(text, m.start(), r"\bcalcifi\w+|granulom"):
            continue
        w = _np_word(text, m, r"stable|unchanged|persistent|new")
        if w is not None and (w[2].lower() == "new" or only(w[0], w[1])):
            new = "stable" if w[2].lower() == "new" else "new"
            cands.append((w[0], w[1], match_case(w[2], new), w[2]))
    for m in find_all(text, r"\bagain\s+(seen|noted|demonstrated|identified|visualized)\b"):
        if _pertinent_before(text, m.start()) and only(m.start(), m.end()):
            cands.append((m.start(), m.end(), match_case(m.group(0), "newly " + m.group(1)), m.group(0)))
    for m in find_all(text, r"\b(?:is|are)\s+(stable|unchanged)"
                            r"(?=\s*(?:[.;]|$)|\s+(?:since|from|compared|when|in\s+the\s+interval)\b)"):
        if _pertinent_before(text, m.start()) and only(m.start(1), m.end(1)):
            cands.append((m.start(1), m.end(1), match_case(m.group(1), "new"), m.group(1)))
    cands = [c for c in cands if not _next_refers_back(text, c[0])]
    return pick_edit(text, rng, cands, lambda old: (
        f"The onset of a pertinent finding is misstated ({old!r}): a known finding reads as new (prompting "
        "work-up) or a new one as known (closing it) (Appendix A, Comparison S: a false course misleads care)."))


@rule("comparison", "significant", "inaccuracy",
      check=_temporal_edit(("decreased", "resolved"), ("persistent", "resolved"), ("resolved", "persistent")))
def cmp_misstate_resolution(text: str, rng: random.Random) -> Rewrite | None:
    """Misstate whether a finding has resolved: an improvement or a persistence is called a resolution
    ("improvement in pulmonary edema" -> "resolution of pulmonary edema", "persistent bibasilar opacities" ->
    "resolved bibasilar opacities") or a resolution a persistence ("opacities have resolved" -> "have
    persisted"). (Choice: the paper's example reverses a direction; resolution is the end point at which
    treatment (antibiotics, diuretics, a drain) is stopped or continued.)"""
    cands: list[tuple[int, int, str, str]] = []

    def ok(pos: int, skip: tuple[int, int] | None = None) -> bool:
        sent = sentence_at(text, pos, pos)
        if sent is None:
            return False
        body = sent.text if skip is None else text[sent.start:skip[0]] + text[skip[1]:sent.end]
        return _CONTRA_RESOLVED.search(body) is None

    for m in find_all(text, rf"\b(?:{_DEGREE}\s+)?improvement\s+(?:in|of)\b"):  # not "clearing of": may be complete
        after = text[m.end():m.end() + 60]
        if re.match(rf"(?i)\s+(?:the\s+)?(?:[\w-]+\s+){{0,4}}?(?:{_PERTINENT})\b", after) and ok(m.start()):
            cands.append((m.start(), m.end(), match_case(m.group(0), "resolution of"), m.group(0)))
    for m in find_all(text, rf"\b(?:{_PERTINENT})\b"):
        if not is_positive(text, m.start(), m.end()) or not ok(m.start()):
            continue
        w = _np_word(text, m, rf"(?:{_DEGREE}\s+)?(?:{_IMPROVE_WORDS})")
        if w is not None:
            cands.append((w[0], w[1], match_case(w[2], "resolved"), w[2]))
    for m in find_all(text, rf"\b(has|have)\s+(?:{_DEGREE}\s+)?(?:improved|decreased|diminished)\b"):
        if _pertinent_before(text, m.start(), positive=False) and ok(m.start()):
            cands.append((m.start(), m.end(), match_case(m.group(0), m.group(1).lower() + " resolved"), m.group(0)))
    for m in find_all(text, r"\b(?:has|have)\s+(?:since\s+)?(resolved|cleared)\b"):
        if _pertinent_before(text, m.start(), positive=False) and not _negated_elsewhere(text, m.start()):
            cands.append((m.start(1), m.end(1), match_case(m.group(1), "persisted"), m.group(1)))
    for m in find_all(text, rf"\b(?:{_PERTINENT})\b"):  # a persistent finding called resolved
        if not is_positive(text, m.start(), m.end()):
            continue
        w = _np_word(text, m, r"persistent|redemonstrated|residual")
        sent = sentence_at(text, m.start(), m.end())
        phrase = text[sent.start:m.start()] if sent is not None else ""  # no grade or size stays with "resolved"
        if w is not None and ok(w[0], w[:2]) and re.match(_TO_END, text[m.end():], re.IGNORECASE) \
                and not re.search(r"\d", phrase) and not extract_severity(phrase):
            # a bare finding ("persistent bibasilar opacities."), so that "resolved" does not describe it further
            cands.append((w[0], w[1], match_case(w[2], "resolved"), w[2]))
    for m in find_all(text, rf"\b(is|are)\s+again\s+(?:seen|noted|demonstrated|identified|visualized)(?={_TO_END})|"
                            r"\b(persists|persist|remains|remain)(?=\s*[.;])"):
        if _pertinent_before(text, m.start()) and ok(m.start(), m.span()) \
                and not re.match(r"(?i)[.;,]?\s*(?:this|it|these|which)\b", text[m.end():]):
            plural = (m.group(1) or m.group(2)).lower() in ("are", "persist", "remain")
            new = ("have" if plural else "has") + " resolved"
            cands.append((m.start(), m.end(), match_case(m.group(0), new), m.group(0)))
    for m in find_all(text, r"\b(?:interval\s+)?resolution\s+of\s+(?:the\s+)?"):
        if re.match(rf"(?i)(?:[\w-]+\s+){{0,4}}?(?:{_PERTINENT})\b", text[m.end():m.end() + 60]) \
                and not _negated_elsewhere(text, m.start()):
            cands.append((m.start(), m.end(), match_case(m.group(0), "persistent "), m.group(0).strip()))
    for m in find_all(text, r"\bno\s+longer\s+(?:seen|visible|visualized|present|identified|evident|apparent)\b"):
        if _pertinent_before(text, m.start(), positive=False) and not _negated_elsewhere(text, m.start()):
            cands.append((m.start(), m.end(), match_case(m.group(0), "again seen"), m.group(0)))
    cands = [c for c in cands if not _next_refers_back(text, c[0])]
    return pick_edit(text, rng, cands, lambda old: (
        f"Whether the finding has resolved is misstated ({old!r}): treatment may be stopped while the finding is "
        "still there, or continued after it cleared (Appendix A, Comparison S)."))


# Comparison I, inaccuracy -------------------------------------------------------------------


@rule("comparison", "insignificant", "inaccuracy",
      check=all_of(_temporal_edit(("unchanged", "increased")), labels("same")))
def cmp_benign_progression(text: str, rng: random.Random) -> Rewrite | None:
    """Call a stable chronic benign finding slightly progressed ("stable calcified granuloma" -> "slightly more
    prominent calcified granuloma", "degenerative changes, unchanged" -> ", slightly more prominent").
    (Choice: the paper's I example keeps the direction; a wrong direction for a finding that needs no
    follow-up in any course (calcified granulomas, spondylosis, atherosclerotic calcification) changes no
    decision either.)"""
    new_words = "slightly more prominent"
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, rf"\b(stable|unchanged)\s+((?:[\w-]+\s+){{0,3}}?)({_BENIGN})\b"):
        if re.search(rf"(?i)\b(?:and|with|or|of|{_PERTINENT})\b", m.group(2)) or not is_positive(text, *m.span(3)):
            continue
        cands.append((m.start(1), m.end(1), match_case(m.group(1), new_words), m.group(1)))
    for m in find_all(text, rf"\b(?:{_BENIGN})\b([^.;,]{{0,40}}?\b(?:is|are|appears?|appear)\s+|[^.;]{{0,40}}?,\s*)"
                            rf"((stable|unchanged)(\s+(?:from|since)\b)?)"):
        if re.search(rf"(?i)\b(?:{_PERTINENT}|no|not|without)\b", m.group(1)) \
                or not is_positive(text, m.start(), m.start(1)):
            continue
        new = new_words + (" compared to" if m.group(4) else "")
        cands.append((m.start(2), m.end(2), match_case(m.group(3), new), m.group(2)))
    cands = [c for c in cands if not _sentence_has(text, c[0], rf"\b(?:{_PERTINENT})\b")]
    return pick_edit(text, rng, cands, lambda old: (
        f"The stable chronic benign finding ({old!r}) is said to be slightly more prominent: the direction is wrong, "
        "but the finding needs no follow-up in either course (Comparison I)."))


_NORMAL_STRUCTURE = re.compile(r"(?i)^(?:cardiomediastinal|mediastinal|hilar|cardiac|heart\s+and|aort|mediastinum|"
                               r"pulmonary\s+vasc|osseous|bony|visualized)")


@rule("comparison", "insignificant", "inaccuracy", check=all_of(local_attr("temporal", "same"), labels("same")))
def cmp_restate_unchanged(text: str, rng: random.Random) -> Rewrite | None:
    """Restate a no-change statement in the other form (Table 2, Comparison I: "No interval change in pleural
    effusion" -> "Pleural effusion is essentially unchanged"; "Stable cardiomediastinal silhouette." -> "The
    cardiomediastinal silhouette shows no interval change.")."""
    cands: list[tuple[int, int, str, str]] = []
    for s in sentences(text):
        body = s.text[:_content_end(s) - s.start]
        if "\n" in body.strip() or (re.search(r"(?i)\b(?:no|not|without|with|may|possibl\w*|likely)\b", body[3:])
                                     and not body.lower().startswith(("no ", "there is no "))):
            continue
        up = body.isupper()
        m = re.fullmatch(r"(?i)(?:there\s+(?:is|has\s+been)\s+)?no\s+(?:(?:significant|appreciable)\s+)?(?:interval\s+)?"
                         r"changes?\s+in\s+(?:the\s+)?([a-z][\w\s-]{2,60})", body)
        if m and not re.search(r"(?i)\b(?:and|or|with|no)\b", m.group(1)) and "  " not in m.group(1):
            x = m.group(1).strip()
            verb = "are" if is_plural_before(x + " ", len(x) + 1) else "is"
            new = x[:1].upper() + x[1:] + f" {verb} essentially unchanged"
            cands.append((s.start, s.start + len(body), new.upper() if up else new, body))
            continue
        m = (re.fullmatch(r"(?i)(?:stable|unchanged)\s+([a-z][a-z\s-]{2,60})", body)
             or re.fullmatch(r"(?i)((?:the\s+)?[a-z][a-z\s-]{2,60}?)\s+(?:is|are)\s+(?:stable|unchanged)", body))
        if m is None or len(m.group(1).split()) > 6 or re.search(r"(?i)\b(?:with|stable|unchanged)\b", m.group(1)):
            continue
        x = m.group(1).strip()
        if _NORMAL_STRUCTURE.match(x) and not re.match(r"(?i)the\s", x):
            x = "the " + (x if up else x[:1].lower() + x[1:])
        # "X shows no interval change", not "No interval change in X": a labeler would read the latter as
        # negating X ("no ... mediastinum" -> no enlarged cardiomediastinum).
        plural = is_plural_before(x + " ", len(x) + 1) or re.search(r"(?i)\band\b", x)
        verb = "show" if plural else "shows"
        new = x[:1].upper() + x[1:] + f" {verb} no interval change"
        cands.append((s.start, s.start + len(body), new.upper() if up else new, body))
    return pick_edit(text, rng, cands, lambda old: (
        f"The no-change statement {old!r} is restated in the other form; it still says nothing changed "
        "(Table 2 and Appendix A, Comparison I)."))


# Comparison S, omission ---------------------------------------------------------------------


def _lesion_stable_cands(text: str) -> list[tuple[int, int, str, str]]:
    """Omissions of the stability of an asserted pertinent finding (prenominal "stable", ", unchanged", "and is
    stable compared to prior" deleted; "are unchanged." -> "are present.")."""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, rf"\b(?:{_PERTINENT})\b"):
        if not is_positive(text, m.start(), m.end()) or _sentence_has(text, m.start(), r"\bcalcifi\w+|granulom"):
            continue
        w = _np_word(text, m, r"stable|unchanged")
        if w is not None:
            add_deletion(cands, text, w[0], w[1], w[2])
    clause = (rf"(,|\s+and|\s+(is|are))\s+(?:(?:is|are|largely|essentially|grossly)\s+)*(?:stable|unchanged)"
              rf"(?:\s+in\s+(?:size|appearance))?(?:\s+(?:since|from|compared\s+(?:to|with)|when\s+compared\s+to)\s+{_REF}"
              rf"|\s+in\s+the\s+interval)?(?=\s*[.;]|\s*$)")
    for m in find_all(text, clause):
        if not _pertinent_before(text, m.start()) or _sentence_has(text, m.start(), r"\bcalcifi\w+|granulom|\bno\b") \
                or re.search(r"(?i)\b(?:which|that)$", text[:m.start()]):
            continue
        if m.group(2):  # "infiltrates are unchanged." -> "infiltrates are present."
            cands.append((m.start(), m.end(), " " + match_case(m.group(2), m.group(2).lower() + " present"),
                          m.group(0).strip()))
        else:  # ", unchanged from prior" / "and is stable compared to ..." removed
            cands.append((m.start(), m.end(), "", m.group(0).strip(" ,")))
    return cands


@rule("comparison", "significant", "omission", check=all_of(_temporal_edit(("unchanged", None)), labels("same")))
def cmp_drop_lesion_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the stability of a pertinent finding ("Stable pleural based nodule" -> "Pleural based nodule",
    "Cardiomegaly is noted and is stable compared to prior examination" -> "Cardiomegaly is noted",
    "infiltrates are largely unchanged" -> "infiltrates are present").
    (Choice: no omission example in the paper; stability is what spares a nodule or an effusion a work-up,
    and without it the finding may be read as new.)"""
    return pick_edit(text, rng, _lesion_stable_cands(text), lambda old: (
        f"The stability of a pertinent finding ({old!r}) is omitted; the finding may be read as new and worked "
        "up again (§2, ReXVal (f), omission of a comparison; Comparison S)."))


def _persistence_cands(text: str) -> list[tuple[int, int, str, str]]:
    """Omissions of the persistence of an asserted pertinent finding ("persistent", "residual", "again seen" ->
    "seen", "Redemonstration of", "remains." -> "is present."), where the sentence states no other course."""
    cands: list[tuple[int, int, str, str]] = []
    alone = functools.partial(_only_course, text)
    for m in find_all(text, rf"\b(?:{_PERTINENT})\b"):
        if not is_positive(text, m.start(), m.end()):
            continue
        w = _np_word(text, m, r"persistent|residual|redemonstrated")
        if w is not None and alone(w[0], w[1]) and not re.search(r",\s*$", text[max(0, w[0] - 3):w[0]]):
            add_deletion(cands, text, w[0], w[1], w[2])
    for m in find_all(text, r"\bagain\s+(seen|noted|demonstrated|identified|visualized)\b"):
        if _pertinent_before(text, m.start()) and alone(m.start(), m.end()):
            cands.append((m.start(), m.end(), m.group(1), m.group(0)))
    for m in find_all(text, r"\b(remains|persists|remain|persist)(?=\s*[.;])"):
        if _pertinent_before(text, m.start()) and alone(m.start(), m.end()):
            new = "is present" if m.group(1).lower().endswith("s") else "are present"
            cands.append((m.start(), m.end(), match_case(m.group(1), new), m.group(0)))
    for m in find_all(text, r"\bredemonstration\s+of\s+(?:the\s+)?"):
        nxt = re.match(rf"(?i)(?:[\w-]+\s+){{0,4}}?({_PERTINENT})\b", text[m.end():m.end() + 60])
        if nxt and is_positive(text, m.end() + nxt.start(1), m.end() + nxt.end(1)) and alone(m.start(), m.end()):
            add_deletion(cands, text, m.start(), m.start() + len(m.group(0).rstrip()), m.group(0).strip())
    return cands


@rule("comparison", "significant", "omission", check=all_of(_temporal_edit(("persistent", None)), labels("same")))
def cmp_drop_persistence(text: str, rng: random.Random) -> Rewrite | None:
    """Omit that a pertinent finding persists from the prior study ("Persistent left lower lobe atelectasis"
    -> "Left lower lobe atelectasis", "effusions are again noted" -> "are noted"). (Choice: no omission
    example in the paper; a consolidation or effusion that does not resolve on serial films calls for
    work-up (CT, thoracentesis), and without "persistent" it reads as a first finding.)"""
    return pick_edit(text, rng, _persistence_cands(text), lambda old: (
        f"The persistence of a pertinent finding ({old!r}) is omitted; that it has not resolved since the prior "
        "study, which calls for work-up, is lost (§2, ReXVal (f); Comparison S)."))


# Comparison I, omission ---------------------------------------------------------------------


@rule("comparison", "insignificant", "omission", check=all_of(_report_temporal_same, labels("same")))
def cmp_drop_prior_ref(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the named prior study of a comparison, keeping the comparison ("contours are unchanged since
    previous exam" -> "contours are unchanged"; "Compared to prior examination, there is ..." -> "There is
    ..."). (Choice: no example in the paper; every comparison is to the prior study, so naming it adds
    nothing.)"""
    cands: list[tuple[int, int, str, str]] = []
    opening = (rf"(?i)(?:(?:as\s+)?compared\s+(?:to|with)|since|in\s+comparison\s+(?:to|with))\s+{_REF},\s*"
               rf"|in\s+the\s+interval,\s*")
    for s in sentences(text):
        m = re.match(opening, s.text)
        if m and re.search(r"\w", s.text[m.end():]):
            add_deletion(cands, text, s.start, s.start + len(m.group(0).rstrip()), m.group(0).strip(" ,"))
    for m in find_all(text, rf"\b(?:stable|unchanged|changed?|changes|improved|improvement|worsened|worsening|resolved|"
                            rf"cleared|new|progressed|inserted|placed|placement|removed)(\s+(?:when\s+)?(?:since|from|"
                            rf"compared\s+(?:to|with)|relative\s+to|in\s+comparison\s+(?:to|with))\s+{_REF}"
                            rf"|\s+in\s+the\s+interval)\b"):
        cands.append((m.start(1), m.end(1), "", m.group(1).strip()))
    return pick_edit(text, rng, cands, lambda old: (
        f"The reference {old!r} is omitted; the comparison itself is kept and is understood to be with the prior "
        "study (Comparison I)."))


@rule("comparison", "insignificant", "omission", check=all_of(_temporal_edit(("new", None)), labels("same")))
def cmp_drop_device_new(text: str, rng: random.Random) -> Rewrite | None:
    """Omit that a device is newly placed, keeping the device and its position ("Interval placement of a left
    arm PICC terminating 5.2 cm below the carina" -> "A left arm PICC terminating ..."; "A new enteric
    tube" -> "An enteric tube"). (Choice: no example in the paper; the team that placed the device knows
    it is new, and what the report must give, its position, is kept.)"""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, r"\b(?:there\s+has\s+been\s+)?interval\s+(?:placement|insertion)\s+of\s+"):
        if _sentence_has(text, m.start(), r"\bsince\b") or not re.match(r"[A-Za-z]", text[m.end():m.end() + 1]):
            continue
        head = m.group(0).rstrip()
        if head.lower().startswith("there"):
            cands.append((m.start(), m.start() + len(head), match_case(head, "there is"), head))
            continue
        add_deletion(cands, text, m.start(), m.start() + len(head), head)
    for m in find_all(text, rf"\bnew\s+(?:[\w-]+\s+){{0,3}}?(?:{_DEVICE})\b"):
        if re.search(rf"(?i)\b(?:{_PERTINENT})\b", m.group(0)):
            continue
        add_deletion(cands, text, m.start(), m.start() + 3, "new")
    cands = [c for c in cands if not re.search(r"(?i)\bnew(?:ly)?\b|\binterval\b", _sentence_rest(text, c[0], c[1]))]
    return pick_edit(text, rng, cands, lambda old: (
        f"That the device is new ({old!r}) is omitted; the device and its position are still reported, and the "
        "team that placed it knows it is new (Comparison I)."))


# Comparison S, fabrication ------------------------------------------------------------------

_IMPROVABLE = r"effusions?|pneumothorax|consolidations?|opacit(?:y|ies)|infiltrates?|edema|airspace\s+disease|pneumonia"


@rule("comparison", "significant", "fabrication",
      check=all_of(_temporal_edit((None, "decreased")), labels("same")))
def cmp_add_improvement(text: str, rng: random.Random) -> Rewrite | None:
    """Add an improvement that the GT does not state ("Left pleural effusion." -> "Left pleural effusion,
    improved since the prior study."). (Choice: the paper's S example turns an improvement into a worsening;
    a fabricated improvement is the reassuring mirror: therapy (antibiotics, diuretics) may be de-escalated
    too early.)"""
    cands = []
    for s in sentences(text):
        found = list(re.finditer(rf"(?i)\b(?:{FINDING_NOUN})\b", s.text))
        if len(found) != 1 or not re.fullmatch(rf"(?i){_IMPROVABLE}", found[0].group(0)):
            continue
        a, b = s.start + found[0].start(), s.start + found[0].end()
        near = _near(text, s.start)
        if not is_positive(text, a, b) or extract_temporal(near) or _REF_WORDS.search(near) \
                or len(s.text.split()) > 12 or extract_certainty(s.text) or "\n" in s.text.strip() \
                or re.search(r"(?i)nodul|\bmass|\d\s*(?:mm|cm)\b|\bclear\b", s.text):  # a nodule "improves" by its size
            continue
        cands.append(s)
    s = pick(rng, cands)
    if s is None:
        return None
    end = _content_end(s)
    new = styled(text, s.start, ", improved since the prior study")
    return one_edit(text, end, end, new, "A fabricated improvement is added to the finding: the clinician may de-escalate "
                    "treatment that is still needed (Appendix A, Comparison S, mirrored).")


_STABLE_FINDING = (r"effusions?|pneumothorax|consolidations?|opacit(?:y|ies)|infiltrates?|edema|airspace\s+disease|"
                   r"nodules?|mass(?:es)?|pneumonia")


@rule("comparison", "significant", "fabrication",
      check=all_of(_temporal_edit((None, "unchanged")), labels("same")))
def cmp_add_lesion_stable(text: str, rng: random.Random) -> Rewrite | None:
    """Call a pertinent finding stable though the GT gives no comparison ("right upper lobe nodule" ->
    "stable right upper lobe nodule"). (Choice: no example in the paper; a fabricated stability closes the
    work-up of a nodule (stable = benign) or of a new effusion or opacity.)"""
    cands = []
    for m, a, mods in finding_nps(text, _STABLE_FINDING):
        sent = sentence_at(text, m.start(), m.end())
        near = _near(text, m.start())
        if sent is None or extract_temporal(near) or any(w in TEMPORAL_WORDS for w in mods) \
                or _REF_WORDS.search(near) or not _insert_ok(text, a) or extract_certainty(sent.text) \
                or re.search(r"(?i)calcifi|granulom|continued|\b(?:could|may|might|obscur\w*|clear)\b", sent.text) \
                or mods[:1] == ["few"]:
            continue
        cands.append(m)
    return add_to_np(text, rng, cands, "stable", "A fabricated stability is added to {finding!r}: a new finding reads as "
                                                 "known and its work-up or treatment may be withheld (Comparison S).")


# Comparison I, fabrication ------------------------------------------------------------------


@rule("comparison", "insignificant", "fabrication",
      check=all_of(_temporal_edit((None, "persistent")), labels("same")))
def cmp_add_remains_normal(text: str, rng: random.Random) -> Rewrite | None:
    """Say that a normal finding has stayed normal ("The lungs are clear" -> "The lungs remain clear",
    "Heart size is normal" -> "Heart size remains normal"). (Choice: no example in the paper; that a normal
    structure was also normal before changes nothing.)"""
    cands: list[tuple[int, int, str, str]] = []
    for m in find_all(text, r"\b(is|are)\s+(?=(?:(?:otherwise|grossly|essentially)\s+)?"
                            r"(?:normal|clear|within\s+normal\s+limits|unremarkable)\b)"):
        s = sentence_at(text, m.start(), m.end())
        if s is None:
            continue
        subject = text[s.start:m.start()]
        if not subject.strip() or re.search(rf"(?i)\b(?:there|no|not|{FINDING_NOUN}|if|which|that)\b", subject) \
                or extract_temporal(s.text) or extract_certainty(s.text):
            continue
        verb = m.group(1)
        new = "remains" if verb.lower() == "is" else "remain"
        cands.append((m.start(1), m.end(1), match_case(verb, new), verb))
    return pick_edit(text, rng, cands, lambda old: (
        "A normal finding is said to have remained normal since the prior study; nothing in care depends on it "
        "(Comparison I)."))


@rule("comparison", "insignificant", "fabrication",
      check=all_of(local_attr("temporal", "same"), _report_temporal_same, labels("same")))
def cmp_add_prior_ref(text: str, rng: random.Random) -> Rewrite | None:
    """Name the prior study in a stability statement that does not ("The mediastinum is stable." -> "The
    mediastinum is stable compared to the prior study."). (Choice: no example in the paper; the reference
    is implied by "stable".)"""
    cands: list[tuple[int, int, str, str]] = []
    for s in sentences(text):
        if _REF_WORDS.search(s.text) or "\n" in s.text.strip() or extract_certainty(s.text):
            continue
        if not any(t.value == "unchanged" for t in extract_temporal(s.text)):
            continue
        body = s.text[:_content_end(s) - s.start]
        spots = []
        for m in re.finditer(r"(?i)\b(?:is|are|appears?|appear|remains?)\s+(?:(?:essentially|grossly|largely)\s+)?"
                             r"(?:stable|unchanged)(?:\s+in\s+(?:size|position|appearance))?(?=\s*(?:[,;]|$))", body):
            spots.append(m.end())
        for m in re.finditer(r"(?i),\s*(?:stable|unchanged)(?=\s*(?:[;]|$))", body):
            spots.append(m.end())
        short = r"(?i)no\s+(?:(?:significant|appreciable)\s+)?changes?|(?:stable|unchanged)\s+[a-z][a-z\s-]{2,50}"
        if re.fullmatch(short, body) and len(body.split()) <= 6 and not re.search(r"(?i)\bwith\b", body):
            spots.append(len(body))
        for p in spots:
            pos = s.start + p
            cands.append((pos, pos, styled(text, pos - 1, " compared to the prior study"), body))
    return pick_edit(text, rng, cands, lambda old: (
        "The prior study is named in a stability statement that implied it; no fact changes (Comparison I)."))
