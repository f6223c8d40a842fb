"""A CheXpert-style labeler: 14 observations x {1 positive, 0 negative, -1 uncertain, NaN blank}.

It re-implements the three stages of the CheXpert labeler (Irvin et al., AAAI 2019;
``stanfordmlgroup/chexpert-labeler`` at commit ``44ddeb36``): *extract* mentions with the public
mention/unmention phrase lists, *classify* each mention as negative/uncertain/positive, and
*aggregate* mentions into one label per observation. The phrase lists are data: they are read
from the data root (:func:`radaudit.data.chexpert_phrases_dir`, the files
``chexpert-labeler/phrases/{mention,unmention}/<observation>.txt``), never copied into this
repository. Classification uses :mod:`radaudit.text.negation` (regex cues re-expressing the
NegBio/CheXpert dependency patterns) instead of the Bllip parse + Semgrex patterns.

Extraction (``stages/extract.py``)
----------------------------------
- The text is split into sentences (:func:`radaudit.text.sections.sentences`) and matched
  case-insensitively, one sentence at a time.
- Observation name = file stem with ``_`` -> space, title-cased (``lung_opacity`` -> ``Lung
  Opacity``). Each line of ``mention/<obs>.txt`` is a phrase; ``_`` in a phrase marks a word edge
  (``_mediastinum``, ``_line_``, ``drain_``).
- A match that overlaps an *unmention* phrase of the same observation is dropped
  (``unmention/{lung_lesion,lung_opacity,pleural_effusion}.txt``: "calcified nodul", "massive",
  "pleural scar", "pericardial effusion", ...). As in ``Extractor.add_unmention_phrases``,
  Cardiomegaly and Enlarged Cardiomediastinum also get *positional* unmentions: "over the",
  "overly the", "in the" + optional "superior/left/right" + the phrase (without "the"), e.g.
  "density over the heart".
- ``no_finding.txt`` is not a list of normal phrases but of other abnormalities (emphysema,
  scoliosis, granuloma, ...): their mentions only decide "No Finding".

Classification (``stages/classify.py``)
---------------------------------------
:func:`radaudit.text.negation.explain_mention`: pre-negation uncertainty > negation >
post-negation uncertainty > positive. Three CheXpert patterns that act on the mention itself are
applied here, after that decision, to mentions that came out positive:

- ``post_negation_uncertainty.txt``, "# vascular congestion / pulmonary congestion /
  indistinctness / vascular prominence": those Edema mentions are uncertain.
- "# Stable/unchanged silhouette/cardiomediastinal", "# Silhouette/cardiomediastinal similar to
  prior", "# Stable apparence of silhouette": a Cardiomegaly or Enlarged Cardiomediastinum
  mention that names an anatomical structure rather than an abnormality ("heart size", "the
  heart", "cardiac silhouette", "mediastinal contour", ...; not "cardiomegaly", "cardiac
  enlargement", "enlarged heart") is uncertain when its clause says stable / unchanged / similar /
  not changed / no change.
- "# borderline heart size": the same anatomical mentions are uncertain next to "borderline".

Aggregation (``stages/aggregate.py``)
-------------------------------------
- Per observation, from its mention labels: only one kind -> that label; positive with anything
  -> 1; negative and uncertain (no positive) -> -1; no mention -> NaN (blank).
- A positive or uncertain "chf"/"heart failure" mention also adds an uncertain Cardiomegaly
  mention (the labeler's exception for CHF).
- No Finding = 1 when no mention of any observation other than Support Devices, nor of a
  ``no_finding.txt`` abnormality, is positive or uncertain; otherwise blank (the labeler never
  writes 0 for No Finding).

Deviations from the CheXpert labeler (all deliberate)
----------------------------------------------------
1. Negation/uncertainty by surface cues with scope (:mod:`radaudit.text.negation`), not by a
   dependency parse: no parser model can be installed here, and the parse-based labeler takes
   about a second per report. Where the parse would attach a cue differently the labels differ.
2. Phrases match anywhere, as raw substrings, like the labeler's ``re.finditer(phrase, text)``
   ("mediastinal silhouette" inside "cardiomediastinal silhouette"); a match runs on to the end
   of its word so that a mention reads "atelectasis", not "atelecta" (the match start, which is
   what the scopes use, is the labeler's). Spaces and hyphens in phrases match any run of
   whitespace or hyphens (hard-wrapped MIMIC-CXR / CheXpert Plus lines; "pleural-parenchymal
   scar" for the listed "pleural parenchymal scar"); the labeler's loader instead collapses
   whitespace and keeps hyphens.
3. Extra unmentions for substrings that are not the observation (:data:`EXTRA_UNMENTIONS`):
   "tube" in "tuberculosis"/"tuberosity", "plate" in "endplate"/"plate-like atelectasis"/
   "plateau", "lines" in "Kerley B lines"/"septal lines"/"suture lines", "line" in "pleural
   line"/"skin line"/"junction line" for Support Devices; "fibrosis" in "cystic fibrosis" for
   Pleural Other; "overlying/projecting over/projected over/behind the ..." and the positions
   "middle/inferior/lower/upper/mid" added to the positional unmentions of Cardiomegaly and
   Enlarged Cardiomediastinum ("density overlying the middle cardiac silhouette").
4. The labeler looks at the impression only (``Extractor.extract``: "Extract observations from
   impression sections"); :meth:`ChexpertLabeler.label` labels whatever text it is given, so pass
   an impression for CheXpert-comparable labels, or findings + impression (the IU X-ray benchmark).
5. An empty or whitespace-only report gets all 14 labels blank (the labeler, finding no mention,
   would say No Finding = 1). ``None``/NaN is an error (fix it upstream or pass ``""``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from radaudit.text.negation import explain_mention, find_cues
from radaudit.text.sections import sentences

__all__ = [
    "OBSERVATIONS", "TOP5", "EXTRA_UNMENTIONS", "Mention", "ChexpertLabeler", "load_phrases",
    "POSITIVE", "NEGATIVE", "UNCERTAIN",
]

POSITIVE, NEGATIVE, UNCERTAIN = 1.0, 0.0, -1.0

#: The 14 CheXpert observations, in the CheXpert labeler's output column order (``labeled_reports.csv``).
OBSERVATIONS: tuple[str, ...] = (
    "No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Lesion", "Lung Opacity", "Edema",
    "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other",
    "Fracture", "Support Devices",
)
#: The five competition observations of CheXpert (Irvin et al. 2019), used by "top-5" CheXpert F1.
TOP5: tuple[str, ...] = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion")

NO_FINDING = "No Finding"
SUPPORT_DEVICES = "Support Devices"
CARDIOMEGALY = "Cardiomegaly"
ENLARGED_CM = "Enlarged Cardiomediastinum"
EDEMA = "Edema"

#: Unmention regexes added to the phrase lists' own (deviation 3 in the module docstring).
EXTRA_UNMENTIONS: dict[str, tuple[str, ...]] = {
    SUPPORT_DEVICES: (
        r"tubercul\w*", r"tuberosit\w*", r"plate[-\s]?like", r"plateau\w*", r"endplates?",
        r"(?:kerley\s+)?b[-\s]lines?", r"(?:kerley|septal|interstitial|reticular|linear)\s+lines?",
        r"(?:pleural|skin|junction|paratracheal|paraspinal|azygoesophageal|fissure|mach|fold|vertical|suture|lung)\s+lines?",
    ),
    "Pleural Other": (r"cystic\s+fibrosis",),
}
_POSITIONAL = (r"(?:over|overly|overlying|overlies|in|projecting\s+over|projected\s+over|projects\s+over|behind|through)"
               r"\s+the(?:\s+(?:superior|left|right|middle|inferior|lower|upper|mid))?\s+")
#: CheXpert ``post_negation_uncertainty.txt``: Edema mentions that are uncertain unless negated.
ALWAYS_UNCERTAIN = ("vascular congestion", "pulmonary congestion", "indistinctness", "vascular prominence")
#: Cardiomegaly phrases that name an abnormality (all other Cardiomegaly/ECM phrases name anatomy).
_ABNORMAL_CARDIAC = ("cardiomegaly", "cardiac enlargement", "enlarged heart")
_STABLE = re.compile(r"\b(?:stable|unchanged|similar|not\s+(?:significantly\s+)?changed|no\s+(?:significant\s+|interval\s+)*change)\b")
_BORDERLINE = re.compile(r"\bborderline\b")
_CLAUSE_BREAK = re.compile(r"[,;:()]|\b(?:but|however|although|though|whereas|which|and\s+(?:the|there))\b")
_CHF = ("chf", "heart failure")


@dataclass(frozen=True)
class Mention:
    """One matched phrase: ``observation``, the list ``phrase`` that matched, the ``text`` as
    written and its span ``[start, end)`` in the report, the ``sentence`` (and its start), the
    final ``status`` and ``rule`` (the cue or labeler rule that decided it, ``""`` if none)."""

    observation: str
    phrase: str
    text: str
    start: int
    end: int
    sentence: str
    sentence_start: int
    status: Literal["positive", "negative", "uncertain"]
    rule: str


def _phrase_regex(phrase: str) -> str:
    """A phrase as a regex: escaped, spaces/hyphens -> any run of whitespace or hyphens, ``_`` ->
    a word edge, and ``[a-z]*`` after a phrase that does not end at a word edge, so that the match
    covers the rest of its word (deviation 2 in the module docstring)."""
    parts = []
    for ch in phrase:
        if ch == "_":
            parts.append(r"\b")
        elif ch in " -":
            parts.append(r"[\s\-]+")
        else:
            parts.append(re.escape(ch))
    body = "".join(parts)
    if not body.endswith(r"\b"):
        body += r"[a-z]*"
    return body


def load_phrases(folder: str | os.PathLike) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Read ``mention/*.txt`` and ``unmention/*.txt`` under ``folder`` (the chexpert-labeler
    ``phrases`` directory): ``({observation: [phrase, ...]}, {observation: [phrase, ...]})``."""
    folder = Path(folder)
    out = []
    for kind in ("mention", "unmention"):
        table: dict[str, list[str]] = {}
        d = folder / kind
        if kind == "mention" and not d.is_dir():
            raise FileNotFoundError(f"{d} does not exist: expected the chexpert-labeler phrases folder "
                                    "(the lab's copy: radaudit.data.chexpert_phrases_dir(data_root)).")
        for path in sorted(d.glob("*.txt")) if d.is_dir() else []:
            obs = path.stem.replace("_", " ").title()
            lines = [ln.strip().lower() for ln in path.read_text(encoding="utf-8").splitlines()]
            table[obs] = [ln for ln in lines if ln]
        out.append(table)
    mentions, unmentions = out
    missing = [o for o in OBSERVATIONS if o not in mentions]
    if missing:
        raise FileNotFoundError(f"{folder / 'mention'} lacks the phrase lists for {missing}.")
    return mentions, unmentions


def _alternation(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for several phrase regexes, longest first (substring semantics, as the labeler)."""
    pats = sorted(set(patterns), key=len, reverse=True)
    return re.compile(r"(?:" + "|".join(pats) + ")") if pats else None


class ChexpertLabeler:
    """CheXpert-style labeler (rules: module docstring).

    ``phrases_dir``: the chexpert-labeler ``phrases`` folder (``mention/``, ``unmention/``); the lab's
    copy is :func:`radaudit.data.chexpert_phrases_dir` ``(data_root)``, which finds it under the data
    root and says how to fetch it when it is missing (the text toolkit reads no data root itself: it
    is the layer below :mod:`radaudit.data`). ``no_new``: how "no new X" is read
    (:mod:`radaudit.text.negation`; ``"uncertain"`` as in CheXpert).

    >>> lab = ChexpertLabeler(chexpert_phrases_dir())              # doctest: +SKIP
    >>> lab.label(["Heart size normal and lungs are clear. No edema or pneumonia. No effusion"])  # doctest: +SKIP
    """

    def __init__(
        self,
        phrases_dir: str | os.PathLike,
        *,
        no_new: Literal["uncertain", "negative"] = "uncertain",
    ) -> None:
        self.phrases_dir = Path(phrases_dir)
        self.no_new = no_new
        self.mention_phrases, self.unmention_phrases = load_phrases(self.phrases_dir)
        self._compile()

    # ----------------------------------------------------------------------------- patterns
    def _compile(self) -> None:
        self._mention_re: dict[str, re.Pattern[str]] = {}
        self._phrase_of: dict[str, list[tuple[re.Pattern[str], str]]] = {}
        self._unmention_re: dict[str, re.Pattern[str] | None] = {}
        observations = [o for o in OBSERVATIONS] + [o for o in self.mention_phrases if o not in OBSERVATIONS]
        for obs in observations:
            phrases = self.mention_phrases.get(obs, [])
            if not phrases:
                continue
            self._mention_re[obs] = _alternation(_phrase_regex(p) for p in phrases)  # type: ignore[assignment]
            self._phrase_of[obs] = [(re.compile(_phrase_regex(p)), p) for p in sorted(phrases, key=len, reverse=True)]
            unm = [_phrase_regex(p) for p in self.unmention_phrases.get(obs, [])]
            unm += list(EXTRA_UNMENTIONS.get(obs, ()))
            if obs in (CARDIOMEGALY, ENLARGED_CM):
                for p in phrases:
                    if obs == CARDIOMEGALY and p in _ABNORMAL_CARDIAC:
                        continue
                    bare = p.replace("the ", "") if obs == CARDIOMEGALY else p
                    unm.append(_POSITIONAL + _phrase_regex(bare.strip("_ ")))
            self._unmention_re[obs] = _alternation(unm)

    def _phrase(self, obs: str, matched: str) -> str:
        for rx, p in self._phrase_of[obs]:
            if rx.match(matched):
                return p
        return matched

    # ----------------------------------------------------------------------------- mentions
    def _sentence_mentions(self, sent: str, offset: int) -> list[Mention]:
        low = sent.lower()
        if len(low) != len(sent):
            low = "".join(c.lower() if len(c.lower()) == 1 else c for c in sent)
        cues = None
        out: list[Mention] = []
        for obs, rx in self._mention_re.items():
            matches = list(rx.finditer(low))
            if not matches:
                continue
            unm = self._unmention_re.get(obs)
            blocked = [(m.start(), m.end()) for m in unm.finditer(low)] if unm is not None else []
            for m in matches:
                s, e = m.span()
                if any(s < be and e > bs for bs, be in blocked):
                    continue
                if cues is None:
                    cues = find_cues(sent, no_new=self.no_new)
                status, covering = explain_mention(sent, (s, e), cues=cues)
                rule = covering[0].rule if covering else ""
                phrase = self._phrase(obs, low[s:e])
                if status == "positive":
                    status, rule = self._mention_rules(obs, phrase, low, s, e, status, rule)
                out.append(Mention(obs, phrase, sent[s:e], offset + s, offset + e, sent, offset, status, rule))
        return out

    @staticmethod
    def _clause(low: str, s: int, e: int) -> str:
        lo = 0
        for m in _CLAUSE_BREAK.finditer(low, 0, s):
            lo = m.end()
        hi = len(low)
        m = _CLAUSE_BREAK.search(low, e)
        if m:
            hi = m.start()
        return low[lo:hi]

    def _mention_rules(self, obs: str, phrase: str, low: str, s: int, e: int, status: str, rule: str) -> tuple[str, str]:
        if obs == EDEMA and phrase in ALWAYS_UNCERTAIN:
            return "uncertain", f"CheXpert: '{phrase}' is uncertain"
        if obs in (CARDIOMEGALY, ENLARGED_CM) and phrase not in _ABNORMAL_CARDIAC:
            clause = self._clause(low, s, e)
            if _STABLE.search(clause):
                return "uncertain", "CheXpert: stable/unchanged cardiomediastinal silhouette"
            if _BORDERLINE.search(clause):
                return "uncertain", "CheXpert: borderline heart size"
        return status, rule

    def mentions(self, text: str) -> pd.DataFrame:
        """Every mention in ``text`` with its status and the deciding rule, one row each (columns:
        the :class:`Mention` fields), in order of position. The explanation of :meth:`label`."""
        rows = [m.__dict__ for m in self._mentions(text)]
        cols = list(Mention.__dataclass_fields__)
        return pd.DataFrame(rows, columns=cols)

    def _mentions(self, text: str) -> list[Mention]:
        _check_text(text, 0)
        out: list[Mention] = []
        for sent in sentences(text):
            out.extend(self._sentence_mentions(sent.text, sent.start))
        out.sort(key=lambda m: (m.start, m.observation))
        return out

    # ----------------------------------------------------------------------------- labels
    @staticmethod
    def _aggregate(mentions: Sequence[Mention]) -> list[float]:
        code = {"positive": POSITIVE, "negative": NEGATIVE, "uncertain": UNCERTAIN}
        by_obs: dict[str, list[float]] = {}
        no_finding = True
        for m in mentions:
            label = code[m.status]
            if m.observation != SUPPORT_DEVICES and label != NEGATIVE:
                no_finding = False
            if m.observation == NO_FINDING:
                continue
            if label != NEGATIVE and m.phrase in _CHF:
                by_obs.setdefault(CARDIOMEGALY, []).append(UNCERTAIN)
            by_obs.setdefault(m.observation, []).append(label)
        if no_finding:
            by_obs[NO_FINDING] = [POSITIVE]
        vec = []
        for obs in OBSERVATIONS:
            labels = by_obs.get(obs)
            if not labels:
                vec.append(math.nan)
            elif POSITIVE in labels:
                vec.append(POSITIVE)
            elif UNCERTAIN in labels:
                vec.append(UNCERTAIN)
            else:
                vec.append(NEGATIVE)
        return vec

    def label_one(self, text: str) -> dict[str, float]:
        """The 14 labels of one report as ``{observation: 1.0 | 0.0 | -1.0 | nan}``."""
        _check_text(text, 0)
        if not text.strip():
            return dict.fromkeys(OBSERVATIONS, math.nan)
        return dict(zip(OBSERVATIONS, self._aggregate(self._mentions(text))))

    def label(self, texts: Sequence[str] | pd.Series | str) -> pd.DataFrame:
        """One row per text, the 14 :data:`OBSERVATIONS` as float columns (1 positive, 0 negative,
        -1 uncertain, NaN blank). The index is ``texts``' index for a Series, else 0..n-1.

        Raises ``TypeError`` for a single string (wrap it in a list) and ``ValueError`` naming
        the positions of ``None``/NaN texts."""
        if isinstance(texts, str):
            raise TypeError("label() takes a sequence of reports; wrap a single report in a list.")
        index = texts.index if isinstance(texts, pd.Series) else None
        items = list(texts)
        bad = [i for i, t in enumerate(items) if t is None or (isinstance(t, float) and math.isnan(t))]
        if bad:
            raise ValueError(
                f"texts {bad[:10]}{' ...' if len(bad) > 10 else ''} are missing (None/NaN): drop them or pass '' "
                "for an empty report (e.g. Series.fillna(''))."
            )
        for i, t in enumerate(items):
            _check_text(t, i)
        rows = [self.label_one(t) for t in items]
        arr = np.array([[r[o] for o in OBSERVATIONS] for r in rows], dtype=float).reshape(len(rows), len(OBSERVATIONS))
        return pd.DataFrame(arr, columns=list(OBSERVATIONS), index=index)


def _check_text(text: object, i: int) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text {i} is a {type(text).__name__}, not a str.")


#: The CheXpert labeler's own documented examples: stanfordmlgroup/chexpert-labeler (MIT),
# sample_reports.csv -> labeled_reports.csv at commit 33be19fd (the labeler's published output).
CHEXPERT_LABELER_EXAMPLES = (
    ("Heart size normal and lungs are clear. No edema or pneumonia. No effusion",
     {"No Finding": 1, "Cardiomegaly": 0, "Edema": 0, "Pneumonia": 0, "Pleural Effusion": 0}),
    ("1. Left pleural effusion with adjacent atelectasis. Right effusion is also present.\n\n2. Cardiomegaly without overt edema.",
     {"Cardiomegaly": 1, "Edema": 0, "Atelectasis": 1, "Pleural Effusion": 1}),
    ("Minimal patchy airspace disease within the lingula, may reflect atelectasis or consolidation.",
     {"Lung Opacity": 1, "Consolidation": -1, "Atelectasis": -1}),
    ("1. Stable mild cardiomegaly. 2. Hyperexpanded but clear lungs.", {"Cardiomegaly": 1}),
)
