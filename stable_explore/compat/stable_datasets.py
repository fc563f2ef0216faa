"""stable-datasets' public API (cache, dataset, iterable, samplers, backends, schema, ...) over stable-explore.

``benchmarks/compat_stable_datasets.py`` puts this module in place of stable-datasets' modules and
runs its own ``test_cache.py``, ``test_dataset.py``, ``test_iterable.py``, ``test_samplers.py`` and
``test_schema.py``; docs/format.md lists the result. The same names let a user port code written for
stable-datasets by changing the import:

- ``write_sharded_arrow_cache(generator, features, cache_dir, ...)`` checks and encodes rows with our
  writer and lays them out in its ``arrow-shards`` layout (its reader opens them);
  ``write_lance_cache`` in its ``lance-rows`` layout;
- ``read_sharded_cache_meta``, ``validate_sharded_cache`` (its fingerprint check on its layouts),
  ``read_shard``: ours, refusals worded as its reader words them;
- ``StableDataset``: rows from a backend (:class:`ArrowBackend`, :class:`LanceBackend`, or a
  stable-explore version), views that hold positions only, formats, transforms, ``map``, column
  changes; ``StableIterableDataset`` and ``ShardShuffleSampler`` feed it to a torch DataLoader;
- ``Features`` is ours, also an ``OrderedDict``, with ``fingerprint_data()`` giving the text
  stable-datasets fingerprints; the feature types are ours (``ClassLabel.names`` compares equal to a list);
- ``BaseDatasetBuilder``: ``Builder(split=..., processed_cache_dir=...)`` builds (or finds) the split
  with :func:`stable_explore.build`, in a catalog at ``processed_cache_dir``.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.compat.stable_datasets import ClassLabel, Features, Value, write_sharded_arrow_cache
>>> features = Features({"x": Value("int32"), "label": ClassLabel(names=["a", "b"])})
>>> features.fingerprint_data()
"{'x': Value('int32'), 'label': ClassLabel(names=['a', 'b'])}"
>>> meta = write_sharded_arrow_cache(((i, {"x": i, "label": i % 2}) for i in range(4)), features,
...                                  pathlib.Path(tempfile.mkdtemp()) / "c")
>>> StableDataset(features=features, shard_paths=meta.shard_paths, shard_row_counts=meta.shard_row_counts,
...               num_rows=meta.num_rows)[3]
{'x': 3, 'label': 1}
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stable_explore import api
from stable_explore.compat._backends import ArrowBackend, CachedBackend, LanceBackend, shard_order
from stable_explore.compat._loading import ShardShuffleSampler, iterable_class
from stable_explore.dataset import CachedDataset
from stable_explore.dataset._decoding import decode_table
from stable_explore.errors import (
    CacheCorruptionError,
    InvalidArgumentTypeError,
    InvalidOptionError,
    RowIndexError,
    SchemaError,
)
from stable_explore.schema import Array3D, Sequence, Value, Video
from stable_explore.schema import ClassLabel as _ClassLabel
from stable_explore.schema import Features as _Features
from stable_explore.schema import Image as _Image
from stable_explore.storage.format.cache_meta import ShardedCacheMeta
from stable_explore.storage.format.stable_datasets import (
    accept_features,
    candidate_fingerprints,
    fingerprint_text,
    layout_of,
)
from stable_explore.storage.read.open_meta import read_sharded_cache_meta as _read_meta
from stable_explore.storage.read.open_meta import validate_sharded_cache as _validate
from stable_explore.storage.read.shard_file import read_shard
from stable_explore.storage.write.writer import write_sharded_arrow_cache as _write

__all__ = [
    "Array3D",
    "ArrowBackend",
    "LanceBackend",
    "LanceCacheMeta",
    "ShardShuffleSampler",
    "StableIterableDataset",  # noqa: F822  # made on first use (module __getattr__)
    "write_lance_cache",
    "BaseDatasetBuilder",
    "ClassLabel",
    "ClassNames",
    "DatasetInfo",
    "Features",
    "Image",
    "Sequence",
    "ShardedCacheMeta",
    "Split",
    "SplitGenerator",
    "StableDataset",
    "Value",
    "Version",
    "Video",
    "read_shard",
    "read_sharded_cache_meta",
    "validate_sharded_cache",
    "write_sharded_arrow_cache",
]


class Features(_Features, OrderedDict):  # type: ignore[misc,type-arg]  # both dicts; ours first, for its methods
    """Our :class:`~stable_explore.Features`, also an ``OrderedDict`` as stable-datasets' is."""

    def fingerprint_data(self) -> str:
        """The text stable-datasets hashes into ``schema_fingerprint`` (its ``repr`` of the features)."""
        return fingerprint_text(self)


class ClassNames(tuple[str, ...]):
    """A ClassLabel's names: immutable as ours are, equal to a list of the same names as stable-datasets' list is.

    Examples
    --------
    >>> names = ClassNames(["cat", "dog"])
    >>> names == ["cat", "dog"], names == ("cat", "dog"), names + ["bird"]
    (True, True, ['cat', 'dog', 'bird'])
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return tuple.__eq__(self, other)  # NotImplemented for other types

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return tuple.__hash__(self)

    def __add__(self, other: Any) -> Any:
        if isinstance(other, list):
            return [*self, *other]
        return tuple.__add__(self, other)

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented


class ClassLabel(_ClassLabel):
    """Our :class:`~stable_explore.ClassLabel`, its ``names`` comparing equal to a list (see :class:`ClassNames`).

    Examples
    --------
    >>> ClassLabel(names=["a", "b"]).names == ["a", "b"]
    True
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "names", ClassNames(self.names or ()))


@dataclass(frozen=True, repr=False)
class Image(_Image):
    """Our :class:`~stable_explore.Image`, with stable-datasets' name for encoding one value."""

    def encode(self, value: Any, *, cache_dir: Path | None = None) -> Any:
        """The bytes stored for ``value`` (bytes as given, a file's bytes, a PIL image or array encoded)."""
        del cache_dir  # stable-datasets copies video inputs there; images need nothing
        return self.encode_value(value)


@dataclass
class DatasetInfo:
    """What a builder says about its dataset (stable-datasets' fields)."""

    features: _Features
    description: str = ""
    supervised_keys: tuple[Any, ...] | None = None
    homepage: str = ""
    citation: str = ""
    license: str = ""
    config_name: str = ""


class Version:
    """A ``major.minor.patch`` version string."""

    def __init__(self, text: str) -> None:
        parts = text.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            msg = f"Version string must be 'major.minor.patch', got {text!r}"
            raise InvalidOptionError(msg)
        self.major, self.minor, self.patch = (int(p) for p in parts)
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Version({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(self._text)


class Split:
    """Split names."""

    TRAIN = "train"
    TEST = "test"
    VALIDATION = "validation"


@dataclass
class SplitGenerator:
    """One split: its name and the keyword arguments of ``_generate_examples``."""

    name: str
    gen_kwargs: dict[str, Any]


def _batches(rows: CachedDataset, batch_size: int) -> Iterator[pa.Table]:
    names = list(rows.features)
    for start in range(0, len(rows), batch_size):
        yield rows[start : start + batch_size].to_arrow(names)


def write_sharded_arrow_cache(
    generator: Iterable[Any],
    features: _Features,
    cache_dir: Path | str,
    *,
    shard_size_bytes: float = float("inf"),
    batch_size: int = 1000,
    compression: str | None = None,
    num_encode_workers: int = 0,
    single_file: bool = False,
    lineage: Mapping[str, Any] | None = None,
) -> ShardedCacheMeta:
    """stable-datasets' writer: ``(key, row)`` pairs into its ``arrow-shards`` layout at ``cache_dir``.

    The rows are checked and encoded by our writer into a staging cache beside ``cache_dir``
    (removed afterwards: the data is written twice), then laid out as stable-datasets' writer lays
    them out (what ``ds.export(layout="stable-datasets")`` writes): its ``_metadata.json`` fields
    (``format: "arrow"``, ``layout: "arrow-shards"``, its ``schema_fingerprint``, ``compression``,
    ``lineage``), a shard closed after the batch that passes ``shard_size_bytes`` (``float("inf")``,
    its default, or ``single_file``: one shard). Its reader opens the folder, and so do
    :class:`StableDataset` and ``se.load`` (class names kept). A folder already at ``cache_dir``
    is replaced, as its writer replaces it. ``num_encode_workers`` is accepted and unused (ours
    encodes a column batch at a time).
    """
    del num_encode_workers
    from stable_explore.io.stable_datasets import write_stable_datasets
    from stable_explore.storage.backends.fsutil import publish_dir

    size = None if single_file or shard_size_bytes == float("inf") else int(shard_size_bytes)
    target = Path(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}-staging-", dir=target.parent) as tmp:
        staged = _write(generator, features, Path(tmp) / "rows", shard_size_bytes=sys.maxsize, batch_size=batch_size)
        rows = CachedDataset(staged)
        out = write_stable_datasets(
            rows, _batches(rows, batch_size), Path(tmp) / "out", shard_size_bytes=size, compression=compression
        )
        if lineage:
            raw = json.loads((out / "_metadata.json").read_text(encoding="utf-8"))
            raw["lineage"] = dict(lineage)
            (out / "_metadata.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
        publish_dir(out, target)
    return read_sharded_cache_meta(target)


_FORMATS: dict[str | None, str] = {None: "pil", "numpy": "numpy", "torch": "torch", "raw": "python"}
"""stable-datasets' format names -> ours: ``None`` decodes images to PIL, ``"raw"`` leaves them as bytes."""
_BLOCK_ROWS = 1000  # rows a view or an in-memory table is streamed in


def read_sharded_cache_meta(cache_dir: Path | str) -> ShardedCacheMeta:
    """Our metadata reader; a shard the metadata lists but the folder lacks is named as stable-datasets names it.

    Raises
    ------
    CacheCorruptionError
        A ``ValueError``: "Missing shard file NAME ..." for a listed shard that is absent; else our
        reader's message naming the file.
    """
    try:
        return _read_meta(cache_dir)
    except CacheCorruptionError as exc:
        folder = Path(cache_dir)
        try:
            listed = json.loads((folder / "_metadata.json").read_text(encoding="utf-8")).get("shard_filenames", [])
        except (OSError, ValueError, AttributeError):
            raise exc from None
        absent = [name for name in listed if isinstance(name, str) and not (folder / name).is_file()]
        if not absent:
            raise
        msg = f"Missing shard file {absent[0]!r}, listed in _metadata.json; rebuild the cache ({exc.reason})"
        raise CacheCorruptionError(folder, msg) from exc


def validate_sharded_cache(cache_dir: Path | str, features: _Features) -> ShardedCacheMeta:
    """Our check that a cache was written with ``features``, its refusal worded as stable-datasets words it.

    Raises
    ------
    SchemaError
        A ``ValueError``: "Schema fingerprint mismatch: ..." saying which features the cache holds.
    """
    meta = read_sharded_cache_meta(cache_dir)
    raw = json.loads((Path(cache_dir) / "_metadata.json").read_text(encoding="utf-8"))
    recorded = raw.get("schema_fingerprint")
    if layout_of(raw) is not None and recorded:  # its layout: its check, of the features' fingerprint
        ours = accept_features(features)
        expected = candidate_fingerprints(ours) if ours is not None else set()
        if recorded not in expected:
            msg = (
                f"Schema fingerprint mismatch: {Path(cache_dir) / '_metadata.json'} records {recorded!r}, the "
                f"features given have {sorted(expected)} ({fingerprint_text(ours) if ours else None}); pass the "
                "features the cache was written with (same columns, order, types and class names)"
            )
            raise SchemaError(msg)
        return meta
    try:
        return _validate(cache_dir, features)
    except SchemaError as exc:
        msg = f"Schema fingerprint mismatch: {exc}"
        raise SchemaError(msg) from exc


@dataclass(frozen=True)
class LanceCacheMeta:
    """What :func:`write_lance_cache` wrote: the folder, its row count and the features' fingerprint."""

    cache_dir: Path
    num_rows: int
    schema_fingerprint: str


def write_lance_cache(
    generator: Iterable[Any],
    features: _Features,
    cache_dir: Path | str,
    *,
    batch_size: int = 1000,
    num_encode_workers: int = 0,
) -> LanceCacheMeta:
    """stable-datasets' Lance writer: ``(key, row)`` pairs into its ``lance-rows`` layout at ``cache_dir``.

    The rows are encoded by our writer into a temporary cache beside ``cache_dir``, then written as
    stable-datasets lays them out (what ``ds.export(layout="stable-datasets-lance")`` writes; the
    ``lance`` extra). ``se.load(cache_dir, features=...)`` and :class:`LanceBackend` read it.
    """
    del num_encode_workers  # ours encodes a column batch at a time
    from stable_explore.io.stable_datasets import write_stable_datasets_lance
    from stable_explore.storage.format.stable_datasets import schema_fingerprint

    target = Path(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".lance-rows-", dir=target.parent) as tmp:
        meta = _write(generator, features, Path(tmp) / "rows", shard_size_bytes=sys.maxsize, batch_size=batch_size)
        rows = CachedDataset(meta)
        write_stable_datasets_lance(rows, _batches(rows, batch_size), target)
    return LanceCacheMeta(target, meta.num_rows, schema_fingerprint(features))


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
        backend: Any = None,
        table: pa.Table | None = None,
        dataset: CachedDataset | None = None,
        positions: np.ndarray | None = None,
        format_type: str | None = None,
        decode: bool = True,
        transform: Callable[[dict[str, Any]], Any] | None = None,
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
        self._backend = backend
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

    def _copy(self, **changes: Any) -> StableDataset:
        """The same rows with some of: positions, format_type, decode, transform changed."""
        options: dict[str, Any] = {
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

    def _check(self, index: Any) -> int:
        n = len(self)
        position = int(index)
        if position < -n or position >= n:
            msg = f"row {position} is out of range for a dataset of {n} rows (0 to {n - 1}, or -{n} to -1)"
            raise RowIndexError(msg)
        return position + n if position < 0 else position

    def formatted_rows(self, positions: Seq[int] | np.ndarray) -> list[Any]:
        """The rows at ``positions`` (positions in this dataset, in range), decoded, transformed, in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        stored = self._backend.take(self._physical(positions))
        fmt = _FORMATS[self._format_type] if self._decode else "python"
        rows = decode_table(stored, self._features, fmt, positions, where=("a StableDataset", _where(self._backend)))
        if self._transform is not None:
            rows = [self._transform(row) for row in rows]
        return rows

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return self._copy(positions=self._physical(np.arange(*key.indices(len(self)), dtype=np.int64)))
        if isinstance(key, (int, np.integer)):
            return self.formatted_rows([self._check(key)])[0]
        msg = f"a StableDataset is indexed by an int or a slice, got {type(key).__name__}"
        raise InvalidArgumentTypeError(msg)

    def __getitems__(self, indices: Seq[int]) -> list[Any]:
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

    def filter(self, function: Callable[[Any], Any], *, batched: bool = False, batch_size: int = 1000) -> StableDataset:
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
            mask = list(function(self._backend.take(self._physical(positions)).to_pydict()))
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

    def with_transform(self, fn: Callable[[dict[str, Any]], Any] | None) -> StableDataset:
        """A view whose rows pass through ``fn`` (one decoded row at a time) when read; None removes it."""
        return self._copy(transform=fn)

    def set_decode(self, decode: bool) -> StableDataset:
        """A view whose images stay encoded bytes (``False``) or are decoded in the format (``True``)."""
        return self._copy(decode=decode)

    # -- torch ------------------------------------------------------------------------

    def make_sampler(self, kind: str = "shard_shuffle", **options: Any) -> ShardShuffleSampler:
        """A sampler for a DataLoader: ``"shard_shuffle"`` is :class:`ShardShuffleSampler` (``seed=``, ...)."""
        if kind != "shard_shuffle":
            msg = f"Unknown sampler kind: {kind!r} (the kinds are 'shard_shuffle')"
            raise InvalidOptionError(msg)
        return ShardShuffleSampler(self, **options)

    def as_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int = 0,
        buffer_size: int = 10_000,
        transform: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Any:
        """The rows as a ``StableIterableDataset`` (streamed shard by shard, split between DataLoader workers)."""
        stream: Any = iterable_class()(self, shuffle=shuffle, seed=seed, buffer_size=buffer_size, transform=transform)
        return stream

    # -- new datasets ------------------------------------------------------------------

    def map(
        self,
        function: Callable[..., Any],
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

        def outputs() -> Iterator[dict[str, Any]]:
            for start in range(0, len(self), batch_size if batched else _BLOCK_ROWS):
                positions = np.arange(start, min(start + (batch_size if batched else _BLOCK_ROWS), len(self)))
                stored = self._backend.take(self._physical(positions))
                if batched:
                    batch = stored.to_pydict()
                    out = function(batch, positions.tolist()) if with_indices else function(batch)
                    out = {k: list(v) for k, v in dict(out).items() if k not in removed}
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
                        out = function(row, int(position)) if with_indices else function(row)
                        yield {k: v for k, v in dict(out).items() if k not in removed}

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

    def add_column(self, name: str, column: Any) -> StableDataset:
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

    def __getstate__(self) -> dict[str, Any]:
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

    def __setstate__(self, state: dict[str, Any]) -> None:
        features, info = state.pop("features"), state.pop("info")
        self.__init__(features, info, **state)  # type: ignore[misc]


def _where(backend: Any) -> str | Path:
    """The folder a backend reads (for error messages)."""
    paths = getattr(backend, "shard_paths", None)
    if paths:
        return Path(paths[0]).parent
    return getattr(backend, "uri", None) or "memory"


def __getattr__(name: str) -> Any:
    if name == "StableIterableDataset":  # a torch IterableDataset when torch is installed: made on first use
        return iterable_class()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


class BaseDatasetBuilder:
    """stable-datasets' builder: ``Builder(split=..., processed_cache_dir=...)`` is the split, built once."""

    VERSION: ClassVar[Version]
    SOURCE: ClassVar[Mapping[str, Any]]

    def __new__(cls, split: str = Split.TRAIN, processed_cache_dir: str | Path | None = None, **options: Any) -> Any:
        """The split as a :class:`StableDataset` (see :meth:`as_dataset`), as stable-datasets' builders return."""
        return super().__new__(cls).as_dataset(split, processed_cache_dir, **options)

    def as_dataset(self, split: str, processed_cache_dir: str | Path | None = None, **options: Any) -> StableDataset:
        """The split, built with :func:`stable_explore.build` into a catalog at ``processed_cache_dir`` (once)."""
        info = self._info()
        generators = {g.name: g for g in self._split_generators()}
        if split not in generators:
            msg = f"no split {split!r}; the builder has {sorted(generators)}"
            raise InvalidOptionError(msg)
        name = f"{type(self).__name__.strip('_').lower()}-{split}"
        built = api.build(
            self._generate_examples,
            info.features,
            name=name,
            kwargs=dict(generators[split].gen_kwargs),
            home=processed_cache_dir,
            progress=False,
            **options,
        )
        return StableDataset.of(built, info)

    def _info(self) -> DatasetInfo:
        raise NotImplementedError

    def _split_generators(self) -> list[SplitGenerator]:
        raise NotImplementedError

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
        raise NotImplementedError
