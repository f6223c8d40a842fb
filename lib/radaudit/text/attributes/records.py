"""What the attribute extractors return: one frozen dataclass per kind, and :data:`Attribute`, their union.

Every record carries the normalised ``value``, the matched ``text`` and its ``start``/``end`` offsets into the
string given to the extractor (``text == s[start:end]``). All are re-exported by :mod:`radaudit.text.attributes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union


@dataclass(frozen=True)
class _Span:
    """A found attribute with nothing but its value: ``value``, the matched ``text`` and its ``start``/``end``
    offsets. :class:`Laterality`, :class:`Temporal` and :class:`Certainty` are this with their own ``kind``."""

    kind: ClassVar[str] = "span"
    value: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Laterality(_Span):
    """A side: ``value`` in ``left | right | bilateral``."""

    kind: ClassVar[str] = "laterality"


@dataclass(frozen=True)
class Location:
    """A lobe (``kind_of="lobe"``, value in :data:`LOBES`) or zone (``"zone"``, value in :data:`ZONES`)."""

    kind: ClassVar[str] = "location"
    value: str
    kind_of: str
    side: str | None
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Size:
    """A measurement in millimetres; ``value`` is the largest stated value (``value_mm``).

    ``bound``: ``"="`` (stated), ``"range"`` (low..high), ``"<"``, ``"<="``, ``">"``, ``">="``.
    ``measures``: ``"size"`` or ``"distance"`` (module docstring).
    """

    kind: ClassVar[str] = "size"
    value: float
    dims_mm: tuple[float, ...]
    low_mm: float | None
    high_mm: float | None
    bound: str
    approximate: bool
    unit: str
    measures: str
    text: str
    start: int
    end: int

    @property
    def value_mm(self) -> float:
        return self.value


@dataclass(frozen=True)
class Severity:
    """A degree on :data:`SEVERITY_SCALE`; a range has ``low < high`` and a label ``"low-high"``."""

    kind: ClassVar[str] = "severity"
    value: str
    low: int
    high: int
    word: str
    text: str
    start: int
    end: int

    @property
    def level(self) -> float:
        """Mean of ``low`` and ``high`` (the level itself when not a range)."""
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class Quantity:
    """``value`` ``single``/``multiple``; ``count`` when stated; ``explicit=False`` for a/an."""

    kind: ClassVar[str] = "quantity"
    value: str
    count: int | None
    explicit: bool
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Temporal(_Span):
    """A change relative to a prior study: ``value`` in :data:`TEMPORAL_VALUES`."""

    kind: ClassVar[str] = "temporal"


@dataclass(frozen=True)
class Certainty(_Span):
    """A hedge word: ``value`` in :data:`CERTAINTY_VALUES`. Scope: :mod:`radaudit.text.negation`."""

    kind: ClassVar[str] = "certainty"


@dataclass(frozen=True)
class TipPosition:
    """Where a device ends: a location from :data:`TIP_LOCATIONS` and/or a distance to a landmark."""

    location: str | None
    locations: tuple[str, ...]
    distance_mm: float | None
    distance: Size | None
    relation: str | None
    reference: str | None
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Device:
    """A device of type ``value`` (:data:`DEVICE_TYPES`), its side and tip position when stated."""

    kind: ClassVar[str] = "device"
    value: str
    subtype: str | None
    side: str | None
    tip: TipPosition | None
    position_note: str | None
    text: str
    start: int
    end: int


Attribute = Union[Laterality, Location, Size, Severity, Quantity, Temporal, Device, Certainty]
