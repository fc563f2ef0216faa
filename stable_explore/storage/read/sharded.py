"""What every reader of shard files shares: routing rows to segments, takes, slices, columns and batches.

A version's rows are segments of its shard files (:class:`~.layout.ShardLayout`). A reader of shard
files opens each file its own way (:class:`~.mapped.MappedReader` maps it, :class:`~.remote.RemoteReader`
reads it by ranges from a bucket); everything else is here, once: the bounded set of open shards,
the check that a file holds the rows the metadata says, the version's cell patches (applied in one
place as a shard is opened, :mod:`.patching`), and every way rows leave, each through the record
batches' digest checks (:class:`~.open_shard.OpenShard`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import CacheCorruptionError, RowIndexError
from stable_explore.schema import HASH_COLUMN
from stable_explore.storage.kept import Kept, kept_each
from stable_explore.storage.read.batches import rows_match
from stable_explore.storage.read.open_shard import OpenShard, as_run, gather

if TYPE_CHECKING:
    from stable_explore.storage.read.layout import ShardLayout
    from stable_explore.storage.read.patching import ShardPatches

__all__ = ["DEFAULT_MAX_OPEN_SHARDS", "ROWS_CHECKED_ALONE", "ShardedReader", "check_indices"]

DEFAULT_MAX_OPEN_SHARDS = 128
_SPARSE_TAKE_LIMIT = 2048
ROWS_CHECKED_ALONE = 256
"""A slice of at most this many rows is copied and its images checked by row hash, as a take's (not their batches)."""
_WIDE = {pa.binary(): pa.large_binary(), pa.string(): pa.large_string()}  # types compared as read


def check_indices(indices: np.ndarray, num_rows: int) -> None:
    """Raise ``RowIndexError`` naming the first index outside ``0 .. num_rows - 1``."""
    if indices.size and (indices.min() < 0 or indices.max() >= num_rows):
        bad = indices[(indices < 0) | (indices >= num_rows)][0]
        msg = f"row index {int(bad)} is out of range for {num_rows} rows"
        raise RowIndexError(msg)


class ShardedReader:
    """Rows of a version stored in shard files; a subclass says how one file is opened (:meth:`_open_file`).

    Parameters
    ----------
    layout:
        The files, their row counts, the row segments, the stored schema and the batch digests.
    patches:
        The version's cell patches (None: it has none), applied as each shard is opened.
    max_open_shards:
        How many shards stay open; the least recently used closes first.
    validate:
        Check the Arrow structure of what is read without digests to check it by.
    """

    slice_segments_from = 1
    """A slice over at least this many segment boundaries plans its digest checks for all files at once."""

    def __init__(
        self,
        layout: ShardLayout,
        *,
        patches: ShardPatches | None = None,
        max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS,
        validate: bool = True,
    ) -> None:
        self.layout = layout
        self.patches = patches
        self.max_open_shards = max(1, int(max_open_shards))
        self.validate = validate
        self._expected_columns = (
            [(f.name, _WIDE.get(f.type, f.type)) for f in layout.schema] if layout.schema is not None else None
        )
        self._lock = threading.Lock()
        self._open: Kept[int, OpenShard] = kept_each("reader open shards", self.max_open_shards, holds_files=True)

    # -- what a subclass provides ---------------------------------------------

    def _open_file(self, file_id: int) -> OpenShard:
        """Open shard file ``file_id`` (unpatched), its record batches' digest check ready."""
        raise NotImplementedError

    def describe(self, file_id: int) -> str | Path:
        """The shard's path (or URL), for messages."""
        return self.layout.files[file_id]

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, as stored: unpatched, unchecked."""
        raise NotImplementedError

    # -- size and shape --------------------------------------------------------

    @property
    def num_rows(self) -> int:
        """Rows of the version, known without opening any shard."""
        return self.layout.num_rows

    def __len__(self) -> int:
        return self.num_rows

    @property
    def num_segments(self) -> int:
        """Runs of consecutive rows of one shard file, in row order (one per shard in format 1)."""
        return self.layout.num_segments

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (shard file, first row in that file, row count) segments."""
        return self.layout.segments

    @property
    def segment_offsets(self) -> np.ndarray:
        """First row of each segment, plus the total at the end."""
        offsets: np.ndarray = self.layout.offsets.copy()
        return offsets

    @property
    def shard_files(self) -> list[Path]:
        """The shard files, each listed once, by index."""
        return list(self.layout.files)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (binary columns shown as large_binary, as read)."""
        if self.layout.files:
            schema: pa.Schema = self._file(0).schema
            return schema
        return self.layout.schema if self.layout.schema is not None else pa.schema([])

    @property
    def open_shard_count(self) -> int:
        """How many shards are open now."""
        return len(self._open)

    # -- access ----------------------------------------------------------------

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (duplicates kept), copying only those rows (and ``columns``)."""
        index_array = np.asarray(indices, dtype=np.int64).reshape(-1)
        check_indices(index_array, self.num_rows)
        cols = list(columns) if columns is not None else None
        if index_array.size == 0:
            return self._empty(cols)
        run = as_run(index_array)
        if run is not None:
            return self.slice(*run, columns=cols)
        if index_array.size <= _SPARSE_TAKE_LIMIT:
            return self._take_sparse(index_array, cols)
        layout = self.layout

        def take_segment(segment: int, rows: np.ndarray) -> pa.Table:
            file_id, start, _ = layout.segment(segment)
            return self._file(file_id).take(rows + start, cols)

        return gather(layout.offsets, index_array, take_segment)

    def _take_sparse(self, indices: np.ndarray, columns: list[str] | None, *, again: bool = True) -> pa.Table:
        """Few rows: one zero-copy 1-row slice each, in the requested order, then one compacting copy.

        For a few hundred scattered rows this beats a ``take`` per record batch,
        which pays a kernel dispatch per batch touched and a reordering pass.
        """
        layout = self.layout
        segment_ids = np.searchsorted(layout.offsets, indices, side="right") - 1
        files = layout.segment_file[segment_ids]
        local = indices - layout.offsets[segment_ids] + layout.segment_start[segment_ids]
        batch_ids = np.empty_like(local)
        opened = {file_id: self._file(file_id) for file_id in distinct(files).tolist()}
        need = np.zeros(indices.size, dtype=bool)  # rows whose copy is checked by row hash
        plan = None
        for file_id, shard in opened.items():
            where = files == file_id
            batch_ids[where] = np.searchsorted(shard.offsets, local[where], side="right") - 1
            if not shard.cuts_rows:  # a bucket's shard that cuts rows fetches only theirs, below
                shard.prefetch(distinct(batch_ids[where]).tolist())
            found = shard.checked_take(batch_ids[where], local[where], columns)
            if found.any():
                need[where] = found
                plan = plan or shard.row_plan
        names = list(self.schema.names) if columns is None else columns
        copied = names if plan is None else list(dict.fromkeys([*names, *plan.names, HASH_COLUMN]))
        within = np.empty_like(local)  # each row's place in its record batch
        for file_id, shard in opened.items():
            where = files == file_id
            within[where] = local[where] - shard.offsets[batch_ids[where]]
        if any(shard.cuts_rows for shard in opened.values()):  # a bucket's: only the rows' bytes are fetched
            slices: list[pa.RecordBatch] = [None] * indices.size
            for file_id, shard in opened.items():
                where = np.flatnonzero(files == file_id)
                picked = shard.picked(batch_ids[where], within[where], copied)
                for position, piece in zip(where.tolist(), picked, strict=True):
                    slices[position] = piece
            table = pa.Table.from_batches(slices).combine_chunks()
        else:  # mapped batches: a zero-copy 1-row slice each, one copy of the columns kept
            batches_of = {file_id: shard.batches for file_id, shard in opened.items()}
            table = pa.Table.from_batches(
                [
                    batches_of[file_id][batch_id].slice(row, 1)
                    for file_id, batch_id, row in zip(files.tolist(), batch_ids.tolist(), within.tolist(), strict=True)
                ]
            )
            table = table.select(copied).combine_chunks()
        if plan is None:
            return table
        matched = rows_match(table, plan) | ~need
        for file_id, shard in opened.items():  # rows that do not match are refused here, naming the damage
            where = files == file_id
            shard.confirm_taken(batch_ids[where], local[where], matched[where])
        if again and not matched.all():
            # no damage named: the bytes were a bad copy in the local read cache, dropped by the check (or the
            # file's row hashes are not of its cells, and its batches now count as checked): copy them once more
            return self._take_sparse(indices, columns, again=False)
        return table.select(names)

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
        if stop <= start:
            return self._empty(cols)
        if stop - start <= ROWS_CHECKED_ALONE:  # a few rows: copied and checked by row hash, not whole batches
            return self._take_sparse(np.arange(start, stop, dtype=np.int64), cols)
        first, last = self.layout.locate(start, stop)
        if last > first and last - first >= self.slice_segments_from:
            return self._slice_segments(first, last, start, stop, cols)
        offsets = self.layout.offsets
        pieces = []
        for segment in range(first, last + 1):
            lo = max(start, int(offsets[segment])) - int(offsets[segment])
            hi = min(stop, int(offsets[segment + 1])) - int(offsets[segment])
            pieces.append(self._segment_table(segment, cols, rows=(lo, hi)))
        return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)

    def _segment_table(
        self, segment: int, columns: list[str] | None = None, rows: tuple[int, int] | None = None
    ) -> pa.Table:
        """The rows of one segment, zero-copy; with ``rows`` (start, stop within the segment), only those rows."""
        file_id, start, count = self.layout.segment(segment)
        opened = self._file(file_id)
        if rows is None:
            opened.checked_rows(start, start + count, columns)
            table = opened.table.slice(start, count)
        else:
            opened.checked_rows(start + rows[0], start + rows[1], columns)
            table = opened.rows(start + rows[0], start + rows[1])
        return table if columns is None else table.select(columns)

    def _slice_segments(self, first: int, last: int, start: int, stop: int, cols: list[str] | None) -> pa.Table:
        """Rows start..stop over segments first..last: checks planned per file at once, then one table of slices.

        An edited version's rows can be a thousand segments. Where each starts and ends among its
        file's record batches is found for all of them at once, in arrays; then per segment only a
        slice of its first and last batch is made, the batches between are taken as they are
        (a list slice, no Python per batch), and one table is made of them all.
        """
        layout = self.layout
        ids = np.arange(first, last + 1)
        offsets_of = layout.offsets
        lo = np.maximum(start, offsets_of[ids]) - offsets_of[ids] + layout.segment_start[ids]
        hi = np.minimum(stop, offsets_of[ids + 1]) - offsets_of[ids] + layout.segment_start[ids]
        files = layout.segment_file[ids]
        batches: list[pa.RecordBatch] = []  # every record batch of the files read, file after file
        starts: list[np.ndarray] = []  # per file, the first row of each of its batches
        first_batch = np.empty(ids.size, dtype=np.int64)  # of each segment, in ``batches``
        last_batch = np.empty(ids.size, dtype=np.int64)
        for file_id in distinct(files).tolist():
            opened = self._file(file_id)
            mine = files == file_id
            chunks = opened.all_batches()
            offsets = opened.offsets
            if len(chunks) != offsets.size - 1:  # never for a shard opened here; a guard, not a path
                msg = f"shard has {len(chunks)} record batches, its check counts {offsets.size - 1}"
                raise CacheCorruptionError(self.describe(file_id), msg)
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
        chunks = [self._segment_column(i, name) for i in range(self.num_segments)]
        if not chunks:
            return pa.chunked_array([], type=self.schema.field(name).type)
        return pa.chunked_array([c for chunk in chunks for c in chunk.chunks], type=chunks[0].type)

    def _segment_column(self, segment: int, name: str) -> pa.ChunkedArray:
        """One column of one segment, its batches checked."""
        column: pa.ChunkedArray = self._segment_table(segment, [name]).column(0)
        return column

    def iter_batches(
        self,
        shard_indices: Sequence[int] | None = None,
        shuffle: bool = False,
        seed: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Record batches segment by segment, optionally in a shuffled (seeded) segment order."""
        order = list(range(self.num_segments) if shard_indices is None else shard_indices)
        if shuffle:
            np.random.default_rng(seed).shuffle(order)
        for segment in order:
            yield from self._segment_batches(segment)

    def _segment_batches(self, segment: int) -> Iterator[pa.RecordBatch]:
        """The record batches of one segment (its first and last cut to it), each checked as it is reached."""
        file_id, start, count = self.layout.segment(segment)
        if count == 0:
            return
        opened = self._file(file_id)
        offsets = opened.offsets
        first = int(np.searchsorted(offsets, start, side="right")) - 1
        last = int(np.searchsorted(offsets, start + count - 1, side="right")) - 1
        for batch_id in range(first, last + 1):
            opened.checked((batch_id,))
            batch = opened.batches[batch_id]
            lo = max(start - int(offsets[batch_id]), 0)
            hi = min(start + count - int(offsets[batch_id]), batch.num_rows)
            yield batch if lo == 0 and hi == batch.num_rows else batch.slice(lo, hi - lo)

    def close(self) -> None:
        """Let go of every open shard (they reopen on the next access)."""
        with self._lock:
            self._open.clear()

    # -- opening a shard ---------------------------------------------------------

    def _file(self, file_id: int) -> OpenShard:
        """Shard file ``file_id``, open: its row count checked and the version's cell patches applied."""
        with self._lock:
            shard = self._open.get(file_id)
            if shard is not None:
                return shard
        opened = self._open_file(file_id)
        expected = self.layout.file_rows[file_id]
        if opened.num_rows != expected:
            msg = f"shard holds {opened.num_rows} rows, metadata says {expected}"
            raise CacheCorruptionError(self.describe(file_id), msg)
        if self.patches is not None:
            opened = self.patches.apply(file_id, opened)
        with self._lock:
            self._open.put(file_id, opened)
        return opened

    def _check_schema(self, where: str | Path, found: pa.Schema) -> None:
        """A shard's columns and types must be those the metadata's features give (a flipped type is damage)."""
        pairs = self._expected_columns
        if pairs is None:
            return
        if [(f.name, _WIDE.get(f.type, f.type)) for f in found] != pairs:
            msg = f"shard holds columns {found.names} of types {found.types}, but the metadata's features give {pairs}"
            raise CacheCorruptionError(where, msg)

    def _init_args(self) -> dict[str, object]:
        """What a pickle carries: the layout and options, never open files (for DataLoader workers)."""
        return {
            "layout": self.layout,
            "patches": self.patches,
            "max_open_shards": self.max_open_shards,
            "validate": self.validate,
        }

    def __reduce__(self) -> tuple[object, tuple[type, dict[str, object]]]:
        return _rebuilt, (type(self), self._init_args())

    def __repr__(self) -> str:
        where = self.layout.files[0].parent if self.layout.files else "no shards"
        return f"{type(self).__name__}({self.num_rows} rows, {self.num_segments} segments, {where})"


def _rebuilt(cls: type[ShardedReader], args: dict[str, object]) -> ShardedReader:
    """A reader unpickled: made anew from what its pickle carried."""
    return cls(**args)  # type: ignore[arg-type]
