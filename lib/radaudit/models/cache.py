"""A content-addressed cache for expensive model outputs (generations first; any JSON value fits).

**Key.** ``sha256`` of the canonical JSON (sorted keys, no whitespace) of everything that determines
the output, plus a schema version. For a generation (:func:`generation_key`): the model spec and
its resolved revision (hub commit, ``dist==version`` for ``pypi:``, a content fingerprint for a
local folder), the backend, the dtype, the prompt *as fed to the model* (after the chat template,
so a changed template misses), an optional image hash, the strategy's knobs (every field but its
``name``/``label``, so renaming a strategy does not invalidate it), the seed and ``max_new_tokens``.
For deterministic strategies (greedy, beam) the seed is recorded as ``None``: their output does not
depend on it, so sweeping seeds reuses them. The device and library versions are not in the key
(a GPU and a CPU run of the same params share entries; delete the cache to force regeneration).

**Storage.** One SQLite database per cache name (``<root>/<name>.sqlite``) in WAL mode. Each value is
committed as soon as it is produced, in its own transaction, so a run killed at any point leaves
every finished value readable and nothing half-written (SQLite's journal rolls back an unfinished
write); the rerun generates only what is missing. Several processes may share a cache (SQLite
locks; writers wait up to 60 s). On a filesystem without shared-memory support for WAL (some
network mounts) it falls back to SQLite's rollback journal.

**Location.** ``cache=`` param, else ``$RADAUDIT_CACHE``, else ``<project>/.cache/radaudit``
(git-ignored), else ``~/.cache/radaudit`` outside a project.

**Stats.** :meth:`ContentCache.stats` gives hits, misses, writes and the number of entries, for the
run manifest (``run.record("generation_cache", cache.stats())``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from radaudit.errors import ParamsError, RadauditError

CACHE_ENV = "RADAUDIT_CACHE"
KEY_SCHEMA = "radaudit-cache-v1"


def default_cache_dir() -> Path:
    """``$RADAUDIT_CACHE``, else ``<project>/.cache/radaudit``, else ``~/.cache/radaudit``."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env).expanduser().resolve()
    try:
        from radaudit.paths import project_root

        return project_root() / ".cache" / "radaudit"
    except RadauditError:
        return Path.home() / ".cache" / "radaudit"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_key(parts: Mapping[str, Any]) -> str:
    """The hex sha256 of ``parts`` (JSON-serialisable) in canonical form, with the key schema version."""
    return hashlib.sha256(_canonical({"schema": KEY_SCHEMA, **parts}).encode("utf-8")).hexdigest()


def generation_key_parts(*, model: str, revision: str | None, prompt: str, strategy: Any, seed: int | None,
                         max_new_tokens: int, backend: str, dtype: str | None = None,
                         image_hash: str | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parts a generation's key is made of (stored beside the value, for auditing the cache).

    ``strategy`` is a :class:`~radaudit.models.decoding.DecodingStrategy` (its knobs are used) or a
    mapping of knobs. ``seed`` is dropped (``None``) for deterministic strategies.
    """
    knobs = strategy.knobs() if hasattr(strategy, "knobs") else dict(strategy)
    knobs.pop("max_new_tokens", None)  # the effective value is its own part
    deterministic = not knobs.get("do_sample", False)
    return {
        "kind": "generation",
        "model": str(model),
        "revision": revision,
        "backend": backend,
        "dtype": dtype,
        "prompt": prompt,
        "image_hash": image_hash,
        "strategy": knobs,
        "seed": None if deterministic else (None if seed is None else int(seed)),
        "max_new_tokens": int(max_new_tokens),
        **({"extra": dict(extra)} if extra else {}),
    }


def generation_key(**parts: Any) -> str:
    """:func:`content_key` of :func:`generation_key_parts` (same keyword arguments)."""
    return content_key(generation_key_parts(**parts))


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes (e.g. an image's hash for a VLM generation key)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class ContentCache:
    """A key → JSON value store in ``<root>/<name>.sqlite`` (see the module docstring).

    ``ContentCache(root)`` with ``root=None`` uses :func:`default_cache_dir`. Use as a context manager
    or call :meth:`close`. Counters (hits, misses, writes) are per instance.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, name: str = "generations") -> None:
        if not name.replace("-", "_").isidentifier():
            raise ParamsError(f"Cache name {name!r} must be a simple identifier (letters, digits, _ or -).")
        self.root = Path(root).expanduser().resolve() if root is not None else default_cache_dir()
        self.name = name
        self.path = self.root / f"{name}.sqlite"
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._lock = threading.Lock()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:  # e.g. a network filesystem: keep the rollback journal
                pass
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
                               "parts TEXT, created REAL NOT NULL)")
        except (OSError, sqlite3.Error) as err:
            raise RadauditError(f"Cannot open the cache {self.path} ({err}). Point ${CACHE_ENV} (or the cache param) "
                                "at a writable folder.") from err

    # -- reading --------------------------------------------------------------------------------

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or ``None`` (counted as a hit or a miss)."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: value}`` for the keys present (each distinct key counted once as a hit or a miss)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i:i + 500]
                q = f"SELECT key, value FROM entries WHERE key IN ({','.join('?' * len(chunk))})"
                found.update({k: json.loads(v) for k, v in self._conn.execute(q, chunk)})
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def parts(self, key: str) -> dict[str, Any] | None:
        """The key parts stored with ``key`` (what the value was computed from), if any."""
        with self._lock:
            row = self._conn.execute("SELECT parts FROM entries WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM entries WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    # -- writing --------------------------------------------------------------------------------

    def put(self, key: str, value: Any, parts: Mapping[str, Any] | None = None) -> None:
        """Store ``value`` (JSON-serialisable) under ``key`` and commit it now."""
        payload = json.dumps(value, ensure_ascii=False, default=str)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO entries (key, value, parts, created) VALUES (?, ?, ?, ?)",
                               (key, payload, _canonical(parts) if parts is not None else None, time.time()))
        self.writes += 1

    def delete(self, key: str) -> bool:
        with self._lock:
            cur = self._conn.execute("DELETE FROM entries WHERE key = ?", (key,))
        return cur.rowcount > 0

    # -- bookkeeping ----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """``{"path", "hits", "misses", "writes", "entries"}`` for the run manifest."""
        return {"path": str(self.path), "hits": self.hits, "misses": self.misses, "writes": self.writes,
                "entries": len(self)}

    def reset_stats(self) -> None:
        self.hits = self.misses = self.writes = 0

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> ContentCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ContentCache({str(self.root)!r}, name={self.name!r})"


#: The generation cache is a :class:`ContentCache` named ``"generations"``.
GenerationCache = ContentCache


def open_cache(cache: ContentCache | str | os.PathLike[str] | bool | None, *, name: str = "generations") -> ContentCache | None:
    """Turn a ``cache`` param into a cache: ``None``/``False`` → no cache; ``True``/``"default"`` →
    :func:`default_cache_dir`; a path → that folder; a :class:`ContentCache` → itself."""
    if cache is None or cache is False:
        return None
    if isinstance(cache, ContentCache):
        return cache
    if cache is True or (isinstance(cache, str) and cache.strip().lower() in {"default", "auto"}):
        return ContentCache(None, name=name)
    if isinstance(cache, (str, os.PathLike)):
        return ContentCache(cache, name=name)
    raise ParamsError(f"cache must be a folder, true (the default folder, ${CACHE_ENV} or <project>/.cache/radaudit), "
                      f"false/None (no cache) or a ContentCache; got {cache!r}.")
