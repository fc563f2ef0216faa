"""Picking the reader of a version, and ``ArrowBackend``: stable-datasets' name and constructor over the readers.

:func:`open_reader` gives the reader a version's metadata calls for: a bucket's version is read by
range requests (:class:`~.remote.RemoteReader`), a local one through memory maps
(:class:`~.mapped.MappedReader`). Both have the shape of :class:`~.protocol.ShardReader`, as has
:class:`~.table_reader.TableReader` over an in-memory table; the dataset layer only knows that shape.

:class:`ArrowBackend` keeps stable-datasets' constructor (``shard_paths`` and ``shard_row_counts``, or
``table``), ``from_meta`` and names (``num_shards``, ``shard_offsets``, ``get_row``, ``table``)
for code written against stable-datasets; it holds one of the readers and passes every read to it.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(10)), Features(x=Value("int64")), out, batch_size=4)
>>> open_reader(meta).take([9, 0, 9]).column("x").to_pylist()
[9, 0, 9]
>>> backend = ArrowBackend.from_meta(meta)
>>> backend.num_shards, backend.get_row(3)["x"]
(1, 3)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import InvalidOptionError
from stable_explore.storage.read.layout import ShardLayout
from stable_explore.storage.read.mapped import MappedReader
from stable_explore.storage.read.patching import ShardPatches
from stable_explore.storage.read.remote import RemoteReader
from stable_explore.storage.read.remote_shards import RemoteShards
from stable_explore.storage.read.shard_file import open_shard
from stable_explore.storage.read.sharded import DEFAULT_MAX_OPEN_SHARDS, ShardedReader, check_indices
from stable_explore.storage.read.table_reader import TableReader

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.read.protocol import ShardReader

__all__ = ["DEFAULT_MAX_OPEN_SHARDS", "ArrowBackend", "open_reader"]


def open_reader(
    meta: ShardedCacheMeta, *, max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS, validate: bool = True
) -> ShardedReader:
    """The reader of the version ``meta`` describes: range reads for a bucket's version, memory maps for a local one.

    Nothing is opened until rows are read. ``max_open_shards`` bounds the shards kept open;
    ``validate`` checks the Arrow structure of what has no digests to be checked by.
    """
    schema = None
    # a version with column groups: its shards hold its base features (the groups hold the rest)
    features = meta.shard_features if meta.shard_features is not None else meta.features
    if features is not None:
        key_type = pa.string() if meta.key_type == "string" else pa.int64()
        schema = features.to_arrow_schema(with_row_columns=True, key_type=key_type)
    layout = ShardLayout.of(
        meta.shard_paths,
        meta.shard_row_counts,
        segments=meta.row_segments,
        schema=schema,
        batch_digests=meta.batch_digests,
    )
    patches = ShardPatches.of(meta.cell_patches, meta.shard_hashes)
    if meta.remote is not None:
        return RemoteReader(
            layout, RemoteShards.of_meta(meta), patches=patches, max_open_shards=max_open_shards, validate=validate
        )
    return MappedReader(layout, patches=patches, max_open_shards=max_open_shards, validate=validate)


class ArrowBackend:
    """stable-datasets' ArrowBackend: over shard files (memory-mapped) or over one in-memory table.

    Parameters
    ----------
    shard_paths, shard_row_counts:
        The shard files and their row counts (read from the files when not given).
    table:
        Instead of shards: an in-memory table.
    schema:
        The stored Arrow schema; needed only for a cache with zero shards.
    max_open_shards:
        How many shards stay open; the least recently used closes first.
    validate:
        Check each shard's Arrow structure in full when it is opened, so that
        a damaged file raises ``CacheCorruptionError`` instead of crashing.
    """

    def __init__(
        self,
        *,
        shard_paths: Sequence[Path | str] | None = None,
        table: pa.Table | None = None,
        shard_row_counts: Sequence[int] | None = None,
        schema: pa.Schema | None = None,
        max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS,
        validate: bool = True,
    ) -> None:
        if (shard_paths is None) == (table is None):
            msg = "ArrowBackend needs either shard_paths (with shard_row_counts) or table"
            raise InvalidOptionError(msg)
        self.reader: ShardReader
        if table is not None:
            self.reader = TableReader(table)
            return
        assert shard_paths is not None
        if shard_row_counts is None:
            shard_row_counts = [open_shard(Path(p), validate=validate).num_rows for p in shard_paths]
        layout = ShardLayout.of(shard_paths, shard_row_counts, schema=schema)
        self.reader = MappedReader(layout, max_open_shards=max_open_shards, validate=validate)

    @classmethod
    def from_meta(
        cls, meta: ShardedCacheMeta, *, max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS, validate: bool = True
    ) -> ArrowBackend:
        """A backend over the cache that ``meta`` describes (see :func:`open_reader`)."""
        return cls.over(open_reader(meta, max_open_shards=max_open_shards, validate=validate))

    @classmethod
    def over(cls, reader: ShardReader) -> ArrowBackend:
        """stable-datasets' ``ArrowBackend`` names over ``reader``."""
        backend = cls.__new__(cls)
        backend.reader = reader
        return backend

    # -- the reader's ----------------------------------------------------------

    @property
    def num_rows(self) -> int:
        """Total rows, known without opening any shard."""
        return self.reader.num_rows

    def __len__(self) -> int:
        return self.reader.num_rows

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (binary columns shown as large_binary, as read)."""
        return self.reader.schema

    @property
    def num_segments(self) -> int:
        """Segments (runs of consecutive rows of one shard file) in row order; one per shard in format 1."""
        return self.reader.num_segments

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (shard file index, first row in that file, row count) segments."""
        return self.reader.segments

    @property
    def segment_offsets(self) -> np.ndarray:
        """First row of each segment, plus the total at the end."""
        return self.reader.segment_offsets

    @property
    def shard_files(self) -> list[Path]:
        """The shard files, each listed once, by shard index."""
        return self.reader.shard_files

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (duplicates kept), copying only those rows (and ``columns``)."""
        return self.reader.take(indices, columns)

    def slice(self, start: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``start`` .. ``start + length`` (clipped at the end), zero-copy."""
        return self.reader.slice(start, length, columns)

    def column(self, name: str) -> pa.ChunkedArray:
        """One column over all shards."""
        return self.reader.column(name)

    def iter_batches(
        self, shard_indices: Sequence[int] | None = None, shuffle: bool = False, seed: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Record batches shard by shard, optionally in a shuffled (seeded) shard order."""
        return self.reader.iter_batches(shard_indices, shuffle, seed)

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, as stored."""
        return self.reader.file_columns(file_id, columns)

    def close(self) -> None:
        """Let go of every open shard (they reopen on the next access)."""
        self.reader.close()

    # -- stable-datasets' ArrowBackend names --------------------------------------------------------

    @property
    def num_shards(self) -> int:
        """stable-datasets' name for :attr:`num_segments` (the number of shard files in format 1)."""
        return self.reader.num_segments

    @property
    def shard_row_counts(self) -> list[int]:
        """Rows in each segment, in row order."""
        return [count for _, _, count in self.reader.segments] if self.reader.num_segments else []

    @property
    def shard_offsets(self) -> np.ndarray:
        """stable-datasets' ``ArrowBackend`` name for :attr:`segment_offsets`."""
        return self.reader.segment_offsets

    @property
    def shard_paths(self) -> list[Path]:
        """The shard file of each segment, in row order."""
        files = self.reader.shard_files
        return [files[shard] for shard, _, _ in self.reader.segments] if files else []

    @property
    def is_file_backed(self) -> bool:
        """True for shard files on disk, False for an in-memory table."""
        return not isinstance(self.reader, TableReader)

    @property
    def cache_dir(self) -> Path | None:
        """The folder of the shard files (None for an in-memory table)."""
        files = self.reader.shard_files
        return files[0].parent if files else None

    @property
    def table(self) -> pa.Table:
        """Every row as one table: zero-copy over the memory maps, but maps every shard."""
        if isinstance(self.reader, TableReader):
            return self.reader.table
        return self.reader.slice(0, self.reader.num_rows)

    def get_row(self, idx: int) -> dict[str, Any]:
        """One row as a dict of Python values (images stay bytes)."""
        check_indices(np.array([idx], dtype=np.int64), self.reader.num_rows)
        row: dict[str, object] = self.reader.slice(int(idx), 1).to_pylist()[0]
        return row

    @property
    def open_shard_count(self) -> int:
        """How many shards are open now."""
        return self.reader.open_shard_count if isinstance(self.reader, ShardedReader) else 0

    def __repr__(self) -> str:
        where = f"{self.cache_dir}" if self.is_file_backed else "in-memory"
        return f"ArrowBackend({self.num_rows} rows, {self.num_shards} shards, {where})"
