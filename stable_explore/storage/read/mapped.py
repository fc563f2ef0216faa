"""The reader of shards on a local disk: each file memory-mapped (a small one read), zero-copy.

A shard with record batch digests is not read whole when opened: only its footer is, and each
record batch when a read first reaches it (:class:`~.file_batches.FileBatches`). Each batch's bytes
are checked against their digests before any of its rows is handed out, and bytes equal to those
written are valid Arrow (validating whole 64 MB shards cost a save of 10 rows at 10M rows 350 MB
of RSS). An older shard, without digests, is validated in full when opened (once per process and
file). Routing, takes, slices and patches are :class:`~.sharded.ShardedReader`'s.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> from stable_explore.storage.read.layout import ShardLayout
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(10)), Features(x=Value("int64")),
...                                  pathlib.Path(tempfile.mkdtemp()) / "c", batch_size=4)
>>> reader = MappedReader(ShardLayout.of(meta.shard_paths, meta.shard_row_counts, batch_digests=meta.batch_digests))
>>> reader.take([9, 0, 9]).column("x").to_pylist()
[9, 0, 9]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from stable_explore.storage.kept import file_identity
from stable_explore.storage.read.batches import ShardCheck
from stable_explore.storage.read.file_batches import FileBatches
from stable_explore.storage.read.open_files import opened
from stable_explore.storage.read.open_shard import OpenShard
from stable_explore.storage.read.shard_file import open_shard
from stable_explore.storage.read.sharded import ShardedReader

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MappedReader"]


class MappedReader(ShardedReader):
    """Rows of shard files on a local disk, memory-mapped as first read (see :class:`~.sharded.ShardedReader`)."""

    def _open_file(self, file_id: int) -> OpenShard:
        path = self.layout.files[file_id]
        digests = self.layout.digests_of(file_id)
        if digests is None:  # an older shard: validated in full when opened (once per process and file)
            table = open_shard(path, validate=self.validate)
            return OpenShard(table, table.to_batches(), None, identity=file_identity(path))
        found = opened(path, lambda: FileBatches.open(path, digests.rows))
        self._check_schema(path, found.schema)  # written by this format revision: exactly the features' types
        check = ShardCheck(path, digests, found, self.layout.rows_of(file_id), schema=found.schema)
        return OpenShard(
            None,
            found,
            check,
            schema=found.schema,
            row_counts=found.row_counts,
            identity=found.identity,
            make_table=found.table,
        )

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, as stored: unpatched, unchecked."""
        return open_shard(self.layout.files[file_id], validate=False).select(list(columns))
