"""The shards of a version in a bucket, as the shard reader sees them: opened by footer, read batch by batch.

:class:`RemoteShards` is what :class:`~stable_explore.storage.read.remote.RemoteReader` holds instead
of memory maps (picklable: the home's URL, never its credentials, and the shards' names, sizes
and digests from the metadata). :class:`LazyBatches` is a shard's record batches, each read (by
range requests through the read cache) the first time it is indexed, and kept in a small LRU.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from stable_explore.errors import CacheCorruptionError, RemoteStoreError
from stable_explore.storage.backends.read_cache import default_read_cache
from stable_explore.storage.backends.remote_file import (
    FETCHED,
    RemoteLocation,
    RemoteShardFile,
    count_fetched,
    gone_or,
    location_store,
    open_remote_shard,
)
from stable_explore.storage.backends.remote_ranges import BatchRanges, cached_fetch, merged_fetch
from stable_explore.storage.format.ipc_layout import UnsupportedLayout, is_flat
from stable_explore.storage.kept import Kept, kept, kept_each
from stable_explore.storage.read.batch_sequence import BatchSequence
from stable_explore.storage.read.shard_file import widened, widened_array, widened_schema

if TYPE_CHECKING:
    import numpy as np
    import pyarrow.ipc as ipc

    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = ["LazyBatches", "RemoteShards"]

_KEPT_BATCHES = 16  # decoded batches kept per open shard; older ones are read again from the local cache
_CUT: Kept[tuple[str, int, int], pa.Array] = kept(
    "remote column cuts", max_entries=1 << 16, weight=lambda array: int(array.nbytes), max_bytes=64 * 1024 * 1024
)
"""Whole columns of single batches of bucket shards read by range (row hashes, keys): (shard digest, batch, column).

Kept per process, like the checks they passed (:mod:`~stable_explore.storage.read.batches`), so a
dataset opened again finds them."""


@dataclass(frozen=True)
class RemoteShards:
    """A bucket's version's shard files: where they are, and their names, sizes and digests (from the metadata)."""

    location: RemoteLocation
    filenames: tuple[str, ...]
    sizes: tuple[int, ...]
    digests: tuple[str, ...]

    @classmethod
    def of_meta(cls, meta: ShardedCacheMeta) -> RemoteShards:
        """The remote shards of a version whose metadata came from a bucket."""
        if meta.remote is None or meta.shard_sizes is None or meta.shard_hashes is None:
            msg = "only a version with shard sizes and digests (format 2) can be read from a bucket"
            raise CacheCorruptionError(meta.cache_dir, msg)
        return cls(meta.remote, tuple(meta.shard_filenames), tuple(meta.shard_sizes), tuple(meta.shard_hashes))

    def describe(self, file_id: int) -> str:
        """The shard's URL, for messages."""
        return self.location.describe(self.filenames[file_id])

    def digest(self, file_id: int) -> str:
        """The shard's content digest: the read cache's key."""
        return self.digests[file_id]

    def open(self, file_id: int, included_fields: Sequence[int] | None = None) -> ipc.RecordBatchFileReader:
        """Arrow's reader over the shard (its footer is read now, nothing else)."""
        where = self.describe(file_id)
        for attempt in (1, 2):
            try:
                return open_remote_shard(
                    self.location,
                    self.filenames[file_id],
                    self.sizes[file_id],
                    self.digests[file_id],
                    included_fields=included_fields,
                )
            except RemoteStoreError as exc:
                raise self.gone_or(exc) from exc
            except (pa.ArrowException, OSError, ValueError) as exc:
                # damaged bytes in the read cache (another home's damaged copy of this shard) are dropped,
                # and the footer fetched from this home once more
                if attempt == 1 and self.drop_cached(file_id):
                    continue
                raise CacheCorruptionError(where, f"not a readable Arrow IPC file: {exc}") from exc
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def ranges(self, file_id: int, schema: pa.Schema) -> BatchRanges | None:
        """Exact-range reads of the shard's record batches; None when its layout cannot be cut (compressed)."""
        store = location_store(self.location)
        key = self.location.key(self.filenames[file_id])
        size = self.sizes[file_id]
        blocks = RemoteShardFile(store, key, size, self.digests[file_id])
        try:
            blocks.fetch_tail()  # the footer the open just read: from the read cache
        except RemoteStoreError as exc:
            raise self.gone_or(exc) from exc

        def read(spans: list[tuple[int, int]]) -> list[bytes]:
            return store.read_ranges(key, spans)

        counted = merged_fetch(read, counted=count_fetched)
        fetch = cached_fetch(counted, default_read_cache(), self.digests[file_id], tail=blocks.tail)
        try:
            return BatchRanges.of_bytes(fetch, size, schema, footer=blocks.read_spans)
        except UnsupportedLayout:
            return None
        except RemoteStoreError as exc:
            raise self.gone_or(exc) from exc

    def gone_or(self, exc: RemoteStoreError) -> Exception:
        """See :func:`~stable_explore.storage.backends.remote_file.gone_or`."""
        return gone_or(self.location, exc)

    def drop_cached(self, file_id: int) -> bool:
        """Drop the shard's blocks from the local read cache (they did not match); True if any were there."""
        return default_read_cache().drop(self.digests[file_id]) > 0

    def read_columns(self, file_id: int, fields: Sequence[int]) -> pa.Table:
        """Some columns of the whole shard: only their bytes, batches fetched by several threads at once.

        Each record batch costs a round trip or two (its header, then the columns' buffers); doing them
        one after another made a cold label column of 80 batches take seconds. The threads wait on the
        network, not the GIL (obstore releases it), and each has its own reader.
        """
        first_reader = self.open(file_id, included_fields=fields)
        count = first_reader.num_record_batches
        before = FETCHED.requests
        first = [_compact(first_reader.get_batch(0))] if count else []
        if count <= 2 or FETCHED.requests == before:
            # already in the local cache: one thread is fastest (threads would only queue for the GIL)
            rest = [_compact(first_reader.get_batch(i)) for i in range(1, count)]
            return pa.Table.from_batches(first + rest, schema=widened_schema(first_reader.schema))
        step = -(-(count - 1) // _COLUMN_THREADS)
        chunks = [range(start, min(count, start + step)) for start in range(1, count, step)]

        def read(chunk: range) -> list[pa.RecordBatch]:
            reader = self.open(file_id, included_fields=fields)
            return [_compact(reader.get_batch(i)) for i in chunk]

        parts = [first, *_column_pool().map(read, chunks)]
        return pa.Table.from_batches([b for part in parts for b in part], schema=widened_schema(first_reader.schema))


def _compact(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch's columns copied into buffers of their own size.

    Over a file that is not memory-mapped, Arrow's IPC reader allocates a buffer for a record
    batch's whole body and reads only the wanted columns into it; the arrays it returns are
    slices of that buffer. A label column of a 260 MiB shard (80 batches of 8 kB) so held 260 MiB
    of allocations: 0.4-0.6 s of a warm first page went to that memory, 0.004 s to the reads.
    Copying each batch's small columns out lets each body go at once. ``binary`` columns are
    widened as a local reader widens them (their digests are of the widened columns).
    """
    batch = widened(batch)
    return pa.RecordBatch.from_arrays([pa.concat_arrays([column]) for column in batch.columns], schema=batch.schema)


_COLUMN_THREADS = 8  # concurrent fetches of one shard's batches (each thread waits on the network)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _column_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_COLUMN_THREADS, thread_name_prefix="stable-explore-columns")
        return _pool


class LazyBatches(BatchSequence):
    """A remote shard's record batches, each read when first indexed (a damaged one raises, naming the URL).

    ``shards`` and ``file_id`` let :meth:`prefetch` fetch many batches at once on several threads.
    """

    def __init__(
        self,
        reader: ipc.RecordBatchFileReader,
        where: str,
        *,
        validate: bool = True,
        shards: RemoteShards | None = None,
        file_id: int = 0,
    ) -> None:
        self._shards = shards
        self._file_id = file_id
        self._reader = reader
        self.where: str = where  # the shard's URL
        self._validate = validate
        self._kept: Kept[int, pa.RecordBatch] = kept_each(
            "remote decoded batches", _KEPT_BATCHES, weight=lambda batch: int(batch.nbytes)
        )
        self._lock = threading.Lock()
        self._ranges: BatchRanges | bool | None = False  # False: not tried yet

    def __len__(self) -> int:
        return int(self._reader.num_record_batches)

    def _batch(self, index: int) -> pa.RecordBatch:
        with self._lock:
            batch = self._kept.get(index)
            if batch is not None:
                return batch
            try:
                batch = self._read(index)
            except CacheCorruptionError:
                if self._shards is None or not self._shards.drop_cached(self._file_id):
                    raise
                self._reader = self._shards.open(self._file_id)  # damaged cached bytes dropped: fetch them again
                batch = self._read(index)
            self._kept.put(index, batch)
            return batch

    def prefetch(self, indices: Sequence[int]) -> None:
        """Bring these batches into the local read cache together, when they are not there yet.

        The first is read here; only if that needed the network are the others fetched by the
        column threads (warm batches are read fastest on one thread).
        """
        wanted = [int(i) for i in dict.fromkeys(indices) if int(i) not in self._kept]
        if len(wanted) < 2 or self._shards is None:
            return
        before = FETCHED.requests
        self[wanted[0]]
        if FETCHED.requests == before:
            return
        shards, file_id, rest = self._shards, self._file_id, wanted[1:]
        step = -(-len(rest) // _COLUMN_THREADS)

        def fetch(chunk: list[int]) -> None:
            try:
                reader = shards.open(file_id)
                for index in chunk:
                    reader.get_batch(index)  # for the cache; read again, and checked, when asked for
            except CacheCorruptionError:
                return  # the checked read that follows names the damage
            except (pa.ArrowException, ValueError):
                return

        list(_column_pool().map(fetch, [rest[i : i + step] for i in range(0, len(rest), step)]))

    # -- columns and rows by exact ranges (see remote_ranges) --------------------

    def _range_reader(self) -> BatchRanges | None:
        if self._ranges is False:
            self._ranges = None if self._shards is None else self._shards.ranges(self._file_id, self._reader.schema)
        return self._ranges if isinstance(self._ranges, BatchRanges) else None

    @property
    def cuts_rows(self) -> bool:
        """Whether a few rows are read by their own bytes, not their batches' (an uncompressed shard)."""
        return self._range_reader() is not None

    def fetch_columns(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Fetch these whole (batch, column)s together, for the digest checks about to read them one by one.

        Batches already read whole are skipped. A layout that cannot be read here is left to the
        whole-batch reads that follow (their checks name any damage).
        """
        ranges = self._range_reader()
        if ranges is None:
            return
        with self._lock:
            missing = [
                (b, c) for b, c in dict.fromkeys(pairs) if b not in self._kept and self._cut_key(b, c) not in _CUT
            ]
        if not missing:
            return
        try:
            arrays = ranges.columns(missing)
        except RemoteStoreError as exc:
            raise self._gone_or(exc) from exc
        except (UnsupportedLayout, pa.ArrowException, ValueError):
            return
        with self._lock:
            for pair, array in zip(missing, arrays, strict=True):
                _CUT.put(self._cut_key(*pair), widened_array(array))

    def column(self, index: int, column: int) -> pa.Array:
        """Column ``column`` of batch ``index``: of the batch when it is read already, else only its own bytes."""
        with self._lock:
            batch = self._kept.get(index)
            found = _CUT.get(self._cut_key(index, column)) if batch is None else batch.column(column)
        if found is None:
            self.fetch_columns([(index, column)])
            with self._lock:
                found = _CUT.get(self._cut_key(index, column))
        return found if found is not None else self[index].column(column)

    def take_rows(self, wanted: dict[int, np.ndarray], columns: Sequence[int]) -> dict[int, pa.RecordBatch] | None:
        """Per batch, its rows at the positions asked (ascending, distinct), of ``columns``: only their bytes fetched.

        Whole columns read before (for their digest checks) and batches read whole give their
        rows without a request. None when the shard's rows cannot be cut this way (the caller
        then reads whole batches).
        """
        ranges = self._range_reader()
        if ranges is None:
            return None
        stored = self._reader.schema
        schema = widened_schema(pa.schema([stored.field(c) for c in columns], metadata=stored.metadata))
        known: dict[tuple[int, int], pa.Array] = {}
        with self._lock:
            for b in wanted:
                batch = self._kept.get(b)
                for c in columns:
                    found = batch.column(c) if batch is not None else _CUT.get(self._cut_key(b, c))
                    if found is not None:
                        known[b, c] = found
        types = self._reader.schema.types
        nested = [(b, c) for b in wanted for c in columns if (b, c) not in known and not is_flat(types[c])]
        if nested:  # a list or struct cell is read with its whole column
            self.fetch_columns(nested)
            for b, c in nested:
                known[b, c] = self.column(b, c)
        cut = [c for c in columns if any((b, c) not in known for b in wanted)]
        cut_from = {b: p for b, p in wanted.items() if any((b, c) not in known for c in cut)}
        try:
            cells = ranges.rows(cut_from, cut) if cut_from else {}
        except RemoteStoreError as exc:
            raise self._gone_or(exc) from exc
        except (UnsupportedLayout, pa.ArrowException, ValueError):
            return None  # damaged offsets or a layout not seen before: whole batches, checked, name the damage
        out = {}
        for b, positions in wanted.items():
            arrays = []
            for c in columns:
                whole = known.get((b, c))
                if whole is not None:
                    arrays.append(whole.take(pa.array(positions)))
                else:
                    arrays.append(widened_array(cells[b][cut.index(c)]))
            out[b] = pa.RecordBatch.from_arrays(arrays, schema=schema)
        return out

    def _cut_key(self, batch: int, column: int) -> tuple[str, int, int]:
        digest = self._shards.digest(self._file_id) if self._shards is not None else self.where
        return digest, batch, column

    def _drop_cuts(self) -> None:
        """Forget this shard's columns read by range (bytes from the read cache that did not match)."""
        mine = self._cut_key(0, 0)[0]
        _CUT.drop_where(lambda key: key[0] == mine)

    def _gone_or(self, exc: RemoteStoreError) -> Exception:
        return self._shards.gone_or(exc) if self._shards is not None else exc

    def drop_cached(self) -> bool:
        """Drop this shard's blocks from the local read cache (they did not match); True if any were there."""
        if self._shards is None or not self._shards.drop_cached(self._file_id):
            return False
        with self._lock:
            self._kept.clear()
            self._drop_cuts()
            self._reader = self._shards.open(self._file_id)
        return True

    def refetch(self, index: int) -> pa.RecordBatch | None:
        """Batch ``index`` read again from the store, after its digest did not match what the read cache gave.

        The shard's cached blocks are dropped first (damaged bytes are never served again); None when
        nothing was cached (the store's own copy is damaged: nothing to fetch again).
        """
        if self._shards is None or not self._shards.drop_cached(self._file_id):
            return None
        with self._lock:
            self._kept.clear()
            self._drop_cuts()
            self._reader = self._shards.open(self._file_id)
            batch = self._read(index)
            self._kept.put(index, batch)
            return batch

    def _read(self, index: int) -> pa.RecordBatch:
        try:
            batch = self._reader.get_batch(index)
            if self._validate:
                batch.validate(full=True)
            batch = widened(batch)  # as a local reader gives it, and as its digests were taken
        except RemoteStoreError as exc:
            if self._shards is not None:
                raise self._shards.gone_or(exc) from exc
            raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            msg = f"record batch {index} cannot be read: {exc} (the file is damaged or truncated)"
            raise CacheCorruptionError(self.where, msg) from exc
        return batch
