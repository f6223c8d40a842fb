"""Where the data lives: one data root, resolved the same way everywhere.

Order of precedence (the first that applies wins):

1. the ``data_root`` parameter (params YAML, ``-p data_root=...`` or ``--data-root``);
2. the ``RADAUDIT_DATA`` environment variable;
3. ``../shared/data`` next to the repository (the lab's development layout), if it exists.

Datasets are folders under the root (``<root>/iu-xray-openi``, ...); credentialed sets can also be
given by their own path (see :func:`radaudit.data.load_dataset`).
"""

from __future__ import annotations

import os
from pathlib import Path

from radaudit.errors import DatasetNotFoundError

ENV_VAR = "RADAUDIT_DATA"


def _repo_root() -> Path:
    # lib/radaudit/data/root.py -> the repository (only meaningful for an editable install)
    return Path(__file__).resolve().parents[3]


def default_candidates() -> list[Path]:
    """The development fallbacks, in order: ``./../shared/data`` and ``<repo>/../shared/data``."""
    cands = [Path.cwd().parent / "shared" / "data", _repo_root().parent / "shared" / "data"]
    seen, out = set(), []
    for c in cands:
        r = c.resolve()
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def resolve_data_root(data_root: str | os.PathLike | None = None, *, must_exist: bool = True) -> Path:
    """Return the data root as an absolute path (see module docstring for the precedence).

    Raises :class:`DatasetNotFoundError` when ``must_exist`` and no root can be found, or when the
    root that was asked for explicitly does not exist.
    """
    if data_root not in (None, ""):
        root = Path(os.path.expanduser(str(data_root))).resolve()
        origin = "the data_root parameter"
    elif os.environ.get(ENV_VAR):
        root = Path(os.path.expanduser(os.environ[ENV_VAR])).resolve()
        origin = f"the {ENV_VAR} environment variable"
    else:
        for cand in default_candidates():
            if cand.is_dir():
                return cand
        if must_exist:
            raise DatasetNotFoundError(
                "No data root found. Point radaudit at the folder that holds the datasets with "
                f"--data-root PATH, -p data_root=PATH or the {ENV_VAR} environment variable; "
                "`radaudit data fetch <name> --data-root PATH` downloads the public datasets into it "
                "(`radaudit data list` shows them)."
            )
        return default_candidates()[0]
    if must_exist and not root.is_dir():
        raise DatasetNotFoundError(
            f"The data root {root} (from {origin}) does not exist. Create it and run "
            f"`radaudit data fetch <name> --data-root {root}`, or point --data-root / {ENV_VAR} at the "
            "folder that holds the datasets."
        )
    return root
