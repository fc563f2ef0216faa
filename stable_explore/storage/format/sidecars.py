"""Small files kept beside ``_metadata.json`` (format revision 4), each named in it with its digest and size.

A label-only save of a big version used to rewrite, in its ``_metadata.json``, the record batch
digests of every shard it reused and the digest of every run of rows: 160 KB at 2M rows for a
change of 10 cells. From revision 4 those lists live in files of their own, and a save links
(or, in a bucket, copies inside the store) the files it does not change, as it does the shards:

* ``shard-NNNNN.batches``: one shard's record batch digests (see :mod:`.batch_digests`), beside it;
* ``content-runs.json``: the runs of rows of a version's content digest (see :mod:`.content_runs`).

``_metadata.json`` records each file as ``{"file", "digest", "size"}``; the file is checked
against both when it is first read, so a damaged or swapped file is named, never trusted.
Files are loaded lazily: opening a version reads none of them, and a bucket's version fetches
each from the bucket only when a read first needs it (a page of rows: its shard's batch digests).

This module holds the values only (the names, a shard's list of digests); a file's record and its
digest are :mod:`.file_ref`'s. Reading the files is
:mod:`stable_explore.storage.read.small_files`' (it gives the values here a :class:`SmallFiles`),
writing and linking them :mod:`stable_explore.storage.write.small_files`'.

Examples
--------
>>> batches_file_name("shard-00003.arrow")
'shard-00003.batches'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

from stable_explore.errors import CacheCorruptionError, InvalidOptionError
from stable_explore.storage.format.batch_digests import BatchDigests
from stable_explore.storage.format.file_ref import FileRef

if TYPE_CHECKING:
    from stable_explore.storage.format.cell_patches import CellPatches, ParentPatches
    from stable_explore.storage.format.content_runs import ParentRuns
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = ["BatchDigestList", "SmallFiles", "batches_file_name", "no_reader"]

BATCHES_SUFFIX = ".batches"


def batches_file_name(shard_name: str) -> str:
    """The name of a shard's record batch digests file: ``shard-00003.arrow`` -> ``shard-00003.batches``."""
    return shard_name.removesuffix(".arrow") + BATCHES_SUFFIX


class SmallFiles(Protocol):
    """How the values of the format read a version's small files: they hold one, they read no file themselves.

    :data:`stable_explore.storage.read.small_files.SMALL_FILES` is the one the package gives them
    (:func:`~stable_explore.storage.read.open_meta.read_sharded_cache_meta` and the writers do).
    """

    def read_json(self, directory: Path, ref: FileRef, meta_path: Path, remote: RemoteLocation | None = None) -> Any:
        """A small JSON file's value, checked against ``ref`` (for a bucket's version, fetched when missing)."""
        ...

    def content_runs(
        self, directory: Path, raw: object, meta_path: Path, remote: RemoteLocation | None = None
    ) -> tuple[list[tuple[int, str]], ParentRuns | None]:
        """The runs a ``content_runs`` field gives, and its file for a save to link."""
        ...

    def cell_patches(
        self,
        directory: Path,
        raw: object,
        meta_path: Path,
        remote: RemoteLocation | None = None,
        sealed_by: str | None = None,
    ) -> tuple[CellPatches, ParentPatches]:
        """The patches a ``cell_patches`` field gives, and its file for a save to link."""
        ...


def no_reader(path: Path) -> InvalidOptionError:
    """The error of a value asked for a small file it has no :class:`SmallFiles` to read with."""
    msg = (
        f"{path}: this metadata was made from a dict with no reader of its small files, so it cannot read "
        f"{path.name}; open the folder with read_sharded_cache_meta, or pass "
        "files=stable_explore.storage.read.small_files.SMALL_FILES to ShardedCacheMeta.from_dict"
    )
    return InvalidOptionError(msg)


BatchEntry = BatchDigests | FileRef | None


class BatchDigestList(Sequence["BatchDigests | None"]):
    """Per shard, its record batch digests: recorded inline (revisions 2-3) or in a file beside the shard (4).

    A file is read, checked and parsed the first time its shard's digests are asked for, so
    opening a version of many shards reads none of them (nor, for a bucket's version, fetches
    them). Threads asking for one shard's digests at once share one read; other shards' go on.
    The files are read by ``files`` (see :class:`SmallFiles`); without it, only inline digests are known.
    """

    def __init__(
        self,
        directory: Path,
        entries: Sequence[BatchEntry],
        shard_rows: Sequence[int],
        remote: RemoteLocation | None = None,
        files: SmallFiles | None = None,
    ) -> None:
        self.directory = directory
        self.entries = list(entries)
        self.shard_rows = list(shard_rows)
        self.remote = remote
        """For a bucket's version: where its files are (``directory`` is this machine's mirror)."""
        self.files = files
        """What reads the files (None: a list made from a dict alone, whose files cannot be read)."""
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

    def take_loaded(self, other: BatchDigestList) -> None:
        """Take the digests ``other`` has read of files this list names too (the same bytes: digest and size).

        A save links its parent's shards with their digests files; the version it returns would
        otherwise read and parse each of them again on its first read.

        Examples
        --------
        >>> from stable_explore.storage.format.batch_digests import BatchDigests
        >>> ref = FileRef("shard-00000.batches", "xxh3_128:" + "0" * 32, 10)
        >>> parent, child = BatchDigestList(Path("a"), [ref], [4]), BatchDigestList(Path("b"), [ref], [4])
        >>> parent._loaded[0] = BatchDigests(("x",), (4,), ("d",))
        >>> child.take_loaded(parent)
        >>> child[0] is parent[0]
        True
        """
        known = other.read_files()
        for index, entry in enumerate(self.entries):
            found = known.get((entry.digest, entry.size)) if isinstance(entry, FileRef) else None
            if found is not None and found[1] == self.shard_rows[index] and index not in self._loaded:
                self._loaded[index] = found[0]

    def read_files(self) -> dict[tuple[str, int], tuple[BatchDigests, int]]:
        """The digests read so far from files, by the file's (digest, size): with the rows of their shard."""
        known = {}
        for index, loaded in list(self._loaded.items()):
            entry = self.entries[index]
            if isinstance(entry, FileRef):
                known[(entry.digest, entry.size)] = (loaded, self.shard_rows[index])
        return known

    def file_ref(self, index: int) -> FileRef | None:
        """The file that holds shard ``index``'s digests (None: recorded inline, or not at all)."""
        entry = self.entries[index]
        return entry if isinstance(entry, FileRef) else None

    def _load(self, index: int, ref: FileRef) -> BatchDigests:
        meta_path = self.directory / "_metadata.json"
        path = self.directory / ref.file
        if self.files is None:
            raise no_reader(path)
        digests = BatchDigests.from_json(self.files.read_json(self.directory, ref, meta_path, self.remote), path, index)
        if sum(digests.rows) != self.shard_rows[index]:
            msg = f"counts {sum(digests.rows)} rows, but shard {index} holds {self.shard_rows[index]}"
            raise CacheCorruptionError(path, msg)
        return digests

    def __getstate__(self) -> dict[str, Any]:
        # a local version's files are read now: the unpickling process may be on a machine without this
        # folder. A bucket's are fetched there when first needed, as here (those read here go along)
        entries = list(self) if self.remote is None else [self._loaded.get(i, e) for i, e in enumerate(self.entries)]
        state = {"directory": self.directory, "entries": entries, "shard_rows": self.shard_rows, "files": self.files}
        return {**state, "remote": self.remote} if self.remote is not None else state

    def __setstate__(self, state: dict[str, object]) -> None:
        directory, entries, rows = state["directory"], state["entries"], state["shard_rows"]
        self.__init__(directory, entries, rows, state.get("remote"), state.get("files"))  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BatchDigestList):
            return self.entries == other.entries and self.directory == other.directory
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
