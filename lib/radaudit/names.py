"""Names that become paths: a run name, a preset. One safe component, or a clear error (issue 24).

The lowest layer (beside :mod:`radaudit.errors`), so that the config, the paths and the runner check
names the same way.
"""

from __future__ import annotations

import re

from radaudit.errors import ParamsError

__all__ = ["check_component"]

_COMPONENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def check_component(value: str, what: str = "run name") -> str:
    """``value`` if it is one safe path component (letters, digits, ``.``, ``_``, ``-``; not starting with
    a dot; no ``..``; 1-100 characters), else :class:`~radaudit.errors.ParamsError` naming the rule.

    A run name or preset becomes a folder or file name; ``../x`` would write outside the run folder.

    >>> check_component("my-run_1.v2")
    'my-run_1.v2'
    """
    if not isinstance(value, str) or not _COMPONENT.fullmatch(value) or ".." in value:
        raise ParamsError(f"{what} {value!r} is not allowed: use 1-100 letters, digits, '.', '_' or '-', "
                          "not starting with '.', without '..' or '/' (it becomes one folder name).")
    return value
