"""The same picture under two patient ids: finding duplicate images and merging the ids that share one.

Public collections are assembled from papers and websites, and one figure can enter twice: the covid-chestxray
snapshot lists five files under two patient ids each (``000001-24.jpg`` for patients 285 and 339) and holds
re-encoded copies of one film under two names (``covid-19-rapidly-progressive-acute-respiratory-distress-syndrome-
ards-day-1.jpg`` of patient 97 is ``16660_3_1.jpg`` of patient 178). Taken at face value, such a pair is two
"patients": a patient split can put one copy in training and the other in the test set (leakage), a re-ID network
is trained to call an exact copy a *different* patient, and a privacy audit's null pairs (other patients' images)
contain exact copies, which sets its threshold at the score of a copy.

The rule here: two images whose 32x32 grey thumbnails (the whole image, bilinear; JPEG draft decoding) correlate
at ``min_corr`` or more (Pearson, over pixels) are the same picture, and every patient id in a connected group of
such pictures is one patient. On the lab's covid-chestxray copy (653 X-ray images) the correlations of
different-patient pairs fall into two clusters: ten pairs at >= 0.999 (the five listed files and five re-encoded
copies) and then nothing above 0.977 (two films of one case under two ids, AR-1 / extubation-1; a cropped copy at
0.965), so the default 0.99 merges exact and re-encoded copies only; follow-up films of one person that merely look
alike are not evidence of identity and stay apart. Components: :func:`scipy.sparse.csgraph.connected_components`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from radaudit.errors import DataFormatError, ParamsError

__all__ = ["DEFAULT_MIN_CORR", "THUMBNAIL_SIZE", "duplicate_groups", "merge_ids_sharing_images", "thumbnails"]

log = logging.getLogger(__name__)

#: Thumbnail correlation at which two images are the same picture (module docstring: the gap on covid-chestxray).
DEFAULT_MIN_CORR = 0.99
THUMBNAIL_SIZE = 32


def thumbnails(paths: Sequence[str], size: int = THUMBNAIL_SIZE) -> np.ndarray:
    """float32 ``[n, size * size]``: each image as a grey ``size`` x ``size`` thumbnail of the whole image,
    centred and scaled to unit norm (so a dot product is Pearson's r). A file PIL cannot read raises
    :class:`~radaudit.errors.DataFormatError` naming it. A flat image (one grey value) gives zeros: it matches
    nothing."""
    from PIL import Image, UnidentifiedImageError

    out = np.zeros((len(paths), size * size), dtype=np.float32)
    for i, path in enumerate(paths):
        try:
            with Image.open(path) as im:
                im.draft("L", (2 * size, 2 * size))  # JPEG: decode at a reduced scale (about 10x faster)
                thumb = im.convert("L").resize((size, size), Image.BILINEAR)
        except (OSError, UnidentifiedImageError) as err:
            raise DataFormatError(f"Cannot read image {str(path)!r} ({type(err).__name__}: {err}); check the file or "
                                  "remove its row.") from err
        x = np.asarray(thumb, dtype=np.float32).ravel()
        x = x - x.mean()
        norm = float(np.linalg.norm(x))
        out[i] = x / norm if norm > 0 else 0.0
    return out


def duplicate_groups(thumbs: np.ndarray, min_corr: float = DEFAULT_MIN_CORR) -> np.ndarray:
    """``int [n]``: a group number per image; images in one group are linked by a chain of pairs whose thumbnail
    correlation is at least ``min_corr`` (each image alone is its own group)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not 0.0 < float(min_corr) <= 1.0:
        raise ParamsError(f"min_corr must be in (0, 1], got {min_corr!r}.")
    n = len(thumbs)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    corr = thumbs @ thumbs.T
    i, j = np.nonzero(np.triu(corr >= min_corr - 1e-6, k=1))
    graph = coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def _natural(value: str) -> tuple[int, int, str]:
    """Sort key: numeric ids by value ("78" before "201"), then the others by text."""
    return (0, int(value), value) if value.isdigit() else (1, 0, value)


def merge_ids_sharing_images(ids: Sequence[str], groups: np.ndarray) -> tuple[pd.Series, list[list[str]]]:
    """``(merged, merges)``: each row's id, replaced by the ``"+"``-joined ids (numbers by value) of every id
    connected to it through shared images (an id with several images can link several others), and the merged id
    sets (each sorted, the list sorted). Ids that share no image are unchanged."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    ids = pd.Series(ids, dtype="string").reset_index(drop=True)
    if ids.isna().any():
        raise DataFormatError("merge_ids_sharing_images: some rows have no id; give every image an id first.")
    groups = np.asarray(groups)
    if len(groups) != len(ids):
        raise ParamsError(f"{len(ids)} ids but {len(groups)} image groups.")
    codes, uniq = pd.factorize(ids)
    m, g = len(uniq), int(groups.max()) + 1 if len(groups) else 0
    # a bipartite graph ids <-> picture groups: ids are connected when they share a picture
    graph = coo_matrix((np.ones(len(codes)), (codes, m + groups)), shape=(m + g, m + g))
    comp = connected_components(graph, directed=False)[1][:m]
    members: dict[int, list[str]] = {}
    for k, c in enumerate(comp):
        members.setdefault(int(c), []).append(str(uniq[k]))
    name = {c: "+".join(sorted(v, key=_natural)) for c, v in members.items()}
    merged = pd.Series([name[int(comp[c])] for c in codes], dtype="string")
    merges = sorted((sorted(v, key=_natural) for v in members.values() if len(v) > 1),
                    key=lambda v: [_natural(x) for x in v])
    return merged, merges
