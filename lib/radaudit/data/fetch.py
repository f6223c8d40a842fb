"""``radaudit data fetch``: download a public dataset's files from their canonical sources.

Each public :class:`~radaudit.data.registry.DatasetSpec` lists its files as
:class:`~radaudit.data.registry.Source` entries: the URL of the file at a fixed commit
(``https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>``) or on its publisher's site,
the destination inside the dataset folder, and, for files the lab's shared copy holds unchanged,
their sha256. :func:`fetch` downloads them into ``<data root>/<dataset folder>``:

- each file is written to a temporary file next to its destination and renamed into place only
  after its size and sha256 check out, so an interrupted or corrupted download never leaves a
  partial or wrong file under its real name;
- a file already present with the right hash (or, when no hash is known, already present) is
  skipped unless ``force=True``; a present file with a wrong hash is downloaded again;
- ``mirror="file:///some/dir"`` or ``mirror="https://proxy.example/cache"`` (a plain local path works
  too) rewrites every ``https://<host>/<path>`` URL to ``<mirror>/<host>/<path>``: a mirror is a
  directory tree laid out like the URLs. Tests use it with a local tree; users behind a proxy can
  point it at their own copy.
- files made by the lab itself (``*_DERIVED*``, ``images_manifest.csv``) are never fetched: the
  loaders compute what they need.

``covid_cxr`` has a second phase: after ``metadata.csv`` arrives, the X-ray images it lists
(``modality == "X-ray"`` and ``folder == "images"``) are fetched from ``images/<filename>`` of the
same repository and commit, with their upstream names and bytes (the lab's shared copy re-encoded
most of them to small grayscale JPEGs, so no hash is checked for images). ``limit=`` caps how many
(tests). Images the snapshot does not have are reported in the log and skipped.

Credentialed and gated datasets cannot be fetched: :func:`fetch` raises
:class:`~radaudit.errors.DatasetNotFoundError` with the dataset's "how to get it" text.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from radaudit import __version__
from radaudit.data.io import read_csv_checked
from radaudit.data.registry import COVID_CXR_REPO, DATASETS, DatasetSpec, Source, get_spec, github_file
from radaudit.data.root import resolve_data_root
from radaudit.errors import DataFormatError, DatasetNotFoundError, ParamsError

logger = logging.getLogger(__name__)

__all__ = ["fetch", "fetchable", "rewrite_url", "sources_for", "FetchError"]

CHUNK = 1 << 16
TIMEOUT_S = 60

#: upstream of the covid-chestxray-dataset snapshot the lab's copy was taken from (see its SOURCE.md)


class FetchError(DatasetNotFoundError):
    """A download failed (network, HTTP error, missing file on the server or mirror)."""


def fetchable() -> list[str]:
    """Names of the datasets :func:`fetch` can download (public, with sources)."""
    return [n for n, s in DATASETS.items() if s.access == "public" and s.sources]


def rewrite_url(url: str, mirror: str | os.PathLike | None) -> str:
    """``https://host/a/b`` -> ``<mirror>/host/a/b``; ``url`` unchanged when ``mirror`` is ``None``.

    ``mirror`` is a URL (``file://``, ``http(s)://``) or a local directory path.
    """
    if mirror in (None, ""):
        return url
    mirror = str(mirror)
    if "://" not in mirror:
        mirror = Path(os.path.expanduser(mirror)).resolve().as_uri()
    parts = urllib.parse.urlsplit(url)
    out = mirror.rstrip("/") + "/" + parts.netloc + parts.path
    return out + ("?" + parts.query if parts.query else "")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_current(dest: Path, src: Source) -> bool:
    if not dest.is_file():
        return False
    if src.sha256 is None:
        return dest.stat().st_size > 0
    return _sha256(dest) == src.sha256


#: A temporary ``.part`` file older than this is a download that was killed (a live one is written to every
#: few milliseconds), removed before the file is fetched again.
STALE_PART_S = 600.0


def _clear_stale_parts(dest: Path) -> None:
    """Remove ``.<name>.*.part`` files of ``dest`` left by a killed download (never reused: the fetch restarts)."""
    now = time.time()
    for part in dest.parent.glob(f".{dest.name}.*.part"):
        try:
            if now - part.stat().st_mtime > STALE_PART_S:
                part.unlink()
                logger.info("fetch: removed %s, left by an interrupted download", part.name)
        except OSError:
            pass


def _download(url: str, dest: Path, sha256: str | None, canonical: str | None = None) -> None:
    """Stream ``url`` to a temporary file beside ``dest``, check it, then rename it into place.

    ``canonical`` is the un-mirrored URL, named in error messages when ``url`` is a mirror's."""
    what = f"{url} (mirror of {canonical})" if canonical and canonical != url else url
    dest.parent.mkdir(parents=True, exist_ok=True)
    _clear_stale_parts(dest)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        req = urllib.request.Request(url, headers={"User-Agent": f"radaudit/{__version__} (data fetch)"})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp, os.fdopen(fd, "wb") as out:
                fd = -1
                expected_len = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
                n = 0
                for chunk in iter(lambda: resp.read(CHUNK), b""):
                    out.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
        except urllib.error.HTTPError as e:
            raise FetchError(f"Could not download {what}: HTTP {e.code} {e.reason}.") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise FetchError(
                f"Could not download {what}: {reason}. Check the network/proxy, or pass --mirror "
                "(a local tree or URL laid out as <mirror>/<host>/<path>)."
            ) from e
        if expected_len is not None and str(expected_len).isdigit() and int(expected_len) != n:
            raise FetchError(f"Download of {what} was cut short: got {n} of {expected_len} bytes. Run the fetch again.")
        got = h.hexdigest()
        if sha256 is not None and got != sha256:
            raise DataFormatError(
                f"Checksum mismatch for {dest.name} downloaded from {what}: expected sha256 {sha256}, got {got}. "
                "The file was not kept. The source (or mirror) serves different bytes than the pinned version; "
                "check the mirror, or report it if the canonical source changed."
            )
        os.replace(tmp, dest)
    finally:
        if fd != -1:
            os.close(fd)
        if tmp.exists():
            tmp.unlink()


def _covid_images(spec: DatasetSpec, folder: Path, limit: int | None) -> list[Source]:
    """Phase 2 of ``covid_cxr``: the X-ray images listed in the downloaded ``metadata.csv``."""
    meta = folder / "metadata.csv"
    if not meta.is_file():
        return []
    df = read_csv_checked(meta, ("modality", "folder", "filename"), dataset="covid_cxr", what="metadata",
                          doc="the repository's SCHEMA.md", dtype=str, keep_default_na=False)
    xray = df[(df["modality"] == "X-ray") & (df["folder"] == "images") & (df["filename"].str.strip() != "")]
    names = list(dict.fromkeys(xray["filename"].str.strip()))
    if limit is not None:
        names = names[: max(0, int(limit))]
    return [github_file(COVID_CXR_REPO, "images/" + urllib.parse.quote(n), dest=f"images/{n}") for n in names]


#: second-phase source lists computed from files of the first phase, per dataset
EXPANDERS: dict[str, Callable[[DatasetSpec, Path, int | None], list[Source]]] = {
    "covid_cxr": _covid_images,
}


def sources_for(name: str) -> tuple[Source, ...]:
    """The first-phase sources of dataset ``name`` (raises for credentialed/gated/unfetchable ones)."""
    spec = get_spec(name)
    if spec.access != "public":
        raise DatasetNotFoundError(
            f"Dataset {name!r} ({spec.title}) is {spec.access} and cannot be downloaded by radaudit; get it by hand. "
            f"It comes from {spec.homepage}. {spec.how_to_get}"
        )
    if not spec.sources:
        raise ParamsError(f"Dataset {name!r} has no download sources. Fetchable datasets: {', '.join(fetchable())}.")
    return spec.sources


def _run_phase(sources: list[Source] | tuple[Source, ...], folder: Path, mirror, force: bool, progress: bool,
               desc: str, tolerate_missing: bool) -> tuple[list[Path], list[str]]:
    downloaded: list[Path] = []
    failed: list[str] = []
    bar = tqdm(sources, desc=desc, unit="file", disable=not progress, leave=False)
    for src in bar:
        dest = folder / src.dest
        if not force and _is_current(dest, src):
            continue
        if dest.is_file() and not force:
            logger.warning("fetch: %s exists with a different sha256; downloading it again", dest)
        url = rewrite_url(src.url, mirror)
        try:
            _download(url, dest, src.sha256, canonical=src.url)
        except FetchError as e:
            if not tolerate_missing:
                raise
            failed.append(src.dest)
            logger.warning("fetch: skipped %s (%s)", src.dest, e)
            continue
        downloaded.append(dest)
    bar.close()
    return downloaded, failed


def fetch(
    name: str,
    data_root: str | os.PathLike | None = None,
    *,
    mirror: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool = True,
    limit: int | None = None,
) -> list[Path]:
    """Download public dataset ``name`` into ``<data_root>/<its folder>``; return the files written.

    Files already present and verified are skipped (and not returned) unless ``force``; so a second
    call returns ``[]``. ``mirror`` rewrites ``https://host/path`` to ``<mirror>/host/path``.
    ``limit`` caps second-phase files (``covid_cxr`` images). ``data_root`` follows
    :func:`radaudit.data.root.resolve_data_root` and is created if missing.

    Raises :class:`DatasetNotFoundError` for credentialed/gated datasets (with how to get them),
    :class:`FetchError` when a file cannot be downloaded, and :class:`DataFormatError` when a
    download's sha256 differs from the pinned one (nothing is kept in that case).
    """
    spec = get_spec(name)
    sources = sources_for(name)
    root = resolve_data_root(data_root, must_exist=False)
    folder = root / spec.folder
    folder.mkdir(parents=True, exist_ok=True)

    downloaded, _ = _run_phase(sources, folder, mirror, force, progress, f"{name}", tolerate_missing=False)
    expander = EXPANDERS.get(name)
    if expander is not None:
        extra = expander(spec, folder, limit)
        more, failed = _run_phase(extra, folder, mirror, force, progress, f"{name} (images)", tolerate_missing=True)
        downloaded += more
        if failed:
            logger.warning("fetch %s: %d of %d second-phase files could not be downloaded (first: %s)",
                           name, len(failed), len(extra), failed[0])
    logger.info("fetch %s: %d file(s) downloaded into %s", name, len(downloaded), folder)
    return downloaded
