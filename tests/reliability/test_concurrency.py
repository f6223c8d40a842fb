"""Two runs of one experiment started at once both succeed into separate run folders, and `latest`
points at a complete run (issue 24, item 5). The generation cache is SQLite in WAL mode: concurrent
writers wait for each other's transaction and a reader never sees a partial value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from radaudit.models.cache import ContentCache


@pytest.mark.long
def test_two_runs_at_once(shared_data, tmp_path):
    env = {**os.environ, "RADAUDIT_DATA": str(shared_data)}
    cmd = [sys.executable, "-m", "radaudit", "run", "data_overview", "--preset", "smoke", "--out", str(tmp_path),
           "--no-progress"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    runs = sorted(d for d in (tmp_path / "data_overview").iterdir() if d.is_dir() and not d.is_symlink())
    assert len(runs) == 2
    for d in runs:
        assert json.loads((d / "manifest.json").read_text())["status"] == "succeeded"
    latest = (tmp_path / "data_overview" / "latest").resolve()
    assert latest in [r.resolve() for r in runs]
    assert json.loads((latest / "manifest.json").read_text())["status"] == "succeeded"
    tables = [sorted(p.name for p in (d / "tables").iterdir()) for d in runs]
    assert tables[0] == tables[1] and tables[0]


def test_concurrent_cache_writers_lose_nothing(tmp_path):
    def writer(k):
        with ContentCache(tmp_path) as c:
            for i in range(50):
                c.put(f"{k}-{i}", {"text": "x" * 1000, "i": i})

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ContentCache(tmp_path) as c:
        assert len(c) == 200
        assert all(c.get(f"{k}-{i}")["i"] == i for k in range(4) for i in range(50))
