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

from stable_explore.errors import InvalidOptionError
from stable_explore.schema import HASH_COLUMN
from stable_explore.storage.read.open_files import OpenedFile, keep, kept_as
from stable_explore.storage.read.open_shard import OpenShard

if TYPE_CHECKING:
    from stable_explore.storage.format.cell_patches import CellPatches, FilePatch

__all__ = ["ShardPatches"]


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

        A shard in a bucket is read whole here (its batches checked as they are fetched).
        """
        patch = self.for_file(file_id)
        if patch is None:
            return shard
        found = kept_as(shard.identity, patch.key) if shard.identity is not None else None
        if found is None:
            table = self.patches.apply(self.shard_digests[file_id], shard.table)
            names = table.column_names
            copied = sum(table.column(n).nbytes for n in (HASH_COLUMN, *patch.columns) if n in names)
            found = OpenedFile(table, table.to_batches(), shard.identity, copied)
            keep(patch.key, found)
        return OpenShard(found.table, found.batches, shard.check, identity=shard.identity)
