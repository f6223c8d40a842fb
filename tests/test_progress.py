"""Progress lines of long loops and their levels in run.log (radaudit.progress, radaudit.run; issue 22)."""

from __future__ import annotations

import logging

from radaudit import progress
from radaudit.progress import eta_line, track
from radaudit.run import _KernelLogLevels


def test_eta_line_hand_computed():
    # 12 of 40 batches in 6 s: 2 batches/s, 28 left -> 14 s
    assert eta_line("generate greedy", 12, 40, 6.0, "batches") == (
        "generate greedy: 12/40 batches (30%), 2 batches/s, ETA 0:14")
    assert eta_line("train", 400, 400, 125.0, "steps") == "train: 400/400 steps (100%), 3.2 steps/s, done in 2:05"
    assert eta_line("slow", 1, 10, 20.0) == "slow: 1/10 it (10%), 20 s/it, ETA 3:00"  # slower than 0.1/s: s per item
    assert eta_line("stream", 5, None, 1.0) == "stream: 5 it, 5 it/s"
    assert eta_line("start", 0, 10, 0.0) == "start: 0/10 it (0%)"


def test_track_yields_everything_and_logs_start_and_end(caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="radaudit.progress")
    clock = iter([0.0, 1.0, 2.0, 13.0, 14.0, 15.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    assert list(track(range(4), "feat", every_s=10, unit="batches")) == [0, 1, 2, 3]
    lines = [r.getMessage() for r in caplog.records]
    # start; one line when 10 s have passed (after item 3, t=13); the end line at t=15
    assert lines == ["feat: 0/4 batches (0%)", "feat: 3/4 batches (75%), 0.231 batches/s, ETA 0:04",
                     "feat: 4/4 batches (100%), 0.267 batches/s, done in 0:15"]
    caplog.clear()
    monkeypatch.setattr(progress.time, "perf_counter", lambda: 0.0)
    assert list(track([7], "one")) == [7] and caplog.records == []  # one item: nothing to report


def _record(msg: str, level=logging.WARNING, name="papermill") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, (), None)


def test_kernel_lines_get_their_real_level_and_logger_back():
    f = _KernelLogLevels()
    r = _record("INFO radaudit.models.train: train: 20/400 steps (5%)\n")
    assert f.filter(r) and (r.levelname, r.levelno, r.name, r.getMessage()) == (
        "INFO", logging.INFO, "radaudit.models.train", "train: 20/400 steps (5%)")
    w = _record("WARNING radaudit.data.covid_cxr: 14 rows left out")
    assert f.filter(w) and (w.levelno, w.name) == (logging.WARNING, "radaudit.data.covid_cxr")
    other = _record("/x/tqdm/auto.py:21: TqdmWarning: IProgress not found")  # a real warning of another library
    assert f.filter(other) and (other.levelno, other.name) == (logging.WARNING, "papermill")
    cell = _record("INFO radaudit: not from stderr", level=logging.INFO)  # papermill's own INFO lines untouched
    assert f.filter(cell) and cell.name == "papermill"


def test_batches_cover_every_item_once_and_report_progress(caplog):
    from radaudit.progress import batches

    caplog.set_level(logging.INFO, logger="radaudit.progress")
    got = list(batches(5, 2, "feat"))
    assert got == [range(0, 2), range(2, 4), range(4, 5)]
    assert caplog.records[0].getMessage() == "feat: 0/3 batches (0%)"
    assert caplog.records[-1].getMessage().startswith("feat: 3/3 batches (100%)")
    assert list(batches(0, 4)) == [] and list(batches(3, 8)) == [range(0, 3)]
