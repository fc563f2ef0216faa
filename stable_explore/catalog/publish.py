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
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.names import LATEST, check_name
from stable_explore.catalog.transfer import COPY_THREADS, shard_keys_by_digest
from stable_explore.errors import CacheCorruptionError, CacheNotFoundError, CacheWriteError, RemoteStoreError
from stable_explore.storage.backends.fsutil import PreparedFile, fsync_dir_soon, fsync_together, write_error
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.metadata import VersionMetadata, version_id_of
from stable_explore.storage.format.version_files import VersionFile, version_files
from stable_explore.storage.kept import forget
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.writer import ShardFields, write_metadata

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog, VersionRef
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = [
    "UNMOVED_MARK",
    "Published",
    "publish_version",
    "remove_version_dir",
    "unmoved_note",
    "unpublish_version_dir",
]


@dataclass(frozen=True)
class Published:
    """A published version, and whether identical content was already there (then nothing new was written)."""

    ref: VersionRef
    existed: bool
    meta: ShardedCacheMeta | None = None
    """The version's ``_metadata.json`` read back and checked, when the publish was asked to (``read_back``)."""


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
    unsynced: Sequence[Path] = (),
    read_back: bool = False,
) -> Published:
    """Publish ``staging`` (shards written, no metadata yet) as a version of ``name``; move ``latest`` and ``tag``.

    ``set_latest=False`` leaves ``latest`` where it is (``ds.map`` does, unless asked).

    ``shard_fields`` are the shard metadata the writer returned; ``record`` is the version's own
    record (its name and time are filled in here). The staging dir must be private to the caller;
    when identical content already exists it is left for the caller to remove. ``reuse`` names
    other versions, ``(dataset, version id)``, whose files a bucket home copies in place of the ones
    not staged (a save under another name reuses its parent's shards; locally they are linked).
    ``unsynced`` are files in ``staging`` written without their fsync: on a local home they are
    flushed together with ``_metadata.json`` and the folder, before the rename publishes them.
    ``read_back`` reads the published version's metadata (``Published.meta``); on a local home while
    the rename that put the version in place is being flushed.
    """
    check_name(name)
    if tag is not None:
        check_name(tag, "tag")
    record = replace(record, name=name, created_at=record.created_at or _now())
    fields: dict[str, object] = {**shard_fields, **record.to_json()}
    version_id = version_id_of(fields)
    fields["version_id"] = version_id
    remote = catalog.store.local_path(name) is None
    # in a bucket, the publish lease covers the whole copy: gc sweeps files without metadata only when no live
    # lease holds them (an interrupted publish), never those of a publish still running
    placed: list[str] = []  # what this publish put in a bucket, until its metadata makes them a version
    latest: PreparedFile | None = None  # latest's new file, flushed with the version's (a local home)
    meta: ShardedCacheMeta | None = None
    with catalog.publishing(name, version_id):
        try:
            if set_latest and not remote:
                latest = catalog.prepare_ref(name, LATEST, version_id)
            if remote:  # the long part (uploads of staged files) outside the refs lock: no metadata, no version
                _upload_files(catalog, name, staging, fields, version_id, reuse=reuse, placed=placed)
            # gc decides under the same lock: it never sees the version without its ref. Refs move last (a tag
            # and the source record first, latest at the very end): an error before that leaves latest where it
            # was, and takes the source record back, so that a retry does not find the version as "reused" (a
            # hit moves no ref) but builds again, finds the identical content in place, and moves the refs then
            with catalog.refs_lock(name):
                if remote:
                    ref, existed = _put_metadata(catalog, name, staging, fields, version_id, reuse, placed)
                else:
                    ref, existed, meta = _move_into_place(
                        catalog, name, staging, fields, version_id, unsynced, latest, read_back=read_back
                    )
                _move_refs(
                    catalog,
                    name,
                    version_id,
                    record.source_fingerprint,
                    tag,
                    existed=existed,
                    set_latest=set_latest,
                    latest=latest,
                )
        except BaseException as exc:
            _take_back(catalog, placed, exc)
            raise
        finally:
            if latest is not None:
                latest.discard()  # its temp file, unless it was put in place
    if read_back and meta is None:
        meta = read_sharded_cache_meta(ref.cache_dir)
    return Published(ref, existed, meta)


def _move_refs(
    catalog: Catalog,
    name: str,
    version_id: str,
    source: str | None,
    tag: str | None,
    *,
    existed: bool,
    set_latest: bool = True,
    latest: PreparedFile | None = None,
) -> None:
    """Point ``tag``, the source record and ``latest`` at a version in place; all of them, or none but the tag.

    ``latest``: latest's new file, prepared (and flushed) ahead. A failure says (in a note on the error)
    that the version is in place with no ref at it yet, and how a retry finishes the job.
    """
    step = f"moving the tag {tag!r}" if tag else "moving 'latest'"
    recorded: tuple[str, str | None] | None = None
    try:
        if tag:
            catalog.write_ref(name, tag, version_id)
        if source:
            step = "writing its source record"
            recorded = (source, catalog.source_text(name, source))
            catalog.record_source(name, source, version_id)
        if set_latest or catalog.read_ref(name, LATEST) is None:  # a dataset always has a latest
            step = "moving 'latest'"
            catalog.write_ref(name, LATEST, version_id, prepared=latest)
    except BaseException as exc:
        if recorded is not None:
            with contextlib.suppress(Exception):  # the disk that failed may fail this too: a retry then rebuilds
                catalog.restore_source(name, *recorded)
        _add_note(exc, unmoved_note(name, version_id, step, existed=existed))
        raise


UNMOVED_MARK = "but latest was not moved to it"


def unmoved_note(name: str, version_id: str, step: str, *, existed: bool) -> str:
    """What a publish whose refs failed to move leaves: the version in place, latest unmoved, and what to do."""
    what = "was already in place" if existed else "was written"
    return (
        f"{name}@{version_id} {what} {UNMOVED_MARK} ({step} failed; latest is where it was): run the "
        f"same call again once the cause is fixed: it finds this version in place and moves the refs to it "
        f"(or point latest at it: se.tag('{name}@{version_id}', 'latest')); else se.gc removes it"
    )


def _add_note(error: BaseException, note: str) -> None:
    add = getattr(error, "add_note", None)  # Python 3.11+
    if add is not None and note not in (getattr(error, "__notes__", None) or []):
        add(note)


def _take_back(catalog: Catalog, placed: list[str], exc: BaseException) -> None:
    """Delete the files a failed publish put in a bucket (no half-published prefix is left).

    Not when the server itself failed or did not answer: a delete would wait as long again. Those
    files are then an interrupted publish, which gc sweeps once the publish lease is gone.
    """
    if _server_failed(exc):
        return
    for key in placed:
        try:
            catalog.store.delete(key)
        except RemoteStoreError:
            return  # the server stopped answering: the rest is gc's


def _move_into_place(
    catalog: Catalog,
    name: str,
    staging: Path,
    fields: dict[str, object],
    version_id: str,
    unsynced: Sequence[Path] = (),
    latest: PreparedFile | None = None,
    *,
    read_back: bool = False,
) -> tuple[VersionRef, bool, ShardedCacheMeta | None]:
    target = catalog.version_dir(name, version_id)
    if (target / METADATA_FILE).is_file():
        try:
            found = read_sharded_cache_meta(target)
            return catalog.ref(name, version_id), True, found if read_back else None
        except CacheCorruptionError:
            remove_version_dir(target)  # a damaged copy of this content: replace it with the good one
    elif target.exists():
        remove_version_dir(target)  # a leftover without metadata (an interrupted delete): not a version
    write_metadata(staging, fields, durable=False)
    # the new files and the directory entries must be durable before the rename publishes them: flushed side by
    # side, so they cost about one flush, not one after another (latest's new file too: renamed once this is in place)
    fsync_together([staging / METADATA_FILE, *unsynced, staging, *([latest.tmp] if latest is not None else [])])
    if latest is not None:
        latest.flushed()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise write_error(exc, target) from exc
        return catalog.ref(name, version_id), True, None  # another process published the same content
    # the rename itself must be durable before a ref names the version; the metadata is read back meanwhile
    flushing = fsync_dir_soon(target.parent)
    meta: ShardedCacheMeta | None = None
    failed: BaseException | None = None
    try:
        meta = read_sharded_cache_meta(target) if read_back else None
    except BaseException as exc:  # noqa: BLE001 - raised once the flush ended (its failure first)
        failed = exc
    try:
        flushing.result()
    except OSError as exc:
        remove_version_dir(target)  # not durable: take it back, so nothing half-published is left
        raise write_error(exc, target.parent) from exc
    if failed is not None:
        raise failed
    return catalog.ref(name, version_id), False, meta


def _upload_files(
    catalog: Catalog,
    name: str,
    staging: Path,
    fields: dict[str, object],
    version_id: str,
    *,
    missing_only: bool = False,
    reuse: tuple[tuple[str, str], ...] = (),
    placed: list[str],
) -> None:
    """Object storage has no rename: upload the shards under the version's prefix (the metadata comes last).

    A shard whose digest the home already holds, in this dataset or in a version ``reuse`` names,
    is copied inside the store; a file an interrupted publish left with the right size is kept.
    Files this publish did not stage (a parent's shards an edit reuses) are copied only under the
    refs lease (``missing_only``: from :func:`_put_metadata`), where gc cannot take their source
    meanwhile. Each file put is added to ``placed`` (for :func:`_take_back`); after a failed file,
    no other is started.
    """
    store = catalog.store
    prefix = f"{name}/versions/{version_id}"
    if not missing_only and store.exists(f"{prefix}/{METADATA_FILE}"):
        return
    known = shard_keys_by_digest(catalog, name, also=reuse)
    files = version_files(fields)
    failed = threading.Event()  # once a file failed, no thread starts another request

    def place(file: VersionFile) -> None:
        try:
            place_one(file)
        except BaseException:
            failed.set()
            raise

    def place_one(file: VersionFile) -> None:
        if failed.is_set():
            return
        key = f"{prefix}/{file.name}"
        if store.size(key) == file.size:
            return
        staged = staging / file.name
        if file.digest in known and known[file.digest] != key and (missing_only or staged.is_file()):
            try:
                store.copy(known[file.digest], key)
            except RemoteStoreError as exc:
                if missing_only or not isinstance(exc.__cause__, FileNotFoundError):
                    raise
                store.put_file(key, staged)  # gc took that copy of the shard since it was listed: upload ours
        elif staged.is_file():
            store.put_file(key, staged)
        elif not missing_only:
            return  # a reused shard: copied under the refs lease, where gc cannot take its source meanwhile
        else:
            raise _not_held(catalog, key, reuse)
        placed.append(key)

    # a few files at a time (obstore releases the GIL); the first failure is raised once the running
    # ones end, before any metadata (the caller takes back what was put)
    with ThreadPoolExecutor(max_workers=min(COPY_THREADS, len(files) or 1), thread_name_prefix="se-publish") as pool:
        futures = [pool.submit(place, file) for file in files]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            raise


def _server_failed(exc: BaseException) -> bool:
    """Whether the bucket's server failed or did not answer (then it is not asked to delete anything more)."""
    return isinstance(exc, RemoteStoreError) and (exc.status is None or exc.status >= 500)


def _not_held(catalog: Catalog, key: str, reuse: tuple[tuple[str, str], ...]) -> Exception:
    """A file to publish that was not staged and no version in the home holds: its source version was collected."""
    store = catalog.store
    where = f"{store.url}/{key}"
    gone = [f"{dataset}@{version}" for dataset, version in reuse if not _published(catalog, dataset, version)]
    if gone:
        msg = (
            f"{where}: version {', '.join(gone)}'s shard was removed by gc (se.gc) while this save read it, so "
            "nothing was saved; load the dataset again and redo the edits (tag a version to keep it from gc)"
        )
        return CacheNotFoundError(msg)
    msg = f"{where}: neither staged nor held by a version this save reuses ({reuse or 'none'}); nothing was saved"
    return CacheWriteError(msg)


def _published(catalog: Catalog, name: str, version_id: str) -> bool:
    return catalog.store.exists(f"{name}/versions/{version_id}/{METADATA_FILE}")


def _put_metadata(
    catalog: Catalog,
    name: str,
    staging: Path,
    fields: dict[str, object],
    version_id: str,
    reuse: tuple[tuple[str, str], ...] = (),
    placed: list[str] | None = None,
) -> tuple[VersionRef, bool]:
    """Under the refs lock: check every file is in place, then put ``_metadata.json`` if absent.

    gc may have taken a leftover the upload kept meanwhile; of two processes publishing the same
    content, one writes the metadata and both get the version.
    """
    store = catalog.store
    prefix = f"{name}/versions/{version_id}"
    placed = [] if placed is None else placed
    if store.exists(f"{prefix}/{METADATA_FILE}"):
        placed.clear()  # another process published the same content: these files are its version's now
        return catalog.ref(name, version_id), True
    _upload_files(catalog, name, staging, fields, version_id, missing_only=True, reuse=reuse, placed=placed)
    write_metadata(staging, fields)
    catalog.check_refs_lock(name)
    created = store.put_if_absent(f"{prefix}/{METADATA_FILE}", (staging / METADATA_FILE).read_text(encoding="utf-8"))
    placed.clear()  # a version now (or another process's identical one): nothing is taken back after this
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
