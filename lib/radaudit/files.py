"""Writing output files safely: whole or not at all, and one clear message when the disk says no.

Every table, figure, findings file, manifest and report of a run is written through
:func:`atomic_write` / :func:`atomic_path`: the bytes go to a temporary file beside the target
(``.<name>.<pid>.<n>.tmp``), which is then renamed over it (``os.replace``, atomic on POSIX and
Windows). A reader sees the old file or the new one, never half of one; a crash or a full disk
leaves the old file (or none) and removes the temporary one.

An ``OSError`` on the way (no space, no permission, a read-only file system, a quota) becomes an
:class:`OutputWriteError` that names the path, says what happened in words and what to do:
:func:`explain_oserror`. The run's cache is not touched by a failed output write, so the rerun
after freeing space recomputes nothing that was cached.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from radaudit.errors import RadauditError

__all__ = ["OutputWriteError", "atomic_path", "atomic_write", "ensure_dir", "explain_oserror"]

_COUNTER = itertools.count()

#: errno -> (what happened, what to do)
_ADVICE: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the disk is full", "free some space (or write elsewhere: --out, $RADAUDIT_CACHE) and rerun; "
                                       "what is cached is kept and not recomputed"),
    errno.EDQUOT: ("the disk quota is used up", "free some space in your quota (or write elsewhere: --out, "
                                                "$RADAUDIT_CACHE) and rerun"),
    errno.EACCES: ("permission denied", "make the folder writable for you, or write elsewhere (--out, "
                                        "$RADAUDIT_CACHE)"),
    errno.EPERM: ("the operation is not permitted", "make the folder writable for you, or write elsewhere (--out, "
                                                    "$RADAUDIT_CACHE)"),
    errno.EROFS: ("the file system is read-only", "write elsewhere (--out for runs, $RADAUDIT_CACHE for the cache)"),
}


class OutputWriteError(RadauditError, OSError):
    """A file could not be written (the message names it, says why and what to do); nothing half-written is left."""


def explain_oserror(err: OSError, path: str | os.PathLike[str], what: str = "write") -> OutputWriteError:
    """One clear :class:`OutputWriteError` for ``err`` raised while ``what``-ing ``path``."""
    said, todo = _ADVICE.get(err.errno or -1, (err.strerror or str(err), "check the folder and rerun"))
    out = OutputWriteError(f"Cannot {what} {path}: {said} ({err.strerror or err}). To fix: {todo}.")
    out.errno = err.errno
    return out


def _temp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{next(_COUNTER)}.tmp")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to (e.g. ``fig.savefig(tmp, format="png")``); on success it
    replaces ``path``, on any error it is removed and an ``OSError`` becomes an :class:`OutputWriteError`."""
    path = Path(path)
    tmp = _temp_for(path)
    try:
        try:
            yield tmp
            os.replace(tmp, path)
        except OutputWriteError:
            raise
        except OSError as err:
            raise explain_oserror(err, path) from err
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def atomic_write(path: str | os.PathLike[str], data: bytes | str, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` whole or not at all (module docstring). Returns ``path``."""
    payload = data.encode(encoding) if isinstance(data, str) else data
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
    return path


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p path``, with an ``OSError`` made an :class:`OutputWriteError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise explain_oserror(err, path, "create the folder") from err
    return path
