"""Duplicate keys in a build, found in bounded memory whatever the number of rows.

Each key becomes 64 bits (an int key is itself; a string key is xxh3-64 of its UTF-8 bytes).
Up to :data:`RUN_ROWS` of them are kept in memory; beyond that they are sorted and spilled, a
sorted run at a time, to a hidden file in the build's private staging directory, and at the end
the runs are merged block by block. So memory stays at about one run (8 MiB) plus one block of
each run, 8 bytes of disk a row pay for any number of rows, and a repeated hash is then
confirmed on the keys read back from the shards (a hash collision is never reported as a duplicate).

Examples
--------
>>> import tempfile
>>> import pyarrow as pa
>>> from pathlib import Path
>>> check = KeyCheck(Path(tempfile.mkdtemp()))
>>> check.add([1, 2], pa.array([1, 2], pa.int64()), 0)
>>> check.repeated_hashes().tolist()
[]
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import DuplicateKeyError
from stable_explore.storage.backends.fsutil import writing
from stable_explore.storage.format.hashing import is_text, text_hashes

__all__ = ["RUN_ROWS", "KeyCheck", "key_hashes"]

RUN_ROWS = 1 << 20
"""Key hashes kept in memory before a sorted run is spilled (8 MiB)."""

_BLOCK_ROWS = 1 << 14  # hashes read from each run at a time while merging (128 KiB a run)
_SPILL_NAME = ".key-hashes.tmp"


def key_hashes(keys: pa.Array) -> np.ndarray:
    """64 bits per key: an int key is its own hash (exact); a string key's is xxh3-64 of its UTF-8 bytes."""
    if pa.types.is_integer(keys.type):
        exact: np.ndarray = np.asarray(keys.to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
        return exact
    return text_hashes(keys)  # xxh3-64 of the UTF-8 bytes, a C-level loop


def _refuse_repeats(keys: list[object], first_index: int) -> None:
    """Raise DuplicateKeyError for the first key of ``keys`` that repeats an earlier one (if any does)."""
    first: dict[object, int] = {}
    for position, key in enumerate(keys):
        if key in first:
            raise DuplicateKeyError(key, first_index + first[key], first_index + position)
        first[key] = position


def _repeats(sorted_hashes: np.ndarray) -> np.ndarray:
    repeated: np.ndarray = sorted_hashes[1:][sorted_hashes[1:] == sorted_hashes[:-1]]
    return repeated


class KeyCheck:
    """Refuses duplicate keys in one build, in bounded memory (see the module docstring).

    ``spill_dir`` is the build's private staging directory; the spill file is removed by
    :meth:`repeated_hashes` (and :meth:`close`), before anything is published.
    """

    def __init__(self, spill_dir: Path, run_rows: int = RUN_ROWS) -> None:
        self._spill = Path(spill_dir) / _SPILL_NAME
        self._run_rows = run_rows
        # one buffer of hashes, grown by doubling up to a run and then reused run after run: no small
        # long-lived blocks between a build's batches (they kept freed heap from being reused), and a
        # spill sorts it in place instead of concatenating a copy
        self._buffer = np.empty(0, np.uint64)
        self._buffered = 0
        self._runs: list[int] = []  # rows in each sorted run spilled, in file order
        self._candidates: list[np.ndarray] = []

    def add(
        self,
        keys: list[object] | range | pa.Array,
        key_array: pa.Array,
        first_index: int,
        texts: np.ndarray | None = None,
    ) -> None:
        """Check one batch's keys (a repeat inside the batch raises at once) and remember their hashes.

        ``keys`` are the batch's keys as given: Python keys, a range of running indices (unique
        by themselves), or an Arrow column (looked at as Python only when two hashes repeat).
        ``texts``: the :func:`~stable_explore.storage.format.hashing.text_hashes` of string keys,
        when the caller has them already.
        """
        hashes = texts if texts is not None and is_text(key_array) else key_hashes(key_array)
        if isinstance(keys, pa.Array):
            if len(distinct(hashes)) != len(hashes):
                _refuse_repeats(keys.to_pylist(), first_index)
        elif not isinstance(keys, range) and len(set(keys)) != len(keys):
            _refuse_repeats(keys, first_index)
        self._append(hashes)

    def add_unique(self, key_array: pa.Array) -> None:
        """Remember keys already known to be unique among themselves (a shard another writer checked)."""
        self._append(key_hashes(key_array))  # copied into the buffer: the keys' buffer is the caller's

    def _append(self, hashes: np.ndarray) -> None:
        done = 0
        while done < len(hashes):
            if self._buffered == len(self._buffer):
                if len(self._buffer) < self._run_rows:
                    wanted = max(2 * len(self._buffer), self._buffered + len(hashes) - done, 4096)
                    grown = np.empty(min(self._run_rows, wanted), np.uint64)
                    grown[: self._buffered] = self._buffer[: self._buffered]
                    self._buffer = grown
                else:
                    self._spill_run()
            take = min(len(hashes) - done, len(self._buffer) - self._buffered)
            self._buffer[self._buffered : self._buffered + take] = hashes[done : done + take]
            self._buffered += take
            done += take
        if self._buffered >= self._run_rows:
            self._spill_run()

    def _sorted_buffer(self) -> np.ndarray:
        run = self._buffer[: self._buffered]
        self._buffered = 0
        run.sort()
        self._candidates.append(_repeats(run).copy())
        return run

    def _spill_run(self) -> None:
        run = self._sorted_buffer()
        with writing(self._spill), self._spill.open("ab") as f:
            f.write(run.data)
        self._runs.append(len(run))

    def repeated_hashes(self) -> np.ndarray:
        """Every hash seen more than once (sorted, unique); the spill file is gone afterwards."""
        try:
            if self._runs:
                if self._buffered:
                    self._spill_run()
                self._buffer = np.empty(0, np.uint64)  # the run buffer is not needed while merging: freed first
                self._candidates.append(self._merge_runs())
            else:
                self._sorted_buffer()
        finally:
            self.close()
        found = np.concatenate(self._candidates) if self._candidates else np.empty(0, np.uint64)
        self._candidates.clear()
        return distinct(found)

    def _merge_runs(self) -> np.ndarray:
        """Hashes repeated across runs: a k-way merge, one block of each run in memory at a time."""
        starts = np.concatenate([[0], np.cumsum(self._runs)]).astype(np.int64) * 8
        ends = starts[1:]
        read_at = starts[:-1].copy()
        found: list[np.ndarray] = []
        fd = os.open(self._spill, os.O_RDONLY)
        try:

            def refill(i: int) -> np.ndarray:
                size = int(min(_BLOCK_ROWS * 8, ends[i] - read_at[i]))
                data = os.pread(fd, size, int(read_at[i]))
                read_at[i] += len(data)
                return np.frombuffer(data, dtype=np.uint64)

            blocks = [refill(i) for i in range(len(self._runs))]
            last: np.ndarray = np.empty(0, np.uint64)
            while any(len(b) for b in blocks):
                more = [i for i, b in enumerate(blocks) if len(b) and read_at[i] < ends[i]]
                # every hash <= the smallest last hash of a run with more to read is final: merge those
                bound = min(int(blocks[i][-1]) for i in more) if more else None
                parts = []
                for i, block in enumerate(blocks):
                    cut = len(block) if bound is None else int(np.searchsorted(block, np.uint64(bound), "right"))
                    parts.append(block[:cut])
                    blocks[i] = block[cut:]
                merged = np.sort(np.concatenate([last, *parts]))
                found.append(_repeats(merged))
                if len(merged):
                    last = merged[-1:]
                for i, block in enumerate(blocks):
                    if not len(block) and read_at[i] < ends[i]:
                        blocks[i] = refill(i)
        finally:
            os.close(fd)
        return np.concatenate(found) if found else np.empty(0, np.uint64)

    def close(self) -> None:
        """Remove the spill file (a build that failed or finished)."""
        with contextlib.suppress(OSError):
            self._spill.unlink()
        self._runs.clear()
        self._buffer, self._buffered = np.empty(0, np.uint64), 0
