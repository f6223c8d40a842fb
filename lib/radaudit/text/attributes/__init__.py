"""Attributes of findings in chest X-ray report text: side, place, size, degree, count, change, devices, hedges.

Every extractor is a pure function of one string (a sentence, or any span of report text) that
returns typed, frozen dataclasses in order of position. Each carries the normalised ``value``,
the matched ``text`` and its ``start``/``end`` character offsets into the string it was given
(``text == s[start:end]`` always holds), so that fact-level metrics can align attributes and
perturbations can rewrite exactly one of them. :func:`extract_attributes` runs them all;
:func:`to_frame` turns the result (or a batch of reports) into a tidy table.

Extraction is *mention-level*: an attribute is reported where its words occur; which finding it
belongs to is not resolved here, and neither is negation ("no large pneumothorax" still yields
severity ``severe`` and "no new consolidation" temporal ``new``). Negation and uncertainty
*scope* belong to :mod:`radaudit.text.negation`: ``classify_mention(sentence, (a.start, a.end))``
classifies the attribute ``a`` of that sentence; this package does not import it. Input must be a ``str``: ``None``
and other types raise ``TypeError`` with a message saying what to pass; ``""`` gives ``[]``. Matching is
case-insensitive unless a rule says otherwise (CheXpert Plus impressions are upper case).

One module per attribute family, each with its rules in its docstring; everything public is re-exported here
(``from radaudit.text.attributes import extract_size``):

* :mod:`~radaudit.text.attributes.vocabulary` — the controlled vocabularies (:data:`LOBES`, :data:`ZONES`,
  :data:`SEVERITY_SCALE`, :data:`SEVERITY_SYNONYMS`, :data:`TEMPORAL_VALUES`, :data:`CERTAINTY_VALUES`,
  :data:`DEVICE_TYPES`, :data:`TIP_LOCATIONS`, :data:`ATTRIBUTE_KINDS`);
* :mod:`~radaudit.text.attributes.records` — the frozen dataclasses the extractors return (:class:`Laterality`,
  :class:`Location`, :class:`Size`, :class:`Severity`, :class:`Quantity`, :class:`Temporal`, :class:`Certainty`,
  :class:`Device` with its :class:`TipPosition`) and their union :data:`Attribute`;
* :mod:`~radaudit.text.attributes.common` — what the extractors share: the input check, span overlap, side words;
* :mod:`~radaudit.text.attributes.laterality` — :func:`extract_laterality` (left, right, bilateral);
* :mod:`~radaudit.text.attributes.location` — :func:`extract_location` (lobes and zones);
* :mod:`~radaudit.text.attributes.size` — :func:`extract_size` (measurements in millimetres; its size grammar is
  also read by the device tip distances);
* :mod:`~radaudit.text.attributes.severity` — :func:`extract_severity` (degree words on the ordinal scale);
* :mod:`~radaudit.text.attributes.quantity` — :func:`extract_quantity` (single, multiple, counts);
* :mod:`~radaudit.text.attributes.temporal` — :func:`extract_temporal` (change since a prior study);
* :mod:`~radaudit.text.attributes.devices` — :func:`extract_devices` (lines, tubes, hardware: side and tip);
* :mod:`~radaudit.text.attributes.certainty` — :func:`extract_certainty` (hedge words);
* :mod:`~radaudit.text.attributes.combined` — :func:`extract_attributes` (all kinds at once) and :func:`to_frame`.

Cost: the eight extractors over the 3,851 IU X-ray reports (findings + impression) take about
3 s on one CPU core; device patterns only run on texts that contain a device word.
"""

from __future__ import annotations

from radaudit.text.attributes.certainty import CERTAINTY_PATTERNS, extract_certainty
from radaudit.text.attributes.combined import extract_attributes, to_frame
from radaudit.text.attributes.devices import DEVICE_PATTERNS, extract_devices
from radaudit.text.attributes.laterality import extract_laterality
from radaudit.text.attributes.location import extract_location
from radaudit.text.attributes.quantity import extract_quantity
from radaudit.text.attributes.records import (
    Attribute,
    Certainty,
    Device,
    Laterality,
    Location,
    Quantity,
    Severity,
    Size,
    Temporal,
    TipPosition,
)
from radaudit.text.attributes.severity import extract_severity
from radaudit.text.attributes.size import extract_size
from radaudit.text.attributes.temporal import TEMPORAL_PATTERNS, extract_temporal
from radaudit.text.attributes.vocabulary import (
    ATTRIBUTE_KINDS,
    CERTAINTY_VALUES,
    DEVICE_TYPES,
    LOBES,
    SEVERITY_SCALE,
    SEVERITY_SYNONYMS,
    TEMPORAL_VALUES,
    TIP_LOCATIONS,
    ZONES,
)

__all__ = [
    "CERTAINTY_PATTERNS",
    "DEVICE_PATTERNS",
    "TEMPORAL_PATTERNS",
    "Attribute",
    "Certainty",
    "Device",
    "Laterality",
    "Location",
    "Quantity",
    "Severity",
    "Size",
    "Temporal",
    "TipPosition",
    "ATTRIBUTE_KINDS",
    "CERTAINTY_VALUES",
    "DEVICE_TYPES",
    "LOBES",
    "SEVERITY_SCALE",
    "SEVERITY_SYNONYMS",
    "TEMPORAL_VALUES",
    "TIP_LOCATIONS",
    "ZONES",
    "extract_attributes",
    "extract_certainty",
    "extract_devices",
    "extract_laterality",
    "extract_location",
    "extract_quantity",
    "extract_severity",
    "extract_size",
    "extract_temporal",
    "to_frame",
]
