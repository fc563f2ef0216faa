"""Publishing: a complete staging directory becomes a named, immutable version, and refs move to it.

Every way a version is made (a build, a saved edit, later a pull or a parallel build) ends in
:func:`publish_version`: the version's own record is added to the shard metadata, the id is
computed from the content, ``_metadata.json`` is written and fsynced, the directory is renamed
into ``versions/`` (one atomic step), and ``latest`` (and a tag, if asked) move to it.

Examples
--------
>>> import tempfile
>>> from stable_explore import Features, Value
>>> from stable_explore.catalog import Catalog
>>> from stable_explore.storage.backends.fsutil import temp_dir_beside
>>> from stable_explore.storage.format.metadata import VersionMetadata
>>> from stable_explore.storage.write.writer import write_shards
>>> catalog = Catalog(tempfile.mkdtemp())
>>> with temp_dir_beside(catalog.versions_dir("nums") / "staging") as staging:
...     shards = write_shards(({"x": i} for i in range(3)), Features(x=Value("int64")), staging)
...     published = publish_version(catalog, "nums", staging, shards, VersionMetadata(message="first"))
>>> published.existed, catalog.read_ref("nums", "latest") == published.ref.version_id
(False, True)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import shutil
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.catalog.names import LATEST, check_name
from stable_explore.catalog.transfer import COPY_THREADS, shard_keys_by_digest
from stable_explore.errors import CacheCorruptionError, CacheWriteError, RemoteStoreError
from stable_explore.storage.backends.fsutil import fsync_dir, fsync_path, write_error, writing
from stable_explore.storage.format.cache_meta import METADATA_FILE, read_sharded_cache_meta
from stable_explore.storage.format.metadata import VersionMetadata, version_id_of
from stable_explore.storage.format.version_files import VersionFile, version_files
from stable_explore.storage.read.kept import forget
from stable_explore.storage.write.writer import ShardFields, write_metadata

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog, VersionRef

__all__ = ["Published", "publish_version", "remove_version_dir", "unpublish_version_dir"]


@dataclass(frozen=True)
class Published:
    """A published version, and whether identical content was already there (then nothing new was written)."""

    ref: VersionRef
    existed: bool


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


def publish_version(
    catalog: Catalog,
    name: str,
    staging: Path,
    shard_fields: ShardFields,
    record: VersionMetadata,
    *,
    tag: str | None = None,
    reuse: tuple[tuple[str, str], ...] = (),
    set_latest: bool = True,
) -> Published:
    """Publish ``staging`` (shards written, no metadata yet) as a version of ``name``; move ``latest`` and ``tag``.

    ``set_latest=False`` leaves ``latest`` where it is (``ds.map`` does, unless asked).

    ``shard_fields`` are the shard metadata the writer returned; ``record`` is the version's own
    record (its name and time are filled in here). The staging dir must be private to the caller;
    when identical content already exists it is left for the caller to remove. ``reuse`` names
    other versions, ``(dataset, version id)``, whose files a bucket home copies in place of the ones
    not staged (a save under another name reuses its parent's shards; locally they are linked).
    """
    check_name(name)
    if tag is not None:
        check_name(tag, "tag")
    record = replace(record, name=name, created_at=record.created_at or _now())
    fields: dict[str, Any] = {**shard_fields, **record.to_json()}
    version_id = version_id_of(fields)
    fields["version_id"] = version_id
    remote = catalog.store.local_path(name) is None
    if remote:  # the long part (uploads) outside the lock: files without metadata are no version, gc leaves them
        _upload_files(catalog, name, staging, fields, version_id, reuse=reuse)
    # gc decides under the same lock: it never sees the version without its ref. Refs move last (a tag and
    # the source record first, latest at the very end): an error before that leaves latest where it was
    with catalog.refs_lock(name):
        if remote:
            ref, existed = _put_metadata(catalog, name, staging, fields, version_id, reuse)
        else:
            ref, existed = _move_into_place(catalog, name, staging, fields, version_id)
        if record.source_fingerprint:
            catalog.record_source(name, record.source_fingerprint, version_id)
        if tag:
            catalog.write_ref(name, tag, version_id)
        if set_latest or catalog.read_ref(name, LATEST) is None:  # a dataset always has a latest
            catalog.write_ref(name, LATEST, version_id)
    return Published(ref, existed)


def _move_into_place(
    catalog: Catalog, name: str, staging: Path, fields: dict[str, Any], version_id: str
) -> tuple[VersionRef, bool]:
    target = catalog.version_dir(name, version_id)
    if (target / METADATA_FILE).is_file():
        try:
            read_sharded_cache_meta(target)
            return catalog.ref(name, version_id), True
        except CacheCorruptionError:
            remove_version_dir(target)  # a damaged copy of this content: replace it with the good one
    elif target.exists():
        remove_version_dir(target)  # a leftover without metadata (an interrupted delete): not a version
    write_metadata(staging, fields)
    with writing(staging):
        fsync_path(staging)  # the directory entries must be durable before the rename publishes them
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise write_error(exc, target) from exc
        return catalog.ref(name, version_id), True  # another process published the same content
    try:
        fsync_dir(target.parent)  # the rename itself must be durable before a ref names the version
    except OSError as exc:
        remove_version_dir(target)  # not durable: take it back, so nothing half-published is left
        raise write_error(exc, target.parent) from exc
    return catalog.ref(name, version_id), False


def _upload_files(
    catalog: Catalog,
    name: str,
    staging: Path,
    fields: dict[str, Any],
    version_id: str,
    *,
    missing_only: bool = False,
    reuse: tuple[tuple[str, str], ...] = (),
) -> None:
    """Object storage has no rename: upload the shards under the version's prefix (the metadata comes last).

    A shard whose digest the home already holds (a parent's shard an edit reuses: not even staged
    here), in this dataset or in a version ``reuse`` names, is copied inside the store; a file an
    interrupted publish left with the right size is kept. When a file fails, the files this call put
    are deleted again, so no half-published prefix is left.
    """
    store = catalog.store
    prefix = f"{name}/versions/{version_id}"
    if not missing_only and store.exists(f"{prefix}/{METADATA_FILE}"):
        return
    known = shard_keys_by_digest(catalog, name, also=reuse)
    files = version_files(fields)
    placed: list[str] = []

    def place(file: VersionFile) -> None:
        key = f"{prefix}/{file.name}"
        if store.size(key) == file.size:
            return
        if file.digest in known and known[file.digest] != key:
            try:
                store.copy(known[file.digest], key)
            except RemoteStoreError as exc:
                if missing_only or not isinstance(exc.__cause__, FileNotFoundError):
                    raise
                # gc took that copy of the shard since it was listed: placed again under the refs lease,
                # from a fresh listing that gc cannot change meanwhile
                return
        elif (staging / file.name).is_file():
            store.put_file(key, staging / file.name)
        else:
            msg = f"{store.url}/{key}: neither staged nor held by a version this save reuses"
            raise CacheWriteError(msg)
        placed.append(key)

    # a few files at a time (obstore releases the GIL); the first failure is raised once the running
    # ones end, before any metadata: what this call put is deleted again (no version, nothing left)
    with ThreadPoolExecutor(max_workers=min(COPY_THREADS, len(files) or 1), thread_name_prefix="se-publish") as pool:
        futures = [pool.submit(place, file) for file in files]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            for key in placed:
                with contextlib.suppress(Exception):
                    store.delete(key)
            raise


def _put_metadata(
    catalog: Catalog,
    name: str,
    staging: Path,
    fields: dict[str, Any],
    version_id: str,
    reuse: tuple[tuple[str, str], ...] = (),
) -> tuple[VersionRef, bool]:
    """Under the refs lock: check every file is in place, then put ``_metadata.json`` if absent.

    gc may have taken a leftover the upload kept meanwhile; of two processes publishing the same
    content, one writes the metadata and both get the version.
    """
    store = catalog.store
    prefix = f"{name}/versions/{version_id}"
    if store.exists(f"{prefix}/{METADATA_FILE}"):
        return catalog.ref(name, version_id), True
    _upload_files(catalog, name, staging, fields, version_id, missing_only=True, reuse=reuse)
    write_metadata(staging, fields)
    catalog.check_refs_lock(name)
    created = store.put_if_absent(f"{prefix}/{METADATA_FILE}", (staging / METADATA_FILE).read_text(encoding="utf-8"))
    return catalog.ref(name, version_id), not created


def remove_version_dir(directory: Path) -> None:
    """Delete a version directory: first renamed to a temp name (one atomic step), then removed.

    An interrupted delete leaves a temp dir that the next sweep finishes, never a half-deleted version.
    """
    forget(holding_files=True)  # a kept map of a deleted shard would hold its disk space
    shutil.rmtree(unpublish_version_dir(directory), ignore_errors=True)


def unpublish_version_dir(directory: Path) -> Path:
    """Take a version out of ``versions/`` in one atomic rename; returns the temp dir left to delete.

    Its name marks it as a deleted version (``gc``), so a reader that still has the version
    open is told it was garbage-collected rather than that a shard is missing.
    """
    doomed = directory.parent / f".{directory.name}.tmp-{socket.gethostname()}-{os.getpid()}-gc{uuid.uuid4().hex[:6]}"
    directory.rename(doomed)
    return doomed
