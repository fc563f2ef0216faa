"""The files a version's ``_metadata.json`` lists beside itself, named in one place.

A publish to a bucket, a push or pull, a gc of a bucket and the mirror of a bucket's version
each handle every file of a version: they ask this module which files those are instead of
reading the shard lists themselves. A version's files are its shards and, from format revision
4 on, the small files beside them: each shard's record batch digests and the runs of rows of
its content digest (see :mod:`stable_explore.storage.format.sidecars`); from revision 6, the files of
its column groups (see :mod:`stable_explore.storage.format.column_groups`).

Examples
--------
>>> raw = {"shard_filenames": ["shard-00000.arrow"], "shard_hashes": ["xxh3_64:1f"], "shard_sizes": [812]}
>>> version_files(raw)
[VersionFile(name='shard-00000.arrow', digest='xxh3_64:1f', size=812, small=False)]
>>> raw["batch_digests"] = [{"file": "shard-00000.batches", "digest": "xxh3_128:2e", "size": 90}]
>>> [f.name for f in version_files(raw) if f.small]
['shard-00000.batches']
>>> version_files({"shard_filenames": ["a.arrow"]})  # a cache from before digests and sizes were recorded
[VersionFile(name='a.arrow', digest=None, size=None, small=False)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["METADATA_FILE", "REMOTE_FILE", "VersionFile", "version_files"]

# The two files of a version named here, where listing a home needs them without the model's modules (pyarrow)
METADATA_FILE = "_metadata.json"
REMOTE_FILE = "_remote.json"  # beside a local copy of a bucket's version's metadata: where its shards are


@dataclass(frozen=True)
class VersionFile:
    """One file of a version: its name inside the version's folder, its digest and size (None: not recorded).

    ``small`` marks the files kept beside the metadata (revision 4), which a bucket's version's
    local mirror holds with its ``_metadata.json``.
    """

    name: str
    digest: str | None
    size: int | None
    small: bool = False


def version_files(raw: Mapping[str, Any]) -> list[VersionFile]:
    """Every file that parsed ``_metadata.json`` fields ``raw`` list beside the metadata, in order.

    Names are returned as recorded: callers that make paths or keys of them check them
    (``check_name``, or the checks of :func:`~stable_explore.storage.read.open_meta.read_sharded_cache_meta`).
    """
    names = raw.get("shard_filenames") or []
    digests = raw.get("shard_hashes") or [None] * len(names)
    sizes = raw.get("shard_sizes") or [None] * len(names)
    files = [
        VersionFile(str(name), None if digest is None else str(digest), None if size is None else int(size))
        for name, digest, size in zip(names, digests, sizes, strict=False)
    ]
    small = [entry for entry in raw.get("batch_digests") or [] if isinstance(entry, Mapping) and "file" in entry]
    for field in ("content_runs", "row_segments", "cell_patches"):
        value = raw.get(field)
        if isinstance(value, Mapping) and "file" in value:
            small.append(value)
    files.extend(VersionFile(str(f["file"]), str(f.get("digest")), _size(f.get("size")), small=True) for f in small)
    files.extend(_group_files(raw.get("column_groups")))
    return files


def _group_files(value: object) -> list[VersionFile]:
    """The files of ``column_groups`` (revision 6): each group file, and the small file of its batch digests."""
    out: list[VersionFile] = []
    groups = value.get("groups") if isinstance(value, Mapping) else None
    for group in groups if isinstance(groups, list) else []:
        entries = group.get("files") if isinstance(group, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, Mapping) or "file" not in entry:
                continue
            digest = entry.get("digest")
            out.append(
                VersionFile(str(entry["file"]), None if digest is None else str(digest), _size(entry.get("size")))
            )
            batches = entry.get("batches")
            if isinstance(batches, Mapping) and "file" in batches:
                out.append(
                    VersionFile(str(batches["file"]), str(batches.get("digest")), _size(batches.get("size")), True)
                )
    return out


def _size(value: object) -> int | None:
    return value if type(value) is int else None
