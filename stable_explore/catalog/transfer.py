"""Copying versions between homes (a local folder and a bucket, or any two): push and pull, moving only what is missing.

A version's files are copied shards first and ``_metadata.json`` last, so a version exists on
the other side only once it is whole; an interrupted copy is resumed by the next one (files
already there with the right size are kept). A shard whose digest the other side already
holds under another version is copied inside that store instead of over the network.
Refs move by compare-and-swap: ``latest`` moves only to a newer version, and the version's
other tags come along.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.catalog import Catalog, StoreCatalog
>>> from stable_explore.storage.backends.local import LocalStore
>>> home, team = tempfile.mkdtemp(), tempfile.mkdtemp()
>>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="n", home=home,
...               progress=False)
>>> report = copy_version(StoreCatalog(LocalStore(home)), "n", ds.version, StoreCatalog(LocalStore(team)))
>>> report.files_sent, report.existed  # the shard, its batch digests and the content runs
(3, False)
>>> copy_version(StoreCatalog(LocalStore(home)), "n", ds.version, StoreCatalog(LocalStore(team))).existed
True
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore._canonical import parse_json
from stable_explore.catalog.names import LATEST
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.fsutil import is_leftover, sweep_stale_temp_dirs, temp_path_beside
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.hashing import format_digest, hash_file, new_file_hasher
from stable_explore.storage.format.metadata import version_id_of
from stable_explore.storage.format.version_files import version_files

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import StoreCatalog

__all__ = [
    "TRANSFER_DIR",
    "TransferReport",
    "copy_version",
    "shard_keys_by_digest",
    "sweep_transfer_leftovers",
    "version_nbytes",
]

BytesCallback = Callable[[int], None]
"""Called with the bytes of each file once it has been copied."""


@dataclass
class TransferReport:
    """What a push or pull did: files and bytes sent, files already there, shards copied inside the target."""

    name: str
    version_id: str
    target: str
    existed: bool = False
    files_sent: int = 0
    bytes_sent: int = 0
    files_kept: int = 0
    files_reused: int = 0
    tags: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.existed:
            return f"{self.name}@{self.version_id} is already in {self.target}; refs updated"
        parts = [f"sent {self.files_sent} file(s) ({self.bytes_sent:,} bytes)"]
        if self.files_reused:
            parts.append(f"reused {self.files_reused} shard(s) already in {self.target}")
        if self.files_kept:
            parts.append(f"kept {self.files_kept} file(s) from an interrupted copy")
        return f"{self.name}@{self.version_id} -> {self.target}: " + ", ".join(parts)


def _metadata_text(catalog: StoreCatalog, name: str, version_id: str) -> tuple[str, dict[str, Any]]:
    """A version's ``_metadata.json`` as stored (copied byte for byte) and parsed."""
    key = f"{name}/versions/{version_id}/{METADATA_FILE}"
    where = f"{catalog.store.url}/{key}"
    text = catalog.store.read_text(key)
    if text is None:
        raise CacheCorruptionError(where, "the version's metadata is missing")
    try:
        raw = parse_json(text)
    except ValueError as exc:
        raise CacheCorruptionError(where, f"not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise CacheCorruptionError(where, "expected a JSON object")
    return text, raw


def _metadata_of(catalog: StoreCatalog, name: str, version_id: str) -> dict[str, Any]:
    return _metadata_text(catalog, name, version_id)[1]


def version_nbytes(catalog: StoreCatalog, name: str, version_id: str) -> int:
    """Bytes of a version's shard files, from its metadata (no request per file)."""
    return sum(int(size) for size in _metadata_of(catalog, name, version_id).get("shard_sizes") or [])


def shard_keys_by_digest(catalog: StoreCatalog, name: str, *, also: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """Shard digest -> key of a file holding it, over every version of ``name`` in ``catalog``.

    ``also`` adds the files of other versions, as ``(dataset, version id)`` pairs: the version a save
    under another name started from, whose shards the new one reuses.
    """
    found: dict[str, str] = {}
    versions = [(name, version_id) for version_id in catalog.version_ids(name)]
    for dataset, version_id in [*versions, *also]:
        try:
            raw = _metadata_of(catalog, dataset, version_id)
        except CacheCorruptionError:
            continue  # a damaged or deleted version is no source of shards
        for file in version_files(raw):
            if file.digest is not None:
                found.setdefault(file.digest, f"{dataset}/versions/{version_id}/{file.name}")
    return found


def _created(catalog: StoreCatalog, name: str, version_id: str | None) -> str:
    if version_id is None:
        return ""
    try:
        return str(_metadata_of(catalog, name, version_id).get("created_at") or "")
    except CacheCorruptionError:
        return ""


COPY_THREADS = 4
"""Files copied at once: object-store transfers wait on the network (obstore releases the GIL), so a few
threads keep the link busy where one file at a time left it idle between requests."""


def copy_version(
    source: StoreCatalog,
    name: str,
    version_id: str,
    target: StoreCatalog,
    *,
    on_file: BytesCallback | None = None,
    verify: bool = False,
) -> TransferReport:
    """Copy one version of ``name`` from ``source`` to ``target`` (files, then metadata, then refs).

    Missing files are copied :data:`COPY_THREADS` at a time. With ``verify``, every shard is
    checked against its recorded digest before the metadata makes the version visible: a
    downloaded one is hashed as it is written (one pass), one kept from an interrupted copy is
    re-hashed where the target is local; a file that does not match is removed and named.
    """
    report = TransferReport(name, version_id, target.store.url)
    prefix = f"{name}/versions/{version_id}"
    sweep_transfer_leftovers(target, prefix)  # a retry after a killed copy starts clean
    text, raw = _metadata_text(source, name, version_id)
    with target.publishing(name, version_id):  # a bucket's gc leaves the files of a copy still running alone
        _copy_files(source, name, version_id, target, raw, report, on_file=on_file, verify=verify)
    with target.refs_lock(name):  # gc of a local home cannot take the version before its refs point at it
        if not report.existed:
            target.store.put_if_absent(f"{prefix}/{METADATA_FILE}", text)
        report.tags = tuple(_move_refs(source, target, name, version_id))
    return report


def _copy_files(
    source: StoreCatalog,
    name: str,
    version_id: str,
    target: StoreCatalog,
    raw: dict[str, object],
    report: TransferReport,
    *,
    on_file: BytesCallback | None,
    verify: bool,
) -> None:
    """The version's files that ``target`` lacks, copied (the metadata aside); sets ``report.existed``."""
    prefix = f"{name}/versions/{version_id}"
    if target.store.exists(f"{prefix}/{METADATA_FILE}"):
        report.existed = True
    else:
        known = shard_keys_by_digest(target, name)
        missing: list[tuple[str, str | None, int]] = []
        for file in version_files(raw):
            key = f"{prefix}/{file.name}"
            expected = int(file.size if file.size is not None else source.store.size(key) or 0)
            if target.store.size(key) == expected:
                report.files_kept += 1  # left by an interrupted copy: same name, same size
                if verify and file.digest is not None:
                    _check_kept(target, key, file.digest)
            elif file.digest is not None and file.digest in known:
                target.store.copy(known[file.digest], key)
                report.files_reused += 1
            else:
                missing.append((key, file.digest, expected))
                continue
            if on_file is not None:
                on_file(expected)
        _send_all(source, target, missing, report, on_file, verify=verify)
        _check_arrived(source, target, name, version_id, raw)


def _send_all(
    source: StoreCatalog,
    target: StoreCatalog,
    missing: list[tuple[str, str | None, int]],
    report: TransferReport,
    on_file: BytesCallback | None,
    *,
    verify: bool,
) -> None:
    """Copy the missing files a few at a time; counts and progress move in this thread as each one lands.

    The first failure cancels the files not yet started and is raised once the running ones
    end; files already copied stay, and the next copy keeps them (resumable).
    """
    if not missing:
        return
    with _scratch_dir() as scratch:
        pool = ThreadPoolExecutor(max_workers=min(COPY_THREADS, len(missing)), thread_name_prefix="se-transfer")
        try:
            futures = {
                pool.submit(_send, source, target, key, Path(scratch), digest if verify else None): size
                for key, digest, size in missing
            }
            for done in as_completed(futures):
                done.result()
                report.files_sent += 1
                report.bytes_sent += futures[done]
                if on_file is not None:
                    on_file(futures[done])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


TRANSFER_DIR = "stable-explore-transfer"
"""The temp folders a copy between two buckets passes files through: ``.stable-explore-transfer.tmp-<host>-<pid>-*``
in the system's temp directory, named by their owner so a later copy or gc can tell a dead one."""


@contextlib.contextmanager
def _scratch_dir() -> Iterator[Path]:
    folder = temp_path_beside(Path(tempfile.gettempdir()) / TRANSFER_DIR)
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_transfer_leftovers(target: StoreCatalog, prefix: str | None = None) -> list[Path]:
    """Remove what killed copies left: their temp folders, and partial files in ``prefix`` of a local ``target``.

    Only leftovers of processes that are gone are removed (their names say whose they are); whole
    files an interrupted copy placed are kept, so the next copy resumes. Returns what was removed.
    """
    removed = [entry for entry in _stale_scratch_dirs() if _remove(entry)]
    folder = target.store.local_path(prefix) if prefix else None
    if folder is not None and folder.is_dir():
        stale = [entry for entry in folder.iterdir() if entry.name.startswith(".") and is_leftover(entry)]
        sweep_stale_temp_dirs(folder)
        removed.extend(entry for entry in stale if not entry.exists())
    return removed


def _stale_scratch_dirs() -> list[Path]:
    try:
        entries = list(Path(tempfile.gettempdir()).glob(f".{TRANSFER_DIR}.tmp-*"))
    except OSError:
        return []
    return [entry for entry in entries if is_leftover(entry)]


def _remove(entry: Path) -> bool:
    shutil.rmtree(entry, ignore_errors=True)
    return not entry.exists()


def _send(source: StoreCatalog, target: StoreCatalog, key: str, scratch: Path, digest: str | None) -> None:
    """One file from ``source`` to ``target``, checked against ``digest`` when given.

    A download into a local target is written straight to its place (no second copy); between two
    remote stores it goes through a temp file; from a local source it is uploaded from disk.
    """
    hasher = None if digest is None else new_file_hasher()
    local = source.store.local_path(key)
    landing = target.store.local_path(key)
    if local is None and landing is not None:
        landing.parent.mkdir(parents=True, exist_ok=True)
        source.store.get_file(key, landing, hasher=hasher)
        _check_digest(target, key, digest, hasher)
        return
    temp = scratch / key.replace("/", "__")
    if local is None:
        source.store.get_file(key, temp, hasher=hasher)
        local = temp
    elif hasher is not None:
        hasher = None  # a local source is hashed by reading it: same check, no hasher to feed
        _check_digest(target, key, digest, found=hash_file(local))
    try:
        _check_digest(target, key, digest, hasher)
        target.store.put_file(key, local)
    finally:
        temp.unlink(missing_ok=True)


def _check_kept(target: StoreCatalog, key: str, digest: str) -> None:
    """A file an interrupted copy left must hold the recorded bytes (re-hashed where the target is local)."""
    landing = target.store.local_path(key)
    if landing is not None:
        _check_digest(target, key, digest, found=hash_file(landing))


def _check_digest(
    target: StoreCatalog, key: str, digest: str | None, hasher: object = None, *, found: str | None = None
) -> None:
    """Raise (and remove the file from the target, so no later copy keeps it) unless it matches ``digest``."""
    if digest is None or (hasher is None and found is None):
        return
    found = found if found is not None else format_digest(hasher)
    if found == digest:
        return
    if target.store.local_path(key) is not None:
        target.store.delete(key)
    where = f"{target.store.url}/{key}"
    msg = f"content digest {found} does not match the recorded {digest}; the file was not kept"
    raise CacheCorruptionError(where, msg)


def _check_arrived(
    source: StoreCatalog, target: StoreCatalog, name: str, version_id: str, raw: dict[str, object]
) -> None:
    """Before the metadata makes the version visible: its id matches its content, and every shard arrived whole."""
    where = f"{source.store.url}/{name}/versions/{version_id}/{METADATA_FILE}"
    if raw.get("version_id") != version_id or version_id_of(raw) != version_id:
        msg = f"the metadata gives version id {version_id_of(raw)}, not {version_id}; not copied"
        raise CacheCorruptionError(where, msg)
    for file in version_files(raw):
        key = f"{name}/versions/{version_id}/{file.name}"
        found = target.store.size(key)
        if file.size is not None and found != file.size:
            msg = f"{target.store.url}/{key} is {found} bytes after the copy, but {file.size} were sent"
            raise CacheCorruptionError(key, msg)


def _move_refs(source: StoreCatalog, target: StoreCatalog, name: str, version_id: str) -> list[str]:
    """Tags that point at the version on the source now point at it on the target; ``latest`` only moves forward."""
    moved = []
    for tag, pointed in source.refs(name).items():
        if pointed != version_id or tag == LATEST:
            continue
        target.write_ref(name, tag, version_id)
        moved.append(tag)
    created = _created(source, name, version_id)
    while True:
        current = target.read_ref(name, LATEST)
        if current == version_id or (current is not None and _created(target, name, current) >= created):
            break
        if target.swap_ref(name, LATEST, current, version_id):
            moved.append(LATEST)
            break
    return moved
