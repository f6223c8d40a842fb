"""Reading a dataset's CSV and JSON files with the checks every loader needs.

Each helper reads one file and either returns its content or raises a user-facing error from
:mod:`radaudit.errors` whose message names the dataset, the file, what was wrong and (when the
caller gives ``doc``) where the format is documented:

- :func:`read_csv_checked`: a CSV that must have some columns.
- :func:`read_json_checked`: a JSON file whose top level must be a list or an object, optionally
  of records (objects) that must have some fields.

Both are pure apart from reading the file: no logging, no caching, nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from radaudit.errors import DataFormatError, DatasetNotFoundError


def _see(doc: str | None) -> str:
    return f" See {doc} for the format." if doc else ""


def read_csv_checked(
    path: str | Path,
    required: Iterable[str],
    *,
    dataset: str,
    what: str | None = None,
    doc: str | None = None,
    allow_empty: bool = False,
    **read_csv_kwargs,
) -> pd.DataFrame:
    """Read the CSV at ``path`` with :func:`pandas.read_csv` and check that it has the ``required`` columns.

    ``dataset`` (e.g. ``"mimic_cxr"``) starts every message; ``what`` names the file's format in
    words (e.g. ``"MIMIC-CXR-JPG metadata"``); ``doc`` says where that format is documented (a URL).
    ``read_csv_kwargs`` go to :func:`pandas.read_csv` unchanged (``dtype=str``,
    ``keep_default_na=False``, ...), so each loader keeps its own parsing choices.

    Raises :class:`DatasetNotFoundError` when ``path`` does not exist, and
    :class:`DataFormatError` when it cannot be read as a CSV (bad gzip, undecodable bytes, a
    directory, ...), is empty (zero bytes or no header line: the message says to fetch it again), lacks a required
    column (the message lists the missing columns, the required ones and the columns found), or,
    unless ``allow_empty``, has a header but no data row. Extra columns are allowed.
    """
    path = Path(path)
    required = list(required)
    if not path.exists():
        raise DatasetNotFoundError(f"{dataset}: {path} does not exist.{_see(doc)}")
    as_what = f"the {what} CSV" if what else "a CSV"
    if path.is_file() and path.stat().st_size == 0:
        raise DataFormatError(f"{dataset}: {path} is empty (0 bytes), expected {as_what} with at least the column(s) "
                              f"{required}: the file was not written or downloaded completely; fetch it again.{_see(doc)}")
    try:
        df = pd.read_csv(path, **read_csv_kwargs)
    except pd.errors.EmptyDataError as exc:  # a file of blank lines, or an empty gzip member
        raise DataFormatError(f"{dataset}: {path} has no header line (the file is empty), expected {as_what} with at "
                              f"least the column(s) {required}: fetch it again.{_see(doc)}") from exc
    except (ValueError, OSError) as exc:  # ParserError, UnicodeDecodeError, bad gzip, ...
        raise DataFormatError(f"{dataset}: could not read {path} as {as_what} ({exc}).{_see(doc)}") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        head = f"{path} does not have the {what} format: it lacks" if what else f"{path} lacks"
        raise DataFormatError(
            f"{dataset}: {head} the column(s) {missing}; expected at least {required}, "
            f"found {list(df.columns)}.{_see(doc)}"
        )
    if df.empty and not allow_empty:
        raise DataFormatError(f"{dataset}: {path} has a header but no data rows: the file was cut short or "
                              f"exported empty; fetch it again.{_see(doc)}")
    return df


def read_json_checked(
    path: str | Path,
    *,
    dataset: str,
    top_level: type,
    record_fields: Iterable[str] | None = None,
    record: str = "record",
    id_field: str | None = None,
    expected: str | None = None,
    doc: str | None = None,
) -> list | dict:
    """Read the JSON file at ``path`` and check its shape; return the parsed list or dict.

    ``top_level`` is ``list`` or ``dict``: the type the file's top level must have. ``expected``
    describes that top level in words for the messages (e.g. ``"a JSON list of cases"``; default
    ``"a JSON list"`` / ``"a JSON object"``).

    When ``record_fields`` is given (``()`` included), the top level holds records: each item of
    the list, or each value of the object, must be an object with every field in ``record_fields``.
    ``record`` is the noun for one record in messages (``"case"``, ``"study"``). A record of an
    object is named by its key; a record of a list by the value of its ``id_field`` when it has one,
    else by its index. ``None`` (default) leaves the items unchecked.

    Bare ``NaN``/``Infinity`` tokens are accepted (as :func:`json.load` does). Raises
    :class:`DatasetNotFoundError` when ``path`` does not exist, and :class:`DataFormatError` when it
    cannot be read, is not valid JSON, has another top-level type, or has a record that is not an
    object or lacks fields (the message names the record, the missing and the expected fields).
    """
    if top_level not in (list, dict):
        raise TypeError(f"top_level must be list or dict, not {top_level!r}")
    path = Path(path)
    if expected is None:
        expected = "a JSON list" if top_level is list else "a JSON object"
    if not path.exists():
        raise DatasetNotFoundError(f"{dataset}: {path} does not exist.{_see(doc)}")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{dataset}: {path} is not valid JSON ({exc}); expected {expected}.{_see(doc)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{dataset}: could not read {path} as JSON ({exc}); expected {expected}.{_see(doc)}") from exc
    if not isinstance(data, top_level):
        raise DataFormatError(f"{dataset}: {path} should hold {expected}, found a {type(data).__name__}.{_see(doc)}")
    if record_fields is None:
        return data
    fields = list(record_fields)
    with_fields = f" with the field(s) {fields}" if fields else ""
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, rec in items:
        if isinstance(data, dict):
            name = f"{record} {key!r}"
        elif isinstance(rec, dict) and id_field is not None and id_field in rec:
            name = f"{record} {rec[id_field]!r}"
        else:
            name = f"{record} at index {key}"
        if not isinstance(rec, dict):
            raise DataFormatError(
                f"{dataset}: {path}: {name} is a {type(rec).__name__}, expected an object{with_fields}.{_see(doc)}"
            )
        lacking = [f for f in fields if f not in rec]
        if lacking:
            raise DataFormatError(f"{dataset}: {path}: {name} lacks the field(s) {lacking}; expected {fields}.{_see(doc)}")
    return data
