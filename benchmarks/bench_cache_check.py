"""What the integrity check costs when a cache is opened (issue 43, item 1).

The first opening of a :class:`radaudit.models.cache.ContentCache` file in a process runs SQLite's
``PRAGMA quick_check`` before the first read (later openings in that process skip it). The reference, timed in the same process and interleaved, is the same open without the check
(the connection, WAL mode and table, then one lookup); the ratio is checked open / plain open, at cache
sizes like the lab's (a demo's generations: ~2k entries; a paper run's: ~50k):

    .venv/bin/python benchmarks/bench_cache_check.py [--sizes 1000 10000 50000] [--repeats 5]

Writes ``benchmarks/results/cache_check.json`` (``ratio``: the largest size's; per size the two times,
the file size and the absolute extra milliseconds, which is what a run pays once per cache it opens).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from _results import record  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _timing import best_of  # noqa: E402

from radaudit.models.cache import ContentCache, forget_checks


def _plain_open(path: Path) -> None:
    conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, parts TEXT, "
                 "created REAL NOT NULL)")
    conn.execute("SELECT value FROM entries WHERE key = ?", ("k1",)).fetchone()
    conn.close()


def _checked_open(root: Path) -> None:
    forget_checks()  # the first opening in a process is the one that checks
    with ContentCache(root, name="bench") as c:
        c.get("k1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.sizes:
            root = Path(tmp) / f"n{n}"
            with ContentCache(root, name="bench") as c:
                for i in range(n):
                    c.put(f"k{i}", {"text": "The heart size is normal. No pleural effusion. " * 6, "i": i})
            path = root / "bench.sqlite"
            plain = best_of(lambda: _plain_open(path), a.repeats)
            checked = best_of(lambda: _checked_open(root), a.repeats)
            rows.append({"entries": n, "mb": round(path.stat().st_size / 2**20, 2), "plain_s": plain,
                         "checked_s": checked, "ratio": checked / plain, "extra_ms": 1000 * (checked - plain)})
            print(f"{n:>7} entries, {rows[-1]['mb']:6.1f} MB: open {1000 * plain:6.2f} ms, checked "
                  f"{1000 * checked:6.2f} ms  ({checked / plain:.1f}x, +{rows[-1]['extra_ms']:.1f} ms once per run)")
    last = rows[-1]
    record("cache_check", seconds=last["checked_s"], n=last["entries"], unit="entries", ratio=last["ratio"],
           sizes=rows)


if __name__ == "__main__":
    main()
