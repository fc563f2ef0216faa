"""What the shard browser draws over a thumbnail: each row's boxes, per label column, as fractions of its image.

The kernel sends, with each page (and with the detail pane), every cell's boxes of every ``Boxes``
column as ``[x0, y0, x1, y1, class, score]`` (corners as fractions 0..1 of the stored image's width
and height, whatever the column's ``format`` and ``normalized``; ``score`` None where a box has none),
and the stored image's size, so the page fits them to whatever size it draws the image at
(``static/lib/boxes.js`` letterboxes them like the ``<img>``'s ``object-fit: contain``).

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore.schema import Boxes
>>> feature = Boxes(names=["cat", "dog"], format="xywh")
>>> column = pa.array([feature.encode_value([{"bbox": [10, 20, 30, 40], "category": "dog", "score": 0.5}])],
...                   type=feature.arrow_type)
>>> boxes_per_row(column, feature, [(100, 80)])
[[[0.1, 0.25, 0.4, 0.75, 1, 0.5]]]
"""

from __future__ import annotations

import contextlib
import io
from typing import TYPE_CHECKING, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.schema import Array3D, Boxes, Keypoints, Mask
from stable_explore.schema.image_header import displayed_size

if TYPE_CHECKING:
    from collections.abc import Collection

    from stable_explore.schema import Features
    from stable_explore.widgets._messages import BoxRow, LabelField, MaskImage

__all__ = [
    "BACKGROUND_NAMES",
    "boxes_per_row",
    "image_size",
    "is_prediction_column",
    "keypoints_per_row",
    "label_fields",
    "mask_overlay",
]

BACKGROUND_NAMES = frozenset({"background", "bg", "_background_", "void", "unlabeled", "unlabelled"})

Size = tuple[int, int]


def is_prediction_column(name: str) -> bool:
    """Whether a ``Boxes`` column's name says it holds a model's boxes: it has "pred" or "detection" in it.

    Examples
    --------
    >>> [is_prediction_column(n) for n in ("objects", "predictions", "yolo_preds", "detections")]
    [False, True, True, True]
    """
    lowered = name.lower()
    return "pred" in lowered or "detection" in lowered


def label_fields(features: Features, predictions: Collection[str] | None = None) -> list[LabelField]:
    """The columns drawn over the images, in schema order: ``{"name", "kind", "names"}`` each.

    A ``Boxes`` column's entry has a ``role`` too: ``"predictions"`` for the columns named in ``predictions``
    (default: those :func:`is_prediction_column` picks), ``"truth"`` for the others. The page dashes the
    predictions, shows their scores and applies its score threshold to them only.

    Examples
    --------
    >>> from stable_explore.schema import Features, Image, Boxes
    >>> label_fields(Features(image=Image(), objects=Boxes(names=["cat"])))
    [{'name': 'objects', 'kind': 'boxes', 'names': ['cat'], 'role': 'truth'}]

    A ``Mask`` column's entry says too whether its class 0 is the background (left undrawn).
    """
    fields: list[LabelField] = []
    for name, feature in features.items():
        if isinstance(feature, Boxes):
            predicted = name in predictions if predictions is not None else is_prediction_column(name)
            role: Literal["predictions", "truth"] = "predictions" if predicted else "truth"
            fields.append({"name": name, "kind": "boxes", "names": list(feature.names), "role": role})
        elif isinstance(feature, Mask):
            names = list(feature.names)
            background = bool(names) and names[0].strip().lower() in BACKGROUND_NAMES
            fields.append({"name": name, "kind": "mask", "names": names, "background": background})
        elif isinstance(feature, Keypoints):
            skeleton = [list(pair) for pair in feature.skeleton]
            fields.append({"name": name, "kind": "keypoints", "names": list(feature.names), "skeleton": skeleton})
    return fields


def keypoints_per_row(
    column: pa.Array | pa.ChunkedArray, feature: Keypoints, sizes: list[Size | None]
) -> list[list[list[float]] | None]:
    """Each row's instances as ``[x0, y0, v0, x1, y1, v1, ...]``, points as fractions of its image (see module).

    A row without keypoints, or whose image size is unknown, gives None.

    Examples
    --------
    >>> points = Keypoints(names=["head", "tail"], skeleton=[(0, 1)])
    >>> column = pa.array([points.encode_value([[[10, 20, 2], [30, 40, 1]]])], type=points.arrow_type)
    >>> keypoints_per_row(column, points, [(100, 80)])
    [[[0.1, 0.25, 2.0, 0.3, 0.5, 1.0]]]
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    per_point = len(feature.names) * 3
    out: list[list[list[float]] | None] = []
    valid = column.is_valid().to_pylist()
    offsets = np.asarray(column.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    instances = column.values
    flat = pc.list_flatten(pc.list_flatten(instances)) if len(instances) else pa.array([], pa.float32())
    values = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, per_point)
    values = values[: len(instances)]
    for i, size in enumerate(sizes):
        if not valid[i] or size is None:
            out.append(None)
            continue
        if offsets[i + 1] == offsets[i]:  # a row with an empty list of instances: nothing to draw
            out.append([])
            continue
        rows = values[int(offsets[i]) : int(offsets[i + 1])].reshape(-1, len(feature.names), 3).copy()
        rows[:, :, 0] /= size[0]
        rows[:, :, 1] /= size[1]
        out.append(np.round(rows, 5).reshape(len(rows), -1).tolist())
    return out


def mask_overlay(value: bytes | None, size: int) -> MaskImage | None:
    """A stored mask made small for drawing: an 8-bit grey PNG of class indexes fitting ``size`` px, and its classes.

    Shrunk by nearest neighbour (a pixel keeps a class, never a mix of two); ``classes``: the class
    indexes it shows, for the legend. None for no mask, or one of more than 256 classes.

    Examples
    --------
    >>> import numpy as np
    >>> from stable_explore.schema import Mask
    >>> two = np.kron(np.eye(2, dtype=np.uint8), np.ones((50, 100), np.uint8))  # 200 x 100, classes 0 and 1
    >>> stored = Mask(names=["bg", "cat"]).encode_value(two)
    >>> small = mask_overlay(stored, 64)
    >>> small["size"], small["classes"]
    ([64, 32], [0, 1])
    """
    if value is None:
        return None
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(value)) as image:
            array = np.asarray(image)
    except Exception:  # noqa: BLE001 - an unreadable mask is not drawn; the image still shows
        return None
    if array.ndim != 2 or not array.size or int(array.max()) > 255:
        return None
    height, width = array.shape
    scale = min(1.0, size / max(width, height))
    shown = PILImage.fromarray(array.astype(np.uint8), mode="L")
    if scale < 1:
        shown = shown.resize((max(1, round(width * scale)), max(1, round(height * scale))), PILImage.Resampling.NEAREST)
    buffer = io.BytesIO()
    shown.save(buffer, format="PNG", optimize=False)
    classes = np.unique(np.asarray(shown)).tolist()
    return {"png": buffer.getvalue(), "size": list(shown.size), "classes": classes}


def image_size(value: bytes | None, feature: object) -> Size | None:
    """Width and height of a stored image as shown, read from its header only (None when it cannot be read).

    A JPEG with an EXIF turn (a photo taken sideways) is shown turned by the browser, its thumbnail and
    COCO alike, so its boxes are drawn over the turned size.
    """
    if value is None:
        return None
    if isinstance(feature, Array3D):
        return int(feature.shape[1]), int(feature.shape[0])
    from PIL import Image as PILImage

    with contextlib.suppress(Exception):  # a header this reader does not know: PIL's header below
        return displayed_size(bytes(value))
    try:
        with PILImage.open(io.BytesIO(value)) as image:
            width, height = image.size
    except Exception:  # noqa: BLE001 - an unreadable image has no boxes drawn, the page still shows
        return None
    return int(width), int(height)


def _corners(bbox: np.ndarray, box_format: str) -> np.ndarray:
    """(N, 4) boxes in ``box_format`` as (N, 4) corners x0, y0, x1, y1 (same units)."""
    a, b, c, d = bbox[:, 0], bbox[:, 1], bbox[:, 2], bbox[:, 3]
    if box_format == "xyxy":
        return np.stack([a, b, c, d], axis=1)
    if box_format == "cxcywh":
        return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    return np.stack([a, b, a + c, b + d], axis=1)


def boxes_per_row(
    column: pa.Array | pa.ChunkedArray, feature: Boxes, sizes: list[Size | None]
) -> list[list[BoxRow] | None]:
    """Each row's boxes as ``[x0, y0, x1, y1, class, score]``, corners as fractions of its image (see module).

    ``column``: the rows' stored values of a ``Boxes`` column (Arrow); ``sizes``: each row's image size
    (width, height). A row without boxes (None) gives None; pixel boxes of a row whose image size is
    unknown give None too (nothing drawn rather than boxes drawn at a wrong scale).
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    offsets = np.asarray(column.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    boxes = column.values.slice(start, stop - start)
    offsets = offsets - start
    flat = pc.list_flatten(boxes.field("bbox")) if len(boxes) else pa.array([], pa.float32())
    corners = _corners(np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, 4), feature.format)
    classes = np.asarray(boxes.field("category").to_numpy(zero_copy_only=False), dtype=np.int64).tolist()
    scores = boxes.field("score").to_pylist()
    valid = column.is_valid().to_pylist()
    out: list[list[BoxRow] | None] = []
    for i, size in enumerate(sizes):
        if not valid[i] or (size is None and not feature.normalized):
            out.append(None)
            continue
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        scale = np.ones(4) if feature.normalized or size is None else np.array([size[0], size[1]] * 2, dtype=np.float64)
        fractions = np.round(corners[lo:hi] / scale, 5).tolist()
        out.append(
            [
                [*box, classes[j], None if scores[j] is None else round(float(scores[j]), 4)]
                for box, j in zip(fractions, range(lo, hi), strict=True)
            ]
        )
    return out
