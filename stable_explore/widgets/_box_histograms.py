"""Histograms of a ``Boxes`` column box by box, for the shard browser's histogram panel (a mixin).

Per Boxes column, over the rows the filters keep: each box's area (width x height, stored units),
aspect (width / height) and score (predictions), the boxes per image, and the boxes per class. The
bins span the whole column (they stay put while filters change); a click on a bar keeps the images
with a box in it, as :meth:`where_boxes` does, added to the column's box filter (a class, then an
area: "a box of dog with an area in that bar").

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore.schema import Boxes
>>> boxes = Boxes(names=["cat", "dog"])
>>> rows = [[{"bbox": [0, 0, 4, 2], "category": "dog"}], [{"bbox": [0, 0, 10, 10], "category": "cat"}], []]
>>> column = pa.array([boxes.encode_value(r) for r in rows], type=boxes.arrow_type)
>>> made = box_histograms(column, boxes, None, bins=2)
>>> made["area"]["counts"], made["aspect"]["edges"], made["count"]["counts"], made["classes"]
([1, 1], [1.0, 1.5, 2.0], [1, 2], [1, 1])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import InvalidOptionError
from stable_explore.schema import Boxes
from stable_explore.widgets._filtering import FilterMixin
from stable_explore.widgets._filters import BOX_CONDITIONS, HISTOGRAM_BINS, _bin_counts, _floats, bin_edges, box_sizes

__all__ = ["BOX_MEASURES", "BoxHistogramMixin", "box_histograms"]

BOX_MEASURES = ("area", "aspect", "score", "count")


def _binned(values: np.ndarray, kept: np.ndarray, bins: int) -> dict[str, Any] | None:
    """Counts of ``values[kept]`` in equal bins over the finite range of all ``values`` (None: no finite value)."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return None
    lo, hi = float(finite.min()), float(finite.max())
    edges = bin_edges(lo, hi, bins)
    counts = _bin_counts(values[kept], np.asarray(edges, dtype=np.float64))
    return {"edges": [round(e, 6) for e in edges], "counts": [int(c) for c in counts]}


def box_histograms(
    column: pa.Array | pa.ChunkedArray, feature: Boxes, rows: np.ndarray | None, bins: int = HISTOGRAM_BINS
) -> dict[str, Any]:
    """The histograms of one Boxes column over ``rows`` (None: every row); see the module.

    ``{"area" | "aspect" | "score" | "count": {"edges", "counts"}, "classes": [count per class]}``; a measure
    no box has (scores, in ground truth) is left out.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    n = len(column)
    kept_rows = np.ones(n, dtype=bool)
    if rows is not None:
        kept_rows[:] = False
        kept_rows[np.asarray(rows, dtype=np.int64)] = True
    boxes = pc.list_flatten(column)
    parents = np.asarray(pc.list_parent_indices(column).to_numpy(zero_copy_only=False), dtype=np.int64)
    kept = kept_rows[parents]
    width, height = box_sizes(boxes, feature.format)
    with np.errstate(divide="ignore", invalid="ignore"):
        aspect = width / height
    scores = _floats(boxes.field("score")) if len(boxes) else np.zeros(0)
    per_image = np.bincount(parents, minlength=n).astype(np.float64)
    out: dict[str, Any] = {}
    for name, values, where in (
        ("area", width * height, kept),
        ("aspect", aspect, kept),
        ("score", scores, kept),
        ("count", per_image, kept_rows),
    ):
        made = _binned(values, where, bins)
        if made is not None:
            out[name] = made
    classes = np.zeros(0, dtype=np.int64)
    if len(boxes):
        classes = np.asarray(boxes.field("category").to_numpy(zero_copy_only=False), dtype=np.int64)
    counted = np.bincount(classes[kept], minlength=len(feature.names))
    out["classes"] = [int(c) for c in counted[: len(feature.names)]]
    return out


def bin_conditions(what: str, edges: list[float], index: int) -> dict[str, Any]:
    """The box filter conditions that keep exactly bar ``index`` of measure ``what`` (bars half-open, the last closed).

    Examples
    --------
    >>> bin_conditions("area", [0.0, 10.0, 20.0], 0)
    {'min_area': 0.0, 'max_area': 9.999999999999998}
    >>> bin_conditions("count", [0.0, 1.5, 3.0], 1)
    {'min_count': 2, 'max_count': 3}
    """
    if not 0 <= index < len(edges) - 1:
        msg = f"no bar {index} in a histogram of {len(edges) - 1} bars"
        raise InvalidOptionError(msg)
    lo, hi = float(edges[index]), float(edges[index + 1])
    last = index == len(edges) - 2
    if what == "count":
        return {"min_count": math.ceil(lo), "max_count": math.floor(hi) if last else math.ceil(hi) - 1}
    return {f"min_{what}": lo, f"max_{what}": hi if last else float(np.nextafter(hi, -np.inf))}


class BoxHistogramMixin(FilterMixin):  # a bar's click is a where_boxes filter
    """The histogram panel's Boxes histograms, and a click on one of their bars."""

    def _box_histograms(self, rows: range | np.ndarray) -> dict[str, Any]:
        """Each Boxes column's histograms over the rows kept."""
        opened = self._state.opened
        if not len(opened.ds):
            return {}
        out = {}
        kept = None if isinstance(rows, range) and len(rows) == len(opened.ds) else np.asarray(rows, dtype=np.int64)
        for name, feature in opened.ds.features.items():
            if isinstance(feature, Boxes):
                out[name] = box_histograms(opened.value_column(name), feature, kept)
        return out

    def where_box_bin(self, column: str, what: str, index: int) -> None:
        """Keep the images with a box in bar ``index`` of ``column``'s ``what`` histogram (a click on that bar).

        ``what``: ``"area"``, ``"aspect"``, ``"score"``, ``"count"`` (boxes per image) or ``"classes"`` (bar
        ``index`` is the class). A box measure's or a class's bar joins the column's box filter (replacing
        one of the same measure): the images with a box that is both. A "boxes per image" bar, which counts
        every box of an image, replaces the column's box filter.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> boxes = se.Boxes(names=["cat", "dog"])
        >>> rows = [{"b": [{"bbox": [0, 0, w, 4], "category": c}]} for w, c in ((4, "dog"), (40, "dog"), (40, "cat"))]
        >>> ds = se.build(rows, se.Features(b=boxes), name="b", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.where_box_bin("b", "classes", 1)
        >>> browser.where_box_bin("b", "aspect", 15)  # the widest
        >>> browser.page_rows().tolist(), browser.field_filters[0]["class_name"]
        ([1], 'dog')
        """
        made = self.box_histograms.get(column)
        if made is None:
            msg = f"no box histograms of {column!r}; the Boxes columns with them are {sorted(self.box_histograms)}"
            raise InvalidOptionError(msg)
        spec: dict[str, Any] = next((f for f in self.field_filters if f.get("column") == column and f.get("boxes")), {})
        conditions = {k: spec[k] for k in BOX_CONDITIONS if k in spec and not k.endswith("_count")}
        if what == "classes":
            if not 0 <= int(index) < len(made["classes"]):
                msg = f"{column!r} has {len(made['classes'])} classes, not a class {index}"
                raise InvalidOptionError(msg)
            conditions["class"] = int(index)
        elif what == "count" and what in made:
            conditions = bin_conditions(what, made[what]["edges"], int(index))
        elif what in made:
            for key in (f"min_{what}", f"max_{what}"):
                conditions.pop(key, None)
            conditions.update(bin_conditions(what, made[what]["edges"], int(index)))
        else:
            msg = f"no {what!r} histogram of {column!r}; there are {[k for k in made if k != 'classes']} and 'classes'"
            raise InvalidOptionError(msg)
        cls = conditions.pop("class", None)
        self.where_boxes(column, cls=cls, **conditions)
