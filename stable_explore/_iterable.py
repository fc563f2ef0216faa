"""The streaming PyTorch view of a dataset (``ds.to_iterable()``), split over ranks and DataLoader workers.

:class:`RowStream` holds the plan and reads rows; it needs no torch, so it is tested and pickled
like any object. ``IterableView``, the class ``to_iterable`` returns, adds
``torch.utils.data.IterableDataset`` as a base: it is made on first use (module ``__getattr__``),
so this module imports without torch and a DataLoader worker unpickles it by name.

What a reader holds at once: one block of ``READ_ROWS`` decoded rows and the shuffle buffer. The
shard files are memory-mapped by the dataset's backend, so pages are read as rows are, and the
view pickles as the dataset does (where the version lives, which rows), never as data.

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"x": i} for i in range(6)], se.Features(x=se.Value("int64")), name="n",
...               home=tempfile.mkdtemp(), progress=False)
>>> stream = RowStream([[range(0, 6)]], ds.__getitems__, ref=ds.ref, world_size=2, rank=1)
>>> [row["x"] for row in stream.rows()]
[3, 4, 5]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore._sharding import Unit, check_count, check_part, consumer_runs
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError

if TYPE_CHECKING:
    from stable_explore._selection import Rows

__all__ = ["READ_ROWS", "RowStream", "resolve_rank"]

READ_ROWS = 256  # rows decoded per read: small enough to bound memory, large enough to amortise a read


def resolve_rank(rank: Any, world_size: Any) -> tuple[int, int]:
    """``(rank, world_size)``: as given, else torch.distributed's when it is initialised, else ``(0, 1)``.

    Only a torch.distributed that this process already imported is asked (torch is never imported
    here just to learn that there is no process group).
    """
    if (rank is None) != (world_size is None):
        msg = f"give both rank and world_size or neither, got rank={rank!r}, world_size={world_size!r}"
        raise InvalidOptionError(msg)
    if rank is None:
        distributed = sys.modules.get("torch.distributed")
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            return int(distributed.get_rank()), int(distributed.get_world_size())
        return 0, 1
    world_size, rank = check_part(world_size, rank, count_name="world_size", index_name="rank")
    return rank, world_size


class RowStream:
    """Rows of a dataset for one rank, split over its DataLoader workers, optionally shuffled per epoch.

    Parameters
    ----------
    units:
        The dataset's rows as shard-file units (lists of row runs of the version).
    read:
        Decodes a run of rows of the version into examples (the dataset's own row reader).
    ref:
        What the dataset is, for the repr.
    shuffle, seed, epoch:
        Shuffle unit order per ``(seed, epoch)``, block order within each run and rows in a buffer.
    buffer_size:
        Rows held for the shuffle (ignored without ``shuffle``).
    rank, world_size:
        Which part of the ranks' split this process reads.
    """

    def __init__(
        self,
        units: Sequence[Unit],
        read: Callable[[Rows], list[Any]],
        *,
        ref: str,
        shuffle: bool = False,
        seed: int = 0,
        epoch: int = 0,
        buffer_size: int = 1000,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if not isinstance(shuffle, bool):
            msg = f"shuffle must be True or False, got {type(shuffle).__name__} {shuffle!r}"
            raise InvalidArgumentTypeError(msg)
        self._units = list(units)
        self._read = read
        self._ref = ref
        self._shuffle = shuffle
        self._seed = check_count(seed, "seed")
        self._buffer_size = check_count(buffer_size, "buffer_size", minimum=1)
        self._rank, self._world_size = rank, world_size
        self._epoch = self._epoch_cell(check_count(epoch, "epoch"))

    def _epoch_cell(self, epoch: int) -> Any:
        """Where the epoch is kept: a list here; the torch view keeps a shared-memory tensor."""
        return [epoch]

    @property
    def epoch(self) -> int:
        """The epoch whose order the next iteration follows (see :meth:`set_epoch`)."""
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """Follow ``epoch``'s order from the next iteration on (reaches persistent DataLoader workers too)."""
        self._epoch[0] = check_count(epoch, "epoch")

    @property
    def rank(self) -> int:
        """The rank whose part this reads."""
        return self._rank

    @property
    def world_size(self) -> int:
        """How many ranks share the rows."""
        return self._world_size

    def _order(self) -> tuple[int, int] | None:
        return (self._seed, self.epoch) if self._shuffle else None

    def __len__(self) -> int:
        """Rows this rank yields this epoch, over all its workers.

        Ranks get the same number of whole shard files; with files of unequal row counts, ranks
        differ by that much, and when shuffling the count can change from epoch to epoch (a rank
        gets other files).
        """
        runs = consumer_runs(self._units, rank=self._rank, world_size=self._world_size, order=self._order())
        return sum(len(run) for run in runs)

    def rows(self, worker: int = 0, num_workers: int = 1) -> Iterator[Any]:
        """The decoded rows of one worker of this rank, in this epoch's order."""
        epoch = self.epoch  # read once: a set_epoch while this runs applies to the next iteration
        order = (self._seed, epoch) if self._shuffle else None
        runs = consumer_runs(
            self._units,
            rank=self._rank,
            world_size=self._world_size,
            worker=worker,
            num_workers=num_workers,
            order=order,
        )
        if order is None:
            return (row for block in self._blocks(runs, None) for row in block)
        rng = np.random.default_rng([self._seed, epoch, self._rank, worker])
        return _buffered(self._blocks(runs, rng), self._buffer_size, rng)

    def _blocks(self, runs: list[Rows], rng: np.random.Generator | None) -> Iterator[list[Any]]:
        """Rows read ``READ_ROWS`` at a time: runs one after another, blocks in random order within a run."""
        order = rng.permutation(len(runs)).tolist() if rng is not None else range(len(runs))
        for index in order:
            run = runs[index]
            starts = list(range(0, len(run), READ_ROWS))
            if rng is not None:
                starts = [starts[i] for i in rng.permutation(len(starts)).tolist()]
            for start in starts:
                yield self._read(run[start : start + READ_ROWS])

    def __repr__(self) -> str:
        order = f"shuffle, seed={self._seed}, buffer_size={self._buffer_size}" if self._shuffle else "in order"
        where = f"rank {self._rank} of {self._world_size}, epoch {self.epoch}"
        return f"{type(self).__name__}({self._ref}: {where}, {order})"


def _buffered(blocks: Iterator[list[Any]], size: int, rng: np.random.Generator) -> Iterator[Any]:
    """Rows in a random order drawn from a buffer of ``size``: each arriving row replaces a random one.

    The random slots are drawn a block at a time (one numpy call, not one call per row).
    """
    buffer: list[Any] = []
    for block in blocks:
        room = size - len(buffer)
        if room > 0:
            buffer.extend(block[:room])
            block = block[room:]
        if not block:
            continue
        for slot, row in zip(rng.integers(0, size, len(block)).tolist(), block, strict=True):
            yield buffer[slot]
            buffer[slot] = row
    for index in rng.permutation(len(buffer)).tolist():
        yield buffer[index]


def _torch_view() -> type[RowStream]:
    """``IterableView``: a RowStream that is a ``torch.utils.data.IterableDataset`` (torch imported now)."""
    from stable_explore._optional import require

    torch = require("torch", "torch", "CachedDataset.to_iterable")
    data = require("torch.utils.data", "torch", "CachedDataset.to_iterable")

    class IterableView(RowStream, data.IterableDataset):  # type: ignore[misc,name-defined]  # torch is untyped here
        """A dataset's rows as a ``torch.utils.data.IterableDataset`` (see ``CachedDataset.to_iterable``)."""

        def _epoch_cell(self, epoch: int) -> Any:
            # Shared memory: set_epoch in the main process reaches persistent DataLoader workers.
            return torch.tensor([epoch], dtype=torch.int64).share_memory_()

        def set_epoch(self, epoch: int) -> None:
            self._epoch.fill_(check_count(epoch, "epoch"))

        def __iter__(self) -> Iterator[Any]:
            info = data.get_worker_info()
            if info is None:
                return self.rows()
            return self.rows(info.id, info.num_workers)

    IterableView.__qualname__ = IterableView.__name__  # pickled by name: stable_explore._iterable.IterableView
    IterableView.__module__ = __name__
    return IterableView


def __getattr__(name: str) -> Any:
    if name == "IterableView":
        view = _torch_view()
        globals()[name] = view
        return view
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
