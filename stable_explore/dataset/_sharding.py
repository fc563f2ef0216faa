"""Splitting a dataset's rows into disjoint parts: ``ds.shard``, ``ds.split_by_node`` and the iterable view.

Rows are handled as *runs*: ``range`` objects or int64 arrays of row numbers of the version (the
``Rows`` of _selection.py), so a part of a billion-row dataset is a few ranges, never a list of rows.
A *unit* is the rows of one shard file, as runs in the dataset's order: reading whole units keeps
each reader on its own files.

Examples
--------
>>> contiguous_bounds(10, 3, 0), contiguous_bounds(10, 3, 2)
((0, 4), (7, 10))
>>> split_runs([range(0, 4), range(10, 12)], 2, 1)
[range(3, 4), range(10, 12)]
>>> deal([[range(0, 5)], [range(5, 10)], [range(10, 12)]], 2, 0)
[range(0, 5), range(10, 11)]
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import numpy as np

from stable_explore.dataset._selection import Rows, select_rows
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError

__all__ = [
    "SPLIT_BY",
    "check_count",
    "check_part",
    "consumer_runs",
    "contiguous_bounds",
    "deal",
    "file_units",
    "join_runs",
    "shard_rows",
    "split_runs",
]

SPLIT_BY = ("rows", "files")

Unit = list[Rows]


def check_count(value: object, name: str, *, minimum: int = 0) -> int:
    """``value`` as an int of at least ``minimum``; a bool, float or str is a clear error, not a silent cast."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        msg = f"{name} must be an int, got {type(value).__name__} {value!r}"
        raise InvalidArgumentTypeError(msg)
    if value < minimum:
        msg = f"{name} must be an int >= {minimum}, got {value!r}"
        raise InvalidOptionError(msg)
    return operator.index(value)


def check_part(count: object, index: object, *, count_name: str, index_name: str) -> tuple[int, int]:
    """``(count, index)`` with ``count >= 1`` and ``0 <= index < count``, or an error naming both arguments."""
    count = check_count(count, count_name, minimum=1)
    index = check_count(index, index_name)
    if index >= count:
        msg = f"{index_name} must be in [0, {count_name}) = [0, {count}), got {index_name}={index}"
        raise InvalidOptionError(msg)
    return count, index


def contiguous_bounds(n: int, parts: int, index: int) -> tuple[int, int]:
    """Positions ``[start, stop)`` of part ``index`` when ``n`` items are cut into ``parts`` runs.

    The first ``n % parts`` parts hold one item more, so sizes differ by at most one.
    """
    size, extra = divmod(n, parts)
    start = size * index + min(index, extra)
    return start, start + size + (1 if index < extra else 0)


def file_units(rows: Rows, segments: Sequence[tuple[int, int, int]], offsets: np.ndarray) -> list[Unit]:
    """The dataset's rows grouped by shard file, files in order of first use, rows in the dataset's order.

    ``segments`` and ``offsets`` are the backend's: ``(file, first row, count)`` runs of the version
    and where each begins. A range of rows costs one run per segment it touches; an array of rows
    (a filtered, taken or shuffled view) is grouped with one stable sort.
    """
    if len(rows) == 0:
        return []
    files_of = np.array([file for file, _, _ in segments], dtype=np.int64)
    if isinstance(rows, range) and rows.step == 1:
        units: dict[int, Unit] = {}
        first = int(np.searchsorted(offsets, rows.start, side="right") - 1)
        last = int(np.searchsorted(offsets, rows.stop - 1, side="right") - 1)
        for segment in range(first, last + 1):
            lo, hi = max(rows.start, int(offsets[segment])), min(rows.stop, int(offsets[segment + 1]))
            runs = units.setdefault(int(files_of[segment]), [])
            if runs and isinstance(runs[-1], range) and runs[-1].stop == lo:
                runs[-1] = range(runs[-1].start, hi)  # consecutive segments of one file read as one run
            else:
                runs.append(range(lo, hi))
        return list(units.values())
    array = np.asarray(rows, dtype=np.int64)
    files = files_of[np.searchsorted(offsets, array, side="right") - 1]
    order = np.argsort(files, kind="stable")
    _, first_seen, counts = np.unique(files, return_index=True, return_counts=True)
    groups = np.split(array[order], np.cumsum(counts)[:-1])
    return [[groups[i]] for i in np.argsort(first_seen, kind="stable")]


def join_runs(runs: Sequence[Rows]) -> Rows:
    """One ``Rows``: a range when the runs follow each other, else one int64 array."""
    runs = [run for run in runs if len(run)]
    if not runs:
        return range(0)
    if all(isinstance(run, range) and run.step == 1 for run in runs):
        ranges: list[range] = runs  # type: ignore[assignment]  # checked just above
        if all(a.stop == b.start for a, b in itertools.pairwise(ranges)):
            return range(ranges[0].start, ranges[-1].stop)
    joined: np.ndarray = np.concatenate([np.asarray(run, dtype=np.int64) for run in runs])
    return joined


def split_runs(runs: Sequence[Rows], parts: int, index: int) -> list[Rows]:
    """Part ``index`` of ``parts`` contiguous parts of the runs' concatenation (runs are sliced, not copied)."""
    lengths = [len(run) for run in runs]
    start, stop = contiguous_bounds(sum(lengths), parts, index)
    picked: list[Rows] = []
    offset = 0
    for run, length in zip(runs, lengths, strict=True):
        lo, hi = max(start, offset) - offset, min(stop, offset + length) - offset
        if hi > lo:
            picked.append(run[lo:hi])
        offset += length
    return picked


def deal(units: Sequence[Unit], parts: int, index: int) -> list[Rows]:
    """Part ``index``'s runs: whole units dealt round-robin while every part gets one, the rest cut by rows.

    With ``u`` units and ``p`` parts, the first ``u - u % p`` units go whole (unit ``k`` to part
    ``k % p``); the last ``u % p`` units are joined and cut into ``p`` contiguous row runs. So every
    row lands in exactly one part, whole files are read where they divide evenly, and when there
    are fewer units than parts (one shard file, eight workers) every part still gets rows.
    """
    whole = len(units) // parts * parts
    mine = [run for unit in units[index:whole:parts] for run in unit]
    rest = [run for unit in units[whole:] for run in unit]
    return mine + split_runs(rest, parts, index)


def shard_rows(
    rows: Rows,
    num_shards: object,
    index: object,
    *,
    by: object,
    contiguous: object,
    segments: Sequence[tuple[int, int, int]],
    offsets: np.ndarray,
) -> Rows:
    """The rows of part ``index`` of ``num_shards`` (see ``CachedDataset.shard`` for the meaning)."""
    num_shards, index = check_part(num_shards, index, count_name="num_shards", index_name="index")
    if by not in SPLIT_BY:
        msg = f"by must be one of {SPLIT_BY}, got {by!r}"
        raise InvalidOptionError(msg)
    if not isinstance(contiguous, bool):
        msg = f"contiguous must be True or False, got {type(contiguous).__name__} {contiguous!r}"
        raise InvalidArgumentTypeError(msg)
    if by == "rows":
        if contiguous:
            start, stop = contiguous_bounds(len(rows), num_shards, index)
            return select_rows(rows, slice(start, stop))
        return select_rows(rows, slice(index, None, num_shards))
    units = file_units(rows, segments, offsets)
    if contiguous:
        start, stop = contiguous_bounds(len(units), num_shards, index)
        chosen = units[start:stop]
    else:
        chosen = units[index::num_shards]
    return join_runs([run for unit in chosen for run in unit])


def consumer_runs(
    units: Sequence[Unit],
    *,
    rank: int,
    world_size: int,
    worker: int = 0,
    num_workers: int = 1,
    order: tuple[int, int] | None = None,
) -> list[Rows]:
    """The runs one DataLoader worker of one rank reads: units dealt to ranks, then the rank's runs to workers.

    ``order`` is ``(seed, epoch)`` to shuffle the units first: every rank and worker draws the same
    permutation, so the parts stay disjoint. Dealing to ranks first makes a rank's rows independent
    of how many workers it runs.
    """
    if order is not None:
        permutation = np.random.default_rng(list(order)).permutation(len(units))
        units = [units[i] for i in permutation]
    mine = deal(units, world_size, rank)
    return deal([[run] for run in mine], num_workers, worker)
