"""Writing a column group: the new columns of a version, row for row, in files cut where the shard runs end.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa
>>> from stable_explore import Features, Value
>>> writer = GroupWriter(pathlib.Path(tempfile.mkdtemp()), 1, Features(score=Value("float64")), cuts=[2, 1])
>>> writer.write(pa.table({"score": [0.5, 1.5, 2.5]}))
>>> group = writer.finish()
>>> [(f.file, f.rows) for f in group.files]
[('group-001-00000.arrow', 2), ('group-001-00001.arrow', 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from stable_explore.errors import CacheWriteError
from stable_explore.schema import HASH_COLUMN, Features
from stable_explore.storage.format.column_groups import GROUP_NAME_FMT, ColumnGroup, GroupFile
from stable_explore.storage.write.shards import ShardWriter

__all__ = ["GroupWriter", "file_cuts"]

_BATCH_BYTES = 1024 * 1024  # a record batch of a group file holds about this many bytes (its digest is checked whole)
_MIN_BATCH_ROWS = 1024
_MAX_BATCH_ROWS = 65536
_NEVER = 1 << 62  # files are cut by rows (``cuts``), never by size


def file_cuts(segment_rows: Sequence[int]) -> list[int]:
    """Rows of each group file: the version's runs of shard rows, merged in order up to the largest run.

    A version whose rows are its shards whole gets one group file per shard, of the same rows.

    Examples
    --------
    >>> file_cuts([500, 500, 120])
    [500, 500, 120]
    >>> file_cuts([300, 10, 20, 300, 5])
    [300, 30, 300, 5]
    """
    target = max(segment_rows, default=0)
    cuts: list[int] = []
    current = 0
    for rows in segment_rows:
        if current and current + rows > target:
            cuts.append(current)
            current = 0
        current += rows
    if current:
        cuts.append(current)
    return cuts


class GroupWriter:
    """Writes one column group's files: rows arrive in order (:meth:`write`), files end at ``cuts``.

    ``row_hash`` adds the rows' ``__row_hash__`` column (a group that replaces a column stores
    the hashes of the rows it makes); each table written must then hold it.
    """

    def __init__(
        self,
        out_dir: Path,
        number: int,
        features: Features,
        *,
        cuts: Sequence[int],
        row_hash: bool = False,
        compression: str | None = None,
    ) -> None:
        schema = features.to_arrow_schema()
        if row_hash:
            schema = schema.append(pa.field(HASH_COLUMN, pa.uint64()))
        self.schema = schema
        self.features = features
        self.row_hash = row_hash
        self._cuts = [int(c) for c in cuts if c > 0]
        self._file = 0
        self._left = self._cuts[0] if self._cuts else 0
        self._batch_rows: int | None = None
        name_format = GROUP_NAME_FMT.replace("{group:03d}", f"{number:03d}").replace("{index:05d}", "{:05d}")
        self._writer = ShardWriter(
            out_dir, schema, shard_size_bytes=_NEVER, compression=compression, name_format=name_format
        )
        self.rows_written = 0

    def write(self, table: pa.Table) -> None:
        """Append the next rows (a table with the group's columns, in any order)."""
        arrays = [table.column(f.name).cast(f.type) for f in self.schema]
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if self._batch_rows is None and table.num_rows:
            per_row = max(1, table.nbytes // table.num_rows)
            self._batch_rows = min(_MAX_BATCH_ROWS, max(_MIN_BATCH_ROWS, _BATCH_BYTES // per_row))
        offset = 0
        while offset < table.num_rows:
            if self._left == 0:
                msg = f"a column group was given more rows than the version's {sum(self._cuts)}"
                raise CacheWriteError(msg)
            assert self._batch_rows is not None
            take = min(self._left, table.num_rows - offset, self._batch_rows)
            piece = table.slice(offset, take).combine_chunks()
            self._writer.write(piece.to_batches()[0] if piece.num_rows else pa.record_batch([], schema=self.schema))
            offset += take
            self._left -= take
            self.rows_written += take
            if self._left == 0:
                self._writer.close_shard()
                self._file += 1
                self._left = self._cuts[self._file] if self._file < len(self._cuts) else 0

    def finish(self) -> ColumnGroup:
        """Close the last file, wait for digests and fsyncs; the group as the metadata records it."""
        if self.rows_written != sum(self._cuts):
            self._writer.abort()
            msg = f"a column group was given {self.rows_written} rows, but the version has {sum(self._cuts)}"
            raise CacheWriteError(msg)
        shards = self._writer.finish()
        files = tuple(
            GroupFile(name, rows, digest, size, batches)
            for name, rows, digest, size, batches in zip(
                shards.names, shards.rows, shards.hashes, shards.sizes, shards.batch_files, strict=True
            )
        )
        return ColumnGroup(self.features, self.row_hash, files)

    def abort(self) -> None:
        """Stop after a failure (the caller removes the staging folder)."""
        self._writer.abort()
