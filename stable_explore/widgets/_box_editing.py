"""Box edits from the shard browser's detail pane, as methods of :class:`ShardBrowser` (a mixin).

A click on a box selects it; the page then asks to relabel it, to delete it, or (dragging a rectangle)
to add one. Each becomes a pending edit of the browser's draft through the dataset's own box edits,
:meth:`Draft.relabel_boxes`, :meth:`Draft.drop_boxes` and :meth:`Draft.set_boxes`, so "save version"
writes them like any other browser edit. The page names a box by its place among the boxes it shows
(the row's boxes with the pending edits applied); :func:`edit_indexes` turns that into the index the
draft's edits use (a dropped box keeps its index there).

Examples
--------
>>> edit_indexes((("drop", 1),), 3)
[0, 2]
>>> edit_indexes((("set", []),), 3) is None
True
>>> from_corners([0.1, 0.2, 0.5, 0.6], "xywh", (200, 100))
[20.0, 20.0, 80.0, 40.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.schema import Boxes
from stable_explore.versioning.edits import Draft
from stable_explore.widgets._members import BrowserMembers

__all__ = ["BoxEditMixin", "edit_indexes", "from_corners"]


def edit_indexes(ops: Sequence[tuple[Any, ...]], stored: int) -> list[int] | None:
    """The draft's index of each box shown, from a row's pending box edits ``ops`` and its ``stored`` box count.

    None when the row's boxes were replaced (``set``): edits of that row then replace them again.
    """
    if any(op[0] == "set" for op in ops):
        return None
    dropped = {int(op[1]) for op in ops if op[0] == "drop"}
    return [i for i in range(stored) if i not in dropped]


def from_corners(corners: Sequence[float], box_format: str, size: tuple[int, int] | None) -> list[float]:
    """A box given as corners x0, y0, x1, y1 in fractions of the image, in a column's ``format`` and units.

    ``size``: the image's width and height for a pixel column; None for a normalized one.
    """
    x0, x1 = sorted((float(corners[0]), float(corners[2])))
    y0, y1 = sorted((float(corners[1]), float(corners[3])))
    x0, y0, x1, y1 = (min(1.0, max(0.0, v)) for v in (x0, y0, x1, y1))
    if size is not None:
        x0, x1 = x0 * size[0], x1 * size[0]
        y0, y1 = y0 * size[1], y1 * size[1]
    if box_format == "xyxy":
        box = [x0, y0, x1, y1]
    elif box_format == "cxcywh":
        box = [(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0]
    else:
        box = [x0, y0, x1 - x0, y1 - y0]
    return [round(v, 2 if size is not None else 5) for v in box]


class BoxEditMixin(BrowserMembers):
    """Relabel, delete and add boxes of one row from the detail pane; pending until ``save``."""

    def _boxes_feature(self, column: str) -> Boxes:
        feature = self._state.opened.ds.features.get(column)
        if not isinstance(feature, Boxes):
            msg = f"{column!r} is not a Boxes column; Boxes columns: {self._boxes_columns()}"
            raise InvalidOptionError(msg)
        return feature

    def _boxes_columns(self) -> list[str]:
        return [n for n, f in self._state.opened.ds.features.items() if isinstance(f, Boxes)]

    def boxes_now(self, row: int, column: str) -> list[dict[str, Any]]:
        """The stored boxes of ``row`` in ``column`` as the page shows them: with the pending edits applied."""
        self._boxes_feature(column)
        ds = self._state.opened.ds
        row = int(row)
        if not 0 <= row < len(ds):
            msg = f"row {row} is out of range for {len(ds)} rows of {ds.ref}"
            raise RowIndexError(msg)
        draft = self._state.draft
        if draft is not None and (row, column) in draft.pending_edits.values:
            return [dict(box) for box in draft.pending_edits.values[(row, column)] or []]
        return [dict(box) for box in ds.select([row]).arrow_column(column).to_pylist()[0] or []]

    def _box_at(self, row: int, column: str, position: int) -> tuple[Draft, list[int] | None, list[dict[str, Any]]]:
        """The draft to extend, the draft's index of each box shown (None: the row's boxes were set), the boxes."""
        ds = self._state.opened.ds
        shown = self.boxes_now(row, column)
        if not 0 <= int(position) < len(shown):
            msg = f"row {row}, column {column!r}: no box {position} (the row shows {len(shown)} boxes)"
            raise RowIndexError(msg)
        draft = self._state.draft or Draft(ds)
        ops = draft.pending_edits.box_edits.get((int(row), column), ())
        stored = ds.select([int(row)]).arrow_column(column).to_pylist()[0] or []
        return draft, edit_indexes(ops, len(stored)), shown

    def relabel_box(self, row: int, column: str, position: int, label: str | int) -> None:
        """Give the ``position``-th box the page shows of ``row`` in ``column`` the class ``label`` (pending).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> boxes = se.Boxes(names=["cat", "dog"])
        >>> ds = se.build([{"objects": [{"bbox": [0, 0, 2, 2], "category": "cat"}]}], se.Features(objects=boxes),
        ...               name="one", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse()
        >>> browser.relabel_box(0, "objects", 0, "dog")
        >>> browser.save("a dog")[0]["objects"]["category"]
        [1]
        """
        feature = self._boxes_feature(column)
        draft, indexes, shown = self._box_at(row, column, position)
        category = feature.category_index(label)
        if indexes is None:
            shown[int(position)]["category"] = category
            self._set_draft(draft.set_boxes(int(row), shown, column=column))
        else:
            self._set_draft(draft.relabel_boxes({int(row): {indexes[int(position)]: category}}, column=column))
        self.status = f"row {row}: {column} box {position} → {feature.names[category]} (pending)"
        self._after_box_edit(row)

    def drop_box(self, row: int, column: str, position: int) -> None:
        """Delete the ``position``-th box the page shows of ``row`` in ``column`` (pending)."""
        draft, indexes, shown = self._box_at(row, column, position)
        if indexes is None:
            del shown[int(position)]
            self._set_draft(draft.set_boxes(int(row), shown, column=column))
        else:
            self._set_draft(draft.drop_boxes({int(row): [indexes[int(position)]]}, column=column))
        self.status = f"row {row}: {column} box {position} deleted (pending)"
        self._after_box_edit(row)

    def add_box(self, row: int, column: str, corners: Sequence[float], label: str | int) -> None:
        """Add a box of class ``label`` to ``row`` in ``column`` (pending).

        ``corners``: x0, y0, x1, y1 as fractions of the image; stored in the column's format and units.
        """
        feature = self._boxes_feature(column)
        size = None
        if not feature.normalized:
            size = self._image_sizes(np.array([int(row)], dtype=np.int64))[0]
            if size is None:
                msg = f"row {row}: its image's size cannot be read, so a box in pixels cannot be placed"
                raise InvalidOptionError(msg)
        if len(corners) != 4 or min(abs(corners[2] - corners[0]), abs(corners[3] - corners[1])) <= 0:
            msg = f"row {row}: a box needs four corners x0, y0, x1, y1 with a width and a height, got {list(corners)}"
            raise InvalidOptionError(msg)
        box = from_corners(corners, feature.format, size)
        ds = self._state.opened.ds
        shown = self.boxes_now(row, column)
        shown.append({"bbox": box, "category": feature.category_index(label)})
        self._set_draft((self._state.draft or Draft(ds)).set_boxes(int(row), shown, column=column))
        self.status = f"row {row}: a {feature.names[feature.category_index(label)]} box added to {column} (pending)"
        self._after_box_edit(row)

    def _after_box_edit(self, row: int) -> None:
        """The page redraws the row's boxes: its thumbnail now, its detail from the reply."""
        self.send_page()

    def pending_boxes(self, rows: np.ndarray, column: str) -> dict[int, list[dict[str, Any]]]:
        """Of ``rows`` (places in a page), those whose ``column`` has pending box edits: place -> boxes after."""
        draft = self._state.draft
        if draft is None:
            return {}
        values = draft.pending_edits.values
        out = {}
        for place, row in enumerate(np.asarray(rows, dtype=np.int64).tolist()):
            if (row, column) in values:
                out[place] = cast("list[dict[str, Any]]", values[(row, column)] or [])
        return out
