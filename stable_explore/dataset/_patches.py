"""``ds.patches(column)``: one row per box of a ``Boxes`` column, its crop of the image decoded when asked.

FiftyOne calls this a patches view: scroll every "person" box of a detection set as its own tile
and find the wrong ones. Making the view reads the ``Boxes`` column once (Arrow, numpy) and decodes
no image; a row's crop is cut when the row is read, each image decoded once for all the boxes of a
page that lie on it (a JPEG's EXIF turn applied first, so the box is cut from the image as shown,
the pixels COCO's and YOLO's boxes are in).

Examples
--------
>>> import tempfile, numpy as np, stable_explore as se
>>> features = se.Features(image=se.Image(), objects=se.Boxes(names=["cat", "dog"]))
>>> rows = [{"image": np.zeros((20, 30, 3), np.uint8),
...          "objects": [{"bbox": [1, 2, 10, 5], "category": "dog"}, {"bbox": [0, 0, 4, 4], "category": "cat"}]}]
>>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> patches = ds.patches("objects")
>>> len(patches), patches[0]["category"], patches[0]["image"].size
(2, 'dog', (10, 5))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import (
    ColumnNotFoundError,
    InvalidArgumentTypeError,
    InvalidOptionError,
    RowIndexError,
    SchemaError,
)
from stable_explore.schema import Boxes, Image
from stable_explore.schema.boxes import flat_boxes

if TYPE_CHECKING:
    import pandas as pd
    from PIL import Image as PILImage

    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["PAGE", "Patches", "patches_of"]

PAGE = 48
"""Patches decoded together when iterating: the browser's page."""

_FIELDS = ("row", "key", "box", "category", "score", "bbox", "id")
_IMAGES = ("thumbnail", "pil", "drop")


def patches_of(ds: CachedDataset, column: str = "objects", *, image: str | None = None) -> Patches:
    """The :class:`Patches` of ``ds``'s ``Boxes`` column ``column`` over its image column ``image``."""
    from stable_explore.dataset._export import row_keys

    feature = ds.features.get(column)
    if feature is None:
        msg = f"patches: no column {column!r}; the columns are {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    if not isinstance(feature, Boxes):
        boxes = [name for name, f in ds.features.items() if isinstance(f, Boxes)]
        msg = f"patches: column {column!r} is {feature!r}, not Boxes; the Boxes columns are {boxes}"
        raise SchemaError(msg)
    image = image if image is not None else ds.features.first_of(Image)
    if image is None or not isinstance(ds.features.get(image), Image):
        msg = f"patches: no Image column {'named ' + repr(image) if image else 'in this dataset'} to crop from"
        raise ColumnNotFoundError(msg)
    boxes, rows, index = flat_boxes(ds.arrow_column(column))
    names = pa.array(list(feature.names), pa.string())
    categories = boxes.field("category") if len(boxes) else pa.array([], pa.int64())
    table = pa.table(
        {
            "row": pa.array(rows, pa.int64()),
            "key": row_keys(ds).take(pa.array(rows)),
            "box": pa.array(index, pa.int64()),
            "category": names.take(categories) if len(boxes) else pa.array([], pa.string()),
            "score": boxes.field("score") if len(boxes) else pa.array([], pa.float32()),
            "bbox": boxes.field("bbox") if len(boxes) else pa.array([], pa.list_(pa.float32(), 4)),
            "id": boxes.field("id") if len(boxes) else pa.array([], pa.int64()),
        }
    )
    return Patches(ds, column, image, table)


class Patches:
    """One row per box of a ``Boxes`` column: its crop, box, class name, score and its image's row and key.

    Made by :meth:`CachedDataset.patches <stable_explore.dataset.CachedDataset.patches>`. A row is
    a dict: ``image`` (the crop, a PIL image cut when the row is read), ``row`` (the image's row in
    the dataset), ``key``, ``box`` (the box's index in its row: ``ds.drop_boxes({row: [box]})`` and
    ``ds.relabel_boxes`` take the two), ``category`` (the class name), ``score`` (None for a box
    without one), ``bbox`` (as stored, in the column's ``format``) and ``id``.

    ``len``, ``patches[i]``, slices and lists of positions (a view of those patches),
    iteration (a page of :data:`PAGE` crops decoded at a time), :meth:`filter`, :meth:`where`,
    :meth:`sort`, :meth:`to_pandas` and :attr:`table` (every field but the crops, as Arrow).
    """

    def __init__(self, ds: CachedDataset, column: str, image: str, table: pa.Table) -> None:
        self.dataset = ds
        self.column = column
        self.image_column = image
        self.table = table
        feature = ds.features[column]
        assert isinstance(feature, Boxes)
        self.feature: Boxes = feature

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def num_rows(self) -> int:
        """The number of patches (boxes), as ``len``."""
        return len(self)

    def __repr__(self) -> str:
        images = len(pc.unique(self.table.column("row"))) if len(self) else 0
        return f"Patches(column={self.column!r}, patches={len(self)}, images={images})"

    def _view(self, table: pa.Table) -> Patches:
        return Patches(self.dataset, self.column, self.image_column, table)

    def __getitem__(self, item: int | str | slice | Sequence[int] | np.ndarray) -> Any:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            position = int(item) + (len(self) if item < 0 else 0)
            if not 0 <= position < len(self):
                msg = f"patch {int(item)} is out of range: this view has {len(self)} patches"
                raise RowIndexError(msg)
            return self._rows([position])[0]
        if isinstance(item, slice):
            return self._view(self.table.take(pa.array(range(len(self))[item], pa.int64())))
        if isinstance(item, str):
            return self.table.column(item).to_pylist()
        return self.select(cast("Sequence[int] | np.ndarray", item))

    def select(self, indices: Sequence[int] | np.ndarray | range) -> Patches:
        """The view of the patches at ``indices`` (positions in this view), in that order."""
        positions = np.asarray(list(indices) if isinstance(indices, range) else indices, dtype=np.int64)
        if positions.ndim != 1:
            msg = f"select takes a list of patch positions, got an array of shape {positions.shape}"
            raise InvalidArgumentTypeError(msg)
        wrong = positions[(positions < -len(self)) | (positions >= len(self))]
        if wrong.size:
            msg = f"patch {int(wrong[0])} is out of range: this view has {len(self)} patches"
            raise RowIndexError(msg)
        return self._view(self.table.take(pa.array(positions % max(len(self), 1), pa.int64())))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self), PAGE):
            yield from self._rows(range(start, min(len(self), start + PAGE)))

    def _rows(self, positions: Sequence[int] | range) -> list[dict[str, Any]]:
        part = self.table.take(pa.array(list(positions), pa.int64()))
        rows = part.to_pylist()
        for row, crop in zip(rows, self._crops(part), strict=True):
            row["image"] = crop
        return [{"image": row.pop("image"), **row} for row in rows]

    def crops(self, *, thumbnail_size: int | None = None) -> list[PILImage.Image | None]:
        """Every patch's crop (PIL images; None where the image is missing), each image decoded once.

        With ``thumbnail_size``, each crop shrunk to fit that many pixels (a JPEG is decoded at the
        smallest scale that still gives the crop that size).
        """
        return self._crops(self.table, thumbnail_size)

    def _crops(self, part: pa.Table, thumbnail_size: int | None = None) -> list[PILImage.Image | None]:
        rows = part.column("row").to_numpy()
        if not len(rows):
            return []
        unique, inverse = np.unique(rows, return_inverse=True)
        images = self.dataset.select(unique).to_arrow(columns=[self.image_column]).column(0).to_pylist()
        bboxes = np.asarray(
            pc.list_flatten(part.column("bbox").combine_chunks()).to_numpy(zero_copy_only=False), dtype=np.float64
        ).reshape(-1, 4)
        corners = _corners(bboxes, self.feature.format)
        out: list[PILImage.Image | None] = [None] * len(rows)
        for which, data in enumerate(images):
            if data is None:
                continue
            mine = np.flatnonzero(inverse == which)
            out_of = _cut(data, corners[mine], normalized=self.feature.normalized, thumbnail_size=thumbnail_size)
            for position, crop in zip(mine.tolist(), out_of, strict=True):
                out[position] = crop
        return out

    def filter(self, function: Callable[[dict[str, Any]], bool]) -> Patches:
        """The patches whose row (every field but the crop) ``function`` keeps; no image is decoded.

        Examples
        --------
        ``patches.filter(lambda p: p["category"] == "person" and (p["score"] or 0) > 0.5)``
        """
        keep = [i for i, row in enumerate(self.table.to_pylist()) if function(row)]
        return self._view(self.table.take(pa.array(keep, pa.int64())))

    def where(
        self,
        *,
        cls: str | Sequence[str] | None = None,
        min_score: float | None = None,
        max_score: float | None = None,
        min_area: float | None = None,
        max_area: float | None = None,
        rows: Sequence[int] | None = None,
    ) -> Patches:
        """The patches of a class (or classes), a score range, an area range or some image rows, in Arrow.

        Areas are width x height in the column's units (px², or a fraction of the image for normalized
        boxes); a box without a score is dropped by ``min_score`` and ``max_score``.
        """
        mask = np.ones(len(self), dtype=bool)
        if cls is not None:
            wanted = [cls] if isinstance(cls, str) else list(cls)
            unknown = [c for c in wanted if c not in self.feature.names]
            if unknown:
                msg = f"where: no class {unknown} in column {self.column!r}; its classes are {list(self.feature.names)}"
                raise InvalidOptionError(msg)
            mask &= pc.is_in(self.table.column("category"), pa.array(wanted, pa.string())).to_numpy(
                zero_copy_only=False
            )
        if min_score is not None or max_score is not None:
            scores = self.table.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
            mask &= ~np.isnan(scores)
            mask &= scores >= (min_score if min_score is not None else -math.inf)
            mask &= scores <= (max_score if max_score is not None else math.inf)
        if min_area is not None or max_area is not None:
            boxes = np.asarray(
                pc.list_flatten(self.table.column("bbox").combine_chunks()).to_numpy(zero_copy_only=False),
                dtype=np.float64,
            ).reshape(-1, 4)
            corners = _corners(boxes, self.feature.format)
            area = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
            mask &= area >= (min_area if min_area is not None else -math.inf)
            mask &= area <= (max_area if max_area is not None else math.inf)
        if rows is not None:
            mask &= np.isin(self.table.column("row").to_numpy(), np.asarray(list(rows), dtype=np.int64))
        return self._view(self.table.filter(pa.array(mask)))

    def sort(self, column: str, *, reverse: bool = False) -> Patches:
        """The patches ordered by one field (``score``, ``category``, ``row``...; missing scores last)."""
        if column not in _FIELDS or column == "bbox":
            msg = f"sort: patches sort by one of {[f for f in _FIELDS if f != 'bbox']}, got {column!r}"
            raise InvalidOptionError(msg)
        order = pc.sort_indices(self.table, sort_keys=[(column, "descending" if reverse else "ascending")])
        return self._view(self.table.take(order))

    def browse(self, *, page_size: int = 48, thumb_size: int = 128, draft: Any = None) -> Any:
        """A browser of crop tiles, one per box: filter by class, score and area, relabel and delete boxes.

        The shard browser (:class:`~stable_explore.widgets._patches.PatchesBrowser`) over these boxes:
        the class chips, value filters, sort and histograms work on boxes; "relabel" and "drop
        flagged" make pending box edits of the source dataset (``draft``: go on from a draft of it),
        and "save version" writes them as its new version. Needs the ``lab`` extra (anywidget).

        Examples
        --------
        ``ds.patches("objects").browse()``; then ``browser.draft`` and ``browser.save("fix persons")``.
        """
        from stable_explore.widgets._patches import PatchesBrowser

        return PatchesBrowser(self, draft=draft, page_size=page_size, thumb_size=thumb_size)

    def _repr_html_(self) -> str:
        from stable_explore.display.card import patches_strip

        return patches_strip(self)

    def to_pandas(self, images: str = "thumbnail", *, thumbnail_size: int = 128) -> pd.DataFrame:
        """The patches as a DataFrame, one row per box, indexed by patch number.

        Parameters
        ----------
        images:
            ``"thumbnail"`` (default: each crop shrunk to ``thumbnail_size``), ``"pil"`` (each crop
            whole) or ``"drop"`` (no crops, nothing decoded). ``stable_explore.display.show(df)`` draws
            the crops; slice the view first (``patches[:48]``) to decode only a page.
        thumbnail_size:
            The largest side of a thumbnail, in pixels.
        """
        if images not in _IMAGES:
            msg = f"to_pandas: images must be one of {list(_IMAGES)}, got {images!r}"
            raise InvalidOptionError(msg)
        frame = self.table.to_pandas()
        frame.index.name = "patch"
        if images != "drop":
            crops = self._crops(self.table, thumbnail_size if images == "thumbnail" else None)
            frame.insert(0, "image", crops)
        return frame


def _corners(bbox: np.ndarray, box_format: str) -> np.ndarray:
    """(N, 4) boxes in ``box_format`` as corners x0, y0, x1, y1 (same units)."""
    a, b, c, d = bbox[:, 0], bbox[:, 1], bbox[:, 2], bbox[:, 3]
    if box_format == "xyxy":
        return np.array(bbox, dtype=np.float64)
    if box_format == "cxcywh":
        return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    return np.stack([a, b, a + c, b + d], axis=1)


def _cut(data: bytes, corners: np.ndarray, *, normalized: bool, thumbnail_size: int | None) -> list[PILImage.Image]:
    """The crops of one image's boxes (corners), the image decoded once and turned as its EXIF says."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    from stable_explore.schema.image_codec import decode_image_bytes
    from stable_explore.schema.image_header import jpeg_orientation

    image = decode_image_bytes(data)
    turned = image.format == "JPEG" and jpeg_orientation(data) != 1
    shown = image.size[::-1] if turned and jpeg_orientation(data) in (5, 6, 7, 8) else image.size
    boxes = corners * np.array([*shown, *shown], dtype=np.float64) if normalized else corners.copy()
    scale = 1.0
    if thumbnail_size is not None and image.format == "JPEG" and not turned and len(boxes):
        smallest = float(np.min(np.maximum(boxes[:, 2:] - boxes[:, :2], 1).max(axis=1)))
        reduce = max(1, min(8, int(smallest // max(thumbnail_size, 1))))  # JPEG decodes at 1/2, 1/4, 1/8 scale
        if reduce > 1:
            image.draft(image.mode, (math.ceil(shown[0] / reduce), math.ceil(shown[1] / reduce)))
            scale = shown[0] / image.size[0]
    if turned:
        image = ImageOps.exif_transpose(image) or image
    width, height = image.size
    boxes /= scale
    crops = []
    for x0, y0, x1, y1 in boxes.tolist():
        left = min(max(0, math.floor(x0)), width - 1)
        top = min(max(0, math.floor(y0)), height - 1)
        right = max(left + 1, min(width, math.ceil(x1)))
        bottom = max(top + 1, min(height, math.ceil(y1)))
        crop = image.crop((left, top, right, bottom))
        if thumbnail_size is not None:
            crop.thumbnail((thumbnail_size, thumbnail_size), PILImage.Resampling.BILINEAR)
        crops.append(crop)
    image.close()
    return crops
