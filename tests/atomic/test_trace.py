"""The audit trace: table, JSONL round trip, readable text."""

from __future__ import annotations

from radaudit.atomic import format_trace, read_jsonl, score_pairs, trace_of, write_jsonl
from radaudit.atomic.trace import TRACE_COLUMNS


def test_trace_rows_and_jsonl_round_trip(tmp_path):
    df = score_pairs(["Small left pleural effusion. No pneumothorax."], ["Small right pleural effusion."])
    t = trace_of(df)
    assert tuple(t.columns) == TRACE_COLUMNS
    # every score is a count over the trace
    g = t[(t["direction"] == "gt->inf") & (t["level"] == "disease")]
    assert len(g) == df.loc[0, "n_disease_gt"] and g["match"].sum() == df.loc[0, "c_disease_gt_inf"]
    row = t[(t["level"] == "attribute") & (t["attribute"] == "location") & (t["direction"] == "gt->inf")].iloc[0]
    assert (row.question, row.expected, row.found, bool(row.match)) == (
        "What is the location of the pleural effusion?", "left", "right", False)
    assert row.evidence == "Small right pleural effusion." and row.source_evidence == "Small left pleural effusion."
    path = write_jsonl(t, tmp_path / "trace.jsonl")
    back = read_jsonl(path)
    def plain(frame):
        return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

    assert plain(back) == plain(t)
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(t)


def test_readable_table():
    df = score_pairs(["Small left pleural effusion."], ["Small right pleural effusion."])
    text = format_trace(trace_of(df), width=30)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["pair", "direction", "level", "question"]
    assert any("✗" in ln and "left" in ln and "right" in ln for ln in lines)
    only_bad = format_trace(trace_of(df), mismatches_only=True).splitlines()
    assert len(only_bad) == 2 + 2  # header, rule, the two location questions


def test_trace_rows_convert_shallowly_but_exactly_as_asdict():
    """The fast to_dict/trace_frame (issue 25) give what dataclasses.asdict gives, field for field."""
    import dataclasses

    from radaudit.atomic.schema import TraceRow
    from radaudit.atomic.trace import TRACE_COLUMNS, trace_frame

    rows = [TraceRow(pair=3, direction="gt_to_inf", level="attribute", finding="pleural effusion", attribute="size",
                     question="What size?", expected="small", found="large", match=False, evidence="Large effusion.",
                     target=None, unparseable=True),
            TraceRow(pair=4, direction="inf_to_gt", level="disease", finding="pneumothorax", attribute=None,
                     question="Is there a pneumothorax?", expected="yes", found="no", match=False, evidence="")]
    assert [r.to_dict() for r in rows] == [dataclasses.asdict(r) for r in rows]
    frame = trace_frame(rows)
    assert list(frame.columns) == list(TRACE_COLUMNS)
    import pandas as pd

    old = pd.DataFrame([dataclasses.asdict(r) for r in rows], columns=list(TRACE_COLUMNS))  # the former build
    pd.testing.assert_frame_equal(frame, old)
    assert list(trace_frame([]).columns) == list(TRACE_COLUMNS)
