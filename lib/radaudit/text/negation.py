"""Negation and uncertainty of a finding mention, with scope, by documented cue rules.

What it does
------------
:func:`find_cues` finds the negation, uncertainty and pseudo-negation *cues* of one sentence and
the *scope* of each (the character ranges it governs); :func:`classify_mention` says whether a
mention (a character span in that sentence, e.g. the ``"effusion"`` that a phrase list found) is
``"positive"``, ``"negative"`` or ``"uncertain"``; :func:`explain_mention` also returns the cues
that decided it.

Why rules and not medspaCy / negspacy / NegBio
---------------------------------------------
- NegBio and the CheXpert labeler express their rules as Semgrex patterns over a dependency
  parse (the Bllip parser + GENIA model): neither the parser model nor a Java/CoreNLP toolchain
  can be installed here, and they are slow (about a report a second).
- medspaCy 1.3.1 installs from PyPI but pins ``spacy==3.7.5`` and ``numpy<2`` (``numpy==1.26.4``),
  which conflicts with this project's numpy 2. In a scratch environment its default ConText rules
  got three of five core cases wrong ("Cannot exclude small effusion" -> negated instead of
  uncertain, "No change in the small effusion" -> negated, "Effusion has resolved" -> not
  negated) and took 29 s for the 3,851 IU X-ray reports (this module: well under a second).
  negspacy implements NegEx (negation only, no uncertainty) and needs a spaCy model for entities.
- So this module re-expresses the NegBio / CheXpert-labeler patterns
  (``cxr-label-phrases/negbio/patterns/{neg,uncertainty}_patterns.txt``,
  ``chexpert-labeler/patterns/{pre_negation_uncertainty,negation,post_negation_uncertainty}.txt``)
  as surface cues with a NegEx-style scope (Chapman et al. 2001; pyConText's terminators,
  Harkema et al. 2009). Each rule in :data:`CUE_RULES` names the pattern it comes from.

Decision order (CheXpert labeler, ``stages/classify.py``, ``ModifiedDetector.detect``)
-------------------------------------------------------------------------------------
A mention covered by the scope of

1. a *pre-negation uncertainty* cue ("cannot exclude", "cannot be excluded", "not ruled out",
   "no new", "no evidence to rule out") is ``"uncertain"``; otherwise
2. a *negation* cue ("no", "without", "negative for", "is not seen", "has resolved", "normal",
   ...) is ``"negative"``; otherwise
3. a *post-negation uncertainty* cue ("possible", "may represent", "versus", "or", "?", ...) is
   ``"uncertain"``; otherwise
4. it is ``"positive"``.

*Pseudo-negation* cues (NegEx's pseudo-triggers; pyConText ``PSEUDO``) such as "no change in",
"no significant interval change", "not significantly changed", "no increase in" are matched
first and govern nothing: they only stop their words from being read as a negation. "No change
in the small effusion" therefore leaves "effusion" ``"positive"`` (the effusion is present and
unchanged).

"no new" (documented choice)
----------------------------
"No new consolidation" says nothing new appeared; an old consolidation may persist. The CheXpert
labeler's pre-negation uncertainty rule ``no new XXX`` labels it uncertain, and that is the
default here (``no_new="uncertain"``) so that labels stay comparable with CheXpert. Pass
``no_new="negative"`` to read it as a negation (as NegEx and medspaCy do). "No new" is NOT
"no change": "no change in the effusion" is a pseudo-negation (the effusion is present).

Scope rules
-----------
Matching is case-insensitive, on whole words, over one sentence (see
:func:`radaudit.text.sections.sentences`). At each position the first rule of :data:`CUE_RULES`
that matches wins, and the rules are ordered longest/most specific first, so "no evidence of"
wins over "no", "cannot be excluded" over "excluded", "not well seen" over "not seen".

- *forward* cues ("no", "possible", "cannot exclude", ...) govern the text after them up to
  the first *terminator*: ``;`` or ``:``, "but", "however", "although", "though", "whereas",
  "which", "except", "with the exception of", "apart from", "aside from", "other than",
  "otherwise", "yet", "nevertheless", "nonetheless", "there is/are/was/were/has been/have been"
  (pyConText's conjunction/termination words; NegBio's ``conj:but`` split). Commas do not end a
  forward scope, so "No pleural effusion, pneumothorax, or consolidation" negates all three.
  A forward scope also ends where a later *strong* cue of another kind starts ("No pleural
  effusion, may represent atelectasis": the atelectasis is uncertain; "Cannot exclude pneumonia,
  no effusion": the effusion is negative), except within the first two words after the cue.
- *backward* cues ("is not seen", "has resolved", "are absent", "is excluded", "cannot be
  excluded", "is normal", "is likely", trailing "?") govern the clause before them: back to the
  previous terminator or parenthesis, or to the previous verb ("is", "are", "appear(s)",
  "remain(s)", "has", "have", ...) that is not part of the cue's own verb group ("The cardiac
  silhouette is enlarged and the pulmonary vascularity is normal": "normal" does not reach the
  silhouette). Words right before the cue such as "is", "are", "appear", "remains", "again",
  "otherwise", "stable and", adverbs in "-ly" and IU's de-identification token "XXXX" belong to
  the cue's verb group. A comma ends the scope too, unless it separates a coordinated subject
  list ("The heart, pulmonary XXXX and mediastinum are within normal limits", "Heart size,
  mediastinal silhouette, pulmonary vascularity are within normal limits": an "and"/"or" after
  the comma or a plural verb) and the verb group has no "otherwise" ("Left basilar atelectasis,
  the lungs are otherwise clear" keeps the atelectasis). Windowed cues never cross a comma
  backwards.
- *both* ("versus", "or", "is not", "normal", "resolved", "no longer") govern both sides.
- Some cues have a word window (``forward_tokens``/``backward_tokens`` in :data:`CUE_RULES`):
  "or" and "/" reach 3 words on each side, "versus"/"vs" 4, "normal"/"within normal limits" 6
  words forward ("normal in size and contour"), a leading "?" 3 words forward. A windowed scope
  does not cross a comma, except the forward window of a two-way cue that opens its clause
  ("Normal heart size, mediastinal and aortic contours": a list; but "Heart size within normal
  limits for technique, retrocardiac opacity": the opacity is not normal).
- *Weak* cues never end another cue's scope: "or", "and/or", "X/Y" and "versus" ("No pleural
  effusion or pneumothorax": both stay negated, negation outranks them), "to suggest" (NegBio's
  "no NN to suggest XXX": "There is no focal air space opacity to suggest a pneumonia" negates the
  pneumonia), and the adjectival hedges "possible", "questionable", "suspicious", "likely", ...,
  which modify one noun phrase: "No focal consolidation, suspicious pulmonary opacity, pleural
  effusion, or pneumothorax" negates all four (as NegBio's propagation over the conjunction
  does). The price: in "No effusion, possible small pneumothorax" the pneumothorax is negative
  too (NegBio/CheXpert read it the same way).
- A mention is in a forward scope when it starts inside it, in a backward scope when it lies
  wholly inside it.

CheXpert patterns NOT re-expressed here (they need the parse or are labeler-level): the
cardiomediastinal "stable/unchanged/similar to prior" and "borderline heart size" rules and the
always-uncertain "vascular congestion"/"indistinctness" mentions live in
:mod:`radaudit.text.labeler`; "secondary to XXX" (CheXpert: uncertain) is not used because it
states a cause, not a doubt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = [
    "Status", "CueRule", "Cue", "CUE_RULES", "cue_rules", "find_cues", "classify_mention",
    "explain_mention",
]

Status = Literal["positive", "negative", "uncertain"]
Kind = Literal["negation", "uncertainty", "pseudo"]
Direction = Literal["forward", "backward", "both"]
Phase = Literal["pre", "main", "post", "none"]


@dataclass(frozen=True)
class CueRule:
    """One cue: ``pattern`` (a regex over lower-cased text, matched on whole words), what it
    signals (``kind``), which way its scope runs, its ``phase`` in the CheXpert decision order
    (``"pre"`` = pre-negation uncertainty, ``"main"`` = negation, ``"post"`` = post-negation
    uncertainty, ``"none"`` = pseudo), optional word windows, ``weak`` (never ends another cue's
    scope), and ``source``: the NegBio / CheXpert pattern (or other reference) it re-expresses."""

    name: str
    pattern: str
    kind: Kind
    direction: Direction
    phase: Phase
    source: str
    forward_tokens: int | None = None
    backward_tokens: int | None = None
    weak: bool = False


@dataclass(frozen=True)
class Cue:
    """A cue found in a sentence: the rule's name/kind/phase, the matched ``text`` and its span,
    and ``scopes``: the character ranges ``[start, end)`` it governs (one per direction)."""

    rule: str
    kind: Kind
    phase: Phase
    text: str
    start: int
    end: int
    scopes: tuple[tuple[int, int], ...]
    directions: tuple[str, ...]

    def covers(self, span: tuple[int, int]) -> bool:
        """Whether the mention ``span`` is in this cue's scope (rule in the module docstring)."""
        s, e = span
        for (a, b), d in zip(self.scopes, self.directions):
            if d == "forward" and a <= s < b:
                return True
            if d == "backward" and a <= s and e <= b:
                return True
        return False


_ADV = r"(?:\w+ly\s+)?"  # one optional adverb: "cannot be entirely excluded"
_NOT = r"(?:can\s*not|can't|could\s+not|couldn't|not)"
_BE = r"(?:is|are|was|were|be|been)"
_CHANGE = r"(?:changes?|changed|increase[sd]?|decrease[sd]?|progression|progressed|worsening|worsened|improvement|improved)"
_CHANGE_ADJ = (r"(?:significant|appreciable|definite|substantial|interval|acute|major|gross|visible|radiographic|"
               r"notable|marked|measurable|short-term|significantly|substantially|appreciably|definitely|further)")
_SEEN = (r"(?:seen|identified|visualized|visualised|demonstrated|appreciated|present|evident|noted|detected|visible|"
         r"apparent|observed|shown)")

#: The cue rules, in matching priority (first match at a position wins). ``no_new`` is handled by
#: :func:`cue_rules`.
CUE_RULES: tuple[CueRule, ...] = (
    # ---- pseudo-negations (match first; govern nothing)
    CueRule("pseudo: no (significant/interval) change/increase", rf"no\s+(?:{_CHANGE_ADJ}\s+){{0,2}}{_CHANGE}",
            "pseudo", "forward", "none",
            "NegEx pseudo-triggers (Chapman 2001); pyConText 'no change'; brief: 'no change in the small effusion'"),
    CueRule("pseudo: not (significantly) changed",
            rf"(?:(?:has|have|had)\s+)?not\s+(?:(?:been|{_CHANGE_ADJ})\s+){{0,2}}{_CHANGE}",
            "pseudo", "forward", "none", "NegEx pseudo-triggers"),
    CueRule("pseudo: without (interval) change", rf"without\s+(?:{_CHANGE_ADJ}\s+){{0,2}}{_CHANGE}",
            "pseudo", "forward", "none", "NegEx pseudo-triggers"),
    CueRule("pseudo: not only / no doubt / gram negative", r"not\s+only|no\s+doubt|gram[-\s]negative|not\s+necessarily",
            "pseudo", "forward", "none", "NegEx pseudo-triggers"),
    # ---- pre-negation uncertainty (CheXpert pre_negation_uncertainty.txt; NegBio uncertainty_patterns.txt)
    CueRule("cannot be excluded", rf"{_NOT}\s+(?:be\s+)?{_ADV}(?:excluded|ruled\s+out)",
            "uncertainty", "backward", "pre",
            "CheXpert pre-neg '# XXX is not excluded'; NegBio '# XXX is not excluded' (nsubjpass exclude + neg/cannot)"),
    CueRule("cannot exclude / rule out",
            rf"(?:{_NOT}|difficult\s+to|unable\s+to|impossible\s+to|hard\s+to)\s+{_ADV}(?:exclude|rule\s+out|r/o)",
            "uncertainty", "forward", "pre",
            "CheXpert pre-neg '# cannot exclude some XXX', '# cannot rule out XXX'; NegBio '# cannot exclude XXX'"),
    CueRule("no evidence to rule out", r"no\s+evidence\s+to\s+(?:rule\s+out|exclude)",
            "uncertainty", "forward", "pre", "CheXpert pre-neg '# no evidence to rule out XXX'"),
    CueRule("no new", r"no\s+(?:definite\s+|other\s+|obvious\s+)?new",
            "uncertainty", "forward", "pre",
            "CheXpert pre-neg '# no new XXX', '# no new area of XXX' (see 'no new' in the module docstring)"),
    # ---- post-negation uncertainty that must beat a shorter negation at the same position
    CueRule("not well seen",
            rf"(?:{_BE}\s+)?not\s+(?:well|clearly|definitely|optimally|fully)\s+"
            rf"(?:seen|visualized|visualised|evaluated|assessed|demonstrated|delineated)",
            "uncertainty", "backward", "post",
            "CheXpert post-neg '# XXX is not well visualized/evaluated', '# XXX are not clearly seen'"),
    CueRule("poorly evaluated",
            rf"(?:{_BE}\s+)?(?:poorly|incompletely|suboptimally)\s+(?:seen|visualized|visualised|evaluated|assessed)",
            "uncertainty", "backward", "post",
            "CheXpert post-neg '# XXX is poorly evaluated', '# XXX is incompletely evaluated'"),
    # ---- negation (CheXpert negation.txt; NegBio neg_patterns.txt)
    CueRule("without evidence of",
            r"without\s+(?:any\s+)?(?:\w+\s+)?(?:evidence|signs?|findings?|features?|development)\s+(?:of|for|to\s+suggest)",
            "negation", "forward", "main",
            "NegBio/CheXpert '# without evidence|finding of|for XXX', '# without development of XXX'"),
    CueRule("no evidence of",
            r"no\s+(?:\w+\s+)?(?:evidence|signs?|findings?|features?|focus|foci|areas?|development|suggestion)\s+"
            r"(?:of|for|to\s+suggest|suggestive\s+of)",
            "negation", "forward", "main",
            "NegBio/CheXpert '# no evidence of|for XXX', '# no focus of XXX', '# no area of XXX', "
            "'# No development of XXX'"),
    CueRule("negative for / free of / resolution of / history of",
            r"negative\s+for|free\s+of|clear\s+of|absence\s+of|"
            r"(?:interval\s+)?(?:resolution|disappearance|removal|clearing|drainage)\s+of|history\s+of",
            "negation", "forward", "main",
            "NegBio '{} <nmod:of {lemma:/history|free|disappearance|resolution|drainage|removal/}', "
            "'{} <nmod:for negative', '{} <nmod:of clear|clearing'"),
    CueRule("rather than", r"rather\s+than|instead\s+of",
            "negation", "forward", "main", "NegBio '# rather than XXX' (conj:negcc)"),
    CueRule("may not be seen", rf"(?:may|might|could|can|would)\s+not\s+be\s+(?:{_ADV}){_SEEN}",
            "uncertainty", "backward", "pre",
            "NegBio '# XXX is not demonstrated/visualized' under a modal: 'fractures may not be demonstrated' "
            "(a limitation, not a negation)"),
    CueRule("no longer seen is X",
            rf"(?:(?:also|now)\s+)?(?:(?:no\s+longer|not)\s+(?:{_ADV}){_SEEN}|(?:{_ADV})(?:resolved|cleared))\s+(?:is|are)",
            "negation", "forward", "main",
            "inverted subject of CheXpert '# XXX is no longer seen' / NegBio '# XXX has resolved': "
            "'No longer seen is the left effusion', 'Also resolved are the bibasilar opacities'", forward_tokens=8),
    CueRule("not seen", rf"(?:{_BE}\s+)?(?:not|no\s+longer)\s+(?:be\s+)?(?:{_ADV}){_SEEN}",
            "negation", "backward", "main",
            "NegBio '# XXX is not demonstrated/visualized'; CheXpert '# XXX is no longer seen'"),
    CueRule("resolved X", r"resolved|no\s+longer",
            "negation", "both", "main", "NegBio '{} <{} {lemma:/resolve/}'; CheXpert '# XXX is no longer seen'",
            forward_tokens=4),
    CueRule("has resolved / removed / absent",
            r"(?:(?:has|have|had)\s+(?:since\s+|now\s+|completely\s+)?)?(?:resolved|cleared)|"
            r"(?:has|have)\s+been\s+(?:removed|excluded|ruled\s+out)|(?:is|are|was|were)\s+(?:removed|excluded|absent)|"
            r"removed|absent|excluded|ruled\s+out",
            "negation", "backward", "main",
            "NegBio/CheXpert '# XXX has resolved', '# XXX removed', '{} < nsubj absent', '# exclude XXX', "
            "'XXX has/have cleared'"),
    CueRule("within normal limits",
            r"(?:(?:at|within|on|near|in)\s+(?:the\s+)?)?(?:(?:upper|top|high)\s+)?(?:normal\s+)?limits?\s+(?:of\s+)?normal|"
            r"within\s+(?:\w+\s+)?normal\s+limits|(?:top|upper|high)[-\s]normal|normal|unremarkable",
            "negation", "both", "main",
            "CheXpert '# XXX within normal limits', '# normal/unremarkable XXX | XXX is/appears normal/unremarkable', "
            "'limit upper of normal'",
            forward_tokens=6),
    CueRule("is not", r"(?:is|are|was|were|does|do|did|has|have)\s+not|isn't|aren't|doesn't|don't",
            "negation", "both", "main", "NegBio/CheXpert '{} >neg {}' ('# XXX is not enlarged')"),
    CueRule("no / without", r"no|not|without|w/o|nor|neither|never|none\s+of",
            "negation", "forward", "main",
            "NegBio/CheXpert '# no XXX / general negative case': '{} >neg {}', '{} > {lemma:/no/}', '{} >case without'"),
    # ---- post-negation uncertainty (CheXpert post_negation_uncertainty.txt; NegBio uncertainty_patterns.txt)
    CueRule("to suggest", r"(?:to|that\s+would|which\s+would)\s+(?:suggest|indicate|explain|represent)|suggestive\s+of",
            "uncertainty", "forward", "post",
            "NegBio '# there is no NN to suggest/explain XXX', '# no NN to suggest/explain XXX' "
            "(weak: a preceding 'no' keeps its scope)",
            weak=True),
    CueRule("may be present", r"(?:may|might|could|can|possibly)\s+(?:also\s+)?be\s+(?:present|seen|related)",
            "uncertainty", "backward", "post", "CheXpert post-neg '# XXX could/might/may/possibly be present'"),
    CueRule("is likely / suspected",
            r"(?:is|are)\s+(?:\w+ly\s+)?(?:likely|suspected|possible|probable|questioned|favored|favoured|considered|suggested)|"
            r"(?:is|are)\s+not\s+excluded",
            "uncertainty", "backward", "post", "NegBio '# XXX suspected' (nsubj suspect); brief: 'likely'"),
    CueRule("may represent",
            r"(?:may|might|could|would|can)\s+(?:also\s+|possibly\s+|well\s+|partly\s+|partially\s+|in\s+part\s+)?"
            r"(?:be|represent|reflect|indicate|include|relate|signify|correspond|suggest|account|have)",
            "uncertainty", "forward", "post",
            "NegBio/CheXpert '# may/could represent/reflect/indicate/include XXX', '# may be XXX', '# may be due to XXX'"),
    CueRule("possible",
            r"possible|possibly|probable|probably|likely|questionable|questionably|question(?:\s+of)?|questioned|"
            r"suspect(?:ed|s)?|suspicious(?:\s+(?:for|of))?|suspicion\s+(?:for|of)|presumed|presumably|equivocal|"
            r"indeterminate|uncertain",
            "uncertainty", "forward", "post",
            "NegBio/CheXpert outgoing edge "
            "{lemma:/possible|possibly|presumably|probable|questionable|suspect|suspected|suspicious/}, "
            "'{} >{} {lemma:/question/}', '{} <nmod:of question' "
            "(weak: a modifier inside a negated list, 'no consolidation, suspicious opacity, or effusion')",
            weak=True),
    CueRule("suggestive of",
            r"suggestive\s+of|suggest(?:s|ing|ed)?|suggestion\s+of|concerning\s+for|concern\s+for|worrisome\s+for|"
            r"worrisome|compatible\s+with\s+(?:early|developing)|consider(?:ed)?|favou?r(?:s|ed|ing)?|"
            r"differential\s+(?:diagnosis\s+)?(?:includes?|of|considerations?\s+includes?)",
            "uncertainty", "forward", "post",
            "NegBio incoming edge {lemma:/suspect|favor|suggest|suggesting|question|consider/}, "
            "'<nmod:for concern|suspicion'; CheXpert '<nmod:for worrisome', '# differential diagnosis includes'"),
    CueRule("rule out", r"rule\s+out|r/o|to\s+exclude|(?:to\s+)?(?:evaluate|eval|evaluation|assess|assessment|check)\s+for",
            "uncertainty", "forward", "post",
            "NegBio '{} <nmod:out {lemma:/rule/}' (in indications: a question); brief: 'rule out'/'r/o' -> uncertain"),
    # "X obscuring the Y": only Y (the obscured thing) is uncertain, as in CheXpert's pattern; X is what is seen
    # ("retrocardiac opacity obscuring the left hemidiaphragm" is a definite opacity)
    CueRule("obscuring", r"obscur(?:es|ing)",
            "uncertainty", "forward", "post", "CheXpert post-neg '# obscuring the XXX'", forward_tokens=4),
    CueRule("obscured", r"(?:is|are)\s+obscured|obscured",
            "uncertainty", "both", "post", "CheXpert post-neg 'XXX is obscured | obscured XXX'", forward_tokens=4,
            backward_tokens=4),
    CueRule("versus", r"versus|vs\.?",
            "uncertainty", "both", "post", "CheXpert post-neg '# XXX versus YYY' (conj:versus)",
            forward_tokens=4, backward_tokens=4, weak=True),
    CueRule("or", r"and/or|or|(?<=[a-z])/(?=[a-z])(?<!\bw/)(?<!\br/)(?<!\bs/)(?<!\bc/)(?<!\bn/)",
            "uncertainty", "both", "post",
            "CheXpert post-neg '# XXX or YYY' (conj:or); chexpert-labeler loader turns 'and/or' and 'X/Y' into 'or'",
            forward_tokens=3, backward_tokens=3, weak=True),
    CueRule("question mark", r"\?",
            "uncertainty", "both", "post", "NegBio '{} >{} {lemma:/question/}' ('? pneumonia', 'pneumonia?')",
            forward_tokens=3, backward_tokens=3),
)

_TERMINATOR_WORDS = (
    r"but|however|although|though|whereas|which|except|excepting|with\s+the\s+exception\s+of|apart\s+from|"
    r"aside\s+from|other\s+than|otherwise|yet|nevertheless|nonetheless|"
    r"there\s+(?:is|are|was|were|has\s+been|have\s+been)"
)
_VERBS = frozenset({
    "is", "are", "was", "were", "appear", "appears", "appeared", "seem", "seems", "remain", "remains",
    "remained", "has", "have", "had", "show", "shows", "demonstrate", "demonstrates", "measures", "measure",
})
#: Words right before a backward cue that belong to its verb group ("heart size is again normal").
_VERB_GROUP = _VERBS | frozenset({
    "be", "been", "being", "again", "now", "still", "also", "otherwise", "overall", "grossly", "essentially",
    "largely", "generally", "completely", "stable", "and", "to", "within", "entirely", "become", "becomes",
    "near", "at", "on", "in", "of", "the", "a", "an", "as",
})
_PLURAL_VERBS = frozenset({"are", "were", "appear", "seem", "remain", "have"})
_TOKEN = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*|[^\sa-z0-9]")
_GRACE_TOKENS = 2


@lru_cache(maxsize=4)
def cue_rules(no_new: Literal["uncertain", "negative"] = "uncertain") -> tuple[CueRule, ...]:
    """:data:`CUE_RULES` with the "no new" rule set as ``no_new`` says (module docstring)."""
    if no_new not in ("uncertain", "negative"):
        raise ValueError(f"no_new={no_new!r}: use 'uncertain' (CheXpert) or 'negative'.")
    if no_new == "uncertain":
        return CUE_RULES
    out = []
    for r in CUE_RULES:
        if r.name == "no new":
            r = CueRule(r.name, r.pattern, "negation", "forward", "main",
                        r.source + "; read as negation (no_new='negative')")
        out.append(r)
    return tuple(out)


@lru_cache(maxsize=4)
def _compiled(no_new: str) -> tuple[re.Pattern[str], re.Pattern[str], tuple[CueRule, ...]]:
    """One alternation of all rules (first rule wins at a position), each alternative on whole
    words: not glued to a letter/digit on either side unless it starts/ends with punctuation."""
    rules = cue_rules(no_new)  # type: ignore[arg-type]
    alternation = "|".join(f"(?P<c{i}>{r.pattern})" for i, r in enumerate(rules))
    cue_re = re.compile(rf"(?:(?<!\w)|(?=\W))(?:{alternation})(?:(?!\w)|(?<=\W))")
    term_re = re.compile(rf"(?<!\w)(?:{_TERMINATOR_WORDS})(?!\w)|[;:]")
    return cue_re, term_re, rules


def _lower(text: str) -> str:
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters change length when lower-cased
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return low


def _match_cues(low: str, cue_re: re.Pattern[str], rules: tuple[CueRule, ...]) -> list[tuple[CueRule, int, int]]:
    """Leftmost, first-rule-wins, non-overlapping matches on whole words."""
    return [(rules[int(m.lastgroup[1:])], m.start(), m.end()) for m in cue_re.finditer(low) if m.end() > m.start()]


def _has_subject(toks: list[tuple[int, int, str]], start: int, term_re: re.Pattern[str], low: str) -> bool:
    """Whether a word precedes the cue in its clause (back to a comma, terminator or sentence
    start): the cue is used predicatively ("heart size within normal limits, ...")."""
    for a, _b, w in reversed([t for t in toks if t[1] <= start]):
        if w in ",;:()" or term_re.match(low, a):
            return False
        if w[0].isalnum() and w not in _VERB_GROUP:
            return True
    return False


def _tokens(low: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(low)]


def find_cues(sentence: str, *, no_new: Literal["uncertain", "negative"] = "uncertain") -> list[Cue]:
    """All cues in ``sentence`` with their scopes, in order of position (rules: module docstring).

    >>> [(c.rule, c.text) for c in find_cues("No change in the small effusion.")]
    [('pseudo: no (significant/interval) change/increase', 'No change')]
    >>> c = find_cues("Pneumothorax has resolved.")[0]
    >>> c.kind, "Pneumothorax has resolved."[slice(*c.scopes[0])]
    ('negation', 'Pneumothorax ')
    """
    if not sentence:
        return []
    return list(_find_cues(sentence, no_new))


@lru_cache(maxsize=16384)
def _find_cues(sentence: str, no_new: Literal["uncertain", "negative"]) -> tuple[Cue, ...]:
    """:func:`find_cues` of a non-empty sentence, memoised: report rewriting classifies mentions of the same
    sentences again for every rule and check. :class:`Cue` is frozen and the caller gets a new list."""
    cue_re, term_re, rules = _compiled(no_new)
    low = _lower(sentence)
    hits = _match_cues(low, cue_re, rules)
    if not hits:
        return []
    toks = _tokens(low)
    terms = [(m.start(), m.end()) for m in term_re.finditer(low)]
    n = len(low)
    cues: list[Cue] = []
    for idx, (rule, start, end) in enumerate(hits):
        scopes: list[tuple[int, int]] = []
        dirs: list[str] = []
        if rule.direction in ("forward", "both"):
            stop = n
            for a, _ in terms:
                if a >= end:
                    stop = min(stop, a)
                    break
            after = [t for t in toks if t[0] >= end]
            grace_end = after[_GRACE_TOKENS - 1][1] if len(after) >= _GRACE_TOKENS else n
            for other, a, _b in hits[idx + 1:]:
                if a >= stop:
                    break
                if other.kind != rule.kind and not other.weak and a >= grace_end:
                    stop = a
                    break
            if rule.forward_tokens is not None:
                if len(after) > rule.forward_tokens:
                    stop = min(stop, after[rule.forward_tokens - 1][1])
                comma = next((t[0] for t in after[: rule.forward_tokens] if t[2] == ","), None)
                if comma is not None and (rule.direction == "forward" or _has_subject(toks, start, term_re, low)):
                    stop = min(stop, comma)  # see "Windowed scopes" in the module docstring
            scopes.append((end, stop))
            dirs.append("forward")
        if rule.direction in ("backward", "both"):
            before = [t for t in toks if t[1] <= start]
            # the cue's own verb group ("is", "are again", "is XXXX", "stable and") is skipped
            i = len(before) - 1
            group: list[str] = []
            while i >= 0 and (before[i][2] in _VERB_GROUP or before[i][2].endswith("ly") or before[i][2] == "xxxx"):
                group.append(before[i][2])
                i -= 1
            # a comma-separated subject list ("The heart, pulmonary XXXX and mediastinum are normal")
            # is crossed when it is coordinated ("and"/"or") or the verb is plural, unless the
            # verb group says "otherwise" (an exception: "Atelectasis, lungs are otherwise clear")
            lists_ok = "otherwise" not in group
            plural = any(w in _PLURAL_VERBS for w in group)
            coordinated = False
            lo = 0
            count = 0
            while i >= 0:
                a, b, w = before[i]
                if w in "()[]" or w in _VERBS or any(ta <= a < tb for ta, tb in terms):
                    lo = b
                    break
                if w in ("and", "or"):
                    coordinated = True
                if w == "," and not (lists_ok and (coordinated or plural) and rule.backward_tokens is None):
                    lo = b
                    break
                count += 1
                if rule.backward_tokens is not None and count > rule.backward_tokens:
                    lo = b
                    break
                i -= 1
            for other, a, b in reversed(hits[:idx]):
                if b <= lo:
                    break
                if other.kind != rule.kind and not other.weak:
                    lo = max(lo, b)
                    break
            scopes.append((lo, start))
            dirs.append("backward")
        cues.append(Cue(rule.name, rule.kind, rule.phase, sentence[start:end], start, end, tuple(scopes), tuple(dirs)))
    return tuple(cues)


_PHASE_ORDER = {"pre": 0, "main": 1, "post": 2}


def explain_mention(
    sentence: str,
    span: tuple[int, int],
    *,
    cues: list[Cue] | None = None,
    no_new: Literal["uncertain", "negative"] = "uncertain",
) -> tuple[Status, list[Cue]]:
    """``(status, covering cues)`` of the mention at ``span`` in ``sentence``; the first covering
    cue of the deciding phase decided (decision order in the module docstring)."""
    s, e = span
    if not (0 <= s < e <= len(sentence)):
        raise ValueError(f"span {span} is not a non-empty range inside the sentence (length {len(sentence)}).")
    if cues is None:
        cues = find_cues(sentence, no_new=no_new)
    covering = [c for c in cues if c.kind != "pseudo" and not (c.start < e and s < c.end) and c.covers(span)]
    if not covering:
        return "positive", []
    covering.sort(key=lambda c: (_PHASE_ORDER[c.phase], abs(c.start - s)))
    top = covering[0]
    status: Status = "negative" if top.kind == "negation" else "uncertain"
    return status, covering


def classify_mention(
    sentence: str,
    span: tuple[int, int],
    *,
    cues: list[Cue] | None = None,
    no_new: Literal["uncertain", "negative"] = "uncertain",
) -> Status:
    """``"positive"``, ``"negative"`` or ``"uncertain"`` for the mention ``sentence[span[0]:span[1]]``.

    Pass ``cues`` (from :func:`find_cues`) to classify several mentions of one sentence without
    matching the cues again.

    >>> s = "No change in the small effusion."
    >>> classify_mention(s, (s.index("effusion"), s.index("effusion") + 8))
    'positive'
    >>> s = "Cannot exclude small left pleural effusion."
    >>> classify_mention(s, (s.index("effusion"), s.index("effusion") + 8))
    'uncertain'
    """
    return explain_mention(sentence, span, cues=cues, no_new=no_new)[0]
