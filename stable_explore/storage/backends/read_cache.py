"""The local read-through cache of remote shards: fixed-size blocks of shard files, keyed by the shard's digest.

A version is immutable and its shards are content-addressed, so a block of a shard never
changes: ``<digest>.<block index>`` names it for every version, home and machine that holds
the same shard. Blocks are written to a temp file and renamed into place (a reader sees a
whole block or none), so several processes on one node (DataLoader workers) share the
cache without a lock on the read path. Eviction, least recently used first (a hit refreshes
the block's modification time), runs under a file lock once this process's estimate of the
cache's size passes the limit.

Where: ``$STABLE_EXPLORE_CACHE`` (default: ``.remote-cache`` inside the local home); how big:
``$STABLE_EXPLORE_CACHE_SIZE`` (default 10 GiB; ``"512MB"`` style or bytes).

Examples
--------
>>> import tempfile
>>> cache = ReadCache(tempfile.mkdtemp(), limit=3 * BLOCK_SIZE)
>>> cache.get("ab12", 0) is None
True
>>> cache.put("ab12", 0, b"x" * 10)
>>> cache.get("ab12", 0)
b'xxxxxxxxxx'
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from pathlib import Path

from filelock import FileLock

from stable_explore._units import parse_size

__all__ = [
    "BLOCK_SIZE",
    "CACHE_ENV",
    "CACHE_SIZE_ENV",
    "DEFAULT_CACHE_SIZE",
    "ReadCache",
    "default_cache_dir",
    "default_read_cache",
]

CACHE_ENV = "STABLE_EXPLORE_CACHE"
CACHE_SIZE_ENV = "STABLE_EXPLORE_CACHE_SIZE"

BLOCK_SIZE = 64 * 1024
"""Bytes per cached block: a footer or one small column of a batch costs one block, a big record batch several."""
DEFAULT_CACHE_SIZE = 10 * 1024**3
_EVICT_TO = 0.8
_TOUCH_EVERY = 60.0  # seconds: how often a hit refreshes a block's modification time (its LRU age)
_TOUCHED_KEPT = 200_000  # an eviction makes room for more than one block, so it does not run on every write


class ReadCache:
    """Blocks of shard files in a local folder, at most ``limit`` bytes, evicted least recently used first."""

    def __init__(self, root: str | Path, limit: int = DEFAULT_CACHE_SIZE) -> None:
        self.root = Path(root).expanduser()
        self.limit = int(limit)
        self._estimate: int | None = None
        self._lock = threading.Lock()
        self._touched: dict[tuple[str, int | str], float] = {}

    def __repr__(self) -> str:
        return f"ReadCache({str(self.root)!r}, limit={self.limit})"

    def _path(self, digest: str, block: int | str) -> Path:
        return self.root / "blocks" / digest[:2] / f"{digest}.{block}"

    def get(self, digest: str, block: int | str) -> bytes | None:
        """The cached block, or None (a block evicted by another process meanwhile is a miss too).

        ``block`` is a block's index, or a name (``"q<hash>"``) for the bytes of one exact-range request.
        """
        path = self._path(digest, block)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        now = time.monotonic()
        with self._lock:
            recent = now - self._touched.get((digest, block), -_TOUCH_EVERY) < _TOUCH_EVERY
            if not recent:
                if len(self._touched) > _TOUCHED_KEPT:
                    self._touched.clear()
                self._touched[(digest, block)] = now
        if not recent:  # a metadata write per hit was slow on a busy disk: once a minute per block is enough
            with contextlib.suppress(OSError):
                os.utime(path)  # least recently *used*: a hit makes the block young again
        return data

    def put(self, digest: str, block: int | str, data: bytes) -> None:
        """Store one block (atomically: a temp file renamed into place), evicting old blocks past the limit."""
        path = self._path(digest, block)
        with self._lock:
            self._touched[(digest, block)] = time.monotonic()  # just written: young already
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_bytes(data)
            tmp.replace(path)
        except OSError:
            tmp.unlink(missing_ok=True)
            return  # a cache that cannot be written is only slower
        with self._lock:
            if self._estimate is None:
                self._estimate = self.size()
            else:
                self._estimate += len(data)
            over = self._estimate > self.limit
        if over:
            self.evict()

    def drop(self, digest: str) -> int:
        """Delete every cached block of the shard ``digest`` (bytes that did not match it); returns blocks deleted.

        A block is cached when fetched, before the record batches it holds are checked; when a check
        fails, the shard's blocks are dropped here, so damaged bytes are never served again (by this
        or any later process), and the next read fetches them from the store once more.
        """
        dropped = 0
        folder = self.root / "blocks" / digest[:2]
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if entry.name.split(".", 1)[0] == digest:
                    with contextlib.suppress(OSError):
                        Path(entry.path).unlink()
                        dropped += 1
        with self._lock:
            self._estimate = None
            self._touched = {k: v for k, v in self._touched.items() if k[0] != digest}
        return dropped

    def size(self) -> int:
        """Bytes of every block in the cache now."""
        return sum(size for _, size, _ in self._blocks())

    def _blocks(self) -> list[tuple[float, int, Path]]:
        found = []
        blocks = self.root / "blocks"
        with contextlib.suppress(OSError):
            for folder in os.scandir(blocks):
                if not folder.is_dir():
                    continue
                with contextlib.suppress(OSError):
                    for entry in os.scandir(folder.path):
                        with contextlib.suppress(OSError):
                            stat = entry.stat()
                            found.append((stat.st_mtime, stat.st_size, Path(entry.path)))
        return found

    def evict(self, target: int | None = None) -> int:
        """Delete the least recently used blocks until at most ``target`` bytes remain; returns bytes freed."""
        goal = int(self.limit * _EVICT_TO) if target is None else target
        self.root.mkdir(parents=True, exist_ok=True)
        freed = 0
        with FileLock(str(self.root / ".evict.lock")):
            blocks = sorted(self._blocks(), key=lambda b: b[0])
            total = sum(size for _, size, _ in blocks)
            for _, size, path in blocks:
                if total <= goal:
                    break
                with contextlib.suppress(OSError):
                    path.unlink()
                    total -= size
                    freed += size
        with self._lock:
            self._estimate = total
        return freed


_caches: dict[tuple[str, int], ReadCache] = {}
_caches_lock = threading.Lock()


def default_read_cache() -> ReadCache:
    """The read cache ``$STABLE_EXPLORE_CACHE`` / ``$STABLE_EXPLORE_CACHE_SIZE`` name (one object per setting)."""
    root = str(default_cache_dir())
    size_text = os.environ.get(CACHE_SIZE_ENV, "").strip()
    limit = parse_size(size_text) if size_text else DEFAULT_CACHE_SIZE
    with _caches_lock:
        cache = _caches.get((root, limit))
        if cache is None:
            cache = _caches[(root, limit)] = ReadCache(root, limit)
        return cache


def default_cache_dir() -> Path:
    """``$STABLE_EXPLORE_CACHE``, else ``.remote-cache`` in the local home (``~/.cache/stable-explore``)."""
    given = os.environ.get(CACHE_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    home = os.environ.get("STABLE_EXPLORE_HOME", "").strip()  # the catalog's HOME_ENV (storage cannot import it)
    if home and "://" not in home:
        return Path(home).expanduser() / ".remote-cache"
    return Path.home() / ".cache" / "stable-explore" / ".remote-cache"
