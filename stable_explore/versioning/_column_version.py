"""Publishing a version that adds or replaces columns: the parent's files linked, one column group written.

The new version keeps every file of its parent (shards, their small files, earlier column
groups: hard links, or in a bucket copies inside the store) and writes one group of files
holding only the new columns, row for row (see :mod:`stable_explore.storage.format.column_groups`).
Its rows' hashes are the standard row hashes of all their columns, so its id is what a build of
the same rows would give: carried on from the parent's row hashes over appended columns, or
computed again from the whole rows (and stored in the group) when a column is replaced.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from stable_explore._units import format_size
from stable_explore.catalog import open_catalog, publish_version
from stable_explore.errors import CacheNotFoundError, CacheWriteError
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, Features
from stable_explore.storage.backends.fsutil import fsync_path, temp_dir_beside, writing
from stable_explore.storage.format.cache_meta import GROUPS_FORMAT_REVISION, SEGMENTED_FORMAT_VERSION
from stable_explore.storage.format.column_groups import ColumnGroup, ColumnGroups
from stable_explore.storage.format.hashing import ContentDigest, continue_row_hashes, digest_of_runs, row_hashes
from stable_explore.storage.format.version_files import version_files
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.groups import GroupWriter, file_cuts
from stable_explore.storage.write.small_files import content_runs_field

if TYPE_CHECKING:
    from pathlib import Path

    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.format.metadata import VersionMetadata
    from stable_explore.storage.write.writer import ShardFields

__all__ = ["publish_columns", "version_features"]

_RECORD_FIELDS = frozenset(
    {
        "version_id",
        "name",
        "created_at",
        "parent",
        "operations",
        "source_fingerprint",
        "source",
        "description",
        "license",
        "metadata",
        "message",
        "metadata_digest",
        "content_digest",
        "content_runs",
    }
)
"""Fields of the parent's metadata a new version does not inherit: its own record, and the digest of its rows."""

Chunks = Iterable[pa.Table]
"""The new columns for consecutive rows of the origin, from its first row to its last."""


def version_features(features: Features, added: Features) -> Features:
    """``features`` with ``added`` applied: a name already there is replaced in place, a new one appended."""
    out = Features(dict(features))
    for name, feature in added.items():
        out[name] = feature
    return out


def _link_parent_files(meta: Any, staging: Path) -> None:
    """Link every file the parent lists into ``staging`` (except its runs file: the new rows have new runs).

    A bucket's version has only its small files here: its shards are copied inside the store at publish.
    """
    runs = (meta.raw or {}).get("content_runs")
    skip = {runs.get("file")} if isinstance(runs, Mapping) else set()
    for file in version_files(meta.raw or {}):
        if file.name in skip:
            continue
        source = meta.cache_dir / file.name
        if not source.is_file():
            if meta.remote is None:
                msg = f"{source}: listed in the parent's metadata but missing; nothing was saved"
                raise CacheWriteError(msg)
            continue
        target = staging / file.name
        try:
            os.link(source, target)
        except OSError:
            with writing(target):
                shutil.copyfile(source, target)
                fsync_path(target)


def publish_columns(
    origin: CachedDataset,
    added: Features,
    chunks: Chunks,
    record: VersionMetadata,
    *,
    tag: str | None = None,
    on_rows: Callable[[int, int], None] | None = None,
    set_latest: bool = True,
) -> tuple[CachedDataset, str]:
    """Publish ``origin`` (a whole version) with the columns ``chunks`` give as a new version; (it, what was written).

    Each chunk is a table of the ``added`` columns for the next rows of ``origin``, in order.
    ``set_latest=False`` leaves the dataset's ``latest`` where it is.
    """
    from stable_explore.dataset import CachedDataset

    meta = origin.cache_meta
    if (
        origin.is_view
        or origin.home is None
        or not origin.name
        or meta.is_stable_datasets_v1
        or meta.shard_features is None
    ):
        msg = "new columns need a whole version in a catalog (save a view or a stable-datasets cache first)"
        raise CacheWriteError(msg)
    gone = origin.deleted_reason(fresh=True)
    if gone is not None:
        msg = f"nothing was saved: {gone}"
        raise CacheNotFoundError(msg)
    catalog = open_catalog(origin.home)
    name = origin.name
    features = version_features(origin.features, added)
    replaces = [column for column in added if column in origin.features]
    earlier: tuple[ColumnGroup, ...] = meta.column_groups.groups if meta.column_groups is not None else ()
    positions = [list(features).index(column) for column in added]
    backend = origin.backend
    digest = ContentDigest()
    with temp_dir_beside(catalog.versions_dir(name) / "staging") as staging:
        _link_parent_files(meta, staging)
        writer = GroupWriter(
            staging,
            len(earlier) + 1,
            added,
            cuts=file_cuts([int(n) for n in np.diff(backend.segment_offsets)]),
            row_hash=bool(replaces),
            compression=meta.compression,
        )
        start = 0
        try:
            for chunk in chunks:
                count = chunk.num_rows
                if start + count > len(origin):
                    msg = f"the new columns have more rows than {origin.ref} ({len(origin)})"
                    raise CacheWriteError(msg)
                if replaces:  # the whole rows, hashed again (a replaced value sits mid-row)
                    rows = backend.slice(start, count, [*origin.features, KEY_COLUMN])
                    arrays = [
                        (chunk if column in added else rows).column(column).combine_chunks() for column in features
                    ]
                    hashes = row_hashes(arrays)
                    chunk = chunk.append_column(HASH_COLUMN, pa.array(hashes, type=pa.uint64()))
                else:
                    rows = backend.slice(start, count, [KEY_COLUMN, HASH_COLUMN])
                    hashes = continue_row_hashes(
                        rows.column(HASH_COLUMN).to_numpy(),
                        [chunk.column(column).combine_chunks() for column in added],
                        positions,
                    )
                keys = rows.column(KEY_COLUMN).combine_chunks()
                digest.update(keys, np.asarray(hashes, dtype=np.uint64))
                writer.write(chunk)
                start += count
                if on_rows is not None:
                    on_rows(count, 0)
            if start != len(origin):
                msg = f"the new columns have {start} rows, but {origin.ref} has {len(origin)}"
                raise CacheWriteError(msg)
            group = writer.finish()
        except BaseException:
            writer.abort()
            raise
        runs = digest.runs
        fields: dict[str, object] = {k: v for k, v in (meta.raw or {}).items() if k not in _RECORD_FIELDS}
        groups = ColumnGroups(meta.shard_features, (*earlier, group))
        fields.update(
            {
                # stable-datasets' reader must refuse it: it would miss columns
                "cache_format_version": SEGMENTED_FORMAT_VERSION,
                "format_revision": GROUPS_FORMAT_REVISION,
                "features": features.to_dict(),
                "schema_fingerprint": features.fingerprint(),
                "content_digest": digest_of_runs(meta.key_type, runs),
                "content_runs": content_runs_field(staging, runs, None),
                "column_groups": groups.to_json(),
            }
        )
        if "row_segments" not in fields:
            fields["row_segments"] = [[i, 0, rows] for i, rows in enumerate(meta.shard_row_counts)]
        shard_fields = cast("ShardFields", fields)
        published = publish_version(
            catalog,
            name,
            staging,
            shard_fields,
            record,
            tag=tag,
            reuse=((name, origin.version),),
            set_latest=set_latest,
        )
    written = sum(f.size for f in group.files)
    info = (
        f"wrote {len(group.files)} group file(s) ({format_size(written)}) for column(s) "
        f"{', '.join(added)}; reused the {meta.num_shards} shard(s) of {origin.ref}"
    )
    if published.existed:
        info += "; identical content: the existing version"
    ref = published.ref
    dataset = CachedDataset(
        read_sharded_cache_meta(ref.cache_dir), name=name, version=ref.version_id, home=catalog.where
    )
    return dataset, info
