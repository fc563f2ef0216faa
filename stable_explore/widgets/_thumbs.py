"""An LRU of encoded thumbnails, bounded in bytes, keyed by (version, row, size)."""

from __future__ import annotations

import threading
from collections import OrderedDict

ThumbKey = tuple[str, int, int]


class ThumbnailCache:
    """Encoded thumbnails (bytes, MIME type), least recently used dropped first.

    Examples
    --------
    >>> cache = ThumbnailCache(max_bytes=10)
    >>> cache.put(("v", 0, 64), b"12345678", "image/jpeg")
    >>> cache.put(("v", 1, 64), b"abcdef", "image/jpeg")
    >>> cache.get(("v", 0, 64)) is None, cache.get(("v", 1, 64))
    (True, (b'abcdef', 'image/jpeg'))
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[ThumbKey, tuple[bytes, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: ThumbKey) -> tuple[bytes, str] | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item

    def put(self, key: ThumbKey, data: bytes, mime: str) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old[0])
            self._items[key] = (data, mime)
            self._bytes += len(data)
            while self._bytes > self.max_bytes and self._items:
                _, (dropped, _) = self._items.popitem(last=False)
                self._bytes -= len(dropped)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


SHARED_CACHE = ThumbnailCache()
"""One cache per kernel, shared by every browser (thumbnails of a version never change)."""
