"""How a save writes its rows: links what survives unchanged, writes edited rows anew, hashes only stale runs.

:class:`EditWriter` turns a dataset and its pending edits into shard files and
[shard, start, count] segments. Unchanged runs stay in the parent's files (a hard
link, or a server-side copy in a bucket); edited rows are gathered into full
chunks; compaction (see :mod:`._plan`) keeps the pieces a read opens bounded. The
plan, the digest and the writing all cost what the edits change, not the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore.schema import HASH_COLUMN, KEY_COLUMN
from stable_explore.storage.check.verify import feed_rows
from stable_explore.storage.format.cell_patches import CellPatches
from stable_explore.storage.format.hashing import ContentDigest, row_hashes, run_ends
from stable_explore.storage.read.resident import note_read, sparse_read_bytes
from stable_explore.versioning._patch_plan import carried_entries, linked_places, merged_entries, patchable
from stable_explore.versioning._plan import (
    Link,
    Rewrite,
    base_runs,
    compacted,
    known_ends,
    plan_rows,
    stale_digest_runs,
)

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.format.cell_patches import PatchEntry
    from stable_explore.storage.format.file_ref import FileRef
    from stable_explore.storage.read.batches import BatchDigests
    from stable_explore.storage.write.shards import ShardWriter
    from stable_explore.versioning.edits import PendingEdits

__all__ = ["EditWriter"]

_CHUNK_ROWS = 1000
_CHUNK_BYTES = 16 * 1024 * 1024  # rows of large images are read and written fewer at a time: about this many bytes
_ROW_COLUMNS = (KEY_COLUMN, HASH_COLUMN)
_MIN_LINKED_ROWS = 1  # every unchanged piece is linked; compaction (below) bounds the pieces per file
_KEEP_PLACE_ROWS = 256  # rewritten runs this long are written before the next link (files stay in row order)
_MIN_COMPACT_SEGMENTS = 64  # past max(this, rows / _ROWS_PER_SEGMENT) pieces, a save rewrites its most fragmented files
_ROWS_PER_SEGMENT = 1000  # (a piece costs a read about 1.5 us, a row of a fresh read about 30 ns: within 5%)
_SMALL_FILE_FRACTION = 8  # files with fewer rows than the largest / 8 are "small" (earlier saves' edited rows)
_MAX_SMALL_FILES = 2  # past this many small files, the smallest are merged into the save's new file (reads open
# each file: allowing 20 at 2M rows made a read of the 50th version 1.68x a fresh build's, bench_versions --table)
_SMALL_FILE_BYTES = 1024 * 1024  # a file past this size is never "small" (a build's last shard: 4.8 MB at 2M rows)
_MERGE_SMALL_BYTES = 64 * 1024  # small files up to this size in all are merged at once into a save's new file,
_ROWS_PER_SMALL_FILE = 100_000  # at 100k rows, and less as the rows grow: merging them on every save rewrites the
# earlier saves' edits again and again, and at 2M rows a small file costs a read well under 1%

_DECIDED_ROWS = 1 << 16  # changed rows whose key and row hash a save keeps for its digest (a few MB at most)


class EditWriter:
    """Writes ``origin`` with ``edits`` applied into a :class:`ShardWriter` (see :meth:`write_rows`)."""

    def __init__(self, origin: CachedDataset, edits: PendingEdits) -> None:
        self.origin = origin
        self.edits = edits
        self.referred: dict[int, int] = {}  # new shard index -> the parent's shard file it refers to (bucket)
        self.linked: dict[int, int] = {}  # the origin's shard -> the saved version's (filled by write_rows)
        self.patches: list[PatchEntry] = []  # the saved version's cell patches (filled by write_rows)
        self.cell_patches: CellPatches | None = None  # the same grouped by shard: the digest's and the save's
        # the changed rows this save wrote (patched or anew): origin position -> (key, new row hash), so the
        # digest knows whether each ends a run without reading it back (filled by write_rows)
        self._changed_rows: dict[int, tuple[object, int]] = {}
        self._touched: set[int] = set()
        self._too_many_changed = False
        meta = origin.cache_meta
        self._bytes_per_row = meta.nbytes / max(1, meta.num_rows)
        # rows read, edited and written at a time: what a save holds beyond its plan is a few of these
        self.chunk_rows = max(1, min(_CHUNK_ROWS, int(_CHUNK_BYTES // max(1.0, self._bytes_per_row))))

    def content_runs(
        self, paths: list[Path], segments: list[list[int]], shard_digests: list[str]
    ) -> list[tuple[int, str]]:
        """The new version's digest runs: the parent's, with only the runs the edits touched hashed again.

        When the origin is a whole version that records its runs (format revision 3), the
        rows of each stale group of runs are read back from the new version and hashed; every
        other run keeps its digest. Otherwise (a view, an older parent) every row is hashed once.
        Patched rows are hashed with their new row hashes (``shard_digests`` name the new version's shards).
        """
        origin = self.origin
        parent_runs = origin.cache_meta.content_runs
        patches = self.cell_patches

        def referred_columns(shard: int) -> pa.Table | None:
            # a shard this save refers to in a bucket is not in staging: its two row columns come from there
            old = self.referred.get(shard)
            return origin.backend.file_columns(old, _ROW_COLUMNS) if old is not None else None

        if origin.is_view or parent_runs is None:
            digest = ContentDigest()
            feed_rows(
                digest, paths, segments, open_columns=referred_columns, patches=patches, shard_digests=shard_digests
            )
            return digest.runs
        dropped = np.array(sorted(self.edits.dropped), dtype=np.int64)
        changed = np.array(sorted(self.edits.touched()), dtype=np.int64)
        affected = np.union1d(dropped, changed)
        ends = np.cumsum([rows for rows, _ in parent_runs], dtype=np.int64)
        runs: list[tuple[int, str]] = []
        done = 0
        tables: dict[int, pa.Table] = {}
        groups = stale_digest_runs(ends, affected)
        known = known_ends(ends, dropped, changed, self._decided_ends()) if groups else None
        for first, last in groups:
            assert known is not None
            runs.extend(parent_runs[done:first])
            start = int(ends[first - 1]) if first else 0
            stop = int(ends[last])
            new_start = start - int(np.searchsorted(dropped, start))
            new_stop = stop - int(np.searchsorted(dropped, stop))
            digest = ContentDigest(known.window(new_start, new_stop))
            feed_rows(
                digest,
                paths,
                segments,
                new_start,
                new_stop,
                tables,
                open_columns=referred_columns,
                patches=patches,
                shard_digests=shard_digests,
            )
            runs.extend(digest.runs)
            done = last + 1
        runs.extend(parent_runs[done:])
        return runs

    def _note_changed(self, rows: Iterable[tuple[int, tuple[object, int]]]) -> None:
        """Keep the key and new row hash of changed rows written, up to a bound (past it the digest looks at them)."""
        if self._too_many_changed:
            return
        self._changed_rows.update(rows)
        if len(self._changed_rows) > _DECIDED_ROWS:  # a save of very many changed rows: hold none of them
            self._changed_rows.clear()
            self._too_many_changed = True

    def _decided_ends(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The changed rows this save wrote (sorted origin positions), and which of them end a run of the digest.

        Whether a row ends a run depends on its key and row hash alone: known here for every row the
        save patched or wrote anew, so the digest need not read them back to look (one call for all).
        """
        if not self._changed_rows:
            return None
        positions = sorted(self._changed_rows)
        keys = [self._changed_rows[p][0] for p in positions]
        hashes = np.array([self._changed_rows[p][1] for p in positions], dtype=np.uint64)
        key_type = pa.string() if self.origin.cache_meta.key_type == "string" else pa.int64()
        ending = np.zeros(len(positions), dtype=bool)
        ending[run_ends(pa.array(keys, type=key_type), hashes)] = True
        return np.array(positions, dtype=np.int64), ending

    def write_rows(
        self, writer: ShardWriter, schema: pa.Schema, on_rows: Callable[[int, int], None] | None = None
    ) -> list[list[int]]:
        """Write the output rows; return them as [shard, start, count] runs of the new version.

        A long run of rows that survives unchanged and in order is kept where it is: its
        parent shard file is linked once and the run points into it. Everything else (edited
        rows, short runs of a reordered view) is written anew, in chunks. The plan is made
        of runs (see :mod:`._plan`), so its cost grows with the edits, not the rows.
        """
        self.referred.clear()
        self._changed_rows.clear()
        self._too_many_changed = False
        origin = self.origin
        meta = origin.cache_meta
        backend = origin.backend
        edits = self.edits
        touched = edits.touched() - edits.dropped
        self._touched = touched
        # relabels of rows with no other edit become cell patches where the plan keeps the row in its file
        relabels = {row for row, _ in edits.relabelled} - edits.dropped - {row for row, _ in edits.values}
        relabels = relabels if patchable(meta) else set()
        plan = plan_rows(
            base_runs(origin.view_rows, meta.num_rows),
            np.array(sorted(edits.dropped), dtype=np.int64),
            np.array(sorted(touched - relabels), dtype=np.int64),
            backend.segment_offsets,
            backend.segments,
            can_link=not meta.is_stable_datasets_v1 and meta.shard_hashes is not None and meta.shard_sizes is not None,
            min_linked_rows=_MIN_LINKED_ROWS,
        )
        plan = compacted(
            plan,
            meta.shard_row_counts,
            max_segments=max(_MIN_COMPACT_SEGMENTS, meta.num_rows // _ROWS_PER_SEGMENT),
            small_file_rows=max(meta.shard_row_counts, default=0) // _SMALL_FILE_FRACTION,
            max_small_files=_MAX_SMALL_FILES,
            file_bytes=meta.shard_sizes,
            merge_bytes=_MERGE_SMALL_BYTES * _ROWS_PER_SMALL_FILE // max(meta.num_rows, _ROWS_PER_SMALL_FILE),
            small_file_bytes=_SMALL_FILE_BYTES,
        )
        self.patches = self._patches_of(plan, np.array(sorted(relabels), dtype=np.int64))
        self.cell_patches = CellPatches(self.patches) if self.patches else None
        segments: list[list[int]] = []
        linked = self.linked
        linked.clear()
        chunk_rows = self.chunk_rows
        pending: list[int] = []  # origin positions to write anew, in output order
        waiting: list[tuple[list[int], int]] = []  # segments of those rows, and where they start in pending

        def flush() -> None:
            # rows to rewrite are gathered across links and written in full chunks, so a save of
            # k scattered edits writes one record batch, not one per edited row
            places = []
            for chunk_start in range(0, len(pending), chunk_rows):
                places.append(writer.next_row())
                self._rewrite(writer, pending[chunk_start : chunk_start + chunk_rows], schema)
            for entry, offset in waiting:
                shard, row = places[offset // chunk_rows]
                entry[0], entry[1] = shard, row + offset % chunk_rows
            pending.clear()
            waiting.clear()

        for step in plan:
            if isinstance(step, Rewrite):
                start, count = step.start, step.count
                wrote = False
                while count:  # one segment per chunk the rows land in
                    take = min(count, chunk_rows - len(pending) % chunk_rows)
                    entry = [-1, -1, take]
                    segments.append(entry)
                    waiting.append((entry, len(pending)))
                    pending.extend(range(start, start + take))
                    start, count = start + take, count - take
                    if len(pending) >= chunk_rows:  # a full chunk is written at once: a long run is never all held
                        flush()
                        wrote = True
                if wrote and pending:
                    flush()  # the rest of a run that filled a chunk follows it, before the next link
                continue
            if len(pending) >= _KEEP_PLACE_ROWS:
                flush()  # a long rewritten run keeps its place among the files (whole, in order: format 1)
            file_id = step.file_id
            if file_id not in linked:
                assert meta.shard_hashes is not None
                assert meta.shard_sizes is not None
                rows, size = meta.shard_row_counts[file_id], meta.shard_sizes[file_id]
                digest = meta.shard_hashes[file_id]
                batches = _batches_of(meta, file_id)
                if meta.remote is not None:  # in a bucket: the store copies it at publish, nothing moves here
                    linked[file_id] = writer.refer(rows=rows, size=size, digest=digest, batches=batches)
                    self.referred[linked[file_id]] = file_id
                else:
                    linked[file_id] = writer.link(
                        backend.shard_files[file_id], rows=rows, size=size, digest=digest, batches=batches
                    )
            segments.append([linked[file_id], step.file_start, step.count])
            if on_rows is not None:
                on_rows(step.count, writer.bytes_written)
        flush()
        merged: list[list[int]] = []
        for shard, start, count in segments:
            last = merged[-1] if merged else None
            if last is not None and last[0] == shard and last[1] + last[2] == start:
                last[2] += count
            else:
                merged.append([shard, start, count])
        return merged

    def _patches_of(self, plan: list[Link | Rewrite], relabels: np.ndarray) -> list[PatchEntry]:
        """The saved version's cell patches: the origin's still linked, and ``relabels`` the plan links."""
        meta = self.origin.cache_meta
        inherited = meta.cell_patches
        if meta.shard_hashes is None or (not relabels.size and not inherited):
            return []
        carried = carried_entries(inherited.entries if inherited else [], plan, meta.shard_hashes)
        found, files, file_rows = linked_places(plan, relabels)
        positions = relabels[found].tolist()
        if not positions:
            return carried
        hashes: list[int] = []
        keys: list[object] = []
        for start in range(0, len(positions), self.chunk_rows):  # the rows' cells are read a chunk at a time
            _, arrays, chunk_keys = self._edited_arrays(positions[start : start + self.chunk_rows], with_keys=True)
            hashes.extend(row_hashes(arrays).tolist())
            keys.extend(chunk_keys.to_pylist() if chunk_keys is not None else [])
        if len(keys) == len(positions):
            self._note_changed(zip(positions, zip(keys, hashes, strict=True), strict=True))
        cells: dict[int, list[tuple[str, int]]] = {}
        for (position, column), code in sorted(self.edits.relabelled.items()):
            cells.setdefault(position, []).append((column, code))
        new = [
            (meta.shard_hashes[file_id], file_row, row_hash, tuple(cells[position]))
            for position, file_id, file_row, row_hash in zip(
                positions, files[found].tolist(), file_rows[found].tolist(), hashes, strict=True
            )
        ]
        return merged_entries(carried, new)

    def _edited_arrays(
        self, positions: list[int], *, with_keys: bool = False
    ) -> tuple[list[int], list[pa.Array], pa.Array | None]:
        """These origin rows' base rows, their feature columns with the edits applied, and their keys if asked.

        The keys come in the same read (None for a stable-datasets cache: it stores none).
        """
        origin = self.origin
        picked = origin[positions]
        rows = picked.base_rows()
        feature_names = list(origin.features)
        with_keys = with_keys and not origin.cache_meta.is_stable_datasets_v1
        table = origin.backend.take(rows, columns=[*feature_names, KEY_COLUMN] if with_keys else feature_names)
        arrays = [table.column(n).combine_chunks() for n in feature_names]
        keys = table.column(KEY_COLUMN).combine_chunks() if with_keys else None
        del table
        if len(rows):  # the mapped pages this read touched (around each row, within their span) are let go of in time
            note_read(sparse_read_bytes(int(np.min(rows)), int(np.max(rows)), len(rows), self._bytes_per_row))
        relabelled, set_values = self.edits.relabelled, self.edits.values
        for index, name in enumerate(feature_names):
            changes = {}
            for i, p in enumerate(positions):
                if (p, name) in relabelled:
                    changes[i] = relabelled[(p, name)]
                if (p, name) in set_values:
                    changes[i] = set_values[(p, name)]
            if changes:
                values = arrays[index].to_pylist()
                for i, value in changes.items():
                    values[i] = value
                arrays[index] = pa.array(values, type=arrays[index].type)
        return rows, arrays, keys

    def _rewrite(self, writer: ShardWriter, positions: list[int], schema: pa.Schema) -> None:
        """Write these origin rows anew: read them, apply the edits, hash them again."""
        if not positions:
            return
        rows, arrays, read_keys = self._edited_arrays(positions, with_keys=True)
        keys = pa.array(rows, type=pa.int64()) if read_keys is None else read_keys
        new_hashes = row_hashes(arrays)
        hashes = pa.array(new_hashes, type=pa.uint64())
        batch = pa.RecordBatch.from_arrays([*arrays, keys.cast(schema.field(KEY_COLUMN).type), hashes], schema=schema)
        writer.write(batch)
        changed = [i for i, position in enumerate(positions) if position in self._touched]
        if changed:  # rows written anew because the edits changed them (not those compaction moved)
            chunk_keys = keys.take(pa.array(changed)).to_pylist()
            self._note_changed(
                (positions[i], (key, int(new_hashes[i]))) for i, key in zip(changed, chunk_keys, strict=True)
            )


def _batches_of(meta: ShardedCacheMeta, file_id: int) -> BatchDigests | FileRef | None:
    """What a save carries over of a reused shard's batch digests.

    The file holding them (linked or referred to, never read), or the digests an older cache recorded inline.
    """
    if meta.batch_digests is None:
        return None
    return meta.batch_digests.file_ref(file_id) or meta.batch_digests[file_id]
