"""The browser's value filters, sort and histograms, as methods of :class:`ShardBrowser` (a mixin).

The computing is in :mod:`stable_explore.widgets._filters` (Arrow over whole columns); this holds what
the browser exposes: ``where``, ``clear_filters``, ``sort``, ``filter`` and ``view``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.widgets._filters import (
    BOX_CONDITIONS,
    HISTOGRAM_BINS,
    bin_edges,
    bin_filter,
    histogram,
    make_filter,
    value_range,
)
from stable_explore.widgets._members import BrowserMembers

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["FilterMixin"]


class FilterMixin(BrowserMembers):
    """Value filters, sort and histograms of the shard browser."""

    def _field_info(self, *, ranges: bool = True, derived: bool = True) -> list[dict[str, Any]]:
        """The columns that filter and sort by value, with the range of each number column (for its histogram).

        ``ranges=False`` leaves the ranges out (a bucket's columns are read after the first page);
        ``derived=False`` those of the columns a video's probe gives (each video is probed after the first page;
        see :func:`~stable_explore.widgets._video.derived_ready`).
        """
        from stable_explore.widgets._video import derived_of, derived_ready

        opened = self._state.opened
        info = []
        for name, kind in opened.kinds.items():
            entry: dict[str, Any] = {"name": name, "kind": kind}
            later = derived_of(name, opened.ds.features) is not None and not (derived and derived_ready(opened, name))
            if ranges and not later and kind == "number" and len(opened.ds):
                bounds = value_range(opened.value_column(name))
                if bounds is not None:
                    entry["min"], entry["max"] = bounds
                    entry["edges"] = bin_edges(*bounds, HISTOGRAM_BINS)  # the bins' edges, for their tooltips
            info.append(entry)
        from stable_explore.schema import Boxes

        for name, feature in opened.ds.features.items():  # filtered box by box (where_boxes), never sorted
            if isinstance(feature, Boxes):
                info.append(
                    {"name": name, "kind": "boxes", "names": list(feature.names), "normalized": feature.normalized}
                )
        return info

    @property
    def view(self) -> CachedDataset:
        """The rows the browser shows (every filter applied, in the order shown), as a view of the dataset."""
        rows = self._state.rows
        ds = self._state.opened.ds
        return ds[rows.start : rows.stop] if isinstance(rows, range) else ds.select(rows)

    @property
    def filter(self) -> dict[str, Any]:
        """The filter state, as plain values: shard, labels (by name), search text, value filters and sort.

        ``browser.view`` is the dataset these select. Set them with ``browser.shard``,
        ``browser.label_filter``, ``browser.search``, :meth:`where` and :meth:`sort`.
        """
        names = list(self.class_names)
        return {
            "shard": self.shard if self.shard >= 0 else None,
            "labels": [names[i] if 0 <= i < len(names) else i for i in self.label_filter],
            "search": self.search.strip() or None,
            "fields": [dict(f) for f in self.field_filters],
            "sort": (self.sort_by, "descending" if self.sort_desc else "ascending") if self.sort_by else None,
            "subset": self.subset or None,
            "rows": self.num_rows,
        }

    def where(
        self,
        column: str,
        *,
        min: float | None = None,
        max: float | None = None,
        equals: Any = None,
        contains: str | None = None,
        below: float | None = None,
    ) -> None:
        """Keep rows whose ``column`` is in [min, max], equals a value, or (strings) contains a text.

        ``below`` is an exclusive upper bound (what a click on a histogram's bar sets, with ``min``).
        Replaces any earlier filter on that column; ``where(column)`` with nothing else removes it.
        Computed in Arrow over the whole column.
        """
        others = [f for f in self.field_filters if f.get("column") != column]
        if min is None and max is None and below is None and equals is None and contains in (None, ""):
            if column not in self._state.opened.kinds:
                make_filter(self._state.opened.kinds, column, equals=0)  # raises the error that names the columns
            self.field_filters = others
            return
        spec = make_filter(
            self._state.opened.kinds, column, min=min, max=max, below=below, equals=equals, contains=contains
        )
        self.field_filters = [*others, spec]

    def where_boxes(
        self,
        column: str,
        *,
        cls: int | str | None = None,
        min_area: float | None = None,
        max_area: float | None = None,
        min_aspect: float | None = None,
        max_aspect: float | None = None,
        min_score: float | None = None,
        max_score: float | None = None,
        min_count: int | None = None,
        max_count: int | None = None,
    ) -> None:
        """Keep the images with boxes of ``column`` (a ``Boxes`` column) that match: class, area, score, how many.

        ``cls`` is a class name or index; the area is width x height in the stored units (px², or a
        fraction of the image for normalized boxes), the aspect width / height; a row is kept when at
        least ``min_count`` (default 1) and at most ``max_count`` of its boxes match every condition given.
        ``where_boxes(column)`` with nothing else removes the column's box filter.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> boxes = se.Boxes(names=["cat", "dog"])
        >>> rows = [{"b": [{"bbox": [0, 0, w, w], "category": "dog"}]} for w in (4, 40)]
        >>> ds = se.build(rows, se.Features(b=boxes), name="b", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.where_boxes("b", cls="dog", max_area=100)  # "images with a dog smaller than 10 x 10 px"
        >>> browser.page_rows().tolist(), browser.field_filters[0]["class_name"]
        ([0], 'dog')
        """
        from stable_explore.schema import Boxes

        ds = self._state.opened.ds
        feature = ds.features.get(column)
        if not isinstance(feature, Boxes):
            found = [n for n, f in ds.features.items() if isinstance(f, Boxes)]
            msg = f"no Boxes column {column!r} to filter boxes by; the Boxes columns are {found}"
            raise InvalidOptionError(msg)
        others = [f for f in self.field_filters if not (f.get("column") == column and f.get("boxes"))]
        given = {
            "min_area": min_area,
            "max_area": max_area,
            "min_aspect": min_aspect,
            "max_aspect": max_aspect,
            "min_score": min_score,
            "max_score": max_score,
            "min_count": min_count,
            "max_count": max_count,
        }
        spec: dict[str, Any] = {"column": column, "boxes": True}
        if cls is not None and cls != "":
            index = feature.category_index(cls)
            spec["class"], spec["class_name"] = index, feature.names[index]
        for name, value in given.items():
            if value is not None:
                spec[name] = int(value) if name.endswith("count") else float(value)
        if not any(name in spec for name in BOX_CONDITIONS):
            self.field_filters = others
            return
        self.field_filters = [*others, spec]

    def show_rows(self, rows: Sequence[int] | np.ndarray | None, title: str = "") -> None:
        """Show only these rows (positions in the browsed dataset), in the order given; ``None`` shows all again.

        For panels beside the browser (an embedding map's lasso, a list of issues): the grid shows
        exactly these rows (the shard, label, search and value filters are cleared; a sort chosen
        later orders them), and the status line names ``title`` with a *show all* button that
        clears it.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(10)], se.Features(x=se.Value("int64")),
        ...               name="ten", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.show_rows([7, 2, 5], "three picked rows")
        >>> browser.page_rows().tolist(), browser.subset
        ([7, 2, 5], 'three picked rows')
        >>> browser.show_rows(None)
        >>> browser.num_rows
        10
        """
        state = self._state
        if rows is None:
            state.subset = None
            state.ready = False
            try:
                self.subset = ""
            finally:
                state.ready = True
            self._refilter()
            return
        ds = state.opened.ds
        wanted = np.asarray(rows, dtype=np.int64).reshape(-1)
        bad = wanted[(wanted < 0) | (wanted >= len(ds))]
        if len(bad):
            msg = f"show_rows: row {int(bad[0])} is out of range for {len(ds):,} rows of {ds.ref}"
            raise RowIndexError(msg)
        _, first = np.unique(wanted, return_index=True)
        state.subset = wanted[np.sort(first)]  # each row once, in the order given
        state.ready = False  # one refilter for all these changes
        try:
            self.shard = -1
            self.label_filter = []
            self.search = ""
            self.field_filters = []
            self.subset = str(title) or f"{len(state.subset):,} chosen rows"
        finally:
            state.ready = True
        self._refilter()

    def where_bin(self, column: str, index: int) -> None:
        """Keep the rows of one bar of ``column``'s histogram: the very rows its count counts.

        Bins are half-open, ``[edge, next edge)``; the last is closed.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": float(i)} for i in range(17)], se.Features(x=se.Value("float64")),
        ...               name="x", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.histograms["x"][:2], browser.histograms["x"][-1]
        ([1, 1], 2)
        >>> browser.where_bin("x", 15)
        >>> browser.num_rows, browser.field_filters
        (2, [{'column': 'x', 'min': 15.0, 'max': 16.0}])
        """
        entry = next((f for f in self.fields if f.get("name") == column and "min" in f), None)
        if entry is None:
            numbers = [f["name"] for f in self.fields if "min" in f]
            msg = f"no histogram of {column!r}; the number columns with one are {numbers}"
            raise InvalidOptionError(msg)
        spec = bin_filter(column, entry["min"], entry["max"], int(index), HISTOGRAM_BINS)
        self.field_filters = [*(f for f in self.field_filters if f.get("column") != column), spec]

    def clear_filters(self) -> None:
        """Remove every value filter (labels, shard and search stay)."""
        self.field_filters = []

    def sort(self, column: str | None = None, *, descending: bool = False) -> None:
        """Show rows ordered by ``column`` (a number or string column); ``sort()`` goes back to row order."""
        kinds = self._state.opened.kinds
        if column and column not in kinds:
            msg = f"cannot sort by {column!r}; the number and string columns are {sorted(kinds)}"
            raise InvalidOptionError(msg)
        self._state.ready = False
        try:
            self.sort_by = column or ""
            self.sort_desc = bool(descending) and bool(column)
        finally:
            self._state.ready = True
        self._refilter()

    def _histograms(self, rows: range | np.ndarray) -> dict[str, list[int]]:
        """A small histogram per number column over the rows kept (bins over the column's whole range)."""
        out = {}
        for entry in self.fields:
            if entry.get("kind") == "number" and "min" in entry:
                values = self._state.opened.value_column(entry["name"])
                if not isinstance(rows, range):  # a range is every row, in row order: the whole column
                    values = values.take(rows)
                out[entry["name"]] = histogram(values, lo=entry["min"], hi=entry["max"], bins=HISTOGRAM_BINS)
        return out
