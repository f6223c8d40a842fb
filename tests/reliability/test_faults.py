"""Faults a lab meets in a year (issue 43), one table row each: what is done to the lab, what it must get.

| fault                                   | what the lab does                                                      |
|-----------------------------------------|------------------------------------------------------------------------|
| pages of a SQLite cache overwritten     | moved aside on open, a new cache, one warning naming the file          |
| a SQLite cache that is not a database   | the same                                                                |
| a SQLite cache cut short (a bad copy)   | the same                                                                |
| damage found mid-run                    | one error naming the file and `radaudit cache check --repair`          |
| a model folder's file changed           | `cache check` reports it; `--repair` removes it (retrained on use)     |
| an image part cut short                 | `cache check` reports it; `--repair` removes it (regenerated on use)   |
| a temporary file of an interrupted write| reported and removed by `--repair`; never read                          |
| disk full writing a table / figure      | one message naming the file; the old file intact; no temporary left     |
| no permission / read-only outputs       | one message naming the path and what to do                             |
| disk full inside the SQLite cache       | one message naming the cache; every committed entry still there         |
| a cache writer killed mid-write         | the survivor and the next reader see all it committed, nothing else    |
| a download killed or cut short          | never used under its real name; the next fetch completes it            |
| a downloaded file later damaged         | its SHA-256 differs, so it is fetched again                            |
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radaudit.files import OutputWriteError, atomic_write
from radaudit.models.cache import ContentCache, check_sqlite
from radaudit.models.cache_check import check_cache, check_npy
from radaudit.paths import atomic_dir, reusable_model_dir
from radaudit.tables import save_table

# ---------------------------------------------------------------------------------------- SQLite damage


def _filled_cache(root: Path, n: int = 2000) -> Path:
    with ContentCache(root, name="generations") as c:
        for i in range(n):
            c.put(f"k{i}", {"text": "word " * 40, "i": i})
    return root / "generations.sqlite"


def _overwrite_pages(p: Path) -> None:
    b = bytearray(p.read_bytes())
    rng = np.random.default_rng(0)
    for page in (5, 40, 80):
        b[4096 * page:4096 * (page + 1)] = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    p.write_bytes(bytes(b))


def _not_a_database(p: Path) -> None:
    p.write_bytes(b"this is a text file that someone saved over the cache\n" * 200)


def _cut_short(p: Path) -> None:
    b = p.read_bytes()
    p.write_bytes(b[: len(b) // 3 + 100])


@pytest.mark.parametrize("damage", [_overwrite_pages, _not_a_database, _cut_short],
                         ids=["pages-overwritten", "not-a-database", "cut-short"])
def test_a_damaged_sqlite_cache_is_moved_aside_and_a_new_one_started(tmp_path, caplog, damage):
    db = _filled_cache(tmp_path)
    for side in ("-wal", "-shm"):
        (tmp_path / f"generations.sqlite{side}").unlink(missing_ok=True)  # a closed cache: checkpointed
    damage(db)
    assert check_sqlite(db) != "ok"
    report = check_cache(tmp_path)
    assert [p.kind for p in report.problems] == ["sqlite"] and not report.clean  # reported before repair
    with caplog.at_level(logging.WARNING):
        c = ContentCache(tmp_path, name="generations")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(db) in warnings[0] and "recomputed" in warnings[0]
    assert c.repaired is not None and c.repaired.name.startswith("generations.sqlite.corrupt-")
    assert c.repaired.name in warnings[0] and c.repaired.exists()
    assert len(c) == 0 and c.get("k1") is None  # a new cache: entries are recomputed
    c.put("k1", {"i": 1})
    c.close()
    assert check_cache(tmp_path).clean  # clean after


def test_two_processes_opening_a_damaged_cache_repair_it_once(tmp_path):
    db = _filled_cache(tmp_path, 500)
    _not_a_database(db)
    code = ("import sys; from radaudit.models.cache import ContentCache; "
            "c = ContentCache(sys.argv[1], name='generations'); c.put(sys.argv[2], 1); c.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"p{i}"]) for i in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(list(tmp_path.glob("generations.sqlite.corrupt-*"))) == 1  # one move, not two
    with ContentCache(tmp_path, name="generations") as c:
        assert c.get("p0") == 1 and c.get("p1") == 1  # neither process moved the other's new cache aside


def test_damage_found_mid_run_names_the_file_and_the_repair(tmp_path):
    c = ContentCache(tmp_path, name="features")
    for i in range(2000):
        c.put(f"k{i}", {"v": "x" * 300})
    c.close()
    c = ContentCache(tmp_path, name="features")  # opened (and checked) before the damage
    c._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # noqa: SLF001 - the test reaches into the open handle
    c._conn.execute("PRAGMA cache_size=1")  # noqa: SLF001 - read pages from the file, not the open handle's cache
    db = tmp_path / "features.sqlite"
    b = bytearray(db.read_bytes())
    b[4096 * 2:] = np.random.default_rng(1).integers(0, 256, len(b) - 4096 * 2, dtype=np.uint8).tobytes()
    db.write_bytes(bytes(b))
    with pytest.raises(Exception, match=r"features\.sqlite is damaged .*radaudit cache check --repair"):
        for i in range(2000):
            c.get(f"k{i}")
    c.close()


# ---------------------------------------------------------------------------------------- other entries


def test_a_model_folder_whose_file_changed_is_reported_and_removed_by_repair(tmp_path):
    folder = tmp_path / "demo_models" / "vlm-abc"
    with atomic_dir(folder) as tmp:
        (tmp / "model.safetensors").write_bytes(b"weights" * 100)
        (tmp / "meta.json").write_text(json.dumps({"config_hash": "abc"}))
    assert check_cache(tmp_path).clean
    (folder / "model.safetensors").write_bytes(b"weights" * 99)  # truncated by a bad copy
    report = check_cache(tmp_path)
    assert [(p.kind, p.path.name) for p in report.problems] == [("model folder", "vlm-abc")]
    fixed = check_cache(tmp_path, repair=True)
    assert "removed" in fixed.problems[0].action and not folder.exists()
    assert not reusable_model_dir(folder, "meta.json", "abc")  # so the next run trains it again


def test_an_array_part_cut_short_is_reported_and_removed_by_repair(tmp_path):
    part = tmp_path / "synthetic" / "demo-abc" / "part-00000-8.npy"
    part.parent.mkdir(parents=True)
    np.save(part, np.zeros((8, 64, 64), np.float32))
    assert check_npy(part) == "ok"
    part.write_bytes(part.read_bytes()[:-1000])
    assert "cut short" in check_npy(part)
    assert [p.kind for p in check_cache(tmp_path).problems] == ["array part"]
    check_cache(tmp_path, repair=True)
    assert not part.exists() and check_cache(tmp_path).clean
    obj = tmp_path / "synthetic" / "x.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert "Python objects" in check_npy(obj)  # never loaded with pickle


def test_a_leftover_of_an_interrupted_write_is_reported_and_removed(tmp_path):
    left = tmp_path / "synthetic" / "demo-abc" / ".part-00000-8.1234.tmp.npy"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"half")
    report = check_cache(tmp_path)
    assert [p.kind for p in report.problems] == ["leftover"]
    check_cache(tmp_path, repair=True)
    assert not left.exists()


# ---------------------------------------------------------------------------------------- out of space


def _fail_with(code):
    def write_bytes(self, data):  # the write starts, then the disk says no: a half-written temporary file
        with open(self, "wb") as fh:
            fh.write(bytes(data)[:10])
        raise OSError(code, os.strerror(code))
    return write_bytes


@pytest.mark.parametrize("code, said", [(errno.ENOSPC, "the disk is full"), (errno.EACCES, "permission denied"),
                                        (errno.EROFS, "the file system is read-only"),
                                        (errno.EDQUOT, "the disk quota")])
def test_a_table_write_that_fails_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch, code, said):
    df = pd.DataFrame({"metric": ["bleu"], "auroc": [0.61]})
    save_table(df, tmp_path, "table1")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(Path, "write_bytes", _fail_with(code))
    with pytest.raises(OutputWriteError, match=rf"Cannot write .*table1\.csv: {said}.*To fix:") as err:
        save_table(pd.DataFrame({"metric": ["bleu"], "auroc": [0.99]}), tmp_path, "table1")
    assert err.value.errno == code
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing half-written, no temp file


def test_a_figure_write_that_fails_leaves_no_partial_file(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from radaudit.plots import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])

    def full(self, fname, *a, **k):
        Path(fname).write_text("half a png")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(type(fig), "savefig", full)
    with pytest.raises(OutputWriteError, match=r"fig1\.png: the disk is full"):
        save_figure(fig, tmp_path, "fig1")
    plt.close(fig)
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_outputs_folder_is_one_clear_message(tmp_path, monkeypatch):
    """A folder the user may not write to. As root (CI, containers) folder permissions do not apply, so the refusal
    is injected where the kernel gives it for a read-only folder: at the rename into place (the temporary file is
    written, then refused); without root the real folder mode is used too."""
    out = tmp_path / "outputs"
    out.mkdir()
    (out / "manifest.json").write_text('{"status": "running"}')

    def refuse(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied", str(dst))

    with monkeypatch.context() as m:
        m.setattr(os, "replace", refuse)
        with pytest.raises(OutputWriteError, match=r"manifest\.json: permission denied .*To fix: make the folder writable"):
            atomic_write(out / "manifest.json", "{}")
    assert [p.name for p in out.iterdir()] == ["manifest.json"]  # the temporary file is gone, the old one kept
    assert (out / "manifest.json").read_text() == '{"status": "running"}'
    if os.name == "posix" and os.geteuid() != 0:
        out.chmod(0o500)
        try:
            with pytest.raises(OutputWriteError, match="permission denied"):
                atomic_write(out / "other.json", "{}")
        finally:
            out.chmod(0o700)


def test_the_manifest_write_is_atomic_and_explains_a_read_only_disk(tmp_path, monkeypatch):
    from radaudit import manifest

    path = tmp_path / "manifest.json"
    manifest.write(path, {"status": "running"})
    monkeypatch.setattr(Path, "write_bytes", _fail_with(errno.EROFS))
    with pytest.raises(OutputWriteError, match=r"manifest\.json: the file system is read-only"):
        manifest.write(path, {"status": "succeeded"})
    monkeypatch.undo()
    assert manifest.read(path) == {"status": "running"} and [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_full_disk_inside_the_cache_names_it_and_keeps_every_committed_entry(tmp_path):
    c = ContentCache(tmp_path, name="generations")
    for i in range(20):
        c.put(f"k{i}", {"i": i})
    pages = c._conn.execute("PRAGMA page_count").fetchone()[0]  # noqa: SLF001 - simulate a full disk in SQLite
    c._conn.execute(f"PRAGMA max_page_count={pages + 1}")  # noqa: SLF001
    with pytest.raises(OutputWriteError, match=r"generations\.sqlite: the disk is full"):
        c.put("big", {"text": "x" * 200_000})
    c.close()
    with ContentCache(tmp_path, name="generations") as again:
        assert len(again) == 20 and again.get("k19") == {"i": 19} and again.get("big") is None


# ---------------------------------------------------------------------------------------- a writer killed


_WRITER = """
import sys, time
from radaudit.models.cache import ContentCache
root, who, log = sys.argv[1], sys.argv[2], sys.argv[3]
with ContentCache(root, name="generations") as c, open(log, "a") as fh:
    for i in range(100000):
        c.put(f"{who}-{i}", {"who": who, "i": i, "text": "x" * 2000})
        fh.write(f"{who}-{i}\\n"); fh.flush()
"""


def test_a_cache_writer_killed_mid_write_loses_nothing_it_committed_and_adds_nothing_else(tmp_path):
    logs = {w: tmp_path / f"{w}.log" for w in ("killed", "survivor")}
    procs = {w: subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "cache"), w, str(logs[w])])
             for w in logs}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not logs["killed"].exists() or len(logs["killed"].read_text()) < 2000):
        time.sleep(0.05)
    procs["killed"].send_signal(signal.SIGKILL)
    procs["killed"].wait(timeout=30)
    time.sleep(0.5)
    procs["survivor"].terminate()
    procs["survivor"].wait(timeout=30)
    assert check_sqlite(tmp_path / "cache" / "generations.sqlite") == "ok"
    with ContentCache(tmp_path / "cache", name="generations") as c:
        for who, log in logs.items():
            logged = log.read_text().split()
            assert logged, who
            got = c.get_many(logged)
            assert set(got) == set(logged), who  # every entry it reported committed is there and whole
            assert all(v["who"] == who and v["text"] == "x" * 2000 for v in got.values())
            # at most the one entry committed between the put and its log line is there beyond the log
            n_stored = c._conn.execute("SELECT COUNT(*) FROM entries WHERE key LIKE ?",  # noqa: SLF001
                                       (f"{who}-%",)).fetchone()[0]
            assert len(logged) <= n_stored <= len(logged) + 1


# ---------------------------------------------------------------------------------------- downloads


def _local_source(tmp_path, payload: bytes):
    import hashlib

    from radaudit.data.registry import Source

    src_file = tmp_path / "mirror" / "file.csv"
    src_file.parent.mkdir(parents=True)
    src_file.write_bytes(payload)
    return Source(url=src_file.as_uri(), dest="file.csv", sha256=hashlib.sha256(payload).hexdigest())


def test_a_killed_download_is_never_used_and_the_next_fetch_completes_it(tmp_path):
    from radaudit.data import fetch as F

    payload = b"study_id,report\n" + b"1,clear lungs\n" * 5000
    src = _local_source(tmp_path, payload)
    folder = tmp_path / "data"
    folder.mkdir()
    stale = folder / ".file.csv.abc123.part"
    stale.write_bytes(payload[:1000])  # what a SIGKILL mid-download leaves
    os.utime(stale, (time.time() - F.STALE_PART_S - 60,) * 2)
    got, failed = F._run_phase([src], folder, None, False, False, "t", False)  # noqa: SLF001
    assert got == [folder / "file.csv"] and not failed
    assert (folder / "file.csv").read_bytes() == payload
    assert not list(folder.glob(".file.csv.*.part"))  # the stale part is cleared, not reused


def test_a_download_cut_short_or_damaged_is_fetched_again(tmp_path):
    from radaudit.data import fetch as F
    from radaudit.errors import DataFormatError

    payload = b"a,b\n" + b"1,2\n" * 1000
    src = _local_source(tmp_path, payload)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "file.csv").write_bytes(payload[:-50])  # an earlier copy, cut short under its real name
    got, _ = F._run_phase([src], folder, None, False, False, "t", False)  # noqa: SLF001
    assert got == [folder / "file.csv"] and (folder / "file.csv").read_bytes() == payload
    (tmp_path / "mirror" / "file.csv").write_bytes(payload.replace(b"1,2", b"9,9"))  # the source serves other bytes
    (folder / "file.csv").unlink()
    with pytest.raises(DataFormatError, match="Checksum mismatch"):
        F._run_phase([src], folder, None, False, False, "t", False)  # noqa: SLF001
    assert list(folder.iterdir()) == []  # nothing kept under the real name, no temporary file


# ---------------------------------------------------------------------------------------- a run killed


def test_a_run_whose_process_died_is_listed_interrupted_in_the_index(tmp_path):
    """SIGKILL leaves a manifest that says ``running``; its process is gone, so ``index.html`` (and ``radaudit runs``,
    tests/test_runs.py, which also kills a real run) lists it ``interrupted`` with its last completed cell."""
    import socket

    from radaudit import manifest
    from radaudit.report import render_index

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    run = tmp_path / "decoding_erasure" / "20260101-000000_demo"
    run.mkdir(parents=True)
    manifest.write(run / "manifest.json", {
        "experiment": "decoding_erasure", "preset": "demo", "status": "running", "started": "2026-01-01T00:00:00+00:00",
        "pid": dead.pid, "host": socket.gethostname(), "heartbeat": manifest.utcnow(),
        "last_cell": {"index": 7, "heading": "3. Generations"}})
    assert manifest.observed_status(manifest.read(run / "manifest.json"))[0] == "interrupted"
    page = render_index(tmp_path).read_text()
    assert "interrupted" in page and "running" not in page.split("<tbody>")[1]
