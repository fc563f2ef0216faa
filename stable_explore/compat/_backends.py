"""Where a compat ``StableDataset`` reads its stored rows: Arrow shard files, one table, a Lance dataset, a version.

Each backend hands out stored values (labels as ints, images as encoded bytes) as Arrow tables; the
dataset decodes them. The names and constructor arguments are those of stable-datasets' backends
(``ArrowBackend(shard_paths=, shard_row_counts=, schema=)`` or ``ArrowBackend(table=)``,
``LanceBackend(uri=)``); the code is ours. Every backend pickles as paths and counts (a table
backend as its table), never as open memory maps, so a DataLoader's workers open their own.

Examples
--------
>>> import pyarrow as pa
>>> backend = ArrowBackend(table=pa.table({"x": [1, 2, 3]}))
>>> backend.num_rows, backend.take([2, 0]).column("x").to_pylist(), backend.is_file_backed
(3, [3, 1], False)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, InvalidOptionError, RowIndexError

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["ArrowBackend", "CachedBackend", "LanceBackend", "StorageBackend", "shard_order"]


class StorageBackend(Protocol):
    """What a compat ``StableDataset`` reads its stored rows through: ours below, or any object with these members.

    A backend may also say ``is_file_backed`` (rows read shard by shard, a shard a block) and
    ``shard_paths`` or ``uri`` (named in error messages).
    """

    @property
    def num_rows(self) -> int:
        """The rows it holds."""
        ...

    @property
    def shard_row_counts(self) -> list[int]:
        """Each shard's rows, in row order."""
        ...

    @property
    def table(self) -> pa.Table:
        """Every row as one table of stored values."""
        ...

    def take(self, indices: Sequence[int] | np.ndarray) -> pa.Table:
        """The stored rows at ``indices`` (positions in the backend, repeats allowed), in that order."""
        ...


class _ArrowState(TypedDict):
    """What an :class:`ArrowBackend` pickles: its constructor's arguments (files by path, or the table)."""

    shard_paths: list[Path] | None
    shard_row_counts: list[int]
    schema: pa.Schema | None
    table: pa.Table | None


class _LanceState(TypedDict):
    uri: Path
    columns: list[str] | None


class _CachedState(TypedDict):
    dataset: CachedDataset


class _LanceFragment(Protocol):
    """The members of a ``lance`` fragment a :class:`LanceBackend` uses."""

    def count_rows(self) -> int: ...

    def to_table(self, *, columns: list[str] | None) -> pa.Table: ...


class _LanceDataset(Protocol):
    """The members of a ``lance.LanceDataset`` a :class:`LanceBackend` uses."""

    @property
    def schema(self) -> pa.Schema: ...

    def get_fragments(self) -> Sequence[_LanceFragment]: ...

    def take(self, indices: list[int], *, columns: list[str] | None) -> pa.Table: ...

    def to_table(self, *, columns: list[str] | None) -> pa.Table: ...


def shard_order(count: int, *, shuffle: bool, seed: int | None) -> list[int]:
    """Shard numbers ``0..count-1``, in a random order (reproducible with ``seed``) when ``shuffle``."""
    order = np.arange(count)
    if shuffle:
        np.random.default_rng(seed).shuffle(order)
    return [int(i) for i in order]


def _feature_columns(table: pa.Table, names: Sequence[str] | None) -> pa.Table:
    """The columns a dataset reads: those named, else all but the writer's own (``__key__``, ``__row_hash__``)."""
    if names is None:
        names = [n for n in table.column_names if not n.startswith("__")]
    return table.select(list(names))


class _RowsByShard:
    """Shared logic: row positions -> (shard, row in shard), reads grouped by shard, then put back in order."""

    shard_row_counts: list[int]

    def _shard_table(self, shard: int) -> pa.Table:
        raise NotImplementedError

    @property
    def num_rows(self) -> int:
        return int(sum(self.shard_row_counts))

    @property
    def num_shards(self) -> int:
        return len(self.shard_row_counts)

    def take(self, indices: Sequence[int] | np.ndarray) -> pa.Table:
        """The rows at ``indices`` (positions in the whole cache, repeats allowed), in that order."""
        positions = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = self.num_rows
        if positions.size and (positions.min() < 0 or positions.max() >= n):
            bad = int(positions[(positions < 0) | (positions >= n)][0])
            msg = f"row {bad} is out of range: the backend holds {n} rows (0 to {n - 1})"
            raise RowIndexError(msg)
        starts = np.concatenate([[0], np.cumsum(self.shard_row_counts)]).astype(np.int64)
        shards = np.searchsorted(starts, positions, side="right") - 1
        parts, order = [], []
        for shard in np.unique(shards):
            chosen = np.flatnonzero(shards == shard)
            parts.append(self._shard_table(int(shard)).take(pa.array(positions[chosen] - starts[shard])))
            order.append(chosen)
        if not parts:
            return self._shard_table(0).slice(0, 0) if self.num_shards else self._empty()
        table = pa.concat_tables(parts)
        return table.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))

    def _empty(self) -> pa.Table:
        raise NotImplementedError

    def get_row(self, index: int) -> dict[str, object]:
        """One row's stored values."""
        row: dict[str, object] = self.take([index]).to_pylist()[0]
        return row

    def iter_batches(
        self, shard_indices: Sequence[int] | None = None, *, shuffle: bool = False, seed: int | None = None
    ) -> Iterator[pa.Table]:
        """Each shard's rows as a table: all shards in order, those given, or all in a random order."""
        order = (
            list(shard_indices)
            if shard_indices is not None
            else shard_order(self.num_shards, shuffle=shuffle, seed=seed)
        )
        for shard in order:
            yield self._shard_table(int(shard))


class ArrowBackend(_RowsByShard):
    """Arrow IPC shard files (memory-mapped when first read), or one Arrow table held in memory.

    Parameters
    ----------
    shard_paths, shard_row_counts:
        The shard files, in row order, and their row counts (read from the files when not given).
    schema:
        The columns to read (others in the files, such as our writer's ``__key__``, are left out).
    table:
        Instead of files: the rows themselves.

    Examples
    --------
    >>> import pyarrow as pa
    >>> ArrowBackend(table=pa.table({"x": [1, 2]})).get_row(1)
    {'x': 2}
    """

    def __init__(
        self,
        shard_paths: Sequence[Path | str] | None = None,
        shard_row_counts: Sequence[int] | None = None,
        schema: pa.Schema | None = None,
        table: pa.Table | None = None,
    ) -> None:
        if (shard_paths is None) == (table is None):
            msg = "ArrowBackend needs shard_paths=[...] (Arrow IPC files) or table= (rows in memory), not both"
            raise InvalidOptionError(msg)
        self.schema = schema
        self._names = list(schema.names) if schema is not None else None
        self._table: pa.Table | None = None  # every row as one table, once asked for (.table)
        self._open: dict[int, pa.Table] = {}
        if table is not None:
            self.shard_paths: list[Path] | None = None
            self._memory = _feature_columns(table, self._names)
            self.shard_row_counts = [self._memory.num_rows]
        else:
            self._memory = None
            self.shard_paths = [Path(p) for p in shard_paths or []]
            counts = shard_row_counts
            if counts is None:
                counts = [self._shard_table(i).num_rows for i in range(len(self.shard_paths))]
            self.shard_row_counts = [int(c) for c in counts]
            if len(self.shard_row_counts) != len(self.shard_paths):
                msg = f"{len(self.shard_paths)} shard files but {len(self.shard_row_counts)} row counts"
                raise InvalidOptionError(msg)

    @property
    def is_file_backed(self) -> bool:
        """Whether the rows are read from shard files (False for a table in memory)."""
        return self.shard_paths is not None

    def _shard_table(self, shard: int) -> pa.Table:
        if self._memory is not None:
            return self._memory
        if shard not in self._open:
            assert self.shard_paths is not None  # file-backed here (mypy)
            path = self.shard_paths[shard]
            try:
                table = ipc.open_file(pa.memory_map(str(path))).read_all()
            except (OSError, pa.ArrowInvalid) as exc:
                raise CacheCorruptionError(path, f"shard {shard} is not a readable Arrow IPC file: {exc}") from exc
            self._open[shard] = _feature_columns(table, self._names)
        return self._open[shard]

    def _empty(self) -> pa.Table:
        if self.schema is not None:
            return self.schema.empty_table()
        return pa.table({})

    @property
    def table(self) -> pa.Table:
        """Every row as one table (the shards concatenated; memory-mapped, so no copy of the data)."""
        if self._table is None:
            if self._memory is not None:
                self._table = self._memory
            elif not self.shard_paths:
                self._table = self._empty()
            else:
                self._table = pa.concat_tables(self._shard_table(i) for i in range(self.num_shards))
        return self._table

    def __getstate__(self) -> _ArrowState:
        return {
            "shard_paths": self.shard_paths,
            "shard_row_counts": self.shard_row_counts,
            "schema": self.schema,
            "table": self._memory,
        }

    def __setstate__(self, state: _ArrowState) -> None:
        ArrowBackend.__init__(self, **state)  # re-open lazily in the new process


class LanceBackend(_RowsByShard):
    """A Lance dataset (stable-datasets' ``lance-rows`` layout): each fragment is a shard (the ``lance`` extra).

    Examples
    --------
    >>> import tempfile, pathlib, lance, pyarrow as pa
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "rows"
    >>> _ = lance.write_dataset(pa.table({"x": [1, 2, 3]}), str(folder))
    >>> LanceBackend(uri=folder).take([2, 0]).column("x").to_pylist()
    [3, 1]
    """

    is_file_backed = True

    def __init__(self, uri: Path | str, columns: Sequence[str] | None = None) -> None:
        self.uri = Path(uri)
        self._names = list(columns) if columns is not None else None
        self._dataset: _LanceDataset | None = None
        self._counts: list[int] | None = None

    def _lance(self) -> _LanceDataset:
        if self._dataset is None:
            lance = require("lance", "lance", "a stable-datasets Lance cache")
            dataset: _LanceDataset = lance.dataset(str(self.uri))
            self._dataset = dataset
            if self._names is None:
                self._names = [n for n in dataset.schema.names if not n.startswith("__")]
        return self._dataset

    @property
    def shard_row_counts(self) -> list[int]:  # type: ignore[override]  # a property here, an attribute above
        if self._counts is None:
            self._counts = [int(f.count_rows()) for f in self._lance().get_fragments()]
        return self._counts

    def _shard_table(self, shard: int) -> pa.Table:
        fragment = self._lance().get_fragments()[shard]
        table: pa.Table = fragment.to_table(columns=self._names)
        return table

    def take(self, indices: Sequence[int] | np.ndarray) -> pa.Table:
        """The rows at ``indices``, in that order (one Lance ``take``)."""
        positions = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = self.num_rows
        if positions.size and (positions.min() < 0 or positions.max() >= n):
            bad = int(positions[(positions < 0) | (positions >= n)][0])
            msg = f"row {bad} is out of range: {self.uri} holds {n} rows (0 to {n - 1})"
            raise RowIndexError(msg)
        dataset = self._lance()
        unique, inverse = np.unique(positions, return_inverse=True)
        table: pa.Table = dataset.take(unique.tolist(), columns=self._names)
        return table.take(pa.array(inverse))

    def _empty(self) -> pa.Table:
        return self._lance().schema.empty_table().select(self._names or [])

    @property
    def table(self) -> pa.Table:
        """Every row as one table."""
        table: pa.Table = self._lance().to_table(columns=self._names)
        return table

    def __getstate__(self) -> _LanceState:
        return {"uri": self.uri, "columns": self._names}

    def __setstate__(self, state: _LanceState) -> None:
        LanceBackend.__init__(self, **state)


class CachedBackend(_RowsByShard):
    """A stable-explore dataset (a version, or a view of one) as a backend: its shards are the shards."""

    is_file_backed = True

    def __init__(self, dataset: CachedDataset) -> None:
        self.dataset = dataset
        self._table: pa.Table | None = None  # every row as one table, once asked for (.table)
        self.shard_row_counts = [int(c) for c in dataset.shard_row_counts]
        self._names = list(dataset.features)

    def _shard_table(self, shard: int) -> pa.Table:
        start = int(sum(self.shard_row_counts[:shard]))
        return self.take(np.arange(start, start + self.shard_row_counts[shard]))

    def take(self, indices: Sequence[int] | np.ndarray) -> pa.Table:
        """The stored rows at ``indices`` (labels as ints, images as bytes), in that order."""
        positions = np.asarray(indices, dtype=np.int64).reshape(-1)
        table: pa.Table = self.dataset.select(positions).to_arrow(self._names)
        return table.replace_schema_metadata(None)

    def _empty(self) -> pa.Table:
        return self.take(np.arange(0))

    @property
    def table(self) -> pa.Table:
        """Every row as one table (kept once read)."""
        if self._table is None:
            self._table = self.dataset.to_arrow(self._names).replace_schema_metadata(None)
        return self._table

    def __getstate__(self) -> _CachedState:
        return {"dataset": self.dataset}

    def __setstate__(self, state: _CachedState) -> None:
        CachedBackend.__init__(self, state["dataset"])
