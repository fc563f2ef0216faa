"""Edits -> a new version: drop, relabel and set rows lazily, then save, reusing unchanged shards.

A :class:`Draft` is a dataset plus pending edits; nothing is written until
``save``. Row numbers in a chain of edits always mean rows of the dataset the
chain started from (positions in it, for a view), so ``drop`` then ``relabel``
equals ``relabel`` then ``drop``. Saving writes the rows of that dataset, in
its order, minus the dropped ones and with the changes applied. Every run of
rows that survives unchanged stays in its parent's shard file, reused as a hard
link (or a copy where links are impossible). A relabelled row that stays where
it is becomes a cell patch (its file, row, new row hash and new class, in a small
file beside the metadata; see :mod:`~stable_explore.storage.format.cell_patches`)
instead of a rewritten row: relabelling 10 rows of images writes about 3 KB, not
those rows. Rows given a new value with ``set`` are written anew. The plan, the
digest and compaction cost what the edits change (see :mod:`._plan`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._canonical import json_value
from stable_explore._units import format_size
from stable_explore.catalog import check_name, open_catalog, publish_version
from stable_explore.catalog.options import check_metadata
from stable_explore.errors import (
    CacheNotFoundError,
    CacheWriteError,
    ColumnNotFoundError,
    EncodingError,
    InvalidArgumentTypeError,
    RowIndexError,
)
from stable_explore.schema import ClassLabel, Value, class_name
from stable_explore.storage.backends.fsutil import temp_dir_beside
from stable_explore.storage.backends.locks import check_lock_timeout, waiting_at_most
from stable_explore.storage.format.cache_meta import DEFAULT_SHARD_SIZE_BYTES
from stable_explore.storage.format.hashing import digest_of_runs
from stable_explore.storage.format.metadata import VersionMetadata
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.shards import ShardWriter
from stable_explore.storage.write.small_files import cell_patches_field, content_runs_field, row_segments_field
from stable_explore.storage.write.writer import shard_metadata
from stable_explore.versioning._edit_writer import EditWriter
from stable_explore.versioning._rows_read import RowsRead
from stable_explore.versioning._staged import Staged

if TYPE_CHECKING:
    from pathlib import Path

    from stable_explore.dataset import CachedDataset

__all__ = ["Draft", "PendingEdits", "Staged"]


@dataclass(frozen=True)
class PendingEdits:
    """What a draft will change, by row position in the dataset the chain started from.

    Relabels and values are kept per cell, (row, column): edits of two columns of one
    row both apply, and a second edit of the same cell replaces the first.
    """

    dropped: frozenset[int] = frozenset()
    relabelled: Mapping[tuple[int, str], int] = field(default_factory=dict)
    """(row, ClassLabel column) -> the new class index."""
    values: Mapping[tuple[int, str], Any] = field(default_factory=dict)
    """(row, Value column) -> the new value, encoded."""
    box_edits: Mapping[tuple[int, str], tuple[tuple[Any, ...], ...]] = field(default_factory=dict)
    """(row, Boxes column) -> the box edits in order (their result is in ``values``); see :mod:`._box_edits`."""

    def __bool__(self) -> bool:
        return bool(self.dropped or self.relabelled or self.values)

    def touched(self) -> set[int]:
        """Rows whose content changes (not counting drops)."""
        return {row for row, _ in self.relabelled} | {row for row, _ in self.values}

    def summary(self) -> str:
        """The edits in a few words, e.g. ``"drop 2, relabel 1"``."""
        parts = []
        if self.dropped:
            parts.append(f"drop {len(self.dropped)}")
        if self.relabelled:
            parts.append(f"relabel {len(self.relabelled)}")
        boxes = sum(1 for cell in self.values if cell in self.box_edits)
        if len(self.values) > boxes:
            parts.append(f"set {len(self.values) - boxes} value(s)")
        if boxes:
            parts.append(f"edit the boxes of {boxes} row(s)")
        return ", ".join(parts) or "no edits"

    def __repr__(self) -> str:
        return f"PendingEdits({self.summary()})"


class Draft:
    """A dataset with pending edits; ``save`` writes them as a new version.

    Get one from ``ds.drop(...)``, ``ds.relabel(...)`` or ``ds.set(...)``;
    each call returns a new draft, so a chain never changes an earlier one.
    """

    def __init__(self, origin: CachedDataset, edits: PendingEdits | None = None, read: RowsRead | None = None) -> None:
        self._origin = origin
        self._edits = edits or PendingEdits()
        self._read = read or RowsRead()
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

    def __getattr__(self, name: str) -> Any:
        # only for names a Draft lacks: a dataset's own (ds.features, ds.to_pandas, ...) say what to do
        if not name.startswith("_") and hasattr(type(self.__dict__.get("_origin")), name):
            msg = (
                f"a Draft has no {name!r}: it is the edits pending on {self._origin.ref}, not a dataset; "
                f"save it first (clean = draft.save(message=...)) and use clean.{name}, or use "
                f"draft.origin.{name} for the rows before the edits"
            )
            raise AttributeError(msg)
        msg = f"{type(self).__name__!r} object has no attribute {name!r}"
        raise AttributeError(msg)

    # -- chaining ----------------------------------------------------------------

    def _rows(self, rows: Iterable[object]) -> list[int]:
        n = len(self._origin)
        out = []
        for row in rows:
            position = self._row_number(row)
            if not -n <= position < n:
                msg = f"row {position} is out of range for {self._origin.ref} ({n} rows)"
                raise RowIndexError(msg)
            out.append(position % n)
        return out

    def _row_number(self, row: object) -> int:
        """A row number as an int: ints and whole floats; never a flag, a key or a fraction (int() would take them)."""
        if isinstance(row, (int, np.integer)) and not isinstance(row, (bool, np.bool_)):
            return int(row)
        if isinstance(row, (float, np.floating)) and float(row).is_integer():
            return int(row)
        msg = (
            f"rows are row numbers (ints) of {self._origin.ref}, got {row!r} ({type(row).__name__}); "
            f"to edit a row by its key, use ds.keys().index(key)"
        )
        raise InvalidArgumentTypeError(msg)

    def _mask_rows(self, rows: Any) -> Any:
        """The positions a boolean mask (one flag per row, as ``ds[mask]`` takes) marks; other rows as they are."""
        # a list or tuple of flags, or an array of them: numpy's, or pandas' (ds.drop(frame.label == "cat"))
        if not isinstance(rows, (list, tuple)) and getattr(rows, "dtype", None) is None:
            return rows
        if len(rows) == 0:
            return rows
        flags = np.asarray(rows)
        if flags.dtype != np.bool_:
            return rows
        n = len(self._origin)
        if flags.shape != (n,):
            msg = f"a boolean mask needs one flag per row: {n} for {self._origin.ref}, got {flags.size}"
            raise RowIndexError(msg)
        return np.flatnonzero(flags).tolist()

    def drop(self, rows: Iterable[int] | int) -> Draft:
        """Drop rows: positions in the dataset the chain started from, or a boolean mask of its rows."""
        chosen = self._rows([rows] if isinstance(rows, (int, np.integer)) else self._mask_rows(rows))
        return Draft(self._origin, replace(self._edits, dropped=self._edits.dropped | frozenset(chosen)), self._read)

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
        wanted: dict[int, int] = {}
        for row, label in changes.items():
            (position,) = self._rows([row])
            try:
                code = feature.encode_value(label)
                if code is None:
                    msg = "expected a class name or index, got None"
                    raise EncodingError(msg)
                wanted[position] = int(code)
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=name, index=position) from None
        # A row given the class it already has is no edit (save would write nothing for it): drop it,
        # so the draft's summary counts only real changes and a relabel back undoes an earlier one.
        read = self._read.of(self._origin, list(wanted), name)
        for position, code in wanted.items():
            if code == read.cells[(position, name)]:
                relabelled.pop((position, name), None)
            else:
                relabelled[(position, name)] = code
        return Draft(self._origin, replace(self._edits, relabelled=relabelled), read)

    def set(self, row: int, field_name: str, value: object) -> Draft:
        """Set one field of one row: a value, a class, a list, an array or an image.

        The value is checked and encoded as a build encodes it (an image may be bytes, a path, a
        PIL image or an array); a ClassLabel field is a relabel.
        """
        features = self._origin.features
        if field_name not in features:
            msg = f"no column {field_name!r}; columns are {list(features)}"
            raise ColumnNotFoundError(msg)
        feature = features[field_name]
        (position,) = self._rows([row])
        try:
            encoded = feature.encode_value(value)
        except EncodingError as exc:
            raise EncodingError(exc.reason, field=field_name, index=position) from None
        if isinstance(feature, ClassLabel):
            return self.relabel({position: encoded}, column=field_name)
        values = dict(self._edits.values)
        values[(position, field_name)] = encoded
        box_edits = {cell: ops for cell, ops in self._edits.box_edits.items() if cell != (position, field_name)}
        return Draft(self._origin, replace(self._edits, values=values, box_edits=box_edits), self._read)

    def relabel_boxes(self, changes: Mapping[int, Mapping[int, str | int]], *, column: str | None = None) -> Draft:
        """Give boxes a new class: ``relabel_boxes({row: {box_index: "dog"}})``.

        Box indexes are positions among the row's boxes in the dataset the chain started from (or
        among those an earlier ``set_boxes`` of the row gave).
        """
        edits = [(row, ("relabel", index, label)) for row, boxes in changes.items() for index, label in boxes.items()]
        return self._box_edits(edits, column, "relabel_boxes")

    def drop_boxes(self, changes: Mapping[int, Iterable[int]], *, column: str | None = None) -> Draft:
        """Remove boxes: ``drop_boxes({row: [box_index, ...]})`` (indexes as in :meth:`relabel_boxes`)."""
        edits = [(row, ("drop", index)) for row, indexes in changes.items() for index in indexes]
        return self._box_edits(edits, column, "drop_boxes")

    def set_boxes(self, row: int, boxes: object, *, column: str | None = None) -> Draft:
        """Replace all the boxes of a row (a dict of lists or a list of box dicts, as a build takes them)."""
        return self._box_edits([(row, ("set", boxes))], column, "set_boxes")

    def _box_edits(self, edits: Sequence[tuple[int, tuple[object, ...]]], column: str | None, action: str) -> Draft:
        from stable_explore.versioning._box_edits import apply_box_edits, boxes_column

        name, feature = boxes_column(self._origin.features, column, action)
        pending: dict[tuple[int, str], tuple[tuple[object, ...], ...]] = dict(self._edits.box_edits)
        values = dict(self._edits.values)
        touched: set[tuple[int, str]] = set()
        for row, edit in edits:
            (position,) = self._rows([row])
            cell = (position, name)
            if cell in values and cell not in pending:  # the row's boxes were set with set(): edits start there
                pending[cell] = (("set", feature.decode_value(values[cell])),)
            pending[cell] = (*pending.get(cell, ()), edit)
            touched.add(cell)
        cells = sorted(touched)
        origin = self._origin.select([p for p, _ in cells]).arrow_column(name).to_pylist() if cells else []
        for cell, before in zip(cells, origin, strict=True):
            after = apply_box_edits(feature, before, pending[cell], row=cell[0], column=name)
            if after == before:  # back to what the row had: no edit
                values.pop(cell, None)
                pending.pop(cell, None)
            else:
                values[cell] = after
        return Draft(self._origin, replace(self._edits, values=values, box_edits=pending), self._read)

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
        named = sorted(edits.dropped | edits.touched())
        read = self._read.of(origin, named)
        keys = read.keys
        ops: list[dict[str, object]] = []
        if edits.dropped:
            ops.append({"op": "drop", "keys": [keys[p] for p in sorted(edits.dropped)]})
        if edits.relabelled:
            by_column: dict[str, list[list[object]]] = {}
            for column in sorted({c for _, c in edits.relabelled}):
                rows = sorted(p for p, c in edits.relabelled if c == column and p not in edits.dropped)
                cells = read.of(origin, rows, column).cells
                old = [cells[(p, column)] for p in rows]
                feature = features[column]
                assert isinstance(feature, ClassLabel)
                for position, was in zip(rows, old, strict=True):
                    new = edits.relabelled[(position, column)]
                    if was != new:  # relabelling a row to the class it has is not an edit
                        by_column.setdefault(column, []).append(
                            [keys[position], class_name(feature, was), class_name(feature, new)]
                        )
            ops.extend({"op": "relabel", "column": c, "changes": changes} for c, changes in by_column.items())
        if edits.values:
            changes = [  # binary cells (images, arrays) are recorded by size: the version holds the bytes
                [keys[p], f, json_value(v, bytes_as="hex" if isinstance(features[f], Value) else "size")]
                for (p, f), v in sorted(edits.values.items())
                if p not in edits.dropped
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
        metadata: Mapping[str, object] | None = None,
        progress: bool = True,
        set_latest: bool = True,
        lock_timeout: float | None = None,
    ) -> CachedDataset:
        """Write the edited rows as a new version (its ``parent`` is the origin's version).

        Unchanged runs of shards are reused; ``ds.build_info`` of the result says
        how many shards were written and how many bytes. Description, license and
        metadata are inherited unless given. ``progress`` shows a bar of the rows
        placed (reused rows count at once). ``set_latest=False`` leaves the dataset's ``latest``
        where it is (the new version is then opened by its id or a tag).

        A save that changes nothing (no edits, or only relabels to the class a row
        has, same name and fields) creates no version and moves no ref: it returns
        the origin (``tag`` is still pointed at it).

        ``lock_timeout`` bounds the wait for each lock the save takes (the dataset's refs lock, a
        bucket's lease; default ``$STABLE_EXPLORE_LOCK_TIMEOUT``, else 300 seconds), then
        ``LockTimeoutError`` naming the lock and its holder.
        """
        check_lock_timeout(lock_timeout)
        with waiting_at_most(lock_timeout):
            return self._save(message, tag, name, description, license, metadata, progress, set_latest)

    def _save(
        self,
        message: str | None,
        tag: str | None,
        name: str | None,
        description: str | None,
        license: str | None,
        metadata: Mapping[str, object] | None,
        progress: bool,
        set_latest: bool = True,
    ) -> CachedDataset:
        from stable_explore.dataset import CachedDataset

        origin = self._origin
        target_name = check_name(name or origin.name or "")
        if metadata is not None:
            check_metadata(metadata)
        if tag is not None:
            check_name(tag, "tag")
        catalog = open_catalog(origin.home)
        if tag is not None:  # a tag that cannot move fails now, not after the rows were written
            catalog.check_ref_movable(target_name, tag)
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
        gone = origin.deleted_reason(fresh=True)  # a bucket's read cache could still serve its rows: ask the home
        if gone is not None:
            msg = f"nothing was saved: {gone}"
            raise CacheNotFoundError(msg)
        from stable_explore.display.progress import saving_bar  # the UI layer, only for a save that shows one

        meta = origin.cache_meta
        parent = meta.version_metadata
        num_kept = len(origin) - len(self._edits.dropped)
        with (
            temp_dir_beside(catalog.versions_dir(target_name) / "staging") as staging,
            saving_bar(target_name, num_kept) if progress else contextlib.nullcontext() as on_rows,
        ):
            if meta.column_groups is not None:
                from stable_explore.versioning._group_save import stage_with_groups

                staged = stage_with_groups(self, staging, on_rows)
            else:
                staged = self.stage(staging, on_rows, defer_sync=True)
            record = VersionMetadata(
                parent=origin.version,
                operations=tuple(self.operations()),
                description=description if description is not None else parent.description,
                license=license if license is not None else parent.license,
                metadata=dict(metadata) if metadata is not None else dict(parent.metadata),
                message=message,
            )
            reuse = ((origin.name, origin.version),) if origin.name and origin.version else ()
            published = publish_version(
                catalog,
                target_name,
                staging,
                staged.fields,
                record,
                tag=tag,
                reuse=reuse,
                set_latest=set_latest,
                unsynced=staged.unsynced,
                read_back=True,
            )
        ref, existed = published.ref, published.existed
        shards = staged.shards
        rewritten = len(shards.names) - shards.linked
        written = f"wrote {rewritten} new shard(s) ({format_size(shards.bytes_written)})"
        info = f"saved: {self._edits.summary()}; {written}, reused {shards.linked} of the parent's"
        if staged.note:
            info += f"; {staged.note}"
        saved = published.meta or read_sharded_cache_meta(ref.cache_dir)
        if existed:
            info += "; identical content: the existing version"
        else:
            staged.remember_in(saved)
        if saved.batch_digests is not None and meta.batch_digests is not None:
            saved.batch_digests.take_loaded(meta.batch_digests)  # of the shards it linked: not read again
        return CachedDataset(
            saved,
            name=target_name,
            version=ref.version_id,
            home=catalog.where,
            build_info=info,
        )

    def stage(
        self, staging: Path, on_rows: Callable[[int, int], None] | None = None, *, defer_sync: bool = False
    ) -> Staged:
        """Write the edited rows into ``staging`` (linking what survives unchanged): the shard fields to publish.

        The origin must keep all its columns in its shards (a version with column groups is
        staged by :func:`~stable_explore.versioning._group_save.stage_with_groups`). With
        ``defer_sync``, the small files it writes (runs, segments, patches) are not fsynced here but
        listed in ``Staged.unsynced``, which the publish must flush before its rename.
        """
        unsynced: list[Path] | None = [] if defer_sync else None
        origin = self._origin
        meta = origin.cache_meta
        num_kept = len(origin) - len(self._edits.dropped)
        features = origin.features
        key_type = pa.string() if meta.key_type == "string" else pa.int64()
        schema = features.to_arrow_schema(with_row_columns=True, key_type=key_type)
        shard_size = meta.shard_size_target_bytes or DEFAULT_SHARD_SIZE_BYTES
        rows_out = EditWriter(origin, self._edits)
        writer = ShardWriter(
            staging, schema, shard_size_bytes=shard_size, compression=meta.compression, on_batch=on_rows
        )
        try:
            segments = rows_out.write_rows(writer, schema, on_rows)
            shards = writer.finish()
            if on_rows is not None:
                on_rows(0, shards.bytes_written)  # the bar ends on the bytes the save line reports
        except BaseException:
            writer.abort()
            raise
        whole = [[i, 0, rows] for i, rows in enumerate(shards.rows)]
        # format 1 (what stable-datasets reads) whenever every shard is used whole and in order, and no cell
        # is patched: a reader that knows nothing of patches would read the old values, so a patched
        # version lists its segments (format 2), which such a reader refuses
        segmented = segments != whole or bool(rows_out.patches)
        if rows_out.patches and len(set(shards.hashes)) != len(shards.hashes):
            # patches name shards by digest: a new shard with the bytes of a kept one would be ambiguous
            msg = "this save wrote a shard identical to one it keeps; save its relabels without cell patches"
            raise CacheWriteError(msg)
        runs = rows_out.content_runs([staging / n for n in shards.names], segments, shards.hashes)
        # a view's rows are not its parent's: no runs file of the parent's to splice
        parent_runs = None if origin.is_view else meta.runs_file
        parent_patches = meta.patches_file if rows_out.patches else None
        fields = shard_metadata(
            features,
            shards,
            num_rows=num_kept,
            shard_size_bytes=shard_size,
            key_type="string" if key_type == pa.string() else "int64",
            compression=meta.compression,
            content_digest=digest_of_runs(meta.key_type, runs),
            content_runs=content_runs_field(staging, runs, parent_runs, unsynced=unsynced),
            segments=row_segments_field(
                staging,
                segments,
                num_shards=len(shards.names),
                parent=meta.segments_file,
                parent_to_child=rows_out.linked,
                unsynced=unsynced,
            )
            if segmented
            else None,
            cell_patches=cell_patches_field(staging, rows_out.patches, parent_patches, unsynced=unsynced)
            if rows_out.patches
            else None,
        )
        return Staged(
            fields,
            shards,
            segments,
            unsynced=tuple(unsynced or ()),
            runs=(runs, parent_runs),
            patches=(rows_out.cell_patches, parent_patches) if rows_out.cell_patches is not None else None,
        )

    def _changes_nothing(
        self, target_name: str, description: str | None, license: str | None, metadata: Mapping[str, object] | None
    ) -> bool:
        """Whether saving would only copy the origin: same dataset, all its rows, no edit that changes a value."""
        origin = self._origin
        if (
            origin.is_view
            or origin.home is None
            or target_name != origin.name
            or origin.cache_meta.is_stable_datasets_v1
        ):
            return False
        parent = origin.cache_meta.version_metadata
        if description is not None and description != parent.description:
            return False
        if license is not None and license != parent.license:
            return False
        if metadata is not None and dict(metadata) != dict(parent.metadata):
            return False
        return not self._edits or not self.operations()
