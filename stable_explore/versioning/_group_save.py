"""Saving edits of a version with column groups: the shards saved as any save does, the group columns beside them.

The edits of the shards' own columns (and the drops) go to an ordinary save of the version's
shards (links, cell patches, rewritten rows). The columns kept in groups are written again as one
group for the saved rows, in order, with the edits of those columns applied: they are the
small part of the rows (a score, an embedding), so the saved version reads two kinds of files,
not one per map. The rows' hashes are those of all their columns, as for any version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa

from stable_explore._units import format_size
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, Features
from stable_explore.storage.format.cache_meta import GROUPS_FORMAT_REVISION, SEGMENTED_FORMAT_VERSION
from stable_explore.storage.format.column_groups import ColumnGroups
from stable_explore.storage.format.hashing import ContentDigest, digest_of_runs, row_hashes
from stable_explore.storage.write.groups import GroupWriter, file_cuts
from stable_explore.storage.write.small_files import content_runs_field
from stable_explore.versioning.edits import Draft, PendingEdits, Staged

if TYPE_CHECKING:
    from pathlib import Path

    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.write.writer import ShardFields

__all__ = ["stage_with_groups"]

_CHUNK_ROWS = 65536
_CHUNK_BYTES = 16 * 1024 * 1024  # the group columns' bytes read and written at a time, about


def _kept_positions(num_rows: int, dropped: frozenset[int]) -> np.ndarray:
    """The positions ``range(num_rows)`` minus ``dropped``, sorted, without a Python object per row."""
    mask = np.ones(num_rows, dtype=bool)
    if dropped:
        mask[np.fromiter(dropped, dtype=np.int64, count=len(dropped))] = False
    return np.flatnonzero(mask).astype(np.int64)


def _chunk_rows(bytes_per_row: float) -> int:
    """Rows handled at a time: about :data:`_CHUNK_BYTES` of them, at most :data:`_CHUNK_ROWS`."""
    return max(1, min(_CHUNK_ROWS, int(_CHUNK_BYTES // max(1.0, bytes_per_row))))


def _base_of(origin: CachedDataset) -> CachedDataset:
    """The same rows (a view stays a view) read from the shards alone, with the shards' features."""
    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.read.joined import JoinedBackend

    meta = origin.cache_meta
    assert meta.column_groups is not None
    # no runs of the version's own rows: theirs hash every column, the shards' rows hash their own
    base_meta = dataclasses.replace(
        meta, features=meta.column_groups.base_features, column_groups=None, content_runs_field=None
    )
    backend = origin.backend
    assert isinstance(backend, JoinedBackend)
    return CachedDataset(
        base_meta,
        name=origin.name,
        version=origin.version,
        home=origin.home,
        backend=backend.base,
        rows=origin.view_rows,
    )


def stage_with_groups(draft: Draft, staging: Path, on_rows: Callable[[int, int], None] | None) -> Staged:
    """Write ``draft`` (whose origin has column groups) into ``staging``: the shards' save, then one group."""
    origin = draft.origin
    meta = origin.cache_meta
    groups = meta.column_groups
    assert groups is not None
    edits = draft.pending_edits
    grouped = {name for name in origin.features if groups.owner(name) >= 0}
    base_edits = PendingEdits(
        dropped=edits.dropped,
        relabelled={cell: v for cell, v in edits.relabelled.items() if cell[1] not in grouped},
        values={cell: v for cell, v in edits.values.items() if cell[1] not in grouped},
    )
    staged = Draft(_base_of(origin), base_edits).stage(staging, on_rows)

    features = origin.features
    columns = [name for name in features if name in grouped]  # in the version's column order
    shadowing = any(name in groups.base_features for name in columns)
    group_features = Features({name: features[name] for name in columns})
    kept = _kept_positions(len(origin), edits.dropped)
    base_rows = origin.base_rows()[kept] if len(kept) else np.zeros(0, dtype=np.int64)
    edited = np.array(sorted(edits.touched() - edits.dropped), dtype=np.int64)
    at = np.searchsorted(kept, edited)  # where each edited row lands among the saved rows (kept is sorted)
    groups_size = sum(f.size for group in groups.groups for f in group.files)
    chunk_rows = _chunk_rows(groups_size / max(1, meta.num_rows))
    writer = GroupWriter(
        staging,
        1,
        group_features,
        cuts=file_cuts([c for _, _, c in staged.segments]),
        row_hash=shadowing,
        compression=meta.compression,
    )
    digest = ContentDigest()
    backend = origin.backend
    try:
        for start in range(0, len(kept), chunk_rows):
            rows = base_rows[start : start + chunk_rows]
            table = backend.take(rows, columns=[*columns, KEY_COLUMN, HASH_COLUMN])
            hashes = table.column(HASH_COLUMN).to_numpy().copy()
            arrays = {name: table.column(name).combine_chunks() for name in columns}
            lo, hi = np.searchsorted(at, [start, start + len(rows)])
            here = edited[lo:hi].tolist()  # the edited rows of this chunk: their group cells and new hashes
            if here:
                new_hashes = _edited_hashes(origin, edits, here)
                changes: dict[str, dict[int, object]] = {}
                for position, index in zip(here, (at[lo:hi] - start).tolist(), strict=True):
                    hashes[index] = new_hashes[position]
                    for name in columns:
                        value = edits.relabelled.get((position, name), edits.values.get((position, name), _KEEP))
                        if value is not _KEEP:
                            changes.setdefault(name, {})[index] = value
                for name, cells in changes.items():  # one list of the chunk's values per edited column
                    values = arrays[name].to_pylist()
                    for index, value in cells.items():
                        values[index] = value
                    arrays[name] = pa.array(values, type=arrays[name].type)
            digest.update(table.column(KEY_COLUMN).combine_chunks(), hashes)
            out = pa.table(arrays)
            if shadowing:
                out = out.append_column(HASH_COLUMN, pa.array(hashes, type=pa.uint64()))
            writer.write(out)
        group = writer.finish()
    except BaseException:
        writer.abort()
        raise
    runs = digest.runs
    (staging / "content-runs.json").unlink(missing_ok=True)  # the shards' runs: these rows hash every column
    fields: dict[str, object] = dict(staged.fields)
    fields.update(
        {
            "cache_format_version": SEGMENTED_FORMAT_VERSION,
            "format_revision": GROUPS_FORMAT_REVISION,
            "features": features.to_dict(),
            "schema_fingerprint": features.fingerprint(),
            "content_digest": digest_of_runs(meta.key_type, runs),
            "content_runs": content_runs_field(staging, runs, None),
            "column_groups": ColumnGroups(groups.base_features, (group,)).to_json(),
        }
    )
    if "row_segments" not in fields:
        fields["row_segments"] = [[i, 0, rows] for i, rows in enumerate(staged.shards.rows)]
    written = sum(f.size for f in group.files)
    note = (
        f"wrote column(s) {', '.join(columns)} again for the saved rows "
        f"({len(group.files)} group file(s), {format_size(written)})"
    )
    return Staged(cast("ShardFields", fields), staged.shards, staged.segments, note)


_KEEP = object()


def _edited_hashes(origin: CachedDataset, edits: PendingEdits, positions: list[int]) -> dict[int, int]:
    """The row hash of each edited row (origin positions): every column of the row, edits applied."""
    meta = origin.cache_meta
    step = _chunk_rows(meta.nbytes / max(1, meta.num_rows))  # every column of the rows: images too
    out: dict[int, int] = {}
    for start in range(0, len(positions), step):
        part = positions[start : start + step]
        table = origin.backend.take(origin.base_rows(part), columns=list(origin.features))
        arrays = []
        for name in origin.features:
            column = table.column(name).combine_chunks()
            values = None
            for index, position in enumerate(part):
                value = edits.relabelled.get((position, name), edits.values.get((position, name), _KEEP))
                if value is not _KEEP:
                    values = column.to_pylist() if values is None else values
                    values[index] = value
            arrays.append(column if values is None else pa.array(values, type=column.type))
        out.update(zip(part, row_hashes(arrays).tolist(), strict=True))
    return out
