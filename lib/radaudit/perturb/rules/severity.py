"""Rewrite rules of the Severity aspect (ReEvalMed Table 2, paper 001); see :mod:`radaudit.perturb.rules`."""

from __future__ import annotations

import random
import re

from radaudit.perturb.base import Rewrite, rule
from radaudit.perturb.rules._common import (
    SEVERITY_WORDS,
    add_deletion,
    add_to_np,
    append_unstated,
    delete_edit,
    finding_nps,
    one_edit,
    pick_edit,
)
from radaudit.perturb.textops import (
    CRITICAL_NOUN,
    is_positive,
    is_upper_context,
    match_case,
    np_start,
    pick,
    sentence_at,
    sentence_end_insert,
    status_at,
    styled,
)
from radaudit.perturb.verify import (
    Check,
    CheckContext,
    all_of,
    labels,
    local_attr,
    severity_shift,
)
from radaudit.text.attributes import extract_severity, extract_size

_SIZE_CLASS = {2: "tiny", 3: "small", 4: "moderate", 5: "large"}
_DEGREE_CLASS = {1: "trace", 2: "minimal", 3: "mild", 4: "moderate", 5: "severe"}
_ADVERB_CLASS = {2: "minimally", 3: "mildly", 4: "moderately", 5: "severely"}
_SIZE_WORDS = {"small", "large", "tiny", "massive", "huge"}
_ADVERBS = {"mildly", "minimally", "moderately", "severely", "slightly", "markedly"}
_NOT_DEGREE_AFTER = re.compile(r"^[\s-]+(?:increase|decrease|improvement|change|interval"
                               r"|enlargement\s+of\s+the\s+(?:bowel))", re.IGNORECASE)


def _sev_class(word: str, after: str) -> dict[int, str]:
    w = word.lower().split("-")[0]
    if w in _ADVERBS:
        return _ADVERB_CLASS
    if w in _SIZE_WORDS or (w == "moderate" and re.match(
            r"(?i)[\s-]+(?:sized?\s+)?(?:\w+\s+){0,2}(?:effusion|pneumothorax|amount|size)", after)):
        return _SIZE_CLASS
    return _DEGREE_CLASS


def _severity_candidates(text: str, levels: set[int]) -> list:
    out = []
    for sv in extract_severity(text):
        if sv.low != sv.high or sv.low not in levels or _NOT_DEGREE_AFTER.match(text[sv.end:]):
            continue
        if not is_positive(text, sv.start, sv.end):
            continue
        out.append(sv)
    return out


#: Chronic incidental findings (spine, aorta, calcified granulomas, hyperinflation, old scarring): their grade does
#: not change management, so grading errors on them are insignificant (Appendix A, Severity I).
_INCIDENTAL = (r"degenerative|spondylo\w*|osteophyt\w*|tortu\w*|ectatic|ectasia|unfold\w*|atherosclero\w*|aort\w*|"
               r"scoliosis|levoscoliosis|dextroscoliosis|\w*convex|curvature|kyphosis|kyphotic|granulom\w*|"
               r"hyperinflat\w*|hyperexpan\w*|scarring|pleural\s+thickening|hiatal\s+hernia|hiatus\s+hernia|arthrit\w*|"
               r"arthropath\w*")
_ACUTE_WORD = rf"{CRITICAL_NOUN}|cardiomegaly|enlarge\w*|atelecta\w*|opacit\w*|infiltrat\w*|airspace|heart|cardiac"
_INCIDENTAL_AFTER = re.compile(rf"(?i)^[\s-]+(?:(?!(?:{_ACUTE_WORD})\b)[\w-]+[\s-]+){{0,6}}?(?:{_INCIDENTAL})\b"
                               r"(?![\s-]+(?:enlarge|dilat|aneurys|dissect|widen))")  # not "mild aortic dilatation"


def _incidental(text: str, sv) -> bool:
    """The grade ``sv`` belongs to a chronic incidental finding ("mild degenerative changes", "mildly tortuous")."""
    return bool(_INCIDENTAL_AFTER.match(text[sv.end:]))


@rule("severity", "significant", "inaccuracy", check=all_of(severity_shift(2, 4), labels("same")))
def sev_shift_two(text: str, rng: random.Random) -> Rewrite | None:
    """Move a severity two levels on the ordinal scale ("mild" -> "severe", "large" -> "small"; Table 2:
    "mildly enlarged" -> "severely enlarged"); not the grade of a chronic incidental finding, whose grade
    does not matter (that is :func:`sev_step_incidental`)."""
    sv = pick(rng, [sv for sv in _severity_candidates(text, {1, 2, 3, 4, 5}) if not _incidental(text, sv)])
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    target = sv.low + 2 if sv.low + 2 in cls else sv.low - 2
    if target not in cls:
        return None
    word = sv.text.split("-")[0].split()[0]
    new = match_case(word, cls[target]) + sv.text[len(word):]
    return one_edit(text, sv.start, sv.end, new,
                    f"Severity {sv.text!r} becomes {new!r} (two levels on the scale trace < minimal "
                    "< mild < moderate < severe): a different urgency and treatment (§3.1, Severity).")


@rule("severity", "insignificant", "inaccuracy", check=all_of(severity_shift(0.5, 0.5), labels("same")))
def sev_adjacent(text: str, rng: random.Random) -> Rewrite | None:
    """Widen a severity to a range with the adjacent level ("severe" -> "moderate-to-severe"; Table 2,
    Severity I)."""
    sv = pick(rng, _severity_candidates(text, {1, 2, 3, 4, 5}))
    if sv is None:
        return None
    cls = _sev_class(sv.text, text[sv.end:])
    options = [lv for lv in (sv.low - 1, sv.low + 1) if lv in cls]
    if not options:
        return None
    other = options[rng.randrange(len(options))]
    lo, hi = sorted((sv.low, other))
    word = sv.text.split("-")[0].split()[0]
    joiner = " to " if cls is _ADVERB_CLASS else "-to-"
    new = match_case(word, f"{cls[lo]}{joiner}{cls[hi]}") + sv.text[len(word):]
    return one_edit(text, sv.start, sv.end, new, f"Severity {sv.text!r} becomes the adjacent range {new!r}; the grade is "
                                           "essentially the same (Table 2, Severity I).")


@rule("severity", "significant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_high(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a moderate/severe grade ("large left pleural effusion" -> "left pleural effusion"): the
    urgency is lost; not the grade of a chronic incidental finding ("extensive degenerative changes").
    (Choice: the paper has no omission example for this cell.)"""
    sv = pick(rng, [sv for sv in _severity_candidates(text, {4, 5}) if not _incidental(text, sv)])
    if sv is None:
        return None
    return delete_edit(text, sv.start, sv.end, f"The grade {sv.text!r} of the finding is omitted; its urgency can no longer "
                                               "be judged (§3.1, Severity).")


@rule("severity", "insignificant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_low(text: str, rng: random.Random) -> Rewrite | None:
    """Omit a trace/minimal/mild grade of a non-critical finding ("mild degenerative changes" ->
    "degenerative changes")."""
    cands = [sv for sv in _severity_candidates(text, {1, 2, 3})
             if not re.match(rf"(?i)^[\s-]+(?:\w+[\s-]+){{0,3}}?(?:{CRITICAL_NOUN})\b", text[sv.end:])]
    sv = pick(rng, cands)
    if sv is None:
        return None
    return delete_edit(text, sv.start, sv.end, f"The minor grade {sv.text!r} is omitted from a non-critical finding; "
                                               "management is unchanged (Severity I).")


_GRADED_BEFORE = re.compile(rf"(?i)\b(?:{'|'.join(sorted(SEVERITY_WORDS))})"
                            r"[\s-]+(?:volume|amount|sized?|degree)(?:\s+of)?\s+$")
_SEVERE_FOR = {"effusion": "large", "effusions": "large", "pneumothorax": "large", "cardiomegaly": "severe",
               "edema": "severe", "atelectasis": "severe", "consolidation": "extensive", "emphysema": "severe",
               "opacities": "extensive", "opacity": "extensive"}


@rule("severity", "significant", "fabrication", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_add_severe(text: str, rng: random.Random) -> Rewrite | None:
    """Add a severe grade to an ungraded asserted finding ("left pleural effusion" -> "large left pleural
    effusion"; Appendix A, Severity S: fabricated severity suggests acute deterioration)."""
    cands = []
    for m, a, mods in finding_nps(text, "|".join(_SEVERE_FOR)):
        if any(w in SEVERITY_WORDS or w.split("-")[0] in SEVERITY_WORDS or w == "borderline" for w in mods):
            continue
        if _GRADED_BEFORE.search(text[max(0, a - 30):a]):
            continue  # "Small volume effusions" is graded already ("Small volume large effusions" would contradict it)
        cands.append(m)
    return add_to_np(text, rng, cands, lambda m: _SEVERE_FOR[m.group(0).lower()],
                     "A fabricated grade {word!r} is added to {finding!r}; it suggests a severe process and "
                     "may escalate treatment (Appendix A, Severity S).")


_BENIGN_ADDITIONS = (
    ("Mild degenerative changes of the thoracic spine.", r"spine|degenerative|spondyl|osteophyt"),
    ("Mild elevation of the right hemidiaphragm.", r"hemidiaphragm|diaphragm"),
    ("Minimal biapical pleural thickening.", r"apical|apex|apices|pleural\s+thickening"),
)


@rule("severity", "insignificant", "fabrication", check=local_attr("severity", "differ"))
def sev_add_benign(text: str, rng: random.Random) -> Rewrite | None:
    """Append a mild, common, non-specific finding ("Mild elevation of the right hemidiaphragm."; Appendix
    A, Severity I)."""
    return append_unstated(text, rng, _BENIGN_ADDITIONS, "A mild benign finding is added ({new!r}); it rarely needs "
                                                         "intervention and does not alter management (Appendix A, "
                                                         "Severity I).")


# --------------------------------------------------------------------------- more kinds of severity edit
# Each cell above has one rule; the rules below add clinically different kinds of edit to every cell: the grade
# of the heart size near the normal range (borderline, upper limits of normal), the extent of atelectasis and of
# diffuse lung disease, the mass effect (mediastinal shift) of a pleural collection, the grade of chronic incidental
# findings, and the grade inside a negated finding ("No large effusion").


def _span_says(gt: str | None = None, me: str | None = None, me_not: str | None = None, what: str = "") -> Check:
    """A check on the edited parts: the GT part matches ``gt``, the ME part matches ``me`` and not ``me_not``
    (regexes, case-insensitive); ``what`` names the intended edit in the message."""

    def check(ctx: CheckContext) -> str | None:
        if gt is not None and not re.search(gt, ctx.gt_part, re.IGNORECASE):
            return f"the edited GT part {ctx.gt_part!r} is not {what}"
        if me is not None and not re.search(me, ctx.me_part, re.IGNORECASE):
            return f"the edited ME part {ctx.me_part!r} is not {what}"
        if me_not is not None and re.search(me_not, ctx.me_part, re.IGNORECASE):
            return f"the edited ME part {ctx.me_part!r} still says what {what} removes"
        return None

    return check


def _no_overlap(cands: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """The candidate edits ``(start, end, new, old)`` that overlap no longer one (the longest match wins)."""
    out: list[tuple[int, int, str, str]] = []
    for c in sorted(cands, key=lambda c: (c[0] - c[1], c[0])):
        if all(c[1] <= o[0] or o[1] <= c[0] for o in out):
            out.append(c)
    return out


def _insert_word(text: str, pos: int, word: str) -> tuple[int, int, str]:
    """An edit inserting ``word`` before the word at ``pos``, in the case of the text (upper-case reports) and
    taking the capital at a sentence start ("Degenerative" -> "Mild degenerative")."""
    if is_upper_context(text, pos):
        return pos, pos, word.upper() + " "
    sent = sentence_at(text, pos, pos + 1)
    first = re.match(r"[A-Za-z][A-Za-z-]*", text[pos:])
    if sent is not None and sent.start == pos and first and first.group(0)[:1].isupper() and not first.group(0).isupper():
        w = first.group(0)
        return pos, pos + len(w), word[:1].upper() + word[1:] + " " + w[:1].lower() + w[1:]
    return pos, pos, word + " "


_NEG_CUE_BEFORE = re.compile(r"(?i)\b(?:no|not|without|negative\s+for)\s+(?:[\w-]+\s+){0,3}$")
_HEART_WORD = re.compile(r"(?i)\b(?:heart|cardiac|cardiomediastinal|cardiomegaly)\b")


def _heart_context(text: str, start: int, end: int) -> bool:
    """The span sits in a sentence about the heart, with no negation cue just before it."""
    sent = sentence_at(text, start, end)
    if sent is None or not _HEART_WORD.search(sent.text):
        return False
    return not _NEG_CUE_BEFORE.search(text[max(0, start - 40):start])


#: "borderline cardiomegaly", "borderline enlarged heart", "at upper limits of normal to borderline enlarged".
_BORDERLINE_ENLARGED = re.compile(
    r"(?i)\b(?P<q>(?:(?:at\s+)?(?:the\s+)?upper\s+limits?\s+of\s+normal\s+to\s+)?borderline)(?P<sep>[\s-]+)"
    r"(?P<head>enlarged|enlargement|cardiomegaly|cardiac\s+enlargement)\b")
#: "Borderline heart size", "The heart is borderline in size", "Heart size is borderline."
_BORDERLINE_SIZE = re.compile(
    r"(?i)\bborderline\s+(?:heart|cardiac)\s+size\b|(?<=\s)borderline(?:\s+in\s+size)?(?=\s*(?:[.,;]|$))")
#: "upper limits of normal", "at the upper limits of normal", "near top normal limits", "top normal in size",
#: "upper normal heart size"; not the start of "upper limits of normal to borderline enlarged".
_UPPER_NORMAL = re.compile(
    r"(?i)\b(?P<q>(?:(?:measures|measuring)\s+)?(?:near\s+)?(?:at\s+|on\s+)?(?:the\s+)?"
    r"(?:upper\s+limits?\s+of|top|upper|high)[\s-]+)normal"
    r"(?P<tail>\s+limits|\s+in\s+size|\s+heart\s+size)?\b(?!\s+to\s+borderline)")


@rule("severity", "significant", "inaccuracy",
      check=all_of(local_attr("severity", "differ"), _span_says(gt=r"borderline|normal", me=r"\bmoderate",
                                                                  what="a borderline heart size made moderate")))
def sev_borderline_to_enlarged(text: str, rng: random.Random) -> Rewrite | None:
    """Grade a borderline heart size as moderate cardiomegaly ("The heart is borderline in size" -> "The heart
    is moderately enlarged"; "Heart size is upper limits of normal" -> "Heart size is moderately enlarged").
    (Choice: the paper's example, Table 2 Severity S, grades mild as severe; this grades the near-normal end
    of the heart-size scale as moderate.)"""
    cands = []
    for m in _BORDERLINE_ENLARGED.finditer(text):
        if _heart_context(text, m.start(), m.end()):
            new = "moderately" if m.group("head").lower() == "enlarged" else "moderate"
            cands.append((m.start("q"), m.end("q"), match_case(m.group("q"), new), m.group(0)))
    for m in _BORDERLINE_SIZE.finditer(text):
        if _heart_context(text, m.start(), m.end()):
            whole = re.match(r"(?i)borderline\s+(?:heart|cardiac)\s+size", m.group(0))  # "Borderline heart size"
            new = "moderately enlarged heart" if whole else "moderately enlarged"
            cands.append((m.start(), m.end(), match_case(m.group(0), new), m.group(0)))
    for m in _UPPER_NORMAL.finditer(text):
        if _heart_context(text, m.start(), m.end()):
            new = "moderately enlarged heart" if "heart" in (m.group("tail") or "").lower() else "moderately enlarged"
            if m.group(0).lower().startswith("measur"):  # "silhouette measures near upper limits of normal"
                new = "is " + new
            cands.append((m.start(), m.end(), match_case(m.group(0), new), m.group(0)))
    return pick_edit(text, rng, _no_overlap(cands), lambda old: (
        f"The borderline heart size {old!r} becomes moderate cardiomegaly: a heart at the upper limit of normal needs "
        "nothing, a moderately enlarged one prompts echocardiography and a heart-failure work-up (§3.1, Severity)."))


_MINOR_ATELECTASIS = re.compile(
    r"(?i)\b(?P<d>subsegmental|sub-segmental|platelike|plate-like|linear|discoid|bandlike|band-like|streaky)"
    r"\s+(?:atelectas[ie]s|atelectatic\s+changes?)\b")
_SMALL_AREA_BEFORE = re.compile(r"(?i)\b(?:areas?|foci|focus|bands?|strands?)\s+of\s+$")
_SCATTERED = {"patchy", "scattered", "few", "several", "multiple"}


@rule("severity", "significant", "inaccuracy",
      check=all_of(labels("same"), _span_says(gt=r"segmental|plate|linear|discoid|band|streaky", me=r"^lobar$",
                                              what="a minor atelectasis made lobar")))
def sev_atelectasis_to_lobar(text: str, rng: random.Random) -> Rewrite | None:
    """Give subsegmental/platelike/linear atelectasis a lobar extent ("Subsegmental atelectasis in the left
    lower lung" -> "Lobar atelectasis in the left lower lung"). (Choice: §3.1 defines severity as "the
    extent or seriousness of a finding"; the paper has no atelectasis example.)"""
    cands = []
    for m in _MINOR_ATELECTASIS.finditer(text):
        if not is_positive(text, m.start(), m.end()):
            continue
        a, mods = np_start(text, m.start("d"))
        if _SMALL_AREA_BEFORE.search(text[max(0, a - 30):a]) or any(w in _SCATTERED for w in mods):
            continue  # "small area of lobar atelectasis", "patchy lobar atelectasis" would contradict themselves
        start = m.start("d")
        g = re.search(r"(?i)\b(?:trace|minimal|tiny|mild|small|slight)\s+$", text[max(0, start - 12):start])
        if g:  # "minimal subsegmental atelectasis" -> "lobar atelectasis"
            start = max(0, start - 12) + g.start()
        elif any(w in SEVERITY_WORDS or w.split("-")[0] in SEVERITY_WORDS for w in mods):
            continue
        old = text[start:m.end("d")]
        cands.append((start, m.end("d"), match_case(old, "lobar"), old))
    return pick_edit(text, rng, cands, lambda old: (
        f"The {old!r} atelectasis becomes lobar: subsegmental atelectasis is trivial, lobar atelectasis (collapse) "
        "suggests mucus plugging or an obstructing lesion and prompts bronchoscopy or CT (§3.1, Severity)."))


#: Heart-size statements that say "normal" of the heart alone (group ``n``); not "normal in size and contour",
#: where the grade would reach the contour too.
_NORMAL_HEART_SIZE = (
    re.compile(r"(?i)\b(?:the\s+)?heart\s+(?:size\s+)?(?:is|appears|remains)\s+(?P<n>normal)(?=\s+(?:in\s+)?size\b"
               r"(?!\s+and\b))"),
    re.compile(r"(?i)\b(?:the\s+)?heart\s+size\s+(?:is\s+|appears\s+|remains\s+)?(?P<n>normal|within\s+normal\s+limits)"
               r"\b(?!\s+(?:in|for)\b)"),
    re.compile(r"(?i)\b(?P<n>normal)(?=\s+heart\s+size\b(?!\s+and\b))"),
)


@rule("severity", "insignificant", "inaccuracy",
      check=all_of(labels("same"), _span_says(gt=r"normal", me=r"upper|top", what="a normal heart size made upper normal")))
def sev_upper_normal(text: str, rng: random.Random) -> Rewrite | None:
    """Grade a normal heart size as upper normal ("Heart size is normal" -> "Heart size is upper limits of
    normal"; "Normal heart size" -> "Upper normal heart size"). (Choice: Table 2, Severity I, moves a grade
    to the adjacent one; this is the adjacent grade at the normal end of the heart-size scale.)"""
    spans = set()
    for pat in _NORMAL_HEART_SIZE:
        for m in pat.finditer(text):
            a, b = m.span("n")
            if not _NEG_CUE_BEFORE.search(text[max(0, a - 40):a]):
                spans.add((a, b))
    c = pick(rng, sorted(spans))
    if c is None:
        return None
    a, b = c
    old = text[a:b]
    if old.lower() != "normal":
        new = "at the upper limits of normal"
    elif re.match(r"(?i)\s+(?:in\s+|heart\s+)?size\b", text[b:]):
        new = ("upper normal", "top normal")[rng.randrange(2)]  # "upper normal in size", "top normal heart size"
    else:
        new = ("upper limits of normal", "top normal")[rng.randrange(2)]
    new = match_case(old, new)
    return one_edit(text, a, b, new, f"The heart size {old!r} becomes {new!r}: both are normal heart sizes and neither "
                                     "changes management (Table 2, Severity I: an adjacent grade).")


def _step_options(sv, text: str) -> list[int]:
    """The levels one step from ``sv`` within minimal..moderate (tiny..small for size words)."""
    cls = _sev_class(sv.text, text[sv.end:])
    allowed = {2, 3} if cls is _SIZE_CLASS else {2, 3, 4}  # "small granuloma" -> "tiny", not "moderate"
    if sv.low not in allowed:
        return []
    return [lv for lv in (sv.low - 1, sv.low + 1) if lv in allowed and lv in cls]


@rule("severity", "insignificant", "inaccuracy", check=all_of(severity_shift(1, 1), labels("same")))
def sev_step_incidental(text: str, rng: random.Random) -> Rewrite | None:
    """Move the grade of a chronic incidental finding by one level ("mild degenerative changes" -> "moderate
    degenerative changes"; "mildly tortuous aorta" -> "minimally tortuous aorta"). (Choice: Appendix A,
    Severity I: a common, benign finding whose grade does not alter management.)"""
    cands = [sv for sv in _severity_candidates(text, {2, 3, 4})
             if _incidental(text, sv) and _step_options(sv, text)]
    sv = pick(rng, cands)
    if sv is None:
        return None
    options = _step_options(sv, text)
    cls = _sev_class(sv.text, text[sv.end:])
    target = options[rng.randrange(len(options))]
    word = sv.text.split("-")[0].split()[0]
    new = match_case(word, cls[target]) + sv.text[len(word):]
    return one_edit(text, sv.start, sv.end, new, f"The grade of a chronic incidental finding {sv.text!r} becomes {new!r}: "
                                           "its degree does not change management (Appendix A, Severity I).")


@rule("severity", "significant", "omission",
      check=_span_says(gt=r"borderline", me_not=r"borderline", what="an omitted 'borderline'"))
def sev_drop_borderline(text: str, rng: random.Random) -> Rewrite | None:
    """Omit "borderline" from a borderline cardiomegaly ("There is borderline cardiomegaly" -> "There is
    cardiomegaly"; "Borderline enlarged heart" -> "Enlarged heart"). (Choice: an omission that raises the
    grade: the paper has no omission example for this cell.)"""
    cands = []
    for m in _BORDERLINE_ENLARGED.finditer(text):
        if _heart_context(text, m.start(), m.end()):
            add_deletion(cands, text, m.start("q"), m.end("q"), m.group("q"))
    return pick_edit(text, rng, cands, lambda old: (
        f"The qualifier {old!r} of the heart size is omitted, so a borderline heart reads as definite cardiomegaly: "
        "it prompts echocardiography and a heart-failure work-up that the GT does not call for (§3.1, Severity)."))


_EXTENT_WORD = r"\b(?:diffuse|widespread|multifocal|multilobar|innumerable|numerous)\b"
_EXTENT_AGAIN = r"\b(?:diffuse|diffusely|widespread|multifocal|multilobar|innumerable|numerous|throughout)\b"
_EXTENT = re.compile(
    r"(?i)\b(?P<w>diffuse|widespread|multifocal|multilobar|innumerable|numerous)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:opacit(?:y|ies)|nodules?|nodular|consolidations?|consolidative|edema|infiltrates?|airspace|interstitial|"
    r"reticul\w*|markings|pneumonia|densit(?:y|ies)|metastas[ie]s|ground[\s-]+glass)\b")


@rule("severity", "significant", "omission",
      check=all_of(labels("same"),
                   _span_says(gt=_EXTENT_WORD, me_not=_EXTENT_WORD, what="an omitted extent of lung disease")))
def sev_drop_extent(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the extent of a lung process ("Innumerable bilateral lung nodules" -> "Bilateral lung nodules";
    "Diffuse interstitial opacities" -> "Interstitial opacities"). (Choice: §3.1 defines severity as "the
    extent or seriousness of a finding"; the paper has no omission example for this cell.)"""
    cands = []
    for m in _EXTENT.finditer(text):
        if len(re.findall(_EXTENT_AGAIN, text, re.IGNORECASE)) > 1:
            break  # "Innumerable nodules ... seen diffusely throughout both lungs": the extent is still stated
        if is_positive(text, m.start(), m.end()):
            add_deletion(cands, text, m.start("w"), m.end("w"), m.group("w"))
    return pick_edit(text, rng, cands, lambda old: (
        f"The extent {old!r} of a lung process is omitted: diffuse or innumerable disease (edema, miliary or metastatic "
        "spread, fibrosis) has another differential and urgency than a limited one (§3.1, Severity)."))


@rule("severity", "insignificant", "omission",
      check=all_of(labels("same"), _span_says(gt=r"upper|top|high", me_not=r"upper|top|high",
                                              what="an omitted 'upper limits of'")))
def sev_drop_upper_normal(text: str, rng: random.Random) -> Rewrite | None:
    """Omit "upper limits of"/"top" from a heart size at the upper limit of normal ("Heart size is upper limits
    of normal" -> "Heart size is normal"; "The heart is top normal in size" -> "The heart is normal in size").
    (Choice: the paper has no omission example for this cell.)"""
    cands = []
    for m in _UPPER_NORMAL.finditer(text):
        if not _heart_context(text, m.start(), m.end()):
            continue
        verb = re.match(r"(?i)(?:measures|measuring)\s+", m.group("q"))  # kept: "measures normal in size"
        qa = m.start("q") + (verb.end() if verb else 0)
        q = text[qa:m.end("q")]
        if (m.group("tail") or "").lower().strip() == "limits":  # "near top normal limits" -> "within normal limits"
            cands.append((qa, m.end("q"), match_case(q, "within "), q))
            continue
        add_deletion(cands, text, qa, qa + len(q.rstrip(" -")), q.strip())
    return pick_edit(text, rng, cands, lambda old: (
        f"The qualifier {old!r} of a normal heart size is omitted: an upper-normal heart is a normal heart and nothing "
        "is done about it (Severity I)."))


#: "No large pleural effusion", "There is no moderate or large effusion": the grade inside a negated finding.
_NEGATED_GRADE = re.compile(
    r"(?i)\b(?:no|without|negative\s+for)\s+(?:(?:evidence|signs?)\s+of\s+)?(?:an?\s+)?(?:definite\s+|visible\s+)?"
    r"(?P<g>(?:moderate|small)(?:\s+|-)(?:to|or)(?:\s+|-)large|large(?:\s+|-)or(?:\s+|-)moderate|large|moderate)\s+"
    r"(?:[\w-]+\s+){0,2}?(?P<n>effusions?|pneumothora(?:x|ces)|(?:pleural\s+)?fluid)\b")


@rule("severity", "insignificant", "omission", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_drop_negated_grade(text: str, rng: random.Random) -> Rewrite | None:
    """Omit the grade of a negated effusion/pneumothorax ("No large pleural effusion" -> "No pleural effusion"),
    where the report asserts none of them elsewhere. (Choice: Table 2 treats a possible minimal effusion next
    to "no larger pleural effusions" as insignificant.)"""
    cands = []
    for m in _NEGATED_GRADE.finditer(text):
        root = r"effusion|fluid|blunt" if not m.group("n").lower().startswith("pneumothora") else r"pneumothora"
        if any(status_at(text, o.start(), o.end()) != "negative"
               for o in re.finditer(rf"(?i)\b(?:{root})\w*", text)):
            continue  # "small left effusion (or costophrenic blunting) ... no large effusion": "no effusion" contradicts it
        add_deletion(cands, text, m.start("g"), m.end("g"), m.group("g"))
    return pick_edit(text, rng, cands, lambda old: (
        f"The grade {old!r} of a negated finding is omitted: the GT leaves a small collection open, the ME excludes "
        "any; a small effusion or pneumothorax would not change management here (Table 2, Severity I)."))


#: Lung processes to which the Appendix A example adds diffuse severe opacities.
_FOCAL_LUNG = r"opacit(?:y|ies)|consolidations?|airspace\s+disease|infiltrates?|pneumonia|atelectasis"
_ALREADY_DIFFUSE = re.compile(r"(?i)\b(?:diffuse|diffusely|widespread|extensive|severe|multifocal|edema|ARDS)\b")
_SAYS_CLEAR = re.compile(r"(?i)\bclear\b|\botherwise\b|\bremainder\b|\bremaining\b")
_NODULAR = re.compile(r"(?i)\b(?:nodul\w*|mass\w*|circular|round\w*|lucen\w*|granulom\w*|cancer|neoplas\w*)")
_NEGATED_OPACITY = re.compile(r"(?i)\b(?:opacit|consolidat|airspace|infiltrat|pneumonia)\w*")


@rule("severity", "significant", "fabrication",
      check=all_of(local_attr("severity", "differ"),
                   _span_says(me=r"diffuse\s+severe", what="an added diffuse severe process")))
def sev_add_diffuse_opacities(text: str, rng: random.Random) -> Rewrite | None:
    """Add diffuse severe bilateral opacities after a focal lung finding ("There is a left base opacity." ->
    "There is a left base opacity. There are diffuse severe opacities bilaterally."; Appendix A, Severity S:
    added "diffuse severe opacities bilaterally" to a report of focal consolidation)."""
    if any(is_positive(text, m.start(), m.end()) for m in _ALREADY_DIFFUSE.finditer(text)) or _SAYS_CLEAR.search(text):
        return None
    if any(status_at(text, m.start(), m.end()) == "negative" for m in _NEGATED_OPACITY.finditer(text)):
        return None  # "No focal airspace disease" next to diffuse opacities would be a contradiction
    starts = {}
    for m, _a, _mods in finding_nps(text, _FOCAL_LUNG):
        sent = sentence_at(text, m.start(), m.end())
        if sent is not None and not _NODULAR.search(sent.text):
            starts[sent.start] = sent
    sent = pick(rng, [starts[k] for k in sorted(starts)])
    if sent is None:
        return None
    a, b, ins = sentence_end_insert(text, sent, "There are diffuse severe opacities bilaterally.")
    return one_edit(text, a, b, ins, "Diffuse severe bilateral opacities are added to a focal lung finding: they suggest "
                                     "acute deterioration (ARDS, severe pneumonia) and may escalate treatment "
                                     "(Appendix A, Severity S).")


_PLEURAL_COLLECTION = r"effusions?|pneumothorax|hydropneumothorax"
_LOW_GRADE = re.compile(r"(?i)\b(?:trace|tiny|small|minimal|mild|slight|thin|residual|loculated|subpulmonic)\b")
_SHIFT_MENTIONED = re.compile(r"(?i)\bshift|\btension\b|\bmass\s+effect")
_SIDE_MOD = {"left": "left", "left-sided": "left", "right": "right", "right-sided": "right"}
#: The collection ends its phrase (the added clause follows it): a stop, a comma, "and", or the end.
_PHRASE_END = re.compile(r"(?i)^\s*(?:[.,;]|$)|^\s+and\b")
_SENTENCE_END = re.compile(r"^\s*(?:[.;]|$)")
#: Sentences where a mediastinal shift away from the collection would not fit (smaller, or pulling towards it).
_NO_PUSH = re.compile(r"(?i)\b(?:decreas\w*|improv\w*|resolv\w*|smaller|less|elevat\w*|volume\s+loss|collapse|"
                      r"low\s+(?:\w+\s+)?(?:lung\s+)?volumes?)\b")


@rule("severity", "significant", "fabrication",
      check=all_of(labels("same"), _span_says(me=r"with\s+\w+\s+mediastinal\s+shift", what="an added mediastinal shift")))
def sev_add_mediastinal_shift(text: str, rng: random.Random) -> Rewrite | None:
    """Give a one-sided effusion/pneumothorax that is not called small a contralateral mediastinal shift
    ("left pleural effusion" -> "left pleural effusion with rightward mediastinal shift"). (Choice: the
    paper's example adds a grade word; here the grade is implied by a fabricated sign of mass effect.)"""
    nps = finding_nps(text, _PLEURAL_COLLECTION)
    if len({_SIDE_MOD[w] for _m, _a, mods in nps for w in mods if w in _SIDE_MOD}) > 1 or any(
            "bilateral" in mods for _m, _a, mods in nps):
        return None  # collections on both sides: nothing pushes the mediastinum one way
    cands = []
    for m, _a, mods in nps:
        sides = {_SIDE_MOD[w] for w in mods if w in _SIDE_MOD}
        sent = sentence_at(text, m.start(), m.end())
        if len(sides) != 1 or sent is None or _LOW_GRADE.search(sent.text) or _NO_PUSH.search(sent.text):
            continue
        if extract_size(sent.text) or not _PHRASE_END.match(text[m.end():]):
            continue
        if _SHIFT_MENTIONED.search(text) or m.group(0).lower().endswith("s"):
            continue
        away = "rightward" if sides == {"left"} else "leftward"
        cands.append((m.end(), m.end(), " " + styled(text, m.start(), f"with {away} mediastinal shift"), m.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"A contralateral mediastinal shift is added to the {old!r}: it implies a large collection under tension, "
        "an emergency that calls for drainage (§3.1, Severity)."))


@rule("severity", "insignificant", "fabrication",
      check=all_of(labels("same"),
                   _span_says(me=r"without\s+mediastinal\s+shift", what="an added 'without mediastinal shift'")))
def sev_add_no_shift(text: str, rng: random.Random) -> Rewrite | None:
    """Add "without mediastinal shift" to a small effusion/pneumothorax ("Small right pleural effusion." ->
    "Small right pleural effusion without mediastinal shift."). (Choice: a severity statement the grade
    already implies; the paper's example adds a mild benign finding.)"""
    cands = []
    for m, _a, mods in finding_nps(text, _PLEURAL_COLLECTION):
        if _SHIFT_MENTIONED.search(text) or not any(w in ("trace", "tiny", "small", "minimal") for w in mods):
            continue
        if any(w in ("moderate", "large", "severe") for w in mods) or not _SENTENCE_END.match(text[m.end():]):
            continue  # "without" would also negate what follows: "... effusion without mediastinal shift and atelectasis"
        cands.append((m.end(), m.end(), " " + styled(text, m.start(), "without mediastinal shift"), m.group(0)))
    return pick_edit(text, rng, cands, lambda old: (
        f"'without mediastinal shift' is added to a small {old!r}: a small collection never shifts the mediastinum, "
        "so the addition changes nothing (Severity I)."))


#: Chronic incidental findings that a report may leave ungraded: nouns take "mild"/"minimal", adjectives
#: "mildly"/"minimally".
_INCIDENTAL_NOUN = re.compile(
    r"(?i)\b(?:degenerative\s+(?:changes?|disease|joint\s+disease|spurring)|spondylosis|osteophytosis|tortuosity|"
    r"(?:aortic\s+)?ectasia|(?:aortic\s+)?atherosclerosis|atherosclerotic\s+(?:calcifications?|changes?|disease)|"
    r"(?:levo|dextro)?scoliosis|kyphosis|hyperinflation|hyperexpansion|scarring|pleural\s+thickening)\b")
_INCIDENTAL_ADJ = re.compile(r"(?i)\b(?:tortuous|ectatic|hyperinflated|hyperexpanded|kyphotic)\b")
_DEGREE_OF = re.compile(r"(?i)\b(?:degree|extent|amount|level|grade)\s+of\s+$")
_TEMPORAL_LEAD = {"stable", "chronic", "persistent", "old", "unchanged"}
_SLOT_BEFORE = re.compile(r"(?i)(?:^|[.:;,]\s*|\n\s*|\b(?:are|is|appear|appears|remain|remains|with|and|there|also|"
                          r"demonstrates?|shows?|noted|see|seen|including|of)\s+)$")


@rule("severity", "insignificant", "fabrication", check=all_of(local_attr("severity", "differ"), labels("same")))
def sev_grade_incidental(text: str, rng: random.Random) -> Rewrite | None:
    """Grade an ungraded chronic incidental finding as mild ("Degenerative changes of the spine" -> "Mild
    degenerative changes of the spine"; "The aorta is tortuous" -> "The aorta is mildly tortuous"). (Choice:
    Appendix A, Severity I adds a mild benign finding; here a present one gets a mild grade.)"""
    cands = []
    for pat, adverb in ((_INCIDENTAL_NOUN, False), (_INCIDENTAL_ADJ, True)):
        for m in pat.finditer(text):
            if not is_positive(text, m.start(), m.end()):
                continue
            a, mods = np_start(text, m.start())
            if any(w in SEVERITY_WORDS or w.split("-")[0] in SEVERITY_WORDS or w == "borderline" for w in mods):
                continue
            prev = re.search(r"([A-Za-z-]+)\W*$", text[max(0, a - 30):a])
            if prev and (prev.group(1).lower() in SEVERITY_WORDS or prev.group(1).lower() in _ADVERBS):
                continue
            if not _SLOT_BEFORE.search(text[max(0, a - 30):a]) or _DEGREE_OF.search(text[max(0, a - 30):a]):
                continue  # "thoracic spine degenerative changes", "the degree of lung hyperinflation"
            pos = a
            for w in mods:
                if w not in _TEMPORAL_LEAD:
                    break
                pos = re.match(r"[\w-]+\s+", text[pos:]).end() + pos
            cands.append((pos, adverb, m.group(0)))
    c = pick(rng, sorted(set(cands)))
    if c is None:
        return None
    pos, adverb, old = c
    word = (("mildly", "minimally") if adverb else ("mild", "minimal"))[rng.randrange(2)]
    a, b, new = _insert_word(text, pos, word)
    return one_edit(text, a, b, new, f"A {word!r} grade is added to the chronic incidental finding {old!r}; its degree does "
                                     "not alter management (Appendix A, Severity I).")
