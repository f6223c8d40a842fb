"""Patient sex and age stated in free text (indications, clinical histories, notes).

Conservative, documented rules: a value is returned only when the text *states* it; anything
implied (pronouns, organs such as "prostate" or "ovarian", "breast cancer", "pregnancy test") is
ignored by default, and contradictory statements give ``<NA>``, never a guess.

Sex rule (:func:`sex_from_text`, summarised in :data:`SEX_RULE`)
-----------------------------------------------------------------
Evidence is collected from three kinds of match; the result is the one sex they agree on, or
``<NA>`` when there is none or when both sexes are stated ("male-to-female", "his wife, a
woman of 40" ...).

1. Sex words, case-insensitive, whole words only (``\\b`` on both sides, so "female" is not a
   hit for "male", "woman" not for "man", and "mammogram", "human", "manual" hit nothing):
   female: ``female(s) woman women lady ladies girl(s) pregnant``;
   male: ``male(s) man men gentleman gentlemen boy(s)``.
   "pregnant" counts as female whatever surrounds it ("not pregnant" is said of women too);
   "pregnancy" does not (it appears in "no chance of pregnancy", and in questions about it).
2. The single letters ``M``/``F`` only right after an age, as in "52M", "52 F", "52 yo F",
   "52-year-old M", "XXXX F with dyspnea" (IU X-ray de-identifies ages as ``XXXX``), and after
   "sex"/"gender" ("Sex: F"). Without an age unit the letter must be upper case, the number at
   most 99 and not after "temp"/"fever"/"T" (so "fever 101 F", "temp 99 F" are no hits); a
   letter followed by "/" or (after an age) by ".x" is never a hit ("F/U", "f/u", "M.D.");
   "Gender:F.Indication" (ReXrank's CheXpert context) is a hit. A bare letter without an age or
   label ("F with chest pain") is not: it is too often an abbreviation.
3. Optionally (``pronouns=True``) the subject pronouns "she" → F and "he" → M. Off by default:
   in the 3,851 IU X-ray indications all 6 such pronouns refer to the patient, but in longer
   notes ("his wife also had fever", "she brought her father") they often do not.

Age rule (:func:`age_from_text`)
--------------------------------
Years as a float from explicit age statements only: "57-year-old", "57 year old", "57 yr old",
"57yo", "57 y/o", "57 y.o.", "57 years of age", "age 57", "aged 57", "Age: 57.0", "57M"/"57 F"
(as in the sex rule), "57y male", "57 old male", "57 years Male" (a number right before a sex
word, with an optional y/yr/years/old), and "Female, 57 years" (a sex word, then the number
and "years" at the end of a clause). "15-month-old" → 1.25, "3-week-old" → 3/52,
"2-day-old" → 2/365. Durations ("smoker for 30 years", "2 years ago", "x3 years") are not
ages. De-identified ages ("XXXX-year-old") give ``<NA>``. Several different ages, or an age
outside 0-120, give ``<NA>``.
"""

from __future__ import annotations

import re

import pandas as pd

SEX_RULE = (
    "sex words (female/woman/lady/girl/pregnant vs male/man/gentleman/boy, whole words), "
    "M/F only right after an age ('52M', '52 yo F', 'XXXX F') or after sex:/gender:; "
    "pronouns ignored; both sexes stated -> NA"
)

_F_WORDS = r"females?|wom[ae]n|lad(?:y|ies)|girls?|pregnant"
_M_WORDS = r"males?|m[ae]n|gentlem[ae]n|boys?"
_SEX_WORD = rf"(?:{_F_WORDS}|{_M_WORDS})"

_RE_F_WORD = re.compile(rf"\b(?:{_F_WORDS})\b", re.IGNORECASE)
_RE_M_WORD = re.compile(rf"\b(?:{_M_WORDS})\b", re.IGNORECASE)

# an age, with an explicit unit, then a single sex letter: "52 yo F", "52-year-old m", "52y/o F"
_AGE_UNIT = r"(?:\s*-?\s*(?:years?|yrs?|y)\s*-?\s*old|\s*(?:yo|y/o|y\.o\.?)|\s*y(?:rs?)?)"
_LETTER_END = r"(?![\w/]|\.\w)"
_RE_LETTER_UNIT = re.compile(
    rf"(?<![\w.])(?P<age>\d{{1,3}}|X{{2,}}){_AGE_UNIT}\s*[-,]?\s*(?P<sex>[MFmf]){_LETTER_END}",
    re.IGNORECASE,
)
# no unit: upper-case letter right after a number <= 99 or a de-identified "XXXX": "52M", "XXXX F"
_RE_LETTER_BARE = re.compile(rf"(?<![\w.])(?P<age>\d{{1,2}}|X{{2,}})\s?-?\s?(?P<sex>[MF]){_LETTER_END}")
_RE_TEMPERATURE = re.compile(r"\b(?:temp\w*|fever\w*|febrile|t)\s*[:=]?\s*(?:of\s+)?$", re.IGNORECASE)
_RE_SEX_LABEL = re.compile(r"\b(?:sex|gender)\s*[:=-]?\s*(?P<sex>[MF])(?![\w/])", re.IGNORECASE)
_RE_PRONOUN = re.compile(r"\b(?P<p>she|he)\b", re.IGNORECASE)


def _is_missing(text: object) -> bool:
    if text is None or text is pd.NA:
        return True
    return isinstance(text, float) and text != text  # NaN


def sex_mentions(text: object, *, pronouns: bool = False) -> list[tuple[str, str]]:
    """Every piece of sex evidence in ``text`` as ``(sex, matched text)``, in order of position.

    ``sex`` is ``"F"`` or ``"M"``. The rules are those of the module docstring; this function is
    what :func:`sex_from_text` decides from, exposed so that hits can be audited by eye.
    """
    if _is_missing(text):
        return []
    s = str(text)
    hits: list[tuple[int, str, str]] = []
    for m in _RE_F_WORD.finditer(s):
        hits.append((m.start(), "F", m.group(0)))
    for m in _RE_M_WORD.finditer(s):
        hits.append((m.start(), "M", m.group(0)))
    seen_letters: set[int] = set()
    for m in _RE_LETTER_UNIT.finditer(s):
        seen_letters.add(m.start("sex"))
        hits.append((m.start(), m.group("sex").upper(), m.group(0)))
    for m in _RE_LETTER_BARE.finditer(s):
        if m.start("sex") in seen_letters:
            continue
        if _RE_TEMPERATURE.search(s[max(0, m.start() - 20): m.start()]):
            continue
        seen_letters.add(m.start("sex"))
        hits.append((m.start(), m.group("sex"), m.group(0)))
    for m in _RE_SEX_LABEL.finditer(s):
        if m.start("sex") not in seen_letters:
            hits.append((m.start(), m.group("sex").upper(), m.group(0)))
    if pronouns:
        for m in _RE_PRONOUN.finditer(s):
            hits.append((m.start(), "F" if m.group("p").lower() == "she" else "M", m.group(0)))
    hits.sort(key=lambda h: h[0])
    return [(sex, span) for _, sex, span in hits]


def sex_from_text(text: object, *, pronouns: bool = False) -> object:
    """``"F"``, ``"M"`` or ``pd.NA``: the sex the text states (rule in the module docstring).

    ``<NA>`` when the text is missing, states no sex, or states both.

    >>> sex_from_text("XXXX-year-old female with chest pain.")
    'F'
    >>> sex_from_text("Mammogram follow-up, F/U")
    <NA>
    """
    sexes = {sex for sex, _ in sex_mentions(text, pronouns=pronouns)}
    if len(sexes) == 1:
        return sexes.pop()
    return pd.NA


_UNIT_YEARS = {"y": 1.0, "m": 1 / 12, "w": 1 / 52, "d": 1 / 365}

_NUM = r"(?<![\d.])(?P<n>\d{1,3}(?:\.\d+)?)"
_RE_AGE_OLD = re.compile(
    rf"{_NUM}\s*-?\s*(?P<u>years?|yrs?|months?|mos?|weeks?|wks?|days?)\s*-?\s*old\b", re.IGNORECASE
)
_RE_AGE_YO = re.compile(rf"{_NUM}\s*(?:yo|y/o|y\.o\.?)(?![a-z])", re.IGNORECASE)
_RE_AGE_OF_AGE = re.compile(rf"{_NUM}\s*(?:years?|yrs?|y)\s+of\s+age\b", re.IGNORECASE)
_RE_AGE_LABEL = re.compile(
    r"\b(?:age|aged)\s*[:=]?\s*(?P<n>\d{1,3}(?:\.\d+)?)(?!\s*(?:%|mm|cm|kg|lbs?|pack|days?|weeks?|months?|[\d/]))",
    re.IGNORECASE,
)
_RE_AGE_BEFORE_SEX = re.compile(
    rf"{_NUM}\s*(?:y|yrs?|years?)?\s*,?\s*(?:old\s+)?(?={_SEX_WORD}\b)", re.IGNORECASE
)
_RE_AGE_AFTER_SEX = re.compile(
    rf"\b{_SEX_WORD}\s*,\s*(?:aged?\s*)?(?P<n>\d{{1,3}})\s*(?:years?|yrs?)(?=\s*(?:[.,;)]|$|old\b|of\s+age\b))",
    re.IGNORECASE,
)


def ages_in_text(text: object) -> list[float]:
    """Every explicit age statement in ``text``, in years (rules in the module docstring)."""
    if _is_missing(text):
        return []
    s = str(text)
    found: list[tuple[int, float]] = []
    for m in _RE_AGE_OLD.finditer(s):
        found.append((m.start(), float(m.group("n")) * _UNIT_YEARS[m.group("u")[0].lower()]))
    for rx in (_RE_AGE_YO, _RE_AGE_OF_AGE, _RE_AGE_LABEL, _RE_AGE_BEFORE_SEX, _RE_AGE_AFTER_SEX):
        for m in rx.finditer(s):
            found.append((m.start("n"), float(m.group("n"))))
    for rx in (_RE_LETTER_UNIT, _RE_LETTER_BARE):
        for m in rx.finditer(s):
            if not m.group("age").isdigit():
                continue
            if rx is _RE_LETTER_BARE and _RE_TEMPERATURE.search(s[max(0, m.start() - 20): m.start()]):
                continue
            found.append((m.start(), float(m.group("age"))))
    found.sort()
    return [a for _, a in found]


def age_from_text(text: object) -> object:
    """Age in years (float) stated in ``text``, or ``pd.NA`` (none, several different, or outside 0-120).

    >>> age_from_text("57 year old female")
    57.0
    >>> age_from_text("XXXX-year-old male, smoker for 30 years")
    <NA>
    """
    ages = {round(a, 6) for a in ages_in_text(text)}
    if len(ages) != 1:
        return pd.NA
    age = ages.pop()
    return age if 0 <= age <= 120 else pd.NA
