"""What this process keeps of files it read, by file identity: shards never change once written.

Saves hard-link their parent's files and a notebook loads the same versions again and again,
so the same inodes are opened many times. :class:`Kept` is a bounded, thread-safe map of the
most recently used entries; :func:`file_identity` is the key part that changes whenever a
file does (a replaced or edited file is a new identity).

Examples
--------
>>> kept = Kept(max_entries=2)
>>> kept.put("a", 1); kept.put("b", 2); kept.put("c", 3)
>>> kept.get("a") is None, kept.get("c")
(True, 3)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["FileIdentity", "Kept", "file_identity", "identity_of"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

FileIdentity = tuple[int, int, int, int]
"""(device, inode, size, modification time in ns)."""


def identity_of(stat: os.stat_result) -> FileIdentity:
    """The identity a ``stat`` result gives."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def file_identity(path: str | os.PathLike[str]) -> FileIdentity | None:
    """The identity of the file at ``path``, or None when it cannot be read (the caller's open says why)."""
    try:
        return identity_of(Path(path).stat())
    except OSError:
        return None


class Kept(Generic[K, V]):
    """At most ``max_entries`` entries (and ``max_weight`` in all, by ``weight``), least recently used out first."""

    def __init__(
        self, max_entries: int, *, weight: Callable[[V], int] | None = None, max_weight: int | None = None
    ) -> None:
        self.max_entries = max_entries
        self._weight = weight
        self._max_weight = max_weight
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry for ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Keep ``value``; the least recently used entries go past the bounds."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while self._entries and (len(self._entries) > self.max_entries or self._too_heavy()):
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _too_heavy(self) -> bool:
        if self._weight is None or self._max_weight is None:
            return False
        return sum(self._weight(value) for value in self._entries.values()) > self._max_weight
