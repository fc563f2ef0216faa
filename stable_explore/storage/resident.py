"""Memory-mapped shards, and letting go of their pages as a scan passes them, so a full read stays bounded.

A shard is read zero-copy through a memory map: what a reader touches becomes resident in this
process and stays resident (counted in its RSS) for as long as the map lives, and kept maps live
on purpose (see ``shard_file``). A full scan of a 2 GB version would hold 2 GB of mapped pages
by its end. They are the page cache's, not the process's own memory, but a user watching RSS
(or a container's limit on it) sees them. So the maps are made here, each one known while it
lives, and :class:`ScanPages` tells the kernel (``madvise(MADV_DONTNEED)``) that the pages of
every live map are no longer needed each time a scan has read :data:`RELEASE_EVERY_BYTES` more.
The data stays valid: a shard's map is read-only and shared, so a page touched again is read
back from the page cache (a minor fault) with the same bytes. Where ``madvise`` is missing
(Windows) nothing is released.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "f"
>>> _ = path.write_bytes(b"x" * 10_000)
>>> with path.open("rb") as raw:
...     buffer = map_file(raw)
>>> buffer.size, release_pages() >= 10_000
(10000, True)
"""

from __future__ import annotations

import mmap
import threading
import weakref
from typing import IO

import pyarrow as pa

__all__ = ["RELEASE_EVERY_BYTES", "ScanPages", "map_file", "release_pages"]

RELEASE_EVERY_BYTES = 64 * 1024 * 1024
"""A scan drops the mapped pages it touched each time it has read about this many bytes of shards."""

_MAPS: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()  # every map still held by some Arrow buffer
_LOCK = threading.Lock()
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def map_file(raw: IO[bytes]) -> pa.Buffer:
    """The whole open file as one read-only, zero-copy Arrow buffer over a memory map (known to :func:`release_pages`).

    The map is unmapped when the last Arrow buffer (table, batch, slice) made from it is released.
    """
    mapped = mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ)
    with _LOCK:
        _MAPS.add(mapped)
    return pa.py_buffer(mapped)


def release_pages() -> int:
    """Tell the kernel that the resident pages of every live shard map may go; returns the bytes advised.

    Cheap (a system call per live map, which walks only its resident pages), and safe at any time:
    the maps are read-only views of files that never change, so a reader that touches a page again
    faults it back in with the same bytes.
    """
    if _DONTNEED is None:
        return 0
    with _LOCK:
        maps = list(_MAPS)
    advised = 0
    for mapped in maps:
        try:
            mapped.madvise(_DONTNEED)
        except (OSError, ValueError):  # closed meanwhile, or the kernel declined: the pages simply stay
            continue
        advised += len(mapped)
    return advised


class ScanPages:
    """Counts what a scan has read and releases the mapped pages each :data:`RELEASE_EVERY_BYTES`.

    Parameters
    ----------
    bytes_per_row:
        The shard bytes a row takes on average (a version's bytes over its rows).
    every_bytes:
        How much a scan reads between two releases (default :data:`RELEASE_EVERY_BYTES`, read when
        the scan starts).

    Examples
    --------
    >>> pages = ScanPages(bytes_per_row=1000, every_bytes=4000)
    >>> [pages.passed(2) for _ in range(4)]
    [False, True, False, True]
    """

    def __init__(self, bytes_per_row: float, every_bytes: int | None = None) -> None:
        self._bytes_per_row = max(0.0, float(bytes_per_row))
        self._every = RELEASE_EVERY_BYTES if every_bytes is None else every_bytes
        self._read = 0.0

    def passed(self, rows: int) -> bool:
        """Count ``rows`` read; release the mapped pages when enough were read since the last release."""
        self._read += rows * self._bytes_per_row
        if self._read < self._every:
            return False
        self._read = 0.0
        release_pages()
        return True
