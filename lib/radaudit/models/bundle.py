"""Cache bundles: the trained stand-ins, generated images and cached model outputs of one machine, packed into
one file that another clone imports, so it skips the training and generation (issue 25).

A lab trains the demo's stand-ins once (on its GPU box, or on the teacher's laptop) and hands the bundle out;
a new clone then runs ``make demo`` in the time of a cached run, and every number equals the exporter's, because
the models *are* the exporter's. Without a bundle the stand-ins are trained on the new machine, and float
rounding differs between CPUs (see :data:`radaudit.audits.modality_shift.models.DEMO_VLM_CONFIG`).

**Nothing is trusted by name.** Every cache entry is content-addressed: its folder name or SQLite key is a hash of
the data, settings, seed and recipe version it was made from. A run computes the key from *its own* data and
params and reads only what matches, so an entry made from other data or an older recipe is never used, only
carried. An imported model folder must match its file list (``.radaudit_files.json``, SHA-256 of every file,
written when it was trained) or it is refused; weights are safetensors or ``.npy`` read without pickle, never
code.

What a bundle holds (``KINDS``): model folders written whole (:func:`radaudit.paths.atomic_dir`: ``demo_models``,
``utility_classifiers``); generated image sets written a part at a time (``synthetic``); the SQLite caches
(``*.sqlite``: generations, features, text outputs), snapshotted with SQLite's backup API so a run writing to them
meanwhile is harmless. Left out (:data:`LEFT_OUT`): ``marked_images`` (redrawn from the data in ~15 s, 160 MB)
and ``rehearsal`` (the test suite's twins). ``radaudit_bundle.json`` at the top records what is inside.

Import never overwrites: a model folder already present is kept (same name, same content); an image part
already present is kept; SQLite rows are added with ``INSERT OR IGNORE``. Each model folder lands by one
rename after its check, each image part by one rename, and the SQLite merge is one transaction per database, so
an interrupted import leaves nothing half-written and can be run again.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import os
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radaudit.errors import DataFormatError, ParamsError, RadauditError
from radaudit.manifest import git_info, machine_description
from radaudit.models.cache import ContentCache
from radaudit.paths import FILES_MANIFEST, listing_matches, project_root

__all__ = ["BUNDLE_FORMAT", "BUNDLE_MANIFEST", "KINDS", "LEFT_OUT", "ImportReport", "cache_entries", "cache_summary",
           "export_bundle", "import_bundle", "training_record", "training_seconds"]

BUNDLE_MANIFEST = "radaudit_bundle.json"
BUNDLE_FORMAT = 1
#: top-level cache folders carried, and how each is laid out: ``"folders"`` = one model per folder, written
#: whole and checked against its file list; ``"parts"`` = folders of ``.npy`` parts, each written on its own
KINDS: dict[str, str] = {"demo_models": "folders", "utility_classifiers": "folders", "synthetic": "parts"}
#: top-level cache entries never carried, and why
LEFT_OUT: dict[str, str] = {
    "marked_images": "redrawn from the data on first use (~15 s for the demo)",
    "rehearsal": "the test suite's twins, rebuilt by the tests",
}


#: where a trained folder's own metadata records how long it took to make, most inclusive first: the trainers'
#: ``radaudit_*.json`` (``total_seconds`` = data preparation + warm start + training, as the VLM and report writers
#: write it; ``train_seconds`` the diffusion UNet's; ``elapsed_seconds`` the utility classifiers'), then
#: ``training_log.json`` (:func:`radaudit.models.train.train_model`: the optimisation steps only)
_TIME_KEYS = ("total_seconds", "train_seconds", "elapsed_seconds")


def training_record(folder: str | os.PathLike[str]) -> tuple[float, Path] | None:
    """``(seconds, record file)``: how long the model in ``folder`` took to train, as its own metadata recorded
    it when it was trained (on the machine that trained it: a bundle's models keep the exporter's times), and the
    file that says so (written when training ended); ``None`` when nothing records one."""
    folder = Path(folder)
    for meta in [*sorted(folder.glob("radaudit_*.json")), folder / "training_log.json"]:
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        for key in _TIME_KEYS:
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                return float(value), meta
    return None


def training_seconds(folder: str | os.PathLike[str]) -> float | None:
    """The seconds of :func:`training_record`. The time a bundle saves an importing clone is, roughly, the sum
    over its folders (plus the image generation, which nothing records per set)."""
    rec = training_record(folder)
    return None if rec is None else rec[0]


def _total_training(entries: Sequence[Path]) -> float | None:
    """:func:`training_seconds` summed over the entries that record one (``None`` when none does)."""
    times = [t for t in map(training_seconds, entries) if t is not None]
    return round(sum(times), 1) if times else None


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def cache_entries(root: str | os.PathLike[str], kind: str) -> list[Path]:
    """The finished entries of ``<root>/<kind>`` (temporary ``.name.xxx`` folders of a write in progress skipped)."""
    folder = Path(root) / kind
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _sqlite_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*.sqlite") if p.is_file())


def _count_rows(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def cache_summary(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One row per top-level item of the cache ``root``: ``name``, ``what`` (entries / rows), ``bytes``,
    ``bundled`` (whether :func:`export_bundle` carries it, or why not) and, for the model folders,
    ``training_seconds`` (:func:`training_seconds` summed over the entries that record one; else ``None``)."""
    root = Path(root)
    rows: list[dict[str, Any]] = []
    if not root.is_dir():
        return rows
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.suffix == ".sqlite" and p.is_file():
            rows.append({"name": p.name, "what": f"{_count_rows(p):,} rows", "bytes": _size(p), "bundled": "yes",
                         "training_seconds": None})
        elif p.is_dir():
            bundled = "yes" if p.name in KINDS else LEFT_OUT.get(p.name, "no: not a cache kind radaudit knows")
            entries = cache_entries(root, p.name) if p.name in KINDS else list(p.iterdir())
            rows.append({"name": p.name, "what": f"{len(entries):,} entries", "bytes": _size(p), "bundled": bundled,
                         "training_seconds": _total_training(entries) if KINDS.get(p.name) == "folders" else None})
    return rows


def _commit() -> str | None:
    """The project's commit (provenance only; ``None`` outside a checkout)."""
    try:
        return git_info(project_root()).get("commit")
    except RadauditError:
        return None


def export_bundle(root: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  kinds: Sequence[str] | None = None) -> dict[str, Any]:
    """Pack the cache ``root`` into ``out`` (``.tar``, or gzip-compressed for ``.tar.gz`` / ``.tgz``); return the
    bundle's manifest. ``kinds``: the folders of :data:`KINDS` to carry (default all) — the SQLite caches are
    always carried. The file appears at ``out`` only when complete."""
    root = Path(root)
    out = Path(out)
    kinds = list(KINDS) if kinds is None else list(kinds)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ParamsError(f"Unknown cache kind(s) {unknown}; a bundle carries {sorted(KINDS)}.")
    if not root.is_dir():
        raise ParamsError(f"The cache {root} does not exist: run an experiment first (or point $RADAUDIT_CACHE at one).")
    name = out.name
    if not (name.endswith(".tar") or name.endswith(".tar.gz") or name.endswith(".tgz")):
        raise ParamsError(f"Name the bundle *.tar, *.tar.gz or *.tgz, got {name!r}.")
    mode = "w:gz" if name.endswith((".gz", ".tgz")) else "w"
    out.parent.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(), "machine": machine_description(),
        "entries": {}, "sqlite": {}, "training_seconds": 0.0}
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with tempfile.TemporaryDirectory(prefix=".radaudit-bundle-", dir=root) as snap_dir, \
                tarfile.open(tmp, mode) as tar:
            for kind in kinds:
                entries = cache_entries(root, kind)
                manifest["entries"][kind] = [e.name for e in entries]
                if KINDS[kind] == "folders":
                    manifest["training_seconds"] += _total_training(entries) or 0.0
                for e in entries:
                    tar.add(e, arcname=f"{kind}/{e.name}")
            for db in _sqlite_files(root):
                snap = Path(snap_dir) / db.name
                src, dst = sqlite3.connect(f"file:{db}?mode=ro", uri=True), sqlite3.connect(snap)
                try:
                    src.backup(dst)  # a consistent copy, whatever another process writes meanwhile
                finally:
                    src.close()
                    dst.close()
                manifest["sqlite"][db.name] = _count_rows(snap)
                tar.add(snap, arcname=db.name)
            manifest["training_seconds"] = round(manifest["training_seconds"], 1)
            data = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
            info = tarfile.TarInfo(BUNDLE_MANIFEST)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return manifest


@dataclass
class ImportReport:
    """What :func:`import_bundle` did: per kind the entries added and those already present; the SQLite rows
    added per database; the entries refused (name, reason)."""

    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    rows_added: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"{kind}: {self.added.get(kind, 0)} added, {self.present.get(kind, 0)} already present"
               for kind in sorted(set(self.added) | set(self.present))]
        out += [f"{db}: {n:,} rows added" for db, n in sorted(self.rows_added.items())]
        out += [f"refused {name}: {why}" for name, why in self.refused]
        return out


@contextlib.contextmanager
def _staged(bundle: Path, root: Path) -> Iterator[Path]:
    """The bundle unpacked into a temporary folder inside ``root`` (same filesystem: entries move by rename)."""
    if not bundle.is_file():
        raise ParamsError(f"No bundle at {bundle}: make one with `radaudit cache export FILE.tar.gz`.")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".radaudit-import-", dir=root) as tmp:
        try:
            with tarfile.open(bundle, "r:*") as tar:
                # "data": no absolute paths, no "..", no links outside, no device files, no setuid bits
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError, EOFError) as err:
            raise DataFormatError(f"{bundle} is not a readable bundle ({err}); was it copied whole?") from err
        yield Path(tmp)


def _read_manifest(staged: Path, bundle: Path) -> dict[str, Any]:
    path = staged / BUNDLE_MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataFormatError(f"{bundle} has no readable {BUNDLE_MANIFEST}: it is not a radaudit cache bundle "
                              "(make one with `radaudit cache export`).") from err
    if manifest.get("format") != BUNDLE_FORMAT:
        raise DataFormatError(f"{bundle} is bundle format {manifest.get('format')!r}; this radaudit reads format "
                              f"{BUNDLE_FORMAT}. Export it again with this version.")
    return manifest


def _merge_sqlite(src: Path, dst: Path) -> int:
    """Add the rows of ``src`` that ``dst`` lacks (by key), in one transaction; the number added."""
    with ContentCache(dst.parent, name=dst.stem):  # creates the table (and WAL mode) as a run would
        pass
    con = sqlite3.connect(dst, timeout=60.0, isolation_level=None)
    try:
        con.execute("ATTACH DATABASE ? AS bundle", (str(src),))
        cols = [r[1] for r in con.execute("PRAGMA bundle.table_info(entries)")]
        if cols != ["key", "value", "parts", "created"]:
            raise DataFormatError(f"{src.name} in the bundle is not a radaudit cache (columns {cols}).")
        con.execute("BEGIN IMMEDIATE")
        before = int(con.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        con.execute("INSERT OR IGNORE INTO entries (key, value, parts, created) "
                    "SELECT key, value, parts, created FROM bundle.entries")
        after = int(con.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        con.execute("COMMIT")
        con.execute("DETACH DATABASE bundle")
        return after - before
    finally:
        con.close()


def import_bundle(bundle: str | os.PathLike[str], root: str | os.PathLike[str]) -> ImportReport:
    """Add the entries of ``bundle`` (:func:`export_bundle`) to the cache ``root``, never overwriting; see the
    module docstring. A model folder whose files do not match its file list is refused (reported, not added)."""
    bundle, root = Path(bundle), Path(root)
    report = ImportReport()
    with _staged(bundle, root) as staged:
        report.manifest = _read_manifest(staged, bundle)
        for kind, layout in KINDS.items():
            for entry in cache_entries(staged, kind):
                dest = root / kind / entry.name
                if layout == "folders":
                    if dest.exists():
                        report.present[kind] = report.present.get(kind, 0) + 1
                        continue
                    if not (entry / FILES_MANIFEST).is_file() or not listing_matches(entry):
                        report.refused.append((f"{kind}/{entry.name}", "its files do not match its file list"))
                        continue
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        os.replace(entry, dest)
                    except OSError:  # a run (or another import) finished the same folder meanwhile: keep it
                        if not (dest.is_dir() and any(dest.iterdir())):
                            raise
                        report.present[kind] = report.present.get(kind, 0) + 1
                        continue
                    report.added[kind] = report.added.get(kind, 0) + 1
                    continue
                new = 0
                for part in sorted(entry.iterdir()):  # finished parts only (a part being written is .part-*.tmp.npy)
                    if not (part.name.startswith("part-") and part.suffix == ".npy" and part.is_file()):
                        continue
                    target = dest / part.name
                    if not target.exists():
                        dest.mkdir(parents=True, exist_ok=True)
                        os.replace(part, target)
                        new += 1
                if new:
                    report.added[kind] = report.added.get(kind, 0) + 1
                else:
                    report.present[kind] = report.present.get(kind, 0) + 1
        for db in _sqlite_files(staged):
            report.rows_added[db.name] = _merge_sqlite(db, root / db.name)
    return report
