"""Verifying a version in a bucket: its files are fetched into a temp folder and checked as a local cache is.

``verify`` re-hashes every byte of every shard, so it reads the whole version whatever the store;
fetching each file whole (one streamed GET) is the cheapest way to do that. A problem is
reported with the file's URL, not the temp path.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.remote_file import location_store
from stable_explore.storage.format.cache_meta import METADATA_FILE
from stable_explore.storage.format.version_files import version_files

if TYPE_CHECKING:
    from collections.abc import Callable

    from _typeshed import DataclassInstance

    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

__all__ = ["verify_remote"]

Checked = TypeVar("Checked", bound="DataclassInstance")


def verify_remote(meta: ShardedCacheMeta, check: Callable[[Path], Checked]) -> Checked:
    """Fetch a bucket's version (``meta.remote``) into a temp folder and run ``check`` (a local check) on it.

    ``check`` returns a dataclass with a ``cache_dir`` (:class:`VerifyReport`, or fsck's
    :class:`CacheCheck`); it comes back with ``cache_dir`` set to the version's mirror folder.
    """
    location = meta.remote
    assert location is not None
    store = location_store(location)
    with tempfile.TemporaryDirectory(prefix="stable-explore-verify-") as scratch:
        copy = Path(scratch) / "versions" / meta.cache_dir.name  # the layout the version-id check expects
        copy.mkdir(parents=True)
        shutil.copyfile(meta.cache_dir / METADATA_FILE, copy / METADATA_FILE)
        for file in version_files(meta.raw or {}):  # names checked when the metadata was read
            key = location.key(file.name)
            if store.size(key) is None:
                raise CacheCorruptionError(
                    location.describe(file.name), "shard file listed in _metadata.json is missing"
                )
            store.get_file(key, copy / file.name)
        try:
            report = check(copy)
        except CacheCorruptionError as exc:
            raise CacheCorruptionError(location.describe(exc.path.name), exc.reason) from exc
    return dataclasses.replace(report, cache_dir=meta.cache_dir)
