"""The one tidy schema that every dataset loader returns.

Every loader returns a :class:`pandas.DataFrame` whose first columns are :data:`CORE_COLUMNS`, in
that order, followed by dataset-specific extra columns (labels, MeSH terms, licences, ...).
A core column a dataset does not have is present and entirely missing (``<NA>``).

Conventions
-----------
- ``study_id``: string, unique per row for report datasets (one row = one study/report).
  Annotation tables in long form (e.g. RadPref rater annotations) document their own key.
- ``patient_id``: string or ``<NA>``.
- ``sex``: ``"F"``, ``"M"``, ``"O"`` (other/unspecified as recorded by the source) or ``<NA>`` (not
  stated). Normalise with :func:`normalize_sex`.
- ``age``: float years, or ``<NA>``.
- ``view``: string such as ``"PA"``, ``"AP"``, ``"LATERAL"``, or several joined with ``"|"`` for a
  multi-image study (in the order of ``image_path``).
- ``image_path``: the key image's path, absolute when the image exists under the data root,
  otherwise the path as the source gives it (relative); ``<NA>`` when the dataset has no images.
- ``findings``, ``impression``, ``indication``: report sections as strings, ``<NA>`` when absent.
- ``split``: the source's split name (``train``/``valid``/``test``) or ``<NA>``.
- ``source``: the registry name of the dataset that produced the row.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from radaudit.errors import DataFormatError

CORE_COLUMNS: tuple[str, ...] = (
    "study_id",
    "patient_id",
    "sex",
    "age",
    "view",
    "image_path",
    "findings",
    "impression",
    "indication",
    "split",
    "source",
)

STRING_COLUMNS = ("study_id", "patient_id", "sex", "view", "image_path", "findings", "impression", "indication", "split",
                  "source")

SEX_VALUES = ("F", "M", "O")

_SEX_MAP = {
    "f": "F", "female": "F", "woman": "F", "w": "F",
    "m": "M", "male": "M", "man": "M",
    "o": "O", "other": "O",
}


def normalize_sex(value: object) -> object:
    """Map a source's sex/gender code to ``"F"``, ``"M"``, ``"O"`` or ``pd.NA``.

    Accepts the spellings the public datasets use (``F``/``M``, ``Female``/``Male``, ``O``).
    ``Unknown``, blanks and anything unrecognised become ``pd.NA``: "not stated" is never guessed.
    """
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return pd.NA
    key = str(value).strip().lower()
    return _SEX_MAP.get(key, pd.NA)


def blank_to_na(series: pd.Series) -> pd.Series:
    """Strings that are empty or whitespace only become ``<NA>``; other values are kept."""
    s = series.astype("string")
    return s.where(s.str.strip().fillna("") != "", pd.NA)


def finalize(df: pd.DataFrame, source: str, *, extra_first: Iterable[str] = ()) -> pd.DataFrame:
    """Return ``df`` in the tidy schema: core columns first (added as ``<NA>`` if absent), typed.

    ``extra_first`` names extra columns to place right after the core ones; all other extra
    columns follow in their existing order. The index is reset. ``source`` fills the ``source``
    column. Raises :class:`~radaudit.errors.DataFormatError` (a ``ValueError``) if ``study_id`` has
    missing values.
    """
    out = df.copy()
    for col in CORE_COLUMNS:
        if col not in out.columns:
            out[col] = pd.NA
    out["source"] = source
    for col in STRING_COLUMNS:
        out[col] = out[col].astype("string")
    for col in ("findings", "impression", "indication", "view", "image_path", "patient_id", "split"):
        out[col] = blank_to_na(out[col])
    out["sex"] = out["sex"].map(normalize_sex).astype("string")
    out["age"] = pd.to_numeric(out["age"], errors="coerce").astype("Float64")
    if out["study_id"].isna().any():
        raise DataFormatError(f"{source}: {int(out['study_id'].isna().sum())} rows have no study_id; every row needs "
                              "one: check the source file's id column (blank cells).")
    extra_first = [c for c in extra_first if c in out.columns and c not in CORE_COLUMNS]
    rest = [c for c in out.columns if c not in CORE_COLUMNS and c not in extra_first]
    out = out[list(CORE_COLUMNS) + extra_first + rest].reset_index(drop=True)
    out.attrs["source"] = source
    return out


def validate(df: pd.DataFrame) -> None:
    """Raise ``ValueError`` naming the problem if ``df`` does not follow the tidy schema."""
    missing = [c for c in CORE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"not in the tidy schema: missing core columns {missing}")
    if list(df.columns[: len(CORE_COLUMNS)]) != list(CORE_COLUMNS):
        raise ValueError(f"core columns must come first in the order {list(CORE_COLUMNS)}")
    bad_sex = set(df["sex"].dropna().unique()) - set(SEX_VALUES)
    if bad_sex:
        raise ValueError(f"sex has values outside {SEX_VALUES}: {sorted(bad_sex)}")
    if df["study_id"].isna().any():
        raise ValueError("study_id has missing values")


def report_text(df: pd.DataFrame) -> pd.Series:
    """Findings and impression joined by a blank line (whichever exist), ``<NA>`` if neither does."""
    f = df["findings"].astype("string")
    i = df["impression"].astype("string")
    sep = pd.Series("", index=df.index, dtype="string").mask(f.notna() & i.notna(), "\n\n")
    both = f.fillna("") + sep + i.fillna("")
    return both.where(f.notna() | i.notna(), pd.NA)
