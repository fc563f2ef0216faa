"""Where a version's rows are: its shard files, their row counts, and the row segments that order them.

A version's rows are runs of consecutive rows of its shard files ("segments", ``(file, first
row, count)``), in row order: one per file for a version written whole, many for a version that
reuses parts of its parent's files. :class:`ShardLayout` routes a row number of the version to
its segment through cumulative counts, for every reader of shard files alike, and names shard
rows as rows of the version in error messages.

Examples
--------
>>> layout = ShardLayout.of(["a.arrow", "b.arrow"], [4, 6], segments=[(1, 2, 3), (0, 0, 4)])
>>> layout.num_rows, layout.segments
(7, [(1, 2, 3), (0, 0, 4)])
>>> layout.offsets.tolist()
[0, 3, 7]
>>> layout.rows_of(0)(1, 3)
'rows 4-5 of the version'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.storage.read.batches import BatchDigests

__all__ = ["ShardLayout"]


@dataclass(frozen=True, eq=False)
class ShardLayout:
    """A version's shard files, their row counts, its row segments, stored schema and batch digests.

    ``runs`` holds one ``(file, first row, count)`` row per segment; ``reordered`` is False when
    the segments are the files whole and in order (format 1 and any version written whole).
    """

    files: tuple[Path, ...]
    file_rows: tuple[int, ...]
    runs: np.ndarray
    reordered: bool
    schema: pa.Schema | None = None
    batch_digests: Sequence[BatchDigests | None] | None = None
    offsets: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        offsets = np.concatenate([[0], np.cumsum(self.runs[:, 2])]).astype(np.int64)
        object.__setattr__(self, "offsets", offsets)

    @classmethod
    def of(
        cls,
        files: Sequence[Path | str],
        file_rows: Sequence[int],
        *,
        segments: Sequence[tuple[int, int, int]] | np.ndarray | None = None,
        schema: pa.Schema | None = None,
        batch_digests: Sequence[BatchDigests | None] | None = None,
    ) -> ShardLayout:
        """The layout of ``files`` holding ``file_rows`` rows each; ``segments`` default to every file whole."""
        paths = tuple(Path(p) for p in files)
        counts = tuple(int(c) for c in file_rows)
        if len(counts) != len(paths):
            msg = f"{len(paths)} shard paths but {len(counts)} row counts"
            raise InvalidOptionError(msg)
        if segments is None:
            sizes = np.array(counts, dtype=np.int64)
            runs = np.column_stack([np.arange(sizes.size), np.zeros_like(sizes), sizes]).astype(np.int64)
        else:
            runs = np.asarray(segments, dtype=np.int64).reshape(-1, 3)
        return cls(paths, counts, np.ascontiguousarray(runs), segments is not None, schema, batch_digests)

    @property
    def num_rows(self) -> int:
        """Rows of the version."""
        return int(self.offsets[-1])

    @property
    def num_segments(self) -> int:
        """Segments in row order."""
        return int(self.runs.shape[0])

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The rows in order as (file, first row in that file, row count) segments."""
        return [(int(f), int(s), int(c)) for f, s, c in self.runs.tolist()]

    @property
    def segment_file(self) -> np.ndarray:
        """The file of each segment."""
        found: np.ndarray = self.runs[:, 0]
        return found

    @property
    def segment_start(self) -> np.ndarray:
        """The first row, in its file, of each segment."""
        found: np.ndarray = self.runs[:, 1]
        return found

    def segment(self, index: int) -> tuple[int, int, int]:
        """(file, first row in it, rows) of segment ``index``."""
        file_id, start, count = self.runs[index].tolist()
        return int(file_id), int(start), int(count)

    def locate(self, start: int, stop: int) -> tuple[int, int]:
        """The first and last segment holding rows [start, stop) of the version (``stop > start``)."""
        first = int(np.searchsorted(self.offsets, start, side="right") - 1)
        last = int(np.searchsorted(self.offsets, stop - 1, side="right") - 1)
        return first, last

    def digests_of(self, file_id: int) -> BatchDigests | None:
        """The record batch digests of one file (None: a shard written before they were)."""
        return self.batch_digests[file_id] if self.batch_digests is not None else None

    def rows_of(self, file_id: int) -> Callable[[int, int], str]:
        """Names rows [lo, hi) of file ``file_id`` as rows of this version, for error messages.

        The function holds the segment arrays, not a reader: a reader its open shards referred
        back to would be freed (and its memory maps unmapped) only by a garbage collection, in
        whichever later read happened to trigger one.
        """
        runs, offsets = self.runs, self.offsets

        def rows_of(lo: int, hi: int) -> str:
            found = []
            for segment, (shard, start, count) in enumerate(runs.tolist()):
                if shard == file_id and start < hi and lo < start + count:
                    first = int(offsets[segment]) + max(lo, start) - start
                    last = int(offsets[segment]) + min(hi, start + count) - start - 1
                    found.append(f"{first}-{last}")
            return f"rows {', '.join(found)} of the version" if found else "rows the version does not use"

        return rows_of

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # a pickle carries paths, counts and digests; the segment arrays only when they are not the files whole,
        # the schema only when there is no file to read it from (a DataLoader worker gets one pickle per worker)
        segments = self.runs if self.reordered else None
        schema = self.schema if not self.files else None
        return _layout, ([str(p) for p in self.files], self.file_rows, segments, schema, self.batch_digests)


def _layout(
    files: list[str],
    file_rows: Sequence[int],
    segments: np.ndarray | None,
    schema: pa.Schema | None,
    batch_digests: Sequence[BatchDigests | None] | None,
) -> ShardLayout:
    """A layout unpickled."""
    return ShardLayout.of(files, file_rows, segments=segments, schema=schema, batch_digests=batch_digests)
