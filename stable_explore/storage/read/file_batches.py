"""A local shard's record batches, each read from its map when first asked for.

A shard whose record batches have digests needs no whole-file pass when it is opened: its
footer names the batches, the metadata gives their row counts, and each batch is checked
against its digests before any of its rows is handed out. So opening one reads only the
footer; a batch is cut from the map (zero-copy, its ``binary`` columns widened to
``large_binary``) the first time a read reaches it. A save of 10 relabels in a 100-batch
shard reads the ~10 batches that hold those rows: reading all of them, validating and widening
them first cost ~1.7 ms of a ~10 ms save.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> path = pathlib.Path(tempfile.mkdtemp()) / "shard-00000.arrow"
>>> table = pa.table({"b": pa.array([b"x", b"y", b"z"], pa.binary())})
>>> with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
...     writer.write_table(table, max_chunksize=2)
>>> batches = FileBatches.open(path, [2, 1])
>>> len(batches), batches[1].column(0).to_pylist(), batches.schema.field("b").type
(2, [b'z'], DataType(large_binary))
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.read.batch_sequence import BatchSequence
from stable_explore.storage.read.shard_file import (
    check_schema_metadata,
    opening,
    shard_buffer,
    widened,
    widened_schema,
)

if TYPE_CHECKING:
    from stable_explore.storage.kept import FileIdentity

__all__ = ["FileBatches"]


class _ShardFile:
    """What every reader of one shard file shares: its IPC reader over the map, and the batches read so far."""

    def __init__(self, reader: ipc.RecordBatchFileReader, row_counts: Sequence[int], identity: FileIdentity) -> None:
        self.reader = reader
        self.identity = identity
        self.row_counts = tuple(row_counts)
        self.offsets = np.cumsum([0, *self.row_counts], dtype=np.int64)
        self.schema = widened_schema(reader.schema)
        self.stored: list[pa.RecordBatch | None] = [None] * len(self.row_counts)  # as in the file
        self.widened: list[pa.RecordBatch | None] = [None] * len(self.row_counts)  # as handed out
        self.parts: dict[tuple[str, ...], dict[int, pa.RecordBatch]] = {}  # some columns of batches (rows())
        self.table: pa.Table | None = None
        self.lock = threading.Lock()


class FileBatches(BatchSequence):
    """One local shard's record batches, read (and kept) one by one as they are first indexed.

    Each batch is checked as it is read: its structure (lengths and buffers, not its data: the
    digests are the authority on that) and its row count against the one written. A digest check
    reads a batch's columns one at a time (:meth:`column`), a content digest a few rows of its key
    and row-hash columns (:meth:`rows`): the batch's ``binary`` columns are widened only for a read
    of its rows or a check of one of them. ``table()`` gives the whole shard, made from every batch once.

    The versions a save links the same file into share what was read of it (:meth:`seen_from`);
    each names its own path in errors.
    """

    def __init__(self, path: Path, shared: _ShardFile) -> None:
        self.path = path
        self._shared = shared
        self.identity = shared.identity
        self.row_counts = shared.row_counts
        self.schema = shared.schema

    @classmethod
    def open(cls, path: Path, row_counts: Sequence[int]) -> FileBatches:
        """Open the shard at ``path``: its footer and schema, which must hold ``len(row_counts)`` batches.

        Raises
        ------
        CacheCorruptionError
            The file is not a readable Arrow IPC file, its schema's JSON metadata does not parse, or
            it holds another number of record batches than were written; the message names it.
        CacheNotFoundError
            The version was deleted (garbage-collected) since it was opened.
        """
        with opening(path):
            buffer, identity = shard_buffer(path)
            reader = ipc.open_file(pa.BufferReader(buffer))
            _ = reader.schema.names  # names as text: a damaged footer raises here
        check_schema_metadata(reader.schema, path)
        if reader.num_record_batches != len(row_counts):
            msg = (
                f"shard holds {reader.num_record_batches} record batches, but {len(row_counts)} were written: "
                "the file is damaged"
            )
            raise CacheCorruptionError(path, msg)
        return cls(path, _ShardFile(reader, row_counts, identity))

    @property
    def where(self) -> Path:  # type: ignore[override]
        """The path this shard is read through, for errors."""
        return self.path

    def seen_from(self, path: Path) -> FileBatches:
        """The same file's batches (what was read of them shared) as read through ``path``: its errors name it."""
        return self if path == self.path else FileBatches(path, self._shared)

    def __len__(self) -> int:
        return len(self.row_counts)

    def _batch(self, index: int) -> pa.RecordBatch:
        shared = self._shared
        found = shared.widened[index]
        if found is None:
            stored = self._stored(index)
            with shared.lock:  # one batch object for every reader of it
                found = shared.widened[index]
                if found is None:
                    found = shared.widened[index] = widened(stored)
        return found

    def column(self, index: int, column: int) -> pa.Array:
        """One column of batch ``index``, as :meth:`__getitem__` hands it out (without widening the others).

        A digest check reads its columns one by one: the small ones need no widened copy of the batch.
        """
        index = self.index_of(index)
        stored = self._stored(index).column(column)
        if stored.type == pa.binary():  # widened with its batch, once: a read of the rows hands that batch out next
            found: pa.Array = self._batch(index).column(column)
            return found
        return stored

    @property
    def num_rows(self) -> int:
        """Rows in the shard (as written)."""
        return int(self._shared.offsets[-1])

    def rows(self, start: int, length: int, columns: Sequence[str]) -> pa.Table:
        """Shard rows [start, start + length) of ``columns``, reading only the batches they span.

        Unchecked against the digests (the batches' structure and row counts are checked as they are read).
        """
        names = list(columns)
        stop = min(start + length, self.num_rows)
        if stop <= start:
            return self.schema.empty_table().select(names)
        offsets = self._shared.offsets
        first = int(np.searchsorted(offsets, start, side="right")) - 1
        last = int(np.searchsorted(offsets, stop - 1, side="right")) - 1
        parts = self._shared.parts.setdefault(tuple(names), {})
        picked = []
        for i in range(first, last + 1):
            part = parts.get(i)
            if part is None:
                part = parts[i] = widened(self._stored(i).select(names))
            picked.append(part)
        return pa.Table.from_batches(picked).slice(start - int(offsets[first]), stop - start)

    @property
    def batches_read(self) -> int:
        """How many of the shard's batches were read so far (what the reads until now cost)."""
        return sum(batch is not None for batch in self._shared.stored)

    def table(self) -> pa.Table:
        """The whole shard as one table (every batch read), made once."""
        shared = self._shared
        if shared.table is None:
            shared.table = pa.Table.from_batches(list(self), schema=self.schema)
        return shared.table

    def _stored(self, index: int) -> pa.RecordBatch:
        """Batch ``index`` as stored (``binary`` not widened): read and checked once."""
        shared = self._shared
        found = shared.stored[index]
        if found is None:
            with shared.lock:
                found = shared.stored[index]
                if found is None:
                    found = shared.stored[index] = self._read_batch(index)
        return found

    def _read_batch(self, index: int) -> pa.RecordBatch:
        try:
            batch = self._shared.reader.get_batch(index)
            batch.validate()  # lengths and buffer counts, no data read: the digests check the bytes
        except (pa.ArrowException, OSError, ValueError) as exc:
            msg = f"record batch {index} cannot be read: {exc} (the file is damaged or truncated)"
            raise CacheCorruptionError(self.path, msg) from exc
        written = self.row_counts[index]
        if batch.num_rows != written:
            msg = f"record batch {index} holds {batch.num_rows} rows, but {written} were written: the file is damaged"
            raise CacheCorruptionError(self.path, msg)
        return batch
