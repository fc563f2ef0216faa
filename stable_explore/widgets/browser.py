"""The shard browser: a paginated grid of thumbnails with label names, filters, detail view and selection.

Small state lives in synced traitlets (page, filters, selection, class names); the rest of
the kernel-side state in one :class:`~stable_explore.widgets._state.BrowserState`. What the
page asks is a request with one handler each (:mod:`stable_explore.widgets._commands`),
answered by a reply whose binary buffers carry the images: a page of thumbnails is one
message, nothing per thumbnail is a widget and no image lands in saved widget state.
Thumbnails are made lazily, in the kernel, and kept in an LRU shared by every browser.

All behaviour that is not drawing (which rows a filter keeps, what a click
selects, what ``x`` flags) lives here, in Python, so it is tested without a
browser and stays the same in every frontend.

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"label": i % 2} for i in range(10)], se.Features(label=se.ClassLabel(names=["a", "b"])),
...               name="ab", home=tempfile.mkdtemp(), progress=False)
>>> browser = ds.browse(page_size=24)
>>> browser.label_filter = [1]
>>> browser.num_rows, browser.num_pages
(5, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import anywidget
import numpy as np
import traitlets as t

from stable_explore._units import format_size
from stable_explore.errors import InvalidOptionError
from stable_explore.schema import Boxes
from stable_explore.signals import similarity
from stable_explore.widgets._box_editing import BoxEditMixin
from stable_explore.widgets._box_histograms import BoxHistogramMixin
from stable_explore.widgets._commands import COMMANDS
from stable_explore.widgets._esm import STATIC, widget_module
from stable_explore.widgets._evaluation import EvaluationView
from stable_explore.widgets._filtering import FilterMixin
from stable_explore.widgets._filters import box_mask, class_counts, field_mask, sort_order
from stable_explore.widgets._overlays import (
    is_prediction_column,
    label_fields,
)
from stable_explore.widgets._pages import PageMessages
from stable_explore.widgets._rows import RowList
from stable_explore.widgets._selection import SelectionMixin
from stable_explore.widgets._similar import SimilarMixin
from stable_explore.widgets._snapshot import SnapshotMixin
from stable_explore.widgets._state import BrowserState, Opened
from stable_explore.widgets._thumbs import SHARED_CACHE
from stable_explore.widgets._video import VideoMixin

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.widgets._messages import GoneMessage
    from stable_explore.widgets._requests import Buffers
    from stable_explore.widgets._thumbs import ThumbnailCache

__all__ = ["ShardBrowser"]

PAGE_SIZES = (24, 48, 96, 192)


class ShardBrowser(
    BoxHistogramMixin,  # with FilterMixin, which it derives from
    FilterMixin,
    SelectionMixin,
    SimilarMixin,
    SnapshotMixin,
    BoxEditMixin,
    VideoMixin,
    PageMessages,
    anywidget.AnyWidget,
):
    """Browse a dataset's shards as thumbnails with label names; select and flag rows; find similar rows.

    Get one with ``ds.browse()`` or ``se.browse("name@version")``. ``similar_by=`` names what the
    detail pane's "Similar rows" compares: an embedding column, a perceptual hash column, an image
    column or ``"phash"``/``"dhash"`` (default: see :func:`stable_explore.signals.similarity`).

    Attributes
    ----------
    selected:
        Selected rows (positions in the browsed dataset), synced from the page.
    flagged:
        Rows marked with ``x`` or the flag button; ``drop_flagged()`` (or the button) makes them a pending drop.
    draft:
        The pending edits; ``save(message)`` (or the save button) writes them as a new version.
    """

    _esm = widget_module("browser.js")  # with the static/lib/ modules it imports inlined
    _css = STATIC / "browser.css"

    title = t.Unicode("").tag(sync=True)
    class_names = t.List(t.Unicode()).tag(sync=True)
    label_column = t.Unicode("").tag(sync=True)
    label_counts = t.List(t.Int()).tag(sync=True)
    shards = t.List(t.Dict()).tag(sync=True)
    columns = t.List(t.Unicode()).tag(sync=True)
    has_images = t.Bool(False).tag(sync=True)
    has_text = t.Bool(False).tag(sync=True)
    label_fields = t.List(t.Dict()).tag(sync=True)  # the columns drawn over the images: [{"name", "kind", "names"}]

    shard = t.Int(-1).tag(sync=True)
    label_filter = t.List(t.Int()).tag(sync=True)
    search = t.Unicode("").tag(sync=True)
    page_size = t.Int(48).tag(sync=True)
    page = t.Int(0).tag(sync=True)
    thumb_size = t.Int(128).tag(sync=True)

    num_rows = t.Int(0).tag(sync=True)
    num_pages = t.Int(1).tag(sync=True)
    selected = RowList().tag(sync=True)  # checked in numpy: an embedding map's lasso may pick 1M rows
    flagged = t.List(t.Int()).tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    dropped = t.List(t.Int()).tag(sync=True)
    pending_labels = t.Dict().tag(sync=True)
    pending = t.Unicode("").tag(sync=True)

    # filters beyond labels: value filters, sort, and the fields they apply to (with histograms)
    fields = t.List(t.Dict()).tag(sync=True)  # [{"name", "kind", "min", "max"}]
    field_filters = t.List(t.Dict()).tag(sync=True)  # [{"column", "min"?, "max"?, "equals"?, "contains"?}]
    sort_by = t.Unicode("").tag(sync=True)  # "" = row order
    sort_desc = t.Bool(False).tag(sync=True)
    histograms = t.Dict().tag(sync=True)  # {column: [counts per bin]} over the rows the filters keep
    box_histograms = t.Dict().tag(sync=True)  # {Boxes column: box by box histograms}: see _box_histograms
    subset = t.Unicode("").tag(sync=True)  # the title of show_rows(); "" = every row
    searched = t.Unicode("keys").tag(sync=True)  # what the search box looks in, in words
    similar_by = t.Unicode("").tag(sync=True)  # what "similar rows" compares, in words ("" = nothing to compare)
    similar_reason = t.Unicode("").tag(sync=True)  # why there are no similar rows, and what to add
    can_go_back = t.Bool(False).tag(sync=True)  # a grid before "similar rows" to go back to
    evaluation = t.Dict().tag(sync=True)  # an evaluation shown ({} = none): see _evaluation.EvaluationView.described
    similar_progress = t.Dict().tag(sync=True)  # the first hashing of images for similar rows (start_similar)

    def __init__(
        self,
        dataset: CachedDataset,
        *,
        page_size: int = 48,
        thumb_size: int = 128,
        cache: ThumbnailCache | None = None,
        prefetch: bool = True,
        similar_by: str | None = None,
        evaluation: Any = None,
        **kwargs: Any,
    ) -> None:
        if page_size not in PAGE_SIZES:
            msg = f"page_size must be one of {PAGE_SIZES}, got {page_size}"
            raise InvalidOptionError(msg)
        if similar_by is not None:
            similarity(dataset, similar_by)  # a wrong choice is an error now, not a disabled button
        # every observer waits (state.ready is False) until construction is done
        self._state = BrowserState(self._open(dataset), cache if cache is not None else SHARED_CACHE, prefetch)
        self._state.similar_choice = similar_by
        if evaluation is not None:  # checked now: an evaluation of other rows is an error, not wrong colours
            self._state.evaluation = EvaluationView.of(evaluation, dataset)
        self._state.show(range(len(dataset)), in_row_order=True)
        super().__init__(page_size=page_size, thumb_size=thumb_size, **self._described(), **kwargs)
        self._state.ready = True
        self._refilter(send=False)  # each view asks for its first page when it renders
        self.on_msg(self._on_message)

    @classmethod
    def _open(cls, dataset: CachedDataset) -> Opened:
        """What the browser derives from ``dataset`` (the patches browser's thumbnails are crops: see ``_patches``)."""
        return Opened.of(dataset)

    @property
    def prefetch(self) -> bool:
        """Whether the next page's thumbnails are made ahead, after each page is sent."""
        return self._state.prefetch

    @prefetch.setter
    def prefetch(self, value: bool) -> None:
        self._state.prefetch = bool(value)

    def _described(self) -> dict[str, Any]:
        """The synced state that describes the dataset browsed (set at start, and again after a save)."""
        opened = self._state.opened
        dataset = opened.ds
        shards = []
        if len(dataset):
            counts, first, last = _shard_spans(opened)
            for shard in np.flatnonzero(counts).tolist():
                entry: dict[str, Any] = {"index": shard, "rows": int(counts[shard])}
                if last[shard] - first[shard] + 1 == counts[shard]:  # one run of rows: say which
                    entry.update(start=int(first[shard]), stop=int(last[shard]) + 1)
                shards.append(entry)
        label = opened.label_column
        evaluated = self._state.evaluation
        if evaluated is not None and evaluated.version != dataset.version:
            evaluated = self._state.evaluation = None  # a save made a new version: its evaluation is to run again
        predictions = None
        if evaluated is not None and evaluated.kind == "boxes":
            boxes = [n for n, f in dataset.features.items() if isinstance(f, Boxes)]
            predictions = {n for n in boxes if is_prediction_column(n)} - {evaluated.ground_truth}
            predictions.add(evaluated.predictions)
        return {
            "title": f"{dataset.ref} · {len(dataset):,} rows · {dataset.num_shards} shard(s) · "
            f"{format_size(dataset.nbytes)}",
            "class_names": list(getattr(dataset.features[label], "names", None) or ()) if label else [],
            "label_column": label,
            "shards": shards,
            "columns": list(dataset.features),
            "has_images": opened.thumb_column is not None,
            "has_text": bool(opened.text_columns),
            "label_fields": label_fields(dataset.features, predictions) if opened.image_column is not None else [],
            "evaluation": evaluated.described() if evaluated is not None else {},
            "searched": opened.searched,
            "fields": self._field_info(ranges=not opened.columns_later, derived=False),
            "subset": "",
            "can_go_back": False,
            **self._similar_described(),
        }

    # -- the dataset side ------------------------------------------------------

    @property
    def dataset(self) -> CachedDataset:
        """The dataset (or view) being browsed."""
        return self._state.opened.ds

    def selection(self) -> CachedDataset:
        """The selected rows as a view of the dataset (in the order they were selected)."""
        return self.dataset.select(list(self.selected))

    def flagged_rows(self) -> CachedDataset:
        """The flagged rows as a view of the dataset."""
        return self.dataset.select(sorted(self.flagged))

    @t.observe("shard", "label_filter", "search", "page_size", "field_filters", "sort_by", "sort_desc")
    def _filters_changed(self, change: Any) -> None:
        if self._state.ready:
            self._refilter()

    def _refilter(self, *, send: bool = True) -> None:
        """Compute once per filter the rows it keeps (Arrow/numpy over whole columns, never per page)."""
        state = self._state
        opened = state.opened
        size = len(opened.ds)
        masks = []  # what each filter keeps; none: every row (no pass over the rows at all)
        if state.subset is not None:
            chosen = np.zeros(size, dtype=bool)
            chosen[state.subset] = True
            masks.append(chosen)
        if self.shard >= 0:
            masks.append(opened.shard_ids == self.shard)
        if self.search.strip():
            masks.append(opened.search_mask(self.search.strip()))
        for spec in self.field_filters:
            column = str(spec.get("column", ""))
            if spec.get("boxes") and isinstance(opened.ds.features.get(column), Boxes):
                box_format = cast("Boxes", opened.ds.features[column]).format
                masks.append(box_mask(opened.value_column(column), spec, box_format))
            elif column in opened.kinds:
                masks.append(field_mask(opened.value_column(column), spec))
        keep = np.logical_and.reduce(masks) if masks else None
        state.counting = None
        if self.label_column and opened.labels is None and opened.columns_later and not self.label_filter:
            # a bucket's label column is a request per record batch, 10M labels a second: read after the page is
            # sent (see _count_labels)
            state.counting = keep if keep is not None else slice(None)
            self.label_counts = []
        elif self.label_column:  # each chip counts its class under every other filter
            labels = opened.label_array(self.label_column)
            self._set_label_counts(labels if keep is None else labels[keep])
            if self.label_filter:
                chosen = np.isin(labels, np.asarray(self.label_filter, dtype=np.int64))
                keep = chosen if keep is None else keep & chosen
        rows: range | np.ndarray
        if keep is None:  # every row in row order stays a range: nothing of 10M entries is made
            rows = state.subset if state.subset is not None else range(size)
        else:
            rows = state.subset[keep[state.subset]] if state.subset is not None else np.flatnonzero(keep)
        sorted_ = self.sort_by in opened.kinds and len(rows) > 0
        if sorted_:
            column = opened.value_column(self.sort_by)
            if isinstance(rows, range):  # every row: the column's order is the rows' order
                rows = sort_order(column, descending=self.sort_desc).astype(np.int64)
            else:
                rows = rows[sort_order(column.take(rows), descending=self.sort_desc)]
        state.show(rows, in_row_order=not sorted_ and state.subset is None)
        self.histograms = self._histograms(rows)
        self.box_histograms = self._box_histograms(rows)
        self.num_rows = len(rows)
        self.num_pages = max(1, -(-self.num_rows // self.page_size))
        if send:
            self._push_detail_marks()
        if self.page != 0:
            self.page = 0  # the observer sends the page
        elif send:
            self.send_page()

    def _set_label_counts(self, counted: np.ndarray) -> None:
        self.label_counts = class_counts(counted, len(self.class_names))

    def _count_labels(self) -> None:
        """What whole columns give, put off until the page has gone: label counts, number ranges, histograms.

        (See ``Opened.columns_later``: a bucket's version, or a large one.)
        """
        state = self._state
        if state.counting is not None:
            keep, state.counting = state.counting, None
            self._set_label_counts(state.opened.label_array(self.label_column)[keep])
        later = state.opened.columns_later or state.opened.video_column is not None  # a video's numbers: its probes
        if later and any(f.get("kind") == "number" and "min" not in f for f in self.fields):
            self.fields = self._field_info()
            self.histograms = self._histograms(state.rows)

    @t.validate("page")
    def _valid_page(self, proposal: Any) -> int:
        return int(min(max(0, proposal["value"]), max(0, self.num_pages - 1)))

    @t.observe("page")
    def _page_changed(self, change: Any) -> None:
        if self._state.ready:
            self.send_page()

    def page_rows(self, page: int | None = None) -> np.ndarray:
        """Positions (in the dataset) of the rows on a page of the current filter."""
        page = self.page if page is None else page
        return self._state.shown(page * self.page_size, (page + 1) * self.page_size)

    def send_page(self) -> None:
        """Send the current page to every view of this widget, then prefetch the next one.

        A version deleted (by gc) since it was opened sends a ``gone`` message instead, and says so in
        the status line: the page would be blank, or stale thumbnails.
        """
        content, buffers = self.page_reply()
        self.send(content, buffers)
        self._count_labels()

    def show_evaluation(self, what: str) -> None:
        """Show the rows of the evaluation (``browse(evaluation=)``) that ``what`` names, in its order.

        ``"fp"``: the rows with a false positive; ``"fn"``: with a false negative (a missed box);
        ``"mistakes"``: the most confident mistakes first (a detector's: the row whose false positive
        scored highest first). ``show_rows(None)`` (the status line's "show all") shows every row again.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"label": i % 2, "guess": 0} for i in range(4)],
        ...               se.Features(label=se.ClassLabel(names=["a", "b"]), guess=se.ClassLabel(names=["a", "b"])),
        ...               name="ab", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(evaluation=se.evaluate(ds, predictions="guess", ground_truth="label"))
        >>> browser.show_evaluation("mistakes")
        >>> browser.page_rows().tolist(), browser.subset
        ([1, 3], 'most confident mistakes first (guess)')
        """
        evaluated = self._state.evaluation
        if evaluated is None:
            msg = "this browser shows no evaluation: ds.browse(evaluation=se.evaluate(ds, ...))"
            raise InvalidOptionError(msg)
        rows, title = evaluated.rows(what)
        self.show_rows(rows, title)

    def _gone(self) -> GoneMessage | None:
        """The ``gone`` message (and the status line) when this version was deleted since it was opened."""
        reason = self.dataset.deleted_reason()
        if reason is None:
            return None
        self.status = f"error: {reason}"
        return {"type": "gone", "message": reason}

    def _on_message(self, widget: object, content: object, buffers: Buffers | None) -> None:
        """A request from the page: run its command (see :mod:`._commands`) and send the reply."""
        if COMMANDS.answer(self, content, buffers):
            self._count_labels()

    # -- display ----------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Where no widget frontend runs (GitHub, nbviewer), the static card shows.
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            data, metadata = bundle
        else:
            data, metadata = bundle or {}, {}
        data = dict(data)
        data["text/html"] = self._card_html()
        return data, metadata

    def _card_html(self) -> str:
        """The static HTML that stands for the widget where it cannot run: the dataset's card."""
        return self.dataset._repr_html_()

    def __repr__(self) -> str:
        return f"ShardBrowser({self.dataset!r}, {self.num_rows:,} rows shown, {len(self.selected)} selected)"


def _shard_spans(opened: Opened) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per shard file: how many rows shown are in it, and the first and last of their version row numbers.

    A whole version's, and a view of a run of its rows (``ds[a:b]``), come from its segments (no array of
    every row's: 10M rows cost nothing here).
    """
    view = opened.ds.view_rows
    if view is None or (isinstance(view, range) and view.step == 1):
        segments = opened.ds.backend.segments
        ids = np.array([shard for shard, _, _ in segments], dtype=np.int64)
        offsets = np.asarray(opened.ds.backend.segment_offsets, dtype=np.int64)
        starts, stops = offsets[: len(ids)], offsets[1 : len(ids) + 1]
        if view is not None:  # each segment's rows within the run
            starts, stops = np.clip(starts, view.start, view.stop), np.clip(stops, view.start, view.stop)
    else:
        ids, starts = opened.shard_ids, opened.base
        stops = starts + 1
    counts = np.bincount(ids, weights=stops - starts).astype(np.int64)
    first = np.full(len(counts), np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(len(counts), -1, dtype=np.int64)
    keep = stops > starts
    np.minimum.at(first, ids[keep], starts[keep])
    np.maximum.at(last, ids[keep], stops[keep] - 1)
    return counts, first, last
