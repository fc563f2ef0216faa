"""The embedding map: a 2D projection of an embedding drawn on a canvas, coloured by label, to select rows from.

The kernel projects once (PCA by default, UMAP on request) and sends the points to the page as one
message whose binary buffers are a Float32Array of x, y pairs and the label codes (a Uint8Array below
255 classes: 9 bytes a point), never as JSON and never in saved widget state. The page draws them
into an ImageData (in slices of a few milliseconds above 150,000 points, moving the last frame while
a pan or zoom goes on), pans and zooms (wheel, drag), finds the point under the cursor in a spatial
grid, and selects with a box or a lasso; the selected rows come back as an Int32Array and land in
:attr:`EmbeddingMap.selected`. The same box and lasso rules run in Python (:func:`~stable_explore.signals.rows_in_box`,
:func:`~stable_explore.signals.rows_in_polygon`), so a selection can be made, checked or repeated
from code.

Hovering a point asks the kernel for that row's thumbnail (the browser's thumbnail code and its
kernel-wide cache). A double-click selects the point and its nearest neighbours in the embedding.

Examples
--------
>>> import tempfile, numpy as np, stable_explore as se
>>> ds = se.build([{"label": i % 2} for i in range(6)], se.Features(label=se.ClassLabel(names=["a", "b"])),
...               name="six", home=tempfile.mkdtemp(), progress=False)
>>> vectors = np.array([[0, 0], [0, 1], [5, 5], [5, 6], [9, 0], [9, 1]], dtype=float)
>>> embedding_map = EmbeddingMap(ds, vectors)
>>> embedding_map.points[:2].astype(float).round(1).tolist()  # the PCA of the vectors: what the page draws
[[-4.8, -1.8], [-4.7, -0.8]]
>>> embedding_map.select_box(-6, -3, -4, 0)  # in the projection's coordinates
>>> embedding_map.selected
[0, 1]
>>> len(embedding_map.selection())
2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anywidget
import numpy as np
import traitlets as t
from typing_extensions import NotRequired, TypedDict

from stable_explore.display.images import is_image_array_shape
from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.schema import Array3D, ClassLabel, Image
from stable_explore.signals import embedding_matrix, nearest_rows, project, rows_in_box, rows_in_polygon
from stable_explore.widgets._esm import STATIC, widget_module
from stable_explore.widgets._images import make_thumbnails
from stable_explore.widgets._requests import OK, Buffers, Commands, Reply, Request
from stable_explore.widgets._rows import RowList, sorted_rows
from stable_explore.widgets._snapshot import display_with_snapshot, snapshot_html
from stable_explore.widgets._thumbs import SHARED_CACHE, ThumbnailCache

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.signals import Embedding
    from stable_explore.versioning.edits import Draft
    from stable_explore.widgets.browser import ShardBrowser

__all__ = ["EmbeddingMap"]


class PointsMessage(TypedDict):
    """The map's points (``type: "points"``): buffers of x, y pairs, label codes of type ``codes``, the selection."""

    type: Literal["points"]
    count: int
    codes: Literal["uint8", "uint16", "uint32"]


class ThumbMessage(TypedDict):
    """A hovered point's row (``type: "thumb"``): its key, label code and thumbnail (buffer 0, when it has one)."""

    type: Literal["thumb"]
    row: int
    key: str
    label: int
    mime: NotRequired[str]


class EmbeddingMap(anywidget.AnyWidget):
    """A 2D map of a dataset's embedding, coloured by label; box and lasso select rows, hover shows thumbnails.

    Parameters
    ----------
    dataset:
        The rows to map (a version or a view); positions in :attr:`selected` are positions in it.
    embedding:
        A column name (a ``Sequence`` of numbers, an ``Array3D``), an array (rows x dimensions) or a
        function of a batch of rows returning one vector per row.
    method:
        ``"pca"`` (default) or ``"umap"`` (``pip install 'stable-explore[embed]'``).
    label:
        The ``ClassLabel`` column that colours the points (default: the first one).
    browser:
        A :class:`~stable_explore.widgets.ShardBrowser` to send the selection to (see :meth:`link`).
    seed:
        UMAP's random state.
    thumb_size:
        Hover thumbnails' longer side, in pixels.

    Attributes
    ----------
    selected:
        The selected rows (positions in ``dataset``, in row order). Set it from code to highlight rows.
    points:
        The projection, float32 (rows x 2): what the page draws.
    """

    _esm = widget_module("embedding_map.js")  # with the static/lib/ modules it imports inlined
    _css = STATIC / "embedding_map.css"

    title = t.Unicode("").tag(sync=True)
    class_names = t.List(t.Unicode()).tag(sync=True)
    label_counts = t.List(t.Int()).tag(sync=True)
    num_points = t.Int(0).tag(sync=True)
    method = t.Unicode("pca").tag(sync=True)
    mode = t.Enum(("pan", "box", "lasso"), default_value="pan").tag(sync=True)
    has_images = t.Bool(False).tag(sync=True)
    num_selected = t.Int(0).tag(sync=True)
    selection_shape = t.Dict().tag(sync=True)  # the last box or lasso, in the projection's coordinates
    status = t.Unicode("").tag(sync=True)
    neighbours = t.Int(8).tag(sync=True)  # rows a double-click adds beside the point
    # Not synced: a selection of a million rows travels as one Int32Array, never as JSON.
    selected = RowList()

    def __init__(
        self,
        dataset: CachedDataset,
        embedding: Embedding,
        *,
        method: str = "pca",
        label: str | None = None,
        browser: ShardBrowser | None = None,
        seed: int = 0,
        thumb_size: int = 96,
        cache: ThumbnailCache | None = None,
        **kwargs: object,
    ) -> None:
        self._ds = dataset
        self._matrix = embedding_matrix(dataset, embedding)
        self.points = project(self._matrix, method, seed=seed)
        self._thumb_size = thumb_size
        self._cache = cache if cache is not None else SHARED_CACHE
        self._browser: ShardBrowser | None = None
        self._browser_order: tuple[list[int], str] | None = None
        self._from_page = False
        features = dataset.features
        self._label_column = label if label is not None else features.first_of(ClassLabel)
        if self._label_column is not None and not isinstance(features.get(self._label_column), ClassLabel):
            choices = [n for n, f in features.items() if isinstance(f, ClassLabel)]
            msg = f"label={self._label_column!r} is not a ClassLabel column; those are {choices}"
            raise InvalidOptionError(msg)
        self._labels = self._label_codes()
        names = list(getattr(features[self._label_column], "names", None) or ()) if self._label_column else []
        counts = np.bincount(self._labels[self._labels >= 0], minlength=len(names))[: len(names)] if names else ()
        self._image_column = features.first_of(Image) or next(
            (n for n, f in features.items() if isinstance(f, Array3D) and is_image_array_shape(f.shape)), None
        )
        super().__init__(
            title=f"{dataset.ref} · {len(dataset):,} points · {method.upper()} of {self._matrix.shape[1]} dimensions",
            class_names=names,
            label_counts=[int(c) for c in counts],
            num_points=len(dataset),
            method=method,
            has_images=self._image_column is not None,
            **kwargs,
        )
        self.on_msg(self._on_message)
        if browser is not None:
            self.link(browser)

    def snapshot_html(self) -> str:
        """The static picture shown where the live map cannot be drawn (a saved notebook reopened on a new kernel).

        The map's title, its points as a PNG coloured by label (:func:`~stable_explore.widgets._map_picture.map_png`)
        and the class names, with a note that running the cell brings the live map back.
        """
        import base64
        import html

        from stable_explore.widgets._map_picture import LABEL_COLOURS, map_png

        png = base64.b64encode(map_png(self.points, self._labels)).decode("ascii")
        keys = "".join(
            f'<span style="margin-right:10px"><span style="color:rgb{tuple(int(c) for c in LABEL_COLOURS[i % 10])}">'
            f"&#9679;</span> {html.escape(name)}</span>"
            for i, name in enumerate(self.class_names)
        )
        card = (
            f'<div style="font-weight:600">{html.escape(self.title)}</div>'
            f'<img src="data:image/png;base64,{png}" width="480" height="320" '
            f'alt="{html.escape(self.title)}: the points, coloured by label" data-testid="se-static-picture">'
            f'<div style="font-size:12px">{keys}</div>'
        )
        note = "Embedding map, static picture: run the cell to pan, zoom and select."
        return snapshot_html(card, self.model_id, note=note, live="se-map", marker="se-static-map")

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Two outputs: the static picture (:meth:`snapshot_html`), then the live map (see ``widgets/_snapshot.py``)."""
        display_with_snapshot(self.snapshot_html(), self._repr_mimebundle_(**kwargs))

    def _label_codes(self) -> np.ndarray:
        if self._label_column is None:
            return np.full(len(self._ds), -1, dtype=np.int32)
        column = self._ds.arrow_column(self._label_column).fill_null(-1)
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int32)

    # -- the dataset side --------------------------------------------------------

    @property
    def dataset(self) -> CachedDataset:
        """The mapped dataset (or view)."""
        return self._ds

    @property
    def embedding(self) -> np.ndarray:
        """The embedding the map was projected from (rows x dimensions, float64)."""
        return self._matrix

    def selection(self) -> CachedDataset:
        """The selected rows as a view of the dataset (``ds.select(map.selected)``)."""
        return self._ds.select(list(self.selected))

    def drop_selection(self, draft: Draft | None = None) -> Draft:
        """A pending edit (a :class:`~stable_explore.versioning.edits.Draft`) that drops the selected rows.

        Pass ``draft`` to add to edits already made; ``.save(message)`` writes the new version.
        """
        from stable_explore.versioning.edits import Draft

        return (draft or Draft(self._ds)).drop(list(self.selected))

    def relabel_selection(self, label: str | int, draft: Draft | None = None) -> Draft:
        """A pending edit that gives every selected row the class ``label`` (a name or a code)."""
        from stable_explore.versioning.edits import Draft

        if self._label_column is None:
            msg = f"{self._ds.ref} has no ClassLabel column to relabel"
            raise InvalidOptionError(msg)
        changes = dict.fromkeys(self.selected, label)
        return (draft or Draft(self._ds)).relabel(changes, column=self._label_column)

    def select_box(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """Select the rows whose point lies in this box (the projection's coordinates, edges included)."""
        self.selection_shape = {"kind": "box", "x0": x0, "y0": y0, "x1": x1, "y1": y1}
        self.selected = rows_in_box(self.points, x0, y0, x1, y1).tolist()

    def select_lasso(self, polygon: Sequence[Sequence[float]] | np.ndarray) -> None:
        """Select the rows whose point lies inside the polygon ``[[x, y], ...]`` (even-odd rule)."""
        vertices = np.asarray(polygon, dtype=np.float64)
        self.selected = rows_in_polygon(self.points, vertices).tolist()
        self.selection_shape = {"kind": "lasso", "points": vertices.tolist()}

    def similar(self, row: int, k: int = 8, *, metric: str = "euclidean") -> np.ndarray:
        """The ``k`` rows nearest to ``row`` in the embedding (not the 2D map), closest first."""
        return nearest_rows(self._matrix, row, k, metric=metric)

    def select_similar(self, row: int, k: int | None = None) -> None:
        """Select ``row`` and its ``k`` nearest neighbours in the embedding (what a double-click does)."""
        if not 0 <= row < len(self._ds):
            msg = f"row {row} is out of range for {len(self._ds):,} rows of {self._ds.ref}"
            raise RowIndexError(msg)
        found = self.similar(row, self.neighbours if k is None else k)
        ordered = [row, *found.tolist()]
        self.selection_shape = {"kind": "similar", "row": row, "rows": ordered}
        # a linked browser shows them closest first, under a title that says what they are
        self._browser_order = (ordered, f"row {row} and the {len(found)} rows most like it")
        try:
            self.selected = sorted(ordered)
        finally:
            self._browser_order = None

    # -- the browser ---------------------------------------------------------------

    def link(self, browser: ShardBrowser) -> None:
        """Send every selection to a :class:`~stable_explore.widgets.ShardBrowser` of the same rows.

        The browser selects those rows (so its flag, relabel and drop act on them) and, where it can
        (``show_rows``), its grid shows only them; an empty selection shows every row again.
        """
        if len(browser.dataset) != len(self._ds) or browser.dataset.version != self._ds.version:
            msg = (
                f"the browser shows {browser.dataset.ref} ({len(browser.dataset):,} rows), the map "
                f"{self._ds.ref} ({len(self._ds):,} rows): link a browser of the same rows"
            )
            raise InvalidOptionError(msg)
        self._browser = browser
        self._to_browser(list(self.selected))

    def _to_browser(self, rows: list[int]) -> None:
        browser = self._browser
        if browser is None:
            return
        if hasattr(browser, "show_rows"):
            shown, title = self._browser_order or (rows, f"{len(rows):,} rows chosen on the embedding map")
            browser.show_rows(shown or None, title if shown else "")
        browser.selected = rows

    @t.validate("selected")
    def _valid_selection(self, proposal: Any) -> list[int]:
        rows = sorted_rows(proposal["value"])  # numpy: a million rows in ms
        if len(rows) and (rows[0] < 0 or rows[-1] >= len(self._ds)):
            bad = int(rows[0] if rows[0] < 0 else rows[-1])
            msg = f"row {bad} is out of range for {len(self._ds):,} rows of {self._ds.ref}"
            raise RowIndexError(msg)
        chosen: list[int] = rows.tolist()
        return chosen

    @t.observe("selected")
    def _selection_changed(self, change: Any) -> None:
        rows = list(change["new"])
        self.num_selected = len(rows)
        if not self._from_page:  # the page drew it already
            self.send({"type": "selection"}, [np.asarray(rows, dtype=np.int32).tobytes()])
        self._to_browser(rows)

    # -- messages --------------------------------------------------------------------

    def points_message(self) -> tuple[PointsMessage, list[bytes]]:
        """The points (Float32Array of x, y pairs), label codes and the current selection (Int32Array).

        A label's code is its class index + 1 (0: no label), in the narrowest unsigned type that holds
        the classes (``content["codes"]``: ``"uint8"`` below 255 classes): 9 bytes a point, not 12.
        """
        classes = len(self.class_names)
        codes = np.where((self._labels >= 0) & (self._labels < classes), self._labels + 1, 0)
        kinds: tuple[Literal["uint8", "uint16", "uint32"], ...] = ("uint8", "uint16", "uint32")
        kind = next(k for k in kinds if classes < np.iinfo(k).max)
        content: PointsMessage = {"type": "points", "count": len(self.points), "codes": kind}
        buffers = [
            np.ascontiguousarray(self.points, dtype=np.float32).tobytes(),
            codes.astype(kind).tobytes(),
            np.asarray(self.selected, dtype=np.int32).tobytes(),
        ]
        return content, buffers

    def thumbnail_message(self, row: int) -> tuple[ThumbMessage, list[bytes]]:
        """One row's key, label and thumbnail (the browser's thumbnails and cache)."""
        if not 0 <= row < len(self._ds):
            msg = f"row {row} is out of range for {len(self._ds):,} rows of {self._ds.ref}"
            raise RowIndexError(msg)
        view = self._ds.select([row])
        content: ThumbMessage = {
            "type": "thumb",
            "row": row,
            "key": str(view.keys()[0])[:80],
            "label": int(self._labels[row]),
        }
        if self._image_column is None:
            return content, []
        # this row's version row alone: an array of every row's cost each hover about 60 ms at 10M rows
        key = (self._ds.version, int(self._ds.base_rows([row])[0]), self._thumb_size)
        thumb = self._cache.get(key)
        if thumb is None:
            value = view.arrow_column(self._image_column).to_pylist()
            made = make_thumbnails(value, self._ds.features[self._image_column], self._thumb_size)[0]
            if made is None:
                return content, []
            self._cache.put(key, *made)
            thumb = made
        content["mime"] = thumb[1]
        return content, [thumb[0]]

    def selection_from_page(self, content: Mapping[str, object], buffers: Sequence[bytes | memoryview]) -> None:
        """Take the rows a box or lasso drew on the page (an Int32Array) and its shape; the page drew them already."""
        rows = np.frombuffer(bytes(buffers[0]), dtype=np.int32) if buffers else np.zeros(0, dtype=np.int32)
        shape = content.get("shape")
        self._from_page = True
        try:
            if isinstance(shape, dict):
                self.selection_shape = shape
            self.set_trait("selected", rows)  # the validator makes the array a list, once
        finally:
            self._from_page = False

    def _on_message(self, widget: object, content: object, buffers: Buffers | None) -> None:
        """A request from the page (see :data:`COMMANDS`): run it and send the reply."""
        COMMANDS.answer(self, content, buffers)

    def __repr__(self) -> str:
        return f"EmbeddingMap({self._ds!r}, {self.method}, {len(self.points):,} points, {len(self.selected)} selected)"


# What the map's page asks (the request/reply layer is :mod:`._requests`); selections made in code, and
# points for a map redrawn from the kernel, are pushed.
COMMANDS = Commands("embedding map")


@COMMANDS.command("ready")
def _ready(widget: EmbeddingMap, msg: Request, buffers: Buffers) -> Reply:
    """A view was drawn: its points, label codes and the selection."""
    return widget.points_message()


@COMMANDS.command("select")
def _select(widget: EmbeddingMap, msg: Request, buffers: Buffers) -> Reply:
    """A box or lasso drawn on the page: its rows (an Int32Array) and its shape."""
    widget.selection_from_page(msg, buffers)
    return OK, []


@COMMANDS.command("hover")
def _hover(widget: EmbeddingMap, msg: Request, buffers: Buffers) -> Reply:
    """The point under the cursor: its key, label and thumbnail."""
    return widget.thumbnail_message(int(msg["row"]))


@COMMANDS.command("similar")
def _similar(widget: EmbeddingMap, msg: Request, buffers: Buffers) -> Reply:
    """A double-click: select the row and its nearest neighbours."""
    widget.select_similar(int(msg["row"]))
    return OK, []
