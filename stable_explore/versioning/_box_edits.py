"""Box edits of a draft: relabel, drop and set the boxes of a row, replayed on the row's stored boxes.

Each edited row keeps its list of edits; the new cell is those edits applied, in order, to the row's
boxes in the dataset the chain started from. Box indexes mean positions among those boxes (a
dropped box keeps its index, so ``drop_boxes`` then ``relabel_boxes`` is ``relabel_boxes`` then
``drop_boxes``), or among the boxes a ``set`` gave.

Examples
--------
>>> from stable_explore import Boxes
>>> feature = Boxes(names=["cat", "dog"])
>>> stored = feature.encode_value({"bbox": [[0, 0, 1, 1], [2, 2, 1, 1]], "category": [0, 0]})
>>> after = apply_box_edits(feature, stored, [("drop", 0), ("relabel", 1, "dog")], row=3, column="objects")
>>> [(box["bbox"], box["category"]) for box in after]
[([2.0, 2.0, 1.0, 1.0], 1)]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from stable_explore.errors import ColumnNotFoundError, EncodingError, RowIndexError
from stable_explore.schema import Boxes

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["apply_box_edits", "boxes_column"]


def boxes_column(features: Features, column: str | None, action: str) -> tuple[str, Boxes]:
    """The Boxes column an edit names (or the first one), refusing a column of another type."""
    name = column or features.first_of(Boxes)
    feature = features.get(name) if name is not None else None
    if name is None or not isinstance(feature, Boxes):
        what = f"named {column!r}" if column else "in this dataset"
        msg = f"{action}: no Boxes column {what}; columns are {list(features)}"
        raise ColumnNotFoundError(msg)
    return name, feature


def apply_box_edits(
    feature: Boxes,
    stored: list[dict[str, object]] | None,
    edits: Iterable[tuple[object, ...]],
    *,
    row: int,
    column: str,
) -> list[dict[str, Any]]:
    """The stored boxes of a row after ``edits``; an edit naming no box raises an error naming row and box."""
    boxes = [dict(box) for box in stored or []]
    dropped: set[int] = set()
    for edit in edits:
        kind = edit[0]
        if kind == "set":
            try:
                boxes = [dict(box) for box in feature.encode_value(edit[1]) or []]
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=column, index=row) from None
            dropped = set()
            continue
        index = _box_index(edit[1], len(boxes), dropped, row=row, column=column)
        if kind == "drop":
            dropped.add(index)
        else:
            try:
                boxes[index]["category"] = feature.category_index(edit[2])
            except EncodingError as exc:
                msg = f"box {index}: {exc.reason}"
                raise EncodingError(msg, field=column, index=row) from None
    return [box for position, box in enumerate(boxes) if position not in dropped]


def _box_index(index: object, count: int, dropped: set[int], *, row: int, column: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        msg = f"row {row}, column {column!r}: no box {index!r} (the row has {count} boxes, 0 to {count - 1})"
        raise RowIndexError(msg)
    if index in dropped:
        msg = f"row {row}, column {column!r}: box {index} is dropped in this draft already"
        raise RowIndexError(msg)
    return index
