"""``radaudit cache check [--repair]``: every integrity check of the cache, on demand, per entry kind.

What is checked (each a row kind of :func:`check_cache`):

- ``sqlite``: every ``*.sqlite`` (generations, features, text outputs): SQLite's ``quick_check``
  (:func:`radaudit.models.cache.check_sqlite`). Repair: moved aside to ``<name>.sqlite.corrupt-<time>``
  (:func:`radaudit.models.cache.quarantine`); the next run starts a new one and recomputes its entries.
- ``model folder``: every folder that carries a file list (``.radaudit_files.json``, written by
  :func:`radaudit.paths.atomic_dir`: trained stand-ins, utility classifiers, marked images): every file
  present with its recorded size and SHA-256, none added. Repair: the folder is removed (retrained or
  rebuilt on next use). A folder without a list is reported as unchecked, never removed.
- ``array part``: every ``*.npy`` (generated image parts, image caches): the header reads and the file
  holds exactly the bytes its shape and dtype need (a copy cut short, a disk that filled up). Repair:
  the file is removed (regenerated on next use).
- ``leftover``: temporary files of an interrupted write (``.*.tmp*``, ``*.partial``): never read by a
  run. Repair: removed.

Nothing is changed without ``repair=True``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from radaudit.models.cache import check_sqlite, quarantine
from radaudit.paths import FILES_MANIFEST, listing_matches

__all__ = ["CacheProblem", "CacheReport", "check_cache", "check_npy"]

KINDS: tuple[str, ...] = ("sqlite", "model folder", "array part", "leftover")


@dataclass(frozen=True)
class CacheProblem:
    kind: str
    path: Path
    problem: str
    action: str = ""  # what --repair did ("" when not repaired)


@dataclass
class CacheReport:
    root: Path
    checked: dict[str, int]
    problems: list[CacheProblem]
    unchecked: list[Path]

    @property
    def clean(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """One line per kind (checked, damaged), then one per problem."""
        out = []
        for kind in KINDS:
            bad = sum(p.kind == kind for p in self.problems)
            out.append(f"{kind:<13} {self.checked.get(kind, 0):6d} checked, {bad} damaged")
        for p in self.problems:
            rel = p.path.relative_to(self.root) if p.path.is_relative_to(self.root) else p.path
            out.append(f"  {p.kind}: {rel}: {p.problem}" + (f" -> {p.action}" if p.action else ""))
        if self.unchecked:
            out.append(f"  {len(self.unchecked)} folder(s) without a file list were not checked (made before file "
                       "lists were written; delete them to rebuild them checked)")
        return out


def check_npy(path: str | os.PathLike[str]) -> str:
    """``"ok"``, or why the ``.npy`` file cannot be what it says (unreadable header, wrong length)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _fortran, dtype = read(fh)
            offset = fh.tell()
    except (OSError, ValueError, EOFError) as err:
        return f"unreadable header ({err})"
    if dtype.hasobject:
        return "holds Python objects (never loaded: a cache part is plain numbers)"
    need = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    size = path.stat().st_size
    if size != need:
        return f"{size:,} bytes where shape {tuple(shape)} of {dtype} needs {need:,} (cut short or padded)"
    return "ok"


def _is_leftover(p: Path) -> bool:
    return p.is_file() and ((p.name.startswith(".") and ".tmp" in p.name) or p.suffix == ".partial")


def check_cache(root: str | os.PathLike[str], *, repair: bool = False) -> CacheReport:
    """Run every check on the cache folder ``root`` (module docstring); with ``repair`` act on what is damaged."""
    root = Path(root)
    checked = dict.fromkeys(KINDS, 0)
    problems: list[CacheProblem] = []
    unchecked: list[Path] = []
    if not root.is_dir():
        return CacheReport(root, checked, problems, unchecked)
    for db in sorted(root.glob("*.sqlite")):
        checked["sqlite"] += 1
        status = check_sqlite(db)
        if status != "ok":
            action = f"moved to {quarantine(db).name}; a new one starts on the next run" if repair else ""
            problems.append(CacheProblem("sqlite", db, status, action))
    listed = sorted(p.parent for p in root.rglob(FILES_MANIFEST))
    for folder in listed:
        checked["model folder"] += 1
        if not listing_matches(folder):
            action = ""
            if repair:
                shutil.rmtree(folder, ignore_errors=True)
                action = "removed; rebuilt on next use"
            problems.append(CacheProblem("model folder", folder, "a file is missing, added, truncated or changed",
                                         action))
    for npy in sorted(root.rglob("*.npy")):
        if any(npy.is_relative_to(f) for f in listed) or npy.name.startswith("."):
            continue  # inside a listed folder (its list covers it), or a temporary file (a leftover)
        checked["array part"] += 1
        status = check_npy(npy)
        if status != "ok":
            if repair:
                npy.unlink(missing_ok=True)
            problems.append(CacheProblem("array part", npy, status, "removed; regenerated on next use" if repair else ""))
    for p in sorted(root.rglob("*")):
        if _is_leftover(p):
            checked["leftover"] += 1
            if repair:
                p.unlink(missing_ok=True)
            problems.append(CacheProblem("leftover", p, "a temporary file of an interrupted write",
                                         "removed" if repair else ""))
    models = root / "demo_models"
    if models.is_dir():
        unchecked = [f for f in sorted(models.iterdir()) if f.is_dir() and not (f / FILES_MANIFEST).is_file()]
    return CacheReport(root, checked, problems, unchecked)
