"""Cell patches: the label cells a version changes in its parent's files, without copying their rows.

Relabelling 10 rows of a dataset of images would otherwise write those 10 rows anew, images
and all. A version of format revision 5 may instead keep reading the rows where they are and
record, per changed row, the file it lives in (by the shard's digest), its row in that file,
its new row hash and its new values: ``[shard digest, row, row hash, [[column, class index], ...]]``.
Readers apply them as the file is opened, so every read (slices, takes, columns, the browser,
exports) sees the new labels, and the content digest is made of the new row hashes.

The entries live in ``cell-patches.json`` beside the metadata, which a save links from its
parent and splices (see :mod:`~stable_explore.storage.format.splices`), so a save of 10 relabels
records about 10 entries, whatever the rows. Entries are keyed by shard digest, not position,
because saves renumber the shards they keep; a version whose shards repeat a digest does not
patch (its rows are written anew).

The file is read by :func:`stable_explore.storage.read.small_files.load_cell_patches` and written
(or linked) by :func:`stable_explore.storage.write.small_files.cell_patches_field`.

Examples
--------
>>> import pyarrow as pa
>>> from pathlib import Path
>>> entries = [("xxh3_128:" + "d" * 32, 1, 77, (("label", 0),))]
>>> patches = patches_from(entries, Path("_metadata.json"))
>>> table = pa.table({"label": [1, 1, 1], "__row_hash__": pa.array([5, 6, 7], pa.uint64())})
>>> patches.apply("xxh3_128:" + "d" * 32, table).to_pydict()
{'label': [1, 0, 1], '__row_hash__': [5, 77, 7]}
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from stable_explore.errors import CacheCorruptionError
from stable_explore.schema import HASH_COLUMN
from stable_explore.storage.format.spliced_file import ParentList, SplicedList, SplicedRecord

__all__ = [
    "PATCHES_FILE",
    "CellPatches",
    "FilePatch",
    "ParentPatches",
    "PatchEntry",
    "PatchesRecord",
    "patched_array",
    "patches_from",
]

PATCHES_FILE = "cell-patches.json"

PatchEntry = tuple[str, int, int, tuple[tuple[str, int], ...]]
"""(shard digest, row in that shard, new row hash, ((column, new value), ...)), sorted by digest and row."""

_MAX_HASH = 2**64 - 1


def _checked_entries(value: Any, where: str, path: str | Path) -> list[PatchEntry]:
    entries: list[PatchEntry] = []
    for entry in value if isinstance(value, list) else [value]:
        try:  # one tight pass: a version read after a chain of saves holds hundreds of entries
            digest, row, row_hash, cells = entry
            ok = (
                type(digest) is str
                and 0 < len(digest) <= 80
                and type(row) is int
                and row >= 0
                and type(row_hash) is int
                and 0 <= row_hash <= _MAX_HASH
                and type(cells) is list
                and len(cells) > 0
            )
            if ok:
                typed = tuple((name, value) for name, value in cells if type(name) is str and type(value) is int)
                ok = len(typed) == len(cells)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            msg = f"{where}: cell patch {entry!r:.120} is not [shard digest, row, row hash, [[column, value], ...]]"
            raise CacheCorruptionError(path, msg)
        entries.append((digest, row, row_hash, typed))
    return entries


def _entry_json(entry: PatchEntry) -> list[Any]:
    digest, row, row_hash, cells = entry
    return [digest, row, row_hash, [list(cell) for cell in cells]]


PatchesRecord = SplicedRecord[PatchEntry]
"""The ``cell_patches`` field: the entries file, how many entries it holds, and the splices."""
ParentPatches = ParentList[PatchEntry]
"""A parent version's entries file, its entries, and its folder (a save links the file from there)."""
PATCHES: SplicedList[PatchEntry] = SplicedList(PATCHES_FILE, "'cell_patches'", "entries", _checked_entries, _entry_json)
"""How the entries file is named and checked."""


def patches_from(entries: list[PatchEntry], meta_path: Path) -> CellPatches:
    """The patches of a version's entries (its file's, spliced), which must be in order of shard digest and row."""
    keys = [(digest, row) for digest, row, _, _ in entries]
    if any(a >= b for a, b in itertools.pairwise(keys)):
        raise CacheCorruptionError(meta_path, "'cell_patches' entries are not in order of shard digest and row")
    return CellPatches(entries)


@dataclass(frozen=True)
class FilePatch:
    """One shard's patches as arrays: sorted rows, their new row hashes, and per column the rows and values."""

    rows: np.ndarray
    hashes: np.ndarray
    columns: dict[str, tuple[np.ndarray, np.ndarray]]
    key: str = ""
    """A digest of the patches: the same shard patched alike is opened once per process (see open_files)."""

    def values_for(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, new values) of column ``name`` (``__row_hash__`` included), or None when it has none."""
        if name == HASH_COLUMN:
            return self.rows, self.hashes
        return self.columns.get(name)


class CellPatches:
    """A version's cell patches, grouped by shard digest, applied to tables as shards are opened."""

    def __init__(self, entries: Sequence[PatchEntry]) -> None:
        self.entries = list(entries)
        self._by_file: dict[str, FilePatch] | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def __getstate__(self) -> dict[str, Any]:
        return {"entries": self.entries}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["entries"])  # type: ignore[misc]

    def for_file(self, digest: str | None) -> FilePatch | None:
        """The patches of the shard with this digest, or None."""
        if digest is None or not self.entries:
            return None
        return self._grouped().get(digest)

    def digests(self) -> list[str]:
        """The shard digests the patches name."""
        return list(self._grouped())

    def _grouped(self) -> dict[str, FilePatch]:
        if self._by_file is None:
            grouped: dict[str, list[PatchEntry]] = {}
            for entry in self.entries:
                grouped.setdefault(entry[0], []).append(entry)
            self._by_file = {digest: _file_patch(found) for digest, found in grouped.items()}
        return self._by_file

    def apply(self, digest: str | None, table: pa.Table) -> pa.Table:
        """``table`` (a whole shard, or some of its columns) with this shard's patched cells replaced.

        Each patched column is copied once (into one chunk; see :func:`_patched`).
        """
        patch = self.for_file(digest)
        if patch is None:
            return table
        for index, name in enumerate(table.column_names):
            found = patch.values_for(name)
            if found is not None:
                table = table.set_column(index, table.schema.field(index), _patched(table.column(index), *found))
        return table

    def patched_row_hashes(self, digest: str | None, start: int, hashes: np.ndarray, shard_rows: int) -> np.ndarray:
        """``hashes`` (rows ``start``... of the shard with this digest) with the new row hashes of its patched rows.

        Only these rows are looked at, so a digest of a few runs does not copy the shard's whole column
        (:meth:`apply` does). ``shard_rows`` is the shard's length: a patch past its end is corruption.

        Examples
        --------
        >>> patches = CellPatches([("xxh3_128:" + "d" * 32, 5, 77, (("label", 0),))])
        >>> patches.patched_row_hashes("xxh3_128:" + "d" * 32, 4, np.array([1, 2, 3], np.uint64), 8).tolist()
        [1, 77, 3]
        """
        patch = self.for_file(digest)
        if patch is None or not patch.rows.size:
            return hashes
        if int(patch.rows[-1]) >= shard_rows:
            msg = f"a cell patch names row {int(patch.rows[-1])} of a shard of {shard_rows} rows"
            raise CacheCorruptionError(Path(PATCHES_FILE), msg)
        lo, hi = np.searchsorted(patch.rows, [start, start + len(hashes)])
        if lo == hi:
            return hashes
        patched = np.array(hashes, dtype=np.uint64, copy=True)
        patched[patch.rows[lo:hi] - start] = patch.hashes[lo:hi]
        return patched


def _file_patch(entries: list[PatchEntry]) -> FilePatch:
    rows = np.array([row for _, row, _, _ in entries], dtype=np.int64)
    hashes = np.array([row_hash for _, _, row_hash, _ in entries], dtype=np.uint64)
    cells: dict[str, tuple[list[int], list[int]]] = {}
    for _, row, _, changed in entries:
        for name, value in changed:
            found = cells.setdefault(name, ([], []))
            found[0].append(row)
            found[1].append(value)
    columns = {name: (np.array(r, dtype=np.int64), np.array(v, dtype=np.int64)) for name, (r, v) in cells.items()}
    key = xxhash.xxh3_128(rows.tobytes() + hashes.tobytes())
    for name, (cell_rows, values) in sorted(columns.items()):
        key.update(name.encode() + b"\0" + cell_rows.tobytes() + values.tobytes())
    return FilePatch(rows, hashes, columns, key.hexdigest())


_ROWS_PER_CHUNK_PATCH = 4096  # patching one chunk costs about what joining this many rows of a column does


def _patched(column: pa.ChunkedArray, rows: np.ndarray, values: np.ndarray) -> pa.ChunkedArray:
    """``column`` with ``values`` at ``rows`` (sorted), in chunks that still line up with the other columns'.

    Few chunks touched (a large shard, a few patches): only those chunks are copied. Most of them
    touched: the column is joined into one new buffer and patched in place, which is cheaper; the
    other columns keep their chunks, so ``to_batches`` still cuts the table at the file's record
    batches (which the digest checks number).
    """
    if rows.size and int(rows[-1]) >= len(column):
        msg = f"a cell patch names row {int(rows[-1])} of a shard of {len(column)} rows"
        raise CacheCorruptionError(Path(PATCHES_FILE), msg)
    starts = np.cumsum([0, *(len(chunk) for chunk in column.chunks)], dtype=np.int64)
    which = np.searchsorted(starts, rows, side="right") - 1
    touched, first = np.unique(which, return_index=True)
    if touched.size * _ROWS_PER_CHUNK_PATCH < len(column):
        chunks = list(column.chunks)
        ends = [*first[1:].tolist(), rows.size]
        for chunk_id, lo, hi in zip(touched.tolist(), first.tolist(), ends, strict=True):
            chunks[chunk_id] = patched_array(chunks[chunk_id], rows[lo:hi] - starts[chunk_id], values[lo:hi])
        return pa.chunked_array(chunks, type=column.type)
    combined = column.combine_chunks()
    data = combined.buffers()[1]
    if (  # joined into a new buffer of our own (never the file's pages): patched in place, no second copy
        column.num_chunks > 1
        and not combined.null_count
        and data is not None
        and data.is_mutable
        and all(chunk.buffers()[1] is None or chunk.buffers()[1].address != data.address for chunk in column.chunks)
    ):
        view = np.frombuffer(memoryview(data), dtype=combined.type.to_pandas_dtype())
        view[combined.offset + rows] = values.astype(view.dtype, copy=False)
        return pa.chunked_array([combined], type=column.type)
    return pa.chunked_array([patched_array(combined, rows, values)], type=column.type)


def patched_array(array: pa.Array, rows: np.ndarray, values: np.ndarray) -> pa.Array:
    """A copy of ``array`` with ``values`` at ``rows`` (a patched cell is never null).

    Examples
    --------
    >>> patched_array(pa.array([1, 2, 3]), np.array([1]), np.array([9])).to_pylist()
    [1, 9, 3]
    """
    mask = None
    if array.null_count:
        mask = np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool).copy()
        mask[rows] = False
        array = array.fill_null(0)
    data = array.to_numpy(zero_copy_only=False).copy()
    data[rows] = values.astype(data.dtype, copy=False)
    return pa.array(data, type=array.type, mask=mask)
