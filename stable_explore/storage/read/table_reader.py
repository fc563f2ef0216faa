"""The reader of an in-memory Arrow table (``ArrowBackend``'s in-memory mode), for rows that are no shard files.

Examples
--------
>>> import pyarrow as pa
>>> reader = TableReader(pa.table({"x": list(range(10))}))
>>> reader.take([9, 2, 2]).column("x").to_pylist(), reader.slice(8, 5).column("x").to_pylist()
([9, 2, 2], [8, 9])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore.errors import InvalidOptionError
from stable_explore.storage.read.open_shard import as_run, gather
from stable_explore.storage.read.sharded import check_indices

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["TableReader"]


class TableReader:
    """Rows of one in-memory table: one segment, no shard files, nothing to check or open."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def num_rows(self) -> int:
        """Rows of the table."""
        return int(self.table.num_rows)

    def __len__(self) -> int:
        return self.num_rows

    @property
    def schema(self) -> pa.Schema:
        """The table's schema."""
        return self.table.schema

    @property
    def num_segments(self) -> int:
        """No shard files: no segments of them (stable-datasets' ``ArrowBackend`` counts no shards here)."""
        return 0

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """The whole table as one run of rows."""
        return [(0, 0, self.num_rows)]

    @property
    def segment_offsets(self) -> np.ndarray:
        """0, then the number of rows."""
        return np.array([0, self.num_rows], dtype=np.int64)

    @property
    def shard_files(self) -> list[Path]:
        """None: the rows are in memory."""
        return []

    def _selected(self, table: pa.Table, columns: Sequence[str] | None) -> pa.Table:
        return table if columns is None else table.select(list(columns))

    def take(self, indices: Sequence[int] | np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at ``indices`` in that order (duplicates kept), only ``columns``."""
        index_array = np.asarray(indices, dtype=np.int64).reshape(-1)
        check_indices(index_array, self.num_rows)
        if index_array.size == 0:
            return self._selected(self.table, columns).schema.empty_table()
        run = as_run(index_array)
        if run is not None:
            return self.slice(*run, columns=columns)
        table = self._selected(self.table, columns)
        return gather(np.array([0], dtype=np.int64), index_array, lambda _p, rows: table.take(pa.array(rows)))

    def slice(self, start: int, length: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``start .. start + length`` (clipped at the end), zero-copy."""
        start = max(0, int(start))
        stop = min(self.num_rows, start + max(0, int(length)))
        return self._selected(self.table.slice(start, max(0, stop - start)), columns)

    def column(self, name: str) -> pa.ChunkedArray:
        """One column."""
        return self.table.column(name)

    def iter_batches(
        self, shard_indices: Sequence[int] | None = None, shuffle: bool = False, seed: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The table's record batches, in order (it has no shards to pick or shuffle)."""
        yield from self.table.to_batches()

    def file_columns(self, file_id: int, columns: Sequence[str]) -> pa.Table:
        """Refused: an in-memory table has no shard files."""
        msg = f"an in-memory table has no shard file {file_id} to read columns {list(columns)} of"
        raise InvalidOptionError(msg)

    def close(self) -> None:
        """Nothing is open."""

    def __repr__(self) -> str:
        return f"TableReader({self.num_rows} rows, in-memory)"
