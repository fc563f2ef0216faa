"""What the dataset layer needs of a reader: rows by number, columns, batches, and where the rows are stored.

Every reader (:class:`~stable_explore.storage.read.table_reader.TableReader` over an in-memory
table, :class:`~stable_explore.storage.read.mapped.MappedReader` over memory-mapped local shards,
:class:`~stable_explore.storage.read.remote.RemoteReader` over a bucket's shards) has this shape,
and :func:`~stable_explore.storage.read.reader.open_reader` picks one; a dataset never asks which.
Row numbers are rows of the version, ``0 .. num_rows - 1``. Every row handed out has passed its
digest check (where the version records digests).

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore import Features, Value
>>> from stable_explore.storage.write.writer import write_sharded_arrow_cache
>>> from stable_explore.storage.read.reader import open_reader
>>> meta = write_sharded_arrow_cache(({"x": i} for i in range(5)), Features(x=Value("int64")),
...                                  pathlib.Path(tempfile.mkdtemp()) / "c")
>>> reader: ShardReader = open_reader(meta)
>>> reader.num_rows, reader.take([4, 1]).column("x").to_pylist()
(5, [4, 1])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import pyarrow as pa

__all__ = ["ShardReader"]


class ShardReader(Protocol):
    """Rows, columns and batches of one version, and the segments of shard files they are stored in."""

    @property
    def num_rows(self) -> int:
        """Rows of the version, known without opening a shard."""

    def __len__(self) -> int:
        """:attr:`num_rows`."""

    @property
    def schema(self) -> pa.Schema:
        """The stored Arrow schema (``binary`` columns as ``large_binary``, as read)."""

    @property
    def num_segments(self) -> int:
        """Runs of consecutive rows of one shard file, in row order."""

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (shard file, first row in that file, row count) segments."""

    @property
    def segment_offsets(self) -> np.ndarray:
        """The first row of each segment, then the number of rows."""

    @property
    def shard_files(self) -> list[Path]:
        """The shard files by index (each once; for a bucket's version, where its local copy would be)."""

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (duplicates kept), only ``columns`` (default: all)."""

    def slice(self, start: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``start .. start + length`` (clipped at the end)."""

    def column(self, name: str) -> pa.ChunkedArray:
        """One column over every row."""

    def iter_batches(
        self, shard_indices: Sequence[int] | None = None, shuffle: bool = False, seed: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Record batches segment by segment (those of ``shard_indices``), optionally in a seeded shuffled order."""

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Some columns of one whole shard file, as stored (no patches, not checked): for edits of its rows."""

    def close(self) -> None:
        """Let go of open files (they reopen on the next read)."""
