"""A version with column groups, read as one table: its shard rows joined by position with its group files.

A version made by ``ds.map`` or ``ds.add_columns`` keeps its parent's shard files and adds
group files that hold only the new columns, row for row (see
:mod:`stable_explore.storage.format.column_groups`). :class:`JoinedBackend` composes a reader
of the shards and one reader per group (each an :class:`~stable_explore.storage.read.reader.ArrowBackend`,
so batch digests, memory maps and bucket range reads work as for any shard) and answers every
read by reading the asked columns from whichever reader holds them, at the same rows. A group
column shadows a column of the same name in the shards or an earlier group.

The row hash of a joined row is the standard row hash of all its columns: the last group that
stores ``__row_hash__`` (one that replaced a column) gives it, else the shards do, carried on
over the columns of the groups after it (see :func:`~stable_explore.storage.format.hashing.continue_row_hashes`).

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"x": i} for i in range(4)], se.Features(x=se.Value("int64")),
...               name="n", home=tempfile.mkdtemp(), progress=False)
>>> more = ds.add_columns({"double": [0.0, 2.0, 4.0, 6.0]}, progress=False)
>>> reader = open_reader(more.cache_meta)
>>> reader.take([3, 0], columns=["x", "double"]).to_pydict()
{'x': [3, 0], 'double': [6.0, 0.0]}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.schema import HASH_COLUMN, KEY_COLUMN
from stable_explore.storage.format.hashing import continue_row_hashes
from stable_explore.storage.format.sidecars import BatchDigestList
from stable_explore.storage.read.layout import ShardLayout
from stable_explore.storage.read.mapped import MappedReader
from stable_explore.storage.read.reader import ArrowBackend
from stable_explore.storage.read.reader import open_reader as open_shards_reader
from stable_explore.storage.read.remote import RemoteReader
from stable_explore.storage.read.remote_shards import RemoteShards
from stable_explore.storage.read.small_files import SMALL_FILES

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.format.column_groups import ColumnGroup
    from stable_explore.storage.read.protocol import ShardReader

__all__ = ["JoinedBackend", "group_reader", "open_reader"]

_BASE = -1


def group_reader(meta: ShardedCacheMeta, group: ColumnGroup) -> ArrowBackend:
    """A reader of one column group's files (for a bucket's version, by range requests)."""
    files = group.files
    paths = [meta.cache_dir / f.file for f in files]
    counts = [f.rows for f in files]
    schema = group.features.to_arrow_schema()
    if group.row_hash:
        schema = schema.append(pa.field(HASH_COLUMN, pa.uint64()))
    digests = BatchDigestList(meta.cache_dir, [f.batches for f in files], counts, meta.remote, SMALL_FILES)
    layout = ShardLayout.of(paths, counts, schema=schema, batch_digests=digests)
    if meta.remote is None:
        return ArrowBackend.over(MappedReader(layout))
    remote = RemoteShards(
        meta.remote, tuple(f.file for f in files), tuple(f.size for f in files), tuple(f.digest for f in files)
    )
    return ArrowBackend.over(RemoteReader(layout, remote))


class JoinedBackend:
    """The rows of a version with column groups: its shards' reader and its groups' readers, joined by position.

    It answers what the dataset layer asks of a reader (``take``, ``slice``, ``column``,
    ``iter_batches`` and the shape of the rows); the row layout (segments, shard files) is the shards'.
    """

    def __init__(
        self,
        base: ArrowBackend,
        groups: Sequence[ArrowBackend],
        *,
        columns: Sequence[Sequence[str]],
        row_hash: Sequence[bool],
        features_order: Sequence[str],
        schema_metadata: dict[bytes, bytes] | None = None,
    ) -> None:
        self.base = base
        self.groups = list(groups)
        self._columns = [list(c) for c in columns]
        self._row_hash = list(row_hash)
        self._order = list(features_order)
        self._metadata = schema_metadata
        self._owner: dict[str, int] = {}
        for index, names in enumerate(self._columns):
            for name in names:
                self._owner[name] = index
        # the row hash: from the last group that stores one (else the shards), carried over the groups after it
        stored = [i for i, has in enumerate(self._row_hash) if has]
        self._hash_from = stored[-1] if stored else _BASE
        position = {name: i for i, name in enumerate(self._order)}
        self._carried = [
            (index, name, position[name])
            for index in range(self._hash_from + 1, len(self.groups))
            for name in self._columns[index]
        ]
        self._schema: pa.Schema | None = None

    @classmethod
    def from_meta(cls, meta: ShardedCacheMeta, base: ArrowBackend) -> JoinedBackend:
        """The joined reader of a version with column groups, over ``base`` (its shards' reader)."""
        groups = meta.column_groups
        assert groups is not None
        assert meta.features is not None
        return cls(
            base,
            [group_reader(meta, group) for group in groups.groups],
            columns=[group.columns for group in groups.groups],
            row_hash=[group.row_hash for group in groups.groups],
            features_order=list(meta.features),
            schema_metadata=meta.features.to_arrow_schema().metadata,
        )

    # -- which reader holds what ---------------------------------------------

    def _reader(self, index: int) -> ArrowBackend:
        return self.base if index == _BASE else self.groups[index]

    def owner(self, column: str) -> int:
        """The group a column is read from (-1: the shards)."""
        return self._owner.get(column, _BASE)

    @property
    def schema(self) -> pa.Schema:
        """The joined schema: the version's features in order (as read), then the key and row-hash columns."""
        if self._schema is None:
            fields = [self._reader(self.owner(name)).schema.field(name) for name in self._order]
            fields.append(self.base.schema.field(KEY_COLUMN))
            fields.append(pa.field(HASH_COLUMN, pa.uint64()))
            self._schema = pa.schema(fields, metadata=self._metadata)
        return self._schema

    def _read(self, fetch: Callable[[ArrowBackend, list[str]], pa.Table], columns: Sequence[str] | None) -> pa.Table:
        """The asked columns at the rows ``fetch`` reads: each from its reader, the row hash carried over."""
        names = list(columns) if columns is not None else self.schema.names
        wanted: dict[int, list[str]] = {}

        def want(index: int, name: str) -> None:
            found = wanted.setdefault(index, [])
            if name not in found:
                found.append(name)

        for name in names:
            if name != HASH_COLUMN:
                want(_BASE if name == KEY_COLUMN else self.owner(name), name)
        if HASH_COLUMN in names:
            want(self._hash_from, HASH_COLUMN)
            for index, name, _ in self._carried:
                want(index, name)
        if not wanted:  # no column asked: the rows still count
            wanted[_BASE] = []
        tables = {index: fetch(self._reader(index), cols) for index, cols in wanted.items()}
        arrays: list[pa.ChunkedArray] = []
        for name in names:
            if name == HASH_COLUMN:
                arrays.append(self._hashes(tables))
            else:
                arrays.append(tables[_BASE if name == KEY_COLUMN else self.owner(name)].column(name))
        if not names:
            return tables[_BASE]
        fields = [pa.field(name, array.type) for name, array in zip(names, arrays, strict=True)]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=self._metadata))

    def _hashes(self, tables: dict[int, pa.Table]) -> pa.ChunkedArray:
        start = tables[self._hash_from].column(HASH_COLUMN).to_numpy()
        if not self._carried:
            return pa.chunked_array([pa.array(start, type=pa.uint64())])
        carried = [tables[index].column(name).combine_chunks() for index, name, _ in self._carried]
        positions = [position for _, _, position in self._carried]
        return pa.chunked_array([pa.array(continue_row_hashes(start, carried, positions), type=pa.uint64())])

    # -- reads ---------------------------------------------------------------

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (see :meth:`ArrowBackend.take`)."""
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        return self._read(lambda reader, cols: reader.take(rows, columns=cols), columns)

    def slice(self, start: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``start`` .. ``start + length`` (clipped at the end)."""
        return self._read(lambda reader, cols: reader.slice(start, length, columns=cols), columns)

    def get_row(self, idx: int) -> dict[str, Any]:
        """One row as a dict of Python values (images stay bytes)."""
        row: dict[str, object] = self.take([idx]).to_pylist()[0]
        return row

    def column(self, name: str) -> pa.ChunkedArray:
        """One column over all rows."""
        if name == HASH_COLUMN:
            return self.slice(0, self.num_rows, [name]).column(0)
        return self._reader(_BASE if name == KEY_COLUMN else self.owner(name)).column(name)

    @property
    def table(self) -> pa.Table:
        """Every row as one table."""
        return self.slice(0, self.num_rows)

    def iter_batches(
        self, shard_indices: Sequence[int] | None = None, shuffle: bool = False, seed: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Record batches segment by segment, optionally in a shuffled (seeded) order."""
        order = list(range(self.num_segments) if shard_indices is None else shard_indices)
        if shuffle:
            np.random.default_rng(seed).shuffle(order)
        offsets = self.base.segment_offsets
        for segment in order:
            start, stop = int(offsets[segment]), int(offsets[segment + 1])
            yield from self.slice(start, stop - start).to_batches()

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file (the shards' own columns)."""
        return self.base.file_columns(file_id, columns)

    def close(self) -> None:
        """Drop every open memory map."""
        self.base.close()
        for group in self.groups:
            group.close()

    # -- the row layout: the shards' -------------------------------------------

    @property
    def num_rows(self) -> int:
        """Total rows."""
        return self.base.num_rows

    def __len__(self) -> int:
        return self.num_rows

    @property
    def num_segments(self) -> int:
        """Segments of the shard files, in row order."""
        return self.base.num_segments

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (shard file, first row, count) segments of the shard files."""
        return self.base.segments

    @property
    def segment_row_counts(self) -> list[int]:
        """Rows in each segment."""
        return [int(n) for n in np.diff(self.base.segment_offsets)]

    @property
    def segment_offsets(self) -> np.ndarray:
        """First row of each segment, plus the total at the end."""
        return self.base.segment_offsets

    @property
    def num_shards(self) -> int:
        """stable-datasets' ``ArrowBackend`` name for :attr:`num_segments`."""
        return self.base.num_shards

    @property
    def shard_row_counts(self) -> list[int]:
        """stable-datasets' ``ArrowBackend`` name for :attr:`segment_row_counts`."""
        return self.base.shard_row_counts

    @property
    def shard_offsets(self) -> np.ndarray:
        """stable-datasets' ``ArrowBackend`` name for :attr:`segment_offsets`."""
        return self.base.shard_offsets

    @property
    def shard_files(self) -> list[Path]:
        """The shard files, by shard index (group files are not shards)."""
        return self.base.shard_files

    @property
    def shard_paths(self) -> list[Path]:
        """The shard file of each segment, in row order."""
        return self.base.shard_paths

    @property
    def is_file_backed(self) -> bool:
        """Always True: a joined version is files."""
        return True

    @property
    def cache_dir(self) -> Path | None:
        """The version's folder."""
        return self.base.cache_dir

    @property
    def open_shard_count(self) -> int:
        """How many memory maps are open now, shards and group files."""
        return self.base.open_shard_count + sum(g.open_shard_count for g in self.groups)

    def __repr__(self) -> str:
        added = sum(len(c) for c in self._columns)
        return (
            f"JoinedBackend({self.num_rows} rows, {self.num_shards} shards, {added} group column(s), {self.cache_dir})"
        )


def open_reader(meta: ShardedCacheMeta, **kwargs: Any) -> ShardReader:
    """The reader of a version: its shards', joined with its column groups' when it has some."""
    base = open_shards_reader(meta, **kwargs)
    if meta.column_groups is None:
        return base
    return JoinedBackend.from_meta(meta, ArrowBackend.over(base))
