"""Where the project's folders are: notebooks/, params/ and outputs/.

The project root is, in order: the ``RADAUDIT_PROJECT`` environment variable; the nearest folder
at or above the working directory that has both ``notebooks/`` and ``params/``; the repository this
package was installed from in editable mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from radaudit.errors import RadauditError
from radaudit.names import check_component  # noqa: F401  (re-exported: run names are paths)

PROJECT_ENV = "RADAUDIT_PROJECT"


def safe_name(text: str, max_len: int = 60) -> str:
    """``text`` as a file-name part: every run of characters other than letters, digits and ``_.=-``
    becomes one ``-`` (``"demo diffusion"`` → ``"demo-diffusion"``), cut at ``max_len``."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", str(text))[:max_len]


def file_sha256(path: str | os.PathLike[str], error: type[Exception] = RadauditError) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB chunks; an unreadable file raises ``error`` with a
    message that names it (content fingerprints of images for model and cache keys)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        raise error(f"Cannot read {str(path)!r} ({err}); check the data root.") from err
    return h.hexdigest()


def _is_project(p: Path) -> bool:
    return (p / "notebooks").is_dir() and (p / "params").is_dir()


def project_root() -> Path:
    if os.environ.get(PROJECT_ENV):
        p = Path(os.environ[PROJECT_ENV]).expanduser().resolve()
        if not _is_project(p):
            raise RadauditError(f"{PROJECT_ENV}={p} has no notebooks/ and params/ folders.")
        return p
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if _is_project(p):
            return p
    repo = Path(__file__).resolve().parents[2]
    if _is_project(repo):
        return repo
    raise RadauditError(
        "Cannot find the radaudit project folder (one with notebooks/ and params/). "
        f"Run from inside a clone of the repository or set {PROJECT_ENV}."
    )


def notebooks_dir() -> Path:
    return project_root() / "notebooks"


def params_dir() -> Path:
    return project_root() / "params"


def outputs_dir() -> Path:
    return project_root() / "outputs"


FILES_MANIFEST = ".radaudit_files.json"


def _file_listing(folder: Path) -> dict[str, dict[str, object]]:
    return {str(p.relative_to(folder)): {"size": p.stat().st_size, "sha256": file_sha256(p)}
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != FILES_MANIFEST}


def listing_matches(folder: str | os.PathLike[str]) -> bool:
    """Whether every file of ``folder`` has the size and SHA-256 its ``.radaudit_files.json`` records (written by
    :func:`atomic_dir`), with no file missing or added; False when the list is absent or unreadable."""
    import json

    folder = Path(folder)
    try:
        recorded = json.loads((folder / FILES_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return _file_listing(folder) == recorded


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Write a folder all at once: yields a fresh temporary folder beside ``out``; when the block ends
    without error it records every file's size and SHA-256 in ``.radaudit_files.json`` (checked by
    :func:`reusable_model_dir`) and renames the folder to ``out``; on error it is deleted, so a crashed
    training run never leaves a half-written model folder behind.

    ``out`` must be absent or empty. If another process finished the same folder first (two runs
    training one content-addressed model at once), this one's copy is discarded and theirs kept."""
    import json
    import logging

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        (tmp / FILES_MANIFEST).write_text(json.dumps(_file_listing(tmp), indent=1), encoding="utf-8")
        try:
            if out.exists():
                out.rmdir()  # empty, or this raises: never overwrite a folder with content
            os.replace(tmp, out)
        except OSError:
            if not (out.is_dir() and any(out.iterdir())):
                raise
            logging.getLogger(__name__).warning("%s was completed by another run meanwhile; keeping that one.", out)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def reusable_model_dir(folder: str | os.PathLike[str], meta_file: str, digest: str, *, required: tuple[str, ...] = (),
                       required_globs: tuple[str, ...] = (), key: str = "config_hash") -> bool:
    """Whether ``folder`` holds a finished, reusable demo model for ``digest``.

    True when ``<folder>/<meta_file>`` records ``key == digest``, every ``required`` file and at least
    one match of each ``required_globs`` pattern exist, and training was **not** cut short: a model
    whose metadata says ``stopped_early`` (a time guard ended it) depends on the machine's speed, not
    only on data, settings and seed, so it is never reused as the planned model. Such a folder is
    removed (with a warning) so that the retraining that follows can write the folder again.
    """
    import json
    import logging

    folder = Path(folder)
    meta = folder / meta_file
    if not meta.is_file() or not all((folder / f).is_file() for f in required):
        return False
    if not all(any(folder.glob(g)) for g in required_globs):
        return False
    try:
        info = json.loads(meta.read_text())
    except (OSError, ValueError):
        return False
    if info.get(key) != digest:
        return False
    if info.get("stopped_early"):
        logging.getLogger(__name__).warning(
            "The model in %s stopped before its planned steps (%s); it is removed and trained again.", folder,
            info.get("stop_reason") or "time guard")
        shutil.rmtree(folder, ignore_errors=True)
        return False
    # the file list is written by atomic_dir (older folders have none): a truncated or corrupted file is found here
    if (folder / FILES_MANIFEST).is_file() and not listing_matches(folder):
        logging.getLogger(__name__).warning(
            "The model in %s does not match its file list (a file is missing, truncated or changed); it is "
            "removed and trained again.", folder)
        shutil.rmtree(folder, ignore_errors=True)
        return False
    return True


def machine_paths(params: dict | None = None) -> dict[str, str]:
    """Folders of this machine that a report or a table may mention, and the words that stand for them: the data root
    and cache folder (from ``params`` or the environment) as ``$RADAUDIT_DATA`` / ``$RADAUDIT_CACHE``, the project
    folder as ``<project>``, the home folder as ``~`` (issue 42: a report shows no path of the machine that made it,
    and the same run in another folder writes the same tables)."""
    params = params or {}
    found: dict[str, str] = {}
    for key, word in (("data_root", "$RADAUDIT_DATA"), ("cache_dir", "$RADAUDIT_CACHE")):
        if isinstance(params.get(key), str) and params[key].startswith("/"):
            found[params[key].rstrip("/")] = word
    for env, word in (("RADAUDIT_DATA", "$RADAUDIT_DATA"), ("RADAUDIT_CACHE", "$RADAUDIT_CACHE")):
        if os.environ.get(env, "").startswith("/"):
            found[os.environ[env].rstrip("/")] = word
    try:
        found[str(project_root())] = "<project>"
    except RadauditError:
        pass
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        found[home] = "~"
    return found


def scrub_paths(text: str, paths: dict[str, str]) -> str:
    """``text`` with every absolute folder of ``paths`` replaced by its word (longest first, so a run folder
    inside the project reads ``<this run>``, not ``<project>/outputs/...``): a report shows no path of the
    machine that made it."""
    for p in sorted(paths, key=len, reverse=True):
        if len(p) > 1:
            text = text.replace(p, paths[p])
    return text
