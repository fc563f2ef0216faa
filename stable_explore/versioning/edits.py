"""Edits -> a new version: drop, relabel and set rows lazily, then save, reusing unchanged shards.

A :class:`Draft` is a dataset plus pending edits; nothing is written until
``save``. Row numbers in a chain of edits always mean rows of the dataset the
chain started from (positions in it, for a view), so ``drop`` then ``relabel``
equals ``relabel`` then ``drop``. Saving writes the rows of that dataset, in
its order, minus the dropped ones and with the changes applied. Every run of
rows that survives unchanged stays in its parent's shard file, reused as a hard
link (or a copy where links are impossible): relabelling 10 rows writes those
10 rows and the metadata. The plan, the digest and compaction cost what the
edits change (see :mod:`._plan`).

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
>>> ds = se.build([{"label": "cat"}] * 4, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> clean = ds.drop([0]).relabel({3: "dog"}).save(message="fix 3")
>>> clean.label_counts(), clean.metadata["parent"] == ds.version
({'cat': 2, 'dog': 1}, True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._canonical import json_value
from stable_explore._units import format_size
from stable_explore.catalog import check_name, open_catalog, publish_version
from stable_explore.display.progress import saving_bar
from stable_explore.errors import ColumnNotFoundError, EncodingError, InvalidArgumentTypeError, RowIndexError
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, ClassLabel, Value, class_name
from stable_explore.storage.content_runs import content_runs_field
from stable_explore.storage.format import DEFAULT_SHARD_SIZE_BYTES, ShardedCacheMeta, read_sharded_cache_meta
from stable_explore.storage.fsutil import temp_dir_beside
from stable_explore.storage.hashing import ContentDigest, digest_of_runs, row_hashes
from stable_explore.storage.metadata import VersionMetadata
from stable_explore.storage.row_segments import row_segments_field
from stable_explore.storage.shards import ShardWriter
from stable_explore.storage.verify import feed_rows
from stable_explore.storage.writer import shard_metadata
from stable_explore.versioning._plan import Rewrite, base_runs, compacted, plan_rows, stale_digest_runs

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.batches import BatchDigests
    from stable_explore.storage.sidecars import FileRef

__all__ = ["Draft", "PendingEdits"]

_CHUNK_ROWS = 1000
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


@dataclass(frozen=True)
class PendingEdits:
    """What a draft will change, by row position in the dataset the chain started from."""

    dropped: frozenset[int] = frozenset()
    relabelled: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    values: Mapping[tuple[int, str], Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.dropped or self.relabelled or self.values)

    def touched(self) -> set[int]:
        """Rows whose content changes (not counting drops)."""
        return set(self.relabelled) | {row for row, _ in self.values}

    def summary(self) -> str:
        """The edits in a few words, e.g. ``"drop 2, relabel 1"``."""
        parts = []
        if self.dropped:
            parts.append(f"drop {len(self.dropped)}")
        if self.relabelled:
            parts.append(f"relabel {len(self.relabelled)}")
        if self.values:
            parts.append(f"set {len(self.values)} value(s)")
        return ", ".join(parts) or "no edits"

    def __repr__(self) -> str:
        return f"PendingEdits({self.summary()})"


class Draft:
    """A dataset with pending edits; ``save`` writes them as a new version.

    Get one from ``ds.drop(...)``, ``ds.relabel(...)`` or ``ds.set(...)``;
    each call returns a new draft, so a chain never changes an earlier one.
    """

    def __init__(self, origin: CachedDataset, edits: PendingEdits | None = None) -> None:
        self._origin = origin
        self._edits = edits or PendingEdits()
        self._referred: dict[int, int] = {}  # new shard index -> the parent's shard file it refers to (bucket)
        self._linked: dict[int, int] = {}  # the origin's shard -> the saved version's (filled by _write_rows)
        self._operations: list[dict[str, Any]] | None = None  # read once: save asks twice

    @property
    def origin(self) -> CachedDataset:
        """The dataset the chain started from."""
        return self._origin

    @property
    def pending_edits(self) -> PendingEdits:
        """What ``save`` will change."""
        return self._edits

    def __len__(self) -> int:
        return len(self._origin) - len(self._edits.dropped)

    def __repr__(self) -> str:
        return f"Draft({self._origin.ref}: {self._edits.summary()}; {len(self):,} rows, unsaved)"

    # -- chaining ----------------------------------------------------------------

    def _rows(self, rows: Iterable[Any]) -> list[int]:
        n = len(self._origin)
        out = []
        for row in rows:
            position = int(row)
            if not -n <= position < n:
                msg = f"row {position} is out of range for {self._origin.ref} ({n} rows)"
                raise RowIndexError(msg)
            out.append(position % n)
        return out

    def drop(self, rows: Iterable[int] | int) -> Draft:
        """Drop rows (positions in the dataset the chain started from)."""
        chosen = self._rows([rows] if isinstance(rows, (int, np.integer)) else rows)
        return Draft(self._origin, _replace(self._edits, dropped=self._edits.dropped | frozenset(chosen)))

    def relabel(self, changes: Mapping[int, str | int], *, column: str | None = None) -> Draft:
        """Give rows a new class (a name or an index): ``relabel({42: "dog"})``."""
        features = self._origin.features
        name = column or features.first_of(ClassLabel)
        if name is None or not isinstance(features.get(name), ClassLabel):
            msg = f"no ClassLabel column {'named ' + repr(column) if column else 'to relabel'}"
            raise ColumnNotFoundError(msg)
        feature = features[name]
        assert isinstance(feature, ClassLabel)
        relabelled = dict(self._edits.relabelled)
        for row, label in changes.items():
            (position,) = self._rows([row])
            try:
                code = feature.encode_value(label)
                if code is None:
                    msg = "expected a class name or index, got None"
                    raise EncodingError(msg)
                relabelled[position] = (name, int(code))
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=name, index=position) from None
        return Draft(self._origin, _replace(self._edits, relabelled=relabelled))

    def set(self, row: int, field_name: str, value: Any) -> Draft:
        """Set a scalar field (a Value or ClassLabel column) of one row."""
        features = self._origin.features
        if field_name not in features:
            msg = f"no column {field_name!r}; columns are {list(features)}"
            raise ColumnNotFoundError(msg)
        feature = features[field_name]
        if not isinstance(feature, (Value, ClassLabel)):
            msg = f"set() changes scalar fields; {field_name!r} is {feature!r}"
            raise InvalidArgumentTypeError(msg)
        (position,) = self._rows([row])
        try:
            encoded = feature.encode_value(value)
        except EncodingError as exc:
            raise EncodingError(exc.reason, field=field_name, index=position) from None
        if isinstance(feature, ClassLabel):
            return self.relabel({position: encoded}, column=field_name)
        values = dict(self._edits.values)
        values[(position, field_name)] = encoded
        return Draft(self._origin, _replace(self._edits, values=values))

    # -- saving ------------------------------------------------------------------

    def operations(self) -> list[dict[str, Any]]:
        """The edits by row key, as recorded in the new version's metadata.

        Reads the keys (and old labels) of the edited rows only, not of the whole dataset.
        """
        if self._operations is None:
            self._operations = self._read_operations()
        return [dict(op) for op in self._operations]

    def _read_operations(self) -> list[dict[str, Any]]:
        origin = self._origin
        edits = self._edits
        features = origin.features
        named = sorted(edits.dropped | set(edits.relabelled) | {p for p, _ in edits.values})
        keys = dict(zip(named, origin[named].keys() if named else [], strict=True))
        ops: list[dict[str, Any]] = []
        if edits.dropped:
            ops.append({"op": "drop", "keys": [keys[p] for p in sorted(edits.dropped)]})
        if edits.relabelled:
            by_column: dict[str, list[list[Any]]] = {}
            for column in sorted({c for c, _ in edits.relabelled.values()}):
                rows = sorted(p for p, (c, _) in edits.relabelled.items() if c == column and p not in edits.dropped)
                old = origin[rows].arrow_column(column).to_pylist() if rows else []
                feature = features[column]
                assert isinstance(feature, ClassLabel)
                for position, was in zip(rows, old, strict=True):
                    new = edits.relabelled[position][1]
                    if was != new:  # relabelling a row to the class it has is not an edit
                        by_column.setdefault(column, []).append(
                            [keys[position], class_name(feature, was), class_name(feature, new)]
                        )
            ops.extend({"op": "relabel", "column": c, "changes": changes} for c, changes in by_column.items())
        if edits.values:
            changes = [
                [keys[p], f, json_value(v)] for (p, f), v in sorted(edits.values.items()) if p not in edits.dropped
            ]
            if changes:
                ops.append({"op": "set", "changes": changes})
        return ops

    def save(
        self,
        message: str | None = None,
        *,
        tag: str | None = None,
        name: str | None = None,
        description: str | None = None,
        license: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        progress: bool = True,
    ) -> CachedDataset:
        """Write the edited rows as a new version (its ``parent`` is the origin's version).

        Unchanged runs of shards are reused; ``ds.build_info`` of the result says
        how many shards were written and how many bytes. Description, license and
        metadata are inherited unless given. ``progress`` shows a bar of the rows
        placed (reused rows count at once).

        A save that changes nothing (no edits, or only relabels to the class a row
        has, same name and fields) creates no version and moves no ref: it returns
        the origin (``tag`` is still pointed at it).
        """
        from stable_explore.dataset import CachedDataset

        origin = self._origin
        target_name = check_name(name or origin.name or "")
        if tag is not None:
            check_name(tag, "tag")
        catalog = open_catalog(origin.home)
        if self._changes_nothing(target_name, description, license, metadata):
            if tag is not None:
                catalog.write_ref(target_name, tag, origin.version)
            return CachedDataset(
                origin.cache_meta,
                name=origin.name,
                version=origin.version,
                home=origin.home,
                build_info=f"nothing to save: no edits; {origin.ref} is unchanged and no version was created",
            )
        meta = origin.cache_meta
        parent = meta.version_metadata
        num_kept = len(origin) - len(self._edits.dropped)
        features = origin.features
        key_type = pa.string() if meta.key_type == "string" else pa.int64()
        schema = features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        shard_size = meta.shard_size_target_bytes or DEFAULT_SHARD_SIZE_BYTES
        with (
            temp_dir_beside(catalog.versions_dir(target_name) / "staging") as staging,
            saving_bar(target_name, num_kept) if progress else contextlib.nullcontext() as on_rows,
        ):
            writer = ShardWriter(
                staging, schema, shard_size_bytes=shard_size, compression=meta.compression, on_batch=on_rows
            )
            try:
                segments = self._write_rows(writer, schema, on_rows)
                shards = writer.finish()
                if on_rows is not None:
                    on_rows(0, shards.bytes_written)  # the bar ends on the bytes the save line reports
            except BaseException:
                writer.abort()
                raise
            whole = [[i, 0, rows] for i, rows in enumerate(shards.rows)]
            # format 1 (what seed 000 reads) whenever every shard is used whole and in order
            segmented = segments != whole
            runs = self._content_runs([staging / n for n in shards.names], segments)
            shard_fields = shard_metadata(
                features,
                shards,
                num_rows=num_kept,
                shard_size_bytes=shard_size,
                key_type="string" if key_type == pa.string() else "int64",
                compression=meta.compression,
                content_digest=digest_of_runs(meta.key_type, runs),
                # a view's rows are not its parent's: no runs file of the parent's to splice
                content_runs=content_runs_field(staging, runs, None if origin.is_view else meta.runs_file),
                segments=row_segments_field(
                    staging,
                    segments,
                    num_shards=len(shards.names),
                    parent=meta.segments_file,
                    parent_to_child=self._linked,
                )
                if segmented
                else None,
            )
            record = VersionMetadata(
                parent=origin.version,
                operations=tuple(self.operations()),
                description=description if description is not None else parent.description,
                license=license if license is not None else parent.license,
                metadata=dict(metadata) if metadata is not None else dict(parent.metadata),
                message=message,
            )
            published = publish_version(catalog, target_name, staging, shard_fields, record, tag=tag)
        ref, existed = published.ref, published.existed
        rewritten = len(shards.names) - shards.linked
        written = f"wrote {rewritten} new shard(s) ({format_size(shards.bytes_written)})"
        info = f"saved: {self._edits.summary()}; {written}, reused {shards.linked} of the parent's"
        if existed:
            info += "; identical content: the existing version"
        return CachedDataset(
            read_sharded_cache_meta(ref.cache_dir),
            name=target_name,
            version=ref.version_id,
            home=catalog.where,
            build_info=info,
        )

    def _changes_nothing(
        self, target_name: str, description: str | None, license: str | None, metadata: Mapping[str, Any] | None
    ) -> bool:
        """Whether saving would only copy the origin: same dataset, all its rows, no edit that changes a value."""
        origin = self._origin
        if origin.is_view or origin.home is None or target_name != origin.name or origin.cache_meta.is_seed_v1:
            return False
        parent = origin.cache_meta.version_metadata
        if description is not None and description != parent.description:
            return False
        if license is not None and license != parent.license:
            return False
        if metadata is not None and dict(metadata) != dict(parent.metadata):
            return False
        return not self._edits or not self.operations()

    def _content_runs(self, paths: list[Path], segments: list[list[int]]) -> list[tuple[int, str]]:
        """The new version's digest runs: the parent's, with only the runs the edits touched hashed again.

        When the origin is a whole version that records its runs (format revision 3), the
        rows of each stale group of runs are read back from the new version and hashed; every
        other run keeps its digest. Otherwise (a view, an older parent) every row is hashed once.
        """
        origin = self._origin
        parent_runs = origin.cache_meta.content_runs

        def referred_columns(shard: int) -> pa.Table | None:
            # a shard this save refers to in a bucket is not in staging: its two row columns come from there
            old = self._referred.get(shard)
            return origin.backend.file_columns(old, _ROW_COLUMNS) if old is not None else None

        if origin.is_view or parent_runs is None:
            digest = ContentDigest()
            feed_rows(digest, paths, segments, open_columns=referred_columns)
            return digest.runs
        dropped = np.array(sorted(self._edits.dropped), dtype=np.int64)
        affected = np.union1d(dropped, np.array(sorted(self._edits.touched()), dtype=np.int64))
        ends = np.cumsum([rows for rows, _ in parent_runs], dtype=np.int64)
        runs: list[tuple[int, str]] = []
        done = 0
        tables: dict[int, pa.Table] = {}
        for first, last in stale_digest_runs(ends, affected):
            runs.extend(parent_runs[done:first])
            start = int(ends[first - 1]) if first else 0
            stop = int(ends[last])
            new_start = start - int(np.searchsorted(dropped, start))
            new_stop = stop - int(np.searchsorted(dropped, stop))
            digest = ContentDigest()
            feed_rows(digest, paths, segments, new_start, new_stop, tables, open_columns=referred_columns)
            runs.extend(digest.runs)
            done = last + 1
        runs.extend(parent_runs[done:])
        return runs

    def _write_rows(
        self, writer: ShardWriter, schema: pa.Schema, on_rows: Callable[[int, int], None] | None = None
    ) -> list[list[int]]:
        """Write the output rows; return them as [shard, start, count] runs of the new version.

        A long run of rows that survives unchanged and in order is kept where it is: its
        parent shard file is linked once and the run points into it. Everything else (edited
        rows, short runs of a reordered view) is written anew, in chunks. The plan is made
        of runs (see :mod:`._plan`), so its cost grows with the edits, not the rows.
        """
        self._referred = {}
        origin = self._origin
        meta = origin.cache_meta
        backend = origin.backend
        plan = plan_rows(
            base_runs(origin.view_rows, meta.num_rows),
            np.array(sorted(self._edits.dropped), dtype=np.int64),
            np.array(sorted(self._edits.touched() - self._edits.dropped), dtype=np.int64),
            backend.segment_offsets,
            backend.segments,
            can_link=not meta.is_seed_v1 and meta.shard_hashes is not None and meta.shard_sizes is not None,
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
        segments: list[list[int]] = []
        linked: dict[int, int] = {}
        self._linked = linked  # the origin's shard -> the new version's, for its segments file
        pending: list[int] = []  # origin positions to write anew, in output order
        waiting: list[tuple[list[int], int]] = []  # segments of those rows, and where they start in pending

        def flush() -> None:
            # rows to rewrite are gathered across links and written in full chunks, so a save of
            # k scattered edits writes one record batch, not one per edited row
            places = []
            for chunk_start in range(0, len(pending), _CHUNK_ROWS):
                places.append(writer.next_row())
                self._rewrite(writer, pending[chunk_start : chunk_start + _CHUNK_ROWS], schema)
            for entry, offset in waiting:
                shard, row = places[offset // _CHUNK_ROWS]
                entry[0], entry[1] = shard, row + offset % _CHUNK_ROWS
            pending.clear()
            waiting.clear()

        for step in plan:
            if isinstance(step, Rewrite):
                start, count = step.start, step.count
                while count:  # one segment per chunk the rows land in
                    take = min(count, _CHUNK_ROWS - len(pending) % _CHUNK_ROWS)
                    entry = [-1, -1, take]
                    segments.append(entry)
                    waiting.append((entry, len(pending)))
                    pending.extend(range(start, start + take))
                    start, count = start + take, count - take
                if len(pending) >= _CHUNK_ROWS:
                    flush()
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
                    self._referred[linked[file_id]] = file_id
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

    def _rewrite(self, writer: ShardWriter, positions: list[int], schema: pa.Schema) -> None:
        """Write these origin rows anew: read them, apply the edits, hash them again."""
        if not positions:
            return
        origin = self._origin
        picked = origin[positions]
        rows = picked.base_rows()
        feature_names = list(origin.features)
        table = origin.backend.take(rows, columns=feature_names)
        arrays = [table.column(n).combine_chunks() for n in feature_names]
        for index, name in enumerate(feature_names):
            changes = {}
            for i, p in enumerate(positions):
                if p in self._edits.relabelled and self._edits.relabelled[p][0] == name:
                    changes[i] = self._edits.relabelled[p][1]
                if (p, name) in self._edits.values:
                    changes[i] = self._edits.values[(p, name)]
            if changes:
                values = arrays[index].to_pylist()
                for i, value in changes.items():
                    values[i] = value
                arrays[index] = pa.array(values, type=arrays[index].type)
        if origin.cache_meta.is_seed_v1:
            keys = pa.array(rows, type=pa.int64())
        else:
            keys = origin.backend.take(rows, columns=[KEY_COLUMN]).column(KEY_COLUMN).combine_chunks()
        hashes = pa.array(row_hashes(arrays), type=pa.uint64())
        batch = pa.RecordBatch.from_arrays([*arrays, keys.cast(schema.field(KEY_COLUMN).type), hashes], schema=schema)
        writer.write(batch)


def _batches_of(meta: ShardedCacheMeta, file_id: int) -> BatchDigests | FileRef | None:
    """What a save carries over of a reused shard's batch digests.

    The file holding them (linked or referred to, never read), or the digests an older cache recorded inline.
    """
    if meta.batch_digests is None:
        return None
    return meta.batch_digests.file_ref(file_id) or meta.batch_digests[file_id]


def _replace(
    edits: PendingEdits,
    *,
    dropped: frozenset[int] | None = None,
    relabelled: Mapping[int, tuple[str, int]] | None = None,
    values: Mapping[tuple[int, str], Any] | None = None,
) -> PendingEdits:
    return PendingEdits(
        dropped=edits.dropped if dropped is None else dropped,
        relabelled=edits.relabelled if relabelled is None else relabelled,
        values=edits.values if values is None else values,
    )
