"""The shard browser's kernel-side state, in one place.

What the page sees is the browser's synced traitlets (the model). Everything else the browser and
its mixins share lives in one :class:`BrowserState`:

- :class:`Opened`: what is derived from the dataset browsed (its columns, read once, and the masks
  of searches); replaced whole when ``save()`` switches the browser to the new version, so nothing
  of the old version is left behind;
- the rows the filters keep, in the order shown, and where each stands;
- the selection's anchor, the pending edits, the open detail pane, the display id and the prefetch.

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"label": i % 2, "name": f"n{i}"} for i in range(6)],
...               se.Features(label=se.ClassLabel(names=["a", "b"]), name=se.Value("string")),
...               name="ab", home=tempfile.mkdtemp(), progress=False)
>>> opened = Opened.of(ds)
>>> opened.label_array("label").tolist(), opened.search_mask("N3").tolist()
([0, 1, 0, 1, 0, 1], [False, False, False, True, False, False])
>>> opened.search_mask("5").tolist()  # keys too: here the running index
[False, False, False, False, False, True]
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.display.images import is_image_array_shape
from stable_explore.schema import Array3D, ClassLabel, Image, Value, Video
from stable_explore.schema.columns import KEY_COLUMN
from stable_explore.widgets._filters import field_kinds
from stable_explore.widgets._video import derived_column, derived_of, video_kinds

if TYPE_CHECKING:
    from collections.abc import Callable

    from stable_explore.dataset import CachedDataset
    from stable_explore.signals import Similarity
    from stable_explore.versioning.edits import Draft
    from stable_explore.widgets._similar import Grid
    from stable_explore.widgets._thumbs import ThumbnailCache

__all__ = ["LATER_ROWS", "BrowserState", "Opened"]

_SEARCH_MASKS_KEPT = 16
LATER_ROWS = 1_000_000  # from this many rows, the browser reads whole columns after its first page
_STRING_TYPES = ("string", "large_string")


def _image_column(ds: CachedDataset) -> str | None:
    features = ds.features
    found = features.first_of(Image)
    if found is None:
        found = next((n for n, f in features.items() if isinstance(f, Array3D) and is_image_array_shape(f.shape)), None)
    return found


@dataclass
class Opened:
    """What the browser derives from the dataset it browses: columns read once, masks of searches.

    ``label_column`` is the first ``ClassLabel`` column ("" when there is none); ``text_columns`` the
    string columns that search looks in (besides the keys); ``kinds`` the columns that filter and
    sort by value.
    """

    ds: CachedDataset
    image_column: str | None
    label_column: str
    text_columns: list[str]
    kinds: dict[str, str]
    labels: np.ndarray | None = None
    search_masks: dict[str, np.ndarray] = field(default_factory=dict)
    value_columns: dict[str, Any] = field(default_factory=dict)
    image_sizes: dict[int, tuple[int, int] | None] = field(default_factory=dict)  # version row -> (w, h), read once
    video_column: str | None = None  # the first Video column: its posters are the thumbnails when no image is

    @classmethod
    def of(cls, ds: CachedDataset) -> Opened:
        """Open ``ds``: only what is cheap (its schema, row and shard numbers) is read now."""
        features = ds.features
        return cls(
            ds=ds,
            image_column=_image_column(ds),
            label_column=features.first_of(ClassLabel) or "",
            text_columns=[n for n, f in features.items() if isinstance(f, Value) and f.dtype in _STRING_TYPES],
            kinds={**field_kinds(features), **video_kinds(features)},  # a video's duration, fps... (see _video)
            video_column=features.first_of(Video),
        )

    @property
    def thumb_column(self) -> str | None:
        """The column the grid's thumbnails come from: the image column, else the video column's posters."""
        return self.image_column or self.video_column

    @property
    def whole(self) -> bool:
        """Whether the dataset is a whole version (row i is the version's row i), not a view."""
        return not self.ds.is_view

    def _made_once(self, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        """An array of one entry per row, made when first asked (at 10M rows, 80 MB) and kept."""
        found: np.ndarray | None = self.value_columns.get(name)
        if found is None:
            found = self.value_columns[name] = make()
        return found

    @property
    def base(self) -> np.ndarray:
        """Each row's number in the version."""
        return self._made_once("__base__", self.ds.base_rows)

    @property
    def shard_ids(self) -> np.ndarray:
        """Each row's shard file."""
        return self._made_once("__shard_ids__", self.ds.shard_ids)

    def base_of(self, rows: np.ndarray) -> np.ndarray:
        """The version's row numbers of some rows (found for those rows only, also in a view)."""
        if "__base__" in self.value_columns:
            picked: np.ndarray = self.base[rows]
            return picked
        return self.ds.base_rows(rows)

    def shards_of(self, rows: np.ndarray) -> np.ndarray:
        """The shard files of some rows (found among the version's segments, not in an array of every row's)."""
        if "__shard_ids__" in self.value_columns:
            picked: np.ndarray = self.shard_ids[rows]
            return picked
        return self.ds.shard_ids(rows)

    @property
    def remote(self) -> bool:
        """Whether the dataset's shards are in a bucket (a whole column costs a request per record batch)."""
        return self.ds.cache_meta.remote is not None

    @property
    def columns_later(self) -> bool:
        """Whether whole columns (label counts, number ranges) are read just after the first page, not before it.

        So on a bucket (a whole column costs a request per record batch) and on a version of
        ``LATER_ROWS`` rows or more (at 10M rows, reading and counting them takes about a second).
        """
        return self.remote or len(self.ds) >= LATER_ROWS

    def labels_of(self, column: str, rows: np.ndarray) -> np.ndarray:
        """The class codes of some rows: from the whole column when it is read, else only theirs."""
        if self.labels is not None or not column or not self.columns_later:
            found: np.ndarray = self.label_array(column)[rows]
            return found
        values = self.ds.select(rows).to_arrow(columns=[column]).column(0)
        return np.asarray(values.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)

    def label_array(self, column: str) -> np.ndarray:
        """Every row's class code (-1 where missing, or for a dataset without a ClassLabel column)."""
        if self.labels is None:
            if not column:
                self.labels = np.full(len(self.ds), -1, dtype=np.int64)
            else:
                values = self.ds.with_format("arrow").column(column)
                values = values.fill_null(-1) if values.null_count else values  # (a copy of 10M codes otherwise)
                self.labels = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
        return self.labels

    def value_column(self, name: str) -> Any:
        """One whole column, in Arrow, read once per version."""
        column = self.value_columns.get(name)
        if column is None:
            derived = derived_of(name, self.ds.features)  # a video's number, from its probe (kept per version)
            made = derived_column(self.ds, name) if derived is not None else self.ds.arrow_column(name)
            column = self.value_columns[name] = made
        return column

    def key_strings(self) -> Any:
        """Every row's key as Arrow text (keys may be numbers), read once."""
        keys = self.value_columns.get(KEY_COLUMN)
        if keys is None:
            if (
                self.ds.cache_meta.is_stable_datasets_v1
            ):  # stable-datasets' format 1 has no stored keys: a row's key is its number
                keys = pc.cast(pa.array(self.ds.base_rows()), pa.string())
            else:
                keys = pc.cast(self.ds.arrow_column(KEY_COLUMN), pa.string())
            self.value_columns[KEY_COLUMN] = keys
        return keys

    @property
    def searched(self) -> str:
        """What search looks in, in words: ``"keys, note"``."""
        return ", ".join(["keys", *self.text_columns])

    def search_mask(self, term: str) -> np.ndarray:
        """Rows whose key or string fields contain ``term`` (case-insensitive), computed once per term."""
        mask = self.search_masks.get(term)
        if mask is None:
            mask = np.zeros(len(self.ds), dtype=bool)
            if len(self.ds):
                hits = pc.match_substring(self.key_strings(), term, ignore_case=True).fill_null(False)
                mask |= np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)
            for name in self.text_columns:
                hits = pc.match_substring(self.value_column(name), term, ignore_case=True).fill_null(False)
                mask |= np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)
            if len(self.search_masks) >= _SEARCH_MASKS_KEPT:
                self.search_masks.clear()
            self.search_masks[term] = mask
        return mask


@dataclass
class BrowserState:
    """Everything the shard browser keeps besides its synced traitlets (see the module's docstring).

    ``rows``: positions (in the dataset) of the rows the filters keep, in the order shown: a
    ``range`` while every row shows in row order (no array of 10M positions before the first page),
    an int64 array once a filter, a sort or a subset applies (set with :meth:`show`);
    ``subset``: the rows of ``show_rows()``, in the order given; ``ready``: False while several
    traits change together, so observers wait for one refilter; ``similar_choice``: the user's
    ``similar_by=``, ``similarity`` what it resolved to for this version (None: no similar rows);
    ``grids``: the grids "back" returns to, the last shown last.
    """

    opened: Opened
    cache: ThumbnailCache
    prefetch: bool = True
    rows: range | np.ndarray = range(0)
    in_row_order: bool = True  # whether ``rows`` ascend (no sort, no subset): a row's place is found by bisection
    subset: np.ndarray | None = None
    anchor: int | None = None
    draft: Draft | None = None
    detail_row: int | None = None
    display_id: str | None = None
    prefetched: tuple[tuple[str, int, bytes], Future[Any]] | None = None
    counting: np.ndarray | slice | None = None  # the rows (a mask, or every row) the chips count after the page
    ready: bool = False
    similar_choice: str | None = None
    similarity: Similarity | None = None
    grids: list[Grid] = field(default_factory=list)
    places: np.ndarray | None = None  # row -> place in ``rows`` (-1: not shown), made when first asked
    evaluation: Any = None  # an EvaluationView (widgets/_evaluation.py) of the version browsed, or None

    def show(self, rows: range | np.ndarray, *, in_row_order: bool) -> None:
        """Show ``rows`` (every row in order: ``range(len(ds))``), in the order given."""
        self.rows = rows
        self.in_row_order = in_row_order
        self.places = None

    def shown(self, start: int, stop: int) -> np.ndarray:
        """The rows at places ``start`` .. ``stop - 1`` of the rows shown (positions in the dataset).

        Examples
        --------
        >>> state = BrowserState(opened=None, cache=None)  # type: ignore[arg-type]
        >>> state.show(range(10), in_row_order=True)
        >>> state.shown(8, 12).tolist(), state.place(7), state.place(10)
        ([8, 9], 7, -1)
        """
        part = self.rows[start:stop]
        if isinstance(part, range):
            return np.arange(part.start, part.stop, part.step, dtype=np.int64)
        return part

    def place(self, row: int) -> int:
        """Where ``row`` stands among the rows shown (its place in the order shown), or -1 when it is not shown."""
        rows, row = self.rows, int(row)
        if isinstance(rows, range):
            return rows.index(row) if row in rows else -1
        if self.in_row_order:
            found = int(np.searchsorted(rows, row))
            return found if found < len(rows) and rows[found] == row else -1
        if self.places is None:  # a sort or a subset: one pass, kept until the rows change
            self.places = np.full(len(self.opened.ds), -1, dtype=np.int64)
            self.places[rows] = np.arange(len(rows))
        return int(self.places[row]) if 0 <= row < len(self.places) else -1

    def insertion(self, row: int) -> int:
        """Where ``row`` stands, or would stand if it were shown, among rows shown in row order."""
        rows, row = self.rows, int(row)
        if isinstance(rows, range):
            return min(max(0, row - rows.start), len(rows))
        return int(np.searchsorted(rows, row))

    def reopen(self, ds: CachedDataset) -> None:
        """Browse ``ds`` from now on: what was derived from the old version, and the rows shown, go."""
        self.opened = Opened.of(ds)
        self.show(range(len(ds)), in_row_order=True)
        self.subset = None
        self.anchor = None
        self.grids = []  # their rows were positions in the old version
