"""The ``.fixture`` marker shared by the fixture writers (:mod:`radaudit.data.fixtures.marker`)."""

from __future__ import annotations

from radaudit.data.fixtures import write_rexval
from radaudit.data.fixtures.marker import MARKER, fixture_stamp, is_written, mark_written


def test_the_stamp_names_the_fixture_its_version_and_arguments_in_order():
    assert fixture_stamp("rexval", 1, n=50, raters=6, seed=0) == "rexval v1 n=50 raters=6 seed=0\n"
    assert fixture_stamp("mimic_cxr", 2, seed=3, n=4) == "mimic_cxr v2 seed=3 n=4\n"


def test_a_folder_is_written_only_when_its_marker_holds_the_same_stamp(tmp_path):
    stamp = fixture_stamp("x", 1, n=2)
    assert not is_written(tmp_path, stamp)  # no marker
    mark_written(tmp_path, stamp)
    assert (tmp_path / MARKER).read_text(encoding="utf-8") == "x v1 n=2\n"
    assert is_written(tmp_path, stamp)
    assert not is_written(tmp_path, fixture_stamp("x", 1, n=3))  # other arguments
    assert not is_written(tmp_path, fixture_stamp("x", 2, n=2))  # another layout version


def test_a_writer_leaves_a_marked_folder_alone_and_rewrites_a_stale_one(tmp_path):
    out = write_rexval(tmp_path, n_studies=3, n_raters=2)
    csv = out / "50_samples_gt_and_candidates.csv"
    first = csv.read_bytes()
    csv.write_text("edited\n", encoding="utf-8")
    write_rexval(tmp_path, n_studies=3, n_raters=2)  # same arguments: the marker says it is written
    assert csv.read_text(encoding="utf-8") == "edited\n"
    (tmp_path / MARKER).write_text("stale\n", encoding="utf-8")
    write_rexval(tmp_path, n_studies=3, n_raters=2)
    assert csv.read_bytes() == first
    assert (tmp_path / MARKER).read_text(encoding="utf-8") == "rexval v1 n=3 raters=2 seed=0\n"
