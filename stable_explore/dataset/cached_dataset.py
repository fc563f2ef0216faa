"""CachedDataset: one version of a cached dataset, its views, decoding and export.

A dataset is a cheap handle: it holds the version's metadata, a lazily mapped
backend and, for a view, the row numbers it covers. Indexing with an int
decodes one row; indexing with a slice, list, array or mask returns a view
that copies nothing. Row numbers of a view always refer to rows of the version
it came from (``ds.base_rows()``), which is what edits use.

Examples
--------
>>> import tempfile
>>> import stable_explore as se
>>> home = tempfile.mkdtemp()
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), size=se.Value("float32"))
>>> rows = [{"label": "cat", "size": 1.0}, {"label": "dog", "size": 2.5}, {"label": "dog", "size": 3.0}]
>>> ds = se.build(rows, features, name="pets", home=home, progress=False)
>>> len(ds), ds[1]
(3, {'label': 1, 'size': 2.5})
>>> ds.label_counts()
{'cat': 1, 'dog': 2}
>>> ds[1:].to_pandas()["label"].tolist()
['dog', 'dog']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.dataset._columns import ColumnMap
from stable_explore.dataset._decoding import FORMATS
from stable_explore.dataset._editing import EditMethods
from stable_explore.dataset._export import Exports
from stable_explore.dataset._formats import FormatExports
from stable_explore.dataset._habits import DatasetsHabits
from stable_explore.dataset._labels import LabelMethods
from stable_explore.dataset._pickling import Pickling
from stable_explore.dataset._reading import RowReading
from stable_explore.dataset._reprs import Reprs
from stable_explore.dataset._rows import RowViews
from stable_explore.dataset._selection import Rows, position_of, select_rows
from stable_explore.dataset._splits import SplitViews
from stable_explore.errors import (
    ColumnNotFoundError,
    InvalidOptionError,
    SchemaError,
)
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, ClassLabel, Features
from stable_explore.storage.read.joined import open_reader

_DELETED_CHECK_SECONDS = 5.0  # a version in a bucket is looked up at most this often by deleted_reason()

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.storage.check.verify import VerifyReport
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.read.protocol import ShardReader

__all__ = ["CachedDataset", "Metadata"]


class Metadata(dict[str, Any]):
    """A version's metadata: a plain dict, JSON-ready, with Easydata's upper-case attributes.

    ``md.DESCR`` is ``md["description"]``; any other ``md.KEY`` is ``md["key"]`` (``LICENSE``, ``HASHES``,
    and the user's own lower-case keys: ``md.AUTHOR``).
    """

    def __getattr__(self, name: str) -> Any:
        key = "description" if name == "DESCR" else name.lower()
        if name.isupper() and key in self:
            return self[key]
        msg = f"the metadata has no {name!r}; its keys: {sorted(self)}"
        raise AttributeError(msg)

    def __dir__(self) -> list[str]:
        """For tab completion: the dict's methods, ``DESCR`` and every lower-case identifier key upper-cased."""
        upper = [k.upper() for k in self if isinstance(k, str) and k.islower() and k.isidentifier()]
        return sorted({*super().__dir__(), "DESCR", *upper})


class CachedDataset(
    EditMethods,
    Exports,
    FormatExports,
    LabelMethods,
    SplitViews,
    DatasetsHabits,
    RowViews,
    RowReading,
    Pickling,
    Reprs,
):
    """One version of a cached dataset (or a view of some of its rows).

    Get one from :func:`stable_explore.build` or :func:`stable_explore.load`.

    Examples
    --------
    >>> import tempfile
    >>> import stable_explore as se
    >>> ds = se.build([{"x": i} for i in range(10)], se.Features(x=se.Value("int64")),
    ...               name="numbers", home=tempfile.mkdtemp(), progress=False)
    >>> view = ds[::2][1:3]
    >>> [row["x"] for row in view], view.base_rows().tolist()
    ([2, 4], [2, 4])
    >>> ds.filter(lambda row: row["x"] > 7)["x"]
    [8, 9]
    """

    def __init__(
        self,
        meta: ShardedCacheMeta,
        *,
        name: str | None = None,
        version: str | None = None,
        home: Path | str | None = None,
        features: Features | None = None,
        build_info: str | None = None,
        backend: ShardReader | None = None,
        rows: Rows | None = None,
        format: str = "pil",
    ) -> None:
        self._meta = meta
        self._backend = backend if backend is not None else open_reader(meta)  # joins column groups, if any
        if features is not None and meta.features is not None and features.fingerprint() != meta.features.fingerprint():
            msg = (
                f"{meta.cache_dir} stores its own features {meta.features!r}; features= is only for caches "
                f"that do not (stable-datasets format-1), and {features!r} differs"
            )
            raise SchemaError(msg)
        given = features or meta.features
        if given is None:
            given = Features.from_arrow_schema(self._backend.schema)
        self._features = given
        self._features_given = features is not None
        self._name = name
        self._version = version or meta.version_metadata.version_id or _seed_version(meta)
        self._home = home
        self.build_info = build_info
        self._deleted_checked: tuple[float, str | None] | None = None
        self._rows = rows
        self._columns: ColumnMap | None = None  # columns removed, renamed or cast (a view's)
        self._transform: Callable[[dict[str, list[Any]]], Any] | None = None
        if format not in FORMATS:
            msg = f"format must be one of {FORMATS}, got {format!r}"
            raise InvalidOptionError(msg)
        self._format = format

    # -- identity ------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """The catalog name (None for a cache opened by path outside a catalog)."""
        return self._name

    @property
    def version(self) -> str:
        """The version id: a hash of what defines the content."""
        return self._version

    @property
    def ref(self) -> str:
        """``name@version``, what :func:`stable_explore.load` accepts."""
        return f"{self._name}@{self._version}" if self._name else str(self.cache_dir)

    @property
    def latest_version(self) -> str | None:
        """The version ``latest`` points at now (None outside a catalog): compare with :attr:`version`.

        ``latest`` is the most recently created version; a cache hit returns an older one
        without moving it.
        """
        if self._name is None or self._home is None:
            return None
        from stable_explore.catalog import LATEST, open_catalog

        try:
            return open_catalog(self._home).read_ref(self._name, LATEST)
        except (OSError, ValueError):
            return None

    def deleted_reason(self, *, fresh: bool = False) -> str | None:
        """Why this version can no longer be read (gc deleted it after it was opened), or None while it is there.

        A local version costs one ``stat``; a version in a bucket is looked up at most every few seconds
        (``fresh=True``: now). Views and the browser ask before each page, so a deleted version is named,
        never shown stale; a save asks afresh before it writes.
        """
        remote = self._meta.remote
        if remote is None:
            from stable_explore.storage.backends.fsutil import version_gone

            return version_gone(self.cache_dir)
        now = time.monotonic()
        checked = self._deleted_checked
        if checked is not None and now - checked[0] < _DELETED_CHECK_SECONDS and not fresh:
            return checked[1]
        from stable_explore.storage.backends.remote_file import location_store
        from stable_explore.storage.format.cache_meta import METADATA_FILE

        reason = None
        if not location_store(remote).exists(f"{remote.prefix}/{METADATA_FILE}"):
            reason = (
                f"version {self._version} ({remote.url}/{remote.prefix}) was garbage-collected by gc after this "
                "dataset was opened, so its shards are gone; load the dataset again (tag a version to keep it from gc)"
            )
        self._deleted_checked = (now, reason)
        return reason

    @property
    def features(self) -> Features:
        """The schema, with class names, shapes and dtypes."""
        return self._features

    @property
    def cache_dir(self) -> Path:
        """The version's directory on disk."""
        return self._meta.cache_dir

    @property
    def home(self) -> Path | str | None:
        """The catalog home this version lives in: a folder or a bucket's URL (None for a cache opened by path)."""
        return self._home

    @property
    def cache_meta(self) -> ShardedCacheMeta:
        """The version's checked ``_metadata.json`` (shards, features, its record); shared, read-only."""
        return self._meta

    @property
    def backend(self) -> ShardReader:
        """The shard reader behind this dataset (shared by its views), whichever backend it reads.

        A version with column groups is read through a joined reader (its shards' and its groups').
        """
        return self._backend

    @property
    def num_shards(self) -> int:
        """Shard files of the version (an edited version may share some with its parent)."""
        return self._meta.num_shards

    @property
    def num_segments(self) -> int:
        """Segments: runs of consecutive rows of one shard file, in row order (one per shard in format 1)."""
        return self._backend.num_segments

    @property
    def nbytes(self) -> int:
        """Bytes of the version's shard files on disk (the whole version, also for a view)."""
        return self._meta.nbytes

    @property
    def shard_row_counts(self) -> list[int]:
        """Rows of the version in each shard file, by shard index."""
        counts = [0] * self._meta.num_shards
        for shard, _, rows in self._backend.segments:
            counts[shard] += rows
        return counts

    def shard_ids(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The shard file each row of this dataset is stored in, in this dataset's order.

        ``rows`` (positions in this dataset) asks for those rows only: a page's, without an array of every row's.
        """
        segments = self._backend.segments
        per_segment = np.array([shard for shard, _, _ in segments], dtype=np.int64)
        offsets = self._backend.segment_offsets
        if rows is None and self._rows is None:  # every row in order: each segment's shard, repeated
            repeated: np.ndarray = np.repeat(per_segment, np.diff(offsets)[: len(per_segment)])
            return repeated
        base = self.base_rows(rows)
        segment = np.searchsorted(offsets, base, side="right") - 1
        ids: np.ndarray = per_segment[segment] if len(per_segment) else np.zeros(0, dtype=np.int64)
        return ids

    @property
    def is_view(self) -> bool:
        """True when this covers a selection of the version's rows, not all of them."""
        return self._rows is not None

    @property
    def view_rows(self) -> range | np.ndarray | None:
        """The version's rows this view covers, in order (a range or an array), or None for the whole version."""
        return self._rows

    @property
    def metadata(self) -> Metadata:
        """Description, license, hashes, lineage and the user's metadata, as one JSON-ready dict."""
        record = self._meta.version_metadata
        ours = {
            "description": record.description,
            "license": record.license,
            "hashes": {
                "content": record.content_digest,
                "shards": dict(zip(self._meta.shard_filenames, self._meta.shard_hashes or [], strict=False)),
            },
            "version_id": self._version,
            "name": self._name,
            "created_at": record.created_at,
            "parent": record.parent,
            "message": record.message,
            "operations": [dict(op) for op in record.operations],
            "source_fingerprint": record.source_fingerprint,
            "num_rows": self._meta.num_rows,
        }
        return Metadata({**record.metadata, **ours})

    # Easydata's names for a dataset's metadata. A user's own key is ds.metadata.KEY: the dataset has no
    # __getattr__, so a typo (ds.num_row, ds.to_pandsa()) is an AttributeError and a type error.
    @property
    def DESCR(self) -> str | None:  # Easydata's name
        """The description (``--description``); Easydata's ``DESCR``."""
        return self._meta.version_metadata.description

    @property
    def LICENSE(self) -> str | None:  # Easydata's name
        """The license (``--license``); Easydata's ``LICENSE``."""
        return self._meta.version_metadata.license

    @property
    def HASHES(self) -> dict[str, Any]:  # Easydata's name
        """The content digest and each shard's hash; Easydata's ``HASHES``."""
        hashes: dict[str, object] = self.metadata["hashes"]
        return hashes

    def _ipython_key_completions_(self) -> list[str]:
        """Column names, offered by IPython after ``ds["``."""
        return list(self._features)

    # -- rows and views ------------------------------------------------------

    def __len__(self) -> int:
        return self._meta.num_rows if self._rows is None else len(self._rows)

    def base_rows(self, rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Row numbers, in the version this came from, of the rows this covers.

        ``rows`` (positions in this dataset) asks for those rows only: a page's, without an array of every row's.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(10)], se.Features(x=se.Value("int64")),
        ...               name="ten", home=tempfile.mkdtemp(), progress=False)
        >>> view = ds[2:9:2]
        >>> view.base_rows().tolist(), view.base_rows([3, 0]).tolist()
        ([2, 4, 6, 8], [8, 2])
        """
        if rows is not None:
            return np.asarray(select_rows(self._all_rows(), rows), dtype=np.int64)
        if self._rows is None:
            return np.arange(self._meta.num_rows, dtype=np.int64)
        if isinstance(self._rows, range):
            return np.arange(self._rows.start, self._rows.stop, self._rows.step, dtype=np.int64)
        return np.asarray(self._rows, dtype=np.int64)

    def _all_rows(self) -> Rows:
        return range(self._meta.num_rows) if self._rows is None else self._rows

    def _view(self, rows: Rows | None, *, format: str | None = None) -> CachedDataset:
        clone = object.__new__(CachedDataset)
        clone.__dict__.update(self.__dict__)
        clone._rows = rows
        clone._format = format or self._format
        return clone

    def _select(self, selection: object) -> Rows:
        """Turn a slice, list, array or boolean mask over this dataset into base rows."""
        return select_rows(self._all_rows(), selection)

    def __getitem__(self, key: object) -> Any:
        if isinstance(key, (int, np.integer)):
            return self._rows_at(np.array([self._base_row(key)], dtype=np.int64))[0]
        if isinstance(key, str):
            return self.column(key)
        return self._view(self._select(key))

    def _base_row(self, index: object) -> int:
        position = position_of(index, len(self))
        return position if self._rows is None else int(self._rows[position])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Batched row access (``torch.utils.data.DataLoader`` calls this)."""
        return self._rows_at(self._select(list(indices)))

    def __iter__(self) -> Iterator[Any]:
        for batch in self._iter_row_batches(1000):
            yield from batch

    def arrow_column(self, column: str) -> pa.Array:
        """One stored column of this dataset's rows, in order, as Arrow (``__key__`` and ``__row_hash__`` too)."""
        return self._column_arrow(column)

    def stored_column(self, column: str) -> str:
        """The stored column that ``column`` reads: itself, or another one in a view made by ``rename_column``.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=tempfile.mkdtemp(),
        ...               progress=False)
        >>> ds.rename_column("x", "y").stored_column("y")
        'x'
        """
        return self._column_map().stored(column)

    def _column_arrow(self, column: str, rows: np.ndarray | None = None) -> pa.Array:
        if self._columns is not None:
            table = self._table_of(self._all_rows() if rows is None else rows, [column])
            mapped = table.column(0)
            return mapped.combine_chunks() if mapped.num_chunks != 1 else mapped.chunk(0)
        if self._rows is None and (rows is None or len(rows) == self._meta.num_rows):  # every row, in order
            chunked = self._backend.column(column)
        else:
            rows = self.base_rows() if rows is None else rows
            chunked = self._backend.take(rows, columns=[column]).column(column)
        return chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)

    def keys(self) -> list[int | str]:
        """Each row's key (the generator's key, or its running index), in this dataset's order."""
        if self._meta.is_stable_datasets_v1:
            keys: list[int | str] = self.base_rows().tolist()
            return keys
        stored: list[int | str] = self._column_arrow(KEY_COLUMN).to_pylist()  # int64 or string keys
        return stored

    def row_hashes(self) -> np.ndarray:
        """Each row's 64-bit content hash, in this dataset's order."""
        hashes: np.ndarray = self._column_arrow(HASH_COLUMN).to_numpy(zero_copy_only=False)
        return hashes

    def shard_of(self, index: int) -> tuple[int, int]:
        """(shard file, row within that file) where row ``index`` of this dataset is stored."""
        base = self._base_row(index)
        offsets = self._backend.segment_offsets
        segment = int(np.searchsorted(offsets, base, side="right") - 1)
        shard, start, _ = self._backend.segments[segment]
        return shard, start + base - int(offsets[segment])

    # -- columns and transforms of views (stable_explore.dataset._habits) -----

    def _column_map(self) -> ColumnMap:
        return self._columns if self._columns is not None else ColumnMap.of(self._features)

    def _with_columns(self, columns: ColumnMap) -> CachedDataset:
        clone = self._view(self._rows)
        clone._columns = columns
        clone._features = columns.features
        return clone

    def _stored_column_type(self, column: str) -> pa.DataType:
        stored_type: pa.DataType = self._backend.schema.field(self._column_map().stored(column)).type
        return stored_type

    def _with_transform(self, transform: Callable[[dict[str, list[Any]]], Any] | None) -> CachedDataset:
        clone = self._view(self._rows)
        clone._transform = transform
        return clone

    def _check_stored_columns(self, action: str) -> None:
        """Edits address stored columns: a view with removed, renamed or cast columns cannot take them."""
        if self._columns is not None and self._columns != ColumnMap.of(self._meta.features or self._features):
            msg = (
                f"{action} works on the stored columns {list(self._meta.features or [])}, and this view shows "
                f"{list(self._features)} (select_columns, remove_columns, rename_column, cast_column or cast): "
                "edit the dataset those came from, or write the view as a new dataset with "
                "se.build(view.with_format('python'), view.features, name=...)"
            )
            raise SchemaError(msg)

    def _feature_columns(self) -> list[str]:
        return list(self._features)

    # -- export: to_arrow, to_pandas, to_parquet (stable_explore.dataset._export.Exports) --

    def label_counts(self, column: str | None = None) -> dict[str, int]:
        """Rows per class name (every class listed, zeros included), from the label column alone."""
        name = column or self._features.first_of(ClassLabel)
        if name is None or not isinstance(self._features.get(name), ClassLabel):
            msg = f"no ClassLabel column {'named ' + repr(column) if column else 'in this dataset'}"
            raise ColumnNotFoundError(msg)
        feature = self._features[name]
        assert isinstance(feature, ClassLabel)
        values = self._column_arrow(name).to_numpy(zero_copy_only=False)
        values = values[~np.isnan(values)].astype(np.int64) if values.dtype.kind == "f" else values
        classes = feature.num_classes or 0
        counts = np.bincount(values[(values >= 0) & (values < classes)], minlength=classes)
        return {label: int(count) for label, count in zip(feature.names or (), counts, strict=True)}

    # -- integrity -----------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Re-hash every shard of this version and check its id (the same check as :func:`stable_explore.verify`)."""
        from stable_explore.storage.check.verify import verify

        return verify(self.cache_dir)


def _seed_version(meta: ShardedCacheMeta) -> str:
    """An id for a cache that has none (stable-datasets format-1 format): its folder and the identity of its files.

    A stable-datasets cache records nothing about its content, so the id follows the files themselves
    (inode, size, modification time): two caches, or one cache rewritten in place, differ.
    """
    from stable_explore._canonical import fingerprint

    files = []
    for path in meta.shard_paths:
        stat = path.stat()
        files.append([path.name, stat.st_ino, stat.st_size, stat.st_mtime_ns])
    return "v1-" + fingerprint({"dir": str(meta.cache_dir.resolve()), "files": files}, 12)
