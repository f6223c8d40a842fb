"""One small registry class for every kind of thing the lab names: datasets, experiments, metrics.

A :class:`Registry` is a dict from name to item that refuses duplicate names and answers an
unknown name with a :class:`~radaudit.errors.ParamsError` listing the known ones.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from radaudit.errors import ParamsError

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """name -> item for one kind of thing (``kind`` is used in messages, e.g. "dataset")."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def register(self, item: T, *, name: str | None = None) -> T:
        """Add ``item`` under ``name`` (default: ``item.name``); a name can be registered once."""
        key = name if name is not None else item.name  # type: ignore[attr-defined]
        if key in self:
            raise ValueError(f"{self.kind} {key!r} registered twice")
        self[key] = item
        return item

    def lookup(self, name: str) -> T:
        """The item called ``name``, or a ``ParamsError`` that lists the known names."""
        try:
            return self[name]
        except KeyError:
            raise ParamsError(f"Unknown {self.kind} {name!r}. Known {self.kind}s: {', '.join(self)}.") from None
