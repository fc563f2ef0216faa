"""Reading a version's small files (format revision 4 on): checked against their record, fetched from a bucket.

The files and their records are values of :mod:`stable_explore.storage.format.sidecars`; this
module reads them. A local version's file is read from its folder; a bucket's version's from this
machine's mirror of its metadata, fetched from the bucket the first time a read needs it. Each
is checked against the size and digest ``_metadata.json`` records, so a damaged or swapped file is
named, never trusted. :data:`SMALL_FILES` is what the format's values read with (the lazy fields
of :class:`~stable_explore.storage.format.cache_meta.ShardedCacheMeta` and its batch digests).

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.storage.write.small_files import content_runs_field, write_small_file
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> ref = write_small_file(folder, "notes.json", b'{"a":1}')
>>> ref.size, read_small_file(folder, ref, folder / "_metadata.json")
(7, b'{"a":1}')
>>> field = content_runs_field(folder, [(4, "a" * 32), (5, "b" * 32)])
>>> load_content_runs(folder, field, folder / "_metadata.json")[0]
[(4, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'), (5, 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')]
>>> (folder / "notes.json").write_bytes(b'{"a":2}')
7
>>> read_small_file(folder, ref, folder / "_metadata.json")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
stable_explore.errors.CacheCorruptionError: ...notes.json: is 7 bytes that do not match the 7 bytes and digest...
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, RemoteStoreError
from stable_explore.storage.backends.fsutil import replacing, version_gone
from stable_explore.storage.backends.remote_file import count_fetched, gone_or, location_store
from stable_explore.storage.format.cell_patches import PATCHES, CellPatches, ParentPatches, patches_from
from stable_explore.storage.format.content_runs import RUNS, ParentRuns, checked_runs
from stable_explore.storage.format.file_ref import FileRef, matches, mismatch
from stable_explore.storage.format.row_segments import ParentSegments, SegmentsRecord, checked_segments, segments_from
from stable_explore.storage.kept import Kept, file_identity, kept

if TYPE_CHECKING:
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = [
    "SMALL_FILES",
    "SmallFileReader",
    "load_cell_patches",
    "load_content_runs",
    "load_row_segments",
    "read_json_file",
    "read_small_file",
]


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
    if not matches(data, ref):
        if remote is not None:  # the mirror is this machine's copy: the bucket's file is the one to trust
            return _fetch_small_file(path, ref, meta_path, remote)
        raise CacheCorruptionError(path, mismatch(data, ref, meta_path))
    return data


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
            if matches(data, ref):
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
        if not matches(data, ref):
            raise CacheCorruptionError(remote.describe(ref.file), mismatch(data, ref, meta_path))
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


def load_content_runs(
    directory: Path, raw: object, meta_path: Path, remote: RemoteLocation | None = None
) -> tuple[list[tuple[int, str]], ParentRuns | None]:
    """The runs a ``content_runs`` field gives: inline (revision 3), or a file and splices (revision 4).

    The second value describes the file for a save to reuse (None for inline runs).
    """
    if isinstance(raw, list):
        return checked_runs(raw, "'content_runs'", meta_path), None
    record = RUNS.record_from_json(raw, meta_path)
    return RUNS.items_from(record, read_json_file(directory, record.base, meta_path, remote), directory, meta_path)


_LOADED: Kept[tuple[Any, ...], tuple[CellPatches, ParentPatches]] = kept("parsed cell patches", max_entries=32)


def load_cell_patches(
    directory: Path, raw: object, meta_path: Path, remote: RemoteLocation | None = None, sealed_by: str | None = None
) -> tuple[CellPatches, ParentPatches]:
    """The patches a ``cell_patches`` field gives (its file, spliced), and the file for a save to link.

    ``sealed_by`` is the metadata's own digest, which covers the field: the patches of a version
    are then kept for the next load of it in this process while the file is the same one (each
    load of a version after many saves otherwise parsed hundreds of entries again).
    """
    key: tuple[object, ...] | None = None
    if sealed_by is not None and remote is None and isinstance(raw, Mapping) and isinstance(raw.get("file"), str):
        identity = file_identity(directory / raw["file"])
        if identity is not None:
            key = (sealed_by, str(directory), *identity)
            found = _LOADED.get(key)
            if found is not None:
                return found
    record = PATCHES.record_from_json(raw, meta_path)
    value = read_json_file(directory, record.base, meta_path, remote)
    entries, parent = PATCHES.items_from(record, value, directory, meta_path)
    result = (patches_from(entries, meta_path), parent)
    if key is not None:
        _LOADED.put(key, result)
    return result


def load_row_segments(
    directory: Path, raw: object, meta_path: Path, remote: RemoteLocation | None = None
) -> tuple[list[tuple[int, int, int]], ParentSegments | None]:
    """The segments a ``row_segments`` field gives: inline (a list), or a file, shard map and splices.

    Segments are returned in this version's shard numbering, not yet checked against the shards.
    """
    if not isinstance(raw, Mapping):
        return checked_segments(raw, "'row_segments'", meta_path), None
    record = SegmentsRecord.from_json(raw, meta_path)
    return segments_from(record, read_json_file(directory, record.base, meta_path, remote), directory, meta_path)


class SmallFileReader:
    """Reads a version's small files for the values of the format (their ``SmallFiles``).

    See :class:`~stable_explore.storage.format.sidecars.SmallFiles`. It holds nothing: one is shared
    (:data:`SMALL_FILES`), and it pickles as its name.
    """

    def read_json(self, directory: Path, ref: FileRef, meta_path: Path, remote: RemoteLocation | None = None) -> Any:
        """See :func:`read_json_file`."""
        return read_json_file(directory, ref, meta_path, remote)

    def content_runs(
        self, directory: Path, raw: object, meta_path: Path, remote: RemoteLocation | None = None
    ) -> tuple[list[tuple[int, str]], ParentRuns | None]:
        """See :func:`load_content_runs`."""
        return load_content_runs(directory, raw, meta_path, remote)

    def cell_patches(
        self,
        directory: Path,
        raw: object,
        meta_path: Path,
        remote: RemoteLocation | None = None,
        sealed_by: str | None = None,
    ) -> tuple[CellPatches, ParentPatches]:
        """See :func:`load_cell_patches`."""
        return load_cell_patches(directory, raw, meta_path, remote, sealed_by)

    def __reduce__(self) -> str:
        return "SMALL_FILES"

    def __repr__(self) -> str:
        return "SMALL_FILES"


SMALL_FILES = SmallFileReader()
"""The reader of small files every version this package opens or writes holds."""
