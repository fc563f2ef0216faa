"""Random and sequential access to a directory of Arrow IPC shards.

:class:`ArrowBackend` maps shards lazily (one memory map per shard, a bounded
number open at once), routes global row numbers to (shard, record batch, row)
through cumulative counts, and returns Arrow tables. It never decodes images:
that is the dataset layer's job. Where the metadata records batch digests, each
record batch is checked against its digest before any of its rows is returned
(once per process; see :mod:`stable_explore.storage.read.batches`).

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> out = pathlib.Path(tempfile.mkdtemp()) / "c"
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(10)), Features(x=Value("int64")), out, batch_size=4)
>>> backend = ArrowBackend.from_meta(meta)
>>> backend.take([9, 0, 9]).column("x").to_pylist()
[9, 0, 9]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import (
    CacheCorruptionError,
    CacheNotFoundError,
    InvalidOptionError,
    RemoteStoreError,
    RowIndexError,
)
from stable_explore.schema import HASH_COLUMN
from stable_explore.storage.backends.remote_reader import LazyBatches, RemoteShards, widened_schema
from stable_explore.storage.read.batches import ShardCheck
from stable_explore.storage.read.kept import Kept, kept_each
from stable_explore.storage.read.open_files import opened
from stable_explore.storage.read.open_shard import OpenShard, as_run, gather
from stable_explore.storage.read.shard_file import open_shard

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.format.cell_patches import CellPatches
    from stable_explore.storage.read.batches import BatchDigests

__all__ = ["ArrowBackend"]

DEFAULT_MAX_OPEN_SHARDS = 128
_SPARSE_TAKE_LIMIT = 2048
_MANY_SEGMENTS = 16  # a remote slice over more segments reads whole shards (a local one: over 1 segment)
_WIDE = {pa.binary(): pa.large_binary(), pa.string(): pa.large_string()}  # types compared as read


class ArrowBackend:
    """Arrow-native access to sharded IPC files (or to one in-memory table).

    Parameters
    ----------
    shard_paths, shard_row_counts:
        The shard files and their row counts (from the metadata, so no shard
        is opened to learn the length).
    table:
        Instead of shards: an in-memory table.
    schema:
        The stored Arrow schema; needed only for a cache with zero shards.
    segments:
        The rows in order as ``(shard index, first row, count)`` segments, for a
        version that reuses parts of shards; default: every shard whole, in order.
        Seed 001's ``num_shards`` and ``shard_row_counts`` then count segments.
    max_open_shards:
        How many shard memory maps stay open; the least recently used closes first.
    validate:
        Check each shard's Arrow structure in full when it is opened, so that
        a damaged file raises ``CacheCorruptionError`` instead of crashing.
    batch_digests:
        Per shard file, its record batches' digests (or None); each batch is
        checked before rows of it are returned, once per process.
    remote:
        For a version in a bucket: its shards, read by range requests through
        the local read cache instead of memory maps (``shard_paths`` then only name them).
    cell_patches, shard_digests:
        Label cells the version changes in its shards (format revision 5), applied as each
        shard is opened; ``shard_digests`` names the shards they refer to.
    """

    def __init__(
        self,
        *,
        shard_paths: Sequence[Path | str] | None = None,
        table: pa.Table | None = None,
        shard_row_counts: Sequence[int] | None = None,
        schema: pa.Schema | None = None,
        segments: Sequence[tuple[int, int, int]] | None = None,
        max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS,
        validate: bool = True,
        batch_digests: Sequence[BatchDigests | None] | None = None,
        remote: RemoteShards | None = None,
        cell_patches: CellPatches | None = None,
        shard_digests: Sequence[str] | None = None,
    ) -> None:
        if (shard_paths is None) == (table is None):
            msg = "ArrowBackend needs either shard_paths (with shard_row_counts) or table"
            raise InvalidOptionError(msg)
        self._table = table
        self._schema = schema
        self._expected_columns: list[tuple[str, pa.DataType]] | None = None
        self._validate = validate
        self._max_open = max(1, int(max_open_shards))
        self._lock = threading.Lock()
        self._open: Kept[int, OpenShard] = kept_each("reader open shards", self._max_open, holds_files=True)
        # one (shard, start, count) row per segment: a version of many segments is parsed in one pass
        self._segments = np.asarray(segments, dtype=np.int64).reshape(-1, 3) if segments is not None else None
        self._batch_digests = batch_digests  # a BatchDigestList reads each file when its shard is first read
        self._remote = remote
        self._patches = cell_patches if cell_patches else None
        self._shard_digests = list(shard_digests) if shard_digests is not None else None
        if self._patches is not None and self._shard_digests is None:
            msg = "cell_patches need the shard_digests they name shards by"
            raise InvalidOptionError(msg)
        if shard_paths is not None:
            self._files: list[Path] | None = [Path(p) for p in shard_paths]
            if shard_row_counts is None:
                shard_row_counts = [open_shard(p, validate=validate).num_rows for p in self._files]
            if len(shard_row_counts) != len(self._files):
                msg = f"{len(self._files)} shard paths but {len(shard_row_counts)} row counts"
                raise InvalidOptionError(msg)
            self._file_counts = [int(c) for c in shard_row_counts]
            runs = self._segments
            if runs is None:
                counts = np.array(self._file_counts, dtype=np.int64)
                runs = np.column_stack([np.arange(counts.size), np.zeros_like(counts), counts])
        else:
            assert table is not None
            self._files = None
            self._file_counts = [table.num_rows]
            runs = np.array([[0, 0, table.num_rows]], dtype=np.int64)
        self._segment_shard = np.ascontiguousarray(runs[:, 0])
        self._segment_start = np.ascontiguousarray(runs[:, 1])
        self._segment_rows: list[int] = runs[:, 2].tolist()
        self._offsets = np.concatenate([[0], np.cumsum(runs[:, 2])]).astype(np.int64)

    @classmethod
    def from_meta(cls, meta: ShardedCacheMeta, **kwargs: Any) -> ArrowBackend:
        """A backend over the cache that ``meta`` describes."""
        schema = None
        if meta.shard_features is not None:  # a version with column groups: the shards hold its base features
            key_type = pa.string() if meta.key_type == "string" else pa.int64()
            schema = meta.shard_features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        return cls(
            shard_paths=meta.shard_paths,
            shard_row_counts=meta.shard_row_counts,
            schema=schema,
            segments=meta.row_segments,
            batch_digests=meta.batch_digests,
            remote=RemoteShards.of_meta(meta) if meta.remote is not None else None,
            cell_patches=meta.cell_patches,
            shard_digests=meta.shard_hashes,
            **kwargs,
        )

    # -- size and shape ------------------------------------------------------

    @property
    def num_rows(self) -> int:
        """Total rows, known without opening any shard."""
        return int(self._offsets[-1])

    def __len__(self) -> int:
        return self.num_rows

    @property
    def num_segments(self) -> int:
        """Segments (runs of consecutive rows of one shard file) in row order; one per shard in format 1."""
        return len(self._segment_rows) if self._files is not None else 0

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (shard file index, first row in that file, row count) segments."""
        return list(zip(self._segment_shard.tolist(), self._segment_start.tolist(), self._segment_rows, strict=True))

    @property
    def segment_row_counts(self) -> list[int]:
        """Rows in each segment, in row order."""
        return list(self._segment_rows) if self._files is not None else []

    @property
    def segment_offsets(self) -> np.ndarray:
        """First row of each segment, plus the total at the end."""
        offsets: np.ndarray = self._offsets.copy()
        return offsets

    @property
    def shard_files(self) -> list[Path]:
        """The shard files, each listed once, by shard index."""
        return list(self._files or [])

    @property
    def num_shards(self) -> int:
        """Seed 001's name for :attr:`num_segments` (the same as the number of shard files in format 1)."""
        return self.num_segments

    @property
    def shard_row_counts(self) -> list[int]:
        """Seed 001's name for :attr:`segment_row_counts`."""
        return self.segment_row_counts

    @property
    def shard_offsets(self) -> np.ndarray:
        """Seed 001's name for :attr:`segment_offsets`."""
        return self.segment_offsets

    @property
    def shard_paths(self) -> list[Path]:
        """The shard file of each segment, in row order (seed 001's name)."""
        if self._files is None:
            return []
        return [self._files[i] for i in self._segment_shard.tolist()]

    @property
    def is_file_backed(self) -> bool:
        """True for shard files on disk, False for an in-memory table."""
        return self._files is not None

    @property
    def cache_dir(self) -> Path | None:
        """The folder of the shard files (None for an in-memory table)."""
        return self._files[0].parent if self._files else None

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (binary columns shown as large_binary, as read)."""
        if self._table is not None:
            return self._table.schema
        if self._files:
            schema: pa.Schema = self._file(0).schema
            return schema
        if self._schema is not None:
            return self._schema
        return pa.schema([])

    def _segment_table(
        self, segment: int, columns: list[str] | None = None, rows: tuple[int, int] | None = None
    ) -> pa.Table:
        """The rows of one shard (run), zero-copy; with ``rows`` (start, stop within the run), only those rows."""
        if self._table is not None:
            table = self._table
        else:
            opened = self._file(int(self._segment_shard[segment]))
            start, count = int(self._segment_start[segment]), self._segment_rows[segment]
            if rows is None:
                opened.checked_rows(start, start + count, columns)
                table = opened.table
                if self._segments is not None:
                    table = table.slice(start, count)
            else:
                opened.checked_rows(start + rows[0], start + rows[1], columns)
                table = opened.rows(start + rows[0], start + rows[1])
        if rows is not None and self._table is not None:
            table = table.slice(rows[0], rows[1] - rows[0])
        return table if columns is None else table.select(columns)

    @property
    def table(self) -> pa.Table:
        """Every shard as one table: zero-copy over the memory maps, but maps every shard."""
        if self._table is not None:
            return self._table
        if not self._files:
            return self._schema.empty_table() if self._schema is not None else pa.table({})
        return pa.concat_tables([self._segment_table(i) for i in range(self.num_shards)])

    # -- access --------------------------------------------------------------

    def _check(self, indices: np.ndarray) -> None:
        if indices.size and (indices.min() < 0 or indices.max() >= self.num_rows):
            bad = indices[(indices < 0) | (indices >= self.num_rows)][0]
            msg = f"row index {int(bad)} is out of range for {self.num_rows} rows"
            raise RowIndexError(msg)

    def get_row(self, idx: int) -> dict[str, Any]:
        """One row as a dict of Python values (images stay bytes)."""
        self._check(np.array([idx], dtype=np.int64))
        row: dict[str, Any] = self.slice(int(idx), 1).to_pylist()[0]
        return row

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (duplicates kept), copying only those rows (and ``columns``)."""
        index_array = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._check(index_array)
        cols = list(columns) if columns is not None else None
        if index_array.size == 0:
            return self._empty(cols)
        run = as_run(index_array)
        if run is not None:
            return self.slice(*run, columns=cols)
        if self._table is not None:
            table = self._table if cols is None else self._table.select(cols)
            return gather(np.array([0], dtype=np.int64), index_array, lambda _p, rows: table.take(pa.array(rows)))
        if index_array.size <= _SPARSE_TAKE_LIMIT:
            return self._take_sparse(index_array, cols)

        def take_segment(segment: int, rows: np.ndarray) -> pa.Table:
            return self._file(int(self._segment_shard[segment])).take(rows + self._segment_start[segment], cols)

        return gather(self._offsets, index_array, take_segment)

    def _take_sparse(self, indices: np.ndarray, columns: list[str] | None) -> pa.Table:
        """Few rows: one zero-copy 1-row slice each, in the requested order, then one compacting copy.

        For a few hundred scattered rows this beats a ``take`` per record batch,
        which pays a kernel dispatch per batch touched and a reordering pass.
        """
        segment_ids = np.searchsorted(self._offsets, indices, side="right") - 1
        files = self._segment_shard[segment_ids]
        local = indices - self._offsets[segment_ids] + self._segment_start[segment_ids]
        batch_ids = np.empty_like(local)
        opened = {file_id: self._file(file_id) for file_id in np.unique(files).tolist()}
        for file_id, shard in opened.items():
            where = files == file_id
            batch_ids[where] = np.searchsorted(shard.offsets, local[where], side="right") - 1
            shard.prefetch(np.unique(batch_ids[where]).tolist())
            shard.checked(np.unique(batch_ids[where]).tolist(), columns)
        slices = []
        for file_id, batch_id, row in zip(files.tolist(), batch_ids.tolist(), local.tolist(), strict=True):
            shard = opened[file_id]
            slices.append(shard.batches[batch_id].slice(row - int(shard.offsets[batch_id]), 1))
        table = pa.Table.from_batches(slices)
        if columns is not None:
            table = table.select(columns)
        return table.combine_chunks()

    def _empty(self, columns: list[str] | None) -> pa.Table:
        schema = self.schema
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        return schema.empty_table()

    def slice(self, start: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``start`` .. ``start + length`` (clipped at the end), zero-copy."""
        start = max(0, int(start))
        stop = min(self.num_rows, start + max(0, int(length)))
        cols = list(columns) if columns is not None else None
        if self._table is not None:
            table = self._table.slice(start, stop - start)
            return table if cols is None else table.select(cols)
        if stop <= start:
            return self._empty(cols)
        first = int(np.searchsorted(self._offsets, start, side="right") - 1)
        last = int(np.searchsorted(self._offsets, stop - 1, side="right") - 1)
        if last > first and (self._remote is None or last - first >= _MANY_SEGMENTS):
            return self._slice_segments(first, last, start, stop, cols)
        pieces = []
        for segment in range(first, last + 1):
            lo = max(start, int(self._offsets[segment])) - int(self._offsets[segment])
            hi = min(stop, int(self._offsets[segment + 1])) - int(self._offsets[segment])
            pieces.append(self._segment_table(segment, cols, rows=(lo, hi)))
        return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)

    def _slice_segments(self, first: int, last: int, start: int, stop: int, cols: list[str] | None) -> pa.Table:
        """Rows start..stop over segments first..last: checks planned per file at once, then one table of slices.

        An edited version's rows can be a thousand segments. Where each starts and ends among its
        file's record batches is found for all of them at once, in arrays; then per segment only a
        slice of its first and last batch is made, the batches between are taken as they are
        (a list slice, no Python per batch), and one table is made of them all.
        """
        ids = np.arange(first, last + 1)
        lo = np.maximum(start, self._offsets[ids]) - self._offsets[ids] + self._segment_start[ids]
        hi = np.minimum(stop, self._offsets[ids + 1]) - self._offsets[ids] + self._segment_start[ids]
        files = self._segment_shard[ids]
        batches: list[pa.RecordBatch] = []  # every record batch of the files read, file after file
        starts: list[np.ndarray] = []  # per file, the first row of each of its batches
        first_batch = np.empty(ids.size, dtype=np.int64)  # of each segment, in ``batches``
        last_batch = np.empty(ids.size, dtype=np.int64)
        for file_id in np.unique(files).tolist():
            opened = self._file(file_id)
            mine = files == file_id
            chunks = opened.all_batches()
            offsets = opened.offsets
            if len(chunks) != offsets.size - 1:  # never for a shard opened here; a guard, not a path
                msg = f"shard has {len(chunks)} record batches, its check counts {offsets.size - 1}"
                raise CacheCorruptionError(self._shard_name(file_id), msg)
            firsts = np.searchsorted(offsets, lo[mine], side="right") - 1
            lasts = np.searchsorted(offsets, hi[mine] - 1, side="right") - 1
            if opened.check is not None:  # every batch a segment touches, each once
                bound = len(chunks) + 1
                marks = np.bincount(firsts, minlength=bound) - np.bincount(lasts + 1, minlength=bound)
                opened.checked(np.flatnonzero(np.cumsum(marks)[:-1] > 0).tolist(), cols)
            first_batch[mine] = len(batches) + firsts
            last_batch[mine] = len(batches) + lasts
            batches.extend(chunks)
            starts.append(offsets)
        bounds = np.concatenate([offsets[:-1] for offsets in starts])
        ends = np.concatenate([offsets[1:] for offsets in starts])
        skip = lo - bounds[first_batch]  # rows of its first batch before the segment
        keep = hi - bounds[last_batch]  # rows of its last batch up to the segment's end
        whole_first = (skip == 0).tolist()
        whole_last = (hi == ends[last_batch]).tolist()
        pieces: list[pa.RecordBatch] = []
        for b0, b1, a, z, w0, w1 in zip(
            first_batch.tolist(),
            last_batch.tolist(),
            skip.tolist(),
            keep.tolist(),
            whole_first,
            whole_last,
            strict=True,
        ):
            if b0 == b1:
                pieces.append(batches[b0] if w0 and w1 else batches[b0].slice(a, z - a))
                continue
            pieces.append(batches[b0] if w0 else batches[b0].slice(a))
            pieces.extend(batches[b0 + 1 : b1])
            pieces.append(batches[b1] if w1 else batches[b1].slice(0, z))
        table = pa.Table.from_batches(pieces)
        return table if cols is None else table.select(cols)

    def column(self, name: str) -> pa.ChunkedArray:
        """One column over all shards (zero-copy, maps every shard)."""
        if self._table is not None:
            return self._table.column(name)
        if self._remote is not None:  # only this column's bytes, from each shard
            chunks = []
            for shard, start, count in self.segments:
                column = self._file(shard).column(name)
                chunks.append(column if self._segments is None else column.slice(start, count))
        else:
            chunks = [self._segment_table(i, [name]).column(0) for i in range(self.num_shards)]
        if not chunks:
            return pa.chunked_array([], type=self.schema.field(name).type)
        return pa.chunked_array([c for chunk in chunks for c in chunk.chunks], type=chunks[0].type)

    def iter_batches(
        self,
        shard_indices: Sequence[int] | None = None,
        shuffle: bool = False,
        seed: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Record batches shard by shard, optionally in a shuffled (seeded) shard order."""
        if self._table is not None:
            yield from self._table.to_batches()
            return
        order = list(range(self.num_shards) if shard_indices is None else shard_indices)
        if shuffle:
            np.random.default_rng(seed).shuffle(order)
        for segment in order:
            if self._segments is None:
                opened = self._file(int(self._segment_shard[segment]))
                for batch_id, batch in enumerate(opened.batches):
                    opened.checked((batch_id,))
                    yield batch
            else:
                yield from self._segment_table(segment).to_batches()

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, unchecked (for a shard in a bucket, only their bytes are read)."""
        assert self._files is not None
        if self._remote is not None:
            names = self.schema.names
            reader = self._remote.open(file_id, included_fields=[names.index(c) for c in columns])
            return reader.read_all()
        return open_shard(self._files[file_id], validate=False).select(list(columns))

    def close(self) -> None:
        """Drop every open memory map (they reopen on the next access)."""
        with self._lock:
            self._open.clear()

    # -- shard files ---------------------------------------------------------

    def _file(self, file_id: int) -> OpenShard:
        assert self._files is not None
        with self._lock:
            shard = self._open.get(file_id)
            if shard is not None:
                return shard
        opened = self._open_file(file_id)
        expected = self._file_counts[file_id]
        if opened.num_rows != expected:
            path = self._shard_name(file_id)
            msg = f"shard holds {opened.num_rows} rows, metadata says {expected}"
            raise CacheCorruptionError(path, msg)
        with self._lock:
            self._open.put(file_id, opened)
        return opened

    def _open_file(self, file_id: int) -> OpenShard:
        """Map a shard; with batch digests, check its footer first and name a damaged batch if it does not open."""
        assert self._files is not None
        path = self._files[file_id]
        digests = self._batch_digests[file_id] if self._batch_digests is not None else None
        if self._remote is not None:
            return self._open_remote(file_id, digests)
        # a shard with batch digests is not validated whole: each batch's bytes are checked against
        # their digests before any of its rows is handed out, and bytes equal to those written are
        # valid Arrow (validating whole 64 MB shards cost a save of 10 rows at 10M rows 350 MB of RSS)
        if digests is None:  # an older shard: validated in full when opened (once per process and file)
            table = open_shard(path, validate=self._validate)
            patched = self._patched(file_id, table)
            return OpenShard(patched, patched.to_batches(), None)
        patch = self._patches.for_file(self._shard_digest(file_id)) if self._patches is not None else None
        kept = opened(
            path,
            patch.key if patch is not None else "",
            lambda: open_shard(path, validate=False),
            lambda table: self._patched(file_id, table),
            patched_columns=[HASH_COLUMN, *patch.columns] if patch is not None else (),
        )
        self._check_schema(path, kept.table.schema)  # written by this format revision: exactly the features' types
        # the digests check the file's own batches; rows leave patched
        check = ShardCheck(path, digests, kept.batches, self._rows_of(file_id))
        return OpenShard(kept.read, kept.read_batches, check)

    def _shard_digest(self, file_id: int) -> str | None:
        return self._shard_digests[file_id] if self._shard_digests is not None else None

    def _patched(self, file_id: int, table: pa.Table) -> pa.Table:
        """``table`` (of shard ``file_id``) with the version's cell patches of that shard applied."""
        if self._patches is None:
            return table
        assert self._shard_digests is not None
        return self._patches.apply(self._shard_digests[file_id], table)

    def _shard_name(self, file_id: int) -> str | Path:
        """The shard's path, or its URL for a shard in a bucket (for messages)."""
        assert self._files is not None
        if self._remote is not None:
            return self._remote.describe(file_id)
        return self._files[file_id]

    def _open_remote(self, file_id: int, digests: BatchDigests | None) -> OpenShard:
        """A shard in a bucket: its footer now, each record batch when first asked for (see remote_file)."""
        assert self._remote is not None
        where = self._remote.describe(file_id)
        reader = self._remote.open(file_id)
        self._check_schema(where, reader.schema)
        batches = LazyBatches(reader, where, validate=self._validate, shards=self._remote, file_id=file_id)
        if digests is not None and len(batches) != len(digests.rows):
            msg = (
                f"shard holds {len(batches)} record batches, but {len(digests.rows)} were written: the file is damaged"
            )
            raise CacheCorruptionError(where, msg)
        counts = list(digests.rows) if digests is not None else None
        check = (
            ShardCheck(where, digests, batches, self._rows_of(file_id), identity=self._remote.digest(file_id))
            if digests is not None
            else None
        )
        remote = self._remote

        def open_columns(fields: list[int]) -> pa.Table:
            try:
                table: pa.Table = remote.read_columns(file_id, fields)
            except CacheNotFoundError:
                raise  # the version was garbage-collected since it was opened: said so
            except (pa.ArrowException, OSError, ValueError) as exc:
                if isinstance(exc, RemoteStoreError):
                    raise remote.gone_or(exc) from exc
                raise CacheCorruptionError(where, f"cannot be read: {exc}") from exc
            return table

        opened = OpenShard(
            None, batches, check, schema=widened_schema(reader.schema), row_counts=counts, open_columns=open_columns
        )
        if (
            self._patches is None
            or self._patches.for_file(self._shard_digests[file_id] if self._shard_digests else None) is None
        ):
            return opened
        # a patched shard in a bucket is read whole once (its batches still checked as fetched)
        patched = self._patched(file_id, opened.table)
        return OpenShard(patched, patched.to_batches(), check)

    def _check_schema(self, path: str | Path, found: pa.Schema) -> None:
        """A shard's columns and types must be those the metadata's features give (a flipped type is damage)."""
        if self._schema is None:
            return
        if self._expected_columns is None:  # once per backend: a version of many saves opens many files
            self._expected_columns = [(f.name, _WIDE.get(f.type, f.type)) for f in self._schema]
        pairs = self._expected_columns
        if [(f.name, _WIDE.get(f.type, f.type)) for f in found] != pairs:
            msg = f"shard holds columns {found.names} of types {found.types}, but the metadata's features give {pairs}"
            raise CacheCorruptionError(path, msg)

    def _rows_of(self, file_id: int) -> Callable[[int, int], str]:
        """Names shard rows [lo, hi) of file ``file_id`` as rows of this version, for error messages.

        The function holds the segment arrays, not the backend: a backend its open shards referred
        back to would be freed (and its memory maps unmapped) only by a garbage collection, in
        whichever later read happened to trigger one.
        """
        shards, starts, counts, offsets = self._segment_shard, self._segment_start, self._segment_rows, self._offsets

        def rows_of(lo: int, hi: int) -> str:
            found = []
            for segment, (shard, start, count) in enumerate(zip(shards.tolist(), starts.tolist(), counts, strict=True)):
                if shard == file_id and start < hi and lo < start + count:
                    first = int(offsets[segment]) + max(lo, start) - start
                    last = int(offsets[segment]) + min(hi, start + count) - start - 1
                    found.append(f"{first}-{last}")
            return f"rows {', '.join(found)} of the version" if found else "rows the version does not use"

        return rows_of

    @property
    def open_shard_count(self) -> int:
        """How many shard memory maps are open now."""
        return len(self._open)

    # -- pickling: paths and counts only, for DataLoader workers -------------

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = {"max_open_shards": self._max_open, "validate": self._validate}
        if self._files is not None:
            state["shard_paths"] = [str(p) for p in self._files]
            state["shard_row_counts"] = self._file_counts
            state["segments"] = self._segments
            state["batch_digests"] = self._batch_digests
            state["remote"] = self._remote
            state["cell_patches"] = self._patches
            state["shard_digests"] = self._shard_digests
            if not self._files and self._schema is not None:
                state["schema"] = self._schema
        else:
            state["table"] = self._table
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __repr__(self) -> str:
        where = f"{self.cache_dir}" if self.is_file_backed else "in-memory"
        return f"ArrowBackend({self.num_rows} rows, {self.num_shards} shards, {where})"
