"""``radaudit data fetch`` against a local mirror built from the lab's shared copies.

The mirror is laid out like the canonical URLs (``<mirror>/raw.githubusercontent.com/<owner>/<repo>/
<commit>/<path>``, ``<mirror>/openi.nlm.nih.gov/...``), so every fetch exercises the real URL list
and the real download path (urllib with ``file://``), without network access.
"""

from __future__ import annotations

import filecmp
import shutil
import urllib.parse
from pathlib import Path

import pandas as pd
import pytest

from radaudit.data import get_spec, load_dataset
from radaudit.data import fetch as F
from radaudit.errors import DataFormatError, DatasetNotFoundError

COVID_LIMIT = 5


def _mirror_file(mirror: Path, url: str) -> Path:
    parts = urllib.parse.urlsplit(url)
    return mirror / parts.netloc / urllib.parse.unquote(parts.path.lstrip("/"))


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


@pytest.fixture(scope="module")
def mirror(shared_data, tmp_path_factory) -> Path:
    m = tmp_path_factory.mktemp("mirror")
    for name in F.fetchable():
        spec = get_spec(name)
        for src in spec.sources:
            _copy(shared_data / spec.folder / src.dest, _mirror_file(m, src.url))
    # covid images: the shared copy renamed most of them (images_manifest.csv maps the names)
    covid = get_spec("covid_cxr")
    man = pd.read_csv(shared_data / covid.folder / "images_manifest.csv").set_index("filename")["local_file"]
    for src in F.EXPANDERS["covid_cxr"](covid, shared_data / covid.folder, COVID_LIMIT):
        _copy(shared_data / covid.folder / man[src.dest[len("images/"):]], _mirror_file(m, src.url))
    return m


@pytest.fixture(scope="module")
def fetched(mirror, tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh_root")
    got = {name: F.fetch(name, root, mirror=mirror.as_uri(), progress=False, limit=COVID_LIMIT) for name in F.fetchable()}
    return root, got


def test_every_public_dataset_has_sources():
    public = {n for n in F.DATASETS if F.DATASETS[n].access == "public"}
    assert set(F.fetchable()) == public
    for name in public:
        for src in get_spec(name).sources:
            assert src.url.startswith("https://") and src.sha256 and len(src.sha256) == 64
            assert "DERIVED" not in src.dest and src.dest != "images_manifest.csv"


def test_rewrite_url():
    url = "https://raw.githubusercontent.com/o/r/abc/dir/a%20b.json"
    assert F.rewrite_url(url, None) == url
    assert F.rewrite_url(url, "file:///m/") == "file:///m/raw.githubusercontent.com/o/r/abc/dir/a%20b.json"
    assert F.rewrite_url(url, "http://proxy:8080/cache") == "http://proxy:8080/cache/raw.githubusercontent.com/o/r/abc/dir/a%20b.json"
    assert F.rewrite_url(url, "/m").startswith("file:///")


def test_fetch_all_arrive_byte_identical(fetched, shared_data, mirror):
    root, got = fetched
    for name in F.fetchable():
        spec = get_spec(name)
        for src in spec.sources:
            dest = root / spec.folder / src.dest
            assert filecmp.cmp(dest, shared_data / spec.folder / src.dest, shallow=False), dest
    images = sorted((root / "covid-chestxray-dataset" / "images").iterdir())
    assert len(images) == COVID_LIMIT
    for src in F.EXPANDERS["covid_cxr"](get_spec("covid_cxr"), root / "covid-chestxray-dataset", COVID_LIMIT):
        assert filecmp.cmp(root / "covid-chestxray-dataset" / src.dest, _mirror_file(mirror, src.url), shallow=False)
    assert len(got["covid_cxr"]) == 3 + COVID_LIMIT
    # nothing derived, no leftovers from the temporary files
    assert not list(root.rglob("*DERIVED*")) and not list(root.rglob("*.part"))


def test_second_fetch_downloads_nothing(fetched, mirror):
    root, _ = fetched
    for name in F.fetchable():
        assert F.fetch(name, root, mirror=mirror.as_uri(), progress=False, limit=COVID_LIMIT) == []


def test_force_and_stale_files(mirror, tmp_path):
    first = F.fetch("radpref", tmp_path, mirror=mirror, progress=False)
    assert len(first) == 2
    assert len(F.fetch("radpref", tmp_path, mirror=mirror, progress=False, force=True)) == 2
    stale = tmp_path / "crimson-radpref" / "preference_data.json"
    stale.write_text("[]")  # wrong hash: downloaded again
    assert F.fetch("radpref", tmp_path, mirror=mirror, progress=False) == [stale]
    assert stale.stat().st_size > 1000


def test_corrupted_mirror_fails_the_hash_check_and_keeps_nothing(mirror, tmp_path):
    bad = tmp_path / "bad_mirror"
    shutil.copytree(mirror / "raw.githubusercontent.com" / "rajpurkarlab", bad / "raw.githubusercontent.com" / "rajpurkarlab")
    spec = get_spec("radpref")
    target = _mirror_file(bad, spec.sources[0].url)
    target.write_bytes(target.read_bytes()[:-10] + b"corrupted!")
    root = tmp_path / "root"
    with pytest.raises(DataFormatError) as e:
        F.fetch("radpref", root, mirror=bad.as_uri(), progress=False)
    msg = str(e.value)
    assert "preference_data.json" in msg and spec.sources[0].sha256 in msg and "got" in msg
    folder = root / spec.folder
    assert not (folder / "preference_data.json").exists()
    assert [p for p in folder.rglob("*") if p.is_file()] == []


def test_missing_file_on_mirror_names_the_url(tmp_path):
    with pytest.raises(F.FetchError) as e:
        F.fetch("cxr_label_phrases", tmp_path / "root", mirror=tmp_path / "empty_mirror", progress=False)
    first = get_spec("cxr_label_phrases").sources[0].url
    assert f"mirror of {first}" in str(e.value) and "empty_mirror" in str(e.value)


@pytest.mark.parametrize("name", ["mimic_cxr", "rexgradient", "chexpert_plus", "rexval"])
def test_credentialed_cannot_be_fetched(name, tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        F.fetch(name, tmp_path, progress=False)
    msg = str(e.value)
    assert "by hand" in msg and get_spec(name).homepage in msg


def _assert_same_load(name: str, fresh: Path, shared: Path) -> None:
    a = load_dataset(name, data_root=fresh)
    b = load_dataset(name, data_root=shared)
    a.attrs, b.attrs = {}, {}
    pd.testing.assert_frame_equal(a, b)


def test_fetched_iu_xray_loads_like_the_shared_copy(fetched, shared_data):
    pytest.importorskip("radaudit.data.iu_xray")
    _assert_same_load("iu_xray", fetched[0], shared_data)


@pytest.mark.parametrize("name, module", [
    ("iu_xray_rexrank", "radaudit.data.rexrank"),
    ("chexpert_plus_valid", "radaudit.data.rexrank"),
    ("chexpert_plus_pairs", "radaudit.data.rexrank"),
    ("radpref", "radaudit.data.radpref"),
    ("radpref_annotations", "radaudit.data.radpref"),
])
def test_fetched_public_sets_load_like_the_shared_copy(fetched, shared_data, name, module):
    pytest.importorskip(module)
    _assert_same_load(name, fetched[0], shared_data)


def test_fetched_covid_images_load_with_upstream_names(fetched, shared_data):
    pytest.importorskip("radaudit.data.covid_cxr")
    root = fetched[0]
    df = load_dataset("covid_cxr", data_root=root)
    names = [s.dest[len("images/"):] for s in F.EXPANDERS["covid_cxr"](get_spec("covid_cxr"), root / "covid-chestxray-dataset", COVID_LIMIT)]
    assert sorted(set(df["filename"])) == sorted(names)  # exactly the fetched images, found without a manifest
    assert all(Path(p).is_file() for p in df["image_path"])


def test_cli_fetch_then_list(mirror, tmp_path):
    """`radaudit data fetch` through the CLI, then `data list` sees the dataset as present."""
    from click.testing import CliRunner

    from radaudit.cli import main

    root = tmp_path / "root"
    r = CliRunner().invoke(main, ["data", "fetch", "radpref", "radpref_annotations", "--data-root", str(root), "--mirror", mirror.as_uri()])
    assert r.exit_code == 0, r.output
    assert "radpref: 2 files" in r.output and "radpref_annotations: 3 files" in r.output
    r = CliRunner().invoke(main, ["data", "list", "--data-root", str(root)])
    assert r.exit_code == 0
    import re

    lines = {m.group(2): m.group(1) for m in re.finditer(r"^\s*(\[.\])\s+(\S+)", r.output, flags=re.M)}
    assert lines["radpref"] == "[x]" and lines["radpref_annotations"] == "[x]" and lines["iu_xray"] == "[ ]"
    r = CliRunner().invoke(main, ["data", "fetch", "mimic_cxr", "--data-root", str(root)])
    assert r.exit_code == 2 and "credentialed" in r.output and "physionet" in r.output.lower()
