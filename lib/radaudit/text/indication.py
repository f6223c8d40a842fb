"""The clinical question of an indication, without the patient's demographics or de-identification marks.

Report indications mix the clinical question with who the patient is and how the referrer writes:
``"The patient is a XXXX-year-old male with left upper abdominal pain."``,
``"XXXX-year-old woman, hypoxia"``, ``"Chest pain status post MVA. Male, 53 years."``. For a model
that is prompted with the indication, the demographic part leaks what a study may need to control
(the patient's sex, when sex is the variable under audit) and the phrasing identifies the referring
service and, through it, the reading radiologist's template. :func:`clinical_indication` keeps the
clinical question: ``"left upper abdominal pain"``, ``"hypoxia"``, ``"chest pain status post mva"``.

Rules, in order: de-identification placeholders are removed (:func:`radaudit.text.deid.strip_placeholders`);
an age phrase (``"54-year-old"``, ``"XXXX year old"``, ``"53 years"``, ``"54 old"``) and a sex or person word
(male, female, man, woman, gentleman, lady, boy, girl, patient) are removed wherever they occur,
with the boilerplate that introduces them (``"the patient is a"``, ``"this is a"``) and the
connective that follows (``"with"``, ``"who"``, ``"presenting with"``); the rest is lower-cased, its
punctuation runs collapsed, and an empty result is ``""`` (the caller decides how to say "not given").
"""

from __future__ import annotations

import re

from radaudit.text.deid import strip_placeholders

__all__ = ["clinical_indication"]

_PERSON = r"(?:male|female|man|woman|gentleman|lady|boy|girl|patient|pt)"
_AGE = r"(?:\d+\s*|)[- ]?(?:years?|yrs?|y/?o)\b(?:[- ]?old\b)?(?:[- ]?old\b)?|\b\d+[- ]?old\b"
_PREAMBLE = re.compile(r"\b(?:the\s+patient\s+is|patient\s+is|this\s+is|pt\s+is)\s+(?:an?\s+)?", re.IGNORECASE)
_AGE_RE = re.compile(_AGE, re.IGNORECASE)
_PERSON_RE = re.compile(rf"\b{_PERSON}s?\b", re.IGNORECASE)
_LEAD = re.compile(r"^(?:\s|[,.;:/-]|\ban?\b|\bwith\b|\bwho\b|\bhas\b|\bpresenting\s+with\b|\bfor\b)+", re.IGNORECASE)
_DANGLING = re.compile(r"(?:(?<=^)|(?<=[.,;:]))\s*(?:an?\s+)?(?:with|who|presenting\s+with)\b\s*", re.IGNORECASE)


def clinical_indication(text: object) -> str:
    """The clinical question of an indication (module docstring); ``""`` when nothing clinical is left.

    >>> clinical_indication("The patient is a XXXX-year-old male with left upper abdominal pain.")
    'left upper abdominal pain'
    >>> clinical_indication("Chest pain status post MVA. Male, 53 years.")
    'chest pain status post mva'
    """
    if not isinstance(text, str):
        return ""
    s = strip_placeholders(text)
    s = _PREAMBLE.sub(" ", s)
    s = _AGE_RE.sub(" ", s)
    s = _PERSON_RE.sub(" ", s)
    s = _DANGLING.sub(" ", s)
    s = re.sub(r"\s+([,.;:])", r"\1", s)
    s = re.sub(r"([,.;:])(?:\s*[,.;:])+", r"\1", s)
    s = _LEAD.sub("", s)
    s = re.sub(r"\s+", " ", s).strip(" ,.;:/-")
    return s.lower()
