"""stable-datasets' map-style dataset over ours: rows from a backend, views of positions, formats, transforms.

:class:`StableDataset` answers to stable-datasets' ``StableDataset`` (its constructor arguments,
views, formats, ``map``, column changes); imported from :mod:`stable_explore.compat.stable_datasets`.
A row read from it is a :data:`~stable_explore.compat._loading.Row` of values decoded in the
dataset's format, or what its transform made of one.

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore.schema import Value
>>> ds = StableDataset(Features({"x": Value("int64")}), table=pa.table({"x": [5, 6, 7]}))
>>> ds[0], [row["x"] for row in ds.shuffle(seed=0)], ds.with_transform(lambda row: row["x"] * 2)[2]
({'x': 5}, [7, 5, 6], 14)
"""

from __future__ import annotations

import itertools
import operator
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Sequence as Seq
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsIndex, TypedDict, overload

import numpy as np
import pyarrow as pa
from typing_extensions import Unpack

from stable_explore.compat._backends import ArrowBackend, CachedBackend, StorageBackend, shard_order
from stable_explore.compat._cache import write_sharded_arrow_cache
from stable_explore.compat._loading import Row, ShardShuffleSampler, StableIterableBase, Transform, iterable_class
from stable_explore.compat._schema import DatasetInfo, Features
from stable_explore.dataset._decoding import decode_table
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError, RowIndexError
from stable_explore.schema import Features as _Features

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["StableDataset"]

_FORMATS: dict[str | None, str] = {None: "pil", "numpy": "numpy", "torch": "torch", "raw": "python"}
"""stable-datasets' format names -> ours: ``None`` decodes images to PIL, ``"raw"`` leaves them as bytes."""
_BLOCK_ROWS = 1000  # rows a view or an in-memory table is streamed in


class _ViewOptions(TypedDict, total=False):
    """What a view of the same rows may change (:meth:`StableDataset._copy`)."""

    positions: np.ndarray | None
    format_type: str | None
    decode: bool
    transform: Transform | None


class _State(TypedDict):
    """What a :class:`StableDataset` pickles: its backend and view, never open files."""

    features: _Features
    info: DatasetInfo
    backend: StorageBackend
    num_rows: int
    positions: np.ndarray | None
    format_type: str | None
    decode: bool
    transform: Transform | None


class StableDataset:
    """stable-datasets' map-style dataset: rows from a backend, a view of positions, a format and a transform.

    Give the rows as ``backend=`` (:class:`ArrowBackend`, :class:`LanceBackend`), as ``shard_paths=``
    (Arrow IPC shards, with ``shard_row_counts=``) or as ``table=`` (in memory). ``ds[i]`` is a row
    dict decoded in the format (images as PIL by default), ``ds[a:b]``, :meth:`select`,
    :meth:`shuffle`, :meth:`filter` and :meth:`train_test_split` are views (positions only, no
    copy), :meth:`map` writes a new cache, column changes give a dataset held in memory.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from stable_explore.schema import Value
    >>> ds = StableDataset(Features({"x": Value("int64")}), table=pa.table({"x": [5, 6, 7]}))
    >>> ds[-1], [row["x"] for row in ds.select([2, 0])], ds.num_rows
    ({'x': 7}, [7, 5], 3)
    """

    def __init__(
        self,
        features: _Features,
        info: DatasetInfo | None = None,
        shard_paths: Seq[Path] | None = None,
        shard_row_counts: Seq[int] | None = None,
        num_rows: int | None = None,
        *,
        backend: StorageBackend | None = None,
        table: pa.Table | None = None,
        dataset: CachedDataset | None = None,
        positions: np.ndarray | None = None,
        format_type: str | None = None,
        decode: bool = True,
        transform: Transform | None = None,
    ) -> None:
        self._features = features if isinstance(features, _Features) else _Features(dict(features))
        self._info = info if info is not None else DatasetInfo(features=self._features)
        if backend is None:
            if dataset is not None:
                backend = CachedBackend(dataset)
            elif table is not None:
                backend = ArrowBackend(table=table, schema=self._features.to_arrow_schema())
            else:
                backend = ArrowBackend(
                    shard_paths=list(shard_paths or []),
                    shard_row_counts=shard_row_counts if shard_paths else [],
                    schema=self._features.to_arrow_schema(),
                )
        self._backend: StorageBackend = backend
        self._positions = None if positions is None else np.asarray(positions, dtype=np.int64)
        if format_type not in _FORMATS:
            msg = f"format {format_type!r} is not one of {sorted(_FORMATS, key=str)}"
            raise InvalidOptionError(msg)
        self._format_type = format_type
        self._decode = decode
        self._transform = transform
        if self._positions is not None:
            self._num_rows = len(self._positions)
        elif num_rows is not None:
            self._num_rows = int(num_rows)
        else:
            self._num_rows = int(backend.num_rows)

    @classmethod
    def of(cls, dataset: CachedDataset, info: DatasetInfo | None = None) -> StableDataset:
        """Wrap a stable-explore dataset (a version or a view)."""
        return cls(dataset.features, info, dataset=dataset)

    def _copy(self, **changes: Unpack[_ViewOptions]) -> StableDataset:
        """The same rows with some of: positions, format_type, decode, transform changed."""
        options: _ViewOptions = {
            "positions": self._positions,
            "format_type": self._format_type,
            "decode": self._decode,
            "transform": self._transform,
        }
        options.update(changes)
        return StableDataset(self._features, self._info, backend=self._backend, num_rows=self._num_rows, **options)

    # -- what it is ---------------------------------------------------------------

    @property
    def features(self) -> _Features:
        """The columns and their types."""
        return self._features

    @property
    def info(self) -> DatasetInfo:
        """The builder's description of the dataset."""
        return self._info

    @property
    def column_names(self) -> list[str]:
        """The column names, in order."""
        return list(self._features)

    @property
    def num_rows(self) -> int:
        """The number of rows (of the view, for a view)."""
        return len(self)

    @property
    def table(self) -> pa.Table:
        """The rows as one Arrow table of stored values (labels as ints, images as bytes)."""
        table = self._backend.table
        return table if self._positions is None else table.take(pa.array(self._positions))

    def __len__(self) -> int:
        return self._num_rows

    # -- reading rows -------------------------------------------------------------

    def _physical(self, positions: np.ndarray) -> np.ndarray:
        """Positions in this dataset -> rows of the backend."""
        return positions if self._positions is None else self._positions[positions]

    def _check(self, index: SupportsIndex) -> int:
        """``index`` as a position in range (a negative one counted from the end)."""
        n = len(self)
        try:
            position = operator.index(index)
        except TypeError:
            msg = f"a StableDataset is indexed by an int or a slice, got {type(index).__name__}"
            raise InvalidArgumentTypeError(msg) from None
        if position < -n or position >= n:
            msg = f"row {position} is out of range for a dataset of {n} rows (0 to {n - 1}, or -{n} to -1)"
            raise RowIndexError(msg)
        return position + n if position < 0 else position

    def formatted_rows(self, positions: Seq[int] | np.ndarray) -> list[Any]:
        """The rows at ``positions`` (positions in this dataset, in range), decoded, transformed, in that order.

        Each is a :data:`~stable_explore.compat._loading.Row`, or what the dataset's transform returned for it
        (so typed ``Any``).
        """
        positions = np.asarray(positions, dtype=np.int64)
        stored = self._backend.take(self._physical(positions))
        fmt = _FORMATS[self._format_type] if self._decode else "python"
        rows: list[Row] = decode_table(
            stored, self._features, fmt, positions, where=("a StableDataset", _where(self._backend))
        )
        if self._transform is not None:
            return [self._transform(row) for row in rows]
        return rows

    @overload
    def __getitem__(self, key: slice) -> StableDataset: ...
    @overload
    def __getitem__(self, key: SupportsIndex) -> Any: ...
    def __getitem__(self, key: SupportsIndex | slice) -> Any:
        if isinstance(key, slice):
            return self._copy(positions=self._physical(np.arange(*key.indices(len(self)), dtype=np.int64)))
        return self.formatted_rows([self._check(key)])[0]

    def __getitems__(self, indices: Seq[SupportsIndex]) -> list[Any]:
        """The rows at ``indices``, in that order (a DataLoader's batched read)."""
        return self.formatted_rows([self._check(i) for i in indices])

    def position_blocks(self, *, shards_only: bool = False) -> list[np.ndarray]:
        """The positions in blocks read together: one per shard when the rows are the backend's shards.

        A view, or rows in memory, are one block with ``shards_only`` (a sampler's single shard), else
        blocks of 1000 positions.
        """
        n = len(self)
        if self._positions is None and getattr(self._backend, "is_file_backed", False):
            starts = np.concatenate([[0], np.cumsum(self._backend.shard_row_counts)]).astype(np.int64)
            if starts[-1] == n:
                return [np.arange(starts[i], starts[i + 1]) for i in range(len(starts) - 1)]
        if shards_only:
            return [np.arange(n)]
        return [np.arange(start, min(start + _BLOCK_ROWS, n)) for start in range(0, n, _BLOCK_ROWS)]

    def __iter__(self) -> Iterator[Any]:
        for block in self.position_blocks():
            yield from self.formatted_rows(block)

    def iter_epoch(self, *, shuffle_shards: bool = True, seed: int | None = None) -> Iterator[Any]:
        """The rows block by block, a block a shard (for a dataset that is not a view).

        With ``shuffle_shards``, the blocks come in a random order (reproducible with ``seed``).
        """
        blocks = self.position_blocks()
        for block in shard_order(len(blocks), shuffle=shuffle_shards, seed=seed):
            yield from self.formatted_rows(blocks[block])

    # -- views ----------------------------------------------------------------------

    def select(self, indices: Seq[int] | np.ndarray) -> StableDataset:
        """A view of the rows at ``indices`` (positions in this dataset), in that order."""
        positions = np.asarray([self._check(i) for i in np.asarray(indices, dtype=np.int64).reshape(-1)], np.int64)
        return self._copy(positions=self._physical(positions))

    def shuffle(self, seed: int = 42) -> StableDataset:
        """A view of the rows in a random order: the order stable-datasets gives for the same ``seed``."""
        return self.select(np.random.default_rng(seed).permutation(len(self)))

    def filter(
        self, function: Callable[[Any], object], *, batched: bool = False, batch_size: int = 1000
    ) -> StableDataset:
        """A view of the rows ``function`` keeps.

        ``function(row) -> bool`` on each decoded row, or with ``batched=True``, ``function(batch) ->
        list[bool]`` on dicts of column -> list of stored values (labels as ints, images as bytes).
        """
        keep: list[int] = []
        if not batched:
            for block in self.position_blocks():  # rows decoded a block at a time, not one read per row
                keep.extend(int(p) for p, row in zip(block, self.formatted_rows(block), strict=True) if function(row))
            return self.select(keep)
        for start in range(0, len(self), batch_size):
            positions = np.arange(start, min(start + batch_size, len(self)))
            flags = function(self._backend.take(self._physical(positions)).to_pydict())
            if not isinstance(flags, Iterable):
                msg = (
                    f"filter(batched=True): the function returned {type(flags).__name__} for rows {start} to "
                    f"{positions[-1]}; return a list of one flag per row"
                )
                raise InvalidOptionError(msg)
            mask = list(flags)
            if len(mask) != len(positions):
                msg = (
                    f"filter(batched=True): the function returned {len(mask)} flags for a batch of "
                    f"{len(positions)} rows (rows {start} to {positions[-1]}); return one per row"
                )
                raise InvalidOptionError(msg)
            keep.extend(int(p) for p, flag in zip(positions, mask, strict=True) if flag)
        return self.select(keep)

    def train_test_split(self, test_size: float = 0.1, seed: int = 42) -> dict[str, StableDataset]:
        """``{"train": view, "test": view}``: disjoint, covering every row.

        The split is the one stable-datasets draws for the same ``seed`` and ``test_size``.
        """
        order = np.random.RandomState(seed).permutation(len(self))  # the same draw as theirs
        cut = int(len(self) * (1 - test_size))
        return {"train": self.select(order[:cut]), "test": self.select(order[cut:])}

    # -- format and transform ------------------------------------------------------

    def with_format(self, format_type: str | None) -> StableDataset:
        """A view decoding to ``None`` (PIL images), ``"numpy"``, ``"torch"`` (images C, H, W) or ``"raw"`` (bytes)."""
        return self._copy(format_type=format_type)

    def with_transform(self, fn: Transform | None) -> StableDataset:
        """A view whose rows pass through ``fn`` (one decoded row at a time) when read; None removes it."""
        return self._copy(transform=fn)

    def set_decode(self, decode: bool) -> StableDataset:
        """A view whose images stay encoded bytes (``False``) or are decoded in the format (``True``)."""
        return self._copy(decode=decode)

    # -- torch ------------------------------------------------------------------------

    def make_sampler(
        self, kind: str = "shard_shuffle", *, seed: int = 0, within_shard: str = "random"
    ) -> ShardShuffleSampler:
        """A sampler for a DataLoader: ``"shard_shuffle"`` (the only kind) is :class:`ShardShuffleSampler`."""
        if kind != "shard_shuffle":
            msg = f"Unknown sampler kind: {kind!r} (the kinds are 'shard_shuffle')"
            raise InvalidOptionError(msg)
        return ShardShuffleSampler(self, seed=seed, within_shard=within_shard)

    def as_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int = 0,
        buffer_size: int = 10_000,
        transform: Transform | None = None,
    ) -> StableIterableBase:
        """The rows as a ``StableIterableDataset`` (streamed shard by shard, split between DataLoader workers)."""
        return iterable_class()(self, shuffle=shuffle, seed=seed, buffer_size=buffer_size, transform=transform)

    # -- new datasets ------------------------------------------------------------------

    def map(
        self,
        function: Callable[..., Mapping[str, object]],
        *,
        batched: bool = False,
        batch_size: int = 1000,
        with_indices: bool = False,
        remove_columns: Seq[str] | None = None,
        features: _Features | None = None,
        cache_dir: Path | str | None = None,
    ) -> StableDataset:
        """A new dataset, written to ``cache_dir`` (default: a new temporary folder), of ``function``'s rows.

        ``function`` takes a row of stored values (``function(row, index)`` with ``with_indices``),
        or with ``batched`` a dict of column -> list (and the list of indices), and returns the
        same; ``remove_columns`` are dropped from what it returns. Columns the dataset has keep their
        types; new ones are inferred from the first row unless ``features`` is given.
        """
        removed = set(remove_columns or ())

        def outputs() -> Iterator[dict[str, object]]:
            for start in range(0, len(self), batch_size if batched else _BLOCK_ROWS):
                positions = np.arange(start, min(start + (batch_size if batched else _BLOCK_ROWS), len(self)))
                stored = self._backend.take(self._physical(positions))
                if batched:
                    batch = stored.to_pydict()
                    returned = function(batch, positions.tolist()) if with_indices else function(batch)
                    out: dict[str, list[object]] = {}
                    for name, values in dict(returned).items():
                        if name in removed:
                            continue
                        if not isinstance(values, Iterable):
                            msg = (
                                f"map(batched=True): the function returned column {name!r} as "
                                f"{type(values).__name__} for rows {start} to {positions[-1]}; return a list "
                                "of one value per row"
                            )
                            raise InvalidOptionError(msg)
                        out[name] = list(values)
                    sizes = {len(v) for v in out.values()}
                    if len(sizes) > 1:
                        msg = (
                            f"map(batched=True): the function returned columns of different lengths "
                            f"{sorted(sizes)} for rows {start} to {positions[-1]}; return one list length"
                        )
                        raise InvalidOptionError(msg)
                    yield from (dict(zip(out, values, strict=True)) for values in zip(*out.values(), strict=True))
                else:
                    for position, row in zip(positions, stored.to_pylist(), strict=True):
                        made = function(row, int(position)) if with_indices else function(row)
                        yield {k: v for k, v in dict(made).items() if k not in removed}

        rows = outputs()
        first = next(rows, None)
        if features is None:
            inferred = {} if first is None else _Features.from_arrow_schema(pa.Table.from_pylist([first]).schema)
            features = Features({k: self._features.get(k, inferred.get(k)) for k in (first or self._features)})
        target = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="stable-map-")) / "cache"
        pending = [] if first is None else [first]
        meta = write_sharded_arrow_cache(
            enumerate(itertools.chain(pending, rows)),
            features,
            target,
            batch_size=batch_size,
            lineage={
                "operation": "map",
                "batched": batched,
                "with_indices": with_indices,
                "source_num_rows": len(self),
            },
        )
        return StableDataset(
            features,
            self._info,
            meta.shard_paths,
            meta.shard_row_counts,
            meta.num_rows,
            format_type=self._format_type,
            decode=self._decode,
            transform=self._transform,
        )

    def flatten_indices(self, cache_dir: Path | str | None = None) -> StableDataset:
        """A view's rows written as a new cache (at ``cache_dir``, default a new temporary folder), in the view's order.

        A dataset that is not a view is returned as it is.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from stable_explore.schema import Value
        >>> ds = StableDataset(Features({"x": Value("int64")}), table=pa.table({"x": [5, 6, 7]}))
        >>> flat = ds.select([2, 0]).flatten_indices()
        >>> [row["x"] for row in flat], flat.flatten_indices() is flat
        ([7, 5], True)
        """
        if self._positions is None:
            return self
        return self.map(lambda row: row, features=self._features, cache_dir=cache_dir)

    def _in_memory(self, table: pa.Table, features: _Features) -> StableDataset:
        return StableDataset(
            features,
            self._info,
            table=table,
            format_type=self._format_type,
            decode=self._decode,
            transform=self._transform,
        )

    def add_column(self, name: str, column: pa.Array | pa.ChunkedArray | Seq[object] | np.ndarray) -> StableDataset:
        """A new dataset (in memory) with a column added: an Arrow array, a list or a numpy array, a value a row."""
        values = column if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column)
        if len(values) != len(self):
            msg = f"column {name!r} has {len(values)} values; the dataset has {len(self)} rows"
            raise InvalidOptionError(msg)
        if name in self._features:
            msg = f"column {name!r} exists already (columns: {self.column_names}); remove or rename it first"
            raise InvalidOptionError(msg)
        inferred = _Features.from_arrow_schema(pa.schema([pa.field(name, values.type)]))[name]
        table = self.table.append_column(name, values)
        return self._in_memory(table, Features({**self._features, name: inferred}))

    def remove_columns(self, columns: str | Seq[str]) -> StableDataset:
        """A new dataset (in memory) without these columns."""
        names = [columns] if isinstance(columns, str) else list(columns)
        missing = [n for n in names if n not in self._features]
        if missing:
            msg = f"no column {missing[0]!r} to remove (columns: {self.column_names})"
            raise InvalidOptionError(msg)
        kept = Features({k: v for k, v in self._features.items() if k not in names})
        return self._in_memory(self.table.select(list(kept)), kept)

    def rename_columns(self, mapping: Mapping[str, str]) -> StableDataset:
        """A new dataset (in memory) with columns renamed (``{old: new}``)."""
        missing = [n for n in mapping if n not in self._features]
        if missing:
            msg = f"no column {missing[0]!r} to rename (columns: {self.column_names})"
            raise InvalidOptionError(msg)
        renamed = Features({mapping.get(k, k): v for k, v in self._features.items()})
        if len(renamed) != len(self._features):
            msg = f"renaming {dict(mapping)} would give two columns the same name (columns: {self.column_names})"
            raise InvalidOptionError(msg)
        table = self.table.select(list(self._features)).rename_columns(list(renamed))
        return self._in_memory(table, renamed)

    def rename_column(self, old_name: str, new_name: str) -> StableDataset:
        """A new dataset (in memory) with one column renamed."""
        return self.rename_columns({old_name: new_name})

    def __getstate__(self) -> _State:
        return {
            "features": self._features,
            "info": self._info,
            "backend": self._backend,
            "num_rows": self._num_rows,
            "positions": self._positions,
            "format_type": self._format_type,
            "decode": self._decode,
            "transform": self._transform,
        }

    def __setstate__(self, state: _State) -> None:
        StableDataset.__init__(
            self,
            state["features"],
            state["info"],
            backend=state["backend"],
            num_rows=state["num_rows"],
            positions=state["positions"],
            format_type=state["format_type"],
            decode=state["decode"],
            transform=state["transform"],
        )


def _where(backend: StorageBackend) -> str | Path:
    """The folder a backend reads (for error messages)."""
    paths = getattr(backend, "shard_paths", None)
    if paths:
        return Path(paths[0]).parent
    return getattr(backend, "uri", None) or "memory"
