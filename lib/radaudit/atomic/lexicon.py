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

from radaudit.text.attributes import DEVICE_TYPES

__all__ = ["FINDINGS", "ANATOMY", "MORPHOLOGY", "compile_alternation", "morphology_terms", "malposition_name",
           "canonical_names", "is_canonical",
           "SPECIFIC_OF", "GENERIC_CREDIT", "related_as"]

#: canonical finding name -> regex alternation (lower case; whole words are enforced when compiled).
FINDINGS: dict[str, str] = {
    "pericardial effusion": r"pericardial\s+effusions?",
    "pleural effusion": r"(?:pleural\s+)?effusions?|hydrothora(?:x|ces)|pleural\s+fluid(?:\s+collections?)?|"
                        r"fluid\s+(?:with)?in\s+the\s+(?:(?:left|right)\s+)?pleural\s+(?:space|cavity)|"
                        r"blunting\s+of\s+the\s+(?:\w+\s+){0,2}(?:costophrenic|cp)\s+(?:angles?|sulc(?:us|i))|"
                        r"blunted\s+(?:(?:left|right|bilateral)\s+)?(?:costophrenic|cp)\s+(?:angles?|sulc(?:us|i))|"
                        r"(?:costophrenic|cp)\s+(?:angles?|sulc(?:us|i))\s+(?:blunting|(?:is|are)\s+(?:\w+\s+)?blunted)",
    "pneumothorax": r"pneumothora(?:x|ces)|(?-i:ptx|PTX|Ptx)|"
                    r"(?:free\s+)?air\s+(?:with)?in\s+the\s+(?:(?:left|right)\s+)?pleural\s+space|"
                    r"pleural\s+air",
    "pneumomediastinum": r"pneumomediastinum",
    "pneumoperitoneum": r"pneumoperitoneum|free\s+(?:intraperitoneal\s+|intra-abdominal\s+|subdiaphragmatic\s+)?(?:air|gas)|"
                        r"(?:sub-?diaphragmatic|intraperitoneal)\s+(?:free\s+)?(?:air|gas)|"
                        r"(?:air|gas)\s+(?:under|beneath|below)\s+the\s+(?:(?:left|right|both)\s+)?(?:hemi-?)?diaphragms?",
    "subcutaneous emphysema": r"subcutaneous\s+(?:emphysema|air|gas)|soft\s+tissue\s+(?:emphysema|air|gas)",
    "consolidation": r"consolidations?|consolidative\s+(?:opacit(?:y|ies)|process|changes?)",
    "atelectasis": r"atelecta\w*|(?:lobar|segmental)\s+collapse|(?<=lobe\s)collapse|(?<=lung\s)collapse|"
                   r"(?<=lingula\s)collapse|collapsed?\s+(?:lung|lobe)|"
                   r"collapse\s+of\s+the\s+(?:\w+\s+){0,3}(?:lobes?|lungs?|lingula|segments?)",
    "pneumonia": r"pneumonias?|pneumonitis|bronchopneumonia|infectious\s+process|infection|(?-i:PNA)",
    "aspiration": r"aspiration",
    "pulmonary edema": r"(?:pulmonary|interstitial|alveolar|perihilar)\s+edema|edema|fluid\s+overload|"
                       r"kerley\s+b?\s*lines|septal\s+lines",
    "vascular congestion": r"(?:pulmonary\s+)?(?:vascular|venous)\s+(?:congestion|engorgement)|pulmonary\s+congestion|"
                           r"cephalization|vascular\s+redistribution",
    "heart failure": r"(?:congestive\s+)?heart\s+failure|(?-i:CHF)",
    "cardiomegaly": r"cardiomegaly|cardiac\s+enlargement|enlarge(?:d|ment\s+of\s+the)\s+(?:cardiac\s+silhouette|heart)|"
                    r"enlarged\s+cardiac\s+(?:silhouette|size)",
    "mediastinal shift": r"(?:(?:leftward|rightward|contralateral|ipsilateral)\s+)?"
                         r"(?:mediastinal|tracheal|cardiomediastinal)\s+shift|"
                         r"(?:leftward|rightward|contralateral)\s+shift\s+of\s+the\s+(?:\w+\s+)?(?:mediastinum|trachea|heart)|"
                         r"shift\s+of\s+the\s+(?:\w+\s+)?(?:mediastinum|mediastinal\s+structures|trachea)|"
                         r"(?:mediastinum|trachea|mediastinal\s+structures)\s+(?:is\s+|are\s+)?(?:shifted|deviated|displaced)|"
                         r"tracheal\s+deviation|deviation\s+of\s+the\s+trachea",
    "widened mediastinum": r"mediastinal\s+widening|widen(?:ed|ing)\s+(?:of\s+the\s+)?(?:superior\s+)?mediastinum|"
                           r"mediastinal\s+(?:enlargement|mass)",
    "opacity": r"opacit(?:y|ies)|opacification|infiltrat(?:e|es|ion|ive)|air\s*-?\s*space\s+(?:disease|process)|"
               r"densit(?:y|ies)|"
               # the silhouette sign: an obscured heart border or hemidiaphragm is adjacent airspace opacity
               r"(?:obscuration|silhouetting|effacement)\s+of\s+the\s+(?:left|right)\s+(?:heart\s+border|hemi-?diaphragm)|"
               r"(?:left|right)\s+(?:heart\s+border|hemi-?diaphragm)\s+(?:is\s+)?(?:obscured|silhouetted|effaced)|"
               r"(?:obscured|silhouetted|effaced)\s+(?:left|right)\s+(?:heart\s+border|hemi-?diaphragm)",
    "nodule": r"nodules?|nodular\s+(?:densit(?:y|ies)|lesions?|opacit(?:y|ies))|"
              r"micronodul(?:es?|ar)(?:\s+(?:pattern|opacit(?:y|ies)))?",
    "mass": r"mass(?:es)?|tumou?rs?|neoplasms?|malignan(?:cy|cies)|carcinoma",
    "metastatic disease": r"metasta(?:sis|ses|tic\s+disease)",
    "granuloma": r"granulomas?|granulomatous\s+(?:disease|changes?|calcifications?)",
    "lung lesion": r"(?:lung|pulmonary)\s+lesions?|cavitary\s+lesions?|cavit(?:y|ies)",
    "emphysema": r"emphysema(?:tous\s+changes?)?|bullae|bullous\s+(?:disease|changes?)",
    "copd": r"(?-i:COPD)|chronic\s+obstructive\s+(?:pulmonary|lung|airway)\s+disease",
    "hyperinflation": r"hyperinfla\w+|hyperexpan\w+|over-?inflat\w+|(?:increased|large)\s+lung\s+volumes|"
                      r"flatten(?:ed|ing)\s+(?:of\s+the\s+)?(?:hemi-?)?diaphragms?",
    "low lung volumes": r"(?:low|reduced|decreased|diminished|small|shallow)\s+lung\s+volumes?|hypoinflat\w+|"
                        r"poor\s+(?:inspiratory\s+effort|inspiration)|shallow\s+inspiration",
    "interstitial abnormality": r"interstitial\s+(?:markings?|opacit(?:y|ies)|disease|lung\s+disease|prominence|"
                                r"thickening|pattern|changes?|abnormalit(?:y|ies))|reticular\s+(?:opacit(?:y|ies)|markings?|pattern)|"
                                r"reticulonodular\s+(?:opacit(?:y|ies)|markings?|pattern)",
    "fibrosis": r"fibros(?:is|es)|fibrotic\s+changes?|honeycombing",
    "scarring": r"scar(?:s|ring)?|cicatri\w+|fibronodular\s+changes?",
    "pleural thickening": r"pleural\s+(?:thickening|plaques?|calcifications?)|"
                          r"pleural[-\s]parenchymal\s+(?:scarring|thickening)|"
                          r"apical\s+(?:pleural\s+)?(?:cap|capping)",
    "peribronchial thickening": r"(?:peri)?bronchial\s+(?:wall\s+)?(?:thickening|cuffing)",
    "bronchiectasis": r"bronchiectasis|bronchiectatic\s+changes?",
    "airway disease": r"(?:reactive|small)\s+airways?\s+disease|bronchitis|bronchiolitis|asthma",
    "volume loss": r"volume\s+loss|loss\s+of\s+(?:lung\s+)?volume",
    "air trapping": r"air\s+trapping",
    "lymphadenopathy": r"(?:lymph)?adenopath(?:y|ies)|"
                       r"(?:enlarged|bulky|prominent)\s+(?:(?:right|left|bilateral|mediastinal|hilar|paratracheal|subcarinal|"
                       r"axillary|supraclavicular|aortopulmonary|prevascular|precarinal|paraesophageal)\s+){0,3}(?:lymph\s+)?nodes?|"
                       r"(?:(?:mediastinal|hilar|paratracheal|subcarinal|axillary)\s+)?(?:lymph\s+)?nod(?:e|al)\s+enlargement",
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
    "postsurgical change": r"post-?(?:surgical|operative)\s+changes?|(?:status\s+post|s/p)\s+\w+ectomy|\w+ectomy|"
                           r"(?:status\s+post|s/p)\s+(?:(?-i:CABG)|coronary\s+(?:artery\s+)?bypass(?:\s+graft(?:ing)?)?|"
                           r"(?:median\s+)?sternotomy|thoracotomy|(?:\w+\s+)?valve\s+replacement)",
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
        r"widen\w*|enlarg\w*|prominen\w*|increased",
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
    r"tension|under\s+tension": "tension",
    r"complete|total|white-?out": "complete",
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


#: generic finding -> the more specific findings that imply it (a radiograph reading that names the
#: specific one also says the generic one is there). Used by AtomiMed-clinical to credit "right lower
#: lobe opacity" against "right lower lobe pneumonia" (:func:`related_as`); the paper matches names only.
SPECIFIC_OF: dict[str, tuple[str, ...]] = {
    "opacity": ("consolidation", "pneumonia", "atelectasis", "aspiration", "pulmonary edema", "mass", "lung lesion"),
    "consolidation": ("pneumonia", "aspiration"),
    "lung lesion": ("mass", "nodule", "metastatic disease"),
    "heart failure": ("pulmonary edema", "vascular congestion"),
    "interstitial abnormality": ("increased lung markings", "fibrosis", "pulmonary edema"),
    "increased lung markings": ("interstitial abnormality",),
    "copd": ("emphysema", "hyperinflation"),
    "pacemaker lead": ("pacemaker",),  # a pacemaker has leads; naming them is extra detail
    "pacemaker": ("pacemaker lead",),
    "widened mediastinum": ("lymphadenopathy",),
    # sternotomy wires and surgical clips are what "postoperative changes" / "status post CABG" look like
    "postsurgical change": ("sternotomy wires", "clips"),
    # "lines and tubes in satisfactory position" is said of the tubes and lines a report names one by one
    "support devices": ("endotracheal tube", "tracheostomy tube", "enteric tube", "central venous catheter",
                        "catheter", "chest tube", "pacemaker", "pacemaker lead", "iabp"),
}

#: What a generic finding is worth when the other report names the specific one it stands for
#: ("right lower lobe consolidation" for "right lower lobe pneumonia": the finding was seen, the
#: diagnosis not made). Generic findings not listed here: 0.5.
GENERIC_CREDIT: dict[str, float] = {"postsurgical change": 1.0, "support devices": 0.75,
                                    "consolidation": 0.75, "heart failure": 0.75, "interstitial abnormality": 0.75,
                                    "increased lung markings": 1.0, "copd": 0.75, "opacity": 0.5, "lung lesion": 0.5,
                                    "widened mediastinum": 0.5}


def related_as(asking: str, other: str) -> str | None:
    """How finding ``other`` relates to ``asking`` in :data:`SPECIFIC_OF`: ``"specific"`` when ``other``
    names a more specific finding that implies ``asking`` (asking "opacity", other "pneumonia"),
    ``"generic"`` when ``other`` is the generic finding ``asking`` implies, else ``None``.

    >>> related_as("opacity", "pneumonia"), related_as("pneumonia", "opacity"), related_as("pneumonia", "nodule")
    ('specific', 'generic', None)
    """
    a, o = " ".join(asking.lower().split()), " ".join(other.lower().split())
    if o in SPECIFIC_OF.get(a, ()):
        return "specific"
    if a in SPECIFIC_OF.get(o, ()):
        return "generic"
    return None


def malposition_name(device: str) -> str:
    """The canonical name of the finding "this device is malpositioned" (``"malpositioned endotracheal
    tube"``): emitted by the rule decomposer next to the device when its position is judged
    (:func:`radaudit.text.device_position.device_position`), present for a malposition and absent for
    a tube or line stated to be in good position."""
    return f"malpositioned {device.replace('_', ' ')}"


def canonical_names() -> frozenset[str]:
    """Every finding name the rule decomposer can emit: :data:`FINDINGS`, :data:`ANATOMY`, the device
    types of :data:`radaudit.text.attributes.DEVICE_TYPES` and their malposition findings.

    Two *different* canonical names are different entities however similar their spelling
    ("malpositioned enteric tube" vs "malpositioned endotracheal tube": rapidfuzz ratio 0.84):
    the fuzzy threshold θ exists to match an LLM's free-text names, not to merge entries of this
    vocabulary (:func:`radaudit.atomic.score.entity_similarity`)."""
    return _canonical()


def is_canonical(name: str) -> bool:
    """Whether ``name`` (any case/spacing) is one of :func:`canonical_names`."""
    return " ".join(name.lower().split()) in _canonical()


def _canonical() -> frozenset[str]:
    global _CANONICAL
    if _CANONICAL is None:
        devices = [d.replace("_", " ") for d in DEVICE_TYPES]
        _CANONICAL = frozenset([*FINDINGS, *ANATOMY, *devices, *(malposition_name(d) for d in devices)])
    return _CANONICAL


_CANONICAL: frozenset[str] | None = None
