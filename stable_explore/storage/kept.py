"""Every cache this process keeps of files it read and sidecars it parsed: one place, one ``forget``.

Shards never change once written, saves hard-link their parent's files, and a notebook loads the
same versions again and again, so the same inodes are opened many times. :class:`Kept` is a
bounded, thread-safe map of the most recently used entries (bounded in entries, and in bytes where
its entries have a size); :func:`file_identity` is the key part that changes whenever a file does
(a replaced or edited file is a new identity).

Each cache is made here by name: :func:`kept` for one the whole process shares, :func:`kept_each`
for one each object (a reader, an open remote file) holds for itself and drops with it.
:func:`stats` lists them all with their entries and bytes; :func:`forget` empties the shared ones
(gc and a replaced cache let go of those that hold open files, so a deleted file's disk space is
freed; tests forget everything).

Examples
--------
>>> lru = Kept(max_entries=2)
>>> lru.put("a", 1); lru.put("b", 2); lru.put("c", 3)
>>> lru.get("a") is None, lru.get("c")
(True, 3)
>>> demo = kept("doctest demo", max_entries=4, weight=len, max_bytes=10)
>>> demo.put("x", b"12345678"); demo.put("y", b"1234")  # 12 bytes: the older entry goes
>>> [(s.entries, s.bytes) for s in stats() if s.name == "doctest demo"]
[(1, 4)]
>>> forget("doctest demo"); len(demo)
0
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from stable_explore.errors import InvalidOptionError

__all__ = [
    "CacheStats",
    "FileIdentity",
    "Kept",
    "file_identity",
    "forget",
    "identity_of",
    "kept",
    "kept_each",
    "stats",
]

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
    """At most ``max_entries`` entries (and ``max_weight`` in all, by ``weight``), least recently used out first.

    ``weight`` must give the same size for a value each time it is asked (the total is kept as
    entries come and go).
    """

    def __init__(
        self, max_entries: int, *, weight: Callable[[V], int] | None = None, max_weight: int | None = None
    ) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._weight = weight
        self._total = 0
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
            self._put(key, value)

    def setdefault(self, key: K, value: V) -> V:
        """The entry for ``key`` if there is one (now the most recently used), else ``value``, now kept."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
            self._put(key, value)
            return value

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._total = 0

    def drop_where(self, doomed: Callable[[K], bool]) -> int:
        """Forget the entries whose key ``doomed`` says; returns how many went."""
        with self._lock:
            keys = [key for key in self._entries if doomed(key)]
            for key in keys:
                self._total -= self._size(self._entries.pop(key))
            return len(keys)

    @property
    def nbytes(self) -> int:
        """The entries' size in all, by ``weight`` (0 when entries have no size)."""
        return self._total

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, key: K, value: V) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._total -= self._size(old)
        self._entries[key] = value
        self._total += self._size(value)
        while self._entries and (len(self._entries) > self.max_entries or self._too_heavy()):
            _, dropped = self._entries.popitem(last=False)
            self._total -= self._size(dropped)

    def _size(self, value: V) -> int:
        return 0 if self._weight is None else self._weight(value)

    def _too_heavy(self) -> bool:
        return self.max_weight is not None and self._total > self.max_weight


@dataclass(frozen=True)
class CacheStats:
    """One cache as :func:`stats` lists it.

    ``scope`` is "process" (one cache, shared) or "each" (one per live object: ``holders`` of
    them, their entries and bytes added up; each object's bounds). ``bytes`` is 0 for entries
    without a size (flags, maps of files whose pages the kernel may drop).
    """

    name: str
    scope: str
    holds_files: bool
    entries: int
    bytes: int
    max_entries: int
    max_bytes: int | None
    holders: int = 1


@dataclass
class _Shared:
    cache: Kept[Any, Any]
    holds_files: bool


@dataclass
class _Each:
    caches: weakref.WeakSet[Kept[Any, Any]]
    holds_files: bool
    max_entries: int
    max_bytes: int | None


_REGISTRY: dict[str, _Shared | _Each] = {}
_REGISTRY_LOCK = threading.Lock()


def kept(
    name: str,
    max_entries: int,
    *,
    weight: Callable[[V], int] | None = None,
    max_bytes: int | None = None,
    holds_files: bool = False,
) -> Kept[Any, V]:
    """A cache the whole process shares, registered as ``name`` (a module made again replaces its own).

    ``holds_files``: its entries keep files open or mapped (a deleted file's disk space is
    freed only once they go), so gc and a replaced cache :func:`forget` them.
    """
    cache: Kept[object, V] = Kept(max_entries, weight=weight, max_weight=max_bytes)
    with _REGISTRY_LOCK:
        if isinstance(_REGISTRY.get(name), _Each):
            msg = f"a cache named {name!r} is already registered as one each object holds"
            raise InvalidOptionError(msg)
        _REGISTRY[name] = _Shared(cache, holds_files)
    return cache


def kept_each(
    name: str,
    max_entries: int,
    *,
    weight: Callable[[V], int] | None = None,
    max_bytes: int | None = None,
    holds_files: bool = False,
) -> Kept[Any, V]:
    """A new cache for one object, counted under ``name`` with every other live one of that name.

    It goes with its object; :func:`forget` leaves it alone (the object may be reading from
    it), :func:`stats` counts it.
    """
    cache: Kept[object, V] = Kept(max_entries, weight=weight, max_weight=max_bytes)
    with _REGISTRY_LOCK:
        family = _REGISTRY.get(name)
        if family is None:
            family = _REGISTRY[name] = _Each(weakref.WeakSet(), holds_files, max_entries, max_bytes)
        if not isinstance(family, _Each):
            msg = f"a cache named {name!r} is already registered as one the process shares"
            raise InvalidOptionError(msg)
        family.caches.add(cache)
    return cache


def forget(*names: str, holding_files: bool = False) -> None:
    """Empty the caches the process shares: those ``names`` name, else all (``holding_files``: those holding files).

    gc and a replaced cache call ``forget(holding_files=True)`` before deleting files (a kept
    map of a deleted shard would hold its disk space); tests call ``forget()`` to read as a
    fresh process would. Caches each object holds for itself go with their objects.

    Raises
    ------
    InvalidOptionError
        A name that is not a cache the process shares.
    """
    with _REGISTRY_LOCK:
        registered = dict(_REGISTRY)
    for name in names:
        if not isinstance(registered.get(name), _Shared):
            shared = sorted(n for n, e in registered.items() if isinstance(e, _Shared))
            msg = f"no cache the process shares is named {name!r} (there are {shared})"
            raise InvalidOptionError(msg)
    for name, entry in registered.items():
        if not isinstance(entry, _Shared) or (names and name not in names):
            continue
        if holding_files and not entry.holds_files:
            continue
        entry.cache.clear()


def stats() -> list[CacheStats]:
    """Every registered cache, by name: its entries and bytes now, and its bounds."""
    with _REGISTRY_LOCK:
        registered = sorted(_REGISTRY.items())
    found: list[CacheStats] = []
    for name, entry in registered:
        if isinstance(entry, _Shared):
            cache = entry.cache
            counts = (len(cache), cache.nbytes, cache.max_entries, cache.max_weight)
            found.append(CacheStats(name, "process", entry.holds_files, *counts))
        else:
            live = list(entry.caches)
            found.append(
                CacheStats(
                    name,
                    "each",
                    entry.holds_files,
                    sum(len(c) for c in live),
                    sum(c.nbytes for c in live),
                    max((c.max_entries for c in live), default=entry.max_entries),
                    entry.max_bytes,
                    len(live),
                )
            )
    return found
