"""Per-record-batch digests: recorded while a shard is written, checked the first time a process reads a batch.

A shard file is its header, its record batches and its footer, in that order. The writer
records where each batch's bytes end (the first batch's range starts at 0, so it covers the
file header too) and an xxh3 digest of each range, and one digest of the footer (the bytes
after the last batch). The reader checks the footer when it maps a shard and each batch the
first time it hands out rows of it, so damaged bytes are never returned as data. Which
batches passed is remembered per process, by file identity (device, inode, size, mtime), so
a shard hard-linked into several versions is checked once.

Example
-------
>>> digests = BatchDigests(ends=(10, 20), digests=("a" * 16, "b" * 16), footer="c" * 16)
>>> digests.range_of(1), digests.footer_range(26)
((10, 20), (20, 26))
>>> BatchDigests.from_json(digests.to_json(), "m.json", 0) == digests
True
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from stable_explore.errors import CacheCorruptionError

__all__ = [
    "BATCH_HASH_ALGORITHM",
    "BatchDigests",
    "ShardCheck",
    "batch_digest",
    "forget_checked",
    "new_batch_hasher",
]

BATCH_HASH_ALGORITHM = "xxh3_64"
_READ_CHUNK = 4 * 1024 * 1024


def new_batch_hasher() -> Any:
    """A streaming hasher for one batch's bytes."""
    return xxhash.xxh3_64()


def batch_digest(data: Any) -> str:
    """The hex digest of a batch's bytes (anything with the buffer protocol)."""
    return str(xxhash.xxh3_64_hexdigest(data))


@dataclass(frozen=True)
class BatchDigests:
    """Where each record batch of one shard ends in the file, and the digests of each batch and of the footer."""

    ends: tuple[int, ...]
    digests: tuple[str, ...]
    footer: str

    def range_of(self, batch: int) -> tuple[int, int]:
        """The (start, end) byte range of a batch in the file."""
        return (self.ends[batch - 1] if batch else 0), self.ends[batch]

    def footer_range(self, file_size: int) -> tuple[int, int]:
        """The (start, end) byte range of the footer (everything after the last batch)."""
        return (self.ends[-1] if self.ends else 0), file_size

    def to_json(self) -> dict[str, Any]:
        return {"algorithm": BATCH_HASH_ALGORITHM, "ends": list(self.ends), "digests": list(self.digests),
                "footer": self.footer}  # fmt: skip

    @classmethod
    def from_json(cls, raw: Any, path: str | Path, shard: int) -> BatchDigests:
        """Check and type one shard's entry of ``batch_digests``; ``path`` names ``_metadata.json`` in errors."""
        where = f"'batch_digests' of shard {shard}"
        if not isinstance(raw, Mapping) or raw.get("algorithm") != BATCH_HASH_ALGORITHM:
            msg = f"{where} must be an object with algorithm {BATCH_HASH_ALGORITHM!r}, found {raw!r:.100}"
            raise CacheCorruptionError(path, msg)
        ends, digests, footer = raw.get("ends"), raw.get("digests"), raw.get("footer")
        ok = (
            isinstance(ends, list)
            and isinstance(digests, list)
            and len(ends) == len(digests)
            and all(type(e) is int for e in ends)
            and all(isinstance(d, str) and len(d) == 16 for d in digests)
            and isinstance(footer, str)
            and len(footer) == 16
            and all(b > a for a, b in zip([0, *ends], ends, strict=False))
        )
        if not ok:
            msg = f"{where} must list increasing batch ends and one 16-hex-digit digest per batch, found {raw!r:.200}"
            raise CacheCorruptionError(path, msg)
        assert isinstance(ends, list)
        assert isinstance(digests, list)
        assert isinstance(footer, str)
        return cls(tuple(ends), tuple(digests), footer)


# file identity -> which batches of that file passed their check in this process
_CHECKED: dict[tuple[int, int, int, int, str], bytearray] = {}
_CHECKED_LOCK = threading.Lock()


def forget_checked() -> None:
    """Forget which batches this process checked (the next read of each batch checks it again)."""
    with _CHECKED_LOCK:
        _CHECKED.clear()


RowsOf = Callable[[int, int], str]
"""Describes shard rows [start, stop) for an error message (for example as rows of the version)."""


class ShardCheck:
    """Checks the batches of one mapped shard against their digests, each batch once per process.

    Creating one checks the footer (a few hundred bytes). ``rows_of`` turns shard rows into
    the words an error uses to name them.
    """

    def __init__(self, path: Path, digests: BatchDigests, rows_of: RowsOf | None = None) -> None:
        self.path = path
        self.digests = digests
        self.rows_of = rows_of
        try:
            stat = path.stat()
            self._map = pa.memory_map(str(path), "r")
        except FileNotFoundError:
            raise CacheCorruptionError(path, "shard file is missing") from None
        except OSError as exc:
            raise CacheCorruptionError(path, f"cannot map the shard: {exc}") from exc
        self.size = stat.st_size
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, digests.footer)
        with _CHECKED_LOCK:
            checked = _CHECKED.get(key)
            if checked is None:
                checked = _CHECKED[key] = bytearray(len(digests.digests) + 1)
        self._checked = checked
        self.row_offsets: np.ndarray | None = None
        if not checked[-1]:
            start, end = digests.footer_range(self.size)
            if end < start or batch_digest(self._read(start, end)) != digests.footer:
                msg = (
                    f"the file footer (bytes {start}-{end}) does not match its digest: the shard is damaged; "
                    "rebuild this version (force=True) or restore it from a copy"
                )
                raise CacheCorruptionError(path, msg)
            checked[-1] = 1

    def _read(self, start: int, end: int) -> pa.Buffer:
        return self._map.read_at(end - start, start)

    def attach(self, table: pa.Table) -> None:
        """Learn the row offsets of the mapped table's batches (for messages), and check their count."""
        counts = [b.num_rows for b in table.to_batches()]
        if len(counts) != len(self.digests.digests):
            msg = f"shard holds {len(counts)} record batches, but {len(self.digests.digests)} were written"
            raise CacheCorruptionError(self.path, msg)
        self.row_offsets = np.cumsum([0, *counts], dtype=np.int64)

    @property
    def all_checked(self) -> bool:
        return all(self._checked)

    def ensure(self, batches: Iterable[int]) -> None:
        """Check these batches (those not checked before in this process); raise on the first mismatch."""
        checked = self._checked
        for batch in batches:
            if not checked[batch]:
                self._check(int(batch))

    def ensure_all(self) -> None:
        if not all(self._checked):
            self.ensure(range(len(self.digests.digests)))

    def ensure_rows(self, start: int, stop: int) -> None:
        """Check the batches holding shard rows [start, stop)."""
        if stop <= start or self.row_offsets is None:
            return
        first = int(np.searchsorted(self.row_offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.row_offsets, stop - 1, side="right")) - 1
        self.ensure(range(first, last + 1))

    def _check(self, batch: int) -> None:
        start, end = self.digests.range_of(batch)
        if end > self.size or batch_digest(self._read(start, end)) != self.digests.digests[batch]:
            raise CacheCorruptionError(self.path, self._mismatch(batch, start, end))
        self._checked[batch] = 1

    def _mismatch(self, batch: int, start: int, end: int) -> str:
        rows = ""
        if self.row_offsets is not None and batch + 1 < len(self.row_offsets):
            lo, hi = int(self.row_offsets[batch]), int(self.row_offsets[batch + 1])
            rows = f" (rows {lo}-{hi - 1} of this shard"
            rows += f"; {self.rows_of(lo, hi)})" if self.rows_of is not None else ")"
        return (
            f"record batch {batch}{rows}, bytes {start}-{end}, does not match its {BATCH_HASH_ALGORITHM} digest: "
            "the shard is damaged and these rows are not returned; rebuild this version (force=True) "
            "or restore it from a copy"
        )


def hash_shard_file(path: Path, digests: BatchDigests | None) -> tuple[str, list[int], bool]:
    """Read a shard once: its whole-file hasher digest, the batches that do not match, and whether the footer does.

    The whole-file digest uses :func:`stable_explore.storage.hashing.new_file_hasher`'s algorithm.
    """
    from stable_explore.storage.hashing import format_digest, new_file_hasher

    whole = new_file_hasher()
    bounds = list(digests.ends) if digests is not None else []
    expected = list(digests.digests) if digests is not None else []
    bad: list[int] = []
    batch = 0
    part = new_batch_hasher()
    position = 0  # file offset of the chunk's first byte
    buffer = bytearray(_READ_CHUNK)
    view = memoryview(buffer)
    with Path(path).open("rb", buffering=0) as f:
        while count := f.readinto(buffer):
            chunk = view[:count]
            whole.update(chunk)
            offset = 0
            while batch < len(bounds) and bounds[batch] <= position + count:
                cut = bounds[batch] - position
                part.update(chunk[offset:cut])
                offset = cut
                if part.hexdigest() != expected[batch]:
                    bad.append(batch)
                part = new_batch_hasher()
                batch += 1
            part.update(chunk[offset:])
            position += count
    bad.extend(range(batch, len(bounds)))  # the file ended before these batches did
    footer_ok = digests is None or (batch == len(bounds) and part.hexdigest() == digests.footer)
    return format_digest(whole), bad, footer_ok
