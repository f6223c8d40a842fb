"""The rule backend's vocabulary: normalised chest X-ray findings and morphology words.

AtomiMed asks an LLM to name each finding as a *normalised clinical entity* (§2.1, Eq. 1). The rule
backend needs the same normalisation without a model: :data:`FINDINGS` maps a canonical name to
the surface patterns that mention it (regexes over lower-cased text, matched on whole words).
Device findings come from :func:`radaudit.text.attributes.extract_devices` (their canonical name is
the device type with spaces, e.g. ``"central venous catheter"``).

Two kinds of entry:

- **abnormality** patterns name the finding itself ("effusion", "cardiomegaly"); negation and
  uncertainty then decide ``present`` (:mod:`radaudit.text.negation`).
- **anatomy** patterns (:data:`ANATOMY`) name a structure whose abnormality *is* the finding
  ("heart size" → cardiomegaly, "mediastinum" → widened mediastinum, "lung volumes" → low lung
  volumes). As in the CheXpert labeler, a negated mention ("heart size is normal") says the
  finding is absent; a non-negated mention counts as present only when an abnormal predicate
  (:data:`ANATOMY`'s second element) occurs in the same clause ("the heart is enlarged"),
  otherwise it is no finding at all ("the heart size is stable").

Coverage: the 14 CheXpert observations split into their common specific entities, plus the
frequent chest findings of IU X-ray / MIMIC-CXR / RadPref reports (granuloma, emphysema,
hyperinflation, scoliosis, degenerative change, hiatal hernia, ...). Extend it by passing
``findings=``/``anatomy=`` to :class:`~radaudit.atomic.decompose.RuleDecomposer`.

Morphology (:data:`MORPHOLOGY`): the paper's morphology facet has no extractor in the text toolkit;
this table lists the shape/texture/distribution words of chest radiology, each mapped to a
canonical term (``"calcific"`` → ``"calcified"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["FINDINGS", "ANATOMY", "MORPHOLOGY", "compile_alternation", "morphology_terms"]

#: canonical finding name -> regex alternation (lower case; whole words are enforced when compiled).
FINDINGS: dict[str, str] = {
    "pericardial effusion": r"pericardial\s+effusions?",
    "pleural effusion": r"(?:pleural\s+)?effusions?|hydrothora(?:x|ces)|pleural\s+fluid|"
                        r"blunting\s+of\s+the\s+(?:\w+\s+){0,2}(?:costophrenic|cp)\s+(?:angles?|sulc(?:us|i))",
    "pneumothorax": r"pneumothora(?:x|ces)|(?-i:ptx)",
    "pneumomediastinum": r"pneumomediastinum",
    "pneumoperitoneum": r"pneumoperitoneum|free\s+(?:intraperitoneal\s+)?air|(?:sub-?diaphragmatic|intraperitoneal)\s+(?:free\s+)?air",
    "subcutaneous emphysema": r"subcutaneous\s+(?:emphysema|air|gas)|soft\s+tissue\s+(?:emphysema|air|gas)",
    "consolidation": r"consolidations?|consolidative\s+(?:opacit(?:y|ies)|process|changes?)",
    "atelectasis": r"atelecta\w*|(?:lobar|lobe|lung|segmental)\s+collapse|collapsed?\s+(?:lung|lobe)",
    "pneumonia": r"pneumonias?|pneumonitis|bronchopneumonia|infectious\s+process|infection",
    "aspiration": r"aspiration",
    "pulmonary edema": r"(?:pulmonary|interstitial|alveolar|perihilar)\s+edema|edema|fluid\s+overload",
    "vascular congestion": r"(?:pulmonary\s+)?(?:vascular|venous)\s+(?:congestion|engorgement)|pulmonary\s+congestion|"
                           r"cephalization|vascular\s+redistribution",
    "heart failure": r"(?:congestive\s+)?heart\s+failure|(?-i:CHF)",
    "cardiomegaly": r"cardiomegaly|cardiac\s+enlargement|enlarge(?:d|ment\s+of\s+the)\s+(?:cardiac\s+silhouette|heart)|"
                    r"enlarged\s+cardiac\s+(?:silhouette|size)",
    "widened mediastinum": r"mediastinal\s+widening|widen(?:ed|ing)\s+(?:of\s+the\s+)?(?:superior\s+)?mediastinum|"
                           r"mediastinal\s+(?:enlargement|mass)",
    "opacity": r"opacit(?:y|ies)|opacification|infiltrat(?:e|es|ion|ive)|air\s*-?\s*space\s+(?:disease|process)|"
               r"densit(?:y|ies)",
    "nodule": r"nodules?|nodular\s+(?:densit(?:y|ies)|lesions?)|micronodul(?:es?|ar)(?:\s+(?:pattern|opacit(?:y|ies)))?",
    "mass": r"mass(?:es)?|tumou?rs?|neoplasms?|malignan(?:cy|cies)|carcinoma",
    "metastatic disease": r"metasta(?:sis|ses|tic\s+disease)",
    "granuloma": r"granulomas?|granulomatous\s+(?:disease|changes?|calcifications?)",
    "lung lesion": r"(?:lung|pulmonary)\s+lesions?|cavitary\s+lesions?|cavit(?:y|ies)",
    "emphysema": r"emphysema(?:tous\s+changes?)?|bullae|bullous\s+(?:disease|changes?)",
    "copd": r"(?-i:COPD)|chronic\s+obstructive\s+(?:pulmonary|lung|airway)\s+disease",
    "hyperinflation": r"hyperinfla\w+|hyperexpan\w+|over-?inflat\w+|(?:increased|large)\s+lung\s+volumes",
    "low lung volumes": r"(?:low|reduced|decreased|diminished|small|shallow)\s+lung\s+volumes?|hypoinflat\w+|"
                        r"poor\s+(?:inspiratory\s+effort|inspiration)|shallow\s+inspiration",
    "interstitial abnormality": r"interstitial\s+(?:markings?|opacit(?:y|ies)|disease|lung\s+disease|prominence|"
                                r"thickening|pattern|changes?|abnormalit(?:y|ies))|reticular\s+(?:opacit(?:y|ies)|markings?|pattern)|"
                                r"reticulonodular\s+(?:opacit(?:y|ies)|markings?|pattern)",
    "fibrosis": r"fibros(?:is|es)|fibrotic\s+changes?|honeycombing",
    "scarring": r"scar(?:s|ring)?|cicatri\w+|fibronodular\s+changes?",
    "pleural thickening": r"pleural\s+(?:thickening|plaques?|calcifications?)|pleural[-\s]parenchymal\s+(?:scarring|thickening)|"
                          r"apical\s+(?:pleural\s+)?(?:cap|capping)",
    "peribronchial thickening": r"(?:peri)?bronchial\s+(?:wall\s+)?(?:thickening|cuffing)",
    "bronchiectasis": r"bronchiectasis|bronchiectatic\s+changes?",
    "airway disease": r"(?:reactive|small)\s+airways?\s+disease|bronchitis|bronchiolitis|asthma",
    "volume loss": r"volume\s+loss|loss\s+of\s+(?:lung\s+)?volume",
    "air trapping": r"air\s+trapping",
    "lymphadenopathy": r"(?:lymph)?adenopath(?:y|ies)|enlarged\s+(?:lymph\s+)?nodes?",
    "hilar enlargement": r"hilar\s+(?:enlargement|prominence|fullness|mass(?:es)?)|enlarged\s+hila|prominent\s+hila",
    "calcification": r"calcifications?",
    "aortic atherosclerosis": r"(?:aortic|vascular)\s+(?:atherosclero\w+|calcifications?)|atherosclero\w+|"
                              r"(?:aortic\s+knob|aortic\s+arch)\s+calcifications?",
    "tortuous aorta": r"tortu(?:ous|osity)\s+(?:of\s+the\s+)?(?:thoracic\s+|descending\s+)?aort\w*|"
                      r"(?:aortic|aorta)\s+(?:is\s+)?tortu\w+|unfold(?:ed|ing)\s+(?:of\s+the\s+)?(?:thoracic\s+)?aorta|ectatic\s+aorta",
    "aortic aneurysm": r"(?:aortic\s+)?aneurysm\w*",
    "elevated hemidiaphragm": r"elevat(?:ed|ion)\s+(?:of\s+the\s+)?(?:(?:left|right)\s+)?hemi-?diaphragms?|"
                              r"hemi-?diaphragms?\s+(?:is|are|remains?)\s+(?:\w+\s+)?elevated|eventration",
    "fracture": r"fractur(?:e|es|ed)|(?-i:fx)",
    "scoliosis": r"scolio\w+|levoscoliosis|dextroscoliosis|levoconvex|dextroconvex",
    "kyphosis": r"kyphos\w+|kyphotic",
    "degenerative change": r"degenerative\s+(?:changes?|disease|joint\s+disease)|spondylo\w+|osteophyt\w+|"
                           r"(?:osteo)?arthriti\w+|(?:osteo)?arthros\w+|(?-i:DJD)",
    "osteopenia": r"osteopeni\w+|osteoporo\w+|demineraliz\w+",
    "hiatal hernia": r"hiatal?\s+hernias?|hiatus\s+hernias?|hernias?",
    "postsurgical change": r"post-?(?:surgical|operative)\s+changes?|(?:status\s+post|s/p)\s+\w+ectomy|\w+ectomy",
    "foreign body": r"foreign\s+bod(?:y|ies)",
}

#: canonical finding -> (anatomy regex, abnormal-predicate regex) (module docstring, "anatomy").
ANATOMY: dict[str, tuple[str, str]] = {
    "cardiomegaly": (
        r"heart\s+size|cardiac\s+size|size\s+of\s+the\s+heart|cardiac\s+silhouette|heart\s+silhouette|"
        r"cardiac\s+contours?|heart(?=\s+(?:is|appears|remains|size))",
        r"enlarg\w*|increased|prominen\w*|large|cardiomegaly|borderline|mildly\s+enlarged",
    ),
    "widened mediastinum": (
        r"cardiomediastinal\s+(?:silhouette|contours?|width)|mediastinal\s+(?:silhouette|contours?|width)|mediastinum",
        r"widen\w*|enlarg\w*|prominen\w*|increased|shift\w*",
    ),
    "low lung volumes": (
        r"lung\s+volumes?|inspiratory\s+effort",
        r"low|reduced|decreased|diminished|small|poor|shallow",
    ),
    "increased lung markings": (
        r"(?:bronchovascular|perihilar|interstitial|lung|pulmonary|vascular)\s+markings",
        r"prominen\w*|increased|coarse\w*|accentuat\w*|thicken\w*|crowd\w*",
    ),
    "hilar enlargement": (
        r"hil(?:a|um|ar\s+contours?|ar\s+structures)",
        r"enlarg\w*|prominen\w*|full\w*|bulky|increased",
    ),
}

#: morphology word regex -> canonical morphology term.
MORPHOLOGY: dict[str, str] = {
    r"calcified|calcific|densely\s+calcified": "calcified",
    r"non-?calcified": "noncalcified",
    r"spiculated": "spiculated",
    r"cavitary|cavitating|cavitation": "cavitary",
    r"patchy": "patchy",
    r"linear|band-?like|streaky|strand-?like": "linear",
    r"plate-?like|platelike|discoid|subsegmental": "plate-like",
    r"nodular": "nodular",
    r"reticular|reticulonodular": "reticular",
    r"ground[-\s]glass": "ground-glass",
    r"interstitial": "interstitial",
    r"alveolar|air\s*-?\s*space": "airspace",
    r"confluent|coalescent": "confluent",
    r"focal": "focal",
    r"multifocal": "multifocal",
    r"diffuse|diffusely|widespread": "diffuse",
    r"hazy|haziness|veil-?like": "hazy",
    r"ill-?defined|poorly\s+defined|indistinct": "ill-defined",
    r"well-?defined|well-?circumscribed|circumscribed|sharply\s+marginated": "well-defined",
    r"loculated": "loculated",
    r"wedge-?shaped": "wedge-shaped",
    r"lobulated": "lobulated",
    r"round|rounded|oval": "round",
    r"lobar": "lobar",
    r"segmental": "segmental",
    r"coarse|coarsened": "coarse",
    r"mass-?like": "mass-like",
    r"cystic": "cystic",
    r"layering": "layering",
    r"dense": "dense",
}


def compile_alternation(patterns: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive regex with a named group per pattern (``g0``, ``g1``, ... in order), each
    on whole words. At one position the first pattern that matches wins; a match starting earlier
    always wins (so "pericardial effusion" is found before its "effusion")."""
    parts = [rf"(?P<g{i}>(?<![\w-])(?:{p})(?![\w]))" for i, p in enumerate(patterns)]
    return re.compile("|".join(parts), re.IGNORECASE)


_MORPH_RE = compile_alternation(MORPHOLOGY.keys())
_MORPH_NAMES = list(MORPHOLOGY.values())


def morphology_terms(text: str) -> list[tuple[str, int, int]]:
    """``(canonical term, start, end)`` of every morphology word in ``text``, in order."""
    return [(_MORPH_NAMES[int(m.lastgroup[1:])], m.start(), m.end()) for m in _MORPH_RE.finditer(text)]
