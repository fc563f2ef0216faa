"""Small files kept beside ``_metadata.json`` (format revision 4), each named in it with its digest and size.

A label-only save of a big version used to rewrite, in its ``_metadata.json``, the record batch
digests of every shard it reused and the digest of every run of rows: 160 KB at 2M rows for a
change of 10 cells. From revision 4 those lists live in files of their own, and a save links
(or, in a bucket, copies inside the store) the files it does not change, as it does the shards:

* ``shard-NNNNN.batches``: one shard's record batch digests (see :mod:`.batches`), beside it;
* ``content-runs.json``: the runs of rows of a version's content digest (see :mod:`.content_runs`).

``_metadata.json`` records each file as ``{"file", "digest", "size"}``; the file is checked
against both when it is first read, so a damaged or swapped file is named, never trusted.
Files are loaded lazily: opening a version reads none of them, and a bucket's version fetches
each from the bucket only when a read first needs it (a page of rows: its shard's batch digests).

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> ref = write_small_file(folder, "notes.json", b'{"a":1}')
>>> ref.size, read_small_file(folder, ref, folder / "_metadata.json")
(7, b'{"a":1}')
>>> FileRef.from_json(ref.to_json(), folder / "_metadata.json", "a test file") == ref
True
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import xxhash

from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, RemoteStoreError
from stable_explore.storage.backends.fsutil import fsync_path, replacing, version_gone, writing
from stable_explore.storage.backends.remote_file import count_fetched, gone_or, location_store
from stable_explore.storage.format.batch_digests import BatchDigests

if TYPE_CHECKING:
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = [
    "BatchDigestList",
    "FileRef",
    "batches_file_name",
    "link_small_file",
    "read_small_file",
    "write_batches_file",
    "write_json_file",
    "write_small_file",
]

SMALL_FILE_ALGORITHM = "xxh3_128"
BATCHES_SUFFIX = ".batches"


def batches_file_name(shard_name: str) -> str:
    """The name of a shard's record batch digests file: ``shard-00003.arrow`` -> ``shard-00003.batches``."""
    return shard_name.removesuffix(".arrow") + BATCHES_SUFFIX


def _digest(data: bytes) -> str:
    return f"{SMALL_FILE_ALGORITHM}:{xxhash.xxh3_128_hexdigest(data)}"


@dataclass(frozen=True)
class FileRef:
    """A small file of a version: its name beside ``_metadata.json``, the digest of its bytes and its size."""

    file: str
    digest: str
    size: int

    def to_json(self) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        return {"file": self.file, "digest": self.digest, "size": self.size}

    def renamed(self, file: str) -> FileRef:
        """The same bytes under another name (a linked or moved copy)."""
        return FileRef(file, self.digest, self.size)

    @classmethod
    def from_json(cls, raw: Any, meta_path: str | Path, where: str) -> FileRef:
        """Check and type a recorded file; ``where`` says which field it is in, for errors."""
        ok = (
            isinstance(raw, Mapping)
            and isinstance(raw.get("file"), str)
            and isinstance(raw.get("digest"), str)
            and str(raw["digest"]).startswith(SMALL_FILE_ALGORITHM + ":")
            and type(raw.get("size")) is int
            and raw["size"] >= 0
        )
        if not ok:
            msg = f"{where} must be an object with a 'file' name, its {SMALL_FILE_ALGORITHM} 'digest' and 'size'"
            raise CacheCorruptionError(meta_path, f"{msg}, found {raw!r:.150}")
        assert isinstance(raw, Mapping)
        return cls(str(raw["file"]), str(raw["digest"]), int(raw["size"]))


def write_small_file(directory: Path, name: str, data: bytes) -> FileRef:
    """Write ``data`` as ``directory / name``, durably (fsynced); return how the metadata records it."""
    path = directory / name
    with writing(path):
        path.write_bytes(data)
        fsync_path(path)
    return FileRef(name, _digest(data), len(data))


def write_json_file(directory: Path, name: str, value: Any) -> FileRef:
    """Write ``value`` as compact JSON in ``directory / name`` (see :func:`write_small_file`)."""
    return write_small_file(directory, name, json.dumps(value, separators=(",", ":")).encode())


def write_batches_file(directory: Path, shard_name: str, digests: BatchDigests) -> FileRef:
    """Write a shard's record batch digests beside it; return how the metadata records the file."""
    return write_json_file(directory, batches_file_name(shard_name), digests.to_json())


def link_small_file(source_dir: Path, ref: FileRef, target_dir: Path, name: str) -> FileRef:
    """Hard-link a version's small file into another version's folder (a copy where links fail)."""
    target = target_dir / name
    try:
        os.link(source_dir / ref.file, target)
    except FileNotFoundError:
        gone = version_gone(source_dir)  # gc took the version this one reuses while it was being written
        if gone:
            raise CacheNotFoundError(gone) from None
        raise CacheCorruptionError(source_dir / ref.file, "listed in _metadata.json but missing") from None
    except OSError:
        with writing(target):
            shutil.copyfile(source_dir / ref.file, target)
            fsync_path(target)
    return ref.renamed(name)


def read_small_file(directory: Path, ref: FileRef, meta_path: Path, remote: RemoteLocation | None = None) -> bytes:
    """The bytes of a version's small file, checked against the recorded size and digest.

    For a bucket's version (``remote``), ``directory`` is this machine's mirror of its metadata:
    a small file is fetched from the bucket the first time a read needs it (once per process:
    threads asking for it meanwhile wait for that request), checked, and kept in the mirror for
    the next open. A mirror's copy that does not match is fetched again.

    Raises
    ------
    CacheCorruptionError
        The file is missing, or its bytes are not the ones written; the message names it (for a
        bucket's version, its URL in the bucket).
    """
    path = directory / ref.file
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if remote is not None:
            return _fetch_small_file(path, ref, meta_path, remote)
        gone = version_gone(directory)
        if gone:
            raise CacheNotFoundError(gone) from None
        raise CacheCorruptionError(path, f"listed in {meta_path.name} but missing") from None
    except OSError as exc:
        raise CacheCorruptionError(path, f"cannot be read: {exc}") from exc
    if not _matches(data, ref):
        if remote is not None:  # the mirror is this machine's copy: the bucket's file is the one to trust
            return _fetch_small_file(path, ref, meta_path, remote)
        raise CacheCorruptionError(path, _mismatch(data, ref, meta_path))
    return data


def _matches(data: bytes, ref: FileRef) -> bool:
    return len(data) == ref.size and _digest(data) == ref.digest


def _mismatch(data: bytes, ref: FileRef, meta_path: Path) -> str:
    return (
        f"is {len(data)} bytes that do not match the {ref.size} bytes and digest recorded in {meta_path.name}: "
        "the file was damaged or replaced"
    )


_FETCH_LOCKS = tuple(threading.Lock() for _ in range(32))
"""Small files being fetched from a bucket, by a hash of their mirror path: one request per file and process."""


def _fetch_small_file(path: Path, ref: FileRef, meta_path: Path, remote: RemoteLocation) -> bytes:
    """Fetch a bucket's version's small file into its mirror ``path``, checked; its bytes."""
    with _FETCH_LOCKS[hash(str(path)) % len(_FETCH_LOCKS)]:
        try:  # another thread may have fetched it while this one waited
            data = path.read_bytes()
        except OSError:
            pass
        else:
            if _matches(data, ref):
                return data
        key = remote.key(ref.file)
        try:
            data = location_store(remote).read_ranges(key, [(0, ref.size)])[0] if ref.size else b""
        except RemoteStoreError as exc:
            reason = gone_or(remote, exc)
            if reason is exc and isinstance(exc.__cause__, FileNotFoundError):  # the version is there, not this file
                where = remote.describe(ref.file)
                raise CacheCorruptionError(where, f"listed in {meta_path.name} but missing from the bucket") from exc
            raise reason from exc
        count_fetched(len(data), small_file=key)
        if not _matches(data, ref):
            raise CacheCorruptionError(remote.describe(ref.file), _mismatch(data, ref, meta_path))
        try:  # kept for the next open; the mirror is a cache: a copy it cannot keep is fetched again then
            with replacing(path, durable=False) as tmp:
                tmp.write_bytes(data)
        except OSError:
            pass
        return data


def read_json_file(directory: Path, ref: FileRef, meta_path: Path, remote: RemoteLocation | None = None) -> Any:
    """A small JSON file's value, checked as :func:`read_small_file` checks its bytes."""
    data = read_small_file(directory, ref, meta_path, remote)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # digest matched: written damaged, or a hash collision
        raise CacheCorruptionError(directory / ref.file, f"not valid JSON: {exc}") from exc


BatchEntry = BatchDigests | FileRef | None


class BatchDigestList(Sequence["BatchDigests | None"]):
    """Per shard, its record batch digests: recorded inline (revisions 2-3) or in a file beside the shard (4).

    A file is read, checked and parsed the first time its shard's digests are asked for, so
    opening a version of many shards reads none of them (nor, for a bucket's version, fetches
    them). Threads asking for one shard's digests at once share one read; other shards' go on.
    """

    def __init__(
        self,
        directory: Path,
        entries: Sequence[BatchEntry],
        shard_rows: Sequence[int],
        remote: RemoteLocation | None = None,
    ) -> None:
        self.directory = directory
        self.entries = list(entries)
        self.shard_rows = list(shard_rows)
        self.remote = remote
        """For a bucket's version: where its files are (``directory`` is this machine's mirror)."""
        self._loaded: dict[int, BatchDigests] = {}
        self._locks: dict[int, threading.Lock] = {}  # per shard, while its file is read
        self._lock = threading.Lock()  # guards _locks

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, index: int) -> BatchDigests | None: ...
    @overload
    def __getitem__(self, index: slice) -> list[BatchDigests | None]: ...
    def __getitem__(self, index: int | slice) -> BatchDigests | list[BatchDigests | None] | None:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        entry = self.entries[index]
        if not isinstance(entry, FileRef):
            return entry
        loaded = self._loaded.get(index)
        if loaded is not None:
            return loaded
        with self._lock:
            lock = self._locks.setdefault(index, threading.Lock())
        with lock:
            loaded = self._loaded.get(index)
            if loaded is None:
                loaded = self._loaded[index] = self._load(index, entry)
        return loaded

    def file_ref(self, index: int) -> FileRef | None:
        """The file that holds shard ``index``'s digests (None: recorded inline, or not at all)."""
        entry = self.entries[index]
        return entry if isinstance(entry, FileRef) else None

    def _load(self, index: int, ref: FileRef) -> BatchDigests:
        meta_path = self.directory / "_metadata.json"
        path = self.directory / ref.file
        digests = BatchDigests.from_json(read_json_file(self.directory, ref, meta_path, self.remote), path, index)
        if sum(digests.rows) != self.shard_rows[index]:
            msg = f"counts {sum(digests.rows)} rows, but shard {index} holds {self.shard_rows[index]}"
            raise CacheCorruptionError(path, msg)
        return digests

    def __getstate__(self) -> dict[str, Any]:
        # a local version's files are read now: the unpickling process may be on a machine without this
        # folder. A bucket's are fetched there when first needed, as here (those read here go along)
        entries = list(self) if self.remote is None else [self._loaded.get(i, e) for i, e in enumerate(self.entries)]
        state = {"directory": self.directory, "entries": entries, "shard_rows": self.shard_rows}
        return {**state, "remote": self.remote} if self.remote is not None else state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["directory"], state["entries"], state["shard_rows"], state.get("remote"))  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BatchDigestList):
            return self.entries == other.entries and self.directory == other.directory
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
