"""All kinds at once: :func:`extract_attributes` (every extractor, ordered by position) and :func:`to_frame`
(a tidy table of attributes, or of a batch of reports)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import pandas as pd

from radaudit.text.attributes.certainty import extract_certainty
from radaudit.text.attributes.common import check_text
from radaudit.text.attributes.devices import extract_devices
from radaudit.text.attributes.laterality import extract_laterality
from radaudit.text.attributes.location import extract_location
from radaudit.text.attributes.quantity import extract_quantity
from radaudit.text.attributes.records import Attribute, Device, Severity
from radaudit.text.attributes.severity import extract_severity
from radaudit.text.attributes.size import extract_size
from radaudit.text.attributes.temporal import extract_temporal
from radaudit.text.attributes.vocabulary import ATTRIBUTE_KINDS

_EXTRACTORS: dict[str, Callable[[str], list]] = {
    "laterality": extract_laterality,
    "location": extract_location,
    "size": extract_size,
    "severity": extract_severity,
    "quantity": extract_quantity,
    "temporal": extract_temporal,
    "device": extract_devices,
    "certainty": extract_certainty,
}


def extract_attributes(text: str, kinds: Iterable[str] | None = None) -> list[Attribute]:
    """All attributes in ``text`` (every kind, or those in ``kinds``), ordered by ``start``.

    ``kinds`` are names from :data:`ATTRIBUTE_KINDS`; an unknown name raises ``ValueError``
    listing the allowed ones.

    >>> [(a.kind, a.value)
    ...  for a in extract_attributes("New small left pleural effusion.", kinds=["temporal", "severity", "laterality"])]
    [('temporal', 'new'), ('severity', 'mild'), ('laterality', 'left')]
    """
    s = check_text(text)
    chosen = ATTRIBUTE_KINDS if kinds is None else tuple(kinds)
    bad = [k for k in chosen if k not in _EXTRACTORS]
    if bad:
        raise ValueError(f"unknown attribute kind(s) {bad}; allowed: {list(ATTRIBUTE_KINDS)}")
    found: list[Attribute] = []
    for k in ATTRIBUTE_KINDS:
        if k in chosen:
            found.extend(_EXTRACTORS[k](s))
    order = {k: i for i, k in enumerate(ATTRIBUTE_KINDS)}
    found.sort(key=lambda a: (a.start, order[a.kind], a.end))
    return found


_FRAME_COLUMNS = ["doc", "kind", "value", "text", "start", "end", "detail"]


def _detail(a: Attribute) -> dict:
    d = {f.name: getattr(a, f.name) for f in dataclasses.fields(a) if f.name not in ("value", "text", "start", "end")}
    if isinstance(a, Device) and a.tip is not None:
        tip = a.tip
        d["tip"] = {
            "location": tip.location, "locations": tip.locations, "distance_mm": tip.distance_mm,
            "relation": tip.relation, "reference": tip.reference, "text": tip.text,
        }
    if isinstance(a, Severity):
        d["level"] = a.level
    return d


def to_frame(items: Iterable[Attribute] | Iterable[str] | Mapping[object, str] | pd.Series,
             kinds: Iterable[str] | None = None) -> pd.DataFrame:
    """A tidy table, one row per attribute: ``doc, kind, value, text, start, end, detail``.

    ``items`` is either a list of attributes (``doc`` is 0) or a batch of texts: a list of str,
    a mapping id -> text or a ``pd.Series`` (``doc`` is the list position, the key or the index).
    In a batch, missing texts (None/NaN) are skipped (they have no attributes); any other
    non-str raises ``TypeError``. ``detail`` holds the kind-specific fields as a dict (for
    devices, ``tip`` as a dict too). Column order is fixed, also when the table is empty.
    """
    if isinstance(items, str):
        raise TypeError("to_frame needs a list of attributes or a batch of texts; wrap a single text in a list")
    if isinstance(items, pd.Series):
        pairs: Iterable[tuple[object, object]] = items.items()
    elif isinstance(items, Mapping):
        pairs = items.items()
    else:
        seq = list(items)
        if all(dataclasses.is_dataclass(x) and hasattr(x, "kind") for x in seq):
            rows = [{"doc": 0, "kind": a.kind, "value": a.value, "text": a.text, "start": a.start, "end": a.end,
                     "detail": _detail(a)} for a in seq]
            return pd.DataFrame(rows, columns=_FRAME_COLUMNS)
        pairs = enumerate(seq)
    rows = []
    for doc, t in pairs:
        if t is None or (isinstance(t, float) and t != t) or t is pd.NA:
            continue
        for a in extract_attributes(check_text(t), kinds):
            rows.append({"doc": doc, "kind": a.kind, "value": a.value, "text": a.text, "start": a.start,
                         "end": a.end, "detail": _detail(a)})
    return pd.DataFrame(rows, columns=_FRAME_COLUMNS)
