"""Memory-mapped shards, and letting go of their pages as a scan passes them, so a full read stays bounded.

A shard is read zero-copy through a memory map: what a reader touches becomes resident in this
process and stays resident (counted in its RSS) for as long as the map lives, and kept maps live
on purpose (see ``shard_file``). A full scan of a 2 GB version would hold 2 GB of mapped pages
by its end. They are the page cache's, not the process's own memory, but a user watching RSS
(or a container's limit on it) sees them. So the maps are made here, each one known while it
lives; readers count what they read in order (:func:`note_read`), and once the resident pages
grew by :data:`RELEASE_EVERY_BYTES` the kernel is told (``madvise(MADV_DONTNEED)``) that the
pages of every live map are no longer needed. The data stays valid: a shard's map is read-only
and shared, so a page touched again is read back from the page cache (a minor fault) with the
same bytes. Where ``madvise`` is missing (Windows) nothing is released.

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
import sys
import threading
import weakref
from pathlib import Path
from typing import IO

import pyarrow as pa

__all__ = ["RELEASE_EVERY_BYTES", "ReadMeter", "map_file", "note_read", "release_pages", "sparse_read_bytes"]

RELEASE_EVERY_BYTES = 64 * 1024 * 1024
"""The mapped pages are released each time this process has read about this many bytes of shards."""

FAULT_AROUND_BYTES = 64 * 1024
"""What one touched row of a map makes resident at least: Linux maps the pages around a fault (fault_around_bytes)."""

_MAPS: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()  # every map still held by some Arrow buffer
_LOCK = threading.Lock()
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def map_file(raw: IO[bytes]) -> pa.Buffer:
    """The whole open file as one read-only, zero-copy Arrow buffer over a memory map (known to :func:`release_pages`).

    The map is unmapped when the last Arrow buffer (table, batch, slice) made from it is released.
    """
    if sys.version_info >= (3, 13):  # the map needs no file descriptor of its own
        mapped = mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ, trackfd=False)
    else:  # it keeps a duplicate of the file's descriptor while it lives (at most the kept maps' and readers')
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


class ReadMeter:
    """Counts the shard bytes read in this process and releases the mapped pages when they grew by enough.

    How much a read makes resident depends on the kernel (it maps the pages around a fault, a whole
    large folio on recent ones), so where ``/proc/self/statm`` tells the process's resident file pages
    they are measured each time about 1/16 of :data:`RELEASE_EVERY_BYTES` was counted, and the maps are
    released once they grew by :data:`RELEASE_EVERY_BYTES` since the last release; elsewhere the pages
    are released each time that many bytes were counted.

    Examples
    --------
    >>> meter = ReadMeter(measure=False)
    >>> meter.passed(RELEASE_EVERY_BYTES // 2), meter.passed(RELEASE_EVERY_BYTES // 2)
    (False, True)
    """

    def __init__(self, *, measure: bool = True) -> None:
        self._counted = 0.0
        self._lock = threading.Lock()
        self._measure = measure and _resident_file_bytes() is not None
        self._after_release = _resident_file_bytes() or 0 if self._measure else 0

    def passed(self, nbytes: float) -> bool:
        """Count ``nbytes`` read; release the mapped pages when enough became resident since the last release."""
        with self._lock:
            self._counted += nbytes
            every = RELEASE_EVERY_BYTES / 16 if self._measure else RELEASE_EVERY_BYTES
            if self._counted < every:
                return False
            self._counted = 0.0
            if self._measure:
                grown = (_resident_file_bytes() or 0) - self._after_release
                if grown < RELEASE_EVERY_BYTES:
                    return False
        release_pages()
        if self._measure:
            with self._lock:
                self._after_release = _resident_file_bytes() or 0
        return True


_STATM = Path("/proc/self/statm")
_PAGE_SIZE = mmap.PAGESIZE


def _resident_file_bytes() -> int | None:
    """Resident shared pages of this process (mapped files, and shared memory), or None where unknown."""
    try:
        fields = _STATM.read_bytes().split()
    except OSError:
        return None
    return int(fields[2]) * _PAGE_SIZE


_METER = ReadMeter()


def note_read(nbytes: float) -> bool:
    """Count ``nbytes`` of shards read by any reader of this process (see :class:`ReadMeter`); True if released."""
    return _METER.passed(nbytes)


def sparse_read_bytes(first: int, last: int, count: int, bytes_per_row: float) -> float:
    """The mapped bytes a read of ``count`` rows between rows ``first`` and ``last`` touches, about.

    Each row brings in at least the pages around it (:data:`FAULT_AROUND_BYTES`), and never more
    than the span of rows it lies in: 10 relabelled rows of a 30 MB shard touch ~640 KB. Counted as
    their span, each such save measured the process's resident pages, and in a process whose other
    reads had made enough resident, released every mapped page (1.5-3.5 ms of a 12 ms save).

    Examples
    --------
    >>> sparse_read_bytes(0, 99_999, 10, 300.0), sparse_read_bytes(0, 9, 10, 300.0)
    (655360.0, 3000.0)
    """
    span = (last - first + 1) * bytes_per_row
    return float(min(span, count * max(bytes_per_row, FAULT_AROUND_BYTES)))
