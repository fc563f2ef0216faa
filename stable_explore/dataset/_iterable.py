"""The streaming PyTorch view of a dataset (``ds.to_iterable()``), split over ranks and DataLoader workers.

:class:`RowStream` holds the plan and reads rows; it needs no torch, so it is tested and pickled
like any object. ``IterableView``, the class ``to_iterable`` returns, adds
``torch.utils.data.IterableDataset`` as a base: it is made on first use (module ``__getattr__``),
so this module imports without torch and a DataLoader worker unpickles it by name.

What a reader holds at once: one shuffle window of decoded rows (``buffer_size`` rounded up to whole
blocks of ``READ_ROWS``). The shard files are memory-mapped by the dataset's backend, so pages are
read as rows are, and the view pickles as the dataset does (where the version lives, which rows),
never as data.

Resuming: a worker's order is a pure function of ``(seed, epoch, rank, worker)`` and of the row's
position in it (the windows and their permutations are computed, not drawn from a running
generator), so the state is a count of rows yielded per worker, and a resumed iteration computes
which rows of its window are still due and reads only those.

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

import dataclasses
import hashlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.dataset._sharding import Unit, check_count, check_part, consumer_runs
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError

if TYPE_CHECKING:
    from stable_explore.dataset._selection import Rows

__all__ = ["READ_ROWS", "STATE_FORMAT", "RowStream", "resolve_rank"]

READ_ROWS = 256  # rows decoded per read: small enough to bound memory, large enough to amortise a read
STATE_FORMAT = 1  # the layout of state_dict(); a state of another format is refused, not misread
_STATE_KEYS = ("version", "rows", "shuffle", "seed", "buffer_size", "rank", "world_size", "epoch", "num_workers",
               "positions")  # fmt: skip


def resolve_rank(rank: object, world_size: object) -> tuple[int, int]:
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
        What the dataset is, for the repr and error messages.
    version:
        The version id the rows belong to (a saved state is refused on another version).
    shuffle, seed, epoch:
        Shuffle unit order per ``(seed, epoch)``, block order within each run and rows within a window.
    buffer_size:
        Rows per shuffle window, rounded up to whole blocks (ignored without ``shuffle``).
    rank, world_size:
        Which part of the ranks' split this process reads.
    """

    def __init__(
        self,
        units: Sequence[Unit],
        read: Callable[[Rows], list[Any]],
        *,
        ref: str,
        version: str = "",
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
        self._version = version
        self._shuffle = shuffle
        self._seed = check_count(seed, "seed")
        self._buffer_size = check_count(buffer_size, "buffer_size", minimum=1)
        self._rank, self._world_size = rank, world_size
        self._epoch = self._epoch_cell(check_count(epoch, "epoch"))
        # Progress of the iteration under way (or last run): epoch, worker count, rows yielded per worker.
        self._progress: _Progress | None = None
        # Where a loaded state says to continue: used once, by the first iteration of its epoch per worker.
        self._resume: _Progress | None = None

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
        """The decoded rows of one worker of this rank, in this epoch's order.

        After :meth:`load_state_dict`, the first iteration of the state's epoch continues where the
        state was taken; later ones start from the epoch's first row.
        """
        epoch = self.epoch  # read once: a set_epoch while this runs applies to the next iteration
        windows = self._windows(epoch, worker, num_workers)
        sizes = np.array([sum(len(block) for block in window) for window in windows], dtype=np.int64)
        start = self._take_resume(epoch, worker, num_workers, int(sizes.sum()))
        progress = self._progress
        if progress is None or (progress.epoch, progress.num_workers) != (epoch, num_workers):
            progress = self._progress = _Progress(epoch, num_workers, {})
        progress.positions[worker] = start
        return self._stream(windows, sizes, start, progress, epoch, worker)

    def _windows(self, epoch: int, worker: int, num_workers: int) -> list[list[Rows]]:
        """A worker's blocks of at most ``READ_ROWS`` rows, grouped into the windows read at once.

        In order: one block per window. Shuffled: runs in a random order, blocks in a random order
        within a run, and consecutive blocks grouped until a window holds ``buffer_size`` rows.
        Nothing is read: this is the plan both a fresh and a resumed iteration follow.
        """
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
            return [[run[start : start + READ_ROWS]] for run in runs for start in range(0, len(run), READ_ROWS)]
        rng = np.random.default_rng([self._seed, epoch, self._rank, worker])
        windows: list[list[Rows]] = []
        window: list[Rows] = []
        held = 0
        for index in rng.permutation(len(runs)).tolist():
            run = runs[index]
            starts = range(0, len(run), READ_ROWS)
            for i in rng.permutation(len(starts)).tolist():
                block = run[starts[i] : starts[i] + READ_ROWS]
                window.append(block)
                held += len(block)
                if held >= self._buffer_size:
                    windows.append(window)
                    window, held = [], 0
        if window:
            windows.append(window)
        return windows

    def _permutation(self, epoch: int, worker: int, window: int, size: int) -> np.ndarray:
        """The order of a window's rows: a function of its index alone, so a resume computes it directly."""
        return np.random.default_rng([self._seed, epoch, self._rank, worker, 1, window]).permutation(size)

    def _stream(
        self, windows: list[list[Rows]], sizes: np.ndarray, start: int, progress: _Progress, epoch: int, worker: int
    ) -> Iterator[Any]:
        """Rows from position ``start`` on: the window holding it reads only its rows still due."""
        ends = np.cumsum(sizes)
        first = int(np.searchsorted(ends, start, side="right"))
        for index in range(first, len(windows)):
            blocks, size = windows[index], int(sizes[index])
            skip = start - (int(ends[index]) - size) if index == first else 0
            permutation = self._permutation(epoch, worker, index, size) if self._shuffle else None
            if permutation is None:
                due = self._read(blocks[0][skip:])  # in order, a window is one block
            elif skip == 0:
                decoded = [row for block in blocks for row in self._read(block)]
                due = [decoded[i] for i in permutation.tolist()]
            else:  # resumed inside a window: read its rows not yet yielded, in file order, then reorder
                wanted = np.concatenate([np.asarray(block, dtype=np.int64) for block in blocks])[permutation[skip:]]
                by_row = np.argsort(wanted, kind="stable")
                decoded = self._read(wanted[by_row])
                due = [None] * len(decoded)
                for slot, row in zip(by_row.tolist(), decoded, strict=True):
                    due[slot] = row
            for row in due:
                progress.positions[worker] += 1  # counted before the row is handed out: a state taken now excludes it
                yield row

    def _take_resume(self, epoch: int, worker: int, num_workers: int, total: int) -> int:
        """Where this worker starts: a loaded state's position for it (used once), else 0."""
        resume = self._resume
        if resume is None or resume.epoch != epoch:
            return 0
        if resume.num_workers != num_workers:
            msg = (
                f"the state loaded into {self._ref}'s iterable was saved with {resume.num_workers} DataLoader "
                f"worker(s), but this iteration runs {num_workers}: resume with num_workers={resume.num_workers} "
                f"(a worker's position counts rows of its own part, which depends on the worker count)"
            )
            raise InvalidOptionError(msg)
        start = resume.positions.pop(worker, 0)
        if not resume.positions:
            self._resume = None
        if start > total:
            msg = (
                f"the state loaded into {self._ref}'s iterable says worker {worker} of rank {self._rank} "
                f"yielded {start} rows of epoch {epoch}, but it has {total}: the state is not from these rows"
            )
            raise InvalidOptionError(msg)
        return start

    def state_dict(self) -> dict[str, Any]:
        """Where iteration stands, as a small JSON-able dict for :meth:`load_state_dict`.

        Holds the version, the rows' fingerprint, the shuffle settings, the epoch and, per
        DataLoader worker, how many rows of the epoch it has yielded. torchdata's
        ``StatefulDataLoader`` calls this in each worker and keeps one state per worker (this
        object in the main process does not see what DataLoader workers yielded).

        Examples
        --------
        >>> import json, tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(6)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> stream = RowStream([[range(0, 6)]], ds.__getitems__, ref=ds.ref, version=ds.version)
        >>> rows = stream.rows()
        >>> [next(rows)["x"], next(rows)["x"]]
        [0, 1]
        >>> state = json.loads(json.dumps(stream.state_dict()))
        >>> state["epoch"], state["positions"]
        (0, {'0': 2})
        >>> fresh = RowStream([[range(0, 6)]], ds.__getitems__, ref=ds.ref, version=ds.version)
        >>> fresh.load_state_dict(state)
        >>> [row["x"] for row in fresh.rows()]
        [2, 3, 4, 5]
        """
        epoch = self.epoch
        current = next(
            (kept for kept in (self._progress, self._resume) if kept is not None and kept.epoch == epoch),
            _Progress(epoch, 1, {}),
        )
        return {
            "format": STATE_FORMAT,
            "version": self._version,
            "rows": self._fingerprint(),
            "shuffle": self._shuffle,
            "seed": self._seed,
            "buffer_size": self._buffer_size,
            "rank": self._rank,
            "world_size": self._world_size,
            "epoch": epoch,
            "num_workers": current.num_workers,
            "positions": {str(worker): position for worker, position in sorted(current.positions.items())},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (a :meth:`state_dict`, possibly through JSON): the next iteration of its epoch.

        Sets the epoch to the state's. Refuses a state from another version, other rows, another
        seed, shuffle, buffer size, rank or world size, naming what differs.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(6)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> state = RowStream([[range(0, 6)]], ds.__getitems__, ref=ds.ref, version=ds.version, seed=1).state_dict()
        >>> RowStream([[range(0, 6)]], ds.__getitems__, ref=ds.ref, version=ds.version, seed=2).load_state_dict(state)
        Traceback (most recent call last):
        ...
        stable_explore.errors.InvalidOptionError: the state loaded into n@... was saved with seed=1, ...
        """
        if not isinstance(state, dict):
            msg = f"load_state_dict takes the dict state_dict() returned, got {type(state).__name__}"
            raise InvalidArgumentTypeError(msg)
        where = f"the state loaded into {self._ref}'s iterable"
        if state.get("format") != STATE_FORMAT:
            msg = (
                f"{where} has format {state.get('format')!r}, this version of stable-explore reads format "
                f"{STATE_FORMAT}: save the state with the same stable-explore version that resumes it"
            )
            raise InvalidOptionError(msg)
        missing = sorted(set(_STATE_KEYS) - set(state))
        if missing:
            msg = f"{where} lacks {', '.join(missing)}: pass the whole dict state_dict() returned"
            raise InvalidOptionError(msg)
        if state["version"] != self._version:
            msg = (
                f"{where} was saved on version {state['version']!r}, this iterable reads version "
                f"{self._version!r}: resume on the version the state came from (se.load('name@{state['version']}'))"
            )
            raise InvalidOptionError(msg)
        if state["rows"] != self._fingerprint():
            msg = (
                f"{where} was saved on other rows of version {self._version!r} (another filter, shard or "
                f"split_by_node): resume with the same view of the version"
            )
            raise InvalidOptionError(msg)
        settings = {
            "shuffle": self._shuffle,
            "seed": self._seed,
            "buffer_size": self._buffer_size,
            "rank": self._rank,
            "world_size": self._world_size,
        }
        for name, ours in settings.items():
            if state[name] != ours:
                msg = (
                    f"{where} was saved with {name}={state[name]!r}, this iterable has {name}={ours!r}: "
                    f"call to_iterable({name}={state[name]!r}, ...) to resume it"
                )
                raise InvalidOptionError(msg)
        epoch = check_count(state["epoch"], "the state's epoch")
        num_workers = check_count(state["num_workers"], "the state's num_workers", minimum=1)
        positions = {
            check_count(int(worker), "a worker in the state"): check_count(position, "a position in the state")
            for worker, position in dict(state["positions"]).items()
        }
        self.set_epoch(epoch)
        self._resume = _Progress(epoch, num_workers, positions) if positions else None
        self._progress = None

    def _fingerprint(self) -> str:
        """A short hash of which rows of the version this iterable reads (the view's rows, in order)."""
        cached = self.__dict__.get("_rows_fingerprint")
        if cached is None:
            digest = hashlib.blake2b(digest_size=8)
            for unit in self._units:
                for run in unit:
                    if isinstance(run, range):
                        digest.update(f"r{run.start},{run.stop},{run.step};".encode())
                    else:
                        digest.update(b"a" + np.ascontiguousarray(run, dtype=np.int64).tobytes())
                digest.update(b"|")
            cached = self.__dict__["_rows_fingerprint"] = digest.hexdigest()
        return str(cached)

    def __repr__(self) -> str:
        order = f"shuffle, seed={self._seed}, buffer_size={self._buffer_size}" if self._shuffle else "in order"
        where = f"rank {self._rank} of {self._world_size}, epoch {self.epoch}"
        return f"{type(self).__name__}({self._ref}: {where}, {order})"


@dataclasses.dataclass
class _Progress:
    """Rows yielded per worker (``positions``) in ``epoch`` when the rank runs ``num_workers`` workers."""

    epoch: int
    num_workers: int
    positions: dict[int, int]


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

    IterableView.__qualname__ = IterableView.__name__  # pickled by name: stable_explore.dataset._iterable.IterableView
    IterableView.__module__ = __name__
    return IterableView


def __getattr__(name: str) -> Any:
    if name == "IterableView":
        view = _torch_view()
        globals()[name] = view
        return view
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
