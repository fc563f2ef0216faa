"""Feeding a compat ``StableDataset`` to PyTorch: a streaming iterable and a shard-aware sampler.

Both follow stable-datasets' public API (``StableIterableDataset(ds, shuffle=, seed=, buffer_size=,
transform=)`` with ``set_epoch``; ``ShardShuffleSampler(ds, seed=, within_shard=)`` with ``set_epoch``);
the code is ours.

- The iterable reads a shard at a time. Under a DataLoader with workers, each worker reads every
  ``num_workers``-th shard; with fewer shards than workers, every worker reads all shards and keeps
  every ``num_workers``-th row, so each row is yielded once in all. With ``shuffle``, the shard order
  is random and rows pass through a buffer of ``buffer_size`` from which one is drawn at random;
  the order depends on ``seed``, the epoch (``set_epoch``) and the worker.
- The sampler yields every position once per epoch, a shard's positions together (all of shard k
  before any of the next shard), the shards in a random order, and, with ``within_shard="random"``,
  the positions inside a shard in a random order too. It holds integers only, so it pickles small.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.compat.stable_datasets import Features, Value, StableDataset, write_sharded_arrow_cache
>>> features = Features({"x": Value("int32")})
>>> meta = write_sharded_arrow_cache(((i, {"x": i}) for i in range(6)), features,
...                                  pathlib.Path(tempfile.mkdtemp()) / "c", shard_size_bytes=64, batch_size=2)
>>> ds = StableDataset(features, shard_paths=meta.shard_paths, shard_row_counts=meta.shard_row_counts)
>>> sorted(ShardShuffleSampler(ds, seed=1)) == list(range(6))
True
>>> sorted(row["x"] for row in iterable_class()(ds, shuffle=True, seed=0, buffer_size=3))
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from stable_explore.errors import InvalidOptionError

__all__ = ["PositionedRows", "Row", "ShardShuffleSampler", "StableIterableBase", "Transform", "iterable_class"]

_T = TypeVar("_T")

_WITHIN_SHARD = ("random", "sequential")

Row = dict[str, Any]
"""A row read from a compat ``StableDataset``: column -> value decoded in its format.

The value's type is the column's and the format's (a PIL image, a numpy array, a torch tensor,
bytes, an int, a string, a list...), known to the code that reads the column, not to a type checker.
"""

Transform = Callable[[Row], Any]
"""A function a compat ``StableDataset`` passes each row it reads through; what it returns is the row read."""


class PositionedRows(Protocol):
    """What the iterable and the sampler read of a compat ``StableDataset``: they need no more of it.

    The dataset (:class:`stable_explore.compat._dataset.StableDataset`) gives its positions in blocks
    (a shard's, or a view's in reads of a few rows) and the rows at some positions, formatted.
    """

    def __len__(self) -> int:
        """How many rows."""
        ...

    def position_blocks(self, *, shards_only: bool = False) -> list[np.ndarray]:
        """The positions, a block a read (``shards_only``: a shard a block)."""
        ...

    def formatted_rows(self, positions: Sequence[int] | np.ndarray) -> list[Any]:
        """The rows at ``positions``, in the dataset's format, through its transform."""
        ...


def _worker() -> tuple[int, int]:
    """The worker's id and the number of workers under a torch DataLoader; (0, 1) outside one or without torch."""
    try:
        from torch.utils import data
    except ImportError:
        return 0, 1
    info = data.get_worker_info()
    return (0, 1) if info is None else (int(info.id), int(info.num_workers))


class StableIterableBase:
    """Rows of a compat ``StableDataset`` streamed shard by shard (see the module docstring).

    ``StableIterableDataset`` (:func:`iterable_class`) is this class, a torch ``IterableDataset`` too
    when torch is installed.

    Parameters
    ----------
    dataset:
        A compat ``StableDataset`` (a view of one too: its positions are then read in blocks).
    shuffle:
        Random shard order and a shuffle buffer.
    seed:
        Base seed; :meth:`set_epoch` varies it per epoch.
    buffer_size:
        Rows held in the shuffle buffer (0: shuffle the shard order only).
    transform:
        Called on each row as it is yielded.
    """

    def __init__(
        self,
        dataset: PositionedRows,
        *,
        shuffle: bool = False,
        seed: int = 0,
        buffer_size: int = 10_000,
        transform: Transform | None = None,
    ) -> None:
        if buffer_size < 0:
            msg = f"buffer_size must be 0 or more rows, got {buffer_size}"
            raise InvalidOptionError(msg)
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = int(seed)
        self.buffer_size = int(buffer_size)
        self.transform = transform
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Use this epoch's order from the next iteration on."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[Any]:
        worker, workers = _worker()
        units = self.dataset.position_blocks()
        rng = np.random.default_rng([self.seed, self.epoch, worker]) if self.shuffle else None
        by_rows = len(units) < workers  # fewer blocks than workers: every worker reads all, keeps its rows
        mine = units if by_rows else units[worker::workers]
        if rng is not None:
            mine = [mine[i] for i in rng.permutation(len(mine))]
        rows = self._rows(mine, worker if by_rows else 0, workers if by_rows else 1)
        if rng is not None and self.buffer_size > 0:
            rows = _buffered(rows, self.buffer_size, rng)
        for row in rows:
            yield self.transform(row) if self.transform is not None else row

    def _rows(self, blocks: list[np.ndarray], worker: int, workers: int) -> Iterator[Any]:
        for block in blocks:
            if workers > 1:
                block = block[np.asarray(block) % workers == worker]  # this worker's rows
            if len(block):
                yield from self.dataset.formatted_rows(block)

    def __len__(self) -> int:
        return len(self.dataset)


def _buffered(rows: Iterator[_T], size: int, rng: np.random.Generator) -> Iterator[_T]:
    """Rows drawn at random from a buffer of ``size`` refilled as it goes, then the rest in a random order."""
    buffer: list[_T] = []
    for row in rows:
        if len(buffer) < size:
            buffer.append(row)
            continue
        slot = int(rng.integers(len(buffer)))
        yield buffer[slot]
        buffer[slot] = row
    for slot in rng.permutation(len(buffer)):
        yield buffer[int(slot)]


@functools.cache
def iterable_class() -> type[StableIterableBase]:
    """The ``StableIterableDataset`` class: a :class:`StableIterableBase`.

    A ``torch.utils.data.IterableDataset`` too when torch is installed (so a DataLoader streams it),
    else a plain iterable.
    """
    try:
        from torch.utils.data import IterableDataset
    except ImportError:
        bases: tuple[type, ...] = (StableIterableBase,)
    else:
        bases = (StableIterableBase, IterableDataset)
    made = type("StableIterableDataset", bases, {"__module__": __name__})
    assert issubclass(made, StableIterableBase)  # for the type checker: type() gives a plain type
    return made


class ShardShuffleSampler:
    """Positions of a compat ``StableDataset``, shard by shard in a random shard order (see the module).

    Parameters
    ----------
    dataset:
        A compat ``StableDataset``; a view (or rows held in memory) counts as one shard.
    seed:
        Base seed; :meth:`set_epoch` gives each epoch its own order.
    within_shard:
        ``"random"`` (positions inside a shard shuffled too) or ``"sequential"`` (in row order).
    """

    def __init__(self, dataset: PositionedRows, *, seed: int = 0, within_shard: str = "random") -> None:
        if within_shard not in _WITHIN_SHARD:
            msg = f"within_shard must be one of {_WITHIN_SHARD}, got {within_shard!r}"
            raise InvalidOptionError(msg)
        self.seed = int(seed)
        self.within_shard = within_shard
        self.epoch = 0
        self.shard_bounds = [(int(b[0]), int(b[-1]) + 1) for b in dataset.position_blocks(shards_only=True) if len(b)]
        self._n = len(dataset)

    def set_epoch(self, epoch: int) -> None:
        """Use this epoch's order from the next iteration on."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng([self.seed, self.epoch])
        for shard in rng.permutation(len(self.shard_bounds)):
            start, end = self.shard_bounds[int(shard)]
            positions = np.arange(start, end)
            if self.within_shard == "random":
                positions = rng.permutation(positions)
            yield from (int(p) for p in positions)


def __getattr__(name: str) -> type[StableIterableBase]:
    if name == "StableIterableDataset":  # made on first use; pickle finds the class here by this name
        return iterable_class()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
