r"""The storage protocol: what the catalog asks of a home, whatever holds it (a local directory; later a bucket).

Keys are ``/``-separated paths relative to the home, such as ``pets/refs/latest``; each
part must be a plain name (no ``..``, no empty part, no NUL), so no key can reach outside
the home. Every implementation runs the same conformance suite
(:class:`stable_explore.testing.store.StoreConformance`), so they fail alike.

Small records (refs, source records) are text. Writes are atomic: a reader sees the old
text or the new, never a part. ``put_if_absent`` and ``swap`` are the two conditional
writes that let several processes, or several machines on object storage, share a home
without losing each other's updates.

Examples
--------
>>> import tempfile
>>> from stable_explore.storage.backends.local import LocalStore
>>> store = LocalStore(tempfile.mkdtemp())
>>> store.put_if_absent("pets/refs/latest", "v1\n"), store.put_if_absent("pets/refs/latest", "v2\n")
(True, False)
>>> store.swap("pets/refs/latest", "v1\n", "v3\n"), store.read_text("pets/refs/latest")
(True, 'v3\n')
>>> store.list_dir("pets/refs")
['latest']
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from stable_explore.errors import UnsafePathError

Notify = Callable[[str], None]
"""Told (a message) when a lock's wait is long, or a dead holder's lock was taken over."""

__all__ = ["Store", "check_key"]

_FORBIDDEN_PARTS = ("", ".", "..")


def check_key(key: str) -> str:
    """``key`` if it is a relative ``/``-separated path of plain names; else :class:`UnsafePathError`."""
    parts = key.split("/") if isinstance(key, str) else None
    if (
        parts is None
        or any(part in _FORBIDDEN_PARTS for part in parts)
        or any("\x00" in part or "\\" in part for part in parts)
    ):
        msg = f"a storage key must be a relative path of plain names joined by '/', got {key!r}"
        raise UnsafePathError(key if isinstance(key, str) else repr(key), msg)
    return key


class Store(abc.ABC):
    """A home's files, addressed by key.

    Attributes
    ----------
    url:
        Where the home is, for messages (never with credentials).
    """

    url: str

    # -- reading -----------------------------------------------------------------

    @abc.abstractmethod
    def read_text(self, key: str) -> str | None:
        """The text stored at ``key``, or None when there is none."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """Whether a file is stored at ``key``."""

    @abc.abstractmethod
    def list_dir(self, prefix: str) -> list[str]:
        """The names directly below ``prefix`` (files and folders), sorted.

        Names starting with ``.`` (locks, temp files of writes in progress) are internal and not listed.
        """

    @abc.abstractmethod
    def size(self, key: str) -> int | None:
        """Bytes of the file at ``key``, or None when there is none."""

    @abc.abstractmethod
    def get_file(self, key: str, path: Path, *, hasher: object = None) -> None:
        """Copy the file at ``key`` to the local ``path`` (which appears whole or not at all).

        ``hasher`` (e.g. :func:`~stable_explore.storage.format.hashing.new_file_hasher`), when given, is
        fed every byte as it is written: the copy is checked in the same pass that makes it.
        """

    def read_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        """The bytes ``[start, end)`` of the file at ``key``, for each range (one request for all, where it can)."""
        path = self.local_path(key)
        if path is None:  # pragma: no cover - every remote store overrides this
            msg = f"{type(self).__name__} cannot read ranges"
            raise NotImplementedError(msg)
        found = []
        with path.open("rb") as file:
            for start, end in ranges:
                file.seek(start)
                found.append(file.read(max(0, end - start)))
        return found

    def local_path(self, key: str) -> Path | None:
        """A path on this machine for ``key`` (to memory-map shards), or None for a remote store."""
        return None

    # -- writing -----------------------------------------------------------------

    @abc.abstractmethod
    def write_text(self, key: str, text: str) -> None:
        """Store ``text`` at ``key``, atomically and durably, replacing what was there."""

    @abc.abstractmethod
    def put_if_absent(self, key: str, text: str) -> bool:
        """Store ``text`` at ``key`` only if nothing is there; True when this call stored it."""

    @abc.abstractmethod
    def swap(self, key: str, expected: str | None, text: str) -> bool:
        """Replace the text at ``key`` with ``text`` only if it is ``expected`` (None: only if absent).

        True when this call replaced it; False (and nothing written) when another writer got there first.
        """

    @abc.abstractmethod
    def put_file(self, key: str, path: Path) -> None:
        """Store the local file ``path`` at ``key`` (readers see the whole file or none)."""

    @abc.abstractmethod
    def copy(self, source: str, key: str) -> None:
        """Store a copy of the file at ``source`` at ``key``, inside the store (no download)."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove the file at ``key``; nothing happens if there is none."""

    @abc.abstractmethod
    @contextlib.contextmanager
    def lock(self, key: str, *, timeout: float | None = None, notify: Notify | None = None) -> Iterator[None]:
        """Hold an exclusive lock named ``key`` for the block; re-entrant within a thread.

        ``timeout``: seconds to wait at most (None: until free), then ``LockTimeoutError``. ``notify`` is
        told who holds it after a few seconds of waiting, and when a dead or stale holder's lock is taken over.
        """
        yield  # pragma: no cover - abstract
