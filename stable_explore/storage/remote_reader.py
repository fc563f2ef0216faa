"""The shards of a version in a bucket, as the shard reader sees them: opened by footer, read batch by batch.

:class:`RemoteShards` is what :class:`~stable_explore.storage.reader.ArrowBackend` holds instead
of memory maps (picklable: the home's URL, never its credentials, and the shards' names, sizes
and digests from the metadata). :class:`LazyBatches` is a shard's record batches, each read (by
range requests through the read cache) the first time it is indexed, and kept in a small LRU.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import pyarrow as pa

from stable_explore.errors import CacheCorruptionError, RemoteStoreError, RowIndexError
from stable_explore.storage.remote_file import RemoteLocation, open_remote_shard

if TYPE_CHECKING:
    import pyarrow.ipc as ipc

    from stable_explore.storage.format import ShardedCacheMeta

__all__ = ["LazyBatches", "RemoteShards"]

_KEPT_BATCHES = 16  # decoded batches kept per open shard; older ones are read again from the local cache


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
        try:
            return open_remote_shard(
                self.location,
                self.filenames[file_id],
                self.sizes[file_id],
                self.digests[file_id],
                included_fields=included_fields,
            )
        except RemoteStoreError:
            raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise CacheCorruptionError(where, f"not a readable Arrow IPC file: {exc}") from exc


class LazyBatches(Sequence[pa.RecordBatch]):
    """A remote shard's record batches, each read when first indexed (a damaged one raises, naming the URL)."""

    def __init__(self, reader: ipc.RecordBatchFileReader, where: str, *, validate: bool = True) -> None:
        self._reader = reader
        self._where = where
        self._validate = validate
        self._kept: OrderedDict[int, pa.RecordBatch] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(self._reader.num_record_batches)

    @overload
    def __getitem__(self, index: int) -> pa.RecordBatch: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[pa.RecordBatch]: ...

    def __getitem__(self, index: int | slice) -> pa.RecordBatch | Sequence[pa.RecordBatch]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            msg = f"record batch {index} of {len(self)} in {self._where}"
            raise RowIndexError(msg)
        with self._lock:
            batch = self._kept.get(index)
            if batch is not None:
                self._kept.move_to_end(index)
                return batch
            batch = self._read(index)
            self._kept[index] = batch
            while len(self._kept) > _KEPT_BATCHES:
                self._kept.popitem(last=False)
            return batch

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return (self[i] for i in range(len(self)))

    def _read(self, index: int) -> pa.RecordBatch:
        try:
            batch = self._reader.get_batch(index)
            if self._validate:
                batch.validate(full=True)
        except RemoteStoreError:
            raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            msg = f"record batch {index} cannot be read: {exc} (the file is damaged or truncated)"
            raise CacheCorruptionError(self._where, msg) from exc
        return batch
