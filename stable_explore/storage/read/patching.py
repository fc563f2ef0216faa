"""The one place cell patches reach rows: applied to a shard as a reader opens it, whatever reads the file.

A version of format revision 5 may change label cells of its parent's files without copying their
rows (:mod:`~stable_explore.storage.format.cell_patches`). Every reader (memory maps, a bucket's
range reads) opens a shard its own way, then hands it here: the shard's rows leave patched, while
its digest check still covers the file's own record batches, as written. A patched shard is kept
per file (its identity: device, inode, size and time for a local file; its content digest for a
bucket's) and patches, so the next reader of the same version finds it patched already
(:mod:`.open_files`, bounded in bytes of copied columns).

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore.storage.format.cell_patches import CellPatches
>>> from stable_explore.storage.read.open_shard import OpenShard
>>> table = pa.table({"label": [1, 1, 1], "__row_hash__": pa.array([5, 6, 7], pa.uint64())})
>>> patches = ShardPatches(CellPatches([("xxh3_128:" + "d" * 32, 1, 77, (("label", 0),))]), ["xxh3_128:" + "d" * 32])
>>> patches.apply(0, OpenShard(table, table.to_batches())).table.column("label").to_pylist()
[1, 0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore.errors import InvalidOptionError
from stable_explore.schema import HASH_COLUMN
from stable_explore.storage.format.cell_patches import patched_array
from stable_explore.storage.read.batch_sequence import BatchSequence
from stable_explore.storage.read.open_files import OpenedFile, keep, kept_as
from stable_explore.storage.read.open_shard import OpenShard
from stable_explore.storage.read.remote_shards import LazyBatches

if TYPE_CHECKING:
    from stable_explore.storage.format.cell_patches import CellPatches, FilePatch

__all__ = ["PatchedBatches", "ShardPatches"]


class ShardPatches:
    """A version's cell patches and the digests of its shard files, which the patches name shards by.

    Raises
    ------
    InvalidOptionError
        When ``shard_digests`` do not name every shard file.
    """

    def __init__(self, patches: CellPatches, shard_digests: Sequence[str] | None) -> None:
        if shard_digests is None:
            msg = "cell_patches need the shard_digests they name shards by"
            raise InvalidOptionError(msg)
        self.patches = patches
        self.shard_digests = list(shard_digests)

    @classmethod
    def of(cls, patches: CellPatches | None, shard_digests: Sequence[str] | None) -> ShardPatches | None:
        """The patches of a version, or None when it has none."""
        return cls(patches, shard_digests) if patches else None

    def for_file(self, file_id: int) -> FilePatch | None:
        """The patches of shard file ``file_id``, or None."""
        return self.patches.for_file(self.shard_digests[file_id])

    def apply(self, file_id: int, shard: OpenShard) -> OpenShard:
        """``shard`` (file ``file_id``) with its patched cells replaced; its digest check still of the file.

        A shard on a local disk is patched as it is read: each record batch when a read first
        reaches it (a take of a few rows copies the few batches that hold them, not whole columns
        of the shard), and whole columns at once when the whole shard is read. A shard in a
        bucket is read whole here (its batches checked as they are fetched).
        """
        patch = self.for_file(file_id)
        if patch is None:
            return shard
        found = kept_as(shard.identity, patch.key) if shard.identity is not None else None
        if found is None and not isinstance(shard.batches, LazyBatches):
            batches = PatchedBatches(shard.batches, shard.offsets, patch)

            def whole() -> pa.Table:
                table = self._whole(file_id, shard, patch).table
                batches.use(table)
                return table

            return OpenShard(
                None,
                batches,
                shard.check,
                schema=shard.schema,
                row_counts=np.diff(shard.offsets).tolist(),
                identity=shard.identity,
                make_table=whole,
            )
        if found is None:
            found = self._whole(file_id, shard, patch)
        return OpenShard(found.table, found.batches, shard.check, identity=shard.identity)

    def _whole(self, file_id: int, shard: OpenShard, patch: FilePatch) -> OpenedFile:
        """The whole shard patched (each patched column copied once), kept for the next reader of the file."""
        table = self.patches.apply(self.shard_digests[file_id], shard.table)
        names = table.column_names
        copied = sum(table.column(n).nbytes for n in (HASH_COLUMN, *patch.columns) if n in names)
        found = OpenedFile(table, table.to_batches(), shard.identity, copied)
        keep(patch.key, found)
        return found


class PatchedBatches(BatchSequence):
    """A local shard's record batches, each with its patched cells replaced when a read first reaches it.

    Once the whole shard was patched (:meth:`use`), its batches are served from that table.

    Examples
    --------
    >>> import numpy as np
    >>> from stable_explore.storage.format.cell_patches import CellPatches
    >>> table = pa.table({"label": [1, 1, 1, 1], "__row_hash__": pa.array([5, 6, 7, 8], pa.uint64())})
    >>> patch = CellPatches([("d", 3, 77, (("label", 0),))]).for_file("d")
    >>> batches = PatchedBatches(table.to_batches(max_chunksize=2), np.array([0, 2, 4]), patch)
    >>> batches[1].to_pydict(), batches[0].column(0).to_pylist()
    ({'label': [1, 0], '__row_hash__': [7, 77]}, [1, 1])
    """

    def __init__(self, batches: Sequence[pa.RecordBatch], offsets: np.ndarray, patch: FilePatch) -> None:
        self._file = batches
        self.where = getattr(batches, "where", self.where)  # the shard's name in errors
        self._offsets = offsets
        self._patch = patch
        self._patched: dict[int, pa.RecordBatch] = {}
        self._whole: list[pa.RecordBatch] | None = None

    def __len__(self) -> int:
        return len(self._file)

    def use(self, table: pa.Table) -> None:
        """The whole shard, patched: its batches are served from it from now on (they cut the file's rows alike)."""
        self._whole = table.to_batches()

    def _batch(self, index: int) -> pa.RecordBatch:
        if self._whole is not None:
            return self._whole[index]
        found = self._patched.get(index)
        if found is None:
            found = self._patched[index] = _patched_batch(
                self._file[index], self._patch, int(self._offsets[index]), int(self._offsets[index + 1])
            )
        return found


def _patched_batch(batch: pa.RecordBatch, patch: FilePatch, start: int, stop: int) -> pa.RecordBatch:
    """Shard rows [start, stop) as record batch ``batch`` holds them, with the patched cells among them replaced."""
    columns = list(batch.columns)
    changed = False
    for index, name in enumerate(batch.schema.names):
        found = patch.values_for(name)
        if found is None:
            continue
        rows, values = found
        lo, hi = np.searchsorted(rows, [start, stop])
        if lo < hi:
            columns[index] = patched_array(columns[index], rows[lo:hi] - start, values[lo:hi])
            changed = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if changed else batch
