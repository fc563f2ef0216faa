"""A home in a bucket (``s3://team-bucket/cache``), with the same layout and the same catalog as a local one.

The bucket holds everything (DESIGN.md section 5): versions, refs, source records. This machine
keeps a local mirror of what it has read, under the read cache (``$STABLE_EXPLORE_CACHE``):
``homes/<home>/<name>/versions/<id>/_metadata.json`` plus a ``_remote.json`` that says where
the shards are. Versions are immutable, so a mirrored metadata file never goes stale; every
*name* (which versions exist, where a ref points) is read from the bucket each time.

Builds and saves stage shards in the mirror (a local disk), then publish through the store
(:func:`stable_explore.catalog.publish.publish_version`): shards are uploaded under the version's
prefix, ``_metadata.json`` goes last, and refs move by compare-and-swap.

Examples
--------
>>> import tempfile
>>> catalog = open_catalog(tempfile.mkdtemp())
>>> type(catalog).__name__, catalog.names()
('Catalog', [])
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from typing_extensions import override

from stable_explore._canonical import parse_json
from stable_explore.catalog.catalog import Catalog, VersionRef
from stable_explore.catalog.names import HOME_ENV, NAME_PATTERN, check_name, is_url
from stable_explore.errors import CacheNotFoundError
from stable_explore.storage.backends.fsutil import PreparedFile, write_text_durably
from stable_explore.storage.backends.lease import lease_is_live
from stable_explore.storage.backends.object import ObjectStore, shared_store
from stable_explore.storage.backends.read_cache import default_cache_dir
from stable_explore.storage.format.version_files import METADATA_FILE, REMOTE_FILE, version_files

__all__ = ["RemoteCatalog", "collect_remote_garbage", "home_of", "open_catalog"]


def home_of(home: str | Path | None) -> str | Path | None:
    """``home``, else ``$STABLE_EXPLORE_HOME`` when that is a URL (a folder is resolved by :class:`Catalog`)."""
    if home is not None:
        return home
    env = os.environ.get(HOME_ENV, "").strip()
    return env if env and is_url(env) else None


def open_catalog(home: str | Path | None = None, storage_options: Mapping[str, object] | None = None) -> Catalog:
    """The catalog of a home: a folder (:class:`Catalog`) or a bucket URL (:class:`RemoteCatalog`)."""
    where = home_of(home)
    if where is not None and is_url(where):
        return RemoteCatalog(str(where), storage_options)
    if isinstance(where, str) and where.startswith("file://"):
        where = where[len("file://") :]
    return Catalog(where)


def _mirror_name(url: str) -> str:
    """A folder name for a home URL: readable, and unique by a hash of the whole URL."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", url.split("://", 1)[-1]).strip("-.")[:60] or "home"
    return f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:10]}"


class RemoteCatalog(Catalog):
    """The catalog of a home in a bucket; ``home`` is this machine's mirror folder, ``where`` the URL.

    Credentials come from the environment or ``storage_options`` and stay in this process.
    """

    def __init__(self, url: str, storage_options: Mapping[str, object] | None = None) -> None:
        store = shared_store(url, storage_options)
        self.store = store
        self.url = store.url
        self.home = default_cache_dir() / "homes" / _mirror_name(self.url)

    def __repr__(self) -> str:
        return f"RemoteCatalog({self.url!r})"

    @property
    @override
    def where(self) -> str:
        return self.url

    @override
    def version_dir(self, name: str, version_id: str) -> Path:
        """The local mirror of a version: its metadata (fetched once) and where its shards are."""
        path = self.versions_dir(name) / check_name(version_id, "version id")
        if not (path / METADATA_FILE).is_file() or not (path / REMOTE_FILE).is_file():
            prefix = f"{name}/versions/{version_id}"
            text = self.store.read_text(f"{prefix}/{METADATA_FILE}")
            if text is None:
                msg = (
                    f"{self.url}/{prefix} does not exist (no {METADATA_FILE}): no such version, or gc deleted it "
                    "after a ref named it; load the dataset again"
                )
                raise CacheNotFoundError(msg)
            path.mkdir(parents=True, exist_ok=True)
            write_text_durably(path / REMOTE_FILE, json.dumps({"url": self.url, "prefix": prefix}))
            # last: the mirror is whole once this exists. The small files beside it (a shard's batch digests, the
            # content runs) are fetched into it when a read first needs them: a page of rows costs its shards' only
            write_text_durably(path / METADATA_FILE, text)
        return path

    @override
    def _published(self, name: str, version_id: str) -> bool:
        """Whether the bucket holds the version: its metadata fetched into the mirror when the mirror lacks it.

        One GET, which the open that follows would send anyway, instead of a HEAD and then that GET.
        """
        path = self.versions_dir(name) / version_id
        if (path / METADATA_FILE).is_file() and (path / REMOTE_FILE).is_file():
            return super()._published(name, version_id)  # mirrored: is it still in the bucket (gc)?
        try:
            self.version_dir(name, version_id)
        except CacheNotFoundError:
            return False
        return True

    @override
    def write_ref(self, name: str, tag: str, version_id: str, *, prepared: PreparedFile | None = None) -> None:
        """Point ``tag`` at a version under the refs lease (gc cannot take it meanwhile), by compare-and-swap.

        ``prepared`` is always None here: a bucket's refs are not prepared ahead (:meth:`prepare_ref`).
        """
        with self.refs_lock(name):
            while True:
                current = self.read_ref(name, tag)
                if current == version_id:
                    return
                self.check_refs_lock(name)
                if self.swap_ref(name, tag, current, version_id):
                    return

    def forget(self, name: str, version_id: str) -> None:
        """Drop this machine's mirror of a version (after it was deleted from the bucket)."""
        shutil.rmtree(self.versions_dir(name) / check_name(version_id, "version id"), ignore_errors=True)

    @override
    def ref(self, name: str, version_id: str) -> VersionRef:
        return VersionRef(name, version_id, self.version_dir(name, version_id), self.url)


def collect_remote_garbage(
    catalog: RemoteCatalog, name: str | None, *, keep: int, grace: float = 60.0
) -> tuple[int, list[str], list[str]]:
    """Collect garbage in a bucket under each dataset's refs lease, as on a local home.

    gc takes the dataset's refs lease (publishing takes it to put a version's metadata and move
    refs), reads the refs first and then the versions, and deletes a version's metadata first (then
    it is no version) and its shards, checking before each delete that the lease is still its own.
    So it never deletes a version a ref points to, nor one published after it read the refs.
    Tagged versions and the ``keep`` newest are kept.

    Files under a version prefix without metadata are an interrupted publish when no live publish
    lease holds them (:meth:`~stable_explore.catalog.catalog.StoreCatalog.publishing`: a publish
    holds one for its whole copy, so one still running on another machine is never touched) and
    none was written in the last ``grace`` seconds: they are swept. Returns the bytes freed,
    ``name@version`` of each version deleted, and each leftover swept.
    """
    freed = 0
    removed: list[str] = []
    swept: list[str] = []
    for dataset in [name] if name is not None else catalog.names():
        leftovers = _interrupted(catalog, dataset, grace)
        try:
            doomed = _doomed(catalog, dataset, keep, leftovers=bool(leftovers))
        except CacheNotFoundError:
            if name is not None:
                raise
            continue  # only empty prefixes left (some servers keep them after their objects are deleted)
        if not doomed and not leftovers:
            continue  # nothing to delete: no lease taken (a gc run often must not keep savers waiting)
        with catalog.refs_lock(dataset):
            for version_id in _doomed(catalog, dataset, keep, leftovers=True):  # decided again, under the lease
                prefix = f"{dataset}/versions/{version_id}"
                text = catalog.store.read_text(f"{prefix}/{METADATA_FILE}") or "{}"
                try:
                    raw = parse_json(text)
                except (ValueError, RecursionError):
                    raw = {}
                catalog.check_refs_lock(dataset)
                catalog.store.delete(f"{prefix}/{METADATA_FILE}")
                for file in version_files(raw) if isinstance(raw, dict) else []:
                    catalog.check_refs_lock(dataset)
                    catalog.store.delete(f"{prefix}/{check_name(file.name, 'shard file name')}")
                    freed += file.size or 0
                catalog.forget(dataset, version_id)
                removed.append(f"{dataset}@{version_id}")
            for version_id, objects in _interrupted(catalog, dataset, grace).items():  # again, under the lease
                for key, size, _ in objects:
                    catalog.check_refs_lock(dataset)
                    catalog.store.delete(key)
                    freed += size
                catalog.store.delete(catalog.publish_lease_key(dataset, version_id))  # a dead publisher's, if any
                swept.append(
                    f"{catalog.url}/{dataset}/versions/{version_id} ({len(objects)} file(s) without {METADATA_FILE}: "
                    "an interrupted publish)"
                )
    return freed, removed, swept


def _interrupted(catalog: RemoteCatalog, dataset: str, grace: float) -> dict[str, list[tuple[str, int, float]]]:
    """Version prefixes of ``dataset`` without metadata that no live publish lease holds, untouched for ``grace`` s.

    Each with its objects (key, size, last modified).
    """
    store = catalog.store
    assert isinstance(store, ObjectStore)  # a RemoteCatalog's store is always one
    prefix = f"{check_name(dataset)}/versions"
    found: dict[str, list[tuple[str, int, float]]] = {}
    now = time.time()
    for entry in store.list_dir(prefix):
        if not NAME_PATTERN.fullmatch(entry) or store.exists(f"{prefix}/{entry}/{METADATA_FILE}"):
            continue
        if lease_is_live(store, catalog.publish_lease_key(dataset, entry), store.lease_seconds):
            continue  # a publish still copying (here or on another machine)
        objects = store.list_objects(f"{prefix}/{entry}")
        if objects and now - max(modified for _, _, modified in objects) >= grace:
            found[entry] = objects
    return found


def _doomed(catalog: RemoteCatalog, dataset: str, keep: int, *, leftovers: bool = False) -> list[str]:
    """Versions of ``dataset`` no ref points to, beyond the ``keep`` newest (refs read first, then versions).

    A dataset without versions is no dataset, unless it holds ``leftovers`` (an interrupted first publish).
    """
    protected = set(catalog.refs(dataset).values())
    ids = catalog.version_ids(dataset)
    if not ids and leftovers:
        return []
    if not ids:
        msg = f"no dataset named {dataset!r} in {catalog.url}"
        raise CacheNotFoundError(msg)
    created = {v: _created_at(catalog, dataset, v) for v in ids}
    by_age = sorted(ids, key=lambda v: (created[v], v), reverse=True)
    protected |= set(by_age[:keep])
    return [v for v in by_age if v not in protected]


def _created_at(catalog: RemoteCatalog, name: str, version_id: str) -> str:
    try:
        return catalog.version_meta(name, version_id).version_metadata.created_at or ""
    except (OSError, ValueError):
        return ""
