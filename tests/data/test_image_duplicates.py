"""Duplicate pictures and the patient ids they merge (radaudit.data.image_duplicates), on hand-made images."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from radaudit.data.image_duplicates import duplicate_groups, merge_ids_sharing_images, thumbnails
from radaudit.errors import DataFormatError, ParamsError


def _film(seed: int, size: int = 96) -> np.ndarray:
    """A smooth random 'film' (blurred noise): thumbnails of two such films correlate weakly."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (12, 12), dtype=np.uint8)
    return np.asarray(Image.fromarray(coarse).resize((size, size), Image.BICUBIC))


@pytest.fixture
def files(tmp_path):
    a = _film(0)
    paths = {
        "a.png": a,
        "a_copy.jpg": a,                                   # the same picture re-encoded as JPEG (lossy)
        "a_big.png": np.asarray(Image.fromarray(a).resize((192, 192), Image.BILINEAR)),  # and rescaled
        "b.png": _film(1),
        "c.png": _film(2),
        "flat.png": np.full((96, 96), 128, dtype=np.uint8),
        "flat2.png": np.full((96, 96), 40, dtype=np.uint8),
    }
    out = {}
    for name, arr in paths.items():
        path = tmp_path / name
        Image.fromarray(arr).save(path, quality=85) if name.endswith(".jpg") else Image.fromarray(arr).save(path)
        out[name] = str(path)
    return out


def test_thumbnails_are_centred_unit_vectors_and_a_flat_image_is_zero(files):
    t = thumbnails([files["a.png"], files["flat.png"]])
    assert t.shape == (2, 32 * 32) and t.dtype == np.float32
    assert abs(float(t[0].sum())) < 1e-3 and float(np.linalg.norm(t[0])) == pytest.approx(1.0, abs=1e-5)
    assert not t[1].any()


def test_copies_group_together_and_different_films_do_not(files):
    names = ["a.png", "a_copy.jpg", "a_big.png", "b.png", "c.png", "flat.png", "flat2.png"]
    t = thumbnails([files[n] for n in names])
    corr = t @ t.T
    assert corr[0, 1] > 0.99 and corr[0, 2] > 0.99  # re-encoded and rescaled copies
    assert corr[0, 3] < 0.9 and corr[3, 4] < 0.9     # other films
    g = duplicate_groups(t)
    assert g[0] == g[1] == g[2]
    assert len({g[0], g[3], g[4], g[5], g[6]}) == 5  # two flat images are not "the same picture"
    # a bar above the copies' correlation splits them again; a bar outside (0, 1] is refused
    assert len(set(duplicate_groups(t, min_corr=1.0)[:3])) >= 2
    with pytest.raises(ParamsError, match=r"min_corr must be in \(0, 1\]"):
        duplicate_groups(t, min_corr=1.5)
    assert duplicate_groups(np.zeros((0, 4), dtype=np.float32)).tolist() == []


def test_ids_merge_through_a_chain_of_shared_pictures():
    # patient 7 has pictures 0 and 1; picture 0 also appears under patient 30, picture 1 under patient 201;
    # patient 5's picture is its own
    ids = ["7", "7", "30", "201", "5", "x"]
    groups = np.array([0, 1, 0, 1, 2, 3])
    merged, merges = merge_ids_sharing_images(ids, groups)
    assert merged.tolist() == ["7+30+201"] * 4 + ["5", "x"]  # numbers by value, not as text ("201" < "30")
    assert merges == [["7", "30", "201"]]
    # nothing shared: nothing changes
    same, none = merge_ids_sharing_images(["1", "2"], np.array([0, 1]))
    assert same.tolist() == ["1", "2"] and none == []


def test_bad_inputs_say_what_to_do(tmp_path):
    bad = tmp_path / "not_an_image.png"
    bad.write_bytes(b"\x89PNG but not really")
    with pytest.raises(DataFormatError, match=r"Cannot read image .*not_an_image\.png.*remove its row"):
        thumbnails([str(bad)])
    with pytest.raises(ParamsError, match="2 ids but 1 image groups"):
        merge_ids_sharing_images(["1", "2"], np.array([0]))
    with pytest.raises(DataFormatError, match="some rows have no id"):
        merge_ids_sharing_images(["1", None], np.array([0, 1]))
