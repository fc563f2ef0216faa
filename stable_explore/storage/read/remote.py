"""The reader of a bucket's shards: each file's footer when first read, then record batches or columns by range.

Bytes come through the local read cache (:mod:`~stable_explore.storage.backends.remote_file`);
each record batch is checked against its digest as it is first handed out, and one column read
alone (label counts, a filter) fetches and checks only that column's bytes. Routing, takes,
slices and patches are :class:`~.sharded.ShardedReader`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, RemoteStoreError
from stable_explore.storage.read.batches import ShardCheck
from stable_explore.storage.read.open_shard import OpenShard
from stable_explore.storage.read.remote_shards import LazyBatches, RemoteShards
from stable_explore.storage.read.shard_file import widened_schema
from stable_explore.storage.read.sharded import DEFAULT_MAX_OPEN_SHARDS, ShardedReader

if TYPE_CHECKING:
    from stable_explore.storage.read.layout import ShardLayout
    from stable_explore.storage.read.patching import ShardPatches

__all__ = ["RemoteReader"]


class RemoteReader(ShardedReader):
    """Rows of a bucket's version, read by range requests (``layout.files`` only name where a copy would be).

    Parameters
    ----------
    remote:
        The shards in the bucket: where, and their names, sizes and digests.
    """

    slice_segments_from = 16  # fewer segments: each read on its own, fetching only its record batches

    def __init__(
        self,
        layout: ShardLayout,
        remote: RemoteShards,
        *,
        patches: ShardPatches | None = None,
        max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS,
        validate: bool = True,
    ) -> None:
        super().__init__(layout, patches=patches, max_open_shards=max_open_shards, validate=validate)
        self.remote = remote

    def describe(self, file_id: int) -> str:
        """The shard's URL, for messages."""
        return self.remote.describe(file_id)

    def _open_file(self, file_id: int) -> OpenShard:
        """A shard in a bucket: its footer now, each record batch when first asked for (see remote_file)."""
        remote = self.remote
        where = remote.describe(file_id)
        reader = remote.open(file_id)
        self._check_schema(where, reader.schema)
        batches = LazyBatches(reader, where, validate=self.validate, shards=remote, file_id=file_id)
        digests = self.layout.digests_of(file_id)
        if digests is not None and len(batches) != len(digests.rows):
            msg = (
                f"shard holds {len(batches)} record batches, but {len(digests.rows)} were written: the file is damaged"
            )
            raise CacheCorruptionError(where, msg)
        identity = remote.digest(file_id)
        check = None
        if digests is not None:
            schema = widened_schema(reader.schema)
            check = ShardCheck(where, digests, batches, self.layout.rows_of(file_id), identity=identity, schema=schema)

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

        return OpenShard(
            None,
            batches,
            check,
            schema=widened_schema(reader.schema),
            row_counts=digests.rows if digests is not None else None,
            open_columns=open_columns,
            identity=identity,
        )

    def _segment_column(self, segment: int, name: str) -> pa.ChunkedArray:
        """Only this column's bytes, from the segment's shard."""
        file_id, start, count = self.layout.segment(segment)
        column = self._file(file_id).column(name)
        return column.slice(start, count)

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, as stored (only their bytes are read): unpatched, unchecked."""
        names = self.schema.names
        reader = self.remote.open(file_id, included_fields=[names.index(c) for c in columns])
        table: pa.Table = reader.read_all()
        return table

    def _init_args(self) -> dict[str, object]:
        return {**super()._init_args(), "remote": self.remote}
