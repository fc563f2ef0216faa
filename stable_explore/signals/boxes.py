"""``box_issues``: boxes worth a look (outside the image, degenerate, tiny, duplicated) and images without boxes.

Read from the Boxes column as stored (one Arrow read, numpy over every box at once); no image is
decoded. The image's size comes from ``width`` and ``height`` columns when the dataset has them
(COCO and YOLO imports do), else boxes in pixels are not checked against the image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import ColumnNotFoundError
from stable_explore.schema import Boxes
from stable_explore.signals._rows import result_table

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["box_issues"]


def box_issues(
    ds: CachedDataset, *, column: str | None = None, tiny: float = 4.0, duplicate_iou: float = 0.9
) -> pa.Table:
    """One row per box worth a look, and per image without boxes.

    Parameters
    ----------
    ds
        The dataset (or a view of it).
    column
        The :class:`~stable_explore.Boxes` column (default: the first one).
    tiny
        A box narrower or lower than this many pixels is ``"tiny"`` (normalized boxes are checked
        only where the dataset has ``width`` and ``height`` columns).
    duplicate_iou
        Two boxes of one class in one image overlapping more than this are ``"duplicate"`` (the
        later one is listed, ``other`` names the first).

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``box`` (its index in the row; -1 for ``"no boxes"``), ``category`` (the
        class name), ``issue`` (``"outside"``, ``"degenerate"``, ``"tiny"``, ``"duplicate"`` or
        ``"no boxes"``), ``other`` (the first box of a duplicate, else -1). ``ds.drop_boxes`` takes
        ``row`` and ``box``.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> from stable_explore.signals import box_issues
    >>> features = se.Features(objects=se.Boxes(names=["cat"]), width=se.Value("int64"), height=se.Value("int64"))
    >>> boxes = {"bbox": [[0, 0, 20, 20], [1, 0, 20, 20], [30, 30, 2, 2]], "category": [0, 0, 0]}
    >>> rows = [{"objects": boxes, "width": 40, "height": 40}, {"objects": [], "width": 40, "height": 40}]
    >>> ds = se.build(rows, features, name="b", home=tempfile.mkdtemp(), progress=False)
    >>> [(r["row"], r["box"], r["issue"]) for r in box_issues(ds).to_pylist()]
    [(0, 1, 'duplicate'), (0, 2, 'tiny'), (1, -1, 'no boxes')]
    """
    name = column if column is not None else ds.features.first_of(Boxes)
    feature = ds.features.get(name) if name is not None else None
    if name is None or not isinstance(feature, Boxes):
        what = f"named {column!r}" if column else "in this dataset"
        msg = f"no Boxes column {what}; columns: {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    stored = ds.arrow_column(name)
    stored = stored.combine_chunks() if isinstance(stored, pa.ChunkedArray) else stored
    counts = pc.fill_null(pc.list_value_length(stored), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(stored)
    row_of = np.repeat(np.arange(len(counts)), counts)
    index_in_row = np.arange(len(row_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    coords = _xyxy(flat, feature)
    categories = flat.field("category").to_numpy(zero_copy_only=False) if len(flat) else np.zeros(0, np.int64)
    sizes = _image_sizes(ds, row_of)
    issues: list[tuple[int, int, int, str, int]] = [
        (int(r), -1, -1, "no boxes", -1) for r in np.flatnonzero(counts == 0)
    ]
    width, height = coords[:, 2] - coords[:, 0], coords[:, 3] - coords[:, 1]
    degenerate = (width <= 0) | (height <= 0)
    scale = sizes if sizes is not None and feature.normalized else None
    pixel_w = width * scale[:, 0] if scale is not None else width
    pixel_h = height * scale[:, 1] if scale is not None else height
    small = ~degenerate & ((pixel_w < tiny) | (pixel_h < tiny))
    if feature.normalized and scale is None:
        small[:] = False  # fractions of an image of unknown size: no pixel threshold applies
    outside: np.ndarray = np.zeros(len(coords), dtype=bool)
    if feature.normalized:
        outside = np.asarray((coords < -1e-6).any(axis=1) | (coords > 1 + 1e-6).any(axis=1))
    elif sizes is not None:
        outside = np.asarray((coords[:, :2] < -1e-6).any(axis=1) | (coords[:, 2] > sizes[:, 0] + 1e-6))
        outside |= coords[:, 3] > sizes[:, 1] + 1e-6
    for kind, mask in (("outside", outside), ("degenerate", degenerate), ("tiny", small)):
        issues += [(int(row_of[i]), int(index_in_row[i]), int(categories[i]), kind, -1) for i in np.flatnonzero(mask)]
    issues += _duplicates(coords, categories, row_of, index_in_row, counts, duplicate_iou)
    issues.sort(key=lambda item: (item[0], item[1], item[3]))
    names = feature.names
    return result_table(
        ds,
        np.array([item[0] for item in issues], dtype=np.int64),
        {
            "box": pa.array([item[1] for item in issues], type=pa.int64()),
            "category": pa.array([names[item[2]] if item[2] >= 0 else None for item in issues], type=pa.string()),
            "issue": pa.array([item[3] for item in issues], type=pa.string()),
            "other": pa.array([item[4] for item in issues], type=pa.int64()),
        },
    )


def _xyxy(flat: pa.Array, feature: Boxes) -> np.ndarray:
    if not len(flat):
        return np.zeros((0, 4), dtype=np.float64)
    raw: np.ndarray = np.asarray(pc.list_flatten(flat.field("bbox")).to_numpy(zero_copy_only=False), dtype=np.float64)
    raw = raw.reshape(-1, 4)
    a, b, c, d = raw.T
    if feature.format == "xyxy":
        return raw
    if feature.format == "cxcywh":
        return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    return np.stack([a, b, a + c, b + d], axis=1)


def _image_sizes(ds: CachedDataset, row_of: np.ndarray) -> np.ndarray | None:
    """Each box's image (width, height) from the ``width`` and ``height`` columns, or None without them."""
    if "width" not in ds.features or "height" not in ds.features:
        return None
    columns = [
        np.asarray(ds.arrow_column(name).to_numpy(zero_copy_only=False), dtype=np.float64)
        for name in ("width", "height")
    ]
    sizes: np.ndarray = np.stack(columns, axis=1)[row_of]
    return sizes


def _duplicates(
    coords: np.ndarray,
    categories: np.ndarray,
    row_of: np.ndarray,
    index_in_row: np.ndarray,
    counts: np.ndarray,
    threshold: float,
) -> list[tuple[int, int, int, str, int]]:
    found = []
    starts = np.cumsum(counts) - counts
    for row in np.flatnonzero(counts > 1).tolist():
        part = slice(int(starts[row]), int(starts[row] + counts[row]))
        box, cls = coords[part], categories[part]
        left = np.maximum(box[:, None, :2], box[None, :, :2])
        right = np.minimum(box[:, None, 2:], box[None, :, 2:])
        inter = np.clip(right - left, 0, None).prod(axis=2)
        area = np.clip(box[:, 2:] - box[:, :2], 0, None).prod(axis=1)
        union = area[:, None] + area[None, :] - inter
        overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        same = (cls[:, None] == cls[None, :]) & (overlap > threshold) & np.triu(np.ones_like(overlap, bool), 1)
        for later in range(len(box)):
            firsts = np.flatnonzero(same[:, later])
            if firsts.size:
                i = part.start + later
                found.append((row, int(index_in_row[i]), int(cls[later]), "duplicate", int(firsts[0])))
    return found
