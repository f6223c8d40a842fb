"""The positive control of the image pathway: a copy of each image on which the label is burned in.

Why. The demo's only-image condition asks whether the stand-in VLM reads the label from the image.
On covid-chestxray the images carry the label only weakly (a linear probe on pixels or on frozen
InceptionV3 features reaches about 0.70 AUROC on held-out patients, :mod:`.probe`), so a low
only-image AUROC cannot tell "the model does not look" from "there is little to see". A positive
control must be a case where the effect has to show: here, an image on which the label is
unmistakably visible and *only* visible in the image.

What. :func:`mark_image` burns a marker into the image, in the spirit of the hospital tokens and
laterality markers a CNN learnt to read in Zech et al. (PLoS Med 2018, doi:10.1371/journal.pmed.1002683):
a square 22% of the image's central square wide, 4% in from its top-left corner — **a white square
with a black centre for COVID-19 (label 1), a black square with a white centre for any other finding
(label 0)**. Both labels get a marker of the same size, place and contrast, so its *presence* says
nothing; only its pattern does, and the pattern is read from the marker's own pixels wherever it
lies (version 1 coded the label by the corner, which a small ViT whose features are pooled cannot
see). It sits inside the central square, so a processor that centre-crops (the demo's CLIP
processor) keeps it; at the demo's 64 px it covers about 2 x 2 patches of 8 px.

How it is used. The ``marked_*`` conditions (:data:`radaudit.audits.modality_shift.conditions.MARKED_CONDITIONS`)
show the marked copy instead of the image; ``marked_image_shift`` shows the partner's marked copy,
whose marker names the *opposite* label. The demo stand-in is trained with the marked copy on a
share of its image draws (``p_marked``), so a model whose image pathway works must reach a high
``marked_only_image`` AUROC and must change answers when the marked image is swapped; a model
that has not learnt to read images cannot. A real VLM was never shown the marker, so for the
paper's models these conditions measure nothing and are not in the ``paper`` preset.

Copies are written once per image as PNG under ``<cache>/marked_images/v<MARKER_VERSION>/``, named
by the SHA-256 of the source file, the label and the marker version, so a changed image or marker
makes a new file and nothing stale is reused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from radaudit.errors import DataFormatError, ParamsError
from radaudit.models.vlm import load_image
from radaudit.paths import file_sha256

__all__ = ["MARKER_VERSION", "MARKED_IMAGE_COLUMN", "add_marked_images", "mark_image", "marker_box", "marker_patches",
           "marker_share"]

#: Bump when the marker's look or placement changes (it is part of every copy's file name).
MARKER_VERSION = 2  # 2: the label coded by the pattern (white/black centre), not by the corner
#: The samples column holding each sample's marked copy.
MARKED_IMAGE_COLUMN = "marked_image_path"
#: Side of the marker and margin from the corner, as fractions of the central square's side.
_SIDE, _MARGIN, _INNER = 0.22, 0.04, 0.5


def marker_box(width: int, height: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` of the marker on a ``width`` x ``height`` image (right/bottom exclusive).

    Placed in the image's central square (side ``min(width, height)``), ``0.04`` of the side in from
    its top-left corner, ``0.22`` of the side wide (at least 3 px); the same box for both labels.
    """
    if width < 8 or height < 8:
        raise DataFormatError(f"An image of {width}x{height} px is too small to mark (at least 8x8).")
    side = min(width, height)
    x0, y0 = (width - side) // 2, (height - side) // 2
    size = max(3, round(_SIDE * side))
    margin = round(_MARGIN * side)
    return x0 + margin, y0 + margin, x0 + margin + size, y0 + margin + size


def mark_image(image: Any, label: int) -> Any:
    """A copy of ``image`` (PIL) in grayscale-as-RGB with the label's marker burned in: in
    :func:`marker_box`, white with a black centre half as wide for label 1, black with a white
    centre for label 0."""
    from PIL import ImageDraw

    if label not in (0, 1):
        raise ParamsError(f"The marker codes a binary label (0 or 1), got {label!r}.")
    out = image.convert("RGB")
    left, top, right, bottom = marker_box(out.width, out.height)
    outer, centre = ((255, 255, 255), (0, 0, 0)) if label == 1 else ((0, 0, 0), (255, 255, 255))
    draw = ImageDraw.Draw(out)
    draw.rectangle((left, top, right - 1, bottom - 1), fill=outer)
    size = right - left
    inner = max(1, round(_INNER * size))
    off = (size - inner) // 2
    draw.rectangle((left + off, top + off, left + off + inner - 1, top + off + inner - 1), fill=centre)
    return out


def _copy_name(source: str, label: int) -> str:
    digest = hashlib.sha256(f"{file_sha256(source, DataFormatError)}|{int(label)}|v{MARKER_VERSION}".encode())
    return f"{digest.hexdigest()[:24]}.png"


def add_marked_images(samples: pd.DataFrame, folder: str | os.PathLike) -> pd.DataFrame:
    """``samples`` with a :data:`MARKED_IMAGE_COLUMN` column: the path of each sample's marked copy.

    ``folder``: where copies live (``<cache>/marked_images``); a copy is written only when missing
    (written to a temporary name, then renamed, so a killed run leaves no half-written file).
    Samples without an image keep ``None``.
    """
    for col in ("image_path", "label"):
        if col not in samples.columns:
            raise ParamsError(f"add_marked_images needs column {col!r} in the samples.")
    root = Path(folder) / f"v{MARKER_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    paths: list[str | None] = []
    for source, label in zip(samples["image_path"], samples["label"]):
        if source is None or (isinstance(source, float) and source != source):
            paths.append(None)
            continue
        target = root / _copy_name(str(source), int(label))
        if not target.exists():
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            # zlib level 1: a third of the default's time (the 464 demo copies took 49 s), lossless all the same; keys
            # use decoded pixels (models.vlm.image_hash) and the samples' fingerprint skips these files
            mark_image(load_image(str(source)), int(label)).save(tmp, format="PNG", compress_level=1)
            os.replace(tmp, target)
        paths.append(str(target))
    out = samples.copy()
    out[MARKED_IMAGE_COLUMN] = pd.Series(paths, index=out.index, dtype=object)
    return out


def marker_patches(box: Sequence[int], width: int, height: int, grid: int) -> list[tuple[int, int]]:
    """The ``(row, col)`` cells of a ``grid`` x ``grid`` patch grid over the central square that the marker overlaps."""
    side = min(width, height)
    x0, y0 = (width - side) // 2, (height - side) // 2
    left, top, right, bottom = box
    cell = side / grid
    cols = range(int((left - x0) // cell), int(-(-(right - x0) // cell)))
    rows = range(int((top - y0) // cell), int(-(-(bottom - y0) // cell)))
    return [(r, c) for r in rows for c in cols if 0 <= r < grid and 0 <= c < grid]


def marker_share(maps: pd.DataFrame) -> pd.DataFrame:
    """How much of a heatmap lies where the marker is: per (model, sample, condition).

    ``maps``: :func:`radaudit.audits.modality_shift.heatmap.gradient_maps` or ``attention_maps`` ``[1]``
    (shares per patch over the image's central square, the processor's centre crop). ``marker_share`` =
    the summed weight of the patches the marker box overlaps (:func:`marker_patches`; the box is the same
    for every image, so on an unmarked image it is the share of that empty corner: the negative
    control), ``uniform_share`` = their share of the grid (what a map blind to the corner gives on
    average), ``n_patches``, ``marked`` (whether the image shown carried the marker).
    """
    from PIL import Image

    cols = ["model", "sample_id", "condition", "marked", "marker_share", "uniform_share", "n_patches"]
    rows = []
    for (model, sid, cond), g in maps.groupby(["model", "sample_id", "condition"], sort=False):
        first = g.iloc[0]
        grid = int(first["grid_rows"])
        if int(first["grid_cols"]) != grid:
            raise ParamsError("marker_share: the marker is placed on a square crop; this map's grid is not square.")
        with Image.open(str(first["image_path"])) as im:
            width, height = im.size
        cells = set(marker_patches(marker_box(width, height), width, height, grid))
        on = [(int(r), int(c)) in cells for r, c in zip(g["row"], g["col"])]
        rows.append({"model": model, "sample_id": sid, "condition": cond, "marked": str(cond).startswith("marked_"),
                     "marker_share": float(g.loc[on, "weight"].sum()), "uniform_share": len(cells) / grid ** 2,
                     "n_patches": len(cells)})
    return pd.DataFrame(rows, columns=cols)
