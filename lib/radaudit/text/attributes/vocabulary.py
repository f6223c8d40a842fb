"""The controlled vocabularies of the attribute extractors: the values each kind may take, and the tip-position
patterns of devices.

Data only (no code): the extractors of :mod:`radaudit.text.attributes` read these tables, and what they
return is always one of their values. All are re-exported by :mod:`radaudit.text.attributes`.
"""

from __future__ import annotations

#: Lobe value -> (description, implied side or None).
LOBES: dict[str, tuple[str, str | None]] = {
    "RUL": ("right upper lobe", "right"),
    "RML": ("right middle lobe", "right"),
    "RLL": ("right lower lobe", "right"),
    "LUL": ("left upper lobe", "left"),
    "lingula": ("lingula (left upper lobe)", "left"),
    "LLL": ("left lower lobe", "left"),
    "upper_lobe": ("upper lobe, side not stated in the lobe phrase", None),
    "lower_lobe": ("lower lobe, side not stated in the lobe phrase", None),
}

#: Zone values (controlled vocabulary), in rough cranio-caudal then medial order.
ZONES: tuple[str, ...] = (
    "apex", "upper_zone", "mid_zone", "lower_zone", "base", "perihilar", "hilum", "infrahilar",
    "suprahilar", "retrocardiac", "costophrenic_angle", "cardiophrenic_angle", "subpulmonic",
    "paratracheal", "fissure",
)

#: Ordinal severity scale: label -> level.
SEVERITY_SCALE: dict[str, int] = {"trace": 1, "minimal": 2, "mild": 3, "moderate": 4, "severe": 5}

#: Word (lower case) -> severity label.
SEVERITY_SYNONYMS: dict[str, str] = {
    "trace": "trace",
    "minimal": "minimal", "minimally": "minimal", "tiny": "minimal", "slight": "minimal", "slightly": "minimal",
    "mild": "mild", "mildly": "mild", "small": "mild",
    "moderate": "moderate", "moderately": "moderate",
    "severe": "severe", "severely": "severe", "large": "severe", "marked": "severe", "markedly": "severe",
    "extensive": "severe", "massive": "severe", "huge": "severe",
}

#: Temporal values; the first five are the issue's, ``persistent`` is documented in the module docstring.
TEMPORAL_VALUES: tuple[str, ...] = ("new", "increased", "decreased", "unchanged", "resolved", "persistent")

#: Certainty (hedge) values, weakest first.
CERTAINTY_VALUES: tuple[str, ...] = ("possible", "probable")

#: Device type -> description.
DEVICE_TYPES: dict[str, str] = {
    "endotracheal_tube": "endotracheal tube (ETT, ET tube)",
    "tracheostomy_tube": "tracheostomy tube",
    "enteric_tube": "nasogastric / orogastric / feeding / gastrostomy tube",
    "central_venous_catheter": "central venous catheter: IJ, subclavian, femoral, PICC, dialysis, umbilical, CVC",
    "swan_ganz": "Swan-Ganz / pulmonary artery catheter",
    "chest_tube": "chest tube, pleural drain or catheter, pigtail, mediastinal drain",
    "pacemaker": "pacemaker / ICD generator or device",
    "pacemaker_lead": "pacemaker or ICD leads, electrodes, pacing wires",
    "ecg_leads": "external ECG / monitoring leads",
    "external_pads": "external pacer / defibrillator pads",
    "sternotomy_wires": "median sternotomy wires or sutures",
    "clips": "surgical clips or staples",
    "port": "implanted port (Port-A-Cath, Mediport)",
    "stent": "stent",
    "iabp": "intra-aortic balloon pump",
    "catheter": "catheter of unstated kind (epidural, intrathecal, drainage, ...)",
    "support_devices": "collective reference: lines and tubes, support devices",
}

_SVC = r"(?:SVC|superior\s+vena\s+(?:cava|(?-i:XXXX)))"

#: Tip-position vocabulary: value -> pattern (applied case-insensitively, first match wins per span).
TIP_LOCATIONS: dict[str, str] = {
    "cavoatrial_junction": (
        r"(?:superior\s+|upper\s+)?(?:cavo[- ]?atrial|caval[- ]atrial|atrio[- ]?caval|atrial[- ]caval)\s+junction|"
        r"SVC\s*/\s*RA\s+junction|SVC[- ]RA\s+junction|junction\s+of\s+the\s+SVC\s+and\s+(?:the\s+)?right\s+atrium"
    ),
    "upper_svc": rf"(?:upper|proximal|high|superior)\s+(?:portion\s+of\s+the\s+)?{_SVC}",
    "mid_svc": (
        rf"mid(?:dle)?(?:[- ]?(?:to[- ])?(?:distal|lower))?[- ]?(?:portion\s+of\s+the\s+)?{_SVC}|"
        rf"mid\s+to\s+(?:distal|lower)\s+(?:portion\s+of\s+the\s+)?{_SVC}"
    ),
    "lower_svc": rf"(?:lower|distal|low|inferior)\s+(?:portion\s+of\s+the\s+)?{_SVC}",
    "svc": _SVC,
    "right_atrium": r"right\s+atri(?:um|al)|(?-i:RA)(?!\s+junction)",
    "right_ventricle": r"right\s+ventric(?:le|ular)|(?-i:RV)",
    "left_ventricle": r"left\s+ventric(?:le|ular)",
    "coronary_sinus": r"coronary\s+sinus",
    "right_pulmonary_artery": r"right\s+(?:main\s+)?pulmonary\s+artery|right\s+interlobar\s+(?:pulmonary\s+)?artery",
    "left_pulmonary_artery": r"left\s+(?:main\s+)?pulmonary\s+artery|left\s+interlobar\s+(?:pulmonary\s+)?artery",
    "pulmonary_artery": r"(?:main\s+|interlobar\s+)?pulmonary\s+(?:artery|outflow\s+tract)",
    "ivc": r"(?:intrahepatic\s+)?(?:IVC|inferior\s+vena\s+cava)",
    "brachiocephalic_vein": (
        r"(?:left\s+|right\s+)?(?:brachiocephalic|innominate)(?:\s+(?:vein|venous\s+confluence|junction))?|"
        r"IJ\s*/\s*brachiocephalic\s+junction"
    ),
    "subclavian_vein": r"(?:left\s+|right\s+)?subclavian\s+vein",
    "internal_jugular_vein": r"(?:left\s+|right\s+)?(?:internal\s+)?jugular\s+vein|IJ\s+vein",
    "axillary_vein": r"axillary\s+vein",
    "carina": r"(?:at|to)\s+(?:the\s+)?(?:level\s+of\s+(?:the\s+)?)?carina",
    "right_mainstem_bronchus": r"right\s+(?:mainstem|main[- ]stem|main)\s+bronchus|bronchus\s+intermedius",
    "left_mainstem_bronchus": r"left\s+(?:mainstem|main[- ]stem|main)\s+bronchus",
    "trachea": r"(?:(?:mid|distal|proximal|lower|upper)[- ]?)?trachea",
    "thoracic_inlet": r"thoracic\s+inlet",
    "clavicles": r"clavicular\s+heads|(?:level\s+of\s+the\s+)?clavicles",
    "ge_junction": r"(?:gastro-?o?esophageal|GE|esophagogastric)\s+junction",
    "esophagus": r"(?:(?:distal|mid|proximal|lower|upper)\s+)?o?esophagus",
    "duodenum": r"duodenum|duodenal\s+bulb|ligament\s+of\s+treitz|jejunum",
    "stomach": r"stomach|gastric\s+(?:body|fundus|antrum|cardia|pylorus|lumen)|pylorus|(?:body|fundus)\s+of\s+the\s+stomach",
    "below_diaphragm": r"below\s+the\s+(?:(?:left|right)\s+)?(?:hemi)?diaphragm",
}


#: The attribute kinds, in the order :func:`~radaudit.text.attributes.extract_attributes` sorts ties.
ATTRIBUTE_KINDS: tuple[str, ...] = (
    "laterality", "location", "size", "severity", "quantity", "temporal", "device", "certainty",
)
