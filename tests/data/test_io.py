"""The shared file readers of radaudit.data.io: what they return and what their errors say."""

from __future__ import annotations

import json
import math

import pytest

from radaudit.data.io import read_csv_checked, read_json_checked
from radaudit.errors import DataFormatError, DatasetNotFoundError

# ------------------------------------------------------------------------------------------- CSV


def test_csv_ok_passes_read_csv_kwargs(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,c\n007,,x\n")
    df = read_csv_checked(p, ("a", "b"), dataset="ds", dtype=str, keep_default_na=False)
    assert df.to_dict("records") == [{"a": "007", "b": "", "c": "x"}]  # extra column kept
    df = read_csv_checked(p, ("a",), dataset="ds")
    assert df.loc[0, "a"] == 7 and math.isnan(df.loc[0, "b"])  # pandas defaults without kwargs


def test_csv_missing_file(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        read_csv_checked(tmp_path / "nope.csv", ("a",), dataset="ds")
    assert str(e.value) == f"ds: {tmp_path / 'nope.csv'} does not exist."


def test_csv_missing_columns_message(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,c\n1,2\n")
    with pytest.raises(DataFormatError) as e:
        read_csv_checked(p, ("a", "b", "d"), dataset="ds", what="Example metadata", doc="https://example.org/fmt")
    msg = str(e.value)
    assert msg.startswith(f"ds: {p} does not have the Example metadata format")
    assert "['b', 'd']" in msg and "['a', 'b', 'd']" in msg and "found ['a', 'c']" in msg
    assert msg.endswith("See https://example.org/fmt for the format.")
    with pytest.raises(DataFormatError) as e:
        read_csv_checked(p, ("b",), dataset="ds")
    assert str(e.value) == f"ds: {p} lacks the column(s) ['b']; expected at least ['b'], found ['a', 'c']."


def test_csv_unreadable_is_a_format_error(tmp_path):
    p = tmp_path / "t.csv.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(DataFormatError, match=r"ds: could not read .*t\.csv\.gz as the X CSV .*See D for the format"):
        read_csv_checked(p, ("a",), dataset="ds", what="X", doc="D")
    with pytest.raises(DataFormatError, match="could not read"):
        read_csv_checked(tmp_path, ("a",), dataset="ds")  # a directory


# ------------------------------------------------------------------------------------------ JSON


def _write(tmp_path, obj, name="f.json"):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def test_json_ok(tmp_path):
    p = _write(tmp_path, '{"k": {"x": NaN, "y": 1}}')
    data = read_json_checked(p, dataset="ds", top_level=dict, record_fields=("x",), record="study")
    assert math.isnan(data["k"]["x"]) and data["k"]["y"] == 1
    p = _write(tmp_path, [1, "two"])
    assert read_json_checked(p, dataset="ds", top_level=list) == [1, "two"]  # items unchecked without record_fields


def test_json_missing_invalid_and_wrong_top_level(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"^ds: .*nope\.json does not exist\.$"):
        read_json_checked(tmp_path / "nope.json", dataset="ds", top_level=list)
    p = _write(tmp_path, "[1,")
    with pytest.raises(DataFormatError, match=r"^ds: .*f\.json is not valid JSON \(.*\); expected a JSON list of cases\.$"):
        read_json_checked(p, dataset="ds", top_level=list, expected="a JSON list of cases")
    p = _write(tmp_path, {"a": 1})
    with pytest.raises(DataFormatError, match=r"f\.json should hold a JSON list, found a dict\.$"):
        read_json_checked(p, dataset="ds", top_level=list)
    with pytest.raises(TypeError):
        read_json_checked(p, dataset="ds", top_level=str)


def test_json_records(tmp_path):
    p = _write(tmp_path, [{"id": "c1", "a": 1, "b": 2}, {"id": "c2", "a": 1}])
    with pytest.raises(DataFormatError) as e:
        read_json_checked(p, dataset="ds", top_level=list, record_fields=("a", "b"), record="case", id_field="id")
    assert str(e.value) == f"ds: {p}: case 'c2' lacks the field(s) ['b']; expected ['a', 'b']."
    p = _write(tmp_path, [{"a": 1}, 5])
    with pytest.raises(DataFormatError) as e:
        read_json_checked(p, dataset="ds", top_level=list, record_fields=("a",), record="case", id_field="id")
    assert str(e.value) == f"ds: {p}: case at index 1 is a int, expected an object with the field(s) ['a']."
    p = _write(tmp_path, [{"b": 1}])
    with pytest.raises(DataFormatError, match=r"case at index 0 lacks the field\(s\) \['a'\]"):
        read_json_checked(p, dataset="ds", top_level=list, record_fields=("a",), record="case", id_field="id")
    p = _write(tmp_path, {"s1": {"a": 1}, "s2": []})
    with pytest.raises(DataFormatError) as e:
        read_json_checked(p, dataset="ds", top_level=dict, record_fields=(), record="study", doc="DOC")
    assert str(e.value) == f"ds: {p}: study 's2' is a list, expected an object. See DOC for the format."
