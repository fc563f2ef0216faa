"""One open shard of a reader: its record batches, their row offsets, and the digest check every row passes.

A local shard is memory-mapped; a remote one is read batch by batch (or column by
column) on demand. :func:`gather` takes rows in any order from a run of segments
without joining their chunks first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.read.file_batches import FileBatches
from stable_explore.storage.read.remote_shards import LazyBatches

if TYPE_CHECKING:
    from stable_explore.storage.read.batches import RowPlan, ShardCheck

__all__ = ["OpenShard", "as_run", "gather"]

_DENSE_TAKE_FRACTION = 2  # take over a whole shard when asked for at least half of its rows


class OpenShard:
    """One shard: memory-mapped (local) or read batch by batch (remote), its batch offsets and digest check.

    Every way rows leave a shard goes through ``checked``/``checked_rows``/``checked_all`` first.
    ``identity`` names the file (device, inode, size and time; a bucket's shard: its content digest).
    """

    __slots__ = (
        "_columns",
        "_make_table",
        "_table",
        "batches",
        "check",
        "identity",
        "offsets",
        "open_columns",
        "schema",
    )

    def __init__(
        self,
        table: pa.Table | None,
        batches: Sequence[pa.RecordBatch],
        check: ShardCheck | None = None,
        *,
        schema: pa.Schema | None = None,
        row_counts: Sequence[int] | None = None,
        open_columns: Callable[[list[int]], pa.Table] | None = None,
        identity: Hashable | None = None,
        make_table: Callable[[], pa.Table] | None = None,
    ) -> None:
        self._table = table
        self._make_table = make_table  # the whole shard, made when first asked for (else joined from its batches)
        self._columns: dict[str, pa.ChunkedArray] = {}
        self.open_columns = open_columns
        self.batches = batches
        self.schema = table.schema if table is not None else schema
        counts = row_counts if row_counts is not None else [b.num_rows for b in self.batches]
        self.offsets = np.cumsum([0, *counts], dtype=np.int64)
        self.check = check
        self.identity = identity  # the file's, for what is kept of it (see patching); None: kept nowhere

    @property
    def num_rows(self) -> int:
        """Rows in the shard."""
        return int(self.offsets[-1])

    @property
    def table(self) -> pa.Table:
        """The whole shard (a remote shard is read whole here: only whole-shard reads come this way)."""
        if self._table is None:
            if self._make_table is not None:
                self._table = self._make_table()
            else:
                self.prefetch(range(len(self.batches)))
                self._table = pa.Table.from_batches(list(self.batches), schema=self.schema)
        return self._table

    def all_batches(self) -> Sequence[pa.RecordBatch]:
        """Every record batch (a remote shard is read whole here, as for ``table``; a patched one is patched whole).

        A local shard's batches are read one by one as they are iterated.
        """
        whole_first = self._make_table is not None and not isinstance(self.batches, FileBatches)
        if isinstance(self.batches, LazyBatches) or (whole_first and self._table is None):
            batches: list[pa.RecordBatch] = self.table.to_batches()
            return batches
        return self.batches

    def prefetch(self, batch_ids: Sequence[int]) -> None:
        """A remote shard: fetch these batches together (a local one is mapped: nothing to do)."""
        if isinstance(self.batches, LazyBatches):
            self.batches.prefetch(batch_ids)

    @property
    def cuts_rows(self) -> bool:
        """Whether a few rows are fetched by their own bytes (a bucket's uncompressed shard, not read whole)."""
        return self._table is None and isinstance(self.batches, LazyBatches) and self.batches.cuts_rows

    def picked(self, batch_ids: np.ndarray, within: np.ndarray, names: Sequence[str]) -> list[pa.RecordBatch]:
        """Row ``within[i]`` of record batch ``batch_ids[i]``, for each i in order: 1-row batches of ``names``.

        A bucket's shard fetches only these rows' cells (and reuses the whole columns its checks
        read); any other slices its batches. Check first (:meth:`checked_take`).
        """
        if self.cuts_rows:
            assert isinstance(self.batches, LazyBatches)
            assert self.schema is not None
            wanted = {b: distinct(within[batch_ids == b]) for b in distinct(batch_ids).tolist()}
            cut = self.batches.take_rows(wanted, [self.schema.get_field_index(n) for n in names])
            if cut is not None:
                return [
                    cut[b].slice(int(np.searchsorted(wanted[b], r)), 1)
                    for b, r in zip(batch_ids.tolist(), within.tolist(), strict=True)
                ]
            # not cut after all (damaged offsets, a layout not read here): whole batches, checked whole first
            self.checked(distinct(batch_ids).tolist(), list(names))
        selected: dict[int, pa.RecordBatch] = {}
        out = []
        for b, r in zip(batch_ids.tolist(), within.tolist(), strict=True):
            batch = selected.get(b)
            if batch is None:
                batch = selected[b] = self.batches[b].select(list(names))
            out.append(batch.slice(r, 1))
        return out

    def rows(self, start: int, stop: int) -> pa.Table:
        """Shard rows [start, stop), reading only the record batches that hold them."""
        if self._table is not None or stop <= start:
            return self.table.slice(start, max(0, stop - start))
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop - 1, side="right")) - 1
        self.prefetch(range(first, last + 1))
        picked = pa.Table.from_batches([self.batches[i] for i in range(first, last + 1)], schema=self.schema)
        return picked.slice(start - int(self.offsets[first]), stop - start)

    def column(self, name: str) -> pa.ChunkedArray:
        """One column of the whole shard, checked; a remote shard reads only that column's bytes."""
        if self.open_columns is None or self._table is not None:
            return self.checked_all([name]).column(name)
        found = self._columns.get(name)
        if found is None:
            assert self.schema is not None
            table = self.open_columns([self.schema.names.index(name)])
            if self.check is not None:
                try:
                    self.check.ensure_column(name, table.column(0).chunks)
                except CacheCorruptionError:
                    # bytes from the local read cache that did not match: dropped there, read once more
                    if not isinstance(self.batches, LazyBatches) or not self.batches.drop_cached():
                        raise
                    table = self.open_columns([self.schema.names.index(name)])
                    self.check.ensure_column(name, table.column(0).chunks)
            found = self._columns[name] = table.column(0)
        return found

    def checked(self, batch_ids: Iterable[int], columns: list[str] | None = None) -> None:
        """Check these batches (of these columns) against their digests, once."""
        if self.check is not None:
            self.check.ensure(batch_ids, columns)

    def checked_rows(self, start: int, stop: int, columns: list[str] | None = None) -> None:
        """Check the batches that hold shard rows [start, stop)."""
        if self.check is not None:
            self.check.ensure_rows(start, stop, columns)

    @property
    def row_plan(self) -> RowPlan | None:
        """How a take of a few rows of this shard is checked by row hash (None: a batch at a time)."""
        return self.check.row_plan if self.check is not None else None

    def checked_take(self, batch_ids: np.ndarray, rows: np.ndarray, columns: list[str] | None = None) -> np.ndarray:
        """Check what a take of shard ``rows`` hands out, but what is checked after the copy: per row, whether to."""
        if self.check is None:
            return np.zeros(rows.size, dtype=bool)
        return self.check.ensure_taken(batch_ids, rows, columns)

    def confirm_taken(self, batch_ids: np.ndarray, rows: np.ndarray, matched: np.ndarray) -> None:
        """The outcome of the check after the copy: rows that did not match are refused (see ``ShardCheck``)."""
        if self.check is not None:
            self.check.confirm_taken(batch_ids, rows, matched)

    def checked_all(self, columns: list[str] | None = None) -> pa.Table:
        """The whole shard, every batch checked."""
        if self.check is not None:
            self.check.ensure_all(columns)
        return self.table

    def take(self, local: np.ndarray, columns: list[str] | None = None) -> pa.Table:
        """Shard rows ``local`` (any order), checked."""
        if len(self.batches) > 1 and local.size * _DENSE_TAKE_FRACTION >= self.offsets[-1]:
            # A large share of the shard: one take over the whole shard beats a take per batch plus a
            # reordering pass. Arrow first joins the shard's chunks, a transient copy of at most
            # _DENSE_TAKE_FRACTION times the rows returned.
            self.prefetch(range(len(self.batches)))
            table = self.checked_all(columns)
            table = table if columns is None else table.select(columns)
            return table.take(pa.array(local))
        self.prefetch(distinct(np.searchsorted(self.offsets, local, side="right") - 1).tolist())

        def take_from_batch(batch_id: int, rows: np.ndarray) -> pa.Table:
            self.checked((batch_id,), columns)
            batch = self.batches[batch_id]
            if columns is not None:
                batch = batch.select(columns)
            run = as_run(rows)
            picked = batch.slice(run[0], run[1]) if run else batch.take(pa.array(rows))
            return pa.Table.from_batches([picked])

        return gather(self.offsets, local, take_from_batch)


def as_run(rows: np.ndarray) -> tuple[int, int] | None:
    """(start, length) when ``rows`` is one ascending run of consecutive ints."""
    if rows.size == 1 or (rows.size > 1 and rows[-1] - rows[0] == rows.size - 1 and np.all(np.diff(rows) == 1)):
        return int(rows[0]), int(rows.size)
    return None


def gather(offsets: np.ndarray, indices: np.ndarray, take_segment: Callable[[int, np.ndarray], pa.Table]) -> pa.Table:
    """Take ``indices`` (any order, duplicates allowed) from segments that start at ``offsets``.

    Each segment is asked once, for its own rows only, so nothing is copied but
    the selected rows: unlike ``pa.Table.take`` on a many-chunk table, which
    first concatenates every chunk of the column.
    """
    segment_ids = np.searchsorted(offsets, indices, side="right") - 1
    first = segment_ids[0]
    if np.all(segment_ids == first):
        return take_segment(int(first), indices - offsets[first])
    order = np.argsort(segment_ids, kind="stable")
    sorted_ids = segment_ids[order]
    bounds = np.flatnonzero(np.diff(sorted_ids)) + 1
    pieces = []
    for group in np.split(order, bounds):
        segment = int(segment_ids[group[0]])
        pieces.append(take_segment(segment, indices[group] - offsets[segment]))
    combined = pa.concat_tables(pieces)
    if np.all(np.diff(order) > 0):
        return combined
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return combined.combine_chunks().take(pa.array(inverse))
