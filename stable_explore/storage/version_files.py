"""The files a version's ``_metadata.json`` lists beside itself, named in one place.

A publish to a bucket, a push or pull, and a gc of a bucket each handle every file of a
version: they ask this module which files those are instead of reading the shard lists
themselves, so a kind of file the format adds beside the shards (issue 16: the record
batch digests of a shard, kept once beside it instead of in every version's metadata) is
handled by all of them at once. Today a version's files are its shards.

Examples
--------
>>> raw = {"shard_filenames": ["shard-00000.arrow"], "shard_hashes": ["xxh3_64:1f"], "shard_sizes": [812]}
>>> version_files(raw)
[VersionFile(name='shard-00000.arrow', digest='xxh3_64:1f', size=812)]
>>> version_files({"shard_filenames": ["a.arrow"]})  # a cache from before digests and sizes were recorded
[VersionFile(name='a.arrow', digest=None, size=None)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["VersionFile", "version_files"]


@dataclass(frozen=True)
class VersionFile:
    """One file of a version: its name inside the version's folder, its digest and size (None: not recorded)."""

    name: str
    digest: str | None
    size: int | None


def version_files(raw: Mapping[str, Any]) -> list[VersionFile]:
    """Every file that parsed ``_metadata.json`` fields ``raw`` list beside the metadata, in order.

    Names are returned as recorded: callers that make paths or keys of them check them
    (``check_name``, or the checks of :func:`~stable_explore.storage.format.read_sharded_cache_meta`).
    """
    names = raw.get("shard_filenames") or []
    digests = raw.get("shard_hashes") or [None] * len(names)
    sizes = raw.get("shard_sizes") or [None] * len(names)
    return [
        VersionFile(str(name), None if digest is None else str(digest), None if size is None else int(size))
        for name, digest, size in zip(names, digests, sizes, strict=False)
    ]
